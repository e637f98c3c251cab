// SPDX-License-Identifier: GPL-3.0-or-later
// A Python model for Triton's Python backend: a model repository folder
// NAME/ with config.pbtxt (backend "python"), 1/model.py (a TritonPythonModel
// that runs the class) and 1/FILE.py, the handler as given.

#include "export/python_wrapper.h"

namespace batchscope::export_detail {

namespace {

// Written against the Python backend's documented API: pb_utils.
// get_input_tensor_by_name(request, name).as_numpy(), pb_utils.Tensor(name,
// array), pb_utils.InferenceResponse(output_tensors=[...]) and
// InferenceResponse(error=pb_utils.TritonError(message)).
constexpr const char* kTritonModel = R"PY(

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
)PY";

}  // namespace

Expected<std::vector<ExportFile>> triton_python_files(const Checked& c) {
  if (Status s = check_python_input(c, "triton", {"model.py"}); !s) return s.error();
  const std::string name = model_name(c.in, "model");
  const PythonHandlerFile& h = *c.in.python;
  std::string py;
  py += "# Triton Inference Server Python backend model (model.py), exported from Batchscope.\n";
  py += comment("It runs " + handler_words(c) + ", copied beside it as given. config.pbtxt, " +
                "in the folder above, sets the batching; Triton's Python backend (backend " +
                "\"python\") runs this file in one process per model instance.");
  py += context_block(c);
  py += comment(
      "Triton's dynamic batcher hands execute() the requests of a batch, and a request may "
      "carry several rows (a BYTES input's row is one string; with dims [ 1 ], in an array "
      "of one, which preprocess gets as the bytes alone). execute() runs the class's "
      "preprocess on each row where the class has one, stacks every row (padded to the longest "
      "where an input varies), calls "
      "predict once, splits the outputs back by each request's rows (cutting padding off), "
      "runs postprocess on each row where the class has one, and answers each request with "
      "its rows' outputs. An exception answers every request of that batch with the error.");
  py += "\n";
  py += python_module_head(c, "import triton_python_backend_utils as pb_utils\n");
  py += kTritonModel;
  return std::vector<ExportFile>{
      ExportFile{name + "/config.pbtxt", triton_config(c, true)},
      ExportFile{name + "/1/model.py", std::move(py)},
      ExportFile{name + "/1/" + h.file_name, h.source},
  };
}

}  // namespace batchscope::export_detail
