"""Hypothesis strategies for testing your own MMA kernels against mmaformal's models.

May import: numpy, hypothesis (install it: ``pip install 'mmaformal[test]'``), mmaformal.classes,
mmaformal.isa, mmaformal.fp, mmaformal.simulate, mmaformal.emulate. Not imported by the package
itself, so hypothesis stays optional.

The strategies draw raw-bit inputs (the design's array contract: unsigned integers of each
format's storage width) of the CLFP probe classes of [Xie2025] sec. 3.1.4 (``CLASSES``:
normal, uniform, dnn, cancel, bits, sparse, subnormal, special, overflow, swamping), for one
catalog instruction::

    from hypothesis import given
    from mmaformal.testing import mma_inputs, gemm_inputs

    @given(mma_inputs("sm90/mma.m16n8k16.f32.f16.f16.f32"))
    def test_my_tile(x):                       # one instruction tile: A (m, k), B (k, n), C (m, n)
        assert (my_mma(x.a, x.b, x.c) == x.expected()).all()

    @given(gemm_inputs("sm90/mma.m16n8k16.f32.f16.f16.f32", max_m=64, max_n=64, max_steps=4))
    def test_my_gemm(x):                       # a GEMM, K a multiple of k; expected = emulate
        assert (my_gemm(x.a, x.b, x.c) == x.expected()).all()

``expected()`` is the model's D as raw bits (``simulate`` for a tile, ``emulate.matmul`` for a
GEMM, primary theory unless ``theory=`` is given). Compare bits, not floats: a NaN in D is a
specific code (e.g. 0x7FFFFFFF on NVIDIA), and -0 differs from +0.

How classes are drawn: "bits" and "special" element by element with hypothesis (so failing
examples shrink toward the zero code / the first special value); the value classes from
``mmaformal.classes.generate`` with a seed that hypothesis draws (so an example is reproducible
from its seed, shown in the repr). Block-scaled instructions get scale tiles too: random scale
bits (NaN scales included) for "bits"/"special", else powers of two in 2^-3..2^3.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError as e:  # pragma: no cover
    raise ImportError("mmaformal.testing needs hypothesis: pip install 'mmaformal[test]'") from e

from . import classes as _classes
from . import fp, isa
from .isa import Instruction
from .simulate import storage_dtype

__all__ = ["CLASSES", "MMAInputs", "GemmInputs", "mma_inputs", "gemm_inputs", "format_bits",
           "specials"]

CLASSES = _classes.CLASSES


def specials(fmt_name: str) -> list[int]:
    """Special and boundary codes of a format (raw storage bits): signed zeros, Inf, NaN codes,
    the smallest subnormal, the largest finite value, 1.0 (where they exist)."""
    f = fp.fmt(fmt_name)
    out = list(_classes.special_codes(f))
    out += [1 << f.pad, f.max_code << f.pad]
    if f.signed:
        out += [(f.max_code | f.sign_bit) << f.pad]
    if f.bias <= f.max_code >> f.t:
        out.append((f.bias << f.t) << f.pad)           # 1.0
    seen, res = set(), []
    for v in out:
        if v not in seen:
            seen.add(v)
            res.append(int(v))
    return res


def format_bits(fmt_name: str, shape, klass: str = "bits"):
    """Strategy: a raw-bit array of a format; klass "bits" (any code) or "special"."""
    f = fp.fmt(fmt_name)
    dt = storage_dtype(fmt_name)
    if klass == "bits":
        width = f.k
        el = st.integers(0, (1 << width) - 1).map(lambda v: v << f.pad)
    elif klass == "special":
        el = st.sampled_from(specials(fmt_name))
    else:
        raise ValueError(f"format_bits draws 'bits' or 'special', got {klass!r}")
    return hnp.arrays(dt, shape, elements=el)


# --------------------------------------------------------------------------------------------
# Inputs


@dataclasses.dataclass(frozen=True)
class MMAInputs:
    """One instruction tile of one probe class: raw bits A (m, k), B (k, n), C (m, n)
    (with a leading batch dimension when drawn with ``batch``), and the scales of block-scaled
    instructions (None otherwise)."""

    instr: str
    klass: str
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    scale_a: np.ndarray | None = None
    scale_b: np.ndarray | None = None
    seed: int | None = None

    def expected(self, theory=None) -> np.ndarray:
        """The model's D (raw bits): mmaformal.simulate with the primary (or given) theory."""
        from .simulate import simulate
        return simulate(self.instr, self.a, self.b, self.c, self.scale_a, self.scale_b,
                        theory=theory)

    def __repr__(self) -> str:
        sc = "" if self.scale_a is None else f", scale_a={self.scale_a!r}, scale_b={self.scale_b!r}"
        return (f"MMAInputs(instr={self.instr!r}, klass={self.klass!r}, seed={self.seed}, "
                f"a={self.a!r}, b={self.b!r}, c={self.c!r}{sc})")


@dataclasses.dataclass(frozen=True)
class GemmInputs(MMAInputs):
    """A GEMM of one probe class: A (M, K), B (K, N), C (M, N), K a multiple of the
    instruction's k; ``expected`` is ``emulate.matmul`` (K-steps in increasing order)."""

    def expected(self, theory=None, split_k: int = 1) -> np.ndarray:
        from .emulate import matmul
        return matmul(self.a, self.b, self.c, self.instr, split_k=split_k, theory=theory,
                      scale_a=self.scale_a, scale_b=self.scale_b)


def _check_classes(klasses) -> tuple[str, ...]:
    ks = tuple(CLASSES if klasses is None else ([klasses] if isinstance(klasses, str) else klasses))
    bad = [k for k in ks if k not in CLASSES]
    if bad or not ks:
        raise ValueError(f"unknown input class(es) {bad or ks}; expected some of {', '.join(CLASSES)}")
    return ks


def _pow2(fmt_name: str, e: np.ndarray) -> np.ndarray:
    """Raw codes of 2^e in a (scale) format (normal range assumed)."""
    f = fp.fmt(fmt_name)
    code = ((e.astype(np.int64) + f.bias) << f.t) << f.pad
    return code.astype(storage_dtype(fmt_name))


def _ins(instr) -> Instruction:
    return instr if isinstance(instr, Instruction) else isa.lookup(instr)


@st.composite
def _tiles(draw, ins: Instruction, ks: tuple[str, ...], M: int, N: int, K: int, lead: tuple):
    klass = draw(st.sampled_from(ks))
    nblk = K // ins.scale_block if ins.scale else 0
    seed = None
    if klass in ("bits", "special"):
        a = draw(format_bits(ins.a, lead + (M, K), klass))
        b = draw(format_bits(ins.b, lead + (K, N), klass))
        c = draw(format_bits(ins.c, lead + (M, N), klass))
        sa = sb = None
        if nblk:
            sa = draw(format_bits(ins.scale, lead + (M, nblk), klass))
            sb = draw(format_bits(ins.scale, lead + (nblk, N), klass))
        return a, b, c, sa, sb, klass, seed
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    nb = int(np.prod(lead)) if lead else 1
    As, Bs, Cs, SAs, SBs = [], [], [], [], []
    lanes = max(M, N, M * N)
    for _ in range(nb):
        a, b, c = _classes.generate(klass, ins.a, ins.b, ins.c, K, lanes, rng)
        As.append(a[:M])
        Bs.append(np.ascontiguousarray(b[:N].T))
        Cs.append(c[:M * N].reshape(M, N))
        if nblk:
            SAs.append(_pow2(ins.scale, rng.integers(-3, 4, (M, nblk))))
            SBs.append(_pow2(ins.scale, rng.integers(-3, 4, (nblk, N))))

    def pack(xs):
        return np.stack(xs).reshape(lead + xs[0].shape) if lead else xs[0]
    sa = pack(SAs) if nblk else None
    sb = pack(SBs) if nblk else None
    return pack(As), pack(Bs), pack(Cs), sa, sb, klass, seed


def mma_inputs(instr: "str | Instruction", *, classes: "str | Sequence[str] | None" = None,
               batch: int | None = None):
    """Strategy of ``MMAInputs``: one tile (A (m, k), B (k, n), C (m, n), raw bits of the
    instruction's formats) of a probe class drawn from ``classes`` (default: all of CLASSES);
    ``batch=B`` adds a leading batch dimension of B tiles (as simulate and the hw harness
    take them)."""
    ins = _ins(instr)
    ks = _check_classes(classes)
    if batch is not None and int(batch) < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    lead = (int(batch),) if batch is not None else ()
    return _tiles(ins, ks, ins.m, ins.n, ins.k, lead).map(
        lambda t: MMAInputs(ins.name, t[5], t[0], t[1], t[2], t[3], t[4], t[6]))


def gemm_inputs(instr: "str | Instruction", *, classes: "str | Sequence[str] | None" = None,
                max_m: int = 32, max_n: int = 32, max_steps: int = 4):
    """Strategy of ``GemmInputs``: A (M, K), B (K, N), C (M, N) with 1 <= M <= max_m,
    1 <= N <= max_n (any sizes: every output element is one dot product) and K = k * s,
    1 <= s <= max_steps, of a probe class from ``classes``."""
    ins = _ins(instr)
    ks = _check_classes(classes)
    if min(max_m, max_n, max_steps) < 1:
        raise ValueError("max_m, max_n and max_steps must be >= 1")
    if ins.c != ins.d and max_steps > 1:
        max_steps = 1     # the accumulator cannot be carried (C and D formats differ)

    @st.composite
    def strat(draw):
        M = draw(st.integers(1, max_m))
        N = draw(st.integers(1, max_n))
        K = ins.k * draw(st.integers(1, max_steps))
        t = draw(_tiles(ins, ks, M, N, K, ()))
        return GemmInputs(ins.name, t[5], t[0], t[1], t[2], t[3], t[4], t[6])
    return strat()
