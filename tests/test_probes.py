"""mmaformal probes (issue 6): probe tiles + manifest; predictions against `simulate`."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mmaformal.cli import main as cli
from mmaformal.query import probes

F16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"
BF16 = "sm90/mma.m16n8k16.f32.bf16.bf16.f32"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = {}
    for name in (F16, BF16):
        d = tmp_path_factory.mktemp(name.replace("/", "_"))
        assert cli(["probes", name, "--out", str(d), "--json"]) == 0
        out[name] = (d, json.loads((d / "manifest.json").read_text()))
    return out


def _separated(man, feature, a, b) -> bool:
    for p in man["probes"]:
        if p["feature"] == feature:
            pr = p["predictions"]
            if a in pr and b in pr and pr[a] != pr[b]:
                return True
    return False


def test_files_run_through_simulate_and_match_the_manifest(written, tmp_path):
    """Each feature's files run unchanged through `mmaformal simulate`; the outputs at row 0 /
    column 0 are the primary theory's predictions in the manifest, and simulate with each rival
    theory reproduces that rival's predictions."""
    from mmaformal.query.distinguish import resolve
    from mmaformal.simulate import simulate
    d, man = written[F16]
    base = man["theory"]["label"]
    checked = 0
    for feature, info in man["features"].items():
        if "rivals" not in info:
            continue
        out = tmp_path / f"{feature}.npy"
        f = d / feature
        assert cli(["simulate", F16, "--a", str(f / "A.npy"), "--b", str(f / "B.npy"),
                    "--c", str(f / "C.npy"), "--out", str(out)]) == 0
        D = np.load(out)
        ps = [p for p in man["probes"] if p["feature"] == feature]
        assert len(ps) == D.shape[0] == info["probes"]
        for p in ps:
            assert int(p["predictions"][base], 16) == int(D[p["tile"], 0, 0])
            if feature == "independence":
                assert np.all(D[p["tile"]] == D[p["tile"], 0, 0])
        A, B, C = (np.load(f / f"{x}.npy") for x in "ABC")
        for lab in info["rivals"]:
            if lab == base or "align=RD" in lab:
                continue
            m = resolve(lab) if "[" in lab or "@" in lab else resolve(f"{lab}@{F16}")
            Dr = simulate(F16, A, B, C, theory=m.theory)
            for p in ps:
                assert int(p["predictions"][lab], 16) == int(Dr[p["tile"], 0, 0]), (feature, lab)
                checked += 1
    assert checked > 100


def test_features_separate_their_rivals(written):
    _, man = written[F16]
    base = man["theory"]["label"]
    for feature, mut in [("precision", "[F=24]"), ("precision", "[F=26]"),
                         ("alignment", "[align=RD]"), ("output_rounding", "[rho=RNE-FP32]"),
                         ("order", "[L=8]"), ("order", "[accumulate=add]"),
                         ("specials", "[nan=2143289344]"), ("zero_sign", "[zero_sign=ieee]")]:
        rv = man["features"][feature]["rivals"]
        lab = next(r for r in rv if r.endswith(mut))
        assert _separated(man, feature, base, lab), (feature, lab)
    # f16 products cannot overflow f32: no probe separates the overflow rules, and the manifest
    # says so instead of claiming it
    unsep = man["features"]["out_of_range"]["unseparated_pairs"]
    assert [base, f"{base}[overflow=ieee]"] in unsep
    _, manb = written[BF16]
    baseb = manb["theory"]["label"]
    rv = manb["features"]["zero_exp"]["rivals"]
    for mut in ("[zero_exp=excluded]", "[zero_exp=field]"):
        lab = next(r for r in rv if r.endswith(mut))
        assert _separated(manb, "zero_exp", baseb, lab), lab


def test_manifest_records_checks(written):
    _, man = written[F16]
    for p in man["probes"]:
        c = p["check"]
        assert c["method"].startswith("concrete") and c["rivals"] >= 1
        assert (c["classes"] > 1) == bool(c["separates"])
        assert set(p["inputs"]) >= {"a", "b", "c"}
    # every probe input is exact: decoding the files gives the manifest's hex
    assert all(len(p["inputs"]["a"]) == 16 for p in man["probes"])


def test_probe_values_are_exact():
    from mmaformal import fp
    from mmaformal.classes import _value
    for name in ("f16", "bf16", "e4m3", "e5m2", "e2m1", "tf32"):
        f = fp.fmt(name)
        for v in (1.0, -1.5, 2.0 ** f.emin, 2.0 ** (f.emin - f.t), 2.0 ** f.emax, 0.1, 3.0):
            b = probes._bits1(f, v)
            dt = {8: np.uint8, 16: np.uint16, 32: np.uint32}[f.storage]
            if b is not None:
                assert float(_value(f, np.array([b], dtype=dt))[0]) == v
            else:
                assert v == 0.1 or v == 3.0 and f.t < 1


def test_bad_input():
    assert cli(["probes", "no/such.instr", "--out", "/tmp/x"]) == 2
    assert cli(["probes", "sm100/tcgen05.mma.m64n8k32.block_scale.scale_vec::1X.f32.e4m3.e4m3.ue8m0",
                "--out", "/tmp/x"]) == 2


def _fp8_models(instr, labels):
    from mmaformal import isa
    from mmaformal.query import family as _family
    cands, _ = _family.get("nvidia-t-fdpa").candidates(isa.lookup(instr))
    by = {c.label: c.model for c in cands}
    return [by[x] for x in labels]


def test_fp8_probes_reach_large_F_and_renormalised_products():
    """With fp8 operands only a large U reaches eps = U 2^-F for F > 25, and a cancelling pair
    of subnormal x normal products with a tiny c tells a product's exponent field from its
    leading one (fp8 read natively vs converted to f16 first): the probes separate both."""
    from mmaformal import isa
    from mmaformal.query.infer import evaluate
    ins = isa.lookup("sm90/mma.m16n8k16.f16.e4m3.e4m3.f16")
    reg, spec = probes.dot_probes(ins)
    hm = "hmma-halves[F={},nan=0x7fff,overflow=ieee,rho=RNE-FP16,zero_sign=ieee]"
    f25, f26, f28 = _fp8_models(ins.name, [hm.format(25), hm.format(26), hm.format(28)])
    o25, o26, o28 = (evaluate(m, reg) for m in (f25, f26, f28))
    assert (o25 != o26).any() and (o26 != o28).any()
    native, conv = _fp8_models(ins.name, [
        "t-fdpa[F=25,L=16,nan=0x7fff,overflow=ieee,rho=RNE-FP16,zero_exp=excluded,zero_sign=positive]",
        "f16-t-fdpa[F=25,L=16,nan=0x7fff,overflow=ieee,rho=RNE-FP16,zero_sign=positive]"])
    norm = [i for i, t in enumerate(spec.tags) if t.startswith("probe:normalization:") and "a1=-a0" in t]
    assert norm
    sub = spec.take(norm)
    assert (evaluate(native, sub) != evaluate(conv, sub)).any()
