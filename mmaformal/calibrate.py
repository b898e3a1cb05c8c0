"""Layer 5 front end, calibrate: learn a platform profile by a closed loop against the GPU.

``mmaformal calibrate (--model SPEC | --shapes SPECS) [--out FILE] [--json] [--trials N]``

May import: numpy, mmaformal.profile, mmaformal.isa, mmaformal.theory, mmaformal.fp,
mmaformal.args, and lazily torch, mmaformal.torch (which executes every schedule: this module
never computes a product itself) and mmaformal.cuda (whether the emulation can run on the GPU).

The loop, per GEMM call (a ``Case``: op, formats, M, N, K, batch, layouts, math flags):

1. inputs are asked of the native op (the GPU library through torch): first probe inputs in
   the manner of FPRev (each output element is one probe: its row of A holds +G at one k = p,
   its column of B holds -G at one k = q, every other element a small s, so that the two big
   products cancel and the output counts the small products the library summed outside the
   block, chain position or K slice where they were absorbed: the output depends on the fused
   block size, the order of the K-blocks and where K is split), then ``trials`` random inputs
   (signs, exponents and fractions spread over a few binades, so that partial sums cancel and
   round differently under different schedules);
2. candidates: every catalog instruction of the architecture that takes the call's operand
   formats (tf32 ones for f32 with TF32 allowed; sparse, block-scaled and wmma forms left out;
   instructions with the same theory and k merged), crossed with the schedule space of a
   profile rule (mmaformal.profile): the K-block order, tf32 input rounding, then, only when
   no unsplit schedule matches, the splits of K (slices of K-units, chunks; sequential or
   pairwise reduction; in the accumulator or the output format), each split counted once per
   distinct partition of the K-blocks;
3. each candidate runs as a one-rule profile under ``mmaformal.torch.emulating(..., strict=True)``
   on the same inputs (the first ``rows`` rows of A: an output row depends only on its row of
   A), so the schedules are executed by the one implementation the profiles use; a candidate
   is kept only while its output is bit-identical to the native one on every input asked;
4. the simplest survivor is the call's schedule (alternatives that no input separated are
   reported); the kernels the native call launched (torch.profiler) are its evidence.

The profile written: per group of calls with the same formats and flags, one rule (status
``hypothesis``, ``default = true``) with the schedule that reproduced most of them, and before
it a rule per call that needed another schedule (exact M, N, K, batch and layouts, status
``confirmed``: bit-identical over the one shape it covers); a call that no candidate reproduced
gets no rule and is named in the profile's provenance. The result is checked by loading it and
re-running every reproduced call under ``emulating(profile, strict=True)``.

The native op is pluggable (``Native``): ``TorchNative`` runs the op on the GPU (CUDA or ROCm
builds of torch alike: only the ``torch.cuda`` API is used); ``EmulatedNative`` runs it under
a hidden profile on the CPU (tests and dry runs of the search).

Exit codes: 0 every call reproduced and a profile written; 1 a profile written but some calls
reproduced by no candidate (named); 2 bad input, or no torch / no GPU (one line).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import isa
from . import profile as P

__all__ = ["Case", "Candidate", "CaseResult", "Native", "TorchNative", "EmulatedNative",
           "parse_shapes", "trace_model", "candidates", "calibrate_case", "calibrate",
           "build_profile", "profile_toml", "device_arch", "add_parser", "run"]

#: dtypes a --shapes spec may name -> (A format, B format, allow_tf32)
_DTYPES = {"f16": ("f16", "f16", False), "bf16": ("bf16", "bf16", False),
           "f32": ("f32", "f32", False), "tf32": ("f32", "f32", True),
           "e4m3": ("e4m3", "e4m3", None), "e5m2": ("e5m2", "e5m2", None)}
_FP8 = ("e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz")
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
        if fa not in _FP8 or fb not in _FP8:
            raise ValueError(f"{where}: A/B pairs are fp8 formats (e4m3, e5m2), got {dt!r}")
        tf = None
    elif dt in _DTYPES:
        fa, fb, tf = _DTYPES[dt]
    else:
        raise ValueError(f"{where}: unknown dtype {dt!r} (one of {', '.join(_DTYPES)} or "
                         f"e4m3/e5m2)")
    fp8 = fa in _FP8
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


# --------------------------------------------------------------------------------------------
# Inputs


#: format -> (exponent of the small value s, exponent of the largest big value): s small
#: enough that G*s absorbs s*s, and s*s a representable output
_PROBE = {"f16": (-12, 15), "bf16": (-12, 15), "f32": (-12, 15), "e4m3": (-6, 8),
          "e5m2": (-14, 15), "e4m3fnuz": (-7, 7), "e5m2fnuz": (-15, 15)}


def _probe_values(fa: str, fb: str) -> tuple[float, float, float, float]:
    """(s_a, G_a, s_b, G_b) with G_a * s_b = s_a * G_b: the two big products cancel."""
    ea, ga = _PROBE[fa]
    eb, gb = _PROBE[fb]
    r = min(ga - ea, gb - eb)
    return 2.0 ** ea, 2.0 ** (ea + r), 2.0 ** eb, 2.0 ** (eb + r)


def _shape_x(c: Case) -> tuple:
    return (c.batch, c.m, c.k) if c.batch > 1 else (c.m, c.k)


def _shape_y(c: Case) -> tuple:
    return (c.batch, c.k, c.n) if c.b_batched else (c.k, c.n)


def _lay(torch, t, trans: bool):
    """t (..., R, C) stored column-major when trans (the same values)."""
    return t.transpose(-1, -2).contiguous().transpose(-1, -2) if trans else t.contiguous()


def _dtype(torch, fmt: str):
    from . import torch as mt
    return mt.torch_dtype(fmt)


def probe_inputs(c: Case, seed: int) -> dict:
    """One probe input (module docstring): x, y (+ bias, scales) as CPU tensors."""
    import torch
    rng = np.random.default_rng(seed)
    sa, ga, sb, gb = _probe_values(c.a, c.b)
    x = np.full(_shape_x(c), sa, np.float64)
    y = np.full(_shape_y(c), sb, np.float64)
    K = c.k
    # big A values at even k, big B values at odd k (never the same k: no G*G product); the
    # rows walk p over K (seed shifts the walk), the columns take q at random
    evens = max(1, (K + 1) // 2)
    odds = K // 2
    rows = np.arange(c.m)
    p = 2 * ((rows * max(1, evens // max(1, min(c.m, 16))) + seed * 7) % evens)
    x[..., rows, p] = ga
    if odds:
        q = 2 * rng.integers(0, odds, c.n) + 1
        y[..., q, np.arange(c.n)] = -gb
    return _finish(torch, c, x, y, rng)


def random_inputs(c: Case, seed: int) -> dict:
    """One random input: signs, fractions and exponents over a few binades."""
    import torch
    rng = np.random.default_rng(seed + 1000)

    def spread(shape, fmt):
        lo, hi = {"e4m3": (-4, 4), "e5m2": (-6, 6), "e4m3fnuz": (-4, 4),
                  "e5m2fnuz": (-6, 6)}.get(fmt, (-8, 8))
        e = rng.integers(lo, hi + 1, shape).astype(np.float64)
        f = 1 + rng.random(shape)
        s = np.where(rng.integers(0, 2, shape) == 1, -1.0, 1.0)
        return s * f * 2.0 ** e
    return _finish(torch, c, spread(_shape_x(c), c.a), spread(_shape_y(c), c.b), rng)


def _finish(torch, c: Case, x: np.ndarray, y: np.ndarray, rng) -> dict:
    tx = _lay(torch, torch.from_numpy(x).to(_dtype(torch, c.a)), c.trans_a)
    ty = _lay(torch, torch.from_numpy(y).to(_dtype(torch, c.b)), c.trans_b)
    d = {"x": tx, "y": ty}
    if c.bias:
        d["bias"] = torch.from_numpy(rng.standard_normal(c.n) * 0.25).to(_dtype(torch, c.out))
    if c.op == "scaled_mm":
        if c.scaling == "row":
            d["scale_a"] = torch.from_numpy(0.5 + rng.random((c.m, 1))).float()
            d["scale_b"] = torch.from_numpy(0.5 + rng.random((1, c.n))).float()
        else:
            d["scale_a"] = torch.tensor(float(0.5 + rng.random()), dtype=torch.float32)
            d["scale_b"] = torch.tensor(float(0.5 + rng.random()), dtype=torch.float32)
    return d


def op_fn(c: Case) -> Callable:
    """f(x, y, bias=None, scale_a=None, scale_b=None): the user-level torch op of the case."""
    import torch
    F = torch.nn.functional
    out_dtype = _dtype(torch, c.out)

    def f(x, y, bias=None, scale_a=None, scale_b=None):
        if c.op == "scaled_mm":
            return torch._scaled_mm(x, y, scale_a, scale_b, out_dtype=out_dtype,
                                    use_fast_accum=bool(c.fast_accum))
        if c.op == "linear":
            return F.linear(x, y.transpose(-1, -2), bias)
        if c.op == "addmm":
            return torch.addmm(bias if bias is not None else torch.zeros_like(y[0]), x, y)
        if c.op == "baddbmm":
            return torch.baddbmm(bias if bias is not None else torch.zeros_like(y[..., :1, :]),
                                 x, y)
        return {"mm": torch.mm, "bmm": torch.bmm, "matmul": torch.matmul}[c.op](x, y)
    return f


def _subset(c: Case, inp: dict, rows: int, batches: int) -> dict:
    """The inputs of the first `rows` rows of the first `batches` products."""
    d = dict(inp)
    x = inp["x"]
    d["x"] = x[:batches, :rows] if x.dim() == 3 else x[:rows]
    if inp["y"].dim() == 3:
        d["y"] = inp["y"][:batches]
    if c.op == "scaled_mm" and c.scaling == "row":
        d["scale_a"] = inp["scale_a"][:rows]
    if "bias" in d and d["bias"] is not None and c.op == "baddbmm":
        pass
    return d


def _out_subset(out, rows: int, batches: int):
    return out[:batches, :rows] if out.dim() == 3 else out[:rows]


@contextlib.contextmanager
def _flags(c: Case):
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


def _bits_equal(torch, u, v) -> int:
    """Number of elements whose bits differ (all of them when dtypes or shapes differ)."""
    if u.dtype != v.dtype or u.shape != v.shape:
        return max(u.numel(), v.numel())
    sig = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[u.element_size()]
    return int((u.contiguous().view(sig) != v.contiguous().view(sig)).sum())


# --------------------------------------------------------------------------------------------
# Natives


class Native:
    """The op being calibrated: run(case, fn, inputs) -> output (CPU tensor); kernels(...) ->
    the kernel names it launched (evidence); describe() -> platform facts for provenance."""

    name = "native"

    def run(self, case: Case, fn: Callable, inputs: dict):
        raise NotImplementedError

    def kernels(self, case: Case, fn: Callable, inputs: dict) -> list[str]:
        return []

    def describe(self) -> dict:
        return {}


class TorchNative(Native):
    """The op on the GPU through torch (CUDA or ROCm builds: torch.cuda API only)."""

    def __init__(self, device: str = "cuda"):
        import torch
        self.torch = torch
        self.device = torch.device(device)
        props = torch.cuda.get_device_properties(self.device)
        self.gpu = props.name
        self.name = self.gpu

    def _to(self, inputs: dict) -> dict:
        return {k: (v.to(self.device) if v is not None else None) for k, v in inputs.items()}

    def run(self, case, fn, inputs):
        torch = self.torch
        d = self._to(inputs)
        with torch.no_grad(), _flags(case):
            out = fn(**d)
            torch.cuda.synchronize(self.device)
        return out.cpu()

    def kernels(self, case, fn, inputs):
        torch = self.torch
        d = self._to(inputs)
        try:
            from torch.profiler import ProfilerActivity, profile
            with torch.no_grad(), _flags(case), profile(activities=[ProfilerActivity.CUDA]) as pr:
                fn(**d)
                torch.cuda.synchronize(self.device)
            names = []
            for e in pr.events():
                dt = str(getattr(e, "device_type", ""))
                if ("CUDA" in dt or "HIP" in dt) and e.name not in names:
                    names.append(e.name)
            return names
        except Exception as e:              # noqa: BLE001 (evidence only)
            return [f"(profiler unavailable: {type(e).__name__})"]

    def describe(self):
        torch = self.torch
        hip = getattr(torch.version, "hip", None)
        return {"gpu": self.gpu, "torch": torch.__version__,
                "runtime": f"HIP {hip}" if hip else f"CUDA {torch.version.cuda}"}


class EmulatedNative(Native):
    """A stand-in native: the op under emulating(hidden profile) on the CPU (tests, dry runs
    of the search; the hidden schedule is what calibration should recover)."""

    def __init__(self, hidden, name: str = "emulated"):
        self.hidden = P.load(hidden) if not isinstance(hidden, P.Profile) else hidden
        self.name = name

    def run(self, case, fn, inputs):
        import torch
        from . import torch as mt
        with torch.no_grad(), _flags(case), mt.emulating(self.hidden, strict=True):
            return fn(**inputs).cpu()

    def kernels(self, case, fn, inputs):
        return [f"(emulated: profile {self.hidden.id})"]

    def describe(self):
        import torch
        return {"gpu": f"none (emulated native: profile {self.hidden.id})",
                "torch": torch.__version__, "runtime": "cpu"}


def device_arch(device: str = "cuda") -> str:
    """The catalog architecture of a GPU: gcnArchName on ROCm, compute capability on CUDA."""
    import torch
    props = torch.cuda.get_device_properties(torch.device(device))
    if getattr(torch.version, "hip", None):
        name = str(getattr(props, "gcnArchName", "")).split(":")[0]
        if name in isa.ARCHS:
            return name
        raise ValueError(f"no catalog architecture for the AMD GPU {props.name} ({name or '?'}; "
                         f"catalog: {', '.join(a for a in isa.ARCHS if a.startswith('gfx'))}); "
                         f"pass --arch")
    cc = (props.major, props.minor)
    arch = {7: "sm75" if cc >= (7, 5) else "sm70", 8: "sm89" if cc >= (8, 9) else "sm80",
            9: "sm90", 10: "sm100", 11: "sm100", 12: "sm120"}.get(cc[0])
    if arch is None:
        raise ValueError(f"no catalog architecture for {props.name} (compute capability "
                         f"{cc[0]}.{cc[1]}); pass --arch")
    return arch


# --------------------------------------------------------------------------------------------
# Candidates


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One schedule: a profile rule's instruction, order, pre-rounding and split."""

    instruction: str
    order: str = "increasing"
    pre_round: str = "none"
    split: tuple = ()                 # sorted (key, value) pairs of [rule.split], () unsplit
    stage: int = 0                    # 0: unsplit, 1: split of K
    rank: int = 0                     # order of simplicity inside the stage
    scale_order: str = "ab"           # scaled_mm epilogue: (s_a * s_b) * D or (D * s_a) * s_b

    def label(self) -> str:
        s = self.instruction.split("/", 1)[1]
        if self.order != "increasing":
            s += " decreasing"
        if self.pre_round != "none":
            s += f" {self.pre_round}"
        if self.split:
            s += " split(" + ", ".join(f"{k}={v}" for k, v in self.split) + ")"
        if self.scale_order != "ab":
            s += f" scales {self.scale_order}"
        return s

    def rule_dict(self, rid: str = "candidate") -> dict:
        ins = isa.lookup(self.instruction)
        fa = "f32" if ins.a == "tf32" else ins.a
        fb = "f32" if ins.b == "tf32" else ins.b
        d: dict[str, Any] = {"id": rid, "status": "hypothesis", "provenance": "calibration candidate",
                             "instruction": self.instruction, "match": {"a": fa, "b": fb}}
        if self.order != "increasing":
            d["order"] = self.order
        if self.pre_round != "none":
            d["pre_round"] = self.pre_round
        if self.split:
            d["split"] = dict(self.split)
        if self.scale_order != "ab":
            d["epilogue"] = {"scale_order": self.scale_order}
        return d

    def profile(self) -> P.Profile:
        d = self.rule_dict()
        d["default"] = True
        return P.parse({"profile": {"id": "candidate", "status": "hypothesis",
                                    "provenance": "calibration candidate"}, "rule": [d]},
                       "calibration candidate")


def _instructions(c: Case, arch: str, only: Sequence[str] | None = None) -> list[isa.Instruction]:
    """Catalog instructions of the arch for the case's operands, one per (theory, k, formats)
    (only: fnmatch patterns the names must match)."""
    import fnmatch
    from . import theory as _theory
    want_a = [c.a] + (["tf32"] if c.a == "f32" and c.allow_tf32 else [])
    want_b = [c.b] + (["tf32"] if c.b == "f32" and c.allow_tf32 else [])
    T = _theory.default()
    out, seen = [], set()
    for ins in isa.instructions(arch):
        if ins.a not in want_a or ins.b not in want_b or (ins.a == "tf32") != (ins.b == "tf32"):
            continue
        if ins.sparse or ins.scale or ins.family == "wmma":
            continue
        if ins.c != ins.d and -(-c.k // ins.k) > 1:      # cannot carry its accumulator
            continue
        if only and not any(fnmatch.fnmatchcase(ins.name, p) or
                            fnmatch.fnmatchcase(ins.qualifier, p) for p in only):
            continue
        try:
            th = T.resolve(ins, None)
        except (KeyError, ValueError):
            continue
        if not th.evaluable[0]:
            continue
        key = (th.id, ins.k, ins.a, ins.b, ins.c, ins.d)
        if key in seen:
            continue
        seen.add(key)
        out.append(ins)
    # f32 accumulators first, larger k first: the usual library forms
    out.sort(key=lambda i: (i.d != "f32", -i.k, i.family != "mma", i.name))
    return out


def candidates(c: Case, arch: str, stage: int, only: Sequence[str] | None = None) -> list[Candidate]:
    """The candidates of one stage (0: unsplit; 1: splits of K), simplest first."""
    out: list[Candidate] = []
    inss = _instructions(c, arch, only)
    sos = ("ab", "a-then-b") if c.op == "scaled_mm" else ("ab",)
    if stage == 0:
        for ins in inss:
            pres = ("tf32-rne", "none") if ins.a == "tf32" else ("none",)
            for order in ("increasing", "decreasing"):
                for pre in pres:
                    for so in sos:
                        out.append(Candidate(ins.name, order, pre, (), 0, len(out), so))
        return out
    for ins in inss:
        if ins.c != ins.d or ins.d not in ("f32", "f64") or ins.k < 4:
            continue
        k = ins.k
        nb = -(-c.k // k)
        if nb < 2:
            continue
        pres = ("tf32-rne",) if ins.a == "tf32" else ("none",)
        seen: set = set()
        splits: list[dict] = []
        units = sorted({u for u in (k, 32, 64, 128, 256) if u % k == 0})
        for u in units:
            for S in list(range(2, 17)) + [24, 32, 48, 64]:
                splits.append({"slices": S, "unit": u} if u != k else {"slices": S})
        for ch in sorted({*(x for x in (64, 128, 256, 512, 1024, 2048) if x % k == 0),
                          *(-(-c.k // (u * S)) * u for u in units for S in range(2, 17))}):
            if ch % k == 0 and ch < nb * k:
                splits.append({"chunk": ch})
        for sp in splits:
            s = P.Split(sp.get("slices"), sp.get("chunk"), unit=sp.get("unit"))
            parts = tuple(s.parts(nb, k))
            if len(parts) < 2 or parts in seen:
                continue
            seen.add(parts)
            forms = [("sequential", "acc")]
            if len(parts) > 2:
                forms.append(("pairwise", "acc"))
            if c.out != ins.d and c.op != "scaled_mm":
                forms.append(("sequential", "out"))
            for red, fmt in forms:
                d = dict(sp)
                if red != "sequential":
                    d["reduce"] = red
                if fmt != "acc":
                    d["reduce_format"] = fmt
                for pre in pres:
                    for so in sos:
                        out.append(Candidate(ins.name, "increasing", pre, tuple(sorted(d.items())),
                                             1, len(out), so))
    return out


# --------------------------------------------------------------------------------------------
# The loop


@dataclasses.dataclass
class CaseResult:
    case: Case
    kernels: list[str]
    inputs: list[str]                      # what was asked: "probe 0", "random 1", ...
    chosen: Candidate | None = None
    alternatives: list[Candidate] = dataclasses.field(default_factory=list)
    tried: int = 0
    best: tuple[str, int, int] | None = None   # (candidate, mismatching, compared) of the closest
    stopped: str = ""                          # why the search stopped early
    seconds: float = 0.0
    verified: bool | None = None

    def to_json(self) -> dict:
        return {"case": self.case.describe(), "call": dataclasses.asdict(self.case),
                "kernels": self.kernels, "inputs": self.inputs,
                "schedule": self.chosen.label() if self.chosen else None,
                "rule": self.chosen.rule_dict() if self.chosen else None,
                "indistinguishable": [a.label() for a in self.alternatives],
                "candidates_tried": self.tried,
                "closest": None if self.best is None or self.chosen else
                {"candidate": self.best[0], "differ": self.best[1], "compared": self.best[2]},
                "stopped": self.stopped or None, "seconds": round(self.seconds, 2),
                "verified": self.verified}


def _emulate(cand: Candidate, case: Case, fn, inputs: dict, device):
    import torch
    from . import torch as mt
    d = {k: (v.to(device) if v is not None else None) for k, v in inputs.items()}
    with torch.no_grad(), _flags(case), mt.emulating(cand.profile(), strict=True):
        return fn(**d).cpu()


def calibrate_case(case: Case, native: Native, arch: str, *, trials: int = 3, probes: int = 2,
                   rows: int = 16, batches: int = 2, seed: int = 0, emulate_device="cpu",
                   seconds: float | None = None, log: Callable[[str], None] | None = None,
                   only: Sequence[str] | None = None) -> CaseResult:
    """The closed loop of one call (module docstring)."""
    import torch
    t0 = time.time()
    fn = op_fn(case)
    asked = [(f"probe {i}", probe_inputs(case, seed + i)) for i in range(probes)]
    asked += [(f"random {i}", random_inputs(case, seed + i)) for i in range(trials)]
    natives = []
    for _, inp in asked:
        natives.append(_out_subset(native.run(case, fn, inp), rows, batches))
    subs = [_subset(case, inp, rows, batches) for _, inp in asked]
    res = CaseResult(case, native.kernels(case, fn, asked[0][1]), [n for n, _ in asked])
    best = None
    for stage in (0, 1):
        alive = []
        for cand in candidates(case, arch, stage, only):
            if seconds is not None and time.time() - t0 > seconds:
                res.stopped = f"time limit of {seconds:g} s reached after {res.tried} candidates"
                break
            res.tried += 1
            ok = True
            for nat, sub in zip(natives, subs):
                try:
                    got = _emulate(cand, case, fn, sub, emulate_device)
                except (ValueError, RuntimeError) as e:        # a schedule that cannot run
                    if log:
                        log(f"  {cand.label()}: cannot run: {str(e).splitlines()[0][:160]}")
                    ok = False
                    break
                bad = _bits_equal(torch, got, nat)
                if bad:
                    if best is None or bad < best[1]:
                        best = (cand.label(), bad, nat.numel())
                    ok = False
                    break
            if ok:
                alive.append(cand)
        if alive:
            res.chosen, res.alternatives = alive[0], alive[1:]
            break
        if res.stopped:
            break
    res.best = best
    res.seconds = time.time() - t0
    if log:
        what = res.chosen.label() if res.chosen else (
            f"no candidate (closest {best[0]}: {best[1]} of {best[2]} differ)" if best else
            "no candidate")
        log(f"{case.describe()}: {what} [{res.tried} tried, {res.seconds:.1f} s]"
            + (f" kernels {', '.join(res.kernels[:2])}" if res.kernels else ""))
    return res


def calibrate(cases: Sequence[Case], native: Native, arch: str, *, log=None, **kw) -> list[CaseResult]:
    return [calibrate_case(c, native, arch, log=log, **kw) for c in cases]


# --------------------------------------------------------------------------------------------
# The profile


def _fmt_key(g: tuple) -> str:
    a, b, out, tf, fast, scaling = g
    s = a if a == b else f"{a}-{b}"
    if tf:
        s = "tf32"
    if out != a:
        s += f"-to-{out}"
    if fast is not None:
        s += ("-fast" if fast else "") + (f"-{scaling}" if scaling != "tensor" else "")
    return s


def _match(case: Case, exact: bool, ops: Sequence[str]) -> dict:
    m: dict[str, Any] = {"op": sorted(set(ops)), "a": case.a, "b": case.b, "out": case.out}
    if case.a == "f32":
        m["allow_tf32"] = case.allow_tf32
    if case.fast_accum is not None:
        m["fast_accum"] = bool(case.fast_accum)
        m["scaling"] = case.scaling
    if exact:
        m.update({"m": case.m, "n": case.n, "k": case.k, "batch": case.batch,
                  "layout_a": "col" if case.trans_a else "row",
                  "layout_b": "col" if case.trans_b else "row"})
    return m


def build_profile(results: Sequence[CaseResult], arch: str, facts: dict, *, pid: str,
                  trials: int, probes: int, rows: int) -> tuple[dict, list[str]]:
    """(the profile as a TOML-shaped dict, the calls that no candidate reproduced)."""
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    from . import __version__
    where = (f"mmaformal calibrate {date} on {facts.get('gpu', '?')} ({arch}), torch "
             f"{facts.get('torch', '?')}, {facts.get('runtime', '?')}, mmaformal {__version__}, "
             f"numpy {np.__version__}")
    asked = f"{probes} probe input(s) and {trials} random input(s), first {rows} rows compared"
    groups: dict[tuple, list[CaseResult]] = {}
    for r in results:
        groups.setdefault(r.case.group(), []).append(r)
    specific, general, missing = [], [], []
    for g, rs in groups.items():
        ok = [r for r in rs if r.chosen]
        missing += [r.case.describe() for r in rs if not r.chosen]
        if not ok:
            continue
        score: dict[Candidate, int] = {}
        for r in ok:
            for cand in [r.chosen, *r.alternatives]:
                key = dataclasses.replace(cand, rank=0)
                score[key] = score.get(key, 0) + 1
        top = max(score.items(), key=lambda kv: (kv[1], -kv[0].stage,
                                                 -min((c.rank for r in ok for c in [r.chosen, *r.alternatives]
                                                       if dataclasses.replace(c, rank=0) == kv[0]),
                                                      default=0)))[0]
        covered = [r for r in ok if any(dataclasses.replace(c, rank=0) == top
                                        for c in [r.chosen, *r.alternatives])]
        key = _fmt_key(g)
        for r in ok:
            if r in covered:
                continue
            c = r.case
            d = r.chosen.rule_dict(f"{key}-{c.op}-{'%dx' % c.batch if c.batch > 1 else ''}"
                                   f"{c.m}x{c.n}x{c.k}-{'t' if c.trans_a else 'n'}"
                                   f"{'t' if c.trans_b else 'n'}")
            d["status"] = "confirmed"
            d["provenance"] = (f"Source: {where}: {c.describe()}: bit-identical on {asked}"
                               + _evidence(r))
            d["match"] = _match(c, True, [c.op])
            specific.append(d)
        d = top.rule_dict(key)
        d["status"] = "hypothesis"
        d["default"] = True
        d["provenance"] = (f"Source: {where}: bit-identical on {asked} for "
                           + "; ".join(r.case.describe() + _evidence(r) for r in covered)
                           + (f"; not these calls of the same formats (rules of their own or none): "
                              + "; ".join(r.case.describe() for r in rs if r not in covered)
                              if len(covered) < len(rs) else ""))
        d["match"] = _match(covered[0].case, False, [r.case.op for r in covered])
        general.append(d)
    seen_ids: set[str] = set()
    rules = []
    for d in specific + general:
        base, i = d["id"], 2
        while d["id"] in seen_ids:
            d["id"] = f"{base}-{i}"
            i += 1
        seen_ids.add(d["id"])
        rules.append(d)
    prov = (f"Source: {where}; {len(results)} GEMM call(s), {asked}; each rule's schedule "
            f"reproduced its calls bit for bit")
    if missing:
        prov += "; reproduced by no candidate (no rule): " + "; ".join(missing)
    prof = {"profile": {"id": pid, "description": f"GEMMs as calibrated on {facts.get('gpu', arch)}",
                        "platform": f"{facts.get('gpu', '?')} ({arch}), torch "
                                    f"{facts.get('torch', '?')}, {facts.get('runtime', '?')}",
                        "status": "hypothesis", "provenance": prov},
            "rule": rules}
    return prof, missing


def _evidence(r: CaseResult) -> str:
    s = ""
    if r.kernels:
        s += f" (kernels: {', '.join(r.kernels[:4])})"
    if r.alternatives:
        s += (f" [not separated from: {', '.join(a.label() for a in r.alternatives[:3])}"
              f"{', ...' if len(r.alternatives) > 3 else ''}]")
    return s


def _tv(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_tv(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_tv(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def profile_toml(prof: dict, header: str = "") -> str:
    """TOML text of a profile dict (the subset of TOML profiles use)."""
    lines = [f"# {h}" for h in header.splitlines()] if header else []
    lines.append("[profile]")
    lines += [f"{k} = {_tv(v)}" for k, v in prof["profile"].items()]
    for r in prof["rule"]:
        lines += ["", "[[rule]]"]
        lines += [f"{k} = {_tv(v)}" for k, v in r.items() if not isinstance(v, dict)]
        for sub in ("match", "split", "epilogue"):
            if sub in r and r[sub]:
                lines.append(f"[rule.{sub}]")
                lines += [f"{k} = {_tv(v)}" for k, v in r[sub].items()]
    return "\n".join(lines) + "\n"


def verify(profile: P.Profile, results: Sequence[CaseResult], native: Native, *, rows: int,
           batches: int, seed: int, emulate_device) -> None:
    """Re-run every reproduced call under emulating(profile, strict=True) on a fresh random
    input; sets CaseResult.verified. The whole call is emulated (not the first `rows` rows, as
    in the search): the profile's shape-specific rules match the call's own M, N, K, so a row
    subset would fall to another rule. All of its output is compared."""
    import torch
    from . import torch as mt
    for r in results:
        if not r.chosen:
            continue
        c = r.case
        fn = op_fn(c)
        inp = random_inputs(c, seed + 97)
        nat = native.run(c, fn, inp)
        d = {k: (v.to(emulate_device) if v is not None else None) for k, v in inp.items()}
        with torch.no_grad(), _flags(c), mt.emulating(profile, strict=True):
            got = fn(**d).cpu()
        r.verified = _bits_equal(torch, got, nat) == 0


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
    kinds = {f: k for k, fs in mt._mm_fns().items() for f in fs if k in _TRACED}
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
    with torch.no_grad(), _flags(c0), Recorder():
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
        ops = mt._operands(kind, args, kwargs)
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
                y.dim() > 2 and nb > 1, mt._layout(x) == "col", mt._layout(y) == "col", False,
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
    if fa not in _FP8 or fb not in _FP8:
        return None
    out = mt.format_of(p.get("out_dtype") or a.dtype) or fa
    return Case("scaled_mm", fa, fb, out, int(a.shape[0]), int(b.shape[1]), int(a.shape[1]), 1,
                False, False, True, False, False, bool(p.get("use_fast_accum", False)),
                "tensor" if sa.numel() == 1 else "row")


# --------------------------------------------------------------------------------------------
# The verb


def add_parser(subparsers) -> argparse.ArgumentParser:
    from . import args as _args
    p = subparsers.add_parser(
        "calibrate", help="learn a platform profile on this GPU: which schedule reproduces each "
        "GEMM bit for bit (needs torch and a GPU)",
        description="Learn a platform profile by a closed loop: each GEMM of a model's forward "
        "pass (--model) or of a list of shapes (--shapes) runs natively on probe and random "
        "inputs and through every candidate schedule of mmaformal; a rule is written only for "
        "a schedule whose bits match on every input.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", metavar="SPEC", help="pkg.module:factory (returns (model, "
                     "example_inputs)) or hf:ConfigClass[:key=value,...] (transformers, random "
                     "weights)")
    src.add_argument("--shapes", metavar="SPECS", help="MxNxK:DTYPE[:n|t][:n|t][:TOKEN] "
                     "(comma separated) or a file of them; DTYPE f16 bf16 f32 tf32 e4m3 e5m2 "
                     "e4m3/e5m2; tokens: mm matmul bmm linear addmm baddbmm bias fast rowscale "
                     "out=FMT; BxMxNxK for a batch")
    p.add_argument("--out", metavar="FILE", type=_args.out_file,
                   help="where to write the profile TOML (default: printed)")
    p.add_argument("--trials", type=_args.positive_int, default=3,
                   help="random inputs per call after the probes (default 3)")
    p.add_argument("--probes", type=_args.positive_int, default=2,
                   help="probe inputs per call (default 2)")
    p.add_argument("--rows", type=_args.positive_int, default=16,
                   help="rows of each product compared (default 16)")
    p.add_argument("--dtype", choices=("f16", "bf16", "f32"),
                   help="--model: cast the model and its inputs to this dtype")
    p.add_argument("--tf32", action="store_true", help="allow TF32 for f32 GEMMs (--model)")
    p.add_argument("--tokens", type=_args.positive_int, default=64,
                   help="--model hf:...: sequence length of the random input (default 64)")
    p.add_argument("--arch", metavar="ARCH", help="catalog architecture (default: the GPU's)")
    p.add_argument("--id", metavar="ID", help="profile id (default ARCH-calibrated)")
    p.add_argument("--case-seconds", type=_args.seconds, default=None, metavar="S",
                   help="stop the search of one call after S seconds (default: no limit)")
    p.add_argument("--only", metavar="PATTERN", action="append",
                   help="candidate instructions limited to these names (fnmatch; repeatable)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    return p


def _needs_gpu():
    try:
        import torch
    except ImportError:
        raise ValueError("calibrate needs torch (pip install 'mmaformal[torch]') and a GPU") from None
    if not torch.cuda.is_available():
        raise ValueError("calibrate needs a GPU visible to torch (torch.cuda.is_available() "
                         "is False)")
    return torch


def _emulate_device(torch) -> str:
    """Where the candidates run: the GPU when mmaformal.cuda can use it (CUDA + CuPy), else
    the CPU (ROCm builds, no CuPy)."""
    if getattr(torch.version, "hip", None):
        return "cpu"
    try:
        from . import cuda
        return "cuda" if cuda.available()[0] else "cpu"
    except Exception:                       # noqa: BLE001
        return "cpu"


def run(args, native: Native | None = None) -> int:
    cases = parse_shapes(args.shapes) if args.shapes else None
    if args.arch:
        arch = isa.ALIASES.get(args.arch, args.arch)
        if arch not in isa.ARCHS:
            raise ValueError(f"--arch {args.arch!r}: not a catalog architecture ({', '.join(isa.ARCHS)})")
    notes: list[str] = []
    if native is None:
        torch = _needs_gpu()
        native = TorchNative("cuda")
        arch = isa.ALIASES.get(args.arch, args.arch) if args.arch else device_arch("cuda")
        edev = _emulate_device(torch)
    else:
        import torch  # noqa: F401  (the stand-in native runs on the CPU)
        arch = isa.ALIASES.get(args.arch, args.arch) if args.arch else "sm90"
        edev = "cpu"
    if cases is None:
        cases, notes = trace_model(args.model, "cuda" if isinstance(native, TorchNative) else "cpu",
                                   args.dtype, args.tf32, args.tokens)
    log = (lambda s: print(s, file=sys.stderr, flush=True)) if args.json else \
        (lambda s: print(s, flush=True))
    for n in notes:
        log(n)
    kw = dict(trials=args.trials, probes=args.probes, rows=args.rows, seed=args.seed,
              only=args.only)
    if not any(_instructions(c, arch, args.only) for c in cases):
        raise ValueError(f"no catalog instruction of {arch} takes the operands of these calls"
                         + (f" (--only {' '.join(args.only)})" if args.only else ""))
    results = calibrate(cases, native, arch, log=log, emulate_device=edev,
                        seconds=args.case_seconds, **kw)
    facts = native.describe()
    prof, missing = build_profile(results, arch, facts, pid=args.id or f"{arch}-calibrated",
                                  trials=args.trials, probes=args.probes, rows=args.rows)
    header = (f"Written by `mmaformal calibrate` ({'--model ' + args.model if args.model else '--shapes ' + args.shapes}).\n"
              "Each rule's schedule matched the native GEMM bit for bit on every input asked;\n"
              "shapes not measured are hypotheses (see profiles/README.md, \"Calibration\").")
    text = ""
    loaded = None
    if prof["rule"]:
        text = profile_toml(prof, header)
        import tomllib
        loaded = P.parse(tomllib.loads(text), args.out or "<calibrated profile>")
        verify(loaded, results, native, rows=args.rows, batches=2, seed=args.seed,
               emulate_device=edev)
        bad = [r.case.describe() for r in results if r.verified is False]
        if bad:
            print("mmaformal: internal error: the written profile does not reproduce "
                  + "; ".join(bad), file=sys.stderr)
            return 3
        if args.out:
            Path(args.out).write_text(text)
    rep = {"arch": arch, **facts, "profile": str(args.out) if args.out and text else None,
           "rules": len(prof["rule"]), "unreproduced": missing, "notes": notes,
           "calls": [r.to_json() for r in results]}
    if args.json:
        print(json.dumps(rep, indent=1))
    else:
        if text and not args.out:
            print(text, end="")
        print(f"{len(results)} call(s), {sum(1 for r in results if r.chosen)} reproduced, "
              f"{len(prof['rule'])} rule(s)" + (f"; wrote {args.out}" if args.out and text else "")
              + (f"; reproduced by no candidate: {'; '.join(missing)}" if missing else ""),
              file=sys.stderr if not args.out and text else sys.stdout)
    if not prof["rule"]:
        return 1
    return 1 if missing else 0
