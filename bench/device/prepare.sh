#!/usr/bin/env bash
# Prepares what bench/device/run.sh needs on a GPU machine that has neither
# LLVM nor a package registry: everything compiled here, carried there.
#
#   bench/device/prepare.sh BUNDLE [STEPS]
#
# BUNDLE/src        the runtime's sources, the generated plan header, the
#                   FlatBuffers headers, the step runner and the fakes
# BUNDLE/artifacts  examples/mlp.kiln and examples/gpt.kiln for sm_90
# BUNDLE/expected   each artifact's STEPS (default 20) train steps run here
#                   by the GPU emulator: losses and a hash of the parameters
# BUNDLE/models     the models of stages 3 and 4 (examples/gpt.kiln, and
#                   bench/models/gpt2-small.kiln at batch KILN_GPT2_BATCH,
#                   default 8), and BUNDLE/bench their sm_90 artifacts
#                   (GPT-2 small twice: also with --no-fused-attention)
# BUNDLE/torch_peer.py, BUNDLE/peers   stage 4's PyTorch peer
# BUNDLE/gpus.json  the sm_90 GPUs' peaks (kiln compile --stats) for MFU
# BUNDLE/run.sh     the script to run there
# Needs a built tree (scripts/build.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${KILN_BUILD_DIR:-$root/build}"
bundle="${1:?usage: bench/device/prepare.sh BUNDLE [STEPS]}"
steps="${2:-20}"
kiln="$build/bin/kiln"
[ -x "$kiln" ] || { echo "prepare.sh: no $kiln: run scripts/build.sh" >&2; exit 1; }
header="$build/runtime/include/kiln/plan_generated.h"
[ -f "$header" ] || { echo "prepare.sh: no $header" >&2; exit 1; }
flatbuffers="$(dirname "$(echo '#include <flatbuffers/flatbuffers.h>' |
  c++ -E -H -x c++ - 2>&1 >/dev/null | sed -n 's/^\. //p' | head -1)")"

rm -rf "$bundle"
mkdir -p "$bundle/src/generated/kiln" "$bundle/src/include" "$bundle/src/fakes" \
  "$bundle/artifacts" "$bundle/expected" "$bundle/models" "$bundle/bench" \
  "$bundle/peers"
cp -r "$root/runtime" "$bundle/src/runtime"
cp "$header" "$bundle/src/generated/kiln/"
cp -r "$flatbuffers" "$bundle/src/include/flatbuffers"
cp "$root/bench/device/step_runner.c" "$root/bench/device/nccl_check.c" "$bundle/src/"
cp "$root/test/unit/fakes/FakeLibcuda.c" "$root/test/unit/fakes/FakeStreams.c" \
   "$root/test/unit/fakes/FakeStreams.h" "$root/test/unit/fakes/FakeCublasLt.cpp" \
   "$root/test/unit/fakes/FakeNccl.c" \
  "$bundle/src/fakes/"
cp "$root/bench/device/run.sh" "$bundle/run.sh"
cp "$root/bench/device/torch_peer.py" "$bundle/"
cp "$root/bench/peers/gpt_torch.py" "$bundle/peers/"

# The artifacts, and what the GPU emulator computes from them here.
cc -std=c11 -O2 -I "$root/runtime/include" "$root/bench/device/step_runner.c" \
  -o "$bundle/step_runner.here" -L "$build/lib" -lkiln_runtime -lm \
  -Wl,-rpath,"$build/lib"
for model in mlp gpt; do
  "$kiln" compile "$root/examples/$model.kiln" --target=cuda --arch=sm_90 --train \
    -o "$bundle/artifacts/$model.kiln.d" 2> "$bundle/artifacts/$model.log"
  "$bundle/step_runner.here" "$bundle/artifacts/$model.kiln.d" cuda-emulator \
    "$steps" "$bundle/expected/$model.json"
done
rm "$bundle/step_runner.here"

# Stages 3 and 4: the models at size, compiled here (nothing is run here).
batch="${KILN_GPT2_BATCH:-8}"
cp "$root/examples/gpt.kiln" "$bundle/models/gpt.kiln"
sed "s/dim B = 4,/dim B = $batch,/" "$root/bench/models/gpt2-small.kiln" \
  > "$bundle/models/gpt2-small.kiln"
grep -q "dim B = $batch," "$bundle/models/gpt2-small.kiln" ||
  { echo "prepare.sh: cannot set the batch of gpt2-small.kiln" >&2; exit 1; }
# The GPUs' peaks for the summary's MFU, from the target's own table.
"$kiln" compile "$root/examples/mlp.kiln" --target=cuda --arch=sm_90 --train \
  --stats 2> /dev/null | python3 -c '
import json, sys
gpus = json.load(sys.stdin)["roofline"]["gpus"]
json.dump([{k: g[k] for k in ("gpu", "fp32_flops", "bf16_flops")}
           for g in gpus], sys.stdout)' > "$bundle/gpus.json"
for model in gpt gpt2-small; do
  "$kiln" compile "$bundle/models/$model.kiln" --target=cuda --arch=sm_90 \
    --train -o "$bundle/bench/$model.kiln.d" 2> "$bundle/bench/$model.log"
done
# GPT-2 small with attention as GEMMs around a row kernel: what the fused
# attention kernels are measured against, in the same run.
"$kiln" compile "$bundle/models/gpt2-small.kiln" --target=cuda --arch=sm_90 \
  --train --no-fused-attention -o "$bundle/bench/gpt2-small-unfused.kiln.d" \
  2> "$bundle/bench/gpt2-small-unfused.log"
echo "$steps" > "$bundle/steps"
echo "prepare.sh: $bundle ($(du -sh "$bundle" | cut -f1))"
