"""Layer 3, trace: the white-box trace of one evaluation, as typed records.

The elementary operations (mmaformal.mma), the theory's composition (mmaformal.theory) and the
chained models of the query layer call `record(note)` at their key steps; `with tracing() as
notes:` collects the records of the evaluations run inside, in order. One small frozen dataclass
per kind of step; its fields are the values at that step (`BV`/`Bool` of the back-end that
runs, `mma.Term`s, and static Python values). mmaformal.explain renders them; the claims of
mmaformal.query.claims cut the symbolic terms at them (isinstance on the record types).

May import: the standard library only (field types are named in annotations, not imported).
Invariants: recording never changes a result (a record only holds references to values the
operation computed anyway); records are made in evaluation order; with tracing off, `record`
does nothing.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

__all__ = [
    "TRACE", "record", "tracing",
    # mma: the fused sum and the FDPA family
    "FusedSum", "Aligned", "Sum", "Special", "Convert", "ExactGroup", "Group", "EFdpa",
    "TrRenorm", "TrTail", "GtrGroups",
    # mma: chains
    "FtzStep", "FmaStep", "FpuGroup", "FpuAcc", "BlockIn", "BlockOut", "IntBlock", "IntAcc",
    "IntResult",
    # theory: the composition around the operation
    "SparseSelect", "ConvertOperands", "KOrder", "ConvertC", "AccumulateAdd", "RoundD",
    # query.model: chained instructions
    "Chain",
]

#: The trace being recorded (a list of records), or None when tracing is off.
TRACE: contextvars.ContextVar = contextvars.ContextVar("mmaformal_trace", default=None)


def record(note) -> None:
    """Append `note` (one of the record types below) to the trace, when one is recorded."""
    t = TRACE.get()
    if t is not None:
        t.append(note)


@contextlib.contextmanager
def tracing():
    """`with tracing() as notes:` records the trace of the evaluations run inside into the
    list `notes` (records, in evaluation order)."""
    notes: list = []
    tok = TRACE.set(notes)
    try:
        yield notes
    finally:
        TRACE.reset(tok)


# Every record is a frozen dataclass with eq=False: its fields are symbolic values whose ==
# builds a term, not a truth value. `label` names the kind of step in messages.

# ------------------------------------------------------------------------------------------
# mma: the fused sum (Algorithm 7 step 2) and the FDPA family
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class FusedSum:
    """A fused sum starts: its terms, their exponents widened to a common width, e_max, F
    fraction bits and the alignment rounding (RZ or RD)."""
    label: ClassVar[str] = "fused_sum"
    terms: Sequence[Any]
    e: Sequence[Any]
    e_max: Any
    F: int
    mode: str


@dataclass(frozen=True, eq=False)
class Aligned:
    """One term of the fused sum aligned at e_max (the terms in order)."""
    label: ClassVar[str] = "aligned"
    value: Any


@dataclass(frozen=True, eq=False)
class Sum:
    """The fused sum S of the aligned terms (sum = S 2^(e_max - F))."""
    label: ClassVar[str] = "S"
    S: Any


@dataclass(frozen=True, eq=False)
class Special:
    """The special-value flags of a block ([Xie2025] sec. 4.2) and its finite result."""
    label: ClassVar[str] = "special"
    nan: Any
    pinf: Any
    ninf: Any
    finite: Any


@dataclass(frozen=True, eq=False)
class Convert:
    """The output conversion rho(S 2^exp) and the sign of a zero result."""
    label: ClassVar[str] = "convert"
    rho: str
    S: Any
    exp: Any
    zero_sign: Any


@dataclass(frozen=True, eq=False)
class ExactGroup:
    """An exact fixed-point group sum: P, each product's value v, the products, and a bound
    2^bits > |v|."""
    label: ClassVar[str] = "exact_group"
    P: Any
    v: Sequence[Any]
    prods: Sequence[Any]
    bits: int


@dataclass(frozen=True, eq=False)
class Group:
    """A GST-FDPA group term (after its ExactGroup): the term, P, its zero flag, the
    all-negative-zero sign, the NaN/Inf flags of its products and its scale pair."""
    label: ClassVar[str] = "group"
    term: Any
    P: Any
    zero: Any
    allz: Any
    nan: Any
    inf_p: Any
    inf_n: Any
    scales: tuple


@dataclass(frozen=True, eq=False)
class EFdpa:
    """E-FDPA's exact sum P 2^P_exp, its finite result and the special-value flags."""
    label: ClassVar[str] = "e_fdpa"
    P: Any
    P_exp: int
    finite: Any
    nan: Any
    pinf: Any
    ninf: Any


@dataclass(frozen=True, eq=False)
class TrRenorm:
    """Tail "mmasim": S renormalised and rounded (k bits dropped) to q."""
    label: ClassVar[str] = "tr_renorm"
    S: Any
    k: Any
    q: Any


@dataclass(frozen=True, eq=False)
class TrTail:
    """The TR/GTR tail: T at e_max aligned at E with c (Tp, sc), F, F2 and the reading."""
    label: ClassVar[str] = "tr_tail"
    T: Any
    e_max: Any
    E: Any
    Tp: Any
    sc: Any
    F: int
    F2: int
    tail: str


@dataclass(frozen=True, eq=False)
class GtrGroups:
    """GTR-FDPA: the even and odd group sums merged at e_max into T."""
    label: ClassVar[str] = "gtr_groups"
    T_even: Any
    e_even: Any
    T_odd: Any
    e_odd: Any
    T: Any
    e_max: Any


# ------------------------------------------------------------------------------------------
# mma: chains
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class FtzStep:
    """FTZ-AddMul: the pairwise sum s of products k0..k0+P-1 and the accumulator after it."""
    label: ClassVar[str] = "ftz_step"
    k0: int
    P: int
    s: Any
    acc: Any


@dataclass(frozen=True, eq=False)
class FmaStep:
    """FMA chain: the accumulator after fma(a_k, b_k, d)."""
    label: ClassVar[str] = "fma_step"
    k: int
    acc: Any


@dataclass(frozen=True, eq=False)
class FpuGroup:
    """FPU program: the FMA chain of the group from k0."""
    label: ClassVar[str] = "fpu_group"
    k0: int
    sum: Any


@dataclass(frozen=True, eq=False)
class FpuAcc:
    """FPU program: the accumulator after adding a group."""
    label: ClassVar[str] = "fpu_acc"
    acc: Any


@dataclass(frozen=True, eq=False)
class BlockIn:
    """Phi_FDPA: a block of L products from k0 starts with accumulator c."""
    label: ClassVar[str] = "block"
    k0: int
    L: int
    c: Any


@dataclass(frozen=True, eq=False)
class BlockOut:
    """Phi_FDPA: the block's output d."""
    label: ClassVar[str] = "block_out"
    d: Any


@dataclass(frozen=True, eq=False)
class IntBlock:
    """Integer chain: the exact sum of the block from k0 and the accumulator c before it."""
    label: ClassVar[str] = "int_block"
    k0: int
    L: int
    c: Any
    sum: Any


@dataclass(frozen=True, eq=False)
class IntAcc:
    """Integer chain: the accumulator after a block."""
    label: ClassVar[str] = "int_acc"
    acc: Any


@dataclass(frozen=True, eq=False)
class IntResult:
    """Integer chain: the exact (or clamped) result, whether it saturates, and where."""
    label: ClassVar[str] = "int_result"
    exact_or_clamped: Any
    saturate: bool
    sat_at: str


# ------------------------------------------------------------------------------------------
# theory: the composition around the elementary operation
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class SparseSelect:
    """A sparse instruction: its mode, group size G, kept elements per group, metadata."""
    label: ClassVar[str] = "sparse"
    mode: str
    G: int
    kept: int
    meta: Sequence[Any]


@dataclass(frozen=True, eq=False)
class ConvertOperands:
    """A and B converted exactly to format `to`."""
    label: ClassVar[str] = "convert_operands"
    to: str
    a: Sequence[Any]
    b: Sequence[Any]


@dataclass(frozen=True, eq=False)
class KOrder:
    """The k order of the products (perm: the positions in order)."""
    label: ClassVar[str] = "k_order"
    order: str
    perm: Sequence[int]


@dataclass(frozen=True, eq=False)
class ConvertC:
    """C converted exactly to the accumulator format `to`."""
    label: ClassVar[str] = "convert_c"
    to: str
    c: Any


@dataclass(frozen=True, eq=False)
class AccumulateAdd:
    """The chain output and c before the final IEEE addition (accumulate = add)."""
    label: ClassVar[str] = "accumulate_add"
    chain: Any
    c: Any


@dataclass(frozen=True, eq=False)
class RoundD:
    """The result, of format `src`, rounded to D (d)."""
    label: ClassVar[str] = "round_d"
    src: str
    d: Any


# ------------------------------------------------------------------------------------------
# query.model: chained instructions
# ------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Chain:
    """Instruction `block` of a chained model starts with accumulator c."""
    label: ClassVar[str] = "chain"
    block: int
    c: Any
