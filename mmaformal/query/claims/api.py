"""Layer 5, query/claims/api: claims that users write over the symbolic model.

A `Claim` is a statement about one dot product of a model (`Model`: a theory on an instruction):

    from mmaformal.query.claims import Claim
    from mmaformal.query.model import resolve
    m = resolve("sm80/mma.m16n8k8.f32.f16.f16.f32")
    claim = Claim("sign", m, "D is not negative when a, b, c are",
                  statement=lambda s: s.out.extract(31, 31).v == 0,
                  constraint="abs(a,b,c) < 2^8 and int(a,b)")   # + a constraint on signs ...
    res = claim.prove(timeout=60)          # {"status": "proved" | "refuted" | "unknown", ...}

- `statement(s)`: a z3 Bool over `s` (a `Symbolic`: `s.inputs` the free variables, `s.a`,
  `s.b`, `s.c` the padded operands, `s.out` the output D, `s.K` the z3 back-end, `s.model`);
  a wrapped Bool of mmaformal.bits is accepted too;
- `constraint`: a text of the constraint language (mmaformal.query.claims.constraint), a
  Constraint, or a function of `s` giving z3 Bools; inputs outside it are outside the claim;
- `check(w, d)`: optional, the statement decided concretely on a witness w and output bits d
  (exact arithmetic, no solver): a refutation is reported only when the replayed output fails it;
- `twin`: the broken twin, a Claim (or a function of this claim giving one) that must be
  refuted (SAT) for a proof to be stored; `output`: an optional function applied to D before the
  statement sees it (a twin can mutate the output: lambda d: d ^ 1); `cut(s, assertions)`: an
  optional over-approximation of the negated claim (fresh variables for hard subterms such as
  products, with facts they imply) solved first: UNSAT proves the claim, a SAT answer that does
  not replay as a refutation sends the whole query to the solver;
- `candidates()`: optional concrete inputs tried before any query: one that replays and fails
  `check` is a refutation (method "candidate"); `decomposed(solver, timeout, deadline)`:
  optional, a proof piece by piece (a dict with status "proved" / "failed" / "unknown", the
  lemma parts and the combination argument, or None where it does not apply) tried before the
  monolithic query, which gets the time left when the lemmas do not all hold (its dict may
  carry `_texts`, the lemma texts by sha256, for a subclass that stores them); `method`:
  "auto" (all of these in that order), "decomposed" (no monolithic query) or "monolithic"
  (the query alone).

`Claim.smt2()` is the negated claim as SMT-LIB2 (deterministic text: `model.smt2_text`), what
the solver answers: UNSAT proves the claim, SAT gives a witness that is replayed on the
concrete back-ends (`model.replay`), checked against the constraint concretely and against
`check`; a time-out is "unknown", never "proved". `Claim.prove(...)` runs the claim and its twin;
`Claim.save(res)` writes proofs/<name>/<slug>.json + .smt2 (store.write_proof: the record's
theory hashes, its query hash and its refuted twin, the layout `record_problems` checks; slug:
the model's label and the first 12 hex digits of the claim's query hash, `record_name`). It
stores the methods in `SAVES`: monolithic proofs here; a subclass that can also store the
lemmas of its decomposed proofs (a layer higher, in proofs/cache) adds "decomposed" and
overrides `save` for them (claims.exact.ExactClaim), with the same record fields
(`record_fields`). Refutations and unknowns are never stored as proofs.

May import: mmaformal.query.model, .frame, .solvers, .store, claims.core, claims.constraint,
the layers below (simulate lazily), z3 (lazily).
Invariant: "proved" only from an UNSAT answer of a solver on the exported text (the monolithic
query, or every lemma of a decomposed proof, whose combination argument is recorded with it); a
witness that does not replay and fail the claim concretely is an InternalError (a candidate
that does not fail is skipped), never a refutation.
"""
from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Callable, Sequence

from ...bits import BV, Z3Backend
from ..frame import BadInput, InternalError
from ..model import Inputs, Model, Witness, check, portable, replay, smt2_text
from ..store import sha256, write_proof
from .constraint import Constraint, parse_constraint
from .core import outcome

__all__ = ["Symbolic", "Claim"]


@dataclasses.dataclass
class Symbolic:
    """What a statement sees: the free inputs of one dot product and the model's output."""

    K: Z3Backend
    model: Model
    inputs: Inputs
    a: list
    b: list
    c: BV
    sa: list | None
    sb: list | None
    out: BV


def _bool(x):
    return x.v if hasattr(x, "v") and not hasattr(x, "sexpr") else x


@dataclasses.dataclass
class Claim:
    """A statement about model `model` for every input satisfying `constraint`."""

    name: str
    model: Model
    text: str
    statement: Callable[[Symbolic], object]
    constraint: "str | Constraint | Callable | None" = None
    check: "Callable[[Witness, int], bool] | None" = None
    twin: "Claim | Callable[[Claim], Claim] | None" = None
    output: "Callable[[BV], BV] | None" = None
    cut: "Callable[[Symbolic, list], list] | None" = None
    candidates: "Callable[[], list] | None" = None
    decomposed: "Callable[[str, float | None, float | None], dict | None] | None" = None
    method: str = "auto"
    extra: dict = dataclasses.field(default_factory=dict)

    #: the methods whose proofs `save` stores (`prove(save=True)` reports the others unstored)
    SAVES = ("monolithic",)

    def __post_init__(self):
        if not re.fullmatch(r"[A-Za-z0-9._-]+", self.name):
            raise BadInput(f"claim name {self.name!r}: letters, digits, . _ - only")
        if self.constraint is None or isinstance(self.constraint, (str, Constraint)):
            self.constraint = parse_constraint(self.constraint)

    # ----------------------------------------------------------------------------------------

    def claim_text(self) -> str:
        """The sentence proved or refuted (printed and stored)."""
        c = self.constraint
        where = c.text() if isinstance(c, Constraint) else "the constraint"
        return f"{self.model.label}: {self.text}, for every input satisfying {where}"

    def symbolic(self):
        """(Symbolic, [constraints], the statement), on a fresh z3 back-end."""
        K = Z3Backend()
        m = self.model
        inp = Inputs.for_model(K, m)
        a, b, c, sa, sb = inp.padded(m)
        out = m.dot(K, a, b, c, sa, sb)
        if self.output is not None:
            out = self.output(out)
        s = Symbolic(K, m, inp, a, b, c, sa, sb, out)
        if isinstance(self.constraint, Constraint):
            cons = self.constraint.symbolic(inp)
        else:
            cons = [_bool(x) for x in self.constraint(s)]
        cons += list(m.sparse_valid(K, a))
        return s, cons, _bool(self.statement(s))

    def assertions(self, obligations: bool = False, cut: bool = True):
        """(Symbolic, the assertions of the negated claim). With `cut` and a `cut` function,
        the assertions it returns: an over-approximation (fresh variables for subterms, with
        facts the subterms imply), so UNSAT of it proves the claim too."""
        import z3
        s, cons, st = self.symbolic()
        extra = [portable(o) for o in s.K.obligations] if obligations else []
        out = cons + [z3.Not(st)] + extra
        if cut and self.cut is not None:
            out = self.cut(s, out)
        return s, out

    def smt2(self, obligations: bool = False, cut: bool = True) -> str:
        """The negated claim as SMT-LIB2 (UNSAT: the claim holds)."""
        return smt2_text(self.assertions(obligations, cut)[1])

    def twin_claim(self) -> "Claim | None":
        if self.twin is None or isinstance(self.twin, Claim):
            return self.twin
        return self.twin(self)

    # ----------------------------------------------------------------------------------------

    def solve(self, solver: str = "bitwuzla", timeout: float | None = None,
              backends: Sequence[str] = ("int", "numpy")) -> dict:
        """One verdict without the twin: outcome() with status proved / refuted / unknown, the
        query text, and for a refutation the witness (replayed) and the output bits."""
        t0 = time.perf_counter()
        why = ""
        if self.candidates is not None and self.method != "monolithic":
            for w in self.candidates():
                try:
                    d = self._replay(w, backends, spurious_ok=True)
                except (_Spurious, _Overflow):
                    continue
                return outcome("refuted", self.claim_text(), [self.model],
                               time.perf_counter() - t0, "candidate (concrete)",
                               witness=w.to_json(), method="candidate", query_text="",
                               detail={"output": hex(d)}, _w=w, _d=d)
        if self.decomposed is not None and self.method != "monolithic":
            deadline = None if timeout is None else t0 + timeout
            dec = self.decomposed(solver, timeout, deadline)
            secs = time.perf_counter() - t0
            if dec is not None and dec.get("status") == "proved":
                return outcome("proved", self.claim_text(), [self.model], secs,
                               ",".join(sorted({p["solver"] for p in dec["parts"]})),
                               method="decomposed", parts=dec["parts"], query_text="",
                               combination=dec["combination"], _texts=dec.get("_texts", {}))
            if dec is None or dec.get("status") is None:
                why = f"not decomposed ({(dec or {}).get('why', 'no decomposition')})"
            else:
                last = dec["parts"][-1]
                why = (f"decomposed: lemma {last['lemma']} "
                       f"{'failed' if dec['status'] == 'failed' else 'undecided'}")
            if self.method == "decomposed":
                return outcome("unknown", self.claim_text(), [self.model], secs, solver,
                               method="decomposed", parts=(dec or {}).get("parts", []),
                               query_text="", reason=why)
            why += "; monolithic query"
        obligations, cut = False, self.cut is not None
        while True:
            s, asserts = self.assertions(obligations, cut)
            text = smt2_text(asserts)
            left = None if timeout is None else max(0.1, timeout - (time.perf_counter() - t0))
            r = check(text, solver, left)
            secs = time.perf_counter() - t0
            if r.status == "unsat":
                return outcome("proved", self.claim_text(), [self.model], secs, r.solver,
                               method="monolithic", query_text=text, _result=r,
                               solver_version=r.version, reason=why)
            if r.status != "sat":
                return outcome("unknown", self.claim_text(), [self.model], secs, r.solver,
                               method="monolithic", query_text=text, _result=r,
                               reason="; ".join(x for x in (why, r.reason or
                                                            f"no answer in {timeout} s") if x))
            w = s.inputs.witness(r.model)
            try:
                d = self._replay(w, backends, spurious_ok=cut)
            except _Spurious:                   # a model of the cut only: solve the whole query
                cut = False
                continue
            except _Overflow:
                if obligations:
                    raise InternalError(f"{self.name}: the witness overflows a checked "
                                        f"operation even with the obligations asserted") from None
                obligations = True
                continue
            return outcome("refuted", self.claim_text(), [self.model], secs, r.solver,
                           witness=w.to_json(), method="monolithic", query_text=text,
                           _result=r, detail={"output": hex(d)}, _w=w, _d=d, reason=why)

    def _replay(self, w: Witness, backends, spurious_ok: bool = False) -> int:
        """The output bits of the witness (every back-end agreeing); InternalError when the
        witness leaves the constraint or, concretely, satisfies the statement."""
        try:
            d = replay([self.model], w, backends)[self.model.label]
        except InternalError as e:
            if "overflows a checked operation" in str(e):
                raise _Overflow() from None
            raise
        if self.output is not None:
            d = int(self.output(BV(_int_k(), self.model_out_width(), False, d)).v)
        if isinstance(self.constraint, Constraint) and not self.constraint.holds(w):
            raise InternalError(f"{self.name}: the solver's witness does not satisfy the "
                                f"constraint {self.constraint.text()!r} concretely")
        if self.check is not None and self.check(w, d):
            if spurious_ok:
                raise _Spurious()
            raise InternalError(f"{self.name}: the solver's witness (output {hex(d)}) satisfies "
                                f"the statement when checked concretely")
        return d

    def model_out_width(self) -> int:
        from ... import fp
        return fp.fmt(self.model.ins.d).storage

    def prove(self, solver: str = "bitwuzla", timeout: float | None = None,
              backends: Sequence[str] = ("int", "numpy"), twin: bool = True,
              save: bool = False) -> dict:
        """The claim, then (when proved) its broken twin, which must be refuted; with `save`
        a proof with its refuted twin is stored (``save``)."""
        res = self.solve(solver, timeout, backends)
        tw = self.twin_claim() if twin else None
        if res["status"] == "proved" and tw is not None:
            tr = tw.solve(solver, timeout, backends)
            res["twin"] = {"claim": tr["claim"], "status": {"refuted": "sat", "proved": "unsat"}.get(
                               tr["status"], "unknown"),
                           "verdict": tr["status"], "solver": tr["solver"], "seconds": tr["seconds"],
                           "method": tr["method"],
                           "query_sha256": sha256(tr["query_text"]) if tr.get("query_text") else None,
                           "witness": tr["witness"],
                           "outputs": tr["detail"]}
            res["total_seconds"] = round(res["seconds"] + tr["seconds"], 3)
            if tr["status"] != "refuted":
                res["reason"] = (f"the broken twin was not refuted ({tr['status']}): the proof is "
                                 f"not stored")
        if save and res["status"] == "proved" and res["method"] not in self.SAVES:
            res["reason"] = "; ".join(x for x in (res.get("reason"), (
                f"a {res['method']} proof is not stored (records of claim {self.name} hold "
                f"{' and '.join(self.SAVES)} proofs: solve with method monolithic to store one)"
            )) if x)
        elif save and res["status"] == "proved":
            if res.get("twin") and res["twin"]["verdict"] == "refuted":
                res["saved"] = [str(self.save(res))]
        return res

    def saveable(self, res: dict) -> None:
        """BadInput unless `res` is a proof with a refuted broken twin, of a method in SAVES."""
        tw = res.get("twin")
        if res["status"] != "proved" or not tw or tw.get("verdict") != "refuted":
            raise BadInput(f"{self.name}: only a proof with a refuted broken twin is stored")
        if res.get("method") not in self.SAVES:
            raise BadInput(f"{self.name}: a {res.get('method')} proof is not stored here")

    def record_name(self, query_text: str) -> str:
        """The record's file name (no suffix): the model's label and the first 12 hex digits
        of the sha256 of the claim's query (a proof under another constraint is another
        record)."""
        return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{self.model.label}--{sha256(query_text)[:12]}")

    def record_fields(self, res: dict) -> dict:
        """The fields a record of this claim carries whatever its method: instructions,
        models, theory hashes, the twin, the time with the twin's, the constraint, `extra`."""
        m = self.model
        out = {"instructions": [m.ins.name], "models": [m.spec()],
               "theories": {m.theory.id: m.base.hash()},
               "total_seconds": res.get("total_seconds"), "twin": res["twin"], **self.extra}
        if isinstance(self.constraint, Constraint):
            out["constraint"] = self.constraint.text()
        return out

    def save(self, res: dict, root: Path | None = None) -> Path:
        """Store a monolithic proof with its refuted twin: proofs/<name>/<slug>.json + .smt2
        (`root`: a proofs/ folder instead of the store's)."""
        self.saveable(res)
        if res["method"] != "monolithic":
            raise BadInput(f"{self.name}: Claim.save stores monolithic proofs")
        tw = res["twin"]
        extra = {"method": "monolithic", **self.record_fields(res)}
        return write_proof(self.name, self.record_name(res["query_text"]), res["claim"],
                           res["query_text"], res["_result"], tw["claim"], _TwinResult(tw), {},
                           root=root, extra=extra)


class _Overflow(Exception):
    pass


class _Spurious(Exception):
    pass


def _int_k():
    from ...bits import INT
    return INT


class _TwinResult:
    """A solvers.Result-like view of a twin dict (write_proof reads status, solver, seconds,
    model)."""

    def __init__(self, tw: dict):
        self.status, self.solver, self.seconds = tw["status"], tw["solver"], tw["seconds"]
        self.model = {}
