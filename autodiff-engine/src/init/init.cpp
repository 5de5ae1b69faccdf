// init.cpp — fans, gains and the initialisers that are one draw from a distribution.
#include "ember/autodiff/init.h"

#include <cmath>

namespace ember::autodiff::init {

Fans calculate_fan_in_and_fan_out(const Tensor& t) {
  if (t.dim() < 2)
    throw ValueError("calculate_fan_in_and_fan_out",
                     "the tensor is " + t.str() +
                         "; fan in and fan out need at least 2 dims ([out, in, ...]): "
                         "initialise a bias with uniform_, normal_ or zeros_ instead");
  int64_t receptive_field = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive_field *= t.size(d);
  return {t.size(1) * receptive_field, t.size(0) * receptive_field};
}

double calculate_gain(const std::string& nonlinearity, std::optional<double> param) {
  for (const char* linear : {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                             "conv_transpose2d", "conv_transpose3d", "sigmoid"})
    if (nonlinearity == linear) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4;  // keeps a self-normalizing net's variance
  throw ValueError("calculate_gain", "unknown nonlinearity '" + nonlinearity +
                                         "'; use linear, conv1d/2d/3d, conv_transpose1d/2d/3d, "
                                         "sigmoid, tanh, relu, leaky_relu or selu");
}

const Tensor& uniform_(const Tensor& t, double a, double b, Generator* gen) {
  return ember::uniform_(t, a, b, gen);
}
const Tensor& normal_(const Tensor& t, double mean, double std, Generator* gen) {
  return ember::normal_(t, mean, std, gen);
}
const Tensor& constant_(const Tensor& t, double value) {
  Tensor(t).fill_(value);  // a handle on the same storage
  return t;
}
const Tensor& zeros_(const Tensor& t) { return constant_(t, 0.0); }
const Tensor& ones_(const Tensor& t) { return constant_(t, 1.0); }

namespace {
// A uniform distribution with standard deviation std: [-sqrt(3) std, sqrt(3) std].
const Tensor& uniform_with_std(const Tensor& t, double std, Generator* gen) {
  const double bound = std::sqrt(3.0) * std;
  return ember::uniform_(t, -bound, bound, gen);
}

double kaiming_std(const Tensor& t, double a, const std::string& mode,
                   const std::string& nonlinearity) {
  if (mode != "fan_in" && mode != "fan_out")
    throw ValueError("kaiming", "mode '" + mode + "' is not one of fan_in, fan_out");
  const Fans fans = calculate_fan_in_and_fan_out(t);
  const double fan = double(mode == "fan_in" ? fans.fan_in : fans.fan_out);
  return calculate_gain(nonlinearity, a) / std::sqrt(fan);
}

double xavier_std(const Tensor& t, double gain) {
  const Fans fans = calculate_fan_in_and_fan_out(t);
  return gain * std::sqrt(2.0 / double(fans.fan_in + fans.fan_out));
}
}  // namespace

const Tensor& xavier_uniform_(const Tensor& t, double gain, Generator* gen) {
  return uniform_with_std(t, xavier_std(t, gain), gen);
}
const Tensor& xavier_normal_(const Tensor& t, double gain, Generator* gen) {
  return ember::normal_(t, 0.0, xavier_std(t, gain), gen);
}

// A tensor with no elements has fans of 0 (torch warns and leaves it as it is).
const Tensor& kaiming_uniform_(const Tensor& t, double a, const std::string& mode,
                               const std::string& nonlinearity, Generator* gen) {
  if (t.numel() == 0) return t;
  return uniform_with_std(t, kaiming_std(t, a, mode, nonlinearity), gen);
}
const Tensor& kaiming_normal_(const Tensor& t, double a, const std::string& mode,
                              const std::string& nonlinearity, Generator* gen) {
  if (t.numel() == 0) return t;
  return ember::normal_(t, 0.0, kaiming_std(t, a, mode, nonlinearity), gen);
}

}  // namespace ember::autodiff::init
