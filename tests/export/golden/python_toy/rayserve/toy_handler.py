# SPDX-License-Identifier: GPL-3.0-or-later
"""Small handlers for the Python model exports' tests (tests/export/python_wrappers.py).

Toy: y = x @ W * scale + bias (FP32 [3]) and the sum of each row of x (FP64 [1]).
Hooked: the same with a preprocess (x doubled) and a postprocess (total plus one).
Both raise in predict when a row's first element is -999, and Toy in its
constructor when scale is not a number. Two classes with predict: export with --class.
"""

import numpy as np


class Toy:
    """y = x @ W * scale + bias, and each row's total."""

    inputs = {"x": ("FP32", [4])}
    outputs = {"y": ("FP32", [3]), "total": ("FP64", [1])}
    max_batch_size = 16

    def __init__(self, scale="1", bias="0"):
        self.scale = np.float32(float(scale))
        self.bias = np.float32(float(bias))
        self.weights = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5) / 4
        self.batches = []  # the batch sizes predict saw, for the tests

    def predict(self, inputs):
        x = inputs["x"]
        self.batches.append(x.shape[0])
        if x.ndim != 2 or x.shape[1] != 4:
            raise ValueError("x has shape %s; expected [batch, 4]" % (list(x.shape),))
        if np.any(x[:, 0] == -999):
            raise ValueError("a row asked predict to fail (x[0] = -999)")
        y = (x @ self.weights) * self.scale + self.bias
        total = x.astype(np.float64).sum(axis=1, keepdims=True)
        return {"y": y.astype(np.float32), "total": total}


class Hooked(Toy):
    """Toy with a preprocess and a postprocess."""

    def preprocess(self, request):
        return {"x": np.asarray(request["x"], dtype=np.float32) * 2}

    def postprocess(self, outputs):
        return {"y": outputs["y"], "total": outputs["total"] + 1}
