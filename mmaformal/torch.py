"""Layer 5 front end, torch: one instruction's exact GEMM arithmetic on PyTorch tensors.

May import: torch (the optional extra ``mmaformal[torch]``), numpy, mmaformal.emulate,
mmaformal.cuda (CUDA tensors stay on the GPU), mmaformal.isa, mmaformal.theory, mmaformal.fp.

``matmul(a, b, c=None, *, instr, theory=None, split_k=1)``: D = A*B + C of 2-D tensors with the
instruction's arithmetic, bit-identical to ``emulate.matmul`` on the same bits (c=None: +0;
K a multiple of the instruction's k, else ValueError). Operands are tensors of the formats'
own dtypes (float16, bfloat16, float32 for f32/tf32, float64, float8_e4m3fn, float8_e5m2,
float8_e4m3fnuz, float8_e5m2fnuz) or raw bits in unsigned (or same-width signed) integer
tensors; the result is D's dtype (raw bits in the unsigned integer dtype of D's storage when
the operands were raw bits), on the operands' device: CUDA tensors are computed on that GPU
(mmaformal.cuda, no copy to the host), CPU tensors on the CPU. Block-scaled instructions run
with unit scales (1.0). Wrong dtype, shape or a device mix: ValueError naming expected vs got.

``emulating(instr, theory=None, strict=False)``: a TorchFunctionMode under which torch.matmul,
``@``, torch.mm, torch.bmm, F.linear, torch.addmm and torch.baddbmm (functions and Tensor
methods) whose two matrix operands have the instruction's A and B dtypes run through the
instruction's arithmetic; other calls (other dtypes, other functions) pass through untouched
(``strict=True``: a matrix product in another dtype is a ValueError instead). Rules:

- batched: leading dimensions broadcast as torch.matmul does; each matrix is one GEMM; 1-D
  operands are promoted and squeezed as torch.matmul does; M and N are free;
- K: padded with +0 to the next multiple of the instruction's k (as a kernel that zero-fills
  its last K tile; ``emulate.matmul(pad_k=True)``);
- accumulation starts from +0 (C = +0); the bias / ``input`` term of F.linear, addmm and
  baddbmm and the alpha, beta factors are an epilogue in float32 by torch, out = alpha * D +
  beta * input (as a cuBLAS epilogue), then cast to the dtype torch.matmul would return (the
  operands' dtype) by torch (RNE). Where that dtype is D's (e.g. f32 tf32 GEMMs, f16 -> f16
  instructions) and there is no epilogue, D's bits are returned unchanged (NaN payloads, -0);
- forward only: an operand that requires grad while grad mode is on is a ValueError (run the
  forward under ``torch.no_grad()`` or ``torch.inference_mode()``; inputs are then detached).

Invariant: the arithmetic is emulate.matmul's / mmaformal.cuda's (one definition); this module
only moves bits between tensors and those arrays.
"""
from __future__ import annotations

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from . import fp, isa
from . import theory as _theory
from .isa import Instruction

__all__ = ["matmul", "emulating", "torch_dtype"]

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


def _ins(instr) -> Instruction:
    return instr if isinstance(instr, Instruction) else isa.lookup(instr)


def _accepts(fmt_name: str, dt) -> bool:
    st = fp.fmt(fmt_name).storage
    return dt == torch_dtype(fmt_name) or dt in (_UNSIGNED[st], _SIGNED[st])


def _want(fmt_name: str) -> str:
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


def _check_grad(*ts) -> None:
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in ts):
        raise ValueError("mmaformal.torch is forward only: an operand requires grad; run under "
                         "torch.no_grad() or torch.inference_mode()")


def matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None, *, instr,
           theory=None, split_k: int = 1, pad_k: bool = False) -> torch.Tensor:
    """D = A*B + C with the instruction's arithmetic (see the module docstring)."""
    ins = _ins(instr)
    name = ins.name
    for role, t in (("a", a), ("b", b), ("c", c)):
        if t is not None and not isinstance(t, torch.Tensor):
            raise ValueError(f"{name}: {role} must be a torch.Tensor, got {type(t).__name__}")
    _check_grad(a, b, c)
    for role, t, f in (("a", a, ins.a), ("b", b, ins.b), ("c", c, ins.c)):
        if t is not None and not _accepts(f, t.dtype):
            raise ValueError(f"{name}: {role} takes {f} ({_want(f)}), got {str(t.dtype).replace('torch.', '')}")
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
    th = emulate._resolve(ins, theory)
    M, K = A.shape
    N = B.shape[1]
    sa = sb = None
    if ins.scale:                                # unit scales (module docstring)
        one = emulate._SCALE_ONE[ins.scale]
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
    emulate._check_carry(ins, nsteps, split_k)
    if C is None:
        C = cp.zeros((M, N), dtype=storage_dtype(ins.c))
    parts = [(int(p[0]), int(p[-1]) + 1) for p in np.array_split(np.arange(nsteps), split_k)]
    SA = cp.asarray(sa) if sa is not None else None
    SB = cp.asarray(sb) if sb is not None else None
    return cuda.gemm(th, ins, cp.ascontiguousarray(A), cp.ascontiguousarray(B),
                     cp.ascontiguousarray(C), SA, SB, parts, device_arrays=True)


# --------------------------------------------------------------------------------------------
# The function mode


def _mm_fns():
    F = torch.nn.functional
    T = torch.Tensor
    return {
        "matmul": {torch.matmul, T.matmul, T.__matmul__},
        "rmatmul": {T.__rmatmul__},
        "mm": {torch.mm, T.mm},
        "bmm": {torch.bmm, T.bmm},
        "linear": {F.linear},
        "addmm": {torch.addmm, T.addmm},
        "baddbmm": {torch.baddbmm, T.baddbmm},
    }


class emulating(TorchFunctionMode):
    """``with emulating("sm90/mma.m16n8k16.f32.f16.f16.f32"): y = model(x)`` (module docstring)."""

    def __init__(self, instr, theory=None, strict: bool = False):
        super().__init__()
        self.ins = _ins(instr)
        self.theory = _theory.default().resolve(self.ins, theory)
        self.strict = strict
        self.calls = 0                            # products run through the instruction
        self._kinds = {f: k for k, fs in _mm_fns().items() for f in fs}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        kind = self._kinds.get(func)
        if kind is None:
            return func(*args, **kwargs)
        try:
            ops = _operands(kind, args, kwargs)
        except TypeError:
            return func(*args, **kwargs)
        x, y = ops["x"], ops["y"]
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)) or \
                x.dtype != torch_dtype(self.ins.a) or y.dtype != torch_dtype(self.ins.b):
            if self.strict and isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
                raise ValueError(f"{self.ins.name} takes {self.ins.a} x {self.ins.b} "
                                 f"({_want(self.ins.a)} x {_want(self.ins.b)}), got "
                                 f"{str(x.dtype).replace('torch.', '')} x {str(y.dtype).replace('torch.', '')}")
            return func(*args, **kwargs)
        if ops.get("out") is not None:
            raise ValueError(f"{func.__name__}: out= is not supported under emulating()")
        _check_grad(x, y, ops.get("input"))
        self.calls += 1
        with torch.no_grad():
            d = self._product(x, y)
            return _epilogue(d, x.dtype, ops.get("input"), ops.get("alpha", 1), ops.get("beta", 1))

    def _product(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """torch.matmul's shape rules over 2-D emulated GEMMs; D in the D dtype."""
        if x.device != y.device:
            raise ValueError(f"{self.ins.name}: operands on different devices: {x.device}, {y.device}")
        xv = x.unsqueeze(0) if x.dim() == 1 else x
        yv = y.unsqueeze(-1) if y.dim() == 1 else y
        batch = torch.broadcast_shapes(xv.shape[:-2], yv.shape[:-2])
        M, K = xv.shape[-2:]
        K2, N = yv.shape[-2:]
        if K != K2:
            raise ValueError(f"{self.ins.name}: shapes {tuple(x.shape)} and {tuple(y.shape)} "
                             f"cannot be multiplied ({K} != {K2})")
        xb = xv.expand(*batch, M, K).reshape(-1, M, K)
        yb = yv.expand(*batch, K, N).reshape(-1, K, N)
        outs = [matmul(xb[i], yb[i], instr=self.ins, theory=self.theory, pad_k=True)
                for i in range(xb.shape[0])]
        d = torch.stack(outs).reshape(*batch, M, N) if outs else \
            torch.empty(*batch, M, N, dtype=torch_dtype(self.ins.d), device=x.device)
        if x.dim() == 1:
            d = d.squeeze(-2)
        if y.dim() == 1:
            d = d.squeeze(-1)
        return d


def _operands(kind: str, args, kwargs) -> dict:
    """The matrix operands x, y (x @ y) and epilogue terms of one call."""
    def arg(i, name, default=None):
        if len(args) > i:
            return args[i]
        return kwargs.get(name, default)
    if kind in ("matmul", "mm", "bmm"):
        return {"x": arg(0, "input"), "y": arg(1, "other" if kind == "matmul" else "mat2"),
                "out": kwargs.get("out")}
    if kind == "rmatmul":
        return {"x": arg(1, "other"), "y": arg(0, "input")}
    if kind == "linear":
        w = arg(1, "weight")
        return {"x": arg(0, "input"), "y": w.transpose(-1, -2) if isinstance(w, torch.Tensor) else w,
                "input": arg(2, "bias")}
    # addmm(input, mat1, mat2, *, beta, alpha) / baddbmm(input, batch1, batch2, ...)
    return {"x": arg(1, "mat1" if kind == "addmm" else "batch1"),
            "y": arg(2, "mat2" if kind == "addmm" else "batch2"), "input": arg(0, "input"),
            "beta": kwargs.get("beta", 1), "alpha": kwargs.get("alpha", 1), "out": kwargs.get("out")}


def _epilogue(d: torch.Tensor, dtype, inp, alpha, beta) -> torch.Tensor:
    if inp is None and alpha == 1:
        return d if d.dtype == dtype else d.to(dtype)
    acc = d.to(torch.float32) if d.dtype != torch.float64 else d
    if alpha != 1:
        acc = acc * alpha
    if inp is not None and beta != 0:
        acc = acc + (inp.to(acc.dtype) * beta if beta != 1 else inp.to(acc.dtype))
    return acc.to(dtype)

