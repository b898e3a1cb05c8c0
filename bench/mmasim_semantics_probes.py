"""Hand-made probes of mmasim 2.1.1 behaviour, backing docs/mmasim-notes.md.

Run with the benchmark environment: /work/benchenv/bin/python bench/mmasim_semantics_probes.py
Each probe prints mmasim's output bits next to what docs/semantics.md (at the time of writing)
prescribes, so every listed difference is reproducible. Inputs are raw bits; a probe lists the
nonzero (a_k, b_k) pairs, the rest of the K lanes are +0.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from mmasim_adapter import make_op, mmasim_dpa  # noqa: E402

PROBES = []


def probe(name, arch, qual, pairs, c, doc, why, scales=None, K=None):
    PROBES.append((name, arch, qual, pairs, c, doc, why, scales, K))


def run(arch, qual, pairs, c, scales=None, K=None):
    op = make_op(arch, qual)
    K = K or op.k
    w = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
    size = 1 if str(op.a_type) == "torch.uint8" else op.a_type.itemsize
    a = np.zeros((1, K), dtype=w[size])
    b = np.zeros((1, K), dtype=w[size])
    for k, (x, y) in pairs.items():
        a[0, k], b[0, k] = x, y
    cc = np.array([c], dtype=w[op.c_type.itemsize])
    if scales is None:
        d = mmasim_dpa(arch, qual, a, b, cc)
    else:
        sa, sb = (np.array([s], dtype=np.uint8) for s in scales)
        d = mmasim_dpa(arch, qual, a, b, cc, sa, sb)
    return int(d[0])


H16 = "m16n8k16.f32.f16.f16.f32"
H16h = "m16n8k16.f16.f16.f16.f16"
BF = "m16n8k16.f32.bf16.bf16.f32"

# --- input decoding -------------------------------------------------------------------------
probe("tf32 input: low 13 bits dropped (truncation, not RNE)", "Ampere", "m16n8k8.f32.tf32.tf32.f32",
      {0: (0x3F801FFF, 0x3F800000)}, 0, 0x3F800000,
      "1.000244 (0x3F801FFF) * 1 + 0: truncation gives 1.0; RNE to tf32 would give 0x3F802000")

# --- zero terms in e_max ----------------------------------------------------------------------
probe("e_zero, bf16->f32 (A): 2^-130 - 2^-154 + 0", "Hopper", BF,
      {0: (0x1F00, 0x1F00), 1: (0x9900, 0x1900)}, 0x00000000, 0x0007FFFF,
      "excluded: e_max=-130, -2^-154 kept, RZ -> 0x7FFFF; a zero at emin=-126 would give 0x80000")
probe("e_zero, bf16->f32 (B): 2^-140 - 2^-160 + 0", "Hopper", BF,
      {0: (0x1C80, 0x1C80), 1: (0x9780, 0x1780)}, 0x00000000, 0x000001FF,
      "excluded: e_max=-140, -2^-160 kept -> 0x1FF; mmasim's zero exponent -133 truncates it -> 0x200")
probe("e_zero, f16->f16: 2^-22 + 2^-25 + 2^-47 + 0", "Hopper", H16h,
      {0: (0x1000, 0x1000), 1: (0x0C00, 0x0800), 2: (0x0001, 0x0002)}, 0x0000, 0x0005,
      "excluded: e_max=-22, 2^-47 kept, above the RNE tie 4.5 ulp -> 0x0005; "
      "zeros at e=-21 truncate it -> tie -> even 0x0004")

# --- overflow ---------------------------------------------------------------------------------
probe("RZ-FP32 overflow: bf16 max * max", "Hopper", BF, {0: (0x7F7F, 0x7F7F)}, 0, 0x7F7FFFFF,
      "semantics.md: RZ overflow gives the largest finite number")
probe("RZ-FP32 overflow: f32 max + 2^104", "Hopper", BF, {0: (0x5980, 0x5980)}, 0x7F7FFFFF, 0x7F7FFFFF,
      "exact sum is 2^128, RZ to f32 is max finite per IEEE")

# --- signed zeros -----------------------------------------------------------------------------
probe("zero sign: all terms -0 (f32 out)", "Hopper", H16, {k: (0x8000, 0x0000) for k in range(16)},
      0x80000000, 0x80000000, "semantics.md: -0 when every term is a negative zero")
probe("zero sign: all terms -0 (f16 out)", "Hopper", H16h, {k: (0x8000, 0x0000) for k in range(16)},
      0x8000, 0x8000, "semantics.md: -0 when every term is a negative zero")
probe("zero sign: negative sum that RZ flushes to zero", "Hopper", BF,
      {0: (0x1A00, 0x1A00), **{k: (0x0D80, 0x0D80) for k in range(1, 16)}}, 0x80000001, 0x80000000,
      "-2^-149 + 2^-150 + 15*2^-200: S<0 with |S|<2^-149; IEEE RZ keeps the sign (-0)")

# --- K chaining -------------------------------------------------------------------------------
probe("K-chaining: block k=0..7 first, c enters it", "Ampere", H16,
      {0: (0x0200, 0x0200), 8: (0x3C00, 0x3C00), 9: (0xBC00, 0x3C00)}, 0, 0x00000000,
      "2^-30 in block 0, then 1 - 1 in block 1: block 0 first truncates 2^-30 away -> +0 "
      "(block 1 first would give 2^-30 = 0x30800000)")

# --- specials ---------------------------------------------------------------------------------
probe("Inf * 0 -> NaN (T-FDPA)", "Hopper", H16, {0: (0x7C00, 0x0000)}, 0, 0x7FFFFFFF, "canonical NaN")
probe("+Inf + -Inf -> NaN (T-FDPA f16 out)", "Hopper", H16h,
      {0: (0x7C00, 0x3C00), 1: (0xFC00, 0x3C00)}, 0, 0x7FFF, "canonical f16 NaN")
probe("Inf under RZ-FP32 stays Inf", "Hopper", H16, {0: (0x7C00, 0x3C00)}, 0, 0x7F800000, "")
probe("NaN payload in c (T-FDPA)", "Hopper", H16, {}, 0xFFC00001, 0x7FFFFFFF, "canonical NaN")

# --- RZ-E8M13 (Hopper wgmma fp8) --------------------------------------------------------------
probe("RZ-E8M13: 1 + (1 + 2^-13) -> 2", "Hopper", "wgmma.m64n8k32.f32.e4m3.e4m3",
      {0: (0x38, 0x38)}, 0x3F800400, 0x40000000, "2 + 2^-13 truncated to 13 fraction bits")
probe("F=13 also truncates c", "Hopper", "wgmma.m64n8k32.f32.e4m3.e4m3", {}, 0x3F800001, 0x3F800000,
      "c alone, with zero products: 1 + 2^-23 truncated at e_max-13")

# --- CDNA3 TR-FDPA ----------------------------------------------------------------------------
TR = "f32_32x32x8_f16"
probe("TR-FDPA: carry, final RD to 31 bits after the leading one", "CDNA3", TR,
      {0: (0x1000, 0x1000), 1: (0x0100, 0x0200)}, 0x3FFFFFFF, 0x40000001,
      "c=2-2^-23, T=2^-22+2^-31: S=2+2^-23+2^-31 is above the RNE tie (doc: 0x40000001); "
      "mmasim renormalises and floors to 2+2^-23 (tie) -> 0x40000000")
probe("TR-FDPA: T' kept to F2+1=32 bits", "CDNA3", TR,
      {0: (0x8E00, 0x0C00), 1: (0x0100, 0x0100)}, 0x3F800000, 0x3F7FFFFE,
      "c=1, T=-3*2^-25+2^-32: doc RD_31 drops 2^-32 -> tie -> even 0x3F7FFFFE; "
      "mmasim keeps it -> 0x3F7FFFFF")
probe("TR-FDPA: all-zero terms -0", "CDNA3", TR, {k: (0x8000, 0x0000) for k in range(8)}, 0x80000000,
      0x80000000, "semantics.md sign rule")
probe("TR-FDPA: Inf * 0 -> NaN encoding", "CDNA3", TR, {0: (0x7C00, 0x0000)}, 0, None,
      "semantics.md does not fix the TR/GTR NaN encoding")
probe("TR-FDPA: product overflow to Inf (bf16)", "CDNA3", "f32_32x32x8_bf16",
      {0: (0x7F7F, 0x7F7F), 1: (0xFF7F, 0x7F7F)}, 0, 0x7FFFFFFF,
      "+Inf + -Inf from overflowed products -> NaN")

# --- CDNA3 GTR-FDPA ---------------------------------------------------------------------------
GTR = "f32_16x16x32_bf8_bf8"
probe("GTR-FDPA: c = +Inf next to products >= 2^25 is dropped", "CDNA3", GTR,
      {0: (0x7F, 0x7F)}, 0x7F800000, 0x7F800000,
      "mmasim gives Inf the exponent 0-1 (torch.frexp), so the special truncation zeroes it")
probe("GTR-FDPA: c = NaN next to products >= 2^25 is dropped", "CDNA3", GTR,
      {0: (0x7F, 0x7F)}, 0x7FC00000, 0x7FFFFFFF, "same mechanism")
probe("GTR-FDPA: c = +Inf with small products", "CDNA3", GTR, {0: (0x40, 0x40)}, 0x7F800000,
      0x7F800000, "")
probe("GTR-FDPA: a NaN product of block 1 is dropped by block 2 (K 32, L 16)", "CDNA3", GTR,
      {0: (0x80, 0x40), 16: (0x7F, 0x7F)}, 0, 0x7FC00000,
      "block 1 gives NaN (bf8 fnuz 0x80); as block 2's c it has the frexp exponent -1 and the "
      "special truncation zeroes it next to a product >= 2^25 (found by bench/bench_mmasim_diff.py)")

# --- CDNA2 FTZ-AddMul -------------------------------------------------------------------------
FTZ = "f32_32x32x8f16"
probe("FTZ: -subnormal c flushed to +0", "CDNA2", FTZ, {}, 0x80000001, 0x00000000, "")
probe("FTZ: c = -0 becomes +0", "CDNA2", FTZ, {k: (0x0000, 0xBC00) for k in range(8)}, 0x80000000,
      0x80000000, "products (+0)*(-1) = -0; -0 c is not subnormal, so -0 + -0 = -0 by semantics.md; "
      "mmasim's flush test |x| < 2^emin also maps -0 to +0")
probe("FTZ: -subnormal f16 input flushed to +0 before the product", "CDNA2", FTZ,
      {k: (0x8001, 0x3C00) for k in range(8)}, 0x80000000, 0x00000000,
      "(+0)*1 = +0; +0 + -0 = +0")
probe("FTZ: a = -0 becomes +0; sum flush keeps sign", "CDNA2", "f32_32x32x8bf16_1k",
      {0: (0xA020, 0x2080), **{k: (0x8000, 0x3F80) for k in range(4, 8)}}, 0x01000000, 0x80000000,
      "c=2^-125, p0=-1.25*2^-125: c+s0 = -2^-127 flushed to -0 (both agree); lanes 4-7: (-0)*1 "
      "= -0 by semantics.md -> -0 + -0 = -0; mmasim flushes a=-0 to +0 -> -0 + +0 = +0")
probe("FTZ: Inf - Inf NaN encoding", "CDNA2", FTZ, {0: (0x7C00, 0x3C00), 1: (0xFC00, 0x3C00)}, 0,
      0x7FC00000, "semantics.md canonical default; mmasim: host x86 default NaN")
probe("FTZ: NaN payload in c", "CDNA2", FTZ, {}, 0x7F800001, 0x7FC00000, "x86 quiets and propagates")

# --- CDNA1 E-FDPA -----------------------------------------------------------------------------
probe("E-FDPA: Inf - Inf NaN encoding", "CDNA1", "f32_32x32x8f16",
      {0: (0x7C00, 0x3C00), 1: (0xFC00, 0x3C00)}, 0, 0x7FC00000, "host default NaN")
probe("E-FDPA: -0 sum", "CDNA1", "f32_32x32x8f16", {k: (0x8000, 0x0000) for k in range(8)},
      0x80000000, 0x80000000, "")

# --- block scales -----------------------------------------------------------------------------
MXF4 = "m16n8k64.kind::mxf4.block32.f32.e2m1.e2m1.f32.ue8m0"
probe("GST-FDPA: a group that cancels to 0 keeps its scale exponent", "RTX Blackwell", MXF4,
      {0: (0x7, 0x7), 1: (0xF, 0x7), 32: (0x1, 0x1)}, 0, 0x3E800000,
      "block 0 scales 2^20*2^20, group 0 = 36-36 = 0; block 1 scale 1, 0.5*0.5: excluded -> 0.25; "
      "mmasim keeps e=40 for the cancelled group, truncating 0.25 away -> +0",
      scales=(None, None))
probe("ST-FDPA: ue8m0 0xFF scale is NaN", "RTX Blackwell",
      "m16n8k32.kind::mxf8f6f4.block32.f32.e4m3.e4m3.f32.ue8m0", {0: (0x38, 0x38)}, 0, 0x7FFFFFFF,
      "", scales=(np.array([0xFF]), np.array([0x7F])))
probe("ST-FDPA: fp4 operand in the low nibble", "RTX Blackwell",
      "m16n8k32.kind::mxf8f6f4.block32.f32.e2m1.e2m1.f32.ue8m0", {0: (0x2, 0x2)}, 0, 0x3F800000,
      "e2m1 0x2 = 1.0; 1*1 with scales 2^0", scales=(np.array([0x7F]), np.array([0x7F])))


def main() -> int:
    print(f"{'probe':<62} {'mmasim':>10} {'semantics.md':>12}  same")
    for name, arch, qual, pairs, c, doc, why, scales, K in PROBES:
        if name.startswith("GST-FDPA: a group"):
            scales = (np.array([127 + 20, 127]), np.array([127 + 20, 127]))
        if scales is not None:
            scales = tuple(np.asarray(s, dtype=np.uint8).reshape(-1) for s in scales)
        d = run(arch, qual, pairs, c, scales, K)
        width = 8 if make_op(arch, qual).d_type.itemsize == 4 else 4
        docs = "-" if doc is None else f"0x{doc:0{width}X}"
        same = "" if doc is None else ("yes" if d == doc else "NO")
        print(f"{name[:62]:<62} {f'0x{d:0{width}X}':>10} {docs:>12}  {same}")
        if why and (doc is None or d != doc):
            print(f"    {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
