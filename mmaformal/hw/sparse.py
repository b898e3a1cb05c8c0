"""Sparse A operands of ``mma.sp`` and ``wgmma.sp`` for the harness: compression and metadata words (layer 5, ``hw``).

The harness's contract for a sparse instruction (K the dense depth): A is given either dense,
(..., M, K) with at most the allowed non-zero bit patterns per group, or compressed,
(..., M, K/2) together with ``pos`` (..., M, K/2): the position of each kept element inside its
group of the dense row. Groups (PTX ISA "Sparse matrix storage" for mma.sp):

- 16- and 8-bit formats (f16, bf16, e4m3, e5m2, s8, u8): 2 kept of every 4 (pos 0..3);
- tf32: 1 kept of every 2 (pos 0..1);
- 4-bit formats (s4, u4): 2 kept *pairs* of every 4 pairs, i.e. 4 of 8 (pos 0..7, kept in
  aligned pairs 2j, 2j + 1).

Metadata (PTX ISA, mma.sp "Metadata"): a row is a string of 2-bit indices, lowest bits first,
each the position of a kept element (16/8-bit), of a kept pair (4-bit), or, for tf32, two
indices 2p, 2p + 1 per kept element p (0b0100 or 0b1110). Rows of K = 16 (f16), 8 (tf32) take
16 bits, K = 32 (f16, 8-bit), 16 (tf32), 64 (4-bit) take 32 bits, K = 64 (8-bit) and 128
(4-bit) take 64 bits. Positions must be increasing inside a group (required by
``::ordered_metadata``; the harness uses the same rule for ``.sp``).

The kernels give every lane of the warp the same 32-bit metadata word (the per-thread layout of
the metadata registers is not needed then, whatever it is): a tile's rows must share one
pattern, 16-bit patterns are repeated in both halves and 64-bit patterns must have equal
halves. :func:`tile_words` splits a tile whose rows differ into one launch per pattern.

Sparse wgmma (``wgmma.mma_async.sp``) gives every thread of the warpgroup its own 32-bit word
(:func:`meta_words`): a row of A is a string of 4-bit *nibbles*, one per chunk (4 elements, 2
kept: the two 2-bit positions, the first kept element in the low bits; tf32: 2 elements, 1 kept
at p, nibble ``2p | (2p + 1) << 2``, i.e. 0b0100 or 0b1110). :func:`declared` says which (row,
chunk) each nibble of each thread's register holds: PTX ISA 9.7.15.6.2 gives the warp-level
figures of ``mma.sp`` (each warp of the warpgroup holds 16 rows, warp w rows 16w..16w+15), read
as below; :func:`mmaformal.hw.check.meta_probe` recovers the map from the silicon alone:

- f16/bf16 k32 and tf32 k16 (32-bit rows), selector i: lane 4g + 2i + j (j = 0, 1) holds chunks
  4j..4j+3 of row g in nibbles 0..3 and of row g + 8 in nibbles 4..7;
- 8-bit k64 (64-bit rows): lane 4g + t holds 8 chunks: t = 0 row g chunks 0..7, t = 1 row g + 8
  chunks 0..7, t = 2 row g chunks 8..15, t = 3 row g + 8 chunks 8..15.

Source of the map: the metadata (thread, value) layout of NVIDIA CUTLASS's sparse GMMA atoms
(``include/cute/atom/mma_traits_sm90_gmma_sparse.hpp``: ELayout_64x32, ELayout_64x16,
ELayout_64x64; ``tests/test_hw_wgmma_sp.py`` evaluates their shapes and strides independently);
the H100 runs of 2026-11-25 agree (counterexamples/hw/2026-11-25-h100-issue14d). Threads that
give no metadata (the other pair) get random *valid* words (:func:`random_words`), so a kernel
that read them would fail the exact self-check.

May import: numpy and mmaformal.sparse (the group rule). Invariant: bit patterns are moved,
never interpreted, except "is the pattern zero" when compressing a dense A.
"""

from __future__ import annotations

import numpy as np

from ..sparse import group as _rule

__all__ = ["group", "compress", "expand", "check_pos", "row_patterns", "pattern_bits",
           "tile_words", "random_pos", "declared", "DECLARED", "nibbles", "meta_words",
           "random_words", "random_kept"]


def group(fmt: str) -> tuple[int, int, int]:
    """(dense group size, kept per group, elements per 2-bit index) of a sparse A format;
    tf32's 'elements per index' is 0 (each kept element takes two indices). The group rule
    is mmaformal.sparse.group's (its one definition); this adds the metadata encoding."""
    if fmt not in ("f16", "bf16", "e4m3", "e5m2", "s8", "u8", "tf32", "s4", "u4"):
        raise ValueError(f"{fmt} has no sparse (mma.sp) form")
    g, kept, unit = _rule(fmt)
    return g, kept, 0 if fmt == "tf32" else unit


def pattern_bits(fmt: str, k: int) -> int:
    """Metadata bits of one row of dense depth k."""
    g, kept, per = group(fmt)
    n_idx = (k // g) * kept * 2 if per == 0 else (k // g) * kept // per
    return 2 * n_idx


def compress(dense: np.ndarray, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """(compressed A, pos) of a dense A (..., M, K) with at most the allowed non-zero bit
    patterns per group; unused kept slots take the lowest free positions (value 0).
    ValueError naming the first offending group."""
    g, kept, per = group(fmt)
    *lead, M, K = dense.shape
    if K % g:
        raise ValueError(f"sparse A: K = {K} is not a multiple of the group size {g}")
    x = dense.reshape(-1, K // g, g)
    nz = x != 0
    if per == 2:  # 4-bit: pairs are kept or dropped together
        nzp = nz.reshape(*nz.shape[:-1], g // 2, 2).any(-1)
        nz = np.repeat(nzp, 2, axis=-1)
    cnt = nz.sum(-1)
    if (cnt > kept).any():
        r, j = np.argwhere(cnt > kept)[0]
        idx = np.unravel_index(r, (*lead, M)) if lead else (r,)
        raise ValueError(f"sparse A: row {tuple(int(i) for i in idx)}, group at k = {j * g}.."
                         f"{j * g + g - 1} has {int(cnt[r, j])} non-zero elements; at most "
                         f"{kept} of {g} allowed" + (" (in aligned pairs)" if per == 2 else ""))
    # choose kept positions: non-zeros first, then the lowest zeros, then sort ascending
    order = np.argsort(~nz, axis=-1, kind="stable")[..., :kept]
    pos = np.sort(order, axis=-1)
    if per == 2:  # keep whole pairs: the chosen pair indices times 2 (+0, +1)
        pairs = np.sort(np.argsort(~nz[..., ::2], axis=-1, kind="stable")[..., :kept // 2], -1)
        pos = np.stack([2 * pairs, 2 * pairs + 1], -1).reshape(*pairs.shape[:-1], kept)
    vals = np.take_along_axis(x, pos, axis=-1)
    shape = (*lead, M, K // 2)
    return vals.reshape(shape), pos.astype(np.uint8).reshape(shape)


def check_pos(pos: np.ndarray, fmt: str, kh: int) -> np.ndarray:
    """The kept positions (rows, groups, kept) of ``pos`` (rows of K/2 = ``kh``); ValueError
    naming the first group whose positions are not increasing, below G (or not in pairs)."""
    g, kept, per = group(fmt)
    p = pos.reshape(-1, kh // kept, kept).astype(np.int64)
    bad = (p >= g).any(-1) | (np.diff(p, axis=-1) <= 0).any(-1)
    if per == 2:
        bad |= ((p[..., 0::2] % 2) != 0).any(-1) | ((p[..., 1::2] - p[..., 0::2]) != 1).any(-1)
    if bad.any():
        r, j = np.argwhere(bad)[0]
        raise ValueError(f"sparse metadata: row {int(r)}, compressed k = {j * kept}.."
                         f"{j * kept + kept - 1}: positions {p[r, j].tolist()} must be "
                         f"increasing, below {g}" + (", in aligned pairs" if per == 2 else ""))
    return p


def expand(comp: np.ndarray, pos: np.ndarray, fmt: str) -> np.ndarray:
    """The dense A (..., M, K) of a compressed A and its positions (zeros elsewhere)."""
    g, kept, _ = group(fmt)
    *lead, M, kh = comp.shape
    p = check_pos(pos, fmt, kh)
    out = np.zeros((p.shape[0], p.shape[1], g), comp.dtype)
    np.put_along_axis(out, p, comp.reshape(p.shape), axis=-1)
    return out.reshape(*lead, M, kh * g // kept)


def row_patterns(pos: np.ndarray, fmt: str) -> np.ndarray:
    """Metadata bit string of every row (uint64 of ``pattern_bits`` bits), pos (..., M, K/2)."""
    g, kept, per = group(fmt)
    *lead, M, kh = pos.shape
    p = check_pos(pos, fmt, kh).reshape(-1, kh)
    if per == 1:
        idx = p % g
    elif per == 2:
        idx = (p[:, 0::2] % g) // 2
    else:  # tf32: kept element p -> indices 2p, 2p + 1
        idx = np.stack([2 * (p % g), 2 * (p % g) + 1], -1).reshape(p.shape[0], -1)
    sh = (2 * np.arange(idx.shape[1])).astype(np.uint64)
    words = (idx.astype(np.uint64) << sh).sum(-1, dtype=np.uint64)
    return words.reshape(*lead, M)


def _repeated_half(pat: np.ndarray, w: int, k: int, why: str) -> np.ndarray:
    """The low w bits of every row pattern, which must equal its next w bits (the harness gives
    the metadata as one warp-uniform word); ValueError naming the first row that differs."""
    lo, hi = pat & np.uint64((1 << w) - 1), pat >> np.uint64(w)
    if (lo != hi).any():
        t, r = np.argwhere(lo != hi)[0]
        raise ValueError(f"sparse metadata: tile {int(t)} row {int(r)}: the harness needs "
                         f"the pattern of k < {k // 2} to repeat for k >= {k // 2}{why}")
    return lo


def tile_words(pos: np.ndarray, fmt: str, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tile index, 32-bit word) per launch and the (T, M) word of every row: pos (T, M, K/2).
    Tiles whose rows share a pattern make one launch; others one launch per distinct pattern
    (a row's D is then taken from the launch of its own word). ValueError for a 64-bit pattern
    whose 32-bit halves differ (needs the per-thread metadata layout, not implemented)."""
    bits = pattern_bits(fmt, k)
    pat = row_patterns(pos, fmt)  # (T, M)
    if bits == 64:
        pat = _repeated_half(pat, 32, k, " (64-bit metadata rows are given as one warp-uniform "
                                         "32-bit word)")
    elif bits == 16:
        pat = pat | (pat << np.uint64(16))
    ub = uniform_bits(fmt, k)
    if ub == 16 and bits == 32:
        _repeated_half(pat, 16, k, " for this form (see mmaformal.hw.sparse.PERIOD16)")
    pat = pat.astype(np.uint32)
    uniform = (pat == pat[:, :1]).all(1)
    tiles = [np.flatnonzero(uniform)]
    words = [pat[uniform, 0]]
    for t in np.flatnonzero(~uniform):
        u = np.unique(pat[t])
        tiles.append(np.full(len(u), t))
        words.append(u)
    ti = np.concatenate(tiles)
    order = np.argsort(ti, kind="stable")
    return ti[order], np.concatenate(words)[order].astype(np.uint32), pat


#: Forms whose warp-uniform metadata word must repeat every 16 bits along K: on the H100
#: (2026-11-24) sparse m16n8k32 .f16/.bf16 and m16n8k16 .tf32 failed the layout self-check with
#: a full 32-bit row pattern in every lane (7970 resp. 6766 of 8192 outputs wrong), so a lane's
#: register does not hold one whole row there (two rows of 16 bits each would explain it).
#: Source: counterexamples/hw/2026-11-24-h100-issue14.tar.zst (selfcheck).
PERIOD16 = {("f16", 32), ("bf16", 32), ("tf32", 16)}


def uniform_bits(fmt: str, k: int) -> int:
    """Metadata bits along K that one warp-uniform word may vary over (the pattern repeats)."""
    return 16 if (fmt, k) in PERIOD16 else min(32, pattern_bits(fmt, k))


def random_pos(fmt: str, k: int, tiles: int, rng: np.random.Generator) -> np.ndarray:
    """(tiles, K/2) uint8 random kept positions, one pattern per tile, every choice of kept
    positions per group equally likely; the pattern repeats along K every ``uniform_bits``
    bits of metadata (64-bit rows: the first half of K repeats in the second; see PERIOD16),
    which is what one warp-uniform metadata word can express."""
    g, kept, per = group(fmt)
    pairs = 2 if per == 2 else 1
    units = g // pairs
    ng = k // g
    rep = pattern_bits(fmt, k) // uniform_bits(fmt, k)
    ng //= rep
    pick = np.sort(np.argsort(rng.random((tiles, ng, units)), -1)[..., :kept // pairs], -1)
    pos = (pick[..., :, None] * pairs + np.arange(pairs)).reshape(tiles, -1)
    if rep > 1:
        pos = np.concatenate([pos] * rep, axis=1)
    return pos.astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# Sparse wgmma: one metadata word per thread of the warpgroup
# ---------------------------------------------------------------------------------------------


def declared(fmt: str, sel: int = 0) -> np.ndarray:
    """(128, 8, 2) int: the (row, chunk) of nibble q of thread tid's metadata word under
    sparsity selector ``sel``, -1 if none (the map of the module docstring)."""
    lay = np.full((128, 8, 2), -1, np.int64)
    for tid in range(128):
        w, lane = tid >> 5, tid & 31
        g, t = lane >> 2, lane & 3
        for q in range(8):
            if fmt in ("s8", "u8", "e4m3", "e5m2"):
                row = 16 * w + g + 8 * (t & 1)
                lay[tid, q] = (row, q + 8 * (t >> 1))
            elif t in (2 * sel, 2 * sel + 1):
                j = t - 2 * sel
                lay[tid, q] = (16 * w + g + 8 * (q >> 2), 4 * j + (q & 3))
    return lay


#: the declared map (selector 0) per A format of the sparse wgmma forms
DECLARED = {f: declared(f, 0) for f in ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8")}


def nibbles(pos: np.ndarray, fmt: str) -> np.ndarray:
    """(..., chunks) nibble of every chunk from kept positions (..., K/2)."""
    _, kept, _ = group(fmt)
    p = pos.astype(np.uint32)
    if kept == 1:
        return (2 * p) | ((2 * p + 1) << 2)
    return p[..., 0::2] | (p[..., 1::2] << 2)


def random_words(shape, fmt: str, rng: np.random.Generator) -> np.ndarray:
    """uint32 words of 8 random valid nibbles (filler for threads that give no metadata)."""
    g, kept, _ = group(fmt)
    pos = np.sort(np.argsort(rng.random((*shape, 8, g)), -1)[..., :kept], -1)
    nib = nibbles(pos.reshape(*shape, 8 * kept), fmt)
    return (nib << (4 * np.arange(8, dtype=np.uint32))).sum(-1, dtype=np.uint32)


def meta_words(pos: np.ndarray, fmt: str, layout: np.ndarray,
               filler: np.ndarray | None = None) -> np.ndarray:
    """(T, 128) uint32 metadata words of kept positions pos (T, 64, K/2) under ``layout``
    ((128, 8, 2) (row, chunk) per nibble, -1 for none); threads with no nibble take
    ``filler`` (T, 128) words (default 0)."""
    nib = nibbles(pos, fmt)                                         # (T, 64, chunks)
    T = pos.shape[0]
    out = np.zeros((T, 128), np.uint32) if filler is None else filler.astype(np.uint32).copy()
    used = (layout[..., 0] >= 0)                                    # (128, 8)
    tids = np.flatnonzero(used.any(1))
    out[:, tids] = 0
    for q in range(8):
        t = np.flatnonzero(used[:, q])
        r, c = layout[t, q, 0], layout[t, q, 1]
        out[:, t] |= nib[:, r, c] << np.uint32(4 * q)
    return out


def random_kept(fmt: str, k: int, shape, rng: np.random.Generator) -> np.ndarray:
    """Kept positions (*shape, K/2): every choice of kept positions per chunk equally likely
    (every row its own pattern: the per-thread words of sparse wgmma express any)."""
    g, kept, _ = group(fmt)
    pick = np.argsort(rng.random((*shape, k // g, g)), -1)[..., :kept]
    return np.sort(pick, -1).reshape(*shape, k // 2).astype(np.uint8)
