"""Layer 5, query/store: the proofs/ folder (what has been shown), loose or packed.

One record per claim: `proofs/<group>/<name>.json` (claim, verdict, solver and version, time,
date, sha256 of the query, the theory hashes it rests on, and its broken twin) and, for a
monolithic proof, `proofs/<group>/<name>.smt2` (the exact query the solver answered). A
decomposed proof rests on lemmas: their list (`parts`: name, role, sha256 of the lemma's query,
solver, seconds) and their texts (the query and its verdict: status, solver, version, seconds)
are generated in bulk, so a store keeps them in two forms:

- loose, as ``prove --save`` writes them: `parts` inside the record, each lemma as two files
  `proofs/cache/<sha256>.smt2` (the query) + `<sha256>.json` (the verdict);
- packed (mmaformal.packs; ``mmaformal store pack``, ``pack_proofs``): the record keeps
  `lemma_count` and `parts_sha256`, its `parts` list is the member `<group>/<name>.json` of
  `proofs/parts.tar.zst`, and the lemmas are in `proofs/cache/lemmas-<h>.tar.zst` (h: the first
  hex digit of the sha256): each query a member `<sha256>.smt2`, the verdicts together in one
  member `index.json` ({sha256: the fields of the loose .json}, sorted, one lemma a line;
  ``lemma_index`` reads it, ``pack_proofs`` alone writes it).

Readers take either form through one function each: ``record_parts`` (a record's lemma list)
and ``lemma_sources`` / ``read_lemma`` / ``lemma_text`` (a lemma: the loose files of each
folder first, then the packs, the store's before the shipped ones).

Where: records are written to the store's proofs/ (``proofs_dir()``: mmaformal.paths; the
checkout's proofs/ when run from one, else --store / $MMAFORMAL_STORE / the per-user folder) and
read from it and from the shipped proofs/ (``read_proofs``, ``read_lemma``). A record that fails
its check (``record_problems``: its stored query no longer hashes as recorded, its lemma list
differs from parts_sha256, a lemma it names is missing) is reported on stderr and not used.
An installed wheel carries the records and parts.tar.zst but not the lemma texts (the sdist
and a checkout do): ``lemma_texts_installed()`` says so, and the lemma presence check is then
left to the stores that hold them.

May import: the standard library, mmaformal.paths, mmaformal.packs, mmaformal.query.solvers.

Invariants: a lemma is used only when its query text hashes (``sha256``) to its name and its
verdict is unsat; a packed lemma list only when it hashes to the record's parts_sha256; packing
changes no record's content but the `parts` -> (`lemma_count`, `parts_sha256`) swap, and removes
a loose file only after the pack holding it has been written.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
from pathlib import Path
from typing import Iterator

from .. import paths
from ..packs import SUFFIX, PackError, digest, manifest_path, open_pack, write_pack
from .solvers import Result

__all__ = ["proofs_dir", "lemma_dir", "lemma_dirs", "read_lemma", "lemma_sources", "lemma_text",
           "lemma_pack", "lemma_index", "lemma_texts_installed", "record_parts", "record_problems",
           "check_record", "record_paths", "pack_proofs", "check_proofs", "sha256",
           "write_proof", "read_proofs", "PARTS_PACK", "LEMMA_PACKS", "LEMMA_INDEX"]

#: the pack of the records' lemma lists, beside the group folders (proofs/parts.tar.zst)
PARTS_PACK = "parts" + SUFFIX
#: the packs of the lemma texts in proofs/cache/, one per first hex digit of the sha256
LEMMA_PACKS = tuple(f"lemmas-{h}{SUFFIX}" for h in "0123456789abcdef")
#: the member of a lemma pack holding the verdicts of its lemmas, {sha256: verdict}
LEMMA_INDEX = "index.json"

_HEX64 = re.compile(r"[0-9a-f]{64}")
_LOOSE = re.compile(r"([0-9a-f]{64})\.(smt2|json)")
_QUERY = re.compile(r"([0-9a-f]{64})\.smt2")


def proofs_dir() -> Path:
    """Where proofs are written: the store's proofs/ (mmaformal.paths.store)."""
    return paths.store("proofs")


def lemma_dir() -> Path:
    """Where proved lemmas of decomposed proofs are written: the store's proofs/cache/."""
    return proofs_dir() / "cache"


def lemma_dirs() -> list[Path]:
    """Where proved lemmas are read from: the store's proofs/cache/, then the shipped one."""
    return [d / "cache" for d in paths.record_dirs("proofs")]


def lemma_pack(cache: Path, sha: str) -> Path:
    """The pack of proofs/cache/ `cache` that holds lemma `sha`: lemmas-<first hex digit>."""
    return Path(cache) / f"lemmas-{sha[0]}{SUFFIX}"


def lemma_texts_installed() -> bool:
    """False only in an installed package whose shipped proofs/cache/ has no lemma pack (the
    wheel leaves the lemma texts to the sdist); a checkout always has them."""
    if paths.checkout() is not None:
        return True
    cache = paths.shipped("proofs") / "cache"
    return any((cache / n).exists() for n in LEMMA_PACKS)


def __getattr__(name: str):
    # PROOFS, the module constant before the store existed: the store's proofs/ when looked up
    # (prefer proofs_dir(); kept so that code written against the constant keeps working)
    if name == "PROOFS":
        return proofs_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_LET = re.compile(r"(?<![\w!$?.])([$?][A-Za-z_]+\d+|a![0-9]+)(?![\w!])")


def canonical(text: str) -> str:
    """SMT-LIB2 text with z3's generated let-names ($x12, ?x7, a!3) renamed in order of first
    appearance: z3 numbers them by AST id, which depends on the process's history."""
    names: dict[str, str] = {}

    def sub(m):
        k = m.group(1)
        if k not in names:
            names[k] = f"_l{len(names)}"
        return names[k]
    return _LET.sub(sub, text)


def sha256(text: str) -> str:
    """Hash of a query, stable across processes (see `canonical`)."""
    return hashlib.sha256(canonical(text).encode()).hexdigest()


def write_proof(group: str, name: str, claim: str, query: str, result: Result, twin_claim: str,
                twin: Result, depends: dict[str, str], root: Path | None = None,
                extra: dict | None = None) -> Path:
    """Store a proof record. `result` must be UNSAT (the claim holds) and `twin` SAT (the
    mutated claim fails): a proof without a broken twin that the same query catches is not
    stored. `extra`: further fields (e.g. how a case split covers the claim)."""
    if result.status != "unsat":
        raise ValueError(f"{name}: not proved ({result.status}); only proofs are stored")
    if twin.status != "sat":
        raise ValueError(f"{name}: the broken twin was not refuted ({twin.status}); proof not stored")
    d = (root or proofs_dir()) / group
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.smt2").write_text(query)
    rec = {
        "claim": claim,
        "verdict": "proved",
        "solver": result.solver,
        "solver_version": result.version,
        "seconds": round(result.seconds, 3),
        "date": _dt.date.today().isoformat(),
        "query": f"{name}.smt2",
        "query_sha256": sha256(query),
        "depends": depends,
        "twin": {"claim": twin_claim, "verdict": "refuted", "solver": twin.solver,
                 "seconds": round(twin.seconds, 3), "witness": {k: hex(v) for k, v in twin.model.items()}},
    }
    rec.update(extra or {})
    p = d / f"{name}.json"
    p.write_text(json.dumps(rec, indent=2, sort_keys=True) + "\n")
    return p


# --------------------------------------------------------------------------------------------
# lemmas: loose files, then packs


def _read(p: Path) -> bytes | None:
    try:
        return p.read_bytes()
    except OSError:
        return None


def lemma_sources(sha: str, dirs: "list[Path] | None" = None
                  ) -> Iterator[tuple[str, bytes | None, bytes | None]]:
    """Every stored copy of lemma `sha`, in reading order, as (where, query bytes, verdict
    bytes: the loose .json file, or the pack's index.json entry as JSON) (None: missing): the
    loose files of each folder of `dirs` (default ``lemma_dirs()``), then each folder's pack. A
    pack that cannot be opened is reported (mmaformal.paths.report) and skipped."""
    if not isinstance(sha, str) or not _HEX64.fullmatch(sha):
        return
    dirs = list(dict.fromkeys(Path(d) for d in (lemma_dirs() if dirs is None else dirs)))
    for d in dirs:
        q, j = d / f"{sha}.smt2", d / f"{sha}.json"
        if q.exists() or j.exists():
            yield str(j), _read(q), _read(j)
    for d in dirs:
        p = lemma_pack(d, sha)
        if not p.exists():
            continue
        try:
            q, v = open_pack(p).get(f"{sha}.smt2"), lemma_index(p).get(sha)
        except PackError as e:
            paths.report(p, str(e))
            continue
        if q is not None or v is not None:
            yield f"{p}:{LEMMA_INDEX}:{sha}", q, None if v is None else json.dumps(v).encode()


_INDEXES: dict[str, tuple[bytes, dict[str, dict]]] = {}


def lemma_index(pack: "str | Path") -> dict[str, dict]:
    """{sha256: verdict} of a lemma pack, its member index.json ({} when the pack has none);
    parsed once per pack while the pack is unchanged. PackError (one line) when the pack
    cannot be opened or index.json is not an object of objects."""
    pk = open_pack(pack)
    data = pk.get(LEMMA_INDEX)
    if data is None:
        return {}
    hit = _INDEXES.get(str(pk.path))
    if hit is not None and hit[0] is data:
        return hit[1]
    try:
        index = json.loads(data)
    except ValueError as e:
        raise PackError(f"pack {pk.path}: member {LEMMA_INDEX} is unreadable "
                        f"({' '.join(str(e).split())})") from None
    if not isinstance(index, dict) or not all(isinstance(v, dict) for v in index.values()):
        raise PackError(f"pack {pk.path}: member {LEMMA_INDEX} is not an object of verdicts")
    _INDEXES[str(pk.path)] = (data, index)
    return index


def _index_bytes(index: "dict[str, dict]") -> bytes:
    """The member index.json of a lemma pack: sorted, compact, one lemma a line."""
    lines = [f"{json.dumps(s)}:{json.dumps(index[s], sort_keys=True, separators=(',', ':'))}"
             for s in sorted(index)]
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode()


_USABLE: set[tuple[str, bytes, bytes]] = set()


def _lemma_problem(sha: str, query: bytes | None, meta: bytes | None) -> str | None:
    """Why one stored copy of a lemma cannot be used (None: it can). A copy found usable is
    remembered (by its bytes), so that a lemma many records share is hashed once."""
    if (sha, query, meta) in _USABLE:
        return None
    try:
        rec = json.loads(meta) if meta is not None else None
    except ValueError as e:
        return f"unreadable ({e})"
    if not isinstance(rec, dict):
        return "its verdict file is missing or not a JSON object"
    if rec.get("status") != "unsat":
        return f"status {rec.get('status')!r}, not unsat"
    if query is None:
        return f"its query {sha}.smt2 is missing"
    if sha256(query.decode("utf-8", "replace")) != sha:
        return "its stored query does not hash to its name (edited?)"
    _USABLE.add((sha, query, meta))
    return None


def read_lemma(sha: str, dirs: "list[Path] | None" = None) -> "Result | None":
    """The proved lemma whose query hashes to `sha`, from the first copy (``lemma_sources``)
    that is usable: its stored query must hash to `sha` and its verdict be unsat, else it is
    reported and not used. None when no copy is usable."""
    for where, query, meta in lemma_sources(sha, dirs):
        why = _lemma_problem(sha, query, meta)
        if why is None:
            rec = json.loads(meta)
            try:
                return Result("unsat", rec["solver"], rec.get("solver_version", ""), rec["seconds"])
            except KeyError as e:
                why = f"unreadable (no {e})"
        paths.report(where, why)
    return None


def lemma_text(sha: str, dirs: "list[Path] | None" = None) -> str | None:
    """The query text of lemma `sha` from the first usable copy (see ``read_lemma``); None
    when no copy is usable (unusable copies are reported)."""
    for where, query, meta in lemma_sources(sha, dirs):
        why = _lemma_problem(sha, query, meta)
        if why is None:
            return query.decode()
        paths.report(where, why)
    return None


_INDEX: dict[str, tuple[tuple, frozenset[str]]] = {}


def _stored(cache: Path) -> frozenset[str]:
    """The lemmas proofs/cache/ folder `cache` holds with query and verdict, loose or packed
    (names only, not hashed: ``lemma_text`` does that); remembered while the folder and its
    packs are unchanged. A pack that cannot be opened is reported and counts as empty."""
    def stat(p):
        try:
            st = p.stat()
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns)
    key = (stat(cache), tuple(stat(cache / n) for n in LEMMA_PACKS))
    hit = _INDEX.get(str(cache))
    if hit is not None and hit[0] == key:
        return hit[1]
    names: dict[str, set[str]] = {}
    for sha, files in _loose_lemmas(cache).items():
        names.setdefault(sha, set()).update(files)
    for n, st in zip(LEMMA_PACKS, key[1]):
        if st is None:
            continue
        try:
            members, index = open_pack(cache / n).names(), lemma_index(cache / n)
        except PackError as e:
            paths.report(cache / n, str(e))
            continue
        for m in members:
            q = _QUERY.fullmatch(m)
            if q:
                names.setdefault(q.group(1), set()).add("smt2")
        for sha in index:
            names.setdefault(sha, set()).add("json")
    out = frozenset(s for s, e in names.items() if {"smt2", "json"} <= e)
    _INDEX[str(cache)] = (key, out)
    return out


# --------------------------------------------------------------------------------------------
# records


def _parts_member(path: Path) -> str:
    """The member of parts.tar.zst that holds the lemma list of record `path`."""
    return f"{path.parent.name}/{path.name}"


def _roots_of(path: Path) -> list[Path]:
    """The proofs/ folders to look in for what record `path` rests on: its own, then the
    store's and the shipped one."""
    own = Path(path).resolve().parent.parent
    return list(dict.fromkeys([own, *(Path(d).resolve() for d in paths.record_dirs("proofs"))]))


def record_parts(path: Path, rec: dict) -> list[dict]:
    """The lemmas decomposed proof record `rec` (at `path`) rests on, its `parts` list: inline
    (a record as ``prove --save`` writes it), else the member <group>/<name>.json of
    parts.tar.zst in the record's proofs/ folder (then the store's, then the shipped one) that
    hashes to the record's parts_sha256. [] for a record without lemmas. PackError (one line)
    when no pack holds that list or it does not hold lemma_count entries."""
    if "parts" in rec:
        parts = rec["parts"]
        if not isinstance(parts, list):
            raise PackError(f"record {path}: parts is not a list")
        return parts
    want = rec.get("parts_sha256")
    if want is None:
        return []
    member = _parts_member(Path(path))
    for root in _roots_of(path):
        pk = root / PARTS_PACK
        if not pk.exists():
            continue
        data = open_pack(pk).get(member)
        if data is None or digest(data) != want:
            continue
        parts = json.loads(data)
        if not isinstance(parts, list) or len(parts) != rec.get("lemma_count"):
            raise PackError(f"record {path}: {pk.name}:{member} holds "
                            f"{len(parts) if isinstance(parts, list) else 'no list of'} lemmas, "
                            f"the record says {rec.get('lemma_count')}")
        return parts
    raise PackError(f"record {path}: no {PARTS_PACK} holds its lemma list {member} with "
                    f"sha256 {str(want)[:12]}.. (run mmaformal store check)")


def record_problems(path: Path, rec: dict) -> list[str]:
    """What is wrong with one proof record (empty: nothing) that can be seen without solving or
    hashing lemma texts: verdict proved with a refuted broken twin; a monolithic proof's query
    beside it hashing to query_sha256; a decomposed proof's lemma list (``record_parts``)
    well formed, each lemma unsat and stored (its own proofs/cache/, the store's, the shipped
    one; not looked for when the lemma texts are not installed)."""
    path = Path(path)
    if not isinstance(rec, dict):
        return ["not a JSON object"]
    out = []
    if not isinstance(rec.get("claim"), str) or not rec["claim"]:
        out.append("no claim")
    if rec.get("verdict") != "proved":
        out.append(f"verdict is {rec.get('verdict')!r}, not 'proved'")
    tw = rec.get("twin")
    if not isinstance(tw, dict) or tw.get("verdict") != "refuted" or tw.get("status", "sat") != "sat":
        out.append("no refuted broken twin")
    method = rec.get("method")
    if "method" in rec and not isinstance(rec.get("theories"), dict):
        out.append("no theories")
    if method == "decomposed":
        if "parts" not in rec and not ("parts_sha256" in rec and "lemma_count" in rec):
            out.append("decomposed, but names no lemmas (parts, or lemma_count and parts_sha256)")
            return out
        try:
            parts = record_parts(path, rec)
        except (PackError, ValueError) as e:
            return out + [" ".join(str(e).split())]
        if not parts:
            out.append("decomposed, but its lemma list is empty")
        bad = [p for p in parts if not isinstance(p, dict) or p.get("status") != "unsat"
               or not _HEX64.fullmatch(str(p.get("sha256", "")))]
        if bad:
            out.append(f"{len(bad)} of its {len(parts)} lemmas are not unsat with a sha256")
        elif lemma_texts_installed():
            dirs = dict.fromkeys([path.resolve().parent.parent / "cache", *lemma_dirs()])
            have = frozenset().union(*(_stored(d) for d in dirs))
            gone = [p for p in parts if p["sha256"] not in have]
            if gone:
                out.append(f"{len(gone)} of its {len(parts)} lemmas are in no proofs/cache/ "
                           f"(first: lemma {gone[0].get('lemma')}, {gone[0]['sha256'][:12]}..)")
    elif method in ("monolithic", None):
        q = path.parent / str(rec.get("query"))
        if not rec.get("query") or not q.is_file():
            out.append(f"its query {rec.get('query')!r} is missing")
        elif sha256(q.read_text()) != rec.get("query_sha256"):
            out.append("its stored query does not hash to query_sha256 (edited?)")
    else:
        out.append(f"method {method!r} is neither monolithic nor decomposed")
    return out


def check_record(path: Path, rec: dict) -> str | None:
    """Why a proof record cannot be used (None: it can): the first of ``record_problems``."""
    problems = record_problems(path, rec)
    return problems[0] if problems else None


def record_paths(root: Path) -> list[Path]:
    """The proof records of one proofs/ folder: <group>/*.json (cache/ holds lemmas)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return [p for d in sorted(root.iterdir()) if d.is_dir() and d.name != "cache"
            for p in sorted(d.glob("*.json"))]


def read_proofs(group: str | None = None, root: Path | None = None) -> list[tuple[Path, dict]]:
    """Proof records [(path, record)] of `group` (every group if None) from `root`, else from
    the store's proofs/ and then the shipped ones (a record of the same group and name in the
    store replaces the shipped one). A record that fails ``check_record`` is reported
    (mmaformal.paths.report) and left out."""
    out = []
    seen = set()
    for base in [root] if root else paths.record_dirs("proofs"):
        pats = [base / group] if group else sorted(p for p in base.iterdir() if p.is_dir() and p.name != "cache") if base.exists() else []
        for d in pats:
            for p in sorted(d.glob("*.json")):
                key = (d.name, p.name)
                if key in seen:
                    continue
                seen.add(key)
                rec = json.loads(p.read_text())
                why = check_record(p, rec)
                if why:
                    paths.report(p, why)
                    continue
                out.append((p, rec))
    return out


# --------------------------------------------------------------------------------------------
# packing and checking a proofs/ folder


def _load_records(root: Path) -> list[tuple[Path, dict]]:
    out = []
    for p in record_paths(root):
        try:
            out.append((p, json.loads(p.read_text())))
        except (OSError, ValueError) as e:
            raise PackError(f"record {p}: unreadable ({' '.join(str(e).split())})") from None
    return out


def _used_lemmas(roots: list[Path]) -> set[str]:
    """The sha256 of every lemma a record of these proofs/ folders names."""
    used: set[str] = set()
    for root in roots:
        for p, rec in _load_records(root):
            if rec.get("method") == "decomposed":
                used |= {str(x.get("sha256")) for x in record_parts(p, rec) if isinstance(x, dict)}
    return used


def _loose_lemmas(cache: Path) -> dict[str, dict[str, Path]]:
    """{sha: {"smt2": path, "json": path}} of the loose lemma files in `cache`."""
    out: dict[str, dict[str, Path]] = {}
    for f in sorted(cache.iterdir()) if cache.is_dir() else []:
        m = _LOOSE.fullmatch(f.name)
        if m:
            out.setdefault(m.group(1), {})[m.group(2)] = f
    return out


def pack_proofs(root: Path | None = None) -> dict:
    """Fold a proofs/ folder (default: the store's) into its packs, ``mmaformal store pack``:
    drop the lemmas no record names (orphans, loose or packed); put the loose lemmas of cache/
    into cache/lemmas-<h>.tar.zst (each <sha>.smt2 as a member, each <sha>.json as its entry
    of the member index.json); move every record's inline `parts` into
    parts.tar.zst (the record keeps lemma_count and parts_sha256); drop parts.tar.zst members no
    record names. Every loose lemma must be usable (its query hashes to its name, verdict unsat),
    else PackError and nothing is changed. The packs are written before any record is rewritten
    or loose file removed. Returns {"records": [rewritten], "packed": n lemmas folded,
    "pruned": [sha256 removed], "packs": [packs written or removed]}."""
    root = Path(root) if root is not None else proofs_dir()
    root = root.resolve()
    cache = root / "cache"
    recs = _load_records(root)
    others = [Path(d).resolve() for d in paths.record_dirs("proofs")]
    used = _used_lemmas([root, *[d for d in others if d != root]])
    # the lemma lists
    pk_path = root / PARTS_PACK
    old = dict(open_pack(pk_path).items()) if pk_path.exists() else {}
    members: dict[str, bytes] = {}
    rewrite = []
    for p, rec in recs:
        if rec.get("method") != "decomposed":
            continue
        m = _parts_member(p)
        if "parts" in rec:
            members[m] = (json.dumps(rec["parts"], indent=1) + "\n").encode()
            rewrite.append((p, rec, members[m]))
        elif m in old and digest(old[m]) == rec.get("parts_sha256"):
            members[m] = old[m]
    # the lemma texts
    loose = _loose_lemmas(cache)
    for sha, files in loose.items():
        if sha not in used:
            continue
        why = _lemma_problem(sha, _read(files["smt2"]) if "smt2" in files else None,
                             _read(files["json"]) if "json" in files else None)
        if why:
            raise PackError(f"lemma {cache / (sha + '.json')}: {why}; nothing packed "
                            f"(remove it, or re-prove its record)")
    written, pruned = [], sorted(s for s in loose if s not in used)
    for name in LEMMA_PACKS:
        pk = cache / name
        have = dict(open_pack(pk).items()) if pk.exists() else {}
        index = dict(lemma_index(pk)) if pk.exists() else {}
        have.pop(LEMMA_INDEX, None)
        h = name[len("lemmas-")]
        new = {s: f for s, f in loose.items() if s[0] == h and s in used}
        gone = ({n.split(".")[0] for n in have} | set(index)) - used
        if not new and not gone:
            continue
        pruned += sorted(gone)
        keep = {n: b for n, b in have.items() if n.split(".")[0] not in gone}
        index = {s: v for s, v in index.items() if s not in gone}
        for s, files in new.items():
            keep[f"{s}.smt2"] = files["smt2"].read_bytes()
            index[s] = json.loads(files["json"].read_bytes())
        if keep or index:
            write_pack(pk, {**keep, LEMMA_INDEX: _index_bytes(index)})
        else:
            pk.unlink()
            manifest_path(pk).unlink(missing_ok=True)
        written.append(str(pk))
    if members != old:
        if members:
            write_pack(pk_path, members)
        elif pk_path.exists():
            pk_path.unlink()
            manifest_path(pk_path).unlink(missing_ok=True)
        written.append(str(pk_path))
    for p, rec, data in rewrite:
        out = {}
        for k, v in rec.items():
            if k == "parts":
                out["lemma_count"] = len(v)
                out["parts_sha256"] = digest(data)
            else:
                out[k] = v
        p.write_text(json.dumps(out, indent=1) + "\n")
    for files in loose.values():
        for f in files.values():
            f.unlink()
    return {"records": [str(p) for p, _, _ in rewrite], "pruned": sorted(set(pruned)),
            "packed": sum(1 for s in loose if s in used), "packs": written}


def check_proofs(root: Path, shipped: bool = False) -> tuple[list[str], list[str]]:
    """What is wrong with one proofs/ folder, without solving (``mmaformal store check``):
    (problems, notes). Problems: a pack or manifest that is damaged or alone, a member or
    index.json entry in the wrong pack, a lemma without its query or verdict (its member or its
    index.json entry), a lemma no record names (orphan), a parts.tar.zst member no record
    names, a record that fails ``record_problems``, and, when `shipped` (the checkout's own
    folder), loose lemma files that ``pack_proofs`` has not folded. Notes: loose lemmas of a
    store, lemma texts not installed."""
    root = Path(root).resolve()
    problems: list[str] = []
    notes: list[str] = []
    cache = root / "cache"
    names: dict[str, set[str]] = {}
    for f in sorted(cache.iterdir()) if cache.is_dir() else []:
        if f.name in LEMMA_PACKS or f.name in {manifest_path(cache / n).name for n in LEMMA_PACKS}:
            continue
        if not _LOOSE.fullmatch(f.name):
            problems.append(f"{f}: neither a lemma file nor a lemma pack")
    for name in LEMMA_PACKS + (f"../{PARTS_PACK}",):
        pk = (cache / name).resolve()
        man = manifest_path(pk)
        if pk.exists() != man.exists():
            problems.append(f"{pk}: a pack without its manifest {man.name}" if pk.exists() else
                            f"{man}: a manifest without its pack {pk.name}")
            continue
        if not pk.exists():
            continue
        try:
            members = open_pack(pk).names()
            index = lemma_index(pk) if name.startswith("lemmas-") else {}
        except PackError as e:
            problems.append(" ".join(str(e).split()))
            continue
        if name.startswith("lemmas-"):
            h = name[len("lemmas-")]
            queries = set()
            for n in members:
                m = _QUERY.fullmatch(n)
                if n != LEMMA_INDEX and (not m or m.group(1)[0] != h):
                    problems.append(f"{pk}: member {n} does not belong in this pack")
                elif m:
                    queries.add(m.group(1))
            for s in index:
                if not _HEX64.fullmatch(s) or s[0] != h:
                    problems.append(f"{pk}: {LEMMA_INDEX} entry {s[:16]!r} does not belong "
                                    f"in this pack")
            verdicts = {s for s in index if _HEX64.fullmatch(s) and s[0] == h}
            for what, lack in (("query member", verdicts - queries),
                               (f"entry in {LEMMA_INDEX}", queries - verdicts)):
                if lack:
                    problems.append(f"{pk}: {len(lack)} lemmas have no {what} (first "
                                    f"{min(lack)[:12]}..)")
            for s in queries | verdicts:
                names.setdefault(s, set()).add(pk.name)
    loose = _loose_lemmas(cache)
    for s, files in loose.items():
        if set(files) != {"smt2", "json"}:
            problems.append(f"{cache}/{s}: loose lemma without its {({'smt2', 'json'} - set(files)).pop()} file")
        names.setdefault(s, set()).add("loose")
    if loose:
        (problems if shipped else notes).append(
            f"{cache}: {len(loose)} loose lemmas not in a pack (mmaformal store pack folds them)")
    if not names and paths.checkout() is None and root == paths.shipped("proofs").resolve():
        notes.append(f"{cache}: lemma texts not installed (the wheel leaves {LEMMA_PACKS[0]} .. "
                     f"{LEMMA_PACKS[-1]} to the sdist); lemma presence not checked")
    try:
        recs = _load_records(root)
    except PackError as e:
        return problems + [str(e)], notes
    for p, rec in recs:
        problems += [f"{p}: {x}" for x in record_problems(p, rec)]
    others = [Path(d).resolve() for d in paths.record_dirs("proofs")]
    try:
        used = _used_lemmas(list(dict.fromkeys([root, *others])))
    except (PackError, ValueError):
        used = None                   # a record's lemma list is unreadable: reported above
    if used is not None:
        orphans = sorted(set(names) - used)
        if orphans:
            problems.append(f"{cache}: {len(orphans)} lemmas no record names (orphans; "
                            f"mmaformal store pack removes them), first {orphans[0][:12]}..")
    pk = root / PARTS_PACK
    if pk.exists():
        try:
            members = dict(open_pack(pk).items())
        except PackError:
            members = {}                  # reported above
        want = {_parts_member(p): rec.get("parts_sha256") for p, rec in recs}
        for m, data in sorted(members.items()):
            if want.get(m) != digest(data):
                problems.append(f"{pk}: member {m} belongs to no record (no record "
                                f"{m} with that parts_sha256)")
    return problems, notes
