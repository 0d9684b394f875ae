#!/usr/bin/env python3
"""Writes a data folder for the MLP fixture (input: 64 features, labels:
10 classes), 128 samples: the data-parallel test's file data (issue 24).

    dp_data.py OUT_DIR
"""
import os
import sys

import numpy as np


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(5)
    np.save(os.path.join(out, "input.npy"),
            rng.normal(0.0, 1.0, (128, 64)).astype(np.float32))
    np.save(os.path.join(out, "labels.npy"),
            rng.integers(0, 10, 128).astype(np.int64))


if __name__ == "__main__":
    main()
