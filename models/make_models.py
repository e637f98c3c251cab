#!/usr/bin/python3
"""Writes Batchscope's TorchScript models and their JSON sidecars.

Run with Debian's python3-torch (apt-get install python3-torch):
    /usr/bin/python3 models/make_models.py
Seeds are fixed, so the files are the same on every run of the same torch.
Also writes the small models the torch tests use into tests/torch/data/.
"""

import json
import os
from typing import Dict, Tuple

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_DATA = os.path.join(HERE, "..", "tests", "torch", "data")


def spec(name, shape, datatype="FP32", finite_only=None):
    s = {"name": name, "datatype": datatype, "shape": [-1] + list(shape)}
    if finite_only is not None:
        s["finite_only"] = finite_only
    return s


def save(module, folder, name, description, inputs, outputs, max_batch_size):
    module.eval()
    scripted = torch.jit.script(module)
    os.makedirs(folder, exist_ok=True)
    scripted.save(os.path.join(folder, name + ".pt"))
    meta = {
        "name": name,
        "description": description,
        "max_batch_size": max_batch_size,
        "inputs": inputs,
        "outputs": outputs,
    }
    with open(os.path.join(folder, name + ".json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print("wrote", os.path.relpath(os.path.join(folder, name + ".pt")))


class Mlp(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i + 2 < len(sizes):
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)


class CnnMnist(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3)
        self.conv2 = nn.Conv2d(16, 32, 3)
        self.fc1 = nn.Linear(32 * 5 * 5, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        x = torch.max_pool2d(torch.relu(self.conv1(image)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


class TupleOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        y = self.lin(x)
        return y, y.sum(dim=1, keepdim=True)


class DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> Dict[str, torch.Tensor]:
        y = self.lin(x) * scale
        return {"total": y.sum(dim=1, keepdim=True), "scaled": y}


class ThrowsOnNegative(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool((x < 0).any()):
            raise RuntimeError("negative input")
        return self.lin(x)


def main():
    torch.manual_seed(0)
    save(nn.Sequential(nn.Linear(128, 64)), HERE, "linear_128x64",
         "One Linear(128 -> 64) layer: the reference model of a widely shared Python "
         "batching engine, for side-by-side comparisons.",
         [spec("data", [128], finite_only=True)], [spec("output", [64])], 256)

    torch.manual_seed(1)
    save(Mlp([512, 1024, 1024, 1024, 16]), HERE, "mlp",
         "A multilayer perceptron, 512 -> 1024 -> 1024 -> 1024 -> 16 with ReLU: "
         "memory-bound one at a time, compute-bound in batches, so batching pays.",
         [spec("features", [512], finite_only=True)], [spec("logits", [16])], 128)

    torch.manual_seed(2)
    save(CnnMnist(), HERE, "cnn_mnist",
         "A small convolutional classifier of 1x28x28 images into 10 classes "
         "(untrained weights).",
         [spec("image", [1, 28, 28], finite_only=True)], [spec("logits", [10])], 128)

    torch.manual_seed(3)
    save(TupleOut(), TEST_DATA, "tuple_out", "Test model: a tuple of two outputs.",
         [spec("x", [8])], [spec("y", [4]), spec("sum", [1])], 16)
    torch.manual_seed(4)
    save(DictOut(), TEST_DATA, "dict_out", "Test model: two inputs, a dict of outputs.",
         [spec("x", [8]), spec("scale", [1])], [spec("scaled", [4]), spec("total", [1])], 16)
    torch.manual_seed(5)
    save(ThrowsOnNegative(), TEST_DATA, "throws_on_negative",
         "Test model: raises when any input is negative.",
         [spec("x", [4])], [spec("y", [2])], 16)


if __name__ == "__main__":
    main()
