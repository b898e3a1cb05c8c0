"""CUDA C++ source generator of the MMA harness, for every target (layer 5 front end, ``hw``).

What it is: for each runnable form (:mod:`mmaformal.hw.forms`, read from the catalog) a small
kernel that loads operand *images* (:mod:`mmaformal.hw.layouts`) into registers, shared or
tensor memory, issues exactly one MMA instruction per tile, and stores the accumulator. Many
tiles per launch (grid-stride loop over the batch). One generator per kind:

- ``mma`` / ``mma.sp`` (sm_75 .. sm_120a; one warp per tile, inline PTX; ``mma.sp`` with one
  warp-uniform metadata word per tile: :mod:`mmaformal.hw.sparse`); f16 ``mma.m8n8k4`` runs four
  MMAs per warp, one per quad-pair (a kernel tile holds ``Spec.group`` = 4 tiles);
- ``wgmma`` / ``wgmma.sp`` (sm_90a; one warpgroup per tile, A and B from shared memory through
  descriptors; ``wgmma.sp`` with a metadata word per thread and the sparsity selector ``sel``
  as an immediate);
- ``wmma.mma`` (CUDA C++ WMMA API, ``#include <mma.h>``; images are the plain matrices);
- ``tcgen05.mma`` (sm_100a, cta_group::1, M = 128; one CTA of four warps per tile: A and B from
  shared memory through descriptors, C stored to and D loaded from tensor memory by
  ``tcgen05.st`` / ``tcgen05.ld .32x32b``, the MMA issued by one thread and waited for through
  ``tcgen05.commit`` on an mbarrier; the 32-bit instruction descriptor is built here:
  PTX ISA "Instruction descriptor", the layout of CUTLASS ``UMMA::InstrDescriptor``).

The sm_90a sources are those validated on an H100 (2026-11-21 .. 2026-11-25, SASS.md); the other
targets' sources are compiled offline (tests/test_hw_compile.py) until a device session of
that architecture runs their exact self-check.

May import: numpy, :mod:`mmaformal.hw.forms` and :mod:`mmaformal.hw.layouts` (no CUDA needed to
generate source). Invariant: raw bits in, raw bits out; the kernels move bit patterns and
never do arithmetic on operand values.
"""

from __future__ import annotations

from functools import lru_cache

from .forms import FORMAT_BITS, INT_FORMATS, Spec, spec
from .layouts import operand_tables, words

__all__ = ["KERNEL_NAME", "source", "tmem_cols", "instr_desc"]

KERNEL_NAME = "mmaformal_tile"

_REG = {  # (C++ type, inline-asm constraint, word load expression from a uint word)
    "b32": ("unsigned int", "r"),
    "f32": ("float", "f"),
    "f64": ("double", "d"),
}


def _reg_kind(fmt: str, role: str) -> str:
    if fmt == "f64":
        return "f64"
    if role in "cd" and fmt == "f32":
        return "f32"
    return "b32"


def _load(kind: str, ptr: str) -> str:
    if kind == "f32":
        return f"__uint_as_float({ptr})"
    if kind == "f64":
        return f"__longlong_as_double((long long)({ptr}))"
    return ptr


def _store(kind: str, var: str) -> str:
    if kind == "f32":
        return f"__float_as_uint({var})"
    if kind == "f64":
        return f"(unsigned long long)__double_as_longlong({var})"
    return var


def _wtype(fmt: str) -> str:
    return "unsigned long long" if FORMAT_BITS[fmt] == 64 else "unsigned int"


def _mma_source(s: Spec) -> str:
    na, nb, nc, nd = (words(s.name, r) for r in "abcd")
    ka, kb, kc, kd = (_reg_kind(f, r) for f, r in
                      ((s.atype, "a"), (s.btype, "b"), (s.ctype, "c"), (s.dtype, "d")))
    lines: list[str] = []
    w = lines.append
    w(f"// {s.name}: one warp per tile, {s.ptx}")
    w(f'extern "C" __global__ void __launch_bounds__(256) {KERNEL_NAME}(')
    w(f"    const {_wtype(s.atype)}* __restrict__ A, const {_wtype(s.btype)}* __restrict__ B,")
    w(f"    const {_wtype(s.ctype)}* __restrict__ C, {_wtype(s.dtype)}* __restrict__ D,")
    if s.sparse:  # one metadata word per tile, the same in every lane (see runner.sparse_meta)
        w("    long long ntiles, const unsigned int* __restrict__ E)")
    else:
        w("    long long ntiles)")
    w("{")
    w("    const int lane = threadIdx.x & 31;")
    w("    const long long nwarps = ((long long)gridDim.x * blockDim.x) >> 5;")
    w("    for (long long t = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;"
      " t < ntiles; t += nwarps) {")
    for role, n, kind in (("a", na, ka), ("b", nb, kb), ("c", nc, kc)):
        ptr = role.upper()
        w(f"        const {_wtype(getattr(s, role + 'type'))}* {role}p = {ptr} + t * {n * 32} + lane;")
        for j in range(n):
            w(f"        {_REG[kind][0]} {role}{j} = {_load(kind, f'{role}p[{j * 32}]')};")
    w(f"        {_REG[kd][0]} " + ", ".join(f"d{j}" for j in range(nd)) + ";")
    idx = 0
    groups = []
    for role, n in (("d", nd), ("a", na), ("b", nb), ("c", nc)):
        groups.append("{" + ", ".join(f"%{idx + j}" for j in range(n)) + "}")
        idx += n
    tail = ""
    extra = []
    if s.sparse:  # metadata register and sparsity selector 0 (PTX ISA mma.sp operands e, f)
        w("        const unsigned int e = E[t];")
        tail = f", %{idx}, 0x0"
        extra = ['"r"(e)']
    w(f'        asm volatile("{s.ptx} {groups[0]}, {groups[1]}, {groups[2]}, {groups[3]}{tail};"')
    outs = ", ".join(f'"={_REG[kd][1]}"(d{j})' for j in range(nd))
    ins = ", ".join([f'"{_REG[ka][1]}"(a{j})' for j in range(na)]
                    + [f'"{_REG[kb][1]}"(b{j})' for j in range(nb)]
                    + [f'"{_REG[kc][1]}"(c{j})' for j in range(nc)] + extra)
    w(f"            : {outs}")
    w(f"            : {ins});")
    w(f"        {_wtype(s.dtype)}* dp = D + t * {nd * 32} + lane;")
    for j in range(nd):
        w(f"        dp[{j * 32}] = {_store(kd, f'd{j}')};")
    w("    }")
    w("}")
    return "\n".join(lines) + "\n"




_DESC_FN = [
    "__device__ __forceinline__ unsigned long long mmaformal_desc(const void* p, unsigned lbo, unsigned sbo)",
    "{",
    "    unsigned addr;",
    '    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(addr) : "l"(p));',
    "    unsigned long long d = (unsigned long long)((addr & 0x3FFFF) >> 4);",
    "    d |= (unsigned long long)((lbo >> 4) & 0x3FFF) << 16;",
    "    d |= (unsigned long long)((sbo >> 4) & 0x3FFF) << 32;",
]


def _smem_bytes(s: Spec) -> tuple[int, int]:
    tabs = operand_tables(s.name)
    a_bytes = len(tabs["a"]) * FORMAT_BITS[s.atype] // 8
    b_bytes = len(tabs["b"]) * FORMAT_BITS[s.btype] // 8
    assert a_bytes % 16 == 0 and b_bytes % 16 == 0
    return a_bytes, b_bytes


def _wgmma_tail(s: Spec) -> str:
    if s.atype in ("f16", "bf16"):
        return "p, 1, 1, 0, 0"  # scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
    if s.atype in INT_FORMATS:
        return "p"  # integer wgmma: scale-d only
    return "p, 1, 1"  # scale-d, imm-scale-a, imm-scale-b (tf32/fp8: K-major only)


def _wgmma_head(s: Spec, sel: int) -> list[str]:
    """Comment, descriptor helper and signature of a wgmma kernel (dense or sparse)."""
    if s.sparse:
        lines = [f"// Generated by mmaformal.hw.kernels for {s.name}. Raw bits in, raw bits out.",
                 f"// Build: {s.target.nvcc_flag}",
                 f"// one warpgroup per tile, {s.ptx}, sp-sel {sel}; A (64 x K/2) and B from "
                 "shared memory"]
    else:
        lines = [f"// {s.name}: one warpgroup per tile, {s.ptx}, A and B from shared memory "
                 "(K-major, no swizzle)"]
    lines += _DESC_FN + ["    return d;  // base offset 0, swizzle mode 0 (none)", "}",
                         f'extern "C" __global__ void __launch_bounds__(128) {KERNEL_NAME}(',
                         "    const uint4* __restrict__ A, const uint4* __restrict__ B,",
                         "    const unsigned int* __restrict__ C, unsigned int* __restrict__ D,"]
    if s.sparse:
        lines += ["    long long ntiles, const unsigned int* __restrict__ E,",
                  "    unsigned lbo, unsigned sbo_a, unsigned sbo_b)"]
    else:
        lines += ["    long long ntiles, unsigned lbo, unsigned sbo)"]
    return lines


def _smem_fill(w, a_bytes: int, b_bytes: int) -> None:
    w(f"        for (int i = tid; i < {a_bytes // 16}; i += 128) sA[i] = A[t * {a_bytes // 16} + i];")
    w(f"        for (int i = tid; i < {b_bytes // 16}; i += 128) sB[i] = B[t * {b_bytes // 16} + i];")
    w('        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')


def _wgmma_source(s: Spec, sel: int = 0) -> str:
    a_bytes, b_bytes = _smem_bytes(s)
    nd = words(s.name, "d")
    kd = _reg_kind(s.dtype, "d")
    cty, con = _REG[kd]
    lines = _wgmma_head(s, sel)
    w = lines.append
    sa, sb = ("sbo_a", "sbo_b") if s.sparse else ("sbo", "sbo")
    w("{")
    w(f"    __shared__ __align__(128) uint4 sA[{a_bytes // 16}];")
    w(f"    __shared__ __align__(128) uint4 sB[{b_bytes // 16}];")
    w("    const int tid = threadIdx.x;")
    w(f"    const unsigned long long da = mmaformal_desc(sA, lbo, {sa});")
    w(f"    const unsigned long long db = mmaformal_desc(sB, lbo, {sb});")
    w("    for (long long t = blockIdx.x; t < ntiles; t += gridDim.x) {")
    w("        __syncthreads();  // the previous tile's wgmma has completed (wait_group 0)")
    _smem_fill(w, a_bytes, b_bytes)
    w("        __syncthreads();")
    if s.sparse:
        w("        const unsigned int e = E[t * 128 + tid];")
    w(f"        const unsigned int* cp = C + t * {nd * 128} + tid;")
    for j in range(nd):
        w(f"        {cty} d{j} = {_load(kd, f'cp[{j * 128}]')};")
    fence = ", ".join(f'"+{con}"(d{j})' for j in range(nd))
    w(f'        asm volatile("" : {fence} :: "memory");')
    w('        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')
    regs = "{" + ", ".join(f"%{j}" for j in range(nd)) + "}"
    if s.sparse:   # metadata register and sparsity selector (an immediate)
        ops, ip, extra = f"%{nd}, %{nd + 1}, %{nd + 2}, {int(sel)}", nd + 3, '"r"(e), '
    else:
        ops, ip, extra = f"%{nd}, %{nd + 1}", nd + 2, ""
    w('        asm volatile("{ .reg .pred p; setp.ne.b32 p, %' + str(ip) + ', 0; '
      + f"{s.ptx} {regs}, {ops}, {_wgmma_tail(s)}; }}\"")
    w(f"            : {fence}")
    w(f'            : "l"(da), "l"(db), {extra}"r"(1) : "memory");')
    w('        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");')
    w('        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");')
    w(f'        asm volatile("" : {fence} :: "memory");')
    w(f"        unsigned int* dp = D + t * {nd * 128} + tid;")
    for j in range(nd):
        w(f"        dp[{j * 128}] = {_store(kd, f'd{j}')};")
    w("    }")
    w("}")
    return "\n".join(lines) + "\n"


#: fragment element type and global pointer type of each format
_WMMA_T = {
    "f16": ("__half", "__half"), "bf16": ("__nv_bfloat16", "__nv_bfloat16"),
    "tf32": ("wmma::precision::tf32", "float"), "f32": ("float", "float"),
    "f64": ("double", "double"), "s8": ("signed char", "signed char"),
    "u8": ("unsigned char", "unsigned char"), "s32": ("int", "int"),
    "s4": ("wmma::experimental::precision::s4", "void"),
    "u4": ("wmma::experimental::precision::u4", "void"),
    "b1": ("wmma::experimental::precision::b1", "void"),
}


def _wmma_source(s: Spec) -> str:
    """CUDA C++ of the wmma tile kernel (nvcc; includes <mma.h>)."""
    (fa, pa), (fb, pb), (fc, pc), (fd, pd) = (_WMMA_T[f] for f in
                                              (s.atype, s.btype, s.ctype, s.dtype))
    sh = f"{s.m}, {s.n}, {s.k}"
    # elements -> pointer units (sub-byte operands: 32-bit words)
    wa = s.m * s.k * FORMAT_BITS[s.atype] // 32 if pa == "void" else s.m * s.k
    wb = s.k * s.n * FORMAT_BITS[s.btype] // 32 if pb == "void" else s.k * s.n
    ua = "unsigned int" if pa == "void" else pa
    ub = "unsigned int" if pb == "void" else pb
    if s.bop:
        op = "XOR" if s.bop == "xor" else "AND"
        mma = (f"wmma::bmma_sync(fd, fa, fb, fc, wmma::experimental::bmmaBitOp{op}, "
               "wmma::experimental::bmmaAccumulateOpPOPC);")
    else:
        mma = f"wmma::mma_sync(fd, fa, fb, fc{', true' if s.sat else ''});"
    return f"""// Generated by mmaformal.hw.kernels for {s.name}. Raw bits in, raw bits out.
// Build: {s.target.nvcc_flag}
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;
extern "C" __global__ void {KERNEL_NAME}(const {ua}* __restrict__ a, const {ub}* __restrict__ b,
    const {pc}* __restrict__ c, {pd}* __restrict__ d, long long T) {{
  long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  long long nw = ((long long)gridDim.x * blockDim.x) >> 5;
  for (long long t = warp; t < T; t += nw) {{
    wmma::fragment<wmma::matrix_a, {sh}, {fa}, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, {sh}, {fb}, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, {sh}, {fc}> fc;
    wmma::fragment<wmma::accumulator, {sh}, {fd}> fd;
    wmma::load_matrix_sync(fa, a + t * {wa}, {s.k});
    wmma::load_matrix_sync(fb, b + t * {wb}, {s.k});
    wmma::load_matrix_sync(fc, c + t * {s.m * s.n}, {s.n}, wmma::mem_row_major);
    {mma}
    wmma::store_matrix_sync(d + t * {s.m * s.n}, fd, {s.n}, wmma::mem_row_major);
  }}
}}
"""


# ---------------------------------------------------------------------------------------------
# tcgen05.mma (sm_100a): one CTA of four warps per tile, C and D in tensor memory
# ---------------------------------------------------------------------------------------------

#: operand format codes of the instruction descriptor, per .kind (PTX ISA tcgen05
#: "Instruction descriptor"; CUTLASS UMMA::F16F32Format / MXF8F6F4Format)
_IDESC_FMT = {"f16": {"f16": 0, "bf16": 1}, "tf32": {"tf32": 2},
              "f8f6f4": {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}}
_IDESC_D = {"f16": 0, "f32": 1, "s32": 2}


def instr_desc(s: Spec) -> int:
    """The 32-bit instruction descriptor of a dense tcgen05 form: D format (bits 4-5), A and B
    formats (7-9, 10-12), no negation, both K-major (bits 15, 16 = 0), N >> 3 (17-22), M >> 4
    (24-28)."""
    f = _IDESC_FMT[s.kind]
    return (_IDESC_D[s.dtype] << 4 | f[s.atype] << 7 | f[s.btype] << 10 | (s.n >> 3) << 17
            | (s.m >> 4) << 24)


def tmem_cols(s: Spec) -> int:
    """Tensor-memory columns the kernel allocates: N rounded up to a power of two, >= 32."""
    c = 32
    while c < s.n:
        c *= 2
    return c


def _pow2_chunks(n: int) -> list[tuple[int, int]]:
    """(first column, count) pieces of n columns, each a power of two <= 128 (tcgen05.ld/st
    .32x32b.xN)."""
    out, col = [], 0
    for p in (128, 64, 32, 16, 8, 4, 2, 1):
        while n - col >= p:
            out.append((col, p))
            col += p
    return out


def _tmem_io(w, op: str, n: int) -> None:
    """tcgen05.st (C registers c0.. -> this warp's lanes) or tcgen05.ld (-> d0..) of n columns."""
    for col, cnt in _pow2_chunks(n):
        regs = ", ".join(f"%{j + 1}" for j in range(cnt)) if op == "st" else \
            ", ".join(f"%{j}" for j in range(cnt))
        if op == "st":
            w(f'        asm volatile("tcgen05.st.sync.aligned.32x32b.x{cnt}.b32 [%0], {{{regs}}};"')
            w(f'            :: "r"(tl + {col}), ' + ", ".join(f'"r"(c{col + j})' for j in range(cnt))
              + ' : "memory");')
        else:
            w(f'        asm volatile("tcgen05.ld.sync.aligned.32x32b.x{cnt}.b32 {{{regs}}}, [%{cnt}];"')
            w("            : " + ", ".join(f'"=r"(d{col + j})' for j in range(cnt))
              + f' : "r"(tl + {col}) : "memory");')


def _tcgen05_sync(w, indent: str = "    ") -> None:
    w(f'{indent}asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");')
    w(f"{indent}__syncthreads();")
    w(f'{indent}asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");')


def _tcgen05_prologue(s: Spec, w, a_bytes: int, b_bytes: int, ncols: int) -> None:
    w(f'extern "C" __global__ void __launch_bounds__(128) {KERNEL_NAME}(')
    w("    const uint4* __restrict__ A, const uint4* __restrict__ B,")
    w("    const unsigned int* __restrict__ C, unsigned int* __restrict__ D,")
    w("    long long ntiles, unsigned lbo, unsigned sbo)")
    w("{")
    w(f"    __shared__ __align__(128) uint4 sA[{a_bytes // 16}];")
    w(f"    __shared__ __align__(128) uint4 sB[{b_bytes // 16}];")
    w("    __shared__ __align__(8) unsigned long long bar;")
    w("    __shared__ unsigned int tmem_base;")
    w("    const int tid = threadIdx.x, warp = tid >> 5;")
    w("    const unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);")
    w("    if (warp == 0) {  // one warp allocates the accumulator's tensor-memory columns")
    w('        asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], '
      f'{ncols};"')
    w('            :: "r"((unsigned)__cvta_generic_to_shared(&tmem_base)) : "memory");')
    w('        asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: '
      '"memory");')
    w("    }")
    w("    if (tid == 0) {")
    w('        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_addr) : "memory");')
    w('        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");')
    w("    }")
    _tcgen05_sync(w)
    w("    const unsigned int tmem = tmem_base;")
    w("    const unsigned int tl = tmem + ((unsigned)(warp * 32) << 16);  // lanes 32w..32w+31")
    w("    const unsigned long long da = mmaformal_desc(sA, lbo, sbo);")
    w("    const unsigned long long db = mmaformal_desc(sB, lbo, sbo);")
    w(f"    const unsigned int idesc = 0x{instr_desc(s):08x}u;  // {s.kind} {s.dtype}.{s.atype}."
      f"{s.btype} M={s.m} N={s.n}, K-major")
    w("    unsigned int phase = 0;")


def _tcgen05_source(s: Spec) -> str:
    a_bytes, b_bytes = _smem_bytes(s)
    n, ncols = s.n, tmem_cols(s)
    lines = [f"// {s.name}: one CTA (four warps) per tile, {s.ptx}; A and B from shared "
             "memory (K-major, no swizzle), C and D in tensor memory (lane = row)"]
    lines += _DESC_FN + ["    d |= 1ull << 46;  // descriptor version 1 (tcgen05)",
                         "    return d;  // base offset 0, swizzle mode 0 (none)", "}"]
    w = lines.append
    _tcgen05_prologue(s, w, a_bytes, b_bytes, ncols)
    w("    for (long long t = blockIdx.x; t < ntiles; t += gridDim.x) {")
    _smem_fill(w, a_bytes, b_bytes)
    w(f"        const unsigned int* cp = C + t * {n * 128} + tid;  // row tid of C")
    w("        unsigned int " + ", ".join(f"c{j} = cp[{j * 128}]" for j in range(n)) + ";")
    _tmem_io(w, "st", n)
    w('        asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");')
    _tcgen05_sync(w, "        ")
    w("        if (tid == 0) {  // one thread issues the MMA and commits it to the mbarrier")
    w('            asm volatile("{ .reg .pred p; setp.ne.b32 p, %4, 0; '
      f'{s.ptx} [%0], %1, %2, %3, p; }}"')
    w('                :: "r"(tmem), "l"(da), "l"(db), "r"(idesc), "r"(1) : "memory");')
    w('            asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster'
      '.b64 [%0];"')
    w('                :: "r"(bar_addr) : "memory");')
    w("        }")
    w("        unsigned int done = 0;")
    w('        while (!done) asm volatile("{ .reg .pred P; mbarrier.try_wait.parity.shared::cta.b64 '
      'P, [%1], %2; selp.b32 %0, 1, 0, P; }"')
    w('            : "=r"(done) : "r"(bar_addr), "r"(phase) : "memory");')
    w("        phase ^= 1;")
    w('        asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");')
    w("        unsigned int " + ", ".join(f"d{j}" for j in range(n)) + ";")
    _tmem_io(w, "ld", n)
    w('        asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");')
    w(f"        unsigned int* dp = D + t * {n * 128} + tid;")
    w("        " + " ".join(f"dp[{j * 128}] = d{j};" for j in range(n)))
    _tcgen05_sync(w, "        ")
    w("    }")
    w("    if (warp == 0)")
    w(f'        asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, {ncols};" '
      ':: "r"(tmem) : "memory");')
    w("}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def source(name: str, sel: int = 0) -> str:
    """CUDA C++ source of the tile kernel (no #include except wmma's <mma.h>; NVRTC- and
    nvcc-compatible). ``sel``: the sparsity selector of a sparse wgmma form (an immediate)."""
    s = spec(name)
    if sel and not (s.family == "wgmma" and s.sparse):
        raise ValueError(f"{s.name}: only sparse wgmma forms take a sparsity selector")
    if s.family == "wmma":
        return _wmma_source(s)
    if s.family == "wgmma" and s.sparse:
        return _wgmma_source(s, sel)
    head = (f"// Generated by mmaformal.hw.kernels for {s.name}. Raw bits in, raw bits out.\n"
            f"// Build: {s.target.nvcc_flag}\n")
    body = {"mma": _mma_source, "wgmma": _wgmma_source, "tcgen05": _tcgen05_source}[s.family](s)
    return head + body
