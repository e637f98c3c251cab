# TorchServe custom handler (torchserve_handler.py), exported from Batchscope.
# It runs class Toy of toy_handler.py, constructed with scale="2", bias="0.5", archived
# beside it as given. Archive both: torch-model-archiver --model-name toy_handler
# --version 1.0 --handler torchserve_handler.py --extra-files toy_handler.py --config-file
# model-config.yaml --export-path MODEL_STORE (model-config.yaml sets the batching).
#
# Batchscope options in force: strategy=fifo max_batch_size=8 max_wait_us=1500
# queue_capacity=64 request_timeout_ms=10000 num_lanes=2.
# Model toy_handler on cpu.
# Tuned under traffic: poisson 800 req/s.
#
# TorchServe hands handle() the requests of a batch, one row each. A request's body is a
# JSON object of input name -> value without the batch dimension ({"data": value} for a
# class of one input). handle() runs the class's preprocess on each request where the
# class has one, stacks them (padded to the longest where an input varies), calls predict
# once, splits the outputs back (cutting padding off), runs postprocess on each where the
# class has one, and answers each with its outputs as JSON. A request that cannot be read
# answers 400 alone; when predict fails, every request of the batch answers 500; each with
# {"error": message}.

import importlib.util
import inspect
import json
import os
import sys

import numpy as np

# What was exported: the handler file beside this one, the class to construct ("": the
# file's one class with a predict method) and its constructor's keyword arguments, strings
# as --model-option gave them.
HANDLER_FILE = "toy_handler.py"
HANDLER_CLASS = "Toy"
HANDLER_OPTIONS = {
    "scale": "2",
    "bias": "0.5",
}
# What a request sends: name, numpy dtype (object: BYTES, one byte string a request, which
# preprocess gets as bytes) and shape without the batch dimension (-1 varies).
REQUEST_INPUTS = [
    ("x", "float32", [4]),
]
# What the class's predict takes, with the value a shorter request is padded with, and
# what it gives; then what a request gets back (postprocess's answer, or predict's rows).
INPUTS = [
    ("x", "float32", [4], 0),
]
OUTPUTS = [
    ("y", "float32", [3]),
    ("total", "float64", [1]),
]
RESPONSE_OUTPUTS = [
    ("y", "float32", [3]),
    ("total", "float64", [1]),
]


class HandlerError(Exception):
    """A request or the handler's class failed; the message says which and how."""


def message_of(error):
    """The text an error answer carries."""
    if isinstance(error, HandlerError):
        return str(error)
    return "%s: %s" % (type(error).__name__, error)


def call(model, method, *args):
    """model.method(*args), an exception turned into a HandlerError naming the method."""
    try:
        return getattr(model, method)(*args)
    except Exception as e:
        raise HandlerError("%s.%s raised %s: %s" % (
            type(model).__name__, method, type(e).__name__, e)) from e


def load_handler(folder):
    """Imports HANDLER_FILE from `folder` and constructs its class with HANDLER_OPTIONS."""
    path = os.path.join(folder, HANDLER_FILE)
    name = os.path.splitext(HANDLER_FILE)[0]
    if folder not in sys.path:
        sys.path.insert(0, folder)  # the handler may import files kept beside it
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("%s is not a Python file Python can import" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if HANDLER_CLASS:
        cls = getattr(module, HANDLER_CLASS, None)
        if not inspect.isclass(cls):
            raise ImportError("%s has no class %s" % (HANDLER_FILE, HANDLER_CLASS))
    else:
        found = [c for _, c in inspect.getmembers(module, inspect.isclass)
                 if c.__module__ == module.__name__ and callable(getattr(c, "predict", None))]
        if len(found) != 1:
            raise ImportError("%s has %d classes with a predict method; export it again with"
                              " --class NAME" % (HANDLER_FILE, len(found)))
        cls = found[0]
    return cls(**HANDLER_OPTIONS)


def to_array(value, dtype=None):
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=dtype)


def fits(value, shape):
    """`value` (an array) has `shape`'s rank and its sizes where they are fixed."""
    return value.ndim == len(shape) and all(d < 0 or n == d for n, d in zip(value.shape, shape))


def one_string(name, value):
    """A BYTES input's value as the bytes preprocess gets: text as UTF-8, and a list or
    array holding one string (Triton's row of an input of dims [ 1 ], a JSON list of one)
    as that string."""
    while isinstance(value, (list, tuple, np.ndarray)):
        flat = value.reshape(-1) if isinstance(value, np.ndarray) else value
        if len(flat) != 1:
            raise HandlerError("input %r is BYTES, one string a request; got %d values" % (
                name, len(flat)))
        value = flat[0]
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise HandlerError("input %r is BYTES, one string a request; got %s" % (
        name, type(value).__name__))


def request_item(values):
    """One request's values (name -> value without the batch dimension) as preprocess
    takes them: each of REQUEST_INPUTS, bytes for BYTES, else an array of its dtype and
    shape."""
    item = {}
    for name, dtype, shape in REQUEST_INPUTS:
        if name not in values:
            raise HandlerError("input %r is missing; a request sends %s" % (
                name, ", ".join(n for n, _, _ in REQUEST_INPUTS)))
        if dtype == "object":
            item[name] = one_string(name, values[name])
            continue
        try:
            value = to_array(values[name], dtype)
        except (TypeError, ValueError) as e:
            raise HandlerError("input %r: %s" % (name, e)) from e
        if not fits(value, shape):
            raise HandlerError("input %r has shape %s; expected %s (-1 varies)" % (
                name, list(value.shape), shape))
        item[name] = value
    return item


def prepare(model, item):
    """A request's item as the row predict stacks: through the class's preprocess when it
    has one, each of INPUTS checked against its declared shape."""
    where = "a request"
    if callable(getattr(model, "preprocess", None)):
        item = call(model, "preprocess", item)
        where = "%s.preprocess's result" % type(model).__name__
        if not isinstance(item, dict):
            raise HandlerError("%s.preprocess returned %s; expected a dict of input name ->"
                               " array" % (type(model).__name__, type(item).__name__))
    row = {}
    for name, dtype, shape, _ in INPUTS:
        if name not in item:
            raise HandlerError("%s has no input %r; predict takes %s" % (
                where, name, ", ".join(n for n, _, _, _ in INPUTS)))
        try:
            value = to_array(item[name], dtype)
        except (TypeError, ValueError) as e:
            raise HandlerError("%s's input %r: %s" % (where, name, e)) from e
        if not fits(value, shape):
            raise HandlerError("%s's input %r has shape %s; expected %s (-1 varies)" % (
                where, name, list(value.shape), shape))
        row[name] = value
    return row


def stack(arrays, fill, dtype):
    """`arrays` stacked along a new first dimension, each padded with `fill` up to the
    largest size of every dimension."""
    shape = [max(a.shape[d] for a in arrays) for d in range(arrays[0].ndim)]
    out = np.full([len(arrays)] + shape, fill, dtype=dtype)
    for i, a in enumerate(arrays):
        out[(i,) + tuple(slice(0, n) for n in a.shape)] = a
    return out


def length_of(row):
    """A row's length: the size of the first varying dimension of the first input that
    has one; 0 for a model without one."""
    for name, _, shape, _ in INPUTS:
        for d, size in enumerate(shape):
            if size < 0:
                return row[name].shape[d]
    return 0


def predict_rows(model, rows):
    """One predict for all `rows`, stacked; each row's outputs (name -> array without the
    batch dimension), a varying dimension padded to the longest row cut back to its own."""
    batch = {name: stack([row[name] for row in rows], fill, dtype)
             for name, dtype, _, fill in INPUTS}
    result = call(model, "predict", batch)
    where = "%s.predict" % type(model).__name__
    if not isinstance(result, dict):
        raise HandlerError("%s returned %s; expected a dict of output name -> array" % (
            where, type(result).__name__))
    lengths = [length_of(row) for row in rows]
    longest = max(lengths)
    answers = [{} for _ in rows]
    for name, dtype, shape in OUTPUTS:
        if name not in result:
            raise HandlerError("%s's result has no output %r" % (where, name))
        try:
            value = to_array(result[name], dtype)
        except (TypeError, ValueError) as e:
            raise HandlerError("%s's output %r: %s" % (where, name, e)) from e
        fits = value.ndim == len(shape) + 1 and value.shape[0] == len(rows) and all(
            d < 0 or n == d for n, d in zip(value.shape[1:], shape))
        if not fits:
            raise HandlerError("%s's output %r has shape %s for a batch of %d; expected %s" % (
                where, name, list(value.shape), len(rows), [len(rows)] + shape))
        for i, answer in enumerate(answers):
            own = value[i]
            if longest:
                own = own[tuple(slice(0, lengths[i]) if d < 0 and n == longest else slice(None)
                                for n, d in zip(own.shape, shape))]
            answer[name] = own
    return answers


def finish(model, answer):
    """A row's outputs through the class's postprocess when it has one."""
    if callable(getattr(model, "postprocess", None)):
        return call(model, "postprocess", answer)
    return answer


def body_values(body):
    """A JSON request body (text, bytes or parsed) as input name -> value: an object of
    REQUEST_INPUTS, or {"data": value} where a request sends one input."""
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError as e:
            raise HandlerError("the body is not JSON: %s" % e) from e
    if not isinstance(body, dict):
        raise HandlerError("the body must be a JSON object of input name -> value, not %s"
                           % type(body).__name__)
    names = [name for name, _, _ in REQUEST_INPUTS]
    if len(names) == 1 and names[0] not in body and "data" in body:
        return {names[0]: body["data"]}
    return body


def jsonable(value):
    """`value` for a JSON answer: arrays as lists, numpy numbers as Python's, bytes as text."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist()) if value.dtype == object else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def refuse(context, index, code, error):
    """Request `index`'s answer to an error: its status and {"error": message}."""
    message = message_of(error)
    context.set_response_status(code, message, index)
    return {"error": message}


class BatchscopeHandler:
    """Runs the handler's class in a TorchServe worker: one predict per batch."""

    def __init__(self):
        self.model = None
        self.initialized = False

    def initialize(self, context):
        folder = context.system_properties.get("model_dir")
        self.model = load_handler(folder or os.path.dirname(os.path.abspath(__file__)))
        self.initialized = True

    def handle(self, data, context):
        answers = [None] * len(data)
        rows, taken = [], []
        for i, request in enumerate(data):
            try:
                body = request.get("data")
                if body is None:
                    body = request.get("body")
                rows.append(prepare(self.model, request_item(body_values(body))))
                taken.append(i)
            except Exception as e:  # this request alone
                answers[i] = refuse(context, i, 400, e)
        try:
            outputs = predict_rows(self.model, rows) if rows else []
        except Exception as e:  # every request of the batch
            for i in taken:
                answers[i] = refuse(context, i, 500, e)
            return answers
        for i, output in zip(taken, outputs):
            try:
                answers[i] = jsonable(finish(self.model, output))
            except Exception as e:
                answers[i] = refuse(context, i, 500, e)
        return answers


_service = BatchscopeHandler()


def handle(data, context):
    """TorchServe's entry point: loads the class on the first call, then answers batches."""
    if not _service.initialized:
        _service.initialize(context)
    if data is None:
        return None
    return _service.handle(data, context)
