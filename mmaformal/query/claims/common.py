"""Layer 5, query/claims/common: what the decomposed proofs of prove's claims share.

A theory's dot product is evaluated once on the z3 back-end with the trace on
(mmaformal.trace); its records give, per block of the chain, the terms of the cut:

    e_max (E)            the alignment exponent of the fused sum
    aligned terms (A_t)  each term aligned at E and truncated to F fraction bits
    S                    the fixed-point sum of the aligned terms
    nan, pinf, ninf (N P Q), zero_sign (Z)     the special-value flags
    the block's output   a function G(S, E, N, P, Q, Z) once those are cut

`structure` reads them into a `Structure` of `Block`s (`fma_chain_steps` checks an FMA chain's
trace). A *cut* replaces a subterm by a fresh variable (`sub`, z3.substitute). Every
factorization is checked syntactically: after the cut, the remaining term must contain only
the cut variables (so out = G[cut vars := cut terms] exactly); otherwise the decomposition is
refused (`NotDecomposable`) and the caller falls back to the monolithic query. Lemmas are
proved for all values of the cut variables (a stronger statement, so sound), with their free
variables renamed canonically (model.Lemma), so identical lemmas (the same term shape at every
k, the same output conversion in every theory with the same rho) have identical SMT-LIB text
and are solved once (`run_lemmas`, the one lemma runner of every decomposed proof, prove
exact's too: the cache is keyed by the canonical sha256 of the text, the name a stored lemma
has; `prove --save` reuses and keeps proved lemmas in proofs/cache/).

Also shared by the claims: `decomposed` (a claim's lemmas run within its time, or why not),
`monolithic` (one negated claim solved, its witness replayed), and the real order of the
claims (`real_order` of storage elements, `term_le` of exact terms).

May import: mmaformal.query.model, .cache, .frame, mmaformal.trace/mma/fp/bits, z3 (lazily).
Invariant: nothing here decides a claim: a lemma is "proved" only from a solver's UNSAT on its
canonical text, and a trace whose shape is not the expected one gives `why` or NotDecomposable,
never a lemma.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Sequence

from ... import fp, mma, trace
from ...bits import BV, Z3Backend, clz, ite
from ..cache import solve_cached
from ..frame import BadInput, InternalError
from ..model import Inputs, Lemma, Model, check, portable, smt2_text

__all__ = ["NotDecomposable", "Block", "Structure", "structure", "traced_dot", "run_lemmas",
           "decomposed", "monolithic", "twin_lemma", "fma_chain_steps", "real_order", "term_le", "sub", "bv",
           "now", "FDPA_TAIL_OPS", "TR_OPS", "GTR_OPS", "PASSED"]


def now() -> float:
    return time.perf_counter()


class NotDecomposable(Exception):
    pass


def sub(e, pairs):
    """e with the subterms of `pairs` ((term, replacement), ...) replaced (z3.substitute)."""
    import z3
    return z3.substitute(e, *pairs) if pairs else e


def bv(K, e, w, s=False) -> BV:
    """A z3 term as a BV of K."""
    return BV(K, w, s, e)


# ============================================================================================
# The structure of a traced dot product
# ============================================================================================

@dataclasses.dataclass
class Block:
    c_in: BV
    fc: str
    out: BV | None = None
    fs: trace.FusedSum | None = None
    aligned: list = dataclasses.field(default_factory=list)
    S: BV | None = None
    conv: trace.Convert | None = None
    sp: trace.Special | None = None
    tr: trace.TrTail | None = None      # TR-FDPA: the tail (E, Tp, sc) after the fused sum
    groups: list = dataclasses.field(default_factory=list)   # GST-FDPA: [ExactGroup, Group]
    parts: list = dataclasses.field(default_factory=list)    # GTR-FDPA: (fs, aligned, S) per group
    gtr: trace.GtrGroups | None = None  # GTR-FDPA: the two groups' sums merged at e_max
    renorm: trace.TrRenorm | None = None  # TR/GTR tail "mmasim": S renormalised and floored


@dataclasses.dataclass
class Structure:
    model: Model
    K: Z3Backend
    inp: Inputs
    out: BV
    blocks: list
    acc: trace.AccumulateAdd | None
    why: str = ""          # non-empty: the trace has a shape the decomposition does not handle


FDPA_TAIL_OPS = ("t_fdpa", "st_fdpa", "gst_fdpa")
TR_OPS = ("tr_fdpa",)          # a fused sum, then the TR tail (mma.tr_tail), then rho
GTR_OPS = ("gtr_fdpa",)        # two group sums merged (rounded down), then the TR tail

#: records of the composition around the blocks that the decomposition reads past
PASSED = (trace.ConvertOperands, trace.KOrder, trace.Chain)


def traced_dot(m: Model):
    """m's dot product on fresh symbolic inputs, with the trace on: (K, inputs, out, notes)."""
    K = Z3Backend()
    inp = Inputs.for_model(K, m)
    with trace.tracing() as notes:
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
    ops = FDPA_TAIL_OPS + TR_OPS + (GTR_OPS if gtr else ())
    if m.theory.model != "fdpa" or m.theory.op not in ops:
        st.why = f"op {m.theory.op} is not a T-FDPA-family fused sum"
        return st
    two = m.theory.op in GTR_OPS
    out_fmt = ("f32" if m.theory.op in TR_OPS + GTR_OPS else
               mma.rho_of(m.theory.param_dict["rho"])[2].name)
    st.why = _read_blocks(st, notes, two, out_fmt)
    if st.why:
        return st
    if not st.blocks or any(b.out is None or b.S is None or b.sp is None for b in st.blocks):
        st.why = "incomplete trace"
    elif two and any(len(b.parts) != 2 or b.gtr is None for b in st.blocks):
        st.why = "a GTR-FDPA block without its two group sums"
    return st


def _read_blocks(st: Structure, notes: list, two: bool, out_fmt: str) -> str:
    """Fill st.blocks (and st.acc) from the trace records; "" or why the shape is not handled."""
    m = st.model
    cur = None
    for v in notes:
        if isinstance(v, trace.BlockIn):
            first = not st.blocks
            fc = (m.ins.d if m.theory.accumulate == "add" else m.ins.c) if first else out_fmt
            cur = Block(v.c, fc)
            st.blocks.append(cur)
        elif isinstance(v, trace.FusedSum):
            if cur is None or (cur.fs is not None and not (two and len(cur.parts) == 1)):
                return "more than one fused sum in a block"
            cur.fs, cur.aligned, cur.S = v, [], None
        elif isinstance(v, trace.GtrGroups) and two:
            cur.gtr = v
        elif isinstance(v, trace.Aligned):
            cur.aligned.append(v.value)
        elif isinstance(v, trace.Sum):
            cur.S = v.S
            cur.parts.append((cur.fs, cur.aligned, v.S))
        elif isinstance(v, trace.Convert):
            cur.conv = v
        elif isinstance(v, trace.Special):
            cur.sp = v
        elif isinstance(v, trace.BlockOut):
            cur.out = v.d
        elif isinstance(v, trace.TrTail):
            cur.tr = v
        elif isinstance(v, trace.TrRenorm):
            cur.renorm = v
        elif isinstance(v, trace.ExactGroup):
            cur.groups.append([v, None])
        elif isinstance(v, trace.Group):
            if not cur.groups or cur.groups[-1][1] is not None:
                return "a group term without its exact sum"
            cur.groups[-1][1] = v
        elif isinstance(v, trace.AccumulateAdd):
            st.acc = v
        elif not isinstance(v, PASSED):
            return f"unexpected step {v.label!r} in the trace"
    return ""


def fma_chain_steps(m: Model) -> tuple[str, str, object]:
    """(format, mode, nan) of an FMA-chain model whose traced output is the chain d_(k+1) =
    fp.fma(a_k, b_k, d_k) from d_0 = c, checked syntactically (NotDecomposable otherwise)."""
    th = m.theory
    if th.model != "fma" or m.ins.sparse or m.ins.scale:
        raise NotDecomposable(f"model {th.model} is not an FMA chain")
    p = th.param_dict
    f, mode, nan = (th.convert or m.ins.a), p.get("mode", "RNE"), p.get("nan", "default")
    K, inp, out, notes = traced_dot(m)
    accs = [v.acc for v in notes if isinstance(v, trace.FmaStep)]
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


# ============================================================================================
# Running lemmas, or the monolithic query
# ============================================================================================

def run_lemmas(lemmas: Sequence[Lemma], solver: str, timeout: float | None,
               persist: bool = False, deadline: float | None = None) -> tuple[str, list[dict]]:
    """Solve every lemma, in the order given (cached by canonical sha256: the process's
    results, and with CACHE.root set the lemmas stored in proofs/cache; `persist` writes the
    proved ones there). Returns ("proved" | "failed" | "unknown", parts), parts: one dict per
    lemma solved (lemma, role, sha256, status, solver, solver_version, seconds, cached, query,
    text). Stops at the first lemma that is not proved: SAT "failed", else "unknown"."""
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


def decomposed(sts: Sequence, make_lemmas, method: str, solver, timeout, persist, t0):
    """The decomposed attempt of a claim: `make_lemmas(*sts)` (the traced structures of its
    models) run by `run_lemmas` within the claim's time (from t0): (status, parts, ""), or
    (None, [], why) when the models are not decomposable (a BadInput when method is
    "decomposed")."""
    try:
        lemmas = make_lemmas(*sts)
    except NotDecomposable as e:
        if method == "decomposed":
            raise BadInput(f"{' vs '.join(st.model.label for st in sts)}: not decomposable: "
                           f"{e}") from None
        return None, [], str(e)
    deadline = None if timeout is None else t0 + timeout
    status, parts = run_lemmas(lemmas, solver, timeout, persist=persist, deadline=deadline)
    return status, parts, ""


def monolithic(assertions_fn, K, solver, timeout, t0, replay_check, obligations="lazy"):
    """Solve a negated claim; SAT witnesses must pass replay_check(model) -> (ok, info)
    (a witness that overflows a checked operation triggers a re-solve with the
    obligations). Returns (status, result, info, text)."""
    use_obl = obligations == "always"
    while True:
        asserts = assertions_fn() + ([portable(o) for o in K.obligations] if use_obl else [])
        text = smt2_text(asserts)
        left = None if timeout is None else max(0.1, timeout - (now() - t0))
        r = check(text, solver, left)
        if r.status != "sat":
            return r.status, r, None, text
        try:
            info = replay_check(r.model)
        except InternalError as e:
            if not use_obl and "overflows" in str(e):
                use_obl = True
                continue
            raise
        return "sat", r, info, text


def twin_lemma(m: Model, lm: Lemma, what: str, solver, timeout, t0) -> dict:
    """The broken twin of a decomposed step-by-step proof (FMA chains): the one lemma `lm` that
    carries the claim, made false as `what` says, solved by the same solver; "refuted" when
    SAT."""
    r, h, _ = solve_cached(lm.text, solver, timeout, False)
    d = {"claim": f"{m.label}: {what}", "status": r.status, "solver": r.solver,
         "seconds": round(now() - t0, 3), "query_sha256": h}
    if r.status == "sat":
        d["verdict"] = "refuted"
    return d


# ============================================================================================
# The real order of the claims
# ============================================================================================

def _term_mag_le(t1: mma.Term, t2: mma.Term):
    """|t1| <= |t2| for two exact terms with the same fraction bits."""
    def norm(t):
        lz = clz(t.sig)
        ew = t.e.w + 3
        lead = t.e.resize(ew) + (t.sig.w - 1) - lz.resize(ew, True)
        return lead, t.sig.shl_wrap_var(lz)
    l1, n1 = norm(t1)
    l2, n2 = norm(t2)
    return t1.zero | (~t2.zero & ((l1 < l2) | ((l1 == l2) & (n1 <= n2))))


def term_le(t1: mma.Term, t2: mma.Term):
    """t1 <= t2 as real numbers, for two exact terms with the same fraction bits."""
    n1 = t1.sign & ~t1.zero
    n2 = t2.sign & ~t2.zero
    return (n1 & ~n2) | (~n1 & ~n2 & _term_mag_le(t1, t2)) | (n1 & n2 & _term_mag_le(t2, t1))


def real_order(x: BV, f: str) -> BV:
    """A signed integer whose order is the real order of the non-NaN values of format f."""
    F = fp.fmt(f)
    mag = x.extract(F.pad + F.k - 2, F.pad).resize(F.k + 1)
    s = x.bit(F.pad + F.k - 1) if F.signed else x.k.bconst(False)
    m = mag.resize(F.k + 1, True)
    return ite(s, -m, m)
