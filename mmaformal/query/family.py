"""Layer 5, query/family: declared hypothesis families (the SPACE of `mmaformal infer`).

A *family* is a set of candidate theories for one instruction: one or more *structures* (a
composition: model, op, convert, k_order, accumulate, fixed parameters) times a *domain* (a list
of values per parameter). Candidates are ordinary `Theory` objects, built with the loader's own
checks (`Theory.replace` checks the parameters, `Theory.bind` checks the fit to the
instruction); a point that does not fit the instruction (rho with another output format, L not
dividing K, convert that is not exact, ...) is dropped and counted, never an error. Candidates
that compute the same thing by construction (L >= K is L = K; tf32_round on non-tf32 operands;
convert to the operand's own format; k_order within one T-FDPA block) are merged statically
before any evaluation.

Built-in families are TOML files in ``theories/families/`` (found through
``theory.THEORY_DIR``, so ``MMAFORMAL_THEORIES`` moves them with the theories); a user passes a
path to a TOML file of the same format instead of a name. The format (also in theories/README.md):

    [family]
    id = "nvidia-t-fdpa"              # [a-z0-9._-]
    description = "..."
    source = "where the domains come from"
    [family.domain]                   # shared by every structure; a key applies to the
    F = "10..40"                      # structures whose op takes it (ignored by the others)
    L = [4, 8, 16, 32]                # "lo..hi" is an int range; "K" and "K/2" mean the
    rho = ["RZ-FP32", "RNE-FP32"]     # instruction's K (and half of it); nan = "nvidia" is
    nan = ["nvidia", "ieee"]          # mma.NVIDIA_NAN of the output format, "ieee" its IEEE
                                      # default quiet NaN (as an int code)
    align = ["RZ"]                    # op mutation of distinguish: "RZ" | "RD" (RD-twin)
    convert = ["none", "f16"]         # structural keys range too: convert ("none" is no
    k_order = ["natural", "mod4-pairs"]   # conversion), k_order, accumulate (and L); a
    accumulate = ["fused", "add"]     # shared one applies to the fdpa structures that do
                                      # not fix it; model and op never range (one structure
                                      # per model/op)
    [[family.structure]]
    name = "native"
    model = "fdpa"                    # as in theories/*.toml: model, op, L, convert,
    op = "t_fdpa"                     # k_order, accumulate
    operands = ["e4m3", "e5m2"]       # optional: only for instructions with these a/b formats
    [family.structure.params]         # fixed parameter values (every op parameter must be
    tf32_round = "RZ"                 # fixed here or get a domain)
    [family.structure.domain]         # optional: per-structure domain (replaces the shared key)
    L = ["K/2"]

Values of the structural keys are checked when the file is read (k_order in
theory.K_ORDERS, accumulate in theory.ACCUMULATE, convert "none" or a format name); a bad one,
or a domain over model / op, is one BadInput line. Candidates are labelled by every key whose
domain holds more than one value (`fp8-mma[F=25,L=16,accumulate=add,convert=f16,...]`).

Invariant: every candidate is a checked Theory bound to the instruction; each candidate's
`Model` (query.model) is what infer evaluates and what the solver path encodes, so the
concrete and symbolic evaluations are the one definition (`Theory.dot`).

May import: mmaformal.theory, isa, mma, fp, query.model (Model), query.frame (BadInput), tomllib, itertools.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from .. import isa, mma
from .. import theory as _theory
from .. import theory_check as _theory_check
from .frame import BadInput
from .model import Model

__all__ = ["Family", "Structure", "Candidate", "FAMILY_DIR", "load", "builtin", "get",
           "canonical_key", "OVERLAY", "STRUCTURAL"]

FAMILY_DIR = _theory.THEORY_DIR / "families"
#: Parameters that act only on the final overlay of a special result (NaN code, sign of an
#: exact zero): candidates that differ only in these give identical bits wherever one of them
#: gives a finite nonzero result (checked by tests/test_infer.py::test_overlay_sharing).
OVERLAY = ("nan", "zero_sign")
_TOP = ("model", "op", "L", "convert", "k_order", "accumulate")
#: structural keys a domain may range over (model and op pick the op's parameters: one
#: structure per model/op)
STRUCTURAL = ("L", "convert", "k_order", "accumulate")
_STRUCT_KEYS = frozenset(_TOP + ("name", "params", "domain", "operands"))
_FAMILY_KEYS = frozenset({"id", "description", "source", "domain", "structure"})
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")


@dataclasses.dataclass(frozen=True)
class Structure:
    name: str
    top: dict
    params: dict
    domain: dict
    operands: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Family:
    id: str
    description: str
    source: str
    domain: dict
    structures: tuple[Structure, ...]
    file: str = ""

    def candidates(self, instr: "isa.Instruction | str") -> tuple[list["Candidate"], dict]:
        """(candidates, stats) of this family on one instruction; stats: points enumerated,
        dropped (do not fit the instruction, with one example reason), merged (static)."""
        ins = isa.lookup(instr) if isinstance(instr, str) else instr
        out: list[Candidate] = []
        seen: dict[tuple, Candidate] = {}
        stats = {"points": 0, "dropped": 0, "merged": 0, "why_dropped": ""}
        for st in self.structures:
            if st.operands and (ins.a not in st.operands or ins.b not in st.operands):
                continue
            op = st.top.get("op") or {"fma": "fma_chain", "ftz_addmul": "ftz_addmul"}.get(
                st.top.get("model", ""), "")
            try:
                _, allowed = _theory_check.op_params(op)
            except AttributeError:
                raise BadInput(f"family {self.id}: structure {st.name}: unknown op {op!r}") from None
            fdpa = st.top.get("model") == "fdpa"
            dom = {k: v for k, v in self.domain.items()
                   if k in allowed or k == "align"
                   or (k in STRUCTURAL and fdpa and k not in st.top)}
            dom.update(st.domain)
            keys = sorted(dom)
            for vals in itertools.product(*(dom[k] for k in keys)):
                point = dict(zip(keys, vals))
                stats["points"] += 1
                try:
                    c = _build(self, st, op, point, ins)
                except (ValueError, TypeError) as e:
                    stats["dropped"] += 1
                    stats["why_dropped"] = stats["why_dropped"] or str(e).splitlines()[0]
                    continue
                if c.key in seen:
                    stats["merged"] += 1
                    seen[c.key].same.append(c.label)
                    continue
                seen[c.key] = c
                out.append(c)
        return out, stats

    def describe(self) -> str:
        return f"{self.id}: {self.description}"


@dataclasses.dataclass
class Candidate:
    """One hypothesis of a family on one instruction."""

    label: str
    structure: str
    point: dict
    model: Model
    key: tuple
    same: list = dataclasses.field(default_factory=list)   # statically identical labels

    @property
    def core(self) -> tuple:
        """The key without the overlay parameters (see OVERLAY)."""
        return tuple((k, v) for k, v in self.key if k not in OVERLAY)

    def spec(self) -> dict:
        return {"label": self.label, "structure": self.structure, "point": self.point,
                "instruction": self.model.ins.name, "describe": self.model.describe(),
                "same_by_construction": list(self.same)}


def _value(name: str, v: Any, ins: isa.Instruction) -> Any:
    if name == "L" and v == "K":
        return ins.k
    if name == "L" and v == "K/2":
        return max(1, ins.k // 2)
    if name == "nan" and v == "nvidia":
        return mma.NVIDIA_NAN.get(ins.d, "default")
    if name == "nan" and v == "ieee":
        from .. import fp
        return fp.default_nan(fp.fmt(ins.d))
    if name == "convert" and v == "none":
        return ""
    return v


def canonical_key(t: _theory.Theory, rd: bool = False) -> tuple:
    """What a bound theory computes, with the static identities applied: L = min(K, L);
    tf32_round only with tf32 operands; convert to the operands' own format is no conversion;
    nan = "default" is the default NaN code of the output format (an int); for T-FDPA,
    overflow = "ieee" is "inf" under an RNE/RNA output conversion (fp.round_to sends RNE/RNA
    overflow to Inf in both), and a fixed zero-term exponent below the exponent of every
    possible nonzero term (products: emin_a + emin_b; c and chained accumulators: emin of
    their formats) is "excluded" (mma._emax: a zero term then never sets e_max, and when every
    term is zero the sum is zero whatever e_max is); with accumulate = "add" the NaN code of
    the chain is replaced by the final IEEE addition's; a T-FDPA whose one block holds all K
    (L >= K) sums a set of terms, so k_order does not act. tests/test_infer.py and
    tests/test_infer_families.py check these merges concretely on random, special and
    subnormal-heavy inputs."""
    ins = t.instr
    p = dict(t.params)
    conv = t.convert if t.convert and not (t.convert == ins.a == ins.b) else ""
    if "tf32_round" in p and "tf32" not in (conv or ins.a, conv or ins.b):
        p.pop("tf32_round")
    if p.get("nan") == "default":
        from .. import fp
        p["nan"] = fp.default_nan(fp.fmt(ins.d))
    if t.op == "t_fdpa" and "rho" in p:
        from .. import fp
        rfmt, mode, store = mma.rho_of(p["rho"])
        if p.get("overflow") == "ieee" and mode in ("RNE", "RNA"):
            p["overflow"] = "inf"          # fp.round_to: RNE/RNA overflow goes to Inf either way
        z = p.get("zero_exp")
        if isinstance(z, int) and not isinstance(z, bool):
            fa, fb = fp.fmt(conv or ins.a), fp.fmt(conv or ins.b)
            lowest = min(fa.emin + fb.emin, fp.fmt(ins.c).emin, store.emin)
            if z < lowest:                 # below every nonzero term's exponent: a zero term
                p["zero_exp"] = "excluded"  # never sets e_max (mma.zero_key / _emax)
    if t.accumulate == "add" and "nan" in p:
        p.pop("nan")                       # theory.dot: the final IEEE add replaces any NaN of
                                           # the chain by its own code (mma.NVIDIA_NAN)
    L = min(ins.k, t.L) if t.L is not None else None
    k_order = t.k_order
    if t.op == "t_fdpa" and L == ins.k and not ins.scale:
        k_order = "natural"                # one block: T-FDPA's sum does not see the order
    key = [("model", t.model), ("op", t.op), ("L", L), ("convert", conv),
           ("k_order", k_order), ("accumulate", t.accumulate), ("align", "RD" if rd else "RZ")]
    if t.accumulator:                      # C converted in / D rounded out: never the plain chain
        key.append(("accumulator", t.accumulator))
    key += sorted(p.items())
    return tuple(key)


def _build(fam: Family, st: Structure, op: str, point: dict, ins: isa.Instruction) -> Candidate:
    point = {k: _value(k, v, ins) for k, v in point.items()}
    rd = point.get("align", "RZ") == "RD"
    top = dict(st.top)
    params = dict(st.params)
    for k, v in point.items():
        if k == "align":
            continue
        if k in _TOP:
            top[k] = v
        else:
            params[k] = v
    base = _theory.Theory(
        id=f"{fam.id}.{st.name}", instructions=(ins.name,), model=top.get("model", "fdpa"),
        op=op, L=top.get("L"), params=tuple(sorted(params.items())), status="hypothesis",
        provenance=f"family {fam.id} ({fam.file}), structure {st.name}",
        convert=top.get("convert", ""), k_order=top.get("k_order", "natural"),
        accumulate=top.get("accumulate", "fused"), file=fam.file)
    th = base.replace().bind(ins)        # replace(): the loader's static checks; bind: the fit
    shown = {k: v for k, v in point.items() if len(_domain_of(fam, st, k)) > 1}
    label = st.name + ("[" + ",".join(f"{k}={_fmt(k, v)}" for k, v in sorted(shown.items())) + "]"
                       if shown else "")
    m = Model(label, th, th, {}, rd, 1)
    return Candidate(label, st.name, point, m, canonical_key(th, rd))


def _domain_of(fam: Family, st: Structure, k: str) -> list:
    return st.domain.get(k, fam.domain.get(k, [None]))


def _fmt(k: str, v: Any) -> str:
    if k == "nan" and isinstance(v, int):
        return hex(v)
    if k == "convert" and v == "":
        return "none"
    return str(v)


# --------------------------------------------------------------------------------------------
# Loading


def _domain(d: Any, where: str) -> dict:
    if not isinstance(d, dict):
        raise BadInput(f"{where}: domain must be a table")
    out = {}
    for k, v in d.items():
        vals = v if isinstance(v, list) else [v]
        flat: list = []
        for x in vals:
            m = _RANGE.match(x) if isinstance(x, str) else None
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
                if hi < lo:
                    raise BadInput(f"{where}: domain {k} = {x!r} is an empty range")
                flat.extend(range(lo, hi + 1))
            elif isinstance(x, (str, int, float, bool)):
                flat.append(x)
            else:
                raise BadInput(f"{where}: domain {k} holds {x!r}, not a TOML scalar or 'lo..hi'")
        if not flat:
            raise BadInput(f"{where}: domain {k} is empty")
        _check_structural(k, flat, where)
        out[k] = list(dict.fromkeys(flat))
    return out


def _check_structural(k: str, vals: list, where: str) -> None:
    """BadInput (one line) for a domain over model / op or a structural value the loader
    would reject for every instruction."""
    if k in ("model", "op"):
        raise BadInput(f"{where}: domain {k} cannot range (it picks the op's parameters): "
                       f"declare one [[family.structure]] per {k}")
    known = {"k_order": _theory.K_ORDERS, "accumulate": _theory.ACCUMULATE}.get(k)
    if known is not None:
        bad = [v for v in vals if v not in known]
        if bad:
            raise BadInput(f"{where}: domain {k} holds {bad[0]!r}; known: {', '.join(known)}")
    if k == "convert":
        from .. import fp
        for v in vals:
            if v in ("none", ""):
                continue
            try:
                fp.fmt(v)
            except (KeyError, ValueError):
                raise BadInput(f"{where}: domain convert holds {v!r}: not 'none' or a format "
                               f"name") from None


def parse(doc: dict, file: str) -> Family:
    """A family from a parsed TOML document; BadInput (one line) on any schema error."""
    if set(doc) != {"family"} or not isinstance(doc["family"], dict):
        raise BadInput(f"{file}: a family file holds exactly one [family] table")
    f = doc["family"]
    extra = set(f) - _FAMILY_KEYS
    if extra:
        raise BadInput(f"{file}: unknown key(s) {sorted(extra)} in [family]; known: {sorted(_FAMILY_KEYS)}")
    fid = f.get("id")
    if not isinstance(fid, str) or not _ID.match(fid):
        raise BadInput(f"{file}: [family] id must be a string of [a-z0-9._-]")
    structs = f.get("structure", [])
    if not isinstance(structs, list) or not structs:
        raise BadInput(f"{file}: family {fid} declares no [[family.structure]]: an empty family")
    dom = _domain(f.get("domain", {}), f"{file}: family {fid}")
    out = []
    for i, s in enumerate(structs):
        w = f"{file}: family {fid}: structure #{i + 1}"
        if not isinstance(s, dict):
            raise BadInput(f"{w}: must be a table")
        extra = set(s) - _STRUCT_KEYS
        if extra:
            raise BadInput(f"{w}: unknown key(s) {sorted(extra)}; known: {sorted(_STRUCT_KEYS)}")
        name = s.get("name", f"s{i + 1}")
        if s.get("model") not in _theory.MODELS:
            raise BadInput(f"{w}: model must be one of {', '.join(_theory.MODELS)}")
        top = {k: s[k] for k in _TOP if k in s}
        if top.get("convert") == "none":
            top["convert"] = ""
        params = s.get("params", {})
        if not isinstance(params, dict):
            raise BadInput(f"{w}: params must be a table")
        sd = _domain(s.get("domain", {}), w)
        ops = s.get("operands", [])
        if not isinstance(ops, list):
            raise BadInput(f"{w}: operands must be a list of format names")
        out.append(Structure(name, top, dict(params), sd, tuple(ops)))
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise BadInput(f"{file}: family {fid}: structure names repeat")
    return Family(fid, str(f.get("description", "")), str(f.get("source", "")), dom,
                  tuple(out), file)


def load(path: "str | Path") -> Family:
    p = Path(path)
    if not p.exists():
        raise BadInput(f"{p}: no such family file")
    try:
        doc = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{p.name}: not valid TOML: {str(e).splitlines()[0]}") from None
    return parse(doc, p.name)


def builtin() -> dict[str, Family]:
    """The built-in families (theories/families/*.toml), by id."""
    out = {}
    for p in sorted(FAMILY_DIR.glob("*.toml")):
        fam = load(p)
        if fam.id in out:
            raise BadInput(f"{p.name}: duplicate family id {fam.id!r}")
        out[fam.id] = fam
    return out


def get(space: str) -> Family:
    """A family by built-in id or by TOML path."""
    if space.endswith(".toml") or "/" in space or Path(space).suffix:
        return load(space)
    fams = builtin()
    if space not in fams:
        raise BadInput(f"unknown family {space!r}; built-in: {', '.join(fams) or 'none'} "
                       f"(or give a TOML file)")
    return fams[space]


def matching(t: _theory.Theory, fams: dict[str, Family] | None = None) -> tuple[Family, Candidate] | None:
    """The first built-in family with a candidate that computes what the bound theory t
    computes (statically: equal canonical keys), and that candidate."""
    key = canonical_key(t)
    for fam in (fams or builtin()).values():
        cands, _ = fam.candidates(t.instr)
        for c in cands:
            if c.key == key:
                return fam, c
    return None


def to_json(fam: Family) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(fam), default=str))
