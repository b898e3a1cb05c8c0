"""Layer 5, query/claims/monotonic_fdpa: the monotonicity lemmas of FDPA chains' fused sums.

T-FDPA chains (COMBINATION_MONOTONIC_FDPA): per fused block, per term t (with its inputs
primed for the larger side y) and free exponents V: mono.range (the key lies in a static
[lo, hi], or the term is zero and aligns to 0), mono.coarsen (aligned at a larger E the term
is its finer alignment truncated toward zero), mono.same (at one E, a larger addend aligns no
lower), mono.gain.up / gain.down (an addend that moves E gains at least n - 1 units of the
coarser alignment, which pays for what the other n - 1 terms can lose): `fused`. The output
conversion is non-decreasing in the value S 2^(E - F) (`out_lemmas`, out.d<d>, one lemma per
E2 - E1 = d: a constant shift each, which the solver takes in seconds where the symbolic shift
did not finish); accumulator, NaN and Inf lemmas for later blocks (`block_lemmas`) and the
final addition (`add_lemmas`). GST-FDPA group terms are cut at their exact fixed-point sum
first (`group_cut`: per-product mono/zero/range lemmas, the sum identity, the zero flag), and
the final IEEE addition is proved one step of its varying operand at a time, case by case
(`step_cases`). Where the arithmetic is not monotone (f16 x f16 products, whose key ea + eb
overstates a subnormal product), mono.gain is satisfiable and the claim goes to the
monolithic query. The TR/GTR tails are claims.monotonic_tr; the chain of blocks is walked by
claims.monotonic.monotonic_lemmas_fdpa.

May import: claims.common, mmaformal.query.model, mmaformal.mma/fp/bits, z3 (lazily).
Invariant: every factorization is checked syntactically before a lemma is built (else
NotDecomposable); the lemma texts and their order are those of the stored proofs.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from ... import fp, mma
from ...bits import BV, Bool, clz
from ..model import Lemma, free_vars
from .common import GTR_OPS, TR_OPS, NotDecomposable, Structure, sub

__all__ = ["COMBINATION_MONOTONIC_FDPA", "Context", "context", "fused", "block_lemmas",
           "add_lemmas", "out_lemmas", "group_cut", "step_cases", "rz_shift", "units",
           "term_vars", "sub_term"]

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


# ============================================================================================
# What the lemmas of one structure share
# ============================================================================================

@dataclasses.dataclass
class Context:
    """The monotonicity lemmas of one traced structure under construction: the claim's
    comparisons (order(x, f), term_le(t1, t2)), the format of every input variable, the
    products' input pairs, the lemmas so far and the inputs the fused sums have read."""

    st: Structure
    order: Callable
    term_le: Callable
    reverse: bool
    zero_exp: object
    fmt_of: dict
    pair_of: dict
    scale_names: set
    fconv: list
    fd: fp.Format
    lemmas: list = dataclasses.field(default_factory=list)
    seen_vars: set = dataclasses.field(default_factory=set)

    def rng(self, f) -> tuple[int, int]:
        """The exponent range of an element of format f (and of the converted operands)."""
        fs = [fp.fmt(f)] + self.fconv
        return min(x.emin for x in fs), max(x.emax for x in fs)

    def fin(self, names, side: str = "") -> list:
        """z3: the named input variables (primed by `side`) are finite."""
        import z3
        K = self.st.K
        out = []
        for n in sorted(names):
            f = self.fmt_of[n]
            u = fp.decode(f, BV(K, fp.fmt(f).storage, False, z3.BitVec(n + side, fp.fmt(f).storage)))
            out.append(z3.Not((u.nan | u.inf).v))
        return out


def context(st: Structure, order, term_le, reverse: bool = False) -> Context:
    """The Context of a structure the monotonicity decomposition covers (NotDecomposable
    otherwise): t_fdpa (unscaled), gst_fdpa, and TR/GTR-FDPA with align_round RD and no
    final addition."""
    if st.why:
        raise NotDecomposable(st.why)
    inp = st.inp
    th, ins = st.model.theory, st.model.ins
    tr = th.op in TR_OPS
    gtr = th.op in GTR_OPS
    if not (th.op == "t_fdpa" and not ins.scale) and th.op != "gst_fdpa" and not (tr or gtr):
        raise NotDecomposable(f"op {th.op}: the monotonicity decomposition covers t_fdpa and "
                              "gst_fdpa chains and TR-FDPA / GTR-FDPA chains")
    if (tr or gtr) and (st.acc is not None or th.param_dict.get("align_round", "RD") != "RD"):
        raise NotDecomposable("the TR/GTR-FDPA monotonicity decomposition takes align_round "
                              "= RD and no final addition")
    fmt_of = {str(x.v): ins.a for x in inp.a}
    fmt_of.update({str(x.v): ins.b for x in inp.b})
    fmt_of[str(inp.c.v)] = ins.c
    scale_names = {str(x.v) for x in (inp.sa or []) + (inp.sb or [])}
    fmt_of.update({n: ins.scale for n in scale_names})
    pair_of = {frozenset((str(x.v), str(y.v))): k for k, (x, y) in enumerate(zip(inp.a, inp.b))}
    fd = mma.rho_of(th.param_dict.get("rho", "RNE-FP32"))[2]     # TR-FDPA: RNE-FP32
    fconv = [fp.fmt(th.convert)] if th.convert else []
    return Context(st, order, term_le, reverse, th.param_dict.get("zero_exp", "excluded"),
                   fmt_of, pair_of, scale_names, fconv, fd)


# ============================================================================================
# One fused sum
# ============================================================================================

@dataclasses.dataclass
class Fused:
    """The cut quantities of one fused sum that the block's output lemmas use."""

    E: object
    ew: int
    w: int
    lo: int
    hi: int
    span: int
    bounds: list
    n_var: int
    V: object
    V1: object
    V2: object
    S: object
    gcut: dict
    cterms: list


def fused(ctx: Context, tag: str, blk, fs_, aligned, S_node, cut, up: int = 0, down: int = 0,
          lead: int = 0) -> Fused:
    """The lemmas of one fused sum (its terms aligned at its e_max), appended to ctx.lemmas:
    range, coarsen, same, gain.up / gain.down (asking n - 1 + up / n - 1 + down units), lead
    (lead > 0: a nonzero term aligned at its own key is at least `lead` units). Returns the
    cut quantities the block's output lemmas use."""
    import z3
    K = ctx.st.K
    terms = fs_.terms
    E, keys = _keys(ctx, tag, fs_, cut)
    ew = E.size()
    F = fs_.F
    w = S_node.w
    al = [sub(x.v, cut) for x in aligned]
    cterms = [sub_term(K, t, cut) for t in terms]
    gcut = _group_cuts(ctx, tag, blk, terms, cterms, keys, cut)
    info, lo, hi = _term_info(ctx, tag, blk, cterms, al, gcut)
    if isinstance(ctx.zero_exp, int) and not isinstance(ctx.zero_exp, bool):
        lo, hi = min(lo, ctx.zero_exp), max(hi, ctx.zero_exp)
        # E is the max of the keys, so E >= the smallest key of every term: with a fixed
        # zero exponent, a term's key lies in [lo_t, hi_t] or is zero_exp (mono.range)
        lo = max(min(r[0], ctx.zero_exp) for kind_, _, r in info if kind_ != "const")
    n_var = len(info)      # the terms that can lose precision when E grows (all of them)
    span = hi - lo
    V, V1, V2 = (z3.BitVec(n, ew) for n in ("E_", "E1_", "E2_"))
    grid = _Grid(E, ew, w, F, lo, hi, w + span + 3, V, V1, V2)
    bounds = []
    for t, (term, a_t, key, inf) in enumerate(zip(cterms, al, keys, info)):
        bounds.append(_term_lemmas(ctx, tag, t, term, a_t, key, inf, gcut, grid, n_var, up,
                                   down, lead))
    if sum(1 << b for b in bounds) > 1 << (w - 1):
        raise NotDecomposable(f"{tag}: the sum may wrap around in {w} bits")
    A = [z3.BitVec(f"A{t}_", w) for t in range(len(al))]
    S = sub(S_node.v, cut)
    if not free_vars(sub(S, list(zip(al, A)))) <= {f"A{t}_" for t in range(len(al))}:
        raise NotDecomposable(f"{tag}: S is not a function of the aligned terms")
    return Fused(E, ew, w, lo, hi, span, bounds, n_var, V, V1, V2, S, gcut, cterms)


def _keys(ctx: Context, tag: str, fs_, cut):
    """(E, the term keys) after the cut, once e_max is checked to be the max of the keys."""
    K = ctx.st.K
    keyed = [mma.zero_key(K, t.zero, e, e.w, ctx.zero_exp) for t, e in zip(fs_.terms, fs_.e)]
    mx = keyed[0]
    for e in keyed[1:]:
        mx = mma.bvmax(mx, e)
    if not mx.v.eq(fs_.e_max.v):
        raise NotDecomposable(f"{tag}: e_max is not the max of the term keys")
    return sub(fs_.e_max.v, cut), [sub(k.v, cut) for k in keyed]


def _group_cuts(ctx: Context, tag: str, blk, terms, cterms: list, keys: list, cut) -> dict:
    """GST-FDPA group terms: each cut at the group's exact sum P (mono.group: per product);
    cterms and keys are updated in place. Returns {term index: the group's cut}."""
    K, ins = ctx.st.K, ctx.st.model.ins
    gcut = {}
    for gi, (eg, gv) in enumerate(blk.groups):
        if gv is None:
            raise NotDecomposable(f"{tag}: group {gi} has no group term")
        t = next((i for i, x in enumerate(terms) if x is gv.term), None)
        if t is None:
            raise NotDecomposable(f"{tag}: group {gi}'s term is not a fused-sum term")
        gcut[t] = group_cut(K, tag, gi, eg, gv, cut, ctx.term_le, ctx.fin,
                            lambda n: fp.fmt(ctx.fmt_of[n]).storage, ctx.pair_of,
                            ctx.scale_names, ctx.lemmas, ins.scale)
        cterms[t] = sub_term(K, cterms[t], gcut[t]["pairs"])
        keys[t] = sub(keys[t], gcut[t]["pairs"])
    return gcut


def _term_info(ctx: Context, tag: str, blk, cterms: list, al: list, gcut: dict):
    """(kind, ref, static key range) of each term (which inputs it reads), and the range of
    all: (info, lo, hi). Each input is read by one term only (ctx.seen_vars)."""
    import z3
    inp, ins = ctx.st.inp, ctx.st.model.ins
    info = []
    lo = hi = None
    for t, (term, _a_t) in enumerate(zip(cterms, al)):
        vs = term_vars(term)
        if t in gcut:
            if not vs <= gcut[t]["vars"] | ctx.scale_names:
                raise NotDecomposable(f"{tag}: group term {t} reads more than its cut sum")
            gin = gcut[t]["inputs"]
            if gin & ctx.seen_vars:
                raise NotDecomposable(f"{tag}: group term {t} shares inputs with another term")
            ctx.seen_vars |= gin
            ls_, hs_ = ctx.rng(ins.scale)
            info.append(("group", t, (2 * ls_, 2 * hs_)))
            lo = info[-1][2][0] if lo is None else min(lo, info[-1][2][0])
            hi = info[-1][2][1] if hi is None else max(hi, info[-1][2][1])
            continue
        if vs & ctx.seen_vars:
            raise NotDecomposable(f"{tag}: term {t} shares inputs with another term")
        ctx.seen_vars |= vs - {"D_"}
        if not vs:
            info.append(("const", None, None))
            if not z3.is_true(z3.simplify(term.zero.v)):
                raise NotDecomposable(f"{tag}: constant term {t} is not a zero")
            continue
        if len(vs) == 2 and frozenset(vs) in ctx.pair_of:
            k = ctx.pair_of[frozenset(vs)]
            (la, ha), (lb, hb) = ctx.rng(ins.a), ctx.rng(ins.b)
            info.append(("product", k, (la + lb, ha + hb)))
        elif vs == {str(inp.c.v)} or vs == {"D_"}:
            f = ins.c if vs == {str(inp.c.v)} else blk.fc
            info.append(("acc", next(iter(vs)), ctx.rng(f)))
        else:
            raise NotDecomposable(f"{tag}: term {t} reads {sorted(vs)}")
        r = info[-1][2]
        lo = r[0] if lo is None else min(lo, r[0])
        hi = r[1] if hi is None else max(hi, r[1])
    return info, lo, hi


@dataclasses.dataclass
class _Grid:
    """The alignment exponents of one fused sum: E (cut), its width, the sum's width w, F, the
    key range [lo, hi], the width W2 of the gain comparisons, the free exponents V, V1, V2."""

    E: object
    ew: int
    w: int
    F: int
    lo: int
    hi: int
    W2: int
    V: object
    V1: object
    V2: object

    def inr(self, v):
        import z3
        return z3.And(v >= self.lo, v <= self.hi)

    def wide(self, x, wx):
        import z3
        return z3.SignExt(self.W2 - wx, x)

    def shl(self, x, d):
        import z3
        return x << z3.ZeroExt(self.W2 - self.ew, d)


def _term_lemmas(ctx: Context, tag: str, t: int, term, a_t, key, inf: tuple, gcut: dict,
                 g: _Grid, n_var: int, up: int, down: int, lead: int) -> int:
    """The lemmas of term t of a fused sum (appended to ctx.lemmas): range and coarsen; for a
    term that can change, same (by scale significands for a group term), gain.up, lead and
    gain.down. Returns the term's bound mw (|aligned| < 2^mw)."""
    import z3
    kind, ref, _r = inf
    zint = isinstance(ctx.zero_exp, int) and not isinstance(ctx.zero_exp, bool)
    gp = gcut[t]["pairs"] if t in gcut else []     # E first: it holds every key
    at = lambda v: sub(sub(a_t, [(g.E, v)]), gp)
    vs = term_vars(term)
    if not free_vars(at(g.V)) <= vs | {"E_"}:
        raise NotDecomposable(f"{tag}: aligned term {t} reads more than its inputs and E")
    ls, rs = max(0, g.F - term.fb), max(0, term.fb - g.F)
    mw = term.sig.w + ls - rs
    name = f"{tag}.t{t}"
    fx = gcut[t]["hyp"] if t in gcut else ctx.fin(vs)
    ctx.lemmas.append(Lemma(f"{name}.range", "the key lies in the term's static range, or the "
                            "term is zero (key zero_exp when fixed) and aligns to 0 at every "
                            "E; the aligned term is bounded",
                            fx + [z3.Not(z3.And(
                                z3.Or(z3.And(key >= _r[0], key <= _r[1]) if _r else z3.BoolVal(False),
                                      z3.And(term.zero.v, at(g.V) == 0,
                                             key == ctx.zero_exp if zint else z3.BoolVal(True))),
                                z3.Implies(key <= g.V, z3.And(at(g.V) < (1 << mw),
                                                              at(g.V) > -(1 << mw)))))]))
    ctx.lemmas.append(Lemma(f"{name}.coarsen", "aligned at a larger E, the term is its "
                            "finer alignment truncated toward zero",
                            fx + [g.inr(g.V1), g.inr(g.V2), key <= g.V1, g.V1 < g.V2,
                                  z3.Not(at(g.V2) == rz_shift(at(g.V1), g.V2 - g.V1, g.w, g.ew))]))
    if kind == "const":     # a constant addend (a zero accumulator) never changes
        return mw
    _change_lemmas(ctx, name, t, term, a_t, key, inf, gcut, g, fx, at, vs, n_var, up, down,
                   lead)
    return mw


def _larger(ctx: Context, kind: str, ref, t: int, gcut: dict, pr: list):
    """z3: the y side's addend (inputs primed by `pr`) is larger than the x side's."""
    import z3
    K, inp, ins = ctx.st.K, ctx.st.inp, ctx.st.model.ins
    if kind == "group":
        return gcut[t]["larger"]
    if kind == "product":
        xa, xb = inp.a[ref], inp.b[ref]
        ya, yb = (BV(K, x.w, False, sub(x.v, pr)) for x in (xa, xb))
        return z3.Not(ctx.term_le(mma.product(fp.decode(ins.a, ya), fp.decode(ins.b, yb)),
                                  mma.product(fp.decode(ins.a, xa), fp.decode(ins.b, xb))).v)
    f = ctx.fmt_of[ref]
    xv = BV(K, fp.fmt(f).storage, False, z3.BitVec(ref, fp.fmt(f).storage))
    yv = BV(K, xv.w, False, sub(xv.v, pr))
    return (ctx.order(xv, f) <= ctx.order(yv, f)).v


def _change_lemmas(ctx: Context, name: str, t: int, term, a_t, key, inf: tuple, gcut: dict,
                   g: _Grid, fx: list, at, vs: set, n_var: int, up: int, down: int,
                   lead: int) -> None:
    """same, gain.up, lead and gain.down of a term that can change (its inputs primed for the
    larger side y; a group term: its cut sum, the scales stay)."""
    import z3
    kind, ref, _r = inf
    gp = gcut[t]["pairs"] if t in gcut else []
    if kind == "group":
        pr = gcut[t]["prime"]
    else:
        pr = [(z3.BitVec(n, fp.fmt(ctx.fmt_of[n]).storage),
               z3.BitVec(n + "p", fp.fmt(ctx.fmt_of[n]).storage)) for n in sorted(vs)]
    aty = lambda v: sub(sub(sub(a_t, [(g.E, v)]), gp), pr)
    keyy = sub(key, pr)
    fy = [sub(h, pr) for h in gcut[t]["hyp"]] if kind == "group" else ctx.fin(vs, "p")
    hyp = fx + fy + [_larger(ctx, kind, ref, t, gcut, pr)]
    same = hyp + [g.inr(g.V), key <= g.V, keyy <= g.V, z3.Not(at(g.V) <= aty(g.V))]
    sigs = gcut[t]["scale_sigs"] if kind == "group" else []
    if sigs and all(x.w > 1 for x in sigs):
        # a group term is |P| times the scales' significands (ue4m3: 4 bits each): the
        # product is nonlinear, so the lemma is split by the significands' values
        # (every pair, so the cases cover every input; each case is linear)
        (xa, xb), wa, wb = sigs, sigs[0].w, sigs[1].w
        for i in range(1 << wa):
            for j in range(1 << wb):
                ctx.lemmas.append(Lemma(f"{name}.same.s{i}.{j}", "at one E, a larger addend "
                                        f"aligns no lower (scale significands {i} and {j})",
                                        same + [xa.v == i, xb.v == j]))
    else:
        ctx.lemmas.append(Lemma(f"{name}.same", "at one E, a larger addend aligns no lower", same))
    gn = (n_var - 1)
    # TR-FDPA: c is aligned after the fused sum (rounded down at the tail's E), so a
    # product that raises e_max must also pay for c's loss: n units, not n - 1
    gu, gd = gn + up, gn + down
    w, V1, V2 = g.w, g.V1, g.V2
    ctx.lemmas.append(Lemma(f"{name}.gain.up", "an addend that raises E gains at least "
                            f"{units(up)} units of the coarser alignment",
                            hyp + [g.inr(V1), g.inr(V2), key <= V1, V1 < V2, keyy == V2,
                                   z3.Not(g.shl(g.wide(aty(V2), w), V2 - V1) - g.wide(at(V1), w)
                                          >= g.shl(z3.BitVecVal(gu, g.W2), V2 - V1))]))
    if lead == 1:
        ctx.lemmas.append(Lemma(f"{name}.lead", "a nonzero term aligned at its own key is "
                                "not zero", fx + [z3.Not(term.zero.v), g.inr(key),
                                                  at(key) == 0]))
    elif lead:
        ctx.lemmas.append(Lemma(f"{name}.lead", "a nonzero term aligned at its own key is "
                                f"at least {lead} units in magnitude",
                                fx + [z3.Not(term.zero.v), g.inr(key),
                                      at(key) < lead, at(key) > -lead]))
    ctx.lemmas.append(Lemma(f"{name}.gain.down", "an addend that lowers E gains at least "
                            f"{units(down)} units of the coarser alignment",
                            hyp + [g.inr(V1), g.inr(V2), keyy <= V2, V2 < V1, key == V1,
                                   z3.Not(g.wide(aty(V2), w) - g.shl(g.wide(at(V1), w), V1 - V2)
                                          >= g.shl(z3.BitVecVal(gd, g.W2), V1 - V2))]))


# ============================================================================================
# A T-FDPA block's output, and the final addition
# ============================================================================================

def block_lemmas(ctx: Context, tag: str, blk, r: Fused, cut: list, D, prev_out) -> list[Lemma]:
    """flags, out.d<d>, zero (and inf, nan for a block after the first) of a T-FDPA block
    whose fused sum gave `r`."""
    import z3
    K, fd = ctx.st.K, ctx.fd
    N, P, Q = (sub(x.v, cut) for x in (blk.sp.nan, blk.sp.pinf, blk.sp.ninf))
    Z = sub(blk.conv.zero_sign.v, cut)
    out = sub(blk.out.v, cut)
    Sv, Ev = z3.BitVec("S_", r.w), z3.BitVec("E_", r.ew)
    Nv, Pv, Qv, Zv = (z3.Bool(n) for n in ("N_", "P_", "Q_", "Z_"))
    G = sub(out, [(r.S, Sv), (r.E, Ev), (N, Nv), (P, Pv), (Q, Qv), (Z, Zv)])
    if free_vars(G) - {"S_", "E_", "N_", "P_", "Q_", "Z_"}:
        raise NotDecomposable(f"{tag}: the output is not a function of (S, E, N, P, Q, Z)")
    # the block's inputs: each term's (after the D_ cut), a group term's products and scales
    blk_vars = set().union(*((r.gcut[t]["inputs"] | term_vars(ct)) if t in r.gcut else
                             term_vars(ct) for t, ct in enumerate(r.cterms)))
    blk_vars = {_n for _n in blk_vars if _n in ctx.fmt_of}
    lemmas = [Lemma(f"{tag}.flags", "finite inputs take the finite path",
                    ctx.fin(blk_vars) + [z3.Or(N, P, Q)])]
    F_ = z3.BoolVal(False)
    Gf = lambda s, e, z: BV(K, fd.storage, False, sub(G, [(Sv, s), (Ev, e), (Nv, F_), (Pv, F_),
                                                          (Qv, F_), (Zv, z)]))
    S1, S2 = z3.BitVec("S1_", r.w), z3.BitVec("S2_", r.w)
    Z1, Z2 = z3.Bool("Z1_"), z3.Bool("Z2_")
    g1, g2 = Gf(S1, r.V1, Z1), Gf(S2, r.V2, Z2)
    u1, u2 = fp.decode(fd, g1), fp.decode(fd, g2)
    smax = sum(1 << b for b in r.bounds)
    order = ctx.order
    viol = (order(g1, fd.name) < order(g2, fd.name)) if ctx.reverse else \
        (order(g2, fd.name) < order(g1, fd.name))
    lemmas += out_lemmas(tag, "F", r.V1, r.V2, S1, S2, smax, r.span, u1, u2, viol)
    g0 = Gf(z3.BitVecVal(0, r.w), r.V, Zv)
    lemmas.append(Lemma(f"{tag}.zero", "a zero sum gives a zero at any E",
                        [z3.Not(fp.decode(fd, g0).zero.v)]))
    if prev_out is not None:
        prods = blk_vars - {"D_"}
        dD = fp.decode(blk.fc, BV(K, D.size(), False, D))
        o = BV(K, fd.storage, False, out)
        uo = fp.decode(fd, o)
        lemmas.append(Lemma(f"{tag}.inf", "an infinite accumulator with finite products "
                            "gives that infinity",
                            ctx.fin(prods) + [dD.inf.v, z3.Not(z3.And(uo.inf.v, uo.sign.v == dD.sign.v))]))
        lemmas.append(Lemma(f"{tag}.nan", "a NaN accumulator gives a NaN output",
                            ctx.fin(prods) + [dD.nan.v, z3.Not(uo.nan.v)]))
    return lemmas


def add_lemmas(ctx: Context, prev_out) -> list[Lemma]:
    """add.finite, add.mono.u.*, add.mono.c.* and add.nan: the final IEEE addition of c
    (accumulate = add) is non-decreasing in both arguments and keeps NaN."""
    import z3
    st, ins, order = ctx.st, ctx.st.model.ins, ctx.order
    K, inp = st.K, st.inp
    fdd = fp.fmt(ins.d)
    U, U2 = z3.BitVec("U_", fdd.storage), z3.BitVec("U2_", fdd.storage)
    Gadd = sub(st.out.v, [(prev_out.v, U)])
    if not free_vars(Gadd) - {"U_"} <= {str(inp.c.v)} or str(inp.c.v) in ctx.seen_vars:
        raise NotDecomposable("the final addition is not a function of (u, c) alone")
    cc = inp.c
    c2 = z3.BitVec(str(cc.v) + "p", cc.w)
    ga = lambda u, c: BV(K, fdd.storage, False, sub(Gadd, [(U, u), (cc.v, c)]))
    nn = lambda x: z3.Not(fp.decode(ins.d, x).nan.v)
    bv = lambda x: BV(K, fdd.storage, False, x)
    cv = lambda x: BV(K, cc.w, False, x)
    fc_ = ctx.fin({str(cc.v)})
    ex = lambda x, f: lead_exp(fp.decode(f, x))
    step = lambda o1, o2: z3.And(o1 <= o2, o2 <= o1 + 1)
    fd_, fc2 = fp.fmt(ins.d), fp.fmt(ins.c)
    lemmas = [Lemma("add.finite", "a finite c and a non-NaN chain output give a non-NaN "
                    "result", fc_ + [nn(bv(U)), z3.Not(nn(ga(U, cc.v)))])]
    # u -> u' one step up in the order (or the other zero), every c, case by case
    lemmas += step_cases("add.mono.u", "the final addition is non-decreasing in the chain: "
                         "one step of u", fc_ + [nn(bv(U)), nn(bv(U2)),
                                                 step(order(bv(U), ins.d).v, order(bv(U2), ins.d).v),
                                                 (order(ga(U2, cc.v), ins.d) < order(ga(U, cc.v), ins.d)).v],
                         ex(bv(U), ins.d), ex(cv(cc.v), ins.c), fd_)
    lemmas += step_cases("add.mono.c", "the final addition is non-decreasing in c: one step "
                         "of c", fc_ + ctx.fin({str(cc.v)}, "p") + [nn(bv(U)),
                              step(order(cv(cc.v), ins.c).v, order(cv(c2), ins.c).v),
                              (order(ga(U, c2), ins.d) < order(ga(U, cc.v), ins.d)).v],
                         ex(cv(cc.v), ins.c), ex(bv(U), ins.d), fc2)
    lemmas.append(Lemma("add.nan", "a NaN chain output gives a NaN result",
                        fc_ + [fp.decode(ins.d, bv(U)).nan.v, nn(ga(U, cc.v))]))
    return lemmas


# ============================================================================================
# Helpers
# ============================================================================================

def term_vars(t: "mma.Term") -> set[str]:
    return free_vars(t.sign.v, t.e.v, t.sig.v, t.zero.v, t.inf.v, t.nan.v)


def sub_term(K, t: "mma.Term", pairs) -> "mma.Term":
    b = lambda x: Bool(K, sub(x.v, pairs))
    v = lambda x: BV(K, x.w, x.s, sub(x.v, pairs))
    return mma.Term(b(t.sign), v(t.e), v(t.sig), t.fb, b(t.zero), b(t.inf), b(t.nan))


def units(extra: int) -> str:
    return "n - 1" if extra == 0 else ("n" if extra == 1 else f"n + {extra - 1}")


def rz_shift(x, d, w: int, ew: int):
    """x (signed, w bits) divided by 2^d, truncated toward zero (d >= 0, ew bits)."""
    import z3
    dd = z3.ZeroExt(w - ew, d) if w > ew else z3.Extract(w - 1, 0, d)
    return z3.If(x < 0, -z3.LShR(-x, dd), z3.LShR(x, dd))


def out_lemmas(tag: str, F: str, V1, V2, S1, S2, smax: int, span: int, u1, u2, viol) -> list[Lemma]:
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


def group_cut(K, tag, gi, eg, gv, cut, term_le, fin, width, pair_of, scale_names, lemmas,
               fmt_s=None):
    """GST-FDPA group g: cut the group term at its exact sum P (GP_), its zero flag (GZ_, when
    it is "all G products zero" rather than "P = 0") and its all-negative-zero sign (GA_); Inf
    and NaN flags are false for finite inputs (mono.flags). Appends the per-product lemmas
    that justify the cut's hypotheses (mono.group in COMBINATION_MONOTONIC_FDPA) and returns
    the substitution, the cut variables, the group's inputs, the x-side hypotheses, the
    primed substitution and the 'larger' hypothesis for the y side."""
    import z3
    P = sub(eg.P.v, cut)
    Pw = eg.P.w
    b = eg.bits
    vs = [sub(v.v, cut) for v in eg.v]
    prods = eg.prods
    Pmax = len(vs) << b
    if Pmax > 1 << (Pw - 1):
        raise NotDecomposable(f"{tag}: group {gi}'s exact sum may wrap around in {Pw} bits")
    GP, GPp = z3.BitVec("GP_", Pw), z3.BitVec("GPp_", Pw)
    GZ, GZp = z3.Bool("GZ_"), z3.Bool("GZp_")
    GA, GAp = z3.Bool("GA_"), z3.Bool("GAp_")
    F_ = z3.BoolVal(False)
    zero = sub(gv.zero.v, cut)
    by_products = not free_vars(sub(zero, [(P, GP)])) <= {"GP_"}
    pairs = [(P, GP), (sub(gv.allz.v, cut), GA), (sub(gv.nan.v, cut), F_),
             (sub(gv.inf_p.v, cut), F_), (sub(gv.inf_n.v, cut), F_)]
    if by_products:
        pairs.append((zero, GZ))
    gname = f"{tag}.g{gi}"
    inputs: set = set()
    zeros = []
    acc = None
    for i, (v, t) in enumerate(zip(vs, prods)):
        tv = term_vars(t)
        if len(tv) != 2 or frozenset(tv) not in pair_of:
            raise NotDecomposable(f"{gname}: product {i} reads {sorted(tv)}")
        inputs |= tv
        pr = [(z3.BitVec(n, width(n)), z3.BitVec(n + "p", width(n))) for n in sorted(tv)]
        ty = sub_term(K, t, pr)
        fx, fy = fin(tv), fin(tv, "p")
        larger = z3.Not(term_le(ty, t).v)
        lemmas.append(Lemma(f"{gname}.p{i}.mono", "a larger product has a larger fixed-point "
                            "value in the group's exact sum", fx + fy + [larger,
                                                                     z3.Not(v <= sub(v, pr))]))
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
    sc = sorted(n for n in free_vars(*(s.v for s in gv.scales)) if n in scale_names)
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
            "scale_sigs": [fp.decode(fmt_s, s).sig for s in gv.scales] if fmt_s else []}


def lead_exp(u: "fp.Unpacked"):
    """The exponent of the leading 1 of a decoded operand (floor(log2 |x|) when finite and
    nonzero; emin - p for a zero), as a z3 term."""
    ew = u.exp.w + 2
    return (u.exp.resize(ew) - clz(u.sig).resize(ew, True)).v


def step_cases(name: str, role: str, base: list, ex, ey, f) -> list[Lemma]:
    """The lemma `base` (an IEEE addition's output does not drop over one step of its varying
    operand x) split into cases that together cover every input, so that each case has
    constant alignment and normalization shifts: d = e_x - e_y (exponents of the operands'
    leading 1s, lead_exp) for |d| <= D = p + 6, one case each, and d < -D, d > D (the smaller
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
