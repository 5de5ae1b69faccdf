// creation.cpp — front functions of the creation family. Constant tensors are Tensor::empty plus
// fill_ (a kernel on every device); ranges and eye have kernels of their own
// (ops/creation_kernels.h), so nothing is computed on the host and copied over.
#include "ember/ops/creation.h"

#include <cmath>
#include <string>

#include "kernels.h"
#include "ops/checks.h"
#include "ops/creation_kernels.h"
#include "ops/out.h"

namespace ember {

namespace {

void check_numeric(const char* op, DType dtype) {
  if (dtype == DType::Bool)
    throw DTypeError(op, "dtype is bool; expected a numeric dtype, e.g. DType::Int64");
}

void check_finite(const char* op, const char* name, double v) {
  if (!std::isfinite(v))
    throw ValueError(op, std::string(name) + " is " + std::to_string(v) + "; it must be finite");
}

bool is_integral_value(double v) { return std::floor(v) == v; }

// given: the _out form's out, or null to allocate the result. fill_ writes any strided layout.
Tensor filled(const char* op, const Shape& shape, double value, DType dtype, Device device,
              const Tensor* given) {
  check_value_fits(op, value, dtype);
  Tensor out = output(op, given, shape, dtype, device, {});
  out.fill_(value);
  return out;
}

// The number of elements of arange(start, end, step): ceil((end - start) / step), checked to be
// a size (a double past 2^63 has no int64 value).
int64_t arange_count(double start, double end, double step) {
  const double n = std::ceil((end - start) / step);
  if (!(n < 0x1p63))
    throw ShapeError("arange", "start " + value_str(start) + ", end " + value_str(end) +
                                   " and step " + value_str(step) + " give " + value_str(n) +
                                   " elements: the count overflows int64; use a larger step");
  return int64_t(n);
}

// arange(start, end, step), checked; the kernel writes a contiguous [n].
Tensor run_arange(double start, double end, double step, std::optional<DType> dtype, Device device,
                  const Tensor* given) {
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
  const int64_t n = arange_count(start, end, step);
  if (n > 0) {  // the first and the last value must fit t; the others lie between them
    check_value_fits("arange", start, t);
    check_value_fits("arange", start + step * double(n - 1), t);
  }
  Tensor out = output("arange", given, {n}, t, device, {});
  auto kernel = arange_kernel(device);
  write_contiguous("arange", out, [&](Tensor& dst) {
    if (n > 0) kernel(dst, start, step, integral);
  });
  return out;
}

Tensor run_linspace(double start, double end, int64_t steps, DType dtype, Device device,
                    const Tensor* given) {
  check_finite("linspace", "start", start);
  check_finite("linspace", "end", end);
  if (steps < 0)
    throw ValueError("linspace", "steps is " + std::to_string(steps) + "; it must be >= 0");
  check_numeric("linspace", dtype);
  if (steps > 0) {
    check_value_fits("linspace", start, dtype);
    check_value_fits("linspace", end, dtype);
  }
  if (steps == 1) return filled("linspace", {1}, start, dtype, device, given);
  Tensor out = output("linspace", given, {steps}, dtype, device, {});
  auto kernel = linspace_kernel(device);
  write_contiguous("linspace", out, [&](Tensor& dst) {
    if (steps > 0) kernel(dst, start, end);
  });
  return out;
}

Tensor run_eye(int64_t n, int64_t m, DType dtype, Device device, const Tensor* given) {
  if (m < 0) m = n;
  if (n < 0) throw ValueError("eye", "n is " + std::to_string(n) + "; it must be >= 0");
  Tensor out = output("eye", given, {n, m}, dtype, device, {});
  auto kernel = eye_kernel(device);
  write_contiguous("eye", out, [&](Tensor& dst) {
    if (dst.numel() > 0) kernel(dst);
  });
  return out;
}

}  // namespace

Tensor empty(const Shape& shape, DType dtype, Device device) {
  return Tensor::empty(shape, dtype, device, "empty");
}
Tensor zeros(const Shape& shape, DType dtype, Device device) {
  return filled("zeros", shape, 0.0, dtype, device, nullptr);
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return filled("ones", shape, 1.0, dtype, device, nullptr);
}
Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  return filled("full", shape, value, dtype, device, nullptr);
}
Tensor scalar_tensor(double value, DType dtype, Device device) {
  return filled("scalar_tensor", {}, value, dtype, device, nullptr);
}

Tensor arange(double end, std::optional<DType> dtype, Device device) {
  return run_arange(0.0, end, 1.0, dtype, device, nullptr);
}
Tensor arange(double start, double end, double step, std::optional<DType> dtype, Device device) {
  return run_arange(start, end, step, dtype, device, nullptr);
}
Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device) {
  return run_linspace(start, end, steps, dtype, device, nullptr);
}
Tensor eye(int64_t n, int64_t m, DType dtype, Device device) {
  return run_eye(n, m, dtype, device, nullptr);
}

Tensor empty_like(const Tensor& t, std::optional<DType> dtype) {
  check_defined("empty_like", {{"t", t}});
  return Tensor::empty(t.shape(), dtype.value_or(t.dtype()), t.device(), "empty_like");
}
Tensor zeros_like(const Tensor& t, std::optional<DType> dtype) { return full_like(t, 0.0, dtype); }
Tensor ones_like(const Tensor& t, std::optional<DType> dtype) { return full_like(t, 1.0, dtype); }
Tensor full_like(const Tensor& t, double value, std::optional<DType> dtype) {
  check_defined("full_like", {{"t", t}});
  return filled("full_like", t.shape(), value, dtype.value_or(t.dtype()), t.device(), nullptr);
}

const Tensor& zeros_out(const Tensor& out, const Shape& shape, DType dtype, Device device) {
  filled("zeros", shape, 0.0, dtype, device, &out);
  return out;
}
const Tensor& ones_out(const Tensor& out, const Shape& shape, DType dtype, Device device) {
  filled("ones", shape, 1.0, dtype, device, &out);
  return out;
}
const Tensor& full_out(const Tensor& out, const Shape& shape, double value, DType dtype,
                       Device device) {
  filled("full", shape, value, dtype, device, &out);
  return out;
}
const Tensor& scalar_tensor_out(const Tensor& out, double value, DType dtype, Device device) {
  filled("scalar_tensor", {}, value, dtype, device, &out);
  return out;
}
const Tensor& arange_out(const Tensor& out, double end, std::optional<DType> dtype, Device device) {
  run_arange(0.0, end, 1.0, dtype, device, &out);
  return out;
}
const Tensor& arange_out(const Tensor& out, double start, double end, double step,
                         std::optional<DType> dtype, Device device) {
  run_arange(start, end, step, dtype, device, &out);
  return out;
}
const Tensor& linspace_out(const Tensor& out, double start, double end, int64_t steps, DType dtype,
                           Device device) {
  run_linspace(start, end, steps, dtype, device, &out);
  return out;
}
const Tensor& eye_out(const Tensor& out, int64_t n, int64_t m, DType dtype, Device device) {
  run_eye(n, m, dtype, device, &out);
  return out;
}

}  // namespace ember
