"""Runs a command, waits until its metrics file (--metrics) holds a few steps,
sends signals, and prints the exit status: `interrupt.py METRICS SIGNALS... --
COMMAND...`, SIGNALS like INT, TERM, HUP.

Two signals arrive together, whatever the command is doing: the command is
stopped (SIGSTOP, waited for), both are sent, and SIGCONT lets it take them
on resuming. They must differ, since a signal sent while the same one is
pending merges with it."""
import os
import signal
import subprocess
import sys
import time

split = sys.argv.index("--")
metrics, names, command = sys.argv[1], sys.argv[2:split], sys.argv[split + 1:]
if len(set(names)) != len(names):
    sys.exit(f"the signals must differ: {' '.join(names)}")
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
signals = [getattr(signal, "SIG" + name) for name in names]
if len(signals) == 1:
    process.send_signal(signals[0])
else:
    process.send_signal(signal.SIGSTOP)
    # Returns once every thread of the command has stopped.
    _, status = os.waitpid(process.pid, os.WUNTRACED)
    if not os.WIFSTOPPED(status):
        sys.exit(f"the command ended instead of stopping: {status}")
    for number in signals:
        process.send_signal(number)
    process.send_signal(signal.SIGCONT)
print(f"exit {process.wait(timeout=120)}", flush=True)
