// masking_kernels.h — kernel tables of the masking family (nonzero, masked_select, index_put).
// index_put's accumulating form needs no table of its own: it is scatter_add_kernel over a flat
// view (see ops/masking.cpp).
#pragma once
#include "dispatch.h"
#include "ember/tensor.h"

namespace ember {

// x: any shape and strides, any dtype -> int64 [n, x.dim()], contiguous: the coordinates of the
// nonzero elements in row-major order. The kernel allocates the result (n depends on the data).
EMBER_KERNEL(nonzero_kernel, Tensor(const Tensor& x));

// x, mask (bool) of one shape, any strides (broadcast views too) -> [n] of x's dtype, contiguous:
// x's elements where mask is true, row-major. The kernel allocates the result.
EMBER_KERNEL(masked_select_kernel, Tensor(const Tensor& x, const Tensor& mask));

// flat[offsets[i]] = values[i] for every i: flat is 1-d with stride 1; offsets contiguous int64
// [n], every value in [0, flat.numel()); values contiguous [n] of flat's dtype. Repeated offsets:
// the last i wins on the CPU, any one on CUDA.
EMBER_KERNEL(put_kernel, void(const Tensor& flat, const Tensor& offsets, const Tensor& values));

}  // namespace ember
