// dispatch.h — the dtype dispatchers (dispatch_all, _numeric, _floating, _index,
// _window_offsets): each maps a runtime DType to a C++ type, so that a kernel is written once as
// a template (internal header):
//   dispatch_floating(t.dtype(), "gelu", [&](auto tag) { using T = typename decltype(tag)::type;
//   ... });
// Dispatch on the device is the kernel table's (kernels.h): `add_kernel(device)(args...)`.
#pragma once
#include <string>
#include <utility>

#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/half.h"

namespace ember {

template <class T> struct TypeTag { using type = T; };

#define EMBER_DTYPE_CASE(D, T) \
  case DType::D:               \
    return fn(TypeTag<T>{});
// The integer and the floating dtypes, each group once for the dispatchers below.
#define EMBER_INTEGER_CASES        \
  EMBER_DTYPE_CASE(UInt8, uint8_t) \
  EMBER_DTYPE_CASE(Int8, int8_t)   \
  EMBER_DTYPE_CASE(Int16, int16_t) \
  EMBER_DTYPE_CASE(Int32, int32_t) \
  EMBER_DTYPE_CASE(Int64, int64_t)
#define EMBER_FLOATING_CASES           \
  EMBER_DTYPE_CASE(Float16, Half)      \
  EMBER_DTYPE_CASE(BFloat16, BFloat16) \
  EMBER_DTYPE_CASE(Float32, float)     \
  EMBER_DTYPE_CASE(Float64, double)

// Every dtype.
template <class F> decltype(auto) dispatch_all(DType dtype, const char* op, F&& fn) {
  switch (dtype) {
    EMBER_DTYPE_CASE(Bool, bool)
    EMBER_INTEGER_CASES
    EMBER_FLOATING_CASES
  }
  throw DTypeError(op, "unknown dtype");
}

// Every dtype but bool (arithmetic).
template <class F> decltype(auto) dispatch_numeric(DType dtype, const char* op, F&& fn) {
  switch (dtype) {
    EMBER_INTEGER_CASES
    EMBER_FLOATING_CASES
    default:
      break;
  }
  throw DTypeError(op, std::string("got ") + dtype_name(dtype) +
                           "; expected a numeric dtype. Cast first, e.g. x.to(DType::Int64)");
}

// float16, bfloat16, float32, float64.
template <class F> decltype(auto) dispatch_floating(DType dtype, const char* op, F&& fn) {
  switch (dtype) {
    EMBER_FLOATING_CASES
    default:
      break;
  }
  throw DTypeError(op, std::string("got ") + dtype_name(dtype) +
                           "; expected a floating dtype (float16, bfloat16, float32, float64). "
                           "Cast first, e.g. x.to(DType::Float32)");
}

// Integer dtypes (for indices): int32 and int64.
template <class F> decltype(auto) dispatch_index(DType dtype, const char* op, F&& fn) {
  switch (dtype) {
    EMBER_DTYPE_CASE(Int32, int32_t)
    EMBER_DTYPE_CASE(Int64, int64_t)
    default:
      break;
  }
  throw DTypeError(op, std::string("indices are ") + dtype_name(dtype) +
                           "; expected int64 (or int32). Cast first, e.g. idx.to(DType::Int64)");
}
// Max-pool's window offsets (max_pool2d_offsets_dtype): uint8, int32 or int64.
template <class F> decltype(auto) dispatch_window_offsets(DType dtype, const char* op, F&& fn) {
  switch (dtype) {
    EMBER_DTYPE_CASE(UInt8, uint8_t)
    EMBER_DTYPE_CASE(Int32, int32_t)
    EMBER_DTYPE_CASE(Int64, int64_t)
    default:
      break;
  }
  throw DTypeError(op, std::string("window offsets must be uint8, int32 or int64, got ") +
                           dtype_name(dtype));
}
#undef EMBER_FLOATING_CASES
#undef EMBER_INTEGER_CASES
#undef EMBER_DTYPE_CASE

}  // namespace ember
