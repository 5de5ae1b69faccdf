// The finite-difference checker on a function whose gradients are known to be right.
#include "gradcheck.h"

namespace ad = ember::autodiff;

TEST(GradCheck, AcceptsTanhOfProduct) {
  auto f = [](const std::vector<ad::Variable>& v) { return ad::tanh(v[0] * v[1]) * v[0]; };
  // A transposed view: the analytic path sees non-contiguous strides.
  ember::Tensor x = gradcheck::random({3, 2}, 1).t();
  ember::Tensor w = gradcheck::random({3}, 2);
  gradcheck::check_grad(f, {x, w});
  gradcheck::check_grad_grad(f, {x, w});
}
