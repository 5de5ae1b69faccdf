// indexing_kernels.h — kernel tables of the indexing family, and the small pieces every backend
// shares (internal header).
//
// Index tensors reach kernels as contiguous int64 whose values the front function has checked
// with index_check_kernel (index_check_kernels.h). On the CPU that check has raised before any
// kernel runs; on CUDA it reports at the next synchronising point, so CUDA kernels skip
// out-of-range indices (move kernels write zero there) rather than reach outside x.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dispatch.h"
#include "ember/half.h"
#include "ember/tensor.h"

namespace ember {

// Ops that only move elements need their size, not their type: one instantiation per size.
template <class F> decltype(auto) dispatch_by_size(size_t itemsize, const char* op, F&& fn) {
  switch (itemsize) {
    case 1:
      return fn(TypeTag<uint8_t>{});
    case 2:
      return fn(TypeTag<uint16_t>{});
    case 4:
      return fn(TypeTag<uint32_t>{});
    case 8:
      return fn(TypeTag<uint64_t>{});
    default:
      break;
  }
  throw DTypeError(op, "unsupported element size " + std::to_string(itemsize));
}

struct IndexRange {
  int64_t min, max;
};

enum class PadMode { Constant, Reflect, Replicate };

// The input coordinate that output coordinate o reads, along a dim padded by `left` before its
// `size` input values. Reflect mirrors about the edge element (valid while pad < size, so one
// reflection is enough); replicate clamps to the edge.
EMBER_HOST_DEVICE inline int64_t pad_source(int64_t o, int64_t left, int64_t size, PadMode mode) {
  const int64_t i = o - left;
  if (mode == PadMode::Replicate) return i < 0 ? 0 : (i >= size ? size - 1 : i);
  if (i < 0) return -i;
  if (i >= size) return 2 * (size - 1) - i;
  return i;
}

// Smallest and largest value of index (contiguous int64, numel > 0). Synchronises on a GPU, so
// only one_hot's inferred num_classes (a shape that depends on the data) uses it.
EMBER_KERNEL(index_range_kernel, IndexRange(const Tensor& index));

// x: [outer, n, inner], index: [k] -> out: [outer, k, inner], out[o, j, i] = x[o, index[j], i].
// All contiguous.
EMBER_KERNEL(index_select_kernel, void(const Tensor& x, const Tensor& index, Tensor& out));

// out: [outer, n, inner] += src: [outer, k, inner] at rows index[k]: out[o, index[j], i] +=
// src[o, j, i]. All contiguous, one dtype; repeated indices accumulate (in order on the CPU).
EMBER_KERNEL(index_add_kernel, void(Tensor& out, const Tensor& index, const Tensor& src));

// x, index, out of one number of dims, any strides; out has index's shape:
// out[..., j, ...] = x[..., index[..., j, ...], ...] along dim (other coordinates shared).
EMBER_KERNEL(gather_kernel, void(const Tensor& x, int64_t dim, const Tensor& index, Tensor& out));

// x[..., index[..., j, ...], ...] += src[..., j, ...] along dim, over index's shape; x, index, src
// of one number of dims, any strides; x and src of one dtype.
EMBER_KERNEL(scatter_add_kernel,
             void(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src));

// out = mask ? value : x, with mask (bool) broadcast to x's shape, out of x's shape and dtype.
EMBER_KERNEL(masked_fill_kernel,
             void(const Tensor& x, const Tensor& mask, double value, Tensor& out));

// x: contiguous [d0, ..., dk]; out: contiguous [d0 + left[0] + right[0], ...] (reflect or
// replicate): out[o0, ..., ok] = x[pad_source(o0, left[0], d0), ...].
EMBER_KERNEL(pad_kernel,
             void(const Tensor& x, const std::vector<int64_t>& left, PadMode mode, Tensor& out));

}  // namespace ember
