"""Layer 5, query/store: the proofs/ folder (what has been shown).

One record per claim: `proofs/<group>/<name>.json` (claim, verdict, solver and version, time,
date, sha256 of the query, hashes of the definitions it depends on, and its broken twin) and
`proofs/<group>/<name>.smt2` (the exact query the solver answered). Tests replay the records
and flag stale ones (a definition changed, so the query no longer hashes the same).

Where: records are written to the store's proofs/ (``proofs_dir()``: mmaformal.paths; the
checkout's proofs/ when run from one, else --store / $MMAFORMAL_STORE / the per-user folder) and
read from it and from the shipped proofs/ (``read_proofs``, ``read_lemma``). A record that fails
its check (its stored query no longer hashes as recorded, a lemma it names is missing) is
reported on stderr and not used.

May import: the standard library, mmaformal.paths, mmaformal.query.solvers.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from pathlib import Path

from .. import paths
from .solvers import Result

__all__ = ["proofs_dir", "lemma_dir", "lemma_dirs", "read_lemma", "check_record", "sha256",
           "write_proof", "read_proofs"]


def proofs_dir() -> Path:
    """Where proofs are written: the store's proofs/ (mmaformal.paths.store)."""
    return paths.store("proofs")


def lemma_dir() -> Path:
    """Where proved lemmas of decomposed proofs are written: the store's proofs/cache/."""
    return proofs_dir() / "cache"


def lemma_dirs() -> list[Path]:
    """Where proved lemmas are read from: the store's proofs/cache/, then the shipped one."""
    return [d / "cache" for d in paths.record_dirs("proofs")]


def __getattr__(name: str):
    # PROOFS, the module constant before the store existed: the store's proofs/ when looked up
    # (prefer proofs_dir(); kept so that code written against the constant keeps working)
    if name == "PROOFS":
        return proofs_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    d = (root or proofs_dir()) / group
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


def read_lemma(sha: str, dirs: "list[Path] | None" = None) -> "Result | None":
    """The proved lemma whose query hashes to `sha`, from the first folder of `dirs` (default
    ``lemma_dirs()``) that holds it: its stored query must hash to `sha` and its verdict be
    unsat, else it is reported and not used. None when no folder holds a usable one."""
    for d in dirs if dirs is not None else lemma_dirs():
        p = d / f"{sha}.json"
        if not p.exists():
            continue
        try:
            rec = json.loads(p.read_text())
            q = d / f"{sha}.smt2"
            if rec.get("status") != "unsat":
                why = f"status {rec.get('status')!r}, not unsat"
            elif not q.exists():
                why = f"its query {q.name} is missing"
            elif sha256(q.read_text()) != sha:
                why = "its stored query does not hash to its name (edited?)"
            else:
                return Result("unsat", rec["solver"], rec.get("solver_version", ""), rec["seconds"])
        except (OSError, ValueError, KeyError) as e:
            why = f"unreadable ({e})"
        paths.report(p, why)
    return None


def check_record(path: Path, rec: dict) -> str | None:
    """Why a proof record cannot be used (None: it can): its stored query must hash to its
    query_sha256; a decomposed proof's lemmas must be stored (store's or shipped proofs/cache/)
    and hash to their names. Solving again is the slow check (tests, -m slow)."""
    if rec.get("parts"):
        dirs = [path.parent.parent / "cache"] + lemma_dirs()
        for part in rec["parts"]:
            h = part.get("sha256", "")
            qs = [d / f"{h}.smt2" for d in dirs if (d / f"{h}.smt2").exists()]
            if not qs:
                return f"lemma {part.get('lemma', h)} ({h[:12]}..) is in no proofs/cache/"
            if sha256(qs[0].read_text()) != h:
                return f"lemma {qs[0]} does not hash to its name (edited?)"
        return None
    if "query_sha256" in rec:
        q = path.parent / str(rec.get("query", ""))
        if not q.is_file():
            return f"its query {rec.get('query')!r} is missing"
        if sha256(q.read_text()) != rec["query_sha256"]:
            return "its stored query does not hash to query_sha256 (edited?)"
    return None


def read_proofs(group: str | None = None, root: Path | None = None) -> list[tuple[Path, dict]]:
    """Proof records [(path, record)] of `group` (every group if None) from `root`, else from
    the store's proofs/ and then the shipped ones (a record of the same group and name in the
    store replaces the shipped one). A record that fails ``check_record`` is reported
    (mmaformal.paths.report) and left out."""
    out = []
    seen = set()
    for base in [root] if root else paths.record_dirs("proofs"):
        pats = [base / group] if group else sorted(p for p in base.iterdir() if p.is_dir()) if base.exists() else []
        for d in pats:
            for p in sorted(d.glob("*.json")):
                key = (d.name, p.name)
                if key in seen:
                    continue
                seen.add(key)
                rec = json.loads(p.read_text())
                why = check_record(p, rec)
                if why:
                    paths.report(p, why)
                    continue
                out.append((p, rec))
    return out
