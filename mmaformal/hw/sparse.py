"""Sparse A operands of ``mma.sp`` for the Hopper harness: compression and metadata words (layer 5, ``hw``).

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

May import: numpy and mmaformal.sparse (the group rule). Invariant: bit patterns are moved,
never interpreted, except "is the pattern zero" when compressing a dense A.
"""

from __future__ import annotations

import numpy as np

from ..sparse import group as _rule

__all__ = ["group", "compress", "expand", "row_patterns", "pattern_bits", "tile_words",
           "random_pos"]


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


def _check_pos(pos: np.ndarray, fmt: str, kh: int) -> np.ndarray:
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
    p = _check_pos(pos, fmt, kh)
    out = np.zeros((p.shape[0], p.shape[1], g), comp.dtype)
    np.put_along_axis(out, p, comp.reshape(p.shape), axis=-1)
    return out.reshape(*lead, M, kh * g // kept)


def row_patterns(pos: np.ndarray, fmt: str) -> np.ndarray:
    """Metadata bit string of every row (uint64 of ``pattern_bits`` bits), pos (..., M, K/2)."""
    g, kept, per = group(fmt)
    *lead, M, kh = pos.shape
    p = _check_pos(pos, fmt, kh).reshape(-1, kh)
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
