// SPDX-License-Identifier: GPL-3.0-or-later
// A Python model for TorchServe: config.properties and model-config.yaml as
// for a TorchScript model, a custom handler (torchserve_handler.py) that runs
// the class, and FILE.py, the handler as given, to archive together.

#include "export/python_wrapper.h"

namespace batchscope::export_detail {

namespace {

constexpr const char* kHandlerFile = "torchserve_handler.py";

// Written against TorchServe's documented custom handler: a class with
// initialize(context) and handle(data, context), data a list of requests,
// each a dict with "data" or "body"; context.system_properties["model_dir"]
// and context.set_response_status(code, phrase, idx). TorchServe's loader
// takes a module-level handle(data, context) first (called with data None
// once, to load), else the module's one class: this file has both, the
// function using the class.
constexpr const char* kTorchServeHandler = R"PY(

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
                answers[i] = json_answer(self.model, output)
            except Exception as e:  # this request alone
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
)PY";

}  // namespace

Expected<std::vector<ExportFile>> torchserve_python_files(const Checked& c) {
  if (Status s = check_python_input(c, "torchserve",
                                    {kHandlerFile, "config.properties", "model-config.yaml"});
      !s) {
    return s.error();
  }
  const std::string name = model_name(c.in, "model");
  const PythonHandlerFile& h = *c.in.python;
  const std::string archiver = "torch-model-archiver --model-name " + name +
                               " --version 1.0 --handler " + kHandlerFile + " --extra-files " +
                               h.file_name + " --config-file model-config.yaml";
  TorchServeWording w;
  w.archive = "MODEL_STORE/" + name + ".mar is made, in the directory holding these files, by " +
              archiver + " --export-path MODEL_STORE. " + kHandlerFile + " runs " +
              handler_words(c) +
              ". model-config.yaml carries the same per-model values inside the archive.";
  w.package = "# Package it with: " + archiver + " --export-path MODEL_STORE\n";
  w.padding = std::string(kHandlerFile) +
              " pads the batch's requests to the longest with each input's pad value and cuts "
              "each output back, as Batchscope's runner does (longest, without buckets); "
              "TorchServe batches first come first served, with no sorting by length.";
  std::vector<ExportFile> files = torchserve_config_files(c, w);

  std::string py;
  py += "# TorchServe custom handler (" + std::string(kHandlerFile) +
        "), exported from Batchscope.\n";
  py += comment("It runs " + handler_words(c) + ", archived beside it as given. Archive both: " +
                archiver + " --export-path MODEL_STORE (model-config.yaml sets the batching).");
  py += context_block(c);
  py += comment(
      "TorchServe hands handle() the requests of a batch, one row each. A request's body is "
      "a JSON object of input name -> value without the batch dimension ({\"data\": value} "
      "for a class of one input). handle() runs the class's preprocess on each request where "
      "the class has one, stacks them (padded to the longest where an input varies), calls "
      "predict once, splits the outputs back (cutting padding off), runs postprocess on each "
      "where the class has one, and answers each with its outputs as JSON. A request that "
      "cannot be read (or whose preprocess fails) answers 400 alone, one whose postprocess "
      "fails or answers what JSON cannot carry 500 alone; when predict fails, every request "
      "of the batch answers 500; each with {\"error\": message}.");
  py += "\n";
  py += python_module_head(c, "");
  py += kTorchServeHandler;
  files.push_back(ExportFile{kHandlerFile, std::move(py)});
  files.push_back(ExportFile{h.file_name, h.source});
  return files;
}

}  // namespace batchscope::export_detail
