"""Benchmark: the GPU path (mmaformal.cuda) against the silicon, the CPU compiled path and mmasim.

    python3 bench/bench_gpu.py [--quick] [--gemm 8192] [--gemm-instr all | ROW[@SIZE] ...]
        [--full 1024] [--cpu-gemm 4096] [--sim-dots 2e8] [--e2e-dots 1.6e7] [--cpu-dots 8e6]
        [--mmasim-dots 2e6] [--tiles BM,BN,TM,TN,KS[:whole] ...] [--reps 2] [--check-rows 4]
        [--skip gemm full simulate mmasim cpu] [--json OUT.json]
    python3 bench/bench_gpu.py --profile [--gemm-instr ROW[@SIZE]] [--profile-kernel general]

ROW: an alias of bench/gpu_cases.py ROWS (f16, bf16, e4m3, tf32, sm80-f16, k8-f16, gfx942) or
an instruction name. --quick: --gemm 2048 --full 512 --cpu-gemm 1024 and 10x fewer simulate dot
products (also warms CuPy's NVRTC disk cache for a full run: the kernels do not depend on sizes).
Every figure is measured in this run, on this GPU and this host's CPUs (all of them,
MMAFORMAL_THREADS). Printed, in order:

1. GEMM rows (default: all seven ROWS at --gemm^3). Operands A, B ~ N(0,1) in the operand format
   (e4m3 scaled by 8, tf32 with the low 13 bits cleared), C ~ N(0,1) f32, raw bits, as CuPy
   arrays on the GPU. Per row: the general kernel (cuda.dot_module(facts=False)) and the
   specialised one (facts=True: a step traced for all-finite A and B tiles, the general step
   as fallback) on the same operands, best of --reps by CUDA events, in seconds and instruction
   step dot products/s (M*N*K/k per second); each module's build seconds (trace + NVRTC;
   "first" when CuPy's kernel disk cache grew, "cached" when it did not); the native reference
   on this GPU (gpu_cases.ROWS: torch.matmul f16/bf16 with reduced-precision reduction off,
   torch._scaled_mm e4m3, torch.matmul f32 with allow_tf32; the sm80, k8 and gfx942 rows are
   timed against torch's f16 matmul of the same shape, and say so), best of 10, A @ B without C,
   and the ratios kernel / native; emulate.matmul on the same CuPy arrays (device in and out).
   Checks: general == specialised on all of D, emulate.matmul == the kernel, and --check-rows
   sampled rows == emulate.matmul(device="cpu").
2. Complete check per row at --full^3 (default 1024): operands with Inf, NaN (payloads), signed
   zeros, subnormals, the largest finite values and cancelling pairs in some K-step tiles
   (gpu_cases.special_gemm), special C values; all of D of the general kernel, the specialised
   kernel and emulate.matmul against the CPU compiled path: the number of differing elements
   (0 expected), and the share of (block, K-step) tiles in the specialised step's domain (the
   rest exercises its fallback).
3. simulate (independent tiles) for sm90 f16 (T-FDPA), sm90 fp8 mma.sync (HMMA-halves chain),
   gfx942 f16 (TR-FDPA) and an f64 FMA chain: the kernel on --sim-dots device-resident random raw
   bits (CUDA events); end to end from torch CUDA tensors (T,M,K), (T,K,N), (T,M,N) of raw bits
   (D a CUDA tensor) and from numpy arrays (device="cuda"), on --e2e-dots random raw bits (every
   class); the host-device link bound of the numpy path (its bytes over the measured CuPy copy
   time of the same arrays, in and out); the CPU compiled path on the first --cpu-dots of those
   tiles. Checks: device path == numpy path, numpy GPU path == CPU path.
4. mmasim (`import mmasim`, bench/mmasim_adapter.py's make_op and dpa calling convention) on the
   same GPU with torch CUDA tensors, for the simulate instructions it models: its dpa timed by
   CUDA events against our end-to-end device path on the same --mmasim-dots N(0,1) operands;
   check: the same bits on all of them. Without mmasim: one line, and the run goes on.
5. The CPU compiled path at --cpu-gemm^3 (default 4096, measured) for the f16 row's instruction,
   and emulate.matmul on the GPU on the same operands: seconds, the GPU / CPU ratio; check: the
   same bits on all of D.
6. Summary: one line per GEMM row, then `CHECKS name=ok|FAIL ... -> PASS|FAIL`.

--json OUT writes every figure (rewritten after each section, so a run cut short keeps what it
measured). --profile runs one GEMM kernel once (for ncu). Exit status: 0 every check passed, 1
one failed, 2 no usable GPU (one line).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

import gpu_cases as G  # noqa: E402

from mmaformal import cuda, emulate, isa  # noqa: E402
from mmaformal import theory as T  # noqa: E402

S = importlib.import_module("mmaformal.simulate")   # the module (the package exports the function)

SIM = [
    ("sm90 f16->f32 T-FDPA", "sm90/mma.m16n8k16.f32.f16.f16.f32"),
    ("sm90 fp8 mma.sync HMMA chain", "sm90/mma.m16n8k32.f32.e4m3.e4m3.f32"),
    ("gfx942 f16 TR-FDPA", "gfx942/v_mfma_f32_32x32x8_f16"),
    ("sm90 f64 FMA chain", "sm90/mma.m16n8k4.f64.f64.f64.f64"),
]
GEMM = G.ROWS[0][1]
DEFAULTS = {"gemm": 8192, "full": 1024, "cpu_gemm": 4096, "sim_dots": 2e8, "e2e_dots": 1.6e7,
            "cpu_dots": 8e6, "mmasim_dots": 2e6}
QUICK = {"gemm": 2048, "full": 512, "cpu_gemm": 1024, "sim_dots": 2e7, "e2e_dots": 1.6e6,
         "cpu_dots": 8e5, "mmasim_dots": 2e5}
NATIVE_BY_FORMAT = {"f16": "f16", "bf16": "bf16", "e4m3": "e4m3", "tf32": "tf32"}


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _rand_bits(rng, shape, fmt):
    """Uniformly random raw bits of a format on the host (every class: NaN, Inf, subnormals)."""
    from mmaformal import fp
    st = S.storage_dtype(fmt)
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


def _sync():
    import cupy as cp
    cp.cuda.Device().synchronize()


def _err(e: BaseException) -> str:
    s = str(e).strip()
    return f"{type(e).__name__}: {s.splitlines()[0][:200] if s else ''}"


def _guard(res: dict, name: str, fn, *args):
    """fn(*args), or None after printing the error (check `name` then fails): one broken row
    does not lose the rest of a one-shot run."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001
        print(f"  {name}: ERROR {_err(e)}", flush=True)
        traceback.print_exc(limit=4)
        res["checks"][f"{name}.ran"] = False
        res.setdefault("errors", {})[name] = _err(e)
        return None


# ---------------------------------------------------------------------------------------------
# 1. GEMM rows


def _module(th, ins, tile, split, facts):
    """(DotModule with its GEMM kernel built, info) or (None, info with the error)."""
    info = {"facts": facts, "tile": list(tile) if tile else None, "split": split}
    n0, t0 = G.nvrtc_cache_files(), time.perf_counter()
    try:
        try:
            mod = cuda.dot_module(th, ins, tile, split, facts=facts)
        except TypeError as e:                 # a mmaformal.cuda without the facts argument
            if "facts" not in str(e):
                raise
            if facts:
                return None, {**info, "error": "cuda.dot_module takes no facts argument"}
            mod = cuda.dot_module(th, ins, tile, split)
        mod.mod("gemm")                                          # trace + NVRTC
    except Exception as e:  # noqa: BLE001 (a module that does not build: say so, go on)
        return None, {**info, "error": _err(e)}
    info["build_seconds"] = round(time.perf_counter() - t0, 2)
    info["nvrtc"] = "first" if G.nvrtc_cache_files() > n0 else "cached"
    info["specialised"] = list(getattr(mod, "specialised", ()))      # its levels: normal, finite
    info["tile"] = list(mod.tile)
    info["kernel"] = "split" if "decA" in mod.source("gemm") else "whole"
    return mod, info


def _kernels(th, ins, Ad, Bd, Cd, tiles, reps) -> dict:
    """{'general': info, 'specialised': info}: the best tiling of each kind, its D kept."""
    import cupy as cp
    M, N = Ad.shape[0], Bd.shape[1]
    steps = Ad.shape[1] // ins.k
    out = {}
    for facts, name in ((False, "general"), (True, "specialised")):
        best = None
        for tile, split in tiles:
            mod, info = _module(th, ins, tile, split, facts)
            if mod is not None:
                D = cp.empty((M, N), dtype=S.storage_dtype(ins.d))
                try:
                    info["kernel_seconds"] = G.cupy_best(
                        lambda: mod.gemm_device(Ad, Bd, Cd, None, None, 0, steps, out=D), reps)
                except Exception as e:  # noqa: BLE001 (e.g. OverflowError of a range check)
                    info["error"] = _err(e)
                else:
                    info["step_dots_per_s"] = M * N * steps / info["kernel_seconds"]
                    info["D"] = D
            out.setdefault(name + "_all", []).append({k: v for k, v in info.items() if k != "D"})
            ok = "kernel_seconds" in info
            if best is None or (ok and ("kernel_seconds" not in best
                                        or info["kernel_seconds"] < best["kernel_seconds"])):
                best = info
        out[name] = best
        print(f"  {name:<12} " + _kernel_line(best), flush=True)
    return out


def _kernel_line(k: dict) -> str:
    if "kernel_seconds" not in k:
        return f"not run: {k.get('error', '?')}"
    spec = f", specialised steps: {'+'.join(k['specialised']) or 'NO'}" if k["facts"] else ""
    return (f"{k['kernel_seconds']:8.3f} s  {k['step_dots_per_s']:.3e} step dots/s  build "
            f"{k['build_seconds']} s ({k['nvrtc']}, {k['kernel']}, tile {','.join(map(str, k['tile']))}"
            f"{spec})")


def bench_gemm_row(label, instr, size, a, rng, res) -> dict:
    import cupy as cp
    ins = isa.lookup(instr)
    th = T.default().resolve(ins, None)
    M = N = K = size
    print(f"\n[{label}] {ins.name} {size}^3 (theory {th.id})", flush=True)
    A, B, C = (G.normal_bits(rng, (M, K), ins.a), G.normal_bits(rng, (K, N), ins.b),
               G.normal_bits(rng, (M, N), ins.c))
    steps = K // ins.k
    r = {"label": label, "instruction": ins.name, "theory": th.id, "shape": [M, N, K],
         "step_dots": M * N * steps}
    Ad, Bd, Cd = cp.asarray(A), cp.asarray(B), cp.asarray(C)
    ks = _kernels(th, ins, Ad, Bd, Cd, a.tile_list, a.reps)
    gen, spe = ks["general"], ks["specialised"]
    Dg, Ds = gen.pop("D", None), spe.pop("D", None)
    r.update({k: v for k, v in ks.items()})
    kind, nlabel = G.NATIVE.get(ins.name, (NATIVE_BY_FORMAT.get(ins.a), f"torch {ins.a} matmul, same shape"))
    for name, k in (("general", gen), ("specialised", spe)):
        if "error" in k and "no facts argument" not in k["error"]:
            res["checks"][f"{label}.{name}.ran"] = False       # a kernel that fails is a failure
    try:
        r["native"] = {**G.native(kind, A, B), "label": nlabel} if kind else None
    except Exception as e:  # noqa: BLE001 (no native figure is not a failed check)
        r["native"] = None
        print(f"  native       not run: {nlabel}: {_err(e)}")
    if r["native"]:
        tn = r["native"]["seconds"]
        for name, k in (("general", gen), ("specialised", spe)):
            if "kernel_seconds" in k:
                r[f"ratio_{name}_to_native"] = k["kernel_seconds"] / tn
        print(f"  native       {tn * 1e3:8.3f} ms {nlabel}; kernel / native: general "
              f"{_fmt(r.get('ratio_general_to_native'), '.0f', 'x')}, specialised "
              f"{_fmt(r.get('ratio_specialised_to_native'), '.0f', 'x')}", flush=True)
    checks, ref = res["checks"], Ds if Ds is not None else Dg
    if Dg is not None and Ds is not None:
        diff = int(cp.count_nonzero(Dg != Ds))
        checks[f"{label}.gen=spec"] = diff == 0
        print(f"  general == specialised on all {M * N} elements: "
              f"{'yes' if diff == 0 else f'NO ({diff} differ)'}")
    if ref is not None:
        emulate.matmul(Ad[:64], Bd, Cd[:64], ins)               # its module built, not timed
        t, Da = G.wall_best(lambda: emulate.matmul(Ad, Bd, Cd, ins), 1, _sync)
        diff = int(cp.count_nonzero(Da != ref))
        r["emulate_device_seconds"] = t
        checks[f"{label}.api"] = diff == 0
        print(f"  emulate.matmul on the CuPy arrays {t:.3f} s, same bits as the kernel: "
              f"{'yes' if diff == 0 else f'NO ({diff} differ)'}")
        del Da
        rows = np.linspace(0, M - 1, a.check_rows).astype(int)
        t0 = time.perf_counter()
        Dc = emulate.matmul(A[rows], B, C[rows], ins, device="cpu", threads=_cpus())
        tc = time.perf_counter() - t0
        same = all(np.array_equal(D[cp.asarray(rows)].get(), Dc) for D in (Dg, Ds) if D is not None)
        r["check"] = {"rows": rows.tolist(), "identical": same, "cpu_seconds": round(tc, 2)}
        checks[f"{label}.rows"] = same
        print(f"  rows {rows.tolist()} against the CPU path: "
              f"{'bit-identical' if same else 'DIFFERENT'} ({tc:.1f} s)", flush=True)
    else:
        checks[f"{label}.ran"] = False
    del Ad, Bd, Cd, Dg, Ds, ref
    return r


# ---------------------------------------------------------------------------------------------
# 2. The complete check with special values


def full_check(label, instr, n, a, rng, res) -> dict:
    import cupy as cp
    ins = isa.lookup(instr)
    th = T.default().resolve(ins, None)
    A, B, C = G.special_gemm(ins, n, rng)
    r = {"label": label, "instruction": ins.name, "shape": [n] * 3,
         "nonfinite_a": int((~G.finite_mask(A, ins.a)).sum()),
         "nonfinite_b": int((~G.finite_mask(B, ins.b)).sum())}
    t0 = time.perf_counter()
    Dc = emulate.matmul(A, B, C, ins, device="cpu", threads=_cpus())
    r["cpu_seconds"] = round(time.perf_counter() - t0, 2)
    Ad, Bd, Cd = cp.asarray(A), cp.asarray(B), cp.asarray(C)
    tile, split = a.tile_list[0]
    parts = []
    for name, facts in (("general", False), ("specialised", True), ("api", None)):
        try:
            if facts is None:
                D = emulate.matmul(Ad, Bd, Cd, ins)
                share = None
            else:
                mod, info = _module(th, ins, tile, split, facts)
                if mod is None:
                    r[name] = info
                    parts.append(f"{name} not built ({info['error']})")
                    continue
                D = mod.gemm_device(Ad, Bd, Cd, None, None, 0, n // ins.k)
                share = G.specialised_share(A, B, ins, mod.tile) if info["specialised"] else None
            diff = int(np.count_nonzero(D.get() != Dc))
        except Exception as e:  # noqa: BLE001 (an OverflowError of a range check is a failure)
            r[name] = {"error": _err(e)}
            res["checks"][f"{label}.full.{name}"] = False
            parts.append(f"{name} ERROR {_err(e)}")
            continue
        r[name] = {"differing": diff, "specialised_share": share}
        res["checks"][f"{label}.full.{name}"] = diff == 0
        parts.append(f"{name} {diff}" + (f" (specialised step on {100 * share:.1f}% of block-steps)"
                                         if share is not None else ""))
    print(f"  [{label}] {n}^3 special operands ({r['nonfinite_a']} non-finite in A, "
          f"{r['nonfinite_b']} in B; CPU {r['cpu_seconds']} s): differing elements of D: "
          + ", ".join(parts), flush=True)
    return r


# ---------------------------------------------------------------------------------------------
# 3. simulate


def sim_kernel(ins, th, dots) -> dict:
    import cupy as cp
    M, N, K = ins.m, ins.n, ins.k
    mod = cuda.dot_module(th, ins)
    tiles = max(1, int(dots) // (M * N))
    A3 = _rand_bits_dev((tiles, M, K), ins.a)
    B3 = _rand_bits_dev((tiles, N, K), ins.b)
    C2 = _rand_bits_dev((tiles, M * N), ins.c)
    D = cp.empty((tiles, M * N), dtype=S.storage_dtype(ins.d))
    t0 = time.perf_counter()
    mod.sim_device(A3, B3, C2, out=D)                 # trace + NVRTC compile + first run
    t_build = time.perf_counter() - t0
    t = G.cupy_best(lambda: mod.sim_device(A3, B3, C2, out=D), 3)
    return {"tiles": tiles, "build_seconds": round(t_build, 2), "kernel_seconds": t,
            "kernel_dots_per_s": tiles * M * N / t}


def sim_paths(ins, th, e2e_dots, cpu_dots, rng) -> dict:
    """End to end from torch CUDA tensors and from numpy, the link bound, the CPU path."""
    import cupy as cp
    M, N, K = ins.m, ins.n, ins.k
    nt = max(1, int(e2e_dots) // (M * N))
    A = _rand_bits(rng, (nt, M, K), ins.a)
    B = _rand_bits(rng, (nt, K, N), ins.b)
    C = _rand_bits(rng, (nt, M, N), ins.c)
    dots = nt * M * N
    t_host, Dh = G.wall_best(lambda: S.simulate(ins, A, B, C, device="cuda"), 2, _sync)
    At, Bt, Ct = G.torch_dev(A), G.torch_dev(B), G.torch_dev(C)
    S.simulate(ins, At, Bt, Ct)                                      # warm-up
    t_dev, Dd = G.wall_best(lambda: S.simulate(ins, At, Bt, Ct), 3, _sync)
    same_dev = bool(np.array_equal(G.torch_host(Dd), Dh))
    del At, Bt, Ct, Dd
    t_in, _ = G.wall_best(lambda: [cp.asarray(x) for x in (A, B, C)], 3, _sync)
    Dg = cp.asarray(Dh)
    t_out, _ = G.wall_best(lambda: Dg.get(), 3, _sync)
    b_in, b_out = A.nbytes + B.nbytes + C.nbytes, Dh.nbytes
    ct = min(nt, max(1, int(cpu_dots) // (M * N)))
    S._kernel(th, ins)                                # the C kernel's build is not timed
    t0 = time.perf_counter()
    Dc = S.simulate(ins, A[:ct], B[:ct], C[:ct], device="cpu")
    t_cpu = time.perf_counter() - t0
    return {"e2e_dots": dots, "device_seconds": t_dev, "device_dots_per_s": dots / t_dev,
            "host_seconds": t_host, "host_dots_per_s": dots / t_host,
            "bytes_in": b_in, "bytes_out": b_out, "copy_in_seconds": t_in, "copy_out_seconds": t_out,
            "link_gb_per_s": (b_in + b_out) / (t_in + t_out) / 1e9,
            "link_bound_dots_per_s": dots / (t_in + t_out),
            "device_equals_host": same_dev, "cpu_dots": ct * M * N, "cpu_seconds": t_cpu,
            "cpu_dots_per_s": ct * M * N / t_cpu, "cpu_threads": _cpus(),
            "host_equals_cpu": bool(np.array_equal(Dh[:ct], Dc))}


def bench_simulate(a, rng, res) -> list:
    out = []
    print(f"\nsimulate (independent tiles){'':<10} {'kernel':>9} {'device e2e':>10} {'host e2e':>9} "
          f"{'link bound':>10} {'CPU':>9} {'kern/CPU':>8}  dots/s; identical (device=host, host=CPU)")
    for name, instr in SIM:
        ins = isa.lookup(instr)
        th = T.default().resolve(ins, None)
        tag = f"sim.{ins.arch}.{ins.a}"
        r = _guard(res, tag, lambda: {
            "name": name, "instruction": ins.name, "theory": th.id,
            **sim_kernel(ins, th, a.sim_dots), **sim_paths(ins, th, a.e2e_dots, a.cpu_dots, rng)})
        if r is None:
            continue
        r["ratio_kernel_cpu"] = r["kernel_dots_per_s"] / r["cpu_dots_per_s"]
        res["checks"][f"{tag}.device=host"] = r["device_equals_host"]
        res["checks"][f"{tag}.host=cpu"] = r["host_equals_cpu"]
        out.append(r)
        print(f"{name:<38} {r['kernel_dots_per_s']:>9.2e} {r['device_dots_per_s']:>10.2e} "
              f"{r['host_dots_per_s']:>9.2e} {r['link_bound_dots_per_s']:>10.2e} {r['cpu_dots_per_s']:>9.2e} "
              f"{r['ratio_kernel_cpu']:>8.0f}  {r['device_equals_host']}, {r['host_equals_cpu']}", flush=True)
    if out:
        print(f"  kernel: {out[0]['tiles']} tiles of random raw bits on the GPU (CUDA events, best of 3; "
              f"build {', '.join(str(r['build_seconds']) for r in out)} s); end to end: "
              f"{out[0]['e2e_dots']:.2e} dot products (wall, synchronized); link bound: bytes in + out "
              f"over the CuPy copy time of the same arrays ({out[0]['link_gb_per_s']:.1f} GB/s for the "
              f"first row); CPU: {out[0]['cpu_threads']} threads")
    return out


# ---------------------------------------------------------------------------------------------
# 4. mmasim on the same GPU


def _mmasim_row(ins, op, dots, chunk, rng) -> dict:
    import torch
    M, N, K = ins.m, ins.n, ins.k
    nt = max(1, int(dots) // (M * N))
    A = G.normal_bits(rng, (nt, M, K), ins.a)
    B = G.normal_bits(rng, (nt, K, N), ins.b)
    C = G.normal_bits(rng, (nt, M, N), ins.c)
    At, Bt, Ct = G.torch_dev(A), G.torch_dev(B), G.torch_dev(C)
    S.simulate(ins, At, Bt, Ct)                                      # warm-up
    t_ours, Do = G.wall_best(lambda: S.simulate(ins, At, Bt, Ct), 3, _sync)
    a, b, c = G.torch_view(At, op.a_type), G.torch_view(Bt, op.b_type), G.torch_view(Ct, op.c_type)
    step = max(1, int(chunk) // (M * N))

    def run():
        outs = []
        with torch.no_grad():
            for t0 in range(0, nt, step):
                n = min(nt, t0 + step) - t0
                av = a[t0:t0 + n, :, None, :].expand(n, M, N, K)
                bv = b[t0:t0 + n].transpose(1, 2)[:, None, :, :].expand(n, M, N, K)
                outs.append(op.dpa(av, bv, c[t0:t0 + n]))
        return torch.cat(outs)

    d = run()                                                        # warm-up (and the bits)
    t_sim = G.torch_best(run, 2, warm=0)
    d = d.to(op.d_type) if d.dtype != op.d_type else d
    diff = int((G.torch_signed(d) != G.torch_signed(Do)).sum())
    dots = nt * M * N
    return {"dots": dots, "mmasim_seconds": t_sim, "mmasim_dots_per_s": dots / t_sim,
            "ours_device_seconds": t_ours, "ours_device_dots_per_s": dots / t_ours,
            "ours_over_mmasim": t_sim / t_ours, "differing": diff}


def bench_mmasim(a, rng, res) -> dict:
    try:
        import mmasim
        import mmasim_adapter as MA
        import mmasim.amd  # noqa: F401 (what make_op imports: fail here, once)
        import mmasim.nv_ptx  # noqa: F401
    except Exception as e:  # noqa: BLE001
        print(f"\nmmasim: not importable ({_err(e)}); skipped", flush=True)
        return {"skipped": _err(e)}
    try:
        from importlib.metadata import version
        ver = version("mmasim")
    except Exception:  # noqa: BLE001
        ver = getattr(mmasim, "__version__", "?")
    out = {"version": ver, "rows": []}
    print(f"\nmmasim {ver} on this GPU (torch CUDA tensors, dpa in chunks of {int(a.mmasim_chunk)} dot "
          f"products, CUDA events) against our simulate from the same tensors, N(0,1) operands")
    for name, instr in SIM:
        ins = isa.lookup(instr)
        arch = MA.canonical_arch(ins.arch)
        try:
            op = MA.make_op(arch, ins.qualifier)
            if getattr(op, "k", ins.k) != ins.k:
                raise ValueError(f"mmasim's k is {op.k}")
        except Exception as e:  # noqa: BLE001 (mmasim asserts on what it does not model)
            out["rows"].append({"name": name, "instruction": instr, "unsupported": _err(e)})
            print(f"  {name:<30} not modelled by mmasim ({arch} {ins.qualifier})")
            continue
        r = _guard(res, f"mmasim.{ins.arch}.{ins.a}", _mmasim_row, ins, op, a.mmasim_dots,
                   a.mmasim_chunk, rng)
        if r is None:
            continue
        out["rows"].append({"name": name, "instruction": instr, **r})
        res["checks"][f"mmasim.{ins.arch}.{ins.a}"] = r["differing"] == 0
        print(f"  {name:<30} mmasim {r['mmasim_dots_per_s']:.3e} dots/s, ours {r['ours_device_dots_per_s']:.3e} "
              f"({r['ours_over_mmasim']:.3g}x); {r['dots']} dot products, "
              f"{'same bits' if r['differing'] == 0 else str(r['differing']) + ' DIFFER'}", flush=True)
    return out


# ---------------------------------------------------------------------------------------------
# 5. The CPU compiled path, measured


def bench_cpu_gemm(size, rng, res) -> dict:
    import cupy as cp
    ins = isa.lookup(GEMM)
    A = G.normal_bits(rng, (size, size), ins.a)
    B = G.normal_bits(rng, (size, size), ins.b)
    C = G.normal_bits(rng, (size, size), ins.c)
    emulate.matmul(A[:2], B, C[:2], ins, device="cpu")      # build the step kernel
    print(f"\nCPU compiled path {size}^3 {ins.name} on {_cpus()} threads ...", flush=True)
    t0 = time.perf_counter()
    Dc = emulate.matmul(A, B, C, ins, device="cpu", threads=_cpus())
    t = time.perf_counter() - t0
    Ad, Bd, Cd = cp.asarray(A), cp.asarray(B), cp.asarray(C)
    emulate.matmul(Ad[:64], Bd, Cd[:64], ins)                 # the module (built by now anyway)
    tg, Dg = G.wall_best(lambda: emulate.matmul(Ad, Bd, Cd, ins), 2, _sync)
    diff = int(np.count_nonzero(Dg.get() != Dc))
    dots = size * size * (size // ins.k)
    r = {"instruction": ins.name, "shape": [size] * 3, "seconds": t, "threads": _cpus(),
         "step_dots_per_s": dots / t, "gpu_seconds": tg, "ratio_gpu_cpu": t / tg, "differing": diff}
    res["checks"][f"cpu{size}=gpu"] = diff == 0
    row = next((g for g in res.get("gemm", []) if g and g["instruction"] == ins.name
                and "kernel_seconds" in g.get("specialised", {})), None)
    extra = ""
    if row:
        r["ratio_gpu_kernel_rate_to_cpu"] = row["specialised"]["step_dots_per_s"] / r["step_dots_per_s"]
        extra = (f"; the specialised kernel's rate at {row['shape'][0]}^3 "
                 f"{row['specialised']['step_dots_per_s']:.3e} is {r['ratio_gpu_kernel_rate_to_cpu']:.0f}x")
    print(f"  CPU {t:.2f} s ({r['step_dots_per_s']:.3e} step dots/s); GPU emulate.matmul on device "
          f"arrays {tg:.3f} s: GPU / CPU {r['ratio_gpu_cpu']:.0f}x{extra}; all of D "
          f"{'bit-identical' if diff == 0 else f'DIFFERENT ({diff} elements)'}", flush=True)
    return r


# ---------------------------------------------------------------------------------------------
# Summary, profile, main


def _fmt(x, spec, unit="", width=0):
    return f"{'-' if x is None else f'{x:{spec}}{unit}':>{width}}"


def summary(res) -> bool:
    checks = res["checks"]
    full = {f["label"]: f for f in res.get("full", []) if f}
    if res.get("gemm"):
        print(f"\n{'GEMM row':<9} {'size':>5} {'general s':>9} {'special s':>9} {'native ms':>9} "
              f"{'spec/nat':>8} {'gen/nat':>8} {'step dots/s':>11} {'build gen/spec s':>17} rows full"
              "   (build: f first NVRTC compile, c cached; step dots/s: specialised, else general)")
    for g in res.get("gemm", []):
        if not g:
            continue
        ge, sp, lab = g.get("general", {}), g.get("specialised", {}), g["label"]
        nat = (g.get("native") or {}).get("seconds")
        rate = sp.get("step_dots_per_s") or ge.get("step_dots_per_s")
        bld = "/".join(f"{k.get('build_seconds', '-')}{(k.get('nvrtc') or ' ')[0]}" for k in (ge, sp))
        fl = [v for n, v in checks.items() if n.startswith(f"{lab}.full.")]
        fs = "-" if lab not in full else ("ok" if fl and all(fl) else "FAIL")
        rs = {True: "ok", False: "FAIL", None: "-"}[checks.get(f"{lab}.rows")]
        print(f"{lab:<9} {g['shape'][0]:>5} {_fmt(ge.get('kernel_seconds'), '.3f', '', 9)} "
              f"{_fmt(sp.get('kernel_seconds'), '.3f', '', 9)} {_fmt(nat and nat * 1e3, '.3f', '', 9)} "
              f"{_fmt(g.get('ratio_specialised_to_native'), '.0f', 'x', 8)} "
              f"{_fmt(g.get('ratio_general_to_native'), '.0f', 'x', 8)} {_fmt(rate, '.3e', '', 11)} "
              f"{bld:>17} {rs:>4} {fs:>4}")
    ok = all(checks.values()) and bool(checks)
    print("CHECKS " + " ".join(f"{n}={'ok' if v else 'FAIL'}" for n, v in checks.items())
          + f" -> {'PASS' if ok else 'FAIL'} ({sum(checks.values())}/{len(checks)})")
    return ok


def profile(a) -> int:
    import cupy as cp
    label, instr, n = G.parse_rows(a.gemm_instr, a.gemm)[0]
    ins = isa.lookup(instr)
    tile, split = a.tile_list[0]
    mod, info = _module(T.default().resolve(ins, None), ins, tile, split, a.profile_kernel == "specialised")
    if mod is None:
        print(f"bench_gpu --profile: {ins.name}: {info['error']}", file=sys.stderr)
        return 1
    rng = np.random.default_rng(0)
    A, B, C = (cp.asarray(G.normal_bits(rng, (n, n), f)) for f in (ins.a, ins.b, ins.c))
    mod.gemm_device(A, B, C, None, None, 0, n // ins.k)
    cp.cuda.Device().synchronize()
    print(f"profiled {a.profile_kernel} kernel of {ins.name} at {n}^3 (tile {info['tile']}, {info['kernel']}, "
          f"specialised step {info['specialised']})")
    return 0


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[1:11]))
    p.add_argument("--quick", action="store_true", help="smaller sizes: " +
                   ", ".join(f"{k}={v:g}" for k, v in QUICK.items()))
    p.add_argument("--gemm", type=int, help=f"GEMM rows' size (default {DEFAULTS['gemm']})")
    p.add_argument("--gemm-instr", nargs="+", default=["all"], metavar="ROW[@SIZE]",
                   help="GEMM rows: 'all' or aliases " + ", ".join(G.ALIASES) + " or instruction names")
    p.add_argument("--full", type=int, help=f"size of the complete special-value check (default {DEFAULTS['full']})")
    p.add_argument("--cpu-gemm", type=int, help=f"CPU compiled GEMM size (default {DEFAULTS['cpu_gemm']})")
    p.add_argument("--sim-dots", type=float, help="simulate kernel dot products (default 2e8)")
    p.add_argument("--e2e-dots", type=float, help="simulate end-to-end dot products (default 1.6e7)")
    p.add_argument("--cpu-dots", type=float, help="simulate CPU dot products (default 8e6)")
    p.add_argument("--mmasim-dots", type=float, help="mmasim dot products per instruction (default 2e6)")
    p.add_argument("--mmasim-chunk", type=float, default=1 << 18, help="dot products per mmasim dpa call")
    p.add_argument("--tiles", nargs="*", default=[], metavar="BM,BN,TM,TN,KS[:whole]",
                   help="GEMM tilings to time (default: the module's); ':whole' keeps the whole step "
                        "per output; the first one is used by --full and --profile")
    p.add_argument("--reps", type=int, default=2, help="GEMM kernel timings, best of (default 2)")
    p.add_argument("--check-rows", type=int, default=4)
    p.add_argument("--skip", nargs="*", default=[], choices=["gemm", "full", "simulate", "mmasim", "cpu"])
    p.add_argument("--json", metavar="OUT.json")
    p.add_argument("--profile", action="store_true",
                   help="only run one GEMM kernel once (first --gemm-instr row and --tiles; for ncu)")
    p.add_argument("--profile-kernel", choices=["specialised", "general"], default="specialised")
    a = p.parse_args(argv)
    for k, v in DEFAULTS.items():
        if getattr(a, k) is None:
            setattr(a, k, (QUICK if a.quick else DEFAULTS)[k])
    a.tile_list = [(tuple(int(x) for x in t.split(":")[0].split(",")), not t.endswith(":whole"))
                   for t in a.tiles] or [(None, True)]
    return a


def _header(argv) -> dict:
    try:
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
    except OSError:
        drv = "?"
    import mmaformal
    vers = {"mmaformal": mmaformal.__version__}
    for lib in ("cupy", "torch"):
        try:
            vers[lib] = importlib.import_module(lib).__version__
        except Exception as e:  # noqa: BLE001
            vers[lib] = f"not importable ({_err(e)})"
    res = {"device": cuda.available()[1], "driver": drv, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "cpu": platform.processor() or platform.machine(), "cpus": _cpus(), "versions": vers,
           "command": "python3 bench/bench_gpu.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "checks": {}}
    print(f"{res['device']}, driver {drv}, {res['cpus']} CPUs, {res['date']}; "
          + ", ".join(f"{k} {v}" for k, v in res["versions"].items()), flush=True)
    return res


def main(argv=None) -> int:
    a = parse(argv)
    ok, dev = cuda.available()
    if not ok:
        print(f"bench_gpu: no GPU: {dev}", file=sys.stderr)
        return 2
    os.environ["MMAFORMAL_THREADS"] = str(_cpus())
    if a.profile:
        return profile(a)
    res = _header(argv)
    rng = np.random.default_rng(0)
    rows = G.parse_rows(a.gemm_instr, a.gemm)

    def save():
        if a.json:
            Path(a.json).write_text(json.dumps(res, indent=1, default=str))

    if "gemm" not in a.skip:
        res["gemm"] = [_guard(res, lab, bench_gemm_row, lab, ins, n, a, rng, res) for lab, ins, n in rows]
        save()
    if "full" not in a.skip:
        print(f"\ncomplete check at {a.full}^3 with special operands (gpu_cases.special_gemm): "
              f"differing elements of D against the CPU compiled path (0 expected)")
        res["full"] = [_guard(res, f"{lab}.full", full_check, lab, ins, a.full, a, rng, res)
                       for lab, ins, _ in rows]
        save()
    if "simulate" not in a.skip:
        res["simulate"] = bench_simulate(a, rng, res)
        save()
    if "mmasim" not in a.skip:
        res["mmasim"] = bench_mmasim(a, rng, res)
        save()
    if "cpu" not in a.skip:
        res["cpu_gemm"] = _guard(res, f"cpu{a.cpu_gemm}", bench_cpu_gemm, a.cpu_gemm, rng, res)
        save()
    res["all_checks_pass"] = summary(res)
    save()
    return 0 if res["all_checks_pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
