#!/usr/bin/env python3
"""The benchmark's PyTorch peer: examples/mlp.kiln and the GPTs in PyTorch.

The GPT's forward pass, the AdamW set-up (decay on rank >= 2 only) and the
schedule are bench/peers/gpt_torch.py's (checked against the oracle's JAX
goldens by bench/peers/check_gpt_torch.py); the MLP is written here the same
way (relu(x w1 + b1) w2 + b2, cross-entropy with the model's label
smoothing). float32 on the CPU; with --bf16, the loss under
torch.autocast(cpu, bfloat16). With --compile, the loss (forward, and
through AOTAutograd its backward) runs under torch.compile (Inductor); the
optimizer step stays eager.

Given the model (the JSON object bench/run.py reads from the .kiln file),
the initial weights (.safetensors, Kiln's names), one batch (.npy files
named after the model's inputs) and a step count, it prints one JSON
object:
  first_step_s     the first step's wall time: with --compile, the compile
                   (TORCHINDUCTOR_CACHE_DIR should be fresh for a cold one)
  step_ms          every step's wall time (loss read back included)
  losses           the loss of each step (before its update)
  peak_rss_growth  the process's peak RSS at the end minus its RSS before
                   the weights were loaded, in bytes
  threads          torch.get_num_threads()

Usage: torch_models.py CONFIG_JSON WEIGHTS.safetensors DATA_DIR STEPS [--compile]
                       [--bf16]
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch  # noqa: E402


def current_rss():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("weights")
    parser.add_argument("data")
    parser.add_argument("steps", type=int)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()
    opt = json.loads(args.config)
    torch.set_num_threads(os.cpu_count())
    rss_before = current_rss()

    params = {k: v.requires_grad_()
              for k, v in gpt_torch.load_safetensors(args.weights).items()}
    if opt["kind"] == "mlp":
        names = ["x", "y"]
        smoothing = opt["label_smoothing"]

        def loss_fn(p, x, y):
            h = torch.relu(x @ p["w1"] + p["b1"])
            return F.cross_entropy(h @ p["w2"] + p["b2"], y,
                                   label_smoothing=smoothing)
    else:
        names = ["tokens", "targets"]
        dims = {"D": params["wte"].shape[1], "H": opt["heads"],
                "L": opt["layers"]}
        smoothing = opt["label_smoothing"]

        def loss_fn(p, tokens, targets):
            logits = gpt_torch.forward(p, tokens, dims, 1e-5)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   targets.reshape(-1),
                                   label_smoothing=smoothing)
    batch = [torch.from_numpy(np.load(os.path.join(args.data, n + ".npy"))
                              .astype(np.int64 if n != "x" else np.float32))
             for n in names]
    if args.bf16:
        # PyTorch's own mixed precision: autocast's CPU policy (matmuls in
        # bf16, layer norm, softmax and cross-entropy in f32); the weights,
        # gradients and optimizer stay f32.
        full_precision_loss = loss_fn

        def loss_fn(*inputs):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return full_precision_loss(*inputs)
    if args.compile:
        loss_fn = torch.compile(loss_fn)
    optimizer = gpt_torch.make_optimizer(
        params, dict(opt, decay_all=False, betas=tuple(opt["betas"])))

    step_ms, losses = [], []
    first_step_s = None
    for t in range(1, args.steps + 1):
        start = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = gpt_torch.learning_rate(t, opt, opt["total"])
        loss = loss_fn(params, *batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if opt["clip"] > 0:
            torch.nn.utils.clip_grad_norm_(params.values(), opt["clip"])
        optimizer.step()
        losses.append(loss.item())
        elapsed = time.perf_counter() - start
        if first_step_s is None:
            first_step_s = elapsed
        step_ms.append(elapsed * 1e3)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(dict(
        first_step_s=first_step_s, step_ms=step_ms, losses=losses,
        peak_rss_growth=peak - rss_before, threads=torch.get_num_threads(),
        torch=torch.__version__, compiled=args.compile)))


if __name__ == "__main__":
    main()
