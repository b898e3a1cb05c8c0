"""Layer 5 front end, hw/campaigns: the recorded hardware campaigns (counterexamples/hw/), read
from loose folders or from packs; the one reader of the hardware evidence.

A campaign (one device session, e.g. ``2026-11-21-h200``) is either

- a loose folder ``counterexamples/hw/<campaign>/``: what a GPU run writes into the store
  (``<stem>.json`` records, ``<stem>.npz`` raw-bit samples, logs, sub-folders), or
- a pack ``counterexamples/hw/<campaign>.tar.zst`` with its manifest ``<campaign>.sha256``
  (mmaformal.packs): what the repository ships. Every file of the folder is a member under the
  same relative name; a ``<stem>.npz`` is stored uncompressed (a zip whose members are the
  original ``<key>.npy`` files, bytes unchanged, sorted, dated 1980-01-01), so that zstd sees
  the raw arrays: about four times smaller than the deflated npz files. (One member per npz,
  not per array: the manifest then has one line per file, not one per array.)

Readers name files as the loose folder has them (``x.json``, ``refuted-seed14/x.json``) and get
arrays per stem (``Campaign.arrays("x")`` or ``Record.arrays()``: ``{key: ndarray}``), whichever
form the campaign has. ``campaigns()`` lists the store's campaigns and then the shipped ones
(mmaformal.paths.record_dirs; a name in the store hides the same name shipped); a folder and a
pack of the same name are one campaign (the folder's files win). ``pack_campaigns(root)`` folds
the loose folders under ``root/counterexamples/hw`` into packs (``mmaformal store pack``);
``check_campaigns(root)`` lists what is wrong there (``mmaformal store check``).

May import: numpy, the standard library, mmaformal.packs and mmaformal.paths.

Invariants: an array is returned only from bytes that passed the pack's digest check (or from
the loose file); packing stores the npz members' bytes as they are and checks, before any loose
file is removed, that every array read back from the new pack equals the original (dtype,
shape and raw bits) and every other member is byte-identical; a damaged pack raises PackError
(a ValueError, one line), never yields wrong data.
"""
from __future__ import annotations

import io
import json
import shutil
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath

import numpy as np

from .. import paths
from ..packs import (SUFFIX, Pack, PackError, manifest_path, open_pack, read_manifest,
                     write_pack)

__all__ = ["Campaign", "Record", "hw_dirs", "campaigns", "campaign", "records", "records_at",
           "open_campaign",
           "pack_members", "stored_npz", "pack_campaigns", "check_campaigns", "PackError"]

_NPY, _NPZ = ".npy", ".npz"
#: the date of every member of a stored npz (zip's earliest), so that storing is deterministic
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _npz_arrays(data: "bytes | Path", where: str) -> dict[str, np.ndarray]:
    """{key: array} of an npz (its bytes or its path), keys sorted; PackError when unreadable."""
    try:
        with np.load(io.BytesIO(data) if isinstance(data, bytes) else data,
                     allow_pickle=False) as z:
            return {k: z[k] for k in sorted(z.files)}
    except Exception as e:
        raise PackError(f"{where}: not a readable .npz ({str(e).splitlines()[0]})") from None


def stored_npz(path: "str | Path") -> bytes:
    """The npz at ``path`` as a pack stores it: an uncompressed zip of its ``<key>.npy``
    members, bytes unchanged, sorted by name, dated 1980-01-01."""
    out = io.BytesIO()
    try:
        with zipfile.ZipFile(path) as zi, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zo:
            for n in sorted(zi.namelist()):
                if not n.endswith(_NPY) or "/" in n:
                    raise PackError(f"{path}: member {n} is not a <key>.npy array")
                zo.writestr(zipfile.ZipInfo(n, _ZIP_DATE), zi.read(n))
    except (OSError, zipfile.BadZipFile) as e:
        raise PackError(f"{path}: not a readable .npz ({e})") from None
    return out.getvalue()


class Campaign:
    """One campaign: a loose folder, a pack, or both (the folder's files win)."""

    def __init__(self, name: str, folder: Path | None = None, pack: Path | None = None):
        self.name = name
        self.folder = folder if folder is not None and folder.is_dir() else None
        self.pack = pack if pack is not None and pack.is_file() else None
        if self.folder is None and self.pack is None:
            raise ValueError(f"campaign {name}: no folder {folder} and no pack {pack}")

    @property
    def source(self) -> Path:
        """The folder when there is one, else the pack."""
        return self.folder or self.pack

    def __repr__(self):
        return f"Campaign({self.name!r}, {self.source})"

    @cached_property
    def _loose(self) -> dict[str, Path]:
        if self.folder is None:
            return {}
        return {p.relative_to(self.folder).as_posix(): p
                for p in sorted(self.folder.rglob("*")) if p.is_file()}

    @cached_property
    def _packed(self) -> list[str]:
        return open_pack(self.pack).names() if self.pack is not None else []

    def names(self, pattern: str | None = None) -> list[str]:
        """The campaign's files (relative names), matching the glob ``pattern`` when given
        (``*`` crosses no ``/``: ``*.json`` is the top level, ``*/*.json`` one folder down)."""
        out = set(self._loose) | set(self._packed)
        if pattern is not None:
            out = {n for n in out if PurePosixPath(n).match(pattern) and
                   n.count("/") == pattern.count("/")}
        return sorted(out)

    def __contains__(self, name: str) -> bool:
        return name in self._loose or name in self._packed

    def read_bytes(self, name: str) -> bytes:
        """The bytes of the file ``name`` (an npz as the pack stores it: see ``arrays``)."""
        if name in self._loose:
            return self._loose[name].read_bytes()
        if name in self._packed:
            return open_pack(self.pack).get(name)
        raise PackError(f"campaign {self.name}: no file {name}")

    def text(self, name: str) -> str:
        return self.read_bytes(name).decode("utf-8")

    def json(self, name: str):
        """The parsed JSON file ``name``; PackError (one line) when it is not JSON."""
        data = self.read_bytes(name)
        try:
            return json.loads(data)
        except ValueError as e:
            raise PackError(f"campaign {self.name}: {name} is not JSON "
                            f"({str(e).splitlines()[0]})") from None

    def arrays(self, stem: str) -> dict[str, np.ndarray]:
        """{key: array} of ``<stem>.npz`` (keys sorted), from the loose file or the pack."""
        name = stem + _NPZ
        if name in self._loose:
            return _npz_arrays(self._loose[name], str(self._loose[name]))
        return _npz_arrays(self.read_bytes(name), f"campaign {self.name}: {name}")

    def records(self, pattern: str = "*.json") -> list["Record"]:
        """The JSON files matching ``pattern`` (default: those at the top of the campaign)."""
        return [Record(self, n) for n in self.names(pattern) if n.endswith(".json")]

    def extract(self, dest: "str | Path", arrays: bool = True) -> Path:
        """Write the campaign as a loose folder ``dest`` (without the npz files when ``arrays``
        is false; a packed npz comes out uncompressed, its arrays unchanged)."""
        dest = Path(dest)
        for n in self.names():
            if n.endswith(_NPZ) and not arrays:
                continue
            out = dest / n
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(self.read_bytes(n))
        return dest


@dataclass(frozen=True, eq=False)
class Record:
    """One JSON file of a campaign (a per-instruction record, a summary, ...)."""
    campaign: Campaign
    name: str

    @property
    def stem(self) -> str:
        """The file name without ``.json`` and without its sub-folder."""
        return PurePosixPath(self.name).name[:-len(".json")]

    @property
    def label(self) -> str:
        """``<campaign>/<name>``: where the record sits in counterexamples/hw/."""
        return f"{self.campaign.name}/{self.name}"

    def __repr__(self):
        return f"Record({self.label!r})"

    @cached_property
    def data(self) -> dict:
        return self.campaign.json(self.name)

    def has_arrays(self) -> bool:
        return self.name[:-len(".json")] + _NPZ in self.campaign

    def arrays(self) -> dict[str, np.ndarray]:
        """{key: array} of the record's sample (``<stem>.npz`` beside it)."""
        return self.campaign.arrays(self.name[:-len(".json")])


def hw_dirs() -> list[Path]:
    """The counterexamples/hw folders to read: the store's (when it exists), then the shipped."""
    return [d / "hw" for d in paths.record_dirs("counterexamples")]


def _scan(hw: Path) -> dict[str, Campaign]:
    if not hw.is_dir():
        return {}
    found: dict[str, list] = {}
    for p in sorted(hw.iterdir()):
        if p.is_dir() and not p.name.startswith("."):
            found.setdefault(p.name, [None, None])[0] = p
        elif p.is_file() and p.name.endswith(SUFFIX):
            found.setdefault(p.name[:-len(SUFFIX)], [None, None])[1] = p
    return {n: Campaign(n, f, k) for n, (f, k) in sorted(found.items())}


def campaigns(root: "str | Path | None" = None) -> list[Campaign]:
    """The campaigns of the hw folder ``root`` (a counterexamples/hw folder), else those of the
    store and then the shipped ones (a name in the store hides the same name shipped); sorted
    by name."""
    out: dict[str, Campaign] = {}
    for hw in [Path(root)] if root is not None else hw_dirs():
        for n, c in _scan(hw).items():
            out.setdefault(n, c)
    return [out[n] for n in sorted(out)]


def campaign(name: str, root: "str | Path | None" = None) -> Campaign:
    """The campaign ``name`` (see ``campaigns``); ValueError (one line) when there is none."""
    for c in campaigns(root):
        if c.name == name:
            return c
    raise ValueError(f"no hardware campaign {name} in "
                     f"{', '.join(str(d) for d in ([root] if root else hw_dirs()))}")


def open_campaign(path: "str | Path") -> Campaign:
    """The campaign at ``path``: a loose folder or a pack (NAME.tar.zst)."""
    p = Path(path)
    if p.name.endswith(SUFFIX):
        return Campaign(p.name[:-len(SUFFIX)], None, p)
    if not p.is_dir():
        raise ValueError(f"{p}: neither a campaign folder nor a {SUFFIX} pack")
    return Campaign(p.name, p, p.with_name(p.name + SUFFIX))


def records(pattern: str = "*.json", root: "str | Path | None" = None) -> list[Record]:
    """Every campaign's JSON files matching ``pattern`` (see ``Campaign.names``)."""
    return [r for c in campaigns(root) for r in c.records(pattern)]


def records_at(path: "str | Path") -> list[Record]:
    """The records a command-line argument names: a record file (``DIR/x.json``, loose, or as
    the loose path it had before its folder was packed: ``counterexamples/hw/C/x.json`` reads
    member ``x.json`` of ``counterexamples/hw/C.tar.zst``), or a whole campaign (its folder or
    pack: every top-level record with an ``instruction``). ValueError (one line) otherwise."""
    p = Path(path)
    if p.is_file() and p.name.endswith(".json"):
        return [Record(Campaign(p.parent.name, p.parent), p.name)]
    if p.is_dir() or p.name.endswith(SUFFIX):
        c = open_campaign(p)
        return [r for r in c.records() if isinstance(r.data, dict) and "instruction" in r.data]
    for up in p.parents:
        if not up.name:
            break
        pack = up.with_name(up.name + SUFFIX)
        if pack.is_file():
            name = p.relative_to(up).as_posix()
            c = Campaign(up.name, None, pack)
            if name in c:
                return [Record(c, name)]
            break
    raise ValueError(f"{p}: no such record (a .json file, or a campaign folder or {SUFFIX} pack)")


# ---------------------------------------------------------------------------------------------
# Packing and checking (mmaformal store pack / store check)
# ---------------------------------------------------------------------------------------------

def _same_arrays(a: dict[str, np.ndarray], b: dict[str, np.ndarray], where: str) -> None:
    if list(a) != list(b):
        raise PackError(f"{where}: the packed arrays have other keys than the original")
    for k in a:
        x, y = a[k], b[k]
        if x.dtype != y.dtype or x.shape != y.shape or \
                np.ascontiguousarray(x).tobytes() != np.ascontiguousarray(y).tobytes():
            raise PackError(f"{where}: array {k} differs from the original")


def pack_members(folder: "str | Path") -> dict[str, bytes]:
    """The members of a loose campaign folder's pack: every file under its relative name, an
    npz as ``stored_npz`` writes it (checked: the same keys, dtypes, shapes and raw bits)."""
    folder = Path(folder)
    out: dict[str, bytes] = {}
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(folder).as_posix()
        if rel.endswith(_NPZ):
            data = stored_npz(p)
            _same_arrays(_npz_arrays(p, str(p)), _npz_arrays(data, rel), str(p))
            out[rel] = data
        else:
            out[rel] = p.read_bytes()
    return out


def _fold(c: Campaign) -> Path:
    """Write c's pack (its old members, then the folder's files over them), check that it reads
    back equal (every member byte for byte, every array against the loose npz), and only then
    remove the folder."""
    members = dict(open_pack(c.pack).items()) if c.pack is not None else {}
    members.update(pack_members(c.folder))
    pack = c.folder.with_name(c.name + SUFFIX)
    write_pack(pack, members)
    back = open_pack(pack)
    if back.names() != sorted(members):
        raise PackError(f"pack {pack}: members differ from the folder's files after writing")
    for m, data in members.items():
        if back.get(m) != data:
            raise PackError(f"pack {pack}: member {m} differs after writing")
        loose = c.folder / m
        if m.endswith(_NPZ) and loose.is_file():
            _same_arrays(_npz_arrays(loose, str(loose)), _npz_arrays(back.get(m), m),
                         f"pack {pack}: member {m}")
    shutil.rmtree(c.folder)
    return pack


def pack_campaigns(root: "str | Path") -> list[Path]:
    """Fold every loose campaign folder under ``root/counterexamples/hw`` into its pack
    (``<campaign>.tar.zst`` + ``.sha256``; an existing pack keeps its other members) and remove
    the folder once the pack reads back equal; returns the packs written, sorted."""
    hw = Path(root) / "counterexamples" / "hw"
    return [_fold(c) for c in _scan(hw).values() if c.folder is not None]


def check_campaigns(root: "str | Path") -> list[str]:
    """Problems under ``root/counterexamples/hw``, one line each: a pack that cannot be read or
    whose members fail the manifest, a manifest without its pack, an array member that is not
    a readable .npz, a JSON member that is not JSON, and (when ``root`` is the shipped tree,
    e.g. the checkout) a loose campaign folder left unpacked."""
    hw = Path(root) / "counterexamples" / "hw"
    out: list[str] = []
    if not hw.is_dir():
        return out
    shipped = Path(root).resolve() == paths.shipped().resolve()
    for p in sorted(hw.iterdir()):
        if p.name.endswith(".sha256") and not p.with_name(p.name[:-7] + SUFFIX).is_file():
            out.append(f"{p}: a manifest without its pack {p.name[:-7]}{SUFFIX}")
        elif p.is_dir() and not p.name.startswith(".") and shipped:
            n = sum(1 for f in p.rglob("*") if f.is_file())
            out.append(f"{p}: a loose campaign folder ({n} files) in the shipped tree; "
                       f"pack it (mmaformal store pack)")
        elif p.is_file() and p.name.endswith(SUFFIX):
            try:
                read_manifest(manifest_path(p))
                pk = Pack(p)                    # read afresh: not the process's cached copy
                for m in pk.names():
                    if m.endswith(_NPZ):
                        _npz_arrays(pk.get(m), f"pack {p}: member {m}")
                    elif m.endswith(".json"):
                        try:
                            json.loads(pk.get(m))
                        except ValueError:
                            raise PackError(f"pack {p}: member {m} is not JSON") from None
            except PackError as e:
                out.append(str(e))
    return out
