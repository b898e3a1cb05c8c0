"""mmaformal.paths: where shipped data is read and where records are written (the store).

Store selection (--store, then $MMAFORMAL_STORE, then the checkout, then the per-user folder),
the one-line exit 2 for a missing or unwritable store, readers that see the store's and the
shipped records and report a record that fails its check, and `mmaformal --version`.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mmaformal import paths

ENV = paths.ENV
H80 = "sm80.f16.f32@sm80/mma.m16n8k16.f32.f16.f16.f32"
H90 = "sm90.f16.f32@sm90/mma.m16n8k16.f32.f16.f16.f32"


def _cli(*args, env=None, cwd=None):
    e = dict(os.environ)
    e.pop(ENV, None)
    e.update(env or {})
    if paths.checkout() is not None:     # the package under test, not another installed one
        e["PYTHONPATH"] = str(paths.PACKAGE.parent) + os.pathsep + e.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "mmaformal", *args], capture_output=True,
                          text=True, env=e, cwd=cwd, timeout=300)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """paths as an installed package sees them: a mmaformal/_data folder exists."""
    data = tmp_path / "pkg" / "_data"
    (data / "proofs").mkdir(parents=True)
    monkeypatch.setattr(paths, "_DATA", data)
    monkeypatch.setattr(paths, "PACKAGE", data.parent)
    monkeypatch.delenv(ENV, raising=False)
    return data


def _unwritable_dir(tmp_path) -> Path:
    """A directory this process cannot create a file in (root ignores mode bits: use /proc)."""
    if os.geteuid() == 0:
        return Path("/proc")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    return d


def test_module_imports_stdlib_only():
    tree = ast.parse(Path(paths.__file__).read_text())
    assert ast.get_docstring(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module.split(".")[0] in {"__future__", "pathlib"}
        elif isinstance(node, ast.Import):
            assert {a.name for a in node.names} <= {"os", "sys", "tempfile"}


def test_shipped_data_is_found():
    root = paths.shipped()
    if paths.checkout() is None:        # the tests run against an installed wheel
        assert root == paths.PACKAGE / "_data"
    else:
        assert paths.checkout() == root == paths.PACKAGE.parent
    assert sorted(p.name for p in paths.shipped("theories").glob("*.toml"))
    assert list((paths.shipped("theories") / "families").glob("*.toml"))
    assert (paths.shipped("proofs") / "cache").is_dir()
    assert (paths.shipped("counterexamples") / "hw").is_dir()


def test_store_default_in_a_checkout_is_the_checkout(monkeypatch):
    if paths.checkout() is None:
        pytest.skip("the tests run against an installed package (test_installed_default_is_the_per_user_folder)")
    monkeypatch.delenv(ENV, raising=False)
    assert paths.store_root() == (paths.checkout(), "checkout")
    assert paths.store("proofs") == paths.checkout().resolve() / "proofs"
    assert paths.record_dirs("proofs") == [(paths.checkout() / "proofs").resolve()]


def test_store_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path))
    assert paths.store() == tmp_path.resolve()
    assert paths.store("counterexamples") == tmp_path.resolve() / "counterexamples"
    # readers: the store's folder first, then the shipped one
    assert paths.record_dirs("proofs") == [tmp_path.resolve() / "proofs",
                                           paths.shipped("proofs").resolve()]


def test_installed_default_is_the_per_user_folder(installed, tmp_path, monkeypatch):
    assert paths.checkout() is None and paths.shipped() == installed
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert paths.store_root() == (tmp_path / "xdg" / "mmaformal", "user")
    assert paths.store() == (tmp_path / "xdg" / "mmaformal").resolve()     # created
    assert paths.record_dirs("proofs")[1] == (installed / "proofs").resolve()
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.default_store() == tmp_path / "home" / ".local" / "share" / "mmaformal"


def test_installed_package_is_never_a_store(installed):
    with pytest.raises(paths.StoreError, match="inside the installed package"):
        paths.check_store(installed)
    with pytest.raises(paths.StoreError, match="inside the installed package"):
        paths.check_store(installed / "proofs")


def test_bad_stores_raise_one_line(tmp_path, monkeypatch):
    for bad, why in [(tmp_path / "missing", "no such directory"),
                     (Path(__file__), "not a directory"),
                     (_unwritable_dir(tmp_path), "not writable")]:
        with pytest.raises(paths.StoreError, match=why) as e:
            paths.check_store(bad)
        assert "\n" not in str(e.value)
        monkeypatch.setenv(ENV, str(bad))       # the environment is checked when used
        with pytest.raises(paths.StoreError, match=why):
            paths.store("proofs")
    assert not (tmp_path / "missing").exists()  # a named store is never created


def test_cli_store_flag_before_or_after_the_verb(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    r = _cli("--store", str(a), "distinguish", H80, H90, "--raw", "--save", env={ENV: str(b)})
    assert r.returncode == 0, r.stderr
    saved = list(a.glob("counterexamples/distinguish/*.json"))
    assert len(saved) == 1 and not list(b.iterdir())            # the flag wins over $ENV
    rec = json.loads(saved[0].read_text())
    assert [m["theory"] for m in rec["models"]] == ["sm80.f16.f32", "sm90.f16.f32"]
    r = _cli("distinguish", H80, H90, "--raw", "--save", f"--store={b}")
    assert r.returncode == 0, r.stderr
    assert len(list(b.glob("counterexamples/distinguish/*.json"))) == 1


@pytest.mark.parametrize("how", ["flag", "env"])
def test_cli_missing_or_unwritable_store_exits_2(tmp_path, how):
    for bad in (tmp_path / "missing", _unwritable_dir(tmp_path)):
        if how == "flag":
            r = _cli("--store", str(bad), "distinguish", H80, H90, "--raw", "--save")
        else:
            r = _cli("distinguish", H80, H90, "--raw", "--save", env={ENV: str(bad)})
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
        assert str(bad) in r.stderr and ("no such directory" in r.stderr or "not writable" in r.stderr)
    r = _cli("list", "--store")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_probes_write_to_the_store_by_default(tmp_path):
    r = _cli("probes", "sm80/mma.m16n8k8.f32.f16.f16.f32", env={ENV: str(tmp_path)})
    assert r.returncode == 0, r.stderr
    man = tmp_path / "probes" / "sm80_mma.m16n8k8.f32.f16.f16.f32" / "manifest.json"
    assert json.loads(man.read_text())["instruction"] == "sm80/mma.m16n8k8.f32.f16.f16.f32"


def test_readers_see_store_and_shipped_records_and_report_bad_ones(tmp_path, monkeypatch, capsys):
    from mmaformal.query import store
    monkeypatch.setenv(ENV, str(tmp_path))
    shipped = store.read_proofs("equiv")
    assert shipped and all(paths.shipped("proofs") in p.parents for p, _ in shipped)
    # a store record that names the shipped one's query but was edited: reported, left out
    p0, rec0 = shipped[0]
    d = tmp_path / "proofs" / "equiv"
    d.mkdir(parents=True)
    good = dict(rec0, claim="a copy")
    (d / "copy.json").write_text(json.dumps(good))
    (d / rec0["query"]).write_text((p0.parent / rec0["query"]).read_text())
    (d / "edited.json").write_text(json.dumps(dict(rec0, query="edited.smt2")))
    (d / "edited.smt2").write_text("(check-sat)\n")
    recs = store.read_proofs("equiv")
    names = [p.name for p, _ in recs]
    assert "copy.json" in names and "edited.json" not in names
    assert len(recs) == len(shipped) + 1
    err = capsys.readouterr().err
    assert "edited.json not used" in err and "does not hash" in err
    # a proved lemma whose query was edited is not reused
    from mmaformal import packs
    sha = packs.open_pack(paths.shipped("proofs") / "cache" / store.LEMMA_PACKS[0]).names()[0][:64]
    assert store.read_lemma(sha).status == "unsat"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / f"{sha}.json").write_text(json.dumps({"status": "unsat", "solver": "z3", "seconds": 1}))
    (bad / f"{sha}.smt2").write_text("(check-sat)\n")
    assert store.read_lemma(sha, [bad]) is None
    assert "does not hash to its name" in capsys.readouterr().err


def test_version_lists_package_and_solvers(monkeypatch):
    from importlib import metadata

    from mmaformal import __version__, cli
    text = cli.version_text()
    lines = text.splitlines()
    assert lines[0] == f"mmaformal {__version__}"
    for name, dist in cli.SOLVER_DISTS.items():
        assert f"{name} {metadata.version(dist)}" in lines
    real = metadata.version

    def fake(dist):
        if dist == "cvc5":
            raise metadata.PackageNotFoundError(dist)
        return real(dist)
    monkeypatch.setattr(metadata, "version", fake)
    assert "cvc5 not installed" in cli.version_text().splitlines()
    r = _cli("--version")
    assert r.returncode == 0 and r.stdout.startswith(f"mmaformal {__version__}\n")
    assert "z3 " in r.stdout and "bitwuzla " in r.stdout and "cvc5 " in r.stdout


def test_hw_validate_records_into_the_store_by_default(tmp_path, monkeypatch):
    """No GPU here: the runner says one is there and validate.campaigns is replaced by a
    recorder, so this checks where `hw validate` without --out sends its records."""
    from mmaformal import cli
    from mmaformal.hw import runner, validate
    seen = []
    monkeypatch.setattr(runner, "available", lambda: (True, ""))
    monkeypatch.setattr(validate, "campaigns", lambda names, a: seen.append((names, a.out)) or 0)
    monkeypatch.setenv(ENV, str(tmp_path))
    assert cli.main(["hw", "validate", "sm90/mma.m16n8k16.f32.f16.f16.f32", "--tests", "8"]) == 0
    out = Path(seen[0][1])
    assert out.parent == tmp_path.resolve() / "counterexamples" / "hw"
    assert out.name.endswith("-validate")
    assert cli.main(["hw", "validate", "sm90/mma.m16n8k16.f32.f16.f16.f32", "--out", "x"]) == 0
    assert str(seen[1][1]) == "x"
    monkeypatch.setattr(runner, "available", lambda: (False, "no CuPy"))
    assert cli.main(["hw", "validate", "sm90/mma.m16n8k16.f32.f16.f16.f32"]) == 2
    assert len(seen) == 2 and not list((tmp_path / "counterexamples").glob("hw/*"))


def test_pyproject_packages_cover_the_tree():
    """Every package folder of mmaformal/ is in pyproject's explicit package list (a new
    sub-package left out would be missing from the wheel), and the shipped folders are mapped."""
    co = paths.checkout()
    if co is None:
        pytest.skip("runs in a checkout (pyproject.toml)")
    import tomllib
    st = tomllib.loads((co / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(st["packages"])
    found = {".".join(p.parent.relative_to(co).parts) for p in (co / "mmaformal").rglob("__init__.py")}
    assert found <= listed, f"not in pyproject.toml [tool.setuptools] packages: {sorted(found - listed)}"
    for name in ("theories", "proofs", "counterexamples"):
        assert st["package-dir"][f"mmaformal._data.{name}"] == name
        assert f"mmaformal._data.{name}" in listed


def test_proof_record_checker_finds_lemmas_in_the_store_and_shipped(tmp_path, monkeypatch):
    """mmaformal.query.proofs.check_record on a shipped decomposed proof (its lemmas in the
    shipped proofs/cache), and on a copy in a store that has no proofs/cache of its own."""
    from mmaformal.query import proofs
    monkeypatch.setenv(ENV, str(tmp_path))
    path = next(p for p in sorted(paths.shipped("proofs").glob("symmetry/*.json"))
                if json.loads(p.read_text()).get("method") == "decomposed")
    rec = json.loads(path.read_text())
    assert proofs.check_record(path, rec) == []
    copy = tmp_path / "proofs" / "symmetry" / path.name
    copy.parent.mkdir(parents=True)
    copy.write_text(path.read_text())
    assert proofs.check_record(copy, rec) == []
    from mmaformal.query.store import record_parts
    bad = dict(rec, parts=[dict(record_parts(path, rec)[0], sha256="0" * 64)])
    assert any("in no proofs/cache/" in x for x in proofs.check_record(copy, bad))
