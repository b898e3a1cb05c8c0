"""The two readings of the TR/GTR-FDPA tail (mma `tail`: "algorithm" = [Xie2025]'s Algorithm
10/11 text, "mmasim" = mmasim 2.1.1's code) against the exact oracle (tests/oracles/exact.py,
`tail=`), against mmasim 2.1.1 itself when it is importable, and the settle probes that
separate them.

Source: docs/mmasim-notes.md sec. 3.8 and sec. 4 item 5 (the carry and cancellation probes);
mmasim 2.1.1 arithmetic/fdpa.py (tr_fdpa, gtr_fdpa).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from conftest import X, OpSpec, compare_with_oracle, lift_all
from mmaformal import isa, mma, theory
from mmaformal.bits import INT, NUMPY
from mmaformal.query.probes import _bits1
from mmaformal.fp import fmt

F, F2 = 24, 31
TR_FORMS = ("f16", "bf16", "tf32")
GTR_FORMS = ("e4m3fnuz", "e5m2fnuz")


def _bits(f: str, v: float) -> int:
    b = _bits1(fmt(f), v)
    assert b is not None, (f, v)
    return b


def _one(op, fa, prods, c, tail, zero_exp="excluded", L=None):
    """mma and oracle bits of one dot product whose products are given as (a, b) values."""
    L = L or (16 if op == "gtr" else 8)
    a = [_bits(fa, p[0]) for p in prods] + [0] * (L - len(prods))
    b = [_bits(fa, p[1]) for p in prods] + [0] * (L - len(prods))
    cb = _bits("f32", c)
    f = mma.gtr_fdpa if op == "gtr" else mma.tr_fdpa
    W = fmt(fa).storage
    got = f([INT.const(x, W, False) for x in a], [INT.const(x, W, False) for x in b],
            INT.const(cb, 32, False), fa, fa, F, F2, zero_exp, tail=tail).v
    g = X.gtr_fdpa if op == "gtr" else X.tr_fdpa
    want = g(a, b, cb, fa, fa, F, F2, zero_exp, tail=tail)
    return got, want


# -- the two probes of docs/mmasim-notes.md item 5 (CDNA3 f32_32x32x8_f16), and subnormal results

CASES = [
    # (what, form, op, products as (a, b), c, algorithm bits, mmasim bits)
    ("carry", "f16", "tr", [(2.0 ** -11, 2.0 ** -11), (2.0 ** -16, 2.0 ** -15)], 2 - 2.0 ** -23,
     0x40000001, 0x40000000),
    ("cancellation", "f16", "tr", [(-1.5 * 2.0 ** -12, 2.0 ** -12), (2.0 ** -16, 2.0 ** -16)], 1.0,
     0x3F7FFFFE, 0x3F7FFFFF),
    ("carry, fp8 scaled 2^20", "e4m3fnuz", "gtr", [(2.0 ** -1, 2.0 ** -1), (2.0 ** -5, 2.0 ** -6)],
     (2 - 2.0 ** -23) * 2.0 ** 20, 0x4A000001, 0x4A000000),
    ("tiny positive, c = +0", "bf16", "tr", [(5 * 2.0 ** -77, 2.0 ** -73), (2.0 ** -80, 2.0 ** -80)],
     0.0, 0x00000003, 0x00000002),
    ("tiny negative, c = +0", "bf16", "tr", [(-3 * 2.0 ** -76, 2.0 ** -74), (2.0 ** -80, 2.0 ** -80)],
     0.0, 0x80000001, 0x80000002),
    ("tiny positive, c = +0", "tf32", "tr", [(5 * 2.0 ** -77, 2.0 ** -73), (2.0 ** -80, 2.0 ** -80)],
     0.0, 0x00000003, 0x00000002),
    ("tiny negative, c = +0", "tf32", "tr", [(-3 * 2.0 ** -76, 2.0 ** -74), (2.0 ** -80, 2.0 ** -80)],
     0.0, 0x80000001, 0x80000002),
]


@pytest.mark.parametrize("what,fa,op,prods,c,alg,mms", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_constructed_cases(what, fa, op, prods, c, alg, mms):
    for tail, want in (("algorithm", alg), ("mmasim", mms)):
        got, oracle = _one(op, fa, prods, c, tail, L=4 if fa == "tf32" else None)
        assert (got, oracle) == (want, want), (what, tail, hex(got), hex(oracle))


def test_unknown_tail_is_rejected():
    a = [INT.const(0, 16, False)] * 8
    with pytest.raises(ValueError, match="tail must be one of"):
        mma.tr_fdpa(a, a, INT.const(0, 32, False), "f16", "f16", F, F2, tail="RD")
    with pytest.raises(ValueError, match="unknown tail"):
        X.tr_fdpa([0] * 8, [0] * 8, 0, "f16", "f16", F, F2, tail="RD")


# -- random inputs of every class (tests/conftest.py FDPA_KINDS) against the oracle

def _spec(fa, L, gtr, tail) -> OpSpec:
    f = mma.gtr_fdpa if gtr else mma.tr_fdpa
    g = X.gtr_fdpa if gtr else X.tr_fdpa

    def core(A, B, C, S):
        return f(lift_all(fa, A), lift_all(fa, B), lift_all("f32", [C])[0], fa, fa, F, F2,
                 "excluded", tail=tail).v

    def oracle(a, b, c, s):
        return g(a, b, c, fa, fa, F, F2, "excluded", tail=tail)

    return OpSpec(f"{'gtr' if gtr else 'tr'}-{fa}-{tail}", fa, fa, "f32", L, F, "f32", core, oracle)


@pytest.mark.parametrize("fa,L,gtr", [("f16", 8, False), ("bf16", 8, False), ("tf32", 4, False),
                                      ("e4m3fnuz", 16, True), ("e5m2fnuz", 16, True)])
def test_random_classes_against_oracle(fa, L, gtr):
    n, total, ex = compare_with_oracle(_spec(fa, L, gtr, "mmasim"), 60, seed=900 + L + len(fa))
    assert n == 0, ex
    assert total >= 400


# -- inputs built next to the ties that the tails resolve differently

def _is_tie(t: Fraction) -> bool:
    """t is an odd multiple of half an f32 ulp at its binade (a tie of RNE-FP32)."""
    if t == 0:
        return False
    e = max(math.floor(math.log2(abs(t))), -126)
    q = abs(t) / Fraction(2) ** (e - 24)
    return q.denominator == 1 and q.numerator % 2 == 1


def _near_tie_inputs(rng, fa: str, L: int, n: int):
    """n dot products whose exact value is an RNE-FP32 tie t moved by one small term d:
    c = +-2^E (1 + j 2^-23 or 1 - j 2^-24) (E in {0, 1}), t = +-(2^E + r 2^(E-25)) (a carry, a
    cancellation or neither), products: the bits of t - c and d = +-2^(Exp(c)-30 .. Exp(c)-33); and, where the formats reach them
    (bf16, tf32), subnormal ties t = m 2^-150 with c = +-0 or a few 2^-149 and d = +-2^-154 ..
    2^-163. All scaled by 2^s; only inputs exact in the formats are kept. Built from the
    values, not from mma."""
    f = fmt(fa)
    A, B, C = [], [], []
    tries = 0
    while len(C) < n:
        tries += 1
        assert tries < 200 * n, "generator starved"
        sg = lambda: int(rng.choice([-1, 1]))
        if fa in ("bf16", "tf32") and rng.random() < 0.3:
            c = Fraction(0) if rng.random() < 0.7 else sg() * int(rng.integers(1, 8)) * Fraction(2) ** -149
            t = sg() * int(rng.integers(1, 32)) * Fraction(2) ** -150
            d = sg() * Fraction(2) ** -int(rng.integers(154, 164))
            s = 0
        else:
            # the readings differ only when S leaves c's binade (carry or cancellation), so c
            # and t sit next to a power of two P and d next to 2^(Exp(c) - 31)
            E = int(rng.integers(0, 2))
            j = int(rng.integers(-3, 4))
            sc = sg()
            c = sc * Fraction(2) ** E * (1 + j * Fraction(2) ** (-23 if j >= 0 else -24))
            t = sc * (Fraction(2) ** E + int(rng.integers(-12, 13)) * Fraction(2) ** (E - 25))
            ec = math.floor(math.log2(abs(c)))
            d = sg() * Fraction(2) ** (ec - int(rng.integers(30, 34)))
            s = int(rng.integers(-30, 31)) + (20 if fa.startswith("e") else 0)
        if not _is_tie(t):
            continue
        diff = t - c
        u = Fraction(2) ** -160 if diff.denominator > 2 ** 100 else Fraction(2) ** -25
        num = diff / u
        if num.denominator != 1:
            continue
        prods = [math.copysign(1, num) * float(u) * 2.0 ** i
                 for i in range(abs(int(num)).bit_length()) if abs(int(num)) >> i & 1] + [float(d)]
        if len(prods) > L:
            continue
        ab = []
        for p in prods:
            pv = p * 2.0 ** s
            mm, ee = math.frexp(abs(pv))
            ea = (ee - 1) // 2
            a, b = _bits1(f, math.copysign(mm * 2.0 ** (ee - ea), pv)), _bits1(f, 2.0 ** ea)
            if a is None or b is None:
                break
            ab.append((a, b))
        cb = _bits1(fmt("f32"), float(c) * 2.0 ** s)
        if len(ab) < len(prods) or cb is None:
            continue
        pos = rng.permutation(L)[:len(ab)]
        a = [0] * L
        b = [0] * L
        for (x, y), k in zip(ab, pos):
            a[k], b[k] = x, y
        A.append(a), B.append(b), C.append(cb)
    return np.array(A, dtype=np.uint64), np.array(B, dtype=np.uint64), np.array(C, dtype=np.uint64)


@pytest.mark.parametrize("fa,L,gtr", [("f16", 8, False), ("bf16", 8, False), ("tf32", 4, False),
                                      ("e4m3fnuz", 16, True), ("e5m2fnuz", 16, True)])
def test_near_ties_against_oracle(fa, L, gtr):
    rng = np.random.default_rng(77 + L + len(fa))
    A, B, C = _near_tie_inputs(rng, fa, L, 300)
    W = fmt(fa).storage
    cols = lambda M: [NUMPY.lift(M[:, k].astype(np.int64), W) for k in range(L)]
    f = mma.gtr_fdpa if gtr else mma.tr_fdpa
    g = X.gtr_fdpa if gtr else X.tr_fdpa
    outs = {}
    for tail in mma.TR_TAILS:
        got = np.broadcast_to(f(cols(A), cols(B), NUMPY.lift(C.astype(np.int64), 32), fa, fa, F, F2,
                                "excluded", tail=tail).v, C.shape)
        want = [g([int(x) for x in A[i]], [int(x) for x in B[i]], int(C[i]), fa, fa, F, F2,
                  "excluded", tail=tail) for i in range(len(C))]
        bad = [i for i in range(len(C)) if int(got[i]) != want[i]]
        assert not bad, [(tail, [hex(int(x)) for x in A[i]], hex(int(C[i])), hex(int(got[i])),
                          hex(want[i])) for i in bad[:3]]
        outs[tail] = np.array(want)
    # the inputs reach the cases where the readings differ (else this test would prove little)
    assert int((outs["algorithm"] != outs["mmasim"]).sum()) >= 3


def test_zero_c_exponent_is_unobservable_under_mmasim_tail():
    """mmasim gives a zero c the exponent -126 in E; under tail "mmasim" that changes nothing
    (its renormalised floor is at 2^-157 or coarser), under "algorithm" it does. bf16 with
    zero_exp "field" is that rule (a zero product's field exponent -252 is the lowest product
    exponent there is)."""
    rng = np.random.default_rng(5)
    A, B, C = _near_tie_inputs(rng, "bf16", 8, 400)
    keep = [i for i in range(len(C)) if C[i] == 0]
    A, B, C = A[keep], B[keep], C[keep]
    assert len(C) >= 40
    cols = lambda M: [NUMPY.lift(M[:, k].astype(np.int64), 16) for k in range(8)]
    res = {}
    for tail in mma.TR_TAILS:
        for z in ("excluded", "field"):
            res[tail, z] = np.broadcast_to(mma.tr_fdpa(cols(A), cols(B), NUMPY.lift(C.astype(np.int64), 32),
                                                       "bf16", "bf16", F, F2, z, tail=tail).v, C.shape)
    assert np.array_equal(res["mmasim", "excluded"], res["mmasim", "field"])
    assert not np.array_equal(res["algorithm", "excluded"], res["algorithm", "field"])


# -- mmasim 2.1.1 itself

_MMASIM_FORMS = [("gfx942/v_mfma_f32_32x32x8_f16", "f32_32x32x8_f16", "f16", 8, False),
                 ("gfx942/v_mfma_f32_32x32x8_bf16", "f32_32x32x8_bf16", "bf16", 8, False),
                 ("gfx942/v_mfma_f32_32x32x4_xf32", "f32_32x32x4_xf32", "tf32", 4, False),
                 ("gfx942/v_mfma_f32_32x32x16_fp8_fp8", "f32_32x32x16_fp8_fp8", "e4m3fnuz", 16, True),
                 ("gfx942/v_mfma_f32_32x32x16_bf8_bf8", "f32_32x32x16_bf8_bf8", "e5m2fnuz", 16, True)]


@pytest.mark.parametrize("name,suffix,fa,L,gtr", _MMASIM_FORMS, ids=[f[2] for f in _MMASIM_FORMS])
def test_against_mmasim(name, suffix, fa, L, gtr):
    """The rival theory gfx942.<form>.mmasim-tail gives mmasim 2.1.1's bits on near-tie inputs
    (finite; zero results compared without their sign: mmasim's zeros are all +0)."""
    torch = pytest.importorskip("torch")
    amd = pytest.importorskip("mmasim.amd")
    rng = np.random.default_rng(31 + L)
    A, B, C = _near_tie_inputs(rng, fa, L, 400)
    ins = isa.lookup(name)
    assert ins.k == L
    tid = {"f16": "gfx942.f16", "bf16": "gfx942.bf16", "tf32": "gfx942.xf32"}.get(fa, "gfx942.fp8")
    ts = theory.default()
    W = fmt(fa).storage
    cols = lambda M: [NUMPY.lift(M[:, k].astype(np.int64), W) for k in range(L)]
    ours = {}
    for t in (tid, tid + ".mmasim-tail"):
        th = ts.resolve(ins, t)
        ours[t] = np.broadcast_to(th.dot(NUMPY, cols(A), cols(B), NUMPY.lift(C.astype(np.int64), 32)).v,
                                  C.shape).astype(np.uint32)
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32,
          "e4m3fnuz": torch.float8_e4m3fnuz, "e5m2fnuz": torch.float8_e5m2fnuz}[fa]
    view = {16: (np.int16, torch.int16), 32: (np.int32, torch.int32), 8: (np.uint8, torch.uint8)}[W]

    def tt(M):
        return torch.from_numpy(np.ascontiguousarray(M.astype({16: np.uint16, 32: np.uint32, 8: np.uint8}[W]))
                                .view(view[0])).view(dt)
    cc = torch.from_numpy(C.astype(np.uint32).view(np.int32)).view(torch.float32)
    theirs = amd.MFMA("CDNA3", suffix).dpa(tt(A), tt(B), cc).view(torch.int32).numpy().view(np.uint32)
    mag = lambda x: x & 0x7FFFFFFF
    same = lambda x, y: (x == y) | ((mag(x) == 0) & (mag(y) == 0))
    bad = np.flatnonzero(~same(ours[tid + ".mmasim-tail"], theirs))
    assert bad.size == 0, [(hex(int(C[i])), hex(int(ours[tid + '.mmasim-tail'][i])), hex(int(theirs[i])))
                           for i in bad[:3]]
    assert int((~same(ours[tid], theirs)).sum()) >= 3         # the primary's reading is not mmasim's


# -- the settle probes separate the two readings, each candidate playing the GPU

@pytest.mark.parametrize("name", ["gfx942/v_mfma_f32_32x32x8_f16", "gfx942/v_mfma_f32_32x32x8_bf16",
                                  "gfx942/v_mfma_f32_32x32x4_xf32", "gfx942/v_mfma_f32_16x16x32_fp8_bf8"])
def test_settle_tail_probes(name, tmp_path):
    from mmaformal.query import settle
    from mmaformal.query.pool import evaluate
    ins = isa.lookup(name)
    cs = settle.candidates(name, "tail")
    assert [v for _, v, _ in cs][:2] == ["mmasim", "algorithm"]     # the primary's value first
    man = settle.write(name, "tail", tmp_path)
    info = man["features"]["tail"]
    assert info["probes"] >= 10 and info["separating"] == info["probes"]
    assert len(man["probes"]) == info["probes"]
    A = np.load(tmp_path / "tail" / "A.npy")
    for lab, v, m in cs:
        if v not in ("algorithm", "mmasim"):
            continue
        # this candidate plays the GPU: D = its predictions
        D = np.zeros((info["probes"], ins.m, ins.n), dtype=np.uint32)
        for p in man["probes"]:
            D[p["tile"], 0, 0] = int(p["predictions"][lab], 16)
        np.save(tmp_path / "tail" / "D.npy", D)
        vd = settle.verdict(tmp_path)
        assert vd["values"] == [v], vd
    assert A.shape[0] == info["probes"]


def test_tail_parameter_keeps_theory_hashes():
    """A theory that leaves `tail` out keeps its hash; writing the default is refused, and
    replace() drops it again."""
    ts = theory.default()
    th = ts.get("gfx942.f16")
    assert "tail" not in th.param_dict and th.param("tail") == "algorithm"
    rv = ts.get("gfx942.f16.mmasim-tail")
    assert rv.param_dict["tail"] == "mmasim" and "gfx942.f16" in rv.competes_with
    assert th.replace(tail="mmasim").hash() == rv.replace(id=th.id, competes_with=th.competes_with,
                                                          primary=True).hash()
    assert rv.replace(tail="algorithm").params == th.params
    with pytest.raises(ValueError, match="leave parameter tail out"):
        theory.check_static(theory.dataclasses.replace(th, params=th.params + (("tail", "algorithm"),)), "x")
    with pytest.raises(ValueError, match="tail"):
        th.replace(tail="RD")
