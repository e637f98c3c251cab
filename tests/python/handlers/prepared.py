# SPDX-License-Identifier: GPL-3.0-or-later
"""Reads a number from text in preprocess, doubles it in predict, names it in postprocess."""
import ctypes
import json
import os

import numpy as np


class Model:
    request_inputs = {"text": ("BYTES", [])}
    inputs = {"x": ("FP32", [2])}
    outputs = {"y": ("FP32", [2])}
    response_outputs = {"label": ("BYTES", []), "y": ("FP32", [2])}
    max_batch_size = 8

    def preprocess(self, request):
        text = request["text"].decode()
        if text == "raise":
            raise ValueError("cannot read %r" % text)
        if text == "crash":
            ctypes.string_at(0)  # a segfault in native code
        if text == "shape":
            return {"x": np.zeros(3, np.float32)}
        # The second value says which process prepared the request.
        return {"x": np.array([float(text), os.getpid()], np.float32)}

    def predict(self, inputs):
        x = inputs["x"]
        y = np.empty_like(x)
        y[:, 0] = 2 * x[:, 0] + 1
        y[:, 1] = x[:, 1] != np.float32(os.getpid())  # 1: prepared elsewhere
        return {"y": y}

    def postprocess(self, outputs):
        y = outputs["y"]
        if y[0] == 199:  # the request "99"
            raise KeyError("no label for 199")
        return {"label": {"value": float(y[0]), "pool": bool(y[1])}, "y": y}
