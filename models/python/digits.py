# SPDX-License-Identifier: GPL-3.0-or-later
"""A handwritten-digit classifier that takes PNG or JPEG bytes.

preprocess decodes each request's image with PIL, makes it grey, square and
8 x 8 pixels, with dark ink on a light ground turned round to light ink on
dark as the training images have it; predict runs a scikit-learn logistic
regression, fitted as the class is constructed on the 8 x 8 digits that
scikit-learn ships (1,797 images), on the whole batch; postprocess gives
each request its digit and that digit's probability. Decoding and resizing
cost far more than the model, so here the preprocess pool matters:
    batchscope serve --model models/python/digits.py --preprocess-workers 2
An image may come as its bytes or as their base64 text (a KServe v2 JSON
string cannot hold raw bytes).
"""

import base64
import binascii
import io

import numpy as np
from PIL import Image, ImageOps
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

SIDE = 8  # the training images' side


def image_bytes(data):
    """The image file's bytes, whether sent as they are or as base64 text."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" or data[:3] == b"\xff\xd8\xff":
        return data
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error:
        raise ValueError("the image is neither PNG or JPEG bytes nor their base64 text: %r"
                         % data[:24]) from None


def drawn_digits(count=10, side=64):
    """scikit-learn's first digits drawn as PNG files, dark ink on a light ground,
    as base64 text: the requests seeded traffic (bench, the workbench) sends."""
    digits = load_digits()
    out = []
    for i in range(count):
        ink = (255 - digits.images[i] * 255 / 16).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(ink).resize((side, side), Image.BICUBIC).save(buf, "PNG")
        out.append({"image": base64.b64encode(buf.getvalue())})
    return out


class Digits:
    """Reads a handwritten digit from a PNG or JPEG image (scikit-learn, PIL)."""

    request_inputs = {"image": ("BYTES", [])}
    inputs = {"pixels": ("FP32", [SIDE * SIDE])}
    outputs = {"probabilities": ("FP32", [10])}
    response_outputs = {"digit": ("INT64", []), "probability": ("FP32", [])}
    max_batch_size = 64
    examples = drawn_digits()

    def __init__(self):
        digits = load_digits()
        self.model = LogisticRegression(max_iter=2000).fit(digits.data / 16.0, digits.target)

    def preprocess(self, request):
        data = image_bytes(request["image"])
        try:
            image = Image.open(io.BytesIO(data))
        except OSError as e:
            raise ValueError("cannot read the image (%d bytes starting %r): %s"
                             % (len(data), data[:12], e)) from None
        grey = ImageOps.pad(image.convert("L"), (max(image.size),) * 2, color=None)
        small = np.asarray(grey.resize((SIDE, SIDE), Image.LANCZOS), dtype=np.float32) / 255.0
        if small.mean() > 0.5:  # dark ink on a light ground
            small = 1.0 - small
        return {"pixels": small.reshape(SIDE * SIDE)}

    def predict(self, inputs):
        p = self.model.predict_proba(inputs["pixels"])
        return {"probabilities": p.astype(np.float32)}

    def postprocess(self, outputs):
        p = outputs["probabilities"]
        digit = int(np.argmax(p))
        return {"digit": digit, "probability": p[digit]}
