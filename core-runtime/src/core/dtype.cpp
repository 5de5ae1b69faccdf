// dtype.cpp — sizes, names and type promotion.
#include "ember/dtype.h"

#include <cfloat>
#include <cmath>

#include "ember/error.h"

namespace ember {

size_t itemsize(DType t) {
  static constexpr size_t sizes[kNumDTypes] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return sizes[int(t)];
}

const char* dtype_name(DType t) {
  static constexpr const char* names[kNumDTypes] = {"bool",    "uint8",  "int8",    "int16",
                                                    "int32",   "int64",  "float16", "bfloat16",
                                                    "float32", "float64"};
  return names[int(t)];
}

DType dtype_from_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == dtype_name(DType(i))) return DType(i);
  if (name == "float") return DType::Float32;
  if (name == "double") return DType::Float64;
  if (name == "half") return DType::Float16;
  if (name == "long") return DType::Int64;
  if (name == "int") return DType::Int32;
  throw ValueError("dtype", "unknown dtype '" + name +
                                "'; expected one of bool, uint8, int8, int16, int32, int64, "
                                "float16, bfloat16, float32, float64");
}

bool dtype_holds(DType dtype, double value) {
  // Per dtype the finite values it holds: [lowest, highest] for floating dtypes, and for integer
  // dtypes [lowest, bound) with bound = max + 1, a power of two that a double holds exactly.
  struct Range {
    double lowest, bound;
  };
  static constexpr Range ranges[kNumDTypes] = {{0, 0},                     // bool: any value
                                               {0, 0x1p8},                 // uint8
                                               {-0x1p7, 0x1p7},            // int8
                                               {-0x1p15, 0x1p15},          // int16
                                               {-0x1p31, 0x1p31},          // int32
                                               {-0x1p63, 0x1p63},          // int64
                                               {-65504.0, 65504.0},        // float16
                                               {-0x1.fep127, 0x1.fep127},  // bfloat16
                                               {-FLT_MAX, FLT_MAX},        // float32
                                               {-DBL_MAX, DBL_MAX}};       // float64
  const Range r = ranges[int(dtype)];
  if (dtype == DType::Bool) return true;
  if (is_floating(dtype)) return !std::isfinite(value) || (value >= r.lowest && value <= r.bound);
  const double truncated = std::trunc(value);  // NaN and the infinities fail both comparisons
  return truncated >= r.lowest && truncated < r.bound;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    if ((a == DType::Float16 && b == DType::BFloat16) ||
        (a == DType::BFloat16 && b == DType::Float16))
      return DType::Float32;
    return itemsize(a) >= itemsize(b) ? a : b;
  }
  if (fa) return a;  // float beats any integer (PyTorch keeps the float's width)
  if (fb) return b;
  // Two distinct integer types. uint8 with a signed type needs a signed type wider than 8 bits.
  if (a == DType::UInt8 || b == DType::UInt8) {
    DType other = a == DType::UInt8 ? b : a;
    return other == DType::Int8 ? DType::Int16 : other;
  }
  return itemsize(a) >= itemsize(b) ? a : b;
}

namespace {
int kind(DType t) { return t == DType::Bool ? 0 : is_floating(t) ? 2 : 1; }
}  // namespace

DType result_type(DType a, bool a_0d, DType b, bool b_0d) {
  if (a_0d == b_0d) return promote_types(a, b);
  const DType dimensioned = a_0d ? b : a, zero_dim = a_0d ? a : b;
  return kind(zero_dim) > kind(dimensioned) ? zero_dim : dimensioned;
}

}  // namespace ember
