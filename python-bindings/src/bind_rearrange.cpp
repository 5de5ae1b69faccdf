// bind_rearrange.cpp — sorting, running sums and products, ops that move elements (tril, roll,
// tile, repeat, scatter, masked_select), resizing, and the counting ops (bincount, unique), with
// PyTorch's names and arguments, as ember.<op> and Tensor methods. Differentiable ops go through
// autodiff-engine's builders (ember/autodiff/ops/rearrange.h); the ops whose output size depends
// on the data (masked_select, bincount, unique) read it first, as PyTorch does (on CUDA this
// synchronises): masked_select is then an index_select, so it is differentiable; bincount and
// unique have no gradient and return tensors without history.
#include <ember/autodiff/ops.h>
#include <ember/error.h>
#include <ember/ops/creation.h>
#include <ember/ops/elementwise.h>
#include <ember/ops/indexing.h>
#include <ember/ops/masking.h>
#include <ember/ops/reduction.h>
#include <ember/ops/scan_sort.h>
#include <ember/ops/shape_ops.h>

#include <algorithm>

#include "def_op.h"

namespace ember::python {

namespace ad = ember::autodiff;

namespace {

using V = Variable;

// An int or a tuple/list of ints (roll's shifts, tile's dims).
std::vector<int64_t> ints_from_object(py::handle obj, const char* op, const char* name) {
  if (PyIndex_Check(obj.ptr())) return {py::cast<int64_t>(obj)};
  try {
    return py::cast<std::vector<int64_t>>(obj);
  } catch (const py::cast_error&) {
    throw ember::ValueError(op, std::string(name) + " must be an int or a tuple of ints, got " +
                                    std::string(py::repr(obj)));
  }
}

// Sizes given as x.tile(2, 3) or x.tile((2, 3)).
std::vector<int64_t> sizes_from_args(const py::args& args, const char* op) {
  if (args.size() == 1 && !PyIndex_Check(args[0].ptr()))
    return ints_from_object(args[0], op, "sizes");
  return shape_from_args(args, op);
}

// ---- masked_select: the elements of x where mask is true, flat, differentiable ----
V masked_select(const V& x, const V& mask) {
  if (mask.dtype() != DType::Bool)
    throw ember::DTypeError("masked_select", "mask is " + mask.str() +
                                                 "; it must be bool: compare first, e.g. x > 0");
  if (mask.device() != x.device())
    throw ember::DeviceError("masked_select", "x is " + x.str() + ", mask is " + mask.str() +
                                                  "; move both to one device first");
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  const int64_t n = shape_numel(shape, "masked_select");
  const Tensor flat_mask = mask.data().expand(shape).reshape({n});
  const Tensor positions = ember::nonzero(flat_mask).select(1, 0).contiguous();  // int64 [k]
  return ad::index_select(ad::reshape(ad::expand(x, shape), {n}), 0, V(positions));
}

// ---- scatter: src a tensor or a number; reduce None or "add" ----
V scatter(const V& x, int64_t dim, const V& index, py::handle src, py::handle value,
          const std::optional<std::string>& reduce) {
  if (!src.is_none() && !value.is_none())
    throw ember::ValueError("scatter", "both src and value are given; pass one of them");
  py::handle given = src.is_none() ? value : src;
  if (given.is_none())
    throw ember::ValueError("scatter", "neither src nor value is given; pass one of them");
  if (reduce && *reduce != "add")
    throw ember::NotSupportedError("scatter", "reduce='" + *reduce +
                                                  "' is not supported; use reduce=None or 'add'");
  if (is_tensor(given)) {
    const V& s = tensor_of(given);
    return reduce ? ad::scatter_add(x, dim, index, s) : ad::scatter(x, dim, index, s);
  }
  if (!is_scalar(given))
    throw ember::ValueError("scatter", "src must be a Tensor or a number, got " +
                                           std::string(py::repr(given)));
  const double v = scalar_value(given);
  if (!reduce) return ad::scatter(x, dim, index, v);
  const V filled(ember::full(index.shape(), v, x.dtype(), x.device()));
  return ad::scatter_add(x, dim, index, filled);
}

// self = f(self) in place: recorded out of place when there is history to record (the Tensor
// object then takes the result), else written into self's storage.
template <class F> py::object in_place(py::object self, py::handle value, const char* op, F&& f) {
  const V& x = py::cast<const V&>(self);
  if (records_in_place(x, value)) {
    assign_recorded(self, f(x), op);
    return self;
  }
  ad::NoGradGuard no_grad;
  x.copy_(f(x));
  return self;
}

// ---- bincount and unique: counting, on the data ----
Tensor bincount(const V& input, std::optional<V> weights, int64_t minlength) {
  const char* op = "bincount";
  const Tensor& x = input.data();
  if (x.dim() != 1 || !is_integral(x.dtype()) || x.dtype() == DType::Bool)
    throw ember::DTypeError(op, "input is " + x.str() +
                                    "; expected a 1-D tensor of non-negative integers");
  if (minlength < 0)
    throw ember::ValueError(op, "minlength must be >= 0, got " + std::to_string(minlength));
  if (weights && (weights->dim() != 1 || weights->size(0) != x.size(0)))
    throw ember::ShapeError(op, "input is " + x.str() + ", weights is " + weights->str() +
                                    "; weights must be 1-D with input's length");
  if (weights && weights->device() != x.device())
    throw ember::DeviceError(op, "input is " + x.str() + ", weights is " + weights->str() +
                                     "; move both to one device first");
  int64_t size = minlength;
  if (x.numel() > 0) {
    const int64_t lo = ember::amin(x).to(DType::Int64).item<int64_t>();
    if (lo < 0)
      throw ember::ValueError(op, "input holds the negative value " + std::to_string(lo) +
                                      "; bincount counts non-negative integers only");
    size = std::max(size, ember::amax(x).to(DType::Int64).item<int64_t>() + 1);
  }
  // As PyTorch: counts are int64; float32 weights give float32 sums, any other weights float64.
  const DType dtype = !weights                             ? DType::Int64
                      : weights->dtype() == DType::Float32 ? DType::Float32
                                                           : DType::Float64;
  Tensor out = ember::zeros({size}, dtype, x.device());
  // Without weights each element adds 1: one 1 broadcast (stride 0), not n of them in memory.
  const Tensor src = weights ? weights->data().to(dtype)
                             : ember::scalar_tensor(1.0, dtype, x.device()).expand({x.numel()});
  if (x.numel() > 0) ember::scatter_add_(out, 0, x.to(DType::Int64), src);
  return out;
}

// The sorted distinct values of x (flattened), with where each element of x went (inverse, x's
// shape) and how often each value occurs (counts), from one stable sort.
py::object unique(const V& input, bool /*sorted: always sorted*/, bool return_inverse,
                  bool return_counts, py::handle dim) {
  const char* op = "unique";
  if (!dim.is_none())
    throw ember::NotSupportedError(op, "dim=" + std::string(py::repr(dim)) +
                                           " is not supported; only dim=None (the distinct "
                                           "elements of the flattened tensor)");
  const Tensor& x = input.data();
  const int64_t n = x.numel();
  auto [values, order] = ember::sort(x.reshape({n}), 0, false, true);
  Tensor first = ember::ones({n}, DType::Bool, x.device());  // where a new value starts
  if (n > 1)
    first.slice(0, 1, n).copy_(ember::ne(values.slice(0, 1, n), values.slice(0, 0, n - 1)));
  const Tensor distinct = ember::masked_select(values, first);
  py::list out;
  out.append(V(distinct));
  if (return_inverse) {
    Tensor inverse = ember::zeros({n}, DType::Int64, x.device());
    if (n > 0) ember::scatter_add_(inverse, 0, order, ember::sub(ember::cumsum(first, 0), 1.0));
    out.append(V(inverse.reshape(x.shape())));
  }
  if (return_counts) {
    const Tensor starts = ember::nonzero(first).select(1, 0);  // [u]
    const Tensor ends = ember::cat({starts.slice(0, 1, starts.numel()),
                                    ember::full({1}, double(n), DType::Int64, x.device())},
                                   0);
    out.append(V(n > 0 ? ember::sub(ends, starts) : starts.contiguous()));
  }
  if (out.size() == 1) return out[0];
  return py::tuple(out);
}

// ---- interpolate: torch.nn.functional.interpolate's arguments ----
V interpolate(const V& x, py::handle size, py::handle scale_factor, const std::string& mode,
              std::optional<bool> align_corners) {
  const char* op = "interpolate";
  if (x.dim() != 4)
    throw ember::NotSupportedError(op, "input is " + x.str() +
                                           "; only 4-D [N, C, H, W] inputs (2 spatial dims) "
                                           "are supported");
  if (align_corners && mode != "bilinear")
    throw ember::ValueError(op, "align_corners can only be set with mode='bilinear', not '" + mode +
                                    "'; leave it None");
  std::vector<int64_t> sizes;
  std::vector<double> scales;
  if (!size.is_none()) {
    sizes = ints_from_object(size, op, "size");
    if (sizes.size() == 1) sizes.push_back(sizes[0]);
  }
  if (!scale_factor.is_none()) {
    if (is_scalar(scale_factor)) scales.assign(2, scalar_value(scale_factor));
    else scales = py::cast<std::vector<double>>(scale_factor);
    if (scales.size() != 2)
      throw ember::ValueError(op, "scale_factor " + std::string(py::repr(scale_factor)) +
                                      " for 2 spatial dims; give one factor or two");
  }
  if (size.is_none() == scale_factor.is_none())
    throw ember::ValueError(op, std::string(size.is_none() ? "neither size nor scale_factor"
                                                           : "both size and scale_factor") +
                                    " given; pass exactly one of them");
  return ad::interpolate(x, sizes, scales, mode, align_corners.value_or(false));
}

}  // namespace

void bind_rearrange(py::module_& m, TensorClass& cls) {
  // ---- sorting ----
  def_op(
      m, cls, "sort",
      [](const V& x, int64_t d, bool descending, bool stable) {
        auto [values, indices] = ad::sort(x, d, descending, stable);
        return values_indices(values, indices);
      },
      "(values, indices) sorted along dim (stable; NaN sorts as the largest value).",
      py::arg("dim") = -1, py::arg("descending") = false, py::kw_only(), py::arg("stable") = false);
  def_op(
      m, cls, "argsort",
      [](const V& x, int64_t d, bool descending, bool stable) {
        return ad::argsort(x, d, descending, stable);
      },
      "The int64 indices that sort x along dim.", py::arg("dim") = -1,
      py::arg("descending") = false, py::arg("stable") = false);
  def_op(
      m, cls, "topk",
      [](const V& x, int64_t k, int64_t d, bool largest, bool sorted) {
        auto [values, indices] = ad::topk(x, k, d, largest, sorted);
        return values_indices(values, indices);
      },
      "(values, indices) of the k largest (smallest) elements along dim, in sorted order.",
      py::arg("k"), py::arg("dim") = -1, py::arg("largest") = true, py::arg("sorted") = true);

  // ---- running sums and products ----
  def_op(
      m, cls, "cumsum",
      [](const V& x, int64_t d, std::optional<DType> dtype) { return ad::cumsum(x, d, dtype); },
      "Running sums along dim (integers and bool give int64).", py::arg("dim"), py::kw_only(),
      py::arg("dtype") = py::none());
  def_op(
      m, cls, "cumprod",
      [](const V& x, int64_t d, std::optional<DType> dtype) { return ad::cumprod(x, d, dtype); },
      "Running products along dim (integers and bool give int64).", py::arg("dim"), py::kw_only(),
      py::arg("dtype") = py::none());

  // ---- moving elements ----
  def_op(
      m, cls, "tril", [](const V& x, int64_t k) { return ad::tril(x, k); },
      "Zero above diagonal k of the last two dims.", py::arg("diagonal") = 0);
  def_op(
      m, cls, "triu", [](const V& x, int64_t k) { return ad::triu(x, k); },
      "Zero below diagonal k of the last two dims.", py::arg("diagonal") = 0);
  def_op(
      m, cls, "roll",
      [](const V& x, py::handle shifts, py::handle dims) {
        return ad::roll(x, ints_from_object(shifts, "roll", "shifts"),
                        dims.is_none() ? std::vector<int64_t>{}
                                       : ints_from_object(dims, "roll", "dims"));
      },
      "Elements shifted along dims, wrapping around (dims None: x rolled flat).", py::arg("shifts"),
      py::arg("dims") = py::none());
  m.def(
      "tile",
      [](const V& x, py::handle dims) {
        return ad::tile(x, ints_from_object(dims, "tile", "dims"));
      },
      py::arg("input"), py::arg("dims"),
      "x repeated dims[i] times along each dim (fewer dims than x has: leading 1s).");
  cls.def(
      "tile",
      [](const V& x, const py::args& dims) { return ad::tile(x, sizes_from_args(dims, "tile")); },
      "x repeated dims[i] times along each dim (fewer dims than x has: leading 1s).");
  cls.def(
      "repeat",
      [](const V& x, const py::args& sizes) {
        return ad::repeat(x, sizes_from_args(sizes, "repeat"));
      },
      "x repeated sizes[i] times along each dim (more sizes than x has dims: new leading dims).");
  def_op(m, cls, "masked_select", &masked_select,
         "The elements of x where mask (broadcast with x) is true, as a 1-D tensor.",
         py::arg("mask"));
  def_op(m, cls, "scatter", &scatter,
         "A copy of x with src (a tensor, or a number) written at index along dim; reduce='add' "
         "adds instead.",
         py::arg("dim"), py::arg("index"), py::arg("src") = py::none(), py::kw_only(),
         py::arg("value") = py::none(), py::arg("reduce") = py::none());
  cls.def(
      "scatter_",
      [](py::object self, int64_t d, const V& index, py::handle src, py::handle value,
         const std::optional<std::string>& reduce) {
        return in_place(self, src, "scatter_",
                        [&](const V& x) { return scatter(x, d, index, src, value, reduce); });
      },
      "scatter in place; returns self.", py::arg("dim"), py::arg("index"),
      py::arg("src") = py::none(), py::kw_only(), py::arg("value") = py::none(),
      py::arg("reduce") = py::none());
  cls.def(
      "masked_fill_",
      [](py::object self, const V& mask, double value) {
        return in_place(self, py::none(), "masked_fill_",
                        [&](const V& x) { return ad::masked_fill(x, mask, value); });
      },
      "masked_fill in place; returns self.", py::arg("mask"), py::arg("value"));

  // ---- counting (no gradient) ----
  def_op(
      m, cls, "bincount",
      [](const V& x, std::optional<V> w, int64_t minlength) {
        return V(bincount(x, w, minlength));
      },
      "How often each value 0..max occurs in the 1-D int tensor (or the sum of its weights).",
      py::arg("weights") = py::none(), py::arg("minlength") = 0);
  def_op(m, cls, "unique", &unique,
         "The sorted distinct elements; with return_inverse/return_counts also where each "
         "element went and how often each value occurs. Only dim=None.",
         py::arg("sorted") = true, py::arg("return_inverse") = false,
         py::arg("return_counts") = false, py::arg("dim") = py::none());

  // ---- resizing ----
  m.def("interpolate", &interpolate, py::arg("input"), py::arg("size") = py::none(),
        py::arg("scale_factor") = py::none(), py::arg("mode") = "nearest",
        py::arg("align_corners") = py::none(),
        "Resizes [N, C, H, W] to size or by scale_factor; mode 'nearest' or 'bilinear'.");
}

}  // namespace ember::python
