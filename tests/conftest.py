"""Shared settings and input generators of the formal core's test-suite.

- hypothesis runs derandomized (profile "ci", the default; `HYPOTHESIS_PROFILE=dev` for
  random exploration), with no deadline and no example database, so CI is deterministic.
- Input generators build raw bit patterns (the storage elements of the formats, as int64
  numpy arrays, or object arrays of Python ints for 64-bit formats) from a seeded
  `numpy.random.Generator`. They read the format parameters from the *oracle's* table
  (tests/oracles/exact.py), not from the core, so generated inputs do not inherit a bug of
  the core's format table.
- `oracle_equal` compares a core result (bits) with an oracle result (bits, or the marker
  "nan" where the oracle leaves the NaN payload open).
- `fdpa_inputs` makes dot products of the input classes `FDPA_KINDS`; `compare_with_oracle`
  runs one operation (`OpSpec`: core on NUMPY lanes, oracle per dot product) over them. The
  oracle-equality tests and the negative controls (test_mutants.py) share this one check.
- `oracle_map` spreads oracle calls over a second core (fork; MMAFORMAL_TEST_PROCS=1 turns
  it off). Results do not depend on it.
- Compiled kernels are built at -O1 (MMAFORMAL_CC_OPT, unless the caller set it): on a cold
  kernel cache (a fresh CI machine) the suite compiles a few hundred kernels, 1.8-4.6x
  faster than at the -O3 users get; the bits are the same (mmaformal.compile).

Test modules import the helpers with `from conftest import ...` (tests/ is on sys.path, as for
`from oracles import exact`).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("MMAFORMAL_CC_OPT", "-O1")

from oracles import exact as X  # noqa: E402
from mmaformal import mma  # noqa: E402
from mmaformal.bits import NUMPY  # noqa: E402

settings.register_profile(
    "ci", derandomize=True, deadline=None, database=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.large_base_example])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# ------------------------------------------------------------------------------------------
# Format parameters (from the oracle's table) and field helpers
# ------------------------------------------------------------------------------------------

def ofmt(name: str):
    return X.FORMATS[name]


def storage_dtype(name: str):
    """numpy dtype of the lanes that carry a format's storage element into the core."""
    return object if ofmt(name).container == 64 else np.int64


def max_biased_exp(name: str) -> int:
    """The largest biased exponent field of a finite number (IEEE formats: all ones is special)."""
    F = ofmt(name)
    return (1 << F.w) - 2 if F.inf else (1 << F.w) - 1


def pack(name: str, s, E, T):
    """Storage elements from sign, biased exponent and trailing fields (numpy arrays)."""
    F = ofmt(name)
    s = np.asarray(s, dtype=object if F.container == 64 else np.int64)
    E = np.asarray(E, dtype=s.dtype)
    T = np.asarray(T, dtype=s.dtype)
    code = (E << F.t) | T
    if F.signed:
        code = code | (s << (F.w + F.t))
    if F.pad:
        code = code << F.pad
    return code


def _bits(rng, n: int, nbits: int, p: float = 0.5):
    """n random integers of nbits bits, each bit set with probability p (object for 64)."""
    if nbits <= 62:
        if p == 0.5:
            return rng.integers(0, 1 << nbits, n, dtype=np.int64)
        m = rng.random((n, nbits)) < p
        return (m * (np.int64(1) << np.arange(nbits, dtype=np.int64))).sum(axis=1).astype(np.int64)
    lo = _bits(rng, n, 32, p).astype(object)
    hi = _bits(rng, n, nbits - 32, p).astype(object)
    return (hi << 32) | lo


def random_codes(rng, name: str, n: int):
    """Random bit streams over the whole storage element (junk above the width and in the
    tf32 padding included: decode must ignore it)."""
    return _bits(rng, n, ofmt(name).container).astype(storage_dtype(name))


def sparse_codes(rng, name: str, n: int, p: float = 0.08):
    """Sparse bit streams: each bit of the format's width set with probability p, random sign."""
    F = ofmt(name)
    code = _bits(rng, n, F.w + F.t, p)
    if F.signed:
        code = code | (_bits(rng, n, 1).astype(code.dtype) << (F.w + F.t))
    return (code << F.pad).astype(storage_dtype(name)) if F.pad else code.astype(storage_dtype(name))


def subnormal_codes(rng, name: str, n: int, frac: float = 0.7):
    """Subnormal-heavy: exponent field 0 (subnormals and zeros) with probability frac."""
    F = ofmt(name)
    s = _bits(rng, n, 1)
    E = np.where(rng.random(n) < frac, 0, rng.integers(0, max_biased_exp(name) + 1, n))
    E = np.where(rng.random(n) < 0.15, 1, E)   # the smallest normals too
    T = _bits(rng, n, F.t) if F.t else np.zeros(n, dtype=np.int64)
    if F.container == 64:
        s, E = s.astype(object), E.astype(object)
    return pack(name, s, E, T)


def finite_codes(rng, name: str, n: int, spread: int = 4, center: int | None = None):
    """Finite values with biased exponents within +-spread of `center` (default: the bias)."""
    F = ofmt(name)
    c = F.bias if center is None else center
    E = np.clip(c + rng.integers(-spread, spread + 1, n), 1, max_biased_exp(name))
    T = _bits(rng, n, F.t) if F.t else np.zeros(n, dtype=np.int64)
    s = _bits(rng, n, 1)
    if F.container == 64:
        s, E = s.astype(object), E.astype(object)
    code = pack(name, s, E, T)
    if F.nan == "allones":   # e4m3: E = 15, T = 7 is the NaN; step down to max finite
        nan_mag = ((1 << (F.w + F.t)) - 1) << F.pad
        mag_mask = nan_mag
        code = np.where((code & mag_mask) == nan_mag, code - (1 << F.pad), code)
    return code.astype(storage_dtype(name))


def special_codes(name: str) -> list[int]:
    """Zeros, Infs, NaNs, extreme finite numbers, one: the interesting codes of a format."""
    F = ofmt(name)
    sb = (1 << (F.w + F.t)) if F.signed else 0
    out = {0, sb, 1, sb | 1, F.max_code, sb | F.max_code, 1 << F.t, (1 << F.t) - 1,
           F.bias << F.t, sb | (F.bias << F.t)}
    if F.inf:
        out |= {((1 << F.w) - 1) << F.t, sb | (((1 << F.w) - 1) << F.t)}
    if F.nan == "ieee":
        out |= {(((1 << F.w) - 1) << F.t) | (1 << (F.t - 1)), sb | (((1 << F.w) - 1) << F.t) | 1}
    elif F.nan == "allones":
        out |= {(1 << (F.w + F.t)) - 1, sb | ((1 << (F.w + F.t)) - 1)}
    return sorted(c << F.pad for c in out)


def special_mix(rng, name: str, n: int, p: float = 0.3):
    """Random codes where a fraction p of the elements are special codes."""
    base = finite_codes(rng, name, n, spread=6)
    sp = np.array(special_codes(name), dtype=storage_dtype(name))
    pick = sp[rng.integers(0, len(sp), n)]
    return np.where(rng.random(n) < p, pick, base).astype(storage_dtype(name))


def exp_codes(rng, name: str, exps, sig: str = "random"):
    """Codes whose Exp() (max(E,1) - bias) is exps (array), below emin as subnormals
    (value 2^exps exactly when sig == "one"); random signs. exps must be >= emin - t."""
    F = ofmt(name)
    exps = np.asarray(exps, dtype=np.int64)
    n = exps.shape[0]
    emin = 1 - F.bias
    s = _bits(rng, n, 1)
    if sig == "one":
        T = np.zeros(n, dtype=np.int64)
    elif sig == "few":   # few significant bits: ties and exact sums are likely
        T = (_bits(rng, n, min(F.t, 3)) << max(F.t - 3, 0)) if F.t else np.zeros(n, dtype=np.int64)
    else:
        T = _bits(rng, n, F.t) if F.t else np.zeros(n, dtype=np.int64)
    E = exps + F.bias
    sub = E < 1
    # subnormal 2^exps: T = 1 << (t - (emin - exps)), E = 0
    Tsub = np.left_shift(np.int64(1), np.clip(F.t - (emin - exps), 0, 62))
    T = np.where(sub, Tsub, T)
    E = np.where(sub, 0, np.minimum(E, max_biased_exp(name)))
    if F.container == 64:
        s, E, T = s.astype(object), E.astype(object), T.astype(object)
    code = pack(name, s, E, T)
    if F.nan == "allones":
        nan_mag = ((1 << (F.w + F.t)) - 1) << F.pad
        code = np.where((code & nan_mag) == nan_mag, code - (1 << F.pad), code)
    return code.astype(storage_dtype(name))


def exp_range(name: str) -> tuple[int, int]:
    """(smallest Exp of a nonzero code, largest Exp of a finite code)."""
    F = ofmt(name)
    return 1 - F.bias - F.t, max_biased_exp(name) - F.bias


# ------------------------------------------------------------------------------------------
# Comparison
# ------------------------------------------------------------------------------------------

def is_nan_bits(name: str, bits: int) -> bool:
    return X.decode(name, int(bits)) == ("nan",)


def oracle_equal(name: str, got: int, want) -> bool:
    """Core bits `got` equal the oracle's `want` (bits, or "nan": any NaN of format name)."""
    if want == X.NAN:
        return is_nan_bits(name, got)
    return int(got) == int(want)


def hexs(xs) -> list[str]:
    return [hex(int(x)) for x in xs]


# ------------------------------------------------------------------------------------------
# Input classes of the FDPA tests (CLFP classes of [Xie2025] sec. 3, plus adversarial ones)
# ------------------------------------------------------------------------------------------

#: The input classes every FDPA configuration is checked on.
FDPA_KINDS = ("random", "sparse", "subnormal", "finite", "special", "cancel", "swamp", "ties")


def _product_exps(rng, fa: str, fb: str, target):
    """Exps (ea, eb) of a and b with ea + eb = target where possible (clipped to range)."""
    lo_a, hi_a = exp_range(fa)
    lo_b, hi_b = exp_range(fb)
    t = np.clip(target, lo_a + lo_b, hi_a + hi_b)
    ea = np.clip(t - rng.integers(lo_b, hi_b + 1, t.shape[0]), lo_a, hi_a)
    ea = np.minimum(np.maximum(ea, t - hi_b), t - lo_b)
    return ea, t - ea


def fdpa_inputs(rng, fa: str, fb: str, fc: str, L: int, n: int, kind: str, F: int = 24):
    """n dot products of length L in class `kind`: (A, B, C), A and B lists of L code arrays.

    random/sparse/subnormal/finite/special: per-element classes (see the generators above).
    cancel: c = -(sum a_k b_k) rounded to fc, so the fused sum cancels massively.
    swamp: one product near the top of the range, the others and c 2^(F-4)..2^(F+30) below.
    ties: product 0 is a power of two at e0, the other terms sit at e0 - F + (-2..2) with few
          significant bits, so aligned terms fall exactly on (or next to) the truncation point
          2^(e0 - F) and the output rounding sees exact ties.
    """
    if kind in ("random", "sparse", "subnormal", "finite", "special", "cancel"):
        g = {"random": random_codes, "sparse": sparse_codes, "subnormal": subnormal_codes,
             "finite": finite_codes, "cancel": finite_codes,
             # specials: about one special element per dot product (some have none)
             "special": lambda r, f, m: special_mix(r, f, m, min(0.15, 1.0 / L))}[kind]
        A = [g(rng, fa, n) for _ in range(L)]
        B = [g(rng, fb, n) for _ in range(L)]
        C = special_mix(rng, fc, n, 0.3) if kind == "special" else \
            finite_codes(rng, fc, n, spread=8) if kind == "cancel" else g(rng, fc, n)
        if kind == "cancel":
            C = cancelling_c(A, B, C, fa, fb, fc)
        return A, B, C
    lo_a, hi_a = exp_range(fa)
    lo_b, hi_b = exp_range(fb)
    lo, hi = lo_a + lo_b, hi_a + hi_b
    if kind == "ties":
        e0 = rng.integers(min(lo + F + 4, hi - 2), max(hi - 1, lo + F + 5), n)
        tgts = [e0] + [e0 - F + rng.integers(-2, 3, n) for _ in range(L - 1)]
        sigs = ["one"] + ["few"] * (L - 1)
        ec = e0 - F + rng.integers(-3, 3, n)
    elif kind == "swamp":
        e0 = rng.integers(hi - 6, hi + 1, n)
        tgts = [e0] + [e0 - rng.integers(max(F - 4, 0), F + 30, n) for _ in range(L - 1)]
        sigs = ["random"] + ["few"] * (L - 1)
        ec = e0 - rng.integers(0, 40, n)
    else:
        raise ValueError(f"unknown input class {kind!r}")
    perm = rng.permutation(L)          # the big / reference product is not always position 0
    A, B = [None] * L, [None] * L
    for k in range(L):
        ea, eb = _product_exps(rng, fa, fb, tgts[k])
        A[perm[k]] = exp_codes(rng, fa, ea, sigs[k])
        B[perm[k]] = exp_codes(rng, fb, eb, sigs[k])
    lo_c, hi_c = exp_range(fc)
    C = exp_codes(rng, fc, np.clip(ec, lo_c, hi_c), "few")
    return A, B, C


def cancelling_c(A, B, C, fa: str, fb: str, fc: str):
    """c = -(sum a_k b_k) rounded (RNE) to fc, by the oracle; C kept where the sum is not finite."""
    from fractions import Fraction
    out = []
    for i in range(len(C)):
        s = Fraction(0)
        ok = True
        for a, b in zip(A, B):
            x, y = X.decode(fa, int(a[i])), X.decode(fb, int(b[i]))
            if isinstance(x, tuple) and x[0] != "zero" or isinstance(y, tuple) and y[0] != "zero":
                ok = False
                break
            s += X._val(x) * X._val(y)
        r = X.round_to(fc, -s, "RNE") if ok else int(C[i])
        out.append(int(C[i]) if is_nan_bits(fc, r) or X._is_inf(X.decode(fc, r)) else r)
    return np.array(out, dtype=C.dtype)


# ------------------------------------------------------------------------------------------
# Oracle calls, optionally on a second core (fork pool; the oracle is pure Python)
# ------------------------------------------------------------------------------------------

_REGISTRY: dict = {}


def _run_chunk(task):
    key, chunk = task
    fn = _REGISTRY[key]
    return [fn(*args) for args in chunk]


def oracle_map(fn, arglist: list) -> list:
    """[fn(*args) for args in arglist], on up to MMAFORMAL_TEST_PROCS (default: 2, or the
    number of CPUs if fewer) forked processes when the list is long. fn may be a closure: it
    reaches the children through fork, not through pickling."""
    procs = int(os.environ.get("MMAFORMAL_TEST_PROCS", min(2, os.cpu_count() or 1)))
    if procs <= 1 or len(arglist) < 1000:
        return [fn(*args) for args in arglist]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    chunk = max(250, len(arglist) // (8 * procs))
    key = len(_REGISTRY)
    _REGISTRY[key] = fn
    try:
        tasks = [(key, arglist[i:i + chunk]) for i in range(0, len(arglist), chunk)]
        # an executor, not multiprocessing.Pool: a child that dies raises BrokenProcessPool
        # here instead of leaving map() waiting forever
        with ProcessPoolExecutor(procs, mp_context=mp.get_context("fork")) as pool:
            parts = list(pool.map(_run_chunk, tasks))
    finally:
        del _REGISTRY[key]
    return [r for p in parts for r in p]


def lanes(arrays, i):
    """The i-th element of every array, as Python ints."""
    return [int(a[i]) for a in arrays]


def mismatches(out_fmt: str, got, want, describe, limit: int = 5) -> tuple[int, list]:
    """Count core/oracle disagreements and describe the first few (describe(i) -> str)."""
    bad = [i for i, w in enumerate(want) if not oracle_equal(out_fmt, got[i], w)]
    return len(bad), [f"{describe(i)} core={hex(int(got[i]))} oracle="
                      f"{want[i] if want[i] == X.NAN else hex(want[i])}" for i in bad[:limit]]


# ------------------------------------------------------------------------------------------
# One comparison of a core operation with an oracle (used by test_mma_oracle and, unchanged,
# by test_mutants: a mutant must fail the very check the real operation passes)
# ------------------------------------------------------------------------------------------

@dataclass
class OpSpec:
    """An FDPA-like operation: d = op(a[0..L-1], b[0..L-1], c[, scales]).

    core(A, B, C, S) -> output codes (numpy), A/B lists of L code arrays, S a dict of extra
    arrays (scales); oracle(a, b, c, s) -> bits or "nan" for one dot product (Python ints).
    scales(rng, n, kind) -> S. fix_b: a code every b_k is set to (FTZ-Add uses b = 1).
    """

    id: str
    fa: str
    fb: str
    fc: str
    L: int
    F: int
    out: str
    core: Callable
    oracle: Callable
    scales: Optional[Callable] = None
    fix_b: Optional[int] = None


def lift_all(name: str, arrays):
    W = ofmt(name).container
    return [NUMPY.lift(a, W) for a in arrays]


def compare_with_oracle(op: OpSpec, n_per_kind: int, seed: int, kinds=FDPA_KINDS):
    """Run op on n_per_kind dot products of every input class; return (number of mismatches,
    number of cases, a few described mismatches)."""
    rng = np.random.default_rng(seed)
    got_all, args, descr = [], [], []
    for kind in kinds:
        A, B, C = fdpa_inputs(rng, op.fa, op.fb, op.fc, op.L, n_per_kind, kind, op.F)
        if op.fix_b is not None:
            B = [np.full_like(b, op.fix_b) for b in B]
        S = op.scales(rng, n_per_kind, kind) if op.scales else {}
        got = np.broadcast_to(op.core(A, B, C, S), C.shape)
        for i in range(n_per_kind):
            s = {k: int(v[i]) if not isinstance(v, list) else [int(x[i]) for x in v] for k, v in S.items()}
            args.append((lanes(A, i), lanes(B, i), int(C[i]), s))
            descr.append(kind)
        got_all.append(got)
    got = np.concatenate(got_all)
    want = oracle_map(op.oracle, args)
    n, ex = mismatches(op.out, got, want,
                       lambda i: f"[{descr[i]}] a={hexs(args[i][0])} b={hexs(args[i][1])} "
                                 f"c={hex(args[i][2])} s={args[i][3]}")
    return n, len(want), ex


def t_fdpa_spec(fa, fb, fc, L, F, rho, zero_exp="excluded") -> OpSpec:
    out = "f16" if rho == "RNE-FP16" else "f32"

    def core(A, B, C, S):
        return mma.t_fdpa(lift_all(fa, A), lift_all(fb, B), lift_all(fc, [C])[0], fa, fb, fc, F,
                          rho, zero_exp).v

    def oracle(a, b, c, s):
        return X.t_fdpa(a, b, c, fa, fb, fc, F, rho, zero_exp)

    fab = fa if fa == fb else f"{fa}x{fb}"
    return OpSpec(f"t_fdpa-{fab}-L{L}-F{F}-{rho}-{zero_exp}", fa, fb, fc, L, F, out, core, oracle)


def tr_fdpa_spec(fa, L, F=24, F2=31, zero_exp="excluded", gtr=False) -> OpSpec:
    f = mma.gtr_fdpa if gtr else mma.tr_fdpa
    g = X.gtr_fdpa if gtr else X.tr_fdpa

    def core(A, B, C, S):
        return f(lift_all(fa, A), lift_all(fa, B), lift_all("f32", [C])[0], fa, fa, F, F2, zero_exp).v

    def oracle(a, b, c, s):
        return g(a, b, c, fa, fa, F, F2, zero_exp)

    return OpSpec(f"{'gtr' if gtr else 'tr'}_fdpa-{fa}-L{L}-F{F}-F2{F2}-{zero_exp}", fa, fa, "f32",
                  L, F, "f32", core, oracle)
