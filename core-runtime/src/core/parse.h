// parse.h — strict parsing of the numbers users write in strings and environment variables
// (internal header): digits only, no sign, no spaces, overflow checked.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace ember {

// The value of `digits` when it is one or more decimal digits and at most `max`; nullopt
// otherwise (strtol would take "12abc", " 12" or "-1", and clamp or wrap what is too large).
std::optional<int64_t> parse_decimal(const std::string& digits, int64_t max = INT64_MAX);

}  // namespace ember
