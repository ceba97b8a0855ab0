#!/usr/bin/env bash
# The cpu GEMM libraries on a model's training step, in one run:
#
#   bench/gemm_libraries.sh [MODEL.kiln] [ROUNDS] [STEPS]
#
# Trains MODEL (default examples/gpt.kiln, on the bundled text) for STEPS
# steps (default 40) with each configuration in turn, ROUNDS times (default
# 5), interleaved: oneDNN (the default), OpenBLAS as it loads (its table of
# CPU models decides, OPENBLAS_CORETYPE unset), OpenBLAS forced to its best
# core for this CPU (SkylakeX where it has AVX-512, else Haswell: forcing
# SkylakeX on an AVX2-only CPU dies of an illegal instruction), and Kiln's
# reference kernel. For each run, --profile gives the time in
# GEMMs and the median step; the figures are medians over rounds of the
# per-round ratios against oneDNN (> 1: slower than oneDNN).
#
# Hold the build lock while it runs: flock /tmp/kiln-build.lock bench/gemm_libraries.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KILN=${KILN:-$ROOT/build/bin/kiln}
MODEL=${1:-$ROOT/examples/gpt.kiln}
ROUNDS=${2:-5}
STEPS=${3:-40}
OUT=${KILN_BENCH_OUT:-$ROOT/build/bench/gemm}
mkdir -p "$OUT"
[[ -x $KILN ]] || { echo "error: $KILN is missing; build first" >&2; exit 1; }

if grep -qw avx512f /proc/cpuinfo; then FORCED=SkylakeX; else FORCED=Haswell; fi
configs=("onednn" "openblas" "openblas-$FORCED" "reference")
run_config() { # NAME ROUND
  local name=$1 round=$2 env=(env -u OPENBLAS_CORETYPE)
  case $name in
    onednn) env+=(KILN_GEMM=onednn) ;;
    openblas) env+=(KILN_GEMM=openblas) ;;
    openblas-$FORCED) env+=(KILN_GEMM=openblas OPENBLAS_CORETYPE=$FORCED) ;;
    reference) env+=(KILN_GEMM=reference) ;;
  esac
  "${env[@]}" "$KILN" train "$MODEL" --tokens "$ROOT/examples/data/text/train.txt" \
    --steps "$STEPS" --profile --metrics "$OUT/$name.$round.jsonl" \
    >"$OUT/$name.$round.log" 2>&1
}

echo "== GEMM libraries on $(basename "$MODEL"): $ROUNDS rounds of $STEPS steps," \
     "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
# Compile once, outside the timed runs.
"$KILN" train "$MODEL" --tokens "$ROOT/examples/data/text/train.txt" --steps 1 --quiet >/dev/null
for round in $(seq 1 "$ROUNDS"); do
  for name in "${configs[@]}"; do run_config "$name" "$round"; done
  echo "   round $round done"
done
for name in "${configs[@]}"; do
  echo "   $name: $(grep -m1 'GEMMs:' "$OUT/$name.1.log")"
  grep -m1 'warning' "$OUT/$name.1.log" | sed 's/^/     /' || true
done
python3 - "$OUT" "$ROUNDS" "${configs[@]}" <<'PY'
import json, re, statistics, sys
out, rounds, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def figures(name, r):
    gemm = 0.0
    for line in open(f"{out}/{name}.{r}.log"):
        m = re.match(r"\s*([0-9.]+)\s+[0-9.]+\s+\d+\s+gemm\s", line)
        if m:
            gemm += float(m.group(1))
    steps = [json.loads(l)["step_ms"] for l in open(f"{out}/{name}.{r}.jsonl")
             if '"step_ms"' in l]
    return gemm, statistics.median(steps[10:] if len(steps) > 10 else steps)
data = {n: [figures(n, r) for r in range(1, rounds + 1)] for n in configs}
base = data[configs[0]]
print(f"   {'library':20s} {'GEMM ms/run':>12s} {'x onednn':>9s} {'step ms':>8s} {'x onednn':>9s}")
for name in configs:
    rows = data[name]
    g = statistics.median(x[0] for x in rows)
    s = statistics.median(x[1] for x in rows)
    gr = statistics.median(a[0] / b[0] for a, b in zip(rows, base))
    sr = statistics.median(a[1] / b[1] for a, b in zip(rows, base))
    print(f"   {name:20s} {g:12.1f} {gr:9.2f} {s:8.2f} {sr:9.2f}")
PY
