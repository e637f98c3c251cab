# SPDX-License-Identifier: GPL-3.0-or-later
"""A preprocess that works the processor for about a millisecond a request
(then reads the number sent), and a predict that adds one: a model whose
preprocess costs far more than its batch."""
import time

import numpy as np


class Model:
    request_inputs = {"text": ("BYTES", [])}
    inputs = {"x": ("FP32", [1])}
    outputs = {"y": ("FP32", [1])}
    max_batch_size = 16
    examples = [{"text": str(i).encode()} for i in range(8)]

    def preprocess(self, request):
        until = time.perf_counter() + 0.001
        while time.perf_counter() < until:
            pass
        return {"x": np.array([float(request["text"].decode())], np.float32)}

    def predict(self, inputs):
        return {"y": inputs["x"] + 1}
