#!/usr/bin/env python3
"""Goldens for Kiln's whole-model gradient and training tests, from JAX.

An oracle independent of Kiln: the forward passes of examples/mlp.kiln and
test/oracle/gpt2l.kiln are written here in JAX from the op documentation
(docs/language.md, dialects/Graph/GraphOps.td), gradients come from
jax.grad, and AdamW is written from the formulas PyTorch documents (which
dialects/Graph/GraphOptimizerOps.td adopts). Nothing is translated from
Kiln's C++.

For each model it writes, next to this script (see README.md):
  <model>.weights.safetensors  the initial parameters, f32, Kiln's names
  <model>.<input>.npy          one batch (x f32 [B,F], y i32 [B];
                               tokens/targets i32 [B,T])
  <model>.golden.safetensors   f64/... and f32/...: the loss and every
                               parameter's gradient at step 0, the loss of
                               each of 10 AdamW steps and the parameters
                               after them
  <model>.golden.json          the losses again, readable, and every setting
                               used (hyper-parameters, seed, versions)

Both precisions start from the same values: weights and inputs are drawn in
float64, rounded once to float32 and stored so; the float64 run uses those
float32 values widened exactly.

Rerun:  python3 test/oracle/make_goldens.py      (JAX on the CPU; ~20 s)
"""

import importlib.metadata
import json
import math
import os
import platform
import struct
import sys

import numpy as np

import jax
import jax.numpy as jnp

# Float64 must be enabled before any array is created, or JAX silently
# computes "float64" arrays in float32.
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
# Full-precision matmuls (the CPU default already; stated so that no backend
# default can lower it).
jax.config.update("jax_default_matmul_precision", "highest")

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20261130  # numpy's seed for weights and batches, with the model's index
NUM_STEPS = 10   # AdamW steps of the training goldens


# --------------------------------------------------------------------------
# .safetensors writer. The format (github.com/huggingface/safetensors, and
# runtime/include/kiln/Safetensors.h): an 8-byte little-endian header length
# N, N bytes of JSON mapping each name to {"dtype", "shape", "data_offsets"
# [begin, end) into the data buffer}, then the data, row-major little-endian.
# The header is space-padded to a multiple of 8 so the data stays aligned.

_DTYPE_NAMES = {np.dtype("<f4"): "F32", np.dtype("<f8"): "F64",
                np.dtype("<i4"): "I32", np.dtype("<i8"): "I64"}


def write_safetensors(path, tensors, metadata=None):
    """Writes the dict name -> numpy array `tensors`, in insertion order."""
    header = {}
    chunks = []
    offset = 0
    for name, array in tensors.items():
        # (Not np.ascontiguousarray: it turns a scalar into shape [1].)
        array = np.array(array, order="C")
        data = array.astype(array.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": _DTYPE_NAMES[array.dtype.newbyteorder("<")],
                        "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for chunk in chunks:
            f.write(chunk)


def read_safetensors(path):
    """Reads a file written by write_safetensors back (a self-check)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    data = blob[8 + n:]
    inverse = {v: k for k, v in _DTYPE_NAMES.items()}
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=inverse[info["dtype"]]
                                  ).reshape(info["shape"])
    return out


# --------------------------------------------------------------------------
# Kiln's ops, from their documentation.

def layer_norm(x, g, b, eps=1e-5):
    # GraphOps.td layer_norm: y = (x - mean) * rsqrt(var + eps) * gamma + beta
    # with the biased variance (divide by the count) over the last dim.
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * g + b


def gelu(x):
    # GraphOps.td gelu: tanh approximation,
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
    c = math.sqrt(2.0 / math.pi)
    return 0.5 * x * (1.0 + jnp.tanh(c * (x + 0.044715 * x * x * x)))


def heads(x, h):
    # docs/language.md: heads(x, H) is [B, T, D] -> [B, H, T, D/H]: feature d
    # of token t goes to head d // (D/H), position d % (D/H).
    b, t, d = x.shape
    return x.reshape(b, t, h, d // h).transpose(0, 2, 1, 3)


def merge_heads(x):
    # The inverse of heads: [B, H, T, D/H] -> [B, T, D].
    b, h, t, e = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * e)


def causal_attention(q, k, v):
    # GraphOps.td attention: softmax(q k^T * scale + causal mask) v over the
    # last two dims, scale = 1/sqrt(Dk); with causal, query i attends to keys
    # j <= i (masked scores are -inf, so they get probability 0).
    dk = q.shape[-1]
    scores = jnp.einsum("...qd,...kd->...qk", q, k) * (1.0 / math.sqrt(dk))
    tq, tk = scores.shape[-2], scores.shape[-1]
    allowed = jnp.arange(tk)[None, :] <= jnp.arange(tq)[:, None]
    scores = jnp.where(allowed, scores, -jnp.inf)
    return jnp.einsum("...qk,...kd->...qd", softmax(scores), v)


def softmax(x):
    # exp(x - max) / sum(exp(x - max)) along the last axis.
    e = jnp.exp(x - jax.lax.stop_gradient(jnp.max(x, axis=-1, keepdims=True)))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def rms_norm(x, g, eps):
    # docs/language.md rms_norm: x * rsqrt(mean(x^2 over the last dim) + eps)
    # * gamma (LLaMA's RMSNorm).
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * g


def silu(x):
    # x * sigmoid(x).
    return x * jax.nn.sigmoid(x)


def rotary(x, base=10000.0):
    # docs/language.md rotary: position t (the second-to-last axis) turns
    # feature pair (i, i + Dh/2) by t * base^(-2i/Dh). Written here as
    # Hugging Face's LLaMA writes it: x cos + rotate_half(x) sin, with the
    # angles repeated over both halves and rotate_half(x) = [-x2, x1]. The
    # tables are computed in the run's precision, as there.
    t, dh = x.shape[-2], x.shape[-1]
    inv_freq = 1.0 / (base ** (jnp.arange(0, dh, 2, dtype=x.dtype) / dh))
    freqs = jnp.outer(jnp.arange(t, dtype=x.dtype), inv_freq)
    emb = jnp.concatenate([freqs, freqs], axis=-1)
    x1, x2 = x[..., :dh // 2], x[..., dh // 2:]
    rotated = jnp.concatenate([-x2, x1], axis=-1)
    return x * jnp.cos(emb) + rotated * jnp.sin(emb)


def conv2d(x, w, padding):
    # docs/language.md conv2d: NCHW input, OIHW filters, stride 1 here,
    # zero padding; cross-correlation as PyTorch's Conv2d.
    return jax.lax.conv_general_dilated(
        x, w, (1, 1), [(padding, padding), (padding, padding)],
        dimension_numbers=("NCHW", "OIHW", "NCHW"),
        precision=jax.lax.Precision.HIGHEST)


def max_pool2d(x, k):
    # Non-overlapping k x k windows of the last two dims.
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, k, k),
                                 (1, 1, k, k), "VALID")


def batch_norm_train(x, g, b, mean, var, momentum=0.1, eps=1e-5):
    # docs/language.md batch_norm, training: PyTorch's BatchNorm2d in train
    # mode -- the batch's mean and biased variance over (N, H, W) normalize;
    # the running statistics move by momentum, the variance unbiased.
    axes = (0, 2, 3)
    mu = jnp.mean(x, axis=axes)
    sigma2 = jnp.mean(jnp.square(x - mu[None, :, None, None]), axis=axes)
    y = (x - mu[None, :, None, None]) * jax.lax.rsqrt(
        sigma2[None, :, None, None] + eps)
    y = y * g[None, :, None, None] + b[None, :, None, None]
    n = x.shape[0] * x.shape[2] * x.shape[3]
    new_mean = (1 - momentum) * mean + momentum * mu
    new_var = (1 - momentum) * var + momentum * sigma2 * n / (n - 1)
    return y, new_mean, new_var


def cross_entropy(logits, targets, label_smoothing=0.0):
    # GraphOps.td cross_entropy: logits [..., C], integer targets [...]; the
    # mean over all rows of -sum_c p_c log softmax(logits)_c with the target
    # distribution p = (1 - s) onehot + s / C.
    c = logits.shape[-1]
    shifted = logits - jax.lax.stop_gradient(
        jnp.max(logits, axis=-1, keepdims=True))
    log_probs = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=-1,
                                          keepdims=True))
    onehot = jax.nn.one_hot(targets, c, dtype=logits.dtype)
    target = (1.0 - label_smoothing) * onehot + label_smoothing / c
    return jnp.mean(-jnp.sum(target * log_probs, axis=-1))


# --------------------------------------------------------------------------
# The models. Each returns the loss from a dict of parameters (Kiln's names)
# and a dict of inputs.

def mlp_loss(p, batch):
    # examples/mlp.kiln: h = relu(x @ w1 + b1); logits = h @ w2 + b2;
    # cross_entropy(logits, y, label_smoothing=0.1).
    h = jnp.maximum(batch["x"] @ p["w1"] + p["b1"], 0.0)
    logits = h @ p["w2"] + p["b2"]
    return cross_entropy(logits, batch["y"], label_smoothing=0.1)


GPT_DIMS = dict(B=4, T=16, V=64, D=16, H=4, L=2)  # test/oracle/gpt2l.kiln


def gpt_block(p, prefix, x, num_heads):
    # test/oracle/gpt2l.kiln, fn block: pre-norm causal self-attention and a
    # GELU MLP, each added to the residual stream.
    h = layer_norm(x, p[prefix + "ln1_g"], p[prefix + "ln1_b"])
    qkv = h @ p[prefix + "w_qkv"] + p[prefix + "b_qkv"]
    q, k, v = jnp.split(qkv, 3, axis=-1)  # split(..., 3, axis=-1): in order
    a = causal_attention(heads(q, num_heads), heads(k, num_heads),
                         heads(v, num_heads))
    x = x + merge_heads(a) @ p[prefix + "w_out"] + p[prefix + "b_out"]
    h = layer_norm(x, p[prefix + "ln2_g"], p[prefix + "ln2_b"])
    return x + gelu(h @ p[prefix + "w_fc"] + p[prefix + "b_fc"]) @ \
        p[prefix + "w_proj"] + p[prefix + "b_proj"]


def gpt_loss(p, batch):
    # test/oracle/gpt2l.kiln, model gpt2l: embed(wte, tokens) gathers rows of
    # wte; wpe [T, D] broadcasts over the batch; the output layer is tied,
    # logits = layer_norm(x) @ transpose(wte); mean cross-entropy over B*T.
    x = p["wte"][batch["tokens"]] + p["wpe"]
    for layer in range(GPT_DIMS["L"]):
        x = gpt_block(p, "block.%d." % layer, x, GPT_DIMS["H"])
    logits = layer_norm(x, p["lnf_g"], p["lnf_b"]) @ p["wte"].T
    return cross_entropy(logits, batch["targets"])


LLAMA_DIMS = dict(B=4, T=16, V=64, D=16, H=2, L=2, F=40)  # llama2l.kiln


def llama_block(p, prefix, x, num_heads):
    # test/oracle/llama2l.kiln, fn block: RMSNorm, causal self-attention with
    # rotary queries and keys, RMSNorm, a SwiGLU MLP; no biases.
    h = rms_norm(x, p[prefix + "attn_norm"], 1e-5)
    q, k, v = jnp.split(h @ p[prefix + "w_qkv"], 3, axis=-1)
    a = causal_attention(rotary(heads(q, num_heads)),
                         rotary(heads(k, num_heads)), heads(v, num_heads))
    x = x + merge_heads(a) @ p[prefix + "w_out"]
    h = rms_norm(x, p[prefix + "mlp_norm"], 1e-5)
    gate = silu(h @ p[prefix + "w_gate"]) * (h @ p[prefix + "w_up"])
    return x + gate @ p[prefix + "w_down"]


def llama_loss(p, batch):
    # test/oracle/llama2l.kiln, model llama2l: token embeddings only (the
    # positions enter through rotary), an untied output layer.
    x = p["wte"][batch["tokens"]]
    for layer in range(LLAMA_DIMS["L"]):
        x = llama_block(p, "block.%d." % layer, x, LLAMA_DIMS["H"])
    logits = rms_norm(x, p["norm"], 1e-5) @ p["head"]
    return cross_entropy(logits, batch["targets"])


CNN_DIMS = dict(B=6, C=4, K=10)  # test/oracle/cnn.kiln


def cnn_loss(p, batch, buffers):
    # test/oracle/cnn.kiln: conv + batch norm + ReLU, a residual block of two
    # conv_bn, 2x2 max pooling, a linear classifier; returns the loss and
    # the buffers' next values (the auxiliary output of jax.grad).
    d = CNN_DIMS
    new = {}

    def bn(x, prefix, g, b, mean, var):
        y, new[prefix + mean], new[prefix + var] = batch_norm_train(
            x, p[prefix + g], p[prefix + b], buffers[prefix + mean],
            buffers[prefix + var])
        return y

    image = batch["x"].reshape(d["B"], 1, 8, 8)
    h = jax.nn.relu(bn(conv2d(image, p["w_in"], 1), "", "g_in", "b_in",
                       "mean_in", "var_in"))
    r = jax.nn.relu(bn(conv2d(h, p["conv_bn.0.w"], 1), "conv_bn.0.", "g", "b",
                       "mean", "var"))
    h = jax.nn.relu(h + bn(conv2d(r, p["conv_bn.1.w"], 1), "conv_bn.1.", "g",
                           "b", "mean", "var"))
    h = max_pool2d(h, 2)
    logits = h.reshape(d["B"], d["C"] * 16) @ p["w_out"] + p["b_out"]
    return cross_entropy(logits, batch["y"], label_smoothing=0.1), new


# --------------------------------------------------------------------------
# Initial weights and the batch.
#
# The initializers' distributions (normal(std) matrices) are kept for the
# matrices. Gains and biases are *not* drawn as the ones/zeros their
# initializers give: an all-zero bias or all-one gain would hide a VJP that
# confuses the two, drops a bias, or scales by the gain twice. They are drawn
# near those values instead (gain 1 + 0.1 N(0,1), bias 0.02 N(0,1) scaled
# like the matrices).

def draw(rng, shape, kind, std=0.0):
    if kind == "normal":
        values = std * rng.standard_normal(shape)
    elif kind == "gain":
        values = 1.0 + 0.1 * rng.standard_normal(shape)
    elif kind == "bias":
        values = 0.02 * rng.standard_normal(shape)
    else:
        raise ValueError(kind)
    return values.astype(np.float32)


def mlp_setup(rng):
    # examples/mlp.kiln: dim B = 32, F = 64, N = 128, C = 10.
    b, f, n, c = 32, 64, 128, 10
    weights = {
        "w1": draw(rng, (f, n), "normal", 0.05),
        "b1": draw(rng, (n,), "bias"),
        "w2": draw(rng, (n, c), "normal", 0.05),
        "b2": draw(rng, (c,), "bias"),
    }
    # Pixel intensities in [0, 1], as the digits data is scaled; labels 0..9.
    batch = {
        "x": rng.uniform(0.0, 1.0, (b, f)).astype(np.float32),
        "y": rng.integers(0, c, (b,)).astype(np.int32),
    }
    return weights, batch


def gpt_setup(rng):
    d = GPT_DIMS
    D, V, T, B = d["D"], d["V"], d["T"], d["B"]
    weights = {
        "wte": draw(rng, (V, D), "normal", 0.02),
        "wpe": draw(rng, (T, D), "normal", 0.02),
        "lnf_g": draw(rng, (D,), "gain"),
        "lnf_b": draw(rng, (D,), "bias"),
    }
    for layer in range(d["L"]):
        pre = "block.%d." % layer
        weights.update({
            pre + "ln1_g": draw(rng, (D,), "gain"),
            pre + "ln1_b": draw(rng, (D,), "bias"),
            pre + "w_qkv": draw(rng, (D, 3 * D), "normal", 0.02),
            pre + "b_qkv": draw(rng, (3 * D,), "bias"),
            pre + "w_out": draw(rng, (D, D), "normal", 0.02),
            pre + "b_out": draw(rng, (D,), "bias"),
            pre + "ln2_g": draw(rng, (D,), "gain"),
            pre + "ln2_b": draw(rng, (D,), "bias"),
            pre + "w_fc": draw(rng, (D, 4 * D), "normal", 0.02),
            pre + "b_fc": draw(rng, (4 * D,), "bias"),
            pre + "w_proj": draw(rng, (4 * D, D), "normal", 0.02),
            pre + "b_proj": draw(rng, (D,), "bias"),
        })
    # A window of random token ids and, as a language model's data gives,
    # the same window shifted by one (plus one more random token).
    stream = rng.integers(0, V, (B, T + 1)).astype(np.int32)
    batch = {"tokens": stream[:, :T].copy(), "targets": stream[:, 1:].copy()}
    return weights, batch


def llama_setup(rng):
    d = LLAMA_DIMS
    D, V, T, B, F = d["D"], d["V"], d["T"], d["B"], d["F"]
    weights = {
        "wte": draw(rng, (V, D), "normal", 0.02),
        "norm": draw(rng, (D,), "gain"),
        "head": draw(rng, (D, V), "normal", 0.02),
    }
    for layer in range(d["L"]):
        pre = "block.%d." % layer
        weights.update({
            pre + "attn_norm": draw(rng, (D,), "gain"),
            pre + "w_qkv": draw(rng, (D, 3 * D), "normal", 0.02),
            pre + "w_out": draw(rng, (D, D), "normal", 0.02),
            pre + "mlp_norm": draw(rng, (D,), "gain"),
            pre + "w_gate": draw(rng, (D, F), "normal", 0.02),
            pre + "w_up": draw(rng, (D, F), "normal", 0.02),
            pre + "w_down": draw(rng, (F, D), "normal", 0.02),
        })
    stream = rng.integers(0, V, (B, T + 1)).astype(np.int32)
    batch = {"tokens": stream[:, :T].copy(), "targets": stream[:, 1:].copy()}
    return weights, batch


def cnn_setup(rng):
    d = CNN_DIMS
    B, C, K = d["B"], d["C"], d["K"]
    weights = {
        "w_in": draw(rng, (C, 1, 3, 3), "normal", 0.47),
        "g_in": draw(rng, (C,), "gain"),
        "b_in": draw(rng, (C,), "bias"),
    }
    for block in range(2):
        pre = "conv_bn.%d." % block
        weights.update({
            pre + "w": draw(rng, (C, C, 3, 3), "normal", 0.24),
            pre + "g": draw(rng, (C,), "gain"),
            pre + "b": draw(rng, (C,), "bias"),
        })
    weights.update({
        "w_out": draw(rng, (C * 16, K), "normal", 0.1),
        "b_out": draw(rng, (K,), "bias"),
    })
    batch = {
        "x": rng.uniform(0.0, 1.0, (B, 64)).astype(np.float32),
        "y": rng.integers(0, K, (B,)).astype(np.int32),
    }
    return weights, batch


def cnn_buffers():
    # The buffers' initializers in cnn.kiln: means zeros, variances ones.
    c = CNN_DIMS["C"]
    buffers = {}
    for pre in ("", "conv_bn.0.", "conv_bn.1."):
        suffix = "_in" if pre == "" else ""
        buffers[pre + "mean" + suffix] = np.zeros((c,), np.float32)
        buffers[pre + "var" + suffix] = np.ones((c,), np.float32)
    return buffers


# --------------------------------------------------------------------------
# The optimizer, from PyTorch's documentation of AdamW, clip_grad_norm_ and
# the schedules, as GraphOptimizerOps.td states them.

def learning_rate(t, opt):
    # lr_schedule, step t 1-based: warmup W > 0 and t <= W gives lr * t / W;
    # after it p = clamp((t - W) / (total - W), 0, 1) and
    #   constant: lr;  linear: lr (1 - (1 - final) p);
    #   cosine: lr (final + (1 - final) (1 + cos(pi p)) / 2).
    lr, w, total, final = opt["lr"], opt["warmup"], opt["total"], opt["final"]
    if w > 0 and t <= w:
        return lr * t / w
    p = min(max((t - w) / (total - w), 0.0), 1.0) if total > w else 1.0
    if opt["schedule"] == "constant":
        return lr
    if opt["schedule"] == "linear":
        return lr * (1.0 - (1.0 - final) * p)
    if opt["schedule"] == "cosine":
        return lr * (final + (1.0 - final) * (1.0 + math.cos(math.pi * p)) / 2)
    raise ValueError(opt["schedule"])


def train(loss_fn, params, batch, opt, dtype, buffers=None):
    """NUM_STEPS AdamW steps on `batch`.

    Returns the loss and the gradients' global norm (before clipping) of each
    step, and the parameters after the last one.

    Every tensor computation is in `dtype`; the scalars of the step (the
    learning rate, bias corrections) are computed in Python floats (double)
    and rounded to `dtype` where they meet a tensor.
    """
    if buffers is None:
        grad_fn = jax.value_and_grad(loss_fn)
    else:
        # The loss and the buffers' next values (batch norm's statistics),
        # which carry over from step to step as the train step's do.
        buffers = {k: jnp.asarray(v, dtype) for k, v in buffers.items()}
        with_aux = jax.value_and_grad(
            lambda p, b, s: loss_fn(p, b, s), has_aux=True)

        def grad_fn(p, b):
            nonlocal buffers
            (loss, buffers), grads = with_aux(p, b, buffers)
            return loss, grads
    params = {k: jnp.asarray(v, dtype) for k, v in params.items()}
    m = {k: jnp.zeros_like(v) for k, v in params.items()}
    v = {k: jnp.zeros_like(v) for k, v in params.items()}
    b1, b2, eps = opt["betas"][0], opt["betas"][1], opt["eps"]
    losses, norms = [], []
    for t in range(1, NUM_STEPS + 1):
        # The loss a train step reports is its forward's, before the update.
        loss, grads = grad_fn(params, batch)
        losses.append(float(loss))
        # Global-norm clipping (torch.nn.utils.clip_grad_norm_, as clip_scale
        # documents): s = min(1, max_norm / (norm + 1e-6)), norm the L2 norm
        # of all gradients together; clip = 0 means no clipping (s = 1).
        scale = jnp.asarray(1.0, dtype)
        norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in grads.values()))
        norms.append(float(norm))
        if opt["clip"] > 0:
            scale = jnp.minimum(jnp.asarray(1.0, dtype),
                                jnp.asarray(opt["clip"], dtype) / (norm + 1e-6))
        lr = learning_rate(t, opt)
        for k in params:
            # torch.optim.AdamW (decoupled weight decay, bias correction):
            #   g = grad * s; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2
            #   p = p (1 - lr wd) - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
            # with wd applied to parameters of rank >= 2 only (matrices and
            # embeddings; not gains and biases), since decay_all is false.
            g = grads[k] * scale
            m[k] = b1 * m[k] + (1.0 - b1) * g
            v[k] = b2 * v[k] + (1.0 - b2) * g * g
            wd = opt["weight_decay"] if params[k].ndim >= 2 else 0.0
            step_size = lr / (1.0 - b1 ** t)
            denom = jnp.sqrt(v[k]) / math.sqrt(1.0 - b2 ** t) + eps
            params[k] = params[k] * (1.0 - lr * wd) - step_size * m[k] / denom
    final = {k: np.asarray(p) for k, p in params.items()}
    if buffers is not None:
        final.update({k: np.asarray(b) for k, b in buffers.items()})
    return losses, norms, final


# --------------------------------------------------------------------------

MODELS = {
    # examples/mlp.kiln's train block: adamw(lr=1e-3, weight_decay=0.01):
    # betas and eps are the defaults (0.9, 0.999) and 1e-8; no clip; no
    # schedule (constant lr); steps = 2000 (the schedule's total).
    "mlp": dict(loss=mlp_loss, setup=mlp_setup,
                opt=dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                         weight_decay=0.01, clip=0.0, schedule="constant",
                         warmup=0, final=0.0, total=2000)),
    # test/oracle/gpt2l.kiln's train block: adamw(lr=1e-3, betas=(0.9, 0.95),
    # weight_decay=0.1, clip=0.5), cosine(warmup=3, final=0.1), steps = 10.
    "gpt2l": dict(loss=gpt_loss, setup=gpt_setup,
                  opt=dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8,
                           weight_decay=0.1, clip=0.5, schedule="cosine",
                           warmup=3, final=0.1, total=10)),
    # test/oracle/llama2l.kiln's train block: gpt2l's settings.
    "llama2l": dict(loss=llama_loss, setup=llama_setup,
                    opt=dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8,
                             weight_decay=0.1, clip=0.5, schedule="cosine",
                             warmup=3, final=0.1, total=10)),
    # test/oracle/cnn.kiln's train block: adamw(lr=1e-2, weight_decay=0.01),
    # cosine(warmup=3, final=0.1), steps = 10; no clip.
    "cnn": dict(loss=cnn_loss, setup=cnn_setup, buffers=cnn_buffers,
                opt=dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8,
                         weight_decay=0.01, clip=0.0, schedule="cosine",
                         warmup=3, final=0.1, total=10)),
}


def relative_error(a, ref):
    a = np.asarray(a, np.float64)
    ref = np.asarray(ref, np.float64)
    return float(np.linalg.norm(a - ref) / np.linalg.norm(ref))


def make(name, spec, rng):
    weights, batch = spec["setup"](rng)
    write_safetensors(os.path.join(HERE, name + ".weights.safetensors"),
                      weights)
    for key, array in batch.items():
        np.save(os.path.join(HERE, "%s.%s.npy" % (name, key)), array)

    golden = {}
    summary = {}
    for dtype, tag in ((jnp.float64, "f64"), (jnp.float32, "f32")):
        params = {k: jnp.asarray(v, dtype) for k, v in weights.items()}
        inputs = {k: jnp.asarray(v, dtype) if v.dtype == np.float32
                  else jnp.asarray(v) for k, v in batch.items()}
        buffers = spec["buffers"]() if "buffers" in spec else None
        if buffers is None:
            loss, grads = jax.value_and_grad(spec["loss"])(params, inputs)
        else:
            start = {k: jnp.asarray(v, dtype) for k, v in buffers.items()}
            loss, grads = jax.value_and_grad(
                lambda p, b: spec["loss"](p, b, start)[0])(params, inputs)
        losses, norms, final = train(spec["loss"], weights, inputs, spec["opt"],
                                     dtype, buffers)
        assert abs(losses[0] - float(loss)) <= 1e-12 * abs(float(loss))
        np_dtype = np.float64 if tag == "f64" else np.float32
        golden["%s/loss" % tag] = np.asarray(loss, np_dtype)
        for k in weights:
            golden["%s/grad/%s" % (tag, k)] = np.asarray(grads[k], np_dtype)
        golden["%s/losses" % tag] = np.asarray(losses, np_dtype)
        # The parameters after the steps, and the buffers (batch norm's
        # running statistics), which the train step updates too.
        for k in final:
            golden["%s/step%d/%s" % (tag, NUM_STEPS, k)] = final[k]
        summary[tag] = dict(loss=float(loss), losses=losses, norms=norms)

    # How far JAX's own float32 is from its float64: the floor under any
    # float32 comparison. Kiln's float32 rounding is independent of JAX's, so
    # Kiln-vs-golden errors are up to about twice these; the asserts keep a
    # margin of 4 under the tests' bounds (1e-5 at step 0, 1e-4 after the
    # steps). The weak spot is a gradient that is zero in exact arithmetic
    # but rounding noise in float32 -- the key bias (b_qkv[D:2D]): softmax
    # ignores a per-row constant q.b_k, so it gets no gradient -- which Adam
    # turns into steps of about lr * noise / eps.
    agreement = {"grad": {}, "step%d" % NUM_STEPS: {}}
    for k in weights:
        agreement["grad"][k] = relative_error(golden["f32/grad/" + k],
                                              golden["f64/grad/" + k])
    for k in (key.split("/", 2)[2] for key in golden
              if key.startswith("f64/step%d/" % NUM_STEPS)):
        agreement["step%d" % NUM_STEPS][k] = relative_error(
            golden["f32/step%d/%s" % (NUM_STEPS, k)],
            golden["f64/step%d/%s" % (NUM_STEPS, k)])
    worst_grad = max(agreement["grad"].values())
    worst_step = max(agreement["step%d" % NUM_STEPS].values())
    print("%s: loss %.17g; JAX f32 vs f64: gradients <= %.2e, "
          "after %d steps <= %.2e" % (name, summary["f64"]["loss"],
                                       worst_grad, NUM_STEPS, worst_step))
    assert worst_grad < 2.5e-6 and worst_step < 2.5e-5, "fragile goldens"

    golden_path = os.path.join(HERE, name + ".golden.safetensors")
    write_safetensors(golden_path, golden)
    back = read_safetensors(golden_path)
    assert all(np.array_equal(back[k], v) for k, v in golden.items())

    opt = dict(spec["opt"])
    opt["betas"] = list(opt["betas"])
    with open(os.path.join(HERE, name + ".golden.json"), "w") as f:
        json.dump({
            "model": name,
            "framework": "jax %s (jaxlib %s), numpy %s, python %s" % (
                jax.__version__, importlib.metadata.version("jaxlib"),
                np.__version__, platform.python_version()),
            "seed": SEED,
            "steps": NUM_STEPS,
            "optimizer": opt,
            "weight_decay_applies_to": "parameters of rank >= 2",
            "loss_f64": summary["f64"]["loss"],
            "loss_f32": summary["f32"]["loss"],
            "losses_f64": summary["f64"]["losses"],
            "losses_f32": summary["f32"]["losses"],
            "grad_norms_f64": summary["f64"]["norms"],
            "jax_f32_vs_f64_relative_error": agreement,
        }, f, indent=1)
        f.write("\n")


def main():
    # One generator per model, so that each model's draws do not depend on
    # the others.
    for index, (name, spec) in enumerate(MODELS.items()):
        make(name, spec, np.random.default_rng([SEED, index]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
