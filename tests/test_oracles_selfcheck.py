"""Self-checks of the exact-rational oracle (tests/oracles/exact.py) against outside truths.

The oracle is only worth something if it is right where an independent truth exists:
ml_dtypes / numpy for decoding and RNE conversion, the host FPU (numpy float32/float16,
Python float) for IEEE add/mul/fma, numpy `nextafter` for the directed roundings, and the
numbers printed in [Xie2025] Table 8 (Equation 10) for the FDPA operations. Nothing here imports
`mmaformal`.
"""

from __future__ import annotations

import math
import random
import struct
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")

try:
    from oracles import exact as X
except ImportError:  # pragma: no cover - when tests/ is imported as a package
    from tests.oracles import exact as X

F2 = Fraction

ML_TYPES = {
    "f16": np.float16,
    "bf16": ml_dtypes.bfloat16,
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "e3m2": ml_dtypes.float6_e3m2fn,
    "e2m3": ml_dtypes.float6_e2m3fn,
    "e2m1": ml_dtypes.float4_e2m1fn,
    "ue8m0": ml_dtypes.float8_e8m0fnu,
}
SMALL = ["e5m2", "e4m3", "e5m2fnuz", "e4m3fnuz", "e3m2", "e2m3", "e2m1", "ue8m0", "ue4m3"]


def _uint(fmt):
    return np.uint16 if X.FORMATS[fmt].container == 16 else np.uint8


def _same(decoded, v: float):
    """decode() result equals the float v (NaN-aware, zero-sign-aware)."""
    if math.isnan(v):
        return decoded == ("nan",)
    if math.isinf(v):
        return decoded == ("inf", int(v < 0))
    if v == 0:
        return decoded == ("zero", int(math.copysign(1.0, v) < 0))
    return decoded == Fraction(v)


def _f32_bits(v) -> int:
    return int(np.array(v, dtype=np.float32).view(np.uint32))


def _f32(bits: int) -> np.float32:
    return np.array(bits, dtype=np.uint32).view(np.float32)[()]


def _is_nan_bits(fmt, bits) -> bool:
    return X.decode(fmt, bits) == ("nan",)


def _eq(fmt, got, want_bits):
    """Oracle result `got` (bits or "nan") equals the reference bit pattern (NaN-aware)."""
    if _is_nan_bits(fmt, want_bits):
        return got == "nan"
    return got == want_bits


# ------------------------------------------------------------------------------------------
# decode
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(ML_TYPES))
def test_decode_exhaustive_vs_ml_dtypes(fmt):
    F = X.FORMATS[fmt]
    n = 1 << F.width
    vals = np.arange(n, dtype=_uint(fmt)).view(ML_TYPES[fmt]).astype(np.float64).tolist()
    bad = [hex(code) for code, v in enumerate(vals) if not _same(X.decode(fmt, code), v)]
    assert not bad, bad[:10]


@pytest.mark.parametrize("fmt", ["e3m2", "e2m3", "e2m1", "ue4m3"])
def test_decode_ignores_bits_above_width(fmt):
    F = X.FORMATS[fmt]
    for code in range(1 << F.width):
        for hi in (1, 2, 3):
            if (code | (hi << F.width)) < 256:
                assert X.decode(fmt, code | (hi << F.width)) == X.decode(fmt, code)


def test_decode_ue4m3_is_positive_e4m3():
    # ue4m3 = unsigned e4m3 (NVFP4 scale): codes 0x00..0x7F read like e4m3fn with sign 0.
    ref = np.arange(128, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    for code, v in enumerate(ref.tolist()):
        assert _same(X.decode("ue4m3", code), v), hex(code)


def _f32_with_exp(rng, E):
    """A random f32 code with biased exponent field E mod 256 and random sign and fraction."""
    return (rng.getrandbits(1) << 31) | ((E % 256) << 23) | rng.getrandbits(23)


def _f64_with_exp(rng, E):
    return (rng.getrandbits(1) << 63) | (E << 52) | rng.getrandbits(52)


def _f32_codes(rng, n):
    special = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
               1, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF, 0x3F800000, 0xBF800000]
    out = list(special)
    for _ in range(n):
        r = rng.random()
        if r < 0.5:
            out.append(rng.getrandbits(32))
        elif r < 0.7:  # subnormal or tiny
            out.append((rng.getrandbits(1) << 31) | rng.getrandbits(24))
        else:  # moderate exponent
            out.append(_f32_with_exp(rng, rng.randint(100, 154)))
    return out


def test_decode_f32_tf32_f64_random():
    rng = random.Random(1)
    codes = _f32_codes(rng, 20000)
    f32 = np.array(codes, dtype=np.uint32).view(np.float32).astype(np.float64).tolist()
    for c, v in zip(codes, f32):
        assert _same(X.decode("f32", c), v), hex(c)
        # tf32: f32 layout, the low 13 bits of the container are not part of the value.
        junk = rng.getrandbits(13)
        v_tf = float(_f32(c & ~0x1FFF))
        assert _same(X.decode("tf32", (c & ~0x1FFF) | junk), v_tf), hex(c)
    for _ in range(5000):
        c = rng.getrandbits(64)
        v = struct.unpack("<d", struct.pack("<Q", c))[0]
        assert _same(X.decode("f64", c), v), hex(c)


# ------------------------------------------------------------------------------------------
# round_to
# ------------------------------------------------------------------------------------------


def _f64_values(rng, n, lo, hi, fmt_t=None):
    """Random float64 values with exponents in [lo, hi], plus exact midpoints (ties)."""
    out = [0.0, -0.0]
    for _ in range(n):
        e = rng.randint(lo, hi)
        m = 1 + rng.random()
        v = math.ldexp(m, e) * rng.choice((1, -1))
        out.append(v)
        if fmt_t is not None:  # a value with few significant bits: ties and near-ties
            k = rng.randint(0, 3)
            base = math.ldexp(rng.getrandbits(fmt_t + 2) | (1 << (fmt_t + 2)), e - fmt_t - 2)
            out.append(rng.choice((1, -1)) * (base + (math.ldexp(1, e - 60) * k if k else 0.0)))
    return out


def _check_round_vs(fmt, values, ref_bits):
    bad = []
    for v, rb in zip(values, ref_bits):
        got = X.round_to(fmt, Fraction(v), "RNE", int(math.copysign(1.0, v) < 0))
        if got != rb:
            bad.append((v, hex(got), hex(rb)))
    assert not bad, bad[:10]


def test_round_f32_rne_vs_numpy():
    rng = random.Random(2)
    vals = _f64_values(rng, 6000, -155, 130, fmt_t=23)
    vals += [3.4028235677973366e38, 3.4028235677973362e38, 2.0 ** 128, -(2.0 ** 128), 1e300]
    with np.errstate(over="ignore"):
        ref = np.array(vals, dtype=np.float64).astype(np.float32).view(np.uint32).tolist()
    _check_round_vs("f32", vals, ref)


def test_round_f16_rne_vs_numpy():
    # numpy converts float64 -> float16 directly (one rounding).
    rng = random.Random(3)
    vals = _f64_values(rng, 6000, -27, 17, fmt_t=10)
    vals += [65504.0, 65519.99, 65520.0, -65520.0]
    vals += [2.0**-25, 2.0**-25 * 1.0000001, -(2.0**-25)]
    with np.errstate(over="ignore"):
        ref = np.array(vals, dtype=np.float64).astype(np.float16).view(np.uint16).tolist()
    _check_round_vs("f16", vals, ref)


@pytest.mark.parametrize("fmt", ["bf16"] + [f for f in SMALL if f != "ue4m3"])
def test_round_rne_vs_ml_dtypes_from_f32(fmt):
    # ml_dtypes converts float64 -> bfloat16 through float32 (double rounding: 1+2^-8+2^-30
    # gives 0x3F80, the correct RNE is 0x3F81), so the reference values are float32 numbers,
    # from which ml_dtypes rounds once.
    rng = random.Random(4)
    F = X.FORMATS[fmt]
    lo, hi = F.emin - F.t - 3, int(math.log2(float(F.max_finite))) + 3
    vals = _f64_values(rng, 3000, max(lo, -149), min(hi, 127), fmt_t=F.t)
    vals = [float(np.float32(v)) for v in vals]
    vals += [float(F.max_finite) * k for k in (1.0, 1.03, 1.0625, 1.07, 1.5, 4.0, -1.07, -4.0)]
    if fmt == "ue8m0":
        vals += [1e-40, 2.0 ** -128, 2.0 ** -127, -1.0, -1e-30]
    with np.errstate(over="ignore", invalid="ignore"):
        ref = np.array(vals, dtype=np.float32).astype(ML_TYPES[fmt]).view(_uint(fmt)).tolist()
    _check_round_vs(fmt, vals, ref)


def _directed_ref(v: float, mode: str) -> int:
    """Reference f32 rounding of a float64 v (|v| <= max f32) in a directed / other mode."""
    r = np.float32(v)
    lo = r if float(r) <= v else np.nextafter(r, np.float32(-np.inf))
    hi = r if float(r) >= v else np.nextafter(r, np.float32(np.inf))
    if float(lo) == v:
        return _f32_bits(lo)
    if mode == "RD":
        return _f32_bits(lo)
    if mode == "RU":
        return _f32_bits(hi)
    if mode == "RZ":
        return _f32_bits(lo if v > 0 else hi)
    if mode == "RNA":
        mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
        if Fraction(v) == mid:
            return _f32_bits(hi if v > 0 else lo)
        return _f32_bits(r)
    if mode == "RO":
        return _f32_bits(lo) if _f32_bits(lo) & 1 else _f32_bits(hi)
    raise AssertionError(mode)


@pytest.mark.parametrize("mode", ["RZ", "RU", "RD", "RNA", "RO"])
def test_round_f32_other_modes_vs_nextafter(mode):
    rng = random.Random(5)
    vals = [v for v in _f64_values(rng, 3000, -155, 127, fmt_t=23) if v != 0]
    bad = []
    for v in vals:
        got = X.round_to("f32", Fraction(v), mode)
        want = _directed_ref(v, mode)
        if got != want:
            bad.append((v, hex(got), hex(want)))
    assert not bad, bad[:10]


def test_round_f32_overflow_rules():
    big = Fraction(2) ** 200
    MAX, INF = 0x7F7FFFFF, 0x7F800000
    S = 0x80000000
    assert X.round_to("f32", big, "RNE") == INF
    assert X.round_to("f32", -big, "RNA") == S | INF
    assert X.round_to("f32", big, "RZ") == MAX
    assert X.round_to("f32", -big, "RZ") == S | MAX
    assert X.round_to("f32", big, "RU") == INF
    assert X.round_to("f32", -big, "RU") == S | MAX
    assert X.round_to("f32", big, "RD") == MAX
    assert X.round_to("f32", -big, "RD") == S | INF
    assert X.round_to("f32", big, "RO") == MAX
    half_ulp = Fraction(2) ** (127 - 24)
    maxv = X.decode("f32", MAX)
    assert X.round_to("f32", maxv + half_ulp, "RNE") == INF  # tie goes to the (even) overflow
    assert X.round_to("f32", maxv + half_ulp - Fraction(1), "RNE") == MAX
    assert X.round_to("f32", maxv + Fraction(1), "RU") == INF
    # tf32 / e8m13 output: f32 layout with the low bits zero.
    assert X.round_to("tf32", Fraction(1) + Fraction(1, 3), "RNE") == 0x3FAAA000
    assert X.round_to("e8m13", Fraction(1) + Fraction(1, 3), "RZ") == 0x3FAAA800
    # tiny results keep the value's sign; exact zero takes sign_if_zero
    tiny = Fraction(2) ** -200
    assert X.round_to("f32", -tiny, "RNE") == S
    assert X.round_to("f32", -tiny, "RU") == S
    assert X.round_to("f32", -tiny, "RD") == S | 1
    assert X.round_to("f32", tiny, "RO") == 1
    assert X.round_to("f32", Fraction(0), "RNE", 1) == S
    assert X.round_to("e4m3fnuz", Fraction(0), "RNE", 1) == 0  # no -0 in fnuz formats
    assert X.round_to("e4m3fnuz", -tiny, "RNE") == 0


@pytest.mark.parametrize("fmt", SMALL + ["f16", "bf16"])
def test_round_roundtrip_and_midpoints(fmt):
    """Finite codes round-trip in every mode; midpoints go to the even code under RNE.

    Exhaustive for the 8-bit-or-smaller formats, a random sample of neighbours for f16/bf16.
    """
    F = X.FORMATS[fmt]
    pos = []  # (magnitude, code) of every finite non-negative code, ascending
    for code in range(1 << (F.w + F.t)):
        v = X.decode(fmt, code)
        if isinstance(v, Fraction) or X._is_zero(v):
            pos.append((X._val(v), code))
    pos.sort()
    idx = range(len(pos) - 1)
    if F.width > 8:
        rng = random.Random(13)
        idx = sorted(set(rng.sample(idx, 1500)) | {0, 1, len(pos) - 2} | {(1 << F.t) - 1, 1 << F.t})
    for i in idx:
        (v0, c0), (v1, c1) = pos[i], pos[i + 1]
        for mode in X.MODES:
            for sgn in ((0, 1) if F.signed else (0,)):
                c2 = c0 | (sgn << (F.w + F.t))
                v2 = X.decode(fmt, c2)
                if v2 != ("nan",):
                    assert X.round_to(fmt, X._val(v2), mode, X._sign_of(v2)) == c2, (hex(c2), mode)
        mid = (v0 + v1) / 2
        # ties to the even code; t = 0 (ue8m0): both have significand 1, ties go up (oracle
        # policy, as ml_dtypes) and RO is RZ
        even = c1 if F.t == 0 else (c0 if c0 % 2 == 0 else c1)
        odd = c0 if F.t == 0 else (c0 if c0 % 2 else c1)
        assert X.round_to(fmt, mid, "RNE") == even, (fmt, mid)
        assert X.round_to(fmt, mid, "RNA") == c1
        assert X.round_to(fmt, mid, "RO") == odd
        assert X.round_to(fmt, mid, "RZ") == c0
        assert X.round_to(fmt, mid, "RD") == c0
        assert X.round_to(fmt, mid, "RU") == c1
    top = pos[-1][1]
    assert X.round_to(fmt, pos[-1][0], "RNE") == top


def test_round_e4m3_overflow_policy():
    # Formats with NaN but no Inf: NaN where IEEE would give Inf, max finite elsewhere.
    assert X.round_to("e4m3", Fraction(464), "RNE") == 0x7E
    assert X.round_to("e4m3", Fraction(465), "RNE") == 0x7F
    assert X.round_to("e4m3", Fraction(-465), "RNE") == 0xFF
    assert X.round_to("e4m3", Fraction(1000), "RZ") == 0x7E
    assert X.round_to("e4m3", Fraction(449), "RU") == 0x7F
    assert X.round_to("e4m3", Fraction(-449), "RU") == 0xFE
    assert X.round_to("e4m3", Fraction(449), "RO") == 0x7E
    assert X.round_to("e5m2fnuz", Fraction(61440), "RNE") == 0x80
    # No NaN, no Inf: saturate in every mode.
    for mode in X.MODES:
        assert X.round_to("e2m1", Fraction(100), mode) == 0x7
        assert X.round_to("e2m1", Fraction(-100), mode) == 0xF
    # ue4m3: negative values are NaN unless they round to zero.
    assert X.round_to("ue4m3", Fraction(-1), "RNE") == 0x7F
    assert X.round_to("ue4m3", Fraction(-1, 10**6), "RNE") == 0x00
    assert X.round_to("ue4m3", Fraction(-1, 10**6), "RU") == 0x00
    assert X.round_to("ue4m3", Fraction(-1, 10**6), "RD") == 0x7F
    assert X.round_to("ue8m0", Fraction(0), "RNE") == 0xFF
    assert X.round_to("ue8m0", Fraction(1, 2**200), "RZ") == 0x00  # saturates at 2^-127
    assert X.round_to("ue4m3", Fraction(500), "RNE") == 0x7F


def test_round_f64_rne_vs_python_float():
    # Python's float(Fraction) is a correctly rounded (RNE) int/int division.
    rng = random.Random(6)
    for _ in range(3000):
        num = rng.getrandbits(rng.randint(1, 120)) + 1
        v = Fraction(num, rng.getrandbits(rng.randint(1, 120)) + 1)
        v *= Fraction(2) ** rng.randint(-1000, 1000) * rng.choice((1, -1))
        try:
            want = struct.unpack("<Q", struct.pack("<d", float(v)))[0]
        except OverflowError:
            want = 0x7FF0000000000000 | (0x8000000000000000 if v < 0 else 0)
        assert X.round_to("f64", v, "RNE") == want, v


@pytest.mark.parametrize("fmt", ["f32", "f16", "e4m3", "e2m1", "ue8m0"])
def test_round_directed_brackets_value(fmt):
    rng = random.Random(7)
    F = X.FORMATS[fmt]
    for _ in range(1000):
        v = Fraction(rng.getrandbits(40) + 1, 1 << 40) * Fraction(2) ** rng.randint(F.emin - F.t, 4)
        if not (X.decode(fmt, 1) <= v <= F.max_finite):
            continue  # saturation (e2m1) and ue8m0's missing zero are tested elsewhere
        if F.signed:
            v *= rng.choice((1, -1))
        lo, hi = X.decode(fmt, X.round_to(fmt, v, "RD")), X.decode(fmt, X.round_to(fmt, v, "RU"))
        assert X._val(lo) <= v <= X._val(hi)
        assert X.round_to(fmt, v, "RZ") == X.round_to(fmt, v, "RD" if v > 0 else "RU")


# ------------------------------------------------------------------------------------------
# IEEE add / mul / fma
# ------------------------------------------------------------------------------------------


def _pairs(rng, n):
    codes = _f32_codes(rng, n)
    out = []
    for a in codes:
        r = rng.random()
        if r < 0.3:
            b = rng.choice(codes)
        elif r < 0.6:  # near-cancellation
            b = (a ^ 0x80000000) + rng.randint(-3, 3)
        else:  # nearby exponent
            b = _f32_with_exp(rng, ((a >> 23) & 0xFF) + rng.randint(-30, 30))
        out.append((a, b & 0xFFFFFFFF))
    return out


def test_ieee_add_mul_f32_rne_vs_numpy():
    rng = random.Random(8)
    pairs = _pairs(rng, 6000)
    A = np.array([p[0] for p in pairs], dtype=np.uint32).view(np.float32)
    B = np.array([p[1] for p in pairs], dtype=np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        S = (A + B).view(np.uint32).tolist()
        P = (A * B).view(np.uint32).tolist()
    bad = []
    for (a, b), s, p in zip(pairs, S, P):
        if not _eq("f32", X.ieee_add("f32", a, b, "RNE"), s):
            bad.append(("add", hex(a), hex(b)))
        if not _eq("f32", X.ieee_mul("f32", a, b, "RNE"), p):
            bad.append(("mul", hex(a), hex(b)))
    assert not bad, bad[:10]


def test_ieee_fma_f32_rne_vs_float64_when_exact():
    rng = random.Random(9)
    pairs = _pairs(rng, 4000)
    n_exact = 0
    bad = []
    for a, b in pairs:
        # c near a*b (cancellation) or random
        c = rng.choice([a ^ 0x80000000, b, rng.getrandbits(32), 0, 0x80000000,
                        _f32_with_exp(rng, ((a >> 23) & 0xFF) + ((b >> 23) & 0xFF) - 127
                                      + rng.randint(-20, 20))])
        x, y, z = (float(_f32(v)) for v in (a, b, c))
        p = x * y  # exact in float64 (24 + 24 bits, no overflow from f32)
        s = p + z
        finite = all(math.isfinite(t) for t in (x, y, z, s))
        if finite and Fraction(p) + Fraction(z) != Fraction(s):
            continue  # float64 rounded: no outside truth for this one
        n_exact += 1
        with np.errstate(all="ignore"):
            want = _f32_bits(np.float32(s))
        if not _eq("f32", X.ieee_fma("f32", a, b, c, "RNE"), want):
            bad.append((hex(a), hex(b), hex(c)))
    assert not bad, bad[:10]
    assert n_exact > 1500


def test_ieee_add_mul_fma_f64_vs_python():
    rng = random.Random(10)
    for _ in range(3000):
        a = _f64_with_exp(rng, rng.randint(900, 1150))
        if rng.random() < 0.3:
            a = rng.getrandbits(64)
        if rng.random() < 0.3:  # near-cancellation
            b = (a ^ (1 << 63)) + rng.randint(-2, 2)
        else:
            b = _f64_with_exp(rng, rng.randint(900, 1150))
        b &= (1 << 64) - 1
        x, y = (struct.unpack("<d", struct.pack("<Q", v))[0] for v in (a, b))
        for op, fn in (("add", X.ieee_add), ("mul", X.ieee_mul)):
            try:
                r = x + y if op == "add" else x * y
            except OverflowError:  # pragma: no cover
                continue
            want = struct.unpack("<Q", struct.pack("<d", r))[0]
            assert _eq("f64", fn("f64", a, b, "RNE"), want), (op, hex(a), hex(b))


@pytest.mark.parametrize("fmt", ["f16", "bf16"])
def test_ieee_add_mul_f16_bf16_vs_host(fmt):
    # numpy float16 / ml_dtypes bfloat16 compute in float32 and round once more; with
    # 24 >= 2p + 2 that double rounding is innocuous for + and *, so these are correct.
    rng = random.Random(11)
    n = 1 << 16
    a = [rng.randrange(n) for _ in range(6000)]
    b = [(x ^ 0x8000) + rng.randint(-3, 3) if rng.random() < 0.3 else rng.randrange(n) for x in a]
    b = [v % n for v in b]
    A = np.array(a, dtype=np.uint16).view(ML_TYPES[fmt])
    B = np.array(b, dtype=np.uint16).view(ML_TYPES[fmt])
    with np.errstate(all="ignore"):
        S = (A + B).view(np.uint16).tolist()
        P = (A * B).view(np.uint16).tolist()
    for x, y, s, p in zip(a, b, S, P):
        assert _eq(fmt, X.ieee_add(fmt, x, y, "RNE"), s), ("add", hex(x), hex(y))
        assert _eq(fmt, X.ieee_mul(fmt, x, y, "RNE"), p), ("mul", hex(x), hex(y))


def test_ieee_zero_signs():
    one, m_one, pz, nz = 0x3F800000, 0xBF800000, 0, 0x80000000
    assert X.ieee_add("f32", one, m_one, "RNE") == pz
    assert X.ieee_add("f32", one, m_one, "RD") == nz
    assert X.ieee_add("f32", one, m_one, "RU") == pz
    assert X.ieee_add("f32", nz, nz, "RNE") == nz
    assert X.ieee_add("f32", pz, nz, "RNE") == pz
    assert X.ieee_add("f32", pz, nz, "RD") == nz
    assert X.ieee_add("f32", pz, pz, "RD") == pz
    assert X.ieee_mul("f32", m_one, pz, "RNE") == nz
    assert X.ieee_fma("f32", m_one, pz, pz, "RNE") == pz  # (-0) + (+0)
    assert X.ieee_fma("f32", m_one, pz, pz, "RD") == nz
    assert X.ieee_fma("f32", m_one, pz, nz, "RNE") == nz  # (-0) + (-0)
    assert X.ieee_fma("f32", one, one, m_one, "RNE") == pz
    assert X.ieee_fma("f32", one, one, m_one, "RD") == nz
    assert X.ieee_fma("f32", 0x7F800000, pz, 0x7FC00000, "RNE") == "nan"
    assert X.ieee_fma("f32", 0x7F800000, one, 0xFF800000, "RNE") == "nan"
    assert X.ieee_fma("f32", 0x7F800000, m_one, 0xFF800000, "RNE") == 0xFF800000
    # underflow to zero keeps the sign of the exact result
    assert X.ieee_mul("f32", 0x80000001, 0x3F000000, "RNE") == nz  # -2^-150 ties to even 0
    assert X.ieee_mul("f32", 0x80000001, 0x3F000000, "RU") == nz
    assert X.ieee_mul("f32", 0x80000001, 0x3F000000, "RD") == 0x80000001


# ------------------------------------------------------------------------------------------
# [Xie2025] Table 8 (Equation 10)
# ------------------------------------------------------------------------------------------


def _enc(fmt, v):
    bits = X.round_to(fmt, Fraction(v), "RNE")
    assert X._val(X.decode(fmt, bits)) == Fraction(v), (fmt, v)
    return bits


def _eq10(fa, fb, L):
    """Equation 10 of [Xie2025], padded with zeros to length L."""
    a = [-(2**13), F2(-1, 2), F2(-1, 4), F2(-1, 8)] + [0] * (L - 4)
    b = [2**10, 1, 1, 1] + [0] * (L - 4)
    c = 2**23
    return [_enc(fa, v) for v in a], [_enc(fb, v) for v in b], _enc("f32", c)


def _f32_value(bits):
    return X._val(X.decode("f32", bits))


@pytest.mark.parametrize(
    "fmt,L,F,rho,want",
    [
        ("f16", 4, 23, "RZ-FP32", 0),  # Volta
        ("f16", 8, 24, "RZ-FP32", F2(-1, 2)),  # Turing, Ampere, Ada
        ("bf16", 8, 24, "RZ-FP32", F2(-1, 2)),  # Ampere, Ada
        ("tf32", 4, 24, "RZ-FP32", F2(-1, 2)),  # Ampere, Ada
        ("f16", 16, 25, "RZ-FP32", F2(-3, 4)),  # Hopper, Blackwell
        ("bf16", 16, 25, "RZ-FP32", F2(-3, 4)),
        ("tf32", 8, 25, "RZ-FP32", F2(-3, 4)),
        ("e5m2", 32, 13, "RZ-E8M13", 0),  # Ada / Hopper FP8
        ("e5m2", 32, 25, "RZ-FP32", F2(-3, 4)),  # Blackwell FP8
    ],
)
def test_table8_t_fdpa(fmt, L, F, rho, want):
    a, b, c = _eq10(fmt, fmt, L)
    d = X.t_fdpa(a, b, c, fmt, fmt, "f32", F, rho)
    assert d == X.round_to("f32", want, "RNE")  # exact value, +0 for 0.0
    # the same result when chained over K = 2L (Algorithm 5): the second FDPA adds zeros
    a2, b2 = a + [0] * L, b + [0] * L
    d1 = X.t_fdpa(a2[:L], b2[:L], c, fmt, fmt, "f32", F, rho)
    d2 = X.t_fdpa(a2[L:], b2[L:], d1, fmt, fmt, "f32", F, rho)
    assert d2 == d


@pytest.mark.parametrize("F,rho,want", [(13, "RZ-E8M13", 0), (25, "RZ-FP32", F2(-3, 4))])
def test_table8_t_fdpa_e4m3_scaled(F, rho, want):
    # -2^13 and 2^10 are not e4m3 numbers (max 448): the example scaled by 2^-9 keeps every
    # exponent difference, so the result is the Table 8 value times 2^-9.
    s = Fraction(1, 2**9)
    av = [-(2**7), -(F2(1, 2**5)), -(F2(1, 2**6)), -(F2(1, 2**7))] + [0] * 28
    bv = [2**7, F2(1, 2**5), F2(1, 2**5), F2(1, 2**5)] + [0] * 28
    a = [_enc("e4m3", v) for v in av]
    b = [_enc("e4m3", v) for v in bv]
    c = _enc("f32", 2**23 * s)
    d = X.t_fdpa(a, b, c, "e4m3", "e4m3", "f32", F, rho)
    assert _f32_value(d) == want * s


def test_table8_e_fdpa_cdna1():
    for fmt, L in (("bf16", 2), ("f16", 4)):
        a, b, c = _eq10(fmt, fmt, 8)
        assert _f32_value(X.e_fdpa(a, b, c, fmt, fmt)) == F2(-7, 8)
        d = c
        for k in range(0, 8, L):  # Phi_E-FDPA chain
            d = X.e_fdpa(a[k:k + L], b[k:k + L], d, fmt, fmt)
        assert _f32_value(d) == F2(-7, 8)


@pytest.mark.parametrize("fmt,L", [("f16", 8), ("bf16", 8), ("tf32", 4)])
def test_table8_tr_fdpa_cdna3(fmt, L):
    a, b, c = _eq10(fmt, fmt, L)
    assert _f32_value(X.tr_fdpa(a, b, c, fmt, fmt, 24, 31)) == F2(-1, 2)


def test_table8_gtr_fdpa_cdna3():
    a, b, c = _eq10("e5m2fnuz", "e5m2fnuz", 16)
    assert _f32_value(X.gtr_fdpa(a, b, c, "e5m2fnuz", "e5m2fnuz", 24, 31)) == -1
    # e4m3fnuz (max 240): the example scaled by 2^-9 -> -1.0 * 2^-9
    s = Fraction(1, 2**9)
    av = [-(2**7), -(F2(1, 2**5)), -(F2(1, 2**6)), -(F2(1, 2**7))] + [0] * 12
    bv = [2**7, F2(1, 2**5), F2(1, 2**5), F2(1, 2**5)] + [0] * 12
    a = [_enc("e4m3fnuz", v) for v in av]
    b = [_enc("e4m3fnuz", v) for v in bv]
    c = _enc("f32", 2**23 * s)
    assert _f32_value(X.gtr_fdpa(a, b, c, "e4m3fnuz", "e4m3fnuz", 24, 31)) == -s
    # GTR-FDPA is asymmetric (sec. 6.2.4): Phi(-A, B, -C) = +0.5 != -Phi(A, B, C) = +1.0
    a, b, c = _eq10("e5m2fnuz", "e5m2fnuz", 16)
    na = [x ^ 0x80 if x else x for x in a]
    assert _f32_value(X.gtr_fdpa(na, b, c ^ 0x80000000, "e5m2fnuz", "e5m2fnuz", 24, 31)) == F2(1, 2)


@pytest.mark.parametrize("fmt,P,want", [("f16", 4, 0), ("bf16", 4, 0), ("bf16", 2, F2(-3, 8))])
def test_table8_phi_ftz_addmul_cdna2(fmt, P, want):
    a, b, c = _eq10(fmt, fmt, 8)
    d = X.phi_ftz_addmul(a, b, c, fmt, P)
    assert d == X.round_to("f32", want, "RNE")


# ------------------------------------------------------------------------------------------
# FDPA internal consistency and special values
# ------------------------------------------------------------------------------------------


def test_fdpa_with_huge_F_is_exact():
    """With F (and F2) large enough nothing is truncated: T/TR/GTR-FDPA = E-FDPA."""
    rng = random.Random(12)
    for _ in range(150):
        L = 8
        a = [rng.randrange(0x7C00) | (rng.getrandbits(1) << 15) for _ in range(L)]
        b = [rng.randrange(0x7C00) | (rng.getrandbits(1) << 15) for _ in range(L)]
        c = (rng.getrandbits(1) << 31) | (rng.randint(60, 190) << 23) | rng.getrandbits(23)
        ref = X.e_fdpa(a, b, c, "f16", "f16")
        assert X.t_fdpa(a, b, c, "f16", "f16", "f32", 400, "RNE-FP32") == ref
        assert X.tr_fdpa(a, b, c, "f16", "f16", 400, 400) == ref
        assert X.gtr_fdpa(a, b, c, "f16", "f16", 400, 400) == ref
        # T-FDPA with symmetric rho is odd: Phi(-a, b, -c) = -Phi(a, b, c)
        na = [x ^ 0x8000 for x in a]
        for F, rho in ((24, "RZ-FP32"), (13, "RZ-E8M13"), (25, "RNE-FP32")):
            d = X.t_fdpa(a, b, c, "f16", "f16", "f32", F, rho)
            nd = X.t_fdpa(na, b, c ^ 0x80000000, "f16", "f16", "f32", F, rho)
            if X._is_zero(X.decode("f32", d)):
                assert X._is_zero(X.decode("f32", nd))
            else:
                assert nd == d ^ 0x80000000


def test_fdpa_specials():
    one, zero, inf, ninf, nan = 0x3C00, 0x0000, 0x7C00, 0xFC00, 0x7E00
    c0 = 0
    L = 4
    pad = [zero] * (L - 2)

    def t(a, b, c=c0, rho="RZ-FP32"):
        return X.t_fdpa(a + pad, b + pad, c, "f16", "f16", "f32", 24, rho)

    assert t([nan, one], [one, one]) == 0x7FFFFFFF
    assert t([inf, one], [zero, one]) == 0x7FFFFFFF  # Inf * 0
    assert t([inf, ninf], [one, one]) == 0x7FFFFFFF  # +Inf + -Inf
    assert t([inf, one], [one, one], 0xFF800000) == 0x7FFFFFFF  # product +Inf, c -Inf
    assert t([inf, one], [ninf, one]) == 0xFF800000
    assert t([inf, one], [one, one], rho="RNE-FP16") == 0x7C00
    assert t([nan, one], [one, one], rho="RNE-FP16") == 0x7FFF
    assert X.e_fdpa([inf, one], [zero, one], c0, "f16", "f16") == "nan"
    assert X.tr_fdpa([nan, one], [one, one], c0, "f16", "f16", 24, 31) == "nan"
    # zero-sign rule: -0 only if every term is a negative zero
    nz = 0x8000
    def t2(a, c):  # L = 2, no zero padding
        return X.t_fdpa(a, [one, one], c, "f16", "f16", "f32", 24, "RZ-FP32")

    assert t2([nz, nz], 0x80000000) == 0x80000000
    assert t2([nz, nz], 0) == 0
    assert t([nz, nz], [one, one], 0x80000000) == 0  # the padding products are +0
    assert t2([nz, zero], 0x80000000) == 0
    assert t2([one, 0xBC00], 0x80000000) == 0
    # TR-FDPA product overflow: bf16 2^127 * 2 = 2^128 -> +Inf
    big, two = 0x7F00, 0x4000
    assert X.tr_fdpa([big, zero], [two, zero], 0xFF800000, "bf16", "bf16", 24, 31) == "nan"
    assert X.tr_fdpa([big, zero], [two, zero], 0, "bf16", "bf16", 24, 31) == 0x7F800000
    # ST-FDPA: a NaN scale gives the canonical NaN; scales add to the product exponents
    e = [_enc("e4m3", 1)] * 2
    assert X.st_fdpa(e, e, 0, "e4m3", "e4m3", 0xFF, 127, 25, "RZ-FP32") == 0x7FFFFFFF
    assert _f32_value(X.st_fdpa(e, e, 0, "e4m3", "e4m3", 127 + 3, 127 - 1, 25, "RZ-FP32")) == 2 * 4


def test_zero_exp_parameter_is_observable():
    # product 1.75 * 2^-149: under "field" c = +0 brings e_max up to -126 and RZ_23 truncates
    # the product to 2^-149 before RNE; under "excluded" RNE sees the exact 1.75 * 2^-149.
    a, b = _enc("bf16", F2(7, 4) * F2(1, 2**75)), _enc("bf16", F2(1, 2**74))
    assert X.t_fdpa([a], [b], 0, "bf16", "bf16", "f32", 23, "RNE-FP32", "excluded") == 2
    assert X.t_fdpa([a], [b], 0, "bf16", "bf16", "f32", 23, "RNE-FP32", "field") == 1
    # TR-FDPA, zero_exp also governs c in E = max(e_max, Exp(c)): products 2^-150 + 2^-160.
    # excluded: E = -150, exact, RNE -> 2^-149; field: E = -126, RD_31 drops 2^-160 -> tie -> +0
    a = [_enc("bf16", F2(1, 2**75)), _enc("bf16", F2(1, 2**80))]
    assert X.tr_fdpa(a, a, 0, "bf16", "bf16", 24, 31, "excluded") == 1
    assert X.tr_fdpa(a, a, 0, "bf16", "bf16", 24, 31, "field") == 0
    assert X.gtr_fdpa(a, a, 0, "bf16", "bf16", 24, 31, "excluded") == 1


def test_ftz_ops():
    tiny = 0x00800000  # 2^-126
    half = 0x3F000000
    assert X.ftz_mul(tiny, half) == 0  # 2^-127 is subnormal -> +0
    assert X.ftz_mul(tiny | 0x80000000, half) == 0x80000000  # sign preserved
    assert X.ftz_add(0x00800001, 0x80800000) == 0  # 2^-149: flushed
    assert X.ftz_add(0x80800001, 0x00800000) == 0x80000000
    assert X.ftz_add(0x3F800000, 0xBF800000) == 0
    # f16 inputs: 2^-14 * 2^-14 = 2^-28 is a normal f32
    assert X.ftz_mul(0x0400, 0x0400, "f16", "f16") == 0x31800000
    # Phi flushes subnormal inputs to +0 before the chain: f16 2^-24 * 1 -> 0, not 2^-24
    a = [0x0001, 0, 0, 0]
    b = [0x3C00, 0, 0, 0]
    assert X.phi_ftz_addmul(a, b, 0x80000000, "f16", 4) == 0  # (-0) + (+0 ...) = +0
    assert X.phi_ftz_addmul([0x3C00] * 4, [0x3C00] * 4, 0x00000001, "f16", 2) == 0x40800000


def test_gtr_special_truncation_of_c():
    # a0*b0 = 1 (E = 0, F = 24): c with e_c < E - F - 1 = -25 is dropped in GTR-FDPA, while
    # RD_24 would have made it -2^-24 (and does in TR-FDPA).
    one = _enc("e5m2fnuz", 1)
    a, b = [one, 0], [one, 0]
    for e_c, gtr_want in ((-25, 0x3F7FFFFF), (-26, 0x3F800000), (-30, 0x3F800000)):
        c = _enc("f32", -(Fraction(2) ** e_c))
        assert X.gtr_fdpa(a, b, c, "e5m2fnuz", "e5m2fnuz", 24, 31) == gtr_want, e_c
        assert X.tr_fdpa(a, b, c, "e5m2fnuz", "e5m2fnuz", 24, 31) == 0x3F7FFFFF, e_c


def test_subnormal_inputs_align_unnormalized():
    # Exp(subnormal) = emin: f16 2^-24 has SignedSig 2^-10 and Exp -14, so e_max = -14 and the
    # product 2^-48 (aligned: 2^-34) is truncated by RZ_24, whereas a normalized reading
    # (e_max = -24) would keep it.
    a, b = [0x0001, 0x8001, 0x0001], [0x3C00, 0x3C00, 0x0001]
    assert X.t_fdpa(a, b, 0, "f16", "f16", "f32", 24, "RZ-FP32") == 0
    assert _f32_value(X.e_fdpa(a, b, 0, "f16", "f16")) == Fraction(2) ** -48
