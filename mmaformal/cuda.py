"""Layer 1 (fast path, GPU), cuda: the traced definition emitted as CUDA C and run on a GPU.

The trace of a definition that `mmaformal.compile.TraceBackend` records (e.g. one instruction
step, `Theory.dot`) is emitted here as a CUDA `__device__` function, and generated `__global__`
wrappers apply it to independent tiles (simulate), to the outputs of a GEMM walked in the
instruction's K-steps with the accumulator carried (emulate.matmul), to independent K-long
lanes (emulate.dot_lanes) and elementwise (the split-K reduction). No arithmetic is written
here: every operation comes from the trace, so every theory the C path runs runs here. The
GEMM kernel runs the trace split by dependence (`split_source`): the statements that read only
one row's (column's) operands run once per tile element and block, the others per output.

May import: mmaformal.compile (the trace), mmaformal._cache, numpy; CuPy lazily (NVRTC; nvcc
is used when NVRTC rejects a source). Never z3.

Invariants:
- Value semantics as on the C path: each traced value is held in int32 where its static
  interval proves it fits, else in int64 or __int128 (the same widths the C path uses); a
  statement runs in 32-bit arithmetic only where the tracer marked it exact there
  (`TraceBackend.n32`); every other statement casts its operands to its evaluation width.
- Every range check of the trace is kept: a lane that fails one sets a flag and the call
  raises OverflowError, as the C path does.
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

__all__ = ["available", "resolve_device", "device_source", "DotModule", "dot_module",
           "DEVICES", "Unavailable"]

DEVICES = ("cpu", "cuda", "auto")

_UT = {8: "unsigned char", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}
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
# Emission


_DECL = re.compile(r"^(W64|W128) ([vab]\d+) = (.*);$")
_LOAD = re.compile(r"^LOAD\((W64|W128), (v\d+), in(\d+), (\d+)\);$")
_BAD = re.compile(r"^bad \|= (.*);$")
_REF = re.compile(r"\b([va]\d+)\b")
_ANY = re.compile(r"\b([vab]\d+)\b")
_I64C = re.compile(r"\bINT64_C\((-?\d+)\)")
_CLS = {32: "int", 64: "long long", 128: "W128"}


def _cls(iv: tuple[int, int]) -> int:
    lo, hi = iv
    if -(1 << 31) <= lo and hi < (1 << 31):
        return 32
    if -(1 << 63) <= lo and hi < (1 << 63):
        return 64
    return 128


def _statements(tb) -> list[tuple[str | None, str, set[str], int | None]]:
    """The trace as CUDA statements: (defined name or None, statement, names it reads, the
    input index it loads or None)."""
    from .compile import Unsupported
    cls: dict[str, int] = {}

    def cls_of(name: str) -> int:
        c = cls.get(name)
        if c is None:
            iv = tb.rawiv.get(name) or tb.ivs.get(name)
            if iv is None:
                raise Unsupported(f"no interval for {name}")
            c = cls[name] = _cls(iv)
        return c

    out = []
    for line in tb.lines:
        m = _LOAD.match(line)
        if m:
            name, idx = m.group(2), int(m.group(3))
            out.append((name, f"{_CLS[cls_of(name)]} {name} = ({_CLS[cls_of(name)]})in{idx};", set(), idx))
            continue
        m = _DECL.match(line)
        if m:
            name, expr = m.group(2), m.group(3)
            refs = set(_ANY.findall(expr))
            if name.startswith("b"):                # truth values as predicates
                out.append((name, f"bool {name} = {expr.replace('~', '!')};", refs, None))
                continue
            c = cls_of(name)
            out.append((name, f"{_CLS[c]} {name} = {_expr(expr, name, c, tb, cls_of)};", refs, None))
            continue
        m = _BAD.match(line)
        if m:
            if "__builtin" in line:
                raise Unsupported("a traced operation needs an overflow builtin (no CUDA form)")
            out.append((None, line, set(_ANY.findall(line)), None))
            continue
        raise Unsupported(f"unrecognised trace statement: {line[:80]}")
    return [(n, st.replace("(uint64_t)", "(unsigned long long)"), r, i) for n, st, r, i in out]


_DTYPE = re.compile(r"^(bool|int|long long|W128) [vab]\d+ = ")


def _decl_type(stmt: str) -> str:
    return _DTYPE.match(stmt).group(1)


def device_source(tb, outputs: Sequence, out_storage: Sequence[int], fname: str) -> str:
    """CUDA source of `__device__ fname(in0, .., bad)` returning output 0 as its storage type,
    from a finished trace (`TraceBackend` after the definition ran on its inputs)."""
    from .compile import Unsupported
    if len(outputs) != 1:
        raise Unsupported("the CUDA path emits one output per traced function")
    body = [st for _, st, _, _ in _statements(tb)]
    ins = ", ".join(f"{_UT[s]} in{i}" for i, (s, _, _) in enumerate(tb.inputs))
    ot = _UT[out_storage[0]]
    stmts = "\n    ".join(body)
    return (f"__device__ __forceinline__ {ot} {fname}({ins}, int& bad) {{\n    {stmts}\n"
            f"    return ({ot})({outputs[0].v});\n}}\n")


def split_source(tb, outputs: Sequence, out_storage: Sequence[int], a_in: Sequence[int],
                 b_in: Sequence[int], elems: int = 0):
    """The trace split by what each statement depends on: `decA(a inputs, outs.., bad)` holds
    the statements that read only the inputs a_in (one row's operands), `decB` those that read
    only b_in, `rest(A values.., B values.., other inputs.., bad)` the others (it returns output
    0). Returns (source, A interface [(type, name)], B interface): the values of decA / decB
    that rest reads, which a GEMM computes once per tile element instead of once per output.
    rest(decA(..), decB(..), ..) is the traced function, statement for statement.

    elems = k > 0: where every statement of decA reads exactly one of the first k inputs and
    the statements of each element are the same up to names (each operand decoded by the same
    code), also `decA1(in0, o0.., bad)`, the decode of one element, so that the threads of a
    block decode one element each. The 4th value is then {"A": (types of o0.., {interface
    name: (element, position)}), "B": ...} (None for a side that is not per-element)."""
    from .compile import Unsupported
    if len(outputs) != 1:
        raise Unsupported("the CUDA path emits one output per traced function")
    stmts = _statements(tb)
    A, B = set(a_in), set(b_in)
    deps: dict[str, set[int]] = {}
    group: dict[str, str] = {}
    types: dict[str, str] = {}
    items = []
    for name, st, refs, idx in stmts:
        d: set[int] = {idx} if idx is not None else set()
        for r in refs:
            d |= deps.get(r, set())
        g = "K" if not d else "A" if d <= A else "B" if d <= B else "R"
        if name is not None:
            deps[name], group[name] = d, g
            types[name] = _decl_type(st)
        if name is None:
            for r in refs:
                d = d | deps.get(r, set())
            g = "K" if not d else "A" if d <= A else "B" if d <= B else "R"
        items.append((name, st, refs, idx, g, frozenset(d)))
    need = {"A": [], "B": []}
    seen = set()
    for name, st, refs, idx, g, _ in items:
        if g == "R":
            for r in sorted(refs, key=lambda x: int(x[1:])):
                if group.get(r) in ("A", "B") and r not in seen:
                    seen.add(r)
                    need[group[r]].append(r)
    ov = outputs[0].v
    if group.get(ov) in ("A", "B") and ov not in seen:
        need[group[ov]].append(ov)
    iface = {g: [(types[n], n) for n in need[g]] for g in "AB"}

    def fn(name, g, params, tail):
        body = [st for n, st, refs, idx, gg, _ in items if gg in (g, "K")]
        return (f"__device__ __forceinline__ void {name}({params}int& bad) {{\n    "
                + "\n    ".join(body + tail) + "\n}\n")
    inp = tb.inputs
    srcs = []
    for g, ins_idx in (("A", sorted(A)), ("B", sorted(B))):
        params = "".join(f"{_UT[inp[i][0]]} in{i}, " for i in ins_idx)
        params += "".join(f"{t}& o_{n}, " for t, n in iface[g])
        srcs.append(fn(f"dec{g}", g, params, [f"o_{n} = {n};" for _, n in iface[g]]))
    ot = _UT[out_storage[0]]
    others = [i for i in range(len(inp)) if i not in A and i not in B]
    params = "".join(f"{t} {n}, " for g in "AB" for t, n in iface[g])
    params += "".join(f"{_UT[inp[i][0]]} in{i}, " for i in others)
    body = [st for n, st, refs, idx, g, _ in items if g in ("R", "K")]
    srcs.append(f"__device__ __forceinline__ {ot} rest({params}int& bad) {{\n    "
                + "\n    ".join(body) + f"\n    return ({ot})({ov});\n}}\n")
    per = {"A": None, "B": None}
    if elems:
        konst = [st for n, st, refs, idx, g, _ in items if g == "K"]
        for g, ins_idx in (("A", sorted(A)), ("B", sorted(B))):
            r = _per_element(items, g, ins_idx[:elems], len(ins_idx) == elems, iface[g], types)
            if r is not None:
                src1, otypes, where = r
                params = f"{_UT[inp[ins_idx[0]][0]]} in0, " + "".join(
                    f"{t}& o{j}, " for j, t in enumerate(otypes))
                srcs.append(f"__device__ __forceinline__ void dec{g}1({params}int& bad) {{\n    "
                            + "\n    ".join(konst + src1) + "\n}\n")
                per[g] = (otypes, where)
    return "".join(srcs), iface["A"], iface["B"], per


def _per_element(items, g, elem_in, only_elems, iface, types):
    """decA1's statements, output types and {interface name: (element, position)}, or None."""
    if not only_elems:
        return None
    groups = {i: [] for i in elem_in}
    for n, st, refs, idx, gg, d in items:
        if gg != g:
            continue
        if len(d) != 1 or next(iter(d)) not in groups:
            return None
        groups[next(iter(d))].append((n, st))
    canon = []
    for e, i in enumerate(elem_in):
        names = {n: f"e{j}" for j, (n, _) in enumerate(groups[i]) if n is not None}

        def ren(m, names=names):
            return names.get(m.group(1), m.group(1))
        text = [_ANY.sub(ren, st).replace(f"in{i};", "in0;").replace(f"in{i})", "in0)")
                for _, st in groups[i]]
        canon.append((text, names))
    if any(t != canon[0][0] for t, _ in canon):
        return None
    where, pos = {}, None
    for e, (i, (text, names)) in enumerate(zip(elem_in, canon)):
        mine = sorted(int(names[n][1:]) for _, n in iface if n in names)
        if pos is None:
            pos = mine
        elif mine != pos:
            return None
        for _, n in iface:
            if n in names:
                where[n] = (e, pos.index(int(names[n][1:])))
    if len(where) != len(iface):
        return None
    name_of = {int(v[1:]): k for k, v in canon[0][1].items()}
    otypes = [types[name_of[j]] for j in pos]
    body = canon[0][0] + [f"o{q} = e{j};" for q, j in enumerate(pos)]
    return body, otypes, where


def _expr(expr: str, name: str, c: int, tb, cls_of) -> str:
    if name in tb.n32:
        # exact in 32-bit arithmetic (the tracer's decision): int literals, no casts; an
        # operand held wider (a checked result) promotes the expression, which is still exact
        def lit(m):
            v = int(m.group(1))
            return f"({v})" if -(1 << 31) < v < (1 << 31) else m.group(0)
        return _I64C.sub(lit, expr)
    refs = set(_REF.findall(expr))
    e = max([64, c] + [cls_of(r) for r in refs])
    t = _CLS[e]

    def cast(m):
        r = m.group(1)
        return f"(({t}){r})" if cls_of(r) < e else r
    return _REF.sub(cast, expr)


_HEAD = r"""
typedef long long W64;
typedef unsigned long long U64T;
#define SEL(c, x, y) ((c) ? (x) : (y))
#define CMP(e) ((bool)(e))
#define U64(e) ((unsigned long long)(e))
#define S64(e) ((long long)(e))
#define U32(e) ((unsigned int)(e))
#define S32(e) ((int)(e))
#define ONE32 (1u)
#define BC(e) (e)
#define INT64_C(c) c##LL
#define UINT64_C(c) c##ULL
"""

_HEAD128 = r"""
typedef __int128 W128;
typedef unsigned __int128 U128;
"""


def _step_kernels(k: int, nb: int, m: int, n: int, st: tuple[int, int, int, int],
                  tile: tuple[int, int, int, int, int] | None) -> str:
    """__global__ wrappers of the step function `step(a_0..a_{k-1}, b_0.., c, sa_0.., sb_0..)`:
    tile None: sim (independent m x n tiles) and lanes (K-long lanes); else gemm (K-steps
    chained, BM x BN outputs per block, TM x TN per thread, KS steps per shared-memory stage)."""
    TA, TB, TC, TD = (_UT[s] for s in st)
    BM, BN, TM, TN, KS = tile or (1, 1, 1, 1, 1)
    NT = (BM // TM) * (BN // TN)
    nbs = max(nb, 1)

    def call(a, b, c, sa, sb):
        args = [a(t) for t in range(k)] + [b(t) for t in range(k)] + [c]
        args += [sa(q) for q in range(nb)] + [sb(q) for q in range(nb)]
        return f"step({', '.join(args)}, bad)"

    sim = f"""
extern "C" __global__ void sim(long long T, const {TA}* __restrict__ A, const {TB}* __restrict__ Bt,
    const {TC}* __restrict__ C, const unsigned char* __restrict__ SA,
    const unsigned char* __restrict__ SBt, {TD}* __restrict__ D, int* flag) {{
    long long total = T * {m * n}LL;
    int bad = 0;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {{
        long long t = idx / {m * n};
        int i = (int)((idx / {n}) % {m}), j = (int)(idx % {n});
        const {TA}* a = A + (t * {m} + i) * {k};
        const {TB}* b = Bt + (t * {n} + j) * {k};
        const unsigned char* sa = SA + (t * {m} + i) * {nb};
        const unsigned char* sb = SBt + (t * {n} + j) * {nb};
        D[idx] = {call(lambda q: f"a[{q}]", lambda q: f"b[{q}]", "C[idx]", lambda q: f"sa[{q}]", lambda q: f"sb[{q}]")};
    }}
    if (bad) atomicOr(flag, 1);
}}
"""
    lanes = f"""
extern "C" __global__ void lanes(long long n, int K, const {TA}* __restrict__ A,
    const {TB}* __restrict__ B, const {TC}* __restrict__ C, const unsigned char* __restrict__ SA,
    const unsigned char* __restrict__ SB, {TD}* __restrict__ D, int* flag) {{
    int bad = 0;
    int KB = K / {k} * {nb};
    for (long long l = blockIdx.x * (long long)blockDim.x + threadIdx.x; l < n;
         l += (long long)gridDim.x * blockDim.x) {{
        {TD} acc = ({TD})C[l];
        for (int s = 0; s < K / {k}; s++) {{
            const {TA}* a = A + l * K + s * {k};
            const {TB}* b = B + l * K + s * {k};
            const unsigned char* sa = SA + l * KB + s * {nb};
            const unsigned char* sb = SB + l * KB + s * {nb};
            acc = {call(lambda q: f"a[{q}]", lambda q: f"b[{q}]", f"({TC})acc", lambda q: f"sa[{q}]", lambda q: f"sb[{q}]")};
        }}
        D[l] = acc;
    }}
    if (bad) atomicOr(flag, 1);
}}
"""
    KT = KS * k
    gemm = f"""
extern "C" __global__ void __launch_bounds__({NT}) gemm(int M, int N, int K, int s0, int s1,
    const {TA}* __restrict__ A, const {TB}* __restrict__ B, const {TC}* __restrict__ C,
    const unsigned char* __restrict__ SA, const unsigned char* __restrict__ SB,
    {TD}* __restrict__ D, int* flag) {{
    __shared__ {TA} As[{KT}][{BM}];
    __shared__ {TB} Bs[{KT}][{BN}];
    __shared__ unsigned char SAs[{KS * nbs}][{BM}];
    __shared__ unsigned char SBs[{KS * nbs}][{BN}];
    const int tx = threadIdx.x % {BN // TN}, ty = threadIdx.x / {BN // TN};
    const int m0 = blockIdx.y * {BM}, n0 = blockIdx.x * {BN};
    const int KB = K / {k} * {nb};
    int bad = 0;
    {TD} acc[{TM}][{TN}];
    #pragma unroll
    for (int r = 0; r < {TM}; r++) {{
        #pragma unroll
        for (int c = 0; c < {TN}; c++) {{
            int i = m0 + ty + r * {BM // TM}, j = n0 + tx + c * {BN // TN};
            acc[r][c] = (i < M && j < N) ? ({TD})C[(long long)i * N + j] : ({TD})0;
        }}
    }}
    for (int kk0 = s0 * {k}; kk0 < s1 * {k}; kk0 += {KT}) {{
        for (int e = threadIdx.x; e < {BM * KT}; e += {NT}) {{
            int r = e / {KT}, t = e % {KT};
            int i = m0 + r, kk = kk0 + t;
            As[t][r] = (i < M && kk < s1 * {k}) ? A[(long long)i * K + kk] : ({TA})0;
        }}
        for (int e = threadIdx.x; e < {BN * KT}; e += {NT}) {{
            int t = e / {BN}, c = e % {BN};
            int j = n0 + c, kk = kk0 + t;
            Bs[t][c] = (j < N && kk < s1 * {k}) ? B[(long long)kk * N + j] : ({TB})0;
        }}
        if ({nb} > 0) {{
            int q0 = kk0 / {k} * {nb};
            for (int e = threadIdx.x; e < {BM * KS * nbs}; e += {NT}) {{
                int r = e / {KS * nbs}, q = e % {KS * nbs};
                int i = m0 + r;
                SAs[q][r] = (i < M && q0 + q < KB) ? SA[(long long)i * KB + q0 + q] : 0;
            }}
            for (int e = threadIdx.x; e < {BN * KS * nbs}; e += {NT}) {{
                int q = e / {BN}, c = e % {BN};
                int j = n0 + c;
                SBs[q][c] = (j < N && q0 + q < KB) ? SB[(long long)(q0 + q) * N + j] : 0;
            }}
        }}
        __syncthreads();
        #pragma unroll 1
        for (int ks = 0; ks < {KS}; ks++) {{
            if (kk0 + ks * {k} >= s1 * {k}) break;
            {TA} a[{TM}][{k}];
            {TB} b[{TN}][{k}];
            unsigned char sa[{TM}][{nbs}], sb[{TN}][{nbs}];
            #pragma unroll
            for (int r = 0; r < {TM}; r++) {{
                #pragma unroll
                for (int t = 0; t < {k}; t++) a[r][t] = As[ks * {k} + t][ty + r * {BM // TM}];
                #pragma unroll
                for (int q = 0; q < {nb}; q++) sa[r][q] = SAs[ks * {nbs} + q][ty + r * {BM // TM}];
            }}
            #pragma unroll
            for (int c = 0; c < {TN}; c++) {{
                #pragma unroll
                for (int t = 0; t < {k}; t++) b[c][t] = Bs[ks * {k} + t][tx + c * {BN // TN}];
                #pragma unroll
                for (int q = 0; q < {nb}; q++) sb[c][q] = SBs[ks * {nbs} + q][tx + c * {BN // TN}];
            }}
            #pragma unroll
            for (int r = 0; r < {TM}; r++) {{
                #pragma unroll
                for (int c = 0; c < {TN}; c++) {{
                    acc[r][c] = {call(lambda q: f"a[r][{q}]", lambda q: f"b[c][{q}]", f"({TC})acc[r][c]", lambda q: f"sa[r][{q}]", lambda q: f"sb[c][{q}]")};
                }}
            }}
        }}
        __syncthreads();
    }}
    #pragma unroll
    for (int r = 0; r < {TM}; r++) {{
        #pragma unroll
        for (int c = 0; c < {TN}; c++) {{
            int i = m0 + ty + r * {BM // TM}, j = n0 + tx + c * {BN // TN};
            if (i < M && j < N) D[(long long)i * N + j] = acc[r][c];
        }}
    }}
    if (bad) atomicOr(flag, 1);
}}
"""
    return sim + lanes if tile is None else gemm


_TSIZE = {"bool": 1, "int": 4, "long long": 8, "W128": 16}


def split_smem(ia, ib, tile, k: int = 0, st=(8, 8), nb: int = 0) -> int:
    """Shared-memory bytes of one stage of the split GEMM: the decoded operand values, and
    (given k, the A/B storage widths and the scales per step) the raw operand tiles."""
    BM, BN = tile[0], tile[1]
    raw = k * (BM * st[0] + BN * st[1]) // 8 + max(nb, 1) * (BM + BN)
    return BM * sum(_TSIZE[t] for t, _ in ia) + BN * sum(_TSIZE[t] for t, _ in ib) + raw


def _gemm_split_kernel(k: int, nb: int, st, tile, ia, ib, per=None) -> str:
    """The GEMM kernel over split_source's functions: per K-step the block decodes its BM rows
    (decA) and BN columns (decB) once into shared memory, then every thread runs `rest` for
    its TM x TN outputs on those values (a tile element is decoded once per block, not once
    per output)."""
    TA, TB, TC, TD = (_UT[s] for s in st)
    BM, BN, TM, TN, _ = tile
    NT = (BM // TM) * (BN // TN)
    nbs = max(nb, 1)
    per = per or {"A": None, "B": None}
    sh, dec, args = "", "", {}
    for g, X, S, W, iface, idx in (("A", "As", "SAs", BM, ia, f"ty + r * {BM // TM}"),
                                   ("B", "Bs", "SBs", BN, ib, f"tx + c * {BN // TN}")):
        if per[g] is not None:        # one element per thread: decA1 on As[t][r]
            otypes, where = per[g]
            sh += "".join(f"    __shared__ {t} I{g}_{j}[{k}][{W}];\n" for j, t in enumerate(otypes))
            dec += (f"        for (int e = threadIdx.x; e < {k * W}; e += {NT}) {{ int t = e / {W}, q = e % {W}; "
                    f"dec{g}1({X}[t][q], " + "".join(f"I{g}_{j}[t][q], " for j in range(len(otypes)))
                    + "bad); }\n")
            for _, n in iface:
                e, j = where[n]
                args[n] = f"I{g}_{j}[{e}][{idx}]"
        else:                         # one row (column) per thread: decA on As[.][r]
            sh += "".join(f"    __shared__ {t} I{g}_{n}[{W}];\n" for t, n in iface)
            dec += (f"        for (int q = threadIdx.x; q < {W}; q += {NT}) {{ dec{g}("
                    + "".join(f"{X}[{t}][q], " for t in range(k)) + "".join(f"{S}[{u}][q], " for u in range(nb))
                    + "".join(f"I{g}_{n}[q], " for _, n in iface) + "bad); }\n")
            for _, n in iface:
                args[n] = f"I{g}_{n}[{idx}]"
    rest = "rest(" + "".join(f"{args[n]}, " for _, n in ia + ib) + f"({TC})acc[r][c], bad)"
    return f"""
extern "C" __global__ void __launch_bounds__({NT}) gemm(int M, int N, int K, int s0, int s1,
    const {TA}* __restrict__ A, const {TB}* __restrict__ B, const {TC}* __restrict__ C,
    const unsigned char* __restrict__ SA, const unsigned char* __restrict__ SB,
    {TD}* __restrict__ D, int* flag) {{
    __shared__ {TA} As[{k}][{BM}];
    __shared__ {TB} Bs[{k}][{BN}];
    __shared__ unsigned char SAs[{nbs}][{BM}];
    __shared__ unsigned char SBs[{nbs}][{BN}];
{sh}    const int tx = threadIdx.x % {BN // TN}, ty = threadIdx.x / {BN // TN};
    const int m0 = blockIdx.y * {BM}, n0 = blockIdx.x * {BN};
    const int KB = K / {k} * {nb};
    int bad = 0;
    {TD} acc[{TM}][{TN}];
    #pragma unroll
    for (int r = 0; r < {TM}; r++) {{
        #pragma unroll
        for (int c = 0; c < {TN}; c++) {{
            int i = m0 + ty + r * {BM // TM}, j = n0 + tx + c * {BN // TN};
            acc[r][c] = (i < M && j < N) ? ({TD})C[(long long)i * N + j] : ({TD})0;
        }}
    }}
    for (int kk0 = s0 * {k}; kk0 < s1 * {k}; kk0 += {k}) {{
        for (int e = threadIdx.x; e < {BM * k}; e += {NT}) {{
            int r = e / {k}, t = e % {k};
            int i = m0 + r;
            As[t][r] = i < M ? A[(long long)i * K + kk0 + t] : ({TA})0;
        }}
        for (int e = threadIdx.x; e < {BN * k}; e += {NT}) {{
            int t = e / {BN}, c = e % {BN};
            int j = n0 + c;
            Bs[t][c] = j < N ? B[(long long)(kk0 + t) * N + j] : ({TB})0;
        }}
        if ({nb} > 0) {{
            int q0 = kk0 / {k} * {nb};
            for (int e = threadIdx.x; e < {BM * nbs}; e += {NT}) {{
                int r = e / {nbs}, q = e % {nbs};
                int i = m0 + r;
                SAs[q][r] = (i < M && q < {nb}) ? SA[(long long)i * KB + q0 + q] : 0;
            }}
            for (int e = threadIdx.x; e < {BN * nbs}; e += {NT}) {{
                int q = e / {BN}, c = e % {BN};
                int j = n0 + c;
                SBs[q][c] = (j < N && q < {nb}) ? SB[(long long)(q0 + q) * N + j] : 0;
            }}
        }}
        __syncthreads();
{dec}        __syncthreads();
        #pragma unroll
        for (int r = 0; r < {TM}; r++) {{
            #pragma unroll
            for (int c = 0; c < {TN}; c++) {{
                acc[r][c] = {rest};
            }}
        }}
        __syncthreads();
    }}
    #pragma unroll
    for (int r = 0; r < {TM}; r++) {{
        #pragma unroll
        for (int c = 0; c < {TN}; c++) {{
            int i = m0 + ty + r * {BM // TM}, j = n0 + tx + c * {BN // TN};
            if (i < M && j < N) D[(long long)i * N + j] = acc[r][c];
        }}
    }}
    if (bad) atomicOr(flag, 1);
}}
"""


def _ew_kernel(storages: Sequence[int], out: int) -> str:
    ins = ", ".join(f"const {_UT[s]}* __restrict__ x{i}" for i, s in enumerate(storages))
    args = ", ".join(f"x{i}[l]" for i in range(len(storages)))
    return f"""
extern "C" __global__ void ew(long long n, {ins}, {_UT[out]}* __restrict__ y, int* flag) {{
    int bad = 0;
    for (long long l = blockIdx.x * (long long)blockDim.x + threadIdx.x; l < n;
         l += (long long)gridDim.x * blockDim.x)
        y[l] = step({args}, bad);
    if (bad) atomicOr(flag, 1);
}}
"""


def trace_source(fn: Callable, in_storage: Sequence[int], out_storage: Sequence[int]) -> str:
    """The `step` device function of fn(K, *inputs), traced once."""
    from .bits import BV
    from .compile import TraceBackend
    K = TraceBackend()
    ins = [K.input(s) for s in in_storage]
    outs = fn(K, *ins)
    if isinstance(outs, BV):
        outs = [outs]
    src = device_source(K, outs, out_storage, "step")
    head = _HEAD + (_HEAD128 if "W128" in src else "")
    return head + src


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
        [here / "cuda.py", here / "compile.py", here / "bits.py"]).encode()).hexdigest()[:32]
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
#: Source: bench/bench_gpu.py on an H100, 2026-11-24 22:14 UTC (docs/gpu.md): 32x64 blocks with 2x4
#: outputs per thread, split kernel: 1.73 s for 8192^3 (16x64 1x4: 1.80 s; 32x32 2x2: 1.89 s;
#: 16x16 1x4: 2.01 s; the whole-step kernel 16x64 1x4: 2.79 s); ALU-pipe bound (ncu).
GEMM_TILE = tuple(int(x) for x in os.environ.get("MMAFORMAL_GEMM_TILE", "32,64,2,4,1").split(","))
#: shared-memory bytes per stage of the split GEMM (decoded tile elements and raw tiles; static
#: shared memory is limited to 48 KiB), above which the whole-step kernel is used (0: never split)
SPLIT_SMEM = int(os.environ.get("MMAFORMAL_GEMM_SPLIT_SMEM", str(46 * 1024)))


class DotModule:
    """One instruction step (a traced `Theory.dot`) compiled for the GPU, with its runners.
    Two modules, each built on first use: sim + lanes, and the GEMM kernel of one tiling."""

    def __init__(self, src: str, k: int, nb: int, m: int, n: int, st, name: str, tile=None,
                 split=None):
        self.k, self.nb, self.m, self.n, self.st, self.name = k, nb, m, n, tuple(st), name
        self._split = split                     # () -> split_step_source(..), or None
        self.tile = tuple(tile or GEMM_TILE)
        BM, BN, TM, TN, KS = self.tile
        if BM % TM or BN % TN or min(self.tile) < 1 or (BM // TM) * (BN // TN) > 1024:
            raise ValueError(f"GEMM tile {self.tile}: BM, BN must be multiples of TM, TN and "
                             f"(BM/TM)*(BN/TN) <= 1024 threads")
        self.step = src
        self._mods: dict[str, Any] = {}

    def source(self, which: str) -> str:
        """'sim' (sim + lanes kernels) or 'gemm': the CUDA source of that module. The GEMM
        decodes each tile element once per block (split_source) when its decoded values fit
        SPLIT_SMEM bytes of shared memory per stage, else it runs the whole step per output."""
        geo = (self.k, self.nb, self.m, self.n, self.st)
        if which == "gemm" and self._split is not None and SPLIT_SMEM > 0:
            src, ia, ib, per = self._split()
            if split_smem(ia, ib, self.tile, self.k, self.st, self.nb) <= SPLIT_SMEM:
                return src + _gemm_split_kernel(self.k, self.nb, self.st, self.tile, ia, ib, per)
        return self.step + _step_kernels(*geo, None if which == "sim" else self.tile)

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
    def lanes_host(self, a, b, c, sa=None, sb=None) -> np.ndarray:
        cp = self._cp()
        n, K = a.shape
        out = np.empty(n, dtype=_NPT[self.st[3]])
        per = a[:1].nbytes + b[:1].nbytes + c[:1].nbytes + out[:1].nbytes
        if sa is not None:
            per += sa[:1].nbytes + sb[:1].nbytes
        step = max(1, _mem_budget(cp) // max(per, 1))
        fn = self.mod("sim").get_function("lanes")
        for l0 in range(0, n, step):
            l1 = min(n, l0 + step)
            g = [cp.asarray(np.ascontiguousarray(x[l0:l1])) if x is not None else self._dummy()
                 for x in (a, b, c, sa, sb)]
            D = cp.empty(l1 - l0, dtype=_NPT[self.st[3]])
            flag = cp.zeros(1, dtype=cp.int32)
            self._launch(fn, l1 - l0, (np.int64(l1 - l0), np.int32(K), *g, D, flag))
            _flag_check(flag, self.name)
            out[l0:l1] = D.get()
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
        self.mod = build(src + _ew_kernel(in_storage, out_storage))

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


def split_step_source(th, ins) -> tuple[str, list, list, dict]:
    """step_source's trace split for a GEMM (split_source): decA over one row's k operands
    (and its scales), decB over one column's, rest over their values and c."""
    from . import fp
    from .bits import BV
    from .compile import TraceBackend
    st = [fp.fmt(f).storage for f in (ins.a, ins.b, ins.c, ins.d)]
    k = ins.k
    nb = ins.k // ins.scale_block if ins.scale else 0
    K = TraceBackend()
    x = [K.input(s) for s in [st[0]] * k + [st[1]] * k + [st[2]] + [8] * (2 * nb)]
    sa = x[2 * k + 1:2 * k + 1 + nb] if nb else None
    sb = x[2 * k + 1 + nb:] if nb else None
    d = th.dot(K, x[:k], x[k:2 * k], x[2 * k], sa, sb)
    outs = [d] if isinstance(d, BV) else list(d)
    a_in = list(range(k)) + list(range(2 * k + 1, 2 * k + 1 + nb))
    b_in = list(range(k, 2 * k)) + list(range(2 * k + 1 + nb, 2 * k + 1 + 2 * nb))
    src, ia, ib, per = split_source(K, outs, [st[3]], a_in, b_in, elems=k)
    return _HEAD + (_HEAD128 if "W128" in src else "") + src, ia, ib, per


def _geometry(ins):
    from . import fp
    st = tuple(fp.fmt(f).storage for f in (ins.a, ins.b, ins.c, ins.d))
    nb = ins.k // ins.scale_block if ins.scale else 0
    return ins.k, nb, ins.m, ins.n, st


def module_source(th, ins, tile=None, which: str = "gemm") -> str:
    """The CUDA source of one of the step's modules ('sim': sim + lanes; 'gemm': the GEMM
    kernel of a tiling, default GEMM_TILE, split where DotModule splits it)."""
    mod = DotModule(step_source(th, ins), *_geometry(ins), ins.name, tile,
                    split=lambda: split_step_source(th, ins))
    return mod.source(which)


def dot_module(th, ins, tile=None, split: bool = True) -> DotModule:
    """The GPU module of one step of instruction `ins` under theory `th` (cached); split=False
    keeps the whole step per output in the GEMM (see DotModule.source)."""
    key = (th.hash(), ins.name, tuple(tile or GEMM_TILE), split)
    with _DLOCK:
        mod = _DOTS.get(key)
        if mod is None:
            mod = _DOTS[key] = DotModule(step_source(th, ins), *_geometry(ins), ins.name, tile,
                                         split=(lambda: split_step_source(th, ins)) if split else None)
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
