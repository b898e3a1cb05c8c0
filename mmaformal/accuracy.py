"""Layer 5 front end, accuracy: the numerical error of an instruction against the exact result.

May import: numpy, mmaformal.emulate, mmaformal.classes, mmaformal.isa, mmaformal.theory,
mmaformal.fp (never z3); matplotlib lazily, only to draw (optional extra ``mmaformal[plot]``).

``study(instrs, dist=..., n=..., seed=...)`` draws n dot products of length K (default: the
least common multiple of the instructions' k; each instruction walks K in its own k-steps with
the accumulator carried, exactly as ``emulate.matmul`` does) from one distribution, rounds the
*same* float64 samples (RNE, saturating) to each instruction's operand formats, runs the
instruction's theory on them, and compares every output with the exact value of the inputs the
instruction received: err = d - (c + sum_k a_k b_k). Input quantization is therefore not an
error of the instruction; only its arithmetic (Table 9 of seed 002: truncation in the fused sum,
internal roundings, output conversion) is measured.

Exact reference (decision): where every product a_k * b_k (times the block scales) is exact in
float64 -- true when the operand significands add up to <= 53 bits and the exponents stay in
float64's range, i.e. for every operand format here but f64 -- the error and the exact value are
computed by ``math.fsum`` over the exact float64 terms [d, -c, -p_0, ...] and [c, p_0, ...].
fsum is exact-then-rounded (Shewchuk), so err is the correctly rounded float64 of the exact
rational error: the statistics carry no reference error. Otherwise (f64 operands) the reference
is exact ``fractions.Fraction`` arithmetic, float() of the exact error (also correctly rounded,
so both references give the same float64 bits; ``reference=`` forces one; tests cross-check).

Statistics (``stats``), absolute and in ulps of the D format at the exact result
(ulp(x) = 2^(max(floor(log2|x|), emin) - t), for D = f32 also when rho is RZ-E8M13): bias
(the signed mean), std, mean |err|, median |err|, rms, max |err|, the fractions of negative, zero and
positive errors, and z = bias / (std / sqrt(n)), the bias in standard errors. Lanes whose
output or exact value is not finite are excluded and counted (``nonfinite``).

Distributions (``DISTS``): normal N(0,1); uniform U(-1,1); dnn N(0,1) + Bernoulli(0.001) *
N(0,100) (seed 002 sec. 3.1.4); adversarial: terms in +- pairs that nearly cancel (the mirrored
a_k is -a_j (1 + 2^-4 N(0,1)), magnitudes spread over 2^+-6) and c = -(sum of the rounded
products) (1 + 2^-10 N(0,1)), a large condition number; fig3: A, B ~ 1000 N(0,1), C ~ N(0,1)
(seed 002 sec. 6.2.4 / Figure 3).

RZ twin (seed 002 sec. 6.2.4): for an instruction whose theory is TR-FDPA (AMD CDNA3
tf32/bf16/f16) ``twin=True`` adds the hypothetical instruction whose internal alignment rounding
(Algorithm 10 lines 14-15) is RZ instead of RD: ``Theory.replace(align_round="RZ")``. The RD
model shows a negative bias on fig3 inputs, the RZ twin none (tested).

Block-scaled instructions run with unit scales (1.0). The verb is ``mmaformal accuracy``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from . import fp, isa
from . import theory as _theory
from .classes import from_float
from .emulate import _SCALE_ONE, dot_lanes, to_float64
from .isa import Instruction

__all__ = ["DISTS", "Result", "sample", "evaluate", "study", "stats", "plot", "rz_twin",
           "add_parser", "run", "REFERENCES"]

DISTS = ("normal", "dnn", "adversarial", "uniform", "fig3")
REFERENCES = ("auto", "fsum", "fraction")
UNITS = ("abs", "ulp")


@dataclasses.dataclass
class Result:
    """One instruction's (or twin's) errors on a study's samples."""

    label: str
    instruction: str
    theory: str
    model: str
    reference: str
    K: int
    err: np.ndarray          # absolute errors (float64) of the finite lanes
    err_ulp: np.ndarray      # the same in ulps of the D format at the exact result
    nonfinite: int
    seconds: float

    @property
    def stats(self) -> dict:
        return stats(self.err, self.err_ulp, self.nonfinite)

    def as_dict(self) -> dict:
        return {"label": self.label, "instruction": self.instruction, "theory": self.theory,
                "model": self.model, "reference": self.reference, "K": self.K,
                "seconds": round(self.seconds, 4), "stats": self.stats}


# --------------------------------------------------------------------------------------------
# Samples


def sample(dist: str, n: int, K: int, seed: int = 0):
    """float64 samples (x (n, K), y (n, K), z (n,) or None) of a distribution; z is None for
    'adversarial', whose c depends on the rounded products (made per instruction)."""
    if dist not in DISTS:
        raise ValueError(f"unknown distribution {dist!r}; expected one of {', '.join(DISTS)}")
    if n < 1 or K < 1:
        raise ValueError(f"need n >= 1 and K >= 1, got n = {n}, K = {K}")
    rng = np.random.default_rng(seed)
    shp = (n, K)
    if dist == "normal":
        return rng.standard_normal(shp), rng.standard_normal(shp), rng.standard_normal(n)
    if dist == "uniform":
        return rng.uniform(-1, 1, shp), rng.uniform(-1, 1, shp), rng.uniform(-1, 1, n)
    if dist == "dnn":
        def d(shape):
            return rng.standard_normal(shape) + (rng.random(shape) < 0.001) * rng.normal(0, 100, shape)
        return d(shp), d(shp), d(n)
    if dist == "fig3":
        return 1000 * rng.standard_normal(shp), 1000 * rng.standard_normal(shp), rng.standard_normal(n)
    # adversarial
    x = rng.standard_normal(shp) * np.exp2(rng.integers(-6, 7, size=shp))
    y = rng.standard_normal(shp)
    h = K // 2
    if h:
        x[:, h:2 * h] = -x[:, :h] * (1 + 2.0 ** -4 * rng.standard_normal((n, h)))
        y[:, h:2 * h] = y[:, :h]
    return x, y, None


def _adversarial_c(av: np.ndarray, bv: np.ndarray, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 1])
    s = np.array([math.fsum(r) for r in (av * bv).tolist()])
    return -s * (1 + 2.0 ** -10 * rng.standard_normal(len(s)))


# --------------------------------------------------------------------------------------------
# Twins


def rz_twin(instr: "str | Instruction", theory=None):
    """The seed 002 sec. 6.2.4 twin: the instruction's TR-FDPA theory with its internal RD
    alignment replaced by RZ (ValueError if the theory has no such rounding)."""
    ins = instr if isinstance(instr, Instruction) else isa.lookup(instr)
    th = _theory.default().resolve(ins, theory)
    if "align_round" not in th.param_dict:
        raise ValueError(f"{ins.name}: theory {th.id} ({th.describe()}) has no internal RD "
                         f"alignment to replace; the RZ twin exists for TR-FDPA theories "
                         f"(AMD CDNA3 tf32/bf16/f16)")
    return th.replace(align_round="RZ")


# --------------------------------------------------------------------------------------------
# Evaluation


def _exact_in_f64(ins: Instruction) -> bool:
    """Every product a*b (times unit scales) is exact in float64 (see the module docstring)."""
    fa, fb = fp.fmt(ins.a), fp.fmt(ins.b)
    if fa.p + fb.p > 53:
        return False
    lo = (fa.emin - fa.t) + (fb.emin - fb.t)
    hi = (fa.emax + 1) + (fb.emax + 1)
    return lo >= -1074 and hi <= 1023


def _reference(dv, cv, av, bv, how: str):
    """(err, exact) per lane, float64, for finite lanes."""
    n = len(dv)
    if how == "fsum":
        p = av * bv                                       # exact (checked by the caller)
        t_err = np.concatenate([dv[:, None], -cv[:, None], -p], axis=1).tolist()
        t_ex = np.concatenate([cv[:, None], p], axis=1).tolist()
        err = np.fromiter((math.fsum(r) for r in t_err), dtype=np.float64, count=n)
        ex = np.fromiter((math.fsum(r) for r in t_ex), dtype=np.float64, count=n)
        return err, ex
    err = np.empty(n)
    ex = np.empty(n)
    for i, (d, c, ar, br) in enumerate(zip(dv.tolist(), cv.tolist(), av.tolist(), bv.tolist())):
        e = Fraction(c) + sum((Fraction(x) * Fraction(y) for x, y in zip(ar, br)), Fraction(0))
        ex[i] = float(e)
        err[i] = float(Fraction(d) - e)
    return err, ex


def _ulp(x: np.ndarray, fmt_name: str) -> np.ndarray:
    f = fp.fmt(fmt_name)
    _, e2 = np.frexp(np.abs(x))
    e = np.where(x == 0, f.emin, np.maximum(e2 - 1, f.emin))
    return np.exp2((e - f.t).astype(np.float64))


def evaluate(instr: "str | Instruction", x: np.ndarray, y: np.ndarray, z: "np.ndarray | None", *,
             theory=None, label: str | None = None, reference: str = "auto",
             backend: str = "auto", seed: int = 0, device: str = "cpu") -> Result:
    """One instruction (or a Theory object, e.g. a twin) on float64 samples x, y (n, K), z (n,)
    (None: the adversarial c, made from the rounded products)."""
    ins = instr if isinstance(instr, Instruction) else isa.lookup(instr)
    th = _theory.default().resolve(ins, theory)
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {', '.join(REFERENCES)}, got {reference!r}")
    n, K = x.shape
    if K % ins.k:
        raise ValueError(f"{ins.name}: K = {K} is not a multiple of its k = {ins.k}")
    exact64 = _exact_in_f64(ins)
    how = ("fsum" if exact64 else "fraction") if reference == "auto" else reference
    if how == "fsum" and not exact64:
        raise ValueError(f"{ins.name}: products of {ins.a} x {ins.b} are not exact in float64; "
                         f"use reference 'fraction'")
    t0 = time.perf_counter()
    a = from_float(ins.a, x)
    b = from_float(ins.b, y)
    av, bv = to_float64(a, ins.a), to_float64(b, ins.b)
    if z is None:
        z = _adversarial_c(av, bv, seed)
    c = from_float(ins.c, z)
    cv = to_float64(c, ins.c)
    sc = {}
    if ins.scale:
        one = np.full((n, K // ins.scale_block), _SCALE_ONE[ins.scale], dtype=np.uint8)
        sc = dict(scale_a=one, scale_b=one)
    d = dot_lanes(ins, a, b, c, theory=th, backend=backend, device=device, **sc)
    dv = to_float64(d, ins.d)
    fin = np.isfinite(dv) & np.isfinite(cv) & np.all(np.isfinite(av), axis=1) & \
        np.all(np.isfinite(bv), axis=1)
    err, ex = _reference(dv[fin], cv[fin], av[fin], bv[fin], how)
    ok = np.isfinite(ex) & np.isfinite(err)
    fmax = _max_finite(ins.d)
    ok &= np.abs(ex) <= fmax
    err, ex = err[ok], ex[ok]
    nonfinite = int(n - len(err))
    ulp = err / _ulp(ex, ins.d)
    lab = label or ins.name
    return Result(lab, ins.name, th.id, th.describe(), how, K, err, ulp, nonfinite,
                  time.perf_counter() - t0)


def _max_finite(fmt_name: str) -> float:
    f = fp.fmt(fmt_name)
    return float(to_float64(np.array([f.max_code << f.pad]), f.name)[0])


def _lcm(xs: Sequence[int]) -> int:
    r = 1
    for v in xs:
        r = r * v // math.gcd(r, v)
    return r


def study(instrs: "Sequence[str | Instruction]", *, dist: str = "normal", n: int = 100_000,
          seed: int = 0, K: int | None = None, twin: bool = False, theory=None,
          reference: str = "auto", backend: str = "auto", device: str = "cpu") -> list[Result]:
    """Errors of several instructions on the same samples (see the module docstring).

    theory applies to the first instruction; twin adds the RZ twin of every TR-FDPA one (at
    least one must have it)."""
    if not instrs:
        raise ValueError("no instruction given")
    inss = [i if isinstance(i, Instruction) else isa.lookup(i) for i in instrs]
    for i in inss:    # issue 14: the integer forms are exact up to wrap / .satfinite
        if i.integer or i.sparse:
            raise ValueError(f"{i.name}: accuracy measures floating-point rounding error of dense "
                             f"instructions; use simulate/compare/emulate for "
                             + ("integer" if i.integer else "sparse") + " instructions")
    if n < 1:
        raise ValueError(f"--n must be >= 1, got {n}")
    kk = _lcm([i.k for i in inss])
    if K is None:
        K = kk
    elif K < 1 or K % kk:
        raise ValueError(f"K = {K} must be a positive multiple of {kk} (the instructions' k: "
                         + ", ".join(f"{i.name} {i.k}" for i in inss) + ")")
    x, y, z = sample(dist, n, K, seed)
    runs: list[tuple[Instruction, Any, str]] = []
    for j, ins in enumerate(inss):
        th = _theory.default().resolve(ins, theory if j == 0 else None)
        runs.append((ins, th, ins.name))
        if twin and "align_round" in th.param_dict:
            runs.append((ins, th.replace(align_round="RZ"), f"{ins.name} [RZ twin]"))
    if twin and not any(lbl.endswith("[RZ twin]") for _, _, lbl in runs):
        rz_twin(inss[0], theory)          # raises the explanatory ValueError
    return [evaluate(ins, x, y, z, theory=th, label=lbl, reference=reference, backend=backend,
                     seed=seed, device=device) for ins, th, lbl in runs]


def stats(err: np.ndarray, err_ulp: np.ndarray, nonfinite: int = 0) -> dict:
    """Summary statistics (see the module docstring); plain floats, JSON-ready."""
    n = int(len(err))
    out: dict[str, Any] = {"n": n, "nonfinite": int(nonfinite)}
    if n == 0:
        return out
    for key, e in (("abs", err), ("ulp", err_ulp)):
        bias = float(np.mean(e))
        std = float(np.std(e))
        out[key] = {"bias": bias, "std": std, "mean_abs": float(np.mean(np.abs(e))),
                    "median_abs": float(np.median(np.abs(e))), "rms": float(np.sqrt(np.mean(e * e))),
                    "max_abs": float(np.max(np.abs(e)))}
    std = out["abs"]["std"]
    out["z"] = float(out["abs"]["bias"] / (std / math.sqrt(n))) if std > 0 else 0.0
    out["frac_neg"] = float(np.mean(err < 0))
    out["frac_zero"] = float(np.mean(err == 0))
    out["frac_pos"] = float(np.mean(err > 0))
    return out


# --------------------------------------------------------------------------------------------
# Plot


def plot(results: Sequence[Result], path: str, unit: str = "abs", title: str | None = None) -> str:
    """Histograms of the errors (one panel per result, shared x-axis where the scales are
    comparable; the x range is +-1.05 times the 99th percentile of |err|, errors beyond it are
    piled at the edges and their share is in the legend) as a PNG (matplotlib, Agg). Returns
    the path written."""
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ValueError("plotting needs matplotlib: pip install 'mmaformal[plot]'") from None
    rs = [r for r in results if len(r.err)]
    if not rs:
        raise ValueError("nothing to plot: no finite errors")
    es = [r.err if unit == "abs" else r.err_ulp for r in rs]
    spans = [float(np.quantile(np.abs(e), 0.99)) or float(np.max(np.abs(e))) or 1.0 for e in es]
    share = max(spans) <= 10 * min(spans)
    fig, axes = plt.subplots(len(rs), 1, figsize=(7.5, 2.2 + 1.9 * len(rs)), sharex=share,
                             squeeze=False)
    R_all = max(spans) * 1.05
    for ax, r, e, span in zip(axes[:, 0], rs, es, spans):
        R = R_all if share else span * 1.05
        ax.hist(np.clip(e, -R, R), bins=np.linspace(-R, R, 102), color="C0" if "twin" not in r.label else "C1",
                alpha=0.85)
        m = float(np.mean(e))
        clipped = float(np.mean(np.abs(e) > R))
        ax.axvline(0, color="k", lw=0.8)
        ax.axvline(m, color="C3", lw=1.5, ls="--", label=f"mean {m:.3g}")
        if clipped:
            ax.plot([], [], " ", label=f"{100 * clipped:.2g}% beyond ±{R:.3g} (at the edges)")
        ax.set_title(f"{r.label}  ({r.model.split('(')[0]}, n = {len(e)})", fontsize=9)
        ax.set_ylabel("count")
        ax.legend(loc="upper right", fontsize=8)
    axes[-1, 0].set_xlabel("d - exact" + (" (ulps of D)" if unit == "ulp" else ""))
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    try:
        fig.savefig(path, format="png", dpi=110)
    except OSError as e:
        raise ValueError(f"--plot: cannot write {path!r}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
    return path


# --------------------------------------------------------------------------------------------
# CLI verb (wired by mmaformal.cli)


def add_parser(subparsers) -> Any:
    """Register the ``accuracy`` verb on an argparse subparsers object."""
    q = subparsers.add_parser(
        "accuracy", help="error statistics of instructions against the exact result",
        description="Error d - exact of n random dot products (the same samples rounded to each "
                    "instruction's formats; exact = c + sum a*b of the rounded inputs), in "
                    "absolute terms and in ulps of D. fig3 with --rz-twin on "
                    "gfx942/v_mfma_f32_32x32x8_f16 reproduces seed 002 Figure 3.")
    q.add_argument("instr")
    q.add_argument("--dist", choices=DISTS, default="normal")
    q.add_argument("--n", type=int, default=100_000, help="dot products (default 100000)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--k", type=int, metavar="K", dest="K",
                   help="dot-product length (default: lcm of the instructions' k)")
    q.add_argument("--compare", nargs="+", default=[], metavar="INSTR2",
                   help="more instructions on the same samples")
    q.add_argument("--rz-twin", action="store_true",
                   help="add the RZ twin of TR-FDPA instructions (seed 002 sec. 6.2.4)")
    q.add_argument("--theory", metavar="ID", help="theory of INSTR (default: primary)")
    q.add_argument("--reference", choices=REFERENCES, default="auto")
    q.add_argument("--plot", metavar="OUT.png", help="write a histogram PNG (needs matplotlib)")
    q.add_argument("--unit", choices=UNITS, default="abs", help="histogram x unit")
    q.add_argument("--backend", choices=("auto", "compiled", "numpy"), default="auto")
    q.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto",
                   help="where the dot products run: auto (default) takes an NVIDIA GPU when "
                        "CuPy can use one (the errors are the same bits either way)")
    q.add_argument("--json", action="store_true")
    return q


def run(args) -> int:
    """The ``accuracy`` verb. Bad input raises ValueError (the cli prints one line, exit 2)."""
    note = "cpu requested"
    if args.device != "cpu":
        from .cuda import resolve_device
        device, note = resolve_device(args.device)
        if device == "cuda":
            device = args.device     # "auto": an instruction without a GPU form runs on the CPU
    else:
        device = "cpu"
    res = study([args.instr] + list(args.compare), dist=args.dist, n=args.n, seed=args.seed,
                K=args.K, twin=args.rz_twin, theory=args.theory, reference=args.reference,
                backend=args.backend, device=device)
    K = res[0].K
    written = None
    if args.plot:
        title = f"{args.dist}, n = {args.n}, K = {K}, seed {args.seed}"
        written = plot(res, args.plot, unit=args.unit, title=title)
    if args.json:
        print(json.dumps({"dist": args.dist, "n": args.n, "seed": args.seed, "K": K,
                          "results": [r.as_dict() for r in res], "plot": written,
                          "device": "cpu" if device == "cpu" else "cuda", "device_note": note},
                         indent=1))
        return 0
    print(f"dist {args.dist}, n = {args.n}, K = {K}, seed {args.seed}; err = d - exact "
          f"(exact: c + sum a*b of the rounded inputs)")
    w = max(len(r.label) for r in res)
    print(f"{'':<{w}}  {'bias':>11} {'std':>10} {'max|err|':>10}  {'bias ulp':>9} "
          f"{'mean|e| ulp':>11} {'max ulp':>9} {'z(bias)':>8}  nonfinite")
    for r in res:
        s = r.stats
        if not s["n"]:
            print(f"{r.label:<{w}}  (no finite lanes; {s['nonfinite']} excluded)")
            continue
        a, u = s["abs"], s["ulp"]
        print(f"{r.label:<{w}}  {a['bias']:>11.4g} {a['std']:>10.4g} {a['max_abs']:>10.4g}  "
              f"{u['bias']:>9.4f} {u['mean_abs']:>11.4f} {u['max_abs']:>9.3g} {s['z']:>8.1f}  "
              f"{s['nonfinite']}")
    if written:
        print(f"wrote {written}")
    return 0
