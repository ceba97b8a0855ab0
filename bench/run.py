#!/usr/bin/env python3
"""Kiln against its peers on this machine, in one run: bench/run.py.

For each model it trains the same model, from the same initial weights, on
the same batch, with Kiln (`kiln train`, once per GEMM library: oneDNN, and
OpenBLAS with OPENBLAS_CORETYPE unset and forced to its best core for this
CPU: SkylakeX with AVX-512, else Haswell), with JAX/XLA
(bench/peers/jax_models.py, f32, jax.jit) and with PyTorch, eager and under
torch.compile (bench/peers/torch_models.py, when torch is installed), and
measures, interleaved (Kiln's configurations and the peers take turns,
round after round):

  step      the median training step of each run after its warm-up steps;
            ratios are medians of the per-round ratios (peer / kiln > 1:
            Kiln faster)
  compile   cold: `kiln compile MODEL --train --cpu=native` into a fresh
            directory (the compile `kiln train` does on a cache miss; the
            whole process, its shared libraries in the page cache) vs
            jax.jit(step).lower(...).compile() with JAX's compilation cache
            off, layers unrolled (and, for the GPTs, with lax.scan), and
            torch.compile's first step with a fresh TORCHINDUCTOR_CACHE_DIR
  memory    Kiln's peak_bytes (`kiln compile --stats`: persistent buffers +
            arena) vs XLA's memory_analysis() (temp + arguments + outputs -
            aliased) and PyTorch eager's peak RSS growth
  kernels   Kiln's kernels and library calls per train step vs the fusions
            and custom calls of XLA's optimized HLO
  loss      both sides' loss at every step from the same start (a
            correctness check: the largest relative difference)

It prints a table and writes bench/results/latest.md with the machine, the
libraries and their versions, the XLA flags, the thread counts and which
GEMM kernels each side ran.

Modes: --quick (the default; the MLP and examples/gpt.kiln, 5 rounds; 3
minutes on 2 cores without PyTorch, torch.compile's compiles add about a
minute a round; f32) and --full (adds the 12-layer GPT and GPT-2 small,
bench/models/gpt2-small.kiln, longer runs, and bf16 rows for the MLP and
the GPT example, bench/bf16_rows.py; about an hour here, 25 minutes of it
GPT-2 small's steps of tens of seconds, of which it times one per run).
f32 on both sides unless a row says bf16.

Needs: a built tree (build/bin/kiln), python3 with numpy and jax
(python3 -m pip install jax), and for the PyTorch rows torch (python3 -m
pip install torch; without it those rows say "not installed"). Hold the build lock while it runs
(flock /tmp/kiln-build.lock bench/run.py): a build beside it makes every
figure meaningless.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "oracle"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bf16_rows  # noqa: E402

QUICK = dict(rounds=5, models=["mlp", "gpt"],
             steps={"mlp": 300, "gpt": 40, "gpt12": 25, "gpt2-small": 2},
             skip={"mlp": 10, "gpt": 10, "gpt12": 5, "gpt2-small": 1},
             bf16={})
# bf16 rows (bench/bf16_rows.py): steps and warm-up steps per run, for the
# models that have them. PyTorch's bf16 step is slow on a CPU without
# AVX512-BF16 (seconds for the GPT example), so the GPTs run shorter.
FULL = dict(rounds=5, models=["mlp", "gpt", "gpt12", "gpt2-small"],
            steps={"mlp": 600, "gpt": 80, "gpt12": 40, "gpt2-small": 2},
            skip={"mlp": 10, "gpt": 10, "gpt12": 5, "gpt2-small": 1},
            bf16={"mlp": (300, 10), "gpt": (20, 5)})
MODEL_FILES = {"mlp": "examples/mlp.kiln", "gpt": "examples/gpt.kiln",
               "gpt12": "bench/models/gpt12.kiln",
               "gpt2-small": "bench/models/gpt2-small.kiln"}
# GPT-2 small's step takes tens of seconds here: only Kiln's default
# library runs it (the libraries are compared on the smaller models), and
# torch.compile (minutes of compiling per round) is left to the others.
KILN_CONFIGS_OF = {"gpt2-small": 1}
TORCH_COMPILE_SKIPPED = {"gpt2-small"}

# Kiln's configurations: the name, then the environment changes (None
# removes the variable). The first is the one every ratio is taken against.
# The third forces OpenBLAS's best core for this CPU: SkylakeX where it has
# AVX-512 (the case its table of CPU models misses on Sapphire Rapids),
# else Haswell (forcing SkylakeX on an AVX2-only CPU dies of SIGILL).
FORCED_CORETYPE = ("SkylakeX" if "avx512f" in open("/proc/cpuinfo").read()
                   else "Haswell")
KILN_CONFIGS = [
    ("kiln onednn", {"KILN_GEMM": "onednn", "OPENBLAS_CORETYPE": None}),
    ("kiln openblas", {"KILN_GEMM": "openblas", "OPENBLAS_CORETYPE": None}),
    ("kiln openblas forced", {"KILN_GEMM": "openblas",
                              "OPENBLAS_CORETYPE": FORCED_CORETYPE}),
]


def log(message):
    print(message, flush=True)


def run(command, env_changes=None, **kwargs):
    env = dict(os.environ)
    for key, value in (env_changes or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run(command, env=env, check=True, text=True,
                          capture_output=True, **kwargs)


# --- The model file's settings ------------------------------------------------

def parse_model(path):
    """The dims, the train block's optimizer and schedule, the MLP's label
    smoothing: what the JAX peer needs to build the same step."""
    text = open(os.path.join(ROOT, path)).read()
    code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    dims = {}
    for line in re.findall(r"^\s*dim\s+(.*)$", code, re.M):
        dims.update({k: int(v) for k, v in re.findall(r"(\w+)\s*=\s*(\d+)", line)})
    optimizer = re.search(r"optimizer\s*=\s*adamw\((.*)\)", code)
    if not optimizer:
        raise SystemExit(f"{path}: the benchmark's peers implement adamw only")
    args = optimizer.group(1)

    def number(name, default):
        found = re.search(name + r"\s*=\s*([-+0-9.eE]+)", args)
        return float(found.group(1)) if found else default
    betas = re.search(r"betas\s*=\s*\(\s*([0-9.eE-]+)\s*,\s*([0-9.eE-]+)\s*\)", args)
    if re.search(r"decay_all", args):
        raise SystemExit(f"{path}: decay_all is not implemented by the peers")
    schedule = re.search(r"schedule\s*=\s*(\w+)(?:\((.*)\))?", code)
    kind, schedule_args = (schedule.group(1), schedule.group(2) or "") \
        if schedule else ("constant", "")
    warmup = re.search(r"warmup\s*=\s*(\d+)", schedule_args)
    final = re.search(r"final\s*=\s*([0-9.eE-]+)", schedule_args)
    steps = re.search(r"^\s*steps\s*=\s*(\d+)", code, re.M)
    smoothing = re.search(r"label_smoothing\s*=\s*([0-9.eE-]+)", code)
    config = dict(
        lr=number("lr", None), eps=number("eps", 1e-8),
        betas=[float(betas.group(1)), float(betas.group(2))] if betas
        else [0.9, 0.999],
        weight_decay=number("weight_decay", 0.0), clip=number("clip", 0.0),
        schedule=kind, warmup=int(warmup.group(1)) if warmup else 0,
        final=float(final.group(1)) if final else 0.0,
        total=int(steps.group(1)) if steps else 0,
        label_smoothing=float(smoothing.group(1)) if smoothing else 0.0)
    if "H" in dims:
        config.update(kind="gpt", heads=dims["H"], layers=dims["L"])
    else:
        config.update(kind="mlp")
    return dims, config


# --- Weights and the batch ----------------------------------------------------

def make_inputs(name, dims, config, directory):
    """Initial weights (Kiln's names) and one batch of real data, written
    where both sides read them."""
    import make_goldens as oracle
    rng = np.random.default_rng(20261201)
    os.makedirs(directory, exist_ok=True)
    if config["kind"] == "mlp":
        weights, _ = oracle.mlp_setup(rng)
        x = np.load(os.path.join(ROOT, "examples/data/digits/train_x.npy"))
        y = np.load(os.path.join(ROOT, "examples/data/digits/train_y.npy"))
        batch = {"x": x[:dims["B"]], "y": y[:dims["B"]].astype(np.int32)}
    else:
        oracle.GPT_DIMS = {k: dims[k] for k in ("B", "T", "V", "D", "H", "L")}
        weights, _ = oracle.gpt_setup(rng)
        text = np.frombuffer(open(os.path.join(
            ROOT, "examples/data/text/train.txt"), "rb").read(), np.uint8)
        b, t = dims["B"], dims["T"]
        starts = rng.integers(0, len(text) - t - 1, b)
        windows = np.stack([text[s:s + t + 1] for s in starts]).astype(np.int32)
        batch = {"tokens": windows[:, :t].copy(), "targets": windows[:, 1:].copy()}
    weights_path = os.path.join(directory, "weights.safetensors")
    oracle.write_safetensors(weights_path, weights)
    for key, value in batch.items():
        np.save(os.path.join(directory, key + ".npy"), value)
    return weights_path, sorted(batch)


# --- One measurement of each side ---------------------------------------------

def kiln_train(kiln, model, weights, data_dir, names, steps, env, out,
               extra=()):
    metrics = out + ".jsonl"
    if os.path.exists(metrics):
        os.remove(metrics)
    command = [kiln, "train", os.path.join(ROOT, model), "--init-from", weights,
               "--steps", str(steps), "--threads", str(os.cpu_count()),
               "--metrics", metrics, "--eval-every", str(steps + 1)]
    for name in names:
        command += ["--data", f"{name}={os.path.join(data_dir, name + '.npy')}"]
    command += list(extra)
    result = run(command, env)
    header = "\n".join(line for line in result.stderr.splitlines()
                       if "GEMMs:" in line or "warning" in line)
    records = [json.loads(line) for line in open(metrics) if line.strip()]
    step_ms = [r["step_ms"] for r in records if "step_ms" in r]
    losses = [r["loss"] for r in records if "loss" in r and "step" in r]
    return dict(step_ms=step_ms, losses=losses, header=header)


def kiln_compile(kiln, model, env):
    directory = tempfile.mkdtemp(prefix="kiln-bench-compile-")
    cache = tempfile.mkdtemp(prefix="kiln-bench-cache-")
    # The timed compile is a process of its own, start to exit, while JAX's
    # is timed inside a process that has imported jax: `kiln --version`
    # first brings kiln's shared libraries (LLVM's and MLIR's, 250 MB) back
    # into the page cache, which the training runs before it may have
    # emptied (reading them from disk cost a compile 0.25-0.5 s here).
    run([kiln, "--version"])
    try:
        start = time.perf_counter()
        run([kiln, "compile", os.path.join(ROOT, model), "--train",
             "--cpu=native", "--target=cpu", "-o",
             os.path.join(directory, "out.kiln.d")],
            dict(env, KILN_CACHE_DIR=cache))
        return time.perf_counter() - start
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)


def kiln_stats(kiln, model):
    return json.loads(run([kiln, "compile", os.path.join(ROOT, model),
                           "--stats"]).stdout)


def jax_train(config, weights, data_dir, steps, scan=False, bf16=False):
    command = [sys.executable, os.path.join(ROOT, "bench/peers/jax_models.py"),
               json.dumps(config), weights, data_dir, str(steps)]
    if scan:
        command.append("--scan")
    if bf16:
        command.append("--bf16")
    # JAX's persistent compilation cache stays off: a cold compile each time.
    result = run(command, {"JAX_ENABLE_COMPILATION_CACHE": "false",
                           "JAX_PLATFORMS": "cpu"})
    return json.loads(result.stdout.strip().splitlines()[-1])


def torch_train(config, weights, data_dir, steps, compiled, bf16=False):
    command = [sys.executable, os.path.join(ROOT, "bench/peers/torch_models.py"),
               json.dumps(config), weights, data_dir, str(steps)]
    if compiled:
        command.append("--compile")
    if bf16:
        command.append("--bf16")
    cache = tempfile.mkdtemp(prefix="kiln-bench-inductor-")
    try:
        result = run(command, {"TORCHINDUCTOR_CACHE_DIR": cache})
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def torch_version():
    try:
        import torch
        return torch.__version__
    except ImportError:
        return None


# --- Figures ------------------------------------------------------------------

def median_step(step_ms, skip):
    kept = step_ms[skip:] if len(step_ms) > skip else step_ms[-1:]
    return statistics.median(kept)


def max_relative_difference(a, b):
    n = min(len(a), len(b))
    if n == 0:
        return float("nan")
    return max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(a[:n], b[:n]))


def machine_description():
    model = "?"
    flags = set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name") and model == "?":
            model = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
    wanted = ["avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"]
    return model, [f for f in wanted if f in flags]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="the default")
    mode.add_argument("--full", action="store_true")
    parser.add_argument("--kiln", default=os.path.join(ROOT, "build/bin/kiln"))
    parser.add_argument("--rounds", type=int, help="override the mode's rounds")
    parser.add_argument("--models", help="comma-separated subset of the mode's")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    args = parser.parse_args()
    settings = dict(FULL if args.full else QUICK)
    if args.rounds:
        settings["rounds"] = args.rounds
    if args.models:
        settings["models"] = args.models.split(",")
    if settings["rounds"] < 5:
        log("warning: fewer than 5 rounds: the medians are not robust to "
            "this machine's swings")
    try:
        import jax
    except ImportError:
        raise SystemExit("the peer needs jax: python3 -m pip install jax")
    has_torch = torch_version() is not None
    if not has_torch:
        log("torch is not installed: no PyTorch rows (python3 -m pip install "
            "torch)")
    if not os.access(args.kiln, os.X_OK):
        raise SystemExit(f"{args.kiln} is missing: build first (scripts/build.sh)")

    work = os.path.join(ROOT, "build", "bench", "run")
    os.makedirs(work, exist_ok=True)
    started = time.time()
    cpu_model, cpu_flags = machine_description()
    log(f"== bench/run.py ({'full' if args.full else 'quick'}): "
        f"{settings['rounds']} rounds, models {', '.join(settings['models'])}")
    log(f"   {os.cpu_count()} cores ({cpu_model}; {' '.join(cpu_flags)}), "
        f"jax {jax.__version__}, torch {torch_version() or 'not installed'}")

    ctx = types.SimpleNamespace(
        log=log, kiln=args.kiln, kiln_train=kiln_train, jax_train=jax_train,
        torch_train=torch_train, median_step=median_step,
        max_relative_difference=max_relative_difference,
        out=lambda label: os.path.join(work, label.replace(" ", "-")))
    results = {}
    for name in settings["models"]:
        model = MODEL_FILES[name]
        dims, config = parse_model(model)
        steps = settings["steps"][name]
        # kiln train --steps N past the warmup spans the schedule over N
        # steps; within it, over the train block's (see TrainCommand).
        schedule_total = config["total"]
        if steps > config["warmup"]:
            config["total"] = steps
        data_dir = os.path.join(work, name)
        weights, names = make_inputs(name, dims, config, data_dir)
        skip = settings["skip"][name]
        configs = KILN_CONFIGS[:KILN_CONFIGS_OF.get(name, len(KILN_CONFIGS))]
        stats = kiln_stats(args.kiln, model)
        rows = {label: [] for label, _ in configs}
        rows["jax"] = []
        compiles = {"kiln": [], "jax": [], "jax scan": [], "torch.compile": []}
        peers = ["torch eager", "torch.compile"] if has_torch else []
        if name in TORCH_COMPILE_SKIPPED:
            peers = peers[:1]
        for peer_name in peers:
            rows[peer_name] = []
        first = {}
        log(f"\n== {name} ({model}): {steps} steps per run, median after "
            f"{skip}")
        # (The first run compiles into the artifact cache; step_ms times
        # steps only.)
        for round_index in range(settings["rounds"]):
            line = []
            for label, env in configs:
                measured = kiln_train(args.kiln, model, weights, data_dir, names,
                                      steps, env, os.path.join(work, name))
                rows[label].append(median_step(measured["step_ms"], skip))
                first.setdefault(label, measured)
                line.append(f"{label} {rows[label][-1]:.2f}")
            peer = jax_train(config, weights, data_dir, steps)
            rows["jax"].append(median_step(peer["step_ms"], skip))
            compiles["jax"].append(peer["compile_s"])
            first.setdefault("jax", peer)
            compiles["kiln"].append(kiln_compile(args.kiln, model,
                                                 KILN_CONFIGS[0][1]))
            if config["kind"] == "gpt":
                compiles["jax scan"].append(
                    jax_train(config, weights, data_dir, 0, scan=True)["compile_s"])
            line.append(f"jax {rows['jax'][-1]:.2f}")
            for peer_name in peers:
                measured = torch_train(config, weights, data_dir, steps,
                                       peer_name == "torch.compile")
                rows[peer_name].append(median_step(measured["step_ms"], skip))
                first.setdefault(peer_name, measured)
                if peer_name == "torch.compile":
                    compiles["torch.compile"].append(measured["first_step_s"])
                line.append(f"{peer_name} {rows[peer_name][-1]:.2f}")
            log(f"   round {round_index + 1}: step ms  " + ", ".join(line) +
                f";  compile s kiln {compiles['kiln'][-1]:.2f} jax "
                f"{compiles['jax'][-1]:.2f}")
        base = rows[KILN_CONFIGS[0][0]]
        ratios = {label: statistics.median(a / b for a, b in zip(values, base))
                  for label, values in rows.items()}
        if name in settings["bf16"]:
            bf16_steps, bf16_skip = settings["bf16"][name]
            bf16_config = dict(config, total=bf16_steps
                               if bf16_steps > config["warmup"]
                               else schedule_total)
            bf16_result = bf16_rows.measure(
                ctx, name, model, bf16_config, weights, data_dir, names,
                bf16_steps, bf16_skip, settings["rounds"], has_torch,
                KILN_CONFIGS[0][1])
        results[name] = dict(
            model=model, dims=dims, steps=steps, skip=skip, rows=rows,
            ratios=ratios,
            compiles=compiles,
            compile_ratio=statistics.median(
                j / k for j, k in zip(compiles["jax"], compiles["kiln"])),
            stats=stats, peer=first["jax"],
            headers={label: first[label]["header"] for label, _ in configs},
            loss_difference={
                peer_name: max_relative_difference(
                    first[KILN_CONFIGS[0][0]]["losses"], first[peer_name]["losses"])
                for peer_name in ["jax"] + peers},
            torch_rss=first["torch eager"]["peak_rss_growth"]
            if "torch eager" in first else None,
            torch_config=(f"{first['torch eager']['threads']} threads "
                          f"(torch.get_num_threads()), the optimizer eager; "
                          f"torch.compile compiles the loss (Inductor)")
            if "torch eager" in first else None,
            final_loss={label: first[label]["losses"][-1] for label in first})
        if name in settings["bf16"]:
            results[name]["bf16"] = bf16_result

    elapsed = time.time() - started
    report = render(results, settings, args, cpu_model, cpu_flags, elapsed,
                    jax.__version__)
    print("\n" + report)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "latest.md"), "w") as out:
        out.write(report)
    with open(os.path.join(work, "latest.json"), "w") as out:
        json.dump(results, out, indent=1)
    log(f"wrote {os.path.relpath(os.path.join(args.out, 'latest.md'), ROOT)} "
        f"({elapsed / 60:.1f} minutes)")


def render(results, settings, args, cpu_model, cpu_flags, elapsed, jax_version):
    median = statistics.median

    def fmt_bytes(n):
        return "-" if n is None else f"{n / 2**20:.1f} MiB"

    def ms(value):
        return f"{value:.3f}" if value < 1 else f"{value:.1f}"

    def row(r, label, ratio=True):
        if label not in r["rows"]:
            return "-"
        text = ms(median(r["rows"][label]))
        if ratio and label != "kiln onednn":
            text += f" (**{r['ratios'][label]:.2f}**)"
        return text

    def seconds(values):
        return f"{median(values):.2f} s" if values else "-"

    def ratio_of(values, base):
        if not values:
            return "-"
        return f"**{median(a / b for a, b in zip(values, base)):.2f}**"

    torch_text = torch_version() or "not installed"
    lines = [
        "# Kiln against JAX/XLA and PyTorch on the CPU (bench/run.py)", "",
        f"{datetime.date.today().isoformat()}, "
        f"{'full' if args.full else 'quick'} mode, {settings['rounds']} "
        f"interleaved rounds, {elapsed / 60:.1f} minutes. "
        f"{os.cpu_count()} cores: {cpu_model} ({' '.join(cpu_flags)}); "
        f"{platform.platform()}; jax {jax_version}, torch {torch_text}.", "",
        "## Training step", "",
        "Milliseconds: the median step of each run after its first few (listed "
        "below), then the median over rounds. In parentheses, the median of "
        "the per-round ratios to `kiln onednn` (> 1: slower than Kiln with "
        "oneDNN). f32 everywhere; every side uses all cores.", "",
        "| model | kiln onednn | kiln openblas "
        f"| kiln openblas {FORCED_CORETYPE} "
        "| jax | torch eager | torch.compile |",
        "|" + "---|" * 7,
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {row(r, 'kiln onednn')} | {row(r, 'kiln openblas')} "
            f"| {row(r, 'kiln openblas forced')} | {row(r, 'jax')} "
            f"| {row(r, 'torch eager')} | {row(r, 'torch.compile')} |")
    lines += [
        "", "## Compile, memory, kernels, loss", "",
        "Compile times are cold (medians over rounds; in bold, the median of "
        "the per-round ratios peer / Kiln). Losses: the largest relative "
        "difference between Kiln's and each peer's loss over the steps of a "
        "run from the same start.", "",
        "| model | kiln compile | jax.jit compile (scan) | jax / kiln "
        "| torch.compile 1st step | torch.compile / kiln | peak kiln "
        "| XLA memory | torch RSS growth | kernels + GEMM calls kiln "
        "| XLA fusions | loss diff jax, torch |",
        "|" + "---|" * 12,
    ]
    for name, r in results.items():
        c = r["compiles"]
        stats, peer = r["stats"], r["peer"]
        differences = ", ".join(f"{v:.1e}" for k, v in r["loss_difference"].items()
                                if k in ("jax", "torch eager"))
        scan = f" ({median(c['jax scan']):.2f})" if c["jax scan"] else ""
        lines.append(
            f"| {name} | {seconds(c['kiln'])} | {seconds(c['jax'])}{scan} "
            f"| {ratio_of(c['jax'], c['kiln'])} | {seconds(c['torch.compile'])} "
            f"| {ratio_of(c['torch.compile'], c['kiln'])} "
            f"| {fmt_bytes(stats['peak_bytes'])} | {fmt_bytes(peer['memory'])} "
            f"| {fmt_bytes(r.get('torch_rss'))} "
            f"| {stats['launches']} + {stats['library_calls']} "
            f"| {peer['fusions']} | {differences} |")
    lines += bf16_rows.render(results, ms)
    lines += ["", "## What ran", ""]
    for name, r in results.items():
        lines.append(f"- **{name}** (`{r['model']}`, dims "
                     f"{', '.join(f'{k}={v}' for k, v in r['dims'].items())}; "
                     f"{r['steps']} steps per run, the first {r['skip']} left out "
                     f"of the median, from the same weights on one "
                     f"batch of real data; losses after them: "
                     + ", ".join(f"{k} {v:.4f}" for k, v in r["final_loss"].items())
                     + ")")
        for label, header in r["headers"].items():
            lines.append(f"  - {label}: `{header.strip()}`")
        lines.append(f"  - jax {jax_version}: devices {r['peer']['devices']}, "
                     f"XLA_FLAGS '{r['peer']['xla_flags'] or '(none)'}'; GEMMs: "
                     f"{r['peer'].get('dots', '?')} dot instructions emitted by "
                     f"XLA itself, custom calls in the optimized HLO: "
                     f"{r['peer']['custom_calls'] or 'none'}")
        if r.get("torch_config"):
            lines.append(f"  - torch {torch_text}: {r['torch_config']}")
    lines += [
        "", "Compile times: Kiln's `kiln compile --train --cpu=native` into a "
        "fresh directory and cache, the whole process (after a `kiln "
        "--version` that brings its shared libraries into the page cache); "
        "JAX's `jax.jit(step).lower(...).compile()` "
        "in a fresh process with the persistent compilation cache off (import "
        "and tracing set-up excluded; lowering included); torch.compile's "
        "first step (compiling the loss's forward and backward with Inductor, "
        "then running it) with a fresh TORCHINDUCTOR_CACHE_DIR. Memory: "
        "Kiln's `peak_bytes` (`kiln compile --stats`: persistent buffers + "
        "the arena), XLA's `memory_analysis()` (temp + arguments + outputs - "
        "aliased), PyTorch eager's peak RSS minus its RSS before the weights "
        "were loaded. Kernels: Kiln's generated kernels per train step + its "
        "GEMM library calls; XLA's fusion instructions in the optimized "
        "HLO's entry.",
        "", "Reproduce: `flock /tmp/kiln-build.lock bench/run.py "
        f"{'--full' if args.full else '--quick'}` (needs `python3 -m pip "
        "install jax torch`).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
