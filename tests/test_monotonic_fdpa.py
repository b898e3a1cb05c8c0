"""Monotonicity of T-FDPA chains (and of one TR-FDPA block) piece by piece (query.claims.monotonic.monotonic_lemmas_fdpa): the
lemma set of a fused block, the lemmas that carry the proof solved here, the lemmas that must
fail where the arithmetic is not monotone (f16 x f16 products: a subnormal operand raises the
alignment exponent with a tiny gain), the reversed output lemma (the twin), the stored records
of the H100 campaign, and an exact-rational oracle (tests/oracles/exact.py, no mmaformal code)
that checks random increases of one addend never lower the output of a proved theory and that
a stored witness of a refuted one does lower it."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from mmaformal import paths
from mmaformal.query.claims import bound_tr as CBT
from mmaformal.query.claims import common as CC
from mmaformal.query.claims import monotonic as CM
from mmaformal.query.model import Lemma, resolve
from mmaformal.query.solvers import solve_smt2
from mmaformal.query.store import lemma_text, record_parts

from oracles import exact as O

FP8 = "sm100/tcgen05.mma.m64n8k32.kind::f8f6f4.f16.e4m3.e4m3"   # theory sm100.f8f6f4.f16: L 32, F 25
F16 = "sm100/mma.m16n8k16.f16.f16.f16.f16"         # theory sm100.f16.f16: L 16, F 25


def _lemmas(name, reverse=False, gtr=False):
    """The monotonicity lemmas of instruction `name`, by lemma name."""
    return {lm.name: lm for lm in CM.monotonic_lemmas_fdpa(CC.structure(resolve(name), gtr=gtr),
                                                          CC.real_order, CC.term_le, reverse=reverse)}


@pytest.fixture(scope="module")
def fp8_lemmas():
    return _lemmas(FP8)


def _status(lm, timeout=60):
    return solve_smt2(lm.text, "bitwuzla", timeout).status


def test_lemma_set_of_one_fused_block(fp8_lemmas):
    names = set(fp8_lemmas)
    for t in (0, 31, 32):                       # 32 products, then c
        for part in ("range", "coarsen", "same", "gain.up", "gain.down"):
            assert f"block0.t{t}.{part}" in names
    assert {"block0.flags", "block0.zero"} <= names
    outs = sorted(int(n.rsplit(".d", 1)[1]) for n in names if ".out.d" in n)
    assert outs == list(range(-outs[-1], outs[-1] + 1)) and outs[-1] > 20
    # one text per term shape: the 32 products share theirs
    texts = {fp8_lemmas[f"block0.t{t}.gain.up"].text for t in range(32)}
    assert len(texts) == 1


@pytest.mark.parametrize("name", ["block0.t0.range", "block0.t0.gain.up", "block0.t0.gain.down",
                                  "block0.t32.gain.up", "block0.t32.same", "block0.flags",
                                  "block0.zero", "block0.out.d30"])
def test_the_fp8_lemmas_hold(fp8_lemmas, name):
    assert _status(fp8_lemmas[name]) == "unsat"


def test_the_gain_lemma_fails_for_f16_products():
    lm = _lemmas(F16)
    assert _status(lm["block0.t0.gain.up"]) == "sat"
    status, parts = CC.run_lemmas([lm["block0.t0.range"], lm["block0.t0.gain.up"]], "bitwuzla", 60)
    assert status == "failed" and parts[-1]["status"] == "sat"


def test_the_reversed_output_lemma_is_satisfiable():
    rev = _lemmas(FP8, reverse=True)
    assert _status(rev["block0.out.d30"]) == "sat"


@pytest.mark.parametrize("name", ["gfx908/v_mfma_f32_16x16x4f16", "sm100/mma.m16n8k4.f64.f64.f64.f64"])
def test_other_ops_are_not_decomposed(name):
    with pytest.raises(CC.NotDecomposable):
        CM.monotonic_lemmas_fdpa(CC.structure(resolve(name)), CC.real_order, CC.term_le)


def test_the_stored_decomposed_proof():
    recs = [(p, json.loads(p.read_text())) for p in (paths.shipped("proofs") / "monotonic").glob("*.json")]
    path, rec = next((p, r) for p, r in recs if FP8 in r.get("instructions", []))
    assert rec["verdict"] == "proved" and rec["method"] == "decomposed"
    assert rec["twin"]["status"] == "sat"
    parts = record_parts(path, rec)
    names = {p["lemma"] for p in parts}
    assert {"block0.t0.gain.up", "block0.out.d0", "block0.flags"} <= names
    assert all(p["status"] == "unsat" for p in parts)
    for p in parts[:20]:
        assert lemma_text(p["sha256"]) is not None


# ---- GST-FDPA (kind::mxf4): group terms cut at their exact sum ---------------------------------

MXF4 = "sm100/tcgen05.mma.m128n104k64.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.ue8m0"


@pytest.fixture(scope="module")
def mxf4_lemmas():
    return _lemmas(MXF4)


def test_mxf4_lemma_set_cuts_each_group_at_its_exact_sum(mxf4_lemmas):
    names = set(mxf4_lemmas)
    # L = 64, G = 16: four group terms (t0..t3) and c (t4); 16 products per group
    for g in range(4):
        for i in (0, 15):
            for part in ("mono", "zero", "range"):
                assert f"block0.g{g}.p{i}.{part}" in names
        assert {f"block0.g{g}.sum", f"block0.g{g}.zeroflag"} <= names
    for t in range(5):
        for part in ("range", "coarsen", "same", "gain.up", "gain.down"):
            assert f"block0.t{t}.{part}" in names
    assert not any(".t5." in n for n in names)
    # the group terms read only the cut variables and the scales: one text for all four
    assert len({mxf4_lemmas[f"block0.t{t}.same"].text for t in range(4)}) == 1
    assert "GP_" in mxf4_lemmas["block0.t0.same"].text
    # the per-product lemmas are the same query at every position of every group
    assert len({mxf4_lemmas[f"block0.g{g}.p{i}.mono"].text for g in range(4) for i in range(16)}) == 1


@pytest.mark.parametrize("name", ["block0.g0.p0.mono", "block0.g0.p0.zero", "block0.g0.p0.range",
                                  "block0.g0.zeroflag", "block0.t0.same", "block0.t0.gain.up",
                                  "block0.t0.range", "block0.flags"])
def test_the_mxf4_lemmas_hold(mxf4_lemmas, name):
    assert _status(mxf4_lemmas[name], 120) == "unsat"


def test_the_mxf4_group_lemma_needs_its_order_hypothesis(mxf4_lemmas):
    """The group term's mono.same with the cut sums' order reversed (GP_ >= GPp_ instead of
    GP_ <= GPp_) is satisfiable: the hypothesis carries the lemma."""
    import z3
    lm = mxf4_lemmas["block0.t0.same"]
    GP, GPp = z3.BitVec("GP_", 1), None
    flip = []
    for a in lm.assertions:
        s_ = a.sexpr()
        if s_.startswith("(and (bvsle GP_ GPp_)") or s_ == "(bvsle GP_ GPp_)":
            found = [x for x in z3.z3util.get_vars(a) if str(x) in ("GP_", "GPp_")]
            gp = next(x for x in found if str(x) == "GP_")
            gpp = next(x for x in found if str(x) == "GPp_")
            flip.append(z3.substitute(a, (gp, gpp), (gpp, gp)))
        else:
            flip.append(a)
    assert flip != list(lm.assertions)
    assert _status(Lemma("flipped", "", flip), 120) == "sat"


def test_the_stored_mxf4_proofs():
    recs = [(p, json.loads(p.read_text())) for p in (paths.shipped("proofs") / "monotonic").glob("*.json")]
    for head in (MXF4, MXF4.replace("mxf4.", "mxf4nvf4.").replace("2X", "4X").replace("ue8m0", "ue4m3")):
        path, rec = next((p, r) for p, r in recs if head in r.get("instructions", []))
        assert rec["verdict"] == "proved" and rec["method"] == "decomposed"
        assert rec["twin"]["status"] == "sat"
        parts = record_parts(path, rec)
        names = {p["lemma"] for p in parts}
        assert {"block0.g0.p0.mono", "block0.g0.sum", "block0.t0.gain.up", "block0.flags"} <= names
        assert all(p["status"] == "unsat" for p in parts)


def _gst_mxf4(a, b, c, sa, sb, G=16, F=35, zero_exp=-139, block=32):
    """GST-FDPA of sm100.mxf4 on finite inputs (e2m1 operands, ue8m0 scales, one per `block`
    elements (scale_vec::2X), f32 c, RZ-FP32), from exact rationals: each group's G products
    summed exactly and scaled, a group whose products are all zero keys zero_exp, then the
    fused sum truncated to F bits at e_max."""
    terms = []
    for g in range(len(a) // G):
        ps = [O._val(O.decode("e2m1", x)) * O._val(O.decode("e2m1", y))
              for x, y in zip(a[g * G:(g + 1) * G], b[g * G:(g + 1) * G])]
        j = g * G // block
        ea, eb = O._ilog2(O.decode("ue8m0", sa[j])), O._ilog2(O.decode("ue8m0", sb[j]))
        allzero = all(x == 0 for x in ps)
        terms.append((sum(ps) * O._pow2(ea + eb), zero_exp if allzero else ea + eb))
    vc = O._val(O.decode("f32", c))
    terms.append((vc, zero_exp if vc == 0 else O.signed_sig_exp("f32", c)[1]))
    E = max(k for _, k in terms)
    S = sum((O._rz(v * O._pow2(-E), F) for v, _ in terms), O.Fraction(0))
    return O.round_to("f32", S * O._pow2(E), "RZ")


def test_oracle_random_mxf4_increases_never_lower_the_output():
    """Random pairs that raise one e2m1 product (scales equal on both sides), compared by an
    exact-rational GST-FDPA (no mmaformal code): no decrease; and the oracle agrees with the
    simulator on the pairs' first inputs."""
    from mmaformal.query.model import Witness, replay
    m = resolve(MXF4)
    rng = random.Random(11)
    f32 = lambda x: O._val(O.decode("f32", x))
    checked = 0
    for n in range(150):
        a = [rng.getrandbits(4) for _ in range(64)]
        b = [rng.getrandbits(4) for _ in range(64)]
        sa = [rng.randrange(120, 135) for _ in range(2)]
        sb = [rng.randrange(120, 135) for _ in range(2)]
        c = rng.choice([0, 0x80000000, rng.getrandbits(32) & 0x3FFFFFFF, 0xBF800000 | rng.getrandbits(16)])
        k = rng.randrange(64)
        a2, b2 = list(a), list(b)
        a2[k], b2[k] = rng.getrandbits(4), rng.getrandbits(4)
        pv = lambda x, y: O._val(O.decode("e2m1", x)) * O._val(O.decode("e2m1", y))
        if pv(a2[k], b2[k]) < pv(a[k], b[k]):
            a, a2, b, b2 = a2, a, b2, b
        o1, o2 = _gst_mxf4(a, b, c, sa, sb), _gst_mxf4(a2, b2, c, sa, sb)
        checked += 1
        assert f32(o2) >= f32(o1), (a, b, c, sa, sb, k)
        if n < 40:
            w = Witness("e2m1", "e2m1", "f32", a, b, c, "ue8m0", sa, sb)
            assert replay([m], w, ("numpy",))[m.label] == o1
    assert checked == 150


# ---- the exact-rational oracle --------------------------------------------------------------

def _val(fmt, bits):
    v = O.decode(fmt, bits)
    return None if O._is_nan(v) else (O._val(v) if not O._is_inf(v) else None)


def _finite(fmt, rng):
    """A finite element; fp8 with exponent field 1..9 (no f16 overflow of a 32-term sum), so
    that most pairs compare finite outputs and alignment exponents often change."""
    while True:
        if fmt == "e4m3":
            x = (rng.getrandbits(1) << 7) | (rng.randrange(0, 10) << 3) | rng.getrandbits(3)
        else:
            x = (rng.getrandbits(1) << 15) | (rng.randrange(0, 20) << 10) | rng.getrandbits(10)
        if _val(fmt, x) is not None:
            return x


def _pairs(F, n, seed=7):
    """(pairs compared, pairs whose output decreased) over n random pairs that differ in one
    addend whose exact value grows (T-FDPA e4m3 x e4m3 + f16, RNE-FP16, zero_exp -21)."""
    rng = random.Random(seed)
    tfdpa = lambda a, b, c: O.t_fdpa(a, b, c, "e4m3", "e4m3", "f16", F, "RNE-FP16", -21)
    checked = bad = 0
    for _ in range(n):
        a = [_finite("e4m3", rng) for _ in range(32)]
        b = [_finite("e4m3", rng) for _ in range(32)]
        c = _finite("f16", rng)
        k = rng.randrange(33)
        a2, b2, c2 = list(a), list(b), c
        if k < 32:
            a2[k], b2[k] = _finite("e4m3", rng), _finite("e4m3", rng)
            grows = _val("e4m3", a2[k]) * _val("e4m3", b2[k]) > _val("e4m3", a[k]) * _val("e4m3", b[k])
        else:
            c2 = _finite("f16", rng)
            grows = _val("f16", c2) > _val("f16", c)
        if not grows:
            a, a2, b, b2, c, c2 = a2, a, b2, b, c2, c
            if (a, b, c) == (a2, b2, c2):
                continue
        d1, d2 = _val("f16", tfdpa(a, b, c)), _val("f16", tfdpa(a2, b2, c2))
        if d1 is None or d2 is None:
            continue
        checked += 1
        bad += d2 < d1
    return checked, bad


def test_oracle_random_increases_never_lower_the_fp8_output():
    """sm100.f8f6f4.f16 (F 25): no decrease over 400 random pairs."""
    checked, bad = _pairs(25, 400)
    assert checked > 350 and bad == 0


def test_oracle_sees_the_decrease_of_a_coarser_alignment():
    """The comparison can fail: raising a0 from 1.75 to 2.0 lifts e_max by one, and with F = 2
    the three addends 0.25 are then truncated to 0 (2.5 -> 2.0); with F = 25 nothing is lost
    (2.5 -> 2.75)."""
    a = [0x3E, 0x28, 0x28, 0x28] + [0] * 28             # e4m3: 1.75, 0.25, 0.25, 0.25
    b = [0x38] * 4 + [0] * 28                           # 1.0
    a2 = [0x40] + a[1:]                                 # 2.0
    out = lambda F, x: _val("f16", O.t_fdpa(x, b, 0, "e4m3", "e4m3", "f16", F, "RNE-FP16", -21))
    assert (out(2, a), out(2, a2)) == (2.5, 2.0)
    assert (out(25, a), out(25, a2)) == (2.5, 2.75)


def test_oracle_replays_a_stored_f16_witness():
    recs = [json.loads(p.read_text())
            for p in (paths.shipped("counterexamples") / "monotonic").glob("sm100_mma.m16n8k16.f16.f16*.json")]
    assert recs
    for rec in recs:
        (r1, r2) = rec["runs"][:2]
        outs = []
        for r in (r1, r2):
            i = r["inputs"]
            a, b = ([int(x, 16) for x in i[k]] for k in ("a", "b"))
            c = int(i["c"], 16) if isinstance(i["c"], str) else int(i["c"][0], 16)
            outs.append(_val("f16", O.t_fdpa(a, b, c, "f16", "f16", "f16", 25, "RNE-FP16", -21)))
        assert outs[1] < outs[0], rec["tool"]["detail"]


def test_a_stored_witness_transfers_to_a_neighbour():
    """witness_search.monotonic_pair(transfer=...): the stored f16 x f16 witnesses of other
    instructions, moved to every offset, refute sm75's wmma f16 theory at once; the pair is
    checked here on the int back-end (prove replays it on every back-end before storing)."""
    from mmaformal.query.model import replay
    from mmaformal.query.claims import value_lt
    from mmaformal.query.witness_search import monotonic_pair
    m = resolve("sm75/wmma.mma.m16n16k16.f16.f16")
    pairs = CM.stored_monotonic_pairs(m)
    assert pairs and all(len(x[0]) <= 32 for x, _ in pairs)
    found = monotonic_pair(m, budget=0, transfer=pairs)
    assert found is not None
    w1, w2, sel = found
    r1, r2 = (replay([m], w, ("int",))[m.label] for w in (w1, w2))
    assert value_lt(r2, r1, m.ins.d)
    assert monotonic_pair(m, budget=0) is None          # the searches alone find nothing at once


def _sm90_fp8_f32(a, b, c, fa, fb):
    """sm90 fp8 `mma` with f32 output, from its SASS (theories/sm90.toml): operands converted
    exactly to f16; k with k mod 4 in {0, 1} feed the first HMMA (T-FDPA, F 25, RZ-FP32,
    from +0), the rest the second, accumulating onto the first; then c is added (IEEE f32
    RNE). Exact rationals (tests/oracles/exact.py), no mmaformal code."""
    f16 = lambda fmt, x: O.round_to("f16", O._val(O.decode(fmt, x)), "RNE")
    a16, b16 = [f16(fa, x) for x in a], [f16(fb, x) for x in b]
    K = len(a)
    order = [k for k in range(K) if k % 4 < 2] + [k for k in range(K) if k % 4 >= 2]
    acc = 0
    for half in (order[:K // 2], order[K // 2:]):
        acc = O.t_fdpa([a16[k] for k in half], [b16[k] for k in half], acc, "f16", "f16", "f32",
                       25, "RZ-FP32")
    return O.ieee_add("f32", acc, c, "RNE")


def test_oracle_replays_the_stored_chain_witnesses():
    """The sm90 fp8 f32 groups are refuted by witness_search's chain family: the first HMMA's
    output steps from pred(2^N) to 2^N, and the second HMMA, aligned one binade higher,
    truncates its small products one bit coarser. Each stored pair, recomputed by the
    exact-rational oracle, gives the stored outputs, the second smaller."""
    recs = [json.loads(p.read_text()) for p in
            (paths.shipped("counterexamples") / "monotonic").glob("sm90_mma.m16n8k*.f32.e*.f32-*.json")]
    assert len(recs) == 8
    for rec in recs:
        fm = rec["formats"]
        det = rec["tool"]["detail"]
        outs = []
        for inputs, want in ((rec["runs"][0]["inputs"], det["output"]), (det["witness2"], det["output2"])):
            a, b = ([int(x, 16) for x in inputs[k]] for k in ("a", "b"))
            got = _sm90_fp8_f32(a, b, int(inputs["c"], 16), fm["a"], fm["b"])
            assert got == int(want, 16), (rec["runs"][0]["model"], hex(got), want)
            outs.append(_val("f32", got))
        assert outs[1] < outs[0]


def test_the_chain_family_finds_what_the_others_miss():
    """Family 4 of witness_search (a later block's accumulator steps up to a power of two)
    applies to a chain of blocks and not to one fused block; the search finds a pair for
    sm90's fp8 f32 `mma` whose decrease the exact-rational oracle confirms."""
    from mmaformal.query import witness_search as W
    m = resolve(FP8F32)
    rng = __import__("numpy").random.default_rng(1)
    assert W._chain_candidates(m, rng, 8) is not None
    assert W._chain_candidates(resolve(FP8), rng, 8) is None
    found = W.monotonic_pair(m, budget=30, batch=256)
    assert found is not None and found[2] < m.k
    w1, w2, _ = found
    o1, o2 = (_sm90_fp8_f32(w.a, w.b, w.c, "e4m3", "e4m3") for w in (w1, w2))
    assert _val("f32", o2) < _val("f32", o1)


def test_oracle_replays_the_stored_subnormal_key_witnesses():
    """gfx942's bf16 TR-FDPA groups are refuted by witness_search's family 5: a product steps
    from (151/128)(217/128) 2^(v-1) = 2^v - 2^(v-15) to the smallest bf16 subnormal times
    2^(v+133), whose key overstates its value by 7 binades; e_max jumps 8 binades and the
    other products of the block, each just below the new unit, are truncated away. Each
    stored pair, recomputed by the exact-rational oracle (blocks of L = 8 chained through
    the accumulator), gives the stored outputs, the second smaller."""
    recs = [json.loads(p.read_text()) for p in
            (paths.shipped("counterexamples") / "monotonic").glob("gfx942_v_mfma_f32_*_bf16-*.json")]
    assert len(recs) == 2
    for rec in recs:
        det = rec["tool"]["detail"]
        outs = []
        for inputs, want in ((rec["runs"][0]["inputs"], det["output"]), (det["witness2"], det["output2"])):
            a, b = ([int(x, 16) for x in inputs[k]] for k in ("a", "b"))
            acc = int(inputs["c"], 16)
            for k0 in range(0, len(a), 8):
                acc = O.tr_fdpa(a[k0:k0 + 8], b[k0:k0 + 8], acc, "bf16", "bf16", 24, 31)
            assert acc == int(want, 16), (rec["runs"][0]["model"], hex(acc), want)
            outs.append(_val("f32", acc))
        assert outs[1] < outs[0]
        assert any(int(x, 16) == 1 for x in det["witness2"]["a"])      # the subnormal operand


# ---- the final IEEE addition, one step at a time, case by case ------------------------------

FP8F32 = "sm90/mma.m16n8k16.f32.e4m3.e4m3.f32"      # two HMMA halves, then fp.add(u, c) in f32


@pytest.fixture(scope="module")
def add_lemmas():
    lm = CM.monotonic_lemmas_fdpa(CC.structure(resolve(FP8F32)), CC.real_order, CC.term_le)
    return [x for x in lm if x.name.startswith("add.")]


def test_the_addition_cases_cover_every_input(add_lemmas):
    """The case constraints of add.mono.u (what each case adds to the common lemma) are
    exhaustive: their disjunction is valid (z3: its negation is unsat)."""
    import z3
    u = [x for x in add_lemmas if x.name.startswith("add.mono.u.")]
    names = {x.name for x in u}
    assert {"add.mono.u.d<-30", "add.mono.u.d>30", "add.mono.u.d-30", "add.mono.u.d30",
            "add.mono.u.d0.e-149", "add.mono.u.d0.e>=-98", "add.mono.u.d2.e<-150"} <= names
    base = u[0].assertions
    n = next(i for i in range(len(base)) if any(not x.assertions[i].eq(base[i]) for x in u))
    cases = [z3.And(*x.assertions[n:]) for x in u]
    s = z3.Solver()
    s.add(z3.Not(z3.Or(*cases)))
    assert s.check() == z3.unsat
    assert {"add.finite", "add.nan"} <= {x.name for x in add_lemmas}


@pytest.mark.parametrize("name", ["add.mono.u.d>30", "add.mono.u.d0.e-149", "add.mono.c.d<-30",
                                  "add.finite"])
def test_addition_cases_hold(add_lemmas, name):
    assert _status(next(x for x in add_lemmas if x.name == name), 120) == "unsat"


def test_a_later_blocks_flags_lemma_assumes_a_finite_accumulator():
    """block1.flags of a two-block chain reads the cut accumulator D_ and holds (finite D_ and
    products take the finite path); stated over the uncut inputs instead it dropped D_'s
    finiteness and was satisfiable (a regression caught on the H100 host, 2026-11-27)."""
    lm = _lemmas(FP8F32)
    assert "D_" in lm["block1.flags"].text
    assert _status(lm["block1.flags"]) == "unsat"


# ---- one TR-FDPA block (CDNA3 bf16, K = 4): c is added after the fused sum ------------------

TR4 = "gfx942.bf16@gfx942/v_mfma_f32_16x16x4_4b_bf16"   # TR-FDPA (the paper's tail), F 24, F2 31, one block
TR8 = "gfx942.bf16@gfx942/v_mfma_f32_32x32x8_bf16"      # K = 8: refuted (subnormal-key witness)


@pytest.fixture(scope="module")
def tr_lemmas():
    return _lemmas(TR4)


def test_tr_lemma_set(tr_lemmas):
    names = set(tr_lemmas)
    for t in range(4):                          # the products only: c is not a fused-sum term
        for part in ("range", "coarsen", "same", "gain.up", "gain.down", "lead"):
            assert f"block0.t{t}.{part}" in names
    assert "block0.t4.range" not in names
    assert {f"block0.bnd.{k}" for k in ("emax", "emlow", "tailE", "tailT", "tailc", "tailsum")} <= names
    assert {f"block0.tr.{k}" for k in ("E", "cexact", "cgap", "nan", "special", "flags.c",
                                       "flags.p3", "zero")} <= names
    assert "block0.flags" not in names          # finite bf16 inputs can overflow a product
    outs = sorted(int(n.rsplit(".d", 1)[1]) for n in names if ".out.d" in n)
    assert outs == list(range(-506, 507))       # E in [-252, 254]: bf16 product keys


@pytest.mark.parametrize("name", ["block0.t0.gain.up", "block0.t0.lead", "block0.tr.E",
                                  "block0.tr.cexact", "block0.tr.cgap", "block0.tr.nan",
                                  "block0.tr.special", "block0.tr.flags.c", "block0.tr.flags.p0",
                                  "block0.tr.zero", "block0.out.d300"])
def test_the_tr_lemmas_hold(tr_lemmas, name):
    assert _status(tr_lemmas[name]) == "unsat"


def test_the_tr_gain_lemma_asks_for_c_too(tr_lemmas):
    """gain.up asks n units (the other products and c can each lose one), not n - 1: at K = 8
    the subnormal-key step gains 4 units where 8 are asked, and the lemma is satisfiable."""
    assert "at least n units" in tr_lemmas["block0.t0.gain.up"].role
    lm8 = _lemmas(TR8)
    assert _status(lm8["block0.t0.gain.up"]) == "sat"


def test_the_tr_gain_down_lemma_fails_for_f16_products():
    """gfx942's f16 K = 4 group is refuted (a product's key drops by 9 binades and a negative
    product that the coarser alignment had truncated to zero comes back): its gain.down
    lemma is satisfiable, so the decomposition cannot prove it."""
    lm = _lemmas("gfx942/v_mfma_f32_16x16x4_4b_f16")
    assert _status(lm["block0.t0.gain.down"]) == "sat"


def test_the_reversed_tr_output_lemma_is_satisfiable():
    rev = _lemmas(TR4, reverse=True)
    assert _status(rev["block0.out.d300"]) == "sat"


def _bf16(rng):
    """A finite bf16, often subnormal or near a power of two (where keys and alignments move)."""
    kind = rng.randrange(4)
    s = rng.getrandbits(1) << 15
    if kind == 0:
        return s | rng.randrange(1, 128)                              # subnormal
    if kind == 1:
        return s | (rng.randrange(1, 255) << 7) | rng.choice([0, 127, 126, 1])
    return s | (rng.randrange(100, 155) << 7) | rng.getrandbits(7)


def _grown_pair(rng, K, elem_a, elem_b, fa, fb, c, c_step):
    """Random (a, b, c) and a copy in which one addend (a product, or c by +-1 code or c_step)
    changed; ordered so the second has the larger exact addend. None when unusable."""
    a = [elem_a(rng) for _ in range(K)]
    b = [elem_b(rng) for _ in range(K)]
    k = rng.randrange(K + 1)
    a2, b2, c2 = list(a), list(b), c
    if k < K:
        a2[k], b2[k] = elem_a(rng), elem_b(rng)
        grows = _val(fa, a2[k]) * _val(fb, b2[k]) > _val(fa, a[k]) * _val(fb, b[k])
    else:
        c2 = (c + rng.choice([1, -1, c_step])) & 0xFFFFFFFF
        if _val("f32", c2) is None:
            return None
        grows = _val("f32", c2) > _val("f32", c)
    if not grows:
        a, a2, b, b2, c, c2 = a2, a, b2, b, c2, c
    return None if (a, b, c) == (a2, b2, c2) else ((a, b, c), (a2, b2, c2))


def test_oracle_random_increases_never_lower_the_tr_output():
    """TR-FDPA bf16, K = 4 (F 24, F2 31), recomputed by the exact-rational oracle: random pairs
    that raise one product or c (subnormal operands, mixed signs) never lower the output."""
    rng = random.Random(5)
    checked = 0
    for _ in range(600):
        c = rng.choice([0, 0x80000000, rng.getrandbits(32) & 0x7F7FFFFF,
                        (rng.getrandbits(1) << 31) | (rng.randrange(1, 60) << 23) | rng.getrandbits(23)])
        pair = _grown_pair(rng, 4, _bf16, _bf16, "bf16", "bf16", c, 1 << 20)
        if pair is None:
            continue
        outs = [O.tr_fdpa(x, y, z, "bf16", "bf16", 24, 31) for x, y, z in pair]
        v1, v2 = (None if d == O.NAN else _val("f32", d) for d in outs)
        if v1 is None or v2 is None:
            continue
        checked += 1
        assert v2 >= v1, pair
    assert checked > 450


# ---- GTR-FDPA (CDNA3 fp8): two group sums merged by rounding down, c dropped when tiny -------

GTR16 = "gfx942.fp8@gfx942/v_mfma_f32_32x32x16_fp8_fp8"  # GTR-FDPA (the paper's tail), L 16, one block
GTR32 = "gfx942.fp8@gfx942/v_mfma_f32_16x16x32_bf8_bf8"  # K = 32: two blocks chained through D


@pytest.fixture(scope="module")
def gtr_lemmas():
    return _lemmas(GTR16, gtr=True)


def test_gtr_lemma_set(gtr_lemmas):
    names = set(gtr_lemmas)
    for g in (0, 1):                             # even and odd products, 8 each
        for t in (0, 7):
            for part in ("range", "coarsen", "same", "gain.up", "gain.down", "lead"):
                assert f"block0.g{g}.t{t}.{part}" in names
        assert f"block0.g{g}.t8.range" not in names
        assert {f"block0.g{g}.bnd.emax", f"block0.g{g}.emlow", f"block0.gtr.rd.{g}"} <= names
    assert {"block0.gtr.em", "block0.gtr.csame", "block0.bnd.tailc", "block0.tr.cgap",
            "block0.tr.flags.p15"} <= names
    assert "n + 1 units" in gtr_lemmas["block0.g0.t0.gain.up"].role
    outs = sorted(int(n.rsplit(".d", 1)[1]) for n in names if ".out.d" in n)
    assert outs == list(range(-253, 254))       # c's f32 exponents span the range
    # GTR is refused by the structure other claims read
    assert CC.structure(resolve(GTR16)).why


@pytest.mark.parametrize("name", ["block0.g0.t0.gain.up", "block0.g1.t7.gain.down",
                                  "block0.g0.t0.lead", "block0.gtr.em", "block0.gtr.rd.0",
                                  "block0.gtr.csame", "block0.bnd.tailc", "block0.tr.cexact"])
def test_the_gtr_lemmas_hold(gtr_lemmas, name):
    assert _status(gtr_lemmas[name]) == "unsat"


def test_the_gtr_tail_lemma_needs_its_drop_clause():
    """Algorithm 11 drops a nonzero c with e_c < E - F - 1: stated without that clause, the
    tail lemma about c (rounded down at E) is satisfiable on the GTR model."""
    st = CC.structure(resolve(GTR16), gtr=True)
    blk = st.blocks[0]
    tr = blk.tr
    lm = CBT.tr_tail_lemmas("b", st.K, tr.T.v, tr.e_max.v, tr.E.v, tr.Tp.v,
                            tr.sc.v, blk.conv.S.v, st.inp.c.v, 1 << 20, 260, 24, 24, 31)
    assert _status(next(x for x in lm if x.name == "b.bnd.tailc")) == "sat"


def test_a_gtr_chain_cuts_its_second_block_at_d():
    lm = _lemmas(GTR32, gtr=True)
    assert {"block1.g0.t0.gain.up", "block1.gtr.rd.1", "block1.tr.cgap"} <= set(lm)
    for name in ("block1.tr.dspecial", "block1.tr.pq", "block1.tr.flags.p16"):
        assert _status(lm[name]) == "unsat"
    assert "block0.tr.dspecial" not in lm and "block1.tr.flags.p0" not in lm


def _fnuz8(fmt, rng):
    """A finite fnuz fp8 code (0x80 is their NaN), often subnormal or at a binade edge."""
    while True:
        x = rng.choice([rng.randrange(1, 8), rng.getrandbits(8), (rng.randrange(1, 16) << 3) | 7,
                        (rng.randrange(1, 16) << 3)]) | (rng.getrandbits(1) << 7)
        if x != 0x80:
            return x


def test_oracle_random_increases_never_lower_the_gtr_output():
    """GTR-FDPA e4m3fnuz x e5m2fnuz (L 16, F 24, F2 31), one block and a chain of two,
    recomputed by the exact-rational oracle: pairs that raise one product or c never lower
    the output."""
    rng = random.Random(3)
    checked = 0
    for n in range(300):
        K = 16 if n % 2 else 32
        c = rng.choice([0, rng.getrandbits(32) & 0x7F7FFFFF,
                        (rng.getrandbits(1) << 31) | (rng.randrange(90, 140) << 23) | rng.getrandbits(23)])
        pair = _grown_pair(rng, K, lambda r: _fnuz8("e4m3fnuz", r), lambda r: _fnuz8("e5m2fnuz", r),
                           "e4m3fnuz", "e5m2fnuz", c, 1 << 16)
        if pair is None:
            continue
        outs = []
        for x, y, z in pair:
            acc = z
            for k0 in range(0, K, 16):
                acc = O.gtr_fdpa(x[k0:k0 + 16], y[k0:k0 + 16], acc, "e4m3fnuz", "e5m2fnuz", 24, 31)
            outs.append(None if acc == O.NAN else _val("f32", acc))
        if None in outs:
            continue
        checked += 1
        assert outs[1] >= outs[0], pair
    assert checked > 250
