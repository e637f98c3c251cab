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
      "its rows' outputs, converted to the types config.pbtxt declares. A request that "
      "cannot be read, or whose preprocess or postprocess fails, answers its error alone; "
      "when predict fails, every request of the batch answers the error.");
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
