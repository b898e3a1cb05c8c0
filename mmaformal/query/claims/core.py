"""Layer 5, query/claims/core: what prove's built-in claims say, and their concrete side.

CLAIMS (the claim names), SYMMETRY_STATEMENT, `outcome` (the result dict of one claim), and the
concrete predicates that check a witness without a solver: `value_lt` (real order of two
outputs), negation and ~ on concrete bit patterns, and the Table 9 error bound of one input
(`bound_concrete`, exact Fractions, over the blocks of a traced evaluation, `bound_blocks`).
Shared by prove (replay of its witnesses) and cex (replay of stored counterexamples).

May import: mmaformal.query.model, .frame, the layers below (simulate lazily).
Invariant: exact arithmetic only (Fraction, integers); nothing here calls a solver.
"""
from __future__ import annotations

from fractions import Fraction

from ... import fp, mma, trace
from ...bits import INT
from ..frame import InternalError
from ..model import Model, Witness, approx_equal, concrete_inputs, neg_bits

__all__ = ["CLAIMS", "SYMMETRY_STATEMENT", "SYMMETRY_STATEMENT_INT", "outcome", "value_lt", "neg_witness", "neg_int",
           "approx_int", "bound_blocks", "bound_concrete"]

CLAIMS = ("equiv", "symmetry", "monotonic", "bound", "unobservable")

SYMMETRY_STATEMENT = (
    "Phi(-A, B, -C) ~ -Phi(A, B, C) for every input, where -x flips the sign bit (fnuz "
    "formats: 0x00 and the NaN 0x80 are their own negations) and x ~ y means bitwise equal, "
    "except that any two NaN outputs are equal and any two zero outputs (+0, -0) are equal")
#: the same claim for integer instructions (negation and equality as integers do them)
SYMMETRY_STATEMENT_INT = (
    "Phi(-A, B, -C) = -Phi(A, B, C) for every input, where -x is the two's complement negation "
    "of a signed integer (wrapping: the most negative value is its own negation; unsigned "
    "operands are not negated) and = means bitwise equal")


def outcome(status, claim, models, seconds, solver="", witness=None, **kw) -> dict:
    d = {"status": status, "claim": claim, "witness": witness, "solver": solver,
         "seconds": round(seconds, 3), "models": [m.spec() for m in models], "method": "",
         "parts": [], "twin": None, "saved": [], "reason": "", "detail": {}}
    d.update(kw)
    return d


# ============================================================================================
# Concrete checks
# ============================================================================================

def value_lt(x: int, y: int, f: str) -> bool:
    """x < y as real numbers (both non-NaN; +0 = -0; +-Inf at the ends)."""
    from ...simulate import value_of
    def key(v):
        v = value_of(v, f)
        if v in ("inf", "-inf"):
            return (1 if v == "inf" else -1, 0)
        return (0, Fraction(0) if v in ("0", "-0") else v)
    return key(x) < key(y)


def neg_witness(w: Witness) -> Witness:
    n = lambda v, f: int(neg_bits(INT.const(v, fp.fmt(f).storage, False), f).v)
    return Witness(w.fa, w.fb, w.fc, [n(x, w.fa) for x in w.a], list(w.b), n(w.c, w.fc), w.fs,
                   w.scale_a, w.scale_b)


def approx_int(x: int, y: int, f: str) -> bool:
    s = fp.fmt(f).storage
    return bool(approx_equal(INT.const(x, s, False), INT.const(y, s, False), f).v)


def neg_int(x: int, f: str) -> int:
    return int(neg_bits(INT.const(x, fp.fmt(f).storage, False), f).v)


def bound_blocks(m: Model, notes: list):
    """[(E, n, all-zero flag or None), block output] per block of the traced evaluation
    (`notes`: mmaformal.trace records)."""
    th = m.theory
    ems, outs = [], []
    for v in notes:
        if isinstance(v, trace.FusedSum) and th.op == "t_fdpa":
            allz = None
            for t in v.terms:
                allz = t.zero if allz is None else allz & t.zero
            ems.append((v.e_max, len(v.terms), allz))
        elif isinstance(v, trace.TrTail):
            # TR/GTR: the L products fused and truncated, c added after: n = L + 1 at E
            ems.append((v.E, min(th.L, m.k) + 1, None))
        elif isinstance(v, trace.BlockOut):
            outs.append(v.d)
    if len(ems) != len(outs):
        raise InternalError(f"bound: trace has {len(ems)} sums for {len(outs)} blocks")
    return list(zip(ems, outs))


def bound_concrete(m: Model, w: Witness, F_claim: int | None = None):
    """(exact, |error|, bound) of the Table 9 claim for one input, with exact Fractions."""
    from ...simulate import value_of
    th = m.theory
    p = th.param_dict
    rf, rmode, sf = mma.rho_of(p.get("rho", "RNE-FP32"))
    F = p["F"] if F_claim is None else F_claim
    wp = w.padded(m.k)
    exact = Fraction(value_of(wp.c, w.fc) if value_of(wp.c, w.fc) not in ("0", "-0") else 0)
    for a, b in zip(wp.a, wp.b):
        va, vb = value_of(a, w.fa), value_of(b, w.fb)
        va = Fraction(0) if va in ("0", "-0") else va
        vb = Fraction(0) if vb in ("0", "-0") else vb
        exact += va * vb
    with trace.tracing() as notes:
        d = m.dot(INT, *concrete_inputs(INT, wp))
    B = Fraction(0)
    for (E, n, allz), dj in bound_blocks(m, notes):
        if allz is None or not bool(allz.v):
            B += n * Fraction(2) ** (E.v - F)
        u = fp.decode(sf, dj)
        B += Fraction(2) ** (u.exp.v - rf.t) * (Fraction(1, 2) if rmode == "RNE" else 1)
    vd = value_of(int(d.v), sf.name)
    vd = Fraction(0) if vd in ("0", "-0") else vd
    return exact, abs(vd - exact), B
