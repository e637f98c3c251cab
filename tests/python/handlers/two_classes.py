# SPDX-License-Identifier: GPL-3.0-or-later
# Two classes with a predict: --class picks one.
import numpy as np


class First:
    inputs = {"x": ("FP32", [2])}
    outputs = {"y": ("FP32", [2])}

    def predict(self, inputs):
        return {"y": inputs["x"] + np.float32(1)}


class Second:
    inputs = {"x": ("FP32", [2])}
    outputs = {"y": ("FP32", [2])}
    max_batch_size = 8

    def predict(self, inputs):
        return {"y": inputs["x"] + np.float32(2)}
