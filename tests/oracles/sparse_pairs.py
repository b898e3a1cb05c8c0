"""Independent oracle of the structured-sparsity rule of a sparse A (mma.sp), pairs included.

What it is: a plain reading of PTX ISA 9.7.14.6.1 "Sparse matrix storage" with Python lists:
16/8-bit formats keep 2 of every 4 consecutive elements; 4-bit formats (.s4/.u4) keep 4 of every
8 in two aligned pairs (2p, 2p + 1) of the four pairs of the chunk, one index per kept pair
(the rule the H100 campaign 2026-11-24 confirmed; counterexamples/hw/2026-11-24-h100-issue14-sparse).
A dense row is written as a list of booleans (element non-zero) or raw ints (0 = zero); the
metadata as the position of each kept element in its chunk.

May import: the standard library only (never mmaformal: an oracle that shares code with the
core proves nothing).
"""
from __future__ import annotations

from itertools import combinations

#: chunk size, kept elements per chunk, elements per index, by PTX type name
RULE = {"f16": (4, 2, 1), "bf16": (4, 2, 1), "s8": (4, 2, 1), "u8": (4, 2, 1),
        "e4m3": (4, 2, 1), "e5m2": (4, 2, 1), "tf32": (2, 1, 1), "s4": (8, 4, 2), "u4": (8, 4, 2)}


def chunks(row: list, size: int) -> list[list]:
    return [row[i:i + size] for i in range(0, len(row), size)]


def legal_dense(row: list[int], fmt: str) -> bool:
    """Every chunk has its non-zero elements inside at most kept/unit units of `unit` elements."""
    size, kept, unit = RULE[fmt]
    for ch in chunks(row, size):
        busy = sum(1 for u in chunks(ch, unit) if any(x != 0 for x in u))
        if busy > kept // unit:
            return False
    return True


def first_bad_dense_chunk(row: list[int], fmt: str) -> int | None:
    """k of the first element of the first chunk that breaks the rule, or None."""
    size, kept, unit = RULE[fmt]
    for c, ch in enumerate(chunks(row, size)):
        if sum(1 for u in chunks(ch, unit) if any(x != 0 for x in u)) > kept // unit:
            return c * size
    return None


def compress(row: list[int], fmt: str) -> tuple[list[int], list[int]]:
    """(kept values, positions) of a legal dense row: the busy units, then the lowest free
    units until kept/unit are taken, in increasing order."""
    size, kept, unit = RULE[fmt]
    vals, pos = [], []
    for ch in chunks(row, size):
        units = chunks(ch, unit)
        busy = [i for i, u in enumerate(units) if any(x != 0 for x in u)]
        free = [i for i, u in enumerate(units) if i not in busy]
        take = sorted(busy + free[:kept // unit - len(busy)])
        for i in take:
            for e in range(unit):
                pos.append(i * unit + e)
                vals.append(ch[i * unit + e])
    return vals, pos


def legal_meta(pos: list[int], fmt: str, ordered: bool) -> bool:
    """Positions of one row (kept per chunk each): in range, whole aligned units, distinct
    units, and increasing units for ::ordered_metadata."""
    size, kept, unit = RULE[fmt]
    for grp in chunks(pos, kept):
        if any(not 0 <= p < size for p in grp):
            return False
        us = chunks(grp, unit)
        if any(u[0] % unit or u != list(range(u[0], u[0] + unit)) for u in us):
            return False
        idx = [u[0] // unit for u in us]
        if len(set(idx)) != len(idx):
            return False
        if ordered and idx != sorted(idx):
            return False
    return True


def all_legal_groups(fmt: str) -> list[list[int]]:
    """Every increasing legal position list of one chunk (e.g. s4: the 6 pairs of pairs)."""
    size, kept, unit = RULE[fmt]
    return [[i * unit + e for i in c for e in range(unit)]
            for c in combinations(range(size // unit), kept // unit)]


def dense_k(pos: list[int], fmt: str) -> list[int]:
    """The dense k of every kept element of a row, from its positions."""
    size, kept, _ = RULE[fmt]
    return [(j // kept) * size + p for j, p in enumerate(pos)]
