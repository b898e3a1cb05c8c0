"""The 4-bit sparsity rule (s4/u4 mma.sp and mma.sp::ordered_metadata): 4 of every 8 elements,
kept in aligned pairs (2p, 2p + 1), one index per kept pair (PTX ISA 9.7.14.6.1; H100 campaign
2026-11-24). The core's one definition (mmaformal.sparse) against an independent oracle
(tests/oracles/sparse_pairs.py, no code shared), bad input through the CLI, and recorded H100
tiles replayed through `mmaformal simulate` with the compressed A and its metadata."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from mmaformal import isa, paths
from mmaformal import sparse as SP
from mmaformal.bits import INT
from mmaformal.cli import main
from mmaformal.hw import campaigns

from oracles import integer as O
from oracles import sparse_pairs as OP

S4 = "sm90/mma.sp.m16n8k64.s32.s4.s4.s32"
U4_ORD = "sm90/mma.sp::ordered_metadata.m16n8k128.s32.u4.u4.s32"
#: the H100 mma.sp campaign (mmaformal.hw.campaigns: its pack, or its folder before packing)
REC = campaigns.campaign("2026-11-24-h100-issue14-sparse", paths.shipped("counterexamples") / "hw")


def test_rule_is_pairs_for_4bit_and_single_elements_otherwise():
    assert SP.group("s4") == SP.group("u4") == (8, 4, 2)
    assert isa.lookup(S4).sparsity == (8, 4) and SP.kept_width(isa.lookup(S4)) == 32
    for name in ("sm90/mma.sp.m16n8k64.s32.s8.s8.s32", "sm90/mma.sp.m16n8k32.f32.f16.f16.f32"):
        assert isa.lookup(name).sparsity == (4, 2)
    assert isa.lookup("sm90/mma.sp.m16n8k16.f32.tf32.tf32.f32").sparsity == (2, 1)
    from mmaformal.hw import sparse as HW          # the harness reads the same rule
    assert HW.group("s4")[:2] == (8, 4) and HW.group("u8")[:2] == (4, 2)


def test_dense_rule_matches_oracle_exhaustive():
    """Every zero/non-zero pattern of an 8-element chunk (256), for s4 and u4: the core accepts
    exactly the rows the oracle calls legal, with the oracle's kept values and positions, and
    the symbolic rule (derive, int back-end) agrees with both."""
    rng = np.random.default_rng(0)
    n_legal = 0
    for name in (S4, U4_ORD):
        ins = isa.lookup(name)
        for mask in range(256):
            row = [0] * ins.k
            for e in range(8):
                if mask >> e & 1:
                    row[8 + e] = int(rng.integers(1, 16))      # chunk 1 (k 8..15)
            legal = OP.legal_dense(row, ins.a)
            v, m, ok = SP.derive(INT, [INT.const(x, 8, False) for x in row], ins)
            assert bool(ok.v) == legal, (name, mask)
            if not legal:
                with pytest.raises(ValueError, match=r"group k 8\.\.15: non-zero elements in"):
                    SP.dense_row(ins, row)
                continue
            n_legal += 1
            want = OP.compress(row, ins.a)
            assert SP.dense_row(ins, row) == want, (name, mask)
            assert ([int(x.v) for x in v], [int(x.v) for x in m]) == want, (name, mask)
    # legal chunks: non-zeros inside at most 2 of the 4 pairs: 1 + 4*3 + 6*3*3 = 67 masks
    assert n_legal == 2 * 67


def test_meta_rule_matches_oracle_exhaustive():
    """Every 4-tuple of positions 0..8 for one group (9^4), for .sp and ::ordered_metadata:
    check_meta accepts exactly what the oracle calls legal; expand puts each kept element at
    the oracle's dense k."""
    for name in ("sm90/mma.sp.m16n8k64.s32.u4.s4.s32", "sm90/mma.sp::ordered_metadata.m16n8k64.s32.u4.s4.s32"):
        ins = isa.lookup(name)
        ordered = ins.sparse == "sp::ordered_metadata"
        rest = [0, 1, 6, 7] * 7
        acc = 0
        for t in itertools.product(range(9), repeat=4):
            E = np.array([list(t) + rest], np.uint8)
            legal = OP.legal_meta(list(t) + rest, ins.a, ordered)
            try:
                SP.check_meta(E, ins)
                got = True
            except ValueError:
                got = False
            assert got == legal, (name, t)
            if legal:
                acc += 1
                Ac = np.arange(1, 33, dtype=np.uint8).reshape(1, 32) % 16 | 1
                A = SP.expand(Ac, E, ins)
                ks = OP.dense_k(list(t) + rest, ins.a)
                assert [int(A[0, k]) for k in ks] == [int(x) for x in Ac[0]]
                assert int(np.count_nonzero(A)) == 32
        assert acc == (6 if ordered else 12)            # C(4,2) pairs of pairs, in either order


def _write(tmp_path, **arrs):
    out = {}
    for k, v in arrs.items():
        out[k] = str(tmp_path / f"{k}.npy")
        np.save(out[k], v)
    return out


def _bad(capsys, argv, match):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, (rc, err)
    assert match in err, err


def test_bad_4bit_sparse_input_cli(tmp_path, capsys):
    """Exit 2 and one line naming the first offending position, for a dense A and for metadata."""
    ins = isa.lookup(U4_ORD)
    rng = np.random.default_rng(3)
    legal = OP.all_legal_groups("u4")
    E = np.array([legal[i] for i in rng.integers(len(legal), size=16 * 64 // 4)],
                 np.uint8).reshape(16, 64)
    Ac = rng.integers(1, 16, (16, 64), dtype=np.uint8)
    B = rng.integers(0, 16, (128, 8), dtype=np.uint8)
    C = rng.integers(0, 1 << 32, (16, 8), dtype=np.uint64).astype(np.uint32)
    p = _write(tmp_path, ac=Ac, b=B, c=C)
    base = ["simulate", U4_ORD, "--b", p["b"], "--c", p["c"], "--out", str(tmp_path / "d.npy")]
    assert main(base + ["--a", p["ac"], "--meta", _write(tmp_path, e=E)["e"]]) == 0
    capsys.readouterr()
    cases = [
        ("range", (4, 9), [0, 1, 8, 9], "metadata index 8 at (4, 10) is out of range 0..7"),
        ("split", (2, 4), [0, 2, 4, 5], "positions 0, 2 at (2, 4)..(2, 5) are not an aligned pair"),
        ("unaligned", (7, 60), [1, 2, 4, 5], "positions 1, 2 at (7, 60)..(7, 61) are not an aligned pair"),
        ("twice", (5, 0), [2, 3, 2, 3], "selects pair 1 (positions 2, 3) twice in group 0 (k 0..7) of row (5,)"),
        ("order", (6, 8), [4, 5, 0, 1], "indices 4, 5, 0, 1 of group 2 of row (6,) are not increasing"),
    ]
    for what, (r, j), vals, msg in cases:
        e = E.copy()
        j0 = j - j % 4
        e[r, j0:j0 + 4] = vals
        _bad(capsys, base + ["--a", p["ac"], "--meta", _write(tmp_path, **{f"e_{what}": e})[f"e_{what}"]], msg)
    # plain .sp takes the kept pairs in any order (only ::ordered_metadata needs increasing)
    e = E.copy()
    e[6, 8:12] = [4, 5, 0, 1]
    SP.check_meta(e, isa.lookup("sm90/mma.sp.m16n8k128.s32.u4.u4.s32"))
    # dense A: 4 non-zero elements of 8, but in 4 pairs (2:4 would accept them)
    A = SP.expand(Ac, E, ins)
    A[3, 16:24] = [1, 0, 2, 0, 3, 0, 4, 0]
    _bad(capsys, base + ["--a", _write(tmp_path, a1=A)["a1"]],
         "breaks 4:8 (aligned pairs) sparsity in row (3,), group k 16..23: non-zero elements in "
         "4 of 4 pairs, at most 2 allowed (k = 16, 18, 20, 22)")
    # dense A: 3 non-zero elements in 3 pairs
    A = SP.expand(Ac, E, ins)
    A[9, 0:8] = [0, 7, 7, 0, 0, 0, 7, 0]
    _bad(capsys, base + ["--a", _write(tmp_path, a2=A)["a2"]],
         "row (9,), group k 0..7: non-zero elements in 3 of 4 pairs, at most 2 allowed (k = 1, 2, 6)")
    # a dense A whose groups of 4 are full (2:4 would refuse) but that keeps two whole pairs: legal,
    # and the same D as its compressed form
    A = SP.expand(Ac, E, ins)
    A[:, 0:8] = [5, 6, 7, 8, 0, 0, 0, 0]
    Ac2, E2 = OP_compress_rows(A, "u4")
    p2 = _write(tmp_path, a3=A, ac3=Ac2, e3=E2)
    assert main(base[:-2] + ["--out", str(tmp_path / "d_dense.npy"), "--a", p2["a3"]]) == 0
    assert main(base[:-2] + ["--out", str(tmp_path / "d_comp.npy"), "--a", p2["ac3"],
                             "--meta", p2["e3"]]) == 0
    assert np.array_equal(np.load(tmp_path / "d_dense.npy"), np.load(tmp_path / "d_comp.npy"))


def OP_compress_rows(A, fmt):
    rows = [OP.compress([int(x) for x in r], fmt) for r in A]
    return (np.array([v for v, _ in rows], np.uint8), np.array([e for _, e in rows], np.uint8))


@pytest.mark.parametrize("stem", ["sm90_mma.sp.m16n8k64.s32.s4.s4.s32",
                                  "sm90_mma.sp::ordered_metadata.m16n8k128.satfinite.s32.u4.u4.s32"])
def test_recorded_h100_tiles_replay_through_simulate_cli(stem, tmp_path, capsys):
    """H100 tiles (recorded 2026-11-24) through `mmaformal simulate` with the compressed A and the
    harness's positions as --meta, and as a dense A: bit-exact. The same tiles against the exact
    integer oracle under the oracle's pair rule match; under an element-wise 2:4 reading of the
    positions (the broken twin) they do not."""
    z = REC.arrays(stem)
    name = stem.replace("_", "/", 1)
    ins = isa.lookup(name)
    n = 0
    for klass in ("bits", "overflow"):
        A, B, C, D = (z[f"{klass}.{x}"] for x in "abcd")
        meta = np.ascontiguousarray(np.broadcast_to(z[f"{klass}.meta"][:, None, :], A.shape))
        assert int(meta.max()) >= 4                    # positions a 2:4 contract would refuse
        p = _write(tmp_path, a=A, e=meta, b=B, c=C)
        assert main(["simulate", name, "--a", p["a"], "--meta", p["e"], "--b", p["b"], "--c", p["c"],
                     "--out", str(tmp_path / "d.npy")]) == 0, capsys.readouterr().err
        assert np.array_equal(np.load(tmp_path / "d.npy"), D)
        dense = np.zeros(A.shape[:-1] + (ins.k,), np.uint8)
        wrong = 0
        for t in range(A.shape[0]):
            for i in range(ins.m):
                ks = OP.dense_k([int(x) for x in meta[t, i]], ins.a)
                dense[t, i, ks] = A[t, i]
                twin = [(j // 2) * 4 + int(pos) % 4 for j, pos in enumerate(meta[t, i])]
                for j in range(ins.n):
                    a = [int(x) for x in A[t, i]]
                    want = O.dot(a, [int(B[t, k, j]) for k in ks], int(C[t, i, j]), ins.a, ins.b,
                                 ins.satfinite)
                    assert want == int(D[t, i, j])
                    wrong += O.dot(a, [int(B[t, k, j]) for k in twin], int(C[t, i, j]), ins.a,
                                   ins.b, ins.satfinite) != int(D[t, i, j])
                    n += 1
        assert wrong > 0
        p.update(_write(tmp_path, ad=dense))
        assert main(["simulate", name, "--a", p["ad"], "--b", p["b"], "--c", p["c"],
                     "--out", str(tmp_path / "dd.npy")]) == 0, capsys.readouterr().err
        assert np.array_equal(np.load(tmp_path / "dd.npy"), D)
    assert n == 2 * A.shape[0] * ins.m * ins.n


def test_queries_on_4bit_sparse_keep_pairs():
    """The query layer's dense-A form (sparse.derive over z3): a distinguishing witness between
    the wrapping and the .satfinite s4 form keeps the pair rule (oracle), and .sp equals
    ::ordered_metadata on every legal dense A (proved; the broken twin is SAT)."""
    from mmaformal.query import distinguish as D
    from mmaformal.query.claims import equivalence as CE
    a = D.resolve(S4)
    st, found, *_ = D.search(D.build(a, D.resolve(S4.replace("k64.", "k64.satfinite.")), []), 1,
                             "bitwuzla", 60)
    assert st == "distinguished"
    assert OP.legal_dense(list(found[0].witness.a), "s4")
    r = CE.prove_equiv(a, D.resolve(S4.replace("mma.sp.", "mma.sp::ordered_metadata.")), timeout=60)
    assert r["status"] == "proved" and r["twin"]["status"] == "sat"


def test_emulate_4bit_sparse_gemm():
    """A GEMM on s4 mma.sp with a dense A keeping 2 aligned pairs of every 8 (chosen by the
    oracle): D equals the exact integer product (wrap-around s32); a row that keeps a third
    pair is refused."""
    from mmaformal.emulate import matmul
    rng = np.random.default_rng(4)
    M, K, N = 16, 256, 8
    legal = OP.all_legal_groups("s4")
    keep = np.zeros((M, K), bool)
    for i in range(M):
        for g in range(K // 8):
            keep[i, [g * 8 + p for p in legal[rng.integers(len(legal))]]] = True
    A = np.where(keep, rng.integers(0, 16, (M, K)), 0).astype(np.uint8)
    B = rng.integers(0, 16, (K, N), dtype=np.uint8)
    C = rng.integers(0, 1 << 32, (M, N), dtype=np.uint64).astype(np.uint32)
    sv = lambda x: np.where(x >= 8, x.astype(np.int64) - 16, x.astype(np.int64))
    ref = (sv(A) @ sv(B) + C.view(np.int32)) % 2 ** 32
    D = matmul(A, B, C, S4, split_k=2, backend="numpy")
    assert np.array_equal(D.astype(np.int64), ref)
    assert OP.legal_dense([int(x) for x in A[0]], "s4")
    A[3, 8:16] = [1, 0, 0, 2, 0, 0, 3, 0]                # pairs 0, 1, 3 of group k 8..15
    with pytest.raises(ValueError, match=r"\(K-step, row\): dense A breaks 4:8 \(aligned pairs\) "
                                         r"sparsity in row \(0, 3\), group k 8\.\.15"):
        matmul(A, B, C, S4)


def test_probes_on_4bit_sparse_keep_pairs(tmp_path):
    """Probe files of an s4 mma.sp form: every A row keeps the pair rule (oracle), and the
    recorded predictions are what simulate gives on them."""
    from mmaformal.query import probes as P
    from mmaformal.simulate import simulate
    m = P.write(S4, tmp_path)
    n = 0
    for feat, f in m["features"].items():
        if not f.get("probes"):
            continue
        A = np.load(tmp_path / feat / "A.npy")
        for row in A.reshape(-1, A.shape[-1]):
            assert OP.legal_dense([int(x) for x in row], "s4"), feat
            n += 1
        D = simulate(S4, A, np.load(tmp_path / feat / "B.npy"), np.load(tmp_path / feat / "C.npy"))
        for p in (p for p in m["probes"] if p["feature"] == feat):
            assert int(p["predictions"][S4], 16) == int(D[p["tile"], 0, 0])
    assert n > 0


from hypothesis import given, strategies as st  # noqa: E402


@given(st.lists(st.integers(0, 15), min_size=32, max_size=32),
       st.lists(st.integers(0, 5), min_size=8, max_size=8))
def test_hypothesis_4bit_expand_compress(vals, choice):
    """expand then compress gives back the kept values and the pair positions (oracle's legal
    groups), except where a whole kept pair is zero (then the lowest free pair is taken)."""
    ins = isa.lookup(S4)
    legal = OP.all_legal_groups("s4")
    E = np.array([[p for c in choice for p in legal[c]]], np.uint8)
    Ac = np.array([vals], np.uint8)
    A = SP.expand(Ac, E, ins)
    want = [0] * ins.k
    for j, k in enumerate(OP.dense_k([int(x) for x in E[0]], "s4")):
        want[k] = vals[j]
    assert A[0].tolist() == want
    A2, E2 = SP.compress(A, ins)
    assert (A2.tolist()[0], E2.tolist()[0]) == OP.compress([int(x) for x in A[0]], "s4")
    if all(vals[2 * i] or vals[2 * i + 1] for i in range(16)):
        assert np.array_equal(A2, Ac) and np.array_equal(E2, E)

