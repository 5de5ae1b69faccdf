// result_tensor.h — where an op's result goes: a new tensor, or the caller's `out` checked
// against the result (internal header; the rules are in ops/checks.h).
#pragma once
#include <initializer_list>

#include "ops/checks.h"

namespace ember {

// The out-of-place form passes out == nullptr and gets a new contiguous tensor of this shape,
// dtype and device; an `_out` form passes its out, which must match them exactly and overlap no
// input, except that with identical_ok it may be identical to one (elementwise ops read element i
// of every input before writing element i). out is written, so its version is bumped.
inline Tensor result_tensor(const char* op, const Tensor* out, const Shape& shape, DType dtype,
                            Device device, std::initializer_list<Named> inputs,
                            bool identical_ok = true) {
  if (!out) return Tensor::empty(shape, dtype, device, op);
  check_out(op, *out, shape, dtype, device);
  check_out_alias(op, *out, inputs, identical_ok);
  out->bump_version();
  return *out;
}

}  // namespace ember
