# SPDX-License-Identifier: GPL-3.0-or-later
"""A sentiment scorer that tokenizes text in preprocess.

preprocess splits each request's UTF-8 text into lower-case words and maps
them to token ids (0 pads, 1 stands for a word not in the vocabulary);
the batch's token rows differ in length and reach predict padded with 0 to
the longest. predict is a bag of words with one weight per word, where
"not", "never" and "no" turn the next word's weight round; postprocess
names each request's sentiment and gives the probability that it is
positive.
    batchscope serve --model models/python/sentiment.py
"""

import re

import numpy as np

POSITIVE = ("good great excellent love loved lovely wonderful best happy enjoy enjoyed fast "
            "pleasant fine nice perfect amazing helpful clean fresh friendly recommend").split()
NEGATIVE = ("bad awful terrible hate hated worst poor slow sad boring broken dirty rude "
            "disappointing horrible wrong waste ugly cold late").split()
NEGATORS = ("not never no").split()
WORD = re.compile(r"[a-z']+")


class Sentiment:
    """Says whether a text is positive or negative (a bag of words, tokenized in preprocess)."""

    request_inputs = {"text": ("BYTES", [])}
    inputs = {"tokens": ("INT64", [-1])}
    outputs = {"logits": ("FP32", [2])}
    response_outputs = {"sentiment": ("BYTES", []), "positive": ("FP32", [])}
    max_batch_size = 64
    examples = [{"text": t} for t in (
        "The food was great and the staff friendly.",
        "Not good: the room was dirty and the service slow.",
        "I would recommend it, never a boring moment.",
        "Awful. Cold coffee, rude waiter, and we waited an hour for a table that was not clean.",
        "It is a chair.",
    )]

    def __init__(self, max_tokens="256"):
        words = POSITIVE + NEGATIVE + NEGATORS
        self.ids = {w: i + 2 for i, w in enumerate(words)}
        self.weight = np.zeros(len(words) + 2, dtype=np.float32)
        for w in POSITIVE:
            self.weight[self.ids[w]] = 1.0
        for w in NEGATIVE:
            self.weight[self.ids[w]] = -1.0
        self.negators = np.array([self.ids[w] for w in NEGATORS], dtype=np.int64)
        self.max_tokens = int(max_tokens)

    def preprocess(self, request):
        words = WORD.findall(request["text"].decode("utf-8", "replace").lower())
        ids = [self.ids.get(w, 1) for w in words[:self.max_tokens]] or [1]
        return {"tokens": np.array(ids, dtype=np.int64)}

    def predict(self, inputs):
        tokens = inputs["tokens"]
        weights = self.weight[tokens]
        negated = np.isin(tokens, self.negators)
        weights[:, 1:][negated[:, :-1]] *= -1.0
        score = weights.sum(axis=1)
        return {"logits": np.stack([-score, score], axis=1).astype(np.float32)}

    def postprocess(self, outputs):
        negative, positive = outputs["logits"]
        p = float(1.0 / (1.0 + np.exp(negative - positive)))
        label = "positive" if p > 0.5 else "negative" if p < 0.5 else "neutral"
        return {"sentiment": label, "positive": p}
