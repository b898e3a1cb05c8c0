"""Exact integer oracle for integer MMA (s8 u8 s4 u4 b1 operands, s32 accumulators).

What it is: an independent reading of PTX ISA 9.7.14.5.14 ("Integer operations": exact products,
.s32 accumulator, wrapped on overflow, or limited to MIN_INT32..MAX_INT32 with .satfinite) and
of the single-bit popc rule, with plain Python ints. Bit patterns are Python ints.

May import: the standard library only (never mmaformal: an oracle that shares code with the core
proves nothing).

Formats are described here by (bits, signed) from the PTX type names, not from the core's table.
"""
from __future__ import annotations

FORMATS = {"s8": (8, True), "u8": (8, False), "s4": (4, True), "u4": (4, False),
           "b1": (1, False), "s32": (32, True)}
INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1


def value(bits: int, fmt: str) -> int:
    """The integer of a raw element (only its low `bits` bits are read)."""
    n, signed = FORMATS[fmt]
    v = bits % 2 ** n
    if signed and v >= 2 ** (n - 1):
        v -= 2 ** n
    return v


def encode(v: int, fmt: str) -> int:
    """Raw bits of an integer that fits fmt."""
    n, signed = FORMATS[fmt]
    lo, hi = (-2 ** (n - 1), 2 ** (n - 1) - 1) if signed else (0, 2 ** n - 1)
    assert lo <= v <= hi, (v, fmt)
    return v % 2 ** n


def clamp(v: int) -> int:
    return min(INT32_MAX, max(INT32_MIN, v))


def dot(a: list[int], b: list[int], c: int, fa: str, fb: str, satfinite: bool = False,
        bop: str = "", step: int = 0) -> int:
    """Raw uint32 bits of d = c + sum a_k b_k (b1: popc of a XOR/AND b).

    step = 0: clamp (satfinite) once, on the exact total; step = L > 0: clamp the running
    accumulator after each block of L terms (the rival hypothesis)."""
    acc = value(c, "s32")
    terms = []
    for x, y in zip(a, b):
        if bop:
            bx, by = x % 2, y % 2
            terms.append(bx ^ by if bop == "xor" else bx & by)
        else:
            terms.append(value(x, fa) * value(y, fb))
    if step and satfinite:
        for k0 in range(0, len(terms), step):
            acc = clamp(acc + sum(terms[k0:k0 + step]))
    else:
        acc = acc + sum(terms)
        if satfinite:
            acc = clamp(acc)
    return acc % 2 ** 32
