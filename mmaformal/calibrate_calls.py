"""Layer 5 front end, calibrate_calls: the GEMM calls that `mmaformal calibrate` learns.

A call is a ``Case`` (op, formats, M, N, K, batch, layouts, math flags); the calls come from
``--shapes`` specs (``parse_shapes``) or from the forward pass of a model (``trace_model``:
every matmul, mm, bmm, linear, addmm, baddbmm and _scaled_mm it runs, recorded by a
TorchFunctionMode); ``flags`` sets torch's math flags of a call while it runs.

May import: numpy, mmaformal.profile, mmaformal.fp, and lazily torch, mmaformal.torch (the
op kinds and operands of a call, as emulating() reads them) and the model's own package
(transformers for ``hf:`` specs).

Invariant: a Case is plain data, and equal calls are equal Cases (the lists hold each call
once, in the order first seen); nothing here runs a product for its result.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import sys
from pathlib import Path

import numpy as np

from . import profile as P

__all__ = ["Case", "FP8", "parse_shapes", "trace_model", "flags"]

#: dtypes a --shapes spec may name -> (A format, B format, allow_tf32)
_DTYPES = {"f16": ("f16", "f16", False), "bf16": ("bf16", "bf16", False),
           "f32": ("f32", "f32", False), "tf32": ("f32", "f32", True),
           "e4m3": ("e4m3", "e4m3", None), "e5m2": ("e5m2", "e5m2", None)}
FP8 = ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz")
_SHAPE_OPS = ("mm", "matmul", "bmm", "linear", "addmm", "baddbmm")
#: traced ops: torch.py's kinds (and _scaled_mm)
_TRACED = ("matmul", "rmatmul", "mm", "bmm", "linear", "addmm", "baddbmm")


# --------------------------------------------------------------------------------------------
# Calls


@dataclasses.dataclass(frozen=True)
class Case:
    """One GEMM call to calibrate: x (batch?, M, K) @ y (batch?, K, N) by ``op``."""

    op: str
    a: str
    b: str
    out: str
    m: int
    n: int
    k: int
    batch: int = 1
    b_batched: bool = False          # y has the batch dimension too (bmm), else it is shared
    trans_a: bool = False            # A stored column-major (layout col)
    trans_b: bool = False
    allow_tf32: bool = False
    bias: bool = False               # linear / addmm / baddbmm with a bias (input) term
    fast_accum: bool | None = None   # scaled_mm
    scaling: str | None = None       # scaled_mm: tensor | row

    def call(self) -> P.Call:
        """The profile.Call emulating() sees for this case."""
        return P.Call(self.op, self.a, self.b, self.out, self.m, self.n, self.k, self.batch,
                      "col" if self.trans_a else "row", "col" if self.trans_b else "row",
                      self.allow_tf32, False, self.fast_accum, self.scaling)

    def describe(self) -> str:
        s = f"{self.op} {self.a}"
        if self.b != self.a:
            s += f"/{self.b}"
        s += f" {'%dx' % self.batch if self.batch > 1 else ''}{self.m}x{self.n}x{self.k}"
        s += f" {'t' if self.trans_a else 'n'}{'t' if self.trans_b else 'n'} -> {self.out}"
        if self.allow_tf32:
            s += " tf32"
        if self.bias:
            s += " +bias"
        if self.fast_accum is not None:
            s += f" fast_accum={self.fast_accum} scaling={self.scaling}"
        return s

    def group(self) -> tuple:
        """What one general rule matches on: formats and flags."""
        return (self.a, self.b, self.out, self.allow_tf32 if self.a == "f32" else None,
                self.fast_accum, self.scaling)


def parse_shapes(text: str) -> list[Case]:
    """Cases from ``MxNxK:DTYPE[:TOKEN...]`` specs (comma, space or newline separated; or the
    path of a file of them, ``#`` comments). ``BxMxNxK`` is a batch of B products. DTYPE:
    f16 bf16 f32 tf32 (f32 with TF32 allowed) e4m3 e5m2 or A/B (e4m3/e5m2: torch._scaled_mm).
    Tokens: up to two of n / t (A, then B, stored transposed: layout col), an op (mm matmul
    bmm linear addmm baddbmm; default mm, bmm for a batch), bias, fast (scaled_mm
    use_fast_accum), rowscale (scaled_mm row-wise scales), out=FMT."""
    p = Path(text)
    if "\n" not in text and len(text) < 4096 and p.is_file():
        text = "\n".join(line.split("#", 1)[0] for line in p.read_text().splitlines())
    specs = [s for s in text.replace(",", " ").split() if s]
    if not specs:
        raise ValueError("--shapes: no shape given (MxNxK:DTYPE, e.g. 128x768x3072:f16)")
    out, seen = [], set()
    for s in specs:
        c = _parse_one(s)
        if c not in seen:
            seen.add(c)
            out.append(c)
    return out


def _parse_one(s: str) -> Case:
    where = f"--shapes {s!r}"
    parts = s.split(":")
    if len(parts) < 2:
        raise ValueError(f"{where}: expected MxNxK:DTYPE (e.g. 128x768x3072:f16)")
    try:
        dims = [int(x) for x in parts[0].lower().split("x")]
    except ValueError:
        raise ValueError(f"{where}: dimensions must be integers MxNxK or BxMxNxK") from None
    if len(dims) not in (3, 4) or any(d < 1 for d in dims):
        raise ValueError(f"{where}: dimensions must be 3 or 4 positive integers (MxNxK, BxMxNxK)")
    batch = dims[0] if len(dims) == 4 else 1
    m, n, k = dims[-3:]
    dt = parts[1].lower()
    if "/" in dt:
        fa, fb = dt.split("/", 1)
        if fa not in FP8 or fb not in FP8:
            raise ValueError(f"{where}: A/B pairs are fp8 formats (e4m3, e5m2), got {dt!r}")
        tf = None
    elif dt in _DTYPES:
        fa, fb, tf = _DTYPES[dt]
    else:
        raise ValueError(f"{where}: unknown dtype {dt!r} (one of {', '.join(_DTYPES)} or "
                         f"e4m3/e5m2)")
    fp8 = fa in FP8
    op, trans, bias, fast, rows, out = None, [], False, False, False, None
    for t in parts[2:]:
        t = t.lower()
        if t in ("n", "t"):
            if len(trans) == 2:
                raise ValueError(f"{where}: at most two of n / t (A, then B)")
            trans.append(t == "t")
        elif t in _SHAPE_OPS:
            op = t
        elif t == "bias":
            bias = True
        elif t == "fast":
            fast = True
        elif t == "rowscale":
            rows = True
        elif t.startswith("out="):
            out = t[4:]
            from . import fp
            try:
                out = fp.fmt(out).name
            except (KeyError, ValueError):
                raise ValueError(f"{where}: unknown output format {out!r}") from None
        else:
            raise ValueError(f"{where}: unknown token {t!r} (n, t, {', '.join(_SHAPE_OPS)}, "
                             f"bias, fast, rowscale, out=FMT)")
    ta, tb = (trans + [False, False])[:2]
    if fp8:
        if op is not None or bias or batch > 1:
            raise ValueError(f"{where}: fp8 shapes are torch._scaled_mm products: no op, bias "
                             f"or batch")
        if ta:
            raise ValueError(f"{where}: torch._scaled_mm takes A row-major (n)")
        if m % 16 or n % 16 or k % 16:
            raise ValueError(f"{where}: torch._scaled_mm needs M, N, K multiples of 16")
        return Case("scaled_mm", fa, fb, out or "bf16", m, n, k, 1, False, False, True, False,
                    False, fast, "row" if rows else "tensor")
    if fast or rows:
        raise ValueError(f"{where}: fast / rowscale apply to fp8 (torch._scaled_mm) shapes")
    op = op or ("bmm" if batch > 1 else "mm")
    if op in ("mm", "addmm", "linear") and batch > 1 and op != "linear":
        raise ValueError(f"{where}: {op} takes 2-D operands: no batch (use bmm or matmul)")
    if op in ("bmm", "baddbmm") and batch == 1:
        batch = 1
    if bias and op not in ("linear", "addmm", "baddbmm"):
        raise ValueError(f"{where}: bias applies to linear, addmm, baddbmm")
    if out is not None and out != fa:
        raise ValueError(f"{where}: out= applies to fp8 shapes (torch returns the operands' "
                         f"dtype)")
    return Case(op, fa, fb, fa, m, n, k, batch, batch > 1 and op in ("bmm", "baddbmm", "matmul"),
                ta, tb, bool(tf), bias)


@contextlib.contextmanager
def flags(c: Case):
    """torch's math flags of the case (TF32 for f32 products), restored afterwards."""
    import torch
    m = torch.backends.cuda.matmul
    old = (getattr(m, "fp32_precision", None), m.allow_tf32)
    try:
        if c.a == "f32":
            if old[0] is not None:
                m.fp32_precision = "tf32" if c.allow_tf32 else "ieee"
            else:
                m.allow_tf32 = c.allow_tf32
        yield
    finally:
        if old[0] is not None:
            m.fp32_precision = old[0]
        else:
            m.allow_tf32 = old[1]


# --------------------------------------------------------------------------------------------
# Models


def trace_model(spec: str, device: str = "cuda", dtype: str | None = None, tf32: bool = False,
                tokens: int = 64) -> tuple[list[Case], list[str]]:
    """(the distinct GEMM calls of one forward pass, notes on ops left out). SPEC:
    ``pkg.module:factory`` (factory() returns (model, example_inputs): a tensor, a tuple or a
    dict) or ``hf:ConfigClass[:key=value,...]`` (a transformers config of default values, the
    model built from it with random weights and eager attention, fed `tokens` random ids)."""
    import torch
    from torch.overrides import TorchFunctionMode
    from . import torch as mt
    model, inputs = _load_model(spec, tokens)
    dev = torch.device(device)
    if dtype is not None:
        td = mt.torch_dtype(dtype)
        if td is None or dtype not in ("f16", "bf16", "f32"):
            raise ValueError(f"--dtype must be f16, bf16 or f32, got {dtype!r}")
        model = model.to(td)
        inputs = _map(inputs, lambda t: t.to(td) if t.is_floating_point() else t)
    model = model.to(dev).eval()
    inputs = _map(inputs, lambda t: t.to(dev))
    kinds = {f: k for k, fs in mt.mm_fns().items() for f in fs if k in _TRACED}
    smm = getattr(torch, "_scaled_mm", None)
    notes: dict[str, int] = {}
    cases: dict[Case, int] = {}
    F = torch.nn.functional
    other = {F.scaled_dot_product_attention: "scaled_dot_product_attention (fused kernel)",
             torch.einsum: "einsum", F.conv1d: "conv1d", F.conv2d: "conv2d", F.conv3d: "conv3d"}

    class Recorder(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            try:
                kind = kinds.get(func)
                name = other.get(func)
            except TypeError:
                kind = name = None
            if kind is not None:
                c = _case_of(mt, kind, args, kwargs)
                if c is not None:
                    cases[c] = cases.get(c, 0) + 1
            elif smm is not None and func is smm:
                c = _scaled_case(mt, args, kwargs)
                if c is not None:
                    cases[c] = cases.get(c, 0) + 1
            elif name is not None:
                notes[name] = notes.get(name, 0) + 1
            return func(*args, **kwargs)

    c0 = Case("mm", "f32", "f32", "f32", 1, 1, 1, allow_tf32=tf32)
    with torch.no_grad(), flags(c0), Recorder():
        if isinstance(inputs, dict):
            model(**inputs)
        elif isinstance(inputs, (tuple, list)):
            model(*inputs)
        else:
            model(inputs)
    out = [dataclasses.replace(c, allow_tf32=tf32 and c.a == "f32") for c in cases]
    out = list(dict.fromkeys(out))
    msgs = [f"{n} x{k}: not calibrated (no GEMM of a modelled form)" for n, k in notes.items()]
    if not out:
        raise ValueError(f"--model {spec}: the forward pass ran no GEMM of a calibrated form "
                         f"(matmul, mm, bmm, linear, addmm, baddbmm, _scaled_mm)")
    return out, msgs


def _map(x, f):
    import torch
    if isinstance(x, torch.Tensor):
        return f(x)
    if isinstance(x, dict):
        return {k: _map(v, f) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return type(x)(_map(v, f) for v in x)
    return x


def _load_model(spec: str, tokens: int):
    import torch
    if spec.startswith(("hf:", "transformers:")):
        try:
            import transformers
        except ImportError:
            raise ValueError(f"--model {spec}: transformers is not installed") from None
        body = spec.split(":", 1)[1]
        name, _, kv = body.partition(":")
        cls = getattr(transformers, name, None)
        if cls is None or not name.endswith("Config"):
            raise ValueError(f"--model {spec}: transformers has no config class {name!r} "
                             f"(e.g. hf:GPT2Config, hf:BertConfig, hf:LlamaConfig)")
        kw = {}
        for item in filter(None, kv.split(",")):
            k, eq, v = item.partition("=")
            if not eq:
                raise ValueError(f"--model {spec}: expected key=value, got {item!r}")
            kw[k] = _literal(v)
        cfg = cls(**kw)
        try:
            cfg._attn_implementation = "eager"
        except Exception:                   # noqa: BLE001
            pass
        model = None
        for auto in ("AutoModelForCausalLM", "AutoModel"):
            try:
                model = getattr(transformers, auto).from_config(cfg, attn_implementation="eager")
                break
            except (ValueError, TypeError, KeyError):
                continue
        if model is None:
            raise ValueError(f"--model {spec}: no transformers model for {name}")
        vocab = int(getattr(cfg, "vocab_size", 1000) or 1000)
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, min(vocab, 1000), (1, tokens), generator=g)
        return model, {"input_ids": ids}
    mod, colon, attr = spec.partition(":")
    if not colon or not mod or not attr:
        raise ValueError(f"--model {spec!r}: expected pkg.module:factory or hf:ConfigClass")
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        m = importlib.import_module(mod)
    except ImportError as e:
        raise ValueError(f"--model {spec}: cannot import {mod}: {e}") from None
    f = getattr(m, attr, None)
    if not callable(f):
        raise ValueError(f"--model {spec}: {mod} has no callable {attr}")
    r = f()
    if not (isinstance(r, tuple) and len(r) == 2):
        raise ValueError(f"--model {spec}: {attr}() must return (model, example_inputs)")
    return r


def _literal(v: str):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(v.lower(), v)


def _case_of(mt, kind: str, args, kwargs) -> Case | None:
    try:
        ops = mt.operands_of(kind, args, kwargs)
    except (TypeError, AttributeError, IndexError):
        return None
    x, y = ops.get("x"), ops.get("y")
    import torch
    if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)) or x.dim() < 2 or y.dim() < 2:
        return None
    fa, fb = mt.format_of(x.dtype), mt.format_of(y.dtype)
    if fa is None or fb is None or fa != fb or fa == "f64":
        return None
    if ops.get("alpha", 1) != 1 or ops.get("beta", 1) != 1:
        return None
    batch = torch.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    nb = int(np.prod(batch)) if len(batch) else 1
    op = "matmul" if kind == "rmatmul" else kind
    inp = ops.get("input")
    out = mt.format_of(ops.get("out_dtype") or x.dtype) or fa
    return Case(op, fa, fb, out, int(x.shape[-2]), int(y.shape[-1]), int(x.shape[-1]), nb,
                y.dim() > 2 and nb > 1, mt.layout_of(x) == "col", mt.layout_of(y) == "col", False,
                isinstance(inp, torch.Tensor) and inp.dim() <= 1)


def _scaled_case(mt, args, kwargs) -> Case | None:
    names = ("self", "mat2", "scale_a", "scale_b", "bias", "scale_result", "out_dtype",
             "use_fast_accum")
    p = dict(zip(names, args))
    p.update(kwargs)
    a, b, sa = p.get("self", p.get("input")), p.get("mat2"), p.get("scale_a")
    if a is None or b is None or sa is None or p.get("bias") is not None:
        return None
    fa, fb = mt.format_of(a.dtype), mt.format_of(b.dtype)
    if fa not in FP8 or fb not in FP8:
        return None
    out = mt.format_of(p.get("out_dtype") or a.dtype) or fa
    return Case("scaled_mm", fa, fb, out, int(a.shape[0]), int(b.shape[1]), int(a.shape[1]), 1,
                False, False, True, False, False, bool(p.get("use_fast_accum", False)),
                "tensor" if sa.numel() == 1 else "row")
