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

from mmaformal.hw import check, forms, layouts, runner

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
    cp.uint32 = np.uint32
    rt = types.SimpleNamespace(
        getDeviceCount=lambda: 1,
        getDeviceProperties=lambda i: {"name": b"Fake H100", "major": 9, "minor": 0,
                                       "multiProcessorCount": 2},
        driverGetVersion=lambda: 0, runtimeGetVersion=lambda: 0)
    cp.cuda = types.SimpleNamespace(runtime=rt, Device=lambda *a: types.SimpleNamespace(id=0))
    return cp


def _emulator(name: str, broken: bool = False):
    """Executes D = A*B + C on images by the declared tables (float64 is exact here)."""
    s = forms.spec(name)
    tabs = {k: np.array(v) for k, v in layouts.operand_tables(name).items()}
    if broken:  # swap two A slots that hold different k of one row
        ta = tabs["a"]
        i = int(np.flatnonzero(ta == 0)[0])
        j = int(np.flatnonzero(ta == 1)[0])
        ta[i], ta[j] = ta[j], ta[i]

    G = s.group  # tiles per kernel tile (f16 m8n8k4: one per quad-pair)

    def val(img, tab, fmt, shape):
        T = img.shape[0]
        bits = forms.FORMAT_BITS[fmt]
        if bits < 8:  # packed words -> one element per byte (element 0 in the low bits)
            per = 32 // bits
            img = ((img[:, :, None] >> (np.arange(per, dtype=np.uint32) * bits))
                   & np.uint32((1 << bits) - 1)).reshape(T, -1).astype(np.uint8)
        flat = np.empty((T, G * shape[0] * shape[1]), dtype=img.dtype)
        flat[:, tab] = img
        if fmt in check._INT:
            v, _ = check.decode_ints(flat, fmt)
            return v.astype(np.float64).reshape(T, G, *shape)
        if fmt == "tf32":
            flat = flat & np.uint32(0xFFFFE000)
        return flat.view(_FLOAT[fmt]).astype(np.float64).reshape(T, G, *shape)

    def f(grid, block, args):
        a, b, c, d, T = args[:5]
        A = val(np.asarray(a), tabs["a"], s.atype, (s.m, s.a_cols))
        B = val(np.asarray(b), tabs["b"], s.btype, (s.k, s.n))
        C = val(np.asarray(c), tabs["c"], s.ctype, (s.m, s.n))
        if s.sparse:  # the word's 2-bit indices, read as PTX "Sparse matrix storage" says
            from mmaformal.hw import sparse
            g, kept, per = sparse.group(s.atype)
            e = np.asarray(args[5]).astype(np.uint64)
            nidx = sparse.pattern_bits(s.atype, s.k) // 2
            idx = ((e[:, None] >> (2 * (np.arange(nidx) % 16)).astype(np.uint64)) & 3).astype(int)
            if per == 1:
                pos = idx
            elif per == 2:
                pos = np.stack([2 * idx, 2 * idx + 1], -1).reshape(len(e), -1)
            else:
                pos = idx[:, 0::2] // 2
            comp = A.reshape(int(T), s.m, s.a_cols)
            meta = np.broadcast_to(pos[:, None, :], comp.shape).astype(np.uint8)
            A = sparse.expand(comp, meta, s.atype).reshape(int(T), 1, s.m, s.k)
        R = A @ B + C
        if s.bop == "xor":
            R = A @ (1 - B) + (1 - A) @ B + C
        if s.dtype == "s32":  # exact, then .satfinite clamps or s32 wraps
            R = R.astype(np.int64)
            R = np.clip(R, -2**31, 2**31 - 1) if s.sat else R
            D = (R & 0xFFFFFFFF).astype(np.uint32).reshape(int(T), -1)
        else:
            D = R.astype(_FLOAT[s.dtype]).view(s.storage("d")).reshape(int(T), -1)
        d[...] = D[:, tabs["d"]]

    return f


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    runner.sm_count.cache_clear()
    runner.device_tables.cache_clear()
    state = {"broken": False}
    monkeypatch.setattr(runner, "function", lambda n, sel=0: _emulator(n, state["broken"]))
    yield state
    runner.sm_count.cache_clear()
    runner.device_tables.cache_clear()


NAMES = ["sm90/mma.m16n8k16.f32.f16.f16.f32", "sm90/mma.m16n8k16.f16.f16.f16.f16",
         "sm90/mma.m8n8k4.f64.f64.f64.f64", "sm90/mma.m16n8k4.f32.tf32.tf32.f32",
         "sm90/mma.m16n8k32.f32.e4m3.e5m2.f32", "sm90/mma.m16n8k16.f16.e5m2.e5m2.f16",
         "sm90/wgmma.m64n8k16.f32.bf16.bf16", "sm90/wgmma.m64n24k32.f16.e4m3.e4m3",
         "sm90/wgmma.m64n8k8.f32.tf32.tf32", "sm90/mma.m8n8k4.f32.f16.f16.f32",
         "sm90/mma.m8n8k4.f32.f16.f16.f16", "sm90/mma.m8n8k4.f16.f16.f16.f16",
         "sm90/mma.m16n8k32.s32.s8.u8.s32", "sm90/mma.m8n8k16.satfinite.s32.u8.s8.s32",
         "sm90/mma.m16n8k64.s32.s4.u4.s32", "sm90/mma.m8n8k32.s32.u4.s4.s32",
         "sm90/mma.m16n8k256.s32.b1.b1.s32.xor.popc", "sm90/mma.m8n8k128.s32.b1.b1.s32.and.popc",
         "sm90/wgmma.m64n16k32.s32.s8.u8"]
SPARSE = ["sm90/mma.sp.m16n8k16.f32.f16.f16.f32", "sm90/mma.sp::ordered_metadata.m16n8k32.f16.f16.f16.f16",
          "sm90/mma.sp.m16n8k8.f32.tf32.tf32.f32", "sm90/mma.sp.m16n8k16.f32.tf32.tf32.f32",
          "sm90/mma.sp.m16n8k64.f32.e4m3.e5m2.f32", "sm90/mma.sp.m16n8k64.s32.s8.s8.s32",
          "sm90/mma.sp.m16n8k32.satfinite.s32.u8.s8.s32", "sm90/mma.sp.m16n8k128.s32.s4.u4.s32",
          "sm90/mma.sp::ordered_metadata.m16n8k64.s32.u4.u4.s32"]


@pytest.mark.parametrize("name", NAMES)
def test_selfcheck_and_probe_pass_on_declared_layout(fake_gpu, name):
    assert runner.available()[0]
    ok, msg = check.layout_selfcheck(name, tiles=8)
    assert ok, msg
    if forms.FORMAT_BITS[forms.spec(name).btype] < 8:
        return  # the probe's distinct k codes do not fit 4- or 1-bit B (self-check only)
    p = check.layout_probe(name, chunk=700)
    assert p["consistent"], p["message"]


@pytest.mark.parametrize("name", SPARSE)
def test_sparse_selfcheck_on_declared_layout(fake_gpu, name):
    ok, msg = check.layout_selfcheck(name, tiles=8)
    assert ok, msg


def test_sparse_rows_with_different_metadata(fake_gpu):
    # a dense A whose rows keep different positions runs as one launch per pattern
    from mmaformal.hw import sparse
    name = "sm90/mma.sp.m16n8k32.s32.s8.s8.s32"
    rng = np.random.default_rng(5)
    A = rng.integers(-4, 5, size=(3, 16, 32))
    for r in range(16):
        A[:, r, (r % 4)::4] = 0
        A[:, r, ((r + 1) % 4)::4] = 0
    B = rng.integers(-4, 5, size=(3, 32, 8))
    C = rng.integers(-9, 9, size=(3, 16, 8))
    d = runner.run(name, check.encode_ints(A, "s8"), check.encode_ints(B, "s8"),
                   check.encode_ints(C, "s32"))
    got, _ = check.decode_ints(d, "s32")
    assert (got == A @ B + C).all()
    comp, pos = sparse.compress(check.encode_ints(A, "s8"), "s8")
    assert (sparse.expand(comp, pos, "s8") == check.encode_ints(A, "s8")).all()
    bad = A.copy()
    bad[0, 2, 0:4] = 1
    with pytest.raises(ValueError, match="row .*group at k = 0..3 has 4 non-zero"):
        runner.run(name, check.encode_ints(bad, "s8"), check.encode_ints(B, "s8"),
                   check.encode_ints(C, "s32"))


def test_subbyte_range_checked(fake_gpu):
    name = "sm90/mma.m8n8k32.s32.s4.s4.s32"
    a = np.zeros((8, 32), np.uint8)
    a[3, 5] = 16
    with pytest.raises(ValueError, match=r"A\[3, 5\] = 16 is outside 0..15"):
        runner.run(name, a, np.zeros((32, 8), np.uint8), np.zeros((8, 8), np.uint32))


@pytest.mark.parametrize("name", ["sm90/mma.m16n8k8.f32.bf16.bf16.f32",
                                  "sm90/wgmma.m64n8k16.f16.f16.f16",
                                  "sm90/mma.m8n8k4.f32.f16.f16.f16"])
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


def test_run_grouped_tiles_pad_and_drop(fake_gpu):
    # f16 m8n8k4 runs 4 tiles per warp: 7 tiles pad to 8 and the padding never comes back
    name = "sm90/mma.m8n8k4.f32.f16.f16.f16"
    rng = np.random.default_rng(4)
    A = rng.integers(-4, 5, size=(7, 8, 4))
    B = rng.integers(-4, 5, size=(7, 4, 8))
    C = rng.integers(-9, 9, size=(7, 8, 8))
    d = runner.run(name, check.encode_ints(A, "f16"), check.encode_ints(B, "f16"),
                   check.encode_ints(C, "f16"), chunk_bytes=3000)
    assert d.dtype == np.uint32 and d.shape == (7, 8, 8)
    got, ok = check.decode_ints(d, "f32")
    assert ok.all() and (got == A @ B + C).all()


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
    with pytest.raises(ValueError, match="unknown instruction"):
        runner.run("sm90/mma.m16n8k16.f32.f16.f16.f16", a, b, c)


def test_another_architecture_is_refused_in_one_line(fake_gpu):
    """The emulated device is sm_90a: an sm80 form (the same PTX, another architecture's
    numerics) and a refused form say so in one line, before anything runs."""
    a = np.zeros((16, 16), np.uint16)
    b, c = np.zeros((16, 8), np.uint16), np.zeros((16, 8), np.uint32)
    assert runner.device_arch() == "sm90"
    with pytest.raises(ValueError, match=r"an sm80 instruction .*there: sm90/mma") as e:
        runner.run("sm80/mma.m16n8k16.f32.f16.f16.f32", a, b, c)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="tcgen05 with M = 64"):
        runner.run("sm100/tcgen05.mma.m64n8k16.kind::f16.f32.f16.f16", a, b, c)
    with pytest.raises(ValueError, match="an sm100 instruction .*runs sm90 forms only"):
        runner.need_gpu(["sm90/mma.m16n8k16.f32.f16.f16.f32", "sm100/mma.m16n8k16.f32.f16.f16.f32"])


@pytest.mark.parametrize("argv", [
    ["hw", "run", "sm80/mma.m16n8k16.f32.f16.f16.f32"],
    ["hw", "run", "sm100/tcgen05.mma.m128n16k16.kind::f16.f32.f16.f16"],
    ["hw", "validate", "sm120/mma.m16n8k32.kind::f8f6f4.f32.e4m3.e4m3.f32"],
    ["hw", "validate", "sm100/tcgen05.mma.m128n16k16.kind::f16.f16.f16.f16"],
])
def test_cli_refuses_a_form_the_gpu_lacks(fake_gpu, argv, tmp_path, capsys):
    from mmaformal import cli
    if argv[1] == "run":
        argv = argv + [x for k in "abc" for x in (f"--{k}", str(tmp_path / f"{k}.npy"))] + \
            ["--out", str(tmp_path / "d.npy")]
    else:
        argv = argv + ["--out", str(tmp_path / "v")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "runs sm90 forms only" in err or "f16 D" in err, err
    assert list(tmp_path.iterdir()) == []


def test_unavailable_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    ok, why = runner.available()
    assert not ok and "CuPy" in why and "\n" not in why
    with pytest.raises(runner.HardwareUnavailable):
        runner.run("sm90/mma.m16n8k16.f32.f16.f16.f32", np.zeros((16, 16), np.uint16),
                   np.zeros((16, 8), np.uint16), np.zeros((16, 8), np.uint32))


@pytest.mark.parametrize("name", ["sm90/mma.m8n8k16.s32.s8.u8.s32",
                                  "sm90/mma.m16n8k32.satfinite.s32.s8.s8.s32"])
def test_campaign_plumbing_integer(fake_gpu, name, tmp_path):
    # the whole campaign on the CPU stand-in (numpy int64 matmul, then wrap or clamp): every
    # class, the records, the rivals' counts; the integer theory must agree with that oracle
    from mmaformal.hw import validate
    r = validate.campaign(name, 4000, seed=3, out_dir=tmp_path, sample=64)
    assert r["tests"] >= 4000 and r["mismatches"] == 0, r["counterexamples"][:2]
    rec = tmp_path / (name.replace("/", "_") + ".json")
    assert rec.exists() and rec.with_suffix(".npz").exists()
    for tid, rv in r["rivals"].items():
        assert rv["tests"] == r["tests"]


def test_digest_record_and_replay(fake_gpu, tmp_path):
    # a digest-recorded sparse campaign on the CPU stand-in, replayed by an independent exact
    # integer computation: equal digests; a wrong computation (clamp, not wrap) is told apart
    import json
    from mmaformal.hw import record, sparse
    name = "sm90/mma.sp.m16n8k32.s32.s8.u8.s32"
    r = record.record(name, 3000, 7, tmp_path, klasses=["bits", "overflow"], keep_tiles=4)
    rec = json.loads((tmp_path / (name.replace("/", "_") + ".json")).read_text())
    assert rec["tests"] == r["tests"] >= 3000

    def exact(A, meta, B, Cm, wrap=True):
        dense = sparse.expand(A, meta, "s8")
        v = (check.decode_ints(dense, "s8")[0] @ check.decode_ints(B, "u8")[0]
             + check.decode_ints(Cm, "s32")[0])
        v = v if wrap else np.clip(v, -2**31, 2**31 - 1)
        return (v & 0xFFFFFFFF).astype(np.uint32)

    assert all(ok for ok, _ in record.replay(rec, exact).values())
    bad = record.replay(rec, lambda *x: exact(*x, wrap=False))
    assert not bad["overflow"][0]
