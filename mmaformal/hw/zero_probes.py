"""Probes for the exponent that zero terms take in e_max (the `zero_exp` parameter).

CLFP-style ([Xie2025] sec. 3.1.3): c = +0, one product p0 whose exponent lies below the
candidate zero-term exponents, and a tiny product p1 = -2^-j of the opposite sign. The fused
sum truncates p1 at 2^(e_max - F); scanning j shows where the truncation point lies, hence
e_max, hence the exponent a zero c takes. For f16 output, p0 sits on a rounding tie so that the
vanishing of p1 is visible after RNE-FP16.

    mmaformal hw zero-probes --out probes.npz     (make the tiles, CPU only)

Each probe is one tile with the probe in row 0 / column 0 and zeros elsewhere; the file holds,
per instruction, A, B, C and the j of each probe. May import numpy, mmaformal.classes, isa.

This is the generator of the recorded H200 scan (counterexamples/hw/zero-exp-probes.npz), kept
so that record stays reproducible; for new instructions use `mmaformal probes` (feature
`zero_exp` of mmaformal.query.probes, the same method over any format and rival set).
"""
from __future__ import annotations

import argparse

import numpy as np

from .. import isa
from ..classes import from_float

#: instruction -> (a0, b0, j range); p0 = a0 * b0
PLANS = {
    "sm90/mma.m16n8k16.f32.bf16.bf16.f32": (2.0 ** -70, 2.0 ** -70, range(148, 172)),
    "sm90/mma.m16n8k8.f32.tf32.tf32.f32": (2.0 ** -70, 2.0 ** -70, range(148, 172)),
    "sm90/mma.m16n8k16.f16.f16.f16.f16": (1.5 * 2.0 ** -12, 2.0 ** -12, range(36, 60)),
}


def tiles(name: str):
    ins = isa.lookup(name)
    a0, b0, js = PLANS[name]
    js = list(js)
    T = len(js)
    af = np.zeros((T, ins.m, ins.k))
    bf = np.zeros((T, ins.k, ins.n))
    af[:, 0, 0], bf[:, 0, 0] = a0, b0
    for t, j in enumerate(js):
        # p1 = -2^-j as a product of two representable powers of two
        e1 = -(j // 2)
        af[t, 0, 1], bf[t, 1, 0] = -(2.0 ** e1), 2.0 ** (-j - e1)
    A = from_float(ins.a, af)
    B = from_float(ins.b, bf)
    C = np.zeros((T, ins.m, ins.n), dtype=A.dtype if ins.c == ins.a else np.uint32)
    if ins.c == "f16":
        C = np.zeros((T, ins.m, ins.n), dtype=np.uint16)
    return A, B, C, np.array(js)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """`mmaformal hw zero-probes` (subparsers: the hw sub-verbs)."""
    from ..args import out_file
    p = subparsers.add_parser("zero-probes", help="the zero-exponent probe tiles of the recorded "
                              "H200 scan (CPU only)", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=out_file, metavar="FILE.npz",
                   help="where to write the tiles (.npz appended when missing; its folder must "
                        "exist)")
    return p


def run(a) -> int:
    """Write the tiles: per instruction of PLANS, A, B, C and the j of each probe."""
    arrays = {}
    for name in PLANS:
        A, B, C, js = tiles(name)
        arrays.update({f"{name}|a": A, f"{name}|b": B, f"{name}|c": C, f"{name}|j": js})
    np.savez_compressed(a.out, **arrays)
    out = a.out if str(a.out).endswith(".npz") else f"{a.out}.npz"
    print(f"hw zero-probes: wrote {out} ({len(PLANS)} instructions)")
    return 0
