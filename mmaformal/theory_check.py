"""Layer 4b, theory_check: the schema of the theory files, below mmaformal.theory.

May import: mmaformal.isa, mmaformal.mma, mmaformal.fp (and the standard library). Never
mmaformal.theory (which imports this module) and never z3.

What a theory may say and where it may apply: the constants of the file format (models, FDPA
ops, statuses, composition keys), the parameters each mma operation takes (`op_params`) and the
checks of their values (`check_static`), the fit of a theory to one instruction (`check_fit`),
and the matching of instruction names and fnmatch patterns against the catalog
(`expand_pattern`, prefix-bisected: fast enough to run at every load).

Invariant: the checks read a theory's fields only (any object with the fields of
theory.Theory) and raise a one-line ValueError naming the file and the theory; nothing here
builds or changes a theory.
"""
from __future__ import annotations

import bisect
import fnmatch
import functools
import inspect
import re
from typing import Any

from . import fp, isa, mma
from .isa import Instruction

__all__ = ["MODELS", "FDPA_OPS", "MODEL_OP", "STATUSES", "K_ORDERS", "ACCUMULATE", "SPARSE",
           "OPTIONAL_PARAMS", "is_int", "op_params", "location", "check_static", "check_fit",
           "is_pattern", "matches", "expand_pattern"]

MODELS = ("fdpa", "fma", "ftz_addmul", "int", "fpu")
FDPA_OPS = ("t_fdpa", "st_fdpa", "gst_fdpa", "e_fdpa", "tr_fdpa", "gtr_fdpa")
MODEL_OP = {"fma": "fma_chain", "ftz_addmul": "ftz_addmul", "int": "int_chain", "fpu": "fpu_dot"}
STATUSES = ("hypothesis", "corroborated", "refuted")
K_ORDERS = ("natural", "mod4-pairs")
ACCUMULATE = ("fused", "add")
SPARSE = ("", "selected", "dense")

#: Parameters of the mma operations that the instruction fixes (operands, formats, scales).
_FROM_INSTRUCTION = frozenset({"a", "b", "c", "fa", "fb", "fc", "f", "out", "fs",
                               "scale_a", "scale_b", "L", "saturate", "bop"})
#: Parameters added after theories were proved: a theory may leave them out, which means the
#: mma default given here, and writes them only when they differ from it (`replace` drops a
#: default value), so the hashes of the theories that leave them out stay as they were.
OPTIONAL_PARAMS = {"tail": "algorithm"}
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_param(name: str, v: Any) -> str | None:
    """None if v is a valid value of parameter `name`, else what is expected."""
    if name in ("F", "F2"):
        return None if is_int(v) and 0 <= v <= 256 else "an int in 0..256"
    if name == "G":
        return None if is_int(v) and v > 0 else "a positive int"
    if name == "P":
        return None if v in (2, 4) and is_int(v) else "2 or 4"
    if name == "rho":
        return None if v in mma.RHO else "one of " + ", ".join(mma.RHO)
    if name == "zero_exp":
        return None if v in ("excluded", "field") or is_int(v) else \
            '"excluded", "field" or an int (a fixed exponent)'
    if name == "nan":
        try:
            if (is_int(v) and v >= 0) or (isinstance(v, str) and fp.nan_policy(v)):
                return None
        except ValueError:
            pass
        return ('"default", the NaN code as an int (e.g. 0x7FFFFFFF) or '
                '"propagate-ORDER[:CODE]" (e.g. "propagate-bca:0xFFF8000000000000")')
    if name == "overflow":
        return None if v in ("ieee", "saturate", "inf") else '"ieee", "saturate" or "inf"'
    if name == "zero_group":
        return None if v in ("sum", "products") else '"sum" or "products"'
    if name == "zero_sign":
        return None if v in ("ieee", "positive") else '"ieee" or "positive"'
    if name == "tail":
        return None if v in mma.TR_TAILS else "one of " + ", ".join(mma.TR_TAILS)
    if name == "sat_at":
        return None if v in mma.SAT_AT else "one of " + ", ".join(mma.SAT_AT)
    if name == "sat":
        return None if v in mma.SAT else "one of " + ", ".join(mma.SAT)
    if name in ("tf32_round", "mode"):
        return None if v in fp.MODES else "one of " + ", ".join(fp.MODES)
    # a parameter this loader does not know yet: any TOML scalar
    return None if isinstance(v, (str, int, float, bool)) else "a TOML scalar"


@functools.lru_cache(maxsize=None)
def op_params(op: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(required, all) keyword parameters of mma.<op> that a theory must give."""
    fn = getattr(mma, op)
    names, required = [], []
    for p in inspect.signature(fn).parameters.values():
        if p.name in _FROM_INSTRUCTION or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        names.append(p.name)
        if p.default is p.empty:
            required.append(p.name)
    return tuple(required), tuple(names)

# --------------------------------------------------------------------------------------------
# Checks


def location(file: str, tid: str | None) -> str:
    return f"{file}: theory {tid!r}" if tid else f"{file}"


def check_static(t, file: str) -> None:
    """Checks that need no catalog: keys were done by the parser; here values."""
    w = location(file, t.id)
    if not _ID.match(t.id):
        raise ValueError(f"{w}: id must match {_ID.pattern}")
    if t.model not in MODELS:
        raise ValueError(f"{w}: unknown model {t.model!r}; known: {', '.join(MODELS)}")
    if t.model in ("fdpa", "int"):
        if t.model == "fdpa" and t.op not in FDPA_OPS:
            raise ValueError(f"{w}: unknown op {t.op!r} for model fdpa; known: {', '.join(FDPA_OPS)}")
        if t.model == "int" and t.op != "int_chain":
            raise ValueError(f"{w}: model int has op 'int_chain', not {t.op!r}")
        if not (is_int(t.L) and t.L > 0):
            raise ValueError(f"{w}: model {t.model} needs L (the block length), a positive int")
        if t.model == "int" and (t.k_order != "natural" or t.accumulate != "fused" or t.convert):
            raise ValueError(f"{w}: k_order, accumulate and convert belong to model fdpa only")
    else:
        if t.op != MODEL_OP[t.model]:
            raise ValueError(f"{w}: model {t.model} has op {MODEL_OP[t.model]!r}, not {t.op!r}")
        if t.L is not None:
            raise ValueError(f"{w}: L belongs to model fdpa only")
        if t.k_order != "natural" or t.accumulate != "fused":
            raise ValueError(f"{w}: k_order and accumulate belong to model fdpa only")
    if t.status not in STATUSES:
        raise ValueError(f"{w}: unknown status {t.status!r}; known: {', '.join(STATUSES)}")
    if not t.provenance.strip():
        raise ValueError(f"{w}: provenance must not be empty")
    if not t.instructions:
        raise ValueError(f"{w}: instructions must be a non-empty list")
    if t.k_order not in K_ORDERS:
        raise ValueError(f"{w}: unknown k_order {t.k_order!r}; known: {', '.join(K_ORDERS)}")
    if t.sparse not in SPARSE:
        raise ValueError(f"{w}: unknown sparse {t.sparse!r}; known: selected, dense")
    if t.accumulate not in ACCUMULATE:
        raise ValueError(f"{w}: unknown accumulate {t.accumulate!r}; known: {', '.join(ACCUMULATE)}")
    if t.convert and t.convert not in isa.OPERAND_FORMATS:
        raise ValueError(f"{w}: unknown convert format {t.convert!r}")
    if t.id in t.competes_with:
        raise ValueError(f"{w}: a theory cannot compete with itself")
    required, allowed = op_params(t.op)
    given = set(dict(t.params))
    missing = [p for p in allowed if p not in given and p not in OPTIONAL_PARAMS]
    for k, dv in OPTIONAL_PARAMS.items():
        if dict(t.params).get(k, object()) == dv:
            raise ValueError(f"{w}: leave parameter {k} out when it is the default {dv!r} "
                             f"(so the theory keeps its hash)")
    extra = sorted(given - set(allowed))
    if missing:
        raise ValueError(f"{w}: missing parameter(s) {missing} of mma.{t.op} (give every "
                         f"parameter, the paper-default ones too, with a comment)")
    if extra:
        raise ValueError(f"{w}: unknown parameter(s) {extra} for mma.{t.op}; it takes "
                         f"{list(allowed)}")
    for k, v in t.params:
        why = _check_param(k, v)
        if why:
            raise ValueError(f"{w}: parameter {k} = {v!r} must be {why}")


def _exact_in(src: str, dst: str) -> bool:
    """Every value of format src is a value of format dst."""
    s, d = fp.fmt(src), fp.fmt(dst)
    if s.pad or d.pad:
        return s.name == d.name
    return (d.t >= s.t and d.emax >= s.emax and d.emin - d.t <= s.emin - s.t
            and (d.inf or not s.inf) and (d.nan != "none" or s.nan == "none")
            and (d.signed or not s.signed))


def check_fit(t, ins: Instruction) -> None:
    """The theory can be applied to this instruction."""
    w = f"{location(t.file or '<theory>', t.id)}: instruction {ins.name}"
    p = t.param_dict
    if t.convert:
        for role, f in (("a", ins.a), ("b", ins.b)):
            if not _exact_in(f, t.convert):
                raise ValueError(f"{w}: convert = {t.convert!r} is not exact for {role} format {f}")
    fa = t.convert or ins.a
    fb = t.convert or ins.b
    if bool(t.sparse) != bool(ins.sparse):
        raise ValueError(f"{w}: " + ("a sparse instruction needs sparse = 'selected' or 'dense'"
                                     if ins.sparse else "sparse belongs to sparse instructions"))
    if ins.sparse and t.sparse == "selected" and t.model in ("fdpa", "int"):
        nk = ins.k // ins.sparsity[0] * ins.sparsity[1]
        if nk % min(nk, t.L):
            raise ValueError(f"{w}: the {nk} selected terms are not a multiple of L = {t.L}")
    if (t.model == "int") != ins.integer:
        raise ValueError(f"{w}: model {t.model} " + ("needs" if t.model == "int" else
                         "does not take") + " an integer instruction")
    if t.model == "int":
        if ins.k % min(ins.k, t.L):
            raise ValueError(f"{w}: K = {ins.k} is not a multiple of L = {t.L}")
        return
    if t.model == "fma":
        if not (fa == fb == ins.c == ins.d):
            raise ValueError(f"{w}: model fma needs a = b = c = d formats, got "
                             f"{fa}, {fb}, {ins.c}, {ins.d}")
        if ins.scale:
            raise ValueError(f"{w}: model fma does not take scale factors")
        return
    if t.model == "fpu":
        if fa != fb or not _exact_in(ins.c, fa) or ins.scale:
            raise ValueError(f"{w}: model fpu needs a = b (after convert), c exact in it and no "
                             f"scale factors, got {fa}, {fb}, {ins.c}")
        if ins.k % p["G"]:
            raise ValueError(f"{w}: G = {p['G']} does not divide K = {ins.k}")
        return
    if t.model == "ftz_addmul":
        if fa not in ("f16", "bf16") or fb != fa or ins.c != "f32" or ins.d != "f32":
            raise ValueError(f"{w}: model ftz_addmul needs f16/bf16 a = b and f32 c, d")
        if ins.k % p["P"]:
            raise ValueError(f"{w}: P = {p['P']} does not divide K = {ins.k}")
        return
    L = min(ins.k, t.L)
    if ins.k % L:
        raise ValueError(f"{w}: K = {ins.k} is not a multiple of L = {L}")
    scaled_op = t.op in ("st_fdpa", "gst_fdpa")
    if scaled_op != bool(ins.scale):
        raise ValueError(f"{w}: op {t.op} " + ("needs" if scaled_op else "does not take")
                         + " a block-scaled instruction")
    if t.accumulator:
        if t.model != "fdpa" or t.accumulate == "add":
            raise ValueError(f"{w}: accumulator needs model fdpa with accumulate = 'fused'")
        if not _exact_in(ins.c, t.accumulator):
            raise ValueError(f"{w}: C ({ins.c}) is not exact in accumulator {t.accumulator}")
    if "rho" in p:
        out = mma.rho_of(p["rho"])[2].name
        if out != (t.accumulator or ins.d):
            raise ValueError(f"{w}: rho = {p['rho']} gives {out}, the instruction's D is {ins.d}")
    if t.op in ("tr_fdpa", "gtr_fdpa", "e_fdpa") and (ins.d != "f32" or ins.c != "f32"):
        raise ValueError(f"{w}: op {t.op} needs f32 c and d")
    if t.op == "gtr_fdpa" and L % 2:
        raise ValueError(f"{w}: gtr_fdpa needs an even L, got {L}")
    if t.op == "gst_fdpa":
        G = p["G"]
        if L % G or ins.scale_block % G:
            raise ValueError(f"{w}: G = {G} must divide L = {L} and scale_block = {ins.scale_block}")
    if t.accumulate == "add" and ins.c != ins.d:
        raise ValueError(f"{w}: accumulate = 'add' needs c and d of one format")
    if t.k_order == "mod4-pairs" and ins.k % 4:
        raise ValueError(f"{w}: k_order mod4-pairs needs K divisible by 4")
    if t.k_order != "natural" and ins.scale:
        raise ValueError(f"{w}: k_order must be natural for block-scaled instructions")


# --------------------------------------------------------------------------------------------
# Pattern matching against the catalog (prefix-bisected: fast enough to run at every load)


@functools.lru_cache(maxsize=None)
def _rx(pattern: str) -> re.Pattern:
    return re.compile(fnmatch.translate(pattern))


def is_pattern(s: str) -> bool:
    return any(ch in s for ch in "*?[")


def matches(pattern: str, name: str) -> bool:
    return name == pattern if not is_pattern(pattern) else bool(_rx(pattern).match(name))


@functools.lru_cache(maxsize=1)
def _sorted_names() -> tuple[str, ...]:
    return tuple(sorted(isa.catalog()))


def expand_pattern(pattern: str) -> list[str]:
    names = _sorted_names()
    if not is_pattern(pattern):
        return [pattern] if pattern in isa.catalog() else []
    cut = min(i for i in (pattern.find(ch) for ch in "*?[") if i >= 0)
    prefix = pattern[:cut]
    lo = bisect.bisect_left(names, prefix)
    hi = bisect.bisect_left(names, prefix + "\U0010ffff")
    rx = _rx(pattern)
    return [n for n in names[lo:hi] if rx.match(n)]
