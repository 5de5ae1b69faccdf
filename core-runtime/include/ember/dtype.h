// dtype.h — the ten element types, their sizes and names, and NumPy/PyTorch-style promotion.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "ember/half.h"

namespace ember {

enum class DType : uint8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64
};
constexpr int kNumDTypes = 10;

size_t itemsize(DType t);
const char* dtype_name(DType t);                 // "float32", "int64", ...
DType dtype_from_name(const std::string& name);  // throws ValueError for unknown names

inline bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
inline bool is_integral(DType t, bool include_bool = false) {
  return (t >= DType::UInt8 && t <= DType::Int64) || (include_bool && t == DType::Bool);
}

// Whether `value` converts to dtype without overflow (PyTorch's checked scalar conversion): an
// integer dtype needs a finite value whose truncation toward zero it holds (300 does not fit
// uint8, NaN fits no integer dtype); a floating dtype takes NaN, the infinities and finite values
// up to its largest magnitude (1e5 does not fit float16); bool takes any value (non-zero: true).
bool dtype_holds(DType dtype, double value);

// Result type of a binary op on operands of these types (PyTorch's rules for tensors:
// bool < integers < floats; uint8 with a signed int widens; float16 with bfloat16 gives float32).
DType promote_types(DType a, DType b);

// Result type of a binary op on two tensors, where a_0d / b_0d say which are 0-d. PyTorch's rule:
// a 0-d tensor beside one with dims acts like a Python number of its kind, deciding the dtype only
// when its kind (bool < integer < floating) is higher: float32 [3] + float64 [] -> float32,
// int32 [3] + int64 [] -> int32, but int32 [3] + float64 [] -> float64. Two 0-d operands, or two
// with dims, promote with promote_types.
DType result_type(DType a, bool a_0d, DType b, bool b_0d);

// C++ type <-> DType.
template <class T> struct dtype_of;
#define EMBER_DTYPE_OF(T, D) \
  template <> struct dtype_of<T> { static constexpr DType value = DType::D; };
EMBER_DTYPE_OF(bool, Bool)
EMBER_DTYPE_OF(uint8_t, UInt8)
EMBER_DTYPE_OF(int8_t, Int8)
EMBER_DTYPE_OF(int16_t, Int16)
EMBER_DTYPE_OF(int32_t, Int32)
EMBER_DTYPE_OF(int64_t, Int64)
EMBER_DTYPE_OF(Half, Float16)
EMBER_DTYPE_OF(BFloat16, BFloat16)
EMBER_DTYPE_OF(float, Float32)
EMBER_DTYPE_OF(double, Float64)
#undef EMBER_DTYPE_OF
template <class T> constexpr DType dtype_of_v = dtype_of<T>::value;

// Type used for arithmetic on T: half types compute in float, others in themselves.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<Half> { using type = float; };
template <> struct compute_type<BFloat16> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

}  // namespace ember
