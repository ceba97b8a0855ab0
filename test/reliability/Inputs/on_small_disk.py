"""Runs a command with a small tmpfs mounted at DIR (a full disk within a few
bytes), then unmounts it whatever happens: on_small_disk.py SIZE DIR --
COMMAND... The command's output is passed through; before unmounting, the
files left on the disk are listed on stdout after a "left:" line; the exit
status is the command's."""
import os
import subprocess
import sys

split = sys.argv.index("--")
size, directory, command = sys.argv[1], sys.argv[2], sys.argv[split + 1:]
os.makedirs(directory, exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                directory], check=True)
try:
    status = subprocess.run(command).returncode
    sys.stdout.flush()
    print("left:", " ".join(sorted(os.listdir(directory))), flush=True)
finally:
    subprocess.run(["umount", directory], check=True)
sys.exit(status)
