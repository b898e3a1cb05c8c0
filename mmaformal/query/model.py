"""Layer 5, query/model: the model of a query, what every query verb reasons about.

- `Model`: a theory bound to an instruction, possibly mutated (`SPEC[P=V]`, the RD-twin
  `SPEC[align=RD]`) or chained (`N*SPEC`); `resolve`/`resolve_pair` parse model specs,
  `from_spec` rebuilds one from a stored record, `mutate`/`twin_mutations` give broken twins.
- `Inputs` (the free variables of one dot product on a `Z3Backend`) and `Witness` (one
  concrete input as raw bit patterns); `neg_bits`/`approx_equal` (negation and ~ of storage
  elements, shared by the claims); the `--where` constraint language is query.where.
- SMT-LIB text: `smt2_text` (deterministic, history-independent), `portable` (z3's overflow
  predicates in standard bit-vector operations), `free_vars`, and `check` (one solver call).
- Evaluation: `evaluate` (one model on one witness on the int, numpy or compiled back-end),
  `replay` (all back-ends, checked to agree), `step_diff` (the first differing step of the
  white-box traces).

May import: the layers below (bits, fp, mma, trace, isa, theory; simulate, explain, compile
lazily), mmaformal.query.frame and .solvers, z3 (lazily), numpy. Invariant: a witness is raw
bits; a result that does not replay concretely is an InternalError, never a result.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from typing import Sequence

import numpy as np

from .. import fp, isa, mma, trace
from .. import theory as _theory
from ..bits import BV, INT, NUMPY, Z3Backend, ite
from .frame import BadInput, InternalError
from .solvers import Result, SOLVERS, solve

__all__ = ["Model", "from_spec", "resolve", "resolve_pair", "check_same_formats", "Inputs",
           "Witness", "neg_bits", "approx_equal", "portable",
           "free_vars", "smt2_text", "check", "BACKENDS", "parse_backends", "evaluate", "replay",
           "step_diff", "twin_mutations", "mutate", "hex_bits", "parse_param_value", "scale_one",
           "concrete_inputs", "canonical_text", "Lemma", "arith_key", "REDUCTION_SPARSE"]


# ============================================================================================
# Models: a theory bound to an instruction, possibly mutated or chained
# ============================================================================================

_SPEC = re.compile(r"^(?:(?P<n>\d+)\*)?(?P<name>[^\[@]+?)(?:@(?P<instr>[^\[]+?))?"
                   r"(?:\[(?P<changes>[^\]]*)\])?$")
#: Mutations of the elementary operations (not theory parameters), by name.
OP_MUTATIONS = {"align": ("RZ", "RD")}


@contextlib.contextmanager
def _align_rd():
    """The RD-twin: every fused sum rounds its aligned terms toward -inf (floor) instead of
    toward zero. A mutation of mma.fused_sum for the duration of the block (single-threaded
    use: mmaformal runs independent queries in processes, not threads)."""
    orig = mma.fused_sum

    def rd(terms, F, mode="RZ", zero_exp="excluded"):
        return orig(terms, F, "RD", zero_exp)
    mma.fused_sum = rd
    try:
        yield
    finally:
        mma.fused_sum = orig


def parse_param_value(v: str):
    v = v.strip()
    if re.fullmatch(r"[-+]?\d+", v):
        return int(v)
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", v):
        return int(v, 16)
    if v in ("true", "false"):
        return v == "true"
    return v.strip("'\"")


@dataclasses.dataclass
class Model:
    """A theory bound to an instruction, with parameter changes, an RD-twin flag and a chain
    count n (the dot product is n consecutive k-blocks of the instruction, chained through
    the accumulator). `dot` is the one evaluation entry point on every back-end."""

    label: str
    theory: _theory.Theory
    base: _theory.Theory
    changes: dict
    rd: bool = False
    n: int = 1

    @property
    def ins(self) -> isa.Instruction:
        return self.theory.instr

    @property
    def k(self) -> int:
        return self.ins.k * self.n

    @property
    def formats(self) -> tuple:
        i = self.ins
        return (i.a, i.b, i.c, i.d, i.scale, i.scale_block)

    @property
    def nscale(self) -> int:
        return self.k // self.ins.scale_block if self.ins.scale else 0

    def dot(self, K, a: Sequence[BV], b: Sequence[BV], c: BV, sa=None, sb=None) -> BV:
        """Sparse instructions take the dense A row (K elements, keeping the pattern of
        mmaformal.sparse: 2:4, tf32 1:2, s4/u4 2 aligned pairs of 8): the kept elements and the metadata are derived by mmaformal.sparse.derive (the
        rule simulate applies to a dense A); `sparse_valid` is the input constraint."""
        k = self.ins.k
        ns = k // self.ins.scale_block if self.ins.scale else 0
        with (_align_rd() if self.rd else contextlib.nullcontext()):
            d = c
            for j in range(self.n):
                if self.n > 1:
                    trace.record(trace.Chain(j, d))
                aj, meta = a[j * k:(j + 1) * k], None
                if self.ins.sparse:
                    from .. import sparse as _sp
                    aj, meta, ok = _sp.derive(K, list(aj), self.ins)
                    if not isinstance(K, Z3Backend) and not np.all(np.asarray(ok.v)):
                        raise BadInput(f"{self.ins.name}: the dense A breaks "
                                       f"{self.ins.sparsity[1]}:{self.ins.sparsity[0]} sparsity")
                d = self.theory.dot(K, aj, b[j * k:(j + 1) * k], d,
                                    sa[j * ns:(j + 1) * ns] if ns else None,
                                    sb[j * ns:(j + 1) * ns] if ns else None, meta)
        return d

    def sparse_valid(self, K, a: Sequence[BV]) -> list:
        """z3 constraints: the dense A rows (of every chained block) keep the sparse pattern (mmaformal.sparse)."""
        if not self.ins.sparse:
            return []
        from .. import sparse as _sp
        k = self.ins.k
        return [_sp.derive(K, list(a[j * k:(j + 1) * k]), self.ins)[2].v
                for j in range(len(a) // k)]

    def spec(self) -> dict:
        """JSON description, enough to rebuild the model (`from_spec`)."""
        return {"label": self.label, "theory": self.theory.id, "instruction": self.ins.name,
                "changes": dict(self.changes), "align": "RD" if self.rd else "RZ",
                "chain": self.n, "hash": self.base.hash(), "mutant_hash": self.theory.hash()}

    def describe(self) -> str:
        s = self.theory.describe()
        if self.rd:
            s += " [RD-twin: aligned terms rounded toward -inf]"
        if self.n > 1:
            s = f"{self.n} chained blocks of {self.ins.name}: {s}"
        return s

    def key(self) -> tuple:
        return (self.theory.hash(), self.ins.name, self.rd, self.n)


def arith_key(t: "_theory.Theory", ins: isa.Instruction) -> str:
    """Two instructions whose keys are equal have one query for every claim on one model: the
    theory's content without its id and instruction list, the operand formats, K (M and N
    only repeat the dot product), and the instruction qualifiers the theory reads
    (.satfinite, the b1 operation).

    Sparse instructions whose theory sums the selected terms only (`sparse = "selected"`) key
    as the dense function they reduce to (REDUCTION_SPARSE): K is the number of kept terms and
    the `sparse` key is dropped, so they share the group of a dense instruction with the same
    arithmetic."""
    c = t.content()
    c.pop("id")
    c.pop("instructions")
    k = ins.k
    if ins.sparse and c.get("sparse") == "selected":
        c.pop("sparse")
        k = ins.k // ins.sparsity[0] * ins.sparsity[1]
    return json.dumps([c, ins.a, ins.b, ins.c, ins.d, k, ins.scale, ins.scale_block,
                       bool(ins.satfinite), ins.bop or ""], sort_keys=True)


#: Why a claim proved or refuted on a dense instruction holds for the sparse instructions in
#: its group (arith_key): the claims quantify over the compressed interface (kept A values,
#: their metadata, B, C), as the hardware takes it.
REDUCTION_SPARSE = (
    "sparse members (theory sparse = \"selected\"): Theory._dot_sparse computes "
    "Phi_sp(a_kept, meta, B, C) = Phi(a_kept, B[meta], C), the dense dot product (_dot_dense, the "
    "same code with the same theory content, operand formats and K = the kept terms) of the kept "
    "A values and the B rows their metadata selects. For every metadata, B[meta] takes every "
    "tuple of B values, so a claim about Phi for all inputs holds for Phi_sp for all inputs "
    "and metadata, and a witness (a, b, c) of Phi is one of Phi_sp with a_kept = a, the "
    "canonical metadata and those B rows holding b (tests/test_campaign.py checks the "
    "identity on random inputs for every such group)")


def from_spec(d: dict) -> Model:
    """Rebuild a model from `Model.spec()` (used by the stores' replay)."""
    base = _theory.default().resolve(d["instruction"], d["theory"])
    th = base.replace(**d.get("changes", {})) if d.get("changes") else base
    return Model(d.get("label", d["theory"]), th, base, dict(d.get("changes", {})),
                 d.get("align", "RZ") == "RD", int(d.get("chain", 1)))


def resolve(text: str, instr: str | None = None) -> Model:
    """A model spec (see the module docstring) -> Model; BadInput with a one-line reason."""
    m = _SPEC.match(text.strip())
    if not m:
        raise BadInput(f"cannot parse model {text!r}; expected INSTR, THEORY, THEORY@INSTR, "
                       "SPEC[P=V,...] or N*SPEC")
    name, at = m.group("name").strip(), m.group("instr")
    ts = _theory.default()
    try:
        if "/" in name:
            if at:
                raise BadInput(f"{text!r}: @INSTR goes after a theory id, not an instruction")
            ins = isa.lookup(name)
            base = ts.resolve(ins)
        else:
            t = ts.get(name)
            target = at or instr
            members = ts.instructions_of(t.id)
            if target:
                tins = isa.lookup(target)
                if tins.name not in members:
                    raise BadInput(f"theory {t.id!r} does not cover {tins.name}")
                base = ts.resolve(tins, t.id)
            else:
                base = ts.resolve(members[0], t.id)
    except BadInput:
        raise
    except ValueError as e:
        raise BadInput(str(e).splitlines()[0]) from None
    changes, rd = {}, False
    if m.group("changes"):
        for item in m.group("changes").split(","):
            if not item.strip():
                continue
            if "=" not in item:
                raise BadInput(f"{text!r}: a change is PARAM=VALUE, got {item!r}")
            k, v = (s.strip() for s in item.split("=", 1))
            if k == "align":
                if v not in OP_MUTATIONS["align"]:
                    raise BadInput(f"{text!r}: align must be RZ or RD")
                rd = v == "RD"
                continue
            changes[k] = parse_param_value(v)
    try:
        th = base.replace(**changes) if changes else base
    except (ValueError, TypeError) as e:
        raise BadInput(str(e).splitlines()[0]) from None
    n = int(m.group("n") or 1)
    if n < 1:
        raise BadInput(f"{text!r}: chain count must be >= 1")
    if n > 1 and th.instr.c != th.instr.d:
        raise BadInput(f"{text!r}: a chain needs an instruction with c and d of one format")
    return Model(text.strip(), th, base, changes, rd, n)


def _explicit(spec: str) -> bool:
    """The spec names its instruction (INSTR or THEORY@INSTR)."""
    m = _SPEC.match(spec.strip())
    return bool(m) and ("/" in m.group("name") or bool(m.group("instr")))


def resolve_pair(A: str, B: str, instr: str | None = None) -> tuple[Model, Model]:
    """Both specs; a bare theory id is bound to --instr, else to the other side's instruction
    (when it covers it), else to the first instruction the two theories share, else to its
    own first instruction."""
    if instr:
        mA, mB = resolve(A, instr), resolve(B, instr)
    elif _explicit(A) or not _explicit(B):
        mA = resolve(A)
        try:
            mB = resolve(B, mA.ins.name)
        except BadInput:
            mB = resolve(B)
        if not _explicit(A) and not _explicit(B) and mA.ins.name != mB.ins.name:
            ts = _theory.default()
            common = [n for n in ts.instructions_of(mA.theory.id)
                      if n in set(ts.instructions_of(mB.theory.id))]
            if common:
                mA, mB = resolve(A, common[0]), resolve(B, common[0])
    else:
        mB = resolve(B)
        try:
            mA = resolve(A, mB.ins.name)
        except BadInput:
            mA = resolve(A)
    if mA.label == mB.label:
        mB.label = mB.label + " (B)"
    return mA, mB


def check_same_formats(A: Model, B: Model) -> None:
    fa, fb = A.formats, B.formats
    names = ("a", "b", "c", "d", "scale")
    for i, what in enumerate(names):
        if fa[i] != fb[i]:
            raise BadInput(f"{A.label} and {B.label} have different {what} formats "
                           f"({fa[i] or 'none'} vs {fb[i] or 'none'}): nothing to compare")
    if fa[4] and fa[5] != fb[5]:
        raise BadInput(f"{A.label} and {B.label} have different scale blocks ({fa[5]} vs {fb[5]})")


# ============================================================================================
# Symbolic inputs and witnesses
# ============================================================================================

def scale_one(scale: str) -> int:
    return {"ue8m0": 0x7F, "ue4m3": 0x38}[scale]


@dataclasses.dataclass
class Inputs:
    """Free variables of one dot product: a[k], b[k] (k < kdim), c, scale elements."""

    K: Z3Backend
    fa: str
    fb: str
    fc: str
    kdim: int
    fs: str = ""
    nscale: int = 0
    prefix: str = ""

    def __post_init__(self):
        K, p = self.K, self.prefix
        w = lambda f: fp.fmt(f).storage
        self.a = [K.var(f"{p}a{i}", w(self.fa)) for i in range(self.kdim)]
        self.b = [K.var(f"{p}b{i}", w(self.fb)) for i in range(self.kdim)]
        self.c = K.var(f"{p}c", w(self.fc))
        self.sa = [K.var(f"{p}sa{j}", 8) for j in range(self.nscale)] if self.fs else None
        self.sb = [K.var(f"{p}sb{j}", 8) for j in range(self.nscale)] if self.fs else None

    @classmethod
    def for_model(cls, K, m: Model, kdim: int | None = None, prefix: str = "") -> "Inputs":
        i = m.ins
        kdim = m.k if kdim is None else kdim
        ns = kdim // i.scale_block if i.scale else 0
        return cls(K, i.a, i.b, i.c, kdim, i.scale, ns, prefix)

    def all(self) -> list[BV]:
        return self.a + self.b + [self.c] + (self.sa or []) + (self.sb or [])

    def names(self) -> list[str]:
        return [str(x.v) for x in self.all()]

    def padded(self, m: Model):
        """(a, b, c, sa, sb) for model m: a and b padded with +0 (scales with 1.0) to m.k."""
        K = self.K
        extra = m.k - self.kdim
        zero = lambda f: K.const(0, fp.fmt(f).storage, False)
        a = self.a + [zero(self.fa)] * extra
        b = self.b + [zero(self.fb)] * extra
        sa = sb = None
        if self.fs:
            more = m.nscale - self.nscale
            sa = self.sa + [K.const(scale_one(self.fs), 8, False)] * more
            sb = self.sb + [K.const(scale_one(self.fs), 8, False)] * more
        return a, b, self.c, sa, sb

    def witness(self, model: dict[str, int]) -> "Witness":
        g = lambda x: int(model.get(str(x.v), 0))
        return Witness(self.fa, self.fb, self.fc, [g(x) for x in self.a], [g(x) for x in self.b],
                       g(self.c), self.fs, [g(x) for x in self.sa] if self.sa else None,
                       [g(x) for x in self.sb] if self.sb else None)

    def block(self, w: "Witness"):
        """z3: the inputs differ from witness w (to find another one)."""
        import z3
        vals = w.a + w.b + [w.c] + (w.scale_a or []) + (w.scale_b or [])
        return z3.Or([x.v != v for x, v in zip(self.all(), vals)])


def hex_bits(v: int, f: str) -> str:
    return f"0x{int(v):0{fp.fmt(f).storage // 4}X}"


@dataclasses.dataclass
class Witness:
    """One concrete input: raw bit patterns (storage elements) of a, b, c and the scales."""

    fa: str
    fb: str
    fc: str
    a: list
    b: list
    c: int
    fs: str = ""
    scale_a: list | None = None
    scale_b: list | None = None

    def to_json(self) -> dict:
        return {"a": [hex_bits(x, self.fa) for x in self.a], "b": [hex_bits(x, self.fb) for x in self.b],
                "c": hex_bits(self.c, self.fc),
                "scale_a": [hex_bits(x, self.fs) for x in self.scale_a] if self.scale_a else None,
                "scale_b": [hex_bits(x, self.fs) for x in self.scale_b] if self.scale_b else None}

    @classmethod
    def from_json(cls, d: dict, fa: str, fb: str, fc: str, fs: str = "") -> "Witness":
        h = lambda x: int(x, 16)
        return cls(fa, fb, fc, [h(x) for x in d["a"]], [h(x) for x in d["b"]], h(d["c"]), fs,
                   [h(x) for x in d["scale_a"]] if d.get("scale_a") else None,
                   [h(x) for x in d["scale_b"]] if d.get("scale_b") else None)

    def padded(self, k: int, nscale: int = 0) -> "Witness":
        e = k - len(self.a)
        ns = nscale - len(self.scale_a or [])
        return Witness(self.fa, self.fb, self.fc, self.a + [0] * e, self.b + [0] * e, self.c,
                       self.fs, (self.scale_a or []) + [scale_one(self.fs)] * ns if self.fs else None,
                       (self.scale_b or []) + [scale_one(self.fs)] * ns if self.fs else None)

    def render(self) -> list[str]:
        from ..simulate import decimal, value_of
        v = lambda x, f: decimal(value_of(x, f))
        out = []
        for k, (x, y) in enumerate(zip(self.a, self.b)):
            out.append(f"  k={k:<3} a={hex_bits(x, self.fa)} ({v(x, self.fa)})  "
                       f"b={hex_bits(y, self.fb)} ({v(y, self.fb)})")
        out.append(f"  c={hex_bits(self.c, self.fc)} ({v(self.c, self.fc)})")
        for role in ("scale_a", "scale_b"):
            s = getattr(self, role)
            if s:
                out.append(f"  {role}: " + ", ".join(f"{hex_bits(x, self.fs)} ({v(x, self.fs)})" for x in s))
        return out


# ============================================================================================
# Negation and comparison of storage elements (shared by the claims)
# ============================================================================================

def neg_bits(x: BV, f: "str | fp.Format") -> BV:
    """-x: flip the sign bit; in formats without -0 (fnuz) the zero and the NaN code (the
    sign-bit pattern) are their own negations. Unsigned formats are returned unchanged.
    Signed integer formats: two's complement negation of the k value bits, wrapping (so the
    most negative value, e.g. s8 -128, is its own negation)."""
    f = fp.fmt(f)
    if not f.signed:
        return x
    if f.is_int:
        m = (1 << f.k) - 1
        return ((x & m) ^ m).add_wrap(1) & m
    sb = f.sign_bit << f.pad
    if f.nan == "negzero":
        mag = x & ((1 << (f.k - 1)) - 1) << f.pad
        return ite(mag == 0, x, x ^ sb)
    return x ^ sb


def approx_equal(x: BV, y: BV, f: "str | fp.Format"):
    """x ~ y: equal bits, or both NaN, or both zero (+0 ~ -0). An equivalence relation.
    Integer formats: equal bits."""
    f = fp.fmt(f)
    if f.is_int:
        return x == y
    u, v = fp.decode(f, x), fp.decode(f, y)
    return (u.nan & v.nan) | (u.zero & v.zero) | (x == y)


# ============================================================================================
# SMT-LIB text and the solver call
# ============================================================================================

def smt2_text(assertions) -> str:
    """SMT-LIB2 text of z3 assertions, independent of the process's history: the terms are
    first translated into a fresh z3 context (so AST ids, which order z3's let-bindings, come
    from one deterministic traversal), then printed like solvers.to_smt2."""
    import z3
    ctx = z3.Context()
    s = z3.Solver(ctx=ctx)
    for a in assertions:
        s.add(a.translate(ctx))
    text = s.to_smt2()
    if "(set-logic" not in text:
        text = "(set-logic ALL)\n" + text
    return text


_MUL = None


def _mulops():
    global _MUL
    if _MUL is None:
        import z3
        _MUL = {z3.Z3_OP_BUMUL_NO_OVFL: "u", z3.Z3_OP_BSMUL_NO_OVFL: "so",
                z3.Z3_OP_BSMUL_NO_UDFL: "su"}
    return _MUL


def portable(e, memo: dict | None = None):
    """The z3 Bool e with z3's non-standard overflow predicates (bvumul_noovfl, ...) written
    in standard SMT-LIB bit-vector operations, so bitwuzla and cvc5 read the exported query."""
    import z3
    MUL = _mulops()
    memo = {} if memo is None else memo
    key = e.get_id()
    if key in memo:
        return memo[key]
    if z3.is_app(e) and e.decl().kind() in MUL:
        x, y = e.arg(0), e.arg(1)
        w = x.size()
        kind = MUL[e.decl().kind()]
        if kind == "u":
            r = z3.Extract(2 * w - 1, w, z3.ZeroExt(w, x) * z3.ZeroExt(w, y)) == 0
        else:
            p = z3.SignExt(w, x) * z3.SignExt(w, y)
            r = p <= (1 << (w - 1)) - 1 if kind == "so" else p >= -(1 << (w - 1))
    elif z3.is_bool(e) and z3.is_app(e) and e.num_args() and any(z3.is_bool(c) for c in e.children()):
        r = e.decl()(*[portable(c, memo) if z3.is_bool(c) else c for c in e.children()])
    else:
        r = e
    memo[key] = r
    return r


def free_vars(*exprs) -> set[str]:
    """Names of the uninterpreted constants in z3 expressions (iterative, shared DAG once)."""
    import z3
    seen, out, stack = set(), set(), list(exprs)
    while stack:
        e = stack.pop()
        i = e.get_id()
        if i in seen:
            continue
        seen.add(i)
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            out.add(e.decl().name())
        elif z3.is_app(e):
            stack.extend(e.children())
    return out


@dataclasses.dataclass
class Lemma:
    """One sub-query: `assertions` is the negation of the lemma (UNSAT proves it)."""

    name: str
    role: str
    assertions: list
    _text: str = ""

    @property
    def text(self) -> str:
        if not self._text:
            self._text = canonical_text(self.assertions)
        return self._text


def canonical_text(assertions) -> str:
    """SMT-LIB2 text with the input variables renamed x0, x1, ... in name order (cut
    variables, which end in '_', keep their names), and declarations sorted."""
    import z3
    names = sorted(n for n in free_vars(*assertions) if not n.endswith("_"))
    consts = {}
    stack, seen = list(assertions), set()
    want = set(names)
    while stack and len(consts) < len(want):
        e = stack.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            if e.decl().name() in want:
                consts[e.decl().name()] = e
        elif z3.is_app(e):
            stack.extend(e.children())
    pairs = []
    for i, n in enumerate(names):
        e = consts[n]
        new = z3.BitVec(f"x{i}", e.size()) if z3.is_bv(e) else z3.Bool(f"x{i}")
        pairs.append((e, new))
    if pairs:
        assertions = [z3.substitute(a, *pairs) for a in assertions]
    text = smt2_text(assertions)
    lines = text.split("\n")
    decl = sorted(l for l in lines if l.startswith("(declare-fun") or l.startswith("(declare-const"))
    rest = [l for l in lines if not (l.startswith("(declare-fun") or l.startswith("(declare-const"))]
    head = [l for l in rest if l.startswith("(set-") or l.startswith("; ")]
    body = [l for l in rest if l not in head]
    return "\n".join(head + decl + body)


#: bitwuzla's bit-vector engine for these queries: propagation-based local search first, then
#: bit-blasting (mmaformal.query.solvers, option bitwuzla_engine)
BITWUZLA_ENGINE = "preprop"


def check(text: str, solver: str = "bitwuzla", timeout: float | None = None) -> Result:
    """Solve SMT-LIB2 text. "portfolio": every solver in its own process, the first definite
    answer wins. A time-out or a solver error is "unknown" with the time spent."""
    if solver != "portfolio" and solver not in SOLVERS:
        raise BadInput(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)} or portfolio")
    return solve(text, solver, timeout, bitwuzla_engine=BITWUZLA_ENGINE)


# ============================================================================================
# Concrete replay
# ============================================================================================

def concrete_inputs(K, w: Witness):
    st = lambda f: fp.fmt(f).storage
    if K is INT:
        mk = lambda v, f: INT.const(int(v), st(f), False)
    else:
        mk = lambda v, f: NUMPY.lift(np.array([int(v)], dtype=object if st(f) > 62 else np.int64), st(f))
    a = [mk(x, w.fa) for x in w.a]
    b = [mk(x, w.fb) for x in w.b]
    c = mk(w.c, w.fc)
    sa = [mk(x, w.fs) for x in w.scale_a] if w.scale_a else None
    sb = [mk(x, w.fs) for x in w.scale_b] if w.scale_b else None
    return a, b, c, sa, sb


def _compiled(m: Model, w: Witness) -> int:
    from ..compile import compile_kernel
    st = lambda f: fp.fmt(f).storage
    k, ns = m.k, m.nscale
    ins_st = [st(w.fa)] * k + [st(w.fb)] * k + [st(w.fc)] + [8] * (2 * ns)

    def fn(K, *xs):
        a, b, c = list(xs[:k]), list(xs[k:2 * k]), xs[2 * k]
        sa = list(xs[2 * k + 1:2 * k + 1 + ns]) if ns else None
        sb = list(xs[2 * k + 1 + ns:]) if ns else None
        return m.dot(K, a, b, c, sa, sb)
    kern = compile_kernel(fn, ins_st, [st(m.ins.d)], key=("mmaformal.query", m.key()))
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
    arrs = [np.array([v], dtype=dt[s]) for v, s in
            zip(w.a + w.b + [w.c] + (w.scale_a or []) + (w.scale_b or []), ins_st)]
    return int(kern(*arrs)[0][0])




#: the concrete back-ends a witness can be replayed on (`--replay`)
BACKENDS = ("int", "numpy", "compiled")


def parse_backends(text: str) -> tuple[str, ...]:
    """The `--replay` option: comma-separated names of BACKENDS."""
    bs = tuple(s.strip() for s in text.split(",") if s.strip())
    bad = [b for b in bs if b not in BACKENDS]
    if bad or not bs:
        raise BadInput(f"--replay takes {', '.join(BACKENDS)}, got {text!r}")
    return bs


def evaluate(m: Model, w: Witness, backend: str = "int") -> int:
    """Output bits of model m on witness w (padded to m.k) on one concrete back-end."""
    w = w.padded(m.k, m.nscale)
    if backend == "compiled":
        return _compiled(m, w)
    K = INT if backend == "int" else NUMPY
    d = m.dot(K, *concrete_inputs(K, w))
    v = d.v
    return int(v if K is INT else np.asarray(v).reshape(-1)[0])


def replay(models: Sequence[Model], w: Witness, backends: Sequence[str] = ("int", "numpy")) -> dict:
    """{label: output bits}, checked to agree across the back-ends; a back-end that overflows
    or disagrees is an InternalError. The compiled path is skipped (noted) where unavailable."""
    out, skipped = {}, []
    for m in models:
        vals = {}
        for be in backends:
            try:
                vals[be] = evaluate(m, w, be)
            except OverflowError as e:
                raise InternalError(f"the witness overflows a checked operation of {m.label} on "
                                    f"the {be} back-end ({e}): not a legal input") from None
            except Exception as e:
                if be == "compiled":
                    skipped.append(f"compiled path skipped for {m.label}: {str(e).splitlines()[0]}")
                    continue
                raise
        if len(set(vals.values())) != 1:
            raise InternalError(f"back-ends disagree on {m.label}: " +
                                ", ".join(f"{k}={hex(v)}" for k, v in vals.items()))
        out[m.label] = next(iter(vals.values()))
    replay.skipped = skipped  # type: ignore[attr-defined]
    return out


# ============================================================================================
# Which elementary step differs
# ============================================================================================

def step_diff(A: Model, B: Model, w: Witness) -> str:
    """The first step of the white-box traces (mmaformal.explain) where the two models
    differ, as one line; "" when a model is not a plain theory (chain, RD-twin)."""
    from ..explain import explain
    if A.n != 1 or B.n != 1 or A.rd or B.rd:
        return ""
    try:
        ra = explain(A.ins, w.padded(A.k).a, w.padded(A.k).b, w.c,
                     w.padded(A.k, A.nscale).scale_a, w.padded(A.k, A.nscale).scale_b, A.theory)
        rb = explain(B.ins, w.padded(B.k).a, w.padded(B.k).b, w.c,
                     w.padded(B.k, B.nscale).scale_a, w.padded(B.k, B.nscale).scale_b, B.theory)
    except Exception as e:  # explain is a diagnostic: never fail the verb on it
        return f"(trace unavailable: {str(e).splitlines()[0]})"
    keys = ("e_max", "S", "T'", "c'", "E", "exact", "finite_result", "rule", "bits",
            "accumulator_in", "products", "k")

    def brief(s):
        d = {}
        for k in keys:
            if k in s:
                v = s[k]
                d[k] = v["bits"] if isinstance(v, dict) and "bits" in v else v
        return json.dumps(d, sort_keys=True, default=str)
    sa, sb = ra["steps"], rb["steps"]
    ka = [s["k"] for s in sa if s["step"] == "block"]
    kb = [s["k"] for s in sb if s["step"] == "block"]
    pre = ""
    if ka != kb:
        r = lambda ks: "; ".join(f"k={b[0]}..{b[-1]}" for b in ks)
        pre = f"block structure differs ({A.label}: {r(ka)} | {B.label}: {r(kb)}); "
        sa = [s for s in sa if s["step"] not in ("block", "block result")]
        sb = [s for s in sb if s["step"] not in ("block", "block result")]
    for i, (x, y) in enumerate(zip(sa, sb)):
        if x["step"] != y["step"]:
            return pre + f"the compositions differ ({A.label}: {x['step']}, {B.label}: {y['step']})"
        bx, by = brief(x), brief(y)
        if bx != by:
            return pre + f"first differing step: {x['step']}: {A.label}: {bx}  |  {B.label}: {by}"
    if len(sa) != len(sb):
        return pre + f"the traces have {len(sa)} and {len(sb)} steps"
    return pre + "the traces agree step by step except in the output bits"


# ============================================================================================
# Mutations for broken twins
# ============================================================================================

def twin_mutations(m: Model) -> list[dict]:
    """Parameter changes that make a model compute something else (for broken twins), in the
    order tried: fewer fraction bits, another output rounding, another rounding mode."""
    p = m.theory.param_dict
    out = []
    if "F" in p:
        out.append({"F": p["F"] - 1})
    if "F2" in p:
        out.append({"F2": p["F2"] - 1})
    if p.get("rho") == "RZ-FP32":
        out.append({"rho": "RNE-FP32"})
    if "mode" in p:
        out.append({"mode": "RZ" if p["mode"] != "RZ" else "RNE"})
    if "P" in p:
        out.append({"P": 2 if p["P"] == 4 else 4})
    if "sat" in p:                  # integer: clamp where the qualifier wraps, or vice versa
        out.append({"sat": "never" if m.theory.instr is not None and m.theory.instr.satfinite
                    else "always"})
    return out


def mutate(m: Model, changes: dict, label: str | None = None) -> Model:
    ch = dict(m.changes)
    ch.update(changes)
    th = m.base.replace(**ch)
    lab = label or f"{m.label}[{','.join(f'{k}={v}' for k, v in changes.items())}]"
    return Model(lab, th, m.base, ch, m.rd, m.n)
