"""Below layer 1, args: the argparse types the verbs share (numbers, and paths to read or write).

May import: the Python standard library only (every layer's verbs may use it, like
mmaformal.paths).

Each type takes the option's text and returns the value the verb needs, or raises
argparse.ArgumentTypeError with one line that says what is wrong with it; argparse names the
option ("argument --limit: must be a positive number of seconds, got '-3'") and the cli exits 2.

- ``positive_int``: an integer >= 1 (counts, sizes, rounds).
- ``seconds``: a positive, finite number of seconds (time limits).
- ``nonempty``: any text but an empty (or blank) one: an empty path is never "the current
  directory".
- ``writable_dir``: an existing directory this process can create files in (--store).
- ``out_file``: a file to write: its folder exists and is writable, and it is not a directory
  (--out D.npy, --emit-smt2, --progress, --plot). The folder is never created.
- ``out_dir``: a folder to write into: an existing writable directory, or a new one whose parent
  is one (created by the verb, one level only).

Invariant: a type never creates, changes or deletes anything the user named; writability is
tried by creating (and removing) a temporary file of its own in the folder, not read from
permission bits (root passes those; /proc has them and refuses every new file).
"""
from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path

__all__ = ["positive_int", "seconds", "regex", "nonempty", "writable_dir", "out_file", "out_dir",
           "dir_problem"]

_Err = argparse.ArgumentTypeError


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        n = int(str(text).strip())
    except ValueError:
        raise _Err(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise _Err(f"must be a positive integer, got {text!r}")
    return n


def shard(text: str) -> tuple[int, int]:
    """I/N (0 <= I < N): a share of a list, every N-th item from the I-th (the hardware
    campaigns' --shard)."""
    i, sep, n = str(text).partition("/")
    try:
        i_, n_ = int(i), int(n)
    except ValueError:
        raise _Err(f"expected I/N, got {text!r}") from None
    if not sep or n_ < 1 or not 0 <= i_ < n_:
        raise _Err(f"expected I/N with 0 <= I < N, got {text!r}")
    return i_, n_


def seconds(text: str) -> float:
    """A positive, finite number of seconds (zero, negative, nan or inf is a usage error)."""
    try:
        v = float(text)
    except ValueError:
        raise _Err(f"expected seconds, got {text!r}") from None
    if not v > 0 or not math.isfinite(v):
        raise _Err(f"must be a positive number of seconds, got {text!r}")
    return v


def nonempty(text: str) -> str:
    """The text, which must not be empty or blank (an empty path would mean the current
    directory)."""
    if not str(text).strip():
        raise _Err("empty path (name a file or directory; '.' for the current one)")
    return text


def regex(text: str) -> str:
    """A regular expression (checked to compile; returned as text)."""
    import re
    try:
        re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"not a regular expression: {text!r} ({e})") from None
    return text


def dir_problem(p: Path) -> str | None:
    """Why files cannot be created in folder p ("no such directory", "not a directory",
    "not writable"), or None when they can."""
    if not p.exists():
        return "no such directory"
    if not p.is_dir():
        return "not a directory"
    try:
        with tempfile.TemporaryFile(dir=p, prefix=".mmaformal-write-test-"):
            pass
    except OSError:
        return "not writable"
    return None


def writable_dir(text: str) -> str:
    """An existing directory where files can be created."""
    nonempty(text)
    p = Path(text).expanduser()
    why = dir_problem(p)
    if why:
        raise _Err(f"{text!r}: {why}")
    return text


def _parent(p: Path) -> Path:
    return p.parent if str(p.parent) else Path(".")


def out_file(text: str) -> str:
    """A file to write: not a directory; its folder exists and is writable (never created)."""
    nonempty(text)
    if text.endswith(("/", os.sep)) or Path(text).expanduser().is_dir():
        raise _Err(f"{text!r} is a directory; name the file to write")
    p = Path(text).expanduser()
    why = dir_problem(_parent(p))
    if why:
        raise _Err(f"cannot write {text!r}: its folder {str(_parent(p))!r}: {why}")
    return text


def out_dir(text: str) -> str:
    """A folder to write into: an existing writable directory, or a new one (made by the verb)
    whose parent is an existing writable directory."""
    nonempty(text)
    p = Path(text).expanduser()
    if p.exists():
        why = dir_problem(p)
        if why:
            raise _Err(f"{text!r}: {'a file, not a directory' if why == 'not a directory' else why}")
        return text
    why = dir_problem(_parent(p))
    if why:
        raise _Err(f"cannot create {text!r}: its parent {str(_parent(p))!r}: {why}")
    return text
