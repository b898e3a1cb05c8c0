"""Published bit-level observations of tensor-core outputs, replayed on our primary theories.

Each observation is one dot product (or a pair, for monotonicity) that a paper or its published
test suite reports from real hardware, run through `mmaformal.simulate` with the primary theory
of that GPU's architecture. The expected value is the hardware's, as published; the test shares
no code with the core beyond the public simulate/bits API. An observation our theory does not
reproduce would be a finding: strict xfail with the reason (none so far).

Sources:
- Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA tensor cores", PeerJ Comput.
  Sci. 7:e330 (2021), and its test suite github.com/north-numerical-computing/
  tensor-cores-numerical-behavior (files tc_test_numerics-V100.cu, -T4-A100-binary16.cu,
  -A100-bf16.cu, -A100-tf32.cu): each test's PASS condition is the output the authors observed on
  that GPU (the suite was written to show those features). The suite runs wmma 16x16x16 with the
  data in k < 4 and zeros elsewhere; the extra all-zero k-blocks leave an exact result unchanged,
  so the data is run here as the first k < 4 elements of the architecture's mma.sync
  (V100: m8n8k4, T4: m16n8k8, A100: m16n8k16 f16/bf16, m16n8k8 tf32). Tests whose C code indexes
  h_b[j-1] at j = 0 (A100 bf16/tf32 "sum starts from largest element") are left out.
- Seed 000 (Sun et al., "Dissecting Tensor Cores via microbenchmarks") sec. 8.1, Tables 12, 13, 15
  (A100): a single product of operands initialised in the operand format is exact (zero error
  against the FP32 CPU result) for bf16, f16 and tf32; with f16 C/D (Table 14) the product equals
  the CPU FP32 result rounded to f16.
- Seed 002 Table 8 is in tests/test_table8.py, its Figure 3 (CDNA3 bias, a statistic) in
  tests/test_accuracy.py.
"""
from __future__ import annotations

import struct
from fractions import Fraction as Fr

import numpy as np
import pytest

import mmaformal
from mmaformal import isa
from mmaformal.simulate import bits_of, storage_dtype, value_of

two = lambda e: Fr(2) ** e  # noqa: E731


def _raw(v, fmt):
    """Storage bits of value v: exact in fmt; for tf32, the f32 container as loaded by the
    hardware (the suite stores f32 values; the tf32 unit reads them)."""
    if fmt == "tf32":
        return struct.unpack("<I", struct.pack("<f", float(v)))[0]
    b = bits_of(Fr(v), fmt)
    assert b is not None, (v, fmt)
    return b


def dot(instr, a, b, c):
    """d[0, 0] of the instruction with row 0 of A = a, column 0 of B = b (zero-padded to K),
    C[0, 0] = c, as an exact value (Fraction, or '0', '-0', 'inf', 'nan')."""
    ins = isa.lookup(instr)
    dt = storage_dtype
    A = np.zeros((ins.m, ins.k), dt(ins.a))
    B = np.zeros((ins.k, ins.n), dt(ins.b))
    C = np.zeros((ins.m, ins.n), dt(ins.c))
    for k, (x, y) in enumerate(zip(a, b)):
        A[0, k], B[k, 0] = _raw(x, ins.a), _raw(y, ins.b)
    C[0, 0] = _raw(c, ins.c)
    d = int(mmaformal.simulate(ins, A, B, C)[0, 0])
    v = value_of(d, ins.d)
    return Fr(0) if v in ("0", "-0") else v


# GPU -> instructions: (f16 in, f32 out), (f16 in, f16 out), (bf16), (tf32)
V100 = {"f32": "sm70/mma.m8n8k4.f32.f16.f16.f32", "f16": "sm70/mma.m8n8k4.f16.f16.f16.f16"}
T4 = {"f32": "sm75/mma.m16n8k8.f32.f16.f16.f32", "f16": "sm75/mma.m16n8k8.f16.f16.f16.f16"}
A100 = {"f32": "sm80/mma.m16n8k16.f32.f16.f16.f32", "f16": "sm80/mma.m16n8k16.f16.f16.f16.f16",
        "bf16": "sm80/mma.m16n8k16.f32.bf16.bf16.f32", "tf32": "sm80/mma.m16n8k8.f32.tf32.tf32.f32"}

# ---- Fasi et al. 2021 suite: (id, gpu instrs, mode, a, b, c, expected | "nonzero") ----------
ONE = Fr(1)
BELOW1_16 = 1 - two(-11)           # largest binary16 below 1
BELOW1_BF = 1 - two(-8)            # largest bfloat16 below 1
BELOW1_32 = 1 - two(-24)           # largest binary32 below 1


def _common(gpu, mode, tag, F24, quarter_b, file):
    """The tests shared by the V100 and T4/A100 binary16 files (F24: one extra alignment bit;
    quarter_b: the T4/A100 file uses a = 0.5 in B3/B4/D5)."""
    h = 0.5 if quarter_b else 1
    sub = two(-24)
    rows = [
        ("A subnormal f16 input (binary16 mode)", "f16", [sub], [4], 0, two(-22)),
        ("A subnormal f16 input (binary32 mode)", mode, [sub], [4], 0, two(-22)),
        ("A binary32 subnormal c", mode, [], [], two(-149), two(-149)),
        ("A f16 subnormal output (binary16 mode), a*b", "f16", [two(-14)], [two(-1)], 0, "nonzero"),
        ("A f16 subnormal output (binary16 mode), a*b + c", "f16", [two(-14)], [1], -two(-15), "nonzero"),
        ("A f16 subnormal output (binary32 mode), a*b", mode, [two(-14)], [two(-1)], 0, "nonzero"),
        ("A f16 subnormal output (binary32 mode), a*b + c", mode, [two(-14)], [1], -two(-15), "nonzero"),
        ("B products exact", mode, [BELOW1_16], [BELOW1_16], 0, 1 - two(-10) + two(-22)),
        ("B products exact, 4 terms", mode, [BELOW1_16] * 4, [BELOW1_16] * 4, 0, 4 * (1 - two(-10) + two(-22))),
        ("B products exact (binary16 mode)", "f16", [BELOW1_16, BELOW1_16], [BELOW1_16, two(-11)], 0,
         1 - two(-10) + two(-11)),
        ("B accumulated in binary32", mode, [h] * 4, [sub] * 4, 1, ONE),
    ]
    for j in range(4):
        a = [h] * 4
        b = [sub] * 4
        a[j], b[j] = 1, 1
        rows.append((f"B sum starts from the largest element (j={j})", mode, a, b, sub, ONE))
    rows += [
        ("C round-down for positive values", mode, [1] * 4, [2, two(-23) + two(-24), 0, 0], 0, Fr(2)),
        ("C round-up for negative values", mode, [1] * 4, [-2, -two(-23) - two(-24), 0, 0], 0, Fr(-2)),
        ("C accumulator rounded to nearest (binary16 mode)", "f16", [sub, sub], [two(-1), two(-2)], 0, sub),
        ("D1 extra bits in the significand alignment", mode, [1], [1], -BELOW1_32,
         two(-24) if F24 else two(-23)),
        ("D2 normalization in addition", mode, [1] * 4, [sub] * 4, 1 - two(-24), 1 + two(-23)),
        ("D3 normalization in subtraction", mode, [1, 1], [1, -two(-24)], -1 + two(-24),
         Fr(0) if F24 else two(-23)),
    ]
    for i in range(4):
        b = [1] * 4
        b[i] = two(-23)
        rows.append((f"D4 carry-out bits (b{i} = 2^-23)", mode, [1] * 4, b, 1 + two(-22) + two(-23), 4 + two(-21)))
    rows += [
        ("D4 third carry bit", mode, [1] * 4, [1, 1.5, 1.75, 1.875], 1.875, Fr(8)),
        ("D4 round-down in normalization", mode, [1] * 4, [1] * 4, 1 + two(-22) + two(-23), Fr(5)),
        ("D4 round-up in normalization (negative)", mode, [1] * 4, [-1] * 4, -1 - two(-22) - two(-23), Fr(-5)),
    ]
    return [(f"{tag}: {r[0]}", gpu[r[1]], *r[2:], file) for r in rows]


FASI = (_common(V100, "f32", "V100", F24=False, quarter_b=False, file="tc_test_numerics-V100.cu")
        + _common(T4, "f32", "T4", F24=True, quarter_b=True, file="tc_test_numerics-T4-A100-binary16.cu")
        + _common(A100, "f32", "A100 binary16", F24=True, quarter_b=True, file="tc_test_numerics-T4-A100-binary16.cu"))

# A100 bfloat16 and tf32 files (binary32 accumulator)
for fmt, below1, subin, bsub, file in (("bf16", BELOW1_BF, two(-133), two(7), "tc_test_numerics-A100-bf16.cu"),
                                       ("tf32", BELOW1_32, two(-136), two(10), "tc_test_numerics-A100-tf32.cu")):
    ins = A100[fmt]
    # tf32: the suite passes f32 values; the unit reads the container by truncation, so
    # belowone = 1 - 2^-24 is read as 1 - 2^-11 (the PASS condition says so)
    p1 = (1 - two(-10) + two(-22)) if fmt == "tf32" else (1 - two(-7) + two(-16))
    rows = [
        ("A subnormal input", [subin], [bsub], 0, two(-126)),
        ("A binary32 subnormal c", [], [], two(-149), two(-149)),
        ("A subnormal output, a*b", [two(-126)], [two(-1)], 0, two(-127)),
        ("A subnormal output, a*b + c", [two(-126)], [1], -two(-127), two(-127)),
        ("B products exact", [below1], [below1], 0, p1),
        ("B products exact, 4 terms", [below1] * 4, [below1] * 4, 0, 4 * p1),
        ("B accumulated in binary32", [0.5] * 4, [two(-24)] * 4, 1, ONE),
        ("C round-down for positive values", [1] * 4, [2, two(-23) + two(-24), 0, 0], 0, Fr(2)),
        ("C round-up for negative values", [1] * 4, [-2, -two(-23) - two(-24), 0, 0], 0, Fr(-2)),
        ("D1 extra bits in the significand alignment", [1], [1], -BELOW1_32, two(-24)),
        ("D2 normalization in addition", [1] * 4, [two(-24)] * 4, 1 - two(-24), 1 + two(-23)),
        ("D3 normalization in subtraction", [1, 1], [1, -two(-24)], -1 + two(-24), Fr(0)),
    ]
    for i in range(4):
        b = [1] * 4
        b[i] = two(-23)
        rows.append((f"D4 carry-out bits (b{i} = 2^-23)", [1] * 4, b, 1 + two(-22) + two(-23), 4 + two(-21)))
    rows += [
        ("D4 third carry bit", [1] * 4, [1, 1.5, 1.75, 1.875], 1.875, Fr(8)),
        ("D4 round-down in normalization", [1] * 4, [1] * 4, 1 + two(-22) + two(-23), Fr(5)),
        ("D4 round-up in normalization (negative)", [1] * 4, [-1] * 4, -1 - two(-22) - two(-23), Fr(-5)),
    ]
    FASI += [(f"A100 {fmt}: {r[0]}", ins, *r[1:], file) for r in rows]


@pytest.mark.parametrize("name, instr, a, b, c, want, file", FASI, ids=[f[0] for f in FASI])
def test_fasi_2021_suite(name, instr, a, b, c, want, file):
    """Source: Fasi et al. 2021 (PeerJ CS 7:e330), test suite file `file`, test `name`."""
    got = dot(instr, a, b, c)
    if want == "nonzero":
        assert got != 0, (name, got)
    else:
        assert got == Fr(want), (name, instr, got, Fr(want))


MONO = [
    # (id, instr, a, b, c_low, c_high): the observed output with c_high is SMALLER than with c_low
    ("V100", V100["f32"], [1] * 4, [two(-24)] * 4, 1 - two(-24), ONE, "tc_test_numerics-V100.cu"),
    ("T4", T4["f32"], [0.5] * 4, [two(-24)] * 3 + [two(-23) + two(-24)], 1 - two(-24), ONE,
     "tc_test_numerics-T4-A100-binary16.cu"),
    ("A100 binary16", A100["f32"], [0.5] * 4, [two(-24)] * 3 + [two(-23) + two(-24)], 1 - two(-24), ONE,
     "tc_test_numerics-T4-A100-binary16.cu"),
    ("A100 bf16", A100["bf16"], [0.5] * 4, [two(-24)] * 3 + [two(-23) + two(-24)], 1 - two(-24), ONE,
     "tc_test_numerics-A100-bf16.cu"),
    ("A100 tf32", A100["tf32"], [0.5] * 4, [two(-24)] * 3 + [two(-23) + two(-24)], 1 - two(-24), ONE,
     "tc_test_numerics-A100-tf32.cu"),
]


@pytest.mark.parametrize("gpu, instr, a, b, c_lo, c_hi, file", MONO, ids=[m[0] for m in MONO])
def test_fasi_2021_not_monotonic(gpu, instr, a, b, c_lo, c_hi, file):
    """Source: Fasi et al. 2021, test D5 "monotonicity of dot product" (file `file`): a larger c
    gave a smaller result on the GPU."""
    lo, hi = dot(instr, a, b, c_lo), dot(instr, a, b, c_hi)
    assert hi < lo, (gpu, lo, hi)


SEED000 = [
    ("bf16", A100["bf16"], "f32"), ("f16", A100["f32"], "f32"), ("tf32", A100["tf32"], "f32"),
    ("f16 (f16 C/D)", A100["f16"], "f16"),
]


@pytest.mark.parametrize("what, instr, out", SEED000, ids=[s[0] for s in SEED000])
def test_seed000_single_products_exact(what, instr, out):
    """Source: seed 000 sec. 8.1, Tables 12, 13, 15 (A100, operands initialised in their own
    format: zero error of d0 = a0 * b0 against the FP32 CPU result) and Table 14 (f16 C/D: zero
    error against the CPU FP32 result rounded to f16). Same N(0, 1) draws as the paper's setup,
    our seed."""
    ins = isa.lookup(instr)
    rng = np.random.default_rng(0)
    fa = "f16" if ins.a == "f16" else ("bf16" if ins.a == "bf16" else "tf32")
    from mmaformal.classes import from_float
    xs = from_float(fa, rng.standard_normal(200))
    ys = from_float(fa, rng.standard_normal(200))
    for x, y in zip(xs, ys):
        vx, vy = value_of(int(x), fa), value_of(int(y), fa)
        vx = Fr(0) if isinstance(vx, str) else vx
        vy = Fr(0) if isinstance(vy, str) else vy
        exact = vx * vy
        # the CPU FP32 product (exact here: at most 22 significant bits), rounded to f16 for f16 D
        want = np.float32(float(exact))
        assert Fr(float(want)) == exact
        if out == "f16":
            want = Fr(float(np.float16(float(exact))))      # RNE to binary16, host conversion
        else:
            want = exact
        got = dot(instr, [vx], [vy], 0)
        assert got == want, (what, vx, vy, got, want)
