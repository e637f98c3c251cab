# SPDX-License-Identifier: GPL-3.0-or-later
# A handler where a request's first input value picks a fault for its batch:
# 13 raises, 14 segfaults, 15 exits, 16 hangs, 17 returns a wrong shape,
# 18 a wrong datatype, 19 no output, 21 a list; anything else is 2x + scale.
import ctypes
import os
import time

import numpy as np


class Model:
    inputs = {"x": ("FP32", [4])}
    outputs = {"y": ("FP32", [4])}
    max_batch_size = 16

    def __init__(self, scale="1"):
        self.scale = float(scale)

    def predict(self, inputs):
        x = inputs["x"]
        codes = set(int(v) for v in x[:, 0])
        code = min(codes & {13, 14, 15, 16, 17, 18, 19, 21}, default=0)
        if code == 13:
            raise ValueError("thirteen is unlucky")
        if code == 14:
            ctypes.string_at(0)
        if code == 15:
            os._exit(3)
        if code == 16:
            time.sleep(60)
        if code == 17:
            return {"y": np.zeros((x.shape[0], 3), dtype=np.float32)}
        if code == 18:
            return {"y": np.zeros(x.shape, dtype=np.float64)}
        if code == 19:
            return {"z": x}
        if code == 21:
            return [x]
        return {"y": 2 * x + np.float32(self.scale)}
