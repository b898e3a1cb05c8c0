"""Layer 5, query/ieee: the claim "mmaformal's IEEE add/mul/fma equal the SMT-LIB
floating-point theory", for a format and rounding mode, as a solver query.

The query asserts that the two results differ (as SMT-LIB FP values: `=` on FloatingPoint is
identity, so +0 and -0 differ and all NaNs are equal — NaN payloads are outside the FP theory
and are compared elsewhere). UNSAT proves equality for every input. The broken twin computes
mmaformal's side with another rounding mode; the same query must then be SAT.

    python3 -m mmaformal.query.ieee [--ops add,mul,fma] [--formats f16,bf16] [--modes ...]
                                    [--solver bitwuzla] [--timeout S] [--save]

May import: mmaformal.bits, mmaformal.fp, mmaformal.query.solvers/store, z3.
"""
from __future__ import annotations

import argparse
import hashlib
import inspect
import sys
from pathlib import Path

from .. import fp
from ..bits import Z3Backend
from .solvers import Result, solve, to_smt2
from .store import read_proofs, sha256, write_proof

__all__ = ["query", "prove", "TWIN_MODE", "depends"]

OPS = ("add", "mul", "fma")
MODES = ("RNE", "RNA", "RZ", "RU", "RD")
#: The mutation of the broken twin: the same claim with mmaformal rounding in another mode.
TWIN_MODE = {"RNE": "RZ", "RNA": "RNE", "RZ": "RNE", "RU": "RD", "RD": "RU"}


def query(op: str, fname: str, mode: str, mine_mode: str | None = None) -> str:
    """SMT-LIB2 text asserting that fp.<op> (rounding with mine_mode, default mode) differs
    from the SMT-LIB FP theory's <op> rounding with mode."""
    import z3
    if op not in OPS:
        raise ValueError(f"unknown operation {op!r}; expected one of {', '.join(OPS)}")
    f = fp.fmt(fname)
    K = Z3Backend()
    n = 3 if op == "fma" else 2
    xs = [K.var(f"x{i}", f.storage) for i in range(n)]
    mine = getattr(fp, op)(f, *xs, mode=mine_mode or mode).v
    S = z3.FPSort(f.w, f.p)
    rm = {"RNE": z3.RNE(), "RNA": z3.RNA(), "RZ": z3.RTZ(), "RU": z3.RTP(), "RD": z3.RTN()}[mode]
    fx = [z3.fpBVToFP(x.v, S) for x in xs]
    ref = {"add": z3.fpAdd, "mul": z3.fpMul, "fma": z3.fpFMA}[op](rm, *fx)
    return to_smt2([z3.Not(ref == z3.fpBVToFP(mine, S))])


def depends() -> dict[str, str]:
    """Hashes of the definitions these claims depend on (the bits and fp layers' source)."""
    from .. import bits
    return {m.__name__: hashlib.sha256(inspect.getsource(m).encode()).hexdigest()[:16] for m in (bits, fp)}


def claim_text(op: str, fname: str, mode: str) -> str:
    return (f"for all {fname} inputs, mmaformal.fp.{op}(mode={mode}) equals SMT-LIB fp.{op} "
            f"with {mode} (as FloatingPoint values: NaN payloads excluded, signed zeros included)")


def prove(op: str, fname: str, mode: str, solver: str = "bitwuzla", timeout: float | None = 600,
          save: bool = False) -> tuple[Result, Result | None]:
    q = query(op, fname, mode)
    r = solve(q, solver, timeout)
    twin = None
    if r.status == "unsat":
        tq = query(op, fname, mode, mine_mode=TWIN_MODE[mode])
        twin = solve(tq, solver, timeout)
        if save:
            write_proof("ieee", f"{op}-{fname}-{mode}", claim_text(op, fname, mode), q, r,
                        f"the same with mmaformal rounding {TWIN_MODE[mode]} instead", twin, depends())
    return r, twin


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Prove fp.add/mul/fma equal to the SMT-LIB FP theory.")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--formats", default="f16,bf16")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--solver", default="bitwuzla")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--save", action="store_true", help="store the proofs in proofs/ieee/")
    p.add_argument("--missing", action="store_true", help="only claims without a current stored proof")
    a = p.parse_args(argv)
    have = {Path(path).stem: rec for path, rec in read_proofs("ieee")} if a.missing else {}
    ok = True
    for fname in a.formats.split(","):
        for op in a.ops.split(","):
            for mode in a.modes.split(","):
                name = f"{op}-{fname}-{mode}"
                if name in have and have[name]["query_sha256"] == sha256(query(op, fname, mode)):
                    continue
                r, twin = prove(op, fname, mode, a.solver, a.timeout, a.save)
                tw = f"twin {twin.status} {twin.seconds:.1f}s" if twin else ""
                print(f"{name:16s} {r.status:8s} {r.seconds:7.1f}s {r.solver} {tw}", flush=True)
                ok &= r.status == "unsat" and twin is not None and twin.status == "sat"
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
