"""`mmaformal hw run|validate`: the GPU front end's command-line verbs (layer 5).

    mmaformal hw run INSTR --a A.npy --b B.npy --c C.npy --out D.npy [--meta E.npy]
    mmaformal hw validate INSTR [...] --tests N [--classes a,b] [--seed S] [--out DIR]

hw validate records the campaign in --out DIR, by default in the store's
counterexamples/hw/<UTC date and time>/ (mmaformal.paths; chosen once a GPU is found).

No GPU, no CuPy, no nvcc, or a GPU that is not sm_90: one line and exit 2 (HardwareUnavailable).
An instruction of another architecture: says which architecture it needs, exit 2.
May import: numpy, mmaformal.isa, mmaformal.paths, mmaformal.hw.runner / validate (lazily).
"""
from __future__ import annotations

import argparse
from pathlib import Path


from .. import isa


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("hw", help="run or validate instructions on an NVIDIA Hopper GPU")
    hs = p.add_subparsers(dest="hw_verb", metavar="HWVERB")
    hs.required = True
    r = hs.add_parser("run", help="run an instruction on .npy raw-bit tiles on the GPU")
    r.add_argument("instr")
    for k in ("a", "b", "c", "out"):
        r.add_argument(f"--{k}", required=True, type=Path)
    r.add_argument("--meta", type=Path, help="sparse forms: kept positions (uint8, the compressed "
                   "A's shape); without it A is dense with the allowed zeros")
    v = hs.add_parser("validate", help="random CLFP-class tests on the GPU against the theory")
    v.add_argument("instr", nargs="*")
    v.add_argument("--preset", choices=["sm90", "sm90-m8n8k4", "sm90-int"])
    v.add_argument("--tests", type=int, default=1_000_000)
    v.add_argument("--classes", default=None)
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--out", type=Path, help="where to record the campaign (default: the "
                   "store's counterexamples/hw/<UTC date and time>/; see --store)")
    return p


def _supported(name: str) -> str:
    ins = isa.lookup(name)
    if ins.arch != "sm90":
        raise ValueError(f"{ins.name} needs an {ins.arch} GPU; this harness runs sm90 (Hopper) instructions")
    return ins.name


def run(args) -> int:
    from . import runner
    if args.hw_verb == "run":
        from ..simulate import load_npy, out_path, save_npy
        name = _supported(args.instr)
        out_path(args.out)                 # a directory is an error before the GPU runs
        ok, why = runner.available()
        if not ok:
            raise ValueError(f"no usable GPU: {why}")
        a, b, c = (load_npy(str(p), f"--{k}") for p, k in ((args.a, "a"), (args.b, "b"), (args.c, "c")))
        meta = load_npy(str(args.meta), "--meta") if args.meta else None
        save_npy(str(args.out), runner.run(name, a, b, c, meta=meta))
        return 0
    from . import validate
    names = [_supported(n) for n in args.instr] + (validate.PRESETS[args.preset] if args.preset else [])
    if not names:
        raise ValueError("name instructions or --preset")
    ok, why = runner.available()
    if not ok:
        raise ValueError(f"no usable GPU: {why}")
    argv = names + ["--tests", str(args.tests), "--seed", str(args.seed)]
    if args.classes:
        argv += ["--classes", args.classes]
    if not args.out:
        import datetime as _dt
        from .. import paths
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d-%H%M%S")
        args.out = paths.store("counterexamples") / "hw" / f"{stamp}-validate"
    argv += ["--out", str(args.out)]
    return validate.main(argv)
