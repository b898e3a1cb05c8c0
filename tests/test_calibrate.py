"""`mmaformal calibrate` (mmaformal.calibrate): the closed loop that learns a platform profile.

Oracle: a hidden profile. The "native" op is the call run under emulating(hidden profile) on the
CPU (calibrate.EmulatedNative), so the search must recover the hidden schedule (split of K,
block size, K order) from the native outputs alone; the profile it writes must load, select
the right rule per call and reproduce the native bits. Small shapes and the candidates limited
to the sm90 f16 -> f32 instructions (one compiled theory) keep these tests to seconds. The
`gpu` test runs the verb on the real GPU library (skipped without a GPU visible to torch).
"""
from __future__ import annotations

import argparse
import warnings

import pytest

torch = pytest.importorskip("torch")

from mmaformal import calibrate as C  # noqa: E402
from mmaformal import calibrate_calls as CC  # noqa: E402
from mmaformal import calibrate_native as CN  # noqa: E402
from mmaformal import cli  # noqa: E402
from mmaformal import profile as P  # noqa: E402
from mmaformal import torch as mt  # noqa: E402

F16 = ["mma.m16n8k*.f32.f16.f16.f32"]          # k8 and k16 forms, one theory


def _hidden(*rules) -> P.Profile:
    rs = []
    for i, r in enumerate(rules):
        d = {"id": f"h{i}", "status": "hypothesis", "provenance": "hidden", "match": {"a": "f16", "b": "f16"}}
        d.update(r)
        rs.append(d)
    return P.parse({"profile": {"id": "hidden", "status": "hypothesis", "provenance": "test"},
                    "rule": rs}, "hidden")


def _args(**kw) -> argparse.Namespace:
    d = dict(model=None, shapes=None, out=None, trials=2, probes=2, rows=8, dtype=None,
             tf32=False, tokens=16, arch="sm90", id=None, case_seconds=None, only=F16, seed=0,
             json=False)
    d.update(kw)
    return argparse.Namespace(**d)


# --------------------------------------------------------------------------------------------
# shapes


def test_parse_shapes():
    cs = C.parse_shapes("64x128x256:f16, 4x8x16x32:bf16:t:n:bmm 32x48x64:tf32:linear:bias "
                        "64x64x128:e4m3/e5m2:fast")
    assert cs[0] == C.Case("mm", "f16", "f16", "f16", 64, 128, 256)
    assert (cs[1].op, cs[1].batch, cs[1].b_batched, cs[1].trans_a, cs[1].trans_b) == ("bmm", 4, True, True, False)
    assert (cs[2].a, cs[2].allow_tf32, cs[2].bias, cs[2].op) == ("f32", True, True, "linear")
    assert (cs[3].op, cs[3].a, cs[3].b, cs[3].out, cs[3].fast_accum, cs[3].trans_b) == \
        ("scaled_mm", "e4m3", "e5m2", "bf16", True, True)
    assert cs[0].call().describe().startswith("mm f16 x f16 -> f16, M=64 N=128 K=256")


def test_parse_shapes_file(tmp_path):
    f = tmp_path / "shapes.txt"
    f.write_text("# GPT-2\n16x2304x768:f16:linear  # c_attn\n16x768x768:f16\n16x768x768:f16\n")
    assert [c.n for c in C.parse_shapes(str(f))] == [2304, 768]


@pytest.mark.parametrize("spec, words", [
    ("64x64:f16", "3 or 4 positive integers"), ("axbxc:f16", "integers"),
    ("64x64x64", "MxNxK:DTYPE"), ("64x64x64:f8", "unknown dtype"),
    ("64x64x64:f16:zz", "unknown token"), ("64x64x64:f16:fast", "fp8"),
    ("60x64x64:e4m3", "multiples of 16"), ("64x64x64:f16:bias", "bias applies"),
    ("", "no shape"),
])
def test_parse_shapes_errors(spec, words):
    with pytest.raises(ValueError, match=words):
        C.parse_shapes(spec)


# --------------------------------------------------------------------------------------------
# candidates and probes


def test_candidates_cover_the_schedule_space_once():
    case = C.parse_shapes("8x16x128:f16")[0]
    base = C.candidates(case, "sm90", 0)
    names = {c.instruction for c in base}
    assert {"sm90/mma.m16n8k16.f32.f16.f16.f32", "sm90/mma.m16n8k8.f32.f16.f16.f32"} <= names
    assert {c.order for c in base} == {"increasing", "decreasing"}
    assert not any("wmma" in n or "sp::" in n for n in names)
    # wgmma / mma of one theory and k are one candidate
    assert sum("m16n8k16.f32.f16" in n or "wgmma" in n and "f32.f16" in n for n in names) == 1
    splits = C.candidates(case, "sm90", 1, F16)
    parts = [(c.instruction, P.Split(**{k: v for k, v in c.split if k in ("slices", "chunk", "unit")})
              .parts(-(-128 // P.isa.lookup(c.instruction).k), P.isa.lookup(c.instruction).k),
              dict(c.split).get("reduce"), dict(c.split).get("reduce_format")) for c in splits]
    assert len({repr(p) for p in parts}) == len(parts)          # each partition once
    tf = C.parse_shapes("8x16x64:tf32")[0]
    assert {c.pre_round for c in C.candidates(tf, "sm90", 0)} == {"tf32-rne", "none"}
    assert C.candidates(C.parse_shapes("8x16x64:f32")[0], "sm90", 0) == []
    assert any("xf32" in c.instruction for c in C.candidates(tf, "gfx942", 0))


def test_probe_big_products_cancel():
    """Each output of a probe is the sum of the small products only (the two big ones cancel
    exactly in exact arithmetic)."""
    case = C.parse_shapes("8x16x64:f32")[0]
    inp = C.probe_inputs(case, 0)
    x, y = inp["x"].double(), inp["y"].double()
    exact = x @ y
    sa, _, sb, _ = CN._probe_values("f32", "f32")
    assert torch.all(exact == (case.k - 2) * sa * sb)
    assert inp["y"].stride(0) == 1 if case.trans_b else True


# --------------------------------------------------------------------------------------------
# the loop recovers hidden schedules


@pytest.mark.parametrize("hidden, spec", [
    ({"instruction": "sm90/mma.m16n8k16.f32.f16.f16.f32", "split": {"slices": 4}}, "8x16x128:f16"),
    ({"instruction": "sm90/mma.m16n8k8.f32.f16.f16.f32"}, "8x16x64:f16:t:t"),
    ({"instruction": "sm90/mma.m16n8k16.f32.f16.f16.f32", "order": "decreasing"}, "8x16x40:f16"),
    ({"instruction": "sm90/mma.m16n8k16.f32.f16.f16.f32", "split": {"chunk": 48, "reduce_format": "out"}},
     "8x16x128:f16"),
])
def test_recovers_a_hidden_schedule(hidden, spec):
    h = _hidden({**hidden, "default": True})
    case = C.parse_shapes(spec)[0]
    r = C.calibrate_case(case, C.EmulatedNative(h), "sm90", trials=2, rows=8, only=F16)
    assert r.chosen is not None, r.best
    rule = C.Candidate.profile(r.chosen).rules[0]
    want = h.rules[0]
    assert rule.instruction.k == want.instruction.k
    if want.split:
        nb = -(-case.k // want.instruction.k)
        k = want.instruction.k
        assert rule.split.parts(nb, k) == want.split.parts(nb, k)
        assert rule.split.reduce_format == want.split.reduce_format
    else:
        assert rule.split is None and rule.order == want.order
    assert r.kernels == ["(emulated: profile hidden)"]
    assert r.inputs == ["probe 0", "probe 1", "random 0", "random 1"]


def test_no_candidate_reports_the_closest():
    """A native outside the candidate space (k8 split 3 while only k16 is asked): no schedule,
    and the closest one with its count of differing outputs."""
    h = _hidden({"instruction": "sm90/mma.m16n8k8.f32.f16.f16.f32", "split": {"slices": 3},
                 "default": True})
    case = C.parse_shapes("8x16x64:f16")[0]
    r = C.calibrate_case(case, C.EmulatedNative(h), "sm90", trials=1, rows=8,
                         only=["mma.m16n8k16.f32.f16.f16.f32"])
    assert r.chosen is None and r.best is not None and r.best[1] > 0
    assert r.to_json()["closest"]["differ"] == r.best[1]


# --------------------------------------------------------------------------------------------
# the verb: profile written, loaded, selected per call


def test_run_writes_a_profile_that_reproduces_the_native(tmp_path, capsys):
    h = _hidden({"instruction": "sm90/mma.m16n8k16.f32.f16.f16.f32", "split": {"slices": 4},
                 "match": {"a": "f16", "b": "f16", "k": 1024}},
                {"instruction": "sm90/mma.m16n8k16.f32.f16.f16.f32", "default": True})
    out = tmp_path / "cal.toml"
    # M = 16 > rows = 8: the search compares the first 8 rows, the check of the written profile
    # the whole call, whose shape-specific rule must match the call's own M
    rc = C.run(_args(shapes="16x16x1024:f16,16x16x64:f16,16x32x32:f16", out=str(out), json=True),
               native=C.EmulatedNative(h))
    rep = __import__("json").loads(capsys.readouterr().out)
    assert rc == 0 and rep["unreproduced"] == [] and rep["rules"] == 2
    assert all(c["verified"] for c in rep["calls"])
    prof = P.load(out)
    assert prof.status == "hypothesis" and "mmaformal calibrate" in prof.provenance
    special, general = prof.rules
    assert special.status == "confirmed" and special.match["k"] == 1024 and special.split
    assert general.default and general.status == "hypothesis" and general.split is None
    assert "emulated: profile hidden" in general.provenance
    # the learned profile runs a new shape of the same formats like the hidden one
    x = C.random_inputs(C.parse_shapes("4x8x96:f16")[0], 5)
    with torch.no_grad(), mt.emulating(prof, strict=True):
        got = torch.mm(x["x"], x["y"])
    with torch.no_grad(), mt.emulating(h, strict=True):
        want = torch.mm(x["x"], x["y"])
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))
    # an op no rule covers: strict names the call; otherwise the default rule, one warning
    b = C.random_inputs(C.parse_shapes("2x4x8x32:f16:bmm")[0], 1)
    with pytest.raises(mt.EmulationError, match="no rule covers bmm f16"):
        with torch.no_grad(), mt.emulating(prof, strict=True):
            torch.bmm(b["x"], b["y"])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with torch.no_grad(), mt.emulating(prof):
            torch.bmm(b["x"], b["y"])
            torch.bmm(b["x"], b["y"])
    msgs = [str(r.message) for r in rec if issubclass(r.category, mt.EmulationWarning)]
    assert len(msgs) == 1 and general.id in msgs[0]


def test_run_names_calls_no_candidate_reproduces(tmp_path, capsys):
    h = _hidden({"instruction": "sm90/mma.m16n8k8.f32.f16.f16.f32", "split": {"slices": 3},
                 "default": True})
    rc = C.run(_args(shapes="8x16x64:f16", out=str(tmp_path / "x.toml"), trials=1,
                     only=["mma.m16n8k16.f32.f16.f16.f32"]), native=C.EmulatedNative(h))
    assert rc == 1 and not (tmp_path / "x.toml").exists()


# --------------------------------------------------------------------------------------------
# errors of the verb


def _cli(argv, capsys):
    rc = cli.main(argv)
    return rc, capsys.readouterr().err.strip()


@pytest.mark.parametrize("argv, words", [
    (["calibrate"], "one of the arguments --model --shapes is required"),
    (["calibrate", "--shapes", "1x2x3:f16", "--model", "a:b"], "not allowed with"),
    (["calibrate", "--shapes", "64x64:f16"], "3 or 4 positive integers"),
    (["calibrate", "--shapes", "64x64x64:f16", "--trials", "0"], "--trials"),
    (["calibrate", "--shapes", "64x64x64:f16", "--arch", "sm42"], "not a catalog architecture"),
])
def test_cli_bad_input_is_one_line_exit_2(argv, words, capsys):
    rc, err = _cli(argv, capsys)
    assert rc == 2 and len(err.splitlines()) == 1 and words in err, err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cli_without_a_gpu_is_one_line_exit_2(capsys):
    rc, err = _cli(["calibrate", "--shapes", "64x64x64:f16"], capsys)
    assert rc == 2 and len(err.splitlines()) == 1 and "needs a GPU" in err


def test_model_spec_errors():
    for spec, words in (("nomodule", "pkg.module:factory"), ("no_such_mod_x:f", "cannot import"),
                        ("json:nothing", "no callable"), ("json:dumps", "must return")):
        with pytest.raises(ValueError, match=words):
            CC._load_model(spec, 8) if spec != "json:dumps" else _call_factory(spec)


def _call_factory(spec):
    import json
    json.calibrate_test_factory = lambda: 1
    try:
        return CC._load_model("json:calibrate_test_factory", 8)
    finally:
        del json.calibrate_test_factory


def test_trace_model_records_the_gemms(tmp_path, monkeypatch):
    """A factory model traced on the CPU: its GEMM calls as cases (formats, shapes, layouts,
    bias), convolutions and fused attention named as left out."""
    pkg = tmp_path / "calfactory_mod.py"
    pkg.write_text(
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.l = torch.nn.Linear(32, 48)\n"
        "        self.c = torch.nn.Conv1d(4, 4, 3)\n"
        "    def forward(self, x):\n"
        "        h = self.l(x)\n"
        "        a = h @ h.transpose(-1, -2)\n"
        "        self.c(x[:, :4, :8])\n"
        "        return torch.nn.functional.scaled_dot_product_attention(h, h, h) + a.sum()\n"
        "def make():\n"
        "    return M(), (torch.randn(2, 8, 32),)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cases, notes = C.trace_model("calfactory_mod:make", "cpu", "f16")
    ops = {(c.op, c.m, c.n, c.k, c.batch, c.bias, c.trans_b) for c in cases}
    assert ("linear", 8, 48, 32, 2, True, True) in ops
    assert ("matmul", 8, 8, 48, 2, False, True) in ops
    assert all(c.a == "f16" for c in cases)
    assert any("conv1d" in n for n in notes) and any("scaled_dot_product" in n for n in notes)


# --------------------------------------------------------------------------------------------
# the real thing


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU visible to torch")
def test_calibrate_on_the_gpu(tmp_path, capsys):
    out = tmp_path / "gpu.toml"
    rc = cli.main(["calibrate", "--shapes", "64x64x256:f16,64x64x256:bf16", "--trials", "1",
                   "--rows", "8", "--out", str(out), "--json"])
    rep = __import__("json").loads(capsys.readouterr().out)
    assert rc in (0, 1), rep
    assert rep["calls"] and all(c["kernels"] for c in rep["calls"])
    if rc == 0:
        prof = P.load(out)
        assert all(c["verified"] for c in rep["calls"]) and prof.rules
