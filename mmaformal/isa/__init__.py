"""Layer 4a: which matrix-multiply-accumulate instructions exist, on which architecture.

This layer is data, kept apart from arithmetic: it names every MMA instruction of the ten
architectures (NVIDIA sm70 sm75 sm80 sm89 sm90 sm100 sm120, AMD gfx908 gfx90a gfx942), with its
shape, operand formats, scale format and expected machine mnemonic. What an instruction
*computes* lives in ``theories/``; this module only says that it exists.

Imports: the Python standard library only (``tomllib`` for the data) and mmaformal._cache (a
standard-library-only cache of the checked catalog); nothing from bits, fp, mma or any other
layer of mmaformal, so the tables can be read and reviewed on their own.

Data: ``nvidia.toml`` and ``amd.toml`` beside this file. Each ``[[instruction]]`` table is a
*family* that the loader expands over the product of its list-valued keys:

    arch          canonical arch name or list of them (aliases are not allowed in data)
    family        "mma" | "wgmma" | "tcgen05" | "mfma" | "wmma" | "smfmac"
    qualifier     template of the name after "<arch>/", with placeholders {m} {n} {k} {a} {b}
                  {c} {d} {scale} {blocks} and upper-case {A} {B} {C} {D} {S}
    m, n, k       int, list of ints, or {from, to, step} (inclusive range)
    a, b          operand format name or list of them (expanded as a product)
    c, d          accumulator formats (strings), or instead
    cd            list of [c, d] pairs (for the legal (ctype, dtype) combinations)
    scale         "" (default) or the scale format (ue8m0, ue4m3)
    scale_block   K elements per scale (0, the default, when there is no scale)
    blocks        independent M x N x K products per instruction (AMD multi-block forms), default 1
    satfinite     bool or [false, true] (expanded): integer saturation (.satfinite); placeholder
                  {sat} spells it (".satfinite" or "")
    bop           "" or the single-bit operation ("xor" | "and", or a list): b1 .bop.popc;
                  placeholder {bop}
    sparse        NVIDIA: "" (dense), "sp" or "sp::ordered_metadata" (or a list), spelled by the
                  placeholder {sp} (".sp" / ".sp::ordered_metadata"); AMD v_smfmac_* are sparse
                  by family. Sparse forms keep the logical K in k: A is M x K with 2 of every 4
                  consecutive elements kept (tf32: 1 of 2; s4/u4: 2 aligned pairs of every 8,
                  see sparse_group), passed compressed (M x K/2) with metadata (mmaformal.sparse)
    sass          expected SASS template: the tensor-core (MMA-class) machine instructions the
                  form compiles to, in program order, as mmaformal.hw.sass lists them: one
                  mnemonic, or `N*MNEMONIC` for N of them, parts joined by " + " (e.g.
                  "2*IMMA.16816.S8.S8"); "" = not known, or no tensor-core instruction (`note`
                  says which). Placeholders also {kh} (k / 2) and {A8} {B8} (s4/u4 -> S8/U8)
    source        short citation (PTX ISA section, AMD ISA guide, seed paper table); required
    note          free text for reviewers (optional)

Invariant (checked at load, every failure is a ValueError naming file and entry): names are
unique; archs, families and format names are known; and every name agrees with its fields (the
shape token ``mMnNkK`` / ``MxNxK`` equals (m, n, k); the type suffix spells d, a, b (, c) and the
scale format; the block count in a CDNA3 name equals ``blocks``; ``scale_vec::VX`` times
``scale_block`` equals k). So a name can be trusted to mean what its fields say.

Spelling decisions (the contract for names):

- NVIDIA: the PTX spelling without ``.sync.aligned`` (wgmma: ``.mma_async.sync.aligned``) and
  without layouts: ``sm90/mma.m16n8k16.f32.f16.f16.f32``, ``sm90/wgmma.m64n8k16.f32.f16.f16``.
  Block-scaled mma always spells ``.block_scale.scale_vec::VX`` (defaults made explicit).
- tcgen05 (PTX keeps shape and types in the instruction descriptor, so the spelling is ours):
  ``tcgen05.mma.m{M}n{N}k{K}.kind::<kind>[.block_scale.scale_vec::VX].<d>.<a>.<b>[.<stype>]``,
  meaning cta_group::1, dense, no .ws; only cta_group::1 shapes are listed.
- AMD: the LLVM mnemonic in lower case (CDNA1/2 ``v_mfma_f32_32x32x8f16``, ``..._1k``; CDNA3
  ``v_mfma_f32_32x32x8_f16``, ``v_mfma_f32_32x32x4_2b_f16``). CDNA3 fp8/bf8 operands have formats
  e4m3fnuz/e5m2fnuz; xf32 operands have format "tf32" (same 1-8-10 value set).

``lookup`` also accepts aliases (``hopper/...``), ``sm_90a``-style arch names, full PTX spellings
(``mma.sync.aligned.m16n8k16.row.col...``), ``.blockNN`` scale spellings, kind-before-shape
order, and upper-case AMD mnemonics.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import functools
import itertools
import re
import tomllib
from pathlib import Path
from typing import Any, Iterable

__all__ = [
    "ACC_FORMATS",
    "ALIASES",
    "ARCHS",
    "DATA_FILES",
    "FAMILIES",
    "FORMATS",
    "OPERAND_FORMATS",
    "SCALE_FORMATS",
    "VENDOR_OF",
    "Instruction",
    "UnknownInstruction",
    "canonical_name",
    "catalog",
    "instructions",
    "load",
    "lookup",
]

ARCHS: tuple[str, ...] = (
    "sm70", "sm75", "sm80", "sm89", "sm90", "sm100", "sm120",
    "gfx908", "gfx90a", "gfx942",
)
ALIASES: dict[str, str] = {
    "volta": "sm70",
    "turing": "sm75",
    "ampere": "sm80",
    "ada": "sm89",
    "hopper": "sm90",
    "blackwell": "sm100",
    "rtx-blackwell": "sm120",
    "cdna1": "gfx908",
    "cdna2": "gfx90a",
    "cdna3": "gfx942",
}
VENDOR_OF: dict[str, str] = {a: ("nvidia" if a.startswith("sm") else "amd") for a in ARCHS}
FAMILIES: tuple[str, ...] = ("mma", "wgmma", "tcgen05", "mfma", "wmma", "smfmac")
_FAMILY_VENDOR = {"mma": "nvidia", "wgmma": "nvidia", "tcgen05": "nvidia", "mfma": "amd",
                  "wmma": "nvidia", "smfmac": "amd"}
_FAMILY_PREFIX = {"mma": "mma.", "wgmma": "wgmma.", "tcgen05": "tcgen05.mma.", "mfma": "v_mfma_",
                  "wmma": "wmma.mma.", "smfmac": "v_smfmac_"}

SCALE_FORMATS = frozenset({"ue8m0", "ue4m3"})
INT_OPERAND_FORMATS = frozenset({"s8", "u8", "s4", "u4", "b1"})
OPERAND_FORMATS = frozenset({
    "f64", "f32", "tf32", "f16", "bf16",
    "e4m3", "e5m2", "e3m2", "e2m3", "e2m1",
    "e4m3fnuz", "e5m2fnuz",
}) | INT_OPERAND_FORMATS
ACC_FORMATS = frozenset({"f64", "f32", "f16", "s32"})
#: Integer formats (fp.INT_FORMATS; spelled out here so this layer imports nothing of mmaformal)
INT_FORMATS = INT_OPERAND_FORMATS | {"s32"}
FORMATS = OPERAND_FORMATS | SCALE_FORMATS | ACC_FORMATS

DATA_FILES: tuple[Path, ...] = (
    Path(__file__).with_name("nvidia.toml"),
    Path(__file__).with_name("amd.toml"),
)


class UnknownInstruction(ValueError):
    """A name that is not in the catalog; the message lists the closest known names."""

    def __init__(self, name: str, suggestions: list[str], why: str = ""):
        self.name = name
        self.suggestions = list(suggestions)
        msg = f"unknown instruction {name!r}"
        if why:
            msg += f" ({why})"
        if self.suggestions:
            msg += "; closest known: " + ", ".join(self.suggestions)
        super().__init__(msg)


#: A formats whose sparse forms keep aligned pairs of elements (see sparse_group).
_SPARSE_PAIRED = frozenset({"s4", "u4"})


def sparse_group(fmt: str) -> tuple[int, int, int]:
    """(G, kept, unit) of a structured-sparse A of format `fmt` (mma.sp, mma.sp::ordered_metadata,
    wgmma.sp, v_smfmac): `kept` of every G consecutive elements of a row are kept, in units of
    `unit` consecutive elements kept or dropped together (one metadata index per kept unit).
    The one definition of these numbers: mmaformal.sparse (the contract: checks, compression,
    the symbolic rule) and mmaformal.hw.sparse (the harness) read them from here.

    - 16- and 8-bit formats (f16, bf16, e4m3, e5m2, s8, u8, AMD fp8/bf8/i8): (4, 2, 1), 2:4.
      Source: PTX ISA 9.7.14.6.1 "Sparse matrix storage"; AMD CDNA3 ISA, SMFMAC (4:2).
    - tf32: (2, 1, 1), 1:2. Source: PTX ISA 9.7.14.6.1.
    - s4, u4: (8, 4, 2): 2 kept aligned pairs (2p, 2p + 1) of the 4 pairs of every 8 elements,
      one 2-bit index per kept pair. Source: PTX ISA 9.7.14.6.1 (.u4/.s4: 4:8, zeros and
      non-zeros clustered in two-element sub-chunks); H100 campaign 2026-11-24
      (counterexamples/hw/2026-11-24-h100-issue14-sparse.tar.zst: the 32 sm90 s4/u4 mma.sp
      forms, 10^7 dot products each, replayed with equal digests under this rule).
    """
    if fmt == "tf32":
        return 2, 1, 1
    if fmt in _SPARSE_PAIRED:
        return 8, 4, 2
    return 4, 2, 1


@dataclasses.dataclass(frozen=True)
class Instruction:
    """One instruction on one architecture. Formats are mmaformal format names."""

    name: str          # "<arch>/<qualifier>", unique
    arch: str          # canonical arch, one of ARCHS
    qualifier: str     # name after "<arch>/"
    vendor: str        # "nvidia" | "amd"
    family: str        # "mma" | "wgmma" | "tcgen05" | "mfma"
    m: int
    n: int
    k: int             # dot-product length of one output element (per block)
    a: str
    b: str
    c: str
    d: str
    scale: str         # "" or the scale format (ue8m0, ue4m3)
    scale_block: int   # K elements sharing one scale; 0 without scale
    sass: str          # expected machine mnemonic, "" if unknown / not native
    source: str        # citation
    blocks: int = 1    # independent M x N x K products per instruction (AMD multi-block)
    note: str = ""
    satfinite: bool = False   # integer: saturate to s32 (.satfinite) instead of wrapping
    bop: str = ""             # b1: "xor" | "and" (.bop.popc)
    sparse: str = ""          # "" dense; "sp" | "sp::ordered_metadata" (NVIDIA); "smfmac" (AMD)

    @property
    def sparsity(self) -> tuple[int, int]:
        """(group, kept): (1, 1) dense; for a sparse A `sparse_group(a)[:2]`: (4, 2) 2:4, (2, 1)
        tf32 1:2, (8, 4) s4/u4 (4:8 in aligned pairs)."""
        if not self.sparse:
            return (1, 1)
        return sparse_group(self.a)[:2]

    @property
    def integer(self) -> bool:
        return self.a in INT_FORMATS

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.m, self.n, self.k)

    @property
    def block_scaled(self) -> bool:
        return bool(self.scale)


# --------------------------------------------------------------------------------------------
# Loading and checking


_ENTRY_KEYS = frozenset({
    "arch", "family", "qualifier", "m", "n", "k", "a", "b", "c", "d", "cd",
    "scale", "scale_block", "blocks", "sass", "source", "note", "satfinite", "bop", "sparse",
})
_REQUIRED = ("arch", "family", "qualifier", "m", "n", "k", "a", "b", "source")
_TOP_KEYS = frozenset({"meta", "instruction"})
_META_KEYS = frozenset({"vendor", "ptx_isa", "description"})
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_TEMPLATE_FIELDS = frozenset({"m", "n", "k", "a", "b", "c", "d", "scale", "blocks",
                              "A", "B", "C", "D", "S", "sat", "bop", "SAT", "BOP", "sp",
                              "kh", "A8", "B8"})
#: {A8} / {B8}: the upper-case format with a 4-bit integer widened to its 8-bit container (the
#: SASS of 4-bit integer forms on sm_90 runs on 8-bit IMMA); {kh}: k / 2 (SASS of a K split
#: into two instructions).
_WIDEN8 = {"s4": "S8", "u4": "U8"}


def _fail(where: str, msg: str) -> ValueError:
    return ValueError(f"{where}: {msg}")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _ints(where: str, key: str, v: Any) -> list[int]:
    """An int, a list of ints, or {from, to, step} (inclusive)."""
    if _is_int(v):
        out = [v]
    elif isinstance(v, list) and v and all(_is_int(x) for x in v):
        out = list(v)
    elif isinstance(v, dict):
        if set(v) != {"from", "to", "step"} or not all(_is_int(x) for x in v.values()):
            raise _fail(where, f"{key!r}: a range needs exactly integer keys from, to, step")
        if v["step"] <= 0 or v["to"] < v["from"]:
            raise _fail(where, f"{key!r}: empty or backwards range {v}")
        out = list(range(v["from"], v["to"] + 1, v["step"]))
    else:
        raise _fail(where, f"{key!r} must be an int, a list of ints or {{from, to, step}}, "
                           f"not {v!r}")
    if any(x <= 0 for x in out):
        raise _fail(where, f"{key!r} must be positive: {out}")
    return out


def _strs(where: str, key: str, v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
        return list(v)
    raise _fail(where, f"{key!r} must be a string or a non-empty list of strings, not {v!r}")


def _check_format(where: str, role: str, fmt: str, allowed: frozenset[str]) -> None:
    if fmt not in FORMATS:
        near = difflib.get_close_matches(fmt, sorted(FORMATS), n=3)
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise _fail(where, f"unknown format name {fmt!r} for {role}{hint}; "
                           f"known: {' '.join(sorted(FORMATS))}")
    if fmt not in allowed:
        raise _fail(where, f"format {fmt!r} is not allowed for {role}; "
                           f"allowed: {' '.join(sorted(allowed))}")


def _fill(where: str, template: str, values: dict[str, Any]) -> str:
    for field in _PLACEHOLDER.findall(template):
        if field not in _TEMPLATE_FIELDS:
            raise _fail(where, f"unknown placeholder {{{field}}} in {template!r}; "
                               f"known: {' '.join(sorted(_TEMPLATE_FIELDS))}")
    return template.format_map(values)


_AMD_AB = {
    "i8": ("s8", "s8"),
    "f32": ("f32", "f32"), "f64": ("f64", "f64"), "f16": ("f16", "f16"),
    "bf16": ("bf16", "bf16"), "xf32": ("tf32", "tf32"),
    "fp8_fp8": ("e4m3fnuz", "e4m3fnuz"), "fp8_bf8": ("e4m3fnuz", "e5m2fnuz"),
    "bf8_fp8": ("e5m2fnuz", "e4m3fnuz"), "bf8_bf8": ("e5m2fnuz", "e5m2fnuz"),
}
_AMD_NAME = re.compile(
    r"^v_(?P<fam>mfma|smfmac)_(?P<d>f32|f64|i32)_(?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)"
    r"(?:_(?P<blocks>\d+)b)?(?P<sep>_?)"
    r"(?P<ab>xf32|f32|f64|bf16|f16|i8|fp8_fp8|fp8_bf8|bf8_fp8|bf8_bf8)(?P<k1>_1k)?$"
)
_AMD_CDNA3_STYLE = {"gfx908": False, "gfx90a": False, "gfx942": True}
_SPARSE_NV = ("sp", "sp::ordered_metadata")
_SHAPE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")


def _check_name(where: str, ins: Instruction) -> None:
    """The name must say what the fields say (see the module docstring)."""
    q = ins.qualifier
    if not q.startswith(_FAMILY_PREFIX[ins.family]):
        raise _fail(where, f"{ins.name}: a {ins.family} qualifier starts with "
                           f"{_FAMILY_PREFIX[ins.family]!r}")
    if ins.vendor == "amd":
        mt = _AMD_NAME.match(q)
        if not mt:
            raise _fail(where, f"{ins.name}: not an AMD MFMA mnemonic of the expected form")
        if (int(mt["m"]), int(mt["n"]), int(mt["k"])) != ins.shape:
            raise _fail(where, f"{ins.name}: shape in the name is not (m, n, k) = {ins.shape}")
        dname = "s32" if mt["d"] == "i32" else mt["d"]
        if mt["fam"] != ins.family:
            raise _fail(where, f"{ins.name}: a {mt['fam']} name in family {ins.family}")
        if (dname, dname) != (ins.c, ins.d):
            raise _fail(where, f"{ins.name}: name says c = d = {dname}, "
                               f"fields say c = {ins.c}, d = {ins.d}")
        if _AMD_AB[mt["ab"]] != (ins.a, ins.b):
            raise _fail(where, f"{ins.name}: name says (a, b) = {_AMD_AB[mt['ab']]}, "
                               f"fields say ({ins.a}, {ins.b})")
        cdna3 = _AMD_CDNA3_STYLE[ins.arch]
        if bool(mt["sep"]) != cdna3:
            raise _fail(where, f"{ins.name}: {ins.arch} spells the input type "
                               + ("after '_'" if cdna3 else "without '_'"))
        if cdna3 and (mt["blocks"] is not None) != (ins.blocks > 1):
            raise _fail(where, f"{ins.name}: CDNA3 names carry '_<B>b' exactly on "
                               f"multi-block forms (blocks = {ins.blocks})")
        if mt["blocks"] is not None and int(mt["blocks"]) != ins.blocks:
            raise _fail(where, f"{ins.name}: name says {mt['blocks']} blocks, "
                               f"field says {ins.blocks}")
        if mt["k1"] and (cdna3 or ins.a != "bf16"):
            raise _fail(where, f"{ins.name}: '_1k' is a CDNA2 bf16 suffix")
        if ins.scale:
            raise _fail(where, f"{ins.name}: no block-scaled MFMA in the covered archs")
        if ins.satfinite or ins.bop:
            raise _fail(where, f"{ins.name}: satfinite and bop are NVIDIA qualifiers")
        if (ins.family == "smfmac") != (ins.sparse == "smfmac"):
            raise _fail(where, f"{ins.name}: v_smfmac_* and only they are sparse (sparse = 'smfmac')")
        if ins.family == "smfmac" and (ins.blocks != 1 or _AMD_CDNA3_STYLE[ins.arch] is False):
            raise _fail(where, f"{ins.name}: v_smfmac_* are single-block CDNA3 forms")
        return
    tokens = q.split(".")
    if ins.family == "wmma":
        _check_wmma(where, ins, tokens)
        return
    sp_tok = tokens[1] if len(tokens) > 1 and tokens[1] in _SPARSE_NV else ""
    if sp_tok != ins.sparse:
        raise _fail(where, f"{ins.name}: token 1 must say sparse = {ins.sparse!r}")
    if ins.sparse and ins.family not in ("mma", "wgmma"):
        raise _fail(where, f"{ins.name}: only mma and wgmma have NVIDIA sparse forms")
    if ins.sparse == "sp::ordered_metadata" and ins.family != "mma":
        raise _fail(where, f"{ins.name}: sp::ordered_metadata is an mma qualifier")
    if ins.sparse and ins.k % (2 * ins.sparsity[0]):
        raise _fail(where, f"{ins.name}: a sparse K must be a multiple of {2 * ins.sparsity[0]}")
    shape_at = 2 if ins.family == "tcgen05" or ins.sparse else 1
    mt = _SHAPE.match(tokens[shape_at]) if len(tokens) > shape_at else None
    if not mt or tuple(int(x) for x in mt.groups()) != ins.shape:
        raise _fail(where, f"{ins.name}: token {shape_at} must be "
                           f"m{ins.m}n{ins.n}k{ins.k}")
    tail = [ins.d, ins.a, ins.b] + ([ins.c] if ins.family == "mma" else [])
    if ins.scale:
        tail.append(ins.scale)
    if ins.bop:
        if ins.a != "b1" or ins.b != "b1" or ins.bop not in ("xor", "and"):
            raise _fail(where, f"{ins.name}: bop (xor | and) goes with b1 operands only")
        if tokens[-2:] != [ins.bop, "popc"]:
            raise _fail(where, f"{ins.name}: must end with .{ins.bop}.popc")
        tokens = tokens[:-2]
    elif "b1" in (ins.a, ins.b):
        raise _fail(where, f"{ins.name}: b1 operands need bop (xor | and)")
    if ("satfinite" in tokens) != ins.satfinite:
        raise _fail(where, f"{ins.name}: the .satfinite token must say satfinite = {ins.satfinite}")
    if ins.satfinite and (not ins.integer or ins.bop):
        raise _fail(where, f"{ins.name}: .satfinite is for s8/u8/s4/u4 operands")
    integer = {ins.a in INT_FORMATS, ins.b in INT_FORMATS, ins.c in INT_FORMATS,
               ins.d in INT_FORMATS}
    if len(integer) != 1:
        raise _fail(where, f"{ins.name}: integer and floating-point formats do not mix")
    if tokens[-len(tail):] != tail:
        raise _fail(where, f"{ins.name}: must end with .{'.'.join(tail)}")
    if ins.family != "mma" and ins.c != ins.d:
        raise _fail(where, f"{ins.name}: {ins.family} accumulates in place, so c = d")
    if ins.blocks != 1:
        raise _fail(where, f"{ins.name}: blocks is an AMD notion")
    vec = [t for t in tokens if t.startswith("scale_vec::")]
    if bool(ins.scale) != ("block_scale" in tokens) or bool(ins.scale) != bool(vec):
        raise _fail(where, f"{ins.name}: a scale format goes with .block_scale.scale_vec::VX")
    if vec:
        mv = re.fullmatch(r"scale_vec::([124])X", vec[0])
        if not mv or int(mv[1]) * ins.scale_block != ins.k:
            raise _fail(where, f"{ins.name}: {vec[0]} needs scale_block * V = k = {ins.k}")


def _check_wmma(where: str, ins: Instruction, tokens: list[str]) -> None:
    """wmma.mma[.bop.popc].shape.<types>[.satfinite]: types d.c for f16 operands, else d.a.b.c
    (PTX ISA 9.7.14.4.x wmma.mma syntax)."""
    head = ["wmma", "mma"] + ([ins.bop, "popc"] if ins.bop else [])
    if tokens[:len(head)] != head:
        raise _fail(where, f"{ins.name}: must start with {'.'.join(head)}")
    rest = tokens[len(head):]
    mt = _SHAPE.match(rest[0]) if rest else None
    if not mt or tuple(int(x) for x in mt.groups()) != ins.shape:
        raise _fail(where, f"{ins.name}: the shape token must be m{ins.m}n{ins.n}k{ins.k}")
    rest = rest[1:]
    if (rest[-1:] == ["satfinite"]) != ins.satfinite:
        raise _fail(where, f"{ins.name}: .satfinite (last) must say satfinite = {ins.satfinite}")
    if ins.satfinite:
        rest = rest[:-1]
        if not ins.integer or ins.bop:
            raise _fail(where, f"{ins.name}: .satfinite is for s8/u8/s4/u4 operands")
    want = [ins.d, ins.c] if (ins.a, ins.b) == ("f16", "f16") else [ins.d, ins.a, ins.b, ins.c]
    if rest != want:
        raise _fail(where, f"{ins.name}: the types must read .{'.'.join(want)}")
    if ins.bop and (ins.a, ins.b) != ("b1", "b1"):
        raise _fail(where, f"{ins.name}: bop goes with b1 operands")
    if ins.sparse or ins.scale or ins.blocks != 1:
        raise _fail(where, f"{ins.name}: wmma forms are dense, unscaled, single-block")


def _expand(where: str, e: dict[str, Any], vendor_hint: str | None) -> Iterable[Instruction]:
    unknown = set(e) - _ENTRY_KEYS
    if unknown:
        raise _fail(where, f"unknown key(s) {sorted(unknown)}; known: {sorted(_ENTRY_KEYS)}")
    missing = [key for key in _REQUIRED if key not in e]
    if missing:
        raise _fail(where, f"missing key(s) {missing}")
    archs = _strs(where, "arch", e["arch"])
    for arch in archs:
        if arch not in ARCHS:
            canon = ALIASES.get(arch)
            why = f" (write the canonical name {canon!r})" if canon else ""
            raise _fail(where, f"unknown arch {arch!r}{why}; known: {' '.join(ARCHS)}")
        if vendor_hint and VENDOR_OF[arch] != vendor_hint:
            raise _fail(where, f"arch {arch!r} is not a {vendor_hint} arch")
    family = e["family"]
    if family not in FAMILIES:
        raise _fail(where, f"unknown family {family!r}; known: {' '.join(FAMILIES)}")
    for key in ("qualifier", "source", "sass", "note", "scale"):
        if key in e and not isinstance(e[key], str):
            raise _fail(where, f"{key!r} must be a string")
    if not e["source"].strip():
        raise _fail(where, "'source' must not be empty")
    ms, ns, ks = (_ints(where, key, e[key]) for key in ("m", "n", "k"))
    a_s = _strs(where, "a", e["a"])
    b_s = _strs(where, "b", e["b"])
    for fmt in a_s:
        _check_format(where, "a", fmt, OPERAND_FORMATS)
    for fmt in b_s:
        _check_format(where, "b", fmt, OPERAND_FORMATS)
    if "cd" in e:
        if "c" in e or "d" in e:
            raise _fail(where, "give either 'cd' or 'c' and 'd', not both")
        pairs = e["cd"]
        if not (isinstance(pairs, list) and pairs and all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                for p in pairs)):
            raise _fail(where, "'cd' must be a non-empty list of [c, d] string pairs")
        cds = [tuple(p) for p in pairs]
    elif "c" in e and "d" in e:
        if not (isinstance(e["c"], str) and isinstance(e["d"], str)):
            raise _fail(where, "'c' and 'd' must be strings (use 'cd' for several pairs)")
        cds = [(e["c"], e["d"])]
    else:
        raise _fail(where, "missing accumulator formats: give 'c' and 'd', or 'cd'")
    for c, d in cds:
        _check_format(where, "c", c, ACC_FORMATS)
        _check_format(where, "d", d, ACC_FORMATS)
    scale = e.get("scale", "")
    scale_block = e.get("scale_block", 0)
    if scale:
        _check_format(where, "scale", scale, SCALE_FORMATS)
    if not _is_int(scale_block) or scale_block < 0:
        raise _fail(where, "'scale_block' must be a non-negative int")
    if bool(scale) != bool(scale_block):
        raise _fail(where, "'scale' and 'scale_block' go together (both set or both absent)")
    blocks = e.get("blocks", 1)
    if not _is_int(blocks) or blocks < 1:
        raise _fail(where, "'blocks' must be a positive int")
    sats = e.get("satfinite", False)
    sats = sats if isinstance(sats, list) else [sats]
    if not sats or not all(isinstance(x, bool) for x in sats):
        raise _fail(where, "'satfinite' must be true, false or a list of them")
    bops = _strs(where, "bop", e["bop"]) if "bop" in e else [""]
    sps = _strs(where, "sparse", e["sparse"]) if "sparse" in e else [""]
    for x in sps:
        if x not in ("", "smfmac") + _SPARSE_NV:
            raise _fail(where, f"'sparse' must be sp, sp::ordered_metadata or smfmac, not {x!r}")
    for arch, m, n, k, a, b, (c, d), sat, bop, sp in itertools.product(
            archs, ms, ns, ks, a_s, b_s, cds, sats, bops, sps):
        if scale_block and k % scale_block:
            raise _fail(where, f"scale_block {scale_block} does not divide k = {k}")
        vals = dict(m=m, n=n, k=k, a=a, b=b, c=c, d=d, scale=scale, blocks=blocks,
                    A=a.upper(), B=b.upper(), C=c.upper(), D=d.upper(), S=scale.upper(),
                    sat=".satfinite" if sat else "", SAT=".SAT" if sat else "",
                    bop=bop, BOP=bop.upper(), sp=f".{sp}" if sp and sp != "smfmac" else "",
                    kh=k // 2, A8=_WIDEN8.get(a, a.upper()), B8=_WIDEN8.get(b, b.upper()))
        qualifier = _fill(where, e["qualifier"], vals)
        vendor = VENDOR_OF[arch]
        if _FAMILY_VENDOR[family] != vendor:
            raise _fail(where, f"family {family!r} does not exist on {arch}")
        ins = Instruction(
            name=f"{arch}/{qualifier}", arch=arch, qualifier=qualifier, vendor=vendor,
            family=family, m=m, n=n, k=k, a=a, b=b, c=c, d=d, scale=scale,
            scale_block=scale_block, sass=_fill(where, e.get("sass", ""), vals),
            source=e["source"], blocks=blocks, note=e.get("note", ""),
            satfinite=sat, bop=bop, sparse=sp,
        )
        _check_name(where, ins)
        yield ins


def load(*paths: str | Path) -> dict[str, Instruction]:
    """Load and check instruction tables; raises ValueError on any malformed entry.

    Without arguments, loads the package's own tables (uncached; use ``catalog()``).
    """
    found: dict[str, Instruction] = {}
    origin: dict[str, str] = {}
    for path in paths or DATA_FILES:
        path = Path(path)
        with path.open("rb") as f:
            try:
                doc = tomllib.load(f)
            except tomllib.TOMLDecodeError as exc:
                raise ValueError(f"{path}: not valid TOML: {exc}") from exc
        extra = set(doc) - _TOP_KEYS
        if extra:
            raise ValueError(f"{path}: unknown top-level key(s) {sorted(extra)}; "
                             f"known: {sorted(_TOP_KEYS)}")
        meta = doc.get("meta", {})
        if not isinstance(meta, dict) or set(meta) - _META_KEYS:
            raise ValueError(f"{path}: [meta] may hold only {sorted(_META_KEYS)}")
        vendor_hint = meta.get("vendor")
        if vendor_hint not in (None, "nvidia", "amd"):
            raise ValueError(f"{path}: [meta] vendor must be 'nvidia' or 'amd'")
        entries = doc.get("instruction", [])
        if not isinstance(entries, list) or not all(isinstance(x, dict) for x in entries):
            raise ValueError(f"{path}: 'instruction' must be an array of tables "
                             f"([[instruction]])")
        for i, entry in enumerate(entries):
            where = f"{path.name}: [[instruction]] #{i + 1}"
            for ins in _expand(where, entry, vendor_hint):
                if ins.name in found:
                    raise _fail(where, f"duplicate instruction name {ins.name!r} "
                                       f"(first defined at {origin[ins.name]})")
                found[ins.name] = ins
                origin[ins.name] = where
    order = {a: i for i, a in enumerate(ARCHS)}
    # Stable sort: catalog order is arch order, then file order within an arch.
    return dict(sorted(found.items(), key=lambda kv: order[kv[1].arch]))


@functools.lru_cache(maxsize=1)
def catalog() -> dict[str, Instruction]:
    """All known instructions by name (loaded once; treat the result as read-only).

    Checked once per content of the tables and of this module: later processes unpickle the
    checked catalog from the cache (mmaformal._cache)."""
    from .._cache import cached
    return cached("catalog", DATA_FILES + (Path(__file__),), load)


# --------------------------------------------------------------------------------------------
# Names


_DROP_TOKENS = frozenset({"sync", "aligned", "row", "col", "mma_async", "cta_group::1"})
_SHAPE_ANY = re.compile(r"^m\d+n\d+k\d+$")


def _canonical_arch(arch: str) -> str:
    arch = arch.strip().lower()
    arch = ALIASES.get(arch, arch)
    mt = re.fullmatch(r"sm_?(\d+)[af]?", arch)
    if mt:
        arch = f"sm{mt[1]}"
    return arch


def canonical_name(name: str) -> str:
    """The catalog spelling of ``name``, as far as spelling rules alone can tell.

    Resolves arch aliases and ``sm_90a``-style targets; for NVIDIA drops .sync, .aligned,
    layouts, .mma_async and .cta_group::1, moves the shape token to the front, writes
    ``.block32/.block16`` and omitted scale vectors as ``scale_vec::VX``; lower-cases AMD names.
    Does not check that the result exists.
    """
    if "/" not in name:
        return name.strip()
    arch, q = name.split("/", 1)
    arch = _canonical_arch(arch)
    q = q.strip()
    if arch.startswith("gfx"):
        return f"{arch}/{q.lower()}"
    tokens = [t for t in q.split(".") if t and t not in _DROP_TOKENS]
    head = 2 if tokens[:2] == ["tcgen05", "mma"] or (len(tokens) > 1 and tokens[1] in _SPARSE_NV) \
        else 1
    if tokens[:2] == ["wmma", "mma"]:
        head = 4 if tokens[3:4] == ["popc"] else 2
    shapes = [i for i, t in enumerate(tokens) if _SHAPE_ANY.match(t)]
    if shapes and shapes[0] != head:
        tokens.insert(head, tokens.pop(shapes[0]))
    mxf8 = "kind::mxf8f6f4" in tokens
    out: list[str] = []
    for t in tokens:
        if t.startswith("scale_vec::"):
            t = "scale_vec::" + t[len("scale_vec::"):].upper()
        elif t == "block32":
            t = "scale_vec::1X" if mxf8 else "scale_vec::2X"
        elif t == "block16":
            t = "scale_vec::4X"
        out.append(t)
    if "block_scale" in out and not any(t.startswith("scale_vec::") for t in out):
        default = ("scale_vec::1X" if mxf8 else
                   "scale_vec::2X" if "kind::mxf4" in out else None)
        if default:
            out.insert(out.index("block_scale") + 1, default)
    return f"{arch}/{'.'.join(out)}"


def _suggest(name: str, cat: dict[str, Instruction], n: int = 5) -> list[str]:
    canon = canonical_name(name)
    if "/" not in canon:
        hits = [f"{a}/{canon}" for a in ARCHS if f"{a}/{canon}" in cat]
        if hits:
            return hits[:n]
        quals = difflib.get_close_matches(canon, sorted({i.qualifier for i in cat.values()}),
                                          n=n, cutoff=0.0)
        # full names (arch/qualifier), each close qualifier on the first architecture that has it
        return [next((f"{a}/{q}" for a in ARCHS if f"{a}/{q}" in cat), q) for q in quals]
    arch = canon.split("/", 1)[0]
    pool = [key for key in cat if key.startswith(arch + "/")] or list(cat)
    shape = re.search(r"m\d+n\d+k\d+|\d+x\d+x\d+", canon)
    if shape:
        narrow = [key for key in pool if shape.group() in key]
        if narrow:
            pool = narrow
    best = difflib.get_close_matches(canon, pool, n=n, cutoff=0.0)
    return best


def lookup(name: str) -> Instruction:
    """The instruction called ``name``; accepts aliases and PTX spellings (canonical_name).

    Raises UnknownInstruction (a ValueError) naming up to 5 closest known names.
    """
    cat = catalog()
    if name in cat:
        return cat[name]
    if not isinstance(name, str):
        raise TypeError(f"instruction name must be a str, not {type(name).__name__}")
    canon = canonical_name(name)
    if canon in cat:
        return cat[canon]
    why = ""
    if "/" not in canon:
        why = "expected '<arch>/<qualifier>'"
    else:
        arch, q = canon.split("/", 1)
        if arch not in ARCHS:
            why = f"unknown arch {arch!r}; archs: {' '.join(ARCHS)}; aliases: " + \
                  " ".join(sorted(ALIASES))
        else:
            elsewhere = [a for a in ARCHS if f"{a}/{q}" in cat]
            if elsewhere:
                why = f"not on {arch}; exists on {' '.join(elsewhere)}"
    raise UnknownInstruction(name, _suggest(name, cat), why)


def instructions(pattern: str | None = None, *, arch: str | None = None,
                 family: str | None = None) -> list[Instruction]:
    """Instructions in catalog order, filtered.

    ``pattern``: with any of ``* ? [`` an fnmatch pattern on the full name (an alias in the
    arch part is resolved: ``hopper/wgmma.*``), otherwise a substring of the name.
    ``arch`` (alias allowed) and ``family`` filter further.
    """
    items: Iterable[Instruction] = catalog().values()
    if arch is not None:
        canon_arch = _canonical_arch(arch)
        if canon_arch not in ARCHS:
            raise ValueError(f"unknown arch {arch!r}; archs: {' '.join(ARCHS)}")
        items = [i for i in items if i.arch == canon_arch]
    if family is not None:
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r}; families: {' '.join(FAMILIES)}")
        items = [i for i in items if i.family == family]
    if pattern:
        if "/" in pattern:
            head, tail = pattern.split("/", 1)
            if not any(ch in head for ch in "*?["):
                pattern = f"{_canonical_arch(head)}/{tail}"
        if any(ch in pattern for ch in "*?["):
            items = [i for i in items if fnmatch.fnmatchcase(i.name, pattern)]
        else:
            items = [i for i in items if pattern in i.name]
    return list(items)
