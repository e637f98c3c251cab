# SPDX-License-Identifier: GPL-3.0-or-later
# Variable lengths both ways: "tokens" varies, "y" is the tokens times ten
# (as long as the padded batch), and "wide" is as wide as the first value
# asks, to make the region grow.
import numpy as np


class Ragged:
    """Sequences padded to the batch's longest."""

    inputs = {"tokens": ("INT64", [-1])}
    outputs = {"y": ("INT64", [-1]), "wide": ("FP32", [-1])}

    def predict(self, inputs):
        t = inputs["tokens"]
        width = max(1, int(t[0, 0]))
        return {"y": t * 10, "wide": np.ones((t.shape[0], width), dtype=np.float32)}
