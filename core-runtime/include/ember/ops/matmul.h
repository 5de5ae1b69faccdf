// matmul.h — matrix products: matmul with NumPy semantics, linear (x @ weight^T + bias), and
// linear followed by an activation in one call (linear_act).
#pragma once
#include <string>

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

// linear then an activation, as one op: output = activation(x @ weight^T + bias), where
// activation is "relu" (relu), "gelu" (gelu(., "none"): the erf form) or "gelu_tanh"
// (gelu(., "tanh")). x, weight and bias as for linear, of a floating dtype (DTypeError otherwise);
// another activation is a ValueError naming it. With keep_pre the result also holds linear's
// value, the activation's input (gelu's gradient reads it; relu's reads the output).
//   CPU: the library's GEMM, then the library's activation kernel over the output in place, so
//        the numbers are those of linear then relu/gelu, bit for bit.
//   CUDA: one cuBLASLt call whose epilogue adds the bias and applies relu or gelu (tanh form),
//        writing pre beside the output for gelu_tanh (GELU_AUX) when it is kept: float32, float16
//        and bfloat16. cuBLASLt's gelu is the tanh formula in its own float32 code (its tanh may
//        be a fast approximation: close to the library's kernel, not its bits). Exact "gelu",
//        float64, relu with pre kept (cuBLASLt's relu aux is a bit mask, not the values), a pre
//        whose row length is not a multiple of 8 (cuBLASLt's rule for the aux matrix),
//        non-contiguous outputs, a bias or pre view not 16-byte aligned, or operands no cuBLASLt
//        algorithm takes run the GEMM and then the library's activation kernel instead.
struct LinearActResult {
  Tensor output;  // [*, out_features]: activation(pre)
  Tensor pre;     // [*, out_features]: x @ weight^T + bias; undefined unless kept
};
LinearActResult linear_act(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const std::string& activation, bool keep_pre = false);

// ---- outputs the caller provides ----
// matmul and linear write their result into `out` and return it: out must have exactly the
// result's shape, dtype and device (ShapeError, DTypeError, DeviceError; never resized or cast)
// and must not overlap an input (ValueError). A non-contiguous out receives a copy of the GEMM's
// contiguous result; a contiguous one is written directly.
const Tensor& matmul_out(const Tensor& out, const Tensor& a, const Tensor& b,
                         MatmulAlgo algo = MatmulAlgo::Default);
const Tensor& linear_out(const Tensor& out, const Tensor& x, const Tensor& weight,
                         const Tensor& bias = Tensor());
// linear_act into `output` and, when defined, `pre` (which is then kept); the two must not
// overlap each other or an input (ValueError).
LinearActResult linear_act_out(const Tensor& output, const Tensor& pre, const Tensor& x,
                               const Tensor& weight, const Tensor& bias,
                               const std::string& activation);

}  // namespace ember
