"""Sparse MMA (issue 14): the metadata contract (mmaformal.sparse), both theories of the fused
sum (selected terms vs all K terms with zeros) against the exact oracles that share no code with
the core, bad input, and the verbs on sparse instructions."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from mmaformal import isa, sparse as SP
from mmaformal import theory as T
from mmaformal.bits import INT
from mmaformal.classes import generate
from mmaformal.cli import main
from mmaformal.simulate import simulate

from oracles import exact as X
from oracles import integer as O
from oracles import sparse_pairs as OP

F16 = "sm90/mma.sp::ordered_metadata.m16n8k32.f32.f16.f16.f32"


def _meta(rng, shape, G=4, kept=2):
    rows = [np.sort(rng.choice(G, kept, replace=False)) for _ in range(int(np.prod(shape)) // kept)]
    return np.array(rows, dtype=np.uint8).reshape(shape)


def test_compress_expand_round_trip():
    ins = isa.lookup(F16)
    rng = np.random.default_rng(0)
    Ac = rng.integers(1, 0x7C00, size=(3, 16, 16), dtype=np.uint16)
    E = _meta(rng, (3, 16, 16))
    A = SP.expand(Ac, E, ins)
    assert A.shape == (3, 16, 32)
    A2, E2 = SP.compress(A, ins)
    assert np.array_equal(A2, Ac) and np.array_equal(E2, E)


def test_derive_equals_compress_exhaustive():
    """The symbolic rule (sparse.derive, on the int back-end) is numpy's compress, for every
    group over {+0, -0, 1, -1, NaN}^4 (fewer than 3 non-zeros: equal; else both refuse)."""
    ins = isa.lookup("sm90/mma.sp.m16n8k16.f32.f16.f16.f32")
    n = 0
    for row in itertools.product([0, 0x8000, 0x3C00, 0xBC00, 0x7E00], repeat=4):
        A = np.array([list(row) * 4], np.uint16)
        ok = sum((x & 0x7FFF) != 0 for x in row) <= 2
        v, m, o = SP.derive(INT, [INT.const(int(x), 16, False) for x in A[0]], ins)
        assert bool(o.v) == ok
        if ok:
            Ac, E = SP.compress(A, ins)
            assert [int(x.v) for x in v] == [int(x) for x in Ac[0]]
            assert [int(x.v) for x in m] == [int(x) for x in E[0]]
            n += 1
        else:
            with pytest.raises(ValueError, match="breaks 2:4"):
                SP.compress(A, ins)
    assert n == 2 ** 4 + 4 * 3 * 2 ** 3 + 6 * 3 ** 2 * 2 ** 2   # groups with <= 2 non-zeros


def _f16_case(n=3, seed=0):
    rng = np.random.default_rng(seed)
    a, _, c = generate("normal", "f16", "f16", "f32", 16, n * 16, rng)
    _, b, _ = generate("normal", "f16", "f16", "f32", 32, n * 8, rng)
    Ac = a.reshape(n, 16, 16)
    B = b.reshape(n, 8, 32).transpose(0, 2, 1).copy()
    C = np.tile(c, 8).reshape(n, 16, 8)
    return Ac, _meta(rng, (n, 16, 16)), B, C


def test_both_theories_match_the_exact_oracle():
    """selected: one T-FDPA over the 16 kept terms (L = 16); dense: two T-FDPA blocks of 16
    over the logical K = 32 with zeros (oracle: tests/oracles/exact.py, F = 25, RZ-FP32)."""
    ins = isa.lookup(F16)
    Ac, E, B, C = _f16_case()
    D1 = simulate(ins, Ac, B, C, meta=E)
    D2 = simulate(ins, Ac, B, C, meta=E, theory="sm90.f16.f32.sp-dense")
    Ad = SP.expand(Ac, E, ins)
    assert np.array_equal(simulate(ins, Ad, B, C), D1)        # dense form: metadata derived
    assert (D1 != D2).sum() > 0                                # the rival differs on these
    for t in range(Ac.shape[0]):
        for i in range(16):
            for j in range(8):
                ac = [int(x) for x in Ac[t, i]]
                bs = [int(B[t, (k // 2) * 4 + int(E[t, i, k]), j]) for k in range(16)]
                d = X.t_fdpa(ac, bs, int(C[t, i, j]), "f16", "f16", "f32", 25, "RZ-FP32", "excluded")
                assert d == int(D1[t, i, j])
                ad, bb = [int(x) for x in Ad[t, i]], [int(B[t, k, j]) for k in range(32)]
                d = int(C[t, i, j])
                for k0 in (0, 16):
                    d = X.t_fdpa(ad[k0:k0 + 16], bb[k0:k0 + 16], d, "f16", "f16", "f32", 25,
                                 "RZ-FP32", "excluded")
                assert d == int(D2[t, i, j])


@pytest.mark.parametrize("name", ["sm90/mma.sp.m16n8k64.satfinite.s32.s8.u8.s32",
                                  "sm80/mma.sp::ordered_metadata.m16n8k128.s32.s4.s4.s32",
                                  "sm90/wgmma.sp.m64n8k64.s32.u8.s8",
                                  "gfx942/v_smfmac_i32_16x16x64_i8"])
def test_integer_sparse_matches_oracle(name):
    ins = isa.lookup(name)
    rng = np.random.default_rng(1)
    nk = SP.kept_width(ins)
    fa = {"s8": 8, "u8": 8, "s4": 4, "u4": 4}
    Ac = rng.integers(0, 1 << fa[ins.a], (2, ins.m, nk), dtype=np.uint8)
    legal = OP.all_legal_groups(ins.a)          # the oracle's rule (s4/u4: aligned pairs)
    E = np.array([legal[i] for i in rng.integers(len(legal), size=2 * ins.m * nk // len(legal[0]))],
                 np.uint8).reshape(2, ins.m, nk)
    B = rng.integers(0, 1 << fa[ins.b], (2, ins.k, ins.n), dtype=np.uint8)
    C = rng.integers(0, 1 << 32, (2, ins.m, ins.n), dtype=np.uint64).astype(np.uint32)
    C[0, 0, 0], C[0, 1, 0] = 0x7FFFFFFF, 0x80000000
    D = simulate(ins, Ac, B, C, meta=E)
    for t in range(2):
        for i in range(ins.m):
            for j in range(ins.n):
                bs = [int(B[t, k, j]) for k in OP.dense_k([int(x) for x in E[t, i]], ins.a)]
                want = O.dot([int(x) for x in Ac[t, i]], bs, int(C[t, i, j]), ins.a, ins.b,
                             ins.satfinite)
                assert want == int(D[t, i, j])


def test_tf32_one_of_two():
    ins = isa.lookup("sm90/mma.sp.m16n8k8.f32.tf32.tf32.f32")
    A = np.zeros((16, 8), np.uint32)
    A[:, 1] = 0x3F800000          # 1.0 at k = 1 (pair 0), 2.0 at k = 6 (pair 3)
    A[:, 6] = 0x40000000
    B = np.zeros((8, 8), np.uint32)
    B[1], B[6], B[0] = 0x40400000, 0x40800000, 0x7FC00000     # 3, 4; NaN in a pruned row
    D = simulate(ins, A, B, np.zeros((16, 8), np.uint32))
    assert int(D[0, 0]) == 0x41300000                          # 1*3 + 2*4 = 11: NaN pruned
    Dd = simulate(ins, A, B, np.zeros((16, 8), np.uint32), theory="sm90.tf32.f32.sp-dense")
    assert int(Dd[0, 0]) == 0x7FFFFFFF                         # all K terms: 0 * NaN


def test_borrowed_parameters_match_the_dense_counterpart():
    """theories/sparse.toml copies each dense counterpart's arithmetic (see its header)."""
    ts = T.default()
    cat = isa.catalog()
    for t in ts:
        if not t.sparse:
            continue
        for name in ts.instructions_of(t.id):
            ins = cat[name]
            fam = {"mma": "mma", "wgmma": "wgmma", "smfmac": "mfma"}[ins.family]
            dense = [d for d in cat.values() if d.arch == ins.arch and d.family == fam and
                     not d.sparse and (d.a, d.b, d.c, d.d, d.m, d.n, d.satfinite) ==
                     (ins.a, ins.b, ins.c, ins.d, ins.m, ins.n, ins.satfinite) and
                     d.k == ins.k // 2 and d.blocks == 1 and not d.scale and
                     "kind::" not in d.qualifier]
            assert len(dense) == 1, name
            arith = lambda x: (x.model, x.op, x.L, x.params, x.convert, x.k_order, x.accumulate)
            bases = ts.theories_for(dense[0])
            if t.primary:       # a primary borrows the dense primary's arithmetic
                assert arith(t) == arith(bases[0]), (t.id, bases[0].id)
            else:               # a rival borrows that of one of the dense form's theories
                assert any(arith(t) == arith(b) for b in bases), (t.id, [b.id for b in bases])


# ---- bad input -------------------------------------------------------------------------------

def _bad(capsys, *argv, match):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, (rc, err)
    assert match in err, err


def test_bad_sparse_input(tmp_path, capsys):
    ins = isa.lookup(F16)
    rng = np.random.default_rng(2)
    Ac, E, B, C = _f16_case(1)
    np.save(tmp_path / "ac.npy", Ac[0])
    np.save(tmp_path / "b.npy", B[0])
    np.save(tmp_path / "c.npy", C[0])
    argv = ["simulate", F16, "--a", str(tmp_path / "ac.npy"), "--b", str(tmp_path / "b.npy"),
            "--c", str(tmp_path / "c.npy"), "--out", str(tmp_path / "d.npy")]
    for name, arr, match in (
            ("range", lambda e: e.__setitem__((2, 5), 4), "index 4 at (2, 5) is out of range 0..3"),
            ("twice", lambda e: e.__setitem__((3, slice(6, 8)), 1), "selects position 1 twice"),
            ("order", lambda e: e.__setitem__((4, slice(0, 2)), [3, 1]), "not increasing"),
    ):
        e = E[0].copy()
        arr(e)
        np.save(tmp_path / f"e_{name}.npy", e)
        _bad(capsys, *argv, "--meta", str(tmp_path / f"e_{name}.npy"), match=match)
    # plain .sp accepts any distinct order (only ::ordered_metadata requires increasing)
    e = E[0].copy()
    e[4, 0:2] = [3, 1]
    SP.check_meta(e, isa.lookup("sm90/mma.sp.m16n8k32.f32.f16.f16.f32"))
    # a dense A that breaks 2:4
    A = SP.expand(Ac[0], E[0], ins)
    A[5, 8:12] = [0x3C00, 0x3C00, 0x3C00, 0]
    np.save(tmp_path / "a.npy", A)
    argv[3] = str(tmp_path / "a.npy")
    _bad(capsys, *argv, match="breaks 2:4 sparsity in row (5,), group k 8..11: 3 non-zero")
    # compressed A without metadata
    argv[3] = str(tmp_path / "ac.npy")
    _bad(capsys, *argv, match="needs meta")
    # metadata on a dense instruction
    np.save(tmp_path / "e.npy", E[0])
    _bad(capsys, "simulate", "sm90/mma.m16n8k16.f32.f16.f16.f32", "--a", str(tmp_path / "ac.npy"),
         "--b", str(tmp_path / "b.npy"), "--c", str(tmp_path / "c.npy"), "--out",
         str(tmp_path / "d.npy"), "--meta", str(tmp_path / "e.npy"), match="not sparse")
    _bad(capsys, "explain", F16, "--a=1,1,1", "--b=1", "--c=0", match="breaks 2:4")


# ---- verbs ---------------------------------------------------------------------------------

def test_compare_explain_sparse(capsys):
    assert main(["explain", "sm90/mma.sp.m16n8k16.f32.f16.f16.f32", "--a=1,0,0,2.5,0,0,0,3",
                 "--b=1,2,3,4,5,6,7,8", "--c=0.5", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["output"]["value"] == "35.5" and rep["operands"]["metadata"][:4] == [0, 3, 0, 3]
    assert main(["compare", "--a=1,0,0,2.5,0,0,0,3", "--b=1,2,3,4,5,6,7,8", "--c=0.5", "--json",
                 "sm90/mma.sp.m16n8k32.f32.f16*"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["output"] == "0x420E0000"


def test_distinguish_selected_from_dense():
    from mmaformal.query import distinguish as D
    I = "sm90/mma.sp.m16n8k16.f32.f16.f16.f32"
    a, b = D.resolve(f"sm90.f16.f32.sp@{I}"), D.resolve(f"sm90.f16.f32.sp-dense@{I}")
    st, found, secs, last, _ = D.search(D.build(a, b, []), 1, "bitwuzla", 60)
    assert st == "distinguished"
    w = found[0].witness
    A = np.array([w.a], np.uint16)
    SP.compress(A, isa.lookup(I))               # the witness keeps 2:4 (asserted in the query)


def test_prove_sp_and_ordered_metadata_equal():
    """mma.sp and mma.sp::ordered_metadata compute the same function of the dense 2:4 A (their
    metadata rules differ only in which encodings are legal): proved, with a broken twin (F - 1)
    that the solver refutes."""
    from mmaformal.query import distinguish as D
    from mmaformal.query.claims import equivalence as CE
    r = CE.prove_equiv(D.resolve("sm90/mma.sp.m16n8k16.f32.f16.f16.f32"),
                      D.resolve("sm90/mma.sp::ordered_metadata.m16n8k16.f32.f16.f16.f32"),
                      timeout=60)
    assert r["status"] == "proved" and r["twin"]["status"] == "sat"


def test_probes_sparse_feature(tmp_path):
    from mmaformal.query import probes as P
    m = P.write(F16, tmp_path)
    f = m["features"]["sparse"]
    assert f["probes"] > 0 and "sm90.f16.f32.sp-dense@" + F16 in f["rivals"]
    assert [F16, "sm90.f16.f32.sp-dense@" + F16] not in f["unseparated_pairs"]
    A = np.load(tmp_path / "sparse" / "A.npy")
    SP.compress(A, isa.lookup(F16))             # every probe tile keeps 2:4
    D = simulate(F16, A, np.load(tmp_path / "sparse" / "B.npy"), np.load(tmp_path / "sparse" / "C.npy"))
    pr = [p for p in m["probes"] if p["feature"] == "sparse"]
    assert all(int(p["predictions"][F16], 16) == int(D[p["tile"], 0, 0]) for p in pr)


def test_emulate_sparse_gemm():
    from mmaformal.emulate import matmul
    rng = np.random.default_rng(2)
    A = rng.integers(0, 256, (16, 128), dtype=np.uint8)
    A[:, (np.arange(128) % 4) >= 2] = 0
    B = rng.integers(0, 256, (128, 8), dtype=np.uint8)
    C = rng.integers(0, 1 << 32, (16, 8), dtype=np.uint64).astype(np.uint32)
    ref = (A.view(np.int8).astype(np.int64) @ B.view(np.int8).astype(np.int64) + C.view(np.int32)) % 2 ** 32
    for be in ("numpy", "compiled"):
        D = matmul(A, B, C, "sm90/mma.sp.m16n8k64.s32.s8.s8.s32", split_k=2, backend=be)
        assert np.array_equal(D.astype(np.int64), ref)
    A[3, 4:7] = 1
    with pytest.raises(ValueError, match="breaks 2:4"):
        matmul(A, B, C, "sm90/mma.sp.m16n8k64.s32.s8.s8.s32")


def test_prune_and_random_meta_for_campaigns():
    ins = isa.lookup("sm90/wgmma.sp.m64n8k64.f32.e4m3.e5m2")
    rng = np.random.default_rng(9)
    for klass in ("normal", "bits", "special", "overflow"):
        a, b, c = generate(klass, ins.a, ins.b, ins.c, ins.k, 64, rng)
        A = SP.prune(a, ins, rng)
        Ac, E = SP.compress(A, ins)                     # keeps the pattern: compress accepts it
        kept = SP.expand(Ac, E, ins)
        assert np.array_equal(kept & 0x7F, A & 0x7F)
    E = SP.random_meta(isa.lookup(F16), (5, 16, 16), rng)
    SP.check_meta(E, isa.lookup(F16))                   # increasing and distinct
    assert len({tuple(r) for r in E.reshape(-1, 2)}) == 6   # all 6 pairs of 4 positions occur


def test_compiled_path_equals_numpy_lanes():
    import importlib
    S = importlib.import_module("mmaformal.simulate")
    ins = isa.lookup("sm80/mma.sp::ordered_metadata.m16n8k64.satfinite.s32.u4.s4.s32")
    rng = np.random.default_rng(11)
    Ac = rng.integers(0, 16, (3, 16, 32), dtype=np.uint8)
    E = SP.random_meta(ins, Ac.shape, rng)
    B = rng.integers(0, 16, (3, 64, 8), dtype=np.uint8)
    C = rng.integers(0, 1 << 32, (3, 16, 8), dtype=np.uint64).astype(np.uint32)
    d_np = simulate(ins, Ac, B, C, meta=E)
    old = S.BACKEND
    try:
        S.BACKEND = "compiled"
        S._KERNELS.clear()
        d_c = simulate(ins, Ac, B, C, meta=E)
    finally:
        S.BACKEND = old
        S._KERNELS.clear()
    assert np.array_equal(d_np, d_c)


from hypothesis import given, strategies as st  # noqa: E402


@given(st.lists(st.integers(0, 0xFFFF), min_size=32, max_size=32),
       st.lists(st.sampled_from([(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]),
                min_size=8, max_size=8))
def test_hypothesis_expand_compress(vals, pairs):
    """expand then compress gives back the kept values and the metadata, except where a kept
    value is itself zero (then the dense row cannot tell which slot held it: the rule refills
    from the lowest free position, and the value stays a zero)."""
    ins = isa.lookup("sm90/mma.sp.m16n8k32.f32.f16.f16.f32")
    Ac = np.array([vals[:16]], np.uint16)
    E = np.array([[p for pr in pairs for p in pr]], np.uint8)
    A = SP.expand(Ac, E, ins)
    A2, E2 = SP.compress(A, ins)
    zero = (Ac & 0x7FFF) == 0
    assert np.array_equal(SP.expand(A2, E2, ins) & 0x7FFF, A & 0x7FFF)   # same values
    if not zero.any():
        assert np.array_equal(A2, Ac) and np.array_equal(E2, E)
