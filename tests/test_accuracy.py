"""Tests of mmaformal.accuracy: the exact reference, the statistics, the [Xie2025] Figure 3
reproduction (CDNA3 f16 round-down bias vs its RZ twin), plots, the verb."""
from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from mmaformal import accuracy, isa, mma
from mmaformal import theory as T
from mmaformal.bits import INT

CDNA3 = "gfx942/v_mfma_f32_32x32x8_f16"
H16 = "sm90/wgmma.m64n8k16.f32.f16.f16"
H8 = "sm90/wgmma.m64n8k32.f32.e4m3.e4m3"


def test_fig3_rd_bias_negative_rz_twin_unbiased():
    """[Xie2025] sec. 6.2.4: C ~ N(0,1), A, B ~ 1000 N(0,1). The RD inside TR-FDPA rounds the
    aligned c down to units of 2^(E - F) (E ~ 2^20 here, F = 24: 1/16), a mean of about
    -1/32; the RZ twin rounds toward zero, symmetric for symmetric c."""
    res = accuracy.study([CDNA3], dist="fig3", n=20000, seed=0, twin=True)
    assert [r.label for r in res] == [CDNA3, CDNA3 + " [RZ twin]"]
    rd, rz = (r.stats for r in res)
    assert rd["n"] == rz["n"] == 20000
    assert -0.040 < rd["abs"]["bias"] < -0.022          # ~ -1/32
    assert rd["z"] < -20                                 # far beyond noise
    assert rd["frac_neg"] > rd["frac_pos"] + 0.1
    assert abs(rz["abs"]["bias"]) < 0.004
    assert abs(rz["z"]) < 4
    assert abs(rz["frac_neg"] - rz["frac_pos"]) < 0.03
    # same spread otherwise: the twin differs only in the sign-asymmetric rounding
    assert 0.5 < rz["abs"]["std"] / rd["abs"]["std"] < 2


def test_rz_twin_single_dot_product():
    """align_round: c = -0.1 aligned at E = 20 with F = 24 (units 1/16): RD gives -2/16,
    RZ -1/16; S = 2^20 + c' is exact in f32."""
    th = T.resolve(CDNA3)
    tw = accuracy.rz_twin(CDNA3)
    assert th.param_dict["align_round"] == "RD" and tw.param_dict["align_round"] == "RZ"
    assert tw.hash() != th.hash()
    one_k = 0x6400                                  # f16 1024
    a = [INT.const(one_k, 16, False)] + [INT.const(0, 16, False)] * 7
    c = INT.const(int(np.float32(-0.1).view(np.uint32)), 32, False)
    d_rd = int(th.dot(INT, a, a, c).v)
    d_rz = int(tw.dot(INT, a, a, c).v)
    f = lambda x: float(np.uint32(x).view(np.float32))  # noqa: E731
    assert f(d_rd) == 2.0 ** 20 - 0.125
    assert f(d_rz) == 2.0 ** 20 - 0.0625
    with pytest.raises(ValueError, match="align_round must be 'RD' or 'RZ'"):
        mma.tr_fdpa(a, a, c, "f16", "f16", 24, 31, align_round="RU")


def test_rz_twin_needs_tr_fdpa():
    with pytest.raises(ValueError, match="no internal RD alignment to replace"):
        accuracy.rz_twin(H16)
    with pytest.raises(ValueError, match="no internal RD alignment"):
        accuracy.study([H16], n=10, twin=True)


def test_reference_fsum_equals_fraction():
    for dist in ("normal", "adversarial", "dnn"):
        x, y, z = accuracy.sample(dist, 300, 16, seed=3)
        for name in (CDNA3, "sm90/mma.m16n8k16.f32.f16.f16.f32"):
            r1 = accuracy.evaluate(name, x, y, z, reference="fsum", seed=3)
            r2 = accuracy.evaluate(name, x, y, z, reference="fraction", seed=3)
            assert np.array_equal(r1.err, r2.err) and np.array_equal(r1.err_ulp, r2.err_ulp)


def test_exact_rounding_instruction_is_within_half_an_ulp():
    """CDNA1 f16 with k = L = 4 is one E-FDPA (exact sum, one RNE-FP32 rounding): |err| <=
    0.5 ulp, always (with k = 8 two chained blocks are not); a
    check of the reference and of the ulp scale. f64 FMA chains go through the Fraction path."""
    r, = accuracy.study(["gfx908/v_mfma_f32_32x32x4f16"], dist="adversarial", n=4000, seed=1)
    s = r.stats
    assert r.reference == "fsum" and s["n"] == 4000
    assert s["ulp"]["max_abs"] <= 0.5 and s["abs"]["max_abs"] > 0
    r, = accuracy.study(["sm90/mma.m8n8k4.f64.f64.f64.f64"], n=300, seed=1)
    assert r.reference == "fraction" and r.stats["n"] == 300


def test_side_by_side_hopper_fp8_vs_fp16():
    """[Xie2025] sec. 6.2.2-6.2.3: Hopper FP8 (F = 13, RZ-E8M13) is far less accurate than
    FP16 (F = 25) on the same values; the FP8 instruction walks K = 32 in one step, FP16 in
    two."""
    res = accuracy.study([H16, H8], dist="normal", n=5000, seed=2)
    assert [r.K for r in res] == [32, 32]
    s16, s8 = res[0].stats, res[1].stats
    assert s8["ulp"]["median_abs"] > 100 * s16["ulp"]["median_abs"]
    assert s8["abs"]["std"] > 100 * s16["abs"]["std"]


def test_stats_and_nonfinite_lanes():
    s = accuracy.stats(np.array([-1.0, 1.0, -2.0, 0.0]), np.array([-1.0, 1.0, -2.0, 0.0]), 3)
    assert s["n"] == 4 and s["nonfinite"] == 3
    assert s["abs"]["bias"] == -0.5 and s["abs"]["max_abs"] == 2.0
    assert s["frac_neg"] == 0.5 and s["frac_zero"] == 0.25
    x, y, z = accuracy.sample("normal", 100, 16, seed=0)
    x[:7, 0] = 1e6                                   # overflows f16: saturates to the max
    y[:7, 0] = 1e6
    r = accuracy.evaluate("sm90/mma.m16n8k16.f16.f16.f16.f16", x, y, z)
    assert r.stats["nonfinite"] == 7 and r.stats["n"] == 93


def test_plot_is_a_png(tmp_path):
    mpimg = pytest.importorskip("matplotlib.image")
    res = accuracy.study([CDNA3], dist="fig3", n=3000, seed=0, twin=True)
    for unit in ("abs", "ulp"):
        p = tmp_path / f"fig3-{unit}.png"
        accuracy.plot(res, str(p), unit=unit, title="fig3")
        data = p.read_bytes()
        assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n"
        img = mpimg.imread(str(p))
        assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    with pytest.raises(ValueError, match="unit must be"):
        accuracy.plot(res, str(tmp_path / "x.png"), unit="bits")


def _cli(argv):
    p = argparse.ArgumentParser(prog="mmaformal")
    sub = p.add_subparsers(dest="verb")
    accuracy.add_parser(sub)
    return accuracy.run(p.parse_args(["accuracy"] + list(argv)))


def test_cli_verb(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "f.png"
    rc = _cli([CDNA3, "--dist", "fig3", "--n", "2000", "--rz-twin", "--plot", str(png), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["K"] == 8 and out["plot"] == str(png) and png.read_bytes()[:4] == b"\x89PNG"
    labels = [r["label"] for r in out["results"]]
    assert labels == [CDNA3, CDNA3 + " [RZ twin]"]
    assert out["results"][0]["stats"]["abs"]["bias"] < 0
    rc = _cli([H16, "--compare", H8, "--n", "500", "--dist", "uniform"])
    text = capsys.readouterr().out
    assert rc == 0 and H8 in text and "bias" in text
    with pytest.raises(ValueError, match="must be a positive multiple of 32"):
        _cli([H16, "--compare", H8, "--n", "10", "--k", "48"])
    with pytest.raises(SystemExit):                 # the parser refuses it (args.positive_int)
        _cli([H16, "--n", "0"])
    with pytest.raises(ValueError, match="--n must be >= 1"):
        accuracy.study([H16], n=0)
    with pytest.raises(ValueError, match="unknown instruction"):
        _cli(["sm90/nosuch", "--n", "10"])


# --------------------------------------------------------------------------------------------
# tiles: bounded memory, the bits of one whole draw


@pytest.mark.parametrize("dist", ["normal", "adversarial", "dnn"])
def test_tiles_give_the_bits_of_one_whole_draw(dist, monkeypatch):
    """Whole rows per tile, several rows, and long rows cut into column chunks (accumulator
    carried, exact sums kept per row): every tiling gives the errors of evaluate() on one
    whole draw, bit for bit, and so the same statistics."""
    monkeypatch.setattr(accuracy, "LANES", 8)
    for name, K in (("sm90/mma.m16n8k16.f32.f16.f16.f32", 64), (CDNA3, 48)):
        x, y, z = accuracy.sample(dist, 300, K, seed=5)
        whole = accuracy.evaluate(name, x, y, z, seed=5)
        for tile in (None, 7 * K, 1000, 100, 16):
            r, = accuracy.study([name], dist=dist, n=300, K=K, seed=5, tile=tile)
            assert np.array_equal(r.err, whole.err), (name, tile)
            assert np.array_equal(r.err_ulp, whole.err_ulp), (name, tile)
            assert r.stats == whole.stats


def test_samples_do_not_depend_on_the_grain_walk(monkeypatch):
    """A sample is a function of (dist, seed, K, row, column): drawn in column pieces or
    row pieces, across grains, it is the same number (the adversarial mirror included)."""
    monkeypatch.setattr(accuracy, "GRAIN", 16)
    for K in (8, 64):                               # whole-row grains; one-row column grains
        x, y, _ = accuracy.sample("adversarial", 7, K, seed=1)
        parts = [accuracy._samples("adversarial", 1, K, 0, 7, c, c + 8) for c in range(0, K, 8)]
        assert np.array_equal(x, np.concatenate([p[0] for p in parts], axis=1))
        assert np.array_equal(y, np.concatenate([p[1] for p in parts], axis=1))
        xr = np.concatenate([accuracy._samples("adversarial", 1, K, r, r + 1, 0, K)[0]
                             for r in range(7)])
        assert np.array_equal(x, xr)
    x, y, z = accuracy.sample("normal", 40, 8, seed=2)
    x2, y2, z2 = accuracy._samples("normal", 2, 8, 13, 40, 0, 8)
    assert np.array_equal(x[13:], x2) and np.array_equal(z[13:], z2)


def test_sizes_it_cannot_do_are_refused(capsys, monkeypatch):
    """Beyond MAX_SAMPLES, or beyond the memory available: one line, exit 2, before drawing."""
    from mmaformal.cli import main
    rc = main(["accuracy", "sm89/mma.m16n8k16.f32.f16.f16.f32", "--k", "1000000000", "--n", "10"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--k" in err and "Traceback" not in err, err
    monkeypatch.setattr(accuracy, "_available_memory", lambda: 1 << 30)
    with pytest.raises(ValueError, match="GiB available"):
        accuracy.study([H16], n=50_000_000, K=16)
    assert accuracy.memory_bound(100, 1 << 20, 1, 16) < 1 << 30
