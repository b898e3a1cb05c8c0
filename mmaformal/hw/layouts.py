"""Fragment and shared-memory layouts of the harness's kernels (layer 5 front end, ``hw``).

What it is: for every runnable form (:mod:`mmaformal.hw.forms`) the index tables that map each
position of an operand *image* to a flat matrix index (:func:`operand_tables`). The layouts
are Python functions of (thread, element) that follow the PTX ISA ("Matrix fragments for
mma.m16n8kK", "wgmma register fragments", "shared memory matrix layout", no swizzle, K-major,
"tcgen05 data path layout D"); the runner gathers ``image = matrix.reshape(T, -1)[:, table]``
on the GPU, so the kernels read their registers with coalesced word loads and no layout
arithmetic of their own, and a layout fix is a Python edit, not a kernel edit.

Images (per tile, in elements of the operand's storage type):
- register operand: position ``(word * threads + thread) * per_word + sub`` holds the element
  ``i = word * per_word + sub`` of that thread's fragment; ``per_word`` elements are packed into
  one 32-bit register, element 0 in the low bits (64-bit registers for f64).
- shared-memory operand (wgmma, tcgen05; A is M x K, B is stored N x K, both K-major): byte
  ``(row // 8) * SBO + (kbyte // 16) * LBO + (row % 8) * 16 + kbyte % 16`` with the core matrix
  (8 rows x 16 bytes) layout and ``LBO = 128``, ``SBO = 256`` (no swizzle); sparse wgmma B rows
  are 64 bytes, so ``SBO = 512`` there.
- tensor-memory accumulator (tcgen05, M = 128): thread t of the warpgroup reads lane t = row t,
  register j = column j (``tcgen05.ld .32x32b``).
- wmma: the plain matrices (A, C, D row-major, B col_major), which load_matrix_sync reads.

Validated on an H100 (2026-11-21, 2026-11-24/25): every sm90 form's layout is exact and agrees
with a one-hot probe (SASS.md). The tcgen05 tables are compiled offline only (no sm_100 device
yet): the exact self-check is the gate before any campaign.

May import: numpy, :mod:`mmaformal.hw.forms`. Invariant: every table is a bijection from the
image positions that hold an element onto the tile group's matrix indices (-1: no element).
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from .forms import FORMAT_BITS, spec

__all__ = ["WGMMA_LBO", "WGMMA_SBO", "WGMMA_SP_LBO", "WGMMA_SP_SBO_A", "WGMMA_SP_SBO_B",
           "operand_tables", "per_word", "words"]

#: Default wgmma / tcgen05 descriptor strides for the no-swizzle K-major layout used by the
#: images: LBO = distance between the two core matrices adjacent along K, SBO = distance between
#: 8-row groups along M (or N). Source: PTX ISA, "Matrix Descriptor Format" (wgmma) and
#: "Shared memory descriptor" (tcgen05).
WGMMA_LBO = 128
WGMMA_SBO = 256
#: sparse wgmma strides (bytes): A (K/2 x size = 32 bytes a row: two core matrices along K) and
#: B (K x size = 64 bytes: four core matrices along K). Source: PTX ISA "Matrix Descriptor
#: Format" (no swizzle, K-major: LBO between core matrices along K, SBO between 8-row groups).
WGMMA_SP_LBO, WGMMA_SP_SBO_A, WGMMA_SP_SBO_B = 128, 256, 512

_SHAPE_RE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")


def _g(lane: int) -> int:  # groupID
    return lane >> 2


def _t(lane: int) -> int:  # threadID_in_group
    return lane & 3


# ---------------------------------------------------------------------------------------------
# mma.sync fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k*"). Each entry gives
# (elements per thread, f(lane, i) -> (row, col)) for A (M x K) and B (K x N).
# ---------------------------------------------------------------------------------------------

_MMA_AB = {
    # f16 / bf16
    ("m16n8k16", "16"): (
        (8, lambda l, i: (_g(l) + 8 * ((i >> 1) & 1), 2 * _t(l) + (i & 1) + 8 * (i >> 2))),
        (4, lambda l, i: (2 * _t(l) + (i & 1) + 8 * (i >> 1), _g(l))),
    ),
    ("m16n8k8", "16"): (
        (4, lambda l, i: (_g(l) + 8 * (i >> 1), 2 * _t(l) + (i & 1))),
        (2, lambda l, i: (2 * _t(l) + i, _g(l))),
    ),
    # tf32
    ("m16n8k8", "tf32"): (
        (4, lambda l, i: (_g(l) + 8 * (i & 1), _t(l) + 4 * (i >> 1))),
        (2, lambda l, i: (_t(l) + 4 * i, _g(l))),
    ),
    ("m16n8k16", "tf32"): (  # B of sparse m16n8k16 tf32 (PTX ISA Figure 124): k = t + 4i
        None,
        (4, lambda l, i: (_t(l) + 4 * i, _g(l))),
    ),
    ("m16n8k4", "tf32"): (
        (2, lambda l, i: (_g(l) + 8 * i, _t(l))),
        (1, lambda l, i: (_t(l), _g(l))),
    ),
    # e4m3 / e5m2
    ("m16n8k32", "8"): (
        (16, lambda l, i: (_g(l) + 8 * ((i >> 2) & 1), 4 * _t(l) + (i & 3) + 16 * (i >> 3))),
        (8, lambda l, i: (4 * _t(l) + (i & 3) + 16 * (i >> 2), _g(l))),
    ),
    ("m16n8k16", "8"): (
        (8, lambda l, i: (_g(l) + 8 * (i >> 2), 4 * _t(l) + (i & 3))),
        (4, lambda l, i: (4 * _t(l) + i, _g(l))),
    ),
    # f64
    ("m8n8k4", "f64"): (
        (1, lambda l, i: (_g(l), _t(l))),
        (1, lambda l, i: (_t(l), _g(l))),
    ),
    ("m16n8k4", "f64"): (
        (2, lambda l, i: (_g(l) + 8 * i, _t(l))),
        (1, lambda l, i: (_t(l), _g(l))),
    ),
    ("m16n8k8", "f64"): (
        (4, lambda l, i: (_g(l) + 8 * (i & 1), _t(l) + 4 * (i >> 1))),
        (2, lambda l, i: (_t(l) + 4 * i, _g(l))),
    ),
    ("m16n8k16", "f64"): (
        (8, lambda l, i: (_g(l) + 8 * (i & 1), _t(l) + 4 * (i >> 1))),
        (4, lambda l, i: (_t(l) + 4 * i, _g(l))),
    ),
    # f16 m8n8k4: four independent MMAs per warp, one per quad-pair (lanes 4q..4q+3 "low" and
    # 4q+16..4q+19 "high"); entries are (tile q of the warp's group, row, col). Source: PTX ISA
    # "Matrix Fragments for mma.m8n8k4 with .f16 floating point type" (row-major A, col-major B).
    ("m8n8k4", "16"): (
        (4, lambda l, i: (_qp(l), (l & 3) + 4 * (l >> 4), i)),
        (4, lambda l, i: (_qp(l), i, (l & 3) + 4 * (l >> 4))),
    ),
}


def _qp(lane: int) -> int:  # quad-pair of mma.m8n8k4 (f16): lanes 4q..4q+3 and 4q+16..4q+19
    return (lane >> 2) & 3

# C / D of mma.sync: m16n8 shapes hold 4 elements per thread, m8n8k4 (f64) holds 2.
_MMA_CD = {
    "m16n8": (4, lambda l, i: (_g(l) + 8 * (i >> 1), 2 * _t(l) + (i & 1))),
    "m8n8": (2, lambda l, i: (_g(l), 2 * _t(l) + i)),
    # f16 m8n8k4 (per quad-pair, see _MMA_AB): f16 C/D hold a whole row, f32 C/D are spread
    # (PTX ISA, "Matrix Fragments for mma.m8n8k4 with .f16", C/D figures 50-52)
    "m8n8k4.f16": (8, lambda l, i: (_qp(l), (l & 3) + 4 * (l >> 4), i)),
    "m8n8k4.f32": (8, lambda l, i: (_qp(l), (l & 1) + (i & 2) + 4 * (l >> 4),
                                    (i & 4) + (l & 2) + (i & 1))),
}


def _wgmma_d(n: int):
    """wgmma accumulator fragment (PTX ISA, "wgmma .m64nNk*" D layout): thread T of the
    warpgroup, warp w = T // 32 owns rows 16w..16w+15; element i of N/2."""

    def f(tid: int, i: int):
        w, l = tid >> 5, tid & 31
        return (16 * w + _g(l) + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * _t(l) + (i & 1))

    return (n // 2, f)


def _class(fmt: str) -> str:
    return {"f16": "16", "bf16": "16", "tf32": "tf32", "f64": "f64"}.get(fmt, str(FORMAT_BITS[fmt]))


def _mma_ab(shape: str, fmt: str):
    """(A layout, B layout) of a dense mma.sync shape: the table above where it has an entry,
    else the pattern shared by every packed format (PTX ISA "Matrix Fragments for mma.m16n8kK"
    and "mma.m8n8kK", .f16/.bf16 with 2, .s8/.u8/.e4m3/.e5m2 with 4, .s4/.u4 with 8, .b1 with 32
    elements per register; the B of sparse m16n8k32 .f16 follows it too): e per register; A: M = 16 holds rows g and g + 8 alternately per
    register, M = 8 row g; each register spans 4e consecutive k over the 4 threads of a group."""
    key = (shape, _class(fmt))
    if key in _MMA_AB:
        return _MMA_AB[key]
    M, N, K = map(int, _SHAPE_RE.match(shape).groups())
    e = 32 // FORMAT_BITS[fmt]
    if N != 8 or M not in (8, 16) or K % (4 * e) or FORMAT_BITS[fmt] > 16:
        raise ValueError(f"no mma fragment layout for {shape} {fmt}")
    b = (K // 4, lambda l, i: (_t(l) * e + i % e + 4 * e * (i // e), _g(l)))
    if M == 16:
        a = (K // 2, lambda l, i: (_g(l) + 8 * ((i // e) & 1),
                                   _t(l) * e + i % e + 4 * e * (i // (2 * e))))
    else:
        a = (K // 4, lambda l, i: (_g(l), _t(l) * e + i % e + 4 * e * (i // e)))
    return a, b


def per_word(fmt: str) -> int:
    """Elements of ``fmt`` packed into one 32-bit register word (1 for 32- and 64-bit)."""
    return max(1, 32 // FORMAT_BITS[fmt])


def _register_table(layout, threads: int, fmt: str, ncols: int, transpose: bool,
                    nrows: int = 0) -> np.ndarray:
    """Image position -> flat matrix index for a register operand.

    A layout entry is (row, col), or (tile, row, col) for grouped forms (f16 m8n8k4): the flat
    index is then into the group's tiles, ``tile * nrows * ncols + row * ncols + col``.
    """
    nelem, f = layout
    pw = per_word(fmt)
    assert nelem % pw == 0
    nwords = nelem // pw
    tab = np.empty(nwords * threads * pw, dtype=np.int64)
    for tid in range(threads):
        for i in range(nelem):
            rc = f(tid, i)
            g, (r, c) = (rc[0], rc[1:]) if len(rc) == 3 else (0, rc)
            word, sub = divmod(i, pw)
            flat = (c * ncols + r) if transpose else (r * ncols + c)
            tab[(word * threads + tid) * pw + sub] = g * nrows * ncols + flat
    return tab


def _smem_table(rows: int, k: int, fmt: str, lbo: int, sbo: int, kmajor_of_b: bool,
                n_for_b: int = 0) -> np.ndarray:
    """Image position -> flat matrix index for a K-major no-swizzle shared-memory operand.

    A: rows = M, element (r, k) -> flat r*K + k. B: rows = N (stored N x K), element (n, k) ->
    flat k*N + n of the logical K x N matrix.
    """
    es = FORMAT_BITS[fmt] // 8
    assert (k * es) % 16 == 0 and rows % 8 == 0
    pos = {}
    for r in range(rows):
        for kk in range(k):
            kb = kk * es
            byte = (r >> 3) * sbo + (kb >> 4) * lbo + (r & 7) * 16 + (kb & 15)
            pos[byte // es] = (kk * n_for_b + r) if kmajor_of_b else (r * k + kk)
    tab = np.full(max(pos) + 1, -1, dtype=np.int64)
    for p, v in pos.items():
        tab[p] = v
    return tab


def _tcgen05_d(n: int):
    """tcgen05 accumulator of M = 128 (PTX ISA "Data path layout D", cta_group::1): row r in
    tensor-memory lane r, column j in column j; thread t of the warpgroup reads lane t."""
    return (n, lambda tid, i: (tid, i))


def _mma(s) -> tuple:
    # sparse: A is the compressed M x K/2 matrix, laid out as the dense A of shape k/2
    # (PTX ISA "Matrix fragments for multiply-accumulate operation with sparse matrix A":
    # each register holds the non-zeros of its dense chunk, same rows and threads)
    (la, _) = _mma_ab(f"m{s.m}n{s.n}k{s.a_cols}", s.atype)
    (_, lb) = _mma_ab(s.shape, s.btype)
    if s.group > 1:
        lc, ld = (_MMA_CD[f"{s.shape}.{f}"] for f in (s.ctype, s.dtype))
    else:
        lc = ld = _MMA_CD["m8n8" if s.m == 8 else "m16n8"]
    return (_register_table(la, 32, s.atype, s.a_cols, False, s.m),
            _register_table(lb, 32, s.btype, s.n, False, s.k),
            _register_table(lc, 32, s.ctype, s.n, False, s.m),
            _register_table(ld, 32, s.dtype, s.n, False, s.m))


def _shared(s) -> tuple:
    """wgmma (dense and sparse) and tcgen05: A and B in shared memory, D in registers or tensor
    memory."""
    if s.family == "wgmma" and s.sparse:
        ta = _smem_table(s.m, s.k // 2, s.atype, WGMMA_SP_LBO, WGMMA_SP_SBO_A, False)
        tb = _smem_table(s.n, s.k, s.btype, WGMMA_SP_LBO, WGMMA_SP_SBO_B, True, n_for_b=s.n)
    else:
        ta = _smem_table(s.m, s.k, s.atype, WGMMA_LBO, WGMMA_SBO, False)
        tb = _smem_table(s.n, s.k, s.btype, WGMMA_LBO, WGMMA_SBO, True, n_for_b=s.n)
    acc = _tcgen05_d(s.n) if s.family == "tcgen05" else _wgmma_d(s.n)
    tc = _register_table(acc, 128, s.ctype, s.n, False)
    return ta, tb, tc, tc


def _wmma(s) -> tuple:
    """The plain matrices: A and C/D row-major, B col_major (N x K)."""
    kk, nn = np.meshgrid(np.arange(s.k), np.arange(s.n))  # image (n, k) -> B[k, n]
    return (np.arange(s.m * s.k), (kk * s.n + nn).reshape(-1), np.arange(s.m * s.n),
            np.arange(s.m * s.n))


@lru_cache(maxsize=None)
def operand_tables(name: str) -> dict[str, np.ndarray]:
    """Index tables {'a','b','c','d'} mapping image position -> flat matrix index.

    ``table[p] = -1`` marks an image position that holds no matrix element (zero-filled). For
    grouped forms (``spec.group`` > 1) the flat index runs over the group's tiles, each stored
    as usual (A M x K, B K x N, C and D M x N), one after the other.
    """
    s = spec(name)
    build = {"mma": _mma, "wgmma": _shared, "tcgen05": _shared, "wmma": _wmma}[s.family]
    out = dict(zip("abcd", build(s)))
    for t in out.values():
        t.setflags(write=False)
    return out


def words(name: str, role: str) -> int:
    """32-bit (f64: 64-bit) registers per thread of a register operand's image."""
    s = spec(name)
    fmt = {"a": s.atype, "b": s.btype, "c": s.ctype, "d": s.dtype}[role]
    return len(operand_tables(s.name)[role]) // (s.threads * per_word(fmt))
