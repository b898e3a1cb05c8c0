"""Tests of the import structure of mmaformal/: imports run in one direction.

Four rules, read from the source (AST) of every module, imports at module level and inside
functions alike:

1. no cycle in the module graph (graphlib's topological sort names one if there is one);
2. no import runs up the layers of docs/design.md (bits < fp < mma < isa/theory < front ends), and
   inside the query layer none runs up its own order (solvers < frame < model < the pieces
   built on the model < the stores < the verbs < infer);
3. `from M import name` takes a name that M defines (or a submodule of package M), never one
   that M only re-exports: the verb modules re-export for scripts and tests, not for mmaformal;
4. no module reads another module's private name (`from M import _x`, `M._x`): what another
   module needs has a public name where it is defined.

Each checker is also run on a small synthetic package with a planted cycle, up-import and
re-export and private reach, so that it is seen to fail.
"""
from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

import mmaformal

#: the package under test (the checkout's mmaformal/, or the installed one's when the tests run
#: against a wheel)
ROOT = Path(mmaformal.__file__).resolve().parent

#: docs/design.md "Layers": the layer of each module (the first matching prefix wins). _cache (a
#: content-keyed file cache), paths (where data is read and written; stdlib only) and compile
#: (the compiled back-end of the bits vocabulary) sit with
#: bits; sparse (the metadata rule of the sparse instructions) sits with isa and theory; every
#: other module is a front end.
LAYERS = [
    ("mmaformal._cache", 1), ("mmaformal.paths", 1), ("mmaformal.packs", 1), ("mmaformal.bits", 1),
    ("mmaformal.args", 1),          # the argparse types every verb shares (stdlib only)
    ("mmaformal.compile", 1),
    ("mmaformal.fp", 2),
    ("mmaformal.mma", 3),
    ("mmaformal.trace", 3),         # the typed records of the white-box trace (mma, theory)
    ("mmaformal.isa", 4), ("mmaformal.theory", 4),
    ("mmaformal.theory_check", 4),  # the schema of the theory files, below theory
    ("mmaformal.sparse", 4),        # the sparse metadata rule, beside isa and theory (issue 14)
    ("mmaformal.profile", 5),       # platform profiles (GEMM library schedules): a front end
    ("mmaformal.torch", 5),
    ("mmaformal.torch_gemm", 5),  # the exact GEMMs on tensors that torch dispatches to
    ("mmaformal.calibrate", 5),     # learns profiles against the GPU (executes them by torch)
    ("mmaformal.calibrate_calls", 5), ("mmaformal.calibrate_native", 5),  # its calls, inputs,
    ("mmaformal.calibrate_fit", 5),                                       # natives and search
    ("mmaformal", 5),
]

#: the order inside the query layer (query/__init__ and each module docstring say the same); a
#: module of a query sub-package takes its own place when it has one here (query/claims/bound:
#: "claims.bound"), else its package's (query/claims/api: "claims"; `qname`)
QUERY = {
    "solvers": 0,
    "frame": 1,
    "model": 2, "campaign": 2,
    "where": 3,                     # the --where constraint language (on model.Inputs)
    "store": 3, "search": 3, "claims": 3, "pool": 3, "family": 3, "ieee": 3,
    "cache": 4, "witness_search": 4, "minimize": 4,
    "cex": 5,
    # the decomposed proofs of prove's claims: the traced structure and the lemma runs
    # (claims.common), the lemmas of each operation family (exact_fdpa: prove exact's)
    "claims.common": 5, "claims.bound_fdpa": 5, "claims.bound_tr": 5,
    "claims.monotonic_fdpa": 5, "claims.monotonic_tr": 5, "claims.exact_fdpa": 5,
    "proofs": 6,
    # prove's claims, one module each: statement, broken twin, lemmas (records: proofs);
    # exact: the user claim of the Claim API that prove names (prove.USER_CLAIMS)
    "claims.symmetry": 7, "claims.equivalence": 7, "claims.unobservable": 7,
    "claims.monotonic": 7, "claims.bound": 7, "claims.exact": 7,
    "distinguish": 8, "prove": 8, "probes": 8,
    "infer": 9, "settle": 9,
    # the parts of infer: its oracles, the pool and engine, the loop, the report
    "infer_oracle": 9, "infer_engine": 9, "infer_loop": 9, "infer_report": 9,
}


def qname(rel: str) -> str:
    """The QUERY key of a module path below mmaformal.query: the path itself when QUERY places
    it (a sub-package module with a place of its own), else its first component."""
    return rel if rel in QUERY else rel.split(".")[0]


def module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def scan(root: Path) -> tuple[dict[str, Path], dict[str, set[str]], list[tuple]]:
    """(modules, graph {module: imported modules}, [(module, lineno, from-module, name)] of
    every `from M import name` inside the package)."""
    mods = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    froms = []
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                targets = []
                for a in node.names:
                    sub = f"{src}.{a.name}"
                    if sub in mods:
                        targets.append(sub)
                    else:
                        targets.append(src)
                        if src in mods:
                            froms.append((m, node.lineno, src, a.name))
            else:
                continue
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != m:
                    graph[m].add(t)
    return mods, graph, froms


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        return list(e.args[1])
    return None


def layer(m: str) -> int:
    for prefix, n in LAYERS:
        if m == prefix or m.startswith(prefix + "."):
            return n
    raise KeyError(m)


def up_imports(graph: dict[str, set[str]], query: dict[str, int] = QUERY,
               qpkg: str = "mmaformal.query") -> list[str]:
    bad = []
    for a, bs in sorted(graph.items()):
        for b in sorted(bs):
            if layer(b) > layer(a):
                bad.append(f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})")
            qa, qb = (qname(x[len(qpkg) + 1:]) if x.startswith(qpkg + ".") else None for x in (a, b))
            if qa is not None and qb is not None:
                if qa not in query or qb not in query:
                    bad.append(f"{qa if qa not in query else qb}: not placed in the query order")
                elif query[qb] > query[qa]:
                    bad.append(f"query.{qa} ({query[qa]}) imports query.{qb} ({query[qb]})")
    return bad


def defined(path: Path) -> set[str]:
    """Names a module defines at its top level (def, class, assignment), not those it imports."""
    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out.add(n.id)
    return out


def reexported(mods: dict[str, Path], froms: list[tuple]) -> list[str]:
    cache: dict[str, set[str]] = {}
    bad = []
    for m, line, src, name in froms:
        if mods[src].name == "__init__.py":
            continue                      # a package's public face: its re-exports are the point
        names = cache.setdefault(src, defined(mods[src]))
        if name != "*" and name not in names:
            bad.append(f"{m}:{line} takes {name!r} from {src}, which does not define it")
    return bad


def private_reaches(mods: dict[str, Path]) -> list[str]:
    """Every read of another package module's private name: `from M import _x`, or `M._x` through
    a name bound to module M by an import (dunders are not private). A module's private names
    are its own; what another module needs gets a public name in its defining module."""
    bad = []
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        tree = ast.parse(p.read_text(), str(p))
        alias: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in mods and a.asname:
                        alias[a.asname] = a.name
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                for a in node.names:
                    if f"{src}.{a.name}" in mods:
                        alias[a.asname or a.name] = f"{src}.{a.name}"
                    elif (src in mods and src != m and a.name.startswith("_")
                          and not a.name.startswith("__")):
                        bad.append(f"{m}:{node.lineno} imports {src}.{a.name}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and alias.get(node.value.id, m) != m and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                bad.append(f"{m}:{node.lineno} reads {alias[node.value.id]}.{node.attr}")
    return bad


# --------------------------------------------------------------------------------------------
# the package


@pytest.fixture(scope="module")
def package():
    return scan(ROOT)


def test_graph_is_read(package):
    mods, graph, froms = package
    # the scan sees function-level imports too (cli loads verbs lazily; compile is imported
    # inside functions of classes and simulate)
    assert "mmaformal.compile" in graph["mmaformal.classes"]
    assert "mmaformal.query.model" in graph["mmaformal.query.distinguish"]
    assert len(mods) > 30 and froms


def test_no_cycle(package):
    c = cycle(package[1])
    assert c is None, "import cycle: " + " -> ".join(c)


def test_every_module_has_a_layer(package):
    for m in package[0]:
        layer(m)
        if m.startswith("mmaformal.query."):
            assert qname(m[len("mmaformal.query."):]) in QUERY, f"{m}: add it to QUERY (and to query/__init__)"


def test_no_import_runs_up_the_layers(package):
    assert up_imports(package[1]) == []


def test_no_name_is_taken_through_a_module_that_only_reexports_it(package):
    mods, _, froms = package
    assert reexported(mods, froms) == []


def test_query_order_is_documented():
    doc = (ROOT / "query" / "__init__.py").read_text()
    for name in QUERY:
        assert name in doc, name


# --------------------------------------------------------------------------------------------
# the checkers fail on what they are meant to catch


def _pkg(tmp_path, files: dict[str, str]) -> Path:
    root = tmp_path / "mmaformal"
    for rel, text in {"__init__.py": "", "query/__init__.py": "", **files}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_checkers_catch_a_planted_cycle_inside_a_function(tmp_path):
    root = _pkg(tmp_path, {
        "query/model.py": "X = 1\n",
        "query/search.py": "from .model import X\n\ndef f():\n    from . import prove\n",
        "query/prove.py": "from .search import f\n",
    })
    c = cycle(scan(root)[1])
    assert c is not None and {"mmaformal.query.search", "mmaformal.query.prove"} <= set(c)


def test_checkers_catch_an_up_import_and_a_reexport(tmp_path):
    root = _pkg(tmp_path, {
        "fp.py": "def g():\n    from .mma import h\n",
        "mma.py": "def h():\n    pass\n",
        "query/model.py": "Model = object\n",
        "query/frame.py": "from .model import Model\n",
        "query/distinguish.py": "from .model import Model\n",
        "query/prove.py": "from .distinguish import Model\n",
        "query/newthing.py": "from . import frame\n",
    })
    mods, graph, froms = scan(root)
    bad = up_imports(graph)
    assert any("mmaformal.fp (layer 2) imports mmaformal.mma (layer 3)" in b for b in bad)
    assert any("query.frame (1) imports query.model (2)" in b for b in bad)
    assert any("newthing" in b for b in bad)
    assert reexported(mods, froms) == [
        "mmaformal.query.prove:1 takes 'Model' from mmaformal.query.distinguish, which does not "
        "define it"]
    assert cycle(graph) is None


def test_no_module_reads_another_modules_private_names(package):
    assert private_reaches(package[0]) == []


def test_checker_catches_a_private_reach(tmp_path):
    root = _pkg(tmp_path, {
        "fp.py": "_table = {}\n__all__ = []\n\ndef _f():\n    pass\n",
        "mma.py": "from . import fp as _fp\nfrom .fp import _f, __all__\n\n"
                  "def g():\n    return _fp._table, _fp.__all__\n",
        "bits.py": "_own = 1\n\ndef h():\n    return _own\n",
    })
    bad = private_reaches(scan(root)[0])
    assert bad == ["mmaformal.mma:2 imports mmaformal.fp._f",
                   "mmaformal.mma:5 reads mmaformal.fp._table"]
