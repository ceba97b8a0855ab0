#!/usr/bin/env python3
"""Summarizes one `kiln train --metrics` file (or the PyTorch peer's, which has
the same format) as one JSON object, for bench/train_cpu.sh.

Both runs go through this same code, so Kiln and the peer are measured alike:
  median_step_ms    median of "step_ms" over the steps after the first
                    --skip (warm-up: first-touch page faults, thread-pool
                    start, allocator growth), in milliseconds
  train_seconds     sum of every step's "step_ms": the time spent in training
                    steps, without compilation, start-up or evaluations
  final_eval_loss   the last "eval_loss" (held-out nats per token; per byte
                    for the byte-level GPT)
  final_eval_accuracy  the last "eval_accuracy", when the model has one
  first_below       the first evaluation with eval_loss < --threshold:
                    {"step", "eval_loss", "train_seconds" (the training time
                    up to and including that step)}, or null
  evals             every evaluation as [step, eval_loss]

Usage: metrics_summary.py METRICS.jsonl [--skip N] [--threshold X]
"""

import argparse
import json
import statistics


def summarize(path, skip, threshold):
    step_ms = {}
    evals = []
    accuracy = None
    with open(path) as lines:
        for line in lines:
            line = line.strip()
            if not line:
                continue
            record = json.loads(line)
            step = record.get("step")
            if "step_ms" in record:
                # A resumed run rewrites later steps; the last record wins.
                step_ms[step] = record["step_ms"]
            if "eval_loss" in record:
                evals.append((step, record["eval_loss"]))
            if "eval_accuracy" in record:
                accuracy = record["eval_accuracy"]
    ordered = [step_ms[s] for s in sorted(step_ms)]
    steady = ordered[skip:] or ordered

    def seconds_until(step):
        return sum(ms for s, ms in step_ms.items() if s <= step) / 1e3

    first = next(({"step": s, "eval_loss": v, "train_seconds": seconds_until(s)}
                  for s, v in evals if v is not None and v < threshold), None)
    return {
        "steps": max(step_ms) if step_ms else 0,
        "median_step_ms": statistics.median(steady) if steady else None,
        "train_seconds": sum(ordered) / 1e3,
        "final_eval_loss": evals[-1][1] if evals else None,
        "final_eval_accuracy": accuracy,
        "first_below": first,
        "evals": evals,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("--skip", type=int, default=10)
    parser.add_argument("--threshold", type=float, default=2.0)
    args = parser.parse_args()
    print(json.dumps(summarize(args.metrics, args.skip, args.threshold)))


if __name__ == "__main__":
    main()
