"""Layer 5, query/claims/bound_fdpa: the lemmas of the Table 9 bound for T-FDPA chains.

[Xie2025] Table 9 (COMBINATION_BOUND): per block, the fused sum's bnd.emax and bnd.term (each
aligned term is its value truncated to units 2^(E-F); `bnd_fused`) and the output
conversion's bnd.out (`bnd_out`); T-FDPA chains convert S 2^(E-F) (`bound_lemmas_fdpa`).
The TR-FDPA lemmas (claims.bound_tr) and the TR/GTR monotonicity lemmas reuse bnd_fused,
bnd_out and `vmax`.

May import: claims.common, mmaformal.query.model, mmaformal.mma/fp/bits, z3 (lazily).
Invariant: every factorization is checked syntactically before a lemma is built (else
NotDecomposable); the lemma texts are those of the stored proofs (proofs/cache).
"""
from __future__ import annotations

from ... import fp, mma
from ..model import Lemma, Model, free_vars
from .common import Block, NotDecomposable, Structure, bv, sub

__all__ = ["COMBINATION_BOUND", "bound_lemmas_fdpa", "bnd_fused", "bnd_out", "vmax"]


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


def bnd_fused(tag: str, m: Model, blk: Block, cut: list, F: int, Fm: int, sf) -> tuple[list, int, int]:
    """bnd.emax and bnd.term<i> of one block's fused sum (accumulator cut `cut`), after
    checking that its sum S is the wrap-free sum of the aligned terms. Returns (lemmas, the
    bound sum_t 2^mw_t > |S|, the bound Vmax >= e_max)."""
    import z3
    E = sub(blk.fs.e_max.v, cut)
    es = [sub(e.v, cut) for e in blk.fs.e]
    al = [sub(x.v, cut) for x in blk.aligned]
    terms = blk.fs.terms
    w = blk.S.w
    lemmas = []
    # -- E is at least every nonzero term's exponent
    zs = [sub(t.zero.v, cut) for t in terms]
    Vmax = vmax(m, blk.fc, sf)
    lemmas.append(Lemma(f"{tag}.bnd.emax", f"e_max is at least the exponent of every nonzero "
                        f"term and at most {Vmax}",
                        [z3.Not(z3.And(E <= Vmax, *[z3.Implies(z3.Not(zt), E >= et)
                                                    for zt, et in zip(zs, es)]))]))
    # -- each term: truncation error below one unit 2^(E-F) (E cut to V)
    V = z3.BitVec("E_", E.size())
    total = 0
    for i, (t, a_t, e_t) in enumerate(zip(terms, al, es)):
        A = sub(a_t, [(E, V)])
        sig = sub(t.sig.v, cut)
        sign, zero = sub(t.sign.v, cut), sub(t.zero.v, cut)
        inf, nan = sub(t.inf.v, cut), sub(t.nan.v, cut)
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
    if not free_vars(sub(sub(blk.S.v, cut), list(zip(al, A_)))) <= {f"A{t}_" for t in range(len(al))}:
        raise NotDecomposable(f"{tag}: S is not a function of the aligned terms")
    return lemmas, total, Vmax


def bnd_out(tag: str, K, out, S, E, N, P, Q, Z, w: int, Fc: int, rf, sf, r_half: bool) -> Lemma:
    """bnd.out: the output conversion of S 2^(E - Fc) (with its special values) errs by at
    most r ulp of a finite, non-overflowing output (S, E, flags cut)."""
    import z3
    Sv, Ev = z3.BitVec("S_", w), z3.BitVec("E_", E.size())
    Nv, Pv, Qv, Zv = (z3.Bool(n) for n in ("N_", "P_", "Q_", "Z_"))
    G = sub(out, [(S, Sv), (E, Ev), (N, Nv), (P, Pv), (Q, Qv), (Z, Zv)])
    left = free_vars(G) - {"S_", "E_", "N_", "P_", "Q_", "Z_"}
    if left:
        raise NotDecomposable(f"{tag}: the output is not a function of (S, E, flags)")
    g = bv(K, G, sf.storage)
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


def vmax(m: Model, fc: str, sf) -> int:
    """A static bound of a block's alignment exponents: the largest product exponent (of the
    converted operands), c's (format fc) and the output's (format sf), plus 2."""
    fa, fb = (fp.fmt(m.theory.convert or f) for f in (m.ins.a, m.ins.b))
    return max(fa.emax + fb.emax, fp.fmt(fc).emax, sf.emax) + 2


def bound_lemmas_fdpa(st: Structure, F_claim: int | None = None) -> list[Lemma]:
    """Lemmas of the Table 9 bound for a T-FDPA chain with a fused accumulator (checked by
    the caller, claims.bound.bound_lemmas); F_claim: the F the bound is stated with (the
    broken twin's), default the theory's."""
    import z3
    m, K = st.model, st.K
    th = m.theory
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
        fused, _, _ = bnd_fused(tag, m, blk, cut_D, F, Fm, sf)
        lemmas += fused
        terms = blk.fs.terms
        N, P, Q = (sub(x.v, cut_D) for x in (blk.sp.nan, blk.sp.pinf, blk.sp.ninf))
        # -- finite inputs take the finite path
        fin = []
        for t in terms:
            fin += [z3.Not(sub(t.inf.v, cut_D)), z3.Not(sub(t.nan.v, cut_D))]
        lemmas.append(Lemma(f"{tag}.bnd.flags", "finite terms raise no NaN/Inf flag",
                            fin + [z3.Not(z3.And(z3.Not(N), z3.Not(P), z3.Not(Q)))]))
        # -- the output conversion: error at most r ulp of a finite, non-overflowing output
        lemmas.append(bnd_out(tag, K, sub(blk.out.v, cut_D), sub(blk.S.v, cut_D),
                              sub(blk.fs.e_max.v, cut_D), N, P, Q,
                              sub(blk.conv.zero_sign.v, cut_D), blk.S.w, Fm, rf, sf, r_half))
        prev_out = blk.out
    if not st.out.v.eq(prev_out.v):
        raise NotDecomposable("the output is not the last block's output")
    return lemmas
