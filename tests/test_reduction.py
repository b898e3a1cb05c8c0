"""The sparse reduction that lets `prove --all` / `distinguish --all-pairs` decide a sparse
instruction through the query of a dense one (model.REDUCTION_SPARSE): for every group that
holds both, the sparse dot product equals the dense head's on the kept A values and the B rows
the metadata selects, bit for bit, on random lanes of every input class (special values, zeros
of both signs, NaN payloads, extreme integers) and random metadata. And the grouping itself:
qualifiers the theory reads (.satfinite, the b1 operation) split groups."""
from __future__ import annotations

import numpy as np
import pytest

from mmaformal import fp, isa
from mmaformal import theory as T
from mmaformal.bits import NUMPY
from mmaformal.classes import CLASSES, generate
from mmaformal.query.prove import claim_groups


def _mixed_groups():
    groups, _ = claim_groups("symmetry")
    out = []
    for g in groups:
        sp = [n for n in g if isa.lookup(n).sparse]
        if sp and not isa.lookup(g[0]).sparse:
            out.append((g[0], sp))
    return out


MIXED = _mixed_groups()


def test_every_sparse_instruction_has_a_dense_head():
    groups, _ = claim_groups("symmetry")
    assert MIXED, "no group joins sparse and dense instructions"
    for g in groups:
        if isa.lookup(g[0]).sparse:          # a sparse head: every member is sparse
            assert all(isa.lookup(n).sparse for n in g)


def _cols(x, fmtname):
    f = fp.fmt(fmtname)
    dt = np.uint8 if f.storage <= 8 else np.uint16 if f.storage <= 16 else \
        np.uint32 if f.storage <= 32 else np.uint64
    return [NUMPY.lift(np.ascontiguousarray(x[:, k]).astype(dt), f.storage, False)
            for k in range(x.shape[1])]


@pytest.mark.parametrize("head,sparse", MIXED, ids=[h for h, _ in MIXED])
def test_sparse_equals_dense_head_on_selected_rows(head, sparse):
    ts = T.default()
    hd = isa.lookup(head)
    th_d = ts.theories_for(hd)[0]
    rng = np.random.default_rng(len(head))
    for name in sparse[:3]:
        ins = isa.lookup(name)
        th_s = ts.theories_for(ins)[0]
        G, kept = ins.sparsity
        nk = ins.k // G * kept
        assert nk == hd.k
        for klass in CLASSES:
            a, _, c = generate(klass, ins.a, ins.b, ins.c, nk, 64, rng)
            _, b, _ = generate(klass, ins.a, ins.b, ins.c, ins.k, 64, rng)
            meta = rng.integers(0, G, size=(64, nk), dtype=np.uint8)
            rows = np.array([[(j // kept) * G + int(meta[i, j]) for j in range(nk)]
                             for i in range(64)])
            bsel = np.take_along_axis(b, rows, axis=1)
            m = [NUMPY.lift(meta[:, j], 8, False) for j in range(nk)]
            cc = NUMPY.lift(c, fp.fmt(ins.c).storage, False)
            ds = th_s.bind(name).dot(NUMPY, _cols(a, ins.a), _cols(b, ins.b), cc, meta=m)
            dd = th_d.bind(head).dot(NUMPY, _cols(a, hd.a), _cols(bsel, hd.b), cc)
            assert np.array_equal(np.asarray(ds.v), np.asarray(dd.v)), (name, klass)


def test_satfinite_and_bop_split_groups():
    groups, _ = claim_groups("symmetry", ["sm90/mma.m16n8k32*s8*", "sm90/mma.m16n8k256*b1*"])
    for g in groups:
        ins = [isa.lookup(n) for n in g]
        assert len({i.satfinite for i in ins}) == 1 and len({i.bop for i in ins}) == 1, g
