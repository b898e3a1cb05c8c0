"""`mmaformal hw ...`: the GPU front end's command-line verbs (layer 5).

    mmaformal hw run INSTR --a A.npy --b B.npy --c C.npy --out D.npy [--meta E.npy]
    mmaformal hw validate INSTR... | --preset P [--tests N] [--classes a,b] [--seed S] [--out DIR]
    mmaformal hw record INSTR... | --sparse-preset --out DIR [--probe]   (digests; no simulator)
    mmaformal hw record --replay REC... --out DIR [--primary-only]       (CPU)
    mmaformal hw wgmma-sp --out DIR [--names FILE] [--budget S]          (sparse wgmma batch)
    mmaformal hw wgmma-sp --out DIR --replay REC...                      (CPU)
    mmaformal hw selfcheck [--out DIR] [--n 8,24,..] [--match RE]        (the harness self-check)
    mmaformal hw sass [--full] [INSTR ...]                               (nvcc + cuobjdump only)
    mmaformal hw zero-probes --out FILE.npz                              (CPU only)

`run` is defined here; every other sub-verb's options in its own module (`_SUBVERBS`: its
``add_parser(subparsers)`` there is the one definition of them), run by that module's `run`
(`_RUNNERS` where not; validate by `validate` here).
hw validate records the campaign in --out DIR, by default in the store's
counterexamples/hw/<UTC date and time>-validate/ (mmaformal.paths; chosen once a GPU is found).

No GPU, no CuPy, no nvcc, or a GPU that is not sm_90 (for the sub-verbs that run on it): one
line and exit 2 (runner.need_gpu, HardwareUnavailable). An instruction of another architecture:
says which architecture it needs, exit 2.
May import: numpy, mmaformal.isa, mmaformal.paths, the other mmaformal.hw modules.
"""
from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from .. import isa

#: hw sub-verbs whose options are defined in their own modules (add_parser(subparsers) there)
_SUBVERBS = {"validate": "mmaformal.hw.validate", "record": "mmaformal.hw.record",
             "wgmma-sp": "mmaformal.hw.wgmma_sp", "selfcheck": "mmaformal.hw.selfcheck_all",
             "sass": "mmaformal.hw.sass", "zero-probes": "mmaformal.hw.zero_probes"}
#: the function of that module that runs the sub-verb, where it is not `run` (wgmma_sp.run is
#: the sparse runner); validate is run by `validate` below (it spans validate and wgmma_sp)
_RUNNERS = {"wgmma-sp": "batch"}


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("hw", help="run, validate and record instructions on an NVIDIA "
                              "Hopper GPU; the harness's self-check, SASS and probe tiles")
    hs = p.add_subparsers(dest="hw_verb", metavar="HWVERB", parser_class=type(p))
    hs.required = True
    r = hs.add_parser("run", help="run an instruction on .npy raw-bit tiles on the GPU")
    r.add_argument("instr")
    for k in ("a", "b", "c", "out"):
        r.add_argument(f"--{k}", required=True, type=Path)
    r.add_argument("--meta", type=Path, help="sparse forms: kept positions (uint8, the compressed "
                   "A's shape); without it A is dense with the allowed zeros")
    for mod in _SUBVERBS.values():
        importlib.import_module(mod).add_parser(hs)
    return p


def run(args) -> int:
    if args.hw_verb == "validate":
        return validate(args)
    if args.hw_verb != "run":
        mod = importlib.import_module(_SUBVERBS[args.hw_verb])
        return getattr(mod, _RUNNERS.get(args.hw_verb, "run"))(args)
    from . import runner
    from .validate import supported
    from ..simulate import load_npy, out_path, save_npy
    name = supported(args.instr)
    out_path(args.out)                 # a directory is an error before the GPU runs
    runner.need_gpu()
    a, b, c = (load_npy(str(p), f"--{k}") for p, k in ((args.a, "a"), (args.b, "b"), (args.c, "c")))
    meta = load_npy(str(args.meta), "--meta") if args.meta else None
    if name.startswith("sm90/wgmma.sp."):      # per-thread metadata words: own runner
        from . import wgmma_sp
        save_npy(str(args.out), wgmma_sp.run(name, a, b, c, meta))
    else:
        save_npy(str(args.out), runner.run(name, a, b, c, meta=meta))
    return 0


def validate(args) -> int:
    """`mmaformal hw validate` (options: validate.add_parser): the sparse wgmma forms through
    wgmma_sp.campaign, the others through validate.campaigns; exit 1 on a mismatch, 2 when a
    campaign failed to run."""
    from . import validate as _v
    names = _v.prepare(args)
    rc = 0
    sp = [n for n in names if n.startswith("sm90/wgmma.sp.")]
    for n in sp:                                    # sparse wgmma: its own tiles and metadata
        from . import wgmma_sp
        try:
            r = wgmma_sp.campaign(n, args.tests, args.seed, args.out,
                                  wgmma_sp.DECLARED[isa.lookup(n).a], klasses=args.classes)
        except RuntimeError as e:                   # the layout self-check failed
            print(f"{n:44s} ERROR {str(e).splitlines()[0][:200]}", flush=True)
            rc |= 2
            continue
        print(f"{n:44s} {r['tests']:11,d} {r['mismatches']:9,d}  {r['theory']}", flush=True)
        rc |= int(r["mismatches"] > 0)
    dense = [n for n in names if n not in sp]
    return (_v.campaigns(dense, args) if dense else 0) | rc
