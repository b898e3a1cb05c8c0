"""The wmma harness (CUDA C++ WMMA API kernels) without a GPU: names, tables, generated source,
the runner and validate.campaign on the emulated GPU of tests/test_hw_emulated.py, and (when
nvcc is here) every kernel compiled for sm_90a, its PTX issuing exactly the catalog form.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from mmaformal import isa
from mmaformal.hw import check, forms, kernels, layouts, validate

from test_hw_emulated import fake_gpu  # noqa: F401  (fixture)

WMMA = forms.instructions(None, "sm90", family="wmma")


def test_every_sm90_wmma_catalog_form_is_covered():
    cat = sorted(i.name for i in isa.instructions() if i.arch == "sm90" and i.family == "wmma")
    assert cat == sorted(WMMA) and len(cat) == 35


@pytest.mark.parametrize("name", WMMA)
def test_spec_matches_catalog(name):
    s, ins = forms.spec(name), isa.lookup(name)
    assert (s.family, s.m, s.n, s.k) == ("wmma", ins.m, ins.n, ins.k)
    assert (s.atype, s.btype, s.ctype, s.dtype) == (ins.a, ins.b, ins.c, ins.d)
    assert (s.sat, s.bop) == (ins.satfinite, ins.bop)


def test_tables_are_plain_matrices():
    s = forms.spec("sm90/wmma.mma.m32n8k16.f32.f16")
    t = layouts.operand_tables(s.name)
    assert (t["a"] == np.arange(32 * 16)).all() and (t["d"] == np.arange(32 * 8)).all()
    # B col_major: image position n * K + k holds B[k, n]
    B = np.arange(16 * 8).reshape(16, 8)
    assert (B.reshape(-1)[t["b"]].reshape(8, 16) == B.T).all()


def test_bad_wmma_name_is_one_line_error():
    with pytest.raises(ValueError, match="unknown instruction"):
        forms.spec("sm90/wmma.mma.m16n16k16.f64.f64")


@pytest.mark.parametrize("name", ["sm90/wmma.mma.m16n16k16.f16.f32",
                                  "sm90/wmma.mma.m8n32k16.s32.u8.u8.s32.satfinite",
                                  "sm90/wmma.mma.m8n8k32.s32.s4.s4.s32",
                                  "sm90/wmma.mma.xor.popc.m8n8k128.s32.b1.b1.s32",
                                  "sm90/wmma.mma.and.popc.m8n8k128.s32.b1.b1.s32",
                                  "sm90/wmma.mma.m8n8k4.f64.f64.f64.f64",
                                  "sm90/wmma.mma.m16n16k8.f32.tf32.tf32.f32"])
def test_selfcheck_on_emulated_gpu(fake_gpu, name):  # noqa: F811
    ok, msg = check.layout_selfcheck(name, tiles=8)
    assert ok, msg


def test_selfcheck_catches_a_broken_layout(fake_gpu):  # noqa: F811
    fake_gpu["broken"] = True
    ok, _ = check.layout_selfcheck("sm90/wmma.mma.m16n16k16.s32.s8.s8.s32", tiles=8)
    assert not ok


def test_campaign_on_emulated_gpu(fake_gpu, tmp_path):  # noqa: F811
    # the emulator rounds once (numpy), so an integer form must agree exactly everywhere
    name = "sm90/wmma.mma.m16n16k16.s32.s8.s8.s32.satfinite"
    r = validate.campaign(name, 20_000, seed=3, out_dir=tmp_path, workers=1, fast_c=True)
    assert r["tests"] >= 20_000 and r["mismatches"] == 0
    assert r["theory"] == "wmma.sm90.int"
    z = np.load(tmp_path / (name.replace("/", "_") + ".npz"))
    assert z["overflow.a"].shape[1:] == (16, 16) and z["overflow.d"].dtype == np.uint32


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not here")
@pytest.mark.parametrize("name", WMMA[::4] + ["sm90/wmma.mma.and.popc.m8n8k128.s32.b1.b1.s32"])
def test_kernel_compiles_and_issues_the_form(name, tmp_path):
    cu = tmp_path / "k.cu"
    cu.write_text(kernels.source(name))
    r = subprocess.run(["nvcc", "-ptx", forms.TARGETS["sm90"].nvcc_flag, "-o", str(tmp_path / "k.ptx"), str(cu)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ops = re.findall(r"^\s*(wmma\.mma\S*)", (tmp_path / "k.ptx").read_text(), re.M)
    assert ops == [forms.spec(name).ptx]


# ---------------------------------------------------------------------------------------------
# The H100 records (counterexamples/hw/2026-11-25-h100-wmma/), replayed without a GPU
# ---------------------------------------------------------------------------------------------

import hw_records  # noqa: E402
from mmaformal import theory  # noqa: E402
from mmaformal.simulate import simulate  # noqa: E402

WMMA_DIR = hw_records.campaign("2026-11-25-h100-wmma")
WMMA_RECORDS = WMMA_DIR.records("sm90_*.json")
REFUTED_RECORDS = WMMA_DIR.records("refuted-seed14/sm90_*.json")


#: theories whose mixed-precision forms were split off (with the same arithmetic) into a
#: refuted twin after the seed-14 campaign: their hash (which covers the form list) changed
_SPLIT = {"wmma.sm90.f16.f16": "wmma.sm90.f16.f16.c32", "wmma.sm90.f16.f32": "wmma.sm90.f16.f32.c16"}


def _one(name, cx, tid):
    """One recorded dot product (row 0, column 0 of a tile) through simulate."""
    ins = isa.lookup(name)
    sto = {r: forms.spec(name).storage(r) for r in "abc"}
    A = np.zeros((1, ins.m, ins.k), sto["a"])
    A[0, 0] = [int(x, 16) for x in cx["a"]]
    B = np.zeros((1, ins.k, ins.n), sto["b"])
    B[0, :, 0] = [int(x, 16) for x in cx["b"]]
    C = np.zeros((1, ins.m, ins.n), sto["c"])
    C[0, 0, 0] = int(cx["c"], 16)
    return int(simulate(name, A, B, C, theory=tid)[0, 0, 0])


def test_every_sm90_wmma_form_has_one_clean_record():
    recs = [p.data for p in WMMA_RECORDS]
    assert sorted(r["instruction"] for r in recs) == sorted(WMMA)
    for r in recs:
        th = theory.resolve(r["instruction"])
        assert r["theory"] == th.id and th.status == "corroborated", r["instruction"]
        assert r["tests"] >= 10_000_000 and r["mismatches"] == 0, r["instruction"]
        assert len(r["classes"]) == 10 and sum(c["tests"] for c in r["classes"].values()) \
            == r["tests"] and r["device"]["device"] == "NVIDIA H100 80GB HBM3"
        assert "all exact = A*B + C" in r["layout_selfcheck"], r["layout_selfcheck"]


@pytest.mark.parametrize("rec", hw_records.params(WMMA_RECORDS))
def test_record_replays(rec):
    """Each class's recorded tiles (inputs and H100 outputs) are reproduced bit for bit by the
    form's primary theory; a refuted rival's counterexample still fails it."""
    r = rec.data
    name = r["instruction"]
    th = theory.resolve(name)
    if r["theory_hash"] != th.hash():  # only the instruction lists of these two changed
        twin = theory.default().get(_SPLIT[th.id])  # (mixed forms split off after seed 14)
        assert (twin.params, twin.op, twin.L) == (th.params, th.op, th.L), th.id
    z = rec.arrays()
    for k in r["classes"]:
        A, B, C, D = (z[f"{k}.{x}"] for x in "abcd")
        assert (simulate(name, A, B, C) == D).all(), (name, k)
    for tid, rv in r["rivals"].items():
        assert theory.default().get(tid).status == "refuted" and rv["mismatches"] > 0
        cx = rv["counterexamples"][0]
        assert _one(name, cx, tid) != int(cx["hardware"], 16) == _one(name, cx, None)


@pytest.mark.parametrize("rec", hw_records.params(REFUTED_RECORDS))
def test_first_campaign_refutes_the_first_hypotheses(rec):
    """The seed-14 records of the six mixed-precision f16 forms: their theory mismatched (kept,
    split off for these forms, as the refuted rival that gives each recorded 'simulated'
    value); today's primary reproduces their samples and every recorded counterexample."""
    r = rec.data
    name = r["instruction"]
    (rival,) = theory.resolve(name).competes_with
    assert theory.default().get(rival).status == "refuted" and r["mismatches"] > 300_000
    z = rec.arrays()
    for k in r["classes"]:
        A, B, C, D = (z[f"{k}.{x}"] for x in "abcd")
        assert (simulate(name, A, B, C) == D).all(), (name, k)
    for cx in r["counterexamples"]:
        assert _one(name, cx, None) == int(cx["hardware"], 16)
        assert _one(name, cx, rival) == int(cx["simulated"], 16) != int(cx["hardware"], 16)


def test_accumulator_theories_against_a_numpy_oracle():
    """The mixed-precision f16 forms (theory key accumulator = "f32"): D f16 is the f32 form's
    result rounded RNE by numpy; D f32 from C f16 is the f32 form on numpy's exact f16 -> f32
    C. The refuted first hypotheses (no accumulator) differ on some of the same inputs."""
    rng = np.random.default_rng(7)
    # small products (about 2^-16) beside subnormal f16 C: where the first hypotheses erred
    A = (rng.standard_normal((64, 16, 16)) / 256).astype(np.float16).view(np.uint16)
    B = (rng.standard_normal((64, 16, 16)) / 256).astype(np.float16).view(np.uint16)
    C32 = (rng.standard_normal((64, 16, 16)) * 4).astype(np.float32).view(np.uint32)
    C16 = (rng.standard_normal((64, 16, 16)) * 2.0 ** -15).astype(np.float16).view(np.uint16)
    ref = "sm90/wmma.mma.m16n16k16.f32.f32"
    d16 = simulate("sm90/wmma.mma.m16n16k16.f16.f32", A, B, C32)
    want = simulate(ref, A, B, C32).view(np.float32).astype(np.float16).view(np.uint16)
    assert (d16 == want).all()
    d32 = simulate("sm90/wmma.mma.m16n16k16.f32.f16", A, B, C16)
    assert (d32 == simulate(ref, A, B, C16.view(np.float16).astype(np.float32)
                            .view(np.uint32))).all()
    assert (simulate("sm90/wmma.mma.m16n16k16.f16.f32", A, B, C32,
                     theory="wmma.sm90.f16.f16.c32") != d16).any()
    assert (simulate("sm90/wmma.mma.m16n16k16.f32.f16", A, B, C16,
                     theory="wmma.sm90.f16.f32.c16") != d32).any()
