// rearrange.cpp — sorting (sort, argsort, topk), running sums and products (cumsum, cumprod),
// ops that move elements (tril, triu, roll, repeat) and resizing (interpolate and its backward),
// on core-runtime's ember/ops/scan_sort.h, rearrange.h and resample.h. The rules' shapes: x the
// input, y the output, dy its gradient, of y's shape.
#include "ember/ops/rearrange.h"

#include <cmath>
#include <optional>

#include "ember/autodiff/ops.h"
#include "ember/ops/resample.h"
#include "ember/ops/scan_sort.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

std::string operand(const TensorType& t) { return "x is " + t.str(); }

// ---- sorting ----

// x [.., n, ..] -> values [.., k, ..] of x's dtype and int64 indices of that shape.
Types sorted_types(const TensorType& x, int64_t k, int64_t d) {
  TensorType values = x, indices = x;
  if (x.dim() > 0) values.shape[size_t(d)] = indices.shape[size_t(d)] = k;
  indices.dtype = DType::Int64;
  return {values, indices};
}

Types sort_infer(const Types& in, const Attrs& a) {
  infer::arity("sort", in, 1);
  const int64_t d = wrap_dim_or_scalar(a.i("dim"), in[0].dim(), "sort", operand(in[0]));
  return sorted_types(in[0], in[0].dim() > 0 ? in[0].shape[size_t(d)] : 1, d);
}

Types argsort_infer(const Types& in, const Attrs& a) {
  infer::arity("argsort", in, 1);
  wrap_dim_or_scalar(a.i("dim"), in[0].dim(), "argsort", operand(in[0]));
  return {TensorType{in[0].shape, DType::Int64, in[0].device}};
}

Types topk_infer(const Types& in, const Attrs& a) {
  infer::arity("topk", in, 1);
  const int64_t d = wrap_dim_or_scalar(a.i("dim"), in[0].dim(), "topk", operand(in[0]));
  const int64_t n = in[0].dim() > 0 ? in[0].shape[size_t(d)] : 1, k = a.i("k");
  if (k < 0 || k > n)
    throw ValueError("topk", "k = " + std::to_string(k) + " is out of range for dim " +
                                 std::to_string(d) + " of size " + std::to_string(n) + " (" +
                                 operand(in[0]) + "); expected 0 <= k <= " + std::to_string(n));
  return sorted_types(in[0], k, d);
}

// values = gather(x, dim, indices);  dx = scatter_add(zeros like x, dim, indices, dvalues). A 0-d
// x is its own one value.
Grads sorted_grad(const GradContext& c) {
  if (!c.dy(0).defined()) return {Val()};
  if (c.x().dim() == 0) return {c.dy(0)};
  const int64_t d = wrap_dim(c.attrs.i("dim"), c.x().dim(), c.attrs.has("k") ? "topk" : "sort");
  return {scatter_add(zeros_like(c.x()), d, c.y(1), c.dy(0))};
}

// ---- running sums and products ----

Types scan_infer(const char* op, const Types& in, const Attrs& a) {
  infer::arity(op, in, 1);
  wrap_dim_or_scalar(a.i("dim"), in[0].dim(), op, operand(in[0]));
  TensorType t = in[0];
  if (!is_floating(t.dtype)) t.dtype = DType::Int64;
  return {t};
}

// The sum of g over every position from i to the end along d: flip, cumsum, flip.
Val reverse_cumsum(const Val& g, int64_t d) {
  if (g.dim() == 0) return g;
  return flip(cumsum(flip(g, {d}), d), {d});
}

// y = cumsum(x);  dx_i = sum_{j >= i} dy_j
Grads cumsum_grad(const GradContext& c) { return {reverse_cumsum(c.dy(), c.attrs.i("dim"))}; }

// y_j = x_0 ... x_j;  dx_i = sum_{j >= i} dy_j prod_{k <= j, k != i} x_k. Before the first zero
// along d that is reverse_cumsum(dy y) / x_i; at the first zero, reverse_cumsum(dy y') with y'
// the running product with that zero read as 1; after it, every term holds the zero: 0. Exact to
// first order whatever the zeros; the second order is exact where x has no zeros.
Grads cumprod_grad(const GradContext& c) {
  const int64_t d = c.attrs.i("dim");
  Val x = c.x(), dy = c.dy();
  if (x.dim() == 0) return {dy};
  Val is_zero = eq(x, 0.0);
  Val zeros_so_far = cumsum(to(is_zero, x.dtype()), d);  // inclusive count along d
  Val before = eq(zeros_so_far, 0.0);
  Val first_zero = logical_and(is_zero, eq(zeros_so_far, 1.0));
  Val ones = ones_like(x);
  Val dx_before = reverse_cumsum(dy * c.y(), d) / where(before, x, ones);
  Val y_skip = cumprod(where(first_zero, ones, x), d);
  Val dx_zero = reverse_cumsum(dy * y_skip, d);
  Val zero = zeros_like(dx_before);
  return {where(before, dx_before, where(first_zero, dx_zero, zero))};
}

// ---- moving elements ----

Types tri_infer(const char* op, const Types& in) {
  infer::arity(op, in, 1);
  if (in[0].dim() < 2)
    throw ShapeError(op, operand(in[0]) + "; expected at least 2 dims [*, n, m]");
  return {in[0]};
}

// dims wrapped; shifts and dims of equal lengths, or one shift with dims empty (x rolled flat).
Types roll_infer(const Types& in, const Attrs& a) {
  infer::arity("roll", in, 1);
  const std::vector<int64_t>&shifts = a.ints("shifts"), &dims = a.ints("dims");
  if (dims.empty() ? shifts.size() != 1 : shifts.size() != dims.size())
    throw ValueError("roll", "shifts " + shape_str(shifts) + " and dims " + shape_str(dims) +
                                 " for " + operand(in[0]) +
                                 "; give one shift per dim, or one shift and no dims (roll flat)");
  for (int64_t d : dims) wrap_dim_or_scalar(d, in[0].dim(), "roll", operand(in[0]));
  return {in[0]};
}

// y rolled by shifts;  dx = roll(dy, -shifts)
Grads roll_grad(const GradContext& c) {
  std::vector<int64_t> back = c.attrs.ints("shifts");
  for (int64_t& s : back) s = -s;
  return {roll(c.dy(), back, c.attrs.ints("dims"))};
}

Types repeat_infer(const Types& in, const Attrs& a) {
  infer::arity("repeat", in, 1);
  const std::vector<int64_t>& repeats = a.ints("repeats");
  const int64_t n = int64_t(repeats.size()), lead = n - in[0].dim();
  if (lead < 0)
    throw ShapeError("repeat", operand(in[0]) + "; got " + std::to_string(n) + " repeats for " +
                                   std::to_string(in[0].dim()) +
                                   " dims; give at least one repeat per dim of x");
  TensorType t = in[0];
  t.shape.assign(size_t(n), 0);
  for (int64_t d = 0; d < n; ++d) {
    const int64_t r = repeats[size_t(d)], s = d < lead ? 1 : in[0].shape[size_t(d - lead)];
    if (r < 0)
      throw ValueError("repeat", operand(in[0]) + "; repeat " + std::to_string(r) + " at dim " +
                                     std::to_string(d) + " is negative; repeats must be >= 0");
    t.shape[size_t(d)] = checked_size_mul(r, s, "repeat", "the result's size");
  }
  return {t};
}

// y [r0 s0, r1 s1, ...] (x read as [s0, s1, ...] with leading 1s);  dx = dy viewed as
// [r0, s0, r1, s1, ...], summed over the r's.
Grads repeat_grad(const GradContext& c) {
  const std::vector<int64_t>& repeats = c.attrs.ints("repeats");
  const int64_t n = int64_t(repeats.size()), lead = n - c.x().dim();
  Shape split;
  std::vector<int64_t> tiles;
  for (int64_t d = 0; d < n; ++d) {
    split.insert(split.end(), {repeats[size_t(d)], d < lead ? 1 : c.x().size(d - lead)});
    tiles.push_back(2 * d);
  }
  if (n == 0) return {c.dy()};
  return {reshape(sum(reshape(c.dy(), split), tiles), c.x().shape())};
}

// ---- resizing ----

std::optional<std::vector<int64_t>> size_of(const Attrs& a) {
  if (a.ints("size").empty()) return std::nullopt;
  return a.ints("size");
}
std::optional<std::vector<double>> scale_of(const Attrs& a) {
  if (!a.has("scale_h")) return std::nullopt;
  return std::vector<double>{a.f("scale_h"), a.f("scale_w")};
}

// [N, C, H, W] -> [N, C, H_out, W_out]: core-runtime's shape rule, for a floating x.
Shape resized(const char* op, const TensorType& x, const Attrs& a) {
  if (!is_floating(x.dtype))
    throw DTypeError(op, operand(x) + "; expected a floating dtype: convert with .float() first");
  return interpolate_shape(op, operand(x), x.shape, size_of(a), scale_of(a), a.s("mode"),
                           a.b("align_corners"));
}

Types interpolate_infer(const Types& in, const Attrs& a) {
  infer::arity("interpolate", in, 1);
  return {TensorType{resized("interpolate", in[0], a), in[0].dtype, in[0].device}};
}

Types interpolate_backward_infer(const Types& in, const Attrs& a) {
  const char* op = "interpolate_backward";
  infer::arity(op, in, 1);
  const TensorType input{a.ints("input_shape"), in[0].dtype, in[0].device};
  const Shape want = resized(op, input, a);
  if (in[0].shape != want)
    throw ShapeError(op, "grad is " + in[0].str() + "; expected interpolate's output shape " +
                             shape_str(want) + " for input shape " + shape_str(input.shape));
  return {input};
}

// y = interpolate(x);  dx = interpolate_backward(dy) (interpolate is linear in x)
Grads interpolate_grad(const GradContext& c) {
  Attrs attrs = c.attrs;
  attrs.set("input_shape", c.x().shape());
  return {interpolate_backward(c.dy(), attrs)};
}

// The adjoint's adjoint: dg = interpolate(gg) with the forward's attributes.
Grads interpolate_backward_grad(const GradContext& c) {
  Attrs attrs;
  for (const auto& [name, value] : c.attrs.items())
    if (name != "input_shape") attrs.set(name, value);
  return {apply1<Val>(EMBER_OP("interpolate"), {c.dy()}, attrs)};
}

}  // namespace

std::vector<OpDef> rearrange_ops() {
  return {
      // x [.., n, ..] -> values [.., n, ..], int64 indices [.., n, ..] along dim;
      // dx = scatter_add(zeros, dim, indices, dvalues)
      {"sort", sort_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         auto [values, indices] = ember::sort(in[0], a.i("dim"), a.b("descending"), a.b("stable"));
         return {values, indices};
       },
       sorted_grad},
      // x [*] -> int64 [*]; not differentiable
      {"argsort", argsort_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::argsort(in[0], a.i("dim"), a.b("descending"), a.b("stable"))};
       }},
      // x [.., n, ..] -> values [.., k, ..], int64 indices [.., k, ..];  dx as sort's
      {"topk", topk_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         auto [values, indices] =
             ember::topk(in[0], a.i("k"), a.i("dim"), a.b("largest"), a.b("sorted"));
         return {values, indices};
       },
       sorted_grad},
      // x [*] -> [*] (integers: int64);  dx = reverse cumsum of dy
      {"cumsum", [](const Types& in, const Attrs& a) { return scan_infer("cumsum", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::cumsum(in[0], a.i("dim"))};
       },
       cumsum_grad},
      // x [*] -> [*] (integers: int64);  dx: see cumprod_grad
      {"cumprod", [](const Types& in, const Attrs& a) { return scan_infer("cumprod", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::cumprod(in[0], a.i("dim"))};
       },
       cumprod_grad},
      // x [*, n, m] -> [*, n, m];  dx = tril(dy) / triu(dy)
      {"tril", [](const Types& in, const Attrs&) { return tri_infer("tril", in); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::tril(in[0], a.i("diagonal"))};
       },
       [](const GradContext& c) -> Grads { return {tril(c.dy(), c.attrs.i("diagonal"))}; }},
      {"triu", [](const Types& in, const Attrs&) { return tri_infer("triu", in); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::triu(in[0], a.i("diagonal"))};
       },
       [](const GradContext& c) -> Grads { return {triu(c.dy(), c.attrs.i("diagonal"))}; }},
      // x [*] -> [*];  dx = roll(dy, -shifts, dims)
      {"roll", roll_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::roll(in[0], a.ints("shifts"), a.ints("dims"))};
       },
       roll_grad},
      // x [s0, ..] -> [r0 s0, ..];  dx = the sum of dy's tiles
      {"repeat", repeat_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::repeat(in[0], a.ints("repeats"))};
       },
       repeat_grad},
      // x [N, C, H, W] -> [N, C, H_out, W_out];  dx = interpolate_backward(dy)
      {"interpolate", interpolate_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {
             ember::interpolate(in[0], size_of(a), scale_of(a), a.s("mode"), a.b("align_corners"))};
       },
       interpolate_grad},
      // g [N, C, H_out, W_out] -> input_shape [N, C, H, W];  dg = interpolate(gg)
      {"interpolate_backward", interpolate_backward_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::interpolate_backward(in[0], a.ints("input_shape"), size_of(a), scale_of(a),
                                             a.s("mode"), a.b("align_corners"))};
       },
       interpolate_backward_grad},
  };
}

}  // namespace ember::autodiff
