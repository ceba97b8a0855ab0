#!/usr/bin/env bash
# The LLaMA-style LM and the CNN examples: their full-length figures.
#
#   bench/models_cpu.sh
#
# Runs from a built tree (build/bin/kiln) and measures:
#   (a) examples/llama.kiln against examples/gpt.kiln on the bundled text,
#       each for its train block's steps (the same budget: 1000 steps of
#       32 x 64 bytes, AdamW 2e-3, warmup 100 then cosine), evaluated on the
#       same 16 batches of valid.txt: the held-out loss at every evaluation
#       and at the end, and the parameter counts (kiln check).
#   (b) examples/cnn.kiln on the digits, initializer seeds 0-4: the test
#       accuracy of each run and whether it is >= 98.5%; then the same five
#       seeds on a validation split of the training set (rows 0-1149 train,
#       1150-1437 validate), the split its settings were chosen on.
#
# Losses and accuracies do not depend on the machine's speed; no timing is
# reported. Budget: about 5 minutes on 2 cores. Outputs go to build/bench/
# (KILN_BENCH_OUT overrides it); the last lines printed are the figures.
#
# Needs: python3 (no numpy).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KILN=${KILN:-$ROOT/build/bin/kiln}
OUT=${KILN_BENCH_OUT:-$ROOT/build/bench}
DIGITS=$ROOT/examples/data/digits
TEXT=$ROOT/examples/data/text
ROWS=$ROOT/test/CLI/Inputs/npy_rows.py
mkdir -p "$OUT"

last_eval() { # METRICS KEY: the key of the last evaluation record
  python3 -c '
import json, sys
records = [json.loads(l) for l in open(sys.argv[1]) if "eval_" in l]
print(records[-1][sys.argv[2]])' "$1" "$2"
}

params() { "$KILN" check "$1" | sed -n 's/^  parameters: \([0-9]*\).*/\1/p'; }

echo "== (a) llama vs gpt on the bundled text"
for model in gpt llama; do
  "$KILN" train "$ROOT/examples/$model.kiln" --quiet \
    --tokens "$TEXT/train.txt" --eval-tokens "$TEXT/valid.txt" \
    --eval-batches 16 --metrics "$OUT/$model.models.jsonl" > /dev/null
done

echo "== (b) cnn on the digits, seeds 0-4"
python3 "$ROWS" "$DIGITS/train_x.npy" 0:1150 "$OUT/cnn.train_x.npy"
python3 "$ROWS" "$DIGITS/train_y.npy" 0:1150 "$OUT/cnn.train_y.npy"
python3 "$ROWS" "$DIGITS/train_x.npy" 1150:1438 "$OUT/cnn.valid_x.npy"
python3 "$ROWS" "$DIGITS/train_y.npy" 1150:1438 "$OUT/cnn.valid_y.npy"
for seed in 0 1 2 3 4; do
  "$KILN" train "$ROOT/examples/cnn.kiln" --quiet --seed "$seed" \
    --data x="$DIGITS/train_x.npy" --data y="$DIGITS/train_y.npy" \
    --eval x="$DIGITS/test_x.npy" --eval y="$DIGITS/test_y.npy" \
    --metrics "$OUT/cnn.test.$seed.jsonl" > /dev/null
  "$KILN" train "$ROOT/examples/cnn.kiln" --quiet --seed "$seed" \
    --data x="$OUT/cnn.train_x.npy" --data y="$OUT/cnn.train_y.npy" \
    --eval x="$OUT/cnn.valid_x.npy" --eval y="$OUT/cnn.valid_y.npy" \
    --metrics "$OUT/cnn.valid.$seed.jsonl" > /dev/null
done

echo
echo "== figures"
for model in gpt llama; do
  printf '%-6s %8s parameters, held-out loss %.4f at the last step\n' \
    "$model" "$(params "$ROOT/examples/$model.kiln")" \
    "$(last_eval "$OUT/$model.models.jsonl" eval_loss)"
done
test_accuracies=()
valid_accuracies=()
for seed in 0 1 2 3 4; do
  test_accuracies+=("$(last_eval "$OUT/cnn.test.$seed.jsonl" eval_accuracy)")
  valid_accuracies+=("$(last_eval "$OUT/cnn.valid.$seed.jsonl" eval_accuracy)")
done
python3 - "${test_accuracies[@]}" -- "${valid_accuracies[@]}" <<'EOF'
import sys
split = sys.argv.index("--")
test = [float(a) for a in sys.argv[1:split]]
valid = [float(a) for a in sys.argv[split + 1:]]
print("cnn    test accuracy, seeds 0-4: " +
      ", ".join("%.2f%%" % (100 * a) for a in test) +
      ("  (all >= 98.5%)" if min(test) >= 0.985 else "  (BELOW 98.5%)"))
print("cnn    validation accuracy (rows 1150-1437 of train), seeds 0-4: " +
      ", ".join("%.2f%%" % (100 * a) for a in valid))
EOF
