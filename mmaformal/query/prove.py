"""Layer 5, query/prove: prove claims about instruction models, or refute them with a witness
that is replayed concretely.

    mmaformal prove equiv A B [--instr NAME] [--where C ...] [--method M]
    mmaformal prove symmetry [TARGET ...] [--set nvidia-tfdpa|cdna3-tr] [--method M] [-j N]
    mmaformal prove monotonic A [--scan SEC] [--hint N]
    mmaformal prove bound A [--rounds N]
    mmaformal prove unobservable A PARAM=VALUE [--method M]
    mmaformal prove exact A --where CONSTRAINT [--rounded]   (mmaformal.query.claims.exact)
    mmaformal prove ieee [--ops ..] [--formats ..] [--modes ..] [--split]   (mmaformal.query.ieee:
        fp.add/mul/fma against the SMT-LIB floating-point theory; its options are there)
    mmaformal prove symmetry|monotonic|bound --all [PATTERN ...]
    mmaformal prove unobservable --all PARAM=VALUE [PATTERN ...]
        --all: every catalog instruction (or those matching), grouped by one query
        (model.arith_key), one campaign job per group (query.campaign: --jobs N, --ray
        auto|local|ADDR, --progress FILE, --limit SEC, --retry-unknown, --redo); with --save one
        record per group listing its instructions; groups with a stored verdict are skipped
    common: --solver S|portfolio --timeout SEC --save --emit-smt2 FILE --json

Claims (the exact sentence is printed and stored with every result):

- equiv: A and B give bitwise-identical outputs for every input (satisfying --where). Two
  FDPA chains that differ only in the zero-sign / overflow rules are proved piece by piece
  first (decompose.equivalence_lemmas: per block, under a hypothesis on its accumulator that
  the previous block establishes); others, and refutations, monolithically.
- symmetry: Phi(-A, B, -C) ~ -Phi(A, B, C) for every input, where -x flips the sign bit (in
  formats without -0, fnuz, the zero 0x00 and the NaN 0x80 are their own negations) and x ~ y
  means: equal bits, or both NaN (NaN payloads and signs are not compared), or both zero (the
  sign of an exact-zero output is not compared: IEEE sum-of-zeros rules make it depend on the
  signs of zero addends, which negation does not map consistently). T-FDPA-family theories are
  proved piece by piece (mmaformal.query.decompose); others, and refutations, monolithically.
- monotonic (after Mikaitis 2024, monotonicity of multi-term adders): for all finite inputs
  (a, b, c) and (a', b', c') that differ in exactly one addend (one product a_i*b_i, where
  a_i and b_i may both change, or c) whose exact value increases, Phi(a', b', c') is
  not smaller than Phi(a, b, c), outputs compared as real numbers (+0 = -0, -Inf < finite <
  +Inf; a NaN output on either side is outside the claim). T-FDPA chains are proved piece
  by piece (decompose.monotonic_lemmas_fdpa: per fused block, the alignment exponent's
  change is paid for by the changed addend's gain; the output conversion is non-decreasing
  in the sum's value), TR-FDPA and GTR-FDPA chains likewise (each tail cut as for the
  bound), integer chains and FMA chains likewise; others, and refutations, monolithically.
- bound (T-FDPA chains are proved piece by piece: decompose.bound_lemmas): [Xie2025] Table 9: for finite inputs on which no block output overflows (every block
  output finite and below the largest finite magnitude), |Phi(a, b, c) - (c + sum a_k b_k)|
  <= sum over the chained blocks j of n_j 2^(e_max,j - F) + r ulp(d_j), with n_j the number
  of addends of block j (L + 1), e_max,j its alignment exponent, d_j its output, r = 1 for
  RZ outputs and 1/2 for RNE. Refuted: the worst witness found (largest excess) is reported.
- unobservable P=V: the theory with parameter P set to V is equivalent (claim equiv).

Every proof has a broken twin that the same query shows SAT (equiv/unobservable: B with F-1 or
another rounding; decomposed: the block lemmas without their hypotheses, else against B with
F-1; symmetry: the RD-twin, aligned terms rounded toward -inf as TR-FDPA does;
bound: the theory with F-2 against the same bound). Every refutation's witness is replayed on
the int and numpy back-ends (and the compiled path) before it is reported; equiv and
unobservable refutations are minimized first (mmaformal.query.minimize, --raw skips it), and
every witness is also printed as one line in the style of [Xie2025]'s Equation 10. A solver time-out
is "unknown" with the time spent, never "proved".

Stores (--save): proofs/<claim>/<name>.json (+ .smt2 for monolithic queries), proved lemmas in
proofs/cache/<sha256>.smt2|json, refutations in counterexamples/<claim>/.

Exit codes (`run`): 0 proved, 1 refuted, 2 bad input, 3 internal error, 4 unknown (--all: 4
when a group is unknown, else 1 when one is refuted; 130 interrupted, resumable).

The claims' statements and concrete checks live in mmaformal.query.claims, their records in
.proofs (proofs/) and .cex (counterexamples/), the equivalence query in .search.

May import: the query modules below the verbs (frame, model, search, claims, decompose, cache,
proofs, store), the layers below, z3.
"""
from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import os
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Sequence

from .. import fp, isa, mma
from .. import theory as _theory
from ..bits import BV, Z3Backend, clz, ite
from . import campaign as _campaign
from . import decompose as _dec
from . import ieee as _ieee
from . import minimize as _min
from .cache import CACHE, solve_cached
from .claims import (CLAIMS, SYMMETRY_STATEMENT, SYMMETRY_STATEMENT_INT, approx_int as _approx_int,
                     bound_blocks as _bound_blocks, bound_concrete as _bound_concrete, neg_int as
                     _neg_int, neg_witness as _neg_witness, outcome, value_lt)
from .claims import REGISTRY as _USER_CLAIMS
from .frame import (BadInput, EXIT_INTERNAL, EXIT_OK, EXIT_REFUTED, EXIT_UNKNOWN, InternalError,
                    add_common, run_verb)
from .model import (REDUCTION_SPARSE, Inputs, Model, Witness, _hex, arith_key, _parse_value, approx_equal, check,
                    mutate, neg_bits,
                    parse_backends, portable, replay, resolve, resolve_pair, smt2_text)
from .proofs import prune_cache, save_result, store_equivalence
from .search import build, constraints_satisfiable, equivalence_twin, search
from .solvers import Result
from .store import lemma_dir, sha256
from .witness_search import monotonic_pair, symmetry_pair

__all__ = ["prove_symmetry", "prove_equiv", "prove_unobservable", "prove_monotonic",
           "prove_bound", "symmetry_groups", "equiv_decomposed", "add_parser", "run",
           # re-exported for callers of the verb module (the definitions live in claims/proofs)
           "value_lt", "store_equivalence", "CLAIMS", "prune_cache"]


def _now() -> float:
    return time.perf_counter()


# ============================================================================================
# Symmetry
# ============================================================================================

def symmetry_query(m: Model):
    """(inputs, out, negated-input out, the negated claim) on a fresh z3 back-end."""
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


def _monolithic(assertions_fn, K, solver, timeout, t0, replay_check, obligations="lazy"):
    """Solve a negated claim; SAT witnesses must pass replay_check(model) -> (ok, info)
    (a witness that overflows a checked operation triggers a re-solve with the
    obligations). Returns (status, result, info, text)."""
    use_obl = obligations == "always"
    while True:
        asserts = assertions_fn() + ([portable(o) for o in K.obligations] if use_obl else [])
        text = smt2_text(asserts)
        left = None if timeout is None else max(0.1, timeout - (_now() - t0))
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


def _symmetry_pair_check(m: Model, w: Witness, wn: Witness, backends):
    """Replay an asymmetry witness (x, -x) on every back-end: (w, wn, Phi(x), Phi(-x))."""
    o1 = replay([m], w, backends)[m.label]
    o2 = replay([m], wn, backends)[m.label]
    fd = m.ins.d
    if _approx_int(o2, _neg_int(o1, fd), fd):
        raise InternalError(f"the symmetry witness does not replay: Phi(x) = "
                            f"{_hex(o1, fd)}, Phi(-x) = {_hex(o2, fd)} on {w.to_json()}")
    return w, wn, o1, o2


def _symmetry_replay(m: Model, inp: Inputs, backends):
    def chk(model):
        w = inp.witness(model)
        return _symmetry_pair_check(m, w, _neg_witness(w), backends)
    return chk


def _decomposed(sts: "Sequence[_dec.Structure]", make_lemmas, method: str, solver, timeout,
                persist, t0):
    """The decomposed attempt of a claim: `make_lemmas(*sts)` (the traced structures of its
    models) run by decompose.run_lemmas within the claim's time (from t0): (status, parts,
    ""), or (None, [], why) when the models are not decomposable (a BadInput when method is
    "decomposed")."""
    try:
        lemmas = make_lemmas(*sts)
    except _dec.NotDecomposable as e:
        if method == "decomposed":
            raise BadInput(f"{' vs '.join(st.model.label for st in sts)}: not decomposable: "
                           f"{e}") from None
        return None, [], str(e)
    deadline = None if timeout is None else t0 + timeout
    status, parts = _dec.run_lemmas(lemmas, solver, timeout, persist=persist, deadline=deadline)
    return status, parts, ""


def prove_symmetry(m: Model, solver: str = "bitwuzla", timeout: float | None = 600,
                   method: str = "auto", save: bool = False, emit: str | None = None,
                   backends=("int", "numpy", "compiled"), twin: bool = True,
                   group: Sequence[str] = (), persist: bool | None = None) -> dict:
    """Prove or refute symmetry of one model (see SYMMETRY_STATEMENT)."""
    persist = save if persist is None else persist
    t0 = _now()
    claim = f"{m.label}: {SYMMETRY_STATEMENT_INT if m.ins.integer else SYMMETRY_STATEMENT}"
    K, inp, out, sout, bad = symmetry_query(m)
    mono_text = smt2_text([bad])
    if emit:
        Path(emit).write_text(mono_text)
    res = None
    why = ""
    fma = m.theory.model == "fma"
    if method in ("auto", "decomposed"):
        if fma:
            status, parts, why = _decomposed([m], _dec.fma_symmetry_lemmas, method, solver,
                                             timeout, persist, t0)
        else:
            status, parts, why = _decomposed([_dec.structure(m)], _dec.symmetry_lemmas, method,
                                             solver, timeout, persist, t0)
        if status is not None:
            if emit:
                for i, p in enumerate(parts):
                    Path(f"{emit}.{i:02d}.{p['lemma']}.smt2").write_text(p["text"])
            texts = {p["sha256"]: p.pop("text") for p in parts}
            solver_used = ",".join(sorted({p["solver"] for p in parts}))
            if status == "proved":
                res = outcome("proved", claim, [m], _now() - t0, solver_used, method="decomposed",
                              parts=parts, _texts=texts,
                              combination=_dec.COMBINATION_SYMMETRY_FMA if fma else
                              _dec.COMBINATION_SYMMETRY)
            elif status == "unknown" and method == "decomposed":
                res = outcome("unknown", claim, [m], _now() - t0, solver_used,
                              method="decomposed", parts=parts,
                              reason=f"lemma {parts[-1]['lemma']} undecided")
            else:
                why = f"lemma {parts[-1]['lemma']} {'failed' if status == 'failed' else 'undecided'}" \
                      f" (cuts over-approximate); monolithic query"
    if res is None:
        found = symmetry_pair(m, budget=5.0)   # random raw bits on numpy lanes first
        if found is not None:
            st_, r, info, text = ("sat", Result("sat", "search (numpy lanes)", "", _now() - t0),
                                  _symmetry_pair_check(m, *found, backends), mono_text)
            why = (why + "; " if why else "") + "witness from a random search, replayed"
        else:
            st_, r, info, text = _monolithic(lambda: [bad], K, solver, timeout, t0,
                                             _symmetry_replay(m, inp, backends))
        if st_ == "unsat":
            res = outcome("proved", claim, [m], _now() - t0, r.solver, method="monolithic",
                          query_text=text, solver_version=r.version, reason=why)
        elif st_ == "sat":
            w, wn, o1, o2 = info
            fd = m.ins.d
            res = outcome("refuted", claim, [m], _now() - t0, r.solver, witness=w.to_json(),
                          method="search" if found is not None else "monolithic", reason=why,
                          detail={"negated_input": wn.to_json(), "output": _hex(o1, fd),
                                  "output_of_negated_input": _hex(o2, fd),
                                  "negated_output": _hex(_neg_int(o1, fd), fd)})
            res["_runs"] = [(m, w, o1), (m, wn, o2)]
        else:
            res = outcome("unknown", claim, [m], _now() - t0, r.solver, method="monolithic",
                          reason=(why + "; " if why else "") + (r.reason or "no answer"))
    res["query_sha256"] = sha256(mono_text)
    res["seconds"] = round(_now() - t0, 3)          # the proof (or refutation) alone
    if res["status"] == "proved" and twin:
        res["twin"] = (_fma_twin(m, "symmetry", solver, timeout) if fma and
                       res["method"] == "decomposed" else
                       symmetry_twin(m, solver, timeout, backends))
    res["group"] = list(group) or [m.ins.name]
    res["total_seconds"] = round(_now() - t0, 3)   # with the broken twin
    if save:
        res["saved"] = save_result("symmetry", res, [m], mono_text)
    return res


def _fma_twin(m: Model, claim: str, solver, timeout) -> dict:
    """The broken twin of a decomposed FMA-chain proof: the step lemma that carries the claim
    (fma.sym; fma.mono.prod) for the fma rounded toward -inf (symmetry: RD is not odd) or with
    its inequality turned (monotonic: a larger product can give a larger output) must be
    refuted by the same solver."""
    t0 = _now()
    if claim == "symmetry":
        lm = _dec.fma_symmetry_lemmas(m, mode="RD")[0]
        what = "fma.sym with the fma rounded toward -inf (RD)"
    else:
        lm = _dec.fma_monotonic_lemmas(m, _ord, _term_le, reverse=True)[2]
        what = "fma.mono.prod with the output inequality reversed"
    r, h, _ = solve_cached(lm.text, solver, timeout, False)
    d = {"claim": f"{m.label}: {what}", "status": r.status, "solver": r.solver,
         "seconds": round(_now() - t0, 3), "query_sha256": h}
    if r.status == "sat":
        d["verdict"] = "refuted"
    return d


def symmetry_twin(m: Model, solver, timeout, backends) -> dict:
    """The RD-twin (aligned terms rounded toward -inf): the same claim must be refuted."""
    tw = Model(m.label + "[align=RD]", m.theory, m.base, m.changes, True, m.n)
    t0 = _now()
    K, inp, out, sout, bad = symmetry_query(tw)
    found = symmetry_pair(tw, budget=5.0)      # random raw bits on numpy lanes first
    if found is not None:
        st, r, info, text = ("sat", Result("sat", "search (numpy lanes)", "", _now() - t0),
                             _symmetry_pair_check(tw, *found, backends), smt2_text([bad]))
    else:
        st, r, info, text = _monolithic(lambda: [bad], K, solver, timeout, t0,
                                        _symmetry_replay(tw, inp, backends))
    d = {"claim": f"{tw.label}: the same claim on the RD-twin (aligned terms rounded toward "
                  f"-inf instead of toward zero)", "status": st, "solver": r.solver,
         "seconds": round(_now() - t0, 3), "query_sha256": sha256(text)}
    if st == "sat":
        w, wn, o1, o2 = info
        d["verdict"] = "refuted"
        d["witness"] = w.to_json()
        d["outputs"] = {"x": _hex(o1, m.ins.d), "-x": _hex(o2, m.ins.d)}
    return d


# ---- groups of instructions with one arithmetic ---------------------------------------------

SETS = {
    "nvidia-tfdpa": "every dense NVIDIA mma/wgmma/tcgen05 instruction with K <= 16 whose "
                    "primary theory is T-FDPA-based (t_fdpa, st_fdpa, gst_fdpa)",
    "cdna3-tr": "every dense CDNA3 (gfx942) instruction whose primary theory is TR-FDPA or "
                "GTR-FDPA",
}


_arith_key = arith_key


def symmetry_groups(targets: Sequence[str] = (), set_name: str | None = None) -> list[list[str]]:
    """Instructions grouped by identical arithmetic (theory content without its id, operand
    formats, K): one proof per group. Targets: instruction names or fnmatch patterns, theory
    ids; set_name: one of SETS."""
    ts = _theory.default()
    names: list[str] = []
    if set_name:
        if set_name not in SETS:
            raise BadInput(f"unknown set {set_name!r}; known: {', '.join(SETS)}")
        for n, ins in isa.catalog().items():
            t = ts.theories_for(ins)
            if not t:
                continue
            t = t[0]
            if ins.sparse or ins.family == "wmma":    # the sets predate these (issue 14)
                continue
            if set_name == "nvidia-tfdpa" and ins.vendor == "nvidia" and ins.k <= 16 and \
                    t.model == "fdpa" and t.op in ("t_fdpa", "st_fdpa", "gst_fdpa"):
                names.append(n)
            if set_name == "cdna3-tr" and ins.arch == "gfx942" and t.op in ("tr_fdpa", "gtr_fdpa"):
                names.append(n)
    for tg in targets:
        if "/" in tg and any(ch in tg for ch in "*?["):
            hit = [n for n in isa.catalog() if fnmatch.fnmatch(n, tg)]
            if not hit:
                raise BadInput(f"pattern {tg!r} matches no instruction")
            names.extend(hit)
        elif "/" in tg:
            try:
                names.append(isa.lookup(tg).name)
            except ValueError as e:
                raise BadInput(str(e)) from None
        else:
            try:
                names.extend(ts.instructions_of(ts.get(tg).id))
            except ValueError as e:
                raise BadInput(str(e)) from None
    return query_groups(names, ts)


def query_groups(names: Sequence[str], ts=None) -> list[list[str]]:
    """`names` grouped by one query (arith_key), each group in (sparse last, name) order: its
    first instruction is the one the query is built on. A sparse instruction joins a dense
    group by the reduction of model.REDUCTION_SPARSE; sparse instructions with no dense
    instruction of their arithmetic are grouped by their own sparse query (the theory with its
    `sparse` key, K, the sparsity pattern)."""
    ts = ts or _theory.default()
    groups: dict[str, list[str]] = collections.OrderedDict()
    for n in dict.fromkeys(names):
        ins = isa.lookup(n)
        groups.setdefault(_arith_key(ts.theories_for(ins)[0], ins), []).append(n)
    out = []
    for g in groups.values():
        g = sorted(g, key=lambda n: (bool(isa.lookup(n).sparse), n))
        if not isa.lookup(g[0]).sparse:
            out.append(g)
            continue
        own: dict[str, list[str]] = collections.OrderedDict()
        for n in g:
            ins = isa.lookup(n)
            t = ts.theories_for(ins)[0]
            own.setdefault(json.dumps([t.hash(), ins.k, ins.sparsity, _arith_key(t, ins)]),
                           []).append(n)
        out.extend(own.values())
    return out


def _sparse_note(names: Sequence[str]) -> str:
    """The reduction sentence a claim carries when its group holds sparse members that are
    decided through a dense instruction's query."""
    if isa.lookup(names[0]).sparse or not any(isa.lookup(n).sparse for n in names):
        return ""
    return " [" + REDUCTION_SPARSE + "]"


def prove_symmetry_many(groups: list[list[str]], jobs: int = 0, **opts) -> list[dict]:
    """One proof per group, independent groups through the campaign runner (a local pool of
    `jobs` processes, default all available CPUs); proved lemmas are shared between the
    workers through a lemma folder (the store's with save, else a temporary one)."""
    import tempfile
    tmp = None
    if opts.get("save"):
        cache_dir = str(lemma_dir())
    else:
        tmp = tempfile.TemporaryDirectory(prefix="mmaformal-lemmas-")
        cache_dir = tmp.name
    js = [_campaign.Job(f"symmetry/{g[0]}", "mmaformal.query.prove:prove_job",
                        dict(claim="symmetry", names=g, solver=opts.get("solver", "bitwuzla"),
                             timeout=opts.get("timeout"), method=opts.get("method", "auto"),
                             twin=opts.get("twin", True), cache_dir=cache_dir,
                             backends=list(opts.get("backends", ("int", "numpy", "compiled")))))
          for g in groups]
    try:
        return _campaign.run(js, workers=jobs or None,
                             on_result=save_group("symmetry") if opts.get("save") else None)
    finally:
        if tmp is not None:
            tmp.cleanup()


# ============================================================================================
# Equivalence and unobservability
# ============================================================================================

def equiv_decomposed(A: Model, B: Model, solver="bitwuzla", timeout=600, method="auto",
                     persist=False, claim: str | None = None, t0: float | None = None) -> dict | None:
    """The decomposed proof of "A and B give bitwise-identical outputs" for two FDPA chains
    that differ only in conversion parameters (decompose.equivalence_lemmas), with its broken
    twin (`_equiv_twin`). None when the pair is not decomposable (method "auto"; a BadInput
    for "decomposed"); "unknown" (with the lemma that failed) when the lemmas are not all
    proved, so the caller may fall back to the monolithic query."""
    t0 = _now() if t0 is None else t0
    claim = claim or f"for every input: {A.label} and {B.label} give bitwise-identical outputs"
    try:                                  # cheap: before tracing the two models
        diff = _dec.conversion_diff(A, B)
    except _dec.NotDecomposable as e:
        if method == "decomposed":
            raise BadInput(f"{A.label} vs {B.label}: not decomposable: {e}") from None
        return None
    sts = [_dec.structure(A), _dec.structure(B)]
    # without the magnitude bound first (no block overflows whatever its accumulator), then
    # with it (the accumulators the chain can produce)
    for bounds in ((False, True) if "overflow" in diff else (True,)):
        status, parts, why = _decomposed(
            sts, lambda *st: _dec.equivalence_lemmas(*st, bounds=bounds), method, solver,
            timeout, persist, t0)
        if status in (None, "proved"):
            break
    if status is None:
        return None
    texts = {p["sha256"]: p.pop("text") for p in parts}
    used = ",".join(sorted({p["solver"] for p in parts}))
    if status != "proved":
        return outcome("unknown", claim, [A, B], _now() - t0, used, method="decomposed",
                       parts=parts, reason=f"lemma {parts[-1]['lemma']} "
                       f"{'failed (the hypotheses over-approximate)' if status == 'failed' else 'undecided'}")
    res = outcome("proved", claim, [A, B], _now() - t0, used, method="decomposed", parts=parts,
                  combination=_dec.COMBINATION_EQUIV, _texts=texts)
    res["twin"] = _equiv_twin(*sts, diff, solver, timeout)
    return res


def _equiv_twin(stA, stB, diff, solver, timeout) -> dict:
    """The broken twin of a decomposed equivalence: the block lemmas without their accumulator
    hypotheses (refuted when the hypotheses carry the proof); if those all hold (the
    conversions agree on every accumulator), the same lemmas between A and B with F - 1 (a
    pair that differs in the fused sum), which must be refuted."""
    t0 = _now()
    A, B = stA.model, stB.model
    tries = [("the block lemmas without their accumulator hypotheses (P_j := true)",
              lambda: _dec.equivalence_lemmas(stA, stB, hypotheses=False))]
    F = B.theory.param_dict.get("F")
    if isinstance(F, int):
        Bt = mutate(B, {"F": F - 1}, label=f"{B.label}[F={F - 1}]")
        tries.append((f"the same lemmas between {A.label} and {Bt.label}",
                      lambda: _dec.equivalence_lemmas(stA, _dec.structure(Bt), diff=diff)))
    out = {"claim": "", "status": "unknown", "lemmas": []}
    for claim, make in tries:
        status, parts = _dec.run_lemmas(make(), solver, timeout)
        out["claim"] = claim
        out["lemmas"] = [{"lemma": p["lemma"], "status": p["status"], "seconds": p["seconds"],
                          "query_sha256": p["sha256"]} for p in parts]
        if status == "failed":            # a lemma is refuted: the twin is broken, as it must be
            out.update(status="sat", verdict="refuted")
            break
    out["seconds"] = round(_now() - t0, 3)
    return out


def prove_equiv(A: Model, B: Model, where: Sequence[str] = (), solver="bitwuzla",
                timeout=600, save=False, emit=None, backends=("int", "numpy", "compiled"),
                claim: str | None = None, group: str = "equiv", method: str = "auto",
                raw: bool = False, minimize_timeout: float = _min.DEFAULT_STEP_TIMEOUT) -> dict:
    """Prove A and B equivalent, or refute it with a witness (minimized unless `raw`:
    mmaformal.query.minimize)."""
    t0 = _now()
    wtxt = f" satisfying {', '.join(where)}" if where else ""
    claim = claim or (f"for every input{wtxt}: {A.label} and {B.label} give bitwise-identical "
                      f"outputs")
    if method != "monolithic" and not where:
        res = equiv_decomposed(A, B, solver, timeout, method, persist=save, claim=claim, t0=t0)
        if res is not None and (res["status"] == "proved" or method == "decomposed"):
            res["seconds"] = round(_now() - t0, 3)
            if save and res["status"] == "proved":
                res["saved"] = save_result(group, res, [A, B], "")
            return res
    elif method == "decomposed":
        raise BadInput("prove equiv --method decomposed takes no --where constraints")
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
        res = outcome("refuted", claim, [A, B], _now() - t0, last.solver,
                      witness=f.witness.to_json(), method="monolithic",
                      detail={"outputs": {k: _hex(v, A.ins.d) for k, v in f.outputs.items()},
                              "trace": f.step, "note": q.note})
        res["_runs"] = [(A, f.witness, f.outputs[A.label]), (B, f.witness, f.outputs[B.label])]
        res["minimized"] = minimized
    elif st == "equivalent":
        res = outcome("proved", claim, [A, B], _now() - t0, last.solver, method="monolithic",
                      query_text=text, solver_version=last.version, detail={"note": q.note})
        res["twin"] = equivalence_twin(A, B, where, solver, timeout, backends)
        if res["twin"] is None:
            res["reason"] = "no broken twin found (no mutation of B was distinguishable)"
    else:
        res = outcome("unknown", claim, [A, B], _now() - t0, last.solver if last else solver,
                      method="monolithic", reason=last.reason if last else "no answer")
    res["query_sha256"] = sha256(text)
    if save:
        res["saved"] = save_result(group, res, [A, B], text)
    res["seconds"] = round(_now() - t0, 3)
    return res



def prove_unobservable(A: Model, param: str, value, **kw) -> dict:
    try:
        B = mutate(A, {param: value}, label=f"{A.label}[{param}={value}]")
    except (ValueError, TypeError) as e:
        raise BadInput(str(e).splitlines()[0]) from None
    claim = (f"parameter {param} = {value!r} is unobservable on {A.label} (theory {A.theory.id}, "
             f"{param} = {A.theory.param_dict.get(param)!r}): both give bitwise-identical "
             f"outputs for every input")
    return prove_equiv(A, B, claim=claim, group="unobservable", **kw)


# ============================================================================================
# Monotonicity
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


def _term_le(t1: mma.Term, t2: mma.Term):
    n1 = t1.sign & ~t1.zero
    n2 = t2.sign & ~t2.zero
    return (n1 & ~n2) | (~n1 & ~n2 & _term_mag_le(t1, t2)) | (n1 & n2 & _term_mag_le(t2, t1))


def _ord(x: BV, f: str) -> BV:
    """A signed integer whose order is the real order of the non-NaN values of format f."""
    F = fp.fmt(f)
    mag = x.extract(F.pad + F.k - 2, F.pad).resize(F.k + 1)
    s = x.bit(F.pad + F.k - 1) if F.signed else x.k.bconst(False)
    m = mag.resize(F.k + 1, True)
    return ite(s, -m, m)


def _int_addend(x: BV, y: BV, fa: str, fb: str, bop: str) -> BV:
    """The exact value of the integer product a_k * b_k (b1: the bit a_k XOR/AND b_k) as a
    signed vector wide enough for every input (the value mma.int_chain adds)."""
    if fp.fmt(fa).name == "b1":
        xa, xb = x.extract(0, 0), y.extract(0, 0)
        return ((xa ^ xb) if bop == "xor" else (xa & xb)).resize(3, False).bitcast(True)
    va, vb = fp.int_value(fa, x), fp.int_value(fb, y)
    w = va.w + vb.w
    return va.resize(w, True) * vb.resize(w, True)


def _monotonic_viol(m: Model, o1: BV, o2: BV, reverse: bool = False):
    """Phi(y) < Phi(x) (reverse: Phi(x) < Phi(y)) as real numbers, NaN outputs excluded."""
    f = m.ins.d
    if fp.fmt(f).is_int:
        v1, v2 = fp.int_value(f, o1), fp.int_value(f, o2)
        return ((v1 < v2) if reverse else (v2 < v1)).v
    u1, u2 = fp.decode(f, o1), fp.decode(f, o2)
    lt = (_ord(o1, f) < _ord(o2, f)) if reverse else (_ord(o2, f) < _ord(o1, f))
    return (~u1.nan & ~u2.nan & lt).v


def _monotonic_parts(m: Model):
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
        larger = lambda k: _int_addend(x.a[k], x.b[k], ins.a, ins.b, ins.bop) < \
            _int_addend(y.a[k], y.b[k], ins.a, ins.b, ins.bop)
        c_larger = fp.int_value(ins.c, x.c) < fp.int_value(ins.c, y.c)
    else:
        term = lambda inp, k: mma.product(fp.decode(ins.a, inp.a[k]), fp.decode(ins.b, inp.b[k]))
        larger = lambda k: ~_term_le(term(y, k), term(x, k))
        c_larger = _ord(x.c, ins.c) < _ord(y.c, ins.c)
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
    import z3
    t0 = _now()
    ins = m.ins
    claim = (f"{m.label}: for all finite inputs (a, b, c), (a', b', c') that differ in one "
             f"addend (one product a_i*b_i, a_i and b_i both free, or c) whose exact value "
             f"increases, Phi(a', b', c') >= Phi(a, b, c) as real numbers (+0 = -0; NaN "
             f"outputs excluded) [monotonicity, Mikaitis 2024]"
             + (" (block scales: the same finite scales on both sides)" if ins.scale else "")
             + (" (integers: addends are the exact products, or b1 bits, and c; outputs are "
                "signed s32)" if fp.fmt(ins.a).is_int else ""))
    kdim = m.k

    def pair(w1, w2, s):
        r1 = replay([m], w1, backends)[m.label]
        r2 = replay([m], w2, backends)[m.label]
        if not value_lt(r2, r1, ins.d):
            raise InternalError(f"monotonicity witness does not replay: {_hex(r1, ins.d)} -> "
                                f"{_hex(r2, ins.d)}")
        return w1, w2, r1, r2, s

    st, method, text = None, "monolithic", None
    if scan and not fp.fmt(ins.a).is_int:  # before the symbolic query: seconds at K = 32
        found = monotonic_pair(m, budget=scan, transfer=_stored_monotonic_pairs(m))
        if found is not None:
            st, info, method = "sat", pair(*found), "search"
            r = Result("sat", "search (numpy lanes)", "", _now() - t0)
    integer = fp.fmt(ins.a).is_int and m.theory.op == "int_chain" and not ins.sparse
    fdpa = (m.theory.model == "fdpa" and not ins.sparse
            and ((m.theory.op in ("t_fdpa", "tr_fdpa", "gtr_fdpa") and not ins.scale)
                 or m.theory.op == "gst_fdpa"))
    if st is None and (integer or fdpa or m.theory.model == "fma"):
        subject = [m]
        if integer:
            addend = lambda a, b: _int_addend(a, b, ins.a, ins.b, ins.bop)
            make, comb = (lambda mm: _dec.monotonic_lemmas_int(mm, addend),
                          _dec.COMBINATION_MONOTONIC_INT)
        elif fdpa:
            subject = [_dec.structure(m, gtr=True)]
            make, comb = (lambda s: _dec.monotonic_lemmas_fdpa(s, _ord, _term_le),
                          {"tr_fdpa": _dec.COMBINATION_MONOTONIC_TR,
                           "gtr_fdpa": _dec.COMBINATION_MONOTONIC_GTR}.get(
                              m.theory.op, _dec.COMBINATION_MONOTONIC_FDPA))
        else:
            make, comb = (lambda mm: _dec.fma_monotonic_lemmas(mm, _ord, _term_le),
                          _dec.COMBINATION_MONOTONIC_FMA)
        status, parts, why = _decomposed(subject, make, "auto", solver, timeout,
                                         save if persist is None else persist, t0)
        if status == "proved":
            texts = {p["sha256"]: p.pop("text") for p in parts}
            res = outcome("proved", claim, [m], _now() - t0,
                          ",".join(sorted({p["solver"] for p in parts})), method="decomposed",
                          parts=parts, combination=comb, _texts=texts)
            res["twin"] = (_monotonic_twin(m, solver, timeout, backends) if integer or fdpa else
                           _fma_twin(m, "monotonic", solver, timeout))
            res["query_sha256"] = None
            if save:
                res["saved"] = save_result("monotonic", res, [m], "")
            res["seconds"] = round(_now() - t0, 3)
            return res
    if st is None:
        K, x, y, cons, o1, o2, sel = _monotonic_parts(m)
        viol = _monotonic_viol(m, o1, o2)

    def chk(model):
        return pair(x.witness(model), y.witness(model), model.get("sel", 0))
    if st is None and 0 < hint < kdim:
        zero = [(v == 0).v for inp in (x, y) for v in inp.a[hint:] + inp.b[hint:]]
        st, r, info, _ = _monolithic(lambda: cons + [viol] + zero, K, solver,
                                     None if timeout is None else timeout / 2, _now(), chk)
        text = smt2_text(cons + [viol])
        method = "monolithic (restricted: products after the first "f"{hint} zero)"
    if st != "sat":
        st, r, info, text = _monolithic(lambda: cons + [viol], K, solver, timeout, t0, chk)
        method = "monolithic"
    if emit and text:
        Path(emit).write_text(text)
    if st == "unsat":
        res = outcome("proved", claim, [m], _now() - t0, r.solver, method="monolithic",
                      query_text=text, solver_version=r.version)
        res["twin"] = _monotonic_twin(m, solver, timeout, backends)
    elif st == "sat":
        w1, w2, r1, r2, s = info
        what = f"product k={s}" if s < kdim else "c"
        res = outcome("refuted", claim, [m], _now() - t0, r.solver, witness=w1.to_json(),
                      method=method,
                      detail={"increased": what, "witness2": w2.to_json(),
                              "output": _hex(r1, ins.d), "output2": _hex(r2, ins.d)})
        res["_runs"] = [(m, w1, r1), (m, w2, r2)]
    else:
        res = outcome("unknown", claim, [m], _now() - t0, r.solver, method="monolithic",
                      reason=r.reason)
    res["query_sha256"] = sha256(text) if text else None    # None: found by the search
    if save:
        res["saved"] = save_result("monotonic", res, [m], text or "")
    res["seconds"] = round(_now() - t0, 3)
    return res


def _stored_monotonic_pairs(m: Model) -> list:
    """The witness pairs of the stored monotonicity counterexamples whose operand formats are
    m's (shift-aligned raw bits; c taken when its format is m's, else only a zero c): the
    search tries them on m first (witness_search.monotonic_pair, transfer)."""
    from . import cex
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


def _monotonic_twin(m, solver, timeout, backends):
    """Twin (a mutated claim): with the inequality on the outputs reversed, the same query
    must be SAT (an increased addend that strictly increases the output exists): the
    constraints are not vacuous."""
    t0 = _now()
    K, x, y, cons, o1, o2, sel = _monotonic_parts(m)
    rev = _monotonic_viol(m, o1, o2, reverse=True)

    def chk(model):
        w1, w2 = x.witness(model), y.witness(model)
        r1 = replay([m], w1, backends)[m.label]
        r2 = replay([m], w2, backends)[m.label]
        if not value_lt(r1, r2, m.ins.d):
            raise InternalError("monotonic twin witness does not replay")
        return w1, w2, r1, r2
    st, r, info, text = _monolithic(lambda: cons + [rev], K, solver, timeout, t0, chk)
    d = {"claim": f"{m.label}: the same query with the output inequality reversed (an increased "
                  f"addend never increases the output)", "status": st, "solver": r.solver,
         "seconds": round(_now() - t0, 3), "query_sha256": sha256(text)}
    if st == "sat":
        d["verdict"] = "refuted"
        d["witness"] = info[0].to_json()
        d["witness2"] = info[1].to_json()
    return d


# ============================================================================================
# Error bound ([Xie2025] Table 9)
# ============================================================================================

def _fixed(u: fp.Unpacked, shift_base: int, W: int) -> BV:
    """The exact value of a decoded finite element as a signed W-bit integer in units of
    2^shift_base (shift_base <= its LSB exponent)."""
    f = u.fmt
    K = u.sig.k
    sh = (u.exp.resize(max(u.exp.w, 12) + 2) - (f.t + shift_base)).bitcast(False)
    v = u.sig.resize(W).shl_wrap_var(sh).resize(W, True)
    return ite(u.sign, -v, v)


def _bound_parts(m: Model, F_claim: int | None = None):
    """The Table 9 query parts of model m, the bound stated with F_claim (default the
    theory's F): (K, inputs, constraints, excess term, U, W)."""
    import z3
    ins = m.ins
    th = m.theory
    p = th.param_dict
    rf, rmode, sf = mma.rho_of(p.get("rho", "RNE-FP32"))
    half = rmode == "RNE"
    F = p["F"] if F_claim is None else F_claim
    K, x, d, notes = _dec.traced_dot(m)
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
    for (E, n, allz), dj in _bound_blocks(m, notes):
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



def _bound_check(m: Model) -> None:
    ins, th = m.ins, m.theory
    if th.model != "fdpa" or th.op not in ("t_fdpa", "tr_fdpa", "gtr_fdpa") or ins.scale:
        raise BadInput(f"{m.label}: bound takes T-FDPA, TR-FDPA or GTR-FDPA theories without "
                       f"block scales (theory {th.id} is {th.describe()})")
    if th.accumulate != "fused" or th.convert or th.k_order != "natural" or th.accumulator:
        raise BadInput(f"{m.label}: bound does not take accumulate = add, operand conversion, "
                       f"a k order or an accumulator conversion")


def _bound_search(m: Model, F_claim, solver, timeout, backends, rounds, t0, emit=None):
    K, x, cons, excess, U, W = _bound_parts(m, F_claim)
    viol = (excess > 0).v

    def chk(model):
        w = x.witness(model)
        o = replay([m], w, backends)[m.label]
        e_ex, e_err, e_b = _bound_concrete(m, w, F_claim)
        if not e_err > e_b:
            raise InternalError(f"bound witness does not replay: error {e_err} <= bound {e_b}")
        return w, o, e_err, e_b
    best, extra, it = None, [], 0
    st, r, info, text = _monolithic(lambda: cons + [viol] + extra, K, solver, timeout, t0, chk)
    first_text = text
    if emit:
        Path(emit).write_text(text)
    while st == "sat":
        w, o, e_err, e_b = info
        if best is None or e_err - e_b > best[2] - best[3]:
            best = (w, o, e_err, e_b)
        it += 1
        if it >= rounds or (timeout is not None and _now() - t0 > timeout * 0.9):
            break
        ex = int((e_err - e_b) / Fraction(2) ** U)
        if ex >= (1 << (W - 2)):
            break
        extra = [(excess > ex).v]
        st, r, info, text = _monolithic(lambda: cons + [viol] + extra, K, solver, timeout, t0, chk)
    return st, r, best, it, first_text


def prove_bound(m: Model, solver="bitwuzla", timeout=600, save=False, emit=None,
                backends=("int", "numpy", "compiled"), rounds: int = 4,
                method: str = "auto") -> dict:
    """Prove the Table 9 bound, or find violating witnesses (up to `rounds` increasingly
    large excesses; the worst is reported)."""
    t0 = _now()
    _bound_check(m)
    p = m.theory.param_dict
    rf, rmode, sf = mma.rho_of(p.get("rho", "RNE-FP32"))
    claim = (f"{m.label}: for finite inputs with no block overflow, |Phi(a,b,c) - (c + sum a_k "
             f"b_k)| <= sum_j n_j 2^(e_max,j - {p['F']}) + {'1/2' if rmode == 'RNE' else '1'} "
             f"ulp_{rf.name}(d_j) (seed 002 Table 9)")
    ins = m.ins
    why = ""
    if method in ("auto", "decomposed"):
        status, parts, why = _decomposed([_dec.structure(m)], _dec.bound_lemmas, method, solver,
                                         timeout, save, t0)
        if status is not None:
            texts = {p["sha256"]: p.pop("text") for p in parts}
            if status == "proved":
                K_, x_, cons_, excess_, U_, W_ = _bound_parts(m)
                text = smt2_text(cons_ + [(excess_ > 0).v])
                res = outcome("proved", claim, [m], _now() - t0,
                              ",".join(sorted({p["solver"] for p in parts})),
                              method="decomposed", parts=parts,
                              combination=(_dec.COMBINATION_BOUND_TR if m.theory.op == "tr_fdpa"
                                           else _dec.COMBINATION_BOUND), _texts=texts)
                res["query_sha256"] = sha256(text)
                res["seconds"] = round(_now() - t0, 3)
                res["twin"] = _bound_twin(m, solver, timeout, backends)
                res["total_seconds"] = round(_now() - t0, 3)
                if save:
                    res["saved"] = save_result("bound", res, [m], text)
                return res
            why = f"lemma {parts[-1]['lemma']} {'failed' if status == 'failed' else 'undecided'}; " \
                  f"monolithic search"
            if status == "unknown" and method == "decomposed":
                return outcome("unknown", claim, [m], _now() - t0, solver, method="decomposed",
                               parts=parts, reason=why)
    st, r, best, it, text = _bound_search(m, None, solver, timeout, backends, rounds, t0, emit)
    if best is not None:
        w, o, e_err, e_b = best
        res = outcome("refuted", claim, [m], _now() - t0, r.solver, witness=w.to_json(),
                      method="monolithic",
                      detail={"output": _hex(o, ins.d), "error": str(e_err), "bound": str(e_b),
                              "ratio": f"{float(e_err / e_b):.6g}" if e_b else "inf",
                              "rounds": it})
        res["_runs"] = [(m, w, o)]
    elif st == "unsat":
        res = outcome("proved", claim, [m], _now() - t0, r.solver, method="monolithic",
                      query_text=text, solver_version=r.version)
        res["twin"] = _bound_twin(m, solver, timeout, backends)
    else:
        res = outcome("unknown", claim, [m], _now() - t0, r.solver, method="monolithic",
                      reason=(why + "; " if why else "") + (r.reason or "no answer"))
    res["query_sha256"] = sha256(text)
    if save:
        res["saved"] = save_result("bound", res, [m], text)
    res["seconds"] = round(_now() - t0, 3)
    return res



def _bound_twin(m: Model, solver, timeout, backends, concrete_budget: float = 60):
    """Twin: the theory with F-2 fraction bits against the same bound (stated with the
    original F). For T-FDPA chains the same lemma set must fail (a lemma SAT); then a concrete
    violating input is searched for (monolithic, within `concrete_budget` seconds) and, if
    found, replayed."""
    t0 = _now()
    F = m.theory.param_dict["F"]
    tw = mutate(m, {"F": F - 2})
    d = {"claim": f"{tw.label}: the same bound (with F = {F}) on the theory with F = {F - 2}"}
    try:
        lemmas = _dec.bound_lemmas(_dec.structure(tw), F_claim=F)
    except _dec.NotDecomposable:
        lemmas = None
    if lemmas is not None:
        status, parts = _dec.run_lemmas(lemmas, solver, timeout)
        if status == "failed":
            d.update(status="sat", verdict="refuted", lemma=parts[-1]["lemma"],
                     lemma_sha256=parts[-1]["sha256"])
    budget = concrete_budget if lemmas is not None else timeout
    st, r, best, it, text = _bound_search(tw, F, solver, budget, backends, 1, _now())
    d["query_sha256"] = sha256(text)
    if best:
        d.update(status="sat", verdict="refuted", witness=best[0].to_json(),
                 error=str(best[2]), bound=str(best[3]))
    elif "status" not in d:
        d["status"] = st
    d["solver"] = r.solver
    d["seconds"] = round(_now() - t0, 3)
    return d


# ============================================================================================
# Output
# ============================================================================================

def public(res: dict) -> dict:
    """The --json object: exactly status, claim, witness, solver, seconds."""
    return {"status": res["status"], "claim": res["claim"], "witness": res["witness"],
            "solver": res["solver"], "seconds": res["seconds"]}


def render(res: dict) -> str:
    L = [f"claim: {res['claim']}"]
    st = res["status"]
    if res.get("method"):
        L.append(f"method: {res['method']}" + (f" ({len(res['parts'])} lemmas, "
                 f"{sum(1 for p in res['parts'] if p['cached'])} from the cache)" if res.get("parts") else ""))
    for p in res.get("parts", []):
        if not p["cached"]:
            L.append(f"  {p['lemma']:<22} {p['status']:<6} {p['seconds']:7.3f} s  {p['role']}")
    if res.get("witness"):
        ins = isa.lookup(res["models"][0]["instruction"])
        w = Witness.from_json(res["witness"], ins.a, ins.b, ins.c, ins.scale or "")
        L.append("witness: " + json.dumps(res["witness"]))
        L.append("  in one line: " + _min.equation(w))
        if res.get("minimized"):
            L.append("  " + _min.describe(res["minimized"]))
        for k, v in res.get("detail", {}).items():
            L.append(f"  {k}: {v if not isinstance(v, dict) else json.dumps(v)}")
    tw = res.get("twin")
    if tw:
        L.append(f"broken twin: {tw['claim']}: {tw.get('verdict', tw.get('status'))} "
                 f"({tw.get('seconds', 0):.2f} s)")
    if res.get("reason"):
        L.append(f"note: {res['reason']}")
    L.append(f"status: {st}  ({res['seconds']:.2f} s, {res['solver']})")
    for p in res.get("saved", []):
        L.append(f"saved: {p}")
    return "\n".join(L)



# ============================================================================================
# prove CLAIM --all: one job per group of instructions with one query (query.campaign)
# ============================================================================================

ALL_CLAIMS = ("symmetry", "monotonic", "bound", "unobservable")


def prove_job(claim: str, names: list[str], solver: str = "bitwuzla",
              timeout: float | None = 60, method: str = "auto", twin: bool = True,
              change: Sequence | None = None, rounds: int = 4, hint: int = 2,
              scan: float = 10, backends: Sequence[str] = ("int", "numpy", "compiled"),
              cache_dir: str | None = None) -> dict:
    """A campaign job (run in a worker): `claim` on the first instruction of a group whose
    instructions share one query (`claim_groups`); the result names the group. No record is
    written here: the driver stores it (`save_group`) from the private keys kept. cache_dir:
    proved lemmas of decomposed proofs are read from and added to that folder (shared by the
    workers of one machine; content-addressed, so a lemma is the same whoever wrote it)."""
    m = resolve(names[0])
    backends = tuple(backends)
    if cache_dir:
        CACHE.root = Path(cache_dir)
    if claim == "symmetry":
        res = prove_symmetry(m, solver, timeout, method, False, None, backends, twin, names,
                             persist=bool(cache_dir))
    elif claim == "monotonic":
        res = prove_monotonic(m, solver, timeout, False, None, backends, hint=hint, scan=scan,
                              persist=bool(cache_dir))
    elif claim == "bound":
        res = prove_bound(m, solver, timeout, False, None, backends, rounds, method)
    elif claim == "unobservable":
        res = prove_unobservable(m, change[0], change[1], solver=solver, timeout=timeout,
                                 method=method, backends=backends)
    else:
        raise BadInput(f"prove --all takes {', '.join(ALL_CLAIMS)}, not {claim!r}")
    res["group"] = list(names)
    res["claim"] = res["claim"] + _sparse_note(names)
    return res


def _applies(claim: str, names: list[str], change) -> str:
    """Why `claim` does not apply to a group ("" when it does)."""
    m = resolve(names[0])
    if claim == "bound":
        try:
            _bound_check(m)
        except BadInput as e:
            if "accumulate" in str(e):
                return "accumulate = add, operand conversion, a k order or an accumulator conversion"
            return (f"{m.theory.op}" + (" with block scales" if m.ins.scale else "")
                    + ": outside the T-FDPA/TR-FDPA/GTR-FDPA bound")
    if claim == "unobservable" and change[0] not in m.theory.param_dict:
        return f"no parameter {change[0]}"
    return ""


def claim_groups(claim: str, patterns: Sequence[str] = (), change=None
                 ) -> tuple[list[list[str]], dict[str, int]]:
    """The catalog instructions matching `patterns` (fnmatch; all when empty), grouped by one
    query (`_arith_key`: theory content without its id, operand formats, K), restricted to the
    groups the claim applies to. Returns (groups, {reason: instructions left out})."""
    cat = isa.catalog()
    names: list[str] = []
    for pat in patterns or ["*"]:
        hit = [n for n in cat if fnmatch.fnmatch(n, pat)]
        if not hit:
            raise BadInput(f"pattern {pat!r} matches no instruction")
        names.extend(hit)
    out, left = [], {}
    for g in query_groups(names):
        why = _applies(claim, g, change)
        if why:
            left[why] = left.get(why, 0) + len(g)
        else:
            out.append(g)
    return out, left


def stored_verdicts(claim: str, change=None) -> dict[str, str]:
    """instruction -> a stored record that decides `claim` for it: a proof in proofs/<claim>/
    whose broken twin was refuted and whose theories are unchanged, or a counterexample in
    counterexamples/<claim>/ (whose witness the store tests replay on today's theories), from
    the store's and the shipped records."""
    from .. import paths
    out: dict[str, str] = {}
    tag = None if change is None else f"parameter {change[0]} = {change[1]!r} "
    ts = _theory.default()

    def current(rec) -> bool:          # a proof about a theory that has changed is stale
        try:
            return all(ts.get(t).hash() == h for t, h in (rec.get("theories") or {}).items())
        except ValueError:
            return False
    for d in paths.record_dirs("proofs"):
        for p in sorted((d / claim).glob("*.json")):
            rec = json.loads(p.read_text())
            if rec.get("verdict") != "proved" or (rec.get("twin") or {}).get("status") != "sat":
                continue
            if not current(rec):
                continue
            if tag and not rec.get("claim", "").startswith(tag):
                continue
            for n in rec.get("instructions") or [m["instruction"] for m in rec.get("models", [])]:
                out.setdefault(n, str(p))
    for d in paths.record_dirs("counterexamples"):
        for p in sorted((d / claim).glob("*.json")):
            rec = json.loads(p.read_text())
            if tag and not rec.get("claim", "").startswith(tag):
                continue
            for n in (rec.get("tool") or {}).get("group") or [rec["models"][0]["instruction"]]:
                out.setdefault(n, str(p))
    return out


def runs_of(claim: str, m: Model, r: dict, backends=("int", "numpy", "compiled")) -> list:
    """The witness runs [(model, witness, output)] of a refutation rebuilt from its JSON result
    (a progress-store line) and replayed again here: so a stored refutation survives the loss
    of the process that found it (`save_group` uses it when the private runs are gone)."""
    ins = m.ins
    wj = lambda d: Witness.from_json(d, ins.a, ins.b, ins.c, ins.scale or "")
    det = r.get("detail") or {}
    ws = [wj(r["witness"])]
    if claim == "symmetry":
        ws.append(wj(det["negated_input"]))
    elif claim == "monotonic":
        ws.append(wj(det["witness2"]))
    runs = [(m, w, replay([m], w, backends)[m.label]) for w in ws]
    if claim == "monotonic" and not value_lt(runs[1][2], runs[0][2], ins.d):
        raise InternalError(f"{m.label}: the stored monotonicity witness does not replay")
    if claim == "symmetry" and _approx_int(runs[1][2], _neg_int(runs[0][2], ins.d), ins.d):
        raise InternalError(f"{m.label}: the stored symmetry witness does not replay")
    return runs


def save_group(claim: str, change=None):
    """on_result of prove --all --save: the group's record through proofs.save_result (in the
    driver: workers write nothing)."""
    def save(job, r: dict) -> dict:
        if r.get("status") not in ("proved", "refuted"):
            return {}
        m = resolve(r["group"][0])
        if r["status"] == "refuted" and "_runs" not in r and claim != "unobservable":
            r["_runs"] = runs_of(claim, m, r)
        models = [m]
        if claim == "unobservable":
            p, v = change
            models = [m, mutate(m, {p: v}, label=f"{m.label}[{p}={v}]")]
        return {"saved": save_result(claim, r, models, r.get("query_text") or "")}
    return save


def summarize(claim: str, groups: list[list[str]], results: list[dict], stored: dict,
              left: dict) -> dict:
    """Coverage of one claim: instructions and groups by verdict (groups decided by a stored
    record counted as that record says). A proof whose broken twin was not refuted counts as
    unknown."""
    by = {r["group"][0]: r for r in results if r.get("group")}
    by.update({r["job"].split("/", 1)[1]: r for r in results if not r.get("group")})
    row = {"claim": claim, "instructions": sum(map(len, groups)), "groups": len(groups),
           "proved": 0, "refuted": 0, "unknown": 0, "error": 0, "stored_before": 0,
           "groups_proved": 0, "groups_refuted": 0, "groups_unknown": 0, "groups_error": 0,
           "not_applicable": left, "unknowns": []}
    for g in groups:
        r = by.get(g[0])
        if r is None:
            st = "refuted" if "counterexamples" in stored.get(g[0], "") else "proved"
            row["stored_before"] += len(g)
        else:
            st = r["status"] if r["status"] in ("proved", "refuted", "unknown") else "error"
            if st == "proved" and (r.get("twin") or {}).get("status") != "sat":
                st = "unknown"
            if st in ("unknown", "error"):
                why = r.get("reason", "")
                if r["status"] == "proved":
                    tw = r.get("twin") or {}
                    why = (f"proved, but its broken twin was not refuted ({tw.get('status', 'none')}"
                           f"{', %.1f s' % tw['seconds'] if tw.get('seconds') else ''})")
                row["unknowns"].append({"group": g, "status": r["status"],
                                        "solver": r.get("solver", ""),
                                        "seconds": r.get("seconds"), "reason": why})
        row[st] += len(g)
        row["groups_" + st] += 1
    return row


def prove_all(args) -> int:
    """`mmaformal prove CLAIM --all [PATTERN ...]`: one campaign job per group. Exit 0: every
    group proved; 1: some refuted, none unknown; 4: some unknown or failed."""
    claim = args.claim
    if claim not in ALL_CLAIMS:
        raise BadInput(f"prove {claim} takes no --all (only {', '.join(ALL_CLAIMS)})")
    change = None
    if claim == "unobservable":
        if not args.change or "=" not in args.change:
            raise BadInput("prove unobservable --all PARAM=VALUE [PATTERN ...]")
        k, v = args.change.split("=", 1)
        change = (k.strip(), _parse_value(v))
    groups, left = claim_groups(claim, list(args.patterns or []), change)
    if not groups:
        raise BadInput(f"prove {claim} applies to none of the {sum(left.values())} "
                       f"instructions matched ({'; '.join(left)})")
    stored = {} if args.redo else stored_verdicts(claim, change)
    # largest groups first: an interrupted campaign has decided the most instructions
    todo = sorted((g for g in groups if not all(n in stored for n in g)),
                  key=(len if getattr(args, "smallest_first", False) else lambda g: -len(g)))
    limit = _campaign.default_limit(args)
    backends = list(parse_backends(args.replay))
    import tempfile
    tmp = None if args.save else tempfile.TemporaryDirectory(prefix="mmaformal-lemmas-")
    cache_dir = str(lemma_dir()) if args.save else tmp.name
    jobs = [_campaign.Job(f"{claim}/{g[0]}", "mmaformal.query.prove:prove_job",
                          dict(claim=claim, names=g, solver=args.solver, timeout=args.timeout,
                               method=getattr(args, "method", "auto"), twin=not args.no_twin,
                               change=list(change) if change else None,
                               rounds=getattr(args, "rounds", 4), hint=getattr(args, "hint", 2),
                               scan=getattr(args, "scan", 10), backends=backends,
                               cache_dir=cache_dir), limit)
            for g in todo]
    opts = _campaign.options_of(args)
    if not opts["progress"]:
        opts["progress"] = _campaign.store_path(f"prove-{claim}", jobs)
    if args.save:
        from .. import paths
        for name in ("proofs", "counterexamples"):
            try:
                paths.store(name)
            except ValueError as e:
                raise BadInput(str(e).splitlines()[0]) from None
    banner = None if args.json else (
        f"prove {claim} --all: {sum(map(len, groups))} instructions in {len(groups)} groups; "
        f"{len(groups) - len(todo)} groups have a stored verdict; {len(jobs)} jobs on "
        f"{'Ray ' + opts['ray'] if opts['ray'] else 'a local pool'}; progress store "
        f"{opts['progress']}")
    t0 = time.perf_counter()
    try:
        results = _campaign.run(jobs, as_json=args.json, banner=banner,
                                on_result=save_group(claim, change) if args.save else None,
                                **opts)
    except _campaign.Interrupted as e:
        print(f"mmaformal prove: {e}", file=sys.stderr, flush=True)
        return 130
    finally:
        if tmp is not None:
            tmp.cleanup()
    row = summarize(claim, groups, results, stored, left)
    row["wall_seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        print(json.dumps({"summary": row}, sort_keys=True))
    else:
        print(f"| claim | instructions | groups | proved | refuted | unknown | error |\n"
              f"|---|---|---|---|---|---|---|\n"
              f"| {claim} | {row['instructions']} | {row['groups']} | {row['proved']} | "
              f"{row['refuted']} | {row['unknown']} | {row['error']} |")
        for u in row["unknowns"]:
            print(f"{u['status']}: {u['group'][0]} (+{len(u['group']) - 1}) {u['solver']} "
                  f"{u['seconds']} s: {u['reason']}")
        if left:
            print("not applicable: " + "; ".join(f"{k}: {v}" for k, v in left.items()))
        print(f"wall {row['wall_seconds']} s")
    if row["unknown"] or row["error"]:
        return EXIT_UNKNOWN
    return EXIT_REFUTED if row["refuted"] else EXIT_OK


def add_all_options(c: argparse.ArgumentParser, jobs_flag: bool = True,
                    twin_flag: bool = True) -> None:
    """The options of `prove CLAIM --all` (and the campaign runner's)."""
    c.add_argument("--all", action="store_true",
                   help="every catalog instruction (or those matching the PATTERNs): one job per "
                        "group of instructions with one query, through the campaign runner")
    c.add_argument("--redo", action="store_true",
                   help="with --all: also the groups that have a stored verdict")
    c.add_argument("--smallest-first", action="store_true",
                   help="with --all: the smallest groups first (default: the largest first, so "
                        "an interrupted campaign has decided the most instructions)")
    if twin_flag:
        c.add_argument("--no-twin", action="store_true", help="skip the broken twins (faster; "
                       "a proof without its twin is not stored)")
    _campaign.add_options(c, jobs_flag)


# ============================================================================================
# CLI (wired by the lead into mmaformal.cli)
# ============================================================================================

def add_parser(subparsers) -> argparse.ArgumentParser:
    q = subparsers.add_parser("prove", help="prove or refute a claim",
                              description=__doc__.split("\n\n")[0])
    sub = q.add_subparsers(dest="claim", metavar="CLAIM", parser_class=type(q))
    sub.required = True

    def common(c, witness=False):
        add_common(c, save="store proofs in proofs/ and refutations in counterexamples/",
                   replay=("int,numpy,compiled", "concrete back-ends that replay witnesses"),
                   witness=witness)
        c.set_defaults(func=run)

    c = sub.add_parser("equiv", help="A and B give identical bits for every input")
    c.add_argument("A")
    c.add_argument("B")
    c.add_argument("--instr", metavar="NAME")
    c.add_argument("--where", action="append", default=[], metavar="C")
    c.add_argument("--method", choices=("auto", "decomposed", "monolithic"), default="auto",
                   help="decomposed: per-block lemmas, for chains that differ only in the "
                        "zero-sign/overflow rules (auto: those first, else the monolithic query)")
    common(c, witness=True)
    c = sub.add_parser("symmetry", help="Phi(-A, B, -C) ~ -Phi(A, B, C)")
    c.add_argument("targets", nargs="*", metavar="TARGET",
                   help="instructions, fnmatch patterns or theory ids (grouped by identical "
                        "arithmetic: one proof per group)")
    c.add_argument("--set", choices=sorted(SETS), help="; ".join(f"{k}: {v}" for k, v in SETS.items()))
    c.add_argument("--method", choices=("auto", "decomposed", "monolithic"), default="auto")
    add_all_options(c)
    common(c)
    c = sub.add_parser("monotonic", help="a larger addend never gives a smaller output")
    c.add_argument("A", nargs="?", help="a model spec (with --all: an instruction pattern)")
    c.add_argument("patterns", nargs="*", metavar="PATTERN", help=argparse.SUPPRESS)
    c.add_argument("--scan", type=float, default=10, metavar="SEC",
                   help="first a concrete witness search on numpy lanes for SEC seconds (0: none)")
    c.add_argument("--hint", type=int, default=2, metavar="N",
                   help="then a witness query with all products but the first N zero, in half "
                        "the time (0: the full query only)")
    add_all_options(c)
    common(c)
    c = sub.add_parser("bound", help="the error bound of [Xie2025] Table 9")
    c.add_argument("A", nargs="?", help="a model spec (with --all: an instruction pattern)")
    c.add_argument("patterns", nargs="*", metavar="PATTERN", help=argparse.SUPPRESS)
    c.add_argument("--rounds", type=int, default=4, help="witness-improvement rounds")
    c.add_argument("--method", choices=("auto", "decomposed", "monolithic"), default="auto")
    add_all_options(c)
    common(c)
    c = sub.add_parser("unobservable", help="changing one parameter changes no output bit")
    c.add_argument("A", help="a model spec (with --all: PARAM=VALUE)")
    c.add_argument("change", metavar="PARAM=VALUE", nargs="?",
                   help="(with --all: an instruction pattern)")
    c.add_argument("patterns", nargs="*", metavar="PATTERN", help=argparse.SUPPRESS)
    c.add_argument("--method", choices=("auto", "decomposed", "monolithic"), default="auto")
    add_all_options(c)
    common(c, witness=True)
    for _mod in _USER_CLAIMS.values():     # claims written with the Claim API (claims/)
        _mod.add_parser(sub, common)
    _ieee.add_parser(sub)                  # fp.add/mul/fma against SMT-LIB FP (query/ieee)
    return q


def _exit(status: str) -> int:
    return {"proved": EXIT_OK, "refuted": EXIT_REFUTED, "unknown": EXIT_UNKNOWN}.get(status, EXIT_INTERNAL)


def run(args) -> int:
    if args.claim == "ieee":
        return _ieee.run(args)
    if args.claim in _USER_CLAIMS:
        return _USER_CLAIMS[args.claim].run(args)
    if getattr(args, "all", False):
        if args.claim == "symmetry":
            args.patterns = list(args.targets)
        elif args.claim == "unobservable":
            args.change, args.patterns = args.A, ([args.change] if args.change else []) + args.patterns
        else:
            args.patterns = ([args.A] if args.A else []) + args.patterns
        return run_verb("prove", lambda: prove_all(args), _exit, render, public, args.json)

    def bad(msg):
        raise BadInput(msg)
    if args.claim in ("monotonic", "bound", "unobservable") and (
            args.A is None or args.patterns or (args.claim == "unobservable" and not args.change)):
        form = "A PARAM=VALUE" if args.claim == "unobservable" else "A"
        return run_verb("prove", lambda: bad(f"prove {args.claim}: expected {form} (or --all "
                                             f"[PATTERN ...])"), _exit, render, public, args.json)

    def compute():
        backends = parse_backends(args.replay)
        kw = dict(solver=args.solver, timeout=args.timeout, save=args.save, emit=args.emit_smt2,
                  backends=backends)
        if args.save:
            CACHE.root = lemma_dir()
        if args.claim == "symmetry":
            groups = symmetry_groups(args.targets, args.set)
            if not groups:
                raise BadInput("prove symmetry: name instructions, patterns, theory ids or --set")
            if len(groups) == 1:
                names = groups[0]
                results = [prove_symmetry(resolve(names[0]), args.solver, args.timeout,
                                          args.method, args.save, args.emit_smt2, backends,
                                          not args.no_twin, names)]
            else:
                if args.emit_smt2:
                    raise BadInput("--emit-smt2 takes one group (name one instruction)")
                results = prove_symmetry_many(groups, args.jobs or 0, solver=args.solver,
                                              timeout=args.timeout, method=args.method,
                                              save=args.save, backends=backends,
                                              twin=not args.no_twin)
            for r in results:
                if r["status"] == "error":
                    if r.get("exception") == "InternalError":
                        raise InternalError(r["reason"])
                    raise BadInput(r["reason"])
            if len(results) == 1:
                res = results[0]
            else:
                if args.json:
                    print(json.dumps([dict(public(r), instructions=r["group"]) for r in results],
                                     indent=1))
                else:
                    for r in results:
                        print(f"{r['status']:<8} {r['seconds']:8.2f} s  {r.get('method', ''):<10} "
                              f"{len(r['group']):>3} instr  {r['group'][0]}"
                              + (f"  twin {r['twin'].get('verdict', r['twin']['status'])}" if r.get("twin") else "")
                              + (f"  ({r['reason']})" if r.get("reason") else ""))
                sts = {r["status"] for r in results}
                return EXIT_REFUTED if "refuted" in sts else EXIT_UNKNOWN if "unknown" in sts else EXIT_OK
        else:
            if args.claim == "equiv":
                A, B = resolve_pair(args.A, args.B, args.instr)
                res = prove_equiv(A, B, args.where, method=args.method, raw=args.raw,
                                  minimize_timeout=args.minimize_timeout, **kw)
            elif args.claim == "unobservable":
                if "=" not in args.change:
                    raise BadInput(f"expected PARAM=VALUE, got {args.change!r}")
                k, v = args.change.split("=", 1)
                res = prove_unobservable(resolve(args.A), k.strip(), _parse_value(v),
                                         method=args.method, raw=args.raw,
                                         minimize_timeout=args.minimize_timeout, **kw)
            elif args.claim == "monotonic":
                res = prove_monotonic(resolve(args.A), hint=args.hint, scan=args.scan, **kw)
            elif args.claim == "bound":
                res = prove_bound(resolve(args.A), rounds=args.rounds, method=args.method, **kw)
            else:  # pragma: no cover - argparse restricts the choices
                raise BadInput(f"unknown claim {args.claim!r}")
        return res

    return run_verb("prove", compute, lambda res: _exit(res["status"]), render, public, args.json)
