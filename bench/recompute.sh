#!/usr/bin/env bash
# Recomputation's figures (issue 4): the 12-layer GPT (bench/models/gpt12.kiln)
# compiled without recomputation, then under a budget that leaves half of its
# saved activations:
#
#   budget = peak_bytes(no recompute) - activation_bytes(no recompute) / 2
#
# where peak_bytes is every resident byte of the step (persistent buffers plus
# the arena) and activation_bytes the forward values saved across the
# forward/backward boundary, both as `kiln compile --stats` reports them. The
# plan must fit (peak_bytes <= budget) at recompute_flops <= 0.33 x
# forward_flops.
#
#   bench/recompute.sh [MODEL.kiln]     prints the figures; exits 1 if a bar
#                                       is missed
#
# Runs from a built tree (build/bin/kiln, or $KILN to override); compile only,
# a few seconds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kiln="${KILN:-$root/build/bin/kiln}"
model="${1:-$root/bench/models/gpt12.kiln}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

"$kiln" compile "$model" --stats --no-recompute > "$out/base.json"
budget="$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["peak_bytes"] - s["activation_bytes"] // 2)' "$out/base.json")"
start=$(date +%s.%N)
"$kiln" compile "$model" --stats --memory-budget "$budget" > "$out/budget.json"
end=$(date +%s.%N)

python3 - "$out" "$budget" "$start" "$end" "$(basename "$model")" <<'PY'
import json
import os
import sys

out, budget, start, end, name = sys.argv[1:]
budget = int(budget)
with open(os.path.join(out, "base.json")) as f:
    base = json.load(f)
with open(os.path.join(out, "budget.json")) as f:
    plan = json.load(f)
mib = 1024.0 * 1024.0
fwd = base["forward_flops"]
ratio = plan["recompute_flops"] / fwd
print(f"model {name}")
print(f"  without recompute: peak_bytes {base['peak_bytes']} ({base['peak_bytes'] / mib:.2f} MiB), "
      f"activation_bytes {base['activation_bytes']} ({base['activation_bytes'] / mib:.2f} MiB)")
print(f"  budget = peak - activation/2 = {budget} ({budget / mib:.2f} MiB)")
print(f"  with recompute:    peak_bytes {plan['peak_bytes']} ({plan['peak_bytes'] / mib:.2f} MiB), "
      f"activation_bytes {plan['activation_bytes']} ({plan['activation_bytes'] / mib:.2f} MiB)")
print(f"  activations kept: {plan['activation_bytes'] / base['activation_bytes']:.3f} of the original")
print(f"  recompute_flops {plan['recompute_flops']} = {ratio:.4f} x forward_flops {fwd} (bar: <= 0.33)")
print(f"  step_flops {plan['step_flops']}; compile time with the search {float(end) - float(start):.2f} s")
ok = plan["peak_bytes"] <= budget and ratio <= 0.33
print("  fits:", "yes" if plan["peak_bytes"] <= budget else "NO",
      "| recompute bar:", "met" if ratio <= 0.33 else "MISSED")
sys.exit(0 if ok else 1)
PY
