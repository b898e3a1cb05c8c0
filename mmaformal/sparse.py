"""Layer 4c (beside isa and theory), sparse: the metadata contract of the sparse instructions (mma.sp,
mma.sp::ordered_metadata, wgmma.sp, AMD v_smfmac).

May import: numpy, mmaformal.isa (the numbers of the rule, `isa.sparse_group`: their one
definition, with its sources), mmaformal.fp (format descriptors), mmaformal.bits (`derive`, the
same rule written over the bit-vector back-ends for the queries). No arithmetic here: this module
only moves raw bits between the two forms of a structured-sparse A and checks them.

The rule (`group` = isa.sparse_group, where its numbers and their sources are written once): a
sparse instruction of logical shape M x N x K keeps, in every group of G consecutive elements of
a row of A, `kept` of them, in units of `unit` consecutive elements (kept or dropped together,
one metadata index per kept unit): 2:4 for 16- and 8-bit formats (PTX ISA 9.7.14.6.1, AMD SMFMAC
4:2), 1:2 for tf32, and for s4/u4 4:8 in aligned pairs 2p, 2p + 1 (2 kept pairs of every 4;
PTX ISA 9.7.14.6.1 and the H100 campaign 2026-11-24).

Two equivalent inputs:

- compressed: A_c (..., M, K/G*kept) raw bits and metadata E of the same shape (uint8), E[.., i, j]
  the position (0 .. G-1) within its group of the element A_c[.., i, j]; the kept elements of a
  group are consecutive in A_c (group g holds j = g*kept .. g*kept + kept - 1). This is what PTX
  spells as 2-bit indices in the metadata register (tf32: the index of the kept element within
  its pair; s4/u4: the index p of a kept pair, here its two positions 2p, 2p + 1, the form the
  hardware harness `mmaformal hw run --meta` takes too). For mma.sp::ordered_metadata the indices
  of a group must increase (PTX); for the other forms they must be distinct.
- dense: A (..., M, K) with at most `kept` non-zero elements per group, in at most kept/unit
  units (zero: +0 or -0, integer 0; a NaN or Inf is non-zero). `compress` derives the metadata:
  the units holding a non-zero element, filled up with the lowest remaining units, increasing;
  the kept elements keep their raw bits (a -0 that fills a slot stays -0). `derive` is the same
  rule over `BV`s (the query layer's dense-A form of a sparse instruction).

Invariant: every failure is a one-line ValueError naming the first offending position; nothing
is dropped silently (a dense A that breaks the pattern is an error, not pruned).
"""
from __future__ import annotations

import numpy as np

from . import fp
from .bits import BV, Bool, ite
from .isa import Instruction, sparse_group

__all__ = ["group", "pattern", "compress", "expand", "check_meta", "kept_width", "dense_row",
           "derive", "zero_mask", "random_meta", "prune", "row_ok"]


def group(fmt: str) -> tuple[int, int, int]:
    """(G, kept, unit) of a sparse A of format `fmt`: `kept` of every G consecutive elements, in
    units of `unit` consecutive elements (isa.sparse_group; the module docstring)."""
    return sparse_group(fmt)


def zero_mask(fmt_name: str) -> int:
    """Bits of a storage element that are all zero exactly when its value is zero (+-0)."""
    f = fp.fmt(fmt_name)
    if f.is_int:
        return (1 << f.k) - 1
    if f.signed and f.nan != "negzero":
        return ((1 << (f.k - 1)) - 1) << f.pad
    return ((1 << f.k) - 1) << f.pad


def _rule(ins: Instruction) -> tuple[int, int, int]:
    if not ins.sparse:
        raise ValueError(f"{ins.name} is not a sparse instruction")
    return group(ins.a)


def pattern(ins: Instruction) -> tuple[int, int]:
    """(G, kept) of a sparse instruction."""
    return _rule(ins)[:2]


def _rule_name(G: int, kept: int, unit: int) -> str:
    return f"{kept}:{G}" + (" (aligned pairs)" if unit == 2 else "")


def kept_width(ins: Instruction) -> int:
    """Columns of the compressed A (and of the metadata): K / G * kept."""
    G, kept = pattern(ins)
    return ins.k // G * kept


def _pos(idx) -> tuple[int, ...]:
    return tuple(int(i) for i in idx)


def check_meta(meta: np.ndarray, ins: Instruction, where: str = "") -> np.ndarray:
    """The metadata as uint8, checked: indices in 0..G-1; for paired formats (s4/u4) each
    kept pair at an aligned pair of positions 2p, 2p + 1; the kept units of a group distinct,
    and increasing for sp::ordered_metadata."""
    pre = f"{where}: " if where else ""
    G, kept, unit = _rule(ins)
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
    u = E.reshape(E.shape[:-1] + (-1, unit)).astype(np.int64)      # (..., kept units, unit)
    if unit > 1:
        split = (u[..., 0] % unit != 0) | (u - u[..., :1] != np.arange(unit)).any(-1)
        if split.any():
            q = _pos(np.argwhere(split)[0])
            j = q[-1] * unit
            raise ValueError(f"{pre}metadata positions {', '.join(str(int(x)) for x in u[q])} at "
                             f"{q[:-1] + (j,)}..{q[:-1] + (j + unit - 1,)} are not an aligned "
                             f"pair 2p, 2p + 1 ({ins.a} keeps whole pairs)")
    ku = kept // unit
    if ku > 1:
        idx = (u[..., 0] // unit).reshape(u.shape[:-2] + (-1, ku))  # (..., groups, kept units)
        srt = np.sort(idx, axis=-1)
        same = (np.diff(srt, axis=-1) == 0)
        if same.any():
            q = _pos(np.argwhere(same)[0])
            g, v = q[-2], int(srt[q[:-1]][q[-1]])
            name = f"pair {v} (positions {v * unit}, {v * unit + 1})" if unit > 1 else f"position {v}"
            raise ValueError(f"{pre}metadata selects {name} twice in group {g} "
                             f"(k {g * G}..{g * G + G - 1}) of row {q[:-2]}")
        if ins.sparse == "sp::ordered_metadata":
            down = (np.diff(idx, axis=-1) <= 0).any(-1)
            if down.any():
                q = _pos(np.argwhere(down)[0])
                vals = E.reshape(E.shape[:-1] + (-1, kept))[q]
                raise ValueError(f"{pre}metadata indices {', '.join(str(int(x)) for x in vals)} "
                                 f"of group {q[-1]} of row {q[:-1]} are not increasing"
                                 + (" pair by pair" if unit > 1 else "") + " (sp::ordered_metadata)")
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


def _units(nz: np.ndarray, unit: int) -> np.ndarray:
    """Per unit of `unit` consecutive elements (last axis): does it hold a non-zero element."""
    return nz.reshape(nz.shape[:-1] + (nz.shape[-1] // unit, unit)).any(axis=-1)


def compress(a: np.ndarray, ins: Instruction, where: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(A_c, metadata) of a dense A with at most `kept` non-zero elements per group, in at most
    kept/unit units."""
    pre = f"{where}: " if where else ""
    G, kept, unit = _rule(ins)
    A = np.asarray(a)
    if A.ndim < 2 or A.shape[-1] != ins.k:
        raise ValueError(f"{pre}dense A must have shape (..., {ins.m}, {ins.k}), got {tuple(A.shape)}")
    grp = A.reshape(A.shape[:-1] + (ins.k // G, G))
    nz = (grp & np.asarray(zero_mask(ins.a)).astype(A.dtype)) != 0
    nzu = _units(nz, unit)
    ku = kept // unit
    cnt = nzu.sum(axis=-1)
    if (cnt > ku).any():
        q = _pos(np.argwhere(cnt > ku)[0])
        ks = ", ".join(str(q[-1] * G + p) for p in range(G) if nz[q][p])
        head = (f"{pre}dense A breaks {_rule_name(G, kept, unit)} sparsity in row {q[:-1]}, "
                f"group k {q[-1] * G}..{q[-1] * G + G - 1}: ")
        if unit == 1:
            raise ValueError(head + f"{int(cnt[q])} non-zero elements (k = {ks})")
        raise ValueError(head + f"non-zero elements in {int(cnt[q])} of {G // unit} pairs, at most "
                                f"{ku} allowed (k = {ks})")
    # kept units: the non-zero ones, then the lowest zero ones, in increasing order
    order = np.argsort(~nzu, axis=-1, kind="stable")[..., :ku]
    selu = np.sort(order, axis=-1)
    sel = (selu[..., :, None] * unit + np.arange(unit)).reshape(selu.shape[:-1] + (kept,))
    E = sel.astype(np.uint8).reshape(A.shape[:-1] + (-1,))
    vals = np.take_along_axis(grp, sel, axis=-1).reshape(E.shape)
    return vals, E


def dense_row(ins: Instruction, a: list[int], where: str = "") -> tuple[list[int], list[int]]:
    """(kept elements, metadata) of one dense row of A (K raw codes), as Python ints."""
    vals, E = compress(np.array([a], dtype=np.uint64), ins, where or ins.name)
    return [int(x) for x in vals[0]], [int(x) for x in E[0]]


def row_ok(ins: Instruction, a: list[int]) -> bool:
    """Does one dense row of A (raw codes, padded with zeros to K) keep the pattern."""
    a = [int(x) for x in a] + [0] * (ins.k - len(a))
    try:
        dense_row(ins, a)
    except ValueError:
        return False
    return True


def random_meta(ins: Instruction, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    """Uniformly random valid metadata of shape (..., M, K/G*kept): kept/unit distinct units per
    group, increasing (valid for sp and sp::ordered_metadata alike)."""
    G, kept, unit = _rule(ins)
    ku = kept // unit
    groups = int(np.prod(shape)) // kept
    keys = rng.random((groups, G // unit))
    pick = np.sort(np.argsort(keys, axis=1)[:, :ku], axis=1)
    pos = pick[:, :, None] * unit + np.arange(unit)
    return pos.astype(np.uint8).reshape(shape)


def prune(a: np.ndarray, ins: Instruction, rng: np.random.Generator) -> np.ndarray:
    """A dense A of any input class made sparse: random units kept, +0 elsewhere (for
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
    rule of `compress`, on any back-end; `valid` says that no group has non-zero elements in
    more than kept/unit units (the caller asserts it symbolically, or checks it concretely)."""
    G, kept, unit = _rule(ins)
    U, ku = G // unit, kept // unit
    zm = zero_mask(ins.a)
    vals, meta = [], []
    ok = K.bconst(True)
    w = 4

    def one(b):
        return ite(b, K.const(1, w, False), K.const(0, w, False))
    for g in range(len(a) // G):
        xs = a[g * G:(g + 1) * G]
        nze = [(x & zm) != 0 for x in xs]
        nz = []
        for u in range(U):                       # a unit is non-zero if any element of it is
            b = nze[u * unit]
            for e in range(1, unit):
                b = b | nze[u * unit + e]
            nz.append(b)
        cnt = one(nz[0])
        for b in nz[1:]:
            cnt = cnt + one(b)
        ok = ok & (cnt <= ku)
        # a zero unit is taken while the zero units before it are fewer than ku - cnt
        need = K.const(ku, w, False) - ite(cnt <= ku, cnt, K.const(ku, w, False))
        take, zeros_before = [], K.const(0, w, False)
        for u in range(U):
            take.append(nz[u] | (~nz[u] & (zeros_before < need)))
            zeros_before = zeros_before + one(~nz[u])
        # the r-th taken unit, r = 0 .. ku-1, in increasing order; its elements e = 0 .. unit-1
        before = K.const(0, w, False)
        pos = [K.const(G - unit + e, 8, False) for _ in range(ku) for e in range(unit)]
        val = [xs[G - unit + e] for _ in range(ku) for e in range(unit)]
        for u in range(U):
            for r in range(ku):
                hit = take[u] & (before == r)
                for e in range(unit):
                    s = r * unit + e
                    pos[s] = ite(hit, K.const(u * unit + e, 8, False), pos[s])
                    val[s] = ite(hit, xs[u * unit + e], val[s])
            before = before + one(take[u])
        vals += val
        meta += pos
    return vals, meta, ok
