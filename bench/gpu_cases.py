"""Operands, native references and timing helpers of bench/bench_gpu.py.

Imports numpy and mmaformal.fp at module level; torch and CuPy only inside the functions that
need them (so `bench_gpu.py --help` and the no-GPU exit work without either).

- ROWS: the GEMM rows (alias, instruction, native kind, native label).
- normal_bits: A, B ~ N(0,1) cast to the operand format (round to nearest even; e4m3 scaled by
  E4M3_SCALE so that almost every value is a normal e4m3; tf32: f32 samples with the 13 low
  bits cleared, so that they are exact tf32 values and any f32 -> tf32 conversion of cuBLAS
  keeps them), raw bits of the format's storage (uint16 f16/bf16, uint8 e4m3, uint32 tf32/f32,
  uint64 f64).
- special_gemm: the operands of the complete check (see its docstring).
- finite_mask / specialised_share: which (block, K-step) pairs have all-finite A and B tiles.
- native: the native reference GEMM of a row on this GPU (torch).
- cupy_best / torch_best / wall_best: timings (CUDA events, or wall clock with a synchronize).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from mmaformal import fp
from mmaformal.cuda_source import element_fact

#: (alias, instruction, native kind, what the native reference is)
ROWS = [
    ("f16", "sm90/mma.m16n8k16.f32.f16.f16.f32", "f16",
     "torch.matmul f16 (f32 accumulation, reduced-precision reduction off)"),
    ("bf16", "sm90/mma.m16n8k16.f32.bf16.bf16.f32", "bf16",
     "torch.matmul bf16 (reduced-precision reduction off)"),
    ("e4m3", "sm90/mma.m16n8k32.f32.e4m3.e4m3.f32", "e4m3",
     "torch._scaled_mm e4m3 (unit f32 scales, f32 out, B column-major)"),
    ("tf32", "sm90/mma.m16n8k8.f32.tf32.tf32.f32", "tf32",
     "torch.matmul f32 with allow_tf32=True"),
    ("sm80-f16", "sm80/mma.m16n8k16.f32.f16.f16.f32", "f16",
     "torch.matmul f16, same shape on this GPU (not an sm80)"),
    ("k8-f16", "sm90/mma.m16n8k8.f32.f16.f16.f32", "f16",
     "torch.matmul f16, same shape on this GPU"),
    ("gfx942", "gfx942/v_mfma_f32_32x32x8_f16", "f16",
     "torch.matmul f16, same shape on this GPU (not an MI300)"),
]
ALIASES = {a: i for a, i, _, _ in ROWS}
NATIVE = {i: (kind, label) for _, i, kind, label in ROWS}

E4M3_SCALE = 8.0
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_INT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def parse_rows(specs, default_size: int) -> list[tuple[str, str, int]]:
    """--gemm-instr entries (an alias of ROWS or an instruction name, optionally @SIZE; 'all')
    -> [(label, instruction, size)]."""
    out = []
    for spec in specs:
        name, _, size = spec.partition("@")
        n = int(size) if size else default_size
        if name == "all":
            out += [(a, i, n) for a, i, _, _ in ROWS]
            continue
        instr = ALIASES.get(name, name)
        label = next((a for a, i, _, _ in ROWS if i == instr), instr)
        out.append((label, instr, n))
    return out


# ---------------------------------------------------------------------------------------------
# Operands


def _torch_cast_bits(x: np.ndarray, dtype_name: str) -> np.ndarray:
    """f32 values -> raw bits of a torch dtype (round to nearest even, on the host)."""
    import torch
    t = torch.from_numpy(np.ascontiguousarray(x)).to(getattr(torch, dtype_name))
    size = t.element_size()
    signed = {1: torch.int8, 2: torch.int16, 4: torch.int32}[size]
    return t.view(signed).numpy().view(_UINT[size])


def normal_bits(rng, shape, fmt_name: str) -> np.ndarray:
    """N(0,1) samples as raw bits of the format (module docstring)."""
    if fmt_name == "f64":
        return rng.standard_normal(shape).view(np.uint64)
    x = rng.standard_normal(shape, dtype=np.float32)
    if fmt_name == "f32":
        return x.view(np.uint32)
    if fmt_name == "tf32":
        return x.view(np.uint32) & np.uint32(0xFFFFE000)
    if fmt_name == "f16":
        return x.astype(np.float16).view(np.uint16)
    if fmt_name == "bf16":
        return _torch_cast_bits(x, "bfloat16")
    if fmt_name == "e4m3":
        return _torch_cast_bits(x * np.float32(E4M3_SCALE), "float8_e4m3fn")
    raise ValueError(f"no N(0,1) operand generator for format {fmt_name}")


def special_codes(fmt_name: str, rng) -> tuple[np.ndarray, np.ndarray]:
    """(non-finite codes: Inf and NaN with payloads where the format has them; finite edge
    codes: signed zeros, subnormals, the smallest normal, the largest finite) as stored."""
    f = fp.fmt(fmt_name)
    S, t, w = f.sign_bit, f.t, f.w
    odd = [0, S, f.max_code, f.max_code | S, 1, 1 | S, (1 << t) - 1, ((1 << t) - 1) | S,
           1 << t, (1 << t) | S]
    odd += [int(x) | (int(s) * S) for x, s in zip(rng.integers(1, 1 << t, 6), rng.integers(0, 2, 6))]
    bad = []
    if f.inf:
        bad += [f.inf_code, f.inf_code | S]
    if f.nan == "ieee":               # quiet and signalling NaNs, random payloads, both signs
        q = 1 << (t - 1)
        pay = rng.integers(1, q, 6) if t > 1 else np.ones(6, dtype=np.int64)
        bad += [f.inf_code | q | int(p) | (i % 2) * S for i, p in enumerate(pay)]
        bad += [f.inf_code | int(p) | (i % 2) * S for i, p in enumerate(pay)]
    elif f.nan == "ones":
        bad += [(1 << (w + t)) - 1, ((1 << (w + t)) - 1) | S]
    elif f.nan == "negzero":
        bad += [S]
    st = _UINT[f.storage // 8]
    return (np.array([c << f.pad for c in bad], dtype=st),
            np.array([c << f.pad for c in odd], dtype=st))


def _sprinkle(X, mask, codes, rng) -> None:
    X[mask] = rng.choice(codes, int(mask.sum()))


def special_gemm(ins, n: int, rng, region: int = 64):
    """A (n, n), B (n, n), C (n, n) raw bits for the complete check of one instruction.

    K-step s covers columns [s*k, (s+1)*k) of A and rows of B. Ordinary N(0,1) values except:
    - steps s % 6 == 5: cancelling pairs, A[:, 2j+1] = A[:, 2j] and B[2j+1, :] = -B[2j, :];
    - steps s % 4 == 3: 1 element in 8 of A and B a finite edge value (signed zeros,
      subnormals, the smallest normal, the largest finite);
    - steps s % 4 == 1, rows in every third band of `region` rows: 1 element in 16 of A
      non-finite (Inf, NaN with payloads); steps s % 5 == 2, columns in every third band
      (offset by one band): the same in B; plus 8 isolated non-finite elements in each;
    - C: 1% finite edge values and 1% non-finite (f32);
    - tf32: random bits in the 13 ignored low bits of every A and B element.
    So most (block, K-step) tiles are all finite (the specialised step) and the others take the
    fallback, and finite tiles hold the edge values."""
    k = ins.k
    A = normal_bits(rng, (n, n), ins.a)
    B = normal_bits(rng, (n, n), ins.b)
    C = normal_bits(rng, (n, n), ins.c)
    step = np.arange(n) // k
    band = np.arange(n) // region
    sb = fp.fmt(ins.b).sign_bit << fp.fmt(ins.b).pad
    pair = np.flatnonzero((step % 6 == 5) & (np.arange(n) % 2 == 1))
    A[:, pair] = A[:, pair - 1]
    B[pair, :] = B[pair - 1, :] ^ B.dtype.type(sb)
    bad_a, odd_a = special_codes(ins.a, rng)
    bad_b, odd_b = special_codes(ins.b, rng)
    _sprinkle(A, (step[None, :] % 4 == 3) & (rng.random((n, n)) < 1 / 8), odd_a, rng)
    _sprinkle(B, (step[:, None] % 4 == 3) & (rng.random((n, n)) < 1 / 8), odd_b, rng)
    _sprinkle(A, (step[None, :] % 4 == 1) & (band[:, None] % 3 == 0) & (rng.random((n, n)) < 1 / 16),
              bad_a, rng)
    _sprinkle(B, (step[:, None] % 5 == 2) & (band[None, :] % 3 == 1) & (rng.random((n, n)) < 1 / 16),
              bad_b, rng)
    for X, bad in ((A, bad_a), (B, bad_b)):
        X[rng.integers(0, n, 8), rng.integers(0, n, 8)] = rng.choice(bad, 8)
    bad_c, odd_c = special_codes(ins.c, rng)
    _sprinkle(C, rng.random((n, n)) < 0.01, odd_c, rng)
    _sprinkle(C, rng.random((n, n)) < 0.01, bad_c, rng)
    for fmt_name, X in ((ins.a, A), (ins.b, B)):
        pad = fp.fmt(fmt_name).pad
        if pad:
            X |= rng.integers(0, 1 << pad, X.shape).astype(X.dtype)
    return A, B, C


def finite_mask(bits: np.ndarray, fmt_name: str) -> np.ndarray:
    """Elementwise: the raw bits encode a finite value (the padding of tf32 ignored): the
    kernel's own fact (cuda_source.element_fact) where the format has one."""
    fact = element_fact(fmt_name, "finite")
    if fact is not None:
        v = bits.astype(np.uint64) & np.uint64((1 << (fact.hb + 1)) - 1)
        return (v >= np.uint64(fact.lo)) & (v <= np.uint64(fact.hi))
    f = fp.fmt(fmt_name)
    v = (bits.astype(np.uint64) >> np.uint64(f.pad)) & np.uint64((1 << f.k) - 1)
    mag = v & np.uint64((1 << (f.w + f.t)) - 1)
    if f.inf or f.nan == "ieee":
        return (mag >> np.uint64(f.t)) != np.uint64((1 << f.w) - 1)
    if f.nan == "ones":
        return mag != np.uint64((1 << (f.w + f.t)) - 1)
    if f.nan == "negzero":
        return v != np.uint64(f.sign_bit)
    return np.ones(bits.shape, dtype=bool)


def specialised_share(A, B, ins, tile) -> "float | None":
    """The share of (row block, column block, K-step) triples of a GEMM kernel of tiling
    `tile` (BM, BN, ...) whose A tile (BM x k) and B tile (k x BN) are all finite (the
    specialised step's domain); None when the blocks do not divide the shape."""
    BM, BN = int(tile[0]), int(tile[1])
    M, K = A.shape
    N = B.shape[1]
    k = ins.k
    if M % BM or N % BN or K % k:
        return None
    fa = finite_mask(A, ins.a).reshape(M // BM, BM, K // k, k).all(axis=(1, 3))   # (rb, s)
    fb = finite_mask(B, ins.b).reshape(K // k, k, N // BN, BN).all(axis=(1, 3))   # (s, cb)
    both = fa.sum(axis=0).astype(np.float64) @ fb.sum(axis=1).astype(np.float64)
    return float(both / ((M // BM) * (N // BN) * (K // k)))


# ---------------------------------------------------------------------------------------------
# Device arrays


def torch_dev(x: np.ndarray):
    """Host raw bits -> a torch CUDA tensor of the same unsigned width (torch.uintN)."""
    import torch
    x = np.ascontiguousarray(x)
    if x.itemsize == 1:
        return torch.from_numpy(x.view(np.uint8)).cuda()
    t = torch.from_numpy(x.view(_INT[x.itemsize])).cuda()
    return t.view(getattr(torch, f"uint{8 * x.itemsize}"))


def torch_host(t) -> np.ndarray:
    import torch
    size = t.element_size()
    signed = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size]
    return t.view(signed).cpu().numpy().view(_UINT[size])


def torch_view(t, dtype):
    """A torch tensor's bits as another dtype of the same width (through the signed view)."""
    import torch
    size = t.element_size()
    signed = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size]
    return t.view(signed).view(dtype)


def nvrtc_cache_files() -> int:
    """Files in CuPy's kernel disk cache (a build that adds some compiled; one that adds none
    was found there)."""
    d = Path(os.environ.get("CUPY_CACHE_DIR", os.path.expanduser("~/.cupy/kernel_cache")))
    try:
        return sum(1 for _ in d.iterdir())
    except OSError:
        return 0


# ---------------------------------------------------------------------------------------------
# Timing


def cupy_best(fn, reps: int) -> float:
    """Best seconds of fn() over reps runs, CUDA events on CuPy's current stream."""
    import cupy as cp
    best = float("inf")
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        fn()
        e.record()
        e.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(s, e) / 1e3)
    return best


def torch_best(fn, reps: int, warm: int = 1) -> float:
    """Best seconds of fn() over reps runs after `warm` runs, torch CUDA events."""
    import torch
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e) / 1e3)
    return best


def wall_best(fn, reps: int, sync) -> tuple[float, object]:
    """Best wall seconds of fn() (synchronized) over reps runs; the last result."""
    best, r = float("inf"), None
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        r = fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best, r


# ---------------------------------------------------------------------------------------------
# Native references


def native(kind: str, A: np.ndarray, B: np.ndarray, reps: int = 10) -> dict:
    """Best seconds of the native GEMM A @ B (no C) of this kind on the GPU (torch): 'f16',
    'bf16' (reduced-precision reduction off), 'tf32' (f32 matmul, allow_tf32), 'e4m3'
    (torch._scaled_mm, unit scales, f32 out, B column-major)."""
    import torch
    m = torch.backends.cuda.matmul
    saved = (m.allow_tf32, m.allow_fp16_reduced_precision_reduction,
             m.allow_bf16_reduced_precision_reduction)
    ta, tb = torch_dev(A), torch_dev(B)
    try:
        m.allow_fp16_reduced_precision_reduction = False
        m.allow_bf16_reduced_precision_reduction = False
        if kind in ("f16", "bf16", "tf32"):
            dt = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[kind]
            m.allow_tf32 = kind == "tf32"
            a, b = torch_view(ta, dt), torch_view(tb, dt)

            def fn():
                return torch.matmul(a, b)
        elif kind == "e4m3":
            a = ta.view(torch.float8_e4m3fn)
            b = tb.t().contiguous().view(torch.float8_e4m3fn).t()      # (K, N) column-major
            one = torch.ones((), device=a.device, dtype=torch.float32)

            def fn():
                return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float32)
        else:
            raise ValueError(f"no native reference of kind {kind}")
        t = torch_best(fn, reps)
    finally:
        (m.allow_tf32, m.allow_fp16_reduced_precision_reduction,
         m.allow_bf16_reduced_precision_reduction) = saved
        del ta, tb
    return {"kind": kind, "seconds": t}


def torch_signed(t):
    """A torch tensor's bits as the signed integer dtype of its width (for comparisons)."""
    import torch
    return t.contiguous().view({1: torch.int8, 2: torch.int16, 4: torch.int32,
                                8: torch.int64}[t.element_size()])
