"""The claim engine as a package: one module of mmaformal.query.claims per built-in claim, named
by query.prove's registry, each with its statement and CLI hooks; and the size limits of the
engine's modules (no module over 800 lines, no function over 100)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mmaformal
from mmaformal.query import prove as P
from mmaformal.query.claims import core

ROOT = Path(mmaformal.__file__).resolve().parent

#: the modules of the claim engine whose size is limited
ENGINE = ["mma.py", "trace.py", "query/prove.py", "query/model.py", "query/where.py",
          *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "query" / "claims").glob("*.py")))]


def test_the_registry_names_one_module_per_builtin_claim():
    assert tuple(P.CLAIM_MODULES) == core.CLAIMS
    assert P.ALL_CLAIMS == ("symmetry", "monotonic", "bound", "unobservable")
    for name, mod in P.CLAIM_MODULES.items():
        assert mod.__name__ == f"mmaformal.query.claims.{'equivalence' if name == 'equiv' else name}"
        assert callable(getattr(mod, f"prove_{name}"))
        assert callable(getattr(mod, "from_args", None)) or name == "symmetry"
    for name in P.ALL_CLAIMS:
        assert callable(P.CLAIM_MODULES[name].job)


def test_prove_has_no_claim_logic_left():
    names = {n.name for n in ast.parse((ROOT / "query" / "prove.py").read_text()).body
             if isinstance(n, ast.FunctionDef)}
    assert not {n for n in names if n.startswith("prove_") and n not in (
        "prove_job", "prove_all", "prove_symmetry_many")}
    assert not (ROOT / "query" / "decompose.py").exists()


@pytest.mark.parametrize("rel", ENGINE)
def test_size_limits(rel):
    src = (ROOT / rel).read_text()
    assert len(src.splitlines()) <= 800, rel
    long = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(src))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno - n.lineno + 1 > 100]
    assert not long, long
