"""`mmaformal probes --settle PARAM` (query/settle): the probe set that settles one open
parameter on a GPU, and the verdict read back from the GPU's D.npy files.

The GPU is played by a theory (simulate with a named theory writes D.npy): the verdict must keep
exactly the candidates that predict those bits, so a GPU that behaves like the rival is told
apart from one that behaves like the primary, for each parameter the issue-15 review left open.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import mmaformal
from mmaformal import isa
from mmaformal.query import settle


def _play(out, instr, theory):
    """Write <feature>/D.npy as the GPU would, with `theory` as the GPU."""
    man = json.loads((out / "manifest.json").read_text())
    for feature, info in man["features"].items():
        if not info.get("probes"):
            continue
        d = out / feature
        D = mmaformal.simulate(instr, np.load(d / "A.npy"), np.load(d / "B.npy"), np.load(d / "C.npy"),
                               theory=theory)
        np.save(d / "D.npy", D)


@pytest.mark.parametrize("instr, param, gpu, want, gone", [
    # zero-term exponent: mmasim's -132 (primary) vs docs/semantics.md's "excluded" (rival)
    ("sm80/mma.m16n8k16.f32.bf16.bf16.f32", "zero_exp", "sm80.bf16.f32", "-132", "excluded"),
    ("sm80/mma.m16n8k16.f32.bf16.bf16.f32", "zero_exp", "sm80.bf16.f32.zero-excluded", "excluded", "-132"),
    ("sm89/mma.m16n8k16.f16.f16.f16.f16", "zero_exp", "sm89.f16.f16", "-20", "-21"),
    # DMMA NaN rule (H200's) vs the canonical NaN
    ("sm80/mma.m8n8k4.f64.f64.f64.f64", "nan", "sm80.f64.nan-canonical", str(0x7FFFFFFFFFFFFFFF),
     "propagate-bca:0xFFF8000000000000"),
])
def test_verdict_names_the_gpu(tmp_path, instr, param, gpu, want, gone):
    man = settle.write(instr, param, tmp_path)
    assert man["settle"] == param and man["probes"]
    assert sum(i.get("separating", 0) for i in man["features"].values()) > 0
    _play(tmp_path, instr, gpu)
    v = settle.verdict(tmp_path)
    assert want in v["values"], v
    assert gone not in v["values"], v
    # the zero-exponent probes pin the value: no neighbour survives
    if param == "zero_exp":
        assert len(v["values"]) == 1, v


def test_tf32_reading_probes(tmp_path):
    instr = "sm80/mma.m16n8k8.f32.tf32.tf32.f32"
    settle.write(instr, "tf32_round", tmp_path)
    ts = mmaformal.theory.default()
    rne = ts.resolve(instr).replace(tf32_round="RNE")
    _play(tmp_path, instr, rne)
    v = settle.verdict(tmp_path)
    assert v["values"] == ["RNE"], v


def test_open_parameters_lists_candidates():
    rows = {r["param"]: r for r in settle.open_parameters("sm80/mma.m16n8k16.f32.bf16.bf16.f32")}
    assert {"zero_exp", "nan", "overflow", "zero_sign", "F", "rho", "L"} <= set(rows)
    assert {"-132", "excluded", "-131", "-133"} <= set(rows["zero_exp"]["candidates"])


def test_cli_bad_input(tmp_path, capsys):
    from mmaformal.cli import main
    instr = "sm80/mma.m16n8k16.f32.bf16.bf16.f32"
    for argv in (["probes", instr, "--settle", "nope", "--out", str(tmp_path)],
                 ["probes", instr, "--settle", "zero_exp"],
                 ["probes", instr, "--settle", "zero_exp", "--out", str(tmp_path / "empty"), "--verdict"],
                 ["probes", "gfx908/v_mfma_f32_32x32x8f16", "--settle", "zero_exp", "--out", str(tmp_path)]):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code
        assert rc == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
