"""mmaformal.hw.campaigns, the one reader of the hardware evidence (counterexamples/hw/): a loose
campaign folder and its pack read the same (files byte for byte, arrays in dtype, shape and raw
bits); packing folds loose folders into packs and removes them only after the pack reads back
equal; the check finds a damaged pack, a stray manifest and loose folders left in the shipped
tree; old record paths and whole campaigns are accepted where a command takes records; the
store's campaigns come before the shipped ones. The shipped packs pass the check."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mmaformal import packs, paths
from mmaformal.hw import campaigns


def _arrays():
    rng = np.random.default_rng(3)
    return {"normal.a": rng.integers(0, 2**16, (2, 16, 8), dtype=np.uint16),
            "normal.d": rng.integers(0, 2**32, (2, 16, 8), dtype=np.uint32),
            "special.c": np.asfortranarray(rng.integers(0, 2**63, (4, 3), dtype=np.uint64)),
            "special.meta": np.arange(12, dtype=np.uint8).reshape(3, 4)}


def _loose(root, name="2026-01-01-test"):
    d = root / "counterexamples" / "hw" / name
    (d / "sub").mkdir(parents=True)
    (d / "sm90_x.json").write_text(json.dumps({"instruction": "sm90/x", "tests": 5}))
    (d / "sub" / "sm90_y.json").write_text(json.dumps({"instruction": "sm90/y"}))
    (d / "batch.log").write_bytes(b"a log\n")
    np.savez_compressed(d / "sm90_x.npz", **_arrays())
    return d


def _same(a, b):
    assert list(a) == list(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape
        assert np.ascontiguousarray(a[k]).tobytes() == np.ascontiguousarray(b[k]).tobytes(), k


def test_a_folder_and_its_pack_read_the_same(tmp_path):
    d = _loose(tmp_path)
    loose = campaigns.open_campaign(d)
    files = {n: loose.read_bytes(n) for n in loose.names() if not n.endswith(".npz")}
    arrays = loose.arrays("sm90_x")
    _same(arrays, dict(sorted(_arrays().items())))
    assert loose.names("*.json") == ["sm90_x.json"]
    assert loose.names("sub/*.json") == ["sub/sm90_y.json"]

    [pack] = campaigns.pack_campaigns(tmp_path)
    assert pack == d.with_name(d.name + packs.SUFFIX) and not d.exists()
    assert packs.manifest_path(pack).is_file()
    c = campaigns.open_campaign(pack)
    assert c.names() == loose.names() and c.pack == pack and c.folder is None
    assert {n: c.read_bytes(n) for n in files} == files
    _same(c.arrays("sm90_x"), arrays)
    [r] = c.records()
    assert (r.stem, r.label, r.data["tests"], r.has_arrays()) == \
        ("sm90_x", f"{d.name}/sm90_x.json", 5, True)
    _same(r.arrays(), arrays)
    assert [r.stem for r in c.records("sub/*.json")] == ["sm90_y"]
    assert campaigns.check_campaigns(tmp_path) == []

    # deterministic: unpacking and packing again gives the same bytes
    blob = pack.read_bytes()
    c.extract(d)
    pack.unlink()
    assert campaigns.pack_campaigns(tmp_path) == [pack] and pack.read_bytes() == blob


def test_a_new_folder_beside_a_pack_is_one_campaign_and_folds_into_it(tmp_path):
    d = _loose(tmp_path)
    campaigns.pack_campaigns(tmp_path)
    d.mkdir()
    (d / "sm90_z.json").write_text("{}")
    (d / "batch.log").write_bytes(b"a newer log\n")
    [c] = campaigns.campaigns(d.parent)
    assert c.folder == d and c.pack is not None
    assert "sm90_z.json" in c and "sm90_x.npz" in c
    assert c.read_bytes("batch.log") == b"a newer log\n"
    campaigns.pack_campaigns(tmp_path)
    [c] = campaigns.campaigns(d.parent)
    assert c.folder is None and c.read_bytes("batch.log") == b"a newer log\n"
    assert c.names("*.json") == ["sm90_x.json", "sm90_z.json"]
    _same(c.arrays("sm90_x"), dict(sorted(_arrays().items())))


def test_check_finds_damage_stray_manifests_and_loose_folders(tmp_path, monkeypatch):
    d = _loose(tmp_path)
    [pack] = campaigns.pack_campaigns(tmp_path)
    assert campaigns.check_campaigns(tmp_path) == []
    # a loose folder is what a GPU run writes into a store; in the shipped tree it is flagged
    _loose(tmp_path, "2026-01-02-new")
    assert campaigns.check_campaigns(tmp_path) == []
    monkeypatch.setattr(paths, "shipped", lambda name=None: tmp_path / name if name else tmp_path)
    [why] = campaigns.check_campaigns(tmp_path)
    assert "2026-01-02-new" in why and "loose campaign folder" in why and "\n" not in why
    monkeypatch.undo()
    (d.parent / "gone.sha256").write_text("")
    [why] = campaigns.check_campaigns(tmp_path)
    assert "gone.sha256" in why and "without its pack" in why
    (d.parent / "gone.sha256").unlink()
    # one member's digest line changed: the pack is refused, one line naming the member
    m = packs.manifest_path(pack)
    lines = m.read_text().splitlines()
    lines[0] = ("0" if lines[0][0] != "0" else "1") + lines[0][1:]
    m.write_text("\n".join(lines) + "\n")
    [why] = campaigns.check_campaigns(tmp_path)
    assert str(pack) in why and "damaged" in why and "\n" not in why
    # bytes of the archive itself damaged: the check and every reader refuse it
    raw = bytearray(pack.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    pack.write_bytes(bytes(raw))
    assert len(campaigns.check_campaigns(tmp_path)) == 1
    with pytest.raises(packs.PackError):
        campaigns.open_campaign(pack).arrays("sm90_x")


def test_records_at_takes_old_paths_and_whole_campaigns(tmp_path):
    d = _loose(tmp_path)
    [r] = campaigns.records_at(d / "sm90_x.json")
    assert r.data["instruction"] == "sm90/x" and r.campaign.folder == d
    campaigns.pack_campaigns(tmp_path)
    [r] = campaigns.records_at(d / "sm90_x.json")            # the loose path before packing
    assert r.data["instruction"] == "sm90/x" and r.campaign.pack is not None
    assert [r.name for r in campaigns.records_at(d.with_name(d.name + packs.SUFFIX))] == \
        ["sm90_x.json"]
    for bad in (d / "nothing.json", tmp_path / "none"):
        with pytest.raises(ValueError, match="no such record"):
            campaigns.records_at(bad)


def test_the_store_comes_before_the_shipped_campaigns(tmp_path, monkeypatch):
    _loose(tmp_path, "2026-11-21-h200")                       # hides the shipped one
    _loose(tmp_path, "2099-01-01-new")
    monkeypatch.setenv(paths.ENV, str(tmp_path))
    names = [c.name for c in campaigns.campaigns()]
    assert "2099-01-01-new" in names and "2026-11-25-h100-wmma" in names
    c = campaigns.campaign("2026-11-21-h200")
    assert c.folder == tmp_path / "counterexamples" / "hw" / "2026-11-21-h200"
    with pytest.raises(ValueError, match="no hardware campaign"):
        campaigns.campaign("1999-no-such")


def test_bad_files_raise_one_line(tmp_path):
    d = _loose(tmp_path)
    (d / "bad.json").write_text("{")
    (d / "bad.npz").write_bytes(b"PK not a zip")
    c = campaigns.open_campaign(d)
    for call in (lambda: c.json("bad.json"), lambda: c.arrays("bad"),
                 lambda: c.read_bytes("missing.json")):
        with pytest.raises(packs.PackError) as e:
            call()
        assert "\n" not in str(e.value)
    with pytest.raises(packs.PackError):
        campaigns.pack_campaigns(tmp_path)                    # the bad npz stops it
    assert d.is_dir()                                         # and nothing was removed


def test_shipped_campaigns_are_packed_and_pass_the_check():
    hw = paths.shipped("counterexamples") / "hw"
    cs = campaigns.campaigns(hw)
    assert len(cs) >= 10 and all(c.pack is not None for c in cs)
    assert campaigns.check_campaigns(paths.shipped()) == []
