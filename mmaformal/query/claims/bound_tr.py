"""Layer 5, query/claims/bound_tr: the lemmas of the Table 9 bound for TR-FDPA chains.

TR-FDPA chains (CDNA3, [Xie2025] Algorithm 10) are cut once more than T-FDPA ones, at the fused
sum's (T, em): the tail's RD alignments of T (to F2 bits) and of c (to F bits) at E = max(em,
e_c), their wrap-free sum S, and the RNE-FP32 conversion of S 2^(E-F2) are lemmas of their own
(bnd.tail*, `tr_tail_lemmas`; COMBINATION_BOUND_TR). The TR/GTR tail "mmasim"
(mma.tr_renorm: T rounded down at 2^(E-F2-1), S renormalised and floored to F2 fraction bits
before RNE) is taken with G = F2 + 1 in place of F2 (`tr_G`), S cut before the
renormalisation, and bnd.renormlo and bnd.renorm (`tr_renorm_lemmas`); without `tail` every
lemma text is the paper's tail's. The TR/GTR monotonicity lemmas (claims.monotonic_tr) reuse
the tail lemmas.

May import: claims.common, claims.bound_fdpa, mmaformal.query.model, mmaformal.mma/fp/bits,
z3 (lazily).
Invariant: every factorization is checked syntactically before a lemma is built (else
NotDecomposable); the lemma texts are those of the stored proofs (tests/test_tr_tail_proofs.py
pins some of their sha256).
"""
from __future__ import annotations

from ... import fp, mma
from ...bits import BV
from ..model import Lemma, free_vars
from .bound_fdpa import bnd_fused, bnd_out
from .common import Block, NotDecomposable, Structure, bv, sub

__all__ = ["COMBINATION_BOUND_TR", "bound_lemmas_tr", "tr_tail_lemmas", "tr_renorm_lemmas",
           "tr_G", "tr_sum", "tr_smax"]


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


def tr_tail_lemmas(tag: str, K, T, em, Et, Tp, sc, S2, cbits, total: int, Vmax: int,
                    Fm: int, F: int, F2: int, special_trunc: bool = False) -> list[Lemma]:
    """bnd.emlow, bnd.tailE, bnd.tailT, bnd.tailc and bnd.tailsum of a TR tail
    (mma.tr_tail) cut at (T, em): e_max's lower bound, E's range, Tp and sc as T and c
    rounded down at E, and their wrap-free sum S. special_trunc (GTR-FDPA): a nonzero c with
    e_c < E - F - 1 gives sc = 0 (Algorithm 11)."""
    import z3
    fc = fp.fmt("f32")
    tc = fc.t
    lemmas: list[Lemma] = []
    uc = fp.decode(fc, bv(K, cbits, fc.storage))
    cfin = [z3.Not(uc.nan.v), z3.Not(uc.inf.v)]
    wT, ew_f, ew = T.size(), em.size(), Et.size()
    Tv, emv, Ev = z3.BitVec("T_", wT), z3.BitVec("em_", ew_f), z3.BitVec("E_", ew)
    cut_T = [(T, Tv), (em, emv)]
    emw = z3.SignExt(ew - ew_f, emv)
    # -- the fused e_max is at least the zero-term key (exponent ranges of the cuts)
    emlo = -(1 << (ew_f - 3))
    lemmas.append(Lemma(f"{tag}.bnd.emlow", f"e_max >= {emlo}", [em < emlo]))
    # -- the tail's E: at least em and the exponent of a nonzero c, at most Vmax
    Et_c = sub(Et, cut_T)
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
    Tp_c = sub(sub(Tp, cut_T), [(sub(Et, cut_T), Ev)])
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
    sc_c = sub(sc, [(Et, Ev)])
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
    S2_c = sub(S2, [(Tp, Tpv), (sc, scv)])
    if not free_vars(S2_c) <= {"Tp_", "sc_"}:
        raise NotDecomposable(f"{tag}: S is not a function of (Tp, sc)")
    WS = max(S2.size(), Tp.size(), sc.size() + k2) + 4
    ext = lambda x: z3.SignExt(WS - x.size(), x)
    lemmas.append(Lemma(f"{tag}.bnd.tailsum", "S = Tp + sc 2^(F2-F) exactly",
                        [Tpv <= bT, Tpv >= -bT, scv <= bc, scv >= -bc,
                         z3.Not(ext(S2_c) == ext(Tpv) + (ext(scv) << k2))]))
    return lemmas


def tr_G(p: dict) -> int:
    """The fraction bits of the TR tail's T' (units 2^(E-G), mma.tr_tail): F2 under tail
    "algorithm" (the parameter absent), F2 + 1 under tail "mmasim"."""
    return p["F2"] + (1 if p.get("tail", "algorithm") == "mmasim" else 0)


def tr_sum(blk: Block, renorm: bool) -> BV:
    """The tail's sum S = Tp + sc 2^(G-F), before mmasim's renormalisation (renorm: the theory
    has tail "mmasim", whose trace must then hold the tr_renorm step)."""
    if renorm != (blk.renorm is not None):
        raise NotDecomposable("the trace's renormalisation step does not match the tail")
    return blk.renorm.S if renorm else blk.conv.S


def tr_smax(total: int, k2: int, Fm: int) -> int:
    """A bound > |S| of the TR tail's sum (bnd.tailT's bound of Tp plus bnd.tailc's of sc,
    in units 2^(E-G))."""
    bT = (total << max(k2, 0)) + 1
    bc = 1 << (fp.fmt("f32").t + 2 + max(Fm - fp.fmt("f32").t, 0))
    return bT + (bc << k2) + 1


def tr_renorm_lemmas(tag: str, blk: Block, cut: list, cbits, S, E, smax: int, n: int,
                      Fm: int, F: int, F2: int, G: int, Vmax: int) -> list[Lemma]:
    """bnd.renormlo and bnd.renorm of tail "mmasim" (mma._tr_renorm: S in units 2^(E-G)
    floored to q 2^k, k = max(p - F2, -126 - F2 + G - E, 0) with p the leading one of |S|),
    for COMBINATION_BOUND_TR: every nonzero product's key and a nonzero c's exponent are at
    least Elo = -126 - F2 + F (so E >= Elo whenever S != 0); for |S| < smax and E in
    [Elo, Vmax] the floor errs by less than 2^(E-G+R) and is exact when S is a multiple of
    2^(G-F) (the case E = em)."""
    import z3
    Elo = mma.TR_EMIN - F2 + F
    fc = fp.fmt("f32")
    K = blk.c_in.k
    uc = fp.decode(fc, bv(K, cbits, fc.storage))
    terms = blk.fs.terms
    es = [sub(e.v, cut) for e in blk.fs.e]
    W16 = lambda x: z3.SignExt(max(0, 16 - x.size()), x)
    hyp = [z3.Not(uc.nan.v), z3.Not(uc.inf.v)]
    for t in terms:
        hyp += [z3.Not(sub(t.inf.v, cut)), z3.Not(sub(t.nan.v, cut))]
    claim = [z3.Implies(z3.Not(sub(t.zero.v, cut)), W16(e) >= Elo) for t, e in zip(terms, es)]
    claim.append(z3.Implies(z3.Not(uc.zero.v), W16(uc.exp.v) >= Elo))
    lemmas = [Lemma(f"{tag}.bnd.renormlo", f"a nonzero product's key and a nonzero c's exponent "
                    f"are at least {Elo} (so the renormalisation's floor at 2^(-126-F2) is no "
                    f"coarser than 2^(E-F))", hyp + [z3.Not(z3.And(*claim))])]
    # the floor
    Sv, Ev = z3.BitVec("S_", S.size()), z3.BitVec("E_", E.size())
    pr = [(S, Sv), (E, Ev)]
    q = sub(sub(blk.renorm.q.v, cut), pr)
    k = sub(sub(blk.renorm.k.v, cut), pr)
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


def bound_lemmas_tr(st: Structure, F_claim: int | None) -> list[Lemma]:
    """The Table 9 bound lemmas of a TR-FDPA chain: the fused sum as for T-FDPA, then the TR
    tail (mma.tr_tail) at the interface (T, em): the RD alignments of T and c at E, their
    wrap-free sum S, and the RNE-FP32 conversion of S 2^(E-F2). See COMBINATION_BOUND_TR."""
    import z3
    m, K, inp = st.model, st.K, st.inp
    p = m.theory.param_dict
    rf, mode, sf = mma.rho_of("RNE-FP32")
    Fm, F2 = p["F"], p["F2"]
    Gu = tr_G(p)                # T' in units 2^(E-Gu): F2, or F2 + 1 under tail "mmasim"
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
        fused, total, Vmax = bnd_fused(tag, m, blk, cut_D, F, Fm, sf)
        lemmas += fused
        tr = blk.tr
        T, em = sub(tr.T.v, cut_D), sub(tr.e_max.v, cut_D)
        Et, Tp, sc = (sub(x.v, cut_D) for x in (tr.E, tr.Tp, tr.sc))
        S2 = sub(tr_sum(blk, Gu != F2).v, cut_D)
        N, P, Q = (sub(x.v, cut_D) for x in (blk.sp.nan, blk.sp.pinf, blk.sp.ninf))
        Z = sub(blk.conv.zero_sign.v, cut_D)
        out = sub(blk.out.v, cut_D)
        uc = fp.decode(fc, bv(K, cbits, fc.storage))
        cfin = [z3.Not(uc.nan.v), z3.Not(uc.inf.v)]
        # -- flags: finite terms and c raise none; a flag gives a non-finite output; a
        #    non-finite product or c raises one
        terms = blk.fs.terms
        tfin = []
        for t in terms:
            tfin += [z3.Not(sub(t.inf.v, cut_D)), z3.Not(sub(t.nan.v, cut_D))]
        lemmas.append(Lemma(f"{tag}.bnd.flags", "finite terms and c raise no NaN/Inf flag",
                            tfin + cfin + [z3.Or(N, P, Q)]))
        lemmas.append(Lemma(f"{tag}.bnd.raise", "a non-finite product or c raises a flag",
                            [z3.Not(z3.And(*(tfin + cfin))), z3.Not(z3.Or(N, P, Q))]))
        Nv, Pv, Qv = (z3.Bool(n) for n in ("N_", "P_", "Q_"))
        G = sub(out, [(N, Nv), (P, Pv), (Q, Qv)])
        ug = fp.decode(sf, bv(K, G, sf.storage))
        lemmas.append(Lemma(f"{tag}.bnd.special", "a NaN/Inf flag gives a NaN or Inf output",
                            [z3.Or(Nv, Pv, Qv), z3.Not(z3.Or(ug.nan.v, ug.inf.v))]))
        lemmas += tr_tail_lemmas(tag, K, T, em, Et, Tp, sc, S2, cbits, total, Vmax, Fm, F, Gu)
        if blk.renorm is None:
            # -- the output conversion of S 2^(E-F2)
            lemmas.append(bnd_out(tag, K, out, S2, Et, N, P, Q, Z, S2.size(), F2, rf, sf,
                                   mode == "RNE"))
        else:
            # -- tail "mmasim": S renormalised and floored to q 2^X, then RNE of q 2^X
            n = len(terms)
            smax = tr_smax(total, Gu - Fm, Fm)
            lemmas += tr_renorm_lemmas(tag, blk, cut_D, cbits, S2, Et, smax, n, Fm, F, F2, Gu,
                                        Vmax)
            q = sub(blk.conv.S.v, cut_D)
            X = sub(blk.conv.exp.v, cut_D)
            lemmas.append(bnd_out(tag, K, out, q, X, N, P, Q, Z, q.size(), 0, rf, sf,
                                   mode == "RNE"))
        prev_out = blk.out
    if not st.out.v.eq(prev_out.v):
        raise NotDecomposable("the output is not the last block's output")
    return lemmas
