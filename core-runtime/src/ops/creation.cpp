// creation.cpp — front functions of the creation family. Constant tensors are Tensor::empty plus
// fill_ (a kernel on every device); ranges and eye have kernels of their own
// (ops/creation_kernels.h), so nothing is computed on the host and copied over.
#include "ember/ops/creation.h"

#include <cmath>
#include <string>

#include "ops/checks.h"
#include "ops/creation_kernels.h"

namespace ember {

namespace {

void check_shape(const char* op, const Shape& shape) {
  for (int64_t s : shape)
    if (s < 0)
      throw ValueError(op,
                       "shape " + shape_str(shape) + " has a negative size; sizes must be >= 0");
}

void check_numeric(const char* op, DType dtype) {
  if (dtype == DType::Bool)
    throw DTypeError(op, "dtype is bool; expected a numeric dtype, e.g. DType::Int64");
}

void check_finite(const char* op, const char* name, double v) {
  if (!std::isfinite(v))
    throw ValueError(op, std::string(name) + " is " + std::to_string(v) + "; it must be finite");
}

bool is_integral_value(double v) { return std::floor(v) == v; }

Tensor filled(const char* op, const Shape& shape, double value, DType dtype, Device device) {
  check_shape(op, shape);
  Tensor out = Tensor::empty(shape, dtype, device);
  out.fill_(value);
  return out;
}

}  // namespace

Tensor empty(const Shape& shape, DType dtype, Device device) {
  check_shape("empty", shape);
  return Tensor::empty(shape, dtype, device);
}
Tensor zeros(const Shape& shape, DType dtype, Device device) {
  return filled("zeros", shape, 0.0, dtype, device);
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return filled("ones", shape, 1.0, dtype, device);
}
Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  return filled("full", shape, value, dtype, device);
}
Tensor scalar_tensor(double value, DType dtype, Device device) {
  return filled("scalar_tensor", {}, value, dtype, device);
}

Tensor arange(double end, std::optional<DType> dtype, Device device) {
  return arange(0.0, end, 1.0, dtype, device);
}

Tensor arange(double start, double end, double step, std::optional<DType> dtype, Device device) {
  check_finite("arange", "start", start);
  check_finite("arange", "end", end);
  check_finite("arange", "step", step);
  if (step == 0) throw ValueError("arange", "step is 0; it must be nonzero");
  if ((end - start) * step < 0)
    throw ValueError("arange", "start " + std::to_string(start) + ", end " + std::to_string(end) +
                                   " and step " + std::to_string(step) +
                                   " are inconsistent: the step must point from start to end");
  bool integral = is_integral_value(start) && is_integral_value(step);
  DType t = dtype.value_or(integral && is_integral_value(end) ? DType::Int64 : DType::Float32);
  check_numeric("arange", t);
  int64_t n = int64_t(std::ceil((end - start) / step));
  Tensor out = Tensor::empty({n}, t, device);
  auto kernel = arange_kernel(device);
  if (n > 0) kernel(out, start, step, integral);
  return out;
}

Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device) {
  check_finite("linspace", "start", start);
  check_finite("linspace", "end", end);
  if (steps < 0)
    throw ValueError("linspace", "steps is " + std::to_string(steps) + "; it must be >= 0");
  check_numeric("linspace", dtype);
  if (steps == 1) return full({1}, start, dtype, device);
  Tensor out = Tensor::empty({steps}, dtype, device);
  auto kernel = linspace_kernel(device);
  if (steps > 0) kernel(out, start, end);
  return out;
}

Tensor eye(int64_t n, int64_t m, DType dtype, Device device) {
  if (m < 0) m = n;
  if (n < 0) throw ValueError("eye", "n is " + std::to_string(n) + "; it must be >= 0");
  Tensor out = Tensor::empty({n, m}, dtype, device);
  auto kernel = eye_kernel(device);
  if (out.numel() > 0) kernel(out);
  return out;
}

Tensor empty_like(const Tensor& t, std::optional<DType> dtype) {
  check_defined("empty_like", {{"t", t}});
  return Tensor::empty(t.shape(), dtype.value_or(t.dtype()), t.device());
}
Tensor zeros_like(const Tensor& t, std::optional<DType> dtype) { return full_like(t, 0.0, dtype); }
Tensor ones_like(const Tensor& t, std::optional<DType> dtype) { return full_like(t, 1.0, dtype); }
Tensor full_like(const Tensor& t, double value, std::optional<DType> dtype) {
  check_defined("full_like", {{"t", t}});
  return filled("full_like", t.shape(), value, dtype.value_or(t.dtype()), t.device());
}

}  // namespace ember
