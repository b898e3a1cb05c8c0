"""Layer 5, query/cex: the counterexamples/ folder (what separates two beliefs or refutes one).

One JSON record per counterexample, `counterexamples/<kind>/<name>.json`:

    kind        "distinguish" (two models differ on one input), "symmetry" (Phi(-A,B,-C) is not
                ~ -Phi(A,B,C)), "monotonic" (a larger addend gives a smaller output),
                "bound" (an error above the bound), "equiv"/"unobservable" (refuted equivalence)
    claim       the sentence that the counterexample refutes or separates
    formats     {"a", "b", "c", "d", "scale"}: how to read the hex strings
    models      model specs (mmaformal.query.model.Model.spec: theory id, instruction,
                parameter changes, RD-twin flag, chain count, and the theory hash at writing)
    runs        [{"model": LABEL, "inputs": {"a": [HEX..], "b": [..], "c": HEX, "scale_a",
                  "scale_b"}, "output": HEX, "hardware": null}]: each run is one dot product
                whose output the tests replay on every back-end; "hardware" is filled by a
                GPU run ({"output": HEX, "device", "driver", "date"})
    check       what the runs' outputs show: "differ" (run 0 and run 1 differ),
                "asymmetric" (run 1 is not ~ -run 0), "decreasing" (run 1 < run 0),
                "exceeds" (|run 0 - exact| > bound, see "bound")
    verdict     null until run on hardware: which model the silicon refutes
    tool        solver, seconds, date; "step": the first elementary step that differs

Inputs are raw bit patterns (hex of the storage element), never floats.

Where: written to the store's counterexamples/ (``store_dir()``: mmaformal.paths), read from it and
from the shipped counterexamples/ (``read_all``).

May import: mmaformal.query.model (models, evaluation), .claims (the concrete checks), .store,
the layers below, numpy.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from pathlib import Path
from typing import Sequence

from .. import fp
from .claims import bound_concrete, value_lt
from .model import Model, Witness, approx_equal, evaluate, from_spec, hex_bits, neg_bits
from .. import paths

__all__ = ["store_dir", "write", "write_runs", "read_all", "replay_record", "stale"]


def store_dir() -> Path:
    """Where counterexamples are written: the store's counterexamples/ (mmaformal.paths)."""
    return paths.store("counterexamples")


def __getattr__(name: str):
    # ROOT, the module constant before the store existed (prefer store_dir())
    if name == "ROOT":
        return store_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def slug(s: str, limit: int = 80) -> str:
    """s as a file-name stem: runs of other characters than [A-Za-z0-9._-] become "_", at most
    `limit` characters."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_")[:limit]


def write_runs(kind: str, models: Sequence[Model], runs: list[tuple[Model, Witness, int]],
               claim: str, check: str, root: Path | None = None, **extra) -> Path:
    """Store runs [(model, witness, output bits)]: one counterexample."""
    m0 = models[0]
    i = m0.ins
    rec = {
        "kind": kind,
        "claim": claim,
        "formats": {"a": i.a, "b": i.b, "c": i.c, "d": i.d, "scale": i.scale or None},
        "models": [m.spec() for m in models],
        "runs": [{"model": m.label, "inputs": w.to_json(), "output": hex_bits(out, m.ins.d),
                  "hardware": None} for m, w, out in runs],
        "check": check,
        "verdict": None,
        "tool": {"date": _dt.date.today().isoformat(), **{k: v for k, v in extra.items() if v is not None}},
    }
    body = json.dumps(rec["runs"], sort_keys=True) + json.dumps(rec["models"], sort_keys=True)
    h = hashlib.sha256(body.encode()).hexdigest()[:10]
    d = (root or store_dir()) / kind
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{slug('--'.join(m.label for m in models))}-{h}.json"
    p.write_text(json.dumps(rec, indent=1, sort_keys=False) + "\n")
    return p


def write(kind: str, models: Sequence[Model], w: Witness, outputs: dict, claim: str,
          root: Path | None = None, **extra) -> Path:
    """A distinguishing input: one run per model on the same witness."""
    runs = [(m, w, outputs[m.label]) for m in models]
    return write_runs(kind, models, runs, claim, "differ", root, **extra)


KINDS = ("distinguish", "symmetry", "monotonic", "bound", "equiv", "unobservable")


def read_all(root: Path | None = None) -> list[tuple[Path, dict]]:
    """The records of this module's kinds (other tools keep their own folders here, e.g.
    counterexamples/hw/), from `root`, else from the store's counterexamples/ and then the
    shipped ones (a record of the same kind and name in the store replaces the shipped one).
    Reading does not replay them: callers replay (``replay_record``) before they rely on one."""
    out = []
    seen = set()
    for base in [root] if root else paths.record_dirs("counterexamples"):
        for k in KINDS:
            for p in sorted((base / k).glob("*.json")) if (base / k).exists() else []:
                if (k, p.name) in seen:
                    continue
                seen.add((k, p.name))
                rec = json.loads(p.read_text())
                if {"kind", "runs", "models", "check"} <= set(rec):
                    out.append((p, rec))
    return out


def _models(rec: dict) -> dict[str, Model]:
    return {s["label"]: from_spec(s) for s in rec["models"]}


def stale(rec: dict) -> list[str]:
    """Theories whose hash changed since the record was written."""
    from .. import theory as _theory
    out = []
    for s in rec["models"]:
        try:
            t = _theory.default().get(s["theory"])
        except ValueError:
            out.append(f"{s['theory']} (no longer exists)")
            continue
        if t.hash() != s["hash"]:
            out.append(s["theory"])
    return out


def replay_record(rec: dict, backends: Sequence[str] = ("int", "numpy", "compiled")) -> list[str]:
    """Replay every run on every back-end; return the problems (empty: the record holds)."""
    from ..bits import INT
    problems = []
    models = _models(rec)
    F = rec["formats"]
    outs = []
    for i, run in enumerate(rec["runs"]):
        m = models[run["model"]]
        w = Witness.from_json(run["inputs"], F["a"], F["b"], F["c"], F.get("scale") or "")
        want = int(run["output"], 16)
        for be in backends:
            try:
                got = evaluate(m, w, be)
            except OverflowError as e:
                problems.append(f"run {i} ({m.label}) overflows on {be}: {e}")
                continue
            except Exception as e:
                if be == "compiled":
                    continue          # no C compiler, or a width the C path refuses
                raise
            if got != want:
                problems.append(f"run {i} ({m.label}) on {be}: got {hex_bits(got, m.ins.d)}, "
                                f"stored {run['output']}")
        outs.append(want)
    d = F["d"]
    o = [INT.const(x, fp.fmt(d).storage, False) for x in outs]
    chk = rec["check"]
    if chk == "differ" and len(set(outs)) < 2:
        problems.append("the stored outputs do not differ")
    elif chk == "asymmetric" and bool(approx_equal(o[1], neg_bits(o[0], d), d).v):
        problems.append("run 1 is ~ -run 0: not an asymmetry")
    elif chk == "decreasing":
        if not value_lt(outs[1], outs[0], d):
            problems.append("run 1 is not smaller than run 0")
    elif chk == "exceeds":
        run = rec["runs"][0]
        m = models[run["model"]]
        w = Witness.from_json(run["inputs"], F["a"], F["b"], F["c"], F.get("scale") or "")
        _, err, bound = bound_concrete(m, w)
        if not err > bound:
            problems.append(f"the error {err} does not exceed the bound {bound}")
    return problems
