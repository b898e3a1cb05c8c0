"""Benchmark of the formal core (issue 2): T-FDPA, L=16, FP16 inputs, F=25, RZ-FP32.

Prints, side by side on the same random bit-stream inputs in one run, dot products per second
on ONE core of: the compiled path (the fp/mma definition traced into C, mmaformal.compile), the
numpy-lanes back-end, the Python-int reference back-end, and mmasim 2.1.1's
`MMA("Hopper", "m16n8k16.f32.f16.f16.f32").dpa` (run in its own environment, see
bench/setup_mmasim.sh; skipped with a note if that environment is missing), checks the outputs
are bit-identical, and times building one symbolic (z3) T-FDPA term for L=16 and L=32.

    python3 bench/bench_core.py [-n 2000000] [--mmasim-python /work/benchenv/bin/python]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

from mmaformal import compile as C, mma  # noqa: E402
from mmaformal.bits import INT, NUMPY, Z3Backend  # noqa: E402

L, F, RHO = 16, 25, "RZ-FP32"
HERE = Path(__file__).resolve().parent


def tfdpa(K, *x):
    return mma.t_fdpa(list(x[:L]), list(x[L:2 * L]), x[2 * L], "f16", "f16", "f32", F, RHO)


def best(f, repeat=3):
    t = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        t = min(t, time.perf_counter() - t0)
    return t, out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=2_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mmasim-python", default="/work/benchenv/bin/python")
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    n = args.n
    a = rng.integers(0, 1 << 16, (n, L), dtype=np.uint16)
    b = rng.integers(0, 1 << 16, (n, L), dtype=np.uint16)
    c = rng.integers(0, 1 << 32, n, dtype=np.uint32)
    cols = [a[:, k] for k in range(L)] + [b[:, k] for k in range(L)] + [c]

    t0 = time.perf_counter()
    kern = C.compile_kernel(tfdpa, [16] * (2 * L) + [32], [32])
    t_build = time.perf_counter() - t0
    kind = "8-lane vectors" if "vector_size" in kern.source else "scalar"
    t_c, (d_c,) = best(lambda: kern(*cols))

    n_np = min(n, 200_000)
    t_np, d_np = best(lambda: tfdpa(NUMPY, *[NUMPY.lift(x[:n_np], x.dtype.itemsize * 8) for x in cols]).v, 1)
    n_int = min(n, 2_000)
    t0 = time.perf_counter()
    d_int = [tfdpa(INT, *[INT.lift(int(x[i]), x.dtype.itemsize * 8) for x in cols]).v for i in range(n_int)]
    t_int = time.perf_counter() - t0

    rows = [("compiled C (" + kind + ")", n, t_c), ("numpy lanes", n_np, t_np), ("python int reference", n_int, t_int)]
    same_np = np.array_equal(d_np.astype(np.uint32), d_c[:n_np])
    same_int = np.array_equal(np.array(d_int, dtype=np.uint32), d_c[:n_int])

    mm = None
    if Path(args.mmasim_python).exists():
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
            np.savez(inp, a_bits=a, b_bits=b, c_bits=c)
            r = subprocess.run([args.mmasim_python, str(HERE / "mmasim_adapter.py"), "--inputs", str(inp),
                                "--save", str(out), "--repeat", "3"], capture_output=True, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
            if r.returncode == 0:
                line = [l for l in r.stdout.splitlines() if l.startswith("mmasim dpa only")][0]
                rate = float(line.split(":")[1].split("dot")[0].replace(",", ""))
                d_mm = np.load(out)["d_bits"]
                mm = (rate, d_mm)
            else:
                print("mmasim run failed:", r.stderr.strip().splitlines()[-1:])
    else:
        print(f"(mmasim environment {args.mmasim_python} missing: run bench/setup_mmasim.sh)")

    print(f"T-FDPA L={L} f16 F={F} {RHO}, random bit-stream inputs, one core, n={n:,}")
    print(f"{'path':32s} {'dot products/s':>16s} {'vs mmasim':>10s}")
    for name, k, t in rows:
        rate = k / t
        ratio = f"{rate / mm[0]:9.2f}x" if mm else "       n/a"
        print(f"{name:32s} {rate:16,.0f} {ratio}")
    if mm:
        print(f"{'mmasim 2.1.1 dpa':32s} {mm[0]:16,.0f} {1.0:9.2f}x")
        diff = np.nonzero(mm[1].astype(np.uint32) != d_c)[0]
        print(f"bit-identical to mmasim: {len(diff) == 0} ({len(diff)} of {n:,} differ)")
        for i in diff[:5]:
            print("  differs:", [hex(int(x)) for x in a[i]], [hex(int(x)) for x in b[i]], hex(int(c[i])),
                  "mmaformal", hex(int(d_c[i])), "mmasim", hex(int(mm[1][i])))
    print(f"bit-identical: compiled == numpy ({n_np:,}): {same_np}; compiled == int ({n_int:,}): {same_int}")
    print(f"kernel trace + C compile (first use, cached afterwards): {t_build:.2f} s")
    for LL in (16, 32):
        Kz = Z3Backend()
        t0 = time.perf_counter()
        xs = [Kz.var(f"a{i}", 16) for i in range(LL)] + [Kz.var(f"b{i}", 16) for i in range(LL)]
        mma.t_fdpa(xs[:LL], xs[LL:], Kz.var("c", 32), "f16", "f16", "f32", F, RHO)
        print(f"symbolic T-FDPA term, L={LL}: built in {time.perf_counter() - t0:.3f} s")


if __name__ == "__main__":
    main()
