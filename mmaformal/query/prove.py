"""Layer 5, query/prove: prove claims about instruction models, or refute them with a witness
that is replayed concretely.

    mmaformal prove equiv A B [--instr NAME] [--where C ...] [--method M]
    mmaformal prove symmetry [TARGET ...] [--set nvidia-tfdpa|cdna3-tr] [--method M] [-j N]
    mmaformal prove monotonic A [--scan SEC] [--hint N]
    mmaformal prove bound A [--rounds N] [--hint N]
    mmaformal prove unobservable A PARAM=VALUE [--method M]
    mmaformal prove exact A --where CONSTRAINT [--rounded]   (mmaformal.query.claims.exact)
    mmaformal prove ieee [--ops ..] [--formats ..] [--modes ..] [--split]   (mmaformal.query.ieee:
        fp.add/mul/fma against the SMT-LIB floating-point theory; its options are there)
    mmaformal prove symmetry|monotonic|bound --all [PATTERN ...]
    mmaformal prove unobservable --all PARAM=VALUE [PATTERN ...]
        --all: every catalog instruction (or those matching), grouped by one query
        (model.arith_key), one campaign job per group (query.campaign: --jobs N, --ray
        auto|local|ADDR, --progress FILE, --limit SEC, --retry-unknown, --redo); with --save one
        record per group listing its instructions; groups with a stored verdict are skipped
    common: --solver S|portfolio --timeout SEC --save --emit-smt2 FILE --json

Claims (the exact sentence is printed and stored with every result):

- equiv: A and B give bitwise-identical outputs for every input (satisfying --where). Two
  FDPA chains that differ only in the zero-sign / overflow rules are proved piece by piece
  first (claims.equivalence: per block, under a hypothesis on its accumulator that the
  previous block establishes); others, and refutations, monolithically.
- symmetry: Phi(-A, B, -C) ~ -Phi(A, B, C) for every input, where -x flips the sign bit (in
  formats without -0, fnuz, the zero 0x00 and the NaN 0x80 are their own negations) and x ~ y
  means: equal bits, or both NaN (NaN payloads and signs are not compared), or both zero (the
  sign of an exact-zero output is not compared: IEEE sum-of-zeros rules make it depend on the
  signs of zero addends, which negation does not map consistently). T-FDPA-family theories are
  proved piece by piece (claims.symmetry); others, and refutations, monolithically.
- monotonic (after Mikaitis 2024, monotonicity of multi-term adders): for all finite inputs
  (a, b, c) and (a', b', c') that differ in exactly one addend (one product a_i*b_i, where
  a_i and b_i may both change, or c) whose exact value increases, Phi(a', b', c') is
  not smaller than Phi(a, b, c), outputs compared as real numbers (+0 = -0, -Inf < finite <
  +Inf; a NaN output on either side is outside the claim). T-FDPA chains are proved piece
  by piece (claims.monotonic: per fused block, the alignment exponent's change is paid for
  by the changed addend's gain; the output conversion is non-decreasing in the sum's
  value), TR-FDPA and GTR-FDPA chains likewise (each tail cut as for the bound), integer
  chains and FMA chains likewise; others, and refutations, monolithically.
- bound (T-FDPA and TR-FDPA chains are proved piece by piece: claims.bound): [Xie2025]
  Table 9: for finite inputs on which no block output overflows (every block
  output finite and below the largest finite magnitude), |Phi(a, b, c) - (c + sum a_k b_k)|
  <= sum over the chained blocks j of n_j 2^(e_max,j - F) + r ulp(d_j), with n_j the number
  of addends of block j (L + 1), e_max,j its alignment exponent, d_j its output, r = 1 for
  RZ outputs and 1/2 for RNE. Refuted: the worst witness found (largest excess) is reported.
- unobservable P=V: the theory with parameter P set to V is equivalent (claim equiv).

Every proof has a broken twin that the same query shows SAT (equiv/unobservable: B with F-1 or
another rounding; decomposed: the block lemmas without their hypotheses, else against B with
F-1; symmetry: the RD-twin, aligned terms rounded toward -inf as TR-FDPA does;
bound: the theory with F-2 against the same bound). Every refutation's witness is replayed on
the int and numpy back-ends (and the compiled path) before it is reported; equiv and
unobservable refutations are minimized first (mmaformal.query.minimize, --raw skips it), and
every witness is also printed as one line in the style of [Xie2025]'s Equation 10. A solver time-out
is "unknown" with the time spent, never "proved".

Stores (--save): proofs/<claim>/<name>.json (+ .smt2 for monolithic queries), proved lemmas in
proofs/cache/<sha256>.smt2|json, refutations in counterexamples/<claim>/.

Exit codes (`run`): 0 proved, 1 refuted, 2 bad input, 3 internal error, 4 unknown (--all: 4
when a group is unknown, else 1 when one is refuted; 130 interrupted, resumable).

This module is the verb only: its arguments, the grouping of instructions by one query, the
campaign of `--all`, and the rendering of results. Each built-in claim is one module of
mmaformal.query.claims (CLAIM_MODULES: its statement `prove_<claim>`, its broken twin, its
lemmas, and the hooks `from_args` (symmetry: through the grouping here) and, for --all,
`job`/`applies`); the user claims of the Claim API are USER_CLAIMS (claims.exact, which
stores its own records). Their records live in .proofs (proofs/) and .cex (counterexamples/),
the equivalence query in .search.

May import: the query modules below the verbs (frame, model, claims, cache, campaign, ieee,
minimize, proofs, store), the layers below.
"""
from __future__ import annotations

import argparse
import collections
import fnmatch
import json
import sys
import time
from pathlib import Path
from typing import Sequence

from .. import isa
from .. import theory as _theory
from . import campaign as _campaign
from . import ieee as _ieee
from . import minimize as _min
from .cache import CACHE
from .claims import approx_int, neg_int, value_lt
from .claims import bound, equivalence, exact, monotonic, symmetry, unobservable
from .claims.symmetry import prove_symmetry
from .frame import (BadInput, EXIT_INTERNAL, EXIT_OK, EXIT_REFUTED, EXIT_UNKNOWN, InternalError,
                    add_common, run_verb)
from .model import (REDUCTION_SPARSE, Model, Witness, arith_key, mutate, parse_backends,
                    parse_param_value, replay, resolve)
from .proofs import save_result
from .store import lemma_dir

__all__ = ["CLAIM_MODULES", "USER_CLAIMS", "ALL_CLAIMS", "SETS", "symmetry_groups", "query_groups",
           "claim_groups", "prove_symmetry_many", "prove_job", "prove_all", "stored_verdicts",
           "summarize", "save_group", "runs_of", "public", "render", "add_parser", "run"]

#: The built-in claims: name -> the module of mmaformal.query.claims that states and proves
#: it (prove_<claim>, its broken twin and lemmas; `from_args` runs it from the CLI; `job` and
#: `applies` for prove CLAIM --all). A new claim is one module and one line here (and its
#: arguments in add_parser).
CLAIM_MODULES = {
    "equiv": equivalence,
    "symmetry": symmetry,
    "monotonic": monotonic,
    "bound": bound,
    "unobservable": unobservable,
}

#: The user claims written with the Claim API (claims.USER_CLAIMS): name -> its module of
#: mmaformal.query.claims (`add_parser(sub, common)` adds `prove NAME`, `run(args)` runs it;
#: its --save stores what its Claim's `save` stores: claims.exact, monolithic and decomposed)
USER_CLAIMS = {exact.NAME: exact}


# ============================================================================================
# Groups of instructions with one arithmetic
# ============================================================================================

SETS = {
    "nvidia-tfdpa": "every dense NVIDIA mma/wgmma/tcgen05 instruction with K <= 16 whose "
                    "primary theory is T-FDPA-based (t_fdpa, st_fdpa, gst_fdpa)",
    "cdna3-tr": "every dense CDNA3 (gfx942) instruction whose primary theory is TR-FDPA or "
                "GTR-FDPA",
}


def symmetry_groups(targets: Sequence[str] = (), set_name: str | None = None) -> list[list[str]]:
    """Instructions grouped by identical arithmetic (theory content without its id, operand
    formats, K): one proof per group. Targets: instruction names or fnmatch patterns, theory
    ids; set_name: one of SETS."""
    ts = _theory.default()
    names: list[str] = []
    if set_name:
        if set_name not in SETS:
            raise BadInput(f"unknown set {set_name!r}; known: {', '.join(SETS)}")
        for n, ins in isa.catalog().items():
            t = ts.theories_for(ins)
            if not t:
                continue
            t = t[0]
            if ins.sparse or ins.family == "wmma":    # the sets predate these (issue 14)
                continue
            if set_name == "nvidia-tfdpa" and ins.vendor == "nvidia" and ins.k <= 16 and \
                    t.model == "fdpa" and t.op in ("t_fdpa", "st_fdpa", "gst_fdpa"):
                names.append(n)
            if set_name == "cdna3-tr" and ins.arch == "gfx942" and t.op in ("tr_fdpa", "gtr_fdpa"):
                names.append(n)
    for tg in targets:
        if "/" in tg and any(ch in tg for ch in "*?["):
            hit = [n for n in isa.catalog() if fnmatch.fnmatch(n, tg)]
            if not hit:
                raise BadInput(f"pattern {tg!r} matches no instruction")
            names.extend(hit)
        elif "/" in tg:
            try:
                names.append(isa.lookup(tg).name)
            except ValueError as e:
                raise BadInput(str(e)) from None
        else:
            try:
                names.extend(ts.instructions_of(ts.get(tg).id))
            except ValueError as e:
                raise BadInput(str(e)) from None
    return query_groups(names, ts)


def query_groups(names: Sequence[str], ts=None) -> list[list[str]]:
    """`names` grouped by one query (arith_key), each group in (sparse last, name) order: its
    first instruction is the one the query is built on. A sparse instruction joins a dense
    group by the reduction of model.REDUCTION_SPARSE; sparse instructions with no dense
    instruction of their arithmetic are grouped by their own sparse query (the theory with its
    `sparse` key, K, the sparsity pattern)."""
    ts = ts or _theory.default()
    groups: dict[str, list[str]] = collections.OrderedDict()
    for n in dict.fromkeys(names):
        ins = isa.lookup(n)
        groups.setdefault(arith_key(ts.theories_for(ins)[0], ins), []).append(n)
    out = []
    for g in groups.values():
        g = sorted(g, key=lambda n: (bool(isa.lookup(n).sparse), n))
        if not isa.lookup(g[0]).sparse:
            out.append(g)
            continue
        own: dict[str, list[str]] = collections.OrderedDict()
        for n in g:
            ins = isa.lookup(n)
            t = ts.theories_for(ins)[0]
            own.setdefault(json.dumps([t.hash(), ins.k, ins.sparsity, arith_key(t, ins)]),
                           []).append(n)
        out.extend(own.values())
    return out


def _sparse_note(names: Sequence[str]) -> str:
    """The reduction sentence a claim carries when its group holds sparse members that are
    decided through a dense instruction's query."""
    if isa.lookup(names[0]).sparse or not any(isa.lookup(n).sparse for n in names):
        return ""
    return " [" + REDUCTION_SPARSE + "]"


def prove_symmetry_many(groups: list[list[str]], jobs: int = 0, **opts) -> list[dict]:
    """One proof per group, independent groups through the campaign runner (a local pool of
    `jobs` processes, default all available CPUs); proved lemmas are shared between the
    workers through a lemma folder (the store's with save, else a temporary one)."""
    import tempfile
    tmp = None
    if opts.get("save"):
        cache_dir = str(lemma_dir())
    else:
        tmp = tempfile.TemporaryDirectory(prefix="mmaformal-lemmas-")
        cache_dir = tmp.name
    js = [_campaign.Job(f"symmetry/{g[0]}", "mmaformal.query.prove:prove_job",
                        dict(claim="symmetry", names=g, solver=opts.get("solver", "bitwuzla"),
                             timeout=opts.get("timeout"), method=opts.get("method", "auto"),
                             twin=opts.get("twin", True), cache_dir=cache_dir,
                             backends=list(opts.get("backends", ("int", "numpy", "compiled")))))
          for g in groups]
    try:
        return _campaign.run(js, workers=jobs or None,
                             on_result=save_group("symmetry") if opts.get("save") else None)
    finally:
        if tmp is not None:
            tmp.cleanup()

# ============================================================================================
# Output
# ============================================================================================

def public(res: dict) -> dict:
    """The --json object: exactly status, claim, witness, solver, seconds."""
    return {"status": res["status"], "claim": res["claim"], "witness": res["witness"],
            "solver": res["solver"], "seconds": res["seconds"]}


def render(res: dict) -> str:
    L = [f"claim: {res['claim']}"]
    st = res["status"]
    if res.get("method"):
        L.append(f"method: {res['method']}" + (f" ({len(res['parts'])} lemmas, "
                 f"{sum(1 for p in res['parts'] if p['cached'])} from the cache)" if res.get("parts") else ""))
    for p in res.get("parts", []):
        if not p["cached"]:
            L.append(f"  {p['lemma']:<22} {p['status']:<6} {p['seconds']:7.3f} s  {p['role']}")
    if res.get("witness"):
        ins = isa.lookup(res["models"][0]["instruction"])
        w = Witness.from_json(res["witness"], ins.a, ins.b, ins.c, ins.scale or "")
        L.append("witness: " + json.dumps(res["witness"]))
        L.append("  in one line: " + _min.equation(w))
        if res.get("minimized"):
            L.append("  " + _min.describe(res["minimized"]))
        for k, v in res.get("detail", {}).items():
            L.append(f"  {k}: {v if not isinstance(v, dict) else json.dumps(v)}")
    tw = res.get("twin")
    if tw:
        L.append(f"broken twin: {tw['claim']}: {tw.get('verdict', tw.get('status'))} "
                 f"({tw.get('seconds', 0):.2f} s)")
    if res.get("reason"):
        L.append(f"note: {res['reason']}")
    L.append(f"status: {st}  ({res['seconds']:.2f} s, {res['solver']})")
    for p in res.get("saved", []):
        L.append(f"saved: {p}")
    return "\n".join(L)

# ============================================================================================
# prove CLAIM --all: one job per group of instructions with one query (query.campaign)
# ============================================================================================

#: the claims `prove CLAIM --all` takes: those whose module has a campaign `job`
ALL_CLAIMS = tuple(n for n, mod in CLAIM_MODULES.items() if hasattr(mod, "job"))


def prove_job(claim: str, names: list[str], solver: str = "bitwuzla",
              timeout: float | None = 60, method: str = "auto", twin: bool = True,
              change: Sequence | None = None, rounds: int = 4, hint: int = 2,
              scan: float = 10, backends: Sequence[str] = ("int", "numpy", "compiled"),
              cache_dir: str | None = None) -> dict:
    """A campaign job (run in a worker): `claim` on the first instruction of a group whose
    instructions share one query (`claim_groups`); the result names the group. No record is
    written here: the driver stores it (`save_group`) from the private keys kept. cache_dir:
    proved lemmas of decomposed proofs are read from and added to that folder (shared by the
    workers of one machine; content-addressed, so a lemma is the same whoever wrote it)."""
    m = resolve(names[0])
    backends = tuple(backends)
    if cache_dir:
        CACHE.root = Path(cache_dir)
    if claim not in ALL_CLAIMS:
        raise BadInput(f"prove --all takes {', '.join(ALL_CLAIMS)}, not {claim!r}")
    res = CLAIM_MODULES[claim].job(m, names, dict(
        solver=solver, timeout=timeout, method=method, twin=twin, change=change, rounds=rounds,
        hint=hint, scan=scan, backends=backends, persist=bool(cache_dir)))
    res["group"] = list(names)
    res["claim"] = res["claim"] + _sparse_note(names)
    return res


def _applies(claim: str, names: list[str], change) -> str:
    """Why `claim` does not apply to a group ("" when it does): the claim module's
    `applies(m, change)`, if it has one."""
    m = resolve(names[0])
    applies = getattr(CLAIM_MODULES[claim], "applies", None)
    return applies(m, change) if applies is not None else ""


def claim_groups(claim: str, patterns: Sequence[str] = (), change=None
                 ) -> tuple[list[list[str]], dict[str, int]]:
    """The catalog instructions matching `patterns` (fnmatch; all when empty), grouped by one
    query (`arith_key`: theory content without its id, operand formats, K), restricted to the
    groups the claim applies to. Returns (groups, {reason: instructions left out})."""
    cat = isa.catalog()
    names: list[str] = []
    for pat in patterns or ["*"]:
        hit = [n for n in cat if fnmatch.fnmatch(n, pat)]
        if not hit:
            raise BadInput(f"pattern {pat!r} matches no instruction")
        names.extend(hit)
    out, left = [], {}
    for g in query_groups(names):
        why = _applies(claim, g, change)
        if why:
            left[why] = left.get(why, 0) + len(g)
        else:
            out.append(g)
    return out, left


def stored_verdicts(claim: str, change=None) -> dict[str, str]:
    """instruction -> a stored record that decides `claim` for it: a proof in proofs/<claim>/
    whose broken twin was refuted, whose theories are unchanged and name the instruction's
    primary theory, or a counterexample in counterexamples/<claim>/ about its primary theory
    (whose witness the store tests replay on today's theories), from the store's and the
    shipped records. A record about a rival theory decides nothing for the instruction."""
    from .. import paths
    out: dict[str, str] = {}
    tag = None if change is None else f"parameter {change[0]} = {change[1]!r} "
    ts = _theory.default()

    def primary_of(n: str) -> str | None:
        try:
            return ts.resolve(n).id
        except (KeyError, ValueError):
            return None

    def current(rec) -> bool:          # a proof about a theory that has changed is stale
        try:
            return all(ts.get(t).hash() == h for t, h in (rec.get("theories") or {}).items())
        except ValueError:
            return False
    for d in paths.record_dirs("proofs"):
        for p in sorted((d / claim).glob("*.json")):
            rec = json.loads(p.read_text())
            if rec.get("verdict") != "proved" or (rec.get("twin") or {}).get("status") != "sat":
                continue
            if not current(rec):
                continue
            if tag and not rec.get("claim", "").startswith(tag):
                continue
            for n in rec.get("instructions") or [m["instruction"] for m in rec.get("models", [])]:
                if primary_of(n) in (rec.get("theories") or {}):
                    out.setdefault(n, str(p))
    for d in paths.record_dirs("counterexamples"):
        for p in sorted((d / claim).glob("*.json")):
            rec = json.loads(p.read_text())
            if tag and not rec.get("claim", "").startswith(tag):
                continue
            first = rec["models"][0]        # the group's witness runs on its first instruction
            if first.get("theory") and primary_of(first["instruction"]) != first["theory"]:
                continue                    # about a rival theory
            for n in (rec.get("tool") or {}).get("group") or [first["instruction"]]:
                out.setdefault(n, str(p))
    return out


def runs_of(claim: str, m: Model, r: dict, backends=("int", "numpy", "compiled")) -> list:
    """The witness runs [(model, witness, output)] of a refutation rebuilt from its JSON result
    (a progress-store line) and replayed again here: so a stored refutation survives the loss
    of the process that found it (`save_group` uses it when the private runs are gone)."""
    ins = m.ins
    wj = lambda d: Witness.from_json(d, ins.a, ins.b, ins.c, ins.scale or "")
    det = r.get("detail") or {}
    ws = [wj(r["witness"])]
    if claim == "symmetry":
        ws.append(wj(det["negated_input"]))
    elif claim == "monotonic":
        ws.append(wj(det["witness2"]))
    runs = [(m, w, replay([m], w, backends)[m.label]) for w in ws]
    if claim == "monotonic" and not value_lt(runs[1][2], runs[0][2], ins.d):
        raise InternalError(f"{m.label}: the stored monotonicity witness does not replay")
    if claim == "symmetry" and approx_int(runs[1][2], neg_int(runs[0][2], ins.d), ins.d):
        raise InternalError(f"{m.label}: the stored symmetry witness does not replay")
    return runs


def save_group(claim: str, change=None):
    """on_result of prove --all --save: the group's record through proofs.save_result (in the
    driver: workers write nothing)."""
    def save(job, r: dict) -> dict:
        if r.get("status") not in ("proved", "refuted"):
            return {}
        m = resolve(r["group"][0])
        if r["status"] == "refuted" and "_runs" not in r and claim != "unobservable":
            r["_runs"] = runs_of(claim, m, r)
        models = [m]
        if claim == "unobservable":
            p, v = change
            models = [m, mutate(m, {p: v}, label=f"{m.label}[{p}={v}]")]
        return {"saved": save_result(claim, r, models, r.get("query_text") or "")}
    return save


def summarize(claim: str, groups: list[list[str]], results: list[dict], stored: dict,
              left: dict) -> dict:
    """Coverage of one claim: instructions and groups by verdict (groups decided by a stored
    record counted as that record says). A proof whose broken twin was not refuted counts as
    unknown."""
    by = {r["group"][0]: r for r in results if r.get("group")}
    by.update({r["job"].split("/", 1)[1]: r for r in results if not r.get("group")})
    row = {"claim": claim, "instructions": sum(map(len, groups)), "groups": len(groups),
           "proved": 0, "refuted": 0, "unknown": 0, "error": 0, "stored_before": 0,
           "groups_proved": 0, "groups_refuted": 0, "groups_unknown": 0, "groups_error": 0,
           "not_applicable": left, "unknowns": []}
    for g in groups:
        r = by.get(g[0])
        if r is None:
            st = "refuted" if "counterexamples" in stored.get(g[0], "") else "proved"
            row["stored_before"] += len(g)
        else:
            st = r["status"] if r["status"] in ("proved", "refuted", "unknown") else "error"
            if st == "proved" and (r.get("twin") or {}).get("status") != "sat":
                st = "unknown"
            if st in ("unknown", "error"):
                why = r.get("reason", "")
                if r["status"] == "proved":
                    tw = r.get("twin") or {}
                    why = (f"proved, but its broken twin was not refuted ({tw.get('status', 'none')}"
                           f"{', %.1f s' % tw['seconds'] if tw.get('seconds') else ''})")
                row["unknowns"].append({"group": g, "status": r["status"],
                                        "solver": r.get("solver", ""),
                                        "seconds": r.get("seconds"), "reason": why})
        row[st] += len(g)
        row["groups_" + st] += 1
    return row


def prove_all(args) -> int:
    """`mmaformal prove CLAIM --all [PATTERN ...]`: one campaign job per group. Exit 0: every
    group proved; 1: some refuted, none unknown; 4: some unknown or failed."""
    claim = args.claim
    if claim not in ALL_CLAIMS:
        raise BadInput(f"prove {claim} takes no --all (only {', '.join(ALL_CLAIMS)})")
    change = None
    if claim == "unobservable":
        if not args.change or "=" not in args.change:
            raise BadInput("prove unobservable --all PARAM=VALUE [PATTERN ...]")
        k, v = args.change.split("=", 1)
        change = (k.strip(), parse_param_value(v))
    groups, left = claim_groups(claim, list(args.patterns or []), change)
    if not groups:
        raise BadInput(f"prove {claim} applies to none of the {sum(left.values())} "
                       f"instructions matched ({'; '.join(left)})")
    stored = {} if args.redo else stored_verdicts(claim, change)
    # largest groups first: an interrupted campaign has decided the most instructions
    todo = sorted((g for g in groups if not all(n in stored for n in g)),
                  key=(len if getattr(args, "smallest_first", False) else lambda g: -len(g)))
    limit = _campaign.default_limit(args)
    backends = list(parse_backends(args.replay))
    import tempfile
    tmp = None if args.save else tempfile.TemporaryDirectory(prefix="mmaformal-lemmas-")
    cache_dir = str(lemma_dir()) if args.save else tmp.name
    jobs = [_campaign.Job(f"{claim}/{g[0]}", "mmaformal.query.prove:prove_job",
                          dict(claim=claim, names=g, solver=args.solver, timeout=args.timeout,
                               method=getattr(args, "method", "auto"), twin=not args.no_twin,
                               change=list(change) if change else None,
                               rounds=getattr(args, "rounds", 4), hint=getattr(args, "hint", 2),
                               scan=getattr(args, "scan", 10), backends=backends,
                               cache_dir=cache_dir), limit)
            for g in todo]
    opts = _campaign.options_of(args)
    if not opts["progress"]:
        opts["progress"] = _campaign.store_path(f"prove-{claim}", jobs)
    if args.save:
        from .. import paths
        for name in ("proofs", "counterexamples"):
            try:
                paths.store(name)
            except ValueError as e:
                raise BadInput(str(e).splitlines()[0]) from None
    banner = None if args.json else (
        f"prove {claim} --all: {sum(map(len, groups))} instructions in {len(groups)} groups; "
        f"{len(groups) - len(todo)} groups have a stored verdict; {len(jobs)} jobs on "
        f"{'Ray ' + opts['ray'] if opts['ray'] else 'a local pool'}; progress store "
        f"{opts['progress']}")
    t0 = time.perf_counter()
    try:
        results = _campaign.run(jobs, as_json=args.json, banner=banner,
                                on_result=save_group(claim, change) if args.save else None,
                                **opts)
    except _campaign.Interrupted as e:
        print(f"mmaformal prove: {e}", file=sys.stderr, flush=True)
        return 130
    finally:
        if tmp is not None:
            tmp.cleanup()
    row = summarize(claim, groups, results, stored, left)
    row["wall_seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        print(json.dumps({"summary": row}, sort_keys=True))
    else:
        print(f"| claim | instructions | groups | proved | refuted | unknown | error |\n"
              f"|---|---|---|---|---|---|---|\n"
              f"| {claim} | {row['instructions']} | {row['groups']} | {row['proved']} | "
              f"{row['refuted']} | {row['unknown']} | {row['error']} |")
        for u in row["unknowns"]:
            print(f"{u['status']}: {u['group'][0]} (+{len(u['group']) - 1}) {u['solver']} "
                  f"{u['seconds']} s: {u['reason']}")
        if left:
            print("not applicable: " + "; ".join(f"{k}: {v}" for k, v in left.items()))
        print(f"wall {row['wall_seconds']} s")
    if row["unknown"] or row["error"]:
        return EXIT_UNKNOWN
    return EXIT_REFUTED if row["refuted"] else EXIT_OK


def add_all_options(c: argparse.ArgumentParser, jobs_flag: bool = True,
                    twin_flag: bool = True) -> None:
    """The options of `prove CLAIM --all` (and the campaign runner's)."""
    c.add_argument("--all", action="store_true",
                   help="every catalog instruction (or those matching the PATTERNs): one job per "
                        "group of instructions with one query, through the campaign runner")
    c.add_argument("--redo", action="store_true",
                   help="with --all: also the groups that have a stored verdict")
    c.add_argument("--smallest-first", action="store_true",
                   help="with --all: the smallest groups first (default: the largest first, so "
                        "an interrupted campaign has decided the most instructions)")
    if twin_flag:
        c.add_argument("--no-twin", action="store_true", help="skip the broken twins (faster; "
                       "a proof without its twin is not stored)")
    _campaign.add_options(c, jobs_flag)

# ============================================================================================
# CLI (wired by the lead into mmaformal.cli)
# ============================================================================================

def add_parser(subparsers) -> argparse.ArgumentParser:
    q = subparsers.add_parser("prove", help="prove or refute a claim",
                              description=__doc__.split("\n\n")[0])
    sub = q.add_subparsers(dest="claim", metavar="CLAIM", parser_class=type(q))
    sub.required = True

    def common(c, witness=False):
        add_common(c, save="store proofs in proofs/ and refutations in counterexamples/",
                   replay=("int,numpy,compiled", "concrete back-ends that replay witnesses"),
                   witness=witness)
        c.set_defaults(func=run)

    c = sub.add_parser("equiv", help="A and B give identical bits for every input")
    c.add_argument("A")
    c.add_argument("B")
    c.add_argument("--instr", metavar="NAME")
    c.add_argument("--where", action="append", default=[], metavar="C")
    c.add_argument("--method", choices=("auto", "decomposed", "monolithic"), default="auto",
                   help="decomposed: per-block lemmas, for chains that differ only in the "
                        "zero-sign/overflow rules (auto: those first, else the monolithic query)")
    common(c, witness=True)
    c = sub.add_parser("symmetry", help="Phi(-A, B, -C) ~ -Phi(A, B, C)")
    c.add_argument("targets", nargs="*", metavar="TARGET",
                   help="instructions, fnmatch patterns or theory ids (grouped by identical "
                        "arithmetic: one proof per group)")
    c.add_argument("--set", choices=sorted(SETS), help="; ".join(f"{k}: {v}" for k, v in SETS.items()))
    c.add_argument("--method", choices=("auto", "decomposed", "monolithic"), default="auto")
    add_all_options(c)
    common(c)
    c = sub.add_parser("monotonic", help="a larger addend never gives a smaller output")
    c.add_argument("A", nargs="?", help="a model spec (with --all: an instruction pattern)")
    c.add_argument("patterns", nargs="*", metavar="PATTERN", help=argparse.SUPPRESS)
    c.add_argument("--scan", type=float, default=10, metavar="SEC",
                   help="first a concrete witness search on numpy lanes for SEC seconds (0: none)")
    c.add_argument("--hint", type=int, default=2, metavar="N",
                   help="then a witness query with all products but the first N zero, in half "
                        "the time (0: the full query only)")
    add_all_options(c)
    common(c)
    c = sub.add_parser("bound", help="the error bound of [Xie2025] Table 9")
    c.add_argument("A", nargs="?", help="a model spec (with --all: an instruction pattern)")
    c.add_argument("patterns", nargs="*", metavar="PATTERN", help=argparse.SUPPRESS)
    c.add_argument("--rounds", type=int, default=4, help="witness-improvement rounds")
    c.add_argument("--hint", type=int, default=3, metavar="N",
                   help="the witness search first looks among inputs with all products but the "
                        "first N zero and c = +0, in half the time (0: the full query only)")
    c.add_argument("--method", choices=("auto", "decomposed", "monolithic"), default="auto")
    add_all_options(c)
    common(c)
    c = sub.add_parser("unobservable", help="changing one parameter changes no output bit")
    c.add_argument("A", help="a model spec (with --all: PARAM=VALUE)")
    c.add_argument("change", metavar="PARAM=VALUE", nargs="?",
                   help="(with --all: an instruction pattern)")
    c.add_argument("patterns", nargs="*", metavar="PATTERN", help=argparse.SUPPRESS)
    c.add_argument("--method", choices=("auto", "decomposed", "monolithic"), default="auto")
    add_all_options(c)
    common(c, witness=True)
    for _mod in USER_CLAIMS.values():     # claims written with the Claim API (claims/)
        _mod.add_parser(sub, common)
    _ieee.add_parser(sub)                  # fp.add/mul/fma against SMT-LIB FP (query/ieee)
    return q


def _exit(status: str) -> int:
    return {"proved": EXIT_OK, "refuted": EXIT_REFUTED, "unknown": EXIT_UNKNOWN}.get(status, EXIT_INTERNAL)


def run(args) -> int:
    if args.claim == "ieee":
        return _ieee.run(args)
    if args.claim in USER_CLAIMS:
        return USER_CLAIMS[args.claim].run(args)
    if getattr(args, "all", False):
        if args.claim == "symmetry":
            args.patterns = list(args.targets)
        elif args.claim == "unobservable":
            args.change, args.patterns = args.A, ([args.change] if args.change else []) + args.patterns
        else:
            args.patterns = ([args.A] if args.A else []) + args.patterns
        return run_verb("prove", lambda: prove_all(args), _exit, render, public, args.json)

    def bad(msg):
        raise BadInput(msg)
    if args.claim in ("monotonic", "bound", "unobservable") and (
            args.A is None or args.patterns or (args.claim == "unobservable" and not args.change)):
        form = "A PARAM=VALUE" if args.claim == "unobservable" else "A"
        return run_verb("prove", lambda: bad(f"prove {args.claim}: expected {form} (or --all "
                                             f"[PATTERN ...])"), _exit, render, public, args.json)

    def compute():
        backends = parse_backends(args.replay)
        kw = dict(solver=args.solver, timeout=args.timeout, save=args.save, emit=args.emit_smt2,
                  backends=backends)
        if args.save:
            CACHE.root = lemma_dir()
        if args.claim == "symmetry":
            groups = symmetry_groups(args.targets, args.set)
            if not groups:
                raise BadInput("prove symmetry: name instructions, patterns, theory ids or --set")
            if len(groups) == 1:
                names = groups[0]
                results = [prove_symmetry(resolve(names[0]), args.solver, args.timeout,
                                          args.method, args.save, args.emit_smt2, backends,
                                          not args.no_twin, names)]
            else:
                if args.emit_smt2:
                    raise BadInput("--emit-smt2 takes one group (name one instruction)")
                results = prove_symmetry_many(groups, args.jobs or 0, solver=args.solver,
                                              timeout=args.timeout, method=args.method,
                                              save=args.save, backends=backends,
                                              twin=not args.no_twin)
            for r in results:
                if r["status"] == "error":
                    if r.get("exception") == "InternalError":
                        raise InternalError(r["reason"])
                    raise BadInput(r["reason"])
            if len(results) == 1:
                res = results[0]
            else:
                if args.json:
                    print(json.dumps([dict(public(r), instructions=r["group"]) for r in results],
                                     indent=1))
                else:
                    for r in results:
                        print(f"{r['status']:<8} {r['seconds']:8.2f} s  {r.get('method', ''):<10} "
                              f"{len(r['group']):>3} instr  {r['group'][0]}"
                              + (f"  twin {r['twin'].get('verdict', r['twin']['status'])}" if r.get("twin") else "")
                              + (f"  ({r['reason']})" if r.get("reason") else ""))
                sts = {r["status"] for r in results}
                return EXIT_REFUTED if "refuted" in sts else EXIT_UNKNOWN if "unknown" in sts else EXIT_OK
        elif args.claim in CLAIM_MODULES:
            res = CLAIM_MODULES[args.claim].from_args(args, kw)
        else:  # pragma: no cover - argparse restricts the choices
            raise BadInput(f"unknown claim {args.claim!r}")
        return res

    return run_verb("prove", compute, lambda res: _exit(res["status"]), render, public, args.json)
