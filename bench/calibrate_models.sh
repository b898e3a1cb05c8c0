#!/usr/bin/env bash
# Calibrate platform profiles on this GPU with `mmaformal calibrate`, one run per workload:
#   gpt2   GPT-2 small (transformers, random weights, eager attention), f16
#   bert   BERT-base (transformers, random weights), bf16
#   llama  a small Llama-architecture model (transformers LlamaConfig), bf16
#   vit    timm ViT-S/16, f32 with TF32 allowed
#   fp8    torch._scaled_mm e4m3 / e4m3 x e5m2 products (use_fast_accum on and off, row scales)
# Each writes $OUT/<name>.toml (the learned profile), $OUT/<name>.json (the report: every call,
# its kernels, schedule or closest candidate) and $OUT/<name>.log. Run from the checkout root:
#   OUT=/tmp/cal bash bench/calibrate_models.sh [NAME ...]
# Env: ROWS (8), TRIALS (2), PROBES (1), TOKENS (32), CASE_SECONDS (45), LIMIT (seconds per
# workload, 105), so that all five fit in about ten minutes on an H200.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-.}
mkdir -p "$OUT"
ROWS=${ROWS:-8}; TRIALS=${TRIALS:-2}; PROBES=${PROBES:-1}; TOKENS=${TOKENS:-32}
CASE_SECONDS=${CASE_SECONDS:-45}; LIMIT=${LIMIT:-105}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
common=(--rows "$ROWS" --trials "$TRIALS" --probes "$PROBES" --case-seconds "$CASE_SECONDS" --json)

one() {   # name, args...
  local name=$1; shift
  echo "== $name: mmaformal calibrate $*" | tee "$OUT/$name.log"
  local t0=$SECONDS
  timeout "$LIMIT" python3 -m mmaformal calibrate "$@" "${common[@]}" --id "$name-calibrated" \
    --out "$OUT/$name.toml" >"$OUT/$name.json" 2>>"$OUT/$name.log"
  local rc=$?
  echo "== $name: exit $rc in $((SECONDS - t0)) s" | tee -a "$OUT/$name.log"
  tail -n 25 "$OUT/$name.log" | grep -v '^==' || true
}

names=("$@")
[ ${#names[@]} -eq 0 ] && names=(gpt2 bert llama vit fp8)
python3 -c "import torch; p = torch.cuda.get_device_properties(0); print('device', p.name, 'torch', torch.__version__, 'cuda', torch.version.cuda, 'hip', getattr(torch.version, 'hip', None))"
for n in "${names[@]}"; do
  case $n in
    gpt2)  one gpt2 --model hf:GPT2Config --dtype f16 --tokens "$TOKENS" ;;
    bert)  one bert --model hf:BertConfig --dtype bf16 --tokens "$TOKENS" ;;
    llama) one llama --model "hf:LlamaConfig:hidden_size=512,intermediate_size=1376,num_hidden_layers=2,num_attention_heads=8,num_key_value_heads=8,vocab_size=4096" \
             --dtype bf16 --tokens "$TOKENS" ;;
    vit)   one vit --model bench.calibrate_factories:vit --tf32 ;;
    fp8)   one fp8 --shapes "128x768x1024:e4m3,128x768x1024:e4m3:fast,128x768x1024:e4m3/e5m2,128x768x1024:e4m3:rowscale" ;;
    *)     echo "unknown workload $n (gpt2 bert llama vit fp8)"; exit 2 ;;
  esac
done
ls -l "$OUT"
