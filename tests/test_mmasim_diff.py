"""Witnesses of the mmasim 2.1.1 differential (bench/bench_mmasim_diff.py, docs/mmasim-notes.md
sec. 7): each instruction, raw-bit input and the documented outputs of mmaformal's primary
theory, its rival, and mmasim (checked against mmasim itself when it is importable).

Source: docs/mmasim-notes.md sec. 4 items 4 and 5, sec. 7 (2026-11-28 run: classes subtiny,
zeros, neartie).
"""
from __future__ import annotations

import numpy as np
import pytest

import mmaformal
from mmaformal import isa

# (what, instruction, mmasim suffix, nonzero (k, a bits, b bits), c bits,
#  {theory id: documented bits}, mmasim bits)
WITNESSES = [
    # item 5 through a K chain (K 16, L 8): block 0 all zero, the carry case of item 5 in block 1
    ("tail carry in block 1 of a chain", "gfx942/v_mfma_f32_16x16x16_f16", "f32_16x16x16_f16",
     [(8, 0x1000, 0x1000), (9, 0x0100, 0x0200)], 0x3FFFFFFF,
     {"gfx942.f16": 0x40000001, "gfx942.f16.mmasim-tail": 0x40000000}, 0x40000000),
    # item 5 (and sec. 3.2's zero c at -126): c = +0, products -1.625*2^-70 * 2^-69, 2^-75 * 2^-75,
    # 2^-80 * 2^-79 (sum -(1663.5 - 2^-10) 2^-149):
    ("tiny negative near a tie, c = +0", "gfx942/v_mfma_f32_32x32x8_bf16", "f32_32x32x8_bf16",
     [(0, 0x9CD0, 0x1D00), (3, 0x1A00, 0x1A00), (5, 0x1780, 0x1800)], 0x00000000,
     {"gfx942.bf16": 0x8000067F, "gfx942.bf16.mmasim-tail": 0x80000680}, 0x80000680),
    # item 4: every term -0 (products -0 * 1, c = -0): IEEE -0 in both our readings, +0 in mmasim
    ("all terms -0", "gfx942/v_mfma_f32_32x32x8_bf16", "f32_32x32x8_bf16",
     [(k, 0x8000, 0x3F80) for k in range(8)], 0x80000000,
     {"gfx942.bf16": 0x80000000, "gfx942.bf16.mmasim-tail": 0x80000000}, 0x00000000),
]


def _rows(ins, nz, c):
    dt = {16: np.uint16, 32: np.uint32}
    a = np.zeros((1, ins.k), dt[16])
    b = np.zeros((1, ins.k), dt[16])
    for k, x, y in nz:
        a[0, k], b[0, k] = x, y
    return a, b, np.array([c], dt[32])


def _ours(ins, a, b, c, th):
    """One dot product through mmaformal.simulate, in row 0 / column 0 of one tile."""
    A = np.zeros((1, ins.m, ins.k), a.dtype)
    B = np.zeros((1, ins.k, ins.n), b.dtype)
    C = np.zeros((1, ins.m, ins.n), c.dtype)
    A[0, 0], B[0, :, 0], C[0, 0, 0] = a[0], b[0], c[0]
    return int(mmaformal.simulate(ins, A, B, C, theory=th)[0, 0, 0])


@pytest.mark.parametrize("what,name,suffix,nz,c,ours,theirs", WITNESSES, ids=[w[0] for w in WITNESSES])
def test_witness(what, name, suffix, nz, c, ours, theirs):
    ins = isa.lookup(name)
    a, b, cc = _rows(ins, nz, c)
    got = {th: _ours(ins, a, b, cc, th) for th in ours}
    assert got == ours, (what, {k: hex(v) for k, v in got.items()})


@pytest.mark.parametrize("what,name,suffix,nz,c,ours,theirs", WITNESSES, ids=[w[0] for w in WITNESSES])
def test_witness_against_mmasim(what, name, suffix, nz, c, ours, theirs):
    torch = pytest.importorskip("torch")
    amd = pytest.importorskip("mmasim.amd")
    ins = isa.lookup(name)
    a, b, cc = _rows(ins, nz, c)
    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[ins.a]
    t = lambda x: torch.from_numpy(x.view(np.int16)).view(dt)  # noqa: E731
    d = amd.MFMA("CDNA3", suffix).dpa(t(a), t(b), torch.from_numpy(cc.view(np.int32)).view(torch.float32))
    assert int(d.view(torch.int32).numpy().view(np.uint32)[0]) == theirs, what
