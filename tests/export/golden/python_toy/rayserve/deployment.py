# Ray Serve deployment (deployment.py), exported from Batchscope.
# It runs class Toy of toy_handler.py, constructed with scale="2", bias="0.5", kept beside
# it as given. Deploy with serve_config.yaml from the directory holding this file and
# toy_handler.py. Written for Ray 2.x releases that have max_ongoing_requests and
# max_queued_requests (older ones call the first max_concurrent_queries and lack the
# second).
#
# Batchscope options in force: strategy=fifo max_batch_size=8 max_wait_us=1500
# queue_capacity=64 request_timeout_ms=10000 num_lanes=2.
# Model toy_handler on cpu.
# Tuned under traffic: poisson 800 req/s.
#
# max_ongoing_requests is 2 x max_batch_size: a replica takes at most that many requests
# at once, so below max_batch_size its batches could never fill; at twice that, one full
# batch runs while the next one fills.
# One replica per Batchscope lane, each with its own copy of the model, as Batchscope's
# lanes are.
# Not exact: max_queued_requests = queue_capacity is counted by each caller (each HTTP
# proxy) apart, and leaves out the requests a replica already holds.
# Not exact: Ray Serve starts batch_wait_timeout_s when its batching loop begins
# collecting a batch, not when the oldest request arrived as Batchscope does; under load a
# request can wait longer than this.
# Not expressible: request_timeout_ms = 10000. Ray Serve has no queue timeout; see
# http_options in serve_config.yaml.
# A request's body is a JSON object of input name -> value without the batch dimension
# ({"data": value} for a class of one input). __call__ runs the class's preprocess where
# it has one; @serve.batch gathers the rows for infer(), which stacks them (padded to the
# longest where an input varies), calls predict once and splits the outputs back (cutting
# padding off); __call__ runs postprocess where the class has one and answers the outputs
# as JSON. A request that cannot be read (or whose preprocess fails) answers 400 alone,
# one whose postprocess fails or answers what JSON cannot carry 500 alone; when predict
# fails, every request of the batch answers 500; each with {"error": message}.

import importlib.util
import inspect
import json
import os
import sys

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

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


@serve.deployment(
    num_replicas=2,
    max_ongoing_requests=16,
    max_queued_requests=64,
    ray_actor_options={"num_cpus": 1},
)
class BatchedModel:
    """Runs the handler's class in a Ray Serve replica: one predict per batch."""

    def __init__(self):
        self.model = load_handler(os.path.dirname(os.path.abspath(__file__)))

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.0015)
    async def infer(self, rows: list) -> list:
        return predict_rows(self.model, rows)

    async def __call__(self, request: Request):
        try:
            row = prepare(self.model, request_item(body_values(await request.json())))
        except Exception as e:  # this request alone
            return JSONResponse({"error": message_of(e)}, status_code=400)
        try:
            outputs = await self.infer(row)
        except Exception as e:  # predict fails every request of its batch
            return JSONResponse({"error": message_of(e)}, status_code=500)
        try:
            return json_answer(self.model, outputs)
        except Exception as e:  # this request alone
            return JSONResponse({"error": message_of(e)}, status_code=500)


app = BatchedModel.bind()
