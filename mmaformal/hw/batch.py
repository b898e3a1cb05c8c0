"""The device batch: compile, probe, self-check and run campaigns in one device session (layer 5
front end, ``hw``): ``mmaformal hw wgmma-sp`` (the sub-verb keeps the name it had for the sparse
wgmma batch of 2026-11-25; with ``--names`` it runs any forms).

One command that a device session runs, then hands back a folder: (1) compile every kernel of
the batch (sparse wgmma with sp-sel 0, the probe forms also with sp-sel 1); (2) for the sparse
wgmma forms, probe the metadata map of each A format on the silicon and self-check with it
(:mod:`mmaformal.hw.check`), keeping per format the declared map when the probe agrees, else
the probed one when it passes; (3) run the campaigns (:func:`mmaformal.hw.validate.campaign`,
the one campaign path), most important first, in worker processes until ``--budget``. With
``--names FILE`` the batch is those forms instead (any runnable forms of the GPU's
architecture); ``--replay REC...`` decides digest records on the CPU instead (no GPU);
``--compile-only`` needs nvcc only.

May import: numpy, the other hw modules (cupy lazily through the runner), mmaformal.theory
inside the replay. Invariant: nothing is written before the GPU (or nvcc, --compile-only) is
found; a broken form is recorded as an error and never hides the others.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import time
from pathlib import Path

import numpy as np

from . import sparse
from .forms import instructions, spec

__all__ = ["PROBE_FORMS", "priority", "add_parser", "run"]

#: the A formats whose metadata layout is probed once (a map per A format)
PROBE_FORMS = ("sm90/wgmma.sp.m64n8k32.f32.f16.f16", "sm90/wgmma.sp.m64n8k32.f32.bf16.bf16",
               "sm90/wgmma.sp.m64n8k16.f32.tf32.tf32", "sm90/wgmma.sp.m64n8k64.f32.e4m3.e4m3",
               "sm90/wgmma.sp.m64n8k64.f32.e5m2.e5m2", "sm90/wgmma.sp.m64n8k64.s32.s8.s8",
               "sm90/wgmma.sp.m64n8k64.s32.u8.u8")


def priority(all_names: list[str], dense: list[str]) -> list[tuple[str, str]]:
    """Tasks, most important first: per type combination N = 8 and N = 256, the dense forms
    (largest N first), then every other sparse form (largest N first: fewest tiles)."""
    first = [n for n in all_names if spec(n).n in (8, 256)]
    rest = sorted((n for n in all_names if n not in first), key=lambda n: -spec(n).n)
    return [("sp", n) for n in first] + [("dense", n) for n in dense] + [("sp", n) for n in rest]


def _worker(args):
    kind, name, tests, seed, out, layouts, deadline = args
    os.environ["MMAFORMAL_THREADS"] = "1"
    if time.time() > deadline:
        return {"instruction": name, "skipped": "deadline"}
    t0 = time.time()
    try:
        from . import validate
        if kind == "dense":
            blk = (validate.SAMPLE_ROWS, validate.SAMPLE_COLS) if "/wgmma" in name else None
            r = validate.campaign(name, tests, seed=seed, out_dir=Path(out), fast_c=True,
                                  workers=1, sample_block=blk)
        else:
            lay, src = layouts[spec(name).atype]
            r = validate.campaign(name, tests, seed=seed, out_dir=Path(out), workers=1,
                                  layout=np.asarray(lay), layout_source=src)
        return {"instruction": name, "tests": r["tests"], "mismatches": r["mismatches"],
                "theory": r["theory"], "seconds": round(time.time() - t0, 1),
                "rivals": {k: [v["mismatches"], v["tests"]] for k, v in r.get("rivals", {}).items()}}
    except Exception as e:  # noqa: BLE001  (one broken form must not hide the others)
        return {"instruction": name, "error": f"{type(e).__name__}: {str(e)[:400]}"}


def add_parser(subparsers):
    """`mmaformal hw wgmma-sp` (subparsers: the hw sub-verbs)."""
    from ..args import positive_int, regex, seconds
    p = subparsers.add_parser(
        "wgmma-sp", help="the device batch: compile, metadata probes, "
        "self-checks and campaigns (the sparse wgmma forms, or --names FILE); --replay decides "
        "records on the CPU",
        description="Device batch: compile every kernel, probe the metadata layout of each "
        "sparse wgmma A format, self-check, then run the campaigns (most important first, in "
        "worker processes, until --budget). --replay REC... replays digest records on the CPU "
        "instead (no GPU); --compile-only needs nvcc only.")
    p.add_argument("--out", type=Path, required=True, metavar="DIR")
    p.add_argument("--tests", type=positive_int, default=10_000_000, metavar="N")
    p.add_argument("--seed", type=int, default=16)
    p.add_argument("--workers", type=positive_int, default=15, metavar="W")
    p.add_argument("--budget", type=seconds, default=480.0, metavar="S", help="seconds after "
                   "which no new campaign starts")
    p.add_argument("--match", default="", type=regex, help="only forms matching this regex")
    p.add_argument("--tar", type=Path, metavar="FILE.tgz")
    p.add_argument("--names", type=Path, metavar="FILE", help="a file of forms (one per line) to "
                   "run instead of the sparse wgmma forms and the integer N = 240/256 ones")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--replay", nargs="*", type=Path, metavar="REC", help="records to replay by "
                   "digest on the CPU (primary theory; record files, or campaigns: a folder or "
                   "pack of counterexamples/hw); the verdicts go to --out/digest-replay.json")
    return p


def _replay(a) -> int:
    from .. import theory as _theory
    from .campaigns import records_at
    from .validate import replay_digest
    verdicts = {}
    try:
        recs = [r.data for path in a.replay for r in records_at(path)]
    except ValueError as e:
        raise ValueError(f"hw wgmma-sp --replay: {e}") from None
    for rec in recs:
        th = _theory.resolve(rec["instruction"])
        v = replay_digest(rec)
        verdicts[rec["instruction"]] = {"theory": th.id, "theory_hash": th.hash(),
                                        "classes_equal": v, "all_equal": all(v.values())}
        print(rec["instruction"], all(v.values()), flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "digest-replay.json").write_text(json.dumps({"verdicts": verdicts}, indent=1))
    return 0


def _forms(a) -> tuple[list[str], list[str]]:
    """(sparse wgmma forms, dense forms) of the batch."""
    if a.names:
        try:
            listed = [n.strip() for n in a.names.read_text().splitlines() if n.strip()]
        except OSError as e:
            raise ValueError(f"hw wgmma-sp --names {a.names}: cannot read it "
                             f"({e.strerror or e})") from None
        return [], sorted((spec(n).name for n in listed), key=lambda n: -spec(n).n)
    sp = [n for n in instructions(None, "sm90", family="wgmma")
          if spec(n).sparse and re.search(a.match, n)]
    dense = [n for n in instructions((240, 256), "sm90", family="wgmma")    # integer N = 240/256
             if spec(n).integer and not spec(n).sparse and re.search(a.match, n)]
    return sp, dense


def _compile(sp_names: list[str], dense: list[str], info: dict, t_start: float) -> dict:
    """Step 1: every kernel (sp-sel 0; the probe forms also sp-sel 1); {name: error}."""
    from concurrent.futures import ThreadPoolExecutor
    from . import runner

    def comp(x):
        try:
            runner.compile_cubin(x[0], sel=x[1])
            return {}
        except Exception as e:  # noqa: BLE001
            return {x[0]: str(e)[-600:]}

    todo = [(n, 0) for n in sp_names] + ([(n, 1) for n in PROBE_FORMS[:3]] if sp_names else [])
    todo += [(n, 0) for n in dense]
    with ThreadPoolExecutor(16) as ex:
        cerr = {k: v for e in ex.map(comp, todo) for k, v in e.items()}
    info |= {"compiled": len(todo), "compile_errors": cerr,
             "compile_s": round(time.time() - t_start, 1)}
    print(f"compiled {len(todo)} kernels in {info['compile_s']} s, {len(cerr)} errors", flush=True)
    for k, v in list(cerr.items())[:5]:
        print("  ", k, v[-300:], flush=True)
    return cerr


def _probe_one(n: str, layouts: dict, probes: dict) -> None:
    from .check import layout_selfcheck, meta_probe
    s = spec(n)
    for sel in ((0, 1) if s.atype in ("f16", "bf16", "tf32") else (0,)):
        key = f"{n}|{sel}"
        try:
            pr = meta_probe(n, sel)
            ok_d, m_d = layout_selfcheck(n, sel=sel)
            ok_u, m_u = layout_selfcheck(n, sel=sel, uniform=True)
            probes[key] = {"message": pr["message"], "consistent": pr["consistent"],
                           "agrees": pr["agrees"], "selfcheck": [ok_d, m_d],
                           "selfcheck_uniform": [ok_u, m_u], "layout": pr["layout"].tolist()}
            print(pr["message"], "|", m_d, "|", m_u, flush=True)
            if sel != 0:
                continue
            if ok_d and pr["agrees"]:
                layouts[s.atype] = (sparse.DECLARED[s.atype].tolist(), "declared (probe agrees)")
            elif pr["consistent"]:
                ok_p, m_p = layout_selfcheck(n, layout=pr["layout"])
                probes[key]["selfcheck_probed"] = [ok_p, m_p]
                print("  probed layout:", m_p, flush=True)
                if ok_p:
                    layouts[s.atype] = (pr["layout"].tolist(), "recovered by the probe")
        except Exception as e:  # noqa: BLE001
            probes[key] = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
            print(n, sel, "probe error", probes[key]["error"], flush=True)


def _campaigns(a, tasks, layouts, deadline) -> list[dict]:
    """Step 3: the campaigns in worker processes (one CPU thread each)."""
    import multiprocessing as mp
    results = []
    camp = a.out / "campaign"
    with mp.get_context("spawn").Pool(a.workers) as pool:
        args = [(k, n, a.tests, a.seed, str(camp), layouts, deadline) for k, n in tasks]
        for r in pool.imap_unordered(_worker, args):
            results.append(r)
            print(json.dumps(r), flush=True)
    camp.mkdir(parents=True, exist_ok=True)   # not summary.json: hw replay's folder marker
    (camp / "batch-summary.json").write_text(json.dumps([r for r in results if "tests" in r],
                                                        indent=1))
    return results


def run(a) -> int:
    """`mmaformal hw wgmma-sp` (`add_parser`'s options): the device batch (GPU required, one line
    and exit 2 without it) or --replay (CPU)."""
    from . import runner
    t_start = time.time()
    if a.replay:
        return _replay(a)
    sp_names, dense = _forms(a)
    if a.compile_only:
        if runner.nvcc_path() is None:
            raise ValueError("hw wgmma-sp --compile-only: nvcc not found (set MMAFORMAL_NVCC or "
                             "CUDA_HOME)")
    else:
        runner.need_gpu(sp_names + dense)
    a.out.mkdir(parents=True, exist_ok=True)
    info = {"date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    cerr = _compile(sp_names, dense, info, t_start)
    summary = a.out / "wgmma-sp-batch.json"
    if a.compile_only or not runner.available()[0]:
        summary.write_text(json.dumps(info, indent=1))
        return 0
    info["device"] = runner.device_info()
    layouts, probes = {}, {}
    for n in (PROBE_FORMS if sp_names else ()):     # step 2: one map per A format
        _probe_one(n, layouts, probes)
    info["probes"] = probes
    info["layouts"] = {k: v[1] for k, v in layouts.items()}
    summary.write_text(json.dumps(info, indent=1))
    tasks = [(k, n) for k, n in priority(sp_names, dense)
             if k == "dense" or (spec(n).atype in layouts and n not in cerr)]
    results = _campaigns(a, tasks, layouts, t_start + a.budget)
    info["results"] = results
    info["wall_s"] = round(time.time() - t_start, 1)
    summary.write_text(json.dumps(info, indent=1))
    if a.tar:
        import tarfile
        with tarfile.open(a.tar, "w:gz") as tf:
            tf.add(a.out, arcname=a.out.name)
    done = [r for r in results if "tests" in r]
    print(f"{len(done)} campaigns, {sum(r['mismatches'] for r in done)} mismatches, "
          f"{sum('error' in r for r in results)} errors, "
          f"{sum('skipped' in r for r in results)} skipped; {info['wall_s']} s", flush=True)
    return 0
