# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs the wrappers `batchscope export` wrote for Python models against stand-ins of
the servers' Python APIs (tests/export/python_fakes), not the servers themselves.

Usage: /usr/bin/python3 python_wrappers.py EXPORTS DATA
  EXPORTS holds FORMAT-CASE folders as python_exports.sh writes them (triton-toy,
  torchserve-hooked, rayserve-ragged, ...); DATA is tests/export/data.

For each server and handler, several requests with different contents go
through one batch; each answer must equal what the class gives for that request
alone (its preprocess, predict and postprocess called directly), the class must
have seen one predict for the batch, and a predict that raises must answer every
request of its batch with an error naming the class and the exception.
"""

import asyncio
import importlib.util
import json
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "python_fakes"))

import numpy as np  # noqa: E402

import fake_torchserve  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402
from ray import serve as fake_serve  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402

# The cases python_exports.sh exports: handler file, class, options.
CASES = {
    "toy": ("toy_handler.py", "Toy", {"scale": "2", "bias": "0.5"}),
    "hooked": ("toy_handler.py", "Hooked", {"scale": "2", "bias": "0.5"}),
    "ragged": ("ragged_handler.py", "Ragged", {}),
    # Requests send text, BYTES of shape [1] and of shape [], which preprocess must get
    # as bytes; postprocess answers text.
    "text": ("text_handler.py", "Text", {}),
    "textscalar": ("text_handler.py", "TextScalar", {}),
}
TEXTS = ["Hello world", "the 2 quick foxes", "aeiou", "zzz top 42", "one more line here",
         "Q", "x y z", "it was 1999", "BYTES in, bytes out", "no digits at all"]
FAIL = -999.0  # a toy row whose first element is this makes predict raise


def failing(case):
    """A row's first element that makes the case's predict raise (Hooked doubles x first);
    for a text case, the text that does."""
    if case in ("text", "textscalar"):
        return b"fail"
    return FAIL / 2 if case == "hooked" else FAIL


def failing_json(case):
    """A JSON body's value for the one input that makes the case's predict raise."""
    if case in ("text", "textscalar"):
        return "fail"
    return [failing(case), 1, 2, 3]


def json_value(case, value, i=0):
    """A row's value as a JSON body carries it: text for BYTES (for the [1] case every
    other one as a list of one string, as a KServe-minded client sends it), lists else."""
    if isinstance(value, bytes):
        text = value.decode("utf-8")
        return [text] if case == "text" and i % 2 else text
    return value.tolist()


def as_json(value):
    """What an answer's value reads as in JSON: bytes as text, arrays as lists."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, dict):
        return value
    return np.asarray(value).tolist()


def as_string(value):
    """A BYTES output's value as Triton carries it: text as UTF-8, other values as JSON."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value).encode("utf-8")


checks = 0


def check(condition, message):
    global checks
    checks += 1
    if not condition:
        raise AssertionError(message)


def import_file(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def reference(data, case):
    """The case's class, constructed directly from the data folder's file."""
    file, cls, options = CASES[case]
    module = import_file(os.path.join(data, file), "reference_" + case)
    return getattr(module, cls)(**options)


def alone(ref, rows):
    """What the class gives for one request's rows alone: each row's outputs."""
    if hasattr(ref, "preprocess"):
        rows = [ref.preprocess(dict(row)) for row in rows]
    names = list(type(ref).inputs)  # what predict takes (preprocess made it)
    out = ref.predict({n: np.stack([np.asarray(r[n]) for r in rows]) for n in names})
    answers = [{n: np.asarray(v)[i] for n, v in out.items()} for i in range(len(rows))]
    if hasattr(ref, "postprocess"):
        answers = [ref.postprocess(a) for a in answers]
    return answers


def request_rows(case, count, seed):
    """`count` different rows of the case's inputs (without the batch dimension)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        if case == "ragged":  # tokens 1..9 (0 pads), a length of its own per request
            rows.append({"tokens": rng.integers(1, 10, size=2 + (seed + i) % 5)})
        elif case in ("text", "textscalar"):
            rows.append({"text": TEXTS[(seed + i) % len(TEXTS)].encode("utf-8")})
        else:  # halves: every product and sum below is exact in float32
            rows.append({"x": (rng.integers(-8, 9, size=4) / 2).astype(np.float32)})
    return rows


def read_tensors(text, which):
    """The `which` ("input" or "output") blocks of a config.pbtxt without comments: name,
    data_type, and dims as the model sees them: a reshape's shape where there is one."""
    start = text.index("\n%s [" % which)
    depth, end = 0, start
    for end in range(text.index("[", start), len(text)):
        depth += {"[": 1, "]": -1}.get(text[end], 0)
        if depth == 0:
            break
    # A block's own braces: a reshape's { shape: [ ] } inside it is kept.
    blocks = re.findall(r"\{((?:[^{}]|\{[^{}]*\})*)\}", text[text.index("[", start) + 1:end])
    tensors = []
    for block in blocks:
        dims = re.search(r"dims: \[([^\]]*)\]", block).group(1)
        reshape = re.search(r"reshape: \{ shape: \[([^\]]*)\] \}", block)
        if reshape:
            dims = reshape.group(1)
        tensors.append({"name": re.search(r'name: "([^"]*)"', block).group(1),
                        "data_type": re.search(r"data_type: (\w+)", block).group(1),
                        "dims": [int(d) for d in dims.split(",") if d.strip()]})
    return tensors


def read_config(config_text):
    """A config.pbtxt's inputs and outputs, as read_tensors gives them."""
    text = "\n".join(line for line in config_text.splitlines() if not line.strip().startswith("#"))
    return {"input": read_tensors(text, "input"), "output": read_tensors(text, "output")}


# --- Triton's Python backend -------------------------------------------------------


def triton_case(exports, data, case):
    folder = os.path.join(exports, "triton-" + case)
    name = os.listdir(folder)[0]
    config = read_config(open(os.path.join(folder, name, "config.pbtxt")).read())
    module = import_file(os.path.join(folder, name, "1", "model.py"), "triton_model_" + case)
    model = module.TritonPythonModel()
    model.initialize(pb_utils.initialize_args(config, folder, name))
    ref = reference(data, case)

    def requests_of(groups):
        """Triton's requests, each input as config.pbtxt makes the model see it: BYTES as
        an object array of bytes, [rows] with a reshape to [ ], [rows, 1] without."""
        requests = []
        for rows in groups:
            tensors = []
            for spec in config["input"]:
                n = spec["name"]
                if spec["data_type"] == "TYPE_STRING":
                    array = np.array([r[n] for r in rows], dtype=object)
                    array = array.reshape([len(rows)] + spec["dims"])
                else:
                    array = np.stack([np.asarray(r[n]) for r in rows])
                tensors.append(pb_utils.Tensor(n, array))
            requests.append(pb_utils.InferenceRequest(tensors))
        return requests

    # Four requests, the second carrying two rows; a ragged case's requests differ in length.
    groups = [request_rows(case, 1, 1), request_rows(case, 2, 2), request_rows(case, 1, 3),
              request_rows(case, 1, 4)]
    if case == "ragged":
        groups[1][1]["tokens"] = np.minimum(groups[1][0]["tokens"] + 1, 9)  # a rectangle
    responses = pb_utils.run_execute(model, requests_of(groups), config)
    for rows, response in zip(groups, responses):
        check(not response.has_error(), "triton %s: %s" % (case, response.error() and
                                                           response.error().message()))
        got = {t.name(): t.as_numpy() for t in response.output_tensors()}
        want = alone(ref, rows)
        for out in config["output"]:
            if out["data_type"] == "TYPE_STRING":
                stacked = np.array([as_string(a[out["name"]]) for a in want], dtype=object)
                stacked = stacked.reshape([len(want)] + out["dims"])
            else:
                stacked = np.stack([np.asarray(a[out["name"]]) for a in want])
            check(got[out["name"]].shape == stacked.shape and
                  np.array_equal(got[out["name"]], stacked),
                  "triton %s: output %s is %s, alone %s" % (case, out["name"],
                                                           got[out["name"]], stacked))
    seen = model.model.batches
    check(len(seen) == 1, "triton %s: %d predicts for one execute: %s" % (case, len(seen), seen))
    if case == "ragged":
        longest = max(len(r["tokens"]) for g in groups for r in g)
        check(seen[0] == [5, longest], "triton ragged: predict saw %s" % seen[0])
    else:
        check(seen[0] == 5, "triton %s: predict saw a batch of %s, not 5" % (case, seen[0]))
        # A predict that raises answers every request of the execute with the error.
        if case in ("text", "textscalar"):
            groups[2][0]["text"] = failing(case)
        else:
            groups[2][0]["x"] = np.full(4, failing(case), dtype=np.float32)
        responses = pb_utils.run_execute(model, requests_of(groups), config)
        for response in responses:
            check(response.has_error(), "triton %s: a failed predict answered outputs" % case)
            message = response.error().message()
            check("%s.predict raised ValueError" % CASES[case][1] in message and "-999" in message,
                  "triton %s: error %r" % (case, message))
    model.finalize()


# --- TorchServe ----------------------------------------------------------------------


def torchserve_case(exports, data, case):
    folder = os.path.join(exports, "torchserve-" + case)
    entry, context = fake_torchserve.load_handler_module(folder, "torchserve_handler.py", 8)
    ref = reference(data, case)
    rows = request_rows(case, 4, 10)
    name = list(rows[0])[0]
    # The body in the forms TorchServe hands it: parsed JSON, bytes, text, {"data": ...}.
    values = [json_value(case, row[name], i) for i, row in enumerate(rows)]
    batch = [{"body": {name: values[0]}},
             {"data": json.dumps({name: values[1]}).encode()},
             {"body": json.dumps({"data": values[2]})},
             {"body": bytearray(json.dumps({name: values[3]}).encode())}]
    answers = fake_torchserve.predict(entry, context, batch)
    for row, (code, body) in zip(rows, answers):
        want = {k: as_json(v) for k, v in alone(ref, [row])[0].items()}
        check(code == 200 and body == want, "torchserve %s: %s %s, alone %s" % (case, code,
                                                                                 body, want))
    module = sys.modules["torchserve_handler"]
    seen = module._service.model.batches
    check(len(seen) == 1, "torchserve %s: %d predicts for one batch" % (case, len(seen)))
    # A request that cannot be read answers 400 alone; the others are answered.
    bad = batch[:2] + [{"body": {"nothing": [1]}}] + batch[3:]
    answers = fake_torchserve.predict(entry, context, bad)
    check([a[0] for a in answers] == [200, 200, 400, 200], "torchserve %s: %r" % (case, answers))
    check("input %r is missing" % name in answers[2][1]["error"], "torchserve: %r" % (answers[2],))
    if case in ("text", "textscalar"):  # a BYTES input is one string a request
        answers = fake_torchserve.predict(entry, context, [{"body": {name: ["a", "b"]}}])
        check(answers[0][0] == 400 and "one string a request; got 2 values" in
              answers[0][1]["error"], "torchserve %s: two strings answered %r" % (case, answers))
    if case != "ragged":
        batch[1] = {"body": {name: failing_json(case)}}
        answers = fake_torchserve.predict(entry, context, batch)
        for code, body in answers:
            check(code == 500 and "%s.predict raised ValueError" % CASES[case][1] in body["error"],
                  "torchserve %s: %s %s" % (case, code, body))


# --- Ray Serve -----------------------------------------------------------------------


def rayserve_case(exports, data, case):
    folder = os.path.join(exports, "rayserve-" + case)
    before = len(fake_serve.deployments)
    module = import_file(os.path.join(folder, "deployment.py"), "ray_deployment_" + case)
    check(len(fake_serve.deployments) == before + 1, "rayserve: no @serve.deployment")
    options = fake_serve.deployments[-1][1]
    check(options["num_replicas"] == 2 and options["max_ongoing_requests"] == 16 and
          options["max_queued_requests"] == 64, "rayserve %s: options %s" % (case, options))
    replica = module.app.instantiate()
    ref = reference(data, case)
    rows = request_rows(case, 5, 20)
    name = list(rows[0])[0]

    loop = asyncio.new_event_loop()  # a replica's one event loop

    def send(bodies):
        async def together():
            return await asyncio.gather(*(replica(Request(body)) for body in bodies))
        return loop.run_until_complete(together())

    bodies = [{name: json_value(case, r[name], i)} for i, r in enumerate(rows)]
    bodies[1] = {"data": bodies[1][name]}
    answers = send(bodies)
    for row, answer in zip(rows, answers):
        want = {k: as_json(v) for k, v in alone(ref, [row])[0].items()}
        check(answer == want, "rayserve %s: %s, alone %s" % (case, answer, want))
    seen = replica.model.batches
    check(len(seen) == 1, "rayserve %s: %d predicts for 5 requests: %s" % (case, len(seen), seen))
    # A body that is not JSON answers 400 alone.
    answers = send(bodies[:2] + [b"not json"])
    check(isinstance(answers[2], JSONResponse) and answers[2].status_code == 400,
          "rayserve %s: a bad body answered %r" % (case, answers[2]))
    check(not isinstance(answers[0], JSONResponse), "rayserve %s: %r" % (case, answers[0]))
    if case != "ragged":
        bodies[3] = {name: failing_json(case)}
        answers = send(bodies)
        for answer in answers:
            check(isinstance(answer, JSONResponse) and answer.status_code == 500,
                  "rayserve %s: a failed predict answered %r" % (case, answer))
            error = json.loads(answer.body)["error"]
            check("%s.predict raised ValueError" % CASES[case][1] in error, error)
    loop.close()


# --- conversions: what preprocess returns, and what a JSON answer carries -------------

# Loose's rows (tests/export/python_exports.sh writes the class): x[0] 7, 8, 9 fail in
# preprocess, 4, 5, 6 in postprocess; the others are answered.
LOOSE_GOOD = [[1, 2, 3, 1], [2, -1, 4, -1], [0.5, 0, 1, 0], [3, 5, 6, 2.5]]
LOOSE_BAD = {
    7: ("Loose.preprocess's input 'n': expected INT64 (int64), got float64 values", 400),
    8: ("Loose.preprocess's input 'x': expected shape [4] (-1 varies), got [3]", 400),
    9: ("Loose.preprocess's input 'flag': expected BOOL (bool), got str", 400),
    4: ("Loose.postprocess returned list; expected a dict of output name -> value", 500),
    5: ("Loose.postprocess's output 'label': bytes that are not UTF-8 text", 500),
    6: ("Loose.postprocess's output 'names': object, which JSON cannot carry", 500),
}


def loose_json(x):
    """What Loose answers for row `x` as JSON, worked out here: plain numbers and text."""
    y = [2.0 * v for v in x]
    flag = not x[3] > 0
    n = [int(x[1]) + 1, int(x[2]) + 1]
    return {"y": y, "total": sum(y), "n": n, "flag": flag, "label": "on" if flag else "off",
            "names": ["n", str(n[0])]}


def same_json(got, want):
    """Equal, with JSON's own types: no numpy values, bools as bools."""
    try:
        return json.loads(json.dumps(got)) == want and json.dumps(got) == json.dumps(want)
    except (TypeError, ValueError):
        return False


def raises(function, *words):
    """function() raises an exception whose message holds every one of `words`."""
    try:
        function()
    except Exception as e:
        return all(w in str(e) for w in words)
    return False


def conversion_checks(module, label):
    """The wrapper's as_declared and plain, called directly."""
    declared = module.as_declared

    def same(value, dtype, shape, want):
        got = declared(value, dtype, shape, "v")
        check(isinstance(got, np.ndarray) and got.dtype == np.dtype(dtype) and
              got.shape == np.asarray(want, dtype=dtype).shape and
              got.tolist() == np.asarray(want, dtype=dtype).tolist(),
              "%s: as_declared(%r, %s, %s) gave %r" % (label, value, dtype, shape, got))

    same([1, 2.5], "float32", [2], [1, 2.5])
    same(np.array([1.0, -2.0]), "int64", [-1], [1, -2])
    same(np.array([1, 2], dtype=np.int32), "float64", [2], [1, 2])
    same([0, 1, True], "bool", [3], [False, True, True])
    same(np.int64(3), "int32", [], 3)
    same(np.array([[1, 2, 3]], dtype=np.uint8), "int64", [-1, 3], [[1, 2, 3]])
    for value, dtype, shape, words in [
            ([1.5], "int64", [1], ("v: expected INT64 (int64), got float64",)),
            ([2], "bool", [1], ("expected BOOL (bool), got int64",)),
            ([300], "uint8", [1], ("expected UINT8 (uint8)",)),
            ([float("nan")], "int32", [1], ("expected INT32 (int32)",)),
            ("1.5", "float32", [], ("expected FP32 (float32), got str",)),
            ([None, 1], "float32", [2], ("expected FP32 (float32), got object",)),
            ([[1, 2], [3]], "float32", [-1, -1], ("cannot be read as an array",)),
            ([1, 2, 3], "float32", [4], ("v: expected shape [4] (-1 varies), got [3]",)),
            ([1], "object", [1], ("v: expected BYTES (object), got int",))]:
        check(raises(lambda: declared(value, dtype, shape, "v"), *words),
              "%s: as_declared(%r, %s, %s) did not refuse it with %s" % (
                  label, value, dtype, shape, words))
    for value, shape, want in [("é", [], "é".encode()), (b"ab", [1], [b"ab"]),
                               (["a", b"b"], [2], [b"a", b"b"]),
                               (np.array(["x"]), [1], [b"x"]), (np.array([b"y"]), [1], [b"y"]),
                               (bytearray(b"z"), [], b"z")]:
        got = declared(value, "object", shape, "v")
        check(got.dtype == object and got.shape == np.asarray(want, dtype=object).shape and
              all(type(v) is bytes for v in got.reshape(-1)) and
              got.reshape(-1).tolist() == np.asarray(want, dtype=object).reshape(-1).tolist(),
              "%s: as_declared(%r, object, %s) gave %r" % (label, value, shape, got))

    got = module.plain({"a": np.float32(1.5), "b": np.arange(3), "c": (b"x", np.bool_(True)),
                        "d": np.array([b"p", "q"], dtype=object), 7: None}, "w")
    check(same_json(got, {"a": 1.5, "b": [0, 1, 2], "c": ["x", True], "d": ["p", "q"],
                          "7": None}) and type(got["b"][0]) is int and 7 in got,
          "%s: plain gave %r" % (label, got))
    for value, words in [(b"\xff", ("w: bytes that are not UTF-8 text",)),
                         ({(1, 2): 1}, ("w: a key of type tuple",)),
                         ({"s": {1, 2}}, ("w: set, which JSON cannot carry",)),
                         (np.array([object()], dtype=object), ("w: object, which JSON",)),
                         (np.complex64(1j), ("w: complex",))]:
        check(raises(lambda: module.plain(value, "w"), *words),
              "%s: plain(%r) did not refuse it with %s" % (label, value, words))


def loose_triton(exports):
    folder = os.path.join(exports, "triton-loose")
    config = read_config(open(os.path.join(folder, "loose_handler", "config.pbtxt")).read())
    module = import_file(os.path.join(folder, "loose_handler", "1", "model.py"),
                         "triton_model_loose")
    conversion_checks(module, "triton")
    model = module.TritonPythonModel()
    model.initialize(pb_utils.initialize_args(config, folder, "loose_handler"))
    # One request of two good rows, one of a good row and a bad one, then one a row.
    groups = [LOOSE_GOOD[:2], [LOOSE_GOOD[2], [7, 1, 2, 1]], [LOOSE_GOOD[3]]] + [
        [[k, 1, 2, 1]] for k in sorted(LOOSE_BAD)]
    requests = [pb_utils.InferenceRequest([pb_utils.Tensor("x", np.array(g, dtype=np.float32))])
                for g in groups]
    responses = pb_utils.run_execute(model, requests, config)
    check(model.model.batches == [3 + 3],
          "triton loose: predict saw %s, not one batch of 6" % model.model.batches)
    for rows, response in zip(groups, responses):
        bad = [int(r[0]) for r in rows if int(r[0]) in LOOSE_BAD and r[0] != 5]
        if bad:  # Triton answers bytes as they are: 5's label is no fault here
            check(response.has_error() and LOOSE_BAD[bad[0]][0] in response.error().message(),
                  "triton loose %s: %r" % (rows, response.error() and response.error().message()))
            continue
        check(not response.has_error(),
              "triton loose %s: %s" % (rows, response.error() and response.error().message()))
        got = {t.name(): t.as_numpy() for t in response.output_tensors()}
        want = [loose_json(r) for r in rows]
        check(got["y"].dtype == np.float32 and got["y"].tolist() == [w["y"] for w in want] and
              got["total"].dtype == np.float64 and
              got["total"].tolist() == [w["total"] for w in want] and
              got["n"].dtype == np.int64 and got["n"].tolist() == [w["n"] for w in want] and
              got["flag"].dtype == np.bool_ and got["flag"].tolist() == [w["flag"] for w in want],
              "triton loose %s: %s" % (rows, got))
        labels = [b"\xff" if r[0] == 5 else w["label"].encode() for r, w in zip(rows, want)]
        check(got["label"].tolist() == labels and
              got["names"].tolist() == [json.dumps(w["names"]).encode() for w in want],
              "triton loose %s: %s, %s" % (rows, got["label"], got["names"]))
    model.finalize()


def loose_torchserve(exports):
    folder = os.path.join(exports, "torchserve-loose")
    entry, context = fake_torchserve.load_handler_module(folder, "torchserve_handler.py", 8)
    conversion_checks(sys.modules["torchserve_handler"], "torchserve")
    rows = [LOOSE_GOOD[0], [7, 1, 2, 1], [8, 1, 2, 1], [9, 1, 2, 1], LOOSE_GOOD[1],
            [4, 1, 2, 1], [5, 1, 2, 1], [6, 1, 2, 1]]
    answers = fake_torchserve.predict(entry, context, [{"body": {"x": r}} for r in rows])
    seen = sys.modules["torchserve_handler"]._service.model.batches
    check(seen == [5], "torchserve loose: predict saw %s, not one batch of 5" % seen)
    for row, (code, body) in zip(rows, answers):
        if row[0] in LOOSE_BAD:
            words, status = LOOSE_BAD[row[0]]
            check(code == status and words in body["error"],
                  "torchserve loose %s: %s %s" % (row, code, body))
        else:
            check(code == 200 and same_json(body, loose_json(row)),
                  "torchserve loose %s: %s %s, want %s" % (row, code, body, loose_json(row)))


def loose_rayserve(exports):
    module = import_file(os.path.join(exports, "rayserve-loose", "deployment.py"),
                         "ray_deployment_loose")
    conversion_checks(module, "rayserve")
    replica = module.app.instantiate()
    rows = LOOSE_GOOD + [[k, 1, 2, 1] for k in sorted(LOOSE_BAD)]
    loop = asyncio.new_event_loop()

    async def together():
        return await asyncio.gather(*(replica(Request({"x": r})) for r in rows))

    answers = loop.run_until_complete(together())
    loop.close()
    check(replica.model.batches == [7],
          "rayserve loose: predict saw %s, not one batch of 7" % replica.model.batches)
    for row, answer in zip(rows, answers):
        if row[0] in LOOSE_BAD:
            words, status = LOOSE_BAD[row[0]]
            check(isinstance(answer, JSONResponse) and answer.status_code == status and
                  words in json.loads(answer.body)["error"],
                  "rayserve loose %s: %r" % (row, getattr(answer, "body", answer)))
        else:  # Ray Serve writes a dict as JSON
            check(not isinstance(answer, JSONResponse) and same_json(answer, loose_json(row)),
                  "rayserve loose %s: %r, want %s" % (row, answer, loose_json(row)))


def main(argv):
    exports, data = argv[1], argv[2]
    for case in CASES:
        triton_case(exports, data, case)
        torchserve_case(exports, data, case)
        rayserve_case(exports, data, case)
    loose_triton(exports)
    loose_torchserve(exports)
    loose_rayserve(exports)
    print("python wrappers: %d checks passed (Triton, TorchServe, Ray Serve stand-ins; %s,"
          " loose)" % (checks, ", ".join(CASES)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
