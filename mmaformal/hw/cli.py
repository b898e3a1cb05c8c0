"""`mmaformal hw run|validate`: the GPU front end's command-line verbs (layer 5).

    mmaformal hw run INSTR --a A.npy --b B.npy --c C.npy --out D.npy [--meta E.npy]
    mmaformal hw validate INSTR [...] --tests N [--classes a,b] [--seed S] [--out DIR]

hw validate records the campaign in --out DIR, by default in the store's
counterexamples/hw/<UTC date and time>/ (mmaformal.paths; chosen once a GPU is found).

No GPU, no CuPy, no nvcc, or a GPU that is not sm_90: one line and exit 2 (HardwareUnavailable).
An instruction of another architecture: says which architecture it needs, exit 2.
May import: numpy, mmaformal.isa, mmaformal.paths, mmaformal.hw.runner / validate / wgmma_sp
(lazily).
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
        if name.startswith("sm90/wgmma.sp."):      # per-thread metadata words: own runner
            from . import wgmma_sp
            save_npy(str(args.out), wgmma_sp.run(name, a, b, c, meta))
        else:
            save_npy(str(args.out), runner.run(name, a, b, c, meta=meta))
        return 0
    from . import validate
    names = [_supported(n) for n in args.instr] + (validate.PRESETS[args.preset] if args.preset else [])
    if not names:
        raise ValueError("name instructions or --preset")
    ok, why = runner.available()
    if not ok:
        raise ValueError(f"no usable GPU: {why}")
    sp = [n for n in names if n.startswith("sm90/wgmma.sp.")]
    names = [n for n in names if n not in sp]
    rc = 0
    if sp and not args.out:
        import datetime as _dt
        from .. import paths
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d-%H%M%S")
        args.out = paths.store("counterexamples") / "hw" / f"{stamp}-validate"
    for n in sp:                                    # sparse wgmma: its own tiles and metadata
        from . import wgmma_sp
        kl = args.classes.split(",") if args.classes else None
        try:
            r = wgmma_sp.campaign(n, args.tests, args.seed, args.out,
                                  wgmma_sp.DECLARED[isa.lookup(n).a], klasses=kl)
        except RuntimeError as e:                   # the layout self-check failed
            print(f"{n:44s} ERROR {str(e).splitlines()[0][:200]}", flush=True)
            rc |= 2
            continue
        print(f"{n:44s} {r['tests']:11,d} {r['mismatches']:9,d}  {r['theory']}", flush=True)
        rc |= int(r["mismatches"] > 0)
    if not names:
        return rc
    argv = names + ["--tests", str(args.tests), "--seed", str(args.seed)]
    if args.classes:
        argv += ["--classes", args.classes]
    if not args.out:
        import datetime as _dt
        from .. import paths
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d-%H%M%S")
        args.out = paths.store("counterexamples") / "hw" / f"{stamp}-validate"
    argv += ["--out", str(args.out)]
    return validate.main(argv) | rc
