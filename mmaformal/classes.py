"""Input classes of the CLFP method ([Xie2025] sec. 3.1.4) as raw-bit generators.

`generate(klass, fa, fb, fc, K, n, rng)` returns (a, b, c): a and b of shape (n, K), c of
shape (n,), unsigned integer arrays of the formats' storage dtypes (the design's raw-bit
form), for the classes

    normal       N(0, 1) values
    uniform      U(-1, 1) values
    dnn          N(0, 1) + Bernoulli(0.001) * N(0, 100)   (Source: [Xie2025] sec. 3.1.4, [18])
    cancel       adversarial cancellation: products in +/- pairs and c = -(their sum), large
                 condition number
    bits         uniformly random bit streams (covers subnormals, Inf, NaN)
    sparse       random bit streams with ~75% of the elements zero
    subnormal    exponent fields 0 or 1 (subnormal-heavy), small c
    special      finite values with Inf/NaN/signed zeros injected
    overflow     exponent fields near the top (products and sums overflow)
    swamping     one large product and many small ones (the FPRev probe of sec. 3.1.2)

Integer formats (s8 u8 s4 u4 b1 with an s32 accumulator) get the same class names with
integer meanings (`_int_generate`): small/normal/uniform values, +-pairs that cancel, zeros,
the extremes (-128 * -128, INT32_MAX/INT32_MIN accumulators) and accumulators within a few
products of the s32 bounds ("overflow"), so wrap-around and .satfinite are exercised.

May import: numpy, mmaformal.fp (format descriptors only). Values are turned into bits by
rounding a float64 to the format with the exact `fp.round_to` on the numpy back-end, never by a
host cast, so every format (fp8, fp6, fp4, fnuz) is generated the same way.
"""
from __future__ import annotations

import numpy as np

from . import fp
from .bits import NUMPY

__all__ = ["CLASSES", "generate", "from_float"]

CLASSES = ("normal", "uniform", "dnn", "cancel", "bits", "sparse", "subnormal", "special",
           "overflow", "swamping")

_DT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def from_float(f: "fp.Format | str", x: np.ndarray, mode: str = "RNE") -> np.ndarray:
    """Round float64 values to format f (exactly, mode `mode`) and return the raw bits."""
    f = fp.fmt(f)
    x = np.ascontiguousarray(x, dtype=np.float64)
    x = np.where(np.isfinite(x), x, 0.0)
    bits = x.reshape(-1).view(np.uint64)

    def conv(K, v):
        u = fp.decode("f64", v)
        return fp.round_to(f, u.sign, u.exp - 52, u.sig, mode, overflow="saturate")
    try:
        from . import compile as C
        kern = C.compile_kernel(conv, [64], [f.storage], key=("from_float", f.name, mode))
        (out,) = kern(bits)
    except Exception:  # no C compiler: the numpy back-end computes the same definition
        out = np.asarray(conv(NUMPY, NUMPY.lift(bits, 64)).v).astype(np.uint64)
    return out.astype(_DT[f.storage]).reshape(x.shape)


def _bits(f: fp.Format, shape, rng) -> np.ndarray:
    r = rng.integers(0, 1 << f.k, size=shape, dtype=np.uint64)
    return (r << f.pad).astype(_DT[f.storage])


def _fields(f: fp.Format, sign, E, T) -> np.ndarray:
    v = (np.asarray(E, np.uint64) << f.t) | np.asarray(T, np.uint64)
    if f.signed:
        v = v | (np.asarray(sign, np.uint64) << (f.k - 1))
    return (v << f.pad).astype(_DT[f.storage])


def special_codes(f: fp.Format) -> list[int]:
    s = [0, f.sign_bit << f.pad] if f.signed and f.nan != "negzero" else [0]
    if f.inf:
        s += [f.inf_code << f.pad, (f.inf_code | f.sign_bit) << f.pad]
    if f.nan != "none":
        s += [fp.default_nan(f)]
        if f.nan == "ieee":
            s += [(f.inf_code | 1) << f.pad, ((f.inf_code | f.sign_bit | ((1 << f.t) - 1)) << f.pad)]
    return s


def _int_bits(f, v: np.ndarray) -> np.ndarray:
    """Raw bits of integer values (two's complement in the low k bits)."""
    v = np.clip(np.asarray(v, dtype=np.int64), f.lo, f.hi)
    return (v & ((1 << f.k) - 1)).astype(np.uint64).astype(_DT[f.storage])


def _int_generate(klass: str, fa, fb, fc, K: int, n: int, rng: np.random.Generator):
    """The input classes for integer formats (see the module docstring)."""
    shp = (n, K)
    I32 = fc.lo, fc.hi

    def full(f, shape):
        return rng.integers(f.lo, f.hi + 1, size=shape)

    def small(f, shape, sigma):
        return np.rint(rng.standard_normal(shape) * sigma)

    def ext(f, shape):
        return np.where(rng.random(shape) < 0.5, f.lo, f.hi)

    sig = lambda f: max(1.0, (f.hi - f.lo) / 8)          # noqa: E731
    if klass in ("bits", "uniform"):
        x, y, z = full(fa, shp), full(fb, shp), full(fc, n)
    elif klass == "normal":
        x, y, z = small(fa, shp, sig(fa)), small(fb, shp, sig(fb)), small(fc, n, 2.0 ** 12)
    elif klass == "dnn":
        x = small(fa, shp, sig(fa) / 4) + (rng.random(shp) < 0.01) * full(fa, shp)
        y = small(fb, shp, sig(fb) / 4) + (rng.random(shp) < 0.01) * full(fb, shp)
        z = small(fc, n, 2.0 ** 8)
    elif klass == "sparse":
        x, y, z = full(fa, shp), full(fb, shp), full(fc, n)
        x[rng.random(shp) < 0.75] = 0
        y[rng.random(shp) < 0.75] = 0
        z[rng.random(n) < 0.5] = 0
    elif klass == "subnormal":                             # the smallest magnitudes
        x, y = rng.integers(-1, 2, size=shp), rng.integers(-1, 2, size=shp)
        z = rng.integers(-4, 5, size=n)
    elif klass == "special":                               # extremes injected
        x, y, z = full(fa, shp), full(fb, shp), full(fc, n)
        m = rng.random(shp) < 0.25
        x[m] = ext(fa, int(m.sum()))
        m = rng.random(shp) < 0.25
        y[m] = ext(fb, int(m.sum()))
        m = rng.random(n) < 0.3
        z[m] = np.array(I32)[rng.integers(0, 2, size=int(m.sum()))]
    elif klass == "overflow":                              # c within a few products of a bound
        x, y = ext(fa, shp), ext(fb, shp)
        span = max(1, K * max(abs(fa.lo), fa.hi) * max(abs(fb.lo), fb.hi))
        near = rng.integers(0, span + 1, size=n)
        z = np.where(rng.random(n) < 0.5, I32[1] - near, I32[0] + near)
    elif klass == "cancel":
        x, y = full(fa, shp), full(fb, shp)
        half = K // 2
        if half and fa.lo < 0:
            x[:, half:2 * half] = np.clip(-x[:, :half], fa.lo, fa.hi)
            y[:, half:2 * half] = y[:, :half]
        xv, yv = np.clip(x, fa.lo, fa.hi), np.clip(y, fb.lo, fb.hi)
        z = -(xv * yv).sum(axis=1)
    elif klass == "swamping":
        x, y = small(fa, shp, 1.0), small(fb, shp, 1.0)
        big = rng.integers(0, K, size=n)
        x[np.arange(n), big] = ext(fa, n)
        y[np.arange(n), big] = ext(fb, n)
        z = full(fc, n)
    if fa.name == "b1":
        x = rng.integers(0, 2, size=shp) if klass not in ("sparse", "subnormal") else (x != 0)
    if fb.name == "b1":
        y = rng.integers(0, 2, size=shp) if klass not in ("sparse", "subnormal") else (y != 0)
    return _int_bits(fa, x), _int_bits(fb, y), _int_bits(fc, z)


def generate(klass: str, fa, fb, fc, K: int, n: int, rng: np.random.Generator):
    fa, fb, fc = fp.fmt(fa), fp.fmt(fb), fp.fmt(fc)
    if klass not in CLASSES:
        raise ValueError(f"unknown input class {klass!r}; expected one of {', '.join(CLASSES)}")
    if fa.is_int or fb.is_int or fc.is_int:
        if not (fa.is_int and fb.is_int and fc.is_int):
            raise ValueError("integer and floating-point formats do not mix")
        return _int_generate(klass, fa, fb, fc, K, n, rng)
    shp = (n, K)
    if klass == "bits":
        return _bits(fa, shp, rng), _bits(fb, shp, rng), _bits(fc, n, rng)
    if klass == "sparse":
        a, b, c = _bits(fa, shp, rng), _bits(fb, shp, rng), _bits(fc, n, rng)
        a[rng.random(shp) < 0.75] = 0
        b[rng.random(shp) < 0.75] = 0
        c[rng.random(n) < 0.5] = 0
        return a, b, c
    if klass == "subnormal":
        def sub(f, shape):
            E = rng.integers(0, 2, size=shape)
            T = rng.integers(0, 1 << f.t, size=shape) if f.t else np.zeros(shape, np.int64)
            return _fields(f, rng.integers(0, 2, size=shape), E, T)
        return sub(fa, shp), sub(fb, shp), sub(fc, n)
    if klass == "overflow":
        def top(f, shape):
            hiE = (f.max_code >> f.t)
            E = rng.integers(max(1, hiE - 2), hiE + 1, size=shape)
            T = rng.integers(0, 1 << f.t, size=shape) if f.t else np.zeros(shape, np.int64)
            v = _fields(f, rng.integers(0, 2, size=shape), E, T)
            return v
        return top(fa, shp), top(fb, shp), top(fc, n)
    # value-based classes
    if klass == "normal":
        x, y, z = rng.standard_normal(shp), rng.standard_normal(shp), rng.standard_normal(n)
    elif klass == "uniform":
        x, y, z = rng.uniform(-1, 1, shp), rng.uniform(-1, 1, shp), rng.uniform(-1, 1, n)
    elif klass == "dnn":
        def d(shape):
            return rng.standard_normal(shape) + (rng.random(shape) < 0.001) * rng.normal(0, 100, shape)
        x, y, z = d(shp), d(shp), d(n)
    elif klass == "special":
        x, y, z = rng.standard_normal(shp), rng.standard_normal(shp), rng.standard_normal(n)
    elif klass == "cancel":
        x, y = rng.standard_normal(shp), rng.standard_normal(shp)
        scale = np.exp2(rng.integers(-6, 7, size=shp))
        x = x * scale
        half = K // 2
        if half:
            x[:, half:2 * half] = -x[:, :half]
            y[:, half:2 * half] = y[:, :half]
        z = None
    elif klass == "swamping":
        x = rng.standard_normal(shp) * np.exp2(-rng.integers(0, 12, size=shp))
        y = rng.standard_normal(shp)
        big = rng.integers(0, K, size=n)
        x[np.arange(n), big] = np.sign(rng.standard_normal(n)) * np.exp2(rng.integers(4, 12, size=n))
        z = rng.standard_normal(n) * np.exp2(rng.integers(-4, 12, size=n))
    # keep values in range of narrow formats
    def clip(f, v):
        lim = (1 + (1 - 2.0 ** -f.t)) * 2.0 ** min(f.emax, 1000) / 2
        return np.clip(v, -lim, lim)
    a = from_float(fa, clip(fa, x))
    b = from_float(fb, clip(fb, y))
    if klass == "cancel":
        av = _value(fa, a)
        bv = _value(fb, b)
        z = -(av * bv).sum(axis=1) * (1 + rng.standard_normal(n) * 2.0 ** -20)
    c = from_float(fc, clip(fc, z))
    if klass == "special":
        for arr, f in ((a, fa), (b, fb)):
            m = rng.random(arr.shape) < 0.05
            sp = np.array(special_codes(f), dtype=np.uint64).astype(arr.dtype)
            arr[m] = sp[rng.integers(0, len(sp), size=int(m.sum()))]
        m = rng.random(n) < 0.1
        sp = np.array(special_codes(fc), dtype=np.uint64).astype(c.dtype)
        c[m] = sp[rng.integers(0, len(sp), size=int(m.sum()))]
    return a, b, c


def _value(f: fp.Format, bits: np.ndarray) -> np.ndarray:
    """float64 values of finite codes (exact: every format here fits float64)."""
    u = fp.decode(f, NUMPY.lift(bits.astype(np.uint64) if f.storage == 64 else bits.astype(np.int64), f.storage))
    sig = np.asarray(u.sig.v, dtype=np.float64)
    e = np.asarray(u.exp.v, dtype=np.float64) - f.t
    v = np.where(np.asarray(u.sign.v), -1.0, 1.0) * sig * np.exp2(e)
    return np.where(np.asarray(u.finite.v), v, 0.0)
