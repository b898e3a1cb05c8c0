"""Replay the dense sm90 batch of the H100 (2026-11-25), no GPU.

The 499 dense sm90 forms that had no clean campaign (372 wgmma, 112 integer wgmma, 15 mma) ran
in two device calls of ``mmaformal hw wgmma-sp --names FILE`` (validate-style
records): the campaigns 2026-11-25-h100-dense (484 wgmma forms; the 15 mma forms of that call
failed in the harness and wrote no record) and 2026-11-25-h100-dense-mma (the 15 mma forms),
packs in counterexamples/hw/ read through mmaformal.hw.campaigns. Checked here: each form has
exactly one clean record over the two campaigns and its primary theory is corroborated; the
batch files agree with the records; the kept hardware samples are reproduced by the primary
theory (by default the curated records of tests/hw_records.py, `-m slow` the others); the
rivals with stored counterexamples are refuted and their counterexamples still refute them;
the theories' provenance states the totals.
"""
from __future__ import annotations

import collections
import json
import re

import numpy as np
import pytest

import hw_records
from mmaformal import fp, isa, theory
from mmaformal.hw import campaigns, validate
from mmaformal.simulate import simulate

DENSE, MMA = (hw_records.campaign(n)
              for n in ("2026-11-25-h100-dense", "2026-11-25-h100-dense-mma"))
FOLDERS = [DENSE, MMA]
RECORDS = [r for d in FOLDERS for r in d.records("sm90_*.json")]
DT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _load(r):
    return r.data


def coverage(folders) -> dict[str, list[str]]:
    """Problems per form: a form recorded more than once over the campaigns, or a record that is
    not a clean >= 10^7-dot run of the form's primary theory over the ten input classes."""
    recs = collections.defaultdict(list)
    for d in folders:
        for p in d.records("sm90_*.json"):
            recs[_load(p)["instruction"]].append((d.name, _load(p)))
    bad = {}
    for name, rs in recs.items():
        why = [] if len(rs) == 1 else [f"{len(rs)} records"]
        th = theory.resolve(name)
        for b, r in rs:
            cls = r["classes"]
            if r["theory"] != th.id or th.status != "corroborated":
                why.append(f"{b}: theory {r['theory']}, primary {th.id} ({th.status})")
            if r["tests"] < 10_000_000 or r["mismatches"] != 0:
                why.append(f"{b}: {r['tests']} dots, {r['mismatches']} mismatches")
            if not r["layout_selfcheck"].endswith("all exact = A*B + C"):
                why.append(f"{b}: layout self-check {r['layout_selfcheck']!r}")
            if len(cls) != 10 or sum(c["tests"] for c in cls.values()) != r["tests"] \
                    or any(c["mismatches"] for c in cls.values()):
                why.append(f"{b}: classes do not add up to a clean run")
        if why:
            bad[name] = why
    return bad


def test_every_form_of_the_batch_has_one_clean_record():
    names = {d.name: {_load(p)["instruction"] for p in d.records("sm90_*.json")} for d in FOLDERS}
    dense, mma = names[DENSE.name], names[MMA.name]
    assert len(dense) == 484 and len(mma) == 15 and not dense & mma
    assert sum(isa.lookup(n).integer for n in dense) == 112
    assert all(n.startswith("sm90/wgmma.m64n") for n in dense)
    assert all(n.startswith("sm90/mma.m16n8k") for n in mma)
    bad = coverage(FOLDERS)
    assert not bad, list(bad.items())[:5]
    # no other folder holds a campaign of these forms: they are the ones that had none
    others = {_load(p).get("instruction") for c in hw_records.every()
              if c.name not in (DENSE.name, MMA.name) for p in c.records("sm90_*.json")
              if "tests" in _load(p)}
    assert not (dense | mma) & others


def _loose(tmp_path):
    """Loose copies of both campaigns (records only) and a function that reopens them."""
    dirs = [d.extract(tmp_path / d.name, arrays=False) for d in FOLDERS]
    return dirs, lambda: [campaigns.open_campaign(d) for d in dirs]


def test_coverage_finds_a_dirty_or_doubled_record(tmp_path):
    import shutil
    dirs, opened = _loose(tmp_path)
    assert not coverage(opened())
    rec = next(dirs[1].glob("sm90_mma.*.json"))
    r = json.loads(rec.read_text())
    r["classes"]["special"]["mismatches"] = 1
    rec.write_text(json.dumps(r))
    assert list(coverage(opened())) == [r["instruction"]]
    r["classes"]["special"]["mismatches"] = 0
    rec.write_text(json.dumps(r))
    shutil.copy(rec, dirs[0] / rec.name)             # the same form in both folders
    assert coverage(opened())[r["instruction"]] == ["2 records"]


def test_batch_files_agree_with_the_records():
    """batch-summary.json and wgmma-sp-batch.json give each record's result; the first call's
    15 mma entries are harness errors (IndexError) that wrote no record, the second call ran
    those 15 cleanly."""
    for d, compiled in ((DENSE, 499), (MMA, 15)):
        b = d.json("wgmma-sp-batch.json")
        assert b["device"]["device"] == "NVIDIA H100 80GB HBM3" and b["device"]["cc"] == "9.0"
        assert b["compiled"] == compiled and not b["compile_errors"]
        recs = {_load(p)["instruction"]: _load(p) for p in d.records("sm90_*.json")}
        summary = d.json("batch-summary.json")
        assert len(summary) == len(recs)
        ok = [e for e in b["results"] if "error" not in e]
        for e in summary + ok:
            r = recs[e["instruction"]]
            assert (e["tests"], e["mismatches"], e["theory"]) == \
                (r["tests"], r["mismatches"], r["theory"]), e
            assert {k: v[0] for k, v in e["rivals"].items()} == \
                {k: v["mismatches"] for k, v in r["rivals"].items()}, e
        assert len(ok) == len(recs)
        errs = {e["instruction"] for e in b["results"] if "error" in e}
        if d is DENSE:
            assert errs == {_load(p)["instruction"] for p in MMA.records("sm90_*.json")}
            assert not errs & set(recs)
        else:
            assert not errs


def _one(name, cx, tid):
    """One recorded dot product (row 0, column 0 of a tile) through simulate."""
    ins = isa.lookup(name)
    A = np.zeros((1, ins.m, ins.k), DT[fp.fmt(ins.a).storage])
    B = np.zeros((1, ins.k, ins.n), DT[fp.fmt(ins.b).storage])
    C = np.zeros((1, ins.m, ins.n), DT[fp.fmt(ins.c).storage])
    A[0, 0] = [int(x, 16) for x in cx["a"]]
    B[0, :, 0] = [int(x, 16) for x in cx["b"]]
    C[0, 0, 0] = int(cx["c"], 16)
    return int(simulate(name, A, B, C, theory=tid)[0, 0, 0])


@pytest.mark.parametrize("rec", hw_records.params(RECORDS))
def test_record_replays(rec):
    """Every class's kept hardware outputs (wgmma: an 8 x 8 block of tile 0; mma: whole tiles)
    are reproduced by the primary theory, and the first stored counterexample of each rival
    still refutes it (the primary gives the hardware's bits there)."""
    r = _load(rec)
    name = r["instruction"]
    th = theory.resolve(name)
    assert r["theory"] == th.id and th.status == "corroborated"
    z = rec.arrays()
    classes = sorted({k.rsplit(".", 1)[0] for k in z})
    assert len(classes) == 10
    bad = 0
    for k in classes:
        if z[k + ".a"].ndim == 3:                      # whole tiles (mma)
            sim = simulate(name, z[k + ".a"], z[k + ".b"], z[k + ".c"])
            hw = z[k + ".d"]
        else:                                          # a block of tile 0 (wgmma)
            sim, hw = validate.replay_sample(name, z, k)
        assert sim.shape == hw.shape and hw.size >= 64
        bad += int((sim != hw).sum())
    assert bad == 0, f"{name}: {th.id} no longer reproduces the H100 sample"
    _rival_counterexamples(r, 1)


def _rival_counterexamples(r, first=None):
    name = r["instruction"]
    for tid, rv in r["rivals"].items():
        if rv["counterexamples"]:
            assert theory.default().get(tid).status == "refuted", (name, tid)
        for cx in rv["counterexamples"][:first]:
            assert _one(name, cx, tid) != int(cx["hardware"], 16), (name, tid)
            assert _one(name, cx, None) == int(cx["hardware"], 16), (name, tid)


@pytest.mark.slow
def test_every_rival_counterexample_of_the_batch_still_refutes():
    for rec in RECORDS:
        _rival_counterexamples(_load(rec))


def _totals():
    per = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    rivals = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0, 0]))
    for d in FOLDERS:
        for p in d.records("sm90_*.json"):
            r = _load(p)
            per[r["theory"]][d.name][0] += 1
            per[r["theory"]][d.name][1] += r["tests"]
            for k, v in r["rivals"].items():
                x = rivals[k][d.name]
                x[0] += v["mismatches"]
                x[1] += v["tests"]
                x[2] += 1
    return per, rivals


def _clean_anywhere() -> set[str]:
    out = set()
    for p in (p for c in hw_records.every() for p in c.records("sm90_*.json")):
        r = _load(p)
        if r.get("tests", 0) >= 10_000_000 and r.get("mismatches") == 0 \
                and r.get("theory") == theory.resolve(r["instruction"]).id:
            out.add(r["instruction"])
    return out


def test_provenance_states_the_records_totals():
    """The primaries' provenance gives, per folder, the forms and dot products summed here from
    the records, and (once every sm90 form of the theory has a clean record) says so."""
    per, _ = _totals()
    assert len(per) == 11
    clean = _clean_anywhere()
    forms = collections.defaultdict(list)
    for n, i in isa.catalog().items():
        if i.arch == "sm90" and not i.sparse:
            forms[theory.resolve(n).id].append(n)
    db = theory.default()
    for tid, ds in per.items():
        prov = db.get(tid).provenance
        assert db.get(tid).status == "corroborated", tid
        for d, (n, dots) in ds.items():
            pat = (rf"counterexamples/hw/{d}/: {n} forms? \([^)]*\), each >= 10\^7 dot "
                   rf"products over the ten input classes, {dots:,} in all, 0 mismatches")
            assert re.search(pat, prov), (tid, d, n, f"{dots:,}", prov)
        assert all(f in clean for f in forms[tid]), tid
        assert f"all {len(forms[tid])} of its sm90 forms have a clean >= 10^7 campaign" in prov


def test_rivals_with_counterexamples_are_refuted_with_the_figures():
    """A rival that the batch's hardware outputs contradict is refuted, and its provenance gives
    the mismatch count of each folder as summed here from the records."""
    _, rivals = _totals()
    db = theory.default()
    for tid, ds in rivals.items():
        if not any(m for m, _, _ in ds.values()):
            continue
        t = db.get(tid)
        assert t.status == "refuted", tid
        for d, (m, n, k) in ds.items():
            if m:
                s = "s" if k > 1 else ""
                assert (f"counterexamples/hw/{d}/): {m:,} of {n:,} hardware dot products "
                        f"({k} form{s}) differ") in t.provenance, (tid, d, t.provenance)
