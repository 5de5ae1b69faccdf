// indexing.h — ops that read or write tensors at positions given by index tensors, plus padding.
// Index tensors are int64 (int32 is accepted and widened). Indices are never negative: an index
// outside [0, size) throws IndexError naming the op, the offending value and the valid range.
// A dim argument may be negative (counted from the end).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember {

// weight: [V, D], indices: [*] -> [*, D]; row k of the result is weight[indices[k]].
Tensor embedding(const Tensor& weight, const Tensor& indices);

// Gradient of embedding: grad: [*, D], indices: [*] -> [num_weights, D], where row v is the sum of
// the grad rows whose index is v (deterministic on the CPU). Rows of padding_idx (negative counts
// from the end) get no gradient, as in torch.nn.Embedding.
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                          std::optional<int64_t> padding_idx = std::nullopt);

// x: [..., n, ...] (n at dim), index: [k] -> [..., k, ...] with slice j = x's slice index[j].
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);

// The adjoint of index_select: a copy of x with x's slice index[j] along dim += src's slice j.
// index: [k]; src: x's shape with k at dim, x's dtype. Repeated indices accumulate.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// In place on x; returns x.
const Tensor& index_add_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

// index: x's number of dims, index.size(d) <= x.size(d) for d != dim -> index's shape, x's dtype:
// out[i][j][k] = x[index[i][j][k]][j][k] (dim 0), x[i][index[i][j][k]][k] (dim 1), ...
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);

// The adjoint of gather: a copy of x with out[..., index[i, j, ...], ...] += src[i, j, ...] along
// dim. index: x's number of dims, index.size(d) <= src.size(d) for every d, and <= x.size(d) for
// d != dim; src of x's dtype. Repeated indices accumulate.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// In place on x; returns x.
const Tensor& scatter_add_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

// A copy of x with `value` where mask (bool, broadcastable to x's shape) is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// indices: [*] int64 -> [*, num_classes] int64 with a 1 at each index; num_classes = -1 uses
// max(indices) + 1 (this reads the indices on the host, which synchronises on CUDA).
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);

// Pads x like torch.nn.functional.pad: pads = {left, right} for the last dim, then {left, right}
// for the dim before, and so on (2 * k values pad the last k dims). mode:
//   "constant"  fills with `value`; a negative pad crops instead;
//   "reflect"   mirrors, not repeating the edge (pad < size of that dim): [a b c] -> b [a b c] b;
//   "replicate" repeats the edge value (size of that dim > 0): [a b c] -> a [a b c] c.
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode = "constant",
           double value = 0.0);
// Gradient of pad: grad_out: the padded shape -> input_shape. Constant: the kept elements'
// gradient (zero where a negative pad cropped); reflect, replicate: each input element gets the
// sum of the gradients of all its copies.
Tensor pad_backward(const Tensor& grad_out, const Shape& input_shape,
                    const std::vector<int64_t>& pads, const std::string& mode = "constant");

// ---- outputs the caller provides ----
// Each op above has a form that writes its result into `out` and returns it, with the same
// arguments: out must have exactly the result's shape, dtype and device (ShapeError, DTypeError,
// DeviceError; never resized or cast), may be any strided view, and must not overlap an input
// (ValueError; masked_fill_out alone may be given x itself). index_add_out and scatter_add_out
// write x's values into out, then add. one_hot_out's num_classes may be -1 only when the caller
// knows what max(indices) + 1 will be.
const Tensor& embedding_out(const Tensor& out, const Tensor& weight, const Tensor& indices);
const Tensor& embedding_backward_out(const Tensor& out, const Tensor& grad, const Tensor& indices,
                                     int64_t num_weights,
                                     std::optional<int64_t> padding_idx = std::nullopt);
const Tensor& index_select_out(const Tensor& out, const Tensor& x, int64_t dim,
                               const Tensor& index);
const Tensor& index_add_out(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index,
                            const Tensor& src);
const Tensor& gather_out(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
const Tensor& scatter_add_out(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index,
                              const Tensor& src);
const Tensor& masked_fill_out(const Tensor& out, const Tensor& x, const Tensor& mask, double value);
const Tensor& one_hot_out(const Tensor& out, const Tensor& indices, int64_t num_classes);
const Tensor& pad_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& pads,
                      const std::string& mode = "constant", double value = 0.0);
const Tensor& pad_backward_out(const Tensor& out, const Tensor& grad_out, const Shape& input_shape,
                               const std::vector<int64_t>& pads,
                               const std::string& mode = "constant");

}  // namespace ember
