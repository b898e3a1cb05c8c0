"""Layer 5, query/distinguish: synthesize an input on which two models of one instruction give
different bits, replayed concretely; or prove that there is none.

    mmaformal distinguish A B [--instr NAME] [--where C ...] [--count N] [--solver S]
                              [--timeout T] [--save] [--emit-smt2 FILE] [--json]
                              [--raw] [--minimize-timeout S]
    mmaformal distinguish --all-pairs PATTERN [PATTERN] [--save] [--jobs N] [--ray ...]
        every pair of one qualifier on adjacent architectures (isa.ARCHS order, per vendor)
        among the matching instructions, grouped by one query; pairs whose two sides have one
        arithmetic are left out; one campaign job per group (query.campaign)

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

The (first) witness is then made readable (mmaformal.query.minimize: no operand paired with a
zero, the fewest non-zero products, the smallest exponent spread, the fewest significand bits;
each step solver queries under --minimize-timeout, the witness so far kept on a time-out;
--raw skips it) and is also printed as one line in the style of [Xie2025]'s Equation 10.

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

from ..args import positive_int
from . import campaign as _campaign
from . import cex
from . import minimize as _min
from .cache import CACHE, Cache, solve_cached
from .frame import (EXIT_BAD, EXIT_INTERNAL, EXIT_OK, EXIT_REFUTED, EXIT_UNKNOWN, BadInput,
                    InternalError, add_common, run_verb)
from .model import (BACKENDS, REDUCTION_SPARSE, Inputs, Model, Witness, approx_equal, arith_key, check,
                    check_same_formats, evaluate, free_vars, from_spec, hex_bits, mutate, neg_bits,
                    parse_backends, portable, replay, resolve, resolve_pair,
                    smt2_text, step_diff, twin_mutations)
from .proofs import store_equivalence
from .search import Found, Query, build, constraints_satisfiable, equivalence_twin, search
from .solvers import Result, to_smt2
from .where import WHERE_HELP, parse_where

__all__ = [
    "distinguish", "to_json", "render", "add_parser", "run", "adjacent_pairs",
    "pair_job", "save_pairs", "all_pairs",
    # re-exported from the modules that define them (model, search, cache, frame, solvers)
    "BadInput", "InternalError", "Model", "resolve", "resolve_pair", "from_spec", "Inputs",
    "Witness", "parse_where", "check", "Cache", "CACHE", "CACHE_DIR", "solve_cached", "portable",
    "replay", "evaluate", "mutate", "twin_mutations", "build", "search", "Query", "Found",
    "constraints_satisfiable", "equivalence_twin", "smt2_text", "to_smt2", "Result",
    "EXIT_OK", "EXIT_REFUTED", "EXIT_BAD", "EXIT_INTERNAL", "EXIT_UNKNOWN", "neg_bits",
    "approx_equal", "free_vars", "check_same_formats", "step_diff", "add_common", "run_verb",
    "BACKENDS", "WHERE_HELP", "parse_backends", "hex_bits",
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
                obligations: str = "lazy", backends: Sequence[str] = ("int", "numpy"),
                raw: bool = False, minimize_timeout: float = _min.DEFAULT_STEP_TIMEOUT,
                minimize_budget: float = _min.DEFAULT_BUDGET) -> dict:
    """The distinguish verb as a function: a result dict (see `to_json`). Unless `raw`, the
    first witness is minimized (mmaformal.query.minimize; each query at most
    `minimize_timeout` s, all of them at most `minimize_budget` s; "seconds" includes it)."""
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
           "saved": [], "twin": None, "where": list(where), "search_seconds": secs,
           "_text": text, "_last": last,
           "minimized": None}
    if found and not raw:
        budget = minimize_budget if timeout is None else min(minimize_budget, timeout)
        found[0], res["minimized"] = _min.minimize(q, found[0], solver, minimize_timeout, budget,
                                                   backends)
        res["seconds"] = secs = secs + res["minimized"]["seconds"]
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
           "outputs": {k: hex_bits(v, A.ins.d) for k, v in found[0].outputs.items()} if found else {},
           "seconds": round(res["seconds"], 3)}
    if len(found) > 1:
        out["witnesses"] = [{"witness": f.witness.to_json(),
                             "outputs": {k: hex_bits(v, A.ins.d) for k, v in f.outputs.items()}}
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
                L.append(f"  {lab}: {hex_bits(v, A.ins.d)} ({decimal(value_of(v, A.ins.d))})")
            L.append("  in one line: " + _min.equation(f.witness, f.outputs, A.ins.d))
            if i == 0 and res.get("minimized"):
                L.append("  " + _min.describe(res["minimized"]))
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


# ---- distinguish --all-pairs: adjacent architectures, through the campaign runner -----------

def adjacent_pairs(patterns: Sequence[str]) -> tuple[list[list[list[str]]], int]:
    """Pairs (A, B) of instructions with one qualifier on adjacent architectures of one vendor
    (isa.ARCHS order, A the earlier), among the catalog instructions matching `patterns`;
    grouped by one query (the arith_key of both sides). Returns (groups of pairs, the number
    of pairs whose two sides have one arithmetic, left out: they cannot differ)."""
    import fnmatch

    from .. import isa
    from .. import theory as _theory
    cat = isa.catalog()
    names = []
    for pat in patterns:
        hit = [n for n in cat if fnmatch.fnmatch(n, pat)]
        if not hit:
            raise BadInput(f"pattern {pat!r} matches no instruction")
        names.extend(hit)
    by_q: dict[str, dict[str, str]] = {}
    for n in dict.fromkeys(names):
        arch, q = n.split("/", 1)
        by_q.setdefault(q, {})[arch] = n
    ts = _theory.default()
    key = lambda n: arith_key(ts.theories_for(isa.lookup(n))[0], isa.lookup(n))
    groups: dict[tuple, list[list[str]]] = {}
    same = 0
    for q, archs in sorted(by_q.items()):
        for vendor in ("nvidia", "amd"):
            have = [a for a in isa.ARCHS if a in archs and isa.VENDOR_OF[a] == vendor]
            for a, b in zip(have, have[1:]):
                A, B = archs[a], archs[b]
                ka, kb = key(A), key(B)
                if ka == kb:
                    same += 1
                else:
                    groups.setdefault((ka, kb), []).append([A, B])
    # dense pairs first: the query is built on the first pair (model.REDUCTION_SPARSE)
    sp = lambda pair: bool(isa.lookup(pair[0]).sparse)
    return [sorted(g, key=sp) for g in groups.values()], same


def pair_job(pairs: list[list[str]], solver: str = "bitwuzla", timeout: float | None = 60,
             backends: Sequence[str] = ("int", "numpy")) -> dict:
    """A campaign job: distinguish the first pair of a group (every pair of the group has the
    same query); the driver stores the record (`save_pairs`)."""
    res = distinguish(pairs[0][0], pairs[0][1], solver=solver, timeout=timeout,
                      backends=tuple(backends))
    out = {"status": res["status"], "solver": res["solver"], "seconds": round(res["seconds"], 3),
           "reason": res["reason"], "twin": res["twin"], "group": pairs,
           "witness": res["found"][0].witness.to_json() if res["found"] else None,
           "_res": res}
    return out


def save_pairs(job, r: dict) -> dict:
    """on_result of distinguish --all-pairs --save (in the driver)."""
    res = r.get("_res")
    if res is None:
        return {}
    A, B = res["A"], res["B"]
    from .. import isa
    saved = []
    sparse = [n for pair in r["group"][1:] for n in pair if isa.lookup(n).sparse]
    note = res["note"] + (f" [{REDUCTION_SPARSE}]" if sparse and not A.ins.sparse else "")
    for f in res["found"]:
        saved.append(str(cex.write("distinguish", [A, B], f.witness, f.outputs,
                                   claim=f"{A.label} and {B.label} differ", note=note,
                                   solver=res["solver"], seconds=res["seconds"], step=f.step,
                                   group=r["group"])))
    if res["status"] == "equivalent" and res["twin"] and res["twin"]["status"] == "sat":
        saved.append(str(store_equivalence("equiv", A, B, [], res["_text"], res["_last"],
                                           res["twin"])))
    return {"saved": saved}


def all_pairs(args) -> int:
    """`distinguish --all-pairs PATTERN ...`. Exit 0 when every group is decided, 4 when some
    are unknown."""
    import json
    import time
    pats = [p for p in (args.A, args.B) if p]
    if not pats:
        raise BadInput("distinguish --all-pairs PATTERN [PATTERN]")
    groups, same = adjacent_pairs(pats)
    if not groups:
        raise BadInput(f"no adjacent-architecture pair with different arithmetic among the "
                       f"instructions matched ({same} pairs share one arithmetic)")
    jobs = [_campaign.Job("distinguish/" + "--".join(g[0]), "mmaformal.query.distinguish:pair_job",
                          dict(pairs=g, solver=args.solver, timeout=args.timeout,
                               backends=list(parse_backends(args.replay))),
                          _campaign.default_limit(args)) for g in groups]
    opts = _campaign.options_of(args)
    if not opts["progress"]:
        opts["progress"] = _campaign.store_path("distinguish-pairs", jobs)
    banner = None if args.json else (
        f"distinguish --all-pairs: {sum(map(len, groups))} pairs in {len(groups)} groups "
        f"({same} more pairs share one arithmetic); progress store {opts['progress']}")
    t0 = time.perf_counter()
    try:
        rs = _campaign.run(jobs, as_json=args.json, banner=banner,
                           on_result=save_pairs if args.save else None, **opts)
    except _campaign.Interrupted as e:
        print(f"mmaformal distinguish: {e}", file=sys.stderr, flush=True)
        return 130
    count = {}
    for g, r in zip(groups, rs):
        count[r["status"]] = count.get(r["status"], 0) + len(g)
    row = {"pairs": sum(map(len, groups)), "groups": len(groups), "same_arithmetic": same,
           "by_status": count, "wall_seconds": round(time.perf_counter() - t0, 1)}
    if args.json:
        print(json.dumps({"summary": row}, sort_keys=True))
    else:
        for g, r in zip(groups, rs):
            print(f"{r['status']:<13} {len(g):>3} pairs  {g[0][0]} vs {g[0][1]}"
                  + (f"  ({r.get('reason')})" if r["status"] == "unknown" else ""))
        print(f"{row['pairs']} pairs in {row['groups']} groups: "
              + ", ".join(f"{k} {v}" for k, v in sorted(count.items()))
              + f"; wall {row['wall_seconds']} s")
    return EXIT_UNKNOWN if count.get("unknown") or count.get("error") else EXIT_OK


def add_parser(subparsers) -> argparse.ArgumentParser:
    q = subparsers.add_parser("distinguish", help="an input on which two models differ",
                              description=__doc__.split("\n\n")[0])
    q.add_argument("A", nargs="?",
                   help="model spec: INSTR | THEORY[@INSTR] | SPEC[P=V,..] | N*SPEC "
                        "(with --all-pairs: an instruction pattern)")
    q.add_argument("B", nargs="?", help="model spec (same operand and output formats as A)")
    q.add_argument("--all-pairs", action="store_true",
                   help="every pair of one qualifier on adjacent architectures among the "
                        "instructions matching the patterns A [B]: one job per group of pairs "
                        "with one query, through the campaign runner")
    _campaign.add_options(q)
    q.add_argument("--instr", metavar="NAME", help="instruction for theory ids")
    q.add_argument("--where", action="append", default=[], metavar="C", help=WHERE_HELP)
    q.add_argument("--count", type=positive_int, default=1, metavar="N",
                   help="up to N different witnesses (earlier ones blocked)")
    q.add_argument("--obligations", choices=("lazy", "always"), default="lazy",
                   help="assert the no-overflow side conditions always, or only when a witness "
                        "fails to replay legally (default)")
    add_common(q, save="store witnesses in counterexamples/ (and an equivalence proof in proofs/)",
               replay=("int,numpy", "concrete back-ends for replay: int,numpy[,compiled]"),
               witness=True)
    q.set_defaults(func=run)
    return q


def run(args) -> int:
    if args.all_pairs:
        return run_verb("distinguish", lambda: all_pairs(args), lambda r: EXIT_OK, render,
                        to_json, args.json)

    def compute():
        if args.A is None or args.B is None:
            raise BadInput("distinguish: expected A B (or --all-pairs PATTERN)")
        if args.count < 1:
            raise BadInput("--count must be >= 1")
        return distinguish(args.A, args.B, args.where, args.count, args.solver, args.timeout,
                           args.save, args.instr, args.emit_smt2, args.obligations,
                           parse_backends(args.replay), args.raw, args.minimize_timeout)
    return run_verb("distinguish", compute,
                    lambda res: EXIT_UNKNOWN if res["status"] == "unknown" else EXIT_OK,
                    render, to_json, args.json)
