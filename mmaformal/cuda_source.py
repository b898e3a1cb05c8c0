"""Layer 1 (fast path, GPU), cuda_source: the CUDA C text of a traced definition.

The code generator of mmaformal.cuda, which compiles and runs what is written here. The trace
that `mmaformal.compile.TraceBackend` records (one instruction step, `Theory.dot`) becomes a
CUDA `__device__` function (`device_source`, or split by dependence: `split_source`), and the
`__global__` wrappers that apply it are generated around it: independent tiles (`sim`), K-long
lanes (`lanes`), a GEMM walked in the instruction's K-steps (`gemm`: the whole step per output,
or the split step decoding each tile element once per block) and elementwise (`ew`).

May import: mmaformal.compile (the trace; lazily), mmaformal.bits and mmaformal.fp (lazily), the
standard library. Never CuPy, numpy or z3: generating a source needs no GPU.

Invariants: no arithmetic is written here, every operation comes from the trace; the text is
a function of the trace and the geometry only (the kernel caches are keyed by it), so the
same trace always gives the same source, byte for byte. The value widths are the C path's:
int32 where a value's static interval proves it fits, else int64 or __int128; a statement runs
in 32-bit arithmetic only where the tracer marked it exact there (`TraceBackend.n32`); every
range check of the trace is kept (a failing lane sets `bad`).
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

__all__ = ["device_source", "split_source", "split_smem", "step_kernels", "gemm_split_kernel",
           "ew_kernel", "trace_source", "split_step_source", "element_fact", "operand_facts",
           "dec_bytes", "rest_size", "LEVELS"]

_UT = {8: "unsigned char", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}

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
#ifdef __CUDA_ARCH__
#define CLZ64(e) (__clzll((long long)(e)))
#else
#define CLZ64(e) ((e) ? __builtin_clzll((unsigned long long)(e)) : 64)
#endif
"""

_HEAD128 = r"""
typedef __int128 W128;
typedef unsigned __int128 U128;
"""


def _step_call(k: int, nb: int, a, b, c: str, sa, sb) -> str:
    """`step(a_0.., b_0.., c, sa_0.., sb_0.., bad)`, each operand named by its function."""
    args = [a(t) for t in range(k)] + [b(t) for t in range(k)] + [c]
    args += [sa(q) for q in range(nb)] + [sb(q) for q in range(nb)]
    return f"step({', '.join(args)}, bad)"


def _sim_kernel(k: int, nb: int, m: int, n: int, types: tuple[str, str, str, str]) -> str:
    """`sim`: one output element of independent m x n tiles per thread (B transposed)."""
    TA, TB, TC, TD = types
    return f"""
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
        D[idx] = {_step_call(k, nb, lambda q: f"a[{q}]", lambda q: f"b[{q}]", "C[idx]", lambda q: f"sa[{q}]", lambda q: f"sb[{q}]")};
    }}
    if (bad) atomicOr(flag, 1);
}}
"""


def _lanes_kernel(k: int, nb: int, types: tuple[str, str, str, str]) -> str:
    """`lanes`: one K-long lane per thread, the accumulator carried through its K-steps."""
    TA, TB, TC, TD = types
    return f"""
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
            acc = {_step_call(k, nb, lambda q: f"a[{q}]", lambda q: f"b[{q}]", f"({TC})acc", lambda q: f"sa[{q}]", lambda q: f"sb[{q}]")};
        }}
        D[l] = acc;
    }}
    if (bad) atomicOr(flag, 1);
}}
"""


def _gemm_open(types: tuple[str, str, str, str], tile, k: int, nb: int, kt: int, sn: int,
               shared: str = "") -> str:
    """The head of a GEMM kernel: its signature, the shared operand tiles (kt rows of A and B
    values, sn rows of scales, then `shared`), the thread's place and its accumulators
    loaded from C."""
    TA, TB, TC, TD = types
    BM, BN, TM, TN = tile[:4]
    NT = (BM // TM) * (BN // TN)
    return f"""
extern "C" __global__ void __launch_bounds__({NT}) gemm(int M, int N, int K, int s0, int s1,
    const {TA}* __restrict__ A, const {TB}* __restrict__ B, const {TC}* __restrict__ C,
    const unsigned char* __restrict__ SA, const unsigned char* __restrict__ SB,
    {TD}* __restrict__ D, int* flag) {{
    __shared__ {TA} As[{kt}][{BM}];
    __shared__ {TB} Bs[{kt}][{BN}];
    __shared__ unsigned char SAs[{sn}][{BM}];
    __shared__ unsigned char SBs[{sn}][{BN}];
{shared}    const int tx = threadIdx.x % {BN // TN}, ty = threadIdx.x / {BN // TN};
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
"""


def _gemm_close(tile) -> str:
    """The tail of a GEMM kernel: the accumulators stored to D, the overflow flag raised."""
    BM, BN, TM, TN = tile[:4]
    return f"""    #pragma unroll
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


def _gemm_step_kernel(k: int, nb: int, types: tuple[str, str, str, str], tile) -> str:
    """`gemm` over the whole step: K-steps chained, BM x BN outputs per block, TM x TN per
    thread, KS steps per shared-memory stage; every output runs the whole step."""
    TA, TB, TC, TD = types
    BM, BN, TM, TN, KS = tile
    NT = (BM // TM) * (BN // TN)
    nbs = max(nb, 1)
    KT = KS * k
    step = _step_call(k, nb, lambda q: f"a[r][{q}]", lambda q: f"b[c][{q}]", f"({TC})acc[r][c]",
                      lambda q: f"sa[r][{q}]", lambda q: f"sb[c][{q}]")
    loop = f"""    for (int kk0 = s0 * {k}; kk0 < s1 * {k}; kk0 += {KT}) {{
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
                    acc[r][c] = {step};
                }}
            }}
        }}
        __syncthreads();
    }}
"""
    return _gemm_open(types, tile, k, nb, KT, KS * nbs) + loop + _gemm_close(tile)


def step_kernels(k: int, nb: int, m: int, n: int, st: tuple[int, int, int, int],
                 tile: tuple[int, int, int, int, int] | None) -> str:
    """__global__ wrappers of the step function `step(a_0..a_{k-1}, b_0.., c, sa_0.., sb_0..)`:
    tile None: sim (independent m x n tiles) and lanes (K-long lanes); else gemm (K-steps
    chained, BM x BN outputs per block, TM x TN per thread, KS steps per shared-memory stage)."""
    types = tuple(_UT[s] for s in st)
    if tile is None:
        return _sim_kernel(k, nb, m, n, types) + _lanes_kernel(k, nb, types)
    return _gemm_step_kernel(k, nb, types, tile)


_TSIZE = {"bool": 1, "int": 4, "long long": 8, "W128": 16}


def split_smem(ia, ib, tile, k: int = 0, st=(8, 8), nb: int = 0) -> int:
    """Shared-memory bytes of one stage of the split GEMM: the decoded operand values, and
    (given k, the A/B storage widths and the scales per step) the raw operand tiles."""
    BM, BN = tile[0], tile[1]
    raw = k * (BM * st[0] + BN * st[1]) // 8 + max(nb, 1) * (BM + BN)
    return BM * sum(_TSIZE[t] for t, _ in ia) + BN * sum(_TSIZE[t] for t, _ in ib) + raw


def _split_decoders(k: int, nb: int, tile, ia, ib, per, sfx: str = "") -> tuple[list, str, dict[str, str]]:
    """(the shared arrays of the decoded values [(type, name, dims)], the statements that decode
    a stage's operand tiles into them, {interface name: the shared element `rest` reads}); sfx
    names the functions and arrays of a specialised trace (LEVELS)."""
    BM, BN, TM, TN, _ = tile
    NT = (BM // TM) * (BN // TN)
    sh, dec, args = [], "", {}
    for g, X, S, W, iface, idx in (("A", "As", "SAs", BM, ia, f"ty + r * {BM // TM}"),
                                   ("B", "Bs", "SBs", BN, ib, f"tx + c * {BN // TN}")):
        if per[g] is not None:        # one element per thread: decA1 on As[t][r]
            otypes, where = per[g]
            sh += [(t, f"I{g}{sfx}_{j}", (k, W)) for j, t in enumerate(otypes)]
            dec += (f"        for (int e = threadIdx.x; e < {k * W}; e += {NT}) {{ int t = e / {W}, q = e % {W}; "
                    f"dec{g}1{sfx}({X}[t][q], " + "".join(f"I{g}{sfx}_{j}[t][q], " for j in range(len(otypes)))
                    + "bad); }\n")
            for _, n in iface:
                e, j = where[n]
                args[n] = f"I{g}{sfx}_{j}[{e}][{idx}]"
        else:                         # one row (column) per thread: decA on As[.][r]
            sh += [(t, f"I{g}{sfx}_{n}", (W,)) for t, n in iface]
            dec += (f"        for (int q = threadIdx.x; q < {W}; q += {NT}) {{ dec{g}{sfx}("
                    + "".join(f"{X}[{t}][q], " for t in range(k)) + "".join(f"{S}[{u}][q], " for u in range(nb))
                    + "".join(f"I{g}{sfx}_{n}[q], " for _, n in iface) + "bad); }\n")
            for _, n in iface:
                args[n] = f"I{g}{sfx}_{n}[{idx}]"
    return sh, dec, args


def _union(sets: list) -> str:
    """Shared declarations of the decoded arrays of several traces in one buffer: a K-step
    decodes and reads the arrays of one trace only, so every trace's arrays start at offset 0
    (`DEC`, aligned to 16; each array aligned to its element size)."""
    size, decl = 0, ""
    for arrays in sets:
        off = 0
        for t, name, dims in arrays:
            z = _TSIZE[t]
            off = -(-off // z) * z
            d = "".join(f"[{x}]" for x in dims)
            decl += f"    {t} (&{name}){d} = *reinterpret_cast<{t} (*){d}>(DEC + {off});\n"
            n = 1
            for x in dims:
                n *= x
            off += n * z
        size = max(size, off)
    return f"    __shared__ __align__(16) unsigned char DEC[{max(16, -(-size // 16) * 16)}];\n" + decl


def rest_size(src: str, sfx: str = "") -> int:
    """The number of statements of `rest<sfx>` (a split step's per-output part) in src."""
    i = src.index(f" rest{sfx}(")
    return src[i:src.index("\n}\n", i)].count(";")


def dec_bytes(ia, ib, tile) -> int:
    """Shared-memory bytes of one trace's decoded values for a BM x BN block."""
    return tile[0] * sum(_TSIZE[t] for t, _ in ia) + tile[1] * sum(_TSIZE[t] for t, _ in ib)


def gemm_split_kernel(k: int, nb: int, st, tile, ia, ib, per=None, fast=()) -> str:
    """The GEMM kernel over split_source's functions: per K-step the block decodes its BM rows
    (decA) and BN columns (decB) once into shared memory, then every thread runs `rest` for
    its TM x TN outputs on those values (a tile element is decoded once per block, not once
    per output).

    fast = [(ia, ib, per, fact_a, fact_b, sfx)], most specific first: the functions
    `decA<sfx>`.. `rest<sfx>` of traces specialised under facts of every A and B element
    (split_step_source(.., facts, sfx=sfx)). Each K-step the block checks the facts on the raw
    tiles it loaded (`__syncthreads_and`, so the branch is uniform) and runs the first
    specialised step whose facts hold, the general one where none do: the same bits, since
    each is exact on the inputs it runs on. The decoded values of all of them share one
    buffer (`_union`)."""
    types = tuple(_UT[s] for s in st)
    TA, TB, TC, TD = types
    BM, BN, TM, TN, _ = tile
    NT = (BM // TM) * (BN // TN)
    nbs = max(nb, 1)

    def outs(call: str) -> str:
        return f"""        #pragma unroll
        for (int r = 0; r < {TM}; r++) {{
            #pragma unroll
            for (int c = 0; c < {TN}; c++) {{
                acc[r][c] = {call};
            }}
        }}
"""
    sets, decs, runs = [], [], []
    for q, (fia, fib, fper, _, _, sfx) in enumerate(list(fast) + [(ia, ib, per, None, None, "")]):
        arrays, dec, args = _split_decoders(k, nb, tile, fia, fib, fper or {"A": None, "B": None}, sfx)
        sets.append(arrays)
        decs.append(dec)
        runs.append(outs(f"rest{sfx}(" + "".join(f"{args[n]}, " for _, n in fia + fib) + f"({TC})acc[r][c], bad)"))
    chk_a = "".join(f" ok{q} &= {f[3].c_check('As[t][r]')};" for q, f in enumerate(fast))
    chk_b = "".join(f" ok{q} &= {f[4].c_check('Bs[t][c]')};" for q, f in enumerate(fast))
    okd = "".join(f"\n        int ok{q} = 1;" for q in range(len(fast)))
    sync = ("".join(f"const int f{q} = __syncthreads_and(ok{q}); " for q in range(len(fast))).rstrip()
            or "__syncthreads();")

    def branch(parts: list) -> str:
        if len(parts) == 1:
            return parts[0]
        out = ""
        for q, part in enumerate(parts[:-1]):
            out += f"        {'if' if q == 0 else '} else if'} (f{q}) {{\n{part}"
        return out + f"        }} else {{\n{parts[-1]}        }}\n"
    loop = f"""    for (int kk0 = s0 * {k}; kk0 < s1 * {k}; kk0 += {k}) {{{okd}
        for (int e = threadIdx.x; e < {BM * k}; e += {NT}) {{
            int r = e / {k}, t = e % {k};
            int i = m0 + r;
            As[t][r] = i < M ? A[(long long)i * K + kk0 + t] : ({TA})0;{chk_a}
        }}
        for (int e = threadIdx.x; e < {BN * k}; e += {NT}) {{
            int t = e / {BN}, c = e % {BN};
            int j = n0 + c;
            Bs[t][c] = j < N ? B[(long long)(kk0 + t) * N + j] : ({TB})0;{chk_b}
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
        {sync}
{branch(decs)}        __syncthreads();
{branch(runs)}        __syncthreads();
    }}
"""
    return _gemm_open(types, tile, k, nb, k, nbs, _union(sets)) + loop + _gemm_close(tile)


def ew_kernel(storages: Sequence[int], out: int) -> str:
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



#: The facts of the specialised GEMM steps, most specific first, with the suffix of their
#: functions: "normal" (every A and B element finite, not zero, not subnormal: the exponent
#: field is neither 0 nor all ones) and "finite" (not Inf, not NaN).
LEVELS = (("normal", "_n"), ("finite", "_f"))


def element_fact(fmt_, level: str = "finite"):
    """The Fact `level` ("finite" or "normal", see LEVELS) of a floating-point storage format,
    or None where the format has no such magnitude interval (integers, unsigned scales, NaN
    encoded as -0)."""
    from .compile import Fact
    from .fp import fmt as _fmt
    f = _fmt(fmt_)
    if f.is_int or not f.signed:
        return None
    if f.nan == "ieee":
        top = ((1 << f.w) - 2) << f.t | ((1 << f.t) - 1)        # largest finite magnitude
    elif f.nan == "ones":
        top = (1 << (f.w + f.t)) - 2
    else:
        return None
    low = (1 << f.t) << f.pad if level == "normal" else 0        # smallest normal magnitude
    return Fact(f.pad + f.k - 2, low, (top << f.pad) | ((1 << f.pad) - 1))


def operand_facts(ins, level: str = "finite") -> dict:
    """{input index: Fact} of a specialised GEMM step: every A and B element `level` (the
    inputs of split_step_source: k A elements, k B elements, c, scales). Empty where the
    operand formats have no such fact (integers)."""
    fa, fb = element_fact(ins.a, level), element_fact(ins.b, level)
    if fa is None or fb is None:
        return {}
    k = ins.k
    return {**{i: fa for i in range(k)}, **{k + i: fb for i in range(k)}}


def split_step_source(th, ins, facts: dict | None = None, head: bool = True,
                      sfx: str = "_f") -> tuple[str, list, list, dict]:
    """step_source's trace split for a GEMM (split_source): decA over one row's k operands
    (and its scales), decB over one column's, rest over their values and c. facts: {input
    index: Fact} assumed by a specialised trace (its functions are named with the suffix
    sfx, so that several traces live in one module; head=False leaves out the macros, which
    the general trace's source already holds)."""
    from . import fp
    from .bits import BV
    from .compile import TraceBackend
    st = [fp.fmt(f).storage for f in (ins.a, ins.b, ins.c, ins.d)]
    k = ins.k
    nb = ins.k // ins.scale_block if ins.scale else 0
    K = TraceBackend(facts)
    x = [K.input(s) for s in [st[0]] * k + [st[1]] * k + [st[2]] + [8] * (2 * nb)]
    sa = x[2 * k + 1:2 * k + 1 + nb] if nb else None
    sb = x[2 * k + 1 + nb:] if nb else None
    d = th.dot(K, x[:k], x[k:2 * k], x[2 * k], sa, sb)
    outs = [d] if isinstance(d, BV) else list(d)
    a_in = list(range(k)) + list(range(2 * k + 1, 2 * k + 1 + nb))
    b_in = list(range(k, 2 * k)) + list(range(2 * k + 1 + nb, 2 * k + 1 + 2 * nb))
    src, ia, ib, per = split_source(K, outs, [st[3]], a_in, b_in, elems=k)
    if facts:
        src = _FNS.sub(r"\1" + sfx + "(", src)
    if not head:
        return src, ia, ib, per
    return _HEAD + (_HEAD128 if "W128" in src else "") + src, ia, ib, per


_FNS = re.compile(r"\b(decA1|decB1|decA|decB|rest)\(")
