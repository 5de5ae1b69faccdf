// optimizer_kernels.h — the hyperparameters of the fused optimizer updates and each update's
// formula for one element, written once here and used by every backend; the slots are in
// kernels/optimizer.def (internal header).
//
// A kernel receives `lists`: lists[0] the params, lists[1] the grads, then the state lists in the
// order of the optimizer's public function; all tensors contiguous, of one dtype and device. A
// state list the configuration does not use is empty (and its formula never touches it).
#pragma once
#include <cmath>
#include <vector>

#include "dispatch.h"
#include "ember/half.h"
#include "ember/tensor.h"

namespace ember {

struct SgdHyper {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, first_step, maximize;
};

struct AdamHyper {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled, maximize;
  double step_size;              // lr / (1 - beta1^step)
  double bias_correction2_sqrt;  // sqrt(1 - beta2^step)
};

struct RmspropHyper {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
};

// One element of each update, in the compute type C; p and the state are read and written
// through references. The formulas are those of ember/ops/optimizer.h (and torch.optim).
template <class C> EMBER_HOST_DEVICE inline void sgd_update(C& p, C g, C& buf, const SgdHyper& h) {
  if (h.maximize) g = -g;
  if (h.weight_decay != 0) g += C(h.weight_decay) * p;
  if (h.momentum != 0) {
    buf = h.first_step ? g : C(h.momentum) * buf + C(1 - h.dampening) * g;
    g = h.nesterov ? g + C(h.momentum) * buf : buf;
  }
  p -= C(h.lr) * g;
}

template <class C>
EMBER_HOST_DEVICE inline void adam_update(C& p, C g, C& m, C& v, const AdamHyper& h) {
  if (h.maximize) g = -g;
  if (h.weight_decay != 0) {
    if (h.decoupled) p *= C(1 - h.lr * h.weight_decay);
    else g += C(h.weight_decay) * p;
  }
  m += C(1 - h.beta1) * (g - m);  // = beta1 * m + (1 - beta1) * g, as torch's lerp_
  v = C(h.beta2) * v + C(1 - h.beta2) * g * g;
  p -= C(h.step_size) * m / (std::sqrt(v) / C(h.bias_correction2_sqrt) + C(h.eps));
}

template <class C>
EMBER_HOST_DEVICE inline void rmsprop_update(C& p, C g, C& sq, C& buf, C& grad_avg,
                                             const RmspropHyper& h) {
  if (h.maximize) g = -g;
  if (h.weight_decay != 0) g += C(h.weight_decay) * p;
  sq = C(h.alpha) * sq + C(1 - h.alpha) * g * g;
  C avg;
  if (h.centered) {
    grad_avg += C(1 - h.alpha) * (g - grad_avg);
    avg = std::sqrt(sq - grad_avg * grad_avg) + C(h.eps);
  } else {
    avg = std::sqrt(sq) + C(h.eps);
  }
  if (h.momentum > 0) {
    buf = C(h.momentum) * buf + g / avg;
    p -= C(h.lr) * buf;
  } else {
    p -= C(h.lr) * g / avg;
  }
}

}  // namespace ember
