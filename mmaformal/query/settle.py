"""Layer 5, query/settle: the probe set that settles one open parameter of an instruction on a
GPU that this project has not run, and the verdict read back from that GPU's outputs.

    mmaformal probes INSTR --settle PARAM --out DIR             # probe tiles + manifest
    (run every DIR/<feature>/A.npy, B.npy, C.npy on the GPU; save its D as DIR/<feature>/D.npy)
    mmaformal probes INSTR --settle PARAM --out DIR --verdict   # which candidate values survive

PARAM is one of `PARAMS` (`--settle list` lists the open parameters of the instruction's
theories with their candidate values). The candidates of a parameter are the value of the
primary theory, the values of the rival theories that cover the instruction (theories/), and
the values the evidence review names (docs/probing.md): mmasim 2.1.1's per-architecture zero
exponents and their neighbours, "excluded" and "field"; the NaN rules seen on the H200; the tf32
readings; the two readings of the TR/GTR-FDPA tail (mma.TR_TAILS). A parameter that a theory
leaves out at its default (theory.OPTIONAL_PARAMS, e.g. `tail`) is open with that value. Each
candidate is the primary theory with that one parameter changed (a theory rival that differs
in more than that parameter is a candidate under its own id). The probes are those of
query/probes ([Xie2025] sec. 3.1) for the features that observe the parameter, plus
tf32-container probes for `tf32_round` and tail probes for `tail` (`_tail_rows`: ties of the
RNE-FP32 output that the two tails resolve differently); the manifest records every
candidate's prediction for every probe, and which candidates each probe separates. The verdict
compares the GPU's bits with the predictions and lists the candidates that agree with all of
them.

The `mmaformal probes` verb's entry point (adds --settle/--verdict to query/probes' parser).

May import: numpy, fp, mma (TR_TAILS), isa, theory, query.frame/model/pool, query.probes.
Invariant: a candidate survives the verdict only if it predicts every probe output bit for bit.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from .. import fp, isa, mma
from . import probes as _probes
from .frame import EXIT_BAD, EXIT_OK, BadInput
from .model import hex_bits, mutate, resolve
from .pool import evaluate

__all__ = ["PARAMS", "candidates", "open_parameters", "write", "verdict", "run"]

# parameter -> the probe features that observe it (query/probes.FEATURES, plus "tf32")
PARAMS = {
    "zero_exp": ("zero_exp", "subnormal", "zero_sign"),
    "nan": ("specials",),
    "overflow": ("out_of_range",),
    "zero_sign": ("zero_sign",),
    "F": ("precision",),
    "rho": ("output_rounding",),
    "mode": ("output_rounding", "specials"),
    "align_round": ("alignment",),
    "tf32_round": ("tf32",),
    "L": ("order",),
    "tail": ("tail",),
}

# mmasim 2.1.1 nv_ptx/sim.py (_mma_e_zero_for_fp32 / _fp16) and the GST/ST values: the zero
# exponents any NVIDIA generation is believed to use
_E_ZERO = (-131, -132, -133, -139, -19, -20, -21)


def _values(param: str, th, ins) -> list:
    """Candidate values named by the evidence review (besides theory rivals)."""
    p = th.param_dict
    v = p.get(param)
    if param == "zero_exp":
        out = ["excluded", "field"] + [e for e in _E_ZERO if (e > -100) == (ins.d == "f16")]
        if isinstance(v, int) and not isinstance(v, bool):
            out += [v - 2, v - 1, v + 1, v + 2]
        return out
    if param == "nan":
        w = fp.fmt(ins.d).storage
        canon = {16: [0x7FFF, 0x7E00], 32: [0x7FFFFFFF, 0x7FC00000], 64: [0x7FFFFFFFFFFFFFFF, 0x7FF8000000000000]}[w]
        out = list(canon)
        if th.model == "fma" or th.op in ("e_fdpa",) or th.model == "ftz_addmul":
            default = {16: 0xFE00, 32: 0xFFC00000, 64: 0xFFF8000000000000}[w]
            out += ["default", "propagate", f"propagate-bca:{default:#x}", f"propagate-abc:{default:#x}"]
        return out
    if param == "overflow":
        return ["ieee", "inf", "saturate"]
    if param == "zero_sign":
        return ["ieee", "positive"]
    if param == "F":
        return [v + d for d in (-3, -2, -1, 1, 2, 3)] if isinstance(v, int) else []
    if param == "rho":
        return ["RZ-FP32", "RNE-FP32", "RZ-E8M13", "RNE-FP16"]
    if param == "mode":
        return ["RNE", "RZ"]
    if param == "align_round":
        return ["RD", "RZ"]
    if param == "tf32_round":
        return ["RZ", "RNE", "RNA"]
    if param == "L":
        return [l for l in (1, 2, 4, 8, 16, 32, 64) if l <= ins.k]
    if param == "tail":
        return list(mma.TR_TAILS)
    return []


def candidates(spec: str, param: str, instr: str | None = None) -> list:
    """The candidate models for `param` of the instruction: [(label, value, Model)], the primary
    first. BadInput if the parameter is not one the instruction's theory has."""
    from .. import theory as _theory
    base = resolve(spec, instr)
    ins, th = base.ins, base.theory
    if param not in PARAMS:
        raise BadInput(f"--settle {param}: not a parameter this command settles; one of "
                       + ", ".join(PARAMS) + " (or 'list')")
    cur = th.L if param == "L" else th.param(param)
    if cur is None:
        raise BadInput(f"--settle {param}: theory {th.id} of {ins.name} has no parameter {param!r}"
                       f" (its parameters: {', '.join(k for k, _ in th.params)})")
    out = [(base.label, cur, base)]
    seen = {_key(cur)}
    for t in _theory.default().theories_for(ins):
        if t.id == th.id:
            continue
        m = resolve(f"{t.id}@{ins.name}")
        v = t.L if param == "L" else t.param(param)
        out.append((m.label, v, m))
        if _same_but(t, th, param):
            seen.add(_key(v))
    for v in _values(param, th, ins):
        if _key(v) in seen:
            continue
        try:
            m = mutate(base, {param: v})
            m.theory.instr  # noqa: B018  (bound: fits the instruction)
        except (ValueError, TypeError, BadInput):
            continue
        seen.add(_key(v))
        out.append((m.label, v, m))
    return out


def _key(v):
    return (type(v).__name__, v)


def _same_but(t, th, param) -> bool:
    """t equals th except in `param` (then its value is not offered again as a mutant)."""
    a = dict(t.content(), id=None, instructions=None)
    b = dict(th.content(), id=None, instructions=None)
    pa, pb = dict(a.pop("params")), dict(b.pop("params"))
    if param == "L":
        a.pop("L"), b.pop("L")
    else:
        pa.pop(param, None), pb.pop(param, None)
    return a == b and pa == pb


def open_parameters(instr: str) -> list[dict]:
    """Per parameter of the instruction's primary theory: its value, status (the theory's), the
    candidates, and the features that settle it."""
    from .. import theory as _theory
    base = resolve(instr)
    th = base.theory
    rows = []
    names = [k for k, _ in th.params] + (["L"] if th.L is not None else [])
    names += [k for k in _theory.OPTIONAL_PARAMS if k not in names and th.param(k) is not None]
    for p in names:
        if p not in PARAMS:
            continue
        if p == "tf32_round" and "tf32" not in (base.ins.a, base.ins.b):
            continue
        cs = candidates(instr, p)
        rows.append({"param": p, "value": cs[0][1], "status": th.status,
                     "candidates": list(dict.fromkeys(str(v) for _, v, _ in cs)),
                     "features": list(PARAMS[p])})
    return rows


def _tf32_rows(ins) -> list:
    """tf32 containers with low bits set: truncation (RZ) and rounding (RNE, RNA) read them
    differently (a * 1 + 0, and with c = -1 to expose the low bits)."""
    if "tf32" not in (ins.a, ins.b):
        return []
    one = 0x3F800000
    rows = []
    for low in (0x1000, 0x1001, 0x0FFF, 0x1FFF, 0x0001, 0x3000):
        for hi in (0x3F800000, 0x3FA00000, 0xBF800000):
            x = hi | low
            rows.append((f"a0 = {x:#010x} (tf32 container, low 13 bits {low:#06x}), b0 = 1, c = 0",
                         [x], [one], 0))
            rows.append((f"a0 = {x:#010x}, b0 = 1, c = -1", [x], [one], 0xBF800000))
    K = ins.k
    return [(d, a + [0] * (K - 1), b + [0] * (K - 1), c) for d, a, b, c in rows]


#: Tail probes, as (description, c, products) in values relative to a scale 2^s: each is a tie
#: (or a value next to one) of the RNE-FP32 output that [Xie2025]'s tail (T' = RD at 2^(E-F2),
#: then RNE) and mmasim 2.1.1's (T' = RD at 2^(E-F2-1), S rounded down to F2 = 31 fraction
#: bits of its normalised significand, then RNE) resolve differently. Source: the carry and
#: cancellation probes of docs/mmasim-notes.md (sec. 4, item 5); the others are built the same
#: way (a carry into the next binade whose rounding down lands on a tie; a bit below 2^(E-31)
#: that only the extra bit keeps).
_TAIL_RECIPES = (
    ("carry", 2 - 2.0 ** -23, (2.0 ** -22, 2.0 ** -31)),
    ("cancellation", 1.0, (-3 * 2.0 ** -25, 2.0 ** -32)),
    ("negative carry", -(2 - 2.0 ** -23), (-(2.0 ** -21), 2.0 ** -31)),
    ("cancellation below 2", 2.0, (-3 * 2.0 ** -24, 2.0 ** -31)),
)
#: Results below 2^-126 with c = +0: mmasim's renormalisation rounds down at 2^-157 (e' = -126),
#: so 5 2^-150 + 2^-160 gives the tie 2.5 2^-149 (to even: 2^-148) where the exact sum rounds up.
_TAIL_TINY = (
    ("tiny positive, c = +0", 0.0, (5 * 2.0 ** -150, 2.0 ** -160)),
    ("tiny negative, c = +0", 0.0, (-3 * 2.0 ** -150, 2.0 ** -160)),
)
_TAIL_SCALES = (0, 20, -20, 40, -40, 60, -60, 90, -90, 8, -8)


def _tail_rows(bd) -> None:
    """The `tail` probes of bd's instruction (TR/GTR-FDPA), into bd.rows["tail"]: each recipe
    of _TAIL_RECIPES scaled by 2^s for the scales where its products and c are exact in the
    formats (at most 6 per recipe), and both _TAIL_TINY rows where bf16/tf32 reach them."""
    bd.rows["tail"] = []
    for name, c, prods in _TAIL_RECIPES:
        n = 0
        for s in _TAIL_SCALES:
            k = 2.0 ** s
            if n < 6 and bd.add("tail", f"{name}: c = {c!r} * 2^{s}, products "
                                f"{', '.join(repr(p) for p in prods)} * 2^{s}",
                                [p * k for p in prods], c * k):
                n += 1
    for name, c, prods in _TAIL_TINY:
        bd.add("tail", f"{name}, products {', '.join(repr(p) for p in prods)}", list(prods), c)


def write(spec: str, param: str, out: str | Path, instr: str | None = None) -> dict:
    """Write the probe tiles of the features that observe `param` and the manifest."""
    cs = candidates(spec, param, instr)
    base = cs[0][2]
    ins = base.ins
    if ins.scale:
        raise BadInput(f"{ins.name} is block-scaled: the probe builder covers unscaled instructions")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    bd = _probes.build_probes(ins)
    bd.rows["tf32"] = _tf32_rows(ins)
    _tail_rows(bd)
    man = {"instruction": ins.name, "theory": base.theory.id, "settle": param,
           "candidates": {lab: str(v) for lab, v, _ in cs}, "features": {}, "probes": [],
           "layout": "probe t is the dot product in row 0 / column 0 of tile t of <feature>/A.npy, "
                     "B.npy, C.npy (other elements +0); write the GPU's D (the same (T, M, N) shape, "
                     "raw bits) to <feature>/D.npy, then run with --verdict",
           "source": "[Xie2025] sec. 3.1 probes (mmaformal.query.probes); candidates: docs/probing.md"}
    for feature in PARAMS[param]:
        rows = bd.rows.get(feature) or []
        if not rows:
            man["features"][feature] = {"probes": 0, "note": "no exact probe exists in these formats"}
            continue
        batch = _probes.probe_batch(ins, rows, feature)
        A, B, C, _, _ = batch.tiles(ins)
        d = out / feature
        d.mkdir(exist_ok=True)
        for nm, arr in (("A", A), ("B", B), ("C", C)):
            np.save(d / f"{nm}.npy", arr)
        preds = {}
        for lab, _, m in cs:
            try:
                preds[lab] = evaluate(m, batch)
            except (ValueError, OverflowError, TypeError):
                preds[lab] = None
        labs = [lab for lab, _, _ in cs if preds[lab] is not None]
        sep = 0
        for t in range(len(batch)):
            outs = {lab: int(preds[lab][t]) for lab in labs}
            if len(set(outs.values())) > 1:
                sep += 1
            man["probes"].append({"id": f"{feature}/{t}", "feature": feature, "tile": t,
                                  "description": rows[t][0],
                                  "predictions": {lab: hex_bits(v, ins.d) for lab, v in outs.items()}})
        man["features"][feature] = {"probes": len(batch), "separating": sep}
    (out / "manifest.json").write_text(json.dumps(man, indent=1) + "\n")
    return man


def verdict(out: str | Path) -> dict:
    """Compare DIR/<feature>/D.npy with the manifest's predictions: the candidates that agree
    with every probe, and for each other candidate the number of probes it gets wrong."""
    out = Path(out)
    try:
        man = json.loads((out / "manifest.json").read_text())
    except (OSError, ValueError) as e:
        raise BadInput(f"{out}/manifest.json: {e}") from None
    ins = isa.lookup(man["instruction"])
    fd = fp.fmt(ins.d)
    Ds, missing = {}, []
    for feature, info in man["features"].items():
        if not info.get("probes"):
            continue
        p = out / feature / "D.npy"
        if not p.exists():
            missing.append(str(p))
            continue
        D = np.load(p, allow_pickle=False)
        want = (info["probes"], ins.m, ins.n)
        if D.shape != want or D.dtype.kind != "u" or D.dtype.itemsize * 8 != fd.storage:
            raise BadInput(f"{p}: expected uint{fd.storage} of shape {want}, got {D.dtype} {D.shape}")
        Ds[feature] = D
    if missing:
        raise BadInput("no GPU output yet: " + ", ".join(missing))
    wrong = {lab: 0 for lab in man["candidates"]}
    for pr in man["probes"]:
        got = int(Ds[pr["feature"]][pr["tile"], 0, 0])
        for lab, h in pr["predictions"].items():
            if int(h, 16) != got:
                wrong[lab] += 1
    ok = [lab for lab, n in wrong.items() if n == 0]
    return {"instruction": man["instruction"], "settle": man["settle"],
            "probes": len(man["probes"]), "consistent": ok,
            "values": sorted({man["candidates"][lab] for lab in ok}),
            "refuted": {lab: n for lab, n in wrong.items() if n}}


def add_parser(subparsers):
    """`mmaformal probes` (mmaformal.query.probes) with --settle PARAM and --verdict added."""
    q = _probes.add_parser(subparsers)
    q.add_argument("--settle", metavar="PARAM",
                   help="only the probes that settle one parameter (zero_exp, nan, overflow, "
                        "zero_sign, F, rho, mode, align_round, tf32_round, L, tail), with its candidate "
                        "values; 'list' lists the instruction's open parameters (query/settle)")
    q.add_argument("--verdict", action="store_true",
                   help="with --settle: read DIR/<feature>/D.npy (the GPU's outputs) and say "
                        "which candidates agree with every probe")
    q.set_defaults(func=run)
    return q


def run(args) -> int:
    """`mmaformal probes`: the --settle branch here, everything else in query/probes."""
    settle = getattr(args, "settle", None)
    if not settle:
        if getattr(args, "verdict", False):
            print("mmaformal probes: --verdict needs --settle PARAM", file=sys.stderr)
            return EXIT_BAD
        return _probes.run(args)
    if settle != "list" and not args.out:
        print("mmaformal probes: --settle needs --out DIR", file=sys.stderr)
        return EXIT_BAD
    try:
        if args.settle == "list":
            rows = open_parameters(args.target if not args.instr else args.instr)
            if args.json:
                print(json.dumps(rows, indent=1))
            else:
                for r in rows:
                    print(f"{r['param']:<11} = {r['value']!s:<14} ({r['status']}); candidates: "
                          f"{', '.join(r['candidates'])}; features: {', '.join(r['features'])}")
            return EXIT_OK
        if args.verdict:
            v = verdict(args.out)
            if args.json:
                print(json.dumps(v, indent=1))
            else:
                print(f"{v['instruction']}: {v['settle']} over {v['probes']} probes: "
                      f"consistent with {', '.join(v['values']) or 'no candidate'} "
                      f"({', '.join(v['consistent']) or '-'})")
                for lab, n in v["refuted"].items():
                    print(f"  refuted: {lab} ({n} probe(s) differ)")
            return EXIT_OK
        man = write(args.target, args.settle, args.out, args.instr)
    except BadInput as e:
        print(f"mmaformal probes: {e}", file=sys.stderr)
        return EXIT_BAD
    if args.json:
        print(json.dumps({k: man[k] for k in ("instruction", "theory", "settle", "candidates", "features")}, indent=1))
    else:
        print(f"{man['instruction']}: {len(man['probes'])} probes settling {man['settle']} in {args.out} "
              f"({len(man['candidates'])} candidates: {', '.join(man['candidates'].values())})")
        for f, info in man["features"].items():
            print(f"  {f:<16} {info['probes']:>4} probes" + (f", {info['separating']} separate candidates"
                                                           if info.get("probes") else f"  {info.get('note', '')}"))
    return EXIT_OK
