"""Differential run of `mmaformal.simulate` against mmasim 2.1.1 (MMA-Sim), bit for bit.

Benchmark only: mmasim needs torch and lives in the benchmark venv (bench/setup_mmasim.sh,
default /work/benchenv); it is never a dependency of mmaformal, and mmaformal never imports it.
This file imports both (mmaformal from this checkout) and shares no arithmetic with either.

    /work/benchenv/bin/python bench/bench_mmasim_diff.py [--tiles T] [--only GLOB] [--pairs all]
        [--classes C1,C2]

Instructions: every instruction of the mmaformal catalog that mmasim also models (mma, wgmma,
tcgen05.mma, block-scaled mma and tcgen05.mma, mfma), one per (arch, family, kind, operand and
output types, K): the smallest M*N shape of wgmma/tcgen05 stands for the others (N only repeats
the same dot product). fp8/fp6/fp4 type pairs: the same-type pairs and e4m3 x e2m1, unless
`--pairs all`. mmasim's adapter is bench/mmasim_adapter.py.

Inputs: raw bits of every input class of `mmaformal.classes` (normal, uniform, dnn, cancel, bits,
sparse, subnormal, special, overflow, swamping) and one more, `tiny`: products near the exponent
mmasim gives zero terms (2^-160..2^-110 for f32 out, 2^-50..2^-10 for f16 out), half of all
elements and of c +-0, and tiny scales, where that exponent shows. Each class fills T tiles of the instruction's shape; every
element (t, i, j) of D is a dot product that both simulators compute (mmasim through its batch
`dpa` path on row A[t, i, :], column B[t, :, j], c = C[t, i, j] and the row/column scales).

Three classes are built dot product by dot product (`row_inputs`): `subtiny` (products and c
near the smallest subnormal of the output format, subnormal operands, +- pairs cancelling next
to tiny products, tiny scales), `zeros` (most products zero, +0/-0 mixes, all-zero rows, c +-0
with nonzero products, exact cancellation to zero, a zero first k-block) and, for the same-type
gfx942 TR/GTR forms, `neartie` (tests/test_tr_tail.py's inputs next to the RNE ties where the two
readings of the TR/GTR tail differ). Last comes the probe set of `mmaformal probes`
(mmaformal.query.probes: edge cases per feature, among them the zero-term exponent scans that
pinned the H200's values), class `probes`. `--classes a,b` runs only those classes.

Every rival theory of the primary (e.g. `gfx942.<form>.mmasim-tail`) runs on the same inputs;
the bench prints, per rival, how many dot products differ from mmasim, and its value
differences (NaN encoding and zero sign set aside) with examples.

Every difference is classified: `nan-encoding` (both NaN, other bits), `signed-zero` (+0 vs -0),
`value` (anything else); value differences are further tagged by the rule that explains them
(docs/mmasim-notes.md sec. 6): the bench re-runs the differing dot products through a named
mmaformal variant of the theory (a parameter set to mmasim's choice) and counts those the variant
reproduces. A value difference that no rule explains is printed as `UNEXPLAINED` with its inputs.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CLASSES_EXTRA = ("tiny",)
SMALL = {"e4m3", "e5m2", "e3m2", "e2m3", "e2m1"}
KEEP_PAIRS = {("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e3m2", "e3m2"), ("e2m3", "e2m3"),
              ("e2m1", "e2m1"), ("e4m3", "e2m1")}


def mmasim_name(ins) -> tuple[str, str]:
    """(mmasim arch, mmasim qualifier) for an mmaformal instruction."""
    from mmasim_adapter import canonical_arch
    q = ins.qualifier
    if ins.scale:  # kind::X.block_scale.scale_vec::NX -> kind::X.blockB (mmasim's own form)
        q = re.sub(r"\.block_scale\.scale_vec::\d+X", f".block{ins.scale_block}", q)
    return canonical_arch(ins.arch), q


def representatives(pairs_all: bool, only: str | None):
    from mmaformal import isa
    from mmasim_adapter import make_op
    reps: dict[tuple, object] = {}
    skipped = Counter()
    for name, ins in isa.catalog().items():
        if only and not fnmatch.fnmatch(name, only):
            continue
        if not pairs_all and ins.a in SMALL and ins.b in SMALL and (ins.a, ins.b) not in KEEP_PAIRS:
            continue
        arch, q = mmasim_name(ins)
        try:
            op = make_op(arch, q)
        except BaseException:  # mmasim asserts on what it does not model
            skipped[ins.arch] += 1
            continue
        if getattr(op, "k", ins.k) != ins.k:
            skipped[ins.arch] += 1
            continue
        shape_free = re.sub(r"m\d+n\d+k", "mNk", name) if ins.family in ("wgmma", "tcgen05") else name
        key = (shape_free, ins.k)
        if key not in reps or ins.m * ins.n < reps[key].m * reps[key].n:
            reps[key] = ins
    return sorted(reps.values(), key=lambda i: i.name), skipped


def _tiny(f, rng, shape, lo, hi, zero_frac):
    """Raw bits of values +-(1 + U) * 2^E, E uniform in [lo, hi] (rounded into the format,
    which may clamp them to its range), a fraction `zero_frac` of them +-0."""
    from mmaformal import classes
    E = np.floor(rng.uniform(lo, hi, size=shape))
    v = (1 + rng.random(shape)) * np.exp2(E) * np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    v[rng.random(shape) < zero_frac] = 0.0
    top = (2 - 2.0 ** -max(f.t, 1)) * 2.0 ** min(f.emax, 1000)
    bits = classes.from_float(f, np.clip(v, -top, top))
    neg0 = (v == 0) & (rng.random(shape) < 0.5) & f.signed & (f.nan != "negzero")  # fnuz 0x80 is NaN
    bits[neg0] |= np.asarray(1 << (f.k - 1 + f.pad)).astype(bits.dtype)
    return bits


ROW_CLASSES = ("subtiny", "zeros", "neartie")


def _signed_zero(f, shape, rng):
    """Raw bits of +-0 (-0 only where the format has one: not fnuz, where 0x80 is NaN)."""
    z = np.zeros(shape, np.uint64)
    if f.signed and f.nan != "negzero":
        z[rng.random(shape) < 0.5] = np.uint64(1 << (f.k - 1 + f.pad))
    return z


def _negated(f, x):
    """x with its sign flipped where it is nonzero (a -0 in fnuz would be the NaN 0x80)."""
    mag = x & np.uint64(((1 << (f.k - 1)) - 1) << f.pad)
    return np.where(mag != 0, x ^ np.uint64(1 << (f.k - 1 + f.pad)), x)


def _vals_bits(f, rng, E, mbits=3, neg=0.5):
    """Raw bits of +-(1 + j 2^-m) 2^E (m = min(mbits, t) random fraction bits, half of them with
    a full random fraction), rounded into f (values below its range round to 0 or its smallest
    subnormal, values above saturate)."""
    from mmaformal import classes
    E = np.asarray(E, np.float64)
    m = min(mbits, f.t)
    few = 1 + rng.integers(0, 1 << m, size=E.shape) / float(1 << m) if m else np.ones(E.shape)
    full = 1 + rng.random(E.shape)
    mant = np.where(rng.random(E.shape) < 0.5, few, full)
    v = mant * np.exp2(E) * np.where(rng.random(E.shape) < neg, -1.0, 1.0)
    top = (2 - 2.0 ** -max(f.t, 1)) * 2.0 ** min(f.emax, 1000)
    return classes.from_float(f, np.clip(v, -top, top)).astype(np.uint64)


def _split(fa, fb, Ep, rng, spread=3):
    """Exponents (Ea, Eb) with Ea + Eb = Ep where the formats allow (each clamped to its format's
    range, subnormals included)."""
    Ea = np.floor(Ep / 2) + rng.integers(-spread, spread + 1, size=Ep.shape)
    Ea = np.clip(Ea, fa.emin - fa.t, fa.emax)
    Eb = np.clip(Ep - Ea, fb.emin - fb.t, fb.emax)
    return Ea, Eb


def _tiny_c(fc, fo, rng, n):
    """c near the smallest subnormal of the output format: +-k 2^(emin - t) (k 1..16), +-0, or
    a value just above 2^emin of the output (each a third)."""
    from mmaformal import classes
    u = rng.random(n)
    k = rng.integers(1, 17, size=n) * np.exp2(fo.emin - fo.t)
    near = (1 + rng.integers(0, 8, size=n) / 8) * np.exp2(fo.emin + rng.integers(-3, 3, size=n))
    v = np.where(u < 0.5, k, near) * np.where(rng.random(n) < 0.5, -1.0, 1.0)
    bits = classes.from_float(fc, v).astype(np.uint64)
    zero = u < 0.33
    bits[zero] = _signed_zero(fc, int(zero.sum()), rng)
    return bits


def row_inputs(ins, klass, n, rng):
    """n dot products built row by row (a, b (n, K), c (n,), scales (n, K/block) or None) for
    the classes that need control over each dot product:

    subtiny  tiny magnitudes: products near the smallest subnormal of the OUTPUT format
             (2^-155..2^-124 for f32 out, 2^-30..2^-12 for f16 out; clamped where the operand
             formats cannot reach so low), subnormal operands times values near 1 or tiny,
             large products that cancel in +- pairs next to tiny ones, and zero products with
             only a tiny c; c a few ulps of the output's smallest subnormal, +-0, or just above
             its emin; scaled instructions: operands near 1 with tiny scales (ue8m0 2^-78..2^-68,
             the smallest ue4m3).
    zeros    many zeros: most products zero (+0/-0 operands against finite, also huge, ones),
             all-zero rows with c +-0 / normal / tiny, c +-0 with nonzero products, nonzero
             products that cancel exactly (c +-0), and a first k-block of zeros (chains).
    neartie  (gfx942 TR/GTR only, same-type forms) the near-tie inputs of tests/test_tr_tail.py
             that separate the two readings of the TR/GTR tail, in the last L columns.
    """
    from mmaformal import fp
    fa, fb, fc, fo = fp.fmt(ins.a), fp.fmt(ins.b), fp.fmt(ins.c), fp.fmt(ins.d)
    K = ins.k
    dt = lambda f: {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[f.storage]  # noqa: E731
    sa = sb = None
    if klass == "neartie":
        if ins.vendor != "amd" or ins.arch != "gfx942" or ins.a != ins.b or \
                ins.a not in ("f16", "bf16", "tf32", "e4m3fnuz", "e5m2fnuz"):
            return None
        sys.path.insert(0, str(ROOT / "tests"))
        from test_tr_tail import _near_tie_inputs
        L = min(K, 16 if ins.a.startswith("e") else (4 if ins.a == "tf32" else 8))
        A, B, C = _near_tie_inputs(rng, ins.a, L, n)
        a = np.zeros((n, K), np.uint64); a[:, K - L:] = A
        b = np.zeros((n, K), np.uint64); b[:, K - L:] = B
        return a.astype(dt(fa)), b.astype(dt(fb)), C.astype(dt(fc)), None, None
    mode = rng.integers(0, 100, size=n)
    a = np.zeros((n, K), np.uint64)
    b = np.zeros((n, K), np.uint64)
    c = np.zeros(n, np.uint64)
    if klass == "subtiny":
        floor = fo.emin - fo.t                 # exponent of the output's smallest subnormal
        scaled = bool(ins.scale)
        Ep = rng.integers(floor - 6, fo.emin + 3, size=(n, K)).astype(np.float64)
        if scaled:
            Ep = rng.integers(-3, 4, size=(n, K)).astype(np.float64)
        Ea, Eb = _split(fa, fb, Ep, rng)
        a[:] = _vals_bits(fa, rng, Ea)
        b[:] = _vals_bits(fb, rng, Eb)
        c[:] = _tiny_c(fc, fo, rng, n)
        # a third of the products zero
        z = rng.random((n, K)) < 0.3
        a[z] = _signed_zero(fa, int(z.sum()), rng)
        # mode 40..59: subnormal a (field 0, random fraction), b near 1 or tiny
        r = (mode >= 40) & (mode < 60)
        if r.any():
            sub = rng.integers(1, max(2, 1 << fa.t), size=(int(r.sum()), K)).astype(np.uint64) << np.uint64(fa.pad)
            sub |= np.where(rng.random(sub.shape) < 0.5, np.uint64(1 << (fa.k - 1 + fa.pad)), np.uint64(0))
            a[r] = sub
            Eb2 = np.where(rng.random(sub.shape) < 0.5, rng.integers(-2, 3, size=sub.shape),
                           rng.integers(fb.emin - fb.t, fb.emin + 4, size=sub.shape)).astype(np.float64)
            b[r] = _vals_bits(fb, rng, Eb2)
        # mode 60..79: +- pairs of products near 1 that cancel, next to the tiny ones
        r = np.nonzero((mode >= 60) & (mode < 80))[0]
        if len(r) and K >= 2:
            h = max(1, K // 4)
            big = _vals_bits(fa, rng, rng.integers(-2, 3, size=(len(r), h)), neg=0.5)
            bb = _vals_bits(fb, rng, rng.integers(-2, 3, size=(len(r), h)))
            a[r, :h] = big
            b[r, :h] = bb
            a[r, h:2 * h] = _negated(fa, big)
            b[r, h:2 * h] = bb
        # mode 80..99: every product zero (or one tiny one), only c nonzero
        r = np.nonzero(mode >= 80)[0]
        if len(r):
            a[r] = _signed_zero(fa, (len(r), K), rng)
            one = rng.random(len(r)) < 0.5
            j = rng.integers(0, K, size=len(r))
            keep = np.nonzero(one)[0]
            if len(keep):
                Ea1, _ = _split(fa, fb, Ep[r[keep], j[keep]], rng)
                a[r[keep], j[keep]] = _vals_bits(fa, rng, Ea1)
        if scaled:
            nb = K // ins.scale_block
            def scales():
                one = 127 if ins.scale == "ue8m0" else 0x38
                lo, hi = (127 - 78, 127 - 68) if ins.scale == "ue8m0" else (0x01, 0x08)
                v = rng.integers(lo, hi + 1, size=(n, nb)).astype(np.uint8)
                v[rng.random((n, nb)) < 0.2] = one
                return v
            sa, sb = scales(), scales()
    elif klass == "zeros":
        def normal(f, shape):
            E = np.clip(rng.integers(-4, 5, size=shape), f.emin, f.emax)
            return _vals_bits(f, rng, E)
        def wide(f, shape):   # any finite magnitude, the largest included
            E = rng.integers(f.emin - f.t, f.emax + 1, size=shape)
            return _vals_bits(f, rng, E)
        a[:] = normal(fa, (n, K))
        b[:] = normal(fb, (n, K))
        c[:] = normal(fc, n)
        # mode 0..24: most products zero, the zero factor against finite (also huge) values
        r = np.nonzero(mode < 25)[0]
        if len(r):
            zr = rng.random((len(r), K)) < 0.85
            which = rng.integers(0, 3, size=(len(r), K))
            A_, B_ = a[r], b[r]
            za, zb = zr & (which != 1), zr & (which != 0)
            A_[za] = _signed_zero(fa, int(za.sum()), rng)
            B_[zb] = _signed_zero(fb, int(zb.sum()), rng)
            A_[zr & (which == 1)] = wide(fa, int((zr & (which == 1)).sum()))
            B_[zr & (which == 0)] = wide(fb, int((zr & (which == 0)).sum()))
            a[r], b[r] = A_, B_
        # mode 25..49: every product zero (all-zero rows of A, of B, or mixed)
        r = np.nonzero((mode >= 25) & (mode < 50))[0]
        if len(r):
            kind = rng.integers(0, 3, size=len(r))
            for q, row in enumerate(r):
                if kind[q] != 1:
                    a[row] = _signed_zero(fa, K, rng)
                if kind[q] != 0:
                    b[row] = _signed_zero(fb, K, rng)
            u = rng.random(len(r))
            c[r[u < 0.25]] = _tiny_c(fc, fo, rng, int((u < 0.25).sum()))
            zz = (u >= 0.25) & (u < 0.65)       # c +-0; the rest keep a normal c
            c[r[zz]] = _signed_zero(fc, int(zz.sum()), rng)
        # mode 50..69: nonzero products (half of rows half zero), c +-0
        r = np.nonzero((mode >= 50) & (mode < 70))[0]
        if len(r):
            half = (rng.random((len(r), K)) < 0.5) & (rng.random((len(r), 1)) < 0.5)
            A_ = a[r]
            A_[half] = _signed_zero(fa, int(half.sum()), rng)
            a[r] = A_
        # mode 70..89: +- pairs of equal products that cancel exactly, the rest zero
        r = np.nonzero((mode >= 70) & (mode < 90))[0]
        if len(r) and K >= 2:
            h = int(rng.integers(1, K // 2 + 1))
            A_ = _signed_zero(fa, (len(r), K), rng)
            A_[:, :h] = a[r, :h]
            A_[:, h:2 * h] = _negated(fa, a[r, :h])
            B_ = b[r].copy()
            B_[:, h:2 * h] = B_[:, :h]
            a[r], b[r] = A_, B_
        # mode 90..99: the first half of k zero (a zero first block in a chain), then tiny products
        r = np.nonzero(mode >= 90)[0]
        if len(r):
            h = max(1, K // 2)
            a[r, :h] = _signed_zero(fa, (len(r), h), rng)
            Ea, Eb = _split(fa, fb, rng.integers(fo.emin - fo.t - 4, fo.emin + 2, size=(len(r), K - h)).astype(np.float64), rng)
            a[r, h:] = _vals_bits(fa, rng, Ea)
            b[r, h:] = _vals_bits(fb, rng, Eb)
        zc = (mode >= 50) & (mode < 90) | (mode >= 90) | ((mode < 25) & (rng.random(n) < 0.5))
        c[zc] = _signed_zero(fc, int(zc.sum()), rng)
        if ins.scale:
            nb = K // ins.scale_block
            def scales():
                if ins.scale == "ue8m0":
                    v = rng.integers(123, 132, size=(n, nb)).astype(np.uint8)
                else:
                    v = rng.integers(0x30, 0x48, size=(n, nb)).astype(np.uint8)
                    v[rng.random((n, nb)) < 0.1] = 0     # a zero scale zeroes its block
                return v
            sa, sb = scales(), scales()
    else:
        raise ValueError(klass)
    return a.astype(dt(fa)), b.astype(dt(fb)), c.astype(dt(fc)), sa, sb


def inputs(ins, klass, T, rng):
    """Raw-bit tiles A (T,M,K), B (T,K,N), C (T,M,N) and scales for one class."""
    from mmaformal import classes, fp
    M, N, K = ins.m, ins.n, ins.k
    if klass == "tiny":
        # products near the exponent given to zero terms (2^-160..2^-110 for f32 out,
        # 2^-50..2^-10 for f16 out), half the elements zero: zero terms and tiny nonzero ones meet
        lo, hi = (-160, -110) if ins.d in ("f32", "f64") else (-50, -10)
        A = _tiny(fp.fmt(ins.a), rng, (T, M, K), lo / 2, hi / 2, 0.5)
        B = _tiny(fp.fmt(ins.b), rng, (T, K, N), lo / 2, hi / 2, 0.5)
        C = _tiny(fp.fmt(ins.c), rng, (T, M, N), lo, hi, 0.5)
    else:
        a, _, c = classes.generate(klass, ins.a, ins.b, ins.c, K, T * M * N, rng)
        _, b, _ = classes.generate(klass, ins.a, ins.b, ins.c, K, T * N, rng)
        A = a[: T * M].reshape(T, M, K)
        B = np.swapaxes(b.reshape(T, N, K), 1, 2).copy()
        C = c.reshape(T, M, N)
    sc = {}
    if ins.scale:
        f = fp.fmt(ins.scale)
        nb = K // ins.scale_block
        def scales(shape):
            if klass == "tiny":   # scales 2^-80..2^-60 (ue8m0), so that scaled products land
                # near the zero-term exponent; the smallest ue4m3 values; and 1.0 (127 / 0x38)
                one = 127 if ins.scale == "ue8m0" else 0x38
                lo, hi = (127 - 80, 127 - 60) if ins.scale == "ue8m0" else (0x01, 0x10)
                v = rng.integers(lo, hi + 1, size=shape).astype(np.uint8)
                v[rng.random(shape) < 0.3] = one
                return v
            if klass in ("bits", "sparse", "special", "overflow"):
                return rng.integers(0, 1 << f.k, size=shape).astype(np.uint8)
            # around 1.0: ue8m0 127 +- 4; ue4m3 1.0 .. 2.0
            if ins.scale == "ue8m0":
                return rng.integers(123, 132, size=shape).astype(np.uint8)
            return rng.integers(0x30, 0x48, size=shape).astype(np.uint8)
        sc = dict(scale_a=scales((T, M, nb)), scale_b=scales((T, nb, N)))
    return A, B, C, sc


def as_rows(ins, A, B, C, sc):
    """The dot products of the tiles as (n, K) rows/columns, (n,) c and (n, nb) scales."""
    T, M, K = A.shape
    N = B.shape[2]
    a = np.broadcast_to(A[:, :, None, :], (T, M, N, K)).reshape(-1, K)
    b = np.broadcast_to(np.swapaxes(B, 1, 2)[:, None, :, :], (T, M, N, K)).reshape(-1, K)
    c = C.reshape(-1)
    sa = sb = None
    if sc:
        nb = sc["scale_a"].shape[2]
        sa = np.broadcast_to(sc["scale_a"][:, :, None, :], (T, M, N, nb)).reshape(-1, nb)
        sb = np.broadcast_to(np.swapaxes(sc["scale_b"], 1, 2)[:, None, :, :], (T, M, N, nb)).reshape(-1, nb)
    return a, b, c, sa, sb


def classify(d_ours, d_sim, fmt_name):
    """Per element: 0 equal, 1 NaN encoding, 2 signed zero, 3 value."""
    from mmaformal import fp
    f = fp.fmt(fmt_name)
    u = d_ours.astype(np.uint64) >> np.uint64(f.pad)
    v = d_sim.astype(np.uint64) >> np.uint64(f.pad)
    mag = np.uint64((1 << (f.k - 1)) - 1)
    expo_all = np.uint64(((1 << f.w) - 1) << f.t)
    def isnan(x):
        return ((x & expo_all) == expo_all) & ((x & np.uint64((1 << f.t) - 1)) != 0)
    out = np.zeros(u.shape, np.int8)
    diff = d_ours != d_sim
    both_nan = isnan(u) & isnan(v)
    zeros = ((u & mag) == 0) & ((v & mag) == 0)
    out[diff & both_nan] = 1
    out[diff & zeros] = 2
    out[diff & ~both_nan & ~zeros] = 3
    return out


def nan_kind(bits, fmt_name):
    """'canonical 0x7FFF..' / 'default +qNaN' / 'x86 default -qNaN' / 'payload' of a NaN."""
    from mmaformal import fp
    f = fp.fmt(fmt_name)
    x = int(bits) >> f.pad
    quiet = 1 << (f.t - 1)
    sign = x >> (f.k - 1)
    frac = x & ((1 << f.t) - 1)
    if frac == (1 << f.t) - 1:
        return "all-ones NaN" if not sign else "all-ones -NaN"
    if frac == quiet:
        return "-qNaN (x86 default)" if sign else "+qNaN (IEEE default)"
    return "NaN with input payload"


def variants(ins, th):
    """Named mmaformal variants of the primary theory, each set to one of mmasim's choices
    (docs/mmasim-notes.md sec. 4/6); a value difference reproduced by one is explained by it."""
    from mmaformal import theory as T
    ts = T.default()
    out = []
    p = th.param_dict
    # the rivals of the primary (e.g. <id>.zero-excluded, nan rules) as stored theories
    for r in th.competes_with:
        if ins.name in ts.instructions_of(r):
            out.append((f"rival {r}", r))
    if th.op in ("t_fdpa", "st_fdpa") and isinstance(p.get("zero_exp"), str):
        ez = None
        if ins.vendor == "nvidia":
            from mmasim_adapter import make_op
            op = make_op(*mmasim_name(ins))
            ez = getattr(getattr(op, "arithmetic_op", None), "e_zero", None)
        if isinstance(ez, int):
            out.append((f"zero_exp={ez} (mmasim's e_zero)", th.replace(zero_exp=ez)))
    if "zero_sign" in p and p["zero_sign"] != "positive":
        out.append(("zero_sign=positive", th.replace(zero_sign="positive")))
    return out


def _nonfinite(bits, fmt_name):
    from mmaformal import fp
    f = fp.fmt(fmt_name)
    x = np.asarray(bits).astype(np.uint64) >> np.uint64(f.pad)
    if f.name in ("f32", "f16", "f64", "bf16"):
        e = np.uint64(((1 << f.w) - 1) << f.t)
        return (x & e) == e
    return np.zeros(x.shape, bool)


def explain(ins, th, a, b, c, sa, sb, d_ours, d_sim):
    """For value differences: the documented rule that explains each (first match), else ""."""
    tags = np.full(len(c), "", dtype=object)
    if th.op == "gtr_fdpa":
        # mmasim's GTR-FDPA gives an Inf/NaN accumulator (c, or the previous block's result when
        # K > L) the frexp exponent -1 and drops it when E > F + 1 (docs/mmasim-notes.md 3.8, 4.6)
        hit = _nonfinite(d_ours, ins.d) & ~_nonfinite(d_sim, ins.d) \
            & (_nonfinite(c, ins.c) | (ins.k > th.L))
        tags[hit] = "mmasim GTR drops an Inf/NaN accumulator (notes 4.6)"
    for label, var in variants(ins, th):
        todo = tags == ""
        if not todo.any():
            break
        try:
            d = simulate_rows(ins, a[todo], b[todo], c[todo], None if sa is None else sa[todo],
                              None if sb is None else sb[todo], var)
        except ValueError:
            continue
        hit = np.zeros(len(c), bool)
        hit[np.nonzero(todo)[0]] = d == d_sim[todo]
        tags[hit] = label
    if th.op in ("tr_fdpa", "gtr_fdpa") and th.param_dict.get("zero_exp") == "excluded":
        # mmasim's TR/GTR give a zero c the exponent -126 (frexp's emin) in E = max(e_dot, Exp c):
        # our zero_exp = "field" does the same for c (zero products stay below e_dot here)
        from mmaformal.fp import fmt
        zc = (np.asarray(c).astype(np.uint64) & np.uint64((1 << (fmt(ins.c).k - 1)) - 1)) == 0
        todo = (tags == "") & zc
        if todo.any():
            d = simulate_rows(ins, a[todo], b[todo], c[todo], None, None, th.replace(zero_exp="field"))
            hit = np.zeros(len(c), bool)
            hit[np.nonzero(todo)[0]] = d == d_sim[todo]
            tags[hit] = "mmasim TR/GTR: zero c at exponent -126 (notes 3.2, 6)"
    return tags


def probe_rows(ins):
    """The probe set of `mmaformal probes` for this instruction (mmaformal.query.probes:
    order, precision, alignment, output rounding, zero-term exponent scans, normalization,
    out of range, subnormals, specials, zero sign) as rows, or None where none is exact."""
    from mmaformal.query.probes import dot_probes
    from mmaformal.query.infer import Batch
    bs = [x for x in dot_probes(ins) if x is not None]
    if not bs:
        return None
    bt = Batch.concat(bs)
    return bt.a, bt.b, bt.c, bt.sa, bt.sb


def simulate_rows(ins, a, b, c, sa=None, sb=None, theory=None):
    """mmaformal.simulate on n independent dot products (rows a, b (n, K), c (n,), scales
    (n, K/block)): packed on the diagonals of tiles of the instruction's shape."""
    import mmaformal
    n, K = a.shape
    M, N = ins.m, ins.n
    P = min(M, N)
    T = -(-n // P)
    pad = T * P - n
    def padded(x):
        return np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)]) if pad else x
    a, b, c = padded(a).reshape(T, P, K), padded(b).reshape(T, P, K), padded(c).reshape(T, P)
    r = np.arange(P)
    A = np.zeros((T, M, K), a.dtype); A[:, r, :] = a
    B = np.zeros((T, K, N), b.dtype); B[:, :, r] = np.swapaxes(b, 1, 2)
    C = np.zeros((T, M, N), c.dtype); C[:, r, r] = c
    kw = {}
    if sa is not None:
        nb = sa.shape[1]
        sa, sb = padded(sa).reshape(T, P, nb), padded(sb).reshape(T, P, nb)
        SA = np.zeros((T, M, nb), np.uint8); SA[:, r, :] = sa
        SB = np.zeros((T, nb, N), np.uint8); SB[:, :, r] = np.swapaxes(sb, 1, 2)
        kw = dict(scale_a=SA, scale_b=SB)
    D = mmaformal.simulate(ins, A, B, C, theory=theory, **kw)
    return D[:, r, r].reshape(-1)[:n]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=2, help="tiles per class and instruction (default 2)")
    ap.add_argument("--max-dots", type=int, default=256,
                    help="at most this many dot products per class and instruction (default 256)")
    ap.add_argument("--only", help="fnmatch pattern over mmaformal instruction names")
    ap.add_argument("--pairs", choices=("some", "all"), default="some")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--examples", type=int, default=2, help="examples printed per unexplained kind")
    ap.add_argument("--classes", help="comma-separated input classes (default: all; "
                    "the CLFP classes, tiny, subtiny, zeros, neartie, probes)")
    args = ap.parse_args(argv)

    import torch
    torch.set_num_threads(1)
    import mmaformal
    from mmaformal import classes, theory as T
    from mmasim_adapter import mmasim_dpa

    klasses = classes.CLASSES + CLASSES_EXTRA + ROW_CLASSES + ("probes",)
    if args.classes:
        want = args.classes.split(",")
        bad = [k for k in want if k not in klasses]
        if bad:
            ap.error(f"unknown classes {bad}; expected some of {', '.join(klasses)}")
        klasses = tuple(want)
    t0 = time.time()
    reps, skipped = representatives(args.pairs == "all", args.only)
    ts = T.default()
    rng = np.random.default_rng(args.seed)
    total = Counter()
    per_arch = defaultdict(Counter)
    value_tags = Counter()
    unexplained = []
    nan_kinds = Counter()
    zero_kinds = Counter()
    rival_total = Counter()
    rival_value = Counter()       # rival vs mmasim value differences (not NaN encoding / zero sign)
    rival_unexplained = []
    per_fam_class = defaultdict(Counter)   # (arch op, class) -> dots / nan / zero / value
    print(f"{'instruction':<78} {'dots':>6} {'agree':>7} {'nan':>5} {'zero':>5} {'value':>5}  value explained by")
    for ins in reps:
        th = ts.resolve(ins)
        ok, why = th.evaluable
        if not ok:
            print(f"{ins.name:<78} skipped: {why}")
            continue
        arch, q = mmasim_name(ins)
        cnt = Counter()
        tags_here = Counter()
        rivals = [r for r in th.competes_with if ins.name in ts.instructions_of(r)
                  and ts.get(r).bind(ins).evaluable[0]]
        rival_diff = Counter({r: 0 for r in rivals})
        for klass in klasses:
            if klass == "probes" or klass in ROW_CLASSES:
                pr = probe_rows(ins) if klass == "probes" else row_inputs(ins, klass, args.max_dots, rng)
                if pr is None:
                    continue
                a, b, c, sa, sb = pr
                D = simulate_rows(ins, a, b, c, sa, sb)
                rows_of = lambda r: simulate_rows(ins, a, b, c, sa, sb, r)  # noqa: E731
            else:
                Tn = max(1, min(args.tiles, args.max_dots // (ins.m * ins.n)))
                A, B, C, sc = inputs(ins, klass, Tn, rng)
                D = mmaformal.simulate(ins, A, B, C, **sc).reshape(-1)
                a, b, c, sa, sb = as_rows(ins, A, B, C, sc)
                lim = args.max_dots
                a, b, c, D = a[:lim], b[:lim], c[:lim], D[:lim]
                if sa is not None:
                    sa, sb = sa[:lim], sb[:lim]
                rows_of = lambda r: mmaformal.simulate(ins, A, B, C, theory=r, **sc).reshape(-1)[:lim]  # noqa: E731
            Ds = mmasim_dpa(arch, q, a, b, c, sa, sb).astype(D.dtype)
            cl = classify(D, Ds, ins.d)
            cnt["dots"] += len(c)
            cnt["agree"] += int((cl == 0).sum())
            cnt["nan"] += int((cl == 1).sum())
            cnt["zero"] += int((cl == 2).sum())
            cnt["value"] += int((cl == 3).sum())
            fk = (f"{ins.arch} {th.op}", klass)
            for key, v in (("dots", len(c)), ("nan", (cl == 1).sum()), ("zero", (cl == 2).sum()),
                           ("value", (cl == 3).sum())):
                per_fam_class[fk][key] += int(v)
            for k in np.nonzero(cl == 2)[0]:
                sgn = lambda x: "-0" if int(x) >> (np.dtype(D.dtype).itemsize * 8 - 1) else "+0"  # noqa: E731
                zero_kinds[f"{ins.arch} {th.id}: mmaformal {sgn(D[k])} -> mmasim {sgn(Ds[k])}"] += 1
            for k in np.nonzero(cl == 1)[0]:
                nan_kinds[f"{ins.arch} {th.id}: {nan_kind(D[k], ins.d)} -> mmasim {nan_kind(Ds[k], ins.d)}"] += 1
            for r in rivals:
                Dr = rows_of(r)
                rival_diff[r] += int((Dr != Ds).sum())
                clr = classify(Dr, Ds, ins.d)
                rv = np.nonzero(clr == 3)[0]
                if len(rv):
                    rth = ts.resolve(ins, r)
                    # the one documented value rule that no reading of the tail removes (item 6)
                    gtr = np.zeros(len(rv), bool)
                    if rth.op == "gtr_fdpa":
                        gtr = _nonfinite(Dr[rv], ins.d) & ~_nonfinite(Ds[rv], ins.d) \
                            & (_nonfinite(c[rv], ins.c) | (ins.k > rth.L))
                    rival_value[f"{ins.arch}: {r.split('.', 1)[1]}: GTR Inf/NaN accumulator dropped (item 6)"] += int(gtr.sum())
                    rival_value[f"{ins.arch}: {r.split('.', 1)[1]}: other"] += int((~gtr).sum())
                    for k in rv[~gtr][:3]:
                        if len(rival_unexplained) < 60:
                            rival_unexplained.append((r, ins.name, klass, a[k], b[k], c[k],
                                                      None if sa is None else sa[k], None if sb is None else sb[k],
                                                      Dr[k], Ds[k]))
            vi = np.nonzero(cl == 3)[0]
            if len(vi):
                tags = explain(ins, th, a[vi], b[vi], c[vi], None if sa is None else sa[vi],
                               None if sb is None else sb[vi], D[vi], Ds[vi])
                for k, tg in enumerate(tags):
                    tags_here[tg or "UNEXPLAINED"] += 1
                    if not tg and len(unexplained) < 400:
                        unexplained.append((ins.name, klass, a[vi[k]], b[vi[k]], c[vi[k]],
                                            None if sa is None else sa[vi[k]], None if sb is None else sb[vi[k]],
                                            D[vi[k]], Ds[vi[k]]))
        for k, v in cnt.items():
            total[k] += v
            per_arch[ins.arch][k] += v
        value_tags.update({f"{ins.arch}: {k}": v for k, v in tags_here.items()})
        expl = "; ".join(f"{k} {v}" for k, v in tags_here.most_common())
        if rivals:
            expl += ("; " if expl else "") + "rivals differ from mmasim on: " + \
                ", ".join(f"{r} {v}" for r, v in rival_diff.items())
            rival_total.update({f"{ins.arch}: {r.split('.', 1)[1]}": v for r, v in rival_diff.items()})
        print(f"{ins.name:<78} {cnt['dots']:>6} {100 * cnt['agree'] / max(1, cnt['dots']):>6.2f}% {cnt['nan']:>5} "
              f"{cnt['zero']:>5} {cnt['value']:>5}  {expl}", flush=True)

    print("\nper architecture (dot products, agreement, NaN-encoding / signed-zero / value differences):")
    for arch, c in sorted(per_arch.items()):
        print(f"  {arch:<7} {c['dots']:>8} {100 * c['agree'] / max(1, c['dots']):7.3f}%  {c['nan']:>6} {c['zero']:>6} {c['value']:>6}")
    print("\nvalue differences by explanation:")
    for k, v in sorted(value_tags.items()):
        print(f"  {k}: {v}")
    print("\nNaN-encoding differences (mmaformal's NaN -> mmasim's NaN):")
    for k, v in sorted(nan_kinds.items()):
        print(f"  {k}: {v}")
    print("\nsigned-zero differences (mmaformal's zero -> mmasim's zero):")
    for k, v in sorted(zero_kinds.items()):
        print(f"  {k}: {v}")
    print("\nrival theories: dot products on which each differs from mmasim (the inputs separate them):")
    for k, v in sorted(rival_total.items()):
        print(f"  {k}: {v}")
    print("\nrival theories: value differences from mmasim (not NaN encoding, not zero sign):")
    for k, v in sorted(rival_value.items()):
        if v:
            print(f"  {k}: {v}")
    for r, name, klass, a, b, c, sa, sb, d, ds in rival_unexplained:
        h = lambda x: " ".join(f"{int(v):x}" for v in np.ravel(x))  # noqa: E731
        print(f"  {r} on {name} [{klass}] a={h(a)} b={h(b)} c={int(c):x}"
              + (f" sa={h(sa)} sb={h(sb)}" if sa is not None else "")
              + f" -> rival {int(d):x}, mmasim {int(ds):x}")
    print("\nper architecture and operation, per input class (dot products nan/zero/value differences):")
    fams = sorted({f for f, _ in per_fam_class})
    for f in fams:
        row = []
        for k in klasses:
            x = per_fam_class.get((f, k))
            if x:
                row.append(f"{k} {x['dots']}" + (f" [{x['nan']}/{x['zero']}/{x['value']}]"
                                                  if x['nan'] or x['zero'] or x['value'] else ""))
        print(f"  {f}: " + ", ".join(row))
    if unexplained:
        print(f"\nUNEXPLAINED value differences: {len(unexplained)} (first examples by instruction and class)")
        shown = Counter()
        for name, klass, a, b, c, sa, sb, d, ds in unexplained:
            if shown[(name, klass)] >= args.examples:
                continue
            shown[(name, klass)] += 1
            h = lambda x: " ".join(f"{int(v):x}" for v in np.ravel(x))  # noqa: E731
            print(f"  {name} [{klass}] a={h(a)} b={h(b)} c={int(c):x}"
                  + (f" sa={h(sa)} sb={h(sb)}" if sa is not None else "")
                  + f" -> mmaformal {int(d):x}, mmasim {int(ds):x}")
    n_unexp = sum(v for k, v in value_tags.items() if k.endswith("UNEXPLAINED"))
    print(f"\nnot modelled by mmasim (skipped): " + ", ".join(f"{k} {v}" for k, v in sorted(skipped.items())))
    print(f"\nsummary: {len(reps)} instructions, {total['dots']:,} dot products, "
          f"{100 * total['agree'] / max(1, total['dots']):.2f}% bit-identical; differences: "
          f"NaN encoding {total['nan']:,}, signed zero {total['zero']:,}, value {total['value']:,} "
          f"({total['value'] - n_unexp:,} explained, {n_unexp:,} unexplained); "
          f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main(sys.argv[1:])
