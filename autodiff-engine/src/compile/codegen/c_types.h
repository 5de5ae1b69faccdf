// c_types.h — how a dtype appears in generated source: the type it is stored as, the type it is
// computed in, its literals, and the conversions between them (internal header).
//
// Values are computed as the library's kernels compute them (compute_t): float16 and bfloat16 in
// float, rounded back to their dtype after every op; integers in their own type, narrowed after
// every op as C++ narrows them. The types are the prelude's (e_i32, e_u16, ...), the same names on
// every target.
#pragma once
#include <string>

#include "ember/dtype.h"

namespace ember::autodiff::compile::codegen {

const char* storage_type(DType t);  // e_u16 for float16 and bfloat16, e_u8 for bool, ...
const char* compute_type(DType t);  // float, double, bool, e_i64, ...
// `value` as a constant of t's compute type (an integer type's infinities saturate, as clamp's).
std::string literal(double value, DType t);
// A stored element, read as the compute type.
std::string load(DType t, const std::string& element);
// A computed value, written as the storage type.
std::string store(DType t, const std::string& value);
// The value of an op in dtype t: rounded to float16/bfloat16, narrowed to a small integer type.
std::string in_dtype(DType t, const std::string& expression);
// The C function of a math routine in t's compute type: "exp" -> expf for float.
std::string math_function(const char* name, DType t);

}  // namespace ember::autodiff::compile::codegen
