"""Layer 5, query/claims/symmetry: the claim `prove symmetry`, its broken twin and its lemmas.

Claim (SYMMETRY_STATEMENT): Phi(-A, B, -C) ~ -Phi(A, B, C) for every input (~: equal bits, or
both NaN, or both zero). T-FDPA-family chains are proved piece by piece (`symmetry_lemmas`),
FMA chains step by step (`fma_symmetry_lemmas`), compiler-emulated FPU programs and FTZ-AddMul
chains op by op (`fpu_symmetry_lemmas`, `ftz_symmetry_lemmas`), others and refutations
monolithically; the broken twin is the RD-twin (aligned terms rounded toward -inf), or for a
proof op by op its rounding lemma (fma.sym, add.sym) with that op rounded toward -inf.

Symmetry by induction over the chain of blocks u_1 = B_1(x_1, c), u_j = B_j(x_j, u_{j-1}) and
the final IEEE addition of c where the theory accumulates that way. Lemmas, with s = the
negation map (a_k -> -a_k, c -> -c, D -> -D for the cut accumulator D of a later block):

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

May import: claims.common (the structure, lemma runs), claims.core (statements, outcome,
concrete checks), mmaformal.query.model, .proofs, .solvers, .store, .witness_search,
mmaformal.mma/fp/bits/trace, z3 (lazily).
Invariant: "proved" only from UNSAT (every lemma, or the monolithic query); a refutation's
witness pair (x, -x) is replayed on every back-end before it is reported.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ... import fp, mma, trace
from ...bits import BV, Z3Backend
from ..model import (Inputs, Lemma, Model, Witness, approx_equal, free_vars, hex_bits, neg_bits,
                     replay, smt2_text)
from ..frame import InternalError
from ..proofs import save_result
from ..solvers import Result
from ..store import sha256
from ..witness_search import symmetry_pair
from .common import (TR_OPS, NotDecomposable, Structure, bv, decomposed, fma_chain_steps,
                     monolithic, now, structure, sub, traced_dot, twin_lemma)
from .core import (SYMMETRY_STATEMENT, SYMMETRY_STATEMENT_INT, approx_int, neg_int, neg_witness,
                   outcome)

__all__ = ["prove_symmetry", "job", "symmetry_lemmas", "fma_symmetry_lemmas", "fpu_symmetry_lemmas",
           "ftz_symmetry_lemmas", "symmetry_twin", "op_twin", "symmetry_query",
           "COMBINATION_SYMMETRY", "COMBINATION_SYMMETRY_FMA", "COMBINATION_SYMMETRY_FPU",
           "COMBINATION_SYMMETRY_FTZ"]

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

COMBINATION_SYMMETRY_FMA = (
    "the output is d_K with d_0 = c and d_(k+1) = fma(a_k, b_k, d_k) (checked syntactically: "
    "each traced accumulator is the same term as fp.fma of the step's inputs and the previous "
    "accumulator); fma.sym: fma(-a, b, -d) ~ -fma(a, b, d) for all a, b, d; congruence, d ~ d' "
    "=> fma(a, b, d) ~ fma(a, b, d'): equal bits give the same term, fma.cong.zero: fma(a, b, "
    "+0) ~ fma(a, b, -0), fma.cong.nan: a NaN d gives a NaN output. Induction: s(d_0) = -c = -d_0; s(d_(k+1)) = fma(-a_k, "
    "b_k, s(d_k)) ~ fma(-a_k, b_k, -d_k) (cong, s(d_k) ~ -d_k) ~ -d_(k+1) (sym); ~ (equal, both "
    "NaN, or both zero) is an equivalence relation that negation respects.")


def _checked_program(m: Model, rebuild, what: str):
    """(K, inputs) of m's dot product traced on fresh symbolic inputs, after the syntactic check
    that a proof op by op stands on: the natural k order, and a traced output that is the same
    term as rebuild(inputs, trace notes) (NotDecomposable naming `what` otherwise)."""
    K, inp, out, notes = traced_dot(m)
    if any(isinstance(n, trace.KOrder) for n in notes):
        raise NotDecomposable("a k order other than the natural one")
    if not out.v.eq(rebuild(inp, notes).v):
        raise NotDecomposable(f"the traced output is not {what}")
    return K, inp


def _sym(name: str, role: str, o1: BV, o2: BV, f) -> Lemma:
    """The lemma o1 ~ o2 for every value of their variables (its negation is asserted)."""
    import z3
    return Lemma(name, role, [z3.Not(approx_equal(o1, o2, f).v)])


def _cong(prefix: str, op, v: BV, fi, fo, role_zero: str, role_nan: str) -> list[Lemma]:
    """The congruence of ~ in one operand of op (v: a variable of format fi; op's result is
    of format fo): <prefix>.zero, op(+0) ~ op(-0); <prefix>.nan, a NaN v gives a NaN op(v)."""
    import z3
    z = v.k.const(0, v.w, False)
    return [_sym(f"{prefix}.zero", role_zero, op(z), op(neg_bits(z, fi)), fo),
            Lemma(f"{prefix}.nan", role_nan, [fp.decode(fi, v).nan.v,
                                              z3.Not(fp.decode(fo, op(v)).nan.v)])]


COMBINATION_SYMMETRY_FPU = (
    "the output is mma.fpu_dot of the exactly converted operands (checked syntactically: the "
    "traced output is the same term as fpu_dot rebuilt on the traced conversions, every a_k "
    "converted by the same term as a_0); conv.sym: the conversion of -a is the negation of "
    "the conversion of a; acc_0 = recast(c) (when C is of another format), each group's sum "
    "s_g an FMA chain started by mul(a, b) or fma(a, b, +0), acc_(g+1) = add(acc_g, s_g), the "
    "output recast(acc) (when D is of another format). recast.sym, mul.sym, fma.sym, add.sym: "
    "op(negated inputs) ~ -op(inputs); congruence of ~ in every operand that is not an input "
    "(fma.cong.zero/.nan, add.cong.l/.r.zero/.nan, recast.cong.zero/.nan: +0 and -0 give "
    "~-equal results, a NaN gives a NaN; equal bits give the same term). Induction over the "
    "program as for an FMA chain; fma(-a, b, +0) ~ fma(-a, b, -0) (fma.cong.zero) ~ "
    "-fma(a, b, +0) (fma.sym); ~ (equal, both NaN, or both zero) is an equivalence relation "
    "that negation respects.")


def fpu_symmetry_lemmas(m: Model, mode: str | None = None) -> list[Lemma]:
    """The lemmas of a compiler-emulated FPU program (mma.fpu_dot; COMBINATION_SYMMETRY_FPU).
    mode: another rounding for the fma of fma.sym (the broken twin: RD, refuted)."""
    import z3
    th, ins = m.theory, m.ins
    if th.model != "fpu" or ins.sparse or ins.scale:
        raise NotDecomposable(f"model {th.model} is not an FPU program")
    p = th.param_dict
    f, nan, first = th.convert or ins.a, p.get("nan", "default"), p.get("first", "fma0")
    conv: list = []

    def rebuild(inp, notes):
        cv = [n for n in notes if isinstance(n, trace.ConvertOperands)]
        conv[:] = [cv[0].a, cv[0].b] if cv else [inp.a, inp.b]
        return mma.fpu_dot(conv[0], conv[1], inp.c, f=f, fc=ins.c, out=ins.d, **p)
    K, inp = _checked_program(m, rebuild, "fpu_dot of the converted operands")
    ca = conv[0]
    for k in range(1, m.k):
        if not ca[k].v.eq(z3.substitute(ca[0].v, (inp.a[0].v, inp.a[k].v))):
            raise NotDecomposable(f"a_{k} is not converted as a_0")
    F = fp.fmt(f)
    V = lambda n, fm: K.var(n, fp.fmt(fm).storage, False)   # noqa: E731
    x, y, d = V("x", f), V("y", f), V("d", f)
    z, nz = K.const(0, F.storage, False), neg_bits(K.const(0, F.storage, False), f)
    q = lambda n: fp.decode(f, n).nan.v                       # noqa: E731
    fm_ = lambda u, v, w, md="RNE": fp.fma(f, u, v, w, md, nan)   # noqa: E731
    ad = lambda u, v: fp.add(f, u, v, "RNE", nan)              # noqa: E731
    a0 = inp.a[0]
    lms = [Lemma("conv.sym", "the conversion of -a is the negation of the conversion of a",
                 [z3.Not(z3.substitute(ca[0].v, (a0.v, neg_bits(a0, ins.a).v))
                         == neg_bits(ca[0], f).v)]),
           _sym("fma.sym", "fma(-a, b, -d) ~ -fma(a, b, d)",
                fm_(neg_bits(x, f), y, neg_bits(d, f), mode or "RNE"),
                neg_bits(fm_(x, y, d, mode or "RNE"), f), f),
           *_cong("fma.cong", lambda w: fm_(x, y, w), d, f, f, "fma(a, b, +0) ~ fma(a, b, -0)",
                  "a NaN accumulator gives a NaN output"),
           _sym("add.sym", "add(-u, -v) ~ -add(u, v)", ad(neg_bits(x, f), neg_bits(y, f)),
                neg_bits(ad(x, y), f), f),
           _sym("add.cong.l.zero", "add(+0, v) ~ add(-0, v)", ad(z, y), ad(nz, y), f),
           _sym("add.cong.r.zero", "add(u, +0) ~ add(u, -0)", ad(x, z), ad(x, nz), f),
           Lemma("add.cong.nan", "a NaN operand gives a NaN sum",
                 [z3.Or(q(x), q(y)), z3.Not(q(ad(x, y)))])]
    if first == "mul":
        mu = lambda u, v: fp.mul(f, u, v, "RNE", nan)           # noqa: E731
        lms.append(_sym("mul.sym", "mul(-a, b) ~ -mul(a, b)", mu(neg_bits(x, f), y),
                        neg_bits(mu(x, y), f), f))
    for tag, fs, fd in (("c", ins.c, f), ("d", f, ins.d)):
        if fp.fmt(fs) is fp.fmt(fd):
            continue
        FS, FD = fp.fmt(fs), fp.fmt(fd)
        u = V(f"r{tag}", fs)
        rc = lambda w: mma.recast(w, FS, FD)                     # noqa: E731
        lms += [_sym(f"recast.{tag}.sym", f"recast {fs} -> {fd} of -u ~ -recast of u",
                     rc(neg_bits(u, fs)), neg_bits(rc(u), fd), fd),
                *_cong(f"recast.{tag}.cong", rc, u, fs, fd, f"recast {fs} -> {fd} of +0 ~ of -0",
                       f"recast {fs} -> {fd} of a NaN is a NaN")]
    return lms


COMBINATION_SYMMETRY_FTZ = (
    "the output is mma.ftz_addmul (checked syntactically: the traced output is the same term "
    "as ftz_addmul rebuilt on the inputs): d_0 = cin(c) (flush, re-encode), groups of P "
    "products mul(a, b) = FTZ-Mul of the flushed operands, summed pairwise by FTZ-Add, "
    "d_(g+1) = add(d_g, s_g), the output out(d) (re-encode). c.sym, mul.sym, add.sym, out.sym: "
    "op(negated inputs) ~ -op(inputs); add.cong.l/.r.zero, add.cong.nan, out.cong.zero/.nan: "
    "congruence of ~ in every operand that is not an input. Induction over the program as for "
    "an FMA chain; ~ (equal, both NaN, or both zero) is an equivalence relation that negation "
    "respects.")


def ftz_symmetry_lemmas(m: Model, mode: str | None = None) -> list[Lemma]:
    """The lemmas of an FTZ-AddMul chain (mma.ftz_addmul; COMBINATION_SYMMETRY_FTZ). mode:
    another rounding for the FTZ-Add of add.sym (the broken twin: RD, refuted)."""
    import z3
    th, ins = m.theory, m.ins
    if th.model != "ftz_addmul" or ins.sparse or ins.scale or th.convert:
        raise NotDecomposable(f"model {th.model} is not an FTZ-AddMul chain")
    p = th.param_dict
    nan = p.get("nan", "default")
    K, inp = _checked_program(m, lambda i, _: mma.ftz_addmul(i.a, i.b, i.c, ins.a, ins.b, fc=ins.c, **p),
                              "ftz_addmul of the inputs")
    f = ins.c
    F = fp.fmt(f)
    x, y = K.var("x", F.storage, False), K.var("y", F.storage, False)
    a, b = K.var("a", fp.fmt(ins.a).storage, False), K.var("b", fp.fmt(ins.b).storage, False)
    z, nz = K.const(0, F.storage, False), neg_bits(K.const(0, F.storage, False), f)
    dec = lambda v: fp.decode(f, v)                                        # noqa: E731
    add = lambda u, v, md="RNE": mma.ftz_add(dec(u), dec(v), F.name, nan, md)  # noqa: E731
    mul = lambda u, v: mma.ftz_mul(mma.flush_in(fp.decode(ins.a, u)),      # noqa: E731
                                   mma.flush_in(fp.decode(ins.b, v)), F.name, nan)
    cin = lambda v: mma.recode(mma.flush_in(dec(v)))                       # noqa: E731
    fin = lambda v: mma.recode(dec(v))                                     # noqa: E731
    q = lambda v: dec(v).nan.v                                             # noqa: E731
    md = mode or "RNE"
    return [
        _sym("c.sym", "the flushed, re-encoded c of -c ~ -(that of c)", cin(neg_bits(x, f)),
             neg_bits(cin(x), f), f),
        _sym("mul.sym", "FTZ-Mul(-a, b) ~ -FTZ-Mul(a, b)", mul(neg_bits(a, ins.a), b),
             neg_bits(mul(a, b), f), f),
        _sym("add.sym", "FTZ-Add(-u, -v) ~ -FTZ-Add(u, v)",
             add(neg_bits(x, f), neg_bits(y, f), md), neg_bits(add(x, y, md), f), f),
        _sym("add.cong.l.zero", "FTZ-Add(+0, v) ~ FTZ-Add(-0, v)", add(z, y), add(nz, y), f),
        _sym("add.cong.r.zero", "FTZ-Add(u, +0) ~ FTZ-Add(u, -0)", add(x, z), add(x, nz), f),
        Lemma("add.cong.nan", "a NaN operand gives a NaN sum", [z3.Or(q(x), q(y)), z3.Not(q(add(x, y)))]),
        _sym("out.sym", "the re-encoded output of -u ~ -(that of u)", fin(neg_bits(x, f)),
             neg_bits(fin(x), f), f),
        *_cong("out.cong", fin, x, f, f, "the re-encoded output of +0 ~ of -0", "a NaN stays a NaN"),
    ]


# ============================================================================================
# The lemmas of T-FDPA-family chains
# ============================================================================================

def symmetry_lemmas(st: Structure) -> list[Lemma]:
    """The lemmas of the symmetry claim for a decomposable structure (NotDecomposable when a
    factorization check fails)."""
    if st.why:
        raise NotDecomposable(st.why)
    m, inp = st.model, st.inp
    if m.theory.op in TR_OPS:
        raise NotDecomposable(f"op {m.theory.op} is not a T-FDPA-family fused sum")
    ins = m.ins
    # the negation map on the inputs (b and the scales are not negated)
    sigma = [(x.v, neg_bits(x, ins.a).v) for x in inp.a]
    sigma.append((inp.c.v, neg_bits(inp.c, ins.c).v))
    lemmas: list[Lemma] = []
    prev_out = None
    input_names = set(inp.names())
    for j, blk in enumerate(st.blocks):
        lemmas += _block_lemmas(st, f"block{j}", blk, prev_out, sigma, input_names)
        prev_out = blk.out
    if st.acc is not None:
        lemmas += _add_lemmas(st, prev_out)
    elif not st.out.v.eq(prev_out.v):
        raise NotDecomposable("the output is not the last block's output")
    return lemmas


def _block_lemmas(st: Structure, tag: str, blk, prev_out, sigma, input_names) -> list[Lemma]:
    """sym.* of one block, and cong.* when it reads the previous block's output (cut as D_)."""
    import z3
    K = st.K
    fcj = blk.fc
    wD = fp.fmt(fcj).storage
    cut_D = []
    D = None
    if prev_out is not None:
        D = z3.BitVec("D_", wD)
        cut_D = [(prev_out.v, D)]
    E = sub(blk.fs.e_max.v, cut_D)
    al = [sub(x.v, cut_D) for x in blk.aligned]
    S = sub(blk.S.v, cut_D)
    N, P, Q = (sub(x.v, cut_D) for x in (blk.sp.nan, blk.sp.pinf, blk.sp.ninf))
    Z = sub(blk.conv.zero_sign.v, cut_D)
    out = sub(blk.out.v, cut_D)
    if prev_out is not None:
        left = free_vars(out) - {"D_"}
        if not left <= input_names:
            raise NotDecomposable(f"{tag}: the accumulator cut left {sorted(left - input_names)}")
    sig = list(sigma) + ([(D, neg_bits(bv(K, D, wD), fcj).v)] if D is not None else [])
    s = lambda e: sub(e, sig)
    V = z3.BitVec("E_", E.size())
    sE = s(E)
    lemmas = [Lemma(f"{tag}.sym.E", "the alignment exponent is unchanged by negation",
                    [z3.Not(sE == E)])]
    bounds = _term_lemmas(tag, blk, al, s, E, sE, V, lemmas)
    lemmas += _sum_lemmas(tag, blk, al, S, bounds, s, N, P, Q)
    G, g1, fd = _out_lemma(st, tag, blk, out, S, E, N, P, Q, Z, lemmas)
    if D is not None:
        lemmas += _cong_lemmas(tag, K, D, wD, fcj, E, V, al, N, P, Q, G, g1, fd)
    return lemmas


def _term_lemmas(tag, blk, al, s, E, sE, V, lemmas: list) -> list:
    """sym.term<t> (appended to `lemmas`); returns each term's bound mw (None: no bound)."""
    import z3
    w = blk.S.w
    F = blk.fs.F
    bounds = []
    for t, (a_t, term) in enumerate(zip(al, blk.fs.terms)):
        ls, rs = max(0, F - term.fb), max(0, term.fb - F)
        mw = term.sig.w + ls - rs          # |aligned| <= (sig << ls) >> rs < 2^mw
        lhs = sub(s(a_t), [(sE, V)])
        rhs = sub(a_t, [(E, V)])
        claim = lhs == -rhs
        if mw < w - 1:
            claim = z3.And(claim, rhs < (1 << mw), rhs > -(1 << mw))
            bounds.append(mw)
        else:
            bounds.append(None)
        lemmas.append(Lemma(f"{tag}.sym.term{t}", "an aligned term negates (any E) and is "
                            "bounded", [z3.Not(claim)]))
    return bounds


def _sum_lemmas(tag, blk, al, S, bounds, s, N, P, Q) -> list[Lemma]:
    """sym.sum (after checking that S is a function of the aligned terms) and sym.flags."""
    import z3
    w = blk.S.w
    INT_MIN = 1 << (w - 1)
    A = [z3.BitVec(f"A{t}_", w) for t in range(len(al))]
    S_sub = sub(S, list(zip(al, A)))
    if not free_vars(S_sub) <= {f"A{t}_" for t in range(len(al))}:
        raise NotDecomposable(f"{tag}: S is not a function of the aligned terms")
    hyp = [z3.And(x < (1 << b), x > -(1 << b)) for x, b in zip(A, bounds) if b is not None]
    S_neg = sub(S_sub, [(x, -x) for x in A])
    return [Lemma(f"{tag}.sym.sum", "the sum of negated terms is the negated sum, and "
                  "never INT_MIN", [z3.And(*hyp) if hyp else z3.BoolVal(True),
                                    z3.Not(z3.And(S_neg == -S_sub, S_sub != INT_MIN))]),
            Lemma(f"{tag}.sym.flags", "NaN is kept, +Inf and -Inf swap, +Inf and -Inf "
                  "together are NaN",
                  [z3.Not(z3.And(s(N) == N, s(P) == Q, s(Q) == P,
                                 z3.Implies(z3.And(P, Q), N)))])]


def _out_lemma(st, tag, blk, out, S, E, N, P, Q, Z, lemmas: list):
    """sym.out (appended to `lemmas`): the output G(S, E, N, P, Q, Z) is odd up to ~.
    Returns (G, G as a BV, the output format)."""
    import z3
    K = st.K
    w = blk.S.w
    INT_MIN = 1 << (w - 1)
    Sv, Ev = z3.BitVec("S_", w), z3.BitVec("E_", E.size())
    Nv, Pv, Qv, Zv, Zv2 = (z3.Bool(n) for n in ("N_", "P_", "Q_", "Z_", "Z2_"))
    G = sub(out, [(S, Sv), (E, Ev), (N, Nv), (P, Pv), (Q, Qv), (Z, Zv)])
    left = free_vars(G) - {"S_", "E_", "N_", "P_", "Q_", "Z_"}
    if left:
        raise NotDecomposable(f"{tag}: the output is not a function of (S, E, N, P, Q, Z): "
                              f"{sorted(left)[:4]} remain")
    fd = mma.rho_of(st.model.theory.param_dict["rho"])[2]
    wd = fd.storage
    G2 = sub(G, [(Sv, -Sv), (Pv, Qv), (Qv, Pv), (Zv, Zv2)])
    g1, g2 = bv(K, G, wd), bv(K, G2, wd)
    ok = approx_equal(g2, neg_bits(g1, fd), fd).v
    lemmas.append(Lemma(f"{tag}.sym.out", "the output conversion and special values are odd "
                        "up to ~", [Sv != INT_MIN, z3.Implies(z3.And(Pv, Qv), Nv), z3.Not(ok)]))
    return G, g1, fd


def _cong_lemmas(tag, K, D, wD, fcj, E, V, al, N, P, Q, G, g1, fd) -> list[Lemma]:
    """cong.*: a block after the first is congruent in its accumulator under ~."""
    import z3
    D2 = z3.BitVec("D2_", wD)
    dD = fp.decode(fcj, bv(K, D, wD))
    h = approx_equal(bv(K, D, wD), bv(K, D2, wD), fcj).v
    hn = z3.And(h, z3.Not(dD.nan.v))        # ~-equal and not NaN: equal or both zero
    tau = lambda e: sub(e, [(D, D2)])
    tE = tau(E)
    lemmas = [Lemma(f"{tag}.cong.E", "E agrees on equal-or-zero accumulators",
                    [hn, z3.Not(tE == E)])]
    for t, a_t in enumerate(al):
        rhs = sub(a_t, [(E, V)])
        if "D_" not in free_vars(rhs):
            continue
        lemmas.append(Lemma(f"{tag}.cong.term{t}", "the aligned accumulator agrees on "
                            "equal-or-zero accumulators (any E)",
                            [hn, z3.Not(sub(tau(a_t), [(tE, V)]) == rhs)]))
    lemmas.append(Lemma(f"{tag}.cong.flags", "the flags agree on ~-equal accumulators, and "
                        "a NaN accumulator sets the NaN flag",
                        [h, z3.Not(z3.And(tau(N) == N, tau(P) == P, tau(Q) == Q,
                                          z3.Implies(dD.nan.v, N)))]))
    Nv, Zv, Zv2 = z3.Bool("N_"), z3.Bool("Z_"), z3.Bool("Z2_")
    lemmas.append(Lemma(f"{tag}.cong.nan", "the NaN flag gives a NaN output",
                        [Nv, z3.Not(fp.decode(fd, g1).nan.v)]))
    gz = bv(K, sub(G, [(Zv, Zv2)]), fd.storage)
    lemmas.append(Lemma(f"{tag}.cong.out", "the sign of a zero sum only decides the sign "
                        "of a zero output", [z3.Not(approx_equal(gz, g1, fd).v)]))
    return lemmas


def _add_lemmas(st: Structure, prev_out) -> list[Lemma]:
    """add.sym and add.cong.*: the final IEEE addition of c is odd and congruent up to ~."""
    import z3
    K, inp, ins = st.K, st.inp, st.model.ins
    fd = fp.fmt(ins.d)
    wd = fd.storage
    U = z3.BitVec("U_", wd)
    Gadd = sub(st.out.v, [(prev_out.v, U)])
    left = free_vars(Gadd) - {"U_"}
    if not left <= {str(inp.c.v)}:
        raise NotDecomposable(f"final addition is not a function of (u, c): {sorted(left)[:4]}")
    cc = inp.c
    gs = bv(K, sub(Gadd, [(U, neg_bits(bv(K, U, wd), fd).v), (cc.v, neg_bits(cc, ins.c).v)]), wd)
    g = bv(K, Gadd, wd)
    lemmas = [Lemma("add.sym", "the final addition of c is odd up to ~",
                    [z3.Not(approx_equal(gs, neg_bits(g, fd), fd).v)])]
    # congruence by the classes of ~: equal (nothing to prove), both NaN, both zero
    uU = fp.decode(fd, bv(K, U, wd))
    lemmas.append(Lemma("add.cong.nan", "a NaN chain output gives a NaN result",
                        [uU.nan.v, z3.Not(fp.decode(fd, g).nan.v)]))
    g0 = bv(K, sub(Gadd, [(U, z3.BitVecVal(0, wd))]), wd)
    g1 = bv(K, sub(Gadd, [(U, z3.BitVecVal(fd.sign_bit << fd.pad, wd))]), wd)
    lemmas.append(Lemma("add.cong.zero", "+0 and -0 chain outputs give ~-equal results",
                        [z3.Not(approx_equal(g0, g1, fd).v)]))
    return lemmas


# ============================================================================================
# FMA chains (mma.fma_chain, Phi_FMA): step by step
# ============================================================================================

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
        _sym("fma.sym", "fma(-a, b, -d) ~ -fma(a, b, d)",
             fm(neg_bits(a, f), b, neg_bits(d, f)), neg_bits(fm(a, b, d), f), f),
        # d ~ d': equal bits (the same fma), both NaN (fma.cong.nan), or both zero
        *_cong("fma.cong", lambda w: fm(a, b, w), d, f, f, "fma(a, b, +0) ~ fma(a, b, -0)",
               "a NaN accumulator gives a NaN output"),
    ]


#: Models proved op by op: (lemma maker, the lemma whose RD form is the broken twin, combination)
_BY_OP = {"fma": (fma_symmetry_lemmas, "fma.sym", COMBINATION_SYMMETRY_FMA),
          "fpu": (fpu_symmetry_lemmas, "fma.sym", COMBINATION_SYMMETRY_FPU),
          "ftz_addmul": (ftz_symmetry_lemmas, "add.sym", COMBINATION_SYMMETRY_FTZ)}


# ============================================================================================
# The claim
# ============================================================================================

def symmetry_query(m: Model):
    """(K, inputs, out, negated-input out, the negated claim) on a fresh z3 back-end."""
    import z3
    K = Z3Backend()
    inp = Inputs.for_model(K, m)
    out = m.dot(K, *inp.padded(m))
    sigma = [(x.v, neg_bits(x, m.ins.a).v) for x in inp.a] + [(inp.c.v, neg_bits(inp.c, m.ins.c).v)]
    sout = BV(K, out.w, False, z3.substitute(out.v, *sigma))
    fd = m.ins.d
    bad = z3.Not(approx_equal(sout, neg_bits(out, fd), fd).v)
    valid = m.sparse_valid(K, inp.padded(m)[0])     # sparse: the dense A keeps 2:4 (so does -A)
    if valid:
        bad = z3.And(*valid, bad)
    return K, inp, out, sout, bad


def pair_check(m: Model, w: Witness, wn: Witness, backends):
    """Replay an asymmetry witness (x, -x) on every back-end: (w, wn, Phi(x), Phi(-x))."""
    o1 = replay([m], w, backends)[m.label]
    o2 = replay([m], wn, backends)[m.label]
    fd = m.ins.d
    if approx_int(o2, neg_int(o1, fd), fd):
        raise InternalError(f"the symmetry witness does not replay: Phi(x) = "
                            f"{hex_bits(o1, fd)}, Phi(-x) = {hex_bits(o2, fd)} on {w.to_json()}")
    return w, wn, o1, o2


def _replay(m: Model, inp: Inputs, backends):
    def chk(model):
        w = inp.witness(model)
        return pair_check(m, w, neg_witness(w), backends)
    return chk


def _decomposed_attempt(m: Model, claim: str, method, solver, timeout, persist, emit, t0):
    """(result or None, why): the lemmas of a decomposable model, run within the claim's time."""
    by_op = _BY_OP.get(m.theory.model)
    if by_op is not None:
        status, parts, why = decomposed([m], by_op[0], method, solver, timeout, persist, t0)
    else:
        status, parts, why = decomposed([structure(m)], symmetry_lemmas, method, solver,
                                        timeout, persist, t0)
    if status is None:
        return None, why
    if emit:
        for i, p in enumerate(parts):
            Path(f"{emit}.{i:02d}.{p['lemma']}.smt2").write_text(p["text"])
    texts = {p["sha256"]: p.pop("text") for p in parts}
    solver_used = ",".join(sorted({p["solver"] for p in parts}))
    if status == "proved":
        return outcome("proved", claim, [m], now() - t0, solver_used, method="decomposed",
                       parts=parts, _texts=texts,
                       combination=by_op[2] if by_op else COMBINATION_SYMMETRY), ""
    if status == "unknown" and method == "decomposed":
        return outcome("unknown", claim, [m], now() - t0, solver_used, method="decomposed",
                       parts=parts, reason=f"lemma {parts[-1]['lemma']} undecided"), ""
    return None, (f"lemma {parts[-1]['lemma']} {'failed' if status == 'failed' else 'undecided'}"
                  f" (cuts over-approximate); monolithic query")


def _monolithic_attempt(m: Model, claim: str, why: str, K, inp, bad, mono_text, solver,
                        timeout, backends, t0) -> dict:
    """A random search for a witness pair, then the monolithic query."""
    found = symmetry_pair(m, budget=5.0)   # random raw bits on numpy lanes first
    if found is not None:
        st_, r, info, text = ("sat", Result("sat", "search (numpy lanes)", "", now() - t0),
                              pair_check(m, *found, backends), mono_text)
        why = (why + "; " if why else "") + "witness from a random search, replayed"
    else:
        st_, r, info, text = monolithic(lambda: [bad], K, solver, timeout, t0,
                                        _replay(m, inp, backends))
    if st_ == "unsat":
        return outcome("proved", claim, [m], now() - t0, r.solver, method="monolithic",
                       query_text=text, solver_version=r.version, reason=why)
    if st_ == "sat":
        w, wn, o1, o2 = info
        fd = m.ins.d
        res = outcome("refuted", claim, [m], now() - t0, r.solver, witness=w.to_json(),
                      method="search" if found is not None else "monolithic", reason=why,
                      detail={"negated_input": wn.to_json(), "output": hex_bits(o1, fd),
                              "output_of_negated_input": hex_bits(o2, fd),
                              "negated_output": hex_bits(neg_int(o1, fd), fd)})
        res["_runs"] = [(m, w, o1), (m, wn, o2)]
        return res
    return outcome("unknown", claim, [m], now() - t0, r.solver, method="monolithic",
                   reason=(why + "; " if why else "") + (r.reason or "no answer"))


def prove_symmetry(m: Model, solver: str = "bitwuzla", timeout: float | None = 600,
                   method: str = "auto", save: bool = False, emit: str | None = None,
                   backends=("int", "numpy", "compiled"), twin: bool = True,
                   group: Sequence[str] = (), persist: bool | None = None) -> dict:
    """Prove or refute symmetry of one model (see SYMMETRY_STATEMENT)."""
    persist = save if persist is None else persist
    t0 = now()
    claim = f"{m.label}: {SYMMETRY_STATEMENT_INT if m.ins.integer else SYMMETRY_STATEMENT}"
    K, inp, out, sout, bad = symmetry_query(m)
    mono_text = smt2_text([bad])
    if emit:
        Path(emit).write_text(mono_text)
    res = None
    why = ""
    if method in ("auto", "decomposed"):
        res, why = _decomposed_attempt(m, claim, method, solver, timeout, persist, emit, t0)
    if res is None:
        res = _monolithic_attempt(m, claim, why, K, inp, bad, mono_text, solver, timeout,
                                  backends, t0)
    res["query_sha256"] = sha256(mono_text)
    res["seconds"] = round(now() - t0, 3)          # the proof (or refutation) alone
    if res["status"] == "proved" and twin:
        res["twin"] = (op_twin(m, solver, timeout) if m.theory.model in _BY_OP and
                       res["method"] == "decomposed" else
                       symmetry_twin(m, solver, timeout, backends))
    res["group"] = list(group) or [m.ins.name]
    res["total_seconds"] = round(now() - t0, 3)   # with the broken twin
    if save:
        res["saved"] = save_result("symmetry", res, [m], mono_text)
    return res


# ============================================================================================
# The verb's hooks (query.prove: CLAIM_MODULES)
# ============================================================================================

def job(m: Model, names: Sequence[str], o: dict) -> dict:
    """`prove symmetry --all`: the claim on m, the first instruction of the group `names`
    (prove.prove_job; o: its options)."""
    return prove_symmetry(m, o["solver"], o["timeout"], o["method"], False, None, o["backends"],
                          o["twin"], names, persist=o["persist"])


# ============================================================================================
# Broken twins
# ============================================================================================

def op_twin(m: Model, solver, timeout) -> dict:
    """The broken twin of a proof op by op (an FMA chain, an FPU program, an FTZ-AddMul
    chain): its rounding lemma (fma.sym, or add.sym for FTZ-Add) for the op rounded toward
    -inf (RD is not odd) must be refuted by the same solver."""
    t0 = now()
    make, name, _ = _BY_OP[m.theory.model]
    lm = next(x for x in make(m, mode="RD") if x.name == name)
    return twin_lemma(m, lm, f"{name} with the {name.split('.')[0]} rounded toward -inf (RD)",
                      solver, timeout, t0)


def symmetry_twin(m: Model, solver, timeout, backends) -> dict:
    """The RD-twin (aligned terms rounded toward -inf): the same claim must be refuted."""
    tw = Model(m.label + "[align=RD]", m.theory, m.base, m.changes, True, m.n)
    t0 = now()
    K, inp, out, sout, bad = symmetry_query(tw)
    found = symmetry_pair(tw, budget=5.0)      # random raw bits on numpy lanes first
    if found is not None:
        st, r, info, text = ("sat", Result("sat", "search (numpy lanes)", "", now() - t0),
                             pair_check(tw, *found, backends), smt2_text([bad]))
    else:
        st, r, info, text = monolithic(lambda: [bad], K, solver, timeout, t0,
                                       _replay(tw, inp, backends))
    d = {"claim": f"{tw.label}: the same claim on the RD-twin (aligned terms rounded toward "
                  f"-inf instead of toward zero)", "status": st, "solver": r.solver,
         "seconds": round(now() - t0, 3), "query_sha256": sha256(text)}
    if st == "sat":
        w, wn, o1, o2 = info
        d["verdict"] = "refuted"
        d["witness"] = w.to_json()
        d["outputs"] = {"x": hex_bits(o1, m.ins.d), "-x": hex_bits(o2, m.ins.d)}
    return d
