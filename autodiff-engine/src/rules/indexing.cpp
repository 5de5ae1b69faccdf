// indexing.cpp — padding, and ops that read or write at positions an index tensor gives:
// index_select / index_add, gather / scatter_add, embedding / embedding_backward, one_hot (as
// core-runtime's ember/ops/indexing.h), and index_put (ember/ops/masking.h), what Python's
// x[idx] = v becomes; scatter (a tensor or a value written at index) is an index_put. Each pair is
// a linear map and its adjoint, so each one's gradient is the other. Index tensors (int64, or int32
// as core-runtime accepts) get no gradient: their rules return an undefined Val for them.
#include "ember/ops/indexing.h"

#include <algorithm>
#include <utility>

#include "ember/autodiff/ops.h"
#include "ember/ops/creation.h"
#include "ember/ops/masking.h"
#include "ember/ops/reduction.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

// ---- padding ----

// Per dim of an unpadded shape: the pads before and after it (0 where `pads` does not reach).
struct Pads {
  std::vector<int64_t> left, right;
};

Pads split_pads(const char* op, const Shape& shape, const std::vector<int64_t>& pads) {
  const size_t n = shape.size();
  if (pads.size() % 2 != 0 || pads.size() > 2 * n)
    throw ValueError(op, "pads " + shape_str(pads) + " for shape " + shape_str(shape) +
                             "; expected an even number of values, at most " +
                             std::to_string(int64_t(2 * n)) +
                             " ({left, right} per dim, last dim first)");
  Pads p{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0)};
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    p.left[n - 1 - i] = pads[2 * i];
    p.right[n - 1 - i] = pads[2 * i + 1];
  }
  return p;
}

// Whether pads (l, r) fit a dim of size n in `mode` (constant: any that leave a size >= 0).
bool pads_fit(const std::string& mode, int64_t l, int64_t r, int64_t n) {
  if (mode == "constant") return n + l + r >= 0;
  if (l < 0 || r < 0) return false;
  if (l + r == 0) return true;
  if (mode == "reflect") return l < n && r < n;
  if (mode == "replicate") return n > 0;
  return l <= n && r <= n;  // circular: wraps around at most once, as PyTorch
}

// The padded shape of `shape`; ValueError for an unknown mode or pads that do not fit.
Shape padded_shape(const char* op, const Shape& shape, const std::vector<int64_t>& pads,
                   const std::string& mode) {
  if (mode != "constant" && mode != "reflect" && mode != "replicate" && mode != "circular")
    throw ValueError(op, "unknown mode '" + mode +
                             "'; expected constant, reflect, replicate or circular");
  const Pads p = split_pads(op, shape, pads);
  Shape out = shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!pads_fit(mode, p.left[d], p.right[d], shape[d]))
      throw ValueError(op, mode + " pads (" + std::to_string(p.left[d]) + ", " +
                               std::to_string(p.right[d]) + ") do not fit dim " +
                               std::to_string(int64_t(d)) + " of " + shape_str(shape) +
                               "; constant pads may crop to size 0, reflect pads must be >= 0 "
                               "and < the size, replicate pads >= 0 on a non-empty dim, "
                               "circular pads >= 0 and <= the size");
    out[d] += p.left[d] + p.right[d];
  }
  return out;
}

// The input position each output position copies along a dim of size n padded circularly.
Tensor circular_positions(int64_t left, int64_t right, int64_t n, Device device) {
  std::vector<int64_t> positions(size_t(n + left + right));
  for (size_t o = 0; o < positions.size(); ++o) positions[o] = ((int64_t(o) - left) % n + n) % n;
  return Tensor::from_vector(positions, {int64_t(positions.size())}, device);
}

// Core-runtime pads constant, reflect and replicate; circular is an index_select per padded
// dim here, and its backward the adjoint index_add (summing every copy's gradient).
Tensor circular_pad(const Tensor& x, const std::vector<int64_t>& pads) {
  const Pads p = split_pads("pad", x.shape(), pads);
  Tensor out = x;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t l = p.left[size_t(d)], r = p.right[size_t(d)];
    if (l != 0 || r != 0)
      out = ember::index_select(out, d, circular_positions(l, r, x.size(d), x.device()));
  }
  return out.shares_storage(x) ? x.clone() : out;  // no dim padded: a copy all the same
}

Tensor circular_pad_backward(const Tensor& grad, const Shape& input_shape,
                             const std::vector<int64_t>& pads) {
  const Pads p = split_pads("pad_backward", input_shape, pads);
  Tensor out = grad;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    const int64_t l = p.left[size_t(d)], r = p.right[size_t(d)], n = input_shape[size_t(d)];
    if (l == 0 && r == 0) continue;
    Shape shape = out.shape();
    shape[size_t(d)] = n;
    out = ember::index_add(ember::zeros(shape, grad.dtype(), grad.device()), d,
                           circular_positions(l, r, n, grad.device()), out);
  }
  return out.shares_storage(grad) ? grad.clone() : out;
}

Types pad_infer(const Types& in, const Attrs& a) {
  infer::arity("pad", in, 1);
  return {TensorType{padded_shape("pad", in[0].shape, a.ints("pads"), a.s("mode")), in[0].dtype,
                     in[0].device}};
}

Tensor pad_run(const Tensor& x, const Attrs& a) {
  if (a.s("mode") == "circular") return circular_pad(x, a.ints("pads"));
  return ember::pad(x, a.ints("pads"), a.s("mode"), a.f("value"));
}

Types pad_backward_infer(const Types& in, const Attrs& a) {
  infer::arity("pad_backward", in, 1);
  const Shape& input_shape = a.ints("input_shape");
  const Shape want = padded_shape("pad_backward", input_shape, a.ints("pads"), a.s("mode"));
  if (in[0].shape != want)
    throw ShapeError("pad_backward", "grad is " + in[0].str() + "; expected the padded shape " +
                                         shape_str(want) + " of input shape " +
                                         shape_str(input_shape));
  return {TensorType{input_shape, in[0].dtype, in[0].device}};
}

Tensor pad_backward_run(const Tensor& grad, const Attrs& a) {
  if (a.s("mode") == "circular")
    return circular_pad_backward(grad, a.ints("input_shape"), a.ints("pads"));
  return ember::pad_backward(grad, a.ints("input_shape"), a.ints("pads"), a.s("mode"));
}

// ---- indexing ----

// "x is f64[2,3], index is i64[4]": the operands of an error message.
std::string operands(const std::vector<std::pair<const char*, TensorType>>& named) {
  std::string out;
  for (const auto& [name, type] : named)
    out += (out.empty() ? "" : ", ") + std::string(name) + " is " + type.str();
  return out;
}

void check_index_dtype(const char* op, const char* name, const TensorType& index) {
  if (index.dtype != DType::Int64 && index.dtype != DType::Int32)
    throw DTypeError(op, std::string(name) + " is " + index.str() +
                             "; it must hold integer indices (int64 or int32): cast it with "
                             "to(index, DType::Int64)");
}

void check_has_dims(const char* op, const TensorType& x) {
  if (x.shape.empty())
    throw ShapeError(op, "x is " + x.str() + "; expected at least 1 dim, unsqueeze(x, 0) first");
}

void check_same_dtype(const char* op, const TensorType& x, const TensorType& src) {
  if (src.dtype != x.dtype)
    throw DTypeError(op, operands({{"x", x}, {"src", src}}) + "; src must have x's dtype");
}

// index_select / index_add: x [.., n, ..] and a 1-D (or 0-d) index [k]; returns the wrapped dim.
int64_t check_index_along(const char* op, const Types& in, int64_t dim) {
  infer::same_device(op, in);
  check_has_dims(op, in[0]);
  check_index_dtype(op, "index", in[1]);
  if (in[1].dim() > 1)
    throw ShapeError(op, operands({{"x", in[0]}, {"index", in[1]}}) +
                             "; index must be 1-D, flatten it first");
  return wrap_dim(dim, in[0].dim(), op, "x is " + in[0].str());
}

// x's shape with index's length at dim d: index_select's result, index_add's src.
Shape selected_shape(const Types& in, int64_t d) {
  Shape s = in[0].shape;
  s[size_t(d)] = in[1].numel();
  return s;
}

Types index_select_infer(const Types& in, const Attrs& a) {
  infer::arity("index_select", in, 2);
  const int64_t d = check_index_along("index_select", in, a.i("dim"));
  return {TensorType{selected_shape(in, d), in[0].dtype, in[0].device}};
}

Types index_add_infer(const Types& in, const Attrs& a) {
  infer::arity("index_add", in, 3);
  const int64_t d = check_index_along("index_add", in, a.i("dim"));
  check_same_dtype("index_add", in[0], in[2]);
  const Shape want = selected_shape(in, d);
  if (in[2].shape != want)
    throw ShapeError("index_add", operands({{"x", in[0]}, {"index", in[1]}, {"src", in[2]}}) +
                                      "; expected src of shape " + shape_str(want) +
                                      " (x's shape with index's length at dim " +
                                      std::to_string(d) + ")");
  return {in[0]};
}

// gather / scatter_add: index has x's number of dims and, in every dim, at most src's size
// (scatter_add) and, in every dim but d, at most x's. Returns the wrapped dim.
int64_t check_index_fits(const char* op, const Types& in, int64_t dim) {
  infer::same_device(op, in);
  check_has_dims(op, in[0]);
  check_index_dtype(op, "index", in[1]);
  const int64_t d = wrap_dim(dim, in[0].dim(), op, "x is " + in[0].str());
  const TensorType *x = &in[0], *index = &in[1], *src = in.size() > 2 ? &in[2] : nullptr;
  bool ok = index->dim() == x->dim() && (!src || src->dim() == x->dim());
  for (size_t i = 0; ok && i < x->shape.size(); ++i)
    ok = (int64_t(i) == d || index->shape[i] <= x->shape[i]) &&
         (!src || index->shape[i] <= src->shape[i]);
  if (ok) return d;
  std::vector<std::pair<const char*, TensorType>> named{{"x", *x}, {"index", *index}};
  if (src) named.emplace_back("src", *src);
  throw ShapeError(op, operands(named) + "; index must have x's number of dims, with " +
                           (src ? "index.size(d) <= src.size(d) for every d and " : "") +
                           "index.size(d) <= x.size(d) for every d but dim " + std::to_string(d));
}

Types gather_infer(const Types& in, const Attrs& a) {
  infer::arity("gather", in, 2);
  check_index_fits("gather", in, a.i("dim"));
  return {TensorType{in[1].shape, in[0].dtype, in[0].device}};
}

Types scatter_add_infer(const Types& in, const Attrs& a) {
  infer::arity("scatter_add", in, 3);
  check_same_dtype("scatter_add", in[0], in[2]);
  check_index_fits("scatter_add", in, a.i("dim"));
  return {in[0]};
}

// src [*] gets gather(dy) [index's shape] where index reaches and 0 beyond: the zeros are a
// right pad of every dim where src is larger than index.
Val scatter_src_grad(Val dy, int64_t dim, Val index, const Shape& src_shape) {
  Val g = gather(dy, dim, index);
  if (g.shape() == src_shape) return g;
  std::vector<int64_t> pads;
  for (size_t i = src_shape.size(); i-- > 0;)
    pads.insert(pads.end(), {0, src_shape[i] - g.shape()[i]});
  return pad(g, pads);
}

// scatter: x [*], index [*'] (x's number of dims, index.size(d) <= x.size(d) but along dim),
// and src [*''] (every dim >= index's; absent for scatter_value) -> x's type. Errors name
// "scatter", the function both ops come from.
Types scatter_infer(const Types& in, const Attrs& a, bool has_src) {
  const char* op = "scatter";
  infer::arity(op, in, has_src ? 3 : 2);
  if (has_src) check_same_dtype(op, in[0], in[2]);
  check_index_fits(op, in, a.i("dim"));
  return {in[0]};
}

// Core-runtime has scatter_add but no plain scatter: x with values written at index, as
// index_put at one coordinate tensor per dim of x (index itself along dim, the position along
// every other dim). values: index's shape, or 0-d. Like index_put on the CPU, of repeated
// positions the last in row-major order wins. Checking the index's range reads its extremes,
// which synchronises on CUDA.
Tensor scatter_run(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                   const Tensor& values) {
  check_index_fits(op, {type_of(x), type_of(index)}, dim);
  const int64_t d = wrap_dim(dim, x.dim(), op);
  if (index.numel() == 0) return x.clone();
  const int64_t lo = ember::amin(index).to(DType::Int64).item<int64_t>();
  const int64_t hi = ember::amax(index).to(DType::Int64).item<int64_t>();
  if (lo < 0 || hi >= x.size(d))
    throw IndexError(op, "index " + std::to_string(lo < 0 ? lo : hi) + " is out of range for dim " +
                             std::to_string(d) + " of size " + std::to_string(x.size(d)) +
                             " (x is " + type_of(x).str() + "); expected 0 <= index < " +
                             std::to_string(x.size(d)));
  IndexList coords;
  for (int64_t k = 0; k < x.dim(); ++k) {
    if (k == d) {
      coords.push_back(index.to(DType::Int64));
      continue;
    }
    Shape along(size_t(x.dim()), 1);
    along[size_t(k)] = index.size(k);
    coords.push_back(ember::arange(double(index.size(k)), DType::Int64, x.device()).view(along));
  }
  return ember::index_put(x, coords, values);
}

Types types_of(const Tensors& in) {
  Types out;
  for (const Tensor& t : in) out.push_back(type_of(t));
  return out;
}

// src cut to index's shape: the part of src that scatter reads.
Tensor scatter_source(const Tensor& src, const Tensor& index) {
  Tensor out = src;
  for (int64_t k = 0; k < src.dim(); ++k) out = out.slice(k, 0, index.size(k));
  return out;
}

// y = x with src (or value) at index;  dx = dy with 0 where scatter wrote, dsrc = gather(dy)
// where index reaches (every copy of a repeated position gets it, as in PyTorch).
Grads scatter_grad(const GradContext& c) {
  const int64_t d = c.attrs.i("dim");
  Grads grads(c.inputs.size());
  if (c.needs_grad[0]) grads[0] = scatter(c.dy(), d, c.x(1), 0.0);
  if (c.inputs.size() == 3 && c.needs_grad[2])
    grads[2] = scatter_src_grad(c.dy(), d, c.x(1), c.x(2).shape());
  return grads;
}

Types embedding_infer(const Types& in, const Attrs&) {
  infer::arity("embedding", in, 2);
  infer::same_device("embedding", in);
  if (in[0].dim() != 2)
    throw ShapeError("embedding", operands({{"weight", in[0]}, {"indices", in[1]}}) +
                                      "; weight must be 2-D [num_embeddings, embedding_dim]");
  check_index_dtype("embedding", "indices", in[1]);
  Shape shape = in[1].shape;
  shape.push_back(in[0].shape[1]);
  return {TensorType{shape, in[0].dtype, in[0].device}};
}

Types embedding_backward_infer(const Types& in, const Attrs& a) {
  const char* op = "embedding_backward";
  infer::arity(op, in, 2);
  infer::same_device(op, in);
  check_index_dtype(op, "indices", in[1]);
  const Shape &grad = in[0].shape, &indices = in[1].shape;
  if (grad.size() != indices.size() + 1 ||
      !std::equal(indices.begin(), indices.end(), grad.begin()))
    throw ShapeError(op, operands({{"grad", in[0]}, {"indices", in[1]}}) +
                             "; grad must have indices' shape plus a last dim of size D");
  const int64_t num_weights = a.i("num_weights");
  if (num_weights < 0)
    throw ValueError(op, "num_weights must be >= 0, got " + std::to_string(num_weights));
  return {TensorType{{num_weights, grad.back()}, in[0].dtype, in[0].device}};
}

Types one_hot_infer(const Types& in, const Attrs& a) {
  infer::arity("one_hot", in, 1);
  check_index_dtype("one_hot", "indices", in[0]);
  const int64_t classes = a.i("num_classes");
  if (classes == -1)
    throw NotSupportedError("one_hot", "indices is " + in[0].str() +
                                           "; a graph needs its output's size before any data "
                                           "exists, so num_classes cannot be inferred: pass it");
  if (classes < 0)
    throw ValueError("one_hot",
                     "num_classes must be >= 0 or -1 (infer), got " + std::to_string(classes));
  Shape shape = in[0].shape;
  shape.push_back(classes);
  return {TensorType{shape, DType::Int64, in[0].device}};
}

// index_put: x [*], values, then k index tensors i_0..i_{k-1} (one per leading dim of x) that
// broadcast together to B -> x's type. values has x's dtype and broadcasts to the indexed shape
// B + x.shape[k:].
Types index_put_infer(const Types& in, const Attrs& a) {
  const char* op = "index_put";
  if (in.size() < 2)
    throw ValueError(op, "expected x, values and one index tensor per indexed dim; got " +
                             std::to_string(in.size()) + " inputs");
  infer::same_device(op, in);
  const TensorType &x = in[0], &values = in[1];
  const int64_t k = int64_t(in.size()) - 2;
  if (k > x.dim())
    throw IndexError(op, "x is " + x.str() + "; " + std::to_string(k) + " index tensors for its " +
                             std::to_string(x.dim()) + " dims: give at most one per dim");
  Shape batch;
  std::string indices;
  for (int64_t j = 0; j < k; ++j) {
    const TensorType& index = in[size_t(2 + j)];
    const std::string name = "indices[" + std::to_string(j) + "]";
    check_index_dtype(op, name.c_str(), index);
    indices += ", " + name + " is " + index.str();
    try {
      batch = broadcast_shapes(batch, index.shape, op);
    } catch (const ShapeError&) {
      throw ShapeError(op,
                       "x is " + x.str() + indices + "; the index tensors must broadcast together");
    }
  }
  if (values.dtype != x.dtype)
    throw DTypeError(op, operands({{"x", x}, {"values", values}}) +
                             "; values must have x's dtype: convert it with to(values, dtype)");
  if (a.b("accumulate") && x.dtype == DType::Bool)
    throw DTypeError(op, "x is " + x.str() + "; accumulate adds, which bool cannot");
  Shape indexed = batch;
  indexed.insert(indexed.end(), x.shape.begin() + k, x.shape.end());
  infer::broadcasts_to(op, "values", values, indexed);
  return {x};
}

// dy [x's shape] read at the positions the index tensors give: [B, x.shape[k:]...]. The
// positions, flattened over the k indexed dims (negative ones counted from the end), pick rows
// of dy viewed as [n_0 * ... * n_{k-1}, x.shape[k:]...].
Val indexed_rows(const Val& dy, const std::vector<Val>& indices) {
  const size_t k = indices.size();
  if (k == 0) return dy;
  Val flat;  // [B]
  int64_t span = 1;
  for (size_t d = k; d-- > 0;) {
    const Val& index = indices[d];
    Val term = where(lt(index, 0.0), index + double(dy.size(int64_t(d))), index);
    if (span != 1) term = term * double(span);
    flat = flat.defined() ? term + flat : term;
    span *= dy.size(int64_t(d));
  }
  const Shape rest(dy.shape().begin() + int64_t(k), dy.shape().end());
  Shape merged = {span}, out = flat.shape();
  merged.insert(merged.end(), rest.begin(), rest.end());
  out.insert(out.end(), rest.begin(), rest.end());
  Val rows = index_select(reshape(dy, merged), 0, reshape(flat, {shape_numel(flat.shape())}));
  return reshape(rows, out);
}

// y = x with y[i...] = v (accumulate: y[i...] += v);  dx = dy with the written positions set to
// 0 (dy itself when accumulating), dv = dy[i...] (the driver sums it to v's shape). As in
// PyTorch, a position written twice without accumulate passes its gradient to both values.
Grads index_put_grad(const GradContext& c) {
  const std::vector<Val> indices(c.inputs.begin() + 2, c.inputs.end());
  Val dx, dv;
  if (c.needs_grad[0]) {
    const Tensor zero = ember::zeros({}, c.dy().dtype(), c.dy().device());
    dx = c.attrs.b("accumulate") ? c.dy()
                                 : index_put(c.dy(), indices, c.graph.constant(zero), false);
  }
  if (c.needs_grad[1]) dv = indexed_rows(c.dy(), indices);
  Grads grads(c.inputs.size());
  grads[0] = dx;
  grads[1] = dv;
  return grads;
}

}  // namespace

std::vector<OpDef> indexing_ops() {
  return {
      // x [*] -> [* + left + right] along the padded dims;  dx = pad_backward(dy, mode)
      {"pad", pad_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors { return {pad_run(in[0], a)}; },
       [](const GradContext& c) -> Grads {
         return {pad_backward(c.dy(), c.x().shape(), c.attrs.ints("pads"), c.attrs.s("mode"))};
       }},
      // g [padded] -> input_shape, pad's adjoint (linear in g);  dg = pad(gg, mode, value 0),
      // the adjoint of the adjoint, for every mode
      {"pad_backward", pad_backward_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors { return {pad_backward_run(in[0], a)}; },
       [](const GradContext& c) -> Grads {
         return {pad(c.dy(), c.attrs.ints("pads"), c.attrs.s("mode"), 0.0)};
       }},
      // x [.., n, ..], index [k] -> [.., k, ..];  dx = index_add(zeros like x, dim, index, dy)
      {"index_select", index_select_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::index_select(in[0], a.i("dim"), in[1])};
       },
       [](const GradContext& c) -> Grads {
         const int64_t d = c.attrs.i("dim");
         return {index_add(zeros_like(c.x()), d, c.x(1), c.dy()), Val()};
       }},
      // x [.., n, ..], index [k], src [.., k, ..] -> x with src's slice j added at index[j];
      // dx = dy, dsrc = index_select(dy, dim, index)
      {"index_add", index_add_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::index_add(in[0], a.i("dim"), in[1], in[2])};
       },
       [](const GradContext& c) -> Grads {
         const int64_t d = c.attrs.i("dim");
         return {c.dy(), Val(), c.needs_grad[2] ? index_select(c.dy(), d, c.x(1)) : Val()};
       }},
      // x [*], index [*'] (x's number of dims) -> [*'], x at index along dim;
      // dx = scatter_add(zeros like x, dim, index, dy)
      {"gather", gather_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::gather(in[0], a.i("dim"), in[1])};
       },
       [](const GradContext& c) -> Grads {
         return {scatter_add(zeros_like(c.x()), c.attrs.i("dim"), c.x(1), c.dy()), Val()};
       }},
      // x [*], index [*'], src [*''] -> x with src added at index along dim;
      // dx = dy, dsrc = gather(dy, dim, index) (zero where index does not reach)
      {"scatter_add", scatter_add_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::scatter_add(in[0], a.i("dim"), in[1], in[2])};
       },
       [](const GradContext& c) -> Grads {
         const int64_t d = c.attrs.i("dim");
         return {c.dy(), Val(),
                 c.needs_grad[2] ? scatter_src_grad(c.dy(), d, c.x(1), c.x(2).shape()) : Val()};
       }},
      // x [*], index [*'], src [*''] -> x with src written at index along dim;
      // dx = scatter(dy, index, 0), dsrc = gather(dy, dim, index) (zero where index does not
      // reach)
      {"scatter", [](const Types& in, const Attrs& a) { return scatter_infer(in, a, true); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         scatter_infer(types_of(in), a, true);  // eager mode runs no shape rule
         return {scatter_run("scatter", in[0], a.i("dim"), in[1], scatter_source(in[2], in[1]))};
       },
       scatter_grad},
      // x [*], index [*'] -> x with value at index along dim;  dx = scatter(dy, index, 0)
      {"scatter_value", [](const Types& in, const Attrs& a) { return scatter_infer(in, a, false); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         scatter_infer(types_of(in), a, false);
         const Tensor value = ember::scalar_tensor(a.f("value"), in[0].dtype(), in[0].device());
         return {scatter_run("scatter", in[0], a.i("dim"), in[1], value)};
       },
       scatter_grad},
      // weight [V, D], indices [*] -> [*, D];  dweight = embedding_backward(dy, indices, V)
      {"embedding", embedding_infer,
       [](const Tensors& in, const Attrs&) -> Tensors { return {ember::embedding(in[0], in[1])}; },
       [](const GradContext& c) -> Grads {
         return {embedding_backward(c.dy(), c.x(1), c.x(0).size(0)), Val()};
       }},
      // g [*, D], indices [*] -> [V, D], row v the sum of g's rows indexed v;
      // dg = embedding(gg, indices)
      {"embedding_backward", embedding_backward_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::embedding_backward(in[0], in[1], a.i("num_weights"))};
       },
       [](const GradContext& c) -> Grads {
         return {embedding(c.dy(), c.x(1)), Val()};
       }},
      // x [*], values, indices i_0..i_{k-1} -> x with x[i_0, ..., i_{k-1}] = values (or +=)
      {"index_put", index_put_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         const IndexList indices(in.begin() + 2, in.end());
         return {ember::index_put(in[0], indices, in[1], a.b("accumulate"))};
       },
       index_put_grad},
      // indices [*] -> int64 [*, num_classes]; not differentiable
      {"one_hot", one_hot_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::one_hot(in[0], a.i("num_classes"))};
       }},
  };
}

}  // namespace ember::autodiff
