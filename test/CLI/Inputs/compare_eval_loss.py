"""Compares the last held-out loss of two metrics files.

Usage: compare_eval_loss.py REFERENCE.jsonl CANDIDATE.jsonl MAX_RELATIVE

Prints both losses and their relative difference; exits 1 when the
candidate's is more than MAX_RELATIVE above or below the reference's.
"""
import json
import sys


def last_eval_loss(path):
    losses = [json.loads(line) for line in open(path) if line.strip()]
    losses = [entry["eval_loss"] for entry in losses if "eval_loss" in entry]
    if not losses:
        sys.exit(f"{path}: no eval_loss")
    return losses[-1]


reference = last_eval_loss(sys.argv[1])
candidate = last_eval_loss(sys.argv[2])
limit = float(sys.argv[3])
relative = abs(candidate - reference) / reference
print(f"reference {reference:.4f} candidate {candidate:.4f} "
      f"relative {relative:.4f} limit {limit}")
if relative > limit:
    sys.exit(f"held-out losses differ by {relative:.4f} > {limit}")
print("OK")
