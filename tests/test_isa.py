"""Tests of layer 4a (mmaformal.isa): the instruction tables and their loader."""

from __future__ import annotations

import ast
import collections
import dataclasses
import textwrap
from pathlib import Path

import pytest

from mmaformal import isa
from mmaformal.isa import Instruction, UnknownInstruction, lookup


@pytest.fixture(scope="module")
def cat() -> dict[str, Instruction]:
    return isa.catalog()


def names_on(cat, arch):
    return {i.qualifier for i in cat.values() if i.arch == arch}


# --------------------------------------------------------------------------------------------
# Layering and the shape of the catalog


def test_layer_imports_stdlib_only():
    src = Path(isa.__file__).read_text()
    tree = ast.parse(src)
    assert ast.get_docstring(tree), "module needs a docstring"
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:        # the one relative import: the stdlib-only table cache
                assert (node.level, node.module) == (2, "_cache"), "no imports of other layers"
                continue
            mods.add(node.module.split(".")[0])
    assert mods <= {"__future__", "dataclasses", "difflib", "fnmatch", "functools",
                    "itertools", "re", "tomllib", "pathlib", "typing"}, mods
    from mmaformal import _cache
    tree = ast.parse(Path(_cache.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, "mmaformal._cache imports the standard library only"


def _issue14(i) -> bool:
    """The families added by issue 14 (integer, sparse, wmma), counted apart below."""
    return i.integer or i.family in ("wmma", "smfmac") or getattr(i, "sparse", False)


def test_every_arch_present_and_counts_plausible(cat):
    counts = collections.Counter(i.arch for i in cat.values() if not _issue14(i))
    assert set(counts) == set(isa.ARCHS)
    # Exact counts of the reviewed tables; a change here must be a deliberate data change.
    assert counts == {
        "sm70": 3, "sm75": 5, "sm80": 12, "sm89": 28, "sm90": 415, "sm100": 4383,
        "sm120": 109, "gfx908": 15, "gfx90a": 22, "gfx942": 27,
    }
    fam = collections.Counter((i.arch, i.family) for i in cat.values() if not _issue14(i))
    assert fam[("sm90", "wgmma")] == 384         # (2 f16 + 1 bf16 + 1 tf32 + 8 fp8) x 32 N
    assert fam[("sm100", "tcgen05")] == 4352
    assert fam[("sm120", "mma")] == 109
    # NVIDIA archs only gain mma forms (PTX: "sm_XX or higher"), except nothing is lost.
    nv = [a for a in isa.ARCHS if a.startswith("sm")]
    for older, newer in zip(nv, nv[1:]):
        old_mma = {q for q in names_on(cat, older) if q.startswith("mma.")}
        new_mma = {q for q in names_on(cat, newer) if q.startswith("mma.")}
        assert old_mma <= new_mma, (older, newer, sorted(old_mma - new_mma)[:5])


def test_integer_counts(cat):
    """Integer forms per (arch, family); Source: PTX ISA 9.7.14.5.14 / 9.7.15, AMD CDNA ISA."""
    fam = collections.Counter((i.arch, i.family) for i in cat.values()
                              if i.integer and not i.sparse and i.family != "wmma")
    # sm75: m8n8k16 8-bit (4 type pairs x 2 sat) + m8n8k32 4-bit (8) + m8n8k128 b1 xor (1)
    # sm80+: 3 8-bit shapes x 8 + 3 4-bit shapes x 8 + b1 (3 shapes x xor/and) = 54
    # sm90 wgmma: 18 N (8, 16, 24, 32..256 step 16; ptxas 13.0 refuses the other multiples of
    # 8, mmaformal/isa/sass_sm90a.txt) x 4 type pairs x 2 sat = 144; AMD: 5 i8 forms per CDNA generation
    assert dict(fam) == {
        ("sm75", "mma"): 17, ("sm80", "mma"): 54, ("sm89", "mma"): 54, ("sm90", "mma"): 54,
        ("sm100", "mma"): 54, ("sm120", "mma"): 54, ("sm90", "wgmma"): 144,
        ("gfx908", "mfma"): 5, ("gfx90a", "mfma"): 5, ("gfx942", "mfma"): 5,
    }
    i = cat["sm90/mma.m16n8k32.satfinite.s32.u8.s8.s32"]
    assert (i.a, i.b, i.c, i.d, i.satfinite, i.bop) == ("u8", "s8", "s32", "s32", True, "")
    i = cat["sm80/mma.m16n8k256.s32.b1.b1.s32.and.popc"]
    assert (i.k, i.bop, i.satfinite) == (256, "and", False)
    assert "sm75/mma.m8n8k128.s32.b1.b1.s32.and.popc" not in cat     # .and needs sm_80
    assert "sm75/mma.m16n8k32.s32.s8.s8.s32" not in cat              # m16n8 needs sm_80
    assert "sm80/mma.m8n8k256.s32.b1.b1.s32.xor.popc" not in cat     # not a PTX shape
    i = cat["gfx942/v_mfma_i32_32x32x4_2b_i8"]
    assert (i.a, i.c, i.blocks, i.k) == ("s8", "s32", 2, 4)
    assert isa.lookup("sm_90a/mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32").name \
        == "sm90/mma.m16n8k32.satfinite.s32.s8.s8.s32"
    assert isa.lookup("hopper/wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.u8").name \
        == "sm90/wgmma.m64n8k32.s32.s8.u8"


def test_sparse_counts(cat):
    """Sparse forms per (arch, family); Source: PTX ISA 9.7.14.6 / 9.7.15.6, AMD CDNA3 SMFMAC."""
    fam = collections.Counter((i.arch, i.family) for i in cat.values() if i.sparse)
    # sm80 mma.sp x {sp, sp::ordered_metadata}: f16 2 shapes x 2 acc (4) + bf16 2 + tf32 2
    # + s8/u8 2 shapes x 4 pairs x 2 sat (16) + s4/u4 16 = 40 x 2 = 80; sm89+: + e4m3/e5m2
    # m16n8k64 4 pairs x 2 = 8. sm90 wgmma.sp: 32 N x (2 f16 + 1 bf16 + 1 tf32 + 8 fp8) = 384
    # + 18 N (8, 16, 24, 32..256 step 16) x 4 pairs x 2 sat = 144. gfx942: 14 v_smfmac.
    assert dict(fam) == {
        ("sm80", "mma"): 80, ("sm89", "mma"): 88, ("sm90", "mma"): 88, ("sm100", "mma"): 88,
        ("sm120", "mma"): 88, ("sm90", "wgmma"): 528, ("gfx942", "smfmac"): 14,
    }
    i = cat["sm90/mma.sp::ordered_metadata.m16n8k32.f32.f16.f16.f32"]
    assert (i.k, i.sparse, i.sparsity) == (32, "sp::ordered_metadata", (4, 2))
    assert cat["sm90/mma.sp.m16n8k64.s32.u4.s4.s32"].sparsity == (8, 4)    # aligned pairs
    assert "sm90/wgmma.sp.m64n256k64.satfinite.s32.u8.s8" in cat
    assert cat["sm90/mma.sp.m16n8k16.f32.tf32.tf32.f32"].sparsity == (2, 1)
    assert isa.lookup("sm_90a/mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.satfinite"
                      ".s32.s8.u8.s32").name == "sm90/mma.sp::ordered_metadata.m16n8k64.satfinite.s32.s8.u8.s32"
    assert isa.lookup("hopper/wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16").name \
        == "sm90/wgmma.sp.m64n8k32.f32.f16.f16"
    assert isa.lookup("sm90/mma.sp.m16n8k32.f32.f16.f16.f32").sparse == "sp"
    i = cat["gfx942/v_smfmac_f32_16x16x64_fp8_bf8"]
    assert (i.a, i.b, i.k, i.sparse) == ("e4m3fnuz", "e5m2fnuz", 64, "smfmac")
    assert "sm80/mma.sp.m16n8k64.f32.e4m3.e4m3.f32" not in cat          # fp8 needs sm_89


def test_catalog_order_and_caching(cat):
    assert isa.catalog() is cat
    archs = [i.arch for i in cat.values()]
    order = [isa.ARCHS.index(a) for a in archs]
    assert order == sorted(order)
    assert list(isa.ARCHS) == ["sm70", "sm75", "sm80", "sm89", "sm90", "sm100", "sm120",
                               "gfx908", "gfx90a", "gfx942"]


def test_fields_are_consistent(cat):
    for name, i in cat.items():
        assert name == i.name == f"{i.arch}/{i.qualifier}"
        assert i.vendor == ("nvidia" if i.arch.startswith("sm") else "amd")
        assert i.a in isa.OPERAND_FORMATS and i.b in isa.OPERAND_FORMATS
        assert i.c in isa.ACC_FORMATS and i.d in isa.ACC_FORMATS
        assert i.source
        if i.scale:
            assert i.scale in isa.SCALE_FORMATS and i.scale_block in (16, 32)
            assert i.k % i.scale_block == 0
        else:
            assert i.scale_block == 0
        if i.family in ("wgmma", "tcgen05", "mfma"):
            assert i.c == i.d
    with pytest.raises(dataclasses.FrozenInstanceError):
        next(iter(cat.values())).m = 1


# --------------------------------------------------------------------------------------------
# Lookup


def test_every_name_round_trips(cat):
    for name, i in cat.items():
        assert lookup(name) is i


def test_aliases(cat):
    pairs = {
        "volta": "sm70", "turing": "sm75", "ampere": "sm80", "ada": "sm89", "hopper": "sm90",
        "blackwell": "sm100", "rtx-blackwell": "sm120", "cdna1": "gfx908", "cdna2": "gfx90a",
        "cdna3": "gfx942",
    }
    assert isa.ALIASES == pairs
    assert lookup("hopper/mma.m16n8k16.f32.f16.f16.f32") is cat["sm90/mma.m16n8k16.f32.f16.f16.f32"]
    assert lookup("Volta/mma.m8n8k4.f32.f16.f16.f32").arch == "sm70"
    assert lookup("cdna2/v_mfma_f32_32x32x8bf16_1k").arch == "gfx90a"
    assert lookup("rtx-blackwell/mma.m16n8k32.kind::f8f6f4.f32.e2m1.e3m2.f32").arch == "sm120"
    for alias, arch in pairs.items():
        some = next(i for i in cat.values() if i.arch == arch)
        assert lookup(f"{alias}/{some.qualifier}") is some


def test_ptx_spellings_are_accepted(cat):
    assert lookup("sm90/mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") is \
        cat["sm90/mma.m16n8k16.f32.f16.f16.f32"]
    assert lookup("sm_90a/wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2") is \
        cat["sm90/wgmma.m64n128k32.f32.e4m3.e5m2"]
    assert lookup("sm70/mma.sync.aligned.m8n8k4.col.row.f16.f16.f16.f16").qualifier == \
        "mma.m8n8k4.f16.f16.f16.f16"
    # kind before shape, as some code writes it; scale_vec defaulted; .block16 alias.
    assert lookup("sm120/mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32"
                  ".row.col.f32.e5m2.e5m2.f32.ue8m0").k == 32
    assert lookup("sm120/mma.m16n8k32.kind::mxf8f6f4.block_scale.f32.e4m3.e2m1.f32.ue8m0") \
        .scale_block == 32
    assert lookup("sm120/mma.m16n8k64.kind::mxf4nvf4.block_scale.block16.f32.e2m1.e2m1.f32"
                  ".ue4m3").scale == "ue4m3"
    assert lookup("sm100/tcgen05.mma.cta_group::1.m128n256k16.kind::f16.f32.bf16.bf16").n == 256
    assert lookup("gfx942/V_MFMA_F32_32X32X8_F16") is cat["gfx942/v_mfma_f32_32x32x8_f16"]


def test_unknown_names_suggest_close_ones():
    with pytest.raises(UnknownInstruction) as e:
        lookup("sm90/mma.m16n8k16.f32.f16.f16.f16")
    assert isinstance(e.value, ValueError)
    assert "sm90/mma.m16n8k16.f32.f16.f16.f32" in e.value.suggestions
    assert 1 <= len(e.value.suggestions) <= 5
    assert "sm90/mma.m16n8k16.f32.f16.f16.f32" in str(e.value)

    with pytest.raises(UnknownInstruction) as e:   # CDNA2 spelling on CDNA3
        lookup("gfx942/v_mfma_f32_32x32x8f16")
    assert e.value.suggestions[0] == "gfx942/v_mfma_f32_32x32x8_f16"

    with pytest.raises(UnknownInstruction) as e:   # typo in a format
        lookup("sm100/tcgen05.mma.m128n256k32.kind::f8f6f4.f32.e4m3.e4m4")
    assert e.value.suggestions[0] == "sm100/tcgen05.mma.m128n256k32.kind::f8f6f4.f32.e4m3.e4m3"

    with pytest.raises(UnknownInstruction) as e:   # no arch
        lookup("mma.m16n8k16.f32.f16.f16.f32")
    assert "sm80/mma.m16n8k16.f32.f16.f16.f32" in e.value.suggestions

    with pytest.raises(UnknownInstruction) as e:   # misspelt arch
        lookup("hoper/mma.m16n8k16.f32.f16.f16.f32")
    assert "unknown arch" in str(e.value)
    assert "sm90/mma.m16n8k16.f32.f16.f16.f32" in e.value.suggestions

    with pytest.raises(UnknownInstruction) as e:   # exists, but on later archs
        lookup("volta/mma.m16n8k16.f32.bf16.bf16.f32")
    assert "exists on sm80" in str(e.value)


def test_instructions_filter(cat):
    assert len(isa.instructions()) == len(cat)
    wg = [i for i in isa.instructions("hopper/wgmma.*") if not _issue14(i)]
    assert len(wg) == 384 and all(i.family == "wgmma" for i in wg)
    assert isa.instructions("sm90/wgmma.m64n*k32.f16.e5m2.e4m3")[0].n == 8
    sub = isa.instructions("mxf4nvf4")
    assert {i.arch for i in sub} == {"sm100", "sm120"}
    assert {i.name for i in isa.instructions(arch="cdna3", family="mfma")} == \
        {n for n, i in cat.items() if i.arch == "gfx942" and i.family == "mfma"}
    assert isa.instructions("no-such-thing") == []
    with pytest.raises(ValueError):
        isa.instructions(arch="pascal")


# --------------------------------------------------------------------------------------------
# Facts the tables must hold (PTX ISA, AMD ISA guides, [Xie2025])


def test_nvidia_facts(cat):
    sm90 = names_on(cat, "sm90")
    assert "mma.m16n8k16.f32.f16.f16.f32" in sm90
    assert "wgmma.m64n256k16.f32.bf16.bf16" in sm90
    assert "mma.m16n8k32.f32.e4m3.e5m2.f32" in sm90
    assert "wgmma.m64n8k16.f16.f16.f16" in sm90
    assert "wgmma.m64n8k16.f16.bf16.bf16" not in sm90           # bf16: f32 accumulator only
    assert "wgmma.m64n264k16.f32.f16.f16" not in sm90
    assert {f"wgmma.m64n{n}k8.f32.tf32.tf32" for n in range(8, 257, 8)} <= sm90
    assert "mma.m16n8k16.f64.f64.f64.f64" in sm90
    assert "mma.m16n8k16.f64.f64.f64.f64" not in names_on(cat, "sm80")
    assert "sm80/mma.m16n8k8.f32.tf32.tf32.f32" in cat
    assert "sm70/mma.m8n8k4.f32.f16.f16.f32" in cat
    assert "sm70/mma.m8n8k4.f16.f16.f16.f32" not in cat          # c = f32 needs d = f32
    assert "sm120/mma.m8n8k4.f32.f16.f16.f32" in cat             # still legal PTX on sm_120
    assert "sm80/mma.m16n8k16.f32.f16.f16.f16" not in cat        # m16n8k16: c = d
    # sm70: f16 only (no bf16, tf32, f64, fp8); sm75 adds m16n8k8; fp8 from sm89.
    for arch in ("sm70", "sm75"):
        assert {(i.a, i.b) for i in cat.values() if i.arch == arch and not _issue14(i)} == \
            {("f16", "f16")}
    assert not any("bf16" in q for q in names_on(cat, "sm70"))
    assert not any("e4m3" in q for q in names_on(cat, "sm80"))
    assert "mma.m16n8k32.f16.e5m2.e5m2.f16" in names_on(cat, "sm89")
    # Families per arch: wgmma only on sm90, tcgen05 only on sm100.
    fams = collections.defaultdict(set)
    for i in cat.values():
        if i.family != "wmma":
            fams[i.arch].add(i.family)
    assert fams["sm90"] == {"mma", "wgmma"}
    assert fams["sm100"] == {"mma", "tcgen05"}
    assert fams["sm120"] == {"mma"}


def test_sm120_block_scale(cat):
    bs = [i for i in cat.values() if i.arch == "sm120" and i.scale]
    assert len(bs) == 25 + 1 + 2
    assert {(i.scale, i.scale_block) for i in bs} == {("ue8m0", 32), ("ue4m3", 16)}
    nvfp4 = cat["sm120/mma.m16n8k64.kind::mxf4nvf4.block_scale.scale_vec::4X"
                ".f32.e2m1.e2m1.f32.ue4m3"]
    assert (nvfp4.shape, nvfp4.scale, nvfp4.scale_block) == ((16, 8, 64), "ue4m3", 16)
    mx = cat["sm120/mma.m16n8k32.kind::mxf8f6f4.block_scale.scale_vec::1X"
             ".f32.e3m2.e2m1.f32.ue8m0"]
    assert (mx.a, mx.b, mx.c, mx.d, mx.scale_block) == ("e3m2", "e2m1", "f32", "f32", 32)
    f8f6f4 = [i for i in cat.values() if i.arch == "sm120" and "kind::f8f6f4" in i.name]
    assert len(f8f6f4) == 50
    assert {i.a for i in f8f6f4} == {"e4m3", "e5m2", "e3m2", "e2m3", "e2m1"}
    assert not any(i.scale for i in cat.values() if i.arch not in ("sm100", "sm120"))


def test_sm100_tcgen05(cat):
    t = [i for i in cat.values() if i.family == "tcgen05"]
    assert {i.arch for i in t} == {"sm100"}
    assert "sm100/tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e4m3.e4m3" in cat
    assert "sm100/tcgen05.mma.m128n256k16.kind::f16.f16.f16.f16" in cat
    assert "sm100/tcgen05.mma.m128n256k16.kind::f16.f16.bf16.bf16" not in cat
    assert "sm100/tcgen05.mma.m64n8k8.kind::tf32.f32.tf32.tf32" in cat
    scaled = [i for i in t if i.scale]
    assert {i.m for i in scaled} == {128}                          # block scale: M = 128
    assert {i.m for i in t if not i.scale} == {64, 128}
    assert {i.n for i in t} == set(range(8, 257, 8))
    assert "sm100/tcgen05.mma.m128n128k64.kind::mxf4nvf4.block_scale.scale_vec::4X" \
           ".f32.e2m1.e2m1.ue4m3" in cat
    assert {i.k for i in t if "mxf4" in i.name} == {64}


def test_amd_facts(cat):
    g942 = names_on(cat, "gfx942")
    assert "v_mfma_f32_32x32x8_f16" in g942
    fp8 = {q for q in g942 if q.endswith(("fp8", "bf8")) and q.startswith("v_mfma")}
    assert fp8 == {f"v_mfma_f32_{s}_{x}_{y}" for s in ("16x16x32", "32x32x16")
                   for x in ("fp8", "bf8") for y in ("fp8", "bf8")}
    i = cat["gfx942/v_mfma_f32_16x16x32_fp8_bf8"]
    assert (i.a, i.b, i.c, i.d) == ("e4m3fnuz", "e5m2fnuz", "f32", "f32")
    x = cat["gfx942/v_mfma_f32_16x16x8_xf32"]
    assert (x.a, x.b, x.shape) == ("tf32", "tf32", (16, 16, 8))
    assert {"v_mfma_f64_16x16x4_f64", "v_mfma_f64_4x4x4_4b_f64"} <= g942
    assert cat["gfx942/v_mfma_f64_4x4x4_4b_f64"].blocks == 4
    assert cat["gfx942/v_mfma_f32_4x4x1_16b_f32"].blocks == 16
    g90a = names_on(cat, "gfx90a")
    k1 = {q for q in g90a if q.endswith("_1k")}
    assert k1 == {"v_mfma_f32_32x32x4bf16_1k", "v_mfma_f32_16x16x4bf16_1k",
                  "v_mfma_f32_4x4x4bf16_1k", "v_mfma_f32_32x32x8bf16_1k",
                  "v_mfma_f32_16x16x16bf16_1k"}
    assert {"v_mfma_f64_16x16x4f64", "v_mfma_f64_4x4x4f64"} <= g90a
    g908 = names_on(cat, "gfx908")
    assert g908 < g90a                                  # CDNA2 keeps all CDNA1 fp forms
    assert not any(q.endswith("_1k") or "f64" in q for q in g908)
    assert not any("xf32" in q or "fp8" in q for q in g90a)
    assert not any("_1k" in q for q in g942)
    assert all(i.family in ("mfma", "smfmac") and not i.scale for i in cat.values() if i.vendor == "amd")


# --------------------------------------------------------------------------------------------
# The loader rejects malformed data


GOOD = """
[meta]
vendor = "nvidia"

[[instruction]]
arch = "sm80"
family = "mma"
qualifier = "mma.m16n8k16.{d}.f16.f16.{c}"
m = 16
n = 8
k = 16
a = "f16"
b = "f16"
cd = [["f32", "f32"]]
source = "test"
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "t.toml"
    p.write_text(textwrap.dedent(text))
    return p


def test_loader_accepts_good_file(tmp_path):
    got = isa.load(write(tmp_path, GOOD))
    assert list(got) == ["sm80/mma.m16n8k16.f32.f16.f16.f32"]


@pytest.mark.parametrize("old,new,message", [
    ('source = "test"', 'source = "test"\nsauce = "x"', "unknown key"),
    ('a = "f16"', 'a = "fp16"', "unknown format name 'fp16'"),
    ('b = "f16"', 'b = "ue8m0"', "not allowed for b"),
    ('arch = "sm80"', 'arch = "sm86"', "unknown arch 'sm86'"),
    ('arch = "sm80"', 'arch = "ampere"', "canonical name 'sm80'"),
    ('arch = "sm80"', 'arch = "gfx942"', "not a nvidia arch"),
    ('family = "mma"', 'family = "xmma"', "unknown family"),
    ('k = 16', 'k = 8', "must be m16n8k8"),
    ('a = "f16"', 'a = "bf16"', "must end with"),
    ('cd = [["f32", "f32"]]', 'cd = [["f32", "f32"], ["f32", "f32"]]', "duplicate"),
    ('cd = [["f32", "f32"]]', 'c = "f32"', "accumulator formats"),
    ('source = "test"', 'source = "test"\nscale = "ue8m0"', "go together"),
    ('qualifier = "mma.m16n8k16.{d}.f16.f16.{c}"',
     'qualifier = "mma.m16n8k16.{D}.f16.f16.{ctype}"', "unknown placeholder"),
    ('n = 8', 'n = { from = 8, to = 256 }', "from, to, step"),
    ('m = 16', 'm = 16\nm = 16', "not valid TOML"),
])
def test_loader_rejects(tmp_path, old, new, message):
    assert old in GOOD
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        isa.load(write(tmp_path, GOOD.replace(old, new, 1)))


def test_loader_rejects_duplicates_across_files(tmp_path):
    a = write(tmp_path, GOOD)
    b = tmp_path / "u.toml"
    b.write_text(GOOD)
    with pytest.raises(ValueError, match="duplicate instruction name"):
        isa.load(a, b)


def test_loader_rejects_bad_amd_names(tmp_path):
    amd = """
    [[instruction]]
    arch = "gfx942"
    family = "mfma"
    qualifier = "v_mfma_f32_32x32x4_2b_f16"
    m = 32
    n = 32
    k = 4
    blocks = 2
    a = "f16"
    b = "f16"
    c = "f32"
    d = "f32"
    source = "test"
    """
    assert len(isa.load(write(tmp_path, amd))) == 1
    for old, new, message in [
        ("blocks = 2", "blocks = 4", "2 blocks"),
        ('a = "f16"', 'a = "bf16"', r"name says \(a, b\)"),
        ('qualifier = "v_mfma_f32_32x32x4_2b_f16"', 'qualifier = "v_mfma_f32_32x32x4f16"',
         "after '_'"),
        ('family = "mfma"', 'family = "mma"', "does not exist on gfx942"),
        ('family = "mfma"', 'family = "wgmma"', "does not exist on gfx942"),
    ]:
        with pytest.raises(ValueError, match=message):
            isa.load(write(tmp_path, amd.replace(old, new, 1)))


def test_loader_checks_block_scale(tmp_path):
    scaled = """
    [[instruction]]
    arch = "sm120"
    family = "mma"
    qualifier = "mma.m16n8k64.kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.{scale}"
    m = 16
    n = 8
    k = 64
    a = "e2m1"
    b = "e2m1"
    c = "f32"
    d = "f32"
    scale = "ue4m3"
    scale_block = 16
    source = "test"
    """
    (i,) = isa.load(write(tmp_path, scaled)).values()
    assert (i.scale, i.scale_block) == ("ue4m3", 16)
    for old, new, message in [
        ("scale_block = 16", "scale_block = 32", "scale_block \\* V = k"),
        ('scale = "ue4m3"', 'scale = "e4m3"', "not allowed for scale"),
        ('scale = "ue4m3"', 'scale = "ue5m3"', "unknown format name 'ue5m3'"),
        (".block_scale.scale_vec::4X", "", "goes with .block_scale"),
    ]:
        with pytest.raises(ValueError, match=message):
            isa.load(write(tmp_path, scaled.replace(old, new, 1)))
