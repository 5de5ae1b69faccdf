// ops/movement.h — builder functions of views and data movement (src/rules/movement.cpp): what
// core-runtime has as Tensor methods (reshape, transpose, ...) and in ember/ops/shape_ops.h and
// ember/ops/indexing.h. Views share their input's storage (OpDef::view).
#pragma once
#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "ember/autodiff/ops/apply.h"

namespace ember::autodiff {

// x [*] -> shape (same number of elements; one size may be -1). A view when strides allow.
template <class V> if_handle<V> reshape(const V& x, const Shape& shape) {
  return apply1<V>(EMBER_OP("reshape"), {x}, {{"shape", shape}});
}
template <class V> if_handle<V> transpose(const V& x, int64_t dim0, int64_t dim1) {
  return apply1<V>(EMBER_OP("transpose"), {x}, {{"dim0", dim0}, {"dim1", dim1}});
}
template <class V> if_handle<V> permute(const V& x, const std::vector<int64_t>& dims) {
  return apply1<V>(EMBER_OP("permute"), {x}, {{"dims", dims}});
}
// Python's x[start:stop:step] along dim (negative start/stop count from the end, clamped;
// step > 0). stop = INT64_MAX: to the end.
template <class V>
if_handle<V> slice(const V& x, int64_t dim, int64_t start, int64_t stop, int64_t step = 1) {
  return apply1<V>(EMBER_OP("slice"), {x},
                   {{"dim", dim}, {"start", start}, {"stop", stop}, {"step", step}});
}
// slice's adjoint: grad (the slice's shape) written into zeros of input_shape at the positions
// that slice(x of input_shape, dim, start, stop, step) reads.
template <class V>
if_handle<V> slice_backward(const V& grad, const Shape& input_shape, int64_t dim, int64_t start,
                            int64_t stop, int64_t step = 1) {
  return apply1<V>(EMBER_OP("slice_backward"), {grad},
                   {{"input_shape", input_shape},
                    {"dim", dim},
                    {"start", start},
                    {"stop", stop},
                    {"step", step}});
}
// x[..., index, ...] along dim: drops the dim.
template <class V> if_handle<V> select(const V& x, int64_t dim, int64_t index) {
  return apply1<V>(EMBER_OP("select"), {x}, {{"dim", dim}, {"index", index}});
}
template <class V> if_handle<V> narrow(const V& x, int64_t dim, int64_t start, int64_t length) {
  return slice(x, dim, start, start + length);
}
// dims empty: every size-1 dim; a listed dim whose size is not 1 is kept (as PyTorch).
template <class V> if_handle<V> squeeze(const V& x, const std::vector<int64_t>& dims = {}) {
  return apply1<V>(EMBER_OP("squeeze"), {x}, {{"dims", dims}});
}
template <class V> if_handle<V> unsqueeze(const V& x, int64_t dim) {
  return apply1<V>(EMBER_OP("unsqueeze"), {x}, {{"dim", dim}});
}
template <class V> if_handle<V> flatten(const V& x, int64_t start_dim = 0, int64_t end_dim = -1) {
  return apply1<V>(EMBER_OP("flatten"), {x}, {{"start_dim", start_dim}, {"end_dim", end_dim}});
}
// A contiguous copy when x is not contiguous (x itself otherwise).
template <class V> if_handle<V> contiguous(const V& x) {
  return apply1<V>(EMBER_OP("contiguous"), {x});
}
// x [*] -> [*] with the order of `dims` reversed (a copy: Ember has no negative strides).
template <class V> if_handle<V> flip(const V& x, const std::vector<int64_t>& dims) {
  return apply1<V>(EMBER_OP("flip"), {x}, {{"dims", dims}});
}

// ---- joining and splitting (shape_ops.h) ----
template <class V> if_handle<V> cat(const std::vector<V>& xs, int64_t dim = 0) {
  return apply1<V>(EMBER_OP("cat"), xs, {{"dim", dim}});
}
template <class V> if_handle<V> stack(const std::vector<V>& xs, int64_t dim = 0) {
  return apply1<V>(EMBER_OP("stack"), xs, {{"dim", dim}});
}
// cat({a, b, c}) and stack({a, b}): a braced list does not deduce std::vector<V>.
template <class V> if_handle<V> cat(std::initializer_list<V> xs, int64_t dim = 0) {
  return cat(std::vector<V>(xs), dim);
}
template <class V> if_handle<V> stack(std::initializer_list<V> xs, int64_t dim = 0) {
  return stack(std::vector<V>(xs), dim);
}
// Consecutive pieces of split_size along dim (the last may be smaller): slices of x. An empty
// dim gives one empty piece, as core-runtime's split.
template <class V> std::vector<V> split(const V& x, int64_t split_size, int64_t dim = 0) {
  if (split_size <= 0)
    throw ValueError("split", "split_size must be positive, got " + std::to_string(split_size));
  std::vector<V> out;
  const int64_t n = x.size(dim);
  for (int64_t start = 0; start < n; start += split_size)
    out.push_back(slice(x, dim, start, std::min(start + split_size, n)));
  if (n == 0) out.push_back(slice(x, dim, 0, 0));
  return out;
}
// Pieces of ceil(n / chunks) along dim (so possibly fewer than chunks); an empty dim gives
// `chunks` empty pieces, as torch.chunk and core-runtime's chunk.
template <class V> std::vector<V> chunk(const V& x, int64_t chunks, int64_t dim = 0) {
  if (chunks <= 0)
    throw ValueError("chunk", "chunks must be positive, got " + std::to_string(chunks));
  const int64_t n = x.size(dim);
  if (n == 0) return std::vector<V>(size_t(chunks), slice(x, dim, 0, 0));
  return split(x, (n + chunks - 1) / chunks, dim);
}

// ---- padding ----
// pads: (left, right) pairs from the last dim backwards, as torch.nn.functional.pad; mode
// "constant" (with value; a negative pad crops), "reflect" (pads < the dim's size), "replicate"
// (the dim non-empty) or "circular" (wraps around; pads <= the dim's size).
template <class V>
if_handle<V> pad(const V& x, const std::vector<int64_t>& pads, const std::string& mode = "constant",
                 double value = 0.0) {
  return apply1<V>(EMBER_OP("pad"), {x}, {{"pads", pads}, {"mode", mode}, {"value", value}});
}
// pad's adjoint: grad of the padded shape -> input_shape, each input element getting the sum of
// the gradients of its copies (constant: of its one copy; zero where a negative pad cropped).
template <class V>
if_handle<V> pad_backward(const V& grad, const Shape& input_shape, const std::vector<int64_t>& pads,
                          const std::string& mode = "constant") {
  return apply1<V>(EMBER_OP("pad_backward"), {grad},
                   {{"input_shape", input_shape}, {"pads", pads}, {"mode", mode}});
}

// ---- indexing (indexing.h); index tensors are int64 and have no gradient ----
template <class V> if_handle<V> index_select(const V& x, int64_t dim, const V& index) {
  return apply1<V>(EMBER_OP("index_select"), {x, index}, {{"dim", dim}});
}
template <class V> if_handle<V> index_add(const V& x, int64_t dim, const V& index, const V& src) {
  return apply1<V>(EMBER_OP("index_add"), {x, index, src}, {{"dim", dim}});
}
template <class V> if_handle<V> gather(const V& x, int64_t dim, const V& index) {
  return apply1<V>(EMBER_OP("gather"), {x, index}, {{"dim", dim}});
}
template <class V> if_handle<V> scatter_add(const V& x, int64_t dim, const V& index, const V& src) {
  return apply1<V>(EMBER_OP("scatter_add"), {x, index, src}, {{"dim", dim}});
}
// x with src[i, j, ...] written at index[i, j, ...] along dim (src cut to index's shape), or
// with value there (op "scatter_value"), as torch.scatter; differentiable in x and src.
template <class V> if_handle<V> scatter(const V& x, int64_t dim, const V& index, const V& src) {
  return apply1<V>(EMBER_OP("scatter"), {x, index, src}, {{"dim", dim}});
}
template <class V> if_handle<V> scatter(const V& x, int64_t dim, const V& index, double value) {
  return apply1<V>(EMBER_OP("scatter_value"), {x, index}, {{"dim", dim}, {"value", value}});
}
// weight [num, dim], indices int [*] -> [*, dim]
template <class V> if_handle<V> embedding(const V& weight, const V& indices) {
  return apply1<V>(EMBER_OP("embedding"), {weight, indices});
}
template <class V>
if_handle<V> embedding_backward(const V& grad, const V& indices, int64_t num_weights) {
  return apply1<V>(EMBER_OP("embedding_backward"), {grad, indices}, {{"num_weights", num_weights}});
}
// x [*] with x[i_0, ..., i_{k-1}] = values, or += with accumulate (repeated positions then add
// up), as core-runtime's index_put: one int index tensor per leading dim of x (each defined; a
// bool mask is given as its nonzero() coordinates, one tensor per dim), broadcasting together to
// B; values of x's dtype broadcasting to B + x.shape[k:]. Differentiable in x and values.
template <class V>
if_handle<V> index_put(const V& x, const std::vector<V>& indices, const V& values,
                       bool accumulate = false) {
  std::vector<V> inputs = {x, values};
  inputs.insert(inputs.end(), indices.begin(), indices.end());
  return apply1<V>(EMBER_OP("index_put"), inputs, {{"accumulate", int64_t(accumulate)}});
}
// indices int [*] -> int64 [*, num_classes] (no gradient)
template <class V> if_handle<V> one_hot(const V& indices, int64_t num_classes = -1) {
  return apply1<V>(EMBER_OP("one_hot"), {indices}, {{"num_classes", num_classes}});
}

}  // namespace ember::autodiff
