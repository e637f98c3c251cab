# SPDX-License-Identifier: GPL-3.0-or-later
"""Handlers whose requests send text, for the Python model exports' tests.

Text: a request sends one string (BYTES of shape [1], which Triton's Python
backend hands over as an array of one); preprocess counts its letters,
vowels, spaces and digits (FP32 [4], what predict takes), predict scores the
counts, and postprocess answers a label (BYTES [1]) and a score (FP32 []).
TextScalar: the same with the string as BYTES of shape [], and a label sent
as bytes and a detail (BYTES) that is a dict, which goes out as its JSON text.
preprocess refuses anything but bytes, as Batchscope's worker hands it
bytes. The text "fail" makes predict raise. Two classes with predict: export
with --class.
"""

import numpy as np


class Text:
    """Scores a text by its letters, vowels, spaces and digits."""

    request_inputs = {"text": ("BYTES", [1])}
    inputs = {"counts": ("FP32", [4])}
    outputs = {"scores": ("FP32", [2])}
    response_outputs = {"label": ("BYTES", [1]), "score": ("FP32", [])}
    max_batch_size = 16

    def __init__(self):
        # Quarters and halves: every score below is exact in float32.
        self.weights = np.array([[0.5, -0.25], [1, 0.5], [-1, 2], [0.25, 0.25]],
                                dtype=np.float32)
        self.batches = []  # the batch sizes predict saw, for the tests

    def preprocess(self, request):
        text = request["text"]
        if not isinstance(text, bytes):
            raise TypeError("text is %s; Batchscope gives preprocess bytes" % type(text).__name__)
        words = text.decode("utf-8")
        if words == "fail":
            counts = [-999, 0, 0, 0]
        else:
            counts = [sum(c.isalpha() for c in words), sum(c in "aeiou" for c in words.lower()),
                      words.count(" "), sum(c.isdigit() for c in words)]
        return {"counts": np.array(counts, dtype=np.float32)}

    def predict(self, inputs):
        counts = inputs["counts"]
        self.batches.append(counts.shape[0])
        if np.any(counts[:, 0] == -999):
            raise ValueError("a row asked predict to fail (counts[0] = -999)")
        return {"scores": counts @ self.weights}

    def postprocess(self, outputs):
        first, second = outputs["scores"]
        return {"label": "first" if first >= second else "second",
                "score": float(max(first, second))}


class TextScalar(Text):
    """Text with a string of shape [] each way, and a detail as JSON."""

    request_inputs = {"text": ("BYTES", [])}
    response_outputs = {"label": ("BYTES", []), "score": ("FP32", []),
                        "detail": ("BYTES", [])}

    def postprocess(self, outputs):
        answer = super().postprocess(outputs)
        answer["label"] = answer["label"].encode("utf-8")
        answer["detail"] = {"scores": [float(s) for s in outputs["scores"]]}
        return answer
