"""The packed proof store (mmaformal.query.store, ``mmaformal store``): the lemmas of
decomposed proofs in proofs/cache/lemmas-<h>.tar.zst (each query a member <sha>.smt2, their
verdicts one member index.json), each record's lemma list in proofs/parts.tar.zst, read through
one function each; packing, checking, re-checking and unpacking.

The shipped tree: every lemma pack present and readable, no loose lemma file left unpacked, no
orphan lemma, no record whose lemmas are missing (``store check`` finds nothing). A small store
built here from one fabricated decomposed record (its one lemma a trivially UNSAT query) is
packed, then broken in each way the checks must catch: an orphan lemma, a missing lemma pack, a
damaged pack, a lemma without its index.json entry or its query, a lemma list that differs
from parts_sha256, a stale theory hash, a lemma that
re-solves SAT; each subcommand's bad input exits 2 with one line.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from mmaformal import cli, packs, paths
from mmaformal.query import proofs, store

SHIPPED = paths.shipped("proofs")
TRUE = "(assert false)\n(check-sat)\n"            # unsat: the lemma holds
FALSE = "(declare-fun x () (_ BitVec 8))\n(assert (= x #x01))\n(check-sat)\n"   # sat


def _shipped_record():
    """A shipped decomposed proof record (path, record)."""
    for p in store.record_paths(SHIPPED):
        rec = json.loads(p.read_text())
        if rec.get("method") == "decomposed":
            return p, rec
    raise AssertionError("no decomposed record shipped")


def _lemma(cache, text, status="unsat"):
    """Write a loose lemma (as prove --save does); returns its sha256."""
    sha = store.sha256(text)
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"{sha}.smt2").write_text(text)
    (cache / f"{sha}.json").write_text(json.dumps({"status": status, "verdict": "proved",
                                                   "solver": "bitwuzla", "solver_version": "",
                                                   "seconds": 0.01, "query": f"{sha}.smt2"}))
    return sha


@pytest.fixture
def tmp_store(tmp_path, monkeypatch):
    """A store holding one loose decomposed record (group symmetry, name fake.json) resting on
    one loose lemma; returns (proofs dir, record path, lemma sha)."""
    monkeypatch.setenv(paths.ENV, str(tmp_path))
    root = tmp_path / "proofs"
    _, rec = _shipped_record()
    sha = _lemma(root / "cache", TRUE)
    rec = {k: v for k, v in rec.items() if k not in ("lemma_count", "parts_sha256")}
    rec["parts"] = [{"lemma": "t.false", "role": "false is false", "sha256": sha,
                     "status": "unsat", "solver": "bitwuzla", "solver_version": "",
                     "seconds": 0.01, "cached": False, "query": f"../cache/{sha}.smt2"}]
    p = root / "symmetry" / "fake.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(rec, indent=1) + "\n")
    return root, p, sha


def _check(root):
    return store.check_proofs(root)[0]


# ---- packs --------------------------------------------------------------------------------


def test_pack_round_trip_and_unpack(tmp_path, capsys):
    members = {"a.txt": b"alpha\n", "sub/b.bin": bytes(range(256))}
    pk = packs.write_pack(tmp_path / "x.tar.zst", members)
    first = pk.read_bytes()
    assert packs.read_pack(pk) == members
    assert packs.open_pack(pk).names() == sorted(members)
    packs.write_pack(pk, members)
    assert pk.read_bytes() == first                       # deterministic
    assert cli.main(["store", "unpack", str(pk), str(tmp_path / "out")]) == 0
    assert "2 members" in capsys.readouterr().out
    for n, b in members.items():
        assert (tmp_path / "out" / n).read_bytes() == b
    r = subprocess.run(["sha256sum", "-c", str(packs.manifest_path(pk))], cwd=tmp_path / "out",
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_unpack_bad_input_exits_2(tmp_path, capsys):
    pk = packs.write_pack(tmp_path / "x.tar.zst", {"a": b"1"})
    (tmp_path / "file").write_text("")
    for argv in (["store", "unpack", str(tmp_path / "none.tar.zst"), str(tmp_path / "o")],
                 ["store", "unpack", str(tmp_path / "file"), str(tmp_path / "o")],
                 ["store", "unpack", str(pk), str(tmp_path / "file")],
                 ["store", "unpack", str(pk)],
                 ["store"]):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    data = bytearray(pk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pk.write_bytes(bytes(data))
    assert cli.main(["store", "unpack", str(pk), str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "x.tar.zst" in err


# ---- the shipped tree -----------------------------------------------------------------------


def test_shipped_lemma_packs_present_and_nothing_loose():
    if paths.checkout() is None:
        pytest.skip("an installed wheel carries no lemma texts")
    cache = SHIPPED / "cache"
    assert all((cache / n).is_file() for n in store.LEMMA_PACKS)
    loose = sorted(f.name for f in cache.iterdir() if f.name.endswith((".smt2", ".json")))
    assert not loose, f"{len(loose)} loose lemma files in proofs/cache: run mmaformal store pack"
    assert (SHIPPED / store.PARTS_PACK).is_file()
    assert not [p for p in store.record_paths(SHIPPED) if "parts" in json.loads(p.read_text())], \
        "records with an inline parts list: run mmaformal store pack"


def test_shipped_store_check_finds_nothing():
    problems, notes = store.check_proofs(SHIPPED, shipped=paths.checkout() is not None)
    assert problems == []


def test_every_packed_lemma_hashes_to_its_name():
    if paths.checkout() is None:
        pytest.skip("an installed wheel carries no lemma texts")
    n = 0
    for name in store.LEMMA_PACKS:
        pk = packs.open_pack(SHIPPED / "cache" / name)
        index = store.lemma_index(SHIPPED / "cache" / name)
        queries = [m for m in pk.names() if m != store.LEMMA_INDEX]
        assert all(m.endswith(".smt2") for m in queries), f"{name}: members besides index.json"
        assert sorted(index) == [m[:-5] for m in queries], f"{name}: index.json != queries"
        for m in queries:
            assert store.sha256(pk.get(m).decode()) == m[:-5], f"{name}:{m} was edited"
            assert index[m[:-5]]["status"] == "unsat"
            n += 1
    assert n > 1000


# ---- a small store: pack, then break it -----------------------------------------------------


def test_pack_folds_parts_and_lemmas(tmp_store):
    root, rec_path, sha = tmp_store
    before = json.loads(rec_path.read_text())
    orphan = _lemma(root / "cache", "(assert (not true))\n(check-sat)\n")
    assert any("orphans" in x for x in _check(root))
    assert any("loose lemmas" in x for x in store.check_proofs(root, shipped=True)[0])
    verdict = json.loads((root / "cache" / f"{sha}.json").read_text())
    res = store.pack_proofs(root)
    assert res["records"] == [str(rec_path)] and res["packed"] == 1 and res["pruned"] == [orphan]
    assert not list((root / "cache").glob("*.smt2")) and not list((root / "cache").glob("*.json"))
    pk = store.lemma_pack(root / "cache", sha)
    assert packs.open_pack(pk).names() == [f"{sha}.smt2", store.LEMMA_INDEX]
    assert packs.open_pack(pk).get(f"{sha}.smt2").decode() == TRUE
    assert store.lemma_index(pk) == {sha: verdict}
    assert list(packs.read_manifest(packs.manifest_path(pk))) == [f"{sha}.smt2", store.LEMMA_INDEX]
    rec = json.loads(rec_path.read_text())
    assert "parts" not in rec and rec["lemma_count"] == 1
    assert {k: v for k, v in rec.items() if k not in ("lemma_count", "parts_sha256")} == \
        {k: v for k, v in before.items() if k != "parts"}
    i = list(before).index("parts")
    assert list(rec) == list(before)[:i] + ["lemma_count", "parts_sha256"] + list(before)[i + 1:]
    assert store.record_parts(rec_path, rec) == before["parts"]
    assert store.lemma_text(sha) == TRUE
    assert store.read_lemma(sha).status == "unsat"
    assert _check(root) == []
    again = store.pack_proofs(root)                      # nothing left to fold
    assert again["records"] == [] and again["packs"] == [] and again["pruned"] == []


def test_pack_refuses_a_lemma_that_does_not_hash_to_its_name(tmp_store):
    root, rec_path, sha = tmp_store
    (root / "cache" / f"{sha}.smt2").write_text(TRUE + "; edited\n(check-sat)\n")
    with pytest.raises(packs.PackError, match="does not hash to its name"):
        store.pack_proofs(root)
    assert (root / "cache" / f"{sha}.json").exists() and "parts" in json.loads(rec_path.read_text())


def test_check_finds_a_missing_lemma_pack(tmp_store):
    root, rec_path, sha = tmp_store
    store.pack_proofs(root)
    pk = store.lemma_pack(root / "cache", sha)
    pk.unlink()
    problems = _check(root)
    assert any("manifest" in x for x in problems)
    assert any("fake.json" in x and "in no proofs/cache/" in x for x in problems)
    packs.manifest_path(pk).unlink()
    assert any("in no proofs/cache/" in x for x in _check(root))
    assert store.read_lemma(sha) is None


def test_check_finds_a_lemma_without_its_verdict_or_query(tmp_store, capsys):
    root, rec_path, sha = tmp_store
    store.pack_proofs(root)
    pk = store.lemma_pack(root / "cache", sha)
    members = packs.read_pack(pk)
    packs.write_pack(pk, {f"{sha}.smt2": members[f"{sha}.smt2"], store.LEMMA_INDEX: b"{}"})
    problems = _check(root)
    assert any("1 lemmas have no entry in index.json" in x for x in problems), problems
    assert any("in no proofs/cache/" in x for x in problems)
    assert store.read_lemma(sha) is None
    packs.write_pack(pk, {store.LEMMA_INDEX: members[store.LEMMA_INDEX]})
    assert any("1 lemmas have no query member" in x for x in _check(root))
    assert store.read_lemma(sha) is None
    packs.write_pack(pk, {**members, f"{sha}.json": b"{}"})      # the old layout's member
    assert any(f"member {sha}.json does not belong" in x for x in _check(root))
    packs.write_pack(pk, {**members, store.LEMMA_INDEX: b"[]"})
    assert any("index.json is not an object" in x for x in _check(root))
    assert store.read_lemma(sha) is None
    assert "index.json is not an object" in capsys.readouterr().err


def test_pack_adds_to_and_prunes_the_index(tmp_store):
    """A second lemma packed later joins the same index.json; an orphan leaves it."""
    root, rec_path, sha = tmp_store
    store.pack_proofs(root)
    rec = json.loads(rec_path.read_text())
    parts = store.record_parts(rec_path, rec)
    texts = (f"(assert (not (= #x{i:02x} #x{i:02x})))\n(check-sat)\n" for i in range(256))
    text = next(t for t in texts if store.sha256(t)[0] == sha[0])     # the same pack
    two = _lemma(root / "cache", text)
    loose = {k: v for k, v in rec.items() if k not in ("lemma_count", "parts_sha256")}
    rec_path.write_text(json.dumps(dict(loose, parts=parts + [dict(parts[0], sha256=two)]),
                                   indent=1))
    store.pack_proofs(root)
    pk = store.lemma_pack(root / "cache", sha)
    assert set(store.lemma_index(pk)) == {sha, two}
    assert packs.open_pack(pk).names() == sorted([f"{sha}.smt2", f"{two}.smt2", store.LEMMA_INDEX])
    assert store.lemma_text(two) == text and _check(root) == []
    rec = json.loads(rec_path.read_text())
    rec_path.write_text(json.dumps(dict({k: v for k, v in rec.items() if k not in (
        "lemma_count", "parts_sha256")}, parts=parts), indent=1))
    res = store.pack_proofs(root)
    assert res["pruned"] == [two] and set(store.lemma_index(pk)) == {sha}
    assert packs.open_pack(pk).names() == [f"{sha}.smt2", store.LEMMA_INDEX]
    assert _check(root) == []


def test_check_finds_a_damaged_pack(tmp_store, capsys):
    root, rec_path, sha = tmp_store
    store.pack_proofs(root)
    pk = store.lemma_pack(root / "cache", sha)
    man = packs.manifest_path(pk)
    man.write_text(man.read_text().replace(man.read_text()[:8], "0" * 8, 1))
    problems = _check(root)
    assert any("damaged" in x for x in problems), problems
    assert store.read_lemma(sha) is None
    assert "damaged" in capsys.readouterr().err


def test_check_finds_a_lemma_list_that_differs(tmp_store):
    root, rec_path, sha = tmp_store
    store.pack_proofs(root)
    rec = json.loads(rec_path.read_text())
    rec_path.write_text(json.dumps(dict(rec, parts_sha256="0" * 64), indent=1))
    problems = _check(root)
    assert any("no parts.tar.zst holds its lemma list" in x for x in problems)
    assert any("belongs to no record" in x for x in problems)
    assert store.check_record(rec_path, json.loads(rec_path.read_text()))


def test_store_verbs(tmp_store, capsys):
    root, rec_path, sha = tmp_store
    assert cli.main(["store", "pack"]) == 0
    out = capsys.readouterr().out
    assert "1 lemma lists moved" in out and "1 loose lemmas packed" in out
    pk = store.lemma_pack(root / "cache", sha)
    assert cli.main(["store", "unpack", str(pk), str(root.parent / "out")]) == 0
    capsys.readouterr()
    assert sorted(f.name for f in (root.parent / "out").iterdir()) == [f"{sha}.smt2", "index.json"]
    assert json.loads((root.parent / "out" / "index.json").read_text()) == store.lemma_index(pk)
    assert cli.main(["store", "recheck", str(rec_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"ok    {rec_path}") and "1 of 1 records hold" in out
    assert cli.main(["store", "recheck", str(rec_path), "--no-solve", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "ok"
    # a stale theory hash
    rec = json.loads(rec_path.read_text())
    parts = store.record_parts(rec_path, rec)
    loose = {k: v for k, v in rec.items() if k not in ("lemma_count", "parts_sha256")}
    tid = next(iter(rec["theories"]))
    stale = rec_path.with_name("stale.json")
    stale.write_text(json.dumps(dict(loose, parts=parts, theories={tid: "0" * 64}), indent=1))
    assert cli.main(["store", "recheck", str(stale), "--no-solve"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("STALE") and f"stale: theory {tid} changed" in out
    stale.unlink()
    # a lemma that re-solves SAT
    bad = _lemma(root / "cache", FALSE)
    rec_path.write_text(json.dumps(dict(loose, parts=[dict(parts[0], sha256=bad)]), indent=1))
    assert cli.main(["store", "recheck", str(rec_path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL") and "sat on re-solving" in out
    # bad input
    for argv in (["store", "recheck", str(root / "none.json")],
                 ["store", "recheck", str(root / "cache" / f"{bad}.smt2")],
                 ["store", "recheck", "-j", "0", str(rec_path)],
                 ["store", "nothing"]):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_store_check_verb_names_the_problem(tmp_store, capsys):
    root, rec_path, sha = tmp_store
    assert cli.main(["store", "pack"]) == 0
    capsys.readouterr()
    shutil.rmtree(root / "cache")
    assert cli.main(["store", "check"]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {rec_path}: 1 of its 1 lemmas are in no proofs/cache/" in out
    assert cli.main(["store", "check", "--json"]) == 1
    assert any("fake.json" in x for x in json.loads(capsys.readouterr().out)["problems"])


def test_without_lemma_texts_readers_say_so(tmp_store, monkeypatch):
    """An installed wheel carries no lemma texts: records are still read, recheck says why it
    cannot re-solve their lemmas, nothing crashes."""
    root, rec_path, sha = tmp_store
    store.pack_proofs(root)
    shutil.rmtree(root / "cache")
    monkeypatch.setattr(store, "lemma_texts_installed", lambda: False)
    monkeypatch.setattr(proofs, "lemma_texts_installed", lambda: False)
    rec = json.loads(rec_path.read_text())
    assert store.record_problems(rec_path, rec) == []
    row = proofs.recheck([(rec_path, rec)], solve=False)[0]
    assert row["status"] == "FAIL" and "lemma texts not installed" in row["problems"][0]
