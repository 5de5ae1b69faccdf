// core_kernels.h — kernel tables of the Tensor's own methods (internal header).
#pragma once
#include "dispatch.h"
#include "ember/tensor.h"

namespace ember {

// dst[i] = convert(src[i]); both on one device and of one shape (src may be a broadcast view),
// dtypes may differ. Cross-device copies go through Backend::copy_bytes first.
EMBER_KERNEL(copy_kernel, void(const Tensor& src, Tensor& dst));
// dst[i] = value converted to dst's dtype.
EMBER_KERNEL(fill_kernel, void(Tensor& dst, double value));

}  // namespace ember
