// format.cpp — repr(tensor) in PyTorch's layout: tensor([[1., 2.]], requires_grad=True).
// Values are read on the host once (which synchronises on CUDA), then laid out per dim, each
// element right-aligned to the widest one; tensors above 1000 elements show 3 at each end.
#include <ember/dtype.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "bindings.h"

namespace ember::python {

namespace {

constexpr int64_t kEdge = 3;
constexpr int64_t kSummarise = 1000;

// How every element of one tensor is written: "1.", "1.5000", "1.0000e+08", "7", "True".
struct ElementStyle {
  DType dtype;
  bool integral = true, scientific = false;

  explicit ElementStyle(DType d, const std::vector<double>& v) : dtype(d) {
    if (!is_floating(d)) return;
    double largest = 0, smallest = INFINITY;
    for (double x : v) {
      if (!std::isfinite(x)) continue;
      integral = integral && x == std::floor(x);
      largest = std::max(largest, std::fabs(x));
      if (x != 0) smallest = std::min(smallest, std::fabs(x));
    }
    scientific = largest >= 1e8 || (smallest < 1e-4 && !integral) || (largest / smallest > 1e6);
  }

  std::string str(double x) const {
    if (dtype == DType::Bool) return x != 0 ? "True" : "False";
    char buf[64];
    if (!is_floating(dtype)) std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(x));
    else if (std::isnan(x)) return "nan";
    else if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    else if (scientific) std::snprintf(buf, sizeof buf, "%.4e", x);
    else if (integral) std::snprintf(buf, sizeof buf, "%.0f.", x);
    else std::snprintf(buf, sizeof buf, "%.4f", x);
    return buf;
  }
};

struct Printer {
  const std::vector<double>& values;
  const Shape& shape;     // of the values shown
  const Shape& original;  // a dim larger than 2 * kEdge is shown as its ends around "..."
  const ElementStyle& style;
  size_t width;
  std::ostringstream os;

  void print(size_t dim, int64_t offset, size_t indent) {
    if (shape.empty()) return element(values[0]);
    const int64_t n = shape[dim];
    int64_t inner = 1;
    for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
    const bool last = dim + 1 == shape.size();
    const std::string sep =
        last ? ", "
             : "," + std::string(shape.size() - dim - 1, '\n') + std::string(indent + 1, ' ');
    os << '[';
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) os << sep;
      if (i == kEdge && original[dim] > n) os << "..." << sep;
      if (last) element(values[size_t(offset + i)]);
      else print(dim + 1, offset + i * inner, indent + 1);
    }
    os << ']';
  }
  void element(double x) {
    const std::string s = style.str(x);
    os << std::string(width > s.size() ? width - s.size() : 0, ' ') << s;
  }
};

// The elements shown: every one, or the first and last kEdge of each dim when summarised.
std::vector<double> shown_values(const Tensor& t, bool summarise) {
  const DType wide = is_floating(t.dtype()) ? DType::Float64 : DType::Int64;
  if (!summarise) return t.to(Device(), wide).to_vector<double>();
  Tensor edges = t;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (edges.size(d) <= 2 * kEdge) continue;
    Tensor head = edges.slice(d, 0, kEdge),
           tail = edges.slice(d, edges.size(d) - kEdge, Slice::kEnd);
    Shape s = edges.shape();
    s[size_t(d)] = 2 * kEdge;
    Tensor both = Tensor::empty(s, edges.dtype(), edges.device());
    both.slice(d, 0, kEdge).copy_(head);
    both.slice(d, kEdge, 2 * kEdge).copy_(tail);
    edges = both;
  }
  return edges.to(Device(), wide).to_vector<double>();
}

}  // namespace

std::string tensor_repr(const Variable& v) {
  check_host_read("repr", "printing a tensor (print, str, repr, an f-string)");
  const Tensor& t = v.data();
  const bool summarise = t.numel() > kSummarise;
  std::vector<double> values = shown_values(t, summarise);
  ElementStyle style(t.dtype(), values);
  size_t width = 0;
  for (double x : values) width = std::max(width, style.str(x).size());
  Shape shown = t.shape();
  if (summarise)
    for (int64_t& s : shown) s = std::min(s, 2 * kEdge);
  Printer p{values, shown, t.shape(), style, width, {}};
  p.os << "tensor(";
  if (t.numel() == 0) p.os << "[]";
  else p.print(0, 0, 7);
  if (t.numel() == 0 && t.dim() > 1) {
    p.os << ", size=(";
    for (int64_t d = 0; d < t.dim(); ++d) p.os << (d ? ", " : "") << t.size(d);
    p.os << ")";
  }
  const DType d = t.dtype();
  if (d != DType::Float32 && d != DType::Int64 && d != DType::Bool)
    p.os << ", dtype=ember." << dtype_name(d);
  if (!t.device().is_cpu()) p.os << ", device='" << t.device().str() << "'";
  if (!v.is_leaf()) p.os << ", grad_fn=<" << v.op_name() << ">";
  else if (v.requires_grad()) p.os << ", requires_grad=True";
  p.os << ")";
  return p.os.str();
}

}  // namespace ember::python
