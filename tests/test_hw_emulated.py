"""The hw runner and its checks on a CPU stand-in for the GPU (no CUDA needed).

A numpy-backed fake ``cupy`` and a kernel emulator that follows the *declared* layout tables let
the plumbing (validation, gathers, chunking, scatter back, self-check, one-hot probe) run in CI.
A twin emulator with a deliberately wrong layout must be caught by both checks.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from mmaformal.hw import check, kernels, runner

ml_dtypes = pytest.importorskip("ml_dtypes")

_FLOAT = {"f64": np.float64, "f32": np.float32, "tf32": np.float32, "f16": np.float16,
          "bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn,
          "e5m2": ml_dtypes.float8_e5m2}


class _Arr(np.ndarray):
    def get(self):
        return np.asarray(self)


def _w(x):
    return np.asarray(x).view(_Arr)


def _fake_cupy():
    cp = types.ModuleType("cupy")
    cp.__version__ = "fake"
    cp.asarray = lambda x, dtype=None: _w(np.array(x, dtype=dtype))
    cp.ascontiguousarray = lambda x: _w(np.ascontiguousarray(x))
    cp.take = lambda x, i, axis=None: _w(np.take(np.asarray(x), np.asarray(i), axis=axis))
    for f in ("zeros", "empty", "full", "arange", "broadcast_to"):
        setattr(cp, f, (lambda g: lambda *a, **k: _w(g(*a, **k)))(getattr(np, f)))
    cp.nonzero = lambda x: tuple(_w(i) for i in np.nonzero(np.asarray(x)))
    rt = types.SimpleNamespace(
        getDeviceCount=lambda: 1,
        getDeviceProperties=lambda i: {"name": b"Fake H100", "major": 9, "minor": 0,
                                       "multiProcessorCount": 2},
        driverGetVersion=lambda: 0, runtimeGetVersion=lambda: 0)
    cp.cuda = types.SimpleNamespace(runtime=rt, Device=lambda *a: types.SimpleNamespace(id=0))
    return cp


def _emulator(name: str, broken: bool = False):
    """Executes D = A*B + C on images by the declared tables (float64 is exact here)."""
    s = kernels.spec(name)
    tabs = {k: np.array(v) for k, v in kernels.operand_tables(name).items()}
    if broken:  # swap two A slots that hold different k of one row
        ta = tabs["a"]
        i = int(np.flatnonzero(ta == 0)[0])
        j = int(np.flatnonzero(ta == 1)[0])
        ta[i], ta[j] = ta[j], ta[i]

    def val(img, tab, fmt, shape):
        T = img.shape[0]
        flat = np.empty((T, shape[0] * shape[1]), dtype=img.dtype)
        flat[:, tab] = img
        if fmt == "tf32":
            flat = flat & np.uint32(0xFFFFE000)
        return flat.view(_FLOAT[fmt]).astype(np.float64).reshape(T, *shape)

    def f(grid, block, args):
        a, b, c, d, T = args[:5]
        A = val(np.asarray(a), tabs["a"], s.atype, (s.m, s.k))
        B = val(np.asarray(b), tabs["b"], s.btype, (s.k, s.n))
        C = val(np.asarray(c), tabs["c"], s.ctype, (s.m, s.n))
        D = (A @ B + C).astype(_FLOAT[s.dtype]).view(s.storage("d")).reshape(int(T), -1)
        d[...] = D[:, tabs["c"]]

    return f


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    runner._sm_count.cache_clear()
    runner._device_tables.cache_clear()
    state = {"broken": False}
    monkeypatch.setattr(runner, "_function", lambda n: _emulator(n, state["broken"]))
    yield state
    runner._sm_count.cache_clear()
    runner._device_tables.cache_clear()


NAMES = ["sm90/mma.m16n8k16.f32.f16.f16.f32", "sm90/mma.m16n8k16.f16.f16.f16.f16",
         "sm90/mma.m8n8k4.f64.f64.f64.f64", "sm90/mma.m16n8k4.f32.tf32.tf32.f32",
         "sm90/mma.m16n8k32.f32.e4m3.e5m2.f32", "sm90/mma.m16n8k16.f16.e5m2.e5m2.f16",
         "sm90/wgmma.m64n8k16.f32.bf16.bf16", "sm90/wgmma.m64n24k32.f16.e4m3.e4m3",
         "sm90/wgmma.m64n8k8.f32.tf32.tf32"]


@pytest.mark.parametrize("name", NAMES)
def test_selfcheck_and_probe_pass_on_declared_layout(fake_gpu, name):
    assert runner.available()[0]
    ok, msg = check.layout_selfcheck(name, tiles=8)
    assert ok, msg
    p = check.layout_probe(name, chunk=700)
    assert p["consistent"], p["message"]


@pytest.mark.parametrize("name", ["sm90/mma.m16n8k8.f32.bf16.bf16.f32",
                                  "sm90/wgmma.m64n8k16.f16.f16.f16"])
def test_broken_layout_is_caught(fake_gpu, name):
    fake_gpu["broken"] = True
    ok, msg = check.layout_selfcheck(name, tiles=8)
    assert not ok and "differ" in msg
    p = check.layout_probe(name)
    assert not p["consistent"], p["message"]


def test_run_chunks_and_batch_shape(fake_gpu):
    name = "sm90/mma.m16n8k8.f32.f16.f16.f32"
    rng = np.random.default_rng(3)
    A = rng.integers(-4, 5, size=(3, 5, 16, 8))
    B = rng.integers(-4, 5, size=(3, 5, 8, 8))
    C = rng.integers(-9, 9, size=(3, 5, 16, 8))
    d = runner.run(name, check.encode_ints(A, "f16"), check.encode_ints(B, "f16"),
                   check.encode_ints(C, "f32"), chunk_bytes=4000)
    assert d.dtype == np.uint32 and d.shape == (3, 5, 16, 8)
    got, ok = check.decode_ints(d, "f32")
    assert ok.all() and (got == A @ B + C).all()
    d2 = runner.run(name, check.encode_ints(A[0, 0], "f16"), check.encode_ints(B[0, 0], "f16"),
                    check.encode_ints(C[0, 0], "f32"))
    assert d2.shape == (16, 8) and (d2 == d[0, 0]).all()


def test_bad_inputs_raise_value_error(fake_gpu):
    name = "sm90/mma.m16n8k16.f32.f16.f16.f32"
    a = np.zeros((2, 16, 16), np.uint16)
    b = np.zeros((2, 16, 8), np.uint16)
    c = np.zeros((2, 16, 8), np.uint32)
    with pytest.raises(ValueError, match="uint16"):
        runner.run(name, a.astype(np.float16), b, c)
    with pytest.raises(ValueError, match=r"\(\.\.\., 16, 8\)"):
        runner.run(name, a, b[:, :8], c)
    with pytest.raises(ValueError, match="batch"):
        runner.run(name, a, b[:1], c)
    with pytest.raises(ValueError, match="not covered"):
        runner.run("sm90/mma.m16n8k16.f32.f16.f16.f16", a, b, c)


def test_unavailable_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    ok, why = runner.available()
    assert not ok and "CuPy" in why and "\n" not in why
    with pytest.raises(runner.HardwareUnavailable):
        runner.run("sm90/mma.m16n8k16.f32.f16.f16.f32", np.zeros((16, 16), np.uint16),
                   np.zeros((16, 8), np.uint16), np.zeros((16, 8), np.uint32))
