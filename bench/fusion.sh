#!/usr/bin/env bash
# What fusion buys (issue 4): kernels per training step and CPU step time,
# fused against unfused (`--no-fuse`: one kernel per op, no merged
# launches), measured in the same run.
#
#   bench/fusion.sh [MODEL.kiln]        default examples/gpt.kiln
#
# (a) Kernels per step from `kiln compile MODEL --stats` with and without
#     --no-fuse: launches + library calls (GEMMs), the optimizer's share
#     apart; the bar is fused <= 0.5 x unfused.
# (b) Step time: 3 repetitions of `kiln train MODEL --steps 110` each way,
#     alternating so a slow spell of the machine hits both; each run's
#     median after 10 warm-up steps, then the median of the repetitions;
#     the ratio unfused / fused (> 1: fusion is faster), and the median of
#     the per-repetition ratios (each pair runs back to back, so a slow
#     spell of this VM, which can add 30% for tens of seconds, tends to hit
#     both of a pair). KILN_BENCH_REPEATS sets the repetitions (default 5). The losses of the two must
#     agree bit for bit (fusion changes kernels, not arithmetic): the
#     script fails otherwise.
#
# (c) Where the time goes: `kiln train --profile` both ways; the time in
#     GEMMs (the same library calls either way) and in everything else (the
#     generated kernels, which fusion changes), summed over the run.
#
# Timings are meaningless while something else runs on the cores: the
# script holds the build lock (/tmp/kiln-build.lock) for its run, re-running
# itself under it. About 2 minutes on 2 cores. Outputs in build/bench/fusion/
# (KILN_BENCH_OUT overrides it).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOCK=/tmp/kiln-build.lock
KILN=${KILN:-$ROOT/build/bin/kiln}
OUT=${KILN_BENCH_OUT:-$ROOT/build/bench}/fusion
MODEL=${1:-examples/gpt.kiln}
STEPS=110   # > the GPT's 100 warm-up steps, which its cosine schedule needs
SKIP=10
REPEATS=${KILN_BENCH_REPEATS:-5}

if [[ ${KILN_BENCH_LOCKED:-} != 1 ]]; then
  echo "taking the build lock $LOCK (waiting for running builds) ..." >&2
  KILN_BENCH_LOCKED=1 exec flock "$LOCK" "$0" "$@"
fi
cd "$ROOT"
[[ -x $KILN ]] || { echo "error: $KILN is missing; build first" >&2; exit 1; }
mkdir -p "$OUT"
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
load() { echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"; }

echo "== (a) kernels per training step: $MODEL"
"$KILN" compile "$MODEL" --stats >"$OUT/stats.fused.json"
"$KILN" compile "$MODEL" --stats --no-fuse >"$OUT/stats.unfused.json"
python3 - "$OUT/stats.fused.json" "$OUT/stats.unfused.json" <<'PY'
import json, sys
fused, unfused = (json.load(open(p)) for p in sys.argv[1:3])
for name, d in (("unfused", unfused), ("fused", fused)):
    print(f"   {name:8} kernels {d['kernels']:4}  (launches {d['launches']}, "
          f"library calls {d['library_calls']}; optimizer {d['kernels_optimizer']})")
ratio = fused["kernels"] / unfused["kernels"]
print(f"   fused / unfused = {ratio:.3f}  (bar: <= 0.5: {'met' if ratio <= 0.5 else 'NOT met'})")
PY

echo
echo "== (b) step time: $REPEATS x $STEPS steps each way, median after $SKIP warm-up steps"
echo "   $(load)"
TOKENS=(--tokens examples/data/text/train.txt)
[[ $MODEL == *gpt* ]] || TOKENS=()
for r in $(seq 1 $REPEATS); do
  for mode in fused unfused; do
    flags=()
    [[ $mode == unfused ]] && flags=(--no-fuse)
    "$KILN" train "$MODEL" --steps $STEPS --quiet "${TOKENS[@]}" "${flags[@]}" \
      --metrics "$OUT/time.$mode.$r.jsonl" >"$OUT/time.$mode.$r.log" 2>&1 ||
      { cat "$OUT/time.$mode.$r.log" >&2; exit 1; }
    python3 bench/metrics_summary.py "$OUT/time.$mode.$r.jsonl" --skip $SKIP \
      >"$OUT/time.$mode.$r.json"
  done
  printf '   repetition %d: fused %.1f ms/step, unfused %.1f ms/step  %s\n' "$r" \
    "$(json "$OUT/time.fused.$r.json" "d['median_step_ms']")" \
    "$(json "$OUT/time.unfused.$r.json" "d['median_step_ms']")" "$(load)"
done
python3 - "$OUT" $REPEATS <<'PY'
import json, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
def median(mode):
    return statistics.median(json.load(open(f"{out}/time.{mode}.{r}.json"))["median_step_ms"]
                             for r in range(1, repeats + 1))
def losses(mode):
    return [json.loads(line)["loss"] for line in open(f"{out}/time.{mode}.1.jsonl")
            if '"loss"' in line]
fused, unfused = median("fused"), median("unfused")
print(f"   median: fused {fused:.1f} ms/step, unfused {unfused:.1f} ms/step: "
      f"unfused / fused = {unfused / fused:.2f} ({'fusion faster' if fused < unfused else 'fusion NOT faster'})")
def step(mode, r):
    return json.load(open(f"{out}/time.{mode}.{r}.json"))["median_step_ms"]
paired = statistics.median(step("unfused", r) / step("fused", r)
                           for r in range(1, repeats + 1))
print(f"   median of the per-repetition ratios unfused / fused: {paired:.3f}")
a, b = losses("fused"), losses("unfused")
same = a == b and len(a) > 0
print(f"   losses of {len(a)} steps fused vs unfused: {'identical' if same else 'DIFFERENT'}")
sys.exit(0 if same else 1)
PY

echo
echo "== (c) time in ops over $STEPS steps (kiln train --profile), GEMMs apart"
for mode in fused unfused; do
  flags=()
  [[ $mode == unfused ]] && flags=(--no-fuse)
  "$KILN" train "$MODEL" --steps $STEPS --profile "${TOKENS[@]}" "${flags[@]}" \
    >"$OUT/profile.$mode.txt" 2>&1 ||
    { cat "$OUT/profile.$mode.txt" >&2; exit 1; }
done
python3 - "$OUT" <<'PY'
import re, sys
out = sys.argv[1]
def split(mode):
    text = open(f"{out}/profile.{mode}.txt").read()
    total = float(re.search(r"profile: ([0-9.]+) ms in ops", text).group(1))
    gemm = sum(float(m.group(1)) for m in
               re.finditer(r"^\s+([0-9.]+)\s+[0-9.]+\s+\d+\s+gemm ", text, re.M))
    return total, gemm, total - gemm
for mode in ("fused", "unfused"):
    total, gemm, rest = split(mode)
    print(f"   {mode:8} {total:8.1f} ms in ops: GEMMs {gemm:8.1f} ms, other kernels {rest:7.1f} ms")
f, u = split("fused"), split("unfused")
print(f"   other kernels unfused / fused = {u[2] / f[2]:.2f}")
PY
