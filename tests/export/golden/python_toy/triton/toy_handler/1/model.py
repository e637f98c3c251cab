# Triton Inference Server Python backend model (model.py), exported from Batchscope.
# It runs class Toy of toy_handler.py, constructed with scale="2", bias="0.5", copied
# beside it as given. config.pbtxt, in the folder above, sets the batching; Triton's
# Python backend (backend "python") runs this file in one process per model instance.
#
# Batchscope options in force: strategy=fifo max_batch_size=8 max_wait_us=1500
# queue_capacity=64 request_timeout_ms=10000 num_lanes=2.
# Model toy_handler on cpu.
# Tuned under traffic: poisson 800 req/s.
#
# Triton's dynamic batcher hands execute() the requests of a batch, and a request may
# carry several rows (a BYTES input's row is one string; with dims [ 1 ], in an array of
# one, which preprocess gets as the bytes alone). execute() runs the class's preprocess on
# each row where the class has one, stacks every row (padded to the longest where an input
# varies), calls predict once, splits the outputs back by each request's rows (cutting
# padding off), runs postprocess on each row where the class has one, and answers each
# request with its rows' outputs. An exception answers every request of that batch with
# the error.

import importlib.util
import inspect
import json
import os
import sys

import numpy as np
import triton_python_backend_utils as pb_utils

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


def request_items(request):
    """A Triton request's inputs as one item per row (name -> value without the batch
    dimension): a request may carry several rows."""
    arrays = {}
    for name, _, _ in REQUEST_INPUTS:
        tensor = pb_utils.get_input_tensor_by_name(request, name)
        if tensor is None:
            raise HandlerError("a request has no input %r" % name)
        arrays[name] = tensor.as_numpy()
    counts = {name: (a.shape[0] if a.ndim else -1) for name, a in arrays.items()}
    if len(set(counts.values())) != 1 or -1 in counts.values():
        raise HandlerError("a request's inputs have different numbers of rows: %s" % counts)
    rows = next(iter(counts.values()))
    return [{name: a[i] for name, a in arrays.items()} for i in range(rows)]


def answer_string(value):
    """A BYTES output's value as the bytes Triton sends, as Batchscope answers it: text
    as UTF-8, bytes as they are, any other value (a dict, a list, a number) as its JSON
    text."""
    if isinstance(value, np.ndarray) and value.dtype == object and value.size == 1:
        value = value.reshape(-1)[0]
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return json.dumps(jsonable(value)).encode("utf-8")


def output_of(answers, name, dtype, shape):
    """One request's output `name`: its rows' values stacked (zeros pad the shorter ones);
    a BYTES output's strings in an object array, one a row (shape [] or [1])."""
    if not answers:
        return np.zeros([0] + [max(d, 0) for d in shape], dtype=dtype)
    for answer in answers:
        if not isinstance(answer, dict) or name not in answer:
            raise HandlerError("an answer has no output %r: Triton answers the outputs of"
                               " config.pbtxt, so postprocess must keep them" % name)
    if dtype == "object":
        strings = [answer_string(answer[name]) for answer in answers]
        return np.array(strings, dtype=object).reshape([len(strings)] + shape)
    return stack([to_array(answer[name], dtype) for answer in answers], 0, dtype)


class TritonPythonModel:
    """Runs the handler's class in Triton's Python backend: one predict per batch."""

    def initialize(self, args):
        self.model = load_handler(os.path.dirname(os.path.abspath(__file__)))

    def execute(self, requests):
        try:
            return self.answer(requests)
        except Exception as e:  # every request of this batch answers the error
            message = message_of(e)
            return [pb_utils.InferenceResponse(error=pb_utils.TritonError(message))
                    for _ in requests]

    def answer(self, requests):
        counts, rows = [], []
        for request in requests:
            items = request_items(request)
            counts.append(len(items))
            rows.extend(prepare(self.model, request_item(item)) for item in items)
        answers = predict_rows(self.model, rows) if rows else []
        responses, at = [], 0
        for count in counts:
            mine = [finish(self.model, answer) for answer in answers[at:at + count]]
            at += count
            tensors = [pb_utils.Tensor(name, output_of(mine, name, dtype, shape))
                       for name, dtype, shape in RESPONSE_OUTPUTS]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses

    def finalize(self):
        self.model = None
