"""Layer 5 front end, torch_gemm: exact GEMMs on tensors (the ops under mmaformal.torch).

``matmul`` (one instruction's arithmetic on 2-D tensors) and ``matmul_rule`` (a profile rule's
schedule: pre-rounding, +0 padding of K, the K-block order, the split of K and the reduction of
its parts), with the moves of bits between tensors and the arrays of emulate / cuda they need;
their contracts are in the docstring of mmaformal.torch, which re-exports them beside the
function mode (``emulating``) that dispatches torch's calls to them.

May import: torch, numpy, mmaformal.emulate, mmaformal.cuda and mmaformal.simulate (lazily:
the arithmetic), mmaformal.profile, mmaformal.isa, mmaformal.fp, mmaformal.bits. Never
mmaformal.torch (which imports this module).

Invariant: no arithmetic is written here: every product is emulate.matmul's or
mmaformal.cuda's (one definition), every addition of a split's parts fp's (IEEE RNE); this
module only moves bits between tensors and those arrays and composes them as the rule says.
"""
from __future__ import annotations

import numpy as np
import torch

from . import fp, isa
from . import profile as _profile
from .isa import Instruction

__all__ = ["matmul", "matmul_rule", "torch_dtype", "format_of", "EmulationError",
           "as_instruction", "dtype_text", "check_grad"]


class EmulationError(ValueError):
    """A call that emulating() cannot run as asked (strict: not covered, not modelled; operand
    dtypes that differ; bad arguments); the message is one line."""


#: format name -> torch dtype whose bits are the format
_TORCH = {
    "f64": torch.float64, "f32": torch.float32, "tf32": torch.float32, "f16": torch.float16,
    "bf16": torch.bfloat16, "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2,
    "e4m3fnuz": getattr(torch, "float8_e4m3fnuz", None),
    "e5m2fnuz": getattr(torch, "float8_e5m2fnuz", None),
}
_SIGNED = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}
_UNSIGNED = {8: torch.uint8, 16: torch.uint16, 32: torch.uint32, 64: torch.uint64}
_NP = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def torch_dtype(fmt_name: str):
    """The torch dtype whose bits are the format, or None (raw bits only: fp6, fp4, ...)."""
    return _TORCH.get(fp.fmt(fmt_name).name)


def as_instruction(instr) -> Instruction:
    """The catalog instruction of a name (or the instruction itself)."""
    return instr if isinstance(instr, Instruction) else isa.lookup(instr)


def _accepts(fmt_name: str, dt) -> bool:
    st = fp.fmt(fmt_name).storage
    return dt == torch_dtype(fmt_name) or dt in (_UNSIGNED[st], _SIGNED[st])


def dtype_text(fmt_name: str) -> str:
    """The dtypes a format is accepted in, in words (for error messages)."""
    st = fp.fmt(fmt_name).storage
    td = torch_dtype(fmt_name)
    names = ([str(td).replace("torch.", "")] if td is not None else []) + [f"uint{st} raw bits"]
    return " or ".join(names)


def _bits(t: torch.Tensor, fmt_name: str):
    """The raw storage bits of a tensor as an unsigned numpy array (CPU) or CuPy array (CUDA)."""
    st = fp.fmt(fmt_name).storage
    t = t.detach().contiguous()
    s = t.view(_SIGNED[st]) if t.dtype != _SIGNED[st] else t
    if t.is_cuda:
        import cupy
        return cupy.from_dlpack(s).view(_NP[st])
    return s.numpy().view(_NP[st])


def _from_bits(x, fmt_name: str, raw: bool, device) -> torch.Tensor:
    st = fp.fmt(fmt_name).storage
    if isinstance(x, np.ndarray):
        t = torch.from_numpy(np.ascontiguousarray(x).view(np.dtype(f"int{st}")))
    else:                                        # CuPy
        t = torch.from_dlpack(x.view(f"int{st}"))
    t = t.to(device)
    if raw:
        return t.view(_UNSIGNED[st])
    td = torch_dtype(fmt_name)
    return t.view(td) if td is not None else t.view(_UNSIGNED[st])


def check_grad(*ts) -> None:
    """ValueError when grad mode is on and a tensor requires grad (forward only)."""
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in ts):
        raise ValueError("mmaformal.torch is forward only: an operand requires grad; run under "
                         "torch.no_grad() or torch.inference_mode()")


def matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None, *, instr,
           theory=None, split_k: int = 1, pad_k: bool = False) -> torch.Tensor:
    """D = A*B + C with the instruction's arithmetic (see the module docstring)."""
    ins = as_instruction(instr)
    name = ins.name
    for role, t in (("a", a), ("b", b), ("c", c)):
        if t is not None and not isinstance(t, torch.Tensor):
            raise ValueError(f"{name}: {role} must be a torch.Tensor, got {type(t).__name__}")
    check_grad(a, b, c)
    for role, t, f in (("a", a, ins.a), ("b", b, ins.b), ("c", c, ins.c)):
        if t is not None and not _accepts(f, t.dtype):
            raise ValueError(f"{name}: {role} takes {f} ({dtype_text(f)}), got {str(t.dtype).replace('torch.', '')}")
        if t is not None and t.dim() != 2:
            raise ValueError(f"{name}: {role} must be a 2-D matrix, got shape {tuple(t.shape)}")
    devs = {t.device for t in (a, b, c) if t is not None}
    if len(devs) > 1:
        raise ValueError(f"{name}: operands on different devices: a {a.device}, b {b.device}"
                         + (f", c {c.device}" if c is not None else ""))
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{name}: a is {tuple(a.shape)} and b is {tuple(b.shape)}: inner "
                         f"dimensions differ ({a.shape[1]} != {b.shape[0]})")
    if c is not None and tuple(c.shape) != (a.shape[0], b.shape[1]):
        raise ValueError(f"{name}: c must have shape ({a.shape[0]}, {b.shape[1]}), got {tuple(c.shape)}")
    raw = a.dtype in (_UNSIGNED[fp.fmt(ins.a).storage], _SIGNED[fp.fmt(ins.a).storage]) \
        and torch_dtype(ins.a) != a.dtype
    device = a.device
    A, B = _bits(a, ins.a), _bits(b, ins.b)
    C = _bits(c, ins.c) if c is not None else None
    D = _gemm(ins, theory, A, B, C, split_k, pad_k, device.type == "cuda")
    return _from_bits(D, ins.d, raw, device)


def _gemm(ins, theory, A, B, C, split_k, pad_k, on_gpu):
    from . import emulate
    th = emulate.resolve_theory(ins, theory)
    M, K = A.shape
    N = B.shape[1]
    sa = sb = None
    if ins.scale:                                # unit scales (module docstring)
        one = emulate.SCALE_ONE[ins.scale]
        Kp = -(-K // ins.k) * ins.k if pad_k else K
        sa = np.full((M, Kp // ins.scale_block), one, np.uint8)
        sb = np.full((Kp // ins.scale_block, N), one, np.uint8)
    if on_gpu:
        from . import cuda
        ok = cuda.available()[0] and cuda.supported(th, ins)[0]
        if ok:
            return _gemm_cuda(ins, th, A, B, C, split_k, pad_k, sa, sb)
        A, B = A.get(), B.get()                  # no GPU form: the CPU path, back to the GPU
        C = C.get() if C is not None else None
    return emulate.matmul(A, B, C, ins, theory=th, split_k=split_k, pad_k=pad_k,
                          scale_a=sa, scale_b=sb)


def _gemm_cuda(ins, th, A, B, C, split_k, pad_k, sa, sb):
    """The GPU path on device arrays, with emulate.matmul's validation rules."""
    import cupy as cp
    from . import cuda, emulate
    from .simulate import storage_dtype
    M, K = A.shape
    N = B.shape[1]
    k = ins.k
    if K == 0 or K % k:
        if not pad_k or K == 0:
            raise ValueError(f"{ins.name}: K = {K} is not a positive multiple of the "
                             f"instruction's k = {k} (pad_k=True zero-pads it)")
        Kp = -(-K // k) * k
        A = cp.pad(A, ((0, 0), (0, Kp - K)))
        B = cp.pad(B, ((0, Kp - K), (0, 0)))
        K = Kp
    nsteps = K // k
    if not 1 <= split_k <= nsteps:
        raise ValueError(f"{ins.name}: split_k must be in 1..{nsteps}, got {split_k}")
    emulate.check_carry(ins, nsteps, split_k)
    if C is None:
        C = cp.zeros((M, N), dtype=storage_dtype(ins.c))
    parts = [(int(p[0]), int(p[-1]) + 1) for p in np.array_split(np.arange(nsteps), split_k)]
    SA = cp.asarray(sa) if sa is not None else None
    SB = cp.asarray(sb) if sb is not None else None
    return cuda.gemm(th, ins, cp.ascontiguousarray(A), cp.ascontiguousarray(B),
                     cp.ascontiguousarray(C), SA, SB, parts, device_arrays=True)


# --------------------------------------------------------------------------------------------
# Schedules (profile rules) on tensors


def format_of(dtype) -> str | None:
    """The format name of a torch dtype (float32 -> "f32"), or None (integers, complex, ...)."""
    for name in ("f16", "bf16", "f32", "f64", "e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz"):
        if _TORCH.get(name) is not None and _TORCH[name] == dtype:
            return name
    return None


def _np_bits(t: torch.Tensor, fmt_name: str) -> np.ndarray:
    st = fp.fmt(fmt_name).storage
    t = t.detach().contiguous().cpu()
    return (t.view(_SIGNED[st]) if t.dtype != _SIGNED[st] else t).numpy().view(_NP[st])


def _tf32_rne(t: torch.Tensor) -> torch.Tensor:
    """float32 tensor rounded to tf32 by RNE (kept in its f32 container: the low 13 bits zero).
    Inf stays Inf; a NaN stays a NaN (its high payload kept, quiet bit set), as mma's tf32
    container read does for tf32_round = RNE."""
    from .bits import NUMPY, ite
    u = _np_bits(t, "f32")
    x = NUMPY.lift(u.reshape(-1), 32)
    d = fp.decode("f32", x)
    r = fp.round_to("tf32", d.sign, d.exp - 23, d.sig, "RNE")
    special = (d.bits & 0xFFFFE000) | ite(d.nan, NUMPY.const(0x00400000, 32, False),
                                          NUMPY.const(0, 32, False))
    out = ite(d.nan | d.inf, special, r)
    v = np.broadcast_to(np.asarray(out.v), (u.size,)).astype(np.uint32).reshape(u.shape)
    return torch.from_numpy(v.view(np.int32).copy()).view(torch.float32).to(t.device)


def _raw(t: torch.Tensor) -> torch.Tensor:
    """The same storage as a signed integer tensor (padding, indexing of any dtype, fp8 too)."""
    return t.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _add_bits(fmt_name: str, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x + y elementwise, IEEE RNE in the format (emulate's split-K reduction)."""
    from . import emulate
    s = emulate.add_bits(fmt_name, _np_bits(x, fmt_name), _np_bits(y, fmt_name), emulate.resolve_backend("auto"))
    return _from_bits(s, fmt_name, False, x.device)


def matmul_rule(a: torch.Tensor, b: torch.Tensor, rule: "_profile.Rule", theory=None,
                out_dtype=None) -> torch.Tensor:
    """D (instruction D dtype) of the 2-D product a @ b by the rule's schedule (module docstring
    of mmaformal.profile): pre-rounding, +0 padding of K, K-block order, split and reduction.
    A split reduced in the output format (``reduce_format = "out"``) needs out_dtype and
    returns that dtype."""
    ins = rule.instruction
    th = theory if theory is not None else rule.theory
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise EmulationError(f"{rule.id}: a and b must be 2-D with equal inner dimensions, got "
                             f"{tuple(a.shape)} and {tuple(b.shape)}")
    if rule.pre_round == "tf32-rne":
        a, b = _tf32_rne(a), _tf32_rne(b)
    M, K = a.shape
    N = b.shape[1]
    k = ins.k
    if K == 0:
        return torch.zeros(M, N, dtype=torch_dtype(ins.d), device=a.device)
    Kp = -(-K // k) * k
    nb = Kp // k
    ra, rb = _raw(a), _raw(b)
    if Kp != K:
        pa = torch.zeros(M, Kp, dtype=ra.dtype, device=a.device)
        pb = torch.zeros(Kp, N, dtype=rb.dtype, device=b.device)
        pa[:, :K] = ra
        pb[:K] = rb
        ra, rb = pa, pb
    if rule.order == "decreasing":
        idx = torch.arange(Kp, device=a.device).reshape(nb, k).flip(0).reshape(-1)
        ra, rb = ra[:, idx], rb[idx]
    a, b = ra.view(a.dtype), rb.view(b.dtype)
    parts = rule.split.parts(nb, k) if rule.split else [(0, nb)]
    if len(parts) == 1:
        return matmul(a, b, instr=ins, theory=th)
    P = [matmul(a[:, s * k:e * k], b[s * k:e * k], instr=ins, theory=th) for s, e in parts]
    if rule.split.reduce_format == "out":
        if out_dtype is None:
            raise EmulationError(f"{rule.id}: a split reduced in the output format needs out_dtype")
        D = torch.zeros(P[0].shape, dtype=out_dtype, device=P[0].device)
        for p in P:
            D = _add_bits(ins.d, D.to(P[0].dtype), p).to(out_dtype)
        return D
    if rule.split.reduce == "pairwise":
        while len(P) > 1:
            P = [_add_bits(ins.d, P[i], P[i + 1]) if i + 1 < len(P) else P[i]
                 for i in range(0, len(P), 2)]
        return P[0]
    D = torch.zeros_like(P[0])
    for p in P:
        D = _add_bits(ins.d, D, p)
    return D

