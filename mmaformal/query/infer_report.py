"""Layer 5, query/infer_report: the result of `mmaformal infer` as JSON, text and files.

``to_json`` (the result dict of query.infer_loop.infer as plain data), ``render`` (as text:
the queries, proofs, the verdict, survivors by structure and the separating probes),
``write_probes`` (the separating probes as raw-bit tiles + manifest.json for whoever holds the
GPU) and ``save`` (the queries as a counterexamples/ record, replayed by tests/test_infer.py).

May import: numpy, mmaformal.isa, query.frame, query.model, query.pool, query.infer_engine (its
types), query.cex (lazily). In the query order it sits with infer.

Invariant: a report only reads the result; every bit pattern it shows is an oracle answer or
a candidate's prediction, in the raw form of the instruction's D format.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from .. import isa
from .frame import BadInput
from .infer_engine import Query
from .model import hex_bits
from .pool import Batch

__all__ = ["to_json", "render", "write_probes", "save"]


def _query_json(q: Query, ins) -> dict:
    return {"index": q.index + 1, "source": q.source, "inputs": q.batch.witness(0, ins).to_json(),
            "oracle": hex_bits(q.answer, ins.d), "alive_before": q.alive_before,
            "alive_after": q.alive_after}


def _structure_of(c) -> str:
    """A candidate's structure in words: its op, L and the structural keys that differ from
    the plain chain (convert, k_order, accumulate)."""
    t = c.model.theory
    parts = [t.op or t.model] + ([f"L={min(t.L, t.instr.k)}"] if t.L else [])
    parts += [f"convert={t.convert}"] if t.convert else []
    parts += [f"k_order={t.k_order}"] if t.k_order != "natural" else []
    parts += [f"accumulate={t.accumulate}"] if t.accumulate != "fused" else []
    return " ".join(parts)


def _by_structure(cands: list) -> list[dict]:
    """Survivors grouped by structure (_structure_of), with the values their parameters
    take: the summary that stays readable when hundreds survive."""
    groups: dict[str, list] = {}
    for c in cands:
        groups.setdefault(_structure_of(c), []).append(c)
    out = []
    for st, cs in groups.items():
        vals: dict[str, set] = {}
        for c in cs:
            for k, v in c.model.theory.params:
                vals.setdefault(k, set()).add(hex(v) if k == "nan" and isinstance(v, int) else v)
        out.append({"structure": st, "survivors": len(cs),
                    "params": {k: sorted(v, key=str) for k, v in sorted(vals.items())}})
    return sorted(out, key=lambda g: -g["survivors"])


def _range(vs: list) -> str:
    if len(vs) > 2 and all(isinstance(v, int) for v in vs) and vs == list(range(min(vs), max(vs) + 1)):
        return f"{min(vs)}..{max(vs)}"
    return "|".join(map(str, sorted(vs, key=lambda v: (not isinstance(v, int), v if isinstance(v, int) else str(v)))))


def _probe_json(k: int, pr: dict, res: dict, ins) -> dict:
    cands = res["candidates"]
    outs = pr["outs"]
    classes: dict[int, list[str]] = {}
    for r, v in outs.items():
        classes.setdefault(v, []).append(cands[r].label)
    return {"index": k + 1, "source": pr["source"], "inputs": pr["batch"].witness(0, ins).to_json(),
            "predictions": {cands[r].label: hex_bits(v, ins.d) for r, v in outs.items()},
            "separates": sorted(classes.values()) if len(classes) > 1 else []}


def to_json(res: dict, full: bool = False) -> dict:
    ins = isa.lookup(res["instruction"])
    cands = res["candidates"]
    out = {
        "status": res["status"], "instruction": ins.name, "family": res["family"].id,
        "oracle": res["oracle"].describe(), "candidates": len(cands),
        "merged_statically": res["stats"]["merged"], "dropped": res["stats"]["dropped"],
        "queries": len(res["queries"]), "synthesized": res["synthesized"],
        "validation_queries": res["validation"],
        "rechecks": res["rechecks"], "max_queries": res["max_queries"],
        "survivors": [cands[i].label for i in res["alive"]],
        "classes": [[cands[i].label for i in c] for c in res["classes"]],
        "identified": ([cands[i].spec() for i in res["classes"][0]]
                       if res["status"] == "identified" else []),
        "equivalences": res["equivalences"],
        "unknown": [{k: v for k, v in u.items() if k not in ("a", "b")} for u in res["unknown"]],
        "evidence": [_query_json(q, ins) for q in res["queries"]],
        "seconds": round(res["seconds"], 3), "evaluations": res["evaluations"],
        "saved": res["saved"],
        "recorded_checked": res.get("checked", 0),
        "survivors_by_structure": _by_structure([cands[i] for i in res["alive"]]),
        "probes": [_probe_json(k, pr, res, ins) for k, pr in enumerate(res.get("probes", []))],
        "unseparated": res.get("unseparated", []),
    }
    if res["failed"]:
        out["evaluation_errors"] = res["failed"]
    if res["status"] == "none-fits" or full:
        out["ruled_out_by"] = {cands[i].label: q + 1 for i, q in sorted(res["ruled_out"].items())}
    return out


def render(res: dict) -> str:
    d = to_json(res)
    L = [f"family {d['family']} on {d['instruction']}: {d['candidates']} candidates "
         f"({d['merged_statically']} merged statically, {d['dropped']} points do not fit)",
         f"oracle: {d['oracle']['label']} ({d['oracle']['kind']})"]
    for q in d["evidence"]:
        L.append(f"  query {q['index']:>2} {q['source']}: oracle {q['oracle']}: "
                 f"{q['alive_before']} -> {q['alive_after']} alive")
    for e in d["equivalences"]:
        L.append(f"  proved equivalent ({e.get('method', 'monolithic')}, {e['solver']}, {e['seconds']} s): "
                 f"{e['a']} == {e['b']}")
    for u in d["unknown"]:
        L.append(f"  unknown (solver gave no answer: {u['reason']}): {u['labels'][0]} vs {u['labels'][1]}")
    st = d["status"]
    if st == "identified":
        L.append("identified: " + " == ".join(d["classes"][0]))
        for c in d["identified"][:1]:
            L.append(f"  {c['describe']}")
    elif st == "none-fits":
        L.append(f"no candidate of {d['family']} fits the oracle; ruled out by query:")
        by_q: dict[int, list[str]] = {}
        for lab, q in to_json(res, True)["ruled_out_by"].items():
            by_q.setdefault(q, []).append(lab)
        for q, labs in sorted(by_q.items()):
            L.append(f"  query {q}: {len(labs)} candidate(s), e.g. {', '.join(labs[:3])}")
    else:
        L.append(f"{st}: {len(d['classes'])} classes of survivors remain: "
                 + "; ".join(" == ".join(c[:3]) + (" ..." if len(c) > 3 else "") for c in d["classes"][:6])
                 + (" ..." if len(d["classes"]) > 6 else ""))
        for g in d["survivors_by_structure"]:
            L.append(f"  {g['survivors']:>4} survivor(s) {g['structure']}: "
                     + ", ".join(f"{k}={_range(v)}" for k, v in g["params"].items() if len(v) > 1 or k in ("F", "rho")))
    if d["recorded_checked"]:
        L.append(f"every survivor predicts all {d['recorded_checked']} recorded inputs")
    if d["probes"] or d["unseparated"]:
        L.append(f"the recording cannot separate the {len(d['classes'])} classes; "
                 f"{len(d['probes'])} input(s) not recorded would (predictions per class; "
                 f"--probes-out DIR writes them as raw-bit tiles):")
        for pr in d["probes"][:8]:
            outs: dict[str, list[str]] = {}
            for lab, v in pr["predictions"].items():
                outs.setdefault(v, []).append(lab)
            L.append(f"  probe {pr['index']} {pr['source']}: "
                     + "; ".join(f"{v} <- {labs[0]}" + (f" (+{len(labs) - 1})" if len(labs) > 1 else "")
                                 for v, labs in list(outs.items())[:4])
                     + (" ..." if len(outs) > 4 else ""))
        if len(d["probes"]) > 8:
            L.append(f"  ... {len(d['probes']) - 8} more (--json, --probes-out)")
        for g in d["unseparated"]:
            L.append(f"  no input found that separates: " + " / ".join(g[:4]) + (" ..." if len(g) > 4 else ""))
    L.append(f"status: {st}  ({d['queries']} queries: {d['synthesized']} synthesized by the "
             f"solver, {d['validation_queries']} validation; {d['rechecks']} rechecks; "
             f"{d['seconds']:.1f} s)")
    for p in d["saved"]:
        L.append(f"saved: {p}")
    return "\n".join(L)


def write_probes(res: dict, out: "str | Path") -> Path | None:
    """The separating probes of a run (separate) as raw-bit tiles DIR/A.npy, B.npy, C.npy
    (probe t is the dot product in row 0 / column 0 of tile t, other elements +0: the design's
    .npy form, run unchanged by `mmaformal simulate` and `mmaformal hw run`) and
    DIR/manifest.json (per probe: inputs, each surviving class's predicted D[0, 0], the classes
    it separates). Returns DIR's manifest path, or None when there is no probe."""
    if not res.get("probes"):
        return None
    ins = isa.lookup(res["instruction"])
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BadInput(f"--probes-out {out}: exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    batch = Batch.concat([pr["batch"] for pr in res["probes"]])
    A, B, C, SA, SB = batch.tiles(ins)
    arrays = {"A": A, "B": B, "C": C}
    if SA is not None:
        arrays.update(SA=SA, SB=SB)
    for nm, arr in arrays.items():
        np.save(out / f"{nm}.npy", arr)
    d = to_json(res)
    man = {"instruction": ins.name, "family": d["family"], "oracle": d["oracle"],
           "status": d["status"], "survivors": d["survivors"], "classes": d["classes"],
           "layout": "probe t is the dot product in row 0 / column 0 of tile t of A.npy, B.npy, "
                     "C.npy (and SA.npy, SB.npy for block scales); other elements are +0",
           "run": f"run the tiles on a GPU with {ins.name} (`mmaformal hw run {ins.name} --a A.npy "
                  f"--b B.npy --c C.npy --out D.npy` where the hw harness covers the "
                  f"architecture, else any harness that reads these .npy tiles) and write "
                  f"D.npy here; then `mmaformal infer --oracle file:DIR` reads A, B, C, D.npy",
           "source": "mmaformal infer: inputs that separate the classes a recording leaves "
                     "(pool probes and input classes, solver witnesses)",
           "probes": [{"tile": k, **pr} for k, pr in enumerate(d["probes"])]}
    p = out / "manifest.json"
    p.write_text(json.dumps(man, indent=1) + "\n")
    return p


def save(res: dict, root: Path | None = None) -> Path:
    """The queries as a counterexamples/ record (cex's format, kind "infer"): each run is one
    query with the oracle's output; `models` are the identified candidates' specs; replayed
    by tests/test_infer.py (every survivor must reproduce every run)."""
    import datetime as _dt
    from . import cex
    ins = isa.lookup(res["instruction"])
    d = to_json(res)
    rec = {
        "kind": "infer",
        "claim": f"oracle {d['oracle']['label']} on {ins.name}: family {d['family']} -> {d['status']}",
        "formats": {"a": ins.a, "b": ins.b, "c": ins.c, "d": ins.d, "scale": ins.scale or None},
        "family": {"id": res["family"].id, "file": res["family"].file},
        "models": [res["candidates"][i].spec() for i in res["alive"]][:64],
        "oracle": d["oracle"],
        "runs": [{"model": "oracle", "source": q.source, "inputs": q.batch.witness(0, ins).to_json(),
                  "output": hex_bits(q.answer, ins.d),
                  "hardware": ({"output": hex_bits(q.answer, ins.d), **d["oracle"].get("device", {})}
                               if d["oracle"]["kind"] == "hw" else None)}
                 for q in res["queries"]],
        "check": "oracle",
        "verdict": {"status": d["status"], "survivors": d["survivors"][:64],
                    "equivalences": d["equivalences"]},
        "tool": {"date": _dt.date.today().isoformat(), "queries": d["queries"],
                 "seconds": d["seconds"]},
    }
    base = (root or cex.store_dir()) / "infer"
    base.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256(json.dumps(rec["runs"], sort_keys=True).encode()).hexdigest()[:10]
    p = base / f"{cex.slug(ins.name + '--' + d['oracle']['label'])}-{h}.json"
    p.write_text(json.dumps(rec, indent=1) + "\n")
    return p
