"""The proofs/ and counterexamples/ stores of the claims (symmetry, equiv, unobservable,
monotonic, bound, distinguish) are replayed here:

- every counterexample replays on every back-end (int, numpy, the compiled C path) to its stored
  outputs, and its outputs still show what it claims (differ / asymmetric / decreasing);
- every proof record is "proved" with a refuted broken twin, its lemma list (inline or in
  proofs/parts.tar.zst) hashes as recorded, every lemma it names is stored (the packs of
  proofs/cache), every stored query hashes as recorded (tests/test_store_packs.py checks the
  packs and that every lemma text hashes to its name);
- a record whose theory hashes are stale (the theory changed since) fails: proofs and
  counterexamples alike are regenerated when a theory changes;
- the demonstrations the project relies on are stored: sm80 vs sm90 distinguished, symmetry of
  every NVIDIA T-FDPA-based group with K <= 16 proved, every CDNA3 TR/GTR group refuted,
  sm80 m16n8k16 = two chained 8-term blocks.

`-m slow` re-solves every stored query and rebuilds the symmetry queries (sha256 compared).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmaformal import paths
from mmaformal.query import cex
from mmaformal.query.distinguish import check, from_spec
from mmaformal.query.prove import symmetry_groups
from mmaformal.query.store import record_parts, record_problems, sha256

#: the shipped records (the checkout's folders, or mmaformal/_data in an installed package)
PROOFS = paths.shipped("proofs")

CLAIM_GROUPS = ("symmetry", "equiv", "unobservable", "monotonic", "bound")
REFRESH = "mmaformal prove symmetry --set nvidia-tfdpa --save (or the claim's own command)"


def _proofs():
    out = []
    for g in CLAIM_GROUPS:
        d = PROOFS / g
        if d.exists():
            out += [(p, json.loads(p.read_text())) for p in sorted(d.glob("*.json"))]
    return out


CEX = cex.read_all(paths.shipped("counterexamples"))
PROOF_RECS = _proofs()


@pytest.mark.parametrize("path, rec", CEX, ids=[p.name for p, _ in CEX])
def test_counterexample_replays_on_every_backend(path, rec):
    assert rec["verdict"] is None or isinstance(rec["verdict"], str)
    for run in rec["runs"]:
        assert "hardware" in run
    problems = cex.replay_record(rec, ("int", "numpy", "compiled"))
    assert not problems, problems
    st = cex.stale(rec)
    assert not st, (f"{path.name}: theories {st} changed since it was written; re-prove its "
                    f"claim (mmaformal prove {rec['kind']} --all INSTR.. --redo --save) and "
                    f"remove it")


@pytest.mark.parametrize("path, rec", PROOF_RECS, ids=[f"{p.parent.name}/{p.name}" for p, _ in PROOF_RECS])
def test_proof_record_is_complete(path, rec):
    assert rec["verdict"] == "proved"
    tw = rec["twin"]
    assert tw and tw["status"] == "sat" and tw.get("verdict") == "refuted", "no refuted broken twin"
    if rec["method"] == "decomposed":
        parts = record_parts(path, rec)
        assert parts and all(p["status"] == "unsat" for p in parts)
        assert "parts" in rec or rec["lemma_count"] == len(parts)
    else:
        q = path.parent / rec["query"]
        assert sha256(q.read_text()) == rec["query_sha256"], "stored query was edited"
    assert record_problems(path, rec) == []


def test_no_stale_proofs():
    from mmaformal import theory as T
    ts = T.default()
    stale = []
    for path, rec in PROOF_RECS:
        for tid, h in rec["theories"].items():
            if tid not in ts or ts.get(tid).hash() != h:
                stale.append(f"{path.parent.name}/{path.name}: {tid}")
    assert not stale, f"stale proofs (theory changed since they were proved): {stale}; refresh: {REFRESH}"


def test_required_demonstrations_are_stored():
    kinds = {(rec["kind"], tuple(m["theory"] for m in rec["models"])) for _, rec in CEX}
    assert ("distinguish", ("sm80.f16.f32", "sm90.f16.f32")) in kinds
    # a record may cover more than the set's group (prove --all groups the whole catalog:
    # wmma forms with the same query join their mma group)
    proved = [set(rec["instructions"]) for p, rec in PROOF_RECS if p.parent.name == "symmetry"]
    for g in symmetry_groups(set_name="nvidia-tfdpa"):
        assert any(set(g) <= r for r in proved), f"no stored symmetry proof for the group of {g[0]}"
    refuted = [set(rec["tool"].get("group") or ()) for _, rec in CEX if rec["kind"] == "symmetry"]
    for g in symmetry_groups(set_name="cdna3-tr"):
        assert any(set(g) <= r for r in refuted), \
            f"no stored symmetry counterexample for the group of {g[0]}"
    chain = [rec for p, rec in PROOF_RECS if p.parent.name == "equiv"
             and any(m["chain"] == 2 for m in rec["models"])]
    assert chain, "sm80 m16n8k16 = two chained 8-term blocks is not stored"


@pytest.mark.slow
def test_resolve_every_stored_query():
    """Re-check the whole store: every lemma and monolithic query is UNSAT again. One job per
    query through the campaign runner (every available CPU; each query's limit enforced from
    outside)."""
    from mmaformal.query import campaign
    from mmaformal.query.model import BITWUZLA_ENGINE
    from mmaformal import packs
    from mmaformal.query.store import LEMMA_PACKS, lemma_index
    jobs = []
    for name in LEMMA_PACKS:
        pk = packs.open_pack(PROOFS / "cache" / name)
        index = lemma_index(PROOFS / "cache" / name)
        for m in pk.names():
            if m.endswith(".smt2"):
                meta = index[m[:-5]]
                jobs.append(campaign.Job(f"lemma/{m}", "mmaformal.query.campaign:solve_job",
                                         {"text": pk.get(m).decode(), "solver": meta["solver"],
                                          "timeout": 600, "expect": "unsat",
                                          "engine": BITWUZLA_ENGINE}, 660))
    for path, rec in PROOF_RECS:
        if rec["method"] != "decomposed":
            q = path.parent / rec["query"]
            jobs.append(campaign.Job(f"{path.parent.name}/{path.name}",
                                     "mmaformal.query.campaign:solve_job",
                                     {"text": q.read_text(), "solver": rec["solver"].split(",")[0],
                                      "timeout": 1200, "expect": "unsat",
                                      "engine": BITWUZLA_ENGINE}, 1260))
    bad = [(r["job"], r["status"], r.get("reason", "")) for r in campaign.run(jobs)
           if not r.get("ok")]
    assert not bad, bad


@pytest.mark.slow
def test_symmetry_queries_are_current():
    """The stored symmetry proofs are about today's definitions: the lemma set rebuilt from the
    theories hashes as stored."""
    from mmaformal.query.claims import common as CC
    from mmaformal.query.claims import symmetry as CS
    from mmaformal.query.distinguish import resolve
    for path, rec in PROOF_RECS:
        if path.parent.name != "symmetry" or rec["method"] != "decomposed":
            continue
        m = resolve(rec["instructions"][0])
        shas = [sha256(l.text) for l in CS.symmetry_lemmas(CC.structure(m))]
        assert shas == [p["sha256"] for p in record_parts(path, rec)], \
            f"{path.name} is stale: re-prove it"
