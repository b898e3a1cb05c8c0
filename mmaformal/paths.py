"""Below layer 1, paths: where mmaformal reads its shipped data and where it writes records.

May import: the Python standard library only (so every layer may use it, like mmaformal._cache).

Shipped data (read only): ``theories/`` (with ``families/``), ``proofs/``, ``counterexamples/``.
Run from a checkout (no ``mmaformal/_data`` beside this file; the folders sit beside the package
folder, as in the repository), they are the checkout's top-level folders. Installed from a wheel
or an sdist, they are ``mmaformal/_data/<name>/``: pyproject.toml maps the repository's
top-level folders there when the wheel is built. ``shipped(name)`` gives either.

The store (where the verbs write records, and where readers look besides the shipped records),
chosen by, in this order:

1. ``mmaformal --store DIR`` (the cli checks it and sets ``$MMAFORMAL_STORE``, so worker
   processes see the same store),
2. ``$MMAFORMAL_STORE``,
3. the checkout itself when run from one (the project's own ``proofs/`` and
   ``counterexamples/``, as before the store existed),
4. ``$XDG_DATA_HOME/mmaformal``, else ``~/.local/share/mmaformal`` (created when first written).

A store has the repository's layout: ``proofs/<group>/``, ``proofs/cache/``,
``counterexamples/<kind>/``, ``counterexamples/hw/<campaign>/`` (a GPU run writes it loose; the
repository ships it packed, ``<campaign>.tar.zst``: mmaformal.hw.campaigns reads either), plus
``probes/<target>/``.

Invariants: nothing is written under an installed package (site-packages): its default store is
the per-user folder, and a store inside the installed package is refused. A store the user
names (flag or environment) is never created: it must be an existing, writable directory, else
StoreError, a ValueError whose message is one line (the cli prints it and exits 2). Writability
is tested by creating a file there, not by permission bits (root passes those).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

__all__ = ["StoreError", "PACKAGE", "checkout", "shipped", "store", "store_root", "check_store",
           "use_store", "record_dirs", "default_store", "report", "ENV"]

#: the environment variable that names the store
ENV = "MMAFORMAL_STORE"

#: the package folder (mmaformal/)
PACKAGE = Path(__file__).resolve().parent
_DATA = PACKAGE / "_data"


class StoreError(ValueError):
    """A store that cannot be used (missing, not a directory, not writable); one line."""


def checkout() -> Path | None:
    """The repository root when the package runs from a checkout (editable install or
    PYTHONPATH): the folder holding mmaformal/, theories/ and pyproject.toml; else None."""
    if _DATA.is_dir():
        return None
    root = PACKAGE.parent
    if (root / "theories").is_dir() and (root / "pyproject.toml").is_file():
        return root
    return None


def shipped(name: str | None = None) -> Path:
    """The shipped data folder ``name`` ("theories", "proofs", "counterexamples"), or the root
    that holds them: mmaformal/_data when installed, the checkout when run from one. Never
    raises (module constants are made from it at import): in a package that lacks its data it
    is the absent mmaformal/_data/<name>, and the reader that needs it says so (one line)."""
    root = checkout() or _DATA
    return root / name if name else root


def default_store() -> Path:
    """The per-user store: $XDG_DATA_HOME/mmaformal or ~/.local/share/mmaformal."""
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "mmaformal"


def store_root() -> tuple[Path, str]:
    """(the store's path, how it was chosen: "env", "checkout" or "user"), without checking or
    creating it (see ``store`` for that)."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser(), "env"
    co = checkout()
    if co is not None:
        return co, "checkout"
    return default_store(), "user"


def check_store(path: "str | Path") -> Path:
    """An existing, writable directory outside the installed package (resolved), else
    StoreError."""
    p = Path(path).expanduser()
    if not p.exists():
        raise StoreError(f"store {p}: no such directory (create it, or choose "
                         f"another with --store or ${ENV})")
    if not p.is_dir():
        raise StoreError(f"store {p}: not a directory")
    p = p.resolve()
    if _DATA.is_dir() and (p == PACKAGE or PACKAGE in p.parents):
        raise StoreError(f"store {p}: inside the installed package; choose a folder "
                         f"of your own with --store or ${ENV}")
    try:
        with tempfile.TemporaryFile(dir=p, prefix=".mmaformal-write-test-"):
            pass
    except OSError:
        raise StoreError(f"store {p}: not writable (no file can be created there)") from None
    return p


def use_store(path: "str | Path") -> Path:
    """Check ``path`` and make it the store of this process and its children (--store)."""
    p = check_store(path)
    os.environ[ENV] = str(p)
    return p


def store(name: str | None = None) -> Path:
    """Where to write: the store's folder ``name`` ("proofs", "counterexamples", "probes"), or
    its root. A store named by flag or environment is checked (never created); the per-user
    default is created. The sub-folder itself is left to the writer (``mkdir(parents=True)``)."""
    root, how = store_root()
    if how == "user":
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"store {root}: cannot create it ({e.strerror or e}); "
                             f"choose another with --store or ${ENV}") from None
    root = check_store(root)
    return root / name if name else root


def record_dirs(name: str) -> list[Path]:
    """Folders to read records ``name`` from: the store's (when it exists), then the shipped
    one; one entry when they are the same folder (a checkout)."""
    out: list[Path] = []
    root, how = store_root()
    if how != "checkout" and not root.is_dir():
        if how == "env":            # named by the user: must exist (exit 2, one line)
            check_store(root)
    else:
        out.append((root / name).resolve())
    s = shipped(name).resolve()
    if s not in out:
        out.append(s)
    return out


_REPORTED: set[str] = set()


def report(path: "str | Path", why: str) -> None:
    """Say once per process, on stderr, that a record is not used and why (a shipped or stored
    record that fails its check is reported, never silently used nor silently dropped)."""
    key = f"{path}\0{why}"
    if key in _REPORTED:
        return
    _REPORTED.add(key)
    print(f"mmaformal: warning: record {path} not used: {why}", file=sys.stderr)
