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
}
FAIL = -999.0  # a toy row whose first element is this makes predict raise


def failing(case):
    """A row's first element that makes the case's predict raise (Hooked doubles x first)."""
    return FAIL / 2 if case == "hooked" else FAIL
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
    names = list(type(ref).inputs)
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
        else:  # halves: every product and sum below is exact in float32
            rows.append({"x": (rng.integers(-8, 9, size=4) / 2).astype(np.float32)})
    return rows


def read_outputs(config_text):
    """The output blocks of a config.pbtxt: name, data_type, dims."""
    text = "\n".join(line for line in config_text.splitlines() if not line.strip().startswith("#"))
    start = text.index("\noutput [")
    depth, end = 0, start
    for end in range(text.index("[", start), len(text)):
        depth += {"[": 1, "]": -1}.get(text[end], 0)
        if depth == 0:
            break
    outputs = []
    for block in re.findall(r"\{([^{}]*)\}", text[start:end]):
        dims = re.search(r"dims: \[([^\]]*)\]", block).group(1)
        outputs.append({"name": re.search(r'name: "([^"]*)"', block).group(1),
                        "data_type": re.search(r"data_type: (\w+)", block).group(1),
                        "dims": [int(d) for d in dims.split(",")]})
    return {"output": outputs}


# --- Triton's Python backend -------------------------------------------------------


def triton_case(exports, data, case):
    folder = os.path.join(exports, "triton-" + case)
    name = os.listdir(folder)[0]
    config = read_outputs(open(os.path.join(folder, name, "config.pbtxt")).read())
    module = import_file(os.path.join(folder, name, "1", "model.py"), "triton_model_" + case)
    model = module.TritonPythonModel()
    model.initialize(pb_utils.initialize_args(config, folder, name))
    ref = reference(data, case)

    def requests_of(groups):
        requests = []
        for rows in groups:
            tensors = [pb_utils.Tensor(n, np.stack([np.asarray(r[n]) for r in rows]))
                       for n in rows[0]]
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
            stacked = np.stack([np.asarray(a[out["name"]]) for a in want])
            check(np.array_equal(got[out["name"]], stacked),
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
    batch = [{"body": {name: rows[0][name].tolist()}},
             {"data": json.dumps({name: rows[1][name].tolist()}).encode()},
             {"body": json.dumps({"data": rows[2][name].tolist()})},
             {"body": bytearray(json.dumps({name: rows[3][name].tolist()}).encode())}]
    answers = fake_torchserve.predict(entry, context, batch)
    for row, (code, body) in zip(rows, answers):
        want = {k: np.asarray(v).tolist() for k, v in alone(ref, [row])[0].items()}
        check(code == 200 and body == want, "torchserve %s: %s %s, alone %s" % (case, code,
                                                                                 body, want))
    module = sys.modules["torchserve_handler"]
    seen = module._service.model.batches
    check(len(seen) == 1, "torchserve %s: %d predicts for one batch" % (case, len(seen)))
    # A request that cannot be read answers 400 alone; the others are answered.
    bad = batch[:2] + [{"body": {"nothing": [1]}}] + batch[3:]
    answers = fake_torchserve.predict(entry, context, bad)
    check([a[0] for a in answers] == [200, 200, 400, 200], "torchserve %s: %r" % (case, answers))
    missing = ("Hooked.preprocess raised KeyError: %r" if case == "hooked"
               else "input %r is missing") % name
    check(missing in answers[2][1]["error"], "torchserve: %r" % (answers[2],))
    if case != "ragged":
        batch[1] = {"body": {name: [failing(case), 1, 2, 3]}}
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

    bodies = [{name: r[name].tolist()} for r in rows]
    bodies[1] = {"data": bodies[1][name]}
    answers = send(bodies)
    for row, answer in zip(rows, answers):
        want = {k: np.asarray(v).tolist() for k, v in alone(ref, [row])[0].items()}
        check(answer == want, "rayserve %s: %s, alone %s" % (case, answer, want))
    seen = replica.model.batches
    check(len(seen) == 1, "rayserve %s: %d predicts for 5 requests: %s" % (case, len(seen), seen))
    # A body that is not JSON answers 400 alone.
    answers = send(bodies[:2] + [b"not json"])
    check(isinstance(answers[2], JSONResponse) and answers[2].status_code == 400,
          "rayserve %s: a bad body answered %r" % (case, answers[2]))
    check(not isinstance(answers[0], JSONResponse), "rayserve %s: %r" % (case, answers[0]))
    if case != "ragged":
        bodies[3] = {name: [failing(case), 0, 0, 0]}
        answers = send(bodies)
        for answer in answers:
            check(isinstance(answer, JSONResponse) and answer.status_code == 500,
                  "rayserve %s: a failed predict answered %r" % (case, answer))
            error = json.loads(answer.body)["error"]
            check("%s.predict raised ValueError" % CASES[case][1] in error, error)
    loop.close()


def main(argv):
    exports, data = argv[1], argv[2]
    for case in CASES:
        triton_case(exports, data, case)
        torchserve_case(exports, data, case)
        rayserve_case(exports, data, case)
    print("python wrappers: %d checks passed (Triton, TorchServe, Ray Serve stand-ins; %s)"
          % (checks, ", ".join(CASES)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
