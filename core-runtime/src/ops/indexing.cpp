// indexing.cpp — front functions of the indexing family. Each checks its operands, turns the
// index into contiguous int64, checks every index value against the valid range
// (index_check_kernel: at once on the CPU, at the next synchronising point on CUDA), then calls
// its kernel. embedding and one_hot are compositions of the
// others' kernels; constant padding is a fill and a copy into a narrowed view, and the backward
// of reflect/replicate padding is index_add along each padded dim.
#include "ember/ops/indexing.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "ember/ops/creation.h"
#include "kernels.h"
#include "ops/checks.h"
#include "ops/deferred_error.h"
#include "ops/indexing_kernels.h"
#include "ops/out.h"

namespace ember {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The index operand as kernels take it: int64 and contiguous.
Tensor as_index(const char* op, const Named& index) {
  check_defined(op, {index});
  DType t = index.tensor.dtype();
  if (t != DType::Int64 && t != DType::Int32)
    throw DTypeError(
        op, operands({index}) + "; " + index.name +
                " must hold integer indices (int64 or int32), cast with .to(DType::Int64)");
  return index.tensor.to(DType::Int64).contiguous();
}

// IndexError unless every value of idx is in [0, limit), raised at once on the CPU and at the
// next synchronising point on CUDA (see index_check_kernel in kernels/index_check.def). `what` says
// what is indexed.
void check_range(const char* op, const Tensor& idx, int64_t limit, const std::string& what) {
  check_index_values(op, idx, limit, false, what);
}

// x viewed as [outer, x.size(d), inner] around dim d.
Shape around(const Tensor& x, int64_t d) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= x.size(i);
  for (int64_t i = d + 1; i < x.dim(); ++i) inner *= x.size(i);
  return {outer, x.size(d), inner};
}

void check_has_dims(const char* op, const Named& x) {
  check_defined(op, {x});
  if (x.tensor.dim() == 0)
    throw ShapeError(op, operands({x}) + "; expected at least 1 dim, use unsqueeze(0) first");
}

// out = x's slices idx[j] along d (idx: int64 [k], checked; out: x's shape with k at d, or
// embedding's [*, D]). The kernel writes a contiguous [outer, k, inner].
void select_slices(const char* op, const Tensor& x, int64_t d, const Tensor& idx,
                   const Tensor& out) {
  Shape s = around(x, d);
  write_contiguous(op, out, [&](Tensor& dst) {
    Tensor out3 = dst.view({s[0], idx.numel(), s[2]});
    if (out3.numel() > 0) index_select_kernel(x.device())(x.contiguous().view(s), idx, out3);
  });
}

// x's slices idx[j] along d += src's slices j (idx: int64 [k], checked; src: x's shape, k at d).
void add_slices(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& src) {
  if (src.numel() == 0) return;
  Shape s = around(x, d);
  Tensor target = x.contiguous();  // x itself when it is contiguous
  Tensor target3 = target.view(s);
  index_add_kernel(x.device())(target3, idx, src.contiguous().view({s[0], idx.numel(), s[2]}));
  if (!target.shares_storage(x)) x.copy_(target);
}

}  // namespace

void check_index_values(const char* op, const Tensor& idx, int64_t size, bool wrap,
                        const std::string& what) {
  if (idx.numel() == 0) return;
  const int64_t low = wrap ? -size : 0;
  DeferredError error{DeferredError::Kind::Index, op, "index ",
                      " is out of range for " + what + "; valid indices are " + str(low) + " to " +
                          str(size - 1) + (wrap ? "" : " (negative indices are not wrapped)")};
  index_check_kernel(idx.device())(idx, low, size, error);
}

namespace {

// given: the _out form's out, or null to allocate the result (as in every op below).
Tensor run_index_select(const Tensor& x, int64_t dim, const Tensor& index, const Tensor* given) {
  const char* op = "index_select";
  check_has_dims(op, {"x", x});
  check_same_device(op, {{"x", x}, {"index", index}});
  Tensor idx = as_index(op, {"index", index});
  if (idx.dim() > 1)
    throw ShapeError(op, operands({{"x", x}, {"index", index}}) +
                             "; index must be 1-D, flatten it first");
  const int64_t d = wrap_dim(dim, x.dim(), op, "x is " + describe(x));
  check_range(op, idx, x.size(d), "dim " + str(d) + " of x (" + describe(x) + ")");
  Shape out_shape = x.shape();
  out_shape[size_t(d)] = idx.numel();
  Tensor out = output(op, given, out_shape, x.dtype(), x.device(), {{"x", x}, {"index", index}});
  select_slices(op, x, d, idx.view({idx.numel()}), out);
  return out;
}

// In place on x (in_place), else into a copy of x: the given out, or a new tensor.
Tensor run_index_add(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                     const Tensor& src, bool in_place, const Tensor* given) {
  check_has_dims(op, {"x", x});
  check_same_device(op, {{"x", x}, {"index", index}, {"src", src}});
  check_same_dtype(op, {{"x", x}, {"src", src}});
  Tensor idx = as_index(op, {"index", index});
  const int64_t d = wrap_dim(dim, x.dim(), op, "x is " + describe(x));
  Shape want = x.shape();
  want[size_t(d)] = idx.numel();
  if (idx.dim() > 1 || src.shape() != want)
    throw ShapeError(op, operands({{"x", x}, {"index", index}, {"src", src}}) +
                             "; expected a 1-D index and src of shape " + shape_str(want) +
                             " (x's shape with index's length at dim " + str(d) + ")");
  check_range(op, idx, x.size(d), "dim " + str(d) + " of x (" + describe(x) + ")");
  Tensor out = in_place ? x
                        : output(op, given, x.shape(), x.dtype(), x.device(),
                                 {{"x", x}, {"index", index}, {"src", src}});
  if (!in_place) out.copy_(x);
  out.bump_version();
  add_slices(out, d, idx.view({idx.numel()}), src);
  return out;
}

Tensor run_embedding(const Tensor& weight, const Tensor& indices, const Tensor* given) {
  const char* op = "embedding";
  check_same_device(op, {{"weight", weight}, {"indices", indices}});
  check_dim(op, {"weight", weight}, 2, "[num_embeddings, embedding_dim]");
  Tensor idx = as_index(op, {"indices", indices});
  check_range(op, idx, weight.size(0), "the rows of weight (" + describe(weight) + ")");
  Shape out_shape = indices.shape();
  out_shape.push_back(weight.size(1));
  Tensor out = output(op, given, out_shape, weight.dtype(), weight.device(),
                      {{"weight", weight}, {"indices", indices}});
  select_slices(op, weight, 0, idx.view({idx.numel()}), out);
  return out;
}

Tensor run_embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                              std::optional<int64_t> padding_idx, const Tensor* given) {
  const char* op = "embedding_backward";
  check_same_device(op, {{"grad", grad}, {"indices", indices}});
  Tensor idx = as_index(op, {"indices", indices});
  bool fits = grad.dim() == indices.dim() + 1;
  for (int64_t i = 0; fits && i < indices.dim(); ++i) fits = grad.size(i) == indices.size(i);
  if (!fits)
    throw ShapeError(op, operands({{"grad", grad}, {"indices", indices}}) +
                             "; grad must have indices' shape plus a last dim of size D");
  if (num_weights < 0) throw ValueError(op, "num_weights must be >= 0, got " + str(num_weights));
  std::optional<int64_t> pad_row;
  if (padding_idx) {
    pad_row = *padding_idx < 0 ? *padding_idx + num_weights : *padding_idx;
    if (*pad_row < 0 || *pad_row >= num_weights)
      throw IndexError(op, "padding_idx " + str(*padding_idx) + " is out of range for " +
                               str(num_weights) + " rows; expected -" + str(num_weights) + " to " +
                               str(num_weights - 1));
  }
  check_range(op, idx, num_weights, "num_weights " + str(num_weights));
  const int64_t dsize = grad.size(-1);
  Tensor out = output(op, given, {num_weights, dsize}, grad.dtype(), grad.device(),
                      {{"grad", grad}, {"indices", indices}});
  out.zero_();
  add_slices(out, 0, idx.view({idx.numel()}), grad.reshape({idx.numel(), dsize}));
  if (pad_row) out.select(0, *pad_row).zero_();
  return out;
}

// gather/scatter_add shape rules: index has x's number of dims and fits inside `bound` (x, or
// src) in every dim except, for x, dim d.
void check_index_fits(const char* op, const Tensor& x, const Tensor& index, const Tensor* src,
                      int64_t d) {
  bool ok = index.dim() == x.dim() && (!src || src->dim() == x.dim());
  for (int64_t i = 0; ok && i < x.dim(); ++i)
    ok = (i == d || index.size(i) <= x.size(i)) && (!src || index.size(i) <= src->size(i));
  if (ok) return;
  std::string all = src ? operands({{"x", x}, {"index", index}, {"src", *src}})
                        : operands({{"x", x}, {"index", index}});
  throw ShapeError(op, all + "; index must have x's number of dims, with index.size(d) <= " +
                           (src ? "src.size(d) for every d and <= " : "") +
                           "x.size(d) for every d != dim (" + str(d) + ")");
}

Tensor run_gather(const Tensor& x, int64_t dim, const Tensor& index, const Tensor* given) {
  const char* op = "gather";
  check_has_dims(op, {"x", x});
  check_same_device(op, {{"x", x}, {"index", index}});
  Tensor idx = as_index(op, {"index", index});
  const int64_t d = wrap_dim(dim, x.dim(), op, "x is " + describe(x));
  check_index_fits(op, x, index, nullptr, d);
  check_range(op, idx, x.size(d), "dim " + str(d) + " of x (" + describe(x) + ")");
  Tensor out = output(op, given, idx.shape(), x.dtype(), x.device(), {{"x", x}, {"index", index}});
  out.bump_version();
  if (out.numel() > 0) gather_kernel(x.device())(x, d, idx, out);  // any strides
  return out;
}

// In place on x (in_place), else into a copy of x: the given out, or a new tensor.
Tensor run_scatter_add(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                       const Tensor& src, bool in_place, const Tensor* given) {
  check_has_dims(op, {"x", x});
  check_same_device(op, {{"x", x}, {"index", index}, {"src", src}});
  check_same_dtype(op, {{"x", x}, {"src", src}});
  Tensor idx = as_index(op, {"index", index});
  const int64_t d = wrap_dim(dim, x.dim(), op, "x is " + describe(x));
  check_index_fits(op, x, index, &src, d);
  check_range(op, idx, x.size(d), "dim " + str(d) + " of x (" + describe(x) + ")");
  Tensor out = in_place ? x
                        : output(op, given, x.shape(), x.dtype(), x.device(),
                                 {{"x", x}, {"index", index}, {"src", src}});
  if (!in_place) out.copy_(x);
  out.bump_version();
  if (idx.numel() > 0) scatter_add_kernel(x.device())(out, d, idx, src);  // any strides
  return out;
}

Tensor run_masked_fill(const Tensor& x, const Tensor& mask, double value, const Tensor* given) {
  const char* op = "masked_fill";
  check_same_device(op, {{"x", x}, {"mask", mask}});
  check_value_fits(op, value, x.dtype());
  if (mask.dtype() != DType::Bool)
    throw DTypeError(op, operands({{"x", x}, {"mask", mask}}) +
                             "; mask must be bool, e.g. the result of a comparison");
  bool fits = mask.dim() <= x.dim();
  for (int64_t i = 1; fits && i <= mask.dim(); ++i)
    fits = mask.size(-i) == 1 || mask.size(-i) == x.size(-i);
  if (!fits)
    throw ShapeError(op, operands({{"x", x}, {"mask", mask}}) +
                             "; mask must broadcast to x's shape (sizes equal or 1)");
  Tensor out = given ? *given : Tensor::empty(x.shape(), x.dtype(), x.device(), op);
  if (given) {  // elementwise: out may be x itself (an in-place masked fill), nothing else shared
    check_out(op, out, x.shape(), x.dtype(), x.device());
    check_out_alias(op, out, {{"x", x}, {"mask", mask}}, /*identical_ok=*/true);
  }
  out.bump_version();
  if (out.numel() > 0) masked_fill_kernel(x.device())(x, mask.expand(x.shape()), value, out);
  return out;
}

Tensor run_one_hot(const Tensor& indices, int64_t num_classes, const Tensor* given) {
  const char* op = "one_hot";
  Tensor idx = as_index(op, {"indices", indices});
  if (num_classes == -1) {
    if (idx.numel() == 0)
      throw ValueError(op, operands({{"indices", indices}}) +
                               "; cannot infer num_classes from no indices, pass num_classes");
    num_classes = std::max<int64_t>(index_range_kernel(idx.device())(idx).max + 1, 0);
  } else if (num_classes < 0) {
    throw ValueError(op, "num_classes must be >= 0 or -1 (infer), got " + str(num_classes));
  }
  check_range(op, idx, num_classes, "num_classes " + str(num_classes));
  Shape out_shape = idx.shape();
  out_shape.push_back(num_classes);
  Tensor out = output(op, given, out_shape, DType::Int64, idx.device(), {{"indices", indices}});
  out.zero_();
  if (out.numel() > 0) {  // out[..., idx[...]] += 1 (any strides)
    Tensor column = idx.unsqueeze(-1);
    Tensor one = Tensor::empty({1}, DType::Int64, idx.device(), op);
    one.fill_(1);
    scatter_add_kernel(idx.device())(out, out.dim() - 1, column, one.expand(column.shape()));
  }
  return out;
}

PadMode parse_pad_mode(const std::string& mode) {
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "replicate") return PadMode::Replicate;
  throw ValueError("pad", "unknown mode '" + mode + "'; expected constant, reflect or replicate");
}

// Per dim of `shape`: the pads before and after it (0 for dims `pads` does not reach).
std::pair<std::vector<int64_t>, std::vector<int64_t>> split_pads(const char* op, const Shape& shape,
                                                                 const std::vector<int64_t>& pads) {
  const size_t ndim = shape.size();
  if (pads.size() % 2 != 0 || pads.size() > 2 * ndim)
    throw ValueError(op, "pads has " + str(int64_t(pads.size())) + " values for a tensor of " +
                             str(int64_t(ndim)) + " dims; expected an even number, at most " +
                             str(int64_t(2 * ndim)) + " ({left, right} per dim, last dim first)");
  std::vector<int64_t> left(ndim, 0), right(ndim, 0);
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    left[ndim - 1 - i] = pads[2 * i];
    right[ndim - 1 - i] = pads[2 * i + 1];
  }
  return {left, right};
}

Shape padded_shape(const char* op, const Shape& shape, const std::vector<int64_t>& left,
                   const std::vector<int64_t>& right) {
  Shape out = shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    out[d] = shape[d] + left[d] + right[d];
    if (out[d] < 0)
      throw ShapeError(op, "padding dim " + str(int64_t(d)) + " of size " + str(shape[d]) +
                               " by (" + str(left[d]) + ", " + str(right[d]) +
                               ") gives a negative size; crop less");
  }
  return out;
}

// The overlap of an unpadded tensor and its constant-padded version, as views of each (both
// undefined when it is empty). A negative pad crops the unpadded side instead of padding.
std::pair<Tensor, Tensor> overlap(Tensor in, Tensor out, const std::vector<int64_t>& left,
                                  const std::vector<int64_t>& right) {
  for (int64_t d = 0; d < in.dim(); ++d) {
    const int64_t l = left[size_t(d)], r = right[size_t(d)];
    const int64_t len = in.size(d) - std::max<int64_t>(-l, 0) - std::max<int64_t>(-r, 0);
    if (len <= 0) return {Tensor(), Tensor()};
    in = in.narrow(d, std::max<int64_t>(-l, 0), len);
    out = out.narrow(d, std::max<int64_t>(l, 0), len);
  }
  return {in, out};
}

// Reflect and replicate pads must stay within what the unpadded dims can supply.
void check_pads_fit(const char* op, const std::string& operand, const Shape& shape,
                    const std::vector<int64_t>& left, const std::vector<int64_t>& right, PadMode m,
                    const std::string& mode) {
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t l = left[d], r = right[d], n = shape[d];
    const bool ok =
        l >= 0 && r >= 0 && (l + r == 0 || (m == PadMode::Reflect ? l < n && r < n : n > 0));
    if (!ok)
      throw ValueError(op, operand + "; " + mode + " pads (" + str(l) + ", " + str(r) +
                               ") do not fit dim " + str(int64_t(d)) + " of size " + str(n) +
                               (m == PadMode::Reflect
                                    ? ": reflect pads must be >= 0 and < the dim's size"
                                    : ": replicate pads must be >= 0 and the dim non-empty"));
  }
}

Tensor run_pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode,
               double value, const Tensor* given) {
  const char* op = "pad";
  check_defined(op, {{"x", x}});
  const PadMode m = parse_pad_mode(mode);
  if (m == PadMode::Constant) check_value_fits(op, value, x.dtype());
  auto [left, right] = split_pads(op, x.shape(), pads);
  Tensor out = output(op, given, padded_shape(op, x.shape(), left, right), x.dtype(), x.device(),
                      {{"x", x}});
  if (m == PadMode::Constant) {  // any layout of out
    out.fill_(value);
    auto [in_part, out_part] = overlap(x, out, left, right);
    if (in_part.defined()) out_part.copy_(in_part);
    return out;
  }
  check_pads_fit(op, operands({{"x", x}}), x.shape(), left, right, m, mode);
  if (pads.size() / 2 > 7)
    throw NotSupportedError(op, mode + " mode pads at most 7 dims, got " +
                                    str(int64_t(pads.size() / 2)));
  // Leading dims without padding merge into one, leaving at most 1 + pads.size() / 2 dims.
  const int64_t lead = x.dim() - int64_t(pads.size() / 2);
  Shape in_shape{1}, out_shape{1};
  std::vector<int64_t> kernel_left{0};
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < lead) {
      in_shape[0] *= x.size(d);
      out_shape[0] *= x.size(d);
      continue;
    }
    in_shape.push_back(x.size(d));
    out_shape.push_back(out.size(d));
    kernel_left.push_back(left[size_t(d)]);
  }
  write_contiguous(op, out, [&](Tensor& dst) {
    Tensor out_k = dst.view(out_shape);
    if (out_k.numel() > 0)
      pad_kernel(x.device())(x.contiguous().view(in_shape), kernel_left, m, out_k);
  });
  return out;
}

Tensor run_pad_backward(const Tensor& grad_out, const Shape& input_shape,
                        const std::vector<int64_t>& pads, const std::string& mode,
                        const Tensor* given) {
  const char* op = "pad_backward";
  check_defined(op, {{"grad_out", grad_out}});
  const PadMode m = parse_pad_mode(mode);
  auto [left, right] = split_pads(op, input_shape, pads);
  Shape padded = padded_shape(op, input_shape, left, right);
  if (grad_out.shape() != padded)
    throw ShapeError(op, operands({{"grad_out", grad_out}}) + "; expected the padded shape " +
                             shape_str(padded) + " of input shape " + shape_str(input_shape));
  if (m != PadMode::Constant)
    check_pads_fit(op, "input shape " + shape_str(input_shape), input_shape, left, right, m, mode);
  Tensor grad_in =
      output(op, given, input_shape, grad_out.dtype(), grad_out.device(), {{"grad_out", grad_out}});
  if (m == PadMode::Constant) {
    grad_in.zero_();  // elements cropped away by negative pads get no gradient
    auto [in_part, out_part] = overlap(grad_in, grad_out, left, right);
    if (in_part.defined()) in_part.copy_(out_part);
    return grad_in;
  }
  // A reflect or replicate pad is an index_select along each padded dim, output position o
  // reading input position pad_source(o); its adjoint is index_add along each dim in turn, which
  // sums the gradient of every copy of an element back into it.
  size_t last = input_shape.size();  // the last padded dim, whose sum lands in grad_in
  for (size_t d = 0; d < input_shape.size(); ++d)
    if (left[d] != 0 || right[d] != 0) last = d;
  if (last == input_shape.size()) return grad_in.copy_(grad_out);
  Tensor grad = grad_out;
  for (size_t d = 0; d <= last; ++d) {
    if (left[d] == 0 && right[d] == 0) continue;
    std::vector<int64_t> source(size_t(padded[d]));
    for (int64_t o = 0; o < padded[d]; ++o)
      source[size_t(o)] = pad_source(o, left[d], input_shape[d], m);
    Shape shape = grad.shape();
    shape[d] = input_shape[d];
    Tensor summed = d == last ? grad_in.zero_() : zeros(shape, grad.dtype(), grad.device());
    index_add_(summed, int64_t(d), Tensor::from_vector(source, {padded[d]}, grad.device()), grad);
    grad = summed;
  }
  return grad_in;
}

}  // namespace

// Each op's out-of-place form passes no output (allocate); its _out form passes &out.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  return run_index_select(x, dim, index, nullptr);
}
const Tensor& index_select_out(const Tensor& out, const Tensor& x, int64_t dim,
                               const Tensor& index) {
  run_index_select(x, dim, index, &out);
  return out;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return run_index_add("index_add", x, dim, index, src, false, nullptr);
}
const Tensor& index_add_out(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index,
                            const Tensor& src) {
  run_index_add("index_add", x, dim, index, src, false, &out);
  return out;
}
const Tensor& index_add_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  run_index_add("index_add_", x, dim, index, src, true, nullptr);
  return x;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  return run_embedding(weight, indices, nullptr);
}
const Tensor& embedding_out(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  run_embedding(weight, indices, &out);
  return out;
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                          std::optional<int64_t> padding_idx) {
  return run_embedding_backward(grad, indices, num_weights, padding_idx, nullptr);
}
const Tensor& embedding_backward_out(const Tensor& out, const Tensor& grad, const Tensor& indices,
                                     int64_t num_weights, std::optional<int64_t> padding_idx) {
  run_embedding_backward(grad, indices, num_weights, padding_idx, &out);
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  return run_gather(x, dim, index, nullptr);
}
const Tensor& gather_out(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  run_gather(x, dim, index, &out);
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return run_scatter_add("scatter_add", x, dim, index, src, false, nullptr);
}
const Tensor& scatter_add_out(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index,
                              const Tensor& src) {
  run_scatter_add("scatter_add", x, dim, index, src, false, &out);
  return out;
}
const Tensor& scatter_add_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  run_scatter_add("scatter_add_", x, dim, index, src, true, nullptr);
  return x;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  return run_masked_fill(x, mask, value, nullptr);
}
const Tensor& masked_fill_out(const Tensor& out, const Tensor& x, const Tensor& mask,
                              double value) {
  run_masked_fill(x, mask, value, &out);
  return out;
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  return run_one_hot(indices, num_classes, nullptr);
}
const Tensor& one_hot_out(const Tensor& out, const Tensor& indices, int64_t num_classes) {
  run_one_hot(indices, num_classes, &out);
  return out;
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode,
           double value) {
  return run_pad(x, pads, mode, value, nullptr);
}
const Tensor& pad_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& pads,
                      const std::string& mode, double value) {
  run_pad(x, pads, mode, value, &out);
  return out;
}

Tensor pad_backward(const Tensor& grad_out, const Shape& input_shape,
                    const std::vector<int64_t>& pads, const std::string& mode) {
  return run_pad_backward(grad_out, input_shape, pads, mode, nullptr);
}
const Tensor& pad_backward_out(const Tensor& out, const Tensor& grad_out, const Shape& input_shape,
                               const std::vector<int64_t>& pads, const std::string& mode) {
  run_pad_backward(grad_out, input_shape, pads, mode, &out);
  return out;
}

}  // namespace ember
