"""Layer 5, query/claims/equivalence: the claim `prove equiv`, its broken twins and its lemmas.

Claim: A and B give bitwise-identical outputs for every input (satisfying --where). Two FDPA
chains that differ only in the zero-sign / overflow rules of their output conversions are
proved piece by piece first (`equivalence_lemmas`, COMBINATION_EQUIV): each block is cut at its
accumulator D and proved to give the same bits in both models for every D satisfying a
hypothesis P_j (not -0; Inf, NaN or bounded) that the previous block's lemma establishes.
Others, and refutations, go to the monolithic query of query.search (a refutation's witness is
minimized unless `raw`: query.minimize). Broken twins: the block lemmas without their
hypotheses, else against B with F - 1 (decomposed); a mutation of B that the same query
distinguishes (monolithic, search.equivalence_twin).

May import: claims.common, claims.core, mmaformal.query.model, .search, .minimize, .proofs,
.store, .frame, mmaformal.mma/fp/bits, z3 (lazily).
Invariant: "proved" only from UNSAT (every lemma, or the monolithic query); a refutation's
witness is replayed on every back-end before it is reported.
"""
from __future__ import annotations

from typing import Sequence

from ... import fp, mma
from ...bits import BV
from .. import minimize as _min
from ..frame import BadInput
from ..model import Lemma, Model, free_vars, hex_bits, mutate, resolve_pair
from ..proofs import save_result
from ..search import build, constraints_satisfiable, equivalence_twin, search
from ..store import sha256
from .common import NotDecomposable, Structure, bv, decomposed, now, run_lemmas, structure, sub
from .core import outcome

__all__ = ["prove_equiv", "from_args", "equiv_decomposed", "equivalence_lemmas", "conversion_diff",
           "CONVERSION_PARAMS", "COMBINATION_EQUIV"]

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


# ============================================================================================
# The lemmas: chains that differ only in the zero-sign and overflow rules
# ============================================================================================

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


def _precondition(j: int, D: BV, f: fp.Format, n: int, diff, hypotheses: bool, bounds: bool):
    """P_j of an accumulator D of format f (j = 1..n; P_(n+1) is true)."""
    import z3
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
    for st in (stA, stB):
        if st.why:
            raise NotDecomposable(st.why)
    A, B = stA.model, stB.model
    diff = conversion_diff(A, B) if diff is None else list(diff)
    if len(stA.blocks) != len(stB.blocks) or (stA.acc is None) != (stB.acc is None):
        raise NotDecomposable("the chains have different shapes")
    if stA.inp.names() != stB.inp.names():
        raise NotDecomposable("the traces read different inputs")
    n = len(stA.blocks)
    pre = lambda j, D, f: _precondition(j, D, f, n, diff, hypotheses, bounds)
    lemmas: list[Lemma] = []
    prevA = prevB = None
    for j, (ba, bb) in enumerate(zip(stA.blocks, stB.blocks), start=1):
        lemmas += _block_lemma(stA, j, ba, bb, prevA, prevB, pre, hypotheses)
        prevA, prevB = ba.out, bb.out
    if stA.acc is not None and hypotheses:
        lemmas.append(_add_lemma(stA, stB, prevA, prevB))
    elif stA.acc is None:
        if not (stA.out.v.eq(prevA.v) and stB.out.v.eq(prevB.v)):
            raise NotDecomposable("the output is not the last block's output")
    return lemmas


def _block_lemma(stA: Structure, j: int, ba, bb, prevA, prevB, pre, hypotheses) -> list[Lemma]:
    """pre.1 (block 1, a constant accumulator) and eqv.block<j>."""
    import z3
    K, n = stA.K, len(stA.blocks)
    fd = mma.rho_of(stA.model.theory.param_dict["rho"])[2]
    tag = f"block{j}"
    f = fp.fmt(ba.fc)
    lemmas = []
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
        outA, outB = ba.out.v, bb.out.v
    else:
        D = z3.BitVec("D_", f.storage)
        outA = sub(ba.out.v, [(prevA.v, D)])
        outB = sub(bb.out.v, [(prevB.v, D)])
        for o, prev in ((outA, prevA), (outB, prevB)):
            if (free_vars(o) - {"D_"}) & free_vars(prev.v):
                raise NotDecomposable(f"{tag}: the accumulator cut left inputs of earlier blocks")
        hyp = pre(j, bv(K, D, f.storage), f)
    if not (f.name == fd.name or j == 1):
        raise NotDecomposable(f"{tag}: accumulator format {f.name} is not the output's {fd.name}")
    post = pre(j + 1, bv(K, outA, fd.storage), fd) if j < n else z3.BoolVal(True)
    lemmas.append(Lemma(f"eqv.{tag}", f"block {j} gives the same bits in both models "
                        f"(accumulator with P_{j}), satisfying P_{j + 1}",
                        [hyp, z3.Not(z3.And(outA == outB, post))]))
    return lemmas


def _add_lemma(stA: Structure, stB: Structure, prevA, prevB) -> Lemma:
    """eqv.add: the final IEEE addition of c, cut at the chain output, is one function."""
    import z3
    wd = fp.fmt(stA.model.ins.d).storage
    U = z3.BitVec("U_", wd)
    gA = sub(stA.out.v, [(prevA.v, U)])
    gB = sub(stB.out.v, [(prevB.v, U)])
    cname = str(stA.inp.c.v)
    for g in (gA, gB):
        if not free_vars(g) - {"U_"} <= {cname}:
            raise NotDecomposable("the final addition is not a function of (u, c)")
    return Lemma("eqv.add", "the final addition of c is the same function in both",
                 [z3.Not(gA == gB)])


# ============================================================================================
# The claim
# ============================================================================================

def equiv_decomposed(A: Model, B: Model, solver="bitwuzla", timeout=600, method="auto",
                     persist=False, claim: str | None = None, t0: float | None = None) -> dict | None:
    """The decomposed proof of "A and B give bitwise-identical outputs" for two FDPA chains
    that differ only in conversion parameters (equivalence_lemmas), with its broken twin
    (`_equiv_twin`). None when the pair is not decomposable (method "auto"; a BadInput
    for "decomposed"); "unknown" (with the lemma that failed) when the lemmas are not all
    proved, so the caller may fall back to the monolithic query."""
    t0 = now() if t0 is None else t0
    claim = claim or f"for every input: {A.label} and {B.label} give bitwise-identical outputs"
    try:                                  # cheap: before tracing the two models
        diff = conversion_diff(A, B)
    except NotDecomposable as e:
        if method == "decomposed":
            raise BadInput(f"{A.label} vs {B.label}: not decomposable: {e}") from None
        return None
    sts = [structure(A), structure(B)]
    # without the magnitude bound first (no block overflows whatever its accumulator), then
    # with it (the accumulators the chain can produce)
    for bounds in ((False, True) if "overflow" in diff else (True,)):
        status, parts, why = decomposed(
            sts, lambda *st: equivalence_lemmas(*st, bounds=bounds), method, solver,
            timeout, persist, t0)
        if status in (None, "proved"):
            break
    if status is None:
        return None
    texts = {p["sha256"]: p.pop("text") for p in parts}
    used = ",".join(sorted({p["solver"] for p in parts}))
    if status != "proved":
        return outcome("unknown", claim, [A, B], now() - t0, used, method="decomposed",
                       parts=parts, reason=f"lemma {parts[-1]['lemma']} "
                       f"{'failed (the hypotheses over-approximate)' if status == 'failed' else 'undecided'}")
    res = outcome("proved", claim, [A, B], now() - t0, used, method="decomposed", parts=parts,
                  combination=COMBINATION_EQUIV, _texts=texts)
    res["twin"] = _equiv_twin(*sts, diff, solver, timeout)
    return res


def _equiv_twin(stA, stB, diff, solver, timeout) -> dict:
    """The broken twin of a decomposed equivalence: the block lemmas without their accumulator
    hypotheses (refuted when the hypotheses carry the proof); if those all hold (the
    conversions agree on every accumulator), the same lemmas between A and B with F - 1 (a
    pair that differs in the fused sum), which must be refuted."""
    t0 = now()
    A, B = stA.model, stB.model
    tries = [("the block lemmas without their accumulator hypotheses (P_j := true)",
              lambda: equivalence_lemmas(stA, stB, hypotheses=False))]
    F = B.theory.param_dict.get("F")
    if isinstance(F, int):
        Bt = mutate(B, {"F": F - 1}, label=f"{B.label}[F={F - 1}]")
        tries.append((f"the same lemmas between {A.label} and {Bt.label}",
                      lambda: equivalence_lemmas(stA, structure(Bt), diff=diff)))
    out = {"claim": "", "status": "unknown", "lemmas": []}
    for claim, make in tries:
        status, parts = run_lemmas(make(), solver, timeout)
        out["claim"] = claim
        out["lemmas"] = [{"lemma": p["lemma"], "status": p["status"], "seconds": p["seconds"],
                          "query_sha256": p["sha256"]} for p in parts]
        if status == "failed":            # a lemma is refuted: the twin is broken, as it must be
            out.update(status="sat", verdict="refuted")
            break
    out["seconds"] = round(now() - t0, 3)
    return out


def prove_equiv(A: Model, B: Model, where: Sequence[str] = (), solver="bitwuzla",
                timeout=600, save=False, emit=None, backends=("int", "numpy", "compiled"),
                claim: str | None = None, group: str = "equiv", method: str = "auto",
                raw: bool = False, minimize_timeout: float = _min.DEFAULT_STEP_TIMEOUT) -> dict:
    """Prove A and B equivalent, or refute it with a witness (minimized unless `raw`:
    mmaformal.query.minimize)."""
    t0 = now()
    wtxt = f" satisfying {', '.join(where)}" if where else ""
    claim = claim or (f"for every input{wtxt}: {A.label} and {B.label} give bitwise-identical "
                      f"outputs")
    if method != "monolithic" and not where:
        res = equiv_decomposed(A, B, solver, timeout, method, persist=save, claim=claim, t0=t0)
        if res is not None and (res["status"] == "proved" or method == "decomposed"):
            res["seconds"] = round(now() - t0, 3)
            if save and res["status"] == "proved":
                res["saved"] = save_result(group, res, [A, B], "")
            return res
    elif method == "decomposed":
        raise BadInput("prove equiv --method decomposed takes no --where constraints")
    res, text = _distinguish(A, B, where, claim, solver, timeout, emit, backends, raw,
                            minimize_timeout, t0)
    res["query_sha256"] = sha256(text)
    if save:
        res["saved"] = save_result(group, res, [A, B], text)
    res["seconds"] = round(now() - t0, 3)
    return res


def _distinguish(A: Model, B: Model, where, claim, solver, timeout, emit, backends, raw,
                minimize_timeout, t0) -> tuple[dict, str]:
    """The distinguishing query of A and B (query.search): (result, query text)."""
    q = build(A, B, where)
    if q.where:
        if constraints_satisfiable(q, solver if solver != "portfolio" else "bitwuzla",
                                   timeout).status == "unsat":
            raise BadInput("no input satisfies the constraints: " + ", ".join(where))
    st, found, secs, last, text = search(q, 1, solver, timeout, "lazy", backends, emit)
    minimized = None
    if st == "distinguished" and not raw:
        budget = _min.DEFAULT_BUDGET if timeout is None else min(_min.DEFAULT_BUDGET, timeout)
        found[0], minimized = _min.minimize(q, found[0], solver, minimize_timeout, budget,
                                            backends)
    if st == "distinguished":
        f = found[0]
        res = outcome("refuted", claim, [A, B], now() - t0, last.solver,
                      witness=f.witness.to_json(), method="monolithic",
                      detail={"outputs": {k: hex_bits(v, A.ins.d) for k, v in f.outputs.items()},
                              "trace": f.step, "note": q.note})
        res["_runs"] = [(A, f.witness, f.outputs[A.label]), (B, f.witness, f.outputs[B.label])]
        res["minimized"] = minimized
    elif st == "equivalent":
        res = outcome("proved", claim, [A, B], now() - t0, last.solver, method="monolithic",
                      query_text=text, solver_version=last.version, detail={"note": q.note})
        res["twin"] = equivalence_twin(A, B, where, solver, timeout, backends)
        if res["twin"] is None:
            res["reason"] = "no broken twin found (no mutation of B was distinguishable)"
    else:
        res = outcome("unknown", claim, [A, B], now() - t0, last.solver if last else solver,
                      method="monolithic", reason=last.reason if last else "no answer")
    return res, text


# ============================================================================================
# The verb's hooks (query.prove: CLAIM_MODULES)
# ============================================================================================

def from_args(args, kw: dict) -> dict:
    """`prove equiv A B` (prove.run; kw: the common options)."""
    A, B = resolve_pair(args.A, args.B, args.instr)
    return prove_equiv(A, B, args.where, method=args.method, raw=args.raw,
                       minimize_timeout=args.minimize_timeout, **kw)
