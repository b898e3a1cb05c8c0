"""Formats of the core (mmaformal.fp): decode, encode (round_to), and bad input.

Outside truths: ml_dtypes (every code point of every format of <= 16 bits), numpy / Python
floats (f32, tf32, f64), and the exact-rational oracle (tests/oracles/exact.py) for rounding
an exact value into every format in every mode. Both concrete back-ends (INT, NUMPY) are
checked, since they are different code.
"""
from __future__ import annotations

import struct
import zlib
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from conftest import X, hexs, oracle_equal
from mmaformal import fp, mma
from mmaformal.bits import INT, NUMPY, Bool

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")

#: ml_dtypes type of each format of <= 16 bits (ue4m3: e4m3fn with the sign bit cleared).
ML = {
    "f16": np.float16, "bf16": ml_dtypes.bfloat16,
    "e5m2": ml_dtypes.float8_e5m2, "e4m3": ml_dtypes.float8_e4m3fn,
    "e5m2fnuz": ml_dtypes.float8_e5m2fnuz, "e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "e3m2": ml_dtypes.float6_e3m2fn, "e2m3": ml_dtypes.float6_e2m3fn,
    "e2m1": ml_dtypes.float4_e2m1fn, "ue8m0": ml_dtypes.float8_e8m0fnu,
    "ue4m3": ml_dtypes.float8_e4m3fn,
}
SMALL = list(ML)
BACKENDS = {"int": INT, "numpy": NUMPY}


def _ml_values(name: str, codes: np.ndarray) -> np.ndarray:
    """float64 values of storage elements per ml_dtypes (bits above the width ignored)."""
    f = fp.FORMATS[name]
    mask = (1 << f.k) - 1
    u = (codes & mask).astype(np.uint16 if f.storage == 16 else np.uint8)
    return u.view(ML[name]).astype(np.float64)


def _decoded_values(name: str, codes: np.ndarray, K) -> tuple[np.ndarray, dict]:
    """float64 values (NaN, +-Inf, signed zeros) and flags of the core's decode."""
    f = fp.FORMATS[name]
    if K is NUMPY:
        u = fp.decode(name, NUMPY.lift(codes, f.storage))
        sign, exp, sig = (np.broadcast_to(np.asarray(v), codes.shape) for v in (u.sign.v, u.exp.v, u.sig.v))
        flags = {k: np.broadcast_to(np.asarray(getattr(u, k).v), codes.shape)
                 for k in ("zero", "inf", "nan")}
    else:
        us = [fp.decode(name, INT.lift(int(c), f.storage)) for c in codes]
        sign = np.array([u.sign.v for u in us])
        exp = np.array([u.exp.v for u in us])
        sig = np.array([u.sig.v for u in us])
        flags = {k: np.array([getattr(u, k).v for u in us]) for k in ("zero", "inf", "nan")}
    with np.errstate(over="ignore"):       # Inf codes decode with exp = emax + 1
        mag = np.ldexp(sig.astype(np.float64), (exp - f.t).astype(np.int64))
    v = np.where(sign.astype(bool), -mag, mag)
    v = np.where(flags["inf"], np.where(sign.astype(bool), -np.inf, np.inf), v)
    v = np.where(flags["nan"], np.nan, v)
    return v, flags


def _same_float(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bitwise-style equality of float64 arrays: NaN == NaN, +0 != -0."""
    return (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))


# ------------------------------------------------------------------------------------------
# decode: every code point, both back-ends, against ml_dtypes
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("name", SMALL)
def test_decode_every_code_vs_ml_dtypes(name, backend):
    f = fp.FORMATS[name]
    codes = np.arange(1 << f.storage, dtype=np.int64)   # includes junk above the width
    ref = _ml_values(name, codes)
    if name == "ue4m3":
        ref = (codes & 0x7F).astype(np.uint8).view(ML[name]).astype(np.float64)
    got, flags = _decoded_values(name, codes, BACKENDS[backend])
    bad = ~_same_float(got, ref)
    assert not bad.any(), f"{name}: codes {hexs(codes[bad][:8])} decode to {got[bad][:8]}, ml_dtypes {ref[bad][:8]}"
    # flags agree with the value: NaN, Inf, and zero (fnuz 0x80 is a NaN, not a zero)
    assert np.array_equal(flags["nan"], np.isnan(ref))
    assert np.array_equal(flags["inf"], np.isinf(ref))
    assert np.array_equal(flags["zero"], ref == 0)


@pytest.mark.parametrize("name", ["f16", "bf16", "e4m3", "e5m2fnuz", "e2m1", "ue8m0"])
def test_decode_exp_is_max_E_1_minus_bias(name):
    """Unpacked is SignedSig/Exp of [Xie2025] Algorithm 7 (never normalized)."""
    f = fp.FORMATS[name]
    codes = np.arange(1 << f.k, dtype=np.int64)
    u = fp.decode(name, NUMPY.lift(codes, f.storage))
    E = (codes >> f.t) & ((1 << f.w) - 1)
    want = (np.maximum(E, 1) if f.subnormals else E) - f.bias
    assert np.array_equal(np.broadcast_to(u.exp.v, codes.shape), want)
    assert u.sig.w == f.p


def test_format_table_agrees_with_oracle_and_ml_dtypes():
    for name, f in fp.FORMATS.items():
        o = X.FORMATS[name]
        assert (f.w, f.t, f.bias, f.storage, f.pad, f.signed) == \
            (o.w, o.t, o.bias, o.container, o.pad, o.signed), name
        assert f.max_code == o.max_code, name
    for name in SMALL:
        if name == "ue4m3":
            continue
        fi = ml_dtypes.finfo(ML[name])
        f = fp.FORMATS[name]
        top = fp.decode(name, INT.lift(f.max_code, f.storage))
        assert top.sig.v * 2.0 ** (top.exp.v - f.t) == float(fi.max), name


# ------------------------------------------------------------------------------------------
# encode(decode(x)) == x for every finite code
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in SMALL if n != "ue8m0"])
def test_roundtrip_every_finite_code_numpy_all_modes(name):
    f = fp.FORMATS[name]
    codes = np.arange(1 << f.storage, dtype=np.int64)
    ref = _ml_values(name, codes) if name != "ue4m3" else \
        (codes & 0x7F).astype(np.uint8).view(ML[name]).astype(np.float64)
    fin = np.isfinite(ref)
    u = fp.decode(name, NUMPY.lift(codes, f.storage))
    want = codes & (((1 << f.k) - 1) << f.pad)
    for mode in fp.MODES:
        r = np.broadcast_to(fp.round_to(name, u.sign, u.exp - f.t, u.sig, mode).v, codes.shape)
        bad = fin & (r != want)
        assert not bad.any(), f"{name} {mode}: {hexs(codes[bad][:8])} -> {hexs(r[bad][:8])}"


@pytest.mark.parametrize("name", [n for n in SMALL if n != "ue8m0"])
def test_roundtrip_every_finite_code_int(name):
    f = fp.FORMATS[name]
    step = 1 if f.storage == 8 else 5       # 16-bit: every 5th code (NUMPY above does all)
    for c in range(0, 1 << f.storage, step):
        u = fp.decode(name, INT.lift(c, f.storage))
        if u.nan.v or u.inf.v:
            continue
        r = fp.round_to(name, u.sign, u.exp - f.t, u.sig, "RNE").v
        assert r == c & (((1 << f.k) - 1) << f.pad), (name, hex(c), hex(r))


def test_ue8m0_is_decode_only():
    u = fp.decode("ue8m0", INT.lift(0x7F, 8))
    with pytest.raises(ValueError, match="decode-only"):
        fp.round_to("ue8m0", u.sign, u.exp, u.sig, "RNE")


# ------------------------------------------------------------------------------------------
# f32 / tf32 / f64 decode on random codes
# ------------------------------------------------------------------------------------------

def _rand_codes(rng, nbits: int, n: int) -> list[int]:
    out = [int(x) for x in rng.integers(0, 1 << 32, n, dtype=np.uint64)]
    if nbits == 64:
        out = [(a << 32) | int(b) for a, b in zip(out, rng.integers(0, 1 << 32, n, dtype=np.uint64))]
    # specials and boundaries
    out += [0, 1 << (nbits - 1), 1, (1 << (nbits - 1)) - 1]
    return out


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_decode_f32_tf32_random_vs_numpy(backend):
    rng = np.random.default_rng(101)
    codes = np.array(_rand_codes(rng, 32, 20000 if backend == "numpy" else 3000), dtype=np.int64)
    # also many subnormals / small exponents
    codes = np.concatenate([codes, codes[:3000] & 0x807FFFFF, (codes[:3000] & 0x80FFFFFF)])
    K = BACKENDS[backend]
    for name, cont in (("f32", codes), ("tf32", codes & ~0x1FFF)):
        ref = cont.astype(np.uint32).view(np.float32).astype(np.float64)
        got, _ = _decoded_values(name, codes, K)
        bad = ~_same_float(got, ref)
        assert not bad.any(), (name, hexs(codes[bad][:8]))


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_decode_f64_random_vs_python(backend):
    rng = np.random.default_rng(102)
    codes = _rand_codes(rng, 64, 20000 if backend == "numpy" else 3000)
    codes += [c & 0x800FFFFFFFFFFFFF for c in codes[:2000]]       # subnormals
    ref = np.array([struct.unpack("<d", struct.pack("<Q", c))[0] for c in codes])
    got, _ = _decoded_values("f64", np.array(codes, dtype=object), BACKENDS[backend])
    bad = ~_same_float(got, ref)
    assert not bad.any(), hexs(np.array(codes, dtype=object)[bad][:8])


# ------------------------------------------------------------------------------------------
# round_to: an exact value into every format, every mode, against the oracle
# ------------------------------------------------------------------------------------------

ROUND_FORMATS = ["f32", "tf32", "f16", "bf16", "e5m2", "e4m3", "e5m2fnuz", "e4m3fnuz", "e3m2",
                 "e2m3", "e2m1", "ue4m3", "e8m13"]


@pytest.mark.parametrize("sticky", [False, True])
@pytest.mark.parametrize("name", ROUND_FORMATS)
def test_round_to_vs_oracle(name, sticky):
    """round_to((-1)^s (sig + frac) 2^exp) for random s, exp (subnormal .. overflow), sig,
    with frac = 0 or (sticky) 1/3; sticky inputs have p + 4 significant bits (the contract)."""
    rng = np.random.default_rng([zlib.crc32(name.encode()), int(sticky)])
    f = fp.FORMATS[name]
    N = 1500
    n = f.p + 4
    sig = rng.integers(0, 1 << n, N)
    sig = np.where(rng.random(N) < 0.2, sig >> rng.integers(0, n, N), sig)
    if sticky:
        sig |= 1 << (n - 1)
    exp = rng.integers(f.emin - f.t - n - 3, f.emax - n + 7, N)
    sign = rng.random(N) < (0.5 if f.signed else 0.1)
    st = NUMPY.lift(np.ones(N, dtype=np.int64), 1) == 1 if sticky else False
    for mode in fp.MODES:
        got = fp.round_to(name, Bool(NUMPY, sign), NUMPY.lift(exp, 16, True), NUMPY.lift(sig, n),
                          mode, st).v
        bad = []
        for i in range(N):
            v = (Fraction(int(sig[i])) + (Fraction(1, 3) if sticky else 0)) * Fraction(2) ** int(exp[i])
            want = X.round_to(name, -v if sign[i] else v, mode, int(sign[i]))
            if not oracle_equal(name, got[i], want):
                bad.append((bool(sign[i]), int(exp[i]), int(sig[i]), hex(int(got[i])), hex(want)))
        assert not bad, (mode, len(bad), bad[:5])


def test_regression_ue4m3_negative_is_nan_or_zero():
    """Bug: round_to into the unsigned ue4m3 dropped the sign (-2 encoded as +2)."""
    def r(sign, exp, sig, mode="RNE"):
        return fp.round_to("ue4m3", sign, INT.lift(exp, 16, True), INT.lift(sig, 8), mode).v
    assert r(True, 0, 2) == 0x7F                    # -2: not representable -> NaN
    assert r(False, 0, 2) == 0x40                   # +2
    assert r(True, -20, 1) == 0x00                  # -2^-20 rounds to zero -> 0
    assert r(True, -20, 1, "RD") == 0x7F            # ... but not toward -inf
    assert r(True, -20, 1, "RU") == 0x00


def test_regression_e8m13_is_stored_in_f32_layout():
    """Bug: e8m13 (rho = RZ-E8M13) had no container padding; the 22-bit code landed in the low
    bits of the f32 word. It is f32 bits with the low 10 bits zero (docs/semantics.md)."""
    v = fp.round_to("e8m13", False, INT.lift(-24, 8, True), INT.lift((1 << 24) + (1 << 24) // 3, 26), "RZ")
    assert v.v == 0x3FAAA800
    assert X.round_to("e8m13", Fraction(4, 3), "RZ") == 0x3FAAA800


def test_default_nan_and_specials():
    assert fp.default_nan("f32") == 0x7FC00000
    assert fp.default_nan("f64") == 0x7FF8000000000000
    assert fp.default_nan("tf32") == 0x7FC00000
    assert fp.default_nan("e4m3") == 0x7F
    assert fp.default_nan("e4m3fnuz") == 0x80
    with pytest.raises(ValueError, match="e2m1 has no NaN"):
        fp.default_nan("e2m1")


# ------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------

def test_decode_wrong_width_names_the_expected_width():
    with pytest.raises(ValueError, match=r"f16 decodes u16 elements, got u32"):
        fp.decode("f16", NUMPY.lift(np.zeros(3, dtype=np.int64), 32))
    with pytest.raises(ValueError, match=r"e4m3 decodes u8 elements, got u16"):
        fp.decode("e4m3", INT.lift(0, 16))
    with pytest.raises(ValueError, match=r"f32 decodes u32 elements, got s32"):
        fp.decode("f32", INT.lift(0, 32, True))


def test_wrong_dtype_is_rejected():
    with pytest.raises(ValueError, match="expected an integer array"):
        NUMPY.lift(np.zeros(3, dtype=np.float32), 32)
    with pytest.raises(ValueError, match="do not fit u8"):
        NUMPY.lift(np.array([256]), 8)
    with pytest.raises(ValueError, match="does not fit u8"):
        INT.lift(-1, 8)


def test_unknown_names_list_what_is_expected():
    with pytest.raises(ValueError, match=r"unknown format 'e9m9'; expected one of .*f32.*e4m3"):
        fp.fmt("e9m9")
    with pytest.raises(ValueError, match=r"unknown format"):
        fp.decode("fp8", INT.lift(0, 8))
    with pytest.raises(ValueError, match=r"unknown rounding mode 'RN'; expected one of RNE, RNA"):
        fp.mode_code("RN")
    with pytest.raises(ValueError, match=r"unknown rounding mode"):
        fp.add("f32", INT.lift(0, 32), INT.lift(0, 32), "up")
    with pytest.raises(ValueError, match=r"unknown output conversion 'RZ-FP64'; expected one of RZ-FP32"):
        mma.rho_of("RZ-FP64")
    with pytest.raises(ValueError, match=r"zero_exp must be 'excluded'.*'field'"):
        mma.t_fdpa([INT.lift(0, 16)], [INT.lift(0, 16)], INT.lift(0, 32), "f16", "f16", "f32",
                   24, "RZ-FP32", zero_exp="min")
    with pytest.raises(ValueError, match="round_to takes an unsigned sig and a signed exp"):
        fp.round_to("f32", False, INT.lift(0, 8), INT.lift(1, 30), "RNE")
    with pytest.raises(ValueError, match="same length"):
        mma.t_fdpa([INT.lift(0, 16)] * 2, [INT.lift(0, 16)], INT.lift(0, 32), "f16", "f16", "f32",
                   24, "RZ-FP32")
