"""mmaformal infer over structural families: domains over convert / k_order / accumulate / L,
the built-in nvidia-fp8-mma family, and a recorded oracle that cannot separate its survivors
(the check of every recorded input, the separating probes, --probes-out, a probe directory
read back as file:DIR).

Source of the recorded data: Khattak & Mikaitis, "Accurate Models of NVIDIA Tensor Cores",
arXiv:2512.07004 (2025), github.com/north-numerical-computing/MATLAB-tensor-core
model_validation/B200/E4M3/{a,b,c}_*.txt and d_B200_fp32.txt (mma.sync.m16n8k32 e4m3 -> f32 on a
B200), through the fixture tests/data/published/khattak-mikaitis-2025.tar.zst and the helpers
of tests/test_published.py (the first few hundred dot products keep these fast)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mmaformal import isa
from mmaformal import theory as _theory
from mmaformal.cli import main as cli
from mmaformal.query import family as _family
from mmaformal.query import infer as _infer
from mmaformal.query.pool import evaluate

from test_published import km_instr, km_set

B200_F32 = "sm100/mma.m16n8k32.f32.e4m3.e4m3.f32"

#: a small structural family: every mix of the four structural keys at the catalog's Blackwell
#: F and rho (12 structures after the static merges), fast enough for a unit test
STRUCT = """
[family]
id = "struct-small"
description = "test: structural keys range"
[family.domain]
convert = ["none", "f16"]
k_order = ["natural", "mod4-pairs"]
accumulate = ["fused", "add"]
L = ["K", "K/2"]
F = [25]
rho = ["RZ-FP32"]
[[family.structure]]
name = "s"
model = "fdpa"
op = "t_fdpa"
operands = ["e4m3", "e5m2"]
[family.structure.params]
zero_exp = "excluded"
overflow = "inf"
zero_sign = "positive"
tf32_round = "RZ"
[family.structure.domain]
nan = ["nvidia"]
[[family.structure]]
name = "fixed"               # fixes its own structural keys: the shared domain does not range them
model = "fdpa"
op = "t_fdpa"
L = 16
convert = "f16"
k_order = "mod4-pairs"
accumulate = "add"
operands = ["e4m3", "e5m2"]
[family.structure.params]
zero_exp = "excluded"
overflow = "inf"
zero_sign = "positive"
tf32_round = "RZ"
[family.structure.domain]
nan = ["nvidia"]
"""


def _struct(c) -> tuple:
    t = c.model.theory
    return (t.convert or "none", t.k_order, t.accumulate, min(t.L, t.instr.k))


HMMA = ("f16", "mod4-pairs", "add", 16)
NATIVE = ("none", "natural", "fused", 32)


@pytest.fixture()
def small(tmp_path):
    p = tmp_path / "struct.toml"
    p.write_text(STRUCT)
    return _family.load(p)


@pytest.fixture(scope="module")
def b200(tmp_path_factory):
    """The first 240 B200 e4m3 -> f32 dot products as an observations file."""
    A, B, C, D = km_set("B200", "E4M3", "fp32")
    assert km_instr("B200", "E4M3", "fp32") == B200_F32
    n = 240
    p = tmp_path_factory.mktemp("b200") / "b200-e4m3-f32.npz"
    np.savez_compressed(p, a=A[:n], b=B[:n], c=C[:n], d=D[:n], instr=np.array(B200_F32))
    return p


def test_structural_keys_range(small):
    """A shared domain over convert / k_order / accumulate / L makes one candidate per
    structure (mod4-pairs inside one T-FDPA block of K is merged with natural); a structure
    that fixes them keeps its own (and is the same as the ranged hmma point: merged)."""
    cands, stats = small.candidates(B200_F32)
    structs = {_struct(c) for c in cands}
    assert len(cands) == len(structs) == 12, [c.label for c in cands]
    assert HMMA in structs and NATIVE in structs
    assert stats["merged"] == 4 + 1            # 4 one-block k_order merges + the fixed structure
    lab = next(c.label for c in cands if _struct(c) == HMMA)
    assert "convert=f16" in lab and "k_order=mod4-pairs" in lab and "accumulate=add" in lab
    none = next(c.label for c in cands if _struct(c) == NATIVE)
    assert "convert=none" in none


def test_one_block_k_order_merge_is_sound():
    """canonical_key's merge: mod4-pairs within one T-FDPA block of all K computes what natural
    order computes (fused and add), on random, special and subnormal-heavy pool inputs."""
    ins = isa.lookup(B200_F32)
    base = _theory.default().resolve(ins, "sm100.mma-fp8.k32.f32.hmma")
    chunks = list(_infer.pool_chunks(ins, seed=3))[:4]
    for acc in ("fused", "add"):
        t1 = base.replace(L=32, accumulate=acc, k_order="natural").bind(ins)
        t2 = base.replace(L=32, accumulate=acc, k_order="mod4-pairs").bind(ins)
        assert _family.canonical_key(t1) == _family.canonical_key(t2)
        m1, m2 = (_infer.Model("x", t, t, {}, False, 1) for t in (t1, t2))
        for ch in chunks:
            assert np.array_equal(evaluate(m1, ch), evaluate(m2, ch))
        # two blocks: the order acts (no merge)
        h1 = base.replace(L=16, accumulate=acc, k_order="natural").bind(ins)
        h2 = base.replace(L=16, accumulate=acc, k_order="mod4-pairs").bind(ins)
        assert _family.canonical_key(h1) != _family.canonical_key(h2)


def test_fp8_family_covers_catalog():
    """nvidia-fp8-mma holds, statically, every NVIDIA fp8 T-FDPA theory of the catalog (native
    FDPA of sm89 / sm90 wgmma / sm100 / sm120, the HMMA-halves chains of sm90 and sm100, the
    f16-then-T-FDPA rivals), on the first instruction each covers."""
    fam = _family.get("nvidia-fp8-mma")
    cat = _theory.default()
    seen: dict[str, str] = {}
    for ins in isa.catalog().values():
        if ins.vendor != "nvidia" or ins.a not in ("e4m3", "e5m2") or ins.scale or ins.sparse:
            continue
        for t in cat.theories_for(ins):
            if t.id in seen or t.op != "t_fdpa":
                continue
            m = _family.matching(t.bind(ins), {fam.id: fam})
            seen[t.id] = m[1].label if m else ""
    assert len(seen) >= 20
    assert all(seen.values()), [k for k, v in seen.items() if not v]
    assert {"sm100.mma-fp8.k32.f32.hmma", "sm100.mma-fp8.t-fdpa.f32", "sm90.fp8.f32"} <= set(seen)


def test_b200_builtin_family_keeps_hmma_refutes_native(b200):
    """The built-in nvidia-fp8-mma on the recorded B200 dot products: the HMMA-halves chain of
    the catalog (F 25, RZ-FP32) survives every recorded input; the native T-FDPA (L 32, c
    fused: the refuted sm100 reading) is ruled out by a recorded input; every survivor adds c
    after the products (accumulate = add). Probes and solver off: the recording's verdict only."""
    fam = _family.get("nvidia-fp8-mma")
    res = _infer.infer(fam, _infer.make_oracle(f"file:{b200}"), max_solver_calls=0, max_probes=0)
    cands = res["candidates"]
    alive = [cands[i] for i in res["alive"]]
    key = lambda name: _family.canonical_key(_theory.default().get(name).bind(B200_F32))
    hmma = next(c for c in cands if c.key == key("sm100.mma-fp8.k32.f32.hmma"))
    native = next(c for c in cands if c.key == key("sm100.mma-fp8.t-fdpa.f32"))
    assert hmma in alive
    assert native not in alive and cands.index(native) in res["ruled_out"]
    assert all(c.model.theory.accumulate == "add" for c in alive), [c.label for c in alive]
    assert res["checked"] == 240 and res["status"] in ("unresolved", "budget")


def test_b200_unseparated_survivors_get_probes(small, b200, tmp_path):
    """The recording leaves several structures (it pins c's IEEE add, not the halves): infer
    says so and writes the inputs that would separate them (--probes-out); run on a stand-in
    'GPU' (the catalog's hmma theory) and read back as file:DIR, they refute the rivals."""
    out = tmp_path / "P"
    res = _infer.infer(small, _infer.make_oracle(f"file:{b200}"), max_solver_calls=0,
                       probe_budget=8)
    assert _infer.exit_code(res["status"]) == 4
    text = _infer.render(res)
    assert _infer.write_probes(res, out) == out / "manifest.json"
    assert "every survivor predicts all 240 recorded inputs" in text
    assert "the recording cannot separate" in text and "probe 1 " in text
    man = json.loads((out / "manifest.json").read_text())
    assert man["instruction"] == B200_F32 and man["probes"]
    T = len(man["probes"])
    A, B, C = (np.load(out / f"{k}.npy") for k in "ABC")
    assert A.shape == (T, 16, 32) and B.shape == (T, 32, 8) and C.shape == (T, 16, 8)
    assert A.dtype == np.uint8 and C.dtype == np.uint32
    hm = next(lab for lab in man["survivors"] if "convert=f16,k_order=mod4-pairs" in lab and "L=16" in lab)
    assert any(len(p["separates"]) > 1 for p in man["probes"])
    # the stand-in GPU: the catalog's hmma theory on the tiles
    from mmaformal.simulate import simulate
    ins = isa.lookup(B200_F32)
    th = _theory.default().get("sm100.mma-fp8.k32.f32.hmma")
    D = simulate(ins, A, B, C, theory=th)
    np.save(out / "D.npy", D)
    for t, p in enumerate(man["probes"]):          # the manifest's prediction for the chain
        assert p["predictions"][hm] == f"0x{int(D[t, 0, 0]):08X}"
    res = _infer.infer(small, _infer.make_oracle(f"file:{out}"), max_solver_calls=0, max_probes=0)
    alive = {_struct(res["candidates"][i]) for i in res["alive"]}
    recorded = {_struct(c) for c in small.candidates(B200_F32)[0] if c.label in man["survivors"]}
    both = alive & recorded                     # what fits the recording and the probes' answers
    assert HMMA in both and len(recorded) > len(both)
    # left: the f16 conversion itself (exact for e4m3; no pool input separates it here)
    assert {(k, a, L) for _, k, a, L in both} == {HMMA[1:]}, both


@pytest.mark.parametrize("line, bad, needle", [
    ('F = [25]', 'F = [25]\nop = ["t_fdpa", "e_fdpa"]', "domain op cannot range"),
    ('k_order = ["natural", "mod4-pairs"]', 'k_order = ["natural", "mod4"]', "domain k_order holds 'mod4'"),
    ('accumulate = ["fused", "add"]', 'accumulate = ["fused", "sum"]', "domain accumulate holds 'sum'"),
    ('convert = ["none", "f16"]', 'convert = ["none", "f17"]', "domain convert holds 'f17'"),
])
def test_family_file_errors(tmp_path, capsys, line, bad, needle):
    """A family file with a bad structural domain: one clear line, exit code 2."""
    p = tmp_path / "bad.toml"
    assert line in STRUCT
    p.write_text(STRUCT.replace(line, bad, 1))
    assert cli(["infer", "--space", str(p), "--oracle", "theory:sm100.mma-fp8.k32.f32.hmma",
                "--instr", B200_F32]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1, err
