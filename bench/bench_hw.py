"""Benchmark of a hardware validation campaign (issue 5): for each instruction, 10^7 random
dot products of all CLFP classes, generation + GPU run + simulator comparison, printing dot
products per second of the GPU run and of the simulator side by side, and the wall time.
Needs an NVIDIA Hopper GPU with CuPy (run it through the device tool).

    python3 bench/bench_hw.py [INSTR ...] [--tests 10000000]

Measured 2026-11-21 on an NVIDIA H200 (16 CPU cores): see docs/hardware.md, "Hardware validation on the H200";
every instruction's 10^7 tests took well under 2 minutes (GPU 4e7-2.5e8 dots/s, simulator on
16 threads 3e6-3.6e7 dots/s).
"""
import argparse
import time

from mmaformal.hw import validate


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("instructions", nargs="*", default=["sm90/mma.m16n8k16.f32.f16.f16.f32",
                                                        "sm90/wgmma.m64n256k32.f32.e4m3.e4m3"])
    p.add_argument("--tests", type=int, default=10_000_000)
    a = p.parse_args(argv)
    print(f"{'instruction':44s} {'tests':>11s} {'wall s':>7s} {'gpu dots/s':>13s} {'sim dots/s':>13s}")
    for name in a.instructions:
        t0 = time.perf_counter()
        r = validate.campaign(name, a.tests)
        wall = time.perf_counter() - t0
        print(f"{name:44s} {r['tests']:11,d} {wall:7.1f} {r['rates']['gpu_dots_per_s']:13,d} "
              f"{r['rates']['simulate_dots_per_s']:13,d}")


if __name__ == "__main__":
    main()
