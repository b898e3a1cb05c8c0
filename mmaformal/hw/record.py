"""Hardware campaigns recorded by digest, decided later on the CPU (layer 5 front end, ``hw``).

For instructions whose theory is not yet available where the GPU runs (the sparse ``mma.sp``
forms of issue 14 arrived on the CPU side after the device session), a campaign can record
what the silicon returned without a simulator: the inputs are generated from a seed by a fixed
procedure (:func:`sparse_tiles`, the CLFP classes of :mod:`mmaformal.classes`), the hardware D
of every chunk goes into a SHA-256 digest per class, and the first tiles of each class are kept
whole. :func:`replay` regenerates the same inputs on any machine, runs a theory through
``simulate`` and compares digests (equal digests = every one of the 10^7 outputs agrees) and
the kept tiles (which also localise a disagreement).

Sparse inputs: per tile one random kept-position pattern (shared by the rows: the harness's
warp-uniform metadata), compressed A (M x K/2) and the kept B rows drawn from the class with
depth K/2 (so "cancel" cancels over the terms the instruction multiplies), the other B rows
drawn from the same class too (Inf/NaN there shows whether the hardware multiplies dropped
positions by zero).

Command line (options defined here, `add_parser`): ``mmaformal hw record INSTR... |
--sparse-preset --out DIR [--probe]`` on the GPU, ``mmaformal hw record --replay REC... --out
DIR [--primary-only]`` on the CPU.

May import: numpy, mmaformal.classes, mmaformal.hw.forms / sparse / check / runner (GPU side only in
:func:`record`), mmaformal.hw.campaigns (the records to replay). Invariant: the digest is of
the raw D bits exactly as returned.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import time
from pathlib import Path

import numpy as np

from .. import classes as C
from . import sparse
from .forms import instructions, spec

__all__ = ["sparse_tiles", "record", "replay", "CHUNK_TILES"]

#: tiles per generated chunk (fixed: the digest and the rng stream depend on it)
CHUNK_TILES = 8192


def sparse_tiles(klass: str, name: str, T: int, rng: np.random.Generator):
    """(A compressed (T, M, K/2), meta (T, M, K/2) kept positions, B (T, K, N), C (T, M, N))."""
    s = spec(name)
    M, N, K = s.m, s.n, s.k
    kh = K // 2
    a, _, _ = C.generate(klass, s.atype, s.btype, s.ctype, kh, T * M, rng)
    _, b, _ = C.generate(klass, s.atype, s.btype, s.ctype, kh, T * N, rng)
    _, bu, _ = C.generate(klass, s.atype, s.btype, s.ctype, kh, T * N, rng)
    _, _, c = C.generate(klass, s.atype, s.btype, s.ctype, kh, T * M * N, rng)
    pos = sparse.random_pos(s.atype, K, T, rng)                       # (T, K/2)
    g, kept, _ = sparse.group(s.atype)
    grp = np.arange(kh) // kept * g                                    # group start of each kept
    sel = grp[None, :] + pos.astype(np.int64)                          # dense k of kept slots
    B = np.empty((T, K, N), b.dtype)
    keep = np.zeros((T, K), bool)
    np.put_along_axis(keep, sel, True, axis=1)
    B[np.repeat(np.arange(T), kh), sel.reshape(-1)] = \
        b.reshape(T, N, kh).transpose(0, 2, 1).reshape(T * kh, N)
    drop = np.nonzero(~keep)
    B[drop] = bu.reshape(T, N, kh).transpose(0, 2, 1).reshape(T * kh, N)
    meta = np.broadcast_to(pos[:, None, :], (T, M, kh)).copy()
    return a.reshape(T, M, kh), meta, B, c.reshape(T, M, N)


def _chunks(name: str, tests: int, klasses, seed: int):
    s = spec(name)
    per_class = -(-tests // len(klasses))
    tiles = -(-per_class // (s.m * s.n))
    rng = np.random.default_rng(seed)
    for klass in klasses:
        done = 0
        while done < tiles:
            T = min(CHUNK_TILES, tiles - done)
            yield klass, done, sparse_tiles(klass, name, T, rng)
            done += T


def record(name: str, tests: int, seed: int, out_dir: Path, klasses=C.CLASSES,
           keep_tiles: int = 64) -> dict:
    """Run the campaign on the GPU; write <name>.json (digests) and <name>.npz (kept tiles)."""
    from . import check, runner
    ok, msg = check.layout_selfcheck(name)
    if not ok:
        raise RuntimeError(f"{name}: layout self-check failed, campaign stopped: {msg}")
    res = {"instruction": name, "kind": "digest", "tests": 0, "seed": seed,
           "chunk_tiles": CHUNK_TILES, "classes": {}, "device": runner.device_info(),
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "layout_selfcheck": msg, "generator": "mmaformal.hw.record.sparse_tiles"}
    digests, kept = {}, {}
    t0 = time.perf_counter()
    t_gpu = 0.0
    for klass, done, (A, meta, B, Cm) in _chunks(name, tests, klasses, seed):
        t1 = time.perf_counter()
        D = runner.run(name, A, B, Cm, meta=meta)
        t_gpu += time.perf_counter() - t1
        digests.setdefault(klass, hashlib.sha256()).update(np.ascontiguousarray(D).tobytes())
        n = res["classes"].setdefault(klass, {"tests": 0})
        n["tests"] += D.size
        res["tests"] += D.size
        if done == 0:
            k = min(keep_tiles, len(A))
            kept.update({f"{klass}.a": A[:k], f"{klass}.meta": meta[:k, 0], f"{klass}.b": B[:k],
                         f"{klass}.c": Cm[:k], f"{klass}.d": D[:k]})
    for klass, h in digests.items():
        res["classes"][klass]["sha256"] = h.hexdigest()
    res["seconds"] = {"total": round(time.perf_counter() - t0, 2), "gpu": round(t_gpu, 3)}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = name.replace("/", "_")
    (out_dir / f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n")
    np.savez_compressed(out_dir / f"{stem}.npz", **kept)
    return res


def replay(rec: dict, simulate_fn, klasses=None) -> dict:
    """Regenerate the record's inputs and compare ``simulate_fn(A, meta, B, C) -> D`` with it:
    {class: (digest equal, tests)}; simulate_fn gets the compressed A and its positions."""
    name, seed = rec["instruction"], rec["seed"]
    if rec.get("chunk_tiles") != CHUNK_TILES:
        raise ValueError(f"{name}: recorded with {rec.get('chunk_tiles')} tiles per chunk")
    klasses = klasses or list(rec["classes"])
    digests = {}
    for klass, _, (A, meta, B, Cm) in _chunks(name, rec["tests"], list(rec["classes"]), seed):
        if klass not in klasses:
            continue
        D = simulate_fn(A, meta, B, Cm)
        digests.setdefault(klass, hashlib.sha256()).update(np.ascontiguousarray(D).tobytes())
    return {k: (h.hexdigest() == rec["classes"][k]["sha256"], rec["classes"][k]["tests"])
            for k, h in digests.items()}


def theory_fn(name: str, tid: str | None = None):
    """simulate_fn for :func:`replay`: the named (or primary) theory through ``simulate`` with
    the compressed A and its positions, unchanged (the harness's positions are the
    mmaformal.sparse contract, s4/u4 aligned pairs included)."""
    import os
    from ..simulate import simulate
    os.environ.setdefault("MMAFORMAL_THREADS", str(os.cpu_count() or 1))

    def fn(A, meta, B, Cm):
        return simulate(name, A, B, Cm, meta=meta, theory=tid)
    return fn


def replay_dir(paths, out: Path, primary_only: bool = False) -> dict:
    """Replay digest records (campaigns.Record, or paths for ``campaigns.records_at``) against
    every evaluable theory of their instruction (primary and rivals): {instruction: {theory
    id: {class: digest equal}}}, written to ``out``."""
    from .. import theory as _theory
    from .campaigns import records_at
    res = {}
    for r in [r for p in paths for r in ([p] if hasattr(p, "data") else records_at(p))]:
        rec = r.data
        name = rec["instruction"]
        prim = _theory.resolve(name)
        tids = [prim.id] + ([] if primary_only else
                            [t for t in prim.competes_with if name in _safe_claims(_theory, t, name)])
        res[name] = {"tests": rec["tests"], "theories": {}}
        for tid in tids:
            t0 = time.perf_counter()
            v = replay(rec, theory_fn(name, tid))
            res[name]["theories"][tid] = {k: ok for k, (ok, _) in v.items()}
            print(name, tid, all(v_[0] for v_ in v.values()), round(time.perf_counter() - t0, 1),
                  flush=True)
        Path(out).write_text(json.dumps(res, indent=1) + "\n")
    return res


def _safe_claims(_theory, tid: str, name: str) -> list:
    try:
        _theory.default().resolve(name, tid)
        return [name]
    except Exception:  # noqa: BLE001  (the rival does not claim this instruction)
        return []


def dropped_probe(name: str) -> dict:
    """Does the hardware multiply the dropped (non-selected) positions? A keeps 1.0 in every
    kept slot, the kept B rows are 1.0 and the dropped B rows +Inf (then NaN); C = 0. If only
    the K/2 selected products enter the sum, D = K/2 exactly; if all K enter with zeros in the
    dropped A slots, 0 * Inf gives NaN. Returns {probe: sorted distinct D bit patterns (hex)}."""
    from .. import fp
    from . import check, runner
    s = spec(name)
    if s.integer:
        raise ValueError(f"{name}: integer forms have no Inf/NaN to probe with")
    f = fp.fmt(s.btype)
    one_a, one_b = check.encode_ints([1], s.atype)[0], check.encode_ints([1], s.btype)[0]
    kh = s.k // 2
    T = 4
    rng = np.random.default_rng(0)
    pos = sparse.random_pos(s.atype, s.k, T, rng)
    meta = np.broadcast_to(pos[:, None, :], (T, s.m, kh)).copy()
    A = np.full((T, s.m, kh), one_a, s.storage("a"))
    g, kept, _ = sparse.group(s.atype)
    sel = (np.arange(kh) // kept * g)[None, :] + pos.astype(np.int64)
    keep = np.zeros((T, s.k), bool)
    np.put_along_axis(keep, sel, True, axis=1)
    Cm = np.zeros((T, s.m, s.n), s.storage("c"))
    out = {}
    specials = {"nan": fp.default_nan(f)}
    if f.inf:
        specials["inf"] = f.inf_code << f.pad
    for what, code in specials.items():
        B = np.where(keep[:, :, None], one_b, s.storage("b").type(code)).astype(s.storage("b"))
        B = np.broadcast_to(B, (T, s.k, s.n)).copy()
        D = runner.run(name, A, B, Cm, meta=meta)
        out[f"dropped_b_{what}"] = sorted({hex(int(x)) for x in D.reshape(-1)})
    out["want_if_selected_only"] = f"K/2 = {kh} in {s.dtype}"
    return out


def add_parser(subparsers):
    """`mmaformal hw record` (subparsers: the hw sub-verbs)."""
    from ..args import positive_int, shard
    p = subparsers.add_parser("record", help="GPU campaigns recorded by digest (no simulator); "
                              "--replay decides them on the CPU",
                              description="Hardware campaigns recorded by digest: generated "
                              "inputs, a SHA-256 digest of the GPU's D per class, the first "
                              "tiles kept whole; --replay regenerates the inputs on any machine "
                              "and compares a theory's digests.")
    p.add_argument("instructions", nargs="*", metavar="INSTR")
    p.add_argument("--sparse-preset", action="store_true", help="every sm90 mma.sp form")
    p.add_argument("--tests", type=positive_int, default=10_000_000, metavar="N")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, metavar="DIR")
    p.add_argument("--tar", type=Path, metavar="FILE.tgz", help="after each instruction, pack "
                   "--out into this .tgz")
    p.add_argument("--shard", type=shard, default=(0, 1), metavar="I/N",
                   help="run every N-th instruction (or record) from the I-th")
    p.add_argument("--keep-tiles", type=positive_int, default=32, metavar="T",
                   help="tiles of each class kept whole")
    p.add_argument("--probe", action="store_true", help="only the dropped-position probe")
    p.add_argument("--replay", nargs="*", type=Path, metavar="REC", help="digest records to "
                   "replay on the CPU (record files, or campaigns: a folder or pack of "
                   "counterexamples/hw); the verdicts go to --out")
    p.add_argument("--primary-only", action="store_true", help="replay: the primary theory only")
    return p


def run(a) -> int:
    """Record (on the GPU: no usable GPU is one line, exit 2) or --replay (on the CPU)."""
    if a.replay:
        from .campaigns import records_at
        si, sn = a.shard
        try:
            recs = [r for p in sorted(a.replay) for r in records_at(p)]
        except ValueError as e:
            raise ValueError(f"hw record --replay: {e}") from None
        replay_dir(recs[si::sn], a.out, a.primary_only)
        return 0
    names = list(a.instructions)
    if a.sparse_preset:
        names += [n for n in instructions(None, "sm90", family="mma") if spec(n).sparse]
    if not names:
        raise ValueError("hw record: name instructions, --sparse-preset or --replay REC...")
    si, sn = a.shard
    names = names[si::sn]
    from . import runner
    runner.need_gpu(names)
    rc = 0
    if a.probe:
        probes = {}
        for name in names:
            if spec(name).integer:
                continue
            try:
                probes[name] = dropped_probe(name)
            except Exception as e:  # noqa: BLE001
                probes[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
            print(name, probes[name], flush=True)
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "dropped-probe.json").write_text(json.dumps(probes, indent=1) + "\n")
        return 0
    for name in names:
        try:
            r = record(name, a.tests, a.seed, a.out, keep_tiles=a.keep_tiles)
            print(f"{name:56s} {r['tests']:11,d} {r['seconds']}", flush=True)
        except Exception as e:  # noqa: BLE001  (one broken form must not hide the others)
            print(f"{name:56s} ERROR {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
            rc |= 2
        if a.tar:
            import tarfile
            with tarfile.open(a.tar, "w:gz") as tf:
                tf.add(a.out, arcname=Path(a.out).name)
    return rc
