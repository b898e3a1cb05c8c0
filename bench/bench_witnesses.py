"""Readable witnesses: distinguish on adjacent architectures of one format, raw and minimized.

    PYTHONPATH=. python3 bench/bench_witnesses.py [--step-timeout S] [--budget S] [--json OUT]

For each adjacent pair (sm70..sm120, gfx908..gfx942; f16 operands, f32 accumulator) it runs
`distinguish` once with `raw=True` (the solver's witness as found) and once minimized (the
default; mmaformal.query.minimize), and prints side by side: status, non-zero products,
operands paired with a zero, exponent spread, significand bits (raw -> minimized), and seconds
(the raw run; the minimized run's search, then its minimization), then the minimized witness
in the one-line form of [Xie2025]'s Equation 10. The table in docs/witnesses.md is this script's output.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from mmaformal.query import distinguish as D  # noqa: E402
from mmaformal.query import minimize as M  # noqa: E402

NVIDIA = ["sm70/mma.m8n8k4.f32.f16.f16.f32", "sm75/mma.m16n8k8.f32.f16.f16.f32",
          "sm80/mma.m16n8k16.f32.f16.f16.f32", "sm89/mma.m16n8k16.f32.f16.f16.f32",
          "sm90/mma.m16n8k16.f32.f16.f16.f32", "sm100/mma.m16n8k16.f32.f16.f16.f32",
          "sm120/mma.m16n8k16.f32.f16.f16.f32"]
AMD = ["gfx908/v_mfma_f32_16x16x16f16", "gfx90a/v_mfma_f32_16x16x16f16",
       "gfx942/v_mfma_f32_16x16x16_f16"]


def pairs():
    for chain in (NVIDIA, AMD):
        for x, y in zip(chain, chain[1:]):
            yield x, y


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--step-timeout", type=float, default=M.DEFAULT_STEP_TIMEOUT)
    p.add_argument("--budget", type=float, default=M.DEFAULT_BUDGET)
    p.add_argument("--json", metavar="OUT")
    args = p.parse_args(argv)
    rows = []
    print(f"{'pair':<16} {'status':<13} {'products':>9} {'paired0':>8} {'spread':>8} {'sigbits':>8}"
          f" {'raw s':>7} {'search s':>8} {'min s':>7}  queries (unknown)")
    for a, b in pairs():
        t0 = time.perf_counter()
        r = D.distinguish(a, b, raw=True)
        raw_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        m = D.distinguish(a, b, minimize_timeout=args.step_timeout, minimize_budget=args.budget)
        min_s = time.perf_counter() - t0
        name = f"{a.split('/')[0]}-{b.split('/')[0]}"
        row = {"pair": [a, b], "status": r["status"], "raw_seconds": round(raw_s, 2),
               "minimized_run_seconds": round(min_s, 2),
               "search_seconds": round(m["search_seconds"], 2)}
        if r["found"]:
            raw_m = M.measure(r["found"][0].witness)
            mm = M.measure(m["found"][0].witness)
            rep = m["minimized"]
            unk = sum(1 for q in rep["queries"] if q["status"] in ("unknown", "skipped"))
            row.update(raw=raw_m, minimized=mm, queries=len(rep["queries"]), unknown=unk,
                       minimize_seconds=rep["seconds"],
                       equation=M.equation(m["found"][0].witness, m["found"][0].outputs,
                                           m["A"].ins.d),
                       raw_equation=M.equation(r["found"][0].witness))
            f = lambda k: f"{raw_m[k]}->{mm[k]}"
            print(f"{name:<16} {r['status']:<13} {f('products'):>9} {f('paired_with_zero'):>8} "
                  f"{f('spread'):>8} {f('sig_bits'):>8} {raw_s:7.1f} {m['search_seconds']:8.1f} "
                  f"{rep['seconds']:7.1f}  "
                  f"{len(rep['queries'])} ({unk})")
            print(f"    {row['equation']}")
        else:
            print(f"{name:<16} {r['status']:<13} {'-':>9} {'-':>8} {'-':>8} {'-':>8} "
                  f"{raw_s:7.1f} {m['search_seconds']:8.1f} {'-':>7}")
        sys.stdout.flush()
        rows.append(row)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
