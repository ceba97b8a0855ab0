"""Kills a `kiln compile -o DIR` at spread-out moments, N times, and checks
after each kill that DIR is whole: identical to BEFORE (the old artifact)
or a complete new one that `kiln inspect` accepts.
kill_compiles.py DIR BEFORE N -- COMMAND..."""
import filecmp
import os
import signal
import subprocess
import sys
import time

split = sys.argv.index("--")
directory, before, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
command = sys.argv[split + 1:]

# How long a whole compile takes, to spread the kills over it.
start = time.monotonic()
subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
duration = time.monotonic() - start
subprocess.run(["rm", "-rf", directory], check=True)
subprocess.run(["cp", "-r", before, directory], check=True)


def same_as_before():
    names = sorted(os.listdir(before))
    if sorted(os.listdir(directory)) != names:
        return False
    match, mismatch, errors = filecmp.cmpfiles(before, directory, names,
                                               shallow=False)
    return not mismatch and not errors


for i in range(count):
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    time.sleep(duration * (i + 0.5) / count)
    process.send_signal(signal.SIGKILL)
    process.wait()
    if same_as_before():
        continue
    inspected = subprocess.run(["kiln", "inspect", directory],
                               capture_output=True, text=True)
    if inspected.returncode != 0:
        sys.exit(f"kill {i}: {directory} is neither the old artifact nor a "
                 f"whole new one: {inspected.stderr}")
    # A new artifact is in place: put the old one back for the next kill.
    subprocess.run(["rm", "-rf", directory], check=True)
    subprocess.run(["cp", "-r", before, directory], check=True)
print(f"{count} compiles killed; the artifact was always whole")
