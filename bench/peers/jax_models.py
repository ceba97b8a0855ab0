#!/usr/bin/env python3
"""The benchmark's JAX peer: examples/mlp.kiln and examples/gpt.kiln in JAX.

The models are built from the op definitions of the oracle tests
(test/oracle/make_goldens.py: layer_norm, tanh GELU, heads, causal attention,
cross-entropy with label smoothing, the schedule), which the oracle tests
hold Kiln's compiled path to; here they run in float32 under jax.jit with
the training step (value_and_grad, global-norm clipping, AdamW with decay
on rank >= 2 parameters only) as one jitted function.

Given the model (a JSON object: "kind" mlp or gpt, the GPT's "heads" and
"layers", and the train block's optimizer and schedule, as bench/run.py
reads them from the .kiln file), the initial weights (a .safetensors file
with Kiln's names), one batch (.npy files named after the model's inputs)
and a step count, it measures and prints one JSON object:
  compile_s        jax.jit(step).lower(...).compile(), cold (JAX's
                   compilation cache is off unless configured)
  step_ms          the wall time of each step, batch transfer included
  losses           the loss of each step (before its update)
  memory           compiled.memory_analysis(): temp + arguments + outputs
                   - aliased, in bytes
  fusions          fusion instructions in the optimized HLO's entry
  custom_calls     the custom-call targets in the optimized HLO (library
                   GEMMs XLA calls, if any: oneDNN's, Eigen's)
  dots             dot instructions in the optimized HLO (GEMMs XLA emits
                   itself)
  devices, threads the CPU devices and XLA's intra-op thread count

Usage: jax_models.py CONFIG_JSON WEIGHTS.safetensors DATA_DIR STEPS [--scan]
                     [--bf16]
--scan runs the GPT's layers through lax.scan instead of unrolling them.
--bf16 trains in Kiln's bf16 policy (below), the master weights, gradients
and optimizer state in f32.
"""

import argparse
import json
import math
import os
import re
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "oracle"))
import make_goldens as oracle  # noqa: E402  (sets JAX's config: see below)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

# The oracle enables float64 for its goldens; the benchmark runs float32.
jax.config.update("jax_enable_x64", False)

def mlp_loss(p, batch, opt):
    h = jnp.maximum(batch["x"] @ p["w1"] + p["b1"], 0.0)
    logits = h @ p["w2"] + p["b2"]
    return oracle.cross_entropy(logits, batch["y"], opt["label_smoothing"])


def gpt_loss(p, batch, opt, scan=False):
    x = p["wte"][batch["tokens"]] + p["wpe"]
    if scan:
        names = sorted({k.split(".", 2)[2] for k in p if k.startswith("block.")})
        stacked = {n: jnp.stack([p["block.%d.%s" % (l, n)]
                                 for l in range(opt["layers"])]) for n in names}

        def body(x, layer):
            return oracle.gpt_block(layer, "", x, opt["heads"]), None
        x, _ = jax.lax.scan(body, x, stacked)
    else:
        for layer in range(opt["layers"]):
            x = oracle.gpt_block(p, "block.%d." % layer, x, opt["heads"])
    logits = oracle.layer_norm(x, p["lnf_g"], p["lnf_b"]) @ p["wte"].T
    return oracle.cross_entropy(logits, batch["targets"])


# --- bf16: Kiln's policy (docs/mixed-precision.md) -----------------------------
# GEMMs and attention take bf16 operands, accumulate in f32 and store bf16;
# layer norm, softmax and cross-entropy compute in f32; elementwise ops in
# the type of their operands, a bias following the activation; where the
# f32 residual stream meets a bf16 branch the result is bf16. Master
# weights, gradients and the optimizer stay f32.

BF16 = jnp.bfloat16
F32 = jnp.float32


def low_matmul(a, w):
    return jnp.matmul(a.astype(BF16), w.astype(BF16),
                      preferred_element_type=F32).astype(BF16)


def low_causal_attention(q, k, v):
    scores = jnp.einsum("...qd,...kd->...qk", q, k, preferred_element_type=F32)
    scores = scores * (1.0 / math.sqrt(q.shape[-1]))
    tq, tk = scores.shape[-2], scores.shape[-1]
    allowed = jnp.arange(tk)[None, :] <= jnp.arange(tq)[:, None]
    probs = oracle.softmax(jnp.where(allowed, scores, -jnp.inf))
    return jnp.einsum("...qk,...kd->...qd", probs.astype(BF16), v,
                      preferred_element_type=F32).astype(BF16)


def mlp_loss_bf16(p, batch, opt):
    h = jnp.maximum(low_matmul(batch["x"], p["w1"]) + p["b1"].astype(BF16), 0)
    logits = low_matmul(h, p["w2"]) + p["b2"].astype(BF16)
    return oracle.cross_entropy(logits.astype(F32), batch["y"],
                                opt["label_smoothing"])


def gpt_block_bf16(p, prefix, x, num_heads):
    h = oracle.layer_norm(x.astype(F32), p[prefix + "ln1_g"], p[prefix + "ln1_b"])
    qkv = low_matmul(h, p[prefix + "w_qkv"]) + p[prefix + "b_qkv"].astype(BF16)
    q, k, v = jnp.split(qkv, 3, axis=-1)
    a = low_causal_attention(oracle.heads(q, num_heads),
                             oracle.heads(k, num_heads),
                             oracle.heads(v, num_heads))
    x = x.astype(BF16) + (low_matmul(oracle.merge_heads(a), p[prefix + "w_out"])
                          + p[prefix + "b_out"].astype(BF16))
    h = oracle.layer_norm(x.astype(F32), p[prefix + "ln2_g"], p[prefix + "ln2_b"])
    m = oracle.gelu(low_matmul(h, p[prefix + "w_fc"])
                    + p[prefix + "b_fc"].astype(BF16))
    return x + low_matmul(m, p[prefix + "w_proj"]) + p[prefix + "b_proj"].astype(BF16)


def gpt_loss_bf16(p, batch, opt):
    # The embedding gathers bf16 rows; the position table is a parameter
    # (f32), so their sum is f32.
    x = p["wte"].astype(BF16)[batch["tokens"]] + p["wpe"]
    for layer in range(opt["layers"]):
        x = gpt_block_bf16(p, "block.%d." % layer, x, opt["heads"])
    h = oracle.layer_norm(x.astype(F32), p["lnf_g"], p["lnf_b"])
    logits = low_matmul(h, p["wte"].T)
    return oracle.cross_entropy(logits.astype(F32), batch["targets"])


def make_step(loss_fn, opt):
    b1, b2, eps = opt["betas"][0], opt["betas"][1], opt["eps"]

    def step(params, m, v, t, lr, batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        scale = jnp.float32(1.0)
        if opt["clip"] > 0:
            norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in grads.values()))
            scale = jnp.minimum(1.0, opt["clip"] / (norm + 1e-6))
        new_p, new_m, new_v = {}, {}, {}
        for k in params:
            g = grads[k] * scale
            new_m[k] = b1 * m[k] + (1.0 - b1) * g
            new_v[k] = b2 * v[k] + (1.0 - b2) * g * g
            wd = opt["weight_decay"] if params[k].ndim >= 2 else 0.0
            step_size = lr / (1.0 - b1 ** t)
            denom = jnp.sqrt(new_v[k]) / jnp.sqrt(1.0 - b2 ** t) + eps
            new_p[k] = params[k] * (1.0 - lr * wd) - step_size * new_m[k] / denom
        return loss, new_p, new_m, new_v

    return jax.jit(step, donate_argnums=(0, 1, 2))


def hlo_summary(compiled):
    text = compiled.as_text()
    entry = text[text.find("ENTRY"):]
    entry = entry[:entry.find("\n}")]
    fusions = len(re.findall(r"=\s*\S+\s+fusion\(", entry))
    targets = sorted(set(re.findall(r'custom_call_target="([^"]+)"', text)))
    dots = len(re.findall(r"=\s*\S+\s+dot\(", text))
    return fusions, targets, dots


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("weights")
    parser.add_argument("data")
    parser.add_argument("steps", type=int)
    parser.add_argument("--scan", action="store_true")
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args()
    opt = json.loads(args.config)

    params = {k: jnp.asarray(v, jnp.float32)
              for k, v in oracle.read_safetensors(args.weights).items()}
    names = ["x", "y"] if opt["kind"] == "mlp" else ["tokens", "targets"]
    batch = {n: np.load(os.path.join(args.data, n + ".npy")) for n in names}
    if args.bf16:
        if args.scan:
            raise SystemExit("--bf16 unrolls the layers: no --scan")
        loss_fn = mlp_loss_bf16 if opt["kind"] == "mlp" else gpt_loss_bf16
        loss_fn = lambda p, b, f=loss_fn: f(p, b, opt)  # noqa: E731
    elif opt["kind"] == "mlp":
        loss_fn = lambda p, b: mlp_loss(p, b, opt)  # noqa: E731
    else:
        loss_fn = lambda p, b: gpt_loss(p, b, opt, args.scan)  # noqa: E731
    step = make_step(loss_fn, opt)
    m = {k: jnp.zeros_like(p) for k, p in params.items()}
    v = {k: jnp.zeros_like(p) for k, p in params.items()}

    t0 = time.perf_counter()
    compiled = step.lower(params, m, v, jnp.float32(1), jnp.float32(0),
                          batch).compile()
    compile_s = time.perf_counter() - t0
    analysis = compiled.memory_analysis()
    memory = None
    if analysis is not None:
        memory = (analysis.temp_size_in_bytes + analysis.argument_size_in_bytes
                  + analysis.output_size_in_bytes - analysis.alias_size_in_bytes)
    fusions, targets, dots = hlo_summary(compiled)

    step_ms, losses = [], []
    for t in range(1, args.steps + 1):
        lr = oracle.learning_rate(t, opt)
        start = time.perf_counter()
        loss, params, m, v = compiled(params, m, v, jnp.float32(t),
                                      jnp.float32(lr), batch)
        loss = float(loss)  # waits for the step
        step_ms.append((time.perf_counter() - start) * 1e3)
        losses.append(loss)
    flags = os.environ.get("XLA_FLAGS", "")
    threads = re.search(r"intra_op_parallelism_threads=(\d+)", flags)
    print(json.dumps(dict(
        compile_s=compile_s, step_ms=step_ms, losses=losses, memory=memory,
        fusions=fusions, custom_calls=targets, dots=dots,
        devices=[str(d) for d in jax.devices()],
        threads=int(threads.group(1)) if threads else os.cpu_count(),
        jax=jax.__version__, xla_flags=flags)))


if __name__ == "__main__":
    main()
