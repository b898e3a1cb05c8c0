"""CUDA C++ source generator for the Hopper (sm_90a) MMA harness (layer 5 front end, ``hw``).

What it is: for each covered instruction (``sm90/mma.*`` run by one warp, ``sm90/wgmma.*`` run by
one warpgroup) a small kernel with inline PTX that loads operand *images* into registers or
shared memory, issues exactly one MMA instruction per tile, and stores the accumulator
registers. Many tiles per launch (grid-stride loop over the batch).

Where the fragment layouts live: here, once, as Python functions of (thread, element) that
follow the PTX ISA ("Matrix fragments for mma.m16n8kK", "wgmma register fragments",
"shared memory matrix layout", no swizzle, K-major). They are turned into index tables
(:func:`operand_tables`) that map each position of an operand *image* to a flat matrix index.
The runner gathers ``image = matrix.reshape(T, -1)[:, table]`` on the GPU, so the kernels read
their registers with coalesced word loads and no layout arithmetic of their own, and a layout
fix is a Python edit, not a kernel edit.

Images (per tile, in elements of the operand's storage type):
- register operand: position ``(word * threads + thread) * per_word + sub`` holds the element
  ``i = word * per_word + sub`` of that thread's fragment; ``per_word`` elements are packed into
  one 32-bit register, element 0 in the low bits (64-bit registers for f64).
- wgmma shared-memory operand (A is M x K, B is stored N x K, both K-major): byte
  ``(row // 8) * SBO + (kbyte // 16) * LBO + (row % 8) * 16 + kbyte % 16`` with the core matrix
  (8 rows x 16 bytes) layout and ``LBO = 128``, ``SBO = 256`` (no swizzle).

Validated on an H100 (2026-11-21): every covered form's layout is exact and agrees with a
one-hot probe; see SASS.md (note there: fp8 ``mma.sync`` is compiled to F2FP + two HMMA + FADD).
Issue 14 forms (H100, 2026-11-24): f16 ``mma.m8n8k4`` (four MMAs per warp, one per quad-pair:
a kernel tile holds ``Spec.group`` = 4 tiles), integer ``mma`` (s8/u8, s4/u4 packed 8 and b1
32 to a register), integer ``wgmma`` and ``mma.sp`` (compressed A laid out as the dense A of
depth K/2, one warp-uniform metadata word per tile: :mod:`mmaformal.hw.sparse`); every layout
self-check exact (SASS.md). Sparse ``wgmma.sp`` forms: :mod:`mmaformal.hw.wgmma_sp` (spec,
tables and source delegate there). ``wmma.mma`` forms (``Spec.family`` "wmma"): CUDA C++ WMMA
API kernels (``#include <mma.h>``, nvcc) whose images are the plain matrices (A, C, D
row-major, B col_major); H100 campaigns 2026-11-25, every self-check exact.

May import: numpy only (no CUDA needed to generate source). Invariant: raw bits in, raw bits
out; the kernels move bit patterns and never do arithmetic on operand values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = [
    "FORMAT_BITS",
    "STORAGE_DTYPE",
    "Spec",
    "spec",
    "instructions",
    "operand_tables",
    "source",
    "WGMMA_LBO",
    "WGMMA_SBO",
]

#: Width (bits) of one element of each operand format inside the instruction's registers
#: (tf32 lives in an f32 container; s4/u4 are packed 8 and b1 32 to a register).
FORMAT_BITS = {"f64": 64, "f32": 32, "tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8,
               "s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1, "s32": 32}
#: numpy storage dtype per format (raw-bit I/O contract of docs/design.md: formats of 8 bits or
#: less one element per uint8, in the low bits).
STORAGE_DTYPE = {f: np.dtype(f"uint{max(8, b)}") for f, b in FORMAT_BITS.items()}
#: integer operand formats (exact products; D = C + sum, s32 wrap or .satfinite clamp)
INT_FORMATS = ("s8", "u8", "s4", "u4", "b1")

#: Default wgmma descriptor strides for the no-swizzle K-major layout used by the images:
#: LBO = distance between the two core matrices adjacent along K, SBO = distance between
#: 8-row groups along M (or N). Source: PTX ISA, "Matrix Descriptor Format" (wgmma).
WGMMA_LBO = 128
WGMMA_SBO = 256

ARCHES = ("sm90", "hopper")


def _g(lane: int) -> int:  # groupID
    return lane >> 2


def _t(lane: int) -> int:  # threadID_in_group
    return lane & 3


# ---------------------------------------------------------------------------------------------
# mma.sync fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k*"). Each entry gives
# (elements per thread, f(lane, i) -> (row, col)) for A (M x K) and B (K x N).
# ---------------------------------------------------------------------------------------------

_MMA_AB = {
    # f16 / bf16
    ("m16n8k16", "16"): (
        (8, lambda l, i: (_g(l) + 8 * ((i >> 1) & 1), 2 * _t(l) + (i & 1) + 8 * (i >> 2))),
        (4, lambda l, i: (2 * _t(l) + (i & 1) + 8 * (i >> 1), _g(l))),
    ),
    ("m16n8k8", "16"): (
        (4, lambda l, i: (_g(l) + 8 * (i >> 1), 2 * _t(l) + (i & 1))),
        (2, lambda l, i: (2 * _t(l) + i, _g(l))),
    ),
    # tf32
    ("m16n8k8", "tf32"): (
        (4, lambda l, i: (_g(l) + 8 * (i & 1), _t(l) + 4 * (i >> 1))),
        (2, lambda l, i: (_t(l) + 4 * i, _g(l))),
    ),
    ("m16n8k16", "tf32"): (  # B of sparse m16n8k16 tf32 (PTX ISA Figure 124): k = t + 4i
        None,
        (4, lambda l, i: (_t(l) + 4 * i, _g(l))),
    ),
    ("m16n8k4", "tf32"): (
        (2, lambda l, i: (_g(l) + 8 * i, _t(l))),
        (1, lambda l, i: (_t(l), _g(l))),
    ),
    # e4m3 / e5m2
    ("m16n8k32", "8"): (
        (16, lambda l, i: (_g(l) + 8 * ((i >> 2) & 1), 4 * _t(l) + (i & 3) + 16 * (i >> 3))),
        (8, lambda l, i: (4 * _t(l) + (i & 3) + 16 * (i >> 2), _g(l))),
    ),
    ("m16n8k16", "8"): (
        (8, lambda l, i: (_g(l) + 8 * (i >> 2), 4 * _t(l) + (i & 3))),
        (4, lambda l, i: (4 * _t(l) + i, _g(l))),
    ),
    # f64
    ("m8n8k4", "f64"): (
        (1, lambda l, i: (_g(l), _t(l))),
        (1, lambda l, i: (_t(l), _g(l))),
    ),
    ("m16n8k4", "f64"): (
        (2, lambda l, i: (_g(l) + 8 * i, _t(l))),
        (1, lambda l, i: (_t(l), _g(l))),
    ),
    ("m16n8k8", "f64"): (
        (4, lambda l, i: (_g(l) + 8 * (i & 1), _t(l) + 4 * (i >> 1))),
        (2, lambda l, i: (_t(l) + 4 * i, _g(l))),
    ),
    ("m16n8k16", "f64"): (
        (8, lambda l, i: (_g(l) + 8 * (i & 1), _t(l) + 4 * (i >> 1))),
        (4, lambda l, i: (_t(l) + 4 * i, _g(l))),
    ),
    # f16 m8n8k4: four independent MMAs per warp, one per quad-pair (lanes 4q..4q+3 "low" and
    # 4q+16..4q+19 "high"); entries are (tile q of the warp's group, row, col). Source: PTX ISA
    # "Matrix Fragments for mma.m8n8k4 with .f16 floating point type" (row-major A, col-major B).
    ("m8n8k4", "16"): (
        (4, lambda l, i: (_qp(l), (l & 3) + 4 * (l >> 4), i)),
        (4, lambda l, i: (_qp(l), i, (l & 3) + 4 * (l >> 4))),
    ),
}


def _qp(lane: int) -> int:  # quad-pair of mma.m8n8k4 (f16): lanes 4q..4q+3 and 4q+16..4q+19
    return (lane >> 2) & 3

# C / D of mma.sync: m16n8 shapes hold 4 elements per thread, m8n8k4 (f64) holds 2.
_MMA_CD = {
    "m16n8": (4, lambda l, i: (_g(l) + 8 * (i >> 1), 2 * _t(l) + (i & 1))),
    "m8n8": (2, lambda l, i: (_g(l), 2 * _t(l) + i)),
    # f16 m8n8k4 (per quad-pair, see _MMA_AB): f16 C/D hold a whole row, f32 C/D are spread
    # (PTX ISA, "Matrix Fragments for mma.m8n8k4 with .f16", C/D figures 50-52)
    "m8n8k4.f16": (8, lambda l, i: (_qp(l), (l & 3) + 4 * (l >> 4), i)),
    "m8n8k4.f32": (8, lambda l, i: (_qp(l), (l & 1) + (i & 2) + 4 * (l >> 4),
                                    (i & 4) + (l & 2) + (i & 1))),
}


def _wgmma_d(n: int):
    """wgmma accumulator fragment (PTX ISA, "wgmma .m64nNk*" D layout): thread T of the
    warpgroup, warp w = T // 32 owns rows 16w..16w+15; element i of N/2."""

    def f(tid: int, i: int):
        w, l = tid >> 5, tid & 31
        return (16 * w + _g(l) + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * _t(l) + (i & 1))

    return (n // 2, f)


def _class(fmt: str) -> str:
    return {"f16": "16", "bf16": "16", "tf32": "tf32", "f64": "f64"}.get(fmt, str(FORMAT_BITS[fmt]))


def _mma_ab(shape: str, fmt: str):
    """(A layout, B layout) of a dense mma.sync shape: the table above where it has an entry,
    else the pattern shared by every packed format (PTX ISA "Matrix Fragments for mma.m16n8kK"
    and "mma.m8n8kK", .f16/.bf16 with 2, .s8/.u8/.e4m3/.e5m2 with 4, .s4/.u4 with 8, .b1 with 32
    elements per register; the B of sparse m16n8k32 .f16 follows it too): e per register; A: M = 16 holds rows g and g + 8 alternately per
    register, M = 8 row g; each register spans 4e consecutive k over the 4 threads of a group."""
    key = (shape, _class(fmt))
    if key in _MMA_AB:
        return _MMA_AB[key]
    M, N, K = map(int, _SHAPE_RE.match(shape).groups())
    e = 32 // FORMAT_BITS[fmt]
    if N != 8 or M not in (8, 16) or K % (4 * e) or FORMAT_BITS[fmt] > 16:
        raise ValueError(f"no mma fragment layout for {shape} {fmt}")
    b = (K // 4, lambda l, i: (_t(l) * e + i % e + 4 * e * (i // e), _g(l)))
    if M == 16:
        a = (K // 2, lambda l, i: (_g(l) + 8 * ((i // e) & 1),
                                   _t(l) * e + i % e + 4 * e * (i // (2 * e))))
    else:
        a = (K // 4, lambda l, i: (_g(l), _t(l) * e + i % e + 4 * e * (i // e)))
    return a, b


# ---------------------------------------------------------------------------------------------
# Instruction specs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """One covered instruction. ``name`` is the docs/design.md spelling (``sm90/<qualifier>``)."""

    name: str
    family: str  # "mma" | "wgmma" | "wmma"
    m: int
    n: int
    k: int
    dtype: str
    atype: str
    btype: str
    ctype: str
    sat: bool = False  # .satfinite
    bop: str = ""      # b1: "xor" | "and" (.popc)
    sparse: str = ""   # "" | "sp" | "sp::ordered_metadata" (A is M x K/2 plus metadata)

    @property
    def qualifier(self) -> str:
        return self.name.split("/", 1)[1]

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def threads(self) -> int:
        return 128 if self.family == "wgmma" else 32

    @property
    def group(self) -> int:
        """Independent tiles one kernel tile holds: 4 for f16 mma.m8n8k4 (one per quad-pair)."""
        return 4 if (self.family == "mma" and self.shape == "m8n8k4" and self.atype == "f16") else 1

    @property
    def ptx(self) -> str:
        """The PTX opcode that the kernel issues."""
        sat = ".satfinite" if self.sat else ""
        if self.family == "wgmma" and self.sparse:
            return wgmma_sp_ptx(self)
        if self.family == "wmma":  # what the CUDA C++ WMMA API emits (PTX ISA 9.7.14.4.7)
            bop = f".{self.bop}.popc" if self.bop else ""
            t = (f"{self.dtype}.{self.ctype}" if self.atype == "f16"
                 else f"{self.dtype}.{self.atype}.{self.btype}.{self.ctype}")
            rn = ".rn" if self.atype == "f64" else ""
            return (f"wmma.mma{bop}.sync.aligned.row.col.{self.shape}.{t}{rn}"
                    f"{'.satfinite' if self.sat else ''}")
        if self.family == "mma":
            sp = f".{self.sparse}" if self.sparse else ""
            bop = f".{self.bop}.popc" if self.bop else ""
            return (f"mma{sp}.sync.aligned.{self.shape}.row.col{sat}."
                    f"{self.dtype}.{self.atype}.{self.btype}.{self.ctype}{bop}")
        return (f"wgmma.mma_async.sync.aligned.{self.shape}{sat}."
                f"{self.dtype}.{self.atype}.{self.btype}")

    @property
    def a_cols(self) -> int:
        """Columns of the A operand the instruction reads: K, or K/2 (compressed) if sparse."""
        return self.k // 2 if self.sparse else self.k

    @property
    def integer(self) -> bool:
        return self.atype in INT_FORMATS

    def storage(self, role: str) -> np.dtype:
        return STORAGE_DTYPE[{"a": self.atype, "b": self.btype, "c": self.ctype,
                              "d": self.dtype}[role]]

    def matrix_shape(self, role: str) -> tuple[int, int]:
        return {"a": (self.m, self.a_cols), "b": (self.k, self.n), "c": (self.m, self.n),
                "d": (self.m, self.n)}[role]


# Covered forms: every candidate that ptxas (CUDA 13.0) assembles for sm_90a. Checked here and
# rejected: mma.m16n8k16 .f32.f16.f16.f16 / .f16.f16.f16.f32 ("dtype must equal ctype"), and
# fp8 mma with dtype != ctype ("Unexpected instruction types"). See SASS.md.
_F8 = ("e4m3", "e5m2")

MMA_FORMS: tuple[str, ...] = (
    "mma.m16n8k16.f32.f16.f16.f32",
    "mma.m16n8k16.f16.f16.f16.f16",
    "mma.m16n8k16.f32.bf16.bf16.f32",
    "mma.m16n8k8.f32.f16.f16.f32",
    "mma.m16n8k8.f16.f16.f16.f16",
    "mma.m16n8k8.f32.bf16.bf16.f32",
    "mma.m16n8k8.f32.tf32.tf32.f32",
    "mma.m16n8k4.f32.tf32.tf32.f32",
    *(f"mma.{k}.{d}.{a}.{b}.{d}" for k in ("m16n8k32", "m16n8k16") for d in ("f32", "f16")
      for a in _F8 for b in _F8),
    "mma.m8n8k4.f64.f64.f64.f64",
    "mma.m16n8k4.f64.f64.f64.f64",
    # f16 m8n8k4 (.dtype/.ctype f16|f32 except c = f32, d = f16): on sm_90a ptxas emulates them
    # with SHFL + HADD2.F32 + FFMA/FMUL/FADD (no tensor-core instruction; see SASS.md)
    "mma.m8n8k4.f32.f16.f16.f32",
    "mma.m8n8k4.f32.f16.f16.f16",
    "mma.m8n8k4.f16.f16.f16.f16",
    "mma.m16n8k8.f64.f64.f64.f64",
    "mma.m16n8k16.f64.f64.f64.f64",
)

_I8 = ("s8", "u8")
_I4 = ("s4", "u4")
_SAT = ("", ".satfinite")

#: Integer mma.sync forms (PTX ISA mma, "Integer type" and "Single bit"; all legal on sm_90a).
INT_MMA_FORMS: tuple[str, ...] = (
    *(f"mma.{k}{sat}.s32.{a}.{b}.s32" for k in ("m8n8k16", "m16n8k16", "m16n8k32")
      for sat in _SAT for a in _I8 for b in _I8),
    *(f"mma.{k}{sat}.s32.{a}.{b}.s32" for k in ("m8n8k32", "m16n8k32", "m16n8k64")
      for sat in _SAT for a in _I4 for b in _I4),
    *(f"mma.{k}.s32.b1.b1.s32.{op}.popc" for k in ("m8n8k128", "m16n8k128", "m16n8k256")
      for op in ("xor", "and")),
)

#: Sparse mma.sync forms (PTX ISA "mma.sp"): A holds 2 of every 4 (tf32: 1 of 2; s4/u4: 2
#: pairs of 4) as an M x K/2 matrix plus metadata; both spellings (.sp, ::ordered_metadata).
SPARSE_MMA_FORMS: tuple[str, ...] = tuple(
    f"mma.{sp}.{q}" for sp in ("sp", "sp::ordered_metadata") for q in (
        *(f"{k}.{d}.f16.f16.{d}" for k in ("m16n8k16", "m16n8k32") for d in ("f32", "f16")),
        *(f"{k}.f32.bf16.bf16.f32" for k in ("m16n8k16", "m16n8k32")),
        *(f"{k}.f32.tf32.tf32.f32" for k in ("m16n8k8", "m16n8k16")),
        # fp8 with f16 C/D: ptxas 13.0 rejects it for sm_90a ("Ptx assembly aborted")
        *(f"m16n8k64.f32.{a}.{b}.f32" for a in _F8 for b in _F8),
        *(f"{k}{sat}.s32.{a}.{b}.s32" for k in ("m16n8k32", "m16n8k64") for sat in _SAT
          for a in _I8 for b in _I8),
        *(f"{k}{sat}.s32.{a}.{b}.s32" for k in ("m16n8k64", "m16n8k128") for sat in _SAT
          for a in _I4 for b in _I4),
    ))

#: wgmma forms with N left open ("m64nNk16"): (kshape, dtype, atype, btype).
WGMMA_FORMS: tuple[tuple[int, str, str, str], ...] = (
    (16, "f32", "f16", "f16"),
    (16, "f16", "f16", "f16"),
    (16, "f32", "bf16", "bf16"),
    (8, "f32", "tf32", "tf32"),
    *((32, "f32", a, b) for a in _F8 for b in _F8),
    *((32, "f16", a, b) for a in _F8 for b in _F8),
    *((32, f"s32{sat}", a, b) for sat in _SAT for a in _I8 for b in _I8),
)

_MMA_RE = re.compile(r"^mma(?:\.(sp(?:::ordered_metadata)?))?\.(m\d+n\d+k\d+)(\.satfinite)?"
                     r"\.(\w+)\.(\w+)\.(\w+)\.(\w+)(?:\.(xor|and)\.popc)?$")
_WGMMA_RE = re.compile(r"^wgmma\.m64n(\d+)k(\d+)(\.satfinite)?\.(\w+)\.(\w+)\.(\w+)$")
_SHAPE_RE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")


def instructions(wgmma_n: tuple[int, ...] = (8, 256)) -> list[str]:
    """All covered instruction names; wgmma forms once per N in ``wgmma_n``."""
    out = [f"sm90/{q}" for q in MMA_FORMS + INT_MMA_FORMS + SPARSE_MMA_FORMS]
    for n in wgmma_n:
        out += [_wgmma_name(n, k, d, a, b) for (k, d, a, b) in WGMMA_FORMS
                if _wgmma_n_ok(n, d)]
    return out


def _wgmma_name(n: int, k: int, d: str, a: str, b: str) -> str:
    if d.startswith("s32"):  # "s32.satfinite" -> ".satfinite.s32" (PTX order)
        return f"sm90/wgmma.m64n{n}k{k}{d[3:]}.s32.{a}.{b}"
    return f"sm90/wgmma.m64n{n}k{k}.{d}.{a}.{b}"


def _wgmma_n_ok(n: int, d: str) -> bool:
    """N of wgmma: 8..256 step 8; integer forms 8, 16, 24, then 32..256 step 16 (PTX ISA
    wgmma "Integer type" shape list)."""
    if not (8 <= n <= 256 and n % 8 == 0):
        return False
    return not d.startswith("s32") or n <= 24 or n % 16 == 0


@lru_cache(maxsize=None)
def spec(name: str) -> Spec:
    """Parse and check a covered instruction name; ValueError naming what is covered."""
    if "/" not in name:
        raise ValueError(f"instruction {name!r}: expected 'sm90/<qualifier>', e.g. "
                         "'sm90/mma.m16n8k16.f32.f16.f16.f32'")
    arch, q = name.split("/", 1)
    if arch not in ARCHES:
        raise ValueError(f"instruction {name!r}: the hw harness covers sm90 (Hopper) only")
    canon = f"sm90/{q}"
    mm = _MMA_RE.match(q)
    if mm:
        if q not in MMA_FORMS + INT_MMA_FORMS + SPARSE_MMA_FORMS:
            raise ValueError(f"instruction {name!r} is not covered by the sm90 harness; "
                             f"covered mma forms: {', '.join(MMA_FORMS)}, the integer forms "
                             "(s8/u8, s4/u4, b1) and mma.sp")
        sp, shape, sat, d, a, b, c, bop = mm.groups()
        M, N, K = map(int, _SHAPE_RE.match(shape).groups())
        return Spec(canon, "mma", M, N, K, d, a, b, c, bool(sat), bop or "", sp or "")
    if q.startswith("wgmma.sp."):
        return wgmma_sp_parse(canon)
    if q.startswith("wmma."):
        return wmma_parse(canon)
    wm = _WGMMA_RE.match(q)
    if wm:
        n, k, sat, d, a, b = wm.groups()
        n, k = int(n), int(k)
        dkey = d + (sat or "")
        if (k, dkey, a, b) not in WGMMA_FORMS:
            raise ValueError(f"instruction {name!r} is not covered; wgmma forms: " + ", ".join(
                _wgmma_name(0, k_, d_, a_, b_).replace("sm90/", "").replace("n0", "nN")
                for (k_, d_, a_, b_) in WGMMA_FORMS))
        if not _wgmma_n_ok(n, d):
            raise ValueError(f"instruction {name!r}: wgmma N must be a multiple of 8 in 8..256"
                             " (integer forms: 8, 16, 24 or a multiple of 16)")
        return Spec(canon, "wgmma", 64, n, k, d, a, b, d, bool(sat))
    raise ValueError(f"instruction {name!r}: expected 'sm90/mma.mMnNkK.dtype.atype.btype.ctype' "
                     "or 'sm90/wgmma.m64nNkK.dtype.atype.btype'")


# ---------------------------------------------------------------------------------------------
# Layout tables
# ---------------------------------------------------------------------------------------------


def _per_word(fmt: str) -> int:
    return max(1, 32 // FORMAT_BITS[fmt])


def _register_table(layout, threads: int, fmt: str, ncols: int, transpose: bool,
                    nrows: int = 0) -> np.ndarray:
    """Image position -> flat matrix index for a register operand.

    A layout entry is (row, col), or (tile, row, col) for grouped forms (f16 m8n8k4): the flat
    index is then into the group's tiles, ``tile * nrows * ncols + row * ncols + col``.
    """
    nelem, f = layout
    pw = _per_word(fmt)
    assert nelem % pw == 0
    nwords = nelem // pw
    tab = np.empty(nwords * threads * pw, dtype=np.int64)
    for tid in range(threads):
        for i in range(nelem):
            rc = f(tid, i)
            g, (r, c) = (rc[0], rc[1:]) if len(rc) == 3 else (0, rc)
            word, sub = divmod(i, pw)
            flat = (c * ncols + r) if transpose else (r * ncols + c)
            tab[(word * threads + tid) * pw + sub] = g * nrows * ncols + flat
    return tab


def _smem_table(rows: int, k: int, fmt: str, lbo: int, sbo: int, kmajor_of_b: bool,
                n_for_b: int = 0) -> np.ndarray:
    """Image position -> flat matrix index for a K-major no-swizzle shared-memory operand.

    A: rows = M, element (r, k) -> flat r*K + k. B: rows = N (stored N x K), element (n, k) ->
    flat k*N + n of the logical K x N matrix.
    """
    es = FORMAT_BITS[fmt] // 8
    assert (k * es) % 16 == 0 and rows % 8 == 0
    pos = {}
    for r in range(rows):
        for kk in range(k):
            kb = kk * es
            byte = (r >> 3) * sbo + (kb >> 4) * lbo + (r & 7) * 16 + (kb & 15)
            pos[byte // es] = (kk * n_for_b + r) if kmajor_of_b else (r * k + kk)
    tab = np.full(max(pos) + 1, -1, dtype=np.int64)
    for p, v in pos.items():
        tab[p] = v
    return tab


@lru_cache(maxsize=None)
def operand_tables(name: str) -> dict[str, np.ndarray]:
    """Index tables {'a','b','c','d'} mapping image position -> flat matrix index.

    ``table[p] = -1`` marks an image position that holds no matrix element (zero-filled). For
    grouped forms (``spec.group`` > 1) the flat index runs over the group's tiles, each stored
    as usual (A M x K, B K x N, C and D M x N), one after the other.
    """
    s = spec(name)
    if s.family == "wgmma" and s.sparse:
        return dict(wgmma_sp_tables(s.name))
    if s.family == "wmma":
        out = wmma_tables(s.name)
        for t in out.values():
            t.setflags(write=False)
        return out
    if s.family == "mma":
        # sparse: A is the compressed M x K/2 matrix, laid out as the dense A of shape k/2
        # (PTX ISA "Matrix fragments for multiply-accumulate operation with sparse matrix A":
        # each register holds the non-zeros of its dense chunk, same rows and threads)
        (la, _) = _mma_ab(f"m{s.m}n{s.n}k{s.a_cols}", s.atype)
        (_, lb) = _mma_ab(s.shape, s.btype)
        if s.group > 1:
            lc, ld = (_MMA_CD[f"{s.shape}.{f}"] for f in (s.ctype, s.dtype))
        else:
            lc = ld = _MMA_CD["m8n8" if s.m == 8 else "m16n8"]
        ta = _register_table(la, 32, s.atype, s.a_cols, False, s.m)
        tb = _register_table(lb, 32, s.btype, s.n, False, s.k)
        tc = _register_table(lc, 32, s.ctype, s.n, False, s.m)
        td = _register_table(ld, 32, s.dtype, s.n, False, s.m)
    else:
        ta = _smem_table(s.m, s.k, s.atype, WGMMA_LBO, WGMMA_SBO, False)
        tb = _smem_table(s.n, s.k, s.btype, WGMMA_LBO, WGMMA_SBO, True, n_for_b=s.n)
        tc = td = _register_table(_wgmma_d(s.n), 128, s.ctype, s.n, False)
    for t in (ta, tb, tc, td):
        t.setflags(write=False)
    return {"a": ta, "b": tb, "c": tc, "d": td}


# ---------------------------------------------------------------------------------------------
# CUDA source
# ---------------------------------------------------------------------------------------------

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


def _words(spec_: Spec, role: str) -> int:
    """Registers per thread for an operand."""
    tabs = operand_tables(spec_.name)
    fmt = {"a": spec_.atype, "b": spec_.btype, "c": spec_.ctype, "d": spec_.dtype}[role]
    return len(tabs[role]) // (spec_.threads * _per_word(fmt))


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
    na, nb, nc, nd = (_words(s, r) for r in "abcd")
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


def _wgmma_source(s: Spec) -> str:
    tabs = operand_tables(s.name)
    a_bytes = len(tabs["a"]) * FORMAT_BITS[s.atype] // 8
    b_bytes = len(tabs["b"]) * FORMAT_BITS[s.btype] // 8
    assert a_bytes % 16 == 0 and b_bytes % 16 == 0
    nd = _words(s, "d")
    kd = _reg_kind(s.dtype, "d")
    cty, con = _REG[kd]
    lines = []
    w = lines.append
    w(f"// {s.name}: one warpgroup per tile, {s.ptx}, A and B from shared memory (K-major, no swizzle)")
    w("__device__ __forceinline__ unsigned long long mmaformal_desc(const void* p, unsigned lbo, unsigned sbo)")
    w("{")
    w("    unsigned addr;")
    w('    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(addr) : "l"(p));')
    w("    unsigned long long d = (unsigned long long)((addr & 0x3FFFF) >> 4);")
    w("    d |= (unsigned long long)((lbo >> 4) & 0x3FFF) << 16;")
    w("    d |= (unsigned long long)((sbo >> 4) & 0x3FFF) << 32;")
    w("    return d;  // base offset 0, swizzle mode 0 (none)")
    w("}")
    w(f'extern "C" __global__ void __launch_bounds__(128) {KERNEL_NAME}(')
    w("    const uint4* __restrict__ A, const uint4* __restrict__ B,")
    w("    const unsigned int* __restrict__ C, unsigned int* __restrict__ D,")
    w("    long long ntiles, unsigned lbo, unsigned sbo)")
    w("{")
    w(f"    __shared__ __align__(128) uint4 sA[{a_bytes // 16}];")
    w(f"    __shared__ __align__(128) uint4 sB[{b_bytes // 16}];")
    w("    const int tid = threadIdx.x;")
    w("    const unsigned long long da = mmaformal_desc(sA, lbo, sbo);")
    w("    const unsigned long long db = mmaformal_desc(sB, lbo, sbo);")
    w("    for (long long t = blockIdx.x; t < ntiles; t += gridDim.x) {")
    w("        __syncthreads();  // the previous tile's wgmma has completed (wait_group 0)")
    w(f"        for (int i = tid; i < {a_bytes // 16}; i += 128) sA[i] = A[t * {a_bytes // 16} + i];")
    w(f"        for (int i = tid; i < {b_bytes // 16}; i += 128) sB[i] = B[t * {b_bytes // 16} + i];")
    w('        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')
    w("        __syncthreads();")
    w(f"        const unsigned int* cp = C + t * {nd * 128} + tid;")
    for j in range(nd):
        w(f"        {cty} d{j} = {_load(kd, f'cp[{j * 128}]')};")
    fence = ", ".join(f'"+{con}"(d{j})' for j in range(nd))
    w(f'        asm volatile("" : {fence} :: "memory");')
    w('        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')
    regs = "{" + ", ".join(f"%{j}" for j in range(nd)) + "}"
    ia, ib, ip = nd, nd + 1, nd + 2
    if s.atype in ("f16", "bf16"):
        tail = "p, 1, 1, 0, 0"  # scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
    elif s.atype in INT_FORMATS:
        tail = "p"  # integer wgmma: scale-d only
    else:
        tail = "p, 1, 1"  # scale-d, imm-scale-a, imm-scale-b (tf32/fp8: K-major only)
    w('        asm volatile("{ .reg .pred p; setp.ne.b32 p, %' + str(ip) + ', 0; '
      + f"{s.ptx} {regs}, %{ia}, %{ib}, {tail}; }}\"")
    w(f"            : {fence}")
    w('            : "l"(da), "l"(db), "r"(1) : "memory");')
    w('        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");')
    w('        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");')
    w(f'        asm volatile("" : {fence} :: "memory");')
    w(f"        unsigned int* dp = D + t * {nd * 128} + tid;")
    for j in range(nd):
        w(f"        dp[{j * 128}] = {_store(kd, f'd{j}')};")
    w("    }")
    w("}")
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=None)
def source(name: str) -> str:
    """CUDA C++ source (no #include; NVRTC- and nvcc-compatible) of the tile kernel."""
    s = spec(name)
    head = (f"// Generated by mmaformal.hw.kernels for {s.name}. Raw bits in, raw bits out.\n"
            "// Build: -gencode=arch=compute_90a,code=sm_90a\n")
    if s.family == "wgmma" and s.sparse:
        return wgmma_sp_source(s.name)
    if s.family == "wmma":
        return wmma_source(s.name)
    body = _mma_source(s) if s.family == "mma" else _wgmma_source(s)
    return head + body


# ---------------------------------------------------------------------------------------------
# Sparse wgmma (wgmma.mma_async.sp): names, tables and source. Metadata words, probes and
# campaigns: mmaformal.hw.wgmma_sp (which imports this module; this one never imports it).
# ---------------------------------------------------------------------------------------------

#: (K, dtype[+".satfinite"], atype, btype) of every sparse wgmma form (PTX ISA 9.7.15.6.3).
WGMMA_SP_FORMS: tuple[tuple[int, str, str, str], ...] = (
    (32, "f32", "f16", "f16"),
    (32, "f16", "f16", "f16"),
    (32, "f32", "bf16", "bf16"),
    (16, "f32", "tf32", "tf32"),
    *((64, d, a, b) for d in ("f32", "f16") for a in _F8 for b in _F8),
    *((64, f"s32{sat}", a, b) for sat in ("", ".satfinite") for a in _I8 for b in _I8),
)

_WGMMA_SP_RE = re.compile(r"^wgmma\.sp\.m64n(\d+)k(\d+)(\.satfinite)?\.(\w+)\.(\w+)\.(\w+)$")

#: descriptor strides (bytes): A (K/2 x size = 32 bytes a row: two core matrices along K) and
#: B (K x size = 64 bytes: four core matrices along K). Source: PTX ISA "Matrix Descriptor
#: Format" (no swizzle, K-major: LBO between core matrices along K, SBO between 8-row groups).
WGMMA_SP_LBO, WGMMA_SP_SBO_A, WGMMA_SP_SBO_B = 128, 256, 512


def _wgmma_sp_name(n: int, k: int, d: str, a: str, b: str) -> str:
    if d.startswith("s32"):
        return f"sm90/wgmma.sp.m64n{n}k{k}{d[3:]}.s32.{a}.{b}"
    return f"sm90/wgmma.sp.m64n{n}k{k}.{d}.{a}.{b}"


def wgmma_sp_n_ok(n: int, d: str) -> bool:
    """N of sparse wgmma: 8..256 step 8; integer forms 8, 16, 24, then 32..256 step 16."""
    return 8 <= n <= 256 and n % 8 == 0 and (not d.startswith("s32") or n <= 24 or n % 16 == 0)


def wgmma_sp_names(ns=tuple(range(8, 257, 8))) -> list[str]:
    """Every covered sparse wgmma name for the N in ``ns`` (integer forms where allowed)."""
    return [_wgmma_sp_name(n, *f) for f in WGMMA_SP_FORMS for n in ns if wgmma_sp_n_ok(n, f[1])]


def wgmma_sp_parse(name: str) -> Spec:
    """The Spec of ``sm90/wgmma.sp...``; ValueError naming what is covered."""
    q = name.split("/", 1)[1]
    m = _WGMMA_SP_RE.match(q)
    if not m:
        raise ValueError(f"instruction {name!r}: expected 'sm90/wgmma.sp.m64nNkK.dtype.atype.btype'")
    n, k, sat, d, a, b = m.groups()
    n, k = int(n), int(k)
    if (k, d + (sat or ""), a, b) not in WGMMA_SP_FORMS:
        raise ValueError(f"instruction {name!r} is not covered; sparse wgmma forms: " + ", ".join(
            _wgmma_sp_name(0, *f).replace("sm90/", "").replace("n0k", "nNk") for f in WGMMA_SP_FORMS))
    if not wgmma_sp_n_ok(n, d):
        raise ValueError(f"instruction {name!r}: N must be a multiple of 8 in 8..256 (integer "
                         "forms: 8, 16, 24 or a multiple of 16)")
    return Spec(f"sm90/{q}", "wgmma", 64, n, k, d, a, b, d, bool(sat), "", "sp")


def wgmma_sp_ptx(s: Spec) -> str:
    sat = ".satfinite" if s.sat else ""
    return f"wgmma.mma_async.sp.sync.aligned.{s.shape}{sat}.{s.dtype}.{s.atype}.{s.btype}"


# ---------------------------------------------------------------------------------------------
# Metadata layout


@lru_cache(maxsize=None)
def wgmma_sp_tables(name: str) -> dict[str, np.ndarray]:
    """Image position -> flat matrix index of A (64 x K/2), B (K x N), C, D (as kernels)."""
    s = wgmma_sp_parse(name)
    ta = _smem_table(s.m, s.k // 2, s.atype, WGMMA_SP_LBO, WGMMA_SP_SBO_A, False)
    tb = _smem_table(s.n, s.k, s.btype, WGMMA_SP_LBO, WGMMA_SP_SBO_B, True, n_for_b=s.n)
    tc = _register_table(_wgmma_d(s.n), 128, s.ctype, s.n, False)
    for t in (ta, tb, tc):
        t.setflags(write=False)
    return {"a": ta, "b": tb, "c": tc, "d": tc}


def wgmma_sp_source(name: str, sel: int = 0) -> str:
    """CUDA C++ of the tile kernel (sparsity selector ``sel`` is an immediate)."""
    s = wgmma_sp_parse(name)
    tabs = wgmma_sp_tables(name)
    a_bytes = len(tabs["a"]) * FORMAT_BITS[s.atype] // 8
    b_bytes = len(tabs["b"]) * FORMAT_BITS[s.btype] // 8
    assert a_bytes % 16 == 0 and b_bytes % 16 == 0
    per = max(1, 32 // FORMAT_BITS[s.dtype])
    nd = len(tabs["d"]) // (128 * per)
    kd = _reg_kind(s.dtype, "d")
    cty, con = _REG[kd]
    L = []
    w = L.append
    w(f"// Generated by mmaformal.hw.wgmma_sp for {s.name}. Raw bits in, raw bits out.")
    w("// Build: -gencode=arch=compute_90a,code=sm_90a")
    w(f"// one warpgroup per tile, {wgmma_sp_ptx(s)}, sp-sel {sel}; A (64 x K/2) and B from shared memory")
    w("__device__ __forceinline__ unsigned long long mmaformal_desc(const void* p, unsigned lbo, unsigned sbo)")
    w("{")
    w("    unsigned addr;")
    w('    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(addr) : "l"(p));')
    w("    unsigned long long d = (unsigned long long)((addr & 0x3FFFF) >> 4);")
    w("    d |= (unsigned long long)((lbo >> 4) & 0x3FFF) << 16;")
    w("    d |= (unsigned long long)((sbo >> 4) & 0x3FFF) << 32;")
    w("    return d;  // base offset 0, swizzle mode 0 (none)")
    w("}")
    w(f'extern "C" __global__ void __launch_bounds__(128) {KERNEL_NAME}(')
    w("    const uint4* __restrict__ A, const uint4* __restrict__ B,")
    w("    const unsigned int* __restrict__ C, unsigned int* __restrict__ D,")
    w("    long long ntiles, const unsigned int* __restrict__ E,")
    w("    unsigned lbo, unsigned sbo_a, unsigned sbo_b)")
    w("{")
    w(f"    __shared__ __align__(128) uint4 sA[{a_bytes // 16}];")
    w(f"    __shared__ __align__(128) uint4 sB[{b_bytes // 16}];")
    w("    const int tid = threadIdx.x;")
    w("    const unsigned long long da = mmaformal_desc(sA, lbo, sbo_a);")
    w("    const unsigned long long db = mmaformal_desc(sB, lbo, sbo_b);")
    w("    for (long long t = blockIdx.x; t < ntiles; t += gridDim.x) {")
    w("        __syncthreads();  // the previous tile's wgmma has completed (wait_group 0)")
    w(f"        for (int i = tid; i < {a_bytes // 16}; i += 128) sA[i] = A[t * {a_bytes // 16} + i];")
    w(f"        for (int i = tid; i < {b_bytes // 16}; i += 128) sB[i] = B[t * {b_bytes // 16} + i];")
    w('        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");')
    w("        __syncthreads();")
    w("        const unsigned int e = E[t * 128 + tid];")
    w(f"        const unsigned int* cp = C + t * {nd * 128} + tid;")
    for j in range(nd):
        w(f"        {cty} d{j} = {_load(kd, f'cp[{j * 128}]')};")
    fence = ", ".join(f'"+{con}"(d{j})' for j in range(nd))
    w(f'        asm volatile("" : {fence} :: "memory");')
    w('        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')
    regs = "{" + ", ".join(f"%{j}" for j in range(nd)) + "}"
    ia, ib, ie, ip = nd, nd + 1, nd + 2, nd + 3
    if s.atype in ("f16", "bf16"):
        tail = "p, 1, 1, 0, 0"   # scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
    elif s.integer:
        tail = "p"               # integer: scale-d only
    else:
        tail = "p, 1, 1"         # tf32 / fp8: scale-d, imm-scale-a, imm-scale-b
    w('        asm volatile("{ .reg .pred p; setp.ne.b32 p, %' + str(ip) + ', 0; '
      + f"{wgmma_sp_ptx(s)} {regs}, %{ia}, %{ib}, %{ie}, {int(sel)}, {tail}; }}\"")
    w(f"            : {fence}")
    w('            : "l"(da), "l"(db), "r"(e), "r"(1) : "memory");')
    w('        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");')
    w('        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");')
    w(f'        asm volatile("" : {fence} :: "memory");')
    w(f"        unsigned int* dp = D + t * {nd * 128} + tid;")
    for j in range(nd):
        w(f"        dp[{j * 128}] = {_store(kd, f'd{j}')};")
    w("    }")
    w("}")
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------------------------------------
# wmma.mma (CUDA C++ WMMA API, nvcuda::wmma): names, tables and source.
#
# The WMMA API hides the fragment layout: each warp loads A (M x K, row_major), B (K x N,
# declared col_major: stored N x K, K contiguous, the only layout the sub-byte forms allow) and
# C (M x N, mem_row_major) straight from global memory with load_matrix_sync, issues mma_sync
# (bmma_sync for b1) and stores D (M x N, mem_row_major) with store_matrix_sync. The images are
# therefore plain matrices (A and C/D row-major, B transposed); s4/u4 are packed 8 and b1 32 to
# a 32-bit word, element 0 in the low bits (the runner's packing). One warp per tile.
# Source: CUDA C++ Programming Guide, "Warp Matrix Functions" (wmma; sub-byte and b1 under
# nvcuda::wmma::experimental; bmmaBitOpAND from sm_80), PTX ISA 9.7.14.4 (wmma.mma).
# ---------------------------------------------------------------------------------------------

_WMMA_F16_SHAPES = ("m16n16k16", "m32n8k16", "m8n32k16")

#: The sm90 wmma.mma forms (qualifiers as the catalog spells them, PTX ISA 9.7.14.4.7).
WMMA_FORMS: tuple[str, ...] = (
    *(f"wmma.mma.{k}.{d}.{c}" for k in _WMMA_F16_SHAPES
      for d, c in (("f16", "f16"), ("f32", "f32"), ("f32", "f16"), ("f16", "f32"))),
    *(f"wmma.mma.{k}.s32.{a}.{a}.s32{sat}" for k in _WMMA_F16_SHAPES for a in _I8
      for sat in _SAT),
    *(f"wmma.mma.m8n8k32.s32.{a}.{a}.s32{sat}" for a in _I4 for sat in _SAT),
    *(f"wmma.mma.{op}.popc.m8n8k128.s32.b1.b1.s32" for op in ("xor", "and")),
    *(f"wmma.mma.{k}.f32.bf16.bf16.f32" for k in _WMMA_F16_SHAPES),
    "wmma.mma.m16n16k8.f32.tf32.tf32.f32",
    "wmma.mma.m8n8k4.f64.f64.f64.f64",
)

_WMMA_RE = re.compile(r"^wmma\.mma(?:\.(xor|and)\.popc)?\.(m\d+n\d+k\d+)\.([\w.]+?)(\.satfinite)?$")


def wmma_names() -> list[str]:
    """Every covered sm90 wmma.mma name."""
    return [f"sm90/{q}" for q in WMMA_FORMS]


def wmma_parse(name: str) -> Spec:
    q = name.split("/", 1)[1]
    if q not in WMMA_FORMS:
        raise ValueError(f"instruction {name!r} is not covered; wmma forms: "
                         + ", ".join(WMMA_FORMS))
    bop, shape, types_, sat = _WMMA_RE.match(q).groups()
    t = types_.split(".")
    d, a, b, c = (t[0], "f16", "f16", t[1]) if len(t) == 2 else t
    M, N, K = map(int, _SHAPE_RE.match(shape).groups())
    return Spec(f"sm90/{q}", "wmma", M, N, K, d, a, b, c, bool(sat), bop or "")


def wmma_tables(name: str) -> dict[str, np.ndarray]:
    """Image position -> flat matrix index: A and C/D row-major, B col_major (N x K)."""
    s = spec(name)
    kk, nn = np.meshgrid(np.arange(s.k), np.arange(s.n))  # image (n, k) -> B[k, n]
    return {"a": np.arange(s.m * s.k), "b": (kk * s.n + nn).reshape(-1),
            "c": np.arange(s.m * s.n), "d": np.arange(s.m * s.n)}


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


def wmma_source(name: str) -> str:
    """CUDA C++ of the wmma tile kernel (nvcc; includes <mma.h>)."""
    s = spec(name)
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
// Build: -gencode=arch=compute_90a,code=sm_90a
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
