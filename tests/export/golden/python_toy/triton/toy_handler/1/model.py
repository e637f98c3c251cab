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
# request with its rows' outputs, converted to the types config.pbtxt declares. A request
# that cannot be read, or whose preprocess or postprocess fails, answers its error alone;
# when predict fails, every request of the batch answers the error.

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


# KServe's names of the numpy dtypes, for messages.
DATATYPES = {"float32": "FP32", "float16": "FP16", "float64": "FP64", "int64": "INT64",
             "int32": "INT32", "uint8": "UINT8", "bool": "BOOL", "object": "BYTES"}


def as_declared(value, dtype, shape, what):
    """`value` (a list, a number, an array of any dtype, a torch tensor; for BYTES, str or
    bytes or a list or array of them) as an array of numpy dtype `dtype` (object: BYTES,
    each element bytes, text as UTF-8) and of `shape` (-1 varies). A value that does not
    convert exactly (1.5 for INT64, 2 for BOOL, text for FP32) or has another shape raises
    a HandlerError naming `what`, what was expected and what came."""
    expected = "%s (%s)" % (DATATYPES.get(dtype, dtype), dtype)
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    try:
        if dtype == "object":
            if isinstance(value, (str, bytes, bytearray)):  # one string, for shape [] or [1]
                got = np.empty([1] if list(shape) == [1] else [], dtype=object)
                got.flat[0] = value
            else:
                got = np.asarray(value, dtype=object)
            out = np.empty(got.shape, dtype=object)
            for i, v in enumerate(got.reshape(-1)):
                if isinstance(v, str):
                    v = v.encode("utf-8")
                if not isinstance(v, (bytes, bytearray)):
                    raise HandlerError("%s: expected %s, got %s" % (
                        what, expected, type(v).__name__))
                out.flat[i] = bytes(v)
        else:
            got = np.asarray(value)
            if got.dtype.kind not in "biuf":
                raise HandlerError("%s: expected %s, got %s" % (
                    what, expected, got.dtype if got.ndim else type(value).__name__))
            with np.errstate(all="ignore"):
                out = got.astype(dtype)
            if out.dtype.kind != "f" and not np.array_equal(out, got):
                raise HandlerError("%s: expected %s, got %s values that %s cannot hold" % (
                    what, expected, got.dtype, DATATYPES.get(dtype, dtype)))
    except (TypeError, ValueError) as e:
        raise HandlerError("%s: expected %s; it cannot be read as an array: %s" % (
            what, expected, e)) from e
    if not fits(out, shape):
        raise HandlerError("%s: expected shape %s (-1 varies), got %s" % (
            what, list(shape), list(out.shape)))
    return out


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
        item[name] = as_declared(values[name], dtype, shape, "input %r" % name)
    return item


def prepare(model, item):
    """A request's item as the row predict stacks: through the class's preprocess when it
    has one, each of INPUTS converted to its declared dtype and checked against its
    declared shape."""
    where, result = "a request", "a request"
    if callable(getattr(model, "preprocess", None)):
        item = call(model, "preprocess", item)
        where = "%s.preprocess" % type(model).__name__
        result = where + "'s result"
        if not isinstance(item, dict):
            raise HandlerError("%s returned %s; expected a dict of input name -> array" % (
                where, type(item).__name__))
    row = {}
    for name, dtype, shape, _ in INPUTS:
        if name not in item:
            raise HandlerError("%s has no input %r; predict takes %s" % (
                result, name, ", ".join(n for n, _, _, _ in INPUTS)))
        row[name] = as_declared(item[name], dtype, shape, "%s's input %r" % (where, name))
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


def answered_by(model):
    """Who gives a request's answer, for messages: "Toy.postprocess" or "Toy.predict"."""
    method = "postprocess" if callable(getattr(model, "postprocess", None)) else "predict"
    return "%s.%s" % (type(model).__name__, method)


def finish(model, answer):
    """A row's outputs through the class's postprocess when it has one, which must answer
    a dict."""
    if not callable(getattr(model, "postprocess", None)):
        return answer
    answer = call(model, "postprocess", answer)
    if not isinstance(answer, dict):
        raise HandlerError("%s returned %s; expected a dict of output name -> value" % (
            answered_by(model), type(answer).__name__))
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


def plain(value, what):
    """`value` as JSON carries it: arrays as lists, numpy numbers as Python's, bytes as
    UTF-8 text, tuples as lists; anything else JSON cannot carry raises a HandlerError
    naming `what`."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()  # an object array's objects are checked below
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as e:
            raise HandlerError("%s: bytes that are not UTF-8 text (%s)" % (what, e)) from e
    if isinstance(value, (list, tuple)):
        return [plain(v, what) for v in value]
    if isinstance(value, dict):
        for key in value:
            if not (key is None or isinstance(key, (str, bool, int, float))):
                raise HandlerError("%s: a key of type %s, which JSON cannot carry" % (
                    what, type(key).__name__))
        return {key: plain(v, what) for key, v in value.items()}
    raise HandlerError("%s: %s, which JSON cannot carry" % (what, type(value).__name__))


def json_answer(model, answer):
    """A row's outputs as a JSON object: through postprocess where the class has one, each
    value made plain; a HandlerError names the class, the method and the output."""
    answer = finish(model, answer)
    return {name: plain(value, "%s's output %r" % (answered_by(model), name))
            for name, value in answer.items()}


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


def answer_string(value, what):
    """A BYTES output's value as the bytes Triton sends, as Batchscope answers it: text
    as UTF-8, bytes as they are, any other value (a dict, a list, a number) as its JSON
    text."""
    if isinstance(value, np.ndarray) and value.dtype == object and value.size == 1:
        value = value.reshape(-1)[0]
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return json.dumps(plain(value, what)).encode("utf-8")


def output_of(model, answers, name, dtype, shape):
    """One request's output `name`: its rows' values as RESPONSE_OUTPUTS declares them,
    stacked (zeros pad the shorter ones); a BYTES output's strings in an object array, one
    a row (shape [] or [1])."""
    if not answers:
        return np.zeros([0] + [max(d, 0) for d in shape], dtype=dtype)
    what = "%s's output %r" % (answered_by(model), name)
    for answer in answers:
        if name not in answer:
            raise HandlerError("%s's answer has no output %r: Triton answers the outputs of"
                               " config.pbtxt, so postprocess must keep them" % (
                                   answered_by(model), name))
    if dtype == "object":
        strings = [answer_string(answer[name], what) for answer in answers]
        return np.array(strings, dtype=object).reshape([len(strings)] + shape)
    return stack([as_declared(answer[name], dtype, shape, what) for answer in answers], 0, dtype)


def respond(model, answers):
    """A request's response: its rows' outputs through postprocess, stacked by output."""
    answers = [finish(model, answer) for answer in answers]
    tensors = [pb_utils.Tensor(name, output_of(model, answers, name, dtype, shape))
               for name, dtype, shape in RESPONSE_OUTPUTS]
    return pb_utils.InferenceResponse(output_tensors=tensors)


class TritonPythonModel:
    """Runs the handler's class in Triton's Python backend: one predict per batch."""

    def initialize(self, args):
        self.model = load_handler(os.path.dirname(os.path.abspath(__file__)))

    def execute(self, requests):
        errors, counts, rows = [None] * len(requests), [0] * len(requests), []
        for k, request in enumerate(requests):
            try:
                mine = [prepare(self.model, request_item(item))
                        for item in request_items(request)]
            except Exception as e:  # this request alone
                errors[k] = e
                continue
            counts[k] = len(mine)
            rows.extend(mine)
        try:
            answers = predict_rows(self.model, rows) if rows else []
        except Exception as e:  # every request of the batch
            answers, errors = [], [error or e for error in errors]
        responses, at = [], 0
        for k, count in enumerate(counts):
            mine, at = answers[at:at + count], at + count
            if errors[k] is None:
                try:
                    responses.append(respond(self.model, mine))
                    continue
                except Exception as e:  # this request alone
                    errors[k] = e
            message = message_of(errors[k])
            responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(message)))
        return responses

    def finalize(self):
        self.model = None
