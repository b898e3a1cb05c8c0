"""Compile the sm_90a forms the Hopper harness does not run (wmma.mma) with nvcc and record the
tensor-core SASS each one becomes: mmaformal/isa/sass_sm90a.txt (read by tests/test_isa_sass.py
against the catalog's `sass` field).

For every sm90 wmma form of the catalog, a kernel calls the CUDA C++ WMMA API (nvcuda::wmma:
load_matrix_sync, mma_sync / bmma_sync, store_matrix_sync; A row-major, B col-major). The PTX
of each kernel (nvcc -ptx) must hold exactly one wmma.mma whose name, spelled as the catalog
spells it, is the form's (so the record says what was compiled); its SASS (nvcc -cubin, then
cuobjdump -sass) gives the MMA mnemonics in program order.

Run (no GPU needed): python3 docs/sass/compile_sm90a.py [--out mmaformal/isa/sass_sm90a.txt]
with nvcc on PATH and cuobjdump / nvdisasm found through MMAFORMAL_CUOBJDUMP / NVDISASM_PATH
(e.g. the PyPI wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm).
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
from mmaformal import isa  # noqa: E402

_MMA = re.compile(r"^[A-Z]*MMA\b|^[A-Z]*GMMA\b|^[A-Z]*MMA\.")
_INSN = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")

CT = {"f16": "half", "f32": "float", "bf16": "__nv_bfloat16", "f64": "double", "s32": "int",
      "s8": "signed char", "u8": "unsigned char", "tf32": "wmma::precision::tf32",
      "s4": "wmma::experimental::precision::s4", "u4": "wmma::experimental::precision::u4",
      "b1": "wmma::experimental::precision::b1"}
PTR = {"f16": "half", "f32": "float", "bf16": "__nv_bfloat16", "f64": "double", "s32": "int",
       "s8": "signed char", "u8": "unsigned char", "tf32": "float", "s4": "void", "u4": "void",
       "b1": "void"}


def kernel(idx: int, ins) -> str:
    M, N, K = ins.m, ins.n, ins.k
    frag = lambda use, t, lay="": (f"wmma::fragment<wmma::{use}, {M}, {N}, {K}, {t}"
                                   + (f", wmma::{lay}" if lay else "") + ">")
    if ins.bop:
        op = {"xor": "wmma::experimental::bmmaBitOpXOR", "and": "wmma::experimental::bmmaBitOpAND"}[ins.bop]
        call = f"wmma::bmma_sync(fd, fa, fb, fc, {op}, wmma::experimental::bmmaAccumulateOpPOPC);"
    else:
        call = "wmma::mma_sync(fd, fa, fb, fc" + (", true" if ins.satfinite else "") + ");"
    return f"""
extern "C" __global__ void k{idx}(const {PTR[ins.a]}* a, const {PTR[ins.b]}* b, {PTR[ins.c]}* c, {PTR[ins.d]}* d) {{
  {frag("matrix_a", CT[ins.a], "row_major")} fa;
  {frag("matrix_b", CT[ins.b], "col_major")} fb;
  {frag("accumulator", CT[ins.c])} fc;
  {frag("accumulator", CT[ins.d])} fd;
  wmma::load_matrix_sync(fa, a, {max(K, 128)});
  wmma::load_matrix_sync(fb, b, {max(K, 128)});
  wmma::load_matrix_sync(fc, c, {max(N, 16)}, wmma::mem_row_major);
  {call}
  wmma::store_matrix_sync(d, fd, {max(N, 16)}, wmma::mem_row_major);
}}
"""


def ptx_name(line: str) -> str:
    """The catalog spelling of a PTX wmma.mma line: drop .sync.aligned, the layouts and f64's
    mandatory rounding .rn (the catalog does not spell it)."""
    op = line.split()[0]
    toks = [t for t in op.split(".") if t not in ("sync", "aligned", "row", "col", "rn")]
    return "sm90/" + ".".join(toks)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{r.stderr[-3000:]}")
    return r.stdout


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=ROOT / "mmaformal" / "isa" / "sass_sm90a.txt")
    args = ap.parse_args()
    forms = sorted((i for i in isa.instructions() if i.arch == "sm90" and i.family == "wmma"),
                   key=lambda i: i.name)
    src = "#include <mma.h>\n#include <cuda_bf16.h>\nusing namespace nvcuda;\n"
    src += "".join(kernel(j, ins) for j, ins in enumerate(forms))
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cuobjdump = os.environ.get("MMAFORMAL_CUOBJDUMP") or shutil.which("cuobjdump") or "cuobjdump"
    with tempfile.TemporaryDirectory() as td:
        cu = Path(td) / "wmma_sm90a.cu"
        cu.write_text(src)
        flags = ["-gencode=arch=compute_90a,code=sm_90a"]
        run([nvcc, *flags, "-ptx", "-o", str(cu.with_suffix(".ptx")), str(cu)])
        run([nvcc, *flags, "-cubin", "-o", str(cu.with_suffix(".cubin")), str(cu)])
        ptx = cu.with_suffix(".ptx").read_text()
        sass = run([cuobjdump, "-sass", str(cu.with_suffix(".cubin"))])
        nv_version = run([nvcc, "--version"]).strip().splitlines()[-2]
        od_version = run([cuobjdump, "--version"]).strip().splitlines()[-2]
    # PTX per entry, SASS per function
    ptx_of = {m[1]: m[2] for m in re.finditer(r"\.entry (k\d+)\((.*?)\n\}", ptx, re.S)}
    sass_of = {m[1]: m[2] for m in re.finditer(r"Function : (k\d+)\n(.*?)(?=\n\s*Function : |\Z)", sass, re.S)}
    lines = []
    for j, ins in enumerate(forms):
        mm = [ln.strip() for ln in ptx_of[f"k{j}"].splitlines() if ln.strip().startswith("wmma.mma")]
        if len(mm) != 1 or ptx_name(mm[0]) != ins.name:
            raise SystemExit(f"k{j}: expected one wmma.mma spelling {ins.name}, got {mm}")
        mn = [m[1] for ln in sass_of[f"k{j}"].splitlines() if (m := _INSN.search(ln)) and _MMA.match(m[1])]
        parts, i = [], 0
        while i < len(mn):                        # runs of one mnemonic: "X xN"
            n = 1
            while i + n < len(mn) and mn[i + n] == mn[i]:
                n += 1
            parts.append(f"{mn[i]} x{n}")
            i += n
        lines.append(f"{ins.name}\t{', '.join(parts) if parts else '(none)'}")
    head = [f"# SASS of the sm90 wmma.mma forms (CUDA C++ WMMA API, A row-major, B col-major),",
            f"# compiled {datetime.date.today()} by docs/sass/compile_sm90a.py:",
            f"#   nvcc -gencode=arch=compute_90a,code=sm_90a -cubin  ({nv_version})",
            f"#   cuobjdump -sass  ({od_version})",
            "# one line per form: the PTX wmma.mma spelled as the catalog does, then its MMA",
            "# mnemonics in program order (runs as 'MNEMONIC xN'). No GPU involved."]
    args.out.write_text("\n".join(head + lines) + "\n")
    print(f"{len(lines)} forms -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
