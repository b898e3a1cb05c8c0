"""Every covered instruction's generated kernel assembles for sm_90a with the local nvcc.

No GPU needed; skipped where nvcc is missing. Also checks the pure-Python layout tables (each
one a bijection onto the matrix) and the name parser.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from mmaformal.hw import kernels, runner

ALL = kernels.instructions((8, 256))
NVCC = runner.nvcc_path() or ("/usr/local/bin/nvcc" if os.path.exists("/usr/local/bin/nvcc")
                              else None)


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


@pytest.mark.parametrize("name", kernels.instructions((8, 16, 136, 256)))
def test_tables_are_bijections(name):
    s = kernels.spec(name)
    t = kernels.operand_tables(name)
    for role, (r, c) in (("a", (s.m, s.a_cols)), ("b", (s.k, s.n)), ("c", (s.m, s.n)),
                         ("d", (s.m, s.n))):
        assert np.array_equal(np.sort(t[role]), np.arange(s.group * r * c)), role
    # register images: whole 32-bit words per thread
    per_thread_bytes = len(t["c"]) * s.storage("c").itemsize // s.threads
    assert per_thread_bytes % 4 == 0


def test_documented_fragment_examples():
    # PTX ISA m16n8k16 f16: lane 5 (groupID 1, threadID_in_group 1) holds A[1][2], A[1][3] in
    # a0,a1, A[9][2..3] in a2,a3, A[1][10..11] in a4,a5; B[2..3][1] in b0,b1; C[1][2..3] c0,c1.
    t = kernels.operand_tables("sm90/mma.m16n8k16.f32.f16.f16.f32")
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
    t = kernels.operand_tables("sm90/mma.m8n8k4.f32.f16.f16.f16")
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
    t = kernels.operand_tables("sm90/wgmma.m64n16k16.f32.f16.f16")
    assert divmod(int(t["c"][4 * 128 + 37]), 16) == (17, 10)


@pytest.mark.parametrize("bad", ["mma.m16n8k16.f32.f16.f16.f32", "sm80/mma.m16n8k16.f32.f16.f16.f32",
                                 "sm90/mma.m16n8k16.f32.f16.f16.f16", "sm90/wgmma.m64n12k16.f32.f16.f16",
                                 "sm90/wgmma.m64n264k16.f32.f16.f16", "sm90/wgmma.m64n8k16.f16.bf16.bf16",
                                 "sm90/foo"])
def test_bad_names(bad):
    with pytest.raises(ValueError):
        kernels.spec(bad)


def test_alias_hopper():
    assert kernels.spec("hopper/mma.m16n8k8.f32.tf32.tf32.f32").name == \
        "sm90/mma.m16n8k8.f32.tf32.tf32.f32"


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_all_kernels_compile_for_sm90a(tmp_path):
    def comp(name):
        cu = tmp_path / (name.replace("/", "_") + ".cu")
        cu.write_text(kernels.source(name))
        r = subprocess.run([NVCC, "-cubin", runner.ARCH_FLAG, "-o", str(cu.with_suffix(".cubin")),
                            str(cu)], capture_output=True, text=True)
        return name, r.returncode, r.stderr

    with ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1))) as ex:
        results = list(ex.map(comp, ALL))
    failed = [(n, err[-500:]) for n, rc, err in results if rc != 0]
    assert not failed, failed
    for name in ALL:
        assert (tmp_path / (name.replace("/", "_") + ".cubin")).stat().st_size > 0


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_compile_cubin_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MMAFORMAL_HW_CACHE", str(tmp_path))
    monkeypatch.setenv("MMAFORMAL_HW_BACKEND", "nvcc")
    if runner.nvcc_path() is None:
        monkeypatch.setenv("MMAFORMAL_NVCC", NVCC)
    p1 = runner.compile_cubin("sm90/mma.m16n8k8.f32.tf32.tf32.f32")
    m1 = p1.stat().st_mtime_ns
    p2 = runner.compile_cubin("sm90/mma.m16n8k8.f32.tf32.tf32.f32")
    assert p1 == p2 and p2.stat().st_mtime_ns == m1 and p1.suffix == ".cubin"


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


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
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
