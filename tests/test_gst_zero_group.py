"""mma.gst_fdpa's `zero_group` (issue 15): which group term counts as a zero term in e_max.

The probe of docs/mmasim-notes.md item 2 (bench/mmasim_semantics_probes.py "GST-FDPA: a group
that cancels to 0 keeps its scale exponent"): block 0 scaled by 2^20 * 2^20 holds a group whose
products cancel (6*6 - 6*6); block 1 (scale 1) holds 0.5 * 0.5. With zero_group = "sum" the
cancelled group is a zero term and the result is 0.25 (0x3E800000); with "products" it keeps its
scale exponent 40, so 0.25 is truncated away at 2^(40-35) and the result is +0, mmasim 2.1.1's
0x00000000. The expected bits are worked out by hand above, not computed by mmaformal.
"""
import numpy as np
import pytest

import mmaformal
from mmaformal import isa, theory as T

INSTR = "sm120/mma.m16n8k64.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0"


def _run(th):
    ins = isa.lookup(INSTR)
    A = np.zeros((ins.m, ins.k), np.uint8)
    B = np.zeros((ins.k, ins.n), np.uint8)
    C = np.zeros((ins.m, ins.n), np.uint32)
    A[0, 0], B[0, 0] = 0x7, 0x7          # 6 * 6
    A[0, 1], B[1, 0] = 0xF, 0x7          # -6 * 6
    A[0, 32], B[32, 0] = 0x1, 0x1        # 0.5 * 0.5 (block 1)
    SA = np.full((ins.m, 2), 127, np.uint8)
    SB = np.full((2, ins.n), 127, np.uint8)
    SA[0, 0] = SB[0, 0] = 127 + 20
    return int(mmaformal.simulate(ins, A, B, C, scale_a=SA, scale_b=SB, theory=th)[0, 0])


@pytest.mark.parametrize("zero_group, zero_exp, want", [
    ("sum", "excluded", 0x3E800000),
    ("sum", -139, 0x3E800000),
    ("products", -139, 0x00000000),
])
def test_cancelled_group(zero_group, zero_exp, want):
    th = T.default().resolve(INSTR).replace(zero_group=zero_group, zero_exp=zero_exp)
    assert _run(th) == want


def test_primary_is_mmasims_reading():
    th = T.default().resolve(INSTR)
    assert th.param_dict["zero_group"] == "products" and th.param_dict["zero_exp"] == -139
    assert _run(None) == 0x00000000
    assert _run("sm120.mxf4.zero-excluded") == 0x3E800000


def test_bad_zero_group():
    with pytest.raises(ValueError, match="zero_group"):
        T.default().resolve(INSTR).replace(zero_group="both")
