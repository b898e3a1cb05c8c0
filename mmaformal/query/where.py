"""Layer 5, query/where: the `--where` constraint language of the query verbs.

`parse_where(items, inp)` turns items such as `finite`, `a[0]=0x3C00`, `exp(b)<=-3` or
`c!=-0` into z3 constraints on the free variables of one dot product (`model.Inputs`);
WHERE_HELP is the one-line summary the verbs print. (The constraint language of `prove
exact`'s claims is query.claims.constraint.)

May import: mmaformal.query.model (Inputs), .frame, mmaformal.fp, simulate (lazily), z3
(lazily).
Invariant: a constraint that cannot be parsed, or names an element the instruction does not
have, is a BadInput with the item quoted; nothing is silently dropped.
"""
from __future__ import annotations

import re
from typing import Iterable

from .. import fp
from ..bits import BV
from .frame import BadInput
from .model import Inputs

__all__ = ["WHERE_HELP", "parse_where"]


WHERE_HELP = ("constraints: finite | nonan | noinf | nosubnormal | X=0 (either zero) | X=+0 | "
              "X=-0 | X=0xHEX (raw bits) | X=VALUE (exact decimal) | X!=... | exp(X)<=E | "
              "exp(X)>=E, where X is a, b, c, a[i], b[i], scale_a[j] or scale_b[j] (a and b: every "
              "element); exp() is the Exp() of semantics.md of a finite nonzero element (zeros, "
              "Inf and NaN are exempt)")

_ITEM = re.compile(r"^(?P<lhs>exp\(\s*[a-z_]+(?:\[\d+\])?\s*\)|[a-z_]+(?:\[\d+\])?)\s*"
                   r"(?P<op><=|>=|!=|=)\s*(?P<rhs>\S+)$")


def _targets(inp: Inputs, t: str, item: str) -> list[tuple[BV, str]]:
    m = re.fullmatch(r"([a-z_]+)(?:\[(\d+)\])?", t)
    if not m:
        raise BadInput(f"cannot parse constraint {item!r}: unknown operand {t!r}; {WHERE_HELP}")
    name, idx = m.group(1), m.group(2)
    table = {"a": (inp.a, inp.fa), "b": (inp.b, inp.fb), "c": ([inp.c], inp.fc),
             "scale_a": (inp.sa or [], inp.fs), "scale_b": (inp.sb or [], inp.fs)}
    if name not in table:
        raise BadInput(f"cannot parse constraint {item!r}: unknown operand {name!r}; {WHERE_HELP}")
    xs, f = table[name]
    if not xs:
        raise BadInput(f"constraint {item!r}: this instruction has no {name}")
    if idx is not None:
        if name == "c":
            raise BadInput(f"constraint {item!r}: c is one element (write c, not c[i])")
        i = int(idx)
        if i >= len(xs):
            raise BadInput(f"constraint {item!r}: index {i} out of range (length {len(xs)})")
        xs = [xs[i]]
    return [(x, f) for x in xs]


def _value_bits(rhs: str, f: str, item: str) -> int:
    from ..simulate import bits_of, parse_value
    try:
        v = parse_value(rhs)
    except ValueError:
        raise BadInput(f"cannot parse constraint {item!r}: {rhs!r} is not a value; {WHERE_HELP}") from None
    b = bits_of(v, f)
    if b is None:
        raise BadInput(f"constraint {item!r}: {rhs} is not a value of format {f}")
    return b


def parse_where(items: Iterable[str], inp: Inputs) -> list:
    """The z3 constraints of a list of --where items (each may hold several, comma-separated)."""
    import z3
    out = []
    flat = [s.strip() for it in items for s in re.split(r"[,;]", it) if s.strip()]
    for item in flat:
        low = item.replace(" ", "")
        if low in ("finite", "nonan", "noinf", "nosubnormal"):
            for x, f in [(x, inp.fa) for x in inp.a] + [(x, inp.fb) for x in inp.b] + \
                    [(inp.c, inp.fc)] + [(x, inp.fs) for x in (inp.sa or []) + (inp.sb or [])]:
                u = fp.decode(f, x)
                F = fp.fmt(f)
                if low == "finite":
                    out.append(z3.Not((u.nan | u.inf).v))
                elif low == "nonan":
                    out.append(z3.Not(u.nan.v))
                elif low == "noinf":
                    out.append(z3.Not(u.inf.v))
                elif F.subnormals:
                    sub = ~u.zero & (u.sig < (1 << F.t)) & u.finite if F.t else u.zero & ~u.zero
                    out.append(z3.Not(sub.v))
            continue
        m = _ITEM.match(low)
        if not m:
            raise BadInput(f"cannot parse constraint {item!r}; {WHERE_HELP}")
        lhs, op, rhs = m.group("lhs"), m.group("op"), m.group("rhs")
        if lhs.startswith("exp("):
            if op not in ("<=", ">="):
                raise BadInput(f"constraint {item!r}: exp() takes <= or >=")
            try:
                E = int(rhs)
            except ValueError:
                raise BadInput(f"constraint {item!r}: the exponent must be an integer") from None
            for x, f in _targets(inp, lhs[4:-1], item):
                u = fp.decode(f, x)
                lo, hi = -(1 << (u.exp.w - 2)), (1 << (u.exp.w - 2)) - 1
                if not lo <= E <= hi:          # beyond every Exp(): constant truth value
                    holds = (E > hi) == (op == "<=")
                    out.append(z3.BoolVal(True) if holds else (u.zero | u.nan | u.inf).v)
                    continue
                cmp = (u.exp <= E) if op == "<=" else (u.exp >= E)
                out.append((u.zero | u.nan | u.inf | cmp).v)
            continue
        if op not in ("=", "!="):
            raise BadInput(f"constraint {item!r}: compare elements with = or != (or exp(X) <= E)")
        for x, f in _targets(inp, lhs, item):
            F = fp.fmt(f)
            if rhs.lower().startswith("0x"):
                try:
                    bits = int(rhs, 16)
                except ValueError:
                    raise BadInput(f"cannot parse constraint {item!r}: bad hex {rhs!r}") from None
                if bits >= 1 << F.storage:
                    raise BadInput(f"constraint {item!r}: {rhs} does not fit {f} ({F.storage} bits)")
                cond = x == bits
            elif rhs == "0":
                cond = fp.decode(f, x).zero
            elif rhs.lower() == "nan":
                cond = fp.decode(f, x).nan
            else:
                cond = x == _value_bits(rhs, f, item)
            out.append(cond.v if op == "=" else z3.Not(cond.v))
    return out
