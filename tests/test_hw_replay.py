"""Replay the recorded hardware observations (counterexamples/hw/) on the simulator, no GPU.

For every instruction of the H200 campaign: the sample of hardware outputs (every input class)
must be reproduced bit for bit by the instruction's primary theory when that theory is
corroborated; for a refuted theory, the stored hardware counterexamples must still disagree
with it (the refutation stands). The zero-exponent probe scan must give the recorded outputs.
"""
import json
from pathlib import Path

import numpy as np
import pytest

from mmaformal import fp, isa, paths, theory
from mmaformal.simulate import simulate

ROOT = paths.shipped("counterexamples") / "hw"     # the checkout's, or the installed package's
CAMPAIGN = ROOT / "2026-11-21-h200"
#: every campaign folder (one per device session); a record names its instruction and theory
CAMPAIGNS = sorted(p.parent for p in ROOT.glob("*/summary.json"))
RECORDS = sorted(p for d in CAMPAIGNS for p in d.glob("*.json") if p.name != "summary.json")
DT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def test_campaign_recorded():
    assert len(RECORDS) >= 25
    summary = json.loads((CAMPAIGN / "summary.json").read_text())
    assert all(r["tests"] >= 10_000_000 for r in summary)


def test_every_sm90_instruction_corroborated():
    """Issue 5: every instruction of the sm90 preset has a recorded campaign of >= 10^7 dot
    products with 0 mismatches against the theory that is now its corroborated primary."""
    from mmaformal.hw.validate import PRESETS
    clean = {}
    for rec in RECORDS:
        r = json.loads(rec.read_text())
        if r["tests"] >= 10_000_000 and r["mismatches"] == 0:
            clean.setdefault(r["instruction"], set()).add(r["theory"])
    for name in PRESETS["sm90"]:
        th = theory.resolve(name)
        assert th.status == "corroborated", f"{name}: {th.id} is {th.status}"
        assert th.id in clean.get(name, ()), f"{name}: no clean 10^7 campaign of {th.id}"


@pytest.mark.parametrize("rec", RECORDS, ids=lambda p: p.stem)
def test_replay(rec):
    r = json.loads(rec.read_text())
    name = r["instruction"]
    th = theory.resolve(name)
    z = np.load(rec.with_suffix(".npz"))
    classes = sorted({k.rsplit(".", 1)[0] for k in z.files})
    mism = 0
    for k in classes:
        d = simulate(name, z[k + ".a"], z[k + ".b"], z[k + ".c"])
        mism += int((d != z[k + ".d"]).sum())
    ins = isa.lookup(name)
    cex_bad = 0
    for cx in r["counterexamples"]:
        A = np.zeros((1, ins.m, ins.k), DT[fp.fmt(ins.a).storage])
        B = np.zeros((1, ins.k, ins.n), DT[fp.fmt(ins.b).storage])
        C = np.zeros((1, ins.m, ins.n), DT[fp.fmt(ins.c).storage])
        A[0, 0] = [int(x, 16) for x in cx["a"]]
        B[0, :, 0] = [int(x, 16) for x in cx["b"]]
        C[0, 0, 0] = int(cx["c"], 16)
        cex_bad += int(simulate(name, A, B, C)[0, 0, 0]) != int(cx["hardware"], 16)
    if th.status == "corroborated":
        assert mism == 0 and cex_bad == 0, f"{name}: {th.id} no longer reproduces the H200"
    else:
        assert th.status == "refuted"
        assert mism + cex_bad > 0, f"{name}: {th.id} is marked refuted but fits every record"


def test_zero_exponent_probes():
    z = np.load(ROOT / "zero-exp-probes.npz")
    hw = json.loads((ROOT / "zero-exp-probes-hw-2026-11-21-h200.json").read_text())
    for name, outs in hw.items():
        d = simulate(name, z[name + "|a"], z[name + "|b"], z[name + "|c"])[:, 0, 0]
        assert [hex(int(x)) for x in d] == outs, name
    # and the rival exponents predict other outputs (the probes separate them)
    name = "sm90/mma.m16n8k16.f32.bf16.bf16.f32"
    base = theory.resolve(name)
    for other in ("excluded", -132, -134):
        t = base.replace(zero_exp=other, id="probe.rival")
        d = simulate(name, z[name + "|a"], z[name + "|b"], z[name + "|c"], theory=t)[:, 0, 0]
        assert [hex(int(x)) for x in d] != hw[name], other
