"""Benchmark: `mmaformal infer` with every theory of theories/ as a black-box oracle.

For each theory (bound to its first catalog instruction) the matching built-in family is the
first one with a candidate that computes the same thing (equal canonical keys); infer runs
over that family with the theory as oracle, and the row says whether the final class of
survivors holds that candidate ("ok": identified, the theory or candidates proved equivalent
to it), whether it survived but unproved rivals remain ("unresolved": solver time-outs), or
failed. Prints a table (theory, instruction, family, candidates, queries, seconds, result) and
the time per instruction.

    python3 bench/bench_infer.py [--only PATTERN] [--timeout S] [--jobs N] [--ray auto|local|ADDR]
                                 [--progress FILE.jsonl] [--out FILE.json]

Theories are grouped by instruction so that pool evaluations are shared (they do not depend on
the oracle); each instruction is one job of the campaign runner (mmaformal.query.campaign: a
local pool of --jobs processes, or Ray; a job past its limit is killed and its rows say so; with
--progress an interrupted run resumes). May import: mmaformal (query.campaign, query.family,
query.infer, theory).
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import multiprocessing as mp
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mmaformal import theory as _theory  # noqa: E402
from mmaformal.query import campaign as _campaign  # noqa: E402
from mmaformal.query import family as _family  # noqa: E402
from mmaformal.query import infer as _infer  # noqa: E402
from mmaformal.query.distinguish import Model  # noqa: E402


def one(args) -> list[dict]:
    (instr, tids), timeout, max_q, budget = args
    ts = _theory.default()
    fams = _family.builtin()
    rows = []
    for tid in tids:
        t0 = time.perf_counter()
        th = ts.resolve(instr, tid)
        row = {"theory": tid, "instruction": instr, "status_in_theories": th.status}
        try:
            hit = _family.matching(th, fams)
            if hit is None:
                row.update(family="-", result="no family", seconds=round(time.perf_counter() - t0, 1))
                rows.append(row)
                continue
            fam, cand = hit
            oracle = _infer.TheoryOracle(Model(tid, th, th, {}, False, 1))
            res = _infer.infer(fam, oracle, max_q, "bitwuzla", timeout, solver_budget=budget)
            alive_labels = {res["candidates"][i].label for i in res["alive"]}
            final = [res["candidates"][i].label for c in res["classes"][:1] for i in c]
            if res["status"] == "identified" and cand.label in final:
                result = "ok"
            elif res["status"] in ("unknown", "unresolved", "budget") and cand.label in alive_labels:
                result = "unresolved"
            else:
                result = f"FAIL ({res['status']})"
            row.update(family=fam.id, candidates=len(res["candidates"]),
                       queries=len(res["queries"]), synthesized=res["synthesized"],
                       proved_equivalent=len(res["equivalences"]), unknown=len(res["unknown"]),
                       survivors=len(res["alive"]), result=result,
                       seconds=round(time.perf_counter() - t0, 1))
        except Exception as e:  # a row, not a crash: the table shows every theory
            row.update(result=f"ERROR {type(e).__name__}: {str(e).splitlines()[0][:120]}",
                       seconds=round(time.perf_counter() - t0, 1))
        rows.append(row)
    return rows


def infer_job(instr: str, tids: list[str], timeout: float, max_queries: int,
              budget: float) -> dict:
    """A campaign job: the rows of one instruction's theories."""
    return {"status": "done", "rows": one(((instr, tids), timeout, max_queries, budget))}


def _fmt(r: dict) -> str:
    return (f"| {r['theory']} | {r['instruction']} | {r.get('family', '-')} | "
            f"{r.get('candidates', '-')} | {r.get('queries', '-')} | {r.get('seconds', '-')} | "
            f"{r['result']}{' (' + str(r.get('survivors')) + ' survivors, ' + str(r.get('proved_equivalent')) + ' proved equivalent)' if r.get('survivors', 1) > 1 else ''} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="*", help="fnmatch patterns over theory ids, comma-separated")
    p.add_argument("--timeout", type=float, default=60, help="seconds per solver call")
    p.add_argument("--solver-budget", type=float, default=120, help="solver seconds per theory")
    p.add_argument("--max-queries", type=int, default=64)
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: the CPUs available)")
    p.add_argument("--ray", metavar="auto|local|ADDRESS", help="run on a Ray cluster (its "
                   "workers must import bench_infer: run from a checkout on a shared file system)")
    p.add_argument("--progress", metavar="FILE.jsonl", help="progress store: resume a run")
    p.add_argument("--limit", type=float, help="seconds per instruction, enforced by killing "
                   "its worker (default: 4 x --solver-budget + 120)")
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    ts = _theory.default()
    groups: dict[str, list[str]] = {}
    for t in ts:
        if any(fnmatch.fnmatch(t.id, pat) for pat in a.only.split(",")):
            groups.setdefault(ts.instructions_of(t.id)[0], []).append(t.id)
    print(f"# bench_infer: {sum(map(len, groups.values()))} theories on {len(groups)} instructions; "
          f"{platform.node()} {platform.processor() or platform.machine()}, "
          f"{mp.cpu_count()} cores, {time.strftime('%Y-%m-%d')}", flush=True)
    print("| theory | instruction | family | candidates | queries | seconds | result |")
    print("|---|---|---|---|---|---|---|", flush=True)
    t0 = time.perf_counter()
    jobs = [_campaign.Job(i, "bench_infer:infer_job",
                          dict(instr=i, tids=tids, timeout=a.timeout, max_queries=a.max_queries,
                               budget=a.solver_budget),
                          limit=a.limit or 4 * a.solver_budget + 120)
            for i, tids in sorted(groups.items())]

    def show(job, r):
        if r["status"] != "done":      # killed at the limit, or its worker died: say so per row
            r["rows"] = [{"theory": t, "instruction": job.id, "status_in_theories": "",
                          "result": f"ERROR job {r['status']}: {r.get('reason', '')}",
                          "seconds": r.get("seconds", "-")} for t in job.kwargs["tids"]]
        for row in r["rows"]:
            print(_fmt(row), flush=True)
        return {"rows": r["rows"]}
    rs = _campaign.run(jobs, workers=a.jobs, ray=a.ray, progress=a.progress, on_result=show,
                       bar=False)
    rows = [row for r in rs for row in r["rows"]]
    total = time.perf_counter() - t0
    ok = sum(r["result"] == "ok" for r in rows)
    unres = sum(r["result"] == "unresolved" for r in rows)
    per = [r["seconds"] for r in rows if isinstance(r.get("seconds"), (int, float))]
    qs = [r["queries"] for r in rows if "queries" in r]
    print(f"# {ok}/{len(rows)} ok, {unres} unresolved (survived, solver time-outs), "
          f"{len(rows) - ok - unres} other; max queries {max(qs) if qs else '-'}; "
          f"seconds per theory: mean {sum(per) / max(1, len(per)):.1f}, max {max(per) if per else 0:.1f}; "
          f"wall {total:.0f} s", flush=True)
    if a.out:
        a.out.write_text(json.dumps({"rows": rows, "wall_seconds": round(total, 1),
                                     "date": time.strftime("%Y-%m-%d"),
                                     "machine": f"{platform.node()} {mp.cpu_count()} cores"},
                                    indent=1) + "\n")
    return 0 if ok + unres == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
