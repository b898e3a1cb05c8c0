"""The coverage table of docs/coverage.md: for each claim, the catalog instructions it applies
to, their groups (one query per group: prove.claim_groups), and how many are decided by a
stored record (a proof whose broken twin was refuted, or a counterexample that replays), from
the store and the shipped records (prove.stored_verdicts). Progress stores of campaigns
(--progress FILE.jsonl, one per claim) add the unknowns: solver and time of each group that a
campaign left undecided.

    python3 bench/coverage_table.py [--progress CLAIM=FILE.jsonl ...] [--unknowns] [--json]

May import: mmaformal (isa, query.prove).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mmaformal import isa  # noqa: E402
from mmaformal.query import prove  # noqa: E402


def _pct(part: int, whole: int) -> str:
    """part / whole in percent, rounded down to two decimals (never overstated: 6586 of 6655
    is 98.96 %, not the 99.0 % one decimal would print)."""
    return f"{part * 10000 // max(1, whole) / 100:.2f}%"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--claims", default="symmetry,monotonic,bound")
    p.add_argument("--progress", action="append", default=[], metavar="CLAIM=FILE")
    p.add_argument("--json", action="store_true")
    p.add_argument("--unknowns", action="store_true", help="list every undecided group")
    a = p.parse_args(argv)
    prog = {}
    for x in a.progress:
        c, f = x.split("=", 1)
        for line in Path(f).read_text().splitlines():
            r = json.loads(line)
            prog.setdefault(c, {})[r["job"].split("/", 1)[1]] = r
    total = len(isa.catalog())
    rows = []
    for claim in a.claims.split(","):
        groups, left = prove.claim_groups(claim)
        stored = prove.stored_verdicts(claim)
        row = {"claim": claim, "catalog": total, "instructions": sum(map(len, groups)),
               "groups": len(groups), "proved": 0, "refuted": 0, "undecided": 0,
               "groups_undecided": 0, "not_applicable": left, "unknowns": []}
        for g in groups:
            hit = [stored[n] for n in g if n in stored]
            if len(hit) == len(g):
                row["refuted" if "counterexamples" in hit[0] else "proved"] += len(g)
                continue
            row["undecided"] += len(g)
            row["groups_undecided"] += 1
            r = prog.get(claim, {}).get(g[0])
            row["unknowns"].append({"group": g[0], "instructions": len(g),
                                    "status": r["status"] if r else "not run",
                                    "solver": r.get("solver", "") if r else "",
                                    "seconds": r.get("seconds") if r else None,
                                    "reason": (r.get("reason") or "")[:160] if r else ""})
        rows.append(row)
    if a.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| claim | instructions | groups | proved | refuted | undecided | decided |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        dec = r["proved"] + r["refuted"]
        print(f"| {r['claim']} | {r['instructions']} | {r['groups']} | {r['proved']} | "
              f"{r['refuted']} | {r['undecided']} ({r['groups_undecided']} groups) | "
              f"{_pct(dec, r['instructions'])} |")
    for r in rows:
        if r["not_applicable"]:
            print(f"\n{r['claim']}: not applicable: " +
                  "; ".join(f"{k}: {v}" for k, v in r["not_applicable"].items()))
    if a.unknowns:
        for r in rows:
            print(f"\n### {r['claim']}: undecided groups\n")
            print("| first instruction of the group | instructions | campaign status | solver "
                  "| seconds | reason |\n|---|---|---|---|---|---|")
            for u in r["unknowns"]:
                why = u["reason"].replace("|", "/")
                if u["status"] == "proved":
                    why = "proved, but no stored record (twin not refuted, or record not kept)"
                print(f"| `{u['group']}` | {u['instructions']} | {u['status']} | {u['solver']} | "
                      f"{u['seconds'] if u['seconds'] is not None else '-'} | {why} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
