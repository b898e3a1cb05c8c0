"""Layer 5, query/pool: batches of dot-product inputs and their evaluation on numpy lanes.

`Batch`: n dot products as raw bits (a, b (n, K), c (n,), scales), with a tag per lane saying
where it comes from; conversion from and to witnesses and to the design's .npy tiles.
`evaluate(model, batch)`: the output bits of a model on every lane at once (numpy lanes over
`Model.dot`, the one definition). `plain`: lanes on which no overlay rule applies.

Shared by infer (the pool of candidate queries) and probes (predictions of the rival models).

May import: numpy, mmaformal.fp/bits/isa, mmaformal.query.model. Invariant: raw bits in, raw
bits out; nothing goes through host floats.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from .. import fp, isa
from ..bits import NUMPY
from .model import Model, Witness

__all__ = ["Batch", "evaluate", "plain"]

UINT_DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


@dataclasses.dataclass
class Batch:
    """n dot products: a, b (n, K), c (n,), scale_a, scale_b (n, K/scale_block) raw bits;
    `tags[i]` says where lane i comes from (probe feature, input class, solver)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    sa: np.ndarray | None = None
    sb: np.ndarray | None = None
    tags: list = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.c)

    def take(self, idx) -> "Batch":
        idx = np.atleast_1d(np.asarray(idx))
        return Batch(self.a[idx], self.b[idx], self.c[idx],
                     None if self.sa is None else self.sa[idx],
                     None if self.sb is None else self.sb[idx],
                     [self.tags[i] for i in idx] if self.tags else [])

    @staticmethod
    def concat(bs: Sequence["Batch"]) -> "Batch":
        bs = [b for b in bs if len(b)]
        cat = lambda xs: None if xs[0] is None else np.concatenate(xs)
        return Batch(np.concatenate([b.a for b in bs]), np.concatenate([b.b for b in bs]),
                     np.concatenate([b.c for b in bs]), cat([b.sa for b in bs]),
                     cat([b.sb for b in bs]), [t for b in bs for t in (b.tags or [""] * len(b))])

    def witness(self, i: int, ins: isa.Instruction) -> Witness:
        return Witness(ins.a, ins.b, ins.c, [int(x) for x in self.a[i]],
                       [int(x) for x in self.b[i]], int(self.c[i]), ins.scale,
                       [int(x) for x in self.sa[i]] if self.sa is not None else None,
                       [int(x) for x in self.sb[i]] if self.sb is not None else None)

    @classmethod
    def from_witness(cls, w: Witness, ins: isa.Instruction, tag: str = "") -> "Batch":
        st = lambda f: UINT_DTYPES[fp.fmt(f).storage]
        # a solver witness may set the unused high bits of an fp6/fp4 byte: keep the format's
        # bits only (the design's raw-bit form; survivors are re-evaluated on what is asked)
        mk = lambda f: (1 << (fp.fmt(f).k + fp.fmt(f).pad)) - 1
        w = w.padded(ins.k, ins.k // ins.scale_block if ins.scale else 0)
        w = Witness(w.fa, w.fb, w.fc, [x & mk(ins.a) for x in w.a], [x & mk(ins.b) for x in w.b],
                    w.c & mk(ins.c), w.fs, w.scale_a, w.scale_b)
        return cls(np.array([w.a], dtype=st(ins.a)), np.array([w.b], dtype=st(ins.b)),
                   np.array([w.c], dtype=st(ins.c)),
                   np.array([w.scale_a], dtype=np.uint8) if w.scale_a else None,
                   np.array([w.scale_b], dtype=np.uint8) if w.scale_b else None, [tag])

    def key(self, i: int) -> bytes:
        parts = [self.a[i].tobytes(), self.b[i].tobytes(), self.c[i:i + 1].tobytes()]
        if self.sa is not None:
            parts += [self.sa[i].tobytes(), self.sb[i].tobytes()]
        return b"|".join(parts)

    def tiles(self, ins: isa.Instruction):
        """(A, B, C, SA, SB) tiles of shape (n, M, K) ...: dot product i in row 0 / column 0
        of tile i, zeros elsewhere (scales 1.0): the design's .npy form."""
        n, M, N, K = len(self), ins.m, ins.n, ins.k
        A = np.zeros((n, M, K), dtype=self.a.dtype)
        B = np.zeros((n, K, N), dtype=self.b.dtype)
        C = np.zeros((n, M, N), dtype=self.c.dtype)
        A[:, 0, :], B[:, :, 0], C[:, 0, 0] = self.a, self.b, self.c
        SA = SB = None
        if ins.scale:
            one = {"ue8m0": 0x7F, "ue4m3": 0x38}[ins.scale]
            nb = K // ins.scale_block
            SA = np.full((n, M, nb), one, dtype=np.uint8)
            SB = np.full((n, nb, N), one, dtype=np.uint8)
            SA[:, 0, :], SB[:, :, 0] = self.sa, self.sb
        return A, B, C, SA, SB


def evaluate(m: Model, batch: Batch) -> np.ndarray:
    """Output bits (uint64, one per lane) of model m on a batch: numpy lanes over Model.dot."""
    ins = m.ins
    wa, wb, wc = (fp.fmt(f).storage for f in (ins.a, ins.b, ins.c))
    n = len(batch)
    a = [NUMPY.lift(batch.a[:, k], wa) for k in range(ins.k)]
    b = [NUMPY.lift(batch.b[:, k], wb) for k in range(ins.k)]
    c = NUMPY.lift(batch.c, wc)
    sa = sb = None
    if ins.scale:
        sa = [NUMPY.lift(batch.sa[:, j], 8) for j in range(batch.sa.shape[1])]
        sb = [NUMPY.lift(batch.sb[:, j], 8) for j in range(batch.sb.shape[1])]
    d = m.dot(NUMPY, a, b, c, sa, sb)
    v = np.broadcast_to(np.asarray(d.v), (n,))
    if v.dtype == object:
        return np.array([int(x) for x in v], dtype=np.uint64)
    return v.astype(np.int64).astype(np.uint64) if v.dtype.kind == "i" else v.astype(np.uint64)


def plain(bits: np.ndarray, f: str) -> np.ndarray:
    """Finite, nonzero and below the largest finite magnitude (no overlay rule applies)."""
    F = fp.fmt(f)
    x = bits.astype(np.uint64)
    mag = x & np.uint64((1 << (F.storage - 1)) - 1)
    expf = (mag >> np.uint64(F.t)) & np.uint64((1 << F.w) - 1)
    return (mag != 0) & (expf != np.uint64((1 << F.w) - 1)) & (mag < np.uint64(F.max_code))
