// movement.cpp — views and data movement: reshape, transpose, permute, slice, select, squeeze,
// unsqueeze, flatten, contiguous, flip, cat, stack (padding and indexing: indexing.cpp). Every op
// here is linear, so each gradient rule is the op's adjoint, and the adjoint's own rule is the op
// again.
#include <algorithm>
#include <utility>

#include "ember/autodiff/ops.h"
#include "ember/ops/creation.h"
#include "ember/ops/indexing.h"  // index_select, for flip
#include "ember/ops/shape_ops.h"
#include "families.h"
#include "infer.h"
#include "join_gradients.h"

namespace ember::autodiff {

namespace {

std::string operand(const TensorType& t) { return "x is " + t.str(); }

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

// `dims` wrapped into [0, ndim) (a 0-d tensor accepts 0 and -1); a repeated dim is a ValueError.
std::vector<int64_t> distinct_dims(const char* op, const std::vector<int64_t>& dims,
                                   const TensorType& x) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim_or_scalar(d, x.dim(), op, operand(x));
    if (std::find(out.begin(), out.end(), w) != out.end())
      throw ValueError(op, "dim " + std::to_string(w) + " repeated in " + shape_str(dims) +
                               " for " + operand(x) + "; each dim may appear once");
    out.push_back(w);
  }
  return out;
}

Types transpose_infer(const Types& in, const Attrs& a) {
  infer::arity("transpose", in, 1);
  TensorType t = in[0];
  const int64_t d0 = wrap_dim_or_scalar(a.i("dim0"), t.dim(), "transpose", operand(t));
  const int64_t d1 = wrap_dim_or_scalar(a.i("dim1"), t.dim(), "transpose", operand(t));
  if (t.dim() > 0) std::swap(t.shape[size_t(d0)], t.shape[size_t(d1)]);
  return {t};
}

Types permute_infer(const Types& in, const Attrs& a) {
  infer::arity("permute", in, 1);
  const std::vector<int64_t>& dims = a.ints("dims");
  if (int64_t(dims.size()) != in[0].dim())
    throw ShapeError("permute", "got dims " + shape_str(dims) + " for " + operand(in[0]) +
                                    "; give a permutation of all " + std::to_string(in[0].dim()) +
                                    " dims");
  TensorType t = in[0];
  for (size_t i = 0; i < dims.size(); ++i)
    t.shape[i] = in[0].shape[size_t(wrap_dim(dims[i], in[0].dim(), "permute"))];
  distinct_dims("permute", dims, in[0]);
  return {t};
}

// dims' inverse permutation: permute(permute(x, dims), inverse) == x.
std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& dims) {
  std::vector<int64_t> inverse(dims.size());
  const int64_t n = int64_t(dims.size());
  for (int64_t i = 0; i < n; ++i) inverse[size_t((dims[size_t(i)] + n) % n)] = i;
  return inverse;
}

// Python's x[start:stop:step] on a dim of size n, clamped: the first index and the length.
std::pair<int64_t, int64_t> slice_range(int64_t n, int64_t start, int64_t stop, int64_t step) {
  auto clamp_index = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  const int64_t first = clamp_index(start), last = stop == INT64_MAX ? n : clamp_index(stop);
  return {first, last > first ? (last - first - 1) / step + 1 : 0};
}

// The shape of slice(x of `shape`, dim, start, stop, step) for slice and slice_backward.
Shape sliced_shape(const char* op, const Shape& shape, const Attrs& a) {
  const int64_t d = wrap_dim(a.i("dim"), int64_t(shape.size()), op, "x is " + shape_str(shape));
  const int64_t step = a.i("step");
  if (step <= 0)
    throw ValueError(op, "step " + std::to_string(step) +
                             " must be positive; to reverse a dim use flip");
  Shape out = shape;
  out[size_t(d)] = slice_range(shape[size_t(d)], a.i("start"), a.i("stop"), step).second;
  return out;
}

Types slice_infer(const Types& in, const Attrs& a) {
  infer::arity("slice", in, 1);
  return {TensorType{sliced_shape("slice", in[0].shape, a), in[0].dtype, in[0].device}};
}

Types slice_backward_infer(const Types& in, const Attrs& a) {
  infer::arity("slice_backward", in, 1);
  const Shape& input_shape = a.ints("input_shape");
  const Shape want = sliced_shape("slice_backward", input_shape, a);
  if (in[0].shape != want)
    throw ShapeError("slice_backward", "grad is " + in[0].str() + "; expected the slice's shape " +
                                           shape_str(want) + " of input shape " +
                                           shape_str(input_shape));
  return {TensorType{input_shape, in[0].dtype, in[0].device}};
}

Tensor slice_backward_run(const Tensor& grad, const Attrs& a) {
  Tensor out = ember::zeros(a.ints("input_shape"), grad.dtype(), grad.device());
  out.slice(a.i("dim"), a.i("start"), a.i("stop"), a.i("step")).copy_(grad);
  return out;
}

Types select_infer(const Types& in, const Attrs& a) {
  infer::arity("select", in, 1);
  TensorType t = in[0];
  const int64_t d = wrap_dim(a.i("dim"), t.dim(), "select", operand(t));
  const int64_t n = t.shape[size_t(d)], index = a.i("index");
  if (index < -n || index >= n)
    throw IndexError("select", "index " + std::to_string(index) + " is out of range for dim " +
                                   std::to_string(d) + " of " + operand(t) + "; expected [" +
                                   std::to_string(-n) + ", " + std::to_string(n - 1) + "]");
  t.shape.erase(t.shape.begin() + d);
  return {t};
}

// x's dims that squeeze removes: the listed ones of size 1, or every size-1 dim when none is
// listed.
std::vector<int64_t> squeezed_dims(const TensorType& x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t d = 0; d < x.dim(); ++d)
      if (x.shape[size_t(d)] == 1) out.push_back(d);
    return out;
  }
  for (int64_t d : distinct_dims("squeeze", dims, x))
    if (x.dim() > 0 && x.shape[size_t(d)] == 1) out.push_back(d);
  return out;
}

Types squeeze_infer(const Types& in, const Attrs& a) {
  infer::arity("squeeze", in, 1);
  TensorType t = in[0];
  std::vector<int64_t> dims = squeezed_dims(t, a.ints("dims"));
  std::sort(dims.rbegin(), dims.rend());
  for (int64_t d : dims) t.shape.erase(t.shape.begin() + d);
  return {t};
}

Tensor squeeze_run(const Tensor& x, const Attrs& a) {
  std::vector<int64_t> dims = squeezed_dims(type_of(x), a.ints("dims"));
  std::sort(dims.rbegin(), dims.rend());  // the highest first, so lower dims keep their place
  Tensor out = x;
  for (int64_t d : dims) out = out.squeeze(d);
  return out;
}

Types unsqueeze_infer(const Types& in, const Attrs& a) {
  infer::arity("unsqueeze", in, 1);
  TensorType t = in[0];
  const int64_t d = wrap_dim(a.i("dim"), t.dim() + 1, "unsqueeze", operand(t));
  t.shape.insert(t.shape.begin() + d, 1);
  return {t};
}

Types flatten_infer(const Types& in, const Attrs& a) {
  infer::arity("flatten", in, 1);
  TensorType t = in[0];
  const int64_t s = wrap_dim_or_scalar(a.i("start_dim"), t.dim(), "flatten", operand(t));
  const int64_t e = wrap_dim_or_scalar(a.i("end_dim"), t.dim(), "flatten", operand(t));
  if (t.dim() == 0) return {TensorType{{1}, t.dtype, t.device}};
  if (s > e)
    throw ValueError("flatten", "start_dim " + std::to_string(a.i("start_dim")) +
                                    " comes after end_dim " + std::to_string(a.i("end_dim")) +
                                    " for " + operand(t));
  Shape shape(t.shape.begin(), t.shape.begin() + s);
  int64_t merged = 1;
  for (int64_t i = s; i <= e; ++i)
    merged = checked_size_mul(merged, t.shape[size_t(i)], "flatten", "the merged size");
  shape.push_back(merged);
  shape.insert(shape.end(), t.shape.begin() + e + 1, t.shape.end());
  t.shape = shape;
  return {t};
}

Types flip_infer(const Types& in, const Attrs& a) {
  infer::arity("flip", in, 1);
  distinct_dims("flip", a.ints("dims"), in[0]);
  return {in[0]};
}

// n-1, ..., 1, 0 as an int64 index on `device`.
Tensor reversed_positions(int64_t n, Device device) {
  std::vector<int64_t> positions(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) positions[size_t(i)] = n - 1 - i;
  return Tensor::from_vector(positions, {n}, device);
}

// Core-runtime has no flip (a view would need negative strides): one index_select per dim with
// the positions reversed.
Tensor flip_run(const Tensor& x, const Attrs& a) {
  const std::vector<int64_t> dims = distinct_dims("flip", a.ints("dims"), type_of(x));
  if (dims.empty() || x.dim() == 0) return x.clone();  // nothing to reverse, still a copy
  Tensor out = x;
  for (int64_t d : dims)
    out = ember::index_select(out, d, reversed_positions(x.size(d), x.device()));
  return out;
}

// cat and stack: every input on in[0]'s device and, in every dim but `skip` (-1: none), of its
// size. Returns the inputs' promoted dtype (mixed dtypes promote, as in core-runtime).
DType check_joinable(const char* op, const Types& in, int64_t skip) {
  DType dtype = in[0].dtype;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string which = "input " + std::to_string(int64_t(i)) + " is " + in[i].str() +
                              ", input 0 is " + in[0].str();
    if (in[i].device != in[0].device)
      throw DeviceError(op, which + "; move all inputs to one device first");
    dtype = promote_types(dtype, in[i].dtype);
    bool same = in[i].dim() == in[0].dim();
    for (int64_t k = 0; same && k < in[0].dim(); ++k)
      same = k == skip || in[i].shape[size_t(k)] == in[0].shape[size_t(k)];
    if (!same)
      throw ShapeError(op, which + (skip < 0 ? "; all inputs must have one shape"
                                             : "; every dim but dim " + std::to_string(skip) +
                                                   " must match"));
  }
  return dtype;
}

// A piece of a joined gradient in its input's dtype (an input of a mixed cat was promoted).
Val in_dtype_of(const Val& g, const Val& x) {
  return g.dtype() == x.dtype() ? g : to(g, x.dtype());
}

void check_nonempty(const char* op, const Types& in) {
  if (in.empty()) throw ValueError(op, "takes at least one input, got none");
}

Types cat_infer(const Types& in, const Attrs& a) {
  check_nonempty("cat", in);
  const int64_t d = wrap_dim(a.i("dim"), in[0].dim(), "cat", "input 0 is " + in[0].str());
  TensorType t = in[0];
  t.dtype = check_joinable("cat", in, d);
  t.shape[size_t(d)] = 0;
  for (const TensorType& x : in) t.shape[size_t(d)] += x.shape[size_t(d)];
  return {t};
}

Grads cat_grad(const GradContext& c) {
  const int64_t d = wrap_dim(c.attrs.i("dim"), c.x().dim(), "cat");
  Grads grads;
  int64_t at = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const int64_t n = c.x(i).size(d);
    grads.push_back(c.needs_grad[i] ? in_dtype_of(slice(c.dy(), d, at, at + n), c.x(i)) : Val());
    at += n;
  }
  return grads;
}

Types stack_infer(const Types& in, const Attrs& a) {
  check_nonempty("stack", in);
  const int64_t d = wrap_dim(a.i("dim"), in[0].dim() + 1, "stack", "input 0 is " + in[0].str());
  TensorType t = in[0];
  t.dtype = check_joinable("stack", in, -1);
  t.shape.insert(t.shape.begin() + d, int64_t(in.size()));
  return {t};
}

Grads stack_grad(const GradContext& c) {
  const int64_t d = c.attrs.i("dim");
  Grads grads;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    grads.push_back(c.needs_grad[i] ? in_dtype_of(select(c.dy(), d, int64_t(i)), c.x(i)) : Val());
  return grads;
}

}  // namespace

std::vector<OpDef> movement_ops() {
  return {
      // x [*] -> shape (as many elements; one -1 inferred);  dx = reshape(dy, x's shape)
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
      // x [.., a, .., b, ..] -> [.., b, .., a, ..];  dx = transpose(dy, dim0, dim1)
      {"transpose", transpose_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {in[0].transpose(a.i("dim0"), a.i("dim1"))};
       },
       [](const GradContext& c) -> Grads {
         return {transpose(c.dy(), c.attrs.i("dim0"), c.attrs.i("dim1"))};
       },
       true},
      // x [*] -> [x.size(dims[0]), x.size(dims[1]), ...];  dx = permute(dy, dims^-1)
      {"permute", permute_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors { return {in[0].permute(a.ints("dims"))}; },
       [](const GradContext& c) -> Grads {
         return {permute(c.dy(), inverse_permutation(c.attrs.ints("dims")))};
       },
       true},
      // x [.., n, ..] -> [.., len, ..], x[start:stop:step] along dim;
      // dx = slice_backward(dy): dy written at the sliced positions of zeros
      {"slice", slice_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {in[0].slice(a.i("dim"), a.i("start"), a.i("stop"), a.i("step"))};
       },
       [](const GradContext& c) -> Grads {
         const Attrs& a = c.attrs;
         return {slice_backward(c.dy(), c.x().shape(), a.i("dim"), a.i("start"), a.i("stop"),
                                a.i("step"))};
       },
       true},
      // g [.., len, ..] -> input_shape [.., n, ..], zeros but g at the sliced positions;
      // dg = slice(gg)
      {"slice_backward", slice_backward_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors { return {slice_backward_run(in[0], a)}; },
       [](const GradContext& c) -> Grads {
         const Attrs& a = c.attrs;
         return {slice(c.dy(), a.i("dim"), a.i("start"), a.i("stop"), a.i("step"))};
       }},
      // x [.., n, ..] -> [.., ..], x[.., index, ..];  dx = slice_backward(dy with the dim back as
      // 1)
      {"select", select_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {in[0].select(a.i("dim"), a.i("index"))};
       },
       [](const GradContext& c) -> Grads {
         const int64_t d = wrap_dim(c.attrs.i("dim"), c.x().dim(), "select");
         const int64_t n = c.x().size(d), i = (c.attrs.i("index") + n) % n;
         return {slice_backward(unsqueeze(c.dy(), d), c.x().shape(), d, i, i + 1, 1)};
       },
       true},
      // x [*] -> [*] without (some) size-1 dims;  dx = reshape(dy, x's shape)
      {"squeeze", squeeze_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors { return {squeeze_run(in[0], a)}; },
       [](const GradContext& c) -> Grads { return {reshape(c.dy(), c.x().shape())}; }, true},
      // x [*] -> [*] with a size-1 dim at dim;  dx = squeeze(dy, {dim})
      {"unsqueeze", unsqueeze_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors { return {in[0].unsqueeze(a.i("dim"))}; },
       [](const GradContext& c) -> Grads { return {squeeze(c.dy(), {c.attrs.i("dim")})}; }, true},
      // x [.., a, .., b, ..] -> [.., a*..*b, ..] (0-d -> [1]);  dx = reshape(dy, x's shape)
      {"flatten", flatten_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {in[0].flatten(a.i("start_dim"), a.i("end_dim"))};
       },
       [](const GradContext& c) -> Grads { return {reshape(c.dy(), c.x().shape())}; }, true},
      // x [*] -> [*] laid out contiguously (x itself when it is, hence a view);  dx = dy
      {"contiguous", infer::same_as_first,
       [](const Tensors& in, const Attrs&) -> Tensors { return {in[0].contiguous()}; },
       [](const GradContext& c) -> Grads { return {c.dy()}; }, true},
      // x [*] -> [*] reversed along dims;  dx = flip(dy, dims)
      {"flip", flip_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors { return {flip_run(in[0], a)}; },
       [](const GradContext& c) -> Grads { return {flip(c.dy(), c.attrs.ints("dims"))}; }},
      // x_i [.., n_i, ..] -> [.., sum n_i, ..];  dx_i = slice(dy, dim, offset_i, offset_i + n_i)
      {"cat", cat_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors { return {ember::cat(in, a.i("dim"))}; },
       cat_grad},
      // x_i [*] -> [.., k, ..] (k inputs, new dim at dim);  dx_i = select(dy, dim, i)
      {"stack", stack_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors { return {ember::stack(in, a.i("dim"))}; },
       stack_grad},
  };
}

// The pieces' gradients in order along `dim` when every use is a slice_backward of one input shape
// along one dim with step 1 and the slices tile that dim in some order (split's and chunk's
// pieces); empty otherwise.
std::vector<Val> tiling_slice_gradients(const std::vector<Val>& uses, int64_t& dim) {
  if (uses.size() < 2) return {};
  std::vector<std::pair<int64_t, Val>> pieces;  // (first index, the piece's gradient)
  const Shape* shape = nullptr;
  for (const Val& u : uses) {
    const Graph& g = *u.graph;
    const int32_t k = g.value(u.id).node;
    if (k < 0 || g.node(k).op->name != "slice_backward") return {};
    const Attrs& a = g.node(k).attrs;
    const Shape& input_shape = a.ints("input_shape");
    const int64_t d = wrap_dim(a.i("dim"), int64_t(input_shape.size()), "slice_backward",
                               "x is " + shape_str(input_shape));
    if (a.i("step") != 1 || (shape && (input_shape != *shape || d != dim))) return {};
    shape = &input_shape;
    dim = d;
    const int64_t first = slice_range(input_shape[size_t(d)], a.i("start"), a.i("stop"), 1).first;
    pieces.emplace_back(first, u.graph->val(g.node(k).inputs[0]));
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Val> ordered;
  int64_t next = 0;  // the pieces must follow one another from 0 to the dim's end
  for (const auto& [first, grad] : pieces) {
    if (first != next || grad.dtype() != pieces[0].second.dtype()) return {};
    next += grad.size(dim);
    ordered.push_back(grad);
  }
  if (next != (*shape)[size_t(dim)]) return {};
  return ordered;
}

}  // namespace ember::autodiff
