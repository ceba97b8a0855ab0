"""Kills `kiln train --save-every 1` with SIGKILL at spread-out moments, N
times, each run resuming from the checkpoint the last one left; checks that
the checkpoint always loads (the next run resumes from its step), and that
after one last run to the end no temporary file remains.
kill_training.py DIR N -- KILN_TRAIN_ARGS..."""
import glob
import json
import os
import random
import re
import signal
import struct
import subprocess
import sys
import time

split = sys.argv.index("--")
directory, count, args = sys.argv[1], int(sys.argv[2]), sys.argv[split + 1:]
checkpoint = os.path.join(directory, "c.safetensors")
metrics = os.path.join(directory, "m.jsonl")
random.seed(20261202)


def saved_step():
    """The step recorded in the checkpoint (it must parse whole)."""
    with open(checkpoint, "rb") as file:
        data = file.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    end = max(entry["data_offsets"][1] for name, entry in header.items()
              if name != "__metadata__")
    if 8 + length + end != len(data):
        sys.exit(f"{checkpoint}: {len(data)} bytes, the header needs "
                 f"{8 + length + end}")
    return int(header["__metadata__"]["step"])


def command(steps, resume):
    line = ["kiln", "train"] + args + ["--steps", str(steps), "--save-every",
                                       "1", "--save", checkpoint,
                                       "--metrics", metrics]
    return line + (["--resume", checkpoint] if resume else [])


kills_mid_save = 0
for i in range(count):
    resume = os.path.exists(checkpoint)
    before = saved_step() if resume else 0
    process = subprocess.Popen(command(10**7, resume), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    # Wait for training to begin (the metrics file), then a random moment.
    deadline = time.monotonic() + 60
    while not os.path.exists(metrics) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(random.uniform(0.05, 0.6))
    process.send_signal(signal.SIGKILL)
    output = process.communicate()[0]
    if resume and f"resumed at step {before} from" not in output:
        sys.exit(f"run {i} did not resume from step {before}:\n{output}")
    if glob.glob(checkpoint + ".tmp.*"):
        kills_mid_save += 1
    after = saved_step()
    if after < before:
        sys.exit(f"run {i}: the checkpoint went back from {before} to {after}")
    os.remove(metrics)

# One last run to the end: it removes what the killed saves left.
last = saved_step()
finished = subprocess.run(command(last + 3, True), capture_output=True,
                          text=True)
if finished.returncode != 0 or f"resumed at step {last} from" not in \
        finished.stderr:
    sys.exit(f"the last run failed:\n{finished.stderr}")
if saved_step() != last + 3:
    sys.exit(f"the last run saved step {saved_step()}, not {last + 3}")
left = [name for name in os.listdir(directory) if ".tmp." in name]
if left:
    sys.exit(f"temporaries left after the last run: {left}")
print(f"{count} runs killed ({kills_mid_save} during a save); the checkpoint "
      f"always loaded and resumed; no temporary left")
