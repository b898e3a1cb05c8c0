"""Layout checks for the harness: exact small-integer tiles and one-hot probes (layer 5, ``hw``).

Two independent checks of the fragment / shared-memory layouts in :mod:`mmaformal.hw.kernels`:

- :func:`layout_selfcheck`: random small integers, every product and sum exact in the operand
  and output formats; D (decoded exactly from its bits) must equal the integer product A*B + C.
- :func:`layout_probe`: layout-agnostic one-hot experiments in *image* space (which register or
  shared-memory slot of A meets which slot of B in which slot of D). It recovers the row, column
  and k classes of every slot from the hardware alone and says whether the declared tables agree
  (up to the order of k, which exact arithmetic cannot see). Used to diagnose a failing check.

The small exact integer codec here (:func:`encode_ints`, :func:`decode_ints`) is a test oracle
kept apart from the core ``fp`` layer on purpose: it shares no code with the model.

Sparse wgmma forms have a third check, of their per-thread metadata map (:mod:`.sparse`):
:func:`meta_probe` recovers the map from the hardware alone, and :func:`layout_selfcheck` runs
them with every row its own kept positions under a given map.

May import: numpy, :mod:`mmaformal.hw.forms`, ``.layouts``, ``.sparse``, :mod:`mmaformal.hw.runner`
(cupy lazily, via the runner). Invariant: raw bits in, raw bits out; values are only ever exact
integers.
"""

from __future__ import annotations

import numpy as np

from . import runner, sparse
from .forms import STORAGE_DTYPE, spec
from .layouts import operand_tables

__all__ = ["encode_ints", "decode_ints", "exact_ints", "layout_selfcheck", "layout_probe",
           "meta_probe"]

# (exponent bits w, trailing significand bits t, bias) of each storage layout (tf32: f32 container)
_LAYOUT = {
    "f64": (11, 52, 1023),
    "f32": (8, 23, 127),
    "tf32": (8, 23, 127),
    "f16": (5, 10, 15),
    "bf16": (8, 7, 127),
    "e4m3": (4, 3, 7),
    "e5m2": (5, 2, 15),
}
# significand bits (incl. hidden) of the *value* format, and the largest finite value
_PRECISION = {"f64": 53, "f32": 24, "tf32": 11, "f16": 11, "bf16": 8, "e4m3": 4, "e5m2": 3}
_MAXINT = {"f64": 2**60, "f32": 2**60, "tf32": 2**60, "f16": 65504, "bf16": 2**60,
           "e4m3": 448, "e5m2": 57344}


def _representable(v: int, fmt: str) -> bool:
    v = abs(int(v))
    if v == 0:
        return True
    if v > _MAXINT[fmt]:
        return False
    while v % 2 == 0:
        v //= 2
    return v < 2 ** _PRECISION[fmt]


def exact_ints(fmt: str, count: int) -> list[int]:
    """The ``count`` smallest positive integers exactly representable in ``fmt``."""
    if fmt in _INT:
        width, signed = _INT[fmt]
        if count > (1 << (width - signed)) - 1:
            raise ValueError(f"{fmt} has fewer than {count} positive integers")
        return list(range(1, count + 1))
    out, v = [], 1
    while len(out) < count:
        if v > _MAXINT[fmt]:
            raise ValueError(f"{fmt} has fewer than {count} positive integers")
        if _representable(v, fmt):
            out.append(v)
        v += 1
    return out


#: integer formats: (bits, signed)
_INT = {"s8": (8, True), "u8": (8, False), "s4": (4, True), "u4": (4, False), "b1": (1, False),
        "s32": (32, True)}


def encode_ints(values, fmt: str) -> np.ndarray:
    """Bit patterns (storage dtype of ``fmt``) of exactly representable integers (integer
    formats: two's complement in the low bits, one element per storage word)."""
    if fmt in _INT:
        bits, signed = _INT[fmt]
        v = np.asarray(values, dtype=np.int64)
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        if v.size and (v.min() < lo or v.max() > hi):
            raise ValueError(f"values outside {lo}..{hi} are not {fmt}")
        return (v & ((1 << bits) - 1)).astype(STORAGE_DTYPE[fmt])
    w, t, bias = _LAYOUT[fmt]
    v = np.asarray(values, dtype=np.int64)
    flat = v.reshape(-1)
    out = np.zeros(flat.shape, dtype=np.uint64)
    for idx in np.flatnonzero(flat):
        x = int(flat[idx])
        if not _representable(x, fmt):
            raise ValueError(f"{x} is not exactly representable in {fmt}")
        s, mag = (1, -x) if x < 0 else (0, x)
        e = mag.bit_length() - 1
        T = ((mag << (t - e)) if e <= t else (mag >> (e - t))) - (1 << t)
        out[idx] = (s << (w + t)) | ((e + bias) << t) | T
    return out.reshape(v.shape).astype(STORAGE_DTYPE[fmt])


def decode_ints(bits, fmt: str) -> tuple[np.ndarray, np.ndarray]:
    """(integer values, ok) of bit patterns; ok is False for Inf/NaN and non-integers."""
    if fmt in _INT:
        width, signed = _INT[fmt]
        v = np.asarray(bits).astype(np.int64) & ((1 << width) - 1)
        if signed:
            v = np.where(v >= (1 << (width - 1)), v - (1 << width), v)
        return v, np.ones(v.shape, bool)
    w, t, bias = _LAYOUT[fmt]
    b = np.asarray(bits).astype(np.uint64)
    s = (b >> np.uint64(w + t)) & np.uint64(1)
    E = ((b >> np.uint64(t)) & np.uint64((1 << w) - 1)).astype(np.int64)
    T = b & np.uint64((1 << t) - 1)
    sig = np.where(E > 0, T + np.uint64(1 << t), T).astype(np.uint64)
    ex = np.where(E > 0, E, 1) - bias - t  # value = sig * 2**ex
    ok = E != (1 << w) - 1
    neg = ex < 0
    rsh = np.clip(-ex, 0, 63).astype(np.uint64)
    lsh = np.clip(ex, 0, 63).astype(np.uint64)
    frac_ok = np.where(neg, ((sig >> rsh) << rsh == sig) & (-ex < 64) | (sig == 0), True)
    mag = np.where(neg, sig >> rsh, sig << lsh)
    big = (~neg) & (ex > 10)  # beyond anything a self-check produces
    ok &= frac_ok & ~big
    val = mag.astype(np.int64)
    val = np.where(s == 1, -val, val)
    return np.where(ok, val, 0), ok


def _small_ints(rng: np.random.Generator):
    def ints(fmt, size):
        if fmt in ("u8", "u4"):
            return rng.integers(0, 9, size=size)
        if fmt == "b1":
            return rng.integers(0, 2, size=size)
        return rng.integers(-4, 5, size=size)
    return ints


def layout_selfcheck(name: str, tiles: int | None = None, seed: int = 0,
                     desc: tuple[int, int] | None = None, *, layout: np.ndarray | None = None,
                     sel: int = 0, uniform: bool = False) -> tuple[bool, str]:
    """Exact small-integer tiles through the GPU vs. the integer product; (ok, message).

    ``tiles`` default 64 (sparse wgmma: 32). Sparse wgmma forms only: ``layout`` (the metadata
    map, default the declared one), ``sel`` (the sparsity selector) and ``uniform`` (see
    :func:`_wgmma_sp_selfcheck`)."""
    s = spec(name)
    if s.family == "wgmma" and s.sparse:
        return _wgmma_sp_selfcheck(s, layout, sel, tiles or 32, seed, uniform)
    tiles = tiles or 64
    rng = np.random.default_rng(seed)
    ints = _small_ints(rng)

    A = ints(s.atype, (tiles, s.m, s.k))
    B = ints(s.btype, (tiles, s.k, s.n))
    C = rng.integers(-16, 17, size=(tiles, s.m, s.n))
    # tile 0: distinct entries along k expose k-swaps inside a row of A
    if s.atype == "b1":
        A[0] = (np.arange(s.k)[None, :] * (np.arange(s.m)[:, None] + 1) // 3) % 2
    elif s.atype in ("u8", "u4"):
        A[0] = (np.arange(s.k) % 9)[None, :] * np.ones((s.m, 1), int)
    else:
        A[0] = (np.arange(s.k) % 9 - 4)[None, :] * np.where(np.arange(s.m) % 2, 1, -1)[:, None]
    meta = None
    if s.sparse:  # keep one random pattern per tile (warp-uniform metadata), zero the rest
        g, kept, _ = sparse.group(s.atype)
        pos = sparse.random_pos(s.atype, s.k, tiles, rng)[:, None, :]
        meta = np.broadcast_to(pos, (tiles, s.m, s.k // 2)).astype(np.uint8)
        comp = np.take_along_axis(A.reshape(tiles, s.m, s.k // g, g),
                                  np.broadcast_to(meta.reshape(tiles, s.m, s.k // g, kept).astype(np.int64),
                                                  (tiles, s.m, s.k // g, kept)), -1)
        comp = comp.reshape(tiles, s.m, s.k // 2)
        A = sparse.expand(comp, meta, s.atype).astype(np.int64)
        a_in = encode_ints(comp, s.atype)
    else:
        a_in = encode_ints(A, s.atype)
    if s.bop == "xor":
        want = np.matmul(A, 1 - B) + np.matmul(1 - A, B) + C
    else:
        want = np.matmul(A, B) + C
    d = runner.run(s.name, a_in, encode_ints(B, s.btype), encode_ints(C, s.ctype), desc=desc,
                   **({"meta": meta} if meta is not None else {}))
    got, ok = decode_ints(d, s.dtype)
    bad = ~ok | (got != want)
    n_bad = int(bad.sum())
    if n_bad == 0:
        return True, (f"{s.name}: {tiles} tiles x {s.m}x{s.n} outputs (K={s.k}) all exact "
                      "= A*B + C")
    where = np.argwhere(bad)[:4]
    ex = "; ".join(f"tile {t} D[{i},{j}] bits 0x{int(d[t, i, j]):x} want {int(want[t, i, j])}"
                   for t, i, j in where)
    return False, f"{s.name}: {n_bad}/{bad.size} outputs differ from A*B + C ({ex})"


def _nonzero_bits(x, fmt: str):
    if fmt in _INT:
        return x != 0
    w, t, _ = _LAYOUT[fmt]
    mask = (1 << (w + t)) - 1  # all but the sign bit
    return (x & x.dtype.type(mask)) != 0


class _Probe:
    """The GPU side of `layout_probe` for one instruction: one-hot operand images launched in
    chunks of `chunk` tiles, and the D slots each one reaches."""

    def __init__(self, name: str, desc, chunk: int):
        self.cp = runner.cupy()
        self.s = spec(name)
        self.tabs = operand_tables(self.s.name)
        self.na, self.nb, self.nc = len(self.tabs["a"]), len(self.tabs["b"]), len(self.tabs["c"])
        self.one_a = encode_ints([1], self.s.atype)[0]
        self.one_b = encode_ints([1], self.s.btype)[0]
        self.nd = len(self.tabs["d"])      # D slots (c and d of different formats: own table)
        self.desc, self.chunk = desc, chunk

    def launch(self, a_img, b_img):
        c_img = self.cp.zeros((a_img.shape[0], self.nc), dtype=self.s.storage("c"))
        return runner.run_images(self.s.name, a_img, b_img, c_img, self.desc)

    def onehot(self, n, lo, hi, one, dt):
        cp = self.cp
        x = cp.zeros((hi - lo, n), dtype=dt)
        x[cp.arange(hi - lo), cp.arange(lo, hi)] = one
        return x

    def hits(self, operand: str) -> np.ndarray:
        """Step 1 (operand "a": A one-hot, B ones) or step 2 ("b": B one-hot, A ones):
        [(slot, D slot)] of every non-zero output."""
        cp, s = self.cp, self.s
        n = self.na if operand == "a" else self.nb
        out = []
        for lo in range(0, n, self.chunk):
            hi = min(n, lo + self.chunk)
            if operand == "a":
                d = self.launch(self.onehot(self.na, lo, hi, self.one_a, s.storage("a")),
                                cp.full((hi - lo, self.nb), self.one_b, dtype=s.storage("b")))
            else:
                d = self.launch(cp.full((hi - lo, self.na), self.one_a, dtype=s.storage("a")),
                                self.onehot(self.nb, lo, hi, self.one_b, s.storage("b")))
            t, p = cp.nonzero(_nonzero_bits(d, s.dtype))
            out.append(np.stack([t.get() + lo, p.get()], 1))
        return np.concatenate(out)

    def partners(self, b_col, n_cols: int, d_col, problems: list) -> dict:
        """Step 3: A one-hot against B codes distinct within each column class: for each A slot,
        the B slots that share its k."""
        cp, s = self.cp, self.s
        codes = exact_ints(s.btype, s.k)
        b_code = np.zeros(self.nb, dtype=np.int64)
        members = {c: np.flatnonzero(b_col == c) for c in range(n_cols)}
        for c, mem in members.items():
            b_code[mem] = [codes[i] if i < len(codes) else 0 for i in range(len(mem))]
        b3 = cp.asarray(encode_ints(b_code, s.btype))
        partner: dict = {}
        for lo in range(0, self.na, self.chunk):
            hi = min(self.na, lo + self.chunk)
            d = self.launch(self.onehot(self.na, lo, hi, self.one_a, s.storage("a")),
                            cp.broadcast_to(b3, (hi - lo, self.nb)))
            t_, p_ = cp.nonzero(_nonzero_bits(d, s.dtype))
            raw = d[t_, p_].get()
            t, p = t_.get(), p_.get()
            vals, ok = decode_ints(raw, s.dtype)
            for ti, pi, v, o in zip(t, p, vals, ok):
                c = d_col[pi]
                if not o or v not in codes or c < 0:
                    problems.append(f"step 3: A slot {ti + lo} gave bad D slot {pi}")
                    continue
                mem = members[c]
                partner.setdefault(int(ti + lo), []).append(int(mem[codes.index(int(v))]))
        return partner


def _classes(pairs, nslots, what, want_members, want_dslots, problems: list):
    """Slots grouped by the set of D slots they reach: (class of each slot, the D-slot set of
    each class); a count or size other than wanted is a problem."""
    sets: list[list[int]] = [[] for _ in range(nslots)]
    for slot, ds in pairs:
        sets[slot].append(int(ds))
    key_of, cls = {}, np.full(nslots, -1)
    for slot in range(nslots):
        k = tuple(sorted(sets[slot]))
        cls[slot] = key_of.setdefault(k, len(key_of))
    keys = list(key_of)
    sizes = np.bincount(cls, minlength=len(keys))
    if any(len(k) != want_dslots for k in keys) or any(sz != want_members for sz in sizes):
        problems.append(f"{what}: {len(keys)} classes, sizes {sorted(set(sizes.tolist()))}, "
                        f"D slots per class {sorted({len(k) for k in keys})} (want "
                        f"{want_members} slots and {want_dslots} D slots each)")
    return cls, keys


def _k_classes(partner: dict, na: int, nb: int, k: int, problems: list):
    """A slots grouped by their set of partner B slots (the k classes), and each B slot's."""
    k_of_a = np.full(na, -1)
    k_of_b = np.full(nb, -1)
    kkeys: dict = {}
    for sa in range(na):
        key = tuple(sorted(partner.get(sa, [])))
        k_of_a[sa] = kkeys.setdefault(key, len(kkeys))
        for sb in key:
            k_of_b[sb] = k_of_a[sa]
    if len(kkeys) != k:       # grouped forms: k of different tiles are distinct labels
        problems.append(f"k classes: {len(kkeys)} (want {k})")
    return k_of_a, k_of_b


def _compare_declared(s, tabs, obs: dict, problems: list) -> None:
    """The observed row/column/k classes against the declared tables (labels up to a
    bijection)."""
    # grouped forms (several tiles per warp): rows, columns and k of different tiles are
    # distinct labels
    ta, tb, tc = tabs["a"], tabs["b"], tabs["d"]
    kn, mn = s.k * s.n, s.m * s.n
    decl = {
        "A rows": (obs["a_row"], ta // s.k), "A k": (obs["a_k"], (ta // (s.m * s.k)) * s.k + ta % s.k),
        "B cols": (obs["b_col"], (tb // kn) * s.n + tb % s.n), "B k": (obs["b_k"], tb // s.n),
        "D rows": (obs["d_row"], tc // s.n), "D cols": (obs["d_col"], (tc // mn) * s.n + tc % s.n),
    }
    maps: dict[str, dict] = {"row": {}, "col": {}, "k": {}}
    kind = {"A rows": "row", "D rows": "row", "B cols": "col", "D cols": "col",
            "A k": "k", "B k": "k"}
    for what, (o_, dec) in decl.items():
        mp = maps[kind[what]]
        bad = 0
        for o, d_ in zip(o_.tolist(), dec.tolist()):
            if mp.setdefault(o, d_) != d_:
                bad += 1
        if bad:
            problems.append(f"{what}: {bad} slots disagree with the declared table")
    for k_, mp in maps.items():
        if len(set(mp.values())) != len(mp):
            problems.append(f"{k_} labels: observed classes do not map one-to-one to declared")


def layout_probe(name: str, desc: tuple[int, int] | None = None, chunk: int = 1024) -> dict:
    """One-hot probes in image space; dict with 'consistent', 'message' and observed classes.

    Step 1: A = one-hot slot, B = ones -> the D slots of that slot's row.
    Step 2: B = one-hot slot, A = ones -> the D slots of that slot's column.
    Step 3: A = one-hot slot, B = per-column distinct codes -> which B slot shares its k.
    """
    pr = _Probe(name, desc, chunk)
    s, na, nb, nd = pr.s, pr.na, pr.nb, pr.nd
    pa, pb = pr.hits("a"), pr.hits("b")
    problems: list[str] = []
    a_row, row_keys = _classes(pa, na, "rows of A slots", s.k, s.n, problems)
    b_col, col_keys = _classes(pb, nb, "columns of B slots", s.k, s.m, problems)
    d_row = np.full(nd, -1)
    d_col = np.full(nd, -1)
    for r, k in enumerate(row_keys):
        d_row[list(k)] = r
    for c, k in enumerate(col_keys):
        d_col[list(k)] = c
    partner = pr.partners(b_col, len(col_keys), d_col, problems)
    k_of_a, k_of_b = _k_classes(partner, na, nb, s.group * s.k, problems)
    obs = {"a_row": a_row, "a_k": k_of_a, "b_col": b_col, "b_k": k_of_b, "d_row": d_row,
           "d_col": d_col}
    _compare_declared(s, pr.tabs, obs, problems)
    ok = not problems
    msg = (f"{s.name}: one-hot probe {'agrees with' if ok else 'DISAGREES with'} the declared "
           f"layout ({na} A slots, {nb} B slots, {nd} D slots)")
    if problems:
        msg += ": " + "; ".join(problems[:6])
    return {"consistent": ok, "message": msg, **obs}


# ---------------------------------------------------------------------------------------------
# Sparse wgmma: the per-thread metadata map
# ---------------------------------------------------------------------------------------------


def _wgmma_sp_selfcheck(s, layout: np.ndarray | None, sel: int, tiles: int, seed: int,
                        uniform: bool) -> tuple[bool, str]:
    """Exact small integers, every row its own random kept positions, random valid words in
    the threads that give no metadata: D must equal the integer product A*B + C.
    ``uniform``: every nibble of every thread 0b0100 (positions 0, 1 kept everywhere), which no
    metadata map can get wrong: a failure then lies in the A or B shared-memory layout."""
    rng = np.random.default_rng(seed)
    kh = s.k // 2

    ints = _small_ints(rng)
    comp = ints(s.atype, (tiles, s.m, kh))
    if s.atype == "u8":     # tile 0: distinct entries along k expose k-swaps inside a row
        comp[0] = (np.arange(kh) % 9)[None, :] * np.ones((s.m, 1), int)
    else:
        comp[0] = (np.arange(kh) % 9 - 4)[None, :] * np.where(np.arange(s.m) % 2, 1, -1)[:, None]
    pos = sparse.random_kept(s.atype, s.k, (tiles, s.m), rng)
    B = ints(s.btype, (tiles, s.k, s.n))
    C = rng.integers(-16, 17, size=(tiles, s.m, s.n))
    want = np.matmul(sparse.expand(comp, pos, s.atype), B) + C
    lay = sparse.declared(s.atype, sel) if layout is None else layout
    E = sparse.meta_words(pos, s.atype, lay, sparse.random_words((tiles, 128), s.atype, rng))
    if uniform:
        pos = np.broadcast_to(np.tile(np.arange(kh // (s.k // sparse.group(s.atype)[0])),
                                      s.k // sparse.group(s.atype)[0]), pos.shape).astype(np.uint8)
        want = np.matmul(sparse.expand(comp, pos, s.atype), B) + C
        E = np.full((tiles, 128), 0x44444444, np.uint32)
    d = runner.run_words(s.name, encode_ints(comp, s.atype), encode_ints(B, s.btype),
                         encode_ints(C, s.ctype), E, sel)
    got, ok = decode_ints(d, s.dtype)
    bad = ~ok | (got != want)
    if not bad.any():
        how = "uniform 0b0100 metadata" if uniform else "per-row metadata"
        return True, (f"{s.name}: {tiles} tiles x {s.m}x{s.n} outputs (K={s.k}, {how}, "
                      f"sp-sel {sel}) all exact = A*B + C")
    ex = "; ".join(f"tile {t} D[{i},{j}] bits 0x{int(d[t, i, j]):x} want {int(want[t, i, j])}"
                   for t, i, j in np.argwhere(bad)[:3])
    return False, f"{s.name} sp-sel {sel}: {int(bad.sum())}/{bad.size} outputs differ ({ex})"


def meta_probe(name: str, sel: int = 0) -> dict:
    """Recover the metadata map from the hardware: every thread's word holds nibble 0b0100
    (kept positions 0, 1 of every chunk; tf32: element 0) but one nibble q of one thread, set
    to 0b1110 (positions 2, 3; tf32: element 1); A is all ones, B row k is the code of chunk c
    at the last position of chunk c, 0 elsewhere (codes: the nch smallest integers exact in
    B's format, c + 1 where they fit), C = 0. A row whose D becomes the code of chunk c names (row, chunk) of that
    nibble. Returns {'layout': (128, 8, 2), 'consistent', 'message', 'agrees'}."""
    s = spec(name)
    g, kept, _ = sparse.group(s.atype)
    nch = s.k // g
    kh = s.k // 2
    one_a = encode_ints([1], s.atype)[0]
    codes = exact_ints(s.btype, nch)          # c + 1, or the nch smallest exact ones
    Bk = np.zeros(s.k, np.int64)
    Bk[np.arange(nch) * g + g - 1] = codes
    B = np.broadcast_to(encode_ints(Bk, s.btype)[:, None], (s.k, s.n))
    T = 128 * 8
    A = np.full((T, s.m, kh), one_a, s.storage("a"))
    Bt = np.ascontiguousarray(np.broadcast_to(B, (T, s.k, s.n)))
    C = np.zeros((T, s.m, s.n), s.storage("c"))
    E = np.full((T, 128), 0x44444444, np.uint32)
    tid, q = np.divmod(np.arange(T), 8)
    E[np.arange(T), tid] = (0x44444444 & ~(np.uint32(0xF) << (4 * q).astype(np.uint32))) \
        | (np.uint32(0xE) << (4 * q).astype(np.uint32))
    D = runner.run_words(s.name, A, Bt, C, E, sel)
    vals, ok = decode_ints(D, s.dtype)
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
    want = sparse.declared(s.atype, sel)
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
