// indexing_kernels.h — the small pieces every backend's indexing kernels share; the slots are in
// kernels/indexing.def (internal header).
//
// Index tensors reach kernels as contiguous int64 whose values the front function has checked
// with index_check_kernel (kernels/index_check.def). On the CPU that check has raised before any
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

// Throws IndexError, naming op, the first offending value and `what` is indexed, unless every
// value of idx (contiguous int64) lies in [0, size), or in [-size, size) when negative values
// wrap. Every op that takes indices checks them here (defined in ops/indexing.cpp).
void check_index_values(const char* op, const Tensor& idx, int64_t size, bool wrap,
                        const std::string& what);

}  // namespace ember
