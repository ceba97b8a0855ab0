#!/usr/bin/env python3
"""Exits 0 when two kiln train --metrics files hold the same training losses,
bit for bit, at the same steps; else prints the first difference, exits 1."""
import json
import sys


def losses(path):
    out = []
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "loss" in record and "step" in record:
                out.append((record["step"], record["loss"]))
    return out


a, b = losses(sys.argv[1]), losses(sys.argv[2])
if not a:
    sys.exit(f"{sys.argv[1]}: no training losses")
if len(a) != len(b):
    sys.exit(f"{len(a)} losses vs {len(b)}")
for (step_a, loss_a), (step_b, loss_b) in zip(a, b):
    # json floats round-trip exactly: compare the doubles, not strings.
    if step_a != step_b or loss_a.hex() != loss_b.hex():
        sys.exit(f"step {step_a}: loss {loss_a!r} vs step {step_b}: {loss_b!r}")
print(f"{len(a)} losses identical")
