// ops/rearrange.h — builder functions of sorting, running sums and products, and ops that move
// elements to new places (src/rules/rearrange.cpp): what core-runtime has in ember/ops/scan_sort.h,
// rearrange.h and resample.h, with PyTorch's names and arguments. dim may be negative.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/autodiff/ops/apply.h"
#include "ember/autodiff/ops/elementwise.h"

namespace ember::autodiff {

// ---- sorting: (values, int64 indices along dim); the gradient goes to where each value came
// from (scatter_add of dy at the indices) ----
template <class V>
if_handle<V, std::pair<V, V>> sort(const V& x, int64_t dim = -1, bool descending = false,
                                   bool stable = false) {
  auto out =
      apply(EMBER_OP("sort"), std::vector<V>{x},
            {{"dim", dim}, {"descending", int64_t(descending)}, {"stable", int64_t(stable)}});
  return {out[0], out[1]};
}
// The indices of sort alone (no gradient).
template <class V>
if_handle<V> argsort(const V& x, int64_t dim = -1, bool descending = false, bool stable = false) {
  return apply1<V>(EMBER_OP("argsort"), {x},
                   {{"dim", dim},
                    {"descending", int64_t(descending)},
                    {"stable", int64_t(stable)}});
}
// The k largest (smallest) elements along dim, in sorted order, and their int64 indices.
template <class V>
if_handle<V, std::pair<V, V>> topk(const V& x, int64_t k, int64_t dim = -1, bool largest = true,
                                   bool sorted = true) {
  auto out =
      apply(EMBER_OP("topk"), std::vector<V>{x},
            {{"k", k}, {"dim", dim}, {"largest", int64_t(largest)}, {"sorted", int64_t(sorted)}});
  return {out[0], out[1]};
}

// ---- running sums and products along dim: x [*] -> [*] (integers and bool give int64; with
// dtype, x is converted first). cumprod's gradient is exact with zeros in x ----
template <class V>
if_handle<V> cumsum(const V& x, int64_t dim, std::optional<DType> dtype = std::nullopt) {
  return apply1<V>(EMBER_OP("cumsum"), {dtype ? to(x, *dtype) : x}, {{"dim", dim}});
}
template <class V>
if_handle<V> cumprod(const V& x, int64_t dim, std::optional<DType> dtype = std::nullopt) {
  return apply1<V>(EMBER_OP("cumprod"), {dtype ? to(x, *dtype) : x}, {{"dim", dim}});
}

// ---- moving elements (ember/ops/rearrange.h); each is linear, its gradient its adjoint ----
// x [*, n, m] -> [*, n, m] zero above (tril) / below (triu) diagonal k.
template <class V> if_handle<V> tril(const V& x, int64_t diagonal = 0) {
  return apply1<V>(EMBER_OP("tril"), {x}, {{"diagonal", diagonal}});
}
template <class V> if_handle<V> triu(const V& x, int64_t diagonal = 0) {
  return apply1<V>(EMBER_OP("triu"), {x}, {{"diagonal", diagonal}});
}
// torch.roll: shifted by shifts[i] along dims[i]; dims empty: x rolled flat by the one shift.
template <class V>
if_handle<V> roll(const V& x, const std::vector<int64_t>& shifts,
                  const std::vector<int64_t>& dims = {}) {
  return apply1<V>(EMBER_OP("roll"), {x}, {{"shifts", shifts}, {"dims", dims}});
}
// torch.Tensor.repeat: repeats has at least x.dim() entries; x gets leading size-1 dims to match.
template <class V> if_handle<V> repeat(const V& x, const std::vector<int64_t>& repeats) {
  return apply1<V>(EMBER_OP("repeat"), {x}, {{"repeats", repeats}});
}
// torch.tile: as repeat, with fewer reps than x has dims padded by leading 1s.
template <class V> if_handle<V> tile(const V& x, std::vector<int64_t> reps) {
  if (int64_t(reps.size()) < x.dim()) reps.insert(reps.begin(), size_t(x.dim()) - reps.size(), 1);
  return repeat(x, reps);
}

// ---- resizing images (ember/ops/resample.h) ----
// x [N, C, H, W] -> [N, C, H_out, W_out]: size {H_out, W_out} (empty: from scale_factor
// {s_h, s_w}); mode "nearest" or "bilinear". The gradient is interpolate_backward, whose own is
// interpolate again.
template <class V>
if_handle<V> interpolate(const V& x, const std::vector<int64_t>& size,
                         const std::vector<double>& scale_factor = {},
                         const std::string& mode = "nearest", bool align_corners = false) {
  Attrs attrs{{"size", size}, {"mode", mode}, {"align_corners", int64_t(align_corners)}};
  if (scale_factor.size() == 2) {
    attrs.set("scale_h", scale_factor[0]);
    attrs.set("scale_w", scale_factor[1]);
  }
  return apply1<V>(EMBER_OP("interpolate"), {x}, std::move(attrs));
}
// interpolate's adjoint: grad [N, C, H_out, W_out] -> input_shape [N, C, H, W]; attrs as
// interpolate's (size, scale_h/scale_w, mode, align_corners) plus input_shape.
template <class V> if_handle<V> interpolate_backward(const V& grad, Attrs attrs) {
  return apply1<V>(EMBER_OP("interpolate_backward"), {grad}, std::move(attrs));
}

}  // namespace ember::autodiff
