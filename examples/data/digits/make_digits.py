#!/usr/bin/env python3
"""Writes the scikit-learn handwritten digits as Kiln's bundled .npy files.

The 1797 8x8 images of sklearn.datasets.load_digits (a copy of the test part
of the UCI "Optical Recognition of Handwritten Digits" set, BSD-3-Clause via
scikit-learn) are split, stratified by class with a fixed seed, into 1438
training and 359 test samples:

  train_x.npy, test_x.npy  float32 [N, 64]  pixel counts 0..16 divided by 16
  train_y.npy, test_y.npy  int32   [N]      the digit, 0..9

Rerun (see README.md for the versions that produced the committed files):
  python3 -m pip install scikit-learn
  python3 examples/data/digits/make_digits.py
"""

import os

import numpy as np
import sklearn
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SPLIT_SEED = 0
TEST_SIZE = 359


def main():
    out_dir = os.path.dirname(os.path.abspath(__file__))
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    assert x.shape == (1797, 64) and y.shape == (1797,)
    assert x.min() >= 0.0 and x.max() <= 1.0
    train_x, test_x, train_y, test_y = train_test_split(
        x, y, test_size=TEST_SIZE, stratify=y, random_state=SPLIT_SEED)
    arrays = {"train_x": train_x, "train_y": train_y,
              "test_x": test_x, "test_y": test_y}
    for name, array in arrays.items():
        # C order and little-endian dtypes, as Kiln's .npy reader requires.
        np.save(os.path.join(out_dir, name + ".npy"),
                np.ascontiguousarray(array))
        print(f"{name}.npy {array.dtype} {list(array.shape)}")
    print(f"scikit-learn {sklearn.__version__}, numpy {np.__version__}")
    print("train class counts", np.bincount(train_y).tolist())
    print("test class counts ", np.bincount(test_y).tolist())


if __name__ == "__main__":
    main()
