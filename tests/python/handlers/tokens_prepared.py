# SPDX-License-Identifier: GPL-3.0-or-later
# Tokenizes in preprocess (a token a word, its length), so requests reach
# predict as rows of different lengths; no postprocess: each answer's "y" is
# cut to its own request's length.
import numpy as np


class Tokens:
    request_inputs = {"text": ("BYTES", [])}
    inputs = {"tokens": ("INT64", [-1])}
    outputs = {"y": ("INT64", [-1])}
    max_batch_size = 8

    def preprocess(self, request):
        words = request["text"].decode().split()
        return {"tokens": np.array([len(w) for w in words] or [0], np.int64)}

    def predict(self, inputs):
        return {"y": inputs["tokens"] * 10}
