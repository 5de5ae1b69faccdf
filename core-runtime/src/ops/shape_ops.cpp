// shape_ops.cpp — cat/stack write each input into a narrow() view of the output through copy_,
// so they need no kernel of their own; split/chunk are views.
#include "ember/ops/shape_ops.h"

namespace ember {

Tensor cat(const TensorList& tensors, int64_t dim) {
  if (tensors.empty()) throw ValueError("cat", "expects a non-empty list of tensors");
  const Tensor& first = tensors[0];
  int64_t d = wrap_dim(dim, first.dim(), "cat", "tensors[0] is " + describe(first));
  Shape out_shape = first.shape();
  out_shape[size_t(d)] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    std::string which = "tensors[" + std::to_string(i) + "] is " + describe(t) +
                        ", tensors[0] is " + describe(first);
    if (t.device() != first.device())
      throw DeviceError("cat", which + "; move all inputs to one device first");
    if (t.dtype() != first.dtype())
      throw DTypeError("cat", which + "; cast all inputs to one dtype first");
    bool same = t.dim() == first.dim();
    for (int64_t k = 0; same && k < t.dim(); ++k) same = k == d || t.size(k) == first.size(k);
    if (!same)
      throw ShapeError("cat", which + "; all dims except dim " + std::to_string(d) + " must match");
    out_shape[size_t(d)] += t.size(d);
  }
  Tensor out = Tensor::empty(out_shape, first.dtype(), first.device(), "cat");
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    out.narrow(d, at, t.size(d)).copy_(t);
    at += t.size(d);
  }
  return out;
}

Tensor stack(const TensorList& tensors, int64_t dim) {
  if (tensors.empty()) throw ValueError("stack", "expects a non-empty list of tensors");
  int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  TensorList expanded;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].shape() != tensors[0].shape())
      throw ShapeError("stack", "tensors[" + std::to_string(i) + "] is " + describe(tensors[i]) +
                                    ", tensors[0] is " + describe(tensors[0]) +
                                    "; all inputs must have the same shape");
    expanded.push_back(tensors[i].unsqueeze(d));
  }
  return cat(expanded, d);
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
