"""Reads `kiln compile --stats` JSON on stdin and prints figures for a memory
budget test:

  python3 budget_figures.py budget OFFSET   # peak_bytes + OFFSET
  python3 budget_figures.py vars OFFSET     # FileCheck -D definitions of the
                                            # figures the budget error gives
"""
import json
import sys


def main():
    mode, offset = sys.argv[1], int(sys.argv[2])
    stats = json.load(sys.stdin)
    peak, arena = stats["peak_bytes"], stats["arena_bytes"]
    if mode == "budget":
        print(peak + offset)
        return
    print(" ".join([
        f"-DPEAK={peak}",
        f"-DBUDGET={peak + offset}",
        f"-DARENA={arena}",
        f"-DBOUND={stats['entries']['train_step']['live_lower_bound_bytes']}",
        f"-DPERSISTENT={peak - arena}",
    ]))


if __name__ == "__main__":
    main()
