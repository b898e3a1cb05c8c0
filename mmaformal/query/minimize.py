"""Layer 5, query/minimize: readable witnesses. A distinguishing witness, made as small as the
solver can show within a time budget, in four steps, each one kept only if it succeeds:

1. no operand paired with a zero: for every k, a[k] is zero exactly when b[k] is zero (a
   non-zero operand times zero is noise: its product is zero);
2. the fewest non-zero products a[k]*b[k] (descending: "at most n - 1" until unsat);
3. the smallest exponent spread over the finite non-zero operands a, b, c: max - min of the
   exponents of their leading 1 bits (a subnormal's below emin) (binary search);
4. the fewest significand bits: sum over those operands of the bits after the leading 1 up to
   the last 1 (0 for a power of two) (binary search);
and, cosmetic, zeros written as +0 where their sign does not matter.

Each step is one or more solver queries (mmaformal.query.search.search over the same query with
the earlier steps' bounds added) under a per-query time limit; a query that times out ends its
step with the best witness so far. Every witness taken has been replayed on the concrete
back-ends by `search` and distinguishes the models there.

`equation(w, outputs, d)` prints a witness as one line in the style of [Xie2025]'s Equation 10:
    a = (-2^13, -0.5, -0.25, -0.125, 0, ..., 0), b = (2^10, 1, 1, 1, 0, ..., 0), c = 2^23

May import: mmaformal.query.model, .search, fp, bits, simulate (lazily), z3 (lazily).
Invariant: the witness returned is never worse (in the step's measure) than the one given,
and it distinguishes the models.
"""
from __future__ import annotations

import dataclasses
import time
from fractions import Fraction
from typing import Sequence

from .. import fp
from ..bits import INT, clz
from .frame import InternalError
from .model import Inputs, Witness, replay, step_diff
from .search import Found, Query, search

__all__ = ["minimize", "measure", "equation", "describe", "DEFAULT_STEP_TIMEOUT", "DEFAULT_BUDGET"]

#: seconds per minimization query, and for the whole minimization
DEFAULT_STEP_TIMEOUT = 10.0
DEFAULT_BUDGET = 60.0

_W = 16          # width of the symbolic counters (K <= 256 operands of <= 64 bits)


# ============================================================================================
# Measures: symbolic (z3 terms over the query's inputs) and concrete (one witness)
# ============================================================================================

def _conj(xs):
    """The conjunction of z3 Bools, printed so every solver reads it (no `(and x)` of one
    argument, which bitwuzla's parser rejects)."""
    import z3
    xs = list(xs)
    return z3.BoolVal(True) if not xs else xs[0] if len(xs) == 1 else z3.And(xs)


def _operands(inp: Inputs):
    return ([(x, inp.fa) for x in inp.a] + [(x, inp.fb) for x in inp.b] + [(inp.c, inp.fc)])


def _lead_and_bits(u: fp.Unpacked, f: fp.Format):
    """z3 terms (`_W` bits) of a decoded operand: the exponent of its leading 1 bit (Exp, less
    the leading zeros of a subnormal significand) and its significand bits (the bits after the
    leading 1 up to the last 1: 0 for a power of two; 0 for zero, Inf and NaN)."""
    import z3
    one, zero = z3.BitVecVal(1, _W), z3.BitVecVal(0, _W)
    lz = z3.ZeroExt(_W - clz(u.sig).w, clz(u.sig).v)
    lead = z3.SignExt(_W - u.exp.w, u.exp.v) - lz
    n = zero
    for i in range(f.p):                     # n = p - ctz(sig)
        n = n + z3.If((u.sig.extract(i, 0) != 0).v, one, zero)
    bits = z3.If((~u.zero & u.finite).v, n - lz - 1, zero)
    return lead, bits


def _terms(inp: Inputs):
    """z3 terms: (pairing constraints, non-zero product count, [(leading exponent, non-zero
    finite) of operands], significand-bit total)."""
    import z3
    one, zero = z3.BitVecVal(1, _W), z3.BitVecVal(0, _W)
    pair, count = [], zero
    for x, y in zip(inp.a, inp.b):
        ux, uy = fp.decode(inp.fa, x), fp.decode(inp.fb, y)
        pair.append(ux.zero.v == uy.zero.v)
        count = count + z3.If((~ux.zero & ~uy.zero).v, one, zero)
    exps, bits = [], zero
    for x, f in _operands(inp):
        F = fp.fmt(f)
        u = fp.decode(F, x)
        lead, b = _lead_and_bits(u, F)
        exps.append((lead, (~u.zero & u.finite).v))
        bits = bits + b
    return pair, count, exps, bits


def _spread_le(exps, S: int):
    """Every finite non-zero operand's Exp in [lo, lo + S] for one fresh lo."""
    import z3
    lo = z3.BitVec("minimize_lo", _W)
    return _conj([z3.Implies(nz, z3.And(lo <= e, e <= lo + S)) for e, nz in exps] +
                 [lo >= -(1 << (_W - 2)), lo <= 1 << (_W - 2)])


def measure(w: Witness) -> dict:
    """The concrete measures of a witness: non-zero products, operands paired with a zero,
    and over the finite non-zero operands: the spread of the exponents of their leading 1 bits,
    and their significand bits after the leading 1 (0 for a power of two)."""
    if any(fp.fmt(f).is_int for f in (w.fa, w.fb, w.fc)):      # integers: no exponents
        nz = [(int(x) != 0, int(y) != 0) for x, y in zip(w.a, w.b)]
        return {"products": sum(p and q for p, q in nz), "paired_with_zero": sum(p != q for p, q in nz),
                "spread": 0, "sig_bits": 0}
    dec = lambda x, f: fp.decode(f, INT.const(int(x), fp.fmt(f).storage, False))
    prods = paired = 0
    for x, y in zip(w.a, w.b):
        zx, zy = bool(dec(x, w.fa).zero.v), bool(dec(y, w.fb).zero.v)
        prods += not zx and not zy
        paired += zx != zy
    exps, bits = [], 0
    for xs, f in ((w.a, w.fa), (w.b, w.fb), ([w.c], w.fc)):
        F = fp.fmt(f)
        for x in xs:
            u = dec(x, F)
            if bool(u.zero.v) or not bool(u.finite.v):
                continue
            sig = int(u.sig.v)
            exps.append(int(u.exp.v) - (F.p - sig.bit_length()))
            bits += sig.bit_length() - (sig & -sig).bit_length()
    return {"products": prods, "paired_with_zero": paired,
            "spread": (max(exps) - min(exps)) if exps else 0, "sig_bits": bits}


# ============================================================================================
# The minimization
# ============================================================================================

@dataclasses.dataclass
class _Run:
    q: Query
    solver: str
    step_timeout: float
    backends: Sequence[str]
    deadline: float
    extra: list
    steps: list

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def attempt(self, step: str, cons) -> tuple[str, Found | None]:
        """One solver query: the query with the kept bounds and `cons` added."""
        t = min(self.step_timeout, self.left())
        if t <= 0.05:
            self.steps.append({"step": step, "status": "skipped", "seconds": 0.0})
            return "unknown", None
        q = dataclasses.replace(self.q, where=list(self.q.where) + self.extra + [cons])
        t0 = time.perf_counter()
        st, found, secs, last, text = search(q, 1, self.solver, t, "lazy", self.backends)
        rec = {"step": step, "status": {"distinguished": "sat", "equivalent": "unsat"}
               .get(st, "unknown"), "seconds": round(time.perf_counter() - t0, 3)}
        if rec["status"] == "unknown":
            rec["reason"] = (last.reason if last else "") or "no answer"
        self.steps.append(rec)
        return st, (found[0] if found else None)

    def descend(self, step: str, term, value: int, measure_of, binary: bool) -> tuple[int, Found | None]:
        """Lower `term` (a z3 term, or a function of a bound for the spread) below `value`:
        binary search (or linear descent) on the bound; returns (best value, its witness)."""
        import z3
        best: Found | None = None
        lo, hi = 0, value                    # the optimum is in [lo, hi]; hi is achieved
        while lo < hi:
            mid = (lo + hi) // 2 if binary else hi - 1
            cons = term(mid) if callable(term) else z3.ULE(term, mid)
            st, f = self.attempt(f"{step} <= {mid}", cons)
            if st == "distinguished":
                best, hi = f, measure_of(f.witness)
            elif st == "equivalent":
                lo = mid + 1
            else:
                break
        return hi, best


def _zero_flags(w: Witness) -> list[bool]:
    """Per k: the product a[k]*b[k] is zero (an operand is +-0)."""
    z = lambda x, f: bool(fp.decode(f, INT.const(int(x), fp.fmt(f).storage, False)).zero.v)
    return [z(x, w.fa) or z(y, w.fb) for x, y in zip(w.a, w.b)]


def _outside(inp: Inputs, w: Witness):
    """Both operands zero at every k where w's product is zero: the search restricted to the
    support of w (far fewer free variables than a cardinality bound over all k)."""
    return _conj([(fp.decode(inp.fa, x).zero & fp.decode(inp.fb, y).zero).v
                  for x, y, zf in zip(inp.a, inp.b, _zero_flags(w)) if zf])


def _fewest_products(run: _Run, cur: Found, pair, count) -> Found:
    """Step 2: "at most n - 1 non-zero products" inside the current support (fast), then once
    over every k (slower); repeated while either finds one."""
    import z3
    while True:
        n = measure(cur.witness)["products"]
        if n == 0:
            return cur
        st, f = run.attempt(f"non-zero products <= {n - 1} (within the support)",
                            _conj([_outside(run.q.inp, cur.witness), z3.ULE(count, n - 1)]))
        if st == "distinguished":
            cur = f
            continue
        st, f = run.attempt(f"non-zero products <= {n - 1}", _conj(pair + [z3.ULE(count, n - 1)]))
        if st != "distinguished":
            return cur
        cur = f


def _products_first(q: Query, cur: Found, backends, steps: list) -> Found:
    """Cosmetic, without a solver: the non-zero products moved to k = 0, 1, ... in their order,
    kept when the models still differ on it when replayed concretely (the order of the terms
    matters to blocked or ordered sums, so this is checked, not assumed)."""
    w = cur.witness
    nz = [k for k, z in enumerate(_zero_flags(w)) if not z]
    if nz == list(range(len(nz))):
        return cur
    zero_a = [x for k, x in enumerate(w.a) if k not in nz]
    zero_b = [y for k, y in enumerate(w.b) if k not in nz]
    w2 = Witness(w.fa, w.fb, w.fc, [w.a[k] for k in nz] + zero_a, [w.b[k] for k in nz] + zero_b,
                 w.c, w.fs, w.scale_a, w.scale_b)
    if w.scale_a:                 # a block scale belongs to its positions: leave them alone
        return cur
    t0 = time.perf_counter()
    try:
        outs = replay([q.A, q.B], w2, backends)
    except InternalError:
        outs = None
    ok = outs is not None and outs[q.A.label] != outs[q.B.label]
    steps.append({"step": "non-zero products first (concrete replay)",
                  "status": "kept" if ok else "rejected", "seconds": round(time.perf_counter() - t0, 3)})
    return Found(w2, outs, step_diff(q.A, q.B, w2)) if ok else cur


def minimize(q: Query, found: Found, solver: str = "bitwuzla",
             step_timeout: float = DEFAULT_STEP_TIMEOUT, budget: float = DEFAULT_BUDGET,
             backends: Sequence[str] = ("int", "numpy")) -> tuple[Found, dict]:
    """The steps of the module docstring on a witness `found` of query q. Returns (the
    minimized witness, a report: the measures before and after, each solver query's status and
    seconds, total seconds, and whether every query was answered)."""
    t0 = time.perf_counter()
    if any(fp.fmt(f).is_int for f in (q.inp.fa, q.inp.fb, q.inp.fc)):
        # issue 14: integer witnesses have no exponents or significands to shrink
        return found, {"before": None, "after": None, "queries": [], "seconds": 0.0,
                       "complete": True, "skipped": "integer formats: nothing to minimize"}
    run = _Run(q, solver if solver != "portfolio" else "bitwuzla", step_timeout, backends,
               t0 + budget, [], [])
    before = measure(found.witness)
    if any(fp.fmt(f).is_int for f in (q.inp.fa, q.inp.fb, q.inp.fc)):
        # integer instructions: the steps above are floating-point ones (exponents, significand
        # bits); the witness is kept as found
        return found, {"before": before, "after": before, "queries": [], "seconds": 0.0,
                       "complete": True, "skipped": "integer formats: the witness as found"}
    cur = found
    pair, count, exps, bits = _terms(q.inp)
    # 1. no operand paired with a zero
    if before["paired_with_zero"]:
        st, f = run.attempt("no operand paired with a zero", _conj(pair))
        if st == "distinguished":
            cur = f
    # 2. fewest non-zero products; from here on the search stays inside the support found
    cur = _fewest_products(run, cur, pair, count)
    run.extra.append(_outside(q.inp, cur.witness))
    if measure(cur.witness)["paired_with_zero"] == 0 and pair:
        run.extra.append(_conj(pair))
    # 3. smallest exponent spread
    m = measure(cur.witness)
    s, f = run.descend("exponent spread", lambda S: _spread_le(exps, S), m["spread"],
                       lambda w: measure(w)["spread"], binary=True)
    cur = f or cur
    run.extra.append(_spread_le(exps, s))
    # 4. fewest significand bits
    m = measure(cur.witness)
    b, f = run.descend("significand bits", bits, m["sig_bits"],
                       lambda w: measure(w)["sig_bits"], binary=True)
    cur = f or cur
    # cosmetic: the zeros as +0 where their sign does not matter
    w = cur.witness
    zs = [(x, v) for x, v in zip(q.inp.a + q.inp.b + [q.inp.c], w.a + w.b + [w.c])
          if v != 0 and bool(fp.decode(_fmt_of(q.inp, x), INT.const(int(v), x.w, False)).zero.v)]
    if zs:
        st, f = run.attempt("zeros are +0", _conj([x.v == 0 for x, _ in zs] +
                                                  [x.v == v for x, v in zip(q.inp.all(), _vals(w))
                                                   if all(x is not y for y, _ in zs)]))
        if st == "distinguished":
            cur = f
    cur = _products_first(q, cur, backends, run.steps)
    report = {"before": before, "after": measure(cur.witness), "queries": run.steps,
              "seconds": round(time.perf_counter() - t0, 3),
              "complete": all(s["status"] in ("sat", "unsat", "kept", "rejected")
                              for s in run.steps)}
    return cur, report


def _vals(w: Witness) -> list[int]:
    return w.a + w.b + [w.c] + (w.scale_a or []) + (w.scale_b or [])


def _fmt_of(inp: Inputs, x) -> str:
    if any(x is y for y in inp.a):
        return inp.fa
    if any(x is y for y in inp.b):
        return inp.fb
    return inp.fc


# ============================================================================================
# One line in the style of [Xie2025]'s Equation 10
# ============================================================================================

def _num(v) -> str:
    """A value of value_of as Equation 10 writes it: powers of two from 2^8 (or below 2^-8)
    as 2^e, other values in decimal, or m*2^e when the decimal is long."""
    from ..simulate import decimal
    if isinstance(v, str):
        return v
    s = "-" if v < 0 else ""
    a = abs(v)
    e = 0
    num, den = a.numerator, a.denominator
    if num & (num - 1) == 0 and den == 1 and num.bit_length() - 1 >= 8:
        return f"{s}2^{num.bit_length() - 1}"
    if num == 1 and den & (den - 1) == 0 and den.bit_length() - 1 >= 8:
        return f"{s}2^-{den.bit_length() - 1}"
    d = decimal(v)
    if len(d) <= 10:
        return d
    m = Fraction(a)
    while m.denominator != 1:
        m *= 2
        e -= 1
    while m.numerator % 2 == 0:
        m /= 2
        e += 1
    return f"{s}{m.numerator}*2^{e}"


def _vec(xs, f: str) -> str:
    """(v0, v1, ...): a trailing run of zeros as "0, ..., 0" (Equation 10), another run of
    three or more zeros as "0 xN"."""
    from ..simulate import value_of
    vals = [_num(value_of(x, f)) for x in xs]
    n = len(vals)
    while n and vals[n - 1] == "0":
        n -= 1
    tail = ["0", "...", "0"] if len(vals) - n >= 2 else vals[n:]
    out, i = [], 0
    while i < n:
        j = i
        while j < n and vals[j] == "0":
            j += 1
        if j - i >= 3:
            out.append(f"0 x{j - i}")
            i = j
        else:
            out.append(vals[i])
            i += 1
    return "(" + ", ".join(out + tail) + ")"


def equation(w: Witness, outputs: dict | None = None, d: str | None = None) -> str:
    """The witness as one line: a = (...), b = (...), c = ...[, scales][: LABEL = d, ...]."""
    from ..simulate import value_of
    s = f"a = {_vec(w.a, w.fa)}, b = {_vec(w.b, w.fb)}, c = {_num(value_of(w.c, w.fc))}"
    if w.scale_a:
        s += f", scale_a = {_vec(w.scale_a, w.fs)}, scale_b = {_vec(w.scale_b, w.fs)}"
    if outputs and d:
        s += ": " + ", ".join(f"{k} = {_num(value_of(v, d))}" for k, v in outputs.items())
    return s


def describe(report: dict) -> str:
    """One line: what the minimization did."""
    if report.get("skipped"):
        return f"not minimized: {report['skipped']}"
    b, a = report["before"], report["after"]
    if report.get("skipped"):
        return f"not minimized ({report['skipped']}): non-zero products {b['products']}"
    n = len(report["queries"])
    unk = sum(1 for s in report["queries"] if s["status"] in ("unknown", "skipped"))
    return (f"minimized in {report['seconds']:.1f} s ({n} solver queries"
            f"{f', {unk} timed out' if unk else ''}): non-zero products {b['products']} -> "
            f"{a['products']}, operands paired with a zero {b['paired_with_zero']} -> "
            f"{a['paired_with_zero']}, exponent spread {b['spread']} -> {a['spread']}, "
            f"significand bits {b['sig_bits']} -> {a['sig_bits']}")

