"""The compiler-emulated m8n8k4 model (mma.fpu_dot, theory model "fpu") against an oracle that
shares no code with the core: numpy float64 arithmetic on operands whose exponents are small
enough that every f64 step is exact, so one cast to float32 is the single RNE rounding of the
f32 step (Source of the program: SASS of f16 mma.m8n8k4 on sm_90a, mmaformal/hw/SASS.md)."""
import numpy as np

from mmaformal.simulate import simulate


def _operands(rng, T):
    def f16(shape):
        e = rng.integers(-4, 5, size=shape)
        m = rng.integers(1024, 2048, size=shape) * rng.choice([-1, 1], size=shape)
        return (m * 2.0 ** (e - 10)).astype(np.float16)
    return f16((T, 8, 4)), f16((T, 4, 8)), f16((T, 8, 8))


def _r32(x):
    return np.asarray(x, np.float64).astype(np.float32).astype(np.float64)


def test_fpu_f32_chain_then_c():
    rng = np.random.default_rng(1)
    A, B, C = _operands(rng, 400)
    a, b = A.astype(np.float64), B.astype(np.float64)
    acc = np.zeros((400, 8, 8))
    for k in range(4):
        acc = _r32(a[:, :, k, None] * b[:, None, k, :] + acc)
    c32 = C.astype(np.float32)
    want = _r32(c32.astype(np.float64) + acc).astype(np.float32).view(np.uint32)
    for cbits in (c32.view(np.uint32), C.view(np.uint16)):
        name = ("sm90/mma.m8n8k4.f32.f16.f16.f32" if cbits.dtype == np.uint32
                else "sm90/mma.m8n8k4.f32.f16.f16.f16")
        assert (simulate(name, A.view(np.uint16), B.view(np.uint16), cbits) == want).all()


def test_fpu_f16_pairs():
    rng = np.random.default_rng(2)
    A, B, C = _operands(rng, 400)
    a, b = A.astype(np.float64), B.astype(np.float64)
    p = [_r32(a[:, :, j, None] * b[:, None, j, :] + a[:, :, j + 1, None] * b[:, None, j + 1, :])
         for j in (0, 2)]
    acc = _r32(_r32(C.astype(np.float64) + p[0]) + p[1])
    want = acc.astype(np.float32).astype(np.float16).view(np.uint16)
    got = simulate("sm90/mma.m8n8k4.f16.f16.f16.f16", A.view(np.uint16), B.view(np.uint16),
                   C.view(np.uint16))
    assert (got == want).all()


def test_fpu_zero_signs_and_nan():
    A = np.zeros((1, 8, 4), np.uint16)
    B = np.zeros((1, 4, 8), np.uint16)
    A[0, 0, :] = 0x8000                      # -0 products everywhere in row 0
    C = np.full((1, 8, 8), 0x8000, np.uint16)  # C = -0
    # f32 chain: FFMA(-0*0, +0) = +0; -0 + +0 = +0 -> D = +0 (IEEE dot would be -0)
    d = simulate("sm90/mma.m8n8k4.f32.f16.f16.f16", A, B, C)
    assert int(d[0, 0, 0]) == 0
    # f16 pairs: FMUL(-0) = -0, FFMA(-0*0 + -0) = -0; C -0 + -0 = -0 -> D = -0 (0x8000)
    d = simulate("sm90/mma.m8n8k4.f16.f16.f16.f16", A, B, C)
    assert int(d[0, 0, 0]) == 0x8000
    A[0, 0, 1] = 0x7E01                      # a NaN with a payload: canonical NaN out
    d = simulate("sm90/mma.m8n8k4.f16.f16.f16.f16", A, B, C)
    assert int(d[0, 0, 0]) == 0x7FFF
    d = simulate("sm90/mma.m8n8k4.f32.f16.f16.f16", A, B, C)
    assert int(d[0, 0, 0]) == 0x7FFFFFFF
