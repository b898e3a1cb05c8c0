"""Adapter from raw-bit numpy arrays to mmasim (MMA-Sim, PyPI `mmasim` 2.1.1), for benchmarks only.

Runs with the benchmark environment made by bench/setup_mmasim.sh (/work/benchenv/bin/python):
mmasim needs torch and is never a dependency of mmaformal. This file imports nothing from
mmaformal, and mmaformal must never import it.

    mmasim_dpa(arch, qualifier, a_bits, b_bits, c_bits[, scale_a_bits, scale_b_bits]) -> d_bits

a_bits, b_bits: (n, K) unsigned arrays of the operand format's bit patterns (uint16 for f16/bf16,
uint32 for tf32/f32, uint8 for fp8/fp6/fp4 one element per byte, fp6 in the low 6 bits and fp4 in
the low 4 bits as in the mmaformal contract; uint64 for f64); c_bits: (n,) in the accumulator's
format. Block-scaled instructions (kind::mxf8f6f4 / mxf4 / mxf4nvf4) also take the scale bits,
(n, K / block) uint8 each. The result is (n,) unsigned bits in the output format.

The whole batch goes through one vectorised call of mmasim's `dpa` (its batch path: leading
dimensions are batch, the last one is K), in chunks of `chunk` rows.

`python bench/mmasim_adapter.py [-n N] [--save PATH]` times Hopper m16n8k16.f32.f16.f16.f32 on
N random-bit-stream dot products on one core and prints dot products per second.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time

import numpy as np

# mmasim's own architecture names, and the mmaformal spellings that map to them.
ARCH_ALIASES = {
    "sm70": "Volta", "volta": "Volta",
    "sm75": "Turing", "turing": "Turing",
    "sm80": "Ampere", "ampere": "Ampere",
    "sm89": "Ada Lovelace", "ada": "Ada Lovelace", "ada lovelace": "Ada Lovelace",
    "sm90": "Hopper", "sm90a": "Hopper", "hopper": "Hopper",
    "sm100": "Blackwell", "sm100a": "Blackwell", "blackwell": "Blackwell",
    "sm120": "RTX Blackwell", "sm120a": "RTX Blackwell", "rtx-blackwell": "RTX Blackwell",
    "rtx blackwell": "RTX Blackwell",
    "gfx908": "CDNA1", "cdna1": "CDNA1",
    "gfx90a": "CDNA2", "cdna2": "CDNA2",
    "gfx942": "CDNA3", "cdna3": "CDNA3",
}
AMD_ARCHS = ("CDNA1", "CDNA2", "CDNA3")


def _torch():
    import torch  # imported lazily so that __main__ can pin the thread count first

    return torch


def canonical_arch(arch: str) -> str:
    return ARCH_ALIASES.get(arch.strip().lower(), arch.strip())


@functools.lru_cache(maxsize=None)
def make_op(arch: str, qualifier: str):
    """The mmasim operation object for one instruction (mmaformal or mmasim spelling)."""
    import mmasim.amd
    import mmasim.nv_ptx as nv

    arch = canonical_arch(arch)
    q = qualifier.strip()
    if arch in AMD_ARCHS:
        return mmasim.amd.MFMA(arch, q.removeprefix("v_mfma_"))
    if q.startswith("wgmma."):
        return nv.WGMMA(arch, q.removeprefix("wgmma."))
    scaled = "kind::mxf" in q
    if q.startswith("tcgen05.mma."):
        rest = q.removeprefix("tcgen05.mma.")
        return (nv.TCGen05MMABlockScale if scaled else nv.TCGen05MMA)(arch, rest)
    rest = q.removeprefix("mma.")
    return (nv.MMABlockScale if scaled else nv.MMA)(arch, rest)


_SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _to_torch(bits: np.ndarray, dtype):
    """Raw bits (numpy unsigned) -> torch tensor of `dtype` with exactly those bits."""
    torch = _torch()
    size = dtype.itemsize
    arr = np.ascontiguousarray(bits, dtype=_UNSIGNED[size])
    if size == 1:
        t = torch.from_numpy(arr)  # torch.uint8
    else:
        t = torch.from_numpy(arr.view(_SIGNED[size]))
    return t if t.dtype == dtype else t.view(dtype)


def _from_torch(t) -> np.ndarray:
    torch = _torch()
    size = t.dtype.itemsize
    signed = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size]
    return t.contiguous().view(signed).numpy().view(_UNSIGNED[size]).copy()


def _small_float_operand(bits: np.ndarray, ptx_type: str, packed_fp4: bool) -> np.ndarray:
    """fp6/fp4 (one per byte, low bits) -> the byte layout mmasim decodes.

    mmasim reads fp6 from bits 5:0 and fp4 from bits 5:2 of a byte (helper.decode_uint8_to_fp6_fp4);
    the k=64 mxf4/mxf4nvf4 path instead takes two fp4 per byte, the first element in the HIGH
    nibble (helper.unpack_uint8_to_fp4).
    """
    bits = np.asarray(bits, dtype=np.uint8)
    if packed_fp4:
        x = bits & 0x0F
        return ((x[..., 0::2] << 4) | x[..., 1::2]).astype(np.uint8)
    if ptx_type == "e2m1":
        return ((bits & 0x0F) << 2).astype(np.uint8)
    return (bits & 0x3F).astype(np.uint8)


def mmasim_dpa(
    arch: str,
    qualifier: str,
    a_bits: np.ndarray,
    b_bits: np.ndarray,
    c_bits: np.ndarray,
    scale_a_bits: np.ndarray | None = None,
    scale_b_bits: np.ndarray | None = None,
    chunk: int = 1 << 12,
) -> np.ndarray:
    """n dot products d[i] = Phi(a[i, :], b[i, :], c[i]) by mmasim, raw bits in and out."""
    torch = _torch()
    from mmasim.arithmetic.fdpa import MMA_GST_FDPA

    op = make_op(arch, qualifier)
    a_bits = np.asarray(a_bits)
    b_bits = np.asarray(b_bits)
    c_bits = np.asarray(c_bits)
    n, K = a_bits.shape
    if b_bits.shape != (n, K) or c_bits.shape != (n,):
        raise ValueError(f"shapes: a {a_bits.shape}, b {b_bits.shape}, c {c_bits.shape}")
    if getattr(op, "k", K) != K:
        raise ValueError(f"{qualifier}: K is {op.k}, got {K}")
    scaled = hasattr(op, "s_type")
    if scaled and (scale_a_bits is None or scale_b_bits is None):
        raise ValueError(f"{qualifier} is block-scaled: pass scale_a_bits and scale_b_bits")
    packed = isinstance(getattr(op, "arithmetic_op", None), MMA_GST_FDPA)
    if op.a_type == torch.uint8:
        a_bits = _small_float_operand(a_bits, op.a_type_ptx, packed)
    if op.b_type == torch.uint8:
        b_bits = _small_float_operand(b_bits, op.b_type_ptx, packed)

    out = np.empty(n, dtype=_UNSIGNED[op.d_type.itemsize])
    with torch.no_grad():
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            a = _to_torch(a_bits[lo:hi], op.a_type)
            b = _to_torch(b_bits[lo:hi], op.b_type)
            c = _to_torch(c_bits[lo:hi], op.c_type)
            if scaled:
                sa = _to_torch(np.asarray(scale_a_bits)[lo:hi], op.s_type)
                sb = _to_torch(np.asarray(scale_b_bits)[lo:hi], op.s_type)
                d = op.dpa(a, b, c, sa, sb)
            else:
                d = op.dpa(a, b, c)
            out[lo:hi] = _from_torch(d.to(op.d_type) if d.dtype != op.d_type else d)
    return out


def _bench(args) -> None:
    torch = _torch()
    torch.set_num_threads(1)
    import mmasim

    arch, qual = args.arch, args.qualifier
    op = make_op(arch, qual)
    K = op.k
    rng = np.random.default_rng(args.seed)
    n = args.n
    in_size = op.a_type.itemsize if op.a_type != torch.uint8 else 1
    a_bits = rng.integers(0, 2 ** (8 * in_size), size=(n, K), dtype=np.uint64).astype(_UNSIGNED[in_size])
    b_bits = rng.integers(0, 2 ** (8 * in_size), size=(n, K), dtype=np.uint64).astype(_UNSIGNED[in_size])
    c_size = op.c_type.itemsize
    c_bits = rng.integers(0, 2 ** (8 * c_size), size=n, dtype=np.uint64).astype(_UNSIGNED[c_size])
    if args.inputs:  # the caller's inputs (so another program can compare bits on the same data)
        z = np.load(args.inputs)
        a_bits, b_bits, c_bits = z["a_bits"], z["b_bits"], z["c_bits"]
        n = len(c_bits)

    # warm-up (first calls allocate; also checks the path end to end)
    mmasim_dpa(arch, qual, a_bits[:1024], b_bits[:1024], c_bits[:1024], chunk=args.chunk)

    best_e2e = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        d_bits = mmasim_dpa(arch, qual, a_bits, b_bits, c_bits, chunk=args.chunk)
        best_e2e = min(best_e2e, time.perf_counter() - t0)

    # mmasim's dpa alone, on tensors prepared beforehand (no bit conversion), same chunking
    chunks = []
    for lo in range(0, n, args.chunk):
        hi = min(n, lo + args.chunk)
        chunks.append(
            (_to_torch(a_bits[lo:hi], op.a_type).clone(), _to_torch(b_bits[lo:hi], op.b_type).clone(),
             _to_torch(c_bits[lo:hi], op.c_type).clone())
        )
    best_core = float("inf")
    with torch.no_grad():
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            for a, b, c in chunks:
                op.dpa(a, b, c)
            best_core = min(best_core, time.perf_counter() - t0)

    print(f"mmasim {getattr(mmasim, '__version__', '2.1.1')} (torch {torch.__version__}, "
          f"threads {torch.get_num_threads()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')})")
    print(f"instruction: {canonical_arch(arch)} {qual}  (K={K}, n={n}, chunk={args.chunk}, "
          f"best of {args.repeat})")
    print(f"mmasim dpa only:          {n / best_core:14,.0f} dot products/s  ({best_core:.3f} s)")
    print(f"adapter, bits in/out:     {n / best_e2e:14,.0f} dot products/s  ({best_e2e:.3f} s)")
    if args.save:
        np.savez(args.save, arch=np.array(canonical_arch(arch)), qualifier=np.array(qual),
                 a_bits=a_bits, b_bits=b_bits, c_bits=c_bits, d_bits=d_bits)
        print(f"saved inputs and outputs to {args.save}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=1 << 20, help="number of dot products (default 2^20)")
    p.add_argument("--arch", default="Hopper")
    p.add_argument("--qualifier", default="m16n8k16.f32.f16.f16.f32")
    p.add_argument("--chunk", type=int, default=1 << 12, help="rows per mmasim call")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", metavar="PATH", help="write a_bits, b_bits, c_bits, d_bits to .npz")
    p.add_argument("--inputs", metavar="PATH", help="read a_bits, b_bits, c_bits from this .npz instead")
    _bench(p.parse_args(argv))


if __name__ == "__main__":
    # one core: pin OpenMP and torch's intra-op pool before torch is imported
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    main(sys.argv[1:])
