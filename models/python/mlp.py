# SPDX-License-Identifier: GPL-3.0-or-later
"""The mlp as eager PyTorch: 512 -> 1024 -> 1024 -> 1024 -> 16 with ReLU.

The same weights as models/mlp.pt, read from that file's parameters into
plain torch.nn layers; nothing is traced. Serve it with
    batchscope serve --model models/python/mlp.py
"""

import os

import numpy as np
import torch
from torch import nn


class Mlp:
    """A multilayer perceptron run eagerly in PyTorch, with mlp.pt's weights."""

    inputs = {"features": ("FP32", [512])}
    outputs = {"logits": ("FP32", [16])}
    max_batch_size = 128

    def __init__(self, weights=None):
        here = os.path.dirname(os.path.abspath(__file__))
        weights = weights or os.path.join(here, "..", "mlp.pt")
        sizes = [512, 1024, 1024, 1024, 16]
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i + 2 < len(sizes):
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers).eval()
        state = torch.jit.load(weights, map_location="cpu").state_dict()
        self.net.load_state_dict({k.removeprefix("net."): v for k, v in state.items()})

    def predict(self, inputs):
        with torch.inference_mode():
            features = torch.from_numpy(inputs["features"])  # a view on the batch, no copy
            return {"logits": self.net(features).numpy()}
