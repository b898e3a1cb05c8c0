"""Layer 5 front end, calibrate_fit: the search for the schedule of a call, and the profile.

The candidates (every catalog instruction of the architecture that takes the call's operand
formats, crossed with the schedule space of a profile rule: the K-block order, tf32 input
rounding, then the splits of K), the closed loop that keeps a candidate only while its output
is bit-identical to the native one on every input asked (``calibrate_case``), the profile
written from the survivors (``build_profile``, ``profile_toml``) and its check by re-running
every reproduced call under it (``verify``); the module docstring of mmaformal.calibrate
describes the whole.

May import: numpy, mmaformal.calibrate_calls, mmaformal.calibrate_native, mmaformal.profile,
mmaformal.isa, mmaformal.theory (lazily), and lazily torch and mmaformal.torch (which executes
every schedule: this module never computes a product itself).

Invariant: every candidate kept is bit-identical to the native output on every input asked;
every rule written names the calls and the inputs it was measured on.
"""
from __future__ import annotations

import dataclasses
import json
import time
from typing import Any, Callable, Sequence

import numpy as np

from . import isa
from . import profile as P
from .calibrate_calls import Case, flags
from .calibrate_native import (Native, bits_differing, op_fn, out_subset, probe_inputs,
                               random_inputs, subset)

__all__ = ["Candidate", "instructions", "candidates", "CaseResult", "calibrate_case",
           "calibrate", "build_profile", "profile_toml", "verify"]


# --------------------------------------------------------------------------------------------
# Candidates


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One schedule: a profile rule's instruction, order, pre-rounding and split."""

    instruction: str
    order: str = "increasing"
    pre_round: str = "none"
    split: tuple = ()                 # sorted (key, value) pairs of [rule.split], () unsplit
    stage: int = 0                    # 0: unsplit, 1: split of K
    rank: int = 0                     # order of simplicity inside the stage
    scale_order: str = "ab"           # scaled_mm epilogue: (s_a * s_b) * D or (D * s_a) * s_b

    def label(self) -> str:
        s = self.instruction.split("/", 1)[1]
        if self.order != "increasing":
            s += " decreasing"
        if self.pre_round != "none":
            s += f" {self.pre_round}"
        if self.split:
            s += " split(" + ", ".join(f"{k}={v}" for k, v in self.split) + ")"
        if self.scale_order != "ab":
            s += f" scales {self.scale_order}"
        return s

    def rule_dict(self, rid: str = "candidate") -> dict:
        ins = isa.lookup(self.instruction)
        fa = "f32" if ins.a == "tf32" else ins.a
        fb = "f32" if ins.b == "tf32" else ins.b
        d: dict[str, Any] = {"id": rid, "status": "hypothesis", "provenance": "calibration candidate",
                             "instruction": self.instruction, "match": {"a": fa, "b": fb}}
        if self.order != "increasing":
            d["order"] = self.order
        if self.pre_round != "none":
            d["pre_round"] = self.pre_round
        if self.split:
            d["split"] = dict(self.split)
        if self.scale_order != "ab":
            d["epilogue"] = {"scale_order": self.scale_order}
        return d

    def profile(self) -> P.Profile:
        d = self.rule_dict()
        d["default"] = True
        return P.parse({"profile": {"id": "candidate", "status": "hypothesis",
                                    "provenance": "calibration candidate"}, "rule": [d]},
                       "calibration candidate")


def instructions(c: Case, arch: str, only: Sequence[str] | None = None) -> list[isa.Instruction]:
    """Catalog instructions of the arch for the case's operands, one per (theory, k, formats)
    (only: fnmatch patterns the names must match)."""
    import fnmatch
    from . import theory as _theory
    want_a = [c.a] + (["tf32"] if c.a == "f32" and c.allow_tf32 else [])
    want_b = [c.b] + (["tf32"] if c.b == "f32" and c.allow_tf32 else [])
    T = _theory.default()
    out, seen = [], set()
    for ins in isa.instructions(arch):
        if ins.a not in want_a or ins.b not in want_b or (ins.a == "tf32") != (ins.b == "tf32"):
            continue
        if ins.sparse or ins.scale or ins.family == "wmma":
            continue
        if ins.c != ins.d and -(-c.k // ins.k) > 1:      # cannot carry its accumulator
            continue
        if only and not any(fnmatch.fnmatchcase(ins.name, p) or
                            fnmatch.fnmatchcase(ins.qualifier, p) for p in only):
            continue
        try:
            th = T.resolve(ins, None)
        except (KeyError, ValueError):
            continue
        if not th.evaluable[0]:
            continue
        key = (th.id, ins.k, ins.a, ins.b, ins.c, ins.d)
        if key in seen:
            continue
        seen.add(key)
        out.append(ins)
    # f32 accumulators first, larger k first: the usual library forms
    out.sort(key=lambda i: (i.d != "f32", -i.k, i.family != "mma", i.name))
    return out


def candidates(c: Case, arch: str, stage: int, only: Sequence[str] | None = None) -> list[Candidate]:
    """The candidates of one stage (0: unsplit; 1: splits of K), simplest first."""
    out: list[Candidate] = []
    inss = instructions(c, arch, only)
    sos = ("ab", "a-then-b") if c.op == "scaled_mm" else ("ab",)
    if stage == 0:
        for ins in inss:
            pres = ("tf32-rne", "none") if ins.a == "tf32" else ("none",)
            for order in ("increasing", "decreasing"):
                for pre in pres:
                    for so in sos:
                        out.append(Candidate(ins.name, order, pre, (), 0, len(out), so))
        return out
    for ins in inss:
        if ins.c != ins.d or ins.d not in ("f32", "f64") or ins.k < 4:
            continue
        k = ins.k
        nb = -(-c.k // k)
        if nb < 2:
            continue
        pres = ("tf32-rne",) if ins.a == "tf32" else ("none",)
        seen: set = set()
        splits: list[dict] = []
        units = sorted({u for u in (k, 32, 64, 128, 256) if u % k == 0})
        for u in units:
            for S in list(range(2, 17)) + [24, 32, 48, 64]:
                splits.append({"slices": S, "unit": u} if u != k else {"slices": S})
        for ch in sorted({*(x for x in (64, 128, 256, 512, 1024, 2048) if x % k == 0),
                          *(-(-c.k // (u * S)) * u for u in units for S in range(2, 17))}):
            if ch % k == 0 and ch < nb * k:
                splits.append({"chunk": ch})
        for sp in splits:
            s = P.Split(sp.get("slices"), sp.get("chunk"), unit=sp.get("unit"))
            parts = tuple(s.parts(nb, k))
            if len(parts) < 2 or parts in seen:
                continue
            seen.add(parts)
            forms = [("sequential", "acc")]
            if len(parts) > 2:
                forms.append(("pairwise", "acc"))
            if c.out != ins.d and c.op != "scaled_mm":
                forms.append(("sequential", "out"))
            for red, fmt in forms:
                d = dict(sp)
                if red != "sequential":
                    d["reduce"] = red
                if fmt != "acc":
                    d["reduce_format"] = fmt
                for pre in pres:
                    for so in sos:
                        out.append(Candidate(ins.name, "increasing", pre, tuple(sorted(d.items())),
                                             1, len(out), so))
    return out


# --------------------------------------------------------------------------------------------
# The loop


@dataclasses.dataclass
class CaseResult:
    case: Case
    kernels: list[str]
    inputs: list[str]                      # what was asked: "probe 0", "random 1", ...
    chosen: Candidate | None = None
    alternatives: list[Candidate] = dataclasses.field(default_factory=list)
    tried: int = 0
    best: tuple[str, int, int] | None = None   # (candidate, mismatching, compared) of the closest
    stopped: str = ""                          # why the search stopped early
    seconds: float = 0.0
    verified: bool | None = None

    def to_json(self) -> dict:
        return {"case": self.case.describe(), "call": dataclasses.asdict(self.case),
                "kernels": self.kernels, "inputs": self.inputs,
                "schedule": self.chosen.label() if self.chosen else None,
                "rule": self.chosen.rule_dict() if self.chosen else None,
                "indistinguishable": [a.label() for a in self.alternatives],
                "candidates_tried": self.tried,
                "closest": None if self.best is None or self.chosen else
                {"candidate": self.best[0], "differ": self.best[1], "compared": self.best[2]},
                "stopped": self.stopped or None, "seconds": round(self.seconds, 2),
                "verified": self.verified}


def _emulate(cand: Candidate, case: Case, fn, inputs: dict, device):
    import torch
    from . import torch as mt
    d = {k: (v.to(device) if v is not None else None) for k, v in inputs.items()}
    with torch.no_grad(), flags(case), mt.emulating(cand.profile(), strict=True):
        return fn(**d).cpu()


def calibrate_case(case: Case, native: Native, arch: str, *, trials: int = 3, probes: int = 2,
                   rows: int = 16, batches: int = 2, seed: int = 0, emulate_device="cpu",
                   seconds: float | None = None, log: Callable[[str], None] | None = None,
                   only: Sequence[str] | None = None) -> CaseResult:
    """The closed loop of one call (module docstring)."""
    import torch
    t0 = time.time()
    fn = op_fn(case)
    asked = [(f"probe {i}", probe_inputs(case, seed + i)) for i in range(probes)]
    asked += [(f"random {i}", random_inputs(case, seed + i)) for i in range(trials)]
    natives = []
    for _, inp in asked:
        natives.append(out_subset(native.run(case, fn, inp), rows, batches))
    subs = [subset(case, inp, rows, batches) for _, inp in asked]
    res = CaseResult(case, native.kernels(case, fn, asked[0][1]), [n for n, _ in asked])
    best = None
    for stage in (0, 1):
        alive = []
        for cand in candidates(case, arch, stage, only):
            if seconds is not None and time.time() - t0 > seconds:
                res.stopped = f"time limit of {seconds:g} s reached after {res.tried} candidates"
                break
            res.tried += 1
            ok = True
            for nat, sub in zip(natives, subs):
                try:
                    got = _emulate(cand, case, fn, sub, emulate_device)
                except (ValueError, RuntimeError) as e:        # a schedule that cannot run
                    if log:
                        log(f"  {cand.label()}: cannot run: {str(e).splitlines()[0][:160]}")
                    ok = False
                    break
                bad = bits_differing(torch, got, nat)
                if bad:
                    if best is None or bad < best[1]:
                        best = (cand.label(), bad, nat.numel())
                    ok = False
                    break
            if ok:
                alive.append(cand)
        if alive:
            res.chosen, res.alternatives = alive[0], alive[1:]
            break
        if res.stopped:
            break
    res.best = best
    res.seconds = time.time() - t0
    if log:
        what = res.chosen.label() if res.chosen else (
            f"no candidate (closest {best[0]}: {best[1]} of {best[2]} differ)" if best else
            "no candidate")
        log(f"{case.describe()}: {what} [{res.tried} tried, {res.seconds:.1f} s]"
            + (f" kernels {', '.join(res.kernels[:2])}" if res.kernels else ""))
    return res


def calibrate(cases: Sequence[Case], native: Native, arch: str, *, log=None, **kw) -> list[CaseResult]:
    return [calibrate_case(c, native, arch, log=log, **kw) for c in cases]


# --------------------------------------------------------------------------------------------
# The profile


def _fmt_key(g: tuple) -> str:
    a, b, out, tf, fast, scaling = g
    s = a if a == b else f"{a}-{b}"
    if tf:
        s = "tf32"
    if out != a:
        s += f"-to-{out}"
    if fast is not None:
        s += ("-fast" if fast else "") + (f"-{scaling}" if scaling != "tensor" else "")
    return s


def _match(case: Case, exact: bool, ops: Sequence[str]) -> dict:
    m: dict[str, Any] = {"op": sorted(set(ops)), "a": case.a, "b": case.b, "out": case.out}
    if case.a == "f32":
        m["allow_tf32"] = case.allow_tf32
    if case.fast_accum is not None:
        m["fast_accum"] = bool(case.fast_accum)
        m["scaling"] = case.scaling
    if exact:
        m.update({"m": case.m, "n": case.n, "k": case.k, "batch": case.batch,
                  "layout_a": "col" if case.trans_a else "row",
                  "layout_b": "col" if case.trans_b else "row"})
    return m


def build_profile(results: Sequence[CaseResult], arch: str, facts: dict, *, pid: str,
                  trials: int, probes: int, rows: int) -> tuple[dict, list[str]]:
    """(the profile as a TOML-shaped dict, the calls that no candidate reproduced)."""
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    from . import __version__
    where = (f"mmaformal calibrate {date} on {facts.get('gpu', '?')} ({arch}), torch "
             f"{facts.get('torch', '?')}, {facts.get('runtime', '?')}, mmaformal {__version__}, "
             f"numpy {np.__version__}")
    asked = f"{probes} probe input(s) and {trials} random input(s), first {rows} rows compared"
    groups: dict[tuple, list[CaseResult]] = {}
    for r in results:
        groups.setdefault(r.case.group(), []).append(r)
    specific, general, missing = [], [], []
    for g, rs in groups.items():
        ok = [r for r in rs if r.chosen]
        missing += [r.case.describe() for r in rs if not r.chosen]
        if not ok:
            continue
        score: dict[Candidate, int] = {}
        for r in ok:
            for cand in [r.chosen, *r.alternatives]:
                key = dataclasses.replace(cand, rank=0)
                score[key] = score.get(key, 0) + 1
        top = max(score.items(), key=lambda kv: (kv[1], -kv[0].stage,
                                                 -min((c.rank for r in ok for c in [r.chosen, *r.alternatives]
                                                       if dataclasses.replace(c, rank=0) == kv[0]),
                                                      default=0)))[0]
        covered = [r for r in ok if any(dataclasses.replace(c, rank=0) == top
                                        for c in [r.chosen, *r.alternatives])]
        key = _fmt_key(g)
        for r in ok:
            if r in covered:
                continue
            c = r.case
            d = r.chosen.rule_dict(f"{key}-{c.op}-{'%dx' % c.batch if c.batch > 1 else ''}"
                                   f"{c.m}x{c.n}x{c.k}-{'t' if c.trans_a else 'n'}"
                                   f"{'t' if c.trans_b else 'n'}")
            d["status"] = "confirmed"
            d["provenance"] = (f"Source: {where}: {c.describe()}: bit-identical on {asked}"
                               + _evidence(r))
            d["match"] = _match(c, True, [c.op])
            specific.append(d)
        d = top.rule_dict(key)
        d["status"] = "hypothesis"
        d["default"] = True
        d["provenance"] = (f"Source: {where}: bit-identical on {asked} for "
                           + "; ".join(r.case.describe() + _evidence(r) for r in covered)
                           + (f"; not these calls of the same formats (rules of their own or none): "
                              + "; ".join(r.case.describe() for r in rs if r not in covered)
                              if len(covered) < len(rs) else ""))
        d["match"] = _match(covered[0].case, False, [r.case.op for r in covered])
        general.append(d)
    seen_ids: set[str] = set()
    rules = []
    for d in specific + general:
        base, i = d["id"], 2
        while d["id"] in seen_ids:
            d["id"] = f"{base}-{i}"
            i += 1
        seen_ids.add(d["id"])
        rules.append(d)
    prov = (f"Source: {where}; {len(results)} GEMM call(s), {asked}; each rule's schedule "
            f"reproduced its calls bit for bit")
    if missing:
        prov += "; reproduced by no candidate (no rule): " + "; ".join(missing)
    prof = {"profile": {"id": pid, "description": f"GEMMs as calibrated on {facts.get('gpu', arch)}",
                        "platform": f"{facts.get('gpu', '?')} ({arch}), torch "
                                    f"{facts.get('torch', '?')}, {facts.get('runtime', '?')}",
                        "status": "hypothesis", "provenance": prov},
            "rule": rules}
    return prof, missing


def _evidence(r: CaseResult) -> str:
    s = ""
    if r.kernels:
        s += f" (kernels: {', '.join(r.kernels[:4])})"
    if r.alternatives:
        s += (f" [not separated from: {', '.join(a.label() for a in r.alternatives[:3])}"
              f"{', ...' if len(r.alternatives) > 3 else ''}]")
    return s


def _tv(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_tv(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_tv(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def profile_toml(prof: dict, header: str = "") -> str:
    """TOML text of a profile dict (the subset of TOML profiles use)."""
    lines = [f"# {h}" for h in header.splitlines()] if header else []
    lines.append("[profile]")
    lines += [f"{k} = {_tv(v)}" for k, v in prof["profile"].items()]
    for r in prof["rule"]:
        lines += ["", "[[rule]]"]
        lines += [f"{k} = {_tv(v)}" for k, v in r.items() if not isinstance(v, dict)]
        for sub in ("match", "split", "epilogue"):
            if sub in r and r[sub]:
                lines.append(f"[rule.{sub}]")
                lines += [f"{k} = {_tv(v)}" for k, v in r[sub].items()]
    return "\n".join(lines) + "\n"


def verify(profile: P.Profile, results: Sequence[CaseResult], native: Native, *, rows: int,
           batches: int, seed: int, emulate_device) -> None:
    """Re-run every reproduced call under emulating(profile, strict=True) on a fresh random
    input; sets CaseResult.verified. The whole call is emulated (not the first `rows` rows, as
    in the search): the profile's shape-specific rules match the call's own M, N, K, so a row
    subset would fall to another rule. All of its output is compared."""
    import torch
    from . import torch as mt
    for r in results:
        if not r.chosen:
            continue
        c = r.case
        fn = op_fn(c)
        inp = random_inputs(c, seed + 97)
        nat = native.run(c, fn, inp)
        d = {k: (v.to(emulate_device) if v is not None else None) for k, v in inp.items()}
        with torch.no_grad(), flags(c), mt.emulating(profile, strict=True):
            got = fn(**d).cpu()
        r.verified = bits_differing(torch, got, nat) == 0
