#!/usr/bin/env bash
# Sets Kiln up on a fresh machine and runs the main job: it trains the
# byte-level GPT of examples/gpt.kiln on the bundled text on the CPU (the
# steps of its train block), showing the falling training and held-out loss,
# then generates a sample of text from the trained weights.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
out="${KILN_DEMO_DIR:-$root/demo-output}"

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" kiln
kiln="$build/bin/kiln"
mkdir -p "$out"

echo
echo "== the model"
"$kiln" check "$root/examples/gpt.kiln"

echo
echo "== training (the loss at the start is about ln 256 = 5.5 nats/byte)"
"$kiln" train "$root/examples/gpt.kiln" \
  --tokens "$root/examples/data/text/train.txt" \
  --eval-tokens "$root/examples/data/text/valid.txt" --eval-batches 16 \
  --metrics "$out/gpt.jsonl" --save "$out/gpt.safetensors"

echo
echo "== a sample from the trained model"
"$kiln" sample "$out/gpt.safetensors" --model "$root/examples/gpt.kiln" \
  --prompt "The " --length 300 --seed 1

"$kiln" plot "$out/gpt.jsonl" -o "$out/loss.svg" --title "examples/gpt.kiln"
echo
echo "demo: metrics, checkpoint and loss curve (loss.svg) are in $out"
