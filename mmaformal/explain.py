"""Layer 5 front end, explain: the white-box trace of one dot product.

May import: mmaformal.isa, mmaformal.theory, mmaformal.mma, mmaformal.fp, mmaformal.bits,
mmaformal.simulate (value helpers). Never z3.

``explain(instr, a, b, c, ...)`` evaluates one K-long dot product of an instruction with its
theory on the int back-end, with ``mma.TRACE`` set, and turns the notes the elementary operations
leave (``mma._note``) into a report: the decoded operands, the exact products, e_max, each aligned
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

from . import fp, isa, mma
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
    with mma.tracing() as notes:
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


def _special_rule(th, ins, ops, k_ids: list[int], flags: dict, with_c: bool) -> str:
    """Which rule of [Xie2025] sec. 4.2 decided the result of one block."""
    nan, pinf, ninf = (_b(flags.get(k)) for k in ("nan", "pinf", "ninf"))
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
    out_fmt = mma.rho_of(th.param_dict["rho"])[2].name if "rho" in th.param_dict else ins.d
    steps: list[dict] = []
    perm = list(range(ins.k))
    cur: dict | None = None
    k_ids: list[int] = list(range(ins.k))
    sums_in_block = 0
    first_block = True
    i = 0
    while i < len(notes):
        label, v = notes[i]
        i += 1
        if label == "convert_operands":
            steps.append({"step": "convert operands", "to": v["to"],
                          "a": [_elem(x.v, v["to"])["bits"] for x in v["a"]],
                          "b": [_elem(x.v, v["to"])["bits"] for x in v["b"]],
                          "text": f"A and B converted exactly to {v['to']}"})
        elif label == "convert_c":
            steps.append({"step": "convert c", "to": v["to"], **_elem(v["c"].v, v["to"]),
                          "text": f"C converted exactly to the {v['to']} accumulator"})
        elif label == "round_d":
            steps.append({"step": "round d", "from": v["from"], **_elem(v["d"].v, ins.d),
                          "text": f"the {v['from']} result rounded to {ins.d}, RNE"})
        elif label == "k_order":
            perm = list(v["perm"])
            steps.append({"step": "k order", "order": v["order"], "perm": perm,
                          "text": f"k order {v['order']}: " + " ".join(map(str, perm))})
        elif label == "block":
            k0, L = v["k0"], v["L"]
            k_ids = perm[k0:k0 + L]
            cf = (ins.d if th.accumulate == "add" else (th.accumulator or ins.c)) \
                if first_block else out_fmt
            first_block = False
            sums_in_block = 0
            cur = {"step": "block", "k": k_ids, "accumulator_in": _elem(v["c"].v, cf)}
            steps.append(cur)
        elif label == "fused_sum":
            terms = v["terms"]
            F, emax = v["F"], v["e_max"].v
            aligned = []
            while i < len(notes) and notes[i][0] == "aligned":
                aligned.append(notes[i][1].v)
                i += 1
            S = None
            if i < len(notes) and notes[i][0] == "S":
                S = notes[i][1].v
                i += 1
            labels = _labels(th, ins, len(terms), k_ids, sums_in_block)
            all_zero = all(_b(t.zero) for t in terms)
            rows = []
            for lab, t, e, q in zip(labels, terms, v["e"], aligned):
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
            steps.append({"step": "fused sum" + what.get(sums_in_block, ""), "F": F,
                          "rounding": v["mode"], "e_max": None if all_zero else emax,
                          "terms": rows, "S_units": S,
                          "S": _units(S, emax - F) if S is not None else None,
                          "text": f"align at e_max = {'(all terms zero)' if all_zero else emax}, "
                                  f"{v['mode']} to {F} fraction bits (unit 2^{emax - F})"})
            sums_in_block += 1
        elif label == "gtr_groups":
            steps.append({"step": "group sums", "T_even": _units(v["T_even"].v, v["e_even"].v - th.param_dict["F"]),
                          "T_odd": _units(v["T_odd"].v, v["e_odd"].v - th.param_dict["F"]),
                          "e_max": v["e_max"].v,
                          "T": _units(v["T"].v, v["e_max"].v - th.param_dict["F"]),
                          "text": "group sums aligned at their max and rounded down (RD_F), added"})
        elif label == "tr_tail":
            F, F2, E = v["F"], v["F2"], v["E"].v
            G = F2 + 1 if v.get("tail") == "mmasim" else F2      # mma._tr_tail: T' in 2^(E-G)
            steps.append({"step": "rounded sum with c", "E": E,
                          "T'": _units(v["Tp"].v, E - G), "c'": _units(v["sc"].v, E - F),
                          "S": _units(v["Tp"].v + (v["sc"].v << (G - F)), E - G),
                          "text": f"E = max(e_max, Exp(c)) = {E}; T' = RD(T) at 2^(E-{G}), "
                                  f"c' = RD_F(c), S = T' + c'"})
        elif label == "tr_renorm":
            steps.append({"step": "renormalised rounding", "k": v["k"].v,
                          "text": f"tail mmasim: S normalised (e' >= -126) and rounded down to "
                                  f"F2 fraction bits ({v['k'].v} bits of S dropped)"})
        elif label == "convert":
            S, ex = v["S"].v, v["exp"].v
            steps.append({"step": "output conversion", "rho": v["rho"],
                          "exact": _units(S, ex), "text": f"{v['rho']}(S * 2^{ex})"})
        elif label == "special":
            fin = v["finite"].v
            rule = _special_rule(th, ins, ops, k_ids, v, with_c=True)
            steps.append({"step": "special values", "finite_result": _elem(fin, out_fmt if th.op not in ("tr_fdpa", "gtr_fdpa") else "f32"),
                          "rule": rule, "text": rule})
        elif label == "e_fdpa":
            rule = _special_rule(th, ins, ops, k_ids, v, with_c=True)
            steps.append({"step": "exact sum", "products": _units(v["P"].v, v["P_exp"]),
                          "finite_result": _elem(v["finite"].v, ins.d), "rule": rule,
                          "text": "c + sum of exact products, one RNE rounding; " + rule})
        elif label == "block_out":
            if cur is not None:
                cur["result"] = _elem(v.v, out_fmt)
            steps.append({"step": "block result", **_elem(v.v, out_fmt)})
        elif label == "fma_step":
            steps.append({"step": "fma", "k": v["k"], **_elem(v["acc"].v, ins.d),
                          "text": f"d = fma(a{v['k']}, b{v['k']}, d)"})
        elif label == "ftz_step":
            acc = mma._recode(v["acc"])
            steps.append({"step": "ftz-add/mul", "k": list(range(v["k0"], v["k0"] + v["P"])),
                          "partial": _elem(v["s"].v, "f32"), **_elem(acc.v, "f32"),
                          "text": f"s = pairwise FTZ sum of products k{v['k0']}..k{v['k0'] + v['P'] - 1}; d = FTZ-Add(d, s)"})
        elif label == "sparse":
            G, kept = v["G"], v["kept"]
            em = [int(x.v) for x in v["meta"]]
            ks = [(j // kept) * G + e for j, e in enumerate(em)]
            if v["mode"] == "selected":
                perm = ks              # the fused sums see the kept terms only, k relabelled
            steps.append({"step": "sparse", "mode": v["mode"], "kept_k": ks,
                          "text": f"sparse {kept}:{G}, kept k = {_ranges(ks)}; "
                                  + ("only the kept terms are summed" if v["mode"] == "selected"
                                     else "A expanded with zeros, all K terms summed")})
        elif label == "int_block":
            k0, L = v["k0"], v["L"]
            k_ids = perm[k0:k0 + L]
            steps.append({"step": "integer block", "k": k_ids, "accumulator_in": str(v["c"].v),
                          "products": str(v["sum"].v),
                          "text": f"block k = {_ranges(k_ids)}: exact sum of products "
                                  f"{v['sum'].v}, accumulator in {v['c'].v}"})
        elif label == "int_acc":
            steps.append({"step": "integer accumulator", "value": str(v.v),
                          "text": f"accumulator {v.v} (exact, or clamped per step)"})
        elif label == "int_result":
            val = v["exact_or_clamped"].v
            sat = v["saturate"]
            how = (f".satfinite: clamped to INT32_MIN..INT32_MAX ({v['sat_at']})" if sat
                   else "wrap-around: low 32 bits, two's complement")
            steps.append({"step": "integer result", "value": str(val), "saturate": sat,
                          "sat_at": v["sat_at"], "text": f"{how}: {val}"})
        elif label == "accumulate_add":
            steps.append({"step": "add c", "chain": _elem(v["chain"].v, ins.d), "c": _elem(v["c"].v, ins.c),
                          "text": f"d = RNE-{ins.d}(chain + c) (IEEE add)"})
    return steps


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
