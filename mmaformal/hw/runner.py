"""Run one MMA instruction on the GPU that is here, raw bits in and raw bits out (layer 5, ``hw``).

``run(name, a, b, c) -> d`` takes numpy unsigned-integer arrays holding bit patterns (A is
(..., M, K), B (..., K, N), C (..., M, N); uint8 for e4m3/e5m2, uint16 for f16/bf16, uint32 for
f32 and tf32, uint64 for f64; the leading batch dimensions are independent tiles) and returns D
(..., M, N) as bit patterns of the instruction's dtype. Nothing goes through host floats: the
operands are gathered into the kernels' images on the GPU (index tables from
:mod:`mmaformal.hw.layouts`), one MMA instruction runs per tile, and D is scattered back. This
is the one run path of every kind (mma, mma.sp, wgmma, wgmma.sp, wmma, tcgen05); the sparse
kinds differ only in the metadata words they pass (:mod:`mmaformal.hw.sparse`): one
warp-uniform word per tile (mma.sp), one word per thread (wgmma.sp, with the sparsity selector
``sel`` and a metadata map ``layout``).

Targets: the device's compute capability names its catalog architecture
(:func:`mmaformal.hw.forms.arch_of_cc`: sm_75, sm_80, sm_89, sm_90a, sm_100a, sm_120a); kernels
are compiled for that target with nvcc when it is on the machine (else NVRTC through CuPy),
cached on disk by source hash (``$MMAFORMAL_HW_CACHE``, default ``~/.cache/mmaformal/hw``) and in
memory, and loaded with ``cupy.RawModule``. A form of another architecture is refused in one
line (ValueError) before anything is compiled. Huge batches run in chunks (``chunk_bytes``).

Errors: no CuPy / no GPU / a device of no target / no compiler -> :class:`HardwareUnavailable`
(one-line message; the CLI maps it to exit 2). Wrong shapes or dtypes -> ValueError naming what
was expected.

May import: numpy, :mod:`mmaformal.hw.forms`, ``.layouts``, ``.kernels``, ``.sparse``; cupy only
lazily, inside functions. Invariant: raw bits in, raw bits out.
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

from . import sparse
from .forms import FORMAT_BITS, TARGETS, arch_of_cc, refuse_on, spec
from .kernels import KERNEL_NAME, source, tmem_cols
from .layouts import WGMMA_LBO, WGMMA_SBO, WGMMA_SP_LBO, WGMMA_SP_SBO_A, WGMMA_SP_SBO_B, \
    operand_tables

__all__ = [
    "HardwareUnavailable", "need_gpu", "available", "run", "run_words", "run_images",
    "compile_cubin", "device_info", "device_arch", "cupy", "device", "sm_count", "cache_dir",
    "compile_nvcc", "compile_nvrtc", "nvcc_path", "nvcc_version", "function", "device_tables",
]

DEFAULT_CHUNK_BYTES = 1 << 30


class HardwareUnavailable(RuntimeError):
    """No usable GPU / CuPy / compiler: the CLI turns this into exit code 2."""


# ---------------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------------


def cupy():
    """The cupy module; HardwareUnavailable (one line) when it cannot be imported."""
    try:
        import cupy as cp  # noqa: PLC0415  (lazy on purpose: no heavy import at module import)
    except Exception as e:  # ImportError, or a broken CUDA install
        raise HardwareUnavailable(f"CuPy is not importable ({type(e).__name__}: {e})".split("\n")[0])
    return cp


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


def device():
    """(cupy, device, properties, name) of the current CUDA device (any architecture)."""
    cp = cupy()
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        raise HardwareUnavailable(f"no CUDA device ({type(e).__name__}: {e})".split("\n")[0])
    if n == 0:
        raise HardwareUnavailable("no CUDA device")
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return cp, dev, props, name


def device_arch() -> str:
    """The catalog architecture of the device (sm75 .. sm120); HardwareUnavailable for a device
    of no harness target."""
    _, dev, props, name = device()
    arch = arch_of_cc(props["major"], props["minor"])
    if arch is None:
        raise HardwareUnavailable(
            f"device {dev.id} ({name}) is sm_{props['major']}{props['minor']}; the harness "
            f"targets {', '.join(t.name for t in TARGETS.values())}")
    return arch


def device_info() -> dict:
    """Device name, compute capability, target, driver and runtime versions, SM count, CuPy."""
    cp, dev, props, name = device()
    arch = device_arch()
    return {
        "device": name,
        "cc": f"{props['major']}.{props['minor']}",
        "target": TARGETS[arch].name,
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
        cp, dev, props, name = device()
        arch = device_arch()
        if _backend() == "nvrtc":
            try:
                cp.cuda.nvrtc.getVersion()
            except Exception as e:
                raise HardwareUnavailable(f"neither nvcc nor NVRTC is usable ({e})")
    except HardwareUnavailable as e:
        return False, str(e)
    return True, f"{name} ({TARGETS[arch].name}), CuPy {cp.__version__}, compiler {_backend()}"


def need_gpu(names=()) -> str:
    """For the verbs that need the GPU: the device description when run() can work here, else
    ValueError "no usable GPU: <why>" (one line; the command line's exit 2). ``names``: the
    forms about to run; one of another architecture than the device's is refused in one line
    (ValueError). Where available() says yes but the device cannot be read (a stand-in), the
    run path refuses such a form instead."""
    ok, why = available()
    if not ok:
        raise ValueError(f"no usable GPU: {why}")
    if names:
        try:
            arch = device_arch()
        except HardwareUnavailable:
            return why
        for n in names:
            refuse_on(n, arch)
    return why


# ---------------------------------------------------------------------------------------------
# Compilation
# ---------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """The on-disk cubin cache (``$MMAFORMAL_HW_CACHE``, default ``~/.cache/mmaformal/hw``)."""
    d = Path(os.environ.get("MMAFORMAL_HW_CACHE", Path.home() / ".cache" / "mmaformal" / "hw"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def compile_nvcc(src: str, out: Path, nvcc: str, arch: str = "sm90") -> None:
    """nvcc -cubin of ``src`` for the target of catalog architecture ``arch`` into ``out``."""
    t = TARGETS[arch]
    with tempfile.TemporaryDirectory(prefix="mmaformal_hw_") as td:
        cu = Path(td) / "kernel.cu"
        cu.write_text(src)
        tmp = Path(td) / "kernel.cubin"
        r = subprocess.run([nvcc, "-cubin", t.nvcc_flag, "-o", str(tmp), str(cu)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"nvcc failed for {t.name}:\n{r.stderr.strip()}")
        shutil.move(str(tmp), str(out))


def compile_nvrtc(src: str, out: Path, arch: str = "sm90") -> None:
    """NVRTC (through CuPy) of ``src`` for the target of ``arch`` into ``out``."""
    t = TARGETS[arch]
    nvrtc = cupy().cuda.nvrtc
    prog = nvrtc.createProgram(src, "kernel.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [t.nvrtc_flag])
        except Exception as e:
            raise RuntimeError(f"NVRTC failed for {t.name}: {e}\n{nvrtc.getProgramLog(prog)}")
        cubin = nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)
    out.write_bytes(cubin)


def compile_cubin(name: str, backend: str | None = None, sel: int = 0,
                  arch: str | None = None) -> Path:
    """Compile the tile kernel of ``name`` (sparse wgmma: with selector ``sel``) to a cubin
    for the target of ``arch`` (default: the form's own; another architecture is refused,
    ValueError, one line); disk-cached; return its path.

    Needs no GPU with the nvcc backend. Raises HardwareUnavailable when no compiler is found.
    """
    s = refuse_on(name, arch or spec(name).arch)
    t = s.target
    src = source(s.name, sel)
    backend = backend or _backend()
    if backend == "nvcc":
        nvcc = nvcc_path()
        if nvcc is None:
            raise HardwareUnavailable("nvcc not found (set MMAFORMAL_NVCC or CUDA_HOME)")
        tag = f"nvcc|{t.nvcc_flag}|{nvcc_version(nvcc)}"
    else:
        tag = f"nvrtc|{t.nvrtc_flag}|{cupy().cuda.nvrtc.getVersion()}"
    key = hashlib.sha256((tag + "\n" + src).encode()).hexdigest()[:32]
    out = cache_dir() / f"{key}.cubin"
    if not out.exists():
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        if backend == "nvcc":
            compile_nvcc(src, tmp, nvcc, s.arch)
        else:
            compile_nvrtc(src, tmp, s.arch)
        os.replace(tmp, out)
    return out


_FUNCS: dict[tuple[str, int], object] = {}


def function(name: str, sel: int = 0):
    """The loaded tile kernel of ``name`` for the device here (compiled for its target)."""
    key = (spec(name).name, sel)
    f = _FUNCS.get(key)
    if f is None:
        path = compile_cubin(key[0], sel=sel, arch=device_arch())
        f = cupy().RawModule(path=str(path)).get_function(KERNEL_NAME)
        _FUNCS[key] = f
    return f


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def sm_count() -> int:
    _, _, props, _ = device()
    return int(props["multiProcessorCount"])


@lru_cache(maxsize=None)
def device_tables(name: str, dev_id: int):
    """The operand tables of ``name`` on device ``dev_id``, and 'd_inv' (D image -> matrix)."""
    cp = cupy()
    tabs = operand_tables(name)
    inv = np.empty_like(tabs["d"])
    inv[tabs["d"]] = np.arange(len(tabs["d"]))
    return {k: cp.asarray(v) for k, v in tabs.items()} | {"d_inv": cp.asarray(inv)}


def _launch(s, T: int) -> tuple[int, int]:
    """(blocks, threads) of a launch of T kernel tiles."""
    if s.threads == 32:                       # mma, wmma: one warp per tile
        return min(-(-T // 8), sm_count() * 32), 256
    if s.family == "tcgen05":                 # at most 512 tensor-memory columns per SM
        return min(T, sm_count() * max(1, 512 // tmem_cols(s))), 128
    return min(T, sm_count() * 16), 128


def run_images(name: str, a_img, b_img, c_img, desc: tuple[int, int] | None = None, e_img=None,
               sel: int = 0):
    """Run the tile kernel on device arrays already in image order.

    ``a_img`` (T, len(table a)) of A's storage dtype, likewise b, c; returns D images (T, len(
    table d)) of D's storage dtype (T counts kernel tiles: groups of ``spec.group`` tiles).
    ``desc`` = (LBO, SBO) overrides the wgmma / tcgen05 descriptor strides (diagnostics only).
    Sub-byte A/B images hold one element per uint8 and are packed into 32-bit registers here;
    ``e_img`` holds the metadata words of a sparse form: (T,) uint32 (mma.sp, warp-uniform) or
    (T, 128) (wgmma.sp, one per thread, read with sparsity selector ``sel``).
    """
    cp = cupy()
    s = spec(name)
    f = function(s.name, sel)
    T = int(a_img.shape[0])
    d_img = cp.empty((T, len(operand_tables(s.name)["d"])), dtype=s.storage("d"))
    if T == 0:
        return d_img
    a_img, b_img = _pack(cp, a_img, s.atype), _pack(cp, b_img, s.btype)
    args = [cp.ascontiguousarray(a_img), cp.ascontiguousarray(b_img),
            cp.ascontiguousarray(c_img), d_img, np.int64(T)]
    if s.sparse:
        want = (T, 128) if s.family == "wgmma" else (T,)
        if e_img is None or tuple(e_img.shape) != want:
            raise ValueError(f"{s.name}: metadata words of shape {want} are needed")
        args.append(cp.ascontiguousarray(e_img))
    if s.family == "wgmma" and s.sparse:
        args += [np.uint32(WGMMA_SP_LBO), np.uint32(WGMMA_SP_SBO_A), np.uint32(WGMMA_SP_SBO_B)]
    elif s.family in ("wgmma", "tcgen05"):
        lbo, sbo = desc or (WGMMA_LBO, WGMMA_SBO)
        args += [np.uint32(lbo), np.uint32(sbo)]
    blocks, threads = _launch(s, T)
    f((blocks,), (threads,), tuple(args))
    return d_img


def _check(name: str, a, b, c):
    s = spec(name)
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
    bits = FORMAT_BITS[fmt]
    if bits < 8:
        bad = x >= (1 << bits)
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            raise ValueError(f"{s.name}: {role.upper()}{list(i)} = {int(x[i])} is outside "
                             f"0..{(1 << bits) - 1} ({fmt} is stored in the low {bits} bits)")


def run(name: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, *, meta: np.ndarray | None = None,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES, desc: tuple[int, int] | None = None,
        layout: np.ndarray | None = None, sel: int = 0,
        rng: np.random.Generator | None = None) -> np.ndarray:
    """D = A*B + C on the GPU, one instruction per tile; raw bit patterns in and out.

    Sparse forms (``mma.sp``, ``wgmma.sp``): A is dense (..., M, K) with the allowed zeros, or
    compressed (..., M, K/2) with ``meta`` (..., M, K/2), the position of every kept element
    inside its group (see :mod:`mmaformal.hw.sparse`). Sparse wgmma only: ``layout`` is the
    metadata map ((128, 8, 2); default the declared one of selector ``sel``) and ``rng`` draws
    the valid filler words of the threads that give no metadata (default seed 0). ``desc``
    overrides the wgmma / tcgen05 descriptor (LBO, SBO) strides: diagnostics only.
    """
    s = spec(name)
    if not s.sparse:
        if meta is not None:
            raise ValueError(f"{s.name} is dense: it takes no metadata")
        return _run(s.name, a, b, c, chunk_bytes=chunk_bytes, desc=desc)
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
    if s.family == "wgmma":
        return _run_wgmma_sp(s, a, b, c, meta, chunk_bytes, layout, sel, rng)
    return _run_mma_sp(s, a, b, c, meta, chunk_bytes)


def _run_mma_sp(s, a, b, c, meta, chunk_bytes):
    """mma.sp: one warp-uniform word per launch; a tile whose rows differ runs once per
    pattern (sparse.tile_words)."""
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


def _run_wgmma_sp(s, a, b, c, meta, chunk_bytes, layout, sel, rng):
    """wgmma.sp: every thread's metadata word from the kept positions by the map ``layout``
    (sparse.meta_words), random valid words in the threads that give none."""
    _, batch = _check(s.name, a, b, c)
    T = int(np.prod(batch, dtype=np.int64)) if batch else 1
    kh = s.k // 2
    P = np.ascontiguousarray(meta).reshape(T, s.m, kh)
    sparse.check_pos(P.reshape(-1, kh), s.atype, kh)
    lay = sparse.declared(s.atype, sel) if layout is None else layout
    fill = sparse.random_words((T, 128), s.atype, rng or np.random.default_rng(0))
    E = sparse.meta_words(P, s.atype, lay, fill)
    d = _run(s.name, *(np.ascontiguousarray(x).reshape(T, *x.shape[-2:]) for x in (a, b, c)),
             chunk_bytes=chunk_bytes, e=E, sel=sel)
    return d.reshape(*batch, s.m, s.n)


def run_words(name: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, e: np.ndarray,
              sel: int = 0) -> np.ndarray:
    """D (T, M, N) of a sparse wgmma form from compressed A (T, M, K/2), B (T, K, N), C (T, M,
    N) and the metadata words e (T, 128) as given (the layout probes), raw bits."""
    s = spec(name)
    T = a.shape[0]
    want = {"a": (s.m, s.k // 2), "b": (s.k, s.n), "c": (s.m, s.n)}
    for role, x in (("a", a), ("b", b), ("c", c)):
        if x.shape != (T, *want[role]) or x.dtype != s.storage(role):
            raise ValueError(f"{s.name}: {role.upper()} must be {s.storage(role)} of shape "
                             f"(T, {want[role][0]}, {want[role][1]}), got {x.dtype} {x.shape}")
    if not (s.family == "wgmma" and s.sparse) or e.shape != (T, 128):
        raise ValueError(f"{s.name}: metadata words (T, 128) of a sparse wgmma form are needed")
    return _run(s.name, a, b, c, e=e, sel=sel)


def _pack(cp, img, fmt: str):
    """Sub-byte elements (one per uint8) -> 32-bit words, element 0 in the low bits."""
    bits = FORMAT_BITS[fmt]
    if bits >= 8:
        return img
    per = 32 // bits
    sh = cp.asarray((np.arange(per, dtype=np.uint32) * bits).astype(np.uint32))
    w = img.reshape(img.shape[0], -1, per).astype(cp.uint32) << sh
    return w.sum(axis=-1, dtype=cp.uint32)


def _run(name: str, a: np.ndarray, b: np.ndarray, c: np.ndarray, *,
         chunk_bytes: int = DEFAULT_CHUNK_BYTES, desc: tuple[int, int] | None = None,
         e: np.ndarray | None = None, sel: int = 0) -> np.ndarray:
    s, batch = _check(name, a, b, c)
    _check_int_range(s, "a", a)
    _check_int_range(s, "b", b)
    cp = cupy()
    refuse_on(s.name, device_arch())
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
    tabs = device_tables(s.name, cp.cuda.Device().id)
    for lo in range(0, T, step):
        hi = min(T, lo + step)
        a_img = cp.take(cp.asarray(af[lo:hi]), tabs["a"], axis=1)
        b_img = cp.take(cp.asarray(bf[lo:hi]), tabs["b"], axis=1)
        c_img = cp.take(cp.asarray(cf[lo:hi]), tabs["c"], axis=1)
        e_img = None if e is None else cp.asarray(np.ascontiguousarray(e[lo:hi], np.uint32))
        d_img = run_images(s.name, a_img, b_img, c_img, desc, e_img, sel)
        del a_img, b_img, c_img
        d[lo:hi] = cp.take(d_img, tabs["d_inv"], axis=1).get()
        del d_img
    return d.reshape(T * G, s.m * s.n)[:T0].reshape(*batch, s.m, s.n)
