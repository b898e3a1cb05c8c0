"""Layer 5, query/frame: the frame every query verb runs in: exit codes, the two error kinds,
and the argparse glue (the common options, the run-and-print frame). The verbs are run by the
`mmaformal` command (mmaformal.cli), the one entry point.

    EXIT_OK 0       the verb completed (distinguished, equivalent, proved)
    EXIT_REFUTED 1  a claim was refuted / a property does not hold where the verb says so
    EXIT_BAD 2      bad input or usage (BadInput): one line on stderr, no traceback
    EXIT_INTERNAL 3 a result failed its own check (InternalError), e.g. a witness that does not
                    replay
    EXIT_UNKNOWN 4  the solver gave no answer in time (never reported as proved/equivalent)

The bottom of the query layer above the solver back-ends: every other query module may import
it. May import: the standard library, mmaformal.args (the shared argparse types),
mmaformal.query.solvers (the solver names). Invariant: no
model, store or verb logic here; the frame only maps results and errors to output and exit codes.
"""
from __future__ import annotations

import argparse
import json
import sys

from ..args import out_file, seconds
from .solvers import SOLVERS

__all__ = ["EXIT_OK", "EXIT_REFUTED", "EXIT_BAD", "EXIT_INTERNAL", "EXIT_UNKNOWN", "BadInput",
           "InternalError", "seconds", "add_common", "run_verb"]

EXIT_OK, EXIT_REFUTED, EXIT_BAD, EXIT_INTERNAL, EXIT_UNKNOWN = 0, 1, 2, 3, 4


class BadInput(ValueError):
    """Bad input or usage: exit code 2 with a one-line message."""


class InternalError(RuntimeError):
    """A result failed its own check (e.g. a witness that does not replay): exit code 3."""


def add_common(q: argparse.ArgumentParser, save: str | None = None,
               replay: tuple[str, str] | None = None, witness: bool = False) -> None:
    """The options of every query verb: --solver, --timeout, --emit-smt2, --json; and --save
    (`save`: its help) and --replay (`replay`: its default back-ends and help) where given;
    --raw and --minimize-timeout where the verb prints witnesses (`witness`)."""
    q.add_argument("--solver", default="bitwuzla", choices=list(SOLVERS) + ["portfolio"],
                   help="bitwuzla (default; propagation engine with bit-blasting fallback), "
                        "z3, cvc5, or portfolio (all, first answer wins)")
    q.add_argument("--timeout", type=seconds, default=600, metavar="S",
                   help="seconds per solver call (a time-out is 'unknown')")
    if witness:
        q.add_argument("--raw", action="store_true",
                       help="print the solver's witness as found (default: minimized: no operand "
                            "paired with a zero, fewest non-zero products, smallest exponent "
                            "spread, fewest significand bits)")
        q.add_argument("--minimize-timeout", type=seconds, default=10.0, metavar="S",
                       help="seconds per minimization query (a time-out keeps the witness so "
                            "far; default 10, at most 60 in all)")
    q.add_argument("--emit-smt2", metavar="FILE", type=out_file,
                   help="write the (first) query as SMT-LIB2 (its folder must exist)")
    q.add_argument("--json", action="store_true")
    if save is not None:
        q.add_argument("--save", action="store_true", help=save)
    if replay is not None:
        q.add_argument("--replay", default=replay[0], metavar="BACKENDS", help=replay[1])


def run_verb(verb: str, compute, exit_code, render, to_json, as_json: bool) -> int:
    """The CLI frame of a query verb: `compute()` gives a result, printed as one JSON object
    `to_json(result)` if `as_json`, else as `render(result)`; exit status `exit_code(result)`
    (or an int: an exit status, `compute` printed its own output); BadInput -> one line on
    stderr, exit 2; InternalError -> one line, exit 3."""
    try:
        res = compute()
    except BadInput as e:
        print(f"mmaformal {verb}: {e}", file=sys.stderr)
        return EXIT_BAD
    except InternalError as e:
        print(f"mmaformal {verb}: internal error: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    if isinstance(res, int):
        return res
    print(json.dumps(to_json(res), indent=1) if as_json else render(res))
    return exit_code(res)
