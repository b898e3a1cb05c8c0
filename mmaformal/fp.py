"""Layer 2, fp: floating-point formats, decode/encode, rounding, IEEE add/mul/fma.

May import: mmaformal.bits (and the standard library). Every function here is written once
over `BV`/`Bool` and so runs on every back-end (int, numpy lanes, z3, traced C).

Invariants:
- `decode` never normalizes: an `Unpacked` is exactly SignedSig/Exp of [Xie2025] (Algorithm 7,
  lines 3-4): value = (-1)^sign * sig * 2^(exp - t), sig the integer significand with the
  hidden bit (p = t + 1 bits), exp = max(E, 1) - bias.
- `round_to` is the only place that rounds to a format. Its input is an exact value, or an
  exact value known only as "sig plus a nonzero fraction of one unit" (`sticky`), which is
  enough to round correctly when sig has at least p + 2 bits (checked statically).
- Special values are an overlay: the finite path is computed for every input and NaN/Inf
  results are laid over it with `ite` by explicit rules.

Integer formats (s8 u8 s4 u4 b1 s32: `IntFormat`, the operands and accumulators of integer
MMA) live here too, so `fmt(name)` answers for every operand format; they have no decode/round
path (`decode` refuses them): their one reading is `int_value` (two's complement or unsigned of
the low k bits of the storage element).

Source for the format parameters: IEEE 754-2019 (f64, f32, f16), bf16/tf32 (NVIDIA and Google
documentation), OCP 8-bit Floating Point Specification (e4m3, e5m2) and OCP Microscaling
Formats (MX) v1.0 (e3m2, e2m3, e2m1, e8m0), AMD CDNA3 ISA (e4m3fnuz, e5m2fnuz), NVIDIA NVFP4
(ue4m3 scales).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Union

from .bits import BV, Bool, Backend, bitlen, bvmax, clz, ite, shr_sticky

__all__ = [
    "nan_policy",
    "Format", "FORMATS", "fmt", "Unpacked", "decode", "round_to", "MODES", "mode_code",
    "add", "mul", "fma", "add_exact", "quiet", "default_nan", "encode_special",
    "IntFormat", "INT_FORMATS", "int_value", "is_int", "mode_flags", "zero_sum_sign",
    "overlay_special",
]


@dataclass(frozen=True)
class Format:
    """A binary floating-point format and its storage.

    `nan` says which codes are NaN: "ieee" (E all ones, T != 0), "ones" (all magnitude bits
    ones: OCP e4m3, ue4m3, ue8m0), "negzero" (the code 1000...0: AMD fnuz), "none".
    """

    name: str
    w: int            # exponent field bits
    t: int            # trailing significand bits
    bias: int
    storage: int      # bits of the unsigned integer element holding it (8, 16, 32, 64)
    signed: bool = True
    inf: bool = False
    nan: str = "none"
    pad: int = 0      # low bits of the storage element that are not part of the value (tf32)
    subnormals: bool = True

    is_int = False

    @property
    def p(self) -> int:
        return self.t + 1

    @property
    def k(self) -> int:
        """Width of the encoding (sign + exponent + trailing)."""
        return int(self.signed) + self.w + self.t

    @property
    def emin(self) -> int:
        return 1 - self.bias if self.subnormals else -self.bias

    @cached_property
    def max_code(self) -> int:
        """Largest finite magnitude code (sign bit clear)."""
        m = (1 << (self.w + self.t)) - 1
        if self.nan == "ieee" or self.inf:
            return ((1 << self.w) - 1 << self.t) - 1
        if self.nan == "ones":
            return m - 1
        return m

    @property
    def emax(self) -> int:
        return (self.max_code >> self.t) - self.bias

    @property
    def inf_code(self) -> int:
        return ((1 << self.w) - 1) << self.t

    @property
    def sign_bit(self) -> int:
        return 1 << (self.k - 1) if self.signed else 0

    def ew(self) -> int:
        """A signed width that holds every Exp() of this format with room to spare."""
        return bitlen(self.bias + (1 << self.w) + self.t) + 2


def _f(name, w, t, bias, storage, **kw) -> Format:
    return Format(name, w, t, bias, storage, **kw)


FORMATS: dict[str, Format] = {f.name: f for f in [
    _f("f64", 11, 52, 1023, 64, inf=True, nan="ieee"),
    _f("f32", 8, 23, 127, 32, inf=True, nan="ieee"),
    _f("tf32", 8, 10, 127, 32, inf=True, nan="ieee", pad=13),
    _f("f16", 5, 10, 15, 16, inf=True, nan="ieee"),
    _f("bf16", 8, 7, 127, 16, inf=True, nan="ieee"),
    _f("e5m2", 5, 2, 15, 8, inf=True, nan="ieee"),
    _f("e4m3", 4, 3, 7, 8, nan="ones"),
    _f("e5m2fnuz", 5, 2, 16, 8, nan="negzero"),
    _f("e4m3fnuz", 4, 3, 8, 8, nan="negzero"),
    _f("e3m2", 3, 2, 3, 8),
    _f("e2m3", 2, 3, 1, 8),
    _f("e2m1", 2, 1, 1, 8),
    _f("ue8m0", 8, 0, 127, 8, signed=False, nan="ones", subnormals=False),
    _f("ue4m3", 4, 3, 7, 8, signed=False, nan="ones"),
    # Internal formats named by [Xie2025] Table 2 (RZ-E8M13): f32 range, 13 fraction bits,
    # stored as f32 bits with the low 10 bits zero (docs/semantics.md, rho table), hence pad=10.
    # (Bug fixed: without the padding the 22-bit code landed in the low bits of the f32 word.)
    _f("e8m13", 8, 13, 127, 32, inf=True, nan="ieee", pad=10),
]}


@dataclass(frozen=True)
class IntFormat:
    """An integer format: k value bits in the low bits of a `storage`-bit unsigned element
    (s4/u4/b1 one element per uint8, low bits; s32 as uint32 two's complement)."""

    name: str
    k: int            # value bits
    signed: bool
    storage: int
    pad: int = 0      # no container padding (kept for the storage-width checks of callers)
    is_int = True

    @property
    def lo(self) -> int:
        return -(1 << (self.k - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.k - 1)) - 1 if self.signed else (1 << self.k) - 1


#: Source: PTX ISA 9.7.14 (integer mma: .s8 .u8 .s4 .u4 .b1 operands, .s32 accumulators);
#: AMD CDNA ISA (v_mfma_i32_*_i8: signed 8-bit operands, 32-bit integer accumulators).
INT_FORMATS: dict[str, IntFormat] = {f.name: f for f in [
    IntFormat("s8", 8, True, 8), IntFormat("u8", 8, False, 8),
    IntFormat("s4", 4, True, 8), IntFormat("u4", 4, False, 8),
    IntFormat("b1", 1, False, 8), IntFormat("s32", 32, True, 32),
]}


def fmt(f: "Format | IntFormat | str") -> "Format | IntFormat":
    if isinstance(f, (Format, IntFormat)):
        return f
    try:
        return FORMATS[f]
    except KeyError:
        pass
    try:
        return INT_FORMATS[f]
    except KeyError:
        raise ValueError(f"unknown format {f!r}; expected one of "
                         f"{', '.join(list(FORMATS) + list(INT_FORMATS))}") from None


def is_int(f: "Format | IntFormat | str") -> bool:
    """True for the integer formats (s8 u8 s4 u4 b1 s32)."""
    return fmt(f).is_int


def int_value(f: "IntFormat | str", x: BV) -> BV:
    """The integer an element of format f holds, as a signed BV of k + 1 bits (exact).
    The storage bits above the k value bits are ignored (the front ends reject them)."""
    f = fmt(f)
    if not f.is_int:
        raise ValueError(f"{f.name} is not an integer format")
    if x.w != f.storage or x.s:
        raise ValueError(f"{f.name} reads u{f.storage} elements, got {x.type_name()}")
    v = x.extract(f.k - 1, 0)
    if f.signed:
        return v.bitcast(True).resize(f.k + 1, True)
    return v.resize(f.k + 1, True)


MODES = ("RNE", "RNA", "RZ", "RU", "RD", "RO")


def mode_code(name: str) -> int:
    try:
        return MODES.index(name)
    except ValueError:
        raise ValueError(f"unknown rounding mode {name!r}; expected one of {', '.join(MODES)}") from None


Mode = Union[str, BV]


def mode_flags(mode: Mode) -> dict[str, "Bool | bool"]:
    """{rounding mode name: whether `mode` (a name, or a symbolic mode code) is it}."""
    if isinstance(mode, str):
        mode_code(mode)
        return {m: m == mode for m in MODES}
    return {m: mode == i for i, m in enumerate(MODES)}


@dataclass
class Unpacked:
    """A decoded operand: value = (-1)^sign * sig * 2^(exp - t) when finite."""

    fmt: Format
    sign: Bool
    exp: BV        # signed: Exp(x) = max(E, 1) - bias (the exponent of the hidden-bit position)
    sig: BV        # unsigned, p bits: the integer significand with the hidden bit
    zero: Bool
    inf: Bool
    nan: Bool
    bits: BV       # the value bits (without container padding), for NaN propagation

    @property
    def finite(self) -> Bool:
        return ~(self.inf | self.nan)


def decode(f: "Format | str", x: BV) -> Unpacked:
    """Decode a storage element (unsigned, `storage` bits) of format f. Bits above the format
    and the container's low padding (tf32) are ignored."""
    f = fmt(f)
    if f.is_int:
        raise ValueError(f"{f.name} is an integer format: read it with int_value, not decode")
    if x.w != f.storage or x.s:
        raise ValueError(f"{f.name} decodes u{f.storage} elements, got {x.type_name()}")
    K = x.k
    v = x.extract(f.pad + f.k - 1, f.pad)
    E = v.extract(f.t + f.w - 1, f.t)
    T = v.extract(f.t - 1, 0) if f.t else K.const(0, 1, False)
    sign = v.bit(f.k - 1) if f.signed else K.bconst(False)
    ew = f.ew()
    if f.subnormals:
        hidden = E != 0
        exp = ite(hidden, E.resize(ew, True) - f.bias, K.const(f.emin, ew, True))
        zero = (E == 0) & (T == 0)
    else:
        hidden = K.bconst(True)
        exp = E.resize(ew, True) - f.bias
        zero = K.bconst(False)
    p = f.p
    Tp = T.resize(p)
    sig = ite(hidden, Tp + (1 << f.t), Tp) if f.t else ite(hidden, K.const(1, 1, False), K.const(0, 1, False))
    E_ones = E == (1 << f.w) - 1
    if f.nan == "ieee":
        nan = E_ones & (T != 0)
        inf = E_ones & (T == 0)
    elif f.nan == "ones":
        nan = v.extract(f.w + f.t - 1, 0) == (1 << (f.w + f.t)) - 1
        inf = K.bconst(False)
    elif f.nan == "negzero":
        nan = v == f.sign_bit
        inf = K.bconst(False)
        zero = zero & ~sign
    else:
        nan = K.bconst(False)
        inf = K.bconst(False)
    return Unpacked(f, sign, exp, sig, zero, inf, nan, v)


def _place(f: Format, code: BV) -> BV:
    """Value bits (k wide) -> storage element (with tf32 padding)."""
    c = code.resize(f.storage)
    return c << f.pad if f.pad else c


def default_nan(f: "Format | str") -> int:
    """The format's default quiet NaN code, as stored (positive, quiet bit set)."""
    f = fmt(f)
    if f.nan == "ieee":
        code = f.inf_code | (1 << (f.t - 1))
    elif f.nan == "ones":
        code = (1 << (f.w + f.t)) - 1
    elif f.nan == "negzero":
        code = f.sign_bit
    else:
        raise ValueError(f"{f.name} has no NaN")
    return code << f.pad


def quiet(f: Format, u: Unpacked) -> BV:
    """The input NaN with its quiet bit set (IEEE payload propagation), as stored."""
    if f.nan != "ieee":
        return u.bits.k.const(default_nan(f), f.storage, False)
    return _place(f, u.bits | (1 << (f.t - 1)))


def encode_special(K: Backend, f: Format, code: int) -> BV:
    return K.const(code, f.storage, False)


def round_to(f: "Format | str", sign: "Bool | bool", exp: BV, sig: BV, mode: Mode,
             sticky: "Bool | bool" = False, overflow: str = "ieee") -> BV:
    """Round (-1)^sign * (sig + frac) * 2^exp to format f and encode it (storage element).

    exp is the exponent of sig's least significant bit; frac is 0, or lies strictly between
    0 and 1 when `sticky` is set. Subnormal results are kept. `overflow`: "ieee" (Inf, or for
    formats without Inf the NaN code, or the largest finite number when the format has
    neither) or "saturate" (largest finite number in every mode).
    "inf": Inf in every mode (RZ included; formats without Inf: NaN, else saturate).
    A zero result keeps `sign` (the caller applies the IEEE sign-of-zero rules).
    """
    f = fmt(f)
    if not f.subnormals:
        raise ValueError(f"{f.name} is decode-only (no rounding into it)")
    if sig.s or not exp.s:
        raise ValueError("round_to takes an unsigned sig and a signed exp")
    K = sig.k
    sign = sign if isinstance(sign, Bool) else K.bconst(bool(sign))
    fl = mode_flags(mode)
    p, t = f.p, f.t
    n = sig.w
    if n < p + 2:
        if not (sticky is False):
            raise ValueError("a sticky input needs a significand of at least p + 2 bits")
        sig = sig.resize(p + 2) << (p + 2 - n)
        exp_pad = p + 2 - n
        n = p + 2
    else:
        exp_pad = 0
    ew = max(exp.w, bitlen(n) + 1, f.ew()) + 2
    e = exp.resize(ew) - exp_pad if exp_pad else exp.resize(ew)
    lz = clz(sig)
    top = e + (n - 1) - lz.resize(ew, True)           # exponent of the leading 1
    m = sig << lz                                       # leading 1 at bit n-1
    emin = K.const(f.emin, ew, True)
    below = top < emin
    extra = ite(below, emin - top, K.const(0, ew, True))
    sh = extra + (n - p - 1)                            # shift that leaves q and its guard bit
    shu = sh.bitcast(False)
    r, st_low = shr_sticky(m, shu)
    q = (r >> 1).resize(p + 1) if n > p + 1 else r >> 1
    guard = r.bit(0)
    st = st_low | sticky
    lsb = q.bit(0)
    inexact = guard | st
    inc = (fl["RNE"] & guard & (st | lsb)) | (fl["RNA"] & guard) \
        | (fl["RU"] & ~sign & inexact) | (fl["RD"] & sign & inexact)
    inc = inc if isinstance(inc, Bool) else K.bconst(bool(inc))
    q = ite(fl["RO"] & inexact, q | 1, q) if not (fl["RO"] is False) else q
    q = ite(inc, q + 1, q)
    e_res = ite(m == 0, emin, bvmax(top, emin))
    cw = ew + t + 2
    code = ((e_res - emin).resize(cw, True) << t) + q.resize(cw, True)
    over = code > f.max_code
    if overflow not in ("ieee", "saturate", "inf"):
        raise ValueError(f"overflow must be 'ieee', 'saturate' or 'inf', got {overflow!r}")
    to_inf = True if overflow == "inf" else fl["RNE"] | fl["RNA"] | (fl["RU"] & ~sign) | (fl["RD"] & sign)
    to_inf = to_inf if isinstance(to_inf, Bool) else K.bconst(bool(to_inf))
    kw = f.k
    maxc = K.const(f.max_code, kw, False)
    if overflow == "saturate" or (not f.inf and f.nan == "none"):
        big = maxc
    elif f.inf:
        big = ite(to_inf, K.const(f.inf_code, kw, False), maxc)
    else:  # NaN but no Inf (e4m3, fnuz): overflow in a to-infinity mode gives NaN
        nanc = default_nan(f) >> f.pad
        big = ite(to_inf, K.const(nanc & ((1 << kw) - 1), kw, False), maxc)
    mag = ite(over, big, code.bitcast(False).extract(kw - 1, 0))
    if f.nan == "negzero":
        # fnuz: no negative zero, and the NaN code already carries the sign bit
        is_nan = mag == f.sign_bit
        neg = sign & (mag != 0) & ~is_nan
        out = ite(neg, mag | f.sign_bit, mag)
    elif f.signed:
        out = ite(sign, mag | f.sign_bit, mag)
    else:
        # Unsigned (ue4m3): a negative value that does not round to zero is not
        # representable and gives the NaN code, as ml_dtypes does for e8m0 (oracle policy).
        # (Bug fixed: the sign was dropped, so -x was encoded as +x.)
        out = ite(sign & (mag != 0), K.const(default_nan(f) >> f.pad, kw, False), mag)
    return _place(f, out)


# ------------------------------------------------------------------------------------------
# Exact addition with a sticky bit (the one adder under add and fma).
# ------------------------------------------------------------------------------------------

@dataclass
class Sum:
    """(-1)^sign * (sig + frac) * 2^exp, frac in (0, 1) iff sticky; zero iff exact zero."""

    sign: Bool
    exp: BV
    sig: BV
    sticky: Bool
    zero: Bool


def add_exact(sx: Bool, ex: BV, mx: BV, sy: Bool, ey: BV, my: BV, p_min: int = 0,
              g: int = 3) -> Sum:
    """x + y for x = (-1)^sx mx 2^ex and y likewise (ex, ey: exponents of the LSBs).

    The operand with the larger leading exponent is kept whole; the other is aligned to it
    and the bits shifted out are only remembered as a sticky bit. With g >= 2 guard bits the
    result rounds correctly to any precision up to max(width, p_min). Sign of a zero result
    is left to the caller (IEEE rules depend on the rounding mode)."""
    K = mx.k
    n = max(mx.w, my.w, p_min)
    ew = max(ex.w, ey.w) + 2
    mx, my = mx.resize(n), my.resize(n)
    lzx, lzy = clz(mx), clz(my)
    # normalized LSB exponents; an all-zero operand gets the smallest exponent
    lo = K.const(-(1 << (ew - 2)), ew, True)
    nx = ite(mx == 0, lo, ex.resize(ew) - lzx.resize(ew, True))
    ny = ite(my == 0, lo, ey.resize(ew) - lzy.resize(ew, True))
    mx, my = mx << lzx, my << lzy
    swap = nx < ny
    sX, sY = ite(swap, sy, sx), ite(swap, sx, sy)
    eX, eY = ite(swap, ny, nx), ite(swap, nx, ny)
    mX, mY = ite(swap, my, mx), ite(swap, mx, my)
    W = n + g + 2
    X = mX.resize(W) << g
    d = (eX - eY).bitcast(False)
    Y, st = shr_sticky(mY.resize(W) << g, d)
    same = ~(sX ^ sY)
    Xs, Ys = X.resize(W + 1, True), Y.resize(W + 1, True)
    stv = ite(st, K.const(1, W + 1, True), K.const(0, W + 1, True))
    Z = ite(same, Xs + Ys, Xs - Ys - stv)
    neg = Z < 0
    sign = ite(neg, ~sX, sX)
    mag = Z.abs().resize(W + 1)
    zero = (mag == 0) & ~st
    return Sum(sign, eX - g, mag, st, zero)


def zero_sum_sign(sa: Bool, sb: Bool, fl) -> Bool:
    """IEEE 754 sign of an exact zero sum of two terms with signs sa, sb."""
    rd = fl["RD"]
    rd = rd if isinstance(rd, Bool) else sa.k.bconst(bool(rd))
    return ite(sa ^ sb, rd, sa)


_NAN_ALIASES = {"propagate": "propagate-abc", "propagate-reverse": "propagate-cba"}


def nan_policy(nan: "str | int") -> "tuple[str | None, int | None]":
    """Parse a NaN policy into (operand priority, code of a generated NaN).

    "default" -> (None, None): every NaN result is the format's default NaN; an int -> (None,
    code): every NaN result is that code; "propagate-ORDER[:CODE]" -> (ORDER, CODE or None):
    the first NaN operand in ORDER (letters a, b, c = the operation's arguments) is returned
    quieted, and an invalid operation with no NaN operand gives CODE (default: the format's
    default NaN). "propagate" = "propagate-abc", "propagate-reverse" = "propagate-cba"."""
    if not isinstance(nan, str):
        return None, int(nan)
    if nan == "default":
        return None, None
    head, _, code = nan.partition(":")
    head = _NAN_ALIASES.get(head, head)
    order = head[len("propagate-"):] if head.startswith("propagate-") else ""
    if not order or len(set(order)) != len(order) or set(order) - set("abc"):
        raise ValueError(f"unknown NaN policy {nan!r}: expected \"default\", an int code or "
                         "\"propagate-ORDER[:CODE]\" (ORDER a permutation of a, b, c)")
    try:
        return order, int(code, 0) if code else None
    except ValueError:
        raise ValueError(f"NaN policy {nan!r}: {code!r} is not an integer code") from None


def _nan_out(f: Format, nan: "str | int", ops: list[Unpacked]) -> BV:
    """The NaN result under policy `nan` (see `nan_policy`). Source of the "propagate-bca:
    0xFFF8000000000000" form: H200 campaign 2026-11-21 (DMMA: b's NaN first, then the
    accumulator's, then a's; an invalid operation gives the x86-style negative default NaN)."""
    K = ops[0].sign.k
    if f.nan == "none":
        return K.const(0, f.storage, False)   # never selected: the format has no NaN
    order, code = nan_policy(nan)
    out = K.const(default_nan(f) if code is None else code, f.storage, False)
    if order is None:
        return out
    for letter in reversed(order):            # the last ite applied wins: first letter rules
        i = "abc".index(letter)
        if i < len(ops):
            u = ops[i]
            if u.fmt.nan == "ieee" and u.fmt.t >= 1 and u.fmt is f:
                out = ite(u.nan, quiet(f, u), out)
    return out


def overlay_special(f: Format, finite: BV, nan: Bool, nan_bits: BV, inf: Bool, inf_sign: Bool) -> BV:
    """The finite result with NaN (nan_bits) and a signed Inf laid over it."""
    K = finite.k
    infc = _place(f, K.const(f.inf_code, f.k, False)) if f.inf else \
        K.const(default_nan(f) if f.nan != "none" else 0, f.storage, False)  # no Inf input: unused
    infb = ite(inf_sign, infc | _place(f, K.const(f.sign_bit, f.k, False)) if f.inf else infc, infc)
    return ite(nan, nan_bits, ite(inf, infb, finite))


def normalized(u: Unpacked, ew: int) -> tuple[BV, BV]:
    """(exp, sig) with sig's leading 1 moved to the top of its p bits (subnormals shifted
    left, exp lowered to match); zero stays zero. exp is the exponent of sig's top bit."""
    lz = clz(u.sig)
    return u.exp.resize(ew) - lz.resize(ew, True), u.sig << lz


def _exact_product(x: Unpacked, y: Unpacked, ew: int) -> tuple[BV, BV]:
    """(LSB exponent, 2p-bit significand) of the exact product of two decoded operands, from
    normalized significands (the product then has its leading 1 in one of its top two bits)."""
    f = x.fmt
    ex, mx = normalized(x, ew)
    ey, my = normalized(y, ew)
    return ex + ey - 2 * f.t, mx.resize(2 * f.p) * my.resize(2 * f.p)


def mul(f: "Format | str", a: BV, b: BV, mode: Mode = "RNE", nan: "str | int" = "default") -> BV:
    """IEEE 754 multiplication in format f (any rounding mode; NaN policy `nan`)."""
    f = fmt(f)
    x, y = decode(f, a), decode(f, b)
    sign = x.sign ^ y.sign
    exp, prod = _exact_product(x, y, f.ew() + 2)
    fin = round_to(f, sign, exp, prod, mode)
    nanc = x.nan | y.nan | (x.inf & y.zero) | (x.zero & y.inf)
    return overlay_special(f, fin, nanc, _nan_out(f, nan, [x, y]), x.inf | y.inf, sign)


def add(f: "Format | str", a: BV, b: BV, mode: Mode = "RNE", nan: "str | int" = "default") -> BV:
    """IEEE 754 addition in format f."""
    f = fmt(f)
    x, y = decode(f, a), decode(f, b)
    fl = mode_flags(mode)
    s = add_exact(x.sign, x.exp - f.t, x.sig, y.sign, y.exp - f.t, y.sig, p_min=f.p)
    sign = ite(s.zero, zero_sum_sign(x.sign, y.sign, fl), s.sign)
    fin = round_to(f, sign, s.exp, s.sig, mode, s.sticky)
    nanc = x.nan | y.nan | (x.inf & y.inf & (x.sign ^ y.sign))
    inf_sign = ite(x.inf, x.sign, y.sign)
    return overlay_special(f, fin, nanc, _nan_out(f, nan, [x, y]), x.inf | y.inf, inf_sign)


def fma(f: "Format | str", a: BV, b: BV, c: BV, mode: Mode = "RNE", nan: "str | int" = "default") -> BV:
    """IEEE 754 fusedMultiplyAdd a*b + c in format f, one rounding."""
    f = fmt(f)
    x, y, z = decode(f, a), decode(f, b), decode(f, c)
    fl = mode_flags(mode)
    ew = f.ew() + 2
    psign = x.sign ^ y.sign
    pexp, prod = _exact_product(x, y, ew)
    s = add_exact(psign, pexp, prod, z.sign, z.exp.resize(ew) - f.t, z.sig, p_min=f.p)
    sign = ite(s.zero, zero_sum_sign(psign, z.sign, fl), s.sign)
    fin = round_to(f, sign, s.exp, s.sig, mode, s.sticky)
    pinf = x.inf | y.inf
    invalid = (x.inf & y.zero) | (x.zero & y.inf) | (pinf & z.inf & (psign ^ z.sign))
    nanc = x.nan | y.nan | z.nan | invalid
    inf_sign = ite(pinf, psign, z.sign)
    return overlay_special(f, fin, nanc, _nan_out(f, nan, [x, y, z]), pinf | z.inf, inf_sign)
