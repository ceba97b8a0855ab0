"""Runs a command, waits until its metrics file (--metrics) holds a few steps,
sends signals, and prints the exit status: `interrupt.py METRICS SIGNALS... --
COMMAND...`, SIGNALS like INT, TERM, HUP (two of them: the second one comes
10 ms after the first)."""
import os
import signal
import subprocess
import sys
import time

split = sys.argv.index("--")
metrics, names, command = sys.argv[1], sys.argv[2:split], sys.argv[split + 1:]
if os.path.exists(metrics):
    os.remove(metrics)
process = subprocess.Popen(command)
deadline = time.monotonic() + 120
while time.monotonic() < deadline and process.poll() is None:
    try:
        with open(metrics) as file:
            if sum(1 for _ in file) >= 5:
                break
    except FileNotFoundError:
        pass
    time.sleep(0.05)
if process.poll() is not None:
    sys.exit(f"the command ended before any signal: {process.returncode}")
for index, name in enumerate(names):
    if index:
        time.sleep(0.01)  # Two signals at once would merge into one.
    process.send_signal(getattr(signal, "SIG" + name))
print(f"exit {process.wait(timeout=120)}", flush=True)
