"""IEEE add/mul/fma are proven equal to z3's SMT-LIB floating-point theory for f16 and bf16 in
every rounding mode: the stored proofs (proofs/ieee/) are replayed here.

- every claim has a stored record whose verdict is "proved" and whose broken twin was refuted;
- the stored query is the one today's definitions produce (else the proof is stale);
- a fast claim is re-proved live, and its twin re-refuted, by the solver;
- `-m slow` re-solves every stored query.
"""
import json
from pathlib import Path

import pytest

from mmaformal.query import ieee
from mmaformal.query.solvers import solve, solve_smt2
from mmaformal.query.store import PROOFS, read_proofs, sha256

CLAIMS = [f"{op}-{f}-{m}" for f in ("f16", "bf16") for op in ieee.OPS for m in ieee.MODES]
#: Claims whose proof has not been obtained yet (bitwuzla ran > 20 min per f16 fma claim on the
#: 2-core development machine, 2026-11-21). strict: storing the proof makes these tests fail
#: until the marker is removed. Produce with: python3 -m mmaformal.query.ieee --formats f16
#: --ops fma --missing --save
PENDING = {f"fma-f16-{m}" for m in ieee.MODES}


def _records():
    return {Path(p).stem: (p, rec) for p, rec in read_proofs("ieee")}


@pytest.mark.parametrize("name", [pytest.param(c, marks=pytest.mark.xfail(
    reason="proof pending (see PENDING)", strict=True)) if c in PENDING else c for c in CLAIMS])
def test_proof_stored_and_current(name):
    recs = _records()
    assert name in recs, f"no stored proof for {name}: run python3 -m mmaformal.query.ieee --save"
    path, rec = recs[name]
    assert rec["verdict"] == "proved" and rec["twin"]["verdict"] == "refuted"
    q = (Path(path).parent / rec["query"]).read_text()
    assert sha256(q) == rec["query_sha256"], "stored query file was edited"
    op, f, mode = name.split("-")
    assert sha256(ieee.query(op, f, mode)) == rec["query_sha256"], (
        f"{name} is stale: the definitions changed since it was proved; re-run "
        "python3 -m mmaformal.query.ieee --missing --save")


def test_live_proof_and_twin():
    r, twin = ieee.prove("add", "bf16", "RZ", solver="bitwuzla", timeout=120)
    assert r.status == "unsat"
    assert twin is not None and twin.status == "sat"


def test_twin_witness_replays():
    """The twin's model is a real input on which RNE and RZ differ, replayed concretely."""
    from mmaformal import fp
    from mmaformal.bits import INT
    r = solve(ieee.query("mul", "bf16", "RNE", mine_mode="RZ"), "bitwuzla", 60)
    assert r.status == "sat"
    x0, x1 = INT.lift(r.model["x0"], 16), INT.lift(r.model["x1"], 16)
    assert fp.mul("bf16", x0, x1, "RNE").v != fp.mul("bf16", x0, x1, "RZ").v


@pytest.mark.slow
@pytest.mark.parametrize("name", [c for c in CLAIMS if c not in PENDING])
def test_resolve_stored_query(name):
    path, rec = _records()[name]
    q = (Path(path).parent / rec["query"]).read_text()
    assert solve_smt2(q, rec["solver"], 3600).status == "unsat"
