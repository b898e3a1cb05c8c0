"""Layer 5, query/store: the proofs/ folder (what has been shown).

One record per claim: `proofs/<group>/<name>.json` (claim, verdict, solver and version, time,
date, sha256 of the query, hashes of the definitions it depends on, and its broken twin) and
`proofs/<group>/<name>.smt2` (the exact query the solver answered). Tests replay the records
and flag stale ones (a definition changed, so the query no longer hashes the same).

May import: the standard library, mmaformal.query.solvers.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from pathlib import Path

from .solvers import Result

__all__ = ["PROOFS", "sha256", "write_proof", "read_proofs"]

PROOFS = Path(__file__).resolve().parents[2] / "proofs"


_LET = re.compile(r"(?<![\w!$?.])([$?][A-Za-z_]+\d+|a![0-9]+)(?![\w!])")


def canonical(text: str) -> str:
    """SMT-LIB2 text with z3's generated let-names ($x12, ?x7, a!3) renamed in order of first
    appearance: z3 numbers them by AST id, which depends on the process's history."""
    names: dict[str, str] = {}

    def sub(m):
        k = m.group(1)
        if k not in names:
            names[k] = f"_l{len(names)}"
        return names[k]
    return _LET.sub(sub, text)


def sha256(text: str) -> str:
    """Hash of a query, stable across processes (see `canonical`)."""
    return hashlib.sha256(canonical(text).encode()).hexdigest()


def write_proof(group: str, name: str, claim: str, query: str, result: Result, twin_claim: str,
                twin: Result, depends: dict[str, str], root: Path | None = None,
                extra: dict | None = None) -> Path:
    """Store a proof record. `result` must be UNSAT (the claim holds) and `twin` SAT (the
    mutated claim fails): a proof without a broken twin that the same query catches is not
    stored. `extra`: further fields (e.g. how a case split covers the claim)."""
    if result.status != "unsat":
        raise ValueError(f"{name}: not proved ({result.status}); only proofs are stored")
    if twin.status != "sat":
        raise ValueError(f"{name}: the broken twin was not refuted ({twin.status}); proof not stored")
    d = (root or PROOFS) / group
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.smt2").write_text(query)
    rec = {
        "claim": claim,
        "verdict": "proved",
        "solver": result.solver,
        "solver_version": result.version,
        "seconds": round(result.seconds, 3),
        "date": _dt.date.today().isoformat(),
        "query": f"{name}.smt2",
        "query_sha256": sha256(query),
        "depends": depends,
        "twin": {"claim": twin_claim, "verdict": "refuted", "solver": twin.solver,
                 "seconds": round(twin.seconds, 3), "witness": {k: hex(v) for k, v in twin.model.items()}},
    }
    rec.update(extra or {})
    p = d / f"{name}.json"
    p.write_text(json.dumps(rec, indent=2, sort_keys=True) + "\n")
    return p


def read_proofs(group: str | None = None, root: Path | None = None) -> list[tuple[Path, dict]]:
    base = root or PROOFS
    pats = [base / group] if group else [p for p in base.iterdir() if p.is_dir()] if base.exists() else []
    out = []
    for d in pats:
        for p in sorted(d.glob("*.json")):
            out.append((p, json.loads(p.read_text())))
    return out
