// checks.h — argument checks shared by every op's front function (internal header).
// Each throws a typed error whose message names the op and every operand as
// "name is [shape] dtype device", then says what was expected.
#pragma once
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>

#include "ember/tensor.h"

namespace ember {

struct Named {
  const char* name;
  const Tensor& tensor;
};

// "a is [32, 784] float32 cpu, b is [748, 10] float32 cpu"
inline std::string operands(std::initializer_list<Named> args) {
  std::string s;
  for (const Named& a : args) {
    if (!s.empty()) s += ", ";
    s += std::string(a.name) + " is " + describe(a.tensor);
  }
  return s;
}

inline void check_defined(const char* op, std::initializer_list<Named> args) {
  for (const Named& a : args)
    if (!a.tensor.defined())
      throw ValueError(op, std::string(a.name) + " is an undefined tensor; pass a tensor");
}

// All operands on one device (Ember never copies between devices implicitly).
inline void check_same_device(const char* op, std::initializer_list<Named> args) {
  check_defined(op, args);
  const Device d = args.begin()->tensor.device();
  for (const Named& a : args)
    if (a.tensor.device() != d)
      throw DeviceError(op, operands(args) +
                                "; all operands must be on one device, move them "
                                "with .to(device) first");
}

// "DType::Float32": a dtype as C++ code names it, for the advice in messages (the Python
// bindings turn it into "ember.float32").
inline std::string dtype_cpp(DType t) {
  static const char* const names[] = {"Bool",  "UInt8",   "Int8",     "Int16",   "Int32",
                                      "Int64", "Float16", "BFloat16", "Float32", "Float64"};
  return std::string("DType::") + names[int(t)];
}

// All operands of one dtype.
inline void check_same_dtype(const char* op, std::initializer_list<Named> args) {
  const DType t = args.begin()->tensor.dtype();
  for (const Named& a : args)
    if (a.tensor.dtype() != t)
      throw DTypeError(op, operands(args) +
                               "; all operands must have one dtype, cast them "
                               "with .to(dtype) first");
}

inline void check_floating(const char* op, std::initializer_list<Named> args) {
  for (const Named& a : args)
    if (!is_floating(a.tensor.dtype()))
      throw DTypeError(op, operands(args) + "; " + a.name +
                               " must be a floating dtype (float16, bfloat16, float32, "
                               "float64); cast with .to(DType::Float32)");
}

// "300", "nan", "1e+20": a scalar as error messages show it.
inline std::string value_str(double value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

// ValueError unless dtype holds value (see dtype_holds): a fill would store a wrapped or
// undefined value instead.
inline void check_value_fits(const char* op, double value, DType dtype) {
  if (dtype_holds(dtype, value)) return;
  throw ValueError(op, "value " + value_str(value) + " cannot be converted to " +
                           dtype_name(dtype) + " without overflow; pass a value " +
                           dtype_name(dtype) + " can hold, or choose a wider dtype");
}

inline void check_dim(const char* op, const Named& a, int64_t ndim, const char* layout = "") {
  if (a.tensor.dim() != ndim)
    throw ShapeError(op, operands({a}) + "; expected " + std::to_string(ndim) + " dims" +
                             (*layout ? std::string(" ") + layout : std::string()));
}

// ---- outputs the caller provides (the `_out` forms) ----
// Every op `Tensor f(args...)` has a form `const Tensor& f_out(const Tensor& out, args...)` that
// writes the result into `out` and returns it. `out` must already have the result's exact shape,
// dtype and device: it is never resized or cast, because a memory planner or a replayed graph
// placed it. It may be any layout (a strided view of a larger buffer is fine). An elementwise op
// may write into the very view it reads (out identical to an input); any other overlap between
// out and an input is a ValueError, since the kernel would read values it has already replaced.

// The first and last byte offsets t can touch in its storage, as [begin, end).
inline std::pair<int64_t, int64_t> byte_span(const Tensor& t) {
  int64_t first = t.offset(), last = t.offset();
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1) last += (t.size(d) - 1) * t.stride(d);
  const int64_t item = int64_t(t.itemsize());
  return {first * item, (last + 1) * item};
}

inline bool same_view(const Tensor& a, const Tensor& b) {
  return a.shares_storage(b) && a.offset() == b.offset() && a.shape() == b.shape() &&
         a.strides() == b.strides() && a.dtype() == b.dtype();
}

// Whether a and b may touch the same bytes (a conservative test on their storage spans).
inline bool may_overlap(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || !a.shares_storage(b) || a.numel() == 0 || b.numel() == 0)
    return false;
  auto [a0, a1] = byte_span(a);
  auto [b0, b1] = byte_span(b);
  return a0 < b1 && b0 < a1;
}

// ShapeError/DTypeError/DeviceError unless out is defined with exactly this shape, dtype and
// device; ValueError when out is an expanded view (two elements share one address). `name` is the
// output's name in the message (an op with several outputs names each).
inline void check_out(const char* op, const Tensor& out, const Shape& shape, DType dtype,
                      Device device, const char* name = "out") {
  check_defined(op, {{name, out}});
  const std::string result = std::string("the result is ") + shape_str(shape) + " " +
                             dtype_name(dtype) + " " + device.str();
  const std::string who = operands({{name, out}}) + "; " + result + "; ";
  if (out.device() != device)
    throw DeviceError(op, who + "allocate " + name + " on the operands' device");
  if (out.shape() != shape)
    throw ShapeError(op, who + name + " must have the result's shape (it is never resized)");
  if (out.dtype() != dtype)
    throw DTypeError(op, who + name + " must have the result's dtype (it is never cast)");
  for (int64_t d = 0; d < out.dim(); ++d)
    if (out.stride(d) == 0 && out.size(d) > 1)
      throw ValueError(op, operands({{name, out}}) + "; " + name +
                               " is an expanded view whose elements share memory; pass a "
                               "tensor with one address per element");
}

// ValueError when out overlaps one of the inputs (beyond being the identical view, which
// elementwise ops allow with identical_ok).
inline void check_out_alias(const char* op, const Tensor& out, std::initializer_list<Named> inputs,
                            bool identical_ok, const char* name = "out") {
  for (const Named& a : inputs) {
    if (!may_overlap(out, a.tensor) || (identical_ok && same_view(out, a.tensor))) continue;
    throw ValueError(op, operands({{name, out}, a}) + "; " + name + " overlaps " + a.name +
                             ", so the kernel would read values it already overwrote; pass an " +
                             name + " that does not share memory with the inputs");
  }
}

}  // namespace ember
