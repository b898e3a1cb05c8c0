"""Replay the recorded hardware observations (counterexamples/hw/) on the simulator, no GPU.

For every instruction of the campaigns with a summary.json (the H200 ones and the first H100
one): the sample of hardware outputs (every input class) must be reproduced bit for bit by the
instruction's primary theory when that theory is corroborated; for a refuted theory, the stored
hardware counterexamples must still disagree with it (the refutation stands). The default run
replays the curated records (tests/hw_records.py: the smallest and largest shape of each
family), `-m slow` every one. The zero-exponent probe scan must give the recorded outputs.
Records are read through mmaformal.hw.campaigns (packs or loose folders).
"""
import json

import numpy as np
import pytest

import hw_records
from mmaformal import fp, isa, theory
from mmaformal.simulate import simulate

ROOT = hw_records.HW                               # the checkout's, or the installed package's
CAMPAIGN = hw_records.campaign("2026-11-21-h200")
#: every campaign with a summary.json; a record names its instruction and theory
CAMPAIGNS = [c for c in hw_records.every() if "summary.json" in c]
RECORDS = [r for c in CAMPAIGNS for r in c.records() if r.name != "summary.json"]
DT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def test_campaign_recorded():
    assert len(RECORDS) >= 25
    summary = CAMPAIGN.json("summary.json")
    assert all(r["tests"] >= 10_000_000 for r in summary)


def test_every_sm90_instruction_corroborated():
    """Issue 5: every instruction of the sm90 preset has a recorded campaign of >= 10^7 dot
    products with 0 mismatches against the theory that is now its corroborated primary."""
    from mmaformal.hw.validate import PRESETS
    clean = {}
    for rec in RECORDS:
        r = rec.data
        if r["tests"] >= 10_000_000 and r["mismatches"] == 0:
            clean.setdefault(r["instruction"], set()).add(r["theory"])
    # issue 14: f16 mma.m8n8k4, integer mma and integer wgmma (H100, 2026-11-24) as well
    for name in PRESETS["sm90"] + PRESETS["sm90-m8n8k4"] + PRESETS["sm90-int"]:
        th = theory.resolve(name)
        assert th.status == "corroborated", f"{name}: {th.id} is {th.status}"
        assert th.id in clean.get(name, ()), f"{name}: no clean 10^7 campaign of {th.id}"


@pytest.mark.parametrize("rec", hw_records.params(RECORDS))
def test_replay(rec):
    r = rec.data
    name = r["instruction"]
    th = theory.resolve(name)
    z = rec.arrays()
    classes = sorted({k.rsplit(".", 1)[0] for k in z})
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
    # a rival counted in the campaign: its stored counterexamples still refute it
    for tid, rv in r.get("rivals", {}).items():
        if not rv["counterexamples"]:
            continue
        bad = 0
        for cx in rv["counterexamples"]:
            A = np.zeros((1, ins.m, ins.k), DT[fp.fmt(ins.a).storage])
            B = np.zeros((1, ins.k, ins.n), DT[fp.fmt(ins.b).storage])
            C = np.zeros((1, ins.m, ins.n), DT[fp.fmt(ins.c).storage])
            A[0, 0] = [int(x, 16) for x in cx["a"]]
            B[0, :, 0] = [int(x, 16) for x in cx["b"]]
            C[0, 0, 0] = int(cx["c"], 16)
            bad += int(simulate(name, A, B, C, theory=tid)[0, 0, 0]) != int(cx["hardware"], 16)
        assert bad > 0 and theory.default().get(tid).status == "refuted", (name, tid)
    if th.status == "corroborated":
        assert mism == 0 and cex_bad == 0, f"{name}: {th.id} no longer reproduces the hardware"
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


SPARSE = hw_records.campaign("2026-11-24-h100-issue14-sparse")
SPARSE_RECORDS = SPARSE.records("sm90_*.json")


@pytest.mark.parametrize("rec", hw_records.params(SPARSE_RECORDS))
def test_sparse_digest_record(rec):
    """Digest-recorded mma.sp campaigns (H100, 2026-11-24): the kept hardware tiles are
    reproduced by the primary theory ("selected": only the K/2 kept products are summed) and,
    for floating-point forms, refute the rival ("dense": all K with zeros)."""
    from mmaformal.hw import record
    r = rec.data
    name = r["instruction"]
    assert r["tests"] >= 10_000_000 and len(r["classes"]) == 10
    assert all(len(v["sha256"]) == 64 for v in r["classes"].values())
    z = rec.arrays()
    th = theory.resolve(name)
    rivals = [t for t in th.competes_with if record._safe_claims(theory, t, name)]

    def mism(tid):
        fn = record.theory_fn(name, tid)
        n = 0
        for k in sorted({x.rsplit(".", 1)[0] for x in z}):
            A = z[k + ".a"]
            meta = np.ascontiguousarray(np.broadcast_to(z[k + ".meta"][:, None, :], A.shape))
            n += int((fn(A, meta, z[k + ".b"], z[k + ".c"]) != z[k + ".d"]).sum())
        return n

    assert mism(th.id) == 0, f"{name}: {th.id} does not reproduce the H100 tiles"
    for tid in rivals:
        assert mism(tid) > 0, f"{name}: rival {tid} fits every kept tile"


def test_sparse_dropped_positions_probe():
    """Inf or NaN in the B rows that the metadata drops never reach D (H100): the hardware
    multiplies only the K/2 selected rows, as the primary sparse theories say."""
    hw = json.loads((ROOT / "sparse-dropped-probe-2026-11-24-h100.json").read_text())
    assert len(hw) == 24
    for name, r in hw.items():
        k_half = int(r["want_if_selected_only"].split("=")[1].split()[0])
        out = fp.fmt(isa.lookup(name).d)
        for key in ("dropped_b_nan", "dropped_b_inf"):
            if key in r:
                (bits,) = r[key]
                assert int(bits, 16) == int(np.float64(k_half).astype(
                    np.float16 if out.name == "f16" else np.float32).view(
                    np.uint16 if out.name == "f16" else np.uint32)), (name, key)


def test_sparse_digest_verdicts_current():
    """The full 10^7 digest replays (digest-replay.json) were made with today's primary theory:
    a changed theory makes the verdict stale and this test fails until it is replayed again
    (mmaformal hw record --replay ... --primary-only)."""
    v = SPARSE.json("digest-replay.json")["verdicts"]
    names = {r.data["instruction"] for r in SPARSE_RECORDS}
    assert set(v) <= names and len(v) >= 55
    for name, r in v.items():
        th = theory.resolve(name)
        assert r["theory"] == th.id and r["theory_hash"] == th.hash(), name
        assert r["all_equal"] and len(r["classes_equal"]) == 10, name
