"""`prove exact --save` for decomposed proofs (mmaformal.query.claims.exact.ExactClaim).

The smallest T-FDPA instruction the decomposition applies to, sm70's m8n8k4 (K = 4, one fused
block), at its tight bound (integers below 2^11: p = 11 is the largest p whose sums stay exact in
f32) is proved from its lemmas in seconds; its broken twin (p = 12) is refuted by a concrete
candidate. The record goes to a temporary store ($MMAFORMAL_STORE: never the repository's
proofs/): it names the instruction and its primary theory, lists the lemmas, whose texts are in
the store's proofs/cache and hash to their names; `store check` accepts the store before and
after `store pack`, every lemma re-solves to unsat, and prove.stored_verdicts counts the record.
And what must write nothing: a refutation, an unknown (a lemma that fails, a lemma undecided),
and a proof whose broken twin was not refuted."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from mmaformal import cli, paths
from mmaformal.query.cache import CACHE
from mmaformal.query.claims import common as CC
from mmaformal.query.claims import exact_fdpa
from mmaformal.query.claims.constraint import parse_constraint
from mmaformal.query.claims.exact import exact_claim
from mmaformal.query.frame import BadInput
from mmaformal.query.model import resolve
from mmaformal.query.proofs import check_record
from mmaformal.query.prove import stored_verdicts
from mmaformal.query.solvers import Result
from mmaformal.query.store import (check_proofs, lemma_text, read_lemma, record_paths,
                                   record_problems, sha256)

SM70 = "sm70/mma.m8n8k4.f32.f16.f16.f32"
TIGHT = "int(a,b) and abs(a,b) < 2^11 and c == 0"      # proved; twin (2^12) refuted
LOOSE = "int(a,b) and abs(a,b) < 2^12 and c == 0"      # false: a sum passes 2^24
BELOW = "int(a,b) and abs(a,b) < 2^10 and c == 0"      # proved, but so is its twin (2^11)


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A temporary store; the process-wide lemma cache's folder restored afterwards (`prove
    exact --save` points it at the store's proofs/cache)."""
    monkeypatch.setenv(paths.ENV, str(tmp_path))
    monkeypatch.setattr(CACHE, "root", None)
    return tmp_path


def _written(store: Path) -> list[Path]:
    """Every file under the store's proofs/ (records and lemmas)."""
    root = store / "proofs"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_decomposed_proof_is_saved_checked_and_counted(store, capsys):
    rc = cli.main(["prove", "exact", SM70, "--where", TIGHT, "--method", "decomposed", "--save",
                   "--timeout", "120", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["status"] == "proved" and out["method"] == "decomposed", out
    assert out["twin"]["verdict"] == "refuted" and out["twin"]["status"] == "sat"
    [saved] = out["saved"]
    p = Path(saved)
    assert p.parent == store / "proofs" / "exact"
    rec = json.loads(p.read_text())
    m = resolve(SM70)
    cons = parse_constraint(TIGHT)
    # the record: the instruction, its primary theory's hash, the lemmas, the combination
    assert rec["verdict"] == "proved" and rec["method"] == "decomposed" and rec["query"] is None
    assert rec["instructions"] == [SM70] and rec["theories"] == {m.theory.id: m.base.hash()}
    assert rec["twin"]["status"] == "sat" and rec["twin"]["verdict"] == "refuted"
    assert rec["constraint"] == cons.text() and rec["rounded"] is False
    assert "Induction over the blocks" in rec["combination"]
    claim = exact_claim(SM70, TIGHT)
    assert rec["query_sha256"] == sha256(claim.smt2())
    assert p.stem == claim.record_name(claim.smt2())
    lms = exact_fdpa.lemmas(m, cons)
    assert [x["lemma"] for x in rec["parts"]] == [lm.name for lm in lms]
    assert [x["sha256"] for x in rec["parts"]] == [sha256(lm.text) for lm in lms]
    assert all(x["status"] == "unsat" and "text" not in x for x in rec["parts"])
    # the lemmas: in the store's proofs/cache (unless the shipped one holds them already),
    # each text hashing to its name; nothing else written
    shas = {x["sha256"] for x in rec["parts"]}
    shipped = {h for h in shas if read_lemma(h, [paths.shipped("proofs") / "cache"])}
    cache = store / "proofs" / "cache"
    assert {f.stem for f in cache.glob("*.smt2")} == shas - shipped
    assert {f.stem for f in cache.glob("*.json")} == shas - shipped
    for h in shas:
        assert sha256(lemma_text(h, [cache, paths.shipped("proofs") / "cache"])) == h
    assert {f.parent.name for f in _written(store)} == {"exact", "cache"}
    # the store's checks, loose: record_problems, lemma texts and theory hashes, no orphans
    assert record_problems(p, rec) == []
    assert check_record(p, rec) == []
    problems, notes = check_proofs(store / "proofs")
    assert problems == [] and len(notes) == 1 and "loose lemmas not in a pack" in notes[0]
    assert stored_verdicts("exact").get(SM70) == str(p)
    # every lemma re-solved: unsat
    assert check_record(p, rec, solve=True, timeout=120) == []
    # packed: the record's lemma list in parts.tar.zst, the lemmas in cache/lemmas-<h>
    assert cli.main(["store", "pack", "--json"]) == 0
    capsys.readouterr()
    rec = json.loads(p.read_text())
    assert "parts" not in rec and rec["lemma_count"] == len(lms)
    assert not list(cache.glob("*.smt2")) and record_problems(p, rec) == []
    assert cli.main(["store", "check", "--json"]) in (0, 1)
    chk = json.loads(capsys.readouterr().out)
    assert not [x for x in chk["problems"] if str(store) in x], chk["problems"]
    assert f"{(store / 'proofs').resolve()}: 1 records, " in "\n".join(chk["folders"])
    assert stored_verdicts("exact").get(SM70) == str(p)


def test_refutation_writes_nothing(store):
    c = exact_claim(SM70, LOOSE)
    r = c.prove(timeout=60, save=True)
    assert r["status"] == "refuted" and r["saved"] == [], r
    with pytest.raises(BadInput, match="only a proof"):
        c.save(r)
    assert _written(store) == [] and SM70 not in stored_verdicts("exact")


def test_failed_lemma_is_unknown_and_writes_nothing(store):
    # no candidates: the false bound reaches the lemmas, and its output lemma is satisfiable
    c = dataclasses.replace(exact_claim(SM70, LOOSE, method="decomposed"), candidates=None)
    r = c.prove(timeout=120, save=True)
    assert r["status"] == "unknown" and r["method"] == "decomposed", r
    assert r["parts"][-1]["status"] == "sat" and r["parts"][-1]["lemma"].startswith("block0.out.v")
    assert sum(p["status"] == "unsat" for p in r["parts"]) > 0    # proved lemmas, not stored
    assert r["saved"] == [] and _written(store) == []
    with pytest.raises(BadInput, match="only a proof"):
        c.save(dict(r, twin={"verdict": "refuted", "status": "sat"}))


def test_undecided_lemma_is_unknown_and_writes_nothing(store, monkeypatch):
    real, calls = CC.solve_cached, []

    def third_undecided(text, solver, timeout, persist=False, cache=None):
        calls.append(text)
        if len(calls) == 3:
            r = Result("unknown", solver, "", 0.0, reason="no answer (test)")
            return r, sha256(text), False
        return real(text, solver, timeout, persist, cache)
    monkeypatch.setattr(CC, "solve_cached", third_undecided)
    c = exact_claim(SM70, TIGHT, method="decomposed")
    r = c.prove(timeout=120, save=True)
    assert r["status"] == "unknown" and len(r["parts"]) == 3, r
    assert [p["status"] for p in r["parts"]] == ["unsat", "unsat", "unknown"]
    assert r["twin"] is None and r["saved"] == [] and _written(store) == []


def test_proof_whose_twin_holds_writes_nothing(store):
    c = exact_claim(SM70, BELOW, method="decomposed")
    r = c.prove(timeout=120, save=True)
    assert r["status"] == "proved" and r["method"] == "decomposed", r
    assert r["twin"]["verdict"] == "proved" and r["twin"]["status"] == "unsat"
    assert r["saved"] == [] and "not refuted" in r["reason"]
    assert _written(store) == [] and SM70 not in stored_verdicts("exact")
