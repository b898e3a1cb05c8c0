"""Tests of mmaformal.emulate: a GEMM with an instruction's exact arithmetic.

The reference is ``mmaformal.simulate`` run tile by tile, K-step by K-step (D_0 = C,
D_{s+1} = simulate(A[:, blk s], B[blk s, :], D_s)); the split-K reduction is checked against
IEEE additions computed by the numpy back-end; the two back-ends of emulate (compiled C and
numpy lanes) are checked bit for bit against each other on random 256x256x256 inputs."""
from __future__ import annotations

import argparse
import json

import ml_dtypes
import numpy as np
import pytest

import mmaformal
from mmaformal import emulate, fp, isa
from mmaformal.bits import NUMPY
from mmaformal.classes import from_float, generate
from mmaformal.simulate import storage_dtype

H16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"
CDNA3 = "gfx942/v_mfma_f32_32x32x8_f16"
MX = "sm120/mma.m16n8k32.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e2m1.e4m3.f32.ue8m0"
SEVERAL = [
    H16,                                          # T-FDPA L=16 (Hopper)
    CDNA3,                                        # TR-FDPA, RD inside (CDNA3)
    "sm80/mma.m16n8k8.f32.tf32.tf32.f32",         # tf32 operands in u32 containers
    "gfx90a/v_mfma_f32_32x32x8f16",               # FTZ-Add/Mul pairwise (CDNA2)
    "sm90/mma.m8n8k4.f64.f64.f64.f64",            # FMA chain, f64
    "sm90/mma.m16n8k16.f16.f16.f16.f16",          # f16 accumulator
    MX,                                           # block-scaled (ue8m0), e2m1 x e4m3
]

compiled = pytest.mark.skipif(not emulate._compiled_ok(), reason="no C compiler")


def _rand(ins, M, N, K, rng, klass="normal"):
    a, _, _ = generate(klass, ins.a, ins.b, ins.c, K, M, rng)
    _, b, _ = generate(klass, ins.a, ins.b, ins.c, K, N, rng)
    _, _, c = generate(klass, ins.a, ins.b, ins.c, 1, M * N, rng)
    sc = {}
    if ins.scale:
        nb = K // ins.scale_block
        e = rng.integers(-3, 4, (M, nb)) + fp.fmt(ins.scale).bias
        e2 = rng.integers(-3, 4, (nb, N)) + fp.fmt(ins.scale).bias
        sc = dict(scale_a=e.astype(np.uint8), scale_b=e2.astype(np.uint8))
    return a, np.ascontiguousarray(b.T), c.reshape(M, N), sc


def tilewise(ins, A, B, C, scale_a=None, scale_b=None):
    """simulate, one instruction tile at a time (as a batch), K-steps chained in order."""
    m, n, k = ins.m, ins.n, ins.k
    M, K = A.shape
    N = B.shape[1]
    D = C
    for s in range(K // k):
        At = A[:, s * k:(s + 1) * k].reshape(M // m, m, k)[:, None]
        Bt = B[s * k:(s + 1) * k].reshape(k, N // n, n).transpose(1, 0, 2)[None]
        Ct = D.reshape(M // m, m, N // n, n).transpose(0, 2, 1, 3)
        kw = {}
        if ins.scale:
            nb = k // ins.scale_block
            kw = dict(scale_a=scale_a[:, s * nb:(s + 1) * nb].reshape(M // m, m, nb)[:, None],
                      scale_b=scale_b[s * nb:(s + 1) * nb].reshape(nb, N // n, n).transpose(1, 0, 2)[None])
        Dt = mmaformal.simulate(ins, At, Bt, Ct, **kw)
        D = Dt.transpose(0, 2, 1, 3).reshape(M, N)
    return D


@pytest.mark.parametrize("name", SEVERAL)
def test_equals_simulate_tile_by_tile(name):
    ins = isa.lookup(name)
    rng = np.random.default_rng(1)
    M, N, K = 2 * ins.m, 2 * ins.n, 3 * ins.k
    if ins.c != ins.d:
        K = ins.k
    for klass in ("normal", "bits"):
        A, B, C, sc = _rand(ins, M, N, K, rng, klass)
        want = tilewise(ins, A, B, C, **sc)
        got = emulate.matmul(A, B, C, name, **sc)
        assert got.dtype == storage_dtype(ins.d) and got.shape == (M, N)
        assert np.array_equal(got, want), (name, klass)
        got_np = emulate.matmul(A, B, C, name, backend="numpy", **sc)
        assert np.array_equal(got_np, want), (name, klass)


def test_any_m_and_n_rows_and_columns_are_independent():
    ins = isa.lookup(H16)
    rng = np.random.default_rng(2)
    A, B, C, _ = _rand(ins, 32, 16, 32, rng)
    full = emulate.matmul(A, B, C, H16)
    part = emulate.matmul(A[3:20], B[:, 1:12], C[3:20, 1:12], H16)
    assert part.shape == (17, 11)
    assert np.array_equal(part, full[3:20, 1:12])


@compiled
def test_backends_bit_identical_256():
    ins = isa.lookup(H16)
    rng = np.random.default_rng(3)
    n = 256
    A = from_float("f16", rng.standard_normal((n, n)) * np.exp2(rng.integers(-8, 8, (n, n))))
    B = from_float("f16", rng.standard_normal((n, n)))
    C = from_float("f32", rng.standard_normal((n, n)) * 4)
    D = emulate.matmul(A, B, C, ins, backend="compiled")
    rows = np.array([0, 1, 77, 128, 200, 255])
    Dn = emulate.matmul(A[rows], B, C[rows], ins, backend="numpy")
    assert np.array_equal(D[rows], Dn)
    # threads do not change the bits
    assert np.array_equal(emulate.matmul(A[:64], B, C[:64], ins, threads=1),
                          emulate.matmul(A[:64], B, C[:64], ins, threads=2))
    # split-K too
    Ds = emulate.matmul(A, B, C, ins, split_k=3, backend="compiled")
    Dsn = emulate.matmul(A[rows], B, C[rows], ins, split_k=3, backend="numpy")
    assert np.array_equal(Ds[rows], Dsn)
    assert not np.array_equal(Ds, D)     # a different order of roundings


@pytest.mark.parametrize("name", [H16, CDNA3])
def test_split_k_is_partials_from_zero_added_onto_c_in_order(name):
    ins = isa.lookup(name)
    rng = np.random.default_rng(4)
    M, N, K = ins.m, ins.n, 5 * ins.k
    A, B, C, _ = _rand(ins, M, N, K, rng)
    S = 2
    got = emulate.matmul(A, B, C, name, split_k=S)
    # np.array_split of 5 blocks into 2 parts: blocks [0, 1, 2] and [3, 4]
    cut = 3 * ins.k
    zero = np.zeros((M, N), dtype=storage_dtype(ins.c))
    P0 = tilewise(ins, A[:, :cut], B[:cut], zero)
    P1 = tilewise(ins, A[:, cut:], B[cut:], zero)
    w = fp.fmt(ins.d).storage

    def add(x, y):
        r = fp.add(ins.d, NUMPY.lift(x.reshape(-1), w), NUMPY.lift(y.reshape(-1), w), "RNE")
        return np.asarray(r.v).astype(x.dtype).reshape(x.shape)
    assert np.array_equal(got, add(add(C, P0), P1))
    assert np.array_equal(emulate.matmul(A, B, C, name, split_k=1), tilewise(ins, A, B, C))


def test_input_dtypes_raw_bits_floats_ml_dtypes():
    ins = isa.lookup(H16)
    rng = np.random.default_rng(5)
    A, B, C, _ = _rand(ins, 16, 8, 32, rng)
    want = emulate.matmul(A, B, C, H16)
    Af, Bf, Cf = A.view(np.float16), B.view(np.float16), C.view(np.float32)
    assert np.array_equal(emulate.matmul(Af, Bf, Cf, H16), want)
    # exact casts from wider floats are accepted
    assert np.array_equal(emulate.matmul(Af.astype(np.float64), Bf.astype(np.float32),
                                         Cf.astype(np.float64), H16), want)
    # bf16 instruction with ml_dtypes arrays
    name = "sm90/mma.m16n8k16.f32.bf16.bf16.f32"
    x = rng.standard_normal((16, 16)).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal((16, 8)).astype(ml_dtypes.bfloat16)
    z = np.zeros((16, 8), np.float32)
    assert np.array_equal(emulate.matmul(x, y, z, name),
                          emulate.matmul(x.view(np.uint16), y.view(np.uint16), z.view(np.uint32), name))
    # C = None is +0
    assert np.array_equal(emulate.matmul(A, B, None, H16),
                          emulate.matmul(A, B, np.zeros((16, 8), np.uint32), H16))


def test_pad_k():
    ins = isa.lookup(H16)
    rng = np.random.default_rng(6)
    A, B, C, _ = _rand(ins, 16, 8, 32, rng)
    A[:, 20:] = 0
    B[20:] = 0
    with pytest.raises(ValueError, match=r"K = 20 is not a positive multiple of the instruction's k = 16.*pad"):
        emulate.matmul(A[:, :20], B[:20], C, H16)
    got = emulate.matmul(A[:, :20], B[:20], C, H16, pad_k=True)
    assert np.array_equal(got, emulate.matmul(A, B, C, H16))


@pytest.mark.parametrize("args, match", [
    (dict(A=np.zeros((16, 16), np.uint16), B=np.zeros((32, 8), np.uint16)), r"inner dimensions differ"),
    (dict(C=np.zeros((8, 8), np.uint32)), r"C must have shape \(16, 8\)"),
    (dict(A=np.zeros((16, 16), np.uint32)), r"A in format f16 must be uint16"),
    (dict(A=np.full((16, 16), 0.1, np.float32)), r"not exactly representable in f16"),
    (dict(A=np.zeros((2, 16, 16), np.uint16)), r"A must be a 2-D matrix"),
    (dict(A=np.zeros((16, 16), np.int16)), r"raw bits must be unsigned"),
    (dict(split_k=2), r"split_k must be in 1..1"),
    (dict(backend="gpu"), r"backend must be one of"),
    (dict(scale_a=np.zeros((16, 1), np.uint8)), r"not block-scaled"),
])
def test_bad_input_is_a_clear_value_error(args, match):
    kw = dict(A=np.zeros((16, 16), np.uint16), B=np.zeros((16, 8), np.uint16),
              C=np.zeros((16, 8), np.uint32))
    kw.update(args)
    A, B, C = kw.pop("A"), kw.pop("B"), kw.pop("C")
    with pytest.raises(ValueError, match=match):
        emulate.matmul(A, B, C, H16, **kw)


def test_bad_input_more():
    with pytest.raises(ValueError, match=r"unknown instruction"):
        emulate.matmul(np.zeros((1, 16), np.uint16), np.zeros((16, 1), np.uint16), None, "sm90/nosuch")
    with pytest.raises(ValueError, match=r"block-scaled .* pass scale_a"):
        emulate.matmul(np.zeros((1, 32), np.uint8), np.zeros((32, 1), np.uint8), None, MX)
    # C f16 but D f32: the accumulator cannot be carried
    name = "sm90/mma.m8n8k4.f32.f16.f16.f16"
    with pytest.raises(ValueError, match=r"C is f16 but D is f32"):
        emulate.matmul(np.zeros((8, 8), np.uint16), np.zeros((8, 8), np.uint16),
                       np.zeros((8, 8), np.uint16), name)
    one = emulate.matmul(np.zeros((8, 4), np.uint16), np.zeros((4, 8), np.uint16),
                         np.zeros((8, 8), np.uint16), name)
    assert one.dtype == np.uint32


@pytest.mark.parametrize("name, nan", [(H16, 0x7FFFFFFF), (CDNA3, 0x7FC00000)])
def test_nan_inputs_propagate(name, nan):
    ins = isa.lookup(name)
    rng = np.random.default_rng(7)
    M, N, K = 8, 8, 3 * ins.k
    A, B, C, _ = _rand(ins, M, N, K, rng)
    A[2, 1] = 0x7E00                         # NaN (f16) in the first K-step of row 2
    B[K - 1, 5] = 0x7C00                     # +Inf in the last K-step of column 5 ...
    A[4, K - 1] = 0                          # ... times +0 in row 4: NaN at (4, 5)
    C[6, 0] = 0x7FC00001                     # a NaN accumulator
    D = emulate.matmul(A, B, C, name)
    Dn = emulate.matmul(A, B, C, name, backend="numpy")
    assert np.array_equal(D, Dn)
    isnan = np.isnan(D.view(np.float32))
    assert isnan[2].all() and np.all(D[2] == nan)
    assert isnan[4, 5] and isnan[6, 0]
    want = np.zeros((M, N), bool)
    want[2] = True
    want[4, 5] = want[6, 0] = True
    # column 5 gets +-Inf elsewhere (Inf * finite), never NaN
    assert np.array_equal(isnan, want)
    assert np.all(np.isinf(D.view(np.float32)[[0, 1, 3, 5, 6, 7], 5]))


def test_to_float64():
    assert emulate.to_float64(np.array([0x3C00, 0xFC00, 0x7E00, 0x8000], np.uint16), "f16").tolist()[:2] == [1.0, -np.inf]
    v = emulate.to_float64(np.array([0x38, 0xB8, 0x7F, 0x80], np.uint8), "e4m3")
    assert v[0] == 1.0 and v[1] == -1.0 and np.isnan(v[2]) and v[3] == 0 and np.signbit(v[3])
    assert np.isnan(emulate.to_float64(np.array([0x80], np.uint8), "e4m3fnuz")[0])      # fnuz NaN
    assert emulate.to_float64(np.array([0x3F800000 | 0x1FFF], np.uint32), "tf32")[0] == 1.0  # low 13 bits ignored


def test_dot_lanes_equals_matmul():
    ins = isa.lookup(CDNA3)
    rng = np.random.default_rng(8)
    A, B, C, _ = _rand(ins, 6, 5, 16, rng)
    D = emulate.matmul(A, B, C, ins)
    i, j = np.meshgrid(np.arange(6), np.arange(5), indexing="ij")
    a = A[i.ravel()]
    b = B.T[j.ravel()]
    for be in ("compiled", "numpy") if emulate._compiled_ok() else ("numpy",):
        d = emulate.dot_lanes(ins, a, b, C.ravel(), backend=be)
        assert np.array_equal(d.reshape(6, 5), D)


def _cli(argv):
    p = argparse.ArgumentParser(prog="mmaformal")
    sub = p.add_subparsers(dest="verb")
    emulate.add_parser(sub)
    return emulate.run(p.parse_args(["emulate"] + list(argv)))


def test_cli_verb(tmp_path, capsys):
    ins = isa.lookup(H16)
    rng = np.random.default_rng(9)
    A, B, C, _ = _rand(ins, 24, 10, 48, rng)
    for n, x in (("a", A), ("b", B), ("c", C)):
        np.save(tmp_path / f"{n}.npy", x)
    out = tmp_path / "d.npy"
    rc = _cli([H16, "--a", str(tmp_path / "a.npy"), "--b", str(tmp_path / "b.npy"),
               "--c", str(tmp_path / "c.npy"), "--out", str(out), "--split-k", "2", "--json"])
    assert rc == 0
    info = json.loads(capsys.readouterr().out)
    assert info["shape"] == [24, 10, 48] and info["split_k"] == 2 and info["dtype"] == "uint32"
    assert np.array_equal(np.load(out), emulate.matmul(A, B, C, H16, split_k=2))
    np.save(tmp_path / "a20.npy", A[:, :20])
    np.save(tmp_path / "b20.npy", B[:20])
    with pytest.raises(ValueError, match="--pad-k"):
        _cli([H16, "--a", str(tmp_path / "a20.npy"), "--b", str(tmp_path / "b20.npy"), "--out", str(out)])
    assert _cli([H16, "--a", str(tmp_path / "a20.npy"), "--b", str(tmp_path / "b20.npy"),
                 "--out", str(out), "--pad-k"]) == 0
    with pytest.raises(ValueError, match="no such file"):
        _cli([H16, "--a", str(tmp_path / "nope.npy"), "--b", str(tmp_path / "b.npy"), "--out", str(out)])
