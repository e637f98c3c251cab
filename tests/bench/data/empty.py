# SPDX-License-Identifier: GPL-3.0-or-later
# The Python lane's own cost: predict hands its input back untouched.
class Empty:
    inputs = {"x": ("FP32", [512])}
    outputs = {"y": ("FP32", [512])}
    max_batch_size = 32

    def predict(self, inputs):
        return {"y": inputs["x"]}
