// format.cpp — printing: "[2, 3] float32 cpu" for messages, NumPy-like values for people.
#include <iomanip>
#include <sstream>

#include "ember/tensor.h"

namespace ember {

std::string Tensor::str() const {
  return shape_str(shape_) + " " + dtype_name(dtype_) + " " + device().str();
}

namespace {
constexpr int64_t kEdgeItems = 3;     // items shown at each end of a long dim
constexpr int64_t kSummarise = 1000;  // tensors larger than this are summarised with "..."

void format_values(std::ostringstream& os, const std::vector<double>& v, const Shape& shape,
                   size_t dim, int64_t offset, bool floating, bool summarise, int indent) {
  if (shape.empty()) {
    os << v[size_t(offset)];
    return;
  }
  int64_t n = shape[dim];
  int64_t inner = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  os << '[';
  for (int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
      os << (dim + 1 == shape.size() ? "..., " : "...,\n" + std::string(size_t(indent + 1), ' '));
      i = n - kEdgeItems - 1;
      continue;
    }
    if (dim + 1 == shape.size()) {
      double x = v[size_t(offset + i)];
      if (floating) os << std::setprecision(4) << x;
      else os << int64_t(x);
    } else {
      format_values(os, v, shape, dim + 1, offset + i * inner, floating, summarise, indent + 1);
    }
    if (i + 1 < n)
      os << (dim + 1 == shape.size() ? ", " : ",\n" + std::string(size_t(indent + 1), ' '));
  }
  os << ']';
}
}  // namespace

std::string Tensor::to_string() const {
  std::ostringstream os;
  os << "tensor(";
  if (!defined()) return "tensor(undefined)";
  std::vector<double> values = to_vector<double>();
  format_values(os, values, shape_, 0, 0, is_floating(dtype_), numel() > kSummarise, 7);
  os << ", shape=" << shape_str(shape_) << ", dtype=" << dtype_name(dtype_)
     << ", device=" << device().str() << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace ember
