"""Layer 5 front end, cli: the ``mmaformal`` command (also ``python -m mmaformal``).

May import: every layer below (lazily where a verb needs it; never z3 on the simulate path).

Verbs (``--json`` on each prints one machine-readable value; bit patterns as hex strings):

    mmaformal list [PATTERN]            architectures, instructions, theories and statuses
    mmaformal list --instructions [--arch ARCH] [PATTERN]   instruction names, one a line
    mmaformal simulate INSTR --a A.npy --b B.npy --c C.npy [--scale-a SA.npy --scale-b SB.npy]
                         --out D.npy [--theory ID]
    mmaformal compare --a=V,V,.. --b=V,.. --c=V [INSTR|PATTERN ...]
    mmaformal explain INSTR --a V,.. --b V,.. --c V [--scale-a V,..] [--scale-b V,..] [--theory ID]

Values (compare, explain): decimal or rational literals (-0.5, 1e-3, 1/3 is rejected unless
exact), inf, -inf, nan, -0, or raw bits ``0x3C00``. In compare, ``0x...`` bits are read in each
instruction's own operand format (instructions where they do not fit are excluded) and
``0x...:FMT`` is the value of those bits in format FMT. Use ``--a=...`` (with '=') when the
first value is negative.

Global options, accepted before or after the verb:

    --store DIR     where the verbs that store records write them (distinguish --save, prove
                    --save, probes, hw validate, infer --save): an existing, writable directory
                    (else exit 2); also $MMAFORMAL_STORE. Default: the checkout's own folders
                    when run from one, else $XDG_DATA_HOME/mmaformal or ~/.local/share/mmaformal
                    (mmaformal.paths). Readers read the shipped records and the store's.
    --version       the package version and the versions of the solvers found

Exit codes (EPILOG, shown by ``mmaformal --help``): 0 success; 1 refuted / differs where the
verb says so; 2 bad input or usage, with one line on stderr and no traceback; 3 internal error
(a result failed its own check); 4 unknown (a solver timed out); 130 interrupted. Options take
the shared argparse types of mmaformal.args (positive counts and times, paths that must be
writable), so a bad value is refused before anything runs.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

__all__ = ["main"]


class UsageError(Exception):
    pass


#: the end of `mmaformal --help`: where to start, and what each exit code means (docs/design.md
#: "Contracts"; query/frame.py; the verbs)
EPILOG = """\
start with: 'mmaformal list --instructions [--arch ARCH] [PATTERN]' (instruction names),
'mmaformal list PATTERN' (their theories and statuses), then simulate, compare or explain.
Every verb takes --json (one machine-readable value; bit patterns as hex strings).

exit codes:
  0    success (distinguish: a witness found or the models proved equivalent; prove: proved;
       infer: identified)
  1    a claim was refuted or a check disagrees where the verb says so (prove: refuted; hw
       validate: the GPU differs from the model; infer: no hypothesis fits)
  2    bad input or usage: one line on stderr, no traceback
  3    internal error: a result failed its own check (e.g. a witness that does not replay)
  4    unknown: a solver gave no answer in time (never reported as proved)
  130  interrupted (Ctrl-C); a campaign keeps its finished jobs in its progress store
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (raised to main)
        raise UsageError(f"{self.prog}: {message}")


def _verb_of(argv) -> str | None:
    """The verb an argument list names (its first word that is not an option), or None."""
    for a in sys.argv[1:] if argv is None else argv:
        if not a.startswith("-"):
            return a
    return None


def _parser(argv=None) -> argparse.ArgumentParser:
    """The argument parser. The sub-parsers of verbs defined in their own modules
    (``_MODULE_VERBS``) are built only when needed: for the verb argv names, or for all of them
    when argv names none or an unknown one (help and "invalid choice" list every verb). So a
    built-in verb such as ``simulate`` never imports the query, hw, emulate, ... modules."""
    p = _Parser(prog="mmaformal", description="Formal, bit-exact models of GPU matrix-multiply-"
                "accumulate arithmetic.\nEvery verb is listed below with what it does; "
                "'mmaformal VERB --help' gives its options.", epilog=EPILOG,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action=_VersionAction, nargs=0,
                   help="print the package version and the solvers' versions and exit")
    p.add_argument("--store", metavar="DIR", help="where records are written (also "
                   "$MMAFORMAL_STORE; default: the checkout when run from one, else "
                   "~/.local/share/mmaformal); accepted before or after the verb")
    sub = p.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    import importlib
    from . import args as _args
    verb = _verb_of(argv)
    if verb in _MODULE_VERBS:
        mods = [_MODULE_VERBS[verb]]
    elif verb in _VERBS:
        mods = []
    else:
        mods = list(_MODULE_VERBS.values())
    for mod in mods:
        importlib.import_module(mod).add_parser(sub)

    q = sub.add_parser("list", help="architectures, instructions, theories, statuses")
    q.add_argument("pattern", nargs="?", help="instruction name pattern (fnmatch or substring; "
                   "also matched against theory ids); without it: architectures and theories")
    q.add_argument("--instructions", action="store_true",
                   help="only instruction names, one a line (all, or those of --arch and PATTERN)")
    q.add_argument("--arch", metavar="ARCH", help="with --instructions: one architecture "
                   "(sm90, or an alias such as hopper)")
    q.add_argument("--json", action="store_true")

    q = sub.add_parser("simulate", help="run an instruction on .npy raw-bit tiles")
    q.add_argument("instr")
    q.add_argument("--a", required=True, metavar="A.npy", help="A (..., M, K) raw bits")
    q.add_argument("--b", required=True, metavar="B.npy", help="B (..., K, N) raw bits")
    q.add_argument("--c", required=True, metavar="C.npy", help="C (..., M, N) raw bits")
    q.add_argument("--scale-a", metavar="SA.npy", help="block scales of A (..., M, K/scale_block)")
    q.add_argument("--scale-b", metavar="SB.npy", help="block scales of B (..., K/scale_block, N)")
    q.add_argument("--meta", metavar="E.npy", help="sparse instructions: metadata (..., M, K/2) "
                   "uint8, the position of each kept A element in its group of 4 (tf32: of 2; s4/u4: of "
                   "8, in aligned pairs 2p, 2p+1); "
                   "with it A is compressed (..., M, K/2), without it A is dense (..., M, K)")
    q.add_argument("--out", required=True, metavar="D.npy", type=_args.out_file,
                   help="where to write D (raw bits; .npy appended when missing); its folder "
                        "must exist and be writable")
    q.add_argument("--theory", metavar="ID", help="a theory id (default: the primary theory)")
    q.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto",
                   help="where to run: auto (default) takes an NVIDIA GPU when CuPy can use one")
    q.add_argument("--json", action="store_true")

    q = sub.add_parser("compare", help="one dot product through many instructions")
    q.add_argument("instr", nargs="*", metavar="INSTR",
                   help="names or patterns (default: one representative per (arch, family, "
                        "operand formats, output format, scale format, primary theory))")
    q.add_argument("--a", required=True, help="comma-separated values (use --a=...)")
    q.add_argument("--b", required=True, help="comma-separated values")
    q.add_argument("--c", required=True, help="one value")
    q.add_argument("--list-excluded", action="store_true",
                   help="name every excluded instruction and its reason (default: a summary)")
    q.add_argument("--json", action="store_true")

    q = sub.add_parser("explain", help="white-box trace of one dot product")
    q.add_argument("instr")
    q.add_argument("--a", required=True, help="comma-separated raw bits (0x..) or values")
    q.add_argument("--b", required=True)
    q.add_argument("--c", required=True)
    q.add_argument("--scale-a", help="scale raw bits per K-block (default 1.0)")
    q.add_argument("--scale-b")
    q.add_argument("--theory", metavar="ID")
    q.add_argument("--json", action="store_true")
    return p


#: solver name -> the distribution that provides it
SOLVER_DISTS = {"z3": "z3-solver", "bitwuzla": "bitwuzla", "cvc5": "cvc5"}


def version_text() -> str:
    """The package version, the solvers' versions (from the installed distributions' metadata,
    so nothing is imported: this answers in milliseconds), and where data is read and written."""
    from importlib import metadata
    from . import __version__, paths
    lines = [f"mmaformal {__version__}"]
    for name, dist in SOLVER_DISTS.items():
        try:
            v = metadata.version(dist)
        except metadata.PackageNotFoundError:
            v = "not installed"
        lines.append(f"{name} {v}")
    data = paths.shipped()
    lines.append(f"data: {data}" + ("" if (data / "theories").is_dir() else " (missing: reinstall)"))
    root, how = paths.store_root()
    lines.append(f"store: {root} ({ {'env': '$' + paths.ENV, 'checkout': 'the checkout', 'user': 'per-user default'}[how] })")
    return "\n".join(lines)


class _VersionAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit(0)


def _split_store(argv: list[str]) -> tuple[str | None, list[str]]:
    """--store DIR / --store=DIR taken out of argv wherever it stands (before or after the
    verb), so that every verb, including those defined in other modules, accepts it."""
    from .args import nonempty
    pre = _Parser(prog="mmaformal", add_help=False, allow_abbrev=False)
    pre.add_argument("--store", type=nonempty)
    ns, rest = pre.parse_known_args(argv)
    return ns.store, rest


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=1))


# --------------------------------------------------------------------------------------------
# list


def _cmd_list(args) -> int:
    from . import isa
    if args.arch and not args.instructions:
        raise ValueError("--arch goes with --instructions")
    if args.instructions:
        pat = args.pattern or None
        if pat and "/" not in pat and any(ch in pat for ch in "*?["):
            pat = "*/" + pat                # a pattern on the qualifier: any architecture
        names = [i.name for i in isa.instructions(pat, arch=args.arch)]
        if not names:
            raise ValueError(f"nothing matches {args.pattern!r}"
                             + (f" on {args.arch}" if args.arch else ""))
        if args.json:
            _print_json(names)
        else:
            print("\n".join(names))
        return 0
    from . import theory as T
    ts = T.default()
    if not args.pattern:
        archs = []
        rev = {v: k for k, v in isa.ALIASES.items()}
        for a in isa.ARCHS:
            n = len(isa.instructions(arch=a))
            archs.append({"arch": a, "alias": rev.get(a, ""), "vendor": isa.VENDOR_OF[a],
                          "instructions": n,
                          "theories": sorted(t.id for t in ts if any(x.startswith(a + "/") for x in ts.instructions_of(t.id)))})
        order = {a: i for i, a in enumerate(isa.ARCHS)}
        theories = [_theory_row(ts, t) for t in
                    sorted(ts, key=lambda t: order.get(t.id.split(".")[0], len(order)))]
        if args.json:
            _print_json({"architectures": archs, "theories": theories})
            return 0
        print(f"{'arch':<8} {'alias':<14} {'vendor':<7} instructions  theories")
        for a in archs:
            print(f"{a['arch']:<8} {a['alias']:<14} {a['vendor']:<7} {a['instructions']:>12}  {len(a['theories'])}")
        print()
        print(f"{'theory':<34} {'status':<12} {'primary':<8} {'instrs':>6}  model")
        for t in theories:
            print(f"{t['id']:<34} {t['status']:<12} {str(t['primary']).lower():<8} "
                  f"{t['instructions']:>6}  {t['model']}")
        return 0
    pat = args.pattern
    ins = isa.instructions(pat)
    import fnmatch
    idpat = pat if any(ch in pat for ch in "*?[") else f"*{pat}*"
    tids = {t.id for t in ts if fnmatch.fnmatchcase(t.id, idpat)}
    rows = []
    for i in ins:
        th = ts.theories_for(i)
        tids.update(t.id for t in th)
        prim = th[0] if th and th[0].primary else None
        rows.append({"instruction": i.name, "arch": i.arch, "shape": [i.m, i.n, i.k],
                     "a": i.a, "b": i.b, "c": i.c, "d": i.d, "scale": i.scale,
                     "theory": prim.id if prim else None, "status": prim.status if prim else None,
                     "rivals": [t.id for t in th if not t.primary]})
    if not rows and not tids:
        raise ValueError(f"nothing matches {pat!r} (instructions or theory ids)")
    theories = [_theory_row(ts, ts.get(t)) for t in sorted(tids)]
    if args.json:
        _print_json({"pattern": pat, "instructions": rows, "theories": theories})
        return 0
    for r in rows:
        riv = f"  rivals: {', '.join(r['rivals'])}" if r["rivals"] else ""
        print(f"{r['instruction']:<70} {r['theory']} [{r['status']}]{riv}")
    if theories:
        if rows:
            print()
        for t in theories:
            print(f"{t['id']:<34} {t['status']:<12} primary={str(t['primary']).lower():<5} {t['model']}")
    return 0


def _theory_row(ts, t) -> dict:
    return {"id": t.id, "status": t.status, "primary": t.primary, "model": t.describe(),
            "instructions": len(ts.instructions_of(t.id)), "competes_with": list(t.competes_with),
            "provenance": t.provenance, "file": t.file, "hash": t.hash()}


# --------------------------------------------------------------------------------------------
# simulate


def _cmd_simulate(args) -> int:
    from . import isa
    from . import theory as T
    from .simulate import load_npy, pick_device, save_npy, simulate
    ins = isa.lookup(args.instr)
    th = T.default().resolve(ins, args.theory)
    A, B, C = load_npy(args.a, "--a"), load_npy(args.b, "--b"), load_npy(args.c, "--c")
    SA, SB = load_npy(args.scale_a, "--scale-a"), load_npy(args.scale_b, "--scale-b")
    E = load_npy(args.meta, "--meta")
    device, note = pick_device(args.device, ins, th)
    t0 = time.perf_counter()
    D = simulate(ins, A, B, C, SA, SB, theory=th, meta=E, device=device)
    dt = time.perf_counter() - t0
    written = save_npy(args.out, D)
    info = {"instruction": ins.name, "theory": th.id, "status": th.status, "out": written,
            "shape": list(D.shape), "dtype": D.dtype.name, "dot_products": int(D.size),
            "seconds": round(dt, 6), "device": device, "device_note": note}
    if args.json:
        _print_json(info)
    else:
        print(f"{ins.name}: wrote {written} {tuple(D.shape)} {D.dtype.name} "
              f"({D.size} dot products, theory {th.id} [{th.status}], {dt:.3f} s)")
    return 0


# --------------------------------------------------------------------------------------------
# compare


def _tokens(text: str, what: str) -> list[str]:
    toks = [t.strip() for t in text.split(",")]
    if not toks or any(t == "" for t in toks):
        raise ValueError(f"{what}: expected comma-separated values, got {text!r}")
    return toks


def _compare_value(tok: str, fmt_name: str):
    """(bits, None) or (None, why-not) for one compare token in one operand format."""
    from . import fp
    from .simulate import bits_of, parse_value, value_of
    if tok.lower().startswith(("0x", "-0x")) or ":" in tok:
        raw, _, src = tok.partition(":")
        try:
            x = int(raw, 16)
        except ValueError:
            raise ValueError(f"not raw bits: {tok!r}") from None
        if x < 0:
            raise ValueError(f"raw bits cannot be negative: {tok!r}")
        if src:
            f = fp.fmt(src.strip())
            if x >> (f.k + f.pad):
                raise ValueError(f"{tok!r}: {hex(x)} does not fit format {f.name}")
            v = value_of(x, f.name)
        else:
            f = fp.fmt(fmt_name)
            if x >> (f.k + f.pad):
                return None, f"{tok} does not fit {fmt_name} ({f.k + f.pad} bits)"
            return x, None
    else:
        v = parse_value(tok)
    bits = bits_of(v, fmt_name)
    if bits is None:
        return None, f"{tok} is not exactly representable in {fmt_name}"
    return bits, None


def _representatives(instrs):
    from . import theory as T
    ts = T.default()
    best = {}
    for i in instrs:
        th = ts.theories_for(i)
        key = (i.arch, i.family, i.a, i.b, i.c, i.d, i.scale, i.satfinite, i.bop,
               th[0].id if th else "")
        cur = best.get(key)
        if cur is None or i.k > cur.k:
            best[key] = i
    return list(best.values())


def _compare_one(ins, ts, a_t, b_t, c_t) -> dict:
    """One instruction of compare: its output on the tokens (padded with zeros to K, scales
    1.0), or why it is excluded (K too small, a value its formats cannot hold exactly, a theory
    that cannot be evaluated)."""
    from . import fp
    from .bits import INT
    from .simulate import decimal, value_of
    if len(a_t) > ins.k:
        return {"instruction": ins.name, "output": None, "value": None,
                "excluded": f"K = {ins.k} < {len(a_t)} values"}
    vals = {}
    for role, toks, f in (("a", a_t, ins.a), ("b", b_t, ins.b), ("c", c_t, ins.c)):
        bits = []
        for n, tok in enumerate(toks):
            x, w = _compare_value(tok, f)
            if w:
                return {"instruction": ins.name, "output": None, "value": None,
                        "excluded": f"{role}[{n}]: {w}" if role != "c" else f"c: {w}"}
            bits.append(x)
        vals[role] = bits
    th = ts.resolve(ins)
    K = ins.k
    wa, wb, wc = (fp.fmt(f).storage for f in (ins.a, ins.b, ins.c))
    a = [INT.const(x, wa, False) for x in vals["a"]] + [INT.const(0, wa, False)] * (K - len(a_t))
    b = [INT.const(x, wb, False) for x in vals["b"]] + [INT.const(0, wb, False)] * (K - len(b_t))
    sc = meta = None
    if ins.scale:  # scale factors 1.0
        one = {"ue8m0": 0x7F, "ue4m3": 0x38}[ins.scale]
        sc = [INT.const(one, 8, False)] * (K // ins.scale_block)
    if ins.sparse:  # a is the dense A row (mmaformal.sparse: 2:4, tf32 1:2, s4/u4 pairs)
        from . import sparse as _sp
        try:
            kept, em = _sp.dense_row(ins, [int(x.v) for x in a])
        except ValueError as e:
            return {"instruction": ins.name, "output": None, "value": None, "excluded": str(e)}
        a = [INT.const(x, wa, False) for x in kept]
        meta = [INT.const(x, 8, False) for x in em]
    try:
        d = th.dot(INT, a, b, INT.const(vals["c"][0], wc, False), sc, sc, meta)
    except ValueError as e:  # a theory the current mma cannot evaluate
        return {"instruction": ins.name, "output": None, "value": None,
                "excluded": f"theory {th.id}: {e}"}
    bits = int(d.v)
    return {"instruction": ins.name, "theory": th.id, "status": th.status,
            "output": f"0x{bits:0{fp.fmt(ins.d).storage // 4}X}",
            "value": decimal(value_of(bits, ins.d))}


def _cmd_compare(args) -> int:
    from . import isa
    from . import theory as T
    a_t, b_t, c_t = _tokens(args.a, "--a"), _tokens(args.b, "--b"), _tokens(args.c, "--c")
    if len(c_t) != 1:
        raise ValueError(f"--c: expected one value, got {len(c_t)}")
    if len(a_t) != len(b_t):
        raise ValueError(f"--a has {len(a_t)} values, --b has {len(b_t)}")
    # check the syntax of every token once (a malformed value is a usage error, not an exclusion)
    for tok in a_t + b_t + c_t:
        _compare_value(tok, "f64")
    if args.instr:
        instrs = []
        for name in args.instr:
            if any(ch in name for ch in "*?["):
                hit = isa.instructions(name)
                if not hit:
                    raise ValueError(f"pattern {name!r} matches no instruction")
                instrs.extend(_representatives(hit))
            else:
                instrs.append(isa.lookup(name))
        how = "as named" if not any(any(ch in n for ch in "*?[") for n in args.instr) else \
            "patterns reduced to one representative per (arch, family, a, b, c, d, scale, primary theory), largest K"
    else:
        instrs = _representatives(isa.catalog().values())
        how = "one representative per (arch, family, a, b, c, d, scale, primary theory), largest K"
    ts = T.default()
    results = [_compare_one(ins, ts, a_t, b_t, c_t) for ins in instrs]
    if args.json:
        _print_json(results)
        return 0
    print(f"a = ({', '.join(a_t)})  b = ({', '.join(b_t)})  c = {c_t[0]}  (padded with zeros to K; "
          f"scales 1.0; instructions: {how})")
    done = [r for r in results if r["output"] is not None]
    excl = [r for r in results if r["output"] is None]
    w = max((len(r["instruction"]) for r in done), default=20)
    for r in done:
        print(f"{r['instruction']:<{w}}  {r['output']:<18}  {r['value']:<24}  {r['theory']}")
    if excl and args.list_excluded:
        print(f"excluded ({len(excl)}):")
        for r in excl:
            print(f"  {r['instruction']}: {r['excluded']}")
    elif excl:
        print("\n".join(_excluded_summary(excl, len(results), len(a_t))))
    return 0


def _excluded_summary(excl: list[dict], total: int, n: int) -> list[str]:
    """Two lines: how many instructions compare left out, and why (counted by reason: the
    formats that cannot hold the values exactly, too small a K, a theory it cannot evaluate)."""
    import collections
    import re
    fmts: collections.Counter = collections.Counter()
    small_k = theory = other = 0
    for r in excl:
        why = r["excluded"]
        m = re.search(r"(?:not exactly representable in|does not fit) (\S+)", why)
        if m:
            fmts[m.group(1)] += 1
        elif why.startswith("K = "):
            small_k += 1
        elif why.startswith("theory "):
            theory += 1
        else:
            other += 1
    parts = []
    if fmts:
        parts.append(f"{sum(fmts.values())} whose formats cannot hold the values exactly ("
                     + ", ".join(f"{k} {v}" for k, v in fmts.most_common()) + ")")
    if small_k:
        parts.append(f"{small_k} with K < {n}")
    if theory:
        parts.append(f"{theory} whose theory cannot be evaluated")
    if other:
        parts.append(f"{other} for other reasons")
    return [f"excluded {len(excl)} of {total} instructions (--list-excluded names each one, "
            f"--json gives every reason):", "  " + "; ".join(parts)]


# --------------------------------------------------------------------------------------------
# explain


def _explain_bits(text: str, fmt_name: str, what: str) -> list[int]:
    from .simulate import bits_of, parse_value
    out = []
    for tok in _tokens(text, what):
        if tok.lower().startswith("0x"):
            try:
                out.append(int(tok, 16))
            except ValueError:
                raise ValueError(f"{what}: not raw bits: {tok!r}") from None
            continue
        v = parse_value(tok)
        x = bits_of(v, fmt_name)
        if x is None:
            raise ValueError(f"{what}: {tok} is not exactly representable in {fmt_name}")
        out.append(x)
    return out


def _cmd_explain(args) -> int:
    from . import isa
    from .explain import explain, render
    ins = isa.lookup(args.instr)
    a = _explain_bits(args.a, ins.a, "--a")
    b = _explain_bits(args.b, ins.b, "--b")
    c = _explain_bits(args.c, ins.c, "--c")
    if len(c) != 1:
        raise ValueError(f"--c: expected one value, got {len(c)}")
    sa = sb = None
    if args.scale_a or args.scale_b:
        if not ins.scale:
            raise ValueError(f"{ins.name} is not block-scaled: no --scale-a/--scale-b")
        sa = _explain_bits(args.scale_a, ins.scale, "--scale-a") if args.scale_a else None
        sb = _explain_bits(args.scale_b, ins.scale, "--scale-b") if args.scale_b else None
    rep = explain(ins, a, b, c[0], sa, sb, theory=args.theory)
    if args.json:
        _print_json(rep)
    else:
        print(render(rep))
    return 0


_VERBS = {"list": _cmd_list, "simulate": _cmd_simulate, "compare": _cmd_compare,
          "explain": _cmd_explain}

#: verbs defined in their own modules: name -> module path (add_parser + run)
_MODULE_VERBS = {"distinguish": "mmaformal.query.distinguish", "prove": "mmaformal.query.prove",
                 "emulate": "mmaformal.emulate", "accuracy": "mmaformal.accuracy",
                 "hw": "mmaformal.hw.cli", "probes": "mmaformal.query.settle",
                 "infer": "mmaformal.query.infer", "store": "mmaformal.storecli",
                 "calibrate": "mmaformal.calibrate"}


def main(argv=None) -> int:
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        if argv[:1] == ["--version"]:       # answered before the verbs' modules are imported
            print(version_text())
            return 0
        store, argv = _split_store(argv)
        if store is not None:
            from . import paths
            paths.use_store(store)
        args = _parser(argv).parse_args(argv)
        if args.verb in _MODULE_VERBS:
            import importlib
            return importlib.import_module(_MODULE_VERBS[args.verb]).run(args)
        return _VERBS[args.verb](args)
    except BrokenPipeError:  # e.g. `mmaformal list | head`
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UsageError, ValueError, OSError, OverflowError) as e:
        msg = " ".join(str(e).split()) or type(e).__name__
        if not msg.startswith("mmaformal"):
            msg = "mmaformal: error: " + msg
        print(msg, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mmaformal: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
