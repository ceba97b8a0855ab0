#!/usr/bin/env python3
"""Stage 4 of bench/device/run.sh: a bench GPT in PyTorch on the GPU.

    torch_peer.py MODEL.kiln BATCH STEPS eager|compile OUT.json

The model of MODEL.kiln with its batch dim set to BATCH, as the CPU peer
builds it (bench/peers/gpt_torch.py: the same architecture, initializers
and AdamW with the train block's settings), on `cuda` in float32 with
TF32 off (Kiln's f32 GEMMs do not use TF32 either), trained STEPS steps on
the fixed synthetic batch step_runner.c binds (token e of the flattened
batch: (7 e + e / 13) mod 10, the same for targets) at the train block's
learning rate schedule, eager or through
torch.compile. A step is the forward, the backward, clipping, the update
and reading the loss back. Writes the losses, the median step time over
the steps after the first five (torch.compile compiles in those) and the
tokens a step takes. PyTorch's scaled_dot_product_attention picks its own
fused kernel; Kiln's attention is not fused yet.
"""

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "peers"))
import torch  # noqa: E402

import gpt_torch  # noqa: E402


def main():
    if len(sys.argv) != 6 or sys.argv[4] not in ("eager", "compile"):
        sys.exit(__doc__.split("\n\n")[1])
    model, batch, steps, mode, out = (sys.argv[1], int(sys.argv[2]),
                                      int(sys.argv[3]), sys.argv[4],
                                      sys.argv[5])
    if not torch.cuda.is_available():
        sys.exit("torch_peer.py: torch sees no GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    config = gpt_torch.read_kiln_model(model)
    dims = dict(config["dims"], B=batch)
    config["dims"] = dims
    generator = torch.Generator().manual_seed(0)
    params = {name: p.detach().to("cuda").requires_grad_()
              for name, p in gpt_torch.init_params(dims, generator).items()}
    optimizer = gpt_torch.make_optimizer(params, config["train"])
    count = dims["B"] * dims["T"]
    ids = torch.tensor([(7 * e + e // 13) % 10 for e in range(count)],
                       dtype=torch.int64, device="cuda").view(dims["B"],
                                                              dims["T"])
    loss_fn = gpt_torch.loss_of
    if mode == "compile":
        loss_fn = torch.compile(gpt_torch.loss_of)
    clip = config["train"]["clip"]
    losses, times = [], []
    settings = config["train"]
    for step in range(1, steps + 1):
        torch.cuda.synchronize()
        start = time.perf_counter()
        # The train block's schedule, as Kiln's step computes it.
        for group in optimizer.param_groups:
            group["lr"] = gpt_torch.learning_rate(step, settings,
                                                  settings["steps"])
        loss = loss_fn(params, ids, ids, config)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(params.values(), clip)
        optimizer.step()
        losses.append(loss.item())
        times.append((time.perf_counter() - start) * 1e3)
    steady = times[5:] if len(times) > 5 else times
    with open(out, "w") as file:
        json.dump({"model": model, "mode": mode, "steps": steps,
                   "median_ms": statistics.median(steady),
                   "tokens_per_step": count,
                   "parameters": sum(p.numel() for p in params.values()),
                   "torch": torch.__version__,
                   "gpu": torch.cuda.get_device_name(), "losses": losses},
                  file)
        file.write("\n")


if __name__ == "__main__":
    main()
