"""Layer 5, query/ieee: the claim "mmaformal's IEEE add/mul/fma equal the SMT-LIB
floating-point theory", for a format and rounding mode, as a solver query.

The query asserts that the two results differ (as SMT-LIB FP values: `=` on FloatingPoint is
identity, so +0 and -0 differ and all NaNs are equal — NaN payloads are outside the FP theory
and are compared elsewhere). UNSAT proves equality for every input. The broken twin computes
mmaformal's side with another rounding mode; the same query must then be SAT.

    mmaformal prove ieee [--ops add,mul,fma] [--formats f16,bf16] [--modes RNE,...]
                         [--solver bitwuzla] [--timeout S] [--save] [--missing]
                         [--split [--jobs N | --ray ADDR] [--verbose]]

(a claim of `mmaformal prove`: its options are defined here, in `add_parser`, and prove's
parser takes them in; exit 0 when every claim is proved with its twin refuted, else 1)

`--split` proves a claim by cases (for f16 fma, where one monolithic query ran out of time:
bitwuzla said unknown after 540 s on each of the five modes): x0 and x1 are written as
concat(sign, exponent field, trailing significand), a bijection, and each of the 2^(2w) cases
fixes both exponent fields to constants (`define-fun`), so the solver's rewriter folds the
hidden bits and the two multipliers become one term. The cases cover every input by
construction; every case must be UNSAT. A pair with a subnormal operand (exponent field 0) is
refined by the position of that significand's leading one (`refine`), which makes the
normalization shift a constant as well. Per-case verdicts are kept in
proofs/ieee/split/NAME.progress.json, so an interrupted run resumes.

May import: mmaformal.bits, mmaformal.fp, mmaformal.query.solvers/campaign/store, z3.
"""
from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import time
from pathlib import Path

from .. import fp
from ..args import seconds
from ..bits import Z3Backend
from .campaign import Job
from .campaign import run as run_campaign
from .solvers import SOLVERS, Result, solve, solve_smt2, solver_version, to_smt2
from .store import proofs_dir, read_proofs, sha256, write_proof

__all__ = ["query", "prove", "TWIN_MODE", "depends", "template", "case_query", "prove_split",
           "add_parser", "run"]

OPS = ("add", "mul", "fma")
MODES = ("RNE", "RNA", "RZ", "RU", "RD")
#: The mutation of the broken twin: the same claim with mmaformal rounding in another mode.
TWIN_MODE = {"RNE": "RZ", "RNA": "RNE", "RZ": "RNE", "RU": "RD", "RD": "RU"}


def _build(op: str, fname: str, mode: str, mine_mode: str | None, split: bool) -> str:
    import z3
    if op not in OPS:
        raise ValueError(f"unknown operation {op!r}; expected one of {', '.join(OPS)}")
    f = fp.fmt(fname)
    K = Z3Backend()
    n = 3 if op == "fma" else 2
    xs = [K.var(f"x{i}", f.storage) for i in range(n)]
    if split:   # x0, x1 as (sign, exponent field, trailing significand): a bijection
        xs[:2] = [K.lift(z3.Concat(z3.BitVec(f"s{i}", 1), z3.BitVec(f"e{i}", f.w),
                                   z3.BitVec(f"m{i}", f.t)), f.storage) for i in range(2)]
    mine = getattr(fp, op)(f, *xs, mode=mine_mode or mode).v
    S = z3.FPSort(f.w, f.p)
    rm = {"RNE": z3.RNE(), "RNA": z3.RNA(), "RZ": z3.RTZ(), "RU": z3.RTP(), "RD": z3.RTN()}[mode]
    fx = [z3.fpBVToFP(x.v, S) for x in xs]
    ref = {"add": z3.fpAdd, "mul": z3.fpMul, "fma": z3.fpFMA}[op](rm, *fx)
    return to_smt2([z3.Not(ref == z3.fpBVToFP(mine, S))])


def query(op: str, fname: str, mode: str, mine_mode: str | None = None) -> str:
    """SMT-LIB2 text asserting that fp.<op> (rounding with mine_mode, default mode) differs
    from the SMT-LIB FP theory's <op> rounding with mode."""
    return _build(op, fname, mode, mine_mode, split=False)


def template(op: str, fname: str, mode: str, mine_mode: str | None = None) -> str:
    """The same claim over (s0, e0, m0, s1, e1, m1, x2...): x0 and x1 split into their fields."""
    return _build(op, fname, mode, mine_mode, split=True)


def case_query(tmpl: str, fname: str, e0: int, e1: int, lead0=None, lead1=None) -> str:
    """The template with both exponent fields fixed (declare-fun -> define-fun). For a zero
    exponent field, lead_i refines further: "z" (trailing significand 0) or j (its leading one
    at bit j: m_i = concat(0...0, 1, r_i) with r_i free of j bits), so that the shift that
    normalizes a subnormal operand is a constant too; None leaves m_i free."""
    f = fp.fmt(fname)
    out = tmpl

    def define(name, width, body):
        nonlocal out
        decl = f"(declare-fun {name} () (_ BitVec {width}))"
        if out.count(decl) != 1:
            raise ValueError(f"template has no single declaration of {name}")
        out = out.replace(decl, body)
    for i, (e, lead) in enumerate(((e0, lead0), (e1, lead1))):
        define(f"e{i}", f.w, f"(define-fun e{i} () (_ BitVec {f.w}) (_ bv{e} {f.w}))")
        if lead is None:
            continue
        if e != 0:
            raise ValueError("only a zero exponent field is refined")
        if lead == "z":
            define(f"m{i}", f.t, f"(define-fun m{i} () (_ BitVec {f.t}) (_ bv0 {f.t}))")
        elif 0 <= lead < f.t:
            top = f"(_ bv1 {f.t - lead})"        # zeros, then the leading one
            body = top if lead == 0 else f"(concat {top} r{i})"
            decl_r = f"(declare-fun r{i} () (_ BitVec {lead}))" if lead else ""
            define(f"m{i}", f.t, f"{decl_r}(define-fun m{i} () (_ BitVec {f.t}) {body})")
        else:
            raise ValueError(f"lead {lead!r} out of range")
    return out


def cases(fname: str) -> list[tuple[int, int]]:
    """Every pair of exponent fields: together they cover every input."""
    n = 1 << fp.fmt(fname).w
    return [(e0, e1) for e0 in range(n) for e1 in range(n)]


def refine(fname: str, e0: int, e1: int) -> list[tuple]:
    """The sub-cases of a pair: each zero exponent field split by the position of the leading
    one of its trailing significand (or none): together they cover the pair."""
    leads = ["z"] + list(range(fp.fmt(fname).t))
    l0 = leads if e0 == 0 else [None]
    l1 = leads if e1 == 0 else [None]
    return [(e0, e1, a, b) for a in l0 for b in l1]   # case_query / case_key argument order


def case_key(e0: int, e1: int, lead0=None, lead1=None) -> str:
    return f"{e0}{'' if lead0 is None else '.' + str(lead0)},{e1}{'' if lead1 is None else '.' + str(lead1)}"


def _pair_status(prog: dict, fname: str, e0: int, e1: int) -> str | None:
    """unsat if the pair is proved whole or by all of its sub-cases; sat if any is sat."""
    whole = prog.get(case_key(e0, e1), {}).get("status")
    subs = [prog.get(case_key(*c), {}).get("status") for c in refine(fname, e0, e1)]
    if whole == "sat" or "sat" in subs:
        return "sat"
    if whole == "unsat" or (len(subs) > 1 and all(x == "unsat" for x in subs)):
        return "unsat"
    return None


def depends() -> dict[str, str]:
    """Hashes of the definitions these claims depend on (the bits and fp layers' source)."""
    from .. import bits
    return {m.__name__: hashlib.sha256(inspect.getsource(m).encode()).hexdigest()[:16] for m in (bits, fp)}


def claim_text(op: str, fname: str, mode: str) -> str:
    return (f"for all {fname} inputs, mmaformal.fp.{op}(mode={mode}) equals SMT-LIB fp.{op} "
            f"with {mode} (as FloatingPoint values: NaN payloads excluded, signed zeros included)")


def prove(op: str, fname: str, mode: str, solver: str = "bitwuzla", timeout: float | None = 600,
          save: bool = False) -> tuple[Result, Result | None]:
    q = query(op, fname, mode)
    r = solve(q, solver, timeout)
    twin = None
    if r.status == "unsat":
        tq = query(op, fname, mode, mine_mode=TWIN_MODE[mode])
        twin = solve(tq, solver, timeout)
        if save:
            write_proof("ieee", f"{op}-{fname}-{mode}", claim_text(op, fname, mode), q, r,
                        f"the same with mmaformal rounding {TWIN_MODE[mode]} instead", twin, depends())
    return r, twin


def prove_split(op: str, fname: str, mode: str, solver: str = "bitwuzla",
                timeout: float | None = 600, save: bool = False, jobs: int = 0,
                log=None, ray: str | None = None) -> tuple[Result, Result | None]:
    """Prove the claim case by case (`cases`), each case a job of the campaign runner (a
    local pool of `jobs` processes, or Ray); resumable through the progress file. The result
    is UNSAT only when every case is; a SAT case is a counterexample to the claim."""
    name = f"{op}-{fname}-{mode}"
    tmpl = template(op, fname, mode)
    tsha = sha256(tmpl)
    prog_path = proofs_dir() / "ieee" / "split" / f"{name}.progress.json"
    prog = {}
    if prog_path.exists():
        old = json.loads(prog_path.read_text())
        if old.get("template_sha256") == tsha and old.get("solver") == solver:
            prog = old["cases"]
    todo = []
    for e0, e1 in cases(fname):
        if _pair_status(prog, fname, e0, e1) == "unsat":
            continue
        for c in refine(fname, e0, e1):
            if prog.get(case_key(*c), {}).get("status") != "unsat":
                todo.append((case_query(tmpl, fname, *c), solver, timeout, case_key(*c)))
    t0 = time.perf_counter()

    def flush():
        prog_path.parent.mkdir(parents=True, exist_ok=True)
        prog_path.write_text(json.dumps({"claim": claim_text(op, fname, mode),
                                         "template_sha256": tsha, "solver": solver,
                                         "solver_version": solver_version(solver),
                                         "cases": dict(sorted(prog.items()))}, indent=0) + "\n")
    count = [0]

    def done(job, r):                    # in the driver, as each case finishes
        count[0] += 1
        prog[job.id] = {"status": r["status"], "seconds": r.get("seconds", 0.0)}
        if log:
            log(f"{name} case {job.id}: {r['status']} {r.get('seconds', 0.0):.1f}s "
                f"({count[0]}/{len(todo)})")
        if count[0] % 16 == 0 or r["status"] != "unsat":
            flush()
    cjobs = [Job(key, "mmaformal.query.campaign:solve_job",
                 {"text": text, "solver": s_, "timeout": t_},
                 None if t_ is None else t_ + 60) for text, s_, t_, key in todo]
    try:
        run_campaign(cjobs, workers=jobs or None, ray=ray, on_result=done)
    finally:
        flush()
    statuses = [_pair_status(prog, fname, e0, e1) for e0, e1 in cases(fname)]
    total = sum(v["seconds"] for v in prog.values())
    status = "unsat" if all(x == "unsat" for x in statuses) else \
        "sat" if "sat" in statuses else "unknown"
    r = Result(status, solver, solver_version(solver), total,
               reason="" if status != "unknown" else f"{statuses.count('unsat')} of "
               f"{len(statuses)} cases proved after {time.perf_counter() - t0:.0f} s")
    twin = None
    if status == "unsat":
        twin = solve(query(op, fname, mode, mine_mode=TWIN_MODE[mode]), solver, timeout)
        if save:
            hard = max(((k, v) for k, v in prog.items() if v["status"] == "unsat"),
                       key=lambda kv: kv[1]["seconds"])
            d = proofs_dir() / "ieee"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{name}.template.smt2").write_text(tmpl)
            write_proof("ieee", name, claim_text(op, fname, mode), query(op, fname, mode), r,
                        f"the same with mmaformal rounding {TWIN_MODE[mode]} instead", twin,
                        depends(), root=proofs_dir(), extra={"split": {
                            "method": "x0, x1 = concat(sign, exponent field, trailing "
                                      "significand); one case per pair of exponent fields, "
                                      "fixed by define-fun in the template (ieee.case_query)",
                            "cases": len(statuses), "queries": len(prog),
                            "template": f"{name}.template.smt2",
                            "template_sha256": tsha, "progress": f"split/{name}.progress.json",
                            "max_case_seconds": hard[1]["seconds"], "hardest_case": hard[0]}})
    return r, twin


def _names(allowed, what: str):
    """An argparse type: a comma-separated list of names, each one of `allowed` (None: checked
    by fp.fmt), or a one-line usage error."""
    def parse(text: str) -> list[str]:
        names = [x.strip() for x in text.split(",")]
        for x in names:
            if allowed is None:
                try:
                    fp.fmt(x)
                except ValueError as e:
                    raise argparse.ArgumentTypeError(str(e)) from None
            elif x not in allowed:
                raise argparse.ArgumentTypeError(f"unknown {what} {x!r}; expected a comma-separated "
                                                 f"list of {', '.join(allowed)}")
        return names
    return parse


def add_parser(subparsers) -> argparse.ArgumentParser:
    """`mmaformal prove ieee`: `subparsers` is the claim list of `mmaformal prove`."""
    p = subparsers.add_parser("ieee", help="fp.add/mul/fma equal the SMT-LIB floating-point theory",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", type=_names(OPS, "operation"), default=list(OPS),
                   help="comma-separated (default: add,mul,fma)")
    p.add_argument("--formats", type=_names(None, "format"), default=["f16", "bf16"],
                   help="comma-separated (default: f16,bf16)")
    p.add_argument("--modes", type=_names(MODES, "rounding mode"), default=list(MODES),
                   help="comma-separated (default: RNE,RNA,RZ,RU,RD)")
    p.add_argument("--solver", default="bitwuzla", choices=list(SOLVERS))
    p.add_argument("--timeout", type=seconds, default=600, metavar="S",
                   help="seconds per solver call (per case with --split)")
    p.add_argument("--save", action="store_true", help="store the proofs in proofs/ieee/")
    p.add_argument("--missing", action="store_true", help="only claims without a current stored proof")
    p.add_argument("--split", action="store_true", help="prove by cases on the exponent fields of x0, x1")
    p.add_argument("--jobs", type=int, default=0, metavar="N",
                   help="parallel cases with --split (default 0: all cores)")
    p.add_argument("--ray", metavar="auto|local|ADDRESS", help="run the cases on a Ray cluster")
    p.add_argument("--verbose", action="store_true", help="print every case with --split")
    return p


def run(a) -> int:
    """Prove every (format, op, mode) claim asked; 0 when each is proved with its twin refuted."""
    if a.jobs < 0:
        raise ValueError(f"prove ieee: --jobs {a.jobs}: give 0 (all cores) or a number of processes")
    have = {Path(path).stem: rec for path, rec in read_proofs("ieee")} if a.missing else {}
    ok = True
    for fname in a.formats:
        for op in a.ops:
            for mode in a.modes:
                name = f"{op}-{fname}-{mode}"
                if name in have and have[name]["query_sha256"] == sha256(query(op, fname, mode)):
                    continue
                if a.split:
                    log = (lambda m: print(m, flush=True)) if a.verbose else None
                    r, twin = prove_split(op, fname, mode, a.solver, a.timeout, a.save, a.jobs, log,
                                         a.ray)
                else:
                    r, twin = prove(op, fname, mode, a.solver, a.timeout, a.save)
                tw = f"twin {twin.status} {twin.seconds:.1f}s" if twin else ""
                print(f"{name:16s} {r.status:8s} {r.seconds:7.1f}s {r.solver} {tw}", flush=True)
                ok &= r.status == "unsat" and twin is not None and twin.status == "sat"
    return 0 if ok else 1
