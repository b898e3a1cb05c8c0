"""Layer 5 front end, storecli: ``mmaformal store``, the upkeep of a store's packed records.

    mmaformal store pack [--json]
        fold the store's loose files into packs: lemma files of proofs/cache/ into
        proofs/cache/lemmas-<h>.tar.zst (each <sha>.smt2 a member, each <sha>.json an entry of
        the member index.json), each record's `parts` list into proofs/parts.tar.zst,
        loose hardware campaign folders into counterexamples/hw/<campaign>.tar.zst; removes the
        lemmas no record names, then the loose files
    mmaformal store check [--json]
        digests of every pack, orphan and missing lemmas, every proof record's structure, stale
        theory hashes (proofs and counterexamples), the hardware campaigns; no solver (seconds)
    mmaformal store recheck [RECORD.json ...] [--no-solve] [-j N] [--timeout S] [--json]
        re-check stored verdicts: every lemma, query and case re-solved (unsat), every lemma
        text hashing to its name; STALE: a record whose theory hashes differ from today's
    mmaformal store replay [RECORD.json ...] [--backends int,numpy,compiled] [--json]
        replay counterexample records (default: every record of counterexamples/<kind>/, the
        store's and the shipped ones) on the concrete back-ends: each run's stored output is
        computed again and the record's check (differ, asymmetric, decreasing, exceeds) holds
        (mmaformal.query.cex.replay_record); STALE notes a theory changed since it was written
    mmaformal store unpack PACK DIR
        write the members of a pack (digest-checked) into DIR as files, as they are (a lemma
        pack: its <sha>.smt2 files and index.json)

The store is mmaformal.paths's (--store, $MMAFORMAL_STORE, the checkout, the per-user folder);
check and recheck read the shipped records too. The hardware campaigns are packed and checked
by mmaformal.hw.campaigns (or mmaformal.hw.evidence) when the package has it.

May import: mmaformal.paths, mmaformal.packs, mmaformal.query.store and .proofs (lazily), the
hardware campaign module (lazily, when present).

Exit codes: 0 all well; 1 a problem found (check, recheck, replay); 2 bad input (a missing record or
pack, a damaged pack, a store that cannot be used): one line on stderr, no traceback.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from . import packs, paths

__all__ = ["add_parser", "run"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("store", help="pack, check, re-check or unpack the stored records")
    ss = p.add_subparsers(dest="store_verb", metavar="STOREVERB")
    ss.required = True
    q = ss.add_parser("pack", help="fold loose lemma files, lemma lists and hardware campaign "
                      "folders into packs, then remove the loose files")
    q.add_argument("--json", action="store_true")
    q = ss.add_parser("check", help="digests, orphan and missing lemmas, record structure, "
                      "stale theories (no solver; seconds)")
    q.add_argument("--json", action="store_true")
    q = ss.add_parser("recheck", help="re-solve every stored lemma and query and compare; "
                      "STALE: theory hashes differ from today's")
    q.add_argument("records", nargs="*", metavar="RECORD.json",
                   help="proof records (default: every record of the store and the shipped ones)")
    q.add_argument("--no-solve", action="store_true",
                   help="check structure and hashes only (every lemma text against its name)")
    q.add_argument("-j", "--jobs", type=int, default=None,
                   help="solver processes (default: the CPUs available)")
    q.add_argument("--timeout", type=float, default=600, help="seconds per query (default 600)")
    q.add_argument("--json", action="store_true")
    q = ss.add_parser("replay", help="replay counterexample records on the concrete back-ends")
    q.add_argument("records", nargs="*", metavar="RECORD.json",
                   help="counterexample records (default: every record of the store and the "
                        "shipped ones)")
    q.add_argument("--backends", default="int,numpy,compiled", type=_backends,
                   help="comma-separated: int, numpy, compiled (default: all three)")
    q.add_argument("--json", action="store_true")
    q = ss.add_parser("unpack", help="write the members of a pack into a folder")
    q.add_argument("pack", metavar="PACK", help="a .tar.zst pack with its .sha256 manifest")
    q.add_argument("dir", metavar="DIR", help="the folder to write into (created if missing)")
    return p


#: the concrete back-ends `store replay` can run a record on (mmaformal.query.model.BACKENDS)
REPLAY_BACKENDS = ("int", "numpy", "compiled")


def _backends(text: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(","))
    bad = [x for x in names if x not in REPLAY_BACKENDS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown back-end {bad[0]!r}; expected a comma-separated "
                                         f"list of {', '.join(REPLAY_BACKENDS)}")
    return names


def _hw():
    """The hardware campaign module (pack_campaigns, check_campaigns), or None."""
    for name in ("mmaformal.hw.campaigns", "mmaformal.hw.evidence"):
        try:
            m = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(m, "pack_campaigns") and hasattr(m, "check_campaigns"):
            return m
    return None


def _proof_roots() -> list[Path]:
    """The proofs/ folders: the store's (when it exists), then the shipped one."""
    return [Path(d).resolve() for d in paths.record_dirs("proofs")]


def _pack(args) -> int:
    from .query.store import pack_proofs
    root = paths.store()
    res = pack_proofs(root / "proofs")
    hw = _hw()
    res["campaigns"] = [str(p) for p in hw.pack_campaigns(root)] if hw else []
    if args.json:
        print(json.dumps(res, indent=1))
        return 0
    print(f"store pack: {root}")
    print(f"  proofs: {len(res['records'])} lemma lists moved into parts{packs.SUFFIX}, "
          f"{res['packed']} loose lemmas packed, {len(res['pruned'])} orphan lemmas removed, "
          f"{len(res['packs'])} packs written")
    print(f"  hardware campaigns: {len(res['campaigns'])} folders packed"
          + ("" if hw else " (no campaign module in this package)"))
    return 0


def _check(args) -> int:
    from .query.proofs import stale
    from .query.store import LEMMA_PACKS, check_proofs, record_paths
    shipped = paths.shipped("proofs").resolve()
    problems, notes, counts = [], [], []
    for d in _proof_roots():
        p, n = check_proofs(d, shipped=(d == shipped and paths.checkout() is not None))
        problems += p
        notes += n
        recs = record_paths(d)
        for r in recs:
            try:
                st = stale(json.loads(r.read_text()))
            except ValueError:
                continue                   # unreadable: check_proofs said so
            if st:
                problems.append(f"{r}: STALE: theories {', '.join(st)} changed since it was "
                                f"written (re-prove it with --save, then mmaformal store pack)")
        cache = d / "cache"
        n_packs = sum((cache / x).exists() for x in LEMMA_PACKS)
        counts.append(f"{d}: {len(recs)} records, {n_packs} of {len(LEMMA_PACKS)} lemma packs")
    from .query import cex
    for r, rec in cex.read_all():
        st = cex.stale(rec)
        if st:
            problems.append(f"{r}: STALE: theories {', '.join(st)} changed since it was written "
                            f"(re-prove its claim with --redo --save, then remove it)")
    hw = _hw()
    if hw:
        for root in dict.fromkeys(d.parent for d in _proof_roots()):
            problems += hw.check_campaigns(root)
    else:
        notes.append("hardware campaigns not checked (no campaign module in this package)")
    if args.json:
        print(json.dumps({"folders": counts, "problems": problems, "notes": notes}, indent=1))
    else:
        for c in counts:
            print(f"proofs {c}")
        for x in notes:
            print(f"note: {x}")
        for x in problems:
            print(f"FAIL {x}")
        print(f"store check: {len(problems)} problems" if problems else "store check: ok")
    return 1 if problems else 0


def _recheck(args) -> int:
    from .query.proofs import recheck
    from .query.store import LEMMA_PACKS, lemma_texts_installed, record_paths
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"store recheck: -j {args.jobs}: give at least 1 process")
    if not args.timeout > 0:
        raise ValueError(f"store recheck: --timeout {args.timeout}: give a positive number of seconds")
    if args.records:
        items = [_read_record("recheck", r) for r in args.records]
    else:
        seen, items = set(), []
        for d in _proof_roots():
            for p in record_paths(d):
                if (p.parent.name, p.name) not in seen:
                    seen.add((p.parent.name, p.name))
                    items.append((p, json.loads(p.read_text())))
    if not lemma_texts_installed():
        print(f"store recheck: lemma texts not installed: {paths.shipped('proofs') / 'cache'} "
              f"lacks {LEMMA_PACKS[0]} .. {LEMMA_PACKS[-1]} (the sdist and a checkout carry "
              f"them); decomposed proofs are not re-checked", file=sys.stderr)
    rows = recheck(items, solve=not args.no_solve, timeout=args.timeout, workers=args.jobs)
    bad = sum(r["status"] != "ok" for r in rows)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(f"{r['status']:<5} {r['record']}" + "".join(f"\n      {x}" for x in r["problems"]))
        print(f"store recheck: {len(rows) - bad} of {len(rows)} records hold "
              + ("(structure and hashes; not re-solved)" if args.no_solve else
                 f"({sum(r['queries'] for r in rows)} lemmas, queries or cases re-solved, "
                 f"each unsat)"))
    return 1 if bad else 0


def _read_record(verb: str, r: str) -> tuple[Path, dict]:
    """(path, record) of a record file named on the command line; a one-line ValueError."""
    p = Path(r)
    try:
        rec = json.loads(p.read_text())
    except OSError as e:
        raise ValueError(f"store {verb}: {r}: cannot read it ({e.strerror or e})") from None
    except ValueError:
        raise ValueError(f"store {verb}: {r}: not a JSON record") from None
    if not isinstance(rec, dict):
        raise ValueError(f"store {verb}: {r}: not a JSON record")
    return p, rec


def _replay(args) -> int:
    from .query import cex
    if args.records:
        recs = [_read_record("replay", r) for r in args.records]
        for (p, rec), r in zip(recs, args.records):
            if not {"kind", "runs", "models", "check"} <= set(rec):
                raise ValueError(f"store replay: {r}: not a counterexample record (kind, runs, "
                                 f"models, check)")
    else:
        recs = cex.read_all()
    rows = []
    for path, rec in recs:
        problems = cex.replay_record(rec, args.backends)
        rows.append({"record": str(path), "status": "FAIL" if problems else "ok",
                     "problems": problems, "stale": cex.stale(rec)})
    bad = sum(r["status"] != "ok" for r in rows)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            note = f" (theories changed since: {', '.join(r['stale'])})" if r["stale"] else ""
            print(f"{r['status']:<4} {r['record']}{note}" + "".join(f"\n     {x}" for x in r["problems"]))
        print(f"store replay: {len(rows) - bad} of {len(rows)} records replay")
    return 1 if bad else 0


def _unpack(args) -> int:
    pack = Path(args.pack)
    if not pack.name.endswith(packs.SUFFIX):
        raise ValueError(f"store unpack: {pack}: not a {packs.SUFFIX} pack")
    if not pack.is_file():
        raise ValueError(f"store unpack: {pack}: no such pack")
    out = Path(args.dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"store unpack: {out}: not a directory")
    members = packs.open_pack(pack).items()
    for name, data in members:
        f = out / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)
    print(f"store unpack: {len(members)} members of {pack} written to {out} "
          f"(check them with: cd {out} && sha256sum -c {packs.manifest_path(pack).resolve()})")
    return 0


def run(args) -> int:
    return {"pack": _pack, "check": _check, "recheck": _recheck, "replay": _replay,
            "unpack": _unpack}[args.store_verb](args)
