"""Layer 5, query/proofs: prove's records, the proofs/<claim>/ folder (a store).

`save_result` stores a proved claim as proofs/<claim>/<name>.json (+ <name>.smt2 for a
monolithic query; the lemmas of a decomposed proof in proofs/cache, mmaformal.query.cache) or a
refuted one as a counterexample (mmaformal.query.cex); a proof is stored only with a refuted
broken twin. `store_equivalence` is what `distinguish --save` stores when it finds two models
equivalent; `prune_cache` removes lemmas no stored proof references (mmaformal.query.store
.pack_proofs). A record is stale when a theory it names has changed since (`stale`: its
`theories` hashes against today's); `check_record` and `recheck` (``mmaformal store recheck``)
re-check records, re-solving every lemma and query.

May import: mmaformal.query.model, .claims, .cache, .cex, .store, .campaign, theory, the layers
below.
Invariant: a record names every theory hash and query hash its verdict depends on.
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Sequence

from .. import theory as _theory
from . import cex
from .claims import outcome
from .model import Model
from .store import (lemma_dir, lemma_dirs, lemma_text, lemma_texts_installed, pack_proofs,
                    proofs_dir, record_parts, record_problems, sha256)

__all__ = ["save_result", "store_equivalence", "prune_cache", "stale", "check_record", "recheck"]


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
        name = cex.slug(res.get("group", [models[0].ins.name])[0] if group == "symmetry" else
                        "--".join(m.label for m in models), 120)
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
            "query_sha256": res.get("query_sha256"),
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
    """Remove the proved lemmas that no stored proof references any more (after re-proving
    stale claims), folding the folder into its packs (mmaformal.query.store.pack_proofs).
    Returns the removed sha256s."""
    return pack_proofs(root)["pruned"]


def stale(rec: dict) -> list[str]:
    """The theories of a proof record whose hash differs from today's (or that no longer
    exist): the record is about definitions that have changed since it was written."""
    ts = _theory.default()
    out = []
    for tid, h in (rec.get("theories") or {}).items():
        if tid not in ts or ts.get(tid).hash() != h:
            out.append(tid)
    return out


def _queries(path: Path, rec: dict, cases: bool = True
             ) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """([(what, key, query text, solver)] a record's verdict rests on, problems): every lemma
    of a decomposed proof (each text hashing to its name, the key), the query of a monolithic
    one (key: its query_sha256), the cases of a case-split IEEE proof (rebuilt from its stored
    template and progress file; only with `cases`)."""
    out, problems = [], []
    if rec.get("method") == "decomposed":
        dirs = list(dict.fromkeys([Path(path).resolve().parent.parent / "cache", *lemma_dirs()]))
        if not lemma_texts_installed():
            return [], ["lemma texts not installed (proofs/cache/lemmas-*.tar.zst come with the "
                        "sdist or a checkout); its lemmas are not re-checked"]
        try:
            parts = record_parts(path, rec)
        except ValueError as e:
            return [], [" ".join(str(e).split())]
        for p in parts:
            text = lemma_text(p["sha256"], dirs)
            if text is None:
                problems.append(f"lemma {p.get('lemma')}: {p['sha256'][:12]}.. missing from "
                                f"proofs/cache or not hashing to its name")
            else:
                out.append((f"lemma {p.get('lemma')}", p["sha256"], text,
                            str(p.get("solver") or "bitwuzla").split(",")[0]))
        return out, problems
    split = rec.get("split")
    if isinstance(split, dict) and split.get("template") and split.get("progress"):
        from . import ieee
        tq = Path(path).parent / split["template"]
        if not tq.is_file() or sha256(tq.read_text()) != split.get("template_sha256"):
            return [], [f"template {split['template']} missing or edited"]
        try:
            progress = json.loads((Path(path).parent / split["progress"]).read_text())["cases"]
        except (OSError, ValueError, KeyError) as e:
            return [], [f"progress {split['progress']} unreadable ({e})"]
        op, fname, _mode = Path(path).stem.split("-")
        tmpl = tq.read_text()
        for key, v in sorted(progress.items()) if cases else ():
            if v.get("status") != "unsat":
                problems.append(f"case {key}: {v.get('status')}")
                continue
            parts = [c.split(".") for c in key.split(",")]
            lead = [None if len(c) == 1 else (c[1] if c[1] == "z" else int(c[1])) for c in parts]
            out.append((f"case {key}", f"{path}#{key}", ieee.case_query(
                tmpl, fname, int(parts[0][0]), int(parts[1][0]), *lead), "bitwuzla"))
        return out, problems
    q = Path(path).parent / str(rec.get("query"))
    if q.is_file() and sha256(q.read_text()) == rec.get("query_sha256"):
        out.append(("query", rec["query_sha256"], q.read_text(),
                    str(rec.get("solver") or "bitwuzla").split(",")[0]))
    return out, problems


def check_record(path: Path, rec: dict, solve: bool = False, timeout: float = 600) -> list[str]:
    """The problems of one proof record (empty: it holds): ``store.record_problems`` (verdict
    proved with a refuted broken twin, its lemma list, every lemma stored, the query hashing as
    recorded), every lemma text hashing to its name, no stale theory hash; with `solve`, every
    lemma and query re-solved (unsat)."""
    out = list(record_problems(path, rec))
    queries, problems = _queries(path, rec, cases=solve)
    out += problems
    out += [f"stale: theory {t} changed since the proof" for t in stale(rec)]
    if solve:
        from .model import check
        for what, _key, text, solver in queries:
            r = check(text, solver, timeout)
            if r.status != "unsat":
                out.append(f"{what}: {r.status} on re-solving ({r.reason})")
    return out


def recheck(records: list[tuple[Path, dict]], solve: bool = True, timeout: float = 600,
            workers: int | None = None) -> list[dict]:
    """Re-check stored proof records (``mmaformal store recheck``): each as ``check_record``,
    and with `solve` every lemma, query and case re-solved through the campaign runner (one job
    per distinct query text; `workers` processes; each job's limit enforced from outside).
    Returns one {"record", "status": "ok"|"FAIL"|"STALE", "problems", "queries"} per record,
    STALE when its only problems are changed theories."""
    from . import campaign
    rows, jobs, by_sha = [], [], {}
    for path, rec in records:
        problems = list(record_problems(path, rec))
        queries, more = _queries(path, rec, cases=solve)
        problems += more
        st = stale(rec)
        keys = []
        for what, h, text, solver in queries:
            if solve and h not in by_sha:
                by_sha[h] = campaign.Job(f"q{len(by_sha)}", "mmaformal.query.campaign:solve_job",
                                         {"text": text, "solver": solver, "timeout": timeout,
                                          "expect": "unsat"}, timeout + 60)
                jobs.append(by_sha[h])
            keys.append((what, h))
        rows.append({"record": str(path), "problems": problems, "stale": st, "_keys": keys,
                     "queries": len(queries)})
    if jobs:
        res = {r["job"]: r for r in campaign.run(jobs, workers=workers, bar=False)}
        for row in rows:
            for what, h in row["_keys"]:
                r = res.get(by_sha[h].id, {})
                if not r.get("ok"):
                    row["problems"].append(f"{what}: {r.get('status', 'not run')} on re-solving"
                                           + (f" ({r['reason']})" if r.get("reason") else ""))
    for row in rows:
        del row["_keys"]
        row["status"] = "FAIL" if row["problems"] else "STALE" if row["stale"] else "ok"
        row["problems"] += [f"stale: theory {t} changed since the proof" for t in row.pop("stale")]
    return rows
