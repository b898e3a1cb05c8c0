"""Layer 5, query/claims/exact_fdpa: `prove exact` decomposed, for T-FDPA chains.

The monolithic query of "D is the exact sum c + a.b" holds every multiplier, every alignment
and the output conversion at once, and for K = 16 f16 products the solver gives no answer in
minutes. For the T-FDPA family (the NVIDIA f16/bf16/tf32/fp8 -> f32 mma, wgmma and wmma forms:
chains of fused blocks, mma.t_fdpa) the claim splits into small lemmas at the terms of each
block. A term is the decoded product (sign, key e, significand sig with fb fraction bits, zero,
inf, nan; its value (-1)^sign sig 2^(e - fb)); its *facts* under a spec (elo, ehi, U, B):

    Facts(t)   not inf, not nan; zero -> sig = 0; nonzero -> elo <= e <= ehi and the value is
               N 2^U for an integer N with 0 < |N| <= B (B = 0: the term is zero)

Per element, the spec is read from the constraint (`specs`: int(x) gives U = 0, abs(x) < V the
largest admissible magnitude); a product's spec multiplies them. The lemmas (UNSAT proves each;
no lemma but ex.prod holds a multiplier):

    ex.prod        per product k: its inputs satisfy their atoms of the constraint (and are
                   finite) => Facts(product term)                         (one multiplier)
    ex.acc         block 0: c satisfies its atoms (finite) => Facts(accumulator term)
    <j>.emax       block j, over the cut keys: e_max >= the key of every nonzero term, and
                   Vlo <= e_max <= Vmax unless every term is zero
    <j>.flags      finite terms raise no NaN/Inf flag
    <j>.term<i>    Facts(t), nonzero -> e <= V <= Vmax  =>  the term aligned at V is
                   +-N 2^(F + U_t - V) exactly (0 for a zero term) and below 2^mw
    <j>.out.zero   S = 0, no flag => the output (any e_max) is a finite zero
    <j>.out.v<V>   one lemma per V in [Vlo, Vmax] (a constant shift each): S a nonzero multiple
                   of 2^(F + U - V) with |S| <= Bsum 2^(F + U - V), no flag => the output is
                   finite with value S 2^(V - F), and (a later block follows) the next block's
                   accumulator term satisfies Facts(Elo, Ehi, U, Bsum)

with the term fields cut to fresh variables (each factorization checked syntactically: after
the cut, e_max, the aligned terms, the sum, the flags and the output read only cut variables),
S checked to be the sum of the aligned terms term by term, and no wrap-around (sum of 2^mw <
2^(w-1)). Exactness needs Vmax <= F + U: no term has a bit below the alignment unit 2^(e_max -
F); otherwise the decomposition is refused (NotDecomposable) and the caller solves the whole
query. COMBINATION_EXACT_FDPA is the written argument.

Where it applies (`applies`): a fused T-FDPA chain (theory op t_fdpa, zero_exp "excluded" or a
fixed exponent, which <j>.emax then checks is at most Vmax; no accumulator conversion, no final IEEE addition, not sparse, not block-scaled) and the claim
without --rounded; any constraint (its atoms are per element). `candidates`: concrete inputs
tried before any query (the largest admissible magnitudes in the first n products), which
refute a bound quickly where the sum no longer fits the output.

This module builds the lemmas; it solves nothing. They are solved by the one lemma runner of
the decomposed proofs, claims.common.run_lemmas (called by claims.exact: identical texts once,
keyed by the store's canonical sha256, proved lemmas reused from proofs/cache), and a proof
with its refuted twin is stored by claims.exact (`ExactClaim.save`). Its place in the query
order is beside the other lemma modules (after claims.common, whose traced dot product
`traced_dot`, `NotDecomposable` and cut `sub` it uses).

May import: claims.common, claims.constraint, mmaformal.query.model, mmaformal.trace/mma/fp/bits,
the standard library, z3 (lazily), simulate (lazily).
Invariant: nothing here decides a claim (the runner takes "proved" only from a solver's UNSAT
on a lemma's exported text); every factorization is checked syntactically before a lemma is
built (else NotDecomposable).
"""
from __future__ import annotations

import dataclasses
from fractions import Fraction

from ... import fp, mma, trace
from ...bits import BV
from ..model import Inputs, Lemma, Model, Witness, free_vars
from .common import PASSED, NotDecomposable, sub, traced_dot
from .constraint import Atom, Constraint, codes_below, mag_value, symbolic_atom

__all__ = ["Lemma", "Spec", "COMBINATION_EXACT_FDPA", "applies", "specs", "lemmas",
           "candidates"]

COMBINATION_EXACT_FDPA = (
    "every input satisfying the constraint and finite: ex.prod gives Facts for each product "
    "term (value N 2^U with |N| <= B, key in [elo, ehi]) and ex.acc for c. Block j, with its "
    "term fields cut (the cut checked syntactically): <j>.flags: no NaN/Inf flag; <j>.emax: "
    "e_max = V >= the key of every nonzero term and, unless every term is zero, Vlo <= V <= "
    "Vmax; <j>.term<i>: each aligned term is A_t = +-N_t 2^(F + U_t - V) exactly (0 for a zero "
    "term), |A_t| < 2^mw_t; S is the sum of the aligned terms (checked syntactically), without "
    "wrap-around (sum of 2^mw_t < 2^(w-1)), so S = 2^(F + U - V) sum_t +-N_t 2^(U_t - U), a "
    "multiple of 2^(F + U - V) with |S| <= Bsum 2^(F + U - V) (Bsum = sum_t B_t 2^(U_t - U)), "
    "and S 2^(V - F) = sum_t value(t) = c_j + the block's products exactly. If S = 0, "
    "<j>.out.zero: the output is a finite zero = that sum; else V is in [Vlo, Vmax] (a zero "
    "S otherwise) and <j>.out.v<V> gives an output of value S 2^(V - F), and for a later block "
    "the Facts of its accumulator term (Elo, Ehi, U, Bsum), which that block's lemmas assume. "
    "Induction over the blocks: d_j = c_j + the block's products, c_(j+1) = d_j, so the last "
    "output is c + sum_k a_k b_k exactly, finite (+0 = -0).")


@dataclasses.dataclass(frozen=True)
class Spec:
    """Facts of a term: nonzero -> elo <= key <= ehi, value N 2^U with 0 < |N| <= B."""

    elo: int
    ehi: int
    U: int
    B: int


# ============================================================================================
# where it applies; specs from the constraint
# ============================================================================================

def applies(m: Model, rounded: bool = False) -> str:
    """"" when the decomposition applies to model m, else why not (one phrase)."""
    th, i = m.theory, m.ins
    if rounded:
        return "--rounded is proved monolithically"
    if fp.is_int(i.d):
        return "integer instructions are proved monolithically"
    if th.model != "fdpa" or th.op != "t_fdpa":
        return f"op {th.op} is not a T-FDPA chain"
    if i.sparse or i.scale:
        return "sparse and block-scaled instructions are proved monolithically"
    if th.accumulator or th.accumulate != "fused":
        return "a C conversion or a final IEEE addition is proved monolithically"
    z = th.param_dict.get("zero_exp", "excluded")
    if z != "excluded" and (isinstance(z, bool) or not isinstance(z, int)):
        return f"zero_exp {z!r} (a zero term keyed by its fields) is proved monolithically"
    return ""


def _element_atoms(cons: Constraint, name: str, k: int) -> list[Atom]:
    """The atoms of `cons` that constrain element k of operand `name`, on that element alone."""
    out = []
    for a in cons.atoms:
        ops = a.operands or (("a", None), ("b", None), ("c", None))
        if any(o == name and (j is None or j == k or name == "c") for o, j in ops):
            out.append(dataclasses.replace(a, operands=((name, None),)))
    return out


class _One:
    """An Inputs-like view of one element (what constraint.symbolic_atom reads)."""

    def __init__(self, name: str, f: str, x: BV):
        self.a, self.b, self.c = [x], [x], x
        self.fa = self.fb = self.fc = f


def _pred(cons: Constraint, name: str, k: int, f: str, x: BV) -> list:
    """z3 Bools: element k of `name` (bits x, format f) is finite and satisfies its atoms."""
    import z3
    u = fp.decode(f, x)
    out = [z3.Not((u.nan | u.inf).v)]
    for a in _element_atoms(cons, name, k):
        out += symbolic_atom(a, _One(name, f, x))
    return out


def _elem_spec(cons: Constraint, name: str, k: int, f: str) -> Spec:
    """The Spec of one element from its atoms: int -> U = 0 (else the format's unit), a
    magnitude bound -> B, == 0 -> B = 0. Only a claim about the element; ex.prod / ex.acc
    check it."""
    F = fp.fmt(f)
    U = F.emin - F.t
    top = mag_value(F, F.max_code)          # the largest finite value
    zero, bounds = False, []
    for a in _element_atoms(cons, name, k):
        if a.kind == "int":
            U = max(U, 0)
        elif a.kind == "abs":
            bounds.append(a)
        elif a.kind == "eq" and a.op == "==" and a.value == 0:
            zero = True
    unit = Fraction(2) ** U
    B = top // unit                          # |x| = n 2^U with n <= B
    for a in bounds:
        q = a.value / unit
        B = min(B, (-(-q.numerator // q.denominator) - 1) if a.op == "<" else q.numerator // q.denominator)
    B = int(B)
    if zero or B <= 0:
        return Spec(0, 0, U, 0)
    elo = max(U, F.emin)
    ehi = min(F.emax, U + B.bit_length() - 1)
    return Spec(elo, ehi, U, B)


def specs(m: Model, cons: Constraint) -> tuple[list[Spec], Spec]:
    """(the Spec of each product term, the Spec of c) under `cons`."""
    i = m.ins
    prods = []
    for k in range(m.k):
        sa, sb = _elem_spec(cons, "a", k, i.a), _elem_spec(cons, "b", k, i.b)
        if sa.B == 0 or sb.B == 0:
            prods.append(Spec(0, 0, sa.U + sb.U, 0))
        else:
            prods.append(Spec(sa.elo + sb.elo, sa.ehi + sb.ehi, sa.U + sb.U, sa.B * sb.B))
    return prods, _elem_spec(cons, "c", 0, i.c)


# ============================================================================================
# facts over term fields
# ============================================================================================

@dataclasses.dataclass
class _T:
    """z3 fields of a term (value (-1)^sign sig 2^(e - fb))."""

    sign: object
    e: object
    sig: object
    fb: int
    zero: object
    inf: object
    nan: object


def _fields(t) -> _T:
    return _T(t.sign.v, t.e.v, t.sig.v, t.fb, t.zero.v, t.inf.v, t.nan.v)


def _subT(t: _T, pairs) -> _T:
    s = lambda x: sub(x, pairs)
    return _T(s(t.sign), s(t.e), s(t.sig), t.fb, s(t.zero), s(t.inf), s(t.nan))


def _units(t: _T, sp: Spec, W: int):
    """|value| / 2^U as a W-bit unsigned z3 term, and the Bool "it is an integer", valid
    when elo <= e <= ehi."""
    import z3
    sw, ew = t.sig.size(), t.e.size()
    X = z3.ZeroExt(W - sw, t.sig) << z3.ZeroExt(W - ew, t.e - sp.elo)   # units 2^(elo - fb)
    g = t.fb + sp.U - sp.elo
    if g > 0:
        return z3.LShR(X, g), (X & ((1 << g) - 1)) == 0
    return X << -g, z3.BoolVal(True)


def _width(t: _T, sp: Spec) -> int:
    return t.sig.size() + max(0, sp.ehi - sp.elo) + abs(t.fb + sp.U - sp.elo) + 4


def _facts(t: _T, sp: Spec):
    import z3
    fin = z3.And(z3.Not(t.inf), z3.Not(t.nan), z3.Implies(t.zero, t.sig == 0))
    if sp.B == 0:
        return z3.And(fin, t.zero)
    W = _width(t, sp)
    N, isint = _units(t, sp, W)
    ok = z3.And(t.e >= sp.elo, t.e <= sp.ehi, isint, N != 0, z3.ULE(N, sp.B)) if \
        sp.B < (1 << (W - 1)) else z3.BoolVal(False)
    return z3.And(fin, z3.Or(t.zero, ok))


def _erange(t: _T, sp: Spec):
    import z3
    if sp.B == 0:
        return t.zero
    return z3.Implies(z3.Not(t.zero), z3.And(t.e >= sp.elo, t.e <= sp.ehi))


# ============================================================================================
# the lemmas
# ============================================================================================

def _trace(m: Model):
    """(K, inputs, out, blocks) of m's traced dot product, each block a dict of its records
    (c, fs, aligned, S, special, block_out, conv); NotDecomposable for any other shape."""
    K, inp, out, notes = traced_dot(m)
    blocks, cur = [], None
    for v in notes:
        if isinstance(v, trace.BlockIn):
            cur = {"c": v.c, "aligned": []}
            blocks.append(cur)
        elif cur is None:
            raise NotDecomposable(f"step {v.label!r} outside a block")
        elif isinstance(v, PASSED):
            pass
        elif isinstance(v, trace.FusedSum):
            if "fs" in cur:
                raise NotDecomposable("more than one fused sum in a block")
            cur["fs"] = v
        elif isinstance(v, trace.Aligned):
            cur["aligned"].append(v.value)
        elif isinstance(v, trace.Sum):
            cur["S"] = v.S
        elif isinstance(v, trace.Special):
            cur["special"] = v
        elif isinstance(v, trace.BlockOut):
            cur["block_out"] = v.d
        elif isinstance(v, trace.Convert):
            cur["conv"] = v
        else:
            raise NotDecomposable(f"unexpected step {v.label!r} in the trace")
    need = ("fs", "S", "special", "block_out", "conv")
    if not blocks or any(k not in b for b in blocks for k in need):
        raise NotDecomposable("incomplete trace")
    if not out.v.eq(blocks[-1]["block_out"].v):
        raise NotDecomposable("the output is not the last block's output")
    return K, inp, out, blocks


def _only(exprs, allowed: set, what: str):
    left = free_vars(*exprs) - allowed
    if left:
        raise NotDecomposable(f"{what} reads {sorted(left)[:4]} after the cut")


def _generic(t: _T, i: int):
    """pairs renaming term i's cut variables to the generic names of a one-term lemma."""
    import z3
    return [(z3.Bool(f"t{i}_sign_"), z3.Bool("sign_")),
            (z3.BitVec(f"t{i}_e_", t.e.size()), z3.BitVec("e_", t.e.size())),
            (z3.BitVec(f"t{i}_sig_", t.sig.size()), z3.BitVec("sig_", t.sig.size())),
            (z3.Bool(f"t{i}_zero_"), z3.Bool("zero_")), (z3.Bool(f"t{i}_inf_"), z3.Bool("inf_")),
            (z3.Bool(f"t{i}_nan_"), z3.Bool("nan_"))]


@dataclasses.dataclass
class _Run:
    """The lemmas of one model and constraint under construction: the traced inputs, the
    specs of the products and of the next accumulator, the lemmas so far (and their texts:
    a lemma identical to an earlier one is kept once)."""

    m: Model
    cons: Constraint
    K: object
    inp: Inputs
    blocks: list
    F: int
    pspec: list
    acc_spec: Spec
    weaken: str
    res: list = dataclasses.field(default_factory=list)
    seen: set = dataclasses.field(default_factory=set)

    def __post_init__(self):
        self.a_, self.b_ = self.inp.padded(self.m)[:2]
        self.pair_of = {frozenset((str(x.v), str(y.v))): k
                        for k, (x, y) in enumerate(zip(self.a_, self.b_))}

    def add_once(self, lm: Lemma, name: str | None = None) -> None:
        if lm.text not in self.seen:
            self.seen.add(lm.text)
            self.res.append(lm if name is None else dataclasses.replace(lm, name=name))


def lemmas(m: Model, cons: Constraint, rounded: bool = False, weaken: str = "") -> list[Lemma]:
    """The lemmas of `exact` for model m under `cons` (NotDecomposable when they do not
    apply). weaken: a test hook that drops one hypothesis ("term": the term lemma without
    V <= Vmax, which is then satisfiable whenever a term can lose a bit)."""
    why = applies(m, rounded)
    if why:
        raise NotDecomposable(why)
    K, inp, out, blocks = _trace(m)
    pspec, cspec = specs(m, cons)
    run = _Run(m, cons, K, inp, blocks, m.theory.param_dict["F"], pspec, cspec, weaken)
    prev_out = None
    for j, blk in enumerate(blocks):
        _block(run, j, blk, prev_out)
        prev_out = blk["block_out"]
    return run.res


def _block(run: _Run, j: int, blk: dict, prev_out) -> None:
    """The lemmas of block j: its terms' facts (ex.prod, ex.acc), then, over the cut term
    fields, emax, flags, term<i> and the output's (out.zero, out.v<V>)."""
    import z3
    tag = f"block{j}"
    F = run.F
    cut1 = [(prev_out.v, z3.BitVec("D_", prev_out.w))] if prev_out is not None else []
    fs = blk["fs"]
    terms = [_subT(_fields(t), cut1) for t in fs.terms]
    if len(blk["aligned"]) != len(terms):
        raise NotDecomposable(f"{tag}: {len(blk['aligned'])} aligned terms for {len(terms)}")
    if fs.mode != "RZ" or fs.F != F:
        raise NotDecomposable(f"{tag}: alignment mode {fs.mode} / F {fs.F}")
    sps = [_term_facts(run, tag, j, n, t) for n, t in enumerate(terms)]
    # -- the cut: term fields -> t<i>_*_
    cut2 = []
    cterms = []
    for n, t in enumerate(terms):
        v = _T(z3.Bool(f"t{n}_sign_"), z3.BitVec(f"t{n}_e_", t.e.size()),
               z3.BitVec(f"t{n}_sig_", t.sig.size()), t.fb, z3.Bool(f"t{n}_zero_"),
               z3.Bool(f"t{n}_inf_"), z3.Bool(f"t{n}_nan_"))
        cut2 += [(t.sign, v.sign), (t.e, v.e), (t.sig, v.sig), (t.zero, v.zero),
                 (t.inf, v.inf), (t.nan, v.nan)]
        cterms.append(v)
    cvars = {str(x[1]) for x in cut2}
    cut = lambda e: sub(sub(e, cut1), cut2)
    E = cut(fs.e_max.v)
    es = [cut(e.v) for e in fs.e]
    al = [cut(a.v) for a in blk["aligned"]]
    S = blk["S"]
    sp_ = blk["special"]
    Nf, Pf, Qf = (cut(x.v) for x in (sp_.nan, sp_.pinf, sp_.ninf))
    Z = cut(blk["conv"].zero_sign.v)
    Ge = cut(blk["block_out"].v)
    _only([E] + es + al + [Nf, Pf, Qf, Z, Ge], cvars, f"{tag}: the block")
    mws = _sum_widths(tag, F, blk, cterms)
    g = _grid(tag, F, sps)
    _emax_flag_lemmas(run, tag, cterms, sps, es, E, Nf, Pf, Qf, g)
    V = z3.BitVec("E_", E.size())
    for n, (t, a_t, e_t, sp, mw) in enumerate(zip(cterms, al, es, sps, mws)):
        _term_lemma(run, tag, n, t, a_t, e_t, sp, mw, E, V, S.w, g)
    # -- the output: G(S, E, flags)
    Sv, Nv, Pv, Qv, Zv = (z3.BitVec("S_", S.w), z3.Bool("N_"), z3.Bool("P_"), z3.Bool("Q_"),
                          z3.Bool("Z_"))
    G = sub(Ge, [(cut(S.v), Sv), (E, V), (Nf, Nv), (Pf, Pv), (Qf, Qv), (Z, Zv)])
    _only([G], {"S_", "E_", "N_", "P_", "Q_", "Z_"}, f"{tag}: the output")
    _out_lemmas(run, tag, j, blk, G, V, Sv, (Nv, Pv, Qv), g)


def _same_term(ref, t: _T) -> bool:
    """The term t is the reference term ref, field by field (syntactically)."""
    return ref.fb == t.fb and all(getattr(_fields(ref), f).eq(getattr(t, f)) for f in
                                  ("sign", "e", "sig", "zero", "inf", "nan"))


def _term_facts(run: _Run, tag: str, j: int, n: int, t: _T) -> Spec:
    """The Spec of term n of block j, with the lemma that establishes its facts: ex.prod<k>
    (a product of two constrained inputs), ex.acc (block 0's c); a later block's accumulator
    term has the previous block's out lemmas."""
    import z3
    m, inp, cons = run.m, run.inp, run.cons
    i = m.ins
    a_, b_, pair_of = run.a_, run.b_, run.pair_of
    vs = free_vars(t.sign, t.e, t.sig, t.zero, t.inf, t.nan)
    if frozenset(vs) in pair_of and len(vs) == 2:
        k = pair_of[frozenset(vs)]
        sp = run.pspec[k]
        x, y = (v for v in (a_[k], b_[k]))
        # the term is mma.product of the decoded inputs (checked syntactically), so
        # its value is a_k b_k exactly: signs xor, keys add in ew bits, significands
        # multiply in wa + wb bits (neither can overflow)
        if not _same_term(mma.product(fp.decode(i.a, x), fp.decode(i.b, y)), t):
            raise NotDecomposable(f"{tag}: term {n} is not the product of its decoded "
                                  f"inputs")
        lm = Lemma("ex.prod", "a product of two constrained inputs satisfies its facts",
                   _pred(cons, "a", k, i.a, x) + _pred(cons, "b", k, i.b, y)
                   + [z3.Not(_facts(t, sp))])
        run.add_once(lm, f"ex.prod{k}")
        return sp
    if vs == {str(inp.c.v)} and j == 0:
        if not _same_term(mma.operand(fp.decode(i.c, inp.c)), t):
            raise NotDecomposable(f"{tag}: the accumulator term is not c decoded")
        run.res.append(Lemma("ex.acc", "c satisfies its facts",
                             _pred(cons, "c", 0, i.c, inp.c) + [z3.Not(_facts(t, run.acc_spec))]))
        return run.acc_spec
    if vs == {"D_"} and j > 0 and "D_" in free_vars(t.sig, t.zero):
        # the one such term (checked by the previous block): its Facts are proved by
        # the previous block's out lemmas
        return run.acc_spec
    raise NotDecomposable(f"{tag}: term {n} reads {sorted(vs)[:4]}")


def _sum_widths(tag: str, F: int, blk: dict, cterms: list) -> list[int]:
    """Each term's bound mw (|aligned| < 2^mw), after checking that S is the sum of the
    aligned terms, term by term, without wrap-around."""
    S = blk["S"]
    s = blk["aligned"][0].v
    for a in blk["aligned"][1:]:
        s = s + a.v
    if not s.eq(S.v):
        raise NotDecomposable(f"{tag}: S is not the sum of the aligned terms")
    mws = []
    for t in cterms:
        ls, rs = max(0, F - t.fb), max(0, t.fb - F)
        mws.append(t.sig.size() + ls - rs)
    if sum(1 << x for x in mws) >= 1 << (S.w - 1):
        raise NotDecomposable(f"{tag}: the sum of aligned terms may wrap around")
    return mws


@dataclasses.dataclass(frozen=True)
class _Grid:
    """A block's grid: the unit 2^U of its nonzero terms, the range [Vlo, Vmax] of e_max, and
    the bound Bsum of |S| in units 2^(F + U - e_max)."""

    U: int
    Vlo: int
    Vmax: int
    Bsum: int


def _grid(tag: str, F: int, sps: list) -> _Grid:
    live = [sp for sp in sps if sp.B > 0]
    U = min((sp.U for sp in live), default=0)
    Vlo = min((sp.elo for sp in live), default=0)
    Vmax = max((sp.ehi for sp in live), default=0)
    Bsum = sum(sp.B << (sp.U - U) for sp in live)
    if live and Vmax > F + U:
        raise NotDecomposable(f"{tag}: e_max may reach {Vmax} > F + U = {F + U}: the "
                              f"alignment may drop bits")
    if Vmax - Vlo > 64:
        raise NotDecomposable(f"{tag}: {Vmax - Vlo + 1} alignment exponents (one output "
                              f"lemma each; at most 65 are built)")
    return _Grid(U, Vlo, Vmax, Bsum)


def _emax_flag_lemmas(run: _Run, tag: str, cterms, sps, es, E, Nf, Pf, Qf, g: _Grid) -> None:
    """<j>.emax and <j>.flags."""
    import z3
    allz = z3.And(*[t.zero for t in cterms])
    claim = z3.And(*[z3.Implies(z3.Not(t.zero), E >= e) for t, e in zip(cterms, es)],
                   z3.Implies(z3.Not(allz), z3.And(E >= g.Vlo, E <= g.Vmax)))
    run.res.append(Lemma(f"{tag}.emax", f"e_max is at least every nonzero key and in [{g.Vlo}, "
                         f"{g.Vmax}] unless every term is zero",
                         [_erange(t, sp) for t, sp in zip(cterms, sps)] + [z3.Not(claim)]))
    run.res.append(Lemma(f"{tag}.flags", "finite terms raise no NaN/Inf flag",
                         [z3.And(z3.Not(t.inf), z3.Not(t.nan)) for t in cterms]
                         + [z3.Not(z3.And(z3.Not(Nf), z3.Not(Pf), z3.Not(Qf)))]))


def _term_lemma(run: _Run, tag: str, n: int, t: _T, a_t, e_t, sp: Spec, mw: int, E, V, w: int,
                g: _Grid) -> None:
    """<j>.term<n>: the term aligned at a free V is its exact value in units 2^(V - F)."""
    import z3
    F = run.F
    A = sub(a_t, [(E, V)])
    _only([A], {str(x) for x in (t.sign, t.e, t.sig, t.zero, t.inf, t.nan)} | {"E_"},
          f"{tag}: aligned term {n}")
    gn = _generic(t, n)
    tg = _subT(t, gn)
    A = sub(A, gn)
    e_g = sub(e_t, gn)
    if sp.B == 0:
        claim = A == 0
    else:
        WT = max(w, _width(tg, sp), sp.B.bit_length() + F + sp.U - sp.elo + 2) + 4
        Nm, _ = _units(tg, sp, WT)
        sh = z3.SignExt(WT - V.size(), (F + sp.U) - V)
        mag = Nm << sh
        want = z3.If(tg.sign, -mag, mag)
        claim = z3.And(z3.Implies(tg.zero, A == 0),
                       z3.Implies(z3.Not(tg.zero), z3.And(
                           z3.SignExt(WT - w, A) == want,
                           A < (1 << mw) if mw < w - 1 else z3.BoolVal(True),
                           A > -(1 << mw) if mw < w - 1 else z3.BoolVal(True))))
    hyp = [_facts(tg, sp)]
    rng = (V >= e_g) if run.weaken == "term" else z3.And(V >= e_g, V <= g.Vmax)
    hyp.append(z3.Implies(z3.Not(tg.zero), rng))
    run.add_once(Lemma(f"{tag}.term{n}", f"term {n} aligned at e_max is its exact value in "
                       f"units 2^(e_max - F)", hyp + [z3.Not(claim)]))


def _out_lemmas(run: _Run, tag: str, j: int, blk: dict, G, V, Sv, flags, g: _Grid) -> None:
    """<j>.out.zero and <j>.out.v<V>: the output of S at each e_max = V (and, a later block
    following, the Facts of its accumulator term); sets run.acc_spec for that block."""
    import z3
    m = run.m
    F, w = run.F, Sv.size()
    fd = fp.fmt(m.ins.d)
    if j == len(run.blocks) - 1:
        u = fp.decode(fd, BV(run.K, fd.storage, False, G))
        view = _T(u.sign.v, u.exp.v, u.sig.v, fd.t, u.zero.v, u.inf.v, u.nan.v)
        fo = fd
    else:
        nxt = run.blocks[j + 1]
        fo = fp.fmt(mma.rho_of(m.theory.param_dict["rho"])[2].name)
        Dn = z3.BitVec("D_", blk["block_out"].w)
        acc_t = [t for t in nxt["fs"].terms
                 if "D_" in free_vars(sub(t.sig.v, [(blk["block_out"].v, Dn)]),
                                      sub(t.zero.v, [(blk["block_out"].v, Dn)]))]
        if len(acc_t) != 1:
            raise NotDecomposable(f"{tag}: the next block has {len(acc_t)} accumulator terms")
        view = _subT(_subT(_fields(acc_t[0]), [(blk["block_out"].v, Dn)]), [(Dn, G)])
    U, Bsum = g.U, g.Bsum
    spD = (Spec(0, 0, U, 0) if Bsum == 0 else
           Spec(max(U, fo.emin), min(fo.emax, U + Bsum.bit_length() - 1), U, Bsum))
    noflag = [z3.Not(x) for x in flags]
    run.res.append(Lemma(f"{tag}.out.zero", "S = 0 gives a finite zero",
                         noflag + [Sv == 0, z3.Not(z3.And(view.zero, _facts(view, spD)))]))
    if Bsum:
        WO = _width(view, spD) + w + F + 8
        for Vc in range(g.Vlo, g.Vmax + 1):
            sh = F + U - Vc
            vw = _subT(view, [(V, z3.BitVecVal(Vc, V.size()))])
            Sw = z3.SignExt(WO - w, Sv)
            mag = z3.If(Sv < 0, -Sw, Sw)
            hyp = noflag + [Sv != 0, z3.ULE(mag, Bsum << sh)]
            if sh > 0:
                hyp.append(z3.Extract(sh - 1, 0, Sv) == 0)
            Nd, _ = _units(vw, spD, WO)
            claim = z3.And(_facts(vw, spD), z3.Not(vw.zero), vw.sign == (Sv < 0),
                           Nd == z3.LShR(mag, sh))
            run.res.append(Lemma(f"{tag}.out.v{Vc}", f"a nonzero S on the grid 2^(F + U - "
                                 f"{Vc}) converts exactly at e_max = {Vc}",
                                 hyp + [z3.Not(claim)]))
    run.acc_spec = spD


# ============================================================================================
# concrete candidates
# ============================================================================================

def _admissible(cons: Constraint, name: str, k: int, f: str) -> list[int]:
    """Bit patterns of up to two admissible magnitudes of an element: the largest, and the
    largest odd multiple of its unit 2^U (an odd product makes an odd sum)."""
    from ...simulate import bits_of
    sp = _elem_spec(cons, name, k, f)
    F = fp.fmt(f)
    out = []
    if sp.B <= 0:
        return out
    unit = Fraction(2) ** sp.U
    code = codes_below(F, sp.B * unit, False) - 1        # the largest value <= B 2^U ...
    v = Fraction(0)
    for c in range(code, max(code - 64, 0), -1):          # ... that is a multiple of 2^U
        x = mag_value(F, c)
        if x % unit == 0:
            v = x
            break
    n = sp.B if sp.U < F.emin - F.t else min(sp.B, (1 << (F.t + 1)) - 1)
    n -= 1 - n % 2                                        # odd multiples: where ulp <= 2^U
    for x in (v, n * unit):
        b = bits_of(x, f) if x > 0 else None
        if b is not None and b not in out:
            out.append(b)
    return out


def candidates(m: Model, cons: Constraint) -> list[Witness]:
    """Concrete inputs tried before any query, each satisfying `cons`: n products at the
    largest admissible magnitudes, then possibly one product of the largest odd ones, the
    rest zero, c zero or its largest. Those whose exact sum is not an output value come first
    (they refute an exact claim on replay); at most 2 K others follow."""
    from ...simulate import value_of
    i = m.ins
    if i.scale or i.sparse or fp.is_int(i.d):
        return []
    av, bv, cv = (_admissible(cons, "a", 0, i.a), _admissible(cons, "b", 0, i.b),
                  _admissible(cons, "c", 0, i.c))
    if not av or not bv:
        return []
    big = (av[0], bv[0])
    odd = (av[-1], bv[-1])
    val = lambda x, f: Fraction(0) if value_of(x, f) in ("0", "-0") else value_of(x, f)
    D = fp.fmt(i.d)
    first, rest = [], []
    for c in [0] + cv[:1]:
        for n in range(0, m.k + 1):
            for tail in ([], [odd]):
                pairs = [big] * n + tail
                if not pairs or len(pairs) > m.k:
                    continue
                pad = m.k - len(pairs)
                w = Witness(i.a, i.b, i.c, [x for x, _ in pairs] + [0] * pad,
                            [y for _, y in pairs] + [0] * pad, c)
                if not cons.holds(w):
                    continue
                S = val(c, i.c) + sum(val(x, i.a) * val(y, i.b) for x, y in pairs)
                a = abs(S)
                fits = True
                if a:
                    E = a.numerator.bit_length() - a.denominator.bit_length()
                    E = E if Fraction(2) ** E <= a else E - 1          # 2^E <= a < 2^(E+1)
                    fits = E <= D.emax and (a / Fraction(2) ** (max(E, D.emin) - D.t)).denominator == 1
                (rest if fits else first).append(w)
    return first + rest[:2 * m.k]
