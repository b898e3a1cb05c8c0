"""The harness's forms, read from the instruction catalog (layer 5 front end, ``hw``).

What it is: which instructions of :mod:`mmaformal.isa` the GPU harness runs, for which compile
target, and the facts of each form that the layouts, kernels and runner need (:class:`Spec`).
Nothing here lists forms: a catalog entry is runnable when its kind (``mma`` / ``mma.sp``,
``wgmma`` / ``wgmma.sp``, ``wmma``, ``tcgen05``), shape, formats and architecture are ones the
kernel generator handles; :func:`refusal` says in one line why another entry is not.

Targets (:data:`TARGETS`): one per NVIDIA catalog architecture from sm75 to sm120, compiled for
``sm_75``, ``sm_80``, ``sm_89``, ``sm_90a``, ``sm_100a`` and ``sm_120a`` (the ``a`` targets carry
wgmma, tcgen05 and the sm_120a ``kind::`` forms); a device runs the forms of the architecture
its compute capability names (:func:`arch_of_cc`), nothing else (:func:`refuse_on`).

Not run (refused, with the reason): AMD forms; sm70 (CUDA 13 has no sm_70 target); block-scaled
forms (scale operands); fp6/fp4 operands (their 8-bit container layout is not implemented);
tcgen05 with M = 64 (tensor-memory layout F) or with f16 D (16-bit accumulators in tensor
memory). Every catalog N of M = 128 runs (8..256 step 8): Source: PTX ISA, tcgen05.mma "Matrix
Shape" (9.7.16.2.1, Table 39 "Various combinations of .kind and shapes"; the edition that has
sm_103a's K1 = 96): cta_group::1, dense, kind::f16 / tf32 / f8f6f4 take 64xNxK and 128xNxK with
N = 8..256 step 8, the block-scaled kinds 128xNxK with N = 8..256 step 8; steps of 16 are the
cta_group::2 rule (M = 128, 256), which the harness does not issue. CUTLASS agrees since v4.2
(include/cute/arch/mma_sm100_umma.hpp, SM100_MMA_F16BF16_SS / TF32_SS: N % 8 for M = 64 and
128; its A-from-TMEM _TS atoms, which the harness does not use, keep N % 16 at M = 128).

May import: numpy, :mod:`mmaformal.isa`. Invariant: every runnable name is a catalog name and
its Spec says what the catalog entry says (shape, formats, saturation, bop, sparsity).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import isa

__all__ = ["FORMAT_BITS", "STORAGE_DTYPE", "INT_FORMATS", "TARGETS", "Target", "Spec", "spec",
           "refusal", "refuse_on", "instructions", "arch_of_cc"]

#: Width (bits) of one element of each operand format inside the instruction's registers
#: (tf32 lives in an f32 container; s4/u4 are packed 8 and b1 32 to a register).
FORMAT_BITS = {"f64": 64, "f32": 32, "tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8,
               "s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1, "s32": 32}
#: numpy storage dtype per format (raw-bit I/O contract of docs/design.md: formats of 8 bits or
#: less one element per uint8, in the low bits).
STORAGE_DTYPE = {f: np.dtype(f"uint{max(8, b)}") for f, b in FORMAT_BITS.items()}
#: integer operand formats (exact products; D = C + sum, s32 wrap or .satfinite clamp)
INT_FORMATS = ("s8", "u8", "s4", "u4", "b1")


@dataclass(frozen=True)
class Target:
    """A compile target: the catalog architecture, the SASS target and the compute capability
    of the devices that run it."""

    arch: str        # catalog architecture, e.g. "sm90"
    sm: str          # nvcc / NVRTC target without "sm_", e.g. "90a"
    cc: tuple[int, int]

    @property
    def name(self) -> str:
        return f"sm_{self.sm}"

    @property
    def nvcc_flag(self) -> str:
        return f"-gencode=arch=compute_{self.sm},code=sm_{self.sm}"

    @property
    def nvrtc_flag(self) -> str:
        return f"--gpu-architecture=sm_{self.sm}"


#: The harness's targets by catalog architecture (CUDA 13: sm_75 is the oldest target).
TARGETS: dict[str, Target] = {t.arch: t for t in (
    Target("sm75", "75", (7, 5)), Target("sm80", "80", (8, 0)), Target("sm89", "89", (8, 9)),
    Target("sm90", "90a", (9, 0)), Target("sm100", "100a", (10, 0)),
    Target("sm120", "120a", (12, 0)))}


def arch_of_cc(major: int, minor: int) -> str | None:
    """The catalog architecture of a device of compute capability major.minor, or None."""
    for t in TARGETS.values():
        if t.cc == (int(major), int(minor)):
            return t.arch
    return None


@dataclass(frozen=True)
class Spec:
    """One runnable form. ``name`` is the catalog name (``<arch>/<qualifier>``)."""

    name: str
    family: str  # "mma" | "wgmma" | "wmma" | "tcgen05"
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
    kind: str = ""     # the .kind:: of tcgen05 and sm_120a mma forms ("f16", "f8f6f4", ...)

    @property
    def arch(self) -> str:
        return self.name.split("/", 1)[0]

    @property
    def qualifier(self) -> str:
        return self.name.split("/", 1)[1]

    @property
    def target(self) -> Target:
        return TARGETS[self.arch]

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def threads(self) -> int:
        """Threads that issue one instruction: a warpgroup (wgmma, tcgen05) or a warp."""
        return 128 if self.family in ("wgmma", "tcgen05") else 32

    @property
    def group(self) -> int:
        """Independent tiles one kernel tile holds: 4 for f16 mma.m8n8k4 (one per quad-pair)."""
        return 4 if (self.family == "mma" and self.shape == "m8n8k4" and self.atype == "f16") else 1

    @property
    def ptx(self) -> str:
        """The PTX opcode that the kernel issues (tcgen05: shape and types are in the
        instruction descriptor)."""
        sat = ".satfinite" if self.sat else ""
        if self.family == "wmma":  # what the CUDA C++ WMMA API emits (PTX ISA 9.7.14.4.7)
            bop = f".{self.bop}.popc" if self.bop else ""
            t = (f"{self.dtype}.{self.ctype}" if self.atype == "f16"
                 else f"{self.dtype}.{self.atype}.{self.btype}.{self.ctype}")
            rn = ".rn" if self.atype == "f64" else ""
            return f"wmma.mma{bop}.sync.aligned.row.col.{self.shape}.{t}{rn}{sat}"
        if self.family == "tcgen05":
            return f"tcgen05.mma.cta_group::1.kind::{self.kind}"
        if self.family == "mma":
            sp = f".{self.sparse}" if self.sparse else ""
            bop = f".{self.bop}.popc" if self.bop else ""
            kind = f".kind::{self.kind}" if self.kind else ""
            return (f"mma{sp}.sync.aligned.{self.shape}.row.col{sat}{kind}."
                    f"{self.dtype}.{self.atype}.{self.btype}.{self.ctype}{bop}")
        sp = ".sp" if self.sparse else ""
        return (f"wgmma.mma_async{sp}.sync.aligned.{self.shape}{sat}."
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


def _kind(ins: isa.Instruction) -> str:
    for tok in ins.qualifier.split("."):
        if tok.startswith("kind::"):
            return tok[len("kind::"):]
    return ""


def refusal(ins: isa.Instruction) -> str:
    """Why the harness does not run a catalog entry ("" when it does)."""
    if ins.vendor != "nvidia":
        return "the harness runs NVIDIA instructions only"
    if ins.arch not in TARGETS:
        return (f"{ins.arch} has no compile target (CUDA 13); the harness targets "
                + ", ".join(t.name for t in TARGETS.values()))
    if ins.scale:
        return "block-scaled forms (scale operands) are not implemented"
    for f in (ins.a, ins.b, ins.c, ins.d):
        if f not in FORMAT_BITS:
            return f"{f} operands (6- and 4-bit floats in 8-bit containers) are not implemented"
    if ins.family == "tcgen05":
        if ins.m != 128:
            return "tcgen05 with M = 64 (tensor-memory layout F) is not implemented"
        if ins.d != "f32":
            return "tcgen05 with f16 D (16-bit accumulators in tensor memory) is not implemented"
    return ""


def _make(ins: isa.Instruction) -> Spec:
    return Spec(ins.name, ins.family, ins.m, ins.n, ins.k, ins.d, ins.a, ins.b, ins.c,
                ins.satfinite, ins.bop, ins.sparse, _kind(ins))


@lru_cache(maxsize=None)
def spec(name: str) -> Spec:
    """The Spec of a runnable form (aliases such as ``hopper/...`` and PTX spellings are
    resolved by the catalog); ValueError (one line) for an unknown or refused name."""
    if "/" not in str(name):
        raise ValueError(f"instruction {name!r}: expected '<arch>/<qualifier>', e.g. "
                         "'sm90/mma.m16n8k16.f32.f16.f16.f32'")
    ins = isa.lookup(name)
    why = refusal(ins)
    if why:
        raise ValueError(f"{ins.name} is not run by the harness: {why}")
    return _make(ins)


def refuse_on(name: str, arch: str) -> Spec:
    """The Spec of ``name`` when a device (or target) of catalog architecture ``arch`` runs it;
    else ValueError, one line: a form of another architecture (the same qualifier on ``arch``
    is named when the catalog has it)."""
    s = spec(name)
    if s.arch != arch:
        there = TARGETS[arch].name if arch in TARGETS else arch
        alt = f"{arch}/{s.qualifier}"
        hint = f"; the same form there: {alt}" if alt in isa.catalog() else ""
        raise ValueError(f"{s.name} is an {s.arch} instruction ({s.target.name}); the target "
                         f"here is {arch} ({there}), which runs {arch} forms only{hint}")
    return s


@lru_cache(maxsize=None)
def _runnable(arch: str) -> tuple[Spec, ...]:
    return tuple(_make(i) for i in isa.instructions(arch=arch) if not refusal(i))


def instructions(ns: tuple[int, ...] | None = (8, 256), arch: str = "sm90",
                 family: str | None = None) -> list[str]:
    """The runnable forms of ``arch`` in catalog order (``family`` filters); the N-ranged
    families (wgmma, tcgen05) only for N in ``ns`` (None: every N)."""
    return [s.name for s in _runnable(arch)
            if (family is None or s.family == family)
            and (ns is None or s.family not in ("wgmma", "tcgen05") or s.n in ns)]
