"""Tests of the `mmaformal` command line: every verb, --json, and every bad-input case (exit 2,
one line on stderr, no traceback)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

import mmaformal
from mmaformal import isa
from mmaformal.cli import main
from mmaformal.simulate import bits_of, value_of

H16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"
EQ10 = ["--a=-8192,-0.5,-0.25,-0.125", "--b=1024,1,1,1", "--c=8388608"]


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def bad(capsys, *argv, match=None):
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (argv, rc, out, err)
    assert err.count("\n") == 1 and err.startswith("mmaformal"), err
    assert "Traceback" not in err
    if match:
        assert match in err, err
    return err


@pytest.fixture
def tiles(tmp_path):
    rng = np.random.default_rng(0)
    A = rng.integers(0, 1 << 16, (2, 16, 16), dtype=np.uint16)
    B = rng.integers(0, 1 << 16, (2, 16, 8), dtype=np.uint16)
    C = rng.integers(0, 1 << 32, (2, 16, 8), dtype=np.uint64).astype(np.uint32)
    paths = {}
    for n, X in (("a", A), ("b", B), ("c", C)):
        paths[n] = tmp_path / f"{n}.npy"
        np.save(paths[n], X)
    paths["out"] = tmp_path / "d.npy"
    return A, B, C, paths


# --------------------------------------------------------------------------------------------
# list


def test_list_summary(capsys):
    rc, out, _ = run(capsys, "list")
    assert rc == 0
    for a in isa.ARCHS:
        assert a in out
    assert "sm90.mma-fp8.k32.f32.hmma" in out and "hypothesis" in out


def test_list_json(capsys):
    rc, out, _ = run(capsys, "list", "--json")
    d = json.loads(out)
    assert {a["arch"] for a in d["architectures"]} == set(isa.ARCHS)
    assert sum(a["instructions"] for a in d["architectures"]) == len(isa.catalog())
    t = {x["id"]: x for x in d["theories"]}
    assert t["sm90.f16.f32"]["status"] in ("hypothesis", "corroborated") and len(t["sm90.f16.f32"]["hash"]) == 64


def test_list_pattern(capsys):
    rc, out, _ = run(capsys, "list", "sm90/mma.m16n8k32.f32.*", "--json")
    d = json.loads(out)
    assert len(d["instructions"]) == 4
    r = d["instructions"][0]
    assert r["theory"] == "sm90.mma-fp8.k32.f32.hmma"
    assert set(r["rivals"]) == {"sm90.mma-fp8.f32.seed002", "sm90.mma-fp8.f32.f16-tfdpa"}
    rc, out, _ = run(capsys, "list", "hopper/wgmma.m64n8k16*")
    assert rc == 0 and "sm90/wgmma.m64n8k16.f32.f16.f16" in out
    rc, out, _ = run(capsys, "list", "zero-excluded")        # theory ids match too
    assert rc == 0 and "sm90.bf16.f32.zero-excluded" in out


# --------------------------------------------------------------------------------------------
# simulate


def test_simulate(capsys, tiles):
    A, B, C, p = tiles
    rc, out, _ = run(capsys, "simulate", H16, "--a", str(p["a"]), "--b", str(p["b"]), "--c", str(p["c"]),
                     "--out", str(p["out"]))
    assert rc == 0 and "wrote" in out
    assert np.array_equal(np.load(p["out"]), mmaformal.simulate(H16, A, B, C))


def test_simulate_json_and_theory(capsys, tmp_path):
    name = "sm90/mma.m16n8k16.f32.e5m2.e4m3.f32"
    rng = np.random.default_rng(1)
    A = rng.integers(0, 256, (16, 16), dtype=np.uint8)
    B = rng.integers(0, 256, (16, 8), dtype=np.uint8)
    C = rng.integers(0, 1 << 32, (16, 8), dtype=np.uint64).astype(np.uint32)
    for n, X in (("a", A), ("b", B), ("c", C)):
        np.save(tmp_path / f"{n}.npy", X)
    rc, out, _ = run(capsys, "simulate", "hopper/mma.sync.aligned.m16n8k16.row.col.f32.e5m2.e4m3.f32",
                     "--a", str(tmp_path / "a.npy"), "--b", str(tmp_path / "b.npy"), "--c", str(tmp_path / "c.npy"),
                     "--out", str(tmp_path / "d"), "--theory", "sm90.mma-fp8.f32.seed002", "--json")
    d = json.loads(out)
    assert rc == 0 and d["instruction"] == name and d["theory"] == "sm90.mma-fp8.f32.seed002"
    assert d["out"].endswith("d.npy") and d["dot_products"] == 128
    want = mmaformal.simulate(name, A, B, C, theory="sm90.mma-fp8.f32.seed002")
    assert np.array_equal(np.load(tmp_path / "d.npy"), want)


def test_simulate_block_scaled(capsys, tmp_path):
    name = "sm120/mma.m16n8k64.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3"
    rng = np.random.default_rng(2)
    arrs = dict(a=rng.integers(0, 16, (16, 64), dtype=np.uint8), b=rng.integers(0, 16, (64, 8), dtype=np.uint8),
                c=np.zeros((16, 8), np.uint32), sa=rng.integers(0x30, 0x40, (16, 4), dtype=np.uint8),
                sb=rng.integers(0x30, 0x40, (4, 8), dtype=np.uint8))
    for n, X in arrs.items():
        np.save(tmp_path / f"{n}.npy", X)
    f = lambda n: str(tmp_path / f"{n}.npy")  # noqa: E731
    rc, out, _ = run(capsys, "simulate", name, "--a", f("a"), "--b", f("b"), "--c", f("c"),
                     "--scale-a", f("sa"), "--scale-b", f("sb"), "--out", f("d"))
    assert rc == 0
    want = mmaformal.simulate(name, arrs["a"], arrs["b"], arrs["c"], arrs["sa"], arrs["sb"])
    assert np.array_equal(np.load(f("d")), want)
    bad(capsys, "simulate", name, "--a", f("a"), "--b", f("b"), "--c", f("c"), "--scale-a", f("sa"),
        "--out", f("d"), match="scale_b missing")


# --------------------------------------------------------------------------------------------
# compare


def test_compare_default_equation10(capsys):
    rc, out, _ = run(capsys, "compare", *EQ10, "--json")
    res = json.loads(out)
    assert rc == 0 and isinstance(res, list)
    by = {r["instruction"]: r for r in res}
    assert by["sm70/mma.m8n8k4.f32.f16.f16.f32"]["value"] == "0"
    assert by["sm90/mma.m16n8k16.f32.f16.f16.f32"]["value"] == "-0.75"
    assert by["sm90/mma.m16n8k16.f32.f16.f16.f32"]["output"] == "0xBF400000"
    assert by["gfx942/v_mfma_f32_16x16x32_bf8_bf8"]["value"] == "-1"
    assert by["gfx90a/v_mfma_f32_16x16x8bf16"]["value"] == "-0.375"
    assert by["gfx90a/v_mfma_f32_16x16x16bf16_1k"]["value"] == "0"
    assert by["gfx942/v_mfma_f64_16x16x4_f64"]["value"] == "-0.875"
    ex = [r for r in res if r["output"] is None]
    assert any("not exactly representable in e4m3" in r["excluded"] for r in ex)
    rc, out, _ = run(capsys, "compare", *EQ10, "gfx908/v_mfma_f32_32x32x1f32", "--json")
    assert json.loads(out) == [{"instruction": "gfx908/v_mfma_f32_32x32x1f32", "output": None, "value": None,
                                "excluded": "K = 1 < 4 values"}]
    assert all(set(r) >= {"instruction", "output", "value"} for r in res)
    # text form
    rc, out, _ = run(capsys, "compare", *EQ10)
    assert rc == 0 and "-0.875" in out and "excluded" in out


def test_compare_named_patterns_and_raw_bits(capsys):
    rc, out, _ = run(capsys, "compare", "--a=0xF000,0xB800,0xB400,0xB000", "--b=0x6400,0x3C00,0x3C00,0x3C00",
                     "--c=0x4B000000", H16, "ampere/mma.m16n8k16.f32.f16.f16.f32", "sm90/mma.m16n8k16.f32.bf16*",
                     "--json")
    res = json.loads(out)
    assert [r["value"] for r in res[:2]] == ["-0.75", "-0.5"]
    # raw bits are read in each instruction's own format: 0xF000 as bf16 is -2^97, so the
    # product overflows and RZ gives the largest finite f32 (semantics.md overflow rule)
    assert res[2]["instruction"].startswith("sm90/mma.m16n8k16.f32.bf16") and res[2]["output"] == "0xFF800000"
    rc, out, _ = run(capsys, "compare", "--a=0x100", "--b=0x3C", "--c=0", "sm90/mma.m16n8k32.f32.e5m2.e5m2.f32",
                     "--json")
    assert "0x100 does not fit e5m2" in json.loads(out)[0]["excluded"]
    rc, out, _ = run(capsys, "compare", "--a=0xF000:f16,-0.5", "--b=1024,1", "--c=0", H16, "--json")
    assert json.loads(out)[0]["value"] == "-8388608"     # -2^23 - 0.5, RZ to f32
    rc, out, _ = run(capsys, "compare", "--a=1", "--b=-0", "--c=-0", H16, "--json")
    assert json.loads(out)[0]["value"] == "0"       # the zero padding adds +0 products
    rc, out, _ = run(capsys, "compare", "--a=" + ",".join(["1"] * 16), "--b=" + ",".join(["-0"] * 16), "--c=-0",
                     H16, "--json")
    # every term a negative zero: semantics.md's IEEE rule would give -0, but the H200 gives +0
    # for every zero result (zero_sign = "positive", counterexamples/hw/2026-11-21-h200/)
    assert json.loads(out)[0]["value"] == "0"


# --------------------------------------------------------------------------------------------
# explain


def test_explain(capsys):
    rc, out, _ = run(capsys, "explain", H16, "--a", "0xF000,0xB800,0xB400,0xB000", "--b", "0x6400,0x3C00,0x3C00,0x3C00",
                     "--c", "0x4B000000")
    assert rc == 0
    assert "e_max = 23" in out and "truncated -0.125" in out and "RZ-FP32" in out
    assert out.strip().endswith("d = 0xBF400000 (f32: -0.75)")
    rc, out, _ = run(capsys, "explain", "gfx942/v_mfma_f32_16x16x32_bf8_bf8", "--a=-8192,-0.5,-0.25,-0.125",
                     "--b=1024,1,1,1", "--c=8388608", "--json")
    rep = json.loads(out)
    assert rep["output"]["value"] == "-1" and rep["theory"] == "gfx942.fp8.mmasim-tail"
    kinds = [s["step"] for s in rep["steps"]]
    assert "fused sum (even products)" in kinds and "group sums" in kinds and "rounded sum with c" in kinds
    assert "renormalised rounding" in kinds         # the primary's tail (tail = "mmasim")


def test_explain_special_rule(capsys):
    rc, out, _ = run(capsys, "explain", H16, "--a", "inf,1", "--b", "0,1", "--c", "0", "--json")
    rep = json.loads(out)
    assert rep["output"]["bits"] == "0x7FFFFFFF"
    assert any("Inf x 0 at k=0" in s.get("rule", "") for s in rep["steps"])


def test_explain_block_scaled_default_scales(capsys):
    name = "sm120/mma.m16n8k32.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0"
    rc, out, _ = run(capsys, "explain", name, "--a", "1,2", "--b", "3,4", "--c", "0.5", "--scale-a", "0x80")
    assert rc == 0 and out.strip().endswith("(f32: 22.5)")     # (3 + 8) * 2 + 0.5


# --------------------------------------------------------------------------------------------
# Entry points


def test_python_dash_m_and_console_script(tiles):
    A, B, C, p = tiles
    r = subprocess.run([sys.executable, "-m", "mmaformal", "simulate", H16, "--a", str(p["a"]), "--b", str(p["b"]),
                        "--c", str(p["c"]), "--out", str(p["out"]), "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["dot_products"] == 256
    r = subprocess.run([sys.executable, "-m", "mmaformal", "simulate", "sm90/nope", "--a", "x", "--b", "y",
                        "--c", "z", "--out", "w"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    exe = shutil.which("mmaformal")
    if exe:
        r = subprocess.run([exe, "list", "gfx908/v_mfma_f32_4x4x4f16"], capture_output=True, text=True)
        assert r.returncode == 0 and "gfx908.f16" in r.stdout


def test_simulate_does_not_import_z3(tiles):
    A, B, C, p = tiles
    code = ("import sys; from mmaformal.cli import main; rc = main(['simulate', %r, '--a', %r, '--b', %r, "
            "'--c', %r, '--out', %r]); assert rc == 0; print('z3' in sys.modules)"
            % (H16, str(p["a"]), str(p["b"]), str(p["c"]), str(p["out"])))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip().splitlines()[-1] == "False"


# --------------------------------------------------------------------------------------------
# Bad input: exit 2, one line, no traceback


def test_usage_errors(capsys):
    bad(capsys)                                          # no verb
    bad(capsys, "frobnicate")
    bad(capsys, "simulate", H16)                         # missing required options
    bad(capsys, "compare", "--a=1")
    bad(capsys, "list", "--nope")


def test_simulate_bad_inputs(capsys, tiles, tmp_path):
    A, B, C, p = tiles
    s = lambda *extra, a=p["a"], b=p["b"], c=p["c"], name=H16: ("simulate", name, "--a", str(a), "--b", str(b),  # noqa: E731
                                                                  "--c", str(c), "--out", str(p["out"]), *extra)
    bad(capsys, *s(name="sm90/mma.m16n8k16.f32.f16.f16.f33"), match="closest known: sm90/mma.m16n8k16.f32.f16.f16.f32")
    bad(capsys, *s(a=tmp_path / "missing.npy"), match="no such file")
    (tmp_path / "junk.npy").write_text("not an npy file")
    bad(capsys, *s(a=tmp_path / "junk.npy"), match="cannot read")
    np.save(tmp_path / "obj.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True)
    bad(capsys, *s(a=tmp_path / "obj.npy"), match="cannot read")
    np.save(tmp_path / "u8.npy", A.astype(np.uint8))
    bad(capsys, *s(a=tmp_path / "u8.npy"), match="must be uint16 raw bits")
    np.save(tmp_path / "short.npy", A[..., :15])
    bad(capsys, *s(a=tmp_path / "short.npy"), match="A must have shape")
    np.save(tmp_path / "b3.npy", np.concatenate([B, B, B]))
    bad(capsys, *s(b=tmp_path / "b3.npy"), match="do not broadcast")
    bad(capsys, *s("--theory", "sm90.nope"), match="unknown theory")
    bad(capsys, *s("--theory", "sm80.f16.f32"), match="does not cover")
    bad(capsys, *s("--scale-a", str(p["a"]), "--scale-b", str(p["a"])), match="not block-scaled")
    bad(capsys, "simulate", H16, "--a", str(p["a"]), "--b", str(p["b"]), "--c", str(p["c"]),
        "--out", str(tmp_path / "no" / "such" / "dir" / "d.npy"), match="cannot write")
    name = "sm120/mma.m16n8k32.kind::f8f6f4.f32.e2m1.e2m1.f32"
    np.save(tmp_path / "fp4a.npy", np.full((16, 32), 0x1F, np.uint8))
    np.save(tmp_path / "fp4b.npy", np.zeros((32, 8), np.uint8))
    np.save(tmp_path / "c32.npy", np.zeros((16, 8), np.uint32))
    bad(capsys, *s(name=name, a=tmp_path / "fp4a.npy", b=tmp_path / "fp4b.npy", c=tmp_path / "c32.npy"),
        match="uses the low 4 bits")


def test_compare_summarises_the_excluded(capsys):
    """README's compare command: the instructions it leaves out are summarised in two lines
    (how many, why, counted by reason), not listed one per line; --list-excluded lists them."""
    rc, out, _ = run(capsys, "compare", *EQ10, "--json")
    res = json.loads(out)
    ex = [r for r in res if r["output"] is None]
    assert rc == 0 and ex
    rc, out, _ = run(capsys, "compare", *EQ10)
    lines = out.rstrip("\n").splitlines()
    assert rc == 0 and lines[-2].startswith(f"excluded {len(ex)} of {len(res)} instructions")
    # the reasons, counted: the numbers on the second line add up to the excluded count
    import re
    head = re.findall(r"(\d+) (?:whose|with|for)", lines[-1])
    inner = re.findall(r"\b[a-z0-9]+ (\d+)\b", lines[-1].split("(", 1)[1]) if "(" in lines[-1] else []
    assert sum(map(int, head)) == len(ex)
    fmt_total = re.match(r"\s*(\d+) whose formats", lines[-1])
    if fmt_total:
        assert sum(map(int, inner)) == int(fmt_total.group(1))
    assert not any(r["instruction"] in out for r in ex)
    rc, out, _ = run(capsys, "compare", *EQ10, "--list-excluded")
    assert all(f"  {r['instruction']}: {r['excluded']}" in out for r in ex)
    rc, out, _ = run(capsys, "compare", *EQ10, "gfx908/v_mfma_f32_32x32x1f32", H16)
    assert out.rstrip().splitlines()[-1] == "  1 with K < 4"


def test_simulate_rejects_float_nan_and_directory_out(capsys, tmp_path):
    A = np.zeros((16, 16), np.float32)
    A[3, 5] = np.nan
    B = np.zeros((16, 8), np.float32)
    C = np.zeros((16, 8), np.float32)
    for n, X in (("a", A), ("b", B), ("c", C)):
        np.save(tmp_path / f"{n}.npy", X)
    args = ["simulate", H16, "--a", str(tmp_path / "a.npy"), "--b", str(tmp_path / "b.npy"),
            "--c", str(tmp_path / "c.npy")]
    # a float32 NaN has no defined payload in f16 (the operand format): rejected
    bad(capsys, *args, "--out", str(tmp_path / "d.npy"), match="NaN at index (3, 5)")
    # ... but in f32 (C's own format) the array's bits are the raw bits: the payload survives
    C[2, 1] = np.frombuffer(np.uint32(0x7FC01234).tobytes(), np.float32)[0]
    np.save(tmp_path / "c.npy", C)
    A[3, 5] = 0
    np.save(tmp_path / "a.npy", A)
    rc, out, err = run(capsys, *args, "--out", str(tmp_path / "d.npy"))
    assert rc == 0, err
    # a directory as --out: an error, and nothing written beside it
    d = tmp_path / "outdir"
    d.mkdir()
    bad(capsys, *args, "--out", str(d), match="is a directory")
    bad(capsys, *args, "--out", str(tmp_path / "missing") + "/", match="is a directory")
    # hw run checks its --out before it looks for a GPU
    bad(capsys, "hw", "run", H16, "--a", str(tmp_path / "a.npy"), "--b", str(tmp_path / "b.npy"),
        "--c", str(tmp_path / "c.npy"), "--out", str(d), match="is a directory")
    assert not (tmp_path / "outdir.npy").exists() and not (tmp_path / "missing.npy").exists()


def test_compare_bad_inputs(capsys):
    bad(capsys, "compare", "--a=1,2", "--b=1", "--c=0", match="--a has 2 values, --b has 1")
    bad(capsys, "compare", "--a=1", "--b=1", "--c=0,1", match="expected one value")
    bad(capsys, "compare", "--a=one", "--b=1", "--c=0", match="not a number")
    bad(capsys, "compare", "--a=1,,2", "--b=1,2,3", "--c=0", match="comma-separated")
    bad(capsys, "compare", "--a=0xZZ", "--b=1", "--c=0", match="not raw bits")
    bad(capsys, "compare", "--a=0x10000:f16", "--b=1", "--c=0", match="does not fit format f16")
    bad(capsys, "compare", "--a=1", "--b=1", "--c=0", "sm99/*", match="matches no instruction")
    bad(capsys, "compare", "--a=1", "--b=1", "--c=0", "sm90/mma.nope", match="unknown instruction")
    bad(capsys, "compare", "--a=0x1:f17", "--b=1", "--c=0", match="unknown format")


def test_explain_bad_inputs(capsys):
    bad(capsys, "explain", H16, "--a", "1e-9", "--b", "1", "--c", "0", match="not exactly representable in f16")
    bad(capsys, "explain", H16, "--a", "0x10000", "--b", "1", "--c", "0", match="does not fit format f16")
    bad(capsys, "explain", H16, "--a", ",".join(["1"] * 17), "--b", "1", "--c", "0", match="K = 16, got 17")
    bad(capsys, "explain", H16, "--a", "1", "--b", "1", "--c", "0,0", match="expected one value")
    bad(capsys, "explain", H16, "--a", "1", "--b", "1", "--c", "0", "--scale-a", "0x7F", match="not block-scaled")
    bad(capsys, "explain", "sm90/mma.m16n8k16.f32.f16", "--a", "1", "--b", "1", "--c", "0", match="unknown instruction")
    bad(capsys, "explain", H16, "--a", "1", "--b", "1", "--c", "0", "--theory", "gfx908.f16", match="does not cover")
    name = "sm120/mma.m16n8k32.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0"
    bad(capsys, "explain", name, "--a", "1", "--b", "1", "--c", "0", "--scale-a", "0x7F,0x7F", match="needs 1 value")
