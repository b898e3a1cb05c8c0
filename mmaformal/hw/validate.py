"""Validation campaigns: random dot products of the CLFP classes on the GPU and in `simulate`,
compared bit for bit (NaN bits and signed zeros included). Layer 5 front end (hw).

    mmaformal hw validate INSTR... | --preset P [--tests N] [--classes a,b] [--seed S]
                          [--out DIR] [--sample K] [--workers W] [--shard I/N] [--fast-c]
                          [--tar FILE.tgz]

(the verb's options are defined here, `add_parser`; mmaformal.hw.cli registers it and runs
`prepare`, then `campaigns`). No usable GPU, or an instruction of another architecture than
the GPU's: one line, exit 2, before anything is written. Without --out the campaign is recorded
in the store's counterexamples/hw/<UTC date and time>-validate/ (mmaformal.paths).

One campaign path for every runnable form: the layout self-check runs first (a failure stops
the campaign); then for each input class, tiles are generated (mmaformal.classes; `draw`), run
on the GPU (mmaformal.hw.runner.run) and in mmaformal.simulate, and compared. Mismatching dot
products are saved as counterexamples with the hardware output and the device, driver, nvcc
and date; a SHA-256 of every class's hardware D (`replay_digest` regenerates the inputs from the
seed and compares) and a sample of every class (inputs and hardware outputs) are saved so the
tests can replay them without a GPU. Sparse wgmma forms differ only in data: their tiles carry
kept positions (every other tile with a pattern per row), the run takes the metadata map
(``layout``), the rivals run on the first chunk only and the sample is an 8 x 8 block.

May import: numpy, mmaformal.classes, mmaformal.isa, mmaformal.hw.forms / runner / check / sparse,
mmaformal.simulate and mmaformal.theory (inside the functions).
Invariant: what is recorded is what was run and seen; nothing is written for a class whose
GPU run did not complete.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from .. import classes as C
from .. import isa
from ..args import positive_int, shard
from . import sparse
from .forms import instructions, spec

__all__ = ["campaign", "campaigns", "add_parser", "prepare", "supported", "PRESETS", "draw",
           "rivals", "replay_digest", "replay_sample", "SAMPLE_ROWS", "SAMPLE_COLS"]

#: The sm90 instruction set of the Hopper validation (issue 5): mma.sync and wgmma.
PRESETS = {
    "sm90": [
        "sm90/mma.m16n8k16.f32.f16.f16.f32", "sm90/mma.m16n8k16.f32.bf16.bf16.f32",
        "sm90/mma.m16n8k8.f32.f16.f16.f32", "sm90/mma.m16n8k8.f32.bf16.bf16.f32",
        "sm90/mma.m16n8k16.f16.f16.f16.f16", "sm90/mma.m16n8k8.f32.tf32.tf32.f32",
        "sm90/mma.m16n8k4.f32.tf32.tf32.f32", "sm90/mma.m16n8k32.f32.e4m3.e4m3.f32",
        "sm90/mma.m16n8k32.f32.e5m2.e5m2.f32", "sm90/mma.m8n8k4.f64.f64.f64.f64",
        "sm90/mma.m16n8k4.f64.f64.f64.f64", "sm90/mma.m16n8k8.f64.f64.f64.f64",
        "sm90/mma.m16n8k16.f64.f64.f64.f64",
    ] + [f"sm90/wgmma.m64n{n}k{k}.{t}" for n in (8, 256) for k, t in (
        (16, "f32.f16.f16"), (16, "f16.f16.f16"), (16, "f32.bf16.bf16"), (8, "f32.tf32.tf32"),
        (32, "f32.e4m3.e4m3"), (32, "f32.e5m2.e5m2"))],
}


#: The sm90 forms added in issue 14 (from the catalog): f16 mma.m8n8k4 (compiler-emulated),
#: integer mma and integer wgmma (N = 8 and 224), dense.
PRESETS["sm90-m8n8k4"] = [n for n in instructions(None, "sm90", family="mma")
                          if spec(n).shape == "m8n8k4" and spec(n).atype == "f16"]
PRESETS["sm90-int"] = [n for n in instructions((8, 224), "sm90")
                       if spec(n).family in ("mma", "wgmma") and spec(n).integer
                       and not spec(n).sparse]

#: rows and columns of tile 0 kept whole in a sparse wgmma record (8 x 8 dot products a class)
SAMPLE_ROWS = np.arange(0, 64, 9)[:8]   # 0, 9, ..., 63: every warp, both row halves
SAMPLE_COLS = 8


def _hex(v) -> str:
    return hex(int(v))


def _progress(msg: str) -> None:
    sys.stderr.write("\r" + msg[:120].ljust(120))
    sys.stderr.flush()


def _sparse_wgmma(name: str) -> bool:
    s = spec(name)
    return s.family == "wgmma" and bool(s.sparse)


def _dense_tiles(klass, ins, T, rng, fast_c: bool = False):
    """Tiles of one class. ``fast_c``: draw T*M accumulators (one generate call as large as
    A's) and place them at random in the T x M x N C tiles instead of drawing T*M*N (whose
    call also draws T*M*N x K unused products: the cost of K = 128/256 integer forms)."""
    M, N, K = ins.m, ins.n, ins.k
    a, _, _ = C.generate(klass, ins.a, ins.b, ins.c, K, T * M, rng)
    _, b, _ = C.generate(klass, ins.a, ins.b, ins.c, K, T * N, rng)
    A = a.reshape(T, M, K)
    B = np.ascontiguousarray(b.reshape(T, N, K).transpose(0, 2, 1))
    if fast_c:
        _, _, c = C.generate(klass, ins.a, ins.b, ins.c, K, T * M, rng)
        Cm = c[rng.integers(0, T * M, size=(T, M, N))]
    else:
        _, _, c = C.generate(klass, ins.a, ins.b, ins.c, K, T * M * N, rng)
        Cm = c.reshape(T, M, N)
    return A, B, Cm


def _sparse_wgmma_tiles(klass: str, ins, T: int, rng: np.random.Generator):
    """(A compressed (T, 64, K/2), pos (T, 64, K/2), B (T, K, N), C (T, 64, N)) of one class.

    Per tile one random base pattern; the kept B rows (of that pattern) and A are drawn from
    the class with depth K/2 (so "cancel" cancels over the terms the instruction multiplies),
    the dropped B rows from the class too. Odd tiles give every row its own random pattern
    (the metadata layout at work; the class's pairing of A and B terms holds on even tiles).
    C: T*64/4 accumulators of the class placed at random in the tiles (as `fast_c`, a quarter
    of the pool: the class's accumulators cost as much to draw as its rows)."""
    M, N, K = ins.m, ins.n, ins.k
    kh = K // 2
    a, _, _ = C.generate(klass, ins.a, ins.b, ins.c, kh, T * M, rng)
    _, b, _ = C.generate(klass, ins.a, ins.b, ins.c, kh, T * N, rng)
    _, bu, _ = C.generate(klass, ins.a, ins.b, ins.c, kh, T * N, rng)
    _, _, c = C.generate(klass, ins.a, ins.b, ins.c, kh, max(1, T * M // 4), rng)
    base = sparse.random_kept(ins.a, K, (T,), rng)                     # (T, K/2)
    g, kept, _ = sparse.group(ins.a)
    sel = (np.arange(kh) // kept * g)[None, :] + base.astype(np.int64)  # dense k of kept slots
    keep = np.zeros((T, K), bool)
    np.put_along_axis(keep, sel, True, axis=1)
    B = np.empty((T, K, N), b.dtype)
    B[np.repeat(np.arange(T), kh), sel.reshape(-1)] = \
        b.reshape(T, N, kh).transpose(0, 2, 1).reshape(T * kh, N)
    B[np.nonzero(~keep)] = bu.reshape(T, N, kh).transpose(0, 2, 1).reshape(T * kh, N)
    pos = np.repeat(base[:, None, :], M, axis=1)
    odd = np.arange(T) % 2 == 1
    pos[odd] = sparse.random_kept(ins.a, K, (int(odd.sum()), M), rng)
    Cm = c[rng.integers(0, len(c), size=(T, M, N))]
    return a.reshape(T, M, kh), pos, B, Cm


def draw(klass: str, name: str, T: int, rng: np.random.Generator, fast_c: bool = False):
    """(A, kept positions or None, B, C) of T tiles of one class: the campaign's inputs (sparse
    wgmma: compressed A and its positions, see `_sparse_wgmma_tiles`)."""
    ins = isa.lookup(name)
    if _sparse_wgmma(ins.name):
        return _sparse_wgmma_tiles(klass, ins, T, rng)
    A, B, Cm = _dense_tiles(klass, ins, T, rng, fast_c)
    return A, None, B, Cm


def _sim_parallel(simulate, name, A, B, Cm, workers, meta=None):
    """simulate() on all cores: it threads over tile chunks itself (MMAFORMAL_THREADS);
    ``simulate`` may be a closure that names a theory."""
    import os
    os.environ["MMAFORMAL_THREADS"] = str(workers)
    sm = sys.modules["mmaformal.simulate"]
    sm.COMPILE_MIN = 0                      # campaigns are large: always the compiled path
    kw = {} if meta is None else {"meta": meta}
    return simulate(name, A, B, Cm, chunk=max(1 << 14, A.shape[0] * A.shape[1] * Cm.shape[-1]
                                               // (4 * workers)), **kw)


def rivals(name: str, primary) -> list:
    """The evaluable rival theories of the primary that claim this instruction."""
    from .. import theory as _theory
    out = []
    for tid in primary.competes_with:
        try:
            t = _theory.default().resolve(name, tid)
        except Exception:  # noqa: BLE001  (the rival claims other instructions only)
            continue
        if t.evaluable[0]:
            out.append(t)
    return out


def _cex(klass, A, P, B, Cm, D, Ds, t, i, j) -> dict:
    out = {"class": klass, "a": [_hex(x) for x in A[t, i]]}
    if P is not None:
        out["meta"] = [int(x) for x in P[t, i]]
    return out | {"b": [_hex(x) for x in B[t, :, j]], "c": _hex(Cm[t, i, j]),
                  "hardware": _hex(D[t, i, j]), "simulated": _hex(Ds[t, i, j])}


class _Campaign:
    """The state of one campaign: the record being written, its counterexamples and samples,
    and the per-chunk steps (`chunk`)."""

    def __init__(self, name, tests, seed, opts: dict):
        from .. import theory as _theory
        from . import runner
        self.name, self.o = name, opts
        self.s = spec(name)
        self.dpt = self.s.m * self.s.n
        prim = _theory.resolve(name)
        self.rivs = rivals(name, prim) if opts["rivals"] else []
        self.res = {"instruction": name, "tests": 0, "tests_asked": tests, "mismatches": 0,
                    "classes": {}, "device": runner.device_info(),
                    "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                    "seed": seed, "theory": prim.id, "theory_hash": prim.hash(),
                    "layout_selfcheck": opts["selfcheck"], "chunk_dots": opts["chunk_dots"],
                    "fast_c": opts["fast_c"],
                    "rivals": {t.id: {"status": t.status, "tests": 0, "mismatches": 0,
                                      "classes": {}, "counterexamples": []} for t in self.rivs}}
        if opts["layout_source"]:
            self.res |= {"metadata_layout": opts["layout_source"],
                         "generator": "mmaformal.hw.validate.draw"}
        self.cex, self.samples = [], {}
        self.t = {"generate": 0.0, "gpu": 0.0, "simulate": 0.0}

    def chunk(self, klass, T, rng, nchunk, h) -> int:
        """One chunk of T tiles: draw, run, simulate, compare; returns its mismatch count."""
        from ..simulate import simulate
        from . import runner
        o, w = self.o, self.o["workers"]
        t0 = time.perf_counter()
        A, P, B, Cm = draw(klass, self.name, T, rng, o["fast_c"])
        t1 = time.perf_counter()
        D = runner.run(self.name, A, B, Cm, meta=P, layout=o["layout"], rng=rng)
        t2 = time.perf_counter()
        Ds = _sim_parallel(simulate, self.name, A, B, Cm, w, P)
        h.update(np.ascontiguousarray(D).tobytes())
        if o["rival_chunks"] is None or nchunk < o["rival_chunks"]:
            self.rivals(klass, A, P, B, Cm, D, w)
        self.t["generate"] += t1 - t0
        self.t["gpu"] += t2 - t1
        self.t["simulate"] += time.perf_counter() - t2
        bad = np.nonzero(D != Ds)
        room = max(0, o["max_cex"] - sum(x["class"] == klass for x in self.cex))
        self.cex += [_cex(klass, A, P, B, Cm, D, Ds, *x) for x in list(zip(*bad))[:room]]
        if klass not in self.samples:
            self.keep_sample(klass, A, P, B, Cm, D, T)
        return len(bad[0])

    def rivals(self, klass, A, P, B, Cm, D, workers) -> None:
        """The same hardware outputs (the first rival_dots of them) against each rival."""
        from ..simulate import simulate
        rt = A.shape[0] if self.o["rival_dots"] is None else max(1, self.o["rival_dots"] // self.dpt)
        for th in self.rivs:
            rv = self.res["rivals"][th.id]
            Dr = _sim_parallel(lambda *x, **k: simulate(*x, theory=th, **k), self.name, A[:rt],
                               B[:rt], Cm[:rt], workers, None if P is None else P[:rt])
            rb = np.nonzero(D[:rt] != Dr)
            rv["tests"] += int(Dr.size)
            rv["mismatches"] += len(rb[0])
            rv["classes"][klass] = rv["classes"].get(klass, 0) + len(rb[0])
            room = max(0, self.o["rival_cex"] - sum(x["class"] == klass
                                                      for x in rv["counterexamples"]))
            rv["counterexamples"] += [_cex(klass, A, P, B, Cm, D, Dr, *x)
                                      for x in list(zip(*rb))[:room]]

    def keep_sample(self, klass, A, P, B, Cm, D, T) -> None:
        blk = self.o["sample_block"]
        if blk is not None:                       # rows of tile 0, its first columns
            r, cols = np.asarray(blk[0]), np.arange(int(blk[1]))
            kept = {"a": A[0, r].copy()} | ({} if P is None else {"meta": P[0, r].copy()})
            kept |= {"b": B[0, :, :len(cols)].copy(),
                     "c": Cm[0][np.ix_(r, cols)], "d": D[0][np.ix_(r, cols)]}
        else:                                     # whole tiles
            k = max(1, min(T, -(-self.o["sample"] // self.dpt)))
            kept = {"a": A[:k].copy(), "b": B[:k].copy(), "c": Cm[:k].copy(), "d": D[:k].copy()}
        self.samples[klass] = kept

    def finish(self, out_dir) -> dict:
        res, t = self.res, self.t
        res["seconds"] = {"generate": round(t["generate"], 2), "gpu": round(t["gpu"], 3),
                          "simulate": round(t["simulate"], 2)}
        res["rates"] = {"gpu_dots_per_s": round(res["tests"] / max(t["gpu"], 1e-9)),
                        "simulate_dots_per_s": round(res["tests"] / max(t["simulate"], 1e-9)),
                        "simulate_workers": self.o["workers"]}
        res["counterexamples"] = self.cex
        if out_dir is not None:
            out_dir = Path(out_dir)
            out_dir.mkdir(parents=True, exist_ok=True)
            stem = self.name.replace("/", "_")
            (out_dir / f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n")
            arrays = {f"{k}.{r}": v for k, kept in self.samples.items() for r, v in kept.items()}
            np.savez_compressed(out_dir / f"{stem}.npz", **arrays)
        return res


def campaign(name: str, tests: int, klasses=None, seed: int = 0, out_dir: Path | None = None,
             sample: int = 512, chunk_dots: int = 1 << 21, workers: int = 0, max_cex: int = 20,
             rivals: bool = True, fast_c: bool = False, sample_block=None, *,
             layout: np.ndarray | None = None, layout_source: str = "declared") -> dict:
    """>= ``tests`` dot products of every class (``klasses``, default all) on the GPU and in
    ``simulate`` (primary theory, and the evaluable rivals), compared bit for bit; writes
    <name>.json (counts, digests, counterexamples) and <name>.npz (the samples) into
    ``out_dir``. ``sample_block`` = (rows, ncols): keep of each class only those rows of tile 0
    and its first ncols columns (2-D arrays; `replay_sample` replays them) instead of whole
    tiles (the records of the large-N forms stay small). Sparse wgmma forms: ``layout`` is the
    metadata map (default the declared one; ``layout_source`` says where it came from), the
    sample block defaults to SAMPLE_ROWS x SAMPLE_COLS and the rivals see the first 2^17 dots
    of each class."""
    ins = isa.lookup(name)
    name = ins.name
    from . import check
    sp = _sparse_wgmma(name)
    if sp and layout is None:
        layout = sparse.DECLARED[ins.a]
    ok, msg = check.layout_selfcheck(name, layout=layout) if sp else check.layout_selfcheck(name)
    if not ok:
        raise RuntimeError(f"{name}: layout self-check failed, campaign stopped: {msg}")
    klasses = list(klasses or C.CLASSES)
    opts = {"selfcheck": msg, "chunk_dots": chunk_dots, "fast_c": fast_c, "rivals": rivals,
            "workers": workers or max(1, min(16, __import__("os").cpu_count() or 1)),
            "layout": layout, "layout_source": layout_source if sp else "",
            "rival_chunks": 1 if sp else None, "rival_dots": 1 << 17 if sp else None,
            "rival_cex": 3 if sp else 5, "max_cex": max_cex, "sample": sample,
            "sample_block": (SAMPLE_ROWS, SAMPLE_COLS) if sp and sample_block is None
            else sample_block}
    run = _Campaign(name, tests, seed, opts)
    rng = np.random.default_rng(seed)
    per_class = -(-tests // len(klasses))
    for klass in klasses:
        done = mism = nchunk = 0
        h = hashlib.sha256()
        while done < per_class:
            T = max(1, min(per_class - done, chunk_dots) // run.dpt)
            mism += run.chunk(klass, T, rng, nchunk, h)
            done += T * run.dpt
            nchunk += 1
        _progress(f"{name} {klass}: {done:,} dots, {mism} mismatches")
        run.res["classes"][klass] = {"tests": done, "mismatches": int(mism),
                                     "sha256": h.hexdigest()}
        run.res["tests"] += done
        run.res["mismatches"] += int(mism)
    sys.stderr.write("\n")
    return run.finish(out_dir)


def replay_digest(rec: dict, theory=None, klasses=None) -> dict:
    """Regenerate a campaign's inputs from its seed (the same calls to the same generator as
    :func:`campaign`, the sparse wgmma filler words included) and compare the SHA-256 of
    ``simulate``'s D with the hardware's: {class: digest equal}. Equal digests = every dot
    product agrees."""
    from ..simulate import simulate
    name = rec["instruction"]
    s = spec(name)
    sp = _sparse_wgmma(name)
    rng = np.random.default_rng(rec["seed"])
    names_ = list(rec["classes"])
    per_class = -(-rec["tests_asked"] // len(names_))
    out = {}
    for klass in names_:
        done = 0
        h = hashlib.sha256()
        while done < per_class:
            T = max(1, min(per_class - done, rec["chunk_dots"]) // (s.m * s.n))
            A, P, B, Cm = draw(klass, name, T, rng, rec.get("fast_c", False))
            if sp:
                sparse.random_words((T, 128), s.atype, rng)     # the filler words of run()
            if klasses is None or klass in klasses:
                kw = {} if P is None else {"meta": P}
                h.update(np.ascontiguousarray(simulate(name, A, B, Cm, theory=theory, **kw))
                         .tobytes())
            done += T * s.m * s.n
        if klasses is None or klass in klasses:
            out[klass] = h.hexdigest() == rec["classes"][klass]["sha256"]
    return out


def replay_sample(name: str, z, klass: str, theory=None) -> tuple[np.ndarray, np.ndarray]:
    """(simulated, hardware) D of a record's kept sample block (rows of tile 0 and the first
    columns of B; sparse forms with their kept positions): the block is put in rows 0.. and
    columns 0.. of one tile, zeros elsewhere, and simulated."""
    from ..simulate import simulate
    ins = isa.lookup(name)
    a, b, c, d = (z[f"{klass}.{x}"] for x in ("a", "b", "c", "d"))
    r, nc = a.shape[0], b.shape[1]
    A = np.zeros((1, ins.m, a.shape[1]), a.dtype)
    A[0, :r] = a
    B = np.zeros((1, ins.k, ins.n), b.dtype)
    B[0, :, :nc] = b
    Cm = np.zeros((1, ins.m, ins.n), c.dtype)
    Cm[0, :r, :nc] = c
    P = None
    if ins.sparse:
        p = z[f"{klass}.meta"]
        P = np.broadcast_to(p[:1], (ins.m, p.shape[1])).copy()[None]
        P[0, :r] = p
    D = simulate(name, A, B, Cm, meta=P, theory=theory)
    return D[0, :r, :nc], d


def supported(name: str) -> str:
    """The catalog name of an instruction this harness runs (any architecture it targets),
    else ValueError (one line naming why)."""
    return spec(name).name


def _classes(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",")]
    for x in names:
        if x not in C.CLASSES:
            raise argparse.ArgumentTypeError(f"unknown input class {x!r}; expected a comma-"
                                             f"separated list of {', '.join(C.CLASSES)}")
    return names


def add_parser(subparsers) -> argparse.ArgumentParser:
    """`mmaformal hw validate` (subparsers: the hw sub-verbs)."""
    p = subparsers.add_parser("validate", help="random CLFP-class tests on the GPU against the theories",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("instr", nargs="*", metavar="INSTR", help="instructions of the GPU's architecture")
    p.add_argument("--preset", choices=sorted(PRESETS), action="append", default=[],
                   help="a named instruction set (repeatable)")
    p.add_argument("--tests", type=positive_int, default=1_000_000, metavar="N",
                   help="dot products per instruction, spread over the classes")
    p.add_argument("--classes", type=_classes, default=None,
                   help=f"comma-separated input classes (default: all: {','.join(C.CLASSES)})")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="where to record the campaign (default: the "
                   "store's counterexamples/hw/<UTC date and time>-validate/; see --store)")
    p.add_argument("--sample", type=positive_int, default=512, metavar="K",
                   help="dot products of each class kept whole (inputs and hardware outputs)")
    p.add_argument("--workers", type=int, default=0, metavar="W",
                   help="simulate threads (default 0: the CPUs, at most 16)")
    p.add_argument("--shard", type=shard, default=(0, 1), metavar="I/N",
                   help="run every N-th instruction from the I-th")
    p.add_argument("--fast-c", action="store_true", help="T*M accumulators placed at random "
                   "(see _dense_tiles); needed for K = 128/256 integer forms within a device "
                   "session")
    p.add_argument("--tar", type=Path, metavar="FILE.tgz",
                   help="after each instruction, pack --out into this .tgz")
    return p


def prepare(args) -> list[str]:
    """The instructions `mmaformal hw validate` runs (named, presets, --shard), once the options
    are checked and a GPU of their architecture is found; --out defaulted to the store's
    counterexamples/hw/<UTC date and time>-validate/."""
    from . import runner
    names = [supported(n) for n in args.instr] + [n for p in args.preset for n in PRESETS[p]]
    si, sn = args.shard
    names = names[si::sn]
    if not names:
        raise ValueError("hw validate: name instructions or --preset")
    if args.workers < 0:
        raise ValueError(f"hw validate: --workers {args.workers}: give 0 (the CPUs) or a count")
    runner.need_gpu(names)
    if not args.out:
        from .. import paths
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d-%H%M%S")
        args.out = paths.store("counterexamples") / "hw" / f"{stamp}-validate"
    return names


def campaigns(names: list[str], a) -> int:
    """`campaign` of each instruction with the verb's options `a`, one table row each; exit 1
    on a mismatch, 2 when a campaign failed to run."""
    rc = 0
    klasses = a.classes or list(C.CLASSES)
    print(f"{'instruction':44s} {'tests':>11s} {'mismatch':>9s} {'gpu dots/s':>12s} {'sim dots/s':>12s}")
    for name in names:
        try:
            r = campaign(name, a.tests, klasses, a.seed, a.out, a.sample,
                         workers=a.workers, fast_c=a.fast_c)
        except Exception as e:  # keep going: one broken instruction must not hide the others
            print(f"{name:44s} ERROR {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
            rc |= 2
            continue
        print(f"{r['instruction']:44s} {r['tests']:11,d} {r['mismatches']:9,d} "
              f"{r['rates']['gpu_dots_per_s']:12,d} {r['rates']['simulate_dots_per_s']:12,d}"
              f"  {r['theory']}", flush=True)
        for tid, rv in r.get("rivals", {}).items():
            print(f"    rival {tid}: {rv['mismatches']:,} of {rv['tests']:,}", flush=True)
        for k, v in r["classes"].items():
            if v["mismatches"]:
                print(f"    {k:10s} {v['mismatches']:,} of {v['tests']:,}")
        rc |= int(r["mismatches"] > 0)
        if a.tar and a.out:
            import tarfile
            with tarfile.open(a.tar, "w:gz") as tf:
                tf.add(a.out, arcname=Path(a.out).name)
    return rc
