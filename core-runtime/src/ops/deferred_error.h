// deferred_error.h — a check whose failure depends on data the device holds (an index out of
// range, a class target outside [0, C)), written once by the front function for every backend
// (internal header).
//
// The message is known on the host except for the offending value: before + value + after. The
// CPU kernel finds the value and raises at once; a CUDA kernel writes the value into the device's
// error flag (cuda/device_error.cuh) and the next synchronising point raises the same error.
#pragma once
#include <cstdint>
#include <string>

#include "ember/error.h"

namespace ember {

struct DeferredError {
  enum class Kind { Index, Value };
  Kind kind = Kind::Index;
  const char* op = "";  // a string literal: the op's name
  std::string before, after;

  std::string message(int64_t value) const { return before + std::to_string(value) + after; }
  [[noreturn]] void raise(int64_t value) const {
    if (kind == Kind::Value) throw ValueError(op, message(value));
    throw IndexError(op, message(value));
  }
};

}  // namespace ember
