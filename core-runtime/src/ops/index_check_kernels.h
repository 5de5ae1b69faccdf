// index_check_kernels.h — the range check of index tensors (internal header).
#pragma once
#include <cstdint>

#include "dispatch.h"
#include "ember/tensor.h"
#include "ops/deferred_error.h"

namespace ember {

// Raises error (with the offending value) unless every value of index (contiguous int64) lies in
// [0, limit). The CPU raises at once; CUDA never waits for the device: the check kernel records a
// bad value in the device's error flag, the next synchronising point raises error, and the
// kernels that read the index skip the bad elements meanwhile.
EMBER_KERNEL(index_check_kernel,
             void(const Tensor& index, int64_t limit, const DeferredError& error));

}  // namespace ember
