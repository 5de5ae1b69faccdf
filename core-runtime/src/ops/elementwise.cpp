// elementwise.cpp — front functions of the elementwise family: check devices and dtypes,
// broadcast, pick the result dtype, cast the operands to it, allocate the output and call the
// device's kernel (ops/elementwise_kernels.h).
#include "ember/ops/elementwise.h"

#include <cmath>
#include <limits>

#include "kernels.h"
#include "ops/checks.h"
#include "ops/elementwise_kernels.h"

namespace ember {

const char* unary_op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
      return "neg";
    case UnaryOp::Abs:
      return "abs";
    case UnaryOp::Sign:
      return "sign";
    case UnaryOp::Relu:
      return "relu";
    case UnaryOp::Clamp:
      return "clamp";
    case UnaryOp::Exp:
      return "exp";
    case UnaryOp::Log:
      return "log";
    case UnaryOp::Log1p:
      return "log1p";
    case UnaryOp::Sqrt:
      return "sqrt";
    case UnaryOp::Rsqrt:
      return "rsqrt";
    case UnaryOp::Sin:
      return "sin";
    case UnaryOp::Cos:
      return "cos";
    case UnaryOp::Tanh:
      return "tanh";
    case UnaryOp::Sigmoid:
      return "sigmoid";
    case UnaryOp::LeakyRelu:
      return "leaky_relu";
    case UnaryOp::Elu:
      return "elu";
    case UnaryOp::Gelu:
      return "gelu";
    case UnaryOp::GeluTanh:
      return "gelu";
    case UnaryOp::Silu:
      return "silu";
    case UnaryOp::Softplus:
      return "softplus";
  }
  return "unary";
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "add";
    case BinaryOp::Sub:
      return "sub";
    case BinaryOp::Mul:
      return "mul";
    case BinaryOp::Div:
      return "div";
    case BinaryOp::Pow:
      return "pow";
    case BinaryOp::Maximum:
      return "maximum";
    case BinaryOp::Minimum:
      return "minimum";
  }
  return "binary";
}

const char* compare_op_name(CompareOp op) {
  switch (op) {
    case CompareOp::Eq:
      return "eq";
    case CompareOp::Ne:
      return "ne";
    case CompareOp::Lt:
      return "lt";
    case CompareOp::Le:
      return "le";
    case CompareOp::Gt:
      return "gt";
    case CompareOp::Ge:
      return "ge";
    case CompareOp::LogicalAnd:
      return "logical_and";
    case CompareOp::LogicalOr:
      return "logical_or";
    case CompareOp::LogicalXor:
      return "logical_xor";
  }
  return "compare";
}

const char* backward_op_name(BackwardOp op) {
  switch (op) {
    case BackwardOp::Relu:
      return "relu_backward";
    case BackwardOp::LeakyRelu:
      return "leaky_relu_backward";
    case BackwardOp::Elu:
      return "elu_backward";
    case BackwardOp::Gelu:
      return "gelu_backward";
    case BackwardOp::GeluTanh:
      return "gelu_backward";
    case BackwardOp::Silu:
      return "silu_backward";
    case BackwardOp::Softplus:
      return "softplus_backward";
    case BackwardOp::Sigmoid:
      return "sigmoid_backward";
    case BackwardOp::Tanh:
      return "tanh_backward";
  }
  return "backward";
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The dtype a double scalar takes beside a tensor of dtype t (the scalar rule in elementwise.h).
DType scalar_dtype(DType t, double s) {
  if (is_floating(t)) return t;
  bool integral = std::isfinite(s) && std::floor(s) == s;
  if (!integral) return DType::Float32;
  return t == DType::Bool ? DType::Int64 : t;
}

// A 0-d tensor holding s, on t's device, typed by the scalar rule; it broadcasts like any operand.
// Arithmetic with an integer scalar that t's dtype cannot hold (uint8 x * -1) is allowed, as in
// PyTorch, so the scalar is filled by the kernel directly, past fill_'s range check.
Tensor scalar_like(const Tensor& t, double s) {
  Tensor out = Tensor::empty({}, scalar_dtype(t.dtype(), s), t.device(), "scalar");
  fill_kernel(out.device())(out, s);
  return out;
}

// The broadcast shape of the operands, or a ShapeError naming them all.
Shape broadcast_all(const char* op, std::initializer_list<Named> args) {
  Shape shape = args.begin()->tensor.shape();
  try {
    for (const Named& a : args) shape = broadcast_shapes(shape, a.tensor.shape(), "");
  } catch (const ShapeError& e) {
    throw ShapeError(op, operands(args) + "; " + e.what());
  }
  return shape;
}

// Whether op keeps an integer input's dtype (the others compute in floating point).
bool keeps_integer_dtype(UnaryOp op) {
  return op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Sign || op == UnaryOp::Relu ||
         op == UnaryOp::Clamp;
}

Tensor unary(UnaryOp op, const Tensor& x, double p0 = 0, double p1 = 0) {
  const char* name = unary_op_name(op);
  check_defined(name, {{"x", x}});
  DType t = x.dtype();
  if (keeps_integer_dtype(op) && t == DType::Bool)
    throw DTypeError(name, operands({{"x", x}}) +
                               "; expected a numeric dtype, not bool; cast first, e.g. "
                               "x.to(DType::Int64)");
  if (!keeps_integer_dtype(op) && !is_floating(t)) t = DType::Float32;
  Tensor out = Tensor::empty(x.shape(), t, x.device(), name);
  auto kernel = unary_kernel(x.device());
  if (out.numel() > 0) kernel(op, x.to(t), out, p0, p1);
  return out;
}

// Result dtype of a binary arithmetic op on a and b.
DType binary_result_dtype(BinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  DType t = promote_types(a.dtype(), b.dtype());
  if (op == BinaryOp::Div && !is_floating(t)) t = DType::Float32;
  if (t == DType::Bool && (op == BinaryOp::Sub || op == BinaryOp::Pow))
    throw DTypeError(name, operands({{"a", a}, {"b", b}}) + "; " + binary_op_name(op) +
                               " is not defined for two bool tensors; use logical_xor / "
                               "logical_and, or cast to an integer dtype first");
  return t;
}

// out = a op b, with a and b cast to out's dtype and broadcast to its shape.
void run_binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  auto kernel = binary_kernel(out.device());
  if (out.numel() == 0) return;
  kernel(op, a.to(out.dtype()).expand(out.shape()), b.to(out.dtype()).expand(out.shape()), out);
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_op_name(op);
  check_same_device(name, {{"a", a}, {"b", b}});
  Shape shape = broadcast_all(name, {{"a", a}, {"b", b}});
  Tensor out = Tensor::empty(shape, binary_result_dtype(op, a, b, name), a.device(), name);
  run_binary(op, a, b, out);
  return out;
}

// PyTorch's in-place cast rule: no float into an integer tensor, nothing but bool into bool.
bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

const Tensor& binary_inplace(BinaryOp op, const Tensor& self, const Tensor& other) {
  const std::string name = std::string(binary_op_name(op)) + "_";
  check_same_device(name.c_str(), {{"self", self}, {"other", other}});
  Shape shape = broadcast_all(name.c_str(), {{"self", self}, {"other", other}});
  if (shape != self.shape())
    throw ShapeError(name, operands({{"self", self}, {"other", other}}) + "; the result " +
                               shape_str(shape) + " must have self's shape " +
                               shape_str(self.shape()) + ": other must broadcast to self");
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.stride(d) == 0 && self.size(d) > 1)
      throw ValueError(name, operands({{"self", self}}) +
                                 "; self is an expanded view whose elements share memory, so an "
                                 "in-place result is ambiguous; write into self.clone()");
  DType t = binary_result_dtype(op, self, other, name.c_str());
  if (!can_cast(t, self.dtype()))
    throw DTypeError(name, operands({{"self", self}, {"other", other}}) + "; the result is " +
                               dtype_name(t) + ", which cannot be stored in self's " +
                               dtype_name(self.dtype()) + "; use the out-of-place " +
                               binary_op_name(op) + " or cast self first");
  // The kernel reads element i of both operands before writing element i of out, so out may be
  // self itself, but not another view of self's memory: copy such an `other` first.
  Tensor safe_other = other.shares_storage(self) && !same_view(other, self) ? other.clone() : other;
  self.bump_version();
  if (t == self.dtype()) {
    Tensor out = self;
    run_binary(op, self, safe_other, out);
  } else {
    Tensor result = Tensor::empty(shape, t, self.device(), name.c_str());
    run_binary(op, self, safe_other, result);
    Tensor(self).copy_(result);
  }
  return self;
}

Tensor compare(CompareOp op, const Tensor& a, const Tensor& b) {
  const char* name = compare_op_name(op);
  check_same_device(name, {{"a", a}, {"b", b}});
  Shape shape = broadcast_all(name, {{"a", a}, {"b", b}});
  DType t = promote_types(a.dtype(), b.dtype());
  Tensor out = Tensor::empty(shape, DType::Bool, a.device(), name);
  auto kernel = compare_kernel(a.device());
  if (out.numel() > 0) kernel(op, a.to(t).expand(shape), b.to(t).expand(shape), out);
  return out;
}

// `input_name` is "x" for the ops differentiated from their input, "y" for those from the output.
Tensor backward(BackwardOp op, const Tensor& grad, const Tensor& input, const char* input_name,
                double p0 = 0, double p1 = 0) {
  const char* name = backward_op_name(op);
  check_same_device(name, {{"grad", grad}, {input_name, input}});
  check_floating(name, {{"grad", grad}, {input_name, input}});
  Shape shape = broadcast_all(name, {{"grad", grad}, {input_name, input}});
  DType t = promote_types(grad.dtype(), input.dtype());
  Tensor out = Tensor::empty(shape, t, grad.device(), name);
  auto kernel = backward_kernel(grad.device());
  if (out.numel() > 0) kernel(op, grad.to(t).expand(shape), input.to(t).expand(shape), out, p0, p1);
  return out;
}

bool gelu_uses_tanh(const std::string& approximate, const char* op) {
  if (approximate == "none") return false;
  if (approximate == "tanh") return true;
  throw ValueError(op, "approximate is \"" + approximate + "\"; expected \"none\" or \"tanh\"");
}

}  // namespace

// ---- unary and activations ----
Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, x); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::Abs, x); }
Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::Log, x); }
Tensor log1p(const Tensor& x) { return unary(UnaryOp::Log1p, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary(UnaryOp::Rsqrt, x); }
Tensor sin(const Tensor& x) { return unary(UnaryOp::Sin, x); }
Tensor cos(const Tensor& x) { return unary(UnaryOp::Cos, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, x); }
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary(UnaryOp::LeakyRelu, x, negative_slope);
}
Tensor elu(const Tensor& x, double alpha) { return unary(UnaryOp::Elu, x, alpha); }
Tensor gelu(const Tensor& x, const std::string& approximate) {
  return unary(gelu_uses_tanh(approximate, "gelu") ? UnaryOp::GeluTanh : UnaryOp::Gelu, x);
}
Tensor silu(const Tensor& x) { return unary(UnaryOp::Silu, x); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return unary(UnaryOp::Softplus, x, beta, threshold);
}

// ---- activation backward ----
Tensor relu_backward(const Tensor& grad, const Tensor& x) {
  return backward(BackwardOp::Relu, grad, x, "x");
}
Tensor leaky_relu_backward(const Tensor& grad, const Tensor& x, double negative_slope) {
  return backward(BackwardOp::LeakyRelu, grad, x, "x", negative_slope);
}
Tensor elu_backward(const Tensor& grad, const Tensor& x, double alpha) {
  return backward(BackwardOp::Elu, grad, x, "x", alpha);
}
Tensor gelu_backward(const Tensor& grad, const Tensor& x, const std::string& approximate) {
  bool tanh_form = gelu_uses_tanh(approximate, "gelu_backward");
  return backward(tanh_form ? BackwardOp::GeluTanh : BackwardOp::Gelu, grad, x, "x");
}
Tensor silu_backward(const Tensor& grad, const Tensor& x) {
  return backward(BackwardOp::Silu, grad, x, "x");
}
Tensor softplus_backward(const Tensor& grad, const Tensor& x, double beta, double threshold) {
  return backward(BackwardOp::Softplus, grad, x, "x", beta, threshold);
}
Tensor sigmoid_backward(const Tensor& grad, const Tensor& y) {
  return backward(BackwardOp::Sigmoid, grad, y, "y");
}
Tensor tanh_backward(const Tensor& grad, const Tensor& y) {
  return backward(BackwardOp::Tanh, grad, y, "y");
}

// ---- binary arithmetic ----
Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Minimum, a, b); }

Tensor add(const Tensor& a, double b) { return add(a, scalar_like(a, b)); }
Tensor add(double a, const Tensor& b) { return add(scalar_like(b, a), b); }
Tensor sub(const Tensor& a, double b) { return sub(a, scalar_like(a, b)); }
Tensor sub(double a, const Tensor& b) { return sub(scalar_like(b, a), b); }
Tensor mul(const Tensor& a, double b) { return mul(a, scalar_like(a, b)); }
Tensor mul(double a, const Tensor& b) { return mul(scalar_like(b, a), b); }
Tensor div(const Tensor& a, double b) { return div(a, scalar_like(a, b)); }
Tensor div(double a, const Tensor& b) { return div(scalar_like(b, a), b); }
Tensor pow(const Tensor& a, double b) { return pow(a, scalar_like(a, b)); }
Tensor pow(double a, const Tensor& b) { return pow(scalar_like(b, a), b); }
Tensor maximum(const Tensor& a, double b) { return maximum(a, scalar_like(a, b)); }
Tensor minimum(const Tensor& a, double b) { return minimum(a, scalar_like(a, b)); }

// ---- comparisons and logic ----
Tensor eq(const Tensor& a, const Tensor& b) { return compare(CompareOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(CompareOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(CompareOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(CompareOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(CompareOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(CompareOp::Ge, a, b); }
Tensor eq(const Tensor& a, double b) { return eq(a, scalar_like(a, b)); }
Tensor ne(const Tensor& a, double b) { return ne(a, scalar_like(a, b)); }
Tensor lt(const Tensor& a, double b) { return lt(a, scalar_like(a, b)); }
Tensor le(const Tensor& a, double b) { return le(a, scalar_like(a, b)); }
Tensor gt(const Tensor& a, double b) { return gt(a, scalar_like(a, b)); }
Tensor ge(const Tensor& a, double b) { return ge(a, scalar_like(a, b)); }
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::LogicalAnd, a, b);
}
Tensor logical_or(const Tensor& a, const Tensor& b) { return compare(CompareOp::LogicalOr, a, b); }
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::LogicalXor, a, b);
}
Tensor logical_not(const Tensor& x) {
  check_defined("logical_not", {{"x", x}});
  Tensor zero = Tensor::empty({}, x.dtype(), x.device(), "logical_not").fill_(0.0);
  return compare(CompareOp::Eq, x, zero);  // "not x" is "x == 0", NaN counting as true
}

// ---- in place ----
const Tensor& add_(const Tensor& self, const Tensor& other) {
  return binary_inplace(BinaryOp::Add, self, other);
}
const Tensor& sub_(const Tensor& self, const Tensor& other) {
  return binary_inplace(BinaryOp::Sub, self, other);
}
const Tensor& mul_(const Tensor& self, const Tensor& other) {
  return binary_inplace(BinaryOp::Mul, self, other);
}
const Tensor& div_(const Tensor& self, const Tensor& other) {
  return binary_inplace(BinaryOp::Div, self, other);
}
const Tensor& add_(const Tensor& self, double other) {
  return add_(self, scalar_like(self, other));
}
const Tensor& sub_(const Tensor& self, double other) {
  return sub_(self, scalar_like(self, other));
}
const Tensor& mul_(const Tensor& self, double other) {
  return mul_(self, scalar_like(self, other));
}
const Tensor& div_(const Tensor& self, double other) {
  return div_(self, scalar_like(self, other));
}

// ---- selection ----
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_same_device("where", {{"cond", cond}, {"a", a}, {"b", b}});
  if (cond.dtype() != DType::Bool)
    throw DTypeError("where", operands({{"cond", cond}, {"a", a}, {"b", b}}) +
                                  "; cond must be bool; build it with a comparison such as "
                                  "gt(x, 0.0) or cast it with cond.to(DType::Bool)");
  Shape shape = broadcast_all("where", {{"cond", cond}, {"a", a}, {"b", b}});
  DType t = promote_types(a.dtype(), b.dtype());
  Tensor out = Tensor::empty(shape, t, a.device(), "where");
  auto kernel = where_kernel(a.device());
  if (out.numel() > 0)
    kernel(cond.expand(shape), a.to(t).expand(shape), b.to(t).expand(shape), out);
  return out;
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  check_defined("clamp", {{"x", x}});
  if (!min && !max)
    throw ValueError("clamp", operands({{"x", x}}) + "; at least one of min and max must be given");
  DType t = x.dtype();
  if (min) t = promote_types(t, scalar_dtype(x.dtype(), *min));
  if (max) t = promote_types(t, scalar_dtype(x.dtype(), *max));
  return unary(UnaryOp::Clamp, x.to(t), min.value_or(-kInf), max.value_or(kInf));
}

// ---- operators ----
Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& a, double b) { return add(a, b); }
Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
Tensor operator/(const Tensor& a, double b) { return div(a, b); }
Tensor operator+(double a, const Tensor& b) { return add(a, b); }
Tensor operator-(double a, const Tensor& b) { return sub(a, b); }
Tensor operator*(double a, const Tensor& b) { return mul(a, b); }
Tensor operator/(double a, const Tensor& b) { return div(a, b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator==(const Tensor& a, double b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, double b) { return ne(a, b); }
Tensor operator<(const Tensor& a, double b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, double b) { return le(a, b); }
Tensor operator>(const Tensor& a, double b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, double b) { return ge(a, b); }
const Tensor& operator+=(const Tensor& self, const Tensor& other) { return add_(self, other); }
const Tensor& operator-=(const Tensor& self, const Tensor& other) { return sub_(self, other); }
const Tensor& operator*=(const Tensor& self, const Tensor& other) { return mul_(self, other); }
const Tensor& operator/=(const Tensor& self, const Tensor& other) { return div_(self, other); }
const Tensor& operator+=(const Tensor& self, double other) { return add_(self, other); }
const Tensor& operator-=(const Tensor& self, double other) { return sub_(self, other); }
const Tensor& operator*=(const Tensor& self, double other) { return mul_(self, other); }
const Tensor& operator/=(const Tensor& self, double other) { return div_(self, other); }

}  // namespace ember
