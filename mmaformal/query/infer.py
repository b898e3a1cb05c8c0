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
zero-sign / overflow rules are first tried by prove.equiv_decomposed (per-block lemmas,
decompose.equivalence_lemmas, with their broken twin): proved merges them. Otherwise
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

May import: numpy, the layers below, query.frame / model / search / pool / family / cex, the
verbs probes (dot_probes) and prove (equiv_decomposed), classes, simulate, hw.runner (lazily,
for hw: oracles). Invariant: every elimination is by a concrete
disagreement between a candidate's prediction and an oracle answer on one recorded input.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

from .. import fp, isa
from . import family as _family
from . import probes
from ..args import positive_int, seconds
from .frame import EXIT_OK, EXIT_REFUTED, EXIT_UNKNOWN, BadInput, InternalError, run_verb
from .model import Model, _hex, resolve
from .pool import _UINT, Batch, evaluate, plain
from .prove import equiv_decomposed
from .search import build, search
from .solvers import SOLVERS

__all__ = ["Oracle", "TheoryOracle", "FileOracle", "HwOracle", "make_oracle", "infer",
           "save_observations", "add_parser", "run", "DEFAULT_MAX_QUERIES",
           # re-exported from query.pool, where they are defined
           "Batch", "evaluate", "plain"]

DEFAULT_MAX_QUERIES = 64
#: below this many survivors every candidate is evaluated on its own on every pool chunk
EXACT_MAX = 256
#: re-asked at the end to check that the oracle is deterministic
RECHECKS = 3


# ============================================================================================
# Oracles
# ============================================================================================

class Oracle:
    """Answers dot products (a Batch) with output bits; counts what it was asked."""

    kind = "oracle"
    can_synthesize = True        # may be asked inputs that the solver synthesizes
    recorded: Batch | None = None

    def __init__(self, label: str, ins: isa.Instruction):
        self.label, self.ins = label, ins
        self.asked = 0

    def ask(self, batch: Batch) -> np.ndarray:
        self.asked += len(batch)
        d = self._run(batch)
        d = np.asarray(d)
        n, M, N = len(batch), self.ins.m, self.ins.n
        if d.shape == (n, M, N):
            d = d[:, 0, 0]
        if d.shape != (n,):
            raise BadInput(f"oracle {self.label} returned shape {d.shape} for {n} tile(s); "
                           f"expected ({n}, {M}, {N})")
        want = _UINT[fp.fmt(self.ins.d).storage]
        if d.dtype != want:
            raise BadInput(f"oracle {self.label} returned dtype {d.dtype}; expected {np.dtype(want).name} "
                           f"raw bits of {self.ins.d}")
        return d.astype(np.uint64)

    def _run(self, batch: Batch) -> np.ndarray:
        raise NotImplementedError

    def describe(self) -> dict:
        return {"kind": self.kind, "label": self.label, "instruction": self.ins.name}


class TheoryOracle(Oracle):
    kind = "theory"

    def __init__(self, model: Model):
        super().__init__(model.label, model.ins)
        self.model = model

    def _run(self, batch):
        m = self.model
        if m.rd or m.n != 1:               # op mutations and chains: the Model's evaluation
            return evaluate(m, batch).astype(_UINT[fp.fmt(m.ins.d).storage])
        from ..simulate import simulate
        A, B, C, SA, SB = batch.tiles(m.ins)
        return simulate(m.ins, A, B, C, SA, SB, theory=m.theory)

    def describe(self):
        return {**super().describe(), "model": self.model.spec()}


class HwOracle(Oracle):
    """The GPU through mmaformal.hw.runner.run (the same .npy form as `hw run`)."""

    kind = "hw"

    def __init__(self, ins: isa.Instruction):
        super().__init__(f"hw:{ins.name}", ins)
        from ..hw import runner
        ok, why = runner.available()
        if not ok:
            raise BadInput(f"hw oracle: no usable GPU: {why}")
        self.runner = runner
        try:
            self.device = runner.device_info()
        except Exception as e:  # device facts are provenance, not a result
            self.device = {"error": str(e).splitlines()[0]}

    def _run(self, batch):
        A, B, C, _, _ = batch.tiles(self.ins)
        return self.runner.run(self.ins.name, A, B, C)

    def describe(self):
        return {**super().describe(), "device": self.device}


class FileOracle(Oracle):
    """Recorded observations: only the recorded inputs can be asked."""

    kind = "file"
    can_synthesize = False

    def __init__(self, path: str, instr: str | None = None):
        p = Path(path)
        if not p.exists():
            raise BadInput(f"{path}: no such observations file")
        try:
            z = _tile_dir(p) if p.is_dir() else dict(np.load(p, allow_pickle=False))
        except BadInput:
            raise
        except Exception as e:
            raise BadInput(f"{path}: not an .npz observations file ({str(e).splitlines()[0]})") from None
        name = instr or (str(z["instr"]) if "instr" in z else None)
        if not name:
            raise BadInput(f"{path}: names no instruction (key 'instr'); pass --instr")
        try:
            ins = isa.lookup(name)
        except ValueError as e:
            raise BadInput(str(e).splitlines()[0]) from None
        super().__init__(f"file:{p.name}", ins)
        self.path = str(p)
        keys = set(z)
        if {"a", "b", "c", "d"} <= keys:
            a, b, c, d = z["a"], z["b"], z["c"], z["d"]
            sa = z["scale_a"] if "scale_a" in keys else None
            sb = z["scale_b"] if "scale_b" in keys else None
        elif {"A", "B", "C", "D"} <= keys:       # tiles: every (i, j) of every tile is a dot
            A, B, C, D = z["A"], z["B"], z["C"], z["D"]
            T, M, K = A.shape[0], ins.m, ins.k
            N = ins.n
            if A.shape[1:] != (M, K) or B.shape[1:] != (K, N) or C.shape[1:] != (M, N) or D.shape != C.shape:
                raise BadInput(f"{path}: tiles must be A (T,{M},{K}), B (T,{K},{N}), C and D (T,{M},{N})")
            a = np.repeat(A, N, axis=1).reshape(-1, K)
            b = np.broadcast_to(np.swapaxes(B, 1, 2)[:, None], (T, M, N, K)).reshape(-1, K)
            c, d, sa, sb = C.reshape(-1), D.reshape(-1), None, None
        else:
            raise BadInput(f"{path}: expected arrays a, b, c, d (lanes) or A, B, C, D (tiles)")
        n = len(c)
        want = lambda f: _UINT[fp.fmt(f).storage]
        if a.shape != (n, ins.k) or b.shape != (n, ins.k) or d.shape != (n,):
            raise BadInput(f"{path}: a and b must be (n, {ins.k}), c and d (n,); got "
                           f"{a.shape}, {b.shape}, {c.shape}, {d.shape}")
        for role, arr, f in (("a", a, ins.a), ("b", b, ins.b), ("c", c, ins.c), ("d", d, ins.d)):
            if arr.dtype != want(f):
                raise BadInput(f"{path}: {role} must hold {f} raw bits as {np.dtype(want(f)).name}, "
                               f"got {arr.dtype}")
        self.recorded = Batch(np.ascontiguousarray(a), np.ascontiguousarray(b), c, sa, sb,
                              ["recorded"] * n)
        self.answers: dict[bytes, int] = {}
        for i in range(n):
            k = self.recorded.key(i)
            if k in self.answers and self.answers[k] != int(d[i]):
                raise BadInput(f"{path}: the oracle is not deterministic: recorded input {i} gave "
                               f"{_hex(int(d[i]), ins.d)} and earlier {_hex(self.answers[k], ins.d)}")
            self.answers[k] = int(d[i])
        self.dt = want(ins.d)

    def _run(self, batch):
        out = []
        for i in range(len(batch)):
            k = batch.key(i)
            if k not in self.answers:
                raise InternalError("infer asked a file oracle an input it did not record")
            out.append(self.answers[k])
        return np.array(out, dtype=self.dt)

    def describe(self):
        return {**super().describe(), "path": self.path, "recorded": len(self.recorded)}


def _tile_dir(p: Path) -> dict:
    """A directory of tiles A.npy, B.npy, C.npy, D.npy (what `--probes-out` writes, with the
    GPU's D.npy added); the instruction from its manifest.json when there is one."""
    missing = [f"{k}.npy" for k in "ABCD" if not (p / f"{k}.npy").exists()]
    if missing:
        raise BadInput(f"{p}: a directory oracle holds A.npy, B.npy, C.npy and D.npy; "
                       f"missing {', '.join(missing)}")
    z = {k: np.load(p / f"{k}.npy", allow_pickle=False) for k in "ABCD"}
    man = p / "manifest.json"
    if man.exists():
        try:
            z["instr"] = np.array(json.loads(man.read_text())["instruction"])
        except (ValueError, KeyError):
            pass
    return z


def make_oracle(text: str, instr: str | None = None) -> Oracle:
    if text.startswith("file:"):
        return FileOracle(text[5:], instr)
    if text.startswith("hw:"):
        try:
            ins = isa.lookup(text[3:] or (instr or ""))
        except ValueError as e:
            raise BadInput(str(e).splitlines()[0]) from None
        return HwOracle(ins)
    spec = text[7:] if text.startswith("theory:") else text
    return TheoryOracle(resolve(spec, instr))


def save_observations(path: str, oracle: Oracle, batch: Batch) -> Path:
    """Ask the oracle a batch and record inputs and outputs as an observations file."""
    d = oracle.ask(batch).astype(_UINT[fp.fmt(oracle.ins.d).storage])
    arrays = {"a": batch.a, "b": batch.b, "c": batch.c, "d": d, "instr": np.array(oracle.ins.name)}
    if batch.sa is not None:
        arrays.update(scale_a=batch.sa, scale_b=batch.sb)
    np.savez_compressed(path, **arrays)
    return Path(path)


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
# The loop
# ============================================================================================

#: (family id, family file, instruction, seed) -> {"cands", "stats", "chunks": [Batch],
#: "out": [dict]}: pool evaluations do not depend on the oracle, so runs on one instruction
#: (a benchmark over rival theories) share them
_SHARED: dict = {}


class _Engine:
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

    def _eval(self, i: int, batch: Batch) -> np.ndarray | None:
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
            v = self._eval(int(i), batch)
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
            v = self._eval(i, batch.take(lanes))
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


class _Loop:
    """One run of the loop: the engine's candidates, the queries asked, the candidates each
    query ruled out, and the proved equivalences (a union-find over candidate indices)."""

    def __init__(self, cands: list, stats: dict, shared: dict, oracle: Oracle,
                 max_queries: int, log: Callable[[str], None]):
        self.cands, self.stats, self.shared, self.oracle = cands, stats, shared, oracle
        self.ins = oracle.ins
        self.max_queries = max_queries
        self.log = log
        self.E = _Engine(cands, self.ins, log)
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
        self.log(f"query {qi + 1} ({source}): {_hex(y, self.ins.d)}: {before} -> "
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
        """prove.equiv_decomposed on the pair (chains differing only in zero-sign/overflow
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
        t0 = time.perf_counter()
        block = {r: 0 for r in reps}                  # rep -> block id (refined by each probe)

        def refine(batch: Batch, outs: dict[int, int], source: str) -> None:
            groups: dict = {}
            for r in list(block):
                groups.setdefault((block[r], outs[r]), []).append(r)
            nb = 0
            for g in groups.values():
                for r in g:
                    block[r] = nb
                nb += 1
            self.probes.append({"batch": batch, "source": source, "outs": outs})
            self.log(f"probe {len(self.probes)} ({source}): {nb} block(s) of "
                     f"{len(block)} classes")

        def nblocks() -> int:
            return len(set(block.values()))

        for ci, chunk in enumerate(pool_chunks(self.ins, seed)):
            if nblocks() == len(block) or len(self.probes) >= max_probes:
                break
            over = lambda: ci >= 3 and time.perf_counter() - t0 > pool_budget
            if over():                         # the first chunks (every probe) always run
                self.log(f"separating probes: pool budget ({pool_budget:.0f} s) spent")
                break
            size: dict = {}
            for r in block:
                size[block[r]] = size.get(block[r], 0) + 1
            rs = [r for r in block if size[block[r]] > 1]   # classes not separated yet
            outs: dict[int, np.ndarray] = {}
            for r in rs:
                if over():
                    break
                v = self.E._eval(r, chunk)
                if v is None:                      # cannot be evaluated here: no probe for it
                    block.pop(r)
                else:
                    outs[r] = v
            if over():
                self.log(f"separating probes: pool budget ({pool_budget:.0f} s) spent")
                break
            rs = [r for r in rs if r in outs]
            if len(rs) < 2:
                continue
            O = np.stack([outs[r] for r in rs])    # (classes, lanes)
            used = np.zeros(O.shape[1], bool)
            while len(self.probes) < max_probes:
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
                lane = {r: int(outs[r][ln]) for r in rs}
                for r in list(block):              # every class's prediction, for the manifest
                    if r not in lane:
                        v = self.E._eval(r, b1)
                        if v is None:
                            block.pop(r)
                        else:
                            lane[r] = int(v[0])
                tag = chunk.tags[ln] if chunk.tags else ""
                refine(b1, lane, f"pool:{tag}")
        calls, spent = 0, 0.0
        while calls < max_calls and spent < budget and len(self.probes) < max_probes:
            by: dict = {}
            for r in block:
                if self.find(r) == r:
                    by.setdefault(block[r], []).append(r)
            pair = next(((g[0], y) for g in by.values() for y in g[1:]
                         if not any({u["a"], u["b"]} == {g[0], y} for u in self.unknown)), None)
            if pair is None:
                break
            calls += 1
            x, y = pair
            left = budget - spent
            secs = self._try_decomposed(x, y, solver, min(timeout or left, left))
            if secs >= 0:
                spent += secs
                if self.find(y) == self.find(x):
                    block.pop(y, None)
                    continue
            left = budget - spent
            w, secs = self._try_search(x, y, solver, min(timeout or left, left), ask=False)
            spent += secs
            if self.find(y) == self.find(x):
                block.pop(y, None)
            elif w is not None:
                outs = {}
                for r in list(block):
                    v = self.E._eval(r, w)
                    if v is None:
                        block.pop(r)
                    else:
                        outs[r] = int(v[0])
                refine(w, outs, w.tags[0])
        by = {}
        for r in block:
            by.setdefault(block[r], []).append(r)
        self.unseparated = [g for g in by.values() if len(g) > 1]

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
                               f"{_hex(q.answer, self.ins.d)}, then {_hex(y2, self.ins.d)}")
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


# ============================================================================================
# Output
# ============================================================================================

def _query_json(q: Query, ins) -> dict:
    return {"index": q.index + 1, "source": q.source, "inputs": q.batch.witness(0, ins).to_json(),
            "oracle": _hex(q.answer, ins.d), "alive_before": q.alive_before,
            "alive_after": q.alive_after}


def _structure_of(c) -> str:
    """A candidate's structure in words: its op, L and the structural keys that differ from
    the plain chain (convert, k_order, accumulate)."""
    t = c.model.theory
    parts = [t.op or t.model] + ([f"L={min(t.L, t.instr.k)}"] if t.L else [])
    parts += [f"convert={t.convert}"] if t.convert else []
    parts += [f"k_order={t.k_order}"] if t.k_order != "natural" else []
    parts += [f"accumulate={t.accumulate}"] if t.accumulate != "fused" else []
    return " ".join(parts)


def _by_structure(cands: list) -> list[dict]:
    """Survivors grouped by structure (_structure_of), with the values their parameters
    take: the summary that stays readable when hundreds survive."""
    groups: dict[str, list] = {}
    for c in cands:
        groups.setdefault(_structure_of(c), []).append(c)
    out = []
    for st, cs in groups.items():
        vals: dict[str, set] = {}
        for c in cs:
            for k, v in c.model.theory.params:
                vals.setdefault(k, set()).add(hex(v) if k == "nan" and isinstance(v, int) else v)
        out.append({"structure": st, "survivors": len(cs),
                    "params": {k: sorted(v, key=str) for k, v in sorted(vals.items())}})
    return sorted(out, key=lambda g: -g["survivors"])


def _range(vs: list) -> str:
    if len(vs) > 2 and all(isinstance(v, int) for v in vs) and vs == list(range(min(vs), max(vs) + 1)):
        return f"{min(vs)}..{max(vs)}"
    return "|".join(map(str, sorted(vs, key=lambda v: (not isinstance(v, int), v if isinstance(v, int) else str(v)))))


def _probe_json(k: int, pr: dict, res: dict, ins) -> dict:
    cands = res["candidates"]
    outs = pr["outs"]
    classes: dict[int, list[str]] = {}
    for r, v in outs.items():
        classes.setdefault(v, []).append(cands[r].label)
    return {"index": k + 1, "source": pr["source"], "inputs": pr["batch"].witness(0, ins).to_json(),
            "predictions": {cands[r].label: _hex(v, ins.d) for r, v in outs.items()},
            "separates": sorted(classes.values()) if len(classes) > 1 else []}


def to_json(res: dict, full: bool = False) -> dict:
    ins = isa.lookup(res["instruction"])
    cands = res["candidates"]
    out = {
        "status": res["status"], "instruction": ins.name, "family": res["family"].id,
        "oracle": res["oracle"].describe(), "candidates": len(cands),
        "merged_statically": res["stats"]["merged"], "dropped": res["stats"]["dropped"],
        "queries": len(res["queries"]), "synthesized": res["synthesized"],
        "validation_queries": res["validation"],
        "rechecks": res["rechecks"], "max_queries": res["max_queries"],
        "survivors": [cands[i].label for i in res["alive"]],
        "classes": [[cands[i].label for i in c] for c in res["classes"]],
        "identified": ([cands[i].spec() for i in res["classes"][0]]
                       if res["status"] == "identified" else []),
        "equivalences": res["equivalences"],
        "unknown": [{k: v for k, v in u.items() if k not in ("a", "b")} for u in res["unknown"]],
        "evidence": [_query_json(q, ins) for q in res["queries"]],
        "seconds": round(res["seconds"], 3), "evaluations": res["evaluations"],
        "saved": res["saved"],
        "recorded_checked": res.get("checked", 0),
        "survivors_by_structure": _by_structure([cands[i] for i in res["alive"]]),
        "probes": [_probe_json(k, pr, res, ins) for k, pr in enumerate(res.get("probes", []))],
        "unseparated": res.get("unseparated", []),
    }
    if res["failed"]:
        out["evaluation_errors"] = res["failed"]
    if res["status"] == "none-fits" or full:
        out["ruled_out_by"] = {cands[i].label: q + 1 for i, q in sorted(res["ruled_out"].items())}
    return out


def render(res: dict) -> str:
    d = to_json(res)
    L = [f"family {d['family']} on {d['instruction']}: {d['candidates']} candidates "
         f"({d['merged_statically']} merged statically, {d['dropped']} points do not fit)",
         f"oracle: {d['oracle']['label']} ({d['oracle']['kind']})"]
    for q in d["evidence"]:
        L.append(f"  query {q['index']:>2} {q['source']}: oracle {q['oracle']}: "
                 f"{q['alive_before']} -> {q['alive_after']} alive")
    for e in d["equivalences"]:
        L.append(f"  proved equivalent ({e.get('method', 'monolithic')}, {e['solver']}, {e['seconds']} s): "
                 f"{e['a']} == {e['b']}")
    for u in d["unknown"]:
        L.append(f"  unknown (solver gave no answer: {u['reason']}): {u['labels'][0]} vs {u['labels'][1]}")
    st = d["status"]
    if st == "identified":
        L.append("identified: " + " == ".join(d["classes"][0]))
        for c in d["identified"][:1]:
            L.append(f"  {c['describe']}")
    elif st == "none-fits":
        L.append(f"no candidate of {d['family']} fits the oracle; ruled out by query:")
        by_q: dict[int, list[str]] = {}
        for lab, q in to_json(res, True)["ruled_out_by"].items():
            by_q.setdefault(q, []).append(lab)
        for q, labs in sorted(by_q.items()):
            L.append(f"  query {q}: {len(labs)} candidate(s), e.g. {', '.join(labs[:3])}")
    else:
        L.append(f"{st}: {len(d['classes'])} classes of survivors remain: "
                 + "; ".join(" == ".join(c[:3]) + (" ..." if len(c) > 3 else "") for c in d["classes"][:6])
                 + (" ..." if len(d["classes"]) > 6 else ""))
        for g in d["survivors_by_structure"]:
            L.append(f"  {g['survivors']:>4} survivor(s) {g['structure']}: "
                     + ", ".join(f"{k}={_range(v)}" for k, v in g["params"].items() if len(v) > 1 or k in ("F", "rho")))
    if d["recorded_checked"]:
        L.append(f"every survivor predicts all {d['recorded_checked']} recorded inputs")
    if d["probes"] or d["unseparated"]:
        L.append(f"the recording cannot separate the {len(d['classes'])} classes; "
                 f"{len(d['probes'])} input(s) not recorded would (predictions per class; "
                 f"--probes-out DIR writes them as raw-bit tiles):")
        for pr in d["probes"][:8]:
            outs: dict[str, list[str]] = {}
            for lab, v in pr["predictions"].items():
                outs.setdefault(v, []).append(lab)
            L.append(f"  probe {pr['index']} {pr['source']}: "
                     + "; ".join(f"{v} <- {labs[0]}" + (f" (+{len(labs) - 1})" if len(labs) > 1 else "")
                                 for v, labs in list(outs.items())[:4])
                     + (" ..." if len(outs) > 4 else ""))
        if len(d["probes"]) > 8:
            L.append(f"  ... {len(d['probes']) - 8} more (--json, --probes-out)")
        for g in d["unseparated"]:
            L.append(f"  no input found that separates: " + " / ".join(g[:4]) + (" ..." if len(g) > 4 else ""))
    L.append(f"status: {st}  ({d['queries']} queries: {d['synthesized']} synthesized by the "
             f"solver, {d['validation_queries']} validation; {d['rechecks']} rechecks; "
             f"{d['seconds']:.1f} s)")
    for p in d["saved"]:
        L.append(f"saved: {p}")
    return "\n".join(L)


def write_probes(res: dict, out: "str | Path") -> Path | None:
    """The separating probes of a run (separate) as raw-bit tiles DIR/A.npy, B.npy, C.npy
    (probe t is the dot product in row 0 / column 0 of tile t, other elements +0: the design's
    .npy form, run unchanged by `mmaformal simulate` and `mmaformal hw run`) and
    DIR/manifest.json (per probe: inputs, each surviving class's predicted D[0, 0], the classes
    it separates). Returns DIR's manifest path, or None when there is no probe."""
    if not res.get("probes"):
        return None
    ins = isa.lookup(res["instruction"])
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BadInput(f"--probes-out {out}: exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    batch = Batch.concat([pr["batch"] for pr in res["probes"]])
    A, B, C, SA, SB = batch.tiles(ins)
    arrays = {"A": A, "B": B, "C": C}
    if SA is not None:
        arrays.update(SA=SA, SB=SB)
    for nm, arr in arrays.items():
        np.save(out / f"{nm}.npy", arr)
    d = to_json(res)
    man = {"instruction": ins.name, "family": d["family"], "oracle": d["oracle"],
           "status": d["status"], "survivors": d["survivors"], "classes": d["classes"],
           "layout": "probe t is the dot product in row 0 / column 0 of tile t of A.npy, B.npy, "
                     "C.npy (and SA.npy, SB.npy for block scales); other elements are +0",
           "run": f"run the tiles on a GPU with {ins.name} (`mmaformal hw run {ins.name} --a A.npy "
                  f"--b B.npy --c C.npy --out D.npy` where the hw harness covers the "
                  f"architecture, else any harness that reads these .npy tiles) and write "
                  f"D.npy here; then `mmaformal infer --oracle file:DIR` reads A, B, C, D.npy",
           "source": "mmaformal infer: inputs that separate the classes a recording leaves "
                     "(pool probes and input classes, solver witnesses)",
           "probes": [{"tile": k, **pr} for k, pr in enumerate(d["probes"])]}
    p = out / "manifest.json"
    p.write_text(json.dumps(man, indent=1) + "\n")
    return p


def save(res: dict, root: Path | None = None) -> Path:
    """The queries as a counterexamples/ record (cex's format, kind "infer"): each run is one
    query with the oracle's output; `models` are the identified candidates' specs; replayed
    by tests/test_infer.py (every survivor must reproduce every run)."""
    import datetime as _dt
    from . import cex
    ins = isa.lookup(res["instruction"])
    d = to_json(res)
    rec = {
        "kind": "infer",
        "claim": f"oracle {d['oracle']['label']} on {ins.name}: family {d['family']} -> {d['status']}",
        "formats": {"a": ins.a, "b": ins.b, "c": ins.c, "d": ins.d, "scale": ins.scale or None},
        "family": {"id": res["family"].id, "file": res["family"].file},
        "models": [res["candidates"][i].spec() for i in res["alive"]][:64],
        "oracle": d["oracle"],
        "runs": [{"model": "oracle", "source": q.source, "inputs": q.batch.witness(0, ins).to_json(),
                  "output": _hex(q.answer, ins.d),
                  "hardware": ({"output": _hex(q.answer, ins.d), **d["oracle"].get("device", {})}
                               if d["oracle"]["kind"] == "hw" else None)}
                 for q in res["queries"]],
        "check": "oracle",
        "verdict": {"status": d["status"], "survivors": d["survivors"][:64],
                    "equivalences": d["equivalences"]},
        "tool": {"date": _dt.date.today().isoformat(), "queries": d["queries"],
                 "seconds": d["seconds"]},
    }
    base = (root or cex.store_dir()) / "infer"
    base.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256(json.dumps(rec["runs"], sort_keys=True).encode()).hexdigest()[:10]
    p = base / f"{cex._slug(ins.name + '--' + d['oracle']['label'])}-{h}.json"
    p.write_text(json.dumps(rec, indent=1) + "\n")
    return p


# ============================================================================================
# CLI
# ============================================================================================

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
