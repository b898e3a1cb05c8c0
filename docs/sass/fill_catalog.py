"""Write the compiled SASS of mmaformal/isa/sass_<target>.txt into mmaformal/isa/nvidia.toml as
`sass` templates: for every [[instruction]] entry whose `sass` is empty (or, with --fix, whose
template disagrees with a compiled record), find per arch a template over the entry's
placeholders ({D} {A} {B} {C} {A8} {B8} {SAT} {BOP} {m}{n}{k} {kh}) that reproduces every
recorded form of that arch, and write it; an entry whose archs need different templates is
split into one entry per template (the other lines copied). Archs without a record keep the
old template. The `source` of a changed entry gains a note naming the record files.

Run: python3 docs/sass/fill_catalog.py [--fix]   (after docs/sass/compile_archs.py)
"""
from __future__ import annotations

import argparse
import itertools
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
from mmaformal import isa  # noqa: E402

TOML = ROOT / "mmaformal" / "isa" / "nvidia.toml"
FILES = {"sm75": "sass_sm75.txt", "sm80": "sass_sm80.txt", "sm89": "sass_sm89.txt",
         "sm100": "sass_sm100a.txt", "sm120": "sass_sm120a.txt"}
TOOLS = "nvcc 13.0 (V13.0.88) + cuobjdump 13.5, 2026-11-25, no GPU"


def records() -> dict[str, str]:
    from test_isa_sass import recorded      # the test's own parser of the record format
    return recorded([ROOT / "mmaformal" / "isa" / f for f in FILES.values()])


def values(ins) -> dict:
    a, b, c, d = ins.a, ins.b, ins.c, ins.d
    w8 = {"s4": "S8", "u4": "U8"}
    return dict(m=ins.m, n=ins.n, k=ins.k, a=a, b=b, c=c, d=d, A=a.upper(), B=b.upper(),
                C=c.upper(), D=d.upper(), SAT=".SAT" if ins.satfinite else "",
                BOP=ins.bop.upper(), kh=ins.k // 2, A8=w8.get(a, a.upper()),
                B8=w8.get(b, b.upper()), S="", scale="", blocks=1, sat="", bop=ins.bop, sp="")


def candidates(s: str, v: dict):
    toks = re.findall(r"\.SAT\b|[A-Za-z0-9_]+|[^A-Za-z0-9_]", s)
    opts = []
    for t in toks:
        o = ["{SAT}"] if t == ".SAT" else []       # placeholders first, in this order
        o += ["{" + p + "}" for p in ("D", "C", "A", "B", "BOP") if v[p] and v[p] == t]
        o += ["{" + p + "8}" for p in ("A", "B") if v[p + "8"] == t and v[p + "8"] != v[p]]
        if t == f"{v['m']}{v['n']}{v['k']}":
            o.append("{m}{n}{k}")
        if t == f"{v['m']}{v['n']}{v['kh']}":
            o.append("{m}{n}{kh}")
        opts.append(list(dict.fromkeys(o + [t])))
    for combo in itertools.islice(itertools.product(*opts), 20000):
        yield "".join(combo)


def template(forms, rec) -> str | None:
    """A template that reproduces every form's recorded SASS, or None."""
    seed = max(forms, key=lambda i: (i.satfinite, bool(i.bop)))
    for t in candidates(rec[seed.name], values(seed)):
        if all(t.format_map(values(i)) == rec[i.name] for i in forms):
            return t
    return None


#: the keys an entry may be split by (first that works), and each form's value of it
SPLIT = {"cd": lambda i: (i.c, i.d), "k": lambda i: i.k, "n": lambda i: i.n, "m": lambda i: i.m,
         "a": lambda i: i.a, "b": lambda i: i.b, "satfinite": lambda i: i.satfinite,
         "bop": lambda i: i.bop, "sparse": lambda i: i.sparse}


def toml_value(vals) -> str:
    """The TOML value of a key that takes the given values (a tuple of one or more)."""
    if len(vals) > 1:
        if isinstance(vals[0], tuple):               # cd pairs
            return "[" + ", ".join(toml_value((v,))[1:-1] for v in vals) + "]"
        return "[" + ", ".join(toml_value((v,)) for v in vals) + "]"
    v = vals[0]
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, tuple):
        return "[[" + ", ".join(f'"{x}"' for x in v) + "]]"
    return str(v) if isinstance(v, int) else f'"{v}"'


def entries(text: str):
    """[(start, end_of_keys, end)] character spans of the [[instruction]] blocks."""
    starts = [m.start() for m in re.finditer(r"(?m)^\[\[instruction\]\]\n", text)]
    out = []
    for j, s in enumerate(starts):
        end = starts[j + 1] if j + 1 < len(starts) else len(text)
        m = re.compile(r"(?m)^(?:$|#)").search(text, s + 16, end)
        out.append((s, m.start() if m else end, end))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fix", action="store_true", help="also rewrite templates that disagree")
    args = ap.parse_args()
    rec = records()
    text = TOML.read_text()
    parsed = tomllib.loads(text)["instruction"]
    spans = entries(text)
    assert len(spans) == len(parsed)
    pieces, last, failed, changed = [], 0, [], 0
    for (s, k_end, end), e in zip(spans, parsed):
        keys = text[s:k_end]
        assert tomllib.loads(keys)["instruction"][0] == e, keys[:200]
        forms = list(isa._expand(str(TOML), e, "nvidia"))
        archs = list(dict.fromkeys(i.arch for i in forms))
        old = e.get("sass", "")
        per_arch = {}
        for arch in archs:
            fs = [i for i in forms if i.arch == arch]
            if not all(i.name in rec for i in fs):
                per_arch[arch] = old
                continue
            agree = all(i.sass == rec[i.name] for i in fs)
            if old and (agree or not args.fix):
                per_arch[arch] = old
                continue
            if old == "" and all(rec[i.name] == "" for i in fs):
                per_arch[arch] = ""
                continue
            t = template(fs, rec)
            if t is not None:
                per_arch[arch] = t
                continue
            for key in SPLIT:                     # one template per value of one key
                parts = {}
                for i in fs:
                    parts.setdefault(SPLIT[key](i), []).append(i)
                ts = {val: template(p, rec) for val, p in parts.items()}
                if len(parts) > 1 and None not in ts.values():
                    for val, tv in ts.items():
                        per_arch[(arch, key, val)] = tv
                    break
            else:
                failed.append((arch, [i.name for i in fs]))
                per_arch[arch] = old
        by_val: dict[tuple, list[str]] = {}
        for where, t in per_arch.items():
            arch, key, val = where if isinstance(where, tuple) else (where, None, None)
            by_val.setdefault((t, key, val), []).append(arch)
        groups: dict[tuple, list[str]] = {}       # values with one template and archs: merged
        for (t, key, val), arch_list in by_val.items():
            vals = groups.setdefault((t, key, tuple(arch_list)), [])
            vals.append(val)
        groups = {(t, key, tuple(vals) if key else None): list(arch_list)
                  for (t, key, arch_list), vals in groups.items()}
        if [g[0] for g in groups] == [old] and all(g[1] is None for g in groups):
            continue
        changed += 1
        blocks = []
        for (t, key, val), arch_list in groups.items():
            b = keys
            if key is not None:
                b, nsub = re.subn(rf"(?m)^{key} = .*$", lambda _: f"{key} = {toml_value(val)}", b,
                                  count=1)
                assert nsub == 1 and tomllib.loads(b), (key, b)
            arch_val = (f'"{arch_list[0]}"' if len(arch_list) == 1
                        else "[" + ", ".join(f'"{a}"' for a in arch_list) + "]")
            b = re.sub(r"(?m)^arch = .*$", f"arch = {arch_val}", b, count=1)
            if re.search(r"(?m)^sass = ", b):
                b = re.sub(r"(?m)^sass = .*$", lambda _: f'sass = "{t}"', b, count=1)
            else:
                b = b.rstrip("\n") + f'\nsass = "{t}"\n'
            done = [a for a in arch_list if a in FILES and t != old]
            if done:
                note = "; SASS " + ", ".join(f"{a}: mmaformal/isa/{FILES[a]}" for a in done) + \
                    f" ({TOOLS}, docs/sass/compile_archs.py)"
                b = re.sub(r'(?m)^(source = ".*)"$', lambda m: m[1] + note + '"', b, count=1)
            blocks.append(b)
        pieces += [text[last:s], "\n".join(blocks)]
        last = k_end
    pieces.append(text[last:])
    TOML.write_text("".join(pieces))
    print(f"{changed} entries changed; no template for {len(failed)} (arch, entry) groups")
    for arch, names in failed:
        print("  ", arch, names[:3], len(names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
