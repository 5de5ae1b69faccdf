// composed.h — what the optimizers written with core-runtime's elementwise ops share (Adadelta,
// Adagrad, Adamax, NAdam, RAdam). They have no fused kernel: each step is some ten elementwise
// ops per parameter, so they run on every device and floating dtype the ops do (half types round
// to their dtype between ops, where the fused kernels of Adam keep float32 inside). The price is
// memory traffic: ten passes over each parameter instead of one, several times a fused step on
// large parameters. A fused kernel (ops/optimizer.h, CPU and CUDA) is worth its lines for the
// optimizers most models train with, SGD and Adam; these are used less, and get one when a
// training step shows their update to matter.
#pragma once
#include "ember/autodiff/optim/optimizer.h"
#include "ember/ops/creation.h"
#include "ember/ops/elementwise.h"

namespace ember::autodiff::optim {

// The gradient the update uses: -grad when maximizing, plus weight_decay * p (L2 decay). It may
// be the parameter's .grad itself, so the updates only read it.
inline Tensor effective_grad(const Tensor& p, const Tensor& grad, double weight_decay,
                             bool maximize) {
  Tensor g = maximize ? neg(grad) : grad;
  return weight_decay != 0.0 ? add(g, mul(p, weight_decay)) : g;
}

// NAdam's and RAdam's gradient: weight decay folded into it as L2 (effective_grad), or, with
// decoupled_weight_decay, applied to p itself (p *= 1 - lr * weight_decay, as AdamW).
inline Tensor decayed_grad(const Tensor& p, const Tensor& grad, const Options& o) {
  const double weight_decay = o.at("weight_decay");
  const bool decoupled = o.at("decoupled_weight_decay") != 0.0;
  Tensor g = effective_grad(p, grad, decoupled ? 0.0 : weight_decay, o.at("maximize") != 0.0);
  if (decoupled) mul_(p, 1.0 - o.at("lr") * weight_decay);
  return g;
}

// A state buffer, filled with `value` on first use (in the parameter's shape, dtype and device).
inline Tensor& state_buffer(ParamState& s, const char* name, const Tensor& p, double value = 0.0) {
  auto it = s.buffers.find(name);
  if (it == s.buffers.end()) it = s.buffers.emplace(name, full_like(p, value)).first;
  return it->second;
}

// avg = beta * avg + (1 - beta) * x, in place.
inline void lerp_(const Tensor& avg, const Tensor& x, double beta) {
  add_(mul_(avg, beta), mul(x, 1.0 - beta));
}

// NAdam's and RAdam's moment estimates: the state buffers exp_avg and exp_avg_sq, running
// averages of g and g * g, updated in place with this step's g.
struct Moments {
  const Tensor& exp_avg;
  const Tensor& exp_avg_sq;
};
inline Moments update_moments(ParamState& s, const Tensor& p, const Tensor& g, double beta1,
                              double beta2) {
  const Tensor& exp_avg = state_buffer(s, "exp_avg", p);
  const Tensor& exp_avg_sq = state_buffer(s, "exp_avg_sq", p);
  lerp_(exp_avg, g, beta1);
  lerp_(exp_avg_sq, mul(g, g), beta2);
  return {exp_avg, exp_avg_sq};
}

}  // namespace ember::autodiff::optim
