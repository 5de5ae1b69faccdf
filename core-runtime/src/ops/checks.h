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

}  // namespace ember
