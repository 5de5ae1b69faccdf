// error.h — the typed errors every public entry throws. Messages name the op, every operand's
// shape/dtype/device, what was expected and how to fix it.
#pragma once
#include <stdexcept>
#include <string>

namespace ember {

class Error : public std::runtime_error {
 public:
  Error(const std::string& op, const std::string& message)
      : std::runtime_error(op.empty() ? message : op + ": " + message), op_(op) {}
  const std::string& op() const { return op_; }

 private:
  std::string op_;
};

class ShapeError : public Error {
  using Error::Error;
};  // incompatible shapes
class DTypeError : public Error {
  using Error::Error;
};  // wrong or unsupported dtype
class DeviceError : public Error {
  using Error::Error;
};  // mixed or unavailable devices
class OutOfMemoryError : public Error {
  using Error::Error;
};  // allocator cap or device full
class NotSupportedError : public Error {
  using Error::Error;
};  // valid request not implemented
class ValueError : public Error {
  using Error::Error;
};  // bad argument value
class IndexError : public ValueError {
  using ValueError::ValueError;
};  // index out of range

}  // namespace ember
