// dispatch.h — the two dispatch helpers every op uses (internal header).
//
// 1. dispatch_dtype maps a runtime DType to a C++ type, so a kernel is written once as a template:
//      dispatch_floating(t.dtype(), "gelu", [&](auto tag) { using T = typename decltype(tag)::type;
//      ... });
// 2. Kernel<Signature> is one op's kernel table: a slot per device type, filled by each backend's
//    register function (cpu/register_kernels.cpp, cuda/register_kernels.cu). A front function
//    calls `add_kernel(device)(args...)`; a new backend fills the same slots and nothing above
//    changes.
#pragma once
#include <string>
#include <utility>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/half.h"

namespace ember {

template <class T> struct TypeTag { using type = T; };

#define EMBER_DTYPE_CASE(D, T) \
  case DType::D:               \
    return fn(TypeTag<T>{});

// Every dtype.
template <class F> decltype(auto) dispatch_all(DType dtype, const char* op, F&& fn) {
  switch (dtype) {
    EMBER_DTYPE_CASE(Bool, bool)
    EMBER_DTYPE_CASE(UInt8, uint8_t)
    EMBER_DTYPE_CASE(Int8, int8_t)
    EMBER_DTYPE_CASE(Int16, int16_t)
    EMBER_DTYPE_CASE(Int32, int32_t)
    EMBER_DTYPE_CASE(Int64, int64_t)
    EMBER_DTYPE_CASE(Float16, Half)
    EMBER_DTYPE_CASE(BFloat16, BFloat16)
    EMBER_DTYPE_CASE(Float32, float)
    EMBER_DTYPE_CASE(Float64, double)
  }
  throw DTypeError(op, "unknown dtype");
}

// Every dtype but bool (arithmetic).
template <class F> decltype(auto) dispatch_numeric(DType dtype, const char* op, F&& fn) {
  switch (dtype) {
    EMBER_DTYPE_CASE(UInt8, uint8_t)
    EMBER_DTYPE_CASE(Int8, int8_t)
    EMBER_DTYPE_CASE(Int16, int16_t)
    EMBER_DTYPE_CASE(Int32, int32_t)
    EMBER_DTYPE_CASE(Int64, int64_t)
    EMBER_DTYPE_CASE(Float16, Half)
    EMBER_DTYPE_CASE(BFloat16, BFloat16)
    EMBER_DTYPE_CASE(Float32, float)
    EMBER_DTYPE_CASE(Float64, double)
    default:
      break;
  }
  throw DTypeError(op, std::string("got ") + dtype_name(dtype) +
                           "; expected a numeric dtype. Cast first, e.g. x.to(DType::Int64)");
}

// float16, bfloat16, float32, float64.
template <class F> decltype(auto) dispatch_floating(DType dtype, const char* op, F&& fn) {
  switch (dtype) {
    EMBER_DTYPE_CASE(Float16, Half)
    EMBER_DTYPE_CASE(BFloat16, BFloat16)
    EMBER_DTYPE_CASE(Float32, float)
    EMBER_DTYPE_CASE(Float64, double)
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
#undef EMBER_DTYPE_CASE

// Makes sure the backend of `type` exists and has registered its kernels; throws DeviceError or
// NotSupportedError when the device is unavailable (defined in core/backend.cpp).
void ensure_backend(Device device, const char* op);

template <class Signature> class Kernel;

template <class R, class... Args> class Kernel<R(Args...)> {
 public:
  using Fn = R (*)(Args...);
  explicit Kernel(const char* name) : name_(name) {}

  void set(DeviceType type, Fn fn) { slots_[int(type)] = fn; }
  // The implementation for `device`; throws NotSupportedError naming the op when there is none.
  Fn operator()(Device device) const {
    ensure_backend(device, name_);
    Fn fn = slots_[int(device.type)];
    if (!fn)
      throw NotSupportedError(name_, "no kernel for device " + device.str() +
                                         "; move the operands to a device that supports it");
    return fn;
  }

 private:
  const char* name_;
  Fn slots_[kNumDeviceTypes] = {};
};

// Declares an op's kernel table in a header shared by its front function and its backends:
//   EMBER_KERNEL(add_kernel, void(BinaryOp, const Tensor&, const Tensor&, Tensor&));
#define EMBER_KERNEL(name, signature) \
  inline ::ember::Kernel<signature> name { #name }

}  // namespace ember
