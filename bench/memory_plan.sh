#!/usr/bin/env bash
# The memory plan's figures (issue 4): for examples/mlp.kiln,
# examples/gpt.kiln and the 12-layer GPT (bench/models/gpt12.kiln), per
# entry point: the planned arena, the live lower bound (the largest sum of
# simultaneously live transient bytes), their ratio (the issue asks for
# <= 1.05), and the naive arena (one slice per transient, as
# --kernel-assign-offsets-naive places them) against the planned one.
#
#   bench/memory_plan.sh            prints the table
#
# Runs from a built tree (build/bin/kiln, or $KILN to override); compile
# only, a second or two. Exits 1 if an arena exceeds 1.05 x its bound.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kiln="${KILN:-$root/build/bin/kiln}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

models=("$root/examples/mlp.kiln" "$root/examples/gpt.kiln"
        "$root/bench/models/gpt12.kiln")
for model in "${models[@]}"; do
  "$kiln" compile "$model" --stats > "$out/$(basename "$model" .kiln).json"
done

python3 - "$out" "${models[@]}" <<'PY'
import json
import os
import sys

out, models = sys.argv[1], sys.argv[2:]
mib = 1024.0 * 1024.0
print(f"{'model':8} {'entry':11} {'arena MiB':>10} {'bound MiB':>10} "
      f"{'arena/bound':>11} {'naive MiB':>10} {'naive/arena':>11}")
worst = 0.0
for model in models:
    name = os.path.basename(model)[:-len(".kiln")]
    with open(os.path.join(out, name + ".json")) as f:
        stats = json.load(f)
    rows = sorted(stats["entries"].items()) + [("(module)", stats)]
    for entry, e in rows:
        arena, bound = e["arena_bytes"], e["live_lower_bound_bytes"]
        naive = e["naive_arena_bytes"]
        ratio = arena / bound if bound else 1.0
        worst = max(worst, ratio)
        print(f"{name:8} {entry:11} {arena / mib:10.3f} {bound / mib:10.3f} "
              f"{ratio:11.4f} {naive / mib:10.3f} {naive / arena:11.2f}")
    print(f"{name:8} peak {stats['peak_bytes'] / mib:.2f} MiB, saved "
          f"activations {stats['activation_bytes'] / mib:.2f} MiB, "
          f"{stats['kernels']} kernels per step "
          f"({stats['kernels_optimizer']} optimizer)")
print(f"worst arena / lower bound: {worst:.4f} (issue 4 asks <= 1.05)")
sys.exit(0 if worst <= 1.05 else 1)
PY
