"""Sparse warpgroup MMA (``wgmma.mma_async.sp``, sm_90a) on the Hopper harness (layer 5, ``hw``).

What it is: the kernels, operand images, metadata words, layout checks and campaigns of the
sparse wgmma forms ``sm90/wgmma.sp.m64nNkK.<d>.<a>.<b>`` (f16/bf16 k32, tf32 k16, e4m3/e5m2 and
s8/u8 k64). One warpgroup runs one instruction per tile:

- A, compressed (64 x K/2: the kept elements of every row, PTX ISA 9.7.15.6.1 "Sparse matrix
  storage"), from shared memory through a descriptor, K-major without swizzle exactly as the
  dense harness lays out a 64 x K/2 A (:mod:`mmaformal.hw.kernels`: LBO 128, SBO 256);
- B (K x N, stored N x K, K-major) from shared memory; its rows are K * size = 64 bytes, four
  core matrices along K, so its SBO is 512 (LBO 128);
- the accumulator in registers (the dense wgmma D fragment);
- the 32-bit metadata register ``sp-meta`` of every thread and the sparsity selector
  ``sp-sel`` (an immediate: 0 or 1 for f16/bf16/tf32, where one thread pair of each group of
  four gives the metadata; 0 for the 8-bit types, where every thread does).

Metadata: a row of A is a string of 4-bit *nibbles*, one per chunk (4 elements, 2 kept: the two
2-bit positions, the first kept element in the low bits; tf32: 2 elements, 1 kept at p, nibble
``2p | (2p + 1) << 2``, i.e. 0b0100 or 0b1110). :data:`DECLARED` says which (row, chunk) each
nibble of each thread's register holds: PTX ISA 9.7.15.6.2 gives the warp-level figures of
``mma.sp`` (each warp of the warpgroup holds 16 rows, warp w rows 16w..16w+15), read here as
below, and :func:`meta_probe` recovers the map from the silicon alone (one nibble of one thread
changed at a time, B rows coded by chunk), so a wrong reading is found by a probe:

- f16/bf16 k32 and tf32 k16 (32-bit rows), selector i: lane 4g + 2i + j (j = 0, 1) holds chunks
  4j..4j+3 of row g in nibbles 0..3 and of row g + 8 in nibbles 4..7;
- 8-bit k64 (64-bit rows): lane 4g + t holds 8 chunks: t = 0 row g chunks 0..7, t = 1 row g + 8
  chunks 0..7, t = 2 row g chunks 8..15, t = 3 row g + 8 chunks 8..15.

Source of the map: it is the metadata (thread, value) layout of NVIDIA CUTLASS's sparse GMMA
atoms (``include/cute/atom/mma_traits_sm90_gmma_sparse.hpp``: ELayout_64x32, ELayout_64x16,
ELayout_64x64; ``tests/test_hw_wgmma_sp.py`` evaluates their shapes and strides independently),
and it agrees with what the H100 showed for ``mma.sp`` with warp-uniform words (2026-11-24,
:mod:`mmaformal.hw.sparse`: m16n8k32 f16/bf16 and m16n8k16 tf32 needed words that repeat every
16 bits, m16n8k64 s8/u8 passed with 32-bit words). Status (2026-11-25): compiled and
disassembled offline only (SASS.md); not yet confirmed on silicon by the probe.

Threads that give no metadata (the other pair) get random *valid* words, so a kernel that read
them would fail the exact self-check. Every row of a tile may have its own pattern.

May import: numpy, :mod:`mmaformal.classes`, the other hw modules (cupy lazily through the
runner), :mod:`mmaformal.simulate` and :mod:`mmaformal.theory` inside the campaign functions.
Invariant: raw bits in, raw bits out; the kernels move bit patterns, never values.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import kernels

__all__ = ["FORMS", "names", "parse", "tables", "source", "DECLARED", "chunk_shape",
           "meta_words", "run", "meta_probe", "selfcheck", "campaign", "replay_digest",
           "replay_sample", "main"]

#: the names, tables and source of the sparse forms live in mmaformal.hw.kernels
FORMS = kernels.WGMMA_SP_FORMS
LBO, SBO_A, SBO_B = kernels.WGMMA_SP_LBO, kernels.WGMMA_SP_SBO_A, kernels.WGMMA_SP_SBO_B
n_ok = kernels.wgmma_sp_n_ok
names = kernels.wgmma_sp_names
parse = kernels.wgmma_sp_parse
ptx = kernels.wgmma_sp_ptx
tables = kernels.wgmma_sp_tables
source = kernels.wgmma_sp_source
_I8 = ("s8", "u8")
# ---------------------------------------------------------------------------------------------


def chunk_shape(fmt: str) -> tuple[int, int]:
    """(chunk size, kept per chunk): tf32 1 of 2, the others 2 of 4."""
    return (2, 1) if fmt == "tf32" else (4, 2)


def _declared(fmt: str, sel: int) -> np.ndarray:
    """(128, 8, 2) int: the (row, chunk) of nibble q of thread tid's metadata word, -1 if none."""
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


def declared(fmt: str, sel: int = 0) -> np.ndarray:
    return _declared(fmt, sel)


#: the declared map's key per A format (see the module docstring)
DECLARED = {f: _declared(f, 0) for f in ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8")}


def _nibbles(pos: np.ndarray, fmt: str) -> np.ndarray:
    """(..., chunks) nibble of every chunk from kept positions (..., K/2)."""
    g, kept = chunk_shape(fmt)
    p = pos.astype(np.uint32)
    if kept == 1:
        return (2 * p) | ((2 * p + 1) << 2)
    return p[..., 0::2] | (p[..., 1::2] << 2)


def random_words(shape, fmt: str, rng: np.random.Generator) -> np.ndarray:
    """uint32 words of 8 random valid nibbles (filler for threads that give no metadata)."""
    g, kept = chunk_shape(fmt)
    pos = np.sort(np.argsort(rng.random((*shape, 8, g)), -1)[..., :kept], -1)
    nib = _nibbles(pos.reshape(*shape, 8 * kept), fmt)
    return (nib << (4 * np.arange(8, dtype=np.uint32))).sum(-1, dtype=np.uint32)


def meta_words(pos: np.ndarray, fmt: str, layout: np.ndarray,
               filler: np.ndarray | None = None) -> np.ndarray:
    """(T, 128) uint32 metadata words of kept positions pos (T, 64, K/2) under ``layout``
    ((128, 8, 2) (row, chunk) per nibble, -1 for none); threads with no nibble take
    ``filler`` (T, 128) words (default 0)."""
    nib = _nibbles(pos, fmt)                                        # (T, 64, chunks)
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


# ---------------------------------------------------------------------------------------------
# Tables and kernel source
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Running (GPU)
# ---------------------------------------------------------------------------------------------

_FUNCS: dict = {}


def _function(name: str, sel: int):
    from . import runner
    key = (name, sel)
    f = _FUNCS.get(key)
    if f is None:
        cp = runner._cupy()
        src = source(name, sel)
        nv = runner.nvcc_path()
        tag = f"nvcc|{runner.ARCH_FLAG}|{runner.nvcc_version(nv)}" if nv else "nvrtc"
        h = hashlib.sha256((tag + "\n" + src).encode()).hexdigest()[:32]
        out = runner._cache_dir() / f"{h}.cubin"
        if not out.exists():
            tmp = out.with_suffix(f".{os.getpid()}.tmp")
            runner._compile_nvcc(src, tmp, nv) if nv else runner._compile_nvrtc(src, tmp)
            os.replace(tmp, out)
        f = cp.RawModule(path=str(out)).get_function(kernels.KERNEL_NAME)
        _FUNCS[key] = f
    return f


def compile_all(names_, sel: int = 0) -> dict:
    """Compile (no GPU needed with nvcc) every named kernel; {name: error} of the failures."""
    from . import runner
    nv = runner.nvcc_path()
    errs = {}
    for n in names_:
        src = source(n, sel)
        h = hashlib.sha256((f"nvcc|{runner.ARCH_FLAG}|{runner.nvcc_version(nv)}\n" + src)
                           .encode()).hexdigest()[:32]
        out = runner._cache_dir() / f"{h}.cubin"
        if out.exists():
            continue
        try:
            tmp = out.with_suffix(f".{os.getpid()}.tmp")
            runner._compile_nvcc(src, tmp, nv)
            os.replace(tmp, out)
        except Exception as e:  # noqa: BLE001
            errs[n] = str(e)[-600:]
    return errs


@lru_cache(maxsize=None)
def _dev_tables(name: str):
    from . import runner
    cp = runner._cupy()
    t = tables(name)
    inv = np.empty_like(t["d"])
    inv[t["d"]] = np.arange(len(t["d"]))
    return {k: cp.asarray(v) for k, v in t.items()} | {"d_inv": cp.asarray(inv)}


def launch_images(name, a_img, b_img, c_img, e_img, sel: int = 0):
    """Run the kernel on device images (T, len(table)) and metadata words (T, 128)."""
    from . import runner
    cp = runner._cupy()
    s = parse(name)
    T = int(a_img.shape[0])
    d_img = cp.empty((T, len(tables(name)["d"])), dtype=s.storage("d"))
    if T == 0:
        return d_img
    f = _function(name, sel)
    blocks = min(T, runner._sm_count() * 16)
    f((blocks,), (128,), (cp.ascontiguousarray(a_img), cp.ascontiguousarray(b_img),
                          cp.ascontiguousarray(c_img), d_img, np.int64(T),
                          cp.ascontiguousarray(e_img), np.uint32(LBO),
                          np.uint32(SBO_A), np.uint32(SBO_B)))
    return d_img


def run_words(name: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, e: np.ndarray,
              sel: int = 0, chunk_tiles: int = 1 << 14) -> np.ndarray:
    """D (T, 64, N) of compressed A (T, 64, K/2), B (T, K, N), C (T, 64, N) and metadata words
    e (T, 128), raw bits."""
    from . import runner
    cp = runner._cupy()
    runner._device()
    s = parse(name)
    T = a.shape[0]
    want = {"a": (s.m, s.k // 2), "b": (s.k, s.n), "c": (s.m, s.n)}
    for role, x in (("a", a), ("b", b), ("c", c)):
        if x.shape != (T, *want[role]) or x.dtype != s.storage(role):
            raise ValueError(f"{s.name}: {role.upper()} must be {s.storage(role)} of shape "
                             f"(T, {want[role][0]}, {want[role][1]}), got {x.dtype} {x.shape}")
    if e.shape != (T, 128):
        raise ValueError(f"{s.name}: metadata words must be (T, 128), got {e.shape}")
    tabs = _dev_tables(s.name)
    d = np.empty((T, s.m * s.n), s.storage("d"))
    for lo in range(0, T, chunk_tiles):
        hi = min(T, lo + chunk_tiles)
        imgs = [cp.take(cp.asarray(np.ascontiguousarray(x[lo:hi]).reshape(hi - lo, -1)), tabs[r], axis=1)
                for x, r in ((a, "a"), (b, "b"), (c, "c"))]
        d_img = launch_images(s.name, *imgs, cp.asarray(np.ascontiguousarray(e[lo:hi])), sel)
        d[lo:hi] = cp.take(d_img, tabs["d_inv"], axis=1).get()
    return d.reshape(T, s.m, s.n)


def run(name: str, a, b, c, meta=None, *, layout: np.ndarray | None = None, sel: int = 0,
        rng: np.random.Generator | None = None) -> np.ndarray:
    """D = A*B + C on the GPU: A dense (..., 64, K) with the allowed zeros, or compressed
    (..., 64, K/2) with ``meta`` (kept positions, the same shape); raw bits in and out."""
    from . import sparse
    s = parse(name)
    a = np.asarray(a)
    if meta is None:
        a, meta = sparse.compress(a, s.atype)
    lead = a.shape[:-2]
    T = int(np.prod(lead, dtype=np.int64)) if lead else 1
    A = np.ascontiguousarray(a).reshape(T, s.m, s.k // 2)
    P = np.ascontiguousarray(meta).reshape(T, s.m, s.k // 2)
    sparse._check_pos(P.reshape(-1, s.k // 2), s.atype, s.k // 2)
    lay = DECLARED[s.atype] if layout is None else layout
    fill = random_words((T, 128), s.atype, rng or np.random.default_rng(0))
    E = meta_words(P, s.atype, lay, fill)
    D = run_words(s.name, A, np.ascontiguousarray(b).reshape(T, s.k, s.n),
                  np.ascontiguousarray(c).reshape(T, s.m, s.n), E, sel)
    return D.reshape(*lead, s.m, s.n)


# ---------------------------------------------------------------------------------------------
# Layout probe and exact self-check
# ---------------------------------------------------------------------------------------------


def meta_probe(name: str, sel: int = 0) -> dict:
    """Recover the metadata map from the hardware: every thread's word holds nibble 0b0100
    (kept positions 0, 1 of every chunk; tf32: element 0) but one nibble q of one thread, set
    to 0b1110 (positions 2, 3; tf32: element 1); A is all ones, B row k is the code of chunk c
    at the last position of chunk c, 0 elsewhere (codes: the nch smallest integers exact in
    B's format, c + 1 where they fit), C = 0. A row whose D becomes the code of chunk c names (row, chunk) of that
    nibble. Returns {'layout': (128, 8, 2), 'consistent', 'message', 'agrees'}."""
    from . import check
    s = parse(name)
    g, kept = chunk_shape(s.atype)
    nch = s.k // g
    kh = s.k // 2
    one_a = check.encode_ints([1], s.atype)[0]
    codes = check.exact_ints(s.btype, nch)          # c + 1, or the nch smallest exact ones
    Bk = np.zeros(s.k, np.int64)
    Bk[np.arange(nch) * g + g - 1] = codes
    B = np.broadcast_to(check.encode_ints(Bk, s.btype)[:, None], (s.k, s.n))
    T = 128 * 8
    A = np.full((T, s.m, kh), one_a, s.storage("a"))
    Bt = np.ascontiguousarray(np.broadcast_to(B, (T, s.k, s.n)))
    C = np.zeros((T, s.m, s.n), s.storage("c"))
    E = np.full((T, 128), 0x44444444, np.uint32)
    tid, q = np.divmod(np.arange(T), 8)
    E[np.arange(T), tid] = (0x44444444 & ~(np.uint32(0xF) << (4 * q).astype(np.uint32))) \
        | (np.uint32(0xE) << (4 * q).astype(np.uint32))
    D = run_words(s.name, A, Bt, C, E, sel)
    vals, ok = check.decode_ints(D, s.dtype)
    lay = np.full((128, 8, 2), -1, np.int64)
    problems = []
    if not ok.all() or (vals[:, :, :1] != vals).any():
        problems.append("D not exact or not equal along N")
    v = vals[:, :, 0]
    for i in range(T):
        rows = np.flatnonzero(v[i])
        if len(rows) > 1 or (len(rows) == 1 and int(v[i, rows[0]]) not in codes):
            problems.append(f"thread {tid[i]} nibble {q[i]}: rows {rows.tolist()[:4]} "
                            f"values {v[i, rows].tolist()[:4]}")
        elif len(rows) == 1:
            lay[tid[i], q[i]] = (rows[0], codes.index(int(v[i, rows[0]])))
    hit = lay[lay[..., 0] >= 0]
    cells = {(int(r), int(c)) for r, c in hit}
    if len(hit) != s.m * nch or len(cells) != s.m * nch:
        problems.append(f"{len(hit)} nibbles reach {len(cells)} of {s.m * nch} (row, chunk) cells")
    want = _declared(s.atype, sel)
    agrees = bool(np.array_equal(lay, want))
    consistent = not problems
    msg = (f"{s.name} sel {sel}: metadata probe {'consistent' if consistent else 'INCONSISTENT'}"
           f", {'agrees with' if agrees else 'DIFFERS from'} the declared map")
    if problems:
        msg += ": " + "; ".join(problems[:5])
    elif not agrees:
        bad = np.argwhere((lay != want).any(-1))[:4]
        msg += ": " + "; ".join(f"thread {t} nibble {qq} -> {lay[t, qq].tolist()} (declared "
                                f"{want[t, qq].tolist()})" for t, qq in bad)
    return {"layout": lay, "consistent": consistent, "agrees": agrees, "message": msg}


def random_pos(fmt: str, k: int, shape, rng: np.random.Generator) -> np.ndarray:
    """Kept positions (*shape, K/2): every choice of kept positions per chunk equally likely."""
    g, kept = chunk_shape(fmt)
    pick = np.argsort(rng.random((*shape, k // g, g)), -1)[..., :kept]
    return np.sort(pick, -1).reshape(*shape, k // 2).astype(np.uint8)


def _dense(comp: np.ndarray, pos: np.ndarray, fmt: str, k: int) -> np.ndarray:
    g, kept = chunk_shape(fmt)
    *lead, kh = comp.shape
    out = np.zeros((*lead, k // g, g), comp.dtype)
    np.put_along_axis(out, pos.reshape(*lead, k // g, kept).astype(np.int64),
                      comp.reshape(*lead, k // g, kept), -1)
    return out.reshape(*lead, k)


def selfcheck(name: str, layout: np.ndarray | None = None, sel: int = 0, tiles: int = 32,
              seed: int = 0, uniform: bool = False) -> tuple[bool, str]:
    """Exact small integers, every row its own random kept positions, random valid words in
    the threads that give no metadata: D must equal the integer product A*B + C.
    ``uniform``: every nibble of every thread 0b0100 (positions 0, 1 kept everywhere), which no
    metadata map can get wrong: a failure then lies in the A or B shared-memory layout."""
    from . import check
    s = parse(name)
    rng = np.random.default_rng(seed)
    kh = s.k // 2

    def ints(fmt, size):
        return rng.integers(0, 9, size=size) if fmt == "u8" else rng.integers(-4, 5, size=size)

    comp = ints(s.atype, (tiles, s.m, kh))
    if s.atype == "u8":     # tile 0: distinct entries along k expose k-swaps inside a row
        comp[0] = (np.arange(kh) % 9)[None, :] * np.ones((s.m, 1), int)
    else:
        comp[0] = (np.arange(kh) % 9 - 4)[None, :] * np.where(np.arange(s.m) % 2, 1, -1)[:, None]
    pos = random_pos(s.atype, s.k, (tiles, s.m), rng)
    B = ints(s.btype, (tiles, s.k, s.n))
    C = rng.integers(-16, 17, size=(tiles, s.m, s.n))
    want = np.matmul(_dense(comp, pos, s.atype, s.k), B) + C
    lay = DECLARED[s.atype] if layout is None else layout
    if sel:
        lay = _declared(s.atype, sel) if layout is None else layout
    E = meta_words(pos, s.atype, lay, random_words((tiles, 128), s.atype, rng))
    if uniform:
        pos = np.broadcast_to(np.tile(np.arange(kh // (s.k // chunk_shape(s.atype)[0])),
                                      s.k // chunk_shape(s.atype)[0]), pos.shape).astype(np.uint8)
        want = np.matmul(_dense(comp, pos, s.atype, s.k), B) + C
        E = np.full((tiles, 128), 0x44444444, np.uint32)
    d = run_words(s.name, check.encode_ints(comp, s.atype), check.encode_ints(B, s.btype),
                  check.encode_ints(C, s.ctype), E, sel)
    got, ok = check.decode_ints(d, s.dtype)
    bad = ~ok | (got != want)
    if not bad.any():
        how = "uniform 0b0100 metadata" if uniform else "per-row metadata"
        return True, (f"{s.name}: {tiles} tiles x {s.m}x{s.n} outputs (K={s.k}, {how}, "
                      f"sp-sel {sel}) all exact = A*B + C")
    ex = "; ".join(f"tile {t} D[{i},{j}] bits 0x{int(d[t, i, j]):x} want {int(want[t, i, j])}"
                   for t, i, j in np.argwhere(bad)[:3])
    return False, f"{s.name} sp-sel {sel}: {int(bad.sum())}/{bad.size} outputs differ ({ex})"


# ---------------------------------------------------------------------------------------------
# Campaigns
# ---------------------------------------------------------------------------------------------

#: rows and columns of tile 0 kept whole in a record (8 x 8 dot products per class)
SAMPLE_ROWS = np.arange(0, 64, 9)[:8]   # 0, 9, ..., 63: every warp, both row halves
SAMPLE_COLS = 8


def tiles(klass: str, name: str, T: int, rng: np.random.Generator):
    """(A compressed (T, 64, K/2), pos (T, 64, K/2), B (T, K, N), C (T, 64, N)) of one class.

    Per tile one random base pattern; the kept B rows (of that pattern) and A are drawn from
    the class with depth K/2 (so "cancel" cancels over the terms the instruction multiplies),
    the dropped B rows from the class too. Odd tiles give every row its own random pattern
    (the metadata layout at work; the class's pairing of A and B terms holds on even tiles).
    C: T*64/4 accumulators of the class placed at random in the tiles (as hw.validate's
    fast_c, a quarter of the pool: the class's accumulators cost as much to draw as its rows)."""
    from .. import classes as C
    s = parse(name)
    M, N, K = s.m, s.n, s.k
    kh = K // 2
    a, _, _ = C.generate(klass, s.atype, s.btype, s.ctype, kh, T * M, rng)
    _, b, _ = C.generate(klass, s.atype, s.btype, s.ctype, kh, T * N, rng)
    _, bu, _ = C.generate(klass, s.atype, s.btype, s.ctype, kh, T * N, rng)
    _, _, c = C.generate(klass, s.atype, s.btype, s.ctype, kh, max(1, T * M // 4), rng)
    base = random_pos(s.atype, K, (T,), rng)                           # (T, K/2)
    g, kept = chunk_shape(s.atype)
    sel = (np.arange(kh) // kept * g)[None, :] + base.astype(np.int64)  # dense k of kept slots
    keep = np.zeros((T, K), bool)
    np.put_along_axis(keep, sel, True, axis=1)
    B = np.empty((T, K, N), b.dtype)
    B[np.repeat(np.arange(T), kh), sel.reshape(-1)] = \
        b.reshape(T, N, kh).transpose(0, 2, 1).reshape(T * kh, N)
    B[np.nonzero(~keep)] = bu.reshape(T, N, kh).transpose(0, 2, 1).reshape(T * kh, N)
    pos = np.repeat(base[:, None, :], M, axis=1)
    odd = np.arange(T) % 2 == 1
    pos[odd] = random_pos(s.atype, K, (int(odd.sum()), M), rng)
    Cm = c[rng.integers(0, len(c), size=(T, M, N))]
    return a.reshape(T, M, kh), pos, B, Cm


def _hex(v) -> str:
    return hex(int(v))


def campaign(name: str, tests: int, seed: int, out_dir: Path | None, layout: np.ndarray,
             klasses=None, chunk_dots: int = 1 << 21, layout_source: str = "declared",
             rival_chunks: int = 1, rival_dots: int = 1 << 17, max_cex: int = 20) -> dict:
    """>= ``tests`` dot products of every class on the GPU and in ``simulate`` (primary
    theory; the evaluable rivals on the first ``rival_dots`` of each class), compared
    bit for bit. Writes <name>.json (counts, digests, counterexamples) and <name>.npz (8 x 8
    dot products of tile 0 per class)."""
    from .. import classes as C
    from .. import theory as _theory
    from ..simulate import simulate
    from . import runner
    from .validate import _rivals
    klasses = list(klasses or C.CLASSES)
    s = parse(name)
    ok, msg = selfcheck(name, layout)
    if not ok:
        raise RuntimeError(f"{name}: layout self-check failed, campaign stopped: {msg}")
    prim = _theory.resolve(name)
    rivs = _rivals(name, prim)
    rng = np.random.default_rng(seed)
    per_class = -(-tests // len(klasses))
    dpt = s.m * s.n
    res = {"instruction": name, "tests": 0, "tests_asked": tests, "mismatches": 0, "classes": {},
           "device": runner.device_info(),
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "seed": seed, "theory": prim.id, "theory_hash": prim.hash(),
           "layout_selfcheck": msg, "metadata_layout": layout_source,
           "generator": "mmaformal.hw.wgmma_sp.tiles", "chunk_dots": chunk_dots,
           "rivals": {t.id: {"status": t.status, "tests": 0, "mismatches": 0, "classes": {},
                             "counterexamples": []} for t in rivs}}
    cex, samples = [], {}
    t_gen = t_gpu = t_sim = 0.0
    for klass in klasses:
        done = mism = nchunk = 0
        h = hashlib.sha256()
        while done < per_class:
            T = max(1, min(per_class - done, chunk_dots) // dpt)
            t0 = time.perf_counter()
            A, P, B, Cm = tiles(klass, name, T, rng)
            t1 = time.perf_counter()
            D = run(name, A, B, Cm, P, layout=layout, rng=rng)
            t2 = time.perf_counter()
            Ds = simulate(name, A, B, Cm, meta=P)
            h.update(np.ascontiguousarray(D).tobytes())
            bad = np.nonzero(D != Ds)
            mism += len(bad[0])
            for t, i, j in list(zip(*bad))[: max(0, max_cex - sum(x["class"] == klass for x in cex))]:
                cex.append({"class": klass, "a": [_hex(x) for x in A[t, i]],
                            "meta": [int(x) for x in P[t, i]],
                            "b": [_hex(x) for x in B[t, :, j]], "c": _hex(Cm[t, i, j]),
                            "hardware": _hex(D[t, i, j]), "simulated": _hex(Ds[t, i, j])})
            if nchunk < rival_chunks:
                rt = max(1, rival_dots // dpt)      # the rivals on the first tiles of a class
                for th in rivs:
                    rv = res["rivals"][th.id]
                    Dr = simulate(name, A[:rt], B[:rt], Cm[:rt], meta=P[:rt], theory=th)
                    rb = np.nonzero(D[:rt] != Dr)
                    rv["tests"] += int(Dr.size)
                    rv["mismatches"] += len(rb[0])
                    rv["classes"][klass] = rv["classes"].get(klass, 0) + len(rb[0])
                    for t, i, j in list(zip(*rb))[: max(0, 3 - sum(
                            x["class"] == klass for x in rv["counterexamples"]))]:
                        rv["counterexamples"].append(
                            {"class": klass, "a": [_hex(x) for x in A[t, i]],
                             "meta": [int(x) for x in P[t, i]],
                             "b": [_hex(x) for x in B[t, :, j]], "c": _hex(Cm[t, i, j]),
                             "hardware": _hex(D[t, i, j]), "simulated": _hex(Dr[t, i, j])})
            if klass not in samples:
                r = SAMPLE_ROWS
                samples[klass] = (A[0, r], P[0, r], B[0, :, :SAMPLE_COLS],
                                  Cm[0][np.ix_(r, np.arange(SAMPLE_COLS))],
                                  D[0][np.ix_(r, np.arange(SAMPLE_COLS))])
            t_gen += t1 - t0
            t_gpu += t2 - t1
            t_sim += time.perf_counter() - t2
            done += T * dpt
            nchunk += 1
        res["classes"][klass] = {"tests": done, "mismatches": int(mism), "sha256": h.hexdigest()}
        res["tests"] += done
        res["mismatches"] += int(mism)
    res["seconds"] = {"generate": round(t_gen, 2), "gpu": round(t_gpu, 3),
                      "simulate": round(t_sim, 2)}
    res["rates"] = {"gpu_dots_per_s": round(res["tests"] / max(t_gpu, 1e-9)),
                    "simulate_dots_per_s": round(res["tests"] / max(t_sim, 1e-9))}
    res["counterexamples"] = cex
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        stem = name.replace("/", "_")
        (out_dir / f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n")
        arrays = {}
        for k, (a_, p_, b_, c_, d_) in samples.items():
            arrays.update({f"{k}.a": a_, f"{k}.meta": p_, f"{k}.b": b_, f"{k}.c": c_,
                           f"{k}.d": d_})
        np.savez_compressed(out_dir / f"{stem}.npz", **arrays)
    return res


def replay_digest(rec: dict, theory=None, klasses=None) -> dict:
    """Regenerate a campaign's inputs from its seed (the same calls to the same generator as
    :func:`campaign`, the filler words included) and compare the SHA-256 of ``simulate``'s D
    with the hardware's: {class: digest equal}. Equal digests = every dot product agrees."""
    from ..simulate import simulate
    name = rec["instruction"]
    s = parse(name)
    rng = np.random.default_rng(rec["seed"])
    names_ = list(rec["classes"])
    per_class = -(-rec["tests_asked"] // len(names_))
    out = {}
    for klass in names_:
        done = 0
        h = hashlib.sha256()
        while done < per_class:
            T = max(1, min(per_class - done, rec["chunk_dots"]) // (s.m * s.n))
            A, P, B, Cm = tiles(klass, name, T, rng)
            random_words((T, 128), s.atype, rng)          # the filler words of run()
            if klasses is None or klass in klasses:
                h.update(np.ascontiguousarray(simulate(name, A, B, Cm, meta=P, theory=theory))
                         .tobytes())
            done += T * s.m * s.n
        if klasses is None or klass in klasses:
            out[klass] = h.hexdigest() == rec["classes"][klass]["sha256"]
    return out


def replay_sample(name: str, z, klass: str, theory=None) -> tuple[np.ndarray, np.ndarray]:
    """(simulated, hardware) D of a record's kept sample block (rows of tile 0 and the first
    columns of B; sparse forms with their kept positions): the block is put in rows 0.. and
    columns 0.. of one tile, zeros elsewhere, and simulated."""
    from .. import isa
    from ..simulate import simulate
    ins = isa.lookup(name)
    a, b, c, d = (z[f"{klass}.{x}"] for x in ("a", "b", "c", "d"))
    r, nc = a.shape[0], b.shape[1]
    A = np.zeros((1, ins.m, a.shape[1]), a.dtype)
    A[0, :r] = a
    B = np.zeros((1, ins.k, ins.n), b.dtype)
    B[0, :, :nc] = b
    Cm = np.zeros((1, ins.m, ins.n), c.dtype)
    Cm[0, :r, :nc] = c
    P = None
    if ins.sparse:
        p = z[f"{klass}.meta"]
        P = np.broadcast_to(p[:1], (ins.m, p.shape[1])).copy()[None]
        P[0, :r] = p
    D = simulate(name, A, B, Cm, meta=P, theory=theory)
    return D[0, :r, :nc], d


# ---------------------------------------------------------------------------------------------
# Device batch: mmaformal hw wgmma-sp --out DIR [--tests N] [--workers W] [--names FILE]
# CPU replay:   mmaformal hw wgmma-sp --out DIR --replay REC.json ...
# ---------------------------------------------------------------------------------------------

#: the A formats whose metadata layout is probed once (a map per A format)
PROBE_FORMS = ("sm90/wgmma.sp.m64n8k32.f32.f16.f16", "sm90/wgmma.sp.m64n8k32.f32.bf16.bf16",
               "sm90/wgmma.sp.m64n8k16.f32.tf32.tf32", "sm90/wgmma.sp.m64n8k64.f32.e4m3.e4m3",
               "sm90/wgmma.sp.m64n8k64.f32.e5m2.e5m2", "sm90/wgmma.sp.m64n8k64.s32.s8.s8",
               "sm90/wgmma.sp.m64n8k64.s32.u8.u8")


def priority(all_names: list[str], dense: list[str]) -> list[tuple[str, str]]:
    """Tasks, most important first: per type combination N = 8 and N = 256, the dense integer
    N = 240/256 forms, then every other sparse form (largest N first: fewest tiles)."""
    first = [n for n in all_names if re.search(r"\.m64n(8|256)k", n)]
    rest = sorted((n for n in all_names if n not in first),
                  key=lambda n: -int(re.search(r"m64n(\d+)k", n).group(1)))
    return [("sp", n) for n in first] + [("dense", n) for n in dense] + [("sp", n) for n in rest]


def _worker(args):
    kind, name, tests, seed, out, layouts, deadline = args
    os.environ["MMAFORMAL_THREADS"] = "1"
    if time.time() > deadline:
        return {"instruction": name, "skipped": "deadline"}
    t0 = time.time()
    try:
        if kind == "dense":
            from . import validate
            blk = (SAMPLE_ROWS, SAMPLE_COLS) if "/wgmma" in name else None   # mma: N = 8
            r = validate.campaign(name, tests, seed=seed, out_dir=Path(out), fast_c=True,
                                  workers=1, sample_block=blk)
        else:
            s = parse(name)
            lay, src = layouts[s.atype]
            r = campaign(name, tests, seed, Path(out), np.asarray(lay), layout_source=src)
        return {"instruction": name, "tests": r["tests"], "mismatches": r["mismatches"],
                "theory": r["theory"], "seconds": round(time.time() - t0, 1),
                "rivals": {k: [v["mismatches"], v["tests"]] for k, v in r.get("rivals", {}).items()}}
    except Exception as e:  # noqa: BLE001  (one broken form must not hide the others)
        return {"instruction": name, "error": f"{type(e).__name__}: {str(e)[:400]}"}


def add_parser(subparsers):
    """`mmaformal hw wgmma-sp` (subparsers: the hw sub-verbs)."""
    from ..args import positive_int, regex, seconds
    p = subparsers.add_parser(
        "wgmma-sp", help="the sparse wgmma device batch: metadata probes, self-checks and "
        "campaigns (or --names: dense sm90 forms); --replay decides records on the CPU",
        description="Device batch of the sparse warpgroup MMA forms: compile every kernel, probe "
        "the metadata layout of each A format, self-check, then run the campaigns (most "
        "important first, in worker processes, until --budget). --replay REC... replays digest "
        "records on the CPU instead (no GPU); --compile-only needs nvcc only.")
    p.add_argument("--out", type=Path, required=True, metavar="DIR")
    p.add_argument("--tests", type=positive_int, default=10_000_000, metavar="N")
    p.add_argument("--seed", type=int, default=16)
    p.add_argument("--workers", type=positive_int, default=15, metavar="W")
    p.add_argument("--budget", type=seconds, default=480.0, metavar="S", help="seconds after "
                   "which no new campaign starts")
    p.add_argument("--match", default="", type=regex, help="only forms matching this regex")
    p.add_argument("--tar", type=Path, metavar="FILE.tgz")
    p.add_argument("--names", type=Path, metavar="FILE", help="a file of dense sm90 forms (wgmma, "
                   "mma, wmma; one per line) to run instead of the sparse forms and the integer "
                   "N = 240/256 ones")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--replay", nargs="*", type=Path, metavar="REC", help="records to replay by "
                   "digest on the CPU (primary theory; record files, or campaigns: a folder or "
                   "pack of counterexamples/hw); the verdicts go to --out/digest-replay.json")
    return p


def batch(a) -> int:
    """`mmaformal hw wgmma-sp` (`add_parser`'s options; `run` is the sparse wgmma runner): the
    device batch (GPU required, one line and exit 2 without it) or --replay (CPU)."""
    import multiprocessing as mp
    import tarfile
    from concurrent.futures import ThreadPoolExecutor
    from . import runner
    t_start = time.time()
    if a.replay:
        from .. import theory as _theory
        from .campaigns import records_at
        verdicts = {}
        try:
            recs = [r.data for path in a.replay for r in records_at(path)]
        except ValueError as e:
            raise ValueError(f"hw wgmma-sp --replay: {e}") from None
        for rec in recs:
            th = _theory.resolve(rec["instruction"])
            v = replay_digest(rec)
            verdicts[rec["instruction"]] = {"theory": th.id, "theory_hash": th.hash(),
                                            "classes_equal": v, "all_equal": all(v.values())}
            print(rec["instruction"], all(v.values()), flush=True)
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "digest-replay.json").write_text(json.dumps({"verdicts": verdicts}, indent=1))
        return 0
    if a.compile_only:
        if runner.nvcc_path() is None:
            raise ValueError("hw wgmma-sp --compile-only: nvcc not found (set MMAFORMAL_NVCC or "
                             "CUDA_HOME)")
    else:
        runner.need_gpu()
    if a.names:
        try:
            listed = [n.strip() for n in a.names.read_text().splitlines() if n.strip()]
        except OSError as e:
            raise ValueError(f"hw wgmma-sp --names {a.names}: cannot read it ({e.strerror or e})") from None
    a.out.mkdir(parents=True, exist_ok=True)
    sp_names = [n for n in names() if re.search(a.match, n)]
    dense = [f"sm90/wgmma.m64n{n}k32{sat}.s32.{x}.{y}" for n in (240, 256)
             for sat in ("", ".satfinite") for x in _I8 for y in _I8]
    dense = [n for n in dense if re.search(a.match, n)]
    if a.names:
        sp_names = []
        dense = listed
        dense.sort(key=lambda n: -int((re.search(r"m64n(\d+)k", n) or re.search(r"(\d)", "0")).group(1)))
    info = {"date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    # 1. compile every kernel (sp-sel 0; the probe forms also with sp-sel 1)
    todo = [(n, 0) for n in sp_names] + ([(n, 1) for n in PROBE_FORMS[:3]] if sp_names else [])
    with ThreadPoolExecutor(16) as ex:
        errs = list(ex.map(lambda x: compile_all([x[0]], x[1]), todo))
        list(ex.map(runner.compile_cubin, dense))
    cerr = {k: v for e in errs for k, v in e.items()}
    info["compiled"] = len(todo) + len(dense)
    info["compile_errors"] = cerr
    info["compile_s"] = round(time.time() - t_start, 1)
    print(f"compiled {len(todo)} sparse + {len(dense)} dense kernels in {info['compile_s']} s, "
          f"{len(cerr)} errors", flush=True)
    for k, v in list(cerr.items())[:5]:
        print("  ", k, v[-300:], flush=True)
    if a.compile_only or not runner.available()[0]:
        (a.out / "wgmma-sp-batch.json").write_text(json.dumps(info, indent=1))
        return 0
    info["device"] = runner.device_info()
    # 2. metadata probes and self-checks: one map per A format
    layouts, probes = {}, {}
    for n in (PROBE_FORMS if sp_names else ()):
        s = parse(n)
        for sel in ((0, 1) if s.atype in ("f16", "bf16", "tf32") else (0,)):
            try:
                pr = meta_probe(n, sel)
                ok_d, m_d = selfcheck(n, None, sel)
                ok_u, m_u = selfcheck(n, None, sel, uniform=True)
                probes[f"{n}|{sel}"] = {"message": pr["message"], "consistent": pr["consistent"],
                                        "agrees": pr["agrees"], "selfcheck": [ok_d, m_d],
                                        "selfcheck_uniform": [ok_u, m_u],
                                        "layout": pr["layout"].tolist()}
                print(pr["message"], "|", m_d, "|", m_u, flush=True)
                if sel == 0:
                    if ok_d and pr["agrees"]:
                        layouts[s.atype] = (DECLARED[s.atype].tolist(), "declared (probe agrees)")
                    elif pr["consistent"]:
                        ok_p, m_p = selfcheck(n, pr["layout"])
                        probes[f"{n}|{sel}"]["selfcheck_probed"] = [ok_p, m_p]
                        print("  probed layout:", m_p, flush=True)
                        if ok_p:
                            layouts[s.atype] = (pr["layout"].tolist(), "recovered by the probe")
            except Exception as e:  # noqa: BLE001
                probes[f"{n}|{sel}"] = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
                print(n, sel, "probe error", probes[f"{n}|{sel}"]["error"], flush=True)
    info["probes"] = probes
    info["layouts"] = {k: v[1] for k, v in layouts.items()}
    (a.out / "wgmma-sp-batch.json").write_text(json.dumps(info, indent=1))
    # 3. campaigns, most important first, in worker processes (one CPU thread each)
    tasks = [(k, n) for k, n in priority(sp_names, dense)
             if k == "dense" or (parse(n).atype in layouts and n not in cerr)]
    deadline = t_start + a.budget
    results = []
    camp = a.out / "campaign"
    ctx = mp.get_context("spawn")
    with ctx.Pool(a.workers) as pool:
        args = [(k, n, a.tests, a.seed, str(camp), layouts, deadline) for k, n in tasks]
        for r in pool.imap_unordered(_worker, args):
            results.append(r)
            print(json.dumps(r), flush=True)
    info["results"] = results
    info["wall_s"] = round(time.time() - t_start, 1)
    (a.out / "wgmma-sp-batch.json").write_text(json.dumps(info, indent=1))
    camp.mkdir(parents=True, exist_ok=True)   # not summary.json: hw replay's folder marker
    (camp / "batch-summary.json").write_text(json.dumps([r for r in results if "tests" in r],
                                                        indent=1))
    if a.tar:
        with tarfile.open(a.tar, "w:gz") as tf:
            tf.add(a.out, arcname=a.out.name)
    done = [r for r in results if "tests" in r]
    print(f"{len(done)} campaigns, {sum(r['mismatches'] for r in done)} mismatches, "
          f"{sum('error' in r for r in results)} errors, "
          f"{sum('skipped' in r for r in results)} skipped; {info['wall_s']} s", flush=True)
    return 0
