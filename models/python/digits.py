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
from PIL import Image
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


def digit_photos(count=8, size=(640, 480)):
    """scikit-learn's first digits as photos: each drawn large, dark ink on a
    light ground that shades across the frame, in a 640 x 480 colour JPEG
    (about 10 KiB), as base64 text: the requests seeded traffic (bench, tune,
    the workbench) sends, and what profile measures preprocess on."""
    digits = load_digits()
    width, height = size
    shade = np.linspace(250, 200, width, dtype=np.float32)[None, :].repeat(height, 0)
    out = []
    for i in range(count):
        ink = (255 - digits.images[i] * 255 / 16).astype(np.uint8)
        digit = Image.fromarray(ink).resize((height * 3 // 4,) * 2, Image.BICUBIC)
        photo = Image.fromarray(shade.astype(np.uint8))
        photo.paste(digit, ((width - digit.width) // 2, (height - digit.height) // 2))
        buf = io.BytesIO()
        photo.convert("RGB").save(buf, "JPEG", quality=90)
        out.append({"image": base64.b64encode(buf.getvalue())})
    return out


class Digits:
    """Reads a handwritten digit from a PNG or JPEG image (scikit-learn, PIL)."""

    request_inputs = {"image": ("BYTES", [])}
    inputs = {"pixels": ("FP32", [SIDE * SIDE])}
    outputs = {"probabilities": ("FP32", [10])}
    response_outputs = {"digit": ("INT64", []), "probability": ("FP32", [])}
    max_batch_size = 64
    examples = digit_photos()

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
        grey = np.asarray(image.convert("L"), dtype=np.float32) / 255.0
        ink = 1.0 - grey if grey.mean() > 0.5 else grey  # dark ink on a light ground
        ink = np.clip(ink - np.median(ink[::7, ::7]), 0.0, None)  # the ground to 0
        rows, cols = np.nonzero(ink > 0.25 * max(float(ink.max()), 1e-6))
        if rows.size:  # the digit's box, made square about its middle
            ink = ink[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
        side = max(ink.shape)
        square = np.zeros((side, side), dtype=np.float32)
        top, left = (side - ink.shape[0]) // 2, (side - ink.shape[1]) // 2
        square[top:top + ink.shape[0], left:left + ink.shape[1]] = ink
        small = np.asarray(Image.fromarray(square, "F").resize((SIDE, SIDE), Image.BOX))
        return {"pixels": small.reshape(SIDE * SIDE)}

    def predict(self, inputs):
        p = self.model.predict_proba(inputs["pixels"])
        return {"probabilities": p.astype(np.float32)}

    def postprocess(self, outputs):
        p = outputs["probabilities"]
        digit = int(np.argmax(p))
        return {"digit": digit, "probability": p[digit]}
