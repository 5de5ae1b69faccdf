// scan_sort.h — running sums and products along a dim (cumsum, cumprod) and sorting along a dim
// (sort, argsort, topk), as in PyTorch.
//
// `dim` may be negative (counted from the end); a 0-d x takes dim 0 or -1 and gives a 0-d
// result (a copy of x; index 0). A dim out of range is an IndexError naming the op and x.
// Every op has an `_out` form that writes into tensors the caller provides (one per output, in
// the order of the result; see src/ops/checks.h): each must have exactly the result's shape,
// dtype and device and must not overlap x (cumsum_out and cumprod_out may write into x itself).
#pragma once
#include <cstdint>
#include <optional>

#include "ember/ops/reduction.h"
#include "ember/tensor.h"

namespace ember {

// out[..., i, ...] = x[..., 0, ...] + ... + x[..., i, ...] along dim (cumprod: the product);
// out has x's shape. The result dtype is `dtype` when given (x is cast to it first), else int64
// for integer and bool x, x's dtype for floating x; a bool dtype is a DTypeError. Integer
// results wrap on overflow. float16/bfloat16 accumulate in float32 and round each result once;
// float32 accumulates in float32, float64 in float64: on the CPU a sequential loop, on CUDA a
// block-wide scan whose every prefix adds no more terms in sequence than the loop would, so it is
// at least as accurate.
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
const Tensor& cumsum_out(const Tensor& out, const Tensor& x, int64_t dim,
                         std::optional<DType> dtype = std::nullopt);
const Tensor& cumprod_out(const Tensor& out, const Tensor& x, int64_t dim,
                          std::optional<DType> dtype = std::nullopt);

// Sorts x along dim: values (x's dtype, x's shape) and the int64 indices along dim they came
// from, values = gather(x, dim, indices). Every dtype, bool included (false < true). NaN sorts
// as the largest value (last ascending, first descending) and -0.0 equals 0.0. Both devices
// always sort stably (equal elements keep their order, descending too), so `stable` only
// states what the caller relies on.
ValuesIndices sort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
ValuesIndices sort_out(const Tensor& values, const Tensor& indices, const Tensor& x,
                       int64_t dim = -1, bool descending = false, bool stable = false);
// The indices of sort alone.
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
const Tensor& argsort_out(const Tensor& indices, const Tensor& x, int64_t dim = -1,
                          bool descending = false, bool stable = false);

// The k largest (smallest when largest is false) elements along dim and their int64 indices;
// x: [..., n, ...] -> values, indices: [..., k, ...]. NaN counts as the largest value; of equal
// elements the earlier comes first. The result is always in sorted order (sorted = false
// permits any order, as in PyTorch). k outside [0, n] is a ValueError naming k and n; a 0-d x
// has n = 1 and gives 0-d results (for k = 0 too, as PyTorch does).
ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                   bool sorted = true);
ValuesIndices topk_out(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t k,
                       int64_t dim = -1, bool largest = true, bool sorted = true);

}  // namespace ember
