#!/usr/bin/env python3
"""The smallest budget the recompute error names is exact: a compile under it
succeeds with peak_bytes <= it, and one byte less fails with the same figure.

  check_smallest_budget.py KILN MODEL.kiln
"""
import json
import re
import subprocess
import sys

kiln, model = sys.argv[1:3]


def compile_stats(budget):
    return subprocess.run([kiln, "compile", model, "--stats",
                           "--memory-budget", str(budget)],
                          capture_output=True, text=True)


first = compile_stats(1)
match = re.search(r"smallest budget recomputation can meet is (\d+) bytes",
                  first.stderr)
if first.returncode == 0 or not match:
    sys.exit(f"a 1-byte budget should fail naming the smallest:\n{first.stderr}")
smallest = int(match.group(1))
fits = compile_stats(smallest)
if fits.returncode != 0:
    sys.exit(f"the named smallest budget {smallest} fails:\n{fits.stderr}")
stats = json.loads(fits.stdout)
if stats["peak_bytes"] > smallest or stats["recompute_flops"] <= 0:
    sys.exit(f"under {smallest}: peak_bytes {stats['peak_bytes']}, "
             f"recompute_flops {stats['recompute_flops']}")
below = compile_stats(smallest - 1)
if below.returncode == 0 or f"can meet is {smallest} bytes" not in below.stderr:
    sys.exit(f"one byte below {smallest} should fail the same way:\n"
             f"{below.stderr}")
print(f"smallest budget {smallest}: peak_bytes {stats['peak_bytes']}, "
      f"recompute_flops {stats['recompute_flops']}")
