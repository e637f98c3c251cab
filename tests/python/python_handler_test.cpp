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

}  // namespace
}  // namespace batchscope
