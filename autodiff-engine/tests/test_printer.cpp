// The printed graph of eager mode as a student reads it: named parameters and buffers, one
// comment per gradient a rule returns, the final gradients marked, no empty attributes, and the
// graph still printed after a backward freed the saved values.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/creation.h"

namespace ad = ember::autodiff;
using ember::Tensor;

namespace {
Tensor filled(ember::Shape shape, float start) {
  const int64_t n = ember::shape_numel(shape);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = start + 0.01f * float(i % 7);
  return Tensor::from_vector<float>(v, shape);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

int count(const std::string& s, const std::string& part) {
  int n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

// A conv (weight named 0.weight), batch norm with running statistics (buffers), a linear layer.
struct Model {
  ad::Variable conv_w{filled({2, 1, 3, 3}, 0.1f), true}, bn_w{filled({2}, 1.0f), true},
      bn_b{filled({2}, 0.0f), true}, mean{ember::zeros({2})}, var{ember::ones({2})},
      fc_w{filled({3, 8}, -0.02f), true};
  Model() {
    conv_w.set_name("0.weight");
    bn_w.set_name("1.weight");
    bn_b.set_name("1.bias");
    mean.set_name("1.running_mean", /*is_buffer=*/true);
    var.set_name("1.running_var", /*is_buffer=*/true);
    fc_w.set_name("3.weight");
  }
  ad::Variable loss(const ad::Variable& x) const {
    ad::Variable h = ad::conv2d(x, conv_w);  // [2, 2, 2, 2]
    h = ad::batch_norm(h, bn_w, bn_b, mean, var, true, 0.1, 1e-5);
    h = ad::reshape(ad::relu(h), {2, 8});
    return ad::sum(ad::linear(h, fc_w));
  }
};
}  // namespace

TEST(Printer, NamesParametersAndBuffersAndLeavesOutEmptyAttributes) {
  Model m;
  const std::string text = m.loss(ad::Variable(filled({2, 1, 4, 4}, 0.5f))).graph_str();
  EXPECT_TRUE(contains(text, "input %0:f32[2,1,4,4]\n")) << text;
  EXPECT_TRUE(contains(text, "param %1:f32[2,1,3,3]  0.weight\n")) << text;
  EXPECT_TRUE(contains(text, "buffer %4:f32[2]  1.running_mean\n")) << text;
  EXPECT_TRUE(contains(text, "buffer %5:f32[2]  1.running_var\n")) << text;
  EXPECT_TRUE(contains(text, "param %6:f32[3,8]  3.weight\n")) << text;
  EXPECT_FALSE(contains(text, "padding_mode")) << text;  // conv2d's, empty when not "same"
  EXPECT_FALSE(contains(text, "=,")) << text;
  EXPECT_FALSE(contains(text, "=}")) << text;
}

TEST(Printer, SaysOncePerGradientWhoseItIsAndMarksTheFinalOnes) {
  Model m;
  const std::string text = m.loss(ad::Variable(filled({2, 1, 4, 4}, 0.5f))).graph_str();
  // Each parameter's gradient is marked once, on the line that makes it, with the rule.
  for (const char* name : {"0.weight", "1.weight", "1.bias", "3.weight"})
    EXPECT_EQ(count(text, "grad of " + std::string(name)), 1) << name << "\n" << text;
  EXPECT_TRUE(contains(text, "grad of 0.weight via conv2d")) << text;
  EXPECT_TRUE(contains(text, "grad of 3.weight via linear")) << text;
  // No comment is repeated on two lines: a rule's intermediate lines say nothing.
  std::istringstream lines(text);
  std::vector<std::string> comments;
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("    # ");
    if (at == std::string::npos) continue;
    const std::string c = line.substr(at);
    for (const std::string& seen : comments) EXPECT_NE(seen, c) << text;
    comments.push_back(c);
  }
  EXPECT_TRUE(contains(text, "via relu")) << text;
  EXPECT_FALSE(contains(text, "%0 via")) << text;  // the input's gradient is not asked for
}

TEST(Printer, DotCarriesTheSameLabelsAndComments) {
  Model m;
  const ad::Variable loss = m.loss(ad::Variable(filled({2, 1, 4, 4}, 0.5f)));
  const std::string dot = loss.graph_dot();
  EXPECT_TRUE(contains(dot, "label=\"param %1:f32[2,1,3,3]  0.weight\"")) << dot;
  EXPECT_TRUE(contains(dot, "label=\"buffer %4:f32[2]  1.running_mean\"")) << dot;
  EXPECT_TRUE(contains(dot, "\\n# grad of 3.weight via linear\"")) << dot;
  EXPECT_FALSE(contains(dot, "padding_mode")) << dot;
}

TEST(Printer, PrintsTheGraphAfterBackwardWithoutKeepingTheData) {
  Model m;
  auto x = std::make_shared<ad::Variable>(filled({2, 1, 4, 4}, 0.5f));
  std::weak_ptr<ad::VariableImpl> input = x->impl_ptr();
  const ad::Variable loss = m.loss(*x);
  x.reset();
  const std::string text = loss.graph_str(), dot = loss.graph_dot();
  loss.backward();
  EXPECT_TRUE(input.expired());  // the batch is not kept alive by a differentiated loss
  EXPECT_EQ(loss.graph_str(), text);
  EXPECT_EQ(loss.graph_dot(), dot);
  // A second backward is still refused, with the error that says so.
  EXPECT_THROW(loss.backward(), ember::ValueError);
}

TEST(Printer, ARuleThatReturnsAGradientForTwoInputsNamesBoth) {
  ad::Variable a(filled({3}, 1.0f), true), b(filled({3}, 2.0f), true);
  a.set_name("a");
  b.set_name("b");
  const std::string text = ad::sum(ad::tanh(a + b)).graph_str();
  // add's rule hands tanh's gradient to both inputs: a value made by another rule, so the
  // final gradients are that line, marked for both.
  EXPECT_TRUE(contains(text, "# grad of a, b via tanh\n")) << text;
  EXPECT_TRUE(contains(text, "param %0:f32[3]  a\nparam %1:f32[3]  b\n")) << text;
}
