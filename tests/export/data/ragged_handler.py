# SPDX-License-Identifier: GPL-3.0-or-later
"""A handler whose input varies in length, for the Python model exports' tests.

Each position's score is half its token; length counts the tokens that are
not 0, the pad value, so padding changes neither. One class with predict:
exported without --class, the wrappers find it.
"""

import numpy as np


class Ragged:
    """Scores each token; counts the tokens."""

    inputs = {"tokens": ("INT64", [-1])}
    outputs = {"scores": ("FP32", [-1]), "length": ("INT64", [1])}
    max_batch_size = 8

    def __init__(self):
        self.batches = []  # the batch shapes predict saw, for the tests

    def predict(self, inputs):
        tokens = inputs["tokens"]
        self.batches.append(list(tokens.shape))
        scores = tokens.astype(np.float32) * 0.5
        length = (tokens != 0).sum(axis=1, keepdims=True).astype(np.int64)
        return {"scores": scores, "length": length}
