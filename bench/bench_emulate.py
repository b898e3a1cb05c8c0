"""Benchmark: `mmaformal.emulate.matmul`, a whole GEMM with one instruction's exact arithmetic.

    python3 bench/bench_emulate.py [--size 1024] [--m M --n N --k K] [--instr NAME]
                                   [--threads T] [--split-k S] [--check-rows R] [--json]

Default: 1024x1024x1024 with sm90/mma.m16n8k16.f32.f16.f16.f32 arithmetic (T-FDPA, L 16, F 25,
RZ-FP32): A, B ~ N(0, 1) rounded to f16, C ~ N(0, 1) in f32, raw bits. Reports

- the one-time cost of tracing Theory.dot of one instruction step and compiling it (a cold
  kernel cache; later runs load the cached .so),
- the GEMM time (seconds; the target on the project's 2-core machine is <= 60 s),
- dot products per second (M * N * K / k instruction-step dot products),
- a bit-for-bit check of R rows against the numpy-lanes back-end (--check-rows, default 4).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmaformal import emulate, isa  # noqa: E402
from mmaformal.classes import from_float  # noqa: E402

INSTR = "sm90/mma.m16n8k16.f32.f16.f16.f32"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--m", type=int)
    p.add_argument("--n", type=int)
    p.add_argument("--k", type=int)
    p.add_argument("--instr", default=INSTR)
    p.add_argument("--threads", type=int)
    p.add_argument("--split-k", type=int, default=1)
    p.add_argument("--check-rows", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    ins = isa.lookup(a.instr)
    M, N, K = (a.m or a.size), (a.n or a.size), (a.k or a.size)
    rng = np.random.default_rng(a.seed)
    t0 = time.perf_counter()
    A = from_float(ins.a, rng.standard_normal((M, K)))
    B = from_float(ins.b, rng.standard_normal((K, N)))
    C = from_float(ins.c, rng.standard_normal((M, N)))
    t_gen = time.perf_counter() - t0

    t0 = time.perf_counter()
    emulate.step_kernel(ins)                         # trace + compile (or load the cache)
    t_compile = time.perf_counter() - t0

    t0 = time.perf_counter()
    D = emulate.matmul(A, B, C, ins, split_k=a.split_k, threads=a.threads)
    t_gemm = time.perf_counter() - t0
    dots = M * N * (K // ins.k)

    check = None
    if a.check_rows:
        rows = np.linspace(0, M - 1, a.check_rows).astype(int)
        t0 = time.perf_counter()
        Dn = emulate.matmul(A[rows], B, C[rows], ins, split_k=a.split_k, backend="numpy")
        check = {"rows": rows.tolist(), "identical": bool(np.array_equal(D[rows], Dn)),
                 "numpy_seconds": round(time.perf_counter() - t0, 3)}
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    res = {"instruction": ins.name, "shape": [M, N, K], "split_k": a.split_k,
           "threads": a.threads or cpus, "cpus": cpus,
           "load_avg": [round(x, 2) for x in os.getloadavg()],
           "inputs_seconds": round(t_gen, 3), "compile_seconds": round(t_compile, 3),
           "gemm_seconds": round(t_gemm, 3), "instruction_steps_per_second": round(dots / t_gemm),
           "check": check}
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"{ins.name}: {M}x{N}x{K} GEMM (split_k {a.split_k}) in {t_gemm:.2f} s "
              f"({dots / t_gemm / 1e6:.2f} M instruction-step dot products/s, "
              f"{res['threads']} thread(s) on {cpus} CPU(s), load avg {res['load_avg'][0]})")
        print(f"  trace+compile (or cached load) {t_compile:.2f} s; inputs {t_gen:.2f} s")
        if check:
            print(f"  numpy back-end on rows {check['rows']}: "
                  f"{'bit-identical' if check['identical'] else 'DIFFERENT'} "
                  f"({check['numpy_seconds']} s)")
    return 0 if (check is None or check["identical"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
