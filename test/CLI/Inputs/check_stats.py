"""Checks the relations that hold between the figures of `kiln compile
--stats` (read as JSON from stdin); prints each violation and exits 1.

  python3 check_stats.py [--max-arena-ratio R] < stats.json
"""
import json
import sys


def main():
    ratio = 1.05
    if len(sys.argv) == 3 and sys.argv[1] == "--max-arena-ratio":
        ratio = float(sys.argv[2])
    stats = json.load(sys.stdin)
    errors = []

    def check(condition, message):
        if not condition:
            errors.append(message)

    parts = ("param_bytes", "optimizer_state_bytes", "gradient_bytes",
             "input_bytes", "output_bytes", "constant_bytes", "arena_bytes")
    check(stats["peak_bytes"] >= sum(stats[p] for p in parts),
          "peak_bytes is less than its parts")
    check(stats["recompute_flops"] == 0, "recompute_flops without recompute")
    check(stats["step_flops"] > 2 * stats["forward_flops"],
          "a training step costs more than two forwards")
    check(stats["kernels"] == stats["launches"] + stats["library_calls"] +
          stats["collectives"], "kernels is not the sum of its calls")
    check(0 < stats["kernels_optimizer"] < stats["kernels"],
          "the optimizer's share of the kernels")
    arenas = [stats] + list(stats["entries"].values())
    for figures in arenas:
        arena = figures["arena_bytes"]
        bound = figures["live_lower_bound_bytes"]
        check(bound <= arena, "arena below the live lower bound")
        check(arena <= ratio * bound,
              f"arena {arena} > {ratio} x lower bound {bound}")
        check(arena < figures["naive_arena_bytes"],
              "the planned arena is not smaller than the naive one")
    check(stats["arena_bytes"] ==
          max(e["arena_bytes"] for e in stats["entries"].values()),
          "the module's arena is not its largest entry's")
    train = stats["entries"]["train_step"]
    check(0 < stats["activation_bytes"] == train["activation_bytes"]
          <= train["arena_bytes"], "activation_bytes of train_step")
    for error in errors:
        print("error:", error)
    sys.exit(1 if errors else 0)


main()
