// The graph IR: building with shape inference, the exact text form of a graph and of its
// backward, DOT export read back, and the driver's pruning, fan-out and error checks.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "ember/autodiff/autodiff.h"
#include "expect_error.h"

namespace ad = ember::autodiff;
using ad::TensorType;
using ember::DType;

namespace {
TensorType f32(ember::Shape shape) { return TensorType{std::move(shape), DType::Float32, {}}; }
}  // namespace

TEST(Graph, InfersTypesWhenANodeIsAdded) {
  ad::Graph g;
  ad::Val x = g.input(f32({4, 1}), "x");
  ad::Val b = g.parameter(f32({3}), "b");
  ad::Val y = x + b;  // broadcast [4, 1] with [3]
  EXPECT_EQ(y.shape(), (ember::Shape{4, 3}));
  EXPECT_EQ(y.dtype(), DType::Float32);
  ad::Val s = ad::sum(y, {1}, true);
  EXPECT_EQ(s.type().str(), "f32[4,1]");
  EXPECT_EQ(g.num_nodes(), 2);
}

TEST(Graph, ABadShapeIsReportedWhereTheNodeIsBuilt) {
  ad::Graph g;
  ad::Val a = g.input(f32({2, 3}));
  ad::Val b = g.input(f32({4}));
  expect_error<ember::ShapeError>([&] { ad::add(a, b); }, {"%2 = add(%0, %1)", "[2, 3]", "[4]"});
}

TEST(Graph, PrintsAGraphAndItsBackwardExactly) {
  ad::Graph g;
  ad::Val x = g.input(f32({2, 3}), "x");
  ad::Val w = g.parameter(f32({3}), "w");
  ad::Val h = ad::tanh(x * w);
  ad::Val loss = ad::sum(h);
  g.mark_output(loss);
  const std::string forward =
      "input %0:f32[2,3]  x\n"
      "param %1:f32[3]  w\n"
      "%2:f32[2,3] = mul(%0, %1)\n"
      "%3:f32[2,3] = tanh(%2)\n"
      "%4:f32[] = sum(%3) {dims=[], keepdim=0}\n"
      "return %4\n";
  EXPECT_EQ(g.str(), forward);

  std::vector<ad::Val> dw = ad::grad({loss}, {w});
  g.mark_output(dw[0]);
  // One comment per gradient a rule returns (mul's %8 is part of %9's line), the final one
  // named after its parameter.
  const std::string backward =
      "input %0:f32[2,3]  x\n"
      "param %1:f32[3]  w\n"
      "%2:f32[2,3] = mul(%0, %1)\n"
      "%3:f32[2,3] = tanh(%2)\n"
      "%4:f32[] = sum(%3) {dims=[], keepdim=0}\n"
      "%5:f32[] = ones_like(%4)    # seed: d %4 / d %4 = 1\n"
      "%6:f32[2,3] = expand(%5) {shape=[2,3]}    # d/d %3 via sum\n"
      "%7:f32[2,3] = tanh_backward(%6, %3)    # d/d %2 via tanh\n"
      "%8:f32[2,3] = mul(%7, %0)\n"
      "%9:f32[3] = sum_to(%8) {shape=[3]}    # grad of w via mul; summed back to the "
      "input's shape [3]\n"
      "return %4, %9\n";
  EXPECT_EQ(g.str(), backward);
}

TEST(Graph, PrunesWhatNoRequestedGradientNeeds) {
  ad::Graph g;
  ad::Val x = g.input(f32({3}), "x");
  ad::Val w = g.parameter(f32({3}), "w");
  ad::Val loss = ad::sum(ad::tanh(x) * w);  // tanh(x) does not depend on w
  const int32_t forward_nodes = g.num_nodes();
  ad::grad({loss}, {w});
  for (int32_t k = forward_nodes; k < g.num_nodes(); ++k)
    EXPECT_NE(g.node(k).op->name, "tanh_backward") << g.str();
  // Only d/dw: seed, expand, one mul (dy * tanh(x)); no d/dx branch.
  EXPECT_EQ(g.num_nodes() - forward_nodes, 3) << g.str();
}

TEST(Graph, SumsTheGradientsOfAValueUsedThreeTimes) {
  ad::Graph g;
  ad::Val x = g.parameter(f32({2}), "x");
  ad::Val y = ad::sum(x * x + ad::tanh(x));  // x used by mul (twice) and tanh
  const int32_t forward_nodes = g.num_nodes();
  ad::Val dx = ad::grad({y}, {x})[0];
  int adds = 0, notes = 0;
  for (int32_t k = forward_nodes; k < g.num_nodes(); ++k) {
    adds += g.node(k).op->name == "add" && g.node(k).grad_of < 0;
    notes += g.node(k).note.find("sum over its 3 uses") != std::string::npos;
  }
  EXPECT_EQ(adds, 2) << g.str();   // three uses, two adds
  EXPECT_EQ(notes, 1) << g.str();  // said once, on the add that makes the sum
  g.mark_output(dx);
  auto out = ad::run(g, {ember::Tensor::from_vector<float>({0.5f, -1.0f}, {2})});
  const std::vector<float> got = out[0].to_vector<float>();
  for (int i = 0; i < 2; ++i) {
    const float v = i == 0 ? 0.5f : -1.0f, t = std::tanh(v);
    EXPECT_NEAR(got[size_t(i)], 2 * v + 1 - t * t, 1e-6);
  }
}

// The pieces of a split, each used once, pass back one cat (as PyTorch's split backward), not a
// zero-filled input per piece and the adds between them; pieces that overlap, or leave part of
// the dim out, are summed as before. The values either way: piece k of x [2, 5] weighs k + 1.
TEST(Graph, JoinsTheGradientsOfASplitsPiecesWithOneCat) {
  const auto x_value = ember::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5});
  for (bool tiled : {true, false}) {
    SCOPED_TRACE(tiled ? "split" : "overlapping slices");
    ad::Graph g;
    ad::Val x = g.parameter(f32({2, 5}), "x");
    std::vector<ad::Val> pieces =
        tiled ? ad::split(x, 2, 1)  // columns 0-1, 2-3, 4
              : std::vector<ad::Val>{ad::slice(x, 1, 0, 3), ad::slice(x, 1, 2, 5)};
    ad::Val y = ad::sum(pieces[0]);
    for (size_t k = 1; k < pieces.size(); ++k) y = y + ad::sum(pieces[k] * double(k + 1));
    const int32_t forward_nodes = g.num_nodes();
    ad::Val dx = ad::grad({y}, {x})[0];
    EXPECT_EQ(g.node(g.value(dx.id).node).op->name, tiled ? "cat" : "add") << g.str();
    g.mark_output(dx);
    const std::vector<float> got = ad::run(g, {x_value})[0].to_vector<float>();
    const std::vector<float> want = tiled ? std::vector<float>{1, 1, 2, 2, 3, 1, 1, 2, 2, 3}
                                          : std::vector<float>{1, 1, 3, 2, 2, 1, 1, 3, 2, 2};
    EXPECT_EQ(got, want) << g.str();
    int adds = 0;
    for (int32_t k = forward_nodes; k < g.num_nodes(); ++k)
      adds += g.node(k).op->name == "add" && g.node(k).grad_of < 0;
    EXPECT_EQ(adds, tiled ? 0 : 1) << g.str();
  }
}

TEST(Graph, RunSkipsANodeNobodyReadsOrFetches) {
  ad::Graph g;
  ad::Val x = g.input(f32({3}), "x");
  ad::Val unread = ad::exp(x);  // read by nothing, fetched by nobody
  ad::Val y = x * 2.0;
  g.mark_output(y);
  std::vector<ad::NodeProfile> ran;
  ad::RunOptions options;
  options.profile = &ran;
  const auto x_value = ember::Tensor::from_vector<float>({1, 2, 3}, {3});
  const auto out = ad::run(g, {x_value}, {y.id}, options);
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_EQ(ran[0].op, "mul_scalar");
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2, 4, 6}));
  // Fetched, it runs.
  ran.clear();
  ad::run(g, {x_value}, {unread.id, y.id}, options);
  EXPECT_EQ(ran.size(), 2u);
}

TEST(Graph, DifferentiatesItsOwnBackwardAgain) {
  ad::Graph g;
  ad::Val x = g.parameter(f32({}), "x");
  ad::Val y = ad::tanh(x);
  ad::Val dy = ad::grad({y}, {x})[0];
  ad::Val ddy = ad::grad({dy}, {x})[0];
  g.mark_output(dy);
  g.mark_output(ddy);
  auto out = ad::run(g, {ember::Tensor::from_vector<float>({0.3f}, {})});
  const double t = std::tanh(0.3);
  EXPECT_NEAR(out[0].item<float>(), 1 - t * t, 1e-6);
  EXPECT_NEAR(out[1].item<float>(), -2 * t * (1 - t * t), 1e-6);
}

// An op whose rule is wrong on purpose: its gradient for x [3] has shape [2], which no
// broadcast explains, or dtype f64.
std::vector<ad::Val> wrong_shape_rule(const ad::GradContext& c) {
  return {ad::sum_to(ad::expand(ad::sum(c.dy()), {2}), {2})};
}
std::vector<ad::Val> wrong_dtype_rule(const ad::GradContext& c) {
  return {c.graph.input(TensorType{c.x().shape(), DType::Float64, {}})};
}
std::vector<TensorType> same_type(const std::vector<TensorType>& in, const ad::Attrs&) {
  return {in[0]};
}

TEST(Graph, ARuleOfTheWrongShapeOrDtypeIsCaughtAtBuildTime) {
  const ad::OpDef bad_shape{"bad_shape", same_type, nullptr, wrong_shape_rule};
  ad::Graph g;
  ad::Val x = g.parameter(f32({3}));
  ad::Val y = ad::sum(g.add(bad_shape, {x})[0]);
  expect_error<ember::ShapeError>([&] { ad::grad({y}, {x}); },
                                  {"the gradient rule of bad_shape (%1) gave input 0 (%0) a "
                                   "gradient of shape [2]; expected [3]"});
  const ad::OpDef bad_dtype{"bad_dtype", same_type, nullptr, wrong_dtype_rule};
  ad::Graph h;
  ad::Val x2 = h.parameter(f32({3}));
  ad::Val y2 = ad::sum(h.add(bad_dtype, {x2})[0]);
  EXPECT_THROW(ad::grad({y2}, {x2}), ember::DTypeError);
}

TEST(Graph, AnOutputGradientMustMatchItsOutput) {
  ad::Graph g;
  ad::Val x = g.parameter(f32({3}));
  ad::Val y = ad::tanh(x);
  ad::Val seed = g.input(f32({2, 3}));
  expect_error<ember::ShapeError>([&] { ad::grad({y}, {x}, {seed}); },
                                  {"f32[2,3] but the output is f32[3]"});
  EXPECT_THROW(ad::grad({y}, {x}), ember::ValueError);  // not one element: no implied seed
}

TEST(Graph, DotExportReadsBackToTheSameStructure) {
  ad::Graph g;
  ad::Val x = g.input(f32({2}), "x");
  ad::Val w = g.parameter(f32({2}), "w");
  ad::Val loss = ad::sum(ad::tanh(x * w));
  g.mark_output(loss);
  ad::grad({loss}, {w});
  const std::string dot = g.to_dot();
  ASSERT_EQ(dot.rfind("digraph ember {", 0), 0u);
  ASSERT_EQ(dot.substr(dot.size() - 2), "}\n");
  // Every node and input is declared once; every edge joins declared ends; the edges into each
  // node are exactly its inputs.
  std::set<std::string> declared;
  std::map<std::string, std::multiset<std::string>> into;
  const std::regex decl(R"re(^\s+([nv]\d+|out\d+) \[)re"),
      edge(R"re(^\s+(\w+) -> (\w+)(?: \[label="%(\d+)"\])?;)re");
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, edge)) {
      EXPECT_TRUE(declared.count(m[1])) << line;
      EXPECT_TRUE(declared.count(m[2])) << line;
      if (m[3].matched) into[m[2]].insert(m[3]);
    } else if (std::regex_search(line, m, decl)) {
      EXPECT_TRUE(declared.insert(m[1]).second) << "declared twice: " << line;
    }
  }
  EXPECT_EQ(declared.count("v0") + declared.count("v1"), 2u);
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    std::multiset<std::string> want;
    for (ad::ValueId in : g.node(k).inputs) want.insert(std::to_string(in));
    EXPECT_EQ(into["n" + std::to_string(k)], want) << "node " << k;
  }
}

TEST(Graph, UnknownOpsAreNotSupported) {
  EXPECT_THROW(ad::op_def("no_such_op"), ember::NotSupportedError);
}
