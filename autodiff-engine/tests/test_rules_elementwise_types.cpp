// The elementwise family's shape/dtype rules: the type a graph infers for a node equals the type
// of the tensor core-runtime computes, for every op and operand dtype (or both refuse), and bad
// input is a typed error naming the node, the op and its operands.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/creation.h"

namespace ad = ember::autodiff;
using ember::DType;
using ember::Shape;
using ember::Tensor;

namespace {

const std::vector<DType> kDTypes = {DType::Bool,     DType::UInt8,   DType::Int8,
                                    DType::Int32,    DType::Int64,   DType::Float16,
                                    DType::BFloat16, DType::Float32, DType::Float64};

// "ShapeError", "DTypeError", ...: the most derived class of an Ember error.
std::string kind(const ember::Error& e) {
  if (dynamic_cast<const ember::ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const ember::DTypeError*>(&e)) return "DTypeError";
  if (dynamic_cast<const ember::DeviceError*>(&e)) return "DeviceError";
  if (dynamic_cast<const ember::ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const ember::NotSupportedError*>(&e)) return "NotSupportedError";
  return "Error";
}

// The inferred type of each output, or the error's kind.
std::string inferred(const std::string& op, const std::vector<Tensor>& in, const ad::Attrs& attrs) {
  ad::Graph g;
  std::vector<ad::Val> vals;
  for (const Tensor& t : in) vals.push_back(g.input(ad::type_of(t)));
  try {
    std::string out;
    for (const ad::Val& v : g.add(op, vals, attrs)) out += v.type().str() + " ";
    return out;
  } catch (const ember::Error& e) {
    return kind(e);
  }
}

// The type of each output core-runtime computes, or the error's kind.
std::string computed(const std::string& op, const std::vector<Tensor>& in, const ad::Attrs& attrs) {
  try {
    std::string out;
    for (const Tensor& t : ad::op_def(op).run(in, attrs)) out += ad::type_of(t).str() + " ";
    return out;
  } catch (const ember::Error& e) {
    return kind(e);
  }
}

void expect_infer_matches_run(const std::string& op, const std::vector<Tensor>& in,
                              const ad::Attrs& attrs = {}) {
  std::string operands;
  for (const Tensor& t : in) operands += ad::type_of(t).str() + " ";
  EXPECT_EQ(inferred(op, in, attrs), computed(op, in, attrs)) << op << " of " << operands;
}

}  // namespace

TEST(ElementwiseTypes, UnaryAndScalarOpsInferWhatCoreRuntimeComputes) {
  const std::vector<std::pair<std::string, ad::Attrs>> ops = {
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc) {#name, {}},
#include "ember/ops/unary.def"
#undef EMBER_UNARY_OP
      {"logical_not", {}},
      {"detach", {}},
      {"leaky_relu", {{"negative_slope", 0.1}}},
      {"elu", {{"alpha", 1.0}}},
      {"gelu", {{"approximate", std::string("tanh")}}},
      {"softplus", {{"beta", 1.0}, {"threshold", 20.0}}},
      {"clamp", {{"min", 0.0}}},
      {"clamp", {{"min", -0.5}, {"max", 2.0}}},
      {"clamp", {{"max", 3.0}}},
      {"to_dtype", {{"dtype", std::string("float16")}}},
      {"to_dtype", {{"dtype", std::string("int32")}}},
      {"to_device", {{"device", std::string("cpu")}}},
  };
  const std::vector<std::string> scalar_ops = {"add_scalar",  "mul_scalar",     "rsub_scalar",
                                               "div_scalar",  "rdiv_scalar",    "pow_scalar",
                                               "rpow_scalar", "maximum_scalar", "minimum_scalar",
                                               "eq_scalar",   "ne_scalar",      "lt_scalar",
                                               "le_scalar",   "gt_scalar",      "ge_scalar"};
  for (DType dtype : kDTypes) {
    for (const auto& [op, attrs] : ops)
      expect_infer_matches_run(op, {ember::ones({2, 3}, dtype)}, attrs);
    for (const std::string& op : scalar_ops)
      for (double value : {2.0, 2.5, -1.0})
        expect_infer_matches_run(op, {ember::ones({2, 3}, dtype)}, {{"value", value}});
  }
}

TEST(ElementwiseTypes, BinaryOpsInferWhatCoreRuntimeComputes) {
  const std::vector<std::string> ops = {"add",
                                        "sub",
                                        "mul",
                                        "div",
                                        "pow",
                                        "maximum",
                                        "minimum",
                                        "floor_divide",
                                        "remainder",
                                        "eq",
                                        "ne",
                                        "lt",
                                        "le",
                                        "gt",
                                        "ge",
                                        "logical_and",
                                        "logical_or",
                                        "logical_xor",
                                        "relu_backward",
                                        "silu_backward",
                                        "sigmoid_backward",
                                        "tanh_backward"};
  for (DType da : kDTypes)
    for (DType db : kDTypes) {
      for (const std::string& op : ops) {
        expect_infer_matches_run(op, {ember::ones({3, 1}, da), ember::ones({4}, db)});
        // a 0-d operand beside one with dims, either side, and two 0-d operands
        expect_infer_matches_run(op, {ember::ones({3}, da), ember::ones({}, db)});
        expect_infer_matches_run(op, {ember::ones({}, da), ember::ones({3}, db)});
        expect_infer_matches_run(op, {ember::ones({}, da), ember::ones({}, db)});
      }
      expect_infer_matches_run("cat", {ember::ones({2}, da), ember::ones({3}, db)}, {{"dim", 0}});
      expect_infer_matches_run("stack", {ember::ones({2}, da), ember::ones({2}, db)}, {{"dim", 0}});
      expect_infer_matches_run("where", {ember::ones({4}, DType::Bool), ember::ones({3, 1}, da),
                                         ember::ones({}, db)});
      expect_infer_matches_run("where",
                               {ember::ones({4}, da), ember::ones({4}, db), ember::ones({4}, db)});
      expect_infer_matches_run("masked_fill", {ember::ones({3, 4}, da), ember::ones({4}, db)},
                               {{"value", 2.0}});
      expect_infer_matches_run("gelu_backward", {ember::ones({2}, da), ember::ones({2}, db)},
                               {{"approximate", std::string("none")}});
      expect_infer_matches_run("elu_backward", {ember::ones({2}, da), ember::ones({2}, db)},
                               {{"alpha", 1.0}});
    }
}

TEST(ElementwiseTypes, CreationOpsInferWhatCoreRuntimeComputes) {
  for (DType dtype : kDTypes) {
    expect_infer_matches_run("zeros_like", {ember::ones({2, 3}, dtype)});
    expect_infer_matches_run("ones_like", {ember::ones({}, dtype)});
    expect_infer_matches_run("full_like", {ember::ones({2}, dtype)}, {{"value", 3.0}});
    expect_infer_matches_run("full_like", {ember::ones({2}, dtype)}, {{"value", 300.0}});
  }
}

namespace {

// The message of the error of type E that building `build` in a fresh graph raises.
template <class E> std::string error_of(const std::function<void(ad::Graph&)>& build) {
  ad::Graph g;
  try {
    build(g);
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "another error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

ad::TensorType f32(const Shape& shape) { return {shape, DType::Float32, ember::Device()}; }

void expect_contains(const std::string& message, const std::vector<std::string>& parts) {
  for (const std::string& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

}  // namespace

TEST(ElementwiseErrors, BroadcastFailureNamesTheNodeAndBothShapes) {
  std::string m = error_of<ember::ShapeError>([](ad::Graph& g) {
    ad::Val a = g.input(f32({2, 3})), b = g.input(f32({4}));
    ad::add(a, b);
  });
  expect_contains(m, {"%2 = add(%0, %1)", "[2, 3]", "[4]", "broadcast"});
  m = error_of<ember::ShapeError>([](ad::Graph& g) {
    ad::where(g.input({{5}, DType::Bool, ember::Device()}), g.input(f32({2, 3})),
              g.input(f32({3})));
  });
  expect_contains(m, {"where", "cond is bool[5]", "a is f32[2,3]", "[5]", "[2, 3]"});
}

TEST(ElementwiseErrors, MixedDevicesAreADeviceError) {
  std::string m = error_of<ember::DeviceError>([](ad::Graph& g) {
    ad::mul(g.input(f32({3})), g.input({{3}, DType::Float32, ember::Device("cuda:0")}));
  });
  expect_contains(m, {"mul", "f32[3]", "f32[3]@cuda:0", "one device"});
}

TEST(ElementwiseErrors, WrongDtypesAreADTypeError) {
  std::string m = error_of<ember::DTypeError>(
      [](ad::Graph& g) { ad::where(g.input(f32({3})), g.input(f32({3})), g.input(f32({3}))); });
  expect_contains(m, {"where", "cond is f32[3]", "must be bool"});
  m = error_of<ember::DTypeError>([](ad::Graph& g) {
    ad::neg(g.input({{2}, DType::Bool, ember::Device()}));
  });
  expect_contains(m, {"neg", "x is bool[2]", "numeric"});
  m = error_of<ember::DTypeError>([](ad::Graph& g) {
    ad::relu_backward(g.input(f32({2})), g.input({{2}, DType::Int64, ember::Device()}));
  });
  expect_contains(m, {"relu_backward", "i64[2]", "floating"});
  m = error_of<ember::DTypeError>(
      [](ad::Graph& g) { ad::masked_fill(g.input(f32({2})), g.input(f32({2})), 0.0); });
  expect_contains(m, {"masked_fill", "mask is f32[2]", "must be bool"});
}

TEST(ElementwiseErrors, BadShapesAndValuesOfSelectionOps) {
  std::string m = error_of<ember::ShapeError>([](ad::Graph& g) {
    ad::masked_fill(g.input(f32({3, 4})), g.input({{3, 4, 1}, DType::Bool, ember::Device()}), 1.0);
  });
  expect_contains(m, {"masked_fill", "mask is bool[3,4,1]", "[3, 4]"});
  m = error_of<ember::ValueError>([](ad::Graph& g) {
    ad::masked_fill(g.input({{2}, DType::UInt8, ember::Device()}),
                    g.input({{2}, DType::Bool, ember::Device()}), 300.0);
  });
  expect_contains(m, {"masked_fill", "300", "uint8"});
  m = error_of<ember::ValueError>(
      [](ad::Graph& g) { ad::clamp(g.input(f32({2})), std::nullopt, std::nullopt); });
  expect_contains(m, {"clamp", "x is f32[2]", "min, max"});
  m = error_of<ember::ValueError>([](ad::Graph& g) { ad::gelu(g.input(f32({2})), "fast"); });
  expect_contains(m, {"gelu", "fast", "\"none\" or \"tanh\""});
  m = error_of<ember::ValueError>([](ad::Graph& g) {
    g.add("to_dtype", {g.input(f32({2}))}, {{"dtype", std::string("f128")}});
  });
  expect_contains(m, {"to_dtype", "f128"});
}

// Every op of core-runtime's binary.def, whose OpDef and dtype rule come from its line (the
// bitwise ops' Integral rule included), for every pair of operand dtypes.
TEST(ElementwiseTypes, TheBinarySchemasOpsInferWhatCoreRuntimeComputes) {
  const std::vector<std::string> ops = {
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc) #name,
#include "ember/ops/binary.def"
#undef EMBER_BINARY_OP
  };
  for (DType da : kDTypes)
    for (DType db : kDTypes)
      for (const std::string& op : ops) {
        expect_infer_matches_run(op, {ember::ones({3, 1}, da), ember::ones({4}, db)});
        expect_infer_matches_run(op, {ember::ones({3}, da), ember::ones({}, db)});
      }
}
