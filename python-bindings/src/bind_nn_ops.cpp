// bind_nn_ops.cpp — the neural-network ops of autodiff-engine's builder headers: convolution and
// pooling, batch/layer norm, dropout, softmax and the losses, with their backward ops. These are
// what ember.nn.functional re-exports; argument names and orders follow PyTorch's.
#include <ember/autodiff/ops.h>
#include <ember/autodiff/ops/attention.h>
#include <ember/error.h>

#include "def_op.h"

namespace ember::python {

namespace ad = ember::autodiff;

namespace {

using V = Variable;

// An int (both dims) or an (h, w) pair.
Size2 size2(py::handle obj) {
  if (obj.is_none()) return Size2();
  if (PyLong_Check(obj.ptr())) return Size2(py::cast<int64_t>(obj));
  auto pair = py::cast<std::vector<int64_t>>(obj);
  if (pair.size() != 2)
    throw ember::ValueError("size",
                            "expected an int or a pair (h, w), got " + std::string(py::repr(obj)));
  return Size2(pair[0], pair[1]);
}

// padding: an int, an (h, w) pair, or "same" / "valid".
Padding2 padding2(py::handle obj) {
  if (PyUnicode_Check(obj.ptr())) return Padding2(py::cast<std::string>(obj).c_str());
  Size2 s = size2(obj);
  return Padding2(s.h, s.w);
}

V opt(const std::optional<V>& v) { return v.value_or(V()); }

}  // namespace

void bind_nn_ops(py::module_& m, TensorClass& cls) {
  // ---- convolution and pooling: x [N, C, H, W] ----
  m.def(
      "conv2d",
      [](const V& x, const V& w, std::optional<V> b, py::handle stride, py::handle padding,
         py::handle dilation, int64_t groups) {
        return ad::conv2d(x, w, opt(b), size2(stride), padding2(padding), size2(dilation), groups);
      },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1,
      "2-D cross-correlation: x [N, C, H, W], weight [O, C/groups, kh, kw], bias [O] -> "
      "[N, O, Ho, Wo]. padding: int, (h, w), 'same' or 'valid'.");
  m.def(
      "conv2d_backward_input",
      [](const V& g, const V& w, const Shape& s, py::handle st, py::handle p, py::handle d,
         int64_t groups) {
        return ad::conv2d_backward_input(g, w, s, size2(st), padding2(p), size2(d), groups);
      },
      py::arg("grad"), py::arg("weight"), py::arg("input_shape"), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1);
  m.def(
      "conv2d_backward_weight",
      [](const V& g, const V& x, const Shape& s, py::handle st, py::handle p, py::handle d,
         int64_t groups) {
        return ad::conv2d_backward_weight(g, x, s, size2(st), padding2(p), size2(d), groups);
      },
      py::arg("grad"), py::arg("input"), py::arg("weight_shape"), py::arg("stride") = 1,
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1);
  m.def(
      "max_pool2d",
      [](const V& x, py::handle k, py::handle s, py::handle p, py::handle d, bool ceil,
         bool return_indices) -> py::object {
        auto [values, indices] =
            ad::max_pool2d_with_indices(x, size2(k), size2(s), size2(p), size2(d), ceil);
        if (return_indices) return py::make_tuple(values, indices);
        return py::cast(values);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(),
      py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("ceil_mode") = false,
      py::arg("return_indices") = false,
      "Window maxima; stride defaults to kernel_size; with return_indices (values, indices).");
  m.def(
      "max_pool2d_backward",
      [](const V& g, const V& i, const Shape& s) { return ad::max_pool2d_backward(g, i, s); },
      py::arg("grad"), py::arg("indices"), py::arg("input_shape"));
  m.def(
      "avg_pool2d",
      [](const V& x, py::handle k, py::handle s, py::handle p, bool ceil, bool include_pad) {
        return ad::avg_pool2d(x, size2(k), size2(s), size2(p), ceil, include_pad);
      },
      py::arg("input"), py::arg("kernel_size"), py::arg("stride") = py::none(),
      py::arg("padding") = 0, py::arg("ceil_mode") = false, py::arg("count_include_pad") = true,
      "Window means; stride defaults to kernel_size.");
  m.def(
      "avg_pool2d_backward",
      [](const V& g, const Shape& shape, py::handle k, py::handle s, py::handle p, bool ceil,
         bool include_pad) {
        return ad::avg_pool2d_backward(g, shape, size2(k), size2(s), size2(p), ceil, include_pad);
      },
      py::arg("grad"), py::arg("input_shape"), py::arg("kernel_size"),
      py::arg("stride") = py::none(), py::arg("padding") = 0, py::arg("ceil_mode") = false,
      py::arg("count_include_pad") = true);
  m.def(
      "adaptive_avg_pool2d",
      [](const V& x, py::handle size) { return ad::adaptive_avg_pool2d(x, size2(size)); },
      py::arg("input"), py::arg("output_size"), "Means over windows giving [Ho, Wo].");
  m.def(
      "adaptive_avg_pool2d_backward",
      [](const V& g, const Shape& s) { return ad::adaptive_avg_pool2d_backward(g, s); },
      py::arg("grad"), py::arg("input_shape"));

  // ---- normalization and dropout ----
  m.def(
      "batch_norm",
      [](const V& x, std::optional<V> running_mean, std::optional<V> running_var,
         std::optional<V> w, std::optional<V> b, bool training, double momentum, double eps) {
        return ad::batch_norm(x, opt(w), opt(b), opt(running_mean), opt(running_var), training,
                              momentum, eps);
      },
      py::arg("input"), py::arg("running_mean"), py::arg("running_var"),
      py::arg("weight") = py::none(), py::arg("bias") = py::none(), py::arg("training") = false,
      py::arg("momentum") = 0.1, py::arg("eps") = 1e-5,
      "Batch norm over dim 1 of x [N, C, *]; in training the running stats are updated in "
      "place.");
  m.def(
      "batch_norm_backward",
      [](const V& g, const V& x, std::optional<V> w, const V& mean, const V& invstd,
         bool training) { return ad::batch_norm_backward(g, x, opt(w), mean, invstd, training); },
      py::arg("grad"), py::arg("input"), py::arg("weight"), py::arg("save_mean"),
      py::arg("save_invstd"), py::arg("training"));
  m.def(
      "layer_norm",
      [](const V& x, const std::vector<int64_t>& shape, std::optional<V> w, std::optional<V> b,
         double eps) { return ad::layer_norm(x, shape, opt(w), opt(b), eps); },
      py::arg("input"), py::arg("normalized_shape"), py::arg("weight") = py::none(),
      py::arg("bias") = py::none(), py::arg("eps") = 1e-5,
      "Normalises over the last dims (normalized_shape), then weight and bias.");
  m.def(
      "layer_norm_backward",
      [](const V& g, const V& x, const std::vector<int64_t>& shape, const V& mean, const V& rstd,
         std::optional<V> w) { return ad::layer_norm_backward(g, x, shape, mean, rstd, opt(w)); },
      py::arg("grad"), py::arg("input"), py::arg("normalized_shape"), py::arg("mean"),
      py::arg("rstd"), py::arg("weight") = py::none());
  m.def(
      "dropout", [](const V& x, double p, bool training) { return ad::dropout(x, p, training); },
      py::arg("input"), py::arg("p") = 0.5, py::arg("training") = true,
      "Zeroes elements with probability p and scales the rest by 1 / (1 - p) when training.");
  m.def(
      "dropout_backward",
      [](const V& g, const V& mask, double p) { return ad::dropout_backward(g, mask, p); },
      py::arg("grad"), py::arg("mask"), py::arg("p"));

  // ---- attention ----
  m.def(
      "scaled_dot_product_attention",
      [](const V& q, const V& k, const V& v, std::optional<V> attn_mask, double dropout_p,
         bool is_causal, std::optional<double> scale) {
        return ad::scaled_dot_product_attention(q, k, v, opt(attn_mask), dropout_p, is_causal,
                                                scale);
      },
      py::arg("query"), py::arg("key"), py::arg("value"), py::arg("attn_mask") = py::none(),
      py::arg("dropout_p") = 0.0, py::arg("is_causal") = false, py::arg("scale") = py::none(),
      "softmax(query @ key^T * scale + mask) @ value in one fused op that never holds the [L, S] "
      "scores: query [*, L, E], key [*, S, E], value [*, S, Ev] -> [*, L, Ev]. attn_mask: bool "
      "(True takes part) or added to the scores, broadcast to [*, L, S]; is_causal: query i sees "
      "keys j <= i; scale: 1 / sqrt(E) by default; dropout_p: drops attention weights, drawn from "
      "ember's seeded generator.");

  // ---- softmax and losses ----
  def_op(
      m, cls, "softmax", [](const V& x, int64_t d) { return ad::softmax(x, d); },
      "exp(x) / sum(exp(x)) along dim.", py::arg("dim"));
  def_op(
      m, cls, "log_softmax", [](const V& x, int64_t d) { return ad::log_softmax(x, d); },
      "log(softmax(x)) along dim, without its underflow.", py::arg("dim"));
  m.def(
      "softmax_backward",
      [](const V& g, const V& y, int64_t d) { return ad::softmax_backward(g, y, d); },
      py::arg("grad"), py::arg("output"), py::arg("dim"));
  m.def(
      "log_softmax_backward",
      [](const V& g, const V& y, int64_t d) { return ad::log_softmax_backward(g, y, d); },
      py::arg("grad"), py::arg("output"), py::arg("dim"));
  m.def(
      "cross_entropy",
      [](const V& logits, const V& target, std::optional<V> w, int64_t ignore,
         const std::string& reduction, double smoothing) {
        return ad::cross_entropy(logits, target, opt(w), ignore, reduction, smoothing);
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(),
      py::arg("ignore_index") = -100, py::arg("reduction") = "mean",
      py::arg("label_smoothing") = 0.0,
      "Cross entropy of logits [N, C] (or [N, C, d...]) against int64 class indices [N].");
  m.def(
      "cross_entropy_backward",
      [](const V& g, const V& logits, const V& target, std::optional<V> w, int64_t ignore,
         const std::string& reduction, double smoothing) {
        return ad::cross_entropy_backward(g, logits, target, opt(w), ignore, reduction, smoothing);
      },
      py::arg("grad"), py::arg("input"), py::arg("target"), py::arg("weight") = py::none(),
      py::arg("ignore_index") = -100, py::arg("reduction") = "mean",
      py::arg("label_smoothing") = 0.0);
  m.def(
      "nll_loss",
      [](const V& lp, const V& target, std::optional<V> w, int64_t ignore,
         const std::string& reduction) {
        return ad::nll_loss(lp, target, opt(w), ignore, reduction);
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(),
      py::arg("ignore_index") = -100, py::arg("reduction") = "mean",
      "Negative log likelihood of log-probabilities against int64 class indices.");
  m.def(
      "nll_loss_backward",
      [](const V& g, const V& lp, const V& target, std::optional<V> w, int64_t ignore,
         const std::string& reduction) {
        return ad::nll_loss_backward(g, lp, target, opt(w), ignore, reduction);
      },
      py::arg("grad"), py::arg("input"), py::arg("target"), py::arg("weight") = py::none(),
      py::arg("ignore_index") = -100, py::arg("reduction") = "mean");
  m.def(
      "mse_loss",
      [](const V& x, const V& t, const std::string& r) { return ad::mse_loss(x, t, r); },
      py::arg("input"), py::arg("target"), py::arg("reduction") = "mean",
      "(input - target)^2, reduced.");
  m.def(
      "mse_loss_backward",
      [](const V& g, const V& x, const V& t, const std::string& r) {
        return ad::mse_loss_backward(g, x, t, r);
      },
      py::arg("grad"), py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  m.def(
      "l1_loss", [](const V& x, const V& t, const std::string& r) { return ad::l1_loss(x, t, r); },
      py::arg("input"), py::arg("target"), py::arg("reduction") = "mean",
      "|input - target|, reduced.");
  m.def(
      "l1_loss_backward",
      [](const V& g, const V& x, const V& t, const std::string& r) {
        return ad::l1_loss_backward(g, x, t, r);
      },
      py::arg("grad"), py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  m.def(
      "binary_cross_entropy_with_logits",
      [](const V& x, const V& t, std::optional<V> weight, const std::string& r,
         std::optional<V> pos_weight) {
        if (!weight) return ad::binary_cross_entropy_with_logits(x, t, opt(pos_weight), r);
        // weight scales each element's loss before the reduction ('mean' stays a plain mean)
        const V loss =
            ad::binary_cross_entropy_with_logits(x, t, opt(pos_weight), "none") * *weight;
        if (r == "none") return loss;
        if (r == "sum") return ad::sum(loss);
        if (r == "mean") return ad::mean(loss);
        throw ember::ValueError("binary_cross_entropy_with_logits",
                                "reduction is '" + r + "'; expected 'none', 'mean' or 'sum'");
      },
      py::arg("input"), py::arg("target"), py::arg("weight") = py::none(),
      py::arg("reduction") = "mean", py::arg("pos_weight") = py::none(),
      "Binary cross entropy of logits against target probabilities of their shape; weight "
      "scales each element's loss, pos_weight the positive term.");
  m.def(
      "binary_cross_entropy_with_logits_backward",
      [](const V& g, const V& x, const V& t, std::optional<V> pw, const std::string& r) {
        return ad::binary_cross_entropy_with_logits_backward(g, x, t, opt(pw), r);
      },
      py::arg("grad"), py::arg("input"), py::arg("target"), py::arg("pos_weight") = py::none(),
      py::arg("reduction") = "mean");
}

}  // namespace ember::python
