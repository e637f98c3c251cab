// SPDX-License-Identifier: GPL-3.0-or-later
// A Python model's exports: Triton's Python backend repository folder,
// TorchServe's handler and Ray Serve's deployment compared byte for byte with
// tests/export/golden/python_toy/, what they say and where, and what is
// refused. python_exports.sh runs the wrappers themselves.
// To regenerate the goldens after a deliberate change, run
//   BATCHSCOPE_UPDATE_GOLDEN=1 build/bin/export_tests --gtest_filter='PythonExport*'

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "export/export_config.h"
#include "export/pbtxt.h"
#include "tests/export/export_fixtures.h"

namespace batchscope {
namespace {

namespace fs = std::filesystem;

bool update_python_goldens() {
  const char* v = std::getenv("BATCHSCOPE_UPDATE_GOLDEN");
  return v && *v && std::string(v) != "0";
}

std::string read_whole(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> file_names(const std::vector<ExportFile>& files) {
  std::vector<std::string> out;
  for (const ExportFile& f : files) out.push_back(f.name);
  return out;
}

const ExportFile& named_file(const std::vector<ExportFile>& files, const std::string& name) {
  for (const ExportFile& f : files) {
    if (f.name == name) return f;
  }
  static const ExportFile none;
  ADD_FAILURE() << name << " is not among the files";
  return none;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class PythonExportGolden : public ::testing::TestWithParam<ExportFormat> {};

TEST_P(PythonExportGolden, MatchesTheGoldenFiles) {
  const ExportInput in = fixture_input("python_toy");
  ASSERT_FALSE(in.python->source.empty()) << "tests/export/data/toy_handler.py was not read";
  auto files = export_config(GetParam(), in);
  ASSERT_TRUE(files.ok()) << files.error().message;
  const fs::path dir =
      fs::path(BATCHSCOPE_EXPORT_GOLDEN_DIR) / "python_toy" / export_format_name(GetParam());
  for (const ExportFile& f : *files) {
    const fs::path golden = dir / f.name;
    if (update_python_goldens()) {
      fs::create_directories(golden.parent_path());
      std::ofstream(golden, std::ios::binary) << f.text;
      continue;
    }
    ASSERT_TRUE(fs::exists(golden))
        << golden << " is missing; regenerate with BATCHSCOPE_UPDATE_GOLDEN=1";
    EXPECT_EQ(f.text, read_whole(golden))
        << "differs from " << golden << "; if intended, regenerate with BATCHSCOPE_UPDATE_GOLDEN=1";
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, PythonExportGolden,
                         ::testing::Values(ExportFormat::kTriton, ExportFormat::kTorchServe,
                                           ExportFormat::kRayServe),
                         [](const ::testing::TestParamInfo<ExportFormat>& info) {
                           return std::string(export_format_name(info.param));
                         });

TEST(PythonExport, EachServerGetsItsWrapperAndTheHandlerAsGiven) {
  const ExportInput in = fixture_input("python_toy");
  using V = std::vector<std::string>;
  const auto triton = export_config(ExportFormat::kTriton, in).value();
  EXPECT_EQ(file_names(triton), (V{"toy_handler/config.pbtxt", "toy_handler/1/model.py",
                                   "toy_handler/1/toy_handler.py"}));
  const auto ts = export_config(ExportFormat::kTorchServe, in).value();
  EXPECT_EQ(file_names(ts), (V{"config.properties", "model-config.yaml", "torchserve_handler.py",
                               "toy_handler.py"}));
  const auto ray = export_config(ExportFormat::kRayServe, in).value();
  EXPECT_EQ(file_names(ray), (V{"deployment.py", "serve_config.yaml", "toy_handler.py"}));
  for (const auto* files : {&triton, &ts, &ray}) {
    EXPECT_EQ(files->back().text, in.python->source);
  }

  const std::string config = named_file(triton, "toy_handler/config.pbtxt").text;
  EXPECT_TRUE(contains(config, "\nbackend: \"python\"\n"));
  EXPECT_FALSE(contains(config, "platform:"));
  EXPECT_TRUE(contains(config, "\nmax_batch_size: 8\n"));
  EXPECT_TRUE(contains(config, "    count: 2\n    kind: KIND_CPU\n"));
  EXPECT_TRUE(contains(config, "preferred_batch_size: [ 4 ]"));
  EXPECT_TRUE(contains(config, "max_queue_delay_microseconds: 1500"));
  EXPECT_TRUE(contains(config, "name: \"total\"\n    data_type: TYPE_FP64\n    dims: [ 1 ]"));
  auto doc = parse_pbtxt(config);
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  auto back = import_config(config, Options{});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->options, in.options);

  const std::string model = named_file(triton, "toy_handler/1/model.py").text;
  for (const char* part :
       {"import triton_python_backend_utils as pb_utils\n", "class TritonPythonModel:\n",
        "    def initialize(self, args):\n", "    def execute(self, requests):\n",
        "    def finalize(self):\n", "pb_utils.get_input_tensor_by_name(request, name)",
        ".as_numpy()", "pb_utils.InferenceResponse(output_tensors=tensors)",
        "pb_utils.InferenceResponse(error=pb_utils.TritonError(message))",
        "HANDLER_FILE = \"toy_handler.py\"\n", "HANDLER_CLASS = \"Toy\"\n",
        "    \"scale\": \"2\",\n    \"bias\": \"0.5\",\n", "    (\"x\", \"float32\", [4], 0),\n",
        "    (\"total\", \"float64\", [1]),\n",
        // What preprocess returns is converted to INPUTS' dtypes; a request's
        // own fault answers that request alone.
        "def as_declared(value, dtype, shape, what):\n",
        "row[name] = as_declared(item[name], dtype, shape,",
        "responses.append(respond(self.model, mine))",
        "            except Exception as e:  # this request alone\n"}) {
    EXPECT_TRUE(contains(model, part)) << part;
  }
  const std::string handler = named_file(ts, "torchserve_handler.py").text;
  for (const char* part :
       {"    def initialize(self, context):\n", "    def handle(self, data, context):\n",
        "def handle(data, context):\n", "context.set_response_status(code, message, index)",
        "answers[i] = json_answer(self.model, output)\n"}) {
    EXPECT_TRUE(contains(handler, part)) << part;
  }
  const std::string yaml = named_file(ts, "model-config.yaml").text;
  EXPECT_TRUE(contains(yaml,
                       "# Package it with: torch-model-archiver --model-name toy_handler "
                       "--version 1.0 --handler torchserve_handler.py --extra-files "
                       "toy_handler.py --config-file model-config.yaml --export-path "
                       "MODEL_STORE\n"));
  for (const char* part :
       {"\nminWorkers: 2\n", "\nmaxWorkers: 2\n", "\nbatchSize: 8\n", "\nmaxBatchDelay: 2\n"}) {
    EXPECT_TRUE(contains(yaml, part)) << part;
  }
  const std::string deployment = named_file(ray, "deployment.py").text;
  for (const char* part :
       {"@serve.deployment(\n    num_replicas=2,\n",
        "    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.0015)\n"
        "    async def infer(self, rows: list) -> list:\n",
        "            return json_answer(self.model, outputs)\n", "app = BatchedModel.bind()\n"}) {
    EXPECT_TRUE(contains(deployment, part)) << part;
  }
  std::string yaml_words = named_file(ray, "serve_config.yaml").text;
  for (size_t at; (at = yaml_words.find("\n# ")) != std::string::npos;) {
    yaml_words.replace(at, 3, " ");  // comment lines joined back
  }
  EXPECT_TRUE(contains(yaml_words, "holding deployment.py and toy_handler.py")) << yaml_words;
}

TEST(PythonExport, InputsOfVaryingLengthAreRaggedForTriton) {
  ExportInput in = fixture_input("python_toy");
  in.model->inputs = {TensorSpec{"tokens", DType::kInt64, {-1, -1}, false}};
  in.model->inputs[0].pad_value = -1;
  const auto files = export_config(ExportFormat::kTriton, in).value();
  const std::string config = files[0].text;
  EXPECT_TRUE(contains(config, "dims: [ -1 ]\n    allow_ragged_batch: true\n")) << config;
  EXPECT_EQ(config.find("allow_ragged_batch: true"), config.rfind("allow_ragged_batch: true"));
  EXPECT_TRUE(contains(files[1].text, "    (\"tokens\", \"int64\", [-1], -1),\n"));
  // Without --class the wrapper finds the class itself; no options, an empty dict.
  in.python->class_name.clear();
  in.python->options.clear();
  const std::string model = export_config(ExportFormat::kTriton, in).value()[1].text;
  EXPECT_TRUE(contains(model, "HANDLER_CLASS = \"\"\nHANDLER_OPTIONS = {}\n"));
  EXPECT_TRUE(contains(model,
                       "the class with a predict method in toy_handler.py, constructed "
                       "without options"));
}

TEST(PythonExport, BytesAreTritonsTypeStringAndNumpysObject) {
  // A class with preprocess and postprocess: requests send and get text,
  // which predict never sees.
  ExportInput in = fixture_input("python_toy");
  in.python->lanes = in.model;
  in.model->inputs = {TensorSpec{"text", DType::kBytes, {-1}, false}};
  in.model->outputs = {TensorSpec{"label", DType::kBytes, {-1, 1}, false}};
  ASSERT_TRUE(in.model->validate().ok());
  const auto files = export_config(ExportFormat::kTriton, in).value();
  const std::string config = files[0].text;
  EXPECT_TRUE(contains(config, "name: \"text\"\n    data_type: TYPE_STRING\n    dims: [ 1 ]\n"))
      << config;
  EXPECT_TRUE(contains(config, "reshape: { shape: [ ] }")) << config;  // a string per request
  EXPECT_TRUE(contains(config, "name: \"label\"\n    data_type: TYPE_STRING\n    dims: [ 1 ]\n"))
      << config;
  EXPECT_FALSE(contains(config, "name: \"x\"")) << "predict's input is not Triton's";
  ASSERT_TRUE(parse_pbtxt(config).ok());
  // The wrapper reads and answers what config.pbtxt names, and stacks and
  // splits what predict takes and gives.
  const std::string& model = files[1].text;
  EXPECT_TRUE(contains(model, "REQUEST_INPUTS = [\n    (\"text\", \"object\", []),\n]\n")) << model;
  EXPECT_TRUE(contains(model, "INPUTS = [\n    (\"x\", \"float32\", [4], 0),\n]\n"));
  EXPECT_TRUE(contains(model, "OUTPUTS = [\n    (\"y\", \"float32\", [3]),\n"));
  EXPECT_TRUE(contains(model, "RESPONSE_OUTPUTS = [\n    (\"label\", \"object\", [1]),\n]\n"));
}

TEST(PythonExport, AddPythonHandlerKeepsWhatPredictTakes) {
  ExportInput in = fixture_input("python_toy");
  in.python.reset();
  const std::string file = std::string(BATCHSCOPE_EXPORT_DATA_DIR) + "/text_handler.py";
  ModelMetadata lanes = *in.model;
  lanes.inputs = {TensorSpec{"counts", DType::kFloat32, {-1, 4}, false}};
  ASSERT_TRUE(add_python_handler(in, file, lanes, "Text").ok());
  ASSERT_TRUE(in.python && in.python->lanes);
  EXPECT_EQ(in.python->lanes->inputs[0].name, "counts");
  EXPECT_EQ(in.python->class_name, "Text");
  // Lanes that say nothing (a caller that does not know them) are the model's.
  in.python.reset();
  ASSERT_TRUE(add_python_handler(in, file, ModelMetadata{}).ok());
  EXPECT_FALSE(in.python->lanes);
  const std::string model = export_config(ExportFormat::kRayServe, in).value()[0].text;
  EXPECT_TRUE(contains(model, "REQUEST_INPUTS = [\n    (\"x\", \"float32\", [4]),\n]\n"));
  EXPECT_TRUE(contains(model, "INPUTS = [\n    (\"x\", \"float32\", [4], 0),\n]\n"));
  // Not a Python model: nothing to add.
  ExportInput torch = fixture_input("fifo_cpu");
  ASSERT_TRUE(add_python_handler(torch, "/nonexistent/x.py", lanes).ok());
  EXPECT_FALSE(torch.python);
}

TEST(PythonExport, RefusesWhatWouldNotRun) {
  const auto message = [](ExportFormat f, const ExportInput& in) {
    auto files = export_config(f, in);
    return files.ok() ? std::string("(exported)") : files.error().message;
  };
  ExportInput no_file = fixture_input("python_toy");
  no_file.python.reset();
  for (ExportFormat f :
       {ExportFormat::kTriton, ExportFormat::kTorchServe, ExportFormat::kRayServe}) {
    EXPECT_EQ(message(f, no_file), std::string("model 'toy_handler' is a Python model: the ") +
                                       export_format_name(f) +
                                       " export runs its class and needs the handler file "
                                       "(batchscope export --model FILE.py)");
  }
  // The formats that carry only the batching options export it as they are.
  for (ExportFormat f : {ExportFormat::kTfServing, ExportFormat::kDbie, ExportFormat::kJson}) {
    EXPECT_EQ(message(f, no_file).find("Python"), std::string::npos) << export_format_name(f);
  }
  ExportInput clash = fixture_input("python_toy");
  clash.python->file_name = "model.py";
  EXPECT_EQ(message(ExportFormat::kTriton, clash),
            "the Python handler is named model.py, the name of the triton export's own file: "
            "rename it (for instance to model_handler.py) and export again");
  clash.python->file_name = "torchserve_handler.py";
  EXPECT_TRUE(contains(message(ExportFormat::kTorchServe, clash), "torchserve export's own file"));
  clash.python->file_name = "deployment.py";
  EXPECT_TRUE(contains(message(ExportFormat::kRayServe, clash), "rayserve export's own file"));
  clash.python->file_name = "sub/toy.py";
  EXPECT_EQ(message(ExportFormat::kTriton, clash),
            "the Python handler's file name 'sub/toy.py' is not a plain NAME.py file name");
  ExportInput bad_class = fixture_input("python_toy");
  bad_class.python->class_name = "Toy; import os";
  EXPECT_EQ(message(ExportFormat::kRayServe, bad_class),
            "--class 'Toy; import os' is not a Python class name");
  ExportInput too_big = fixture_input("python_toy");
  too_big.options.max_batch_size = 32;
  EXPECT_TRUE(contains(message(ExportFormat::kTriton, too_big),
                       "above model 'toy_handler''s "
                       "max_batch_size 16"));
}

TEST(PythonExport, OddTextIsQuotedForPython) {
  ExportInput in = fixture_input("python_toy");
  in.python->options = {{"path", "C:\\models\\\"x\"\n"}};
  const std::string model = export_config(ExportFormat::kTriton, in).value()[1].text;
  EXPECT_TRUE(contains(model, "    \"path\": \"C:\\\\models\\\\\\\"x\\\"\\x0a\",\n")) << model;
}

TEST(PythonExport, WriteExportMakesTheRepositoryFolders) {
  const auto files = export_config(ExportFormat::kTriton, fixture_input("python_toy")).value();
  const fs::path root =
      fs::temp_directory_path() / ("batchscope_python_export_" + std::to_string(::getpid()));
  fs::remove_all(root);
  ASSERT_TRUE(write_export(files, (root / "repo").string()).ok());
  for (const ExportFile& f : files) EXPECT_EQ(read_whole(root / "repo" / f.name), f.text) << f.name;
  EXPECT_TRUE(fs::is_directory(root / "repo" / "toy_handler" / "1"));
  fs::remove_all(root);
}

TEST(PythonExport, ReadPythonHandlerNamesAFileItCannotRead) {
  auto h = read_python_handler("/nonexistent/toy.py", "Toy", {});
  ASSERT_FALSE(h.ok());
  EXPECT_TRUE(contains(h.error().message, "/nonexistent/toy.py")) << h.error().message;
  auto ok = read_python_handler(std::string(BATCHSCOPE_EXPORT_DATA_DIR) + "/toy_handler.py",
                                "Hooked", {{"scale", "3"}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->file_name, "toy_handler.py");
  EXPECT_EQ(ok->class_name, "Hooked");
  EXPECT_EQ(ok->source, export_data_text("toy_handler.py"));
}

}  // namespace
}  // namespace batchscope
