"""Layer 5, query/infer: active identification of an instruction's arithmetic (the closed loop).

    mmaformal infer --space SPACE --oracle ORACLE [--instr NAME] [--max-queries N]
                    [--solver S] [--timeout T] [--json] [--save] [--probes-out DIR]

SPACE is a hypothesis family (mmaformal.query.family: a built-in id such as `nvidia-t-fdpa`,
or a TOML file). ORACLE answers dot products as raw bits:

    theory:SPEC          a model spec of distinguish (`sm90.f16.f32`, `SPEC@INSTR`, mutants
                         `SPEC[F=24]`, RD-twins `SPEC[align=RD]`) used as a black box through
                         `simulate` (or the Model's own evaluation for RD-twins and chains)
    INSTR                an instruction with its primary theory (same as theory:INSTR)
    file:OBS.npz         recorded observations (see `save_observations`); infer may only ask
                         the recorded inputs
    file:DIR             a directory of tiles A.npy, B.npy, C.npy, D.npy (what --probes-out
                         writes, with the GPU's D.npy added; instruction from its manifest.json)
    hw:INSTR             the GPU, through mmaformal.hw.runner (one tile per batch of queries)

The loop: the family's candidates (deduplicated statically) are evaluated concretely and in
batch (numpy lanes, one definition: `Theory.dot`) on a pool of cheap inputs: the probes of
mmaformal.query.probes first, then the CLFP input classes of mmaformal.classes. The pool input
whose predicted outputs split the survivors best (smallest expected number of survivors) is
asked of the oracle; every candidate that disagrees is dropped. When no pool input splits the
survivors, two survivors are handed to the solver. Two FDPA chains that differ only in their
zero-sign / overflow rules are first tried by claims.equivalence.equiv_decomposed (per-block
lemmas, equivalence_lemmas, with their broken twin): proved merges them. Otherwise
distinguish's path (`build` + `search`): a witness (replayed concretely by `search`) is the
next query; unsat merges them as equivalent (the proof is recorded: method, solver, seconds,
sha256 of the query or of each lemma); a time-out is "unknown".
Then (CLFP step 4) up to
`validate` further pool inputs, drawn at random rather than chosen to split, are asked: an
oracle outside the family is caught even when one candidate happens to survive the splits.

A recording (file:) answers every recorded input, so after the splits every survivor is
checked on all of them (check_recorded: the recorded input that rules out the most survivors
is asked until none disagrees; this replaces the random validation), and the solver cannot
ask anything new. When several classes survive, `separate` looks for the inputs that would
separate them (pool probes and input classes greedily, then distinguish's search for classes
no pool input splits, or a proof that merges them): they are reported with every class's
prediction, never asked, and --probes-out DIR writes them as raw-bit tiles + manifest.json for
whoever holds the GPU (run them, add D.npy, give DIR back as file:DIR). Survivors are also
summarised by structure (op, L, convert, k_order, accumulate) and parameter values.
While many candidates survive, the ones that differ only in the overlay parameters
(family.OVERLAY: NaN code, zero sign) share one evaluation wherever it is finite and nonzero;
each is evaluated on its own where that evaluation is special, and on every input once few
survive.

Counting: "queries" = distinct dot products asked of the oracle (the budget --max-queries
counts these; the check of every recorded input is not bounded by it: a recording costs nothing
to ask); "rechecks" = earlier queries asked again at the end to test determinism.

Exit codes (distinguish's): 0 identified (one survivor, or survivors proved equivalent);
1 the oracle fits no candidate (refuted family; the input that ruled out each candidate is
reported); 2 bad input (empty family, bad family file, unknown spec, wrong oracle shapes, a
non-deterministic oracle); 4 unknown (budget exhausted, survivors the solver could not
separate in time, or survivors a recording cannot separate).

This module is the verb (the CLI, and the names scripts and tests use); the work is done by
its parts: query.infer_oracle (the oracles), query.infer_engine (the pool and the evaluation
of the candidates on it), query.infer_loop (the loop) and query.infer_report (JSON, text,
probe tiles, the counterexamples record).

May import: the layers below, query.frame / model / pool / family / solvers and infer's parts
(which import numpy, query.search / cex, the verbs probes (dot_probes) and prove's
decomposed equivalence (claims.equivalence), classes, simulate, hw.runner (lazily, for hw:
oracles)). Invariant: every elimination is by a concrete disagreement between a candidate's
prediction and an oracle answer on one recorded input.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import family as _family
from ..args import positive_int, seconds
from .frame import EXIT_OK, EXIT_REFUTED, EXIT_UNKNOWN, BadInput, run_verb
from .infer_engine import pool_chunks  # noqa: F401  (re-exported)
from .infer_loop import DEFAULT_MAX_QUERIES, infer
from .infer_oracle import (FileOracle, HwOracle, Oracle, TheoryOracle,  # noqa: F401
                           make_oracle, save_observations)
from .infer_report import render, save, to_json, write_probes
from .model import Model  # noqa: F401  (re-exported)
from .pool import Batch, evaluate, plain  # noqa: F401  (re-exported)
from .solvers import SOLVERS

__all__ = ["Oracle", "TheoryOracle", "FileOracle", "HwOracle", "make_oracle", "infer",
           "save_observations", "add_parser", "run", "DEFAULT_MAX_QUERIES",
           # re-exported from query.pool, where they are defined
           "Batch", "evaluate", "plain"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    q = subparsers.add_parser("infer", help="identify an instruction's arithmetic from an oracle",
                              description=__doc__.split("\n\n")[0])
    q.add_argument("--space", required=True, metavar="SPACE",
                   help="a family id (theories/families/*.toml) or a family TOML file")
    q.add_argument("--oracle", required=True, metavar="ORACLE",
                   help="theory:SPEC | INSTR | file:OBS.npz | file:DIR (tiles A, B, C, D.npy) | "
                        "hw:INSTR. A file oracle is checked on every recorded input; survivors "
                        "it cannot separate are reported with the inputs that would (see "
                        "--probes-out)")
    q.add_argument("--instr", metavar="NAME", help="instruction for theory ids / files")
    q.add_argument("--max-queries", type=positive_int, default=DEFAULT_MAX_QUERIES, metavar="N")
    q.add_argument("--solver", default="bitwuzla", choices=list(SOLVERS) + ["portfolio"])
    q.add_argument("--timeout", type=seconds, default=60, metavar="S",
                   help="seconds per solver call (a time-out is 'unknown')")
    q.add_argument("--solver-budget", type=seconds, default=120, metavar="S",
                   help="seconds of solver time in all (pairs left are reported unknown)")
    q.add_argument("--seed", type=int, default=0, help="seed of the random pool")
    q.add_argument("--save", action="store_true", help="store the queries in counterexamples/infer/")
    q.add_argument("--probes-out", metavar="DIR", type=Path,
                   help="file: oracles: write the inputs that would separate the classes the "
                        "recording leaves as raw-bit tiles DIR/A.npy, B.npy, C.npy + "
                        "manifest.json (each class's predicted output); run them on the GPU "
                        "(`mmaformal hw run`) and give DIR back as file:DIR")
    q.add_argument("--verbose", action="store_true", help="log each query on stderr")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=run)
    return q


def exit_code(status: str) -> int:
    return {"identified": EXIT_OK, "none-fits": EXIT_REFUTED}.get(status, EXIT_UNKNOWN)


def run(args) -> int:
    def compute():
        if args.max_queries < 1:
            raise BadInput("--max-queries must be >= 1")
        fam = _family.get(args.space)
        oracle = make_oracle(args.oracle, args.instr)
        log = (lambda s: print(s, file=sys.stderr)) if args.verbose else None
        res = infer(fam, oracle, args.max_queries, args.solver, args.timeout, args.seed, log,
                    solver_budget=args.solver_budget)
        if args.save:
            res["saved"].append(str(save(res)))
        if args.probes_out is not None:
            p = write_probes(res, args.probes_out)
            res["saved"].append(str(p) if p else f"{args.probes_out}: no probe to write "
                                f"({res['status']}: nothing left to separate)")
        return res
    return run_verb("infer", compute, lambda res: exit_code(res["status"]), render, to_json,
                    args.json)
