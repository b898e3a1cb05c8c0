"""The `mmaformal` command is the one entry point: every verb and sub-verb (walked from the
parser itself) answers --help with exit 0, no module under mmaformal/ but cli.py and __main__.py
has a `__main__` block (a static check, run on a planted one too), and the hardware sub-verbs
that need a GPU say so in one line (exit 2) where there is none."""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

import mmaformal
from mmaformal import cli

ROOT = Path(mmaformal.__file__).resolve().parent
#: the modules that may be run as a program: the command itself and `python -m mmaformal`
ENTRY_POINTS = {"cli.py", "__main__.py"}


def _sub_actions(p: argparse.ArgumentParser):
    return [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]


def verb_paths() -> list[tuple[str, ...]]:
    """Every verb and sub-verb path of the command, read from its parser: ("prove",),
    ("prove", "ieee"), ("hw", "record"), ..."""
    out = []

    def walk(p, path):
        for act in _sub_actions(p):
            for name, sp in act.choices.items():
                out.append(path + (name,))
                walk(sp, path + (name,))
    walk(cli._parser([]), ())
    return out


def test_the_walk_finds_the_new_sub_verbs():
    paths = set(verb_paths())
    for p in [("prove", "ieee"), ("store", "replay"), ("hw", "run"), ("hw", "validate"),
              ("hw", "record"), ("hw", "wgmma-sp"), ("hw", "selfcheck"), ("hw", "sass"),
              ("hw", "zero-probes")]:
        assert p in paths, p
    for v in list(cli._VERBS) + list(cli._MODULE_VERBS):
        assert (v,) in paths, v


@pytest.mark.parametrize("path", verb_paths(), ids=" ".join)
def test_every_verb_and_sub_verb_help_exits_0(path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([*path, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: mmaformal {' '.join(path)}"), out[:200]


def main_blocks(root: Path) -> list[str]:
    """The modules under root (but the entry points) with an `if __name__ == "__main__":`
    block at any depth, as 'path:line'."""
    bad = []
    for f in sorted(root.rglob("*.py")):
        if f.relative_to(root).as_posix() in ENTRY_POINTS:
            continue
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
                names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
                consts = {n.value for n in ast.walk(node.test) if isinstance(n, ast.Constant)}
                if "__name__" in names and "__main__" in consts:
                    bad.append(f"{f.relative_to(root)}:{node.lineno}")
    return bad


def test_no_module_but_the_command_has_a_main_block():
    assert main_blocks(ROOT) == [], ("run it as a verb of `mmaformal` (an add_parser/run pair "
                                     "registered in cli.py or hw/cli.py), not as python -m")


def test_the_main_block_check_fails_on_a_planted_one(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "cli.py").write_text('if __name__ == "__main__":\n    pass\n')
    (pkg / "ok.py").write_text("x = __name__\n")
    (pkg / "sub" / "tool.py").write_text("def f():\n    pass\n\n\nif '__main__' == __name__:\n"
                                         "    f()\n")
    assert main_blocks(pkg) == ["sub/tool.py:5"]


H16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"


@pytest.mark.parametrize("argv", [
    ["hw", "run", H16, "--a", "A.npy", "--b", "B.npy", "--c", "C.npy", "--out", "D.npy"],
    ["hw", "validate", H16, "--tests", "8"],
    ["hw", "record", H16, "--out", "{tmp}/rec"],
    ["hw", "record", "--probe", "--sparse-preset", "--out", "{tmp}/rec"],
    ["hw", "selfcheck", "--out", "{tmp}/sc"],
    ["hw", "wgmma-sp", "--out", "{tmp}/wsp"],
], ids=lambda a: " ".join(a[:2]))
def test_gpu_sub_verbs_need_a_gpu_in_one_line(argv, tmp_path, capsys):
    from mmaformal.hw import runner
    if runner.available()[0]:
        pytest.skip("a GPU is here")
    rc = cli.main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("mmaformal: error: no usable GPU: "), err
    assert list(tmp_path.iterdir()) == []            # nothing written before the GPU is found


@pytest.mark.parametrize("argv", [
    ["hw", "record", "--out", "{tmp}/r"],                        # nothing named
    ["hw", "record", "--replay", "{tmp}/none.json", "--out", "{tmp}/r"],
    ["hw", "wgmma-sp", "--out", "{tmp}/r", "--replay", "{tmp}/none.json"],
    ["hw", "validate"],
    ["hw", "validate", "sm80/mma.m16n8k16.f32.f16.f16.f32"],
    ["hw", "validate", H16, "--shard", "1/1"],
    ["hw", "validate", H16, "--classes", "normal,nope"],
    ["hw", "selfcheck", "--n", "7"],
    ["hw", "selfcheck", "--match", "("],
    ["hw", "zero-probes", "--out", "{tmp}/no/such/dir/z.npz"],
    ["prove", "ieee", "--ops", "add,div"],
    ["prove", "ieee", "--formats", "f17"],
    ["prove", "ieee", "--modes", "RNE,RTZ"],
    ["prove", "ieee", "--jobs", "-1", "--ops", "add", "--formats", "f16", "--modes", "RNE"],
    ["store", "replay", "{tmp}/none.json"],
    ["store", "replay", "--backends", "int,gpu"],
], ids=lambda a: " ".join(a[:3]))
def test_sub_verbs_bad_input_is_one_line_exit_2(argv, tmp_path, capsys):
    rc = cli.main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and err.startswith("mmaformal") and "Traceback" not in err, err


def test_zero_probes_writes_the_recorded_scan_tiles(tmp_path, capsys):
    import numpy as np
    from mmaformal.hw import zero_probes
    assert cli.main(["hw", "zero-probes", "--out", str(tmp_path / "z")]) == 0
    assert "wrote" in capsys.readouterr().out
    z = np.load(tmp_path / "z.npz")
    for name in zero_probes.PLANS:
        assert z[f"{name}|a"].shape[0] == len(z[f"{name}|j"])
