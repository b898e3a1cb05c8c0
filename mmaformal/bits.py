"""Layer 1, bits: one bit-vector vocabulary, several back-ends.

Every arithmetic definition in mmaformal (fp, mma) is written once against the `BV`/`Bool`
classes below and runs unchanged on:

- `IntBackend`   Python ints, one value at a time (the readable reference);
- `NumpyBackend` numpy lanes, one element per input (the batch path);
- `Z3Backend`    z3 bit-vector terms (the symbolic path);
- `TraceBackend` (mmaformal.compile) records the same calls and emits a C kernel.

May import: numpy; z3 only inside `Z3Backend` (lazily).

Invariants:
- Widths and signedness are static Python ints/bools; only bit *values* are symbolic.
- A `BV` of width w is either unsigned (values 0 .. 2^w-1) or signed (two's complement,
  -2^(w-1) .. 2^(w-1)-1). Concrete back-ends store the mathematical value, z3 stores the
  bit-vector; the static signedness says how to read it (SMT-LIB bvslt vs bvult, bvashr vs
  bvlshr).
- Plain `+ - * <<`, `neg` and narrowing `resize` must not overflow: concretely they raise
  `OverflowError`; symbolically the no-overflow condition is appended to
  `backend.obligations` (a silent wrap in a solver gives a wrong proof, not a crash).
  Wrapping operations are spelled out: `add_wrap`, `sub_wrap`, `shl_wrap`, `bitcast`.
- No data-dependent Python `if` above this layer: choices are `ite(c, x, y)`. A condition that
  is a Python bool selects at construction time (partial evaluation of static parameters).
- Right shifts (`>>`, `shr`) floor: logical for unsigned, arithmetic for signed; amounts of
  w or more give 0 (or -1); negative amounts are an error.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = [
    "BV", "Bool", "Backend", "IntBackend", "NumpyBackend", "Z3Backend",
    "ite", "bvmax", "bvmin", "clz", "shr_sticky", "bitlen", "INT", "NUMPY",
]


def bitlen(n: int) -> int:
    """Bits needed to hold the unsigned integer n (at least 1)."""
    return max(1, int(n).bit_length())


def int_range(w: int, s: bool) -> tuple[int, int]:
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if s else (0, (1 << w) - 1)


class Bool:
    """A truth value (Python bool, numpy bool lanes, or z3 BoolRef)."""

    __slots__ = ("k", "v")

    def __init__(self, k: "Backend", v: Any):
        self.k = k
        self.v = v

    def _c(self, o: "Bool | bool") -> "Bool":
        return o if isinstance(o, Bool) else self.k.bconst(bool(o))

    def __and__(self, o): return self.k.band_(self, self._c(o))
    __rand__ = __and__
    def __or__(self, o): return self.k.bor_(self, self._c(o))
    __ror__ = __or__
    def __xor__(self, o): return self.k.bxor_(self, self._c(o))
    __rxor__ = __xor__
    def __invert__(self): return self.k.bnot_(self)

    def __bool__(self):
        raise TypeError("a Bool is data: branch with ite(), not with a Python if")

    def __repr__(self) -> str:
        return f"Bool({self.v!r})"


class BV:
    """A bit-vector of static width `w` and static signedness `s`."""

    __slots__ = ("k", "w", "s", "v")

    def __init__(self, k: "Backend", w: int, s: bool, v: Any):
        self.k = k
        self.w = w
        self.s = s
        self.v = v

    # -- coercion of Python ints to constants of this vector's type -------------------------
    def _c(self, o: "BV | int") -> "BV":
        if isinstance(o, BV):
            if o.w != self.w or o.s != self.s:
                raise ValueError(
                    f"operand types differ: {self.type_name()} vs {o.type_name()}; "
                    "resize() one of them first")
            return o
        return self.k.const(int(o), self.w, self.s)

    def type_name(self) -> str:
        return f"{'s' if self.s else 'u'}{self.w}"

    # -- checked arithmetic -------------------------------------------------------------
    def __add__(self, o): return self.k.add(self, self._c(o))
    def __radd__(self, o): return self.k.add(self._c(o), self)
    def __sub__(self, o): return self.k.sub(self, self._c(o))
    def __rsub__(self, o): return self.k.sub(self._c(o), self)
    def __mul__(self, o): return self.k.mul(self, self._c(o))
    def __rmul__(self, o): return self.k.mul(self._c(o), self)
    def __neg__(self): return self.k.sub(self.k.const(0, self.w, self.s), self)
    def __lshift__(self, n): return self.k.shl(self, n)
    def __rshift__(self, n): return self.k.shr(self, n)

    # -- wrapping arithmetic (spelled out) --------------------------------------------------
    def add_wrap(self, o): return self.k.add_wrap(self, self._c(o))
    def sub_wrap(self, o): return self.k.sub_wrap(self, self._c(o))
    def shl_wrap(self, n: int): return self.k.shl_wrap(self, n)

    # -- bitwise (unsigned only: bit patterns) -------------------------------------------
    def __and__(self, o): return self.k.bitop("and", self, self._c(o))
    __rand__ = __and__
    def __or__(self, o): return self.k.bitop("or", self, self._c(o))
    __ror__ = __or__
    def __xor__(self, o): return self.k.bitop("xor", self, self._c(o))
    __rxor__ = __xor__
    def __invert__(self): return self.k.bitop("xor", self, self.k.const((1 << self.w) - 1, self.w, False))

    # -- comparisons ---------------------------------------------------------------------
    def __eq__(self, o): return self.k.cmp("eq", self, self._c(o))  # type: ignore[override]
    def __ne__(self, o): return self.k.cmp("ne", self, self._c(o))  # type: ignore[override]
    def __lt__(self, o): return self.k.cmp("lt", self, self._c(o))
    def __le__(self, o): return self.k.cmp("le", self, self._c(o))
    def __gt__(self, o): return self.k.cmp("lt", self._c(o), self)
    def __ge__(self, o): return self.k.cmp("le", self._c(o), self)
    __hash__ = None  # type: ignore[assignment]

    # -- width and sign changes -----------------------------------------------------------
    def resize(self, w: int, s: bool | None = None) -> "BV":
        """Value-preserving change of width and/or signedness (checked when narrowing)."""
        return self.k.resize(self, w, self.s if s is None else s)

    def zext(self, extra: int) -> "BV":
        return self.resize(self.w + extra)

    def bitcast(self, s: bool) -> "BV":
        """Reinterpret the same w bits as signed/unsigned (two's complement)."""
        return self.k.bitcast(self, s)

    def extract(self, hi: int, lo: int) -> "BV":
        """Bits hi..lo (inclusive) of an unsigned vector, as an unsigned vector."""
        if not (0 <= lo <= hi < self.w):
            raise ValueError(f"extract({hi}, {lo}) out of range for width {self.w}")
        return self.k.extract(self, hi, lo)

    def bit(self, i: int) -> Bool:
        return self.extract(i, i) == 1

    def concat(self, low: "BV") -> "BV":
        return self.k.concat(self, low)

    def abs(self) -> "BV":
        """|x| of a signed vector as an unsigned vector of the same width (never overflows)."""
        if not self.s:
            return self
        return self.k.abs_(self)

    def __repr__(self) -> str:
        return f"BV<{self.type_name()}>({self.v!r})"

    def __bool__(self):
        raise TypeError("a BV is data: compare it and branch with ite()")


def ite(c: "Bool | bool", x, y):
    """If-then-else on data. A Python-bool condition selects now (static parameter)."""
    if isinstance(c, (bool, np.bool_)):
        return x if c else y
    if isinstance(x, Bool) or isinstance(y, Bool):
        x = x if isinstance(x, Bool) else c.k.bconst(bool(x))
        y = y if isinstance(y, Bool) else c.k.bconst(bool(y))
        return c.k.bite(c, x, y)
    if not isinstance(x, BV):
        x = y._c(x)
    if not isinstance(y, BV):
        y = x._c(y)
    x._c(y)  # type check
    return c.k.ite(c, x, y)


def bvmax(x: BV, y: BV) -> BV:
    return ite(x < y, y, x)


def bvmin(x: BV, y: BV) -> BV:
    return ite(x < y, x, y)


def clz(x: BV) -> BV:
    """Count of leading zeros of an unsigned vector, as an unsigned vector; clz(0) = w.

    Binary search: for s = 2^j, ..., 2, 1 (2^j <= w), if the top s bits of what is left are
    zero, count them and shift them out. A back-end may count natively instead (`clz_native`:
    the specialised CUDA traces of mmaformal.compile, where the GPU counts in one instruction);
    the value is the same."""
    if x.s:
        raise ValueError("clz takes an unsigned vector")
    w = x.w
    rw = bitlen(w)
    native = getattr(x.k, "clz_native", None)         # a back-end's own count (same value)
    if native is not None:
        r = native(x, rw)
        if r is not None:
            return r
    y = x
    n = x.k.const(0, rw, False)
    s = 1 << (w.bit_length() - 1)
    while s >= 1:
        if s < w:
            top_zero = y.extract(w - 1, w - s) == 0
            n = ite(top_zero, n + s, n)
            y = ite(top_zero, y.shl_wrap(s), y)
        s //= 2
    return ite(x == 0, x.k.const(w, rw, False), n)


def shr_sticky(x: BV, amount: "BV | int") -> tuple[BV, Bool]:
    """Unsigned x >> amount (floor) and whether any 1 bit was shifted out."""
    if x.s:
        raise ValueError("shr_sticky takes an unsigned vector")
    q = x >> amount
    back = q.shl_wrap_var(amount) if isinstance(amount, BV) else q.shl_wrap(amount)
    return q, back != x


def _shl_wrap_var(self: BV, amount: BV) -> BV:
    return self.k.shl_var_wrap(self, amount)


BV.shl_wrap_var = _shl_wrap_var  # type: ignore[attr-defined]


class Backend:
    """The primitive operations; derived ones (clz, max, sticky shifts) live above."""

    name = "abstract"

    def __init__(self):
        self.obligations: list = []

    # constructors
    def const(self, value: int, w: int, s: bool) -> BV: ...
    def bconst(self, b: bool) -> Bool: ...
    def var(self, name: str, w: int, s: bool = False) -> BV:
        raise TypeError(f"the {self.name} back-end has no free variables")
    def lift(self, data: Any, w: int, s: bool = False) -> BV:
        """Wrap back-end-native data (an int, an array, a term) as a BV."""
        return BV(self, w, s, data)

    def _same(self, x: BV, y: BV) -> None:
        if x.k is not self or y.k is not self:
            raise ValueError("operands come from different back-ends")


# ------------------------------------------------------------------------------------------
# Concrete back-ends: value semantics.
# ------------------------------------------------------------------------------------------

class _Concrete(Backend):
    """Shared code of the two concrete back-ends (values are mathematical integers)."""

    def _check(self, r: Any, w: int, s: bool, op: str) -> None:
        lo, hi = int_range(w, s)
        if self._any_outside(r, lo, hi):
            raise OverflowError(f"{op} overflows {'s' if s else 'u'}{w}")

    def _mk(self, w: int, s: bool, v: Any) -> BV:
        return BV(self, w, s, v)

    def add(self, x, y):
        r = x.v + y.v
        self._check(r, x.w, x.s, "add")
        return self._mk(x.w, x.s, r)

    def sub(self, x, y):
        r = x.v - y.v
        self._check(r, x.w, x.s, "sub")
        return self._mk(x.w, x.s, r)

    def _wrap(self, r, w, s):
        m = (1 << w) - 1
        r = r & m
        if s:
            r = r - ((r >> (w - 1)) << w)
        return r

    def add_wrap(self, x, y):
        return self._mk(x.w, x.s, self._wrap(self._wide(x.v) + self._wide(y.v), x.w, x.s))

    def sub_wrap(self, x, y):
        return self._mk(x.w, x.s, self._wrap(self._wide(x.v) - self._wide(y.v), x.w, x.s))

    def shl_wrap(self, x, n: int):
        return self._mk(x.w, x.s, self._wrap(self._wide(x.v) << n, x.w, x.s))

    def shl_var_wrap(self, x, a):
        av = self._clamp_amount(a, x.w + 1)
        return self._mk(x.w, x.s, self._wrap(self._wide(x.v) << av, x.w, x.s))

    def shl(self, x, n):
        if isinstance(n, BV):
            av = self._clamp_amount(n, x.w + 1)
            r = self._wide(x.v) << av
            self._check(r, x.w, x.s, "shl")
            return self._mk(x.w, x.s, self._narrow(r, x.w, x.s))
        if n < 0:
            raise ValueError("negative shift")
        lo, hi = int_range(x.w, x.s)
        if self._any_outside(x.v, lo >> n, hi >> n):
            raise OverflowError(f"shl by {n} overflows {x.type_name()}")
        return self._mk(x.w, x.s, x.v << n)

    def shr(self, x, n):
        if isinstance(n, BV):
            av = self._clamp_amount(n, x.w)
            return self._mk(x.w, x.s, x.v >> av)
        if n < 0:
            raise ValueError("negative shift")
        return self._mk(x.w, x.s, x.v >> min(n, x.w))

    def bitop(self, op, x, y):
        if x.s:
            raise ValueError("bitwise operations take unsigned vectors (bitcast first)")
        f = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}[op]
        return self._mk(x.w, False, f(x.v, y.v))

    def resize(self, x, w, s):
        v = self._convert(x.v, x.w, x.s, w, s)
        if w < x.w or (s and not x.s and w <= x.w) or (x.s and not s):
            self._check(v, w, s, "resize")
        return self._mk(w, s, v)

    def bitcast(self, x, s):
        if s == x.s:
            return x
        v = self._wide(x.v)
        m = 1 << x.w
        if isinstance(v, int):
            v = (v - m if v >> (x.w - 1) else v) if s else (v + m if v < 0 else v)
        else:
            v = np.where(v >= (m >> 1), v - m, v) if s else np.where(v < 0, v + m, v)
            v = v.astype(object)
        return self._mk(x.w, s, self._narrow(v, x.w, s))

    def extract(self, x, hi, lo):
        w = hi - lo + 1
        v = (self._wide(x.v) >> lo) & ((1 << w) - 1)
        return self._mk(w, False, self._narrow(v, w, False))

    def concat(self, x, y):
        if x.s or y.s:
            raise ValueError("concat takes unsigned vectors")
        w = x.w + y.w
        v = (self._convert(x.v, x.w, False, w, False) << y.w) | self._convert(y.v, y.w, False, w, False)
        return self._mk(w, False, v)



class IntBackend(_Concrete):
    """Python ints, one value at a time: the readable reference back-end."""

    name = "int"

    def const(self, value, w, s):
        lo, hi = int_range(w, s)
        if not lo <= value <= hi:
            raise OverflowError(f"constant {value} does not fit {'s' if s else 'u'}{w}")
        return BV(self, w, s, int(value))

    def bconst(self, b):
        return Bool(self, bool(b))

    def lift(self, data, w, s=False):
        lo, hi = int_range(w, s)
        v = int(data)
        if not lo <= v <= hi:
            raise ValueError(f"value {v} does not fit {'s' if s else 'u'}{w}")
        return BV(self, w, s, v)

    def _any_outside(self, r, lo, hi):
        return not (lo <= r <= hi)

    def _wide(self, v):
        return v

    def _narrow(self, v, w, s):
        return v

    def _convert(self, v, w0, s0, w, s):
        return v

    def _clamp_amount(self, a, limit):
        if a.v < 0:
            raise ValueError("negative shift amount")
        return min(a.v, limit)

    def mul(self, x, y):
        r = x.v * y.v
        self._check(r, x.w, x.s, "mul")
        return BV(self, x.w, x.s, r)

    def cmp(self, op, x, y):
        a, b = x.v, y.v
        return Bool(self, {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b}[op])

    def ite(self, c, x, y):
        return x if c.v else y

    def bite(self, c, x, y):
        return x if c.v else y

    def band_(self, a, b): return Bool(self, a.v and b.v)
    def bor_(self, a, b): return Bool(self, a.v or b.v)
    def bxor_(self, a, b): return Bool(self, a.v != b.v)
    def bnot_(self, a): return Bool(self, not a.v)

    def abs_(self, x):
        return BV(self, x.w, False, abs(x.v))


def _np_dtype(w: int) -> Any:
    """int64 lanes hold any value of width <= 62 (so + and - cannot wrap int64); wider
    values live in object lanes (Python ints)."""
    return np.int64 if w <= 62 else object


class NumpyBackend(_Concrete):
    """numpy lanes: every value is an array (or scalar) of lanes; one lane per element."""

    name = "numpy"

    def const(self, value, w, s):
        lo, hi = int_range(w, s)
        if not lo <= value <= hi:
            raise OverflowError(f"constant {value} does not fit {'s' if s else 'u'}{w}")
        return BV(self, w, s, np.int64(value) if w <= 62 else int(value))

    def bconst(self, b):
        return Bool(self, np.bool_(b))

    def lift(self, data, w, s=False):
        a = np.asarray(data)
        if a.dtype == object:
            a = a.astype(object)
        elif a.dtype.kind not in "iu":
            raise ValueError(f"expected an integer array for {'s' if s else 'u'}{w}, got {a.dtype}")
        dt = _np_dtype(w)
        if dt is object:
            a = a.astype(object)
            # unsigned numpy ints became Python ints; signed values are read as they are
        else:
            if a.dtype == np.uint64 and a.size and int(a.max()) > np.iinfo(np.int64).max:
                raise ValueError(f"values do not fit {'s' if s else 'u'}{w}")
            a = a.astype(np.int64)
        lo, hi = int_range(w, s)
        if a.size and self._any_outside(a, lo, hi):
            raise ValueError(f"values do not fit {'s' if s else 'u'}{w}")
        return BV(self, w, s, a)

    def _any_outside(self, r, lo, hi):
        if isinstance(r, (int, np.integer)):
            return not (lo <= int(r) <= hi)
        if r.size == 0:
            return False
        return bool(np.any(r < lo) or np.any(r > hi))

    def _wide(self, v):
        # object lanes for results that may need more than 62 bits
        if isinstance(v, (int, np.integer)):
            return int(v)
        return v.astype(object) if v.dtype != object else v

    def _narrow(self, v, w, s):
        if _np_dtype(w) is object:
            return v
        if isinstance(v, (int, np.integer)):
            return np.int64(v)
        return v.astype(np.int64)

    def _convert(self, v, w0, s0, w, s):
        return self._narrow(self._wide(v) if _np_dtype(w) is object else v, w, s)

    def _clamp_amount(self, a, limit):
        v = a.v
        if isinstance(v, (int, np.integer)):
            if v < 0:
                raise ValueError("negative shift amount")
            return min(int(v), limit)
        if v.size and np.any(v < 0):
            raise ValueError("negative shift amount")
        if v.dtype == object:
            v = np.minimum(v, limit).astype(np.int64)
        return np.minimum(v, limit)

    def shr(self, x, n):
        if isinstance(n, BV):
            av = self._clamp_amount(n, x.w)
            if _np_dtype(x.w) is object:
                return BV(self, x.w, x.s, self._wide(x.v) >> self._wide(av))
            av = np.minimum(av, 63)
            return BV(self, x.w, x.s, np.right_shift(x.v, av))
        return super().shr(x, n)

    def shl(self, x, n):
        if isinstance(n, BV) and _np_dtype(x.w) is not object:
            av = self._clamp_amount(n, x.w + 1)
            lo, hi = int_range(x.w, x.s)
            # check before shifting: x must lie in [lo >> a, hi >> a] lane by lane
            if self._any_outside_lanes(x.v, np.right_shift(lo, av), np.right_shift(hi, av)):
                raise OverflowError(f"shl overflows {x.type_name()}")
            return BV(self, x.w, x.s, np.left_shift(x.v, av))
        if isinstance(n, BV):
            av = self._wide(self._clamp_amount(n, x.w + 1))
            r = self._wide(x.v) << av
            self._check(r, x.w, x.s, "shl")
            return BV(self, x.w, x.s, r)
        return super().shl(x, n)

    def shl_var_wrap(self, x, a):
        av = self._clamp_amount(a, x.w + 1)
        if _np_dtype(x.w) is not object:
            # shift in two steps so no int64 shift amount reaches 64
            av = np.minimum(av, x.w)
            r = np.left_shift(np.left_shift(x.v, av // 2), av - av // 2)
            return BV(self, x.w, x.s, self._wrap64(r, x.w, x.s))
        return BV(self, x.w, x.s, self._wrap(self._wide(x.v) << self._wide(av), x.w, x.s))

    def shl_wrap(self, x, n):
        if _np_dtype(x.w) is not object and n < 63:
            return BV(self, x.w, x.s, self._wrap64(np.left_shift(x.v, n), x.w, x.s))
        return super().shl_wrap(x, n)

    def _wrap64(self, r, w, s):
        m = np.int64((1 << w) - 1)
        r = r & m
        if s:
            r = r - ((r >> (w - 1)) << w)
        return r

    def add_wrap(self, x, y):
        if _np_dtype(x.w) is not object:
            return BV(self, x.w, x.s, self._wrap64(x.v + y.v, x.w, x.s))
        return super().add_wrap(x, y)

    def sub_wrap(self, x, y):
        if _np_dtype(x.w) is not object:
            return BV(self, x.w, x.s, self._wrap64(x.v - y.v, x.w, x.s))
        return super().sub_wrap(x, y)

    def _any_outside_lanes(self, v, lo, hi):
        if isinstance(v, np.ndarray) and v.size == 0:
            return False
        return bool(np.any(v < lo) or np.any(v > hi))

    def mul(self, x, y):
        if _np_dtype(x.w) is not object:
            if x.w <= 31:
                r = x.v * y.v
            else:
                mx = int(np.max(np.abs(x.v))) if np.ndim(x.v) else abs(int(x.v))
                my = int(np.max(np.abs(y.v))) if np.ndim(y.v) else abs(int(y.v))
                if mx * my < (1 << 62):
                    r = x.v * y.v
                else:
                    r = self._wide(x.v) * self._wide(y.v)
            self._check(r, x.w, x.s, "mul")
            return BV(self, x.w, x.s, self._narrow(r, x.w, x.s))
        r = self._wide(x.v) * self._wide(y.v)
        self._check(r, x.w, x.s, "mul")
        return BV(self, x.w, x.s, r)

    def cmp(self, op, x, y):
        a, b = x.v, y.v
        if op == "eq":
            r = a == b
        elif op == "ne":
            r = a != b
        elif op == "lt":
            r = a < b
        else:
            r = a <= b
        return Bool(self, np.asarray(r, dtype=bool) if not isinstance(r, (bool, np.bool_)) else np.bool_(r))

    def ite(self, c, x, y):
        if _np_dtype(x.w) is object:
            # 0-d object arrays keep big Python ints as Python ints (never uint64 scalars)
            xv = np.asarray(self._wide(x.v), dtype=object)
            yv = np.asarray(self._wide(y.v), dtype=object)
            return BV(self, x.w, x.s, np.where(c.v, xv, yv))
        return BV(self, x.w, x.s, np.where(c.v, x.v, y.v))

    def bite(self, c, x, y):
        return Bool(self, np.where(c.v, x.v, y.v))

    def band_(self, a, b): return Bool(self, np.logical_and(a.v, b.v))
    def bor_(self, a, b): return Bool(self, np.logical_or(a.v, b.v))
    def bxor_(self, a, b): return Bool(self, np.logical_xor(a.v, b.v))
    def bnot_(self, a): return Bool(self, np.logical_not(a.v))

    def abs_(self, x):
        v = x.v
        return BV(self, x.w, False, abs(int(v)) if isinstance(v, (int, np.integer)) and not isinstance(v, np.ndarray) else np.abs(v))


# ------------------------------------------------------------------------------------------
# Symbolic back-end.
# ------------------------------------------------------------------------------------------

class Z3Backend(Backend):
    """z3 bit-vector terms; overflow conditions become `obligations` (z3 BoolRefs)."""

    name = "z3"

    def __init__(self):
        super().__init__()
        import z3  # noqa: F401  (lazy: the simulator never needs z3)
        self.z3 = z3

    def const(self, value, w, s):
        lo, hi = int_range(w, s)
        if not lo <= value <= hi:
            raise OverflowError(f"constant {value} does not fit {'s' if s else 'u'}{w}")
        return BV(self, w, s, self.z3.BitVecVal(value % (1 << w), w))

    def bconst(self, b):
        return Bool(self, self.z3.BoolVal(bool(b)))

    def var(self, name, w, s=False):
        return BV(self, w, s, self.z3.BitVec(name, w))

    def bvar(self, name):
        return Bool(self, self.z3.Bool(name))

    def lift(self, data, w, s=False):
        if isinstance(data, int):
            return self.const(data, w, s)
        if data.size() != w:
            raise ValueError(f"term has width {data.size()}, expected {w}")
        return BV(self, w, s, data)

    def _ob(self, cond):
        cond = self.z3.simplify(cond)
        if not self.z3.is_true(cond):
            self.obligations.append(cond)

    # No-overflow conditions in portable SMT-LIB (widened arithmetic), so every exported
    # query parses in bitwuzla and cvc5 too (z3's bvumul_noovfl etc. are z3-only).
    def _fits(self, wide, w: int, s: bool):
        z3 = self.z3
        low = z3.Extract(w - 1, 0, wide)
        ext = z3.SignExt if s else z3.ZeroExt
        return ext(wide.size() - w, low) == wide

    def _wide(self, x, extra: int):
        return (self.z3.SignExt if x.s else self.z3.ZeroExt)(extra, x.v)

    def add(self, x, y):
        self._ob(self._fits(self._wide(x, 1) + self._wide(y, 1), x.w, x.s))
        return BV(self, x.w, x.s, x.v + y.v)

    def sub(self, x, y):
        if x.s:
            self._ob(self._fits(self._wide(x, 1) - self._wide(y, 1), x.w, True))
        else:
            self._ob(self.z3.UGE(x.v, y.v))
        return BV(self, x.w, x.s, x.v - y.v)

    def mul(self, x, y):
        self._ob(self._fits(self._wide(x, x.w) * self._wide(y, x.w), x.w, x.s))
        return BV(self, x.w, x.s, x.v * y.v)

    def add_wrap(self, x, y): return BV(self, x.w, x.s, x.v + y.v)
    def sub_wrap(self, x, y): return BV(self, x.w, x.s, x.v - y.v)

    def shl_wrap(self, x, n):
        return BV(self, x.w, x.s, x.v << n if n < x.w else self.z3.BitVecVal(0, x.w))

    def _amount(self, a, w, limit):
        """min(a, limit) as a z3 vector of width w (limit must fit w bits)."""
        z3 = self.z3
        if a.s:
            self._ob(a.v >= 0)
        W = max(a.w, w, bitlen(limit))
        v = z3.ZeroExt(W - a.w, a.v) if W > a.w else a.v
        v = z3.If(z3.UGT(v, limit), z3.BitVecVal(limit, W), v)
        return z3.Extract(w - 1, 0, v) if W > w else v

    def shl(self, x, n):
        z3 = self.z3
        if isinstance(n, BV):
            wide = x.w + x.w + 1
            xv = z3.SignExt(wide - x.w, x.v) if x.s else z3.ZeroExt(wide - x.w, x.v)
            av = self._amount(n, wide, x.w + 1)
            r = xv << av
            lo, hi = int_range(x.w, x.s)
            self._ob(z3.And(r >= lo, r <= hi) if x.s else z3.ULE(r, hi))
            return BV(self, x.w, x.s, z3.Extract(x.w - 1, 0, r))
        lo, hi = int_range(x.w, x.s)
        if n >= x.w:
            self._ob(x.v == 0)
            return BV(self, x.w, x.s, z3.BitVecVal(0, x.w))
        if x.s:
            self._ob(z3.And(x.v >= (lo >> n), x.v <= (hi >> n)))
        else:
            self._ob(z3.ULE(x.v, hi >> n))
        return BV(self, x.w, x.s, x.v << n)

    def shl_var_wrap(self, x, a):
        return BV(self, x.w, x.s, x.v << self._amount(a, x.w, x.w))

    def shr(self, x, n):
        z3 = self.z3
        if isinstance(n, BV):
            av = self._amount(n, x.w, x.w)
            return BV(self, x.w, x.s, x.v >> av if x.s else z3.LShR(x.v, av))
        if n >= x.w:
            return BV(self, x.w, x.s, (x.v >> (x.w - 1)) if x.s else z3.BitVecVal(0, x.w))
        return BV(self, x.w, x.s, x.v >> n if x.s else z3.LShR(x.v, n))

    def bitop(self, op, x, y):
        if x.s:
            raise ValueError("bitwise operations take unsigned vectors (bitcast first)")
        f = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}[op]
        return BV(self, x.w, False, f(x.v, y.v))

    def cmp(self, op, x, y):
        z3 = self.z3
        a, b = x.v, y.v
        if op == "eq":
            r = a == b
        elif op == "ne":
            r = a != b
        elif op == "lt":
            r = a < b if x.s else z3.ULT(a, b)
        else:
            r = a <= b if x.s else z3.ULE(a, b)
        return Bool(self, r)

    def ite(self, c, x, y):
        return BV(self, x.w, x.s, self.z3.If(c.v, x.v, y.v))

    def bite(self, c, x, y):
        return Bool(self, self.z3.If(c.v, x.v, y.v))

    def band_(self, a, b): return Bool(self, self.z3.And(a.v, b.v))
    def bor_(self, a, b): return Bool(self, self.z3.Or(a.v, b.v))
    def bxor_(self, a, b): return Bool(self, self.z3.Xor(a.v, b.v))
    def bnot_(self, a): return Bool(self, self.z3.Not(a.v))

    def resize(self, x, w, s):
        z3 = self.z3
        if w >= x.w:
            v = (z3.SignExt if x.s else z3.ZeroExt)(w - x.w, x.v) if w > x.w else x.v
            if s and not x.s and w == x.w:
                self._ob(z3.ULE(x.v, (1 << (w - 1)) - 1))
            if x.s and not s:
                self._ob(x.v >= 0)
            return BV(self, w, s, v)
        v = z3.Extract(w - 1, 0, x.v)
        back = (z3.SignExt if s else z3.ZeroExt)(x.w - w, v)
        self._ob(back == x.v)
        if x.s and not s:
            self._ob(x.v >= 0)
        return BV(self, w, s, v)

    def bitcast(self, x, s):
        return BV(self, x.w, s, x.v)

    def extract(self, x, hi, lo):
        return BV(self, hi - lo + 1, False, self.z3.Extract(hi, lo, x.v))

    def concat(self, x, y):
        if x.s or y.s:
            raise ValueError("concat takes unsigned vectors")
        return BV(self, x.w + y.w, False, self.z3.Concat(x.v, y.v))

    def abs_(self, x):
        return BV(self, x.w, False, self.z3.If(x.v < 0, -x.v, x.v))


INT = IntBackend()
NUMPY = NumpyBackend()
