# SPDX-License-Identifier: GPL-3.0-or-later
"""A scikit-learn classifier of iris flowers, from their four measurements.

A logistic regression fitted, as the class is constructed, on the iris data
that scikit-learn ships (150 flowers, 3 species); nothing is downloaded.
predict_proba and predict run on the whole batch at once. Serve it with
    batchscope serve --model models/python/iris_sklearn.py
"""

import numpy as np
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression


class IrisClassifier:
    """Iris species from sepal and petal length and width (cm), by scikit-learn."""

    inputs = {"measurements": ("FP32", [4])}
    outputs = {"probabilities": ("FP32", [3]), "species": ("INT64", [])}
    max_batch_size = 256

    def __init__(self, C="1.0"):
        data = load_iris()
        self.model = LogisticRegression(C=float(C), max_iter=1000).fit(data.data, data.target)

    def predict(self, inputs):
        x = inputs["measurements"]
        p = self.model.predict_proba(x)
        return {"probabilities": p.astype(np.float32), "species": p.argmax(axis=1).astype(np.int64)}
