"""Layer 5 front end, emulate: a whole GEMM with one instruction's exact arithmetic.

May import: numpy, ctypes, mmaformal.compile, mmaformal.cuda (lazily), mmaformal.simulate (array
contract, device placement, theory and device choice), mmaformal.sparse (lazily), mmaformal.isa,
mmaformal.theory, mmaformal.fp, mmaformal.bits, mmaformal.args (never z3); torch and CuPy only
through mmaformal.simulate, only when the caller passed their arrays.

``matmul(A, B, C, instr)`` computes D = A*B + C for any M, N and K as a GPU kernel's main loop
built from that instruction would, bit for bit:

- Every output element is an independent dot product, so M and N are free (no tiling by the
  instruction's m, n). K must be a multiple of the instruction's k (else ValueError, or
  ``pad_k=True``: A's columns and B's rows are padded with +0 to the next multiple, as a kernel
  that zero-fills its last K tile does; the result is that kernel's, which for some theories
  is not the unpadded dot product, e.g. one more accumulator rounding).
- Order: the k-blocks in increasing order, D_0 = C, D_{s+1} = instr(A[:, blk s], B[blk s, :],
  D_s), where blk s = [s*k, (s+1)*k) and instr is the whole instruction dot product
  (``Theory.dot``: for an FDPA theory its own L-blocks chained inside).
- ``split_k = S``: the K-blocks are split into S contiguous parts (``numpy.array_split`` of the
  block indices: the first parts get one block more when S does not divide K/k). Part p is
  accumulated as above from +0 in the accumulator format (P_p), and D = (((C + P_0) + P_1) +
  ... + P_{S-1}), each + an IEEE 754 RNE addition in the accumulator (D) format, in part order:
  a split-K kernel whose reduction adds the partial tiles onto C in order. Integer (s32)
  accumulators: each + is the two's complement wrap-around addition of a 32-bit integer add.
- The accumulator is carried in the D format, so an instruction whose C format differs from
  its D format (sm70-sm90 m8n8k4 f16 C -> f32 D) takes only K = k and split_k = 1.

Sparse instructions (mma.sp, wgmma.sp, v_smfmac) take the dense A, at most 2 non-zeros per
group of 4 of K (tf32: 1 of 2; s4/u4: 2 aligned pairs of 8); each K-step derives its metadata
(mmaformal.sparse).

Inputs follow the simulate array contract (docs/design.md): raw bits (unsigned ints of the format's
storage width), numpy float16/float32/float64 or ml_dtypes arrays of values that are exact in
the format (never rounded). A (M, K), B (K, N), C (M, N) or None (+0); block-scaled
instructions also take scale_a (M, K / scale_block) and scale_b (K / scale_block, N). The
result is the raw bits of D (M, N), dtype of the D format's storage (``to_float64`` reads them).

Back-ends (``backend``): "compiled" traces ``Theory.dot`` of ONE instruction step once into a C
kernel (mmaformal.compile; cached per theory hash and instruction), then runs it for every
(row, K-step) on the row's N lanes, threads over rows (the ctypes call releases the GIL);
"numpy" evaluates the same definition on numpy lanes (chunks of rows x N); "auto" is
"compiled" where a C compiler exists, else "numpy". Both run the same definition, so they give
the same bits (tested). ``device="cuda"`` runs the same traced step on an NVIDIA GPU
(mmaformal.cuda: each thread owns a tile of outputs and walks K in the same order; split_k,
pad_k and scales as here; host inputs in chunks that fit the GPU's memory); ``"auto"`` takes
the GPU when CuPy can use one and the trace has a CUDA form, else the CPU back-ends above.
The GPU path gives the same bits (tests marked gpu).

Device arrays (``simulate.placement``): A, B, C and the scales may also be torch CUDA tensors,
CuPy arrays or other CUDA ``__dlpack__`` objects, all on one device. They are imported zero-copy,
validated on the device by the rules above, the GEMM runs there (``cuda.gemm`` on device
arrays: pad_k, split_k and its reduction too) and D comes back on that device as raw bits of
the D storage dtype: a torch tensor (torch.uintN) when A is one, else a CuPy array. ``device``
defaults to "auto" for them; "cpu", or a theory without a CUDA form, runs the CPU back-ends on
host copies and returns D to the device. Torch CPU tensors run on host copies and give a torch
CPU tensor. ``dot_lanes`` takes the same kinds and returns the same kind; device lanes are
validated and run on their device the same way (``cuda.DotModule.lanes_device``).

Also ``dot_lanes(instr, a, b, c)``: n independent K-long dot products (a, b of shape (n, K)),
chained in k-steps in the same order; the accuracy front end uses it.

Invariants: inputs are validated before any arithmetic (shapes, formats, K divisibility,
split_k range, devices), each failure a one-line ValueError naming expected vs got; numpy in,
numpy out; device arrays in, the same bits out on that device.

Public helpers shared with mmaformal.torch: ``resolve_theory``, ``resolve_backend``,
``check_carry``, ``add_bits`` (the split-K reduction's addition) and ``SCALE_ONE`` (the unit
block scale of each scale format).
"""
from __future__ import annotations

import ctypes
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np

from . import fp, isa
from . import theory as _theory
from .bits import NUMPY
from .isa import Instruction
from .simulate import as_bits, on_gpu, placement, storage_dtype
from .simulate import resolve_theory as _resolve_theory

__all__ = ["matmul", "dot_lanes", "to_float64", "step_kernel", "BACKENDS", "add_parser", "run",
           "resolve_theory", "resolve_backend", "check_carry", "add_bits", "SCALE_ONE"]

BACKENDS = ("auto", "compiled", "numpy")

#: Lanes per numpy pass (bounded memory, amortised Python overhead).
NUMPY_CHUNK = 1 << 15

#: the raw bits of the block scale 1.0 in each scale format (pad_k's padded scales, and the
#: unit scales of accuracy and mmaformal.torch)
SCALE_ONE = {"ue8m0": 0x7F, "ue4m3": 0x38}


# --------------------------------------------------------------------------------------------
# Values


def to_float64(bits: np.ndarray, fmt_name: str) -> np.ndarray:
    """float64 values of raw-bit elements of a format (exact: every format here fits float64;
    NaN codes give nan, infinities +-inf, signed zeros keep their sign)."""
    f = fp.fmt(fmt_name)
    x = np.asarray(bits)
    if f.name == "f64":
        return x.astype(np.uint64).view(np.float64).copy()
    if f.name in ("f32", "tf32"):
        v = (x.astype(np.uint32) & np.uint32(~((1 << f.pad) - 1) & 0xFFFFFFFF)).view(np.float32)
        return v.astype(np.float64)
    if f.name == "f16":
        return x.astype(np.uint16).view(np.float16).astype(np.float64)
    u = fp.decode(f, NUMPY.lift(x.reshape(-1).astype(np.int64), f.storage))
    sig = np.asarray(u.sig.v, dtype=np.float64)
    e = np.asarray(u.exp.v, dtype=np.float64) - f.t
    neg = np.broadcast_to(np.asarray(u.sign.v, dtype=bool), sig.shape)
    v = sig * np.exp2(e)
    v = np.where(np.asarray(u.inf.v, dtype=bool), np.inf, v)
    v = np.where(np.asarray(u.nan.v, dtype=bool), np.nan, v)
    v = np.where(neg, -v, v)
    return v.reshape(x.shape)


# --------------------------------------------------------------------------------------------
# The compiled step


class _Step:
    """One compiled instruction step and a raw ctypes entry to it (pointers, no checks)."""

    def __init__(self, kern, k: int, nblk: int):
        self.kern = kern
        self.k, self.nblk = k, nblk
        nin = 2 * k + 1 + 2 * nblk
        proto = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64,
                                 *([ctypes.c_void_p] * (1 + nin + 1)))
        self.call = proto(ctypes.cast(kern.lib.kernel, ctypes.c_void_p).value)


_STEPS: dict[Any, _Step] = {}
_STEPS_LOCK = threading.Lock()


def _storages(ins: Instruction) -> tuple[int, int, int, int]:
    return tuple(fp.fmt(f).storage for f in (ins.a, ins.b, ins.c, ins.d))


def _nblk(ins: Instruction) -> int:
    return ins.k // ins.scale_block if ins.scale else 0


def step_kernel(instr: "str | Instruction", theory=None):
    """The compiled kernel of one instruction step (mmaformal.compile.Kernel): inputs a_0..a_{k-1},
    b_0..b_{k-1}, c, then (block-scaled) scale_a_0.., scale_b_0.. as 1-D lanes; output d.
    Traced from ``Theory.dot`` once per (instruction, theory hash) and cached."""
    ins = _ins(instr)
    th = resolve_theory(ins, theory)
    return _step(ins, th).kern


def _step(ins: Instruction, th) -> _Step:
    key = ("emulate.step", ins.name, th.hash())
    with _STEPS_LOCK:
        hit = _STEPS.get(key)
        if hit is not None:
            return hit
        from . import compile as C
        k, nb = ins.k, _nblk(ins)
        wa, wb, wc, wd = _storages(ins)

        def fn(K, *x):
            a, b, c = list(x[:k]), list(x[k:2 * k]), x[2 * k]
            sa = list(x[2 * k + 1:2 * k + 1 + nb]) if nb else None
            sb = list(x[2 * k + 1 + nb:]) if nb else None
            return th.dot(K, a, b, c, sa, sb)

        kern = C.compile_kernel(fn, [wa] * k + [wb] * k + [wc] + [8] * (2 * nb), [wd], key=key)
        st = _STEPS[key] = _Step(kern, k, nb)
        return st


def _compiled_ok() -> bool:
    from . import compile as C
    return C.available()[0]


# --------------------------------------------------------------------------------------------
# Validation


def _ins(instr) -> Instruction:
    return instr if isinstance(instr, Instruction) else isa.lookup(instr)


def resolve_theory(instr: "str | Instruction", theory=None):
    """The theory (id, Theory or None: the primary) that runs the instruction, checked to be
    evaluable by this mmaformal.mma (else ValueError)."""
    return _resolve_theory(_ins(instr), theory)


def _threads(threads: int | None) -> int:
    if threads is not None:
        if int(threads) < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        return int(threads)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)


def resolve_backend(backend: str) -> str:
    """The CPU back-end that runs: "compiled" or "numpy" ("auto": compiled where a C compiler
    exists); an unknown or unavailable one is a ValueError."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "auto":
        return "compiled" if _compiled_ok() else "numpy"
    if backend == "compiled" and not _compiled_ok():
        from . import compile as C
        raise ValueError(f"backend 'compiled' is not available: {C.available()[1]}")
    return backend


def _mat(x, fmt_name: str, role: str, name: str, bits=as_bits, xp=np):
    X = bits(x, fmt_name, role, name)
    if X.ndim != 2:
        raise ValueError(f"{name}: {role} must be a 2-D matrix, got shape {tuple(X.shape)}")
    return xp.ascontiguousarray(X)


def check_carry(ins: Instruction, nsteps: int, split_k: int) -> None:
    if ins.c != ins.d and (nsteps > 1 or split_k > 1):
        raise ValueError(
            f"{ins.name}: C is {ins.c} but D is {ins.d}, so the accumulator cannot be carried "
            f"from one K-step to the next: only K = {ins.k} and split_k = 1 "
            f"(got K = {nsteps * ins.k}, split_k = {split_k})")


# --------------------------------------------------------------------------------------------
# The GEMM


def matmul(A, B, C, instr: "str | Instruction", *, split_k: int = 1, theory=None,
           backend: str = "auto", pad_k: bool = False, scale_a=None, scale_b=None,
           threads: int | None = None, device: "str | None" = None):
    """Raw bits of D = A*B + C with the instruction's exact arithmetic (see the module
    docstring for the K order, split_k, pad_k, formats and back-ends).

    A (M, K), B (K, N), C (M, N) or None for +0; scale_a (M, K/scale_block), scale_b
    (K/scale_block, N) for block-scaled instructions. K must be a multiple of the instruction's
    k unless pad_k. theory: a theory id or Theory (default: the instruction's primary theory).
    threads: worker threads of the compiled back-end (default: the CPUs this process may use).
    device: "cpu", "cuda" or "auto"; None (default): "cpu" for host arrays, "auto" for device
    arrays (torch CUDA tensors, CuPy, CUDA DLPack: D comes back on their device, of A's kind;
    see the module docstring).
    """
    ins = _ins(instr)
    th = resolve_theory(ins, theory)
    be = resolve_backend(backend)
    named = dict(A=A, B=B, C=C, scale_a=scale_a, scale_b=scale_b)
    pl = placement(ins.name, **named)
    if pl.kind != "numpy":
        dev = device if device is not None else "auto" if pl.on_device else "cpu"
        if not pl.on_device or dev == "cpu" or not on_gpu(th, ins, dev):
            h = {r: pl.host(x, r, ins.name) for r, x in named.items()}     # the CPU back-ends
            return pl.wrap(matmul(h["A"], h["B"], h["C"], ins, split_k=split_k, theory=th,
                                  backend=be, pad_k=pad_k, scale_a=h["scale_a"],
                                  scale_b=h["scale_b"], threads=threads,
                                  device="cpu" if pl.on_device else dev))
        import cupy
        from . import cuda
        with pl.context():
            Am, Bm, Cm, SA, SB, spans = _gemm_operands(ins, named, pad_k, split_k, pl.bits, cupy)
            if 0 in Cm.shape:
                return pl.wrap(cupy.empty(Cm.shape, dtype=storage_dtype(ins.d)))
            return pl.wrap(cuda.gemm(th, ins, Am, Bm, Cm, SA, SB, spans, device_arrays=True))
    device = "cpu" if device is None else device
    gpu = device != "cpu" and on_gpu(th, ins, device)
    Am, Bm, Cm, SA, SB, spans = _gemm_operands(ins, named, pad_k, split_k)
    M, N = Am.shape[0], Bm.shape[1]
    if M == 0 or N == 0:
        return np.empty((M, N), dtype=storage_dtype(ins.d))
    if gpu:
        from . import cuda
        return cuda.gemm(th, ins, Am, Bm, Cm, SA, SB, spans)
    run = _gemm_compiled if be == "compiled" else _gemm_numpy
    if len(spans) == 1:
        return run(ins, th, Am, Bm, Cm, SA, SB, 0, spans[0][1], threads)
    zero = np.zeros((M, N), dtype=storage_dtype(ins.c))
    D = Cm
    for s0, s1 in spans:
        P = run(ins, th, Am, Bm, zero, SA, SB, s0, s1, threads)
        D = add_bits(ins.d, D, P, be)
    return D


def _gemm_operands(ins: Instruction, ops: dict, pad_k: bool, split_k: int, bits=as_bits, xp=np):
    """matmul's validated operands (A, B, C, scale_a, scale_b: contiguous raw bits, K padded
    when pad_k) and the K-step spans [(s0, s1)] of the split_k parts. bits, xp: `as_bits` and
    numpy, or a device Placement's reader and CuPy."""
    name = ins.name
    Am = _mat(ops["A"], ins.a, "A", name, bits, xp)
    Bm = _mat(ops["B"], ins.b, "B", name, bits, xp)
    M, K = Am.shape
    K2, N = Bm.shape
    if K2 != K:
        raise ValueError(f"{name}: A is {M}x{K} and B is {K2}x{N}: inner dimensions differ "
                         f"({K} != {K2})")
    if ops["C"] is None:
        Cm = xp.zeros((M, N), dtype=storage_dtype(ins.c))
    else:
        Cm = _mat(ops["C"], ins.c, "C", name, bits, xp)
        if Cm.shape != (M, N):
            raise ValueError(f"{name}: C must have shape ({M}, {N}) (A rows x B columns), got "
                             f"{tuple(Cm.shape)}")
    k = ins.k
    SA = SB = None
    scale_a, scale_b = ops["scale_a"], ops["scale_b"]
    if ins.scale:
        sbk = ins.scale_block
        if scale_a is None or scale_b is None:
            raise ValueError(f"{name} is block-scaled ({ins.scale}, one scale per {sbk} elements "
                             f"of K): pass scale_a ({M}, K/{sbk}) and scale_b (K/{sbk}, {N})")
        if K % sbk:
            raise ValueError(f"{name}: K = {K} is not a multiple of the scale block {sbk}")
        SA = _mat(scale_a, ins.scale, "scale_a", name, bits, xp)
        SB = _mat(scale_b, ins.scale, "scale_b", name, bits, xp)
        if SA.shape != (M, K // sbk):
            raise ValueError(f"{name}: scale_a must have shape ({M}, {K // sbk}), got {tuple(SA.shape)}")
        if SB.shape != (K // sbk, N):
            raise ValueError(f"{name}: scale_b must have shape ({K // sbk}, {N}), got {tuple(SB.shape)}")
    elif scale_a is not None or scale_b is not None:
        raise ValueError(f"{name} is not block-scaled: it takes no scale_a/scale_b")
    if K == 0 or K % k:
        if not pad_k or K == 0:
            raise ValueError(f"{name}: K = {K} is not a positive multiple of the instruction's "
                             f"k = {k} (pass pad_k=True / --pad-k to zero-pad A's columns and "
                             f"B's rows to K = {max(k, -(-K // k) * k)})")
        Kp = -(-K // k) * k
        Am = xp.ascontiguousarray(xp.pad(Am, ((0, 0), (0, Kp - K))))
        Bm = xp.ascontiguousarray(xp.pad(Bm, ((0, Kp - K), (0, 0))))
        if ins.scale:
            one = SCALE_ONE[ins.scale]
            nb = (Kp - K) // ins.scale_block
            SA = xp.ascontiguousarray(xp.pad(SA, ((0, 0), (0, nb)), constant_values=one))
            SB = xp.ascontiguousarray(xp.pad(SB, ((0, nb), (0, 0)), constant_values=one))
        K = Kp
    nsteps = K // k
    if ins.sparse:         # A dense, 2:4 (tf32 1:2, s4/u4 pairs) in every group; metadata derived
        from . import sparse as _sp                 # (host arrays: sparse has no GPU form)
        _sp.compress(Am.reshape(M, nsteps, k).swapaxes(0, 1), ins, f"{name} (K-step, row)")
    split_k = int(split_k)
    if not 1 <= split_k <= nsteps:
        raise ValueError(f"{name}: split_k must be in 1..{nsteps} (K / k = {K} / {k}), got {split_k}")
    check_carry(ins, nsteps, split_k)
    spans = [(int(p[0]), int(p[-1]) + 1) for p in np.array_split(np.arange(nsteps), split_k)]
    return Am, Bm, Cm, SA, SB, spans


def add_bits(fmt_name: str, x: np.ndarray, y: np.ndarray, be: str) -> np.ndarray:
    """Elementwise IEEE 754 RNE addition in format fmt_name (the split-K reduction); integer
    formats: wrap-around addition."""
    f = fp.fmt(fmt_name)
    w = f.storage
    shape = x.shape
    xs, ys = x.reshape(-1), y.reshape(-1)

    def add(K, u, v):
        return u.add_wrap(v) if f.is_int else fp.add(fmt_name, u, v, "RNE")
    if be == "compiled":
        from . import compile as C
        kern = C.compile_kernel(add, [w, w], [w], key=("emulate.add", fmt_name))
        (out,) = kern(np.ascontiguousarray(xs), np.ascontiguousarray(ys))
        return out.reshape(shape)
    d = add(NUMPY, NUMPY.lift(xs, w), NUMPY.lift(ys, w))
    return _np_out(d, xs.size, storage_dtype(fmt_name)).reshape(shape)


def _np_out(d, n: int, dtype) -> np.ndarray:
    v = np.broadcast_to(np.asarray(d.v), (n,))
    return v.astype(dtype) if v.dtype != object else np.array([int(x) for x in v], dtype=dtype)


def _gemm_compiled(ins, th, A, B, C, SA, SB, s0, s1, threads) -> np.ndarray:
    """Steps s0..s1-1 from C (C format) on the compiled step, threads over rows."""
    step = _step(ins, th)
    k, nb = ins.k, _nblk(ins)
    M, K = A.shape
    N = B.shape[1]
    ddt = storage_dtype(ins.d)
    D = np.empty((M, N), dtype=ddt)
    ia, ib, ic, idd = A.itemsize, B.itemsize, C.itemsize, D.itemsize
    A0, B0, C0, D0 = A.ctypes.data, B.ctypes.data, C.ctypes.data, D.ctypes.data
    st = np.array([0] * k + [1] * k + [1] + [0] * nb + [1] * nb, dtype=np.int64)
    stp = st.ctypes.data
    aoff = [t * ia for t in range(k)]
    # B rows of step s: pointers to B[s*k + t, 0]
    bptr = [[B0 + (s * k + t) * N * ib for t in range(k)] for s in range(s1)]
    if nb:
        KB = SA.shape[1]
        SA0, SB0 = SA.ctypes.data, SB.ctypes.data
        sbptr = [[SB0 + (s * nb + q) * N for q in range(nb)] for s in range(s1)]
    nt = min(_threads(threads), M)
    call = step.call
    errors: list[BaseException] = []

    def rows(r0: int, r1: int) -> None:
        bufs = [np.empty(N, dtype=ddt), np.empty(N, dtype=ddt)]
        bp = [b.ctypes.data for b in bufs]
        for i in range(r0, r1):
            abase = A0 + i * K * ia
            cin = C0 + i * N * ic
            dout = D0 + i * N * idd
            for s in range(s0, s1):
                out = dout if s == s1 - 1 else bp[(s - s0) & 1]
                base = abase + s * k * ia
                args = [base + o for o in aoff] + bptr[s] + [cin]
                if nb:
                    sab = SA0 + i * KB + s * nb
                    args += [sab + q for q in range(nb)] + sbptr[s]
                r = call(N, stp, *args, out)
                if r >= 0:
                    raise OverflowError(
                        f"{ins.name}: the compiled step overflowed a plain operation on row {i}, "
                        f"K-step {s} (an error in the theory; run backend='numpy' for the op)")
                cin = out

    def guarded(r0, r1):
        try:
            rows(r0, r1)
        except BaseException as e:  # noqa: BLE001 (re-raised in the caller)
            errors.append(e)

    if nt == 1:
        rows(0, M)
    else:
        # contiguous row blocks, one per thread (every row costs the same)
        bounds = np.linspace(0, M, nt + 1).astype(int)
        with ThreadPoolExecutor(nt) as ex:
            list(ex.map(lambda t: guarded(bounds[t], bounds[t + 1]), range(nt)))
        if errors:
            raise errors[0]
    return D


def _gemm_numpy(ins, th, A, B, C, SA, SB, s0, s1, threads=None) -> np.ndarray:
    """Steps s0..s1-1 from C on numpy lanes (chunks of whole rows x N)."""
    k, nb = ins.k, _nblk(ins)
    M, _ = A.shape
    N = B.shape[1]
    wa, wb, wc, wd = _storages(ins)
    ddt = storage_dtype(ins.d)
    D = np.empty((M, N), dtype=ddt)
    rows = max(1, NUMPY_CHUNK // N)
    for r0 in range(0, M, rows):
        r1 = min(M, r0 + rows)
        n = (r1 - r0) * N
        cur = C[r0:r1].reshape(-1)
        cw = wc
        for s in range(s0, s1):
            a = [NUMPY.lift(np.repeat(A[r0:r1, s * k + t], N), wa) for t in range(k)]
            b = [NUMPY.lift(np.tile(B[s * k + t], r1 - r0), wb) for t in range(k)]
            sa = sb = None
            if nb:
                sa = [NUMPY.lift(np.repeat(SA[r0:r1, s * nb + q], N), 8) for q in range(nb)]
                sb = [NUMPY.lift(np.tile(SB[s * nb + q], r1 - r0), 8) for q in range(nb)]
            d = th.dot(NUMPY, a, b, NUMPY.lift(cur, cw), sa, sb)
            cur = _np_out(d, n, ddt)
            cw = wd
        D[r0:r1] = cur.reshape(r1 - r0, N)
    return D


# --------------------------------------------------------------------------------------------
# Independent lanes (for accuracy studies)


def _lanes_operands(ins: Instruction, ops: dict, bits=as_bits, xp=np):
    """dot_lanes' validated operands (a, b, c, scale_a, scale_b: contiguous raw bits). bits, xp:
    `as_bits` and numpy, or a device Placement's reader and CuPy."""
    name = ins.name
    a = bits(ops["a"], ins.a, "a", name)
    b = bits(ops["b"], ins.b, "b", name)
    c = bits(ops["c"], ins.c, "c", name)
    if a.ndim != 2 or b.shape != a.shape or c.shape != a.shape[:1]:
        raise ValueError(f"{name}: dot_lanes takes a and b of one shape (n, K) and c (n,), got "
                         f"{tuple(a.shape)}, {tuple(b.shape)}, {tuple(c.shape)}")
    n, K = a.shape
    k = ins.k
    if K == 0 or K % k:
        raise ValueError(f"{name}: K = {K} is not a positive multiple of the instruction's k = {k}")
    check_carry(ins, K // k, 1)
    sa = sb = None
    scale_a, scale_b = ops["scale_a"], ops["scale_b"]
    if ins.scale:
        if scale_a is None or scale_b is None:
            raise ValueError(f"{name} is block-scaled: pass scale_a and scale_b (n, K/{ins.scale_block})")
        sa = bits(scale_a, ins.scale, "scale_a", name)
        sb = bits(scale_b, ins.scale, "scale_b", name)
        want = (n, K // ins.scale_block)
        if sa.shape != want or sb.shape != want:
            raise ValueError(f"{name}: scale_a and scale_b must have shape {want}, got "
                             f"{tuple(sa.shape)}, {tuple(sb.shape)}")
        sa, sb = xp.ascontiguousarray(sa), xp.ascontiguousarray(sb)
    elif scale_a is not None or scale_b is not None:
        raise ValueError(f"{name} is not block-scaled: it takes no scale_a/scale_b")
    return xp.ascontiguousarray(a), xp.ascontiguousarray(b), xp.ascontiguousarray(c), sa, sb


def dot_lanes(instr: "str | Instruction", a, b, c, *, theory=None, backend: str = "auto",
              scale_a=None, scale_b=None, threads: int | None = None,
              device: "str | None" = None):
    """n independent dot products d_l = c_l + sum_k a[l, k] b[l, k] (raw bits in, raw bits of
    D out), each K = a.shape[1] long and walked in the instruction's k-steps exactly as
    ``matmul`` does (D_0 = c, D_{s+1} = instr(a[:, blk s], b[:, blk s], D_s)).
    a, b: (n, K); c: (n,); scale_a, scale_b: (n, K / scale_block) for block-scaled ones.
    device: as matmul's; device arrays run on their device, torch CPU tensors on host copies,
    and each gives its kind back (see the module docstring)."""
    ins = _ins(instr)
    name = ins.name
    th = resolve_theory(ins, theory)
    be = resolve_backend(backend)
    named = dict(a=a, b=b, c=c, scale_a=scale_a, scale_b=scale_b)
    pl = placement(name, **named)
    if pl.kind != "numpy":
        dev = device if device is not None else "auto" if pl.on_device else "cpu"
        if not pl.on_device or dev == "cpu" or not on_gpu(th, ins, dev):
            h = {r: pl.host(x, r, name) for r, x in named.items()}      # the CPU back-ends
            return pl.wrap(dot_lanes(ins, h["a"], h["b"], h["c"], theory=th, backend=be,
                                     scale_a=h["scale_a"], scale_b=h["scale_b"], threads=threads,
                                     device="cpu" if pl.on_device else dev))
        import cupy
        from . import cuda
        with pl.context():
            a, b, c, sa, sb = _lanes_operands(ins, named, pl.bits, cupy)
            if a.shape[0] == 0:
                return pl.wrap(cupy.empty(0, dtype=storage_dtype(ins.d)))
            return pl.wrap(cuda.dot_module(th, ins).lanes_device(a, b, c, sa, sb))
    a, b, c, sa, sb = _lanes_operands(ins, named)
    n, K = a.shape
    k, nb = ins.k, _nblk(ins)
    nsteps = K // k
    ddt = storage_dtype(ins.d)
    if n == 0:
        return np.empty(0, dtype=ddt)
    wa, wb, wc, wd = _storages(ins)
    if device not in (None, "cpu") and on_gpu(th, ins, device):
        from . import cuda
        return cuda.dot_module(th, ins).lanes_host(np.ascontiguousarray(a), np.ascontiguousarray(b),
                                                   np.ascontiguousarray(c), sa, sb)

    def cols(s, lo, hi):
        xs = [a[lo:hi, s * k + t] for t in range(k)] + [b[lo:hi, s * k + t] for t in range(k)]
        ss = []
        if nb:
            ss = [sa[lo:hi, s * nb + q] for q in range(nb)] + [sb[lo:hi, s * nb + q] for q in range(nb)]
        return xs, ss

    if be == "compiled":
        kern = _step(ins, th).kern
        out = np.empty(n, dtype=ddt)

        def part(lo, hi):
            cur = c[lo:hi]
            for s in range(nsteps):
                xs, ss = cols(s, lo, hi)
                (cur,) = kern(*xs, cur, *ss)
            out[lo:hi] = cur

        nt = min(_threads(threads), max(1, n // 4096))
        if nt == 1:
            part(0, n)
        else:
            bounds = np.linspace(0, n, nt + 1).astype(int)
            with ThreadPoolExecutor(nt) as ex:
                list(ex.map(lambda t: part(bounds[t], bounds[t + 1]), range(nt)))
        return out
    out = np.empty(n, dtype=ddt)
    for lo in range(0, n, NUMPY_CHUNK):
        hi = min(n, lo + NUMPY_CHUNK)
        cur, cw = c[lo:hi], wc
        for s in range(nsteps):
            xs, ss = cols(s, lo, hi)
            av = [NUMPY.lift(x, wa) for x in xs[:k]]
            bv = [NUMPY.lift(x, wb) for x in xs[k:]]
            sav = [NUMPY.lift(x, 8) for x in ss[:nb]] if nb else None
            sbv = [NUMPY.lift(x, 8) for x in ss[nb:]] if nb else None
            d = th.dot(NUMPY, av, bv, NUMPY.lift(cur, cw), sav, sbv)
            cur, cw = _np_out(d, hi - lo, ddt), wd
        out[lo:hi] = cur
    return out


# --------------------------------------------------------------------------------------------
# CLI verb (wired by mmaformal.cli): emulate INSTR --a A.npy --b B.npy --c C.npy --out D.npy


def add_parser(subparsers) -> Any:
    """Register the ``emulate`` verb on an argparse subparsers object."""
    q = subparsers.add_parser(
        "emulate", help="a whole GEMM with an instruction's exact arithmetic",
        description="D = A*B + C for any M, N and K (a multiple of the instruction's k), K walked "
                    "in instruction-k steps in increasing order with the accumulator carried "
                    "(D_0 = C, D_{s+1} = instr(A[:, blk s], B[blk s, :], D_s)). --split-k S: S "
                    "contiguous K parts each from +0, the partial results added onto C in order "
                    "by IEEE RNE additions in the accumulator format.")
    q.add_argument("instr")
    q.add_argument("--a", required=True, metavar="A.npy", help="A (M, K): raw bits or exact floats")
    q.add_argument("--b", required=True, metavar="B.npy", help="B (K, N)")
    q.add_argument("--c", metavar="C.npy", help="C (M, N) (default: +0)")
    q.add_argument("--scale-a", metavar="SA.npy", help="block scales of A (M, K/scale_block)")
    q.add_argument("--scale-b", metavar="SB.npy", help="block scales of B (K/scale_block, N)")
    from .args import out_file, positive_int
    q.add_argument("--out", required=True, metavar="D.npy", type=out_file,
                   help="D (M, N) raw bits of the D format (its folder must exist)")
    q.add_argument("--split-k", type=positive_int, default=1, metavar="S")
    q.add_argument("--pad-k", action="store_true",
                   help="zero-pad K to a multiple of the instruction's k (else an error)")
    q.add_argument("--theory", metavar="ID", help="a theory id (default: the primary theory)")
    q.add_argument("--backend", choices=BACKENDS, default="auto")
    q.add_argument("--threads", type=positive_int, metavar="T")
    q.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto",
                   help="where to run: auto (default) takes an NVIDIA GPU when CuPy can use one")
    q.add_argument("--json", action="store_true")
    return q


def run(args) -> int:
    """The ``emulate`` verb. Bad input raises ValueError (the cli prints one line, exit 2)."""
    import json
    from .simulate import load_npy, save_npy
    ins = isa.lookup(args.instr)
    th = _theory.default().resolve(ins, args.theory)
    A, B, C = load_npy(args.a, "--a"), load_npy(args.b, "--b"), load_npy(args.c, "--c")
    SA, SB = load_npy(args.scale_a, "--scale-a"), load_npy(args.scale_b, "--scale-b")
    be = resolve_backend(args.backend)
    from .simulate import pick_device
    device, note = pick_device(args.device, ins, th)
    t0 = time.perf_counter()
    D = matmul(A, B, C, ins, split_k=args.split_k, theory=th, backend=be, pad_k=args.pad_k,
               scale_a=SA, scale_b=SB, threads=args.threads, device=device)
    dt = time.perf_counter() - t0
    written = save_npy(args.out, D)
    M, N = D.shape
    K = np.asarray(A).shape[-1]
    info = {"instruction": ins.name, "theory": th.id, "status": th.status, "out": written,
            "shape": [M, N, int(K)], "dtype": D.dtype.name, "split_k": args.split_k,
            "pad_k": bool(args.pad_k), "backend": be if device == "cpu" else "cuda",
            "dot_products": int(D.size), "seconds": round(dt, 6), "device": device,
            "device_note": note}
    if args.json:
        print(json.dumps(info, indent=1))
    else:
        print(f"{ins.name}: wrote {written} ({M}x{N}, K = {K}, {D.dtype.name}; theory {th.id} "
              f"[{th.status}], split_k {args.split_k}, {be if device == 'cpu' else 'cuda'}, {dt:.3f} s)")
    return 0
