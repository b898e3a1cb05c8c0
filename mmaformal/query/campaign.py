"""Layer 5, query/campaign: run many independent solver jobs (prove over a catalog, distinguish
pairs, infer, the IEEE case split, store re-checks) in parallel, on a local process pool
(default) or on a Ray cluster, resumably.

    jobs = [Job("symmetry/sm90/...", "mmaformal.query.campaign:prove_job", {...}, limit=300)]
    results = run(jobs, workers=16, ray=None, progress="campaign.jsonl", on_result=save)

A job is (id, "module:function", keyword arguments, limit). The function runs in a worker
process (`execute`) and returns a dict with at least "status"; keys that start with "_" are
private (they reach `on_result` in the driver, e.g. the witness runs a record writer needs) and
are not stored. Back-ends:

- local pool (pebble.ProcessPool, max_tasks=1): every job in a fresh forked process, at most
  `workers` at once (default: the CPUs this process may use, os.sched_getaffinity);
- Ray (`ray="local"`: a cluster started here with `workers` CPUs; `"auto"`: the running
  cluster; `"HOST:PORT"`: that cluster's address): one task per job (one CPU, max_retries=0,
  max_calls=1: a fresh worker process per job), at most as many in flight as the cluster has
  CPUs (or `workers` when given).

Invariants:
- A job's result depends only on the job: the same verdicts whichever back-end ran it.
- The limit is enforced from outside: past it the worker process is killed (a solver that
  ignores its own time-out included) and the job is "unknown" with the time it had. A worker that
  dies (killed, crashed, its node lost) makes its job "unknown" with reason "worker died"; the
  others go on.
- Workers write nothing: only the driver writes records (`on_result`) and the progress store,
  so Ray workers on other nodes need no shared file system.
- Ctrl-C (SIGINT) or SIGTERM: the workers are stopped, `Interrupted` is raised.
- Progress store (JSON lines, one per finished job, flushed and fsync'd before it is counted):
  a campaign started again with the same store skips every job with a stored result, except
  those whose worker died (and every "unknown" with `retry_unknown`): Ctrl-C, a worker crash or
  a lost node loses no finished verdict. A torn last line (power loss mid-write) is ignored.

May import: the standard library, pebble, tqdm, ray (lazily; the optional extra
`mmaformal[cluster]`), mmaformal._cache, mmaformal.args, mmaformal.query.solvers and .frame. The verbs that
run campaigns (prove --all, distinguish --all-pairs, ...) import this module and name their
own job functions ("module:function", imported by the worker), so nothing here imports a verb.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import multiprocessing as mp
import os
import socket
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

from .. import args as _args
from .frame import BadInput

__all__ = ["Job", "run", "execute", "Progress", "default_workers", "add_options",
           "options_of", "default_limit", "store_path", "solve_job", "check_job", "DIED", "KILLED",
           "Interrupted"]

DIED = "worker died"
KILLED = "killed at the limit"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a campaign: every finished job is in the progress store."""

    def __init__(self, done: int, total: int, store: str | None):
        super().__init__(f"interrupted: {done} of {total} jobs finished"
                         + (f" (stored in {store}; the same command resumes)" if store else ""))


@dataclasses.dataclass(frozen=True)
class Job:
    id: str
    fn: str                      # "package.module:function"
    kwargs: dict = dataclasses.field(default_factory=dict)
    limit: float | None = None   # seconds, enforced from outside (the worker is killed)


def default_workers() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def execute(job: Job) -> dict:
    """Run one job in this (worker) process: import its function, call it, time it."""
    mod, _, name = job.fn.partition(":")
    fn = getattr(importlib.import_module(mod), name)
    t0 = time.perf_counter()
    try:
        r = fn(**job.kwargs)
    except BadInput as e:
        r = {"status": "error", "reason": str(e).splitlines()[0] if str(e) else type(e).__name__}
    r = dict(r)
    r.setdefault("seconds", round(time.perf_counter() - t0, 3))
    r["job_seconds"] = round(time.perf_counter() - t0, 3)
    r["pid"] = os.getpid()
    r["host"] = socket.gethostname()
    return r


def _json_safe(r: dict) -> dict:
    return json.loads(json.dumps({k: v for k, v in r.items() if not k.startswith("_")},
                                 default=str))


class Progress:
    """The progress store of one campaign: JSON lines {"job": ID, "status": .., ...}."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path else None
        self.results: dict[str, dict] = {}
        self._f = None
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                for line in self.path.read_text().splitlines():
                    try:
                        r = json.loads(line)
                    except json.JSONDecodeError:
                        continue          # a torn last line: that job runs again
                    if isinstance(r, dict) and "job" in r:
                        self.results[r["job"]] = r
            self._f = open(self.path, "a")
            if self.path.stat().st_size and not self.path.read_bytes().endswith(b"\n"):
                self._f.write("\n")      # end the torn line: the next one stands alone
        except OSError as e:
            raise BadInput(f"cannot write the progress store {self.path}: "
                           f"{e.strerror or e}") from None

    def finished(self, job_id: str, retry_unknown: bool = False) -> bool:
        r = self.results.get(job_id)
        if r is None:
            return False
        if r.get("status") == "unknown" and (retry_unknown or r.get("reason", "").startswith(DIED)):
            return False
        return True

    def append(self, r: dict) -> None:
        self.results[r["job"]] = r
        if self._f is not None:
            self._f.write(json.dumps(r, sort_keys=True) + "\n")
            self._f.flush()
            os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def _unknown(job: Job, reason: str, seconds: float) -> dict:
    return {"status": "unknown", "reason": reason, "seconds": round(seconds, 3),
            "job_seconds": round(seconds, 3), "solver": job.kwargs.get("solver", "")}


def _error(e: BaseException) -> dict:
    msg = str(e).strip().splitlines()
    return {"status": "error", "exception": type(e).__name__,
            "reason": (msg[-1] if msg else type(e).__name__)[:500]}


# ---- back-ends -------------------------------------------------------------------------------

class _Stop:
    """SIGINT/SIGTERM during a campaign set a flag that the driver loops poll (a signal that
    raised inside a lock wait could leave the pool's threads in a broken state)."""
    flag = False


def _check_stop() -> None:
    if _Stop.flag:
        raise KeyboardInterrupt


def _pool(todo: Sequence[Job], workers: int, done: Callable[[Job, dict], None]) -> None:
    from concurrent.futures import FIRST_COMPLETED
    from concurrent.futures import TimeoutError as FutureTimeout
    from concurrent.futures import wait

    from pebble import ProcessExpired, ProcessPool
    pool = ProcessPool(max_workers=workers, max_tasks=1, context=mp.get_context("fork"))
    try:
        futs = {pool.schedule(execute, args=(job,), timeout=job.limit): job for job in todo}
        pending = set(futs)
        while pending:
            _check_stop()
            finished, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            for f in finished:
                job = futs[f]
                try:
                    r = f.result()
                except FutureTimeout:
                    r = _unknown(job, f"{KILLED} ({job.limit:g} s)", job.limit or 0.0)
                except ProcessExpired as e:
                    r = _unknown(job, f"{DIED} (exit code {e.exitcode})", 0.0)
                except Exception as e:  # the job function raised: its result is an error
                    r = _error(e)
                done(job, r)
    except BaseException:
        pool.stop()
        pool.join(timeout=10)
        raise
    pool.close()
    pool.join()


def connect_ray(address: str, workers: int | None):
    """Connect to (or start) a Ray cluster; BadInput with one line when it cannot be reached."""
    try:
        import ray
    except ImportError:
        raise BadInput("--ray needs Ray: pip install 'mmaformal[cluster]'") from None
    if ray.is_initialized():
        return ray
    kw = dict(logging_level="ERROR", log_to_driver=False, include_dashboard=False)
    if address == "local":
        ray.init(num_cpus=workers or default_workers(), **kw)
        return ray
    if address != "auto":
        host, _, port = address.rpartition(":")
        if address.startswith("ray://"):
            host, _, port = address[6:].rpartition(":")
        try:
            socket.create_connection((host or address, int(port or 6379)), timeout=5).close()
        except (OSError, ValueError) as e:
            raise BadInput(f"cannot reach the Ray cluster at {address}: "
                           f"{getattr(e, 'strerror', None) or e}") from None
    try:
        ray.init(address=address, **kw)
    except Exception as e:
        raise BadInput(f"cannot connect to the Ray cluster at {address}: "
                       f"{str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}") from None
    return ray


def _ray(todo: Sequence[Job], workers: int | None, address: str,
         done: Callable[[Job, dict], None]) -> None:
    ray = connect_ray(address, workers)
    from ray import exceptions as rex
    slots = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    task = ray.remote(num_cpus=1, max_retries=0, max_calls=1)(execute)   # a process per job
    queue = list(todo)
    pending: dict = {}
    try:
        while queue or pending:
            while queue and len(pending) < slots:
                job = queue.pop(0)
                pending[task.remote(job)] = (job, time.monotonic())
            _check_stop()
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.2)
            for ref in ready:
                job, t0 = pending.pop(ref)
                try:
                    r = ray.get(ref)
                except (rex.WorkerCrashedError, rex.NodeDiedError, rex.OwnerDiedError,
                        rex.ObjectLostError, rex.TaskCancelledError) as e:
                    r = _unknown(job, f"{DIED} ({type(e).__name__})", time.monotonic() - t0)
                except rex.RayTaskError as e:
                    r = _error(e.cause if getattr(e, "cause", None) else e)
                except rex.RayError as e:
                    r = _unknown(job, f"{DIED} ({type(e).__name__})", time.monotonic() - t0)
                done(job, r)
            now = time.monotonic()
            for ref, (job, t0) in list(pending.items()):
                if job.limit is not None and now - t0 > job.limit:
                    ray.cancel(ref, force=True)   # kills the worker process
                    pending.pop(ref)
                    done(job, _unknown(job, f"{KILLED} ({job.limit:g} s)", now - t0))
    except BaseException:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:
                pass
        raise


# ---- the driver --------------------------------------------------------------------------

def run(jobs: Iterable[Job], workers: int | None = None, ray: str | None = None,
        progress: str | os.PathLike | None = None, as_json: bool = False,
        on_result: Callable[[Job, dict], dict | None] | None = None,
        retry_unknown: bool = False, bar: bool | None = None, out=None,
        banner: str | None = None) -> list[dict]:
    """Run the jobs; returns one result per job (in job order), stored ones included.

    on_result(job, result) runs in the driver for each newly finished job (before it is
    stored) and may return fields to add to the stored result (e.g. the record paths).
    bar: a tqdm progress bar on stderr (None: only when stderr is a terminal). as_json: one
    JSON line per finished job on `out` (stdout). A campaign that finds jobs already done in
    its progress store says so on stderr ("resumed: N of M jobs already done, K to run"),
    unless as_json."""
    jobs = list(jobs)
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise BadInput(f"--jobs must be a positive integer, got {workers!r}")
    ids = [j.id for j in jobs]
    if len(set(ids)) != len(ids):
        raise BadInput("campaign: job ids are not unique")
    store = Progress(progress)
    out = out or sys.stdout
    todo = [j for j in jobs if not store.finished(j.id, retry_unknown)]
    if ray and todo:
        connect_ray(ray, workers)      # bad addresses fail here, before anything is printed
    if banner:
        print(banner, file=sys.stderr, flush=True)
    if len(todo) < len(jobs) and not as_json:
        print(f"resumed: {len(jobs) - len(todo)} of {len(jobs)} jobs already done, {len(todo)} "
              f"to run (progress store {store.path})", file=sys.stderr, flush=True)
    from tqdm import tqdm
    pbar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), unit="job", file=sys.stderr,
                disable=(not sys.stderr.isatty()) if bar is None else not bar,
                dynamic_ncols=True, smoothing=0.1)
    counts: dict[str, int] = {}

    def done(job: Job, r: dict) -> None:
        r = dict(r)
        r["job"] = job.id
        if on_result is not None:
            try:
                extra = on_result(job, r)
            except BadInput:
                raise
            except Exception as e:    # a record that cannot be written is that job's error
                extra = {"status": "error", "reason": f"storing the result: {_error(e)['reason']}"}
            if extra:
                r.update(extra)
        safe = _json_safe(r)
        store.append(safe)
        counts[safe["status"]] = counts.get(safe["status"], 0) + 1
        pbar.set_postfix(counts, refresh=False)
        pbar.update(1)
        if as_json:
            print(json.dumps(safe, sort_keys=True), file=out, flush=True)

    import signal
    import threading
    old_handlers = {}
    if threading.current_thread() is threading.main_thread():
        def stop(signum, frame):
            _Stop.flag = True
        for sig in (signal.SIGINT, signal.SIGTERM):
            old_handlers[sig] = signal.signal(sig, stop)
    _Stop.flag = False
    try:
        if todo:
            if ray:
                _ray(todo, workers, ray, done)
            else:
                _pool(todo, workers or default_workers(), done)
    except KeyboardInterrupt:
        pbar.close()
        store.close()
        n = sum(store.finished(j.id) for j in jobs)
        raise Interrupted(n, len(jobs), str(store.path) if store.path else None) from None
    finally:
        for sig, h in old_handlers.items():
            signal.signal(sig, h)
        pbar.close()
        store.close()
    return [store.results.get(j.id, {"job": j.id, "status": "unknown", "reason": "not run"})
            for j in jobs]


# ---- CLI options shared by the campaign verbs ------------------------------------------------

def add_options(q: argparse.ArgumentParser, jobs_flag: bool = True) -> None:
    """--jobs, --ray, --progress, --limit, --retry-unknown (the runner's options)."""
    if jobs_flag:
        q.add_argument("-j", "--jobs", type=_args.positive_int, default=None, metavar="N",
                       help="parallel worker processes (default: the CPUs available; with "
                            "--ray: the cluster's CPUs)")
    q.add_argument("--ray", metavar="auto|local|ADDRESS",
                   help="run the jobs on a Ray cluster: auto (the running one), local (start "
                        "one here with --jobs CPUs), or HOST:PORT (needs mmaformal[cluster])")
    q.add_argument("--progress", metavar="FILE.jsonl", type=_args.out_file,
                   help="progress store (JSON lines; its folder must exist): a campaign run "
                        "again with the same store skips the jobs it finished")
    q.add_argument("--limit", type=_args.seconds, metavar="SEC",
                   help="hard limit per job, enforced by killing its worker (default: "
                        "4 x --timeout + 60)")
    q.add_argument("--retry-unknown", action="store_true",
                   help="re-run the jobs the progress store has as unknown")


def options_of(args) -> dict:
    """run() keyword arguments from parsed add_options arguments."""
    return dict(workers=getattr(args, "jobs", None), ray=getattr(args, "ray", None),
                progress=getattr(args, "progress", None),
                retry_unknown=getattr(args, "retry_unknown", False))


def default_limit(args) -> float | None:
    if getattr(args, "limit", None) is not None:
        if args.limit <= 0:
            raise BadInput(f"--limit must be positive, got {args.limit:g}")
        return args.limit
    t = getattr(args, "timeout", None)
    return None if t is None else 4 * t + 60


# ---- generic jobs ----------------------------------------------------------------------------

def solve_job(text: str, solver: str = "bitwuzla", timeout: float | None = None,
              expect: str | None = None, engine: str | None = None, **meta) -> dict:
    """Solve one SMT-LIB2 query (a stored proof or a case of a split). `expect`: the verdict
    the record holds; `ok` says whether the answer matches it. engine: bitwuzla's bv-solver."""
    from .solvers import solve
    r = solve(text, solver, timeout, bitwuzla_engine=engine)
    d = {"status": r.status, "solver": r.solver, "solver_version": r.version,
         "seconds": round(r.seconds, 3), "reason": r.reason, **meta}
    if expect is not None:
        d["ok"] = r.status == expect
    return d


def check_job(seconds: float = 0.0, exit_code: int | None = None, status: str = "proved",
              busy: bool = False) -> dict:
    """A job that checks the runner itself (its tests, a cluster's health): waits `seconds`
    (busy: spinning, ignoring any signal but SIGKILL-class termination), then exits the worker
    process abruptly with `exit_code` (a crash), or returns `status`."""
    t0 = time.perf_counter()
    if busy:
        while time.perf_counter() - t0 < seconds:
            pass
    else:
        time.sleep(seconds)
    if exit_code is not None:
        os._exit(exit_code)
    return {"status": status, "seconds": round(time.perf_counter() - t0, 3), "pid": os.getpid()}


def store_path(kind: str, jobs: Sequence[Job]) -> Path:
    """The default progress store of a campaign: the per-user cache folder, keyed by the
    jobs (ids, functions, arguments but a shared cache folder `cache_dir`, limits), so the
    same command resumes the same campaign."""
    import hashlib

    from .._cache import cache_dir
    key = hashlib.sha256(json.dumps([[j.id, j.fn, {k: v for k, v in j.kwargs.items()
                                                   if k != "cache_dir"}, j.limit] for j in jobs],
                                    sort_keys=True, default=str).encode()).hexdigest()[:12]
    return cache_dir() / "campaigns" / f"{kind}-{key}.jsonl"

