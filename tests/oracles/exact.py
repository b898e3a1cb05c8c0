"""Exact-rational oracle for the mmaformal elementary operations.

What it is: an independent, deliberately slow reading of docs/semantics.md (and of [Xie2025],
sec. 4, Algorithms 1, 2, 6, 7, 8, 10, 11; for TR/GTR-FDPA also the tail of mmasim 2.1.1's code,
`tail="mmasim"`). Every value is a `fractions.Fraction`; formats are
described by their parameters (w, t, bias) and values are computed from the formulas, never by
bit tricks on the core's representation. Bit patterns are plain Python ints.

What it may import: the standard library only. It must NOT import `mmaformal` (an oracle that
shares code with the core proves nothing). numpy / ml_dtypes are used only by its self-tests
(tests/test_oracles_selfcheck.py).

Main invariant: each function computes the exact mathematical value first, then rounds once
(or as many times as the algorithm in the paper says), with the special-value overlay applied
before the finite path.

Choices made where the spec leaves room (the "oracle policy"):

* Overflow in `round_to`:
  - formats with Inf (IEEE): RNE/RNA -> Inf; RZ -> max finite of the sign; RU -> +Inf for a
    positive value, -max for a negative one; RD mirrors RU; RO -> max finite of the sign.
  - formats without Inf but with NaN (e4m3, e5m2fnuz, e4m3fnuz, ue8m0, ue4m3): where the IEEE
    rule would give an Inf the result is the format's NaN (e4m3: the NaN with the value's sign,
    0x7F / 0xFF, like ml_dtypes; fnuz: 0x80; ue8m0: 0xFF; ue4m3: 0x7F); where it would give a
    finite number (RZ, RO, RU of a negative, RD of a positive) the result is max finite.
  - formats with neither (e3m2, e2m3, e2m1): max finite of the sign in every mode (saturation,
    like ml_dtypes).
  "Overflow" means the value rounded with an unbounded exponent range exceeds max finite (IEEE
  754-2019 7.4); e.g. e4m3 RNE: 464 -> 448 (tie to even), 465 -> NaN.
* "Even" / "odd" (RNE ties, RO) is the parity of the integer significand lo / ulp of the lower
  neighbour lo, i.e. of lo's code for every format with t >= 1. RO: if inexact, pick the
  neighbour that is odd (= "truncate, then force the last bit to 1"). For t = 0 (ue8m0) both
  neighbours have significand 1, IEEE's "even digit" is undefined; with this rule the lower
  one counts as odd, so RNE ties go to the larger magnitude (as ml_dtypes float8_e8m0fnu does)
  and RO equals RZ.
* Unsigned formats: a zero or negative value is not representable in ue8m0 -> NaN (0xFF), as
  ml_dtypes does; positive values below 2^-127 saturate to 0x00 = 2^-127 in every mode (ue8m0
  has no zero; ml_dtypes does the same for RNE). ue4m3: a value that rounds to zero gives 0x00;
  a negative value that does not round to zero gives NaN (0x7F).
* fnuz formats have no -0: a zero result of either sign is 0x00.
* NaN results of the IEEE operations (`ieee_*`, `e_fdpa`, `tr_fdpa`, `gtr_fdpa`, `ftz_*`,
  `phi_ftz_addmul`) are the marker string "nan": the payload policy is a parameter of the core.
  T-FDPA and ST-FDPA return NVIDIA's canonical NaN (0x7FFFFFFF for f32 and E8M13 output,
  0x7FFF for f16 output).
* ue8m0 as a *value*: 0x00..0xFE is 2^(E-127) (semantics.md's table); so for a scale,
  SignedSig = 1 and Exp = E - 127 (the generic formula `max(E,1) - bias` would say -126 for
  0x00, which contradicts the table; the oracle follows the table).
* zero_exp applies to c in TR-/GTR-FDPA as well: under "excluded", c = +-0 does not take part
  in E = max(e_max, Exp(c)); under "field" it takes Exp(c) = -126.
* An FDPA whose result is an exact zero gets the sign rule of semantics.md (-0 only if every
  term is a zero of negative sign); this oracle applies it to T-, ST-, TR-, GTR- and E-FDPA.
* TR-FDPA product overflow (|s_k 2^e_k| >= 2^128 -> Inf of its sign) is applied in TR-FDPA only
  (semantics.md); for FP8 inputs of GTR-FDPA it cannot happen.
* FTZ-Add / FTZ-Mul (Algorithm 1) do not flush their inputs; only Phi_FTZ-AddMul (Algorithm 2)
  flushes subnormal inputs (A, B and C) to +0. Output flushing: RNE-FP32 with subnormals kept,
  then a nonzero |z| < 2^-126 becomes a zero of the same sign.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

__all__ = [
    "Format",
    "FORMATS",
    "MODES",
    "RHOS",
    "decode",
    "signed_sig_exp",
    "round_to",
    "ieee_add",
    "ieee_mul",
    "ieee_fma",
    "t_fdpa",
    "st_fdpa",
    "e_fdpa",
    "tr_fdpa",
    "gtr_fdpa",
    "ftz_add",
    "ftz_mul",
    "phi_ftz_addmul",
    "NAN",
]

NAN = "nan"  # marker returned by the IEEE-style operations for a NaN result
MODES = ("RNE", "RNA", "RZ", "RU", "RD", "RO")


# --------------------------------------------------------------------------------------------
# Formats
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Format:
    """Parameters of one format, as in the table of docs/semantics.md.

    nan: "ieee" (E all ones, T != 0), "allones" (E and T all ones: e4m3, ue4m3, ue8m0),
    "negzero" (the code of -0 is the NaN: fnuz), or None.
    pad: low bits of the storage container that are not part of the value (tf32: 13, e8m13: 10).
    """

    name: str
    w: int
    t: int
    bias: int
    container: int
    signed: bool = True
    inf: bool = True
    nan: str | None = "ieee"
    pad: int = 0
    has_zero: bool = True  # False only for ue8m0

    @property
    def width(self) -> int:
        return (1 if self.signed else 0) + self.w + self.t

    @property
    def emin(self) -> int:
        # Exponent of the smallest normal number (ue8m0: the smallest number, 2^-127).
        return -self.bias if not self.has_zero else 1 - self.bias

    @property
    def max_code(self) -> int:
        """Magnitude code (sign bit clear, not shifted by pad) of the largest finite number."""
        eall = (1 << self.w) - 1
        tall = (1 << self.t) - 1
        if self.nan == "ieee" or self.inf:
            return ((eall - 1) << self.t) | tall
        if self.nan == "allones":
            return ((eall << self.t) | tall) - 1
        return (eall << self.t) | tall

    @property
    def max_finite(self) -> Fraction:
        v = _MAX_FINITE.get(self.name)
        if v is None:
            v = decode(self.name, self.max_code << self.pad)
            assert isinstance(v, Fraction) and v > 0
            _MAX_FINITE[self.name] = v
        return v


_MAX_FINITE: dict[str, Fraction] = {}


FORMATS: dict[str, Format] = {
    f.name: f
    for f in [
        Format("f64", 11, 52, 1023, 64),
        Format("f32", 8, 23, 127, 32),
        Format("tf32", 8, 10, 127, 32, pad=13),
        Format("f16", 5, 10, 15, 16),
        Format("bf16", 8, 7, 127, 16),
        Format("e5m2", 5, 2, 15, 8),
        Format("e4m3", 4, 3, 7, 8, inf=False, nan="allones"),
        Format("e5m2fnuz", 5, 2, 16, 8, inf=False, nan="negzero"),
        Format("e4m3fnuz", 4, 3, 8, 8, inf=False, nan="negzero"),
        Format("e3m2", 3, 2, 3, 8, inf=False, nan=None),
        Format("e2m3", 2, 3, 1, 8, inf=False, nan=None),
        Format("e2m1", 2, 1, 1, 8, inf=False, nan=None),
        Format("ue8m0", 8, 0, 127, 8, signed=False, inf=False, nan="allones", has_zero=False),
        Format("ue4m3", 4, 3, 7, 8, signed=False, inf=False, nan="allones"),
        # Not in the table of semantics.md: the output of rho = RZ-E8M13 (Table 2), a float with
        # the range of f32 and 13 trailing bits, stored as f32 bits with the low 10 bits zero.
        Format("e8m13", 8, 13, 127, 32, pad=10),
    ]
}


def _fmt(fmt: str | Format) -> Format:
    return fmt if isinstance(fmt, Format) else FORMATS[fmt]


def _pow2(k: int) -> Fraction:
    return Fraction(1 << k) if k >= 0 else Fraction(1, 1 << -k)


def _ilog2(x: Fraction) -> int:
    """floor(log2(x)) for a Fraction x > 0, exactly."""
    n, d = x.numerator, x.denominator
    assert n > 0 and d > 0
    e = n.bit_length() - d.bit_length()
    ge = (n >= (d << e)) if e >= 0 else ((n << -e) >= d)
    return e if ge else e - 1


# --------------------------------------------------------------------------------------------
# Decode
# --------------------------------------------------------------------------------------------


def _fields(F: Format, bits: int) -> tuple[int, int, int]:
    code = (bits >> F.pad) & ((1 << F.width) - 1)
    s = (code >> (F.w + F.t)) & 1 if F.signed else 0
    E = (code >> F.t) & ((1 << F.w) - 1)
    T = code & ((1 << F.t) - 1)
    return s, E, T


def decode(fmt: str, bits: int):
    """Value of a bit pattern: Fraction (finite, nonzero), ("zero", s), ("inf", s) or ("nan",).

    Bits above the format's width (and, for tf32, the low 13 bits) are ignored.
    """
    F = _fmt(fmt)
    s, E, T = _fields(F, bits)
    eall, tall = (1 << F.w) - 1, (1 << F.t) - 1
    if F.nan == "ieee" and E == eall and T != 0:
        return ("nan",)
    if F.inf and E == eall and T == 0:
        return ("inf", s)
    if F.nan == "allones" and E == eall and T == tall:
        return ("nan",)
    if F.nan == "negzero" and s == 1 and E == 0 and T == 0:
        return ("nan",)
    if not F.has_zero:  # ue8m0: 2^(E - bias), no zero, no subnormals
        return _pow2(E - F.bias)
    if E == 0 and T == 0:
        return ("zero", s)
    if E > 0:
        mag = Fraction((1 << F.t) + T) * _pow2(E - F.bias - F.t)
    else:
        mag = Fraction(T) * _pow2(1 - F.bias - F.t)
    return -mag if s else mag


def _is_nan(v) -> bool:
    return isinstance(v, tuple) and v[0] == "nan"


def _is_inf(v) -> bool:
    return isinstance(v, tuple) and v[0] == "inf"


def _is_zero(v) -> bool:
    return isinstance(v, tuple) and v[0] == "zero"


def _sign_of(v) -> int:
    if isinstance(v, Fraction):
        return 1 if v < 0 else 0
    return v[1]


def _val(v) -> Fraction:
    """Finite value (zeros -> 0)."""
    return Fraction(0) if _is_zero(v) else v


def signed_sig_exp(fmt: str, bits: int) -> tuple[Fraction, int, int]:
    """(SignedSig(x), Exp(x), sign) of a finite x, read from its value (Algorithm 7 lines 3-4).

    Exp(x) = max(floor(log2 |x|), emin), SignedSig(x) = x / 2^Exp(x); for a zero, SignedSig = 0
    and Exp = emin. This is the same number as semantics.md's field formula for every format
    (ue8m0: Exp = E - 127, SignedSig = 1), computed from the value instead of the fields.
    """
    F = _fmt(fmt)
    v = decode(fmt, bits)
    if _is_nan(v) or _is_inf(v):
        raise ValueError("signed_sig_exp of a non-finite value")
    if _is_zero(v):
        return Fraction(0), F.emin, v[1]
    e = max(_ilog2(abs(v)), F.emin)
    return v / _pow2(e), e, _sign_of(v)


# --------------------------------------------------------------------------------------------
# Encode and round
# --------------------------------------------------------------------------------------------


def _zero_bits(F: Format, s: int) -> int:
    if not F.has_zero:
        return _nan_bits(F, 0)
    if not F.signed or F.nan == "negzero":
        return 0
    return (s << (F.w + F.t)) << F.pad


def _inf_bits(F: Format, s: int) -> int:
    assert F.inf
    return ((s << (F.w + F.t)) | (((1 << F.w) - 1) << F.t)) << F.pad


def _max_bits(F: Format, s: int) -> int:
    sb = (s << (F.w + F.t)) if F.signed else 0
    return (sb | F.max_code) << F.pad


def _nan_bits(F: Format, s: int = 0) -> int:
    """The NaN code this oracle writes for a format (round_to overflow into a NaN-only format)."""
    if F.nan == "ieee":
        return ((((1 << F.w) - 1) << F.t) | (1 << (F.t - 1))) << F.pad  # default quiet NaN
    if F.nan == "allones":
        sb = (s << (F.w + F.t)) if F.signed else 0
        return (sb | (((1 << F.w) - 1) << F.t) | ((1 << F.t) - 1)) << F.pad
    if F.nan == "negzero":
        return 1 << (F.w + F.t)
    raise ValueError(f"{F.name} has no NaN")


def _encode_exact(F: Format, mag: Fraction, s: int) -> int:
    """Bits of +-mag, where mag > 0 is a finite number of the format."""
    e = _ilog2(mag)
    if not F.has_zero:
        E, T = e + F.bias, 0
        assert mag == _pow2(e)
    elif e < F.emin:
        E = 0
        q = mag / _pow2(F.emin - F.t)
        assert q.denominator == 1
        T = int(q)
    else:
        E = e + F.bias
        q = mag / _pow2(e - F.t)
        assert q.denominator == 1
        T = int(q) - (1 << F.t)
    assert 0 <= T < (1 << F.t) and 0 <= E < (1 << F.w)
    sb = (s << (F.w + F.t)) if F.signed else 0
    bits = (sb | (E << F.t) | T) << F.pad
    assert decode(F.name, bits) == (-mag if s else mag), (F.name, mag, s)
    return bits


def _overflow_bits(F: Format, s: int, mode: str) -> int:
    to_inf = {
        "RNE": True,
        "RNA": True,
        "RZ": False,
        "RO": False,
        "RU": s == 0,
        "RD": s == 1,
    }[mode]
    if to_inf and F.inf:
        return _inf_bits(F, s)
    if to_inf and F.nan is not None:
        return _nan_bits(F, s)
    return _max_bits(F, s)


def round_to(fmt: str, value: Fraction, mode: str, sign_if_zero: int = 0) -> int:
    """Bits of `value` rounded to `fmt` in `mode` (RNE RNA RZ RU RD RO), subnormals kept.

    Overflow and the corner cases of formats without Inf / zero / sign follow the policy in the
    module docstring. A value of 0 gives the zero of sign `sign_if_zero`; a nonzero value that
    rounds to zero gives the zero of its own sign.
    """
    if mode not in MODES:
        raise ValueError(f"unknown rounding mode {mode!r}")
    F = _fmt(fmt)
    value = Fraction(value)
    if value == 0:
        return _zero_bits(F, sign_if_zero)
    s = 1 if value < 0 else 0
    m = abs(value)
    if not F.signed and s == 1:
        # Unsigned formats: a negative value is representable only if it rounds to zero.
        if F.has_zero:
            mirrored = {"RU": "RD", "RD": "RU"}.get(mode, mode)  # RU(-m) = -RD(m)
            r = round_to(fmt, m, mirrored)
            return 0 if r == 0 else _nan_bits(F)
        return _nan_bits(F)
    e = _ilog2(m)
    if not F.has_zero and e < F.emin:
        return _encode_exact(F, _pow2(F.emin), 0)  # ue8m0: saturate at 2^-127
    e = max(e, F.emin)
    q = _pow2(e - F.t)  # the quantum (ulp) at m, with unbounded exponent above
    n = math.floor(m / q)
    lo, hi = n * q, (n + 1) * q
    if lo == m:
        r = lo
    else:
        # Parity of the integer significand n = lo / q. For t >= 1 it is the parity of lo's
        # code; for t = 0 (ue8m0) n is always 1, so RNE ties go up and RO is RZ.
        lo_odd = bool(n & 1)
        d_lo, d_hi = m - lo, hi - m
        if mode == "RZ":
            up = False
        elif mode == "RU":
            up = s == 0
        elif mode == "RD":
            up = s == 1
        elif mode == "RNA":
            up = d_hi <= d_lo
        elif mode == "RNE":
            up = d_hi < d_lo or (d_hi == d_lo and lo_odd)
        elif mode == "RO":
            up = not lo_odd
        else:  # pragma: no cover
            raise AssertionError(mode)
        r = hi if up else lo
    if r > F.max_finite:
        return _overflow_bits(F, s, mode)
    if r == 0:
        return _zero_bits(F, s)
    return _encode_exact(F, r, s)


# --------------------------------------------------------------------------------------------
# IEEE 754-2019 add, mul, fma
# --------------------------------------------------------------------------------------------


def _exact_zero_sign(terms: list, mode: str) -> int:
    """IEEE 754-2019 6.3: sign of an exact zero sum of `terms` (decoded values).

    If every term is a zero of the same sign, that sign; otherwise +0, except -0 under RD.
    """
    if all(_is_zero(x) for x in terms):
        signs = {x[1] for x in terms}
        if len(signs) == 1:
            return signs.pop()
    return 1 if mode == "RD" else 0


def _prod(x, y):
    """Decoded product of two decoded non-NaN values: ("nan",) for Inf*0."""
    s = _sign_of(x) ^ _sign_of(y)
    if _is_inf(x) or _is_inf(y):
        if _is_zero(x) or _is_zero(y):
            return ("nan",)
        return ("inf", s)
    if _is_zero(x) or _is_zero(y):
        return ("zero", s)
    return x * y


def _sum_specials(terms: list):
    """The special-value overlay of a sum of decoded terms: ("nan",), ("inf", s) or None."""
    if any(_is_nan(x) for x in terms):
        return ("nan",)
    infs = {x[1] for x in terms if _is_inf(x)}
    if len(infs) == 2:
        return ("nan",)
    if infs:
        return ("inf", infs.pop())
    return None


def _ieee_sum(F: Format, terms: list, mode: str):
    sp = _sum_specials(terms)
    if sp is not None:
        return NAN if _is_nan(sp) else _inf_bits(F, sp[1])
    v = sum((_val(x) for x in terms), Fraction(0))
    return round_to(F.name, v, mode, _exact_zero_sign(terms, mode) if v == 0 else 0)


def ieee_add(fmt: str, a: int, b: int, mode: str = "RNE"):
    """IEEE addition a + b in one format: bits, or "nan"."""
    F = _fmt(fmt)
    return _ieee_sum(F, [decode(fmt, a), decode(fmt, b)], mode)


def ieee_mul(fmt: str, a: int, b: int, mode: str = "RNE"):
    """IEEE multiplication a * b in one format: bits, or "nan"."""
    F = _fmt(fmt)
    x, y = decode(fmt, a), decode(fmt, b)
    if _is_nan(x) or _is_nan(y):
        return NAN
    p = _prod(x, y)
    if _is_nan(p):
        return NAN
    if _is_inf(p):
        return _inf_bits(F, p[1])
    if _is_zero(p):
        return _zero_bits(F, p[1])
    return round_to(fmt, p, mode)


def ieee_fma(fmt: str, a: int, b: int, c: int, mode: str = "RNE"):
    """IEEE fusedMultiplyAdd a * b + c with one rounding: bits, or "nan"."""
    F = _fmt(fmt)
    x, y, z = decode(fmt, a), decode(fmt, b), decode(fmt, c)
    if _is_nan(x) or _is_nan(y) or _is_nan(z):
        return NAN
    return _ieee_sum(F, [_prod(x, y), z], mode)


# --------------------------------------------------------------------------------------------
# FDPA building blocks
# --------------------------------------------------------------------------------------------

RHOS = {
    # Source: [Xie2025] Table 2.
    "RZ-FP32": ("f32", "RZ"),
    "RZ-E8M13": ("e8m13", "RZ"),
    "RNE-FP32": ("f32", "RNE"),
    "RNE-FP16": ("f16", "RNE"),
}

_CANONICAL_NAN = {"f32": 0x7FFFFFFF, "e8m13": 0x7FFFFFFF, "f16": 0x7FFF}  # NVIDIA, sec. 4.2


def _rz(x: Fraction, F: int) -> Fraction:
    """RZ_F: truncate toward zero to a multiple of 2^-F."""
    return Fraction(math.trunc(x * _pow2(F))) * _pow2(-F)


def _rd(x: Fraction, F: int) -> Fraction:
    """RD_F: round toward -infinity (floor) to a multiple of 2^-F."""
    return Fraction(math.floor(x * _pow2(F))) * _pow2(-F)


@dataclass
class _Term:
    """One summand of a fused sum: value = sig * 2^exp; `dec` is its decoded value."""

    sig: Fraction
    exp: int
    dec: object  # Fraction | ("zero", s)

    @property
    def zero(self) -> bool:
        return self.sig == 0


def _input_term(fmt: str, bits: int) -> _Term:
    sig, e, s = signed_sig_exp(fmt, bits)
    return _Term(sig, e, ("zero", s) if sig == 0 else sig * _pow2(e))


def _product_term(fa: str, a: int, fb: str, b: int, extra_exp: int = 0) -> _Term:
    ta, tb = _input_term(fa, a), _input_term(fb, b)
    sig = ta.sig * tb.sig
    e = ta.exp + tb.exp + extra_exp
    if sig == 0:
        dec = ("zero", _sign_of(ta.dec) ^ _sign_of(tb.dec))
    else:
        dec = sig * _pow2(e)
    return _Term(sig, e, dec)


def _fdpa_specials(a, b, c, fa, fb, fc, extra=()):
    """Special overlay of sec. 4.2 over the products and c: ("nan",), ("inf", s) or None."""
    xs = [decode(fa, v) for v in a]
    ys = [decode(fb, v) for v in b]
    zc = decode(fc, c)
    if any(_is_nan(v) for v in xs + ys + [zc] + list(extra)):
        return ("nan",)
    prods = [_prod(x, y) for x, y in zip(xs, ys)]
    return _sum_specials(prods + [zc])


def _emax(terms: list[_Term], zero_exp: str):
    if zero_exp == "excluded":
        es = [t.exp for t in terms if not t.zero]
    elif zero_exp == "field":
        es = [t.exp for t in terms]
    elif isinstance(zero_exp, int) and not isinstance(zero_exp, bool):
        es = [zero_exp if t.zero else t.exp for t in terms]   # a fixed exponent for zero terms
    else:
        raise ValueError(f"unknown zero_exp {zero_exp!r}")
    return max(es) if es else None


def _zero_result_sign(terms: list[_Term]) -> int:
    """semantics.md: -0 if every term is a zero whose sign is negative, else +0."""
    return 1 if all(t.zero and t.dec[1] == 1 for t in terms) else 0


def _check_lengths(a, b):
    if len(a) != len(b) or len(a) == 0:
        raise ValueError("a and b must have the same nonzero length")


# --------------------------------------------------------------------------------------------
# T-FDPA (Algorithm 7) and ST-FDPA (Algorithm 8)
# --------------------------------------------------------------------------------------------


def _t_fdpa_core(a, b, c, fa, fb, fc, F, rho, zero_exp, extra_exp=0, extra_nan=False):
    _check_lengths(a, b)
    out, mode = RHOS[rho]
    Fo = FORMATS[out]
    sp = _fdpa_specials(a, b, c, fa, fb, fc, [("nan",)] if extra_nan else [])
    if sp is not None:
        return _CANONICAL_NAN[out] if _is_nan(sp) else _inf_bits(Fo, sp[1])
    terms = [_product_term(fa, x, fb, y, extra_exp) for x, y in zip(a, b)]
    terms.append(_input_term(fc, c))
    emax = _emax(terms, zero_exp)
    if emax is None:
        return _zero_bits(Fo, _zero_result_sign(terms))
    S = sum((_rz(t.sig * _pow2(t.exp - emax), F) for t in terms), Fraction(0))
    return round_to(out, S * _pow2(emax), mode, _zero_result_sign(terms))


def t_fdpa(a, b, c, fa, fb, fc, F, rho, zero_exp="excluded"):
    """T-FDPA ([Xie2025] Algorithm 7): rho(sum_k RZ_F(s_k 2^(e_k - e_max)) * 2^e_max).

    a, b: lists of L bit patterns in fa / fb; c: bits in fc; rho in RHOS. Returns bits of the
    output format (f32 layout for RZ-FP32 / RZ-E8M13 / RNE-FP32, f16 for RNE-FP16); NaN is
    NVIDIA's canonical NaN.
    """
    return _t_fdpa_core(a, b, c, fa, fb, fc, F, rho, zero_exp)


def st_fdpa(a, b, c, fa, fb, scale_a, scale_b, F, rho, zero_exp="excluded"):
    """ST-FDPA ([Xie2025] Algorithm 8): T-FDPA with e_k += Exp(alpha) + Exp(beta).

    scale_a, scale_b: ue8m0 bits (0xFF is NaN and makes the result NaN); c in f32.
    """
    va, vb = decode("ue8m0", scale_a), decode("ue8m0", scale_b)
    if _is_nan(va) or _is_nan(vb):
        return _t_fdpa_core(a, b, c, fa, fb, "f32", F, rho, zero_exp, extra_nan=True)
    ea, eb = _ilog2(va), _ilog2(vb)
    return _t_fdpa_core(a, b, c, fa, fb, "f32", F, rho, zero_exp, extra_exp=ea + eb)


# --------------------------------------------------------------------------------------------
# E-FDPA (Algorithm 6)
# --------------------------------------------------------------------------------------------


def e_fdpa(a, b, c, fa, fb, fc="f32"):
    """E-FDPA ([Xie2025] Algorithm 6): RNE-FP32(c + sum a_k b_k), exact, IEEE specials."""
    _check_lengths(a, b)
    xs = [decode(fa, v) for v in a]
    ys = [decode(fb, v) for v in b]
    zc = decode(fc, c)
    if any(_is_nan(v) for v in xs + ys + [zc]):
        return NAN
    return _ieee_sum(FORMATS["f32"], [_prod(x, y) for x, y in zip(xs, ys)] + [zc], "RNE")


# --------------------------------------------------------------------------------------------
# TR-FDPA (Algorithm 10) and GTR-FDPA (Algorithm 11)
# --------------------------------------------------------------------------------------------

_TR_PRODUCT_OVERFLOW = _pow2(128)  # Source: [Xie2025] sec. 4.2


def _tr_specials(a, b, c, fa, fb, product_overflow: bool):
    xs = [decode(fa, v) for v in a]
    ys = [decode(fb, v) for v in b]
    zc = decode("f32", c)
    if any(_is_nan(v) for v in xs + ys + [zc]):
        return ("nan",)
    prods = []
    for x, y in zip(xs, ys):
        p = _prod(x, y)
        if product_overflow and isinstance(p, Fraction) and abs(p) >= _TR_PRODUCT_OVERFLOW:
            p = ("inf", _sign_of(p))
        prods.append(p)
    return _sum_specials(prods + [zc])


#: Lowest exponent of the renormalised sum in the tail "mmasim" (f32's emin). Source: mmasim
#: 2.1.1 arithmetic/fdpa.py tr_fdpa / gtr_fdpa, frexp_and_normalize(..., e_subnormal=-126).
_MMASIM_TAIL_EMIN = -126


def _rounded_sum_with_c(T, emax, c_term: _Term, F, F2, zero_exp, special_trunc, all_terms,
                        tail="algorithm"):
    """Steps 'rounded sum of two terms' + 'convert' of Algorithms 10/11 (rho = RNE-FP32).

    tail "algorithm": [Xie2025]'s text, T' = RD_F2(T at E). tail "mmasim": mmasim 2.1.1's code
    (arithmetic/fdpa.py tr_fdpa, gtr_fdpa): T' = RD_(F2+1)(T at E), then the value S 2^E is
    written m 2^e' with e' = max(floor(log2 |S 2^E|), -126) and m rounded down to F2 fraction
    bits, then RNE-FP32."""
    if tail not in ("algorithm", "mmasim"):
        raise ValueError(f"unknown tail {tail!r}")
    cands = [] if emax is None else [emax]
    if not (zero_exp == "excluded" and c_term.zero):
        cands.append(c_term.exp)
    if not cands:
        return _zero_bits(FORMATS["f32"], _zero_result_sign(all_terms))
    E = max(cands)
    G = F2 if tail == "algorithm" else F2 + 1
    Tp = _rd(T * _pow2(emax - E), G) if emax is not None else Fraction(0)
    sc = _rd(c_term.sig * _pow2(c_term.exp - E), F)
    if special_trunc and c_term.exp < E - F - 1:
        sc = Fraction(0)
    V = (Tp + sc) * _pow2(E)
    if tail == "mmasim" and V != 0:
        e1 = max(_ilog2(abs(V)), _MMASIM_TAIL_EMIN)
        V = _rd(V * _pow2(-e1), F2) * _pow2(e1)
    return round_to("f32", V, "RNE", _zero_result_sign(all_terms))


def tr_fdpa(a, b, c, fa, fb, F, F2, zero_exp="excluded", tail="algorithm"):
    """TR-FDPA ([Xie2025] Algorithm 10), rho = RNE-FP32, c in f32. Bits, or "nan"."""
    _check_lengths(a, b)
    sp = _tr_specials(a, b, c, fa, fb, product_overflow=True)
    if sp is not None:
        return NAN if _is_nan(sp) else _inf_bits(FORMATS["f32"], sp[1])
    prods = [_product_term(fa, x, fb, y) for x, y in zip(a, b)]
    ct = _input_term("f32", c)
    emax = _emax(prods, zero_exp)
    T = Fraction(0)
    if emax is not None:
        T = sum((_rz(t.sig * _pow2(t.exp - emax), F) for t in prods), Fraction(0))
    return _rounded_sum_with_c(T, emax, ct, F, F2, zero_exp, False, prods + [ct], tail)


def gtr_fdpa(a, b, c, fa, fb, F, F2, zero_exp="excluded", tail="algorithm"):
    """GTR-FDPA ([Xie2025] Algorithm 11), rho = RNE-FP32, c in f32, L even. Bits, or "nan"."""
    _check_lengths(a, b)
    if len(a) % 2:
        raise ValueError("GTR-FDPA needs an even L")
    sp = _tr_specials(a, b, c, fa, fb, product_overflow=False)
    if sp is not None:
        return NAN if _is_nan(sp) else _inf_bits(FORMATS["f32"], sp[1])
    prods = [_product_term(fa, x, fb, y) for x, y in zip(a, b)]
    ct = _input_term("f32", c)
    groups = []
    for g in (prods[0::2], prods[1::2]):
        eg = _emax(g, zero_exp)
        Tg = Fraction(0)
        if eg is not None:
            Tg = sum((_rz(t.sig * _pow2(t.exp - eg), F) for t in g), Fraction(0))
        groups.append((eg, Tg))
    es = [eg for eg, _ in groups if eg is not None]
    emax = max(es) if es else None
    T = Fraction(0)
    if emax is not None:
        for eg, Tg in groups:
            if eg is not None:
                T += _rd(Tg * _pow2(eg - emax), F)
    return _rounded_sum_with_c(T, emax, ct, F, F2, zero_exp, True, prods + [ct], tail)


# --------------------------------------------------------------------------------------------
# FTZ-Add / FTZ-Mul (Algorithm 1) and Phi_FTZ-AddMul (Algorithm 2)
# --------------------------------------------------------------------------------------------

_MIN_NORMAL_F32 = _pow2(-126)


def _flush_output(z):
    if z == NAN:
        return NAN
    v = decode("f32", z)
    if isinstance(v, Fraction) and abs(v) < _MIN_NORMAL_F32:
        return _zero_bits(FORMATS["f32"], _sign_of(v))  # "z * 0.0": sign preserved
    return z


def ftz_add(x, y, fx="f32", fy="f32"):
    """FTZ-Add: RNE-FP32(x + y), then |z| < 2^-126 -> zero of the same sign. Bits or "nan"."""
    return _flush_output(_ieee_sum(FORMATS["f32"], [decode(fx, x), decode(fy, y)], "RNE"))


def ftz_mul(x, y, fx="f32", fy="f32"):
    """FTZ-Mul: RNE-FP32(x * y), then |z| < 2^-126 -> zero of the same sign. Bits or "nan"."""
    X, Y = decode(fx, x), decode(fy, y)
    if _is_nan(X) or _is_nan(Y):
        return NAN
    p = _prod(X, Y)
    F32 = FORMATS["f32"]
    if _is_nan(p):
        return NAN
    if _is_inf(p):
        return _inf_bits(F32, p[1])
    if _is_zero(p):
        return _zero_bits(F32, p[1])
    return _flush_output(round_to("f32", p, "RNE"))


def _flush_input(fmt: str, bits: int) -> int:
    """FlushSubnormal: a subnormal input becomes +0 of its format."""
    F = _fmt(fmt)
    v = decode(fmt, bits)
    if isinstance(v, Fraction) and abs(v) < _pow2(F.emin):
        return _zero_bits(F, 0)
    return bits


def phi_ftz_addmul(a, b, c, fa, P):
    """Phi_FTZ-AddMul ([Xie2025] Algorithm 2) for one output element.

    a, b: lists of K bit patterns in fa (bf16 or f16); c: f32 bits; P in {2, 4}, K % P == 0.
    Returns f32 bits, or "nan".
    """
    _check_lengths(a, b)
    if P not in (2, 4) or len(a) % P:
        raise ValueError("P must be 2 or 4 and divide K")
    a = [_flush_input(fa, x) for x in a]
    b = [_flush_input(fa, x) for x in b]
    d = _flush_input("f32", c)
    qnan = _nan_bits(FORMATS["f32"])

    def nz(v):  # keep chaining through a NaN with an f32 NaN pattern
        return qnan if v == NAN else v

    for k in range(0, len(a) - P + 1, P):
        p = [nz(ftz_mul(a[k + l], b[k + l], fa, fa)) for l in range(P)]
        s = nz(ftz_add(p[0], p[1]))
        if P == 4:
            s2 = nz(ftz_add(p[2], p[3]))
            s = nz(ftz_add(s, s2))
        d = nz(ftz_add(d, s))
    return NAN if _is_nan(decode("f32", d)) else d
