"""Checks the roofline of `kiln compile --stats --target=cuda` (stdin, the
JSON) against figures worked out by hand for examples/mlp.kiln or
examples/gpt.kiln: check_roofline.py mlp|gpt ARCH < stats.json."""
import json
import math
import sys

model, arch = sys.argv[1], sys.argv[2]
stats = json.load(sys.stdin)
roofline = stats["roofline"]
assert roofline["arch"] == arch, roofline["arch"]
assert roofline["entry"] == "train_step", roofline["entry"]
ops = roofline["ops"]
gpus = {gpu["gpu"]: gpu for gpu in roofline["gpus"]}
expected_gpus = {"sm_80": {"A100 SXM4 80GB"},
                 "sm_90": {"H100 SXM5", "H200 SXM"}}[arch]
assert set(gpus) == expected_gpus, sorted(gpus)


def close(a, b, what):
    if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15):
        sys.exit(f"{what}: {a} != {b}")


for gpu in gpus.values():
    for source in ("datasheet", "measured"):
        estimate = gpu[source]
        # The step is the sum of its ops, each the larger of its two bounds.
        close(estimate["step_ms"],
              sum(ms * op["times"] for ms, op in zip(estimate["op_ms"], ops)),
              f"{gpu['gpu']} {source} step")
        assert (estimate["memory_bound_ops"] + estimate["compute_bound_ops"]
                == len(ops))

if model == "mlp":
    # x[32, 64] @ w1[64, 128] + b1 (the bias epilogue): 2 m n k FLOPs; A,
    # B and the bias read, C written, f32.
    first = ops[0]
    assert first["op"] == "gemm", first
    assert first["flops"] == 2 * 32 * 128 * 64, first
    assert first["bytes"] == 4 * (32 * 64 + 64 * 128 + 128 + 32 * 128), first
    h100 = gpus.get("H100 SXM5") or gpus["A100 SXM4 80GB"]
    peaks = (h100["hbm_bytes_per_s"], h100["fp32_flops"])
    close(h100["datasheet"]["op_ms"][0],
          1e3 * max(first["bytes"] / peaks[0], first["flops"] / peaks[1]),
          "the first GEMM's time")
    # AdamW over the 9610 parameters: p, m and v read and written, g read
    # (7 x 4 bytes each), and three f32 scalars read.
    adamw = [op for op in ops if op["origin"] == "graph.adamw_update"]
    assert len(adamw) == 1 and adamw[0]["bytes"] == 7 * 4 * 9610 + 3 * 4, adamw
    # No "tokens" input: no MFU.
    assert "tokens_per_step" not in roofline
    assert all("mfu" not in gpu["datasheet"] for gpu in gpus.values())
else:
    # B = 32, T = 64, D = 128, L = 4: 6 N + 12 L T D FLOPs a token.
    assert roofline["tokens_per_step"] == 32 * 64
    close(roofline["model_flops_per_token"],
          6 * stats["params"] + 12 * 4 * 64 * 128, "model FLOPs per token")
    for gpu in gpus.values():
        for source in ("datasheet", "measured"):
            estimate = gpu[source]
            seconds = estimate["step_ms"] / 1e3
            close(estimate["tokens_per_s"], 32 * 64 / seconds, "tokens/s")
            close(estimate["mfu"],
                  roofline["model_flops_per_token"] * 32 * 64 / seconds /
                  gpu["fp32_flops"], "MFU")
print(f"{model} {arch}: {len(ops)} ops, roofline checked")
