"""Layer 5, query/infer_engine: the pool of cheap inputs of `mmaformal infer`, and the engine
that evaluates the candidates on it and picks the input that splits them best.

The pool (``pool_chunks``): the probes of mmaformal.query.probes first, then the CLFP input
classes of mmaformal.classes, chunk by chunk. The ``Engine`` evaluates the candidates on a chunk
in batch (numpy lanes, one definition: `Theory.dot`); while many survive, the candidates that
differ only in the overlay parameters (family.OVERLAY) share one evaluation wherever it is
finite and nonzero (``EXACT_MAX``), and ``best_lane`` is the lane whose predictions split the
alive candidates best (the smallest expected number of survivors). ``Query`` is the record of
one question asked of the oracle.

May import: numpy, mmaformal.fp, mmaformal.isa, mmaformal.classes (lazily), query.pool and the
verb query.probes (dot_probes). In the query order it sits with infer.

Invariant: a prediction is an evaluation of the candidate itself, or of the representative of
its overlay group where that evaluation is plain (finite and nonzero), which the overlay
parameters do not change.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from .. import fp, isa
from . import probes
from .pool import Batch, evaluate, plain

__all__ = ["EXACT_MAX", "pool_chunks", "Engine", "Query"]

#: below this many survivors every candidate is evaluated on its own on every pool chunk
EXACT_MAX = 256


# ============================================================================================
# The pool of cheap inputs
# ============================================================================================

_REGULAR = ("normal", "cancel", "swamping", "uniform", "dnn")
_IRREGULAR = ("sparse", "bits", "subnormal", "special", "overflow")


def _scales(ins, n, rng, spread=3):
    if not ins.scale:
        return None, None
    nb = ins.k // ins.scale_block
    one = {"ue8m0": 0x7F, "ue4m3": 0x38}[ins.scale]
    mk = lambda: np.clip(one + rng.integers(-spread, spread + 1, size=(n, nb)), 1, 0xFE).astype(np.uint8)
    return mk(), mk()


def _random(ins, klass: str, n: int, rng) -> Batch:
    from ..classes import generate
    a, b, c = generate(klass, ins.a, ins.b, ins.c, ins.k, n, rng)

    def fit(x, f):          # narrow formats (fp6/fp4) live in the low bits of their byte
        F = fp.fmt(f)
        return x & np.asarray((1 << (F.k + F.pad)) - 1, dtype=x.dtype) if F.k + F.pad < F.storage else x
    a, b, c = fit(a, ins.a), fit(b, ins.b), fit(c, ins.c)
    sa, sb = _scales(ins, n, rng)
    return Batch(a, b, c, sa, sb, [f"class:{klass}"] * n)


def pool_chunks(ins: isa.Instruction, seed: int = 0):
    """The pool, chunk by chunk: regular probes and input classes first (finite results, where
    the overlay parameters do not act), then the special probes and classes, then more of
    everything."""
    rng = np.random.default_rng(seed)
    reg, spec = probes.dot_probes(ins)
    n = len(reg) if reg is not None else 0
    first = np.arange(0, n, 8)                     # a sample of the probes first: most
    rest = np.setdiff1d(np.arange(n), first)       # candidates die in the first queries
    yield Batch.concat([_random(ins, k, 8, rng) for k in _REGULAR])
    yield Batch.concat(([reg.take(first)] if n else []) + [_random(ins, k, 24, rng) for k in _REGULAR])
    if len(rest):
        yield reg.take(rest)
    yield Batch.concat(([spec] if spec is not None else []) + [_random(ins, k, 48, rng) for k in _IRREGULAR])
    for r in range(6):
        n = 128 << min(r, 3)
        yield Batch.concat([_random(ins, k, n, rng) for k in _REGULAR + _IRREGULAR])


# ============================================================================================
# The engine
# ============================================================================================

class Engine:
    """The candidates' evaluations on the pool chunks and which of them are alive."""

    def __init__(self, cands: list, ins: isa.Instruction, log: Callable[[str], None]):
        self.c = cands
        self.ins = ins
        self.log = log
        self.alive = np.ones(len(cands), bool)
        groups: dict = {}
        for i, cd in enumerate(cands):
            groups.setdefault(cd.core, []).append(i)
        self.group_of = np.zeros(len(cands), np.int64)
        self.groups = list(groups.values())
        for g, mem in enumerate(self.groups):
            self.group_of[mem] = g
        self.rep = np.array([m[0] for m in self.groups])
        self.chunks: list[Batch] = []
        self.out: list[dict[int, np.ndarray]] = []     # per chunk: candidate -> outputs
        self.evals = 0
        self.eval_seconds = 0.0
        self.failed: dict[int, str] = {}

    def eval_candidate(self, i: int, batch: Batch) -> np.ndarray | None:
        t0 = time.perf_counter()
        try:
            v = evaluate(self.c[i].model, batch)
        except (ValueError, OverflowError, TypeError) as e:
            self.failed[i] = str(e).splitlines()[0]
            self.alive[i] = False
            v = None
        self.evals += 1
        self.eval_seconds += time.perf_counter() - t0
        return v

    def exact_mode(self) -> bool:
        return int(self.alive.sum()) <= EXACT_MAX

    def add_chunk(self, batch: Batch) -> int:
        self.chunks.append(batch)
        self.out.append({})
        return len(self.chunks) - 1

    def ensure(self, j: int, exact: bool) -> None:
        out, batch = self.out[j], self.chunks[j]
        if exact:
            need = [i for i in np.flatnonzero(self.alive) if i not in out]
        else:
            gs = np.unique(self.group_of[self.alive])
            need = [int(self.rep[g]) for g in gs if int(self.rep[g]) not in out]
        for i in need:
            v = self.eval_candidate(int(i), batch)
            if v is not None:
                out[int(i)] = v

    def predictions(self, j: int, lanes: np.ndarray) -> dict[int, np.ndarray]:
        """Exact predictions of every alive candidate on some lanes of chunk j."""
        out, batch = self.out[j], self.chunks[j]
        res = {}
        for i in np.flatnonzero(self.alive):
            i = int(i)
            if i in out:
                res[i] = out[i][lanes]
                continue
            r = int(self.rep[self.group_of[i]])
            rv = out.get(r)
            if rv is not None and bool(np.all(plain(rv[lanes], self.ins.d))):
                res[i] = rv[lanes]
                continue
            v = self.eval_candidate(i, batch.take(lanes))
            if v is not None:
                res[i] = v
        return {i: v for i, v in res.items() if self.alive[i]}

    def best_lane(self, j: int, asked: set) -> tuple[int, float] | None:
        """The lane of chunk j that splits the alive candidates best (None: none splits)."""
        exact = self.exact_mode()
        self.ensure(j, exact)
        out = self.out[j]
        alive = np.flatnonzero(self.alive)
        if exact:
            rows = [int(i) for i in alive if int(i) in out]
            w = np.ones(len(rows))
        else:
            gs, cnt = np.unique(self.group_of[alive], return_counts=True)
            rows = [int(self.rep[g]) for g in gs]
            keep = [k for k, r in enumerate(rows) if r in out]
            rows = [rows[k] for k in keep]
            w = cnt[keep].astype(float)
        if len(rows) < 2 and exact:
            return None
        O = np.stack([out[r] for r in rows])          # (rows, lanes)
        W = w.sum()
        n = O.shape[1]
        batch = self.chunks[j]
        best, best_score = None, W * W
        nonplain = None if exact else (~plain(O, self.ins.d)) * w[:, None]
        for lane in range(n):
            if (j, lane) in asked or batch.key(lane) in asked:
                continue
            col = O[:, lane]
            _, inv = np.unique(col, return_inverse=True)
            score = float((np.bincount(inv, weights=w) ** 2).sum())
            if not exact and nonplain[:, lane].sum() > EXACT_MAX:
                continue
            if score < best_score:
                best, best_score = lane, score
        if best is None:
            return None
        return best, best_score / W


@dataclasses.dataclass
class Query:
    index: int
    source: str
    batch: Batch
    answer: int
    alive_before: int
    alive_after: int
