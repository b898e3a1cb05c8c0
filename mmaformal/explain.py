"""Layer 5 front end, explain: the white-box trace of one dot product.

May import: mmaformal.isa, mmaformal.theory, mmaformal.mma, mmaformal.fp, mmaformal.bits,
mmaformal.simulate (value helpers). Never z3.

``explain(instr, a, b, c, ...)`` evaluates one K-long dot product of an instruction with its
theory on the int back-end, with the trace on (``mmaformal.trace``), and turns the records the
elementary operations leave into a report: the decoded operands, the exact products, e_max, each aligned
term and the bits truncated from it, the fixed-point sum, the output conversion, and which
special-value rule fired. ``render(report)`` prints it as text; the report itself is plain
JSON-able data (bit patterns as hex strings, values as exact decimal strings).

Invariant: the traced evaluation is the same ``Theory.dot`` that ``simulate`` runs (tracing only
records values); the report's output equals ``simulate``'s output bit for bit.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from . import fp, isa, mma, trace
from . import theory as _theory
from .bits import BV, INT, Bool
from .isa import Instruction
from .simulate import as_bits, decimal, value_of

__all__ = ["explain", "render"]


def _hex(bits: int, fmt_name: str) -> str:
    f = fp.fmt(fmt_name)
    return f"0x{int(bits):0{f.storage // 4}X}"


def _val(bits: int, fmt_name: str) -> str:
    return decimal(value_of(bits, fmt_name))


def _elem(bits: int, fmt_name: str) -> dict:
    return {"bits": _hex(bits, fmt_name), "format": fmt_name, "value": _val(bits, fmt_name)}


def _b(x) -> bool:
    return bool(x.v) if isinstance(x, Bool) else bool(x)


def _units(n: int, exp: int) -> str:
    """Exact decimal of n * 2^exp."""
    return decimal(Fraction(n) * Fraction(2) ** exp)


def _term_value(t: mma.Term):
    if _b(t.nan):
        return "nan"
    if _b(t.inf):
        return "-inf" if _b(t.sign) else "inf"
    v = Fraction(t.sig.v) * Fraction(2) ** (t.e.v - t.fb)
    return -v if _b(t.sign) else v


def _labels(th: _theory.Theory, ins: Instruction, op_terms: int, k_ids: list[int], nth_sum: int) -> list[str]:
    """Names of the terms of one fused sum, in order."""
    if th.op in ("t_fdpa", "st_fdpa"):
        return [f"a{k}*b{k}" for k in k_ids] + ["c"]
    if th.op == "gst_fdpa":
        G = th.param_dict["G"]
        groups = [k_ids[i:i + G] for i in range(0, len(k_ids), G)]
        return [f"group k{g[0]}..k{g[-1]} (scaled)" for g in groups] + ["c"]
    if th.op == "tr_fdpa":
        return [f"a{k}*b{k}" for k in k_ids]
    if th.op == "gtr_fdpa":
        ks = k_ids[0::2] if nth_sum == 0 else k_ids[1::2]
        return [f"a{k}*b{k}" for k in ks]
    return [f"term{i}" for i in range(op_terms)]


def explain(instr: "str | Instruction", a: Sequence[int], b: Sequence[int], c: int,
            scale_a: Sequence[int] | None = None, scale_b: Sequence[int] | None = None,
            theory=None) -> dict:
    """The trace of d = Phi(a, b, c) (raw bits in, padded with zeros to K) as a report dict."""
    ins = isa.lookup(instr) if not isinstance(instr, Instruction) else instr
    th = _theory.default().resolve(ins, theory)
    K = ins.k
    a, b = list(a), list(b)
    for role, v in (("a", a), ("b", b)):
        if len(v) > K:
            raise ValueError(f"{ins.name}: K = {K}, got {len(v)} {role} values")
    a += [0] * (K - len(a))
    b += [0] * (K - len(b))
    _check_range(a, ins.a, "a", ins.name)
    _check_range(b, ins.b, "b", ins.name)
    _check_range([c], ins.c, "c", ins.name)
    A = as_bits(np.array(a, dtype=np.uint64).astype(_u(ins.a)), ins.a, "a", ins.name)
    B = as_bits(np.array(b, dtype=np.uint64).astype(_u(ins.b)), ins.b, "b", ins.name)
    C = as_bits(np.array([c], dtype=np.uint64).astype(_u(ins.c)), ins.c, "c", ins.name)
    sa = sb = None
    report: dict[str, Any] = {
        "instruction": ins.name, "theory": th.id, "status": th.status, "model": th.describe(),
        "provenance": th.provenance, "K": K,
        "operands": {
            "a": [dict(k=k, **_elem(int(x), ins.a)) for k, x in enumerate(A)],
            "b": [dict(k=k, **_elem(int(x), ins.b)) for k, x in enumerate(B)],
            "c": _elem(int(C[0]), ins.c),
        },
    }
    if ins.scale:
        nblk = K // ins.scale_block
        one = _one(ins.scale)
        sa = list(scale_a) if scale_a is not None else [one] * nblk
        sb = list(scale_b) if scale_b is not None else [one] * nblk
        for role, v in (("scale_a", sa), ("scale_b", sb)):
            if len(v) != nblk:
                raise ValueError(f"{ins.name}: {role} needs {nblk} value(s), got {len(v)}")
            _check_range(v, ins.scale, role, ins.name)
        report["operands"]["scale_a"] = [_elem(x, ins.scale) for x in sa]
        report["operands"]["scale_b"] = [_elem(x, ins.scale) for x in sb]
        sa = [INT.const(int(x), 8, False) for x in sa]
        sb = [INT.const(int(x), 8, False) for x in sb]
    elif scale_a or scale_b:
        raise ValueError(f"{ins.name} is not block-scaled: it takes no scales")
    wa, wb, wc = (fp.fmt(f).storage for f in (ins.a, ins.b, ins.c))
    a_in, meta = [int(x) for x in A], None
    if ins.sparse:       # the dense row of A: 2:4, tf32 1:2, s4/u4 pairs (mmaformal.sparse)
        from . import sparse as _sp
        a_in, em = _sp.dense_row(ins, a_in, ins.name)
        meta = [INT.const(x, 8, False) for x in em]
        report["operands"]["metadata"] = em
    with trace.tracing() as notes:
        d = th.dot(INT, [INT.const(x, wa, False) for x in a_in],
                   [INT.const(int(x), wb, False) for x in B], INT.const(int(C[0]), wc, False), sa, sb,
                   meta)
    report["steps"] = _steps(th, ins, notes, report["operands"])
    report["output"] = _elem(int(d.v), ins.d)
    return report


def _u(fmt_name: str):
    return {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[fp.fmt(fmt_name).storage]


def _check_range(vals, fmt_name: str, role: str, where: str) -> None:
    f = fp.fmt(fmt_name)
    for x in vals:
        if not 0 <= int(x) < (1 << (f.k + f.pad)):
            raise ValueError(f"{where}: {role} value {hex(int(x))} does not fit format {f.name} "
                             f"({f.k + f.pad} bits)")


def _one(scale: str) -> int:
    return {"ue8m0": 0x7F, "ue4m3": 0x38}[scale]


def _classify(x: dict) -> str:
    v = x["value"]
    return "nan" if v == "nan" else "inf" if v in ("inf", "-inf") else "zero" if v in ("0", "-0") else "finite"


def _special_rule(th, ins, ops, k_ids: list[int], flags, with_c: bool) -> str:
    """Which rule of [Xie2025] sec. 4.2 decided the result of one block (flags: a
    trace.Special or trace.EFdpa record)."""
    nan, pinf, ninf = (_b(x) for x in (flags.nan, flags.pinf, flags.ninf))
    if not (nan or pinf or ninf):
        return "none (finite path)"
    if nan:
        why = []
        for k in k_ids:
            ca, cb = _classify(ops["a"][k]), _classify(ops["b"][k])
            if "nan" in (ca, cb):
                why.append(f"NaN input at k={k}")
            elif {ca, cb} == {"inf", "zero"}:
                why.append(f"Inf x 0 at k={k}")
        if with_c and _classify(ops["c"]) == "nan":
            why.append("NaN c")
        if pinf and ninf:
            why.append("+Inf and -Inf among the terms")
        if any(_classify(s) == "nan" for s in ops.get("scale_a", []) + ops.get("scale_b", [])):
            why.append("NaN scale")
        return "NaN: " + ("; ".join(why) if why else "NaN accumulator") + " -> canonical NaN of the output"
    return ("+Inf" if pinf else "-Inf") + " term -> Inf of its sign"


def _steps(th: _theory.Theory, ins: Instruction, notes: list, ops: dict) -> list[dict]:
    """The report's steps, one per record of the trace in order (a fused sum takes the records
    of its aligned terms and of its sum that follow it)."""
    return _Steps(th, ins, ops).run(notes)


class _Steps:
    """The walk over the records of a trace. It carries what later records are read against:
    the k order, the current block and its k, the number of fused sums in the block so far."""

    def __init__(self, th: _theory.Theory, ins: Instruction, ops: dict):
        self.th, self.ins, self.ops = th, ins, ops
        self.out_fmt = mma.rho_of(th.param_dict["rho"])[2].name if "rho" in th.param_dict else ins.d
        self.steps: list[dict] = []
        self.perm = list(range(ins.k))
        self.cur: dict | None = None
        self.k_ids: list[int] = list(range(ins.k))
        self.sums_in_block = 0
        self.first_block = True
        self.notes: list = []
        self.i = 0

    def run(self, notes: list) -> list[dict]:
        self.notes, self.i = notes, 0
        while self.i < len(notes):
            v = notes[self.i]
            self.i += 1
            for kind, step in _STEPS:
                if isinstance(v, kind):
                    step(self, v)
                    break
        return self.steps

    # -- the theory's composition around the operation -------------------------------------------
    def convert_operands(self, v) -> None:
        self.steps.append({"step": "convert operands", "to": v.to,
                           "a": [_elem(x.v, v.to)["bits"] for x in v.a],
                           "b": [_elem(x.v, v.to)["bits"] for x in v.b],
                           "text": f"A and B converted exactly to {v.to}"})

    def convert_c(self, v) -> None:
        self.steps.append({"step": "convert c", "to": v.to, **_elem(v.c.v, v.to),
                           "text": f"C converted exactly to the {v.to} accumulator"})

    def round_d(self, v) -> None:
        ins = self.ins
        self.steps.append({"step": "round d", "from": v.src, **_elem(v.d.v, ins.d),
                           "text": f"the {v.src} result rounded to {ins.d}, RNE"})

    def k_order(self, v) -> None:
        self.perm = perm = list(v.perm)
        self.steps.append({"step": "k order", "order": v.order, "perm": perm,
                           "text": f"k order {v.order}: " + " ".join(map(str, perm))})

    def sparse(self, v) -> None:
        G, kept = v.G, v.kept
        em = [int(x.v) for x in v.meta]
        ks = [(j // kept) * G + e for j, e in enumerate(em)]
        if v.mode == "selected":
            self.perm = ks             # the fused sums see the kept terms only, k relabelled
        self.steps.append({"step": "sparse", "mode": v.mode, "kept_k": ks,
                           "text": f"sparse {kept}:{G}, kept k = {_ranges(ks)}; "
                                   + ("only the kept terms are summed" if v.mode == "selected"
                                      else "A expanded with zeros, all K terms summed")})

    def accumulate_add(self, v) -> None:
        ins = self.ins
        self.steps.append({"step": "add c", "chain": _elem(v.chain.v, ins.d), "c": _elem(v.c.v, ins.c),
                           "text": f"d = RNE-{ins.d}(chain + c) (IEEE add)"})

    # -- blocks of the FDPA chain -----------------------------------------------------------------
    def block_in(self, v) -> None:
        th, ins = self.th, self.ins
        k0, L = v.k0, v.L
        self.k_ids = self.perm[k0:k0 + L]
        cf = (ins.d if th.accumulate == "add" else (th.accumulator or ins.c)) \
            if self.first_block else self.out_fmt
        self.first_block = False
        self.sums_in_block = 0
        self.cur = {"step": "block", "k": self.k_ids, "accumulator_in": _elem(v.c.v, cf)}
        self.steps.append(self.cur)

    def block_out(self, v) -> None:
        if self.cur is not None:
            self.cur["result"] = _elem(v.d.v, self.out_fmt)
        self.steps.append({"step": "block result", **_elem(v.d.v, self.out_fmt)})

    # -- inside a block: the fused sum and what follows it ----------------------------------------
    def fused_sum(self, v) -> None:
        """The fused sum, with the records of its aligned terms and of its sum that follow."""
        th, ins, notes = self.th, self.ins, self.notes
        terms = v.terms
        F, emax = v.F, v.e_max.v
        aligned = []
        while self.i < len(notes) and isinstance(notes[self.i], trace.Aligned):
            aligned.append(notes[self.i].value.v)
            self.i += 1
        S = None
        if self.i < len(notes) and isinstance(notes[self.i], trace.Sum):
            S = notes[self.i].S.v
            self.i += 1
        labels = _labels(th, ins, len(terms), self.k_ids, self.sums_in_block)
        all_zero = all(_b(t.zero) for t in terms)
        rows = []
        for lab, t, e, q in zip(labels, terms, v.e, aligned):
            ex = _term_value(t)
            row = {"term": lab, "exact": decimal(ex) if not isinstance(ex, str) else ex,
                   "exp": e.v, "aligned_units": q,
                   "aligned": _units(q, emax - F)}
            if not isinstance(ex, str) and not _b(t.zero):
                row["truncated"] = decimal(ex - Fraction(q) * Fraction(2) ** (emax - F))
            elif _b(t.zero):
                row["zero"] = True
            rows.append(row)
        what = {0: "", 1: ""}
        if th.op == "gtr_fdpa":
            what = {0: " (even products)", 1: " (odd products)"}
        self.steps.append({"step": "fused sum" + what.get(self.sums_in_block, ""), "F": F,
                           "rounding": v.mode, "e_max": None if all_zero else emax,
                           "terms": rows, "S_units": S,
                           "S": _units(S, emax - F) if S is not None else None,
                           "text": f"align at e_max = {'(all terms zero)' if all_zero else emax}, "
                                   f"{v.mode} to {F} fraction bits (unit 2^{emax - F})"})
        self.sums_in_block += 1

    def gtr_groups(self, v) -> None:
        F = self.th.param_dict["F"]
        self.steps.append({"step": "group sums", "T_even": _units(v.T_even.v, v.e_even.v - F),
                           "T_odd": _units(v.T_odd.v, v.e_odd.v - F),
                           "e_max": v.e_max.v,
                           "T": _units(v.T.v, v.e_max.v - F),
                           "text": "group sums aligned at their max and rounded down (RD_F), added"})

    def tr_tail(self, v) -> None:
        F, F2, E = v.F, v.F2, v.E.v
        G = F2 + 1 if v.tail == "mmasim" else F2      # mma.tr_tail: T' in 2^(E-G)
        self.steps.append({"step": "rounded sum with c", "E": E,
                           "T'": _units(v.Tp.v, E - G), "c'": _units(v.sc.v, E - F),
                           "S": _units(v.Tp.v + (v.sc.v << (G - F)), E - G),
                           "text": f"E = max(e_max, Exp(c)) = {E}; T' = RD(T) at 2^(E-{G}), "
                                   f"c' = RD_F(c), S = T' + c'"})

    def tr_renorm(self, v) -> None:
        self.steps.append({"step": "renormalised rounding", "k": v.k.v,
                           "text": f"tail mmasim: S normalised (e' >= -126) and rounded down to "
                                   f"F2 fraction bits ({v.k.v} bits of S dropped)"})

    def convert(self, v) -> None:
        S, ex = v.S.v, v.exp.v
        self.steps.append({"step": "output conversion", "rho": v.rho,
                           "exact": _units(S, ex), "text": f"{v.rho}(S * 2^{ex})"})

    def special(self, v) -> None:
        th = self.th
        fin = v.finite.v
        rule = _special_rule(th, self.ins, self.ops, self.k_ids, v, with_c=True)
        fmt = self.out_fmt if th.op not in ("tr_fdpa", "gtr_fdpa") else "f32"
        self.steps.append({"step": "special values", "finite_result": _elem(fin, fmt),
                           "rule": rule, "text": rule})

    def e_fdpa(self, v) -> None:
        rule = _special_rule(self.th, self.ins, self.ops, self.k_ids, v, with_c=True)
        self.steps.append({"step": "exact sum", "products": _units(v.P.v, v.P_exp),
                           "finite_result": _elem(v.finite.v, self.ins.d), "rule": rule,
                           "text": "c + sum of exact products, one RNE rounding; " + rule})

    # -- the other chains -----------------------------------------------------------------------
    def fma_step(self, v) -> None:
        self.steps.append({"step": "fma", "k": v.k, **_elem(v.acc.v, self.ins.d),
                           "text": f"d = fma(a{v.k}, b{v.k}, d)"})

    def ftz_step(self, v) -> None:
        acc = mma.recode(v.acc)
        self.steps.append({"step": "ftz-add/mul", "k": list(range(v.k0, v.k0 + v.P)),
                           "partial": _elem(v.s.v, "f32"), **_elem(acc.v, "f32"),
                           "text": f"s = pairwise FTZ sum of products k{v.k0}..k{v.k0 + v.P - 1}; d = FTZ-Add(d, s)"})

    def int_block(self, v) -> None:
        k0, L = v.k0, v.L
        self.k_ids = k_ids = self.perm[k0:k0 + L]
        self.steps.append({"step": "integer block", "k": k_ids, "accumulator_in": str(v.c.v),
                           "products": str(v.sum.v),
                           "text": f"block k = {_ranges(k_ids)}: exact sum of products "
                                   f"{v.sum.v}, accumulator in {v.c.v}"})

    def int_acc(self, v) -> None:
        self.steps.append({"step": "integer accumulator", "value": str(v.acc.v),
                           "text": f"accumulator {v.acc.v} (exact, or clamped per step)"})

    def int_result(self, v) -> None:
        val = v.exact_or_clamped.v
        sat = v.saturate
        how = (f".satfinite: clamped to INT32_MIN..INT32_MAX ({v.sat_at})" if sat
               else "wrap-around: low 32 bits, two's complement")
        self.steps.append({"step": "integer result", "value": str(val), "saturate": sat,
                           "sat_at": v.sat_at, "text": f"{how}: {val}"})


#: the step each kind of record makes (the first kind the record is an instance of)
_STEPS = (
    (trace.ConvertOperands, _Steps.convert_operands), (trace.ConvertC, _Steps.convert_c),
    (trace.RoundD, _Steps.round_d), (trace.KOrder, _Steps.k_order),
    (trace.BlockIn, _Steps.block_in), (trace.FusedSum, _Steps.fused_sum),
    (trace.GtrGroups, _Steps.gtr_groups), (trace.TrTail, _Steps.tr_tail),
    (trace.TrRenorm, _Steps.tr_renorm), (trace.Convert, _Steps.convert),
    (trace.Special, _Steps.special), (trace.EFdpa, _Steps.e_fdpa),
    (trace.BlockOut, _Steps.block_out), (trace.FmaStep, _Steps.fma_step),
    (trace.FtzStep, _Steps.ftz_step), (trace.SparseSelect, _Steps.sparse),
    (trace.IntBlock, _Steps.int_block), (trace.IntAcc, _Steps.int_acc),
    (trace.IntResult, _Steps.int_result), (trace.AccumulateAdd, _Steps.accumulate_add),
)


def _ranges(ks: list[int]) -> str:
    """[0, 1, 2, 5, 6] -> "0..2, 5..6"."""
    out, i = [], 0
    while i < len(ks):
        j = i
        while j + 1 < len(ks) and ks[j + 1] == ks[j] + 1:
            j += 1
        out.append(str(ks[i]) if i == j else f"{ks[i]}..{ks[j]}")
        i = j + 1
    return ", ".join(out)


def _bv(x: dict) -> str:
    """`bits (value)` of one element of a report."""
    return f"{x['bits']} ({x['value']})"


#: the text line of each step kind (the fused sums, with a line per term, are in `render`)
_STEP_LINE = {
    "block": lambda s: f"block k = {_ranges(s['k'])}: accumulator in {_bv(s['accumulator_in'])}",
    "block result": lambda s: f"  block result {_bv(s)}",
    "special values": lambda s: f"  rounded {_bv(s['finite_result'])}; special: {s['rule']}",
    "fma": lambda s: f"  {s['text']} = {_bv(s)}",
    "ftz-add/mul": lambda s: f"  {s['text']}: s = {_bv(s['partial'])}, d = {_bv(s)}",
    "output conversion": lambda s: f"  {s['text']}: exact {s['exact']}",
    "rounded sum with c": lambda s: "  %s: T' = %s, c' = %s, S = %s" % (s["text"], s["T'"], s["c'"], s["S"]),
    "group sums": lambda s: f"  {s['text']}: T_even = {s['T_even']}, T_odd = {s['T_odd']}, T = {s['T']}",
    "exact sum": lambda s: f"  {s['text']}: products = {s['products']} -> {_bv(s['finite_result'])}",
    "integer block": lambda s: f"  {s['text']}",
    "integer accumulator": lambda s: f"  {s['text']}",
    "integer result": lambda s: f"  {s['text']}",
    "add c": lambda s: f"  {s['text']}: {s['chain']['value']} + {s['c']['value']}",
}


def render(rep: dict) -> str:
    """The report as text."""
    L = []
    L.append(f"{rep['instruction']}  (K={rep['K']})")
    L.append(f"theory {rep['theory']} [{rep['status']}]: {rep['model']}")
    L.append(f"  provenance: {rep['provenance']}")
    ops = rep["operands"]
    L.append("operands:")
    for k, (x, y) in enumerate(zip(ops["a"], ops["b"])):
        if x["value"] in ("0", "-0") and y["value"] in ("0", "-0") and x["bits"].strip("0x") == "" and y["bits"].strip("0x") == "":
            continue
        L.append(f"  k={k:<3} a={_bv(x)}  b={_bv(y)}")
    L.append(f"  c={_bv(ops['c'])}   (k with a = b = +0 not shown)")
    for role in ("scale_a", "scale_b"):
        if role in ops:
            L.append(f"  {role}: " + ", ".join(_bv(x) for x in ops[role]))
    for s in rep["steps"]:
        kind = s["step"]
        if kind.startswith("fused sum"):
            L.append(f"  {kind}: {s['text']}")
            for r in s["terms"]:
                if r.get("zero"):
                    continue
                tr = f", truncated {r['truncated']}" if "truncated" in r and r["truncated"] != "0" else ""
                L.append(f"    {r['term']:<12} exact {r['exact']} (exp {r['exp']}) -> aligned {r['aligned']}{tr}")
            L.append(f"    S = {s['S']}")
        else:
            line = _STEP_LINE.get(kind)
            L.append(line(s) if line else f"  {s.get('text', kind)}")
    o = rep["output"]
    L.append(f"d = {o['bits']} ({o['format']}: {o['value']})")
    return "\n".join(L)
