"""Tests of the values and paths the verbs accept (mmaformal.args, shared by every verb), of
the messages bad input gets (one line naming the option and the path, exit 2, nothing the
user gave changed), and of the entry points (`mmaformal --help`, `list --instructions`)."""
from __future__ import annotations

import argparse
import os

import numpy as np
import pytest

from mmaformal import args as A
from mmaformal.cli import main

H16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def bad(capsys, *argv, match=()):
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (argv, rc, out, err)
    assert err.count("\n") == 1 and err.startswith("mmaformal"), err
    assert "Traceback" not in err and "[Errno" not in err, err
    for m in (match,) if isinstance(match, str) else match:
        assert m in err, (m, err)
    return err


@pytest.fixture
def tiles(tmp_path):
    rng = np.random.default_rng(0)
    paths = {}
    for n, shape, dt in (("a", (1, 16, 16), np.uint16), ("b", (1, 16, 8), np.uint16),
                         ("c", (1, 16, 8), np.uint32)):
        paths[n] = str(tmp_path / f"{n}.npy")
        np.save(paths[n], (rng.integers(0, 0x7800, shape)).astype(dt))
    return paths


# --------------------------------------------------------------------------------------------
# the types


def test_types_accept_and_refuse(tmp_path):
    assert A.positive_int("3") == 3
    assert A.seconds("0.5") == 0.5
    for f, text in ((A.positive_int, "0"), (A.positive_int, "-3"), (A.positive_int, "x"),
                    (A.seconds, "-3"), (A.seconds, "0"), (A.seconds, "nan"), (A.seconds, "inf"),
                    (A.nonempty, ""), (A.nonempty, "  "), (A.writable_dir, ""),
                    (A.writable_dir, str(tmp_path / "nope")), (A.out_file, ""),
                    (A.out_file, str(tmp_path)), (A.out_file, str(tmp_path / "no" / "f.jsonl")),
                    (A.out_dir, ""), (A.out_dir, str(tmp_path / "no" / "deeper"))):
        with pytest.raises(argparse.ArgumentTypeError):
            f(text)
    f = tmp_path / "file"
    f.write_text("keep")
    with pytest.raises(argparse.ArgumentTypeError, match="a file, not a directory"):
        A.out_dir(str(f))
    with pytest.raises(argparse.ArgumentTypeError, match="not a directory"):
        A.writable_dir(str(f))
    assert f.read_text() == "keep"
    assert A.out_file(str(tmp_path / "new.jsonl")) and not (tmp_path / "new.jsonl").exists()
    assert A.out_dir(str(tmp_path / "new")) and not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]       # nothing left behind


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_proc_is_not_writable():
    with pytest.raises(argparse.ArgumentTypeError, match="not writable"):
        A.writable_dir("/proc")
    with pytest.raises(argparse.ArgumentTypeError, match="not writable"):
        A.out_file("/proc/version")


# --------------------------------------------------------------------------------------------
# the verbs use them


def test_store_empty_and_unwritable(capsys):
    bad(capsys, "--store", "", "list", "sm90/mma.m16n8k16*", match=("--store", "empty"))
    bad(capsys, "list", "--store=", match="--store")
    if os.path.isdir("/proc/self"):
        err = bad(capsys, "--store", "/proc", "list", match=("/proc", "not writable"))
        assert "No such file" not in err


def test_limit_and_counts_must_be_positive(capsys):
    bad(capsys, "distinguish", "sm89/mma.m16n8k16.f32.f16.f16.f32", H16, "--limit", "-3",
        match="--limit")
    bad(capsys, "distinguish", "sm89/mma.m16n8k16.f32.f16.f16.f32", H16, "--count", "0",
        match="--count")
    bad(capsys, "prove", "symmetry", H16, "--jobs", "0", match="--jobs")
    bad(capsys, "accuracy", H16, "--n", "0", match="--n")
    bad(capsys, "accuracy", H16, "--k", "-16", match="--k")


def test_progress_in_a_missing_folder_creates_nothing(capsys, tmp_path):
    missing = tmp_path / "nonexistent" / "dir"
    bad(capsys, "prove", "symmetry", H16, "--progress", str(missing / "p.jsonl"),
        match=("--progress", "no such directory"))
    assert not (tmp_path / "nonexistent").exists()


def test_output_paths_name_the_option(capsys, tmp_path, tiles):
    f = tmp_path / "existing"
    f.write_text("keep")
    bad(capsys, "probes", H16, "--out", str(f), match=("--out", str(f), "not a directory"))
    assert f.read_text() == "keep"
    bad(capsys, "distinguish", "sm89/mma.m16n8k16.f32.f16.f16.f32", H16, "--emit-smt2",
        str(tmp_path), match=("--emit-smt2", str(tmp_path), "directory"))
    if os.path.isdir("/proc/self"):
        err = bad(capsys, "simulate", H16, "--a", tiles["a"], "--b", tiles["b"], "--c", tiles["c"],
                  "--out", "/proc/version", match=("--out", "/proc", "not writable"))
        assert "No such file" not in err


def test_big_endian_npy_is_read_bits_unchanged(capsys, tmp_path, tiles):
    a = np.load(tiles["a"])
    be = tmp_path / "a_be.npy"
    np.save(be, a.astype(">u2"))
    outs = []
    for src in (tiles["a"], str(be)):
        out = tmp_path / f"d{len(outs)}.npy"
        rc, _, err = run(capsys, "simulate", H16, "--a", src, "--b", tiles["b"], "--c", tiles["c"],
                         "--out", str(out), "--device", "cpu")
        assert rc == 0, err
        outs.append(np.load(out))
    assert np.array_equal(outs[0], outs[1])
    assert np.array_equal(np.load(be), a) and np.load(be).dtype == np.dtype(">u2")   # untouched


def test_text_file_is_not_called_pickled(capsys, tmp_path, tiles):
    t = tmp_path / "t.npy"
    t.write_text("hello world\n" * 5)
    err = bad(capsys, "simulate", H16, "--a", str(t), "--b", tiles["b"], "--c", tiles["c"],
              "--out", str(tmp_path / "d.npy"), match=("--a", "not a .npy file"))
    assert "pickle" not in err


def test_unknown_instruction_suggests_full_names(capsys):
    err = bad(capsys, "simulate", "wgmma.m64n8k32.f32.f16", "--a", "x", "--b", "x", "--c", "x",
              "--out", "x")
    sugg = err.split("closest known:")[1]
    names = [s.strip() for s in sugg.split(",")]
    assert names and all("/" in n for n in names), names


# --------------------------------------------------------------------------------------------
# entry points


def test_help_lists_every_verb_and_the_exit_codes(capsys):
    from mmaformal import cli
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    import re
    listing = out.split("options:")[0]
    for verb in list(cli._MODULE_VERBS) + list(cli._VERBS):
        m = re.search(rf"^ +{verb}(?: +(\S.*)|\n +(\S.*))$", listing, re.M)   # name + summary
        assert m, verb
    assert "list, simulate, compare, explain." not in out       # not a partial list
    assert "exit codes" in out.lower()
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "130 "):
        assert f"\n  {code}" in out, code


def test_list_instructions(capsys):
    from mmaformal import isa
    rc, out, _ = run(capsys, "list", "--instructions")
    assert rc == 0 and out.split() == [i.name for i in isa.instructions()]
    rc, out, _ = run(capsys, "list", "--instructions", "--arch", "hopper", "wgmma.m64n8k32*")
    assert rc == 0
    names = out.split()
    assert names and all(n.startswith("sm90/wgmma.m64n8k32") for n in names)
    rc, out, _ = run(capsys, "list", "--instructions", "--arch", "sm89", "--json")
    assert rc == 0 and [n.split("/")[0] for n in __import__("json").loads(out)] == \
        ["sm89"] * len(isa.instructions(arch="sm89"))
    bad(capsys, "list", "--instructions", "--arch", "sm1", match="unknown arch")
    bad(capsys, "list", "--instructions", "nosuchthing*", match="nothing matches")
