"""bench/run.py's bf16 rows: Kiln, JAX and PyTorch training in bf16.

Each side in its own mixed precision, the master weights, gradients and
optimizer state in f32 everywhere:
  kiln bf16    `kiln train --precision bf16` (docs/mixed-precision.md), with
               the default GEMM library
  jax bf16     bench/peers/jax_models.py --bf16: Kiln's policy written in
               JAX (GEMMs and attention on bf16 operands, accumulating in
               f32; layer norm, softmax and cross-entropy in f32)
  torch bf16   bench/peers/torch_models.py --bf16: the loss under
               torch.autocast(cpu, bfloat16), PyTorch's own policy (eager;
               torch.compile is left out: its compiles cost minutes a round)
Interleaved with Kiln's f32 run of the same length, round after round, so
that the table can say what bf16 buys on this CPU.
"""

import statistics

LABELS = ["kiln bf16", "kiln f32", "jax bf16", "torch bf16"]


def measure(ctx, name, model, config, weights, data_dir, names, steps, skip,
            rounds, has_torch, kiln_env):
    """Runs `rounds` interleaved rounds; returns the model's bf16 result."""
    rows = {label: [] for label in LABELS if has_torch or "torch" not in label}
    first = {}
    ctx.log(f"\n== {name} in bf16: {steps} steps per run, median after {skip}")
    for round_index in range(rounds):
        line = []
        for label, precision in (("kiln bf16", "bf16"), ("kiln f32", "fp32")):
            measured = ctx.kiln_train(ctx.kiln, model, weights, data_dir, names,
                                      steps, kiln_env, ctx.out(name + "-" + label),
                                      ["--precision", precision])
            rows[label].append(ctx.median_step(measured["step_ms"], skip))
            first.setdefault(label, measured)
            line.append(f"{label} {rows[label][-1]:.2f}")
        peer = ctx.jax_train(config, weights, data_dir, steps, bf16=True)
        rows["jax bf16"].append(ctx.median_step(peer["step_ms"], skip))
        first.setdefault("jax bf16", peer)
        line.append(f"jax bf16 {rows['jax bf16'][-1]:.2f}")
        if has_torch:
            measured = ctx.torch_train(config, weights, data_dir, steps, False,
                                       bf16=True)
            rows["torch bf16"].append(ctx.median_step(measured["step_ms"], skip))
            first.setdefault("torch bf16", measured)
            line.append(f"torch bf16 {rows['torch bf16'][-1]:.2f}")
        ctx.log(f"   round {round_index + 1}: step ms  " + ", ".join(line))
    base = rows["kiln bf16"]
    return dict(
        steps=steps, skip=skip, rows=rows,
        ratios={label: statistics.median(a / b for a, b in zip(values, base))
                for label, values in rows.items()},
        header=first["kiln bf16"]["header"],
        peer=first["jax bf16"],
        final_loss={label: first[label]["losses"][-1] for label in first},
        loss_difference={
            label: ctx.max_relative_difference(first["kiln bf16"]["losses"],
                                               first[label]["losses"])
            for label in first if label != "kiln bf16"})


def render(results, ms):
    """The bf16 section of latest.md, for the models that have one."""
    measured = {name: r["bf16"] for name, r in results.items() if "bf16" in r}
    if not measured:
        return []
    median = statistics.median

    def cell(r, label):
        if label not in r["rows"]:
            return "-"
        text = ms(median(r["rows"][label]))
        if label != "kiln bf16":
            text += f" (**{r['ratios'][label]:.2f}**)"
        return text

    lines = [
        "", "## Training step, bf16", "",
        "Milliseconds as above; in parentheses, the median of the per-round "
        "ratios to `kiln bf16` (> 1: slower than Kiln in bf16). Each side in "
        "its own mixed precision, master weights and optimizer in f32: Kiln's "
        "`--precision bf16`, its policy written in JAX (bf16 GEMM operands, "
        "f32 accumulation; layer norm, softmax, cross-entropy in f32), and "
        "PyTorch eager under `torch.autocast(cpu, bfloat16)`. `kiln f32` is "
        "Kiln's f32 run of the same length in the same rounds. Loss diff: the "
        "largest relative difference from Kiln's bf16 loss over the steps.",
        "",
        "| model | kiln bf16 | kiln f32 | jax bf16 | torch eager bf16 "
        "| loss diff jax, torch |",
        "|" + "---|" * 6,
    ]
    for name, r in measured.items():
        differences = ", ".join(
            f"{r['loss_difference'][k]:.1e}" for k in ("jax bf16", "torch bf16")
            if k in r["loss_difference"])
        lines.append(
            f"| {name} | {cell(r, 'kiln bf16')} | {cell(r, 'kiln f32')} "
            f"| {cell(r, 'jax bf16')} | {cell(r, 'torch bf16')} "
            f"| {differences} |")
    lines.append("")
    for name, r in measured.items():
        lines.append(
            f"- **{name}** in bf16: {r['steps']} steps per run, the first "
            f"{r['skip']} left out; losses after them: "
            + ", ".join(f"{k} {v:.4f}" for k, v in r["final_loss"].items())
            + f"; kiln: `{r['header'].strip()}`; jax: "
            f"{r['peer'].get('dots', '?')} dot instructions, custom calls: "
            f"{r['peer']['custom_calls'] or 'none'}")
    return lines
