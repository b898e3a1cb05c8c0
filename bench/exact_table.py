"""The largest p for which integer-valued f16 inputs |a_k|, |b_k| < 2^p with c = 0 give an exact
f32 result, per architecture (one f16 -> f32 `mma` form each), with the solver times.

    python3 bench/exact_table.py [--timeout S] [--solver S] [--pmax P] [INSTR ...]

For each instruction: the claim `prove exact INSTR --where 'int(a,b) and abs(a,b) < 2^p and
c == 0'` (mmaformal.query.claims.exact) is asked from p = PMAX down: refutations are quick
(each witness replayed concretely and against exact Fractions), so the scan stops at the first p
that is not refuted, the one query that must be proved; the answer is that p when it is proved
(proved at p, refuted at p + 1), else "unknown" with the time limit. f16 holds every integer
below 2^11 exactly and the products fill at most 2p bits, so PMAX = 12 starts above every answer.
The refutation at p + 1 is the broken twin of the proof at p (every bound raised by one bit).
Each claim is solved by --method (default auto: concrete candidate inputs, then the decomposed
proof of mmaformal.query.claims.exact_fdpa for these T-FDPA chains, then the monolithic query
with the time left). Prints a markdown table (one row per instruction) with the seconds of each
verdict (wall, including building the lemmas) and how it was reached (a decomposed proof: its
lemmas, and how many were solved for this row: lemma texts identical to ones an earlier row
solved are reused within the process).
"""
from __future__ import annotations

import argparse
import sys
import time

from mmaformal.query.claims.exact import exact_claim

INSTRUCTIONS = ["sm70/mma.m8n8k4.f32.f16.f16.f32", "sm75/mma.m16n8k8.f32.f16.f16.f32",
                "sm80/mma.m16n8k16.f32.f16.f16.f32", "sm89/mma.m16n8k16.f32.f16.f16.f32",
                "sm90/mma.m16n8k16.f32.f16.f16.f32", "sm100/mma.m16n8k16.f32.f16.f16.f32",
                "sm120/mma.m16n8k16.f32.f16.f16.f32"]

WHERE = "int(a,b) and abs(a,b) < 2^{p} and c == 0"


def largest_p(instr: str, pmax: int = 12, solver: str = "bitwuzla", timeout: float = 60,
              method: str = "auto") -> dict:
    """{"p": the largest proved p or None, "status", "refuted_at", "prove_s", "refute_s",
    "theory", "how", "refute_how"}: scan p = pmax, pmax - 1, ... until a query is not
    refuted."""
    refuted_at, refute_s, refute_how = None, 0.0, ""
    for p in range(pmax, 0, -1):
        t0 = time.perf_counter()
        c = exact_claim(instr, WHERE.format(p=p), twin=False, method=method)
        r = c.solve(solver, timeout)
        wall = time.perf_counter() - t0
        if r["status"] == "refuted":
            refuted_at, refute_s, refute_how = p, wall, r["method"]
            continue
        how = r["method"]
        if how == "decomposed":
            parts = r["parts"]
            fresh = [q for q in parts if not q["cached"]]
            how = (f"decomposed, {len(parts)} lemmas, {len(fresh)} solved here in "
                   f"{sum(q['seconds'] for q in fresh):.1f} solver-s")
        return {"instr": instr, "theory": c.model.theory.id, "p": p if r["status"] == "proved" else None,
                "tried": p, "status": r["status"], "refuted_at": refuted_at,
                "prove_s": wall, "refute_s": refute_s, "how": how, "refute_how": refute_how,
                "reason": r.get("reason", "")}
    return {"instr": instr, "theory": "", "p": 0, "tried": 0, "status": "refuted everywhere",
            "refuted_at": 1, "prove_s": 0.0, "refute_s": refute_s, "how": "",
            "refute_how": refute_how, "reason": ""}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("instructions", nargs="*", default=INSTRUCTIONS)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--solver", default="bitwuzla")
    ap.add_argument("--pmax", type=int, default=12)
    ap.add_argument("--method", default="auto", choices=("auto", "decomposed", "monolithic"))
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    print("| instruction | theory | largest exact p | proof at p | refutation at p + 1 |")
    print("|---|---|---|---|---|")
    for ins in a.instructions:
        r = largest_p(ins, a.pmax, a.solver, a.timeout, a.method)
        if r["status"] == "proved":
            cell, prove = str(r["p"]), f"proved, {r['prove_s']:.1f} s ({r['how']})"
        else:
            cell = f"unknown (< {r['refuted_at']})"
            prove = (f"p = {r['tried']}: {r['status']} after {r['prove_s']:.1f} s (limit "
                     f"{a.timeout:g} s; {r['reason']})")
        ref = (f"p = {r['refuted_at']}: refuted, {r['refute_s']:.1f} s ({r['refute_how']})"
               if r["refuted_at"] else "-")
        print(f"| `{ins}` | {r['theory']} | {cell} | {prove} | {ref} |", flush=True)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s ({a.solver}, --method {a.method}, limit "
          f"{a.timeout:g} s per claim)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
