"""Benchmark: `mmaformal simulate` vs mmasim 2.1.1 on the same random-bit dot products.

    python3 bench/bench_simulate.py [-n 2000000] [--big 10000000] [--repeat 3] [--workdir DIR]

1. Writes n random-bit-stream dot products of sm90/mma.m16n8k16.f32.f16.f16.f32 as raw-bit .npy
   tiles (A (T,16,16) uint16, B (T,16,8) uint16, C (T,16,8) uint32, T = n / 128).
2. Runs the CLI as a subprocess (`python -m mmaformal simulate ... --out D.npy`): process
   start-up, file reading and writing included. One warm-up run first (a first run on a
   machine compiles the C kernel and caches the checked tables; mmasim's C++ extension is
   likewise built once by bench/setup_mmasim.sh).
3. Runs mmasim's batch path (bench/mmasim_adapter.py `mmasim_dpa`, one core) on the same dot
   products in a subprocess of the benchmark venv (/work/benchenv/bin/python, or $MMASIM_PYTHON),
   also start-up and .npy I/O included; it reports its in-process time too.
   Steps 2 and 3 alternate --repeat times; the medians are reported. Both run one thread.
   Bytecode: an installed package has its .pyc files (pip writes them), mmasim's and torch's
   included. Where the environment sets PYTHONDONTWRITEBYTECODE (so mmaformal, run from its
   source tree, would recompile every module at each start), the CLI child gets a pycache
   folder (PYTHONPYCACHEPREFIX) filled by compileall and the warm-up run, and the mmasim
   child runs without PYTHONDONTWRITEBYTECODE; the CLI is also timed as the environment
   stands (sources compiled at each start), and both figures are printed.
4. Checks the outputs bit for bit and counts differences by cause (docs/mmasim-notes.md sec. 4:
   for f16 inputs with f32 output only the sign of an all-negative-zero sum can differ).
5. The bounded-memory run: `mmaformal simulate` on --big dot products (default 10^7), printing
   the child's peak RSS (os.wait4).

Prints dot products per second of each and the ratio. mmasim is never imported here: it lives
only in its own venv (bench/setup_mmasim.sh).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
INSTR = "sm90/mma.m16n8k16.f32.f16.f16.f32"
MMASIM_PY = os.environ.get("MMASIM_PYTHON", "/work/benchenv/bin/python")

_MMASIM_DRIVER = r"""
import json, os, sys, time
os.environ["OMP_NUM_THREADS"] = "1"; os.environ["MKL_NUM_THREADS"] = "1"
t0 = time.perf_counter()
import numpy as np, torch
torch.set_num_threads(1)
sys.path.insert(0, sys.argv[1])
from mmasim_adapter import mmasim_dpa
a = np.load(sys.argv[2]); b = np.load(sys.argv[3]); c = np.load(sys.argv[4])
t1 = time.perf_counter()
d = mmasim_dpa("sm90", "m16n8k16.f32.f16.f16.f32", a, b, c)
t2 = time.perf_counter()
np.save(sys.argv[5], d)
print(json.dumps({"import_and_load_s": t1 - t0, "dpa_s": t2 - t1, "n": int(len(c))}))
"""


def _run_rss(cmd, env=None):
    """Run a child and return (wall seconds, peak RSS MiB, stdout) using os.wait4."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as fo, tempfile.TemporaryFile("w+") as fe:
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, text=True, env=env, cwd=ROOT)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        dt = time.perf_counter() - t0
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    if p.returncode != 0:
        raise SystemExit(f"command failed ({p.returncode}): {' '.join(map(str, cmd))}\n{err}")
    return dt, ru.ru_maxrss / 1024, out


def _in_child(fn, *args):
    """Run fn(*args) in a forked child: big arrays never raise this process's peak RSS, which
    Linux would report as part of every later child's (its hiwater passes through exec)."""
    import multiprocessing
    pr = multiprocessing.get_context("fork").Process(target=fn, args=args)
    pr.start()
    pr.join()
    if pr.exitcode:
        raise SystemExit(f"preparing the inputs failed ({pr.exitcode})")


def _mmasim_layout(p: dict, q: dict) -> None:
    """The adapter's (n, K) / (n,) rows, in (tile, i, j) order, of the tiles in files p."""
    A, B, C = (np.load(p[k]) for k in "abc")
    n = C.size
    a_rows = np.broadcast_to(A[:, :, None, :], (A.shape[0], 16, 8, 16)).reshape(n, 16)
    np.save(q["a"], np.ascontiguousarray(a_rows))
    del a_rows
    b_cols = np.broadcast_to(np.swapaxes(B, 1, 2)[:, None, :, :], (B.shape[0], 16, 8, 16)).reshape(n, 16)
    np.save(q["b"], np.ascontiguousarray(b_cols))
    np.save(q["c"], C.reshape(-1))


def make_tiles(n: int, seed: int, d: Path, tag: str):
    T = -(-n // 128)
    rng = np.random.default_rng(seed)
    A = rng.integers(0, 1 << 16, (T, 16, 16), dtype=np.uint16)
    B = rng.integers(0, 1 << 16, (T, 16, 8), dtype=np.uint16)
    C = rng.integers(0, 1 << 32, (T, 16, 8), dtype=np.uint64).astype(np.uint32)
    paths = {k: d / f"{tag}_{k}.npy" for k in ("a", "b", "c", "d")}
    np.save(paths["a"], A)
    np.save(paths["b"], B)
    np.save(paths["c"], C)
    return A, B, C, paths


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def cli_cmd(paths):
    return [sys.executable, "-m", "mmaformal", "simulate", INSTR, "--a", str(paths["a"]), "--b", str(paths["b"]),
            "--c", str(paths["c"]), "--out", str(paths["d"]), "--json"]


def classify(ours: np.ndarray, theirs: np.ndarray, A, B, C) -> dict:
    diff = np.nonzero(ours != theirs)[0]
    causes = {"sign of an all-negative-zero sum (mmasim +0, semantics.md -0)": 0, "unexplained": 0}
    examples = []
    for idx in diff:
        o, t = int(ours[idx]), int(theirs[idx])
        if o == 0x80000000 and t == 0:
            causes["sign of an all-negative-zero sum (mmasim +0, semantics.md -0)"] += 1
        else:
            causes["unexplained"] += 1
            if len(examples) < 5:
                examples.append({"index": int(idx), "mmaformal": hex(o), "mmasim": hex(t)})
    return {"differences": int(len(diff)), "by_cause": causes, "examples": examples}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=2_000_000, help="dot products for the comparison")
    ap.add_argument("--big", type=int, default=10_000_000, help="dot products of the memory run (0: skip)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", help="where the .npy files go (default: a temporary directory)")
    ap.add_argument("--skip-mmasim", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs of each (medians)")
    args = ap.parse_args(argv)
    env_src = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   MMAFORMAL_THREADS="1")
    tmp = tempfile.TemporaryDirectory(dir=args.workdir)
    d = Path(tmp.name)
    print(f"instruction {INSTR}; machine: {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    env, menv = env_src, None
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):   # give the children bytecode, as pip would
        pyc = d / "pycache"
        env = dict(env_src, PYTHONPYCACHEPREFIX=str(pyc))
        env.pop("PYTHONDONTWRITEBYTECODE")
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "mmaformal")], env=env, check=True)
        menv = dict(os.environ)                     # its packages have their pip-written .pyc
        menv.pop("PYTHONDONTWRITEBYTECODE")
        print(f"PYTHONDONTWRITEBYTECODE is set here: the CLI child uses bytecode in {pyc} "
              f"(compileall, and its warm-up run for numpy); also timed without it")

    p = {k: d / f"cmp_{k}.npy" for k in ("a", "b", "c", "d")}
    _in_child(make_tiles, args.n, args.seed, d, "cmp")
    n = 128 * -(-args.n // 128)
    T = n // 128
    print(f"\n[1] {n:,} random-bit dot products ({T} tiles), files in {d}; "
          f"{args.repeat} alternating runs of each, medians")
    warm, _, _ = _run_rss(cli_cmd(p), env)
    print(f"(warm-up CLI run: {warm:.2f} s)")
    cmd = None
    if not args.skip_mmasim:
        if not Path(MMASIM_PY).exists():
            print(f"mmasim: {MMASIM_PY} not found (bash bench/setup_mmasim.sh); skipped")
        else:
            q = {k: d / f"mm_{k}.npy" for k in ("a", "b", "c", "d")}
            _in_child(_mmasim_layout, p, q)
            cmd = [MMASIM_PY, "-c", _MMASIM_DRIVER, str(ROOT / "bench"), str(q["a"]), str(q["b"]), str(q["c"]), str(q["d"])]
    ours_t, sim_t, src_t, m_t, m_dpa, m_load = [], [], [], [], [], []
    for _ in range(max(1, args.repeat)):
        wall, rss, out = _run_rss(cli_cmd(p), env)
        ours_t.append(wall)
        sim_t.append(json.loads(out)["seconds"])
        if env is not env_src:
            src_t.append(_run_rss(cli_cmd(p), env_src)[0])
        if cmd:
            mwall, mrss, mout = _run_rss(cmd, menv)
            mi = json.loads(mout.strip().splitlines()[-1])
            m_t.append(mwall)
            m_dpa.append(mi["dpa_s"])
            m_load.append(mi["import_and_load_s"])
    wall, sim = _median(ours_t), _median(sim_t)
    print(f"mmaformal simulate (CLI subprocess, start-up + I/O): {wall:8.2f} s  {n / wall:12,.0f} dot products/s"
          f"  (in-process simulate {sim:.2f} s = {n / sim:,.0f}/s; peak RSS {rss:.0f} MiB; "
          f"runs {', '.join(f'{x:.2f}' for x in ours_t)})")
    if src_t:
        print(f"  the same, sources compiled at start-up:          {_median(src_t):8.2f} s  "
              f"{n / _median(src_t):12,.0f} dot products/s  (runs {', '.join(f'{x:.2f}' for x in src_t)})")
    if cmd:
        mwall, dpa = _median(m_t), _median(m_dpa)
        print(f"mmasim 2.1.1 dpa (subprocess, start-up + I/O):      {mwall:8.2f} s  {n / mwall:12,.0f} dot products/s"
              f"  (dpa alone {dpa:.2f} s = {n / dpa:,.0f}/s; torch import + load "
              f"{_median(m_load):.2f} s; peak RSS {mrss:.0f} MiB; runs {', '.join(f'{x:.2f}' for x in m_t)})")
        print(f"ratio mmaformal / mmasim (end to end): {mwall / wall:.3f}x   "
              f"(compute only: {dpa / sim:.3f}x)")
        if src_t:
            print(f"  end to end with sources compiled at start-up: {mwall / _median(src_t):.3f}x")

    if args.big:
        pb = {k: d / f"big_{k}.npy" for k in ("a", "b", "c", "d")}
        _in_child(make_tiles, args.big, args.seed + 1, d, "big")
        nb = 128 * -(-args.big // 128)
        print(f"\n[2] bounded memory: {nb:,} dot products through the CLI")
        bwall, brss, out = _run_rss(cli_cmd(pb), env)
        print(f"mmaformal simulate: {bwall:.1f} s ({nb / bwall:,.0f} dot products/s end to end), "
              f"peak RSS {brss:.0f} MiB (limit 2048 MiB: {'ok' if brss < 2048 else 'EXCEEDED'})")
    if cmd:
        A, B, C = (np.load(p[k]) for k in "abc")
        ours = np.load(p["d"]).reshape(-1)
        rep = classify(ours, np.load(q["d"]), A, B, C)
        nan = int(np.count_nonzero(ours == 0x7FFFFFFF))
        print(f"\n[1] bit-identical: {n - rep['differences']:,} of {n:,}; differences {rep['differences']} by cause: "
              f"{json.dumps(rep['by_cause'])}; NaN outputs {nan:,} ({100 * nan / n:.1f}%)")
        for e in rep["examples"]:
            print(f"  example {e}")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
