// matmul.h — matrix products: matmul with NumPy semantics, and linear (x @ weight^T + bias).
#pragma once
#include "ember/tensor.h"

namespace ember {

// Which GEMM implementation runs. Default is the fast library one (BLAS on the CPU, cuBLAS on
// CUDA). Tiled is the readable hand-written kernel kept for teaching and comparison: on CUDA a
// shared-memory tiled kernel, on the CPU a cache-blocked triple loop (src/cpu/matmul.cpp).
enum class MatmulAlgo { Default, Tiled };

// Matrix product with numpy.matmul / torch.matmul semantics. a and b have one dtype (any numeric
// dtype; float16/bfloat16 accumulate in float32, integers in int64) and one device.
//   a: [k]           b: [k]           -> []            dot product
//   a: [m, k]        b: [k, n]        -> [m, n]
//   a: [k]           b: [*B, k, n]    -> [*B, n]       a is used as [1, k], then the 1 dropped
//   a: [*A, m, k]    b: [k]           -> [*A, m]       b is used as [k, 1], then the 1 dropped
//   a: [*A, m, k]    b: [*B, k, n]    -> [*broadcast(A, B), m, n]   batch dims broadcast
// Throws ShapeError when the inner sizes differ or the batch dims do not broadcast, DTypeError for
// mixed or bool dtypes, DeviceError for mixed devices.
Tensor matmul(const Tensor& a, const Tensor& b, MatmulAlgo algo = MatmulAlgo::Default);

// A fully connected layer, as torch.nn.functional.linear:
//   x: [*, in], weight: [out, in], bias: [out] (optional) -> [*, out] = x @ weight^T + bias.
// weight^T is never copied: the GEMM reads weight transposed.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// ---- outputs the caller provides ----
// matmul and linear write their result into `out` and return it: out must have exactly the
// result's shape, dtype and device (ShapeError, DTypeError, DeviceError; never resized or cast)
// and must not overlap an input (ValueError). A non-contiguous out receives a copy of the GEMM's
// contiguous result; a contiguous one is written directly.
const Tensor& matmul_out(const Tensor& out, const Tensor& a, const Tensor& b,
                         MatmulAlgo algo = MatmulAlgo::Default);
const Tensor& linear_out(const Tensor& out, const Tensor& x, const Tensor& weight,
                         const Tensor& bias = Tensor());

}  // namespace ember
