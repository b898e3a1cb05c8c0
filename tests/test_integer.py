"""Integer MMA (issue 14): catalog, semantics against an exact integer oracle that shares no
code with the core (tests/oracles/integer.py), extreme values, bad input, and every verb
(simulate, compare, explain, distinguish, prove, probes, emulate) on integer instructions."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

import mmaformal
from mmaformal import isa
from mmaformal import theory as T
from mmaformal.bits import INT, Z3Backend
from mmaformal.cli import main
from mmaformal.simulate import simulate

from oracles import integer as O

# one instruction per (operand pair, shape kind, satfinite, bop), over the archs
INSTRS = [
    "sm75/mma.m8n8k16.s32.s8.u8.s32", "sm75/mma.m8n8k32.satfinite.s32.u4.s4.s32",
    "sm75/mma.m8n8k128.s32.b1.b1.s32.xor.popc",
    "sm80/mma.m16n8k16.satfinite.s32.u8.u8.s32", "sm80/mma.m16n8k256.s32.b1.b1.s32.and.popc",
    "sm90/mma.m16n8k32.s32.s8.s8.s32", "sm90/mma.m16n8k32.satfinite.s32.s8.s8.s32",
    "sm90/mma.m16n8k32.satfinite.s32.u8.s8.s32", "sm90/mma.m16n8k64.satfinite.s32.s4.u4.s32",
    "sm90/mma.m16n8k64.s32.s4.s4.s32", "sm90/mma.m16n8k128.s32.b1.b1.s32.xor.popc",
    "sm90/wgmma.m64n8k32.satfinite.s32.s8.u8", "sm90/wgmma.m64n16k32.s32.u8.u8",
    "sm120/mma.m8n8k16.satfinite.s32.s8.s8.s32",
    "gfx908/v_mfma_i32_16x16x16i8", "gfx942/v_mfma_i32_4x4x4_16b_i8",
    "gfx942/v_mfma_i32_16x16x32_i8",
]


def _rand_tiles(ins, rng, n):
    fa, fb = mmaformal.fp.fmt(ins.a), mmaformal.fp.fmt(ins.b)
    A = rng.integers(0, 1 << fa.k, size=(n, ins.m, ins.k), dtype=np.uint8)
    B = rng.integers(0, 1 << fb.k, size=(n, ins.k, ins.n), dtype=np.uint8)
    C = rng.integers(0, 1 << 32, size=(n, ins.m, ins.n), dtype=np.uint64).astype(np.uint32)
    # extremes: every product at its largest magnitude, accumulators at the s32 bounds
    A[0] = {"s8": 0x80, "u8": 0xFF, "s4": 0x8, "u4": 0xF, "b1": 1}[ins.a]
    B[0] = {"s8": 0x80, "u8": 0xFF, "s4": 0x8, "u4": 0xF, "b1": 0}[ins.b]
    C[0, 0] = 0x7FFFFFFF
    C[0, 1] = 0x80000000
    C[0, 2] = 0x7FFFFF00
    return A, B, C


def _oracle_tiles(ins, A, B, C, step=0):
    D = np.empty(C.shape, dtype=np.uint32)
    for t in range(A.shape[0]):
        for i in range(ins.m):
            for j in range(ins.n):
                D[t, i, j] = O.dot([int(x) for x in A[t, i]], [int(y) for y in B[t, :, j]],
                                   int(C[t, i, j]), ins.a, ins.b, ins.satfinite, ins.bop, step)
    return D


@pytest.mark.parametrize("name", INSTRS)
def test_simulate_matches_integer_oracle(name):
    ins = isa.lookup(name)
    rng = np.random.default_rng(sum(map(ord, name)))
    A, B, C = _rand_tiles(ins, rng, 3)
    D = simulate(ins, A, B, C)
    assert D.dtype == np.uint32
    assert np.array_equal(D, _oracle_tiles(ins, A, B, C)), name


def test_extremes_by_hand():
    """-128 * -128 products and INT32 accumulators, values worked out by hand."""
    s = "sm90/mma.m16n8k32.satfinite.s32.s8.s8.s32"
    w = "sm90/mma.m16n8k32.s32.s8.s8.s32"
    A = np.full((16, 32), 0x80, np.uint8)
    B = np.full((32, 8), 0x80, np.uint8)
    C = np.full((16, 8), 0x7FFFFFFF, np.uint32)
    # 32 * 16384 = 524288 = 0x80000; INT32_MAX + 0x80000 wraps to 0x8007FFFF
    assert int(simulate(w, A, B, C)[0, 0]) == 0x8007FFFF
    assert int(simulate(s, A, B, C)[0, 0]) == 0x7FFFFFFF
    C[:] = 0x80000000                                   # INT32_MIN + 524288, no overflow
    assert int(simulate(s, A, B, C)[0, 0]) == 0x80080000
    B[:] = 0x7F                                         # -128 * 127 * 32 = -520192 under MIN
    assert int(simulate(s, A, B, C)[0, 0]) == 0x80000000
    assert int(simulate(w, A, B, C)[0, 0]) == (-(2 ** 31) - 520192) % 2 ** 32


@given(st.lists(st.integers(0, 15), min_size=32, max_size=32),
       st.lists(st.integers(0, 15), min_size=32, max_size=32),
       st.sampled_from([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7FFFFF00, 0x800000FF]),
       st.sampled_from(["s4", "u4"]), st.sampled_from(["s4", "u4"]), st.booleans())
def test_hypothesis_int4(a, b, c, fa, fb, sat):
    name = f"sm80/mma.m16n8k32{'.satfinite' if sat else ''}.s32.{fa}.{fb}.s32"
    ins = isa.lookup(name)
    th = T.resolve(ins)
    d = th.dot(INT, [INT.const(x, 8, False) for x in a], [INT.const(x, 8, False) for x in b],
               INT.const(c, 32, False))
    assert int(d.v) == O.dot(a, b, c, fa, fb, sat)


def test_exhaustive_s4_products():
    """Every (a, b) pair of s4 x u4 and s4 x s4 at k = 0, with c at the bounds."""
    for fa, fb in (("s4", "s4"), ("s4", "u4")):
        ins = isa.lookup(f"sm80/mma.m16n8k32.satfinite.s32.{fa}.{fb}.s32")
        a = np.arange(256, dtype=np.uint8) >> 4
        b = np.arange(256, dtype=np.uint8) & 15
        for c in (0, 0x7FFFFFFF, 0x80000000):
            A = np.zeros((256, 16, 32), np.uint8)
            B = np.zeros((256, 32, 8), np.uint8)
            A[:, :, 0] = a[:, None]
            B[:, 0, :] = b[:, None]
            C = np.full((256, 16, 8), c, np.uint32)
            D = simulate(ins, A, B, C)[:, 0, 0]
            want = [O.dot([int(x)], [int(y)], c, fa, fb, True) for x, y in zip(a, b)]
            assert [int(x) for x in D] == want


def test_sat_step_rival_against_oracle():
    ins = isa.lookup("sm90/mma.m16n8k32.satfinite.s32.s8.s8.s32")
    rng = np.random.default_rng(7)
    A, B, C = _rand_tiles(ins, rng, 2)
    C[1] = rng.integers(0x7FFF0000, 0x80000000, size=C[1].shape, dtype=np.uint64)
    D = simulate(ins, A, B, C, theory="sm90.int.sat-step")
    assert np.array_equal(D, _oracle_tiles(ins, A, B, C, step=16))
    # the rival differs from the primary somewhere on these inputs (accumulators near MAX)
    assert not np.array_equal(D, simulate(ins, A, B, C))


def test_backends_agree_int():
    """numpy lanes, compiled C and z3 (constant inputs) give the same bits."""
    import importlib
    S = importlib.import_module("mmaformal.simulate")
    ins = isa.lookup("sm90/mma.m16n8k64.satfinite.s32.s4.u4.s32")
    rng = np.random.default_rng(3)
    A, B, C = _rand_tiles(ins, rng, 2)
    d_np = simulate(ins, A, B, C)
    old = S.BACKEND
    try:
        S.BACKEND = "compiled"
        S._KERNELS.clear()
        d_c = simulate(ins, A, B, C)
    finally:
        S.BACKEND = old
        S._KERNELS.clear()
    assert np.array_equal(d_np, d_c)
    pytest.importorskip("z3")
    Z = Z3Backend()
    th = T.resolve(ins)
    d = th.dot(Z, [Z.const(int(x), 8, False) for x in A[0, 0]],
               [Z.const(int(x), 8, False) for x in B[0, :, 0]], Z.const(int(C[0, 0, 0]), 32, False))
    import z3
    assert z3.simplify(d.v).as_long() == int(d_np[0, 0, 0])


def test_classes_int_in_range_and_overflow():
    from mmaformal.classes import CLASSES, generate
    rng = np.random.default_rng(0)
    for k in CLASSES:
        a, b, c = generate(k, "s4", "u4", "s32", 64, 20, rng)
        assert a.dtype == np.uint8 and a.max() <= 15 and b.max() <= 15 and c.dtype == np.uint32
    a, b, c = generate("overflow", "s8", "s8", "s32", 32, 50, rng)
    cv = c.view(np.int32).astype(np.int64)
    assert np.all((cv > 2 ** 31 - 1 - 32 * 2 ** 14 - 1) | (cv < -(2 ** 31) + 32 * 2 ** 14 + 1))


# ---- bad input -------------------------------------------------------------------------------

def _bad(capsys, *argv, match):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, (rc, err)
    assert match in err, err


def test_bad_integer_input(tmp_path, capsys):
    name = "sm90/mma.m16n8k64.s32.s4.s4.s32"
    A = np.zeros((16, 64), np.uint8)
    A[3, 7] = 0x10                                     # s4 value outside 0..15 in its byte
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", np.zeros((64, 8), np.uint8))
    np.save(tmp_path / "c.npy", np.zeros((16, 8), np.uint32))
    np.save(tmp_path / "af.npy", np.zeros((16, 64), np.float32))
    np.save(tmp_path / "ci.npy", np.zeros((16, 8), np.int32))
    base = ["--b", str(tmp_path / "b.npy"), "--out", str(tmp_path / "d.npy")]
    _bad(capsys, "simulate", name, "--a", str(tmp_path / "a.npy"), "--c", str(tmp_path / "c.npy"),
         *base, match="index (3, 7)")
    _bad(capsys, "simulate", name, "--a", str(tmp_path / "af.npy"), "--c", str(tmp_path / "c.npy"),
         *base, match="pass uint8 raw bits")
    np.save(tmp_path / "a0.npy", np.zeros((16, 64), np.uint8))
    _bad(capsys, "simulate", name, "--a", str(tmp_path / "a0.npy"), "--c", str(tmp_path / "ci.npy"),
         *base, match="unsigned")
    _bad(capsys, "explain", "sm90/mma.m16n8k32.s32.s8.s8.s32", "--a=1.5", "--b=1", "--c=0",
         match="not exactly representable in s8")
    _bad(capsys, "explain", "sm90/mma.m16n8k32.s32.s4.s4.s32", "--a=9", "--b=1", "--c=0",
         match="s4")
    _bad(capsys, "accuracy", "sm90/mma.m16n8k32.s32.s8.s8.s32", match="integer instructions")
    _bad(capsys, "infer", "--space", "nvidia-t-fdpa", "--oracle", "sm90.int", "--instr",
         "sm90/mma.m16n8k32.s32.s8.s8.s32", match="is an integer instruction")


# ---- verbs ---------------------------------------------------------------------------------

def test_compare_and_explain(capsys):
    rc = main(["compare", "--a=-128,127,3", "--b=-128,-128,2", "--c=2147483647", "--json",
               "sm90/mma.m16n8k32*s8.s8*"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    got = {r["instruction"]: r["output"] for r in out}
    # c + 16384 - 16256 + 6 = INT32_MAX + 134: wraps, or is clamped
    assert got["sm90/mma.m16n8k32.s32.s8.s8.s32"] == "0x80000085"
    assert got["sm90/mma.m16n8k32.satfinite.s32.s8.s8.s32"] == "0x7FFFFFFF"
    rc = main(["explain", "sm90/mma.m16n8k32.satfinite.s32.s8.s8.s32", "--a=-128,127,3",
               "--b=-128,-128,2", "--c=2147483647", "--theory", "sm90.int.sat-step", "--json"])
    rep = json.loads(capsys.readouterr().out)
    kinds = [s["step"] for s in rep["steps"]]
    assert kinds.count("integer block") == 2 and rep["output"]["bits"] == "0x7FFFFFFF"
    assert rep["steps"][0]["products"] == "134"


def test_distinguish_sat_rivals():
    from mmaformal.query import distinguish as D
    a = D.resolve("sm90.int@sm90/mma.m8n8k16.satfinite.s32.s8.s8.s32")
    b = D.resolve("sm90.int@sm90/mma.m8n8k16.satfinite.s32.s8.s8.s32[sat=never]")
    st, found, secs, last, _ = D.search(D.build(a, b, []), 1, "bitwuzla", 60)
    assert st == "distinguished"
    outs = list(found[0].outputs.values())
    assert len(set(outs)) == 2         # one clamps, the other wraps (replayed concretely)


def test_prove_equiv_and_symmetry():
    from mmaformal.query import distinguish as D
    from mmaformal.query.claims import equivalence as CE
    from mmaformal.query.claims import symmetry as CS
    I = "sm90/mma.m16n8k32.s32.s8.s8.s32"
    # without .satfinite, where the clamp would happen cannot matter (wrap is associative)
    r = CE.prove_equiv(D.resolve(f"sm90.int@{I}"), D.resolve(f"sm90.int@{I}[sat_at=step,L=16]"),
                      timeout=60)
    assert r["status"] == "proved" and r["twin"]["status"] == "sat"
    # with it, the rival is refuted by a replayed witness
    S = "sm90/mma.m16n8k32.satfinite.s32.s8.s8.s32"
    r = CE.prove_equiv(D.resolve(f"sm90.int@{S}"), D.resolve(f"sm90.int.sat-step@{S}"), timeout=60)
    assert r["status"] == "refuted"
    # symmetry fails for integers: -(-128) wraps to -128 (two's complement); the witness
    # replays concretely
    r = CS.prove_symmetry(D.resolve("sm90/mma.m8n8k16.s32.s8.s8.s32"), timeout=60)
    assert r["status"] == "refuted" and '"0x80"' in json.dumps(r["witness"]["a"])


def test_probes_separate_integer_rivals(tmp_path):
    from mmaformal.query import probes as P
    m = P.write("sm90/mma.m16n8k32.satfinite.s32.s8.s8.s32", tmp_path)
    assert set(m["features"]) == set(P.INT_FEATURES)
    ov = m["features"]["overflow"]
    never = [r for r in ov["rivals"] if r.endswith("[sat=never]")][0]
    assert not any(never in p for p in ov["unseparated_pairs"])
    ss = m["features"]["sat_step"]
    prim, rival = ss["rivals"][0], "sm90.int.sat-step@sm90/mma.m16n8k32.satfinite.s32.s8.s8.s32"
    assert [prim, rival] not in ss["unseparated_pairs"] and [rival, prim] not in ss["unseparated_pairs"]
    # the probe tiles run unchanged through simulate, and the oracle agrees
    A = np.load(tmp_path / "overflow" / "A.npy")
    B = np.load(tmp_path / "overflow" / "B.npy")
    C = np.load(tmp_path / "overflow" / "C.npy")
    ins = isa.lookup("sm90/mma.m16n8k32.satfinite.s32.s8.s8.s32")
    assert np.array_equal(simulate(ins, A, B, C), _oracle_tiles(ins, A, B, C))


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
def test_emulate_int_gemm(backend):
    from mmaformal.emulate import matmul
    rng = np.random.default_rng(5)
    A = rng.integers(0, 256, (16, 96), dtype=np.uint8)
    B = rng.integers(0, 256, (96, 8), dtype=np.uint8)
    C = rng.integers(0, 1 << 32, (16, 8), dtype=np.uint64).astype(np.uint32)
    ref = (A.view(np.int8).astype(np.int64) @ B.view(np.int8).astype(np.int64)
           + C.view(np.int32)) % 2 ** 32
    for sk in (1, 3):
        D = matmul(A, B, C, "sm90/mma.m16n8k32.s32.s8.s8.s32", split_k=sk, backend=backend)
        assert np.array_equal(D.astype(np.int64), ref)
