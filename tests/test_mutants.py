"""Negative controls: deliberately broken twins of the operations must be caught.

Each mutant runs through the very comparison that the real operation passes in
test_mma_oracle.py (conftest.compare_with_oracle: same input classes, same oracle, here on
480 cases with one fixed seed): the real operation gives no mismatch on exactly those
inputs, the mutant gives some. If a mutant ever passes, the comparison
(or its inputs) has gone blind to that kind of error.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import compare_with_oracle, lift_all, t_fdpa_spec, tr_fdpa_spec
from mmaformal import bits, mma

N_PER_KIND = 60           # 480 cases: enough to catch every mutant below, with margin

# The T-FDPA configurations the mutants are run on (Volta f16, Hopper bf16, Hopper fp8).
CONFIGS = [("f16", "f16", "f32", 4, 23, "RZ-FP32"), ("bf16", "bf16", "f32", 16, 25, "RZ-FP32"),
           ("e4m3", "e4m3", "f32", 32, 13, "RZ-E8M13")]


def _caught(op, seed=7):
    n, total, ex = compare_with_oracle(op, N_PER_KIND, seed)
    print(f"{op.id}: {n} of {total} differ")
    return n, total


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda c: f"{c[0]}-L{c[3]}-F{c[4]}-{c[5]}")
def real(request):
    op = t_fdpa_spec(*request.param)
    n, total = _caught(op)
    assert n == 0, f"the real {op.id} must pass the comparison"
    return request.param, op


def test_mutant_F_minus_1_is_caught(real):
    """T-FDPA computed with F - 1 fraction bits instead of F."""
    (fa, fb, fc, L, F, rho), op = real

    def core(A, B, C, S):
        return mma.t_fdpa(lift_all(fa, A), lift_all(fb, B), lift_all(fc, [C])[0], fa, fb, fc, F - 1, rho).v

    n, total = _caught(dataclasses.replace(op, core=core))
    assert n > 0, "T-FDPA with F-1 was not caught"


def test_mutant_output_rounding_rne_instead_of_rz_is_caught(real, monkeypatch):
    """rho = RZ-FP32 / RZ-E8M13 rounding to nearest even instead of toward zero."""
    (fa, fb, fc, L, F, rho), op = real
    fmt_name, _ = mma.RHO[rho]
    monkeypatch.setitem(mma.RHO, rho, (fmt_name, "RNE"))
    n, total = _caught(op)
    assert n > 0, "RZ -> RNE in the output conversion was not caught"


def test_mutant_alignment_rd_instead_of_rz_is_caught(real, monkeypatch):
    """The alignment of the fused sum rounding toward -inf (floor) instead of toward zero."""
    _, op = real
    align = mma._align
    monkeypatch.setattr(mma, "_align", lambda t, e, emax, F, width, mode:
                        align(t, e, emax, F, width, "RD" if mode == "RZ" else mode))
    n, total = _caught(op)
    assert n > 0, "RZ -> RD in the alignment was not caught"


# ------------------------------------------------------------------------------------------
# More twins, on other operations
# ------------------------------------------------------------------------------------------

def test_mutant_zero_exp_swapped_is_caught(monkeypatch):
    """zero_exp "excluded" read as "field" (zero terms take part in e_max)."""
    op = t_fdpa_spec("f16", "f16", "f32", 8, 24, "RZ-FP32", "excluded")
    assert _caught(op)[0] == 0
    emax = mma._emax
    monkeypatch.setattr(mma, "_emax", lambda terms, ew, zero_exp: emax(terms, ew, "field"))
    assert _caught(op)[0] > 0


def test_mutant_tr_fdpa_rz_instead_of_rd_is_caught(monkeypatch):
    """TR-FDPA aligning T and c toward zero instead of down (Algorithm 10, lines 14-15)."""
    op = tr_fdpa_spec("bf16", 8, 24, 31)
    assert _caught(op)[0] == 0

    def rz_shift(x, left, right, width):
        v = x.resize(width, True)
        v = v << left if left else v
        amt = mma.ite(right < 0, right.k.const(0, right.w, True), right).bitcast(False)
        q = (v.abs() >> amt).bitcast(True)
        return mma.ite(v < 0, -q, q)

    monkeypatch.setattr(mma, "_rd_shift", rz_shift)
    assert _caught(op)[0] > 0


def test_mutant_gtr_without_special_truncation_is_caught(monkeypatch):
    """GTR-FDPA without the special truncation of c (Algorithm 11, lines 24-25)."""
    op = tr_fdpa_spec("e5m2fnuz", 16, 24, 31, gtr=True)
    assert _caught(op)[0] == 0
    tail = mma.tr_tail
    monkeypatch.setattr(mma, "tr_tail", lambda *a, special_trunc, **kw: tail(*a, special_trunc=False, **kw))
    assert _caught(op)[0] > 0


def test_mutant_numpy_backend_shift_divergence_is_caught_by_symbolic_check(monkeypatch):
    """The symbolic = concrete check of test_symbolic.py catches a NUMPY back-end whose
    variable right shift keeps one bit where SMT-LIB's bvlshr gives 0 (amount >= width)."""
    import test_symbolic as ts
    op = next(o for o in ts.OPS if o.name.startswith("t_fdpa-f16xf16-f32-L4"))
    ts.term_of(op)
    rng = np.random.default_rng(1)
    cols = [ts.finite_codes(rng, f, ts.LANES, spread=12) for f in op.fmts]
    ts._check_batch(op, cols)                       # the real back-end passes
    clamp = bits.NumpyBackend._clamp_amount
    monkeypatch.setattr(bits.NumpyBackend, "_clamp_amount",
                        lambda self, a, limit: np.minimum(clamp(self, a, limit), limit - 1))
    with pytest.raises(AssertionError, match="z3 term != NUMPY"):
        ts._check_batch(op, cols)
