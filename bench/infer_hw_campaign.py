"""Device campaign: identify sm90 mma.sync instructions from scratch with `infer`, GPU oracle.

    python3 bench/infer_hw_campaign.py --out DIR [--instr NAME ...] [--space nvidia-t-fdpa]
                                       [--max-queries 64] [--timeout 30] [--solver-budget 120]

For each instruction (default: the sm90 mma.sync f16 -> f32, bf16 -> f32, tf32 -> f32 and
f16 -> f16 forms, and fp8 (e4m3 -> f32 k32 and k16, e4m3 -> f16, e5m2 -> f32), which is two
chained f16 HMMA halves) infer runs over the family with `hw:INSTR` as oracle (mmaformal.hw.runner:
one tile per query, the dot product in row 0 / column 0), then the identified class is
compared with the instruction's primary theory in theories/ (equal canonical keys, or the
primary theory survives in the final class). Writes DIR/<instruction>.json (infer's --json
object + "agrees_with_theory"), DIR/infer/*.json (the queries as counterexample records with
the hardware outputs), DIR/summary.json, and prints one line per instruction.

Exit 0 when every instruction is identified and agrees with its primary theory, 1 otherwise,
2 when there is no usable GPU. May import: mmaformal (query.infer, query.family, theory).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mmaformal import theory as _theory  # noqa: E402
from mmaformal.query import family as _family  # noqa: E402
from mmaformal.query import infer as _infer  # noqa: E402
from mmaformal.query.distinguish import BadInput  # noqa: E402

DEFAULT = [
    "sm90/mma.m16n8k16.f32.f16.f16.f32",
    "sm90/mma.m16n8k16.f32.bf16.bf16.f32",
    "sm90/mma.m16n8k8.f32.tf32.tf32.f32",
    "sm90/mma.m16n8k16.f16.f16.f16.f16",
    "sm90/mma.m16n8k32.f32.e4m3.e4m3.f32",     # the two-HMMA-halves structure (SASS 2026-11-21)
    "sm90/mma.m16n8k16.f32.e4m3.e4m3.f32",
    "sm90/mma.m16n8k32.f16.e4m3.e4m3.f16",
    "sm90/mma.m16n8k32.f32.e5m2.e5m2.f32",
]


def campaign(names, out: Path, space: str, max_q: int, timeout: float, budget: float,
             oracle_factory=None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    fam = _family.get(space)
    rows = []
    for name in names:
        t0 = time.perf_counter()
        oracle = oracle_factory(name) if oracle_factory else _infer.make_oracle(f"hw:{name}")
        res = _infer.infer(fam, oracle, max_q, "bitwuzla", timeout, solver_budget=budget,
                           log=lambda s: print(f"  {s}", flush=True))
        d = _infer.to_json(res)
        prim = _theory.resolve(name)
        key = _family.canonical_key(prim)
        final = [res["candidates"][i] for c in res["classes"][:1] for i in c]
        alive = [res["candidates"][i] for i in res["alive"]]
        d["primary_theory"] = {"id": prim.id, "status": prim.status, "hash": prim.hash()}
        d["agrees_with_theory"] = res["status"] == "identified" and any(c.key == key for c in final)
        d["theory_survives"] = any(c.key == key for c in alive)
        d["saved"] = [str(_infer.save(res, out))]
        (out / (name.replace("/", "_") + ".json")).write_text(json.dumps(d, indent=1) + "\n")
        row = {"instruction": name, "status": d["status"], "queries": d["queries"],
               "survivors": len(d["survivors"]), "agrees_with_theory": d["agrees_with_theory"],
               "theory_survives": d["theory_survives"], "primary_theory": prim.id,
               "seconds": round(time.perf_counter() - t0, 1),
               "identified": [c["label"] for c in d["identified"]][:8]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "space": space,
               "device": rows and json.loads((out / (names[0].replace('/', '_') + '.json')).read_text())["oracle"].get("device"),
               "rows": rows}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--instr", action="append", default=[])
    p.add_argument("--space", default="nvidia-t-fdpa")
    p.add_argument("--max-queries", type=int, default=64)
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("--solver-budget", type=float, default=120)
    a = p.parse_args(argv)
    try:
        s = campaign(a.instr or DEFAULT, a.out, a.space, a.max_queries, a.timeout, a.solver_budget)
    except BadInput as e:
        print(f"infer_hw_campaign: {e}", file=sys.stderr)
        return 2
    return 0 if all(r["agrees_with_theory"] for r in s["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
