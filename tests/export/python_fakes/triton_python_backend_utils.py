# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for Triton's Python backend utilities (pb_utils), from its documentation.

Only what an exported model.py uses: Tensor(name, array) with name() and
as_numpy(), InferenceRequest with inputs(), get_input_tensor_by_name(),
InferenceResponse(output_tensors=..., error=...) and TritonError(message).
run_execute() plays Triton's part around execute().
"""

import json

import numpy as np

# The model configuration's data types by numpy dtype, as Triton's datatype
# table gives them (TYPE_STRING is numpy's object dtype).
_TYPES = {
    np.dtype(np.bool_): "TYPE_BOOL", np.dtype(np.uint8): "TYPE_UINT8",
    np.dtype(np.uint16): "TYPE_UINT16", np.dtype(np.uint32): "TYPE_UINT32",
    np.dtype(np.uint64): "TYPE_UINT64", np.dtype(np.int8): "TYPE_INT8",
    np.dtype(np.int16): "TYPE_INT16", np.dtype(np.int32): "TYPE_INT32",
    np.dtype(np.int64): "TYPE_INT64", np.dtype(np.float16): "TYPE_FP16",
    np.dtype(np.float32): "TYPE_FP32", np.dtype(np.float64): "TYPE_FP64",
    np.dtype(object): "TYPE_STRING",
}


class TritonModelException(Exception):
    pass


class Tensor:
    def __init__(self, name, numpy_array):
        if not isinstance(name, str):
            raise TritonModelException("a tensor's name must be a string, not %r" % (name,))
        if not isinstance(numpy_array, np.ndarray):
            raise TritonModelException("tensor %r: expected a numpy array, got %s"
                                       % (name, type(numpy_array).__name__))
        if numpy_array.dtype not in _TYPES:
            raise TritonModelException("tensor %r: dtype %s has no Triton type"
                                       % (name, numpy_array.dtype))
        self._name = name
        self._array = numpy_array
        self.triton_dtype = _TYPES[numpy_array.dtype]

    def name(self):
        return self._name

    def as_numpy(self):
        return self._array


class InferenceRequest:
    def __init__(self, inputs, requested_output_names=()):
        self._inputs = list(inputs)
        self._requested = list(requested_output_names)

    def inputs(self):
        return self._inputs

    def requested_output_names(self):
        return self._requested


def get_input_tensor_by_name(inference_request, name):
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


class TritonError:
    def __init__(self, message, code=None):
        self._message = message
        self._code = code

    def message(self):
        return self._message


class InferenceResponse:
    def __init__(self, output_tensors=None, error=None):
        if error is None and not isinstance(output_tensors, list):
            raise TritonModelException('"output_tensors" must be a list')
        if error is not None and not isinstance(error, TritonError):
            raise TritonModelException("error must be a TritonError")
        self._tensors = output_tensors or []
        self._error = error

    def output_tensors(self):
        return self._tensors

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error


def run_execute(model, requests, config):
    """Calls model.execute(requests) as Triton does and checks its answer: one
    InferenceResponse per request, each with an error or with the outputs of
    `config` (the model configuration as a dict), of their types and shapes."""
    responses = model.execute(requests)
    if not isinstance(responses, list) or len(responses) != len(requests):
        raise AssertionError("execute answered %r for %d requests" % (responses, len(requests)))
    outputs = {o["name"]: o for o in config["output"]}
    for request, response in zip(requests, responses):
        if not isinstance(response, InferenceResponse):
            raise AssertionError("an answer is %s, not an InferenceResponse" % type(response))
        if response.has_error():
            continue
        rows = request.inputs()[0].as_numpy().shape[0]
        names = sorted(t.name() for t in response.output_tensors())
        if names != sorted(outputs):
            raise AssertionError("outputs %s; config.pbtxt has %s" % (names, sorted(outputs)))
        for tensor in response.output_tensors():
            want = outputs[tensor.name()]
            shape = list(tensor.as_numpy().shape)
            if tensor.triton_dtype != want["data_type"]:
                raise AssertionError("output %s is %s; config.pbtxt says %s"
                                     % (tensor.name(), tensor.triton_dtype, want["data_type"]))
            fits = len(shape) == len(want["dims"]) + 1 and shape[0] == rows and all(
                d < 0 or n == d for n, d in zip(shape[1:], want["dims"]))
            if not fits:
                raise AssertionError("output %s has shape %s for %d rows; dims %s"
                                     % (tensor.name(), shape, rows, want["dims"]))
    return responses


def initialize_args(config, repository, name):
    """The `args` Triton's Python backend gives initialize(): strings only."""
    return {
        "model_config": json.dumps(config),
        "model_instance_kind": "CPU",
        "model_instance_device_id": "0",
        "model_repository": repository,
        "model_version": "1",
        "model_name": name,
    }
