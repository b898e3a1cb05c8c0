"""Benchmark: the GPU path (mmaformal.cuda) against the CPU compiled path, in one run.

    python3 bench/bench_gpu.py [--gemm 8192] [--cpu-gemm 1024] [--tiles 64,64,4,4,1 ...]
                               [--sim-dots 2e8] [--cpu-dots 2e6] [--json OUT.json]

Prints, side by side (ratios GPU / CPU and GPU / silicon):

1. simulate throughput (dot products/s of independent tiles) on the GPU and on the CPU
   compiled path (all CPU cores, MMAFORMAL_THREADS) for sm90 f16->f32 (T-FDPA), sm90 fp8
   mma.sync (HMMA-halves chain), gfx942 f16 (TR-FDPA) and an f64 FMA chain. The GPU figure is
   the kernel on device-resident tiles (CUDA events); "end to end" adds the host transfers of
   `simulate(device="cuda")`. Inputs: uniformly random raw bits (every class; the generated
   code is branch-free, so its speed does not depend on the values).
2. emulate.matmul GEMM (default 8192^3) with sm90/mma.m16n8k16.f32.f16.f16.f32: A, B ~ N(0,1)
   in f16, C ~ N(0,1) in f32. The kernel on device arrays (best of 3) for each --tiles
   configuration, end to end from host arrays, torch.matmul of the same f16 operands (f32
   accumulation, reduced-precision reduction off) on the same GPU, the ratio, and a bit-for-bit
   check of --check-rows rows against the CPU compiled path.
3. The same GEMM on the CPU compiled path at --cpu-gemm (default 1024^3; the 4096^3 figure is
   extrapolated by the number of instruction steps, and says so).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import importlib  # noqa: E402

from mmaformal import cuda, emulate, isa  # noqa: E402

S = importlib.import_module("mmaformal.simulate")   # the module (the package exports the function)
from mmaformal import theory as T  # noqa: E402

SIM = [
    ("sm90 f16->f32 T-FDPA", "sm90/mma.m16n8k16.f32.f16.f16.f32"),
    ("sm90 fp8 mma.sync HMMA chain", "sm90/mma.m16n8k32.f32.e4m3.e4m3.f32"),
    ("gfx942 f16 TR-FDPA", "gfx942/v_mfma_f32_32x32x8_f16"),
    ("sm90 f64 FMA chain", "sm90/mma.m16n8k4.f64.f64.f64.f64"),
]
GEMM = "sm90/mma.m16n8k16.f32.f16.f16.f32"


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _rand_bits(rng, shape, fmt):
    st = S.storage_dtype(fmt)
    from mmaformal import fp
    f = fp.fmt(fmt)
    x = rng.integers(0, 1 << min(f.k + f.pad, 63), size=shape, dtype=np.uint64)
    if f.storage == 64:
        x = x | (rng.integers(0, 2, size=shape, dtype=np.uint64) << np.uint64(63))
    return x.astype(st)


def _rand_bits_dev(shape, fmt):
    """Uniformly random raw bits of a format on the GPU (every class: NaN, Inf, subnormals)."""
    import cupy as cp
    from mmaformal import fp
    f = fp.fmt(fmt)
    st = S.storage_dtype(fmt)
    x = cp.random.randint(0, 256, size=tuple(shape) + (st.itemsize,), dtype=cp.uint8)
    x = x.view(st).reshape(shape)
    w = f.k + f.pad
    if w < 8 * st.itemsize:
        x &= st.type((1 << w) - 1)
    return x


def _events_time(fn, reps=3):
    import cupy as cp
    best = None
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        fn()
        e.record()
        e.synchronize()
        t = cp.cuda.get_elapsed_time(s, e) / 1e3
        best = t if best is None else min(best, t)
    return best


def bench_simulate(name, instr, sim_dots, cpu_dots, rng):
    import cupy as cp
    ins = isa.lookup(instr)
    th = T.default().resolve(ins, None)
    M, N, K = ins.m, ins.n, ins.k
    mod = cuda.dot_module(th, ins)
    tiles = max(1, int(sim_dots) // (M * N))
    A3 = _rand_bits_dev((tiles, M, K), ins.a)
    B3 = _rand_bits_dev((tiles, N, K), ins.b)
    C2 = _rand_bits_dev((tiles, M * N), ins.c)
    D = cp.empty((tiles, M * N), dtype=S.storage_dtype(ins.d))
    t0 = time.perf_counter()
    mod.sim_device(A3, B3, C2, out=D)                 # trace + NVRTC compile + first run
    t_build = time.perf_counter() - t0
    t_kernel = _events_time(lambda: mod.sim_device(A3, B3, C2, out=D))
    gpu_rate = tiles * M * N / t_kernel
    del A3, B3, C2, D
    # the same host tiles on both paths
    ct = max(1, int(cpu_dots) // (M * N))
    A = _rand_bits(rng, (ct, M, K), ins.a)
    B = _rand_bits(rng, (ct, K, N), ins.b)
    C = _rand_bits(rng, (ct, M, N), ins.c)
    t0 = time.perf_counter()
    Dg = S.simulate(ins, A, B, C, device="cuda")
    t_e2e = time.perf_counter() - t0
    os.environ["MMAFORMAL_THREADS"] = str(_cpus())
    S._kernel(th, ins)                                # the C kernel's build is not timed
    t0 = time.perf_counter()
    Dc = S.simulate(ins, A, B, C, device="cpu")
    t_cpu = time.perf_counter() - t0
    same = bool(np.array_equal(Dg, Dc))
    cpu_rate = ct * M * N / t_cpu
    return {"name": name, "instruction": ins.name, "theory": th.id, "build_seconds": round(t_build, 2),
            "gpu_tiles": tiles, "gpu_kernel_seconds": t_kernel, "gpu_dots_per_s": gpu_rate,
            "gpu_end_to_end_dots_per_s": ct * M * N / t_e2e, "cpu_dots": ct * M * N,
            "cpu_seconds": t_cpu, "cpu_dots_per_s": cpu_rate, "cpu_threads": _cpus(),
            "ratio_gpu_cpu": gpu_rate / cpu_rate, "identical": same}


def bench_gemm(size, tiles_list, check_rows, rng):
    import cupy as cp
    import torch
    ins = isa.lookup(GEMM)
    th = T.default().resolve(ins, None)
    M = N = K = size
    A = rng.standard_normal((M, K), dtype=np.float32).astype(np.float16)
    B = rng.standard_normal((K, N), dtype=np.float32).astype(np.float16)
    C = rng.standard_normal((M, N), dtype=np.float32)
    Ab, Bb, Cb = A.view(np.uint16), B.view(np.uint16), C.view(np.uint32)
    dots = M * N * (K // ins.k)
    out = {"instruction": ins.name, "theory": th.id, "shape": [M, N, K], "step_dots": dots, "tiles": []}
    Ad, Bd, Cd = cp.asarray(Ab), cp.asarray(Bb), cp.asarray(Cb)
    best = None
    for tile, split in tiles_list:
        nsteps = K // ins.k
        t0 = time.perf_counter()
        try:
            mod = cuda.dot_module(th, ins, tile, split)
            mod.mod("gemm")                                  # NVRTC compile
        except Exception as e:  # noqa: BLE001 (a tile that does not build: say so, go on)
            out["tiles"].append({"tile": tile, "split": split, "error": str(e)[:200]})
            continue
        t_build = time.perf_counter() - t0
        t = _events_time(lambda: mod.gemm_device(Ad, Bd, Cd, None, None, 0, nsteps), reps=2)
        kind = "split" if "decA" in mod.source("gemm") else "whole"
        out["tiles"].append({"tile": tile, "split": split, "kernel": kind,
                             "build_seconds": round(t_build, 2), "kernel_seconds": t,
                             "step_dots_per_s": dots / t})
        if best is None or t < best[1]:
            best = ((tile, split), t)
        print(f"  tile {tile} {kind}: {t:.3f} s ({dots / t:.3e} step dots/s)", flush=True)
    del Ad, Bd, Cd
    (btile, bsplit), out["kernel_seconds"] = best
    out["best_tile"], out["best_split"] = btile, bsplit
    cuda.GEMM_TILE = tuple(btile)
    if not bsplit:
        cuda.SPLIT_SMEM = 0
    t0 = time.perf_counter()
    D = emulate.matmul(Ab, Bb, Cb, ins, device="cuda")
    out["end_to_end_seconds"] = time.perf_counter() - t0
    # the silicon: torch.matmul f16 with f32 accumulation
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    ta, tb = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
    torch.matmul(ta, tb)
    torch.cuda.synchronize()
    ts = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.matmul(ta, tb)
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    out["torch_seconds"] = min(ts)
    out["ratio_kernel_to_torch"] = out["kernel_seconds"] / out["torch_seconds"]
    out["ratio_end_to_end_to_torch"] = out["end_to_end_seconds"] / out["torch_seconds"]
    del ta, tb
    rows = np.linspace(0, M - 1, check_rows).astype(int)
    t0 = time.perf_counter()
    Dc = emulate.matmul(Ab[rows], Bb, Cb[rows], ins, device="cpu")
    out["check"] = {"rows": rows.tolist(), "identical": bool(np.array_equal(D[rows], Dc)),
                    "cpu_seconds": round(time.perf_counter() - t0, 2)}
    return out


def bench_cpu_gemm(size, rng):
    ins = isa.lookup(GEMM)
    A = rng.standard_normal((size, size), dtype=np.float32).astype(np.float16).view(np.uint16)
    B = rng.standard_normal((size, size), dtype=np.float32).astype(np.float16).view(np.uint16)
    C = rng.standard_normal((size, size), dtype=np.float32).view(np.uint32)
    emulate.matmul(A[:2], B, C[:2], ins, device="cpu")      # build the step kernel
    t0 = time.perf_counter()
    emulate.matmul(A, B, C, ins, device="cpu")
    t = time.perf_counter() - t0
    dots = size ** 3 // ins.k
    return {"shape": [size] * 3, "seconds": t, "threads": _cpus(), "step_dots_per_s": dots / t,
            "extrapolated_4096_seconds": t * (4096 / size) ** 3}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gemm", type=int, default=8192)
    p.add_argument("--cpu-gemm", type=int, default=1024)
    p.add_argument("--tiles", nargs="*", default=["16,64,1,4,1", "16,64,1,4,1:whole"],
                   help="GEMM tilings BM,BN,TM,TN,KS to time; ':whole' keeps the whole step per "
                        "output (no per-block decode)")
    p.add_argument("--sim-dots", type=float, default=2e8)
    p.add_argument("--cpu-dots", type=float, default=8e6)
    p.add_argument("--check-rows", type=int, default=4)
    p.add_argument("--skip", nargs="*", default=[], choices=["simulate", "gemm", "cpu"])
    p.add_argument("--json", metavar="OUT.json")
    p.add_argument("--profile", action="store_true",
                   help="only run the GEMM kernel once at --gemm with the first --tiles (for ncu)")
    a = p.parse_args(argv)
    ok, dev = cuda.available()
    if not ok:
        print(f"bench_gpu: no GPU: {dev}", file=sys.stderr)
        return 2
    if a.profile:
        import cupy as cp
        ins = isa.lookup(GEMM)
        t = a.tiles[0]
        mod = cuda.dot_module(T.default().resolve(ins, None), ins,
                              tuple(int(x) for x in t.split(":")[0].split(",")), not t.endswith(":whole"))
        rng = np.random.default_rng(0)
        n = a.gemm
        A = cp.asarray(rng.standard_normal((n, n), dtype=np.float32).astype(np.float16).view(np.uint16))
        B = cp.asarray(rng.standard_normal((n, n), dtype=np.float32).astype(np.float16).view(np.uint16))
        C = cp.asarray(rng.standard_normal((n, n), dtype=np.float32).view(np.uint32))
        mod.gemm_device(A, B, C, None, None, 0, n // ins.k)
        cp.cuda.Device().synchronize()
        return 0
    try:
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
    except OSError:
        drv = "?"
    rng = np.random.default_rng(0)
    res = {"device": dev, "driver": drv, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "cpu": platform.processor() or platform.machine(), "cpus": _cpus(),
           "command": "python3 bench/bench_gpu.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    print(f"{dev}, driver {drv}, {res['cpus']} CPUs, {res['date']}")
    ok_all = True
    if "simulate" not in a.skip:
        res["simulate"] = []
        print(f"\nsimulate (independent tiles){'':<18} {'GPU dots/s':>11} {'end-to-end':>11} "
              f"{'CPU dots/s':>11} {'GPU/CPU':>8}  identical")
        for name, instr in SIM:
            r = bench_simulate(name, instr, a.sim_dots, a.cpu_dots, rng)
            res["simulate"].append(r)
            ok_all &= r["identical"]
            print(f"{name:<46} {r['gpu_dots_per_s']:>11.3e} {r['gpu_end_to_end_dots_per_s']:>11.3e} "
                  f"{r['cpu_dots_per_s']:>11.3e} {r['ratio_gpu_cpu']:>8.0f}  {r['identical']}", flush=True)
    if "gemm" not in a.skip:
        print(f"\nemulate.matmul {a.gemm}^3 {GEMM}")
        tl = [(tuple(int(x) for x in t.split(":")[0].split(",")), not t.endswith(":whole")) for t in a.tiles]
        g = bench_gemm(a.gemm, tl, a.check_rows, rng)
        res["gemm"] = g
        ok_all &= g["check"]["identical"]
        print(f"  kernel {g['kernel_seconds']:.3f} s (tile {g['best_tile']}, split {g['best_split']}), end to end "
              f"{g['end_to_end_seconds']:.3f} s; torch.matmul f16 {g['torch_seconds'] * 1e3:.3f} ms; "
              f"kernel / torch = {g['ratio_kernel_to_torch']:.0f}x; "
              f"{g['step_dots'] / g['kernel_seconds']:.3e} step dots/s")
        print(f"  CPU path on rows {g['check']['rows']}: "
              f"{'bit-identical' if g['check']['identical'] else 'DIFFERENT'} ({g['check']['cpu_seconds']} s)")
    if "cpu" not in a.skip:
        c = bench_cpu_gemm(a.cpu_gemm, rng)
        res["cpu_gemm"] = c
        print(f"\nCPU compiled path {a.cpu_gemm}^3: {c['seconds']:.2f} s on {c['threads']} threads "
              f"({c['step_dots_per_s']:.3e} step dots/s); 4096^3 extrapolated: "
              f"{c['extrapolated_4096_seconds']:.0f} s")
        if "gemm" in res:
            print(f"  GPU kernel / CPU at {a.gemm}^3: "
                  f"{c['step_dots_per_s'] and (res['gemm']['step_dots'] / res['gemm']['kernel_seconds']) / c['step_dots_per_s']:.0f}x")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1, default=str))
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
