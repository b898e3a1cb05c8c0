"""Tests of the user-claim package mmaformal.query.claims (the Claim API, the constraint
language) and of `prove exact`: a proof, a refutation whose witness is replayed and checked
against exact Fractions, a broken twin refuted, the constraint parser's one-line errors (exit
2), a stored record that passes the store's checks, and the Python API example of docs/exact.md;
the decomposed proof for T-FDPA chains (proved at a small case with its twin refuted, a chain of
two blocks, a lemma with a weakened hypothesis satisfiable), a refutation by a concrete
candidate, and the table's command for one instruction within 60 s.
Small K (sm70's m8n8k4, K = 4) and small p keep each solver call to seconds."""
from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from mmaformal.query.claims import Claim, parse_constraint
from mmaformal.query.claims import common as CC
from mmaformal.query.claims.exact import exact_claim, exact_value, rne
from mmaformal.query.frame import BadInput
from mmaformal.query.model import Witness, replay
from mmaformal.cli import main as prove_main
from mmaformal.query.store import record_problems

SM70 = "sm70/mma.m8n8k4.f32.f16.f16.f32"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "exact.md"


def test_registry_and_prove_cli_know_exact():
    from mmaformal.query import prove as P
    from mmaformal.query.claims import CLAIMS, USER_CLAIMS, exact
    assert P.USER_CLAIMS == {"exact": exact} and tuple(P.USER_CLAIMS) == USER_CLAIMS
    assert "exact" in CLAIMS


def test_proved_small_p():
    c = exact_claim(SM70, "int(a,b) and abs(a,b) < 2^2 and c == 0", twin=False,
                    method="monolithic")
    r = c.solve(timeout=120)
    assert r["status"] == "proved" and r["method"] == "monolithic", r
    assert "(check-sat)" in c.smt2()


def test_refuted_witness_replayed():
    c = exact_claim(SM70, "abs(a,b) < 2^3 and c == 0", twin=False)
    r = c.solve(timeout=120)
    assert r["status"] == "refuted", r
    w = Witness.from_json(r["witness"], "f16", "f16", "f32")
    d = replay([c.model], w, ("int", "numpy"))[c.model.label]
    assert d == int(r["detail"]["output"], 16)
    from mmaformal.simulate import value_of
    vd = value_of(d, "f32")
    vd = Fraction(0) if vd in ("0", "-0") else vd
    assert vd != exact_value(c.model, w)               # not exact, by exact Fractions
    assert c.constraint.holds(w)


def test_twin_is_refuted_and_record_is_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("MMAFORMAL_STORE", str(tmp_path))
    c = exact_claim(SM70, "a == 0")            # no bound: the twin flips D's last bit
    r = c.prove(timeout=120, save=True)
    assert r["status"] == "proved", r
    assert r["twin"]["verdict"] == "refuted" and r["twin"]["status"] == "sat"
    p = Path(r["saved"][0])
    rec = json.loads(p.read_text())
    assert record_problems(p, rec) == []
    from mmaformal.query.proofs import stale
    assert stale(rec) == []


def test_raised_bound_twin():
    c = exact_claim(SM70, "int(a,b) and abs(a,b) < 2^2 and c == 0")
    t = c.twin_claim()
    assert t.constraint.text() == "int(a,b) and abs(a,b) < 8 and c == 0"


def test_rne_and_constraint_language():
    assert rne(Fraction(2 ** 24 + 1), "f32") == 2 ** 24
    assert rne(Fraction(2 ** 24 + 3), "f32") == 2 ** 24 + 4
    assert rne(Fraction(2) ** 200, "f32") == "inf"
    c = parse_constraint("int(a,b) and abs(a[0], c) <= 3/2 and c != 0.5 and finite")
    assert [a.kind for a in c.atoms] == ["int", "abs", "eq", "finite"]
    assert c.raised().atoms[1].value == 3


@pytest.mark.parametrize("where, msg", [
    ("__import__('os')", "not an atom"),
    ("int(a,b) or c == 0", "only 'and'"),
    ("abs(a) < x", "not a number"),
    ("abs(a) > 2", "takes < or <="),
    ("int(a,b", "syntax error"),
    ("d == 0", "not an operand"),
])
def test_constraint_errors_one_line_exit_2(where, msg, capsys):
    with pytest.raises(BadInput, match=re.escape(msg)):
        parse_constraint(where)
    rc = prove_main(["prove", "exact", SM70, "--where", where])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and msg in err


def test_refused_forms(capsys):
    assert prove_main(["prove", "exact", "gfx908/v_mfma_i32_4x4x4i8", "--rounded"]) == 2
    assert "integer output" in capsys.readouterr().err
    with pytest.raises(BadInput):
        exact_claim(SM70, "a[7] == 0")


def test_docs_api_example_runs():
    text = DOCS.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    ns: dict = {}
    exec(compile(code, str(DOCS), "exec"), ns)
    assert ns["res"]["status"] == "proved"


# --------------------------------------------------------------------------------------------
# the decomposed proof (mmaformal.query.claims.exact_fdpa) and the candidates

def test_decomposed_proof_small_case_with_twin():
    # K = 4 products below 2^22 sum below 2^24: p = 11 is sm70's largest (the tight bound, so
    # the twin at p = 12 is false)
    c = exact_claim(SM70, "int(a,b) and abs(a,b) < 2^11 and c == 0", method="decomposed")
    r = c.prove(timeout=120)
    assert r["status"] == "proved" and r["method"] == "decomposed", r
    names = [p["lemma"] for p in r["parts"]]
    assert {"ex.prod0", "ex.acc", "block0.emax", "block0.flags", "block0.out.zero"} <= set(names)
    assert any(n.startswith("block0.term") for n in names)
    assert any(n.startswith("block0.out.v") for n in names)
    assert all(p["status"] == "unsat" for p in r["parts"])
    assert "Induction over the blocks" in r["combination"]
    # the broken twin (bound raised by one bit) is refuted, its witness replayed
    assert r["twin"]["verdict"] == "refuted" and r["twin"]["status"] == "sat"
    tw = c.twin_claim()
    w = Witness.from_json(r["twin"]["witness"], "f16", "f16", "f32")
    assert tw.constraint.holds(w) and not c.constraint.holds(w)


def test_decomposed_chain_of_two_blocks():
    from mmaformal.query.claims import exact_fdpa
    from mmaformal.query.model import resolve
    m = resolve("sm80/mma.m16n8k16.f32.f16.f16.f32")       # two blocks of L = 8
    lms = exact_fdpa.lemmas(m, parse_constraint("int(a,b) and abs(a,b) < 2^3 and c == 0"))
    names = [lm.name for lm in lms]
    assert "block1.emax" in names and any(n.startswith("block1.out.v") for n in names)
    status, parts = CC.run_lemmas(lms, "bitwuzla", 110)
    assert status == "proved", parts[-1]


def test_weakened_lemma_is_satisfiable():
    from mmaformal.query.claims import exact_fdpa
    from mmaformal.query.model import resolve
    m = resolve(SM70)
    cons = parse_constraint("int(a,b) and abs(a,b) < 2^4 and c == 0")
    # the term lemma without "e_max <= Vmax": an alignment exponent above F + U drops bits
    weak = [lm for lm in exact_fdpa.lemmas(m, cons, weaken="term") if lm.name == "block0.term0"]
    status, parts = CC.run_lemmas(weak, "bitwuzla", 110)
    assert status == "failed" and parts[0]["status"] == "sat"
    # a bound one bit too large: the output lemma fails (the sum outgrows f32's significand)
    lms = exact_fdpa.lemmas(m, parse_constraint("int(a,b) and abs(a,b) < 2^12 and c == 0"))
    status, parts = CC.run_lemmas(lms, "bitwuzla", 110)
    assert status == "failed" and parts[-1]["lemma"].startswith("block0.out.v")
    # where the alignment could drop bits, the decomposition is refused (monolithic query)
    with pytest.raises(CC.NotDecomposable):
        exact_fdpa.lemmas(m, parse_constraint("abs(a,b) < 2^4 and c == 0"))


def test_candidate_refutation_is_replayed():
    ins = "sm75/mma.m16n8k8.f32.f16.f16.f32"
    c = exact_claim(ins, "int(a,b) and abs(a,b) < 2^11 and c == 0", twin=False)
    r = c.solve(timeout=60)
    assert r["status"] == "refuted" and r["method"] == "candidate", r
    w = Witness.from_json(r["witness"], "f16", "f16", "f32")
    assert c.constraint.holds(w)
    d = replay([c.model], w, ("int", "numpy"))[c.model.label]
    from mmaformal.simulate import value_of
    assert value_of(d, "f32") != exact_value(c.model, w)


def test_table_command_one_instruction():
    """The table's command on one instruction gives its row (its times are reported by the
    script itself, docs/exact.md; no timing is asserted here)."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, str(root / "bench" / "exact_table.py"), "--timeout", "60",
                          "sm90/mma.m16n8k16.f32.f16.f16.f32"], capture_output=True, text=True,
                         timeout=600, cwd=root)
    assert out.returncode == 0, out.stderr
    row = [l for l in out.stdout.splitlines() if l.startswith("| `sm90")][0]
    assert "| 10 | proved" in row and "decomposed" in row and "p = 11: refuted" in row, row
