"""Benchmark of the query layer (distinguish, prove): seconds per solver and dot-product length.

    python3 bench/bench_query.py [--solvers z3,bitwuzla,cvc5] [--ks 4,8,16,32] [--timeout 120]
                                 [--monolithic-ks 4] [--pysmt] [--store] [--json FILE]

1. distinguish: T-FDPA F=24 vs F=25 (f16 inputs, f32 c and d, RZ-FP32, one block of K terms):
   solver seconds of the query, and the whole verb (build + solve + concrete replay).
2. symmetry (the NVIDIA T-FDPA claim on the same single-block model, F=25): decomposed at the
   fixed-point interface (lemma count, distinct lemmas, cache hits), per solver; and the
   monolithic query for K in --monolithic-ks, to show what the decomposition saves.
3. --pysmt: the overhead of re-dispatching an exported query through pysmt (parse + z3 via
   pysmt) against z3 reading the same text directly. pysmt is not on any hot path.
4. --store: re-check the whole proofs/ store of the claims (every lemma in proofs/cache and
   every monolithic proof query), total seconds.

Targets on the project machine (2 shared cores): distinguish K=16 <= 2 s, K=32 <= 10 s; every
symmetry proof with K <= 16 <= 60 s; the whole store re-checked <= 20 min.
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mmaformal import theory as T  # noqa: E402
from mmaformal.query import distinguish as D  # noqa: E402
from mmaformal.query.claims import CLAIMS  # noqa: E402
from mmaformal.query.claims import symmetry as CS  # noqa: E402


def raw_tfdpa(K: int, F: int) -> D.Model:
    """T-FDPA with L = K (one block), f16 x f16 + f32 -> f32, RZ-FP32, on a synthetic
    instruction of length K (the catalog has no f16 instruction with K = 32)."""
    base = T.resolve("sm90/mma.m16n8k16.f32.f16.f16.f32")
    ins = dataclasses.replace(base.instr, name=f"bench/t_fdpa.k{K}.f32.f16.f16.f32",
                              qualifier=f"t_fdpa.k{K}.f32.f16.f16.f32", k=K)
    params = dict(base.param_dict)
    params["F"] = F
    th = dataclasses.replace(base, id=f"bench.tfdpa.k{K}.f{F}", L=K,
                             params=tuple(sorted(params.items())), instr=ins)
    return D.Model(f"T-FDPA(K={K},F={F})", th, th, {}, False, 1)


def bench_distinguish(solver: str, K: int, timeout: float) -> dict:
    A, B = raw_tfdpa(K, 25), raw_tfdpa(K, 24)
    t0 = time.perf_counter()
    q = D.build(A, B)
    st, found, secs, last, text = D.search(q, 1, solver, timeout, "lazy", ("int", "numpy"))
    return {"status": st, "solve": round(last.seconds, 3) if last else None,
            "total": round(time.perf_counter() - t0, 3), "chars": len(text)}


def bench_symmetry(solver: str, K: int, timeout: float, method: str) -> dict:
    D.CACHE.mem.clear()
    D.CACHE.root = None
    m = raw_tfdpa(K, 25)
    t0 = time.perf_counter()
    res = CS.prove_symmetry(m, solver, timeout, method, False, None, ("int", "numpy"), False)
    d = {"status": res["status"], "total": round(time.perf_counter() - t0, 3),
         "method": res["method"]}
    if res.get("parts"):
        d["lemmas"] = len(res["parts"])
        d["cached"] = sum(p["cached"] for p in res["parts"])
        d["slowest"] = max(res["parts"], key=lambda p: p["seconds"])["lemma"]
    return d


def bench_pysmt(K: int = 8) -> dict:
    """pysmt: parse an exported query and re-dispatch it to z3 through pysmt."""
    from pysmt.shortcuts import Solver
    from pysmt.smtlib.parser import SmtLibParser
    import warnings
    import z3
    warnings.simplefilter("ignore")
    q = D.build(raw_tfdpa(K, 25), raw_tfdpa(K, 24))
    text = D.to_smt2([q.differ()])
    out = {"chars": len(text)}
    t0 = time.perf_counter()
    s = z3.Solver()
    s.from_string(text)
    r = s.check()
    out["z3_direct"] = round(time.perf_counter() - t0, 3)
    out["z3_direct_status"] = str(r)
    t0 = time.perf_counter()
    try:
        script = SmtLibParser().get_script(io.StringIO(text))
        f = script.get_last_formula()
        out["pysmt_parse"] = round(time.perf_counter() - t0, 3)
        t1 = time.perf_counter()
        with Solver(name="z3") as ps:
            ps.add_assertion(f)
            out["pysmt_z3_status"] = "sat" if ps.solve() else "unsat"
        out["pysmt_z3_solve"] = round(time.perf_counter() - t1, 3)
        out["pysmt_total"] = round(time.perf_counter() - t0, 3)
    except Exception as e:  # reported, not hidden
        out["pysmt_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    return out


def bench_store(timeout: float) -> dict:
    from mmaformal import paths
    from mmaformal.query.distinguish import check
    PROOFS = paths.shipped("proofs")            # the stored records (checkout or installed)
    CACHE_DIR = PROOFS / "cache"
    t0 = time.perf_counter()
    n, bad = 0, []
    for q in sorted(CACHE_DIR.glob("*.smt2")):
        meta = json.loads(q.with_suffix(".json").read_text())
        r = check(q.read_text(), meta["solver"], timeout)
        n += 1
        if r.status != "unsat":
            bad.append(q.name)
    for g in CLAIMS:
        for p in sorted((PROOFS / g).glob("*.json")) if (PROOFS / g).exists() else []:
            rec = json.loads(p.read_text())
            if rec.get("method") != "decomposed" and rec.get("query"):
                r = check((p.parent / rec["query"]).read_text(), rec["solver"].split(",")[0], timeout)
                n += 1
                if r.status != "unsat":
                    bad.append(p.name)
    return {"queries": n, "not_unsat": bad, "seconds": round(time.perf_counter() - t0, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solvers", default="z3,bitwuzla,cvc5")
    ap.add_argument("--ks", default="4,8,16,32")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--monolithic-ks", default="4")
    ap.add_argument("--pysmt", action="store_true")
    ap.add_argument("--store", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args(argv)
    solvers = [s for s in a.solvers.split(",") if s]
    ks = [int(k) for k in a.ks.split(",") if k]
    mono = [int(k) for k in a.monolithic_ks.split(",") if k]
    report: dict = {"distinguish": {}, "symmetry": {}, "symmetry_monolithic": {}}
    fmt = lambda d: (f"{d['solve']:.2f}/{d['total']:.2f}" if d["status"] == "distinguished"
                     else f"{d['status']}>{d['total']:.0f}")

    def table(key: str, Ks, run, cell, width: int) -> None:
        """One row per K, one cell per solver: d = run(solver, K), kept in report[key]."""
        for K in Ks:
            row = []
            for s in solvers:
                d = run(s, K)
                report[key][f"{s}/{K}"] = d
                row.append(cell(d))
            print(f"{K:>4} " + " ".join(f"{x:>{width}}" for x in row), flush=True)

    print(f"1. distinguish T-FDPA F=25 vs F=24 (f16 -> f32): solver s / verb s  (timeout {a.timeout:g} s)")
    print(f"{'K':>4} " + " ".join(f"{s:>16}" for s in solvers), flush=True)
    table("distinguish", ks, lambda s, K: bench_distinguish(s, K, a.timeout), fmt, 16)
    print(f"\n2. symmetry, decomposed (seconds, lemmas/cached; timeout {a.timeout:g} s per lemma)")
    print(f"{'K':>4} " + " ".join(f"{s:>22}" for s in solvers), flush=True)
    table("symmetry", ks, lambda s, K: bench_symmetry(s, K, a.timeout, "decomposed"),
          lambda d: f"{d['status'][:6]} {d['total']:.2f} {d.get('lemmas', 0)}/{d.get('cached', 0)}", 22)
    if mono:
        print(f"\n   symmetry, monolithic (seconds; timeout {a.timeout:g} s)")
        table("symmetry_monolithic", mono, lambda s, K: bench_symmetry(s, K, a.timeout, "monolithic"),
              lambda d: f"{d['status'][:7]} {d['total']:.1f}", 22)
    if a.pysmt:
        d = bench_pysmt()
        report["pysmt"] = d
        print("\n3. pysmt re-dispatch (K=8 distinguish query):", json.dumps(d))
    if a.store:
        d = bench_store(max(a.timeout, 600))
        report["store"] = d
        print("\n4. proofs/ store re-check:", json.dumps(d))
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
