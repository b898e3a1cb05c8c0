"""Layer 5, query/witness_search: concrete searches for counterexamples on the numpy lanes,
tried before a solver is asked.

`monotonic_pair(m)` looks for two finite inputs x, y that differ in one addend whose exact
value increases (c, or one product a_k*b_k) while the output decreases. Candidates are built
where an alignment that truncates loses bits:

1. c steps from the largest value below a power of two to that power: e_max rises by one, so
   every product is aligned one bit coarser;
2. a product steps across a power of two (a_k from the largest code below a power of two to
   that power, b_k a power of two): the same, driven by a product;
3. one element of a random positive input steps to the next code;
0. (first, when the caller passes them) transferred witnesses: the stored monotonicity
   witnesses of other instructions with the same operand formats, their nonzero positions
   moved to every offset of this instruction's K (a pair that refutes one hypothesis often
   refutes a neighbour that aligns the same way; a subnormal operand, which these searches
   do not build, is typical of them).

All values are positive and finite, the products span the exponents just below the stepping
addend, and block scales are 1. Batches run on the numpy back-end, both sides at once; the
first pair whose outputs decrease (as real numbers, NaN outputs excluded) is returned.

Invariant: a result is a candidate, not a verdict: the caller replays it on every back-end
before it is reported or stored (prove.prove_monotonic does), so a wrong search can only miss.

May import: numpy, mmaformal.fp, mmaformal.query.model and .pool (numpy lanes over the one
definition, Model.dot).
"""
from __future__ import annotations

import time

import numpy as np

from .. import fp
from .model import Model, _one
from .pool import _UINT, Batch, evaluate

__all__ = ["monotonic_pair", "symmetry_pair", "order_key", "is_nan"]


def is_nan(bits: np.ndarray, f: fp.Format) -> np.ndarray:
    mag = (bits >> f.pad) & ((1 << (f.w + f.t)) - 1)
    if f.nan == "ieee":
        return mag > f.inf_code
    if f.nan == "ones":
        return mag == (1 << (f.w + f.t)) - 1
    if f.nan == "negzero":
        return (bits >> f.pad) == f.sign_bit
    return np.zeros(bits.shape, bool)


def order_key(bits: np.ndarray, f: fp.Format) -> np.ndarray:
    """A signed integer whose order is the real order of the non-NaN codes (+0 = -0)."""
    mag = ((bits >> f.pad) & ((1 << (f.w + f.t)) - 1)).astype(object)
    neg = ((bits >> f.pad) & f.sign_bit).astype(bool) if f.signed else np.zeros(bits.shape, bool)
    return np.where(neg, -mag, mag)


def _code(f: fp.Format, e: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Positive codes with unbiased exponent e (normal) and trailing bits m, clipped to the
    finite range (codes >= 1)."""
    field = np.clip(e + f.bias, 1, (f.max_code >> f.t))
    c = (field.astype(object) << f.t) | m.astype(object)
    return np.clip(c, 1, f.max_code)


def _candidates(m: Model, rng: np.random.Generator, n: int, family: int):
    fa, fb, fc = (fp.fmt(x) for x in (m.ins.a, m.ins.b, m.ins.c))
    K = m.k
    # the stepping addend's exponent E, products spread over [E - spread, E - 1]
    lo = max(fa.emin + fb.emin, fc.emin) + 2
    hi = min(fa.emax + fb.emax, fc.emax) - 2
    if family == 0:              # c may stand far above every product
        hi = fc.emax - 1
    E = rng.integers(lo, max(lo + 1, hi), n)
    F = m.theory.param_dict.get("F")
    F = F if isinstance(F, int) else 2 * (fa.t + fb.t)
    spread = rng.integers(1, F + fa.t + fb.t + 6, n)
    pe = E[:, None] - 1 - rng.integers(0, spread[:, None] + 1, (n, K))
    ea = np.clip(pe // 2 + rng.integers(-2, 3, (n, K)), fa.emin, fa.emax)
    eb = np.clip(pe - ea, fb.emin, fb.emax)
    a = _code(fa, ea, rng.integers(0, 1 << fa.t, (n, K)))
    b = _code(fb, eb, rng.integers(0, 1 << fb.t, (n, K)))
    # c below the products' top, random trailing bits
    c = _code(fc, E - 1 - rng.integers(1, spread + 2), rng.integers(0, 1 << fc.t, n))
    a2, b2, c2 = a.copy(), b.copy(), c.copy()
    sel = np.full(n, K)
    rows = np.arange(n)
    if family == 0:              # c: pred(2^E) -> 2^E
        top = _code(fc, E, np.zeros(n, np.int64))
        c, c2 = top - 1, top
    elif family == 1:            # product k: a_k pred(2^e) -> 2^e, b_k = 2^(E - e)
        k = rng.integers(0, K, n)
        e_a = np.clip(E // 2 + rng.integers(-3, 4, n), fa.emin + 1, fa.emax)
        p = _code(fa, e_a, np.zeros(n, np.int64))
        a[rows, k], a2[rows, k] = p - 1, p
        b[rows, k] = b2[rows, k] = _code(fb, E - e_a, np.zeros(n, np.int64))
        sel = k
    else:                        # one element: the next code
        which = rng.integers(0, 2 * K + 1, n)
        for i in range(n):
            w = which[i]
            if w < K:
                a2[i, w] = min(a[i, w] + 1, fa.max_code)
                sel[i] = w
            elif w < 2 * K:
                b2[i, w - K] = min(b[i, w - K] + 1, fb.max_code)
                sel[i] = w - K
            else:
                c2[i] = min(c[i] + 1, fc.max_code)
    sh = lambda x, f: np.asarray(x, dtype=object) << f.pad
    return (sh(a, fa), sh(b, fb), sh(c, fc), sh(a2, fa), sh(b2, fb), sh(c2, fc), sel)


def _transferred(m: Model, transfer):
    """Candidate arrays from stored witness pairs (x, y): raw a, b lists and c of this
    instruction's formats; every pair with its nonzero positions at every offset mod K."""
    K = m.k
    rows = []
    for (a, b, c), (a2, b2, c2) in transfer:
        nz = [k for k in range(len(a)) if a[k] or b[k] or a2[k] or b2[k]]
        if len(nz) > K or not nz and c == c2:
            continue
        ch = [k for k in nz if (a[k], b[k]) != (a2[k], b2[k])]
        for o in range(K):
            pos = {k: (k + o) % K for k in nz}
            if len(set(pos.values())) < len(nz):
                continue
            r = [[0] * K, [0] * K, c, [0] * K, [0] * K, c2, K]
            for k, q in pos.items():
                r[0][q], r[1][q], r[3][q], r[4][q] = a[k], b[k], a2[k], b2[k]
            if ch:
                r[6] = pos[ch[0]]
            rows.append(r)
    if not rows:
        return None
    col = lambda i: np.array([r[i] for r in rows], dtype=object)
    return col(0), col(1), col(2), col(3), col(4), col(5), col(6)


def monotonic_pair(m: Model, budget: float = 10.0, batch: int = 512, seed: int = 0,
                   transfer=()):
    """(x, y, sel) with y's addend `sel` (K: c) larger and Phi(y) < Phi(x), or None.
    transfer: stored witness pairs ((a, b, c), (a', b', c')) of other instructions with this
    one's formats (raw storage bits), tried first at every offset."""
    ins = m.ins
    fd = fp.fmt(ins.d)
    rng = np.random.default_rng(seed)
    dt = lambda f: _UINT[fp.fmt(f).storage]
    t0 = time.perf_counter()
    round_ = 0
    first = _transferred(m, transfer) if transfer else None
    while first is not None or time.perf_counter() - t0 < budget:
        if first is not None:
            a, b, c, a2, b2, c2, sel = first
            first = None
        else:
            fam = round_ % 3
            round_ += 1
            a, b, c, a2, b2, c2, sel = _candidates(m, rng, batch, fam)
        n = len(c)
        sa = np.full((n, m.nscale), _one(ins.scale), dtype=np.uint8) if ins.scale else None
        x = Batch(a.astype(dt(ins.a)), b.astype(dt(ins.b)), c.astype(dt(ins.c)), sa, sa)
        y = Batch(a2.astype(dt(ins.a)), b2.astype(dt(ins.b)), c2.astype(dt(ins.c)), sa, sa)
        try:
            d1 = evaluate(m, x).astype(object)
            d2 = evaluate(m, y).astype(object)
        except (OverflowError, ValueError):
            continue                  # a candidate batch outside a checked range: next one
        ok = ~is_nan(d1, fd) & ~is_nan(d2, fd)
        bad = np.nonzero(ok & (order_key(d2, fd) < order_key(d1, fd)))[0]
        if len(bad):
            i = int(bad[0])
            return x.witness(i, ins), y.witness(i, ins), int(sel[i])
    return None


def _random_codes(f: fp.Format, rng: np.random.Generator, shape) -> np.ndarray:
    """Random raw bits of format f (every code, specials included), in its storage dtype."""
    hi = 1 << f.k
    if f.k > 62:
        v = np.array([int(x) for x in rng.integers(0, 1 << 62, shape).ravel()], dtype=object)
        v = v.reshape(shape) | (rng.integers(0, 1 << (f.k - 62), shape).astype(object) << 62)
    else:
        v = rng.integers(0, hi, shape)
    return (np.asarray(v, dtype=object) << f.pad).astype(_UINT[f.storage])


def symmetry_pair(m: Model, budget: float = 5.0, batch: int = 1024, seed: int = 0):
    """(x, -x) with Phi(-x) not ~ -Phi(x) (the symmetry claim's ~: equal bits, both NaN, or
    both zero), from random raw bits (every code of each format), or None. -x flips the sign
    of a and c (model.neg_bits: fnuz zero and NaN are their own negations)."""
    from ..bits import NUMPY
    from .model import approx_equal, neg_bits
    ins = m.ins
    fa, fb, fc, fd = (fp.fmt(x) for x in (ins.a, ins.b, ins.c, ins.d))
    rng = np.random.default_rng(seed)
    sa = None
    if ins.scale:
        sa = np.full((batch, m.nscale), _one(ins.scale), dtype=np.uint8)
    neg = lambda v, f: np.asarray(neg_bits(NUMPY.lift(v.astype(object) if f.storage > 62 else
                                                      v.astype(np.int64), f.storage), f).v)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < budget:
        a = _random_codes(fa, rng, (batch, m.k))
        b = _random_codes(fb, rng, (batch, m.k))
        c = _random_codes(fc, rng, (batch,))
        an = np.stack([neg(a[:, k], fa) for k in range(m.k)], axis=1).astype(a.dtype)
        cn = neg(c, fc).astype(c.dtype)
        x, xn = Batch(a, b, c, sa, sa), Batch(an, b, cn, sa, sa)
        try:
            d1, d2 = evaluate(m, x), evaluate(m, xn)
        except (OverflowError, ValueError):
            continue
        lift = lambda d: NUMPY.lift(d.astype(object) if fd.storage > 62 else d.astype(np.int64),
                                    fd.storage)
        same = np.broadcast_to(np.asarray(approx_equal(lift(d2), neg_bits(lift(d1), fd), fd).v,
                                          dtype=bool), (batch,))
        bad = np.nonzero(~same)[0]
        if len(bad):
            i = int(bad[0])
            return x.witness(i, ins), xn.witness(i, ins)
    return None
