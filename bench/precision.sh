#!/usr/bin/env bash
# bf16 against fp32 on the cpu target, examples/gpt.kiln, in one run:
#  1. the train block's full length in each precision: held-out losses and
#     their relative difference (the bar: within 2%);
#  2. step time, interleaved (fp32 bf16 fp32 bf16 ...), PAIRS pairs of
#     STEPS-step runs: the median of the per-pair ratios fp32/bf16 (> 1:
#     bf16 is faster);
#  3. activation bytes from `kiln compile --stats`.
# Usage: bench/precision.sh [PAIRS] [STEPS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kiln="${KILN:-$root/build/bin/kiln}"
pairs="${1:-5}"
steps="${2:-40}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
model="$root/examples/gpt.kiln"
data=(--tokens "$root/examples/data/text/train.txt"
      --eval-tokens "$root/examples/data/text/valid.txt" --eval-batches 16)

echo "== full length (the train block's steps)"
for precision in fp32 bf16; do
  "$kiln" train "$model" "${data[@]}" --precision "$precision" --quiet \
    --metrics "$out/full-$precision.jsonl" > /dev/null
done
python3 "$root/test/CLI/Inputs/compare_eval_loss.py" \
  "$out/full-fp32.jsonl" "$out/full-bf16.jsonl" 0.02 || true

echo "== step time, $pairs interleaved pairs of $steps steps"
for ((i = 0; i < pairs; ++i)); do
  for precision in fp32 bf16; do
    "$kiln" train "$model" "${data[@]}" --precision "$precision" --quiet \
      --steps "$steps" --eval-every "$steps" \
      --metrics "$out/time-$i-$precision.jsonl" > /dev/null
  done
done
python3 - "$out" "$pairs" <<'PY'
import json, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
def median_step(path):
    ms = [json.loads(l)["step_ms"] for l in open(path) if '"step_ms"' in l]
    return statistics.median(ms[len(ms) // 4:])  # past the warm-up
ratios = []
for i in range(pairs):
    a = median_step(f"{out}/time-{i}-fp32.jsonl")
    b = median_step(f"{out}/time-{i}-bf16.jsonl")
    ratios.append(a / b)
    print(f"pair {i}: fp32 {a:.1f} ms  bf16 {b:.1f} ms  fp32/bf16 {a / b:.3f}")
print(f"median fp32/bf16 step-time ratio: {statistics.median(ratios):.3f}")
PY

echo "== activation bytes (kiln compile --stats)"
for precision in fp32 bf16; do
  "$kiln" compile "$model" --train --stats --precision "$precision" \
    > "$out/stats-$precision.json"
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
a = json.load(open(f"{out}/stats-fp32.json"))
b = json.load(open(f"{out}/stats-bf16.json"))
for key in ("activation_bytes", "peak_bytes"):
    print(f"{key}: fp32 {a[key]} bf16 {b[key]} bf16/fp32 {b[key] / a[key]:.3f}")
PY
