// masking.cpp — front functions of the masking family. nonzero and masked_select check their
// operands and call their kernel, which sizes the result. index_put reduces every index list to
// one int64 offset per element of the indexed shape (masks through nonzero, then elementwise ops
// on the operands' device), and writes the values through a flat view of the target:
// put_kernel, or scatter_add_kernel when it accumulates.
#include "ember/ops/masking.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/ops/creation.h"
#include "ember/ops/elementwise.h"
#include "kernels.h"
#include "ops/checks.h"
#include "ops/indexing_kernels.h"

namespace ember {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// NumPy's broadcast of a and b, or nothing when they do not broadcast.
std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

}  // namespace

Tensor nonzero(const Tensor& x) {
  const char* op = "nonzero";
  check_defined(op, {{"x", x}});
  if (x.numel() == 0) return Tensor::empty({0, x.dim()}, DType::Int64, x.device(), op);
  return nonzero_kernel(x.device())(x);
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  const char* op = "masked_select";
  check_same_device(op, {{"x", x}, {"mask", mask}});
  if (mask.dtype() != DType::Bool)
    throw DTypeError(op, operands({{"x", x}, {"mask", mask}}) +
                             "; mask must be bool, e.g. the result of a comparison (x > 0)");
  const std::optional<Shape> shape = broadcast(x.shape(), mask.shape());
  if (!shape)
    throw ShapeError(op, operands({{"x", x}, {"mask", mask}}) +
                             "; x and mask must broadcast together (sizes equal or 1, aligned "
                             "from the last dim)");
  if (shape_numel(*shape) == 0) return Tensor::empty({0}, x.dtype(), x.device(), op);
  return masked_select_kernel(x.device())(x.expand(*shape), mask.expand(*shape));
}

// ---- index_put ----
namespace {

// One index tensor per dim of the target (undefined: a full slice), as int64, with the name the
// caller knows it by ("indices[1]") for error messages.
struct DimIndex {
  Tensor index;
  std::string name;
};

// A bool mask over target dims [first, first + mask.dim()) becomes its nonzero() coordinates,
// one int64 index tensor per dim.
void expand_mask(const char* op, const Named& x, const Tensor& mask, const std::string& name,
                 std::vector<DimIndex>& dims) {
  const int64_t first = int64_t(dims.size());
  if (mask.dim() == 0)
    throw NotSupportedError(op, name + " is " + describe(mask) +
                                    "; a 0-d bool index is not supported, use a 1-d mask");
  bool fits = first + mask.dim() <= x.tensor.dim();
  for (int64_t j = 0; fits && j < mask.dim(); ++j) fits = mask.size(j) == x.tensor.size(first + j);
  if (!fits)
    throw IndexError(op, operands({x}) + ", " + name + " is " + describe(mask) +
                             "; a mask's shape must equal the shape of the dims it covers (dims " +
                             str(first) + " to " + str(first + mask.dim() - 1) + " of " + x.name +
                             ")");
  const Tensor coords = nonzero(mask);  // [n, mask.dim()]
  for (int64_t j = 0; j < mask.dim(); ++j) dims.push_back({coords.select(1, j), name});
}

// The caller's index list as one entry per dim of x.
std::vector<DimIndex> per_dim_indices(const char* op, const Named& x, const IndexList& indices) {
  std::vector<DimIndex> dims;
  for (size_t k = 0; k < indices.size(); ++k) {
    const Tensor& idx = indices[k];
    const std::string name = "indices[" + str(int64_t(k)) + "]";
    const int64_t covers = idx.defined() && idx.dtype() == DType::Bool ? idx.dim() : 1;
    if (int64_t(dims.size()) + covers > x.tensor.dim())
      throw IndexError(op, operands({x}) + "; too many indices: " + x.name + " has " +
                               str(x.tensor.dim()) + " dims, give at most one index per dim");
    if (!idx.defined()) {
      dims.push_back({Tensor(), name});
      continue;
    }
    if (idx.device() != x.tensor.device())
      throw DeviceError(op, operands({x}) + ", " + name + " is " + describe(idx) +
                                "; indices must be on x's device, move them with .to(device)");
    if (idx.dtype() == DType::Bool) {
      expand_mask(op, x, idx, name, dims);
    } else if (idx.dtype() == DType::Int64 || idx.dtype() == DType::Int32) {
      dims.push_back({idx.to(DType::Int64), name});
    } else {
      throw DTypeError(op, name + " is " + describe(idx) +
                               "; an index must be int64, int32 or a bool mask, cast with "
                               ".to(DType::Int64)");
    }
  }
  dims.resize(size_t(x.tensor.dim()));  // the dims past the list are full slices
  return dims;
}

// The broadcast shape of the index tensors, and where it sits in the indexed shape.
struct IndexedShape {
  Shape shape;     // the indexed shape
  Shape index;     // the index tensors' broadcast shape B
  int64_t at = 0;  // B's first position in shape
};

IndexedShape indexed_shape(const char* op, const Named& x, const std::vector<DimIndex>& dims) {
  IndexedShape r;
  int64_t first = -1, last = -1, count = 0;
  std::string names;
  for (int64_t d = 0; d < int64_t(dims.size()); ++d) {
    const Tensor& idx = dims[size_t(d)].index;
    if (!idx.defined()) continue;
    names += (names.empty() ? "" : ", ") + dims[size_t(d)].name + " is " + describe(idx);
    const std::optional<Shape> b = broadcast(r.index, idx.shape());
    if (!b)
      throw ShapeError(op, names +
                               "; the index tensors must broadcast together (a mask counts "
                               "as its number of true elements)");
    r.index = *b;
    first = first < 0 ? d : first;
    last = d;
    ++count;
  }
  // NumPy: indexed dims side by side keep their place; separated by a slice, they go first.
  r.at = count > 0 && last - first + 1 == count ? first : 0;
  for (int64_t d = 0; d < int64_t(dims.size()); ++d)
    if (!dims[size_t(d)].index.defined()) r.shape.push_back(x.tensor.size(d));
  r.shape.insert(r.shape.begin() + r.at, r.index.begin(), r.index.end());
  return r;
}

// [1, ..., n at position `at`, ..., 1] of rank `rank`: a tensor of shape [n] (or B) placed so
// that it broadcasts along the indexed shape.
Tensor place_at(const Tensor& t, int64_t at, int64_t rank) {
  Shape s(size_t(rank), 1);
  for (int64_t i = 0; i < t.dim(); ++i) s[size_t(at + i)] = t.size(i);
  return t.reshape(s);
}

// Offsets from target's first element of every element of the indexed shape, flat [n]:
// sum over indexed dims of index * stride (negative indices wrapped) plus, over the sliced dims,
// coordinate * stride.
Tensor element_offsets(const char* op, const Named& x, const std::vector<DimIndex>& dims,
                       const IndexedShape& is) {
  const Tensor& target = x.tensor;
  const Device dev = target.device();
  const int64_t rank = int64_t(is.shape.size()), nb = int64_t(is.index.size());
  Tensor at_index = scalar_tensor(0, DType::Int64, dev);  // [B]
  int64_t slice = 0;                                      // sliced dims seen so far
  Tensor offsets;
  for (int64_t d = 0; d < target.dim(); ++d) {
    const DimIndex& di = dims[size_t(d)];
    const double size = double(target.size(d)), stride = double(target.stride(d));
    if (di.index.defined()) {
      const Tensor idx = di.index.contiguous();
      check_index_values(op, idx, target.size(d), true,
                         "dim " + str(d) + " (size " + str(target.size(d)) + ") of " + x.name +
                             " (" + describe(target) + ") in " + di.name);
      const Tensor wrapped = where(lt(idx, 0.0), add(idx, size), idx);
      at_index = add(at_index, mul(wrapped, stride));
      continue;
    }
    const int64_t pos = slice < is.at ? slice : slice + nb;
    ++slice;
    const Tensor term = place_at(arange(0, size, 1, DType::Int64, dev), pos, rank);
    offsets = offsets.defined() ? add(offsets, mul(term, stride)) : mul(term, stride);
  }
  Tensor placed = place_at(at_index, is.at, rank);
  offsets = offsets.defined() ? add(offsets, placed) : placed;
  return offsets.expand(is.shape).contiguous().view({shape_numel(is.shape)});
}

// values broadcast to the indexed shape, flat [n], in memory of their own when they overlap the
// target (the write would otherwise change values not yet read).
Tensor flat_values(const char* op, const Named& x, const Tensor& values, const Shape& shape) {
  bool fits = values.dim() <= int64_t(shape.size());
  for (int64_t i = 1; fits && i <= values.dim(); ++i)
    fits = values.size(-i) == 1 || values.size(-i) == shape[shape.size() - size_t(i)];
  if (!fits)
    throw ShapeError(op, operands({x, {"values", values}}) + "; values must broadcast to the " +
                             "indexed shape " + shape_str(shape) + " (sizes equal or 1)");
  Tensor v = values.expand(shape);
  v = may_overlap(v, x.tensor) ? v.clone() : v.contiguous();
  return v.view({shape_numel(shape)});
}

void check_operands(const char* op, const Named& x, const Tensor& values, bool accumulate) {
  check_same_device(op, {x, {"values", values}});
  if (values.dtype() != x.tensor.dtype())
    throw DTypeError(op, operands({x, {"values", values}}) + "; values must have " + x.name +
                             "'s dtype, cast with values.to(" + x.name + ".dtype())");
  if (accumulate && x.tensor.dtype() == DType::Bool)
    throw DTypeError(op, operands({x}) +
                             "; accumulate adds values, which bool cannot; cast to an integer "
                             "dtype first or use accumulate=false");
}

// target[indices] = values (or += with accumulate), target being checked already.
void put(const char* op, const Named& target, const IndexList& indices, const Tensor& values,
         bool accumulate, const Tensor* copy_first) {
  const std::vector<DimIndex> dims = per_dim_indices(op, target, indices);
  const IndexedShape is = indexed_shape(op, target, dims);
  const int64_t n = shape_numel(is.shape);
  Tensor offsets, flat_v;
  if (n > 0) {
    offsets = element_offsets(op, target, dims, is);
    flat_v = flat_values(op, target, values, is.shape);
  } else {
    flat_values(op, target, values, is.shape);  // the shape check alone
  }
  Tensor t = target.tensor;
  if (copy_first) t.copy_(*copy_first);
  t.bump_version();
  if (n == 0) return;
  // The whole span of t as one 1-d view starting at t's first element, which offsets index.
  const int64_t span = storage_extent(t.shape(), t.strides(), 0, op);
  Tensor flat = t.as_strided({span}, {1}, t.offset(), op);
  if (accumulate) scatter_add_kernel(t.device())(flat, 0, offsets, flat_v);
  else put_kernel(t.device())(flat, offsets, flat_v);
}

}  // namespace

const Tensor& index_put_(const Tensor& self, const IndexList& indices, const Tensor& values,
                         bool accumulate) {
  const char* op = "index_put_";
  check_operands(op, {"self", self}, values, accumulate);
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.stride(d) == 0 && self.size(d) > 1)
      throw ValueError(op, operands({{"self", self}}) +
                               "; self is an expanded view whose elements share memory; write "
                               "into a tensor with one address per element (clone it first)");
  put(op, {"self", self}, indices, values, accumulate, nullptr);
  return self;
}

namespace {

const Tensor& index_put_into(const char* op, const Tensor& out, const Tensor& x,
                             const IndexList& indices, const Tensor& values, bool accumulate) {
  check_operands(op, {"x", x}, values, accumulate);
  check_out(op, out, x.shape(), x.dtype(), x.device());
  check_out_alias(op, out, {{"x", x}}, true);
  check_out_alias(op, out, {{"values", values}}, false);
  for (size_t k = 0; k < indices.size(); ++k) {
    const std::string name = "indices[" + str(int64_t(k)) + "]";
    check_out_alias(op, out, {{name.c_str(), indices[k]}}, false);
  }
  // out holds x's values, then the puts; when out is x itself the copy is skipped.
  put(op, {"x", out}, indices, values, accumulate, same_view(out, x) ? nullptr : &x);
  return out;
}

}  // namespace

const Tensor& index_put_out(const Tensor& out, const Tensor& x, const IndexList& indices,
                            const Tensor& values, bool accumulate) {
  return index_put_into("index_put_out", out, x, indices, values, accumulate);
}

Tensor index_put(const Tensor& x, const IndexList& indices, const Tensor& values, bool accumulate) {
  const char* op = "index_put";
  check_defined(op, {{"x", x}});
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device(), op);
  index_put_into(op, out, x, indices, values, accumulate);
  return out;
}

}  // namespace ember
