#!/usr/bin/env bash
# Sets Kiln up on a fresh machine and runs the main job. Until training
# lands, that is: check both example models (parameters, ops, FLOPs) and
# evaluate their forward passes with the reference interpreter.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" kiln kiln-opt
kiln="$build/bin/kiln"

for model in mlp gpt; do
  echo
  echo "== kiln check examples/$model.kiln"
  "$kiln" check "$root/examples/$model.kiln"
  echo
  echo "== kiln run examples/$model.kiln --random-inputs"
  "$kiln" run "$root/examples/$model.kiln" --random-inputs --seed 0
done
echo
echo "demo: done. The loss at initialization is close to ln(classes):"
echo "ln(10) = 2.303 for the digits MLP, ln(256) = 5.545 for the byte-level GPT."
