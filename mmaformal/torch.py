"""Layer 5 front end, torch: exact GEMM arithmetic of an instruction or a platform on tensors.

May import: torch (the optional extra ``mmaformal[torch]``), numpy, mmaformal.torch_gemm (the
exact GEMMs on tensors, ``matmul`` and ``matmul_rule``, defined there and re-exported here;
through it mmaformal.emulate and mmaformal.cuda: CUDA tensors stay on the GPU),
mmaformal.profile, mmaformal.isa, mmaformal.theory, mmaformal.fp, mmaformal.bits.

``matmul(a, b, c=None, *, instr, theory=None, split_k=1)``: D = A*B + C of 2-D tensors with the
instruction's arithmetic, bit-identical to ``emulate.matmul`` on the same bits (c=None: +0;
K a multiple of the instruction's k, else ValueError). Operands are tensors of the formats'
own dtypes (float16, bfloat16, float32 for f32/tf32, float64, float8_e4m3fn, float8_e5m2,
float8_e4m3fnuz, float8_e5m2fnuz) or raw bits in unsigned (or same-width signed) integer
tensors; the result is D's dtype (raw bits in the unsigned integer dtype of D's storage when
the operands were raw bits), on the operands' device: CUDA tensors are computed on that GPU
(mmaformal.cuda, no copy to the host), CPU tensors on the CPU. Block-scaled instructions run
with unit scales (1.0). Wrong dtype, shape or a device mix: ValueError naming expected vs got.

``matmul_rule(a, b, rule)``: D of 2-D tensors by a profile rule's schedule (mmaformal.profile:
tf32 pre-rounding, zero padding of K, the K-block order, the split of K and the reduction of
the parts), before the epilogue; D in the instruction's D dtype.

``emulating(spec, theory=None, strict=False)``: a TorchFunctionMode. ``spec`` is an instruction
(``"sm90/mma.m16n8k16.f32.f16.f16.f32"``) or a platform profile (a shipped name such as
``"h100-cublas"``, a path to a ``.toml`` file, or a ``profile.Profile``). Under it torch.matmul,
``@``, torch.mm, torch.bmm, F.linear, torch.addmm, torch.baddbmm (functions and Tensor methods),
torch.einsum, torch.tensordot, torch.linalg.multi_dot, torch.chain_matmul,
F.scaled_dot_product_attention and torch._scaled_mm run through exact arithmetic:

- an instruction: every product whose operands have its A and B dtypes, the whole K chained in
  increasing k-blocks (``_scaled_mm`` too, whatever ``use_fast_accum``); other dtypes pass
  through untouched (``strict=True``: an EmulationError);
- a profile: each product is described as a ``profile.Call`` (op, formats, M, N, K, batch,
  layouts, torch's math flags) and runs the schedule of the first rule that matches. A call no
  rule covers: ``strict=True`` raises EmulationError naming the call; otherwise the profile's
  default rule for its formats and flags runs, with one EmulationWarning per kind of call, or,
  where there is none, the call runs natively with one warning. ``mode.log`` lists (call, rule
  id, covered) of every product.

Rules common to both:

- batched: leading dimensions broadcast as torch.matmul does; each matrix is one GEMM; 1-D
  operands are promoted and squeezed as torch.matmul does; M and N are free;
- K: padded with +0 to the next multiple of the instruction's k (as a kernel that zero-fills
  its last K tile; ``emulate.matmul(pad_k=True)``);
- accumulation starts from +0 (C = +0); the bias / ``input`` term of F.linear, addmm and
  baddbmm and the alpha, beta factors are an epilogue in float32 by torch, out = alpha * D +
  beta * input (as a cuBLAS epilogue), then cast to the dtype torch would return (the
  operands' dtype, or ``out_dtype``) by torch (RNE). Where that dtype is D's and there is no
  epilogue, D's bits are returned unchanged (NaN payloads, -0);
- einsum, tensordot, multi_dot, chain_matmul: lowered by torch itself (its decomposition into
  aten.mm / aten.bmm), each of those GEMMs emulated with the user-level op's name;
- F.scaled_dot_product_attention: as torch's math backend computes it (aten
  _scaled_dot_product_attention_math, not the documented Python reference): f16/bf16 inputs
  converted to f32, Q and K^T each scaled by sqrt(scale), S = Q @ K^T + the causal / attn_mask
  bias, safe softmax in f32, S @ V, converted back; both products dispatched as matmuls under
  this mode (so an f16 model's attention products are f32 GEMMs: the profile's f32 rules apply;
  on CUDA without allow_tf32 they are CUDA-core SGEMMs, which no matrix-unit model covers:
  strict raises, otherwise they run natively with a warning); dropout_p must be 0; enable_gqa
  repeats K and V. The fused flash / memory-efficient kernels are other algorithms: select the
  math backend (torch.nn.attention.sdpa_kernel(SDPBackend.MATH)) to compare with native;
- torch._scaled_mm (e4m3 / e5m2): D by the schedule, then (s_a * s_b) * D (tensor-wise or
  row-wise scales; the rule's ``scale_order``), + bias, * scale_result, in float32, cast to
  out_dtype by torch;
- ops whose arithmetic is not modelled (convolutions, fused attention / RNN / transformer
  kernels, mv, dot, addbmm, _int_mm, grouped GEMMs): ``strict=True`` raises EmulationError
  naming the op; otherwise they run natively with one EmulationWarning per op;
- operand dtypes that differ (other than the fp8 pairs of _scaled_mm): EmulationError;
- forward only: an operand that requires grad while grad mode is on is a ValueError (run the
  forward under ``torch.no_grad()`` or ``torch.inference_mode()``; inputs are then detached).

Invariant: the arithmetic is emulate.matmul's / mmaformal.cuda's (one definition) and fp's (the
tf32 pre-rounding, the IEEE additions of a split's parts); this module moves bits between
tensors and those arrays and composes them as the schedule says.
"""
from __future__ import annotations

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

import math
import warnings

from . import isa
from . import profile as _profile
from . import theory as _theory
from .isa import Instruction
from .torch_gemm import (EmulationError, as_instruction, check_grad, dtype_text, format_of,
                         matmul, matmul_rule, torch_dtype)

__all__ = ["matmul", "matmul_rule", "emulating", "torch_dtype", "format_of", "EmulationError",
           "EmulationWarning"]


class EmulationWarning(UserWarning):
    """A call that ran by a default rule or natively under emulating() (not strict)."""


def _instruction_rule(ins: Instruction, theory) -> "_profile.Rule":
    return _profile.Rule(ins.name, "hypothesis", "one instruction", ins, theory,
                         {"a": (ins.a,), "b": (ins.b,)})


# --------------------------------------------------------------------------------------------
# The function mode


def mm_fns():
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


def _lowered_fns():
    """User-level ops emulated through torch's own lowering to aten.mm / aten.bmm."""
    return {torch.einsum: "einsum", torch.functional.einsum: "einsum",
            torch.tensordot: "tensordot", torch.functional.tensordot: "tensordot",
            torch.linalg.multi_dot: "multi_dot", torch.chain_matmul: "multi_dot",
            torch.functional.chain_matmul: "multi_dot"}


#: ops whose arithmetic is not modelled (module docstring), by attribute path
_UNMODELLED = {
    "conv1d": "convolution", "conv2d": "convolution", "conv3d": "convolution",
    "conv_transpose1d": "convolution", "conv_transpose2d": "convolution",
    "conv_transpose3d": "convolution", "convolution": "convolution", "conv_tbc": "convolution",
    "bilinear": "a fused bilinear form", "addbmm": "a batch-reducing GEMM", "addmv": "a GEMV",
    "mv": "a GEMV", "dot": "a dot-product kernel", "vdot": "a dot-product kernel",
    "inner": "a dot-product kernel", "cdist": "a distance kernel", "_int_mm": "an integer GEMM",
    "_addmm_activation": "a fused GEMM and activation", "_grouped_mm": "a grouped GEMM",
    "_scaled_grouped_mm": "a grouped GEMM", "_native_multi_head_attention": "a fused attention kernel",
    "_transformer_encoder_layer_fwd": "a fused transformer kernel",
    "_scaled_dot_product_flash_attention": "a fused attention kernel",
    "_scaled_dot_product_efficient_attention": "a fused attention kernel",
    "lstm": "a fused RNN kernel", "gru": "a fused RNN kernel", "rnn_tanh": "a fused RNN kernel",
    "rnn_relu": "a fused RNN kernel",
}


def _unmodelled_fns() -> dict:
    out = {}
    F = torch.nn.functional
    for name, why in _UNMODELLED.items():
        for owner in (torch, F, torch.Tensor):
            f = getattr(owner, name, None)
            if f is not None and callable(f):
                try:
                    out[f] = (name, why)
                except TypeError:                 # unhashable
                    pass
    return out


def _dt(t) -> str:
    return str(t.dtype).replace("torch.", "") if isinstance(t, torch.Tensor) else type(t).__name__


def layout_of(t: torch.Tensor) -> str:
    if t.dim() < 2 or t.stride(-1) == 1 or t.shape[-1] == 1:
        return "row"
    if t.stride(-2) == 1 or t.shape[-2] == 1:
        return "col"
    return "strided"


def _tf32_flag() -> bool:
    m = torch.backends.cuda.matmul
    try:
        p = getattr(m, "fp32_precision", None)
        if p == "tf32":
            return True
        if p == "ieee":
            return False
    except (RuntimeError, AttributeError):
        pass
    try:
        return bool(m.allow_tf32)
    except (RuntimeError, AttributeError):
        return torch.get_float32_matmul_precision() != "highest"


def _rpr_flag(dtype) -> bool:
    m = torch.backends.cuda.matmul
    name = {torch.float16: "allow_fp16_reduced_precision_reduction",
            torch.bfloat16: "allow_bf16_reduced_precision_reduction"}.get(dtype)
    try:
        return bool(getattr(m, name)) if name else False
    except (RuntimeError, AttributeError):
        return False


class _Lowering:
    """A TorchDispatchMode (built lazily: torch.utils._python_dispatch) that lets torch decompose
    a composite op and emulates the aten.mm / aten.bmm it lowers to."""

    def __new__(cls, mode, op):
        from torch.utils._python_dispatch import TorchDispatchMode
        aten = torch.ops.aten
        gemms = {aten.mm.default, aten.bmm.default}

        class Lower(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if func in gemms and not kwargs:
                    r = mode._gemm(op, args[0], args[1], None)
                    if r is not None:
                        return _epilogue(r[0], args[0].dtype, None, 1, 1)
                    return func(*args, **kwargs)
                with self:
                    r = func.decompose(*args, **kwargs)
                if r is not NotImplemented:
                    return r
                return func(*args, **kwargs)
        return Lower()


class emulating(TorchFunctionMode):
    """``with emulating("h100-cublas"): y = model(x)`` or ``emulating("sm90/mma.m16n8k16.f32.f16.f16.f32")``
    (module docstring)."""

    def __init__(self, spec, theory=None, strict: bool = False):
        super().__init__()
        self.strict = strict
        self.calls = 0                            # products run through exact arithmetic
        self.log: list[tuple[str, str, bool]] = []   # (call, rule id / instruction, covered)
        self._warned: set[str] = set()
        if _is_instruction(spec):
            self.ins = as_instruction(spec)
            self.theory = _theory.default().resolve(self.ins, theory)
            self.profile = None
            self._rule = _instruction_rule(self.ins, self.theory)
        else:
            if theory is not None:
                raise EmulationError("theory= applies to an instruction; a profile names its "
                                     "theories per rule")
            self.ins = self.theory = self._rule = None
            self.profile = _profile.load(spec)
        self._kinds = {f: k for k, fs in mm_fns().items() for f in fs}
        self._lowered = _lowered_fns()
        self._unmodelled = _unmodelled_fns()
        F = torch.nn.functional
        self._sdpa = {F.scaled_dot_product_attention}
        self._smm = {f for f in (getattr(torch, "_scaled_mm", None),) if f is not None}

    @property
    def name(self) -> str:
        return self.ins.name if self.profile is None else f"profile {self.profile.id}"

    # ---- dispatch

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        try:
            kind = self._kinds.get(func)
            lowered = self._lowered.get(func)
            special = func in self._sdpa or func in self._smm
            unmodelled = self._unmodelled.get(func)
        except TypeError:                         # unhashable callables
            return func(*args, **kwargs)
        if kind is not None:
            return self._mm_op(func, kind, args, kwargs)
        if lowered is not None:
            check_grad(*_tensors(args, kwargs))
            with torch.no_grad(), _Lowering(self, lowered):
                return func(*args, **kwargs)
        if special:
            if func in self._sdpa:
                return self._sdpa_op(func, args, kwargs)
            return self._scaled_mm_op(func, args, kwargs)
        if unmodelled is not None and any(t.is_floating_point() for t in _tensors(args, kwargs)):
            name, why = unmodelled
            msg = f"{name} is not emulated under emulating({self.name}): {why} whose arithmetic is not modelled"
            if self.strict:
                raise EmulationError(msg)
            self._warn(name, msg + "; it runs natively")
        return func(*args, **kwargs)

    def _warn(self, key: str, msg: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warnings.warn(msg, EmulationWarning, stacklevel=4)

    # ---- planning

    def _plan(self, call: "_profile.Call", x, y) -> "_profile.Rule | None":
        """The rule to run the call with, or None: run it natively (raises under strict)."""
        if self.profile is None:
            ins = self.ins
            if x.dtype == torch_dtype(ins.a) and y.dtype == torch_dtype(ins.b):
                return self._rule
            if self.strict:
                raise EmulationError(f"{ins.name} takes {ins.a} x {ins.b} ({dtype_text(ins.a)} x "
                                     f"{dtype_text(ins.b)}), got {_dt(x)} x {_dt(y)} ({call.op})")
            return None
        rule, covered = self.profile.select(call)
        if covered:
            return rule
        desc = call.describe()
        if self.strict:
            raise EmulationError(f"profile {self.profile.id}: no rule covers {desc}")
        key = f"{call.op}|{call.a}|{call.b}|{call.out}"
        if rule is None:
            self._warn(key, f"profile {self.profile.id}: no rule covers {desc}, and no default "
                            f"rule for {call.a} x {call.b}: it runs natively (not emulated)")
            return None
        self._warn(key, f"profile {self.profile.id}: no rule covers {desc}: using the default "
                        f"rule {rule.id} ({rule.instruction.name})")
        return rule

    def _call(self, op, x, y, out_dtype, **extra) -> "_profile.Call | None":
        fa, fb = format_of(x.dtype), format_of(y.dtype)
        if fa is None or fb is None:
            return None
        xv = x.unsqueeze(0) if x.dim() == 1 else x
        yv = y.unsqueeze(-1) if y.dim() == 1 else y
        batch = torch.broadcast_shapes(xv.shape[:-2], yv.shape[:-2])
        nb = int(np.prod(batch)) if len(batch) else 1
        fo = format_of(out_dtype) or fa
        return _profile.Call(op, fa, fb, fo, int(xv.shape[-2]), int(yv.shape[-1]),
                             int(xv.shape[-1]), nb, layout_of(xv), layout_of(yv), _tf32_flag(),
                             _rpr_flag(x.dtype), **extra)

    def _check_mix(self, op, x, y) -> None:
        if x.dtype != y.dtype and x.is_floating_point() and y.is_floating_point():
            raise EmulationError(f"{op}: operand dtypes differ: {_dt(x)} x {_dt(y)} (emulating"
                                 f"({self.name}) takes one dtype for both)")

    def _gemm(self, op, x, y, out_dtype):
        """D of x @ y (torch.matmul shapes) by the planned rule, cast to the result dtype
        (out_dtype, else the operands'); None: not emulated (run natively)."""
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
            return None
        self._check_mix(op, x, y)
        call = self._call(op, x, y, out_dtype)
        if call is None:
            if self.strict and (x.is_floating_point() or y.is_floating_point()):
                raise EmulationError(f"{op}: {_dt(x)} x {_dt(y)} has no format under emulating({self.name})")
            return None
        rule = self._plan(call, x, y)
        if rule is None:
            return None
        self.calls += 1
        self.log.append((call.describe(), rule.id, True if self.profile is None else
                         self.profile.select(call)[1]))
        with torch.no_grad():
            d = self._product(x, y, rule, out_dtype)
        return d, rule

    def _product(self, x: torch.Tensor, y: torch.Tensor, rule, out_dtype=None) -> torch.Tensor:
        """torch.matmul's shape rules over 2-D emulated GEMMs; D in the D dtype."""
        if x.device != y.device:
            raise EmulationError(f"{self.name}: operands on different devices: {x.device}, {y.device}")
        ins = rule.instruction
        xv = x.unsqueeze(0) if x.dim() == 1 else x
        yv = y.unsqueeze(-1) if y.dim() == 1 else y
        batch = torch.broadcast_shapes(xv.shape[:-2], yv.shape[:-2])
        M, K = xv.shape[-2:]
        K2, N = yv.shape[-2:]
        if K != K2:
            raise EmulationError(f"{self.name}: shapes {tuple(x.shape)} and {tuple(y.shape)} "
                                 f"cannot be multiplied ({K} != {K2})")
        xb = xv.expand(*batch, M, K).reshape(-1, M, K)
        yb = yv.expand(*batch, K, N).reshape(-1, K, N)
        th = self.theory if self.profile is None else None
        outs = [matmul_rule(xb[i], yb[i], rule, theory=th, out_dtype=out_dtype or x.dtype)
                for i in range(xb.shape[0])]
        d = torch.stack(outs).reshape(*batch, M, N) if outs else \
            torch.empty(*batch, M, N, dtype=torch_dtype(ins.d), device=x.device)
        if x.dim() == 1:
            d = d.squeeze(-2)
        if y.dim() == 1:
            d = d.squeeze(-1)
        return d

    # ---- the ops

    def _mm_op(self, func, kind, args, kwargs):
        try:
            ops = operands_of(kind, args, kwargs)
        except TypeError:
            return func(*args, **kwargs)
        x, y = ops["x"], ops["y"]
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
            return func(*args, **kwargs)
        if ops.get("out") is not None:
            raise EmulationError(f"{func.__name__}: out= is not supported under emulating()")
        check_grad(x, y, ops.get("input"))
        out_dtype = ops.get("out_dtype")
        r = self._gemm(kind if kind != "rmatmul" else "matmul", x, y, out_dtype)
        if r is None:
            return func(*args, **kwargs)
        d, _ = r
        with torch.no_grad():
            return _epilogue(d, out_dtype or x.dtype, ops.get("input"), ops.get("alpha", 1),
                             ops.get("beta", 1))

    def _sdpa_op(self, func, args, kwargs):
        names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
        p = dict(zip(names, args))
        p.update(kwargs)
        q, k, v = p.get("query"), p.get("key"), p.get("value")
        if not all(isinstance(t, torch.Tensor) for t in (q, k, v)):
            return func(*args, **kwargs)
        extra = set(p) - set(names)
        if extra:
            raise EmulationError(f"scaled_dot_product_attention: argument {sorted(extra)[0]} is "
                                 f"not supported under emulating()")
        if p.get("dropout_p", 0.0):
            raise EmulationError("scaled_dot_product_attention under emulating(): dropout_p "
                                 f"must be 0, got {p['dropout_p']}")
        check_grad(q, k, v, p.get("attn_mask"))
        for t in (k, v):
            self._check_mix("scaled_dot_product_attention", q, t)
        if self._call("sdpa", q, k.transpose(-2, -1), None) is None:   # not a modelled dtype
            return func(*args, **kwargs)
        # the two products are planned (and warned about) as the matmuls they are
        with torch.no_grad():
            return self._sdpa_math(q, k, v, p.get("attn_mask"), bool(p.get("is_causal", False)),
                                   p.get("scale"), bool(p.get("enable_gqa", False)))

    def _sdpa_math(self, q, k, v, attn_mask, is_causal, scale, enable_gqa):
        """scaled_dot_product_attention as torch's math backend computes it (aten
        _scaled_dot_product_attention_math), with its two products dispatched like any matmul
        under this mode: f16/bf16 inputs are first converted to f32; q and k^T are each
        multiplied by sqrt(scale); P = safe-softmax(q k^T + mask) in f32; O = P v; O converted
        back. So with f16/bf16 inputs the two products are f32 GEMMs (the profile's f32 rules
        apply: without allow_tf32 they run on the CUDA cores, which no matrix-unit model covers:
        strict raises, otherwise they run natively with a warning)."""
        dt = q.dtype
        acc = torch.float32 if dt in (torch.float16, torch.bfloat16) else dt
        L, S = q.size(-2), k.size(-2)
        scale_factor = 1 / math.sqrt(q.size(-1)) if scale is None else scale
        sf = math.sqrt(abs(scale_factor))
        qa = q.to(acc) * (sf if scale_factor >= 0 else -sf)
        ka, va = k.to(acc), v.to(acc)
        bias = None
        if is_causal:
            if attn_mask is not None:
                raise EmulationError("scaled_dot_product_attention: is_causal and attn_mask "
                                     "are exclusive")
            attn_mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril(diagonal=0)
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                bias = torch.zeros(attn_mask.shape, dtype=acc, device=q.device).masked_fill(
                    attn_mask.logical_not(), float("-inf"))
            else:
                bias = attn_mask
        if enable_gqa:
            ka = ka.repeat_interleave(q.size(-3) // k.size(-3), -3)
            va = va.repeat_interleave(q.size(-3) // v.size(-3), -3)
        attn = self._mm_op(torch.matmul, "matmul", (qa, ka.transpose(-2, -1) * sf), {})
        if bias is not None:
            attn = attn + bias
        soft = getattr(torch, "_safe_softmax", None)
        attn = soft(attn, -1) if soft is not None else torch.softmax(attn, dim=-1)
        return self._mm_op(torch.matmul, "matmul", (attn, va), {}).to(dt)

    def _scaled_mm_op(self, func, args, kwargs):
        names = ("self", "mat2", "scale_a", "scale_b", "bias", "scale_result", "out_dtype",
                 "use_fast_accum")
        p = dict(zip(names, args))
        p.update(kwargs)
        if "input" in p and "self" not in p:
            p["self"] = p.pop("input")
        a, b = p.get("self"), p.get("mat2")
        sa, sb = p.get("scale_a"), p.get("scale_b")
        if not all(isinstance(t, torch.Tensor) for t in (a, b, sa, sb)):
            return func(*args, **kwargs)
        extra = set(p) - set(names)
        if extra:
            raise EmulationError(f"_scaled_mm: argument {sorted(extra)[0]} is not supported "
                                 f"under emulating()")
        if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
            raise EmulationError(f"_scaled_mm: a (M, K) and b (K, N) expected, got "
                                 f"{tuple(a.shape)} and {tuple(b.shape)}")
        fa, fb = format_of(a.dtype), format_of(b.dtype)
        if fa not in ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz") or fb not in ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz"):
            raise EmulationError(f"_scaled_mm: fp8 operands expected, got {_dt(a)} x {_dt(b)}")
        M, N = a.shape[0], b.shape[1]
        if sa.numel() == 1 and sb.numel() == 1:
            scaling = "tensor"
        elif tuple(sa.shape) == (M, 1) and tuple(sb.shape) == (1, N):
            scaling = "row"
        else:
            raise EmulationError(f"_scaled_mm: scales must be tensor-wise (one element each) or "
                                 f"row-wise ({M}, 1) and (1, {N}), got {tuple(sa.shape)} and {tuple(sb.shape)}")
        check_grad(a, b)
        out_dtype = p.get("out_dtype") or a.dtype
        fast = bool(p.get("use_fast_accum", False))
        call = self._call("scaled_mm", a, b, out_dtype, fast_accum=fast, scaling=scaling)
        rule = self._plan(call, a, b)
        if rule is None:
            return func(*args, **kwargs)
        self.calls += 1
        self.log.append((call.describe(), rule.id, True if self.profile is None else
                         self.profile.select(call)[1]))
        th = self.theory if self.profile is None else None
        with torch.no_grad():
            d = matmul_rule(a, b, rule, theory=th, out_dtype=torch.float32).to(torch.float32)
            fa32, fb32 = sa.to(torch.float32), sb.to(torch.float32)
            if scaling == "tensor":
                fa32, fb32 = fa32.reshape(()), fb32.reshape(())
            if rule.epilogue.scale_order == "ab":
                y = d * (fa32 * fb32)
            else:
                y = (d * fa32) * fb32
            if p.get("bias") is not None:
                y = y + p["bias"].to(torch.float32)
            if p.get("scale_result") is not None:
                y = y * p["scale_result"].to(torch.float32)
            return y.to(out_dtype)


def _is_instruction(spec) -> bool:
    if isinstance(spec, Instruction):
        return True
    if isinstance(spec, (_profile.Profile,)) or not isinstance(spec, str):
        return False
    if spec.endswith(".toml"):
        return False
    head = spec.split("/", 1)[0]
    return "/" in spec and (head in isa.ARCHS or head in isa.ALIASES)


def _tensors(args, kwargs) -> list:
    out = []
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(t for t in v if isinstance(t, torch.Tensor))
    return out


def operands_of(kind: str, args, kwargs) -> dict:
    """The matrix operands x, y (x @ y) and epilogue terms of one call."""
    def arg(i, name, default=None):
        if len(args) > i:
            return args[i]
        return kwargs.get(name, default)
    if kind in ("matmul", "mm", "bmm"):
        return {"x": arg(0, "input"), "y": arg(1, "other" if kind == "matmul" else "mat2"),
                "out": kwargs.get("out"), "out_dtype": kwargs.get("out_dtype")}
    if kind == "rmatmul":
        return {"x": arg(1, "other"), "y": arg(0, "input")}
    if kind == "linear":
        w = arg(1, "weight")
        return {"x": arg(0, "input"), "y": w.transpose(-1, -2) if isinstance(w, torch.Tensor) else w,
                "input": arg(2, "bias")}
    # addmm(input, mat1, mat2, *, beta, alpha) / baddbmm(input, batch1, batch2, ...)
    return {"x": arg(1, "mat1" if kind == "addmm" else "batch1"),
            "y": arg(2, "mat2" if kind == "addmm" else "batch2"), "input": arg(0, "input"),
            "beta": kwargs.get("beta", 1), "alpha": kwargs.get("alpha", 1), "out": kwargs.get("out"),
            "out_dtype": kwargs.get("out_dtype")}


def _epilogue(d: torch.Tensor, dtype, inp, alpha, beta) -> torch.Tensor:
    if inp is None and alpha == 1:
        return d if d.dtype == dtype else d.to(dtype)
    acc = d.to(torch.float32) if d.dtype != torch.float64 else d
    if alpha != 1:
        acc = acc * alpha
    if inp is not None and beta != 0:
        acc = acc + (inp.to(acc.dtype) * beta if beta != 1 else inp.to(acc.dtype))
    return acc.to(dtype)
