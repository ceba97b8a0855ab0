#!/usr/bin/env python3
"""Writes reference.safetensors with the reference implementation.

SafetensorsTest reads it and compares every tensor with the closed forms
below, so that Kiln's reader is checked against the format's own writer, not
only against Kiln's. Made with safetensors 0.8.0 and numpy 2.4.6:

  python3 -m pip install safetensors numpy
  python3 test/unit/golden/safetensors/make_safetensors.py

Tensors (i counts elements in row-major order):
  f32     F32  [2, 3]  i * 0.5 - 1
  f64     F64  [4]     i / 3
  f16     F16  [3]     [1.0, -2.5, 65504.0]
  i32     I32  [2, 2]  i * 1000 - 1500
  i64     I64  [2]     [-2**40, 2**40 + 7]
  u8      U8   [5]     [0, 1, 127, 128, 255]
  u16     U16  [3]     [0, 513, 65535]
  bool    BOOL [4]     [True, False, False, True]
  scalar  F32  []      3.25
  empty   F32  [0, 4]  (no elements)
Metadata: {"step": "12", "note": "caf\u00e9 \"quoted\"\\n"}
"""

import os

import numpy as np
from safetensors.numpy import save_file


def main():
    tensors = {
        "f32": (np.arange(6, dtype=np.float32) * 0.5 - 1).reshape(2, 3),
        "f64": np.arange(4, dtype=np.float64) / 3,
        "f16": np.array([1.0, -2.5, 65504.0], dtype=np.float16),
        "i32": (np.arange(4, dtype=np.int32) * 1000 - 1500).reshape(2, 2),
        "i64": np.array([-2**40, 2**40 + 7], dtype=np.int64),
        "u8": np.array([0, 1, 127, 128, 255], dtype=np.uint8),
        "u16": np.array([0, 513, 65535], dtype=np.uint16),
        "bool": np.array([True, False, False, True]),
        "scalar": np.array(3.25, dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
    }
    metadata = {"step": "12", "note": 'caf\u00e9 "quoted"\\n'}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "reference.safetensors")
    save_file(tensors, out, metadata=metadata)


if __name__ == "__main__":
    main()
