// SPDX-License-Identifier: GPL-3.0-or-later
// The describe dialog with a describer the test plays: rows named after
// forward()'s arguments, a shape that does not read named before anything
// runs, a failed forward pass shown in place with the dialog still open, and
// a written sidecar accepting it with what the rows said.

#include "ui/workbench/describe_dialog.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <atomic>
#include <mutex>

namespace batchscope {
namespace {

template <class F>
bool wait_until(F done) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > 20000) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
  }
  return true;
}

struct Played {
  std::mutex mu;
  std::vector<TensorSpec> inputs;
  uint32_t max_batch = 0;
  int writes = 0;
  bool fail = true;
};

ModelDescriber played(std::shared_ptr<Played> p) {
  ModelDescriber d;
  d.arguments =
      [](const std::string&) -> Expected<std::vector<std::pair<std::string, std::string>>> {
    return std::vector<std::pair<std::string, std::string>>{{"token_ids", "Tensor"},
                                                            {"weights", "Tensor"}};
  };
  d.write = [p](const std::string& path, const std::vector<TensorSpec>& inputs,
                uint32_t max) -> Expected<std::string> {
    std::lock_guard g(p->mu);
    ++p->writes;
    p->inputs = inputs;
    p->max_batch = max;
    if (p->fail)
      return invalid_argument(
          "the forward pass on zeros (token_ids INT64 [1, 5]) failed: "
          "RuntimeError: index out of range in self");
    return path.substr(0, path.size() - 3) + ".json";
  };
  return d;
}

TEST(DescribeDialog, NamesEachArgumentShowsAFailedPassAndAcceptsAWrittenSidecar) {
  auto p = std::make_shared<Played>();
  DescribeDialog d("/models/user.pt", played(p));
  ASSERT_TRUE(wait_until([&] { return d.ready(); }));
  ASSERT_EQ(d.rows(), 2);
  EXPECT_TRUE(d.write_button()->isEnabled());

  d.dtype(0)->setCurrentText("INT64");
  d.shape(0)->setText("5");
  d.shape(1)->setText("5,a");
  d.write();
  EXPECT_TRUE(d.message()->text().contains("'weights:FP32:5,a'"))
      << d.message()->text().toStdString();
  {
    std::lock_guard g(p->mu);
    EXPECT_EQ(p->writes, 0);  // nothing ran
  }

  d.shape(1)->setText("5");
  d.max_batch()->setValue(16);
  d.write();
  ASSERT_TRUE(wait_until([&] { return !d.busy() && d.write_button()->isEnabled(); }));
  EXPECT_TRUE(d.message()->text().contains("RuntimeError: index out of range"))
      << d.message()->text().toStdString();
  EXPECT_EQ(d.result(), 0);  // still open
  EXPECT_TRUE(d.written().isEmpty());

  {
    std::lock_guard g(p->mu);
    p->fail = false;
  }
  d.write();
  ASSERT_TRUE(wait_until([&] { return !d.written().isEmpty(); }));
  EXPECT_EQ(d.written(), "/models/user.json");
  EXPECT_EQ(d.result(), QDialog::Accepted);
  std::lock_guard g(p->mu);
  ASSERT_EQ(p->inputs.size(), 2u);
  EXPECT_EQ(p->inputs[0].describe(), "token_ids INT64 [-1, 5]");
  EXPECT_EQ(p->inputs[1].describe(), "weights FP32 [-1, 5]");
  EXPECT_EQ(p->max_batch, 16u);
}

TEST(DescribeDialog, AModelThatCannotBeReadSaysWhy) {
  ModelDescriber d;
  d.arguments =
      [](const std::string&) -> Expected<std::vector<std::pair<std::string, std::string>>> {
    return invalid_argument("cannot load the TorchScript model /x.pt: not a zip archive");
  };
  d.write = [](const std::string&, const std::vector<TensorSpec>&,
               uint32_t) -> Expected<std::string> { return std::string("never"); };
  DescribeDialog dialog("/x.pt", d);
  ASSERT_TRUE(wait_until([&] { return dialog.ready(); }));
  EXPECT_EQ(dialog.rows(), 0);
  EXPECT_FALSE(dialog.write_button()->isEnabled());
  EXPECT_TRUE(dialog.message()->text().contains("not a zip archive"));
}

}  // namespace
}  // namespace batchscope
