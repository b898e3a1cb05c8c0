"""Benchmark: one transformer block's forward pass under the arithmetic of five architectures.

    python3 bench/bench_model.py [--device auto|cpu|cuda] [--d 256 --heads 4 --seq 128 --batch 2]
                                 [--dtype float16|bfloat16] [--plot OUT.png] [--json OUT.json]

A pre-LayerNorm transformer block (random weights from a fixed seed, nothing downloaded): q, k,
v projections, scores = q k^T / sqrt(d_head), softmax, attention = p v, output projection,
residual, LayerNorm, MLP (fc1, GELU, fc2), residual. The forward pass runs natively (torch) and
under ``mmaformal.torch.emulating(instr)`` for one f16 (or bf16) instruction with f32
accumulation of each architecture (ARCHS): every matrix product (F.linear, matmul) runs with
that instruction's exact arithmetic; everything else (softmax, LayerNorm, GELU, the epilogues)
is torch's own, identical for all.

Reported per layer output and for the block's output: the max and mean distance in ulps of the
activation dtype between each architecture and the reference architecture (--ref, default
sm90), and against the native torch pass; a PNG bar plot of the mean distances per layer.
The ulp distance of two finite values of one format is the difference of their positions in
the format's ordered list of values (|ord(x) - ord(y)|, ord monotone over the bit patterns).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from mmaformal import torch as mt  # noqa: E402

ARCHS = {
    "float16": {
        "sm80": "sm80/mma.m16n8k16.f32.f16.f16.f32",
        "sm90": "sm90/mma.m16n8k16.f32.f16.f16.f32",
        "sm100": "sm100/tcgen05.mma.m64n8k16.kind::f16.f32.f16.f16",
        "gfx90a": "gfx90a/v_mfma_f32_32x32x8f16",
        "gfx942": "gfx942/v_mfma_f32_32x32x8_f16",
    },
    "bfloat16": {
        "sm80": "sm80/mma.m16n8k16.f32.bf16.bf16.f32",
        "sm90": "sm90/mma.m16n8k16.f32.bf16.bf16.f32",
        "sm100": "sm100/tcgen05.mma.m64n8k16.kind::f16.f32.bf16.bf16",
        "gfx90a": "gfx90a/v_mfma_f32_32x32x8bf16_1k",
        "gfx942": "gfx942/v_mfma_f32_32x32x8_bf16",
    },
}
LAYERS = ["q", "k", "v", "scores", "attn", "o_proj", "resid1", "ln", "fc1", "gelu", "fc2", "output"]


def make_block(d: int, heads: int, dtype, device, seed: int = 0):
    g = torch.Generator().manual_seed(seed)

    def w(o, i):
        return (torch.randn(o, i, generator=g) / math.sqrt(i)).to(dtype).to(device)

    def b(o):
        return (0.02 * torch.randn(o, generator=g)).to(dtype).to(device)

    return {"wq": w(d, d), "wk": w(d, d), "wv": w(d, d), "wo": w(d, d), "bo": b(d),
            "w1": w(4 * d, d), "b1": b(4 * d), "w2": w(d, 4 * d), "b2": b(d),
            "ln_w": (1 + 0.1 * torch.randn(d, generator=g)).to(dtype).to(device),
            "ln_b": b(d), "heads": heads}


def forward(p, x):
    """The block's forward pass; every layer output (LAYERS) is kept."""
    out = {}
    B, S, d = x.shape
    H = p["heads"]
    dh = d // H
    q = F.linear(x, p["wq"])
    k = F.linear(x, p["wk"])
    v = F.linear(x, p["wv"])
    out["q"], out["k"], out["v"] = q, k, v
    qh = q.view(B, S, H, dh).transpose(1, 2)
    kh = k.view(B, S, H, dh).transpose(1, 2)
    vh = v.view(B, S, H, dh).transpose(1, 2)
    scores = torch.matmul(qh, kh.transpose(-1, -2)) * (1.0 / math.sqrt(dh))
    out["scores"] = scores
    pr = torch.softmax(scores.float(), dim=-1).to(x.dtype)
    attn = torch.matmul(pr, vh).transpose(1, 2).reshape(B, S, d)
    out["attn"] = attn
    o = F.linear(attn, p["wo"], p["bo"])
    out["o_proj"] = o
    h = x + o
    out["resid1"] = h
    hn = F.layer_norm(h.float(), (d,), p["ln_w"].float(), p["ln_b"].float()).to(x.dtype)
    out["ln"] = hn
    f1 = F.linear(hn, p["w1"], p["b1"])
    out["fc1"] = f1
    ge = F.gelu(f1.float()).to(x.dtype)
    out["gelu"] = ge
    f2 = F.linear(ge, p["w2"], p["b2"])
    out["fc2"] = f2
    out["output"] = h + f2
    return out


def ordinal(t: torch.Tensor) -> np.ndarray:
    """Monotone integer position of each value of a 16-bit float format (finite values)."""
    u = t.detach().cpu().contiguous().view(torch.int16).numpy().astype(np.int64) & 0xFFFF
    neg = u >= 0x8000
    mag = u & 0x7FFF
    return np.where(neg, -mag, mag)


def ulp_stats(a: torch.Tensor, b: torch.Tensor) -> dict:
    x, y = ordinal(a), ordinal(b)
    fa = torch.isfinite(a.float()).cpu().numpy() & torch.isfinite(b.float()).cpu().numpy()
    d = np.abs(x - y)[fa]
    return {"max": int(d.max()) if d.size else 0, "mean": float(d.mean()) if d.size else 0.0,
            "differ": float((d > 0).mean()) if d.size else 0.0, "nonfinite": int((~fa).sum())}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--dtype", default="float16", choices=sorted(ARCHS))
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ref", default="sm90")
    p.add_argument("--plot", metavar="OUT.png")
    p.add_argument("--json", metavar="OUT.json")
    a = p.parse_args(argv)
    dev = a.device
    if dev == "auto":
        dev = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = getattr(torch, a.dtype)
    params = make_block(a.d, a.heads, dtype, dev, a.seed)
    g = torch.Generator().manual_seed(a.seed + 1)
    x = torch.randn(a.batch, a.seq, a.d, generator=g).to(dtype).to(dev)
    runs = {}
    with torch.inference_mode():
        t0 = time.perf_counter()
        runs["native"] = forward(params, x)
        times = {"native": time.perf_counter() - t0}
        for arch, instr in ARCHS[a.dtype].items():
            t0 = time.perf_counter()
            with mt.emulating(instr) as mode:
                runs[arch] = forward(params, x)
            if dev == "cuda":
                torch.cuda.synchronize()
            times[arch] = time.perf_counter() - t0
            print(f"{arch:<7} {instr:<52} {mode.calls:>3} products emulated, {times[arch]:.2f} s", flush=True)
    ref = runs[a.ref]
    table = {}
    for arch in runs:
        if arch == a.ref:
            continue
        table[arch] = {L: ulp_stats(runs[arch][L], ref[L]) for L in LAYERS}
    pair = {x1: {x2: ulp_stats(runs[x1]["output"], runs[x2]["output"])["mean"] for x2 in runs}
            for x1 in runs}
    gpu = torch.cuda.get_device_name() if dev == "cuda" else "cpu"
    head = (f"transformer block d={a.d} heads={a.heads} seq={a.seq} batch={a.batch} {a.dtype}, "
            f"seed {a.seed}, device {gpu}, {time.strftime('%Y-%m-%d', time.gmtime())}")
    print("\n" + head)
    print(f"ulps of {a.dtype} against {a.ref} ({ARCHS[a.dtype][a.ref]}): max / mean per layer")
    cols = list(table)
    print(f"{'layer':<8} " + " ".join(f"{c:>16}" for c in cols))
    for L in LAYERS:
        print(f"{L:<8} " + " ".join(f"{table[c][L]['max']:>7} / {table[c][L]['mean']:<6.3f}" for c in cols))
    print("\nmean ulp distance of the block output, pairwise")
    print(f"{'':<8} " + " ".join(f"{c:>8}" for c in runs))
    for x1 in runs:
        print(f"{x1:<8} " + " ".join(f"{pair[x1][x2]:>8.3f}" for x2 in runs))
    written = None
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(10, 4.5))
        w = 0.8 / len(cols)
        xs = np.arange(len(LAYERS))
        for i, c in enumerate(cols):
            ax.bar(xs + i * w, [table[c][L]["mean"] for L in LAYERS], w, label=c)
        ax.set_xticks(xs + 0.4 - w / 2)
        ax.set_xticklabels(LAYERS, rotation=30)
        ax.set_ylabel(f"mean |ulp| vs {a.ref}")
        ax.set_title(head, fontsize=8)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(a.plot, dpi=120)
        written = a.plot
        print(f"\nwrote {written}")
    if a.json:
        Path(a.json).write_text(json.dumps({"setup": head, "ref": a.ref, "instructions": ARCHS[a.dtype],
                                            "table": table, "pairwise_output_mean": pair,
                                            "seconds": times, "plot": written}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
