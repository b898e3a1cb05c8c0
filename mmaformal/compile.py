"""Layer 1 (fast path), compile: trace a definition once, emit one C kernel, run it on lanes.

`TraceBackend` implements the same primitive operations as the back-ends of mmaformal.bits,
but records each call as one C statement instead of computing it. Tracing `fn(K, *inputs)`
(any definition written over BV/Bool, e.g. a theory's dot product) gives a straight-line C
function that is applied to every lane of numpy input arrays. The arithmetic is therefore
still defined once, in fp/mma; this module only changes where it runs.

May import: mmaformal.bits, numpy, ctypes, the system C compiler (cc/gcc) at run time.

Invariants:
- Value semantics as on the concrete back-ends: a value of width w <= 62 is held in int64_t,
  w <= 126 in __int128; wider values are refused (`Unsupported`; callers fall back to numpy).
- Every plain operation checks for overflow exactly as the numpy back-end does; a lane that
  overflows makes `run` raise OverflowError (with the op's position in the trace).
- A trace under facts (`TraceBackend(facts)`, `Fact`: assumptions about inputs' bits, used by
  mmaformal.cuda's specialised GEMM steps) folds what its intervals decide: comparisons, the
  selections and connectives they feed, x + 0, masks that keep every value; it narrows the
  interval of a value in the branch of a comparison with a constant and of a running maximum
  minus one of its operands, and counts leading zeros in one statement (CLZ64, which only the
  CUDA emitter defines). It is exact only on inputs that satisfy the facts; without facts
  nothing is folded and the trace is unchanged.
- Kernels are cached by the hash of their source and optimisation level, in $MMAFORMAL_CACHE or
  ~/.cache/mmaformal. The level is -O3 (-O1 for kernels of 4,000 lines or more), or
  $MMAFORMAL_CC_OPT (-O0 -O1 -O2 -O3 -Os) for every kernel: the test suite takes -O1, which
  compiled kernels of 1,500-5,500 lines 1.8-4.6x faster than -O3 (2-CPU development machine,
  2026-11-27) and gives the same bits (the C is free of undefined behaviour: -fwrapv, no
  strict aliasing).
  A caller that names what determines its trace (`compile_kernel(disk_key=...)`: e.g. the
  hash of the theory and of the source of the code it runs) finds the kernel of an earlier
  process through an index file there, without tracing again; that key also covers this
  module's and bits' source, the lane count and the C compiler.
- A kernel is loaded only when its .so has the size and sha256 recorded when it was built
  (k_<hash>.sum, mmaformal._cache): a damaged one (cut short, emptied, overwritten, or without
  a record) is rebuilt, never loaded. Builders of one kernel take its file lock and rename the
  finished .so into place, so concurrent processes never load a half-written one.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import _cache
from .bits import BV, INT, Backend, Bool, int_range

__all__ = ["TraceBackend", "Kernel", "compile_kernel", "Unsupported", "available", "Fact"]


@dataclass(frozen=True)
class Fact:
    """What a specialised trace assumes of one input: its bits hb..0 (as an unsigned number)
    lie in [lo, hi]. For a floating-point operand, hb is the top magnitude bit and [0, largest
    finite magnitude] says "finite" (`cuda_source.element_fact`). A kernel traced under facts
    is exact only on inputs that satisfy them: its caller checks them at run time
    (`Fact.c_check`) and runs the general trace where they fail."""
    hb: int
    lo: int
    hi: int

    def holds(self, x: int) -> bool:
        v = x & ((1 << (self.hb + 1)) - 1)
        return self.lo <= v <= self.hi

    def c_check(self, e: str) -> str:
        """The fact as a C expression over the unsigned storage value `e`."""
        v = f"(((unsigned long long)({e})) & {(1 << (self.hb + 1)) - 1}ull)"
        lo = f"{self.lo}ull <= {v} && " if self.lo else ""
        return f"({lo}{v} <= {self.hi}ull)"


class Unsupported(Exception):
    """The definition needs something the C path does not provide (a width over 126 bits)."""


_CTYPES = {8: "uint8_t", 16: "uint16_t", 32: "uint32_t", 64: "uint64_t"}
_NPTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _ctype(w: int) -> str:
    if w <= 62:
        return "W64"
    if w <= 126:
        return "W128"
    raise Unsupported(f"a {w}-bit value does not fit the C path")


def _lit(v: int, w: int) -> str:
    if w <= 62:
        return f"INT64_C({v})"
    if -(1 << 63) < v < (1 << 63):
        return f"((W128)INT64_C({v}))"
    hi, lo = v >> 64, v & ((1 << 64) - 1)
    return f"(((W128)INT64_C({hi})) * (((W128)1) << 64) + (W128)UINT64_C({lo}))"


def _u(w: int, e: str, n32: bool = False) -> str:
    if n32:
        return f"U32({e})"
    return f"U64({e})" if w <= 62 else f"((U128)({e}))"


def _s(w: int, e: str, n32: bool = False) -> str:
    if n32:
        return f"S32({e})"
    return f"S64({e})" if w <= 62 else f"((W128)({e}))"


_I32 = (-(1 << 31), (1 << 31) - 1)


def _fits32(*ivs: tuple[int, int]) -> bool:
    """Every interval lies in int32 (the statement may run in 32-bit arithmetic on a GPU)."""
    return all(_I32[0] <= lo and hi <= _I32[1] for lo, hi in ivs)


def _folding(fn):
    """Constant folding: a primitive whose operands are all constants is evaluated now by the
    int back-end (the same semantics, checks included) and becomes a constant."""
    name = fn.__name__

    def wrapper(self, *args):
        vals = []
        for a in args:
            if isinstance(a, BV):
                cv = self.cvals.get(a.v)
                if cv is None:
                    return fn(self, *args)
                vals.append(INT.const(cv, a.w, a.s))
            elif isinstance(a, Bool):
                if a.v not in ("(-1)", "(0)"):
                    return fn(self, *args)
                vals.append(INT.bconst(a.v == "(-1)"))
            else:
                vals.append(a)
        r = getattr(INT, name)(*vals)
        return self.const(r.v, r.w, r.s) if isinstance(r, BV) else self.bconst(bool(r.v))
    wrapper.__name__ = name
    wrapper.__doc__ = fn.__doc__
    return wrapper


class TraceBackend(Backend):
    """Records every primitive as one C statement over per-lane locals.

    The statements use a few macros (SEL, CMP, U64, S64, BC) so that one trace emits either a
    scalar kernel (int64_t / __int128 per lane) or, when every value fits 62 bits, a kernel
    over GCC vectors of NL lanes. Booleans are -1/0 masks in both."""

    name = "trace"

    def __init__(self, facts: "dict[int, Fact] | None" = None):
        super().__init__()
        #: input index -> Fact assumed of that input (a specialised trace, see `Fact`); with
        #: facts, comparisons that the intervals decide fold to constants, and so do the
        #: selections and connectives they feed
        self.facts: dict[int, Fact] = dict(facts or {})
        self.fold = bool(self.facts)
        self.fbits: dict[str, tuple[int, int, int]] = {}   # name -> (hb, lo, hi): bits hb..0 in [lo, hi]
        self.clz_src: dict[str, str] = {}             # name of a native clz -> the value it counts
        self.cmp_src: dict[str, tuple[str, int]] = {}  # truth value -> (v, k) when it is v < k
        self.cmp_pair: dict[str, tuple[str, str]] = {}  # truth value -> (u, v) when it is u < v
        self.ge: dict[str, frozenset] = {}            # a max -> the values it is not below
        self.lines: list[str] = []
        self.n = 0
        self.inputs: list[tuple[int, int, bool]] = []   # (storage bits, width, signed)
        self.checks = 0
        self.ivs: dict[str, tuple[int, int]] = {}
        self.cvals: dict[str, int] = {}               # expression -> value, for constants
        self.scalar_only = False                      # set by __int128 values or builtins
        # For targets with native 32-bit integers (mmaformal.cuda): the statements whose
        # expression is exact when evaluated in 32-bit arithmetic on operands held in int32
        # (decided per operation from the intervals), and the intervals of the results of
        # plain + - * before clamping (a checked result may leave its width's range).
        self.n32: set[str] = set()
        self.rawiv: dict[str, tuple[int, int]] = {}

    # -- helpers -------------------------------------------------------------------------
    # Each traced value carries a static interval [lo, hi] of the values it can take; a
    # range check is emitted only where the interval does not prove it cannot fail.
    def _iv(self, x: BV) -> tuple[int, int]:
        return self.ivs.get(x.v) or int_range(x.w, x.s)

    def _iv_name(self, name: str) -> tuple[int, int]:
        """The interval of a shift amount (a traced value's name or a clamped copy)."""
        return self.ivs.get(name, (-(1 << 127), 1 << 127))

    def _new(self, w: int, s: bool, expr: str, iv: tuple[int, int] | None = None,
             n32: bool = False) -> BV:
        name = f"v{self.n}"
        self.n += 1
        if n32:
            self.n32.add(name)
        ct = _ctype(w)
        if ct == "W128":
            self.scalar_only = True
            self.lines.append(f"W128 {name} = {expr};")
        else:
            self.lines.append(f"W64 {name} = BC({expr});")
        lo, hi = int_range(w, s)
        self.ivs[name] = (lo, hi) if iv is None else (max(lo, iv[0]), min(hi, iv[1]))
        return BV(self, w, s, name)

    def clz_native(self, x: BV, rw: int) -> "BV | None":
        """bits.clz as one statement, CLZ64 (the GPU's count-leading-zeros instruction; the
        targets that read such traces define the macro): only in traces under facts, which
        only mmaformal.cuda emits, and for values held in 64 bits. None: the binary search."""
        if not self.fold or x.w > 62 or x.s:
            return None
        lo, hi = self._iv(x)
        if lo < 0:
            return None
        r = self._new(rw, False, f"(CLZ64({x.v}) - {64 - x.w})", (0, x.w), n32=True)
        self.clz_src[r.v] = x.v
        return r

    def _newb(self, expr: str) -> Bool:
        name = f"b{self.n}"
        self.n += 1
        self.n32.add(name)                          # truth values: comparisons promote
        self.lines.append(f"W64 {name} = BC({expr});")
        return Bool(self, name)

    def _check(self, name: str, w: int, s: bool, iv: tuple[int, int], lo: int | None = None,
               hi: int | None = None) -> None:
        rlo, rhi = int_range(w, s)
        lo = rlo if lo is None else lo
        hi = rhi if hi is None else hi
        if lo <= iv[0] and iv[1] <= hi:
            return                                  # statically safe
        self.checks += 1
        lw = 62 if w <= 62 else 126
        self.lines.append(f"bad |= CMP({name} < {_lit(lo, lw)}) | CMP({name} > {_lit(hi, lw)});")

    # -- constructors ----------------------------------------------------------------------
    def const(self, value, w, s):
        lo, hi = int_range(w, s)
        if not lo <= value <= hi:
            raise OverflowError(f"constant {value} does not fit {'s' if s else 'u'}{w}")
        e = _lit(value, w) if w <= 62 else _lit(value, 126)
        _ctype(w)
        e = f"({e})"
        self.ivs[e] = (value, value)
        self.cvals[e] = value
        return BV(self, w, s, e)

    def bconst(self, b):
        return Bool(self, "(-1)" if b else "(0)")

    def input(self, storage: int, w: int | None = None, s: bool = False) -> BV:
        """A lane input: element i of the i-th input array (unsigned `storage`-bit ints)."""
        w = storage if w is None else w
        idx = len(self.inputs)
        self.inputs.append((storage, w, s))
        name = f"v{self.n}"
        self.n += 1
        if _ctype(w) == "W128":
            self.scalar_only = True
        self.lines.append(f"LOAD({_ctype(w)}, {name}, in{idx}, {idx});")
        lo, hi = int_range(w, s)
        self.ivs[name] = (max(lo, 0), min(hi, (1 << storage) - 1))
        f = self.facts.get(idx)
        if f is not None:
            self.fbits[name] = (f.hb, f.lo, f.hi)
        return BV(self, w, s, name)

    # -- arithmetic ------------------------------------------------------------------------
    def _arith(self, op: str, x: BV, y: BV) -> BV:
        if self.fold:                               # x + 0, 0 + x, x - 0
            if self.cvals.get(y.v) == 0 and op in "+-":
                return x
            if self.cvals.get(x.v) == 0 and op == "+":
                return y
        ct = _ctype(x.w)
        (a, b), (c, d) = self._iv(x), self._iv(y)
        if op == "+":
            iv = (a + c, b + d)
        elif op == "-":
            iv = (a - d, b - c)
            if y.v in self.ge.get(x.v, ()):        # a max minus one of its operands
                iv = (max(iv[0], 0), iv[1])
        else:
            ps = (a * c, a * d, b * c, b * d)
            iv = (min(ps), max(ps))
        store = 63 if ct == "W64" else 127
        lo, hi = int_range(x.w, x.s)
        if -(1 << store) <= iv[0] and iv[1] < (1 << store):
            r = self._new(x.w, x.s, f"({x.v} {op} {y.v})",
                          n32=_fits32((a, b), (c, d), iv))
            self.rawiv[r.v] = iv
        else:
            fn = {"+": "add", "-": "sub", "*": "mul"}[op]
            self.scalar_only = True
            name = f"v{self.n}"
            self.n += 1
            self.lines.append(f"{ct} {name}; bad |= -(int64_t)__builtin_{fn}_overflow({x.v}, {y.v}, &{name});")
            r = BV(self, x.w, x.s, name)
        self._check(r.v, x.w, x.s, iv)
        self.ivs[r.v] = (max(lo, iv[0]), min(hi, iv[1]))
        return r

    @_folding
    def add(self, x, y): return self._arith("+", x, y)
    @_folding
    def sub(self, x, y): return self._arith("-", x, y)
    @_folding
    def mul(self, x, y): return self._arith("*", x, y)

    def _wrap_expr(self, expr_u: str, w: int, s: bool, n32: bool = False) -> str:
        """Wrap an unsigned expression to w bits, read as signed or unsigned (n32: the
        expression is built from U32() operands and w <= 31: exact in uint32 arithmetic)."""
        one = "ONE32" if n32 else "((uint64_t)1)" if w <= 62 else "((U128)1)"
        m = f"(({one} << {w}) - 1)"
        if s:
            sb = f"({one} << {w - 1})"
            return f"({_s(w, f'(({expr_u}) & {m}) ^ {sb}', n32)} - {_s(w, sb, n32)})"
        return _s(w, f"({expr_u}) & {m}", n32)

    @_folding
    def add_wrap(self, x, y):
        n = x.w <= 31
        return self._new(x.w, x.s, self._wrap_expr(f"{_u(x.w, x.v, n)} + {_u(x.w, y.v, n)}", x.w, x.s, n), n32=n)

    @_folding
    def sub_wrap(self, x, y):
        n = x.w <= 31
        return self._new(x.w, x.s, self._wrap_expr(f"{_u(x.w, x.v, n)} - {_u(x.w, y.v, n)}", x.w, x.s, n), n32=n)

    @_folding
    def shl_wrap(self, x, n):
        if n >= x.w:
            return self.const(0, x.w, x.s)
        lo, hi = self._iv(x)
        rlo, rhi = int_range(x.w, x.s)
        if rlo <= lo << n and hi << n <= rhi:        # cannot wrap: a plain shift
            return self._new(x.w, x.s, f"({x.v} << {n})", (lo << n, hi << n),
                             n32=n <= 30 and _fits32((lo, hi), (lo << n, hi << n)))
        m = x.w <= 31
        return self._new(x.w, x.s, self._wrap_expr(f"{_u(x.w, x.v, m)} << {n}", x.w, x.s, m), n32=m)

    def _amount(self, a: BV, limit: int) -> tuple[str, int]:
        lo, hi = self._iv(a)
        if lo < 0:
            self.checks += 1
            self.lines.append(f"bad |= CMP({a.v} < 0);")
        if hi <= limit:
            return a.v, max(hi, 0)
        name = f"a{self.n}"
        self.n += 1
        self.lines.append(f"{_ctype(a.w)} {name} = SEL(CMP({a.v} > {limit}), BC({limit}), {a.v});")
        self.ivs[name] = (min(lo, limit), limit)
        self.n32.add(name)
        return name, limit

    @_folding
    def shl_var_wrap(self, x, a):
        am, _ = self._amount(a, x.w)
        m = x.w <= 31
        return self._new(x.w, x.s, self._wrap_expr(f"{_u(x.w, x.v, m)} << {am}", x.w, x.s, m), n32=m)

    @_folding
    def shl(self, x, n):
        lo, hi = int_range(x.w, x.s)
        xl, xh = self._iv(x)
        if isinstance(n, BV):
            am, amax = self._amount(n, x.w + 1)
            if self.clz_src.get(n.v) == x.v:        # x << clz(x) keeps x's width: no check
                return self._new(x.w, x.s, f"({x.v} << {am})", (xl, (1 << x.w) - 1),
                                 n32=x.w <= 31)
            if not (lo <= xl << amax and xh << amax <= hi):
                self.checks += 1
                lw = 62 if x.w <= 62 else 126
                self.lines.append(f"bad |= CMP({x.v} < (BC({_lit(lo, lw)}) >> {am})) | CMP({x.v} > (BC({_lit(hi, lw)}) >> {am}));")
            riv = (min(xl, xl << amax), max(xh, xh << amax))
            return self._new(x.w, x.s, f"({x.v} << {am})", riv,
                             n32=amax <= 30 and _fits32((xl, xh), riv, self._iv_name(am)))
        if n < 0:
            raise ValueError("negative shift")
        if n == 0:
            return x
        self._check(x.v, x.w, x.s, (xl, xh), lo >> n, hi >> n)
        if n >= x.w:
            return self.const(0, x.w, x.s)
        return self._new(x.w, x.s, f"({x.v} << {n})", (xl << n, xh << n),
                         n32=n <= 30 and _fits32((xl, xh), (xl << n, xh << n)))

    @_folding
    def shr(self, x, n):
        xl, xh = self._iv(x)
        if isinstance(n, BV):
            am, amax = self._amount(n, x.w)
            return self._new(x.w, x.s, f"({x.v} >> {am})", (min(xl, 0), max(xh, 0)),
                             n32=amax <= 31 and _fits32((xl, xh), self._iv_name(am)))
        if n < 0:
            raise ValueError("negative shift")
        k = min(n, 63 if x.w <= 62 else 127)
        return self._new(x.w, x.s, f"({x.v} >> {k})", (xl >> k, xh >> k),
                         n32=k <= 31 and _fits32((xl, xh)))

    @_folding
    def bitop(self, op, x, y):
        if x.s:
            raise ValueError("bitwise operations take unsigned vectors (bitcast first)")
        c = {"and": "&", "or": "|", "xor": "^"}[op]
        (a, b), (e, d) = self._iv(x), self._iv(y)
        iv = None
        if a >= 0 and e >= 0:                       # unsigned operands (always, for x.s False)
            iv = (0, min(b, d)) if op == "and" else (0, (1 << max(b, d).bit_length()) - 1)
        return self._new(x.w, False, f"({x.v} {c} {y.v})", iv,
                         n32=iv is not None and _fits32((a, b), (e, d), iv))

    @_folding
    def cmp(self, op, x, y):
        if self.fold:
            (a, b), (c2, d) = self._iv(x), self._iv(y)
            t = {"eq": (False if b < c2 or d < a else None),
                 "ne": (True if b < c2 or d < a else None),
                 "lt": (True if b < c2 else False if a >= d else None),
                 "le": (True if b <= c2 else False if a > d else None)}[op]
            if t is not None:
                return self.bconst(t)
        c = {"eq": "==", "ne": "!=", "lt": "<", "le": "<="}[op]
        r = self._newb(f"CMP({x.v} {c} {y.v})")
        if self.fold and op in ("lt", "le"):
            if y.v in self.cvals:
                self.cmp_src[r.v] = (x.v, self.cvals[y.v] - (op == "le"))     # x < k
            else:
                self.cmp_pair[r.v] = (x.v, y.v)                              # x < y (or <=)
        return r

    def _bool_const(self, a) -> "bool | None":
        return {"(-1)": True, "(0)": False}.get(a.v) if self.fold else None

    @_folding
    def ite(self, c, x, y):
        t = self._bool_const(c)
        if t is not None:
            return x if t else y
        (a, b), (c2, d) = self._iv(x), self._iv(y)
        src = self.cmp_src.get(c.v)
        if src is not None:                         # c is v < k: each branch knows which side
            v, k = src
            if x.v == v:
                b = min(b, k - 1)
            if y.v == v:
                c2 = max(c2, k)
        r = self._new(x.w, x.s, f"SEL({c.v}, {x.v}, {y.v})", (min(a, c2), max(b, d)), n32=True)
        if self.cmp_pair.get(c.v) == (y.v, x.v):    # ite(u < v, v, u) = max(u, v): r >= both
            self.ge[r.v] = self.ge.get(x.v, frozenset()) | self.ge.get(y.v, frozenset()) | {x.v, y.v}
        return r

    @_folding
    def bite(self, c, x, y):
        t = self._bool_const(c)
        if t is not None:
            return x if t else y
        return self._newb(f"SEL({c.v}, {x.v}, {y.v})")

    def _connective(self, op: str, a, b, absorbing: bool):
        """a op b, or what a constant operand makes of it (x & true = x, x & false = false;
        x | false = x, x | true = true)."""
        for p, q in ((a, b), (b, a)):
            t = self._bool_const(p)
            if t is not None:
                return p if t == absorbing else q
        return self._newb(f"({a.v} {op} {b.v})")

    @_folding
    def band_(self, a, b): return self._connective("&", a, b, False)
    @_folding
    def bor_(self, a, b): return self._connective("|", a, b, True)
    @_folding
    def bxor_(self, a, b): return self._newb(f"({a.v} ^ {b.v})")
    @_folding
    def bnot_(self, a): return self._newb(f"(~{a.v})")

    @_folding
    def resize(self, x, w, s):
        iv = self._iv(x)
        lo, hi = int_range(w, s)
        if not (lo <= iv[0] and iv[1] <= hi):
            self.checks += 1
            ww = max(w, x.w)
            lw = 62 if ww <= 62 else 126
            self.lines.append(f"bad |= CMP({x.v} < {_lit(lo, lw)}) | CMP({x.v} > {_lit(hi, lw)});")
        if (w <= 62) == (x.w <= 62):
            return self._new(w, s, x.v, iv, n32=True)
        return self._new(w, s, f"(({_ctype(w)})({x.v}))", iv, n32=True)

    @_folding
    def bitcast(self, x, s):
        if s == x.s:
            return x
        iv = self._iv(x)
        lo, hi = int_range(x.w, s)
        if lo <= iv[0] and iv[1] <= hi:             # the same value either way
            return self._new(x.w, s, x.v, iv, n32=True)
        m = x.w <= 31
        return self._new(x.w, s, self._wrap_expr(_u(x.w, x.v, m), x.w, s, m), n32=m)

    @_folding
    def extract(self, x, hi, lo):
        w = hi - lo + 1
        ww = max(w, x.w)
        xl, xh = self._iv(x)
        iv, fb = (0, (1 << w) - 1), self.fbits.get(x.v)
        if fb is not None and lo <= fb[0] and hi == fb[0]:
            # bits hb..0 of x lie in [flo, fhi], so bits hb..lo lie in [flo >> lo, fhi >> lo]
            iv = (fb[1] >> lo, fb[2] >> lo)
        if self.fold and lo == 0 and 0 <= xl and xh < (1 << w) and (w <= 62) == (x.w <= 62):
            e = x.v                                 # the low bits are the value: a copy
            iv = (max(iv[0], xl), min(iv[1], xh))
            m = True
        else:
            # in uint32: the low 32 bits of x's two's complement hold bits lo..hi, or x >= 0
            # fits 31 bits (all higher bits are 0 in either width)
            m = w <= 31 and _fits32((xl, xh)) and (lo + w <= 32 or (xl >= 0 and lo <= 31))
            one = "ONE32" if m else "((uint64_t)1)" if ww <= 62 else "((U128)1)"
            e = f"({_u(ww, x.v, m)} >> {lo}) & (({one} << {w}) - 1)"
            e = _s(ww, e, m)
            if (w <= 62) != (ww <= 62):
                e = f"(({_ctype(w)})({e}))"
        r = self._new(w, False, e, iv, n32=m)
        if fb is not None and lo <= fb[0] <= hi:
            self.fbits[r.v] = (fb[0] - lo, fb[1] >> lo, fb[2] >> lo)
        return r

    @_folding
    def concat(self, x, y):
        if x.s or y.s:
            raise ValueError("concat takes unsigned vectors")
        w = x.w + y.w
        return self._new(w, False, f"(({x.v} << {y.w}) | {y.v})", n32=w <= 31)

    @_folding
    def abs_(self, x):
        a, b = self._iv(x)
        m = max(abs(a), abs(b))
        return self._new(x.w, False, f"SEL(CMP({x.v} < 0), -{x.v}, {x.v})",
                         (0 if a <= 0 <= b else min(abs(a), abs(b)), m), n32=_fits32((a, b), (0, m)))

    # -- emission ------------------------------------------------------------------------------
    def source(self, outputs: Sequence[BV], out_storage: Sequence[int], lanes: int = 0) -> str:
        """C source of the kernel. lanes=0: scalar; lanes=NL: GCC vectors of NL lanes."""
        if lanes and self.scalar_only:
            raise Unsupported("this trace needs scalar __int128 code")
        ins = ", ".join(f"const {_CTYPES[s]}* restrict in{i}" for i, (s, _, _) in enumerate(self.inputs))
        outs = ", ".join(f"{_CTYPES[s]}* restrict out{j}" for j, s in enumerate(out_storage))
        body = "\n        ".join(self.lines)
        stores = "\n        ".join(f"STORE(out{j}, {_CTYPES[s]}, {o.v});" for j, (o, s) in enumerate(zip(outputs, out_storage)))
        if lanes:
            head = f"""#define NL {lanes}
typedef int64_t W64 __attribute__((vector_size(8 * NL)));
typedef uint64_t UW64 __attribute__((vector_size(8 * NL)));
#define SEL(c, x, y) (((c) & (x)) | (~(c) & (y)))
#define CMP(e) (e)
#define U64(e) ((UW64)(e))
#define S64(e) ((W64)(e))
#define U32(e) U64(e)
#define S32(e) S64(e)
#define ONE32 ((uint64_t)1)
#define BC(e) ((e) + ZV)
#define LOAD(T, v, p, k) W64 v; for (int j = 0; j < NL; j++) v[j] = (int64_t)p[(i + j < n ? i + j : n - 1) * st[k]];
#define STORE(p, T, v) for (int j = 0; j < NL && i + j < n; j++) p[i + j] = (T)(v)[j];
#define ANY(b) any_lanes(b)
static inline int64_t any_lanes(W64 b) {{ int64_t r = 0; for (int j = 0; j < NL; j++) r |= b[j]; return r; }}
"""
            step = "NL"
            zv = "        const W64 ZV = {0};\n"
        else:
            head = """typedef int64_t W64;
#define SEL(c, x, y) ((c) ? (x) : (y))
#define CMP(e) (-(int64_t)(e))
#define U64(e) ((uint64_t)(e))
#define S64(e) ((int64_t)(e))
#define U32(e) U64(e)
#define S32(e) S64(e)
#define ONE32 ((uint64_t)1)
#define BC(e) (e)
#define LOAD(T, v, p, k) T v = (T)p[i * st[k]];
#define STORE(p, T, v) p[i] = (T)(v);
#define ANY(b) (b)
"""
            step = "1"
            zv = ""
        return f"""#include <stdint.h>
typedef __int128 W128;
typedef unsigned __int128 U128;
{head}
int64_t kernel(int64_t n, const int64_t* restrict st, {ins}, {outs}) {{
    int64_t any_bad = 0;
    for (int64_t i = 0; i < n; i += {step}) {{
{zv}        W64 bad = BC(0);
        {body}
        {stores}
        any_bad |= ANY(bad);
    }}
    return any_bad ? 0 : -1;
}}
"""


def available() -> tuple[bool, str]:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return False, "no C compiler (cc/gcc) on PATH"
    return True, cc


def _cache_dir() -> Path:
    return _cache.cache_dir()


_LOCK = threading.Lock()
_LOADED: dict[str, Any] = {}


_OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os")


def _default_level(src: str) -> str:
    """-O3, or -O1 for a large kernel: gcc's -O3 time grows fast with function size
    (measured: 10.5k lines, -O3 52 s vs -O1 8 s; -O1 code runs at ~80%)."""
    return "-O3" if src.count("\n") < 4000 else "-O1"


def _env_level() -> str:
    """$MMAFORMAL_CC_OPT when it names a level, else ""."""
    env = os.environ.get("MMAFORMAL_CC_OPT", "")
    return env if env in _OPT_LEVELS else ""


def _opt_level(src: str) -> str:
    return _env_level() or _default_level(src)


def _so_hash(src: str) -> str:
    """The kernel's file name hash: its source and (when not the default) its level."""
    opt = _opt_level(src)
    key = src if opt == _default_level(src) else f"/* {opt} */\n{src}"
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def _compile_so(src: str, so: Path) -> None:
    """Compile src into so: into a temporary folder, then renamed into place, then its size and
    sha256 recorded (k_<hash>.sum). The caller holds the kernel's file lock."""
    ok, cc = available()
    if not ok:
        raise Unsupported(cc)
    with tempfile.TemporaryDirectory(dir=so.parent) as tmp:
        c = Path(tmp) / "k.c"
        c.write_text(src)
        out = Path(tmp) / "k.so"
        cmd = [cc, _opt_level(src), "-march=native", "-fwrapv", "-fno-strict-aliasing", "-shared",
               "-fPIC", "-o", str(out), str(c)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            err = [l for l in r.stderr.splitlines() if "error" in l][:3]
            raise RuntimeError(f"C compiler failed ({cc}): {err}")
        os.replace(out, so)
    _cache.write_sum(so)


def _load_so(src: str, h: str) -> Any:
    """The loaded kernel k_<h>.so, built first unless its size and sha256 are those recorded
    when it was built (a .so cut short, emptied, overwritten or without a record is rebuilt,
    never loaded: loading a truncated one ends the process with SIGBUS). Builders of one kernel
    take its lock (k_<h>.lock) and check again under it, so concurrent processes build it once;
    a .so that checks out but does not load is rebuilt once."""
    d = _cache_dir()
    so = d / f"k_{h}.so"
    for attempt in (0, 1):
        if attempt or not _cache.sum_ok(so):
            with _cache.file_lock(d / f"k_{h}.lock"):
                if attempt or not _cache.sum_ok(so):
                    _compile_so(src, so)
        try:
            lib = ctypes.CDLL(str(so))
        except OSError:
            if attempt:
                raise
            continue
        lib.kernel.restype = ctypes.c_int64
        lib.so_hash = h
        return lib
    raise AssertionError("unreachable")


def _build(src: str, keep_source: bool = False) -> Any:
    h = _so_hash(src)
    with _LOCK:
        if h in _LOADED:
            return _LOADED[h]
        if keep_source:             # read back by kernels found through the disk index
            c = _cache_dir() / f"k_{h}.c"
            try:
                intact = c.read_text() == src
            except (OSError, UnicodeDecodeError):
                intact = False
            if not intact:
                _cache.write_atomic(c, src.encode())
        lib = _load_so(src, h)
        _LOADED[h] = lib
        return lib


def _index_file(disk_key: str, in_storage, out_storage, lanes: int) -> Path:
    here = Path(__file__).resolve().parent
    opt = _env_level()
    head = f"{disk_key}|{list(in_storage)}|{list(out_storage)}|{lanes}|{available()[1]}" + \
        (f"|{opt}" if opt else "")
    key = hashlib.sha256(head.encode() + _cache.files_key(
        [here / "compile.py", here / "bits.py", here / "_cache.py"]).encode()).hexdigest()
    return _cache_dir() / f"kidx_{key[:32]}.txt"


def _from_index(idx: Path, in_storage, out_storage) -> "Kernel | None":
    """The kernel an earlier process built under this index file, or None (trace again). The
    kept source k_<h>.c is content-addressed (its hash must be h), so a damaged one is never
    used; a damaged .so is rebuilt from it (`_load_so`)."""
    try:
        h = idx.read_text().strip()
    except OSError:
        return None
    if len(h) != 24:
        return None
    with _LOCK:
        lib = _LOADED.get(h)
    if lib is not None:
        return Kernel(lib, in_storage, out_storage, None)
    try:
        src = (_cache_dir() / f"k_{h}.c").read_text()
    except (OSError, UnicodeDecodeError):
        return None
    if _so_hash(src) != h:
        return None
    return Kernel(_build(src), in_storage, out_storage, src)


class Kernel:
    """A compiled definition: call with one array per input (lanes), get the outputs."""

    def __init__(self, lib, in_storage, out_storage, source: str | None):
        self.lib = lib
        self.in_storage = list(in_storage)
        self.out_storage = list(out_storage)
        self._source = source

    @property
    def source(self) -> str:
        """The C source (read back from the cache for a kernel found by its disk index)."""
        if self._source is None:
            self._source = (_cache_dir() / f"k_{self.lib.so_hash}.c").read_text()
        return self._source

    def __call__(self, *inputs: np.ndarray) -> list[np.ndarray]:
        if len(inputs) != len(self.in_storage):
            raise ValueError(f"kernel takes {len(self.in_storage)} inputs, got {len(inputs)}")
        arrs, strides = [], []
        n = None
        for x, s in zip(inputs, self.in_storage):
            x = np.asarray(x)
            if x.dtype != _NPTYPES[s]:
                raise ValueError(f"kernel input must be {np.dtype(_NPTYPES[s]).name}, got {x.dtype}")
            if x.ndim != 1:
                raise ValueError("kernel inputs are 1-D lanes")
            if x.strides[0] % x.itemsize:
                x = np.ascontiguousarray(x)
            n = len(x) if n is None else n
            if len(x) != n:
                raise ValueError("kernel inputs have different lengths")
            arrs.append(x)
            strides.append(x.strides[0] // x.itemsize)
        n = 0 if n is None else n
        outs = [np.empty(n, dtype=_NPTYPES[s]) for s in self.out_storage]
        st = np.asarray(strides, dtype=np.int64)
        args = [ctypes.c_int64(n), st.ctypes.data_as(ctypes.c_void_p)]
        args += [a.ctypes.data_as(ctypes.c_void_p) for a in arrs]
        args += [o.ctypes.data_as(ctypes.c_void_p) for o in outs]
        r = self.lib.kernel(*args)
        if r >= 0:
            raise OverflowError("compiled kernel: a plain operation overflowed "
                                "(run the numpy back-end on these lanes for the operation)")
        return outs


_KERNELS: dict[Any, Kernel] = {}


def compile_kernel(fn: Callable[..., Sequence[BV] | BV], in_storage: Sequence[int],
                   out_storage: Sequence[int], key: Any = None, disk_key: str | None = None) -> Kernel:
    """Trace fn(K, *inputs) (inputs: unsigned BVs of the given storage widths) into a kernel.

    `key`, when given, caches the traced kernel in-process (tracing itself costs time).
    `disk_key`, when given, must determine fn's trace completely (the caller hashes what fn
    runs: its parameters and the source of its code); the built kernel is then found again by
    later processes without tracing (see the module docstring)."""
    if key is not None and key in _KERNELS:
        return _KERNELS[key]
    lanes = int(os.environ.get("MMAFORMAL_LANES", "8"))
    idx = None
    if disk_key is not None:
        try:
            idx = _index_file(disk_key, in_storage, out_storage, lanes)
        except OSError:
            idx = None
        kern = _from_index(idx, in_storage, out_storage) if idx is not None else None
        if kern is not None:
            if key is not None:
                _KERNELS[key] = kern
            return kern
    K = TraceBackend()
    ins = [K.input(s) for s in in_storage]
    outs = fn(K, *ins)
    if isinstance(outs, BV):
        outs = [outs]
    try:
        src = K.source(outs, out_storage, lanes=lanes)
    except Unsupported:
        src = K.source(outs, out_storage)
    keep = idx is not None
    try:
        lib = _build(src, keep)
    except RuntimeError:
        if "vector_size" not in src:
            raise
        src = K.source(outs, out_storage)       # a compiler that rejects the vector code
        lib = _build(src, keep)
    kern = Kernel(lib, in_storage, out_storage, src)
    if idx is not None:
        try:
            tmp = idx.with_name(f".{idx.name}.{os.getpid()}")
            tmp.write_text(lib.so_hash)
            os.replace(tmp, idx)
        except OSError:
            pass
    if key is not None:
        _KERNELS[key] = kern
    return kern
