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
#      it is installed.                              OUTDIR/stage2-*.json, .txt
# --dry-run runs both stages here, on the fake driver and the fake cuBLASLt
# built from the bundle (CI does: everything that can fail here must fail
# here first). Not built yet: the model runs at size against PyTorch
# (stages 3 and 4 of the issue).
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
exit "$failed"
