"""Layer 3, mma: the elementary operations of [Xie2025] sec. 4 (Algorithms 1-11).

May import: mmaformal.bits, mmaformal.fp, mmaformal.trace. Each operation takes lists of
storage-element `BV`s (one per vector position; on the numpy back-end each BV holds all dot
products as lanes) and returns the output element as a `BV`. Written once, run on every
back-end. Key steps are recorded (`trace.record`, one typed record per step) for the white-box
trace of mmaformal.explain and the decomposed proofs of mmaformal.query.claims; recording
never changes a result.

Invariants:
- The finite path is computed for every input; NaN/Inf/signed-zero rules are an overlay of
  `ite`s (`_special`), following [Xie2025] sec. 4.2 and the named parameters below.
- Every choice the paper leaves open is a keyword parameter with a documented default:
  `zero_exp` (the exponent a zero term takes in e_max), `nan` (NaN encoding of the result),
  `overflow` (Inf or saturation at output rounding), `tf32_round` (how a 32-bit tf32
  container is read), `flush` (FTZ-Add/Mul input flushing), `tail` (TR/GTR-FDPA: [Xie2025]'s
  Algorithm 10/11 text or mmasim 2.1.1's code, `TR_TAILS`).
- Fixed-point values are signed `BV`s in units of 2^(exponent - fraction bits); every width is
  derived statically from the formats, so nothing can overflow (and the back-ends check).

Integer MMA (`int_chain`): products and sums are exact (static widths), then the s32 result
wraps (two's complement, low 32 bits) or, under .satfinite, is clamped to INT32_MIN..INT32_MAX
at the end or after every block of L terms (`sat_at`); b1 operands give popc(a XOR/AND b).

Source: [Xie2025] Algorithms 1-11; the TR/GTR tail "mmasim": mmasim 2.1.1 arithmetic/fdpa.py
(tr_fdpa, gtr_fdpa); parameters are chosen per instruction by theories/;
integer semantics: PTX ISA 9.7.14.5.14 (Integer operations, .satfinite).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from . import fp, trace
from .bits import BV, Bool, bitlen, bvmax, clz, ite
from .fp import Format, Unpacked, decode, fmt, round_to
from .trace import record

__all__ = [
    "Term", "RHO", "rho_of", "t_fdpa", "st_fdpa", "gst_fdpa", "e_fdpa", "tr_fdpa", "gtr_fdpa",
    "ftz_add", "ftz_mul", "fma_chain", "ftz_addmul", "fdpa_chain", "fpu_dot", "recast", "flush_in",
    "NVIDIA_NAN", "int_chain", "INT32_MIN", "INT32_MAX", "SAT_AT", "SAT", "TR_TAILS",
    "TR_EMIN", "zero_key", "int_terms", "tr_tail", "recode", "product", "operand",
]

#: NVIDIA's canonical NaN of each output format ([Xie2025] sec. 4.2).
NVIDIA_NAN = {"f32": 0x7FFFFFFF, "f16": 0x7FFF, "bf16": 0x7FFF, "f64": 0x7FFFFFFFFFFFFFFF}

#: Output conversion functions of [Xie2025] Table 2: name -> (format, rounding mode).
RHO = {
    "RZ-FP32": ("f32", "RZ"),
    "RZ-E8M13": ("e8m13", "RZ"),
    "RNE-FP32": ("f32", "RNE"),
    "RNE-FP16": ("f16", "RNE"),
    "RNE-BF16": ("bf16", "RNE"),
}


def rho_of(rho: str) -> tuple[Format, str, Format]:
    """(rounding format, mode, storage format of the result) of a conversion function."""
    try:
        name, mode = RHO[rho]
    except KeyError:
        raise ValueError(f"unknown output conversion {rho!r}; expected one of {', '.join(RHO)}") from None
    f = fmt(name)
    return f, mode, fmt("f32") if f.name == "e8m13" else f


# ------------------------------------------------------------------------------------------
# Terms: exact products and the accumulator, before alignment.
# ------------------------------------------------------------------------------------------

@dataclass
class Term:
    """value = (-1)^sign * sig * 2^(e - fb); fb (fraction bits of sig) is static."""

    sign: Bool
    e: BV
    sig: BV
    fb: int
    zero: Bool
    inf: Bool
    nan: Bool


def _read(f: Format, x: BV, tf32_round: str) -> Unpacked:
    """Decode an input element; a tf32 container is first rounded from its f32 bits when the
    hardware is believed to round rather than truncate (parameter `tf32_round`)."""
    if f.name == "tf32" and tf32_round != "RZ":
        u32 = decode("f32", x)
        x = round_to("tf32", u32.sign, u32.exp - 23, u32.sig, tf32_round)
        # Inf stays Inf; a NaN stays a NaN (quiet bit 22 set: bits & 0xFFFFE000 alone turned
        # an f32 NaN whose payload lies in the low 13 bits, e.g. 0x7F800001, into Inf).
        special = (u32.bits & 0xFFFFE000) | ite(u32.nan, x.k.const(0x00400000, 32, False),
                                                x.k.const(0, 32, False))
        x = ite(u32.nan | u32.inf, special, x)
    return decode(f, x)


def product(x: Unpacked, y: Unpacked) -> Term:
    ew = max(x.exp.w, y.exp.w) + 1
    p = x.sig.w + y.sig.w
    zero = x.zero | y.zero
    return Term(
        sign=x.sign ^ y.sign,
        e=x.exp.resize(ew) + y.exp.resize(ew),
        sig=x.sig.resize(p) * y.sig.resize(p),
        fb=x.fmt.t + y.fmt.t,
        zero=zero,
        inf=(x.inf | y.inf) & ~zero,
        nan=x.nan | y.nan | ((x.inf | y.inf) & zero),
    )


def operand(x: Unpacked) -> Term:
    return Term(x.sign, x.exp, x.sig, x.fmt.t, x.zero, x.inf, x.nan)


def _common_e(terms: Sequence[Term]) -> int:
    return max(t.e.w for t in terms) + 3


def zero_key(K, zero: Bool, e: BV, ew: int, zero_exp) -> BV:
    """The exponent a term takes in e_max: its own, or for a zero term per `zero_exp`:
    "excluded" (below every real exponent), "field" (Exp() of its fields, i.e. e itself), or
    an int (a fixed exponent; mmasim 2.1.1 uses e.g. -133 for f32 output)."""
    if zero_exp == "field":
        return e
    if zero_exp == "excluded":
        return ite(zero, K.const(-(1 << (ew - 3)), ew, True), e)
    if isinstance(zero_exp, int) and not isinstance(zero_exp, bool):
        if not -(1 << (ew - 3)) < zero_exp < (1 << (ew - 3)):
            raise ValueError(f"zero_exp {zero_exp} is out of range")
        return ite(zero, K.const(zero_exp, ew, True), e)
    raise ValueError(f"zero_exp must be 'excluded', 'field' or an int, got {zero_exp!r}")


def _emax(terms: Sequence[Term], ew: int, zero_exp) -> tuple[list[BV], BV]:
    """Exponents widened to ew, and their max; zero terms per `zero_exp` (see zero_key)."""
    K = terms[0].sig.k
    ew = max(ew, bitlen(abs(zero_exp)) + 5) if isinstance(zero_exp, int) and not isinstance(zero_exp, bool) else ew
    es = [t.e.resize(ew) for t in terms]
    keyed = [zero_key(K, t.zero, e, ew, zero_exp) for t, e in zip(terms, es)]
    m = keyed[0]
    for e in keyed[1:]:
        m = bvmax(m, e)
    return es, m


def _align(t: Term, e: BV, emax: BV, F: int, width: int, mode: str) -> BV:
    """The term aligned at emax in units of 2^(emax - F), rounded RZ (truncated toward zero)
    or RD (toward -infinity), as a signed vector of `width` bits."""
    K = t.sig.k
    ls = max(0, F - t.fb)
    rs = max(0, t.fb - F)
    mw = t.sig.w + ls
    mag = t.sig.resize(mw) << ls if ls else t.sig
    d = emax - e
    d = ite(d < 0, K.const(0, d.w, True), d) + rs          # zero terms may sit above emax
    du = d.bitcast(False)
    if mode == "RZ":
        q = (mag >> du).resize(width, True)
        return ite(t.sign, -q, q)
    if mode == "RD":
        sv = mag.resize(mw + 1, True)
        sv = ite(t.sign, -sv, sv)
        return (sv >> du).resize(width, True)
    raise ValueError(f"alignment rounding must be RZ or RD, got {mode!r}")


def _sum_width(terms: Sequence[Term], F: int) -> int:
    ib = max(t.sig.w - t.fb for t in terms)           # integer bits of the fixed-point values
    return F + max(ib, 0) + max(0, -min(t.fb - F for t in terms)) * 0 + bitlen(len(terms)) + 2


def fused_sum(terms: Sequence[Term], F: int, mode: str = "RZ", zero_exp: str = "excluded"):
    """Algorithm 7 step 2: align every term at e_max, round each to F fraction bits (RZ or
    RD) and add exactly. Returns (S, e_max) with the sum = S * 2^(e_max - F)."""
    ew = _common_e(terms)
    es, emax = _emax(terms, ew, zero_exp)
    width = _sum_width(terms, F)
    record(trace.FusedSum(list(terms), es, emax, F, mode))
    S = None
    for t, e in zip(terms, es):
        a = _align(t, e, emax, F, width, mode)
        record(trace.Aligned(a))
        S = a if S is None else S + a
    record(trace.Sum(S))
    return S, emax


def _zero_sign(terms: Sequence[Term]) -> Bool:
    """IEEE sum-of-zeros rule: -0 only when every term is a zero of negative sign."""
    r = None
    for t in terms:
        z = t.zero & t.sign
        r = z if r is None else (r & z)
    return r


def _special(out: Format, finite: BV, terms: Sequence[Term], nan_code: int) -> BV:
    """[Xie2025] sec. 4.2: NaN in, Inf*0 or Inf-Inf -> NaN; else an Inf term -> that Inf."""
    K = finite.k
    nan = None
    pinf = None
    ninf = None
    for t in terms:
        nan = t.nan if nan is None else nan | t.nan
        pi, ni = t.inf & ~t.sign, t.inf & t.sign
        pinf = pi if pinf is None else pinf | pi
        ninf = ni if ninf is None else ninf | ni
    nan = nan | (pinf & ninf)
    infc = out.inf_code << out.pad
    r = ite(pinf, K.const(infc, out.storage, False), finite)
    r = ite(ninf, K.const(infc | (out.sign_bit << out.pad), out.storage, False), r)
    record(trace.Special(nan, pinf, ninf, finite))
    return ite(nan, K.const(nan_code, out.storage, False), r)


def _convert(S: BV, scale_exp: BV, rho: str, zero_sign: Bool, overflow: str,
             zero_rule: str = "ieee") -> BV:
    """rho(S * 2^scale_exp) with the sign-of-zero rule for a zero result.

    zero_rule "ieee": an exact zero S is -0 only when every term was a negative zero, and a
    nonzero S that rounds to zero keeps its sign; "positive": every zero result is +0
    (Source: H200 campaign 2026-11-21, counterexamples/hw/; mmasim 2.1.1 does the same)."""
    rf, mode, out = rho_of(rho)
    if zero_rule not in ("ieee", "positive"):
        raise ValueError(f"zero_sign must be 'ieee' or 'positive', got {zero_rule!r}")
    sign = ite(S == 0, zero_sign, S < 0)
    record(trace.Convert(rho, S, scale_exp, zero_sign))
    r = round_to(rf, sign, scale_exp, S.abs(), mode, overflow=overflow)
    if zero_rule == "positive":
        mag = (out.sign_bit << out.pad) ^ ((1 << out.storage) - 1)
        r = ite((r & mag) == 0, r.k.const(0, out.storage, False), r)
    return r


def _default_nan(rho: str, nan) -> int:
    _, _, out = rho_of(rho)
    if nan is None:
        return NVIDIA_NAN.get(out.name, fp.default_nan(out))
    return int(nan)


def _decode_all(fa: Format, a: Sequence[BV], tf32_round: str) -> list[Unpacked]:
    return [_read(fa, x, tf32_round) for x in a]


def _check_lengths(a, b, L=None):
    if len(a) != len(b):
        raise ValueError(f"a and b must have the same length, got {len(a)} and {len(b)}")
    if L is not None and len(a) != L:
        raise ValueError(f"expected vectors of length L={L}, got {len(a)}")


# ------------------------------------------------------------------------------------------
# The FDPA family.
# ------------------------------------------------------------------------------------------

def t_fdpa(a: Sequence[BV], b: Sequence[BV], c: BV, fa: "str | Format", fb: "str | Format",
           fc: "str | Format", F: int, rho: str, zero_exp: str = "excluded", nan=None,
           overflow: str = "ieee", tf32_round: str = "RZ", zero_sign: str = "ieee") -> BV:
    """Truncated fused dot-product-add (Algorithm 7): d = rho(sum RZ_F-aligned terms)."""
    fa, fb, fc = fmt(fa), fmt(fb), fmt(fc)
    _check_lengths(a, b)
    xs, ys = _decode_all(fa, a, tf32_round), _decode_all(fb, b, tf32_round)
    terms = [product(x, y) for x, y in zip(xs, ys)] + [operand(decode(fc, c))]
    return _fdpa_tail(terms, F, rho, zero_exp, nan, overflow, zero_sign)


def _fdpa_tail(terms, F, rho, zero_exp, nan, overflow, zero_sign="ieee") -> BV:
    S, emax = fused_sum(terms, F, "RZ", zero_exp)
    _, _, out = rho_of(rho)
    ew = max(emax.w, bitlen(F) + 2) + 1
    fin = _convert(S, emax.resize(ew) - F, rho, _zero_sign(terms), overflow, zero_sign)
    return _special(out, fin, terms, _default_nan(rho, nan))


def st_fdpa(a, b, c, fa, fb, fc, scale_a: Sequence[BV], scale_b: Sequence[BV], F: int, rho: str,
            fs: str = "ue8m0", zero_exp: str = "excluded", nan=None, overflow: str = "ieee",
            zero_sign: str = "ieee") -> BV:
    """Scaled truncated FDPA (Algorithm 8): per-product scale exponents added to e_k.
    scale_a[k], scale_b[k] are the scale elements that apply to position k."""
    fa, fb, fc, fsf = fmt(fa), fmt(fb), fmt(fc), fmt(fs)
    _check_lengths(a, b)
    terms = []
    for x, y, sx, sy in zip(a, b, scale_a, scale_b):
        t = product(decode(fa, x), decode(fb, y))
        ua, ub = decode(fsf, sx), decode(fsf, sy)
        ew = max(t.e.w, ua.exp.w) + 2
        e = t.e.resize(ew) + ua.exp.resize(ew) + ub.exp.resize(ew)
        sig = t.sig.resize(t.sig.w + 2 * fsf.p) * (ua.sig.resize(t.sig.w + 2 * fsf.p)
                                                     * ub.sig.resize(t.sig.w + 2 * fsf.p))
        t = Term(t.sign, e, sig, t.fb + 2 * fsf.t, t.zero | ua.zero | ub.zero, t.inf,
                 t.nan | ua.nan | ub.nan)
        terms.append(t)
    terms.append(operand(decode(fc, c)))
    return _fdpa_tail(terms, F, rho, zero_exp, nan, overflow, zero_sign)


def _exact_group(prods: Sequence[Term]) -> tuple[BV, int, Bool, Bool, Bool, Bool]:
    """Exact fixed-point sum of products whose exponents have a static range: the sum as a
    signed integer in units of 2^(emin_static - fb), and its flags."""
    lo_e = min(_static_min(t) for t in prods)
    hi_e = max(_static_max(t) for t in prods)
    span = hi_e - lo_e
    width = prods[0].sig.w + span + bitlen(len(prods)) + 2
    S = None
    vs = []
    for t in prods:
        sh = (t.e.resize(t.e.w + 1) - lo_e).bitcast(False)
        v = t.sig.resize(width, False)
        v = v << sh
        v = v.resize(width, True)
        v = ite(t.sign, -v, v)
        vs.append(v)
        S = v if S is None else S + v
    # each product's fixed-point value v (|v| < 2^(sig.w + span)) and their wrap-free sum
    record(trace.ExactGroup(S, vs, list(prods), prods[0].sig.w + span))
    nan = inf_p = inf_n = None
    allz = None
    for t in prods:
        nan = t.nan if nan is None else nan | t.nan
        ip, ineg = t.inf & ~t.sign, t.inf & t.sign
        inf_p = ip if inf_p is None else inf_p | ip
        inf_n = ineg if inf_n is None else inf_n | ineg
        z = t.zero & t.sign
        allz = z if allz is None else allz & z
    return S, lo_e, nan, inf_p, inf_n, allz


def _static_min(t: Term) -> int:
    return getattr(t, "_emin", None) if getattr(t, "_emin", None) is not None else -(1 << (t.e.w - 1))


def _static_max(t: Term) -> int:
    return getattr(t, "_emax", None) if getattr(t, "_emax", None) is not None else (1 << (t.e.w - 1)) - 1


def _product_static(x: Unpacked, y: Unpacked) -> Term:
    t = product(x, y)
    t._emin = x.fmt.emin + y.fmt.emin          # type: ignore[attr-defined]
    t._emax = x.fmt.emax + y.fmt.emax          # type: ignore[attr-defined]
    return t


def gst_fdpa(a, b, c, fa, fb, fc, scale_a: Sequence[BV], scale_b: Sequence[BV], G: int, F: int,
             rho: str, fs: str = "ue4m3", zero_exp: str = "excluded", nan=None,
             overflow: str = "ieee", zero_sign: str = "ieee", zero_group: str = "sum") -> BV:
    """Group-scaled truncated FDPA (Algorithm 9): exact dot products of G consecutive
    products, each multiplied by its scale pair's significands, then fused and truncated.
    scale_a[g], scale_b[g] apply to group g.

    `zero_group` says which group term counts as a zero term (for `zero_exp`): "sum" (its
    exact sum is zero, or a scale is zero) or "products" (all G products are zero, or a scale
    is zero: a group whose products cancel keeps its scale exponent in e_max; Source: mmasim
    2.1.1 arithmetic/fdpa.py gst_fdpa, "zeros resulted from summation do not apply e_zero")."""
    if zero_group not in ("sum", "products"):
        raise ValueError(f"zero_group must be 'sum' or 'products', got {zero_group!r}")
    fa, fb, fc, fsf = fmt(fa), fmt(fb), fmt(fc), fmt(fs)
    _check_lengths(a, b)
    if len(a) % G:
        raise ValueError(f"vector length {len(a)} is not a multiple of G={G}")
    terms = []
    for g in range(len(a) // G):
        prods = [_product_static(decode(fa, a[k]), decode(fb, b[k])) for k in range(g * G, (g + 1) * G)]
        P, lo_e, nan_g, ip, ineg, allz = _exact_group(prods)
        ua, ub = decode(fsf, scale_a[g]), decode(fsf, scale_b[g])
        w = P.w + 2 * fsf.p + 1
        sig = P.abs().resize(w) * (ua.sig.resize(w) * ub.sig.resize(w))
        ew = max(ua.exp.w, bitlen(abs(lo_e)) + 2) + 2
        e = ua.exp.resize(ew) + ub.exp.resize(ew)
        # value = P * 2^(lo_e - fbp) * sa * 2^(ea - t) * sb * 2^(eb - t)
        fbt = prods[0].fb + 2 * fsf.t - lo_e
        # Sign of the group term: that of P; an exactly zero P is -0 only when every product
        # of the group is -0 (IEEE sum of zeros), so the sign-of-zero rule of the fused sum
        # sees it. (Bug fixed: allz was computed but unused, so such a group counted as +0
        # and e.g. all -0 products with c = -0 gave +0 instead of -0.)
        # An Inf group (inputs with Inf, e.g. e5m2) takes the sign of its Inf products.
        sign = ite(ip, False, ite(ineg, True, ite(P == 0, allz, P < 0)))
        if zero_group == "sum":
            gzero = P == 0
        else:
            gzero = prods[0].zero
            for t in prods[1:]:
                gzero = gzero & t.zero
        terms.append(Term(sign, e, sig, fbt, gzero | ua.zero | ub.zero,
                          ip | ineg, nan_g | (ip & ineg) | ua.nan | ub.nan))
        record(trace.Group(terms[-1], P, gzero, allz, nan_g, ip, ineg, (scale_a[g], scale_b[g])))
    terms.append(operand(decode(fc, c)))
    return _fdpa_tail(terms, F, rho, zero_exp, nan, overflow, zero_sign)


def e_fdpa(a, b, c, fa, fb, fc="f32", out="f32", mode: str = "RNE", nan="default") -> BV:
    """Exact FDPA (Algorithm 6): one rounding of c + sum a_k b_k computed exactly."""
    fa, fb, fc, fo = fmt(fa), fmt(fb), fmt(fc), fmt(out)
    _check_lengths(a, b)
    prods = [_product_static(decode(fa, x), decode(fb, y)) for x, y in zip(a, b)]
    P, lo_e, nan_p, ip, ineg, allz = _exact_group(prods)
    z = decode(fc, c)
    K = c.k
    fbp = prods[0].fb
    ew = max(z.exp.w, bitlen(abs(lo_e) + fbp + fc.t) + 2) + 2
    s = fp.add_exact(P < 0, K.const(lo_e - fbp, ew, True), P.abs(), z.sign,
                     z.exp.resize(ew) - fc.t, z.sig, p_min=fo.p + 2)
    zs = allz & (z.zero & z.sign)
    zero_sign = fp.zero_sum_sign(zs, zs, fp.mode_flags(mode))
    sign = ite(s.zero, ite(allz & z.zero, zs, ite(P == 0, ite(z.zero, allz, z.sign), K.bconst(mode == "RD"))), s.sign)
    fin = round_to(fo, sign, s.exp, s.sig, mode, s.sticky)
    terms_nan = nan_p | z.nan | (ip & ineg)
    pinf = ip | (z.inf & ~z.sign)
    ninf = ineg | (z.inf & z.sign)
    record(trace.EFdpa(P, lo_e - fbp, fin, terms_nan, pinf, ninf))
    nan_code = fp.default_nan(fo) if nan == "default" else int(nan)
    r = ite(pinf, K.const(fo.inf_code << fo.pad, fo.storage, False), fin)
    r = ite(ninf, K.const((fo.inf_code | fo.sign_bit) << fo.pad, fo.storage, False), r)
    return ite(terms_nan | (pinf & ninf), K.const(nan_code, fo.storage, False), r)


def _tr_products(a, b, fa, fb) -> list[Term]:
    """TR/GTR-FDPA products, with overflow to Inf when |s_k 2^e_k| >= 2^128 (sec. 4.2)."""
    out = []
    for x, y in zip(a, b):
        t = product(decode(fa, x), decode(fb, y))
        lead = t.e.resize(t.e.w + 2) + (t.sig.w - 1 - t.fb) - clz(t.sig).resize(t.e.w + 2, True)
        over = ~t.zero & ~t.nan & (lead >= 128)
        out.append(Term(t.sign, t.e, t.sig, t.fb, t.zero, t.inf | over, t.nan))
    return out


def _rd_shift(x: BV, left: int, right: BV, width: int) -> BV:
    """floor(x * 2^left / 2^right) for a signed x, as `width` bits."""
    v = x.resize(width, True)
    v = v << left if left else v
    r = ite(right < 0, right.k.const(0, right.w, True), right).bitcast(False)
    return v >> r


def _rz_shift(x: BV, left: int, right: BV, width: int) -> BV:
    """trunc(x * 2^left / 2^right) (toward zero) for a signed x, as `width` bits: the
    symmetric twin of `_rd_shift` ([Xie2025] sec. 6.2.4, the hypothetical RZ instruction)."""
    v = x.resize(width, True)
    v = v << left if left else v
    r = ite(right < 0, right.k.const(0, right.w, True), right).bitcast(False)
    q = (v.abs() >> r).bitcast(True)
    return ite(v < 0, -q, q)


#: Readings of the TR/GTR-FDPA tail (Algorithm 10 lines 14-17, Algorithm 11 lines 22-27), the
#: parameter `tail` of tr_fdpa and gtr_fdpa:
#: "algorithm"  [Xie2025]'s text: T' = RD(T) at 2^(E-F2), S = T' + s'_c, RNE to f32;
#: "mmasim"     the code of mmasim 2.1.1 (the authors' simulator, validated by them on an MI300):
#:              T' = RD(T) at 2^(E-F2-1); S = T' + s'_c renormalised to [1,2) 2^e' with
#:              e' >= -126 (f32's emin) and rounded down to F2 fraction bits of that
#:              significand; then RNE to f32. Source: mmasim 2.1.1 arithmetic/fdpa.py, tr_fdpa
#:              and gtr_fdpa (torch.floor at 2.0**-(F2+1); frexp_and_normalize(...,
#:              e_subnormal=-126); torch.floor at 2.0**-F2). mmasim also gives a zero c the
#:              exponent -126 in E (frexp_and_normalize of an f32 zero); under this tail that
#:              is unobservable (the renormalised floor is on a grid of at least 2^(-126-F2),
#:              coarser than where a zero c would move T' when e_max < -126), so it is no
#:              part of the reading and `zero_exp` stays a separate parameter.
TR_TAILS = ("algorithm", "mmasim")
#: f32's emin: the lowest exponent of mmasim's renormalisation of S (e_subnormal=-126)
TR_EMIN = -126


def _tr_renorm(S: BV, E: BV, G: int, F2: int, shift) -> tuple[BV, BV]:
    """The renormalising round of tail "mmasim": S in units 2^(E-G) rounded (`shift`: RD, or
    RZ for the symmetric twin) to F2 fraction bits of its significand normalised with
    e' = max(floor(log2 |S 2^(E-G)|), TR_EMIN). Returns (q, X) with the result = q 2^X.
    In units: e' - F2 - (E - G) = max(p - F2, TR_EMIN - F2 + G - E) =: k with p the position
    of the leading one of |S|; k <= 0 keeps S as it is."""
    K = S.k
    W = S.w
    kw = max(E.w, bitlen(W) + 2, bitlen(abs(TR_EMIN - F2 + G)) + 2) + 3
    p = K.const(W - 1, kw, True) - clz(S.abs()).resize(kw, True)
    k = bvmax(p - F2, K.const(TR_EMIN - F2 + G, kw, True) - E.resize(kw))
    k = ite(k < 0, K.const(0, kw, True), k)
    q = shift(S, 0, k, W)
    record(trace.TrRenorm(S, k, q))
    return q, E.resize(kw) - G + k


def tr_tail(T: BV, emax: BV, F: int, F2: int, c: Unpacked, terms: list[Term], zero_exp: str,
             nan, special_trunc: bool, align_round: str = "RD", tail: str = "algorithm") -> BV:
    """The tail of TR/GTR-FDPA after the fused sum T 2^(emax-F): align T and c at
    E = max(emax, Exp c), add, convert RNE-FP32; `tail` picks the reading (TR_TAILS)."""
    K = T.k
    if align_round not in ("RD", "RZ"):
        raise ValueError(f"align_round must be 'RD' or 'RZ', got {align_round!r}")
    if tail not in TR_TAILS:
        raise ValueError(f"tail must be one of {', '.join(TR_TAILS)}, got {tail!r}")
    _shift = _rd_shift if align_round == "RD" else _rz_shift
    G = F2 if tail == "algorithm" else F2 + 1        # fraction bits of T' (units 2^(E-G))
    ew = max(emax.w, c.exp.w) + 3
    ct = operand(c)
    ec = c.exp.resize(ew)
    eck = zero_key(K, c.zero, ec, ew, zero_exp)
    em = emax.resize(ew)
    E = bvmax(em, eck)
    W = max(T.w + (G - F), F + 4) + 4
    Tp = _shift(T, G - F, E - em, W)                              # RD_G, units 2^(E - G)
    sc = ite(c.sign, -c.sig.resize(c.sig.w + 1, True), c.sig.resize(c.sig.w + 1, True))
    ls = F - c.fmt.t
    if ls >= 0:
        sc_al = _shift(sc, ls, E - ec, W)                         # RD_F, units 2^(E - F)
    else:
        sc_al = _shift(sc, 0, E - ec - ls, W)
    if special_trunc:
        sc_al = ite(ec < E - F - 1, K.const(0, W, True), sc_al)
    S = Tp + (sc_al << (G - F))
    record(trace.TrTail(T, emax, E, Tp, sc_al, F, F2, tail))
    X = E - G
    if tail == "mmasim":
        S, X = _tr_renorm(S, E, G, F2, _shift)
    fin = _convert(S, X, "RNE-FP32", _zero_sign(terms + [ct]), "ieee")
    return _special(fmt("f32"), fin, terms + [ct], fp.default_nan("f32") if nan is None else int(nan))


def tr_fdpa(a, b, c, fa, fb, F: int, F2: int, zero_exp: str = "excluded", nan=None,
            fc: str = "f32", align_round: str = "RD", tail: str = "algorithm") -> BV:
    """Truncated rounded FDPA (Algorithm 10, AMD CDNA3 tf32/bf16/f16).

    align_round: the rounding of T and s_c when aligned at E (Algorithm 10 lines 14-15):
    "RD" as the hardware ([Xie2025]), "RZ" for the symmetric hypothetical twin of sec. 6.2.4
    (under tail "mmasim" the renormalising round becomes RZ too).
    tail: "algorithm" ([Xie2025]'s text) or "mmasim" (mmasim 2.1.1's code); see TR_TAILS."""
    fa, fb = fmt(fa), fmt(fb)
    _check_lengths(a, b)
    prods = _tr_products(a, b, fa, fb)
    T, emax = fused_sum(prods, F, "RZ", zero_exp)
    return tr_tail(T, emax, F, F2, decode(fc, c), prods, zero_exp, nan, special_trunc=False,
                    align_round=align_round, tail=tail)


def gtr_fdpa(a, b, c, fa, fb, F: int, F2: int, zero_exp: str = "excluded", nan=None,
             fc: str = "f32", tail: str = "algorithm") -> BV:
    """Group-truncated rounded FDPA (Algorithm 11, AMD CDNA3 fp8).
    tail: "algorithm" ([Xie2025]'s text) or "mmasim" (mmasim 2.1.1's code); see TR_TAILS."""
    fa, fb = fmt(fa), fmt(fb)
    _check_lengths(a, b)
    if len(a) % 2:
        raise ValueError("GTR-FDPA needs an even vector length")
    prods = _tr_products(a, b, fa, fb)
    Te, ee = fused_sum(prods[0::2], F, "RZ", zero_exp)
    To, eo = fused_sum(prods[1::2], F, "RZ", zero_exp)
    ew = max(ee.w, eo.w) + 1
    ee, eo = ee.resize(ew), eo.resize(ew)
    emax = bvmax(ee, eo)
    W = max(Te.w, To.w) + 2
    T = _rd_shift(Te, 0, emax - ee, W) + _rd_shift(To, 0, emax - eo, W)
    record(trace.GtrGroups(Te, ee, To, eo, T, emax))
    return tr_tail(T, emax, F, F2, decode(fc, c), prods, zero_exp, nan, special_trunc=True,
                    tail=tail)


# ------------------------------------------------------------------------------------------
# Binary operations and chains.
# ------------------------------------------------------------------------------------------

def flush_in(u: Unpacked) -> Unpacked:
    """FlushSubnormal: a subnormal input becomes +0 ([Xie2025] Algorithm 2, lines 1-3)."""
    K = u.sig.k
    sub = ~u.zero & (u.sig < (1 << u.fmt.t)) & u.finite
    return Unpacked(u.fmt, ite(sub, K.bconst(False), u.sign), u.exp,
                    ite(sub, K.const(0, u.sig.w, False), u.sig), u.zero | sub, u.inf, u.nan, u.bits)


def _ftz_out(z: BV, out: Format) -> BV:
    """Output flushing: a result with |z| < 2^emin becomes a zero of the same sign."""
    u = decode(out, z)
    sub = ~u.zero & (u.sig < (1 << out.t)) & u.finite
    return ite(sub, z & (out.sign_bit << out.pad), z)


def ftz_mul(x: Unpacked, y: Unpacked, out: str = "f32", nan="default") -> BV:
    """FTZ-Mul (Algorithm 1): RNE-FP32(x*y), then flush a subnormal result to a signed zero."""
    fo = fmt(out)
    t = product(x, y)
    ew = max(t.e.w, 4) + 2
    fin = round_to(fo, t.sign, t.e.resize(ew) - t.fb, t.sig, "RNE")
    fin = _ftz_out(fin, fo)
    return _ieee_special(fo, fin, [operand(x), operand(y)], t.nan, t.inf, t.sign, nan)


def ftz_add(x: Unpacked, y: Unpacked, out: str = "f32", nan="default", mode: str = "RNE") -> BV:
    """FTZ-Add (Algorithm 1): RNE-FP32(x+y), then flush a subnormal result to a signed zero.
    (mode: another rounding, for the broken twin of a symmetry proof only.)"""
    fo = fmt(out)
    ew = max(x.exp.w, y.exp.w) + 2
    s = fp.add_exact(x.sign, x.exp.resize(ew) - x.fmt.t, x.sig, y.sign, y.exp.resize(ew) - y.fmt.t,
                     y.sig, p_min=fo.p)
    sign = ite(s.zero, ite(x.sign ^ y.sign, x.sign.k.bconst(False), x.sign), s.sign)
    fin = _ftz_out(round_to(fo, sign, s.exp, s.sig, mode, s.sticky), fo)
    nanc = x.nan | y.nan | (x.inf & y.inf & (x.sign ^ y.sign))
    return _ieee_special(fo, fin, [operand(x), operand(y)], nanc, x.inf | y.inf,
                         ite(x.inf, x.sign, y.sign), nan)


def _ieee_special(fo: Format, fin: BV, terms, nanc: Bool, inf: Bool, inf_sign: Bool, nan) -> BV:
    K = fin.k
    code = fp.default_nan(fo) if nan == "default" else int(nan)
    infb = ite(inf_sign, K.const((fo.inf_code | fo.sign_bit) << fo.pad, fo.storage, False),
               K.const(fo.inf_code << fo.pad, fo.storage, False))
    return ite(nanc, K.const(code, fo.storage, False), ite(inf, infb, fin))


def ftz_addmul(a: Sequence[BV], b: Sequence[BV], c: BV, fa, fb, P: int, fc: str = "f32",
               nan="default") -> BV:
    """Phi_FTZ-AddMul (Algorithm 2): pairwise FTZ-Add of P products, then accumulation."""
    fa, fb, fc = fmt(fa), fmt(fb), fmt(fc)
    _check_lengths(a, b)
    if P not in (2, 4) or len(a) % P:
        raise ValueError(f"P must be 2 or 4 and divide K, got P={P}, K={len(a)}")
    f32 = fmt(fc)
    d = decode(f32, c)
    d = decode(f32, recode(flush_in(d)))
    for k in range(0, len(a), P):
        ps = [decode(f32, ftz_mul(flush_in(decode(fa, a[k + l])), flush_in(decode(fb, b[k + l])), fc.name, nan))
              for l in range(P)]
        s = ftz_add(ps[0], ps[1], fc.name, nan)
        if P == 4:
            s2 = ftz_add(ps[2], ps[3], fc.name, nan)
            s = ftz_add(decode(f32, s), decode(f32, s2), fc.name, nan)
        d = decode(f32, ftz_add(d, decode(f32, s), fc.name, nan))
        record(trace.FtzStep(k, P, s, d))
    return recode(d)


def recode(u: Unpacked) -> BV:
    """Re-encode an Unpacked (exactly representable) as a storage element."""
    f = u.fmt
    fin = round_to(f, u.sign, u.exp - f.t, u.sig, "RNE")
    K = u.sig.k
    infb = ite(u.sign, K.const((f.inf_code | f.sign_bit) << f.pad, f.storage, False),
               K.const(f.inf_code << f.pad, f.storage, False)) if f.inf else fin
    return ite(u.nan, f_nan_bits(u), ite(u.inf, infb, fin))


def f_nan_bits(u: Unpacked) -> BV:
    return u.bits.resize(u.fmt.storage) << u.fmt.pad if u.fmt.pad else u.bits.resize(u.fmt.storage)


def fma_chain(a: Sequence[BV], b: Sequence[BV], c: BV, f: str, mode: str = "RNE", nan="default") -> BV:
    """Phi_FMA (Algorithm 4): d = fma(a_k, b_k, d) for k = 0 .. K-1."""
    _check_lengths(a, b)
    d = c
    for i, (x, y) in enumerate(zip(a, b)):
        d = fp.fma(f, x, y, d, mode, nan)
        record(trace.FmaStep(i, d))
    return d


def fpu_dot(a: Sequence[BV], b: Sequence[BV], c: BV, f: str, fc: str, out: str, G: int,
            first: str = "fma0", nan="default") -> BV:
    """An MMA that the compiler emulates on the FP32 pipe (no tensor-core instruction).

    a, b hold format-f operands (exactly converted by the theory), c is of format fc (converted
    exactly to f here). K is cut into groups of G consecutive k; each group is one FMA chain in
    k order that starts with ``first``: "mul" = mul(a0, b0), "fma0" = fma(a0, b0, +0). The
    accumulator starts at c and each group's result is added to it in turn (IEEE add); the sum
    is rounded (RNE) to ``out``. Every step is RNE in f with NaN policy ``nan``.

    Source: SASS of f16 mma.m8n8k4 for sm_90a (nvcc 13.0; mmaformal/hw/SASS.md): .f32 D is
    FFMA(a0,b0,RZ), three FFMA, then FADD with C (G = 4, "fma0"); .f16 D is FMUL + FFMA per
    k pair, FADD of C and pair 0, FADD of pair 1, F2FP.F16.F32 (G = 2, "mul").
    """
    _check_lengths(a, b)
    if len(a) % G:
        raise ValueError(f"K={len(a)} is not a multiple of G={G}")
    if first not in ("mul", "fma0"):
        raise ValueError(f"first must be \"mul\" or \"fma0\", got {first!r}")
    ff, fcc, fo = fmt(f), fmt(fc), fmt(out)
    K = c.k
    acc = recast(c, fcc, ff) if fcc is not ff else c
    zero = K.const(0, ff.storage, False)
    for g in range(0, len(a), G):
        s = fp.mul(ff, a[g], b[g], "RNE", nan) if first == "mul" else \
            fp.fma(ff, a[g], b[g], zero, "RNE", nan)
        for i in range(g + 1, g + G):
            s = fp.fma(ff, a[i], b[i], s, "RNE", nan)
        record(trace.FpuGroup(g, s))
        acc = fp.add(ff, acc, s, "RNE", nan)
        record(trace.FpuAcc(acc))
    if fo is not ff:
        acc = recast(acc, ff, fo)
    return acc


def recast(x: BV, fs: Format, fd: Format) -> BV:
    """RNE conversion between formats (exact when widening: HADD2.F32 of an f16; F2FP.F16.F32
    when narrowing); a NaN becomes fd's NVIDIA canonical NaN."""
    u = decode(fs, x)
    fin = round_to(fd, u.sign, u.exp - fs.t, u.sig, "RNE")
    code = x.k.const(NVIDIA_NAN.get(fd.name, fp.default_nan(fd)), fd.storage, False)
    return fp.overlay_special(fd, fin, u.nan, code, u.inf, u.sign)


def fdpa_chain(op, a: Sequence[BV], b: Sequence[BV], c: BV, L: int, **params) -> BV:
    """Phi_FDPA (Algorithm 5): K split into blocks of L = min(K, L_max), chained through the
    accumulator in order k = 0, L, 2L, ..."""
    _check_lengths(a, b)
    K_ = len(a)
    L = min(K_, L)
    if K_ % L:
        raise ValueError(f"K={K_} is not a multiple of L={L}")
    d = c
    for k in range(0, K_, L):
        record(trace.BlockIn(k, L, d))
        d = op(a[k:k + L], b[k:k + L], d, **params)
        record(trace.BlockOut(d))
    return d


# ------------------------------------------------------------------------------------------
# Integer MMA.
# ------------------------------------------------------------------------------------------

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
#: Where .satfinite clamps: "end" (the exact c + sum a_k b_k, once: the PTX ISA statement) or
#: "step" (after each block of L terms is added to the running accumulator).
SAT_AT = ("end", "step")
#: Whether the result is clamped: "qualifier" (as the instruction says: .satfinite clamps,
#: else wrap; the PTX statement), "always" or "never" (hypotheses that the hardware ignores
#: the qualifier; also the broken twins of integer proofs).
SAT = ("qualifier", "always", "never")


def int_terms(a, b, fa, fb, bop: str, width: int) -> list[BV]:
    """Exact products a_k * b_k (b1: the bit a_k XOR/AND b_k) as signed `width`-bit vectors."""
    out = []
    for x, y in zip(a, b):
        if fa.name == "b1" or fb.name == "b1":
            if fa.name != fb.name:
                raise ValueError("b1 operands go together")
            xa, xb = x.extract(0, 0), y.extract(0, 0)
            if bop == "xor":
                r = xa ^ xb
            elif bop == "and":
                r = xa & xb
            else:
                raise ValueError(f"b1 operands need bop 'xor' or 'and', got {bop!r}")
            out.append(r.resize(width, True))
        else:
            if bop:
                raise ValueError(f"bop {bop!r} is for b1 operands only")
            va, vb = fp.int_value(fa, x), fp.int_value(fb, y)
            pw = va.w + vb.w
            out.append((va.resize(pw, True) * vb.resize(pw, True)).resize(width, True))
    return out


def int_chain(a: Sequence[BV], b: Sequence[BV], c: BV, fa, fb, fc, L: int, saturate: bool,
              bop: str = "", sat_at: str = "end", sat: str = "qualifier") -> BV:
    """Integer D = C + sum_k A_k B_k in s32 (Source: PTX ISA 9.7.14.5.14, Integer operations).

    The sum is exact in a static width; without `saturate` the result wraps to 32 bits (two's
    complement), with it the value is clamped to INT32_MIN..INT32_MAX: once, on the exact total
    (`sat_at` = "end"), or after each block of L = min(K, L) products is added to the running
    accumulator, k = 0, L, 2L, ... (`sat_at` = "step", the rival). `sat` overrides the
    qualifier ("always" / "never" clamp; default "qualifier"). Returns the uint32 bits."""
    fa, fb, fc = fmt(fa), fmt(fb), fmt(fc)
    _check_lengths(a, b)
    if sat_at not in SAT_AT:
        raise ValueError(f"sat_at must be one of {', '.join(SAT_AT)}, got {sat_at!r}")
    if sat not in SAT:
        raise ValueError(f"sat must be one of {', '.join(SAT)}, got {sat!r}")
    saturate = {"qualifier": bool(saturate), "always": True, "never": False}[sat]
    if not (fa.is_int and fb.is_int and fc.is_int and fc.k == 32 and fc.signed):
        raise ValueError("int_chain takes integer operands and an s32 accumulator")
    K_ = len(a)
    L = min(K_, L)
    if K_ % L:
        raise ValueError(f"K={K_} is not a multiple of L={L}")
    width = 34 + (fa.k + 1) + (fb.k + 1) + bitlen(K_)       # exact for every input
    K = c.k
    acc = fp.int_value(fc, c).resize(width, True)
    terms = int_terms(a, b, fa, fb, bop, width)
    lo = K.const(INT32_MIN, width, True)
    hi = K.const(INT32_MAX, width, True)

    def clamp(v):
        return ite(v < lo, lo, ite(hi < v, hi, v))

    step = saturate and sat_at == "step"
    for k0 in range(0, K_, L):
        S = None
        for t in terms[k0:k0 + L]:
            S = t if S is None else S + t
        record(trace.IntBlock(k0, L, acc, S))
        acc = acc + S
        if step:
            acc = clamp(acc)
        record(trace.IntAcc(acc))
    if saturate and not step:
        acc = clamp(acc)
    record(trace.IntResult(acc, saturate, sat_at))
    return acc.bitcast(False).extract(31, 0)
