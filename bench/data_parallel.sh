#!/usr/bin/env bash
# Data-parallel training on this machine: the GPT example's step on 2 ranks
# of 1 thread (mpirun -np 2 kiln train --threads 1) against one process of
# 2 threads, the same global batch and steps; and the 2 ranks with their
# gradient sums during the backward (the default) against after it
# (--no-overlap); and ZeRO-1 (--zero 1: reduce-scatter, each rank's part of
# the update, all-gather) against --no-overlap (an all-reduce after the
# backward, every rank updating everything).
#
#   bench/data_parallel.sh [ROUNDS]
#
# Runs from a built tree (build/bin/kiln, with MPI) and alternates the
# four (one process, 2 ranks, 2 ranks --no-overlap, 2 ranks --zero 1, one
# process, ...) for
# ROUNDS rounds (default 5): each run trains STEPS steps; its median step
# time after SKIP warm-up steps is read from rank 0's --metrics. Prints
# each round and the medians of the per-round ratios (2 ranks / 1 process;
# overlapped / --no-overlap; --zero 1 / --no-overlap; < 1: the first is
# faster). Holds the build lock (/tmp/kiln-build.lock) like the other
# benchmarks. About 7 minutes on 2 cores.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOCK=/tmp/kiln-build.lock
KILN=${KILN:-$ROOT/build/bin/kiln}
OUT=${KILN_BENCH_OUT:-$ROOT/build/bench}/data-parallel
ROUNDS=${1:-5}
STEPS=60
SKIP=10
MODEL=$ROOT/examples/gpt.kiln
TOKENS=$ROOT/examples/data/text/train.txt

if [ -z "${KILN_BENCH_LOCKED:-}" ]; then
  export KILN_BENCH_LOCKED=1
  exec flock "$LOCK" "$0" "$@"
fi
command -v mpirun >/dev/null || { echo "data_parallel.sh: needs mpirun (Open MPI)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"

median_step() {  # metrics.jsonl -> median step_ms after the warm-up
  python3 - "$1" "$SKIP" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if '"step_ms"' in line]
print(statistics.median(r['step_ms'] for r in rows[int(sys.argv[2]):]))
PY
}

# Compile both artifacts first (cached), so that no round pays a compile.
"$KILN" train "$MODEL" --steps "$STEPS" --quiet --tokens "$TOKENS" >/dev/null
mpirun --oversubscribe -np 2 "$KILN" train "$MODEL" --steps "$STEPS" --threads 1 --quiet --tokens "$TOKENS" >/dev/null
mpirun --oversubscribe -np 2 "$KILN" train "$MODEL" --steps "$STEPS" --threads 1 --quiet --zero 1 --tokens "$TOKENS" >/dev/null

ratios=()
overlaps=()
zeros=()
for round in $(seq 1 "$ROUNDS"); do
  rm -f "$OUT/one.jsonl" "$OUT/two.jsonl" "$OUT/after.jsonl" "$OUT/zero.jsonl"
  "$KILN" train "$MODEL" --steps "$STEPS" --threads 2 --quiet --tokens "$TOKENS" --metrics "$OUT/one.jsonl" >/dev/null
  mpirun --oversubscribe -np 2 "$KILN" train "$MODEL" --steps "$STEPS" --threads 1 --quiet --tokens "$TOKENS" --metrics "$OUT/two.jsonl" >/dev/null
  mpirun --oversubscribe -np 2 "$KILN" train "$MODEL" --steps "$STEPS" --threads 1 --quiet --no-overlap --tokens "$TOKENS" --metrics "$OUT/after.jsonl" >/dev/null
  mpirun --oversubscribe -np 2 "$KILN" train "$MODEL" --steps "$STEPS" --threads 1 --quiet --zero 1 --tokens "$TOKENS" --metrics "$OUT/zero.jsonl" >/dev/null
  one=$(median_step "$OUT/one.jsonl")
  two=$(median_step "$OUT/two.jsonl")
  after=$(median_step "$OUT/after.jsonl")
  zero=$(median_step "$OUT/zero.jsonl")
  zeroed=$(python3 -c "print($zero / $after)")
  zeros+=("$zeroed")
  ratio=$(python3 -c "print($two / $one)")
  overlap=$(python3 -c "print($two / $after)")
  ratios+=("$ratio")
  overlaps+=("$overlap")
  printf 'round %d: 1 process x 2 threads %.1f ms/step, 2 ranks x 1 thread %.1f ms/step (--no-overlap %.1f, --zero 1 %.1f), ratios %.3f, %.3f, %.3f\n' \
    "$round" "$one" "$two" "$after" "$zero" "$ratio" "$overlap" "$zeroed"
done
python3 - "${ratios[*]}" "${overlaps[*]}" "${zeros[*]}" <<'PY'
import statistics, sys
for name, values in (('2 ranks / 1 process', sys.argv[1]),
                     ('2 ranks overlapped / --no-overlap', sys.argv[2]),
                     ('2 ranks --zero 1 / --no-overlap', sys.argv[3])):
    r = sorted(float(x) for x in values.split())
    print('median ratio (%s) over %d rounds: %.3f (min %.3f, max %.3f)'
          % (name, len(r), statistics.median(r), r[0], r[-1]))
PY
