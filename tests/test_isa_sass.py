"""The catalog's `sass` field against the SASS the H100 campaigns recorded (nvcc 13.0 +
cuobjdump, sm_90a; mmaformal/hw/evidence/*/sass.txt, one line per harness kernel: the
instruction and its MMA mnemonics with counts) and, for the wmma forms the harness does not run,
a local nvcc 13.0 compile for sm_90a in the same format (mmaformal/isa/sass_sm90a.txt, made by
docs/sass/compile_sm90a.py); for the mma, mma.sp and wmma forms of sm75, sm80, sm89, sm100 and
sm120, a local nvcc 13.0 compile per target (mmaformal/isa/sass_sm75.txt, sass_sm80.txt,
sass_sm89.txt, sass_sm100a.txt, sass_sm120a.txt, made by docs/sass/compile_archs.py). The
evidence files are parsed here, independently of mmaformal.isa's template filling."""
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


#: the per-target compiles of docs/sass/compile_archs.py: catalog arch -> record file
OTHER = {"sm75": PKG / "isa" / "sass_sm75.txt", "sm80": PKG / "isa" / "sass_sm80.txt",
         "sm89": PKG / "isa" / "sass_sm89.txt", "sm100": PKG / "isa" / "sass_sm100a.txt",
         "sm120": PKG / "isa" / "sass_sm120a.txt"}


@pytest.mark.parametrize("arch", sorted(OTHER))
def test_compiled_sass_of_other_archs_equals_the_catalog(arch):
    """Every mma / mma.sp / wmma form of the arch (block-scaled and kind:: forms included) was
    compiled for it and none was refused; the catalog's sass equals the compiled SASS form by
    form; an empty sass is only left where the compiler emits no MMA-class instruction, and
    its note says so."""
    f = OTHER[arch]
    text = f.read_text()
    head = [ln for ln in text.splitlines() if ln.startswith("#")]
    assert any("docs/sass/compile_archs.py" in ln and "compiled 20" in ln for ln in head)
    assert any("nvcc -gencode=" in ln and "V13.0" in ln for ln in head)
    assert any("cuobjdump -sass" in ln for ln in head)
    rec = recorded([f])
    assert all(n.startswith(arch + "/") for n in rec)
    assert REFUSED not in rec.values() and "(refused" not in text.split("\n", 8)[-1]
    cat = isa.catalog()
    forms = [i for i in cat.values() if i.arch == arch and i.family in ("mma", "wmma")]
    assert sorted(rec) == sorted(i.name for i in forms)
    wrong = [(i.name, i.sass, rec[i.name]) for i in forms if i.sass != rec[i.name]]
    assert not wrong, wrong[:5]
    for i in forms:
        if not i.sass:
            assert "no MMA-class instruction" in i.note, i.name


def test_other_arch_records_disagree_with_a_wrong_template(tmp_path):
    """The comparison can fail: a record line changed by one mnemonic no longer matches."""
    f = OTHER["sm80"]
    lines = f.read_text().splitlines()
    j = next(j for j, ln in enumerate(lines) if ln.startswith("sm80/mma.m16n8k16.f32.bf16"))
    name, mn = lines[j].split("\t")
    lines[j] = f"{name}\t{mn.replace('HMMA', 'QMMA')}"
    g = tmp_path / "sass.txt"
    g.write_text("\n".join(lines) + "\n")
    assert recorded([g])[name] != isa.catalog()[name].sass == recorded([f])[name]
