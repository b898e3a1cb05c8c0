"""Layer 5 front end, accuracy: the numerical error of an instruction against the exact result.

May import: numpy, mmaformal.emulate, mmaformal.simulate (device placement), mmaformal.classes,
mmaformal.isa, mmaformal.theory, mmaformal.fp, mmaformal.args (never z3); mmaformal.cuda lazily
(the verb's --device); matplotlib lazily, only to draw (optional extra ``mmaformal[plot]``).

``study(instrs, dist=..., n=..., seed=...)`` draws n dot products of length K (default: the
least common multiple of the instructions' k; each instruction walks K in its own k-steps with
the accumulator carried, exactly as ``emulate.matmul`` does) from one distribution, rounds the
*same* float64 samples (RNE, saturating) to each instruction's operand formats, runs the
instruction's theory on them, and compares every output with the exact value of the inputs the
instruction received: err = d - (c + sum_k a_k b_k). Input quantization is therefore not an
error of the instruction; only its arithmetic (Table 9 of [Xie2025]: truncation in the fused sum,
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
N(0,100) ([Xie2025] sec. 3.1.4); adversarial: terms in +- pairs that nearly cancel (the mirrored
a_k is -a_j (1 + 2^-4 N(0,1)), magnitudes spread over 2^+-6) and c = -(sum of the rounded
products) (1 + 2^-10 N(0,1)), a large condition number; fig3: A, B ~ 1000 N(0,1), C ~ N(0,1)
([Xie2025] sec. 6.2.4 / Figure 3).

RZ twin ([Xie2025] sec. 6.2.4): for an instruction whose theory is TR-FDPA (AMD CDNA3
tf32/bf16/f16) ``twin=True`` adds the hypothetical instruction whose internal alignment rounding
(Algorithm 10 lines 14-15) is RZ instead of RD: ``Theory.replace(align_round="RZ")``. The RD
model shows a negative bias on fig3 inputs, the RZ twin none (tested).

Tiles and memory: ``study`` draws, rounds and runs at most TILE = 2^20 samples at a time
(whole rows; rows longer than TILE / LANES are cut into column chunks of LANES = 256 rows, the
accumulator carried and the exact sums kept per row), and keeps only the errors. Each sample is
a function of (dist, seed, K, row, column): grains of GRAIN = 2^12 samples have their own
generators, so a tiled study gives bit for bit the results of one whole draw. Peak memory is
at most about 0.3 GB + 160 bytes x 2^20 + 64 bytes x n x (instructions + twins)
(``memory_bound``; e.g. 0.5 GB for K = 2^20, n = 100); a study beyond 2^32 samples (n x K), or
whose bound exceeds the memory available, is refused with one line.

Block-scaled instructions run with unit scales (1.0). The verb is ``mmaformal accuracy``.

Device arrays: ``evaluate`` takes its float64 samples, and ``stats`` its errors, also as torch
tensors (CUDA or CPU), CuPy arrays or other CUDA ``__dlpack__`` objects (``simulate.placement``;
all on one device, else a one-line ValueError, as is a device array without a usable CUDA
back-end). The reference is exact host arithmetic (math.fsum / Fraction) by design, so the
samples are copied to the host once; the instruction's dot products then run on the GPU
(``device`` defaults to "auto" for device samples) and a Result holds host (numpy) errors:
statistics, not raw bits, so no result goes back to the device.

Invariant: the statistics are those of the exact errors of the instruction's own arithmetic on
the rounded samples, whatever the tiling, back-end or device.
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
from .emulate import SCALE_ONE, dot_lanes, to_float64
from .isa import Instruction
from .simulate import placement

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


#: samples per random grain: each grain (GRAIN // K whole rows, or one row's GRAIN columns when
#: K > GRAIN) is drawn by its own generator, seeded (seed, 0, grain index), so every sample is a
#: function of (dist, seed, K, row, column) alone: drawing in tiles of any shape gives the
#: bits of one whole draw
GRAIN = 1 << 12


def _check_sizes(dist: str, n: int, K: int) -> None:
    if dist not in DISTS:
        raise ValueError(f"unknown distribution {dist!r}; expected one of {', '.join(DISTS)}")
    if n < 1 or K < 1:
        raise ValueError(f"need n >= 1 and K >= 1, got n = {n}, K = {K}")


def _rng(seed: int, stream: int, index: int) -> np.random.Generator:
    if seed < 0:
        raise ValueError(f"--seed must be >= 0, got {seed}")
    return np.random.default_rng([seed, stream, index])


def _grain(dist: str, seed: int, K: int, g: int) -> dict:
    """The raw fields of grain g: x, y, w (rows, width) and z (rows,), or None where the grain
    holds no column 0 (or the distribution makes c later: adversarial). w is the adversarial
    mirror's relative noise (see `_samples`)."""
    if K <= GRAIN:
        rows, width, first = GRAIN // K, K, True
    else:
        gpr = -(-K // GRAIN)
        j = g % gpr
        rows, width, first = 1, min(GRAIN, K - j * GRAIN), j == 0
    rng = _rng(seed, 0, g)
    shp = (rows, width)
    w = z = None
    if dist == "normal":
        x, y = rng.standard_normal(shp), rng.standard_normal(shp)
        z = rng.standard_normal(rows) if first else None
    elif dist == "uniform":
        x, y = rng.uniform(-1, 1, shp), rng.uniform(-1, 1, shp)
        z = rng.uniform(-1, 1, rows) if first else None
    elif dist == "dnn":
        def d(shape):
            return rng.standard_normal(shape) + (rng.random(shape) < 0.001) * rng.normal(0, 100, shape)
        x, y = d(shp), d(shp)
        z = d(rows) if first else None
    elif dist == "fig3":
        x, y = 1000 * rng.standard_normal(shp), 1000 * rng.standard_normal(shp)
        z = rng.standard_normal(rows) if first else None
    else:  # adversarial
        x = rng.standard_normal(shp) * np.exp2(rng.integers(-6, 7, size=shp))
        y = rng.standard_normal(shp)
        w = rng.standard_normal(shp)
    return {"x": x, "y": y, "w": w, "z": z}


def _fields(dist: str, seed: int, K: int, r0: int, r1: int, c0: int, c1: int, memo: dict):
    """The raw grain fields over rows [r0, r1), columns [c0, c1): x, y, w (rows, cols) and
    z (rows,) (None unless c0 == 0 and the distribution draws c). memo: grains already drawn
    (by index), shared by the calls of one tile."""
    def grain(g):
        if g not in memo:
            memo[g] = _grain(dist, seed, K, g)
        return memo[g]

    if K <= GRAIN:
        gr = GRAIN // K
        gs = [grain(g) for g in range(r0 // gr, (r1 - 1) // gr + 1)]
        off = r0 - (r0 // gr) * gr
        out = {}
        for v in ("x", "y", "w"):
            out[v] = None if gs[0][v] is None else \
                np.concatenate([G[v] for G in gs])[off:off + r1 - r0, c0:c1]
        out["z"] = None if gs[0]["z"] is None or c0 else \
            np.concatenate([G["z"] for G in gs])[off:off + r1 - r0]
        return out
    gpr = -(-K // GRAIN)
    j0, j1 = c0 // GRAIN, (c1 - 1) // GRAIN
    lo, hi = c0 - j0 * GRAIN, c1 - j0 * GRAIN
    out = {v: [] for v in ("x", "y", "w", "z")}
    for i in range(r0, r1):
        gs = [grain(i * gpr + j) for j in range(j0, j1 + 1)]
        for v in ("x", "y", "w"):
            if gs[0][v] is not None:
                out[v].append(np.concatenate([G[v][0] for G in gs])[lo:hi])
        if c0 == 0 and gs[0]["z"] is not None:
            out["z"].append(gs[0]["z"][0])
        if len(memo) > 4 * (j1 - j0 + 1):            # a row's grains are not needed again
            memo.clear()
    return {v: (np.array(out[v]) if out[v] else None) for v in out}


def _samples(dist: str, seed: int, K: int, r0: int, r1: int, c0: int, c1: int):
    """float64 samples over rows [r0, r1), columns [c0, c1): x, y (rows, cols) and z (rows,)
    (None when c0 > 0, or for 'adversarial', whose c depends on the rounded products).

    adversarial: terms in +- pairs that nearly cancel: with h = K // 2, column h + j (j < h)
    holds x = -x_j (1 + 2^-4 w), y = y_j, x_j and y_j those of column j."""
    memo: dict = {}
    f = _fields(dist, seed, K, r0, r1, c0, c1, memo)
    if dist != "adversarial":
        return f["x"], f["y"], f["z"]
    x, y = f["x"].copy(), f["y"].copy()
    h = K // 2
    lo, hi = max(c0, h), min(c1, 2 * h)
    if lo < hi:
        src = f if lo - h >= c0 and hi - h <= c1 else _fields(dist, seed, K, r0, r1, lo - h, hi - h, memo)
        s0 = lo - h - c0 if src is f else 0
        x[:, lo - c0:hi - c0] = -src["x"][:, s0:s0 + hi - lo] * (1 + 2.0 ** -4 * f["w"][:, lo - c0:hi - c0])
        y[:, lo - c0:hi - c0] = src["y"][:, s0:s0 + hi - lo]
    return x, y, None


def sample(dist: str, n: int, K: int, seed: int = 0):
    """float64 samples (x (n, K), y (n, K), z (n,) or None) of a distribution, drawn whole;
    z is None for 'adversarial', whose c depends on the rounded products (made per
    instruction). `study` draws the same samples tile by tile (GRAIN)."""
    _check_sizes(dist, n, K)
    return _samples(dist, seed, K, 0, n, 0, K)


def _c_noise(seed: int, r0: int, r1: int) -> np.ndarray:
    """The adversarial c's relative noise of rows [r0, r1): N(0, 1), drawn in grains of GRAIN
    rows, each by its own generator (seed, 1, grain index)."""
    q0, q1 = r0 // GRAIN, (r1 - 1) // GRAIN
    z = np.concatenate([_rng(seed, 1, q).standard_normal(GRAIN) for q in range(q0, q1 + 1)])
    return z[r0 - q0 * GRAIN:r1 - q0 * GRAIN]


def _adversarial_c(s: np.ndarray, seed: int, r0: int) -> np.ndarray:
    """c = -(sum of the rounded products) (1 + 2^-10 N(0, 1)) of rows r0.. (s: the sums)."""
    return -s * (1 + 2.0 ** -10 * _c_noise(seed, r0, r0 + len(s)))


# --------------------------------------------------------------------------------------------
# Twins


def rz_twin(instr: "str | Instruction", theory=None):
    """The [Xie2025] sec. 6.2.4 twin: the instruction's TR-FDPA theory with its internal RD
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


def _exact_parts(terms: list) -> list:
    """A few floats whose sum is exactly sum(terms) (float64 values): math.fsum is correctly
    rounded, so s1 = fsum(terms), s2 = fsum(terms - s1), ... shrink by 2^-53 or more each and
    end at an exact 0; the parts of K-chunks then sum exactly, and fsum over them gives the
    bits of fsum over all the terms."""
    out: list = []
    while True:
        s = math.fsum(terms + [-v for v in out])
        if s == 0:
            return out
        out.append(s)


def _ulp(x: np.ndarray, fmt_name: str) -> np.ndarray:
    f = fp.fmt(fmt_name)
    _, e2 = np.frexp(np.abs(x))
    e = np.where(x == 0, f.emin, np.maximum(e2 - 1, f.emin))
    return np.exp2((e - f.t).astype(np.float64))


class _Run:
    """One instruction (or twin) of a study, fed tile by tile: a row block (R dot products) is
    walked in column chunks with the accumulator carried (D_0 = c, as `dot_lanes` walks K), the
    exact sums of the rounded products kept per row (`_exact_parts`, or Fractions), and the
    errors of the block appended when its last chunk is done. A block in one chunk (whole rows:
    K <= the tile) takes `_reference` on the tile directly."""

    def __init__(self, ins: Instruction, th, label: str, how: str, K: int, backend: str,
                 device: str, seed: int):
        self.ins, self.th, self.label, self.how, self.K = ins, th, label, how, K
        self.backend, self.device, self.seed = backend, device, seed
        self.errs: list = []
        self.ulps: list = []
        self.n = 0
        self.seconds = 0.0
        self.fmax = _max_finite(ins.d)

    def _round(self, x, y):
        a, b = from_float(self.ins.a, x), from_float(self.ins.b, y)
        return a, b, to_float64(a, self.ins.a), to_float64(b, self.ins.b)

    def _dot(self, a, b, c):
        ins = self.ins
        sc = {}
        if ins.scale:
            one = np.full((a.shape[0], a.shape[1] // ins.scale_block), SCALE_ONE[ins.scale],
                          dtype=np.uint8)
            sc = dict(scale_a=one, scale_b=one)
        return dot_lanes(ins, a, b, c, theory=self.th, backend=self.backend, device=self.device,
                         **sc)

    def _c(self, z, sums, r0):
        if z is None:
            z = _adversarial_c(sums, self.seed, r0)
        c = from_float(self.ins.c, z)
        return c, to_float64(c, self.ins.c)

    def whole(self, x, y, z, r0: int) -> None:
        """A row block in one chunk (whole rows)."""
        t0 = time.perf_counter()
        a, b, av, bv = self._round(x, y)
        sums = None
        if z is None:
            sums = np.array([math.fsum(r) for r in (av * bv).tolist()])
        c, cv = self._c(z, sums, r0)
        dv = to_float64(self._dot(a, b, c), self.ins.d)
        fin = np.isfinite(dv) & np.isfinite(cv) & np.all(np.isfinite(av), axis=1) & \
            np.all(np.isfinite(bv), axis=1)
        err, ex = _reference(dv[fin], cv[fin], av[fin], bv[fin], self.how)
        self._keep(len(dv), err, ex)
        self.seconds += time.perf_counter() - t0

    # -- a row block in several column chunks: begin, products (and c), dot, end
    def begin(self, R: int) -> None:
        self.R = R
        self.fin = np.ones(R, dtype=bool)
        self.parts = [[] for _ in range(R)] if self.how == "fsum" else [Fraction(0)] * R
        self.cur = self.cv = None

    def products(self, x, y):
        """Round a chunk and add its exact products to the rows' sums; the rounded bits."""
        t0 = time.perf_counter()
        a, b, av, bv = self._round(x, y)
        self.fin &= np.all(np.isfinite(av), axis=1) & np.all(np.isfinite(bv), axis=1)
        if self.how == "fsum":
            for r, row in enumerate((av * bv).tolist()):
                if self.fin[r]:
                    self.parts[r] = _exact_parts(self.parts[r] + row)
        else:
            for r, (ar, br) in enumerate(zip(av.tolist(), bv.tolist())):
                if self.fin[r]:
                    self.parts[r] += sum((Fraction(p) * Fraction(q) for p, q in zip(ar, br)),
                                         Fraction(0))
        self.seconds += time.perf_counter() - t0
        return a, b

    def set_c(self, z, r0: int) -> None:
        sums = None
        if z is None:
            sums = np.array([math.fsum(p) if self.how == "fsum" else float(p)
                             for p in self.parts])
        self.cur, self.cv = self._c(z, sums, r0)

    def dot(self, a, b) -> None:
        t0 = time.perf_counter()
        self.cur = self._dot(a, b, self.cur)
        self.seconds += time.perf_counter() - t0

    def end(self) -> None:
        t0 = time.perf_counter()
        dv = to_float64(self.cur, self.ins.d)
        fin = np.isfinite(dv) & np.isfinite(self.cv) & self.fin
        idx = np.flatnonzero(fin)
        err, ex = np.empty(len(idx)), np.empty(len(idx))
        for j, r in enumerate(idx.tolist()):
            d, c, p = float(dv[r]), float(self.cv[r]), self.parts[r]
            if self.how == "fsum":
                err[j] = math.fsum([d, -c] + [-v for v in p])
                ex[j] = math.fsum([c] + p)
            else:
                e = Fraction(c) + p
                ex[j], err[j] = float(e), float(Fraction(d) - e)
        self._keep(self.R, err, ex)
        self.parts = []
        self.seconds += time.perf_counter() - t0

    def _keep(self, rows: int, err, ex) -> None:
        ok = np.isfinite(ex) & np.isfinite(err) & (np.abs(ex) <= self.fmax)
        err, ex = err[ok], ex[ok]
        self.errs.append(err)
        self.ulps.append(err / _ulp(ex, self.ins.d))
        self.n += rows

    def result(self) -> Result:
        err = np.concatenate(self.errs) if self.errs else np.empty(0)
        ulp = np.concatenate(self.ulps) if self.ulps else np.empty(0)
        self.errs, self.ulps = [], []
        return Result(self.label, self.ins.name, self.th.id, self.th.describe(), self.how, self.K,
                      err, ulp, int(self.n - len(err)), self.seconds)


def _how(ins: Instruction, reference: str) -> str:
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {', '.join(REFERENCES)}, got {reference!r}")
    exact64 = _exact_in_f64(ins)
    how = ("fsum" if exact64 else "fraction") if reference == "auto" else reference
    if how == "fsum" and not exact64:
        raise ValueError(f"{ins.name}: products of {ins.a} x {ins.b} are not exact in float64; "
                         f"use reference 'fraction'")
    return how


def evaluate(instr: "str | Instruction", x, y, z, *, theory=None, label: str | None = None,
             reference: str = "auto", backend: str = "auto", seed: int = 0,
             device: "str | None" = None) -> Result:
    """One instruction (or a Theory object, e.g. a twin) on float64 samples x, y (n, K), z (n,)
    (None: the adversarial c, made from the rounded products), all at once (`study` walks
    the same computation in tiles). x, y, z: numpy arrays, or device arrays / torch tensors
    (copied to the host once: module docstring); device: "cpu", "cuda", "auto", or None
    (default: "auto" for device samples, else "cpu")."""
    ins = instr if isinstance(instr, Instruction) else isa.lookup(instr)
    th = _theory.default().resolve(ins, theory)
    pl = placement(ins.name, x=x, y=y, z=z)
    if device is None:
        device = "auto" if pl.on_device else "cpu"
    x, y, z = (_samples_in(pl.host(v, r, ins.name), r, ins.name)
               for v, r in ((x, "x"), (y, "y"), (z, "z")))
    if x.ndim != 2 or y.shape != x.shape or (z is not None and z.shape != x.shape[:1]):
        raise ValueError(f"{ins.name}: evaluate takes x and y of one shape (n, K) and z (n,) or "
                         f"None, got {x.shape}, {y.shape}, {None if z is None else z.shape}")
    n, K = x.shape
    if K % ins.k:
        raise ValueError(f"{ins.name}: K = {K} is not a multiple of its k = {ins.k}")
    run = _Run(ins, th, label or ins.name, _how(ins, reference), K, backend, device, seed)
    run.whole(x, y, z, 0)
    return run.result()


def _samples_in(v, role: str, where: str):
    """Samples (or errors) as a float64 numpy array (None stays None); other kinds of numbers
    are a one-line ValueError."""
    if v is None:
        return None
    v = np.asarray(v)
    if v.dtype.kind not in "fiu" and not v.dtype.name.startswith(("float", "bfloat")):
        raise ValueError(f"{where}: {role} must hold real numbers (float64 samples), got {v.dtype.name}")
    return v.astype(np.float64, copy=False)


def _max_finite(fmt_name: str) -> float:
    f = fp.fmt(fmt_name)
    return float(to_float64(np.array([f.max_code << f.pad]), f.name)[0])


def _lcm(xs: Sequence[int]) -> int:
    r = 1
    for v in xs:
        r = r * v // math.gcd(r, v)
    return r


#: samples per tile: a study draws, rounds and runs at most this many samples at a time
TILE = 1 << 20
#: a tile keeps at least this many dot products together (splitting long rows into column
#: chunks with the accumulator carried) so that the instruction runs on wide lanes
LANES = 256
#: the most samples (n x K) a study takes: at ~10^6-10^7 samples a second, beyond it runs for
#: hours
MAX_SAMPLES = 1 << 32
#: memory bound (bytes): a tile's working set (per sample: the float64 draws and grain
#: copies, rounded bits, float64 values, products and their Python floats), the fixed part
#: (interpreter, tables, compiled kernels), and per dot product and result the errors
#: kept for the statistics (err, err_ulp, their sort and temporaries)
BYTES_PER_SAMPLE = 160
BYTES_FIXED = 300 << 20
BYTES_PER_RESULT = 64


def memory_bound(n: int, K: int, runs: int = 1, kk: int = 1, tile: int | None = None) -> int:
    """Bytes a study of n dot products of length K (a multiple of kk) with `runs`
    instructions and twins uses at most (see TILE and the BYTES_ constants): fixed + a tile's
    samples + n x runs x per result."""
    R, C = _plan(n, K, kk, tile or TILE)
    return BYTES_FIXED + BYTES_PER_SAMPLE * R * C + BYTES_PER_RESULT * n * runs


def _available_memory() -> int | None:
    """MemAvailable of /proc/meminfo (bytes), else None (no limit known)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _plan(n: int, K: int, kk: int, tile: int) -> tuple[int, int]:
    """(rows R, columns C) of a tile: R x C <= tile where it can be; whole rows (C = K) when
    K <= tile / LANES; else at least LANES rows (or n) and C a multiple of kk."""
    R = min(n, max(LANES, tile // K, 1))
    C = min(K, max(kk, (tile // R) // kk * kk))
    if GRAIN < C < K and GRAIN % kk == 0:
        C = C // GRAIN * GRAIN                      # chunks of whole grains: each drawn once
    return R, C


def study(instrs: "Sequence[str | Instruction]", *, dist: str = "normal", n: int = 100_000,
          seed: int = 0, K: int | None = None, twin: bool = False, theory=None,
          reference: str = "auto", backend: str = "auto", device: str = "cpu",
          tile: int | None = None) -> list[Result]:
    """Errors of several instructions on the same samples (see the module docstring).

    theory applies to the first instruction; twin adds the RZ twin of every TR-FDPA one (at
    least one must have it).

    Works in tiles of at most `tile` (default TILE = 2^20) samples: rows of the draw, and for
    long K (K > tile / LANES) column chunks of LANES rows walked with the accumulator carried
    and the exact sums kept per row. Every sample is a function of (dist, seed, K, row,
    column) (GRAIN), so the results are bit for bit those of one whole draw
    (``evaluate(sample(...))``), whatever the tile. Memory: at most about
    ``memory_bound(n, K, runs)`` = 0.3 GB + 160 bytes x tile + 64 bytes x n x runs (runs:
    instructions and twins), e.g. 0.5 GB for n = 100, K = 2^20. A study beyond MAX_SAMPLES
    (2^32) samples, or whose bound exceeds the memory available, is refused (ValueError,
    one line)."""
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
    if seed < 0:
        raise ValueError(f"--seed must be >= 0, got {seed}")
    kk = _lcm([i.k for i in inss])
    if K is None:
        K = kk
    elif K < 1 or K % kk:
        raise ValueError(f"K = {K} must be a positive multiple of {kk} (the instructions' k: "
                         + ", ".join(f"{i.name} {i.k}" for i in inss) + ")")
    _check_sizes(dist, n, K)
    runs: list[_Run] = []
    for j, ins in enumerate(inss):
        th = _theory.default().resolve(ins, theory if j == 0 else None)
        how = _how(ins, reference)
        runs.append(_Run(ins, th, ins.name, how, K, backend, device, seed))
        if twin and "align_round" in th.param_dict:
            runs.append(_Run(ins, th.replace(align_round="RZ"), f"{ins.name} [RZ twin]", how, K,
                             backend, device, seed))
    if twin and not any(r.label.endswith("[RZ twin]") for r in runs):
        rz_twin(inss[0], theory)          # raises the explanatory ValueError
    if n * K > MAX_SAMPLES:
        raise ValueError(f"n x K = {n} x {K} = {n * K:.3g} samples is more than accuracy takes "
                         f"(at most 2^32 = {MAX_SAMPLES:.3g}); use a smaller --n or --k")
    need, avail = memory_bound(n, K, len(runs), kk, tile), _available_memory()
    if avail is not None and need > avail:
        raise ValueError(f"n = {n} dot products x {len(runs)} result(s) need about "
                         f"{need / 2**30:.1f} GiB, more than the {avail / 2**30:.1f} GiB "
                         f"available; use a smaller --n")
    tile = TILE if tile is None else tile
    if tile < 1:
        raise ValueError(f"tile must be >= 1, got {tile}")
    R, C = _plan(n, K, kk, tile)
    for r0 in range(0, n, R):
        r1 = min(n, r0 + R)
        if C == K:                                  # whole rows
            x, y, z = _samples(dist, seed, K, r0, r1, 0, K)
            for run in runs:
                run.whole(x, y, z, r0)
            continue
        for run in runs:
            run.begin(r1 - r0)
        if dist == "adversarial":                   # c needs the rows' sums first
            for c0 in range(0, K, C):
                x, y, _ = _samples(dist, seed, K, r0, r1, c0, min(K, c0 + C))
                for run in runs:
                    run.products(x, y)
            for run in runs:
                run.set_c(None, r0)
        for c0 in range(0, K, C):
            x, y, z = _samples(dist, seed, K, r0, r1, c0, min(K, c0 + C))
            for run in runs:
                if dist == "adversarial":
                    a, b, _, _ = run._round(x, y)
                else:
                    a, b = run.products(x, y)
                    if c0 == 0:
                        run.set_c(z, r0)
                run.dot(a, b)
        for run in runs:
            run.end()
    return [run.result() for run in runs]


def stats(err: np.ndarray, err_ulp: np.ndarray, nonfinite: int = 0) -> dict:
    """Summary statistics (see the module docstring); plain floats, JSON-ready. err, err_ulp:
    numpy arrays, or device arrays / torch tensors (read on the host)."""
    pl = placement("stats", err=err, err_ulp=err_ulp)
    err, err_ulp = (_samples_in(pl.host(v, r, "stats"), r, "stats")
                    for v, r in ((err, "err"), (err_ulp, "err_ulp")))
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
    from .args import out_file, positive_int
    q = subparsers.add_parser(
        "accuracy", help="error statistics of instructions against the exact result",
        description="Error d - exact of n random dot products (the same samples rounded to each "
                    "instruction's formats; exact = c + sum a*b of the rounded inputs), in "
                    "absolute terms and in ulps of D. fig3 with --rz-twin on "
                    "gfx942/v_mfma_f32_32x32x8_f16 reproduces [Xie2025] Figure 3. Works in "
                    "tiles of 2^20 samples (the results are those of one whole draw): peak "
                    "memory about 0.5 GB + 64 bytes x n x (instructions + twins); n x K beyond "
                    "2^32, or beyond the memory available, is refused (exit 2).")
    q.add_argument("instr")
    q.add_argument("--dist", choices=DISTS, default="normal")
    q.add_argument("--n", type=positive_int, default=100_000,
                   help="dot products (default 100000; 64 bytes of memory each per instruction)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--k", type=positive_int, metavar="K", dest="K",
                   help="dot-product length (default: lcm of the instructions' k)")
    q.add_argument("--compare", nargs="+", default=[], metavar="INSTR2",
                   help="more instructions on the same samples")
    q.add_argument("--rz-twin", action="store_true",
                   help="add the RZ twin of TR-FDPA instructions ([Xie2025] sec. 6.2.4)")
    q.add_argument("--theory", metavar="ID", help="theory of INSTR (default: primary)")
    q.add_argument("--reference", choices=REFERENCES, default="auto")
    q.add_argument("--plot", metavar="OUT.png", type=out_file,
                   help="write a histogram PNG (needs matplotlib; its folder must exist)")
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
