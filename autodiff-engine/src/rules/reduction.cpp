// reduction.cpp — the reduction family, and expand / sum_to, the two halves of broadcasting.
//
// Shapes: x [*] -> y, x's shape with the reduced dims removed (kept as 1 with keepdim); dims
// empty = every dim. Each gradient rule first gives dy (and y) back the reduced dims as 1s
// ("kept" below: dyk, yk), so that it broadcasts against x.
#include "ember/ops/reduction.h"

#include <cmath>

#include "ember/autodiff/ops.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

using Dims = std::vector<int64_t>;

// ---- shape and dtype rules ----

// The dims of `shape` that a broadcast to `target` added or stretched (sum_to's reduction).
Dims broadcast_dims(const Shape& shape, const Shape& target) {
  Dims dims;
  const size_t lead = target.size() - shape.size();
  for (size_t i = 0; i < target.size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && target[i] != 1)) dims.push_back(int64_t(i));
  return dims;
}

void check_broadcastable(const char* op, const Shape& from, const Shape& to) {
  if (!infer::broadcastable(from, to))
    throw ShapeError(op, shape_str(from) + " does not broadcast to " + shape_str(to));
}

// IndexError for a dim out of range, ValueError for one listed twice (as core-runtime). A 0-d x
// accepts 0 and -1.
void check_dims(const char* op, const TensorType& x, const Dims& dims) {
  const int64_t n = int64_t(x.shape.size());
  Dims seen_dims;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim_or_scalar(d, n, op, "x is " + x.str());
    if (n == 0) continue;
    for (int64_t seen : seen_dims)
      if (seen == w)
        throw ValueError(op, "x is " + x.str() + "; dim " + std::to_string(d) +
                                 " appears more than once in dims " + shape_str(dims) +
                                 "; list each dim once");
    seen_dims.push_back(w);
  }
}

// How many elements of x each output folds together.
int64_t reduced_numel(const Shape& shape, const Dims& dims) {
  if (dims.empty() || shape.empty()) return shape_numel(shape);
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[size_t(d < 0 ? d + int64_t(shape.size()) : d)];
  return n;
}

// x's type reduced over dims: the shape every op here shares (dtype still x's).
TensorType reduced_type(const char* op, const Types& in, const Dims& dims, bool keepdim) {
  infer::arity(op, in, 1);
  check_dims(op, in[0], dims);
  TensorType t = in[0];
  t.shape = infer::reduce_shape(op, t.shape, dims, keepdim);
  return t;
}
TensorType reduced_type(const char* op, const Types& in, const Attrs& a) {
  return reduced_type(op, in, a.ints("dims"), a.b("keepdim"));
}

// amax, max(dim), argmax have no identity: reducing nothing is a ValueError (as core-runtime).
void check_nonempty(const char* op, const TensorType& x, const Dims& dims) {
  if (reduced_numel(x.shape, dims) == 0)
    throw ValueError(op, "x is " + x.str() + "; the reduced dims " +
                             (dims.empty() ? std::string("(all)") : shape_str(dims)) +
                             " hold no elements and " + op +
                             " of nothing is undefined; reduce over non-empty dims");
}

// sum and prod: integer and bool x give int64, as core-runtime.
Types sum_like(const char* op, const Types& in, const Attrs& a) {
  TensorType t = reduced_type(op, in, a);
  if (!is_floating(t.dtype)) t.dtype = DType::Int64;
  return {t};
}
// mean, logsumexp, var, std, norm: floating x, floating result of x's dtype.
Types floating_reduce(const char* op, const Types& in, const Attrs& a) {
  TensorType t = reduced_type(op, in, a);
  infer::floating(op, in, 0);
  return {t};
}
// amax, amin: x's dtype, over at least one element.
Types extreme(const char* op, const Types& in, const Attrs& a) {
  TensorType t = reduced_type(op, in, a);
  check_nonempty(op, in[0], a.ints("dims"));
  return {t};
}
Types logical(const char* op, const Types& in, const Attrs& a) {
  TensorType t = reduced_type(op, in, a);
  t.dtype = DType::Bool;
  return {t};
}
// max_dim, min_dim: (values of x's dtype, int64 indices), both x without dim.
Types values_indices(const char* op, const Types& in, const Attrs& a) {
  const Dims dims{a.i("dim")};
  TensorType values = reduced_type(op, in, dims, a.b("keepdim"));
  check_nonempty(op, in[0], dims);
  TensorType indices = values;
  indices.dtype = DType::Int64;
  return {values, indices};
}
// argmax, argmin: int64 indices along dim, or into the flattened x when there is no dim.
Dims optional_dim(const Attrs& a) { return a.has("dim") ? Dims{a.i("dim")} : Dims{}; }
Types arg_index(const char* op, const Types& in, const Attrs& a) {
  TensorType t = reduced_type(op, in, optional_dim(a), a.b("keepdim"));
  check_nonempty(op, in[0], optional_dim(a));
  t.dtype = DType::Int64;
  return {t};
}
Types norm_infer(const Types& in, const Attrs& a) {
  if (std::isnan(a.f("p"))) throw ValueError("norm", "p is NaN; pass a number or +-infinity");
  Types t = floating_reduce("norm", in, a);
  if (std::isinf(a.f("p"))) check_nonempty("norm", in[0], a.ints("dims"));
  return t;
}

// ---- pieces the gradient rules share ----

// A value of the reduced shape given back the reduced dims as 1s, so it broadcasts to x.
Val unreduce(Val v, const Shape& x_shape, const Dims& dims, bool keepdim) {
  if (keepdim || dims.empty() || x_shape.empty()) return v;  // already broadcasts to x
  return reshape(v, infer::reduce_shape("sum", x_shape, dims, true));
}
Val dy_kept(const GradContext& c) {
  return unreduce(c.dy(), c.x().shape(), c.attrs.ints("dims"), c.attrs.b("keepdim"));
}
Val y_kept(const GradContext& c) {
  return unreduce(c.y(), c.x().shape(), c.attrs.ints("dims"), c.attrs.b("keepdim"));
}

// t where is_zero is false, else 1: a divisor or a base that is never 0. Used inside a where
// that discards those elements, so that no inf reaches a later 0 * inf in a gradient.
Val nonzero_or_one(Val t, Val is_zero) { return where(is_zero, ones_like(t), t); }
Val zero_where(Val is_zero, Val t) { return where(is_zero, zeros_like(t), t); }

// mask (bool, x's shape) / its count per reduced slice, in x's dtype: each of a slice's marked
// elements gets an equal share (ties of amax / amin / the inf-norm).
Val equal_share(Val mask, Val x, const Dims& dims) {
  Val m = to(mask, x.dtype());
  return m / sum(m, dims, true);
}

// x: [*], gk: kept shape. d var / dx scaled by gk: gk * 2 (x - mean(x)) / (n - correction).
Val var_grad(Val x, Val gk, const Dims& dims, int64_t correction) {
  const double n = double(reduced_numel(x.shape(), dims));
  return gk * (x - mean(x, dims, true)) * (2.0 / (n - double(correction)));
}

// ---- gradient rules ----

// x: [*] -> y: x over dims; dyk, yk: [*] with the dims as 1 (the same in every rule below).
// y = prod(x);  dx_i = dy prod_{j != i} x_j, without dividing by a zero. With z = (x == 0),
// u = where(z, x, 1) (the zeros) and v = where(z, 1, x) (the rest), prod(x) = prod(u) prod(v):
//   x_i != 0:  prod(u) prod(v) / x_i
//   x_i == 0:  prod(v) q_i,  q_i = prod_{j zero, j != i} x_j: 1 with one zero in the slice, the
//              other zero's value (sum of the zeros - x_i) with two, and 0 with three or more
//              (a product of two or more zeros: its value and first derivative vanish).
// Each q_i is exact to first order in x, so the second derivative is exact with any number of
// zeros (a third derivative is not, with three or more zeros in one slice).
Grads prod_grad(const GradContext& c) {
  const Dims& dims = c.attrs.ints("dims");
  Val x = c.x(), zero = eq(x, 0.0), one = ones_like(x), nil = zeros_like(x);
  Val u = where(zero, x, one), v = where(zero, one, x);
  Val pu = prod(u, dims, true), pv = prod(v, dims, true);
  Val count = sum(zero, dims, true), zeros_sum = sum(where(zero, x, nil), dims, true);
  Val q = where(eq(count, 1.0), one, where(eq(count, 2.0), zeros_sum - x, nil));
  return {dy_kept(c) * where(zero, pv * q, pu * pv / v)};
}

// x: [*] -> y: x over dims.  y = amax(x) (amin alike);  dx = dy [x == y] / #{x == y}: tied extremes
// share dy equally, as torch.amax. The gradient is piecewise constant, so its own gradient (in x)
// is zero.
Grads extreme_grad(const GradContext& c) {
  return {dy_kept(c) * equal_share(eq(c.x(), y_kept(c)), c.x(), c.attrs.ints("dims"))};
}

// x: [*] -> y: x over dims.  y = log sum exp(x);  dx = dy exp(x - y) (the softmax over the reduced
// dims)
Grads logsumexp_grad(const GradContext& c) { return {dy_kept(c) * exp(c.x() - y_kept(c))}; }

// x: [*] -> y: x over dims (n elements each).  y = sum (x - mean)^2 / (n - correction);  dx = dy 2
// (x - mean) / (n - correction)
Grads var_grad(const GradContext& c) {
  return {var_grad(c.x(), dy_kept(c), c.attrs.ints("dims"), c.attrs.i("correction"))};
}

// x: [*] -> y: x over dims.  y = sqrt(var(x));  dx = d var/dx (dy / (2 y)), 0 where y = 0
// (as PyTorch)
Grads std_grad(const GradContext& c) {
  Val yk = y_kept(c), flat = eq(yk, 0.0);
  Val gk = zero_where(flat, dy_kept(c) / (nonzero_or_one(yk, flat) * 2.0));
  return {var_grad(c.x(), gk, c.attrs.ints("dims"), c.attrs.i("correction"))};
}

// x: [*] -> y: x over dims.  y = (sum |x|^p)^(1/p);  dx = dy sign(x) |x|^(p-1) / y^(p-1), 0 where y
// = 0 (a subgradient); p = 1: dy sign(x); p = 2: dy x / y; p = +-inf: max/min |x|, shared among
// ties as amax; p = 0 (a count of non-zeros): no gradient. At x = 0, |x|^(p-1) is taken as 0 (for p
// < 1 it is infinite there; PyTorch does the same).
Grads norm_grad(const GradContext& c) {
  const double p = c.attrs.f("p");
  Val x = c.x(), dyk = dy_kept(c), yk = y_kept(c);
  if (p == 0.0) return {Val()};
  if (p == 1.0) return {dyk * sign(x)};
  if (std::isinf(p)) return {dyk * sign(x) * equal_share(eq(abs(x), yk), x, c.attrs.ints("dims"))};
  Val flat = eq(yk, 0.0), safe_y = nonzero_or_one(yk, flat);
  if (p == 2.0) return {x * zero_where(flat, dyk / safe_y)};
  Val scale = zero_where(flat, dyk / pow(safe_y, p - 1.0));
  Val at_zero = eq(x, 0.0);
  Val power = zero_where(at_zero, pow(abs(nonzero_or_one(x, at_zero)), p - 1.0));
  return {scale * sign(x) * power};
}

// x: [*] -> values, indices: x without dim.  values, indices = max(x, dim) (min alike);  dx = dy
// scattered to the element the index names along dim. On ties that is the first extreme, which gets
// all of dy (as PyTorch's max(dim)).
Grads select_extreme_grad(const GradContext& c) {
  if (!c.dy().defined()) return {Val()};
  Val x = c.x();
  if (x.dim() == 0) return {c.dy()};
  const int64_t dim = wrap_dim(c.attrs.i("dim"), x.dim(), "max_dim");
  const bool keepdim = c.attrs.b("keepdim");
  Val index = unreduce(c.y(1), x.shape(), {dim}, keepdim);
  return {scatter_add(zeros_like(x), dim, index, unreduce(c.dy(), x.shape(), {dim}, keepdim))};
}

// sum_to's run: sum over the broadcast dims, keeping x's dtype (sum alone makes integers int64).
Tensor run_sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  Tensor s = sum(x, broadcast_dims(shape, x.shape()), true).reshape(shape);
  return s.dtype() == x.dtype() ? s : s.to(x.dtype());
}

}  // namespace

std::vector<OpDef> reduction_ops() {
  return {
      // y = sum(x, dims);  dx = expand(dyk, x's shape)
      {"sum", [](const Types& in, const Attrs& a) { return sum_like("sum", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {sum(in[0], a.ints("dims"), a.b("keepdim"))};
       },
       [](const GradContext& c) -> Grads { return {expand(dy_kept(c), c.x().shape())}; }},
      // y = sum(x, dims) / n;  dx = expand(dyk, x's shape) / n
      {"mean", [](const Types& in, const Attrs& a) { return floating_reduce("mean", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {mean(in[0], a.ints("dims"), a.b("keepdim"))};
       },
       [](const GradContext& c) -> Grads {
         const double n = double(reduced_numel(c.x().shape(), c.attrs.ints("dims")));
         return {expand(dy_kept(c), c.x().shape()) * (1.0 / n)};
       }},
      {"prod", [](const Types& in, const Attrs& a) { return sum_like("prod", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {prod(in[0], a.ints("dims"), a.b("keepdim"))};
       },
       prod_grad},
      {"amax", [](const Types& in, const Attrs& a) { return extreme("amax", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {amax(in[0], a.ints("dims"), a.b("keepdim"))};
       },
       extreme_grad},
      {"amin", [](const Types& in, const Attrs& a) { return extreme("amin", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {amin(in[0], a.ints("dims"), a.b("keepdim"))};
       },
       extreme_grad},
      {"logsumexp",
       [](const Types& in, const Attrs& a) { return floating_reduce("logsumexp", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {logsumexp(in[0], a.ints("dims"), a.b("keepdim"))};
       },
       logsumexp_grad},
      // all / any -> bool: no gradient
      {"all", [](const Types& in, const Attrs& a) { return logical("all", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {all(in[0], a.ints("dims"), a.b("keepdim"))};
       }},
      {"any", [](const Types& in, const Attrs& a) { return logical("any", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {any(in[0], a.ints("dims"), a.b("keepdim"))};
       }},
      {"var", [](const Types& in, const Attrs& a) { return floating_reduce("var", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {var(in[0], a.ints("dims"), a.i("correction"), a.b("keepdim"))};
       },
       var_grad},
      {"std", [](const Types& in, const Attrs& a) { return floating_reduce("std", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::std(in[0], a.ints("dims"), a.i("correction"), a.b("keepdim"))};
       },
       std_grad},
      {"norm", norm_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {norm(in[0], a.f("p"), a.ints("dims"), a.b("keepdim"))};
       },
       norm_grad},
      {"max_dim", [](const Types& in, const Attrs& a) { return values_indices("max_dim", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         ValuesIndices r = max(in[0], a.i("dim"), a.b("keepdim"));
         return {r.values, r.indices};
       },
       select_extreme_grad},
      {"min_dim", [](const Types& in, const Attrs& a) { return values_indices("min_dim", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         ValuesIndices r = min(in[0], a.i("dim"), a.b("keepdim"));
         return {r.values, r.indices};
       },
       select_extreme_grad},
      // argmax / argmin -> int64: no gradient
      {"argmax", [](const Types& in, const Attrs& a) { return arg_index("argmax", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {argmax(in[0], a.has("dim") ? std::optional(a.i("dim")) : std::nullopt,
                        a.b("keepdim"))};
       }},
      {"argmin", [](const Types& in, const Attrs& a) { return arg_index("argmin", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {argmin(in[0], a.has("dim") ? std::optional(a.i("dim")) : std::nullopt,
                        a.b("keepdim"))};
       }},
      // y = x broadcast to shape (a view);  dx = sum_to(dy, x's shape)
      {"expand",
       [](const Types& in, const Attrs& a) -> Types {
         infer::arity("expand", in, 1);
         check_broadcastable("expand", in[0].shape, a.ints("shape"));
         return {TensorType{a.ints("shape"), in[0].dtype, in[0].device}};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors { return {in[0].expand(a.ints("shape"))}; },
       [](const GradContext& c) -> Grads { return {sum_to(c.dy(), c.x().shape())}; }, true},
      // y = x summed over the dims that broadcasting `shape` to x's shape adds or stretches;
      // dx = expand(dy, x's shape)
      {"sum_to",
       [](const Types& in, const Attrs& a) -> Types {
         infer::arity("sum_to", in, 1);
         check_broadcastable("sum_to", a.ints("shape"), in[0].shape);
         return {TensorType{a.ints("shape"), in[0].dtype, in[0].device}};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {run_sum_to(in[0], a.ints("shape"))};
       },
       [](const GradContext& c) -> Grads { return {expand(c.dy(), c.x().shape())}; }},
  };
}

}  // namespace ember::autodiff
