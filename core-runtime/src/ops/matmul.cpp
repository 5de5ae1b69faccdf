// matmul.cpp — front functions of matmul and linear. NumPy's cases (1-D operands, batch
// broadcasting) are all reduced here to one batched GEMM on 3-D views, so a kernel only ever sees
// out[p] = op(a[p]) @ op(b[p]).
#include "ember/ops/matmul.h"

#include <algorithm>
#include <string>

#include "ember/ops/elementwise.h"
#include "kernels.h"
#include "ops/checks.h"
#include "ops/matmul_kernels.h"
#include "ops/out.h"

namespace ember {
namespace {

// Views x: [batch, rows, cols] in the layout gemm_kernel promises to read (see
// matmul_kernels.h). Row-major slices are used as they are; column-major ones (x.transpose(-1, -2)
// of a contiguous tensor, say) are read transposed by setting `trans`, so neither is copied. Only
// other layouts (a broadcast row, a step in the last dim, ...) are copied.
Tensor gemm_operand(const Tensor& x, bool& trans) {
  const int64_t rows = x.size(1), cols = x.size(2);
  // A size-1 dim never moves the pointer, so its stride may be anything; treat it as fitting.
  const int64_t batch_stride = x.size(0) == 1 ? 0 : x.stride(0);
  auto fits = [&](int64_t r, int64_t c, int64_t row_stride, int64_t col_stride) {
    return (c <= 1 || col_stride == 1) && (r <= 1 || row_stride >= std::max<int64_t>(1, c));
  };
  auto leading = [](int64_t r, int64_t c, int64_t row_stride) {
    return r <= 1 ? std::max<int64_t>(1, c) : row_stride;
  };
  if (fits(rows, cols, x.stride(1), x.stride(2))) {
    trans = false;
    return x.as_strided(x.shape(), {batch_stride, leading(rows, cols, x.stride(1)), 1}, x.offset());
  }
  if (fits(cols, rows, x.stride(2), x.stride(1))) {
    trans = true;  // stored as [batch, cols, rows] row-major: the kernel reads it transposed
    return x.as_strided({x.size(0), cols, rows},
                        {batch_stride, leading(cols, rows, x.stride(2)), 1}, x.offset());
  }
  trans = false;
  return x.contiguous();
}

// out = op(a) @ op(b) (+ out when accumulating) for 3-D a: [batch, m, k], b: [batch, k, n]
// (batch may be 1 on either side as a stride-0 broadcast) and out: [batch, m, n].
void batched_gemm(const Tensor& a, const Tensor& b, Tensor& out, bool accumulate, MatmulAlgo algo) {
  GemmFlags flags;
  flags.accumulate = accumulate;
  flags.algo = algo;
  Tensor av = gemm_operand(a, flags.trans_a);
  Tensor bv = gemm_operand(b, flags.trans_b);
  gemm_kernel(out.device())(av, bv, out, flags);
}

void check_matmul_dtypes(const char* op, const Tensor& a, const Tensor& b, const char* an,
                         const char* bn) {
  if (a.dtype() != b.dtype()) {
    // Cast the integer operand to the floating one's dtype (an int64 input to a float weight
    // wants x.to(Float32), not the weight cast to int64); otherwise b to a's.
    const bool cast_a = !is_floating(a.dtype()) && is_floating(b.dtype());
    const std::string name = cast_a ? an : bn;
    throw DTypeError(op, operands({{an, a}, {bn, b}}) +
                             "; both operands must have one dtype, cast " + name + " with " + name +
                             ".to(" + dtype_cpp(cast_a ? b.dtype() : a.dtype()) + ") first");
  }
  if (a.dtype() == DType::Bool)
    throw DTypeError(op, operands({{an, a}, {bn, b}}) +
                             "; bool is not supported, cast with .to(DType::Float32) first");
}

Shape batch_dims(const Tensor& x) { return Shape(x.shape().begin(), x.shape().end() - 2); }

// given: the _out form's out, or null to allocate the result (as in run_linear). The GEMM kernel
// writes a contiguous output (see write_contiguous).
Tensor run_matmul(const Tensor& a, const Tensor& b, MatmulAlgo algo, const Tensor* given) {
  const char* op = "matmul";
  check_same_device(op, {{"a", a}, {"b", b}});
  check_matmul_dtypes(op, a, b, "a", "b");
  if (a.dim() == 0 || b.dim() == 0)
    throw ShapeError(op, operands({{"a", a}, {"b", b}}) +
                             "; both operands need at least 1 dim, use mul() for a scalar");
  // NumPy's rule for 1-D operands: a vector a is a row [1, k], a vector b a column [k, 1]; the
  // added dim is dropped from the result.
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;  // [*A, m, k]
  const Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;  // [*B, k, n]
  const int64_t m = a2.size(-2), k = a2.size(-1), n = b2.size(-1);
  if (b2.size(-2) != k) {
    const std::string b_dim = b.dim() == 1 ? "b.shape[0]" : "b.shape[-2]";
    throw ShapeError(op, operands({{"a", a}, {"b", b}}) + "; a.shape[-1] (" + std::to_string(k) +
                             ") must equal " + b_dim + " (" + std::to_string(b2.size(-2)) + ")");
  }
  Shape batch;
  try {
    batch = broadcast_shapes(batch_dims(a2), batch_dims(b2), op);
  } catch (const ShapeError&) {
    throw ShapeError(op, operands({{"a", a}, {"b", b}}) + "; the batch dims " +
                             shape_str(batch_dims(a2)) + " and " + shape_str(batch_dims(b2)) +
                             " must broadcast (each pair equal, or one of them 1)");
  }
  const int64_t count = shape_numel(batch);
  Shape out_shape = batch;
  if (a.dim() > 1) out_shape.push_back(m);
  if (b.dim() > 1) out_shape.push_back(n);
  Tensor out = output(op, given, out_shape, a.dtype(), a.device(), {{"a", a}, {"b", b}});
  write_contiguous(op, out, [&](Tensor& dst) {
    if (b2.dim() == 2 && a2.dim() > 2) {
      // [*A, m, k] @ [k, n]: one GEMM with (prod(A) * m) rows beats prod(A) small ones.
      Tensor a3 = a2.reshape({1, count * m, k});
      Tensor out3 = dst.view({1, count * m, n});
      batched_gemm(a3, b2.unsqueeze(0), out3, false, algo);
      return;
    }
    // Broadcast batch dims are stride-0 views; reshape keeps them views whenever it can.
    Shape a_shape = batch, b_shape = batch;
    a_shape.insert(a_shape.end(), {m, k});
    b_shape.insert(b_shape.end(), {k, n});
    Tensor a3 = a2.expand(a_shape).reshape({count, m, k});
    Tensor b3 = b2.expand(b_shape).reshape({count, k, n});
    Tensor out3 = dst.view({count, m, n});
    batched_gemm(a3, b3, out3, false, algo);
  });
  return out;
}

// linear's checks of its operands, under the name `op` (linear or linear_act); the result's shape
// [*, out_features].
Shape linear_shape(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const bool has_bias = bias.defined();
  if (has_bias) check_same_device(op, {{"x", x}, {"weight", weight}, {"bias", bias}});
  else check_same_device(op, {{"x", x}, {"weight", weight}});
  check_matmul_dtypes(op, x, weight, "x", "weight");
  auto all = [&] {
    return has_bias ? operands({{"x", x}, {"weight", weight}, {"bias", bias}})
                    : operands({{"x", x}, {"weight", weight}});
  };
  if (has_bias && bias.dtype() != x.dtype())
    throw DTypeError(op, all() + "; bias must have x's dtype, cast it with .to(" +
                             dtype_name(x.dtype()) + ")");
  if (weight.dim() != 2)
    throw ShapeError(op, all() + "; weight must be 2-D [out_features, in_features]");
  const int64_t out_features = weight.size(0), in_features = weight.size(1);
  if (x.dim() < 1 || x.size(-1) != in_features)
    throw ShapeError(op, all() + "; x.shape[-1] must equal weight.shape[1] (" +
                             std::to_string(in_features) + ")");
  if (has_bias && bias.shape() != Shape{out_features})
    throw ShapeError(op, all() + "; bias must be [" + std::to_string(out_features) +
                             "] (weight.shape[0])");
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  out_shape.push_back(out_features);
  return out_shape;
}

// out3 [1, rows, out] = x3 [1, rows, in] @ w3 [1, in, out] + bias. The bias is added by the
// GEMM's epilogue where the backend has one (cuBLASLt's BIAS); otherwise it goes in first and the
// GEMM adds onto it (BLAS beta = 1), no separate pass.
void gemm_with_bias(Tensor& out3, const Tensor& x3, const Tensor& w3, const Tensor& bias) {
  GemmFlags flags;
  const Tensor a = gemm_operand(x3, flags.trans_a), b = gemm_operand(w3, flags.trans_b);
  Tensor none;
  if (bias.defined() && x3.size(2) > 0 && out3.numel() > 0 &&
      gemm_act_kernel(out3.device())(a, b, bias, out3, none, flags, GemmActivation::None))
    return;
  if (bias.defined()) out3.copy_(bias);
  flags.accumulate = bias.defined();
  gemm_kernel(out3.device())(a, b, out3, flags);
}

Tensor run_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor* given) {
  const char* op = "linear";
  const Shape out_shape = linear_shape(op, x, weight, bias);
  const int64_t out_features = weight.size(0), in_features = weight.size(1);
  const int64_t rows = shape_numel(Shape(out_shape.begin(), out_shape.end() - 1));
  Tensor out = output(op, given, out_shape, x.dtype(), x.device(),
                      {{"x", x}, {"weight", weight}, {"bias", bias}});
  write_contiguous(op, out, [&](Tensor& dst) {
    Tensor out3 = dst.view({1, rows, out_features});
    Tensor x3 = x.reshape({1, rows, in_features});
    Tensor w3 = weight.t().unsqueeze(0);  // [1, in, out], column-major: read transposed, not copied
    gemm_with_bias(out3, x3, w3, bias);
  });
  return out;
}

GemmActivation parse_activation(const char* op, const std::string& activation) {
  if (activation == "relu") return GemmActivation::Relu;
  if (activation == "gelu") return GemmActivation::Gelu;
  if (activation == "gelu_tanh") return GemmActivation::GeluTanh;
  throw ValueError(op, "activation is \"" + activation +
                           "\"; expected \"relu\", \"gelu\" or \"gelu_tanh\"");
}

// given_output/given_pre: the _out form's outputs (given_pre undefined: pre not kept), or null to
// allocate them (pre when keep_pre).
LinearActResult run_linear_act(const Tensor& x, const Tensor& weight, const Tensor& bias,
                               const std::string& activation, bool keep_pre,
                               const Tensor* given_output, const Tensor* given_pre) {
  const char* op = "linear_act";
  const GemmActivation act = parse_activation(op, activation);
  const Shape shape = linear_shape(op, x, weight, bias);
  if (!is_floating(x.dtype()))
    throw DTypeError(op, operands({{"x", x}, {"weight", weight}}) +
                             "; the activation needs a floating dtype, cast x, weight and bias "
                             "with .to(DType::Float32) first");
  const std::initializer_list<Named> inputs = {{"x", x}, {"weight", weight}, {"bias", bias}};
  LinearActResult r;
  r.output = output(op, given_output, shape, x.dtype(), x.device(), inputs, "output");
  if (given_pre ? given_pre->defined() : keep_pre) {
    r.pre = output(op, given_pre, shape, x.dtype(), x.device(), inputs, "pre");
    check_outs_apart(op, {{"output", r.output}, {"pre", r.pre}});
  }
  if (r.output.numel() == 0) return r;

  const int64_t in_features = weight.size(1), out_features = weight.size(0);
  const int64_t rows = shape_numel(Shape(shape.begin(), shape.end() - 1));
  const Tensor x3 = x.reshape({1, rows, in_features});  // a copy only for layouts a view cannot be
  const Tensor w3 = weight.t().unsqueeze(0);            // [1, in, out], read transposed
  // The backend's GEMM with the activation in its epilogue, where it has one: contiguous
  // outputs, a non-empty sum (k = 0 is linear's bias alone).
  if (in_features > 0 && r.output.is_contiguous() && (!r.pre.defined() || r.pre.is_contiguous())) {
    GemmFlags flags;
    const Tensor a = gemm_operand(x3, flags.trans_a), b = gemm_operand(w3, flags.trans_b);
    Tensor out3 = r.output.view({1, rows, out_features});
    Tensor pre3 = r.pre.defined() ? r.pre.view({1, rows, out_features}) : Tensor();
    if (gemm_act_kernel(x.device())(a, b, bias, out3, pre3, flags, act)) {
      r.output.bump_version();
      if (r.pre.defined()) r.pre.bump_version();
      return r;
    }
  }
  // Otherwise linear's GEMM, then the library's activation kernel over its result: in place over
  // the output (each element is read before it is written), or from pre into the output.
  const Tensor& linear_result = r.pre.defined() ? r.pre : r.output;
  write_contiguous(op, linear_result, [&](Tensor& dst) {
    Tensor out3 = dst.view({1, rows, out_features});
    gemm_with_bias(out3, x3, w3, bias);
  });
  if (act == GemmActivation::Relu) relu_out(r.output, linear_result);
  else gelu_out(r.output, linear_result, act == GemmActivation::Gelu ? "none" : "tanh");
  return r;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, MatmulAlgo algo) {
  return run_matmul(a, b, algo, nullptr);
}
const Tensor& matmul_out(const Tensor& out, const Tensor& a, const Tensor& b, MatmulAlgo algo) {
  run_matmul(a, b, algo, &out);
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  return run_linear(x, weight, bias, nullptr);
}
const Tensor& linear_out(const Tensor& out, const Tensor& x, const Tensor& weight,
                         const Tensor& bias) {
  run_linear(x, weight, bias, &out);
  return out;
}

LinearActResult linear_act(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const std::string& activation, bool keep_pre) {
  return run_linear_act(x, weight, bias, activation, keep_pre, nullptr, nullptr);
}
LinearActResult linear_act_out(const Tensor& output, const Tensor& pre, const Tensor& x,
                               const Tensor& weight, const Tensor& bias,
                               const std::string& activation) {
  return run_linear_act(x, weight, bias, activation, pre.defined(), &output, &pre);
}

}  // namespace ember
