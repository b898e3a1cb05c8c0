"""SASS of the harness kernels: which tensor-core machine instructions each PTX form becomes.

(layer 5 front end, ``hw``). A PTX MMA may compile to a sequence (docs/design.md: read the SASS),
so every hardware campaign records it. :func:`sass` compiles the generated kernel of an
instruction with nvcc to a cubin of its architecture's target (sm_90a:
``-gencode=arch=compute_90a,code=sm_90a``; :mod:`mmaformal.hw.forms`; no GPU needed) and returns
the ``cuobjdump -sass`` text and the list of MMA mnemonics in it (HMMA, HGMMA, QGMMA, DMMA,
IMMA, UTC*MMA..., with their modifiers), in program order.

Command line: ``mmaformal hw sass [--full] [--arch A] [INSTR ...]`` (its options are defined
here, `add_parser`; mmaformal.hw.cli registers it). No nvcc or cuobjdump: one line, exit 2.

May import: :mod:`mmaformal.hw.runner` (for the compiler and cache), :mod:`mmaformal.hw.forms`,
standard library.
Invariant: reads compiler output only; runs nothing on a GPU.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from .forms import TARGETS, instructions
from .runner import HardwareUnavailable, compile_cubin, nvcc_path

__all__ = ["cuobjdump_path", "sass", "mma_mnemonics", "add_parser", "run"]

# an instruction line of cuobjdump -sass: /*0120*/  [@P0] OPCODE.MODS operands ;
_INSN = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")
_MMA = re.compile(r"^[A-Z]*MMA\b|^[A-Z]*GMMA\b|^[A-Z]*MMA\.")


def cuobjdump_path() -> str | None:
    nv = nvcc_path()
    cand = [os.environ.get("MMAFORMAL_CUOBJDUMP"), shutil.which("cuobjdump")]
    if nv:
        cand.append(os.path.join(os.path.dirname(os.path.realpath(nv)), "cuobjdump"))
    cand.append("/usr/local/cuda/bin/cuobjdump")
    for c in cand:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def mma_mnemonics(sass_text: str) -> list[str]:
    """MMA mnemonics (with modifiers) in program order, e.g. ['HMMA.16816.F32']."""
    out = []
    for line in sass_text.splitlines():
        m = _INSN.search(line)
        if m and _MMA.match(m.group(1)):
            out.append(m.group(1))
    return out


def sass(name: str) -> tuple[str, list[str]]:
    """(cuobjdump -sass text, MMA mnemonics) of the harness kernel of ``name`` (compiled for
    its architecture's target)."""
    cub = compile_cubin(name, backend="nvcc")
    tool = cuobjdump_path()
    if tool is None:
        raise HardwareUnavailable("cuobjdump not found (CUDA toolkit binary utilities needed)")
    r = subprocess.run([tool, "-sass", str(cub)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"cuobjdump failed: {r.stderr.strip()}")
    return r.stdout, mma_mnemonics(r.stdout)


def add_parser(subparsers):
    """`mmaformal hw sass` (subparsers: the hw sub-verbs)."""
    ap = subparsers.add_parser("sass", help="the SASS MMA mnemonics (or whole SASS) of harness "
                               "kernels (nvcc and cuobjdump; no GPU needed)",
                               description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", metavar="INSTR",
                    help="instructions (default: every runnable form of --arch, N = 8, 256)")
    ap.add_argument("--arch", default="sm90", choices=sorted(TARGETS),
                    help="the architecture of the default list (default sm90)")
    ap.add_argument("--full", action="store_true", help="print the whole cuobjdump -sass text")
    return ap


def run(args) -> int:
    """MMA mnemonics (or the full SASS) of each kernel, one line (or block) each."""
    try:
        for name in args.names or instructions((8, 256), args.arch):
            text, mn = sass(name)
            print(f"===== {name}\n{text}" if args.full else f"{name}\t{' '.join(mn)}", flush=True)
    except HardwareUnavailable as e:
        raise ValueError(f"hw sass: {e}") from None
    return 0
