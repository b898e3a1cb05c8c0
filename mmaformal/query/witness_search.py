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
4. (chains of fused blocks) a later block's accumulator steps up to a power of two: in the
   first block a product 2^N and a small negative product leave the block output one unit
   below 2^N; the negative product rises to zero, the output reaches 2^N, and the next
   block, whose fused sum is aligned at the accumulator's exponent, truncates its small
   products one bit coarser (products that are odd multiples of the finer unit lose it);
5. (fused sums whose A format has subnormals) a product steps onto an operand whose key
   overstates it: from the largest product just below 2^v (two normal operands, key v - 1)
   to the smallest subnormal times 2^(v - its value's exponent), whose key ea + eb is
   v + t_a: e_max jumps t_a + 1 binades for a tiny gain, and the block's other products,
   each just below the new alignment unit, are truncated to zero;
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

May import: numpy, mmaformal.fp, mmaformal.mma (the output format of rho), mmaformal.query.model
and .pool (numpy lanes over the one definition, Model.dot).
"""
from __future__ import annotations

import time

import numpy as np

from .. import fp, mma
from .model import Model, scale_one
from .pool import UINT_DTYPES, Batch, evaluate

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
    return _packed(fa, fb, fc, a, b, c, a2, b2, c2, sel)


def _packed(fa, fb, fc, a, b, c, a2, b2, c2, sel):
    """A candidate batch: codes moved to their storage position (f.pad), as object arrays."""
    sh = lambda x, f: np.asarray(x, dtype=object) << f.pad
    return (sh(a, fa), sh(b, fb), sh(c, fc), sh(a2, fa), sh(b2, fb), sh(c2, fc), sel)


def _normal_pair(fa: fp.Format, fb: fp.Format, e: np.ndarray, ma, mb):
    """Codes (a, b) of normals whose exponents sum to e (a's as near e / 2 as fits), with
    trailing bits ma, mb."""
    ea = np.clip(np.maximum(e // 2, e - fb.emax), fa.emin, fa.emax)
    return _code(fa, ea, ma), _code(fb, e - ea, mb)


def _chain_candidates(m: Model, rng: np.random.Generator, n: int):
    """Family 4 (module docstring): FDPA chains of at least two blocks, else None. The
    first block's output steps from pred(2^N) to 2^N in its output format; the second
    block's products are u = 2^(N - 1 - F) or 3u (odd multiples of the unit they have while
    the accumulator's exponent is N - 1), and every other input is zero."""
    th = m.theory
    K, L = m.k, th.L
    F = th.param_dict.get("F")
    if th.model != "fdpa" or not L or L >= K or not isinstance(F, int) or m.ins.scale:
        return None
    fa, fb, fc = (fp.fmt(x) for x in (m.ins.a, m.ins.b, m.ins.c))
    rho = th.param_dict.get("rho")
    t_out = mma.rho_of(rho)[2].t if isinstance(rho, str) else fp.fmt(m.ins.d).t
    lo = fa.emin + fb.emin + max(F, t_out) + 1      # every product below stays normal
    hi = fa.emax + fb.emax - 1
    if lo > hi or fa.t < 1:
        return None
    pos = th.k_positions(K)
    blk0, blk1 = pos[:L], pos[L:2 * L]
    N = rng.integers(lo, hi + 1, n)
    # the product 2^e (a's trailing bits: 0, or 1.5's)
    prod = lambda e, mant_a: _normal_pair(fa, fb, e, mant_a, np.zeros_like(e))
    z = np.zeros(n, np.int64)
    a = np.zeros((n, K), dtype=object)
    b = np.zeros((n, K), dtype=object)
    half = np.full(n, 1 << (fa.t - 1), np.int64)
    a[:, blk0[0]], b[:, blk0[0]] = prod(N, z)
    # the deficit: one unit of the output format's binade below 2^N (or a little more)
    q1 = blk0[1]
    dm = rng.integers(0, 2, n)
    ta, tb = prod(N - 1 - t_out - dm, z)
    a[:, q1], b[:, q1] = ta | (fa.sign_bit if fa.signed else 0), tb
    a2, b2 = a.copy(), b.copy()
    a2[:, q1] = 0                                   # -deficit -> +0: the addend increases
    unit = N - 1 - F
    for k in blk1:
        three = rng.random(n) < 0.3
        used = rng.random(n) < 0.9
        pa, pb = prod(unit + three, np.where(three, half, 0))     # u or 1.5 * 2u = 3u
        a[:, k] = a2[:, k] = np.where(used, pa, 0)
        b[:, k] = b2[:, k] = np.where(used, pb, 0)
    c = np.zeros(n, dtype=object)
    return _packed(fa, fb, fc, a, b, c, a2, b2, c.copy(), np.full(n, q1))


def _below_pow2(fa: fp.Format, fb: fp.Format) -> tuple[int, int]:
    """Integer significands (f1, f2) of a and b (leading bits included) whose product is the
    largest below 2^(t_a + t_b + 1): the closest a product of normals comes to a power of
    two from below."""
    lim = 1 << (fa.t + fb.t + 1)
    f1 = np.arange(1 << fa.t, 1 << (fa.t + 1), dtype=np.int64)
    f2 = np.clip((lim - 1) // f1, 1 << fb.t, (1 << (fb.t + 1)) - 1)
    pr = np.where(f1 * f2 < lim, f1 * f2, 0)
    i = int(np.argmax(pr))
    return int(f1[i]), int(f2[i])


def _subnormal_key_candidates(m: Model, rng: np.random.Generator, n: int):
    """Family 5 (module docstring): fused sums (model fdpa, an int F) whose A format has
    subnormals, else None. The stepping product is the first of the first block; the others
    sit in the same fused sum (GTR-FDPA: the same even/odd group); everything else is zero."""
    th = m.theory
    F = th.param_dict.get("F")
    fa, fb, fc = (fp.fmt(x) for x in (m.ins.a, m.ins.b, m.ins.c))
    if (th.model != "fdpa" or not isinstance(F, int) or m.ins.scale or not fa.subnormals
            or fa.t < 1 or fa.t > 16 or fb.t > 16 or F < fa.t + fb.t):
        return None
    K = m.k
    L = th.L if th.L and th.L < K else K
    pos = th.k_positions(K)[:L]
    k0 = pos[0]
    others = pos[2::2] if th.op == "gtr_fdpa" else pos[1:]
    ta = fa.t
    lo = fa.emin + fb.emin + F + 1 - ta                   # the others' exponents stay normal
    hi = min(fb.emax + fa.emin - ta, fa.emax + fb.emax)
    if lo > hi:
        return None
    v = rng.integers(lo, hi + 1, n)
    f1, f2 = _below_pow2(fa, fb)
    pair = lambda e, ma, mb: _normal_pair(fa, fb, e, ma, mb)
    a = np.zeros((n, K), dtype=object)
    b = np.zeros((n, K), dtype=object)
    full = lambda x: np.full(n, x, np.int64)
    a[:, k0], b[:, k0] = pair(v - 1, full(f1 - (1 << ta)), full(f2 - (1 << fb.t)))
    a2, b2 = a.copy(), b.copy()
    a2[:, k0] = 1                                        # the smallest subnormal, key emin
    b2[:, k0] = _code(fb, v - fa.emin + ta, full(0))
    for k in others:                                     # just below the new unit 2^(v + t_a - F)
        used = rng.random(n) < 0.9
        pa, pb = pair(v + ta - F - 1, full((1 << ta) - 1), full(0))
        a[:, k] = a2[:, k] = np.where(used, pa, 0)
        b[:, k] = b2[:, k] = np.where(used, pb, 0)
    c = np.zeros(n, dtype=object)
    return _packed(fa, fb, fc, a, b, c, a2, b2, c.copy(), np.full(n, k0))


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
    dt = lambda f: UINT_DTYPES[fp.fmt(f).storage]
    t0 = time.perf_counter()
    round_ = 0
    first = _transferred(m, transfer) if transfer else None
    while first is not None or time.perf_counter() - t0 < budget:
        if first is not None:
            a, b, c, a2, b2, c2, sel = first
            first = None
        else:
            fam = round_ % 5
            round_ += 1
            got = (_chain_candidates(m, rng, batch) if fam == 3 else
                   _subnormal_key_candidates(m, rng, batch) if fam == 4 else None)
            a, b, c, a2, b2, c2, sel = got or _candidates(m, rng, batch, fam % 3)
        n = len(c)
        sa = np.full((n, m.nscale), scale_one(ins.scale), dtype=np.uint8) if ins.scale else None
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
    return (np.asarray(v, dtype=object) << f.pad).astype(UINT_DTYPES[f.storage])


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
        sa = np.full((batch, m.nscale), scale_one(ins.scale), dtype=np.uint8)
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
