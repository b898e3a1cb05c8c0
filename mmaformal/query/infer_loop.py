"""Layer 5, query/infer_loop: the closed loop of `mmaformal infer` (module docstring of
mmaformal.query.infer).

``infer(family, oracle)`` runs it: the pool input that splits the survivors best is asked of
the oracle and every candidate that disagrees is dropped; a recording is checked on all its
inputs; survivors no pool input splits go to the solver (equiv_decomposed, then
distinguish's search: a witness is the next query, unsat merges the pair, a time-out is
unknown); for an oracle that cannot be asked new inputs, ``separate`` finds the inputs that
would separate the classes left; then random validation inputs and a determinism recheck.

May import: numpy, query.infer_engine, query.infer_oracle, query.family (for its types),
query.claims.equivalence (equiv_decomposed: prove's decomposed equivalence), query.search,
query.model, query.pool, query.frame. In the query order it sits with infer.

Invariant: every elimination is by a concrete disagreement between a candidate's prediction and
an oracle answer on one recorded input.
"""
from __future__ import annotations

import hashlib
import json
import time
from typing import Callable

import numpy as np

from . import family as _family
from .claims.equivalence import equiv_decomposed
from .frame import BadInput
from .infer_engine import Engine, Query, pool_chunks
from .infer_oracle import Oracle
from .model import hex_bits
from .pool import Batch
from .search import build, search

__all__ = ["DEFAULT_MAX_QUERIES", "RECHECKS", "infer"]

DEFAULT_MAX_QUERIES = 64
#: re-asked at the end to check that the oracle is deterministic
RECHECKS = 3

#: (family id, family file, instruction, seed) -> {"cands", "stats", "chunks": [Batch],
#: "out": [dict]}: pool evaluations do not depend on the oracle, so runs on one instruction
#: (a benchmark over rival theories) share them
_SHARED: dict = {}


class _Loop:
    """One run of the loop: the engine's candidates, the queries asked, the candidates each
    query ruled out, and the proved equivalences (a union-find over candidate indices)."""

    def __init__(self, cands: list, stats: dict, shared: dict, oracle: Oracle,
                 max_queries: int, log: Callable[[str], None]):
        self.cands, self.stats, self.shared, self.oracle = cands, stats, shared, oracle
        self.ins = oracle.ins
        self.max_queries = max_queries
        self.log = log
        self.E = Engine(cands, self.ins, log)
        self.queries: list[Query] = []
        self.asked: set = set()
        self.ruled_out: dict[int, int] = {}
        self.equivalences: list[dict] = []
        self.unknown: list[dict] = []
        self.cls = list(range(len(cands)))
        self.exhausted = False
        self.synth = 0
        self.validation = 0
        self.rechecks = 0
        self.checked = 0                   # recorded inputs every survivor was checked on
        self.probes: list[dict] = []       # separating inputs not asked (see separate)
        self.unseparated: list[list[int]] = []

    def alive(self) -> int:
        return int(self.E.alive.sum())

    def room(self) -> bool:
        """Budget left and more than one candidate alive."""
        return len(self.queries) < self.max_queries and self.alive() > 1

    def find(self, i: int) -> int:
        cls = self.cls
        while cls[i] != i:
            cls[i] = cls[cls[i]]
            i = cls[i]
        return i

    def ask(self, batch: Batch, preds: dict[int, np.ndarray], source: str) -> None:
        """Ask the oracle one dot product; drop every candidate whose prediction differs."""
        E = self.E
        before = self.alive()
        y = int(self.oracle.ask(batch)[0])
        qi = len(self.queries)
        for i, v in preds.items():
            if int(v[0]) != y and E.alive[i]:
                E.alive[i] = False
                self.ruled_out[i] = qi
        self.queries.append(Query(qi, source, batch, y, before, self.alive()))
        self.asked.add(batch.key(0))
        self.log(f"query {qi + 1} ({source}): {hex_bits(y, self.ins.d)}: {before} -> "
                 f"{self.alive()} alive")

    # -- the pool ---------------------------------------------------------------------------
    def _next_chunk(self, gen_box: list, seed: int) -> int | None:
        """The index of the next pool chunk (recorded inputs, a shared chunk, or a new one
        from pool_chunks); None when the pool is exhausted."""
        E, shared = self.E, self.shared
        npool = len(E.chunks)
        if self.oracle.recorded is not None:
            if npool:
                return None
            return E.add_chunk(self.oracle.recorded)
        if npool < len(shared["chunks"]):
            E.chunks.append(shared["chunks"][npool])
            E.out.append(shared["out"][npool])
            return npool
        if gen_box[0] is None:             # deterministic: skip the chunks already shared
            gen_box[0] = pool_chunks(self.ins, seed)
            for _ in range(npool):
                next(gen_box[0], None)
        nxt = next(gen_box[0], None)
        if nxt is None:
            return None
        j = E.add_chunk(nxt)
        shared["chunks"].append(E.chunks[j])
        shared["out"].append(E.out[j])
        return j

    def pool(self, seed: int) -> None:
        """Ask the pool input that splits the survivors best, chunk by chunk, until one
        candidate is left, the budget is spent, or no pool input splits them."""
        E = self.E
        gen_box: list = [None]
        j = None
        while self.room():
            if j is None:
                j = self._next_chunk(gen_box, seed)
                if j is None:
                    self.exhausted = True
                    break
            pick = None
            for jj in range(j + 1):              # earlier chunks first (already evaluated)
                pick = E.best_lane(jj, self.asked)
                if pick is not None:
                    pick = (jj, *pick)
                    break
            if pick is None:
                j = None
                continue
            jj, lane, _ = pick
            b = E.chunks[jj].take([lane])
            preds = E.predictions(jj, np.array([lane]))
            tag = E.chunks[jj].tags[lane] if E.chunks[jj].tags else ""
            self.ask(b, preds, f"pool:{tag}")
            if E.alive.sum() == 0:
                break

    # -- the solver path --------------------------------------------------------------------
    def _pending_pair(self) -> tuple[int, int] | None:
        """Two alive classes not yet tried without an answer."""
        roots = list(dict.fromkeys(self.find(int(i)) for i in np.flatnonzero(self.E.alive)))
        for x in roots:
            for y in roots:
                if x < y and not any({u["a"], u["b"]} == {x, y} for u in self.unknown):
                    return x, y
        return None

    def _merge(self, x: int, y: int, record: dict) -> None:
        self.cls[self.find(y)] = self.find(x)
        self.equivalences.append({"a": self.cands[x].label, "b": self.cands[y].label,
                                  "verdict": "proved", **record})

    def _try_decomposed(self, x: int, y: int, solver: str, timeout: float) -> float:
        """equiv_decomposed (prove's decomposed equivalence) on the pair (chains differing only in zero-sign/overflow
        rules): merged when proved. Returns the seconds spent, or -1 when not decomposable."""
        cands = self.cands
        dec = equiv_decomposed(cands[x].model, cands[y].model, solver, timeout)
        if dec is None:
            return -1.0
        if dec["status"] == "proved":
            self._merge(x, y, {"method": "decomposed", "solver": dec["solver"],
                               "seconds": round(dec["seconds"], 3),
                               "lemmas": [{k: p[k] for k in ("lemma", "status", "sha256", "seconds")}
                                          for p in dec["parts"]],
                               "twin": (dec.get("twin") or {}).get("verdict", "none")})
            self.log(f"proved equivalent (decomposed, {len(dec['parts'])} lemmas): "
                     f"{cands[x].label} == {cands[y].label} ({dec['seconds']:.1f} s)")
        return dec["seconds"]

    def _try_search(self, x: int, y: int, solver: str, timeout: float, ask: bool = True):
        """distinguish's search on the pair: a witness is the next query (ask=False: it is
        returned, not asked); unsat merges the pair; a time-out is recorded as unknown.
        Returns the seconds spent (ask=False: (witness Batch or None, seconds))."""
        cands = self.cands
        A, B = cands[x].model, cands[y].model
        st, found, secs, last, text = search(build(A, B), 1, solver, timeout)
        sha = hashlib.sha256(text.encode()).hexdigest()
        w = None
        if st == "distinguished" and not ask:
            w = Batch.from_witness(found[0].witness, self.ins, f"solver:{A.label} vs {B.label}")
        elif st == "distinguished":
            self.synth += 1
            b = Batch.from_witness(found[0].witness, self.ins, f"solver:{A.label} vs {B.label}")
            jj = self.E.add_chunk(b)
            preds = self.E.predictions(jj, np.array([0]))
            self.ask(b, preds, f"solver:{A.label} vs {B.label}")
        elif st == "equivalent":
            self._merge(x, y, {"method": "monolithic", "solver": last.solver,
                               "seconds": round(secs, 3), "query_sha256": sha})
            self.log(f"proved equivalent: {cands[x].label} == {cands[y].label} ({secs:.1f} s)")
        else:
            self.unknown.append({"a": x, "b": y, "labels": [cands[x].label, cands[y].label],
                                 "reason": (last.reason if last else "") or "no answer",
                                 "seconds": round(secs, 3)})
            self.log(f"unknown: {cands[x].label} vs {cands[y].label} ({secs:.1f} s)")
        return secs if ask else (w, secs)

    def solve(self, solver: str, timeout: float | None, max_calls: int, budget: float) -> None:
        """When the pool is exhausted: hand pairs of survivors to the solver (decomposed
        equivalence first, else the distinguishing search) within the call and time budget."""
        calls = 0
        spent = 0.0
        while (self.room() and self.oracle.can_synthesize and self.exhausted
               and calls < max_calls and spent < budget):
            calls += 1
            pend = self._pending_pair()
            if pend is None:
                break
            x, y = pend
            left = budget - spent
            secs = self._try_decomposed(x, y, solver, min(timeout or left, left))
            if secs >= 0:
                spent += secs
                if self.find(y) == self.find(x):
                    continue
            left = budget - spent
            spent += self._try_search(x, y, solver, min(timeout or left, left))

    # -- recorded oracles --------------------------------------------------------------------
    def check_recorded(self) -> None:
        """A recording answers all its inputs at once: after the splits, every survivor must
        predict every recorded answer. While one does not, the recorded input that rules out
        the most survivors is asked (a query like any other: every elimination is still one
        concrete disagreement on one recorded input)."""
        E, o = self.E, self.oracle
        if o.recorded is None or self.alive() == 0:
            return
        if not E.chunks:                       # one candidate from the start: no split asked
            E.add_chunk(o.recorded)
        batch = E.chunks[0]
        n = len(batch)
        ans = o.ask(batch).astype(np.uint64)
        lanes = np.arange(n)
        while self.alive():
            preds = E.predictions(0, lanes)
            bad = np.zeros(n, np.int64)
            for i, v in preds.items():
                bad += (v.astype(np.uint64) != ans)
            if not bad.any():
                break
            ln = int(np.argmax(bad))
            self.ask(batch.take([ln]), {i: v[ln:ln + 1] for i, v in preds.items()},
                     "check:" + (batch.tags[ln] if batch.tags else "recorded"))
        self.checked = n

    def separate(self, seed: int, solver: str, timeout: float | None, max_calls: int,
                 budget: float, max_probes: int = 24, pool_budget: float = 20) -> None:
        """An oracle that cannot be asked new inputs (a recording) and more than one class
        left: find the inputs that would separate the classes, for whoever holds the
        hardware. Pool inputs first (pool_chunks, not recorded: the one that splits the most
        classes, greedily; every probe chunk, then random chunks while pool_budget seconds
        last), then the solver for classes no pool input splits (distinguish's
        search: a witness is a probe; unsat merges the pair as proved equivalent, a time-out is
        unknown). Nothing is asked and nobody is ruled out: probes are predictions."""
        if self.oracle.can_synthesize:
            return
        reps = list(dict.fromkeys(self.find(int(i)) for i in np.flatnonzero(self.E.alive)))
        if len(reps) < 2:
            return
        sep = _Separation(self, reps, max_probes)
        sep.by_pool(seed, pool_budget)
        sep.by_solver(solver, timeout, max_calls, budget)
        self.unseparated = sep.unseparated()

    # -- validation and determinism ---------------------------------------------------------
    def validate(self, n: int, seed: int) -> None:
        """CLFP step 4: the survivors must also predict inputs nobody chose (n random pool
        inputs not asked yet). A recording whose every input was checked (check_recorded)
        has none left to draw."""
        E = self.E
        if not n or E.alive.sum() < 1 or self.checked:
            return
        lanes = [(jj, ln) for jj in range(len(E.chunks)) for ln in range(len(E.chunks[jj]))
                 if E.chunks[jj].key(ln) not in self.asked]
        rng = np.random.default_rng(seed + 1)
        order = rng.permutation(len(lanes)) if lanes else []
        for k in order[:n]:
            if len(self.queries) >= self.max_queries or E.alive.sum() == 0:
                break
            jj, ln = lanes[int(k)]
            preds = E.predictions(jj, np.array([ln]))
            tag = E.chunks[jj].tags[ln] if E.chunks[jj].tags else ""
            self.ask(E.chunks[jj].take([ln]), preds, f"validate:{tag}")
            self.validation += 1

    def recheck(self, n: int) -> None:
        """Ask up to n earlier queries again (first, middle, last): a different answer is a
        non-deterministic oracle, BadInput."""
        qs = self.queries
        idx = sorted({0, len(qs) // 2, len(qs) - 1})[:n] if qs else []
        for qi in idx:
            q = qs[qi]
            y2 = int(self.oracle.ask(q.batch)[0])
            if y2 != q.answer:
                raise BadInput(f"oracle {self.oracle.label} is not deterministic: query {qi + 1} "
                               f"{json.dumps(q.batch.witness(0, self.ins).to_json())} gave "
                               f"{hex_bits(q.answer, self.ins.d)}, then {hex_bits(y2, self.ins.d)}")
        self.rechecks = len(idx)

    def verdict(self) -> tuple[str, list[int], dict[int, list[int]]]:
        """(status, alive candidates, classes of proved-equivalent alive candidates)."""
        alive = [int(i) for i in np.flatnonzero(self.E.alive)]
        classes: dict[int, list[int]] = {}
        for i in alive:
            classes.setdefault(self.find(i), []).append(i)
        if not alive:
            status = "none-fits"
        elif len(classes) == 1:
            status = "identified"
        elif self.unknown:
            status = "unknown"
        else:
            status = "budget" if len(self.queries) >= self.max_queries else "unresolved"
        if status != "identified" and len(classes) > 1 and not self.unknown and not self.exhausted:
            status = "budget"
        return status, alive, classes


class _Separation:
    """The classes a recording leaves (one representative each), partitioned into blocks that
    no probe found so far separates; each probe refines the blocks (_Loop.separate)."""

    def __init__(self, run: _Loop, reps: list[int], max_probes: int):
        self.run = run
        self.block = {r: 0 for r in reps}            # rep -> block id (refined by each probe)
        self.max_probes = max_probes
        self.t0 = time.perf_counter()

    def full(self) -> bool:
        return len(self.run.probes) >= self.max_probes

    def nblocks(self) -> int:
        return len(set(self.block.values()))

    def refine(self, batch: Batch, outs: dict[int, int], source: str) -> None:
        """Record a probe (its prediction per class) and split the blocks by it."""
        block, run = self.block, self.run
        groups: dict = {}
        for r in list(block):
            groups.setdefault((block[r], outs[r]), []).append(r)
        nb = 0
        for g in groups.values():
            for r in g:
                block[r] = nb
            nb += 1
        run.probes.append({"batch": batch, "source": source, "outs": outs})
        run.log(f"probe {len(run.probes)} ({source}): {nb} block(s) of "
                f"{len(block)} classes")

    def predict(self, batch: Batch, outs: dict[int, int]) -> dict[int, int]:
        """outs completed with the prediction on the (one-input) batch of every class not in
        it; a class that cannot be evaluated there leaves the blocks (no probe for it)."""
        for r in list(self.block):
            if r not in outs:
                v = self.run.E.eval_candidate(r, batch)
                if v is None:
                    self.block.pop(r)
                else:
                    outs[r] = int(v[0])
        return outs

    # -- pool inputs ---------------------------------------------------------------------------
    def by_pool(self, seed: int, pool_budget: float) -> None:
        """Pool chunks (every probe chunk, then random ones while pool_budget seconds last):
        in each, the lanes that split the most classes, greedily."""
        run = self.run
        for ci, chunk in enumerate(pool_chunks(run.ins, seed)):
            if self.nblocks() == len(self.block) or self.full():
                break
            over = lambda: ci >= 3 and time.perf_counter() - self.t0 > pool_budget
            if over():                         # the first chunks (every probe) always run
                run.log(f"separating probes: pool budget ({pool_budget:.0f} s) spent")
                break
            rs, outs = self._chunk_outputs(chunk, over)
            if over():
                run.log(f"separating probes: pool budget ({pool_budget:.0f} s) spent")
                break
            rs = [r for r in rs if r in outs]
            if len(rs) < 2:
                continue
            self._split_by_lanes(chunk, rs, outs)

    def _chunk_outputs(self, chunk: Batch, over: Callable[[], bool]):
        """(the classes not separated yet, {class: its outputs on the chunk}) while not
        over(); a class that cannot be evaluated on the chunk leaves the blocks."""
        block = self.block
        size: dict = {}
        for r in block:
            size[block[r]] = size.get(block[r], 0) + 1
        rs = [r for r in block if size[block[r]] > 1]   # classes not separated yet
        outs: dict[int, np.ndarray] = {}
        for r in rs:
            if over():
                break
            v = self.run.E.eval_candidate(r, chunk)
            if v is None:                      # cannot be evaluated here: no probe for it
                block.pop(r)
            else:
                outs[r] = v
        return rs, outs

    def _split_by_lanes(self, chunk: Batch, rs: list[int], outs: dict) -> None:
        """Probe the lanes of the chunk that split the most pairs of classes of one block, one
        at a time, while a lane splits any."""
        block = self.block
        O = np.stack([outs[r] for r in rs])    # (classes, lanes)
        used = np.zeros(O.shape[1], bool)
        while not self.full():
            bid = np.array([block[r] for r in rs])
            # equal predictions within one block, per lane: the lane with the fewest
            # splits the most (the expected number of classes left, as in best_lane)
            same = np.zeros(O.shape[1], np.int64)
            for x in range(len(rs)):
                for y in range(x + 1, len(rs)):
                    if bid[x] == bid[y]:
                        same += O[x] == O[y]
            pairs = sum(1 for x in range(len(rs)) for y in range(x + 1, len(rs))
                        if bid[x] == bid[y])
            same[used] = pairs
            ln = int(np.argmin(same))
            if pairs == 0 or same[ln] >= pairs:
                break
            used[ln] = True
            b1 = chunk.take([ln])
            # every class's prediction, for the manifest
            lane = self.predict(b1, {r: int(outs[r][ln]) for r in rs})
            tag = chunk.tags[ln] if chunk.tags else ""
            self.refine(b1, lane, f"pool:{tag}")

    # -- the solver ----------------------------------------------------------------------------
    def _pair(self) -> tuple[int, int] | None:
        """Two classes of one block not tried yet without an answer."""
        by: dict = {}
        for r in self.block:
            if self.run.find(r) == r:
                by.setdefault(self.block[r], []).append(r)
        return next(((g[0], y) for g in by.values() for y in g[1:]
                     if not any({u["a"], u["b"]} == {g[0], y} for u in self.run.unknown)), None)

    def by_solver(self, solver: str, timeout: float | None, max_calls: int,
                  budget: float) -> None:
        """Pairs of classes no pool input splits: a decomposed proof or an unsat merges them;
        a witness of distinguish's search is a probe."""
        run, block = self.run, self.block
        calls, spent = 0, 0.0
        while calls < max_calls and spent < budget and not self.full():
            pair = self._pair()
            if pair is None:
                break
            calls += 1
            x, y = pair
            left = budget - spent
            secs = run._try_decomposed(x, y, solver, min(timeout or left, left))
            if secs >= 0:
                spent += secs
                if run.find(y) == run.find(x):
                    block.pop(y, None)
                    continue
            left = budget - spent
            w, secs = run._try_search(x, y, solver, min(timeout or left, left), ask=False)
            spent += secs
            if run.find(y) == run.find(x):
                block.pop(y, None)
            elif w is not None:
                self.refine(w, self.predict(w, {}), w.tags[0])

    def unseparated(self) -> list[list[int]]:
        """The blocks of more than one class left."""
        by: dict = {}
        for r in self.block:
            by.setdefault(self.block[r], []).append(r)
        return [g for g in by.values() if len(g) > 1]


def _shared_candidates(fam: "_family.Family", oracle: Oracle, seed: int) -> dict:
    """{"cands", "stats", "chunks", "out"} of the family on the oracle's instruction; pool
    evaluations do not depend on the oracle, so runs on one instruction share them (`_SHARED`,
    not for recorded oracles, whose pool is their recording). BadInput when no candidate is
    left."""
    ins = oracle.ins
    if ins.integer:           # issue 14: the hypothesis families are floating-point ones
        raise BadInput(f"{ins.name} is an integer instruction: infer searches floating-point "
                       f"families; separate the integer theories with probes / distinguish")
    skey = (fam.id, fam.file, repr(fam.structures), repr(fam.domain), ins.name, seed)
    shared = _SHARED.get(skey) if oracle.recorded is None else None
    if shared is None:
        cands, stats = fam.candidates(ins)
        shared = {"cands": cands, "stats": stats, "chunks": [], "out": []}
        if oracle.recorded is None:
            _SHARED.clear()                # keep one instruction's evaluations at a time
            _SHARED[skey] = shared
    cands, stats = shared["cands"], shared["stats"]
    if not cands:
        why = f" (e.g. {stats['why_dropped']})" if stats["why_dropped"] else ""
        raise BadInput(f"family {fam.id} has no candidate for {ins.name}: {stats['points']} "
                       f"point(s), all dropped{why}")
    return shared


def infer(fam: "_family.Family", oracle: Oracle, max_queries: int = DEFAULT_MAX_QUERIES,
          solver: str = "bitwuzla", timeout: float | None = 60, seed: int = 0,
          log: Callable[[str], None] | None = None, rechecks: int = RECHECKS,
          max_solver_calls: int = 12, solver_budget: float = 120,
          validate: int = 12, max_probes: int = 24, probe_budget: float = 20) -> dict:
    """Run the loop (pool, every recorded input for a recording, solver path, separating
    probes for an oracle that cannot be asked new inputs, validation, determinism recheck); a
    result dict (see `to_json`)."""
    log = log or (lambda s: None)
    t0 = time.perf_counter()
    ins = oracle.ins
    shared = _shared_candidates(fam, oracle, seed)
    cands, stats = shared["cands"], shared["stats"]
    log(f"{fam.id} on {ins.name}: {len(cands)} candidates ({stats['merged']} merged statically, "
        f"{stats['dropped']} dropped)")
    run = _Loop(cands, stats, shared, oracle, max_queries, log)
    run.pool(seed)
    run.check_recorded()
    run.solve(solver, timeout, max_solver_calls, solver_budget)
    run.separate(seed, solver, timeout, max_solver_calls, solver_budget, max_probes,
                 probe_budget)
    run.validate(validate, seed)
    run.recheck(rechecks)
    status, alive, classes = run.verdict()
    return {"status": status, "family": fam, "oracle": oracle, "instruction": ins.name,
            "candidates": cands, "stats": stats, "queries": run.queries,
            "synthesized": run.synth, "validation": run.validation, "rechecks": run.rechecks,
            "alive": alive, "classes": list(classes.values()),
            "equivalences": run.equivalences, "unknown": run.unknown,
            "ruled_out": run.ruled_out,
            "failed": {cands[i].label: w for i, w in run.E.failed.items()},
            "evaluations": run.E.evals, "eval_seconds": run.E.eval_seconds,
            "checked": run.checked, "probes": run.probes,
            "unseparated": [[cands[i].label for i in g] for g in run.unseparated],
            "seconds": time.perf_counter() - t0, "max_queries": max_queries, "saved": []}
