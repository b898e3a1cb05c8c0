"""Tests of mmaformal.simulate: the array contract, shapes and broadcasting, block scales,
theory selection, chunking and bounded memory, the value helpers, and explain == simulate."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import mmaformal
from mmaformal import fp, isa
from mmaformal.explain import explain
from mmaformal.simulate import as_bits, bits_of, decimal, parse_value, storage_dtype, value_of

H16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"
MX = "sm120/mma.m16n8k32.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e2m1.e4m3.f32.ue8m0"
NV = "sm120/mma.m16n8k64.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3"


def rand_bits(fmt_name, shape, rng):
    f = fp.fmt(fmt_name)
    w = f.k + f.pad
    x = rng.integers(0, 1 << min(w, 63), size=shape, dtype=np.uint64)
    return x.astype(storage_dtype(fmt_name))


def rand_values(fmt_name, shape, rng, lo=-4, hi=4):
    """Random finite normal values of moderate exponent, as raw bits."""
    f = fp.fmt(fmt_name)
    e = rng.integers(max(f.emin, lo), min(f.emax, hi) + 1, size=shape)
    t = rng.integers(0, 1 << f.t, size=shape) if f.t else np.zeros(shape, np.int64)
    s = rng.integers(0, 2, size=shape) if f.signed else np.zeros(shape, np.int64)
    code = ((e + f.bias) << f.t) | t
    code = np.minimum(code, f.max_code) | (s << (f.k - 1))
    return (code.astype(np.uint64) << np.uint64(f.pad)).astype(storage_dtype(fmt_name))


# --------------------------------------------------------------------------------------------
# The array contract


def test_float_arrays_are_read_by_bits():
    rng = np.random.default_rng(0)
    A = rand_bits("f16", (16, 16), rng)
    B = rand_bits("f16", (16, 8), rng)
    C = rand_bits("f32", (16, 8), rng)
    D = mmaformal.simulate(H16, A, B, C)
    D2 = mmaformal.simulate(H16, A.view(np.float16), B.view(np.float16), C.view(np.float32))
    assert np.array_equal(D, D2) and D.dtype == np.uint32


def test_exact_casts_accepted_inexact_rejected():
    rng = np.random.default_rng(1)
    A = rand_values("f16", (16, 16), rng)
    B = rand_values("f16", (16, 8), rng)
    C = rand_values("f32", (16, 8), rng)
    D = mmaformal.simulate(H16, A, B, C)
    D64 = mmaformal.simulate(H16, A.view(np.float16).astype(np.float64),
                             B.view(np.float16).astype(np.float32), C.view(np.float32).astype(np.float64))
    assert np.array_equal(D, D64)
    bad = A.view(np.float16).astype(np.float64)
    bad[3, 5] = 1 + 2.0 ** -20
    with pytest.raises(ValueError, match=r"not exactly representable in f16.*\(3, 5\)|\(3, 5\).*not exactly"):
        mmaformal.simulate(H16, bad, B, C)


def test_ml_dtypes_arrays():
    rng = np.random.default_rng(2)
    name = "sm90/mma.m16n8k16.f32.bf16.bf16.f32"
    A = rand_bits("bf16", (16, 16), rng)
    B = rand_bits("bf16", (16, 8), rng)
    C = rand_bits("f32", (16, 8), rng)
    D = mmaformal.simulate(name, A, B, C)
    assert np.array_equal(D, mmaformal.simulate(name, A.view(ml_dtypes.bfloat16), B.view(ml_dtypes.bfloat16), C))
    name = "sm120/mma.m16n8k32.kind::f8f6f4.f32.e2m1.e3m2.f32"
    A = rand_bits("e2m1", (16, 32), rng)
    B = rand_bits("e3m2", (32, 8), rng)
    D = mmaformal.simulate(name, A, B, C)
    D2 = mmaformal.simulate(name, A.view(ml_dtypes.float4_e2m1fn), B.view(ml_dtypes.float6_e3m2fn), C)
    assert np.array_equal(D, D2)
    # exact cast float32 -> e2m1
    D3 = mmaformal.simulate(name, A.view(ml_dtypes.float4_e2m1fn).astype(np.float32), B, C)
    assert np.array_equal(D, D3)


@pytest.mark.parametrize("bad,msg", [
    (lambda A: A.astype(np.uint8), r"must be uint16 raw bits \(or float16 values\), got uint8"),
    (lambda A: A.astype(np.uint32), r"must be uint16.*got uint32"),
    (lambda A: A.astype(np.int64), r"raw bits must be unsigned \(uint16\), got int64"),
    (lambda A: A.astype(bool), r"unsigned"),
    (lambda A: A.view(np.int16).astype(np.float32) * 0 + 0.1, r"not exactly representable"),
])
def test_bad_dtypes(bad, msg):
    rng = np.random.default_rng(3)
    A = rand_bits("f16", (16, 16), rng)
    with pytest.raises(ValueError, match=msg):
        mmaformal.simulate(H16, bad(A), rand_bits("f16", (16, 8), rng), rand_bits("f32", (16, 8), rng))


def test_bits_above_a_narrow_format():
    rng = np.random.default_rng(4)
    name = "sm120/mma.m16n8k32.kind::f8f6f4.f32.e2m1.e3m2.f32"
    A = rand_bits("e2m1", (16, 32), rng)
    B = rand_bits("e3m2", (32, 8), rng)
    C = rand_bits("f32", (16, 8), rng)
    A[2, 7] = 0x1F
    with pytest.raises(ValueError, match=r"A in format e2m1 uses the low 4 bits.*0xf\); got 0x1f at index \(2, 7\)"):
        mmaformal.simulate(name, A, B, C)
    A[2, 7] = 0
    B[0, 0] = 0x40
    with pytest.raises(ValueError, match=r"B in format e3m2 uses the low 6 bits.*got 0x40"):
        mmaformal.simulate(name, A, B, C)


def test_tf32_container_low_bits_are_allowed():
    """tf32 lives in a uint32 container; the low 13 bits are not part of the value (tf32_round
    = RZ: truncation)."""
    name = "sm90/mma.m16n8k8.f32.tf32.tf32.f32"
    A = np.zeros((16, 8), np.uint32)
    B = np.zeros((8, 8), np.uint32)
    C = np.zeros((16, 8), np.uint32)
    A[0, 0] = 0x3F803FFF          # tf32 1 + 2^-10, plus all 13 low container bits
    B[0, 0] = 0x3F800000
    assert mmaformal.simulate(name, A, B, C)[0, 0] == 0x3F802000


def test_unknown_instruction_names_closest():
    with pytest.raises(isa.UnknownInstruction, match="closest known: sm90/mma.m16n8k16.f32.f16.f16.f32"):
        mmaformal.simulate("sm90/mma.m16n8k16.f32.f16.f16.f33", np.zeros((16, 16), np.uint16),
                           np.zeros((16, 8), np.uint16), np.zeros((16, 8), np.uint32))


# --------------------------------------------------------------------------------------------
# Shapes and broadcasting


@pytest.mark.parametrize("shapes,msg", [
    (((16, 15), (16, 8), (16, 8)), r"A must have shape \(\.\.\., 16, 16\), got \(16, 15\)"),
    (((16, 16), (8, 16), (16, 8)), r"B must have shape \(\.\.\., 16, 8\)"),
    (((16, 16), (16, 8), (8,)), r"C must have shape"),
    (((2, 16, 16), (3, 16, 8), (16, 8)), r"batch dimensions do not broadcast"),
])
def test_bad_shapes(shapes, msg):
    sa, sb, sc = shapes
    with pytest.raises(ValueError, match=msg):
        mmaformal.simulate(H16, np.zeros(sa, np.uint16), np.zeros(sb, np.uint16), np.zeros(sc, np.uint32))


def test_batch_broadcast_equals_per_tile():
    rng = np.random.default_rng(5)
    A = rand_bits("f16", (2, 1, 16, 16), rng)
    B = rand_bits("f16", (3, 16, 8), rng)
    C = rand_bits("f32", (16, 8), rng)
    D = mmaformal.simulate(H16, A, B, C)
    assert D.shape == (2, 3, 16, 8)
    for i in range(2):
        for j in range(3):
            assert np.array_equal(D[i, j], mmaformal.simulate(H16, A[i, 0], B[j], C))


def test_chunking_does_not_change_results():
    rng = np.random.default_rng(6)
    A = rand_bits("f16", (3, 16, 16), rng)
    B = rand_bits("f16", (3, 16, 8), rng)
    C = rand_bits("f32", (3, 16, 8), rng)
    assert np.array_equal(mmaformal.simulate(H16, A, B, C), mmaformal.simulate(H16, A, B, C, chunk=37))


def test_empty_batch():
    D = mmaformal.simulate(H16, np.zeros((0, 16, 16), np.uint16), np.zeros((16, 8), np.uint16),
                           np.zeros((16, 8), np.uint32))
    assert D.shape == (0, 16, 8)


def test_multi_block_amd_forms_as_batch():
    """v_mfma_f32_32x32x4f16 has 2 blocks: pass them as a batch dimension."""
    name = "gfx942/v_mfma_f32_32x32x4_2b_f16"
    ins = isa.lookup(name)
    rng = np.random.default_rng(7)
    A = rand_values("f16", (ins.blocks, 32, 4), rng)
    B = rand_values("f16", (ins.blocks, 4, 32), rng)
    C = rand_values("f32", (ins.blocks, 32, 32), rng)
    D = mmaformal.simulate(name, A, B, C)
    assert D.shape == (2, 32, 32)
    assert np.array_equal(D[1], mmaformal.simulate(name, A[1], B[1], C[1]))


# --------------------------------------------------------------------------------------------
# Block scales


def test_scales_required_and_shaped():
    ins = isa.lookup(MX)
    A = np.zeros((16, 32), np.uint8)
    B = np.zeros((32, 8), np.uint8)
    C = np.zeros((16, 8), np.uint32)
    with pytest.raises(ValueError, match=r"scale_b missing; scale_a has shape \(\.\.\., 16, 1\), scale_b \(\.\.\., 1, 8\)"):
        mmaformal.simulate(MX, A, B, C, scale_a=np.zeros((16, 1), np.uint8))
    with pytest.raises(ValueError, match="scale_a and scale_b missing"):
        mmaformal.simulate(MX, A, B, C)
    with pytest.raises(ValueError, match=r"scale_a must have shape \(\.\.\., 16, 1\), got \(16, 2\)"):
        mmaformal.simulate(MX, A, B, C, np.zeros((16, 2), np.uint8), np.zeros((1, 8), np.uint8))
    with pytest.raises(ValueError, match="takes no scale_a/scale_b"):
        mmaformal.simulate(H16, np.zeros((16, 16), np.uint16), np.zeros((16, 8), np.uint16),
                           np.zeros((16, 8), np.uint32), np.zeros((16, 1), np.uint8), np.zeros((1, 8), np.uint8))
    assert ins.scale == "ue8m0"


def test_scales_scale_the_products():
    """ue8m0 scale 2^s multiplies the dot product exactly; NVFP4 ue4m3 scales per 16-block."""
    rng = np.random.default_rng(8)
    ins = isa.lookup(MX)
    A = rand_values("e2m1", (16, 32), rng, lo=0, hi=1)
    B = rand_values("e4m3", (32, 8), rng, lo=-2, hi=2)
    C = np.zeros((16, 8), np.uint32)
    one = np.full((16, 1), 0x7F, np.uint8), np.full((1, 8), 0x7F, np.uint8)
    D1 = mmaformal.simulate(MX, A, B, C, *one)
    D4 = mmaformal.simulate(MX, A, B, C, np.full((16, 1), 0x80, np.uint8), np.full((1, 8), 0x80, np.uint8))
    for x, y in zip(D1.ravel()[:40], D4.ravel()[:40]):
        v1, v4 = value_of(int(x), "f32"), value_of(int(y), "f32")
        if not isinstance(v1, str):
            assert v4 == 4 * v1
    # NVFP4: 4 scale blocks of 16 along K; doubling only block 2's scale on one side changes
    # only the products k = 32..47
    A = np.zeros((16, 64), np.uint8)
    B = np.zeros((64, 8), np.uint8)
    A[0, 0], B[0, 0] = 0x2, 0x2            # 1.0 * 1.0 in block 0
    A[0, 40], B[40, 0] = 0x2, 0x2          # 1.0 * 1.0 in block 2
    sa = np.full((16, 4), 0x38, np.uint8)  # ue4m3 1.0
    sb = np.full((4, 8), 0x38, np.uint8)
    assert value_of(int(mmaformal.simulate(NV, A, B, np.zeros((16, 8), np.uint32), sa, sb)[0, 0]), "f32") == 2
    sa[0, 2] = 0x40                        # 2.0
    assert value_of(int(mmaformal.simulate(NV, A, B, np.zeros((16, 8), np.uint32), sa, sb)[0, 0]), "f32") == 3


# --------------------------------------------------------------------------------------------
# Theories


def test_named_rival_theory_changes_the_result():
    """sm90 fp8 mma.sync: the SASS-based HMMA emulation vs the paper's F = 13 row."""
    name = "sm90/mma.m16n8k32.f32.e5m2.e5m2.f32"
    A = np.zeros((16, 32), np.uint8)
    B = np.zeros((32, 8), np.uint8)
    C = np.zeros((16, 8), np.uint32)
    A[0, 0], B[0, 0] = bits_of(Fraction(2 ** 10), "e5m2"), bits_of(Fraction(2 ** 4), "e5m2")
    A[0, 2], B[2, 0] = bits_of(Fraction(1), "e5m2"), bits_of(Fraction(1, 4), "e5m2")
    prim = mmaformal.simulate(name, A, B, C)
    seed = mmaformal.simulate(name, A, B, C, theory="sm90.mma-fp8.f32.seed002")
    assert value_of(int(prim[0, 0]), "f32") == Fraction(2 ** 14) + Fraction(1, 4)
    assert value_of(int(seed[0, 0]), "f32") == 2 ** 14      # 1/4 is below 2^(14-13)
    with pytest.raises(ValueError, match="does not cover"):
        mmaformal.simulate(name, A, B, C, theory="sm90.f16.f32")


def test_hmma_emulation_adds_c_last():
    """accumulate = add: the chain starts from +0 and c is added last by an RNE add, so
    2^10 - 2^-15 (a tie) rounds to even (2^10); c fused into the truncated sum and then RZ gives
    the f32 just below 2^10."""
    name = "sm90/mma.m16n8k16.f32.e5m2.e5m2.f32"
    A = np.zeros((16, 16), np.uint8)
    B = np.zeros((16, 8), np.uint8)
    C = np.zeros((16, 8), np.uint32)
    A[0, 0], B[0, 0] = bits_of(Fraction(-1), "e5m2"), bits_of(Fraction(1, 2 ** 15), "e5m2")
    C[0, 0] = bits_of(Fraction(2 ** 10), "f32")
    d = value_of(int(mmaformal.simulate(name, A, B, C)[0, 0]), "f32")
    assert d == Fraction(2 ** 10)
    fused = value_of(int(mmaformal.simulate(name, A, B, C, theory="sm90.mma-fp8.f32.f16-tfdpa")[0, 0]), "f32")
    assert fused == Fraction(2 ** 10) - Fraction(1, 2 ** 14)


# --------------------------------------------------------------------------------------------
# explain == simulate


@pytest.mark.parametrize("name", [H16, "sm90/mma.m16n8k32.f16.e4m3.e5m2.f16", "gfx942/v_mfma_f32_16x16x32_fp8_bf8",
                                  "gfx942/v_mfma_f32_32x32x4_xf32", "gfx90a/v_mfma_f32_32x32x4bf16",
                                  "gfx908/v_mfma_f32_32x32x8f16", "gfx942/v_mfma_f32_16x16x4_f32", MX, NV])
def test_explain_output_equals_simulate(name):
    ins = isa.lookup(name)
    rng = np.random.default_rng(9)
    for _ in range(3):
        A = rand_values(ins.a, (ins.m, ins.k), rng)
        B = rand_values(ins.b, (ins.k, ins.n), rng)
        C = rand_values(ins.c, (ins.m, ins.n), rng)
        sc = {}
        if ins.scale:
            nb = ins.k // ins.scale_block
            sc = dict(scale_a=rand_values(ins.scale, (ins.m, nb), rng, -2, 2),
                      scale_b=rand_values(ins.scale, (nb, ins.n), rng, -2, 2))
        D = mmaformal.simulate(name, A, B, C, **sc)
        rep = explain(name, [int(x) for x in A[0]], [int(x) for x in B[:, 0]], int(C[0, 0]),
                      [int(x) for x in sc["scale_a"][0]] if sc else None,
                      [int(x) for x in sc["scale_b"][:, 0]] if sc else None)
        assert int(rep["output"]["bits"], 16) == int(D[0, 0])
        assert rep["steps"]


# --------------------------------------------------------------------------------------------
# Value helpers


@pytest.mark.parametrize("f", ["e4m3", "e5m2", "e4m3fnuz", "e5m2fnuz", "e3m2", "e2m3", "e2m1", "ue8m0", "ue4m3"])
def test_value_bits_round_trip_exhaustive(f):
    F = fp.fmt(f)
    for code in range(1 << F.k):
        v = value_of(code, f)
        back = bits_of(v, f)
        if v == "nan":
            assert back == fp.default_nan(F)
        else:
            assert back == code, (f, hex(code), v, back)


def test_value_helpers():
    assert decimal(Fraction(-7, 8)) == "-0.875"
    assert decimal(Fraction(2 ** 23)) == "8388608"
    assert decimal(Fraction(1, 2 ** 149)).startswith("0.0000")
    assert value_of(0x80000000, "f32") == "-0" and value_of(0xFF800000, "f32") == "-inf"
    assert parse_value("-0") == "-0" and parse_value("1e-3") == Fraction(1, 1000)
    assert bits_of(parse_value("1e-3"), "f32") is None
    assert bits_of(Fraction(-8192), "f16") == 0xF000
    assert bits_of(Fraction(1), "tf32") == 0x3F800000
    assert bits_of(Fraction(2 ** 16), "f16") is None
    assert bits_of("-0", "e4m3fnuz") is None
    with pytest.raises(ValueError):
        parse_value("one")


def test_as_bits_tf32_from_floats_must_be_exact():
    x = np.array([1.0, 1 + 2.0 ** -10], np.float64)
    assert list(as_bits(x, "tf32")) == [0x3F800000, 0x3F802000]
    with pytest.raises(ValueError, match="tf32"):
        as_bits(np.array([1 + 2.0 ** -11]), "tf32")


# --------------------------------------------------------------------------------------------
# Bounded memory (the 10^7 run is in bench/bench_simulate.py)


def test_memory_stays_bounded():
    code = textwrap.dedent("""
        import resource, numpy as np, mmaformal
        rng = np.random.default_rng(0)
        T = 1200   # 153,600 dot products
        A = rng.integers(0, 1 << 16, (T, 16, 16), dtype=np.uint16)
        B = rng.integers(0, 1 << 16, (T, 16, 8), dtype=np.uint16)
        C = rng.integers(0, 1 << 32, (T, 16, 8), dtype=np.uint64).astype(np.uint32)
        D = mmaformal.simulate("sm90/mma.m16n8k16.f32.f16.f16.f32", A, B, C)
        # this process's own peak: VmHWM of its address space. ru_maxrss is not usable here: on
        # Linux it keeps the parent's peak across the vfork/exec of subprocess, so it reported
        # pytest's own RSS once the suite had grown past 600 MiB
        try:
            hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]
            print(int(hwm[0].split()[1]) // 1024)
        except (OSError, IndexError):
            print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout.strip()) < 600, out.stdout
