// init.h — parameter initialisers (torch.nn.init): each fills a tensor in place and returns it.
// Pass a Variable's tensor to initialise a parameter: init::kaiming_uniform_(w.data()).
//
// Random ones draw from `gen`, or from the default generator (ember::manual_seed) when it is
// null, so a seed reproduces them. Fans are torch's: for a weight [out, in, k...],
//   fan_in = in * prod(k), fan_out = out * prod(k)
// and they need at least 2 dims (ValueError otherwise).
#pragma once
#include <optional>
#include <string>

#include "ember/ops/random.h"

namespace ember::autodiff::init {

struct Fans {
  int64_t fan_in = 0;
  int64_t fan_out = 0;
};
Fans calculate_fan_in_and_fan_out(const Tensor& t);

// The gain torch recommends for a nonlinearity: 1 for linear, conv1d/2d/3d (and transposed),
// sigmoid; 5/3 for tanh; sqrt(2) for relu; sqrt(2 / (1 + slope^2)) for leaky_relu (param is the
// negative slope, 0.01 when omitted); 3/4 for selu. ValueError for another name.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);

const Tensor& uniform_(const Tensor& t, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
const Tensor& normal_(const Tensor& t, double mean = 0.0, double std = 1.0,
                      Generator* gen = nullptr);
const Tensor& constant_(const Tensor& t, double value);
const Tensor& zeros_(const Tensor& t);
const Tensor& ones_(const Tensor& t);

// Glorot: std = gain * sqrt(2 / (fan_in + fan_out)); uniform on [-sqrt(3) std, sqrt(3) std].
const Tensor& xavier_uniform_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);
const Tensor& xavier_normal_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);

// He: std = calculate_gain(nonlinearity, a) / sqrt(fan), fan = fan_in or fan_out by mode
// ("fan_in" keeps the forward pass's variance, "fan_out" the backward's); uniform on
// [-sqrt(3) std, sqrt(3) std]. a is leaky_relu's negative slope.
const Tensor& kaiming_uniform_(const Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                               const std::string& nonlinearity = "leaky_relu",
                               Generator* gen = nullptr);
const Tensor& kaiming_normal_(const Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                              const std::string& nonlinearity = "leaky_relu",
                              Generator* gen = nullptr);

// A (semi-)orthogonal matrix times gain, uniformly distributed (Haar): t viewed as
// [rows, numel / rows] gets orthonormal rows (rows <= cols) or columns (rows > cols), from the QR
// decomposition of a standard normal matrix. At least 2 dims.
const Tensor& orthogonal_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);

}  // namespace ember::autodiff::init
