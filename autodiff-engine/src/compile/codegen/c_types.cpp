// c_types.cpp — dtypes in generated source (see c_types.h).
#include "c_types.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

namespace ember::autodiff::compile::codegen {

const char* storage_type(DType t) {
  switch (t) {
    case DType::Bool:
      return "e_u8";
    case DType::UInt8:
      return "e_u8";
    case DType::Int8:
      return "e_i8";
    case DType::Int16:
      return "e_i16";
    case DType::Int32:
      return "e_i32";
    case DType::Int64:
      return "e_i64";
    case DType::Float16:
      return "e_u16";
    case DType::BFloat16:
      return "e_u16";
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
  }
  return "?";
}

const char* compute_type(DType t) {
  switch (t) {
    case DType::Bool:
      return "bool";
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
      return "float";
    default:
      return storage_type(t);
  }
}

namespace {

// A hexadecimal floating literal: exact, and the same text on every compiler.
std::string hex_literal(double value, bool single) {
  if (std::isnan(value)) return single ? "E_NAN_F" : "E_NAN_D";
  if (std::isinf(value))
    return std::string(value < 0 ? "(-" : "(") + (single ? "E_INF_F" : "E_INF_D") + ")";
  char text[64];
  std::snprintf(text, sizeof text, "%a", single ? double(float(value)) : value);
  return std::string("(") + text + (single ? "f)" : ")");
}

template <class I> std::string integer_literal(double value) {
  constexpr I lowest = std::numeric_limits<I>::lowest(), highest = std::numeric_limits<I>::max();
  const I v = value <= double(lowest) ? lowest : value >= double(highest) ? highest : I(value);
  if (std::is_same_v<I, int64_t> && v == lowest) return "(-9223372036854775807LL - 1)";
  return "((" + std::string(compute_type(dtype_of_v<I>)) + ")" + std::to_string(v) +
         (std::is_same_v<I, int64_t> ? "LL)" : ")");
}

}  // namespace

std::string literal(double value, DType t) {
  switch (t) {
    case DType::Bool:
      return value != 0.0 ? "true" : "false";
    case DType::UInt8:
      return integer_literal<uint8_t>(value);
    case DType::Int8:
      return integer_literal<int8_t>(value);
    case DType::Int16:
      return integer_literal<int16_t>(value);
    case DType::Int32:
      return integer_literal<int32_t>(value);
    case DType::Int64:
      return integer_literal<int64_t>(value);
    case DType::Float64:
      return hex_literal(value, false);
    default:
      return hex_literal(value, true);
  }
}

std::string load(DType t, const std::string& element) {
  switch (t) {
    case DType::Bool:
      return "(" + element + " != 0)";
    case DType::Float16:
      return "e_f16_to_f32(" + element + ")";
    case DType::BFloat16:
      return "e_bf16_to_f32(" + element + ")";
    default:
      return element;
  }
}

std::string store(DType t, const std::string& value) {
  switch (t) {
    case DType::Bool:
      return "(e_u8)(" + value + ")";
    case DType::Float16:
      return "e_f32_to_f16(" + value + ")";
    case DType::BFloat16:
      return "e_f32_to_bf16(" + value + ")";
    default:
      return value;
  }
}

std::string in_dtype(DType t, const std::string& expression) {
  switch (t) {
    case DType::Float16:
      return "e_round_f16(" + expression + ")";
    case DType::BFloat16:
      return "e_round_bf16(" + expression + ")";
    case DType::Bool:
    case DType::Float32:
    case DType::Float64:
      return expression;
    default:
      return "(" + std::string(compute_type(t)) + ")(" + expression + ")";
  }
}

std::string math_function(const char* name, DType t) {
  return std::string(name) + (t == DType::Float64 ? "" : "f");
}

}  // namespace ember::autodiff::compile::codegen
