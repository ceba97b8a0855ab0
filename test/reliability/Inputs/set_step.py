"""Copies a safetensors checkpoint with its "step" metadata replaced:
set_step.py IN STEP OUT."""
import json
import struct
import sys

source, step, target = sys.argv[1], sys.argv[2], sys.argv[3]
with open(source, "rb") as file:
    data = file.read()
(length,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + length])
header["__metadata__"]["step"] = step
text = json.dumps(header).encode()
text += b" " * ((8 - len(text) % 8) % 8)
with open(target, "wb") as file:
    file.write(struct.pack("<Q", len(text)) + text + data[8 + length:])
