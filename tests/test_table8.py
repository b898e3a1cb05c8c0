"""[Xie2025] sec. 5, Table 8: the discrepancy example of Equation 10 through `simulate`.

    a = (-2^13, -0.5, -0.25, -0.125, 0, ...), b = (2^10, 1, 1, 1, 0, ...), c = 2^23
    (row 0 of A, column 0 of B, C[0, 0]; everything else zero)

The exact result is -0.875; Table 8 lists what each architecture's instructions give. Every
family the table lists is run on real catalog instruction names.

Notes on the inputs:
- The "FP16 Instr." column is f16 operands with an f32 accumulator: an f16 C cannot hold 2^23.
- FP8: -2^13 and 2^10 are not e4m3 values, so the e5m2 instructions run Equation 10 as it is
  (CDNA3: e5m2fnuz, "bf8"), and the e4m3 (CDNA3: e4m3fnuz) instructions run an exactly scaled
  equivalent (every term times 2^-7, resp. 2^-9, all values normal), whose result is the Table 8
  value times the same power of two (the truncation grid is relative to e_max, so it scales).
- FP32/FP64 rows give the exact -0.875 (the FMA chain), per the table caption.

Also: K-chaining (Algorithm 5): an instruction with K > L runs ceil(K/L) FDPA blocks through the
accumulator, which differs from one fused block on a distinguishing input.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import mmaformal
from mmaformal import isa, trace
from mmaformal import theory as T
from mmaformal.bits import INT
from mmaformal.simulate import bits_of, storage_dtype, value_of

A10 = [-2 ** 13, -0.5, -0.25, -0.125]
B10 = [2 ** 10, 1, 1, 1]
C10 = 2 ** 23

# exactly scaled equivalents for formats without 2^13 / 2^10: (a, b, c, scale)
SCALED = {
    "e4m3": ([-2 ** 8, -2 ** -4, -2 ** -4, -2 ** -5], [2 ** 8, 2 ** -4, 2 ** -5, 2 ** -5], 2 ** 16, Fraction(1, 2 ** 7)),
    "e4m3fnuz": ([-2 ** 7, -2 ** -5, -2 ** -5, -2 ** -6], [2 ** 7, 2 ** -5, 2 ** -6, 2 ** -6], 2 ** 14, Fraction(1, 2 ** 9)),
}

# (instruction, Table 8 value): every (architecture, family) cell of the table
TABLE8 = [
    # Volta, Turing: FP16 only
    ("sm70/mma.m8n8k4.f32.f16.f16.f32", 0),
    ("sm75/mma.m16n8k8.f32.f16.f16.f32", -0.5),
    # Ampere
    ("sm80/mma.m16n8k8.f32.tf32.tf32.f32", -0.5),
    ("sm80/mma.m16n8k4.f32.tf32.tf32.f32", -0.5),
    ("sm80/mma.m16n8k16.f32.bf16.bf16.f32", -0.5),
    ("sm80/mma.m16n8k8.f32.bf16.bf16.f32", -0.5),
    ("sm80/mma.m16n8k16.f32.f16.f16.f32", -0.5),
    ("sm80/mma.m16n8k8.f32.f16.f16.f32", -0.5),
    # Ada Lovelace
    ("sm89/mma.m16n8k8.f32.tf32.tf32.f32", -0.5),
    ("sm89/mma.m16n8k16.f32.bf16.bf16.f32", -0.5),
    ("sm89/mma.m16n8k16.f32.f16.f16.f32", -0.5),
    ("sm89/mma.m16n8k32.f32.e5m2.e5m2.f32", 0),
    ("sm89/mma.m16n8k16.f32.e5m2.e5m2.f32", 0),
    ("sm89/mma.m16n8k32.f32.e4m3.e4m3.f32", 0),
    # Hopper (mma.sync and wgmma; fp8 through QGMMA and through the HMMA emulation of mma.sync)
    ("sm90/mma.m16n8k8.f32.tf32.tf32.f32", -0.75),
    ("sm90/wgmma.m64n8k8.f32.tf32.tf32", -0.75),
    ("sm90/mma.m16n8k16.f32.bf16.bf16.f32", -0.75),
    ("sm90/wgmma.m64n8k16.f32.bf16.bf16", -0.75),
    ("sm90/mma.m16n8k16.f32.f16.f16.f32", -0.75),
    ("sm90/wgmma.m64n16k16.f32.f16.f16", -0.75),
    ("sm90/wgmma.m64n8k32.f32.e5m2.e5m2", 0),
    ("sm90/wgmma.m64n8k32.f32.e4m3.e4m3", 0),
    ("sm90/mma.m16n8k32.f32.e5m2.e5m2.f32", 0),
    ("sm90/mma.m16n8k16.f32.e4m3.e4m3.f32", 0),
    # Blackwell (tcgen05 and mma.sync)
    ("sm100/tcgen05.mma.m64n8k8.kind::tf32.f32.tf32.tf32", -0.75),
    ("sm100/tcgen05.mma.m64n8k16.kind::f16.f32.bf16.bf16", -0.75),
    ("sm100/tcgen05.mma.m64n8k16.kind::f16.f32.f16.f16", -0.75),
    ("sm100/mma.m16n8k16.f32.f16.f16.f32", -0.75),
    ("sm100/tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e5m2.e5m2", -0.75),
    ("sm100/tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e4m3.e4m3", -0.75),
    ("sm100/tcgen05.mma.m128n8k32.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e5m2.e5m2.ue8m0", -0.75),
    # RTX Blackwell
    ("sm120/mma.m16n8k8.f32.tf32.tf32.f32", -0.75),
    ("sm120/mma.m16n8k16.f32.bf16.bf16.f32", -0.75),
    ("sm120/mma.m16n8k16.f32.f16.f16.f32", -0.75),
    ("sm120/mma.m16n8k32.f32.e5m2.e5m2.f32", -0.75),
    ("sm120/mma.m16n8k32.kind::f8f6f4.f32.e5m2.e5m2.f32", -0.75),
    ("sm120/mma.m16n8k32.kind::f8f6f4.f32.e4m3.e4m3.f32", -0.75),
    ("sm120/mma.m16n8k32.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e5m2.e5m2.f32.ue8m0", -0.75),
    # CDNA1: E-FDPA
    ("gfx908/v_mfma_f32_32x32x4bf16", -0.875),
    ("gfx908/v_mfma_f32_16x16x8bf16", -0.875),
    ("gfx908/v_mfma_f32_32x32x8f16", -0.875),
    ("gfx908/v_mfma_f32_16x16x16f16", -0.875),
    # CDNA2: FTZ-AddMul ("-0.375 or 0.0": bf16 without / with _1k)
    ("gfx90a/v_mfma_f32_32x32x4bf16", -0.375),
    ("gfx90a/v_mfma_f32_16x16x8bf16", -0.375),
    ("gfx90a/v_mfma_f32_32x32x8bf16_1k", 0),
    ("gfx90a/v_mfma_f32_16x16x16bf16_1k", 0),
    ("gfx90a/v_mfma_f32_32x32x8f16", 0),
    ("gfx90a/v_mfma_f32_16x16x16f16", 0),
    # CDNA3: TR-FDPA, GTR-FDPA
    ("gfx942/v_mfma_f32_16x16x8_xf32", -0.5),
    ("gfx942/v_mfma_f32_32x32x4_xf32", -0.5),
    ("gfx942/v_mfma_f32_32x32x8_bf16", -0.5),
    ("gfx942/v_mfma_f32_32x32x8_f16", -0.5),
    ("gfx942/v_mfma_f32_16x16x32_bf8_bf8", -1),
    ("gfx942/v_mfma_f32_32x32x16_bf8_bf8", -1),
    ("gfx942/v_mfma_f32_16x16x32_fp8_fp8", -1),
    # FP32 / FP64 (caption): the exact -0.875 everywhere
    ("gfx908/v_mfma_f32_16x16x4f32", -0.875),
    ("gfx90a/v_mfma_f32_16x16x4f32", -0.875),
    ("gfx90a/v_mfma_f64_16x16x4f64", -0.875),
    ("gfx942/v_mfma_f32_16x16x4_f32", -0.875),
    ("gfx942/v_mfma_f64_16x16x4_f64", -0.875),
    ("sm80/mma.m8n8k4.f64.f64.f64.f64", -0.875),
    ("sm90/mma.m16n8k16.f64.f64.f64.f64", -0.875),
    ("sm100/mma.m16n8k4.f64.f64.f64.f64", -0.875),
    ("sm120/mma.m8n8k4.f64.f64.f64.f64", -0.875),
]


def _tiles(ins, a_vals, b_vals, c_val, batch=()):
    A = np.zeros(batch + (ins.m, ins.k), dtype=storage_dtype(ins.a))
    B = np.zeros(batch + (ins.k, ins.n), dtype=storage_dtype(ins.b))
    C = np.zeros(batch + (ins.m, ins.n), dtype=storage_dtype(ins.c))
    for k, (x, y) in enumerate(zip(a_vals, b_vals)):
        A[..., 0, k] = bits_of(Fraction(x), ins.a)
        B[..., k, 0] = bits_of(Fraction(y), ins.b)
    C[..., 0, 0] = bits_of(Fraction(c_val), ins.c)
    scales = {}
    if ins.scale:
        one = {"ue8m0": 0x7F, "ue4m3": 0x38}[ins.scale]
        nb = ins.k // ins.scale_block
        scales = dict(scale_a=np.full(batch + (ins.m, nb), one, np.uint8),
                      scale_b=np.full(batch + (nb, ins.n), one, np.uint8))
    return A, B, C, scales


def _inputs(ins):
    if ins.a in SCALED:
        a, b, c, s = SCALED[ins.a]
        return a, b, c, s
    return A10, B10, C10, Fraction(1)


def test_table8_covers_every_cell():
    archs = {isa.lookup(n).arch for n, _ in TABLE8}
    assert archs == set(isa.ARCHS)


@pytest.mark.parametrize("name,expected", TABLE8, ids=[n for n, _ in TABLE8])
def test_table8(name, expected):
    ins = isa.lookup(name)
    a, b, c, scale = _inputs(ins)
    A, B, C, sc = _tiles(ins, a, b, c)
    D = mmaformal.simulate(name, A, B, C, **sc)
    assert D.shape == (ins.m, ins.n) and D.dtype == storage_dtype(ins.d)
    got = value_of(int(D[0, 0]), ins.d)
    want = Fraction(expected) * scale
    assert (Fraction(0) if got in ("0", "-0") else got) == want, (name, got, want)
    # every other element is c = +0 plus zero products: +0
    rest = D.copy()
    rest[0, 0] = 0
    assert not rest.any()


def test_table8_e5m2_and_scaled_e4m3_agree():
    """The scaled e4m3 input is an exact equivalent: same truncation pattern on every arch."""
    for e5, e4 in [("sm89/mma.m16n8k32.f32.e5m2.e5m2.f32", "sm89/mma.m16n8k32.f32.e4m3.e4m3.f32"),
                   ("sm100/tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e5m2.e5m2",
                    "sm100/tcgen05.mma.m64n8k32.kind::f8f6f4.f32.e4m3.e4m3")]:
        vals = []
        for n in (e5, e4):
            ins = isa.lookup(n)
            a, b, c, s = _inputs(ins)
            A, B, C, sc = _tiles(ins, a, b, c)
            v = value_of(int(mmaformal.simulate(n, A, B, C, **sc)[0, 0]), ins.d)
            vals.append((Fraction(0) if isinstance(v, str) else v) / s)
        assert vals[0] == vals[1]


def test_table8_f16_accumulator_cannot_hold_c():
    assert bits_of(Fraction(C10), "f16") is None


def test_table8_batched_broadcast():
    """The same example in a batch of tiles (leading dims broadcast)."""
    name = "sm90/mma.m16n8k16.f32.f16.f16.f32"
    ins = isa.lookup(name)
    A, B, C, _ = _tiles(ins, A10, B10, C10, batch=(3,))
    D = mmaformal.simulate(name, A[:, None], B[None], C[0])     # (3, 3, M, N)
    assert D.shape == (3, 3, ins.m, ins.n)
    assert {int(x) for x in D[..., 0, 0].ravel()} == {0xBF400000}


# --------------------------------------------------------------------------------------------
# K-chaining (Algorithm 5)


def _blocks(theory, ins, a, b, c):
    with trace.tracing() as notes:
        wa, wb, wc = (np.dtype(storage_dtype(f)).itemsize * 8 for f in (ins.a, ins.b, ins.c))
        d = theory.dot(INT, [INT.const(x, wa, False) for x in a], [INT.const(x, wb, False) for x in b],
                       INT.const(c, wc, False))
    return int(d.v), [v for v in notes if isinstance(v, trace.BlockIn)]


@pytest.mark.parametrize("name,L,nblocks", [
    ("sm80/mma.m16n8k16.f32.f16.f16.f32", 8, 2),
    ("sm89/mma.m16n8k32.f32.e5m2.e5m2.f32", 16, 2),
    ("gfx942/v_mfma_f32_16x16x8_xf32", 4, 2),
    ("gfx908/v_mfma_f32_16x16x8bf16", 2, 4),
    ("sm90/mma.m16n8k16.f32.f16.f16.f32", 16, 1),
])
def test_chain_runs_ceil_K_over_L_blocks(name, L, nblocks):
    ins = isa.lookup(name)
    th = T.resolve(ins)
    assert min(th.L, ins.k) == L and -(-ins.k // L) == nblocks
    _, blocks = _blocks(th, ins, [0] * ins.k, [0] * ins.k, 0)
    assert [blk.k0 for blk in blocks] == list(range(0, ins.k, L))


def test_chaining_differs_from_one_fused_block():
    """sm80 f16 m16n8k16: L = 8, two blocks. -2^23 in block 0 and the small products in block 1:
    the chain cancels exactly in block 0 and then adds the small terms (-0.875); one fused block
    of 17 terms aligns everything at 2^23 with 24 fraction bits and keeps only -0.5."""
    name = "sm80/mma.m16n8k16.f32.f16.f16.f32"
    ins = isa.lookup(name)
    a = [0] * 16
    b = [0] * 16
    a[0], b[0] = bits_of(Fraction(-2 ** 13), "f16"), bits_of(Fraction(2 ** 10), "f16")
    for k, v in zip((8, 9, 10), (-0.5, -0.25, -0.125)):
        a[k], b[k] = bits_of(Fraction(v), "f16"), bits_of(Fraction(1), "f16")
    c = bits_of(Fraction(C10), "f32")
    chained = T.resolve(ins)
    fused = chained.replace(L=16)
    d_chain, blocks = _blocks(chained, ins, a, b, c)
    d_fused, fblocks = _blocks(fused, ins, a, b, c)
    assert len(blocks) == 2 and len(fblocks) == 1
    assert value_of(d_chain, "f32") == Fraction(-7, 8)
    assert value_of(d_fused, "f32") == Fraction(-1, 2)
    # and through simulate, on the real instruction name
    A, B, C, _ = _tiles(ins, [], [], C10)
    A[0, :] = a
    B[:, 0] = b
    assert int(mmaformal.simulate(name, A, B, C)[0, 0]) == d_chain
    assert int(mmaformal.simulate(name, A, B, C, theory=fused)[0, 0]) == d_fused
    # with Equation 10 itself (all terms in block 0) chaining and fusing agree (-0.5)
    a10 = [bits_of(Fraction(x), "f16") for x in A10] + [0] * 12
    b10 = [bits_of(Fraction(x), "f16") for x in B10] + [0] * 12
    assert _blocks(chained, ins, a10, b10, c)[0] == _blocks(fused, ins, a10, b10, c)[0] == 0xBF000000
