"""Layer 5, query/decompose: prove claims about FDPA theories piece by piece, at the
fixed-point interface, instead of as one monolithic query.

A theory's dot product is evaluated once on the z3 back-end with `mma.TRACE` set; the notes
the elementary operations leave give, per block of the chain, the terms of the cut:

    e_max (E)            the alignment exponent of the fused sum
    aligned terms (A_t)  each term aligned at E and truncated to F fraction bits
    S                    the fixed-point sum of the aligned terms
    nan, pinf, ninf (N P Q), zero_sign (Z)     the special-value flags
    the block's output   a function G(S, E, N, P, Q, Z) once those are cut

A *cut* replaces a subterm by a fresh variable (`z3.substitute`). Every factorization is
checked syntactically: after the cut, the remaining term must contain only the cut variables
(so out = G[cut vars := cut terms] exactly); otherwise the decomposition is refused and the
caller falls back to the monolithic query. Lemmas are proved for all values of the cut
variables (a stronger statement, so sound), with their free variables renamed canonically,
so identical lemmas (the same term shape at every k, the same output conversion in every
theory with the same rho) have identical SMT-LIB text and are solved once (the cache is keyed
by the canonical sha256 of the text; `prove --save` keeps proved lemmas in proofs/cache/).

Symmetry, Phi(-A, B, -C) ~ -Phi(A, B, C) (~: equal bits, or both NaN, or both zero), by
induction over the chain of blocks u_1 = B_1(x_1, c), u_j = B_j(x_j, u_{j-1}) and the final
IEEE addition of c where the theory accumulates that way. Lemmas, with s = the negation map
(a_k -> -a_k, c -> -c, D -> -D for the cut accumulator D of a later block):

    sym.E        s(E) = E
    sym.term     s(A_t)[s(E) := V] = -(A_t[E := V])  and  |A_t[E := V]| < 2^mw_t  (all V)
    sym.sum      S = sum_t A_t (checked syntactically);  sum(-A_t) = -sum(A_t) != INT_MIN
                 for all |A_t| < 2^mw_t
    sym.flags    s(N) = N, s(P) = Q, s(Q) = P, and P & Q -> N
    sym.out      S != INT_MIN and (P & Q -> N)  =>  G(-S, E, N, Q, P, Z') ~ -G(S, E, N, P, Q, Z)
    cong.*       (blocks after the first) D ~ D'  =>  E, the aligned c-term, N, P, Q agree,
                 and G(.., Z) ~ G(.., Z'): so B_j(x, D) ~ B_j(x, D')
    add.sym, add.cong    the same two facts for the final addition fp.add(u, c)

Combination: s(u_1) ~ -u_1 (sym.* of block 1); s(u_j) = B_j(s x_j, s u_{j-1}) ~ B_j(s x_j,
-u_{j-1}) (cong.*, induction) = s(B_j(x_j, u_{j-1})) ~ -u_j (sym.* of block j); the final
addition likewise; ~ is an equivalence relation and respects negation.

The error bound of [Xie2025] Table 9 (`bound_lemmas`): per block, the fused sum's bnd.emax and
bnd.term (each aligned term is its value truncated to units 2^(E-F)) and the output
conversion's bnd.out; T-FDPA chains convert S 2^(E-F) (COMBINATION_BOUND). TR-FDPA chains
(CDNA3, Algorithm 10) are cut once more, at the fused sum's (T, em): the tail's RD
alignments of T (to F2 bits) and of c (to F bits) at E = max(em, e_c), their wrap-free sum
S, and the RNE-FP32 conversion of S 2^(E-F2) are lemmas of their own (bnd.tail*,
COMBINATION_BOUND_TR).

Equivalence (`equivalence_lemmas`) of two chains that differ only in the zero-sign /
overflow rules of their output conversions: each block is cut at its accumulator D and
proved to give the same bits in both models for every D satisfying a hypothesis P_j (not
-0; Inf, NaN or bounded) that the previous block's lemma establishes (COMBINATION_EQUIV).

Monotonicity (`monotonic_lemmas_fdpa`, T-FDPA chains): per fused block, per term t (with its
inputs primed for the larger side y) and free exponents V: mono.range (the key lies in a static
[lo, hi], or the term is zero and aligns to 0), mono.coarsen (aligned at a larger E the term is
its finer alignment truncated toward zero), mono.same (at one E, a larger addend aligns no
lower), mono.gain.up / gain.down (an addend that moves E gains at least n - 1 units of the
coarser alignment, which pays for what the other n - 1 terms can lose); the output conversion is
non-decreasing in the value S 2^(E - F) (mono.out.d<d>, one lemma per E2 - E1 = d: a constant
shift each, which the solver takes in seconds where the symbolic shift did not finish);
accumulator, NaN and Inf lemmas for later blocks and the final addition (COMBINATION_MONOTONIC_FDPA).
GST-FDPA group terms are cut at their exact fixed-point sum first (_group_cut: per-product
mono/zero/range lemmas, the sum identity, the zero flag), and the final IEEE addition is proved
one step of its varying operand at a time, case by case (_step_cases). A TR-FDPA block
(CDNA3, c outside the fused sum) is cut at (T, em) as for the bound: the products' fused-sum
lemmas with gain.up asking n units (a product that raises e_max also pays for c, rounded
down at the coarser E) and t.lead, the bound's tail lemmas, and tr.* (E = max(em, e_c), c
exact at its own exponent, the gap between c and a c' of larger exponent, the Inf/NaN flags)
with out.d<d> for the RNE-FP32 conversion (_tr_monotonic_tail, COMBINATION_MONOTONIC_TR).
A GTR-FDPA block (CDNA3 fp8) has two such group sums, asking one unit more each way, merged
by rounding down at the larger e_max (gtr.*, _gtr_merge_lemmas), and drops a c below
E - F - 1 (COMBINATION_MONOTONIC_GTR; `structure(m, gtr=True)`). Chains of TR/GTR blocks
cut each later block's c at the previous output D_ (tr.dspecial, tr.pq for its Inf/NaN).
Where the arithmetic is not monotone (f16 x f16 products, whose key ea + eb overstates a
subnormal product), mono.gain is satisfiable and the claim goes to the monolithic query.
The TR/GTR tail "mmasim" (mma._tr_renorm: T rounded down at 2^(E-F2-1), S renormalised
and floored to F2 fraction bits before RNE) is taken with G = F2 + 1 in place of F2, S cut
before the renormalisation, the floor inside the monotone output G(S, E, Z), and for the
bound bnd.renormlo and bnd.renorm (COMBINATION_BOUND_TR); without `tail` every lemma text is
the paper's tail's as before.

May import: mmaformal.query.model (models, inputs, SMT-LIB text), .cache (the solver call with
its result cache), mmaformal.mma/fp/bits, z3.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Sequence

from .. import fp, mma
from ..bits import BV, Z3Backend, ite
from .cache import solve_cached
from .model import Inputs, Lemma, Model, approx_equal, free_vars, neg_bits, smt2_text

__all__ = ["Lemma", "Structure", "structure", "traced_dot", "symmetry_lemmas", "run_lemmas",
           "equivalence_lemmas", "conversion_diff", "COMBINATION_SYMMETRY", "COMBINATION_EQUIV"]

COMBINATION_SYMMETRY = (
    "induction over the chain of blocks: block 1 is symmetric (sym.*: s(E)=E, aligned terms "
    "negate, the sum negates and is not INT_MIN, the flags swap +Inf/-Inf, and the output "
    "conversion G(S,E,N,P,Q,Z) is odd up to ~); every later block is symmetric in its "
    "inputs and congruent (cong.*) in its accumulator under ~ (equal-or-zero accumulators give "
    "the same E, aligned terms, flags, hence S, and outputs that differ at most in the sign "
    "of a zero; NaN accumulators set the NaN flag, which gives a NaN output); the final IEEE addition of c "
    "(accumulate = add) is symmetric and congruent (add.*: a NaN chain output gives NaN, +0 and "
    "-0 chain outputs give ~-equal results); ~ (equal, both NaN, or both zero) "
    "is an equivalence relation that negation respects. Each factorization out = G[cut] was "
    "checked syntactically (no input variable left after the cut).")


# ============================================================================================
# The structure of a traced dot product
# ============================================================================================

@dataclasses.dataclass
class Block:
    c_in: BV
    fc: str
    out: BV | None = None
    fs: dict | None = None
    aligned: list = dataclasses.field(default_factory=list)
    S: BV | None = None
    conv: dict | None = None
    sp: dict | None = None
    tr: dict | None = None       # TR-FDPA: the tail (E, Tp, sc) after the fused sum
    groups: list = dataclasses.field(default_factory=list)   # GST-FDPA: (exact_group, group)
    parts: list = dataclasses.field(default_factory=list)    # GTR-FDPA: (fs, aligned, S) per group
    gtr: dict | None = None      # GTR-FDPA: the two groups' sums merged at e_max (mma.gtr_fdpa)
    renorm: dict | None = None   # TR/GTR tail "mmasim": S renormalised and floored (mma._tr_renorm)


@dataclasses.dataclass
class Structure:
    model: Model
    K: Z3Backend
    inp: Inputs
    out: BV
    blocks: list
    acc: dict | None
    why: str = ""          # non-empty: the trace has a shape the decomposition does not handle


_FDPA_TAIL_OPS = ("t_fdpa", "st_fdpa", "gst_fdpa")
_TR_OPS = ("tr_fdpa",)          # a fused sum, then the TR tail (mma._tr_tail), then rho
_GTR_OPS = ("gtr_fdpa",)        # two group sums merged (rounded down), then the TR tail


def traced_dot(m: Model):
    """m's dot product on fresh symbolic inputs, with the trace on: (K, inputs, out, notes)."""
    K = Z3Backend()
    inp = Inputs.for_model(K, m)
    with mma.tracing() as notes:
        out = m.dot(K, *inp.padded(m))
    return K, inp, out, notes


def structure(m: Model, gtr: bool = False) -> Structure:
    """Evaluate m's dot product symbolically with the trace on and split it into blocks.
    gtr: also take GTR-FDPA blocks (two fused sums each, Block.parts and Block.gtr; only the
    monotonicity lemmas read them, so other callers leave it off and get `why`)."""
    K, inp, out, notes = traced_dot(m)
    st = Structure(m, K, inp, out, [], None)
    if m.ins.sparse:
        st.why = "sparse instructions are proved monolithically"
        return st
    if m.theory.accumulator:
        st.why = "a C conversion / D rounding around the chain (accumulator) is proved monolithically"
        return st
    ops = _FDPA_TAIL_OPS + _TR_OPS + (_GTR_OPS if gtr else ())
    if m.theory.model != "fdpa" or m.theory.op not in ops:
        st.why = f"op {m.theory.op} is not a T-FDPA-family fused sum"
        return st
    two = m.theory.op in _GTR_OPS
    out_fmt = ("f32" if m.theory.op in _TR_OPS + _GTR_OPS else
               mma.rho_of(m.theory.param_dict["rho"])[2].name)
    cur = None
    for label, v in notes:
        if label == "block":
            first = not st.blocks
            fc = (m.ins.d if m.theory.accumulate == "add" else m.ins.c) if first else out_fmt
            cur = Block(v["c"], fc)
            st.blocks.append(cur)
        elif label == "fused_sum":
            if cur is None or (cur.fs is not None and not (two and len(cur.parts) == 1)):
                st.why = "more than one fused sum in a block"
                return st
            cur.fs, cur.aligned, cur.S = v, [], None
        elif label == "gtr_groups" and two:
            cur.gtr = v
        elif label == "aligned":
            cur.aligned.append(v)
        elif label == "S":
            cur.S = v
            cur.parts.append((cur.fs, cur.aligned, v))
        elif label == "convert":
            cur.conv = v
        elif label == "special":
            cur.sp = v
        elif label == "block_out":
            cur.out = v
        elif label == "tr_tail":
            cur.tr = v
        elif label == "tr_renorm":
            cur.renorm = v
        elif label == "exact_group":
            cur.groups.append([v, None])
        elif label == "group":
            if not cur.groups or cur.groups[-1][1] is not None:
                st.why = "a group term without its exact sum"
                return st
            cur.groups[-1][1] = v
        elif label == "accumulate_add":
            st.acc = v
        elif label in ("convert_operands", "k_order", "chain"):
            pass
        else:
            st.why = f"unexpected step {label!r} in the trace"
            return st
    if not st.blocks or any(b.out is None or b.S is None or b.sp is None for b in st.blocks):
        st.why = "incomplete trace"
    elif two and any(len(b.parts) != 2 or b.gtr is None for b in st.blocks):
        st.why = "a GTR-FDPA block without its two group sums"
    return st


# ============================================================================================
# Symmetry lemmas
# ============================================================================================

class NotDecomposable(Exception):
    pass


def _sub(e, pairs):
    import z3
    return z3.substitute(e, *pairs) if pairs else e


def _bv(K, e, w, s=False) -> BV:
    return BV(K, w, s, e)


def symmetry_lemmas(st: Structure) -> list[Lemma]:
    """The lemmas of the symmetry claim for a decomposable structure (NotDecomposable when a
    factorization check fails)."""
    import z3
    if st.why:
        raise NotDecomposable(st.why)
    m, K, inp = st.model, st.K, st.inp
    if m.theory.op in _TR_OPS:
        raise NotDecomposable(f"op {m.theory.op} is not a T-FDPA-family fused sum")
    ins = m.ins
    fa, fc = ins.a, ins.c
    # the negation map on the inputs (b and the scales are not negated)
    sigma = [(x.v, neg_bits(x, fa).v) for x in inp.a]
    sigma.append((inp.c.v, neg_bits(inp.c, fc).v))
    lemmas: list[Lemma] = []
    prev_out = None
    input_names = set(inp.names())
    for j, blk in enumerate(st.blocks):
        tag = f"block{j}"
        fcj = blk.fc
        wD = fp.fmt(fcj).storage
        cut_D = []
        D = None
        if prev_out is not None:
            D = z3.BitVec("D_", wD)
            cut_D = [(prev_out.v, D)]
        E = _sub(blk.fs["e_max"].v, cut_D)
        al = [_sub(x.v, cut_D) for x in blk.aligned]
        S = _sub(blk.S.v, cut_D)
        N, P, Q = (_sub(blk.sp[k].v, cut_D) for k in ("nan", "pinf", "ninf"))
        Z = _sub(blk.conv["zero_sign"].v, cut_D)
        out = _sub(blk.out.v, cut_D)
        if prev_out is not None:
            left = free_vars(out) - {"D_"}
            if not left <= input_names:
                raise NotDecomposable(f"{tag}: the accumulator cut left {sorted(left - input_names)}")
        sig = list(sigma) + ([(D, neg_bits(_bv(K, D, wD), fcj).v)] if D is not None else [])
        s = lambda e: _sub(e, sig)
        w = blk.S.w
        INT_MIN = 1 << (w - 1)
        V = z3.BitVec("E_", E.size())
        sE = s(E)
        lemmas.append(Lemma(f"{tag}.sym.E", "the alignment exponent is unchanged by negation",
                            [z3.Not(sE == E)]))
        F = blk.fs["F"]
        bounds = []
        for t, (a_t, term) in enumerate(zip(al, blk.fs["terms"])):
            ls, rs = max(0, F - term.fb), max(0, term.fb - F)
            mw = term.sig.w + ls - rs          # |aligned| <= (sig << ls) >> rs < 2^mw
            lhs = _sub(s(a_t), [(sE, V)])
            rhs = _sub(a_t, [(E, V)])
            claim = lhs == -rhs
            if mw < w - 1:
                claim = z3.And(claim, rhs < (1 << mw), rhs > -(1 << mw))
                bounds.append(mw)
            else:
                bounds.append(None)
            lemmas.append(Lemma(f"{tag}.sym.term{t}", "an aligned term negates (any E) and is "
                                "bounded", [z3.Not(claim)]))
        A = [z3.BitVec(f"A{t}_", w) for t in range(len(al))]
        S_sub = _sub(S, list(zip(al, A)))
        if not free_vars(S_sub) <= {f"A{t}_" for t in range(len(al))}:
            raise NotDecomposable(f"{tag}: S is not a function of the aligned terms")
        hyp = [z3.And(x < (1 << b), x > -(1 << b)) for x, b in zip(A, bounds) if b is not None]
        S_neg = _sub(S_sub, [(x, -x) for x in A])
        lemmas.append(Lemma(f"{tag}.sym.sum", "the sum of negated terms is the negated sum, and "
                            "never INT_MIN", [z3.And(*hyp) if hyp else z3.BoolVal(True),
                                              z3.Not(z3.And(S_neg == -S_sub, S_sub != INT_MIN))]))
        lemmas.append(Lemma(f"{tag}.sym.flags", "NaN is kept, +Inf and -Inf swap, +Inf and -Inf "
                            "together are NaN",
                            [z3.Not(z3.And(s(N) == N, s(P) == Q, s(Q) == P,
                                           z3.Implies(z3.And(P, Q), N)))]))
        Sv, Ev = z3.BitVec("S_", w), z3.BitVec("E_", E.size())
        Nv, Pv, Qv, Zv, Zv2 = (z3.Bool(n) for n in ("N_", "P_", "Q_", "Z_", "Z2_"))
        G = _sub(out, [(S, Sv), (E, Ev), (N, Nv), (P, Pv), (Q, Qv), (Z, Zv)])
        left = free_vars(G) - {"S_", "E_", "N_", "P_", "Q_", "Z_"}
        if left:
            raise NotDecomposable(f"{tag}: the output is not a function of (S, E, N, P, Q, Z): "
                                  f"{sorted(left)[:4]} remain")
        fd = mma.rho_of(m.theory.param_dict["rho"])[2]
        wd = fd.storage
        G2 = _sub(G, [(Sv, -Sv), (Pv, Qv), (Qv, Pv), (Zv, Zv2)])
        g1, g2 = _bv(K, G, wd), _bv(K, G2, wd)
        ok = approx_equal(g2, neg_bits(g1, fd), fd).v
        lemmas.append(Lemma(f"{tag}.sym.out", "the output conversion and special values are odd "
                            "up to ~", [Sv != INT_MIN, z3.Implies(z3.And(Pv, Qv), Nv), z3.Not(ok)]))
        if D is not None:
            D2 = z3.BitVec("D2_", wD)
            dD = fp.decode(fcj, _bv(K, D, wD))
            h = approx_equal(_bv(K, D, wD), _bv(K, D2, wD), fcj).v
            hn = z3.And(h, z3.Not(dD.nan.v))        # ~-equal and not NaN: equal or both zero
            tau = lambda e: _sub(e, [(D, D2)])
            tE = tau(E)
            lemmas.append(Lemma(f"{tag}.cong.E", "E agrees on equal-or-zero accumulators",
                                [hn, z3.Not(tE == E)]))
            for t, a_t in enumerate(al):
                rhs = _sub(a_t, [(E, V)])
                if "D_" not in free_vars(rhs):
                    continue
                lemmas.append(Lemma(f"{tag}.cong.term{t}", "the aligned accumulator agrees on "
                                    "equal-or-zero accumulators (any E)",
                                    [hn, z3.Not(_sub(tau(a_t), [(tE, V)]) == rhs)]))
            lemmas.append(Lemma(f"{tag}.cong.flags", "the flags agree on ~-equal accumulators, and "
                                "a NaN accumulator sets the NaN flag",
                                [h, z3.Not(z3.And(tau(N) == N, tau(P) == P, tau(Q) == Q,
                                                  z3.Implies(dD.nan.v, N)))]))
            lemmas.append(Lemma(f"{tag}.cong.nan", "the NaN flag gives a NaN output",
                                [Nv, z3.Not(fp.decode(fd, g1).nan.v)]))
            gz = _bv(K, _sub(G, [(Zv, Zv2)]), wd)
            lemmas.append(Lemma(f"{tag}.cong.out", "the sign of a zero sum only decides the sign "
                                "of a zero output", [z3.Not(approx_equal(gz, g1, fd).v)]))
        prev_out = blk.out
    if st.acc is not None:
        fd = fp.fmt(ins.d)
        wd = fd.storage
        U = z3.BitVec("U_", wd)
        Gadd = _sub(st.out.v, [(prev_out.v, U)])
        left = free_vars(Gadd) - {"U_"}
        if not left <= {str(inp.c.v)}:
            raise NotDecomposable(f"final addition is not a function of (u, c): {sorted(left)[:4]}")
        cc = inp.c
        gs = _bv(K, _sub(Gadd, [(U, neg_bits(_bv(K, U, wd), fd).v), (cc.v, neg_bits(cc, fc).v)]), wd)
        g = _bv(K, Gadd, wd)
        lemmas.append(Lemma("add.sym", "the final addition of c is odd up to ~",
                            [z3.Not(approx_equal(gs, neg_bits(g, fd), fd).v)]))
        # congruence by the classes of ~: equal (nothing to prove), both NaN, both zero
        uU = fp.decode(fd, _bv(K, U, wd))
        lemmas.append(Lemma("add.cong.nan", "a NaN chain output gives a NaN result",
                            [uU.nan.v, z3.Not(fp.decode(fd, g).nan.v)]))
        g0 = _bv(K, _sub(Gadd, [(U, z3.BitVecVal(0, wd))]), wd)
        g1 = _bv(K, _sub(Gadd, [(U, z3.BitVecVal(fd.sign_bit << fd.pad, wd))]), wd)
        lemmas.append(Lemma("add.cong.zero", "+0 and -0 chain outputs give ~-equal results",
                            [z3.Not(approx_equal(g0, g1, fd).v)]))
    else:
        if not st.out.v.eq(prev_out.v):
            raise NotDecomposable("the output is not the last block's output")
    return lemmas


# ============================================================================================
# Equivalence of chains that differ only in the zero-sign and overflow rules
# ============================================================================================

#: parameters that act only in a block's output conversion (mma._convert)
CONVERSION_PARAMS = ("zero_sign", "overflow")

COMBINATION_EQUIV = (
    "induction over the chain of blocks u_1 = B_1(x_1, c_1), u_j = B_j(x_j, u_(j-1)) (each "
    "factorization checked syntactically: block j reads its own inputs and the cut accumulator "
    "D only); pre.1: the first accumulator satisfies P_1; eqv.block_j: for all x_j and all D "
    "with P_j(D), B_j^A(x_j, D) = B_j^B(x_j, D) bit for bit and P_(j+1) holds of it; so u_j^A "
    "= u_j^B for every j, and the final IEEE addition of c (accumulate = add), cut at the chain "
    "output, is the same function in both (eqv.add). P_j: the accumulator is not -0 (zero_sign "
    "differs) and, where overflow differs and the blocks need it, D is Inf, NaN or "
    "|D| <= 2^(e_max - n + j - 1) (n blocks).")


def conversion_diff(A: Model, B: Model) -> list[str]:
    """The parameters in which A and B differ, if those are conversion parameters only and
    the theories are otherwise the same (else NotDecomposable)."""
    pa, pb = A.theory.param_dict, B.theory.param_dict
    diff = sorted(k for k in set(pa) | set(pb) if pa.get(k) != pb.get(k))
    if not diff or not set(diff) <= set(CONVERSION_PARAMS) or set(diff) - set(pa) - set(pb):
        raise NotDecomposable(f"the models differ in {diff or 'nothing'}, not only in "
                              f"{'/'.join(CONVERSION_PARAMS)}")
    if A.theory.replace(**{k: pb[k] for k in diff}).hash() != B.theory.hash() or \
            (A.rd, A.n, A.ins.name) != (B.rd, B.n, B.ins.name):
        raise NotDecomposable("the models differ in more than their parameters")
    return diff


def equivalence_lemmas(stA: Structure, stB: Structure, hypotheses: bool = True,
                       diff: Sequence[str] | None = None, bounds: bool = True) -> list[Lemma]:
    """Lemmas of "A and B give bitwise-identical outputs" for two FDPA chains that differ only
    in the conversion parameters (zero_sign, overflow): per block, the two output conversions
    agree on every accumulator the previous block can produce (COMBINATION_EQUIV).
    hypotheses=False: the broken twin, the block lemmas with P_j := true (no pre.1, no
    eqv.add), which must not all hold. `diff` (the conversion parameters that differ) picks
    the hypotheses; given, the pair is not checked (the broken twin of a proof compares A with
    a mutant of B that differs in more than those). bounds=False leaves the magnitude bound
    out of P_j (enough when no block can overflow whatever its accumulator; an input c
    cannot be bounded)."""
    import z3
    for st in (stA, stB):
        if st.why:
            raise NotDecomposable(st.why)
    A, B = stA.model, stB.model
    diff = conversion_diff(A, B) if diff is None else list(diff)
    if len(stA.blocks) != len(stB.blocks) or (stA.acc is None) != (stB.acc is None):
        raise NotDecomposable("the chains have different shapes")
    if stA.inp.names() != stB.inp.names():
        raise NotDecomposable("the traces read different inputs")
    K, n = stA.K, len(stA.blocks)
    fd = mma.rho_of(A.theory.param_dict["rho"])[2]

    def pre(j: int, D: BV, f: fp.Format):
        """P_j of an accumulator D of format f (j = 1..n; P_(n+1) is true)."""
        conds = []
        if j > n or not hypotheses:
            return z3.BoolVal(True)
        if "zero_sign" in diff:
            conds.append(D.v != (f.sign_bit << f.pad))
        if "overflow" in diff and bounds:
            e = f.emax - n + j - 1
            if e < f.emin:
                raise NotDecomposable(f"no accumulator bound below the range of {f.name}")
            mag = z3.BitVecVal((1 << (f.storage - 1)) - 1, f.storage)
            two_e = ((e + f.bias) << f.t) << f.pad             # the bits of 2^e (normal)
            u = fp.decode(f, D)                 # Inf and NaN pass through either rule
            conds.append(z3.Or(u.nan.v, u.inf.v, z3.ULE(D.v & mag, z3.BitVecVal(two_e, f.storage))))
        # (and x) with one argument is not SMT-LIB (bitwuzla rejects it)
        return z3.And(*conds) if len(conds) > 1 else conds[0] if conds else z3.BoolVal(True)

    lemmas: list[Lemma] = []
    prevA = prevB = None
    for j, (ba, bb) in enumerate(zip(stA.blocks, stB.blocks), start=1):
        tag = f"block{j}"
        f = fp.fmt(ba.fc)
        if ba.fc != bb.fc:
            raise NotDecomposable(f"{tag}: accumulators of different formats")
        if prevA is None:
            cin = ba.c_in.v
            if not cin.eq(bb.c_in.v):
                raise NotDecomposable(f"{tag}: the first accumulators differ")
            if z3.is_bv_value(cin):
                if not z3.is_true(z3.simplify(pre(1, ba.c_in, f))):
                    raise NotDecomposable(f"{tag}: the first accumulator fails P_1")
                if hypotheses:
                    lemmas.append(Lemma("pre.1", "the first accumulator (a constant) satisfies "
                                        "P_1", [z3.Not(pre(1, ba.c_in, f))]))
                hyp = pre(1, ba.c_in, f)
            else:                     # the input c: no precondition can be assumed
                hyp = z3.BoolVal(True)
            outA, outB, D = ba.out.v, bb.out.v, None
        else:
            D = z3.BitVec("D_", f.storage)
            outA = _sub(ba.out.v, [(prevA.v, D)])
            outB = _sub(bb.out.v, [(prevB.v, D)])
            for o, prev in ((outA, prevA), (outB, prevB)):
                if (free_vars(o) - {"D_"}) & free_vars(prev.v):
                    raise NotDecomposable(f"{tag}: the accumulator cut left inputs of earlier blocks")
            hyp = pre(j, _bv(K, D, f.storage), f)
        if not (f.name == fd.name or j == 1):
            raise NotDecomposable(f"{tag}: accumulator format {f.name} is not the output's {fd.name}")
        post = pre(j + 1, _bv(K, outA, fd.storage), fd) if j < n else z3.BoolVal(True)
        lemmas.append(Lemma(f"eqv.{tag}", f"block {j} gives the same bits in both models "
                            f"(accumulator with P_{j}), satisfying P_{j + 1}",
                            [hyp, z3.Not(z3.And(outA == outB, post))]))
        prevA, prevB = ba.out, bb.out
    if stA.acc is not None and hypotheses:
        wd = fp.fmt(A.ins.d).storage
        U = z3.BitVec("U_", wd)
        gA = _sub(stA.out.v, [(prevA.v, U)])
        gB = _sub(stB.out.v, [(prevB.v, U)])
        cname = str(stA.inp.c.v)
        for g in (gA, gB):
            if not free_vars(g) - {"U_"} <= {cname}:
                raise NotDecomposable("the final addition is not a function of (u, c)")
        lemmas.append(Lemma("eqv.add", "the final addition of c is the same function in both",
                            [z3.Not(gA == gB)]))
    elif stA.acc is None:
        if not (stA.out.v.eq(prevA.v) and stB.out.v.eq(prevB.v)):
            raise NotDecomposable("the output is not the last block's output")
    return lemmas


# ============================================================================================
# Running lemmas
# ============================================================================================

def run_lemmas(lemmas: Sequence[Lemma], solver: str, timeout: float | None,
               persist: bool = False, deadline: float | None = None) -> tuple[str, list[dict]]:
    """Solve every lemma (cached by canonical sha256). Returns ("proved" | "failed" |
    "unknown", parts), parts: one dict per lemma (name, role, sha256, status, solver,
    seconds, cached). Stops at the first lemma that is not proved."""
    parts = []
    for lm in lemmas:
        left = timeout
        if deadline is not None:
            left = max(0.1, deadline - time.perf_counter())
            left = left if timeout is None else min(left, timeout)
        r, h, cached = solve_cached(lm.text, solver, left, persist)
        parts.append({"lemma": lm.name, "role": lm.role, "sha256": h, "status": r.status,
                      "solver": r.solver, "solver_version": r.version,
                      "seconds": round(r.seconds, 3), "cached": cached,
                      "query": f"../cache/{h}.smt2", "text": lm.text})
        if r.status == "sat":
            return "failed", parts
        if r.status != "unsat":
            return "unknown", parts
    return "proved", parts


# ============================================================================================
# FMA chains (mma.fma_chain, Phi_FMA): symmetry and monotonicity step by step
# ============================================================================================

COMBINATION_SYMMETRY_FMA = (
    "the output is d_K with d_0 = c and d_(k+1) = fma(a_k, b_k, d_k) (checked syntactically: "
    "each traced accumulator is the same term as fp.fma of the step's inputs and the previous "
    "accumulator); fma.sym: fma(-a, b, -d) ~ -fma(a, b, d) for all a, b, d; congruence, d ~ d' "
    "=> fma(a, b, d) ~ fma(a, b, d'): equal bits give the same term, fma.cong.zero: fma(a, b, "
    "+0) ~ fma(a, b, -0), fma.cong.nan: a NaN d gives a NaN output. Induction: s(d_0) = -c = -d_0; s(d_(k+1)) = fma(-a_k, "
    "b_k, s(d_k)) ~ fma(-a_k, b_k, -d_k) (cong, s(d_k) ~ -d_k) ~ -d_(k+1) (sym); ~ (equal, both "
    "NaN, or both zero) is an equivalence relation that negation respects.")

COMBINATION_MONOTONIC_FMA = (
    "the output is d_K with d_0 = c and d_(k+1) = fma(a_k, b_k, d_k) (checked syntactically); "
    "for finite a, b: fma.nan: a NaN d gives a NaN output; fma.mono.acc: d <= d' (neither NaN) "
    "gives fma(a, b, d) <= fma(a, b, d') unless one is NaN; fma.mono.prod: a*b < a'*b' exactly "
    "gives fma(a, b, d) <= fma(a', b', d) unless one is NaN. Two inputs that differ in addend k "
    "have the same d_k (or, for c, d_0 < d'_0); step k orders d_(k+1) <= d'_(k+1) and every "
    "later step keeps the order; a NaN accumulator stays NaN to the output, where the claim "
    "excludes it.")


def fma_chain_steps(m: Model) -> tuple[str, str, object]:
    """(format, mode, nan) of an FMA-chain model whose traced output is the chain d_(k+1) =
    fp.fma(a_k, b_k, d_k) from d_0 = c, checked syntactically (NotDecomposable otherwise)."""
    th = m.theory
    if th.model != "fma" or m.ins.sparse or m.ins.scale:
        raise NotDecomposable(f"model {th.model} is not an FMA chain")
    p = th.param_dict
    f, mode, nan = (th.convert or m.ins.a), p.get("mode", "RNE"), p.get("nan", "default")
    K, inp, out, notes = traced_dot(m)
    accs = [v["acc"] for label, v in notes if label == "fma_step"]
    if th.convert or len(accs) != m.k or m.ins.c != f or m.ins.d != f:
        raise NotDecomposable("the trace is not one FMA per k on the input elements")
    prev = inp.c
    for k, acc in enumerate(accs):
        if not fp.fma(f, inp.a[k], inp.b[k], prev, mode, nan).v.eq(acc.v):
            raise NotDecomposable(f"step {k} is not fma(a_{k}, b_{k}, d_{k})")
        prev = acc
    if not prev.v.eq(out.v):
        raise NotDecomposable("the output is not the last accumulator")
    return f, mode, nan


def fma_symmetry_lemmas(m: Model, mode: str | None = None) -> list[Lemma]:
    """fma.sym and fma.cong (COMBINATION_SYMMETRY_FMA). mode: another rounding for the
    broken twin (RD: fma.sym is refuted)."""
    import z3
    f, md, nan = fma_chain_steps(m)
    md = mode or md
    K = Z3Backend()
    a, b, d, d2 = (K.var(n, fp.fmt(f).storage, False) for n in ("a", "b", "d", "e"))
    fm = lambda x, y, z: fp.fma(f, x, y, z, md, nan)
    return [
        Lemma("fma.sym", "fma(-a, b, -d) ~ -fma(a, b, d)",
              [z3.Not(approx_equal(fm(neg_bits(a, f), b, neg_bits(d, f)),
                                   neg_bits(fm(a, b, d), f), f).v)]),
        # d ~ d': equal bits (the same fma), both NaN (fma.cong.nan), or both zero
        Lemma("fma.cong.zero", "fma(a, b, +0) ~ fma(a, b, -0)",
              [z3.Not(approx_equal(fm(a, b, K.const(0, d.w, False)),
                                   fm(a, b, neg_bits(K.const(0, d.w, False), f)), f).v)]),
        Lemma("fma.cong.nan", "a NaN accumulator gives a NaN output",
              [fp.decode(f, d).nan.v, z3.Not(fp.decode(f, fm(a, b, d)).nan.v)]),
    ]


def fma_monotonic_lemmas(m: Model, order, term_le, reverse: bool = False) -> list[Lemma]:
    """fma.nan, fma.mono.acc and fma.mono.prod (COMBINATION_MONOTONIC_FMA). order(x, f): a
    signed integer in the real order of the non-NaN values of f; term_le(t1, t2): t1 <= t2
    for exact terms (query.prove's comparisons, the claim's own). reverse: the output
    inequalities turned (the broken twin: satisfiable)."""
    import z3
    f, md, nan = fma_chain_steps(m)
    K = Z3Backend()
    v = {n: K.var(n, fp.fmt(f).storage, False) for n in ("a", "b", "p", "q", "d", "e")}
    a, b, a2, b2, d, d2 = (v[n] for n in ("a", "b", "p", "q", "d", "e"))
    u = {n: fp.decode(f, x) for n, x in v.items()}
    fin = [z3.Not((u[n].nan | u[n].inf).v) for n in ("a", "b", "p", "q")]
    fm = lambda x, y, z: fp.fma(f, x, y, z, md, nan)
    nn = lambda x: z3.Not(fp.decode(f, x).nan.v)
    o1, o2 = fm(a, b, d), fm(a, b, d2)
    o3 = fm(a2, b2, d)
    t1 = mma.product(u["a"], u["b"])
    t2 = mma.product(u["p"], u["q"])
    return [
        Lemma("fma.nan", "a NaN accumulator gives a NaN output",
              fin + [u["d"].nan.v, nn(o1)]),
        Lemma("fma.mono.acc", "fma is non-decreasing in the accumulator",
              fin + [nn(d), nn(d2), (order(d, f) <= order(d2, f)).v, nn(o1), nn(o2),
                     (order(o2, f) < order(o1, f)).v]),
        Lemma("fma.mono.prod", "fma is non-decreasing in the exact product",
              fin + [nn(d), z3.Not(term_le(t2, t1).v), nn(o1), nn(o3),
                     ((order(o1, f) < order(o3, f)) if reverse else
                      (order(o3, f) < order(o1, f))).v]),
    ]


# ============================================================================================
# Monotonicity of integer MMA (mma.int_chain)
# ============================================================================================

COMBINATION_MONOTONIC_INT = (
    "out(a, b, c) = G[T_j := t_j(a_j, b_j)] where G, the output with every product term t_j "
    "cut to a fresh variable T_j, has no input variable but c (checked syntactically); "
    "mono.id<k>: G = H(c, T_k, R_k) for all values, R_k = sum of the other T_j (wrap-free: "
    "(K-1) max|t| < 2^(W-1) in the sum's width W, checked statically); mono.range: t(a, b) "
    "lies in [t_min, t_max] for every input; mono.term: the claim's addend a_k*b_k (or the b1 "
    "bit) increasing makes t_k increase; mono.acc: T < T' in range and R in its range give "
    "H(c, T, R) <= H(c, T', R); mono.c: c < c' gives H(c, T, R) <= H(c', T, R). Two inputs "
    "that differ in addend k (or c) have the same R_k, so their outputs are ordered.")


def monotonic_lemmas_int(m: Model, addend) -> list[Lemma]:
    """The lemmas of the monotonicity claim of an integer model (COMBINATION_MONOTONIC_INT).
    `addend(x, y)`: the claim's exact value of a_k * b_k (query.prove). H is the exact sum
    clamped to s32 (.satfinite with sat_at = "end") or wrapped; a theory that clamps elsewhere
    fails mono.id (a SAT lemma: the decomposition proves nothing then)."""
    import z3
    ins = m.ins
    if not fp.fmt(ins.a).is_int or m.theory.op != "int_chain" or ins.sparse:
        raise NotDecomposable("not a dense integer MMA")
    K = Z3Backend()
    x = Inputs.for_model(K, m)
    out = m.dot(K, *x.padded(m))
    fa, fb = fp.fmt(ins.a), fp.fmt(ins.b)
    kdim = m.k
    W = 34 + (fa.k + 1) + (fb.k + 1) + kdim.bit_length()   # mma.int_chain's exact width
    terms = mma._int_terms(x.a, x.b, fa, fb, ins.bop, W)
    T = [K.var(f"T{j}_", W, True) for j in range(kdim)]
    G = z3.substitute(out.v, *[(t.v, v.v) for t, v in zip(terms, T)])
    left = free_vars(G) - {str(x.c.v)} - {str(v.v) for v in T}
    if left:
        raise NotDecomposable(f"the output keeps {sorted(left)[0]} after the product cut")
    # static range of one product term (mma.int_chain adds it sign-extended to W bits)
    if fa.name == "b1":
        tmin, tmax = 0, 1
    else:
        ra, rb = (fa.lo, fa.hi), (fb.lo, fb.hi)
        ps = [p * q for p in ra for q in rb]
        tmin, tmax = min(ps), max(ps)
    if (kdim - 1) * max(abs(tmin), abs(tmax)) + 2 ** 31 >= 2 ** (W - 2):
        raise NotDecomposable("the sum's width is not wrap-free for the rest of the terms")
    Gb = _bv(K, G, 32)
    cst = lambda v: K.const(v, W, True)
    lo_t, hi_t = cst(tmin), cst(tmax)
    lo_r, hi_r = cst((kdim - 1) * tmin), cst((kdim - 1) * tmax)
    C = fp.int_value(ins.c, x.c).resize(W, True)
    sat = {"qualifier": bool(ins.satfinite), "always": True,
           "never": False}[m.theory.param_dict.get("sat", "qualifier")]
    lo, hi = cst(mma.INT32_MIN), cst(mma.INT32_MAX)

    def H(c32: BV, t: BV, r: BV) -> BV:
        v = fp.int_value(ins.c, c32).resize(W, True) + t + r
        if sat:
            v = ite(v < lo, lo, ite(hi < v, hi, v))
        return v.bitcast(False).extract(31, 0)

    s32 = lambda v: v.bitcast(True)
    lemmas = []
    for k in range(kdim):
        R = None
        for j in range(kdim):
            if j != k:
                R = T[j] if R is None else R + T[j]
        R = R if R is not None else cst(0)
        lemmas.append(Lemma(f"mono.id{k}", "G equals H(c, T_k, R_k)",
                            [z3.Not(Gb.v == H(x.c, T[k], R).v)]))
    # a product term: its range, and its order against the claim's addend
    y = Inputs.for_model(K, m, prefix="p")
    ta = mma._int_terms([x.a[0]], [x.b[0]], fa, fb, ins.bop, W)[0]
    tb = mma._int_terms([y.a[0]], [y.b[0]], fa, fb, ins.bop, W)[0]
    valid = []
    for v, f in ((x.a[0], fa), (x.b[0], fb), (y.a[0], fa), (y.b[0], fb)):
        if f.storage > f.k:
            valid.append((v.extract(f.storage - 1, f.k) == 0).v)
    lemmas.append(Lemma("mono.range", "every product term lies in [t_min, t_max]",
                        valid + [z3.Not(z3.And((lo_t <= ta).v, (ta <= hi_t).v))]))
    ea, eb = addend(x.a[0], x.b[0]), addend(y.a[0], y.b[0])
    w = max(ea.w, eb.w, W) + 1
    lemmas.append(Lemma("mono.term", "a larger addend gives a larger product term",
                        valid + [(ea.resize(w, True) < eb.resize(w, True)).v,
                                 z3.Not((ta < tb).v)]))
    c2 = K.var("c2", 32, False)
    t1, t2, r = K.var("Ta_", W, True), K.var("Tb_", W, True), K.var("Ra_", W, True)
    rng = [(lo_t <= t1).v, (t1 <= hi_t).v, (lo_t <= t2).v, (t2 <= hi_t).v,
           (lo_r <= r).v, (r <= hi_r).v]
    lemmas.append(Lemma("mono.acc", "H is non-decreasing in the product term",
                        rng + [(t1 < t2).v,
                               (s32(H(x.c, t2, r)) < s32(H(x.c, t1, r))).v]))
    lemmas.append(Lemma("mono.c", "H is non-decreasing in c",
                        rng + [(fp.int_value(ins.c, x.c) < fp.int_value(ins.c, c2)).v,
                               (s32(H(c2, t1, r)) < s32(H(x.c, t1, r))).v]))
    return lemmas


# ============================================================================================
# Error-bound lemmas ([Xie2025] Table 9) for T-FDPA chains
# ============================================================================================

COMBINATION_BOUND = (
    "per block j with exact input X_j = c_j + sum of its products (c_1 = c, c_j = d_(j-1)): "
    "|X_j - d_j| <= sum_t |val_t - A_t 2^(E-F)| + |S 2^(E-F) - d_j| (S = sum_t A_t, checked "
    "syntactically, without wrap-around: |A_t| < 2^mw_t and sum_t 2^mw_t < 2^(w-1)); "
    "bnd.emax gives E >= e_t for every nonzero term (and E <= a static maximum), so bnd.term gives |val_t - A_t 2^(E-F)| < "
    "2^(E-F) for a nonzero term (beyond D_max the term truncates to 0 and |val_t| < 2^(E-F) "
    "since sig < 2^sig.w <= 2^(E-e_t+fb-F)) and A_t = 0 for a zero term; bnd.flags: finite "
    "inputs take the finite path; bnd.out gives |S 2^(E-F) - d_j| <= r ulp(d_j) for a finite, "
    "non-overflowing d_j (S = 0 gives a zero). Hence |X_j - d_j| <= n_j 2^(E-F) + r ulp(d_j) "
    "(n_j 2^(E-F) dropped when every term is zero, then X_j = S = 0). Telescoping: c + sum_k "
    "a_k b_k - d_n = sum_j (X_j - d_j), so the error is at most the sum of the block bounds.")


def _bnd_fused(tag: str, m: Model, blk: Block, cut: list, F: int, Fm: int, sf) -> tuple[list, int, int]:
    """bnd.emax and bnd.term<i> of one block's fused sum (accumulator cut `cut`), after
    checking that its sum S is the wrap-free sum of the aligned terms. Returns (lemmas, the
    bound sum_t 2^mw_t > |S|, the bound Vmax >= e_max)."""
    import z3
    E = _sub(blk.fs["e_max"].v, cut)
    es = [_sub(e.v, cut) for e in blk.fs["e"]]
    al = [_sub(x.v, cut) for x in blk.aligned]
    terms = blk.fs["terms"]
    w = blk.S.w
    lemmas = []
    # -- E is at least every nonzero term's exponent
    zs = [_sub(t.zero.v, cut) for t in terms]
    Vmax = _vmax(m, blk.fc, sf)
    lemmas.append(Lemma(f"{tag}.bnd.emax", f"e_max is at least the exponent of every nonzero "
                        f"term and at most {Vmax}",
                        [z3.Not(z3.And(E <= Vmax, *[z3.Implies(z3.Not(zt), E >= et)
                                                    for zt, et in zip(zs, es)]))]))
    # -- each term: truncation error below one unit 2^(E-F) (E cut to V)
    V = z3.BitVec("E_", E.size())
    total = 0
    for i, (t, a_t, e_t) in enumerate(zip(terms, al, es)):
        A = _sub(a_t, [(E, V)])
        sig = _sub(t.sig.v, cut)
        sign, zero = _sub(t.sign.v, cut), _sub(t.zero.v, cut)
        inf, nan = _sub(t.inf.v, cut), _sub(t.nan.v, cut)
        ls, rs = max(0, Fm - t.fb), max(0, t.fb - Fm)
        mw = t.sig.w + ls - rs
        total += 1 << mw
        # units 2^(e_t - fb - K0): the term is sig << K0, A (grid 2^(V-Fm)) is
        # A << (d + fb - Fm + K0), the claimed unit 2^(V-F) is 1 << (d + fb - F + K0)
        K0 = max(0, max(Fm, F) - t.fb)
        Dmax = t.sig.w + max(Fm, F) + 2
        SH = Dmax + t.fb - min(Fm, F) + K0
        WW = max(w + SH, t.sig.w + K0) + 4
        ew = E.size() + 2
        d = z3.SignExt(2, V) - z3.SignExt(2, e_t)
        ext = lambda x: z3.ZeroExt(WW - ew, x) if WW > ew else x
        shA = ext(d + (t.fb - Fm + K0))
        shU = ext(d + (t.fb - F + K0))
        As = z3.SignExt(WW - w, A) << shA
        Xu = z3.ZeroExt(WW - t.sig.w, sig) << K0
        Xs = z3.If(sign, -Xu, Xu)
        unit = z3.BitVecVal(1, WW) << shU
        diff = Xs - As
        small = z3.And(diff < unit, diff > -unit)
        claim = z3.And(A < (1 << mw), A > -(1 << mw),
                       z3.Implies(zero, A == 0),
                       z3.Implies(z3.Not(zero), z3.And(
                           z3.Implies(d > Dmax, A == 0),
                           z3.Implies(d <= Dmax, small))))
        hyp = [z3.Not(inf), z3.Not(nan), z3.Implies(z3.Not(zero), V >= e_t), V <= Vmax]
        lemmas.append(Lemma(f"{tag}.bnd.term{i}", "an aligned term is the value truncated to "
                            "units 2^(E-F): error below one unit (any E >= e_t)",
                            hyp + [z3.Not(claim)]))
    if total >= 1 << (w - 1):
        raise NotDecomposable(f"{tag}: the sum of aligned terms may wrap around")
    A_ = [z3.BitVec(f"A{t}_", w) for t in range(len(al))]
    if not free_vars(_sub(_sub(blk.S.v, cut), list(zip(al, A_)))) <= {f"A{t}_" for t in range(len(al))}:
        raise NotDecomposable(f"{tag}: S is not a function of the aligned terms")
    return lemmas, total, Vmax


def _bnd_out(tag: str, K, out, S, E, N, P, Q, Z, w: int, Fc: int, rf, sf, r_half: bool) -> Lemma:
    """bnd.out: the output conversion of S 2^(E - Fc) (with its special values) errs by at
    most r ulp of a finite, non-overflowing output (S, E, flags cut)."""
    import z3
    Sv, Ev = z3.BitVec("S_", w), z3.BitVec("E_", E.size())
    Nv, Pv, Qv, Zv = (z3.Bool(n) for n in ("N_", "P_", "Q_", "Z_"))
    G = _sub(out, [(S, Sv), (E, Ev), (N, Nv), (P, Pv), (Q, Qv), (Z, Zv)])
    left = free_vars(G) - {"S_", "E_", "N_", "P_", "Q_", "Z_"}
    if left:
        raise NotDecomposable(f"{tag}: the output is not a function of (S, E, flags)")
    g = _bv(K, G, sf.storage)
    ug = fp.decode(sf, g)
    tt = rf.t
    mag = g.extract(sf.pad + sf.k - 2, sf.pad)
    hyp = [z3.Not(Nv), z3.Not(Pv), z3.Not(Qv), z3.Not(ug.nan.v), z3.Not(ug.inf.v),
           (mag != (rf.max_code << rf.pad) >> sf.pad).v]
    ewo = max(Ev.size(), ug.exp.w) + 4
    e0 = z3.SignExt(ewo - Ev.size(), Ev) - Fc       # the model converts S 2^(E - Fc)
    low = e0 < sf.emin - tt - w - 2
    high = e0 > sf.emax + 1
    WO = 2 * (w + tt) + 24
    Su = z3.SignExt(WO - w, Sv) << (tt + 2)
    eg = z3.SignExt(ewo - ug.exp.w, ug.exp.v)
    shg = eg - e0 + 2
    sigR = z3.LShR(ug.sig.v, sf.t - tt) if sf.t > tt else ug.sig.v
    sigR_w = z3.ZeroExt(WO - sigR.size(), sigR)
    shgW = z3.ZeroExt(WO - ewo, shg)
    Gu = z3.If(ug.sign.v, -(sigR_w << shgW), sigR_w << shgW)
    ulp = z3.BitVecVal(1, WO) << shgW
    allow = z3.LShR(ulp, 1) if r_half else ulp
    dd = Su - Gu
    main = z3.And(shg >= 1, shg <= tt + w + 6, dd <= allow, dd >= -allow)
    if sf.t > tt:
        main = z3.And(main, z3.Extract(sf.t - tt - 1, 0, ug.sig.v) == 0)
    claim = z3.And(z3.Implies(Sv == 0, ug.zero.v),
                   z3.Implies(z3.And(Sv != 0, low), ug.zero.v),
                   z3.Implies(z3.And(Sv != 0, high), z3.BoolVal(False)),
                   z3.Implies(z3.And(Sv != 0, z3.Not(low), z3.Not(high)), main))
    return Lemma(f"{tag}.bnd.out", f"the output conversion errs by at most "
                 f"{'1/2' if r_half else '1'} ulp of a finite, non-overflowing output",
                 hyp + [z3.Not(claim)])


def bound_lemmas(st: Structure, F_claim: int | None = None) -> list[Lemma]:
    """Lemmas of the Table 9 bound for a T-FDPA or TR-FDPA chain (fused accumulator)."""
    import z3
    if st.why:
        raise NotDecomposable(st.why)
    m, K = st.model, st.K
    th = m.theory
    if th.op in _TR_OPS and st.acc is None:
        return _bound_lemmas_tr(st, F_claim)
    if th.op != "t_fdpa" or st.acc is not None:
        raise NotDecomposable("the bound decomposition takes t_fdpa and tr_fdpa chains with a "
                              "fused accumulator")
    p = th.param_dict
    rf, mode, sf = mma.rho_of(p["rho"])
    r_half = mode == "RNE"
    F = p["F"] if F_claim is None else F_claim
    Fm = p["F"]                       # the model's own F (alignment grid of A_t)
    lemmas: list[Lemma] = []
    prev_out = None
    for j, blk in enumerate(st.blocks):
        tag = f"block{j}"
        wD = fp.fmt(blk.fc).storage
        cut_D = [(prev_out.v, z3.BitVec("D_", wD))] if prev_out is not None else []
        fused, _, _ = _bnd_fused(tag, m, blk, cut_D, F, Fm, sf)
        lemmas += fused
        terms = blk.fs["terms"]
        N, P, Q = (_sub(blk.sp[k].v, cut_D) for k in ("nan", "pinf", "ninf"))
        # -- finite inputs take the finite path
        fin = []
        for t in terms:
            fin += [z3.Not(_sub(t.inf.v, cut_D)), z3.Not(_sub(t.nan.v, cut_D))]
        lemmas.append(Lemma(f"{tag}.bnd.flags", "finite terms raise no NaN/Inf flag",
                            fin + [z3.Not(z3.And(z3.Not(N), z3.Not(P), z3.Not(Q)))]))
        # -- the output conversion: error at most r ulp of a finite, non-overflowing output
        lemmas.append(_bnd_out(tag, K, _sub(blk.out.v, cut_D), _sub(blk.S.v, cut_D),
                               _sub(blk.fs["e_max"].v, cut_D), N, P, Q,
                               _sub(blk.conv["zero_sign"].v, cut_D), blk.S.w, Fm, rf, sf, r_half))
        prev_out = blk.out
    if not st.out.v.eq(prev_out.v):
        raise NotDecomposable("the output is not the last block's output")
    return lemmas


COMBINATION_BOUND_TR = (
    "per block j (TR-FDPA, seed 002 Algorithm 10; c_1 = c, c_j = d_(j-1); n = L products): "
    "bnd.special and bnd.raise: a finite d_j means no NaN/Inf flag, so no product overflowed "
    "and c_j is finite (bnd.flags: then the finite path is taken); bnd.emax and bnd.term as for "
    "T-FDPA give |sum of products - T 2^(em-F)| < n 2^(em-F) (each nonzero product errs by "
    "less than 2^(em-F), a zero one by 0; |T| < sum_t 2^mw_t, checked syntactically); "
    "bnd.emax, bnd.emlow and bnd.tailE: em and E lie in the ranges the tail lemmas assume, "
    "E >= em, and E >= the exponent of a nonzero c_j; bnd.tailT: 0 <= T 2^(em-F) - Tp 2^(E-F2) < 2^(E-F2), and = 0 when "
    "E = em; bnd.tailc: 0 <= c_j - sc 2^(E-F) < 2^(E-F); bnd.tailsum: S = Tp + sc 2^(F2-F) "
    "without wrap-around; bnd.out: |S 2^(E-F2) - d_j| <= 1/2 ulp(d_j). If E = em the block "
    "errs by less than n 2^(E-F) + 2^(E-F) + 1/2 ulp(d_j); if E > em, by less than "
    "n 2^(E-1-F) + 2^(E-F2) + 2^(E-F) + 1/2 ulp(d_j) <= (n+1) 2^(E-F) + 1/2 ulp(d_j), since "
    "2^(E-F2) <= (n/2) 2^(E-F) (F2 > F). Telescoping over the blocks as for T-FDPA. "
    "Tail \"mmasim\" (mma._tr_renorm; G = F2 + 1): Tp is in units 2^(E-G) (bnd.tailT, "
    "bnd.tailsum with G for F2), S is renormalised and floored to q 2^X, and bnd.out is the "
    "RNE conversion of q 2^X: |q 2^X - d_j| <= 1/2 ulp(d_j). bnd.renormlo: a nonzero product's "
    "key and a nonzero c's exponent are >= Elo = -126 - F2 + F, so S != 0 gives E >= Elo (E >= "
    "em >= such a key, or E >= e_c; S = 0 gives q = 0); bnd.renorm: for E in [Elo, Vmax] and "
    "|S| < smax, 0 <= S 2^(E-G) - q 2^X < 2^(E-G+R), and = 0 when S is a multiple of 2^(G-F). "
    "If E = em, Tp = T 2^(G-F) exactly (bnd.tailT), so S is such a multiple, the "
    "renormalisation is exact and the bound is as above; if E > em the block errs by less than "
    "n 2^(E-1-F) + 2^(E-G) + 2^(E-G+R) + 2^(E-F) + 1/2 ulp(d_j) <= (n+1) 2^(E-F) + 1/2 "
    "ulp(d_j), since (1 + 2^R) 2^F <= n 2^(G-1) (checked when the lemmas are built). Where "
    "bnd.renormlo fails (bf16 and tf32 products reach 2^-266) the bound is false: products "
    "2^-151 + 2^-151 + 2^-170 and c = 0 floor to the tie 2^-150, which rounds to 0.")


def _tr_tail_lemmas(tag: str, K, T, em, Et, Tp, sc, S2, cbits, total: int, Vmax: int,
                    Fm: int, F: int, F2: int, special_trunc: bool = False) -> list[Lemma]:
    """bnd.emlow, bnd.tailE, bnd.tailT, bnd.tailc and bnd.tailsum of a TR tail
    (mma._tr_tail) cut at (T, em): e_max's lower bound, E's range, Tp and sc as T and c
    rounded down at E, and their wrap-free sum S. special_trunc (GTR-FDPA): a nonzero c with
    e_c < E - F - 1 gives sc = 0 (Algorithm 11)."""
    import z3
    fc = fp.fmt("f32")
    tc = fc.t
    lemmas: list[Lemma] = []
    uc = fp.decode(fc, _bv(K, cbits, fc.storage))
    cfin = [z3.Not(uc.nan.v), z3.Not(uc.inf.v)]
    wT, ew_f, ew = T.size(), em.size(), Et.size()
    Tv, emv, Ev = z3.BitVec("T_", wT), z3.BitVec("em_", ew_f), z3.BitVec("E_", ew)
    cut_T = [(T, Tv), (em, emv)]
    emw = z3.SignExt(ew - ew_f, emv)
    # -- the fused e_max is at least the zero-term key (exponent ranges of the cuts)
    emlo = -(1 << (ew_f - 3))
    lemmas.append(Lemma(f"{tag}.bnd.emlow", f"e_max >= {emlo}", [em < emlo]))
    # -- the tail's E: at least em and the exponent of a nonzero c, at most Vmax
    Et_c = _sub(Et, cut_T)
    if not free_vars(Et_c) <= {"em_"} | free_vars(cbits):
        raise NotDecomposable(f"{tag}: the tail's E is not a function of (em, c)")
    ecw = z3.SignExt(ew - uc.exp.w, uc.exp.v)
    lemmas.append(Lemma(f"{tag}.bnd.tailE", f"the tail aligns at E >= em and >= the "
                        f"exponent of a nonzero c, E <= {Vmax}",
                        cfin + [emv <= Vmax, emv >= emlo,
                                z3.Not(z3.And(Et_c >= emw, Et_c <= Vmax,
                                              z3.Implies(z3.Not(uc.zero.v), Et_c >= ecw)))]))
    rng = [emv <= Vmax, emv >= emlo, Ev <= Vmax]
    # -- Tp = RD_F2(T 2^(em-F)) at E: 0 <= T 2^(em-F) - Tp 2^(E-F2) < 2^(E-F2)
    Tp_c = _sub(_sub(Tp, cut_T), [(_sub(Et, cut_T), Ev)])
    if not free_vars(Tp_c) <= {"T_", "em_", "E_"}:
        raise NotDecomposable(f"{tag}: Tp is not a function of (T, em, E)")
    k2 = F2 - Fm
    Dm = k2 + total.bit_length() + 1
    WW = wT + k2 + Dm + 8
    ewd = ew + 2
    d = z3.SignExt(2, Ev) - z3.SignExt(2, emw)
    dW = z3.SignExt(WW - ewd, d) if WW > ewd else d
    Xt = z3.SignExt(WW - wT, Tv) << (z3.BitVecVal(k2 + Dm, WW) - dW)
    Yt = z3.SignExt(WW - Tp_c.size(), Tp_c) << Dm
    bT = (total << max(k2, 0)) + 1
    claimT = z3.And(Tp_c <= bT, Tp_c >= -bT,
                    z3.Implies(d <= Dm, z3.And(Xt - Yt >= 0, Xt - Yt < (1 << Dm),
                                               z3.Implies(d == 0, Xt == Yt))),
                    z3.Implies(d > Dm, Tp_c == z3.If(Tv < 0, z3.BitVecVal(-1, Tp_c.size()),
                                                     z3.BitVecVal(0, Tp_c.size()))))
    lemmas.append(Lemma(f"{tag}.bnd.tailT", "T is aligned at E rounding down to units "
                        "2^(E-F2): error in [0, 2^(E-F2)), none when E = em (any E >= em)",
                        rng + [Tv < total, Tv > -total, Ev >= emw, z3.Not(claimT)]))
    # -- sc = RD_F(c) at E: 0 <= c - sc 2^(E-Fm) < 2^(E-F)
    sc_c = _sub(sc, [(Et, Ev)])
    if not free_vars(sc_c) <= {"E_"} | free_vars(cbits):
        raise NotDecomposable(f"{tag}: sc is not a function of (c, E)")
    G0 = max(0, tc - Fm)
    Dc = Fm + G0 + 2
    if F > Fm + Dc + G0:
        raise NotDecomposable(f"{tag}: F_claim {F} is out of range")
    wsc = sc_c.size()
    WC = wsc + tc + Dc + G0 + 8
    dc = z3.SignExt(2, Ev) - z3.SignExt(2, ecw)
    dcW = z3.SignExt(WC - ewd, dc)
    Cu = z3.ZeroExt(WC - uc.sig.w, uc.sig.v) << (z3.BitVecVal(Fm - tc + G0 + Dc, WC) - dcW)
    Cs = z3.If(uc.sign.v, -Cu, Cu)
    Yc = z3.SignExt(WC - wsc, sc_c) << (Dc + G0)
    unit = 1 << (Dc + G0 + Fm - F)
    bc = 1 << (tc + 2 + max(Fm - tc, 0))
    claimC = z3.And(sc_c <= bc, sc_c >= -bc,
                    z3.Implies(uc.zero.v, sc_c == 0),
                    z3.Implies(z3.And(z3.Not(uc.zero.v), dc <= Dc),
                               z3.And(Cs - Yc >= 0, Cs - Yc < unit)),
                    z3.Implies(z3.And(z3.Not(uc.zero.v), dc > Dc),
                               sc_c == z3.If(uc.sign.v, z3.BitVecVal(-1, wsc),
                                             z3.BitVecVal(0, wsc))))
    if special_trunc:       # Algorithm 11: a c below E - F - 1 is dropped
        drop = z3.And(z3.Not(uc.zero.v), dc > Fm + 1)
        claimC = z3.And(z3.Implies(drop, sc_c == 0), z3.Implies(z3.Not(drop), claimC))
    lemmas.append(Lemma(f"{tag}.bnd.tailc", f"c is aligned at E rounding down to units "
                        f"2^(E-{Fm}): error in [0, 2^(E-F)) (any E >= its exponent)"
                        + ("; a nonzero c with e_c < E - F - 1 gives 0" if special_trunc else ""),
                        cfin + [Ev <= Vmax, z3.Implies(z3.Not(uc.zero.v), Ev >= ecw),
                                z3.Not(claimC)]))
    # -- S = Tp + sc 2^(F2-F), without wrap-around
    Tpv, scv = z3.BitVec("Tp_", Tp.size()), z3.BitVec("sc_", sc.size())
    S2_c = _sub(S2, [(Tp, Tpv), (sc, scv)])
    if not free_vars(S2_c) <= {"Tp_", "sc_"}:
        raise NotDecomposable(f"{tag}: S is not a function of (Tp, sc)")
    WS = max(S2.size(), Tp.size(), sc.size() + k2) + 4
    ext = lambda x: z3.SignExt(WS - x.size(), x)
    lemmas.append(Lemma(f"{tag}.bnd.tailsum", "S = Tp + sc 2^(F2-F) exactly",
                        [Tpv <= bT, Tpv >= -bT, scv <= bc, scv >= -bc,
                         z3.Not(ext(S2_c) == ext(Tpv) + (ext(scv) << k2))]))
    return lemmas


def _tr_G(p: dict) -> int:
    """The fraction bits of the TR tail's T' (units 2^(E-G), mma._tr_tail): F2 under tail
    "algorithm" (the parameter absent), F2 + 1 under tail "mmasim"."""
    return p["F2"] + (1 if p.get("tail", "algorithm") == "mmasim" else 0)


def _tr_sum(blk: Block, renorm: bool) -> BV:
    """The tail's sum S = Tp + sc 2^(G-F), before mmasim's renormalisation (renorm: the theory
    has tail "mmasim", whose trace must then hold the tr_renorm step)."""
    if renorm != (blk.renorm is not None):
        raise NotDecomposable("the trace's renormalisation step does not match the tail")
    return blk.renorm["S"] if renorm else blk.conv["S"]


def _tr_smax(total: int, k2: int, Fm: int) -> int:
    """A bound > |S| of the TR tail's sum (bnd.tailT's bound of Tp plus bnd.tailc's of sc,
    in units 2^(E-G))."""
    bT = (total << max(k2, 0)) + 1
    bc = 1 << (fp.fmt("f32").t + 2 + max(Fm - fp.fmt("f32").t, 0))
    return bT + (bc << k2) + 1


def _tr_renorm_lemmas(tag: str, blk: Block, cut: list, cbits, S, E, smax: int, n: int,
                      Fm: int, F: int, F2: int, G: int, Vmax: int) -> list[Lemma]:
    """bnd.renormlo and bnd.renorm of tail "mmasim" (mma._tr_renorm: S in units 2^(E-G)
    floored to q 2^k, k = max(p - F2, -126 - F2 + G - E, 0) with p the leading one of |S|),
    for COMBINATION_BOUND_TR: every nonzero product's key and a nonzero c's exponent are at
    least Elo = -126 - F2 + F (so E >= Elo whenever S != 0); for |S| < smax and E in
    [Elo, Vmax] the floor errs by less than 2^(E-G+R) and is exact when S is a multiple of
    2^(G-F) (the case E = em)."""
    import z3
    Elo = mma._TR_EMIN - F2 + F
    fc = fp.fmt("f32")
    K = blk.c_in.k
    uc = fp.decode(fc, _bv(K, cbits, fc.storage))
    terms = blk.fs["terms"]
    es = [_sub(e.v, cut) for e in blk.fs["e"]]
    W16 = lambda x: z3.SignExt(max(0, 16 - x.size()), x)
    hyp = [z3.Not(uc.nan.v), z3.Not(uc.inf.v)]
    for t in terms:
        hyp += [z3.Not(_sub(t.inf.v, cut)), z3.Not(_sub(t.nan.v, cut))]
    claim = [z3.Implies(z3.Not(_sub(t.zero.v, cut)), W16(e) >= Elo) for t, e in zip(terms, es)]
    claim.append(z3.Implies(z3.Not(uc.zero.v), W16(uc.exp.v) >= Elo))
    lemmas = [Lemma(f"{tag}.bnd.renormlo", f"a nonzero product's key and a nonzero c's exponent "
                    f"are at least {Elo} (so the renormalisation's floor at 2^(-126-F2) is no "
                    f"coarser than 2^(E-F))", hyp + [z3.Not(z3.And(*claim))])]
    # the floor
    Sv, Ev = z3.BitVec("S_", S.size()), z3.BitVec("E_", E.size())
    pr = [(S, Sv), (E, Ev)]
    q = _sub(_sub(blk.renorm["q"].v, cut), pr)
    k = _sub(_sub(blk.renorm["k"].v, cut), pr)
    if not free_vars(q, k) <= {"S_", "E_"}:
        raise NotDecomposable(f"{tag}: the renormalisation is not a function of (S, E)")
    R = max(smax.bit_length() - 1 - F2, G - F, 0)
    if (1 + (1 << R)) << F > n << (G - 1):
        raise NotDecomposable(f"{tag}: the renormalisation's error exceeds the slack of the bound")
    W = S.size() + R + 4
    kw = k.size()
    sx = lambda x: z3.SignExt(W - x.size(), x)
    kW = z3.ZeroExt(W - kw, k) if W > kw else k
    qk = sx(q) << kW
    Sx = sx(Sv)
    mask = (1 << (G - F)) - 1
    claim = z3.And(k >= 0, k <= R, qk <= Sx, Sx - qk < (z3.BitVecVal(1, W) << kW),
                   z3.Implies(Sv & mask == 0, qk == Sx))
    lemmas.append(Lemma(f"{tag}.bnd.renorm", f"the renormalisation floors S 2^(E-G) by less than "
                        f"2^(E-G+{R}), exactly when S is a multiple of 2^(G-F) (E >= {Elo})",
                        [Sv < smax, Sv > -smax, Ev >= Elo, Ev <= Vmax, z3.Not(claim)]))
    return lemmas


def _bound_lemmas_tr(st: Structure, F_claim: int | None) -> list[Lemma]:
    """The Table 9 bound lemmas of a TR-FDPA chain: the fused sum as for T-FDPA, then the TR
    tail (mma._tr_tail) at the interface (T, em): the RD alignments of T and c at E, their
    wrap-free sum S, and the RNE-FP32 conversion of S 2^(E-F2). See COMBINATION_BOUND_TR."""
    import z3
    m, K, inp = st.model, st.K, st.inp
    p = m.theory.param_dict
    rf, mode, sf = mma.rho_of("RNE-FP32")
    Fm, F2 = p["F"], p["F2"]
    Gu = _tr_G(p)                # T' in units 2^(E-Gu): F2, or F2 + 1 under tail "mmasim"
    F = Fm if F_claim is None else F_claim
    if p.get("align_round", "RD") != "RD":
        raise NotDecomposable("the TR bound lemmas take align_round = RD")
    fc = fp.fmt("f32")
    tc = fc.t
    lemmas: list[Lemma] = []
    prev_out = None
    for j, blk in enumerate(st.blocks):
        tag = f"block{j}"
        if blk.tr is None or blk.fs is None:
            raise NotDecomposable(f"{tag}: no TR tail in the trace")
        if blk.fc != "f32":
            raise NotDecomposable(f"{tag}: the TR bound lemmas take an f32 accumulator")
        cut_D = [(prev_out.v, z3.BitVec("D_", fc.storage))] if prev_out is not None else []
        cbits = z3.BitVec("D_", fc.storage) if prev_out is not None else inp.c.v
        fused, total, Vmax = _bnd_fused(tag, m, blk, cut_D, F, Fm, sf)
        lemmas += fused
        tr = blk.tr
        T, em = _sub(tr["T"].v, cut_D), _sub(tr["e_max"].v, cut_D)
        Et, Tp, sc = (_sub(tr[k].v, cut_D) for k in ("E", "Tp", "sc"))
        S2 = _sub(_tr_sum(blk, Gu != F2).v, cut_D)
        N, P, Q = (_sub(blk.sp[k].v, cut_D) for k in ("nan", "pinf", "ninf"))
        Z = _sub(blk.conv["zero_sign"].v, cut_D)
        out = _sub(blk.out.v, cut_D)
        uc = fp.decode(fc, _bv(K, cbits, fc.storage))
        cfin = [z3.Not(uc.nan.v), z3.Not(uc.inf.v)]
        # -- flags: finite terms and c raise none; a flag gives a non-finite output; a
        #    non-finite product or c raises one
        terms = blk.fs["terms"]
        tfin = []
        for t in terms:
            tfin += [z3.Not(_sub(t.inf.v, cut_D)), z3.Not(_sub(t.nan.v, cut_D))]
        lemmas.append(Lemma(f"{tag}.bnd.flags", "finite terms and c raise no NaN/Inf flag",
                            tfin + cfin + [z3.Or(N, P, Q)]))
        lemmas.append(Lemma(f"{tag}.bnd.raise", "a non-finite product or c raises a flag",
                            [z3.Not(z3.And(*(tfin + cfin))), z3.Not(z3.Or(N, P, Q))]))
        Nv, Pv, Qv = (z3.Bool(n) for n in ("N_", "P_", "Q_"))
        G = _sub(out, [(N, Nv), (P, Pv), (Q, Qv)])
        ug = fp.decode(sf, _bv(K, G, sf.storage))
        lemmas.append(Lemma(f"{tag}.bnd.special", "a NaN/Inf flag gives a NaN or Inf output",
                            [z3.Or(Nv, Pv, Qv), z3.Not(z3.Or(ug.nan.v, ug.inf.v))]))
        lemmas += _tr_tail_lemmas(tag, K, T, em, Et, Tp, sc, S2, cbits, total, Vmax, Fm, F, Gu)
        if blk.renorm is None:
            # -- the output conversion of S 2^(E-F2)
            lemmas.append(_bnd_out(tag, K, out, S2, Et, N, P, Q, Z, S2.size(), F2, rf, sf,
                                   mode == "RNE"))
        else:
            # -- tail "mmasim": S renormalised and floored to q 2^X, then RNE of q 2^X
            n = len(terms)
            smax = _tr_smax(total, Gu - Fm, Fm)
            lemmas += _tr_renorm_lemmas(tag, blk, cut_D, cbits, S2, Et, smax, n, Fm, F, F2, Gu,
                                        Vmax)
            q = _sub(blk.conv["S"].v, cut_D)
            X = _sub(blk.conv["exp"].v, cut_D)
            lemmas.append(_bnd_out(tag, K, out, q, X, N, P, Q, Z, q.size(), 0, rf, sf,
                                   mode == "RNE"))
        prev_out = blk.out
    if not st.out.v.eq(prev_out.v):
        raise NotDecomposable("the output is not the last block's output")
    return lemmas


# ============================================================================================
# Monotonicity of T-FDPA chains
# ============================================================================================

COMBINATION_MONOTONIC_FDPA = (
    "per block, a fused sum of n terms (products, and the accumulator: c in block 1, the cut "
    "D_ in a later one) with E = max_t key_t (checked syntactically: key_t = the term's "
    "exponent, or zero_exp for a zero term), A_t(E) each term aligned at E and truncated "
    "toward zero, S = sum_t A_t(E) (checked syntactically, wrap-free: |A_t| < 2^mw_t, "
    "sum_t 2^mw_t <= 2^(w-1)) and the output G(S, E, N, P, Q, Z) once those are cut. "
    "mono.range: every key lies in [lo, hi] or the term is zero and aligns to 0 at every E; "
    "mono.flags: finite block inputs take the finite path (N, P, Q false). Two inputs x, y "
    "that differ in one addend j whose value increases (the claim's order), at E_x, E_y: "
    "(i) E_x = E_y = V: mono.same gives A_j(x, V) <= A_j(y, V), the other terms are equal, so "
    "S_x <= S_y. (ii) E_x < E_y: the other keys are equal on both sides, so key_j(y) = E_y; "
    "mono.coarsen: another term aligned at E_y is its alignment at E_x truncated toward zero "
    "by d = E_y - E_x bits, so in units 2^(E_x - F) it loses less than 2^d; mono.gain.up: "
    "A_j(y, E_y) 2^d - A_j(x, E_x) >= (n - 1) 2^d; so S_y 2^d >= S_x. (iii) E_x > E_y: "
    "likewise key_j(x) = E_x, the other terms gain precision at E_y and lose (in units "
    "2^(E_y - F)) less than 2^d each, mono.gain.down: A_j(y, E_y) - A_j(x, E_x) 2^d >= (n - 1) "
    "2^d. In every case S_x 2^E_x <= S_y 2^E_y as real numbers, and mono.out (the output "
    "conversion is non-decreasing in the real value S 2^(E - F) for E in [lo, hi]; mono.zero: "
    "S = 0 gives a zero at any E: a side whose terms are all zero, with E below lo, has S = 0 "
    "and is compared at the other side's E, where mono.same orders the changed term against "
    "a zero) orders the block outputs, NaN excluded. A GST-FDPA group term is a function of "
    "its cut exact sum P, zero flag and scales (checked syntactically; scales equal on both "
    "sides): g.p.mono, g.p.range, g.p.zero and g.sum give P <= P' when one of its products "
    "grows, |P| < G 2^b, and g.zeroflag ties its zero flag to its products, so its term lemmas, "
    "proved for every such P, apply. Later blocks: their accumulator D <= D' (finite: the "
    "same lemmas with D as the changed addend; mono.inf: D = +Inf or -Inf with finite products "
    "gives that Inf; mono.nan: a NaN D gives NaN), so the order passes down the chain; the "
    "final IEEE addition of c (accumulate = add) is non-decreasing in both arguments and keeps "
    "NaN (add.nan): add.finite: a finite c and a non-NaN u give a non-NaN result; add.mono.u.*: "
    "u -> u' one step up in the order of the non-NaN values (ord(u) <= ord(u') <= ord(u) + 1: "
    "the next value, or the other zero) never lowers the result, for every finite c, proved case "
    "by case (the cases, on the difference of the operands' leading-1 exponents and for small "
    "differences on that exponent of u, cover every input); the non-NaN values of a format are one "
    "contiguous range of ord, so u <= u' is a chain of such steps through non-NaN values, each "
    "result non-NaN (add.finite), and the order holds by transitivity; add.mono.c.* likewise "
    "for c -> c' through finite values. A NaN on either side is outside the claim.")


COMBINATION_MONOTONIC_TR = (
    "a TR-FDPA block (seed 002 Algorithm 10; chains below): the fused sum of the n products only, "
    "T at em (value T 2^(em-F), F fraction bits), then the tail at E: Tp = T rounded down to "
    "units 2^(E-F2), sc = c rounded down to units 2^(E-F), S = Tp + sc 2^(F2-F), output "
    "rho(S 2^(E-F2)) unless a flag is raised. The fused-sum lemmas are those of T-FDPA over "
    "the products (mono.range, coarsen, same, gain.down with n - 1 units; here gain.up asks n "
    "units, and t.lead: a nonzero term aligned at its own key is not zero). Two inputs x, y "
    "that differ in product j: (i) em_x = em_y: T_x <= T_y; (ii) em_x < em_y, d = em_y - "
    "em_x: T_y 2^d - T_x >= n 2^d - (n-1)(2^d - 1) >= 2^d, i.e. val(T_y) >= val(T_x) + "
    "2^(em_y-F); when every product of x is zero (em_x below every key) T_x = 0 and, by same "
    "and t.lead, T_y >= 1, the same inequality; (iii) em_x > em_y: val(T_y) >= val(T_x). "
    "The tail: bnd.emax, bnd.emlow, bnd.tailE and tr.E give E = max(em, e_c) (E = em for a "
    "zero c; e_c in [emin, emax], so E_y - E_x lies in the range out.d covers) in the range "
    "of bnd.tailT and bnd.tailc, which make Tp 2^(E-F2) = floor of "
    "val(T) to units 2^(E-F2) (exact when E = em) and sc 2^(E-F) = floor of c to units "
    "2^(E-F) (0 for a zero c) at every such E; tr.cexact: c is a multiple of 2^(e_c-F); "
    "bnd.tailsum: S = Tp + sc 2^(F2-F) without wrap-around, |S| < smax. A floor to a unit is "
    "non-decreasing in its argument and, at a finer unit, is never smaller. Let V = S "
    "2^(E-F2). (i) one E: V_x <= V_y. (ii) if E_y = em_y: V_y = val(T_y) + floor_y(c) > "
    "val(T_y) + c - 2^(em_y-F) >= val(T_x) + c >= V_x; else E_x = E_y = e_c and Tp is "
    "monotone. (iii) E_x = E_y, or E_x = em_x > E_y: V_x = val(T_x) + floor_x(c), val(T_x) "
    "is a multiple of 2^(em_x-F), itself a multiple of 2^(E_y-F2), so val(T_x) <= floor of "
    "val(T_y) at E_y, and floor_x(c) <= floor_y(c). c -> c' (T, em equal): E_x = E_y: "
    "monotone; E_y > E_x: E_y = e_c' and sc' is exact, V_y > val(T) - 2^(E_y-F2) + c', V_x "
    "<= val(T) + c, and tr.cgap gives c' - c >= 2^(E_y-F2); E_y < E_x: E_x = e_c, c exact "
    "and a multiple of 2^(E_y-F) (e_c > E_y), so c <= floor of c' at E_y, and Tp at the "
    "finer unit is no smaller. So V_x <= V_y; out.d<d> (one lemma per E_y - E_x, which the "
    "key ranges bound) orders the outputs, and tr.zero covers a side with no nonzero term "
    "and zero c (S = 0 gives a zero at any E). Flags: tr.nan: for finite inputs N = P and Q "
    "(the output is NaN, outside the claim); tr.special: otherwise Q gives -Inf, P +Inf, "
    "none the finite path; tr.flags.p<k>: a growing product keeps P raised and does not "
    "newly raise Q, so P_y gives out_y = +Inf, Q_x gives out_x = -Inf, and otherwise both "
    "sides take the finite path; tr.flags.c: a finite c changes no flag, so a raised flag "
    "gives equal outputs. Chains (K > L): block j > 1 takes the previous output D as its c "
    "(cut at D_; its lemmas are the same with D in c's place). x, y differing in a product of "
    "an earlier block have D_x <= D_y or a NaN there (the earlier block's argument), and the "
    "same products in block j: two finite D are the c step above; tr.dspecial: D = +Inf, "
    "-Inf, NaN raises P, Q, N, and tr.pq: P and Q raise N, so by tr.special D_y = +Inf gives "
    "out_y = +Inf and D_x = -Inf gives out_x = -Inf (or NaN, outside the claim), and a NaN D "
    "gives NaN; a product of block j with D equal on both sides is the product step, or, for "
    "a non-finite D, the same raised flag on both sides. Tail \"mmasim\" (here and for "
    "GTR-FDPA): read F2 as G = F2 + 1 throughout (T' in units 2^(E-G); tr.cgap: c' - c >= "
    "2^(e_c' - G)); S is the sum before the renormalisation, and the finite output G(S, E, Z) "
    "of out.d<d> and tr.zero includes the renormalising floor (to F2 fraction bits of "
    "max(2^floor(log2 |S 2^(E-G)|), 2^-126): a floor to a power-of-two grid that coarsens as "
    "|S| grows, non-decreasing in the value; out.d<d> prove the composite non-decreasing).")


COMBINATION_MONOTONIC_GTR = (
    "a GTR-FDPA block (seed 002 Algorithm 11; chains as for TR): two group sums (even and odd "
    "products), Te at ee and To at eo as in COMBINATION_MONOTONIC_TR (fused-sum lemmas per "
    "group, g<g>.t<t>.*, with gain.up asking n + 1 units, gain.down n units, and t.lead: a "
    "nonzero term at its own key is at least 2 units), merged at em = max(ee, eo) (gtr.em) as "
    "T = Xe + Xo, each X its group sum rounded down to units 2^(em-F) (gtr.rd.<g>, exact when "
    "em is the group's own e; |X| bounded, so T does not wrap, checked syntactically); then "
    "the TR tail, where c is dropped (sc = 0) when nonzero with e_c < E - F - 1 and rounded "
    "down otherwise (bnd.tailc), and the flag lemmas of COMBINATION_MONOTONIC_TR. Product j "
    "of group G grows (H the other group, u(e) = 2^(e-F)): ee_x = ee_y: Te and T grow, E is "
    "the same. ee_x < ee_y: val(Te_y) >= val(Te_x) + 2 u(ee_y) (gain.up: (n + 1) 2^d - "
    "(n - 1)(2^d - 1) >= 2 2^d; a group all zero at x: t.lead), so if em grows (em_y = ee_y) "
    "val(T_y) = val(Te_y) + floor of H at em_y > val(Te_y) + val(H) - u(em_y) >= val(T_x) + "
    "u(em_y), else em and T's floor are monotone; the tail then as in TR case (ii), and a c "
    "dropped at x is dropped at y too (E_y >= E_x), contributing 0 to both. ee_x > ee_y: "
    "val(Te_y) >= val(Te_x) + u(ee_x) (gain.down with n units; a group all zero at y: t.lead "
    "gives Te_x <= -2), so if em drops (em_x = ee_x > em_y) val(T_y) >= val(T_x) + u(em_x) "
    "(val(Te_x) + u(ee_x) and H's floor at em_x lie on the grid of em_y); at the tail, a "
    "negative c dropped at x (e_c < E_x - F - 1) but kept at y costs less than u(E_x) (|c| < "
    "u(E_x)/2, and rounding down at E_y < E_x loses less than u(E_y) <= u(E_x)/2), paid by "
    "that unit; otherwise as in TR case (iii). c -> c' (T, em equal): at "
    "one E, gtr.csame; E_y > E_x: c' exact (tr.cexact) and c' - max(c, 0) >= 2^(E_y-F2) "
    "(tr.cgap, also at c = 0), which pays for T's floor at the coarser E_y; E_y < E_x: c "
    "exact and on the grid of E_y, so c <= what c' gives at E_y (rounded down, or 0 when "
    "dropped), and T's floor at the finer E_y is no smaller. out.d<d>, tr.zero and chains "
    "of blocks as in TR.")


def _term_vars(t: "mma.Term") -> set[str]:
    return free_vars(t.sign.v, t.e.v, t.sig.v, t.zero.v, t.inf.v, t.nan.v)


def _sub_term(K, t: "mma.Term", pairs) -> "mma.Term":
    from ..bits import Bool
    b = lambda x: Bool(K, _sub(x.v, pairs))
    v = lambda x: BV(K, x.w, x.s, _sub(x.v, pairs))
    return mma.Term(b(t.sign), v(t.e), v(t.sig), t.fb, b(t.zero), b(t.inf), b(t.nan))


def monotonic_lemmas_fdpa(st: Structure, order, term_le, reverse: bool = False) -> list[Lemma]:
    """The lemmas of the monotonicity claim for a T-FDPA chain (COMBINATION_MONOTONIC_FDPA).
    order(x, f), term_le(t1, t2): the claim's comparisons (query.prove). reverse: mono.out
    with its output inequality turned (a broken twin: satisfiable)."""
    import z3
    if st.why:
        raise NotDecomposable(st.why)
    m, K, inp = st.model, st.K, st.inp
    th, ins = m.theory, m.ins
    tr = th.op in _TR_OPS
    gtr = th.op in _GTR_OPS
    if not (th.op == "t_fdpa" and not ins.scale) and th.op != "gst_fdpa" and not (tr or gtr):
        raise NotDecomposable(f"op {th.op}: the monotonicity decomposition covers t_fdpa and "
                              "gst_fdpa chains and TR-FDPA / GTR-FDPA chains")
    if (tr or gtr) and (st.acc is not None or th.param_dict.get("align_round", "RD") != "RD"):
        raise NotDecomposable("the TR/GTR-FDPA monotonicity decomposition takes align_round "
                              "= RD and no final addition")
    zero_exp = th.param_dict.get("zero_exp", "excluded")
    fmt_of = {str(x.v): ins.a for x in inp.a}
    fmt_of.update({str(x.v): ins.b for x in inp.b})
    fmt_of[str(inp.c.v)] = ins.c
    scale_names = {str(x.v) for x in (inp.sa or []) + (inp.sb or [])}
    fmt_of.update({n: ins.scale for n in scale_names})
    pair_of = {frozenset((str(x.v), str(y.v))): k for k, (x, y) in enumerate(zip(inp.a, inp.b))}
    fd = mma.rho_of(th.param_dict.get("rho", "RNE-FP32"))[2]     # TR-FDPA: RNE-FP32
    fconv = [fp.fmt(th.convert)] if th.convert else []

    def rng(f):
        fs = [fp.fmt(f)] + fconv
        return min(x.emin for x in fs), max(x.emax for x in fs)

    def fin(names, side=""):
        out = []
        for n in sorted(names):
            f = fmt_of[n]
            u = fp.decode(f, BV(K, fp.fmt(f).storage, False, z3.BitVec(n + side, fp.fmt(f).storage)))
            out.append(z3.Not((u.nan | u.inf).v))
        return out

    lemmas: list[Lemma] = []
    prev_out = None
    seen_vars: set[str] = set()

    def fused(tag, blk, fs_, aligned, S_node, cut, up=0, down=0, lead=0):
        """The lemmas of one fused sum (its terms aligned at its e_max): range, coarsen, same,
        gain.up / gain.down (asking n - 1 + up / n - 1 + down units), lead (lead > 0: a
        nonzero term aligned at its own key is at least `lead` units). Returns the cut
        quantities the block's output lemmas use."""
        nonlocal seen_vars
        terms = fs_["terms"]
        Eraw = fs_["e_max"]
        keyed = [mma._zero_key(K, t.zero, e, e.w, zero_exp) for t, e in zip(terms, fs_["e"])]
        mx = keyed[0]
        for e in keyed[1:]:
            mx = mma.bvmax(mx, e)
        if not mx.v.eq(Eraw.v):
            raise NotDecomposable(f"{tag}: e_max is not the max of the term keys")
        E = _sub(Eraw.v, cut)
        ew = E.size()
        F = fs_["F"]
        w = S_node.w
        al = [_sub(x.v, cut) for x in aligned]
        cterms = [_sub_term(K, t, cut) for t in terms]
        keys = [_sub(k.v, cut) for k in keyed]
        # GST-FDPA group terms: cut at the group's exact sum P (mono.group: per product)
        gcut = {}
        for gi, (eg, gv) in enumerate(blk.groups):
            if gv is None:
                raise NotDecomposable(f"{tag}: group {gi} has no group term")
            t = next((i for i, x in enumerate(terms) if x is gv["term"]), None)
            if t is None:
                raise NotDecomposable(f"{tag}: group {gi}'s term is not a fused-sum term")
            gcut[t] = _group_cut(K, tag, gi, eg, gv, cut, term_le, fin,
                                 lambda n: fp.fmt(fmt_of[n]).storage, pair_of, scale_names, lemmas,
                                 ins.scale)
            cterms[t] = _sub_term(K, cterms[t], gcut[t]["pairs"])
            keys[t] = _sub(keys[t], gcut[t]["pairs"])
        # which inputs each term reads, and its static exponent range
        info = []
        lo = hi = None
        for t, (term, a_t) in enumerate(zip(cterms, al)):
            vs = _term_vars(term)
            if t in gcut:
                if not vs <= gcut[t]["vars"] | scale_names:
                    raise NotDecomposable(f"{tag}: group term {t} reads more than its cut sum")
                gin = gcut[t]["inputs"]
                if gin & seen_vars:
                    raise NotDecomposable(f"{tag}: group term {t} shares inputs with another term")
                seen_vars |= gin
                ls_, hs_ = rng(ins.scale)
                info.append(("group", t, (2 * ls_, 2 * hs_)))
                lo = info[-1][2][0] if lo is None else min(lo, info[-1][2][0])
                hi = info[-1][2][1] if hi is None else max(hi, info[-1][2][1])
                continue
            if vs & seen_vars:
                raise NotDecomposable(f"{tag}: term {t} shares inputs with another term")
            seen_vars |= vs - {"D_"}
            if not vs:
                info.append(("const", None, None))
                if not z3.is_true(z3.simplify(term.zero.v)):
                    raise NotDecomposable(f"{tag}: constant term {t} is not a zero")
                continue
            if len(vs) == 2 and frozenset(vs) in pair_of:
                k = pair_of[frozenset(vs)]
                (la, ha), (lb, hb) = rng(ins.a), rng(ins.b)
                info.append(("product", k, (la + lb, ha + hb)))
            elif vs == {str(inp.c.v)} or vs == {"D_"}:
                f = ins.c if vs == {str(inp.c.v)} else blk.fc
                info.append(("acc", next(iter(vs)), rng(f)))
            else:
                raise NotDecomposable(f"{tag}: term {t} reads {sorted(vs)}")
            r = info[-1][2]
            lo = r[0] if lo is None else min(lo, r[0])
            hi = r[1] if hi is None else max(hi, r[1])
        zint = isinstance(zero_exp, int) and not isinstance(zero_exp, bool)
        if zint:
            lo, hi = min(lo, zero_exp), max(hi, zero_exp)
            # E is the max of the keys, so E >= the smallest key of every term: with a fixed
            # zero exponent, a term's key lies in [lo_t, hi_t] or is zero_exp (mono.range)
            lo = max(min(r[0], zero_exp) for kind_, _, r in info if kind_ != "const")
        n_var = len(info)      # the terms that can lose precision when E grows (all of them)
        span = hi - lo
        W2 = w + span + 3
        V, V1, V2 = (z3.BitVec(n, ew) for n in ("E_", "E1_", "E2_"))
        inr = lambda v: z3.And(v >= lo, v <= hi)
        wide = lambda x, wx: z3.SignExt(W2 - wx, x)
        shl = lambda x, d: x << z3.ZeroExt(W2 - ew, d)
        bounds = []
        for t, (term, a_t, key, (kind, ref, _r)) in enumerate(zip(cterms, al, keys, info)):
            gp = gcut[t]["pairs"] if t in gcut else []     # E first: it holds every key
            at = lambda v, a=a_t, gp=gp: _sub(_sub(a, [(E, v)]), gp)
            vs = _term_vars(term)
            if not free_vars(at(V)) <= vs | {"E_"}:
                raise NotDecomposable(f"{tag}: aligned term {t} reads more than its inputs and E")
            ls, rs = max(0, F - term.fb), max(0, term.fb - F)
            mw = term.sig.w + ls - rs
            bounds.append(mw)
            name = f"{tag}.t{t}"
            fx = gcut[t]["hyp"] if t in gcut else fin(vs)
            lemmas.append(Lemma(f"{name}.range", "the key lies in the term's static range, or the "
                                "term is zero (key zero_exp when fixed) and aligns to 0 at every "
                                "E; the aligned term is bounded",
                                fx + [z3.Not(z3.And(
                                    z3.Or(z3.And(key >= _r[0], key <= _r[1]) if _r else z3.BoolVal(False),
                                          z3.And(term.zero.v, at(V) == 0,
                                                 key == zero_exp if zint else z3.BoolVal(True))),
                                    z3.Implies(key <= V, z3.And(at(V) < (1 << mw),
                                                                at(V) > -(1 << mw)))))]))
            lemmas.append(Lemma(f"{name}.coarsen", "aligned at a larger E, the term is its "
                                "finer alignment truncated toward zero",
                                fx + [inr(V1), inr(V2), key <= V1, V1 < V2,
                                      z3.Not(at(V2) == _rz_shift(at(V1), V2 - V1, w, ew))]))
            if kind == "const":     # a constant addend (a zero accumulator) never changes
                continue
            # the y side: the term's inputs primed (a group term: its cut sum; scales stay)
            if kind == "group":
                pr = gcut[t]["prime"]
            else:
                pr = [(z3.BitVec(n, fp.fmt(fmt_of[n]).storage), z3.BitVec(n + "p", fp.fmt(fmt_of[n]).storage))
                      for n in sorted(vs)]
            aty = lambda v, a=a_t, gp=gp: _sub(_sub(_sub(a, [(E, v)]), gp), pr)
            keyy = _sub(key, pr)
            fy = [_sub(h, pr) for h in gcut[t]["hyp"]] if kind == "group" else fin(vs, "p")
            if kind == "group":
                larger = gcut[t]["larger"]
            elif kind == "product":
                xa, xb = inp.a[ref], inp.b[ref]
                ya, yb = (BV(K, x.w, False, _sub(x.v, pr)) for x in (xa, xb))
                larger = z3.Not(term_le(mma.product(fp.decode(ins.a, ya), fp.decode(ins.b, yb)),
                                        mma.product(fp.decode(ins.a, xa), fp.decode(ins.b, xb))).v)
            else:
                f = fmt_of[ref]
                xv = BV(K, fp.fmt(f).storage, False, z3.BitVec(ref, fp.fmt(f).storage))
                yv = BV(K, xv.w, False, _sub(xv.v, pr))
                larger = (order(xv, f) <= order(yv, f)).v
            hyp = fx + fy + [larger]
            same = hyp + [inr(V), key <= V, keyy <= V, z3.Not(at(V) <= aty(V))]
            sigs = gcut[t]["scale_sigs"] if kind == "group" else []
            if sigs and all(x.w > 1 for x in sigs):
                # a group term is |P| times the scales' significands (ue4m3: 4 bits each): the
                # product is nonlinear, so the lemma is split by the significands' values
                # (every pair, so the cases cover every input; each case is linear)
                (xa, xb), wa, wb = sigs, sigs[0].w, sigs[1].w
                for i in range(1 << wa):
                    for j in range(1 << wb):
                        lemmas.append(Lemma(f"{name}.same.s{i}.{j}", "at one E, a larger addend "
                                            f"aligns no lower (scale significands {i} and {j})",
                                            same + [xa.v == i, xb.v == j]))
            else:
                lemmas.append(Lemma(f"{name}.same", "at one E, a larger addend aligns no lower", same))
            g = (n_var - 1)
            # TR-FDPA: c is aligned after the fused sum (rounded down at the tail's E), so a
            # product that raises e_max must also pay for c's loss: n units, not n - 1
            gu, gd = g + up, g + down
            lemmas.append(Lemma(f"{name}.gain.up", "an addend that raises E gains at least "
                                f"{_units(up)} units of the coarser alignment",
                                hyp + [inr(V1), inr(V2), key <= V1, V1 < V2, keyy == V2,
                                       z3.Not(shl(wide(aty(V2), w), V2 - V1) - wide(at(V1), w)
                                              >= shl(z3.BitVecVal(gu, W2), V2 - V1))]))
            if lead == 1:
                lemmas.append(Lemma(f"{name}.lead", "a nonzero term aligned at its own key is "
                                    "not zero", fx + [z3.Not(term.zero.v), inr(key),
                                                      at(key) == 0]))
            elif lead:
                lemmas.append(Lemma(f"{name}.lead", "a nonzero term aligned at its own key is "
                                    f"at least {lead} units in magnitude",
                                    fx + [z3.Not(term.zero.v), inr(key),
                                          at(key) < lead, at(key) > -lead]))
            lemmas.append(Lemma(f"{name}.gain.down", "an addend that lowers E gains at least "
                                f"{_units(down)} units of the coarser alignment",
                                hyp + [inr(V1), inr(V2), keyy <= V2, V2 < V1, key == V1,
                                       z3.Not(wide(aty(V2), w) - shl(wide(at(V1), w), V1 - V2)
                                              >= shl(z3.BitVecVal(gd, W2), V1 - V2))]))
        if sum(1 << b for b in bounds) > 1 << (w - 1):
            raise NotDecomposable(f"{tag}: the sum may wrap around in {w} bits")
        A = [z3.BitVec(f"A{t}_", w) for t in range(len(al))]
        S = _sub(S_node.v, cut)
        if not free_vars(_sub(S, list(zip(al, A)))) <= {f"A{t}_" for t in range(len(al))}:
            raise NotDecomposable(f"{tag}: S is not a function of the aligned terms")
        return {"E": E, "ew": ew, "w": w, "lo": lo, "hi": hi, "span": span, "bounds": bounds,
                "n_var": n_var, "V": V, "V1": V1, "V2": V2, "S": S, "gcut": gcut,
                "cterms": cterms}

    for j, blk in enumerate(st.blocks):
        tag = f"block{j}"
        cut: list = []
        if prev_out is not None:
            D = z3.BitVec("D_", fp.fmt(blk.fc).storage)
            cut = [(prev_out.v, D)]
            fmt_of["D_"] = blk.fc
        if gtr:     # two group sums; n + 1 / n units: the other group and c also round down
            rs = [fused(f"{tag}.g{gi}", blk, fs_p, al_p, S_p, cut, 2, 1, 2)
                  for gi, (fs_p, al_p, S_p) in enumerate(blk.parts)]
            lemmas += _tr_monotonic_tail(st, blk, tag, order, term_le, reverse,
                                         min(r["lo"] for r in rs), max(r["hi"] for r in rs), 0,
                                         fin, [sum(1 << b for b in r["bounds"]) for r in rs],
                                         cut)
            prev_out = blk.out
            continue
        r = fused(tag, blk, blk.fs, blk.aligned, blk.S, cut, *((1, 0, 1) if tr else ()))
        E, ew, w, lo, hi, span, bounds, V, V1, V2, S, gcut, cterms = (
            r[k] for k in ("E", "ew", "w", "lo", "hi", "span", "bounds", "V", "V1", "V2", "S",
                           "gcut", "cterms"))
        if tr:
            lemmas += _tr_monotonic_tail(st, blk, tag, order, term_le, reverse, lo, hi,
                                         sum(1 << b for b in bounds), fin, None, cut)
            prev_out = blk.out
            continue
        N, P, Q = (_sub(blk.sp[k].v, cut) for k in ("nan", "pinf", "ninf"))
        Z = _sub(blk.conv["zero_sign"].v, cut)
        out = _sub(blk.out.v, cut)
        Sv, Ev = z3.BitVec("S_", w), z3.BitVec("E_", ew)
        Nv, Pv, Qv, Zv = (z3.Bool(n) for n in ("N_", "P_", "Q_", "Z_"))
        G = _sub(out, [(S, Sv), (E, Ev), (N, Nv), (P, Pv), (Q, Qv), (Z, Zv)])
        if free_vars(G) - {"S_", "E_", "N_", "P_", "Q_", "Z_"}:
            raise NotDecomposable(f"{tag}: the output is not a function of (S, E, N, P, Q, Z)")
        # the block's inputs: each term's (after the D_ cut), a group term's products and scales
        blk_vars = set().union(*((gcut[t]["inputs"] | _term_vars(ct)) if t in gcut else
                                 _term_vars(ct) for t, ct in enumerate(cterms)))
        blk_vars = {_n for _n in blk_vars if _n in fmt_of}
        lemmas.append(Lemma(f"{tag}.flags", "finite inputs take the finite path",
                            fin(blk_vars) + [z3.Or(N, P, Q)]))
        Gf = lambda s, e, z: BV(K, fd.storage, False, _sub(G, [(Sv, s), (Ev, e), (Nv, z3.BoolVal(False)),
                                                              (Pv, z3.BoolVal(False)),
                                                              (Qv, z3.BoolVal(False)), (Zv, z)]))
        S1, S2 = z3.BitVec("S1_", w), z3.BitVec("S2_", w)
        Z1, Z2 = z3.Bool("Z1_"), z3.Bool("Z2_")
        g1, g2 = Gf(S1, V1, Z1), Gf(S2, V2, Z2)
        u1, u2 = fp.decode(fd, g1), fp.decode(fd, g2)
        smax = sum(1 << b for b in bounds)
        viol = (order(g1, fd.name) < order(g2, fd.name)) if reverse else \
            (order(g2, fd.name) < order(g1, fd.name))
        lemmas += _out_lemmas(tag, "F", V1, V2, S1, S2, smax, span, u1, u2, viol)
        g0 = Gf(z3.BitVecVal(0, w), V, Zv)
        lemmas.append(Lemma(f"{tag}.zero", "a zero sum gives a zero at any E",
                            [z3.Not(fp.decode(fd, g0).zero.v)]))
        if prev_out is not None:
            prods = blk_vars - {"D_"}
            dD = fp.decode(blk.fc, BV(K, D.size(), False, D))
            o = BV(K, fd.storage, False, out)
            uo = fp.decode(fd, o)
            lemmas.append(Lemma(f"{tag}.inf", "an infinite accumulator with finite products "
                                "gives that infinity",
                                fin(prods) + [dD.inf.v, z3.Not(z3.And(uo.inf.v, uo.sign.v == dD.sign.v))]))
            lemmas.append(Lemma(f"{tag}.nan", "a NaN accumulator gives a NaN output",
                                fin(prods) + [dD.nan.v, z3.Not(uo.nan.v)]))
        prev_out = blk.out
    if st.acc is not None:
        fdd = fp.fmt(ins.d)
        U, U2 = z3.BitVec("U_", fdd.storage), z3.BitVec("U2_", fdd.storage)
        Gadd = _sub(st.out.v, [(prev_out.v, U)])
        if not free_vars(Gadd) - {"U_"} <= {str(inp.c.v)} or str(inp.c.v) in seen_vars:
            raise NotDecomposable("the final addition is not a function of (u, c) alone")
        cc = inp.c
        c2 = z3.BitVec(str(cc.v) + "p", cc.w)
        ga = lambda u, c: BV(K, fdd.storage, False, _sub(Gadd, [(U, u), (cc.v, c)]))
        nn = lambda x: z3.Not(fp.decode(ins.d, x).nan.v)
        bv = lambda x: BV(K, fdd.storage, False, x)
        cv = lambda x: BV(K, cc.w, False, x)
        fc_ = fin({str(cc.v)})
        ex = lambda x, f: _lead_exp(fp.decode(f, x))
        step = lambda o1, o2: z3.And(o1 <= o2, o2 <= o1 + 1)
        fd_, fc2 = fp.fmt(ins.d), fp.fmt(ins.c)
        lemmas.append(Lemma("add.finite", "a finite c and a non-NaN chain output give a non-NaN "
                            "result", fc_ + [nn(bv(U)), z3.Not(nn(ga(U, cc.v)))]))
        # u -> u' one step up in the order (or the other zero), every c, case by case
        lemmas += _step_cases("add.mono.u", "the final addition is non-decreasing in the chain: "
                              "one step of u", fc_ + [nn(bv(U)), nn(bv(U2)),
                                                      step(order(bv(U), ins.d).v, order(bv(U2), ins.d).v),
                                                      (order(ga(U2, cc.v), ins.d) < order(ga(U, cc.v), ins.d)).v],
                              ex(bv(U), ins.d), ex(cv(cc.v), ins.c), fd_)
        lemmas += _step_cases("add.mono.c", "the final addition is non-decreasing in c: one step "
                              "of c", fc_ + fin({str(cc.v)}, "p") + [nn(bv(U)),
                                   step(order(cv(cc.v), ins.c).v, order(cv(c2), ins.c).v),
                                   (order(ga(U, c2), ins.d) < order(ga(U, cc.v), ins.d)).v],
                              ex(cv(cc.v), ins.c), ex(bv(U), ins.d), fc2)
        lemmas.append(Lemma("add.nan", "a NaN chain output gives a NaN result",
                            fc_ + [fp.decode(ins.d, bv(U)).nan.v, nn(ga(U, cc.v))]))
    elif not st.out.v.eq(prev_out.v):
        raise NotDecomposable("the output is not the last block's output")
    return lemmas


def _out_lemmas(tag: str, F: str, V1, V2, S1, S2, smax: int, span: int, u1, u2, viol) -> list[Lemma]:
    """out.d<d>: the output conversion G is non-decreasing in the value S 2^(E - F), one lemma
    per difference d = E2 - E1 in [-span, span] (a constant shift each; E1 free in the middle
    half of its range, so the text does not depend on the exponent range and is shared by
    every block with the same conversion and sum width). u1, u2: the decoded outputs
    G(S1, E1), G(S2, E2); viol: their order violated."""
    import z3
    half = 1 << (V1.size() - 3)
    out = []
    for dd in range(-span, span + 1):
        s1, s2 = z3.SignExt(abs(dd) + 2, S1), z3.SignExt(abs(dd) + 2, S2)
        le = (s1 <= (s2 << dd)) if dd >= 0 else ((s1 << -dd) <= s2)
        out.append(Lemma(f"{tag}.out.d{dd}", "the output conversion is non-decreasing in the "
                         f"value S 2^(E - {F}) (E2 - E1 = d)",
                         [V1 >= -half, V1 < half, V2 == V1 + dd, S1 < smax, S1 > -smax,
                          S2 < smax, S2 > -smax, le, z3.Not(u1.nan.v), z3.Not(u2.nan.v),
                          viol.v]))
    return out


def _vmax(m: Model, fc: str, sf) -> int:
    """A static bound of a block's alignment exponents: the largest product exponent (of the
    converted operands), c's (format fc) and the output's (format sf), plus 2."""
    fa, fb = (fp.fmt(m.theory.convert or f) for f in (m.ins.a, m.ins.b))
    return max(fa.emax + fb.emax, fp.fmt(fc).emax, sf.emax) + 2


def _gtr_merge_lemmas(st: Structure, blk: Block, tag: str, groups: list) -> tuple[list, int]:
    """GTR-FDPA's merge of its two group sums (Te at ee, To at eo) at em = max(ee, eo):
    T = Xe + Xo, each X the group sum rounded down to units 2^(em - F) (gtr.rd.<g>: X 2^d <=
    Tg < (X + 1) 2^d for d = em - eg, |X| <= the group's bound), gtr.em, and per group its
    e_max range (g<g>.bnd.emax from _bnd_fused, g<g>.emlow). Returns (lemmas, a bound > |T|)."""
    import z3
    m = st.model
    sf = fp.fmt("f32")
    Fm = m.theory.param_dict["F"]
    g = blk.gtr
    lemmas: list[Lemma] = []
    cuts, free = [], {}
    for gi, ((fs_, al_, S_), tot) in enumerate(zip(blk.parts, groups)):
        pseudo = Block(blk.c_in, blk.fc, fs=fs_, aligned=al_, S=S_)
        fl, tot2, _vm = _bnd_fused(f"{tag}.g{gi}", m, pseudo, [], Fm, Fm, sf)
        if tot2 != tot:
            raise NotDecomposable(f"{tag}: group {gi}'s bound differs")
        lemmas += [x for x in fl if x.name.endswith(".bnd.emax")]
        eg = fs_["e_max"].v
        lemmas.append(Lemma(f"{tag}.g{gi}.emlow", "a group's e_max is at least the zero key",
                            [eg < -(1 << (eg.size() - 3))]))
        Tg, egv = z3.BitVec(f"T{gi}_", S_.w), z3.BitVec(f"e{gi}_", eg.size())
        cuts += [(S_.v, Tg), (eg, egv)]
        free[gi] = (Tg, egv, -(1 << (eg.size() - 3)), tot)
    Tc = _sub(g["T"].v, cuts)
    emc = _sub(g["e_max"].v, cuts)
    names = {"T0_", "T1_", "e0_", "e1_"}
    if not free_vars(Tc) <= names or not free_vars(emc) <= {"e0_", "e1_"}:
        raise NotDecomposable(f"{tag}: the merge is not a function of the two group sums")
    if not (z3.is_app_of(Tc, z3.Z3_OP_BADD) and Tc.num_args() == 2):
        raise NotDecomposable(f"{tag}: the merged T is not the sum of two aligned groups")
    W = Tc.size()
    if groups[0] + groups[1] >= 1 << (W - 1):
        raise NotDecomposable(f"{tag}: the merged T may wrap around in {W} bits")
    (T0, e0, lo0, t0), (T1, e1, lo1, t1) = free[0], free[1]
    ewm = emc.size()
    se = lambda x: z3.SignExt(ewm - x.size(), x)
    vmax = _vmax(m, "f32", sf)
    rng = [e0 >= lo0, e1 >= lo1, se(e0) <= vmax, se(e1) <= vmax]
    lemmas.append(Lemma(f"{tag}.gtr.em", "the groups merge at em = max(e_even, e_odd)",
                        rng + [z3.Not(emc == z3.If(se(e0) >= se(e1), se(e0), se(e1)))]))
    for gi, X in enumerate((Tc.arg(0), Tc.arg(1))):
        Tg, eg, _lo, tot = free[gi]
        if not free_vars(X) <= {f"T{gi}_", "e0_", "e1_"}:
            raise NotDecomposable(f"{tag}: the merged term {gi} reads the other group")
        D = Tg.size() + 1
        WW = W + D + Tg.size() + 4
        d = z3.SignExt(2, emc) - z3.SignExt(ewm + 2 - eg.size(), eg)
        dW = z3.ZeroExt(WW - d.size(), d)
        Xw, Tw = z3.SignExt(WW - W, X), z3.SignExt(WW - Tg.size(), Tg)
        floor = z3.And(Xw << dW <= Tw, Tw < (Xw + 1) << dW)
        claim = z3.And(X <= tot, X >= -tot,
                       z3.If(d <= D, floor, X == z3.If(Tg < 0, z3.BitVecVal(-1, W),
                                                         z3.BitVecVal(0, W))))
        lemmas.append(Lemma(f"{tag}.gtr.rd.{gi}", "a group sum aligned at em is rounded down to "
                            "units 2^(em - F)", rng + [Tg < tot, Tg > -tot, z3.Not(claim)]))
    return lemmas, groups[0] + groups[1] + 1


def _units(extra: int) -> str:
    return "n - 1" if extra == 0 else ("n" if extra == 1 else f"n + {extra - 1}")


def _tr_monotonic_tail(st: Structure, blk: Block, tag: str, order, term_le, reverse: bool,
                       lo: int, hi: int, total: int, fin, groups: list | None = None,
                       cut: list = ()) -> list[Lemma]:
    """The TR tail's lemmas of COMBINATION_MONOTONIC_TR for one TR-FDPA block: the tail as a
    function of the cut (T, em) and its c (the input c; in a later block of a chain, the
    previous block's output cut as D_, `cut`). The bound's tail lemmas (bnd.emax,
    bnd.emlow, bnd.tailE, bnd.tailT, bnd.tailc, bnd.tailsum: Tp and sc are T and c rounded
    down at E) are reused as they are; tr.E, tr.cexact, tr.cgap, the flag lemmas, out.d<dd>
    and tr.zero are added. groups (GTR-FDPA, COMBINATION_MONOTONIC_GTR): the totals of the
    two group sums, merged at em = max(e_even, e_odd) by rounding each down (gtr.em,
    gtr.rd.<g>, g<g>.bnd.emax, g<g>.emlow), and c dropped below E - F - 1 (gtr.csame)."""
    import z3
    m, K, inp = st.model, st.K, st.inp
    ins, p = m.ins, m.theory.param_dict
    Fm, F2 = p["F"], _tr_G(p)      # T' in units 2^(E-F2); F2 + 1 under tail "mmasim"
    k2 = F2 - Fm
    if blk.fc != "f32" or blk.tr is None or k2 < 0:
        raise NotDecomposable(f"{tag}: the TR monotonicity lemmas take an f32 c and F2 >= F")
    fc = fp.fmt("f32")
    if Fm < fc.t:
        raise NotDecomposable(f"{tag}: F < the fraction bits of c")
    tr = blk.tr
    T, em, Et, sc = (_sub(tr[k].v, list(cut)) for k in ("T", "e_max", "E", "sc"))
    S2 = _sub(_tr_sum(blk, F2 != p["F2"]).v, list(cut))
    cvar = cut[0][1] if cut else inp.c.v
    if groups is None:
        keep = {f"{tag}.bnd.{k}" for k in ("emax", "emlow", "tailE", "tailT", "tailc", "tailsum")}
        lemmas = [lm for lm in _bound_lemmas_tr(st, None) if lm.name in keep]
        if not tr["T"].v.eq(blk.S.v):
            raise NotDecomposable(f"{tag}: the tail does not read the fused sum")
    else:
        lemmas, total = _gtr_merge_lemmas(st, blk, tag, groups)
        lemmas += _tr_tail_lemmas(tag, K, T, em, Et, _sub(tr["Tp"].v, list(cut)), sc, S2, cvar,
                                  total, _vmax(m, "f32", fc), Fm, Fm, F2, special_trunc=True)
    N, P, Q = (_sub(blk.sp[k].v, list(cut)) for k in ("nan", "pinf", "ninf"))
    Z, out = _sub(blk.conv["zero_sign"].v, list(cut)), _sub(blk.out.v, list(cut))
    cname = str(cvar)
    c2 = z3.BitVec(cname + "p", fc.storage)
    uc = fp.decode(fc, _bv(K, cvar, fc.storage))
    uc2 = fp.decode(fc, _bv(K, c2, fc.storage))
    cfin, cfin2 = fin({cname}), fin({cname}, "p")
    ew_f, ew = em.size(), Et.size()
    Tv, emv = z3.BitVec("T_", T.size()), z3.BitVec("em_", ew_f)
    emw = z3.SignExt(ew - ew_f, emv)
    emlo = -(1 << (ew_f - 3))
    Vmax = _vmax(m, "f32", fc)
    Ec = _sub(Et, [(T, Tv), (em, emv)])
    if not free_vars(Ec) <= {"em_", cname}:
        raise NotDecomposable(f"{tag}: the tail's E is not a function of (em, c)")
    ecw = z3.SignExt(ew - uc.exp.w, uc.exp.v)
    lemmas.append(Lemma(f"{tag}.tr.E", "the tail aligns at E = max(em, the exponent of c), "
                        "E = em for a zero c; a nonzero c's exponent lies in [emin, emax]",
                        cfin + [emv >= emlo, emv <= Vmax,
                                z3.Not(z3.And(
                                    Ec == z3.If(z3.Or(uc.zero.v, emw >= ecw), emw, ecw),
                                    z3.Implies(z3.Not(uc.zero.v),
                                               z3.And(ecw >= fc.emin, ecw <= fc.emax))))]))
    Ev = z3.BitVec("E_", ew)
    scc = _sub(sc, [(Et, Ev)])
    if not free_vars(scc) <= {"E_", cname}:
        raise NotDecomposable(f"{tag}: sc is not a function of (c, E)")
    mag = z3.ZeroExt(scc.size() - uc.sig.w, uc.sig.v) << (Fm - fc.t)
    lemmas.append(Lemma(f"{tag}.tr.cexact", "aligned at its own exponent, a nonzero c is exact: "
                        "sc 2^(E-F) = c",
                        cfin + [z3.Not(uc.zero.v), Ev == ecw,
                                z3.Not(scc == z3.If(uc.sign.v, -mag, mag))]))
    if groups is not None:
        scc2 = _sub(scc, [(cvar, c2)])
        ecw2 = z3.SignExt(ew - uc2.exp.w, uc2.exp.v)
        lemmas.append(Lemma(f"{tag}.gtr.csame", "at one E (at least the exponents of c and c'), "
                            "a larger c aligns no lower (dropped below E - F - 1 or rounded down)",
                            cfin + cfin2 + [(order(_bv(K, cvar, fc.storage), "f32") <
                                             order(_bv(K, c2, fc.storage), "f32")).v,
                                            Ev <= Vmax,
                                            z3.Implies(z3.Not(uc.zero.v), Ev >= ecw),
                                            z3.Implies(z3.Not(uc2.zero.v), Ev >= ecw2),
                                            z3.Not(scc <= scc2)]))
    # c' - c >= 2^(e_c' - F2) when c < c' and c' has the larger exponent (values in units
    # 2^(emin - t), scaled by 2^s so that the bound is an integer)
    s_ = max(0, F2 - fc.t)
    WV = fc.p + (fc.emax - fc.emin) + s_ + 4
    def val(u):
        sh = z3.ZeroExt(WV - u.exp.w, u.exp.v - fc.emin)
        v = z3.ZeroExt(WV - u.sig.w, u.sig.v) << sh
        return z3.If(u.sign.v, -v, v)
    bound = z3.BitVecVal(1, WV) << z3.ZeroExt(WV - uc2.exp.w, uc2.exp.v - fc.emin + (fc.t - F2 + s_))
    lemmas.append(Lemma(f"{tag}.tr.cgap", "c < c' with c' of the larger exponent (or c zero): "
                        "c' - c >= 2^(e_c' - F2)",
                        cfin + cfin2 + [(order(_bv(K, cvar, fc.storage), "f32") <
                                         order(_bv(K, c2, fc.storage), "f32")).v,
                                        z3.Not(uc2.zero.v),
                                        z3.Or(uc.zero.v, uc.exp.v < uc2.exp.v),
                                        z3.Not((val(uc2) - val(uc)) << s_ >= bound)]))
    # the special values: flags of the products and c
    names = {str(x.v) for x in inp.a + inp.b} | {cname}
    names &= free_vars(N, P, Q)        # this block's products and its c
    allfin = fin(names)
    lemmas.append(Lemma(f"{tag}.tr.nan", "finite inputs raise NaN only as +Inf and -Inf "
                        "products together", allfin + [z3.Not(N == z3.And(P, Q))]))
    Nv, Pv, Qv = (z3.Bool(n) for n in ("N_", "P_", "Q_"))
    Gs = _bv(K, _sub(out, [(N, Nv), (P, Pv), (Q, Qv)]), fc.storage)
    us = fp.decode(fc, Gs)
    pinf = fc.inf_code << fc.pad
    lemmas.append(Lemma(f"{tag}.tr.special", "the NaN flag gives NaN; else the -Inf flag gives "
                        "-Inf, else the +Inf flag +Inf",
                        [z3.Not(z3.And(z3.Implies(Nv, us.nan.v),
                                       z3.Implies(z3.And(z3.Not(Nv), Qv), Gs.v == pinf | (fc.sign_bit << fc.pad)),
                                       z3.Implies(z3.And(z3.Not(Nv), z3.Not(Qv), Pv), Gs.v == pinf)))]))
    cpr = [(cvar, c2)]
    lemmas.append(Lemma(f"{tag}.tr.flags.c", "the Inf flags do not depend on a finite c",
                        allfin + cfin2 + [z3.Not(z3.And(P == _sub(P, cpr), Q == _sub(Q, cpr)))]))
    for k, (xa, xb) in enumerate(zip(inp.a, inp.b)):
        if str(xa.v) not in names:
            continue                    # a product of another block
        pr = [(x.v, z3.BitVec(str(x.v) + "p", x.w)) for x in (xa, xb)]
        ya, yb = (BV(K, x.w, False, _sub(x.v, pr)) for x in (xa, xb))
        larger = z3.Not(term_le(mma.product(fp.decode(ins.a, ya), fp.decode(ins.b, yb)),
                                mma.product(fp.decode(ins.a, xa), fp.decode(ins.b, xb))).v)
        pn = sorted(str(x.v) for x in (xa, xb))
        lemmas.append(Lemma(f"{tag}.tr.flags.p{k}", f"product {k} grows: the +Inf flag stays "
                            "raised, the -Inf flag is not newly raised",
                            allfin + fin(pn, "p") + [larger, z3.Not(z3.And(
                                z3.Implies(P, _sub(P, pr)), z3.Implies(_sub(Q, pr), Q)))]))
    if cut:                             # a later block: its c is the previous output D
        prods = fin(names - {cname})
        lemmas.append(Lemma(f"{tag}.tr.pq", "the +Inf and -Inf flags together raise NaN",
                            [P, Q, z3.Not(N)]))
        lemmas.append(Lemma(f"{tag}.tr.dspecial", "an infinite or NaN accumulator raises its "
                            "flag", prods + [z3.Not(z3.And(
                                z3.Implies(z3.And(uc.inf.v, z3.Not(uc.sign.v)), P),
                                z3.Implies(z3.And(uc.inf.v, uc.sign.v), Q),
                                z3.Implies(uc.nan.v, N)))]))
    # the finite path: rho(S 2^(E - F2)), non-decreasing in the value (one lemma per E2 - E1)
    S2v = z3.BitVec("S_", S2.size())
    Zv = z3.Bool("Z_")
    F_ = z3.BoolVal(False)
    G = _sub(out, [(S2, S2v), (Et, Ev), (N, F_), (P, F_), (Q, F_), (Z, Zv)])
    if free_vars(G) - {"S_", "E_", "Z_"}:
        raise NotDecomposable(f"{tag}: the finite output is not a function of (S, E, Z)")
    bT = (total << k2) + 1
    bc = 1 << (fc.t + 2 + max(Fm - fc.t, 0))              # as bnd.tailT / bnd.tailc
    smax = bT + (bc << k2) + 1
    w2 = S2.size()
    if smax >= 1 << (w2 - 1):
        raise NotDecomposable(f"{tag}: the tail's sum may wrap around in {w2} bits")
    Gf = lambda s, e, z: _bv(K, _sub(G, [(S2v, s), (Ev, e), (Zv, z)]), fc.storage)
    S1, S2_ = z3.BitVec("S1_", w2), z3.BitVec("S2_", w2)
    V1, V2 = z3.BitVec("E1_", ew), z3.BitVec("E2_", ew)
    g1, g2 = Gf(S1, V1, z3.Bool("Z1_")), Gf(S2_, V2, z3.Bool("Z2_"))
    u1, u2 = fp.decode(fc, g1), fp.decode(fc, g2)
    viol = (order(g1, "f32") < order(g2, "f32")) if reverse else \
        (order(g2, "f32") < order(g1, "f32"))
    span = max(hi, fc.emax) - min(lo, fc.emin)
    lemmas += _out_lemmas(tag, "F2", V1, V2, S1, S2_, smax, span, u1, u2, viol)
    lemmas.append(Lemma(f"{tag}.tr.zero", "a zero sum gives a zero at any E",
                        [z3.Not(fp.decode(fc, Gf(z3.BitVecVal(0, w2), Ev, Zv)).zero.v)]))
    return lemmas


def _lead_exp(u: "fp.Unpacked"):
    """The exponent of the leading 1 of a decoded operand (floor(log2 |x|) when finite and
    nonzero; emin - p for a zero), as a z3 term."""
    from ..bits import clz
    ew = u.exp.w + 2
    return (u.exp.resize(ew) - clz(u.sig).resize(ew, True)).v


def _step_cases(name: str, role: str, base: list, ex, ey, f) -> list[Lemma]:
    """The lemma `base` (an IEEE addition's output does not drop over one step of its varying
    operand x) split into cases that together cover every input, so that each case has
    constant alignment and normalization shifts: d = e_x - e_y (exponents of the operands'
    leading 1s, _lead_exp) for |d| <= D = p + 6, one case each, and d < -D, d > D (the smaller
    operand is all sticky); for |d| <= 2 (where cancellation renormalizes) the low exponents
    emin - p <= e_x < emin + p + 4 one case each (subnormal operands and results), e_x below
    that range, and the rest. Bitwuzla answers each case in seconds where the whole lemma got
    no answer in 520 s (f32; the cases: 0.07-73 s each, H100 host's CPUs, 2026-11-27)."""
    import z3
    w = max(ex.size(), ey.size()) + 2
    x, y = z3.SignExt(w - ex.size(), ex), z3.SignExt(w - ey.size(), ey)
    d = x - y
    D = f.p + 6
    lo, lo0 = f.emin + f.p + 4, f.emin - f.p
    cases = [(f"{name}.d<-{D}", [d < -D]), (f"{name}.d>{D}", [d > D])]
    for k in range(-D, D + 1):
        if abs(k) > 2:
            cases.append((f"{name}.d{k}", [d == k]))
            continue
        cases.append((f"{name}.d{k}.e<{lo0}", [d == k, x < lo0]))
        cases += [(f"{name}.d{k}.e{e}", [d == k, x == e]) for e in range(lo0, lo)]
        cases.append((f"{name}.d{k}.e>={lo}", [d == k, x >= lo]))
    return [Lemma(n, f"{role} (case {n[len(name) + 1:]}: e_x - e_y and e_x as named)", base + c)
            for n, c in cases]


def _group_cut(K, tag, gi, eg, gv, cut, term_le, fin, width, pair_of, scale_names, lemmas,
               fmt_s=None):
    """GST-FDPA group g: cut the group term at its exact sum P (GP_), its zero flag (GZ_, when
    it is "all G products zero" rather than "P = 0") and its all-negative-zero sign (GA_); Inf
    and NaN flags are false for finite inputs (mono.flags). Appends the per-product lemmas
    that justify the cut's hypotheses (mono.group in COMBINATION_MONOTONIC_FDPA) and returns
    the substitution, the cut variables, the group's inputs, the x-side hypotheses, the
    primed substitution and the 'larger' hypothesis for the y side."""
    import z3
    P = _sub(eg["P"].v, cut)
    Pw = eg["P"].w
    b = eg["bits"]
    vs = [_sub(v.v, cut) for v in eg["v"]]
    prods = eg["prods"]
    Pmax = len(vs) << b
    if Pmax > 1 << (Pw - 1):
        raise NotDecomposable(f"{tag}: group {gi}'s exact sum may wrap around in {Pw} bits")
    GP, GPp = z3.BitVec("GP_", Pw), z3.BitVec("GPp_", Pw)
    GZ, GZp = z3.Bool("GZ_"), z3.Bool("GZp_")
    GA, GAp = z3.Bool("GA_"), z3.Bool("GAp_")
    F_ = z3.BoolVal(False)
    zero = _sub(gv["zero"].v, cut)
    by_products = not free_vars(_sub(zero, [(P, GP)])) <= {"GP_"}
    pairs = [(P, GP), (_sub(gv["allz"].v, cut), GA), (_sub(gv["nan"].v, cut), F_),
             (_sub(gv["inf_p"].v, cut), F_), (_sub(gv["inf_n"].v, cut), F_)]
    if by_products:
        pairs.append((zero, GZ))
    gname = f"{tag}.g{gi}"
    inputs: set = set()
    zeros = []
    acc = None
    for i, (v, t) in enumerate(zip(vs, prods)):
        tv = _term_vars(t)
        if len(tv) != 2 or frozenset(tv) not in pair_of:
            raise NotDecomposable(f"{gname}: product {i} reads {sorted(tv)}")
        inputs |= tv
        pr = [(z3.BitVec(n, width(n)), z3.BitVec(n + "p", width(n))) for n in sorted(tv)]
        ty = _sub_term(K, t, pr)
        fx, fy = fin(tv), fin(tv, "p")
        larger = z3.Not(term_le(ty, t).v)
        lemmas.append(Lemma(f"{gname}.p{i}.mono", "a larger product has a larger fixed-point "
                            "value in the group's exact sum", fx + fy + [larger,
                                                                     z3.Not(v <= _sub(v, pr))]))
        lemmas.append(Lemma(f"{gname}.p{i}.zero", "a product's fixed-point value is zero exactly "
                            "when the product is zero", fx + [z3.Not((v == 0) == t.zero.v)]))
        lemmas.append(Lemma(f"{gname}.p{i}.range", "a product's fixed-point value is bounded",
                            fx + [z3.Not(z3.And(v < (1 << b), v > -(1 << b)))]))
        zeros.append(t.zero.v)
        acc = v if acc is None else acc + v
    allin = fin(inputs)
    lemmas.append(Lemma(f"{gname}.sum", "the group's exact sum is the sum of its products' "
                        "fixed-point values", allin + [z3.Not(P == acc)]))
    if by_products:
        lemmas.append(Lemma(f"{gname}.zeroflag", "the group is a zero term exactly when all its "
                            "products are zero", allin + [z3.Not(zero == z3.And(*zeros))]))
    sc = sorted(n for n in free_vars(*(s.v for s in gv["scales"])) if n in scale_names)
    hyp = fin(set(sc)) + [GP < Pmax, GP > -Pmax]
    if by_products:
        hyp.append(z3.Implies(GZ, GP == 0))
    prime = [(GP, GPp), (GZ, GZp), (GA, GAp)]
    larger = [GP <= GPp]
    if by_products:
        larger += [z3.Implies(z3.And(GZ, z3.Not(GZp)), GPp != 0),
                   z3.Implies(z3.And(GZp, z3.Not(GZ)), GP != 0)]
    return {"pairs": pairs, "vars": {"GP_", "GZ_", "GA_"}, "inputs": inputs, "hyp": hyp,
            "prime": prime, "larger": z3.And(*larger),
            "scale_sigs": [fp.decode(fmt_s, s).sig for s in gv["scales"]] if fmt_s else []}


def _rz_shift(x, d, w: int, ew: int):
    """x (signed, w bits) divided by 2^d, truncated toward zero (d >= 0, ew bits)."""
    import z3
    dd = z3.ZeroExt(w - ew, d) if w > ew else z3.Extract(w - 1, 0, d)
    return z3.If(x < 0, -z3.LShR(-x, dd), z3.LShR(x, dd))
