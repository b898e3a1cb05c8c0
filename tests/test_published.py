"""Published bit-level observations of tensor-core outputs, replayed on our primary theories.

Each observation is one dot product (or a pair, for monotonicity) that a paper or its published
test suite reports from real hardware, run through `mmaformal.simulate` with the primary theory
of that GPU's architecture (the Khattak-Mikaitis sets: thousands of dot products per GPU and
format, through the theory's `Theory.dot` on numpy lanes, and a tile of each through `simulate`).
The expected value is the hardware's, as published; the test shares no code with the core beyond
the public simulate/bits/theory API. An observation the primary theory does not reproduce is a
finding: it is tested as such, with the count the primary gets and the rival that matches every
output (so far one: the B200's fp8 mma.sync, which is the sm90 HMMA-halves structure, not the
native FDPA the sm100 theories had as primary; the HMMA-halves theory is primary now and the native
FDPA stays as the refuted rival).

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
- [Sun2023] (Sun et al., "Dissecting Tensor Cores via microbenchmarks") sec. 8.1, Tables 12, 13, 15
  (A100): a single product of operands initialised in the operand format is exact (zero error
  against the FP32 CPU result) for bf16, f16 and tf32; with f16 C/D (Table 14) the product equals
  the CPU FP32 result rounded to f16.
- Khattak, Mikaitis, "Accurate Models of NVIDIA Tensor Cores", arXiv:2512.07004 (2025), data
  github.com/north-numerical-computing/MATLAB-tensor-core model_validation/ (V100, A100, A2, Ada,
  L40S, H100, H200, B200; fp16/bf16/tf32 via wmma, fp8 via mma.sync m16n8k32 or, for the
  H100/H200 f32 outputs, wgmma with a zero accumulator): 48 sets, the first 1000 dot products of
  each in tests/data/published/khattak-mikaitis-2025.tar.zst (details above the KM_ tests).
- huweim/emulation_sys bit_width_test_/: the accumulator widths of its README table, with the
  inputs of its probe programs (details above the huweim tests).
- [Xie2025] Table 8 is in tests/test_table8.py, its Figure 3 (CDNA3 bias, a statistic) in
  tests/test_accuracy.py.
"""
from __future__ import annotations

import functools
import io
import json
import struct
from fractions import Fraction as Fr
from pathlib import Path

import numpy as np
import pytest

import mmaformal
from mmaformal import isa
from mmaformal import theory as T
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


SUN2023 = [
    ("bf16", A100["bf16"], "f32"), ("f16", A100["f32"], "f32"), ("tf32", A100["tf32"], "f32"),
    ("f16 (f16 C/D)", A100["f16"], "f16"),
]


@pytest.mark.parametrize("what, instr, out", SUN2023, ids=[s[0] for s in SUN2023])
def test_sun2023_single_products_exact(what, instr, out):
    """Source: [Sun2023] sec. 8.1, Tables 12, 13, 15 (A100, operands initialised in their own
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


# ---- Khattak & Mikaitis: per-GPU output vectors (model_validation/) ------------------------
# Source: F. A. Khattak, M. Mikaitis, "Accurate Models of NVIDIA Tensor Cores", arXiv:2512.07004
# (2025), and "Generalized Methodology for Determining Numerical Features of Hardware
# Floating-Point Matrix Multipliers: Part I", HPEC 2025 (arXiv:2510.15884); data and capture
# programs: github.com/north-numerical-computing/MATLAB-tensor-core, folder model_validation/
# (commit b12b5a70; <GPU>/<format>/{a,b,c,d}_*.txt; CUDA/wmma_fp16_bf16_tf32_input.cu,
# CUDA/mma_fp8_output_fp32.cu, CUDA/mma_fp8_output_fp16.cu). The first 1000 dot products of every
# set are tests/data/published/khattak-mikaitis-2025.tar.zst (raw bits; remade by
# tests/data/published/make_khattak_mikaitis.py from the repository).
#
# Where each value sits (read from the capture programs):
# - fp16/bf16/tf32: one wmma::mma_sync per dot product, m16n16k16 (tf32: m16n16k8; tf32 passes
#   the f32 container), A row-major, B col-major; a = row 0 of A, b = column 0 of B in the first
#   L elements (V100 4, A100/A2/Ada/L40S 8 (tf32 4), H100/H200/B200 16 (tf32 4)), zeros after;
#   c = C[0, 0] (f32; for f16 C/D rounded by __float2half), d = D[0, 0].
# - E4M3/E5M2: one mma.sync.m16n8k32.row.col per dot product: all 32 k of row 0 / column 0 (the
#   kernel is called with the b file as its A operand: products commute, so the dot product is
#   the same), c = C[0, 0] (f32, or __float2half(c) for f16 C/D).
# - H100/H200 E4M3/E5M2 with f32 output: the outputs are a.b without c, at 13-bit precision (see
#   test_km_outputs_belong_to_inputs); the repository's Validate_TC_models.m replays exactly
#   these sets with C = 0 ("D= AB+D where D is zero for fp8 with WGMMA"): they were captured with
#   wgmma and a zero accumulator, not with the mma.sync program of CUDA/. They are replayed as
#   sm90/wgmma.m64n8k32 with C = 0 (the wgmma program and its N are not published; one theory,
#   sm90.fp8.f32, covers every N).

KM_PACK = Path(__file__).resolve().parent / "data" / "published" / "khattak-mikaitis-2025.tar.zst"
KM_ARCH = {"V100": "sm70", "A100": "sm80", "A2": "sm80", "Ada": "sm89", "L40S": "sm89",
           "H100": "sm90", "H200": "sm90", "B200": "sm100"}
KM_N = 1000
#: (gpu, format, out) sets whose f32 outputs hold no c (wgmma with a zero accumulator)
KM_NO_C = {(g, f, "fp32") for g in ("H100", "H200") for f in ("E4M3", "E5M2")}
#: B200 fp8 mma.sync: the refuted native-FDPA rival (L 32, the former primary), the dot products
#: of the 1000 it reproduces, and the sm90-style HMMA-halves primary that reproduces all of them
KM_B200_FP8 = {
    ("B200", "E4M3", "fp32"): ("sm100.mma-fp8.t-fdpa.f32", 638, "sm100.mma-fp8.k32.f32.hmma"),
    ("B200", "E4M3", "fp16"): ("sm100.mma-fp8.t-fdpa.f16", 628, "sm100.mma-fp8.k32.f16.hmma"),
    ("B200", "E5M2", "fp32"): ("sm100.mma-fp8.t-fdpa.f32", 661, "sm100.mma-fp8.k32.f32.hmma"),
    ("B200", "E5M2", "fp16"): ("sm100.mma-fp8.t-fdpa.f16", 687, "sm100.mma-fp8.k32.f16.hmma"),
}


def km_instr(gpu: str, fmt: str, out: str) -> str:
    """The catalog instruction the capture program ran (see the comment above)."""
    arch, o = KM_ARCH[gpu], ("f16" if out == "fp16" else "f32")
    if fmt in ("E4M3", "E5M2"):
        e = fmt.lower()
        if (gpu, fmt, out) in KM_NO_C:
            return f"{arch}/wgmma.m64n8k32.f32.{e}.{e}"
        return f"{arch}/mma.m16n8k32.{o}.{e}.{e}.{o}"
    if fmt == "tf32":
        return f"{arch}/wmma.mma.m16n16k8.f32.tf32.tf32.f32"
    if fmt == "bf16":
        return f"{arch}/wmma.mma.m16n16k16.f32.bf16.bf16.f32"
    return f"{arch}/wmma.mma.m16n16k16.{o}.{o}"       # f16 A/B: <D type>.<C type>


@functools.lru_cache(maxsize=None)
def _km_pack():
    from mmaformal import packs
    return packs.open_pack(KM_PACK)


@functools.lru_cache(maxsize=None)
def _km_index() -> dict:
    return json.loads(_km_pack().get("index.json"))


@functools.lru_cache(maxsize=None)
def _km_member(name: str) -> np.ndarray:
    return np.load(io.BytesIO(_km_pack().get(name)), allow_pickle=False)


def km_set(gpu, fmt, out):
    """(A rows, B rows, C, D) raw bits of one set as the GPU received / returned them: C in the
    C format of the instruction (f32 bits, or __float2half of them, RNE), D in the output
    format."""
    s = next(s for s in _km_index()["sets"] if (s["gpu"], s["format"], s["out"]) == (gpu, fmt, out))
    A, B, C, D = (_km_member(s[k]) for k in "abcd")
    if out == "fp16":
        C = C.view(np.float32).astype(np.float16).view(np.uint16)    # __float2half: RNE
    return A, B, C, D


KM_SETS = [(s["gpu"], s["format"], s["out"]) for s in _km_index()["sets"]]
KM_IDS = [f"{g}-{f}-{o}" for g, f, o in KM_SETS]


def km_dots(instr, A, B, C, theory=None) -> np.ndarray:
    """D bits of the dot products (row n of A, row n of B, C[n]) placed as the capture program
    placed them: the first len(row) k of the instruction's K, zeros after. Evaluated through the
    theory's one entry point (Theory.dot, on numpy lanes: one lane per dot product, as simulate
    does per tile element)."""
    from mmaformal import theory as _theory
    from mmaformal.bits import NUMPY
    from mmaformal import fp
    ins = isa.lookup(instr)
    th = _theory.default().resolve(ins, theory)
    n, L = A.shape
    assert L <= ins.k
    wa, wb, wc = (fp.fmt(f).storage for f in (ins.a, ins.b, ins.c))
    za, zb = np.zeros(n, A.dtype), np.zeros(n, B.dtype)
    a = [NUMPY.lift(A[:, k] if k < L else za, wa) for k in range(ins.k)]
    b = [NUMPY.lift(B[:, k] if k < L else zb, wb) for k in range(ins.k)]
    d = th.dot(NUMPY, a, b, NUMPY.lift(C, wc), None, None)
    v = np.broadcast_to(np.asarray(d.v), (n,))
    return np.array([int(x) for x in v], dtype=np.uint64) if v.dtype == object else v.astype(np.uint64)


def test_km_fixture():
    """The fixture: 48 sets (8 GPUs), 1000 dot products each, digests of the manifest intact
    (open_pack checks every member against KM_PACK's .sha256)."""
    ix = _km_index()
    assert ix["commit"].startswith("b12b5a70") and ix["n"] == KM_N
    assert len(KM_SETS) == 48 and {g for g, _, _ in KM_SETS} == set(KM_ARCH)
    for s in ix["sets"]:
        A, B, C, D = km_set(s["gpu"], s["format"], s["out"])
        assert len(A) == len(B) == len(C) == len(D) == KM_N, s["paths"]
    from mmaformal import packs
    assert KM_PACK.stat().st_size + packs.manifest_path(KM_PACK).stat().st_size < 500_000


def _km_values(bits: np.ndarray, fmt: str) -> np.ndarray:
    """Host values (float64) of raw bits, through numpy / ml_dtypes (no mmaformal code)."""
    import ml_dtypes
    dt = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "E4M3": ml_dtypes.float8_e4m3fn,
          "E5M2": ml_dtypes.float8_e5m2, "tf32": np.float32, "f16": np.float16, "f32": np.float32}[fmt]
    return bits.view(dt).astype(np.float64)


@pytest.mark.parametrize("gpu, fmt, out", KM_SETS, ids=KM_IDS)
def test_km_outputs_belong_to_inputs(gpu, fmt, out):
    """Source: Khattak & Mikaitis, arXiv:2512.07004 (2025); github.com/north-numerical-computing/
    MATLAB-tensor-core model_validation/<gpu>/<fmt>/{a,b,c,d}_*.txt. Before trusting a set, check it
    against its own inputs with host arithmetic: every output is within 2^-6 (relative to the
    largest product or c) of the exact a.b + c, and c is never zero, so the check sees it. The
    H100/H200 fp8 f32-output sets fail that with their c and pass it with c = 0 (so they are
    replayed with C = 0); every other set is the other way round."""
    A, B, C, D = km_set(gpu, fmt, out)
    o = "f16" if out == "fp16" else "f32"
    p = _km_values(A, fmt) * _km_values(B, fmt)             # exact in float64
    c = _km_values(C, o)
    d = _km_values(D, o)
    assert (c != 0).all()
    scale = np.maximum(np.abs(p).max(axis=1), np.abs(c))
    err_c = np.abs(d - (p.sum(axis=1) + c)) / scale
    err_0 = np.abs(d - p.sum(axis=1)) / scale
    with_c, without_c = err_c.max() <= 2.0 ** -6, err_0.max() <= 2.0 ** -6
    if (gpu, fmt, out) in KM_NO_C:
        assert without_c and not with_c and np.median(err_c) > 0.05, (err_0.max(), err_c.max())
    else:
        assert with_c and not without_c, (err_c.max(), err_0.max())


@pytest.mark.parametrize("gpu, fmt, out", KM_SETS, ids=KM_IDS)
def test_km_replay(gpu, fmt, out):
    """Source: Khattak & Mikaitis, arXiv:2512.07004 (2025); github.com/north-numerical-computing/
    MATLAB-tensor-core model_validation/<gpu>/<fmt>/d_<gpu>_<out>.txt (first 1000 dot products).
    Every dot product through the primary theory of the instruction the GPU ran gives the GPU's bits."""
    A, B, C, D = km_set(gpu, fmt, out)
    if (gpu, fmt, out) in KM_NO_C:
        C = np.zeros_like(C)
    got = km_dots(km_instr(gpu, fmt, out), A, B, C)
    assert int((got == D).sum()) == KM_N, (km_instr(gpu, fmt, out), np.flatnonzero(got != D)[:10])


@pytest.mark.parametrize("gpu, fmt, out", sorted(KM_B200_FP8),
                         ids=[f"{g}-{f}-{o}" for g, f, o in sorted(KM_B200_FP8)])
def test_km_b200_fp8_mma_is_hmma(gpu, fmt, out):
    """Source: Khattak & Mikaitis, arXiv:2512.07004 (2025); github.com/north-numerical-computing/
    MATLAB-tensor-core model_validation/B200/<fmt>/d_B200_<out>.txt (mma.sync.m16n8k32 fp8,
    model_validation/CUDA/mma_fp8_output_<out>.cu). The silicon refutes the native FDPA (the
    Blackwell FP8 row of [Xie2025] Table 4, L 32, F 25, measured there on tcgen05; the former primary,
    now the refuted rival: it reproduces only the counts of KM_B200_FP8) and agrees on every dot
    product with the primary that reads the SASS of sm_100a (isa field `sass`: 2*HMMA.16816): f16
    conversion, two HMMA halves (k mod 4 pairs) chained from +0, then an IEEE add of c: the sm90
    structure."""
    A, B, C, D = km_set(gpu, fmt, out)
    instr = km_instr(gpu, fmt, out)
    native, n_native, primary = KM_B200_FP8[gpu, fmt, out]
    assert T.resolve(instr).id == primary and T.default().resolve(instr, native).status == "refuted"
    assert int((km_dots(instr, A, B, C) == D).sum()) == KM_N
    assert int((km_dots(instr, A, B, C, native) == D).sum()) == n_native < KM_N
    # the same structure as the corroborated sm90 theory of this instruction
    sm90 = instr.replace("sm100/", "sm90/")
    assert int((km_dots(sm90, A, B, C) == D).sum()) == KM_N


@pytest.mark.parametrize("gpu, fmt, out", sorted(KM_NO_C),
                         ids=[f"{g}-{f}-{o}" for g, f, o in sorted(KM_NO_C)])
def test_km_hopper_fp8_f32_not_mma_sync(gpu, fmt, out):
    """Source: Khattak & Mikaitis, arXiv:2512.07004 (2025); github.com/north-numerical-computing/
    MATLAB-tensor-core model_validation/<gpu>/<fmt>/d_<gpu>_fp32.txt and
    model_validation/Validate_TC_models.m (C = 0 for H100/H200 fp8). These outputs are not those of
    the mma.sync program in CUDA/ (the corroborated HMMA-halves theory of mma.sync gives 0 of 1000
    with the file's c): they are wgmma's (F 13, RZ-E8M13) with a zero accumulator, bit for bit."""
    A, B, C, D = km_set(gpu, fmt, out)
    e = fmt.lower()
    assert int((km_dots(f"sm90/mma.m16n8k32.f32.{e}.{e}.f32", A, B, C) == D).sum()) == 0
    assert int((km_dots(km_instr(gpu, fmt, out), A, B, np.zeros_like(C)) == D).sum()) == KM_N


@pytest.mark.parametrize("gpu, fmt, out", KM_SETS, ids=KM_IDS)
def test_km_simulate_tile(gpu, fmt, out):
    """Source: Khattak & Mikaitis, arXiv:2512.07004 (2025); github.com/north-numerical-computing/
    MATLAB-tensor-core model_validation/<gpu>/<fmt>/d_<gpu>_<out>.txt. The first dot products of
    each set through mmaformal.simulate itself, placed as the capture program placed them in a tile
    (a in a row of A from k = 0, b in a column of B, c in C; one dot product per diagonal element),
    the primary theory's bits equal the GPU's."""
    A, B, C, D = km_set(gpu, fmt, out)
    if (gpu, fmt, out) in KM_NO_C:
        C = np.zeros_like(C)
    instr = km_instr(gpu, fmt, out)
    ins = isa.lookup(instr)
    t = min(ins.m, ins.n)
    n, L = A.shape
    At = np.zeros((ins.m, ins.k), A.dtype)
    Bt = np.zeros((ins.k, ins.n), B.dtype)
    Ct = np.zeros((ins.m, ins.n), C.dtype)
    At[:t, :L], Bt[:L, :t] = A[:t], B[:t].T
    Ct[np.arange(t), np.arange(t)] = C[:t]
    d = mmaformal.simulate(ins, At, Bt, Ct)
    assert (d[np.arange(t), np.arange(t)] == D[:t]).all()


# ---- huweim/emulation_sys: accumulator widths --------------------------------------------------
# Source: github.com/huweim/emulation_sys, bit_width_test_/README.md ("Key Findings" table, commit
# e791d08b) and the probes it ran: bit_width_test_/tc_acc_bitwidth.cu (wmma, commit 19df66d1),
# bit_width_test_/tc_acc_bitwidth_fp8.cu (wgmma, commit 69ec80e1),
# bit_width_test_/src/probe_mma_fp8_acc_fp32.cu and src/probe_mma_fp4_acc_fp32.cu (commit
# 3c3057b0). A probe "bit" b asks for c + (a1 + a2) with a1 + a2 = 1 that needs b bits; the
# reported width W is the last b that still gives c + 1 (the probe stops at the first failure).
# The table lists the RTX A6000 as sm_89; the A6000 is an Ampere GA102 part (sm_86), whose
# wmma is the catalog's sm80 one.

HUWEIM_WMMA = [   # (GPUs as the table names them, wmma instruction, reported width W)
    ("A100", "sm80/wmma.mma.m16n16k16.f32.f32", 24),
    ("RTX 4090", "sm89/wmma.mma.m16n16k16.f32.f32", 24),
    ("RTX A6000", "sm80/wmma.mma.m16n16k16.f32.f32", 24),
    ("H100", "sm90/wmma.mma.m16n16k16.f32.f32", 25),
    ("RTX 5090", "sm120/wmma.mma.m16n16k16.f32.f32", 25),
]


@pytest.mark.parametrize("gpu, instr, width", HUWEIM_WMMA, ids=[h[0] for h in HUWEIM_WMMA])
def test_huweim_wmma_fp16_accumulator_width(gpu, instr, width):
    """Source: huweim/emulation_sys bit_width_test_/README.md (fp16 in, f32 accumulator, wmma:
    A100 / 4090 / A6000 24 bits, H100 / 5090 25 bits) with tc_acc_bitwidth.cu's inputs: c = 2^23,
    a = [__double2half(1 - 2^-k), __double2half(2^-k)], b = [1, 1], k = bit - 23, probed from
    bit 24 up; PASS when d = 2^23 + 1. Our model must pass bits 24..W and fail at W + 1."""
    def passes(bit):
        k = bit - 23
        a = [Fr(float(np.float16(1.0 - 2.0 ** -k))), Fr(float(np.float16(2.0 ** -k)))]
        return dot(instr, a, [1, 1], two(23)) == two(23) + 1
    assert all(passes(b) for b in range(24, width + 1)) and not passes(width + 1), gpu


def test_huweim_wgmma_fp8_accumulator_width():
    """Source: huweim/emulation_sys bit_width_test_/README.md (H100, wgmma, E5M2 x E4M3 -> f32:
    13 bits) with tc_acc_bitwidth_fp8.cu's inputs (wgmma.m64n8k32.f32.e5m2.e4m3): c = 2^11,
    a = [fp8_e5m2(1 - 2^-k), fp8_e5m2(2^-k)] (RNE, satfinite), b = [1, 1], k = bit - 11, probed
    from bit 12; PASS when d = 2^11 + 1: bits 12, 13 pass, 14 is the first failure."""
    import ml_dtypes
    e5m2 = lambda x: Fr(float(np.float32(x).astype(ml_dtypes.float8_e5m2).astype(np.float32)))  # noqa: E731
    instr = "sm90/wgmma.m64n8k32.f32.e5m2.e4m3"
    ok = [dot(instr, [e5m2(1 - 2.0 ** -(b - 11)), e5m2(2.0 ** -(b - 11))], [1, 1], two(11)) == two(11) + 1
          for b in (12, 13, 14)]
    assert ok == [True, True, False]


def test_huweim_rtx5090_f8f6f4_accumulator():
    """Source: huweim/emulation_sys bit_width_test_/README.md (RTX 5090, mma f8f6f4: 25 bits) with
    src/probe_mma_fp8_acc_fp32.cu (mma.sync.kind::f8f6f4.m16n8k32 e4m3, c = 2^24: four products
    0.5 * 1 give 2^24 + 2, "kept"; eight products 0.25 * 1 give 2^24, "lost") and
    src/probe_mma_fp4_acc_fp32.cu (e2m1: four products 0.5 * 1 kept; its second case is
    uninformative: 0.25 converts to e2m1 0, RNE, so the products are zero either way)."""
    e4m3 = "sm120/mma.m16n8k32.kind::f8f6f4.f32.e4m3.e4m3.f32"
    e2m1 = "sm120/mma.m16n8k32.kind::f8f6f4.f32.e2m1.e2m1.f32"
    assert dot(e4m3, [Fr(1, 2)] * 4, [1] * 4, two(24)) == two(24) + 2
    assert dot(e4m3, [Fr(1, 4)] * 8, [1] * 8, two(24)) == two(24)
    assert dot(e2m1, [Fr(1, 2)] * 4, [1] * 4, two(24)) == two(24) + 2


def test_km_generator_names_the_fixture_sets():
    """The script that remakes the fixture (tests/data/published/make_khattak_mikaitis.py,
    from a fetched copy of the repository) lists exactly the fixture's sets, in its order."""
    import importlib.util
    path = KM_PACK.parent / "make_khattak_mikaitis.py"
    spec = importlib.util.spec_from_file_location("make_khattak_mikaitis", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    listed = [(g, f, o) for g, f, outs in mod.SETS for o in outs if (g, f, o) not in mod.MISSING]
    assert listed == KM_SETS and mod.NAME + ".tar.zst" == KM_PACK.name
