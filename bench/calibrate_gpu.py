"""Calibrate a platform profile: which schedule reproduces each library GEMM bit for bit.

On a CUDA machine, runs GEMMs natively (cuBLAS / cuBLASLt through PyTorch) and through candidate
schedules of mmaformal (profile rules: instruction, K-block order, split of K and reduction,
tf32 pre-rounding, scale order), and prints per call which candidates match bit for bit, and
whether the shipped profile (default h100-cublas, through mmaformal.torch.emulating) does.

Cases (GPT-2 small shapes, M tokens): f16 and bf16 GEMMs of the attention / MLP projections
(K = 768, 3072; N = 768, 2304, 3072), the vocabulary projection (N = 50257, F.linear), M = N = 64
with K = 8192 (split-K), f32 with allow_tf32, fp8 torch._scaled_mm (e4m3 x e4m3, e4m3 x e5m2;
tensor-wise and row-wise scales; use_fast_accum True and False); with --gpt2 also every GEMM of
a GPT-2 small forward in f16 (transformers, random weights, eager attention), recorded natively
and replayed.

Usage:
    python3 bench/calibrate_gpu.py                       # all cases, JSON to $OUT or .
    python3 bench/calibrate_gpu.py --quick               # small shapes (a smoke test)
    python3 bench/calibrate_gpu.py --gpt2 --rows 16 --out DIR --profile h100-cublas

--rows R: only the first R rows of each product are emulated per candidate (each output row
depends only on its row of A); the profile check runs the whole product; --emulate-device cpu|cuda|auto: where mmaformal computes (auto: the GPU when CuPy
can use it). Exit status: 0 when every case ran (matches or not: they are the data), 1 on an
error, 2 on bad usage or no CUDA device.
"""
from __future__ import annotations

import argparse
import json
import os

import numpy as np
import platform
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for calibration.json")
    p.add_argument("--profile", default="h100-cublas", help="profile checked through emulating()")
    p.add_argument("--rows", type=int, default=16, help="rows of each product emulated")
    p.add_argument("--tokens", type=int, default=128, help="M of the GPT-2 shapes")
    p.add_argument("--quick", action="store_true", help="small shapes only")
    p.add_argument("--gpt2", action="store_true", help="also record and replay a GPT-2 forward")
    p.add_argument("--gpt2-only", action="store_true", help="only the GPT-2 forward (implies --gpt2)")
    p.add_argument("--emulate-device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--native-device", default="cuda",
                   help="where the native GEMMs run (cpu: a dry run of this script's plumbing)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    a = _args(argv)
    import torch
    if a.native_device == "cuda" and not torch.cuda.is_available():
        print("calibrate_gpu: no CUDA device", file=sys.stderr)
        return 2
    from mmaformal import profile as P
    from mmaformal import torch as mt
    cal = Calibration(a, torch, P, mt)
    t0 = time.time()
    try:
        cal.run()
    except Exception:                       # noqa: BLE001 (printed; exit 1)
        traceback.print_exc()
        cal.write(error=traceback.format_exc().splitlines()[-1])
        return 1
    cal.write(seconds=round(time.time() - t0, 1))
    return 0


class Calibration:
    def __init__(self, a, torch, P, mt):
        self.a, self.torch, self.P, self.mt = a, torch, P, mt
        self.dev = torch.device(a.native_device)
        self.edev = self._emulate_device()
        self.cases: list[dict] = []
        self.gen = torch.Generator(device="cpu").manual_seed(a.seed)
        self.prof = P.load(a.profile)

    # ---- plumbing

    def _emulate_device(self) -> str:
        if self.a.emulate_device != "auto":
            return self.a.emulate_device
        if self.a.native_device != "cuda":
            return "cpu"
        try:
            from mmaformal import cuda
            return "cuda" if cuda.available()[0] else "cpu"
        except Exception:                   # noqa: BLE001
            return "cpu"

    def rule(self, instruction, **kw):
        ins = self.P.isa.lookup(instruction)
        fa = "f32" if ins.a == "tf32" else ins.a
        fb = "f32" if ins.b == "tf32" else ins.b
        d = {"id": "candidate", "status": "hypothesis", "provenance": "calibration candidate",
             "instruction": instruction, "match": {"a": fa, "b": fb}}
        d.update({k: v for k, v in kw.items() if v is not None})
        return self.P.parse({"profile": {"id": "cal", "status": "hypothesis", "provenance": "-"},
                             "rule": [d]}, "calibration").rules[0]

    def rand(self, shape, dtype, scale=1.0):
        x = self.torch.randn(*shape, generator=self.gen) * scale
        return x.to(dtype)

    def bits(self, t):
        t = t.detach().contiguous().cpu()
        sig = {1: self.torch.int8, 2: self.torch.int16, 4: self.torch.int32, 8: self.torch.int64}[t.element_size()]
        return t.view(sig)

    def same(self, x, y) -> int:
        """Number of elements whose bits differ."""
        return int((self.bits(x) != self.bits(y)).sum())

    def kernels(self, fn) -> list[str]:
        """Names of the CUDA kernels fn launches (torch.profiler)."""
        if self.dev.type != "cuda":
            return []
        try:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]) as pr:
                fn()
                self.sync()
            names = []
            for e in pr.events():
                if getattr(e, "device_type", None) is not None and "CUDA" in str(e.device_type):
                    if e.name not in names:
                        names.append(e.name)
            return names
        except Exception as e:              # noqa: BLE001
            return [f"(profiler unavailable: {type(e).__name__})"]

    def sync(self):
        if self.dev.type == "cuda":
            self.torch.cuda.synchronize()

    def to(self, t):
        """A tensor on the device mmaformal computes on."""
        return t.to(self.dev if self.edev == "cuda" else self.torch.device("cpu"))

    def emu(self, x, y, rule, out_dtype):
        return self.mt.matmul_rule(self.to(x), self.to(y), rule, out_dtype=out_dtype).cpu()

    # ---- one case

    def case(self, name, op, native_fn, x, y, out_dtype, candidates, epilogue=None,
             profile_fn=None, extra=None, splits=None):
        """native_fn(): the native output (M, N); x, y: the 2-D operands of the product;
        epilogue(D_f32_rows) -> output rows (default: cast to out_dtype)."""
        torch = self.torch
        r = min(self.a.rows, x.shape[0])
        native = native_fn()
        self.sync()
        nat = native[:r].cpu()
        kern = self.kernels(native_fn)
        if splits is not None and (self.dev.type != "cuda" or any(
                "splitk" in k.lower() or "memset" in k.lower() or "reduce" in k.lower() for k in kern)):
            candidates = list(candidates) + splits()
        xr = x[:r]
        res = []
        for label, rule in candidates:
            t0 = time.time()
            try:
                d = self.emu(xr, y, rule, out_dtype)
                out = epilogue(d, rule) if epilogue else d.to(out_dtype)
                mis = self.same(out, nat)
                res.append({"candidate": label, "rule": rule.describe(), "mismatches": mis,
                            "elements": nat.numel(), "seconds": round(time.time() - t0, 2)})
            except Exception as e:          # noqa: BLE001 (a candidate that cannot run)
                res.append({"candidate": label, "error": f"{type(e).__name__}: {e}"})
        prof = None
        if profile_fn is not None:
            import warnings
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    with torch.no_grad(), self.mt.emulating(self.prof) as mode:
                        got = profile_fn(self.to)
                    full = native.cpu()
                    prof = {"rules": sorted({rid for _, rid, _ in mode.log}),
                            "covered": all(c for _, _, c in mode.log),
                            "mismatches": self.same(got.cpu(), full), "elements": full.numel(),
                            "warnings": [str(m.message) for m in w]}
                except Exception as e:      # noqa: BLE001
                    prof = {"error": f"{type(e).__name__}: {e}"}
        matching = [c["candidate"] for c in res if c.get("mismatches") == 0]
        rec = {"case": name, "op": op, "M": int(x.shape[0]), "N": int(y.shape[1]),
               "K": int(x.shape[1]), "rows_compared": r, "dtype": str(x.dtype).replace("torch.", ""),
               "kernels": kern, "matching": matching, "candidates": res,
               f"profile {self.prof.id}": prof, **(extra or {})}
        self.cases.append(rec)
        self.write(partial=True)
        best = min((c for c in res if "mismatches" in c), key=lambda c: c["mismatches"], default=None)
        pm = "-" if prof is None else ("error" if "error" in prof else
                                        f"{'MATCH' if prof['mismatches'] == 0 else 'differs'} "
                                        f"({','.join(prof['rules'])})")
        print(f"{name:40s} M={x.shape[0]:<5} N={y.shape[1]:<6} K={x.shape[1]:<5} "
              f"matching: {', '.join(matching) or 'none'}"
              + (f" (best {best['candidate']}: {best['mismatches']}/{best['elements']})"
                 if best and not matching else "")
              + f" | profile: {pm} | {kern[:1]}", flush=True)

    # ---- candidate sets

    def linear_splits(self, k16, k8, K, big):
        """Split-K candidates of a linear layer: k16 slices (2..8 of them when N is large, the
        default slice counts otherwise), and for a large N the k8 slices as well."""
        out = self.split_candidates(k16, K, "k16", slices=list(range(2, 9)) if big else None,
                                    units=(16, 64, 128, 256), formats=("acc", "out"))
        if big:
            out += self.split_candidates(k8, K, "k8", slices=list(range(2, 9)),
                                         units=(8, 64, 128, 256), formats=("acc", "out"))
        return out

    def split_candidates(self, instruction, K, tag, units=None, slices=None, reduces=("sequential",),
                         formats=("acc",), **kw):
        """Split-K candidates: S slices of K-units (array_split) and ceil-sized chunks."""
        k = self.P.isa.lookup(instruction).k
        units = [u for u in (units or (k, 32, 64, 128, 256)) if u % k == 0 and u < K]
        out, seen = [], set()
        for u in units:
            for S in (slices or list(range(2, 17)) + [24, 32]):
                if S * u > K + u:
                    continue
                for red in reduces:
                    for fmt in formats:
                        if fmt == "out" and red != "sequential":
                            continue
                        sp = {"slices": S, "unit": u, "reduce": red, "reduce_format": fmt}
                        out.append((f"{tag}-S{S}u{u}-{red[:4]}-{fmt}", self.rule(instruction, split=sp, **kw)))
                chunk = -(-K // (u * S)) * u
                for fmt in formats:
                    key = (chunk, fmt)
                    if chunk < K and key not in seen:
                        seen.add(key)
                        out.append((f"{tag}-chunk{chunk}-{fmt}", self.rule(
                            instruction, split={"chunk": chunk, "reduce_format": fmt}, **kw)))
        return out

    def half_candidates(self, fmt, K, splits):
        k16 = f"sm90/mma.m16n8k16.f32.{fmt}.{fmt}.f32"
        k8 = f"sm90/mma.m16n8k8.f32.{fmt}.{fmt}.f32"
        out = []
        for ins, tag in ((k16, "k16"), (k8, "k8")):
            for order in ("increasing", "decreasing"):
                out.append((f"{tag}-{order[:3]}", self.rule(ins, order=order)))
        if splits:
            nb = K // 16
            for S in (2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 24, 32, 64):
                if S <= nb:
                    for red in ("sequential", "pairwise"):
                        out.append((f"k16-slices{S}-{red[:4]}", self.rule(k16, split={"slices": S, "reduce": red})))
            for c in (64, 128, 256, 512, 1024, 2048, 4096):
                if c < K:
                    for red in ("sequential", "pairwise"):
                        out.append((f"k16-chunk{c}-{red[:4]}", self.rule(k16, split={"chunk": c, "reduce": red})))
        return out

    # ---- the cases

    def run(self):
        torch, F = self.torch, self.torch.nn.functional
        q = self.a.quick
        M = 32 if q else self.a.tokens
        dev = self.dev
        print(f"device {torch.cuda.get_device_name() if dev.type == 'cuda' else 'cpu (dry run)'}, torch {torch.__version__}, CUDA "
              f"{torch.version.cuda}, emulating on {self.edev}, profile {self.prof.id}", flush=True)
        from mmaformal import compile as C
        print(f"C compiler for the emulation: {C.available()}", flush=True)
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
        if self.a.gpt2_only:
            self.gpt2()
            return
        # split-K: M = N = 64, K = 8192
        K = 1024 if q else 8192
        for dt, fmt in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
            x = self.rand((64, K), dt).to(dev)
            y = self.rand((K, 64), dt).to(dev)
            k16 = f"sm90/mma.m16n8k16.f32.{fmt}.{fmt}.f32"
            self.case(f"{fmt} mm 64x64x{K}", "mm", lambda x=x, y=y: torch.mm(x, y), x, y, dt,
                      self.half_candidates(fmt, K, splits=False),
                      splits=lambda K=K, k16=k16: self.split_candidates(
                          k16, K, "k16", slices=list(range(2, 17)) + [24, 32, 48, 64],
                          reduces=("sequential", "pairwise"), formats=("acc", "out")),
                      profile_fn=lambda to, x=x, y=y: torch.mm(to(x), to(y)))
        # f32 with allow_tf32
        _set_tf32(torch, True)
        try:
            x = self.rand((M, 768 if not q else 64), torch.float32).to(dev)
            y = self.rand((x.shape[1], 768 if not q else 64), torch.float32).to(dev)
            cands = []
            for ins in ("sm90/mma.m16n8k8.f32.tf32.tf32.f32", "sm90/mma.m16n8k4.f32.tf32.tf32.f32"):
                for pre in ("tf32-rne", "none"):
                    for order in ("increasing", "decreasing"):
                        cands.append((f"{ins.split('.')[1]}-{pre}-{order[:3]}",
                                      self.rule(ins, pre_round=pre, order=order)))
            tf = "sm90/mma.m16n8k8.f32.tf32.tf32.f32"
            self.case("f32 tf32 mm", "mm", lambda: torch.mm(x, y), x, y, torch.float32, cands,
                      splits=lambda: self.split_candidates(
                          tf, x.shape[1], "k8-rne", units=(8, 32, 64, 128),
                          reduces=("sequential", "pairwise"), pre_round="tf32-rne"),
                      profile_fn=lambda to: torch.mm(to(x), to(y)))
        finally:
            _set_tf32(torch, False)
        # fp8 _scaled_mm
        if hasattr(torch, "_scaled_mm"):
            self.fp8_cases(M, 256 if q else 1024, 64 if q else 768)
        # f16 / bf16 GPT-2 projections
        shapes = [("c_attn", 768, 2304), ("attn_c_proj", 768, 768), ("mlp_c_fc", 768, 3072),
                  ("mlp_c_proj", 3072, 768), ("lm_head", 768, 50257)]
        if q:
            shapes = [("c_attn", 64, 192), ("lm_head", 64, 1001)]
        for dt, fmt in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
            for name, K, N in shapes:
                x = self.rand((M, K), dt).to(dev)
                w = self.rand((N, K), dt, 0.05).to(dev)
                cands = self.half_candidates(fmt, K, splits=False)
                k16 = f"sm90/mma.m16n8k16.f32.{fmt}.{fmt}.f32"
                k8 = f"sm90/mma.m16n8k8.f32.{fmt}.{fmt}.f32"
                big = N > 10000

                def spl(K=K, k16=k16, k8=k8, big=big):
                    return self.linear_splits(k16, k8, K, big)
                self.case(f"{fmt} linear {name}", "linear", lambda x=x, w=w: F.linear(x, w),
                          x, w.T, dt, cands, splits=spl,
                          profile_fn=lambda to, x=x, w=w: F.linear(to(x), to(w)))
        if self.a.gpt2:
            self.gpt2()

    def fp8_cases(self, M, K, N):
        torch = self.torch
        dev = self.dev
        pairs = [("e4m3", "e4m3", torch.float8_e4m3fn, torch.float8_e4m3fn),
                 ("e4m3", "e5m2", torch.float8_e4m3fn, torch.float8_e5m2)]
        for fa, fb, da, db in pairs:
            a = (self.rand((M, K), torch.float32) * 4).to(da).to(dev)
            b = (self.rand((N, K), torch.float32) * 4).to(db).to(dev).T   # column-major
            sa = torch.tensor(0.37, device=dev)
            sb = torch.tensor(1.3, device=dev)
            ra = (torch.rand(M, 1, generator=self.gen) + 0.5).to(dev)
            rb = (torch.rand(1, N, generator=self.gen) + 0.5).to(dev)
            wg = f"sm90/wgmma.m64n8k32.f32.{fa}.{fb}"
            sync = f"sm90/mma.m16n8k32.f32.{fa}.{fb}.f32"
            for scaling, (s1, s2) in (("tensor", (sa, sb)), ("row", (ra, rb))):
                for fast in (True, False):
                    if scaling == "row" and fa != fb:
                        continue
                    out_dtype = torch.bfloat16
                    cands = []
                    for ins, tag in ((wg, "wgmma"), (sync, "mma.sync")):
                        for chunk in (None, 64, 128, 256, 512):
                            if chunk and chunk >= K:
                                continue
                            for so in ("ab", "a-then-b"):
                                cands.append((f"{tag}-{'chunk' + str(chunk) if chunk else 'chain'}-{so}",
                                              self.rule(ins, split={"chunk": chunk} if chunk else None,
                                                        epilogue={"scale_order": so})))

                    def native(a=a, b=b, s1=s1, s2=s2, fast=fast):
                        return torch._scaled_mm(a, b, s1, s2, out_dtype=out_dtype, use_fast_accum=fast)

                    def epi(d, rule, s1=s1, s2=s2, scaling=scaling):
                        r = d.shape[0]
                        x1 = s1.float().cpu()
                        x2 = s2.float().cpu()
                        if scaling == "tensor":
                            x1, x2 = x1.reshape(()), x2.reshape(())
                        else:
                            x1 = x1[:r]
                        y = d * (x1 * x2) if rule.epilogue.scale_order == "ab" else (d * x1) * x2
                        return y.to(out_dtype)

                    def prof(to, a=a, b=b, s1=s1, s2=s2, fast=fast):
                        return torch._scaled_mm(to(a), to(b), to(s1), to(s2), out_dtype=out_dtype,
                                                use_fast_accum=fast)

                    self.case(f"fp8 {fa}x{fb} {scaling} fast={fast}", "scaled_mm", native, a, b,
                              out_dtype, cands, epilogue=epi, profile_fn=prof,
                              extra={"fast_accum": fast, "scaling": scaling})

    def gpt2(self):
        """Every GEMM of a GPT-2 small forward (f16, random weights, eager attention), recorded
        natively and replayed through the candidates."""
        torch = self.torch
        from torch.overrides import TorchFunctionMode
        try:
            import transformers
        except ImportError:
            print("gpt2: transformers is not installed; skipped", flush=True)
            return
        cfg = transformers.GPT2Config()
        try:
            model = transformers.GPT2LMHeadModel(cfg, attn_implementation="eager")
        except TypeError:
            cfg._attn_implementation = "eager"
            model = transformers.GPT2LMHeadModel(cfg)
        model = model.half().to(self.dev).eval()
        ids = torch.randint(0, cfg.vocab_size, (1, 16 if self.a.quick else 64), generator=self.gen).to(self.dev)
        F = torch.nn.functional
        kinds = {torch.matmul: "matmul", torch.Tensor.matmul: "matmul", torch.Tensor.__matmul__: "matmul",
                 torch.mm: "mm", torch.bmm: "bmm", F.linear: "linear", torch.addmm: "addmm",
                 torch.baddbmm: "baddbmm"}
        rec = []

        class Rec(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                try:
                    k = kinds.get(func)
                except TypeError:
                    k = None
                if k is not None:
                    rec.append((func, k, args, kwargs, out))
                return out

        with torch.inference_mode():
            with Rec():
                logits = model(ids).logits
        if self.edev != self.dev.type:
            print("gpt2: logits under emulating() need mmaformal on the native device (CuPy); "
                  "only the recorded products are replayed", flush=True)
            mode = None
        else:
            with torch.inference_mode(), self.mt.emulating(self.prof) as mode:
                emu = model(ids).logits
        if mode is not None:
            self._gpt2_logits(rec, logits, emu, mode)
        with torch.inference_mode():
            self._gpt2_replay(rec)

    def _gpt2_logits(self, rec, logits, emu, mode):
        print(f"gpt2: {len(rec)} recorded products; logits under emulating({self.prof.id}): "
              f"{self.same(emu, logits)} of {logits.numel()} elements differ; rules "
              f"{sorted({r for _, r, _ in mode.log})}", flush=True)
        self.cases.append({"case": "gpt2 logits", "products": len(rec),
                           "mismatches": self.same(emu, logits), "elements": logits.numel(),
                           "rules": sorted({r for _, r, _ in mode.log})})

    def _gpt2_replay(self, rec):
        torch = self.torch
        seen = set()
        for i, (func, k, args, kwargs, out) in enumerate(rec):
            if k == "addmm":
                bias, x, y = args[0], args[1], args[2]
            elif k == "linear":
                x, y, bias = args[0], args[1].T, (args[2] if len(args) > 2 else kwargs.get("bias"))
            else:
                x, y, bias = args[0], args[1], None
            if x.dim() != 2 or y.dim() != 2:
                if x.dim() >= 3 and y.dim() >= 3:     # attention products: first matrix only
                    x, y, out = x.reshape(-1, *x.shape[-2:])[0], y.reshape(-1, *y.shape[-2:])[0], \
                        out.reshape(-1, *out.shape[-2:])[0]
                else:
                    x = x.reshape(-1, x.shape[-1])
                    out = out.reshape(-1, out.shape[-1])
            key = (k, tuple(x.shape), tuple(y.shape), bias is not None)
            if key in seen:
                continue
            seen.add(key)
            fmt = "f16"
            cands = self.half_candidates(fmt, x.shape[1], splits=False)

            def epi(d, rule, bias=bias):
                if bias is None:
                    return d.to(torch.float16)
                return (d.float() + bias.float().cpu()).to(torch.float16)

            k16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"
            k8 = "sm90/mma.m16n8k8.f32.f16.f16.f32"
            big = y.shape[1] > 10000

            def spl(K=x.shape[1], big=big):
                return self.linear_splits(k16, k8, K, big)

            def rerun(func=func, args=args, kwargs=kwargs, shape=tuple(out.shape)):
                o = func(*args, **kwargs)
                if o.numel() == int(np.prod(shape)):
                    return o.reshape(shape)
                return o.reshape(-1, *o.shape[-2:])[0]           # attention: the first matrix

            self.case(f"gpt2 #{i} {k}", k, rerun, x, y, torch.float16, cands, epilogue=epi,
                      splits=spl)

    def write(self, **extra):
        torch = self.torch
        out = Path(self.a.out)
        out.mkdir(parents=True, exist_ok=True)
        info = {"device": torch.cuda.get_device_name() if self.dev.type == "cuda" else "cpu (dry run)",
                "torch": torch.__version__, "cuda": torch.version.cuda,
                "host": platform.node(), "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
                "profile": self.prof.id, "emulate_device": self.edev, "rows": self.a.rows,
                "cases": self.cases, **extra}
        p = out / "calibration.json"
        p.write_text(json.dumps(info, indent=1))
        if not extra.get("partial"):
            print(f"wrote {p}", flush=True)


def _set_tf32(torch, on: bool) -> None:
    m = torch.backends.cuda.matmul
    if hasattr(m, "fp32_precision"):
        m.fp32_precision = "tf32" if on else "ieee"
    else:
        m.allow_tf32 = on


if __name__ == "__main__":
    sys.exit(main())
