"""Layer 5, query/search: the distinguishing query of two models and the search for witnesses.

`build(A, B, where)` evaluates both models on one `Z3Backend` over shared free inputs (the
shorter K; the longer model sees +0, scale 1.0, beyond) and gives a `Query`: their output bits,
the `--where` constraints, the no-overflow obligations. `search` asks the solver for up to
`count` witnesses (earlier ones blocked), replays each on the concrete back-ends before it is
accepted, and re-solves with the obligations when a witness overflows a checked operation.
`equivalence_twin` is the broken twin of an equivalence (B mutated must be distinguishable).

Shared by the verbs distinguish, prove (equiv, unobservable) and probes (--solve).

May import: mmaformal.query.model, .frame, .solvers, the layers below, z3 (lazily).
Invariant: every witness returned has been replayed and distinguishes the models concretely.
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Sequence

from ..bits import BV, Z3Backend
from .frame import InternalError
from .model import (Inputs, Model, Witness, check, check_same_formats, hex_bits, mutate,
                    portable, replay, smt2_text, step_diff, twin_mutations)
from .solvers import Result, to_smt2
from .where import parse_where

__all__ = ["Query", "build", "constraints_satisfiable", "Found", "search", "equivalence_twin"]


@dataclasses.dataclass
class Query:
    """The distinguishing query of two models over shared inputs (and its parts)."""

    A: Model
    B: Model
    inp: Inputs
    K: Z3Backend
    dA: BV
    dB: BV
    where: list
    note: str

    def differ(self):
        return self.dA.v != self.dB.v

    def obligations(self) -> list:
        memo: dict = {}
        return [portable(o, memo) for o in self.K.obligations]


def build(A: Model, B: Model, where: Sequence[str] = ()) -> Query:
    """Both models' dot products over shared free inputs of length min(k_A, k_B) (the longer
    model sees +0 (scale 1.0) at the positions beyond)."""
    check_same_formats(A, B)
    K = Z3Backend()
    kmin = min(A.k, B.k)
    ref = A if A.k == kmin else B
    inp = Inputs.for_model(K, ref, kmin)
    note = ""
    if A.k != B.k:
        long = B if ref is A else A
        note = (f"K differ ({A.label}: {A.k}, {B.label}: {B.k}): the inputs of {long.label} are "
                f"padded with +0 at k = {kmin}..{long.k - 1}")
    cons = parse_where(where, inp)
    cons += A.sparse_valid(K, inp.padded(A)[0])
    dA = A.dot(K, *inp.padded(A))
    dB = B.dot(K, *inp.padded(B))
    return Query(A, B, inp, K, dA, dB, cons, note)


def constraints_satisfiable(q: Query, solver: str, timeout: float | None) -> Result:
    return check(to_smt2(list(q.where)), solver, timeout)


@dataclasses.dataclass
class Found:
    witness: Witness
    outputs: dict
    step: str


def search(q: Query, count: int = 1, solver: str = "bitwuzla", timeout: float | None = None,
           obligations: str = "lazy", backends: Sequence[str] = ("int", "numpy"),
           emit: str | None = None) -> tuple[str, list[Found], float, Result | None, str]:
    """Find up to `count` distinguishing witnesses. Returns (status, found, seconds, last
    result, query text). Obligations: "always" asserts every no-overflow side condition;
    "lazy" solves without them and adds them only if a witness fails to replay legally."""
    t0 = time.perf_counter()
    base = [q.differ()] + q.where
    use_obl = obligations == "always"
    blocks: list = []
    found: list[Found] = []
    last = None
    text = ""
    while len(found) < count:
        asserts = base + blocks + (q.obligations() if use_obl else [])
        text = smt2_text(list(asserts))
        if emit and not found and not blocks:
            Path(emit).write_text(text)
        left = None if timeout is None else max(0.1, timeout - (time.perf_counter() - t0))
        r = check(text, solver, left)
        last = r
        if r.status != "sat":
            break
        w = q.inp.witness(r.model)
        try:
            outs = replay([q.A, q.B], w, backends)
        except InternalError as e:
            if not use_obl and "overflows" in str(e):
                use_obl = True
                continue
            raise
        if outs[q.A.label] == outs[q.B.label]:
            raise InternalError(f"the solver's witness does not distinguish the models when "
                                f"replayed concretely (both give {hex(outs[q.A.label])}): "
                                f"{json.dumps(w.to_json())}")
        found.append(Found(w, outs, step_diff(q.A, q.B, w)))
        blocks.append(q.inp.block(w))
    secs = time.perf_counter() - t0
    if found:
        status = "distinguished"
    elif last is not None and last.status == "unsat":
        status = "equivalent"
    else:
        status = "unknown"
    return status, found, secs, last, text


def equivalence_twin(A: Model, B: Model, where, solver, timeout, backends) -> dict | None:
    """A broken twin of an equivalence: B mutated (F-1, another rounding, ...) must be
    distinguishable from A by the same query; its witness is replayed concretely."""
    for ch in twin_mutations(B):
        try:
            Bm = mutate(B, ch)
        except (ValueError, TypeError):
            continue
        q = build(A, Bm, where)
        st, found, secs, last, text = search(q, 1, solver, timeout, "lazy", backends)
        if st == "distinguished":
            f = found[0]
            return {"status": "sat", "verdict": "refuted", "claim": f"{A.label} equals {Bm.label}", "model": Bm.spec(),
                    "solver": last.solver, "seconds": round(secs, 3),
                    "witness": f.witness.to_json(),
                    "outputs": {k: hex_bits(v, A.ins.d) for k, v in f.outputs.items()}}
    return None
