"""Benchmark: simulate end to end from device-resident tensors against from numpy arrays.

    python3 bench/device_resident.py [--instr NAME] [--dots 1.6e7] [--repeat 5] [--lib torch]
                                     [--json OUT.json]

One run, side by side, in dot products per second (one output element = one dot product):

- "numpy": ``simulate(ins, A, B, C, device="cuda")`` on host numpy arrays (transfers to the GPU,
  the kernel, the transfer back): the path a device tensor takes today via ``.cpu().numpy()``;
- "device": ``simulate(ins, A, B, C)`` on torch CUDA tensors (or CuPy arrays, --lib cupy), the
  result a device tensor (DLPack in and out, validation on the device), synchronized;
- "kernel": the CUDA module alone (``cuda.dot_module(...).sim_device``) on contiguous tiles laid
  out beforehand: the ceiling of the device path;
then the ratios device / numpy and device / kernel, and a bit-for-bit check of the device
result against the numpy one. Inputs: uniformly random raw bits (the generated code is
branch-free: its speed does not depend on the values). Each timing is the median of --repeat
runs after one warm-up run (which also builds the CUDA module). Every line printed is one JSON
object; without a usable GPU the script prints one {"skipped": ...} line and exits 0.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmaformal import cuda, isa  # noqa: E402
from mmaformal.simulate import resolve_theory, simulate, storage_dtype  # noqa: E402

DEFAULT = "sm90/mma.m16n8k16.f32.f16.f16.f32"


def _emit(obj: dict, out: list) -> None:
    out.append(obj)
    print(json.dumps(obj), flush=True)


def _time(fn, sync, repeat: int) -> tuple[float, object]:
    """Median seconds of fn() (synchronized) over repeat runs after one warm-up; its result."""
    r = fn()
    sync()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), r


def _raw(fmt_name: str, shape, rng) -> np.ndarray:
    f = storage_dtype(fmt_name)
    from mmaformal import fp
    w = fp.fmt(fmt_name).k + fp.fmt(fmt_name).pad
    return rng.integers(0, 1 << w, size=shape, dtype=np.uint64).astype(f)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instr", default=DEFAULT)
    ap.add_argument("--dots", type=float, default=1.6e7, help="dot products per call")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--lib", choices=("torch", "cupy"), default="torch")
    ap.add_argument("--json", metavar="OUT.json", help="also write every line as one JSON list")
    args = ap.parse_args(argv)
    out: list = []
    ok, why = cuda.available()
    if not ok:
        _emit({"skipped": f"no usable GPU: {why}"}, out)
        return 0
    import cupy as cp
    ins = isa.lookup(args.instr)
    th = resolve_theory(ins)
    sup, why = cuda.supported(th, ins)
    if not sup:
        _emit({"skipped": f"{ins.name} has no GPU form: {why}"}, out)
        return 0
    M, N, K = ins.m, ins.n, ins.k
    T = max(1, int(args.dots) // (M * N))
    rng = np.random.default_rng(0)
    A = _raw(ins.a, (T, M, K), rng)
    B = _raw(ins.b, (T, K, N), rng)
    C = _raw(ins.c, (T, M, N), rng)
    kw = {}
    if ins.scale:
        nb = K // ins.scale_block
        kw = {"scale_a": rng.integers(0x70, 0x90, (T, M, nb)).astype(np.uint8),
              "scale_b": rng.integers(0x70, 0x90, (T, nb, N)).astype(np.uint8)}
    dots = T * M * N
    if args.lib == "torch":
        import torch
        if not torch.cuda.is_available():
            _emit({"skipped": "torch without CUDA (try --lib cupy)"}, out)
            return 0

        def dev(x):
            w = 8 * x.itemsize
            return torch.from_numpy(x.view(f"int{w}")).view(getattr(torch, f"uint{w}")).cuda()

        def host(d):
            w = 8 * d.element_size()
            return d.cpu().view(getattr(torch, f"int{w}")).numpy().view(f"uint{w}")

        def sync():
            torch.cuda.synchronize()
    else:
        dev, host = cp.asarray, cp.asnumpy

        def sync():
            cp.cuda.Device().synchronize()
    gpu_name = cuda.available()[1]
    _emit({"instruction": ins.name, "theory": th.id, "gpu": gpu_name, "lib": args.lib,
           "tiles": T, "dot_products": dots, "repeat": args.repeat}, out)

    t_np, d_np = _time(lambda: simulate(ins, A, B, C, device="cuda", **kw), sync, args.repeat)
    _emit({"path": "numpy", "seconds": round(t_np, 6), "dots_per_s": dots / t_np}, out)

    Ad, Bd, Cd = dev(A), dev(B), dev(C)
    kwd = {k: dev(v) for k, v in kw.items()}
    sync()
    t_dev, d_dev = _time(lambda: simulate(ins, Ad, Bd, Cd, **kwd), sync, args.repeat)
    _emit({"path": "device", "seconds": round(t_dev, 6), "dots_per_s": dots / t_dev,
           "result_type": f"{type(d_dev).__module__}.{type(d_dev).__name__}"}, out)

    mod = cuda.dot_module(th, ins)
    A3 = cp.asarray(A)
    B3 = cp.ascontiguousarray(cp.swapaxes(cp.asarray(B), -1, -2))
    C2 = cp.asarray(C).reshape(T, M * N)
    S = (cp.asarray(kw["scale_a"]), cp.ascontiguousarray(cp.swapaxes(cp.asarray(kw["scale_b"]), -1, -2))) \
        if ins.scale else (None, None)
    D2 = cp.empty((T, M * N), dtype=storage_dtype(ins.d))
    t_k, _ = _time(lambda: mod.sim_device(A3, B3, C2, *S, out=D2), sync, args.repeat)
    _emit({"path": "kernel", "seconds": round(t_k, 6), "dots_per_s": dots / t_k}, out)

    same = bool(np.array_equal(host(d_dev), d_np))
    _emit({"ratio_device_over_numpy": round(t_np / t_dev, 2),
           "ratio_device_over_kernel": round(t_k / t_dev, 3), "bits_equal": same}, out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
