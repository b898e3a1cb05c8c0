"""distinguish: synthesized inputs separate two models and replay concretely; equivalences are
proved with a broken twin; the constraint language; exit codes; exported SMT-LIB2 is read by
the three solvers' own parsers.

Fast: every query here is solved by bitwuzla's propagation engine in well under a second
(the z3 run is given a deliberately tiny time limit to exercise "unknown")."""
from __future__ import annotations

import json

import pytest

from mmaformal import fp
from mmaformal.bits import INT
from mmaformal.cli import main
from mmaformal.query import distinguish as D
from mmaformal.query import search as S

H80 = "sm80/mma.m16n8k16.f32.f16.f16.f32"
H90 = "sm90/mma.m16n8k16.f32.f16.f16.f32"


def cli(capsys, *argv):
    # --raw: these tests are about the search and the verb, not about readable witnesses
    # (tests/test_minimize.py); minimizing would add seconds to each
    rc = main(["distinguish", *argv, "--raw"])
    out, err = capsys.readouterr()
    return rc, out, err


def test_sm80_vs_sm90_distinguished_and_replayed():
    res = D.distinguish(H80, H90, backends=("int", "numpy", "compiled"), raw=True)
    assert res["status"] == "distinguished"
    f = res["found"][0]
    A, B = res["A"], res["B"]
    assert f.outputs[A.label] != f.outputs[B.label]
    # independent replay, every back-end
    for be in ("int", "numpy"):
        assert D.evaluate(A, f.witness, be) == f.outputs[A.label]
        assert D.evaluate(B, f.witness, be) == f.outputs[B.label]
    assert "block structure differs" in f.step


def test_json_exact_keys(capsys):
    rc, out, err = cli(capsys, H80, H90, "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert set(d) == {"status", "witness", "outputs", "seconds"}
    assert d["status"] == "distinguished"
    assert set(d["witness"]) == {"a", "b", "c", "scale_a", "scale_b"}
    assert len(d["witness"]["a"]) == 16 and all(x.startswith("0x") and len(x) == 6 for x in d["witness"]["a"])
    assert len(d["witness"]["c"]) == 10
    assert set(d["outputs"]) == {H80, H90} and len(set(d["outputs"].values())) == 2


def test_f24_vs_f25_with_constraints():
    H8 = "sm90/mma.m16n8k8.f32.f16.f16.f32"
    res = D.distinguish(H8, H8 + "[F=24]", where=["finite", "c=0", "exp(a)>=-4,exp(a)<=4"], raw=True)
    assert res["status"] == "distinguished"
    w = res["found"][0].witness
    assert fp.decode("f32", INT.const(w.c, 32, False)).zero.v
    for x in w.a:
        u = fp.decode("f16", INT.const(x, 16, False))
        assert not u.nan.v and not u.inf.v
        assert u.zero.v or -4 <= u.exp.v <= 4
    assert "fused sum" in res["found"][0].step


def test_count_blocks_earlier_witnesses():
    res = D.distinguish(H90, H90 + "[F=24]", count=3, where=["finite"], raw=True)
    ws = [json.dumps(f.witness.to_json()) for f in res["found"]]
    assert len(ws) == 3 and len(set(ws)) == 3


def test_raw_bits_constraint():
    res = D.distinguish(H90, H90 + "[F=24]", where=["a[0]=0x3C00", "b[0]=0x3C00", "c=+0"], raw=True)
    w = res["found"][0].witness
    assert w.a[0] == 0x3C00 and w.b[0] == 0x3C00 and w.c == 0


def test_different_k_is_padded_and_said():
    res = D.distinguish("sm90/mma.m16n8k8.f32.f16.f16.f32", H80, raw=True)
    assert "padded with +0 at k = 8..15" in res["note"]
    assert res["status"] == "distinguished"
    w = res["found"][0].witness
    assert len(w.a) == 8                           # the shorter K: the shared inputs


def test_equivalent_with_twin_and_theory_ids():
    # tf32_round is unused for f16 operands: the mutant is equivalent; F-1 is the broken twin
    res = D.distinguish("sm90.f16.f32", "sm90.f16.f32[tf32_round=RNE]", instr=H90, raw=True)
    assert res["status"] == "equivalent"
    assert res["twin"]["status"] == "sat" and "F=24" in res["twin"]["claim"]


def test_theory_id_bound_to_the_other_instruction():
    A, B = D.resolve_pair("sm80.f16.f32", H90)          # sm80's theory does not cover sm90
    assert A.theory.id == "sm80.f16.f32" and A.ins.arch == "sm80" and B.ins.name == H90
    A, B = D.resolve_pair("sm90.f16.f32", H90 + "[F=24]")
    assert A.ins.name == H90
    A, B = D.resolve_pair(H80, "sm90.f16.f32@" + H90)
    assert B.ins.name == H90


def test_explicit_chain_spec():
    m = D.resolve("2*sm80/mma.m16n8k8.f32.f16.f16.f32")
    assert m.k == 16 and m.n == 2


@pytest.mark.parametrize("argv, match", [
    ([H80, H90, "--where", "bogus"], "cannot parse constraint"),
    ([H80, H90, "--where", "a[99]=0"], "out of range"),
    ([H80, H90, "--where", "exp(a)=3"], "exp() takes"),
    ([H80, H90, "--where", "c=0", "--where", "c=0x3F800000"], "no input satisfies the constraints"),
    ([H80, "sm80/mma.m16n8k16.f16.f16.f16.f16"], "different"),
    ([H80, "sm90/nope"], "unknown instruction"),
    ([H80, "sm90.nope"], "unknown theory"),
    ([H80, H90 + "[Q=1]"], "no field or parameter"),
    ([H80, H90, "--count", "0"], "--count"),
])
def test_bad_input_exit_2(capsys, argv, match):
    rc, out, err = cli(capsys, *argv)
    assert rc == 2, (out, err)
    assert err.count("\n") == 1 and match in err and "Traceback" not in err


def test_unknown_on_timeout_is_never_equivalent(capsys):
    rc, out, err = cli(capsys, H80, H90, "--solver", "z3", "--timeout", "0.01", "--json")
    d = json.loads(out)
    assert d["status"] == "unknown" and d["witness"] is None and rc == 4


def test_witness_that_does_not_replay_is_internal_error(capsys, monkeypatch):
    monkeypatch.setattr(S, "replay", lambda models, w, backends=(): {m.label: 7 for m in models})
    rc, out, err = cli(capsys, H80, H90)
    assert rc == 3 and "internal error" in err


def test_emit_smt2_parses_in_every_solver(tmp_path, capsys):
    f = tmp_path / "q.smt2"
    rc, out, err = cli(capsys, "sm90/mma.m16n8k8.f32.f16.f16.f32",
                       "sm90/mma.m16n8k8.f32.f16.f16.f32[F=24]", "--emit-smt2", str(f),
                       "--obligations", "always")
    assert rc == 0
    text = f.read_text()
    assert "(check-sat)" in text and "noovfl" not in text
    import bitwuzla
    import cvc5
    import z3
    s = z3.Solver()
    s.from_string(text)
    assert len(s.assertions()) > 1
    tm = bitwuzla.TermManager()
    bitwuzla.Parser(tm, bitwuzla.Options()).parse(text.replace("(check-sat)", ""), True, False)
    slv = cvc5.Solver(cvc5.TermManager())
    sm = cvc5.SymbolManager(slv.getTermManager())
    p = cvc5.InputParser(slv, sm)
    p.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text.replace("(check-sat)", ""), "q")
    n = 0
    while True:
        cmd = p.nextCommand()
        if cmd.isNull():
            break
        cmd.invoke(slv, sm)
        n += 1
    assert n > 2


def test_portfolio_answers():
    res = D.distinguish(H90, H90 + "[F=24]", solver="portfolio", raw=True)
    assert res["status"] == "distinguished"


def test_save_writes_a_counterexample(tmp_path, monkeypatch):
    from mmaformal.query import cex
    monkeypatch.setenv("MMAFORMAL_STORE", str(tmp_path))     # mmaformal.paths: the store
    res = D.distinguish(H80, H90, save=True, raw=True)
    assert res["saved"] and all(p.startswith(str(tmp_path)) for p in res["saved"])
    recs = cex.read_all(tmp_path / "counterexamples")
    assert len(recs) == 1
    rec = recs[0][1]
    assert rec["kind"] == "distinguish" and rec["verdict"] is None
    assert all(r["hardware"] is None for r in rec["runs"])
    assert [m["theory"] for m in rec["models"]] == ["sm80.f16.f32", "sm90.f16.f32"]
    assert cex.replay_record(rec, ("int", "numpy")) == []
