// elementwise.cpp — front functions of the elementwise family: check devices and dtypes,
// broadcast, pick the result dtype, cast the operands to it, allocate the output and call the
// device's kernel (ops/elementwise_kernels.h).
#include "ember/ops/elementwise.h"

#include <cfloat>
#include <cmath>
#include <limits>

#include "kernels.h"
#include "ops/checks.h"
#include "ops/elementwise_kernels.h"
#include "ops/out.h"

namespace ember {

const char* unary_op_name(UnaryOp op) {
  switch (op) {
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc) \
  case UnaryOp::Formula:                                      \
    return #name;
#include "ember/ops/unary.def"
#undef EMBER_UNARY_OP
    case UnaryOp::Clamp:
      return "clamp";
    case UnaryOp::LeakyRelu:
      return "leaky_relu";
    case UnaryOp::Elu:
      return "elu";
    case UnaryOp::Gelu:
      return "gelu";
    case UnaryOp::GeluTanh:
      return "gelu";
    case UnaryOp::Softplus:
      return "softplus";
    case UnaryOp::BitwiseNot:
      return "bitwise_not";
  }
  return "unary";
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc) \
  case BinaryOp::Formula:                                        \
    return #name;
#include "ember/ops/binary.def"
#undef EMBER_BINARY_OP
  }
  return "binary";
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

const char* predicate_op_name(PredicateOp op) {
  switch (op) {
    case PredicateOp::IsNan:
      return "isnan";
    case PredicateOp::IsInf:
      return "isinf";
    case PredicateOp::IsFinite:
      return "isfinite";
  }
  return "predicate";
}

void throw_not_numeric(const char* op, const std::string& who) {
  throw DTypeError(op, who +
                           "; expected a numeric dtype, not bool; cast first, e.g. "
                           "x.to(DType::Int64), or use a logical op");
}
void throw_two_bools(const char* op, const std::string& who) {
  throw DTypeError(op, who + "; " + op +
                           " is not defined for two bool tensors; use logical_xor / "
                           "logical_and, or cast to an integer dtype first");
}
void throw_not_integral(const char* op, const std::string& who) {
  throw DTypeError(op, who + "; " + op +
                           " needs integer or bool operands; cast the floating one first, "
                           "e.g. a.to(DType::Int64)");
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

// The dtypes rule of op (unary.def's column; Clamp keeps integers, the other ops with parameters
// compute in floating point).
UnaryDTypes dtypes_of(UnaryOp op) {
  switch (op) {
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc) \
  case UnaryOp::Formula:                                      \
    return UnaryDTypes::dtypes;
#include "ember/ops/unary.def"
#undef EMBER_UNARY_OP
    case UnaryOp::Clamp:
      return UnaryDTypes::Numeric;
    default:
      return UnaryDTypes::Floating;
  }
}

// Result dtype of a unary op on x (the rules in elementwise.h).
DType unary_dtype(UnaryOp op, const Tensor& x, const char* name) {
  if (op == UnaryOp::BitwiseNot) {
    if (is_floating(x.dtype()))
      throw DTypeError(name, operands({{"x", x}}) +
                                 "; expected an integer or bool dtype; cast first, e.g. "
                                 "x.to(DType::Int64)");
    return x.dtype();
  }
  return unary_result_dtype(name, dtypes_of(op), x.dtype(), [&] { return operands({{"x", x}}); });
}

// x as the kernels take it: of dtype t and broadcast to `shape`. x itself when it is both already,
// which is the common case and costs nothing (a new handle would allocate its shape and strides:
// at one element, that is a good part of the op's time); otherwise the cast and/or expanded view,
// kept alive in `holder`.
const Tensor& operand(const Tensor& x, DType t, const Shape& shape, Tensor& holder) {
  if (x.dtype() == t && x.shape() == shape) return x;
  holder = x.to(t).expand(shape);
  return holder;
}

// out = op(x), into the caller's out or (out == nullptr) a new tensor.
Tensor unary(UnaryOp op, const Tensor& x, const Tensor* out, double p0 = 0, double p1 = 0) {
  const char* name = unary_op_name(op);
  check_defined(name, {{"x", x}});
  DType t = unary_dtype(op, x, name);
  Tensor result = written_output(name, out, x.shape(), t, x.device(), {{"x", x}});
  auto kernel = unary_kernel(x.device());
  Tensor cast;
  if (result.numel() > 0) kernel(op, operand(x, t, x.shape(), cast), result, p0, p1);
  return result;
}

// The dtype a and b are computed in: promote_types, but a 0-d operand beside one with dims counts
// only by its kind (result_type).
DType promoted(const Tensor& a, const Tensor& b) {
  return result_type(a.dtype(), a.dim() == 0, b.dtype(), b.dim() == 0);
}

// The dtypes rule of op (binary.def's column).
BinaryDTypes dtypes_of(BinaryOp op) {
  switch (op) {
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc) \
  case BinaryOp::Formula:                                        \
    return BinaryDTypes::dtypes;
#include "ember/ops/binary.def"
#undef EMBER_BINARY_OP
  }
  return BinaryDTypes::Promoted;
}

// Result dtype of op on a and b; `name` is the op as errors call it (add_ for the in-place form).
DType binary_result_dtype(BinaryOp op, const Tensor& a, const Tensor& b, const char* name) {
  return binary_result_dtype(name, dtypes_of(op), promoted(a, b), [&] {
    return operands({{"a", a}, {"b", b}});
  });
}

// out = a op b, with a and b cast to the dtype they are computed in, which is out's unless op
// gives bool, and broadcast to out's shape.
void run_binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  auto kernel = binary_kernel(out.device());
  if (out.numel() == 0) return;
  const DType t = dtypes_of(op) == BinaryDTypes::Bool ? promoted(a, b) : out.dtype();
  Tensor a_holder, b_holder;
  kernel(op, operand(a, t, out.shape(), a_holder), operand(b, t, out.shape(), b_holder), out);
}

// `name` overrides the op's own name in errors (logical_not is eq(x, 0)).
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor* out,
              const char* name = nullptr) {
  if (!name) name = binary_op_name(op);
  check_same_device(name, {{"a", a}, {"b", b}});
  Shape shape = broadcast_all(name, {{"a", a}, {"b", b}});
  DType t = binary_result_dtype(op, a, b, name);
  Tensor result = written_output(name, out, shape, t, a.device(), {{"a", a}, {"b", b}});
  run_binary(op, a, b, result);
  return result;
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

// `input_name` is "x" for the ops differentiated from their input, "y" for those from the output.
Tensor backward(BackwardOp op, const Tensor& grad, const Tensor& input, const char* input_name,
                const Tensor* out, double p0 = 0, double p1 = 0) {
  const char* name = backward_op_name(op);
  check_same_device(name, {{"grad", grad}, {input_name, input}});
  check_floating(name, {{"grad", grad}, {input_name, input}});
  Shape shape = broadcast_all(name, {{"grad", grad}, {input_name, input}});
  DType t = promoted(grad, input);
  Tensor result =
      written_output(name, out, shape, t, grad.device(), {{"grad", grad}, {input_name, input}});
  auto kernel = backward_kernel(grad.device());
  Tensor grad_holder, input_holder;
  if (result.numel() > 0)
    kernel(op, operand(grad, t, shape, grad_holder), operand(input, t, shape, input_holder), result,
           p0, p1);
  return result;
}

bool gelu_uses_tanh(const std::string& approximate, const char* op) {
  if (approximate == "none") return false;
  if (approximate == "tanh") return true;
  throw ValueError(op, "approximate is \"" + approximate + "\"; expected \"none\" or \"tanh\"");
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor* out) {
  check_same_device("where", {{"cond", cond}, {"a", a}, {"b", b}});
  if (cond.dtype() != DType::Bool)
    throw DTypeError("where", operands({{"cond", cond}, {"a", a}, {"b", b}}) +
                                  "; cond must be bool; build it with a comparison such as "
                                  "gt(x, 0.0) or cast it with cond.to(DType::Bool)");
  Shape shape = broadcast_all("where", {{"cond", cond}, {"a", a}, {"b", b}});
  DType t = promoted(a, b);
  Tensor result =
      written_output("where", out, shape, t, a.device(), {{"cond", cond}, {"a", a}, {"b", b}});
  auto kernel = where_kernel(a.device());
  Tensor cond_holder, a_holder, b_holder;
  if (result.numel() > 0)
    kernel(operand(cond, DType::Bool, shape, cond_holder), operand(a, t, shape, a_holder),
           operand(b, t, shape, b_holder), result);
  return result;
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max,
             const Tensor* out) {
  check_defined("clamp", {{"x", x}});
  if (!min && !max)
    throw ValueError("clamp", operands({{"x", x}}) + "; at least one of min and max must be given");
  DType t = x.dtype();
  if (min) t = promote_types(t, scalar_dtype(x.dtype(), *min));
  if (max) t = promote_types(t, scalar_dtype(x.dtype(), *max));
  return unary(UnaryOp::Clamp, x.to(t), out, min.value_or(-kInf), max.value_or(kInf));
}

Tensor logical_not(const Tensor& x, const Tensor* out) {
  check_defined("logical_not", {{"x", x}});
  Tensor zero = Tensor::empty({}, x.dtype(), x.device(), "logical_not").fill_(0.0);
  // "not x" is "x == 0", NaN counting as true
  return binary(BinaryOp::Eq, x, zero, out, "logical_not");
}

Tensor predicate(PredicateOp op, const Tensor& x, const Tensor* out) {
  const char* name = predicate_op_name(op);
  check_defined(name, {{"x", x}});
  Tensor result = written_output(name, out, x.shape(), DType::Bool, x.device(), {{"x", x}});
  auto kernel = predicate_kernel(x.device());
  if (result.numel() > 0) kernel(op, x, result);
  return result;
}

// The largest finite value of a floating dtype.
double floating_max(DType t) {
  switch (t) {
    case DType::Float16:
      return 65504.0;
    case DType::BFloat16:
      return 0x1.fep127;
    case DType::Float32:
      return FLT_MAX;
    default:
      return DBL_MAX;
  }
}

Tensor nan_to_num(const Tensor& x, double nan, std::optional<double> posinf,
                  std::optional<double> neginf, const Tensor* out) {
  check_defined("nan_to_num", {{"x", x}});
  Tensor result = written_output("nan_to_num", out, x.shape(), x.dtype(), x.device(), {{"x", x}});
  double values[3] = {0, 0, 0};  // integers hold no NaN or infinity: the values go unused
  if (is_floating(x.dtype())) {
    const double max = floating_max(x.dtype());
    values[0] = nan;
    values[1] = posinf.value_or(max);
    values[2] = neginf.value_or(-max);
    for (double v : values) check_value_fits("nan_to_num", v, x.dtype());
  }
  auto kernel = nan_to_num_kernel(x.device());
  if (result.numel() > 0) kernel(x, result, values[0], values[1], values[2]);
  return result;
}

}  // namespace

// Every op below comes as `Tensor f(args)` and `const Tensor& f_out(const Tensor& out, args)`
// (the unary.def ops as `Tensor f(x, OutArg out = {})` and the older `f_out`): each calls one
// internal function, which takes out == nullptr for "allocate the result". The macros write these
// pairs for ops of one argument list.
// binary.def's ops; a scalar becomes a 0-d tensor (scalar_like) and takes the tensor path.
#define EMBER_SCALAR_RIGHT(fn)                                              \
  Tensor fn(const Tensor& a, double b) { return fn(a, scalar_like(a, b)); } \
  const Tensor& fn##_out(const Tensor& out, const Tensor& a, double b) {    \
    return fn##_out(out, a, scalar_like(a, b));                             \
  }
#define EMBER_SCALAR_LEFT(fn)                                               \
  Tensor fn(double a, const Tensor& b) { return fn(scalar_like(b, a), b); } \
  const Tensor& fn##_out(const Tensor& out, double a, const Tensor& b) {    \
    return fn##_out(out, scalar_like(b, a), b);                             \
  }
#define EMBER_SCALAR_None(fn)
#define EMBER_SCALAR_Right(fn) EMBER_SCALAR_RIGHT(fn)
#define EMBER_SCALAR_Both(fn) EMBER_SCALAR_RIGHT(fn) EMBER_SCALAR_LEFT(fn)
#define EMBER_PREDICATE(fn, OP)                                                 \
  Tensor fn(const Tensor& x) { return predicate(PredicateOp::OP, x, nullptr); } \
  const Tensor& fn##_out(const Tensor& out, const Tensor& x) {                  \
    predicate(PredicateOp::OP, x, &out);                                        \
    return out;                                                                 \
  }

// ---- the plain unary ops and activations of unary.def ----
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc)                                \
  Tensor name(const Tensor& x, OutArg out) { return unary(UnaryOp::Formula, x, out.get()); } \
  const Tensor& name##_out(const Tensor& out, const Tensor& x) {                             \
    unary(UnaryOp::Formula, x, &out);                                                        \
    return out;                                                                              \
  }
#include "ember/ops/unary.def"
#undef EMBER_UNARY_OP
Tensor bitwise_not(const Tensor& x) { return unary(UnaryOp::BitwiseNot, x, nullptr); }
const Tensor& bitwise_not_out(const Tensor& out, const Tensor& x) {
  unary(UnaryOp::BitwiseNot, x, &out);
  return out;
}

// ---- activations with parameters ----
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary(UnaryOp::LeakyRelu, x, nullptr, negative_slope);
}
const Tensor& leaky_relu_out(const Tensor& out, const Tensor& x, double negative_slope) {
  unary(UnaryOp::LeakyRelu, x, &out, negative_slope);
  return out;
}
Tensor elu(const Tensor& x, double alpha) { return unary(UnaryOp::Elu, x, nullptr, alpha); }
const Tensor& elu_out(const Tensor& out, const Tensor& x, double alpha) {
  unary(UnaryOp::Elu, x, &out, alpha);
  return out;
}
Tensor gelu(const Tensor& x, const std::string& approximate) {
  return unary(gelu_uses_tanh(approximate, "gelu") ? UnaryOp::GeluTanh : UnaryOp::Gelu, x, nullptr);
}
const Tensor& gelu_out(const Tensor& out, const Tensor& x, const std::string& approximate) {
  unary(gelu_uses_tanh(approximate, "gelu") ? UnaryOp::GeluTanh : UnaryOp::Gelu, x, &out);
  return out;
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
  return unary(UnaryOp::Softplus, x, nullptr, beta, threshold);
}
const Tensor& softplus_out(const Tensor& out, const Tensor& x, double beta, double threshold) {
  unary(UnaryOp::Softplus, x, &out, beta, threshold);
  return out;
}

// ---- activation backward ----
#define EMBER_BACKWARD_FRONT(fn, OP, INPUT)                                            \
  Tensor fn(const Tensor& grad, const Tensor& INPUT) {                                 \
    return backward(BackwardOp::OP, grad, INPUT, #INPUT, nullptr);                     \
  }                                                                                    \
  const Tensor& fn##_out(const Tensor& out, const Tensor& grad, const Tensor& INPUT) { \
    backward(BackwardOp::OP, grad, INPUT, #INPUT, &out);                               \
    return out;                                                                        \
  }
EMBER_BACKWARD_FRONT(relu_backward, Relu, x)
EMBER_BACKWARD_FRONT(silu_backward, Silu, x)
EMBER_BACKWARD_FRONT(sigmoid_backward, Sigmoid, y)
EMBER_BACKWARD_FRONT(tanh_backward, Tanh, y)
#undef EMBER_BACKWARD_FRONT
Tensor leaky_relu_backward(const Tensor& grad, const Tensor& x, double negative_slope) {
  return backward(BackwardOp::LeakyRelu, grad, x, "x", nullptr, negative_slope);
}
const Tensor& leaky_relu_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                                      double negative_slope) {
  backward(BackwardOp::LeakyRelu, grad, x, "x", &out, negative_slope);
  return out;
}
Tensor elu_backward(const Tensor& grad, const Tensor& x, double alpha) {
  return backward(BackwardOp::Elu, grad, x, "x", nullptr, alpha);
}
const Tensor& elu_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                               double alpha) {
  backward(BackwardOp::Elu, grad, x, "x", &out, alpha);
  return out;
}
Tensor gelu_backward(const Tensor& grad, const Tensor& x, const std::string& approximate) {
  bool tanh_form = gelu_uses_tanh(approximate, "gelu_backward");
  return backward(tanh_form ? BackwardOp::GeluTanh : BackwardOp::Gelu, grad, x, "x", nullptr);
}
const Tensor& gelu_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                                const std::string& approximate) {
  bool tanh_form = gelu_uses_tanh(approximate, "gelu_backward");
  backward(tanh_form ? BackwardOp::GeluTanh : BackwardOp::Gelu, grad, x, "x", &out);
  return out;
}
Tensor softplus_backward(const Tensor& grad, const Tensor& x, double beta, double threshold) {
  return backward(BackwardOp::Softplus, grad, x, "x", nullptr, beta, threshold);
}
const Tensor& softplus_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                                    double beta, double threshold) {
  backward(BackwardOp::Softplus, grad, x, "x", &out, beta, threshold);
  return out;
}

// ---- the binary ops of binary.def, with their scalar forms ----
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc)                  \
  Tensor name(const Tensor& a, const Tensor& b) {                                 \
    return binary(BinaryOp::Formula, a, b, nullptr);                              \
  }                                                                               \
  const Tensor& name##_out(const Tensor& out, const Tensor& a, const Tensor& b) { \
    binary(BinaryOp::Formula, a, b, &out);                                        \
    return out;                                                                   \
  }                                                                               \
  EMBER_SCALAR_##scalar(name)
#include "ember/ops/binary.def"
#undef EMBER_BINARY_OP
Tensor logical_not(const Tensor& x) { return logical_not(x, nullptr); }
const Tensor& logical_not_out(const Tensor& out, const Tensor& x) {
  logical_not(x, &out);
  return out;
}

// ---- value tests ----
EMBER_PREDICATE(isnan, IsNan)
EMBER_PREDICATE(isinf, IsInf)
EMBER_PREDICATE(isfinite, IsFinite)
Tensor nan_to_num(const Tensor& x, double nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  return nan_to_num(x, nan, posinf, neginf, nullptr);
}
const Tensor& nan_to_num_out(const Tensor& out, const Tensor& x, double nan,
                             std::optional<double> posinf, std::optional<double> neginf) {
  nan_to_num(x, nan, posinf, neginf, &out);
  return out;
}

#undef EMBER_SCALAR_RIGHT
#undef EMBER_SCALAR_LEFT
#undef EMBER_SCALAR_None
#undef EMBER_SCALAR_Right
#undef EMBER_SCALAR_Both
#undef EMBER_PREDICATE

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
  return where(cond, a, b, nullptr);
}
const Tensor& where_out(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  where(cond, a, b, &out);
  return out;
}
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  return clamp(x, min, max, nullptr);
}
const Tensor& clamp_out(const Tensor& out, const Tensor& x, std::optional<double> min,
                        std::optional<double> max) {
  clamp(x, min, max, &out);
  return out;
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
