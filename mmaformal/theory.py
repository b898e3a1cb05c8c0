"""Layer 4b, theory: what each instruction computes, loaded from reviewed data (``theories/``).

May import: mmaformal.theory_check (the schema: file-format constants, value checks, the fit
to an instruction, catalog patterns), mmaformal.isa, mmaformal.mma, mmaformal.trace (the typed
trace records a dot leaves for the proof code), mmaformal.fp, mmaformal.bits,
mmaformal._cache, mmaformal.paths, mmaformal.sparse (the metadata rule; lazily) (and the
standard library). Never z3 at module level (the simulator path imports this module).

A *theory* is one hypothesis about the arithmetic of a set of catalog instructions: a model
(a composition of the elementary operations of mmaformal.mma) and every parameter of it. The
instruction tables (mmaformal.isa) say which instructions exist; theories say what they compute;
the two are kept apart. Competing hypotheses for the same instruction are separate theories that
name each other in ``competes_with``; exactly one of them is ``primary`` (what ``simulate`` uses
when no theory is named).

File format (TOML, any number of files in ``theories/``, usually one per architecture)::

    [meta]                      # optional: arch = "sm90", description = "..."
    [[theory]]
    id = "sm90.f16.f32"         # unique over all files; [a-z0-9] and . _ - only
    instructions = ["sm90/mma.m16n8k*.f32.f16.f16.f32", "sm90/wgmma.m64n*k16.f32.f16.f16"]
                                # catalog names or fnmatch patterns; each must match something
    model = "fdpa"              # "fdpa" | "fma" | "ftz_addmul" | "int" (integer MMA:
                                # mma.int_chain, op "int_chain", L = block length of sat_at "step")
                                # | "fpu" (compiler-emulated on the FP32 pipe: mma.fpu_dot)
    op = "t_fdpa"               # fdpa: t_fdpa st_fdpa gst_fdpa e_fdpa tr_fdpa gtr_fdpa
    L = 16                      # fdpa only: L_max; a K-long dot product chains ceil(K/L) blocks
    status = "hypothesis"       # "hypothesis" | "corroborated" | "refuted"
    provenance = "[Xie2025] Table 4, Hopper FP16->FP32"
    competes_with = []          # ids of rival theories (symmetric)
    primary = true              # default true; rivals say false
    # optional composition keys (defaults shown):
    convert = ""                # operand format A and B are converted to (exactly) first
    k_order = "natural"         # "natural" | "mod4-pairs": order of k before chaining
    accumulate = "fused"        # "fused": c enters the first block (Algorithm 5);
                                # "add": the chain starts from +0 and c is added at the end by an
                                # IEEE RNE addition in the output format (NVIDIA canonical NaN)
    sparse = ""                 # sparse instructions only (mma.sp, wgmma.sp, v_smfmac), required
                                # there: "selected" (the fused sums take only the K/2 selected
                                # terms, chained in blocks of L selected terms; B rows picked by
                                # the metadata) | "dense" (A expanded with zeros: all K terms,
                                # blocks of L over the logical K)
    note = ""
    [theory.params]             # exactly the op's keyword parameters (signature of mma.<op>),
    F = 25                      # minus those the instruction fixes (formats, scales)
    rho = "RZ-FP32"
    ...

Invariants (checked when loading; every failure is a one-line ValueError naming the file and
the theory): no unknown keys; known model/op; params equal the op's signature (nothing missing,
nothing extra) with values of the right kind, except the parameters of ``OPTIONAL_PARAMS``
(added after theories were proved: left out means the default, and the default is never
written, so the older theories keep their hashes); every instruction name/pattern matches the catalog;
the theory fits each instruction it claims (formats, scales, output format of rho, L | K ...);
``competes_with`` names existing theories and is symmetric; no instruction has two primary
theories; and (for the package's own theory set) every catalog instruction has one.

Evaluation goes through one entry point, ``Theory.dot`` (the future compiled fast path routes
there too). ``Theory.hash()`` is the sha256 of the canonical *arithmetic* content (what is
computed: id, instructions, model, op, L, params, composition keys), so stale proofs are
detected; status, provenance and rivals are beliefs about it and are not hashed.

Source: [Xie2025] sec. 4 (Algorithms 5-11, Tables 3-7); per-theory sources are in the files.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import tomllib
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from . import fp, isa, mma, paths, trace
from .bits import BV, Backend, ite
from .isa import Instruction
from .theory_check import (FDPA_OPS, MODEL_OP, MODELS, OPTIONAL_PARAMS, STATUSES, check_fit,
                           check_static, expand_pattern, is_int, is_pattern, location, matches)
# the schema's names that the users of this module read here (query.family, query.settle)
from .theory_check import ACCUMULATE, K_ORDERS, SPARSE  # noqa: F401
from .theory_check import op_params as _op_params

__all__ = [
    "Theory", "TheorySet", "load", "default", "resolve", "THEORY_DIR", "MODELS", "FDPA_OPS",
    "STATUSES",
]

#: the theory files: $MMAFORMAL_THEORIES, else the shipped theories/ (mmaformal.paths)
THEORY_DIR = Path(os.environ.get("MMAFORMAL_THEORIES") or paths.shipped("theories"))

_THEORY_KEYS = frozenset({
    "id", "instructions", "model", "op", "L", "params", "status", "provenance", "competes_with",
    "primary", "convert", "k_order", "accumulate", "note", "sparse", "accumulator",
})
_REQUIRED = ("id", "instructions", "model", "params", "status", "provenance")
_TOP_KEYS = frozenset({"meta", "theory"})
_META_KEYS = frozenset({"arch", "description"})


# --------------------------------------------------------------------------------------------
# The Theory record


@dataclasses.dataclass(frozen=True)
class Theory:
    """One hypothesis; `instr` is set on a theory bound to one instruction (see `bind`)."""

    id: str
    instructions: tuple[str, ...]
    model: str
    op: str
    L: int | None
    params: tuple[tuple[str, Any], ...]
    status: str
    provenance: str
    competes_with: tuple[str, ...] = ()
    primary: bool = True
    convert: str = ""
    k_order: str = "natural"
    accumulate: str = "fused"
    note: str = ""
    file: str = ""
    sparse: str = ""
    #: fdpa only: the format the chain accumulates in when C or D differ from it (the WMMA
    #: mixed-precision forms: C converted exactly to it first, D rounded RNE from it last)
    accumulator: str = ""
    instr: Instruction | None = dataclasses.field(default=None, compare=False)

    # -- content ---------------------------------------------------------------------------
    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def param(self, name: str, default: Any = None) -> Any:
        """The value of parameter `name`, an optional one (OPTIONAL_PARAMS) that the theory
        leaves out reading as its default when mma.<op> takes it; else `default`."""
        p = self.param_dict
        if name in p:
            return p[name]
        if name in OPTIONAL_PARAMS and self.model == "fdpa" and name in _op_params(self.op)[1]:
            return OPTIONAL_PARAMS[name]
        return default

    def content(self) -> dict[str, Any]:
        """The arithmetic content (what `hash` covers)."""
        d = {
            "id": self.id, "instructions": list(self.instructions), "model": self.model,
            "op": self.op, "L": self.L, "params": dict(sorted(self.params)),
            "convert": self.convert, "k_order": self.k_order, "accumulate": self.accumulate,
        }
        if self.sparse:          # only when set: the hashes of dense theories stay as they were
            d["sparse"] = self.sparse
        if self.accumulator:     # likewise
            d["accumulator"] = self.accumulator
        return d

    def hash(self) -> str:
        """sha256 (hex) of the canonical arithmetic content of the theory."""
        blob = json.dumps(self.content(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        d = self.content()
        d.update(status=self.status, provenance=self.provenance,
                 competes_with=list(self.competes_with), primary=self.primary, note=self.note,
                 file=self.file, hash=self.hash())
        return d

    def describe(self) -> str:
        """One line: the model and its parameters."""
        ps = ", ".join(f"{k}={_fmt_param(k, v)}" for k, v in self.params)
        head = self.op if self.model == "fdpa" else self.model
        extra = []
        if self.L is not None:
            extra.append(f"L={self.L}")
        if self.convert:
            extra.append(f"convert={self.convert}")
        if self.k_order != "natural":
            extra.append(f"k_order={self.k_order}")
        if self.accumulate != "fused":
            extra.append(f"accumulate={self.accumulate}")
        if self.sparse:
            extra.append(f"sparse={self.sparse}")
        return f"{head}({', '.join(extra + [ps] if ps else extra)})"

    def replace(self, **changes) -> "Theory":
        """A modified copy (for experiments and tests): top-level fields, or params by name.
        The copy is checked against its instruction when bound."""
        params = self.param_dict
        top = {}
        for k, v in changes.items():
            if k in OPTIONAL_PARAMS and self.model == "fdpa" and k in _op_params(self.op)[1]:
                if v == OPTIONAL_PARAMS[k]:
                    params.pop(k, None)        # the default is left out (the hash stays)
                else:
                    params[k] = v
            elif k in params:
                params[k] = v
            elif k in {f.name for f in dataclasses.fields(self)}:
                top[k] = v
            else:
                raise ValueError(f"theory {self.id}: no field or parameter {k!r}")
        t = dataclasses.replace(self, params=tuple(sorted(params.items())) if
                                any(k in OPTIONAL_PARAMS for k in changes) else
                                tuple(params.items()), **top)
        check_static(t, t.file or "<replace>")
        if t.instr is not None:
            check_fit(t, t.instr)
        return t

    # -- binding and evaluation ------------------------------------------------------------
    def covers(self, name: str) -> bool:
        return any(matches(p, name) for p in self.instructions)

    def bind(self, instr: "Instruction | str") -> "Theory":
        """This theory applied to one instruction (checked: the theory must fit it)."""
        ins = isa.lookup(instr) if isinstance(instr, str) else instr
        check_fit(self, ins)
        return dataclasses.replace(self, instr=ins)

    def k_positions(self, kdim: int) -> list[int]:
        """The k of each position of the chain (k_order): blocks of L take consecutive
        positions, so block j sums the products of k in k_positions(K)[j L:(j + 1) L]."""
        return _k_order(self.k_order, kdim) or list(range(kdim))

    def _formats(self) -> tuple[str, str]:
        ins = self._bound()
        return (self.convert or ins.a), (self.convert or ins.b)

    def _bound(self) -> Instruction:
        if self.instr is None:
            raise ValueError(f"theory {self.id} is not bound to an instruction (use .bind(name))")
        return self.instr

    def dot(self, K: Backend, a_cols: Sequence[BV], b_cols: Sequence[BV], c: BV,
            scale_a: Sequence[BV] | None = None, scale_b: Sequence[BV] | None = None,
            meta: Sequence[BV] | None = None) -> BV:
        """The whole K-long dot product d = Phi(a, b, c) of the bound instruction, on back-end K.

        a_cols[k], b_cols[k]: storage elements of the instruction's a/b formats (one BV per k;
        on the numpy back-end each holds all lanes); c: accumulator element. Block-scaled
        instructions take one scale element per K-block: scale_a[j], scale_b[j] apply to
        k in [j * scale_block, (j + 1) * scale_block). Returns the D element (storage bits).

        Sparse instructions (mmaformal.sparse): a_cols holds the K/G*kept kept elements of A
        (compressed), meta the matching positions within their groups (8-bit elements, values
        0..G-1, checked by the front ends; in a symbolic query the caller constrains them),
        b_cols all K elements of B. The theory's `sparse` key says how they are summed.
        Without meta, a_cols may be the dense row of A (K elements): the kept elements and the
        metadata are derived (sparse.derive; a row that breaks the pattern is a ValueError on
        the concrete back-ends, and must be excluded by the caller on the symbolic ones).
        """
        ins = self._bound()
        if ins.sparse:
            a_cols = list(a_cols)
            if meta is None and len(a_cols) == ins.k:
                from . import sparse as _sp
                a_cols, meta, ok = _sp.derive(K, a_cols, ins)
                v = ok.v          # concrete: a bool or numpy lanes; symbolic: the caller's
                bad = (not v) if isinstance(v, bool) else \
                    (not bool(v.all())) if type(v).__module__ == "numpy" else False
                if bad:
                    raise ValueError(f"{ins.name}: the dense A breaks {ins.sparsity[1]}:"
                                     f"{ins.sparsity[0]} sparsity (mmaformal.sparse)")
            return self._dot_sparse(K, a_cols, list(b_cols), c, meta)
        if meta is not None:
            raise ValueError(f"{ins.name} is dense: it takes no metadata")
        return self._dot_dense(K, list(a_cols), list(b_cols), c, scale_a, scale_b)

    def _dot_sparse(self, K: Backend, a: list, b: list, c: BV, meta) -> BV:
        ins = self._bound()
        G, kept = ins.sparsity
        nk = ins.k // G * kept
        if meta is None or len(meta) != nk or len(a) != nk or len(b) != ins.k:
            raise ValueError(f"{ins.name}: a sparse dot needs {nk} a elements, {nk} metadata "
                             f"elements and {ins.k} b elements, got {len(a)}, "
                             f"{0 if meta is None else len(meta)} and {len(b)}")
        trace.record(trace.SparseSelect(self.sparse, G, kept, [m for m in meta]))
        if self.sparse == "selected":
            # B row of each kept element: the one its metadata index names in its group
            sel = []
            for j in range(nk):
                g = j // kept
                r = b[g * G + G - 1]
                for p in range(G - 2, -1, -1):
                    r = ite(meta[j] == p, b[g * G + p], r)
                sel.append(r)
            return self._dot_dense(K, a, sel, c, None, None)
        # "dense": A expanded with +0 where no kept element sits
        zero = K.const(0, fp.fmt(ins.a).storage, False)
        full = []
        for g in range(ins.k // G):
            for p in range(G):
                r = zero
                for j in range(g * kept, (g + 1) * kept):
                    r = ite(meta[j] == p, a[j], r)
                full.append(r)
        return self._dot_dense(K, full, b, c, None, None)

    def _dot_dense(self, K: Backend, a_cols: list, b_cols: list, c: BV,
                   scale_a: Sequence[BV] | None, scale_b: Sequence[BV] | None) -> BV:
        ins = self._bound()
        kdim = len(a_cols)
        want = ins.k
        if ins.sparse and self.sparse == "selected":
            want = ins.k // ins.sparsity[0] * ins.sparsity[1]
        if len(b_cols) != kdim or kdim != want:
            raise ValueError(f"{ins.name}: dot needs {want} a and b elements, got "
                             f"{len(a_cols)} and {len(b_cols)}")
        if ins.scale:
            nblk = ins.k // ins.scale_block
            if scale_a is None or scale_b is None:
                raise ValueError(f"{ins.name} is block-scaled: pass scale_a and scale_b "
                                 f"({nblk} {ins.scale} element(s) each)")
            if len(scale_a) != nblk or len(scale_b) != nblk:
                raise ValueError(f"{ins.name}: expected {nblk} scale elements each, got "
                                 f"{len(scale_a)} and {len(scale_b)}")
        elif scale_a is not None or scale_b is not None:
            raise ValueError(f"{ins.name} takes no scale factors")
        a, b = list(a_cols), list(b_cols)
        if self.convert:
            a = [_convert_exact(x, ins.a, self.convert) for x in a]
            b = [_convert_exact(x, ins.b, self.convert) for x in b]
            trace.record(trace.ConvertOperands(self.convert, a, b))
        perm = _k_order(self.k_order, kdim)
        if perm is not None:
            a = [a[k] for k in perm]
            b = [b[k] for k in perm]
            trace.record(trace.KOrder(self.k_order, perm))
        fa, fb = self._formats()
        params = self.param_dict
        if self.model == "fma":
            return mma.fma_chain(a, b, c, f=fa, **params)
        if self.model == "ftz_addmul":
            return mma.ftz_addmul(a, b, c, fa, fb, fc=ins.c, **params)
        if self.model == "fpu":
            return mma.fpu_dot(a, b, c, f=fa, fc=ins.c, out=ins.d, **params)
        if self.model == "int":
            return mma.int_chain(a, b, c, fa, fb, ins.c, self.L, ins.satfinite, ins.bop, **params)
        # FDPA: blocks of L chained through the accumulator (Algorithm 5)
        out_fmt = mma.rho_of(params["rho"])[2].name if "rho" in params else ins.d
        op = getattr(mma, self.op)
        first_fc = ins.c
        acc = self.accumulator
        if acc and ins.c != acc:  # C converted exactly first (e.g. HADD2.F32 of an f16 C)
            c = _convert_exact(c, ins.c, acc)
            trace.record(trace.ConvertC(acc, c))
            first_fc = acc
        c0 = c
        if self.accumulate == "add":
            c0 = K.const(0, fp.fmt(ins.d).storage, False)
            first_fc = ins.d
        sblk = ins.scale_block
        state = {"k0": 0}
        positions = perm if perm is not None else list(range(kdim))

        def block(ab, bb, cb, **kw):
            k0 = state["k0"]
            n = len(ab)
            kw["fc"] = first_fc if k0 == 0 else out_fmt
            if self.op in ("st_fdpa", "gst_fdpa"):
                kw["fs"] = ins.scale
                if self.op == "st_fdpa":
                    idx = [positions[k0 + i] // sblk for i in range(n)]
                else:
                    G = kw["G"]
                    idx = [positions[k0 + g * G] // sblk for g in range(n // G)]
                kw["scale_a"] = [scale_a[j] for j in idx]
                kw["scale_b"] = [scale_b[j] for j in idx]
            if self.op == "e_fdpa":
                kw["out"] = ins.d
            state["k0"] = k0 + n
            return op(ab, bb, cb, fa=fa, fb=fb, **kw)

        d = mma.fdpa_chain(block, a, b, c0, self.L, **params)
        if self.accumulate == "add":
            nan = mma.NVIDIA_NAN.get(ins.d, "default")
            trace.record(trace.AccumulateAdd(d, c))
            d = fp.add(ins.d, d, c, "RNE", nan=nan)
        if acc and ins.d != acc:  # D rounded last, RNE (e.g. F2FP.F16.F32 of the f32 result)
            d = _round_fmt(d, acc, ins.d)
            trace.record(trace.RoundD(acc, d))
        return d

    @functools.cached_property
    def evaluable(self) -> tuple[bool, str]:
        """(True, "") if the current mma accepts this theory's parameters (tried once on the
        int back-end with zero inputs on a bound theory), else (False, the error)."""
        from .bits import INT
        try:
            ins = self._bound()
            wa, wb, wc = (fp.fmt(f).storage for f in (ins.a, ins.b, ins.c))
            sc = None
            if ins.scale:
                sc = [INT.const(0, 8, False)] * (ins.k // ins.scale_block)
            na = ins.k // ins.sparsity[0] * ins.sparsity[1]
            meta = None
            if ins.sparse:
                meta = [INT.const(j % ins.sparsity[1], 8, False) for j in range(na)]
            self.dot(INT, [INT.const(0, wa, False)] * na, [INT.const(0, wb, False)] * ins.k,
                     INT.const(0, wc, False), sc, sc, meta)
        except (ValueError, TypeError) as e:
            return False, str(e)
        return True, ""


def _fmt_param(k: str, v: Any) -> str:
    if k == "nan" and is_int(v):
        return hex(v)
    return repr(v) if isinstance(v, str) else str(v)


def _k_order(order: str, kdim: int) -> list[int] | None:
    if order == "natural":
        return None
    if order == "mod4-pairs":
        # the k with k mod 4 in {0, 1} first, then those with k mod 4 in {2, 3} (Source: SASS of
        # fp8 mma.sync on sm_90: F2FP.F16.E4M3.UNPACK_B of the low halves feeds the first HMMA)
        return [k for k in range(kdim) if k % 4 < 2] + [k for k in range(kdim) if k % 4 >= 2]
    raise ValueError(f"unknown k_order {order!r}")


def _convert_exact(x: BV, src: str, dst: str) -> BV:
    """Operand conversion src -> dst that is exact for every value (checked statically at load):
    the value is re-encoded; Inf stays Inf; NaN becomes dst's default NaN with x's sign."""
    fs, fd = fp.fmt(src), fp.fmt(dst)
    u = fp.decode(fs, x)
    K = x.k
    fin = fp.round_to(fd, u.sign, u.exp - fs.t, u.sig, "RNE")
    sb = fd.sign_bit << fd.pad
    inf = K.const(fd.inf_code << fd.pad, fd.storage, False) if fd.inf else \
        K.const(fp.default_nan(fd), fd.storage, False)
    nan = K.const(fp.default_nan(fd), fd.storage, False)
    r = ite(u.inf, inf, fin)
    r = ite(u.nan, nan, r)
    return ite(u.sign & (u.inf | u.nan), r | sb, r) if fd.signed else r


def _round_fmt(x: BV, src: str, dst: str) -> BV:
    """src -> dst, rounded to nearest even, Inf on overflow, subnormals kept; Inf stays Inf
    with its sign; NaN becomes dst's NVIDIA canonical NaN."""
    fs, fd = fp.fmt(src), fp.fmt(dst)
    u = fp.decode(fs, x)
    K = x.k
    fin = fp.round_to(fd, u.sign, u.exp - fs.t, u.sig, "RNE")
    inf = K.const(fd.inf_code << fd.pad, fd.storage, False)
    r = ite(u.inf, ite(u.sign, inf | (fd.sign_bit << fd.pad), inf), fin)
    return ite(u.nan, K.const(mma.NVIDIA_NAN.get(dst, fp.default_nan(fd)), fd.storage, False), r)


# --------------------------------------------------------------------------------------------
# Loading


def _parse_file(path: Path) -> list[Theory]:
    file = path.name
    try:
        with path.open("rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{file}: not valid TOML: {e}") from None
    extra = set(doc) - _TOP_KEYS
    if extra:
        raise ValueError(f"{file}: unknown top-level key(s) {sorted(extra)}; known: {sorted(_TOP_KEYS)}")
    meta = doc.get("meta", {})
    if not isinstance(meta, dict) or set(meta) - _META_KEYS:
        raise ValueError(f"{file}: [meta] may hold only {sorted(_META_KEYS)}")
    entries = doc.get("theory", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"{file}: 'theory' must be an array of tables ([[theory]])")
    out = []
    for i, e in enumerate(entries):
        tid = e.get("id") if isinstance(e.get("id"), str) else None
        w = location(file, tid or f"#{i + 1}")
        unknown = set(e) - _THEORY_KEYS
        if unknown:
            raise ValueError(f"{w}: unknown key(s) {sorted(unknown)}; known: {sorted(_THEORY_KEYS)}")
        missing = [k for k in _REQUIRED if k not in e]
        if missing:
            raise ValueError(f"{w}: missing key(s) {missing}")
        if not isinstance(e["id"], str):
            raise ValueError(f"{w}: id must be a string")
        instrs = e["instructions"]
        if not (isinstance(instrs, list) and instrs and all(isinstance(x, str) for x in instrs)):
            raise ValueError(f"{w}: instructions must be a non-empty list of strings")
        for key in ("model", "op", "status", "provenance", "convert", "k_order", "accumulate", "note",
                    "sparse", "accumulator"):
            if key in e and not isinstance(e[key], str):
                raise ValueError(f"{w}: {key} must be a string")
        if "primary" in e and not isinstance(e["primary"], bool):
            raise ValueError(f"{w}: primary must be true or false")
        cw = e.get("competes_with", [])
        if not (isinstance(cw, list) and all(isinstance(x, str) for x in cw)):
            raise ValueError(f"{w}: competes_with must be a list of theory ids")
        params = e["params"]
        if not isinstance(params, dict):
            raise ValueError(f"{w}: params must be a table ([theory.params])")
        model = e["model"]
        op = e.get("op", MODEL_OP.get(model, ""))
        if "L" in e and not is_int(e["L"]):
            raise ValueError(f"{w}: L must be an int")
        if model not in MODELS:
            raise ValueError(f"{w}: unknown model {model!r}; known: {', '.join(MODELS)}")
        if model == "fdpa" and op not in FDPA_OPS:
            raise ValueError(f"{w}: unknown op {op!r} for model fdpa; known: {', '.join(FDPA_OPS)}")
        t = Theory(
            id=e["id"], instructions=tuple(instrs), model=model, op=op, L=e.get("L"),
            params=tuple(sorted(params.items())), status=e["status"], provenance=e["provenance"],
            competes_with=tuple(cw), primary=e.get("primary", True), convert=e.get("convert", ""),
            k_order=e.get("k_order", "natural"), accumulate=e.get("accumulate", "fused"),
            note=e.get("note", ""), file=file, sparse=e.get("sparse", ""),
            accumulator=e.get("accumulator", ""),
        )
        check_static(t, file)
        out.append(t)
    return out


class TheorySet:
    """A checked collection of theories, indexed by id and by instruction."""

    def __init__(self, theories: Iterable[Theory], complete: bool = False):
        self.by_id: dict[str, Theory] = {}
        for t in theories:
            if t.id in self.by_id:
                raise ValueError(f"{t.file}: theory {t.id!r}: duplicate id (also in "
                                 f"{self.by_id[t.id].file})")
            self.by_id[t.id] = t
        self._members: dict[str, list[str]] = {}      # theory id -> instruction names
        self._by_instr: dict[str, list[str]] = {}     # instruction name -> theory ids
        self._bound: dict[tuple, Theory] = {}          # (theory id or None, name) -> bound
        cat = isa.catalog()
        for t in self.by_id.values():
            w = location(t.file, t.id)
            names: list[str] = []
            for p in t.instructions:
                hit = expand_pattern(p)
                if not hit:
                    hint = ""
                    if not is_pattern(p):
                        try:
                            isa.lookup(p)
                            hint = " (write the catalog spelling " + repr(isa.lookup(p).name) + ")"
                        except ValueError as e:
                            hint = f" ({e})"
                    raise ValueError(f"{w}: {p!r} matches no catalog instruction{hint}")
                names.extend(hit)
            names = list(dict.fromkeys(names))
            for n in names:
                check_fit(t, cat[n])
                self._by_instr.setdefault(n, []).append(t.id)
            self._members[t.id] = names
        for t in self.by_id.values():
            w = location(t.file, t.id)
            for r in t.competes_with:
                if r not in self.by_id:
                    raise ValueError(f"{w}: competes_with names unknown theory {r!r}")
                if t.id not in self.by_id[r].competes_with:
                    raise ValueError(f"{w}: competes_with {r!r}, but {r!r} does not name "
                                     f"{t.id!r} back")
                if not set(self._members[t.id]) & set(self._members[r]):
                    raise ValueError(f"{w}: competes_with {r!r}, but they share no instruction")
        for n, ids in self._by_instr.items():
            prim = [i for i in ids if self.by_id[i].primary]
            if len(prim) > 1:
                t = self.by_id[prim[1]]
                raise ValueError(f"{location(t.file, t.id)}: instruction {n} has two primary "
                                 f"theories: {prim[0]!r} and {prim[1]!r} (mark rivals primary = false)")
            if not prim:
                t = self.by_id[ids[0]]
                raise ValueError(f"{location(t.file, t.id)}: instruction {n} has theories "
                                 f"{ids} but none is primary")
        if complete:
            missing = [n for n in cat if n not in self._by_instr]
            if missing:
                raise ValueError(f"theories: {len(missing)} catalog instruction(s) have no theory, "
                                 f"e.g. {', '.join(missing[:3])}")

    def __iter__(self):
        return iter(self.by_id.values())

    def __len__(self) -> int:
        return len(self.by_id)

    def __contains__(self, tid: str) -> bool:
        return tid in self.by_id

    def get(self, tid: str) -> Theory:
        try:
            return self.by_id[tid]
        except KeyError:
            import difflib
            near = difflib.get_close_matches(tid, list(self.by_id), n=5, cutoff=0.3)
            hint = f"; closest: {', '.join(near)}" if near else ""
            raise ValueError(f"unknown theory {tid!r}{hint}") from None

    def instructions_of(self, tid: str) -> list[str]:
        """Catalog names a theory applies to."""
        self.get(tid)
        return list(self._members[tid])

    def theories_for(self, instr: "Instruction | str") -> list[Theory]:
        """All theories (primary first) that cover an instruction, unbound."""
        ins = isa.lookup(instr) if isinstance(instr, str) else instr
        ts = [self.by_id[i] for i in self._by_instr.get(ins.name, [])]
        return sorted(ts, key=lambda t: not t.primary)

    def resolve(self, instr: "Instruction | str", theory: "str | Theory | None" = None) -> Theory:
        """The theory to evaluate an instruction with, bound to it: the primary one, or the
        named one (which must cover the instruction, or is a Theory object that fits it)."""
        ins = isa.lookup(instr) if isinstance(instr, str) else instr
        if isinstance(theory, Theory):
            return theory if theory.instr is not None and theory.instr.name == ins.name \
                else theory.bind(ins)
        key = (theory, ins.name)
        hit = self._bound.get(key)
        if hit is not None:
            return hit
        ts = self.theories_for(ins)
        if theory is None:
            if not ts:
                raise ValueError(f"no theory covers {ins.name}")
            t = ts[0]
        else:
            t = self.get(theory)
            if ins.name not in self._members[t.id]:
                ids = ", ".join(x.id for x in ts) or "none"
                raise ValueError(f"theory {theory!r} does not cover {ins.name}; theories for it: {ids}")
        bound = self._bound[key] = t.bind(ins)
        return bound


def load(*paths: "str | Path", complete: bool | None = None) -> TheorySet:
    """Load and check theory files (or directories of *.toml). Without arguments: the package's
    theory directory, which must then cover the whole catalog (complete=True)."""
    if not paths:
        paths = (THEORY_DIR,)
        complete = True if complete is None else complete
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files.extend(sorted(p.glob("*.toml")))
        elif p.exists():
            files.append(p)
        else:
            raise ValueError(f"{p}: no such theory file or directory")
    theories: list[Theory] = []
    for f in files:
        theories.extend(_parse_file(f))
    return TheorySet(theories, complete=bool(complete))


@functools.lru_cache(maxsize=1)
def default() -> TheorySet:
    """The package's theories (loaded and checked once per process; a later process unpickles
    the checked set while the theory files, the instruction tables and the code that checks
    them are byte-identical: mmaformal._cache)."""
    from ._cache import cached
    here = Path(__file__).resolve().parent
    files = sorted(THEORY_DIR.glob("*.toml")) if THEORY_DIR.is_dir() else [THEORY_DIR]
    code = [here / n for n in ("theory.py", "theory_check.py", "mma.py", "fp.py", "bits.py",
                              "_cache.py")]
    return cached("theories", [*isa.DATA_FILES, Path(isa.__file__), *files, *code], load)


def resolve(instr: "Instruction | str", theory: "str | Theory | None" = None) -> Theory:
    """Shortcut: default().resolve(...)."""
    return default().resolve(instr, theory)
