// autocast.h — mixed precision: inside an autocast region, eager ops choose their own dtype.
//
// While autocast is on for a device type, every op run on Variables of that device first casts
// its floating inputs by the op's cast policy (autocast_policy): matrix products (matmul, linear,
// conv2d, attention) to the region's low dtype (bfloat16 or float16); ops that lose accuracy in
// a low dtype (softmax, reductions, norms, losses, exp/log/pow) to float32; ops that combine
// several inputs (cat, stack) to the widest input dtype; every other op runs in the dtype it is
// given. Cross entropy is the one exception to "cast to float32": its kernels already read
// float16/bfloat16 logits into float32 arithmetic, so it reads them as they are and returns a
// float32 loss (the attribute float32_result), with the same value, and a gradient in the logits'
// dtype, which is what the cast's gradient rule would have rounded it to. For a GPT's
// [tokens, vocabulary] logits that spares two casts of the largest tensor of the step.
// Each cast is an ordinary recorded to_dtype op, so it is a node of the recorded graph
// (`graph_str()` shows it), and its gradient rule converts the gradient back: backward runs in
// the dtypes forward chose. Backward itself is never autocast.
//
// The state is per thread and per device type, as in PyTorch:
//   {
//     AutocastGuard low(DeviceType::CPU, DType::BFloat16);
//     Variable y = linear(x, w);           // bfloat16
//     Variable p = softmax(y, -1);          // float32
//     {
//       AutocastGuard off(DeviceType::CPU, DType::BFloat16, /*enabled=*/false);
//       Variable z = matmul(x, w2);         // the inputs' dtype again
//     }
//   }
#pragma once
#include <string>
#include <vector>

#include "ember/autodiff/op.h"
#include "ember/device.h"
#include "ember/dtype.h"

namespace ember::autodiff {

class Variable;

// What autocast does to an op's floating inputs (float64 inputs are never changed).
enum class CastPolicy {
  Keep,     // run in the dtypes given
  Lower,    // to the region's low dtype: the matrix products
  Float32,  // to float32: softmax, reductions, norms, losses, exp/log/pow
  Widest,   // to the widest floating dtype among the inputs: cat, stack
  // float16/bfloat16 inputs kept, math and result in float32 (attribute float32_result): cross
  // entropy. Inputs of mixed dtypes are cast to float32, as Float32 does.
  Float32Math,
};
CastPolicy autocast_policy(const std::string& op);
// "keep", "lower", "float32", "widest", "float32_math"
const char* cast_policy_name(CastPolicy policy);

// One device type's autocast state on the calling thread.
struct AutocastState {
  bool enabled = false;
  DType dtype = DType::BFloat16;  // the low dtype: BFloat16 or Float16
};
AutocastState autocast_state(DeviceType type);
// DTypeError naming autocast when dtype is not BFloat16 or Float16.
void set_autocast_state(DeviceType type, AutocastState state);
// Whether autocast is on for any device type on this thread (one load: what apply() asks first).
bool autocast_any_enabled();

// Sets a device type's state for its lifetime and restores the previous one: nestable, and
// enabled=false inside an enabled region turns autocast off there.
class AutocastGuard {
 public:
  explicit AutocastGuard(DeviceType type, DType dtype = DType::BFloat16, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType type_;
  AutocastState previous_;
};

// Turns autocast off on every device type for its lifetime (backward runs inside one, so the
// ops of a create_graph backward keep the dtypes forward chose).
class AutocastSuspend {
 public:
  AutocastSuspend();
  ~AutocastSuspend();
  AutocastSuspend(const AutocastSuspend&) = delete;
  AutocastSuspend& operator=(const AutocastSuspend&) = delete;

 private:
  std::vector<AutocastState> previous_;
};

// The inputs `op` runs on under the current autocast state: each floating input the policy
// changes replaced by a recorded to_dtype of it, the others (and undefined ones) as given. A
// Float32Math op that keeps its inputs gets float32_result = 1 in `attrs`.
std::vector<Variable> autocast_inputs(const OpDef& op, const std::vector<Variable>& inputs,
                                      Attrs& attrs);

}  // namespace ember::autodiff
