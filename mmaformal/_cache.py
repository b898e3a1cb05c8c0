"""Below layer 1, cache: the per-user cache folder and a content-keyed cache of loaded tables.

May import: the Python standard library only (so every layer, isa included, may use it).

``cache_dir()`` is ``$MMAFORMAL_CACHE`` or ``~/.cache/mmaformal`` (compiled kernels live there
too). ``cached(tag, files, build)`` returns ``build()``, pickled under a key that is the sha256
of the bytes of every file in ``files`` (their paths too) and of the Python version (give the
source files of the code that builds the value among ``files``): the catalog and the theory set are checked once per content, and a process
that only needs one instruction (``mmaformal simulate``) unpickles them (~15 ms) instead of
parsing and checking every table (~100 ms).

Invariant: a cached value is returned only when every input file is byte-identical to the one
it was built from; ``build()`` errors are never cached (they propagate, so a malformed table
still fails with its own message); an unreadable, corrupt or unwritable cache is ignored
(the value is built). ``MMAFORMAL_TABLE_CACHE=0`` turns the cache off. Of each tag, the
KEEP most recently written values are kept (older contents are deleted when a new one is
written), so editing the tables does not fill the folder.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

__all__ = ["cache_dir", "cached", "files_key", "KEEP"]

#: values kept per tag
KEEP = 8


def cache_dir() -> Path:
    """$MMAFORMAL_CACHE or ~/.cache/mmaformal (created)."""
    d = Path(os.environ.get("MMAFORMAL_CACHE") or Path.home() / ".cache" / "mmaformal")
    d.mkdir(parents=True, exist_ok=True)
    return d


def files_key(files: Iterable[Path | str]) -> str:
    """sha256 (hex) over the paths and bytes of files and the Python version."""
    h = hashlib.sha256(f"{sys.version}\0".encode())
    for f in files:
        f = Path(f)
        h.update(str(f).encode() + b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def cached(tag: str, files: Iterable[Path | str], build: Callable[[], Any]) -> Any:
    """build(), or the value it returned for byte-identical files (see the module docstring)."""
    if os.environ.get("MMAFORMAL_TABLE_CACHE", "1") == "0":
        return build()
    try:
        key = files_key(files)
        path = cache_dir() / f"{tag}_{key[:32]}.pickle"
    except OSError:
        return build()
    try:
        with path.open("rb") as fh:
            return pickle.load(fh)
    except Exception:           # absent, truncated or of another format: build and overwrite
        pass
    value = build()
    tmp = None
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{tag}_", delete=False) as fh:
            tmp = fh.name
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except Exception:           # a read-only or full disk: the value is still good
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return value
    _prune(path.parent, tag)
    return value


def _prune(d: Path, tag: str) -> None:
    """Delete all but the KEEP newest values of tag (another process may race: ignore it)."""
    try:
        olds = sorted(d.glob(f"{tag}_*.pickle"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for p in olds[KEEP:]:
            p.unlink(missing_ok=True)
    except OSError:
        pass
