"""Run one MMA instruction on a Hopper GPU, raw bits in and raw bits out (layer 5, ``hw``).

``run(name, a, b, c) -> d`` takes numpy unsigned-integer arrays holding bit patterns (A is
(..., M, K), B (..., K, N), C (..., M, N); uint8 for e4m3/e5m2, uint16 for f16/bf16, uint32 for
f32 and tf32, uint64 for f64; the leading batch dimensions are independent tiles) and returns D
(..., M, N) as bit patterns of the instruction's dtype. Nothing goes through host floats: the
operands are gathered into the kernels' fragment images on the GPU (index tables from
:mod:`mmaformal.hw.kernels`), one MMA instruction runs per tile, and D is scattered back.
``wmma.mma`` names run the same way (one warp per tile; their images are plain matrices that
the WMMA API's load_matrix_sync reads).

Kernels are compiled at run time for ``sm_90a`` (``-gencode=arch=compute_90a,code=sm_90a``) with
nvcc when it is on the machine (else NVRTC through CuPy), cached on disk by source hash
(``$MMAFORMAL_HW_CACHE``, default ``~/.cache/mmaformal/hw``) and in memory, and loaded with
``cupy.RawModule``. Huge batches are processed in chunks (``chunk_bytes``).

Errors: no CuPy / no GPU / not sm_90 / no compiler -> :class:`HardwareUnavailable` (one-line
message; the CLI maps it to exit 2). Wrong shapes or dtypes -> ValueError naming what was expected.

May import: numpy, :mod:`mmaformal.hw.kernels`; cupy only lazily, inside functions.
Invariant: raw bits in, raw bits out.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import kernels
from .kernels import KERNEL_NAME, spec as _spec

__all__ = [
    "HardwareUnavailable", "need_gpu",
    "available",
    "run",
    "run_images",
    "compile_cubin",
    "device_info",
    "instructions",
]

ARCH_FLAG = "-gencode=arch=compute_90a,code=sm_90a"
NVRTC_ARCH = "--gpu-architecture=sm_90a"
DEFAULT_CHUNK_BYTES = 1 << 30

instructions = kernels.instructions


class HardwareUnavailable(RuntimeError):
    """No usable Hopper GPU / CuPy / compiler: the CLI turns this into exit code 2."""


# ---------------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------------


def _cupy():
    try:
        import cupy  # noqa: PLC0415  (lazy on purpose: no heavy import at module import)
    except Exception as e:  # ImportError, or a broken CUDA install
        raise HardwareUnavailable(f"CuPy is not importable ({type(e).__name__}: {e})".split("\n")[0])
    return cupy


def nvcc_path() -> str | None:
    """The nvcc executable (``$MMAFORMAL_NVCC``, PATH, ``$CUDA_HOME/bin``, /usr/local/cuda/bin)."""
    cand = [os.environ.get("MMAFORMAL_NVCC"), shutil.which("nvcc")]
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            cand.append(os.path.join(root, "bin", "nvcc"))
    for c in cand:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


@lru_cache(maxsize=None)
def nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    lines = [ln for ln in out.splitlines() if "release" in ln]
    return lines[-1].strip() if lines else out.strip().splitlines()[-1]


def _backend() -> str:
    b = os.environ.get("MMAFORMAL_HW_BACKEND", "").lower()
    if b in ("nvcc", "nvrtc"):
        return b
    return "nvcc" if nvcc_path() else "nvrtc"


def _device():
    cp = _cupy()
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        raise HardwareUnavailable(f"no CUDA device ({type(e).__name__}: {e})".split("\n")[0])
    if n == 0:
        raise HardwareUnavailable("no CUDA device")
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    if (props["major"], props["minor"]) != (9, 0):
        raise HardwareUnavailable(
            f"device {dev.id} ({name}) is sm_{props['major']}{props['minor']}; "
            "the harness needs sm_90a (Hopper: H100/H200)")
    return cp, dev, props, name


def device_info() -> dict:
    """Device name, compute capability, driver and runtime versions, SM count, CuPy version."""
    cp, dev, props, name = _device()
    return {
        "device": name,
        "cc": f"{props['major']}.{props['minor']}",
        "sms": int(props["multiProcessorCount"]),
        "driver": cp.cuda.runtime.driverGetVersion(),
        "runtime": cp.cuda.runtime.runtimeGetVersion(),
        "cupy": cp.__version__,
        "backend": _backend(),
        "nvcc": nvcc_version(nvcc_path()) if nvcc_path() else None,
    }


def available() -> tuple[bool, str]:
    """(True, description) when run() can work here, else (False, one-line reason)."""
    try:
        cp, dev, props, name = _device()
        if _backend() == "nvrtc":
            try:
                cp.cuda.nvrtc.getVersion()
            except Exception as e:
                raise HardwareUnavailable(f"neither nvcc nor NVRTC is usable ({e})")
    except HardwareUnavailable as e:
        return False, str(e)
    return True, f"{name} (sm_90a), CuPy {cp.__version__}, compiler {_backend()}"


def need_gpu() -> str:
    """For the verbs that need the GPU: the device description when run() can work here, else
    ValueError "no usable GPU: <why>" (one line; the command line's exit 2)."""
    ok, why = available()
    if not ok:
        raise ValueError(f"no usable GPU: {why}")
    return why


# ---------------------------------------------------------------------------------------------
# Compilation
# ---------------------------------------------------------------------------------------------


def _cache_dir() -> Path:
    d = Path(os.environ.get("MMAFORMAL_HW_CACHE", Path.home() / ".cache" / "mmaformal" / "hw"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _compile_nvcc(src: str, out: Path, nvcc: str) -> None:
    with tempfile.TemporaryDirectory(prefix="mmaformal_hw_") as td:
        cu = Path(td) / "kernel.cu"
        cu.write_text(src)
        tmp = Path(td) / "kernel.cubin"
        r = subprocess.run([nvcc, "-cubin", ARCH_FLAG, "-o", str(tmp), str(cu)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"nvcc failed for sm_90a:\n{r.stderr.strip()}")
        shutil.move(str(tmp), str(out))


def _compile_nvrtc(src: str, out: Path) -> None:
    cp = _cupy()
    nvrtc = cp.cuda.nvrtc
    prog = nvrtc.createProgram(src, "kernel.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [NVRTC_ARCH])
        except Exception as e:
            raise RuntimeError(f"NVRTC failed for sm_90a: {e}\n{nvrtc.getProgramLog(prog)}")
        cubin = nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)
    out.write_bytes(cubin)


def compile_cubin(name: str, backend: str | None = None) -> Path:
    """Compile the tile kernel of ``name`` to an sm_90a cubin (disk-cached); return its path.

    Needs no GPU with the nvcc backend. Raises HardwareUnavailable when no compiler is found.
    """
    src = kernels.source(_spec(name).name)
    backend = backend or _backend()
    if backend == "nvcc":
        nvcc = nvcc_path()
        if nvcc is None:
            raise HardwareUnavailable("nvcc not found (set MMAFORMAL_NVCC or CUDA_HOME)")
        tag = f"nvcc|{ARCH_FLAG}|{nvcc_version(nvcc)}"
    else:
        cp = _cupy()
        tag = f"nvrtc|{NVRTC_ARCH}|{cp.cuda.nvrtc.getVersion()}"
    key = hashlib.sha256((tag + "\n" + src).encode()).hexdigest()[:32]
    out = _cache_dir() / f"{key}.cubin"
    if not out.exists():
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        if backend == "nvcc":
            _compile_nvcc(src, tmp, nvcc)
        else:
            _compile_nvrtc(src, tmp)
        os.replace(tmp, out)
    return out


_FUNCS: dict[str, object] = {}


def _function(name: str):
    name = _spec(name).name
    f = _FUNCS.get(name)
    if f is None:
        cp = _cupy()
        path = compile_cubin(name)
        mod = cp.RawModule(path=str(path))
        f = mod.get_function(KERNEL_NAME)
        _FUNCS[name] = f
    return f


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _sm_count() -> int:
    _, _, props, _ = _device()
    return int(props["multiProcessorCount"])


@lru_cache(maxsize=None)
def _device_tables(name: str, dev_id: int):
    cp = _cupy()
    tabs = kernels.operand_tables(name)
    inv = np.empty_like(tabs["d"])
    inv[tabs["d"]] = np.arange(len(tabs["d"]))
    return {k: cp.asarray(v) for k, v in tabs.items()} | {"d_inv": cp.asarray(inv)}


def run_images(name: str, a_img, b_img, c_img, desc: tuple[int, int] | None = None, e_img=None):
    """Run the tile kernel on device arrays already in image order.

    ``a_img`` (T, len(table a)) of A's storage dtype, likewise b, c; returns D images (T, len(
    table d)) of D's storage dtype (T counts kernel tiles: groups of ``spec.group`` tiles). ``desc`` = (LBO, SBO) overrides the wgmma descriptor strides
    (diagnostics only). Sub-byte A/B images hold one element per uint8 and are packed into
    32-bit registers here; ``e_img`` (T,) uint32 is the warp-uniform metadata word of each tile
    of a sparse form.
    """
    cp = _cupy()
    s = _spec(name)
    if s.sparse and s.family == "wgmma":
        raise ValueError(f"{s.name}: sparse wgmma runs through mmaformal.hw.wgmma_sp")
    f = _function(name)
    T = int(a_img.shape[0])
    d_img = cp.empty((T, len(kernels.operand_tables(s.name)["d"])), dtype=s.storage("d"))
    if T == 0:
        return d_img
    sms = _sm_count()
    a_img, b_img = _pack(cp, a_img, s.atype), _pack(cp, b_img, s.btype)
    args = [cp.ascontiguousarray(a_img), cp.ascontiguousarray(b_img),
            cp.ascontiguousarray(c_img), d_img, np.int64(T)]
    if s.family in ("mma", "wmma"):  # one warp per tile
        threads = 256
        blocks = min(-(-T // (threads // 32)), sms * 32)
        if s.sparse:
            if e_img is None or int(e_img.shape[0]) != T:
                raise ValueError(f"{s.name}: one metadata word per tile is needed")
            args.append(cp.ascontiguousarray(e_img))
    else:
        threads = 128
        blocks = min(T, sms * 16)
        lbo, sbo = desc or (kernels.WGMMA_LBO, kernels.WGMMA_SBO)
        args += [np.uint32(lbo), np.uint32(sbo)]
    f((blocks,), (threads,), tuple(args))
    return d_img


def _check(name: str, a, b, c):
    s = _spec(name)
    shapes = {"a": (s.m, s.a_cols), "b": (s.k, s.n), "c": (s.m, s.n)}
    fmts = {"a": s.atype, "b": s.btype, "c": s.ctype}
    arrs = {"a": a, "b": b, "c": c}
    batch = None
    for role in "abc":
        x = arrs[role]
        if not isinstance(x, np.ndarray):
            raise ValueError(f"{s.name}: {role.upper()} must be a numpy array of "
                             f"{s.storage(role)} bit patterns, got {type(x).__name__}")
        want = s.storage(role)
        if x.dtype != want:
            raise ValueError(f"{s.name}: {role.upper()} must hold {fmts[role]} bit patterns as "
                             f"{want}, got dtype {x.dtype}")
        if x.ndim < 2 or x.shape[-2:] != shapes[role]:
            raise ValueError(f"{s.name}: {role.upper()} must have shape (..., {shapes[role][0]}, "
                             f"{shapes[role][1]}), got {x.shape}")
        if batch is None:
            batch = x.shape[:-2]
        elif x.shape[:-2] != batch:
            raise ValueError(f"{s.name}: A, B, C must share their leading batch dimensions, got "
                             f"{a.shape}, {b.shape}, {c.shape}")
    return s, batch


def _check_int_range(s, role: str, x: np.ndarray) -> None:
    """Sub-byte formats live in the low bits of a uint8: anything above is an error."""
    fmt = {"a": s.atype, "b": s.btype}[role]
    bits = kernels.FORMAT_BITS[fmt]
    if bits < 8:
        bad = x >= (1 << bits)
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            raise ValueError(f"{s.name}: {role.upper()}{list(i)} = {int(x[i])} is outside "
                             f"0..{(1 << bits) - 1} ({fmt} is stored in the low {bits} bits)")


def run(name: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, *, meta: np.ndarray | None = None,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES, desc: tuple[int, int] | None = None) -> np.ndarray:
    """D = A*B + C on the GPU, one instruction per tile; raw bit patterns in and out.

    Sparse forms (``mma.sp``): A is dense (..., M, K) with the allowed zeros, or compressed
    (..., M, K/2) with ``meta`` (..., M, K/2), the position of every kept element inside its
    group (see :mod:`mmaformal.hw.sparse`). ``desc`` overrides the wgmma descriptor (LBO, SBO)
    strides: diagnostics only.
    """
    s0 = _spec(name)
    if s0.sparse and s0.family == "wgmma":
        raise ValueError(f"{s0.name}: sparse wgmma runs through mmaformal.hw.wgmma_sp.run "
                         "(per-thread metadata words)")
    if s0.sparse:
        return _run_sparse(s0, a, b, c, meta, chunk_bytes)
    if meta is not None:
        raise ValueError(f"{s0.name} is dense: it takes no metadata")
    return _run(name, a, b, c, chunk_bytes=chunk_bytes, desc=desc)


def _run_sparse(s, a, b, c, meta, chunk_bytes):
    from . import sparse  # noqa: PLC0415

    for role, x in (("a", a), ("b", b), ("c", c)):
        if not isinstance(x, np.ndarray):
            raise ValueError(f"{s.name}: {role.upper()} must be a numpy array")
    if meta is None:
        if a.shape[-1:] != (s.k,):
            raise ValueError(f"{s.name}: a dense A must have shape (..., {s.m}, {s.k}) (or pass "
                             f"the compressed (..., {s.m}, {s.k // 2}) with meta), got {a.shape}")
        if a.dtype != s.storage("a"):
            raise ValueError(f"{s.name}: A must hold {s.atype} bit patterns as "
                             f"{s.storage('a')}, got dtype {a.dtype}")
        a, meta = sparse.compress(a, s.atype)
    else:
        meta = np.asarray(meta)
        if meta.shape != a.shape:
            raise ValueError(f"{s.name}: meta must have the compressed A's shape {a.shape}, "
                             f"got {meta.shape}")
    _, batch = _check(s.name, a, b, c)
    T0 = int(np.prod(batch, dtype=np.int64)) if batch else 1
    ti, words, rows = sparse.tile_words(meta.reshape(T0, s.m, s.k // 2), s.atype, s.k)
    af, bf, cf = (np.ascontiguousarray(x).reshape(T0, *x.shape[-2:]) for x in (a, b, c))
    if len(ti) == T0:  # every tile's rows share one pattern (ti = 0..T0-1)
        d = _run(s.name, af, bf, cf, chunk_bytes=chunk_bytes, e=words)
    else:
        dl = _run(s.name, af[ti], bf[ti], cf[ti], chunk_bytes=chunk_bytes, e=words)
        d = np.empty((T0, s.m, s.n), dl.dtype)
        take = rows[ti] == words[:, None]          # (launches, M): rows this launch serves
        li, r = np.nonzero(take)
        d[ti[li], r] = dl[li, r]
    return d.reshape(*batch, s.m, s.n)


def _pack(cp, img, fmt: str):
    """Sub-byte elements (one per uint8) -> 32-bit words, element 0 in the low bits."""
    bits = kernels.FORMAT_BITS[fmt]
    if bits >= 8:
        return img
    per = 32 // bits
    sh = cp.asarray((np.arange(per, dtype=np.uint32) * bits).astype(np.uint32))
    w = img.reshape(img.shape[0], -1, per).astype(cp.uint32) << sh
    return w.sum(axis=-1, dtype=cp.uint32)


def _run(name: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, *,
         chunk_bytes: int = DEFAULT_CHUNK_BYTES, desc: tuple[int, int] | None = None,
         e: np.ndarray | None = None) -> np.ndarray:
    s, batch = _check(name, a, b, c)
    _check_int_range(s, "a", a)
    _check_int_range(s, "b", b)
    cp = _cupy()
    _device()
    T0 = int(np.prod(batch, dtype=np.int64)) if batch else 1
    G = s.group  # tiles per kernel tile (4 for f16 m8n8k4: one per quad-pair)
    T = -(-T0 // G)
    mk, kn, mn = G * s.m * s.a_cols, G * s.k * s.n, G * s.m * s.n

    def grouped(x, width):
        x = np.ascontiguousarray(x).reshape(T0, -1)
        if T * G != T0:  # pad the last group with zero tiles (their D is dropped)
            x = np.concatenate([x, np.zeros((T * G - T0, x.shape[1]), x.dtype)])
        return x.reshape(T, width)

    af, bf, cf = grouped(a, mk), grouped(b, kn), grouped(c, mn)
    d = np.empty((T, mn), dtype=s.storage("d"))
    per_tile = 2 * (mk * s.storage("a").itemsize + kn * s.storage("b").itemsize
                    + mn * s.storage("c").itemsize + 2 * mn * s.storage("d").itemsize)
    step = max(1, int(chunk_bytes) // per_tile)
    tabs = _device_tables(s.name, cp.cuda.Device().id)
    for lo in range(0, T, step):
        hi = min(T, lo + step)
        a_img = cp.take(cp.asarray(af[lo:hi]), tabs["a"], axis=1)
        b_img = cp.take(cp.asarray(bf[lo:hi]), tabs["b"], axis=1)
        c_img = cp.take(cp.asarray(cf[lo:hi]), tabs["c"], axis=1)
        e_img = None if e is None else cp.asarray(np.ascontiguousarray(e[lo:hi], np.uint32))
        d_img = run_images(s.name, a_img, b_img, c_img, desc, e_img)
        del a_img, b_img, c_img
        d[lo:hi] = cp.take(d_img, tabs["d_inv"], axis=1).get()
        del d_img
    return d.reshape(T * G, s.m * s.n)[:T0].reshape(*batch, s.m, s.n)
