"""Layer 5, query/proofs: prove's records, the proofs/<claim>/ folder (a store).

`save_result` stores a proved claim as proofs/<claim>/<name>.json (+ <name>.smt2 for a
monolithic query; the lemmas of a decomposed proof in proofs/cache, mmaformal.query.cache) or a
refuted one as a counterexample (mmaformal.query.cex); a proof is stored only with a refuted
broken twin. `store_equivalence` is what `distinguish --save` stores when it finds two models
equivalent; `prune_cache` removes lemmas no stored proof references; `depends` hashes the
definitions a proof depends on (stale proofs are detected by it and by the theory hashes).

May import: mmaformal.query.model, .claims, .cache, .cex, .store, theory, the layers below.
Invariant: a record names every theory hash and query hash its verdict depends on.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import inspect
import json
import re
from pathlib import Path
from typing import Sequence

from .. import fp, mma, paths
from .. import theory as _theory
from . import cex
from .claims import CLAIMS, outcome
from .model import Model
from .store import lemma_dir, lemma_dirs, proofs_dir, sha256

__all__ = ["depends", "save_result", "store_equivalence", "prune_cache", "check_record", "main"]


def depends() -> dict[str, str]:
    """Hashes of the definitions the claims depend on (source of bits, fp, mma)."""
    from .. import bits
    return {m.__name__: hashlib.sha256(inspect.getsource(m).encode()).hexdigest()[:16]
            for m in (bits, fp, mma)}


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_")[:120]


def store_equivalence(group, A: Model, B: Model, where, text, result, twin) -> Path:
    """Used by `distinguish --save` when it finds two models equivalent."""
    res = outcome("proved", f"for every input{' satisfying ' + ', '.join(where) if where else ''}: "
                  f"{A.label} and {B.label} give bitwise-identical outputs", [A, B],
                  result.seconds, result.solver, method="monolithic", query_text=text,
                  solver_version=result.version)
    res["twin"] = twin
    res["query_sha256"] = sha256(text)
    return Path(save_result(group, res, [A, B], text)[0])


def save_result(group: str, res: dict, models: Sequence[Model], text: str) -> list[str]:
    """Store a proof (proofs/<group>/) or a refutation (counterexamples/<group>/)."""
    saved = []
    if res["status"] == "refuted" and res.get("_runs"):
        check = {"symmetry": "asymmetric", "monotonic": "decreasing", "bound": "exceeds"}.get(
            group, "differ")
        p = cex.write_runs(group, models, res["_runs"], res["claim"], check,
                           solver=res["solver"], seconds=res["seconds"],
                           detail=res.get("detail"), group=res.get("group"))
        saved.append(str(p))
    elif res["status"] == "proved":
        twin = res.get("twin")
        if not twin or twin.get("status") != "sat":
            res["reason"] = (res.get("reason", "") + "; not stored: no broken twin was refuted").strip("; ")
            return saved
        d = proofs_dir() / group
        d.mkdir(parents=True, exist_ok=True)
        name = _slug(res.get("group", [models[0].ins.name])[0] if group == "symmetry" else
                     "--".join(m.label for m in models))
        ts = _theory.default()
        theories = {}
        for mm in models:
            theories[mm.theory.id] = mm.base.hash()
        for n in res.get("group", []):
            t = ts.theories_for(n)[0]
            theories[t.id] = t.hash()
        rec = {
            "claim": res["claim"], "verdict": "proved", "method": res["method"],
            "solver": res["solver"], "solver_version": res.get("solver_version", ""),
            "seconds": res["seconds"], "total_seconds": res.get("total_seconds"),
            "date": _dt.date.today().isoformat(),
            "instructions": res.get("group") or [m.ins.name for m in models],
            "models": [m.spec() for m in models], "theories": theories,
            "query_sha256": res.get("query_sha256"), "depends": depends(),
            "twin": twin,
        }
        if res["method"] == "decomposed":
            rec["query"] = None
            rec["parts"] = res["parts"]
            rec["combination"] = res.get("combination", "")
            texts = res.get("_texts", {})
            cache_dir = lemma_dir()
            for p in res["parts"]:
                q = cache_dir / f"{p['sha256']}.smt2"
                if not q.exists():
                    cache_dir.mkdir(parents=True, exist_ok=True)
                    q.write_text(texts[p["sha256"]])
                    q.with_suffix(".json").write_text(json.dumps(
                        {"status": "unsat", "verdict": "proved", "solver": p["solver"],
                         "solver_version": p["solver_version"], "seconds": p["seconds"],
                         "query": q.name, "claim": f"lemma {p['lemma']} ({p['role']})"},
                        indent=1) + "\n")
        else:
            rec["query"] = f"{name}.smt2"
            (d / f"{name}.smt2").write_text(res.get("query_text") or text)
        p = d / f"{name}.json"
        p.write_text(json.dumps(rec, indent=1) + "\n")
        saved.append(str(p))
    return saved


def prune_cache(root: Path | None = None) -> list[str]:
    """Remove proved lemmas in proofs/cache that no stored proof references any more (after
    re-proving stale claims). Returns the removed sha256s."""
    root = root or proofs_dir()
    used = set()
    for g in CLAIMS:
        for p in sorted((root / g).glob("*.json")) if (root / g).exists() else []:
            rec = json.loads(p.read_text())
            used |= {q["sha256"] for q in rec.get("parts", [])}
    gone = []
    cdir = root / "cache"
    for q in sorted(cdir.glob("*.smt2")) if cdir.exists() else []:
        if q.stem not in used:
            q.unlink()
            q.with_suffix(".json").unlink(missing_ok=True)
            gone.append(q.stem)
    return gone


def check_record(path: Path, rec: dict, solve: bool = False, timeout: float = 600) -> list[str]:
    """The problems of one proof record (empty: it holds): verdict proved with a refuted broken
    twin, every lemma in proofs/cache (beside the record, else the store's or the shipped one)
    with the sha256 it names, the stored query hashing as
    recorded, no stale theory hash; with `solve`, every lemma and query re-solved (unsat)."""
    from .model import check
    out = []
    if rec.get("verdict") != "proved":
        out.append(f"verdict is {rec.get('verdict')!r}")
    tw = rec.get("twin") or {}
    if tw.get("status") != "sat" or tw.get("verdict") != "refuted":
        out.append("no refuted broken twin")
    queries = []
    if rec.get("method") == "decomposed":
        dirs = list(dict.fromkeys([path.parent.parent / "cache", *lemma_dirs()]))
        for p in rec.get("parts", []):
            q = next((d / f"{p['sha256']}.smt2" for d in dirs if (d / f"{p['sha256']}.smt2").exists()),
                     dirs[0] / f"{p['sha256']}.smt2")
            if not q.exists():
                out.append(f"lemma {p['lemma']}: {q.name} missing from proofs/cache")
            elif sha256(q.read_text()) != p["sha256"]:
                out.append(f"lemma {p['lemma']}: {q.name} was edited")
            else:
                queries.append((f"lemma {p['lemma']}", q, p["solver"]))
    else:
        q = path.parent / rec["query"]
        if not q.exists() or sha256(q.read_text()) != rec["query_sha256"]:
            out.append(f"query {rec['query']} missing or edited")
        else:
            queries.append(("query", q, rec["solver"].split(",")[0]))
    ts = _theory.default()
    for tid, h in rec.get("theories", {}).items():
        if tid not in ts or ts.get(tid).hash() != h:
            out.append(f"stale: theory {tid} changed since the proof")
    if solve:
        for what, q, solver in queries:
            r = check(q.read_text(), solver or "bitwuzla", timeout)
            if r.status != "unsat":
                out.append(f"{what} ({q.name}): {r.status} on re-solving ({r.reason})")
    return out


def main(argv=None) -> int:
    """`python3 -m mmaformal.query.proofs [RECORD.json ...] [--solve]`: check proof records (all
    of proofs/<claim>/ when none is named: the store's, then the shipped ones); --solve re-solves each lemma or query; exit 1 if
    one fails."""
    import argparse
    import sys
    p = argparse.ArgumentParser(prog="python3 -m mmaformal.query.proofs", description=main.__doc__)
    p.add_argument("records", nargs="*", metavar="RECORD.json")
    p.add_argument("--solve", action="store_true", help="re-solve every lemma / query (slow)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per query with --solve")
    args = p.parse_args(argv)
    try:
        recs = ([(Path(r), json.loads(Path(r).read_text())) for r in args.records] if args.records
                else [(q, json.loads(q.read_text())) for d in paths.record_dirs("proofs")
                      for g in CLAIMS if (d / g).exists() for q in sorted((d / g).glob("*.json"))])
    except (OSError, ValueError) as e:
        print(f"mmaformal.query.proofs: {e}", file=sys.stderr)
        return 2
    bad = 0
    for path, rec in recs:
        problems = check_record(path, rec, args.solve, args.timeout)
        print(f"{'ok  ' if not problems else 'FAIL'} {path}" + "".join(f"\n     {x}" for x in problems))
        bad += bool(problems)
    print(f"{len(recs) - bad} of {len(recs)} records hold" + (" (re-solved)" if args.solve else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    import sys
    sys.exit(main())
