# SPDX-License-Identifier: GPL-3.0-or-later
"""What a Python model's class declares, for Batchscope's worker.

Imports the handler file, finds its class (the one with a predict, or the
one --class names) and reads what it takes and gives: its inputs and
outputs, what requests send and answers carry where it has preprocess and
postprocess, its largest batch and its examples. batchscope_worker.py uses
it to describe a class and before it serves one; each fault is a
HandlerError naming the file, the class and what is wrong.
"""

import importlib.util
import inspect
import os
import sys
import traceback

# The version of core/python/worker_protocol.h that describe's JSON and the
# region speak.
PROTOCOL = 1
MAX_TENSORS = 32  # inputs at table slots 0..31, outputs at 32..63
MAX_DIMS = 8

# KServe v2 datatypes in DType's order (core/common/tensor.h). A BYTES
# tensor is one byte string per request: preprocess gets it as bytes, and a
# postprocess answer for it may be str, bytes or any JSON value.
DTYPES = ["FP32", "FP16", "FP64", "INT64", "INT32", "UINT8", "BOOL", "BYTES"]
NUMPY = ["float32", "float16", "float64", "int64", "int32", "uint8", "bool", "uint8"]
BYTES, UINT8, INT64 = 7, 5, 3


class HandlerError(Exception):
    """A fault in the handler file that names the file, the class and what."""


def load_module(path):
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise HandlerError("%s: no such file" % path)
    name = os.path.splitext(os.path.basename(path))[0]
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise HandlerError("%s: not a Python file Python can import" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        raise HandlerError("%s failed to import:\n%s" % (path, traceback.format_exc()))
    return module


def find_class(module, path, wanted):
    base = os.path.basename(path)
    if wanted:
        cls = getattr(module, wanted, None)
        if not inspect.isclass(cls):
            raise HandlerError("%s has no class %r (--class %s)" % (base, wanted, wanted))
        if not callable(getattr(cls, "predict", None)):
            raise HandlerError("%s: class %s has no predict method" % (base, wanted))
        return cls
    found = [
        c
        for _, c in inspect.getmembers(module, inspect.isclass)
        if c.__module__ == module.__name__ and callable(getattr(c, "predict", None))
    ]
    if not found:
        raise HandlerError("%s has no class with a predict method" % base)
    if len(found) > 1:
        names = ", ".join(c.__name__ for c in found)
        raise HandlerError("%s has %d classes with a predict method (%s): pick one with --class"
                           % (base, len(found), names))
    return found[0]


def tensor_specs(cls, base, attribute, allow_bytes):
    where = "%s: %s.%s" % (base, cls.__name__, attribute)
    specs = getattr(cls, attribute, None)
    if specs is None:
        return None
    if not isinstance(specs, dict) or not specs:
        raise HandlerError("%s must be a non-empty dict of name -> (datatype, shape), not %r"
                           % (where, specs))
    if len(specs) > MAX_TENSORS:
        raise HandlerError("%s has %d entries; at most %d" % (where, len(specs), MAX_TENSORS))
    out = []
    for name, spec in specs.items():
        if not isinstance(name, str) or not name:
            raise HandlerError("%s: a name must be a non-empty string, not %r" % (where, name))
        if not isinstance(spec, (tuple, list)) or len(spec) != 2:
            raise HandlerError("%s[%r] must be (datatype, shape), not %r" % (where, name, spec))
        dtype, shape = spec
        known = DTYPES if allow_bytes else DTYPES[:BYTES]
        if dtype not in known:
            raise HandlerError("%s[%r]: datatype %r is not one of %s"
                               % (where, name, dtype, ", ".join(known)))
        if not isinstance(shape, (tuple, list)) or len(shape) >= MAX_DIMS or any(
                not isinstance(d, int) or isinstance(d, bool) or d == 0 or d < -1 for d in shape):
            raise HandlerError("%s[%r]: shape must be a list of at most %d sizes (positive, or -1"
                               " where it varies) without the batch dimension, not %r"
                               % (where, name, MAX_DIMS - 1, shape))
        if dtype == "BYTES" and list(shape) not in ([], [1]):
            raise HandlerError("%s[%r]: a BYTES tensor is one string per request: its shape is []"
                               " or [1], not %r" % (where, name, shape))
        out.append({"name": name, "datatype": dtype, "shape": [-1] + list(shape)})
    return out


def describe(cls, path):
    base = os.path.basename(path)
    mbs = getattr(cls, "max_batch_size", 64)
    if not isinstance(mbs, int) or isinstance(mbs, bool) or mbs < 1 or mbs > 1 << 16:
        raise HandlerError("%s: %s.max_batch_size must be a whole number from 1 to 65536, not %r"
                           % (base, cls.__name__, mbs))
    preprocess = callable(getattr(cls, "preprocess", None))
    postprocess = callable(getattr(cls, "postprocess", None))
    for attribute, method, has in (("request_inputs", "preprocess", preprocess),
                                   ("response_outputs", "postprocess", postprocess)):
        if getattr(cls, attribute, None) is not None and not has:
            raise HandlerError("%s: %s.%s declares what %s takes or gives, but the class has no %s"
                               % (base, cls.__name__, attribute, method, method))
    return {
        "protocol": PROTOCOL,
        "name": os.path.splitext(base)[0],
        "class": cls.__name__,
        "description": (inspect.getdoc(cls) or "").split("\n")[0],
        "max_batch_size": mbs,
        "inputs": tensor_specs(cls, base, "inputs", False),
        "outputs": tensor_specs(cls, base, "outputs", False),
        "request_inputs": tensor_specs(cls, base, "request_inputs", True),
        "response_outputs": tensor_specs(cls, base, "response_outputs", True),
        "preprocess": preprocess,
        "postprocess": postprocess,
        "examples": examples_of(cls, base),
    }


def examples_of(cls, base):
    """The class's example requests as JSON: a BYTES value as its bytes in
    hex, any other as its values, flat, with its shape."""
    examples = getattr(cls, "examples", None)
    if examples is None:
        return None
    where = "%s: %s.examples" % (base, cls.__name__)
    if not isinstance(examples, (list, tuple)) or not examples or len(examples) > 256:
        raise HandlerError("%s must be a list of 1 to 256 requests (dicts of input name ->"
                           " value), not %s" % (where, type(examples).__name__))
    out = []
    for i, request in enumerate(examples):
        if not isinstance(request, dict):
            raise HandlerError("%s[%d] must be a dict of input name -> value, not %s"
                               % (where, i, type(request).__name__))
        encoded = {}
        for name, value in request.items():
            if isinstance(value, str):
                value = value.encode("utf-8")
            if isinstance(value, (bytes, bytearray, memoryview)):
                encoded[name] = {"hex": bytes(value).hex()}
                continue
            try:
                import numpy as np
                array = np.asarray(value)
                encoded[name] = {"values": array.reshape(-1).tolist(), "shape": list(array.shape)}
            except (ImportError, TypeError, ValueError) as e:
                raise HandlerError("%s[%d][%r] is not bytes, text or an array: %s"
                                   % (where, i, name, e))
        out.append(encoded)
    return out
