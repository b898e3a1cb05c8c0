"""Layer 5, query/probes: the probing steps of [Xie2025] sec. 3.1 as raw-bit tiles + a manifest.

    mmaformal probes INSTR|THEORY [--out DIR] [--instr NAME] [--solve] [--timeout T] [--json]

(without --out: the store's probes/<target>/, mmaformal.paths)

Writes, per feature, DIR/<feature>/A.npy, B.npy, C.npy (tiles (T, M, K), (T, K, N), (T, M, N)
of raw bits: the design's .npy form, run unchanged by `mmaformal simulate` and `mmaformal hw
run`; probe t is the dot product in row 0 / column 0 of tile t, zeros elsewhere, except the
independence tiles, which fill every row and column), and DIR/manifest.json: for each probe the
feature it tests, how it is built, its inputs (hex), the output each rival hypothesis predicts,
and the check that it separates what it claims to separate.

Features ([Xie2025] sec. 3.1.1-3.1.3, FPRev [22] extended to fused nodes):

    independence    Step 1: one random row/column/c repeated over the tile: all M x N equal
    order           Step 2: p_i = U, p_j = -U, all other summands v (c is summand K): d/v counts
                    the summands not swamped, which fixes the blocks fused together (L), their
                    chain order, k reordering and where c enters (fused into block 1 or added)
    precision       FusedSum(U, -U, eps) and Add(U, eps), eps = U 2^-j: the fused-sum F
    alignment       U - 1.5/0.5 eps, U + 1.5/0.5 eps: how aligned terms are rounded (RZ vs RD)
    output_rounding c = U plus products of 1/4 .. 3 output ulps, both signs: rho and its ties
    zero_exp        c = +-0, p0 = 2^e0, p1 = -2^-j scanned: the exponent a zero term takes
    normalization   subnormal x normal products (exact products need renormalisation)
    out_of_range    products and sums above the output range, and below it
    subnormal       subnormal c, subnormal products and subnormal results
    specials        Inf x 0, Inf - Inf, NaN operands with payloads, +-Inf with finite terms
    zero_sign       exact cancellation with c = +-0, all-zero inputs with signed zeros

Integer instructions (s8/u8/s4/u4/b1 with s32 accumulators) have their own features
(`INT_FEATURES`): independence, extremes (products of the format extremes: -128 * -128,
127 * -128, 255 * 255, -8 * -8, b1 patterns; accumulators INT32_MAX / INT32_MIN), overflow (c
within a few products of a bound, pushed over it: wrap vs .satfinite) and sat_step (c near a
bound, a first block that overflows and a later block that comes back: clamp at the end vs after
each block of L; rivals sat_at = "step" with L = K/4, K/2).

Sparse instructions (mma.sp, wgmma.sp, v_smfmac) take their probes as dense A rows (at most 2
non-zeros per group of 4, s4/u4 2 aligned pairs of 8; rows of the other features that break the pattern are dropped), and
get the feature `sparse`: U at k = 0, U 2^-j at k = 1, -U in a later group (one fused sum of
the kept terms, or blocks over the logical K that round U + U 2^-j first), and NaN / Inf in B
rows that the metadata prunes (seen only when all K terms are summed): sparse = "selected"
against "dense".

Rivals: every theory of theories/ that covers the instruction, plus the primary theory with the
feature's parameter changed (mutants as in distinguish: SPEC[F=24], the RD-twin, ...). Each
probe's predictions are computed concretely for every rival (numpy lanes over `Theory.dot`);
its check records which rivals it separates (the partition of the rival set by output bits).
Per feature, rival pairs that no probe separates are listed; with --solve each such pair is
handed to distinguish's solver: "equivalent" (unsat: no probe can separate them), a replayed
witness (which is then added as a probe), or "unknown" (time-out).

`dot_probes(ins)` gives the same dot products as two Batches (regular: finite results; special:
specials, overflow, zero results) for the pool of mmaformal.query.infer.

May import: numpy, fp, isa, theory, classes (from_float), query.frame / model / pool (Batch,
evaluate) / search. Invariant: every probe input is exact in its formats (built from
exactly representable values and checked by decoding back); infeasible probes are skipped.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from .. import fp, isa
from ..args import out_dir, seconds
from .frame import EXIT_BAD, EXIT_OK, BadInput
from .model import Model, hex_bits, mutate, resolve
from .pool import Batch, evaluate
from .search import build, search

__all__ = ["FEATURES", "INT_FEATURES", "features", "dot_probes", "build_probes", "rivals", "write", "add_parser", "run"]

FEATURES = ("independence", "order", "precision", "alignment", "output_rounding", "zero_exp",
            "normalization", "out_of_range", "subnormal", "specials", "zero_sign")
_SPECIAL_FEATURES = ("normalization", "out_of_range", "subnormal", "specials", "zero_sign")
INT_FEATURES = ("independence", "extremes", "overflow", "sat_step")


def features(ins: isa.Instruction) -> tuple[str, ...]:
    """The probe features of an instruction."""
    base = INT_FEATURES if ins.integer else FEATURES
    return base + (("sparse",) if ins.sparse and not ins.integer else ())
_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


# --------------------------------------------------------------------------------------------
# Exact values -> raw bits


def _bits1(f: fp.Format, v) -> int | None:
    """Raw bits of the exact value v (float64, or an int raw code) in format f, or None if v
    is not exactly a value of f (exact integer arithmetic on the fields; no rounding)."""
    if isinstance(v, int) and not isinstance(v, bool):      # a raw code (specials)
        return v
    sbit = (1 << (f.k - 1)) if f.signed else 0
    neg = math.copysign(1.0, v) < 0
    if neg and not f.signed:
        return None
    if v == 0.0:
        if neg and f.nan == "negzero":
            return None
        return (sbit if neg else 0) << f.pad
    if math.isinf(v):
        if not f.inf:
            return None
        return (f.inf_code | (sbit if neg else 0)) << f.pad if f.pad == 0 or f.inf_code < (1 << f.k) \
            else None
    m, e = math.frexp(abs(v))
    x = e - 1                                    # |v| in [2^x, 2^(x+1))
    if x < f.emin:
        if not f.subnormals:
            return None
        frac = abs(v) / 2.0 ** (f.emin - f.t)
        if frac != int(frac) or frac >= 1 << f.t:
            return None
        mag = int(frac)
    else:
        if x > f.emax:
            return None
        frac = abs(v) / 2.0 ** (x - f.t)
        if frac != int(frac):
            return None
        mag = ((x + f.bias) << f.t) | (int(frac) - (1 << f.t))
    if mag > f.max_code:
        return None
    return ((sbit if neg else 0) | mag) << f.pad


def _split(fa: fp.Format, fb: fp.Format, p: float) -> tuple[int, int] | None:
    """(a, b) raw bits with a * b = p exactly (p = 0 gives +0 * +1 with the sign of p)."""
    if isinstance(p, tuple):                       # (a value, b value) given explicitly
        a, b = _bits1(fa, p[0]), _bits1(fb, p[1])
        return None if a is None or b is None else (a, b)
    if p == 0.0:
        a, b = _bits1(fa, p), _bits1(fb, 1.0)
        return None if a is None or b is None else (a, b)
    m, e = math.frexp(abs(p))       # |p| = m 2^e, m in [0.5, 1)
    s = -1.0 if p < 0 else 1.0
    ebs = sorted(range(fb.emin - fb.t, fb.emax + 1), key=lambda eb: (abs((e - eb) - eb), eb))
    for eb in ebs:
        a, b = _bits1(fa, s * m * 2.0 ** (e - eb)), _bits1(fb, 2.0 ** eb)
        if a is not None and b is not None:
            return a, b
    return None


class _Builder:
    """Collects probes (products p_k and c as exact values) for one instruction."""

    def __init__(self, ins: isa.Instruction):
        self.ins = ins
        self.fa, self.fb, self.fc = fp.fmt(ins.a), fp.fmt(ins.b), fp.fmt(ins.c)
        self.fd = fp.fmt(ins.d)
        self.rows: dict[str, list] = {f: [] for f in features(ins)}

    def add(self, feature: str, desc: str, prods: list, c) -> bool:
        K = self.ins.k
        prods = list(prods) + [0.0] * (K - len(prods))
        if len(prods) > K:
            return False
        ab = [_split(self.fa, self.fb, p) for p in prods]
        cb = _bits1(self.fc, c)
        if cb is None or any(x is None for x in ab):
            return False
        if not self._sparse_ok([x[0] for x in ab]):
            return False
        self.rows[feature].append((desc, [x[0] for x in ab], [x[1] for x in ab], cb))
        return True

    def _sparse_ok(self, a: list) -> bool:
        """A dense A row of a sparse instruction keeps the 2:4 (1:2; s4/u4 4:8 in pairs) pattern."""
        if not self.ins.sparse:
            return True
        from ..sparse import row_ok
        return row_ok(self.ins, a)

    def add_raw(self, feature: str, desc: str, a: list, b: list, c: int) -> None:
        K = self.ins.k
        a = list(a) + [0] * (K - len(a))
        if not self._sparse_ok(a):
            return
        self.rows[feature].append((desc, a, list(b) + [0] * (K - len(b)), c))


def _range(bd: _Builder) -> tuple[int, int]:
    """(eu, ev): exponents of the large and the small summand of the FPRev construction."""
    fa, fb, fc, fd = bd.fa, bd.fb, bd.fc, bd.fd
    K = bd.ins.k
    hi = min(fa.emax + fb.emax, fc.emax, fd.emax) - 2 - max(1, math.ceil(math.log2(K + 1)))
    lo = max(fa.emin + fb.emin, fc.emin, fd.emin) + 1
    hi = min(hi, lo + 60)
    return hi, lo


def _ibits(f, v: int) -> int | None:
    """Raw bits of the integer v in integer format f, or None when out of range."""
    return v & ((1 << f.k) - 1) if f.lo <= v <= f.hi else None


def _int_probes(ins: isa.Instruction) -> _Builder:
    """The integer features (see the module docstring); every input is in range by
    construction (checked by _ibits)."""
    bd = _Builder(ins)
    fa, fb, fc = bd.fa, bd.fb, bd.fc
    K = ins.k
    MAX, MIN = fc.hi, fc.lo
    b1 = fa.name == "b1"

    def add(feature, desc, pairs, c):
        a = [_ibits(fa, x) for x, _ in pairs]
        b = [_ibits(fb, y) for _, y in pairs]
        cb = _ibits(fc, c)
        if cb is None or None in a or None in b:
            return
        bd.add_raw(feature, desc, a, b, cb)

    vals_a = sorted({fa.lo, fa.hi, 0, 1, min(fa.hi, 2), max(fa.lo, -1)})
    vals_b = sorted({fb.lo, fb.hi, 0, 1, min(fb.hi, 2), max(fb.lo, -1)})
    for x in vals_a:
        for y in vals_b:
            for c in (0, MAX, MIN):
                add("extremes", f"a0={x}, b0={y}, c={c}", [(x, y)], c)
                add("extremes", f"a{K - 1}={x}, b{K - 1}={y}, c={c}", [(0, 0)] * (K - 1) + [(x, y)], c)
    # every product at an extreme (the largest sums the instruction can form)
    for x, y in ((fa.lo, fb.lo), (fa.hi, fb.hi), (fa.lo, fb.hi), (fa.hi, fb.lo)):
        for c in (0, MAX, MIN, -1):
            add("extremes", f"all a={x}, b={y}, c={c}", [(x, y)] * K, c)
    # overflow: c within a few products of a bound, pushed over by n products
    big = max(((fa.lo, fb.lo), (fa.hi, fb.hi), (fa.lo, fb.hi), (fa.hi, fb.lo)),
              key=lambda p: p[0] * p[1])
    neg = min(((fa.lo, fb.hi), (fa.hi, fb.lo), (fa.lo, fb.lo)), key=lambda p: p[0] * p[1])
    pb, pn = big[0] * big[1], neg[0] * neg[1]
    for n in sorted({1, 2, K // 2, K}):
        for d in (0, 1, pb - 1, pb, n * pb - 1, n * pb):
            if pb > 0:
                add("overflow", f"c=INT32_MAX-{d}, {n} products {big[0]}*{big[1]}", [big] * n, MAX - d)
            if pn < 0:
                add("overflow", f"c=INT32_MIN+{d}, {n} products {neg[0]}*{neg[1]}", [neg] * n, MIN + d)
    if b1:
        for n in sorted({1, K // 2, K}):
            add("overflow", f"c=INT32_MAX, {n} ones", [(1, 0)] * n, MAX)
    # sat_step: block 1 overflows, a later block comes back (clamp at the end vs per block)
    if pb > 0 and pn < 0:
        for L in sorted({K // 4, K // 2} - {0}):
            for over in (1, pb, 3 * pb):
                for back in (1, 2, L):
                    first = [big] * L
                    later = [(0, 0)] * (K - L - back) + [neg] * back
                    if len(later) + L != K or K - L - back < 0:
                        continue
                    c = MAX - L * pb + over
                    add("sat_step", f"c={c}, products k<{L}: {big[0]}*{big[1]}, last {back}: "
                        f"{neg[0]}*{neg[1]}", first + later, c)
                    c2 = MIN - L * pn - over
                    add("sat_step", f"c={c2}, products k<{L}: {neg[0]}*{neg[1]}, last {back}: "
                        f"{big[0]}*{big[1]}", [neg] * L + [(0, 0)] * (K - L - back) + [big] * back, c2)
    return bd


def _sparse_probes(bd: _Builder, eu: int, ev: int) -> None:
    """Feature `sparse` (see the module docstring)."""
    ins = bd.ins
    K = ins.k
    G, kept = ins.sparsity
    U = 2.0 ** eu
    k_eps = 1 if kept > 1 else G                     # tf32 1:2: eps in the next pair
    for g2 in range(1, K // G):
        q = g2 * G
        if q <= k_eps:
            continue
        for j in range(6, 44):
            prods = [0.0] * K
            prods[0], prods[k_eps], prods[q] = U, U * 2.0 ** -j, -U
            bd.add("sparse", f"p0=U, p{k_eps}=U 2^-{j}, p{q}=-U (U=2^{eu})", prods, 0.0)
    # NaN / Inf in a B row that the metadata prunes
    one_a = _bits1(bd.fa, 1.0)
    one_b = _bits1(bd.fb, 1.0)
    cb = _bits1(bd.fc, 1.0)
    specials = [x for x in (bd.fb.inf and bd.fb.inf_code << bd.fb.pad,
                            bd.fb.nan != "none" and fp.default_nan(bd.fb)) if x]
    if one_a is None or one_b is None or cb is None:
        return
    for g in range(K // G):
        for sp in specials:
            a = [0] * K
            b = [0] * K
            a[g * G] = one_a
            b[g * G] = one_b
            b[g * G + G - 1] = sp                    # pruned: a is +0 there, metadata skips it
            bd.add_raw("sparse", f"a{g * G}=1, b{g * G}=1, b{g * G + G - 1}={hex(sp)} "
                       f"(pruned), c=1", a, b, cb)


def _probes_order(bd: _Builder, K, fa, fd, eu, ev, U, v) -> None:
    """Order (Step 2, FPRev with c as summand K)."""
    pairs = [(i, j) for i in range(K + 1) for j in range(K + 1) if i != j]
    if len(pairs) > 160:
        pairs = [(i, j) for (i, j) in pairs if i == 0 or j == K or i == K or abs(i - j) == 1
                 or (i % 4 == 0 and j % 4 == 0)]
    for i, j in pairs:
        s = [v] * (K + 1)
        s[i], s[j] = U, -U
        bd.add("order", f"p{i}=U, p{j}=-U, others v (U=2^{eu}, v=2^{ev}; p{K} is c)", s[:K], s[K])


def _probes_precision(bd: _Builder, K, fa, fd, eu, ev, U, v) -> None:
    """Precision (and alignment, below): FusedSum(U, -U, eps), Add(U, eps); at the front, at
    the back, through c. U = 2^eu, and also the largest exact product that the output range
    allows: with narrow operands (fp8: products 2^-18 .. 2^17) only a large U reaches
    eps = U 2^-F for F > 25."""
    etop = min(fa.emax + bd.fb.emax, fd.emax)
    for e in sorted({eu, etop} if etop > eu else {eu}):
        Ue, tag = 2.0 ** e, "U" if e == eu else f"2^{e}"
        for jexp in range(1, 48):
            eps = Ue * 2.0 ** -jexp
            bd.add("precision", f"FusedSum({tag}, -{tag}, {tag} 2^-{jexp}) in k 0..2", [Ue, -Ue, eps], 0.0)
            bd.add("precision", f"c={tag}, p0=-{tag}, p1={tag} 2^-{jexp}", [-Ue, eps], Ue)
            if K > 3:
                bd.add("precision", f"p{K - 1}={tag}, p{K - 2}=-{tag}, p{K - 3}={tag} 2^-{jexp}",
                       [0.0] * (K - 3) + [eps, -Ue, Ue], 0.0)
            bd.add("precision", f"Add({tag}, {tag} 2^-{jexp}), c = 0", [Ue, eps], 0.0)
        # alignment: U +- 1.5 / 0.5 eps
        for jexp in range(8, 44):
            eps = Ue * 2.0 ** -jexp
            for f in (1.5, 0.5, -1.5, -0.5):
                bd.add("alignment", f"{tag} + {f} * {tag} 2^-{jexp}", [Ue, f * eps], 0.0)
                bd.add("alignment", f"-{tag} + {-f} * {tag} 2^-{jexp}", [-Ue, -f * eps], 0.0)


def _probes_output_rounding(bd: _Builder, K, fa, fd, eu, ev, U, v) -> None:
    """Output rounding: c = U (output format), products of fractions of an output ulp."""
    for tout in sorted({fd.t, 13, 10, 7, 23}):
        ulp = U * 2.0 ** -tout
        for f in (0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 3.0):
            for s in (1.0, -1.0):
                bd.add("output_rounding", f"c={s:+.0f}U, p0={s * f} ulp(2^-{tout})", [s * f * ulp], s * U)
                bd.add("output_rounding", f"c=0, p0={s:+.0f}U, p1={s * f} ulp(2^-{tout})", [s * U, s * f * ulp], 0.0)


def _probes_zero_exp(bd: _Builder, K, fa, fd, eu, ev, U, v) -> None:
    """Zero exponent (generalises mmaformal.hw.zero_probes): c = +-0, p0 = 2^e0, p1 = -2^-j."""
    pmin = fa.emin + bd.fb.emin
    for e0 in sorted({ev + 2, ev + 10, fd.emin - 14, fd.emin - fd.t, fd.emin - fd.t - 2, -70,
                      -21, -10, eu - 4}):
        if e0 < pmin or e0 > eu:
            continue
        for d in range(1, 44):
            for c0 in (0.0, -0.0):
                for m0 in ((1.0, 1.5) if d < 30 else (1.0,)):
                    bd.add("zero_exp", f"c={c0}, p0={m0}*2^{e0}, p1=-2^{e0 - d}",
                           [m0 * 2.0 ** e0, -(2.0 ** (e0 - d))], c0)


def _probes_normalization(bd: _Builder, K, fa, fd, eu, ev, U, v) -> None:
    """Normalization: subnormal x normal products."""
    if fa.subnormals:
        sub = 2.0 ** (fa.emin - fa.t)
        for k in range(0, fa.t + 1):
            x = sub * (2 ** k + (1 if k else 0))
            for y in (1.0, 1.5, 2.0 ** min(fa.emax, 8)):
                bd.add("normalization", f"a0={x!r} (subnormal), b0={y}", [(x, y)], 0.0)
                bd.add("normalization", f"a0={x!r}, b0={y}, c=-2^{fa.emin}", [(x, y)], -(2.0 ** fa.emin))
        # a cancelling pair of subnormal x normal products and a tiny c: the alignment
        # exponent is the product's exponent field (e_a + e_b) or its leading one's (a
        # renormalised product, e.g. operands converted to a wider format first)
        cmin = 2.0 ** (bd.fc.emin - (bd.fc.t if bd.fc.subnormals else 0))    # smallest c
        fb = bd.fb
        big_b = 2.0 ** fb.emax * (1 + (fb.max_code & ((1 << fb.t) - 1)) / 2 ** fb.t)  # largest finite
        for x in (sub, sub * (2 ** fa.t - 1)):
            for y in (big_b, 1.0):
                for cm in (1.0, 3.0, -1.0):
                    bd.add("normalization", f"a0={x!r}, a1=-a0 (subnormal), b0=b1={y}, c={cm}*2^{math.log2(cmin):.0f}",
                           [(x, y), (-x, y)], cm * cmin)


def _probes_out_of_range(bd: _Builder, K, fa, fd, eu, ev, U, v) -> None:
    """Out of range: products and sums above / below the output range."""
    big = float(2.0 ** fa.emax * (2 - 2.0 ** -fa.t)) if fa.inf or fa.nan == "ieee" else None
    for nb in (1, 2, K):
        for s in (1.0, -1.0):
            top = 2.0 ** fd.emax
            bd.add("out_of_range", f"{nb} product(s) of {s:+.0f}2^{fd.emax}, c=2^{fd.emax}",
                   [s * top] * nb, 2.0 ** min(fd.emax, bd.fc.emax))
            bd.add("out_of_range", f"{nb} product(s) of {s:+.0f}2^{fd.emax - 1}", [s * 2.0 ** (fd.emax - 1)] * nb, 0.0)
    amax = _bits1(fa, float(np.float64(2.0 ** fa.emax)))
    if amax is not None:
        bd.add_raw("out_of_range", "a=b=2^emax of the operands, all k", [amax] * K, [_bits1(bd.fb, 2.0 ** min(bd.fb.emax, fa.emax)) or 0] * K, 0)
    for e in (fd.emin - fd.t - 1, fd.emin - fd.t, fd.emin - 1):
        bd.add("out_of_range", f"one product 2^{e} (below/at the output's range), c=0", [2.0 ** e], 0.0)


def _probes_subnormal(bd: _Builder, K, fa, fd, eu, ev, U, v) -> None:
    """Subnormal inputs and outputs."""
    fc = bd.fc
    if fc.subnormals:
        cs = 2.0 ** (fc.emin - fc.t)
        for m in (1, 3, 2 ** fc.t - 1):
            bd.add("subnormal", f"c = {m} * 2^{fc.emin - fc.t} (subnormal), no products", [], m * cs)
            bd.add("subnormal", f"c = -{m} * 2^{fc.emin - fc.t}, p0 = 2^{fc.emin}", [2.0 ** fc.emin], -m * cs)
    for e in range(fd.emin - fd.t, fd.emin + 1, max(1, fd.t // 4)):
        bd.add("subnormal", f"p0 = 1.5 * 2^{e} (subnormal result), c = 0", [1.5 * 2.0 ** e], 0.0)
        bd.add("subnormal", f"p0 = 2^{fd.emin}, p1 = -2^{e}", [2.0 ** fd.emin, -(2.0 ** e)], 0.0)


def _probes_specials(bd: _Builder, K, fa, fd, eu, ev, U, v) -> None:
    """Specials: Inf, NaN (payloads), Inf - Inf, Inf x 0."""
    inf = math.inf
    for c0 in (0.0, 1.0, inf, -inf):
        bd.add("specials", f"a0=Inf, b0=1, c={c0}", [(inf, 1.0)], c0)
        bd.add("specials", f"a0=Inf, b0=0, c={c0}", [(inf, 0.0)], c0)
        bd.add("specials", f"a0=Inf, b0=1, a1=-Inf, b1=1, c={c0}", [(inf, 1.0), (-inf, 1.0)], c0)
    for role in ("a", "c"):
        f = bd.fa if role == "a" else bd.fc
        if f.nan != "ieee":
            continue
        q = 1 << (f.t - 1)
        for payload in (q, q | 1, 1, q | 0x5):
            code = (f.inf_code | payload) << f.pad
            for neg in (0, 1):
                code_s = code | (neg << (f.storage - 1))
                if role == "a":
                    one = _bits1(bd.fb, 1.0)
                    cb = _bits1(bd.fc, 1.0)
                    bd.add_raw("specials", f"a0=NaN {hex(code_s)}, b0=1, c=1", [code_s], [one], cb)
                else:
                    one_a, one_b = _bits1(bd.fa, 1.0), _bits1(bd.fb, 1.0)
                    bd.add_raw("specials", f"c=NaN {hex(code_s)}, p0=1", [one_a], [one_b], code_s)


def _probes_zero_sign(bd: _Builder, K, fa, fd, eu, ev, U, v) -> None:
    """Zero sign: exact cancellation, signed zeros."""
    for c0 in (0.0, -0.0):
        bd.add("zero_sign", f"p0=1, p1=-1, c={c0}", [1.0, -1.0], c0)
        bd.add("zero_sign", f"p0=-0 (a=-0, b=+1), c={c0}", [-0.0], c0)
        bd.add("zero_sign", f"all products +0, c={c0}", [], c0)
        bd.add("zero_sign", f"all products -0 (a=-0, b=+1), c={c0}", [-0.0] * bd.ins.k, c0)
        bd.add("zero_sign", f"c={c0}, p0=U, p1=-U", [U, -U], c0)


def build_probes(ins: isa.Instruction) -> _Builder:
    """Every probe of every feature for instruction ins (the order of the features, and of the
    probes within each, is the order infer's pool asks them in). Integer instructions have
    their own features (_int_probes); sparse ones get the feature `sparse` first."""
    if ins.integer:
        return _int_probes(ins)
    bd = _Builder(ins)
    eu, ev = _range(bd)
    if ins.sparse:
        _sparse_probes(bd, eu, ev)
    frame = (ins.k, bd.fa, bd.fd, eu, ev, 2.0 ** eu, 2.0 ** ev)
    for add in (_probes_order, _probes_precision, _probes_output_rounding, _probes_zero_exp,
                _probes_normalization, _probes_out_of_range, _probes_subnormal, _probes_specials,
                _probes_zero_sign):
        add(bd, *frame)
    return bd


def probe_batch(ins, rows, feature):
    if not rows:
        return None
    st = lambda f: _UINT[fp.fmt(f).storage]
    a = np.array([r[1] for r in rows], dtype=st(ins.a))
    b = np.array([r[2] for r in rows], dtype=st(ins.b))
    c = np.array([r[3] for r in rows], dtype=st(ins.c))
    sa = sb = None
    if ins.scale:
        one = {"ue8m0": 0x7F, "ue4m3": 0x38}[ins.scale]
        sa = np.full((len(rows), ins.k // ins.scale_block), one, dtype=np.uint8)
        sb = sa.copy()
    return Batch(a, b, c, sa, sb, [f"probe:{feature}:{r[0]}" for r in rows])


def dot_probes(ins: isa.Instruction):
    """(regular, special) Batches of the dot-product probes (independence excluded); None
    where no probe is exact in the instruction's formats (e.g. e2m1)."""
    bd = build_probes(ins)
    feats = features(ins)
    reg = [x for x in (probe_batch(ins, bd.rows[f], f) for f in feats
                       if f not in _SPECIAL_FEATURES and f != "independence") if x]
    spec = [x for x in (probe_batch(ins, bd.rows[f], f) for f in _SPECIAL_FEATURES if f in bd.rows) if x]
    return (Batch.concat(reg) if reg else None), (Batch.concat(spec) if spec else None)


# --------------------------------------------------------------------------------------------
# Rivals


_FEATURE_MUTANTS = {
    "order": lambda p, ins, th: ([{"L": l} for l in (1, 2, 4, 8, 16, 32) if th.L and l != min(th.L, ins.k) and l <= ins.k]
                                 + [{"accumulate": "add"}, {"k_order": "mod4-pairs"}]),
    "precision": lambda p, ins, th: [{"F": p["F"] + d} for d in (-3, -2, -1, 1, 2, 3)] if "F" in p else [],
    "alignment": lambda p, ins, th: [{"align": "RD"}] + ([{"align_round": "RZ" if p["align_round"] == "RD" else "RD"}]
                                                         if "align_round" in p else []),
    "output_rounding": lambda p, ins, th: [{"rho": r} for r in ("RZ-FP32", "RNE-FP32", "RZ-E8M13", "RNE-FP16", "RNE-BF16")
                                           if "rho" in p and r != p["rho"]] + (
        [{"mode": m} for m in ("RZ", "RNE") if p.get("mode") != m] if "mode" in p else []),
    "zero_exp": lambda p, ins, th: [{"zero_exp": z} for z in ("excluded", "field", -133, -21) if "zero_exp" in p and z != p["zero_exp"]],
    "out_of_range": lambda p, ins, th: [{"overflow": o} for o in ("ieee", "inf", "saturate") if "overflow" in p and o != p["overflow"]],
    "specials": lambda p, ins, th: [{"nan": n} for n in (
        (("default", "propagate") if th.op in ("fma_chain", "e_fdpa", "ftz_addmul") else ())
        + ((0x7FFFFFFF, 0x7FC00000) if ins.d == "f32" else (0x7FFF, 0x7E00) if ins.d in ("f16", "bf16") else ()))
        if "nan" in p and n != p["nan"]],
    "overflow": lambda p, ins, th: [{"sat": v} for v in ("always", "never") if "sat" in p and v != p["sat"]],
    "sat_step": lambda p, ins, th: [{"sat_at": "step", "L": l} for l in sorted({ins.k // 4, ins.k // 2} - {0})
                                    if "sat_at" in p],
    "sparse": lambda p, ins, th: [{"sparse": m} for m in ("selected", "dense") if m != th.sparse],
    "zero_sign": lambda p, ins, th: [{"zero_sign": z} for z in ("ieee", "positive") if "zero_sign" in p and z != p["zero_sign"]],
}


def rivals(base: Model, feature: str | None = None) -> list[Model]:
    """The rival hypotheses: every theory that covers the instruction, and (for a feature) the
    base model with that feature's parameter changed. Mutants that do not fit are skipped."""
    from .. import theory as _theory
    ins = base.ins
    out = [base]
    for t in _theory.default().theories_for(ins):
        if t.id != base.theory.id:
            out.append(resolve(f"{t.id}@{ins.name}"))
    if feature in _FEATURE_MUTANTS:
        for ch in _FEATURE_MUTANTS[feature](base.theory.param_dict, ins, base.theory):
            try:
                if "align" in ch:
                    m = Model(f"{base.label}[align=RD]", base.theory, base.base, dict(base.changes), True, base.n)
                else:
                    m = mutate(base, ch)
                    m.theory.instr  # bound
            except (ValueError, TypeError, BadInput):
                continue
            out.append(m)
    seen, uniq = set(), []
    for m in out:
        if m.label not in seen:
            seen.add(m.label)
            uniq.append(m)
    return uniq


# --------------------------------------------------------------------------------------------
# Files and manifest


def _independence(ins: isa.Instruction, n: int = 4, seed: int = 0):
    from ..classes import generate
    rng = np.random.default_rng(seed)
    a, b, c = generate("normal", ins.a, ins.b, ins.c, ins.k, n, rng)
    if ins.sparse:                      # keep the pattern: the first `kept` of each group (s4/u4: pairs 0, 1)
        G, kept = ins.sparsity
        a[:, (np.arange(ins.k) % G) >= kept] = 0
    A = np.repeat(a[:, None, :], ins.m, axis=1)
    B = np.repeat(b[:, :, None], ins.n, axis=2)
    C = np.repeat(np.repeat(c[:, None, None], ins.m, axis=1), ins.n, axis=2)
    return A, B, C


def write(spec: str, out: str | Path, instr: str | None = None, solve: bool = False,
          solver: str = "bitwuzla", timeout: float = 30) -> dict:
    """Write the probe files and the manifest; returns the manifest."""
    t0 = time.perf_counter()
    base = resolve(spec, instr)
    ins = base.ins
    if ins.scale:
        raise BadInput(f"{ins.name} is block-scaled: probes are built for unscaled instructions "
                       f"(the scale factors are probed with scale 1.0 by the infer pool)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    bd = build_probes(ins)
    manifest = {"instruction": ins.name, "theory": base.spec(), "features": {}, "probes": [],
                "layout": "probe t is the dot product in row 0 / column 0 of tile t of "
                          "<feature>/A.npy, B.npy, C.npy; other elements are +0 (independence: "
                          "every row and column holds the probe)",
                "source": "[Xie2025] sec. 3.1 (CLFP steps 1-3), FPRev [22] extended to fused nodes"}
    for feature in features(ins):
        rv = rivals(base, feature)
        if feature == "independence":
            A, B, C = _independence(ins)
            batch = Batch(A[:, 0, :], B[:, :, 0], C[:, 0, 0], tags=["independence"] * len(C))
            descs = ["random row 0 / column 0 / c repeated over the whole tile: all M x N "
                     "outputs are equal"] * len(C)
        else:
            rows = bd.rows[feature]
            if not rows:
                manifest["features"][feature] = {"probes": 0, "note": "no exact probe exists in these formats"}
                continue
            batch = probe_batch(ins, rows, feature)
            A, B, C, _, _ = batch.tiles(ins)
            descs = [r[0] for r in rows]
        d = out / feature
        d.mkdir(exist_ok=True)
        for nm, arr in (("A", A), ("B", B), ("C", C)):
            np.save(d / f"{nm}.npy", arr)
        preds = {}
        for m in rv:
            try:
                preds[m.label] = evaluate(m, batch)
            except (ValueError, OverflowError, TypeError) as e:
                preds[m.label] = None
                manifest.setdefault("errors", []).append(f"{m.label}: {str(e).splitlines()[0]}")
        labels = [m.label for m in rv if preds[m.label] is not None]
        separated: set = set()
        for t in range(len(batch)):
            outs = {lab: int(preds[lab][t]) for lab in labels}
            classes: dict[int, list[str]] = {}
            for lab, v in outs.items():
                classes.setdefault(v, []).append(lab)
            part = sorted(classes.values())
            for x in range(len(part)):
                for y in range(x + 1, len(part)):
                    for u in part[x]:
                        for w in part[y]:
                            separated.add(frozenset((u, w)))
            manifest["probes"].append({
                "id": f"{feature}/{t}", "feature": feature, "tile": t, "files": f"{feature}/",
                "description": descs[t], "inputs": batch.witness(t, ins).to_json(),
                "predictions": {lab: hex_bits(v, ins.d) for lab, v in outs.items()},
                "check": {"method": "concrete over the rival set", "rivals": len(labels),
                          "classes": len(part), "separates": part if len(part) > 1 else []}})
        pairs = [(labels[x], labels[y]) for x in range(len(labels)) for y in range(x + 1, len(labels))
                 if frozenset((labels[x], labels[y])) not in separated]
        info = {"probes": len(batch), "rivals": labels, "separated_pairs": len(separated),
                "unseparated_pairs": [list(p) for p in pairs]}
        if solve and pairs:
            info["solver"] = _solve_pairs(rv, pairs, solver, timeout)
        manifest["features"][feature] = info
    manifest["seconds"] = round(time.perf_counter() - t0, 3)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _solve_pairs(rv: list[Model], pairs, solver, timeout) -> list[dict]:
    """Solver check of rival pairs that no probe separates: equivalent, witness, or unknown."""
    by = {m.label: m for m in rv}
    res = []
    for x, y in pairs[:12]:
        st, found, secs, last, _ = search(build(by[x], by[y]), 1, solver, timeout)
        r = {"pair": [x, y], "status": st, "seconds": round(secs, 3)}
        if found:
            r["witness"] = found[0].witness.to_json()
            r["outputs"] = {k: hex_bits(v, by[x].ins.d) for k, v in found[0].outputs.items()}
        res.append(r)
    return res


def add_parser(subparsers) -> argparse.ArgumentParser:
    q = subparsers.add_parser("probes", help="probe tiles ([Xie2025] sec. 3.1) + manifest",
                              description=__doc__.split("\n\n")[0])
    q.add_argument("target", metavar="INSTR|THEORY", help="an instruction or a model spec")
    q.add_argument("--out", metavar="DIR", type=out_dir,
                   help="where to write (default: the store's probes/<target>/; see --store): "
                        "an existing writable folder, or a new one in one")
    q.add_argument("--instr", metavar="NAME", help="instruction for a theory id")
    q.add_argument("--solve", action="store_true",
                   help="hand rival pairs that no probe separates to the solver")
    q.add_argument("--solver", default="bitwuzla")
    q.add_argument("--timeout", type=seconds, default=30)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=run)
    return q


def run(args) -> int:
    if not args.out:
        import re
        from .. import paths
        args.out = paths.store("probes") / re.sub(r"[^A-Za-z0-9._-]+", "_", args.target).strip("_")
    try:
        man = write(args.target, args.out, args.instr, args.solve, args.solver, args.timeout)
    except BadInput as e:
        print(f"mmaformal probes: {e}", file=sys.stderr)
        return EXIT_BAD
    if args.json:
        print(json.dumps({"instruction": man["instruction"], "out": str(args.out),
                          "probes": len(man["probes"]),
                          "features": {k: {kk: vv for kk, vv in v.items() if kk != "rivals"}
                                       for k, v in man["features"].items()},
                          "seconds": man["seconds"]}, indent=1))
    else:
        print(f"{man['instruction']}: {len(man['probes'])} probes in {args.out} "
              f"({man['seconds']:.1f} s)")
        for f, info in man["features"].items():
            if "rivals" in info:
                print(f"  {f:<16} {info['probes']:>4} probes, {len(info['rivals'])} rivals, "
                      f"{len(info['unseparated_pairs'])} rival pair(s) not separated")
            else:
                print(f"  {f:<16} {info.get('note', '')}")
    return EXIT_OK
