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

Checked files (compiled kernels): ``write_sum(path)`` records the size and sha256 of a file
beside it (``<stem>.sum``), ``sum_ok(path)`` is true only when the file still has both (a file
without a record, cut short, emptied or overwritten is damaged); ``file_lock(path)`` is an
exclusive inter-process lock (POSIX ``flock``; a no-op where there is none) under which a
builder checks again, builds into a temporary file and renames it into place, so that
concurrent builders never see a half-written file.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

__all__ = ["cache_dir", "cached", "files_key", "KEEP", "write_atomic", "write_sum", "sum_ok",
           "file_lock"]

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


# --------------------------------------------------------------------------------------------
# checked files: a size + sha256 record beside each, atomic writes, a per-file lock


def _digest(path: Path) -> tuple[int, str]:
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
            n += len(block)
    return n, h.hexdigest()


def write_atomic(path: Path | str, data: bytes) -> None:
    """Write data to path through a temporary file in the same folder and a rename (readers
    see the old file or the whole new one, never a part)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _sum_path(path: Path) -> Path:
    return path.with_suffix(".sum")


def write_sum(path: Path | str) -> None:
    """Record path's size and sha256 in <stem>.sum (atomically)."""
    path = Path(path)
    n, h = _digest(path)
    write_atomic(_sum_path(path), f"{n} {h}\n".encode())


def sum_ok(path: Path | str) -> bool:
    """path exists and has the size and sha256 its .sum records (False when either is missing
    or unreadable)."""
    path = Path(path)
    try:
        rec = _sum_path(path).read_text().split()
        if len(rec) != 2 or path.stat().st_size != int(rec[0]):
            return False
        return _digest(path) == (int(rec[0]), rec[1])
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def file_lock(path: Path | str):
    """An exclusive lock on the file path (created), held for the with block; other processes
    taking the same lock wait. Where flock is missing (not POSIX) it does nothing: the atomic
    renames still keep every file whole."""
    try:
        import fcntl
    except ImportError:                 # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)                    # releases the lock
