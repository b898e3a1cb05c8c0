"""Layer 5, query/infer_oracle: the oracles of `mmaformal infer`, which answer dot products.

An oracle answers a batch of dot products (a query.pool Batch) with the raw output bits of its
instruction and counts what it was asked: ``TheoryOracle`` (a model spec of distinguish used as a
black box, through `simulate` or the Model's own evaluation), ``FileOracle`` (recorded
observations: an .npz file, or a directory of tiles A, B, C, D.npy; only the recorded inputs
can be asked) and ``HwOracle`` (the GPU, through mmaformal.hw.runner). ``make_oracle`` reads
the --oracle text; ``save_observations`` records what an oracle answers.

May import: numpy, mmaformal.fp, mmaformal.isa, query.frame, query.model, query.pool, and lazily
mmaformal.simulate and mmaformal.hw.runner. In the query order it sits with infer (the
verb that re-exports its names).

Invariant: an answer is checked (shape and dtype: raw bits of the instruction's D format)
before infer sees it; a recording that answers one input twice differently is BadInput.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import fp, isa
from .frame import BadInput, InternalError
from .model import Model, hex_bits, resolve
from .pool import UINT_DTYPES, Batch, evaluate

__all__ = ["Oracle", "TheoryOracle", "FileOracle", "HwOracle", "make_oracle", "save_observations"]


class Oracle:
    """Answers dot products (a Batch) with output bits; counts what it was asked."""

    kind = "oracle"
    can_synthesize = True        # may be asked inputs that the solver synthesizes
    recorded: Batch | None = None

    def __init__(self, label: str, ins: isa.Instruction):
        self.label, self.ins = label, ins
        self.asked = 0

    def ask(self, batch: Batch) -> np.ndarray:
        self.asked += len(batch)
        d = self._run(batch)
        d = np.asarray(d)
        n, M, N = len(batch), self.ins.m, self.ins.n
        if d.shape == (n, M, N):
            d = d[:, 0, 0]
        if d.shape != (n,):
            raise BadInput(f"oracle {self.label} returned shape {d.shape} for {n} tile(s); "
                           f"expected ({n}, {M}, {N})")
        want = UINT_DTYPES[fp.fmt(self.ins.d).storage]
        if d.dtype != want:
            raise BadInput(f"oracle {self.label} returned dtype {d.dtype}; expected {np.dtype(want).name} "
                           f"raw bits of {self.ins.d}")
        return d.astype(np.uint64)

    def _run(self, batch: Batch) -> np.ndarray:
        raise NotImplementedError

    def describe(self) -> dict:
        return {"kind": self.kind, "label": self.label, "instruction": self.ins.name}


class TheoryOracle(Oracle):
    kind = "theory"

    def __init__(self, model: Model):
        super().__init__(model.label, model.ins)
        self.model = model

    def _run(self, batch):
        m = self.model
        if m.rd or m.n != 1:               # op mutations and chains: the Model's evaluation
            return evaluate(m, batch).astype(UINT_DTYPES[fp.fmt(m.ins.d).storage])
        from ..simulate import simulate
        A, B, C, SA, SB = batch.tiles(m.ins)
        return simulate(m.ins, A, B, C, SA, SB, theory=m.theory)

    def describe(self):
        return {**super().describe(), "model": self.model.spec()}


class HwOracle(Oracle):
    """The GPU through mmaformal.hw.runner.run (the same .npy form as `hw run`)."""

    kind = "hw"

    def __init__(self, ins: isa.Instruction):
        super().__init__(f"hw:{ins.name}", ins)
        from ..hw import runner
        ok, why = runner.available()
        if not ok:
            raise BadInput(f"hw oracle: no usable GPU: {why}")
        self.runner = runner
        try:
            self.device = runner.device_info()
        except Exception as e:  # device facts are provenance, not a result
            self.device = {"error": str(e).splitlines()[0]}

    def _run(self, batch):
        A, B, C, _, _ = batch.tiles(self.ins)
        return self.runner.run(self.ins.name, A, B, C)

    def describe(self):
        return {**super().describe(), "device": self.device}


class FileOracle(Oracle):
    """Recorded observations: only the recorded inputs can be asked."""

    kind = "file"
    can_synthesize = False

    def __init__(self, path: str, instr: str | None = None):
        p = Path(path)
        if not p.exists():
            raise BadInput(f"{path}: no such observations file")
        try:
            z = _tile_dir(p) if p.is_dir() else dict(np.load(p, allow_pickle=False))
        except BadInput:
            raise
        except Exception as e:
            raise BadInput(f"{path}: not an .npz observations file ({str(e).splitlines()[0]})") from None
        name = instr or (str(z["instr"]) if "instr" in z else None)
        if not name:
            raise BadInput(f"{path}: names no instruction (key 'instr'); pass --instr")
        try:
            ins = isa.lookup(name)
        except ValueError as e:
            raise BadInput(str(e).splitlines()[0]) from None
        super().__init__(f"file:{p.name}", ins)
        self.path = str(p)
        keys = set(z)
        if {"a", "b", "c", "d"} <= keys:
            a, b, c, d = z["a"], z["b"], z["c"], z["d"]
            sa = z["scale_a"] if "scale_a" in keys else None
            sb = z["scale_b"] if "scale_b" in keys else None
        elif {"A", "B", "C", "D"} <= keys:       # tiles: every (i, j) of every tile is a dot
            A, B, C, D = z["A"], z["B"], z["C"], z["D"]
            T, M, K = A.shape[0], ins.m, ins.k
            N = ins.n
            if A.shape[1:] != (M, K) or B.shape[1:] != (K, N) or C.shape[1:] != (M, N) or D.shape != C.shape:
                raise BadInput(f"{path}: tiles must be A (T,{M},{K}), B (T,{K},{N}), C and D (T,{M},{N})")
            a = np.repeat(A, N, axis=1).reshape(-1, K)
            b = np.broadcast_to(np.swapaxes(B, 1, 2)[:, None], (T, M, N, K)).reshape(-1, K)
            c, d, sa, sb = C.reshape(-1), D.reshape(-1), None, None
        else:
            raise BadInput(f"{path}: expected arrays a, b, c, d (lanes) or A, B, C, D (tiles)")
        n = len(c)
        want = lambda f: UINT_DTYPES[fp.fmt(f).storage]
        if a.shape != (n, ins.k) or b.shape != (n, ins.k) or d.shape != (n,):
            raise BadInput(f"{path}: a and b must be (n, {ins.k}), c and d (n,); got "
                           f"{a.shape}, {b.shape}, {c.shape}, {d.shape}")
        for role, arr, f in (("a", a, ins.a), ("b", b, ins.b), ("c", c, ins.c), ("d", d, ins.d)):
            if arr.dtype != want(f):
                raise BadInput(f"{path}: {role} must hold {f} raw bits as {np.dtype(want(f)).name}, "
                               f"got {arr.dtype}")
        self.recorded = Batch(np.ascontiguousarray(a), np.ascontiguousarray(b), c, sa, sb,
                              ["recorded"] * n)
        self.answers: dict[bytes, int] = {}
        for i in range(n):
            k = self.recorded.key(i)
            if k in self.answers and self.answers[k] != int(d[i]):
                raise BadInput(f"{path}: the oracle is not deterministic: recorded input {i} gave "
                               f"{hex_bits(int(d[i]), ins.d)} and earlier {hex_bits(self.answers[k], ins.d)}")
            self.answers[k] = int(d[i])
        self.dt = want(ins.d)

    def _run(self, batch):
        out = []
        for i in range(len(batch)):
            k = batch.key(i)
            if k not in self.answers:
                raise InternalError("infer asked a file oracle an input it did not record")
            out.append(self.answers[k])
        return np.array(out, dtype=self.dt)

    def describe(self):
        return {**super().describe(), "path": self.path, "recorded": len(self.recorded)}


def _tile_dir(p: Path) -> dict:
    """A directory of tiles A.npy, B.npy, C.npy, D.npy (what `--probes-out` writes, with the
    GPU's D.npy added); the instruction from its manifest.json when there is one."""
    missing = [f"{k}.npy" for k in "ABCD" if not (p / f"{k}.npy").exists()]
    if missing:
        raise BadInput(f"{p}: a directory oracle holds A.npy, B.npy, C.npy and D.npy; "
                       f"missing {', '.join(missing)}")
    z = {k: np.load(p / f"{k}.npy", allow_pickle=False) for k in "ABCD"}
    man = p / "manifest.json"
    if man.exists():
        try:
            z["instr"] = np.array(json.loads(man.read_text())["instruction"])
        except (ValueError, KeyError):
            pass
    return z


def make_oracle(text: str, instr: str | None = None) -> Oracle:
    if text.startswith("file:"):
        return FileOracle(text[5:], instr)
    if text.startswith("hw:"):
        try:
            ins = isa.lookup(text[3:] or (instr or ""))
        except ValueError as e:
            raise BadInput(str(e).splitlines()[0]) from None
        return HwOracle(ins)
    spec = text[7:] if text.startswith("theory:") else text
    return TheoryOracle(resolve(spec, instr))


def save_observations(path: str, oracle: Oracle, batch: Batch) -> Path:
    """Ask the oracle a batch and record inputs and outputs as an observations file."""
    d = oracle.ask(batch).astype(UINT_DTYPES[fp.fmt(oracle.ins.d).storage])
    arrays = {"a": batch.a, "b": batch.b, "c": batch.c, "d": d, "instr": np.array(oracle.ins.name)}
    if batch.sa is not None:
        arrays.update(scale_a=batch.sa, scale_b=batch.sb)
    np.savez_compressed(path, **arrays)
    return Path(path)
