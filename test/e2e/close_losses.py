#!/usr/bin/env python3
"""Exits 0 when two kiln train --metrics files hold training losses at the
same steps that agree to a relative TOLERANCE; else prints the first that
does not and exits 1.

Usage: close_losses.py A.jsonl B.jsonl TOLERANCE"""
import json
import sys


def losses(path):
    with open(path) as f:
        return [(r["step"], r["loss"]) for r in map(json.loads, f)
                if "loss" in r and "step" in r]


a, b = losses(sys.argv[1]), losses(sys.argv[2])
tolerance = float(sys.argv[3])
if not a or len(a) != len(b):
    sys.exit(f"{len(a)} losses vs {len(b)}")
worst = 0.0
for (step_a, loss_a), (step_b, loss_b) in zip(a, b):
    difference = abs(loss_a - loss_b) / max(abs(loss_a), 1e-30)
    worst = max(worst, difference)
    if step_a != step_b or difference > tolerance:
        sys.exit(f"step {step_a}: loss {loss_a!r} vs {loss_b!r} "
                 f"(relative difference {difference:.3g} > {tolerance})")
print(f"{len(a)} losses within {tolerance} (largest relative difference "
      f"{worst:.3g})")
