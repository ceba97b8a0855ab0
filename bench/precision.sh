#!/usr/bin/env bash
# bf16 and fp16 (with dynamic loss scaling) against fp32 on the cpu target,
# examples/gpt.kiln, in one run:
#  1. the train block's full length in each precision: held-out losses and
#     their relative difference from fp32's (the bar: within 2%), and the
#     steps fp16's loss scaling skipped;
#  2. step time, interleaved (fp32 bf16 fp16 fp32 bf16 fp16 ...), ROUNDS
#     rounds of STEPS-step runs: the medians of the per-round ratios
#     fp32/bf16 and fp32/fp16 (> 1: the low precision is faster);
#  3. activation and peak bytes from `kiln compile --stats`.
# Usage: bench/precision.sh [ROUNDS] [STEPS] [PARTS]
# PARTS: "all" (default), or any of "full", "time", "bytes" joined by
# commas, to rerun one part.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kiln="${KILN:-$root/build/bin/kiln}"
rounds="${1:-5}"
steps="${2:-40}"
parts="${3:-all}"
run_part() { [[ "$parts" == all || ",$parts," == *",$1,"* ]]; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
model="$root/examples/gpt.kiln"
data=(--tokens "$root/examples/data/text/train.txt"
      --eval-tokens "$root/examples/data/text/valid.txt" --eval-batches 16)
low=(bf16 fp16)

if run_part full; then
echo "== full length (the train block's steps)"
for precision in fp32 "${low[@]}"; do
  "$kiln" train "$model" "${data[@]}" --precision "$precision" --quiet \
    --metrics "$out/full-$precision.jsonl" > /dev/null
done
for precision in "${low[@]}"; do
  echo "-- $precision"
  python3 "$root/test/CLI/Inputs/compare_eval_loss.py" \
    "$out/full-fp32.jsonl" "$out/full-$precision.jsonl" 0.02 || true
done
python3 - "$out/full-fp16.jsonl" <<'PY'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"loss_scale"' in l]
skipped = sum(1 for s in steps if s["skipped"])
print(f"fp16: {skipped} of {len(steps)} steps skipped by loss scaling; "
      f"final scale {steps[-1]['loss_scale']:g}")
PY
fi

if run_part time; then
echo "== step time, $rounds interleaved rounds of $steps steps"
for ((i = 0; i < rounds; ++i)); do
  for precision in fp32 "${low[@]}"; do
    "$kiln" train "$model" "${data[@]}" --precision "$precision" --quiet \
      --steps "$steps" --eval-every "$steps" \
      --metrics "$out/time-$i-$precision.jsonl" > /dev/null
  done
done
python3 - "$out" "$rounds" "${low[@]}" <<'PY'
import json, statistics, sys
out, rounds, low = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def median_step(path):
    ms = [json.loads(l)["step_ms"] for l in open(path) if '"step_ms"' in l]
    return statistics.median(ms[len(ms) // 4:])  # past the warm-up
ratios = {p: [] for p in low}
for i in range(rounds):
    base = median_step(f"{out}/time-{i}-fp32.jsonl")
    line = f"round {i}: fp32 {base:.1f} ms"
    for p in low:
        t = median_step(f"{out}/time-{i}-{p}.jsonl")
        ratios[p].append(base / t)
        line += f"  {p} {t:.1f} ms (fp32/{p} {base / t:.3f})"
    print(line)
for p in low:
    print(f"median fp32/{p} step-time ratio: {statistics.median(ratios[p]):.3f}")
PY
fi

if run_part bytes; then
echo "== activation bytes (kiln compile --stats)"
for precision in fp32 "${low[@]}"; do
  "$kiln" compile "$model" --train --stats --precision "$precision" \
    > "$out/stats-$precision.json"
done
python3 - "$out" "${low[@]}" <<'PY'
import json, sys
out, low = sys.argv[1], sys.argv[2:]
a = json.load(open(f"{out}/stats-fp32.json"))
for p in low:
    b = json.load(open(f"{out}/stats-{p}.json"))
    for key in ("activation_bytes", "peak_bytes"):
        print(f"{key}: fp32 {a[key]} {p} {b[key]} {p}/fp32 {b[key] / a[key]:.3f}")
PY
fi
