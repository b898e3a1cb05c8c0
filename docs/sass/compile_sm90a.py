"""Compile the sm_90a forms the Hopper harness does not run (wmma.mma, wgmma.sp, integer wgmma
N = 240 / 256) with the CUDA 13 compilers and record the tensor-core SASS each one becomes:
mmaformal/isa/sass_sm90a.txt (read by tests/test_isa_sass.py against the catalog's `sass`
field and N lists). No GPU is involved: this is what ptxas emits, not what the silicon computes.

- wmma: for every sm90 wmma form of the catalog, a kernel calls the CUDA C++ WMMA API
  (nvcuda::wmma: load_matrix_sync, mma_sync / bmma_sync, store_matrix_sync; A row-major, B
  col-major). The PTX of each kernel (nvcc -ptx) must hold exactly one wmma.mma whose name,
  spelled as the catalog spells it, is the form's (so the record says what was compiled); its
  SASS (nvcc -cubin, then cuobjdump -sass) gives the MMA mnemonics in program order.
- wgmma: a PTX kernel per form (wgmma.fence, one wgmma.mma_async[.sp] with shared-memory
  descriptors from kernel parameters, commit, wait, the accumulators stored), assembled by
  ptxas for sm_90a: every sm90 wgmma.sp form of the catalog and every integer wgmma form.
  Integer shapes: every N in 8..256 step 8 is tried, dense and sparse; the ones ptxas refuses
  ("Illegal matrix shape") are recorded as refused (the catalog must not list them).

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


def wgmma_ptx(entry: str, sp: bool, n: int, k: int, d: str, a: str, b: str, sat: bool) -> str:
    """A PTX kernel running one wgmma.mma_async[.sp] (PTX ISA 9.7.15: operand lists per type)."""
    nreg = n // 4 if d == "f16" else n // 2          # f16 D packed two per .b32
    ops = ["{" + ", ".join(f"%d{i}" for i in range(nreg)) + "}", "%da", "%db"]
    if sp:
        ops += ["%e", "0"]                            # metadata, sparsity selector
    ops += ["%pp"]                                    # scale-d
    if a in ("f16", "bf16"):
        ops += ["1", "1", "0", "0"]                   # imm-scale-a/b, imm-trans-a/b
    elif a in ("tf32", "e4m3", "e5m2"):
        ops += ["1", "1"]
    op = (f"wgmma.mma_async{'.sp' if sp else ''}.sync.aligned.m64n{n}k{k}"
          f"{'.satfinite' if sat else ''}.{d}.{a}.{b}")
    init = "\n".join(f"  mov.b32 %d{i}, 0;" for i in range(nreg))
    store = "\n".join(f"  st.global.b32 [%p+{4 * i}], %d{i};" for i in range(nreg))
    return f"""
.visible .entry {entry}(.param .u64 pd, .param .u64 pa, .param .u64 pb, .param .u32 pe)
{{
  .reg .b64 %da, %db, %p;
  .reg .b32 %e;
  .reg {".f32" if d == "f32" else ".b32"} %d<{nreg}>;
  .reg .pred %pp;
  ld.param.u64 %da, [pa];
  ld.param.u64 %db, [pb];
  ld.param.u32 %e, [pe];
  ld.param.u64 %p, [pd];
{init}
  setp.ne.b32 %pp, %e, 0;
  wgmma.fence.sync.aligned;
  {op} {", ".join(ops)};
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
{store}
  ret;
}}
"""


def wgmma_name(sp, n, k, d, a, b, sat) -> str:
    return f"sm90/wgmma{'.sp' if sp else ''}.m64n{n}k{k}{'.satfinite' if sat else ''}.{d}.{a}.{b}"


def ptx_name(line: str) -> str:
    """The catalog spelling of a PTX wmma.mma line: drop .sync.aligned, the layouts and f64's
    mandatory rounding .rn (the catalog does not spell it)."""
    op = line.split()[0]
    toks = [t for t in op.split(".") if t not in ("sync", "aligned", "row", "col", "rn")]
    return "sm90/" + ".".join(toks)


def run(cmd, ok=False, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode and not ok:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{r.stderr[-3000:]}")
    return r.stdout if not ok else r


def mnemonics(sass_text: str) -> str:
    """'MNEMONIC xN, ...' of the MMA instructions of one function, runs merged; '(none)'."""
    mn = [m[1] for ln in sass_text.splitlines() if (m := _INSN.search(ln)) and _MMA.match(m[1])]
    parts, i = [], 0
    while i < len(mn):
        n = 1
        while i + n < len(mn) and mn[i + n] == mn[i]:
            n += 1
        parts.append(f"{mn[i]} x{n}")
        i += n
    return ", ".join(parts) if parts else "(none)"


def functions(sass: str) -> dict[str, str]:
    return {m[1]: m[2] for m in re.finditer(r"Function : (\w+)\n(.*?)(?=\n\s*Function : |\Z)", sass, re.S)}


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
    sass_of = functions(sass)
    lines = []
    for j, ins in enumerate(forms):
        mm = [ln.strip() for ln in ptx_of[f"k{j}"].splitlines() if ln.strip().startswith("wmma.mma")]
        if len(mm) != 1 or ptx_name(mm[0]) != ins.name:
            raise SystemExit(f"k{j}: expected one wmma.mma spelling {ins.name}, got {mm}")
        lines.append(f"{ins.name}\t{mnemonics(sass_of[f'k{j}'])}")
    # wgmma: the catalog's sparse forms, and every integer shape N = 8..256 step 8
    cat = isa.catalog()
    cand = {i.name: (True, i.n, i.k, i.d, i.a, i.b, i.satfinite) for i in cat.values()
            if i.arch == "sm90" and i.family == "wgmma" and i.sparse}
    for sp, k in ((False, 32), (True, 64)):
        for n in range(8, 257, 8):
            for a in ("s8", "u8"):
                for b in ("s8", "u8"):
                    for sat in (False, True):
                        cand[wgmma_name(sp, n, k, "s32", a, b, sat)] = (sp, n, k, "s32", a, b, sat)
    ptxas = os.path.join(os.path.dirname(os.path.realpath(nvcc)), "ptxas")
    head_ptx = ".version 8.5\n.target sm_90a\n.address_size 64\n"
    refused, wg = [], {}
    with tempfile.TemporaryDirectory() as td:
        names = sorted(cand)
        for j, nm in enumerate(names):                # one shape per try: find the refused
            if cand[nm][3] == "s32" and (cand[nm][0], cand[nm][1]) not in wg:
                f = Path(td) / "probe.ptx"
                f.write_text(head_ptx + wgmma_ptx("p", *cand[nm]))
                r = run([ptxas, "-arch=sm_90a", str(f), "-o", str(f.with_suffix(".cubin"))], ok=True)
                wg[(cand[nm][0], cand[nm][1])] = r.returncode == 0
                if r.returncode and "Illegal matrix shape" not in r.stderr:
                    raise SystemExit(r.stderr)
        keep = [nm for nm in names if cand[nm][3] != "s32" or wg[(cand[nm][0], cand[nm][1])]]
        refused = [nm for nm in names if nm not in keep]
        f = Path(td) / "wgmma_sm90a.ptx"
        f.write_text(head_ptx + "".join(wgmma_ptx(f"w{j}", *cand[nm]) for j, nm in enumerate(keep)))
        run([ptxas, "-arch=sm_90a", str(f), "-o", str(f.with_suffix(".cubin"))])
        wsass = functions(run([cuobjdump, "-sass", str(f.with_suffix(".cubin"))]))
        ptxas_version = run([ptxas, "--version"]).strip().splitlines()[-2]
    for j, nm in enumerate(keep):
        lines.append(f"{nm}\t{mnemonics(wsass[f'w{j}'])}")
    for nm in refused:
        lines.append(f"{nm}\t(refused by ptxas)")
    head = ["# SASS of sm90 forms outside the Hopper harness, compiled "
            f"{datetime.date.today()} by docs/sass/compile_sm90a.py (no GPU):",
            "#   wmma.mma: CUDA C++ WMMA API (A row-major, B col-major),",
            f"#     nvcc -gencode=arch=compute_90a,code=sm_90a -cubin  ({nv_version})",
            f"#   wgmma: one PTX kernel per form, ptxas -arch=sm_90a  ({ptxas_version})",
            f"#   cuobjdump -sass  ({od_version})",
            "# one line per form, named as the catalog spells it: its MMA mnemonics in program",
            "# order (runs as 'MNEMONIC xN'), or '(refused by ptxas)' (integer wgmma shapes ptxas",
            "# calls illegal: the catalog must not list them)."]
    args.out.write_text("\n".join(head + lines) + "\n")
    print(f"{len(lines)} forms ({len(refused)} refused) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
