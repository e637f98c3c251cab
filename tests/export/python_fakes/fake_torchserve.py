# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for TorchServe's side of a custom handler, from its documentation.

Context: system_properties (model_dir, gpu_id, batch_size), manifest and
set_response_status(code, phrase, idx). load_handler_module() follows the
loader's rule: a module-level handle(data, context) is the entry point,
called once with data None to load; else the module's one class, with
initialize(context) and handle(data, context). predict() hands a batch to the
entry point and answers each request as TorchServe would: a status and a
body, every request 503 when the entry point raises or answers a value that
json.dumps cannot write (TorchServe writes each answer so after the handler
returns, outside the handler's own error handling).
"""

import importlib.util
import inspect
import json
import os
import sys


class Context:
    def __init__(self, model_dir, batch_size):
        self.manifest = {"model": {"handler": "torchserve_handler.py"}}
        self.system_properties = {"model_dir": model_dir, "gpu_id": None,
                                  "batch_size": batch_size}
        self.statuses = {}

    def set_response_status(self, code=200, phrase="", idx=0):
        self.statuses[idx] = (code, phrase)


def load_handler_module(model_dir, handler_file, batch_size):
    """Imports the handler as TorchServe does (by module name, the model's folder on the
    path) and returns (entry point, context)."""
    if model_dir not in sys.path:
        sys.path.insert(0, model_dir)
    name = os.path.splitext(handler_file)[0]
    spec = importlib.util.spec_from_file_location(name, os.path.join(model_dir, handler_file))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    context = Context(model_dir, batch_size)
    if hasattr(module, "handle"):
        entry = module.handle
        entry(None, context)
        return entry, context
    classes = [c for _, c in inspect.getmembers(module, inspect.isclass)
               if c.__module__ == module.__name__]
    if len(classes) != 1:
        raise ValueError("Expected only one class in custom service code or a function entry"
                         " point %s" % classes)
    service = classes[0]()
    service.initialize(context)
    return service.handle, context


def predict(entry, context, batch):
    """One batch through the entry point: a list of (status, JSON body) per request."""
    context.statuses = {}
    try:
        answers = entry(batch, context)
    except Exception:  # TorchServe answers every request of the batch
        return [(503, {"message": "Prediction failed"}) for _ in batch]
    if not isinstance(answers, list) or len(answers) != len(batch):
        return [(503, {"message": "number of batch response mismatched"}) for _ in batch]
    out = []
    for i, answer in enumerate(answers):
        code, _ = context.statuses.get(i, (200, ""))
        try:
            body = answer if isinstance(answer, (bytes, str)) else json.dumps(answer)
        except (TypeError, ValueError):  # the worker cannot write the batch's answers
            return [(503, {"message": "Prediction failed"}) for _ in batch]
        out.append((code, json.loads(body)))
    return out
