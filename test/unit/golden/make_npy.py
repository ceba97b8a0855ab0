#!/usr/bin/env python3
"""Writes the .npy files that NpyTest.cpp reads, with NumPy's own writer.

Run from this directory: python3 make_npy.py (NumPy 2.x). The values are
simple closed forms that the test recomputes: element i of each array is
  f4/f8: i * 0.5 - 1,  i4/i8: i * 3 - 7,  u1: i * 17 % 256,  u2: i * 4099,
  b1: i % 3 == 0.
"""
import numpy as np
from numpy.lib import format as npformat


def values(dtype, count):
    i = np.arange(count)
    if dtype in ("<f4", "<f8"):
        return (i * 0.5 - 1).astype(dtype)
    if dtype in ("<i4", "<i8"):
        return (i * 3 - 7).astype(dtype)
    if dtype == "|u1":
        return (i * 17 % 256).astype(dtype)
    if dtype == "<u2":
        return (i * 4099).astype(dtype)
    return i % 3 == 0


def save(name, array, version=None):
    with open(f"npy/{name}.npy", "wb") as f:
        npformat.write_array(f, array, version=version, allow_pickle=False)


for dtype, tag in [("<f4", "f4"), ("<f8", "f8"), ("<i4", "i4"),
                   ("<i8", "i8"), ("|u1", "u1"), ("<u2", "u2"),
                   ("|b1", "b1")]:
    save(f"{tag}_2x3", values(dtype, 6).reshape(2, 3))
save("f4_scalar", np.array(2.5, dtype="<f4"))
save("i8_len5", values("<i8", 5))
save("f8_2x2x2_v2", values("<f8", 8).reshape(2, 2, 2), version=(2, 0))
save("f4_3_v3", values("<f4", 3), version=(3, 0))
save("f4_fortran", np.asfortranarray(values("<f4", 6).reshape(2, 3)))
save("f4_bigendian", values("<f4", 4).astype(">f4"))
save("c8_complex", np.zeros(2, dtype="<c8"))
