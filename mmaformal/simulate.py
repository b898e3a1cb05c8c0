"""Layer 5 front end, simulate: run any catalog instruction bit-exactly, on host or device arrays.

May import: numpy, mmaformal.isa, mmaformal.theory, mmaformal.fp, mmaformal.bits (never z3:
this is the fast path; ml_dtypes only lazily, when the caller passes ml_dtypes arrays or
tensors of a type only ml_dtypes has on the host; mmaformal.compile and mmaformal.sparse lazily;
mmaformal.cuda lazily, for ``device="cuda"`` / ``"auto"`` or device arrays: the same trace on
an NVIDIA GPU; torch and CuPy only lazily and only when the caller passed their arrays).

``simulate(instr, a, b, c, scale_a=None, scale_b=None, theory=None)`` computes D = A*B + C with
the instruction's primary theory (or a named one): every element of every tile at once, in
chunks of lanes so memory stays bounded. All evaluation goes through ``Theory.dot``.

Array contract (docs/design.md): raw bits as unsigned integers of the format's storage width (uint8 for
formats of 8 bits or less, one element per byte, fp6 in the low 6 bits, fp4 in the low 4; uint16;
uint32, also for tf32; uint64). Also accepted: numpy float16/float32/float64 and ml_dtypes arrays,
read by bit reinterpretation when their type is the format's own (a NaN keeps its payload),
otherwise cast and checked to be exact (never rounded through host floats); a NaN in a float array
of another type is rejected (it has no defined payload in the target format).

Device arrays (``placement``): any array argument may also be a torch tensor (CUDA or CPU), a
CuPy array or another object with ``__dlpack__`` on a CUDA device. Device operands are imported
zero-copy through DLPack (torch through a same-width integer view: bfloat16/float8 too),
validated there by the same rules and messages (a float of another type than the format's own
is cast exactly through a host copy of it), run by the CUDA back-end (mmaformal.cuda) and D
returned on that device as raw bits of the numpy path's unsigned dtype: a torch tensor
(torch.uint8/16/32/64) when A is one, else a CuPy array. All array operands must be on that one
device. ``device`` defaults to "auto" for them (the GPU where the theory has a CUDA form, else
the CPU path on host copies, D copied back); "cpu" forces that path. Torch CPU tensors are read
through numpy (bfloat16/float8 by their bits) and D is a torch CPU tensor.

Shapes: A (..., M, K), B (..., K, N), C (..., M, N) with (M, N, K) the instruction's shape;
leading batch dimensions broadcast. Block-scaled instructions (``scale_block`` elements of K
share a scale): scale_a (..., M, K / scale_block), scale_b (..., K / scale_block, N), raw bits
of the scale format (uint8). D (batch..., M, N) is returned as raw bits of the D format. AMD
multi-block forms (``blocks`` > 1) compute independent blocks: pass them as a batch dimension.
Sparse instructions (mma.sp, wgmma.sp, v_smfmac; mmaformal.sparse): A is either compressed
(..., M, K/2) (tf32: K/2 too, 1 of 2 kept) with ``meta`` of the same shape (uint8 positions within
each group of 4, or 2; s4/u4: of 8, kept in aligned pairs 2p, 2p + 1), or dense (..., M, K) with
at most 2 non-zeros per group of 4 (s4/u4: non-zeros in at most 2 of the 4 pairs of every 8) and
no ``meta`` (the metadata is derived).

Invariants: inputs are validated before any arithmetic (unknown instruction -> closest names;
shape, dtype width and bits above a narrow format's width -> ValueError naming expected vs got;
a device array without a usable CUDA back-end, or operands on different devices -> one-line
ValueError); host inputs give numpy results, device inputs results of their kind on their
device, with the same bits.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from fractions import Fraction
from typing import Any

import numpy as np

from . import fp, isa
from . import theory as _theory
from .bits import INT, NUMPY
from .isa import Instruction

__all__ = ["simulate", "as_bits", "storage_dtype", "value_of", "bits_of", "decimal",
           "parse_value", "load_npy", "save_npy", "out_path", "DEFAULT_CHUNK", "resolve_theory",
           "on_gpu", "pick_device", "placement", "Placement"]

#: Lanes (dot products) per numpy pass: large enough to amortise the per-operation Python
#: overhead, small enough that the peak memory stays ~100-200 MB whatever the input size.
DEFAULT_CHUNK = 1 << 18

#: "auto": the theory's dot product traced into a C kernel (mmaformal.compile) when a C
#: compiler is present and every value fits 126 bits, else numpy lanes; "numpy" forces lanes.
BACKEND = os.environ.get("MMAFORMAL_BACKEND", "auto")
#: below this many dot products (and with no kernel built yet) numpy lanes are cheaper than
#: tracing and compiling a kernel
COMPILE_MIN = int(os.environ.get("MMAFORMAL_COMPILE_MIN", "65536"))
_KERNELS: dict = {}
_KLOCK = threading.Lock()


def _kernel(th, ins):
    """The compiled kernel of one dot product of theory th on instruction ins, or None."""
    with _KLOCK:                      # threads of one campaign build each kernel once
        return _kernel_locked(th, ins)


def _disk_key(th, ins) -> str:
    """What determines the trace of `th.dot` on `ins`: the theory's arithmetic content, the
    instruction, and the source of the code the dot product runs (so a later process finds the
    compiled kernel without tracing it again; mmaformal.compile)."""
    from ._cache import files_key
    here = os.path.dirname(os.path.abspath(__file__))
    code = [os.path.join(here, f) for f in ("bits.py", "fp.py", "mma.py", "theory.py", "simulate.py")]
    return f"simulate.dot|{th.hash()}|{ins.name}|{files_key(code)}"


def _kernel_locked(th, ins):
    key = (th.hash(), ins.name)
    if key in _KERNELS:
        return _KERNELS[key]
    kern = None
    if BACKEND != "numpy":
        from . import compile as _compile
        wa, wb, wc, wd = (fp.fmt(f).storage for f in (ins.a, ins.b, ins.c, ins.d))
        nk = ins.k
        na = ins.k // ins.sparsity[0] * ins.sparsity[1]
        nblk = ins.k // ins.scale_block if ins.scale else 0

        def fn(K, *x):
            if ins.sparse:       # a (na), b (nk), c, metadata (na)
                return th.dot(K, list(x[:na]), list(x[na:na + nk]), x[na + nk], None, None,
                              list(x[na + nk + 1:]))
            sa = list(x[2 * nk + 1:2 * nk + 1 + nblk]) if nblk else None
            sb = list(x[2 * nk + 1 + nblk:]) if nblk else None
            return th.dot(K, list(x[:nk]), list(x[nk:2 * nk]), x[2 * nk], sa, sb)
        widths = ([wa] * na + [wb] * nk + [wc] + [8] * na) if ins.sparse else \
            ([wa] * nk + [wb] * nk + [wc] + [8] * (2 * nblk))
        try:
            kern = _compile.compile_kernel(fn, widths, [wd], disk_key=_disk_key(th, ins))
        except _compile.Unsupported:
            kern = None
        except (RuntimeError, OSError) as e:       # say so once: a silent fallback hides a 100x
            print(f"mmaformal: compiled path unavailable for {ins.name}, using numpy lanes: "
                  f"{str(e)[:300]}", file=sys.stderr)
            kern = None
    _KERNELS[key] = kern
    return kern

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

#: The host float type whose bits *are* the format (numpy or ml_dtypes dtype name).
_NATIVE = {
    "f64": "float64", "f32": "float32", "tf32": "float32", "f16": "float16",
    "bf16": "bfloat16", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2",
    "e4m3fnuz": "float8_e4m3fnuz", "e5m2fnuz": "float8_e5m2fnuz", "e3m2": "float6_e3m2fn",
    "e2m3": "float6_e2m3fn", "e2m1": "float4_e2m1fn", "ue8m0": "float8_e8m0fnu",
}


def storage_dtype(fmt_name: str) -> np.dtype:
    return np.dtype(_UINT[fp.fmt(fmt_name).storage])


def _float_type(name: str):
    if name in ("float16", "float32", "float64"):
        return np.dtype(name)
    import ml_dtypes
    return np.dtype(getattr(ml_dtypes, name))


def _dtype_rule(name: str, kind: str, f, want: np.dtype, role: str, pre: str,
                hint: str = ".astype(np.{})", same: "bool | None" = None) -> str:
    """How an array of dtype `name` (numpy kind letter `kind`) holds format f: "raw" (unsigned
    bits of the storage width), "native" (the format's own float type: its bits) or "cast"
    (another float type: cast and checked to be exact); else the ValueError naming expected vs
    got. hint: how to turn signed bits into unsigned ones ({} is the unsigned dtype); same:
    whether an unsigned dtype is the storage dtype (default: by name)."""
    native = _NATIVE.get(f.name)
    if kind == "u":
        if not (name == want.name if same is None else same):
            raise ValueError(f"{pre}{role} in format {f.name} must be {want.name} raw bits"
                             + (f" (or {native} values)" if native else "") + f", got {name}")
        return "raw"
    if kind in "ibO":
        raise ValueError(f"{pre}{role} in format {f.name}: raw bits must be unsigned "
                         f"({want.name}), got {name} (use {hint.format(want.name)})")
    if kind in "fV":
        if native is None:
            raise ValueError(f"{pre}{role} in format {f.name}: no host float type holds it; "
                             f"pass {want.name} raw bits")
        if name == native:
            return "native"
        if kind == "f" or name.startswith(("float", "bfloat")):
            return "cast"
    raise ValueError(f"{pre}{role}: unsupported dtype {name}")


def _kind(name: str) -> str:             # numpy's kind letter of a torch/CuPy dtype name
    return "u" if name.startswith("uint") else "i" if name.startswith("int") else \
        "b" if name == "bool" else "f" if name.startswith(("float", "bfloat")) else "?"


def _check_width(bits, f, want: np.dtype, role: str, pre: str, xp=np) -> None:
    """No bits above a narrow format's width (fp6 in the low 6 bits of a byte, ...)."""
    width = f.k + f.pad
    if width < 8 * want.itemsize and bits.size and int(bits.max()) >> width:
        idx = tuple(int(i) for i in xp.argwhere(bits >> width)[0])
        raise ValueError(f"{pre}{role} in format {f.name} uses the low {width} bits of each "
                         f"{want.name} (values <= {hex((1 << width) - 1)}); got "
                         f"{hex(int(bits[idx]))} at index {idx}")


def as_bits(x: Any, fmt_name: str, role: str = "operand", where: str = "") -> np.ndarray:
    """The raw storage bits of x in format `fmt_name` (see the module docstring), validated."""
    f = fp.fmt(fmt_name)
    want = storage_dtype(fmt_name)
    pre = f"{where}: " if where else ""
    arr = x if isinstance(x, np.ndarray) else np.asarray(x)
    dt = arr.dtype
    rule = _dtype_rule(dt.name, dt.kind, f, want, role, pre, same=dt == want)
    if rule == "raw":
        bits = arr
    elif rule == "native":
        bits = arr.view(want) if dt.itemsize == want.itemsize else arr.view(np.uint8).astype(want)
    else:
        bits = _cast_exact(arr, f, want, role, pre)
    _check_width(bits, f, want, role, pre)
    return bits


def _cast_exact(arr: np.ndarray, f, want: np.dtype, role: str, pre: str) -> np.ndarray:
    """A float array of another type than the format's own, cast and checked to be exact."""
    dt = arr.dtype
    native = _NATIVE[f.name]
    tgt = _float_type(native)
    isnan = np.isnan(arr.astype(np.float64))
    if np.any(isnan):
        bad = tuple(int(i) for i in np.argwhere(isnan)[0])
        raise ValueError(f"{pre}{role} holds a NaN at index {bad}: a {dt.name} NaN has no "
                         f"defined payload in {f.name}; pass {want.name} raw bits (or "
                         f"{native} values)")
    with np.errstate(all="ignore"):
        y = arr.astype(tgt)
        back = y.astype(dt)
    same = (back == arr) | (np.isnan(back.astype(np.float64)) & np.isnan(arr.astype(np.float64)))
    same &= np.signbit(back.astype(np.float64)) == np.signbit(arr.astype(np.float64))
    if not np.all(same):
        bad = np.argwhere(~np.asarray(same))[0]
        val = arr[tuple(bad)] if arr.ndim else arr
        raise ValueError(f"{pre}{role} value {val!r} at index {tuple(int(i) for i in bad)} "
                         f"is not exactly representable in {f.name}")
    bits = y.view(want) if tgt.itemsize == want.itemsize else y.view(np.uint8).astype(want)
    if f.pad:
        low = bits & np.asarray((1 << f.pad) - 1, dtype=want)
        if np.any(low):
            raise ValueError(f"{pre}{role}: a value is not exactly representable in "
                             f"{f.name} (low {f.pad} bits of its f32 container are set)")
    return bits


def _shape_err(where, what, got, want) -> ValueError:
    return ValueError(f"{where}: {what} must have shape {want}, got {tuple(got)}")


def resolve_theory(ins: Instruction, theory=None):
    """The theory (id, Theory or None: the primary) that runs `ins`, evaluable (else ValueError)."""
    th = _theory.default().resolve(ins, theory)
    ok, why = th.evaluable
    if not ok:
        raise ValueError(f"theory {th.id} cannot be evaluated by this mmaformal.mma: {why}")
    return th


def simulate(instr: "str | Instruction", a, b, c, scale_a=None, scale_b=None, theory=None,
             chunk: int = DEFAULT_CHUNK, meta=None, device: "str | None" = None):
    """Raw bits of D = A*B + C for the instruction (see the module docstring).

    device: "cpu", "cuda" (the same trace on an NVIDIA GPU, mmaformal.cuda; ValueError when
    there is none) or "auto" (CUDA when usable and the trace has a CUDA form, else CPU); None
    (default): "cpu" for host arrays, "auto" for device arrays (torch, CuPy, CUDA DLPack: D
    comes back on their device, of A's kind; module docstring)."""
    ins = isa.lookup(instr) if not isinstance(instr, Instruction) else instr
    th = resolve_theory(ins, theory)
    named = dict(A=a, B=b, C=c, scale_a=scale_a, scale_b=scale_b, meta=meta)
    ops = tuple(named.values())
    pl = placement(ins.name, **named)
    if pl.kind != "numpy":
        dev = device if device is not None else "auto" if pl.on_device else "cpu"
        if not pl.on_device or dev == "cpu" or not on_gpu(th, ins, dev):
            h = [pl.host(x, r, ins.name) for r, x in named.items()]     # the CPU path
            return pl.wrap(simulate(ins, *h[:5], theory=th, chunk=chunk, meta=h[5],
                                    device="cpu" if pl.on_device else dev))
        with pl.context():
            A, B, C, SA, SB, _, batch = _operands(ins, *ops, pl.bits)
            return pl.wrap(_tiles_cuda(th, ins, A, B, C, SA, SB, batch))
    A, B, C, SA, SB, E, batch = _operands(ins, *ops, as_bits)
    M, N, K = ins.m, ins.n, ins.k
    out = np.empty(batch + (M, N), dtype=storage_dtype(ins.d))
    if out.size == 0:
        return out
    Bt = np.swapaxes(np.broadcast_to(B, batch + (K, N)), -1, -2)
    Cb = np.broadcast_to(C, batch + (M, N))
    if E is not None:
        # a sparse A travels with its metadata: both as (.., M, KA) columns of one tile
        KA = A.shape[-1]
        return _simulate_lanes(th, ins, np.broadcast_to(A, batch + (M, KA)), Bt, Cb, None, None,
                               out, chunk, np.broadcast_to(E, batch + (M, KA)))
    Ab = np.broadcast_to(A, batch + (M, K))
    SAb = SBt = None
    if ins.scale:
        SAb = np.broadcast_to(SA, batch + SA.shape[-2:])
        SBt = np.swapaxes(np.broadcast_to(SB, batch + SB.shape[-2:]), -1, -2)
    if device not in (None, "cpu") and on_gpu(th, ins, device):
        from . import cuda
        out.reshape(-1, M * N)[:] = cuda.simulate_tiles(th, ins, Ab, Bt, Cb, SAb, SBt)
        return out
    return _simulate_lanes(th, ins, Ab, Bt, Cb, SAb, SBt, out, chunk)


def _operands(ins, a, b, c, scale_a, scale_b, meta, bits):
    """The validated raw bits of every operand and their broadcast batch shape: (A, B, C, SA,
    SB, E, batch), E the sparse metadata (derived from a dense A when meta is None). bits:
    `as_bits`, or a device Placement's reader (same rules, same messages)."""
    name = ins.name
    A, B, C = (bits(x, f, r, name) for x, f, r in ((a, ins.a, "A"), (b, ins.b, "B"), (c, ins.c, "C")))
    M, N, K = ins.m, ins.n, ins.k
    KA, E = K, None
    if ins.sparse:
        from . import sparse as _sp
        KA = _sp.kept_width(ins)
        if meta is None:
            if A.ndim < 2 or A.shape[-2:] != (M, K):
                raise ValueError(f"{name}: a sparse A without metadata must be dense, shape "
                                 f"(..., {M}, {K}); a compressed A (..., {M}, {KA}) needs meta")
            A, E = _sp.compress(A, ins, name)
        else:
            E = _sp.check_meta(meta, ins, name)
    elif meta is not None:
        raise ValueError(f"{name} is not sparse: it takes no metadata")
    for what, X, want in (("A", A, (M, KA)), ("B", B, (K, N)), ("C", C, (M, N))) + \
            ((("metadata", E, (M, KA)),) if E is not None else ()):
        if X.ndim < 2 or X.shape[-2:] != want:
            raise _shape_err(name, what, X.shape, "(..., %d, %d)" % want)
    named = [("A", A), ("B", B), ("C", C)]
    SA = SB = None
    if ins.scale:
        nblk = K // ins.scale_block
        if scale_a is None or scale_b is None:
            missing = " and ".join(n for n, s in (("scale_a", scale_a), ("scale_b", scale_b)) if s is None)
            raise ValueError(f"{name} is block-scaled ({ins.scale}, one scale per {ins.scale_block} "
                             f"elements of K): {missing} missing; scale_a has shape (..., {M}, {nblk}), "
                             f"scale_b (..., {nblk}, {N})")
        SA, SB = bits(scale_a, ins.scale, "scale_a", name), bits(scale_b, ins.scale, "scale_b", name)
        for what, X, want in (("scale_a", SA, (M, nblk)), ("scale_b", SB, (nblk, N))):
            if X.ndim < 2 or X.shape[-2:] != want:
                raise _shape_err(name, what, X.shape, "(..., %d, %d)" % want)
        named += [("scale_a", SA), ("scale_b", SB)]
    elif scale_a is not None or scale_b is not None:
        raise ValueError(f"{name} is not block-scaled: it takes no scale_a/scale_b")
    named += [("metadata", E)] if E is not None else []
    try:
        batch = tuple(np.broadcast_shapes(*(X.shape[:-2] for _, X in named)))
    except ValueError:
        raise ValueError(f"{name}: batch dimensions do not broadcast: "
                         + ", ".join(f"{n} {tuple(X.shape)}" for n, X in named)) from None
    return A, B, C, SA, SB, E, batch


def _simulate_lanes(th, ins, Ab, Bt, Cb, SAb, SBt, out, chunk, Eb=None):
    """The CPU path: dense tiles on the compiled kernel (mmaformal.compile) when it is built or
    the work is large enough, else lanes in chunks (a sparse A with its metadata Eb: per chunk,
    on the kernel or numpy lanes)."""
    M, N, K = ins.m, ins.n, ins.k
    batch = out.shape[:-2]
    total = out.size
    wa, wb, wc = (fp.fmt(f).storage for f in (ins.a, ins.b, ins.c))
    flat = out.reshape(-1)
    chunk = max(1, int(chunk))
    built = (th.hash(), ins.name) in _KERNELS
    kern = _kernel(th, ins) if (built or total >= COMPILE_MIN or BACKEND == "compiled") else None
    if kern is not None and Eb is None:
        _run_tiles(kern, ins, Ab, Bt, Cb, SAb, SBt, out, chunk)
        return out
    KA = Ab.shape[-1]
    for lo in range(0, total, chunk):
        hi = min(total, lo + chunk)
        lane = np.arange(lo, hi, dtype=np.int64)
        j = lane % N
        i = (lane // N) % M
        bidx = np.unravel_index(lane // (M * N), batch) if batch else ()
        rows = Ab[bidx + (i,)]
        cols = Bt[bidx + (j,)]
        cv = Cb[bidx + (i, j)]
        sa = sb = meta = None
        if Eb is not None:             # sparse: compressed A (KA columns) and its metadata
            ems = Eb[bidx + (i,)]
            if kern is not None:
                (d,) = kern(*[np.ascontiguousarray(x[:, k]) for x, n in ((rows, KA), (cols, K))
                              for k in range(n)], np.ascontiguousarray(cv),
                            *[np.ascontiguousarray(ems[:, k]) for k in range(KA)])
                flat[lo:hi] = d
                continue
            meta = [NUMPY.lift(ems[:, k], 8) for k in range(KA)]
        if SAb is not None:
            s_a, s_b = SAb[bidx + (i,)], SBt[bidx + (j,)]
            sa = [NUMPY.lift(s_a[:, q], 8) for q in range(s_a.shape[1])]
            sb = [NUMPY.lift(s_b[:, q], 8) for q in range(s_b.shape[1])]
        a_cols = [NUMPY.lift(rows[:, k], wa) for k in range(KA)]
        b_cols = [NUMPY.lift(cols[:, k], wb) for k in range(K)]
        d = th.dot(NUMPY, a_cols, b_cols, NUMPY.lift(cv, wc), sa, sb, *([meta] if meta else []))
        v = np.broadcast_to(np.asarray(d.v), (hi - lo,))
        flat[lo:hi] = v.astype(out.dtype) if v.dtype != object else \
            np.array([int(x) for x in v], dtype=out.dtype)
    return out


def _tiles_cuda(th, ins, A, B, C, SA, SB, batch):
    """Dense tiles of validated device (CuPy) operands on the GPU: D (batch..., M, N), CuPy,
    computed in place on the device (broadcast operands are expanded there)."""
    import cupy as cp
    from . import cuda
    out = cp.empty(batch + (ins.m, ins.n), dtype=storage_dtype(ins.d))
    if out.size == 0:
        return out

    def tiles(X, transpose=False):        # (T, rows, cols) contiguous; B and scale_b transposed
        Xb = cp.broadcast_to(X, batch + X.shape[-2:])
        Xb = cp.swapaxes(Xb, -1, -2) if transpose else Xb
        return cp.ascontiguousarray(Xb).reshape((-1,) + Xb.shape[-2:])

    S = (tiles(SA), tiles(SB, True)) if ins.scale else (None, None)
    flat = out.reshape(-1, ins.m * ins.n)
    cuda.dot_module(th, ins).sim_device(tiles(A), tiles(B, True), tiles(C).reshape(flat.shape),
                                        *S, out=flat)
    return out


def on_gpu(th, ins, device: str) -> bool:
    """Whether to run on the GPU: "cuda" demands it (ValueError naming why not), "auto" takes
    it when a GPU is usable and the trace has a CUDA form."""
    from . import cuda
    dev, _ = cuda.resolve_device(device)
    if dev == "cpu":
        return False
    ok, why = cuda.supported(th, ins)
    if not ok and device == "cuda":
        raise ValueError(f"{ins.name}: no GPU form of theory {th.id} ({why})")
    return ok


def pick_device(requested: str, ins, th) -> tuple[str, str]:
    """('cpu' | 'cuda', why) for a verb's --device (cli, emulate); cuda without a usable GPU or
    GPU form of the theory is a one-line ValueError (exit 2)."""
    if requested == "cpu":
        return "cpu", "cpu requested"
    from .cuda import resolve_device, supported
    dev, note = resolve_device(requested)
    if dev == "cuda":
        ok, why = supported(th, ins)
        if not ok:
            if requested == "cuda":
                raise ValueError(f"--device cuda: {ins.name} has no GPU form of theory {th.id} ({why})")
            return "cpu", f"no GPU form of theory {th.id}: {why}"
    return dev, note


def _run_tiles(kern, ins, Ab, Bt, Cb, SAb, SBt, out, chunk):
    """The compiled path: tiles are expanded to lanes with contiguous copies (np.repeat /
    broadcast), lane order (tile, i, j) as in `out`; the kernel reads strided columns."""
    M, N, K = ins.m, ins.n, ins.k
    A3 = Ab.reshape(-1, M, K)
    B3 = Bt.reshape(-1, N, K)
    C2 = Cb.reshape(-1, M * N)
    S3 = (SAb.reshape(-1, M, SAb.shape[-1]), SBt.reshape(-1, N, SBt.shape[-1])) if SAb is not None else None
    flat = out.reshape(-1, M * N)
    step = max(1, chunk // (M * N))
    threads = max(1, int(os.environ.get("MMAFORMAL_THREADS", "1")))

    def part(t0):
        t1 = min(len(A3), t0 + step)
        T = t1 - t0
        ae = np.repeat(A3[t0:t1], N, axis=1).reshape(-1, K)
        be = np.broadcast_to(B3[t0:t1, None], (T, M, N, K)).reshape(-1, K)
        cols = [ae[:, k] for k in range(K)] + [be[:, k] for k in range(K)] + [np.ascontiguousarray(C2[t0:t1]).reshape(-1)]
        if S3 is not None:
            sa = np.repeat(S3[0][t0:t1], N, axis=1).reshape(T * M * N, -1)
            sb = np.broadcast_to(S3[1][t0:t1, None], (T, M) + S3[1].shape[1:]).reshape(T * M * N, -1)
            cols += [sa[:, q] for q in range(sa.shape[1])] + [sb[:, q] for q in range(sb.shape[1])]
        (d,) = kern(*cols)
        flat[t0:t1] = d.reshape(T, M * N)

    starts = range(0, len(A3), step)
    if threads > 1 and len(starts) > 1:           # the kernel call releases the GIL
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(part, starts))
    else:
        for t0 in starts:
            part(t0)


# --------------------------------------------------------------------------------------------
# Where the operands live: host arrays, torch tensors (CPU or CUDA), CuPy arrays and other CUDA
# DLPack producers (see the module docstring)

_DL_CUDA, _DL_HOST = (2, 13), (1, 3)      # DLPack device types: CUDA (managed) / CPU (pinned)


def _is_torch(x) -> bool:                 # a tensor's library is imported already
    return isinstance(x, getattr(sys.modules.get("torch"), "Tensor", ()))


def _is_cupy(x) -> bool:
    return isinstance(x, getattr(sys.modules.get("cupy"), "ndarray", ()))


def _locate(x, role: str, where: str) -> tuple[str, "int | None", str]:
    """(kind, CUDA device id or None: the host, description) of one operand; kind "numpy": all
    that np.asarray reads (numpy and ml_dtypes arrays, lists, host DLPack objects)."""
    if isinstance(x, np.ndarray) or not hasattr(x, "__dlpack__"):
        return "numpy", None, "a host array"
    tname = type(x).__name__
    if _is_torch(x):
        if x.device.type in ("cuda", "cpu"):
            return ("torch", int(x.device.index or 0), f"a torch.Tensor on {x.device}") \
                if x.device.type == "cuda" else ("torch", None, "a torch.Tensor on the CPU")
        raise ValueError(f"{where}: {role} is a torch.Tensor on {x.device}: only CUDA and CPU "
                         f"tensors are accepted")
    if _is_cupy(x):
        return "cupy", int(x.device.id), f"a CuPy array on cuda:{x.device.id}"
    try:
        kind, dev = (int(v) for v in x.__dlpack_device__())
    except Exception as e:  # noqa: BLE001 (a foreign object: say what it lacks, one line)
        raise ValueError(f"{where}: {role} ({tname}) has __dlpack__ but no usable "
                         f"__dlpack_device__ ({type(e).__name__})") from None
    if kind in _DL_CUDA + _DL_HOST:
        return ("dlpack", dev, f"a {tname} on cuda:{dev}") if kind in _DL_CUDA else \
            ("numpy", None, f"a {tname} on the host")
    raise ValueError(f"{where}: {role} ({tname}) is on DLPack device type {kind}: only CUDA "
                     f"device arrays (type 2) and host arrays are accepted")


def placement(where: str, **operands) -> "Placement":
    """Where a call's array operands (role=array; None skipped) live: all on the host (kind
    "numpy", or "torch" when the first is a torch CPU tensor) or all on one CUDA device (the
    first one's kind: "torch", "cupy" or "dlpack"). Operands on different devices, a device
    other than CUDA, or a CUDA array without a usable CUDA back-end: one-line ValueError."""
    found = [(role,) + _locate(x, role, where) for role, x in operands.items() if x is not None]
    dev = [f for f in found if f[2] is not None]
    if not dev:
        return Placement("torch" if found and found[0][1] == "torch" else "numpy", None)
    if len(dev) < len(found) or len({f[2] for f in dev}) > 1:
        raise ValueError(f"{where}: operands on different devices (" + ", ".join(
            f"{r} {d}" for r, _, _, d in found) + "); pass all on one CUDA device, or all on the host")
    from . import cuda
    ok, why = cuda.available()
    if not ok:
        raise ValueError(f"{where}: {dev[0][0]} is {dev[0][3]} but no CUDA back-end is usable "
                         f"here: {why}; pass numpy arrays instead")
    return Placement(found[0][1], dev[0][2])


class Placement:
    """The side of a call's operands (`placement`): `bits` reads one as validated raw bits on
    that side, `host` as a numpy copy read as numpy reads its dtype, `wrap` returns a result
    there. Device work runs under `context()` (that CUDA device current)."""

    def __init__(self, kind: str, device_id: "int | None"):
        self.kind, self.device_id = kind, device_id
        self.on_device = device_id is not None

    def context(self):
        if not self.on_device:
            return contextlib.nullcontext()
        import cupy
        return cupy.cuda.Device(self.device_id)

    def _raw(self, x, role: str, where: str):
        """(the operand's elements as unsigned ints of their width, no copy: CuPy on a device,
        numpy for a torch CPU tensor; its dtype name)."""
        if _is_torch(x):
            t = x.detach()
            name = str(t.dtype).replace("torch.", "")
            if _kind(name) == "?" or name.endswith("_x2"):
                raise ValueError(f"{where}: {role}: unsupported dtype {name}")
            w = 8 * t.element_size()            # through a signed view: bf16/fp8 travel too
            s = t if name == f"int{w}" else t.view(getattr(sys.modules["torch"], f"int{w}"))
            if not t.is_cuda:
                return s.numpy().view(_UINT[w]), name
            import cupy
            return cupy.from_dlpack(s).view(_UINT[w]), name
        arr = x
        if not _is_cupy(x):
            import cupy
            try:
                arr = cupy.from_dlpack(x)
            except Exception as e:  # noqa: BLE001 (e.g. a dtype CuPy lacks)
                msg = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
                raise ValueError(f"{where}: {role}: cannot import the {type(x).__name__} "
                                 f"through DLPack ({msg})") from None
        if _kind(arr.dtype.name) == "?":
            raise ValueError(f"{where}: {role}: unsupported dtype {arr.dtype.name}")
        return arr.view(_UINT[8 * arr.dtype.itemsize]), arr.dtype.name

    def host(self, x, role: str = "operand", where: str = ""):
        """x as a host array that numpy reads as the original (bfloat16/float8 as ml_dtypes
        types, by their bits); None and operands np.asarray reads are returned as they are."""
        if x is None or not (_is_torch(x) or _is_cupy(x) or self.on_device):
            return x
        u, name = self._raw(x, role, where)
        if self.on_device:
            with self.context():
                u = u.get()
        return u.view(_float_type(name) if _kind(name) == "f" else np.dtype(name))

    def bits(self, x, fmt_name: str, role: str = "operand", where: str = ""):
        """as_bits on this side: on a device, the same rules and messages, checked there (a
        float of another type than the format's own is cast exactly, on the host)."""
        if not self.on_device:
            return as_bits(self.host(x, role, where), fmt_name, role, where)
        import cupy
        f, want = fp.fmt(fmt_name), storage_dtype(fmt_name)
        pre = f"{where}: " if where else ""
        u, name = self._raw(x, role, where)
        lib = "torch" if self.kind == "torch" else "cupy"
        if _dtype_rule(name, _kind(name), f, want, role, pre, f".view({lib}.{{}})") == "cast":
            return cupy.asarray(as_bits(self.host(x, role, where), fmt_name, role, where))
        bits = u if u.dtype == want else u.astype(want)
        _check_width(bits, f, want, role, pre, cupy)
        return bits

    def wrap(self, out):
        """A result (raw bits, numpy or CuPy) as the caller's kind on the caller's side."""
        if self.kind == "numpy":
            return out
        w = 8 * out.dtype.itemsize
        torch = sys.modules.get("torch")
        if self.on_device:
            import cupy
            with self.context():
                d = out if isinstance(out, cupy.ndarray) else cupy.asarray(out)
            if self.kind != "torch":
                return d
            return torch.from_dlpack(d.view(f"int{w}")).view(getattr(torch, f"uint{w}"))
        t = torch.from_numpy(np.ascontiguousarray(out).view(f"int{w}"))
        return t.view(getattr(torch, f"uint{w}"))


# --------------------------------------------------------------------------------------------
# .npy files of the verbs (simulate, emulate): bad files are one-line ValueErrors


def load_npy(path: str | None, what: str):
    """The array in a .npy file (None for no path); `what` names the option in messages.
    A file that does not start with the .npy magic is "not a .npy file" (never read as
    pickled data); an array stored big-endian is returned in native byte order (the same
    values, so the same raw bits)."""
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
    except FileNotFoundError:
        raise ValueError(f"{what}: no such file {path!r}") from None
    except IsADirectoryError:
        raise ValueError(f"{what}: {path!r} is a directory, not a .npy file") from None
    except OSError as e:
        raise ValueError(f"{what}: cannot read {path!r}: {e.strerror or e}") from None
    if magic != b"\x93NUMPY":
        raise ValueError(f"{what}: cannot read {path!r}: not a .npy file (no .npy header; "
                         f"write arrays with numpy.save)")
    try:
        arr = np.load(path, allow_pickle=False)
    except Exception as e:  # object arrays, a truncated file ...
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        if "pickle" in first:
            first = "it holds Python objects, not numbers"
        raise ValueError(f"{what}: cannot read {path!r} as .npy ({first})") from None
    if arr.dtype.byteorder not in ("=", "|") and arr.dtype.kind in "uifc":
        arr = arr.astype(arr.dtype.newbyteorder("="))       # byte swap: same values, same bits
    return arr


def out_path(path: "str | os.PathLike") -> str:
    """The file an --out names, checked before anything runs: a directory (or a path ending in
    a separator) is an error (never DIR.npy beside it); ".npy" is appended when missing, as
    numpy does."""
    from pathlib import Path
    text = os.fspath(path)
    out = Path(text)
    if out.is_dir() or text.endswith(("/", os.sep)):
        raise ValueError(f"--out: {text!r} is a directory; name the file to write "
                         f"(e.g. {str(out / 'd.npy')!r})")
    return text if out.suffix == ".npy" else text + ".npy"


def save_npy(path: str, D: np.ndarray) -> str:
    """Write D to path (--out; `out_path` checks it); the path written."""
    target = out_path(path)
    try:
        np.save(target, D)
    except OSError as e:
        raise ValueError(f"--out: cannot write {path!r}: {e.strerror or e}") from None
    return target


# --------------------------------------------------------------------------------------------
# Values: exact decoding, exact encoding, exact decimal output (for compare and explain).


def value_of(bits: int, fmt_name: str):
    """The exact value of a storage element: a Fraction, or "nan", "inf", "-inf", "0", "-0".
    Integer formats: the integer (a Fraction with denominator 1; zero is "0")."""
    f = fp.fmt(fmt_name)
    if f.is_int:
        v = int(fp.int_value(f, INT.const(int(bits), f.storage, False)).v)
        return "0" if v == 0 else Fraction(v)
    u = fp.decode(f, INT.const(int(bits), f.storage, False))
    if u.nan.v:
        return "nan"
    neg = bool(u.sign.v)
    if u.inf.v:
        return "-inf" if neg else "inf"
    if u.zero.v:
        return "-0" if neg else "0"
    v = Fraction(u.sig.v) * Fraction(2) ** (u.exp.v - f.t)
    return -v if neg else v


def decimal(v) -> str:
    """Exact decimal string of a value from value_of (dyadic rationals end)."""
    if isinstance(v, str):
        return v
    if v.denominator == 1:
        return str(v.numerator)
    k = v.denominator.bit_length() - 1
    if v.denominator != 1 << k:
        raise ValueError("not a dyadic rational")
    digits = str(abs(v.numerator) * 5 ** k).rjust(k + 1, "0")
    s = digits[:-k] + "." + digits[-k:].rstrip("0")
    return ("-" if v < 0 else "") + s


def bits_of(v, fmt_name: str) -> int | None:
    """The storage element of format fmt_name whose value is exactly v (Fraction or one of the
    strings of value_of), or None if there is none (integers: out of range, not an
    integer, or not a number)."""
    f = fp.fmt(fmt_name)
    if f.is_int:
        if isinstance(v, str):
            if v not in ("0", "-0"):
                return None
            v = 0
        v = Fraction(v)
        if v.denominator != 1 or not f.lo <= v <= f.hi:
            return None
        return int(v) & ((1 << f.k) - 1)
    sb = f.sign_bit
    if isinstance(v, str):
        if v in ("0", "-0"):
            if not f.subnormals:
                return None
            neg = v == "-0"
            if neg and (not f.signed or f.nan == "negzero"):
                return None
            return (sb if neg else 0) << f.pad
        if v in ("inf", "-inf"):
            if not f.inf or (v == "-inf" and not f.signed):
                return None
            return (f.inf_code | (sb if v == "-inf" else 0)) << f.pad
        if v == "nan":
            return fp.default_nan(f) if f.nan != "none" else None
        raise ValueError(f"not a value: {v!r}")
    v = Fraction(v)
    if v == 0:
        return bits_of("0", fmt_name)
    neg = v < 0
    if neg and not f.signed:
        return None
    m = abs(v)
    d = m.denominator
    if d & (d - 1):
        return None
    e = m.numerator.bit_length() - 1 - (d.bit_length() - 1)      # floor(log2 m)
    if f.subnormals and e < f.emin:
        E, q = 0, m / Fraction(2) ** (f.emin - f.t)
    else:
        E, q = e + f.bias, m / Fraction(2) ** (e - f.t)
        if E < 0 or (f.subnormals and E == 0):
            return None
    if q.denominator != 1:
        return None
    q = int(q)
    code = (E << f.t) | (q - (1 << f.t) if E or not f.subnormals else q)
    if E == 0 and f.subnormals and q >= 1 << f.t:
        return None
    if code > f.max_code:
        return None
    return ((sb if neg else 0) | code) << f.pad


def parse_value(text: str):
    """A decimal/rational literal, inf/-inf/nan, or -0, as a value (Fraction or string)."""
    s = text.strip().lower()
    if s in ("nan", "+nan", "-nan"):
        return "nan"
    if s in ("inf", "+inf", "infinity", "+infinity"):
        return "inf"
    if s in ("-inf", "-infinity"):
        return "-inf"
    try:
        v = Fraction(s)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"not a number: {text!r} (decimal, a/b, inf, nan, or 0x raw bits)") from None
    if v == 0:
        return "-0" if s.startswith("-") else "0"
    return v
