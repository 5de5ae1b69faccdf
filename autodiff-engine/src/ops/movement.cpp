// movement.cpp — views and data movement: reshape, ...
#include "ember/autodiff/ops.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {
using Types = std::vector<TensorType>;
using Tensors = std::vector<Tensor>;
using Grads = std::vector<Val>;

// `shape` with its one -1 (if any) inferred so that it has as many elements as `from`.
Shape reshaped(const char* op, const Shape& from, Shape shape) {
  const int64_t total = shape_numel(from, op);
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && infer_at < 0) {
      infer_at = int64_t(i);
    } else if (shape[i] < 0) {
      throw ValueError(op, "invalid size " + std::to_string(shape[i]) + " in " + shape_str(shape) +
                               " (only one -1 may be inferred)");
    } else {
      known = checked_size_mul(known, shape[i], op, "the new shape's elements");
    }
  }
  if (infer_at >= 0 && known != 0 && total % known == 0) shape[size_t(infer_at)] = total / known;
  if (infer_at >= 0 && shape[size_t(infer_at)] < 0)
    throw ShapeError(op, "cannot infer the -1 in " + shape_str(shape) + " for " +
                             std::to_string(total) + " elements");
  if (shape_numel(shape, op) != total)
    throw ShapeError(op, "cannot reshape " + shape_str(from) + " (" + std::to_string(total) +
                             " elements) to " + shape_str(shape));
  return shape;
}
}  // namespace

std::vector<OpDef> movement_ops() {
  return {
      // y = x with a new shape of as many elements (one -1 is inferred);  dx = reshape(dy, x's)
      {"reshape",
       [](const Types& in, const Attrs& a) -> Types {
         infer::arity("reshape", in, 1);
         return {TensorType{reshaped("reshape", in[0].shape, a.ints("shape")), in[0].dtype,
                            in[0].device}};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {in[0].reshape(a.ints("shape"))};
       },
       [](const GradContext& c) -> Grads { return {reshape(c.dy(), c.x().shape())}; }, true},
  };
}

}  // namespace ember::autodiff
