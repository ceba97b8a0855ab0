#!/usr/bin/env python3
"""Checks a kiln train metrics file against bars given on the command line.

Usage: check_metrics.py METRICS.jsonl [--min-eval-accuracy X]
                        [--max-eval-loss X] [--loss-falls-by X]

Prints what it read and exits 1 if a bar is missed, so that a lit test
shows the figures whether it passes or not.
"""
import argparse
import json
import math
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("metrics")
    parser.add_argument("--min-eval-accuracy", type=float)
    parser.add_argument("--max-eval-loss", type=float)
    parser.add_argument("--loss-falls-by", type=float,
                        help="the mean of the last 10 losses is at most the "
                             "first loss minus this")
    args = parser.parse_args()

    losses, evals = [], []
    with open(args.metrics) as f:
        for number, line in enumerate(f, 1):
            record = json.loads(line)
            if "loss" in record:
                losses.append(record["loss"])
            if "eval_loss" in record:
                evals.append(record)
    if not losses:
        sys.exit(f"{args.metrics}: no training losses")
    ok = True
    print(f"steps: {len(losses)}, first loss {losses[0]:.4f}, "
          f"last loss {losses[-1]:.4f}")
    if not all(math.isfinite(x) for x in losses):
        print("FAIL: a loss is not finite")
        ok = False
    if args.loss_falls_by is not None:
        tail = losses[-10:]
        mean = sum(tail) / len(tail)
        print(f"mean of the last {len(tail)} losses: {mean:.4f}")
        if not mean <= losses[0] - args.loss_falls_by:
            print(f"FAIL: the loss fell by less than {args.loss_falls_by}")
            ok = False
    if args.min_eval_accuracy is not None or args.max_eval_loss is not None:
        if not evals:
            sys.exit(f"{args.metrics}: no evaluation")
        final = evals[-1]
        print(f"final eval at step {final['step']}: loss "
              f"{final['eval_loss']:.4f}, accuracy "
              f"{final.get('eval_accuracy', float('nan')):.4f}")
        if args.min_eval_accuracy is not None and not (
                final.get("eval_accuracy", -1) >= args.min_eval_accuracy):
            print(f"FAIL: eval accuracy below {args.min_eval_accuracy}")
            ok = False
        if args.max_eval_loss is not None and not (
                final["eval_loss"] <= args.max_eval_loss):
            print(f"FAIL: eval loss above {args.max_eval_loss}")
            ok = False
    print("PASS" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
