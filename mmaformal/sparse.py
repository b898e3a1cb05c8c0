"""Layer 4c (beside isa and theory), sparse: the metadata contract of the sparse instructions (mma.sp,
mma.sp::ordered_metadata, wgmma.sp, AMD v_smfmac).

May import: numpy, mmaformal.isa, mmaformal.fp (format descriptors), mmaformal.bits (`derive`,
the same rule written over the bit-vector back-ends for the queries). No arithmetic here: this
module only moves raw bits between the two forms of a structured-sparse A and checks them.

A sparse instruction of logical shape M x N x K keeps, in every group of G consecutive elements
of a row of A, `kept` of them: G = 4, kept = 2 (2:4; PTX 9.7.14.6.1, AMD SMFMAC 4:2), or for
tf32 G = 2, kept = 1 (PTX: 1:2). Two equivalent inputs:

- compressed: A_c (..., M, K/G*kept) raw bits and metadata E of the same shape (uint8), E[.., i, j]
  the position (0 .. G-1) within its group of the element A_c[.., i, j]; the kept elements of a
  group are consecutive in A_c (group g holds j = g*kept .. g*kept + kept - 1). This is what PTX
  spells as 2-bit indices in the metadata register (tf32: the index of the kept element within
  its pair). For mma.sp::ordered_metadata the indices of a group must increase (PTX); for the
  other forms they must be distinct.
- dense: A (..., M, K) with at most `kept` non-zero elements per group (zero: +0 or -0, integer
  0; a NaN or Inf is non-zero). `compress` derives the metadata: the positions of the non-zero
  elements, filled up with the lowest remaining positions, increasing; the kept elements keep
  their raw bits (a -0 that fills a slot stays -0). `derive` is the same rule over `BV`s (the
  query layer's dense-A form of a sparse instruction).

Invariant: every failure is a one-line ValueError naming the first offending position; nothing
is dropped silently (a dense A that breaks the pattern is an error, not pruned).
"""
from __future__ import annotations

import numpy as np

from . import fp
from .bits import BV, Bool, ite
from .isa import Instruction

__all__ = ["pattern", "compress", "expand", "check_meta", "kept_width", "dense_row", "derive",
           "zero_mask", "random_meta", "prune"]


def zero_mask(fmt_name: str) -> int:
    """Bits of a storage element that are all zero exactly when its value is zero (+-0)."""
    f = fp.fmt(fmt_name)
    if f.is_int:
        return (1 << f.k) - 1
    if f.signed and f.nan != "negzero":
        return ((1 << (f.k - 1)) - 1) << f.pad
    return ((1 << f.k) - 1) << f.pad


def pattern(ins: Instruction) -> tuple[int, int]:
    """(G, kept) of a sparse instruction."""
    if not ins.sparse:
        raise ValueError(f"{ins.name} is not a sparse instruction")
    return ins.sparsity


def kept_width(ins: Instruction) -> int:
    """Columns of the compressed A (and of the metadata): K / G * kept."""
    G, kept = pattern(ins)
    return ins.k // G * kept


def _pos(idx) -> tuple[int, ...]:
    return tuple(int(i) for i in idx)


def check_meta(meta: np.ndarray, ins: Instruction, where: str = "") -> np.ndarray:
    """The metadata as uint8, checked: indices in 0..G-1, distinct within each group, and
    increasing for sp::ordered_metadata."""
    pre = f"{where}: " if where else ""
    G, kept = pattern(ins)
    E = np.asarray(meta)
    if E.dtype.kind not in "ui":
        raise ValueError(f"{pre}metadata must be integer indices (uint8), got {E.dtype.name}")
    if E.ndim < 2 or E.shape[-1] != kept_width(ins):
        raise ValueError(f"{pre}metadata must have shape (..., {ins.m}, {kept_width(ins)}), "
                         f"got {tuple(E.shape)}")
    bad = (E < 0) | (E >= G)
    if bad.any():
        p = _pos(np.argwhere(bad)[0])
        raise ValueError(f"{pre}metadata index {int(E[p])} at {p} is out of range 0..{G - 1}")
    E = E.astype(np.uint8)
    if kept > 1:
        grp = E.reshape(E.shape[:-1] + (-1, kept))
        x, y = grp[..., 0].astype(int), grp[..., 1].astype(int)
        same = x == y
        if same.any():
            q = _pos(np.argwhere(same)[0])
            raise ValueError(f"{pre}metadata selects position {int(x[q])} twice in group "
                             f"{q[-1]} (k {q[-1] * G}..{q[-1] * G + G - 1}) of row {q[:-1]}")
        if ins.sparse == "sp::ordered_metadata":
            down = x > y
            if down.any():
                q = _pos(np.argwhere(down)[0])
                raise ValueError(f"{pre}metadata indices {int(x[q])}, {int(y[q])} of group {q[-1]} "
                                 f"of row {q[:-1]} are not increasing (sp::ordered_metadata)")
    return E


def expand(a_c: np.ndarray, meta: np.ndarray, ins: Instruction, where: str = "") -> np.ndarray:
    """The dense A (..., M, K) of a compressed A and its metadata (zeros elsewhere)."""
    G, kept = pattern(ins)
    E = check_meta(meta, ins, where)
    a_c = np.asarray(a_c)
    if a_c.shape != E.shape:
        raise ValueError(f"{where + ': ' if where else ''}compressed A {tuple(a_c.shape)} and "
                         f"metadata {tuple(E.shape)} must have the same shape")
    out = np.zeros(a_c.shape[:-1] + (ins.k,), dtype=a_c.dtype)
    j = np.arange(a_c.shape[-1])
    cols = (j // kept) * G + E                     # broadcast over the leading axes
    np.put_along_axis(out, cols.astype(np.intp), a_c, axis=-1)
    return out


def compress(a: np.ndarray, ins: Instruction, where: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(A_c, metadata) of a dense A with at most `kept` non-zero elements per group."""
    pre = f"{where}: " if where else ""
    G, kept = pattern(ins)
    A = np.asarray(a)
    if A.ndim < 2 or A.shape[-1] != ins.k:
        raise ValueError(f"{pre}dense A must have shape (..., {ins.m}, {ins.k}), got {tuple(A.shape)}")
    grp = A.reshape(A.shape[:-1] + (ins.k // G, G))
    nz = (grp & np.asarray(zero_mask(ins.a)).astype(A.dtype)) != 0
    cnt = nz.sum(axis=-1)
    if (cnt > kept).any():
        q = _pos(np.argwhere(cnt > kept)[0])
        ks = [q[-1] * G + p for p in range(G) if nz[q][p]]
        raise ValueError(f"{pre}dense A breaks {kept}:{G} sparsity in row {q[:-1]}, group "
                         f"k {q[-1] * G}..{q[-1] * G + G - 1}: {int(cnt[q])} non-zero elements "
                         f"(k = {', '.join(map(str, ks))})")
    # kept positions: the non-zero ones, then the lowest zero ones, in increasing order
    order = np.argsort(~nz, axis=-1, kind="stable")[..., :kept]
    sel = np.sort(order, axis=-1)
    E = sel.astype(np.uint8).reshape(A.shape[:-1] + (-1,))
    vals = np.take_along_axis(grp, sel, axis=-1).reshape(E.shape)
    return vals, E


def dense_row(ins: Instruction, a: list[int], where: str = "") -> tuple[list[int], list[int]]:
    """(kept elements, metadata) of one dense row of A (K raw codes), as Python ints."""
    vals, E = compress(np.array([a], dtype=np.uint64), ins, where or ins.name)
    return [int(x) for x in vals[0]], [int(x) for x in E[0]]


def random_meta(ins: Instruction, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    """Uniformly random valid metadata of shape (..., M, K/G*kept): `kept` distinct positions
    per group, increasing (valid for sp and sp::ordered_metadata alike)."""
    G, kept = pattern(ins)
    groups = int(np.prod(shape)) // kept
    keys = rng.random((groups, G))
    pos = np.sort(np.argsort(keys, axis=1)[:, :kept], axis=1)
    return pos.astype(np.uint8).reshape(shape)


def prune(a: np.ndarray, ins: Instruction, rng: np.random.Generator) -> np.ndarray:
    """A dense A of any input class made 2:4 (1:2): random positions kept, +0 elsewhere (for
    campaigns: generate a class, prune, then simulate / run it as the dense form)."""
    A = np.asarray(a)
    G, kept = pattern(ins)
    E = random_meta(ins, A.shape[:-1] + (A.shape[-1] // G * kept,), rng)
    j = np.arange(E.shape[-1])
    cols = ((j // kept) * G + E).astype(np.intp)
    out = np.zeros_like(A)
    np.put_along_axis(out, cols, np.take_along_axis(A, cols, axis=-1), axis=-1)
    return out


def derive(K, a: list[BV], ins: Instruction) -> tuple[list[BV], list[BV], Bool]:
    """(kept elements, metadata (8-bit), valid) of one dense row a (K storage elements), by the
    rule of `compress`, on any back-end; `valid` says that no group has more than `kept`
    non-zero elements (the caller asserts it symbolically, or checks it concretely)."""
    G, kept = pattern(ins)
    zm = zero_mask(ins.a)
    vals, meta = [], []
    ok = K.bconst(True)
    w = 4

    def one(b):
        return ite(b, K.const(1, w, False), K.const(0, w, False))
    for g in range(len(a) // G):
        xs = a[g * G:(g + 1) * G]
        nz = [(x & zm) != 0 for x in xs]
        cnt = one(nz[0])
        for b in nz[1:]:
            cnt = cnt + one(b)
        ok = ok & (cnt <= kept)
        # a zero position is taken while the zeros before it are fewer than kept - cnt
        need = K.const(kept, w, False) - ite(cnt <= kept, cnt, K.const(kept, w, False))
        take, zeros_before = [], K.const(0, w, False)
        for p in range(G):
            take.append(nz[p] | (~nz[p] & (zeros_before < need)))
            zeros_before = zeros_before + one(~nz[p])
        # the r-th taken position, r = 0 .. kept-1, in increasing order
        before = K.const(0, w, False)
        pos = [K.const(G - 1, 8, False)] * kept
        val = [xs[G - 1]] * kept
        for p in range(G):
            for r in range(kept):
                hit = take[p] & (before == r)
                pos[r] = ite(hit, K.const(p, 8, False), pos[r])
                val[r] = ite(hit, xs[p], val[r])
            before = before + one(take[p])
        vals += val
        meta += pos
    return vals, meta, ok
