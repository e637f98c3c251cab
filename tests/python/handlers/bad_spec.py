# SPDX-License-Identifier: GPL-3.0-or-later
# A datatype Batchscope does not know.
class Model:
    inputs = {"x": ("FLOAT", [2])}
    outputs = {"y": ("FP32", [2])}

    def predict(self, inputs):
        return {"y": inputs["x"]}
