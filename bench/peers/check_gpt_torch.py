#!/usr/bin/env python3
"""Checks that the PyTorch peer (gpt_torch.py) computes the model and the
training step that Kiln does, against the JAX goldens of the oracle tests.

test/oracle/make_goldens.py computes, in JAX and independently of both Kiln
and this peer, the loss of test/oracle/gpt2l.kiln (examples/gpt.kiln's
structure at a small size, with a clip that acts and a warmup + cosine
schedule to final = 0.1) on one stored batch from stored initial weights, and
ten AdamW steps on that batch. Kiln's compiled path is held to these same
goldens by its own tests. Here the peer, reading gpt2l.kiln as it reads
gpt.kiln, starts from the same weights and batch and must reproduce, in
float32, every step's loss and gradient norm (relative error <= 1e-5) and
the parameters after the ten steps (||delta|| / ||ref|| <= 1e-4 per tensor,
the bar the issue sets for Kiln's fp32 path).

Run: python3 bench/peers/check_gpt_torch.py   (from anywhere; a few seconds)
"""

import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "..", "..", "test", "oracle")
sys.path.insert(0, HERE)
import gpt_torch as peer  # noqa: E402


def main():
    torch.set_num_threads(1)
    config = peer.read_kiln_model(os.path.join(ORACLE, "gpt2l.kiln"))
    golden = json.load(open(os.path.join(ORACLE, "gpt2l.golden.json")))
    golden_tensors = peer.load_safetensors(
        os.path.join(ORACLE, "gpt2l.golden.safetensors"))

    params = peer.init_params(config["dims"], torch.Generator().manual_seed(0))
    peer.load_params(params, os.path.join(ORACLE, "gpt2l.weights.safetensors"))
    tokens = torch.from_numpy(np.load(os.path.join(ORACLE, "gpt2l.tokens.npy")).astype(np.int64))
    targets = torch.from_numpy(np.load(os.path.join(ORACLE, "gpt2l.targets.npy")).astype(np.int64))

    settings = config["train"]
    optimizer = peer.make_optimizer(params, settings)
    failures = []

    # The gradients at the initial weights, per tensor (f32/grad/<param>),
    # to the step-0 bar for an fp32 path: ||delta|| / ||ref|| <= 1e-5.
    peer.loss_of(params, tokens, targets, config).backward()
    worst_grad = max(float((params[n].grad - golden_tensors["f32/grad/" + n]).norm()
                           / golden_tensors["f32/grad/" + n].norm()) for n in params)
    print(f"{'ok' if worst_grad <= 1e-5 else 'FAIL':4} gradients at step 0: worst "
          f"||delta||/||ref|| over {len(params)} tensors {worst_grad:.2e}")
    if worst_grad > 1e-5:
        failures.append("gradients")
    optimizer.zero_grad(set_to_none=True)

    def check(what, got, want, tolerance):
        error = abs(got - want) / max(abs(want), 1e-30)
        status = "ok" if error <= tolerance else "FAIL"
        print(f"{status:4} {what}: peer {got:.9g}, JAX {want:.9g}, relative error {error:.2e}")
        if error > tolerance:
            failures.append(what)

    for step in range(1, settings["steps"] + 1):
        lr = peer.learning_rate(step, settings, settings["steps"])
        loss, norm = peer.train_step(params, optimizer, tokens, targets, lr, config)
        check(f"step {step} loss", loss, golden["losses_f32"][step - 1], 1e-5)
        check(f"step {step} grad norm", norm, golden["grad_norms_f64"][step - 1], 1e-5)

    # The parameters after the ten steps, per tensor (f32/step10/<param>, see
    # test/oracle/README.md).
    after = {name[len("f32/step10/"):]: t for name, t in golden_tensors.items()
             if name.startswith("f32/step10/")}
    if set(after) != set(params):
        print("FAIL the goldens' f32/step10/ tensors are not the parameters")
        failures.append("parameters after training")
    worst = 0.0
    for name, want in after.items():
        got = params[name].detach()
        worst = max(worst, float((got - want).norm() / want.norm()))
    if after:
        status = "ok" if worst <= 1e-4 else "FAIL"
        print(f"{status:4} parameters after {settings['steps']} steps: worst "
              f"||delta||/||ref|| over {len(after)} tensors {worst:.2e}")
        if worst > 1e-4:
            failures.append("parameters after training")

    if failures:
        sys.exit(f"{len(failures)} check(s) failed: the peer is not the model Kiln trains")
    print("the peer matches the JAX goldens")


if __name__ == "__main__":
    main()
