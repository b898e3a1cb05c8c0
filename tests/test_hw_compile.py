"""The harness compiles for every target it has (sm_75, sm_80, sm_89, sm_90a, sm_100a, sm_120a)
with the local nvcc, and refuses what a target lacks. No GPU needed; the nvcc tests are skipped
where nvcc is missing.

- One translation unit per target holds a representative of every class of its runnable forms
  (kind, sparsity, .kind::, operand and accumulator format, mma / wmma shape; read from the isa
  catalog through mmaformal.hw.forms, not listed here): ``nvcc -ptx`` then ``ptxas`` (what
  ``nvcc -cubin`` does), and each kernel's PTX issues its form's opcode. `-m slow`: every
  runnable form of every target (wgmma / tcgen05 at N = 8, 16 and 256).
- A form of a class another target has and this one lacks (wgmma on sm_80, tcgen05 on sm_90a,
  fp8 mma.sync before sm_89, ...) is refused by the harness in one line before any compiling;
  ptxas confirms two of them.
- The pure-Python layer: every runnable form's layout tables are bijections, the documented
  fragment examples, the name parser, the cubin cache.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from mmaformal import isa
from mmaformal.hw import forms, kernels, layouts, runner

NVCC = runner.nvcc_path() or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc")
                              else None)
PTXAS = os.path.join(os.path.dirname(os.path.realpath(NVCC)), "ptxas") if NVCC else None
needs_nvcc = pytest.mark.skipif(NVCC is None or not os.path.exists(PTXAS or ""),
                                reason="nvcc / ptxas not found")
ARCHS = list(forms.TARGETS)
ALL = forms.instructions((8, 256))


def _cls(s: forms.Spec) -> tuple:
    """The class of a form: what its kernel's PTX depends on beyond N."""
    fmt = {"bf16": "f16", "e5m2": "e4m3", "u8": "s8", "u4": "s4"}
    return (s.family, bool(s.sparse), s.kind, fmt.get(s.atype, s.atype), s.dtype,
            s.shape if s.family in ("mma", "wmma") else "", bool(s.bop))


def representatives(arch: str) -> dict[tuple, str]:
    """{class: its first runnable form} of ``arch`` (catalog order)."""
    out: dict[tuple, str] = {}
    for n in forms.instructions(None, arch):
        out.setdefault(_cls(forms.spec(n)), n)
    return out


def bundle(names: list[str]) -> str:
    """One translation unit: each form's kernel source, its names made unique (k0, k1, ...)."""
    return "\n".join(kernels.source(n).replace(kernels.KERNEL_NAME, f"k{i}")
                     .replace("mmaformal_desc", f"desc{i}") for i, n in enumerate(names))


def build(src: str, arch: str, tmp_path) -> tuple[int, str, dict[str, str]]:
    """nvcc -ptx, then ptxas for the target of ``arch``: (return code, errors, {entry: PTX})."""
    t = forms.TARGETS[arch]
    cu, ptx = tmp_path / f"{arch}.cu", tmp_path / f"{arch}.ptx"
    cu.write_text(src)
    r = subprocess.run([NVCC, "-ptx", t.nvcc_flag, "-o", str(ptx), str(cu)], capture_output=True,
                       text=True)
    if r.returncode:
        return r.returncode, r.stderr[-2000:], {}
    text = ptx.read_text()
    entries = {m[1]: m[2] for m in re.finditer(r"(?ms)^\.visible \.entry (k\d+)\((.*?)^\}", text)}
    r = subprocess.run([PTXAS, f"-arch={t.name}", "-o", str(tmp_path / f"{arch}.cubin"), str(ptx)],
                       capture_output=True, text=True)
    errs = "\n".join(ln for ln in r.stderr.splitlines() if "error" in ln.lower())
    return r.returncode, errs[-2000:], entries


@needs_nvcc
@pytest.mark.parametrize("arch", ARCHS)
def test_harness_compiles_for_the_target(arch, tmp_path):
    reps = representatives(arch)
    names = list(reps.values())
    t0 = time.perf_counter()
    rc, errs, entries = build(bundle(names), arch, tmp_path)
    assert rc == 0, errs
    for i, n in enumerate(names):
        assert forms.spec(n).ptx in entries[f"k{i}"], (n, forms.spec(n).ptx)
    sys.stderr.write(f"\n{arch}: {len(names)} forms in {time.perf_counter() - t0:.1f} s\n")


def test_each_target_has_the_kinds_its_catalog_names():
    """What each target compiles is the catalog's: the runnable kinds per architecture, read
    from the catalog, and the milestones of the PTX ISA visible in it."""
    kinds = {a: {(c[0], c[1], c[2]) for c in representatives(a)} for a in ARCHS}
    cat = {a: {i.qualifier for i in isa.instructions(arch=a)} for a in ARCHS}
    assert "mma.m16n8k8.f32.f16.f16.f32" in cat["sm75"]            # Turing: m16n8k8 f16
    assert "mma.m16n8k16.f32.f16.f16.f32" not in cat["sm75"]       # m16n8k16 from sm_80
    assert "mma.m16n8k16.f32.f16.f16.f32" in cat["sm80"]
    fp8 = "mma.m16n8k32.f32.e4m3.e4m3.f32"
    assert fp8 not in cat["sm80"] and all(fp8 in cat[a] for a in ("sm89", "sm90", "sm120"))
    assert {a for a in ARCHS if ("wgmma", False, "") in kinds[a]} == {"sm90"}
    assert {a for a in ARCHS if ("tcgen05", False, "f16") in kinds[a]} == {"sm100"}
    assert {a for a in ARCHS if ("mma", False, "f8f6f4") in kinds[a]} == {"sm120"}
    assert all(("mma", True, "") in kinds[a] for a in ("sm80", "sm89", "sm90", "sm100", "sm120"))
    assert all(("wmma", False, "") in kinds[a] for a in ARCHS)
    for a in ARCHS:                                       # every runnable form is a catalog form
        assert {forms.spec(n).qualifier for n in forms.instructions(None, a)} <= cat[a]


@pytest.mark.parametrize("arch", ARCHS)
def test_a_form_the_target_lacks_is_refused_in_one_line(arch):
    """For every class of form that another target has and this one lacks, its first form
    compiled for this target: ValueError, one line, before nvcc runs (so no nvcc needed)."""
    here = set(representatives(arch))
    lacking = {}
    for other in ARCHS:
        for c, n in representatives(other).items():
            if c not in here:
                lacking.setdefault(c, n)
    assert lacking or arch == "sm90"
    for n in lacking.values():
        with pytest.raises(ValueError, match=f"runs {arch} forms only") as e:
            runner.compile_cubin(n, arch=arch)
        assert "\n" not in str(e.value)


@needs_nvcc
@pytest.mark.parametrize("name,arch", [("sm90/wgmma.m64n8k16.f32.f16.f16", "sm80"),
                                       ("sm100/tcgen05.mma.m128n16k16.kind::f16.f32.f16.f16",
                                        "sm90")])
def test_ptxas_confirms_the_refusal(name, arch, tmp_path):
    """The harness's refusal is real: wgmma does not assemble for sm_80, tcgen05 not for
    sm_90a."""
    with pytest.raises(ValueError, match="runs .* forms only"):
        runner.compile_cubin(name, arch=arch)
    rc, errs, _ = build(bundle([name]), arch, tmp_path)
    assert rc != 0 and errs


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
def test_every_runnable_form_compiles(arch, tmp_path):
    names = forms.instructions((8, 16, 256), arch)
    rc, errs, entries = build(bundle(names), arch, tmp_path)
    assert rc == 0, errs
    assert len(entries) == len(names)


# ---------------------------------------------------------------------------------------------
# pure Python: forms, tables, names
# ---------------------------------------------------------------------------------------------


def test_covered_list():
    assert len(ALL) == len(set(ALL))
    for need in ["sm90/mma.m16n8k16.f32.f16.f16.f32", "sm90/mma.m16n8k16.f32.bf16.bf16.f32",
                 "sm90/mma.m16n8k8.f32.f16.f16.f32", "sm90/mma.m16n8k8.f32.bf16.bf16.f32",
                 "sm90/mma.m16n8k16.f16.f16.f16.f16", "sm90/mma.m16n8k8.f32.tf32.tf32.f32",
                 "sm90/mma.m16n8k4.f32.tf32.tf32.f32", "sm90/mma.m16n8k32.f32.e4m3.e4m3.f32",
                 "sm90/mma.m16n8k32.f32.e5m2.e5m2.f32", "sm90/mma.m8n8k4.f64.f64.f64.f64",
                 "sm90/mma.m16n8k4.f64.f64.f64.f64", "sm90/mma.m16n8k8.f64.f64.f64.f64",
                 "sm90/mma.m16n8k16.f64.f64.f64.f64"]:
        assert need in ALL
    for n in (8, 256):
        for q in ("k16.f32.f16.f16", "k16.f16.f16.f16", "k16.f32.bf16.bf16", "k8.f32.tf32.tf32",
                  "k32.f32.e4m3.e4m3", "k32.f32.e5m2.e5m2"):
            assert f"sm90/wgmma.m64n{n}{q}" in ALL


def test_sm90_coverage_is_the_catalog():
    """Every sm90 catalog form runs (the H100 campaigns covered them all); elsewhere what does
    not run says why."""
    cat = [i for i in isa.instructions() if i.vendor == "nvidia"]
    assert set(forms.instructions(None, "sm90")) == {i.name for i in cat if i.arch == "sm90"}
    runs = {n for a in ARCHS for n in forms.instructions(None, a)}
    for i in cat:
        why = forms.refusal(i)
        assert (why == "") == (i.name in runs), i.name
        assert "\n" not in why


@pytest.mark.parametrize("cc,arch", [((7, 5), "sm75"), ((8, 0), "sm80"), ((8, 9), "sm89"),
                                     ((9, 0), "sm90"), ((10, 0), "sm100"), ((12, 0), "sm120"),
                                     ((8, 6), None), ((7, 0), None)])
def test_compute_capability_names_the_target(cc, arch):
    assert forms.arch_of_cc(*cc) == arch


def _table_names():
    out = forms.instructions((8, 16, 136, 256))
    for a in ARCHS:
        if a != "sm90":
            out += list(representatives(a).values())
    return out


@pytest.mark.parametrize("name", _table_names())
def test_tables_are_bijections(name):
    s = forms.spec(name)
    t = layouts.operand_tables(name)
    for role, (r, c) in (("a", (s.m, s.a_cols)), ("b", (s.k, s.n)), ("c", (s.m, s.n)),
                         ("d", (s.m, s.n))):
        v = t[role][t[role] >= 0]
        assert np.array_equal(np.sort(v), np.arange(s.group * r * c)), role
    # register images: whole 32-bit words per thread
    per_thread_bytes = len(t["c"]) * s.storage("c").itemsize // s.threads
    assert per_thread_bytes % 4 == 0


def test_documented_fragment_examples():
    # PTX ISA m16n8k16 f16: lane 5 (groupID 1, threadID_in_group 1) holds A[1][2], A[1][3] in
    # a0,a1, A[9][2..3] in a2,a3, A[1][10..11] in a4,a5; B[2..3][1] in b0,b1; C[1][2..3] c0,c1.
    t = layouts.operand_tables("sm90/mma.m16n8k16.f32.f16.f16.f32")
    lane = 5
    a = [t["a"][(w * 32 + lane) * 2 + h] for w in range(4) for h in range(2)]
    assert [divmod(x, 16) for x in a] == [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10), (1, 11),
                                          (9, 10), (9, 11)]
    b = [t["b"][(w * 32 + lane) * 2 + h] for w in range(2) for h in range(2)]
    assert [divmod(x, 8) for x in b] == [(2, 1), (3, 1), (10, 1), (11, 1)]
    c = [t["c"][w * 32 + lane] for w in range(4)]
    assert [divmod(x, 8) for x in c] == [(1, 2), (1, 3), (9, 2), (9, 3)]
    # PTX ISA m8n8k4 f16 (quad-pairs): lane 21 is in quad-pair 1 (tile 1), high group, so it
    # holds row 5 of A (a0..a3 = k 0..3), column 5 of B; f32 C element i=6: row (21&1)+(6&2)+4
    # = 7, col (6&4)+(21&2)+(6&1) = 4; f16 C element i=6: row 5, col 6.
    t = layouts.operand_tables("sm90/mma.m8n8k4.f32.f16.f16.f16")
    lane = 21
    a = [t["a"][(w * 32 + lane) * 2 + h] for w in range(2) for h in range(2)]
    assert [(x // 32, divmod(x % 32, 4)) for x in a] == [(1, (5, k)) for k in range(4)]
    b = [t["b"][(w * 32 + lane) * 2 + h] for w in range(2) for h in range(2)]
    assert [(x // 32, divmod(x % 32, 8)) for x in b] == [(1, (k, 5)) for k in range(4)]
    d6 = int(t["d"][6 * 32 + lane])
    assert (d6 // 64, divmod(d6 % 64, 8)) == (1, (7, 4))
    c6 = int(t["c"][(3 * 32 + lane) * 2 + 0])
    assert (c6 // 64, divmod(c6 % 64, 8)) == (1, (5, 6))
    # wgmma D: thread 37 (warp 1, lane 5) element 4 -> row 17, col 10
    t = layouts.operand_tables("sm90/wgmma.m64n16k16.f32.f16.f16")
    assert divmod(int(t["c"][4 * 128 + 37]), 16) == (17, 10)
    # tcgen05 M = 128 (tensor-memory layout D): thread 37 reads lane 37 = row 37, register j =
    # column j; the instruction descriptor: f32 D, f16 A and B, N >> 3 at bit 17, M >> 4 at 24
    name = "sm100/tcgen05.mma.m128n32k16.kind::f16.f32.f16.f16"
    t = layouts.operand_tables(name)
    assert divmod(int(t["d"][5 * 128 + 37]), 32) == (37, 5)
    assert kernels.instr_desc(forms.spec(name)) == (1 << 4) | (4 << 17) | (8 << 24)
    e = forms.spec("sm100/tcgen05.mma.m128n256k32.kind::f8f6f4.f32.e5m2.e4m3")
    assert kernels.instr_desc(e) == (1 << 4) | (1 << 7) | (32 << 17) | (8 << 24)
    assert kernels.tmem_cols(e) == 256 and kernels.tmem_cols(forms.spec(name)) == 32


@pytest.mark.parametrize("bad", ["mma.m16n8k16.f32.f16.f16.f32", "sm90/mma.m16n8k16.f32.f16.f16.f16",
                                 "sm90/wgmma.m64n12k16.f32.f16.f16",
                                 "sm90/wgmma.m64n264k16.f32.f16.f16", "sm90/wgmma.m64n8k16.f16.bf16.bf16",
                                 "sm90/foo", "sm70/mma.m8n8k4.f32.f16.f16.f32",
                                 "sm100/tcgen05.mma.m64n8k16.kind::f16.f32.f16.f16",
                                 "sm120/mma.m16n8k32.kind::f8f6f4.f32.e2m1.e2m1.f32"])
def test_bad_names(bad):
    with pytest.raises(ValueError) as e:
        forms.spec(bad)
    assert "\n" not in str(e.value)


def test_tcgen05_m128_takes_n_in_steps_of_8():
    """PTX ISA tcgen05.mma "Matrix Shape" (Table "Various combinations of .kind and shapes"):
    cta_group::1 takes 128xNxK for N = 8..256 step 8 (steps of 16 are cta_group::2's rule), so
    every catalog N of M = 128 with f32 D and 8/16/32-bit operands runs."""
    ns = {forms.spec(n).n for n in forms.instructions(None, "sm100", family="tcgen05")}
    assert ns == set(range(8, 257, 8))
    for n in (8, 24, 104, 248):
        s = forms.spec(f"sm100/tcgen05.mma.m128n{n}k16.kind::f16.f32.bf16.bf16")
        assert kernels.instr_desc(s) == (1 << 4) | (1 << 7) | (1 << 10) | (n // 8 << 17) | (8 << 24)
        src = kernels.source(s.name)
        assert sum(int(x) for x in re.findall(r"tcgen05\.ld\.sync\.aligned\.32x32b\.x(\d+)", src)) == n
    t = layouts.operand_tables("sm100/tcgen05.mma.m128n24k8.kind::tf32.f32.tf32.tf32")
    assert divmod(int(t["d"][17 * 128 + 37]), 24) == (37, 17)


def test_alias_hopper():
    assert forms.spec("hopper/mma.m16n8k8.f32.tf32.tf32.f32").name == \
        "sm90/mma.m16n8k8.f32.tf32.tf32.f32"


@needs_nvcc
def test_compile_cubin_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MMAFORMAL_HW_CACHE", str(tmp_path))
    monkeypatch.setenv("MMAFORMAL_HW_BACKEND", "nvcc")
    if runner.nvcc_path() is None:
        monkeypatch.setenv("MMAFORMAL_NVCC", NVCC)
    p1 = runner.compile_cubin("sm90/mma.m16n8k8.f32.tf32.tf32.f32")
    m1 = p1.stat().st_mtime_ns
    p2 = runner.compile_cubin("sm90/mma.m16n8k8.f32.tf32.tf32.f32")
    assert p1 == p2 and p2.stat().st_mtime_ns == m1 and p1.suffix == ".cubin"
    p3 = runner.compile_cubin("sm75/mma.m16n8k8.f32.f16.f16.f32")   # the form's own target
    assert p3 != p1 and p3.stat().st_size > 0


def test_runner_import_is_light():
    code = ("import sys; import mmaformal.hw.runner, mmaformal.hw.sass; "
            "assert 'cupy' not in sys.modules; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_mma_mnemonics_parser():
    from mmaformal.hw.sass import mma_mnemonics

    text = "\n".join([
        "        /*0300*/                   F2FP.F16.E4M3.UNPACK_B R12, R18 ;   /* 0x000 */",
        "        /*03a0*/                   HMMA.16816.F32 R8, R8, R12, RZ ;     /* 0x000 */",
        "        /*0f20*/                   QGMMA.64x8x32.F32.E4M3.E4M3 R24, gdesc[UR4], R24, gsb0 ;",
        "        /*0310*/               @P0 DMMA.8x8x4 R4, R12, R14, R4 ;",
        "        /*0440*/                   FADD R7, R7, R8 ;",
    ])
    assert mma_mnemonics(text) == ["HMMA.16816.F32", "QGMMA.64x8x32.F32.E4M3.E4M3", "DMMA.8x8x4"]


@needs_nvcc
def test_sass_of_one_kernel(tmp_path, monkeypatch):
    from mmaformal.hw import sass

    monkeypatch.setenv("MMAFORMAL_HW_CACHE", str(tmp_path))
    if runner.nvcc_path() is None:
        monkeypatch.setenv("MMAFORMAL_NVCC", NVCC)
    if sass.cuobjdump_path() is None:
        with pytest.raises(runner.HardwareUnavailable, match="cuobjdump"):
            sass.sass("sm90/mma.m16n8k16.f64.f64.f64.f64")
        pytest.skip("cuobjdump not found")
    _, mn = sass.sass("sm90/mma.m16n8k16.f64.f64.f64.f64")
    assert mn == ["DMMA.16x8x16"]  # as seen on the H100 run (SASS.md)
