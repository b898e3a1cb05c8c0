"""Layer 5, query/claims/exact: the claim "D is the exact sum a.b + c" under a constraint.

    mmaformal prove exact INSTR --where 'CONSTRAINT' [--rounded] [--save] [--json]
                                [--solver S] [--timeout S] [--no-twin] [--method M]

For every input satisfying the constraint (mmaformal.query.claims.constraint; every input is
also taken finite: the exact sum of a NaN or an Inf is not defined), the output D of the
instruction's model equals

- floating-point instructions: the exact value c + sum_k a_k b_k (block-scaled instructions:
  c + sum_k scale_a(k) scale_b(k) a_k b_k), computed in fixed point wide enough to hold every
  product and c exactly (no rounding anywhere); D must be finite and equal to it (+0 = -0);
  with --rounded, D equals that value correctly rounded once to the output format
  (round-to-nearest-even, Inf on overflow, +0 = -0);
- integer instructions: the exact integer c + sum_k a_k b_k, i.e. the accumulation neither wraps
  nor saturates (the claim says the constraint keeps the sum inside the output's range);
  --rounded is meaningless there and refused, as are b1 (population-count) instructions.

The broken twin, which must be refuted for a proof to be stored: the same claim with every
magnitude bound of the constraint raised by one bit (abs(x) < 2^p -> abs(x) < 2^(p+1)), so a
stored proof says the bound is tight; a constraint without a magnitude bound gets the twin
"D with its last bit flipped is exact", refuted whenever the constraint admits an input. A proof
whose bound is not the largest is reported proved, with the twin's verdict, and not stored.
Refutations are replayed on the concrete back-ends and the output is compared with the exact
value computed in Fractions (`exact_value`, `rne`) before being reported.

Written with the Claim API (mmaformal.query.claims.api): `exact_claim` builds the Claim. How it
is solved (--method): "auto" first replays concrete candidate inputs (the largest admissible
magnitudes in the first n products: a quick refutation where the sum outgrows the output),
then, for T-FDPA chains without --rounded, the decomposed proof of
mmaformal.query.claims.exact_fdpa (lemmas per product, per block term and per alignment
exponent, with COMBINATION_EXACT_FDPA), then the monolithic query with the time left. The
lemmas are solved by the one runner of the decomposed proofs (claims.common.run_lemmas: stops
at the first lemma not proved; with --save, proved lemmas stored in proofs/cache are reused).

--save stores a proof whose broken twin was refuted (`ExactClaim`), either way it was proved:
a monolithic one as proofs/exact/<model>--<h>.json + .smt2 (Claim.save); a decomposed one as
prove's decomposed claims store theirs: the record proofs/exact/<model>--<h>.json (h: the first
12 hex digits of the sha256 of the claim's monolithic query, query_sha256, so both are named
alike) with method "decomposed", the lemma list `parts` (name, role, sha256, solver, seconds)
and the combination argument, and each lemma's text and verdict in proofs/cache/ (written only
then, through the solver-result cache's writer, unless a usable copy is stored already), which
``mmaformal store pack`` folds into its packs. The record names the instruction and its
primary theory's hash, so prove.stored_verdicts("exact") counts it. A refutation, an unknown,
or a proof whose twin was not refuted writes nothing.

Its place in the query order: beside prove's built-in claims (after claims.common and
claims.exact_fdpa, whose runner and lemmas it uses); query.prove names it (USER_CLAIMS).

May import: claims.api, claims.common, claims.constraint, claims.exact_fdpa,
mmaformal.query.model, .frame, .cache, .store, .solvers, fp, bits, isa, the standard library
(simulate lazily), z3 (lazily).
Invariant: the symbolic exact sum and `exact_value` are independent of the instruction's model
(they read only the operand formats); the model is evaluated only through Model.dot (the
decomposition reads the trace of that evaluation). A record is written only for a proof (every
lemma UNSAT, or the query UNSAT) with a refuted twin, and a decomposed one only after every
lemma it names is stored with a text that hashes to its name.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from fractions import Fraction
from pathlib import Path

from ... import fp
from ...bits import BV
from ..cache import CACHE, Cache
from ..frame import (BadInput, EXIT_INTERNAL, EXIT_OK, EXIT_REFUTED, EXIT_UNKNOWN,
                     InternalError, run_verb)
from ..model import Model, Witness, parse_backends, resolve
from ..solvers import Result
from ..store import lemma_dir, lemma_dirs, proofs_dir, read_lemma, sha256
from . import exact_fdpa
from .api import Claim, Symbolic
from .common import NotDecomposable, run_lemmas
from .constraint import CONSTRAINT_HELP, Constraint, parse_constraint

__all__ = ["NAME", "ExactClaim", "exact_claim", "exact_value", "rne", "add_parser", "run"]

NAME = "exact"


# ============================================================================================
# the exact sum, symbolically (z3) and concretely (Fractions)
# ============================================================================================

def _unit(f) -> int:
    F = fp.fmt(f)
    return F.emin - F.t


def _top(f) -> int:
    return fp.fmt(f).emax + 1


def _terms(m: Model):
    """[(a index, scale index or None)] for each product."""
    i = m.ins
    return [(k, k // i.scale_block if i.scale else None) for k in range(m.k)]


def _ranges(m: Model, cons: Constraint) -> dict:
    """{(name, index): (unit, top, zero)} of each element of a, b, c under the constraint: its
    value is a multiple of 2^unit (int(x): of 1), |x| < 2^top, zero when it must be 0. Only
    used inside the query, where the constraint is asserted, so narrower is still exact."""
    i = m.ins
    out = {}
    for name, f, n in (("a", i.a, m.k), ("b", i.b, m.k), ("c", i.c, 1)):
        for k in range(n):
            unit, top, zero = _unit(f), _top(f), False
            for a in cons.atoms:
                if not any(o == name and (j is None or j == k or name == "c") for o, j in a.operands):
                    continue
                if a.kind == "int":
                    unit = max(unit, 0)
                elif a.kind == "abs":
                    v = a.value
                    t = v.numerator.bit_length() - v.denominator.bit_length() + 1
                    while Fraction(2) ** (t - 1) >= v if a.op == "<" else Fraction(2) ** (t - 1) > v:
                        t -= 1
                    top = min(top, t)          # |x| < 2^t
                elif a.kind == "eq" and a.op == "==" and a.value == 0:
                    zero = True
            out[(name, k)] = (unit, max(top, unit + 1), zero)
    return out


def _shift(sig, e, W: int, exact_right: bool):
    """z3: sig * 2^e as a W-bit vector (e signed z3); a negative e shifts right (exact where
    the constraint makes the value a multiple of the unit: `exact_right`)."""
    import z3
    mag = z3.ZeroExt(W - sig.size(), sig)
    sh = z3.SignExt(W - e.size(), e) if e.size() < W else e
    if not exact_right:
        return mag << sh
    return z3.If(sh >= 0, mag << sh, z3.LShR(mag, -sh))


def _exact_sum(s: Symbolic, cons: Constraint):
    """(z3 signed W-bit sum in units 2^lo, lo, W, hi, z3 Bool: every input finite): the exact
    value of c + sum a_k b_k (scaled) for every input satisfying `cons`."""
    import z3
    m = s.model
    i = m.ins
    rng = _ranges(m, cons)
    ua, ub = [fp.decode(i.a, x) for x in s.a], [fp.decode(i.b, x) for x in s.b]
    uc = fp.decode(i.c, s.c)
    ss = ([fp.decode(i.scale, x) for x in s.sa], [fp.decode(i.scale, x) for x in s.sb]) if i.scale else None
    fin = [z3.Not((u.nan | u.inf).v) for u in ua + ub + [uc] + (ss[0] + ss[1] if ss else [])]
    terms = []                                   # (factors, unit, top, int-valued)
    for k, j in _terms(m):
        (na, ta, za), (nb, tb, zb) = rng[("a", k)], rng[("b", k)]
        if za or zb:
            continue
        f = [ua[k], ub[k]]
        unit, top = na + nb, ta + tb
        if ss:
            f += [ss[0][j], ss[1][j]]
            unit += 2 * _unit(i.scale)
            top += 2 * _top(i.scale)
        terms.append((f, unit, top, na + nb > _unit(i.a) + _unit(i.b)))
    nc, tc, zc = rng[("c", 0)]
    if not zc:
        terms.append(([uc], nc, tc, nc > _unit(i.c)))
    if not terms:
        return None, 0, 2, 0, z3.And(*fin)
    lo = min(t[1] for t in terms)
    hi = max(t[2] for t in terms) + len(terms).bit_length() + 1     # |S| < 2^hi
    W = hi - lo + 2 + fp.fmt(i.d).p + 2
    ew = 20
    e = lambda u: z3.SignExt(ew - u.exp.w, u.exp.v) - u.fmt.t
    total = None
    for factors, unit, top, right in terms:
        pw = sum(u.sig.w for u in factors)
        sig, ex, neg = None, None, None
        for u in factors:
            x = z3.ZeroExt(pw - u.sig.w, u.sig.v)
            sig = x if sig is None else sig * x
            ex = e(u) if ex is None else ex + e(u)
            neg = u.sign.v if neg is None else z3.Xor(neg, u.sign.v)
        mag = _shift(sig, ex - lo, W, right)
        term = z3.If(neg, -mag, mag)
        total = term if total is None else total + term
    return total, lo, W, hi, z3.And(*fin)


def _int_sum(s: Symbolic):
    import z3
    i = s.model.ins
    W = 72
    v = lambda f, x: z3.SignExt(W - (fp.fmt(f).k + 1), fp.int_value(f, x).v)
    total = v(i.c, s.c)
    for x, y in zip(s.a, s.b):
        total = total + v(i.a, x) * v(i.b, y)
    return total, z3.SignExt(W - (fp.fmt(i.d).k + 1), fp.int_value(i.d, s.out).v)


def _statement(rounded: bool, cons: Constraint):
    def st(s: Symbolic):
        import z3
        i = s.model.ins
        if fp.is_int(i.d):
            S, D = _int_sum(s)
            return D == S
        S, lo, W, hi, fin = _exact_sum(s, cons)
        fd = fp.fmt(i.d)
        if S is None:
            S = z3.BitVecVal(0, W)
        if rounded:
            K = s.K
            sign = _zbool(K, S < 0)
            mag = BV(K, W, False, z3.If(S < 0, -S, S))
            R = fp.round_to(fd, sign, K.const(lo, 24, True), mag, "RNE")
            from ..model import approx_equal
            ok = approx_equal(s.out, R, fd).v
        else:
            # D in the window 2^lo .. 2^hi (else it cannot equal S), then equal to S there
            u = fp.decode(fd, s.out)
            ed = z3.SignExt(24 - u.exp.w, u.exp.v) - fd.t - lo        # D = sig * 2^(lo + ed)
            low = z3.ZeroExt(W - u.sig.w, u.sig.v)
            k = z3.SignExt(W - 24, -ed)
            below = z3.Or(ed >= 0, z3.And(ed > -fd.p - 1,
                                           low & ((z3.BitVecVal(1, W) << k) - 1) == 0))
            dm = _shift(u.sig.v, ed, W, True)
            fits = z3.SignExt(24 - u.exp.w, u.exp.v) < hi
            ok = z3.And(z3.Not((u.nan | u.inf).v),
                        z3.Or(u.zero.v, z3.And(below, fits)),
                        z3.If(u.sign.v, -dm, dm) == S)
        return z3.Or(z3.Not(fin), ok)
    return st


def _zbool(K, b):
    from ...bits import Bool
    return Bool(K, b)


def _val(x: int, f: str):
    from ...simulate import value_of
    v = value_of(x, f)
    return Fraction(0) if v in ("0", "-0") else v


def exact_value(m: Model, w: Witness):
    """c + sum_k a_k b_k (scaled) as a Fraction; None when an input is not finite."""
    i = m.ins
    w = w.padded(m.k, m.nscale)
    vals = [_val(x, i.a) for x in w.a] + [_val(x, i.b) for x in w.b] + [_val(w.c, i.c)]
    if i.scale:
        vals += [_val(x, i.scale) for x in w.scale_a + w.scale_b]
    if any(isinstance(v, str) for v in vals):
        return None
    S = _val(w.c, i.c)
    for k, j in _terms(m):
        t = _val(w.a[k], i.a) * _val(w.b[k], i.b)
        if j is not None:
            t *= _val(w.scale_a[j], i.scale) * _val(w.scale_b[j], i.scale)
        S += t
    return S


def rne(v: Fraction, f: str):
    """v rounded to format f, round-to-nearest-even, as a value: a Fraction, or "inf"/"-inf"
    on overflow (exact rational arithmetic, independent of mmaformal.fp)."""
    F = fp.fmt(f)
    if v == 0:
        return Fraction(0)
    a = abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, F.emin)                       # exponent of the leading digit (or emin)
    ulp = Fraction(2) ** (e - F.t)
    q, r = divmod(a, ulp)
    q = int(q)
    if r * 2 > ulp or (r * 2 == ulp and q % 2 == 1):
        q += 1
    out = q * ulp
    big = (2 - Fraction(1, 2 ** F.t)) * Fraction(2) ** F.emax
    if out > big:
        return "-inf" if v < 0 else "inf"
    return -out if v < 0 else out


def _check(rounded: bool):
    def check(w: Witness, d: int, m: Model) -> bool:
        from ...simulate import value_of
        i = m.ins
        S = exact_value(m, w)
        if S is None:
            return True                        # outside the claim
        vd = value_of(d, i.d)
        if fp.is_int(i.d):
            return _val(d, i.d) == S
        if rounded:
            r = rne(S, i.d)
            return (vd in ("0", "-0") and r == 0) or vd == r or (
                not isinstance(vd, str) and vd == r)
        return vd not in ("nan", "inf", "-inf") and _val(d, i.d) == S
    return check


# ============================================================================================
# the claim
# ============================================================================================

def _sentence(m: Model, rounded: bool) -> str:
    i = m.ins
    prods = "scale_a(k) scale_b(k) a_k b_k" if i.scale else "a_k b_k"
    if fp.is_int(i.d):
        return (f"D equals the exact integer c + sum_k a_k b_k (the {i.d} accumulation neither "
                f"wraps nor saturates)")
    if rounded:
        return (f"D equals the exact value c + sum_k {prods} correctly rounded once to {i.d} "
                f"(round to nearest even, Inf on overflow, +0 = -0; every input finite)")
    return (f"D equals the exact value c + sum_k {prods}, with no rounding (D finite, +0 = -0; "
            f"every input finite)")


def _hooks(m: Model, cons: Constraint, rounded: bool, decomposed: bool = True) -> dict:
    """The Claim's candidates (concrete inputs tried first) and, for T-FDPA chains, its
    decomposed proof (mmaformal.query.claims.exact_fdpa)."""
    def dec(solver, timeout, deadline):
        why = exact_fdpa.applies(m, rounded)
        if why:
            return {"why": why}
        try:
            lms = exact_fdpa.lemmas(m, cons, rounded)
        except NotDecomposable as e:
            return {"why": str(e)}
        status, parts = run_lemmas(lms, solver, timeout, deadline=deadline)
        texts = {p["sha256"]: p.pop("text") for p in parts}
        return {"status": status, "parts": parts, "_texts": texts,
                "combination": exact_fdpa.COMBINATION_EXACT_FDPA}
    return {"candidates": lambda: exact_fdpa.candidates(m, cons),
            "decomposed": dec if decomposed else None}


@dataclasses.dataclass
class ExactClaim(Claim):
    """The claim of `exact_claim`: a Claim whose decomposed proofs are stored too."""

    SAVES = ("monolithic", "decomposed")

    def save(self, res: dict, root: Path | None = None) -> Path:
        """Store a proof with its refuted broken twin (`root`: a proofs/ folder instead of the
        store's): a monolithic one as Claim.save does; a decomposed one as its lemmas in
        <root>/cache/ (`_keep_lemmas`) and then the record proofs/exact/<slug>.json, in the
        fields of prove's decomposed records (query None, parts, combination) and of this
        claim's monolithic ones (`record_fields`, `record_name` of the claim's query)."""
        if res.get("method") != "decomposed":
            return super().save(res, root)
        self.saveable(res)
        root = Path(root) if root is not None else proofs_dir()
        _keep_lemmas(res["parts"], res.get("_texts") or {}, root / "cache")
        query = self.smt2()
        versions = sorted({p.get("solver_version") or "" for p in res["parts"]} - {""})
        rec = {"claim": res["claim"], "verdict": "proved", "method": "decomposed",
               "solver": res["solver"], "solver_version": ",".join(versions),
               "seconds": res["seconds"], "date": _dt.date.today().isoformat(),
               "query": None, "query_sha256": sha256(query), "parts": res["parts"],
               "combination": res.get("combination", ""), **self.record_fields(res)}
        d = root / self.name
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"{self.record_name(query)}.json"
        p.write_text(json.dumps(rec, indent=2, sort_keys=True) + "\n")
        return p


def _keep_lemmas(parts: list[dict], texts: dict[str, str], cache: Path) -> None:
    """Store each proved lemma of `parts` in the proofs/cache/ folder `cache` (query and
    verdict, through the solver-result cache's writer) unless a usable copy is stored already
    (there, in the store's or in the shipped proofs/cache). InternalError for a lemma that is
    not unsat or whose text is missing or does not hash to its sha256."""
    dirs = [Path(cache), *lemma_dirs()]
    writer = Cache(Path(cache))
    for p in parts:
        h = p["sha256"]
        if p.get("status") != "unsat":
            raise InternalError(f"lemma {p.get('lemma')}: {p.get('status')}, not unsat")
        if read_lemma(h, dirs) is not None:
            continue
        text = texts.get(h)
        if text is None or sha256(text) != h:
            raise InternalError(f"lemma {p.get('lemma')}: no text hashing to {h[:12]}..")
        writer.put(h, text, Result("unsat", p["solver"], p.get("solver_version") or "",
                                   p["seconds"]), persist=True)


METHODS = ("auto", "decomposed", "monolithic")


def exact_claim(model: "Model | str", where: "str | Constraint | None" = None,
                rounded: bool = False, twin: bool = True, method: str = "auto") -> Claim:
    """The Claim "D is exact (or correctly rounded) for every finite input satisfying
    `where`" on a model (a Model or a model spec: an instruction, a theory id, a mutant).
    method: "auto" (concrete candidates, then the decomposed proof where it applies, then the
    monolithic query with the time left), "decomposed" (no monolithic fallback: unknown
    where the lemmas do not all hold or do not apply), "monolithic" (the one query only)."""
    if method not in METHODS:
        raise BadInput(f"prove exact: method {method!r}: expected one of {', '.join(METHODS)}")
    m = resolve(model) if isinstance(model, str) else model
    i = m.ins
    if "b1" in (i.a, i.b):
        raise BadInput(f"prove exact: {i.name} computes a population count of bits, not a sum "
                       f"of products: the claim does not apply")
    if rounded and fp.is_int(i.d):
        raise BadInput(f"prove exact --rounded: {i.name} has an integer output (nothing is "
                       f"rounded); drop --rounded to ask whether it neither wraps nor saturates")
    cons = parse_constraint(where)
    for a in cons.atoms:               # index ranges: one line now, not an error in the solver
        for n, k in a.operands:
            if k is not None and k >= m.k:
                raise BadInput(f"constraint: {n}[{k}] is out of range ({i.name} has K = {m.k})")
    chk = _check(rounded)
    base = dict(name=NAME, model=m, text=_sentence(m, rounded), statement=_statement(rounded, cons),
                check=lambda w, d: chk(w, d, m), method=method,
                extra={"rounded": rounded}, **_hooks(m, cons, rounded))
    if not twin:
        return ExactClaim(constraint=cons, **base)
    if cons.bounds():
        t = Claim(constraint=cons.raised(1), **dict(
            base, statement=_statement(rounded, cons.raised(1)), text=base["text"] + " [broken twin: every magnitude bound raised by one bit]",
            **_hooks(m, cons.raised(1), rounded)))
    else:
        # the lemmas prove D exact, not D with a bit flipped: candidates and the query only
        t = Claim(constraint=cons, output=lambda d: d ^ 1, **dict(
            base, text=base["text"] + " [broken twin: D with its last bit flipped]",
            check=lambda w, d: chk(w, d, m), **_hooks(m, cons, rounded, decomposed=False)))
    return ExactClaim(constraint=cons, twin=t, **base)


# ============================================================================================
# CLI (prove exact)
# ============================================================================================

def add_parser(sub, common):
    """Add `prove exact` to prove's claim subparsers (`common`: prove's shared options)."""
    c = sub.add_parser(NAME, help="D is the exact (or correctly rounded) c + a.b under a "
                                  "constraint", description=__doc__.split("\n\n")[1])
    c.add_argument("A", help="an instruction or model spec")
    c.add_argument("--where", default="", metavar="CONSTRAINT", help=CONSTRAINT_HELP)
    c.add_argument("--rounded", action="store_true",
                   help="D is the correctly rounded (RNE) value, not the exact one")
    c.add_argument("--no-twin", action="store_true", help="do not solve the broken twin")
    c.add_argument("--method", choices=METHODS, default="auto",
                   help="auto (default): concrete candidate inputs first, then, for T-FDPA "
                        "chains (fused f16/bf16/tf32/fp8 -> f32 mma/wgmma/wmma, not --rounded), "
                        "the decomposed proof (small lemmas per product, per block term and per "
                        "alignment exponent), then the monolithic query with the time left; "
                        "decomposed: no fallback; monolithic: the one query (--save stores a "
                        "proof either way, with its refuted twin)")
    common(c)
    c.set_defaults(func=run)
    return c


def public(res: dict) -> dict:
    out = {k: res[k] for k in ("status", "claim", "witness", "solver", "seconds", "method")}
    if res.get("method") == "decomposed":
        out["lemmas"] = [{k: p[k] for k in ("lemma", "status", "seconds", "sha256")}
                         for p in res.get("parts", [])]
        out["combination"] = res.get("combination", "")
    out.update({"twin": res.get("twin"), "saved": res.get("saved", []),
                "output": res.get("detail", {}).get("output"), "reason": res.get("reason", "")})
    return out


def render(res: dict) -> str:
    L = [f"claim: {res['claim']}"]
    if res.get("witness"):
        m = res["_model"]
        w = Witness.from_json(res["witness"], m.ins.a, m.ins.b, m.ins.c, m.ins.scale or "")
        from ...simulate import decimal
        L.append("witness (replayed on the concrete back-ends):")
        L += w.render()
        S = exact_value(m, w)
        L.append(f"  D = {res['detail']['output']} ({decimal(_val(int(res['detail']['output'], 16), m.ins.d)) if not fp.is_int(m.ins.d) else _val(int(res['detail']['output'], 16), m.ins.d)})"
                 f", exact value {S if S is None or S.denominator == 1 else decimal(S)}")
    tw = res.get("twin")
    if tw:
        L.append(f"broken twin: {tw['claim']}: {tw['verdict']} ({tw['seconds']:.2f} s)")
    if res.get("reason"):
        L.append(f"note: {res['reason']}")
    if res.get("method") == "decomposed" and res.get("parts"):
        n = len(res["parts"])
        L.append(f"decomposed: {n} lemma{'s' * (n != 1)} "
                 f"({sum(p['seconds'] for p in res['parts']):.2f} solver-s); combination: "
                 f"{res.get('combination', '')}")
    L.append(f"status: {res['status']}  ({res['seconds']:.2f} s, {res['solver']}, "
             f"{res.get('method') or 'monolithic'})")
    for p in res.get("saved", []):
        L.append(f"saved: {p}")
    return "\n".join(L)


def run(args) -> int:
    def compute():
        backends = parse_backends(args.replay)
        if args.save:
            CACHE.root = lemma_dir()           # proved lemmas stored there are reused
        claim = exact_claim(args.A, args.where, args.rounded, twin=not args.no_twin,
                            method=getattr(args, "method", "auto"))
        if args.emit_smt2:
            with open(args.emit_smt2, "w") as f:
                f.write(claim.smt2())
        res = claim.prove(args.solver, args.timeout, backends, twin=not args.no_twin,
                          save=args.save)
        res["_model"] = claim.model
        return res

    code = {"proved": EXIT_OK, "refuted": EXIT_REFUTED, "unknown": EXIT_UNKNOWN}
    return run_verb("prove", compute, lambda r: code.get(r["status"], EXIT_INTERNAL), render,
                    public, args.json)
