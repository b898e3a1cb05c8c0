"""mmaformal.torch on the CPU (CI): matmul and the emulating() function mode.

Oracles: emulate.matmul on the same raw bits (the contract: bit-identical), and, sharing no
code with the core, exact Fraction sums for small exact cases (every product and partial sum
exact in the accumulator, so any correct instruction returns the exact value) and torch's own
result for calls that must pass through untouched.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from mmaformal import classes, emulate  # noqa: E402
from mmaformal import torch as mt  # noqa: E402

I16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"


def _bits16(t):
    return t.contiguous().view(torch.int16).numpy().view(np.uint16)


def _bits32(t):
    return t.contiguous().view(torch.int32).numpy().view(np.uint32)


def _rand_f16(shape, seed, klass="bits"):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    a, _, _ = classes.generate(klass, "f16", "f16", "f32", shape[-1], n, rng)
    return torch.from_numpy(a.reshape(shape).view(np.int16)).view(torch.float16)


def test_matmul_bit_identical_to_emulate_on_raw_bits():
    a = _rand_f16((37, 48), 1)
    b = _rand_f16((19, 48), 2).T.contiguous()           # (48, 19)
    rng = np.random.default_rng(3)
    _, _, c = classes.generate("special", "f16", "f16", "f32", 16, 37 * 19, rng)
    c = torch.from_numpy(c.reshape(37, 19).view(np.int32)).view(torch.float32)
    d = mt.matmul(a, b, c, instr=I16)
    assert d.dtype == torch.float32 and d.shape == (37, 19) and d.device.type == "cpu"
    ref = emulate.matmul(_bits16(a), _bits16(b), _bits32(c), I16)
    assert np.array_equal(_bits32(d), ref)
    d2 = mt.matmul(a, b, c, instr=I16, split_k=3)
    assert np.array_equal(_bits32(d2), emulate.matmul(_bits16(a), _bits16(b), _bits32(c), I16, split_k=3))
    # c=None is +0
    z = torch.zeros(37, 19, dtype=torch.float32)
    assert torch.equal(mt.matmul(a, b, instr=I16).view(torch.int32),
                       mt.matmul(a, b, z, instr=I16).view(torch.int32))


def test_raw_bit_tensors_give_raw_bits():
    a = _rand_f16((8, 32), 4)
    b = _rand_f16((32, 8), 5)
    d = mt.matmul(a.view(torch.uint16), b.view(torch.int16), instr=I16)
    assert d.dtype == torch.uint32
    assert np.array_equal(d.view(torch.int32).numpy().view(np.uint32),
                          emulate.matmul(_bits16(a), _bits16(b), None, I16))


def test_exact_small_integers_fraction_oracle():
    """Small integers: every product and every partial sum is exact in f32, so the result is
    the exact sum whatever the instruction's truncation (checked with Fractions)."""
    rng = np.random.default_rng(6)
    for instr, dt in ((I16, torch.float16), ("sm90/mma.m16n8k16.f32.bf16.bf16.f32", torch.bfloat16),
                      ("gfx942/v_mfma_f32_32x32x8_f16", torch.float16),
                      ("sm90/mma.m16n8k4.f64.f64.f64.f64", torch.float64)):
        a = torch.tensor(rng.integers(-8, 9, (5, 32)), dtype=dt)
        b = torch.tensor(rng.integers(-8, 9, (32, 7)), dtype=dt)
        d = mt.matmul(a, b, instr=instr)
        for i in range(5):
            for j in range(7):
                exact = sum(Fraction(float(a[i, t])) * Fraction(float(b[t, j])) for t in range(32))
                assert Fraction(float(d[i, j])) == exact, (instr, i, j)


@pytest.mark.parametrize("instr,dt", [
    ("sm90/mma.m16n8k16.f32.bf16.bf16.f32", torch.bfloat16),
    ("sm90/mma.m16n8k8.f32.tf32.tf32.f32", torch.float32),
    ("sm90/mma.m16n8k4.f64.f64.f64.f64", torch.float64),
    ("sm90/mma.m16n8k32.f32.e4m3.e4m3.f32", torch.float8_e4m3fn),
    ("gfx942/v_mfma_f32_32x32x8_f16", torch.float16),
    ("sm80/mma.m16n8k16.f16.f16.f16.f16", torch.float16),
])
def test_formats_match_emulate(instr, dt):
    from mmaformal import isa
    ins = isa.lookup(instr)
    rng = np.random.default_rng(8)
    K = 2 * ins.k
    a, _, c = classes.generate("normal", ins.a, ins.b, ins.c, K, 6, rng)
    bt, _, _ = classes.generate("normal", ins.a, ins.b, ins.c, K, 5, rng)
    st = {np.uint8: 8, np.uint16: 16, np.uint32: 32, np.uint64: 64}[a.dtype.type]
    sig = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}[st]
    A = torch.from_numpy(a.view(sig)).view(dt)
    B = torch.from_numpy(np.ascontiguousarray(bt.T).view(sig)).view(dt)
    d = mt.matmul(A, B, instr=instr)
    assert d.dtype == mt.torch_dtype(ins.d)
    ref = emulate.matmul(a, np.ascontiguousarray(bt.T), None, ins)
    dst = {16: np.int16, 32: np.int32, 64: np.int64}[ref.dtype.itemsize * 8]
    got = d.contiguous().view({np.int16: torch.int16, np.int32: torch.int32, np.int64: torch.int64}[dst]).numpy()
    assert np.array_equal(got.view(ref.dtype), ref)


def test_bad_input_is_a_value_error_naming_both():
    a = torch.zeros(16, 16, dtype=torch.bfloat16)
    b = torch.zeros(16, 8, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"takes f16 \(float16 or uint16 raw bits\), got bfloat16"):
        mt.matmul(a, b, instr=I16)
    with pytest.raises(ValueError, match="inner dimensions differ"):
        mt.matmul(torch.zeros(16, 16, dtype=torch.float16), torch.zeros(8, 8, dtype=torch.float16), instr=I16)
    with pytest.raises(ValueError, match="2-D"):
        mt.matmul(torch.zeros(2, 16, 16, dtype=torch.float16), b, instr=I16)
    with pytest.raises(ValueError, match="different devices"):
        mt.matmul(torch.zeros(16, 16, dtype=torch.float16), torch.zeros(16, 8, dtype=torch.float16, device="meta"), instr=I16)
    with pytest.raises(ValueError, match="c must have shape"):
        mt.matmul(torch.zeros(16, 16, dtype=torch.float16), b, torch.zeros(3, 3), instr=I16)
    with pytest.raises(ValueError, match="not a positive multiple"):
        mt.matmul(torch.zeros(4, 10, dtype=torch.float16), torch.zeros(10, 4, dtype=torch.float16), instr=I16)


def test_requires_grad_is_refused_unless_no_grad():
    w = torch.zeros(16, 8, dtype=torch.float16, requires_grad=True)
    x = torch.zeros(4, 16, dtype=torch.float16)
    with pytest.raises(ValueError, match="forward only"):
        mt.matmul(x, w, instr=I16)
    with torch.no_grad():
        assert mt.matmul(x, w, instr=I16).shape == (4, 8)


def test_nan_payload_and_negative_zero_survive():
    """Bits the instruction returns unchanged reach the tensor unchanged: the sm90 f64 FMA
    chain keeps a NaN payload of C and (-0)*(+0) + -0 = -0."""
    instr = "sm90/mma.m16n8k4.f64.f64.f64.f64"
    a = torch.full((2, 4), -0.0, dtype=torch.float64)
    b = torch.zeros(4, 2, dtype=torch.float64)
    c = torch.tensor([[-0.0, 0.0], [1.5, -0.0]], dtype=torch.float64)
    c.view(torch.int64)[0, 1] = 0x7FF8000000001234               # a NaN with a payload
    d = mt.matmul(a, b, c, instr=instr)
    bits = d.view(torch.int64).numpy().view(np.uint64)
    assert [hex(int(x)) for x in bits.ravel()] == ["0x8000000000000000", "0x7ff8000000001234",
                                                   "0x3ff8000000000000", "0x8000000000000000"]
    ref = emulate.matmul(a.view(torch.int64).numpy().view(np.uint64),
                         b.view(torch.int64).numpy().view(np.uint64),
                         c.view(torch.int64).numpy().view(np.uint64), instr)
    assert np.array_equal(bits, ref)
    # under emulating, D's dtype is the operands': the bits come back as they are
    a.view(torch.int64)[1, 0] = 0x7FF0000000000ABC   # a signalling NaN
    with torch.no_grad(), mt.emulating(instr):
        e = a @ b
    ref = emulate.matmul(a.view(torch.int64).numpy().view(np.uint64),
                         b.view(torch.int64).numpy().view(np.uint64), None, instr)
    assert e.dtype == torch.float64
    assert np.array_equal(e.view(torch.int64).numpy().view(np.uint64), ref)


# ------------------------------------------------------------------------------------------
# emulating()


def _ref_gemm(x, y, instr=I16):
    """Oracle of one 2-D product under emulating: emulate.matmul on the bits, K zero-padded."""
    return emulate.matmul(_bits16(x), _bits16(y), None, instr, pad_k=True)


def test_emulating_intercepts_the_products():
    x = _rand_f16((3, 5, 40), 10, "normal")          # K = 40: padded to 48
    w = _rand_f16((24, 40), 11, "normal")
    bias = _rand_f16((24,), 12, "normal")
    with torch.no_grad(), mt.emulating(I16) as mode:
        y1 = x @ w.T
        y2 = torch.matmul(x, w.T)
        y3 = F.linear(x, w)
        y4 = F.linear(x, w, bias)
        y5 = torch.bmm(x, w.T.expand(3, 40, 24))
        y6 = torch.addmm(bias, x[0], w.T)
        y7 = torch.baddbmm(bias.expand(3, 5, 24), x, w.T.expand(3, 40, 24), alpha=0.5, beta=2.0)
        y8 = x[0, 0] @ w.T                             # 1-D @ 2-D
        y9 = x[0].mm(w.T)
        passed = torch.matmul(x.float(), w.T.float())   # not the instruction's formats
    assert mode.calls == 9
    for i in range(3):
        ref = torch.from_numpy(_ref_gemm(x[i], w.T.contiguous()).view(np.int32)).view(torch.float32)
        for y in (y1, y2, y3, y5):
            assert y.dtype == torch.float16
            assert torch.equal(y[i].view(torch.int16), ref.to(torch.float16).view(torch.int16))
        assert torch.equal(y4[i], (ref + bias.float()).to(torch.float16))
        assert torch.equal(y7[i], (ref * 0.5 + bias.float() * 2.0).to(torch.float16))
    ref0 = torch.from_numpy(_ref_gemm(x[0], w.T.contiguous()).view(np.int32)).view(torch.float32)
    assert torch.equal(y6, (ref0 + bias.float()).to(torch.float16))
    assert torch.equal(y8, ref0[0].to(torch.float16)) and y8.shape == (24,)
    assert torch.equal(y9, ref0.to(torch.float16))
    assert torch.equal(passed, torch.matmul(x.float(), w.T.float()))


def test_emulating_broadcast_batches_and_strict():
    x = _rand_f16((2, 1, 4, 16), 20, "normal")
    y = _rand_f16((3, 16, 8), 21, "normal")
    with torch.no_grad(), mt.emulating(I16):
        d = x @ y
    assert d.shape == (2, 3, 4, 8)
    for i in range(2):
        for j in range(3):
            ref = torch.from_numpy(_ref_gemm(x[i, 0], y[j]).view(np.int32)).view(torch.float32)
            assert torch.equal(d[i, j], ref.to(torch.float16))
    with mt.emulating(I16, strict=True), pytest.raises(ValueError, match="got bfloat16 x bfloat16"):
        torch.zeros(2, 16, dtype=torch.bfloat16) @ torch.zeros(16, 2, dtype=torch.bfloat16)


def test_emulating_refuses_grad():
    w = torch.nn.Linear(16, 8, bias=False).half()
    with mt.emulating(I16), pytest.raises(ValueError, match="forward only"):
        w(torch.zeros(2, 16, dtype=torch.float16))
    with torch.inference_mode(), mt.emulating(I16):
        assert w(torch.zeros(2, 16, dtype=torch.float16)).shape == (2, 8)


# ------------------------------------------------------------------------------------------
# CUDA tensors (skipped without a GPU): computed on the GPU, the same bits as on the CPU


def _cuda_ok():
    if not torch.cuda.is_available():
        return False
    from mmaformal import cuda
    return cuda.available()[0]


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_ok(), reason="no CUDA device with CuPy")
def test_cuda_tensors_match_cpu():
    a = _rand_f16((70, 40), 30)
    b = _rand_f16((40, 33), 31)
    c = torch.from_numpy(np.random.default_rng(32).integers(0, 1 << 32, (70, 33), dtype=np.uint64)
                         .astype(np.uint32).view(np.int32)).view(torch.float32)
    for kw in ({}, {"split_k": 2}):
        d_cpu = mt.matmul(a[:, :32], b[:32], c, instr=I16, **kw)
        d_gpu = mt.matmul(a[:, :32].cuda(), b[:32].cuda(), c.cuda(), instr=I16, **kw)
        assert d_gpu.is_cuda and d_gpu.dtype == torch.float32
        assert torch.equal(d_gpu.cpu().view(torch.int32), d_cpu.view(torch.int32))
    x = _rand_f16((2, 5, 40), 33, "normal")
    w = _rand_f16((24, 40), 34, "normal")
    with torch.no_grad(), mt.emulating(I16):
        y_cpu = F.linear(x, w)
        y_gpu = F.linear(x.cuda(), w.cuda())
    assert y_gpu.is_cuda and torch.equal(y_gpu.cpu().view(torch.int16), y_cpu.view(torch.int16))
