// out_arg.h — an op's optional output, for the ops declared by a schema (.def) file: `exp(x)`
// allocates the result and `exp(x, out)` writes it into out and returns out (what out must be is
// said at the top of each family's header). It stands for the older spelling `exp_out(out, x)`,
// which stays.
#pragma once
#include "ember/tensor.h"

namespace ember {

class OutArg {
 public:
  OutArg() = default;                         // no out: the op allocates its result
  OutArg(const Tensor& out) : out_(&out) {}   // NOLINT: implicit, so that exp(x, out) reads well
  const Tensor* get() const { return out_; }  // null when none was given

 private:
  const Tensor* out_ = nullptr;  // the caller's tensor, alive for the call
};

}  // namespace ember
