"""Regenerate the Khattak-Mikaitis fixture (khattak-mikaitis-2025.tar.zst) from their repository.

What it reads: the public repository north-numerical-computing/MATLAB-tensor-core, folder
``model_validation/``: per GPU (V100, A100, A2, Ada, L40S, H100, H200, B200) and input format
(fp16, bf16, tf32, E4M3, E5M2) the inputs ``a_<GPU>_<fmt>.txt`` / ``b_...`` (one dot product per
line, each element an f32 bit pattern in hex), ``c_<GPU>_fp32.txt`` (one f32 bit string per line)
and the GPU outputs ``d_<GPU>_fp32.txt`` / ``d_<GPU>_fp16.txt`` (one f32 bit string per line; the
f16 outputs were widened to f32 by ``__half2float``, which is exact). The CUDA programs that
captured them are ``model_validation/CUDA/*.cu`` (see tests/test_published.py for what each ran).

What it writes (``--out``, default beside this script): a pack (mmaformal.packs) of ``.npy``
members holding raw bits of the first ``--n`` dot products of every set, and ``index.json``
naming, per set, the members and the repository paths and git blob ids they came from:

- ``ab/<fmt>-L<len>-<blob>.npy``: A or B rows, (n, len), in the operand format the CUDA program
  converted them to (f16, bf16, e4m3, e5m2: uint16/uint8 bits; tf32: the uint32 f32 container,
  as the program passes it). The text values are exact in the format (checked); files shared by
  several GPUs (same blob) are stored once.
- ``c/<blob>.npy``: the c file as uint32 f32 bits (the program rounds it to f16 with
  ``__float2half`` for the f16-output sets; the test does that, RNE).
- ``d/<blob>.npy``: the output as bits of the output format (uint32 f32, or uint16 f16 narrowed
  exactly from the file's f32).

Usage (the `fetch` of the repository gives a bare git directory):

    python3 tests/data/published/make_khattak_mikaitis.py --git-dir PATH/repo [--rev HEAD] [--n 1000]

Only the standard library, numpy and ml_dtypes are used for the conversions (no mmaformal code
besides mmaformal.packs to write the pack), so the fixture shares no arithmetic with the core.
"""
from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
NAME = "khattak-mikaitis-2025"
REPO = "north-numerical-computing/MATLAB-tensor-core"

#: (GPU, input format folder, output formats captured): model_validation/ as published
SETS = [
    ("V100", "fp16", ("fp16", "fp32")),
    *[(g, f, o) for g in ("A100", "A2") for f, o in (("fp16", ("fp16", "fp32")), ("bf16", ("fp32",)),
                                                     ("tf32", ("fp32",)))],
    *[(g, f, o) for g in ("Ada", "L40S", "H100", "H200", "B200")
      for f, o in (("fp16", ("fp16", "fp32")), ("bf16", ("fp32",)), ("tf32", ("fp32",)),
                   ("E4M3", ("fp16", "fp32")), ("E5M2", ("fp16", "fp32")))],
]
#: sets the repository does not have (L40S fp8 was captured with f32 output only)
MISSING = {("L40S", "E4M3", "fp16"), ("L40S", "E5M2", "fp16")}


def _git(git_dir: str, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True,
                          capture_output=True).stdout


def _blob(git_dir: str, rev: str, path: str) -> tuple[str, str]:
    """(blob id, text) of model_validation/<path> at rev."""
    full = f"model_validation/{path}"
    bid = _git(git_dir, "rev-parse", f"{rev}:{full}").decode().strip()
    return bid, _git(git_dir, "cat-file", "blob", bid).decode()


def _hex_rows(text: str, n: int) -> np.ndarray:
    rows = [[int(t, 16) for t in line.split()] for line in text.splitlines() if line.strip()][:n]
    return np.array(rows, dtype=np.uint32)


def _bin_lines(text: str, n: int) -> np.ndarray:
    vals = [int(line.strip(), 2) for line in text.splitlines() if line.strip()][:n]
    assert all(len(line.strip()) == 32 for line in text.splitlines() if line.strip())
    return np.array(vals, dtype=np.uint32)


def _operand_bits(u32: np.ndarray, fmt: str) -> np.ndarray:
    """The f32 text values as bits of the operand format; exactness checked."""
    if fmt == "tf32":
        return u32                                # the program passes the f32 container
    import ml_dtypes
    dt = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16,
          "E4M3": ml_dtypes.float8_e4m3fn, "E5M2": ml_dtypes.float8_e5m2}[fmt]
    f = u32.view(np.float32)
    x = f.astype(dt)
    if not np.array_equal(x.astype(np.float32), f):
        raise SystemExit(f"an input value is not exact in {fmt}")
    return x.view(np.uint16 if x.dtype.itemsize == 2 else np.uint8)


def _npy(x: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(x), allow_pickle=False)
    return buf.getvalue()


def build(git_dir: str, rev: str, n: int) -> tuple[dict[str, bytes], dict]:
    commit = _git(git_dir, "rev-parse", rev).decode().strip()
    members: dict[str, bytes] = {}
    sets = []
    for gpu, fmt, outs in SETS:
        base = f"{gpu}/{fmt}/"
        files = {"a": f"a_{gpu}_{fmt}.txt", "b": f"b_{gpu}_{fmt}.txt", "c": f"c_{gpu}_fp32.txt"}
        got = {k: (*_blob(git_dir, rev, base + v), base + v) for k, v in files.items()}
        names = {}
        for k in ("a", "b"):
            bid, text, _ = got[k]
            bits = _operand_bits(_hex_rows(text, n), fmt)
            names[k] = f"ab/{fmt}-L{bits.shape[1]}-{bid[:12]}.npy"
            members.setdefault(names[k], _npy(bits))
        bid, text, _ = got["c"]
        names["c"] = f"c/{bid[:12]}.npy"
        members.setdefault(names["c"], _npy(_bin_lines(text, n)))
        for out in outs:
            if (gpu, fmt, out) in MISSING:
                continue
            dpath = base + f"d_{gpu}_{out}.txt"
            bid, text = _blob(git_dir, rev, dpath)
            d = _bin_lines(text, n)
            if out == "fp16":
                h = d.view(np.float32).astype(np.float16)
                if not np.array_equal(h.astype(np.float32).view(np.uint32), d):
                    raise SystemExit(f"{dpath}: a value is not an f16 widened to f32")
                d = h.view(np.uint16)
            dname = f"d/{bid[:12]}.npy"
            members.setdefault(dname, _npy(d))
            sets.append({
                "gpu": gpu, "format": fmt, "out": out, "n": int(len(d)),
                "a": names["a"], "b": names["b"], "c": names["c"], "d": dname,
                "paths": {"a": got["a"][2], "b": got["b"][2], "c": got["c"][2], "d": dpath},
                "blobs": {"a": got["a"][0], "b": got["b"][0], "c": got["c"][0], "d": bid},
            })
    index = {"repository": REPO, "folder": "model_validation", "commit": commit, "n": n,
             "sets": sets}
    members["index.json"] = (json.dumps(index, indent=1, sort_keys=True) + "\n").encode()
    return members, index


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--git-dir", required=True, help="git directory of the fetched repository")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--n", type=int, default=1000, help="first N dot products of each set")
    ap.add_argument("--out", default=str(HERE / (NAME + ".tar.zst")))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE.parents[2]))
    from mmaformal import packs
    members, index = build(args.git_dir, args.rev, args.n)
    packs.write_pack(args.out, members)
    size = Path(args.out).stat().st_size
    print(f"{args.out}: {len(index['sets'])} sets, {len(members)} members, {size} bytes "
          f"(commit {index['commit'][:12]}, first {args.n} dot products)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
