"""Layer 5 front end, profile: which schedule of which instruction a platform's GEMM library runs.

May import: the Python standard library (tomllib), mmaformal.paths, mmaformal.isa, mmaformal.fp.
Never torch (mmaformal.torch reads the calls off tensors and executes the schedules).

A *platform profile* is reviewed data (``profiles/*.toml``, like ``theories/``): an ordered list
of rules, each matching a GEMM call and naming the schedule that reproduces the library's bits.
A call (``Call``) is what a library sees: the user-level op (``matmul mm bmm linear addmm
baddbmm einsum tensordot multi_dot sdpa scaled_mm``), the operand and output formats (``f16``,
``bf16``, ``f32``, ``f64``, ``e4m3``, ``e5m2``, ...), M, N, K, the batch count, the layout of
each operand (``row``: A (M, K) / B (K, N) has unit stride along its last dimension, ``col``:
along the one before, else ``strided``), torch's math flags (``allow_tf32``,
``reduced_precision_reduction``), and for scaled_mm ``fast_accum`` and ``scaling``
(``tensor`` / ``row``).

Schema (one file)::

    [profile]
    id = "h100-cublas"                 # [a-z0-9._-]
    description = "..."
    platform = "..."                   # device, library
    status = "hypothesis"              # uncalibrated | hypothesis | confirmed
    provenance = "what was measured, where, when (Source: ...)"

    [[rule]]                           # first match wins, in file order
    id = "f16-n-unaligned"
    status = "hypothesis"              # uncalibrated | hypothesis | confirmed | refuted
    provenance = "..."
    default = false                    # true: also used (with a warning, never under strict)
                                       # for a call no rule covers with the same formats and flags
    instruction = "sm90/mma.m16n8k8.f32.f16.f16.f32"
    theory = "sm90.f16.f32"            # optional: default the instruction's primary theory
    order = "increasing"               # the K-blocks of the instruction chained in this order
    pre_round = "none"                 # "tf32-rne": f32 operands rounded to tf32 (RNE) first
    [rule.match]                       # every key optional except a and b
    op = ["mm", "linear"]
    a = "f16"                          # format of A (and of B below)
    b = "f16"
    out = "f16"                        # output format (the operands' unless out_dtype says)
    n = { not_multiple_of = 8 }        # m, n, k, batch: an int, or a table of multiple_of,
                                       # not_multiple_of, min, max
    layout_a = "row"                   # row | col | strided; layout_b likewise
    allow_tf32 = true                  # allow_tf32, reduced_precision_reduction, fast_accum: bool
    scaling = "tensor"                 # scaled_mm: tensor | row
    [rule.split]                       # optional: split of K
    slices = 4                         # S contiguous parts (numpy.array_split of K-units) ...
    unit = 64                          # ... of `unit` elements (default the instruction's k) ...
    chunk = 128                        # ... or parts of `chunk` elements of K (the last shorter)
    reduce = "sequential"              # sequential: ((+0 + P_0) + P_1) + ...; pairwise: a tree
    reduce_format = "acc"              # acc: sums in D's format; out: D = out(acc(D + P)) per part
    [rule.epilogue]                    # optional
    precision = "f32"                  # alpha, beta, bias, scales applied in f32, one rounding
    scale_order = "ab"                 # scaled_mm: (s_a * s_b) * D ("ab") or (D * s_a) * s_b

Semantics of a rule's schedule (executed by mmaformal.torch through ``emulate.matmul``): K is
zero-padded to a multiple of the instruction's k (a kernel's zero-filled last tile); the
K-blocks are chained through the instruction from +0 in ``order`` (``decreasing``: the padded
block is walked first); with a split each part is chained from +0 and the parts are added in
the accumulator (D) format by IEEE RNE additions as ``reduce`` says (or, ``reduce_format =
"out"``, into the output: D = round_out(round_acc(D + P)), a serial split-K); then the epilogue.

Invariant: a profile is validated whole when it is loaded (keys, values, instruction names,
formats, chunk sizes): every fault is a ProfileError, a ValueError whose message is one line
naming the file and the rule.
"""
from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path
from typing import Any

from . import fp, isa, paths

__all__ = ["ProfileError", "Call", "Split", "Epilogue", "Rule", "Profile", "load", "names",
           "PROFILE_DIR", "OPS", "STATUSES", "LAYOUTS"]

#: the shipped profiles (profiles/ of a checkout, mmaformal/_data/profiles when installed)
PROFILE_DIR = paths.shipped("profiles")

#: user-level ops a rule may name
OPS = ("matmul", "mm", "bmm", "linear", "addmm", "baddbmm", "einsum", "tensordot", "multi_dot",
       "sdpa", "scaled_mm")
STATUSES = ("uncalibrated", "hypothesis", "confirmed", "refuted")
LAYOUTS = ("row", "col", "strided")
ORDERS = ("increasing", "decreasing")
PRE_ROUNDS = ("none", "tf32-rne")
REDUCES = ("sequential", "pairwise")
PRECISIONS = ("f32",)
SCALE_ORDERS = ("ab", "a-then-b")
DIMS = ("m", "n", "k", "batch")
FLAGS = ("allow_tf32", "reduced_precision_reduction", "fast_accum")
_DIM_KEYS = ("multiple_of", "not_multiple_of", "min", "max")
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class ProfileError(ValueError):
    """A profile that cannot be used (file, key, value, instruction); one line."""


# --------------------------------------------------------------------------------------------
# Calls


@dataclasses.dataclass(frozen=True)
class Call:
    """One GEMM call as a library sees it (module docstring)."""

    op: str
    a: str
    b: str
    out: str
    m: int
    n: int
    k: int
    batch: int = 1
    layout_a: str = "row"
    layout_b: str = "row"
    allow_tf32: bool = False
    reduced_precision_reduction: bool = False
    fast_accum: bool | None = None
    scaling: str | None = None

    def describe(self) -> str:
        s = (f"{self.op} {self.a} x {self.b} -> {self.out}, M={self.m} N={self.n} K={self.k}"
             f" batch={self.batch}, layouts {self.layout_a}/{self.layout_b}, allow_tf32="
             f"{self.allow_tf32}, reduced_precision_reduction={self.reduced_precision_reduction}")
        if self.fast_accum is not None:
            s += f", fast_accum={self.fast_accum}"
        if self.scaling is not None:
            s += f", scaling={self.scaling}"
        return s


# --------------------------------------------------------------------------------------------
# Rules


@dataclasses.dataclass(frozen=True)
class Split:
    """Split of K into parts, each chained from +0, then added (``reduce``).

    The K-blocks are grouped into units of ``unit`` elements of K (default: the instruction's k;
    a kernel splits in whole K-tiles), the last unit shorter; ``slices`` = S parts of units
    (numpy.array_split: the first parts one unit longer) or parts of ``chunk`` elements (the
    last shorter). ``reduce_format``: "acc": the parts are added in the accumulator (D) format;
    "out": into the output tensor, D = round_out(round_acc(D + P)) from D = +0 (a serial split-K
    whose every slice runs the epilogue on the previous slices' output)."""

    slices: int | None = None
    chunk: int | None = None
    reduce: str = "sequential"
    unit: int | None = None
    reduce_format: str = "acc"

    def parts(self, nblocks: int, k: int) -> list[tuple[int, int]]:
        """[(first block, end block)] of the parts, in part order."""
        if self.chunk:
            c = self.chunk // k
            return [(s, min(s + c, nblocks)) for s in range(0, nblocks, c)]
        ub = (self.unit or k) // k
        nunits = -(-nblocks // ub)
        S = min(self.slices or 1, nunits)
        base, extra = divmod(nunits, S)
        out, s = [], 0
        for p in range(S):
            e = s + base + (1 if p < extra else 0)
            out.append((s * ub, min(e * ub, nblocks)))
            s = e
        return out

    def describe(self) -> str:
        what = f"chunks of {self.chunk}" if self.chunk else f"{self.slices} slices"
        if self.unit and not self.chunk:
            what += f" of {self.unit}-element units"
        return f"split K into {what}, {self.reduce} sum in the {self.reduce_format} format"


@dataclasses.dataclass(frozen=True)
class Epilogue:
    precision: str = "f32"
    scale_order: str = "ab"


@dataclasses.dataclass(frozen=True)
class Rule:
    id: str
    status: str
    provenance: str
    instruction: isa.Instruction
    theory: str | None = None
    match: dict = dataclasses.field(default_factory=dict)
    order: str = "increasing"
    pre_round: str = "none"
    split: Split | None = None
    epilogue: Epilogue = Epilogue()
    default: bool = False
    source: str = ""                 # "file: rule id" for messages

    def matches(self, call: Call, *, formats_only: bool = False) -> bool:
        """Whether the rule covers the call (formats_only: only formats and math flags, the
        test for a default rule)."""
        m = self.match
        for key in ("a", "b", "out"):
            if key in m and getattr(call, key) not in m[key]:
                return False
        for key in FLAGS:
            if key in m and getattr(call, key) != m[key]:
                return False
        if formats_only:
            return True
        if "op" in m and call.op not in m["op"]:
            return False
        for key in ("layout_a", "layout_b", "scaling"):
            if key in m and getattr(call, key) not in m[key]:
                return False
        for key in DIMS:
            if key in m and not _dim_ok(getattr(call, key), m[key]):
                return False
        return True

    def describe(self) -> str:
        s = f"{self.id}: {self.instruction.name}"
        if self.order != "increasing":
            s += f", {self.order} K-blocks"
        if self.pre_round != "none":
            s += f", inputs {self.pre_round}"
        if self.split:
            s += f", {self.split.describe()}"
        return s + f" [{self.status}]"


def _dim_ok(v: int, want) -> bool:
    if isinstance(want, int):
        return v == want
    if "multiple_of" in want and v % want["multiple_of"]:
        return False
    if "not_multiple_of" in want and not v % want["not_multiple_of"]:
        return False
    if "min" in want and v < want["min"]:
        return False
    if "max" in want and v > want["max"]:
        return False
    return True


# --------------------------------------------------------------------------------------------
# Profiles


@dataclasses.dataclass(frozen=True)
class Profile:
    id: str
    description: str
    platform: str
    status: str
    provenance: str
    rules: tuple[Rule, ...]
    path: str = ""

    def select(self, call: Call) -> tuple[Rule | None, bool]:
        """(rule, covered): the first rule (not refuted) that matches the call, covered=True; else
        the first default rule with the call's formats and flags, covered=False; else (None,
        False)."""
        live = [r for r in self.rules if r.status != "refuted"]
        for r in live:
            if r.matches(call):
                return r, True
        for r in live:
            if r.default and r.matches(call, formats_only=True):
                return r, False
        return None, False

    def rule(self, rule_id: str) -> Rule:
        for r in self.rules:
            if r.id == rule_id:
                return r
        raise ProfileError(f"profile {self.id}: no rule {rule_id!r} (rules: "
                           f"{', '.join(r.id for r in self.rules)})")


def names() -> list[str]:
    """The shipped profiles' names."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml")) if PROFILE_DIR.is_dir() else []


def load(spec: "str | Path | Profile") -> Profile:
    """A profile by shipped name (``h100-cublas``) or by path to a ``.toml`` file."""
    if isinstance(spec, Profile):
        return spec
    s = str(spec)
    if isinstance(spec, Path) or s.endswith(".toml") or "/" in s or "\\" in s:
        path = Path(s)
        if not path.is_file():
            raise ProfileError(f"profile file {s} does not exist")
    else:
        path = PROFILE_DIR / f"{s}.toml"
        if not path.is_file():
            have = ", ".join(names()) or f"none in {PROFILE_DIR}"
            raise ProfileError(f"no profile named {s!r} (shipped: {have}; or pass a path to a "
                               f".toml file)")
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as e:
        raise ProfileError(f"{path}: cannot read: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{path}: not valid TOML: {str(e).splitlines()[0]}") from None
    return parse(data, str(path))


def _str(where: str, d: dict, key: str, choices=None, default=None, required=False) -> Any:
    if key not in d:
        if required:
            raise ProfileError(f"{where}: missing key {key!r}")
        return default
    v = d[key]
    if not isinstance(v, str):
        raise ProfileError(f"{where}: {key} must be a string, got {v!r}")
    if choices is not None and v not in choices:
        raise ProfileError(f"{where}: {key} must be one of {', '.join(choices)}, got {v!r}")
    return v


def _known(where: str, d: dict, allowed) -> None:
    bad = sorted(set(d) - set(allowed))
    if bad:
        raise ProfileError(f"{where}: unknown key{'s' if len(bad) > 1 else ''} "
                           f"{', '.join(bad)} (known: {', '.join(allowed)})")


def _fmt_list(where: str, key: str, v) -> tuple[str, ...]:
    vs = [v] if isinstance(v, str) else v
    if not isinstance(vs, list) or not vs or not all(isinstance(x, str) for x in vs):
        raise ProfileError(f"{where}: match.{key} must be a format name or a list of them, got {v!r}")
    out = []
    for x in vs:
        try:
            out.append(fp.fmt(x).name)
        except (KeyError, ValueError):
            raise ProfileError(f"{where}: match.{key}: unknown format {x!r}") from None
    return tuple(out)


def _choice_list(where: str, key: str, v, choices) -> tuple[str, ...]:
    vs = [v] if isinstance(v, str) else v
    if not isinstance(vs, list) or not vs or any(x not in choices for x in vs):
        raise ProfileError(f"{where}: match.{key} must be one of {', '.join(choices)} (or a list), "
                           f"got {v!r}")
    return tuple(vs)


def _dim(where: str, key: str, v):
    if isinstance(v, bool) or not isinstance(v, (int, dict)):
        raise ProfileError(f"{where}: match.{key} must be an int or a table of "
                           f"{', '.join(_DIM_KEYS)}, got {v!r}")
    if isinstance(v, dict):
        _known(f"{where}: match.{key}", v, _DIM_KEYS)
        for kk, x in v.items():
            if isinstance(x, bool) or not isinstance(x, int) or x < (1 if "multiple" in kk else 0):
                raise ProfileError(f"{where}: match.{key}.{kk} must be a "
                                   f"{'positive' if 'multiple' in kk else 'non-negative'} int, got {x!r}")
    return v


_MATCH_KEYS = ("op", "a", "b", "out", *DIMS, "layout_a", "layout_b", *FLAGS, "scaling")
_RULE_KEYS = ("id", "status", "provenance", "default", "instruction", "theory", "order",
              "pre_round", "match", "split", "epilogue")


def _compatible(fmt_name: str, operand: str) -> bool:
    """A tensor of format fmt_name can be an operand of instruction format `operand` (f32 tensors
    feed tf32 operands: the container is the same)."""
    return fmt_name == operand or (fmt_name == "f32" and operand == "tf32")


def _rule(src: str, i: int, d: dict) -> Rule:
    where = f"{src}: rule {i + 1}"
    if not isinstance(d, dict):
        raise ProfileError(f"{where}: must be a table")
    rid = _str(where, d, "id", required=True)
    if not _ID.match(rid):
        raise ProfileError(f"{where}: id {rid!r} must match [a-z0-9][a-z0-9._-]*")
    where = f"{src}: rule {rid}"
    _known(where, d, _RULE_KEYS)
    status = _str(where, d, "status", STATUSES, required=True)
    prov = _str(where, d, "provenance", required=True)
    name = _str(where, d, "instruction", required=True)
    try:
        ins = isa.lookup(name)
    except ValueError as e:
        raise ProfileError(f"{where}: instruction {name!r}: {str(e).splitlines()[0]}") from None
    theory = _str(where, d, "theory")
    order = _str(where, d, "order", ORDERS, "increasing")
    pre = _str(where, d, "pre_round", PRE_ROUNDS, "none")
    dflt = d.get("default", False)
    if not isinstance(dflt, bool):
        raise ProfileError(f"{where}: default must be true or false, got {dflt!r}")
    m = d.get("match")
    if not isinstance(m, dict):
        raise ProfileError(f"{where}: missing table [rule.match] (at least a and b)")
    _known(f"{where}: match", m, _MATCH_KEYS)
    match: dict[str, Any] = {}
    for key in ("a", "b"):
        if key not in m:
            raise ProfileError(f"{where}: match.{key} is required (the operand format)")
    for key in ("a", "b", "out"):
        if key in m:
            match[key] = _fmt_list(where, key, m[key])
    for key, operand in (("a", ins.a), ("b", ins.b)):
        bad = [f for f in match[key] if not _compatible(f, operand)]
        if bad:
            raise ProfileError(f"{where}: {ins.name} takes {key.upper()} in {operand}, but "
                               f"match.{key} allows {', '.join(bad)}")
    if pre == "tf32-rne" and ins.a != "tf32":
        raise ProfileError(f"{where}: pre_round tf32-rne needs a tf32 instruction, got {ins.name}")
    if "op" in m:
        match["op"] = _choice_list(where, "op", m["op"], OPS)
    for key in ("layout_a", "layout_b"):
        if key in m:
            match[key] = _choice_list(where, key, m[key], LAYOUTS)
    if "scaling" in m:
        match["scaling"] = _choice_list(where, "scaling", m["scaling"], ("tensor", "row"))
    for key in DIMS:
        if key in m:
            match[key] = _dim(where, key, m[key])
    for key in FLAGS:
        if key in m:
            if not isinstance(m[key], bool):
                raise ProfileError(f"{where}: match.{key} must be true or false, got {m[key]!r}")
            match[key] = m[key]
    split = None
    if "split" in d:
        s = d["split"]
        if not isinstance(s, dict):
            raise ProfileError(f"{where}: split must be a table")
        _known(f"{where}: split", s, ("slices", "chunk", "reduce", "unit", "reduce_format"))
        if ("slices" in s) == ("chunk" in s):
            raise ProfileError(f"{where}: split takes exactly one of slices, chunk")
        for key in ("slices", "chunk", "unit"):
            v = s.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ProfileError(f"{where}: split.{key} must be a positive int, got {v!r}")
        if "chunk" in s and s["chunk"] % ins.k:
            raise ProfileError(f"{where}: split.chunk = {s['chunk']} is not a multiple of "
                               f"{ins.name}'s k = {ins.k}")
        if "unit" in s and s["unit"] % ins.k:
            raise ProfileError(f"{where}: split.unit = {s['unit']} is not a multiple of "
                               f"{ins.name}'s k = {ins.k}")
        if "unit" in s and "chunk" in s:
            raise ProfileError(f"{where}: split.unit applies to slices, not to chunk")
        split = Split(s.get("slices"), s.get("chunk"),
                      _str(f"{where}: split", s, "reduce", REDUCES, "sequential"), s.get("unit"),
                      _str(f"{where}: split", s, "reduce_format", ("acc", "out"), "acc"))
        if ins.c != ins.d:
            raise ProfileError(f"{where}: {ins.name} cannot carry its accumulator (C {ins.c}, "
                               f"D {ins.d}): no split")
    epi = Epilogue()
    if "epilogue" in d:
        e = d["epilogue"]
        if not isinstance(e, dict):
            raise ProfileError(f"{where}: epilogue must be a table")
        _known(f"{where}: epilogue", e, ("precision", "scale_order"))
        epi = Epilogue(_str(f"{where}: epilogue", e, "precision", PRECISIONS, "f32"),
                       _str(f"{where}: epilogue", e, "scale_order", SCALE_ORDERS, "ab"))
    return Rule(rid, status, prov, ins, theory, match, order, pre, split, epi, dflt,
                f"{src}: rule {rid}")


def parse(data: dict, src: str = "<profile>") -> Profile:
    """A Profile from the parsed TOML of one file (validated whole; ProfileError otherwise)."""
    _known(src, data, ("profile", "rule"))
    p = data.get("profile")
    if not isinstance(p, dict):
        raise ProfileError(f"{src}: missing table [profile]")
    where = f"{src}: [profile]"
    _known(where, p, ("id", "description", "platform", "status", "provenance"))
    pid = _str(where, p, "id", required=True)
    if not _ID.match(pid):
        raise ProfileError(f"{where}: id {pid!r} must match [a-z0-9][a-z0-9._-]*")
    status = _str(where, p, "status", STATUSES[:3], required=True)
    rules_raw = data.get("rule")
    if not isinstance(rules_raw, list) or not rules_raw:
        raise ProfileError(f"{src}: no [[rule]] entries")
    rules = tuple(_rule(src, i, r) for i, r in enumerate(rules_raw))
    seen: set[str] = set()
    for r in rules:
        if r.id in seen:
            raise ProfileError(f"{src}: rule id {r.id!r} appears twice")
        seen.add(r.id)
    return Profile(pid, _str(where, p, "description", default=""),
                   _str(where, p, "platform", default=""), status,
                   _str(where, p, "provenance", required=True), rules, src)
