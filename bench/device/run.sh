#!/usr/bin/env bash
# The device bench, on a machine with an NVIDIA GPU and neither LLVM nor a
# package registry (bench/device/prepare.sh made BUNDLE here):
#
#   BUNDLE/run.sh OUTDIR [--dry-run]
#   bench/device/run.sh OUTDIR --dry-run   (here: prepares OUTDIR/bundle
#                                           first, KILN_DEVICE_STEPS steps)
#
# Each stage writes its result into OUTDIR as soon as it ends, since such a
# machine may be lent for minutes only:
#   1. build: the runtime alone (no LLVM, no cpu GEMM library, no CUDA
#      headers: the driver and cuBLASLt are loaded at run time) and the step
#      runner;                                       OUTDIR/stage1-build.txt
#   2. conformance: each carried artifact's train steps on device "cuda"
#      against the GPU emulator's run here: losses within 1e-4 (relative) on
#      a GPU (libdevice and FMA round differently from the host), bit for
#      bit with --dry-run; compute-sanitizer's memcheck over the MLP where
#      it is installed; a one-GPU NCCL group summing the MLP's parameters
#      through the runtime (nccl_check.c; skipped, saying so, without
#      NCCL).                                        OUTDIR/stage2-*.json, .txt
#   3. at size: examples/gpt.kiln (KILN_GPT_STEPS, default 200 steps) and
#      GPT-2 small at batch 8, T 1024, f32 (KILN_GPT2_STEPS, default 50) on
#      the fixed synthetic batch: median step, tokens/s, MFU (6 N + 12 L T D
#      FLOPs a token, over the GPU's FP32 and BF16 dense peaks), the loss
#      at the first and last step; then GPT-2 small compiled with
#      --no-fused-attention, the same steps (not in a dry run).
#                                                  OUTDIR/stage3-*.json
#   4. the same models and batches in PyTorch, eager and torch.compile, in
#      the same run (torch_peer.py; skipped, saying so, without torch or a
#      GPU it sees).                               OUTDIR/stage4-*.json
#   OUTDIR/summary.txt: stages 3 and 4 side by side.
# --dry-run runs stages 1 and 2 here, on the fake driver and the fake
# cuBLASLt built from the bundle (CI does: everything that can fail here
# must fail here first), then stage 3 for KILN_DEVICE_STEPS steps of the
# GPT and only the creation of GPT-2 small's session (its module, memory
# and every cuBLASLt descriptor; a step there would take the emulator
# hours), and stage 4 where torch is installed.
set -euo pipefail
bundle="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:?usage: run.sh OUTDIR [--dry-run]}"
dry=0
[ "${2:-}" = "--dry-run" ] && dry=1
mkdir -p "$out"
out="$(cd "$out" && pwd)"
if [ ! -d "$bundle/src" ]; then
  # Run from the repository (here, with a built tree): make the bundle first.
  "$bundle/prepare.sh" "$out/bundle" "${KILN_DEVICE_STEPS:-20}"
  exec "$out/bundle/run.sh" "$out" "${@:2}"
fi
src="$bundle/src"
start=$(date +%s)
log() { echo "[$(( $(date +%s) - start ))s] $*" | tee -a "$out/run.log"; }

# --- 1. build ---------------------------------------------------------------
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
log "stage 1: building the runtime"
if ! { cmake -S "$src/runtime" -B "$out/build" "${generator[@]}" \
         -DKILN_WITH_ONEDNN=OFF -DKILN_WITH_OPENBLAS=OFF \
         -DKILN_PLAN_HEADER_DIR="$src/generated" \
         -DKILN_FLATBUFFERS_INCLUDE_DIR="$src/include" &&
       cmake --build "$out/build" --target KilnRuntime; } > "$out/stage1-build.txt" 2>&1; then
  log "stage 1: FAILED (stage1-build.txt)"
  exit 1
fi
lib="$out/build/lib"
cc -std=c11 -O2 -I "$src/runtime/include" "$src/step_runner.c" -o "$out/step_runner" \
  -L "$lib" -lkiln_runtime -lm -Wl,-rpath,"$lib" >> "$out/stage1-build.txt" 2>&1
cc -std=c11 -O2 -I "$src/runtime/include" "$src/nccl_check.c" -o "$out/nccl_check" \
  -L "$lib" -lkiln_runtime -Wl,-rpath,"$lib" >> "$out/stage1-build.txt" 2>&1
if [ "$dry" = 1 ]; then
  cc -shared -fPIC -O2 -fvisibility=hidden "$src/fakes/FakeLibcuda.c" \
    "$src/fakes/FakeStreams.c" -o "$out/libfake_libcuda.so" -ldl
  c++ -std=c++17 -shared -fPIC -O2 -fvisibility=hidden "$src/fakes/FakeCublasLt.cpp" \
    "$src/runtime/src/devices/cpu/GemmLibrary.cpp" \
    "$src/runtime/src/devices/cpu/ReferenceGemm.cpp" \
    "$src/runtime/src/runtime/GemmEpilogue.cpp" \
    -I "$src/runtime/src" -I "$src/runtime/src/runtime" -I "$src/runtime/include" \
    -I "$src/generated" -I "$src/include" -o "$out/libfake_cublaslt.so" -ldl
  export KILN_LIBCUDA="$out/libfake_libcuda.so" KILN_LIBCUBLASLT="$out/libfake_cublaslt.so"
elif [ -z "${KILN_LIBCUBLASLT:-}" ]; then
  # pip's nvidia-cublas, where the GPU machine keeps libcublasLt.
  site="$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' \
    2> /dev/null || true)"
  if [ -n "$site" ] && [ -f "$site/nvidia/cublas/lib/libcublasLt.so.13" ]; then
    export KILN_LIBCUBLASLT="$site/nvidia/cublas/lib/libcublasLt.so.13"
  fi
fi
log "stage 1: done"

# --- 2. conformance ---------------------------------------------------------
steps="$(cat "$bundle/steps")"
tolerance=1e-4
[ "$dry" = 1 ] && tolerance=0
failed=0
for artifact in "$bundle"/artifacts/*.kiln.d; do
  name="$(basename "$artifact" .kiln.d)"
  status=0
  "$out/step_runner" "$artifact" cuda "$steps" "$out/stage2-$name.json" \
    2> "$out/stage2-$name.err" || status=$?
  if [ "$status" != 0 ]; then
    log "stage 2: $name FAILED (exit $status): $(head -c 400 "$out/stage2-$name.err")"
    failed=1
    [ "$status" = 2 ] && break
    continue
  fi
  if python3 - "$bundle/expected/$name.json" "$out/stage2-$name.json" "$tolerance" \
       > "$out/stage2-$name.txt" <<'PY'
import json, sys
want, got = (json.load(open(p)) for p in sys.argv[1:3])
tolerance = float(sys.argv[3])
worst = max(abs(a - b) / max(abs(a), 1e-30)
            for a, b in zip(want["losses"], got["losses"]))
same = want["params_hash"] == got["params_hash"]
print(f"steps {len(got['losses'])}: worst loss |d|/|ref| {worst:.3g}, "
      f"parameters {'bit-equal' if same else 'differ'}, "
      f"median step {got['median_ms']:.3f} ms")
ok = len(want["losses"]) == len(got["losses"]) and worst <= tolerance
if tolerance == 0:
    ok = ok and same
sys.exit(0 if ok else 1)
PY
  then
    log "stage 2: $name ok: $(cat "$out/stage2-$name.txt")"
  else
    log "stage 2: $name FAILED: $(cat "$out/stage2-$name.txt")"
    failed=1
  fi
done
if [ "$dry" = 0 ] && command -v compute-sanitizer > /dev/null; then
  compute-sanitizer --tool memcheck --error-exitcode 9 "$out/step_runner" \
    "$bundle/artifacts/mlp.kiln.d" cuda 2 "$out/stage2-memcheck.json" \
    > "$out/stage2-memcheck.txt" 2>&1 && log "stage 2: memcheck clean" ||
    { log "stage 2: memcheck FAILED (stage2-memcheck.txt)"; failed=1; }
fi
log "stage 2: $([ "$failed" = 0 ] && echo done || echo FAILED)"

# --- 2b. a one-GPU NCCL group -------------------------------------------------
# The data-parallel all-reduce's path (kiln_session_join_nccl and
# kiln_session_sum_over_ranks) on one GPU: NCCL from the machine
# (libnccl.so.2, or KILN_LIBNCCL), or the fake NCCL in a dry run.
if [ "$dry" = 1 ]; then
  if command -v mpicc > /dev/null; then
    mpicc -shared -fPIC -O2 -fvisibility=hidden "$src/fakes/FakeNccl.c" \
      -o "$out/libfake_nccl.so" -ldl && export KILN_LIBNCCL="$out/libfake_nccl.so"
  else
    export KILN_LIBNCCL=/nonexistent/no-mpicc-for-the-fake-nccl
  fi
fi
status=0
"$out/nccl_check" "$bundle/artifacts/mlp.kiln.d" "$out/stage2-nccl.json" \
  2> "$out/stage2-nccl.err" || status=$?
case "$status" in
  0) log "stage 2: one-GPU NCCL group ok: $(cat "$out/stage2-nccl.json")" ;;
  3) log "stage 2: NCCL skipped: $(head -c 400 "$out/stage2-nccl.err")" ;;
  *) log "stage 2: one-GPU NCCL group FAILED (exit $status): $(head -c 400 "$out/stage2-nccl.err")"
     failed=1 ;;
esac

# --- 3. the models at size ----------------------------------------------------
gpt_steps="${KILN_GPT_STEPS:-200}"
gpt2_steps="${KILN_GPT2_STEPS:-50}"
gpt2_flags=()
if [ "$dry" = 1 ]; then
  gpt_steps="$steps"
  gpt2_steps=0
  gpt2_flags=(--deterministic)
fi
stage3_models=(gpt gpt2-small)
# The unfused attention only where steps run: its session alone is the
# size of GPT-2 small's.
if [ "$dry" = 0 ]; then
  stage3_models+=(gpt2-small-unfused)
else
  log "stage 3: gpt2-small-unfused: skipped in a dry run (compiled into the bundle)"
fi
for model in "${stage3_models[@]}"; do
  count="$gpt_steps" flags=()
  [ "$model" != gpt ] && count="$gpt2_steps" flags=("${gpt2_flags[@]}")
  status=0
  "$out/step_runner" "$bundle/bench/$model.kiln.d" cuda "$count" \
    "$out/stage3-$model.json" "${flags[@]}" 2> "$out/stage3-$model.err" ||
    status=$?
  if [ "$status" = 0 ]; then
    log "stage 3: $model: $count steps done"
  else
    log "stage 3: $model FAILED (exit $status): $(head -c 400 "$out/stage3-$model.err")"
    failed=1
  fi
done

# --- 4. PyTorch, same models and batches -------------------------------------
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
     2> /dev/null; then
  for model in gpt gpt2-small; do
    count="$gpt_steps"
    [ "$model" = gpt2-small ] && count="$gpt2_steps"
    [ "$count" -gt 0 ] || continue
    batch="$(sed -n 's/.*dim B = \([0-9]*\),.*/\1/p' "$bundle/models/$model.kiln")"
    for mode in eager compile; do
      if python3 "$bundle/torch_peer.py" "$bundle/models/$model.kiln" "$batch" \
           "$count" "$mode" "$out/stage4-$model-$mode.json" \
           > "$out/stage4-$model-$mode.txt" 2>&1; then
        log "stage 4: $model $mode done"
      else
        log "stage 4: $model $mode FAILED: $(tail -c 400 "$out/stage4-$model-$mode.txt")"
        failed=1
      fi
    done
  done
else
  log "stage 4: skipped: no torch here that sees a GPU"
fi

# --- the summary ----------------------------------------------------------------
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1 || true)"
[ "$dry" = 1 ] && gpu="${gpu:-Kiln Fake GPU (a dry run: no figure here comes from a GPU)}"
python3 - "$out" "$bundle/models" "$gpu" > "$out/summary.txt" <<'PY'
import json, os, re, sys
out, models, gpu = sys.argv[1:4]
# The datasheet's dense peaks (FLOP/s) of the GPUs the target knows, as
# prepare.sh took them from `kiln compile --stats` (GpuFigures.cpp): FP32
# on the CUDA cores, BF16 on the tensor cores.
figures = json.load(open(os.path.join(models, "..", "gpus.json")))
peak = next(((g["fp32_flops"], g["bf16_flops"]) for g in figures
             if g["gpu"].split()[0] in gpu), None)
print(f"GPU: {gpu or 'unknown'}")
print(f"{'model':<12} {'run':<16} {'step ms':>9} {'tokens/s':>11} "
      f"{'MFU fp32':>9} {'MFU bf16':>9}  loss first -> last")
for model in ("gpt", "gpt2-small"):
    source = open(os.path.join(models, model + ".kiln")).read()
    dims = {k: int(v) for k, v in re.findall(r"\b([A-Z])\s*=\s*(\d+)", source)}
    runs = [("kiln", f"stage3-{model}.json")] + [
        ("kiln no fused attn", f"stage3-{model}-unfused.json")] + [
        (f"torch {mode}", f"stage4-{model}-{mode}.json")
        for mode in ("eager", "compile")]
    for name, file in runs:
        path = os.path.join(out, file)
        if not os.path.exists(path):
            continue
        run = json.load(open(path))
        if not run["losses"]:
            print(f"{model:<12} {name:<16} (session created, no step run)")
            continue
        seconds = run["median_ms"] / 1e3
        tokens = run["tokens_per_step"] / seconds
        flops = (6 * run["parameters"] +
                 12 * dims["L"] * dims["T"] * dims["D"]) * tokens
        mfu = [f"{100 * flops / p:8.1f}%" for p in peak] if peak else ["-", "-"]
        print(f"{model:<12} {name:<16} {run['median_ms']:9.2f} {tokens:11.0f} "
              f"{mfu[0]:>9} {mfu[1]:>9}  {run['losses'][0]:.4f} -> "
              f"{run['losses'][-1]:.4f}")
PY
log "summary: $out/summary.txt"
cat "$out/summary.txt" | tee -a "$out/run.log"
exit "$failed"
