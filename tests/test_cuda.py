"""The CUDA target of the tracer (mmaformal.cuda) and the device= front ends.

CPU side (always, or when nvcc is present):
- the emitted `step` function, compiled as host C++ by g++ (int is 32 bits there too, so the
  32-bit narrowing the emitter chose runs as it would on the GPU), gives the C path's bits on
  random raw bits of every input class, for every theory kind;
- the whole module (step + sim/lanes/gemm kernels) compiles with nvcc (skipped without nvcc);
- --device cuda without a usable GPU: exit 2, one line; auto falls back and says so.
GPU side (`-m gpu`, skipped without CuPy and a GPU): simulate and emulate.matmul on the GPU
against the CPU path bit for bit (every theory kind, all input classes; GEMMs with split_k,
pad_k, scales; sampled rows of a large GEMM).
"""
from __future__ import annotations

import ctypes
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mmaformal import classes, cuda, emulate, fp, isa
from mmaformal import theory as T
from mmaformal.cli import main
from mmaformal.simulate import simulate

#: one instruction of every theory kind (model / op / block scales / f64)
KINDS = {
    "t_fdpa": "sm90/mma.m16n8k16.f32.f16.f16.f32",
    "t_fdpa.f16out": "sm80/mma.m16n8k16.f16.f16.f16.f16",
    "t_fdpa.tf32": "sm90/mma.m16n8k8.f32.tf32.tf32.f32",
    "st_fdpa.scaled": "sm100/tcgen05.mma.m128n8k32.kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.ue8m0",
    "gst_fdpa.scaled": "sm100/tcgen05.mma.m128n8k64.kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.ue8m0",
    "e_fdpa": "gfx908/v_mfma_f32_32x32x8f16",
    "ftz_addmul": "gfx90a/v_mfma_f32_32x32x8f16",
    "tr_fdpa": "gfx942/v_mfma_f32_32x32x8_f16",
    "gtr_fdpa": "gfx942/v_mfma_f32_16x16x32_fp8_fp8",
    "fma_chain.f32": "gfx908/v_mfma_f32_32x32x2f32",
    "fma_chain.f64": "sm90/mma.m16n8k4.f64.f64.f64.f64",
    "hmma_fp8_chain": "sm90/mma.m16n8k32.f32.e4m3.e4m3.f32",
    "int_chain": "sm80/mma.m16n8k32.s32.s8.s8.s32",
    "int_chain.satfinite": "sm80/mma.m16n8k32.satfinite.s32.s8.s8.s32",
    "fpu_dot": "sm90/mma.m8n8k4.f16.f16.f16.f16",
}


def _ins_th(name):
    ins = isa.lookup(name)
    return ins, T.default().resolve(ins, None)


def _lanes(ins, n, seed):
    """Raw-bit lanes of every input class: a, b (n*classes, k), c, scales (n*classes, nb)."""
    rng = np.random.default_rng(seed)
    parts = [classes.generate(kl, ins.a, ins.b, ins.c, ins.k, n, rng) for kl in classes.CLASSES]
    a = np.concatenate([p[0] for p in parts])
    b = np.concatenate([p[1] for p in parts])
    c = np.concatenate([p[2] for p in parts])
    sa = sb = None
    if ins.scale:
        nb = ins.k // ins.scale_block
        f = fp.fmt(ins.scale)
        sa = rng.integers(0, 1 << (f.k + f.pad), size=(len(a), nb)).astype(np.uint8)
        sb = rng.integers(0, 1 << (f.k + f.pad), size=(len(a), nb)).astype(np.uint8)
    return a, b, c, sa, sb


def test_kinds_cover_every_op():
    """Every op of a dense instruction is among KINDS (sparse ones run on the CPU path)."""
    ops = {_ins_th(n)[1].op for n in KINDS.values()}
    all_ops = {T.default().resolve(i, None).op for i in isa.instructions() if not i.sparse}
    assert all_ops <= ops, all_ops - ops
    sp = next(i for i in isa.instructions() if i.sparse)
    assert cuda.supported(T.default().resolve(sp, None), sp)[0] is False


# ------------------------------------------------------------------------------------------
# CPU side: the emitted source run as host C++


_UT = {8: "unsigned char", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}


def _host_step(ins, th, tmp: Path):
    """The emitted `step` compiled by g++ for the host, as a ctypes function over lanes."""
    src = cuda.step_source(th, ins)
    st = [fp.fmt(f).storage for f in (ins.a, ins.b, ins.c, ins.d)]
    nb = ins.k // ins.scale_block if ins.scale else 0
    ins_st = [st[0]] * ins.k + [st[1]] * ins.k + [st[2]] + [8] * (2 * nb)
    params = ", ".join(f"const {_UT[s]}* x{i}" for i, s in enumerate(ins_st))
    args = ", ".join(f"x{i}[l]" for i in range(len(ins_st)))
    wrapper = (f'extern "C" int run(long long n, {params}, {_UT[st[3]]}* y) {{\n'
               f"    int bad = 0;\n    for (long long l = 0; l < n; l++) y[l] = step({args}, bad);\n"
               f"    return bad;\n}}\n")
    code = "#define __device__\n#define __forceinline__ inline\n" + src + wrapper
    cpp = tmp / "step.cpp"
    so = tmp / "step.so"
    cpp.write_text(code)
    r = subprocess.run(["g++", "-O1", "-w", "-shared", "-fPIC", "-o", str(so), str(cpp)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    lib = ctypes.CDLL(str(so))
    return lib.run, ins_st, st[3]


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_emitted_source_matches_c_path(kind, tmp_path):
    ins, th = _ins_th(KINDS[kind])
    run, ins_st, out_st = _host_step(ins, th, tmp_path)
    a, b, c, sa, sb = _lanes(ins, 300, seed=len(kind))
    n = len(a)
    cols = [np.ascontiguousarray(a[:, t]) for t in range(ins.k)]
    cols += [np.ascontiguousarray(b[:, t]) for t in range(ins.k)] + [np.ascontiguousarray(c)]
    if sa is not None:
        cols += [np.ascontiguousarray(sa[:, q]) for q in range(sa.shape[1])]
        cols += [np.ascontiguousarray(sb[:, q]) for q in range(sb.shape[1])]
    y = np.empty(n, dtype={8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[out_st])
    bad = run(ctypes.c_longlong(n), *[x.ctypes.data_as(ctypes.c_void_p) for x in cols],
              y.ctypes.data_as(ctypes.c_void_p))
    assert bad == 0
    (ref,) = emulate.step_kernel(ins, th)(*cols)
    diff = np.flatnonzero(y != ref)
    assert diff.size == 0, (f"{ins.name}: {diff.size} of {n} lanes differ, first lane {diff[0]}: "
                            f"got {hex(int(y[diff[0]]))}, C path {hex(int(ref[diff[0]]))}")


def _host_split(ins, th, tmp_path, facts=None, sfx="_f"):
    """The split step (decA / decB per row, or decA1 / decB1 per element, then rest), traced
    under `facts` when given (its functions named with sfx), composed on the host by g++:
    (run(columns) -> y, per)."""
    src, ia, ib, per = cuda.split_step_source(th, ins, facts, sfx=sfx)
    sfx = sfx if facts else ""
    st = [fp.fmt(f).storage for f in (ins.a, ins.b, ins.c, ins.d)]
    k, nb = ins.k, (ins.k // ins.scale_block if ins.scale else 0)
    ins_st = [st[0]] * k + [st[1]] * k + [st[2]] + [8] * (2 * nb)
    A = list(range(k)) + list(range(2 * k + 1, 2 * k + 1 + nb))
    B = list(range(k, 2 * k)) + list(range(2 * k + 1 + nb, 2 * k + 1 + 2 * nb))
    body = "".join(f"{t} {n}; " for t, n in ia + ib)
    for g, X, iface in (("A", A, ia), ("B", B, ib)):
        if per[g] is None:
            body += f"dec{g}{sfx}(" + "".join(f"x{i}[l], " for i in X) + "".join(f"{n}, " for _, n in iface) + "bad); "
            continue
        otypes, where = per[g]
        for e in range(k):
            outs = [next(n for n, (ee, j) in where.items() if ee == e and j == q) for q in range(len(otypes))]
            body += f"dec{g}1{sfx}(x{X[e]}[l], {', '.join(outs)}, bad); "
    body += f"y[l] = rest{sfx}(" + "".join(f"{n}, " for _, n in ia + ib) + f"x{2 * k}[l], bad);"
    params = ", ".join(f"const {_UT[s]}* x{i}" for i, s in enumerate(ins_st))
    code = ("#define __device__\n#define __forceinline__ inline\n" + src
            + f'extern "C" int run(long long n, {params}, {_UT[st[3]]}* y) {{ int bad = 0; '
              f"for (long long l = 0; l < n; l++) {{ {body} }} return bad; }}\n")
    (tmp_path / "s.cpp").write_text(code)
    r = subprocess.run(["g++", "-O1", "-w", "-shared", "-fPIC", "-o", str(tmp_path / "s.so"),
                        str(tmp_path / "s.cpp")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    lib = ctypes.CDLL(str(tmp_path / "s.so"))

    def run(cols, flagged=False):
        """y; with flagged=True, (y, whether a range check failed) instead of asserting none."""
        y = np.empty(len(cols[0]), dtype={16: np.uint16, 32: np.uint32, 64: np.uint64}[st[3]])
        bad = lib.run(ctypes.c_longlong(len(y)), *[x.ctypes.data_as(ctypes.c_void_p) for x in cols],
                      y.ctypes.data_as(ctypes.c_void_p))
        if flagged:
            return y, bool(bad)
        assert bad == 0
        return y
    return run, per


def _columns(ins, a, b, c, sa, sb):
    k, nb = ins.k, (ins.k // ins.scale_block if ins.scale else 0)
    cols = [np.ascontiguousarray(a[:, t]) for t in range(k)]
    cols += [np.ascontiguousarray(b[:, t]) for t in range(k)] + [np.ascontiguousarray(c)]
    if sa is not None:
        cols += [np.ascontiguousarray(sa[:, q]) for q in range(nb)]
        cols += [np.ascontiguousarray(sb[:, q]) for q in range(nb)]
    return cols


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_split_step_is_the_step(kind, tmp_path):
    """The GEMM's split of the step composed on the host gives the C path's bits."""
    ins, th = _ins_th(KINDS[kind])
    run, per = _host_split(ins, th, tmp_path)
    cols = _columns(ins, *_lanes(ins, 300, seed=len(kind) + 1))
    (ref,) = emulate.step_kernel(ins, th)(*cols)
    assert np.array_equal(run(cols), ref)
    if not ins.scale:                  # the per-element decode applies to unscaled operands
        assert per["A"] is not None and per["B"] is not None


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
@pytest.mark.parametrize("level", ["finite", "normal"])
@pytest.mark.parametrize("kind", ["t_fdpa", "t_fdpa.f16out", "t_fdpa.tf32", "tr_fdpa",
                                  "e_fdpa", "ftz_addmul", "hmma_fp8_chain", "st_fdpa.scaled"])
def test_specialised_step_is_the_step_where_its_facts_hold(kind, level, tmp_path):
    """A step traced under "every A and B element finite" (or "normal": finite, not zero, not
    subnormal), the GEMM's fast paths, gives the C path's bits on every lane whose A and B
    elements satisfy the facts; on the other lanes it is wrong somewhere (the facts are what
    it relies on), which is why the GEMM checks them per tile."""
    from mmaformal.cuda_source import operand_facts
    ins, th = _ins_th(KINDS[kind])
    facts = operand_facts(ins, level)
    assert facts, kind
    run, _ = _host_split(ins, th, tmp_path, facts, "_n" if level == "normal" else "_f")
    a, b, c, sa, sb = _lanes(ins, 600, seed=len(kind) + 7)
    if level == "normal":                # lanes of ordinary values, some with a zero or a subnormal
        rng = np.random.default_rng(3)
        for x, f in ((a, ins.a), (b, ins.b)):
            fm = fp.fmt(f)
            mant = rng.integers(0, 1 << (fm.t + fm.pad), size=x.shape, dtype=np.uint64)
            ex = rng.integers(1, (1 << fm.w) - 1, size=x.shape, dtype=np.uint64)
            sg = rng.integers(0, 2, size=x.shape, dtype=np.uint64)
            x[:] = ((sg << np.uint64(fm.k - 1 + fm.pad)) | (ex << np.uint64(fm.t + fm.pad)) | mant).astype(x.dtype)
            rows = rng.choice(len(x), size=len(x) // 4, replace=False)
            x[rows, rng.integers(0, x.shape[1], size=len(rows))] = rng.integers(0, 1 << (fm.t + fm.pad), size=len(rows)).astype(x.dtype)
    holds = np.ones(len(a), dtype=bool)
    for i, f in facts.items():
        col = a[:, i] if i < ins.k else b[:, i - ins.k]
        holds &= np.array([f.holds(int(x)) for x in col])
    assert 200 < holds.sum() < len(a), holds.sum()
    cols = _columns(ins, a, b, c, sa, sb)
    (ref,) = emulate.step_kernel(ins, th)(*cols)
    assert np.array_equal(run([x[holds] for x in cols]), ref[holds])
    # elsewhere: a different output, or a range check that fails (the GEMM never runs it there)
    y, bad = run([x[~holds] for x in cols], flagged=True)
    assert bad or (y != ref[~holds]).any()


def test_emitter_narrows_to_32_bits():
    """Most values of an f16 step are held in int32 (the point of the interval analysis)."""
    ins, th = _ins_th(KINDS["t_fdpa"])
    src = cuda.step_source(th, ins)
    n32 = src.count("\n    int v")
    n64 = src.count("\n    long long v")
    assert n32 > 5 * n64 > 0, (n32, n64)
    # an f64 step needs __int128 and says so to NVRTC
    ins, th = _ins_th(KINDS["fma_chain.f64"])
    src = cuda.module_source(th, ins)
    assert "__int128" in src and "--device-int128" in cuda._options(src)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
@pytest.mark.parametrize("kind", ["t_fdpa", "fma_chain.f64", "st_fdpa.scaled", "gst_fdpa.scaled",
                                  "hmma_fp8_chain"])
def test_module_compiles_with_nvcc(kind, tmp_path):
    ins, th = _ins_th(KINDS[kind])
    for which in ("gemm", "sim"):
        src = cuda.module_source(th, ins, (32, 32, 2, 2, 1), which=which)
        cu = tmp_path / f"{which}.cu"
        cu.write_text(src)
        r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-std=c++17", "-w", "-o",
                            str(tmp_path / f"{which}.cubin"), str(cu)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]


# ------------------------------------------------------------------------------------------
# device= without a GPU


def _have_gpu() -> bool:
    return cuda.available()[0]


@pytest.mark.skipif(_have_gpu(), reason="a GPU is usable here")
def test_device_cuda_without_gpu_is_one_line_exit_2(tmp_path, capsys):
    ins = isa.lookup(KINDS["t_fdpa"])
    np.save(tmp_path / "a.npy", np.zeros((16, 16), np.uint16))
    np.save(tmp_path / "b.npy", np.zeros((16, 8), np.uint16))
    np.save(tmp_path / "c.npy", np.zeros((16, 8), np.uint32))
    base = ["--a", str(tmp_path / "a.npy"), "--b", str(tmp_path / "b.npy"), "--c",
            str(tmp_path / "c.npy"), "--out", str(tmp_path / "d.npy")]
    for verb in (["simulate", ins.name], ["emulate", ins.name]):
        assert main(verb + base + ["--device", "cuda"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "--device cuda" in err, err
    assert main(["accuracy", ins.name, "--n", "10", "--device", "cuda"]) == 2
    assert "--device cuda" in capsys.readouterr().err
    with pytest.raises(ValueError, match="device cuda"):
        simulate(ins, np.zeros((16, 16), np.uint16), np.zeros((16, 8), np.uint16),
                 np.zeros((16, 8), np.uint32), device="cuda")
    with pytest.raises(ValueError, match="device must be one of"):
        emulate.matmul(np.zeros((16, 16), np.uint16), np.zeros((16, 8), np.uint16), None, ins,
                       device="tpu")
    # auto: the CPU, and --json says so
    assert main(["simulate", ins.name] + base + ["--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["device"] == "cpu" and info["device_note"].startswith("no GPU path")
    assert main(["emulate", ins.name] + base + ["--json", "--device", "auto"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["device"] == "cpu" and "no GPU path" in info["device_note"]


# ------------------------------------------------------------------------------------------
# GPU side


gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not _have_gpu(), reason="no usable GPU (CuPy + NVIDIA device)")


@gpu
@needs_gpu
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_gpu_simulate_matches_cpu(kind):
    ins, th = _ins_th(KINDS[kind])
    rng = np.random.default_rng(7)
    T_ = 6
    a, b, c, sa, sb = _lanes(ins, T_ * ins.m, seed=11)
    # tiles of every class: rows of the lane arrays become tile rows
    nt = len(a) // ins.m
    A = a[:nt * ins.m].reshape(nt, ins.m, ins.k)
    Bl = _lanes(ins, T_ * ins.n, seed=12)
    ntb = len(Bl[1]) // ins.n
    nt = min(nt, ntb)
    A = A[:nt]
    B = np.swapaxes(Bl[1][:nt * ins.n].reshape(nt, ins.n, ins.k), -1, -2)
    C = rng.permutation(np.resize(c, nt * ins.m * ins.n)).reshape(nt, ins.m, ins.n)
    kw = {}
    if ins.scale:
        nb = ins.k // ins.scale_block
        kw["scale_a"] = np.resize(sa, (nt, ins.m, nb))
        kw["scale_b"] = np.swapaxes(np.resize(sb, (nt, ins.n, nb)), -1, -2)
    d_gpu = simulate(ins, A, B, C, theory=th, device="cuda", **kw)
    d_cpu = simulate(ins, A, B, C, theory=th, device="cpu", **kw)
    assert d_gpu.dtype == d_cpu.dtype and d_gpu.shape == d_cpu.shape
    diff = np.argwhere(d_gpu != d_cpu)
    assert diff.size == 0, f"{ins.name}: {len(diff)} outputs differ, first at {diff[0]}"


@gpu
@needs_gpu
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_gpu_dot_lanes_matches_cpu(kind):
    ins, th = _ins_th(KINDS[kind])
    if ins.c != ins.d:
        pytest.skip("C and D formats differ: one step only")
    a, b, c, sa, sb = _lanes(ins, 200, seed=5)
    a2, b2 = np.concatenate([a, a[::-1]], 1), np.concatenate([b, b[::-1]], 1)
    kw = {}
    if ins.scale:
        kw = {"scale_a": np.concatenate([sa, sa[::-1]], 1), "scale_b": np.concatenate([sb, sb[::-1]], 1)}
    g = emulate.dot_lanes(ins, a2, b2, c, theory=th, device="cuda", **kw)
    r = emulate.dot_lanes(ins, a2, b2, c, theory=th, device="cpu", **kw)
    assert np.array_equal(g, r)


def _gemm_inputs(ins, M, N, K, seed, klass="bits"):
    rng = np.random.default_rng(seed)
    a, _, c, _, _ = classes.generate(klass, ins.a, ins.b, ins.c, K, M, rng) + (None, None)
    _, bt, _ = classes.generate(klass, ins.a, ins.b, ins.c, K, N, rng)
    C = np.resize(c, M * N).reshape(M, N)
    return np.ascontiguousarray(a), np.ascontiguousarray(bt.T), C


@gpu
@needs_gpu
@pytest.mark.parametrize("kind", ["t_fdpa", "tr_fdpa", "fma_chain.f64", "hmma_fp8_chain",
                                  "st_fdpa.scaled", "ftz_addmul"])
@pytest.mark.parametrize("klass", ["bits", "normal", "cancel", "special"])
def test_gpu_matmul_matches_cpu(kind, klass):
    ins, th = _ins_th(KINDS[kind])
    M, N, K = 67, 45, ins.k * 5
    A, B, C = _gemm_inputs(ins, M, N, K, seed=3, klass=klass)
    kw = {}
    if ins.scale:
        rng = np.random.default_rng(9)
        nb = K // ins.scale_block
        kw = {"scale_a": rng.integers(0x70, 0x90, (M, nb)).astype(np.uint8),
              "scale_b": rng.integers(0x70, 0x90, (nb, N)).astype(np.uint8)}
    for extra in ({}, {"split_k": 3}):
        g = emulate.matmul(A, B, C, ins, theory=th, device="cuda", **extra, **kw)
        r = emulate.matmul(A, B, C, ins, theory=th, device="cpu", **extra, **kw)
        assert np.array_equal(g, r), (kind, klass, extra, int((g != r).sum()))
    if not ins.scale:                  # pad_k: K not a multiple of k (zero-padded)
        g = emulate.matmul(A[:, :K - 1], B[:K - 1], C, ins, theory=th, device="cuda", pad_k=True)
        r = emulate.matmul(A[:, :K - 1], B[:K - 1], C, ins, theory=th, device="cpu", pad_k=True)
        assert np.array_equal(g, r)


@gpu
@needs_gpu
def test_gpu_matmul_chunked_and_sampled_rows(monkeypatch):
    """A GEMM processed in many chunks (a small memory budget) equals the CPU path on
    sampled rows; NaN payloads and -0 survive."""
    ins, th = _ins_th(KINDS["t_fdpa"])
    M, N, K = 1000, 700, 512
    A, B, C = _gemm_inputs(ins, M, N, K, seed=1, klass="normal")
    A[0, :] = 0x8000                 # -0 row: the result keeps C's bits or +0 per the theory
    C[1, 2] = 0x7FC01234             # a NaN payload in C
    monkeypatch.setenv("MMAFORMAL_GPU_MEM", str(2 * 1024 * 1024))
    g = emulate.matmul(A, B, C, ins, theory=th, device="cuda")
    rows = [0, 1, 2, 517, 998, 999]
    r = emulate.matmul(A[rows], B, C[rows], ins, theory=th, device="cpu")
    assert np.array_equal(g[rows], r)


@gpu
@needs_gpu
@pytest.mark.parametrize("kind", ["t_fdpa", "t_fdpa.tf32", "tr_fdpa", "t_fdpa.f16out"])
def test_gpu_specialised_gemm_falls_back_where_a_tile_is_not_finite(kind):
    """Ordinary operands with an Inf, a NaN (payload), subnormals and -0 planted in a few
    K-steps of a few rows and columns: the blocks and K-steps that hold them run the general
    step, the others the specialised one, with the accumulator carried across both; the GEMM
    equals the CPU path bit for bit, and the general-only kernel too. (The fp8 chain's two
    decoded tiles do not fit the shared memory of one stage: it runs the general step.)"""
    ins, th = _ins_th(KINDS[kind])
    M, N, K = 150, 140, ins.k * 9
    A, B, C = _gemm_inputs(ins, M, N, K, seed=5, klass="normal")
    fa, fb = fp.fmt(ins.a), fp.fmt(ins.b)
    A[3, ins.k * 2 + 1] = (fa.inf_code << fa.pad) if fa.nan == "ieee" else fp.default_nan(fa)
    A[70, ins.k * 5] = fp.default_nan(fa) | (1 << fa.pad)
    B[ins.k * 7 + 2, 100] = fp.default_nan(fb)
    A[120, :ins.k] = 1 << fa.pad                     # subnormals
    B[ins.k * 4, :] = fb.sign_bit << fb.pad
    mod = cuda.dot_module(th, ins)
    assert mod.specialised, kind
    g = emulate.matmul(A, B, C, ins, theory=th, device="cuda")
    r = emulate.matmul(A, B, C, ins, theory=th, device="cpu")
    assert np.array_equal(g, r), int((g != r).sum())
    import cupy as cp
    gen = cuda.dot_module(th, ins, facts=False)
    assert not gen.specialised
    Ad, Bd, Cd = cp.asarray(A), cp.asarray(B), cp.asarray(C)
    d0 = mod.gemm_device(Ad, Bd, Cd, None, None, 0, K // ins.k).get()
    d1 = gen.gemm_device(Ad, Bd, Cd, None, None, 0, K // ins.k).get()
    assert np.array_equal(d0, r) and np.array_equal(d1, r)


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_fact_check_in_c_is_the_fact(tmp_path):
    """Fact.c_check, the run-time test the GEMM kernel makes of every raw A and B element, is
    Fact.holds on every 16-bit code (f16 and bf16, "finite" and "normal") and on tf32's
    padded codes (the ignored low bits set or not)."""
    from mmaformal.cuda_source import element_fact
    cases = [(f, lev) for f in ("f16", "bf16", "tf32", "e4m3", "e5m2") for lev in ("finite", "normal")]
    body = ""
    for q, (f, lev) in enumerate(cases):
        body += f"if (w == {q}) return {element_fact(f, lev).c_check('x')};\n"
    (tmp_path / "c.cpp").write_text(f'extern "C" int chk(int w, unsigned long long x) {{\n{body}return -1; }}\n')
    r = subprocess.run(["g++", "-O1", "-w", "-shared", "-fPIC", "-o", str(tmp_path / "c.so"),
                        str(tmp_path / "c.cpp")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    chk = ctypes.CDLL(str(tmp_path / "c.so")).chk
    chk.argtypes = [ctypes.c_int, ctypes.c_ulonglong]
    rng = np.random.default_rng(0)
    for q, (f, lev) in enumerate(cases):
        fact = element_fact(f, lev)
        fm = fp.fmt(f)
        codes = (range(1 << 16) if fm.storage == 16 else range(1 << 8) if fm.storage == 8
                 else [int(x) for x in rng.integers(0, 1 << 32, size=20000, dtype=np.uint64)]
                 + [(1 << fm.pad) * v for v in (0, 1, (1 << fm.t), fm.inf_code, fm.inf_code - 1)])
        got = [chk(q, x) for x in codes]
        want = [int(fact.holds(x)) for x in codes]
        assert got == want, (f, lev)
        assert 0 < sum(want) < len(want)
