"""Layer 1 (fast path, GPU), cuda: the traced definition emitted as CUDA C and run on a GPU.

The trace of a definition that `mmaformal.compile.TraceBackend` records (e.g. one instruction
step, `Theory.dot`) is emitted as a CUDA `__device__` function, and generated `__global__`
wrappers apply it to independent tiles (simulate), to the outputs of a GEMM walked in the
instruction's K-steps with the accumulator carried (emulate.matmul), to independent K-long
lanes (emulate.dot_lanes) and elementwise (the split-K reduction). The source text is written
by mmaformal.cuda_source (the code generator); this module compiles it, caches it and launches
it. No arithmetic is written here: every operation comes from the trace, so every theory the C
path runs runs here. The GEMM kernel runs the trace split by dependence (`split_source`): the
statements that read only one row's (column's) operands run once per tile element and block,
the others per output.

May import: mmaformal.cuda_source (the generated text), mmaformal.compile (the trace),
mmaformal._cache, numpy; CuPy lazily (NVRTC; nvcc is used when NVRTC rejects a source). Never z3.

Invariants:
- Value semantics as on the C path: each traced value is held in int32 where its static
  interval proves it fits, else in int64 or __int128 (the same widths the C path uses); a
  statement runs in 32-bit arithmetic only where the tracer marked it exact there
  (`TraceBackend.n32`); every other statement casts its operands to its evaluation width.
- Every range check of the trace is kept: a lane that fails one sets a flag and the call
  raises OverflowError, as the C path does.
- The GEMM also carries steps traced under facts (every A and B element normal, or finite:
  `cuda_source.LEVELS`, `operand_facts`), their decoded values sharing one shared-memory
  buffer with the general step's. Each block checks the facts on the raw tiles of each K-step
  and runs the first step whose facts hold (`__syncthreads_and`: one branch per block), the
  general step where none do. All come from the one definition; `dot_module(facts=False)`
  leaves the specialised steps out.
- Modules are cached in-process by the hash of their source and on disk by CuPy (keyed by the
  source); a caller's `disk_key` finds the source of an earlier process without tracing.
- Inputs on the host are processed in chunks that fit the GPU's free memory (and
  $MMAFORMAL_GPU_MEM bytes, when set); device arrays (CuPy) stay on the device.
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import _cache
from .cuda_source import (LEVELS, dec_bytes, device_source, ew_kernel, gemm_split_kernel,
                          operand_facts, rest_size, split_smem, split_step_source,
                          step_kernels, trace_source)

__all__ = ["available", "resolve_device", "device_source", "DotModule", "dot_module",
           "DEVICES", "Unavailable"]

DEVICES = ("cpu", "cuda", "auto")

_NPT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


class Unavailable(ValueError):
    """No usable CUDA device/CuPy/compiler (a one-line reason)."""


# --------------------------------------------------------------------------------------------
# Availability


_AVAIL: list = []


def available() -> tuple[bool, str]:
    """(True, device description) when CuPy imports and an NVIDIA GPU of compute capability
    >= 7.0 answers, else (False, why)."""
    if _AVAIL:
        return _AVAIL[0]
    try:
        import cupy
    except Exception as e:  # ImportError, or a CuPy without its CUDA libraries
        r = (False, f"CuPy is not usable ({type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''})")
        _AVAIL.append(r)
        return r
    try:
        n = cupy.cuda.runtime.getDeviceCount()
        if n < 1:
            r = (False, "no CUDA device")
        else:
            props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
            cc = (props["major"], props["minor"])
            name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
            if cc < (7, 0):
                r = (False, f"unsupported GPU {name} (compute capability {cc[0]}.{cc[1]} < 7.0)")
            else:
                r = (True, f"{name} (sm_{cc[0]}{cc[1]})")
    except Exception as e:
        r = (False, f"no usable CUDA device ({type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''})")
    _AVAIL.append(r)
    return r


def resolve_device(device: str) -> tuple[str, str]:
    """('cpu' | 'cuda', note) for a requested device; 'cuda' without a usable GPU raises
    Unavailable (a ValueError: the cli prints one line, exit 2); 'auto' falls back to the CPU
    and says why in the note."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if device == "cpu":
        return "cpu", "cpu requested"
    ok, why = available()
    if device == "cuda":
        if not ok:
            raise Unavailable(f"--device cuda: {why}")
        return "cuda", why
    return ("cuda", why) if ok else ("cpu", f"no GPU path: {why}")


# --------------------------------------------------------------------------------------------
# Compilation (CuPy: NVRTC, nvcc as the fallback)


_LOCK = threading.Lock()
_MODS: dict[str, Any] = {}


def _options(src: str) -> tuple[str, ...]:
    opts = ("-std=c++17",)
    if "__int128" in src:
        opts += ("--device-int128",)
    return opts


def build(src: str) -> Any:
    """A cupy.RawModule of the source (in-process cache by source hash; CuPy's disk cache)."""
    h = hashlib.sha256(src.encode()).hexdigest()[:24]
    with _LOCK:
        mod = _MODS.get(h)
        if mod is not None:
            return mod
        import cupy
        errs = []
        for backend in ("nvrtc", "nvcc"):
            try:
                opts = _options(src) if backend == "nvrtc" else ("-std=c++17",)
                mod = cupy.RawModule(code=src, options=opts, backend=backend)
                first = re.search(r'extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(', src)
                mod.get_function(first.group(1))                # compile now
                break
            except Exception as e:  # CompileException, or no nvcc
                errs.append(f"{backend}: {str(e).strip().splitlines()[-1][:200] if str(e).strip() else type(e).__name__}")
                mod = None
        if mod is None:
            raise Unavailable("CUDA compilation failed (" + "; ".join(errs) + ")")
        _MODS[h] = mod
        return mod


def _src_cache(disk_key: str | None, make: Callable[[], str]) -> str:
    """make(), or the source an earlier process stored under disk_key (no tracing). A stored
    source is used only when it has the size and sha256 recorded beside it (cu_<key>.sum,
    mmaformal._cache); a damaged one is made again and replaced."""
    if disk_key is None:
        return make()
    here = Path(__file__).resolve().parent
    key = hashlib.sha256(disk_key.encode() + _cache.files_key(
        [here / "cuda.py", here / "cuda_source.py", here / "compile.py",
         here / "bits.py"]).encode()).hexdigest()[:32]
    p = None
    try:
        p = _cache.cache_dir() / f"cu_{key}.cu"
        if _cache.sum_ok(p):
            return p.read_text()
    except (OSError, UnicodeDecodeError):
        pass
    src = make()
    if p is not None:
        try:
            _cache.write_atomic(p, src.encode())
            _cache.write_sum(p)
        except OSError:
            pass
    return src


# --------------------------------------------------------------------------------------------
# Running


def _mem_budget(cp) -> int:
    free, _ = cp.cuda.Device().mem_info
    b = int(free * 0.7)
    env = os.environ.get("MMAFORMAL_GPU_MEM")
    if env:
        b = min(b, int(float(env)))
    return max(b, 1 << 16)


def _flag_check(flag, what: str) -> None:
    if int(flag.get()[0]):
        raise OverflowError(f"{what}: the GPU kernel overflowed a plain operation "
                            "(an error in the theory; run the CPU path for the operation)")


#: GEMM tiling: BM x BN outputs per block, TM x TN per thread, KS instruction steps per stage
#: (KS is used by the whole-step kernel; the split kernel walks one step per stage).
#: Source: bench/bench_gpu.py on an H200, 2026-11-28 (docs/gpu.md), sm90 f16 -> f32 8192^3, the
#: finite step with the native clz: 32x64 blocks with 4x2 outputs per thread 0.943 s, 2x4
#: 0.984 s (its first build: 1.029 s and 1.074 s); on an H100, 2026-11-24, the general step: 2x4
#: 1.73 s, 16x64 1x4 1.80 s, 32x32 2x2 1.89 s, the whole-step kernel 2.79 s. ALU-pipe bound (ncu).
GEMM_TILE = tuple(int(x) for x in os.environ.get("MMAFORMAL_GEMM_TILE", "32,64,4,2,1").split(","))
#: The tiling of steps of more than BIG_STEP traced statements (the sm90 fp8 HMMA chain: 10,516),
#: whose registers spill at 2x4 outputs per thread; $MMAFORMAL_GEMM_TILE, when set, wins.
#: Source: bench/bench_gpu.py --gemm-instr e4m3@4096 on an H200, 2026-11-28 (docs/gpu.md):
#: 16x16 1x1 0.232 s, 16x32 1x2 0.246 s, 16x64 1x4 0.255 s, 32x64 2x4 1.215 s.
BIG_STEP, BIG_STEP_TILE = 5000, (16, 16, 1, 1, 1)
#: A specialised step is kept when its per-output part has at most this share of the
#: statements of the step below it (the next less specific one, or the general step).
#: Source: bench/bench_gpu.py on an H200, 2026-11-28 (docs/gpu.md): the e4m3 chain, whose
#: "normal" step is no shorter than its "finite" one (1,430 statements each), took 2.872 s at
#: 8192^3 with both beside the general step, 1.743 s with the finite one alone (an earlier
#: build), 1.930 s with the general step only.
MIN_GAIN = 0.95


def default_tile(step: str) -> tuple:
    """The GEMM tiling used for a step's CUDA source when the caller names none."""
    if "MMAFORMAL_GEMM_TILE" not in os.environ and step.count(";") > BIG_STEP:
        return BIG_STEP_TILE
    return GEMM_TILE
#: shared-memory bytes per stage of the split GEMM (decoded tile elements and raw tiles; static
#: shared memory is limited to 48 KiB), above which the whole-step kernel is used (0: never split)
SPLIT_SMEM = int(os.environ.get("MMAFORMAL_GEMM_SPLIT_SMEM", str(46 * 1024)))


class DotModule:
    """One instruction step (a traced `Theory.dot`) compiled for the GPU, with its runners.
    Two modules, each built on first use: sim + lanes, and the GEMM kernel of one tiling."""

    def __init__(self, src: str, k: int, nb: int, m: int, n: int, st, name: str, tile=None,
                 split=None, fast=None):
        self.k, self.nb, self.m, self.n, self.st, self.name = k, nb, m, n, tuple(st), name
        self._split = split                     # () -> split_step_source(..), or None
        self._fast = fast                       # () -> (split_step_source(.., facts), facts) or None
        self.tile = tuple(tile or GEMM_TILE)
        BM, BN, TM, TN, KS = self.tile
        if BM % TM or BN % TN or min(self.tile) < 1 or (BM // TM) * (BN // TN) > 1024:
            raise ValueError(f"GEMM tile {self.tile}: BM, BN must be multiples of TM, TN and "
                             f"(BM/TM)*(BN/TN) <= 1024 threads")
        self.step = src
        self._mods: dict[str, Any] = {}
        self._srcs: dict[str, str] = {}         # which -> source (tracing runs once per module)

    def source(self, which: str) -> str:
        """'sim' (sim + lanes kernels) or 'gemm': the CUDA source of that module. The GEMM
        decodes each tile element once per block (split_source) when its decoded values fit
        SPLIT_SMEM bytes of shared memory per stage, else it runs the whole step per output."""
        src = self._srcs.get(which)
        if src is None:
            src = self._srcs[which] = self._source(which)
        return src

    def _source(self, which: str) -> str:
        geo = (self.k, self.nb, self.m, self.n, self.st)
        if which == "gemm" and self._split is not None and SPLIT_SMEM > 0:
            src, ia, ib, per = self._split()
            smem = split_smem(ia, ib, self.tile, self.k, self.st, self.nb)
            if smem <= SPLIT_SMEM:
                fast, below = [], rest_size(src, "")
                for (fsrc, fia, fib, fper), facts, sfx in reversed(self._fast() if self._fast else []):
                    # kept only where it is shorter than the step it would replace (each copy of a
                    # long step costs instruction cache); the decoded values of all the traces
                    # share one buffer (alignment: 256 bytes spare)
                    size = rest_size(fsrc, sfx)
                    if (size <= MIN_GAIN * below and smem - dec_bytes(ia, ib, self.tile)
                            + dec_bytes(fia, fib, self.tile) + 256 <= SPLIT_SMEM):
                        fast.insert(0, (fia, fib, fper, facts[0], facts[self.k], sfx))
                        src += fsrc
                        below = size
                return src + gemm_split_kernel(self.k, self.nb, self.st, self.tile, ia, ib, per, fast)
        return self.step + step_kernels(*geo, None if which == "sim" else self.tile)

    @property
    def specialised(self) -> tuple:
        """The levels (cuda_source.LEVELS: "normal", "finite") of the steps specialised under
        facts that the GEMM kernel runs where a block's tiles satisfy them, the general step
        elsewhere; () when it runs the general step only."""
        src = self.source("gemm")
        return tuple(lev for lev, sfx in LEVELS if f"rest{sfx}(" in src)

    def mod(self, which: str):
        m = self._mods.get(which)
        if m is None:
            m = self._mods[which] = build(self.source(which))
        return m

    # -- helpers ----------------------------------------------------------------------------
    @staticmethod
    def _cp():
        import cupy
        return cupy

    def _launch(self, fn, n: int, args) -> None:
        threads = 256
        blocks = int(min(max(1, -(-n // threads)), 65535 * 8))
        fn((blocks,), (threads,), args)

    def _dummy(self):
        cp = self._cp()
        return cp.zeros(1, dtype=cp.uint8)

    # -- simulate: independent tiles ------------------------------------------------------------
    def sim_device(self, A3, B3, C2, SA3=None, SB3=None, out=None):
        """A3 (T, m, k), B3 (T, n, k) (B transposed), C2 (T, m*n) [, SA3 (T, m, nb), SB3
        (T, n, nb)] as contiguous CuPy arrays -> D (T, m*n) on the device."""
        cp = self._cp()
        T = A3.shape[0]
        D = out if out is not None else cp.empty((T, self.m * self.n), dtype=_NPT[self.st[3]])
        flag = cp.zeros(1, dtype=cp.int32)
        d = self._dummy()
        self._launch(self.mod("sim").get_function("sim"), T * self.m * self.n,
                     (np.int64(T), A3, B3, C2, SA3 if SA3 is not None else d,
                      SB3 if SB3 is not None else d, D, flag))
        _flag_check(flag, self.name)
        return D

    def sim_host(self, A3, B3, C2, SA3=None, SB3=None) -> np.ndarray:
        """The same on host arrays, in chunks of tiles that fit the GPU's memory."""
        cp = self._cp()
        T = A3.shape[0]
        out = np.empty((T, self.m * self.n), dtype=_NPT[self.st[3]])
        per = A3[0].nbytes + B3[0].nbytes + C2[0].nbytes + out[0].nbytes
        if SA3 is not None:
            per += SA3[0].nbytes + SB3[0].nbytes
        step = max(1, _mem_budget(cp) // max(per, 1))
        for t0 in range(0, T, step):
            t1 = min(T, t0 + step)
            g = [cp.asarray(np.ascontiguousarray(x[t0:t1])) if x is not None else None
                 for x in (A3, B3, C2, SA3, SB3)]
            out[t0:t1] = self.sim_device(*g).get()
        return out

    # -- lanes (dot_lanes) -----------------------------------------------------------------------
    def lanes_device(self, a, b, c, sa=None, sb=None, out=None):
        """K-long lanes on device arrays: a, b (n, K), c (n,) [, sa, sb (n, K/sb)] contiguous
        CuPy arrays -> D (n,) on the device (`lanes` kernel, accumulator carried)."""
        cp = self._cp()
        n, K = a.shape
        D = out if out is not None else cp.empty(n, dtype=_NPT[self.st[3]])
        flag = cp.zeros(1, dtype=cp.int32)
        g = [x if x is not None else self._dummy() for x in (a, b, c, sa, sb)]
        self._launch(self.mod("sim").get_function("lanes"), n, (np.int64(n), np.int32(K), *g, D, flag))
        _flag_check(flag, self.name)
        return D

    def lanes_host(self, a, b, c, sa=None, sb=None) -> np.ndarray:
        """The same on host arrays, in chunks of lanes that fit the GPU's memory."""
        cp = self._cp()
        n = a.shape[0]
        out = np.empty(n, dtype=_NPT[self.st[3]])
        per = a[:1].nbytes + b[:1].nbytes + c[:1].nbytes + out[:1].nbytes
        if sa is not None:
            per += sa[:1].nbytes + sb[:1].nbytes
        step = max(1, _mem_budget(cp) // max(per, 1))
        for l0 in range(0, n, step):
            l1 = min(n, l0 + step)
            g = [cp.asarray(np.ascontiguousarray(x[l0:l1])) if x is not None else None
                 for x in (a, b, c, sa, sb)]
            out[l0:l1] = self.lanes_device(*g).get()
        return out

    # -- GEMM -------------------------------------------------------------------------------------
    def gemm_device(self, A, B, C, SA, SB, s0: int, s1: int, out=None):
        """Steps s0..s1-1 of D = A*B + C on device arrays A (M, K), B (K, N), C (M, N) of the
        C format (the accumulator starts as C), SA (M, K/sb), SB (K/sb, N); D (M, N)."""
        cp = self._cp()
        M, K = A.shape
        N = B.shape[1]
        BM, BN, TM, TN, KS = self.tile
        D = out if out is not None else cp.empty((M, N), dtype=_NPT[self.st[3]])
        flag = cp.zeros(1, dtype=cp.int32)
        d = self._dummy()
        fn = self.mod("gemm").get_function("gemm")
        grid = (-(-N // BN), -(-M // BM))
        fn(grid, ((BM // TM) * (BN // TN),),
           (np.int32(M), np.int32(N), np.int32(K), np.int32(s0), np.int32(s1), A, B, C,
            SA if SA is not None else d, SB if SB is not None else d, D, flag))
        _flag_check(flag, self.name)
        return D


class EwModule:
    """An elementwise traced function (e.g. the split-K reduction's IEEE addition)."""

    def __init__(self, src: str, in_storage, out_storage: int):
        self.in_storage, self.out_storage = list(in_storage), out_storage
        self.mod = build(src + ew_kernel(in_storage, out_storage))

    def __call__(self, *xs):
        import cupy as cp
        n = xs[0].size
        y = cp.empty(xs[0].shape, dtype=_NPT[self.out_storage])
        flag = cp.zeros(1, dtype=cp.int32)
        threads = 256
        blocks = int(min(max(1, -(-n // threads)), 65535 * 8))
        self.mod.get_function("ew")((blocks,), (threads,), (np.int64(n), *[cp.ascontiguousarray(x) for x in xs], y, flag))
        _flag_check(flag, "elementwise kernel")
        return y


_DOTS: dict[Any, DotModule] = {}
_EWS: dict[Any, EwModule] = {}
_DLOCK = threading.Lock()


def step_source(th, ins) -> str:
    """The CUDA `step` device function of one step of `ins` under theory `th`: the trace of
    `Theory.dot` (inputs a_0..a_{k-1}, b_0.., c, scale_a_0.., scale_b_0..; output d)."""
    from . import fp
    st = [fp.fmt(f).storage for f in (ins.a, ins.b, ins.c, ins.d)]
    k = ins.k
    nb = ins.k // ins.scale_block if ins.scale else 0

    def fn(K, *x):
        sa = list(x[2 * k + 1:2 * k + 1 + nb]) if nb else None
        sb = list(x[2 * k + 1 + nb:]) if nb else None
        return th.dot(K, list(x[:k]), list(x[k:2 * k]), x[2 * k], sa, sb)

    return _src_cache(_disk_key(th, ins),
                      lambda: trace_source(fn, [st[0]] * k + [st[1]] * k + [st[2]] + [8] * (2 * nb), [st[3]]))


def _geometry(ins):
    from . import fp
    st = tuple(fp.fmt(f).storage for f in (ins.a, ins.b, ins.c, ins.d))
    nb = ins.k // ins.scale_block if ins.scale else 0
    return ins.k, nb, ins.m, ins.n, st


def module_source(th, ins, tile=None, which: str = "gemm", facts: bool = True) -> str:
    """The CUDA source of one of the step's modules ('sim': sim + lanes; 'gemm': the GEMM
    kernel of a tiling, default `default_tile`, split where DotModule splits it)."""
    src = step_source(th, ins)
    mod = DotModule(src, *_geometry(ins), ins.name, tile or default_tile(src),
                    split=lambda: split_step_source(th, ins), fast=_fast(th, ins, facts))
    return mod.source(which)


def _fast(th, ins, facts: bool):
    """The specialised traces' maker for DotModule: () -> [(split source, facts, suffix)], most
    specific first (cuda_source.LEVELS); None where not asked or no facts apply."""
    levels = [(operand_facts(ins, lev), sfx) for lev, sfx in LEVELS] if facts else []
    levels = [(f, sfx) for f, sfx in levels if f]
    if not levels:
        return None
    return lambda: [(split_step_source(th, ins, f, head=False, sfx=sfx), f, sfx) for f, sfx in levels]


def dot_module(th, ins, tile=None, split: bool = True, facts: bool = True) -> DotModule:
    """The GPU module of one step of instruction `ins` under theory `th` (cached); split=False
    keeps the whole step per output in the GEMM (see DotModule.source); facts=False leaves
    out the step specialised for finite tiles (the general step everywhere)."""
    key = (th.hash(), ins.name, tuple(tile) if tile else None, split, facts)
    with _DLOCK:
        mod = _DOTS.get(key)
        if mod is None:
            src = step_source(th, ins)
            mod = _DOTS[key] = DotModule(src, *_geometry(ins), ins.name, tile or default_tile(src),
                                         split=(lambda: split_step_source(th, ins)) if split else None,
                                         fast=_fast(th, ins, facts) if split else None)
        return mod


def _disk_key(th, ins) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    code = [os.path.join(here, f) for f in ("bits.py", "fp.py", "mma.py", "theory.py")]
    return f"cuda.step|{th.hash()}|{ins.name}|{_cache.files_key(code)}"


def ew_module(tag: str, fn: Callable, in_storage: Sequence[int], out_storage: int) -> EwModule:
    key = (tag, tuple(in_storage), out_storage)
    with _DLOCK:
        mod = _EWS.get(key)
        if mod is None:
            mod = _EWS[key] = EwModule(trace_source(fn, in_storage, [out_storage]), in_storage, out_storage)
        return mod


# --------------------------------------------------------------------------------------------
# Front-end entries (simulate, emulate): host arrays in, host arrays out, or device arrays


def add_module(fmt_name: str) -> EwModule:
    """Elementwise IEEE 754 RNE addition in a format (the split-K reduction), traced."""
    from . import fp
    w = fp.fmt(fmt_name).storage
    return ew_module(f"add.{fmt_name}", lambda K, u, v: fp.add(fmt_name, u, v, "RNE"), [w, w], w)


def gemm(th, ins, A, B, C, SA, SB, parts: Sequence[tuple[int, int]], *, device_arrays=False):
    """D = A*B + C walked as emulate.matmul does (parts: the split-K step ranges; one part:
    no reduction). Host arrays are processed in row/column chunks that fit the GPU's memory;
    with device_arrays (CuPy in, CuPy out) the whole product runs in place."""
    import cupy as cp
    mod = dot_module(th, ins)
    add = add_module(ins.d) if len(parts) > 1 else None
    dd = _NPT[mod.st[3]]

    def run(Ad, Bd, Cd, SAd, SBd):
        if add is None:
            s0, s1 = parts[0]
            return mod.gemm_device(Ad, Bd, Cd, SAd, SBd, s0, s1)
        zero = cp.zeros(Cd.shape, dtype=Cd.dtype)
        acc = Cd
        for s0, s1 in parts:
            P = mod.gemm_device(Ad, Bd, zero, SAd, SBd, s0, s1)
            acc = add(acc, P)
            del P
        return acc

    if device_arrays:
        return run(A, B, C, SA, SB)
    M, K = A.shape
    N = B.shape[1]
    out = np.empty((M, N), dtype=dd)
    budget = _mem_budget(cp)
    ia, ib, ic, idd = A.itemsize, B.itemsize, C.itemsize, np.dtype(dd).itemsize
    nsb = SA.shape[1] if SA is not None else 0
    extra = 2 if len(parts) > 1 else 0           # the zero C and one partial per chunk
    colb = K * ib + nsb                          # bytes per column of B (+ its scales)
    nc = N if N * colb <= budget // 2 else max(64, (budget // 2) // colb)
    rowb = K * ia + nsb + nc * (ic + idd + extra * idd)
    mr = max(64, (budget - nc * colb) // max(rowb, 1))
    for j0 in range(0, N, nc):
        j1 = min(N, j0 + nc)
        Bd = cp.asarray(np.ascontiguousarray(B[:, j0:j1]))
        SBd = cp.asarray(np.ascontiguousarray(SB[:, j0:j1])) if SB is not None else None
        for i0 in range(0, M, mr):
            i1 = min(M, i0 + mr)
            Ad = cp.asarray(np.ascontiguousarray(A[i0:i1]))
            Cd = cp.asarray(np.ascontiguousarray(C[i0:i1, j0:j1]))
            SAd = cp.asarray(np.ascontiguousarray(SA[i0:i1])) if SA is not None else None
            out[i0:i1, j0:j1] = run(Ad, Bd, Cd, SAd, SBd).get()
            del Ad, Cd, SAd
    return out


def simulate_tiles(th, ins, Ab, Bt, Cb, SAb=None, SBt=None) -> np.ndarray:
    """simulate's tiles (broadcast views: A (..., m, k), B transposed (..., n, k), C (..., m, n),
    scales (..., m, nb), (..., n, nb)) on the GPU: D (T, m*n) raw bits, T tiles in order."""
    mod = dot_module(th, ins)
    M, N, K = ins.m, ins.n, ins.k
    A3 = Ab.reshape(-1, M, K)
    B3 = Bt.reshape(-1, N, K)
    C2 = Cb.reshape(-1, M * N)
    SA3 = SAb.reshape(-1, M, SAb.shape[-1]) if SAb is not None else None
    SB3 = SBt.reshape(-1, N, SBt.shape[-1]) if SBt is not None else None
    return mod.sim_host(A3, B3, C2, SA3, SB3)


_SUPPORTED: dict[Any, tuple[bool, str]] = {}


def supported(th, ins) -> tuple[bool, str]:
    """Whether the step of `ins` under `th` has a CUDA form (every value fits 126 bits)."""
    from .compile import Unsupported
    key = (th.hash(), ins.name)
    r = _SUPPORTED.get(key)
    if r is None:
        if getattr(ins, "sparse", ""):
            r = (False, "sparse instructions (metadata inputs) run on the CPU path")
        else:
            try:
                step_source(th, ins)
                r = (True, "")
            except Unsupported as e:
                r = (False, str(e))
        _SUPPORTED[key] = r
    return r
