"""Layer 5, query/claims/monotonic: the claim `prove monotonic`, its broken twins and its lemmas.

Claim (after Mikaitis 2024, monotonicity of multi-term adders): for all finite inputs (a, b, c)
and (a', b', c') that differ in exactly one addend (one product a_i*b_i, where a_i and b_i may
both change, or c) whose exact value increases, Phi(a', b', c') is not smaller than
Phi(a, b, c), outputs compared as real numbers (+0 = -0, -Inf < finite < +Inf; a NaN output on
either side is outside the claim). FDPA chains are proved piece by piece
(`monotonic_lemmas_fdpa`: per fused block, the alignment exponent's change is paid for by the
changed addend's gain, claims.monotonic_fdpa; the output conversion is non-decreasing in the
sum's value; TR-FDPA and GTR-FDPA tails cut as for the bound, claims.monotonic_tr), integer
chains (`monotonic_lemmas_int`) and FMA chains (`fma_monotonic_lemmas`) likewise; others, and
refutations, monolithically (`monotonic_parts`), after a concrete search on numpy lanes
(witness_search.monotonic_pair, seeded with the stored counterexamples). Broken twin: the same
query with the output inequality reversed must be SAT; for a decomposed FMA chain,
fma.mono.prod with its inequality turned.

May import: claims.common, claims.core, claims.monotonic_fdpa, claims.monotonic_tr,
mmaformal.query.model, .proofs, .store, .cex, .solvers, .witness_search, .frame,
mmaformal.mma/fp/bits, z3 (lazily).
Invariant: "proved" only from UNSAT (every lemma, or the monolithic query); a refutation's
witness pair is replayed on every back-end, and checked to decrease, before it is reported.
"""
from __future__ import annotations

from pathlib import Path

from ... import fp, mma
from ...bits import BV, Z3Backend, ite
from ..frame import InternalError
from ..model import (Inputs, Lemma, Model, Witness, free_vars, hex_bits, replay, resolve,
                     smt2_text)
from ..proofs import save_result
from ..solvers import Result
from ..store import sha256
from ..witness_search import monotonic_pair
from .common import (GTR_OPS, TR_OPS, NotDecomposable, Structure, bv, decomposed, fma_chain_steps,
                     monolithic, now, real_order, structure, term_le, twin_lemma)
from .core import outcome, value_lt
from .monotonic_fdpa import (COMBINATION_MONOTONIC_FDPA, add_lemmas, block_lemmas, context,
                             fused)
from .monotonic_tr import COMBINATION_MONOTONIC_GTR, COMBINATION_MONOTONIC_TR, tr_monotonic_tail

__all__ = ["prove_monotonic", "from_args", "job", "monotonic_lemmas_fdpa", "monotonic_lemmas_int",
           "fma_monotonic_lemmas", "monotonic_parts", "monotonic_twin", "int_addend",
           "stored_monotonic_pairs", "COMBINATION_MONOTONIC_FDPA", "COMBINATION_MONOTONIC_TR",
           "COMBINATION_MONOTONIC_GTR", "COMBINATION_MONOTONIC_INT", "COMBINATION_MONOTONIC_FMA"]


COMBINATION_MONOTONIC_FMA = (
    "the output is d_K with d_0 = c and d_(k+1) = fma(a_k, b_k, d_k) (checked syntactically); "
    "for finite a, b: fma.nan: a NaN d gives a NaN output; fma.mono.acc: d <= d' (neither NaN) "
    "gives fma(a, b, d) <= fma(a, b, d') unless one is NaN; fma.mono.prod: a*b < a'*b' exactly "
    "gives fma(a, b, d) <= fma(a', b', d) unless one is NaN. Two inputs that differ in addend k "
    "have the same d_k (or, for c, d_0 < d'_0); step k orders d_(k+1) <= d'_(k+1) and every "
    "later step keeps the order; a NaN accumulator stays NaN to the output, where the claim "
    "excludes it.")


COMBINATION_MONOTONIC_INT = (
    "out(a, b, c) = G[T_j := t_j(a_j, b_j)] where G, the output with every product term t_j "
    "cut to a fresh variable T_j, has no input variable but c (checked syntactically); "
    "mono.id<k>: G = H(c, T_k, R_k) for all values, R_k = sum of the other T_j (wrap-free: "
    "(K-1) max|t| < 2^(W-1) in the sum's width W, checked statically); mono.range: t(a, b) "
    "lies in [t_min, t_max] for every input; mono.term: the claim's addend a_k*b_k (or the b1 "
    "bit) increasing makes t_k increase; mono.acc: T < T' in range and R in its range give "
    "H(c, T, R) <= H(c, T', R); mono.c: c < c' gives H(c, T, R) <= H(c', T, R). Two inputs "
    "that differ in addend k (or c) have the same R_k, so their outputs are ordered.")

# ============================================================================================
# The lemmas: FDPA chains, block by block
# ============================================================================================

def monotonic_lemmas_fdpa(st: Structure, order, term_le, reverse: bool = False) -> list[Lemma]:
    """The lemmas of the monotonicity claim for a T-FDPA chain (COMBINATION_MONOTONIC_FDPA),
    a GST-FDPA chain, and TR-FDPA / GTR-FDPA chains (COMBINATION_MONOTONIC_TR / _GTR).
    order(x, f), term_le(t1, t2): the claim's comparisons (claims.common). reverse: mono.out
    with its output inequality turned (a broken twin: satisfiable)."""
    import z3
    ctx = context(st, order, term_le, reverse)
    tr = st.model.theory.op in TR_OPS
    gtr = st.model.theory.op in GTR_OPS
    prev_out = D = None
    for j, blk in enumerate(st.blocks):
        tag = f"block{j}"
        cut: list = []
        if prev_out is not None:
            D = z3.BitVec("D_", fp.fmt(blk.fc).storage)
            cut = [(prev_out.v, D)]
            ctx.fmt_of["D_"] = blk.fc
        if gtr:     # two group sums; n + 1 / n units: the other group and c also round down
            rs = [fused(ctx, f"{tag}.g{gi}", blk, fs_p, al_p, S_p, cut, 2, 1, 2)
                  for gi, (fs_p, al_p, S_p) in enumerate(blk.parts)]
            ctx.lemmas += tr_monotonic_tail(ctx, blk, tag, min(r.lo for r in rs),
                                            max(r.hi for r in rs), 0,
                                            [sum(1 << b for b in r.bounds) for r in rs], cut)
        else:
            r = fused(ctx, tag, blk, blk.fs, blk.aligned, blk.S, cut, *((1, 0, 1) if tr else ()))
            if tr:
                ctx.lemmas += tr_monotonic_tail(ctx, blk, tag, r.lo, r.hi,
                                                sum(1 << b for b in r.bounds), None, cut)
            else:
                ctx.lemmas += block_lemmas(ctx, tag, blk, r, cut, D, prev_out)
        prev_out = blk.out
    if st.acc is not None:
        ctx.lemmas += add_lemmas(ctx, prev_out)
    elif not st.out.v.eq(prev_out.v):
        raise NotDecomposable("the output is not the last block's output")
    return ctx.lemmas


# ============================================================================================
# The lemmas: FMA chains (mma.fma_chain, Phi_FMA) step by step, and integer MMA (mma.int_chain)
# ============================================================================================

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
    terms = mma.int_terms(x.a, x.b, fa, fb, ins.bop, W)
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
    Gb = bv(K, G, 32)
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
    ta = mma.int_terms([x.a[0]], [x.b[0]], fa, fb, ins.bop, W)[0]
    tb = mma.int_terms([y.a[0]], [y.b[0]], fa, fb, ins.bop, W)[0]
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
# The claim
# ============================================================================================

def int_addend(x: BV, y: BV, fa: str, fb: str, bop: str) -> BV:
    """The exact value of the integer product a_k * b_k (b1: the bit a_k XOR/AND b_k) as a
    signed vector wide enough for every input (the value mma.int_chain adds)."""
    if fp.fmt(fa).name == "b1":
        xa, xb = x.extract(0, 0), y.extract(0, 0)
        return ((xa ^ xb) if bop == "xor" else (xa & xb)).resize(3, False).bitcast(True)
    va, vb = fp.int_value(fa, x), fp.int_value(fb, y)
    w = va.w + vb.w
    return va.resize(w, True) * vb.resize(w, True)


def _violation(m: Model, o1: BV, o2: BV, reverse: bool = False):
    """Phi(y) < Phi(x) (reverse: Phi(x) < Phi(y)) as real numbers, NaN outputs excluded."""
    f = m.ins.d
    if fp.fmt(f).is_int:
        v1, v2 = fp.int_value(f, o1), fp.int_value(f, o2)
        return ((v1 < v2) if reverse else (v2 < v1)).v
    u1, u2 = fp.decode(f, o1), fp.decode(f, o2)
    lt = (real_order(o1, f) < real_order(o2, f)) if reverse else (real_order(o2, f) < real_order(o1, f))
    return (~u1.nan & ~u2.nan & lt).v


def monotonic_parts(m: Model):
    """The monotonicity query: two inputs x, y that differ in addend `sel` (a product a_k*b_k,
    or c at sel = K), whose exact value is larger in y. Floating point: every input finite,
    products compared as exact terms, c in real order, block scales equal and finite.
    Integers: addends are the exact products (b1: the bit) and c as signed s32; storage bits
    above an element's value bits are zero (the front ends reject others)."""
    import z3
    ins = m.ins
    integer = fp.fmt(ins.a).is_int
    K = Z3Backend()
    x = Inputs.for_model(K, m)
    y = Inputs.for_model(K, m, prefix="p")
    kdim = m.k
    sel = K.var("sel", max(2, (kdim + 1).bit_length()))
    cons = [(sel <= kdim).v]
    for inp in (x, y):
        for v, f in [(v, ins.a) for v in inp.a] + [(v, ins.b) for v in inp.b] + [(inp.c, ins.c)]:
            F = fp.fmt(f)
            if not integer:
                u = fp.decode(f, v)
                cons.append(z3.Not((u.nan | u.inf).v))
            elif F.storage > F.k:
                cons.append((v.extract(F.storage - 1, F.k) == 0).v)
    if integer:
        larger = lambda k: int_addend(x.a[k], x.b[k], ins.a, ins.b, ins.bop) < \
            int_addend(y.a[k], y.b[k], ins.a, ins.b, ins.bop)
        c_larger = fp.int_value(ins.c, x.c) < fp.int_value(ins.c, y.c)
    else:
        term = lambda inp, k: mma.product(fp.decode(ins.a, inp.a[k]), fp.decode(ins.b, inp.b[k]))
        larger = lambda k: ~term_le(term(y, k), term(x, k))
        c_larger = real_order(x.c, ins.c) < real_order(y.c, ins.c)
    for k in range(kdim):
        same = (x.a[k] == y.a[k]) & (x.b[k] == y.b[k])
        cons.append(z3.Or((sel == k).v, same.v))
        cons.append(z3.Implies((sel == k).v, larger(k).v))          # strictly larger
    cons.append(z3.Or((sel == kdim).v, (x.c == y.c).v))
    cons.append(z3.Implies((sel == kdim).v, c_larger.v))
    for sx, sy in zip((x.sa or []) + (x.sb or []), (y.sa or []) + (y.sb or [])):
        cons.append((sx == sy).v)                       # block scales: the same, finite
        cons.append(z3.Not(fp.decode(ins.scale, sx).nan.v))
    o1 = m.dot(K, *x.padded(m))
    o2 = m.dot(K, *y.padded(m))
    return K, x, y, cons, o1, o2, sel

def _statement(m: Model) -> str:
    ins = m.ins
    return (f"{m.label}: for all finite inputs (a, b, c), (a', b', c') that differ in one "
            f"addend (one product a_i*b_i, a_i and b_i both free, or c) whose exact value "
            f"increases, Phi(a', b', c') >= Phi(a, b, c) as real numbers (+0 = -0; NaN "
            f"outputs excluded) [monotonicity, Mikaitis 2024]"
            + (" (block scales: the same finite scales on both sides)" if ins.scale else "")
            + (" (integers: addends are the exact products, or b1 bits, and c; outputs are "
               "signed s32)" if fp.fmt(ins.a).is_int else ""))


def _pair_check(m: Model, backends):
    """pair(w1, w2, sel): the witness pair replayed on every back-end, checked to decrease."""
    ins = m.ins

    def pair(w1, w2, s):
        r1 = replay([m], w1, backends)[m.label]
        r2 = replay([m], w2, backends)[m.label]
        if not value_lt(r2, r1, ins.d):
            raise InternalError(f"monotonicity witness does not replay: {hex_bits(r1, ins.d)} -> "
                                f"{hex_bits(r2, ins.d)}")
        return w1, w2, r1, r2, s
    return pair


def _decomposed_attempt(m: Model, claim: str, solver, timeout, backends, save, persist,
                        t0) -> dict | None:
    """The proof by lemmas of a decomposable model (integer, FDPA and FMA chains), with its
    broken twin; None when the model is not decomposable or a lemma is not proved."""
    ins = m.ins
    integer = fp.fmt(ins.a).is_int and m.theory.op == "int_chain" and not ins.sparse
    fdpa = (m.theory.model == "fdpa" and not ins.sparse
            and ((m.theory.op in ("t_fdpa", "tr_fdpa", "gtr_fdpa") and not ins.scale)
                 or m.theory.op == "gst_fdpa"))
    if not (integer or fdpa or m.theory.model == "fma"):
        return None
    subject = [m]
    if integer:
        addend = lambda a, b: int_addend(a, b, ins.a, ins.b, ins.bop)
        make, comb = (lambda mm: monotonic_lemmas_int(mm, addend), COMBINATION_MONOTONIC_INT)
    elif fdpa:
        subject = [structure(m, gtr=True)]
        make, comb = (lambda s: monotonic_lemmas_fdpa(s, real_order, term_le),
                      {"tr_fdpa": COMBINATION_MONOTONIC_TR,
                       "gtr_fdpa": COMBINATION_MONOTONIC_GTR}.get(
                          m.theory.op, COMBINATION_MONOTONIC_FDPA))
    else:
        make, comb = (lambda mm: fma_monotonic_lemmas(mm, real_order, term_le),
                      COMBINATION_MONOTONIC_FMA)
    status, parts, why = decomposed(subject, make, "auto", solver, timeout,
                                    save if persist is None else persist, t0)
    if status != "proved":
        return None
    texts = {p["sha256"]: p.pop("text") for p in parts}
    res = outcome("proved", claim, [m], now() - t0,
                  ",".join(sorted({p["solver"] for p in parts})), method="decomposed",
                  parts=parts, combination=comb, _texts=texts)
    res["twin"] = (monotonic_twin(m, solver, timeout, backends) if integer or fdpa else
                   fma_twin(m, solver, timeout))
    res["query_sha256"] = None
    if save:
        res["saved"] = save_result("monotonic", res, [m], "")
    res["seconds"] = round(now() - t0, 3)
    return res


def _monolithic_attempt(m: Model, pair, solver, timeout, hint: int, t0):
    """The restricted query (products after the first `hint` zero, half the time), then the
    full one: (status, result, info, text, method)."""
    K, x, y, cons, o1, o2, sel = monotonic_parts(m)
    viol = _violation(m, o1, o2)

    def chk(model):
        return pair(x.witness(model), y.witness(model), model.get("sel", 0))
    st = None
    if 0 < hint < m.k:
        zero = [(v == 0).v for inp in (x, y) for v in inp.a[hint:] + inp.b[hint:]]
        st, r, info, _ = monolithic(lambda: cons + [viol] + zero, K, solver,
                                    None if timeout is None else timeout / 2, now(), chk)
        text = smt2_text(cons + [viol])
        method = "monolithic (restricted: products after the first "f"{hint} zero)"
    if st != "sat":
        st, r, info, text = monolithic(lambda: cons + [viol], K, solver, timeout, t0, chk)
        method = "monolithic"
    return st, r, info, text, method


def prove_monotonic(m: Model, solver="bitwuzla", timeout=600, save=False, emit=None,
                    backends=("int", "numpy", "compiled"), hint: int = 0,
                    scan: float = 0, persist: bool | None = None) -> dict:
    """Prove or refute monotonicity. scan > 0: first a concrete search for a witness
    (witness_search.monotonic_pair, at most `scan` seconds; what it finds is replayed like a
    solver's witness). hint > 0: then look for a witness among inputs whose products other
    than the first `hint` are zero (a restriction of the same query: a SAT answer is a witness
    of the full claim, replayed like any other; UNSAT or a time-out there proves nothing),
    within half the time; then the full query. Block-scaled instructions: both inputs have
    the same finite block scales."""
    t0 = now()
    ins = m.ins
    claim = _statement(m)
    pair = _pair_check(m, backends)
    st, method, text = None, "monolithic", None
    if scan and not fp.fmt(ins.a).is_int:  # before the symbolic query: seconds at K = 32
        found = monotonic_pair(m, budget=scan, transfer=stored_monotonic_pairs(m))
        if found is not None:
            st, info, method = "sat", pair(*found), "search"
            r = Result("sat", "search (numpy lanes)", "", now() - t0)
    if st is None:
        res = _decomposed_attempt(m, claim, solver, timeout, backends, save, persist, t0)
        if res is not None:
            return res
        st, r, info, text, method = _monolithic_attempt(m, pair, solver, timeout, hint, t0)
    if emit and text:
        Path(emit).write_text(text)
    if st == "unsat":
        res = outcome("proved", claim, [m], now() - t0, r.solver, method="monolithic",
                      query_text=text, solver_version=r.version)
        res["twin"] = monotonic_twin(m, solver, timeout, backends)
    elif st == "sat":
        w1, w2, r1, r2, s = info
        what = f"product k={s}" if s < m.k else "c"
        res = outcome("refuted", claim, [m], now() - t0, r.solver, witness=w1.to_json(),
                      method=method,
                      detail={"increased": what, "witness2": w2.to_json(),
                              "output": hex_bits(r1, ins.d), "output2": hex_bits(r2, ins.d)})
        res["_runs"] = [(m, w1, r1), (m, w2, r2)]
    else:
        res = outcome("unknown", claim, [m], now() - t0, r.solver, method="monolithic",
                      reason=r.reason)
    res["query_sha256"] = sha256(text) if text else None    # None: found by the search
    if save:
        res["saved"] = save_result("monotonic", res, [m], text or "")
    res["seconds"] = round(now() - t0, 3)
    return res


# ============================================================================================
# The verb's hooks (query.prove: CLAIM_MODULES)
# ============================================================================================

def from_args(args, kw: dict) -> dict:
    """`prove monotonic A` (prove.run; kw: the common options)."""
    return prove_monotonic(resolve(args.A), hint=args.hint, scan=args.scan, **kw)


def job(m: Model, names, o: dict) -> dict:
    """`prove monotonic --all`: the claim on m, the first instruction of a group
    (prove.prove_job; o: its options)."""
    return prove_monotonic(m, o["solver"], o["timeout"], False, None, o["backends"],
                           hint=o["hint"], scan=o["scan"], persist=o["persist"])


# ============================================================================================
# Broken twins
# ============================================================================================

def fma_twin(m: Model, solver, timeout) -> dict:
    """The broken twin of a decomposed FMA-chain proof: fma.mono.prod with its inequality
    turned (a larger product can give a larger output) must be refuted by the same solver."""
    t0 = now()
    lm = fma_monotonic_lemmas(m, real_order, term_le, reverse=True)[2]
    return twin_lemma(m, lm, "fma.mono.prod with the output inequality reversed", solver,
                      timeout, t0)


def stored_monotonic_pairs(m: Model) -> list:
    """The witness pairs of the stored monotonicity counterexamples whose operand formats are
    m's (shift-aligned raw bits; c taken when its format is m's, else only a zero c): the
    search tries them on m first (witness_search.monotonic_pair, transfer)."""
    from .. import cex
    ins = m.ins
    out = []
    for _, rec in cex.read_all():
        if rec.get("kind") != "monotonic" or not rec.get("runs"):
            continue
        fm = rec.get("formats") or {}
        if (fm.get("a"), fm.get("b"), fm.get("scale")) != (ins.a, ins.b, ins.scale or None):
            continue
        try:
            w1 = Witness.from_json(rec["runs"][0]["inputs"], fm["a"], fm["b"], fm["c"])
            w2 = Witness.from_json(rec["tool"]["detail"]["witness2"], fm["a"], fm["b"], fm["c"])
        except (KeyError, TypeError, ValueError):
            continue
        if fm.get("c") != ins.c:
            if w1.c or w2.c:
                continue
        out.append(((w1.a, w1.b, w1.c), (w2.a, w2.b, w2.c)))
    return out


def monotonic_twin(m, solver, timeout, backends):
    """Twin (a mutated claim): with the inequality on the outputs reversed, the same query
    must be SAT (an increased addend that strictly increases the output exists): the
    constraints are not vacuous."""
    t0 = now()
    K, x, y, cons, o1, o2, sel = monotonic_parts(m)
    rev = _violation(m, o1, o2, reverse=True)

    def chk(model):
        w1, w2 = x.witness(model), y.witness(model)
        r1 = replay([m], w1, backends)[m.label]
        r2 = replay([m], w2, backends)[m.label]
        if not value_lt(r1, r2, m.ins.d):
            raise InternalError("monotonic twin witness does not replay")
        return w1, w2, r1, r2
    st, r, info, text = monolithic(lambda: cons + [rev], K, solver, timeout, t0, chk)
    d = {"claim": f"{m.label}: the same query with the output inequality reversed (an increased "
                  f"addend never increases the output)", "status": st, "solver": r.solver,
         "seconds": round(now() - t0, 3), "query_sha256": sha256(text)}
    if st == "sat":
        d["verdict"] = "refuted"
        d["witness"] = info[0].to_json()
        d["witness2"] = info[1].to_json()
    return d

