// SPDX-License-Identifier: GPL-3.0-or-later
// A Python model for Ray Serve: a deployment (deployment.py) whose batched
// method runs the class, serve_config.yaml as for a TorchScript model, and
// FILE.py, the handler as given, deployed from the same directory.

#include "export/python_wrapper.h"

namespace batchscope::export_detail {

namespace {

// Written against Ray Serve's documented API: @serve.deployment(...) on a
// class, @serve.batch(max_batch_size=..., batch_wait_timeout_s=...) on an
// async method that takes a list and returns a list of the same length (an
// exception fails every call of that batch), starlette's Request and
// JSONResponse.
constexpr const char* kDeploymentBody = R"PY(class BatchedModel:
    """Runs the handler's class in a Ray Serve replica: one predict per batch."""

    def __init__(self):
        self.model = load_handler(os.path.dirname(os.path.abspath(__file__)))

)PY";

constexpr const char* kDeploymentCall = R"PY(    async def infer(self, rows: list) -> list:
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
)PY";

}  // namespace

Expected<std::vector<ExportFile>> rayserve_python_files(const Checked& c) {
  if (Status s = check_python_input(c, "rayserve", {"deployment.py", "serve_config.yaml"}); !s) {
    return s.error();
  }
  const Options& o = c.o();
  const PythonHandlerFile& h = *c.in.python;
  std::string py;
  py += "# Ray Serve deployment (deployment.py), exported from Batchscope.\n";
  py += comment("It runs " + handler_words(c) + ", kept beside it as given. Deploy with " +
                "serve_config.yaml from the directory holding this file and " + h.file_name +
                ". Written for Ray 2.x releases that have max_ongoing_requests and "
                "max_queued_requests (older ones call the first max_concurrent_queries and "
                "lack the second).");
  py += context_block(c);
  py += rayserve_notes(c);
  py += comment(
      "A request's body is a JSON object of input name -> value without the batch dimension "
      "({\"data\": value} for a class of one input). __call__ runs the class's preprocess "
      "where it has one; @serve.batch gathers the rows for infer(), which stacks them "
      "(padded to the longest where an input varies), calls predict once and splits the "
      "outputs back (cutting padding off); __call__ runs postprocess where the class has one "
      "and answers the outputs as JSON. A request that cannot be read (or whose preprocess "
      "fails) answers 400 alone, one whose postprocess fails or answers what JSON cannot "
      "carry 500 alone; when predict fails, every request of the batch answers 500; each "
      "with {\"error\": message}.");
  py += "\n";
  py += python_module_head(c,
                           "from ray import serve\n"
                           "from starlette.requests import Request\n"
                           "from starlette.responses import JSONResponse\n");
  py += "\n\n";
  py += rayserve_decorator(c);
  py += kDeploymentBody;
  py += "    @serve.batch(max_batch_size=" + whole(o.max_batch_size) +
        ", batch_wait_timeout_s=" + exact_decimal(o.max_wait_us, 6) + ")\n";
  py += kDeploymentCall;
  return std::vector<ExportFile>{
      ExportFile{"deployment.py", std::move(py)},
      ExportFile{"serve_config.yaml", rayserve_config_yaml(c, "deployment.py and " + h.file_name)},
      ExportFile{h.file_name, h.source},
  };
}

}  // namespace batchscope::export_detail
