"""The shipped hardware records that the replay tests read, and the curated subset that the
default run replays.

Records come from mmaformal.hw.campaigns (the one reader of counterexamples/hw, packed or
loose), from the shipped tree only (the checkout's or the installed package's): the tests check
the evidence the project ships, not a user's store.

Curated subset: per campaign and per instruction family (the form's name with its shape
``mMnNkK`` taken out, so the type combination, accumulator, sparsity and qualifiers such as
``satfinite`` or ``xor.popc`` stay), the record of the smallest shape. Every family of every
campaign is replayed by the default run (one record per family, 185 families); ``pytest -m
slow`` replays the others (the other shapes: the wgmma N sweeps up to N = 256, whose kernels
take minutes each to compile on a cold cache).

Test modules import it with ``import hw_records`` (tests/ is on sys.path, see conftest.py).
"""
from __future__ import annotations

import re
from collections import defaultdict

import pytest

from mmaformal import paths
from mmaformal.hw import campaigns

#: the shipped counterexamples/hw folder
HW = paths.shipped("counterexamples") / "hw"


def campaign(name: str) -> campaigns.Campaign:
    """The shipped campaign ``name`` (its pack, or its folder before it is packed)."""
    return campaigns.campaign(name, HW)


def every() -> list[campaigns.Campaign]:
    return campaigns.campaigns(HW)


_SHAPE = re.compile(r"\bm(\d+)n(\d+)k(\d+)\b")


def family(stem: str) -> str:
    """The record's form without its shape: ``sm90_wgmma.m64n8k16.f16.f16.f16`` ->
    ``sm90_wgmma.mnk.f16.f16.f16``."""
    return _SHAPE.sub("mnk", stem)


def shape(stem: str) -> tuple[int, int, int]:
    m = _SHAPE.search(stem)
    return tuple(int(x) for x in m.groups()) if m else (0, 0, 0)


def curated(records) -> list:
    """Per (campaign, family) the record of the smallest shape."""
    by = defaultdict(list)
    for r in records:
        by[(r.campaign.name, family(r.stem))].append(r)
    keep = set()
    for rs in by.values():
        rs = sorted(rs, key=lambda r: (shape(r.stem), r.stem))
        keep.add(id(rs[0]))
    return [r for r in records if id(r) in keep]


def params(records) -> list:
    """pytest params of ``records`` (id: the file stem): the curated ones in the default run,
    the others marked slow."""
    keep = {id(r) for r in curated(records)}
    return [pytest.param(r, id=r.stem, marks=() if id(r) in keep else pytest.mark.slow)
            for r in records]
