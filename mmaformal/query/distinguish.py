"""Layer 5, query/distinguish: synthesize an input on which two models of one instruction give
different bits, replayed concretely; or prove that there is none.

    mmaformal distinguish A B [--instr NAME] [--where C ...] [--count N] [--solver S]
                              [--timeout T] [--save] [--emit-smt2 FILE] [--json]

A and B are *model specs* (`resolve`):

    sm90/mma.m16n8k16.f32.f16.f16.f32     an instruction with its primary theory
    sm90.f16.f32                          a theory id (bound to --instr, to the other side's
                                          instruction, or to its first catalog instruction)
    sm90.f16.f32@sm90/mma.m16n8k8.f32.f16.f16.f32    a theory on a named instruction
    SPEC[F=24,L=8]                        a mutant: the theory with those parameters changed
                                          (`Theory.replace`); SPEC[align=RD] is the RD-twin:
                                          aligned terms rounded toward -inf instead of RZ
    2*SPEC                                an explicit chain: SPEC applied to k-blocks, the
                                          output of one block the accumulator of the next

Both models are evaluated on one `Z3Backend` over shared free variables (a[k], b[k], c, scale
elements); the query asserts that their output bits differ, plus the `--where` constraints
(`parse_where`). A witness is replayed on the int and numpy back-ends (and the compiled C path
on request) before it is printed; a witness on which the concrete outputs agree, or that
overflows a checked operation there, is an internal error (exit 3), never a result.

The verb is the top of the query layer's distinguishing path: models and witnesses come from
mmaformal.query.model, the query and the witness search from .search (shared with prove and
probes), the solver-result cache from .cache, the exit codes and CLI frame from .frame.

Exit codes (`run`): 0 the verb completed (distinguished, or equivalent), 2 bad input (one line
on stderr), 3 internal error, 4 unknown (solver time-out: never reported as equivalent).

May import: the query modules below the verbs (frame, model, search, cache, cex, proofs,
store, solvers) and the layers below. No module of mmaformal imports this one (the CLI loads it
by name); the names it re-exports are for scripts and tests that used them from here.
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from . import cex
from .cache import CACHE, Cache, solve_cached
from .frame import (EXIT_BAD, EXIT_INTERNAL, EXIT_OK, EXIT_REFUTED, EXIT_UNKNOWN, BadInput,
                    InternalError, add_common, run_verb, verb_main)
from .model import (BACKENDS, WHERE_HELP, Inputs, Model, Witness, _hex, approx_equal, check,
                    check_same_formats, evaluate, free_vars, from_spec, mutate, neg_bits,
                    parse_backends, parse_where, portable, replay, resolve, resolve_pair,
                    smt2_text, step_diff, twin_mutations)
from .proofs import store_equivalence
from .search import Found, Query, build, constraints_satisfiable, equivalence_twin, search
from .solvers import Result, to_smt2

__all__ = [
    "distinguish", "to_json", "render", "add_parser", "run", "main",
    # re-exported from the modules that define them (model, search, cache, frame, solvers)
    "BadInput", "InternalError", "Model", "resolve", "resolve_pair", "from_spec", "Inputs",
    "Witness", "parse_where", "check", "Cache", "CACHE", "CACHE_DIR", "solve_cached", "portable",
    "replay", "evaluate", "mutate", "twin_mutations", "build", "search", "Query", "Found",
    "constraints_satisfiable", "equivalence_twin", "smt2_text", "to_smt2", "Result",
    "EXIT_OK", "EXIT_REFUTED", "EXIT_BAD", "EXIT_INTERNAL", "EXIT_UNKNOWN", "neg_bits",
    "approx_equal", "free_vars", "check_same_formats", "step_diff", "add_common", "run_verb",
    "verb_main", "BACKENDS", "WHERE_HELP", "parse_backends", "_hex",
]


def __getattr__(name: str):
    # CACHE_DIR: the store's proofs/cache, read when asked (mmaformal.query.cache)
    if name == "CACHE_DIR":
        from .store import lemma_dir
        return lemma_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def distinguish(A: str, B: str, where: Sequence[str] = (), count: int = 1,
                solver: str = "bitwuzla", timeout: float | None = None, save: bool = False,
                instr: str | None = None, emit_smt2: str | None = None,
                obligations: str = "lazy", backends: Sequence[str] = ("int", "numpy")) -> dict:
    """The distinguish verb as a function: a result dict (see `to_json`)."""
    mA, mB = resolve_pair(A, B, instr)
    if mA.label == mB.label:
        mB.label = mB.label + " (B)"
    q = build(mA, mB, where)
    if q.where:
        r = constraints_satisfiable(q, solver if solver != "portfolio" else "bitwuzla", timeout)
        if r.status == "unsat":
            raise BadInput("no input satisfies the constraints: " + ", ".join(where))
    status, found, secs, last, text = search(q, count, solver, timeout, obligations, backends,
                                             emit_smt2)
    res = {"status": status, "A": mA, "B": mB, "found": found, "seconds": secs, "note": q.note,
           "solver": last.solver if last else solver, "reason": last.reason if last else "",
           "saved": [], "twin": None, "where": list(where)}
    if save and found:
        for f in found:
            res["saved"].append(str(cex.write("distinguish", [mA, mB], f.witness, f.outputs,
                                              claim=f"{mA.label} and {mB.label} differ",
                                              note=q.note, solver=res["solver"], seconds=secs,
                                              step=f.step)))
    if status == "equivalent":
        res["twin"] = equivalence_twin(mA, mB, where, solver, timeout, backends)
        if save and res["twin"] and res["twin"]["status"] == "sat":
            res["saved"].append(str(store_equivalence("equiv", mA, mB, where, text, last,
                                                      res["twin"])))
    return res


def to_json(res: dict) -> dict:
    """Exactly {"status", "witness", "outputs", "seconds"} (plus "witnesses" when --count > 1
    found more than one)."""
    A, B = res["A"], res["B"]
    found = res["found"]
    out = {"status": res["status"],
           "witness": found[0].witness.to_json() if found else None,
           "outputs": {k: _hex(v, A.ins.d) for k, v in found[0].outputs.items()} if found else {},
           "seconds": round(res["seconds"], 3)}
    if len(found) > 1:
        out["witnesses"] = [{"witness": f.witness.to_json(),
                             "outputs": {k: _hex(v, A.ins.d) for k, v in f.outputs.items()}}
                            for f in found]
    return out


def render(res: dict) -> str:
    from ..simulate import decimal, value_of
    A, B = res["A"], res["B"]
    L = [f"A: {A.label} = {A.ins.name}, theory {A.theory.id}: {A.describe()}",
         f"B: {B.label} = {B.ins.name}, theory {B.theory.id}: {B.describe()}"]
    if res["note"]:
        L.append("note: " + res["note"])
    if res["where"]:
        L.append("where: " + ", ".join(res["where"]))
    st = res["status"]
    if st == "distinguished":
        for i, f in enumerate(res["found"]):
            L.append(f"distinguishing input{'' if len(res['found']) == 1 else f' {i + 1}'} "
                     f"(replayed on the concrete back-ends):")
            L.extend(f.witness.render())
            for lab, v in f.outputs.items():
                L.append(f"  {lab}: {_hex(v, A.ins.d)} ({decimal(value_of(v, A.ins.d))})")
            if f.step:
                L.append(f"  trace: {f.step}")
        for s in getattr(replay, "skipped", []):
            L.append("note: " + s)
    elif st == "equivalent":
        L.append("equivalent: no input (satisfying the constraints) gives different output bits")
        tw = res.get("twin")
        L.append(f"  broken twin: {tw['claim']} is refuted (sat, witness replayed)" if tw else
                 "  broken twin: none found (no mutation of B was distinguishable)")
    else:
        L.append(f"unknown: {res['reason'] or 'the solver gave no answer'} "
                 f"(after {res['seconds']:.1f} s)")
    L.append(f"status: {st}  ({res['seconds']:.2f} s, {res['solver']})")
    for p in res["saved"]:
        L.append(f"saved: {p}")
    return "\n".join(L)


# ============================================================================================
# CLI (wired by the lead into mmaformal.cli)
# ============================================================================================


def add_parser(subparsers) -> argparse.ArgumentParser:
    q = subparsers.add_parser("distinguish", help="an input on which two models differ",
                              description=__doc__.split("\n\n")[0])
    q.add_argument("A", help="model spec: INSTR | THEORY[@INSTR] | SPEC[P=V,..] | N*SPEC")
    q.add_argument("B", help="model spec (same operand and output formats as A)")
    q.add_argument("--instr", metavar="NAME", help="instruction for theory ids")
    q.add_argument("--where", action="append", default=[], metavar="C", help=WHERE_HELP)
    q.add_argument("--count", type=int, default=1, metavar="N",
                   help="up to N different witnesses (earlier ones blocked)")
    q.add_argument("--obligations", choices=("lazy", "always"), default="lazy",
                   help="assert the no-overflow side conditions always, or only when a witness "
                        "fails to replay legally (default)")
    add_common(q, save="store witnesses in counterexamples/ (and an equivalence proof in proofs/)",
               replay=("int,numpy", "concrete back-ends for replay: int,numpy[,compiled]"))
    q.set_defaults(func=run)
    return q


def run(args) -> int:
    def compute():
        if args.count < 1:
            raise BadInput("--count must be >= 1")
        return distinguish(args.A, args.B, args.where, args.count, args.solver, args.timeout,
                           args.save, args.instr, args.emit_smt2, args.obligations,
                           parse_backends(args.replay))
    return run_verb("distinguish", compute,
                    lambda res: EXIT_UNKNOWN if res["status"] == "unknown" else EXIT_OK,
                    render, to_json, args.json)


def main(argv=None) -> int:
    return verb_main(add_parser, argv)


if __name__ == "__main__":
    sys.exit(main())
