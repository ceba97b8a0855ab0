#!/usr/bin/env python3
"""The PyTorch-eager peer of `kiln train examples/gpt.kiln`, for bench/train_cpu.sh.

The same byte-level GPT as examples/gpt.kiln, trained the same way on the same
bundled text, in PyTorch eager mode on the CPU in float32, so that Kiln's step
time and held-out loss can be set against a framework's.

What is "the same" (and where each formula comes from):
  * Model: read from the .kiln file (dims B, T, V, D, H, L; layer_norm eps;
    cross_entropy label_smoothing): token embedding wte [V, D] plus learned
    positions wpe [T, D]; L pre-norm blocks (GPT-2, Radford et al. 2019):
        x = x + (attention(LN1(x) W_qkv + b_qkv)) W_out + b_out
        x = x + GELU(LN2(x) W_fc + b_fc) W_proj + b_proj
    with causal scaled dot-product attention over H heads of D/H features,
    softmax(q k^T / sqrt(D/H) + mask) v (Vaswani et al. 2017; Kiln's
    graph.attention, dialects/Graph/GraphOps.td), GELU in its tanh
    approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks
    and Gimpel 2016; graph.gelu), layer norm with the biased variance
    (Ba et al. 2016; graph.layer_norm), a final layer norm and an output layer
    tied to wte: logits = LN_f(x) wte^T. Loss: mean softmax cross-entropy over
    the B*T positions, label smoothing (1 - s) onehot + s / V if the model
    sets it (graph.cross_entropy; torch's label_smoothing is the same
    formula).
  * Initializers as the .kiln file declares them (normal(0.02) matrices and
    embeddings, zeros biases, ones gains). The draws differ from Kiln's
    (Philox there, torch's generator here): same distributions, not the same
    numbers.
  * Optimizer from the train block: AdamW (Loshchilov and Hutter 2019) as
    torch.optim.AdamW computes it, which graph.adamw_update adopts
    (dialects/Graph/GraphOptimizerOps.td): bias-corrected moments, decoupled
    weight decay p <- p (1 - lr wd), applied to parameters of rank >= 2 only
    (matrices and the two embeddings; not gains or biases), as Kiln does
    unless `decay_all`. Global-norm clipping scales every gradient by
    min(1, clip / (||g|| + 1e-6)) (torch.nn.utils.clip_grad_norm_;
    graph.clip_scale).
  * Schedule (graph.lr_schedule): at step t (1-based), t <= W: lr t / W;
    after it p = (t - W) / (steps - W) and
    cosine: lr (final + (1 - final) (1 + cos(pi p)) / 2) (Loshchilov and
    Hutter 2017); linear: lr (1 - (1 - final) p); constant: lr.
  * Data: each training row is a window of T + 1 bytes of the token file at a
    uniformly random start in [0, n - T) (numpy's PCG64, seeded with
    --batch-seed): the first T feed the model, the last T are the targets.
    Kiln draws its starts from the same range with its own counter-based RNG,
    so the windows are not the same ones. Held-out loss: like `kiln train
    --eval-tokens`, the non-overlapping windows starting at 0, T, 2T, ... of
    the held-out file, in batches of B, as many whole batches as it holds; the
    loss is the mean over them.

Metrics (--metrics) are JSON lines in kiln train's format, so `kiln plot`
draws both runs:
    {"step":N,"loss":X,"lr":X,"step_ms":X,"tokens_per_s":X,"grad_norm":X}
    {"step":N,"eval_loss":X}
step_ms covers what kiln's does: making the batch, forward, backward,
clipping, the optimizer update and reading the loss back; evaluations are
outside it. A summary (--summary, JSON) holds the median step time after the
warm-up steps, the wall and training times, and the held-out losses.

Threads: --threads (default: all cores, os.cpu_count()) goes to
torch.set_num_threads; kiln train uses all cores by default too.

Run (from the repository root; bench/train_cpu.sh runs it for you):
    python3 bench/peers/gpt_torch.py --model examples/gpt.kiln \
        --tokens examples/data/text/train.txt \
        --eval-tokens examples/data/text/valid.txt \
        --metrics torch.jsonl --summary torch.json [--steps N]
"""

import argparse
import json
import math
import os
import re
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


# --------------------------------------------------------------------------
# Reading the hyper-parameters from the .kiln file, so that the peer follows
# the model's train block instead of a copy of it that could drift. Only what
# this peer needs is read; the architecture itself is written below and
# checked against the file's parameter declarations.

def _number(text):
    return float(text) if re.search(r"[.eE]", text) else int(text)


def _call_args(text):
    """`adamw(lr=1e-3, betas=(0.9, 0.95), clip=1.0)` -> ("adamw", {...})."""
    match = re.fullmatch(r"\s*(\w+)\s*(?:\((.*)\))?\s*", text, re.S)
    if not match:
        raise ValueError(f"cannot read '{text}'")
    name, body = match.group(1), match.group(2) or ""
    args = {}
    for key, value in re.findall(r"(\w+)\s*=\s*(\([^)]*\)|[^,()]+)", body):
        value = value.strip()
        if value.startswith("("):
            args[key] = tuple(_number(v.strip())
                              for v in value[1:-1].split(",") if v.strip())
        elif value in ("true", "false"):
            args[key] = value == "true"
        else:
            args[key] = _number(value)
    return name, args


def read_kiln_model(path):
    """Dims, the train block and a few op attributes of a .kiln model."""
    source = open(path, encoding="utf-8").read()
    code = re.sub(r"#[^\n]*", "", source)  # comments out

    dims = {}
    for statement in re.findall(r"\bdim\b([^\n;]*)", code):
        for name, value in re.findall(r"(\w+)\s*=\s*(\d+)", statement):
            dims[name] = int(value)
    for name in ("B", "T", "V", "D", "H", "L"):
        if name not in dims:
            raise ValueError(f"{path}: no literal `dim {name} = ...`")

    train = {}
    block = re.search(r"\btrain\s*\{(.*?)\n\}", code, re.S)
    if block:
        for key, value in re.findall(r"^\s*(\w+)\s*=\s*(.+?)\s*$",
                                     block.group(1), re.M):
            train[key] = value

    # The train block's settings with Kiln's defaults
    # (include/kiln/Dialect/Graph/Transforms/TrainStep.h).
    optimizer, opt = _call_args(train.get("optimizer", "adamw(lr=1e-3)"))
    if optimizer != "adamw":
        raise ValueError(f"{path}: this peer implements adamw, not {optimizer}")
    schedule, sched = _call_args(train.get("schedule", "constant"))
    settings = {
        "lr": float(opt["lr"]),
        "betas": tuple(opt.get("betas", (0.9, 0.999))),
        "eps": float(opt.get("eps", 1e-8)),
        "weight_decay": float(opt.get("weight_decay", 0.0)),
        "decay_all": bool(opt.get("decay_all", False)),
        "clip": float(opt.get("clip", 0.0)),
        "schedule": schedule,
        "warmup": int(sched.get("warmup", 0)),
        "final": float(sched.get("final", 0.0)),
        "steps": int(train.get("steps", 1000)),
        "batch_seed": int(train.get("batch_seed", 0)),
        "eval_every": int(train["eval_every"]) if "eval_every" in train else None,
    }
    for key in ("accumulate", "precision"):
        if key in train and train[key] not in ("1", "fp32", "f32"):
            raise ValueError(f"{path}: `{key} = {train[key]}` is not "
                             "implemented by this peer")

    smoothing = re.search(r"label_smoothing\s*=\s*([0-9.eE+-]+)", code)
    eps = re.findall(r"layer_norm\([^)]*eps\s*=\s*([0-9.eE+-]+)", code)
    return {
        "dims": dims,
        "train": settings,
        "label_smoothing": float(smoothing.group(1)) if smoothing else 0.0,
        "ln_eps": float(eps[0]) if eps else 1e-5,
        "param_names": re.findall(r"\bparam\s+(\w+)", code),
    }


# --------------------------------------------------------------------------
# The model. Weights are stored as the .kiln file declares them ([in, out],
# used as x @ w), under Kiln's names, so a checkpoint maps one to one.

BLOCK_PARAMS = ["ln1_g", "ln1_b", "w_qkv", "b_qkv", "w_out", "b_out",
                "ln2_g", "ln2_b", "w_fc", "b_fc", "w_proj", "b_proj"]


def init_params(dims, generator):
    V, T, D, L = dims["V"], dims["T"], dims["D"], dims["L"]

    def normal(*shape):
        return torch.randn(*shape, generator=generator) * 0.02

    params = {"wte": normal(V, D), "wpe": normal(T, D),
              "lnf_g": torch.ones(D), "lnf_b": torch.zeros(D)}
    for l in range(L):
        shapes = {
            "ln1_g": torch.ones(D), "ln1_b": torch.zeros(D),
            "w_qkv": normal(D, 3 * D), "b_qkv": torch.zeros(3 * D),
            "w_out": normal(D, D), "b_out": torch.zeros(D),
            "ln2_g": torch.ones(D), "ln2_b": torch.zeros(D),
            "w_fc": normal(D, 4 * D), "b_fc": torch.zeros(4 * D),
            "w_proj": normal(4 * D, D), "b_proj": torch.zeros(D),
        }
        for name in BLOCK_PARAMS:
            params[f"block.{l}.{name}"] = shapes[name]
    return {name: p.requires_grad_() for name, p in params.items()}


def forward(params, tokens, dims, ln_eps):
    """Logits [B, T, V] of token ids [B, T]."""
    B, T = tokens.shape
    D, H, L = dims["D"], dims["H"], dims["L"]
    p = params

    def linear(x, w, b):
        # x @ w + b with the bias fused into the GEMM, as nn.Linear does.
        return torch.addmm(b, x.reshape(-1, x.shape[-1]), w).reshape(
            *x.shape[:-1], w.shape[-1])

    def heads(x):  # [B, T, D] -> [B, H, T, D/H]
        return x.view(B, T, H, D // H).transpose(1, 2)

    x = F.embedding(tokens, p["wte"]) + p["wpe"]
    for l in range(L):
        k = f"block.{l}."
        h = F.layer_norm(x, (D,), p[k + "ln1_g"], p[k + "ln1_b"], ln_eps)
        q, kk, v = linear(h, p[k + "w_qkv"], p[k + "b_qkv"]).split(D, dim=-1)
        # The scale defaults to 1/sqrt(D/H), as in graph.attention.
        a = F.scaled_dot_product_attention(heads(q), heads(kk), heads(v),
                                           is_causal=True)
        a = a.transpose(1, 2).reshape(B, T, D)  # merge_heads
        x = x + linear(a, p[k + "w_out"], p[k + "b_out"])
        h = F.layer_norm(x, (D,), p[k + "ln2_g"], p[k + "ln2_b"], ln_eps)
        h = F.gelu(linear(h, p[k + "w_fc"], p[k + "b_fc"]), approximate="tanh")
        x = x + linear(h, p[k + "w_proj"], p[k + "b_proj"])
    x = F.layer_norm(x, (D,), p["lnf_g"], p["lnf_b"], ln_eps)
    return x @ p["wte"].t()  # output layer tied to the embedding


def loss_of(params, tokens, targets, config):
    logits = forward(params, tokens, config["dims"], config["ln_eps"])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           targets.reshape(-1),
                           label_smoothing=config["label_smoothing"])


def learning_rate(step, settings, total):
    """graph.lr_schedule at step t (1-based)."""
    lr, warmup, final = settings["lr"], settings["warmup"], settings["final"]
    if warmup > 0 and step <= warmup:
        return lr * step / warmup
    progress = min(1.0, max(0.0, (step - warmup) / max(1, total - warmup)))
    if settings["schedule"] == "cosine":
        return lr * (final + (1 - final) * (1 + math.cos(math.pi * progress)) / 2)
    if settings["schedule"] == "linear":
        return lr * (1 - (1 - final) * progress)
    return lr


def load_safetensors(path):
    """Every F32 tensor of a .safetensors file, by name. The format
    (github.com/huggingface/safetensors; runtime/include/kiln/Safetensors.h):
    an 8-byte little-endian header length N, N bytes of JSON mapping each name
    to {"dtype", "shape", "data_offsets": [begin, end)} into the data that
    follows, row-major little-endian."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        begin, end = entry["data_offsets"]
        array = np.frombuffer(data[begin:end], dtype="<f4").reshape(entry["shape"])
        tensors[name] = torch.from_numpy(array.copy())
    return tensors


def load_params(params, path):
    """Overwrites `params` with the tensors of the same names in `path` (a
    kiln train checkpoint or weights file)."""
    tensors = load_safetensors(path)
    missing = [n for n in params if n not in tensors]
    if missing:
        sys.exit(f"{path}: no tensor for {', '.join(missing)}")
    with torch.no_grad():
        for name, p in params.items():
            if tuple(tensors[name].shape) != tuple(p.shape):
                sys.exit(f"{path}: {name} is {list(tensors[name].shape)}, "
                         f"the model's is {list(p.shape)}")
            p.copy_(tensors[name])


def make_optimizer(params, settings):
    """AdamW with weight decay on rank >= 2 only, unless decay_all
    (TrainSettings::decays in include/kiln/Dialect/Graph/Transforms/
    TrainStep.h)."""
    def decays(p):
        return settings["decay_all"] or p.dim() >= 2
    return torch.optim.AdamW(
        [{"params": [p for p in params.values() if decays(p)],
          "weight_decay": settings["weight_decay"]},
         {"params": [p for p in params.values() if not decays(p)],
          "weight_decay": 0.0}],
        lr=settings["lr"], betas=settings["betas"], eps=settings["eps"])


def train_step(params, optimizer, tokens, targets, lr, config):
    """One optimizer step; returns the loss before it and the global gradient
    norm before clipping (what kiln train reports as grad_norm)."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss = loss_of(params, tokens, targets, config)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    clip = config["train"]["clip"]
    if clip > 0:
        norm = torch.nn.utils.clip_grad_norm_(params.values(), clip)
    else:
        norm = torch.linalg.vector_norm(
            torch.stack([p.grad.norm() for p in params.values()]))
    optimizer.step()
    return loss.item(), float(norm)


# --------------------------------------------------------------------------
# Data.

def read_tokens(path):
    data = np.fromfile(path, dtype=np.uint8)
    return torch.from_numpy(data.astype(np.int64))


class Windows:
    """Random windows of T + 1 tokens, seeded."""

    def __init__(self, tokens, batch, context, seed):
        self.tokens, self.batch, self.context = tokens, batch, context
        self.rng = np.random.Generator(np.random.PCG64(seed))
        self.offsets = torch.arange(context + 1)

    def next(self):
        starts = self.rng.integers(0, len(self.tokens) - self.context,
                                   size=self.batch)
        rows = self.tokens[torch.from_numpy(starts)[:, None] + self.offsets]
        return rows[:, :-1], rows[:, 1:]


def held_out_batches(tokens, batch, context):
    """Non-overlapping windows at 0, T, 2T, ...: as many whole batches as fit
    (window w needs tokens [wT, wT + T])."""
    count = (len(tokens) - 1) // context // batch
    if count == 0:
        raise ValueError("the held-out file holds no whole batch")
    out = []
    for b in range(count):
        starts = (torch.arange(batch) + b * batch) * context
        rows = tokens[starts[:, None] + torch.arange(context + 1)]
        out.append((rows[:, :-1], rows[:, 1:]))
    return out


@torch.no_grad()
def evaluate(params, batches, config):
    return sum(loss_of(params, x, y, config).item() for x, y in batches) / len(batches)


# --------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="examples/gpt.kiln")
    parser.add_argument("--tokens", required=True)
    parser.add_argument("--eval-tokens")
    parser.add_argument("--steps", type=int,
                        help="optimizer steps (default: the train block's); "
                             "the schedule spans them, as in kiln train")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the initializers")
    parser.add_argument("--batch-seed", type=int,
                        help="seed of the data order (default: the train "
                             "block's batch_seed)")
    parser.add_argument("--eval-every", type=int,
                        help="default: the train block's eval_every, else "
                             "steps / 10 (as kiln train); also at the end")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="torch.set_num_threads (default: all cores)")
    parser.add_argument("--warmup-steps", type=int, default=10,
                        help="steps left out of the median step time")
    parser.add_argument("--init-from",
                        help="initial parameters from a .safetensors file "
                             "with Kiln's names (e.g. a kiln train checkpoint)")
    parser.add_argument("--eval-only", action="store_true",
                        help="print the held-out loss of the initial "
                             "parameters and stop: with --init-from a kiln "
                             "checkpoint, a check that this peer computes "
                             "the same model as Kiln")
    parser.add_argument("--metrics", help="JSON lines, as kiln train writes")
    parser.add_argument("--summary", help="a JSON summary of the run")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()

    config = read_kiln_model(args.model)
    dims, settings = config["dims"], config["train"]
    expected = {"wte", "wpe", "lnf_g", "lnf_b", *BLOCK_PARAMS}
    if set(config["param_names"]) != expected:
        sys.exit(f"{args.model}: its parameters {sorted(config['param_names'])} "
                 "are not the GPT this peer implements")
    steps = args.steps or settings["steps"]
    batch_seed = settings["batch_seed"] if args.batch_seed is None else args.batch_seed
    eval_every = args.eval_every or settings["eval_every"] or max(1, steps // 10)
    if settings["schedule"] != "constant" and steps <= settings["warmup"]:
        sys.exit(f"the {settings['schedule']} schedule needs steps ({steps}) > "
                 f"warmup ({settings['warmup']}), as in kiln")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    params = init_params(dims, generator)
    if args.init_from:
        load_params(params, args.init_from)

    optimizer = make_optimizer(params, settings)

    train = Windows(read_tokens(args.tokens), dims["B"], dims["T"], batch_seed)
    held_out = (held_out_batches(read_tokens(args.eval_tokens), dims["B"], dims["T"])
                if args.eval_tokens else None)
    tokens_per_step = dims["B"] * dims["T"]
    if args.eval_only:
        if not held_out:
            sys.exit("--eval-only needs --eval-tokens")
        print(json.dumps({"eval_loss": evaluate(params, held_out, config)}))
        return

    metrics = open(args.metrics, "w") if args.metrics else None

    def record(obj):
        if metrics:
            metrics.write(json.dumps(obj) + "\n")
            metrics.flush()

    start = time.perf_counter()
    step_ms, evals = [], []
    first_below_2 = None
    train_seconds = 0.0
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        x, y = train.next()
        lr = learning_rate(step, settings, steps)
        loss_value, norm = train_step(params, optimizer, x, y, lr, config)
        ms = (time.perf_counter() - t0) * 1e3
        step_ms.append(ms)
        train_seconds += ms / 1e3
        record({"step": step, "loss": loss_value, "lr": lr, "step_ms": ms,
                "tokens_per_s": tokens_per_step / (ms / 1e3),
                "grad_norm": norm})
        if not math.isfinite(loss_value):
            sys.exit(f"the loss is {loss_value} at step {step}")
        if not args.quiet and (step == 1 or step % max(1, steps // 25) == 0):
            print(f"step {step:6d}/{steps}  loss {loss_value:.4f}  lr {lr:.2e}  "
                  f"{ms:.1f} ms/step", file=sys.stderr)
        if held_out and (step % eval_every == 0 or step == steps):
            value = evaluate(params, held_out, config)
            evals.append({"step": step, "eval_loss": value,
                          "train_seconds": train_seconds})
            record({"step": step, "eval_loss": value})
            if first_below_2 is None and value < 2.0:
                first_below_2 = evals[-1]
            if not args.quiet:
                print(f"eval at step {step}: loss {value:.4f}", file=sys.stderr)
    wall = time.perf_counter() - start

    steady = step_ms[args.warmup_steps:] or step_ms
    summary = {
        "peer": "pytorch-eager",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "steps": steps,
        "median_step_ms": statistics.median(steady),
        "warmup_steps_excluded": len(step_ms) - len(steady),
        "train_seconds": train_seconds,
        "wall_seconds": wall,
        "final_eval_loss": evals[-1]["eval_loss"] if evals else None,
        "first_eval_below_2": first_below_2,
        "evals": evals,
        "settings": settings,
        "dims": dims,
        "label_smoothing": config["label_smoothing"],
    }
    if args.summary:
        with open(args.summary, "w") as out:
            json.dump(summary, out, indent=1)
    print(json.dumps({k: summary[k] for k in
                      ("steps", "median_step_ms", "train_seconds", "wall_seconds",
                       "final_eval_loss", "first_eval_below_2")}))


if __name__ == "__main__":
    main()
