// rearrange.cpp — tril/triu, flip, roll, repeat and tile, composed from ops every device has:
// where with a mask (tril/triu), gather with reversed positions (flip), block copies between
// views (roll, repeat, tile). Each writes straight into its result, whatever out's layout.
#include "ember/ops/rearrange.h"

#include <algorithm>
#include <string>

#include "ember/ops/creation.h"
#include "ember/ops/elementwise.h"
#include "kernels.h"
#include "ops/indexing_kernels.h"
#include "ops/out.h"

namespace ember {
namespace {

// dims wrapped into [0, x.dim()) (IndexError naming op otherwise); with distinct, a repeated dim
// is a ValueError.
std::vector<int64_t> wrap_dims(const char* op, const Tensor& x, const std::vector<int64_t>& dims,
                               bool distinct) {
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, x.dim(), op, "x is " + describe(x));
    if (distinct && std::find(wrapped.begin(), wrapped.end(), w) != wrapped.end())
      throw ValueError(op, operands({{"x", x}}) + "; dim " + std::to_string(w) +
                               " appears more than once in dims; list each dim once");
    wrapped.push_back(w);
  }
  return wrapped;
}

// a mod n in [0, n), for n > 0 and any a.
int64_t wrap_shift(int64_t a, int64_t n) { return (a % n + n) % n; }

// x: [*, n, m] -> result: x where j - i <= k (lower) or >= k (upper), else 0.
Tensor triangle(const char* op, const Tensor& x, int64_t k, bool lower, const Tensor* out) {
  check_defined(op, {{"x", x}});
  if (x.dim() < 2)
    throw ShapeError(op, operands({{"x", x}}) +
                             "; expected at least 2 dims (a matrix or a batch of matrices); add "
                             "one with unsqueeze");
  // tril_out(x, x) is safe: element (i, j) of the result reads element (i, j) of x alone.
  Tensor result = written_output(op, out, x.shape(), x.dtype(), x.device(), {{"x", x}}, true);
  if (result.numel() == 0) return result;
  const int64_t n = x.size(-2), m = x.size(-1);
  k = std::clamp(k, -n, m);  // j - i lies in (-n, m): a k outside changes nothing, and stays exact
  Tensor rows = arange(double(n), DType::Int64, x.device()).unsqueeze(1);  // [n, 1]: i
  Tensor cols = arange(double(m), DType::Int64, x.device()).unsqueeze(0);  // [1, m]: j
  Tensor offset = sub(cols, rows);                                         // [n, m]: j - i
  Tensor keep = lower ? le(offset, double(k)) : ge(offset, double(k));     // broadcast over *
  Tensor zero = Tensor::empty({}, x.dtype(), x.device(), op).fill_(0.0);
  where_out(result, keep, x, zero);
  return result;
}

// [n - 1, ..., 1, 0] along dim d of x's shape, size 1 elsewhere, expanded to x's shape.
Tensor reversed_positions(const Tensor& x, int64_t d) {
  const int64_t n = x.size(d);
  Shape shape(size_t(x.dim()), 1);
  shape[size_t(d)] = n;
  Tensor positions = arange(double(n - 1), -1.0, -1.0, DType::Int64, x.device());
  return positions.view(shape).expand(x.shape());
}

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims, const Tensor* out) {
  check_defined("flip", {{"x", x}});
  std::vector<int64_t> ds = wrap_dims("flip", x, dims, true);
  Tensor result = written_output("flip", out, x.shape(), x.dtype(), x.device(), {{"x", x}}, false);
  if (result.numel() == 0) return result;
  // Reversing a dim of size 1 changes nothing.
  ds.erase(std::remove_if(ds.begin(), ds.end(), [&](int64_t d) { return x.size(d) == 1; }),
           ds.end());
  if (ds.empty()) {
    result.copy_(x);
    return result;
  }
  // One gather per reversed dim (out[.., i, ..] = src[.., n - 1 - i, ..]); the last writes into
  // the result, the others into temporaries.
  Tensor src = x;
  for (size_t i = 0; i < ds.size(); ++i) {
    Tensor dst =
        i + 1 == ds.size() ? result : Tensor::empty(x.shape(), x.dtype(), x.device(), "flip");
    gather_kernel(x.device())(src, ds[i], reversed_positions(x, ds[i]), dst);
    src = dst;
  }
  return result;
}

// out = x rolled by shift[d] along every dim d from `d` on (shift[d] in [0, size)): per rolled
// dim two block copies, out[s:] = x[:n - s] and out[:s] = x[n - s:], so 2^k copies for k dims.
void roll_blocks(Tensor out, const Tensor& x, const std::vector<int64_t>& shift, size_t d) {
  while (d < shift.size() && shift[d] == 0) ++d;
  if (d == shift.size()) {
    out.copy_(x);
    return;
  }
  const int64_t n = x.size(int64_t(d)), s = shift[d], dim = int64_t(d);
  roll_blocks(out.narrow(dim, s, n - s), x.narrow(dim, 0, n - s), shift, d + 1);
  roll_blocks(out.narrow(dim, 0, s), x.narrow(dim, n - s, s), shift, d + 1);
}

Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims,
            const Tensor* out) {
  const char* op = "roll";
  check_defined(op, {{"x", x}});
  if (dims.empty() ? shifts.size() != 1 : shifts.size() != dims.size())
    throw ValueError(op, operands({{"x", x}}) + "; got " + std::to_string(shifts.size()) +
                             " shifts and " + std::to_string(dims.size()) +
                             " dims; pass one shift per dim, or one shift and no dims to roll "
                             "the flattened tensor");
  std::vector<int64_t> ds = wrap_dims(op, x, dims, false);
  Tensor result = written_output(op, out, x.shape(), x.dtype(), x.device(), {{"x", x}}, false);
  if (result.numel() == 0) return result;
  if (ds.empty()) {  // the flattened tensor, rolled as one dim
    const int64_t n = x.numel();
    // A strided out may have no flat view: roll into a contiguous temporary and copy that over.
    Tensor flat =
        result.is_contiguous() ? result.view({n}) : Tensor::empty({n}, x.dtype(), x.device(), op);
    roll_blocks(flat, x.reshape({n}), {wrap_shift(shifts[0], n)}, 0);
    if (!result.is_contiguous()) result.copy_(flat.view(x.shape()));
    return result;
  }
  std::vector<int64_t> shift(size_t(x.dim()), 0);  // a repeated dim's shifts add up
  for (size_t i = 0; i < ds.size(); ++i) {
    const int64_t n = x.size(ds[i]);
    int64_t& s = shift[size_t(ds[i])];
    s = wrap_shift(s + wrap_shift(shifts[i], n), n);
  }
  roll_blocks(result, x, shift, 0);
  return result;
}

// repeats: one per result dim (at least x.dim()); x has repeats.size() - x.dim() leading 1s.
Tensor repeat(const char* op, const Tensor& x, const std::vector<int64_t>& repeats,
              const Tensor* out) {
  check_defined(op, {{"x", x}});
  const int64_t n = int64_t(repeats.size()), lead = n - x.dim();
  if (lead < 0)
    throw ShapeError(op, operands({{"x", x}}) + "; got " + std::to_string(n) + " repeats for " +
                             std::to_string(x.dim()) +
                             " dims; give at least one repeat per dim of x");
  Shape shape(static_cast<size_t>(n)), split;
  Strides out_split_strides;
  for (int64_t d = 0; d < n; ++d) {
    const int64_t r = repeats[size_t(d)], s = d < lead ? 1 : x.size(d - lead);
    if (r < 0)
      throw ValueError(op, operands({{"x", x}}) + "; repeat " + std::to_string(r) + " at dim " +
                               std::to_string(d) + " is negative; repeats must be >= 0");
    shape[size_t(d)] = checked_size_mul(r, s, op, "the result's size");
  }
  Tensor result = written_output(op, out, shape, x.dtype(), x.device(), {{"x", x}}, false);
  if (result.numel() == 0) return result;
  // The result viewed as [r0, s0, r1, s1, ...]: a dim of size r * s and stride st splits into
  // (r, s) with strides (s * st, st), a view whatever its layout; x is broadcast over the r's.
  Strides x_strides;
  for (int64_t d = 0; d < n; ++d) {
    const int64_t s = d < lead ? 1 : x.size(d - lead), st = result.stride(d);
    split.insert(split.end(), {repeats[size_t(d)], s});
    out_split_strides.insert(out_split_strides.end(), {s * st, st});
    x_strides.insert(x_strides.end(), {0, d < lead ? 0 : x.stride(d - lead)});
  }
  Tensor dst = result.as_strided(split, out_split_strides, result.offset(), op);
  dst.copy_(x.as_strided(split, x_strides, x.offset(), op));
  return result;
}

// NumPy's tile pads reps with leading 1s up to x's dims; then it is repeat.
std::vector<int64_t> tile_reps(const Tensor& x, const std::vector<int64_t>& reps) {
  std::vector<int64_t> padded(reps);
  if (int64_t(reps.size()) < x.dim())
    padded.insert(padded.begin(), size_t(x.dim()) - reps.size(), 1);
  return padded;
}

}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) {
  return triangle("tril", x, diagonal, true, nullptr);
}
Tensor triu(const Tensor& x, int64_t diagonal) {
  return triangle("triu", x, diagonal, false, nullptr);
}
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) { return flip(x, dims, nullptr); }
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  return roll(x, shifts, dims, nullptr);
}
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats) {
  return repeat("repeat", x, repeats, nullptr);
}
Tensor tile(const Tensor& x, const std::vector<int64_t>& reps) {
  return repeat("tile", x, tile_reps(x, reps), nullptr);
}

const Tensor& tril_out(const Tensor& out, const Tensor& x, int64_t diagonal) {
  triangle("tril", x, diagonal, true, &out);
  return out;
}
const Tensor& triu_out(const Tensor& out, const Tensor& x, int64_t diagonal) {
  triangle("triu", x, diagonal, false, &out);
  return out;
}
const Tensor& flip_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims) {
  flip(x, dims, &out);
  return out;
}
const Tensor& roll_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& shifts,
                       const std::vector<int64_t>& dims) {
  roll(x, shifts, dims, &out);
  return out;
}
const Tensor& repeat_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& repeats) {
  repeat("repeat", x, repeats, &out);
  return out;
}
const Tensor& tile_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& reps) {
  repeat("tile", x, tile_reps(x, reps), &out);
  return out;
}

}  // namespace ember
