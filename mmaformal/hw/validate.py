"""Validation campaigns: random dot products of the CLFP classes on the GPU and in `simulate`,
compared bit for bit (NaN bits and signed zeros included). Layer 5 front end (hw).

    mmaformal hw validate INSTR... | --preset P [--tests N] [--classes a,b] [--seed S]
                          [--out DIR] [--sample K] [--workers W] [--shard I/N] [--fast-c]
                          [--tar FILE.tgz]

(the verb's options are defined here, `add_parser`; mmaformal.hw.cli registers it and runs
`prepare`, then the campaigns). No usable
GPU: one line, exit 2, before anything is written. Without --out the campaign is recorded in
the store's counterexamples/hw/<UTC date and time>-validate/ (mmaformal.paths).

For each instruction: the layout self-check runs first (a failure stops the campaign); then
for each input class, tiles are generated (mmaformal.classes), run on the GPU
(mmaformal.hw.runner.run) and in mmaformal.simulate, and compared. Mismatching dot products
are saved as counterexamples with the hardware output and the device, driver, nvcc and date;
a sample of every class (inputs and hardware outputs) is saved so the tests can replay it
without a GPU. Sparse wgmma forms have their own campaign (:func:`mmaformal.hw.wgmma_sp.campaign`;
``mmaformal hw validate`` sends them there).

May import: numpy, mmaformal.classes, mmaformal.isa, mmaformal.hw.runner and .check, mmaformal.simulate.
Invariant: what is recorded is what was run and seen; nothing is written for a class whose
GPU run did not complete.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .. import classes as C
from .. import isa
from ..args import positive_int, shard

__all__ = ["campaign", "campaigns", "add_parser", "prepare", "supported", "PRESETS"]

_DT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}

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


_I8 = ("s8", "u8")
_I4 = ("s4", "u4")
_SAT = ("", ".satfinite")

#: The sm90 forms added in issue 14: f16 mma.m8n8k4 (compiler-emulated), integer mma and
#: integer wgmma (N = 8 and the largest N of the catalog), sparse mma.sp.
PRESETS["sm90-m8n8k4"] = ["sm90/mma.m8n8k4.f32.f16.f16.f32", "sm90/mma.m8n8k4.f32.f16.f16.f16",
                          "sm90/mma.m8n8k4.f16.f16.f16.f16"]
PRESETS["sm90-int"] = (
    [f"sm90/mma.{k}{sat}.s32.{a}.{b}.s32" for k in ("m8n8k16", "m16n8k16", "m16n8k32")
     for sat in _SAT for a in _I8 for b in _I8]
    + [f"sm90/mma.{k}{sat}.s32.{a}.{b}.s32" for k in ("m8n8k32", "m16n8k32", "m16n8k64")
       for sat in _SAT for a in _I4 for b in _I4]
    + [f"sm90/mma.{k}.s32.b1.b1.s32.{op}.popc" for k in ("m8n8k128", "m16n8k128", "m16n8k256")
       for op in ("xor", "and")]
    + [f"sm90/wgmma.m64n{n}k32{sat}.s32.{a}.{b}" for n in (8, 224) for sat in _SAT
       for a in _I8 for b in _I8])


def _hex(v) -> str:
    return hex(int(v))


def _progress(msg: str) -> None:
    sys.stderr.write("\r" + msg[:120].ljust(120))
    sys.stderr.flush()


def _tiles(klass, ins, T, rng, fast_c: bool = False):
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


def _sim_parallel(simulate, name, A, B, Cm, workers):
    """simulate() on all cores: it threads over tile chunks itself (MMAFORMAL_THREADS);
    ``simulate`` may be a closure that names a theory."""
    import os
    os.environ["MMAFORMAL_THREADS"] = str(workers)
    sm = sys.modules["mmaformal.simulate"]
    sm.COMPILE_MIN = 0                      # campaigns are large: always the compiled path
    return simulate(name, A, B, Cm, chunk=max(1 << 14, A.shape[0] * A.shape[1] * Cm.shape[-1] // (4 * workers)))


def _rivals(name: str, primary) -> list:
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


def campaign(name: str, tests: int, klasses=C.CLASSES, seed: int = 0, out_dir: Path | None = None,
             sample: int = 512, chunk_dots: int = 1 << 21, workers: int = 0, max_cex: int = 20,
             rivals: bool = True, fast_c: bool = False, sample_block=None) -> dict:
    """``sample_block`` = (rows, ncols): keep of each class only those rows of tile 0 and its
    first ncols columns (2-D arrays; mmaformal.hw.wgmma_sp.replay_sample replays them) instead
    of whole tiles (the records of the large-N forms stay small)."""
    from . import check, runner
    from ..simulate import simulate
    from .. import theory as _theory

    ins = isa.lookup(name)
    name = ins.name
    ok, msg = check.layout_selfcheck(name)
    if not ok:
        raise RuntimeError(f"{name}: layout self-check failed, campaign stopped: {msg}")
    info = runner.device_info()
    workers = workers or max(1, min(16, __import__("os").cpu_count() or 1))
    rng = np.random.default_rng(seed)
    per_class = -(-tests // len(klasses))
    dots_per_tile = ins.m * ins.n
    res = {"instruction": name, "tests": 0, "mismatches": 0, "classes": {}, "device": info,
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "seed": seed, "theory": _theory.resolve(name).id, "theory_hash": _theory.resolve(name).hash(),
           "layout_selfcheck": msg, "fast_c": fast_c}
    primary = _theory.resolve(name)
    rivs = _rivals(name, primary) if rivals else []
    res["rivals"] = {t.id: {"status": t.status, "tests": 0, "mismatches": 0, "classes": {},
                            "counterexamples": []} for t in rivs}
    t_gen = t_gpu = t_sim = 0.0
    cex, samples = [], {}
    for klass in klasses:
        done = mism = 0
        while done < per_class:
            T = max(1, min(per_class - done, chunk_dots) // dots_per_tile)
            t0 = time.perf_counter()
            A, B, Cm = _tiles(klass, ins, T, rng, fast_c)
            t1 = time.perf_counter()
            D = runner.run(name, A, B, Cm)
            t2 = time.perf_counter()
            Dsim = _sim_parallel(simulate, name, A, B, Cm, workers)
            t_gen += t1 - t0
            t_gpu += t2 - t1
            for t_ in rivs:  # the same hardware outputs against each rival theory
                rv = res["rivals"][t_.id]
                Dr = _sim_parallel(lambda *x, **k: simulate(*x, theory=t_, **k), name, A, B, Cm, workers)
                rb = np.nonzero(D != Dr)
                rv["tests"] += int(D.size)
                rv["mismatches"] += len(rb[0])
                rv["classes"][klass] = rv["classes"].get(klass, 0) + len(rb[0])
                for t, i, j in list(zip(*rb))[: max(0, 5 - sum(1 for x in rv["counterexamples"]
                                                             if x["class"] == klass))]:
                    rv["counterexamples"].append(
                        {"class": klass, "a": [_hex(x) for x in A[t, i, :]],
                         "b": [_hex(x) for x in B[t, :, j]], "c": _hex(Cm[t, i, j]),
                         "hardware": _hex(D[t, i, j]), "simulated": _hex(Dr[t, i, j])})
            t3 = time.perf_counter()
            t_sim += t3 - t2  # the primary and the rivals
            bad = np.nonzero(D != Dsim)
            mism += len(bad[0])
            for t, i, j in list(zip(*bad))[: max(0, max_cex - sum(1 for x in cex if x["class"] == klass))]:
                cex.append({"class": klass, "a": [_hex(x) for x in A[t, i, :]], "b": [_hex(x) for x in B[t, :, j]],
                            "c": _hex(Cm[t, i, j]), "hardware": _hex(D[t, i, j]), "simulated": _hex(Dsim[t, i, j])})
            if klass not in samples and sample_block is not None:
                r, nc = np.asarray(sample_block[0]), int(sample_block[1])
                cols = np.arange(nc)
                samples[klass] = (A[0, r].copy(), B[0, :, :nc].copy(), Cm[0][np.ix_(r, cols)],
                                  D[0][np.ix_(r, cols)])
            elif klass not in samples:
                k = max(1, min(T, -(-sample // dots_per_tile)))
                samples[klass] = (A[:k].copy(), B[:k].copy(), Cm[:k].copy(), D[:k].copy())
            done += T * dots_per_tile
        _progress(f"{name} {klass}: {done:,} dots, {mism} mismatches")
        res["classes"][klass] = {"tests": done, "mismatches": int(mism)}
        res["tests"] += done
        res["mismatches"] += int(mism)
    sys.stderr.write("\n")
    res["seconds"] = {"generate": round(t_gen, 2), "gpu": round(t_gpu, 3), "simulate": round(t_sim, 2)}
    res["rates"] = {"gpu_dots_per_s": round(res["tests"] / max(t_gpu, 1e-9)),
                    "simulate_dots_per_s": round(res["tests"] / max(t_sim, 1e-9)),
                    "simulate_workers": workers}
    res["counterexamples"] = cex
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = name.replace("/", "_")
        (out_dir / f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n")
        arrays = {}
        for klass, (A, B, Cm, D) in samples.items():
            arrays.update({f"{klass}.a": A, f"{klass}.b": B, f"{klass}.c": Cm, f"{klass}.d": D})
        np.savez_compressed(out_dir / f"{stem}.npz", **arrays)
    return res


def supported(name: str) -> str:
    """The catalog name of an instruction this harness runs (sm90), else ValueError (one line)."""
    ins = isa.lookup(name)
    if ins.arch != "sm90":
        raise ValueError(f"{ins.name} needs an {ins.arch} GPU; this harness runs sm90 (Hopper) instructions")
    return ins.name


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
    p.add_argument("instr", nargs="*", metavar="INSTR", help="sm90 instructions")
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
                   "(see _tiles); needed for K = 128/256 integer forms within a device session")
    p.add_argument("--tar", type=Path, metavar="FILE.tgz",
                   help="after each instruction, pack --out into this .tgz")
    return p


def prepare(args) -> list[str]:
    """The instructions `mmaformal hw validate` runs (named, presets, --shard), once the options
    are checked and a GPU is found; --out defaulted to the store's
    counterexamples/hw/<UTC date and time>-validate/. Sparse wgmma forms among them have their own
    campaign (mmaformal.hw.cli sends them to wgmma_sp.campaign, the others to `campaigns`)."""
    from . import runner
    names = [supported(n) for n in args.instr] + [n for p in args.preset for n in PRESETS[p]]
    si, sn = args.shard
    names = names[si::sn]
    if not names:
        raise ValueError("hw validate: name instructions or --preset")
    if args.workers < 0:
        raise ValueError(f"hw validate: --workers {args.workers}: give 0 (the CPUs) or a count")
    runner.need_gpu()
    if not args.out:
        from .. import paths
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d-%H%M%S")
        args.out = paths.store("counterexamples") / "hw" / f"{stamp}-validate"
    return names


def campaigns(names: list[str], a) -> int:
    """`campaign` of each dense instruction with the verb's options `a`, one table row each."""
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
