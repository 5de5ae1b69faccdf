// resample.cpp — front functions of the resample family: interpolate and its gradient. Both turn
// (size or scale_factor, mode, align_corners) into one Resample description, check the tensors
// against it and call their kernel.
#include "ember/ops/resample.h"

#include <cmath>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops/checks.h"
#include "ops/resample_kernels.h"

namespace ember {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

ResampleMode parse_mode(const char* op, const std::string& mode, bool align_corners) {
  if (mode == "nearest") {
    if (align_corners)
      throw ValueError(op,
                       "align_corners=true applies to mode \"bilinear\" only; pass "
                       "align_corners=false with mode \"nearest\"");
    return ResampleMode::Nearest;
  }
  if (mode == "bilinear") return ResampleMode::Bilinear;
  throw ValueError(op, "unknown mode \"" + mode + "\"; expected \"nearest\" or \"bilinear\"");
}

// The output size of one axis of input size `in`.
int64_t output_size(const char* op, int64_t in, const std::optional<std::vector<int64_t>>& size,
                    const std::optional<std::vector<double>>& scale, size_t axis) {
  if (size) return (*size)[axis];
  const double out = std::floor(double(in) * (*scale)[axis]);
  if (!(out < 9.2e18))  // beyond int64 (a shape this large fails to allocate anyway)
    throw ShapeError(op, "scale_factor " + value_str((*scale)[axis]) + " on size " + str(in) +
                             " gives an output size beyond int64; use a smaller scale");
  if (out < 1)
    throw ValueError(op, "scale_factor " + value_str((*scale)[axis]) + " on input size " + str(in) +
                             " gives an output size of 0; use a larger scale_factor");
  return int64_t(out);
}

// Checks the arguments common to interpolate and its backward and describes the resampling of
// an input of shape in: [N, C, H, W].
Resample describe_resample(const char* op, const Shape& in,
                           const std::optional<std::vector<int64_t>>& size,
                           const std::optional<std::vector<double>>& scale, const std::string& mode,
                           bool align_corners) {
  const ResampleMode m = parse_mode(op, mode, align_corners);
  if (size.has_value() == scale.has_value())
    throw ValueError(op, std::string(size ? "both size and scale_factor are given"
                                          : "neither size nor scale_factor is given") +
                             "; pass exactly one of them");
  if (size && (size->size() != 2 || (*size)[0] <= 0 || (*size)[1] <= 0))
    throw ValueError(op,
                     "size is " + shape_str(*size) + "; expected {H_out, W_out}, two sizes > 0");
  if (scale && (scale->size() != 2 || !((*scale)[0] > 0) || !((*scale)[1] > 0) ||
                !std::isfinite((*scale)[0]) || !std::isfinite((*scale)[1]))) {
    std::string given;
    for (double s : *scale) given += (given.empty() ? "" : ", ") + value_str(s);
    throw ValueError(op, "scale_factor is {" + given +
                             "}; expected {s_h, s_w}, two finite factors > 0");
  }
  if (in[2] <= 0 || in[3] <= 0)
    throw ShapeError(op, "the input is " + shape_str(in) +
                             "; its height and width must be > 0 ([N, C, H, W])");
  const double sh = scale ? (*scale)[0] : 0.0, sw = scale ? (*scale)[1] : 0.0;
  return {m,
          align_corners,
          {in[2], output_size(op, in[2], size, scale, 0), sh},
          {in[3], output_size(op, in[3], size, scale, 1), sw}};
}

Shape output_shape(const Shape& in, const Resample& r) { return {in[0], in[1], r.h.out, r.w.out}; }

void check_input(const char* op, const Named& x) {
  check_defined(op, {x});
  check_dim(op, x, 4, "[N, C, H, W]");
  check_floating(op, {x});
}

}  // namespace

Shape interpolate_shape(const char* op, const std::string& who, const Shape& x,
                        const std::optional<std::vector<int64_t>>& size,
                        const std::optional<std::vector<double>>& scale_factor,
                        const std::string& mode, bool align_corners) {
  if (x.size() != 4) throw ShapeError(op, who + "; expected 4 dims [N, C, H, W]");
  return output_shape(x, describe_resample(op, x, size, scale_factor, mode, align_corners));
}

const Tensor& interpolate_out(const Tensor& out, const Tensor& x,
                              const std::optional<std::vector<int64_t>>& size,
                              const std::optional<std::vector<double>>& scale_factor,
                              const std::string& mode, bool align_corners) {
  const char* op = "interpolate";
  check_input(op, {"x", x});
  const Resample r = describe_resample(op, x.shape(), size, scale_factor, mode, align_corners);
  check_out(op, out, output_shape(x.shape(), r), x.dtype(), x.device());
  check_out_alias(op, out, {{"x", x}}, false);
  out.bump_version();
  if (out.numel() > 0) interpolate_kernel(x.device())(x, r, out);
  return out;
}

Tensor interpolate(const Tensor& x, const std::optional<std::vector<int64_t>>& size,
                   const std::optional<std::vector<double>>& scale_factor, const std::string& mode,
                   bool align_corners) {
  const char* op = "interpolate";
  check_input(op, {"x", x});
  const Resample r = describe_resample(op, x.shape(), size, scale_factor, mode, align_corners);
  Tensor out = Tensor::empty(output_shape(x.shape(), r), x.dtype(), x.device(), op);
  return interpolate_out(out, x, size, scale_factor, mode, align_corners);
}

const Tensor& interpolate_backward_out(const Tensor& grad_input, const Tensor& grad_output,
                                       const Shape& input_shape,
                                       const std::optional<std::vector<int64_t>>& size,
                                       const std::optional<std::vector<double>>& scale_factor,
                                       const std::string& mode, bool align_corners) {
  const char* op = "interpolate_backward";
  check_input(op, {"grad_output", grad_output});
  if (input_shape.size() != 4)
    throw ShapeError(op,
                     "input_shape is " + shape_str(input_shape) + "; expected 4 dims [N, C, H, W]");
  const Resample r = describe_resample(op, input_shape, size, scale_factor, mode, align_corners);
  const Shape want = output_shape(input_shape, r);
  if (grad_output.shape() != want)
    throw ShapeError(op, operands({{"grad_output", grad_output}}) + "; expected " +
                             shape_str(want) + ", interpolate's output shape for input shape " +
                             shape_str(input_shape));
  check_out(op, grad_input, input_shape, grad_output.dtype(), grad_output.device());
  check_out_alias(op, grad_input, {{"grad_output", grad_output}}, false);
  grad_input.bump_version();
  if (grad_input.numel() > 0)
    interpolate_backward_kernel(grad_output.device())(grad_output, r, grad_input);
  return grad_input;
}

Tensor interpolate_backward(const Tensor& grad_output, const Shape& input_shape,
                            const std::optional<std::vector<int64_t>>& size,
                            const std::optional<std::vector<double>>& scale_factor,
                            const std::string& mode, bool align_corners) {
  const char* op = "interpolate_backward";
  check_input(op, {"grad_output", grad_output});
  Tensor grad_input = Tensor::empty(input_shape, grad_output.dtype(), grad_output.device(), op);
  return interpolate_backward_out(grad_input, grad_output, input_shape, size, scale_factor, mode,
                                  align_corners);
}

}  // namespace ember
