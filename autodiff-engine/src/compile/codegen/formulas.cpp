// formulas.cpp — the per-element formulas of generated source (see formulas.h). Each mirrors its
// functor in core-runtime/src/ops/elementwise_math.h with the same order of operations.
#include "formulas.h"

#include <algorithm>

#include "c_types.h"
#include "ember/error.h"

namespace ember::autodiff::compile::codegen {
namespace {

constexpr double kSqrt1_2 = 0.70710678118654752440;      // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/sqrt(2*pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kGeluCubic = 0.044715;                  // tanh-approximation coefficient

std::string v(int node) { return "v" + std::to_string(node); }

// Renders formulas over compute type t: literals and math functions of that type. `vector`: the
// library's vectorisable float functions (the CPU prelude's e_vexp, ...) stand for exp, log,
// tanh, sigmoid and erf, as in the library's CPU kernels.
struct Writer {
  DType t;
  bool vector;
  std::string lit(double value) const { return literal(value, t); }
  std::string fn(const char* name, const std::string& x) const {
    const std::string n = name;
    if (vector && (n == "exp" || n == "log" || n == "tanh" || n == "erf"))
      return "e_v" + n + "(" + x + ")";
    return math_function(name, t) + "(" + x + ")";
  }
  std::string sigmoid(const std::string& x) const {
    if (vector) return "e_vsigmoid(" + x + ")";
    return "(" + lit(1) + " / (" + lit(1) + " + " + fn("exp", "-" + x) + "))";
  }
};

// a `op` b, parenthesised.
std::string infix(const std::string& a, const char* op, const std::string& b) {
  return "(" + a + " " + op + " " + b + ")";
}

// maximum (`pick` ">") or minimum ("<") of a and b, NaN in either operand giving NaN.
std::string nan_or_pick(const std::string& a, const char* pick, const std::string& b) {
  return "(" + a + " != " + a + " ? " + a + " : (" + b + " != " + b + " ? " + b + " : (" + a + " " +
         pick + " " + b + " ? " + a + " : " + b + ")))";
}

// The expression of a unary or binary op on operands a (and b); empty for the ops written as
// statements (the backwards of gelu and silu, clamp).
std::string expression(FusedOp op, const Writer& w, const std::string& a, const std::string& b) {
  switch (op) {
    case FusedOp::Neg:
      return "-" + a;
    case FusedOp::Abs:
      return "(" + a + " < 0 ? -" + a + " : " + a + ")";
    case FusedOp::Relu:
      return "(" + a + " < 0 ? " + w.lit(0) + " : " + a + ")";
    case FusedOp::Exp:  // one math function of a, named as the op
    case FusedOp::Log:
    case FusedOp::Sqrt:
    case FusedOp::Sin:
    case FusedOp::Cos:
    case FusedOp::Tanh:
    case FusedOp::Erf:
      return w.fn(fused_op_name(op), a);
    case FusedOp::Rsqrt:
      return "(" + w.lit(1) + " / " + w.fn("sqrt", a) + ")";
    case FusedOp::Sigmoid:
      return w.sigmoid(a);
    case FusedOp::Reciprocal:
      return "(" + w.lit(1) + " / " + a + ")";
    case FusedOp::Gelu:  // x Phi(x)
      return "((" + w.lit(0.5) + " * " + a + ") * (" + w.lit(1) + " + " +
             w.fn("erf", a + " * " + w.lit(kSqrt1_2)) + "))";
    case FusedOp::GeluTanh: {  // Phi(x) ~ (1 + tanh(u)) / 2, u = sqrt(2/pi) (x + 0.044715 x^3)
      const std::string u = w.lit(kSqrt2OverPi) + " * (" + a + " + ((" + w.lit(kGeluCubic) + " * " +
                            a + ") * " + a + ") * " + a + ")";
      if (w.vector)  // the CPU kernels' x / (1 + e^-2u): the same function, one exp
        return "(" + a + " / (" + w.lit(1) + " + " + w.fn("exp", w.lit(-2) + " * (" + u + ")") +
               "))";
      return "((" + w.lit(0.5) + " * " + a + ") * (" + w.lit(1) + " + " + w.fn("tanh", u) + "))";
    }
    case FusedOp::Silu:
      return "(" + a + " * " + w.sigmoid(a) + ")";
    case FusedOp::Add:
      return a + " + " + b;
    case FusedOp::Sub:
      return a + " - " + b;
    case FusedOp::Mul:
      return a + " * " + b;
    case FusedOp::Div:
      return a + " / " + b;
    case FusedOp::Maximum:
      return nan_or_pick(a, ">", b);
    case FusedOp::Minimum:
      return nan_or_pick(a, "<", b);
    case FusedOp::Eq:
      return infix(a, "==", b);
    case FusedOp::Ne:
      return infix(a, "!=", b);
    case FusedOp::Lt:
      return infix(a, "<", b);
    case FusedOp::Le:
      return infix(a, "<=", b);
    case FusedOp::Gt:
      return infix(a, ">", b);
    case FusedOp::Ge:
      return infix(a, ">=", b);
    // Backwards: a is the incoming gradient g, b the forward input x (or output y).
    case FusedOp::ReluBackward:
      return "(" + b + " > " + w.lit(0) + " ? " + a + " : " + w.lit(0) + ")";
    case FusedOp::SigmoidBackward:  // y (1 - y)
      return "((" + a + " * " + b + ") * (" + w.lit(1) + " - " + b + "))";
    case FusedOp::TanhBackward:  // 1 - y^2
      return "(" + a + " * (" + w.lit(1) + " - " + b + " * " + b + "))";
    default:
      return "";
  }
}

// The ops of several statements, as a block that assigns `out`.
std::string block(FusedOp op, const Writer& w, const std::string& out, const FusedNode& n,
                  const std::string& a, const std::string& b) {
  const std::string T = compute_type(w.t);
  switch (op) {
    case FusedOp::GeluBackward:  // Phi(x) + x phi(x)
      return "{ const " + T + " cdf = " + w.lit(0.5) + " * (" + w.lit(1) + " + " +
             w.fn("erf", b + " * " + w.lit(kSqrt1_2)) + "); const " + T +
             " pdf = " + w.lit(kInvSqrt2Pi) + " * " +
             w.fn("exp", "(" + w.lit(-0.5) + " * " + b + ") * " + b) + "; " + out + " = " + a +
             " * (cdf + " + b + " * pdf); }";
    case FusedOp::GeluTanhBackward:  // t = tanh(u), u = k (x + c x^3)
      return "{ const " + T + " x2 = " + b + " * " + b + "; const " + T + " t = " +
             w.fn("tanh", w.lit(kSqrt2OverPi) + " * (" + b + " + (" + w.lit(kGeluCubic) +
                              " * x2) * " + b + ")") +
             "; const " + T + " du = " + w.lit(kSqrt2OverPi) + " * (" + w.lit(1) + " + " +
             w.lit(3 * kGeluCubic) + " * x2); " + out + " = " + a + " * (" + w.lit(0.5) + " * (" +
             w.lit(1) + " + t) + ((" + w.lit(0.5) + " * " + b + ") * (" + w.lit(1) +
             " - t * t)) * du); }";
    case FusedOp::SiluBackward:  // s (1 + x (1 - s))
      return "{ const " + T + " s = " + w.sigmoid(b) + "; " + out + " = (" + a + " * s) * (" +
             w.lit(1) + " + " + b + " * (" + w.lit(1) + " - s)); }";
    case FusedOp::Clamp:  // min(max(x, lo), hi): hi wins if lo > hi; NaN passes through
      return "{ const " + T + " low = " + w.lit(n.scalars[0]) + ", high = " + w.lit(n.scalars[1]) +
             "; const " + T + " y = " + a + " < low ? low : " + a + "; " + out +
             " = y > high ? high : y; }";
    default:
      return "";
  }
}

// A conversion as core-runtime's convert<To, From> makes it.
std::string converted(DType to, const std::string& x) {
  if (to == DType::Bool) return "(" + x + " != 0)";
  if (to == DType::Float16 || to == DType::BFloat16) return in_dtype(to, "(float)(" + x + ")");
  return "(" + std::string(compute_type(to)) + ")(" + x + ")";
}

}  // namespace

std::string node_statement(const FusionGroup& group, int index, const std::string& load_expr,
                           Target target) {
  const FusedNode& n = group.nodes()[size_t(index)];
  const std::string T = compute_type(n.dtype);
  const std::string out = v(index);
  switch (n.op) {
    case FusedOp::Input:
      return "const " + T + " " + out + " = " + load(n.dtype, load_expr) + ";";
    case FusedOp::Constant:
      return "const " + T + " " + out + " = " + in_dtype(n.dtype, literal(n.scalars[0], n.dtype)) +
             ";";
    case FusedOp::Cast:
      return "const " + T + " " + out + " = " + converted(n.dtype, v(n.args[0])) + ";";
    case FusedOp::Where:
      return "const " + T + " " + out + " = " + v(n.args[0]) + " ? " + v(n.args[1]) + " : " +
             v(n.args[2]) + ";";
    default:
      break;
  }
  // Comparisons compute in their operands' type; everything else in its own.
  const DType t = group.nodes()[size_t(n.args[0])].dtype;
  const Writer w{t, target == Target::Cpu && is_floating(t) && t != DType::Float64};
  const std::string a = v(n.args[0]), b = n.args.size() > 1 ? v(n.args[1]) : "";
  const std::string e = expression(n.op, w, a, b);
  if (!e.empty()) return "const " + T + " " + out + " = " + in_dtype(n.dtype, e) + ";";
  const std::string statements = block(n.op, w, "raw", n, a, b);
  if (statements.empty())
    throw NotSupportedError("fusion group: render",
                            std::string("no formula for ") + fused_op_name(n.op));
  return T + " " + out + "; { " + T + " raw; " + statements + " " + out + " = " +
         in_dtype(n.dtype, "raw") + "; }";
}

int64_t element_cost(const FusionGroup& group) {
  int64_t cost = 0;
  for (const FusedNode& n : group.nodes()) {
    const bool transcendental = (n.op >= FusedOp::Exp && n.op <= FusedOp::Erf &&
                                 n.op != FusedOp::Sqrt && n.op != FusedOp::Rsqrt) ||
                                n.op == FusedOp::GeluBackward ||
                                n.op == FusedOp::GeluTanhBackward || n.op == FusedOp::SiluBackward;
    const bool leaf = n.op == FusedOp::Input || n.op == FusedOp::Constant;
    cost += transcendental ? 8 : leaf ? 0 : 1;
  }
  return std::max<int64_t>(cost, 1);
}

}  // namespace ember::autodiff::compile::codegen
