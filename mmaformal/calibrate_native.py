"""Layer 5 front end, calibrate_native: the inputs asked of a GEMM call and who answers them.

The inputs of one call (module docstring of mmaformal.calibrate): probe inputs in the manner of
FPRev (``probe_inputs``) and random ones spread over a few binades (``random_inputs``), the op
that runs them (``op_fn``), the row subset the search compares (``subset``, ``out_subset``)
and the bitwise comparison of two outputs (``bits_differing``). The native op is pluggable
(``Native``): ``TorchNative`` runs it on the GPU (CUDA or ROCm builds of torch alike: only the
``torch.cuda`` API is used), ``EmulatedNative`` under a hidden profile on the CPU.

May import: numpy, mmaformal.calibrate_calls, mmaformal.profile, mmaformal.isa, and lazily
torch and mmaformal.torch (the emulated native executes its schedule there).

Invariant: inputs are a function of the call and the seed only (the same seed, the same bits),
and a native answers on the CPU (its outputs are CPU tensors, compared bit for bit).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import isa
from . import profile as P
from .calibrate_calls import Case, flags

__all__ = ["probe_inputs", "random_inputs", "op_fn", "subset", "out_subset", "bits_differing",
           "Native", "TorchNative", "EmulatedNative", "device_arch"]


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


def subset(c: Case, inp: dict, rows: int, batches: int) -> dict:
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


def out_subset(out, rows: int, batches: int):
    return out[:batches, :rows] if out.dim() == 3 else out[:rows]


def bits_differing(torch, u, v) -> int:
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
        with torch.no_grad(), flags(case):
            out = fn(**d)
            torch.cuda.synchronize(self.device)
        return out.cpu()

    def kernels(self, case, fn, inputs):
        torch = self.torch
        d = self._to(inputs)
        try:
            from torch.profiler import ProfilerActivity, profile
            with torch.no_grad(), flags(case), profile(activities=[ProfilerActivity.CUDA]) as pr:
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
        with torch.no_grad(), flags(case), mt.emulating(self.hidden, strict=True):
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
