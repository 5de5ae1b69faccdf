// views.cpp — every view: a new shape/strides/offset over the same storage, no data copied.
#include <algorithm>
#include <numeric>

#include "ember/tensor.h"

namespace ember {

Tensor Tensor::as_strided(const Shape& shape, const Strides& strides, int64_t offset,
                          const char* op) const {
  Tensor view = *this;
  view.shape_ = shape;
  view.strides_ = strides;
  view.offset_ = offset;
  view.check_layout(op);
  return view;
}

namespace {
// Resolves a single -1 in `shape` against numel; checks the element count matches.
Shape infer_shape(const Shape& shape, int64_t numel, const Tensor& t, const char* op) {
  Shape out = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) throw ShapeError(op, "only one dimension can be -1, got " + shape_str(shape));
      infer = int64_t(i);
    } else if (out[i] < 0) {
      throw ShapeError(op, "invalid size in " + shape_str(shape) + "; sizes must be >= 0 or -1");
    } else {
      known = checked_size_mul(known, out[i], op, "the number of elements of the new shape");
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      throw ShapeError(op, "cannot view " + t.str() + " as " + shape_str(shape) +
                               ": the -1 cannot be inferred");
    out[size_t(infer)] = numel / known;
  } else if (known != numel) {
    throw ShapeError(op, "cannot view " + t.str() + " (" + std::to_string(numel) +
                             " elements) as " + shape_str(shape) + " (" + std::to_string(known) +
                             " elements); the element counts must match");
  }
  return out;
}

// Strides for viewing (shape, strides) as new_shape without copying, or false if impossible.
// Walks groups of old dims that are contiguous among themselves and splits/merges within them,
// as PyTorch's computeStride does.
bool view_strides(const Shape& shape, const Strides& strides, const Shape& new_shape,
                  Strides& out) {
  out.assign(new_shape.size(), 0);
  if (shape.empty() || shape_numel(shape) == 0) {  // scalars and empty tensors: any layout
    out = contiguous_strides(new_shape);
    return true;
  }
  int64_t view_d = int64_t(new_shape.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[size_t(d)];
    if (d == 0 ||
        (shape[size_t(d - 1)] != 1 && strides[size_t(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[size_t(view_d)] == 1)) {
        out[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel *= new_shape[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (d > 0) {
        chunk_base_stride = strides[size_t(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}
}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  Shape target = infer_shape(shape, numel(), *this, "view");
  Strides strides;
  if (!view_strides(shape_, strides_, target, strides))
    throw ShapeError("view", "cannot view " + str() + " with strides " + shape_str(strides_) +
                                 " as " + shape_str(target) +
                                 " without copying; use reshape() (which copies) or "
                                 "contiguous() first");
  return as_strided(target, strides, offset_, "view");
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape target = infer_shape(shape, numel(), *this, "reshape");
  Strides strides;
  if (view_strides(shape_, strides_, target, strides))
    return as_strided(target, strides, offset_, "reshape");
  return clone().view(target);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  int64_t a = wrap_dim_or_scalar(dim0, dim(), "transpose"),
          b = wrap_dim_or_scalar(dim1, dim(), "transpose");
  if (dim() == 0) return *this;
  Shape shape = shape_;
  Strides strides = strides_;
  std::swap(shape[size_t(a)], shape[size_t(b)]);
  std::swap(strides[size_t(a)], strides[size_t(b)]);
  return as_strided(shape, strides, offset_, "transpose");
}

Tensor Tensor::t() const {
  if (dim() > 2)
    throw ShapeError("t", "expects a tensor of at most 2 dims, got " + str() +
                              "; use transpose(dim0, dim1) or permute");
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  if (int64_t(dims.size()) != dim())
    throw ShapeError("permute", "got " + std::to_string(dims.size()) + " dims for " + str() +
                                    "; give a permutation of all " + std::to_string(dim()) +
                                    " dims");
  Shape shape(dims.size());
  Strides strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap(dims[i], "permute");
    if (seen[size_t(d)])
      throw ValueError("permute", "dim " + std::to_string(d) + " repeated in " + shape_str(dims) +
                                      "; each dim must appear exactly once");
    seen[size_t(d)] = true;
    shape[i] = shape_[size_t(d)];
    strides[i] = strides_[size_t(d)];
  }
  return as_strided(shape, strides, offset_, "permute");
}

Tensor Tensor::slice(int64_t d, Slice s) const {
  d = wrap(d, "slice");
  if (s.step <= 0)
    throw ValueError("slice", "step " + std::to_string(s.step) +
                                  " must be positive; for reversal use flip (not a view)");
  int64_t n = shape_[size_t(d)];
  auto clamp_index = [n](int64_t i) {
    if (i < 0) i += n;
    return std::clamp<int64_t>(i, 0, n);
  };
  int64_t start = clamp_index(s.start), stop = s.stop == Slice::kEnd ? n : clamp_index(s.stop);
  int64_t len = stop > start ? (stop - start + s.step - 1) / s.step : 0;
  Shape shape = shape_;
  Strides strides = strides_;
  shape[size_t(d)] = len;
  strides[size_t(d)] *= s.step;
  return as_strided(shape, strides, offset_ + start * strides_[size_t(d)], "slice");
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t stop, int64_t step) const {
  return slice(d, Slice{start, stop, step});
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = wrap(d, "select");
  int64_t n = shape_[size_t(d)];
  if (index < -n || index >= n)
    throw IndexError("select", "index " + std::to_string(index) + " is out of range for dim " +
                                   std::to_string(d) + " of " + str() + "; expected [" +
                                   std::to_string(-n) + ", " + std::to_string(n - 1) + "]");
  if (index < 0) index += n;
  Shape shape = shape_;
  Strides strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return as_strided(shape, strides, offset_ + index * strides_[size_t(d)], "select");
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = wrap(d, "narrow");
  int64_t n = shape_[size_t(d)];
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start + length > n)
    throw IndexError("narrow", "start " + std::to_string(start) + " and length " +
                                   std::to_string(length) + " do not fit dim " + std::to_string(d) +
                                   " of " + str());
  return slice(d, start, start + length, 1);
}

Tensor Tensor::expand(const Shape& shape) const {
  if (shape.size() < shape_.size())
    throw ShapeError("expand", "cannot expand " + str() + " to " + shape_str(shape) +
                                   " which has fewer dims");
  size_t lead = shape.size() - shape_.size();
  Shape target(shape.size());
  Strides strides(shape.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      if (shape[i] < 0)
        throw ShapeError("expand", "-1 is not allowed for new leading dims in " + shape_str(shape));
      target[i] = shape[i];
      continue;
    }
    int64_t have = shape_[i - lead];
    int64_t want = shape[i] == -1 ? have : shape[i];
    if (have == want) {
      target[i] = have;
      strides[i] = strides_[i - lead];
    } else if (have == 1) {
      target[i] = want;
    } else {
      throw ShapeError("expand", "cannot expand " + str() + " to " + shape_str(shape) + ": dim " +
                                     std::to_string(i) + " is " + std::to_string(have) +
                                     ", only size-1 dims can expand");
    }
  }
  return as_strided(target, strides, offset_, "expand");
}

Tensor Tensor::squeeze() const {
  Shape shape;
  Strides strides;
  for (size_t i = 0; i < shape_.size(); ++i)
    if (shape_[i] != 1) {
      shape.push_back(shape_[i]);
      strides.push_back(strides_[i]);
    }
  return as_strided(shape, strides, offset_, "squeeze");
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim_or_scalar(d, dim(), "squeeze");
  if (dim() == 0 || shape_[size_t(d)] != 1) return *this;  // like PyTorch: a no-op otherwise
  Shape shape = shape_;
  Strides strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return as_strided(shape, strides, offset_, "squeeze");
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape shape = shape_;
  Strides strides = strides_;
  int64_t s = size_t(d) < shape_.size() ? shape_[size_t(d)] * strides_[size_t(d)] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, s);
  return as_strided(shape, strides, offset_, "unsqueeze");
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  int64_t s = wrap_dim_or_scalar(start_dim, dim(), "flatten"),
          e = wrap_dim_or_scalar(end_dim, dim(), "flatten");
  if (dim() == 0) return reshape({1});
  if (s > e)
    throw ValueError("flatten", "start_dim " + std::to_string(start_dim) + " comes after end_dim " +
                                    std::to_string(end_dim));
  Shape shape(shape_.begin(), shape_.begin() + s);
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i) merged *= shape_[size_t(i)];
  shape.push_back(merged);
  shape.insert(shape.end(), shape_.begin() + e + 1, shape_.end());
  return reshape(shape);
}

}  // namespace ember
