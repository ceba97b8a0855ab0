"""Checks that a cuda train step's plan holds no [B*H, T, T] buffer where
attention is fused, and that the unfused plan does:
check_attention_plan.py B*H T fused.json unfused.json. Prints the peak
bytes of both."""
import json
import sys

heads, tokens = int(sys.argv[1]), int(sys.argv[2])
fused, unfused = (json.load(open(path)) for path in sys.argv[3:5])
scores = [heads, tokens, tokens]
score_bytes = heads * tokens * tokens * 4
for name, entry in fused["entries"].items():
    largest = entry["largest_transient"]
    if largest["bytes"] >= score_bytes:
        sys.exit(f"fused {name}: a buffer of {largest['shape']}, "
                 f"{largest['bytes']} bytes, as large as the scores")
train = unfused["entries"]["train_step"]["largest_transient"]
if train["shape"] != scores:
    sys.exit(f"unfused train_step: largest buffer {train['shape']}, "
             f"expected the scores {scores}")
if not fused["peak_bytes"] < unfused["peak_bytes"]:
    sys.exit("the fused plan's peak is not below the unfused one's")
print(f"peak_bytes fused {fused['peak_bytes']} unfused "
      f"{unfused['peak_bytes']} ratio "
      f"{fused['peak_bytes'] / unfused['peak_bytes']:.3f}")
