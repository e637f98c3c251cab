# SPDX-License-Identifier: GPL-3.0-or-later
"""Handwritten digits as image files, for the tests that serve
models/python/digits.py (python_examples.py, python_soak.py): scikit-learn's
own digits, drawn dark on light, every other one a 96 x 96 PNG and the ones
between a 100 x 100 JPEG, so that both decoders and a resize are exercised.

The scripts beside it import it by name: Python puts a script's own folder
first on the module path, so it is found from any working directory.
"""

import base64
import io

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits

# Digits of several classes from across the data set, the last one its third from the end.
PICKS = [0, 11, 25, 1001, 1500, 1794]


def digit_images(picks=PICKS):
    """For each index of scikit-learn's digits in `picks`: (the image file as base64
    text, the digit it shows); PNG at even positions of `picks`, JPEG at odd ones."""
    digits = load_digits()
    out = []
    for n, i in enumerate(picks):
        img = Image.fromarray((255 - digits.images[i] * 255 / 16).astype(np.uint8))
        buf = io.BytesIO()
        if n % 2:
            img.resize((100, 100), Image.BICUBIC).convert("RGB").save(buf, "JPEG", quality=92)
        else:
            img.resize((96, 96), Image.BICUBIC).save(buf, "PNG")
        out.append((base64.b64encode(buf.getvalue()).decode(), int(digits.target[i])))
    return out
