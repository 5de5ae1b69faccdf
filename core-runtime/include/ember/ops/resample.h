// resample.h — resizing images: interpolate (torch.nn.functional.interpolate on [N, C, H, W]) and
// its gradient.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember {

// x: [N, C, H, W], float16/bfloat16/float32/float64 -> [N, C, H_out, W_out], x's dtype.
// Give exactly one of
//   size = {H_out, W_out} (each > 0), or
//   scale_factor = {s_h, s_w} (each > 0): H_out = floor(H * s_h), which must come out > 0. As in
//   PyTorch (recompute_scale_factor unset), the coordinate transform then uses 1 / s_h, not
//   H / H_out.
// mode:
//   "nearest"  PyTorch's legacy rule: source index floor(dst * scale), scale = H / H_out (or
//              1 / s_h), computed in float32, clamped to H - 1 (PyTorch's CUDA rule; its CPU
//              kernel special-cases H_out == H and H_out == 2 H, which differs only when a
//              scale_factor other than 1 or 2 gives such a size);
//   "bilinear" align_corners=false: src = max(scale * (dst + 0.5) - 0.5, 0) (pixel centres);
//              align_corners=true: src = dst * (H - 1) / (H_out - 1) (0 when H_out == 1; the
//              scale factor is then ignored); weights from the two neighbours of src.
// align_corners=true is only for "bilinear" (ValueError otherwise). float16 and bfloat16 compute
// in float32, float64 in float64. H and W must be > 0; N or C may be 0.
Tensor interpolate(const Tensor& x, const std::optional<std::vector<int64_t>>& size,
                   const std::optional<std::vector<double>>& scale_factor = std::nullopt,
                   const std::string& mode = "nearest", bool align_corners = false);
// interpolate into out ([N, C, H_out, W_out], x's dtype and device, any strides); returns out.
const Tensor& interpolate_out(const Tensor& out, const Tensor& x,
                              const std::optional<std::vector<int64_t>>& size,
                              const std::optional<std::vector<double>>& scale_factor = std::nullopt,
                              const std::string& mode = "nearest", bool align_corners = false);

// The gradient of interpolate: grad_output: [N, C, H_out, W_out] -> [N, C, H, W] = input_shape,
// each input element receiving the weighted sum of the gradients of every output that read it.
// The other arguments are interpolate's, so both take the same coordinate transform.
Tensor interpolate_backward(const Tensor& grad_output, const Shape& input_shape,
                            const std::optional<std::vector<int64_t>>& size,
                            const std::optional<std::vector<double>>& scale_factor = std::nullopt,
                            const std::string& mode = "nearest", bool align_corners = false);
// interpolate_backward into grad_input (input_shape, grad_output's dtype and device); returns it.
const Tensor& interpolate_backward_out(
    const Tensor& grad_input, const Tensor& grad_output, const Shape& input_shape,
    const std::optional<std::vector<int64_t>>& size,
    const std::optional<std::vector<double>>& scale_factor = std::nullopt,
    const std::string& mode = "nearest", bool align_corners = false);

// ---- shape rules (also autodiff-engine's inference) ----

// interpolate's output shape [N, C, H_out, W_out] for an input of shape x, every argument checked
// as interpolate checks it; errors name `op` and describe the input as `who` ("x is ...").
Shape interpolate_shape(const char* op, const std::string& who, const Shape& x,
                        const std::optional<std::vector<int64_t>>& size,
                        const std::optional<std::vector<double>>& scale_factor,
                        const std::string& mode, bool align_corners);

}  // namespace ember
