// fusion_group.cpp — building and checking a fusion group (see fusion_group.h).
#include "ember/autodiff/compile/fusion_group.h"

#include <cmath>
#include <sstream>

#include "ember/error.h"

namespace ember::autodiff::compile {

const char* fused_op_name(FusedOp op) {
  switch (op) {
    case FusedOp::Input:
      return "input";
    case FusedOp::Constant:
      return "constant";
    case FusedOp::Neg:
      return "neg";
    case FusedOp::Abs:
      return "abs";
    case FusedOp::Relu:
      return "relu";
    case FusedOp::Exp:
      return "exp";
    case FusedOp::Log:
      return "log";
    case FusedOp::Sqrt:
      return "sqrt";
    case FusedOp::Rsqrt:
      return "rsqrt";
    case FusedOp::Sin:
      return "sin";
    case FusedOp::Cos:
      return "cos";
    case FusedOp::Tanh:
      return "tanh";
    case FusedOp::Sigmoid:
      return "sigmoid";
    case FusedOp::Gelu:
      return "gelu";
    case FusedOp::GeluTanh:
      return "gelu_tanh";
    case FusedOp::Silu:
      return "silu";
    case FusedOp::Erf:
      return "erf";
    case FusedOp::Reciprocal:
      return "reciprocal";
    case FusedOp::Add:
      return "add";
    case FusedOp::Sub:
      return "sub";
    case FusedOp::Mul:
      return "mul";
    case FusedOp::Div:
      return "div";
    case FusedOp::Maximum:
      return "maximum";
    case FusedOp::Minimum:
      return "minimum";
    case FusedOp::Eq:
      return "eq";
    case FusedOp::Ne:
      return "ne";
    case FusedOp::Lt:
      return "lt";
    case FusedOp::Le:
      return "le";
    case FusedOp::Gt:
      return "gt";
    case FusedOp::Ge:
      return "ge";
    case FusedOp::ReluBackward:
      return "relu_backward";
    case FusedOp::GeluBackward:
      return "gelu_backward";
    case FusedOp::GeluTanhBackward:
      return "gelu_tanh_backward";
    case FusedOp::SiluBackward:
      return "silu_backward";
    case FusedOp::SigmoidBackward:
      return "sigmoid_backward";
    case FusedOp::TanhBackward:
      return "tanh_backward";
    case FusedOp::Where:
      return "where";
    case FusedOp::Clamp:
      return "clamp";
    case FusedOp::Cast:
      return "cast";
  }
  return "?";
}

int fused_op_arity(FusedOp op) {
  if (op == FusedOp::Input || op == FusedOp::Constant) return 0;
  if (op == FusedOp::Where) return 3;
  if (op >= FusedOp::Add && op <= FusedOp::TanhBackward) return 2;
  return 1;
}

const char* fused_reduction_name(FusedReduction r) {
  switch (r) {
    case FusedReduction::None:
      return "none";
    case FusedReduction::Sum:
      return "sum";
    case FusedReduction::Mean:
      return "mean";
    case FusedReduction::Max:
      return "amax";
  }
  return "?";
}

namespace {

bool floating_only(FusedOp op) {
  return (op >= FusedOp::Exp && op <= FusedOp::Reciprocal) || op == FusedOp::Div ||
         (op >= FusedOp::ReluBackward && op <= FusedOp::TanhBackward);
}
bool is_comparison(FusedOp op) { return op >= FusedOp::Eq && op <= FusedOp::Ge; }

std::string where_from(const char* op) { return std::string("fusion group: ") + op; }

}  // namespace

int FusionGroup::push(FusedNode node) {
  if (reduction_ != FusedReduction::None)
    throw ValueError(where_from(fused_op_name(node.op)),
                     "the group ends in a reduction already; add every node before reduce()");
  nodes_.push_back(std::move(node));
  return int(nodes_.size()) - 1;
}

const FusedNode& FusionGroup::node(int index, const char* op) const {
  if (index < 0 || index >= int(nodes_.size()))
    throw IndexError(where_from(op), "operand %" + std::to_string(index) +
                                         " is not a node of this group (it has " +
                                         std::to_string(nodes_.size()) +
                                         "); pass an index "
                                         "returned by an earlier call");
  return nodes_[size_t(index)];
}

int FusionGroup::input(const Shape& shape, const std::vector<int64_t>& strides, DType dtype) {
  if (strides.size() != shape.size())
    throw ShapeError(where_from("input"), "shape " + shape_str(shape) + " has " +
                                              std::to_string(shape.size()) + " dims but " +
                                              std::to_string(strides.size()) +
                                              " strides were given; give one stride per dim");
  for (int64_t s : strides)
    if (s < 0)
      throw ValueError(where_from("input"), "negative stride " + std::to_string(s) +
                                                " in an input; make it contiguous first");
  // Throws ShapeError unless the input broadcasts to the group's shape.
  if (broadcast_shapes(shape, shape_, "fusion group: input") != shape_)
    throw ShapeError(where_from("input"), "input of shape " + shape_str(shape) +
                                              " does not broadcast to the group's shape " +
                                              shape_str(shape_) + " without growing it");
  inputs_.push_back({shape, strides, dtype});
  FusedNode n{FusedOp::Input, dtype, {}};
  n.input = int(inputs_.size()) - 1;
  return push(n);
}

int FusionGroup::constant(double value, DType dtype) {
  if (!dtype_holds(dtype, value))
    throw ValueError(where_from("constant"),
                     std::to_string(value) + " does not fit " + dtype_name(dtype));
  FusedNode n{FusedOp::Constant, dtype, {}};
  n.scalars[0] = value;
  return push(n);
}

int FusionGroup::unary(FusedOp op, int x) {
  if (fused_op_arity(op) != 1 || op == FusedOp::Clamp || op == FusedOp::Cast)
    throw ValueError(where_from(fused_op_name(op)),
                     "is not a unary op of a fusion group; use "
                     "binary(), where(), clamp() or cast()");
  const DType t = node(x, fused_op_name(op)).dtype;
  if (t == DType::Bool || (floating_only(op) && !is_floating(t)))
    throw DTypeError(where_from(fused_op_name(op)),
                     std::string("got ") + dtype_name(t) + ", expected a " +
                         (floating_only(op) ? "floating" : "numeric") +
                         " dtype; cast the operand first");
  return push({op, t, {x}});
}

int FusionGroup::binary(FusedOp op, int a, int b) {
  if (fused_op_arity(op) != 2)
    throw ValueError(where_from(fused_op_name(op)), "is not a binary op of a fusion group");
  const DType ta = node(a, fused_op_name(op)).dtype, tb = node(b, fused_op_name(op)).dtype;
  if (ta != tb)
    throw DTypeError(where_from(fused_op_name(op)),
                     std::string("operands are ") + dtype_name(ta) + " and " + dtype_name(tb) +
                         "; a fusion group needs one dtype, so cast one of them first");
  if (is_comparison(op)) return push({op, DType::Bool, {a, b}});
  if (ta == DType::Bool || (floating_only(op) && !is_floating(ta)))
    throw DTypeError(where_from(fused_op_name(op)),
                     std::string("got ") + dtype_name(ta) + ", expected a " +
                         (floating_only(op) ? "floating" : "numeric") +
                         " dtype; cast the operands first");
  return push({op, ta, {a, b}});
}

int FusionGroup::where(int cond, int a, int b) {
  const DType tc = node(cond, "where").dtype, ta = node(a, "where").dtype,
              tb = node(b, "where").dtype;
  if (tc != DType::Bool)
    throw DTypeError(where_from("where"), std::string("the condition is ") + dtype_name(tc) +
                                              ", expected bool; compare it first");
  if (ta != tb)
    throw DTypeError(where_from("where"), std::string("the branches are ") + dtype_name(ta) +
                                              " and " + dtype_name(tb) +
                                              "; cast one of them first");
  return push({FusedOp::Where, ta, {cond, a, b}});
}

int FusionGroup::clamp(int x, double lo, double hi) {
  const DType t = node(x, "clamp").dtype;
  if (t == DType::Bool) throw DTypeError(where_from("clamp"), "got bool, expected a numeric dtype");
  if (std::isnan(lo) || std::isnan(hi))
    throw ValueError(where_from("clamp"), "a bound is NaN; give a number or +-infinity");
  // The library's clamp of an integer tensor by a fraction gives a float tensor: that is a cast
  // and then a clamp, not one node.
  for (double b : {lo, hi})
    if (!is_floating(t) && std::isfinite(b) && b != std::trunc(b))
      throw ValueError(where_from("clamp"), "bound " + std::to_string(b) + " of a " +
                                                dtype_name(t) +
                                                " value is not a whole number; "
                                                "cast the value to a floating dtype first");
  FusedNode n{FusedOp::Clamp, t, {x}};
  n.scalars[0] = lo;
  n.scalars[1] = hi;
  return push(n);
}

int FusionGroup::cast(int x, DType dtype) {
  node(x, "cast");
  return push({FusedOp::Cast, dtype, {x}});
}

void FusionGroup::reduce(FusedReduction reduction, int dims, bool keepdim) {
  const char* op = fused_reduction_name(reduction);
  if (nodes_.empty())
    throw ValueError(where_from(op), "the group has no nodes to reduce; add them first");
  if (reduction_ != FusedReduction::None)
    throw ValueError(where_from(op), "the group already ends in a reduction; a group has one");
  if (reduction == FusedReduction::None) return;
  if (outputs_.size() > 1 || (outputs_.size() == 1 && outputs_[0] + 1 != int(nodes_.size())))
    throw ValueError(where_from(op),
                     "the group already names values it writes; call reduce() first, then "
                     "output() for the values written beside the reduction");
  if (dims < 1 || dims > int(shape_.size()))
    throw IndexError(where_from(op), "cannot reduce the innermost " + std::to_string(dims) +
                                         " dims of shape " + shape_str(shape_) +
                                         "; expected 1 to " + std::to_string(shape_.size()));
  const DType t = nodes_.back().dtype;
  if (!is_floating(t))
    throw DTypeError(where_from(op), std::string("got ") + dtype_name(t) +
                                         ", a fused reduction needs a floating dtype");
  if (reduction == FusedReduction::Max)
    for (size_t d = shape_.size() - size_t(dims); d < shape_.size(); ++d)
      if (shape_[d] == 0)
        throw ValueError(where_from(op),
                         "amax of no elements (shape " + shape_str(shape_) + ") has no value");
  reduction_ = reduction;
  reduced_dims_ = dims;
  keepdim_ = keepdim;
  outputs_ = {int(nodes_.size()) - 1};  // the reduction is output 0; output() adds the others
}

void FusionGroup::output(int index) {
  const FusedNode& n = node(index, "output");
  if (n.op == FusedOp::Input || n.op == FusedOp::Constant)
    throw ValueError(where_from("output"), "%" + std::to_string(index) + " is an " +
                                               fused_op_name(n.op) +
                                               ", not a value the group computes");
  // A reducing group's output 0 is its reduction: a value written beside it is of shape(), and
  // may be the reduced value itself, unreduced.
  const size_t first = reduction_ == FusedReduction::None ? 0 : 1;
  for (size_t k = first; k < outputs_.size(); ++k)
    if (outputs_[k] == index)
      throw ValueError(where_from("output"), "%" + std::to_string(index) + " is written already");
  outputs_.push_back(index);
}

std::vector<int> FusionGroup::outputs() const {
  if (!outputs_.empty()) return outputs_;
  if (nodes_.empty()) throw ValueError("fusion group", "the group has no nodes");
  return {int(nodes_.size()) - 1};
}

DType FusionGroup::out_dtype() const { return output_dtype(0); }

DType FusionGroup::output_dtype(size_t k) const {
  const std::vector<int> outs = outputs();
  if (k >= outs.size())
    throw IndexError("fusion group", "output " + std::to_string(k) + " of a group writing " +
                                         std::to_string(outs.size()));
  return nodes_[size_t(outs[k])].dtype;
}

Shape FusionGroup::out_shape() const {
  if (reduction_ == FusedReduction::None) return shape_;
  Shape out(shape_.begin(), shape_.end() - reduced_dims_);
  if (keepdim_) out.resize(shape_.size(), 1);
  return out;
}

std::string FusionGroup::str() const {
  std::ostringstream text;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const FusedNode& n = nodes_[i];
    text << "%" << i << ":" << dtype_name(n.dtype) << " = " << fused_op_name(n.op) << "(";
    if (n.op == FusedOp::Input) {
      const FusedInput& in = inputs_[size_t(n.input)];
      text << "input " << n.input << " " << shape_str(in.shape) << " strides "
           << shape_str(in.strides);
    } else if (n.op == FusedOp::Constant) {
      text << n.scalars[0];
    }
    for (size_t a = 0; a < n.args.size(); ++a) text << (a ? ", %" : "%") << n.args[a];
    if (n.op == FusedOp::Clamp) text << ", " << n.scalars[0] << ", " << n.scalars[1];
    text << ")\n";
  }
  if (outputs_.size() > 1 || (!outputs_.empty() && reduction_ == FusedReduction::None)) {
    text << "writes";
    for (size_t k = 0; k < outputs_.size(); ++k)
      text << " %" << outputs_[k]
           << (k == 0 && reduction_ != FusedReduction::None ? " (reduced)" : "");
    text << "\n";
  }
  if (reduction_ != FusedReduction::None)
    text << fused_reduction_name(reduction_) << " over the innermost " << reduced_dims_ << " dims"
         << (keepdim_ ? " (keepdim)" : "") << " -> " << shape_str(out_shape()) << "\n";
  return text.str();
}

}  // namespace ember::autodiff::compile
