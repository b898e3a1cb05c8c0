"""Layer 5, query/cache: the solver-result cache (a store), keyed by the canonical sha256 of
the query text (mmaformal.query.store.sha256: let-binding names normalised).

In memory for every result of the process; on disk (when `root` is set; `prove --save` points
the process-wide `CACHE` at the store's proofs/cache, store.lemma_dir()) only for proved (unsat)
sub-queries, written loose as <root>/<sha256>.smt2 (the query) + <root>/<sha256>.json (status,
solver, version, seconds); ``mmaformal store pack`` later folds them into the packs
proofs/cache/lemmas-<h>.tar.zst (the query a member <sha256>.smt2, the verdict an entry of the
member index.json). Read back through mmaformal.query.store.read_lemma: `root`'s
loose files, the store's and the shipped ones, then their packs (each pack decompressed once
per process). Only unsat results are read back from disk: a stored lemma is re-used, never a
model.

May import: mmaformal.query.model (the solver call), .store, .solvers. Invariant: an entry is
the answer to exactly the text that hashes to its key.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from .model import check
from .solvers import Result
from .store import lemma_dir, lemma_dirs, read_lemma, sha256

__all__ = ["Cache", "CACHE", "CACHE_DIR", "solve_cached"]


class Cache:
    """Solver results keyed by the canonical sha256 of the query text: in memory, and (for
    proved sub-queries, when `root` is set) on disk as root/<sha>.smt2 + root/<sha>.json."""

    def __init__(self, root: Path | None = None):
        self.mem: dict[str, Result] = {}
        self.root = root
        self.hits = 0

    def get(self, sha: str) -> Result | None:
        if sha in self.mem:
            self.hits += 1
            return self.mem[sha]
        if self.root is not None:     # this folder, the store's and the shipped proofs/cache, loose then packed
            r = read_lemma(sha, list(dict.fromkeys([Path(self.root).resolve(), *lemma_dirs()])))
            if r is not None:
                self.mem[sha] = r
                self.hits += 1
                return r
        return None

    def put(self, sha: str, text: str, r: Result, persist: bool = False) -> None:
        if r.status not in ("sat", "unsat"):
            return
        self.mem[sha] = r
        if persist and self.root is not None and r.status == "unsat":
            self.root.mkdir(parents=True, exist_ok=True)
            _write_atomic(self.root / f"{sha}.smt2", text)
            _write_atomic(self.root / f"{sha}.json", json.dumps(
                {"status": "unsat", "verdict": "proved", "solver": r.solver,
                 "solver_version": r.version, "seconds": round(r.seconds, 3),
                 "query": f"{sha}.smt2", "claim": "a lemma of a decomposed proof (the negated "
                 "lemma is this query; unsat proves it)"}, indent=1) + "\n")


def _write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and a rename, so that another worker of a campaign
    reading the same entry never sees it half written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


#: The process-wide cache; `prove --save` points it at the store's proofs/cache
#: (store.lemma_dir()).
CACHE = Cache()


def __getattr__(name: str):
    # CACHE_DIR, the module constant before the store existed (prefer store.lemma_dir())
    if name == "CACHE_DIR":
        return lemma_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def solve_cached(text: str, solver: str, timeout: float | None, persist: bool = False,
                 cache: Cache | None = None) -> tuple[Result, str, bool]:
    """(result, sha256, cached?)."""
    cache = CACHE if cache is None else cache
    h = sha256(text)
    r = cache.get(h)
    if r is not None:
        return r, h, True
    r = check(text, solver, timeout)
    cache.put(h, text, r, persist)
    return r, h, False
