"""Tests of the lean start-up of `mmaformal simulate`: the verb imports no module of another
verb, the checked catalog and theory set come from a content-keyed cache (mmaformal._cache)
that never hides a change or an error, and a compiled kernel is found again without tracing
(mmaformal.compile disk index)."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from mmaformal import _cache, isa
from mmaformal import compile as C
from mmaformal import theory as T
from mmaformal.cli import main

H16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"
HEAVY = ("z3", "bitwuzla", "cvc5", "pysmt", "mmaformal.query", "mmaformal.hw", "mmaformal.emulate",
         "mmaformal.accuracy", "mmaformal.explain", "multiprocessing")


def _tiles(tmp_path, tiles=2):
    rng = np.random.default_rng(1)
    paths = {}
    for n, shape, w in (("a", (tiles, 16, 16), 16), ("b", (tiles, 16, 8), 16), ("c", (tiles, 16, 8), 32)):
        x = rng.integers(0, 1 << w, shape, dtype=np.uint64).astype(np.uint16 if w == 16 else np.uint32)
        paths[n] = str(tmp_path / f"{n}.npy")
        np.save(paths[n], x)
    paths["out"] = str(tmp_path / "d.npy")
    return paths


def test_simulate_imports_no_other_verb(tmp_path):
    p = _tiles(tmp_path)
    code = ("import sys, json; from mmaformal.cli import main; rc = main(['simulate', %r, '--a', %r, "
            "'--b', %r, '--c', %r, '--out', %r]); assert rc == 0; print(json.dumps(sorted(sys.modules)))"
            % (H16, p["a"], p["b"], p["c"], p["out"]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    mods = json.loads(r.stdout.strip().splitlines()[-1])
    loaded = [m for m in mods if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert loaded == [], loaded


def test_help_and_unknown_verb_still_list_every_verb(capsys):
    from mmaformal import cli
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for verb in list(cli._MODULE_VERBS) + list(cli._VERBS):
        assert verb in out, verb
    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    for verb in cli._MODULE_VERBS:
        assert repr(verb) in err, (verb, err)


def test_module_verb_parses_alone(capsys):
    with pytest.raises(SystemExit):
        main(["prove", "--help"])
    assert "usage: mmaformal prove" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# content-keyed cache


def test_cached_reuses_rebuilds_and_never_caches_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("MMAFORMAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MMAFORMAL_TABLE_CACHE", raising=False)
    src = tmp_path / "table.toml"
    src.write_text("x = 1\n")
    calls = []

    def build():
        calls.append(src.read_text())
        if "bad" in src.read_text():
            raise ValueError("table.toml: bad")
        return {"value": src.read_text()}

    assert _cache.cached("t", [src], build) == {"value": "x = 1\n"}
    assert _cache.cached("t", [src], build) == {"value": "x = 1\n"}
    assert len(calls) == 1                                  # the second came from the cache
    src.write_text("x = 2\n")                               # a change is never hidden
    assert _cache.cached("t", [src], build) == {"value": "x = 2\n"}
    assert len(calls) == 2
    src.write_text("bad\n")                                 # errors propagate, every time
    for _ in range(2):
        with pytest.raises(ValueError, match="bad"):
            _cache.cached("t", [src], build)
    assert len(calls) == 4
    src.write_text("x = 2\n")
    f = tmp_path / "cache" / f"t_{_cache.files_key([src])[:32]}.pickle"
    assert f.exists()
    f.write_bytes(b"not a pickle")                          # corrupt: rebuilt and rewritten
    assert _cache.cached("t", [src], build) == {"value": "x = 2\n"}
    assert pickle.loads(f.read_bytes()) == {"value": "x = 2\n"}
    monkeypatch.setenv("MMAFORMAL_TABLE_CACHE", "0")         # off: always built
    n = len(calls)
    _cache.cached("t", [src], build)
    assert len(calls) == n + 1


def test_cached_keeps_the_newest_values_of_a_tag(tmp_path, monkeypatch):
    monkeypatch.setenv("MMAFORMAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MMAFORMAL_TABLE_CACHE", raising=False)
    src = tmp_path / "t.toml"
    for i in range(_cache.KEEP + 3):
        src.write_text(f"x = {i}\n")
        assert _cache.cached("p", [src], lambda: i) == i
    assert len(list((tmp_path / "cache").glob("p_*.pickle"))) == _cache.KEEP
    assert _cache.cached("p", [src], lambda: "rebuilt") == _cache.KEEP + 2   # the newest kept


def test_cached_catalog_and_theories_equal_fresh_loads(tmp_path):
    env = dict(os.environ, MMAFORMAL_CACHE=str(tmp_path))
    env.pop("MMAFORMAL_TABLE_CACHE", None)
    code = ("import json; from mmaformal import isa, theory as T; c = isa.catalog(); ts = T.default(); "
            "print(json.dumps([len(c), sorted(t.id for t in ts), "
            "{t.id: ts.instructions_of(t.id) for t in ts}, T.resolve(%r).hash()]))" % H16)
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                           check=True).stdout for _ in range(2)]
    assert sorted(f.name.split("_")[0] for f in tmp_path.glob("*.pickle")) == ["catalog", "theories"]
    assert runs[0] == runs[1]
    fresh = T.load()
    n, ids, members, h = json.loads(runs[1])
    assert n == len(isa.load()) and ids == sorted(t.id for t in fresh)
    assert members == {t.id: fresh.instructions_of(t.id) for t in fresh}
    assert h == fresh.resolve(H16).hash()


# --------------------------------------------------------------------------------------------
# compiled kernels found again without tracing


def test_kernel_disk_index_skips_tracing(tmp_path, monkeypatch):
    ok, _ = C.available()
    if not ok:
        pytest.skip("no C compiler")
    monkeypatch.setenv("MMAFORMAL_CACHE", str(tmp_path))
    traced = []

    def fn(K, x, y):
        traced.append(1)
        return K.add(K.resize(x, 17, False), K.resize(y, 17, False))

    x = np.arange(1000, dtype=np.uint16)
    y = np.arange(1000, dtype=np.uint16)[::-1].copy()
    k1 = C.compile_kernel(fn, [16, 16], [32], disk_key="test|add17")
    assert traced == [1]
    C._LOADED.clear()                                        # as a new process would be
    k2 = C.compile_kernel(fn, [16, 16], [32], disk_key="test|add17")
    assert traced == [1]                                     # found through the index
    assert k2.source == k1.source
    assert np.array_equal(k1(x, y)[0], k2(x, y)[0])
    assert np.array_equal(k2(x, y)[0], x.astype(np.uint32) + y)
    C.compile_kernel(fn, [16, 16], [32], disk_key="test|other")
    assert traced == [1, 1]                                  # another key traces


def test_kernel_optimisation_level(tmp_path, monkeypatch):
    """MMAFORMAL_CC_OPT (the suite sets -O1) picks the level of every kernel and is part of
    the cache key, so a -O1 build is never taken for the default one; an unknown value is
    ignored (-O3, or -O1 for 4,000 lines and more)."""
    ok, _ = C.available()
    if not ok:
        pytest.skip("no C compiler")
    monkeypatch.setenv("MMAFORMAL_CACHE", str(tmp_path))
    small, big = "x\n" * 10, "x\n" * 5000
    monkeypatch.delenv("MMAFORMAL_CC_OPT", raising=False)
    assert (C._opt_level(small), C._opt_level(big)) == ("-O3", "-O1")
    idx_default = C._index_file("test|k", [16], [32], 8)
    monkeypatch.setenv("MMAFORMAL_CC_OPT", "-O9")
    assert (C._opt_level(small), C._opt_level(big)) == ("-O3", "-O1")
    assert C._index_file("test|k", [16], [32], 8) == idx_default
    monkeypatch.setenv("MMAFORMAL_CC_OPT", "-O1")
    assert (C._opt_level(small), C._opt_level(big)) == ("-O1", "-O1")
    assert C._index_file("test|k", [16], [32], 8) != idx_default

    def fn(K, x, y):
        return K.add(K.resize(x, 17, False), K.resize(y, 17, False))

    x = np.arange(300, dtype=np.uint16)
    outs = []
    for level in ("-O1", "-O3"):
        monkeypatch.setenv("MMAFORMAL_CC_OPT", level)
        C._LOADED.clear()
        k = C.compile_kernel(fn, [16, 16], [32], disk_key=f"test|opt{level}")
        outs.append(k(x, x)[0])
    assert np.array_equal(outs[0], outs[1])                    # the same bits at both levels
    assert np.array_equal(outs[0], 2 * x.astype(np.uint32))
    assert len(list(tmp_path.glob("k_*.so"))) == 2            # one build per level


def test_cli_simulate_same_bits_with_and_without_caches(tmp_path):
    p = _tiles(tmp_path, tiles=600)                          # > COMPILE_MIN lanes: the kernel
    outs = []
    for i, extra in enumerate(({"MMAFORMAL_TABLE_CACHE": "0"}, {}, {}, {"MMAFORMAL_BACKEND": "numpy"})):
        env = dict(os.environ, MMAFORMAL_CACHE=str(tmp_path / "cache"), **extra)
        out = str(tmp_path / f"d{i}.npy")
        r = subprocess.run([sys.executable, "-m", "mmaformal", "simulate", H16, "--a", p["a"], "--b", p["b"],
                            "--c", p["c"], "--out", out], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
        outs.append(np.load(out))
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


# --------------------------------------------------------------------------------------------
# damaged kernels: checked before every load, rebuilt, never loaded

_ADD17 = ("import sys, numpy as np; from mmaformal import compile as C\n"
          "def fn(K, x, y):\n"
          "    return K.add(K.resize(x, 17, False), K.resize(y, 17, False))\n"
          "x = np.arange(1000, dtype=np.uint16)\n"
          "k = C.compile_kernel(fn, [16, 16], [32], disk_key='test|damaged')\n"
          "assert np.array_equal(k(x, x)[0], 2 * x.astype(np.uint32))\n"
          "print('ok')\n")


def _add17(cache, **env):
    """Build (or find) the add17 kernel in a fresh process; its CompletedProcess (a SIGBUS on
    loading a damaged .so ends it with a negative returncode instead of killing the tests)."""
    e = dict(os.environ, MMAFORMAL_CACHE=str(cache), **env)
    return subprocess.run([sys.executable, "-c", _ADD17], capture_output=True, text=True, env=e)


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage"])
def test_damaged_kernel_is_rebuilt_never_loaded(tmp_path, damage):
    """A .so cut short (SIGBUS when loaded), emptied or overwritten is found by its recorded
    size and sha256 (k_<hash>.sum) and rebuilt, in the same run and for good."""
    if not C.available()[0]:
        pytest.skip("no C compiler")
    r = _add17(tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    (so,) = tmp_path.glob("k_*.so")
    assert so.with_suffix(".sum").exists()
    good = so.read_bytes()
    if damage == "truncated":
        os.truncate(so, 1000)
    elif damage == "empty":
        os.truncate(so, 0)
    else:
        so.write_bytes(bytes(range(256)) * (len(good) // 256))
    for _ in range(2):                                    # rebuilt once, then found intact
        r = _add17(tmp_path)
        assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr)
        assert "compiled path unavailable" not in r.stderr
        assert _cache.sum_ok(so)
    assert len(so.read_bytes()) == len(good)


def test_kernel_without_a_sum_is_rebuilt(tmp_path):
    """A .so of unknown provenance (no .sum beside it) is never loaded as is."""
    if not C.available()[0]:
        pytest.skip("no C compiler")
    assert _add17(tmp_path).returncode == 0
    (so,) = tmp_path.glob("k_*.so")
    so.with_suffix(".sum").unlink()
    os.truncate(so, 1000)
    r = _add17(tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr)
    assert _cache.sum_ok(so)


def test_concurrent_builders_of_one_kernel(tmp_path):
    """Processes building the same kernel at once all get a good one (per-kernel lock,
    atomic rename): no process loads a half-written .so."""
    if not C.available()[0]:
        pytest.skip("no C compiler")
    env = dict(os.environ, MMAFORMAL_CACHE=str(tmp_path))
    ps = [subprocess.Popen([sys.executable, "-c", _ADD17], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    outs = [p.communicate() for p in ps]
    assert [p.returncode for p in ps] == [0, 0, 0], outs
    (so,) = tmp_path.glob("k_*.so")
    assert _cache.sum_ok(so)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("tmp")]   # no leftovers


def test_damaged_cuda_source_is_made_again(tmp_path, monkeypatch):
    """The CUDA path's stored kernel source (cu_<key>.cu) is checked the same way: a damaged
    one is made again (traced), never handed to the compiler."""
    from mmaformal import cuda
    monkeypatch.setenv("MMAFORMAL_CACHE", str(tmp_path))
    made = []

    def make():
        made.append(1)
        return "extern \"C\" __global__ void k() {}\n" * 50

    src = cuda._src_cache("test|cu", make)
    assert cuda._src_cache("test|cu", make) == src and made == [1]
    (p,) = tmp_path.glob("cu_*.cu")
    os.truncate(p, 10)
    assert cuda._src_cache("test|cu", make) == src and made == [1, 1]
    assert p.read_text() == src and _cache.sum_ok(p)
