"""Symbolic = concrete: the z3 term of every operation equals the NUMPY and INT results.

For every elementary operation (several parameter sets each), the term is built ONCE on
`Z3Backend` over free bit-vector variables (one per input element). hypothesis then draws
batches of inputs (each example: a seed, an input class and up to 12 lanes drawn element by
element by hypothesis, completed to 512 lanes by numpy in that class), >= 10,240 inputs per
operation in all.

How the z3 term is evaluated on 10,000+ inputs quickly and faithfully: `z3.substitute` +
`z3.simplify` costs about 0.2-2.5 ms per input and term here (some 7 minutes for 10,240
inputs x 31 operations, plus as much again for INT), so every lane is evaluated by
`SmtEval`, a small numpy interpreter of the SMT-LIB bit-vector operators that appear in the
terms (bvadd, bvmul, bvlshr, extract, ite, ...), walking the z3 DAG once per batch. The
interpreter is itself checked against z3: in every example, the first 16 lanes
(hypothesis' own lanes among them) are also evaluated by `z3.substitute` + `z3.simplify`
(> 320 inputs per operation), and `test_smt_eval_matches_z3` compares it operator by
operator with z3 on random terms at the int64 / 64-bit / wide boundaries. The same 16 lanes
run on the INT back-end; all lanes run on NUMPY.

Also here: building every public operation with z3 inputs succeeds (no Python branch on
data), the no-overflow obligations are proved valid (t_fdpa L=4 f16 and more), and a
symbolic rounding mode equals each concrete mode.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import (finite_codes, random_codes, sparse_codes, special_codes, special_mix,
                      subnormal_codes)
from mmaformal import fp, mma
from mmaformal.bits import INT, NUMPY, Z3Backend

LANES = 512                # lanes per hypothesis example
EXAMPLES = 20              # examples per operation: 20 x 512 = 10,240 inputs
EXACT_LANES = 16           # lanes per example also checked with z3.simplify and INT


# ------------------------------------------------------------------------------------------
# A numpy interpreter of the SMT-LIB bit-vector terms z3 builds (QF_BV semantics)
# ------------------------------------------------------------------------------------------

_U64 = np.uint64


class SmtEval:
    """Evaluate a z3 term (Bool or BitVec) on many assignments of its free constants at once.

    Values of width <= 64 are uint64 lanes, wider ones object lanes (Python ints); Bools are
    bool lanes. Every operator follows SMT-LIB: arithmetic modulo 2^w, shifts by >= w give 0
    (or the sign for bvashr), comparisons unsigned or signed as named.
    """

    def __init__(self, *terms):
        self.terms = terms
        self.prog = []            # (node id, kind, width, arg ids, params, payload)
        seen = set()
        stack = [(t, False) for t in terms]
        while stack:
            e, done = stack.pop()
            i = e.get_id()
            if done:
                if i not in seen:
                    seen.add(i)
                    self.prog.append(self._compile(e))
                continue
            if i in seen:
                continue
            stack.append((e, True))
            stack.extend((c, False) for c in e.children() if c.get_id() not in seen)

    @staticmethod
    def _compile(e):
        k = e.decl().kind()
        w = e.size() if z3.is_bv(e) else 0
        args = [c.get_id() for c in e.children()]
        params = e.params()
        payload = None
        if k == z3.Z3_OP_BNUM:
            payload = e.as_long()
        elif k == z3.Z3_OP_UNINTERPRETED:
            if args:
                raise NotImplementedError(f"uninterpreted function {e}")
            payload = e.decl().name()
        return (e.get_id(), k, w, args, params, payload,
                [c.size() if z3.is_bv(c) else 0 for c in e.children()])

    # -- lane helpers ----------------------------------------------------------------------
    @staticmethod
    def _mask(w):
        return (1 << w) - 1

    def _fit(self, v, w):
        """Reduce to [0, 2^w) in the lane type of width w."""
        if w <= 64:
            if v.dtype == object:
                v = np.array([int(x) & self._mask(w) for x in v], dtype=_U64)
                return v
            return v & _U64(self._mask(w))
        if v.dtype != object:
            v = v.astype(object)
        return v & self._mask(w)

    def _signed(self, v, w):
        """Two's complement reading (int64 for w <= 64, Python ints otherwise)."""
        if w <= 64:
            s = (v << _U64(64 - w)).view(np.int64) if w < 64 else v.view(np.int64)
            return s >> np.int64(64 - w) if w < 64 else s
        half = 1 << (w - 1)
        return np.where(v >= half, v - (1 << w), v).astype(object)

    def _obj(self, v):
        return v.astype(object) if v.dtype != object else v

    def __call__(self, env: dict[str, np.ndarray], n: int):
        val = {}
        for (i, k, w, a, params, payload, aw) in self.prog:
            x = [val[j] for j in a]
            val[i] = self._op(k, w, x, aw, params, payload, env, n)
        return [val[t.get_id()] for t in self.terms]

    def _op(self, k, w, x, aw, params, payload, env, n):
        Z = z3
        m = self._mask(w) if w else 0
        if k == Z.Z3_OP_BNUM:
            return np.full(n, payload, dtype=_U64 if w <= 64 else object)
        if k == Z.Z3_OP_UNINTERPRETED:
            v = env[payload]
            return self._fit(np.asarray(v), w) if w else np.asarray(v, dtype=bool)
        if k == Z.Z3_OP_TRUE:
            return np.ones(n, dtype=bool)
        if k == Z.Z3_OP_FALSE:
            return np.zeros(n, dtype=bool)
        if k == Z.Z3_OP_AND:
            return np.logical_and.reduce(x)
        if k == Z.Z3_OP_OR:
            return np.logical_or.reduce(x)
        if k == Z.Z3_OP_NOT:
            return ~x[0]
        if k == Z.Z3_OP_XOR:
            return x[0] ^ x[1]
        if k == Z.Z3_OP_IMPLIES:
            return ~x[0] | x[1]
        if k == Z.Z3_OP_EQ:
            return x[0] == x[1]
        if k == Z.Z3_OP_DISTINCT:
            return x[0] != x[1]
        if k == Z.Z3_OP_ITE:
            r = np.where(x[0], x[1], x[2])
            return r.astype(object) if w > 64 else r
        wide = w > 64
        if k in (Z.Z3_OP_BADD, Z.Z3_OP_BMUL, Z.Z3_OP_BAND, Z.Z3_OP_BOR, Z.Z3_OP_BXOR):
            op = {Z.Z3_OP_BADD: np.add, Z.Z3_OP_BMUL: np.multiply, Z.Z3_OP_BAND: np.bitwise_and,
                  Z.Z3_OP_BOR: np.bitwise_or, Z.Z3_OP_BXOR: np.bitwise_xor}[k]
            r = x[0]
            for y in x[1:]:
                r = self._fit(op(r, y), w)     # uint64 wraps mod 2^64: exact mod 2^w
            return r
        if k == Z.Z3_OP_BSUB:
            return self._fit(x[0] - x[1] if wide else x[0] - x[1], w)
        if k == Z.Z3_OP_BNEG:
            return self._fit((0 - x[0]) if wide else (_U64(0) - x[0]), w)
        if k == Z.Z3_OP_BNOT:
            return self._fit(x[0] ^ (m if wide else _U64(m)), w)
        if k in (Z.Z3_OP_BSHL, Z.Z3_OP_BLSHR, Z.Z3_OP_BASHR):
            s = x[1]
            big = s >= w
            sc = np.minimum(s, w - 1 if w else 0)
            if wide:
                sc = sc.astype(object)
                if k == Z.Z3_OP_BSHL:
                    r = (x[0] << sc) & m
                elif k == Z.Z3_OP_BLSHR:
                    r = x[0] >> sc
                else:
                    r = self._signed(x[0], w) >> sc
                    r = np.where(big, self._signed(x[0], w) >> (w - 1), r) & m
                    return self._fit(r.astype(object), w)
                return self._fit(np.where(big, 0, r).astype(object), w)
            sc = sc.astype(_U64)
            if k == Z.Z3_OP_BSHL:
                r = np.where(big, _U64(0), self._fit(x[0] << sc, w))
            elif k == Z.Z3_OP_BLSHR:
                r = np.where(big, _U64(0), x[0] >> sc)
            else:
                sv = self._signed(x[0], w)
                r = (sv >> np.minimum(sc, _U64(w - 1)).astype(np.int64)).view(_U64)
                r = self._fit(r, w)
            return r
        if k == Z.Z3_OP_EXTRACT:
            hi, lo = params
            v = x[0]
            if v.dtype == object:
                return self._fit((v >> lo) & self._mask(hi - lo + 1), hi - lo + 1)
            return (v >> _U64(lo)) & _U64(self._mask(hi - lo + 1))
        if k == Z.Z3_OP_CONCAT:
            r, rw = x[0], aw[0]
            for y, yw in zip(x[1:], aw[1:]):
                if rw + yw > 64:
                    r = (self._obj(r) << yw) | self._obj(y)
                else:
                    r = (r << _U64(yw)) | y
                rw += yw
            return self._fit(r, rw)
        if k == Z.Z3_OP_ZERO_EXT:
            return self._fit(x[0] if not wide else self._obj(x[0]), w)
        if k == Z.Z3_OP_SIGN_EXT:
            sv = self._signed(x[0], aw[0])
            if wide:
                return self._fit(self._obj(sv), w)
            return self._fit(sv.view(_U64) if sv.dtype != object else sv, w)
        if k in (Z.Z3_OP_ULT, Z.Z3_OP_ULEQ, Z.Z3_OP_UGT, Z.Z3_OP_UGEQ):
            a, b = x
            return {Z.Z3_OP_ULT: a < b, Z.Z3_OP_ULEQ: a <= b, Z.Z3_OP_UGT: a > b,
                    Z.Z3_OP_UGEQ: a >= b}[k].astype(bool)
        if k in (Z.Z3_OP_SLT, Z.Z3_OP_SLEQ, Z.Z3_OP_SGT, Z.Z3_OP_SGEQ):
            a, b = self._signed(x[0], aw[0]), self._signed(x[1], aw[1])
            return {Z.Z3_OP_SLT: a < b, Z.Z3_OP_SLEQ: a <= b, Z.Z3_OP_SGT: a > b,
                    Z.Z3_OP_SGEQ: a >= b}[k].astype(bool)
        if k == Z.Z3_OP_BUMUL_NO_OVFL:
            return (self._obj(x[0]) * self._obj(x[1]) < (1 << aw[0])).astype(bool)
        if k in (Z.Z3_OP_BSMUL_NO_OVFL, Z.Z3_OP_BSMUL_NO_UDFL):
            p = self._obj(self._signed(x[0], aw[0])) * self._obj(self._signed(x[1], aw[1]))
            ok = p < (1 << (aw[0] - 1)) if k == Z.Z3_OP_BSMUL_NO_OVFL else p >= -(1 << (aw[0] - 1))
            return ok.astype(bool)
        raise NotImplementedError(f"SmtEval: z3 operator kind {k}")


# ------------------------------------------------------------------------------------------
# The operations under test: name -> (input formats, builder over a list of input BVs)
# ------------------------------------------------------------------------------------------

@dataclass
class SymOp:
    name: str
    fmts: list             # format of each input element (or ("mode", 3) for a rounding mode)
    build: Callable        # list of BV -> BV


def _w(f):
    return f[1] if isinstance(f, tuple) else fp.fmt(f).storage


OPS: list[SymOp] = []


def _t(fa, fb, fc, L, F, rho, ze="excluded", **kw):
    OPS.append(SymOp(f"t_fdpa-{fa}x{fb}-{fc}-L{L}-F{F}-{rho}-{ze}{'-' + str(kw) if kw else ''}",
                     [fa] * L + [fb] * L + [fc],
                     lambda x: mma.t_fdpa(x[:L], x[L:2 * L], x[2 * L], fa, fb, fc, F, rho, ze, **kw)))


_t("f16", "f16", "f32", 4, 23, "RZ-FP32")
_t("f16", "f16", "f16", 16, 25, "RNE-FP16", "field")
_t("bf16", "bf16", "f32", 8, 24, "RZ-FP32", "field")
_t("tf32", "tf32", "f32", 4, 24, "RZ-FP32", tf32_round="RNE")
_t("e4m3", "e5m2", "f32", 16, 13, "RZ-E8M13")
_t("e2m1", "e3m2", "f32", 16, 25, "RNE-FP32")

OPS.append(SymOp("st_fdpa-e4m3-L16-ue8m0", ["e4m3"] * 32 + ["f32", "ue8m0", "ue8m0"],
                 lambda x: mma.st_fdpa(x[:16], x[16:32], x[32], "e4m3", "e4m3", "f32", [x[33]] * 16,
                                       [x[34]] * 16, 25, "RZ-FP32")))
OPS.append(SymOp("st_fdpa-e2m1-L32-ue8m0-field", ["e2m1"] * 64 + ["f32", "ue8m0", "ue8m0"],
                 lambda x: mma.st_fdpa(x[:32], x[32:64], x[64], "e2m1", "e2m1", "f32", [x[65]] * 32,
                                       [x[66]] * 32, 25, "RZ-FP32", zero_exp="field")))
OPS.append(SymOp("gst_fdpa-e2m1-L32-G16-ue4m3", ["e2m1"] * 64 + ["f32"] + ["ue4m3"] * 4,
                 lambda x: mma.gst_fdpa(x[:32], x[32:64], x[64], "e2m1", "e2m1", "f32", x[65:67],
                                        x[67:69], 16, 35, "RZ-FP32")))
OPS.append(SymOp("gst_fdpa-e2m1-L16-G8-ue8m0", ["e2m1"] * 32 + ["f32"] + ["ue8m0"] * 4,
                 lambda x: mma.gst_fdpa(x[:16], x[16:32], x[32], "e2m1", "e2m1", "f32", x[33:35],
                                        x[35:37], 8, 35, "RZ-FP32", "ue8m0")))
OPS.append(SymOp("e_fdpa-f16-L4", ["f16"] * 8 + ["f32"],
                 lambda x: mma.e_fdpa(x[:4], x[4:8], x[8], "f16", "f16")))
OPS.append(SymOp("e_fdpa-bf16-L2", ["bf16"] * 4 + ["f32"],
                 lambda x: mma.e_fdpa(x[:2], x[2:4], x[4], "bf16", "bf16")))
OPS.append(SymOp("tr_fdpa-f16-L8", ["f16"] * 16 + ["f32"],
                 lambda x: mma.tr_fdpa(x[:8], x[8:16], x[16], "f16", "f16", 24, 31)))
OPS.append(SymOp("tr_fdpa-tf32-L4-field", ["tf32"] * 8 + ["f32"],
                 lambda x: mma.tr_fdpa(x[:4], x[4:8], x[8], "tf32", "tf32", 24, 31, "field")))
OPS.append(SymOp("gtr_fdpa-e4m3fnuz-L16", ["e4m3fnuz"] * 32 + ["f32"],
                 lambda x: mma.gtr_fdpa(x[:16], x[16:32], x[32], "e4m3fnuz", "e4m3fnuz", 24, 31)))
OPS.append(SymOp("gtr_fdpa-e5m2fnuz-L8-field", ["e5m2fnuz"] * 16 + ["f32"],
                 lambda x: mma.gtr_fdpa(x[:8], x[8:16], x[16], "e5m2fnuz", "e5m2fnuz", 24, 31, "field")))
OPS.append(SymOp("ftz_add-bf16+f32", ["bf16", "f32"],
                 lambda x: mma.ftz_add(fp.decode("bf16", x[0]), fp.decode("f32", x[1]))))
OPS.append(SymOp("ftz_add-f32+f32", ["f32", "f32"],
                 lambda x: mma.ftz_add(fp.decode("f32", x[0]), fp.decode("f32", x[1]))))
OPS.append(SymOp("ftz_mul-f16", ["f16", "f16"],
                 lambda x: mma.ftz_mul(fp.decode("f16", x[0]), fp.decode("f16", x[1]))))
OPS.append(SymOp("ftz_mul-f32", ["f32", "f32"],
                 lambda x: mma.ftz_mul(fp.decode("f32", x[0]), fp.decode("f32", x[1]))))
OPS.append(SymOp("ftz_addmul-bf16-P4-K4", ["bf16"] * 8 + ["f32"],
                 lambda x: mma.ftz_addmul(x[:4], x[4:8], x[8], "bf16", "bf16", 4)))
OPS.append(SymOp("ftz_addmul-f16-P2-K4", ["f16"] * 8 + ["f32"],
                 lambda x: mma.ftz_addmul(x[:4], x[4:8], x[8], "f16", "f16", 2)))
OPS.append(SymOp("fma_chain-f32-K2", ["f32"] * 5,
                 lambda x: mma.fma_chain(x[:2], x[2:4], x[4], "f32")))
OPS.append(SymOp("fma_chain-f64-K2-RZ", ["f64"] * 5,
                 lambda x: mma.fma_chain(x[:2], x[2:4], x[4], "f64", "RZ")))
OPS.append(SymOp("fdpa_chain-t_fdpa-f16-K8-L4", ["f16"] * 16 + ["f32"],
                 lambda x: mma.fdpa_chain(mma.t_fdpa, x[:8], x[8:16], x[16], 4, fa="f16", fb="f16",
                                          fc="f32", F=24, rho="RZ-FP32")))
# IEEE operations with a symbolic rounding mode (mode code 0..5 = RNE RNA RZ RU RD RO; 6, 7
# are not modes and select no rounding increment: they are excluded from the inputs)
for _f in ("f32", "bf16"):
    for _op in ("add", "mul", "fma"):
        n_in = 3 if _op == "fma" else 2
        OPS.append(SymOp(f"fp.{_op}-{_f}-symbolic-mode", [_f] * n_in + [("mode", 3)],
                         (lambda f, op, n: lambda x: getattr(fp, op)(f, *x[:n], mode=x[n]))(_f, _op, n_in)))

_TERMS: dict = {}


def term_of(op: SymOp):
    """(backend, variables, term, SmtEval), built once per operation."""
    if op.name not in _TERMS:
        K = Z3Backend()
        xs = [K.var(f"x{i}", _w(f)) for i, f in enumerate(op.fmts)]
        d = op.build(xs)
        _TERMS[op.name] = (K, xs, d, SmtEval(d.v))
    return _TERMS[op.name]


# ------------------------------------------------------------------------------------------
# Input batches (hypothesis)
# ------------------------------------------------------------------------------------------

KINDS = ["random", "sparse", "subnormal", "finite", "special"]
_GEN = {"random": random_codes, "sparse": sparse_codes, "subnormal": subnormal_codes,
        "finite": lambda r, f, n: finite_codes(r, f, n, spread=6),
        "special": lambda r, f, n, m=1: special_mix(r, f, n, min(0.35, 2.0 / m))}


def _element(f):
    if isinstance(f, tuple):
        return st.integers(0, 5)
    w = fp.fmt(f).storage
    return st.one_of(st.integers(0, (1 << w) - 1), st.sampled_from(special_codes(f)))


@st.composite
def batches(draw, fmts):
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(KINDS))
    own = draw(st.lists(st.tuples(*[_element(f) for f in fmts]), min_size=1, max_size=12))
    rng = np.random.default_rng(seed)
    cols = []
    for j, f in enumerate(fmts):
        n = LANES - len(own)
        if isinstance(f, tuple):
            gen = rng.integers(0, 6, n)
        elif kind == "special":            # about two special elements per input tuple
            gen = _GEN[kind](rng, f, n, len(fmts))
        else:
            gen = _GEN[kind](rng, f, n)
        head = np.array([o[j] for o in own], dtype=gen.dtype)
        cols.append(np.concatenate([head, gen]))
    return cols


# ------------------------------------------------------------------------------------------
# The comparison
# ------------------------------------------------------------------------------------------

def _numpy_result(op, cols):
    xs = [NUMPY.lift(c, _w(f)) for c, f in zip(cols, op.fmts)]
    return np.broadcast_to(np.asarray(op.build(xs).v), (LANES,))


def _int_result(op, cols, i):
    return int(op.build([INT.lift(int(c[i]), _w(f)) for c, f in zip(cols, op.fmts)]).v)


def _z3_result(op, xs, term, cols, i):
    subs = [(x.v, z3.BitVecVal(int(c[i]), x.w)) for x, c in zip(xs, cols)]
    r = z3.simplify(z3.substitute(term, *subs))
    assert z3.is_bv_value(r), f"{op.name}: the term did not reduce to a constant: {r}"
    return r.as_long()


def _check_batch(op: SymOp, cols):
    K, xs, d, ev = term_of(op)
    env = {x.v.decl().name(): np.asarray(c).astype(object if x.w > 62 else np.int64)
           for x, c in zip(xs, cols)}
    env = {k: (v.astype(np.uint64) if v.dtype != object else v) for k, v in env.items()}
    sym = ev(env, LANES)[0]
    num = _numpy_result(op, cols)
    bad = [i for i in range(LANES) if int(sym[i]) != int(num[i])]
    assert not bad, (f"{op.name}: z3 term != NUMPY at {len(bad)} lanes, e.g. inputs "
                     f"{[hex(int(c[bad[0]])) for c in cols]}: {hex(int(sym[bad[0]]))} vs {hex(int(num[bad[0]]))}")
    for i in range(EXACT_LANES):
        z = _z3_result(op, xs, d.v, cols, i)
        n = _int_result(op, cols, i)
        assert z == int(num[i]) == n == int(sym[i]), \
            (op.name, [hex(int(c[i])) for c in cols], hex(z), hex(int(num[i])), hex(n), hex(int(sym[i])))


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_symbolic_equals_concrete(op):
    term_of(op)                       # build outside the hypothesis loop
    seen = []

    @settings(max_examples=EXAMPLES, database=None)
    @given(cols=batches(op.fmts))
    def check(cols):
        seen.append(len(cols[0]))
        _check_batch(op, cols)

    check()
    assert sum(seen) >= 10_000


def test_symbolic_covers_specials_and_subnormals():
    """The batches do contain zeros, subnormals, Inf and NaN of the inputs (f16 view)."""
    rng = np.random.default_rng(3)
    codes = np.concatenate([_GEN[k](rng, "f16", 2000) for k in KINDS])
    E, T = (codes >> 10) & 31, codes & 1023
    assert ((E == 0) & (T == 0)).sum() > 100 and ((E == 0) & (T != 0)).sum() > 100
    assert ((E == 31) & (T == 0)).sum() > 20 and ((E == 31) & (T != 0)).sum() > 20


# ------------------------------------------------------------------------------------------
# The interpreter against z3 itself, operator by operator
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("w", [1, 7, 31, 62, 63, 64, 65, 100])
def test_smt_eval_matches_z3(w):
    rng = np.random.default_rng(w)
    x, y, s = z3.BitVec("x", w), z3.BitVec("y", w), z3.BitVec("s", w)
    b = z3.Bool("b")
    ws = max(1, w // 2)
    terms = [x + y, x - y, x * y, -x, ~x, x & y, x | y, x ^ y, x << s, z3.LShR(x, s), x >> s,
             z3.If(b, x, y), z3.ULT(x, y), z3.ULE(x, y), z3.UGT(x, y), z3.UGE(x, y), x < y, x <= y,
             x > y, x >= y, x == y, x != y, z3.And(b, x == y), z3.Or(b, z3.ULT(x, y)), z3.Not(b),
             z3.Xor(b, x == y), z3.Implies(b, x == y), z3.Extract(w - 1, w - ws, x),
             z3.Extract(ws - 1, 0, y), z3.Concat(x, y), z3.ZeroExt(5, x), z3.SignExt(5, x),
             z3.SignExt(70, x), z3.ZeroExt(64, x) * z3.ZeroExt(64, y),
             z3.simplify(z3.BVMulNoOverflow(x, y, False)), z3.simplify(z3.BVMulNoOverflow(x, y, True)),
             z3.simplify(z3.BVMulNoUnderflow(x, y)), z3.BitVecVal((1 << w) - 1, w) + x]
    n = 300

    def draw():
        v = [int(t) for t in rng.integers(0, 1 << min(w, 62), n, dtype=np.int64)]
        if w > 62:
            v = [(a << (w - 62)) ^ int(c) for a, c in zip(v, rng.integers(0, 1 << min(w - 62, 62), n))]
        edges = [0, 1, (1 << w) - 1, 1 << (w - 1), (1 << (w - 1)) - 1]
        return [edges[i % 5] if i < 15 else v[i] for i in range(n)]

    X_, Y_ = draw(), draw()
    S_ = [int(v) % (w + 3) if i % 3 else v for i, v in enumerate(draw())]
    B_ = [bool(v) for v in rng.integers(0, 2, n)]
    dt = np.uint64 if w <= 64 else object
    env = {"x": np.array(X_, dtype=dt), "y": np.array(Y_, dtype=dt), "s": np.array(S_, dtype=dt),
           "b": np.array(B_)}
    ev = SmtEval(*terms)
    outs = ev(env, n)
    for t, o in zip(terms, outs):
        for i in range(0, n, 3):
            r = z3.simplify(z3.substitute(t, (x, z3.BitVecVal(X_[i], w)), (y, z3.BitVecVal(Y_[i], w)),
                                          (s, z3.BitVecVal(S_[i], w)), (b, z3.BoolVal(B_[i]))))
            want = r.as_long() if z3.is_bv_value(r) else z3.is_true(r)
            got = int(o[i]) if z3.is_bv(t) else bool(o[i])
            assert got == want, (str(t), w, X_[i], Y_[i], S_[i], B_[i], got, want)


# ------------------------------------------------------------------------------------------
# Building every public operation on z3; obligations
# ------------------------------------------------------------------------------------------

def _build_all_public(K):
    v = lambda name, f: K.var(name, fp.fmt(f).storage)
    out = {}
    for f in ("f16", "bf16", "f32", "e4m3", "e5m2fnuz", "e2m1", "ue4m3", "ue8m0", "tf32", "f64"):
        u = fp.decode(f, v(f"d_{f}", f))
        if f != "ue8m0":
            out[f"round_to-{f}"] = fp.round_to(f, u.sign, u.exp - fp.fmt(f).t, u.sig, K.var("m", 3))
    for f in ("f32", "f16", "e4m3", "e2m1", "f64"):
        for op in ("add", "mul", "fma"):
            xs = [v(f"{op}{f}{i}", f) for i in range(3 if op == "fma" else 2)]
            out[f"{op}-{f}"] = getattr(fp, op)(f, *xs, mode=K.var(f"mode{f}{op}", 3), nan="propagate")
    a4, b4 = [v(f"a{i}", "f16") for i in range(4)], [v(f"b{i}", "f16") for i in range(4)]
    c = v("c", "f32")
    out["t_fdpa"] = mma.t_fdpa(a4, b4, c, "f16", "f16", "f32", 24, "RZ-FP32")
    out["t_fdpa-sat"] = mma.t_fdpa(a4, b4, v("c16", "f16"), "f16", "f16", "f16", 24, "RNE-FP16",
                                   overflow="saturate")
    out["t_fdpa-tf32"] = mma.t_fdpa([v("t0", "tf32")], [v("t1", "tf32")], c, "tf32", "tf32", "f32", 24,
                                    "RZ-FP32", tf32_round="RNA")
    e8 = [v(f"e{i}", "e4m3") for i in range(8)]
    out["st_fdpa"] = mma.st_fdpa(e8[:4], e8[4:], c, "e4m3", "e4m3", "f32", [v("sa", "ue8m0")] * 4,
                                 [v("sb", "ue8m0")] * 4, 25, "RZ-FP32")
    f4 = [v(f"f{i}", "e2m1") for i in range(16)]
    out["gst_fdpa"] = mma.gst_fdpa(f4[:8], f4[8:], c, "e2m1", "e2m1", "f32",
                                   [v("ga0", "ue4m3"), v("ga1", "ue4m3")],
                                   [v("gb0", "ue4m3"), v("gb1", "ue4m3")], 4, 35, "RZ-FP32")
    out["e_fdpa"] = mma.e_fdpa(a4, b4, c, "f16", "f16")
    out["tr_fdpa"] = mma.tr_fdpa(a4, b4, c, "f16", "f16", 24, 31)
    out["gtr_fdpa"] = mma.gtr_fdpa(e8[:4], e8[4:], c, "e4m3", "e4m3", 24, 31)
    out["ftz_add"] = mma.ftz_add(fp.decode("f16", a4[0]), fp.decode("f32", c))
    out["ftz_mul"] = mma.ftz_mul(fp.decode("bf16", v("x", "bf16")), fp.decode("bf16", v("y", "bf16")))
    out["ftz_addmul"] = mma.ftz_addmul(a4, b4, c, "f16", "f16", 4)
    out["fma_chain"] = mma.fma_chain([v("p", "f32")] * 2, [v("q", "f32")] * 2, c, "f32", "RU")
    out["fdpa_chain"] = mma.fdpa_chain(mma.e_fdpa, a4, b4, c, 2, fa="f16", fb="f16")
    return out


def test_every_public_operation_builds_on_z3():
    K = Z3Backend()
    out = _build_all_public(K)
    for name, d in out.items():
        assert z3.is_bv(d.v), name
    assert len(K.obligations) > 0
    assert all(z3.is_bool(o) for o in K.obligations)


def _bitwuzla_unsat(formula, timeout_s: float) -> str:
    """Solve `formula` with bitwuzla (from z3's SMT-LIB2 export): "sat", "unsat" or "unknown"."""
    try:
        import bitwuzla
    except ImportError:
        return "unknown"
    s = z3.Solver()
    s.add(formula)
    text = s.to_smt2().replace("(check-sat)", "")
    tm = bitwuzla.TermManager()
    opts = bitwuzla.Options()
    opts.set(bitwuzla.Option.TIME_LIMIT_PER, int(timeout_s * 1000))
    parser = bitwuzla.Parser(tm, opts)
    parser.parse("(set-logic QF_BV)\n" + text if "set-logic" not in text else text, True, False)
    r = parser.bitwuzla().check_sat()
    return {bitwuzla.Result.SAT: "sat", bitwuzla.Result.UNSAT: "unsat"}.get(r, "unknown")


def _prove_all(obligations):
    """Every obligation holds for all inputs: Not(ob) is unsat. z3 first (2 s), then
    bitwuzla (60 s) where z3 gives up: each solver is fast on some obligations where the other
    is slow. "unknown" from both fails the test (a time-out is never a proof)."""
    for ob in obligations:
        s = z3.SolverFor("QF_BV")
        s.set("timeout", 2_000)
        s.add(z3.Not(ob))
        r = s.check()
        if r == z3.sat:
            raise AssertionError(f"obligation violated: {ob} at {s.model()}")
        if r == z3.unknown:
            rb = _bitwuzla_unsat(z3.Not(ob), 60)
            assert rb == "unsat", f"obligation {'violated' if rb == 'sat' else 'unproved'}: {ob}"


def test_obligations_are_valid_t_fdpa_L4_f16():
    K = Z3Backend()
    a = [K.var(f"a{i}", 16) for i in range(4)]
    b = [K.var(f"b{i}", 16) for i in range(4)]
    mma.t_fdpa(a, b, K.var("c", 32), "f16", "f16", "f32", 24, "RZ-FP32")
    assert len(K.obligations) > 10
    _prove_all(K.obligations)


@pytest.mark.parametrize("which", ["fp.fma-f32-symbolic-mode", "tr_fdpa-L2-bf16", "e_fdpa-L2-f16",
                                   "gtr_fdpa-L2-e4m3fnuz", "st_fdpa-L2-e2m1",
                                   pytest.param("ftz_addmul-P2", marks=pytest.mark.slow)])
def test_obligations_are_valid_small(which):
    K = Z3Backend()
    v = lambda n, f: K.var(n, fp.fmt(f).storage)
    c = v("c", "f32")
    if which.startswith("fp.fma"):
        fp.fma("f32", v("x", "f32"), v("y", "f32"), c, K.var("m", 3))
    elif which.startswith("tr"):
        mma.tr_fdpa([v("a0", "bf16"), v("a1", "bf16")], [v("b0", "bf16"), v("b1", "bf16")], c, "bf16",
                    "bf16", 24, 31)
    elif which.startswith("e_"):
        mma.e_fdpa([v("a0", "f16"), v("a1", "f16")], [v("b0", "f16"), v("b1", "f16")], c, "f16", "f16")
    elif which.startswith("gtr"):
        f = "e4m3fnuz"
        mma.gtr_fdpa([v("a0", f), v("a1", f)], [v("b0", f), v("b1", f)], c, f, f, 24, 31)
    elif which.startswith("st"):
        mma.st_fdpa([v("a0", "e2m1"), v("a1", "e2m1")], [v("b0", "e2m1"), v("b1", "e2m1")], c, "e2m1",
                    "e2m1", "f32", [v("sa", "ue8m0")] * 2, [v("sb", "ue8m0")] * 2, 25, "RZ-FP32")
    else:
        mma.ftz_addmul([v("a0", "f16"), v("a1", "f16")], [v("b0", "f16"), v("b1", "f16")], c, "f16",
                       "f16", 2)
    assert K.obligations
    _prove_all(K.obligations)


def test_obligation_of_a_real_overflow_is_refuted():
    """The broken twin: an addition that can overflow yields an obligation z3 refutes."""
    K = Z3Backend()
    x, y = K.var("x", 8), K.var("y", 8)
    _ = x + y
    s = z3.Solver()
    s.add(z3.Not(K.obligations[-1]))
    assert s.check() == z3.sat


@pytest.mark.parametrize("op", [o for o in OPS if o.name.startswith("t_fdpa-f16xf16-f32-L4")],
                         ids=lambda o: o.name)
def test_obligations_hold_on_every_tested_input(op):
    """Cheap complement to the proofs: every obligation of a term is true on 5,000 inputs."""
    K, xs, d, _ = term_of(op)
    ev = SmtEval(*K.obligations)
    rng = np.random.default_rng(9)
    cols = [random_codes(rng, f, 5000) for f in op.fmts]
    env = {x.v.decl().name(): c.astype(np.uint64) for x, c in zip(xs, cols)}
    for ob, val in zip(K.obligations, ev(env, 5000)):
        assert np.all(val), ob


def test_symbolic_mode_equals_each_concrete_mode():
    """fp.add with the rounding mode as a z3 variable, fixed to each code, is fp.add in that
    mode (NUMPY), on 2,000 inputs per mode."""
    K = Z3Backend()
    x, y, m = K.var("x", 32), K.var("y", 32), K.var("m", 3)
    ev = SmtEval(fp.add("f32", x, y, m).v)
    rng = np.random.default_rng(4)
    a, b = random_codes(rng, "f32", 2000), finite_codes(rng, "f32", 2000, spread=30)
    for i, mode in enumerate(fp.MODES):
        got = ev({"x": a.astype(np.uint64), "y": b.astype(np.uint64), "m": np.full(2000, i, np.uint64)}, 2000)[0]
        want = fp.add("f32", NUMPY.lift(a, 32), NUMPY.lift(b, 32), mode).v
        assert np.array_equal(got.astype(np.int64), want), mode
