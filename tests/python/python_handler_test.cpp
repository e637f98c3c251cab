// SPDX-License-Identifier: GPL-3.0-or-later
// What a handler file declares, read by importing it in a worker process,
// and the errors that name the file, the class and what is wrong.
#include "python/python_handler.h"

#include <gtest/gtest.h>

#include "tests/python/python_files.h"

namespace batchscope {
namespace {

using test::handler;
using test::spec;

TEST(PythonHandler, ReadsWhatTheClassDeclares) {
  auto h = describe_python(spec(handler("faults.py")));
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(h->metadata.name, "faults");  // the file's stem
  EXPECT_EQ(h->class_name, "Model");
  EXPECT_EQ(h->metadata.max_batch_size, 16u);
  ASSERT_EQ(h->metadata.inputs.size(), 1u);
  EXPECT_EQ(h->metadata.inputs[0].name, "x");
  EXPECT_EQ(h->metadata.inputs[0].shape, (Shape{-1, 4}));
  EXPECT_EQ(h->metadata.outputs[0].dtype, DType::kFloat32);
  EXPECT_FALSE(h->has_preprocess);
}

TEST(PythonHandler, ClassPicksOneOfTwoAndTwoWithoutItAreRefused) {
  PythonSpec s = spec(handler("two_classes.py"));
  auto none = describe_python(s);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("2 classes with a predict method (First, Second): pick one "
                                      "with --class"),
            std::string::npos)
      << none.error().message;
  s.class_name = "Second";
  auto second = describe_python(s);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->class_name, "Second");
  EXPECT_EQ(second->metadata.max_batch_size, 8u);
  s.class_name = "Third";
  auto third = describe_python(s);
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.error().message.find("has no class 'Third'"), std::string::npos);
}

TEST(PythonHandler, AFailedImportQuotesItsTraceback) {
  auto h = describe_python(spec(handler("broken_import.py")));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("broken_import.py failed to import"), std::string::npos)
      << h.error().message;
  EXPECT_NE(h.error().message.find("No module named 'no_such_module_anywhere'"), std::string::npos)
      << h.error().message;
}

TEST(PythonHandler, AnUnknownDatatypeNamesTheFileClassAndAttribute) {
  auto h = describe_python(spec(handler("bad_spec.py")));
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("bad_spec.py: Model.inputs['x']: datatype 'FLOAT' is not one "
                                   "of FP32"),
            std::string::npos)
      << h.error().message;
}

TEST(PythonHandler, AClassWithoutInputsTakesTheSidecars) {
  auto h = describe_python(spec(handler("sidecar_only.py")));
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(h->metadata.name, "sidecar_only");
  EXPECT_EQ(h->metadata.max_batch_size, 4u);
  EXPECT_EQ(h->metadata.inputs[0].shape, (Shape{-1, 2}));
}

TEST(PythonHandler, AMissingFileOrInterpreterIsRefusedByName) {
  auto missing = describe_python(spec(handler("nowhere.py")));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot read the Python model"), std::string::npos);
  PythonSpec s = spec(handler("faults.py"));
  s.python = "/nowhere/python3";
  auto no_python = describe_python(s);
  ASSERT_FALSE(no_python.ok());
  EXPECT_NE(no_python.error().message.find("--python /nowhere/python3 is not a program"),
            std::string::npos);
}

TEST(PythonHandler, TheWorkersDescriptionIsReadStrictly) {
  EXPECT_FALSE(parse_handler_json("not json", "m.py").ok());
  EXPECT_FALSE(parse_handler_json("[1]", "m.py").ok());
  auto bad = parse_handler_json(
      R"({"name": "m", "inputs": [{"name": "x", "datatype": "FP32", "shape": [4]}],
          "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1, 4]}]})",
      "m.py");
  EXPECT_FALSE(bad.ok());  // a shape without the batch dimension
}

constexpr const char* kPrepared = R"({"name": "m", "class": "M", "max_batch_size": 8,
    "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 2]}],
    "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1, 2]}],
    "request_inputs": [{"name": "text", "datatype": "BYTES", "shape": [-1]}],
    "response_outputs": [{"name": "label", "datatype": "BYTES", "shape": [-1]}],
    "preprocess": true, "postprocess": true,
    "examples": [{"text": {"hex": "686921"}}, {"text": {"hex": ""}}]})";

TEST(PythonHandler, RequestsSendAndGetWhatTheClassDeclaresAndPredictTakesItsInputs) {
  auto h = parse_handler_json(kPrepared, "m.py");
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_TRUE(h->has_preprocess);
  EXPECT_TRUE(h->has_postprocess);
  ASSERT_EQ(h->metadata.inputs.size(), 1u);
  EXPECT_EQ(h->metadata.inputs[0].name, "text");
  EXPECT_EQ(h->metadata.inputs[0].dtype, DType::kBytes);
  EXPECT_EQ(h->metadata.outputs[0].name, "label");
  EXPECT_EQ(h->model.inputs[0].name, "x");
  EXPECT_EQ(h->model.outputs[0].name, "y");
  EXPECT_EQ(h->metadata.max_batch_size, 8u);
  ASSERT_EQ(h->metadata.examples.size(), 2u);
  EXPECT_EQ(h->metadata.examples[0][0].byte_string(), "hi!");
  EXPECT_EQ(h->metadata.examples[1][0].nbytes(), 0u);
  // Seeded traffic sends the examples in turn.
  const Tensors seeded = random_inputs(h->metadata, 2);
  EXPECT_EQ(seeded[0].byte_string(), "hi!");
  EXPECT_TRUE(h->model.examples.empty());
}

TEST(PythonHandler, ExamplesThatDoNotFitAreRefusedByName) {
  std::string text = kPrepared;
  text.replace(text.find("686921"), 6, "6869z1");
  auto h = parse_handler_json(text, "m.py");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().message, "m.py: M.examples[0]['text'] has bytes that do not read");
  std::string wrong = kPrepared;
  wrong.replace(wrong.find("{\"hex\": \"686921\"}"), 17, "{\"values\": [1], \"shape\": [1]}");
  h = parse_handler_json(wrong, "m.py");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().message, "m.py: M.examples[0]['text'] is not bytes or text, as BYTES needs");
  std::string missing = kPrepared;
  missing.replace(missing.find("\"text\": {\"hex\": \"\"}"), 19, "\"other\": 1");
  h = parse_handler_json(missing, "m.py");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().message, "m.py: M.examples[1] has no input 'text'");
}

TEST(PythonHandler, PredictTakesNoBytes) {
  std::string text = kPrepared;
  const std::string x = R"("datatype": "FP32", "shape": [-1, 2]}],
    "outputs")";
  text.replace(text.find(x), x.size(), R"("datatype": "BYTES", "shape": [-1]}],
    "outputs")");
  auto h = parse_handler_json(text, "m.py");
  ASSERT_FALSE(h.ok()) << text;
  EXPECT_NE(h.error().message.find("predict takes arrays"), std::string::npos) << h.error().message;
}

}  // namespace
}  // namespace batchscope
