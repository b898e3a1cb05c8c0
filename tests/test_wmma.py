"""wmma.mma forms (issue 14): catalog, the composition each theory claims (the mma-level
instruction sequence the seeds show, replayed through `emulate` K-step by K-step), the integer
forms against the exact integer oracle, the parameters borrowed from the mma-level theories,
and the verbs."""
from __future__ import annotations

import collections
import json

import numpy as np
import pytest

from mmaformal import isa
from mmaformal import theory as T
from mmaformal.classes import generate
from mmaformal.cli import main
from mmaformal.emulate import matmul
from mmaformal.simulate import simulate

from oracles import integer as O


def test_wmma_catalog():
    cat = isa.catalog()
    fam = collections.Counter(i.arch for i in cat.values() if i.family == "wmma")
    # sm70: f16 3 shapes x 4 (d, c) = 12; sm75: + s8/u8 3 x 2 x 2 sat (12) + s4/u4 4 + b1 xor 1;
    # sm80+: + b1 and 1 + bf16 3 + tf32 1 + f64 1 (PTX ISA 9.7.14.4.7 target notes)
    assert dict(fam) == {"sm70": 12, "sm75": 29, "sm80": 35, "sm89": 35, "sm90": 35,
                         "sm100": 35, "sm120": 35}
    i = cat["sm70/wmma.mma.m32n8k16.f32.f16"]
    assert (i.m, i.n, i.k, i.a, i.c, i.d) == (32, 8, 16, "f16", "f16", "f32")
    i = cat["sm90/wmma.mma.m8n8k32.s32.s4.s4.s32.satfinite"]
    assert i.satfinite and i.integer
    assert "sm75/wmma.mma.and.popc.m8n8k128.s32.b1.b1.s32" not in cat     # .and: sm_80
    assert isa.lookup("sm_80/wmma.mma.sync.aligned.row.col.m16n16k16.f32.f16").name == \
        "sm80/wmma.mma.m16n16k16.f32.f16"
    assert isa.lookup("sm_80/wmma.mma.and.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32").name \
        == "sm80/wmma.mma.and.popc.m8n8k128.s32.b1.b1.s32"


# (wmma form, the mma-level instruction it is a K-chained sequence of) -- written from the seeds
# ([Raihan2019] sec. IV-C Volta HMMA.884 sets; [Sun2023] Turing HMMA.1688; [Abdelkhalik2022] Table III Ampere)
COMPOSE = [
    ("sm70/wmma.mma.m16n16k16.f32.f32", "sm70/mma.m8n8k4.f32.f16.f16.f32"),
    ("sm70/wmma.mma.m16n16k16.f16.f16", "sm70/mma.m8n8k4.f16.f16.f16.f16"),
    ("sm75/wmma.mma.m32n8k16.f32.f32", "sm75/mma.m16n8k8.f32.f16.f16.f32"),
    ("sm80/wmma.mma.m8n32k16.f32.f32", "sm80/mma.m16n8k16.f32.f16.f16.f32"),
    ("sm90/wmma.mma.m16n16k16.f16.f16", "sm90/mma.m16n8k16.f16.f16.f16.f16"),
    ("sm80/wmma.mma.m16n16k16.f32.bf16.bf16.f32", "sm80/mma.m16n8k16.f32.bf16.bf16.f32"),
    ("sm90/wmma.mma.m16n16k8.f32.tf32.tf32.f32", "sm90/mma.m16n8k4.f32.tf32.tf32.f32"),
    ("sm90/wmma.mma.m8n8k4.f64.f64.f64.f64", "sm90/mma.m8n8k4.f64.f64.f64.f64"),
    ("sm90/wmma.mma.m16n16k16.s32.u8.u8.s32.satfinite", "sm90/mma.m16n8k16.satfinite.s32.u8.u8.s32"),
]


@pytest.mark.parametrize("wname,sub", COMPOSE)
def test_wmma_is_its_mma_sequence(wname, sub):
    w, s = isa.lookup(wname), isa.lookup(sub)
    rng = np.random.default_rng(sum(map(ord, wname)))
    for klass in ("normal", "dnn", "cancel", "special"):
        a, _, c = generate(klass, w.a, w.b, w.c, w.k, w.m, rng)
        _, b, _ = generate(klass, w.a, w.b, w.c, w.k, w.n, rng)
        C = np.resize(c, (w.m, w.n))
        B = b.T.copy()
        D = simulate(w, a, B, C)
        E = matmul(a, B, C, s, backend="numpy")        # K walked in k-steps of the sub-instruction
        assert np.array_equal(D, E), (wname, klass)


def test_sm90_tf32_rival_differs():
    """The two readings of sm90 wmma tf32 (k = 4 steps as on Ampere, or one k = 8 fused sum)
    are separated by a replayed witness."""
    from mmaformal.query import distinguish as D
    I = "sm90/wmma.mma.m16n16k8.f32.tf32.tf32.f32"
    st, found, *_ = D.search(D.build(D.resolve(f"wmma.sm90.tf32.f32.l4@{I}"),
                                     D.resolve(f"wmma.sm90.tf32.f32@{I}"), []), 1, "bitwuzla", 60)
    assert st == "distinguished"


@pytest.mark.parametrize("name", ["sm75/wmma.mma.m16n16k16.s32.s8.s8.s32.satfinite",
                                  "sm90/wmma.mma.m32n8k16.s32.u8.u8.s32",
                                  "sm80/wmma.mma.m8n8k32.s32.s4.s4.s32.satfinite",
                                  "sm80/wmma.mma.and.popc.m8n8k128.s32.b1.b1.s32"])
def test_wmma_integer_oracle(name):
    ins = isa.lookup(name)
    rng = np.random.default_rng(4)
    k = {"s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1}[ins.a]
    A = rng.integers(0, 1 << k, (2, ins.m, ins.k), dtype=np.uint8)
    B = rng.integers(0, 1 << k, (2, ins.k, ins.n), dtype=np.uint8)
    C = rng.integers(0, 1 << 32, (2, ins.m, ins.n), dtype=np.uint64).astype(np.uint32)
    C[0, 0, :] = 0x7FFFFFFF
    C[0, 1, :] = 0x80000000
    D = simulate(ins, A, B, C)
    for t in range(2):
        for i in range(ins.m):
            for j in range(ins.n):
                assert int(D[t, i, j]) == O.dot([int(x) for x in A[t, i]],
                                                [int(y) for y in B[t, :, j]], int(C[t, i, j]),
                                                ins.a, ins.b, ins.satfinite, ins.bop)


# the k of one SASS instruction of each wmma form (the rule of theories/wmma.toml's header)
def _ksub(ins):
    if ins.a == "f16":
        return {"sm70": 4, "sm75": 8}.get(ins.arch, 16)
    return {"bf16": 16, "tf32": 4}.get(ins.a)


def _base(ins, acc=""):
    a, arch, d = ins.a, ins.arch, acc or ins.d   # acc: the format a theory accumulates in
    sat = ".satfinite" if ins.satfinite else ""
    if a == "f16":
        sh = {"sm70": "m8n8k4", "sm75": "m16n8k8"}.get(arch, "m16n8k16")
        return f"{arch}/mma.{sh}.{d}.f16.f16.{d}"
    if a == "bf16":
        return f"{arch}/mma.m16n8k16.f32.bf16.bf16.f32"
    if a == "tf32":
        return f"{arch}/mma.m16n8k8.f32.tf32.tf32.f32"
    if a == "f64":
        return f"{arch}/mma.m8n8k4.f64.f64.f64.f64"
    if a in ("s8", "u8"):
        return f"{arch}/mma.{'m8n8k16' if arch == 'sm75' else 'm16n8k16'}{sat}.s32.{a}.{a}.s32"
    if a in ("s4", "u4"):
        return f"{arch}/mma.m8n8k32{sat}.s32.{a}.{a}.s32"
    return f"{arch}/mma.m8n8k128.s32.b1.b1.s32.{ins.bop}.popc"


def test_wmma_theories_borrow_the_mma_level_arithmetic():
    ts = T.default()
    cat = isa.catalog()
    for ins in cat.values():
        if ins.family != "wmma":
            continue
        t = ts.resolve(ins)
        # sm90's mixed-precision f16 forms run the f32 HMMA chain (SASS HADD2.F32 / F2FP;
        # H100 campaigns 2026-11-25): their theories name accumulator = "f32"
        assert bool(t.accumulator) == (ins.arch == "sm90" and ins.c != ins.d), ins.name
        base = ts.resolve(_base(ins, t.accumulator))
        assert (t.model, t.op, t.params, t.convert, t.k_order, t.accumulate) == \
            (base.model, base.op, base.params, base.convert, base.k_order, base.accumulate), ins.name
        ks = _ksub(ins)
        want = base.L if base.L is None or ks is None else min(base.L, ks)
        assert t.L == want, (ins.name, t.L, want)


def test_wmma_verbs(capsys, tmp_path):
    assert main(["compare", "--a=1,2,3", "--b=0.5,0.25,0.125", "--c=1", "--json",
                 "sm70/wmma.mma.m16n16k16.f32.f32", "sm90/wmma.mma.m16n16k16.f32.f32"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["value"] for r in out] == ["2.375", "2.375"]
    assert main(["explain", "sm70/wmma.mma.m16n16k16.f32.f32", "--a=1,2,3,4,5", "--b=1,1,1,1,1",
                 "--c=0", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [s["step"] for s in rep["steps"]].count("block") == 4      # 4 sets of HMMA.884
    assert rep["output"]["value"] == "15"
    from mmaformal.query import probes as P
    m = P.write("sm90/wmma.mma.m16n16k8.f32.tf32.tf32.f32", tmp_path)
    assert "wmma.sm90.tf32.f32@sm90/wmma.mma.m16n16k8.f32.tf32.tf32.f32" in m["features"]["order"]["rivals"]
