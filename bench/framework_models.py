"""Whole models, native and emulated side by side: bit-identical logits under a calibrated profile,
the ulp distance per layer under other architectures' profiles, and the emulation's speed.

    python3 bench/framework_models.py [--models gpt2,gpt2-sdpa,bert,llama,fp8,fp8-h100] [--profiles DIR]
                                      [--archs sm80-cublas,sm89-cublas,sm100-cublas,gfx942-hipblaslt]
                                      [--tokens B,T] [--fp8-shapes M,K,N;...] [--speed] [--out DIR]

Needs a GPU, torch and transformers (random weights from a fixed seed: nothing is downloaded).
Each model's forward pass runs natively and under ``mmaformal.torch.emulating(profile)``, where
the profile is DIR/<model>.toml when `mmaformal calibrate` wrote one there (bench/
calibrate_models.sh), else the shipped h100-cublas. Reported per model: how many logits differ
from native (raw bits), and the time of each pass. With --archs, the same forward under each named
profile (uncalibrated: one instruction per dtype) and the ulp distance to native of every linear
layer's output and of the logits, with a bar plot (OUT/ulp_per_layer.png). With --speed, GPT-2
small f16 at batch 8 x 512: native and emulated forward time (median of 3 after a warm-up run).

Models: gpt2 (GPT2LMHeadModel, f16, eager attention), gpt2-sdpa (the same with SDPA, run with the
math backend selected: torch.nn.attention.sdpa_kernel(SDPBackend.MATH)), bert (BertForMaskedLM,
bf16), llama (LlamaForCausalLM, 2 layers, hidden 512, bf16), fp8 (one linear layer through
torch._scaled_mm, e4m3 x e4m3 -> bf16, tensor-wise scales, use_fast_accum off and on; fp8-h100:
the same under the shipped h100-cublas profile).
The ulp distance of two values of one format is the difference of their positions in the
ordered list of the format's values.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from mmaformal import torch as mt  # noqa: E402

TOKENS = (2, 64)


def _ord(t: "torch.Tensor") -> np.ndarray:
    """Position of each value in its format's ordered list (f16/bf16: 16-bit sign-magnitude)."""
    b = t.detach().contiguous().view(torch.int16).cpu().numpy().astype(np.int64)
    return np.where(b < 0, -(b & 0x7FFF), b)


def _differ(x, y) -> int:
    w = {2: torch.int16, 4: torch.int32}[x.element_size()]
    return int((x.contiguous().view(w) != y.contiguous().view(w)).sum())


def _sync():
    torch.cuda.synchronize()


def _timed(fn):
    _sync()
    t = time.perf_counter()
    out = fn()
    _sync()
    return out, time.perf_counter() - t


def build(name: str):
    """(model, input ids, dtype, sdpa-math?) with random weights from seed 0."""
    import transformers as tr
    torch.manual_seed(0)
    if name in ("gpt2", "gpt2-sdpa"):
        cfg = tr.GPT2Config()
        cfg._attn_implementation = "sdpa" if name == "gpt2-sdpa" else "eager"
        m, dt = tr.GPT2LMHeadModel(cfg), torch.float16
    elif name == "bert":
        cfg = tr.BertConfig()
        cfg._attn_implementation = "eager"
        m, dt = tr.BertForMaskedLM(cfg), torch.bfloat16
    elif name == "llama":
        cfg = tr.LlamaConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=2,
                             num_attention_heads=8, num_key_value_heads=8, vocab_size=4096)
        cfg._attn_implementation = "eager"
        m, dt = tr.LlamaForCausalLM(cfg), torch.bfloat16
    else:
        raise SystemExit(f"framework_models: unknown model {name!r}")
    m = m.to(device="cuda", dtype=dt).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, TOKENS, generator=g).cuda()
    return m, ids, dt, name.endswith("-sdpa")


def _ctx(sdpa_math: bool):
    if sdpa_math:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel(SDPBackend.MATH)
    import contextlib
    return contextlib.nullcontext()


def _linear_hooks(model, store: dict):
    """Record the output of every linear layer (nn.Linear, transformers' Conv1D) by name."""
    hs = []
    for n, mod in model.named_modules():
        if type(mod).__name__ in ("Linear", "Conv1D"):
            hs.append(mod.register_forward_hook(
                lambda _m, _i, o, n=n: store.__setitem__(n, o.detach().clone())))
    return hs


def run_model(name: str, profile: str, archs: list[str]) -> dict:
    m, ids, dt, sdpa = build(name)
    nat_layers, rec = {}, {}
    hs = _linear_hooks(m, nat_layers)
    with torch.no_grad(), _ctx(sdpa):
        m(ids)                                                     # warm-up
        native, t_nat = _timed(lambda: m(ids).logits)
    for h in hs:
        h.remove()
    with torch.no_grad(), _ctx(sdpa), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with mt.emulating(profile):
            emu, t_emu = _timed(lambda: m(ids).logits)
    rec.update(model=name, dtype=str(dt).replace("torch.", ""), tokens=list(TOKENS),
               profile=profile, logits=int(native.numel()), differ=_differ(native, emu),
               native_s=round(t_nat, 4), emulated_s=round(t_emu, 2),
               warnings=sorted({str(x.message)[:200] for x in w}))
    print(f"{name}: {rec['differ']} of {rec['logits']} logits differ from native under {profile} "
          f"(native {t_nat * 1e3:.1f} ms, emulated {t_emu:.2f} s)", flush=True)
    for arch in archs:
        emu_layers = {}
        hs = _linear_hooks(m, emu_layers)
        with torch.no_grad(), _ctx(sdpa), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with mt.emulating(arch):
                out = m(ids).logits
        for h in hs:
            h.remove()
        per = {}
        for n, v in nat_layers.items():
            d = np.abs(_ord(emu_layers[n]) - _ord(v))
            per[n] = {"mean": float(d.mean()), "max": int(d.max())}
        d = np.abs(_ord(out) - _ord(native))
        rec.setdefault("archs", {})[arch] = {"logits_differ": _differ(native, out),
                                             "logits_ulp_mean": float(d.mean()),
                                             "logits_ulp_max": int(d.max()), "layers": per}
        print(f"  {arch}: {rec['archs'][arch]['logits_differ']} logits differ; ulp mean "
              f"{d.mean():.3f} max {d.max()}", flush=True)
    return rec


def run_fp8(profile: str, shape=(128, 1024, 768)) -> dict:
    """One linear layer through torch._scaled_mm: e4m3 x e4m3 -> bf16, tensor-wise scales."""
    torch.manual_seed(0)
    M, K, N = shape
    x = torch.randn(M, K, device="cuda")
    w = torch.randn(N, K, device="cuda") * 0.05
    sx, sw = x.abs().max() / 448, w.abs().max() / 448
    xq = (x / sx).to(torch.float8_e4m3fn)
    wq = (w / sw).to(torch.float8_e4m3fn)
    sa, sb = sx.float().reshape(()), sw.float().reshape(())
    rec = {"model": "fp8", "shape_mkn": [M, K, N], "profile": profile, "cases": {}}
    for fast in (False, True):
        f = lambda: torch._scaled_mm(xq, wq.t(), scale_a=sa, scale_b=sb,  # noqa: E731
                                     out_dtype=torch.bfloat16, use_fast_accum=fast)
        native, t_nat = _timed(f)
        with torch.no_grad(), mt.emulating(profile):
            emu, t_emu = _timed(f)
        rec["cases"][f"fast_accum={fast}"] = {"outputs": M * N, "differ": _differ(native, emu),
                                              "native_s": round(t_nat, 5), "emulated_s": round(t_emu, 3)}
        print(f"fp8 _scaled_mm {M}x{K}x{N} fast_accum={fast}: {rec['cases'][f'fast_accum={fast}']['differ']}"
              f" of {M * N} differ under {profile}", flush=True)
    return rec


def speed(profile: str) -> dict:
    """GPT-2 small f16, batch 8 x 512: native and emulated forward (median of 3, after a warm-up)."""
    global TOKENS
    TOKENS = (8, 512)
    m, ids, _dt, _ = build("gpt2")
    with torch.no_grad():
        m(ids)
        nat = statistics.median(_timed(lambda: m(ids).logits)[1] for _ in range(3))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with mt.emulating(profile):
                _, first = _timed(lambda: m(ids).logits)
                emu = statistics.median(_timed(lambda: m(ids).logits)[1] for _ in range(3))
    rec = {"model": "gpt2", "tokens": [8, 512], "profile": profile, "native_s": nat,
           "emulated_first_s": first, "emulated_s": emu, "ratio": emu / nat}
    print(f"speed: GPT-2 small f16 8x512: native {nat * 1e3:.1f} ms, emulated {emu:.2f} s "
          f"(first {first:.1f} s): {emu / nat:.0f}x", flush=True)
    return rec


def plot(results: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in results if r.get("archs")]
    fig, axes = plt.subplots(len(rows), 1, figsize=(12, 3.2 * len(rows)), squeeze=False)
    for ax, r in zip(axes[:, 0], rows):
        archs = list(r["archs"])
        layers = list(next(iter(r["archs"].values()))["layers"])
        x = np.arange(len(layers))
        wdt = 0.8 / max(1, len(archs))
        for i, a in enumerate(archs):
            ax.bar(x + i * wdt, [r["archs"][a]["layers"][n]["mean"] for n in layers], wdt, label=a)
        ax.set_title(f"{r['model']} ({r['dtype']}): mean ulp distance to native per linear layer")
        ax.set_xticks(x[:: max(1, len(layers) // 24)])
        ax.set_xticklabels(layers[:: max(1, len(layers) // 24)], rotation=90, fontsize=6)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="gpt2,gpt2-sdpa,bert,llama,fp8")
    p.add_argument("--profiles", default=None, help="folder of calibrated profiles <model>.toml")
    p.add_argument("--archs", default="", help="profiles to compare by ulp distance")
    p.add_argument("--speed", action="store_true")
    p.add_argument("--tokens", default="2,64", help="batch,tokens of the model inputs")
    p.add_argument("--fp8-shapes", default="128,1024,768", help="M,K,N[;M,K,N...] of the fp8 layer")
    p.add_argument("--out", default=".")
    a = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("framework_models: needs a GPU", file=sys.stderr)
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    def prof(name):
        base = "gpt2" if name.startswith("gpt2") else name
        f = Path(a.profiles) / f"{base}.toml" if a.profiles else None
        return str(f) if f and f.exists() else "h100-cublas"

    archs = [x for x in a.archs.split(",") if x]
    global TOKENS
    TOKENS = tuple(int(v) for v in a.tokens.split(","))
    fp8_shapes = [tuple(int(v) for v in s.split(",")) for s in a.fp8_shapes.split(";")]
    res = []
    for name in [x for x in a.models.split(",") if x]:
        try:
            if name == "fp8":
                res += [run_fp8(prof("fp8"), sh) for sh in fp8_shapes]
            elif name == "fp8-h100":
                res += [run_fp8("h100-cublas", sh) for sh in fp8_shapes]
            else:
                res.append(run_model(name, prof(name), archs))
        except Exception as e:              # one model's failure is reported, the others still run
            print(f"{name}: failed: {type(e).__name__}: {e}", flush=True)
            res.append({"model": name, "error": f"{type(e).__name__}: {e}"})
    if a.speed:
        try:
            res.append({"speed": speed(prof("gpt2"))})
        except Exception as e:
            print(f"speed: failed: {type(e).__name__}: {e}", flush=True)
    (out / "framework_models.json").write_text(json.dumps(
        {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "results": res}, indent=1))
    if archs:
        try:
            plot(res, out / "ulp_per_layer.png")
        except Exception as e:
            print(f"plot: failed: {type(e).__name__}: {e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
