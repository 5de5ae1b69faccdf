// run_fused.cpp — running a fusion group: as one generated kernel, or op by op with the library's
// kernels when the kernel cannot be built (see codegen.h).
#include <cmath>
#include <optional>

#include "ember/autodiff/compile/codegen.h"
#include "ember/error.h"
#include "ember/jit.h"
#include "ember/ops/creation.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/reduction.h"

namespace ember::autodiff::compile {
namespace {

// The inputs must be what the kernel was rendered for: its source has their strides built in.
void check_inputs(const FusionGroup& group, const std::vector<Tensor>& inputs, const char* op) {
  if (inputs.size() != group.inputs().size())
    throw ValueError(op, "got " + std::to_string(inputs.size()) + " inputs, the group has " +
                             std::to_string(group.inputs().size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const FusedInput& want = group.inputs()[i];
    const Tensor& got = inputs[i];
    const std::string which = "input " + std::to_string(i);
    if (got.dtype() != want.dtype)
      throw DTypeError(op, which + " is " + dtype_name(got.dtype()) + ", the group was built for " +
                               dtype_name(want.dtype));
    if (got.shape() != want.shape || got.strides() != want.strides)
      throw ShapeError(op, which + " has shape " + shape_str(got.shape()) + " and strides " +
                               shape_str(got.strides()) + ", the group was built for " +
                               shape_str(want.shape) + " and " + shape_str(want.strides) +
                               "; build a group for these inputs");
    if (got.device() != inputs[0].device())
      throw DeviceError(op, which + " is on " + got.device().str() + ", input 0 on " +
                                inputs[0].device().str() + "; move them to one device");
  }
}

Tensor unary(FusedOp op, const Tensor& x) {
  switch (op) {
    case FusedOp::Neg:
      return neg(x);
    case FusedOp::Abs:
      return abs(x);
    case FusedOp::Relu:
      return relu(x);
    case FusedOp::Exp:
      return exp(x);
    case FusedOp::Log:
      return log(x);
    case FusedOp::Sqrt:
      return sqrt(x);
    case FusedOp::Rsqrt:
      return rsqrt(x);
    case FusedOp::Sin:
      return sin(x);
    case FusedOp::Cos:
      return cos(x);
    case FusedOp::Tanh:
      return tanh(x);
    case FusedOp::Sigmoid:
      return sigmoid(x);
    case FusedOp::Gelu:
      return gelu(x, "none");
    case FusedOp::GeluTanh:
      return gelu(x, "tanh");
    case FusedOp::Silu:
      return silu(x);
    case FusedOp::Erf:
      return erf(x);
    case FusedOp::Reciprocal:
      return reciprocal(x);
    default:
      break;
  }
  throw NotSupportedError("run_unfused", std::string("no unary op ") + fused_op_name(op));
}

Tensor binary(FusedOp op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case FusedOp::Add:
      return add(a, b);
    case FusedOp::Sub:
      return sub(a, b);
    case FusedOp::Mul:
      return mul(a, b);
    case FusedOp::Div:
      return div(a, b);
    case FusedOp::Maximum:
      return maximum(a, b);
    case FusedOp::Minimum:
      return minimum(a, b);
    case FusedOp::Eq:
      return eq(a, b);
    case FusedOp::Ne:
      return ne(a, b);
    case FusedOp::Lt:
      return lt(a, b);
    case FusedOp::Le:
      return le(a, b);
    case FusedOp::Gt:
      return gt(a, b);
    case FusedOp::Ge:
      return ge(a, b);
    case FusedOp::ReluBackward:
      return relu_backward(a, b);
    case FusedOp::GeluBackward:
      return gelu_backward(a, b, "none");
    case FusedOp::GeluTanhBackward:
      return gelu_backward(a, b, "tanh");
    case FusedOp::SiluBackward:
      return silu_backward(a, b);
    case FusedOp::SigmoidBackward:
      return sigmoid_backward(a, b);
    case FusedOp::TanhBackward:
      return tanh_backward(a, b);
    default:
      break;
  }
  throw NotSupportedError("run_unfused", std::string("no binary op ") + fused_op_name(op));
}

std::optional<double> bound(double value) {
  return std::isinf(value) ? std::nullopt : std::optional<double>(value);
}

}  // namespace

std::vector<Tensor> run_unfused_outputs(const FusionGroup& group,
                                        const std::vector<Tensor>& inputs) {
  check_inputs(group, inputs, "run_unfused");
  const Device device = inputs.empty() ? Device() : inputs[0].device();
  std::vector<Tensor> values;
  for (const FusedNode& n : group.nodes()) {
    auto arg = [&](size_t i) -> const Tensor& { return values[size_t(n.args[i])]; };
    switch (n.op) {
      case FusedOp::Input:
        values.push_back(inputs[size_t(n.input)]);
        break;
      case FusedOp::Constant:
        values.push_back(full({}, n.scalars[0], n.dtype, device));
        break;
      case FusedOp::Cast:
        values.push_back(arg(0).to(n.dtype));
        break;
      case FusedOp::Where:
        values.push_back(where(arg(0), arg(1), arg(2)));
        break;
      case FusedOp::Clamp:
        // No bound on either side leaves x as it is (the library's clamp asks for one).
        if (std::isinf(n.scalars[0]) && std::isinf(n.scalars[1]) && n.scalars[0] < n.scalars[1])
          values.push_back(arg(0));
        else values.push_back(clamp(arg(0), bound(n.scalars[0]), bound(n.scalars[1])));
        break;
      default:
        values.push_back(fused_op_arity(n.op) == 1 ? unary(n.op, arg(0))
                                                   : binary(n.op, arg(0), arg(1)));
    }
  }
  if (group.reduction() == FusedReduction::None) {
    std::vector<Tensor> outs;
    for (int o : group.outputs()) outs.push_back(values[size_t(o)].expand(group.shape()).clone());
    return outs;
  }
  // The reduction of a contiguous value, as the unfused program reduces its elementwise result.
  const Tensor full = values.back().expand(group.shape()).contiguous();
  std::vector<int64_t> dims;
  for (int d = 0; d < group.reduced_dims(); ++d) dims.push_back(-1 - d);
  std::vector<Tensor> outs;
  switch (group.reduction()) {
    case FusedReduction::Sum:
      outs.push_back(sum(full, dims, group.keepdim()));
      break;
    case FusedReduction::Mean:
      outs.push_back(mean(full, dims, group.keepdim()));
      break;
    default:
      outs.push_back(amax(full, dims, group.keepdim()));
  }
  const std::vector<int> written = group.outputs();
  for (size_t k = 1; k < written.size(); ++k)
    outs.push_back(values[size_t(written[k])].expand(group.shape()).clone());
  return outs;
}

Tensor run_unfused(const FusionGroup& group, const std::vector<Tensor>& inputs) {
  return run_unfused_outputs(group, inputs)[0];
}

FusedRun run_fused(const FusionGroup& group, const std::vector<Tensor>& inputs) {
  check_inputs(group, inputs, "run_fused");
  const Device device = inputs.empty() ? Device() : inputs[0].device();
  FusedRun run;
  auto fall_back = [&](const std::string& reason) {
    jit::warn_fallback_once("a fused kernel", reason);
    run.outs = run_unfused_outputs(group, inputs);
    run.out = run.outs[0];
    run.fused = false;
    run.reason = reason;
    return run;
  };
  if (!jit::enabled()) return fall_back("EMBER_FUSION=0 turns fused kernels off");
  const Target target = device.is_cuda() ? Target::Cuda : Target::Cpu;
  const RenderedKernel kernel = render(group, target);
  const size_t outputs = group.outputs().size();
  for (size_t k = 0; k < outputs; ++k)
    run.outs.push_back(
        empty(k == 0 ? group.out_shape() : group.shape(), group.output_dtype(k), device));
  run.out = run.outs[0];
  run.fused = true;
  if (kernel.items == 0 || run.out.numel() == 0) return run;

  jit::CudaPointers pointers{};  // the outputs, then the inputs (render.cpp)
  for (size_t k = 0; k < outputs; ++k)
    pointers.data[k] = static_cast<char*>(run.outs[k].data_ptr());
  for (size_t i = 0; i < inputs.size(); ++i)
    pointers.data[outputs + i] = static_cast<char*>(inputs[i].data_ptr());
  if (target == Target::Cpu) {
    const jit::CpuCompile compiled = jit::compile_cpu(kernel.source, kernel.entry);
    if (compiled.status != jit::Status::Ok) return fall_back(compiled.reason);
    run.from_cache = compiled.from_cache;
    compiled.kernel->run(pointers.data, kernel.items, kernel.cost_per_item);
  } else {
    const jit::CudaCompile compiled = jit::compile_cuda(kernel.source, /*sm=*/0);
    if (compiled.status != jit::Status::Ok) return fall_back(compiled.reason);
    run.from_cache = compiled.from_cache;
    jit::launch_cuda(jit::load_cuda(compiled.image, kernel.entry), device.index, pointers,
                     kernel.items);
  }
  return run;
}

}  // namespace ember::autodiff::compile
