"""Device-resident arrays in and out of simulate, emulate.matmul / dot_lanes and accuracy.

CPU side (always; torch CPU tests where torch imports):
- numpy in, numpy out, bits and dtypes as before (the default device=None is "cpu" for host
  arrays);
- an object with ``__dlpack__`` on a CUDA device where no CUDA back-end is usable, operands on
  different devices, and devices other than CUDA are one-line ValueErrors;
- torch CPU tensors (raw bits, or the format's own dtype, bfloat16 and float8 too) give torch
  CPU tensors of the unsigned storage dtype with the numpy path's bits, NaN payloads and signed
  zeros included.
GPU side (`-m gpu`, skipped without CuPy and a GPU, as tests/test_cuda.py): torch CUDA tensors
and CuPy arrays give results of their kind on their device, bit-identical to the numpy path
(simulate, matmul with split_k / pad_k / scales, dot_lanes, accuracy.evaluate), NaN payloads and
signed zeros surviving; device-side validation gives the numpy path's messages.
"""
from __future__ import annotations

import numpy as np
import pytest

from mmaformal import accuracy, classes, cuda, emulate, fp, isa
from mmaformal.simulate import placement, simulate, storage_dtype

F16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"
BF16 = "sm90/mma.m16n8k16.f32.bf16.bf16.f32"
FP8 = "sm90/mma.m16n8k32.f32.e4m3.e4m3.f32"
TF32 = "sm90/mma.m16n8k8.f32.tf32.tf32.f32"
F64 = "sm90/mma.m16n8k4.f64.f64.f64.f64"
INT8 = "sm80/mma.m16n8k32.s32.s8.s8.s32"
MX = "sm100/tcgen05.mma.m128n8k32.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.ue8m0"
FP4 = "sm100/tcgen05.mma.m128n8k64.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.ue8m0"
AMD = "gfx942/v_mfma_f32_32x32x8_f16"

#: raw bits that must survive as bits: NaN payloads (quiet and signalling) and signed zeros
SPECIAL = {16: [0x7E01, 0xFD5A, 0x8000, 0x0000, 0x7C00, 0x0001],
           32: [0x7FC01234, 0xFFA00001, 0x80000000, 0x00000000, 0x7F800000, 0x00000001],
           64: [0x7FF8000000001234, 0x8000000000000000, 0xFFF0000000000001, 0]}


def _width(fmt_name: str) -> int:
    f = fp.fmt(fmt_name)
    return f.k + f.pad


def _rand(fmt_name: str, shape, rng) -> np.ndarray:
    """Random raw bits of a format (any code, NaN payloads included) with specials mixed in."""
    dt = storage_dtype(fmt_name)
    w = _width(fmt_name)
    x = rng.integers(0, 1 << w, size=shape, dtype=np.uint64).astype(dt)
    sp = [v for v in SPECIAL.get(8 * dt.itemsize, []) if v < (1 << w)]
    if sp and x.size:
        flat = x.reshape(-1)
        idx = rng.choice(flat.size, size=min(flat.size, 4 * len(sp)), replace=False)
        flat[idx] = np.resize(np.array(sp, dtype=dt), len(idx))
    return x


def _tiles(instr, T=3, seed=0, scales=True):
    ins = isa.lookup(instr)
    rng = np.random.default_rng(seed)
    A = _rand(ins.a, (T, ins.m, ins.k), rng)
    B = _rand(ins.b, (T, ins.k, ins.n), rng)
    C = _rand(ins.c, (T, ins.m, ins.n), rng)
    kw = {}
    if ins.scale and scales:
        nb = ins.k // ins.scale_block
        kw = {"scale_a": rng.integers(0x70, 0x90, (T, ins.m, nb)).astype(np.uint8),
              "scale_b": rng.integers(0x70, 0x90, (T, nb, ins.n)).astype(np.uint8)}
    return ins, A, B, C, kw


def _gemm(instr, M, N, K, seed=0, klass="bits"):
    ins = isa.lookup(instr)
    rng = np.random.default_rng(seed)
    a, _, c = classes.generate(klass, ins.a, ins.b, ins.c, K, M, rng)
    _, bt, _ = classes.generate(klass, ins.a, ins.b, ins.c, K, N, rng)
    A, B = np.ascontiguousarray(a), np.ascontiguousarray(bt.T)
    C = np.resize(c, M * N).reshape(M, N)
    if A.itemsize == 2:
        A[0, :3] = 0x8000                                                   # signed zeros in A
    if C.itemsize == 4:
        C.reshape(-1)[:3] = [0x7FC01234, 0x80000000, 0xFFA00001]            # NaN payloads in C
    return ins, A, B, C


class FakeCuda:
    """A DLPack producer on CUDA device 0 that cannot actually export (no GPU here)."""

    shape = (16, 16)

    def __dlpack__(self, stream=None):
        raise RuntimeError("not exportable")

    def __dlpack_device__(self):
        return (2, 0)


class FakeOther(FakeCuda):
    def __dlpack_device__(self):
        return (10, 0)                  # ROCm


class FakeNoDevice:
    def __dlpack__(self, stream=None):
        raise RuntimeError("not exportable")


# ------------------------------------------------------------------------------------------
# CPU side


def test_numpy_in_numpy_out_unchanged():
    ins, A, B, C, _ = _tiles(F16)
    d = simulate(ins, A, B, C)
    assert type(d) is np.ndarray and d.dtype == np.uint32 and d.shape == (3, 16, 8)
    assert np.array_equal(d, simulate(ins, A, B, C, device="cpu"))
    ins, A, B, C = _gemm(F16, 9, 7, 32)
    D = emulate.matmul(A, B, C, ins)
    assert type(D) is np.ndarray and D.dtype == np.uint32
    assert np.array_equal(D, emulate.matmul(A, B, C, ins, device="cpu"))
    lanes = emulate.dot_lanes(ins, A[:, :16], A[:, 16:], C[:, 0])
    assert type(lanes) is np.ndarray and lanes.shape == (9,)
    pl = placement("x", A=A, B=[[1]], C=None)
    assert pl.kind == "numpy" and not pl.on_device and pl.wrap(D) is D


@pytest.mark.skipif(cuda.available()[0], reason="a GPU is usable here")
def test_device_array_without_cuda_is_one_line_error():
    ins, A, B, C, _ = _tiles(F16)
    f = FakeCuda()
    calls = [lambda: simulate(ins, f, f, f), lambda: emulate.matmul(f, f, None, ins),
             lambda: emulate.dot_lanes(ins, f, f, f),
             lambda: accuracy.evaluate(ins, f, f, None), lambda: accuracy.stats(f, f)]
    for call in calls:
        with pytest.raises(ValueError, match="no CUDA back-end is usable") as e:
            call()
        assert "\n" not in str(e.value) and "cuda:0" in str(e.value)


def test_mixed_and_foreign_devices_are_one_line_errors():
    ins, A, B, C, _ = _tiles(F16)
    with pytest.raises(ValueError, match=r"operands on different devices \(A a FakeCuda on cuda:0, "
                                         r"B a host array"):
        simulate(ins, FakeCuda(), B, C)
    with pytest.raises(ValueError, match="operands on different devices"):
        emulate.matmul(A[0], FakeCuda(), None, ins)
    with pytest.raises(ValueError, match="DLPack device type 10"):
        simulate(ins, FakeOther(), FakeOther(), FakeOther())
    with pytest.raises(ValueError, match="no usable __dlpack_device__"):
        emulate.matmul(FakeNoDevice(), B[0], None, ins)


# -- torch CPU tensors: torch in, torch out


def _t(x: np.ndarray, torch, dtype=None):
    """A torch CPU tensor holding the raw bits of x (unsigned view), or viewed as dtype."""
    w = 8 * x.dtype.itemsize
    t = torch.from_numpy(np.ascontiguousarray(x).view(f"int{w}"))
    return t.view(dtype if dtype is not None else getattr(torch, f"uint{w}"))


def _np(t) -> np.ndarray:
    """The raw bits of a torch tensor (any device) as unsigned numpy."""
    import torch
    w = 8 * t.element_size()
    return t.detach().cpu().view(getattr(torch, f"int{w}")).numpy().view(f"uint{w}")


@pytest.mark.parametrize("instr", [F16, BF16, FP8, TF32, F64, INT8, MX, AMD])
def test_torch_cpu_simulate_same_bits(instr):
    torch = pytest.importorskip("torch")
    ins, A, B, C, kw = _tiles(instr)
    ref = simulate(ins, A, B, C, **kw)
    tkw = {k: _t(v, torch) for k, v in kw.items()}
    d = simulate(ins, _t(A, torch), _t(B, torch), _t(C, torch), **tkw)
    assert isinstance(d, torch.Tensor) and d.device.type == "cpu"
    assert d.dtype == getattr(torch, ref.dtype.name) and tuple(d.shape) == ref.shape
    assert np.array_equal(_np(d), ref)


def test_torch_cpu_native_dtypes_keep_nan_payloads_and_signed_zeros():
    torch = pytest.importorskip("torch")
    for instr, dt in ((F16, torch.float16), (BF16, torch.bfloat16), (FP8, torch.float8_e4m3fn)):
        ins, A, B, C, _ = _tiles(instr, seed=3)
        ref = simulate(ins, A, B, C)
        d = simulate(ins, _t(A, torch, dt), _t(B, torch, dt), _t(C, torch, torch.float32))
        assert d.dtype == torch.uint32 and np.array_equal(_np(d), ref), instr
    # D keeps a NaN payload / -0 of C where the theory passes C through (A = B = 0)
    ins = isa.lookup(F16)
    A = np.zeros((16, 16), np.uint16)
    B = np.zeros((16, 8), np.uint16)
    C = np.resize(np.array(SPECIAL[32], np.uint32), (16, 8))
    ref = simulate(ins, A, B, C)
    d = simulate(ins, _t(A, torch, torch.float16), _t(B, torch, torch.float16),
                 _t(C, torch, torch.float32))
    assert np.array_equal(_np(d), ref)


def test_torch_cpu_matmul_and_lanes_same_bits():
    torch = pytest.importorskip("torch")
    ins, A, B, C = _gemm(F16, 20, 12, 48, seed=2, klass="special")
    for kw in ({}, {"split_k": 2}):
        ref = emulate.matmul(A, B, C, ins, **kw)
        d = emulate.matmul(_t(A, torch, torch.float16), _t(B, torch), _t(C, torch), ins, **kw)
        assert isinstance(d, torch.Tensor) and d.dtype == torch.uint32
        assert np.array_equal(_np(d), ref)
    ref = emulate.matmul(A[:, :40], B[:40], None, ins, pad_k=True)
    d = emulate.matmul(_t(A[:, :40], torch), _t(B[:40], torch), None, ins, pad_k=True)
    assert np.array_equal(_np(d), ref)
    ref = emulate.dot_lanes(ins, A[:, :32], A[:, 16:], C[:, 0])
    d = emulate.dot_lanes(ins, _t(A[:, :32], torch), _t(A[:, 16:], torch), _t(C[:, 0], torch))
    assert isinstance(d, torch.Tensor) and np.array_equal(_np(d), ref)


def test_torch_cpu_bad_input_is_one_line_value_error():
    torch = pytest.importorskip("torch")
    ins, A, B, C, _ = _tiles(F16)
    bad = [
        (lambda: simulate(ins, _t(A, torch, torch.int16), B, C), "raw bits must be unsigned"),
        (lambda: simulate(ins, _t(A, torch), _t(B, torch), _t(C[..., :4], torch)),
         r"C must have shape \(\.\.\., 16, 8\), got \(3, 16, 4\)"),
        (lambda: simulate(ins, _t(A, torch, torch.bfloat16), B, C), "not exactly representable|f16"),
        (lambda: emulate.matmul(_t(A[0], torch), _t(B[0, :8], torch), None, ins),
         "inner dimensions differ"),
        (lambda: simulate(ins, torch.zeros(3, 16, 16, dtype=torch.complex64), B, C),
         "unsupported dtype complex64"),
    ]
    for call, msg in bad:
        with pytest.raises(ValueError, match=msg) as e:
            call()
        assert "\n" not in str(e.value)


def test_torch_cpu_accuracy_same_statistics():
    torch = pytest.importorskip("torch")
    x, y, z = accuracy.sample("normal", 64, 32, seed=4)
    ref = accuracy.evaluate(F16, x, y, z)
    got = accuracy.evaluate(F16, torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(z))
    assert np.array_equal(ref.err, got.err) and np.array_equal(ref.err_ulp, got.err_ulp)
    assert accuracy.stats(torch.from_numpy(ref.err), torch.from_numpy(ref.err_ulp)) == ref.stats
    with pytest.raises(ValueError, match="evaluate takes x and y of one shape"):
        accuracy.evaluate(F16, x, y[:, :16], z)


# ------------------------------------------------------------------------------------------
# GPU side


gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not cuda.available()[0], reason="no usable GPU (CuPy + NVIDIA device)")
LIBS = ["torch", "cupy"]


def _dev(x: np.ndarray, lib: str, dtype=None):
    """x (raw bits) on the GPU as a torch CUDA tensor (raw, or viewed as dtype) or CuPy array."""
    if lib == "cupy":
        import cupy
        return cupy.asarray(x)
    import torch
    return _t(x, torch, dtype).cuda()


def _back(d, lib: str) -> np.ndarray:
    """Check a result's kind and device, and return its raw bits on the host."""
    if lib == "cupy":
        import cupy
        assert isinstance(d, cupy.ndarray) and d.device.id == 0, type(d)
        return cupy.asnumpy(d)
    import torch
    assert isinstance(d, torch.Tensor) and d.is_cuda and d.device.index == 0, (type(d), d.device)
    assert str(d.dtype).startswith("torch.uint")
    return _np(d)


def _need(lib):
    if lib == "torch":
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("torch without CUDA")


@gpu
@needs_gpu
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("instr", [F16, BF16, FP8, TF32, F64, INT8, MX, FP4, AMD])
def test_gpu_simulate_device_bits_equal_numpy(instr, lib):
    _need(lib)
    ins, A, B, C, kw = _tiles(instr, T=5, seed=1)
    ref = simulate(ins, A, B, C, **kw)
    d = simulate(ins, _dev(A, lib), _dev(B, lib), _dev(C, lib),
                 **{k: _dev(v, lib) for k, v in kw.items()})
    got = _back(d, lib)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    diff = np.argwhere(got != ref)
    assert diff.size == 0, f"{instr}: {len(diff)} outputs differ, first at {diff[0]}"


@gpu
@needs_gpu
def test_gpu_simulate_native_dtypes_broadcast_and_strides():
    _need("torch")
    import torch
    for instr, dt in ((F16, torch.float16), (BF16, torch.bfloat16), (FP8, torch.float8_e4m3fn)):
        ins, A, B, C, _ = _tiles(instr, T=4, seed=5)
        ref = simulate(ins, A, B, C)
        d = simulate(ins, _dev(A, "torch", dt), _dev(B, "torch", dt), _dev(C, "torch", torch.float32))
        assert d.dtype == torch.uint32 and np.array_equal(_back(d, "torch"), ref), instr
    # B shared by every tile (broadcast), A a transposed (non-contiguous) view, C one tile
    ins, A, B, C, _ = _tiles(F16, T=4, seed=6)
    At = np.ascontiguousarray(np.swapaxes(A, -1, -2))
    ref = simulate(ins, A, B[0], C[0])
    for lib in LIBS:
        _need(lib)
        Ad = _dev(At, lib).swapaxes(-1, -2) if lib == "cupy" else _dev(At, lib).transpose(-1, -2)
        d = simulate(ins, Ad, _dev(B[0], lib), _dev(C[0], lib))
        assert np.array_equal(_back(d, lib), ref), lib
    # device="cpu" with device arrays: the CPU path, the result back on the device
    d = simulate(ins, _dev(A, "cupy"), _dev(B, "cupy"), _dev(C, "cupy"), device="cpu")
    assert np.array_equal(_back(d, "cupy"), simulate(ins, A, B, C))


@gpu
@needs_gpu
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("instr", [F16, FP8, F64, AMD, MX])
def test_gpu_matmul_device_bits_equal_numpy(instr, lib):
    _need(lib)
    ins = isa.lookup(instr)
    M, N, K = 67, 45, ins.k * 5
    for klass in ("bits", "special", "cancel"):
        _, A, B, C = _gemm(instr, M, N, K, seed=3, klass=klass)
        kw = {}
        if ins.scale:
            rng = np.random.default_rng(9)
            nb = K // ins.scale_block
            kw = {"scale_a": rng.integers(0x70, 0x90, (M, nb)).astype(np.uint8),
                  "scale_b": rng.integers(0x70, 0x90, (nb, N)).astype(np.uint8)}
        dkw = {k: _dev(v, lib) for k, v in kw.items()}
        for extra in ({}, {"split_k": 3}):
            ref = emulate.matmul(A, B, C, ins, **extra, **kw)
            d = emulate.matmul(_dev(A, lib), _dev(B, lib), _dev(C, lib), ins, **extra, **dkw)
            assert np.array_equal(_back(d, lib), ref), (instr, klass, extra)
        ref = emulate.matmul(A, B, None, ins, **kw)
        assert np.array_equal(_back(emulate.matmul(_dev(A, lib), _dev(B, lib), None, ins, **dkw),
                                    lib), ref)
        if not ins.scale:
            ref = emulate.matmul(A[:, :K - 1], B[:K - 1], C, ins, pad_k=True)
            d = emulate.matmul(_dev(A[:, :K - 1], lib), _dev(B[:K - 1], lib), _dev(C, lib), ins,
                               pad_k=True)
            assert np.array_equal(_back(d, lib), ref), (instr, klass, "pad_k")


@gpu
@needs_gpu
def test_gpu_lanes_accuracy_and_cpu_fallbacks():
    _need("torch")
    import torch
    ins, A, B, C = _gemm(F16, 50, 20, 64, seed=8, klass="special")
    ref = emulate.dot_lanes(ins, A[:, :32], A[:, 32:], C[:, 0])
    d = emulate.dot_lanes(ins, _dev(A[:, :32], "torch"), _dev(A[:, 32:], "torch"),
                          _dev(C[:, 0], "torch"))
    assert np.array_equal(_back(d, "torch"), ref)
    ref = emulate.matmul(A, B, C, ins, split_k=2)
    d = emulate.matmul(_dev(A, "torch"), _dev(B, "torch"), _dev(C, "torch"), ins, split_k=2,
                       device="cpu")
    assert np.array_equal(_back(d, "torch"), ref)
    x, y, z = accuracy.sample("dnn", 128, 64, seed=2)
    r = accuracy.evaluate(F16, x, y, z)
    g = accuracy.evaluate(F16, torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda(),
                          torch.from_numpy(z).cuda())
    assert np.array_equal(r.err, g.err) and np.array_equal(r.err_ulp, g.err_ulp)
    # a sparse instruction has no GPU form: the CPU path on host copies, D back on the device
    sp = next(i for i in isa.instructions() if i.sparse and not i.integer and i.a == "f16")
    rng = np.random.default_rng(0)
    Ad = _rand(sp.a, (sp.m, sp.k), rng)
    Ad.reshape(-1, 4)[:, 2:] = 0                                # 2 of every 4 kept
    Bd, Cd = _rand(sp.b, (sp.k, sp.n), rng), _rand(sp.c, (sp.m, sp.n), rng)
    ref = simulate(sp, Ad, Bd, Cd)
    assert np.array_equal(_back(simulate(sp, _dev(Ad, "cupy"), _dev(Bd, "cupy"),
                                         _dev(Cd, "cupy")), "cupy"), ref)


@gpu
@needs_gpu
def test_gpu_bad_device_input_is_one_line_value_error():
    _need("torch")
    import torch
    ins, A, B, C, _ = _tiles(F16)
    f32 = torch.from_numpy(np.float32([[1.5] * 16] * 16)).cuda()
    ok = simulate(ins, f32, _dev(B[0], "torch"), _dev(C[0], "torch"))   # exact: cast, then GPU
    assert np.array_equal(_back(ok, "torch"),
                          simulate(ins, np.float32([[1.5] * 16] * 16), B[0], C[0]))
    fp4 = isa.lookup(FP4)
    _, A4, B4, C4, kw4 = _tiles(FP4, T=1)
    A4[0, 2, 7] = 0x1F
    with pytest.raises(ValueError) as host:
        simulate(fp4, A4, B4, C4, **kw4)
    with pytest.raises(ValueError) as dev:
        simulate(fp4, _dev(A4, "cupy"), _dev(B4, "cupy"), _dev(C4, "cupy"),
                 **{k: _dev(v, "cupy") for k, v in kw4.items()})
    assert str(dev.value) == str(host.value)
    bad = [
        (lambda: simulate(ins, _dev(A, "torch", torch.int16), _dev(B, "torch"), _dev(C, "torch")),
         r"raw bits must be unsigned \(uint16\), got int16 \(use \.view\(torch\.uint16\)\)"),
        (lambda: simulate(ins, _dev(A, "torch"), _dev(B, "torch"), _dev(C[..., :4], "torch")),
         r"C must have shape \(\.\.\., 16, 8\), got \(3, 16, 4\)"),
        (lambda: simulate(ins, _dev(A, "torch"), B, _dev(C, "torch")), "different devices"),
        (lambda: simulate(ins, f32 + 2 ** -20, _dev(B[0], "torch"), _dev(C[0], "torch")),
         "not exactly representable in f16"),
        (lambda: emulate.matmul(_dev(A[0], "cupy"), _dev(B[0, :8], "cupy"), None, ins),
         "inner dimensions differ"),
        (lambda: emulate.matmul(_dev(A[0], "cupy"), _dev(B[0], "cupy"), None, ins, split_k=2),
         "split_k must be in 1..1"),
    ]
    for call, msg in bad:
        with pytest.raises(ValueError, match=msg) as e:
            call()
        assert "\n" not in str(e.value)


@gpu
@needs_gpu
@pytest.mark.parametrize("instr", [F16, AMD, MX])
def test_gpu_dot_lanes_runs_on_the_device(instr, monkeypatch):
    """dot_lanes on CuPy arrays (a, b sliced from one matrix: not contiguous) validates and runs
    on the device: the host runner is never called, and the bits equal the numpy path's,
    block scales included."""
    from mmaformal import cuda
    ins = isa.lookup(instr)
    rng = np.random.default_rng(11)
    K = 4 * ins.k
    X = _rand(ins.a, (40, 2 * K), rng)
    c = _rand(ins.c, (40,), rng)
    kw = {}
    if ins.scale:
        nb = K // ins.scale_block
        kw = {"scale_a": rng.integers(0x70, 0x90, (40, nb)).astype(np.uint8),
              "scale_b": rng.integers(0x70, 0x90, (40, nb)).astype(np.uint8)}
    ref = emulate.dot_lanes(ins, X[:, :K], X[:, K:], c, **kw)

    def no_host(*a, **k):
        raise AssertionError("device lanes went through the host runner")
    monkeypatch.setattr(cuda.DotModule, "lanes_host", no_host)
    Xd = _dev(X, "cupy")
    kd = {r: _dev(v, "cupy") for r, v in kw.items()}
    d = emulate.dot_lanes(ins, Xd[:, :K], Xd[:, K:], _dev(c, "cupy"), **kd)
    assert np.array_equal(_back(d, "cupy"), ref)
