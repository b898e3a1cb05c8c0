"""The catalog's `sass` field against the SASS the H100 campaigns recorded (nvcc 13.0 +
cuobjdump, sm_90a; mmaformal/hw/evidence/*/sass.txt, one line per harness kernel: the
instruction and its MMA mnemonics with counts) and, for the wmma forms the harness does not run,
a local nvcc 13.0 compile for sm_90a in the same format (mmaformal/isa/sass_sm90a.txt, made by
docs/sass/compile_sm90a.py). The evidence files are parsed here,
independently of mmaformal.isa's template filling."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import mmaformal
from mmaformal import isa

PKG = Path(mmaformal.__file__).resolve().parent
EVIDENCE = sorted((PKG / "hw" / "evidence").glob("*/sass.txt")) + [PKG / "isa" / "sass_sm90a.txt"]
_PART = r"(?:[1-9][0-9]*\*)?[A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*"
GRAMMAR = re.compile(rf"^(?:{_PART}(?: \+ {_PART})*)?$")


REFUSED = "(refused by ptxas)"


def recorded(files=EVIDENCE) -> dict[str, str]:
    """{instruction: expected sass spelling} of every evidence line ("(none)" -> ""; a form
    ptxas refused keeps the marker)."""
    out = {}
    for f in files:
        for line in f.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            name, mn = line.split("\t")
            parts = []
            if mn.strip() == REFUSED:
                out[name] = REFUSED
                continue
            if mn.strip() != "(none)":
                for p in mn.split(", "):
                    m = re.fullmatch(r"(\S+)(?: x([0-9]+))?", p.strip())   # no count: x1
                    assert m, (f, line)
                    parts.append(m[1] if m[2] in (None, "1") else f"{m[2]}*{m[1]}")
            assert out.get(name, " + ".join(parts)) == " + ".join(parts), name   # files agree
            out[name] = " + ".join(parts)
    return out


def test_every_sass_field_is_well_formed():
    bad = [(i.name, i.sass) for i in isa.instructions() if not GRAMMAR.match(i.sass)]
    assert not bad, bad[:5]


def test_recorded_sm90_sass_equals_the_catalog():
    """Every compiled form is in the catalog with that sass; every form ptxas refused (integer
    wgmma shapes outside the PTX list) is not; every sm90 wmma / wgmma.sp form was compiled."""
    rec = recorded()
    cat = isa.catalog()
    refused = sorted(n for n, s in rec.items() if s == REFUSED)
    assert len(refused) == 224 and not [n for n in refused if n in cat], refused[:5]
    rec = {n: s for n, s in rec.items() if s != REFUSED}
    assert len(rec) >= 237 + 35 + 512
    missing = sorted(n for n in rec if n not in cat)
    assert not missing, missing[:5]
    wrong = [(n, cat[n].sass, s) for n, s in sorted(rec.items()) if cat[n].sass != s]
    assert not wrong, wrong[:5]
    sm90 = [i.name for i in cat.values() if i.arch == "sm90" and
            (i.family == "wmma" or (i.family == "wgmma" and (i.sparse or i.integer)))]
    assert not [n for n in sm90 if n not in rec]


@pytest.mark.parametrize("line,want", [("X.1 x1", "X.1"), ("X.1 x2", "2*X.1"),
                                       ("X x2, Y x1", "2*X + Y"), ("(none)", ""), ("X.1", "X.1"),
                                       (REFUSED, REFUSED)])
def test_evidence_parser(tmp_path, line, want):
    f = tmp_path / "sass.txt"
    f.write_text(f"# comment\nsm90/whatever\t{line}\n")
    assert recorded([f]) == {"sm90/whatever": want}
