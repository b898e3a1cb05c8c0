"""IEEE 754 add / mul / fma of the core (mmaformal.fp) against the exact-rational oracle.

Every rounding mode the oracle has (RNE RNA RZ RU RD RO). f32: 100,000 input tuples per
operation, each evaluated in all six modes; f16, bf16, f64: 10,000 tuples per operation. The
tuples mix random bit streams with finite values of nearby exponents built so that massive
cancellation, exact ties and sticky bits happen (the test asserts that they did), plus sparse,
subnormal-heavy and special inputs. A NaN result is compared as "both NaN"; the core's NaN
must then be the format's default NaN (policy nan="default").
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import (X, exp_codes, hexs, is_nan_bits, ofmt, oracle_map, pack,
                      random_codes, sparse_codes, special_mix, storage_dtype, subnormal_codes)
from mmaformal import fp
from mmaformal.bits import INT, NUMPY

MODES = X.MODES          # RNE RNA RZ RU RD RO: the core has all of them too
N_F32 = 100_000          # f32 tuples per operation (each in all six modes)
N_OTHER = 10_000         # f16 / bf16 / f64 tuples per operation
assert set(MODES) <= set(fp.MODES)


def _flip_sign(name, codes):
    F = ofmt(name)
    sb = (1 << (F.w + F.t)) << F.pad
    return codes ^ (sb if F.container == 64 else np.int64(sb))


def _near(rng, name, codes, k=3):
    """codes moved by up to k units in the last place (staying finite, sign kept)."""
    F = ofmt(name)
    mag_mask = ((1 << (F.w + F.t)) - 1) << F.pad
    top = (((1 << F.w) - 2) << F.t | ((1 << F.t) - 1)) << F.pad
    d = rng.integers(-k, k + 1, len(codes))
    out = [(int(c) & ~mag_mask) | min(max((int(c) & mag_mask) + (int(x) << F.pad), 0), top)
           for c, x in zip(codes, d)]
    return np.array(out, dtype=storage_dtype(name))


def ieee_tuples(rng, name: str, op: str, n: int) -> list[np.ndarray]:
    """Operand arrays (2 for add/mul, 3 for fma) of n tuples in eight input classes."""
    F = ofmt(name)
    nops = 3 if op == "fma" else 2
    m = n // 8
    parts = [[] for _ in range(nops)]

    def put(*arrs):
        for k in range(nops):
            parts[k].append(np.asarray(arrs[k], dtype=storage_dtype(name)))

    emin, emax = 1 - F.bias - F.t, (1 << F.w) - 2 - F.bias
    # 1 random bit streams; 2 sparse; 3 subnormal-heavy; 4 specials mixed with finite values
    put(*[random_codes(rng, name, m) for _ in range(nops)])
    put(*[sparse_codes(rng, name, m) for _ in range(nops)])
    put(*[subnormal_codes(rng, name, m) for _ in range(nops)])
    put(*[special_mix(rng, name, m, 0.3) for _ in range(nops)])
    # 5 finite, nearby exponents anywhere in the range
    base = rng.integers(emin + 2 * F.t, emax - 4, m)
    put(*[exp_codes(rng, name, base + rng.integers(-3, 4, m)) for _ in range(nops)])
    # 6 massive cancellation: b ~ -a (add); c ~ -(a*b) rounded (fma); mul: a*b near 1
    a = exp_codes(rng, name, rng.integers(emin + 2 * F.t, emax - 2, m))
    if op == "add":
        put(a, _flip_sign(name, _near(rng, name, a)))
    elif op == "mul":
        b = exp_codes(rng, name, rng.integers(-3, 4, m))
        put(a, b)
    else:
        lo_e, hi_e = (emin + 2 * F.t) // 2, emax // 2 - 1
        a = exp_codes(rng, name, rng.integers(lo_e, hi_e, m))
        b = exp_codes(rng, name, rng.integers(lo_e, hi_e, m))
        c = np.array([X.round_to(name, -X._val(X.decode(name, int(x))) * X._val(X.decode(name, int(y))), "RNE")
                      for x, y in zip(a, b)], dtype=storage_dtype(name))
        put(a, b, _near(rng, name, c, 2))
    # 7 exact ties and half-ulp neighbours: few significant bits, exponents t+1 apart
    e = rng.integers(emin + 2 * F.t, emax - 2, m)
    if op == "add":
        put(exp_codes(rng, name, e, "few"), exp_codes(rng, name, e - F.t - 1 + rng.integers(-1, 2, m),
                                                     "one"))
    elif op == "mul":
        # half: few-bit significands; half: exact ties (1 + 2^-k)(1 + 2^-(t+1-k)) = 1 + ... + 2^-(t+1)
        a, b = exp_codes(rng, name, e // 2, "few"), exp_codes(rng, name, e - e // 2, "few")
        k = rng.integers(1, F.t + 1, m)
        sh = (lambda v: v.astype(object)) if F.container == 64 else (lambda v: v)
        tie_a = pack(name, sh(rng.integers(0, 2, m)), sh(e // 2 + F.bias), sh(np.int64(1) << (F.t - k)))
        tie_b = pack(name, sh(rng.integers(0, 2, m)), sh(e - e // 2 + F.bias), sh(np.int64(1) << (k - 1)))
        tie = rng.random(m) < 0.5
        put(np.where(tie, tie_a, a), np.where(tie, tie_b, b))
    else:
        put(exp_codes(rng, name, e // 2, "few"), exp_codes(rng, name, e - e // 2, "few"),
            exp_codes(rng, name, e - F.t - 1 + rng.integers(-2, 3, m), "few"))
    # 8 results near the subnormal / overflow thresholds
    lo = rng.random(m) < 0.5
    if op == "mul":
        ea = rng.integers(emin + F.t, emax, m)
        eb = np.where(lo, emin + F.t - ea + rng.integers(-F.t - 2, 3, m), emax - ea + rng.integers(-1, 2, m))
        put(exp_codes(rng, name, ea), exp_codes(rng, name, np.clip(eb, emin, emax)))
    else:
        ea = np.where(lo, emin + F.t + rng.integers(-1, 2, m), emax - rng.integers(0, 2, m))
        ops = [exp_codes(rng, name, ea), exp_codes(rng, name, ea + rng.integers(-2, 1, m))]
        if op == "fma":
            ops = [exp_codes(rng, name, ea // 2), exp_codes(rng, name, ea - ea // 2)] + [ops[1]]
        put(*ops)
    return [np.concatenate(p) for p in parts]


def _core(name, op, ops, mode):
    W = ofmt(name).container
    r = getattr(fp, op)(name, *[NUMPY.lift(x, W) for x in ops], mode=mode).v
    return np.broadcast_to(r, ops[0].shape)


def _check(name: str, op: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    ops = ieee_tuples(rng, name, op, n)
    N = len(ops[0])
    fn = getattr(X, "ieee_" + op)
    args = [(name, *[int(o[i]) for o in ops], mode) for mode in MODES for i in range(N)]
    want_all = oracle_map(fn, args)
    stats = {}
    for j, mode in enumerate(MODES):
        want = want_all[j * N:(j + 1) * N]
        got = _core(name, op, ops, mode)
        bad = []
        for i, w in enumerate(want):
            g = int(got[i])
            if w == X.NAN:
                ok = g == fp.default_nan(name)
            else:
                ok = g == w
            if not ok:
                bad.append(f"{op}({', '.join(hexs([o[i] for o in ops]))}) {mode}: core={hex(g)} "
                           f"oracle={w if w == X.NAN else hex(w)}")
        assert not bad, f"{len(bad)} of {N} differ, e.g. {bad[:5]}"
        stats[mode] = want
    return ops, stats


def _coverage(name, op, ops, stats):
    """The input classes did produce the hard cases (else the test would prove little)."""
    F = ofmt(name)
    rne, rna, rz = stats["RNE"], stats["RNA"], stats["RZ"]
    N = len(rne)
    ties = sum(1 for a, b in zip(rne, rna) if a != b)
    inexact = sum(1 for a, b in zip(rne, rz) if a != b)
    nans = sum(1 for a in rne if a == X.NAN)
    infs = sum(1 for a in rne if a != X.NAN and X._is_inf(X.decode(name, a)))
    subn = sum(1 for a in rne if a != X.NAN and ((a >> F.pad) >> F.t) & ((1 << F.w) - 1) == 0
               and (a >> F.pad) & ((1 << F.t) - 1))
    need = max(N // 2000, 5)
    assert ties >= need, f"only {ties} RNE/RNA ties"
    assert inexact >= N // 10 and nans >= need and infs >= need and subn >= need, \
        (inexact, nans, infs, subn)
    if op in ("add", "fma"):
        # massive cancellation: a nonzero finite result 2^-(t/2) or more below the largest input
        def mag(c):
            v = X.decode(name, int(c))
            return abs(v) if not isinstance(v, tuple) else None
        canc = 0
        for i in range(0, N, 7):
            r = rne[i]
            if r == X.NAN:
                continue
            vr = mag(r)
            ins = [mag(o[i]) for o in ops]
            if vr and all(x is not None for x in ins) and vr * 2 ** (F.t // 2) < max(ins):
                canc += 1
        assert canc >= N // 700, f"only {canc} cancellations"


@pytest.mark.parametrize("op", ["add", "mul", "fma"])
def test_f32_vs_oracle_100k(op):
    ops, stats = _check("f32", op, N_F32, seed={"add": 1, "mul": 2, "fma": 3}[op])
    assert len(ops[0]) >= 100_000
    _coverage("f32", op, ops, stats)


@pytest.mark.parametrize("op", ["add", "mul", "fma"])
@pytest.mark.parametrize("name", ["f16", "bf16", "f64"])
def test_other_formats_vs_oracle(name, op):
    seed = {"f16": 10, "bf16": 20, "f64": 30}[name] + {"add": 1, "mul": 2, "fma": 3}[op]
    ops, stats = _check(name, op, N_OTHER, seed)
    _coverage(name, op, ops, stats)


# ------------------------------------------------------------------------------------------
# hand-picked IEEE rules
# ------------------------------------------------------------------------------------------

def _f32(op, *xs, mode="RNE", nan="default"):
    return getattr(fp, op)("f32", *[INT.lift(x, 32) for x in xs], mode=mode, nan=nan).v


def test_signed_zero_rules():
    P0, N0, ONE, MONE = 0, 0x80000000, 0x3F800000, 0xBF800000
    assert _f32("add", P0, N0) == P0
    assert _f32("add", P0, N0, mode="RD") == N0
    assert _f32("add", N0, N0) == N0
    assert _f32("add", ONE, MONE) == P0
    assert _f32("add", ONE, MONE, mode="RD") == N0
    assert _f32("mul", MONE, P0) == N0
    assert _f32("fma", MONE, P0, P0) == P0            # -0 + +0 = +0
    assert _f32("fma", MONE, P0, N0) == N0            # -0 + -0 = -0
    assert _f32("fma", ONE, MONE, ONE, mode="RD") == N0


def test_invalid_and_nan_propagation():
    INF, NINF, QNAN, SNAN = 0x7F800000, 0xFF800000, 0x7FC00001, 0x7F800002
    assert _f32("add", INF, NINF) == 0x7FC00000
    assert _f32("mul", INF, 0) == 0x7FC00000
    assert _f32("fma", INF, 0, QNAN) == 0x7FC00000
    assert _f32("fma", 0x3F800000, INF, NINF) == 0x7FC00000
    assert _f32("add", INF, INF) == INF
    # nan="propagate": the first NaN operand, quieted; invalid operations give the default NaN
    assert _f32("add", 0x3F800000, SNAN, nan="propagate") == 0x7FC00002
    assert _f32("add", QNAN, SNAN, nan="propagate") == QNAN
    assert _f32("mul", INF, 0, nan="propagate") == 0x7FC00000
    assert _f32("add", 0, QNAN, nan=0x7FFFFFFF) == 0x7FFFFFFF


def test_nan_priority_orders():
    """propagate-ORDER[:CODE]: the first NaN operand in ORDER wins, quieted; an invalid
    operation gives CODE. The H200's DMMA rule is "propagate-bca:0xFFF8000000000000"."""
    A, B, C = 0x7FC0000A, 0x7F80000B, 0xFFC0000C          # qNaN, sNaN, negative qNaN
    ONE, INF = 0x3F800000, 0x7F800000
    for order, want in [("abc", A), ("bca", B | 0x400000), ("cab", C), ("cba", C),
                        ("bac", B | 0x400000), ("acb", A)]:
        assert _f32("fma", A, B, C, nan=f"propagate-{order}") == want, order
    assert _f32("fma", ONE, B, C, nan="propagate-acb") == C       # a is no NaN: next is c
    assert _f32("fma", ONE, ONE, C, nan="propagate-bca") == C
    assert _f32("fma", INF, 0, ONE, nan="propagate-bca:0xFFC00000") == 0xFFC00000
    assert _f32("fma", INF, 0, C, nan="propagate-bca:0xFFC00000") == C   # a NaN beats invalid
    assert _f32("add", ONE, A, nan="propagate-cba") == A        # two operands: c is absent
    assert _f32("fma", A, B, C, nan="propagate") == _f32("fma", A, B, C, nan="propagate-abc")
    assert _f32("fma", A, B, C, nan="propagate-reverse") == C
    for bad in ("propagate-abd", "propagate-aa", "propagate-", "keep", "propagate-ab:zz"):
        with pytest.raises(ValueError):
            _f32("fma", A, B, C, nan=bad)


def test_overflow_by_mode():
    MAX = 0x7F7FFFFF
    for mode, pos, neg in [("RNE", 0x7F800000, 0xFF800000), ("RZ", MAX, 0x80000000 | MAX),
                           ("RU", 0x7F800000, 0x80000000 | MAX), ("RD", MAX, 0xFF800000),
                           ("RNA", 0x7F800000, 0xFF800000), ("RO", MAX, 0x80000000 | MAX)]:
        assert _f32("add", MAX, MAX, mode=mode) == pos, mode
        assert _f32("add", MAX | 0x80000000, MAX | 0x80000000, mode=mode) == neg, mode


@pytest.mark.parametrize("name", ["e5m2", "e4m3", "e5m2fnuz", "e4m3fnuz", "e3m2", "e2m3", "e2m1", "ue4m3"])
def test_small_formats_vs_oracle(name):
    """add/mul/fma in the 8-bit-and-smaller formats (non-IEEE specials, saturation, no -0).
    Regression: formats without NaN (e3m2, e2m3, e2m1) raised ValueError ("has no NaN")."""
    rng = np.random.default_rng(40)
    N = 1000
    ops3 = [rng.integers(0, 256, N) for _ in range(3)]
    for op in ("add", "mul", "fma"):
        ops = ops3 if op == "fma" else ops3[:2]
        for mode in MODES:
            got = _core(name, op, ops, mode)
            want = [getattr(X, "ieee_" + op)(name, *[int(o[i]) for o in ops], mode) for i in range(N)]
            bad = [i for i in range(N) if not (is_nan_bits(name, got[i]) if want[i] == X.NAN
                                               else int(got[i]) == want[i])]
            assert not bad, (op, mode, [(hexs([o[i] for o in ops]), hex(int(got[i])), want[i]) for i in bad[:5]])
