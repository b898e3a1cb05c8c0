"""Layer 5, query/claims/bound: the claim `prove bound` ([Xie2025] Table 9), its broken twin
and its lemmas.

Claim: for finite inputs on which no block output overflows (every block output finite and
below the largest finite magnitude), |Phi(a, b, c) - (c + sum a_k b_k)| <= sum over the chained
blocks j of n_j 2^(e_max,j - F) + r ulp(d_j), with n_j the number of addends of block j
(L + 1), e_max,j its alignment exponent, d_j its output, r = 1 for RZ outputs and 1/2 for RNE.
T-FDPA chains (claims.bound_fdpa) and TR-FDPA chains (claims.bound_tr) are proved piece by
piece (`bound_lemmas`); others, and refutations, by the monolithic query (`bound_parts`: the
exact sum in a static fixed-point width), which reports the worst witness found (largest
excess) after up to `rounds` searches. Broken twin: the theory with F - 2 against the same
bound (the same lemma set must fail; a concrete violating input is searched for and replayed).

May import: claims.common, claims.core, claims.bound_fdpa, claims.bound_tr,
mmaformal.query.model, .proofs, .store, .frame, mmaformal.mma/fp/bits, z3 (lazily).
Invariant: "proved" only from UNSAT (every lemma, or the monolithic query); a violating
witness is replayed on every back-end and its error checked with exact Fractions
(claims.core.bound_concrete) before it is reported.
"""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ... import fp, mma
from ...bits import BV, ite
from ..frame import BadInput, InternalError
from ..model import Model, hex_bits, mutate, replay, resolve, smt2_text
from ..proofs import save_result
from ..store import sha256
from .bound_fdpa import COMBINATION_BOUND, bound_lemmas_fdpa
from .bound_tr import COMBINATION_BOUND_TR, bound_lemmas_tr
from .common import (TR_OPS, NotDecomposable, Structure, decomposed, monolithic, now, run_lemmas,
                     structure, traced_dot)
from .core import bound_blocks, bound_concrete, outcome

__all__ = ["prove_bound", "from_args", "job", "applies", "bound_lemmas", "bound_parts", "bound_check", "COMBINATION_BOUND",
           "COMBINATION_BOUND_TR"]


def bound_lemmas(st: Structure, F_claim: int | None = None) -> list:
    """Lemmas of the Table 9 bound for a T-FDPA or TR-FDPA chain (fused accumulator)."""
    if st.why:
        raise NotDecomposable(st.why)
    th = st.model.theory
    if th.op in TR_OPS and st.acc is None:
        return bound_lemmas_tr(st, F_claim)
    if th.op != "t_fdpa" or st.acc is not None:
        raise NotDecomposable("the bound decomposition takes t_fdpa and tr_fdpa chains with a "
                              "fused accumulator")
    return bound_lemmas_fdpa(st, F_claim)


def _fixed(u: fp.Unpacked, shift_base: int, W: int) -> BV:
    """The exact value of a decoded finite element as a signed W-bit integer in units of
    2^shift_base (shift_base <= its LSB exponent)."""
    f = u.fmt
    K = u.sig.k
    sh = (u.exp.resize(max(u.exp.w, 12) + 2) - (f.t + shift_base)).bitcast(False)
    v = u.sig.resize(W).shl_wrap_var(sh).resize(W, True)
    return ite(u.sign, -v, v)


def bound_parts(m: Model, F_claim: int | None = None):
    """The Table 9 query parts of model m, the bound stated with F_claim (default the
    theory's F): (K, inputs, constraints, excess term, U, W)."""
    import z3
    ins = m.ins
    th = m.theory
    p = th.param_dict
    rf, rmode, sf = mma.rho_of(p.get("rho", "RNE-FP32"))
    half = rmode == "RNE"
    F = p["F"] if F_claim is None else F_claim
    K, x, d, notes = traced_dot(m)
    fa, fb, fc = (fp.fmt(f) for f in (ins.a, ins.b, ins.c))
    # static exponent ranges -> fixed-point unit 2^U and width W
    lsb_prod = (fa.emin - fa.t) + (fb.emin - fb.t)
    lsb_c = min(fc.emin - fc.t, sf.emin - rf.t)
    e_lo = min(fa.emin + fb.emin, fc.emin, sf.emin) - 2
    ulp_lo = sf.emin - rf.t - 1
    U = min(lsb_prod, lsb_c, e_lo - max(p["F"], F, p.get("F2", 0)), ulp_lo)
    top = max(fa.emax + fb.emax + 2, fc.emax + 1, sf.emax + 1) + 1
    W = top - U + (m.k + 4).bit_length() + 6
    cons = []
    for v, f in [(v, ins.a) for v in x.a] + [(v, ins.b) for v in x.b] + [(x.c, ins.c)]:
        u = fp.decode(f, v)
        cons.append(z3.Not((u.nan | u.inf).v))
    exact = _fixed(fp.decode(fc, x.c), U, W)
    for a, b in zip(x.a, x.b):
        ua, ub = fp.decode(fa, a), fp.decode(fb, b)
        # wide enough for the unit offset too (fp4/fp6 exponents are 2-3 bits, U ~ -150)
        ew = max(ua.exp.w, ub.exp.w, (fa.t + fb.t + U).bit_length() + 1) + 2
        e = ua.exp.resize(ew) + ub.exp.resize(ew) - (fa.t + fb.t + U)
        pw = ua.sig.w + ub.sig.w
        sig = (ua.sig.resize(pw) * ub.sig.resize(pw)).resize(W)
        v = sig.shl_wrap_var(e.bitcast(False)).resize(W, True)
        exact = exact + ite(ua.sign ^ ub.sign, -v, v)
    bound = K.const(0, W, True)
    one = K.const(1, W, False)
    for (E, n, allz), dj in bound_blocks(m, notes):
        ee = E.resize(max(E.w, 12) + 2) - (F + U)
        tr = K.const(n, W, False).shl_wrap_var(ee.bitcast(False))
        if allz is not None:
            tr = ite(allz, K.const(0, W, False), tr)
        ud = fp.decode(sf, dj)
        ue = ud.exp.resize(max(ud.exp.w, 12) + 2) - (rf.t + (1 if half else 0) + U)
        ulp = one.shl_wrap_var(ue.bitcast(False))
        bound = bound + tr.resize(W, True) + ulp.resize(W, True)
        mag = dj.extract(sf.pad + sf.k - 2, sf.pad)
        cons.append(z3.Not((ud.nan | ud.inf).v))
        cons.append((mag != (rf.max_code << rf.pad) >> sf.pad).v)
    val = _fixed(fp.decode(sf, d), U, W)
    diff = val - exact
    err = ite(diff < 0, -diff, diff)
    return K, x, cons, err - bound, U, W


def bound_check(m: Model) -> None:
    ins, th = m.ins, m.theory
    if th.model != "fdpa" or th.op not in ("t_fdpa", "tr_fdpa", "gtr_fdpa") or ins.scale:
        raise BadInput(f"{m.label}: bound takes T-FDPA, TR-FDPA or GTR-FDPA theories without "
                       f"block scales (theory {th.id} is {th.describe()})")
    if th.accumulate != "fused" or th.convert or th.k_order != "natural" or th.accumulator:
        raise BadInput(f"{m.label}: bound does not take accumulate = add, operand conversion, "
                       f"a k order or an accumulator conversion")


def _restriction(m: Model, x, hint: int) -> list:
    """The restricted witness query of the bound: the products after the first `hint` zero and
    c = +0 (a restriction of the same query: a SAT answer is a witness of the full claim; UNSAT
    or a time-out there proves nothing). Empty when hint is 0 or covers every product."""
    if not 0 < hint < m.k:
        return []
    return [(v == 0).v for v in x.a[hint:] + x.b[hint:]] + [(x.c == 0).v]


def _bound_search(m: Model, F_claim, solver, timeout, backends, rounds, t0, emit=None,
                  hint: int = 0):
    """The violating inputs of the bound by the solver: first, with hint > 0, among the
    restricted inputs (`_restriction`, within half the time), then over all inputs; each
    witness found is replayed and checked with exact rationals (bound_concrete), and up to
    `rounds` queries ask for a larger excess than the best so far."""
    K, x, cons, excess, U, W = bound_parts(m, F_claim)
    viol = (excess > 0).v
    restrict = _restriction(m, x, hint)

    def chk(model):
        w = x.witness(model)
        o = replay([m], w, backends)[m.label]
        e_ex, e_err, e_b = bound_concrete(m, w, F_claim)
        if not e_err > e_b:
            raise InternalError(f"bound witness does not replay: error {e_err} <= bound {e_b}")
        return w, o, e_err, e_b
    best, extra, it, method = None, [], 0, "monolithic"
    st = None
    if restrict:
        st, r, info, text = monolithic(lambda: cons + [viol] + restrict, K, solver,
                                       None if timeout is None else timeout / 2, now(), chk)
        if st == "sat":
            cons = cons + restrict          # improve within the restriction
            method = (f"monolithic (restricted: products after the first {hint} zero, "
                      f"c = +0)")
    if st != "sat":
        st, r, info, text = monolithic(lambda: cons + [viol] + extra, K, solver, timeout, t0, chk)
    first_text = smt2_text(cons + [viol])
    if emit:
        Path(emit).write_text(text)
    while st == "sat":
        w, o, e_err, e_b = info
        if best is None or e_err - e_b > best[2] - best[3]:
            best = (w, o, e_err, e_b)
        it += 1
        if it >= rounds or (timeout is not None and now() - t0 > timeout * 0.9):
            break
        ex = int((e_err - e_b) / Fraction(2) ** U)
        if ex >= (1 << (W - 2)):
            break
        extra = [(excess > ex).v]
        st, r, info, text = monolithic(lambda: cons + [viol] + extra, K, solver, timeout, t0, chk)
    return st, r, best, it, first_text, method


def prove_bound(m: Model, solver="bitwuzla", timeout=600, save=False, emit=None,
                backends=("int", "numpy", "compiled"), rounds: int = 4,
                method: str = "auto", hint: int = 0) -> dict:
    """Prove the Table 9 bound, or find violating witnesses (up to `rounds` increasingly
    large excesses; the worst is reported). hint > 0: the witness search first looks among
    inputs whose products after the first `hint` are zero and whose c is +0
    (`_restriction`)."""
    t0 = now()
    bound_check(m)
    p = m.theory.param_dict
    rf, rmode, sf = mma.rho_of(p.get("rho", "RNE-FP32"))
    claim = (f"{m.label}: for finite inputs with no block overflow, |Phi(a,b,c) - (c + sum a_k "
             f"b_k)| <= sum_j n_j 2^(e_max,j - {p['F']}) + {'1/2' if rmode == 'RNE' else '1'} "
             f"ulp_{rf.name}(d_j) (seed 002 Table 9)")
    ins = m.ins
    why = ""
    if method in ("auto", "decomposed"):
        status, parts, why = decomposed([structure(m)], bound_lemmas, method, solver,
                                         timeout, save, t0)
        if status is not None:
            texts = {p["sha256"]: p.pop("text") for p in parts}
            if status == "proved":
                K_, x_, cons_, excess_, U_, W_ = bound_parts(m)
                text = smt2_text(cons_ + [(excess_ > 0).v])
                res = outcome("proved", claim, [m], now() - t0,
                              ",".join(sorted({p["solver"] for p in parts})),
                              method="decomposed", parts=parts,
                              combination=(COMBINATION_BOUND_TR if m.theory.op == "tr_fdpa"
                                           else COMBINATION_BOUND), _texts=texts)
                res["query_sha256"] = sha256(text)
                res["seconds"] = round(now() - t0, 3)
                res["twin"] = _bound_twin(m, solver, timeout, backends)
                res["total_seconds"] = round(now() - t0, 3)
                if save:
                    res["saved"] = save_result("bound", res, [m], text)
                return res
            why = f"lemma {parts[-1]['lemma']} {'failed' if status == 'failed' else 'undecided'}; " \
                  f"monolithic search"
            if status == "unknown" and method == "decomposed":
                return outcome("unknown", claim, [m], now() - t0, solver, method="decomposed",
                               parts=parts, reason=why)
    st, r, best, it, text, how = _bound_search(m, None, solver, timeout, backends, rounds, t0,
                                               emit, hint)
    if best is not None:
        w, o, e_err, e_b = best
        res = outcome("refuted", claim, [m], now() - t0, r.solver, witness=w.to_json(),
                      method=how,
                      detail={"output": hex_bits(o, ins.d), "error": str(e_err), "bound": str(e_b),
                              "ratio": f"{float(e_err / e_b):.6g}" if e_b else "inf",
                              "rounds": it})
        res["_runs"] = [(m, w, o)]
    elif st == "unsat":
        res = outcome("proved", claim, [m], now() - t0, r.solver, method="monolithic",
                      query_text=text, solver_version=r.version)
        res["twin"] = _bound_twin(m, solver, timeout, backends)
    else:
        res = outcome("unknown", claim, [m], now() - t0, r.solver, method="monolithic",
                      reason=(why + "; " if why else "") + (r.reason or "no answer"))
    res["query_sha256"] = sha256(text)
    if save:
        res["saved"] = save_result("bound", res, [m], text)
    res["seconds"] = round(now() - t0, 3)
    return res


def _bound_twin(m: Model, solver, timeout, backends, concrete_budget: float = 60):
    """Twin: the theory with F-2 fraction bits against the same bound (stated with the
    original F). For T-FDPA chains the same lemma set must fail (a lemma SAT); then a concrete
    violating input is searched for (monolithic, within `concrete_budget` seconds) and, if
    found, replayed."""
    t0 = now()
    F = m.theory.param_dict["F"]
    tw = mutate(m, {"F": F - 2})
    d = {"claim": f"{tw.label}: the same bound (with F = {F}) on the theory with F = {F - 2}"}
    try:
        lemmas = bound_lemmas(structure(tw), F_claim=F)
    except NotDecomposable:
        lemmas = None
    if lemmas is not None:
        status, parts = run_lemmas(lemmas, solver, timeout)
        if status == "failed":
            d.update(status="sat", verdict="refuted", lemma=parts[-1]["lemma"],
                     lemma_sha256=parts[-1]["sha256"])
    budget = concrete_budget if lemmas is not None else timeout
    st, r, best, it, text, _ = _bound_search(tw, F, solver, budget, backends, 1, now())
    d["query_sha256"] = sha256(text)
    if best:
        d.update(status="sat", verdict="refuted", witness=best[0].to_json(),
                 error=str(best[2]), bound=str(best[3]))
    elif "status" not in d:
        d["status"] = st
    d["solver"] = r.solver
    d["seconds"] = round(now() - t0, 3)
    return d


# ============================================================================================
# The verb's hooks (query.prove: CLAIM_MODULES)
# ============================================================================================

def from_args(args, kw: dict) -> dict:
    """`prove bound A` (prove.run; kw: the common options)."""
    return prove_bound(resolve(args.A), rounds=args.rounds, method=args.method,
                       hint=args.hint, **kw)


def job(m: Model, names, o: dict) -> dict:
    """`prove bound --all`: the claim on m, the first instruction of a group (prove.prove_job;
    o: its options)."""
    return prove_bound(m, o["solver"], o["timeout"], False, None, o["backends"], o["rounds"],
                       o["method"], o.get("hint", 0))


def applies(m: Model, change=None) -> str:
    """Why the bound does not apply to m ("" when it does), for prove bound --all."""
    try:
        bound_check(m)
    except BadInput as e:
        if "accumulate" in str(e):
            return "accumulate = add, operand conversion, a k order or an accumulator conversion"
        return (f"{m.theory.op}" + (" with block scales" if m.ins.scale else "")
                + ": outside the T-FDPA/TR-FDPA/GTR-FDPA bound")
    return ""
