// autocast.cpp — the per-thread autocast state and the cast policy of each op (autocast.h).
#include "ember/autodiff/autocast.h"

#include <unordered_map>

#include "ember/autodiff/ops.h"
#include "ember/autodiff/variable.h"

namespace ember::autodiff {

namespace {

thread_local AutocastState states[kNumDeviceTypes];
thread_local int enabled_count = 0;  // how many device types have autocast on

// The lists, after PyTorch's autocast op lists (aten/src/ATen/autocast_mode.cpp): the ops that
// are fast and safe in a low dtype, and those whose accuracy needs float32. An op missing from
// both runs in the dtypes it is given (elementwise ops then promote as usual: a float32
// residual plus a bfloat16 product is float32).
const std::unordered_map<std::string, CastPolicy>& policies() {
  static const std::unordered_map<std::string, CastPolicy> table = [] {
    std::unordered_map<std::string, CastPolicy> t;
    for (const char* op :
         {"matmul", "linear", "linear_act", "conv2d", "scaled_dot_product_attention"})
      t[op] = CastPolicy::Lower;
    for (const char* op : {// pointwise functions whose low-precision results lose too much
                           "exp", "log", "log1p", "rsqrt", "reciprocal", "pow", "pow_scalar",
                           "rpow_scalar", "softplus",
                           // softmax and reductions
                           "softmax", "log_softmax", "sum", "mean", "prod", "var", "std", "norm",
                           "logsumexp", "cumsum", "cumprod",
                           // norms and resampling
                           "layer_norm", "batch_norm", "group_norm", "interpolate",
                           // losses
                           "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy_with_logits"})
      t[op] = CastPolicy::Float32;
    t["cross_entropy"] = CastPolicy::Float32Math;
    for (const char* op : {"cat", "stack"}) t[op] = CastPolicy::Widest;
    return t;
  }();
  return table;
}

bool castable(DType t) { return is_floating(t) && t != DType::Float64; }

// Whether every floating input is of one float16/bfloat16 dtype (a Float32Math op then keeps them).
bool one_low_dtype(const std::vector<Variable>& inputs) {
  DType low = DType::Float32;
  for (const Variable& v : inputs) {
    if (!v.defined() || !is_floating(v.dtype())) continue;
    const bool is_low = v.dtype() == DType::BFloat16 || v.dtype() == DType::Float16;
    if (!is_low || (low != DType::Float32 && v.dtype() != low)) return false;
    low = v.dtype();
  }
  return low != DType::Float32;
}

}  // namespace

CastPolicy autocast_policy(const std::string& op) {
  const auto& table = policies();
  const auto it = table.find(op);
  return it == table.end() ? CastPolicy::Keep : it->second;
}

const char* cast_policy_name(CastPolicy policy) {
  switch (policy) {
    case CastPolicy::Lower:
      return "lower";
    case CastPolicy::Float32:
      return "float32";
    case CastPolicy::Widest:
      return "widest";
    case CastPolicy::Float32Math:
      return "float32_math";
    default:
      return "keep";
  }
}

AutocastState autocast_state(DeviceType type) { return states[int(type)]; }

void set_autocast_state(DeviceType type, AutocastState state) {
  if (state.dtype != DType::BFloat16 && state.dtype != DType::Float16)
    throw DTypeError("autocast", std::string("dtype ") + dtype_name(state.dtype) +
                                     " is not a low-precision dtype; autocast runs matrix "
                                     "products in bfloat16 or float16, pass one of those");
  AutocastState& s = states[int(type)];
  enabled_count += int(state.enabled) - int(s.enabled);
  s = state;
}

bool autocast_any_enabled() { return enabled_count > 0; }

AutocastGuard::AutocastGuard(DeviceType type, DType dtype, bool enabled)
    : type_(type), previous_(autocast_state(type)) {
  set_autocast_state(type, {enabled, dtype});
}
AutocastGuard::~AutocastGuard() { set_autocast_state(type_, previous_); }

AutocastSuspend::AutocastSuspend() {
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    previous_.push_back(states[t]);
    set_autocast_state(DeviceType(t), {false, states[t].dtype});
  }
}
AutocastSuspend::~AutocastSuspend() {
  for (int t = 0; t < kNumDeviceTypes; ++t) set_autocast_state(DeviceType(t), previous_[size_t(t)]);
}

std::vector<Variable> autocast_inputs(const OpDef& op, const std::vector<Variable>& inputs,
                                      Attrs& attrs) {
  const CastPolicy policy = autocast_policy(op.name);
  if (policy == CastPolicy::Keep) return inputs;
  const Variable* first = nullptr;
  for (const Variable& v : inputs)
    if (v.defined()) {
      first = &v;
      break;
    }
  if (!first) return inputs;
  const AutocastState state = autocast_state(first->device().type);
  if (!state.enabled) return inputs;

  if (policy == CastPolicy::Float32Math && one_low_dtype(inputs)) {
    attrs.set("float32_result", int64_t(1));
    return inputs;
  }
  DType target = state.dtype;
  if (policy == CastPolicy::Float32 || policy == CastPolicy::Float32Math) target = DType::Float32;
  if (policy == CastPolicy::Widest) {
    bool any = false;
    for (const Variable& v : inputs)
      if (v.defined() && is_floating(v.dtype())) {
        target = any ? promote_types(target, v.dtype()) : v.dtype();
        any = true;
      }
    if (!any) return inputs;
  }
  std::vector<Variable> cast;
  cast.reserve(inputs.size());
  for (const Variable& v : inputs) {
    const bool change = v.defined() && castable(v.dtype()) && v.dtype() != target &&
                        (policy == CastPolicy::Widest || castable(target));
    cast.push_back(change ? to(v, target) : v);
  }
  return cast;
}

}  // namespace ember::autodiff
