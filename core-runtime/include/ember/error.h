// error.h — the typed errors every public entry throws. Messages name the op, every operand's
// shape/dtype/device, what was expected and how to fix it.
//
// The Python package raises each as a subclass of the built-in exception named beside it, so that
// `except ValueError:` or `except TypeError:` works as a Python user expects. The C++ hierarchy
// follows Python's: IndexError is not a ValueError (Python's IndexError is a LookupError).
#pragma once
#include <stdexcept>
#include <string>

#include "ember/export.h"

namespace ember {

// Python: RuntimeError. The base of every Ember error; catch it to catch them all.
class EMBER_API Error : public std::runtime_error {
 public:
  Error(const std::string& op, const std::string& message)
      : std::runtime_error(op.empty() ? message : op + ": " + message), op_(op) {}
  const std::string& op() const { return op_; }

 private:
  std::string op_;
};

// Python: ValueError. Incompatible shapes.
class EMBER_API ShapeError : public Error {
  using Error::Error;
};
// Python: TypeError. A wrong or unsupported dtype (as PyTorch and NumPy raise TypeError for one).
class EMBER_API DTypeError : public Error {
  using Error::Error;
};
// Python: RuntimeError. Mixed or unavailable devices, and a failed CUDA call or kernel fault.
class EMBER_API DeviceError : public Error {
  using Error::Error;
};
// Python: MemoryError. The allocator's cap was reached or the device is full.
class EMBER_API OutOfMemoryError : public Error {
  using Error::Error;
};
// Python: NotImplementedError. A valid request that is not implemented (for this device).
class EMBER_API NotSupportedError : public Error {
  using Error::Error;
};
// Python: ValueError. A bad argument value.
class EMBER_API ValueError : public Error {
  using Error::Error;
};
// Python: IndexError. An index or dim out of range.
class EMBER_API IndexError : public Error {
  using Error::Error;
};

}  // namespace ember
