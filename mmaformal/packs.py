"""Below layer 1, packs: generated data kept as compressed, digest-checked archives.

A pack is a POSIX tar archive compressed with zstd (``NAME.tar.zst``; ``tar --zstd -xf`` opens
it), with a manifest beside it (``NAME.sha256``, the format of ``sha256sum``: one
``<hex>  <member>`` line per member, sorted), so that after unpacking, ``sha256sum -c NAME.sha256``
checks the files. Packs hold what the project generates in bulk: the lemma texts of decomposed
proofs (proofs/cache/), the hardware campaign samples (counterexamples/hw/), campaign logs.

May import: the Python standard library and ``zstandard`` only (every layer may use it).

Invariants: a member is returned only when its bytes hash to the manifest's digest; a damaged
pack or member, or a member the manifest does not name, raises PackError (a ValueError whose
message is one line naming the pack and the member), never returns wrong bytes. Writing is
deterministic (members sorted, mtime 0, owner 0, mode 0644, one zstd level), so the same
members give the same bytes and an unchanged pack leaves no diff; a pack and its manifest are
each replaced atomically (write to a temporary file, then rename).
"""
from __future__ import annotations

import hashlib
import io
import os
import tarfile
import threading
from pathlib import Path
from typing import Iterable, Mapping

__all__ = ["PackError", "SUFFIX", "write_pack", "read_pack", "Pack", "open_pack",
           "manifest_path", "read_manifest", "digest"]

#: the file suffix of a pack
SUFFIX = ".tar.zst"
#: the zstd level packs are written at (19: small; reading costs the same at any level)
LEVEL = 19


class PackError(ValueError):
    """A pack or member that cannot be used (missing, damaged, unnamed); one line."""


def digest(data: bytes) -> str:
    """sha256 (hex) of data."""
    return hashlib.sha256(data).hexdigest()


def _zstd():
    try:
        import zstandard
    except ImportError:             # a dependency of the package: only a broken install lacks it
        raise PackError("the zstandard package is missing (pip install zstandard)") from None
    return zstandard


def manifest_path(pack: "str | Path") -> Path:
    """The manifest beside a pack: NAME.tar.zst -> NAME.sha256."""
    p = Path(pack)
    name = p.name[:-len(SUFFIX)] if p.name.endswith(SUFFIX) else p.stem
    return p.with_name(name + ".sha256")


def read_manifest(path: "str | Path") -> dict[str, str]:
    """{member: sha256 hex} from a sha256sum-format file; PackError when unreadable or malformed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PackError(f"manifest {path}: cannot read it ({e.strerror or e})") from None
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        hexd, sep, name = line.partition("  ")
        if not sep or len(hexd) != 64 or any(c not in "0123456789abcdef" for c in hexd):
            raise PackError(f"manifest {path}: line {n} is not '<sha256>  <name>'")
        out[name] = hexd
    return out


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_pack(path: "str | Path", members: Mapping[str, bytes], level: int = LEVEL) -> Path:
    """Write members ({name: bytes}; names are relative POSIX paths) as the pack ``path``
    (NAME.tar.zst) and its manifest NAME.sha256; returns the pack's path. Deterministic."""
    path = Path(path)
    if not path.name.endswith(SUFFIX):
        raise PackError(f"pack {path}: the name must end in {SUFFIX}")
    for name in members:
        if not name or name.startswith("/") or ".." in name.split("/") or "\n" in name:
            raise PackError(f"pack {path}: member name {name!r} is not a relative path")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(members):
            data = bytes(members[name])
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    z = _zstd().ZstdCompressor(level=level, write_content_size=True, threads=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, z.compress(raw.getvalue()))
    lines = "".join(f"{digest(bytes(members[n]))}  {n}\n" for n in sorted(members))
    _atomic_write(manifest_path(path), lines.encode())
    return path


def read_pack(path: "str | Path", names: Iterable[str] | None = None) -> dict[str, bytes]:
    """{member: bytes} of a pack (only ``names`` when given), each checked against the manifest;
    PackError on a missing or damaged pack, a member that fails its digest, or a member the
    manifest does not name (and on a name asked for that the pack lacks)."""
    return dict(Pack(path).items(names))


class Pack:
    """A pack opened once: the archive is decompressed and every member checked on first use;
    ``get(name)`` then answers from memory. ``Pack(p).names()`` lists the members."""

    def __init__(self, path: "str | Path"):
        self.path = Path(path)
        self._members: dict[str, bytes] | None = None
        self._lock = threading.Lock()

    def _load(self) -> dict[str, bytes]:
        with self._lock:
            if self._members is not None:
                return self._members
            manifest = read_manifest(manifest_path(self.path))
            try:
                blob = self.path.read_bytes()
            except OSError as e:
                raise PackError(f"pack {self.path}: cannot read it ({e.strerror or e})") from None
            try:
                raw = _zstd().ZstdDecompressor().decompress(blob, max_output_size=1 << 34)
            except Exception as e:
                raise PackError(f"pack {self.path}: not a readable zstd stream ({e})") from None
            out: dict[str, bytes] = {}
            try:
                with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
                    for info in tar:
                        if not info.isfile():
                            continue
                        fh = tar.extractfile(info)
                        out[info.name] = fh.read() if fh is not None else b""
            except tarfile.TarError as e:
                raise PackError(f"pack {self.path}: not a readable tar archive ({e})") from None
            for name, data in out.items():
                want = manifest.get(name)
                if want is None:
                    raise PackError(f"pack {self.path}: member {name} is not in "
                                    f"{manifest_path(self.path).name}")
                if digest(data) != want:
                    raise PackError(f"pack {self.path}: member {name} is damaged "
                                    f"(sha256 differs from {manifest_path(self.path).name})")
            missing = sorted(set(manifest) - set(out))
            if missing:
                raise PackError(f"pack {self.path}: member {missing[0]} named by the manifest "
                                f"is missing ({len(missing)} in all)")
            self._members = out
            return out

    def names(self) -> list[str]:
        return sorted(self._load())

    def __contains__(self, name: str) -> bool:
        return name in self._load()

    def get(self, name: str) -> bytes | None:
        return self._load().get(name)

    def items(self, names: Iterable[str] | None = None):
        m = self._load()
        if names is None:
            return sorted(m.items())
        out = []
        for n in names:
            if n not in m:
                raise PackError(f"pack {self.path}: no member {n}")
            out.append((n, m[n]))
        return out


_OPEN: dict[tuple[str, int, int], Pack] = {}
_OPEN_LOCK = threading.Lock()


def open_pack(path: "str | Path") -> Pack:
    """The process's Pack for ``path``, reused while the file is unchanged (its size and
    mtime): a reader that looks up many members decompresses the pack once."""
    p = Path(path).resolve()
    try:
        st = p.stat()
    except OSError as e:
        raise PackError(f"pack {p}: cannot read it ({e.strerror or e})") from None
    key = (str(p), st.st_size, st.st_mtime_ns)
    with _OPEN_LOCK:
        pk = _OPEN.get(key)
        if pk is None:
            for k in [k for k in _OPEN if k[0] == key[0]]:
                del _OPEN[k]
            pk = _OPEN[key] = Pack(p)
        return pk
