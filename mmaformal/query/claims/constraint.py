"""Layer 5, query/claims/constraint: the small constraint language of user claims.

    CONSTRAINT := ATOM ('and' ATOM)*
    ATOM       := finite                         every element of a, b, c is finite
                | int(OPS)                       each element named is finite and integer-valued
                | abs(OPS) < V  |  abs(OPS) <= V each element named is finite, |x| below V
                | OPS == V  |  OPS != V          value equality (== 0: either zero)
    OPS        := OP (',' OP)*      OP := a | b | c | a[i] | b[i]     (a, b: every element)
    V          := an integer or decimal literal, 2^N or 2**N, and + - * / of those (parenthesize
                  a power inside a product: 3*(2^10); ^ is power here, never xor)

Example: ``int(a,b) and abs(a,b) < 2^10 and c == 0``. Parsed with the ast module and a whitelist
of node types (nothing is evaluated as Python); anything else is BadInput (one line).
Each atom has a symbolic form (z3 terms over `Inputs`, as magnitude-code comparisons) and a
concrete one (exact Fractions over a `Witness`), so a witness is re-checked without the solver.

May import: mmaformal.fp, .bits, mmaformal.query.frame, .model (simulate lazily), z3 lazily.
Invariant: the symbolic and the concrete form of an atom hold on exactly the same raw inputs.
"""
from __future__ import annotations

import ast
import dataclasses
from fractions import Fraction

from ... import fp
from ..frame import BadInput
from ..model import Inputs, Witness

__all__ = ["CONSTRAINT_HELP", "Atom", "Constraint", "parse_constraint", "mag_value", "codes_below",
           "symbolic_atom"]

CONSTRAINT_HELP = ("constraint language: ATOM and ATOM ..., ATOM one of finite | int(OPS) | "
                   "abs(OPS) < V | abs(OPS) <= V | OPS == V | OPS != V, OPS: a, b, c, a[i], b[i] "
                   "comma-separated, V: a number, 2^N, and + - * / of those "
                   "(e.g. \"int(a,b) and abs(a,b) < 2^10 and c == 0\")")

_OPERANDS = ("a", "b", "c")


@dataclasses.dataclass(frozen=True)
class Atom:
    """One conjunct: kind "finite" | "int" | "abs" | "eq"; operands [(name, index or None)];
    op "<" | "<=" | "==" | "!="; value a Fraction (abs, eq)."""

    kind: str
    operands: tuple = ()
    op: str = ""
    value: Fraction | None = None

    def text(self) -> str:
        ops = ",".join(n if i is None else f"{n}[{i}]" for n, i in self.operands)
        v = _vtext(self.value) if self.value is not None else ""
        if self.kind == "finite":
            return "finite"
        if self.kind == "int":
            return f"int({ops})"
        if self.kind == "abs":
            return f"abs({ops}) {self.op} {v}"
        return f"{ops} {self.op} {v}" if len(self.operands) == 1 else f"({ops}) {self.op} {v}"


def _vtext(v: Fraction) -> str:
    if v > 0 and v.denominator == 1 and v.numerator & (v.numerator - 1) == 0 and v >= 1024:
        return f"2^{v.numerator.bit_length() - 1}"
    if v > 0 and v.numerator == 1 and v.denominator & (v.denominator - 1) == 0 and v.denominator > 1:
        return f"2^-{v.denominator.bit_length() - 1}"
    return str(v)


@dataclasses.dataclass(frozen=True)
class Constraint:
    """A conjunction of atoms (the empty one holds everywhere)."""

    atoms: tuple = ()

    def text(self) -> str:
        return " and ".join(a.text() for a in self.atoms) or "true"

    def bounds(self) -> list[Atom]:
        return [a for a in self.atoms if a.kind == "abs"]

    def raised(self, bits: int = 1) -> "Constraint":
        """Every magnitude bound multiplied by 2^bits (abs(x) < 2^p -> abs(x) < 2^(p+bits))."""
        return Constraint(tuple(dataclasses.replace(a, value=a.value * 2 ** bits)
                                if a.kind == "abs" else a for a in self.atoms))

    def symbolic(self, inp: Inputs) -> list:
        out = []
        for a in self.atoms:
            out += symbolic_atom(a, inp)
        return out

    def holds(self, w: Witness) -> bool:
        return all(_concrete(a, w) for a in self.atoms)


# --------------------------------------------------------------------------------------------
# parsing (ast, whitelisted)


def _bad(text: str, why: str):
    raise BadInput(f"cannot parse constraint {text!r}: {why}; {CONSTRAINT_HELP}")


def _value(node, text: str) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float) :
        if isinstance(node.value, float):
            return Fraction(ast.get_source_segment(text, node) or repr(node.value))
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _value(node.operand, text)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        x, y = _value(node.left, text), _value(node.right, text)
        if isinstance(node.op, (ast.BitXor, ast.Pow)):
            if y.denominator != 1 or abs(y) > 4096:
                _bad(text, f"the exponent of a power must be an integer of at most 4096, not {y}")
            if x == 0 and y < 0:
                _bad(text, "0 to a negative power")
            return x ** int(y)
        if isinstance(node.op, ast.Add):
            return x + y
        if isinstance(node.op, ast.Sub):
            return x - y
        if isinstance(node.op, ast.Mult):
            return x * y
        if isinstance(node.op, ast.Div):
            if y == 0:
                _bad(text, "division by zero")
            return x / y
    _bad(text, f"{ast.get_source_segment(text, node) or type(node).__name__!r} is not a number")


def _operand(node, text: str) -> tuple:
    if isinstance(node, ast.Name) and node.id in _OPERANDS:
        return (node.id, None)
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id in ("a", "b") and isinstance(node.slice, ast.Constant)
            and type(node.slice.value) is int and node.slice.value >= 0):
        return (node.value.id, node.slice.value)
    _bad(text, f"{ast.get_source_segment(text, node) or type(node).__name__!r} is not an operand "
               f"(a, b, c, a[i], b[i])")


def _operands(nodes, text: str) -> tuple:
    if not nodes:
        _bad(text, "name at least one operand")
    return tuple(_operand(n, text) for n in nodes)


def _atom(node, text: str) -> Atom:
    if isinstance(node, ast.Name) and node.id == "finite":
        return Atom("finite")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int":
        if node.keywords:
            _bad(text, "int() takes operands only")
        return Atom("int", _operands(node.args, text))
    if isinstance(node, ast.Compare):
        if len(node.ops) != 1:
            _bad(text, "one comparison per atom (join atoms with 'and')")
        lhs, op, rhs = node.left, node.ops[0], node.comparators[0]
        if isinstance(lhs, ast.Call) and isinstance(lhs.func, ast.Name) and lhs.func.id == "abs":
            if lhs.keywords or not isinstance(op, (ast.Lt, ast.LtE)):
                _bad(text, "abs(...) takes < or <= a bound")
            v = _value(rhs, text)
            if v <= 0:
                _bad(text, f"a magnitude bound must be positive, not {v}")
            return Atom("abs", _operands(lhs.args, text), "<" if isinstance(op, ast.Lt) else "<=", v)
        if isinstance(op, (ast.Eq, ast.NotEq)):
            ops = _operands(lhs.elts if isinstance(lhs, ast.Tuple) else [lhs], text)
            return Atom("eq", ops, "==" if isinstance(op, ast.Eq) else "!=", _value(rhs, text))
        _bad(text, "compare an operand with == or !=, a magnitude abs(...) with < or <=")
    _bad(text, f"{ast.get_source_segment(text, node) or type(node).__name__!r} is not an atom")


def parse_constraint(text: "str | Constraint | None") -> Constraint:
    """The Constraint of a text in the language above (None or "": no constraint). BadInput
    (one line) on anything else."""
    if isinstance(text, Constraint):
        return text
    if text is None or not str(text).strip():
        return Constraint()
    text = " ".join(str(text).split())
    if len(text) > 2000:
        _bad(text[:40] + "...", "longer than 2000 characters")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError as e:
        _bad(text, f"syntax error at column {e.offset}")
    nodes = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
    if isinstance(tree, ast.BoolOp) and not isinstance(tree.op, ast.And):
        _bad(text, "only 'and' joins atoms")
    return Constraint(tuple(_atom(n, text) for n in nodes))


# --------------------------------------------------------------------------------------------
# meaning


def _elements(inp_or_w, name: str, idx, kind: str) -> list:
    xs = {"a": inp_or_w.a, "b": inp_or_w.b, "c": [inp_or_w.c]}[name]
    if idx is None:
        return list(xs)
    if idx >= len(xs):
        raise BadInput(f"constraint: {name}[{idx}] is out of range (this instruction has "
                       f"{len(xs)} elements of {name})")
    return [xs[idx]]


def _fmt_of(inp_or_w, name: str) -> str:
    return {"a": inp_or_w.fa, "b": inp_or_w.fb, "c": inp_or_w.fc}[name]


def _all(a: Atom, inp_or_w):
    ops = a.operands or tuple((n, None) for n in _OPERANDS)
    for name, idx in ops:
        f = _fmt_of(inp_or_w, name)
        for x in _elements(inp_or_w, name, idx, a.kind):
            yield x, f


def mag_value(F, code: int) -> Fraction:
    """The value of the finite magnitude code `code` of format F (0 for a zero)."""
    from ...simulate import value_of
    v = value_of(code << F.pad, F.name)
    return Fraction(0) if v in ("0", "-0") else v


def codes_below(F, V: Fraction, strict: bool) -> int:
    """The number of finite magnitude codes whose value is < V (<= V when not strict): the
    values grow with the code, so the set is 0 .. result - 1."""
    lo, hi = 0, F.max_code + 1          # invariant: codes < lo qualify, codes >= hi do not
    while lo < hi:
        mid = (lo + hi) // 2
        v = mag_value(F, mid)
        if (v < V) if strict else (v <= V):
            lo = mid + 1
        else:
            hi = mid
    return lo


def symbolic_atom(a: Atom, inp: Inputs) -> list:
    """The z3 constraints of one atom on the elements of `inp` it names."""
    import z3
    out = []
    for x, f in _all(a, inp):
        F = fp.fmt(f)
        if F.is_int:
            v = fp.int_value(F, x).v
            w = v.size()
            if a.kind in ("finite", "int"):
                continue
            if a.kind == "abs":
                lim = (a.value.__ceil__() - 1) if a.op == "<" else a.value.__floor__()
                lim = min(lim, 1 << (w - 1))
                out.append(z3.And(v <= lim, v >= -lim) if lim >= 0 else z3.BoolVal(False))
            else:
                eq = (z3.BoolVal(False) if a.value.denominator != 1 or
                      not F.lo <= a.value <= F.hi else v == int(a.value))
                out.append(eq if a.op == "==" else z3.Not(eq))
            continue
        u = fp.decode(F, x)
        fin = z3.Not((u.nan | u.inf).v)
        if a.kind == "finite":
            out.append(fin)
        elif a.kind == "int":
            cases = [u.zero.v]
            for e in range(F.emin, F.t):
                low = (1 << (F.t - e)) - 1
                cases.append(z3.And(u.exp.v == e, (u.sig.v & low) == 0))
            cases.append(u.exp.v >= F.t)
            out.append(z3.And(fin, z3.Or(*cases)))
        elif a.kind == "abs":
            n = codes_below(F, a.value, a.op == "<")
            mag = x.extract(F.pad + F.w + F.t - 1, F.pad).v
            out.append(z3.And(fin, z3.ULT(mag, n) if n < (1 << (F.w + F.t)) else z3.BoolVal(True)))
        else:
            from ...simulate import bits_of
            if a.value == 0:
                eq = u.zero.v
            else:
                b = bits_of(a.value, F.name)
                eq = z3.BoolVal(False) if b is None else x.v == b
            out.append(eq if a.op == "==" else z3.Not(eq))
    return out


def _concrete(a: Atom, w: Witness) -> bool:
    from ...simulate import value_of
    for x, f in _all(a, w):
        v = value_of(x, f)
        finite = v not in ("nan", "inf", "-inf")
        val = Fraction(0) if v in ("0", "-0") else v
        if a.kind == "finite":
            ok = finite
        elif a.kind == "int":
            ok = finite and val.denominator == 1
        elif a.kind == "abs":
            ok = finite and (abs(val) < a.value if a.op == "<" else abs(val) <= a.value)
        else:
            eq = finite and val == a.value
            ok = eq if a.op == "==" else not eq
        if not ok:
            return False
    return True
