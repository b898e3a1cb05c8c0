"""The campaign runner (mmaformal.query.campaign): local pool and a real local Ray cluster give
the same results, limits are enforced from outside, a dead worker costs only its job, an
interrupted campaign loses no finished job and resumes, bad input exits 2 with one line.

Jobs are real: stored lemma queries re-solved (their verdict is in proofs/cache), a factoring
query that no solver answers in the limit, and `campaign.check_job` (sleeps, spins, or exits
its worker abruptly)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmaformal.query import campaign as C
from mmaformal.packs import open_pack
from mmaformal.query.store import lemma_dirs, lemma_index, lemma_pack

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))

# x * y = 2147483629 * 2147483587 with x, y > 1: SAT, but no bit-blasting solver finds the
# factors in seconds
FACTOR = """(set-logic QF_BV)
(declare-fun x () (_ BitVec 32))
(declare-fun y () (_ BitVec 32))
(assert (bvugt x #x00000001))
(assert (bvugt y #x00000001))
(assert (= (bvmul ((_ zero_extend 32) x) ((_ zero_extend 32) y)) #x3fffffd800000487))
(check-sat)
"""


def _lemmas(n):
    """n stored lemma queries (small, UNSAT) with their recorded verdicts."""
    out = []
    path = lemma_pack(lemma_dirs()[0], "0")
    pk, index = open_pack(path), lemma_index(path)
    for m in pk.names():
        if m.endswith(".smt2") and index.get(m[:-5], {}).get("status") == "unsat":
            q = pk.get(m)
            if len(q) < 20000:
                out.append((m[:12], q.decode()))
        if len(out) == n:
            break
    assert len(out) == n
    return out


def _jobs():
    jobs = [C.Job(f"lemma/{h}", "mmaformal.query.campaign:solve_job",
                  {"text": t, "solver": "bitwuzla", "timeout": 60, "expect": "unsat"}, limit=120)
            for h, t in _lemmas(3)]
    jobs += [C.Job("check/ok", "mmaformal.query.campaign:check_job", {"seconds": 0.1}, limit=30),
             C.Job("check/crash", "mmaformal.query.campaign:check_job",
                   {"seconds": 0.2, "exit_code": 7}, limit=30),
             C.Job("check/spin", "mmaformal.query.campaign:check_job",
                   {"seconds": 60, "busy": True}, limit=1.5)]
    return jobs


def _verdicts(results):
    return {r["job"]: (r["status"], r.get("ok"), r.get("reason", "").split(" (")[0])
            for r in results}


def _check(results):
    v = _verdicts(results)
    for k, (st, ok, _) in v.items():
        if k.startswith("lemma/"):
            assert st == "unsat" and ok, (k, st)
    assert v["check/ok"][0] == "proved"
    assert v["check/crash"][:1] == ("unknown",) and v["check/crash"][2] == C.DIED
    assert v["check/spin"][0] == "unknown" and v["check/spin"][2] == C.KILLED
    return v


@pytest.fixture(scope="module")
def pool_results(tmp_path_factory):
    store = tmp_path_factory.mktemp("pool") / "p.jsonl"
    t0 = time.perf_counter()
    rs = C.run(_jobs(), workers=2, progress=store, bar=False)
    return rs, time.perf_counter() - t0, store


def test_pool(pool_results):
    rs, wall, store = pool_results
    _check(rs)
    spin = next(r for r in rs if r["job"] == "check/spin")
    assert 1.5 <= spin["seconds"] < 5           # killed at its limit, with the time it had
    lines = [json.loads(x) for x in store.read_text().splitlines()]
    assert sorted(r["job"] for r in lines) == sorted(j.id for j in _jobs())


# The Ray driver runs in a process of its own: ray.init leaves gRPC threads in the process that
# called it (ray.shutdown does not stop them), and the tests after this one fork (the local pool,
# the oracle's pool); a fork of a process with live gRPC threads can hang or crash the child.
RAY_DRIVER = """
import json, pickle, sys, ray
from mmaformal.query import campaign as C
ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
try:
    cpus = ray.cluster_resources().get("CPU")
    rs = C.run(pickle.load(open(sys.argv[1], "rb")), ray="auto", bar=False)
finally:
    ray.shutdown()
print(json.dumps({"cpus": cpus, "driver": __import__("os").getpid(), "results": rs}))
"""


def test_ray_cluster_same_results(pool_results, tmp_path):
    pytest.importorskip("ray")
    import pickle
    (tmp_path / "jobs.pkl").write_bytes(pickle.dumps(_jobs()))
    p = subprocess.run([sys.executable, "-c", RAY_DRIVER, str(tmp_path / "jobs.pkl")], env=ENV,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["cpus"] == 2
    rs = out["results"]
    assert _check(rs) == _check(pool_results[0])
    # the lemma jobs ran in Ray worker processes, not in the driver, each in its own
    pids = [r["pid"] for r in rs if r["job"].startswith("lemma/")]
    assert out["driver"] not in pids and len(set(pids)) == len(pids)


def test_solver_ignoring_its_timeout_is_killed():
    t0 = time.perf_counter()
    [r] = C.run([C.Job("factor", "mmaformal.query.campaign:solve_job",
                       {"text": FACTOR, "solver": "bitwuzla", "timeout": None}, limit=1.0)],
                workers=1, bar=False)
    assert r["status"] == "unknown" and r["reason"].startswith(C.KILLED)
    assert r["seconds"] == 1.0 and time.perf_counter() - t0 < 10


def test_interrupted_campaign_resumes(tmp_path):
    """Ctrl-C on the driver mid-campaign: the finished jobs are in the store; the same
    campaign run again skips them (their stored records, worker pids included, are kept)
    and runs the rest."""
    store = tmp_path / "p.jsonl"
    jobs = [C.Job(f"fast{i}", "mmaformal.query.campaign:check_job", {"seconds": 0.05})
            for i in range(3)] + \
           [C.Job(f"slow{i}", "mmaformal.query.campaign:check_job", {"seconds": 1.0})
            for i in range(4)]
    code = ("import sys, pickle; from mmaformal.query import campaign as C; "
            "C.run(pickle.load(open(sys.argv[1], 'rb')), workers=2, progress=sys.argv[2], "
            "bar=False)")
    import pickle
    (tmp_path / "jobs.pkl").write_bytes(pickle.dumps(jobs))
    p = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "jobs.pkl"), str(store)],
                         env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while time.time() - t0 < 30:
        if store.exists() and len(store.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode != 0 and "interrupted" in err
    before = {r["job"]: r for r in map(json.loads, store.read_text().splitlines())}
    assert 3 <= len(before) < len(jobs), before.keys()
    rs = C.run(jobs, workers=2, progress=store, bar=False)
    after = {r["job"]: r for r in rs}
    assert all(after[k] == v for k, v in before.items())      # not re-run
    assert all(r["status"] == "proved" for r in rs)
    assert len(store.read_text().splitlines()) == len(jobs)


def test_dead_worker_rerun_on_resume(tmp_path):
    """A job whose worker died is "unknown (worker died)"; the others finish; resuming the
    campaign runs that job again (it has no verdict) and nothing else."""
    store = tmp_path / "p.jsonl"
    jobs = [C.Job("a", "mmaformal.query.campaign:check_job", {"seconds": 0.05}),
            C.Job("b", "mmaformal.query.campaign:check_job", {"seconds": 0.05, "exit_code": 9})]
    r1 = {r["job"]: r for r in C.run(jobs, workers=2, progress=store, bar=False)}
    assert r1["a"]["status"] == "proved" and r1["b"]["reason"].startswith(C.DIED)
    jobs[1] = C.Job("b", "mmaformal.query.campaign:check_job", {"seconds": 0.05})
    r2 = {r["job"]: r for r in C.run(jobs, workers=2, progress=store, bar=False)}
    assert r2["a"] == r1["a"] and r2["b"]["status"] == "proved"


def _cli(*args):
    p = subprocess.run([sys.executable, "-m", "mmaformal.cli", *args], env=ENV,
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("args, msg", [
    (["prove", "symmetry", "--all", "sm90/nothing*"], "matches no instruction"),
    (["prove", "unobservable", "--all", "sm90/*"], "PARAM=VALUE"),
    (["prove", "unobservable", "--all", "nosuchparam=1", "sm90/mma.m16n8k16.f32.f16.f16.f32"],
     "applies to none"),
    (["distinguish", "--all-pairs", "sm70/*"], "no adjacent-architecture pair"),
    (["prove", "monotonic", "--all", "sm90/mma.m16n8k16.f32.f16.f16.f32", "--jobs", "0"],
     "positive integer"),
    (["prove", "monotonic", "--all", "sm90/mma.m16n8k16.f32.f16.f16.f32", "--redo",
      "--ray", "127.0.0.1:9"], "cannot reach"),
    (["prove", "bound", "--all", "sm90/mma.m16n8k16.f32.f16.f16.f32", "--redo",
      "--progress", "/proc/mmaformal/p.jsonl"], "cannot write"),
])
def test_bad_input(args, msg):
    rc, out, err = _cli(*args)
    assert rc == 2, (rc, out, err)
    assert msg in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_prove_all_groups_store_and_resume(tmp_path):
    """prove monotonic --all over two groups of instructions with one query each (sm80/sm89
    and sm90/sm100/sm120 m16n8k8 bf16): one job per group, one record per group naming every
    instruction it covers, replayed; run again, the stored verdicts are found and nothing is
    re-run."""
    from mmaformal.query import cex
    from mmaformal.query.prove import claim_groups
    pat = "sm*/mma.m16n8k8.f32.bf16.bf16.f32"
    sizes = sorted(len(g) for g in claim_groups("monotonic", [pat])[0])
    n = sum(sizes)
    assert len(sizes) == 2 and n > 2
    args = ["--store", str(tmp_path), "prove", "monotonic", "--all", pat, "--save", "--json",
            "-j", "2", "--timeout", "20", "--progress", str(tmp_path / "p.jsonl")]
    rc, out, err = _cli(*args, "--redo")      # also the groups the shipped records decide
    lines = [json.loads(x) for x in out.splitlines()]
    summary = lines[-1]["summary"]
    assert rc == 1, err                       # refuted, nothing unknown
    assert len(lines) == 3 and summary["groups"] == 2 and summary["refuted"] == n
    recs = sorted((tmp_path / "counterexamples" / "monotonic").glob("*.json"))
    assert len(recs) == 2
    groups = sorted(len(json.loads(p.read_text())["tool"]["group"]) for p in recs)
    assert groups == sizes
    for p in recs:
        assert cex.replay_record(json.loads(p.read_text()), backends=("int", "numpy")) == []
    rc, out, err = _cli(*args[:-2])           # a new progress store: the records decide
    summary = json.loads(out.splitlines()[-1])["summary"]
    assert rc == 1 and summary["stored_before"] == n and len(out.splitlines()) == 1


def test_distinguish_all_pairs(tmp_path):
    """distinguish --all-pairs: sm80 and sm89 share one arithmetic for this qualifier (left
    out), sm89 and sm90 differ: one job, one stored witness that replays."""
    from mmaformal.query import cex
    rc, out, err = _cli("--store", str(tmp_path), "distinguish", "--all-pairs",
                        "sm8*/mma.m16n8k16.f32.f16.f16.f32", "sm90/mma.m16n8k16.f32.f16.f16.f32",
                        "--save", "--json", "-j", "1", "--timeout", "30",
                        "--progress", str(tmp_path / "p.jsonl"))
    assert rc == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    s = lines[-1]["summary"]
    assert s["pairs"] == 1 and s["same_arithmetic"] == 1 and s["by_status"] == {"distinguished": 1}
    [p] = (tmp_path / "counterexamples" / "distinguish").glob("*.json")
    rec = json.loads(p.read_text())
    assert rec["tool"]["group"] == [["sm89/mma.m16n8k16.f32.f16.f16.f32",
                                     "sm90/mma.m16n8k16.f32.f16.f16.f32"]]
    assert cex.replay_record(rec, backends=("int", "numpy")) == []


def test_monotonic_witness_search_against_the_oracle():
    """The concrete search finds a monotonicity violation of sm90's f16 T-FDPA (F = 25,
    RZ-FP32, one block of 16); the independent exact oracle (tests/oracles) gives the same
    outputs and confirms: the larger addend gives the smaller result."""
    from oracles import exact as X

    from mmaformal.query.model import resolve
    from mmaformal.query.witness_search import monotonic_pair
    m = resolve("sm90/mma.m16n8k16.f32.f16.f16.f32")
    p = m.theory.param_dict
    assert (m.theory.op, m.k, p["F"], p["rho"]) == ("t_fdpa", 16, 25, "RZ-FP32")
    x, y, sel = monotonic_pair(m, budget=20)
    ox, oy = (X.t_fdpa(w.a, w.b, w.c, "f16", "f16", "f32", p["F"], p["rho"], p["zero_exp"])
              for w in (x, y))
    val = lambda f, v: X._val(X.decode(f, v))
    if sel < 16:       # one product, a_k * b_k, strictly larger; everything else the same
        assert val("f16", y.a[sel]) * val("f16", y.b[sel]) > val("f16", x.a[sel]) * val("f16", x.b[sel])
        assert (x.c, x.a[:sel] + x.a[sel + 1:]) == (y.c, y.a[:sel] + y.a[sel + 1:])
    else:              # c strictly larger, the products the same
        assert val("f32", y.c) > val("f32", x.c) and (x.a, x.b) == (y.a, y.b)
    assert val("f32", oy) < val("f32", ox)
    from mmaformal.query.model import evaluate
    assert (evaluate(m, x, "int"), evaluate(m, y, "int")) == (ox, oy)


def test_monotonic_block_scaled_refuted_and_replayed():
    """Block-scaled instructions take the monotonic claim (the same finite scales on both
    sides); the witness is replayed on the int and numpy back-ends before it is reported."""
    from mmaformal.query.claims import monotonic as CM
    from mmaformal.query.model import resolve
    n = "sm100/tcgen05.mma.m128n8k32.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.ue8m0"
    res = CM.prove_monotonic(resolve(n), timeout=20, backends=("int", "numpy"), scan=20)
    assert res["status"] == "refuted" and "same finite scales" in res["claim"]
    w1, w2 = res["witness"], res["detail"]["witness2"]
    assert w1["scale_a"] == w2["scale_a"] and w1["scale_b"] == w2["scale_b"]


def test_torn_progress_line_is_rerun(tmp_path):
    """A line torn by a crash mid-write is ignored (that job runs again); the lines after it
    are whole."""
    store = tmp_path / "p.jsonl"
    jobs = [C.Job(f"j{i}", "mmaformal.query.campaign:check_job", {"seconds": 0.01})
            for i in range(3)]
    C.run(jobs[:1], workers=1, progress=store, bar=False)
    store.write_text(store.read_text() + '{"job": "j1", "status": "pro')
    rs = C.run(jobs, workers=2, progress=store, bar=False)
    assert [r["status"] for r in rs] == ["proved"] * 3
    lines = store.read_text().splitlines()
    assert len(lines) == 4 and sum(1 for x in lines if x.startswith('{"job": "j1", "status": "pro') and not x.endswith("}")) == 1
    assert sorted(json.loads(x)["job"] for x in lines if x.endswith("}")) == ["j0", "j1", "j2"]


def test_resumed_campaign_says_how_much_is_left(tmp_path, capsys):
    """A campaign run again with its progress store says how many jobs it resumes from and
    how many it still runs (and a fresh one says nothing of the kind)."""
    store = tmp_path / "p.jsonl"
    jobs = [C.Job(f"j{i}", "mmaformal.query.campaign:check_job", {"seconds": 0.01})
            for i in range(3)]
    C.run(jobs[:2], workers=1, progress=store, bar=False)
    assert "resumed" not in capsys.readouterr().err
    C.run(jobs, workers=1, progress=store, bar=False)
    assert "resumed: 2 of 3 jobs already done, 1 to run" in capsys.readouterr().err
    C.run(jobs, workers=1, progress=store, bar=False)
    assert "resumed: 3 of 3 jobs already done, 0 to run" in capsys.readouterr().err
