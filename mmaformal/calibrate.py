"""Layer 5 front end, calibrate: learn a platform profile by a closed loop against the GPU.

``mmaformal calibrate (--model SPEC | --shapes SPECS) [--out FILE] [--json] [--trials N]``

This module is the verb (the CLI, and the names scripts and tests use); the work is done by
mmaformal.calibrate_calls (the calls: ``Case``, ``--shapes``, a model's forward pass),
mmaformal.calibrate_native (the inputs asked and the native op that answers them) and
mmaformal.calibrate_fit (the candidates, the loop, the profile written and its check).

May import: mmaformal.calibrate_calls, mmaformal.calibrate_native, mmaformal.calibrate_fit,
mmaformal.profile, mmaformal.isa, mmaformal.args, and lazily torch and mmaformal.cuda (whether
the emulation can run on the GPU). No module of calibrate computes a product itself:
mmaformal.torch executes every schedule.

The loop, per GEMM call (a ``Case``: op, formats, M, N, K, batch, layouts, math flags):

1. inputs are asked of the native op (the GPU library through torch): first probe inputs in
   the manner of FPRev (each output element is one probe: its row of A holds +G at one k = p,
   its column of B holds -G at one k = q, every other element a small s, so that the two big
   products cancel and the output counts the small products the library summed outside the
   block, chain position or K slice where they were absorbed: the output depends on the fused
   block size, the order of the K-blocks and where K is split), then ``trials`` random inputs
   (signs, exponents and fractions spread over a few binades, so that partial sums cancel and
   round differently under different schedules);
2. candidates: every catalog instruction of the architecture that takes the call's operand
   formats (tf32 ones for f32 with TF32 allowed; sparse, block-scaled and wmma forms left out;
   instructions with the same theory and k merged), crossed with the schedule space of a
   profile rule (mmaformal.profile): the K-block order, tf32 input rounding, then, only when
   no unsplit schedule matches, the splits of K (slices of K-units, chunks; sequential or
   pairwise reduction; in the accumulator or the output format), each split counted once per
   distinct partition of the K-blocks;
3. each candidate runs as a one-rule profile under ``mmaformal.torch.emulating(..., strict=True)``
   on the same inputs (the first ``rows`` rows of A: an output row depends only on its row of
   A), so the schedules are executed by the one implementation the profiles use; a candidate
   is kept only while its output is bit-identical to the native one on every input asked;
4. the simplest survivor is the call's schedule (alternatives that no input separated are
   reported); the kernels the native call launched (torch.profiler) are its evidence.

The profile written: per group of calls with the same formats and flags, one rule (status
``hypothesis``, ``default = true``) with the schedule that reproduced most of them, and before
it a rule per call that needed another schedule (exact M, N, K, batch and layouts, status
``confirmed``: bit-identical over the one shape it covers); a call that no candidate reproduced
gets no rule and is named in the profile's provenance. The result is checked by loading it and
re-running every reproduced call under ``emulating(profile, strict=True)``.

The native op is pluggable (``Native``): ``TorchNative`` runs the op on the GPU (CUDA or ROCm
builds of torch alike: only the ``torch.cuda`` API is used); ``EmulatedNative`` runs it under
a hidden profile on the CPU (tests and dry runs of the search).

Exit codes: 0 every call reproduced and a profile written; 1 a profile written but some calls
reproduced by no candidate (named); 2 bad input, or no torch / no GPU (one line).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import isa
from . import profile as P
from .calibrate_calls import Case, parse_shapes, trace_model
from .calibrate_fit import (Candidate, CaseResult, build_profile, calibrate, calibrate_case,
                            candidates, instructions, profile_toml, verify)
from .calibrate_native import EmulatedNative, Native, TorchNative, device_arch
# the inputs of a call, used by scripts and tests through this module
from .calibrate_native import probe_inputs, random_inputs  # noqa: F401

__all__ = ["Case", "Candidate", "CaseResult", "Native", "TorchNative", "EmulatedNative",
           "parse_shapes", "trace_model", "candidates", "calibrate_case", "calibrate",
           "build_profile", "profile_toml", "device_arch", "add_parser", "run"]


# --------------------------------------------------------------------------------------------
# The verb


def add_parser(subparsers) -> argparse.ArgumentParser:
    from . import args as _args
    p = subparsers.add_parser(
        "calibrate", help="learn a platform profile on this GPU: which schedule reproduces each "
        "GEMM bit for bit (needs torch and a GPU)",
        description="Learn a platform profile by a closed loop: each GEMM of a model's forward "
        "pass (--model) or of a list of shapes (--shapes) runs natively on probe and random "
        "inputs and through every candidate schedule of mmaformal; a rule is written only for "
        "a schedule whose bits match on every input.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", metavar="SPEC", help="pkg.module:factory (returns (model, "
                     "example_inputs)) or hf:ConfigClass[:key=value,...] (transformers, random "
                     "weights)")
    src.add_argument("--shapes", metavar="SPECS", help="MxNxK:DTYPE[:n|t][:n|t][:TOKEN] "
                     "(comma separated) or a file of them; DTYPE f16 bf16 f32 tf32 e4m3 e5m2 "
                     "e4m3/e5m2; tokens: mm matmul bmm linear addmm baddbmm bias fast rowscale "
                     "out=FMT; BxMxNxK for a batch")
    p.add_argument("--out", metavar="FILE", type=_args.out_file,
                   help="where to write the profile TOML (default: printed)")
    p.add_argument("--trials", type=_args.positive_int, default=3,
                   help="random inputs per call after the probes (default 3)")
    p.add_argument("--probes", type=_args.positive_int, default=2,
                   help="probe inputs per call (default 2)")
    p.add_argument("--rows", type=_args.positive_int, default=16,
                   help="rows of each product compared (default 16)")
    p.add_argument("--dtype", choices=("f16", "bf16", "f32"),
                   help="--model: cast the model and its inputs to this dtype")
    p.add_argument("--tf32", action="store_true", help="allow TF32 for f32 GEMMs (--model)")
    p.add_argument("--tokens", type=_args.positive_int, default=64,
                   help="--model hf:...: sequence length of the random input (default 64)")
    p.add_argument("--arch", metavar="ARCH", help="catalog architecture (default: the GPU's)")
    p.add_argument("--id", metavar="ID", help="profile id (default ARCH-calibrated)")
    p.add_argument("--case-seconds", type=_args.seconds, default=None, metavar="S",
                   help="stop the search of one call after S seconds (default: no limit)")
    p.add_argument("--only", metavar="PATTERN", action="append",
                   help="candidate instructions limited to these names (fnmatch; repeatable)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    return p


def _needs_gpu():
    try:
        import torch
    except ImportError:
        raise ValueError("calibrate needs torch (pip install 'mmaformal[torch]') and a GPU") from None
    if not torch.cuda.is_available():
        raise ValueError("calibrate needs a GPU visible to torch (torch.cuda.is_available() "
                         "is False)")
    return torch


def _emulate_device(torch) -> str:
    """Where the candidates run: the GPU when mmaformal.cuda can use it (CUDA + CuPy), else
    the CPU (ROCm builds, no CuPy)."""
    if getattr(torch.version, "hip", None):
        return "cpu"
    try:
        from . import cuda
        return "cuda" if cuda.available()[0] else "cpu"
    except Exception:                       # noqa: BLE001
        return "cpu"


def run(args, native: Native | None = None) -> int:
    cases = parse_shapes(args.shapes) if args.shapes else None
    if args.arch:
        arch = isa.ALIASES.get(args.arch, args.arch)
        if arch not in isa.ARCHS:
            raise ValueError(f"--arch {args.arch!r}: not a catalog architecture ({', '.join(isa.ARCHS)})")
    notes: list[str] = []
    if native is None:
        torch = _needs_gpu()
        native = TorchNative("cuda")
        arch = isa.ALIASES.get(args.arch, args.arch) if args.arch else device_arch("cuda")
        edev = _emulate_device(torch)
    else:
        import torch  # noqa: F401  (the stand-in native runs on the CPU)
        arch = isa.ALIASES.get(args.arch, args.arch) if args.arch else "sm90"
        edev = "cpu"
    if cases is None:
        cases, notes = trace_model(args.model, "cuda" if isinstance(native, TorchNative) else "cpu",
                                   args.dtype, args.tf32, args.tokens)
    log = (lambda s: print(s, file=sys.stderr, flush=True)) if args.json else \
        (lambda s: print(s, flush=True))
    for n in notes:
        log(n)
    kw = dict(trials=args.trials, probes=args.probes, rows=args.rows, seed=args.seed,
              only=args.only)
    if not any(instructions(c, arch, args.only) for c in cases):
        raise ValueError(f"no catalog instruction of {arch} takes the operands of these calls"
                         + (f" (--only {' '.join(args.only)})" if args.only else ""))
    results = calibrate(cases, native, arch, log=log, emulate_device=edev,
                        seconds=args.case_seconds, **kw)
    facts = native.describe()
    prof, missing = build_profile(results, arch, facts, pid=args.id or f"{arch}-calibrated",
                                  trials=args.trials, probes=args.probes, rows=args.rows)
    header = (f"Written by `mmaformal calibrate` ({'--model ' + args.model if args.model else '--shapes ' + args.shapes}).\n"
              "Each rule's schedule matched the native GEMM bit for bit on every input asked;\n"
              "shapes not measured are hypotheses (see profiles/README.md, \"Calibration\").")
    text = ""
    loaded = None
    if prof["rule"]:
        text = profile_toml(prof, header)
        import tomllib
        loaded = P.parse(tomllib.loads(text), args.out or "<calibrated profile>")
        verify(loaded, results, native, rows=args.rows, batches=2, seed=args.seed,
               emulate_device=edev)
        bad = [r.case.describe() for r in results if r.verified is False]
        if bad:
            print("mmaformal: internal error: the written profile does not reproduce "
                  + "; ".join(bad), file=sys.stderr)
            return 3
        if args.out:
            Path(args.out).write_text(text)
    rep = {"arch": arch, **facts, "profile": str(args.out) if args.out and text else None,
           "rules": len(prof["rule"]), "unreproduced": missing, "notes": notes,
           "calls": [r.to_json() for r in results]}
    if args.json:
        print(json.dumps(rep, indent=1))
    else:
        if text and not args.out:
            print(text, end="")
        print(f"{len(results)} call(s), {sum(1 for r in results if r.chosen)} reproduced, "
              f"{len(prof['rule'])} rule(s)" + (f"; wrote {args.out}" if args.out and text else "")
              + (f"; reproduced by no candidate: {'; '.join(missing)}" if missing else ""),
              file=sys.stderr if not args.out and text else sys.stdout)
    if not prof["rule"]:
        return 1
    return 1 if missing else 0
