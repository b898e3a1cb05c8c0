"""prove: claims are proved with a broken twin, or refuted with a witness replayed concretely;
the decomposition's lemmas are sound pieces (factorizations checked, twins caught); exit codes
and --json. Long solver runs are marked slow."""
from __future__ import annotations

import json

import pytest

from mmaformal.bits import INT
from mmaformal.cli import main
from mmaformal.query import distinguish as D
from mmaformal.query import prove as P
from mmaformal.query.claims import bound as CB
from mmaformal.query.claims import bound_tr as CBT
from mmaformal.query.claims import common as CC
from mmaformal.query.claims import core as CORE
from mmaformal.query.claims import equivalence as CE
from mmaformal.query.claims import monotonic as CM
from mmaformal.query.claims import symmetry as CS
from mmaformal.query.claims import value_lt
from mmaformal.query.model import resolve
from mmaformal.query.solvers import solve_smt2

H80 = "sm80/mma.m16n8k16.f32.f16.f16.f32"
H90 = "sm90/mma.m16n8k16.f32.f16.f16.f32"
FAST = ("int", "numpy")


def cli(capsys, *argv):
    rc = main(["prove", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


# ---- symmetry ----------------------------------------------------------------------------------

def test_symmetry_sm80_k16_decomposed_with_twin():
    res = CS.prove_symmetry(D.resolve(H80), timeout=120, backends=FAST)
    assert res["status"] == "proved" and res["method"] == "decomposed"
    names = [p["lemma"] for p in res["parts"]]
    assert "block1.cong.out" in names and "block0.sym.out" in names
    assert any(p["cached"] for p in res["parts"])          # identical term lemmas solved once
    assert res["twin"]["status"] == "sat" and res["twin"]["verdict"] == "refuted"


def test_symmetry_cdna3_refuted_and_replayed(capsys):
    rc, out, err = cli(capsys, "symmetry", "gfx942/v_mfma_f32_32x32x8_f16", "--json",
                       "--replay", "int,numpy")
    assert rc == 1, err
    d = json.loads(out)
    assert set(d) == {"status", "claim", "witness", "solver", "seconds"}
    assert d["status"] == "refuted"
    m = D.resolve("gfx942/v_mfma_f32_32x32x8_f16")
    w = D.Witness.from_json(d["witness"], "f16", "f16", "f32")
    o1 = D.evaluate(m, w)
    o2 = D.evaluate(m, CORE.neg_witness(w))
    assert not CORE.approx_int(o2, CORE.neg_int(o1, "f32"), "f32")


def test_symmetry_gtr_refuted():
    res = CS.prove_symmetry(D.resolve("gfx942/v_mfma_f32_32x32x16_fp8_fp8"), timeout=300,
                           backends=FAST)
    assert res["status"] == "refuted"


def test_symmetry_rd_twin_lemma_fails():
    """The decomposition is not vacuous: on the RD-twin the aligned-term lemma is SAT."""
    m = D.resolve("sm90/mma.m16n8k8.f32.f16.f16.f32")
    tw = D.Model(m.label + "[align=RD]", m.theory, m.base, {}, True, 1)
    lemmas = CS.symmetry_lemmas(CC.structure(tw))
    status, parts = CC.run_lemmas(lemmas, "bitwuzla", 60)
    assert status == "failed" and ".sym.term" in parts[-1]["lemma"]


def test_decomposition_refuses_other_ops():
    with pytest.raises(CC.NotDecomposable):
        CS.symmetry_lemmas(CC.structure(D.resolve("gfx942/v_mfma_f32_32x32x8_f16")))


def test_symmetry_groups_share_one_proof():
    groups = P.symmetry_groups(set_name="nvidia-tfdpa")
    flat = [n for g in groups for n in g]
    assert len(flat) == len(set(flat)) and len(groups) < len(flat)
    g = next(g for g in groups if H90 in g)
    assert "sm90/wgmma.m64n8k16.f32.f16.f16" in g
    assert all(n.startswith(("sm7", "sm8", "sm9", "sm1")) for n in flat)
    cd = P.symmetry_groups(set_name="cdna3-tr")
    assert all(n.startswith("gfx942/") for g in cd for n in g)


@pytest.mark.slow
def test_symmetry_accumulate_add_theory():
    res = CS.prove_symmetry(D.resolve("sm90/mma.m16n8k16.f32.e4m3.e4m3.f32"), timeout=600,
                           backends=FAST)
    assert res["status"] == "proved"
    assert any(p["lemma"] == "add.sym" for p in res["parts"])


# ---- equivalence, unobservability --------------------------------------------------------------

def test_sm80_k16_equals_two_chained_k8_blocks():
    A, B = D.resolve_pair(H80, "2*sm80/mma.m16n8k8.f32.f16.f16.f32")
    res = CE.prove_equiv(A, B, timeout=120, backends=FAST)
    assert res["status"] == "proved"
    assert res["twin"]["status"] == "sat"


def test_sm80_k16_is_not_one_16_term_block():
    A, B = D.resolve_pair(H80, H80 + "[L=16]")
    res = CE.prove_equiv(A, B, timeout=120, backends=FAST, raw=True)
    assert res["status"] == "refuted"


def test_unobservable_proved_and_refuted(capsys):
    rc, out, err = cli(capsys, "unobservable", H90, "tf32_round=RNE", "--json",
                       "--replay", "int,numpy")
    assert rc == 0, err
    assert json.loads(out)["status"] == "proved"
    # a zero product's exponent is observable on f16 x f16 -> f32 (c far below 2^-28)
    rc, out, err = cli(capsys, "unobservable", H90, "zero_exp=field", "--json",
                       "--replay", "int,numpy", "--raw")
    assert rc == 1
    d = json.loads(out)
    assert d["status"] == "refuted" and d["witness"]


def test_equiv_where_contradiction_is_bad_input(capsys):
    rc, out, err = cli(capsys, "equiv", H80, H90, "--where", "c=0", "--where", "c=0x3F800000")
    assert rc == 2 and "no input satisfies" in err


@pytest.mark.parametrize("argv, match", [
    (["unobservable", H90, "F"], "PARAM=VALUE"),
    (["unobservable", H90, "nosuch=1"], "no field or parameter"),
    (["symmetry", "sm90/nope"], "unknown instruction"),
    (["symmetry"], "name instructions"),
    (["bound", "gfx942/v_mfma_f32_16x16x4_f32"], "bound takes"),
])
def test_bad_input(capsys, argv, match):
    rc, out, err = cli(capsys, *argv)
    assert rc == 2 and match in err and err.count("\n") == 1


def test_timeout_is_unknown_never_proved(capsys):
    rc, out, err = cli(capsys, "symmetry", "sm70/mma.m8n8k4.f32.f16.f16.f32", "--method",
                       "monolithic", "--solver", "z3", "--timeout", "0.5", "--json", "--no-twin")
    assert rc == 4 and json.loads(out)["status"] == "unknown"


# ---- monotonicity and the error bound ---------------------------------------------------------

@pytest.mark.slow
def test_monotonic_refuted_for_tfdpa():
    res = CM.prove_monotonic(D.resolve("sm70/mma.m8n8k4.f32.f16.f16.f32"), timeout=300,
                            backends=FAST)
    assert res["status"] == "refuted"
    d = res["detail"]
    assert CORE.value_lt(int(d["output2"], 16), int(d["output"], 16), "f32")


def test_bound_k4_decomposed_with_twin():
    res = CB.prove_bound(D.resolve("sm70/mma.m8n8k4.f32.f16.f16.f32"), timeout=300,
                        backends=FAST, rounds=2)
    assert res["status"] == "proved" and res["method"] == "decomposed"
    assert res["twin"]["status"] == "sat" and res["twin"]["verdict"] == "refuted"


TR = "gfx942.xf32@gfx942/v_mfma_f32_16x16x8_xf32"   # TR-FDPA (the paper's tail), L = 4, two blocks


def test_bound_tr_tail_lemmas_and_their_twins():
    """CDNA3 TR-FDPA: the lemmas at the interface (T, em) of the fused sum and the TR tail
    hold; stated with F + 2 on the F-grid model (or F on the F-2 model) the tail's c lemma or
    a term lemma fails."""
    m = D.resolve(TR)
    lem = CB.bound_lemmas(CC.structure(m))
    kinds = {lm.name.split(".", 1)[1] for lm in lem}
    assert {"bnd.emlow", "bnd.tailE", "bnd.tailT", "bnd.tailc", "bnd.tailsum", "bnd.flags",
            "bnd.raise", "bnd.special", "bnd.out"} <= kinds
    for lm in lem:
        if lm.name.startswith("block1.") and not lm.name.endswith(".out"):
            assert D.check(lm.text, "bitwuzla", 120).status == "unsat", lm.name
    F = m.theory.param_dict["F"]
    over = {lm.name: lm for lm in CB.bound_lemmas(CC.structure(m), F_claim=F + 2)}
    assert D.check(over["block1.bnd.tailc"].text, "bitwuzla", 120).status == "sat"
    assert D.check(over["block1.bnd.term0"].text, "bitwuzla", 120).status == "sat"
    with pytest.raises(CC.NotDecomposable, match="not a T-FDPA-family fused sum"):
        CS.symmetry_lemmas(CC.structure(m))           # TR symmetry stays monolithic (refuted)


@pytest.mark.slow
def test_bound_tr_fdpa_decomposed_with_twin():
    res = CB.prove_bound(D.resolve("gfx942/v_mfma_f32_32x32x8_f16"), timeout=600, backends=FAST,
                        rounds=1, method="decomposed")
    assert res["status"] == "proved" and res["method"] == "decomposed"
    assert res["combination"] == CBT.COMBINATION_BOUND_TR
    assert res["twin"]["verdict"] == "refuted"


# ---- solver plumbing ---------------------------------------------------------------------------

def test_cache_dedups_by_canonical_text():
    m = D.resolve("sm90/mma.m16n8k8.f32.f16.f16.f32")
    lemmas = CS.symmetry_lemmas(CC.structure(m))
    terms = [l for l in lemmas if ".sym.term" in l.name]
    assert len({l.text for l in terms[:-1]}) == 1        # the 8 product terms: one query


def test_emit_smt2_symmetry_lemmas_parse(tmp_path, capsys):
    f = tmp_path / "sym.smt2"
    rc, out, err = cli(capsys, "symmetry", "sm90/mma.m16n8k8.f32.f16.f16.f32", "--emit-smt2",
                       str(f), "--no-twin", "--replay", "int,numpy")
    assert rc == 0, err
    files = sorted(tmp_path.glob("*.smt2"))
    assert f in files and len(files) > 5          # the claim, and every lemma
    import bitwuzla
    import cvc5
    import z3
    for q in files:
        text = q.read_text()
        z3.Solver().from_string(text)
        bitwuzla.Parser(bitwuzla.TermManager(), bitwuzla.Options()).parse(
            text.replace("(check-sat)", ""), True, False)
        slv = cvc5.Solver(cvc5.TermManager())
        sm = cvc5.SymbolManager(slv.getTermManager())
        p = cvc5.InputParser(slv, sm)
        p.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text, "q")
        while not (cmd := p.nextCommand()).isNull():
            if "check-sat" not in str(cmd):
                cmd.invoke(slv, sm)


def test_bound_decomposition_twin_is_caught():
    """The bound lemmas stated with F on the theory with F-2 fail (the per-term lemma)."""
    m = D.resolve("sm70/mma.m8n8k4.f32.f16.f16.f32")
    tw = D.mutate(m, {"F": 21})
    lemmas = CB.bound_lemmas(CC.structure(tw), F_claim=23)
    status, parts = CC.run_lemmas(lemmas, "bitwuzla", 120)
    assert status == "failed" and ".bnd.term" in parts[-1]["lemma"]


# ---- equivalence of chains by per-block lemmas ----------------------------------------------------

FP8_F16 = "sm90.mma-fp8.k16.f16.hmma"


def test_equiv_decomposed_zero_sign_of_hmma_halves_with_twin():
    """The two-HMMA-halves chain starts from +0 and its blocks never produce -0, so the zero-sign
    rule of the blocks is unobservable: proved by per-block lemmas (the monolithic query times
    out), with the hypothesis-free lemmas refuted as the broken twin."""
    A = D.resolve(FP8_F16)
    B = D.mutate(A, {"zero_sign": "ieee"})
    res = CE.prove_equiv(A, B, timeout=120, backends=FAST)
    assert res["status"] == "proved" and res["method"] == "decomposed", res.get("reason")
    assert [p["lemma"] for p in res["parts"]] == ["pre.1", "eqv.block1", "eqv.block2", "eqv.add"]
    assert all(p["status"] == "unsat" for p in res["parts"])
    assert res["twin"]["status"] == "sat" and "without their accumulator hypotheses" in res["twin"]["claim"]


def test_equiv_decomposed_fails_where_the_rule_is_observable():
    """sm90 f16 -> f32 fuses c into its one block: c = -0 and -0 products give -0 under the IEEE
    rule, +0 under "positive": the block lemma is refuted (no hypothesis on an input c), and
    auto falls back to the monolithic query, which finds the witness."""
    A = D.resolve("sm90.f16.f32")
    B = D.mutate(A, {"zero_sign": "ieee"})
    res = CE.equiv_decomposed(A, B, timeout=60, method="decomposed")
    assert res["status"] == "unknown" and "eqv.block1 failed" in res["reason"]
    res = CE.prove_equiv(A, B, timeout=120, backends=FAST)
    assert res["status"] == "refuted" and res["method"] == "monolithic"


def test_equivalence_lemmas_refuse_other_differences():
    A = D.resolve(FP8_F16)
    with pytest.raises(CC.NotDecomposable, match="differ in"):
        CE.conversion_diff(A, D.mutate(A, {"F": 24}))
    with pytest.raises(CC.NotDecomposable, match="nothing"):
        CE.conversion_diff(A, A)
    assert CE.equiv_decomposed(A, D.mutate(A, {"F": 24}), timeout=10) is None
    with pytest.raises(D.BadInput, match="not decomposable"):
        CE.equiv_decomposed(A, D.mutate(A, {"F": 24}), timeout=10, method="decomposed")


# ---- integer monotonicity (decompose.monotonic_lemmas_int) and FMA chains ----------------

def test_monotonic_int_satfinite_decomposed_with_twin():
    """.satfinite (clamp at the end): every lemma UNSAT, the reversed-inequality twin SAT."""
    r = CM.prove_monotonic(resolve("sm90/mma.m8n8k16.satfinite.s32.s8.u8.s32"), timeout=60)
    assert r["status"] == "proved" and r["method"] == "decomposed"
    assert {p["lemma"] for p in r["parts"]} >= {"mono.id0", "mono.range", "mono.term",
                                                "mono.acc", "mono.c"}
    assert all(p["status"] == "unsat" for p in r["parts"])
    assert r["twin"]["status"] == "sat"


def test_monotonic_int_wrap_refuted_and_replayed():
    """Without .satfinite the s32 sum wraps: a larger addend can give a smaller output, and
    the witness replays on the int and numpy back-ends."""
    r = CM.prove_monotonic(resolve("sm90/mma.m8n8k16.s32.s8.s8.s32"), timeout=60)
    assert r["status"] == "refuted"
    (_, _, o1), (_, _, o2) = r["_runs"]
    assert value_lt(o2, o1, "s32")


def test_monotonic_int_identity_lemma_fails_for_the_clamp_per_step_rival():
    """The rival that clamps after each k16 block is not H(c, T_k, R_k) with one clamp at the
    end: mono.id0 is SAT, so the decomposition proves nothing about it."""
    m = resolve("sm80.int.sat-step@sm80/mma.m16n8k32.satfinite.s32.s8.s8.s32")
    lm = CM.monotonic_lemmas_int(m, lambda a, b: CM.int_addend(a, b, "s8", "s8", ""))[0]
    assert lm.name == "mono.id0"
    assert solve_smt2(lm.text, "bitwuzla", 60).status == "sat"


def test_fpu_program_lemmas_and_twin():
    """A compiler-emulated FPU program (sm90 mma.m8n8k4 f16) is recognised as fpu_dot of its
    converted operands; its lemmas follow its formats (recasts of C and D where they differ,
    mul.sym where a group starts with a multiply); the cheap ones are UNSAT, the RD fma.sym
    (the broken twin) is SAT; an FMA chain or a T-FDPA theory is not an FPU program."""
    names = lambda instr: [x.name for x in CS.fpu_symmetry_lemmas(resolve(instr))]  # noqa: E731
    base = ["conv.sym", "fma.sym", "fma.cong.zero", "fma.cong.nan", "add.sym", "add.cong.l.zero",
            "add.cong.r.zero", "add.cong.nan"]
    assert names("sm90/mma.m8n8k4.f32.f16.f16.f32") == base
    assert names("sm90/mma.m8n8k4.f32.f16.f16.f16") == base + [
        "recast.c.sym", "recast.c.cong.zero", "recast.c.cong.nan"]
    lms = CS.fpu_symmetry_lemmas(resolve("sm90/mma.m8n8k4.f16.f16.f16.f16"))
    assert [x.name for x in lms] == base + ["mul.sym", "recast.c.sym", "recast.c.cong.zero",
                                            "recast.c.cong.nan", "recast.d.sym",
                                            "recast.d.cong.zero", "recast.d.cong.nan"]
    for lm in lms:
        if lm.name.startswith(("conv.", "recast.", "add.cong", "fma.cong")):
            assert solve_smt2(lm.text, "bitwuzla", 60).status == "unsat", lm.name
    tw = next(x for x in CS.fpu_symmetry_lemmas(resolve("sm90/mma.m8n8k4.f32.f16.f16.f32"), mode="RD")
              if x.name == "fma.sym")
    assert solve_smt2(tw.text, "bitwuzla", 120).status == "sat"
    for other in ("gfx908/v_mfma_f32_16x16x4f32", "sm80/mma.m16n8k16.f32.f16.f16.f32"):
        with pytest.raises(CC.NotDecomposable):
            CS.fpu_symmetry_lemmas(resolve(other))


def test_fpu_program_check_refuses_another_program(monkeypatch):
    """The syntactic check is what the combination argument stands on: a traced output that
    is not fpu_dot of the converted operands (here the program's result added to itself) is
    refused."""
    from mmaformal import fp
    real = CS.traced_dot

    def doubled(m):
        K, inp, out, notes = real(m)
        return K, inp, fp.add("f32", out, out), notes
    monkeypatch.setattr(CS, "traced_dot", doubled)
    with pytest.raises(CC.NotDecomposable, match="not fpu_dot"):
        CS.fpu_symmetry_lemmas(resolve("sm90/mma.m8n8k4.f32.f16.f16.f32"))


def test_ftz_addmul_lemmas_proved_and_twin_refuted(monkeypatch):
    """An FTZ-AddMul chain (gfx90a f16, P = 4) is recognised as ftz_addmul of its inputs; all its
    op lemmas are UNSAT (each under a second here), the RD FTZ-Add's add.sym (the broken twin)
    is SAT, and a traced output that is not ftz_addmul is refused."""
    m = resolve("gfx90a/v_mfma_f32_16x16x4f16")
    lms = CS.ftz_symmetry_lemmas(m)
    assert [x.name for x in lms] == ["c.sym", "mul.sym", "add.sym", "add.cong.l.zero",
                                     "add.cong.r.zero", "add.cong.nan", "out.sym",
                                     "out.cong.zero", "out.cong.nan"]
    for lm in lms:
        assert solve_smt2(lm.text, "bitwuzla", 60).status == "unsat", lm.name
    tw = next(x for x in CS.ftz_symmetry_lemmas(m, mode="RD") if x.name == "add.sym")
    assert solve_smt2(tw.text, "bitwuzla", 60).status == "sat"
    with pytest.raises(CC.NotDecomposable):
        CS.ftz_symmetry_lemmas(resolve("gfx908/v_mfma_f32_16x16x4f16"))
    from mmaformal import fp
    real = CS.traced_dot
    monkeypatch.setattr(CS, "traced_dot", lambda mm: (lambda K, i, o, n: (K, i, fp.add("f32", o, o), n))(*real(mm)))
    with pytest.raises(CC.NotDecomposable, match="not ftz_addmul"):
        CS.ftz_symmetry_lemmas(m)


def test_fma_chain_steps_checked_and_twin_lemma_refuted():
    """The FMA chain is recognised step by step; the RD-rounded fma.sym lemma is SAT (the
    broken twin of the symmetry proof), a T-FDPA theory is not an FMA chain."""
    m = resolve("gfx908/v_mfma_f32_16x16x4f32")
    assert CC.fma_chain_steps(m) == ("f32", "RNE", "default")
    lm = CS.fma_symmetry_lemmas(m, mode="RD")[0]
    assert solve_smt2(lm.text, "bitwuzla", 60).status == "sat"
    with pytest.raises(CC.NotDecomposable):
        CC.fma_chain_steps(resolve("sm80/mma.m16n8k16.f32.f16.f16.f32"))
