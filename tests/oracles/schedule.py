"""Exact-rational oracle of a GEMM library schedule: K-block chains, splits of K, reductions,
tf32 pre-rounding.

What it is: an independent reading of the schedule semantics of mmaformal/profile.py's module
docstring, one dot product at a time, on plain Python ints (bit patterns) and the exact
`fractions.Fraction` arithmetic of tests/oracles/exact.py (T-FDPA for the instruction step,
IEEE addition for the reduction, `round_to` for the tf32 pre-rounding).

What it may import: the standard library and tests/oracles/exact.py. It must NOT import
`mmaformal` (an oracle that shares code with the core proves nothing).

Main invariant: each dot product is built from its definition: K zero-padded to a multiple of
the instruction's k; the k-blocks in the order asked; parts (slices: the first K/k mod S parts
one block longer; chunks: `chunk` elements each, the last shorter) each chained from +0; the
parts added in f32 by IEEE RNE additions, in part order from +0 (sequential) or as a tree of
adjacent pairs (pairwise).

Instruction steps (the parameters are written out here from the sources, not read from the
core's theories):
- `sm90_f16_k8`: sm90/mma.m16n8k8.f32.f16.f16.f32: one T-FDPA of 8 products and c, F 25,
  RZ-FP32 (Source: [Xie2025] Table 4, Hopper FP16->FP32; L = min(k, L_max 16) = 8).
- `sm90_tf32_k8`: sm90/mma.m16n8k8.f32.tf32.tf32.f32: T-FDPA of 8 products, F 25, RZ-FP32,
  zero terms at exponent -133, operands read from their f32 container by truncation (Source:
  [Xie2025] Table 4, Hopper TF32->FP32; H200 campaign 2026-11-21 for the zero exponent).
- `sm90_e4m3_k32`: sm90/wgmma.m64n8k32.f32.e4m3.e4m3: T-FDPA of 32 products, F 13, RZ-E8M13
  (Source: [Xie2025] Table 4, Hopper FP8->FP32).
"""
from __future__ import annotations

from . import exact as X

F32_ZERO = 0x00000000


def sm90_f16_k8(a: list[int], b: list[int], c: int) -> int:
    return X.t_fdpa(a, b, c, "f16", "f16", "f32", 25, "RZ-FP32", "excluded")


def sm90_tf32_k8(a: list[int], b: list[int], c: int) -> int:
    return X.t_fdpa(a, b, c, "tf32", "tf32", "f32", 25, "RZ-FP32", -133)


def sm90_e4m3_k32(a: list[int], b: list[int], c: int) -> int:
    return X.t_fdpa(a, b, c, "e4m3", "e4m3", "f32", 13, "RZ-E8M13", "excluded")


STEPS = {"sm90_f16_k8": (sm90_f16_k8, 8), "sm90_tf32_k8": (sm90_tf32_k8, 8),
         "sm90_e4m3_k32": (sm90_e4m3_k32, 32)}


def tf32_rne(bits: int) -> int:
    """An f32 bit pattern rounded to tf32 by RNE, in its 32-bit container (low 13 bits zero).
    Inf stays Inf; a NaN keeps its sign and high payload with the quiet bit set (the policy of
    the core's tf32 container read, written out here)."""
    e = (bits >> 23) & 0xFF
    if e == 0xFF:
        if bits & 0x7FFFFF:
            return (bits & 0xFFFFE000) | 0x00400000
        return bits
    v = X.decode("f32", bits)
    if isinstance(v, tuple):                      # a zero
        return bits & 0x80000000
    return X.round_to("tf32", v, "RNE", bits >> 31)


def _parts(nblocks: int, slices: int | None, chunk_blocks: int | None,
           unit_blocks: int = 1) -> list[tuple[int, int]]:
    if chunk_blocks:
        return [(s, min(s + chunk_blocks, nblocks)) for s in range(0, nblocks, chunk_blocks)]
    units = [(u, min(u + unit_blocks, nblocks)) for u in range(0, nblocks, unit_blocks)]
    S = min(slices or 1, len(units))
    out, s = [], 0
    for p in range(S):
        n = len(units) // S + (1 if p < len(units) % S else 0)
        out.append((units[s][0], units[s + n - 1][1]))
        s += n
    return out


def dot(a: list[int], b: list[int], step: str, *, order: str = "increasing",
        slices: int | None = None, chunk: int | None = None, reduce: str = "sequential",
        pre_round: str = "none", unit: int | None = None, reduce_out: str | None = None) -> int:
    """One output element of the schedule (f32 bits; with reduce_out = "f16" / "bf16" the bits
    of that format): a, b are the K bit patterns of a row of A and a column of B. reduce_out:
    the parts are added into an output of that format, D = out(f32(D) + P) from D = +0."""
    fn, k = STEPS[step]
    if pre_round == "tf32-rne":
        a = [tf32_rne(x) for x in a]
        b = [tf32_rne(x) for x in b]
    K = len(a)
    Kp = -(-K // k) * k
    a = list(a) + [0] * (Kp - K)
    b = list(b) + [0] * (Kp - K)
    blocks = list(range(Kp // k))
    if order == "decreasing":
        blocks = blocks[::-1]
    parts = _parts(len(blocks), slices, chunk // k if chunk else None, (unit or k) // k)
    P = []
    for s, e in parts:
        acc = F32_ZERO
        for blk in blocks[s:e]:
            acc = fn(a[blk * k:(blk + 1) * k], b[blk * k:(blk + 1) * k], acc)
        P.append(acc)
    if reduce_out:
        D = 0
        for p in P:
            s = _add(_widen(reduce_out, D), p)
            D = _narrow(reduce_out, s)
        return D
    if len(P) == 1:
        return P[0]
    if reduce == "pairwise":
        while len(P) > 1:
            P = [_add(P[i], P[i + 1]) if i + 1 < len(P) else P[i] for i in range(0, len(P), 2)]
        return P[0]
    acc = F32_ZERO
    for p in P:
        acc = _add(acc, p)
    return acc


def _widen(fmt: str, bits: int) -> int:
    """An f16 / bf16 bit pattern as f32 bits (exact)."""
    v = X.decode(fmt, bits)
    if isinstance(v, tuple):
        if v[0] == "zero":
            return v[1] << 31
        if v[0] == "inf":
            return v[1] << 31 | 0x7F800000
        return 0x7FC00000
    return X.round_to("f32", v, "RNE")


def _narrow(fmt: str, bits: int) -> int:
    """f32 bits rounded to f16 / bf16 by RNE (NaN: the format's default quiet NaN)."""
    v = X.decode("f32", bits)
    if isinstance(v, tuple):
        if v[0] == "zero":
            return v[1] << (15)
        if v[0] == "inf":
            return (v[1] << 15) | (0x7C00 if fmt == "f16" else 0x7F80)
        return 0x7E00 if fmt == "f16" else 0x7FC0
    return X.round_to(fmt, v, "RNE")


def _add(x: int, y: int) -> int:
    r = X.ieee_add("f32", x, y, "RNE")
    return 0x7FC00000 if r == X.NAN else r


def gemm(A: list[list[int]], B: list[list[int]], step: str, **kw) -> list[list[int]]:
    """The schedule over a whole (M, K) x (K, N) product of bit patterns."""
    cols = [[B[t][j] for t in range(len(B))] for j in range(len(B[0]))]
    return [[dot(row, col, step, **kw) for col in cols] for row in A]
