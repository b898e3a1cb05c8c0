"""Layer 5, query/claims/monotonic_tr: the monotonicity lemmas of TR-FDPA and GTR-FDPA tails.

A TR-FDPA block (CDNA3, c outside the fused sum) is cut at (T, em) as for the bound: the
products' fused-sum lemmas (claims.monotonic_fdpa.fused) with gain.up asking n units (a product
that raises e_max also pays for c, rounded down at the coarser E) and t.lead, the bound's tail
lemmas (claims.bound_tr), and tr.* (E = max(em, e_c), c exact at its own exponent, the gap
between c and a c' of larger exponent, the Inf/NaN flags) with out.d<d> for the RNE-FP32
conversion (`tr_monotonic_tail`, COMBINATION_MONOTONIC_TR). A GTR-FDPA block (CDNA3 fp8) has
two such group sums, asking one unit more each way, merged by rounding down at the larger
e_max (gtr.*, `gtr_merge_lemmas`), and drops a c below E - F - 1 (COMBINATION_MONOTONIC_GTR;
`structure(m, gtr=True)`). Chains of TR/GTR blocks cut each later block's c at the previous
output D_ (tr.dspecial, tr.pq for its Inf/NaN). The tail "mmasim" is taken with G = F2 + 1 in
place of F2, S cut before the renormalisation, the floor inside the monotone output G(S, E, Z).

May import: claims.common, claims.bound_fdpa, claims.bound_tr, claims.monotonic_fdpa,
mmaformal.query.model, mmaformal.mma/fp/bits, z3 (lazily).
Invariant: every factorization is checked syntactically before a lemma is built (else
NotDecomposable); the lemma texts and their order are those of the stored proofs.
"""
from __future__ import annotations

import dataclasses

from ... import fp, mma
from ...bits import BV
from ..model import Lemma, free_vars
from .bound_fdpa import bnd_fused, vmax
from .bound_tr import bound_lemmas_tr, tr_G, tr_sum, tr_tail_lemmas
from .common import Block, NotDecomposable, Structure, bv, sub
from .monotonic_fdpa import Context, out_lemmas

__all__ = ["COMBINATION_MONOTONIC_TR", "COMBINATION_MONOTONIC_GTR", "tr_monotonic_tail",
           "gtr_merge_lemmas"]


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


def gtr_merge_lemmas(st: Structure, blk: Block, tag: str, groups: list) -> tuple[list, int]:
    """GTR-FDPA's merge of its two group sums (Te at ee, To at eo) at em = max(ee, eo):
    T = Xe + Xo, each X the group sum rounded down to units 2^(em - F) (gtr.rd.<g>: X 2^d <=
    Tg < (X + 1) 2^d for d = em - eg, |X| <= the group's bound), gtr.em, and per group its
    e_max range (g<g>.bnd.emax from bnd_fused, g<g>.emlow). Returns (lemmas, a bound > |T|)."""
    import z3
    m = st.model
    sf = fp.fmt("f32")
    Fm = m.theory.param_dict["F"]
    g = blk.gtr
    lemmas: list[Lemma] = []
    cuts, free = [], {}
    for gi, ((fs_, al_, S_), tot) in enumerate(zip(blk.parts, groups)):
        pseudo = Block(blk.c_in, blk.fc, fs=fs_, aligned=al_, S=S_)
        fl, tot2, _vm = bnd_fused(f"{tag}.g{gi}", m, pseudo, [], Fm, Fm, sf)
        if tot2 != tot:
            raise NotDecomposable(f"{tag}: group {gi}'s bound differs")
        lemmas += [x for x in fl if x.name.endswith(".bnd.emax")]
        eg = fs_.e_max.v
        lemmas.append(Lemma(f"{tag}.g{gi}.emlow", "a group's e_max is at least the zero key",
                            [eg < -(1 << (eg.size() - 3))]))
        Tg, egv = z3.BitVec(f"T{gi}_", S_.w), z3.BitVec(f"e{gi}_", eg.size())
        cuts += [(S_.v, Tg), (eg, egv)]
        free[gi] = (Tg, egv, -(1 << (eg.size() - 3)), tot)
    Tc = sub(g.T.v, cuts)
    emc = sub(g.e_max.v, cuts)
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
    Vm = vmax(m, "f32", sf)
    rng = [e0 >= lo0, e1 >= lo1, se(e0) <= Vm, se(e1) <= Vm]
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


@dataclasses.dataclass
class _Tail:
    """The cut quantities of one TR/GTR tail: T at em, the tail's E, sc, the sum S2 (before
    a renormalisation), c (or the cut D_) and its primed twin c2, the flags and the output."""

    tag: str
    fc: fp.Format
    Fm: int
    F2: int
    k2: int
    T: object
    em: object
    Et: object
    sc: object
    S2: object
    cvar: object
    c2: object
    uc: object
    uc2: object
    cfin: list
    cfin2: list
    N: object
    P: object
    Q: object
    Z: object
    out: object
    Vmax: int


def tr_monotonic_tail(ctx: Context, blk: Block, tag: str, lo: int, hi: int, total: int,
                      groups: list | None = None, cut: list = ()) -> list[Lemma]:
    """The TR tail's lemmas of COMBINATION_MONOTONIC_TR for one TR-FDPA block: the tail as a
    function of the cut (T, em) and its c (the input c; in a later block of a chain, the
    previous block's output cut as D_, `cut`). The bound's tail lemmas (bnd.emax,
    bnd.emlow, bnd.tailE, bnd.tailT, bnd.tailc, bnd.tailsum: Tp and sc are T and c rounded
    down at E) are reused as they are; tr.E, tr.cexact, tr.cgap, the flag lemmas, out.d<dd>
    and tr.zero are added. groups (GTR-FDPA, COMBINATION_MONOTONIC_GTR): the totals of the
    two group sums, merged at em = max(e_even, e_odd) by rounding each down (gtr.em,
    gtr.rd.<g>, g<g>.bnd.emax, g<g>.emlow), and c dropped below E - F - 1 (gtr.csame)."""
    import z3
    st = ctx.st
    m, K, inp = st.model, st.K, st.inp
    p = m.theory.param_dict
    Fm, F2 = p["F"], tr_G(p)      # T' in units 2^(E-F2); F2 + 1 under tail "mmasim"
    k2 = F2 - Fm
    if blk.fc != "f32" or blk.tr is None or k2 < 0:
        raise NotDecomposable(f"{tag}: the TR monotonicity lemmas take an f32 c and F2 >= F")
    fc = fp.fmt("f32")
    if Fm < fc.t:
        raise NotDecomposable(f"{tag}: F < the fraction bits of c")
    tr = blk.tr
    T, em, Et, sc = (sub(x.v, list(cut)) for x in (tr.T, tr.e_max, tr.E, tr.sc))
    S2 = sub(tr_sum(blk, F2 != p["F2"]).v, list(cut))
    cvar = cut[0][1] if cut else inp.c.v
    if groups is None:
        keep = {f"{tag}.bnd.{k}" for k in ("emax", "emlow", "tailE", "tailT", "tailc", "tailsum")}
        lemmas = [lm for lm in bound_lemmas_tr(st, None) if lm.name in keep]
        if not tr.T.v.eq(blk.S.v):
            raise NotDecomposable(f"{tag}: the tail does not read the fused sum")
    else:
        lemmas, total = gtr_merge_lemmas(st, blk, tag, groups)
        lemmas += tr_tail_lemmas(tag, K, T, em, Et, sub(tr.Tp.v, list(cut)), sc, S2, cvar,
                                 total, vmax(m, "f32", fc), Fm, Fm, F2, special_trunc=True)
    N, P, Q = (sub(x.v, list(cut)) for x in (blk.sp.nan, blk.sp.pinf, blk.sp.ninf))
    Z, out = sub(blk.conv.zero_sign.v, list(cut)), sub(blk.out.v, list(cut))
    cname = str(cvar)
    c2 = z3.BitVec(cname + "p", fc.storage)
    uc = fp.decode(fc, bv(K, cvar, fc.storage))
    uc2 = fp.decode(fc, bv(K, c2, fc.storage))
    cfin, cfin2 = ctx.fin({cname}), ctx.fin({cname}, "p")
    t = _Tail(tag, fc, Fm, F2, k2, T, em, Et, sc, S2, cvar, c2, uc, uc2, cfin, cfin2, N, P, Q,
              Z, out, vmax(m, "f32", fc))
    lemmas += _c_lemmas(ctx, t, groups is not None)
    lemmas += _flag_lemmas(ctx, t, bool(cut))
    lemmas += _finite_lemmas(ctx, t, lo, hi, total)
    return lemmas


def _c_lemmas(ctx: Context, t: _Tail, gtr: bool) -> list[Lemma]:
    """tr.E, tr.cexact, gtr.csame (GTR-FDPA) and tr.cgap: the tail's E, and c at it."""
    import z3
    K, order = ctx.st.K, ctx.order
    tag, fc, uc, uc2, cfin, cfin2 = t.tag, t.fc, t.uc, t.uc2, t.cfin, t.cfin2
    cname = str(t.cvar)
    ew_f, ew = t.em.size(), t.Et.size()
    Tv, emv = z3.BitVec("T_", t.T.size()), z3.BitVec("em_", ew_f)
    emw = z3.SignExt(ew - ew_f, emv)
    emlo = -(1 << (ew_f - 3))
    Vmax = t.Vmax
    Ec = sub(t.Et, [(t.T, Tv), (t.em, emv)])
    if not free_vars(Ec) <= {"em_", cname}:
        raise NotDecomposable(f"{tag}: the tail's E is not a function of (em, c)")
    ecw = z3.SignExt(ew - uc.exp.w, uc.exp.v)
    lemmas = [Lemma(f"{tag}.tr.E", "the tail aligns at E = max(em, the exponent of c), "
                    "E = em for a zero c; a nonzero c's exponent lies in [emin, emax]",
                    cfin + [emv >= emlo, emv <= Vmax,
                            z3.Not(z3.And(
                                Ec == z3.If(z3.Or(uc.zero.v, emw >= ecw), emw, ecw),
                                z3.Implies(z3.Not(uc.zero.v),
                                           z3.And(ecw >= fc.emin, ecw <= fc.emax))))])]
    Ev = z3.BitVec("E_", ew)
    scc = sub(t.sc, [(t.Et, Ev)])
    if not free_vars(scc) <= {"E_", cname}:
        raise NotDecomposable(f"{tag}: sc is not a function of (c, E)")
    mag = z3.ZeroExt(scc.size() - uc.sig.w, uc.sig.v) << (t.Fm - fc.t)
    lemmas.append(Lemma(f"{tag}.tr.cexact", "aligned at its own exponent, a nonzero c is exact: "
                        "sc 2^(E-F) = c",
                        cfin + [z3.Not(uc.zero.v), Ev == ecw,
                                z3.Not(scc == z3.If(uc.sign.v, -mag, mag))]))
    c_lt = (order(bv(K, t.cvar, fc.storage), "f32") < order(bv(K, t.c2, fc.storage), "f32")).v
    if gtr:
        scc2 = sub(scc, [(t.cvar, t.c2)])
        ecw2 = z3.SignExt(ew - uc2.exp.w, uc2.exp.v)
        lemmas.append(Lemma(f"{tag}.gtr.csame", "at one E (at least the exponents of c and c'), "
                            "a larger c aligns no lower (dropped below E - F - 1 or rounded down)",
                            cfin + cfin2 + [c_lt, Ev <= Vmax,
                                            z3.Implies(z3.Not(uc.zero.v), Ev >= ecw),
                                            z3.Implies(z3.Not(uc2.zero.v), Ev >= ecw2),
                                            z3.Not(scc <= scc2)]))
    # c' - c >= 2^(e_c' - F2) when c < c' and c' has the larger exponent (values in units
    # 2^(emin - t), scaled by 2^s so that the bound is an integer)
    s_ = max(0, t.F2 - fc.t)
    WV = fc.p + (fc.emax - fc.emin) + s_ + 4

    def val(u):
        sh = z3.ZeroExt(WV - u.exp.w, u.exp.v - fc.emin)
        v = z3.ZeroExt(WV - u.sig.w, u.sig.v) << sh
        return z3.If(u.sign.v, -v, v)
    bound = z3.BitVecVal(1, WV) << z3.ZeroExt(WV - uc2.exp.w, uc2.exp.v - fc.emin + (fc.t - t.F2 + s_))
    lemmas.append(Lemma(f"{tag}.tr.cgap", "c < c' with c' of the larger exponent (or c zero): "
                        "c' - c >= 2^(e_c' - F2)",
                        cfin + cfin2 + [c_lt, z3.Not(uc2.zero.v),
                                        z3.Or(uc.zero.v, uc.exp.v < uc2.exp.v),
                                        z3.Not((val(uc2) - val(uc)) << s_ >= bound)]))
    return lemmas


def _flag_lemmas(ctx: Context, t: _Tail, chained: bool) -> list[Lemma]:
    """tr.nan, tr.special, tr.flags.c, tr.flags.p<k>, and for a later block of a chain tr.pq
    and tr.dspecial: the special values, from the flags of the products and c."""
    import z3
    K, inp, ins = ctx.st.K, ctx.st.inp, ctx.st.model.ins
    tag, fc, N, P, Q = t.tag, t.fc, t.N, t.P, t.Q
    cname = str(t.cvar)
    names = {str(x.v) for x in inp.a + inp.b} | {cname}
    names &= free_vars(N, P, Q)        # this block's products and its c
    allfin = ctx.fin(names)
    lemmas = [Lemma(f"{tag}.tr.nan", "finite inputs raise NaN only as +Inf and -Inf "
                    "products together", allfin + [z3.Not(N == z3.And(P, Q))])]
    Nv, Pv, Qv = (z3.Bool(n) for n in ("N_", "P_", "Q_"))
    Gs = bv(K, sub(t.out, [(N, Nv), (P, Pv), (Q, Qv)]), fc.storage)
    us = fp.decode(fc, Gs)
    pinf = fc.inf_code << fc.pad
    lemmas.append(Lemma(f"{tag}.tr.special", "the NaN flag gives NaN; else the -Inf flag gives "
                        "-Inf, else the +Inf flag +Inf",
                        [z3.Not(z3.And(z3.Implies(Nv, us.nan.v),
                                       z3.Implies(z3.And(z3.Not(Nv), Qv), Gs.v == pinf | (fc.sign_bit << fc.pad)),
                                       z3.Implies(z3.And(z3.Not(Nv), z3.Not(Qv), Pv), Gs.v == pinf)))]))
    cpr = [(t.cvar, t.c2)]
    lemmas.append(Lemma(f"{tag}.tr.flags.c", "the Inf flags do not depend on a finite c",
                        allfin + t.cfin2 + [z3.Not(z3.And(P == sub(P, cpr), Q == sub(Q, cpr)))]))
    for k, (xa, xb) in enumerate(zip(inp.a, inp.b)):
        if str(xa.v) not in names:
            continue                    # a product of another block
        pr = [(x.v, z3.BitVec(str(x.v) + "p", x.w)) for x in (xa, xb)]
        ya, yb = (BV(K, x.w, False, sub(x.v, pr)) for x in (xa, xb))
        larger = z3.Not(ctx.term_le(mma.product(fp.decode(ins.a, ya), fp.decode(ins.b, yb)),
                                    mma.product(fp.decode(ins.a, xa), fp.decode(ins.b, xb))).v)
        pn = sorted(str(x.v) for x in (xa, xb))
        lemmas.append(Lemma(f"{tag}.tr.flags.p{k}", f"product {k} grows: the +Inf flag stays "
                            "raised, the -Inf flag is not newly raised",
                            allfin + ctx.fin(pn, "p") + [larger, z3.Not(z3.And(
                                z3.Implies(P, sub(P, pr)), z3.Implies(sub(Q, pr), Q)))]))
    if chained:                         # a later block: its c is the previous output D
        uc = t.uc
        prods = ctx.fin(names - {cname})
        lemmas.append(Lemma(f"{tag}.tr.pq", "the +Inf and -Inf flags together raise NaN",
                            [P, Q, z3.Not(N)]))
        lemmas.append(Lemma(f"{tag}.tr.dspecial", "an infinite or NaN accumulator raises its "
                            "flag", prods + [z3.Not(z3.And(
                                z3.Implies(z3.And(uc.inf.v, z3.Not(uc.sign.v)), P),
                                z3.Implies(z3.And(uc.inf.v, uc.sign.v), Q),
                                z3.Implies(uc.nan.v, N)))]))
    return lemmas


def _finite_lemmas(ctx: Context, t: _Tail, lo: int, hi: int, total: int) -> list[Lemma]:
    """out.d<d> and tr.zero: the finite path rho(S 2^(E - F2)) is non-decreasing in the value
    (one lemma per E2 - E1), and a zero sum gives a zero at any E."""
    import z3
    K, order, fc, tag = ctx.st.K, ctx.order, t.fc, t.tag
    ew = t.Et.size()
    Ev = z3.BitVec("E_", ew)
    S2v = z3.BitVec("S_", t.S2.size())
    Zv = z3.Bool("Z_")
    F_ = z3.BoolVal(False)
    G = sub(t.out, [(t.S2, S2v), (t.Et, Ev), (t.N, F_), (t.P, F_), (t.Q, F_), (t.Z, Zv)])
    if free_vars(G) - {"S_", "E_", "Z_"}:
        raise NotDecomposable(f"{tag}: the finite output is not a function of (S, E, Z)")
    bT = (total << t.k2) + 1
    bc = 1 << (fc.t + 2 + max(t.Fm - fc.t, 0))              # as bnd.tailT / bnd.tailc
    smax = bT + (bc << t.k2) + 1
    w2 = t.S2.size()
    if smax >= 1 << (w2 - 1):
        raise NotDecomposable(f"{tag}: the tail's sum may wrap around in {w2} bits")
    Gf = lambda s, e, z: bv(K, sub(G, [(S2v, s), (Ev, e), (Zv, z)]), fc.storage)
    S1, S2_ = z3.BitVec("S1_", w2), z3.BitVec("S2_", w2)
    V1, V2 = z3.BitVec("E1_", ew), z3.BitVec("E2_", ew)
    g1, g2 = Gf(S1, V1, z3.Bool("Z1_")), Gf(S2_, V2, z3.Bool("Z2_"))
    u1, u2 = fp.decode(fc, g1), fp.decode(fc, g2)
    viol = (order(g1, "f32") < order(g2, "f32")) if ctx.reverse else \
        (order(g2, "f32") < order(g1, "f32"))
    span = max(hi, fc.emax) - min(lo, fc.emin)
    lemmas = out_lemmas(tag, "F2", V1, V2, S1, S2_, smax, span, u1, u2, viol)
    lemmas.append(Lemma(f"{tag}.tr.zero", "a zero sum gives a zero at any E",
                        [z3.Not(fp.decode(fc, Gf(z3.BitVecVal(0, w2), Ev, Zv)).zero.v)]))
    return lemmas
