// reduction.h — reductions over any set of dims, as in PyTorch.
//
// `dims` lists the dims to reduce (negative counts from the end; empty = every dim). The result
// drops the reduced dims, or keeps them with size 1 when keepdim is true:
//   x: [2, 3, 4], dims {0, -1}  ->  [3]   (keepdim: [1, 3, 1])
// Float32 sums accumulate in float with pairwise summation (error grows like log n), float64 in
// double, float16/bfloat16 in float; integer and bool sums are exact in int64.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ember/tensor.h"

namespace ember {

// Sum and product: integer and bool x give int64, floating x keeps its dtype. Empty sums are 0,
// empty products 1.
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor prod(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);

// Floating x only; the mean of no elements is NaN.
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);

// Variance sum((x - mean)^2) / (n - correction) (correction 1: unbiased, 0: population) and its
// square root; floating x, one pass (Welford). n <= correction gives inf or NaN, as in PyTorch.
Tensor var(const Tensor& x, const std::vector<int64_t>& dims = {}, int64_t correction = 1,
           bool keepdim = false);
Tensor std(const Tensor& x, const std::vector<int64_t>& dims = {}, int64_t correction = 1,
           bool keepdim = false);

// Largest / smallest value over dims, x's dtype; NaN if any element is NaN. Reducing over no
// elements throws ValueError (max has no identity).
Tensor amax(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);

// max/min over one dim: the values (x's dtype) and their int64 indices along dim (the first on
// ties; NaN counts as the extreme). x: [2, 3, 4], dim 1 -> values, indices: [2, 4].
struct ValuesIndices {
  Tensor values;
  Tensor indices;
};
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);

// int64 index of the max / min along dim; without dim, the row-major index into the flattened x
// (keepdim then gives a shape of all ones).
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

// log(sum(exp(x))) computed without overflow (the running max is factored out); floating x.
// The logsumexp of no elements is -inf.
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);

// Whether every / any element is non-zero: bool result for any x dtype. Empty: all true, any false.
Tensor all(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor any(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);

// Vector p-norm (sum |x|^p)^(1/p) over dims, floating x; p = inf gives max|x|, p = -inf min|x|,
// p = 0 the number of non-zeros (as torch.linalg.vector_norm).
Tensor norm(const Tensor& x, double p = 2.0, const std::vector<int64_t>& dims = {},
            bool keepdim = false);

// ---- outputs the caller provides ----
// Each op above has a form that writes its result into `out` and returns it: out must have exactly
// the result's shape (keepdim included), dtype and device (ShapeError, DTypeError, DeviceError;
// never resized or cast), may be any strided view, and must not overlap x (ValueError). max/min
// take one output per field of ValuesIndices, in its order.
const Tensor& sum_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims = {},
                      bool keepdim = false);
const Tensor& prod_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims = {},
                       bool keepdim = false);
const Tensor& mean_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims = {},
                       bool keepdim = false);
const Tensor& var_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims = {},
                      int64_t correction = 1, bool keepdim = false);
const Tensor& std_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims = {},
                      int64_t correction = 1, bool keepdim = false);
const Tensor& amax_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims = {},
                       bool keepdim = false);
const Tensor& amin_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims = {},
                       bool keepdim = false);
ValuesIndices max_out(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim,
                      bool keepdim = false);
ValuesIndices min_out(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim,
                      bool keepdim = false);
const Tensor& argmax_out(const Tensor& out, const Tensor& x,
                         std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
const Tensor& argmin_out(const Tensor& out, const Tensor& x,
                         std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
const Tensor& logsumexp_out(const Tensor& out, const Tensor& x,
                            const std::vector<int64_t>& dims = {}, bool keepdim = false);
const Tensor& all_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims = {},
                      bool keepdim = false);
const Tensor& any_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims = {},
                      bool keepdim = false);
const Tensor& norm_out(const Tensor& out, const Tensor& x, double p = 2.0,
                       const std::vector<int64_t>& dims = {}, bool keepdim = false);

}  // namespace ember
