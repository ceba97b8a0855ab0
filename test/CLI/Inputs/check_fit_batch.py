"""Checks `kiln compile --fit-batch` against figures computed independently
with `kiln compile --dim B=... --stats`:

  python3 check_fit_batch.py MODEL N

The peaks at B=N and B=N+1 come from --stats (without recomputation); with a
budget of one byte under the second, the largest batch that fits is N and
its peak the first. --fit-batch must say exactly that, having searched (its
progress on stderr names the candidates), and with a budget of exactly the
peak at N the answer is N too. Where it reports a larger batch with
recomputation, that batch must compile under the budget and the next must
not. Prints each violation and exits 1.
"""
import json
import subprocess
import sys


def run(args, expect_ok=True):
    result = subprocess.run(["kiln"] + args, capture_output=True, text=True)
    if expect_ok and result.returncode != 0:
        sys.exit(f"error: kiln {' '.join(args)} failed:\n{result.stderr}")
    return result


def peak(model, batch):
    out = run(["compile", model, "--dim", f"B={batch}", "--stats",
               "--no-recompute"]).stdout
    return json.loads(out)["peak_bytes"]


def main():
    model, n = sys.argv[1], int(sys.argv[2])
    errors = []

    def check(condition, message):
        if not condition:
            errors.append(message)

    at_n, above = peak(model, n), peak(model, n + 1)
    check(at_n < above, f"peak at B={n} ({at_n}) is not below B={n + 1}'s")
    for budget in (above - 1, at_n):
        result = run(["compile", model, "--fit-batch", "--memory-budget",
                      str(budget)])
        answer = json.loads(result.stdout)
        check(answer["batch_dim"] == "B", f"batch_dim {answer['batch_dim']}")
        check(answer["budget_bytes"] == budget,
              f"budget_bytes {answer['budget_bytes']} != {budget}")
        check(answer["max_batch"] == n,
              f"budget {budget}: max_batch {answer['max_batch']} != {n}")
        check(answer["peak_bytes_at_max"] == at_n,
              f"budget {budget}: peak_bytes_at_max "
              f"{answer['peak_bytes_at_max']} != {at_n}")
        check(f"B={n}: peak" in result.stderr and
              f"B={n + 1}: peak" in result.stderr,
              f"budget {budget}: the search did not try B={n} and B={n + 1}")
        recompute = answer["max_batch_with_recompute"]
        if recompute is None:
            continue
        check(recompute >= n, f"max_batch_with_recompute {recompute} < {n}")
        fits = run(["compile", model, "--dim", f"B={recompute}", "--stats",
                    "--memory-budget", str(budget)], expect_ok=False)
        check(fits.returncode == 0 and
              json.loads(fits.stdout)["peak_bytes"] <= budget,
              f"B={recompute} does not compile under {budget}")
        over = run(["compile", model, "--dim", f"B={recompute + 1}",
                    "--stats", "--memory-budget", str(budget)],
                   expect_ok=False)
        check(over.returncode != 0,
              f"B={recompute + 1} compiles under {budget} too")
    for error in errors:
        print("error:", error)
    if errors:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
