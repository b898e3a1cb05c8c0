"""`mmaformal hw ...`: the GPU front end's command-line verbs (layer 5).

    mmaformal hw run INSTR --a A.npy --b B.npy --c C.npy --out D.npy [--meta E.npy]
    mmaformal hw validate INSTR... | --preset P [--tests N] [--classes a,b] [--seed S] [--out DIR]
    mmaformal hw record INSTR... | --sparse-preset --out DIR [--probe]   (digests; no simulator)
    mmaformal hw record --replay REC... --out DIR [--primary-only]       (CPU)
    mmaformal hw wgmma-sp --out DIR [--names FILE] [--budget S]          (device batch)
    mmaformal hw wgmma-sp --out DIR --replay REC...                      (CPU)
    mmaformal hw selfcheck [--out DIR] [--n 8,24,..] [--match RE]        (the harness self-check)
    mmaformal hw sass [--full] [INSTR ...]                               (nvcc + cuobjdump only)
    mmaformal hw zero-probes --out FILE.npz                              (CPU only)

`run` is defined here; every other sub-verb's options in its own module (`_SUBVERBS`: its
``add_parser(subparsers)`` there is the one definition of them), run by that module's `run`
(validate by `validate` here: `prepare`, then `campaigns`).
hw validate records the campaign in --out DIR, by default in the store's
counterexamples/hw/<UTC date and time>-validate/ (mmaformal.paths; chosen once a GPU is found).

The GPU's compute capability picks the target (sm_75, sm_80, sm_89, sm_90a, sm_100a, sm_120a;
mmaformal.hw.forms). No GPU, no CuPy, no nvcc, or a GPU of no target (for the sub-verbs that
run on it): one line and exit 2 (runner.need_gpu). An instruction of another architecture than
the GPU's, or one the harness does not run: one line naming why, exit 2.
May import: numpy, mmaformal.isa, mmaformal.paths, the other mmaformal.hw modules.
"""
from __future__ import annotations

import argparse
import importlib
from pathlib import Path


#: hw sub-verbs whose options are defined in their own modules (add_parser(subparsers) there)
_SUBVERBS = {"validate": "mmaformal.hw.validate", "record": "mmaformal.hw.record",
             "wgmma-sp": "mmaformal.hw.batch", "selfcheck": "mmaformal.hw.selfcheck_all",
             "sass": "mmaformal.hw.sass", "zero-probes": "mmaformal.hw.zero_probes"}


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("hw", help="run, validate and record instructions on an NVIDIA "
                              "GPU (sm_75 .. sm_120a); the harness's self-check, SASS and probe "
                              "tiles")
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
        return importlib.import_module(_SUBVERBS[args.hw_verb]).run(args)
    from . import runner
    from .validate import supported
    from ..simulate import load_npy, out_path, save_npy
    name = supported(args.instr)
    out_path(args.out)                 # a directory is an error before the GPU runs
    runner.need_gpu([name])
    a, b, c = (load_npy(str(p), f"--{k}") for p, k in ((args.a, "a"), (args.b, "b"), (args.c, "c")))
    meta = load_npy(str(args.meta), "--meta") if args.meta else None
    try:
        d = runner.run(name, a, b, c, meta=meta)
    except runner.HardwareUnavailable as e:
        raise ValueError(f"hw run: {e}") from None
    save_npy(str(args.out), d)
    return 0


def validate(args) -> int:
    """`mmaformal hw validate` (options: validate.add_parser): `prepare`, then `campaigns`
    (every kind through the one campaign path); exit 1 on a mismatch, 2 when a campaign failed
    to run."""
    from . import validate as _v
    names = _v.prepare(args)
    return _v.campaigns(names, args)
