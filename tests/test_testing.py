"""Tests of mmaformal.testing: hypothesis strategies of MMA inputs per probe class."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings

from mmaformal import emulate, isa
from mmaformal.simulate import as_bits, storage_dtype
from mmaformal.testing import CLASSES, GemmInputs, MMAInputs, gemm_inputs, mma_inputs, specials

H16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"
MX = "sm120/mma.m16n8k32.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e2m1.e4m3.f32.ue8m0"
NAMES = [H16, MX, "gfx942/v_mfma_f32_32x32x8_f16", "sm80/mma.m16n8k8.f32.tf32.tf32.f32",
         "sm90/mma.m8n8k4.f64.f64.f64.f64"]
FEW = settings(max_examples=6, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])


def _check_tile(x: MMAInputs, ins, lead=()):
    assert x.instr == ins.name and x.klass in CLASSES
    for arr, f, shape in ((x.a, ins.a, (ins.m, ins.k)), (x.b, ins.b, (ins.k, ins.n)),
                          (x.c, ins.c, (ins.m, ins.n))):
        assert arr.shape == lead + shape and arr.dtype == storage_dtype(f)
        as_bits(arr, f)                  # valid raw bits of the format (no stray high bits)
    if ins.scale:
        nb = ins.k // ins.scale_block
        assert x.scale_a.shape == lead + (ins.m, nb) and x.scale_b.shape == lead + (nb, ins.n)
    else:
        assert x.scale_a is None and x.scale_b is None


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("klass", CLASSES)
def test_every_class_gives_valid_tiles(name, klass):
    ins = isa.lookup(name)

    @FEW
    @given(mma_inputs(name, classes=klass))
    def check(x):
        assert x.klass == klass
        _check_tile(x, ins)
    check()


@FEW
@given(mma_inputs(MX, batch=3))
def test_batch_and_expected(x):
    ins = isa.lookup(MX)
    _check_tile(x, ins, lead=(3,))
    D = x.expected()
    assert D.shape == (3, ins.m, ins.n) and D.dtype == storage_dtype(ins.d)


@FEW
@given(mma_inputs(H16, classes="special"))
def test_special_class_draws_special_codes(x):
    sp_a, sp_c = set(specials("f16")), set(specials("f32"))
    assert set(x.a.ravel().tolist()) <= sp_a and set(x.c.ravel().tolist()) <= sp_c


def test_specials_cover_zero_inf_nan_extremes():
    s = specials("f16")
    for code in (0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x0001, 0x7BFF, 0xFBFF, 0x3C00):
        assert code in s
    assert 0x80 in specials("e4m3fnuz") and 0xFF in specials("ue8m0")


def test_bits_class_shrinks_to_a_minimal_example():
    """What a user sees when a property fails: hypothesis shrinks "bits" tiles element-wise."""
    x = find(mma_inputs("gfx908/v_mfma_f32_4x4x4f16", classes="bits"),
             lambda x: int(np.count_nonzero(x.a)) > 0,
             settings=settings(database=None, max_examples=200))
    assert np.count_nonzero(x.a) == 1 and int(x.a.max()) == 1
    assert not x.b.any() and not x.c.any()


@FEW
@given(gemm_inputs(H16, max_m=20, max_n=12, max_steps=3))
def test_gemm_inputs(x):
    ins = isa.lookup(H16)
    M, K = x.a.shape
    N = x.b.shape[1]
    assert isinstance(x, GemmInputs)
    assert 1 <= M <= 20 and 1 <= N <= 12 and K in (16, 32, 48)
    assert x.b.shape == (K, N) and x.c.shape == (M, N)
    D = x.expected()
    assert D.shape == (M, N) and np.array_equal(D, emulate.matmul(x.a, x.b, x.c, ins))


def test_finds_a_users_kernel_that_rounds_differently():
    """The intended use: a kernel that computes the GEMM in float32 (RNE after every add) is
    told apart from Hopper's T-FDPA (truncating fused sums, RZ output) on some input."""
    def naive_fp32(x):
        a = x.a.view(np.float16).astype(np.float32)
        b = x.b.view(np.float16).astype(np.float32)
        d = x.c.view(np.float32).copy()
        for k in range(a.shape[1]):
            d = d + a[:, k:k + 1] * b[k:k + 1, :]
        return d.view(np.uint32)

    x = find(gemm_inputs(H16, classes=("normal", "dnn"), max_m=4, max_n=4, max_steps=2),
             lambda x: not np.array_equal(naive_fp32(x), x.expected()),
             settings=settings(database=None, max_examples=300))
    assert not np.array_equal(naive_fp32(x), x.expected())


def test_bad_classes():
    with pytest.raises(ValueError, match="unknown input class"):
        mma_inputs(H16, classes=["gaussian"])
    with pytest.raises(ValueError, match="batch must be >= 1"):
        mma_inputs(H16, batch=0)
    with pytest.raises(ValueError, match="unknown instruction"):
        mma_inputs("sm90/nosuch")
