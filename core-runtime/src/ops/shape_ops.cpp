// shape_ops.cpp — cat/stack write each input into a narrow() view of the output through copy_,
// so they need no kernel of their own; split/chunk are views.
#include "ember/ops/shape_ops.h"

#include <string>

#include "ops/out.h"

namespace ember {

namespace {

// The checks cat and stack share, reported under `op`: one device, and the same size in every dim
// but `dim` (stack: in every dim, since the inputs become slices of a new one). Dtypes may differ:
// the result has their promote_types, as in PyTorch.
void check_joinable(const char* op, const TensorList& tensors, int64_t dim, bool every_dim) {
  const Tensor& first = tensors[0];
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    std::string which = "tensors[" + std::to_string(i) + "] is " + describe(t) +
                        ", tensors[0] is " + describe(first);
    if (t.device() != first.device())
      throw DeviceError(op, which + "; move all inputs to one device first");
    bool same = t.dim() == first.dim();
    for (int64_t k = 0; same && k < t.dim(); ++k)
      same = (k == dim && !every_dim) || t.size(k) == first.size(k);
    if (!same)
      throw ShapeError(op, which + (every_dim ? "; all inputs must have the same shape"
                                              : "; all dims except dim " + std::to_string(dim) +
                                                    " must match"));
  }
}

// The checked inputs laid end to end along dim, each copied (and cast) into its narrow() of the
// output (the given out, of any layout, or a new tensor when given is null).
Tensor join(const char* op, const TensorList& tensors, int64_t dim, const Tensor* given) {
  Shape out_shape = tensors[0].shape();
  out_shape[size_t(dim)] = 0;
  DType dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) {
    out_shape[size_t(dim)] += t.size(dim);
    dtype = promote_types(dtype, t.dtype());
  }
  Tensor out = output(op, given, out_shape, dtype, tensors[0].device(), {});
  for (size_t i = 0; given && i < tensors.size(); ++i) {
    const std::string name = "tensors[" + std::to_string(i) + "]";
    check_out_alias(op, out, {{name.c_str(), tensors[i]}}, /*identical_ok=*/false);
  }
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    out.narrow(dim, at, t.size(dim)).copy_(t);
    at += t.size(dim);
  }
  return out;
}

Tensor run_cat(const TensorList& tensors, int64_t dim, const Tensor* given) {
  if (tensors.empty()) throw ValueError("cat", "expects a non-empty list of tensors");
  int64_t d = wrap_dim(dim, tensors[0].dim(), "cat", "tensors[0] is " + describe(tensors[0]));
  check_joinable("cat", tensors, d, /*every_dim=*/false);
  return join("cat", tensors, d, given);
}

Tensor run_stack(const TensorList& tensors, int64_t dim, const Tensor* given) {
  if (tensors.empty()) throw ValueError("stack", "expects a non-empty list of tensors");
  int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  check_joinable("stack", tensors, d, /*every_dim=*/true);
  TensorList expanded;
  for (const Tensor& t : tensors) expanded.push_back(t.unsqueeze(d));
  return join("stack", expanded, d, given);
}

}  // namespace

Tensor cat(const TensorList& tensors, int64_t dim) { return run_cat(tensors, dim, nullptr); }
const Tensor& cat_out(const Tensor& out, const TensorList& tensors, int64_t dim) {
  run_cat(tensors, dim, &out);
  return out;
}

Tensor stack(const TensorList& tensors, int64_t dim) { return run_stack(tensors, dim, nullptr); }
const Tensor& stack_out(const Tensor& out, const TensorList& tensors, int64_t dim) {
  run_stack(tensors, dim, &out);
  return out;
}

TensorList split(const Tensor& t, const std::vector<int64_t>& sizes, int64_t dim) {
  int64_t d = wrap_dim(dim, t.dim(), "split", "t is " + describe(t));
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw ValueError("split", "sizes must be >= 0, got " + shape_str(sizes));
    total += s;
  }
  if (total != t.size(d))
    throw ShapeError("split", "sizes " + shape_str(sizes) + " sum to " + std::to_string(total) +
                                  " but dim " + std::to_string(d) + " of " + t.str() + " is " +
                                  std::to_string(t.size(d)));
  TensorList parts;
  int64_t at = 0;
  for (int64_t s : sizes) {
    parts.push_back(t.narrow(d, at, s));
    at += s;
  }
  return parts;
}

TensorList split(const Tensor& t, int64_t split_size, int64_t dim) {
  int64_t d = wrap_dim(dim, t.dim(), "split", "t is " + describe(t));
  if (split_size <= 0)
    throw ValueError("split", "split_size must be positive, got " + std::to_string(split_size));
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < t.size(d); at += split_size)
    sizes.push_back(std::min(split_size, t.size(d) - at));
  if (sizes.empty()) sizes.push_back(0);
  return split(t, sizes, d);
}

TensorList chunk(const Tensor& t, int64_t chunks, int64_t dim) {
  if (chunks <= 0)
    throw ValueError("chunk", "chunks must be positive, got " + std::to_string(chunks));
  int64_t d = wrap_dim(dim, t.dim(), "chunk", "t is " + describe(t));
  // As torch.chunk: an empty dim still gives `chunks` (empty) pieces.
  if (t.size(d) == 0) return split(t, std::vector<int64_t>(size_t(chunks), 0), d);
  int64_t size = (t.size(d) + chunks - 1) / chunks;
  return split(t, size, d);
}

}  // namespace ember
