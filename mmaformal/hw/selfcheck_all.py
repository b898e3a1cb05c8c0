"""Batch validation of the harness on a real GPU: ``mmaformal hw selfcheck``.

(layer 5 front end, ``hw``; the verb's options are defined here, `add_parser`, and
mmaformal.hw.cli registers it; no usable GPU: one line, exit 2). One command that a device
session runs: compiles every runnable kernel of the GPU's architecture (sm_75 .. sm_120a, the
target its compute capability names), runs the exact small-integer layout self-check of each,
runs the one-hot layout probe (all mma forms and the small-N wgmma / tcgen05 forms, and every
form that fails), dumps the SASS MMA mnemonics, times 10^7 dot products through ``run()`` for a
few instructions, and writes
into ``--out`` (default ``$OUT`` or .): selfcheck.json, selfcheck.txt (the table), sass.txt
(mnemonics per instruction), sass_full.txt (cuobjdump -sass of every kernel), probes.npz (probe
classes of failing forms, if any).

May import: numpy, the other hw modules (cupy lazily through them). Invariant: raw bits only.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from . import check, runner, sass
from .forms import FORMAT_BITS, instructions, spec
from .layouts import WGMMA_LBO, WGMMA_SBO


def _sh(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:  # tool missing
        return f"({type(e).__name__})"


def _summary(mn: list[str]) -> str:
    return ", ".join(f"{k} x{v}" for k, v in Counter(mn).items()) or "(none)"


def _speed(name: str, dots: int, seed: int = 1) -> dict:
    s = spec(name)
    T = -(-dots // (s.m * s.n))
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()

    def bits(role, shape):
        dt = s.storage(role)
        return rng.integers(0, np.iinfo(dt).max, size=shape, dtype=dt, endpoint=True)

    a = bits("a", (T, s.m, s.k))
    if s.sparse:
        raise ValueError(f"{name}: timing runs dense forms only")
    b = bits("b", (T, s.k, s.n))
    c = bits("c", (T, s.m, s.n))
    t1 = time.perf_counter()
    runner.run(name, a[:1], b[:1], c[:1])  # warm (compile/load)
    t2 = time.perf_counter()
    d = runner.run(name, a, b, c)
    t3 = time.perf_counter()
    assert d.shape == (T, s.m, s.n)
    return {"name": name, "tiles": T, "dots": T * s.m * s.n, "gen_s": round(t1 - t0, 3),
            "run_s": round(t3 - t2, 3), "dots_per_s": float(T * s.m * s.n / (t3 - t2))}


def _ns(text: str) -> tuple[int, ...]:
    try:
        ns = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated N values, got {text!r}") from None
    if not ns or any(not (8 <= n <= 256 and n % 8 == 0) for n in ns):
        raise argparse.ArgumentTypeError(f"wgmma / tcgen05 N values are 8..256 in steps of 8, "
                                         f"got {text!r}")
    return ns


def add_parser(subparsers) -> argparse.ArgumentParser:
    """`mmaformal hw selfcheck` (subparsers: the hw sub-verbs)."""
    from ..args import positive_int, regex  # noqa: PLC0415
    ap = subparsers.add_parser("selfcheck", help="compile, self-check, probe, disassemble and "
                               "time every harness kernel on the GPU",
                               description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."), metavar="DIR",
                    help="where the results go (default: $OUT, else .)")
    ap.add_argument("--n", type=_ns, default=(8, 24, 128, 256), metavar="N,N,..",
                    help="wgmma / tcgen05 N values (default 8,24,128,256; tcgen05 takes the "
                    "multiples of 16)")
    ap.add_argument("--probe-max-n", type=int, default=24,
                    help="probe passing wgmma forms up to this N (failing ones always)")
    ap.add_argument("--speed-dots", type=positive_int, default=10_000_000)
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--match", default="", type=regex, help="only instructions matching this regex")
    return ap


#: the forms timed on an sm90 device (elsewhere: the first runnable form of each family)
SPEED_SM90 = ("sm90/mma.m16n8k16.f32.f16.f16.f32", "sm90/mma.m8n8k4.f64.f64.f64.f64",
              "sm90/mma.m16n8k32.f32.e4m3.e4m3.f32", "sm90/wgmma.m64n256k16.f32.f16.f16",
              "sm90/wgmma.m64n8k32.f32.e4m3.e4m3")


def _environment(arch: str) -> dict:
    res: dict = {"date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    ok, why = runner.available()
    res["available"] = [ok, why]
    print("available:", ok, why, flush=True)
    res["arch"] = arch
    res["nvidia_smi"] = _sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                             "--format=csv,noheader"])
    nv = runner.nvcc_path()
    res["nvcc"] = runner.nvcc_version(nv) if nv else None
    res["cuobjdump"] = sass.cuobjdump_path()
    if ok:
        res["device"] = runner.device_info()
    print(json.dumps({k: v for k, v in res.items()}, indent=1), flush=True)
    return res


def _compile_all(names: list[str], arch: str, res: dict) -> dict[str, str]:
    """Step 1: every kernel (parallel nvcc); {name: error}."""
    t0 = time.perf_counter()
    compile_err: dict[str, str] = {}

    def comp(n):
        try:
            runner.compile_cubin(n, arch=arch)
        except Exception as e:
            compile_err[n] = str(e)[-800:]

    with ThreadPoolExecutor(max(2, min(16, os.cpu_count() or 2))) as ex:
        list(ex.map(comp, names))
    res["compile_s"] = round(time.perf_counter() - t0, 1)
    print(f"compiled {len(names)} kernels in {res['compile_s']} s, {len(compile_err)} errors",
          flush=True)
    return compile_err


def _selfcheck_row(n: str, row: dict) -> bool:
    """The exact self-check of one form (wgmma / tcgen05 failing: again with LBO and SBO
    swapped); its verdict."""
    t1 = time.perf_counter()
    try:
        good, msg = check.layout_selfcheck(n)
    except Exception as e:
        good, msg = False, f"{type(e).__name__}: {e}"
        row["traceback"] = traceback.format_exc()[-1500:]
    row["selfcheck"] = good
    row["selfcheck_msg"] = msg
    row["selfcheck_s"] = round(time.perf_counter() - t1, 3)
    s = spec(n)
    if not good and s.family in ("wgmma", "tcgen05") and not s.sparse:
        try:
            g2, m2 = check.layout_selfcheck(n, desc=(WGMMA_SBO, WGMMA_LBO))
        except Exception as e:
            g2, m2 = False, f"{type(e).__name__}: {e}"
        row["selfcheck_swapped_desc"] = [g2, m2]
    return good


def _probe_row(n: str, row: dict, good: bool, max_n: int, probes: dict) -> None:
    s = spec(n)
    probe_ok = not s.sparse and FORMAT_BITS[s.btype] >= 8  # distinct k codes
    if not probe_ok or not (not good or s.family == "mma" or s.n <= max_n):
        return
    try:
        p = check.layout_probe(n)
        row["probe"] = p["consistent"]
        row["probe_msg"] = p["message"]
        if not p["consistent"] or not good:
            for k, v in p.items():
                if isinstance(v, np.ndarray):
                    probes[f"{n}|{k}"] = v
    except Exception as e:
        row["probe"] = None
        row["probe_msg"] = f"probe error {type(e).__name__}: {e}"[:600]
        row["probe_traceback"] = traceback.format_exc()[-1500:]


def _print_row(n: str, row: dict, failed_compile: bool) -> None:
    print(f"{n:42s} compile={'ERR' if failed_compile else 'ok':3s} "
          f"check={row.get('selfcheck')} probe={row.get('probe')} "
          f"sass={_summary(row.get('sass', []))}", flush=True)
    if row.get("selfcheck") is False:
        print("   ", row["selfcheck_msg"], flush=True)
        if "selfcheck_swapped_desc" in row:
            print("    swapped desc:", row["selfcheck_swapped_desc"], flush=True)
    if row.get("probe") is not True and "probe_msg" in row:
        print("   ", row["probe_msg"], flush=True)


def _rows(names, ok, compile_err, args, probes, sass_lines, sass_full) -> list[dict]:
    """Steps 2-4 per form: SASS, self-check, one-hot probe."""
    rows = []
    for n in names:
        row = {"name": n, "ptx": spec(n).ptx}
        if n in compile_err:
            row["compile_error"] = compile_err[n]
        try:
            text, mn = sass.sass(n)
            row["sass"] = mn
            sass_lines.append(f"{n}\t{_summary(mn)}")
            sass_full.append(f"===== {n}\n{text}")
        except Exception as e:
            row["sass_error"] = f"{type(e).__name__}: {e}"[:400]
            sass_lines.append(f"{n}\t(error: {row['sass_error']})")
        if ok and n not in compile_err:
            good = _selfcheck_row(n, row)
            _probe_row(n, row, good, args.probe_max_n, probes)
        rows.append(row)
        _print_row(n, row, n in compile_err)
    return rows


def _speeds(arch: str, names: list[str], dots: int) -> list[dict]:
    if arch == "sm90":
        todo = list(SPEED_SM90)
    else:
        todo = list({spec(n).family: n for n in reversed(names) if not spec(n).sparse}.values())
    out = []
    for n in todo:
        try:
            sp = _speed(n, dots)
        except Exception as e:
            sp = {"name": n, "error": f"{type(e).__name__}: {e}"[:400]}
        out.append(sp)
        print("speed", json.dumps(sp), flush=True)
    return out


def _write(out: Path, res: dict, rows, probes, sass_lines, sass_full) -> None:
    (out / "selfcheck.json").write_text(json.dumps(res, indent=1, default=str))
    (out / "sass.txt").write_text("\n".join(sass_lines) + "\n")
    (out / "sass_full.txt").write_text("\n".join(sass_full))
    if probes:
        np.savez_compressed(out / "probes.npz", **probes)
    table = ["| instruction | self-check | one-hot probe | SASS MMA mnemonics |",
             "|---|---|---|---|"]
    for r in rows:
        sc = {True: "pass", False: "FAIL", None: "-"}[r.get("selfcheck")]
        pr = {True: "agrees", False: "DISAGREES", None: "-"}[r.get("probe")]
        table.append(f"| `{r['name']}` | {sc} | {pr} | {_summary(r.get('sass', []))} |")
    (out / "selfcheck.txt").write_text("\n".join(table) + "\n")
    print("\n".join(table))


def run(args) -> int:
    """The batch self-check of the GPU's architecture; the GPU is required (one line, exit 2
    without it)."""
    runner.need_gpu()
    arch = runner.device_arch()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = instructions(args.n, arch)
    if args.match:
        import re  # noqa: PLC0415
        names = [n for n in names if re.search(args.match, n)]
    res = _environment(arch)
    compile_err = _compile_all(names, arch, res)
    probes: dict[str, np.ndarray] = {}
    sass_lines: list[str] = []
    sass_full: list[str] = []
    rows = _rows(names, res["available"][0], compile_err, args, probes, sass_lines, sass_full)
    res["rows"] = rows
    if res["available"][0] and not args.no_speed:
        res["speed"] = _speeds(arch, names, args.speed_dots)
    _write(out, res, rows, probes, sass_lines, sass_full)
    n_fail = sum(1 for r in rows if r.get("selfcheck") is False)
    print(f"\n{len(rows)} instructions, {n_fail} self-check failures", flush=True)
    return 0
