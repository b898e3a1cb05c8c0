"""Compile the catalog's mma and wmma forms of sm_75 / sm_80 / sm_89 / sm_100a / sm_120a with the
CUDA 13 compilers and record the tensor-core SASS each one becomes: mmaformal/isa/sass_<arch>.txt
(one file per target, the format of sass_sm90a.txt; read by tests/test_isa_sass.py against the
catalog's `sass` field). No GPU is involved: this is what ptxas emits, not what the silicon
computes.

- mma / mma.sp: one small kernel per form with the PTX opcode as inline assembly
  (`mma[.sp[::ordered_metadata]].sync.aligned.<shape>.row.col[.satfinite].<d>.<a>.<b>.<c>[.<bop>.popc]`,
  sparse forms with a metadata register and selector 0); the operands are loaded from global
  memory and D stored, so nothing folds away. Register counts per thread follow the PTX
  fragment sizes (elements = rows x columns / 32, packed into 32-bit registers by width; f64
  one register per element; f16 m8n8k4: the quad-pair fragments, A and B 2 registers, C/D 4
  (f16) or 8 (f32)).
- wmma: the CUDA C++ WMMA API kernel of docs/sass/compile_sm90a.py (load_matrix_sync,
  mma_sync / bmma_sync, store_matrix_sync; A row-major, B col-major); its PTX must hold exactly
  one wmma.mma spelled as the catalog spells the form.

A form the compiler refuses for its target (ptxas, or the WMMA header) is recorded as
'(refused by ptxas)' / '(refused by nvcc)' with nothing else: a finding about the catalog entry.

Run (no GPU): python3 docs/sass/compile_archs.py [--arch sm80 ...] with nvcc on PATH and
cuobjdump (+ nvdisasm on PATH) found through MMAFORMAL_CUOBJDUMP (e.g. the PyPI wheels
nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm).
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile_sm90a import functions, mnemonics, run  # noqa: E402
from compile_sm90a import kernel as wmma_kernel  # noqa: E402

from mmaformal import isa  # noqa: E402

#: catalog arch -> (nvcc -gencode, the file's target name)
TARGETS = {"sm75": ("arch=compute_75,code=sm_75", "sm75"),
           "sm80": ("arch=compute_80,code=sm_80", "sm80"),
           "sm89": ("arch=compute_89,code=sm_89", "sm89"),
           "sm100": ("arch=compute_100a,code=sm_100a", "sm100a"),
           "sm120": ("arch=compute_120a,code=sm_120a", "sm120a")}

BITS = {"f64": 64, "f32": 32, "tf32": 32, "f16": 16, "bf16": 16, "e4m3": 8, "e5m2": 8,
        "s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1, "s32": 32}


def ptx_opcode(ins) -> str:
    """The catalog qualifier with `.sync.aligned` after the opcode and `.row.col` after the
    shape (the catalog's spelling rule, undone)."""
    op, rest = ins.qualifier.split(f".m{ins.m}n{ins.n}k{ins.k}", 1)
    return f"{op}.sync.aligned.m{ins.m}n{ins.n}k{ins.k}.row.col{rest}"


def bits(ins, fmt: str) -> int:
    """Register bits of one element: 4-bit and 6-bit floats sit in 8-bit containers under
    kind::f8f6f4 / mxf8f6f4, packed two to a byte under kind::mxf4 / mxf4nvf4."""
    if fmt in ("e2m1", "e2m3", "e3m2"):
        return 4 if "kind::mxf4" in ins.qualifier else 8
    return BITS[fmt]


def regs(ins) -> dict[str, tuple[int, str]]:
    """(count, kind) of the A, B, C, D operand registers of one thread: kind 'r' (32-bit), 'f'
    (f32) or 'd' (f64)."""
    if (ins.m, ins.n, ins.k, ins.a) == (8, 8, 4, "f16"):          # quad-pair fragments
        cd = {"f16": (4, "r"), "f32": (8, "f")}
        return {"a": (2, "r"), "b": (2, "r"), "c": cd[ins.c], "d": cd[ins.d]}
    kk = ins.k // 2 if ins.sparse else ins.k
    out = {}
    for role, elems, fmt in (("a", ins.m * kk // 32, ins.a), ("b", ins.k * ins.n // 32, ins.b),
                             ("c", ins.m * ins.n // 32, ins.c), ("d", ins.m * ins.n // 32, ins.d)):
        if fmt == "f64":
            out[role] = (elems, "d")
        elif fmt == "f32" and role in "cd":
            out[role] = (elems, "f")
        else:
            out[role] = (max(1, elems * bits(ins, fmt) // 32), "r")
    return out


def mma_kernel(idx: int, ins) -> str:
    r = regs(ins)
    ty = {"r": "unsigned", "f": "float", "d": "double"}
    lines = [f'extern "C" __global__ void k{idx}(const void* in, void* out) {{',
             f"  // {ins.name}"]
    off = 0
    for role in "abc":
        n, kind = r[role]
        lines.append(f"  const {ty[kind]}* p{role} = (const {ty[kind]}*)((const char*)in + {off});")
        lines += [f"  {ty[kind]} {role}{j} = p{role}[{j}];" for j in range(n)]
        off += n * (8 if kind == "d" else 4)
    n, kind = r["d"]
    lines.append(f"  {ty[kind]} " + ", ".join(f"d{j}" for j in range(n)) + ";")
    idx_ = 0
    groups = []
    for role in "dabc":
        cnt = r[role][0]
        groups.append("{" + ", ".join(f"%{idx_ + j}" for j in range(cnt)) + "}")
        idx_ += cnt
    extra, tail = [], ""
    if ins.sparse:
        lines.append(f"  unsigned e = *(const unsigned*)((const char*)in + {off});")
        tail, extra = f", %{idx_}, 0x0", ['"r"(e)']
    if ins.scale:                                  # scale data, {byte-id, thread-id} of A, B
        lines.append(f"  unsigned sa = *(const unsigned*)((const char*)in + {off}), "
                     f"sb = *(const unsigned*)((const char*)in + {off + 4});")
        tail, extra = f", %{idx_}, {{0, 0}}, %{idx_ + 1}, {{0, 0}}", ['"r"(sa)', '"r"(sb)']
    lines.append(f'  asm volatile("{ptx_opcode(ins)} {", ".join(groups)}{tail};"')
    lines.append("    : " + ", ".join(f'"={r["d"][1]}"(d{j})' for j in range(r["d"][0])))
    ins_ops = [f'"{r[x][1]}"({x}{j})' for x in "abc" for j in range(r[x][0])] + extra
    lines.append("    : " + ", ".join(ins_ops) + ");")
    lines.append(f"  {ty[kind]}* pd = ({ty[kind]}*)out;")
    lines += [f"  pd[{j}] = d{j};" for j in range(n)]
    lines.append("}")
    return "\n".join(lines) + "\n"


def ptx_wmma_name(line: str, arch: str) -> str:
    op = line.split()[0]
    toks = [t for t in op.split(".") if t not in ("sync", "aligned", "row", "col", "rn")]
    return f"{arch}/" + ".".join(toks)


def compile_mma(forms, gencode: str, nvcc: str, cuobjdump: str, td: Path):
    """{name: mnemonics or '(refused by ptxas)'}: one .cu, nvcc -ptx, then ptxas on the whole
    PTX; entries ptxas rejects are dropped (by the line numbers of its errors) and recorded."""
    arch_flag = gencode.split("code=")[1]
    src = "".join(mma_kernel(j, ins) for j, ins in enumerate(forms))
    cu = td / "mma.cu"
    cu.write_text(src)
    ptx = td / "mma.ptx"
    run([nvcc, f"-gencode={gencode}", "-ptx", "-o", str(ptx), str(cu)])
    text = ptx.read_text()
    head, *bodies = re.split(r"(?m)^(?=\.visible \.entry )", text)
    entries = {re.match(r"\.visible \.entry (k\d+)", b)[1]: b for b in bodies}
    refused = {}
    ptxas = os.path.join(os.path.dirname(os.path.realpath(nvcc)), "ptxas")
    while True:
        keep = [k for k in entries if k not in refused]
        body = head + "".join(entries[k] for k in keep)
        f = td / "keep.ptx"
        f.write_text(body)
        r = run([ptxas, f"-arch={arch_flag}", str(f), "-o", str(f.with_suffix(".cubin"))], ok=True)
        if r.returncode == 0:
            break
        lines_bad = [int(m[1]) for m in re.finditer(r"keep\.ptx, line (\d+); error", r.stderr)]
        if not lines_bad:
            raise SystemExit(r.stderr[-3000:])
        starts = []
        ln = head.count("\n") + 1
        for k in keep:
            starts.append((ln, k))
            ln += entries[k].count("\n")
        for bad in lines_bad:
            k = [k for s, k in starts if s <= bad][-1]
            refused[k] = re.search(rf"line {bad}; error\s*:\s*(.*)", r.stderr)[1].strip()
    sass = functions(run([cuobjdump, "-sass", str(f.with_suffix(".cubin"))]))
    out = {}
    for j, ins in enumerate(forms):
        k = f"k{j}"
        out[ins.name] = f"(refused by ptxas) {refused[k]}" if k in refused else mnemonics(sass[k])
    return out


def compile_wmma(forms, gencode: str, nvcc: str, cuobjdump: str, td: Path):
    """{name: mnemonics or '(refused by nvcc)'}: all forms in one .cu; a form whose kernel
    does not compile alone is recorded as refused and left out."""
    incl = "#include <mma.h>\n#include <cuda_bf16.h>\nusing namespace nvcuda;\n"
    arch = forms[0].arch if forms else ""
    refused = {}

    def build(sel):
        cu = td / "wmma.cu"
        cu.write_text(incl + "".join(wmma_kernel(j, ins) for j, ins in sel))
        r1 = run([nvcc, f"-gencode={gencode}", "-ptx", "-o", str(cu.with_suffix(".ptx")),
                  str(cu)], ok=True)
        if r1.returncode:
            return r1
        return run([nvcc, f"-gencode={gencode}", "-cubin", "-o", str(cu.with_suffix(".cubin")),
                    str(cu)], ok=True)

    sel = list(enumerate(forms))
    r = build(sel)
    if r.returncode:                       # find the refused ones one by one
        for j, ins in list(sel):
            rr = build([(j, ins)])
            if rr.returncode:
                msg = [ln for ln in rr.stderr.splitlines() if "error" in ln]
                refused[j] = (msg[0] if msg else rr.stderr.strip()[:200]).split("error")[-1]
        sel = [(j, ins) for j, ins in sel if j not in refused]
        r = build(sel)
        if r.returncode:
            raise SystemExit(r.stderr[-3000:])
    cu = td / "wmma.cu"
    ptx = cu.with_suffix(".ptx").read_text()
    ptx_of = {m[1]: m[2] for m in re.finditer(r"\.entry (k\d+)\((.*?)\n\}", ptx, re.S)}
    sass = functions(run([cuobjdump, "-sass", str(cu.with_suffix(".cubin"))]))
    out = {}
    for j, ins in enumerate(forms):
        if j in refused:
            out[ins.name] = f"(refused by nvcc) {refused[j].strip(': ')[:160]}"
            continue
        mm = [ln.strip() for ln in ptx_of[f"k{j}"].splitlines() if ln.strip().startswith("wmma.mma")]
        if len(mm) != 1 or ptx_wmma_name(mm[0], arch) != ins.name:
            raise SystemExit(f"k{j}: expected one wmma.mma spelling {ins.name}, got {mm}")
        out[ins.name] = mnemonics(sass[f"k{j}"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", action="append", choices=sorted(TARGETS))
    ap.add_argument("--out-dir", type=Path, default=ROOT / "mmaformal" / "isa")
    args = ap.parse_args()
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cuobjdump = os.environ.get("MMAFORMAL_CUOBJDUMP") or shutil.which("cuobjdump") or "cuobjdump"
    nv_version = run([nvcc, "--version"]).strip().splitlines()[-2]
    od_version = run([cuobjdump, "--version"]).strip().splitlines()[-2]
    for arch in args.arch or sorted(TARGETS):
        gencode, target = TARGETS[arch]
        mma = sorted((i for i in isa.instructions() if i.arch == arch and i.family == "mma"),
                     key=lambda i: i.name)
        wmma = sorted((i for i in isa.instructions() if i.arch == arch and i.family == "wmma"),
                      key=lambda i: i.name)
        with tempfile.TemporaryDirectory() as td:
            res = compile_mma(mma, gencode, nvcc, cuobjdump, Path(td))
            res.update(compile_wmma(wmma, gencode, nvcc, cuobjdump, Path(td)))
        head = [f"# SASS of the {arch} mma / mma.sp / wmma forms of the catalog (block-scaled and",
                "# kind:: forms included), compiled "
                f"{datetime.date.today()} by docs/sass/compile_archs.py (no GPU):",
                "#   mma: one inline-PTX kernel per form; wmma.mma: CUDA C++ WMMA API (A row-major,"
                " B col-major)",
                f"#   nvcc -gencode={gencode} -ptx, then ptxas / nvcc -cubin  ({nv_version})",
                f"#   cuobjdump -sass  ({od_version})",
                "# one line per form, named as the catalog spells it: its MMA mnemonics in program",
                "# order (runs as 'MNEMONIC xN'; '(none)': no tensor-core instruction), or",
                "# '(refused by ptxas|nvcc) <error>' (the compiler rejects the form for this"
                " target)."]
        lines = [f"{n}\t{s}" for n, s in sorted(res.items())]
        out = args.out_dir / f"sass_{target}.txt"
        out.write_text("\n".join(head + lines) + "\n")
        nref = sum("(refused" in s for s in res.values())
        print(f"{arch}: {len(lines)} forms ({nref} refused) -> {out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
