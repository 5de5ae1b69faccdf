// parse.cpp — strict decimal parsing for device strings and environment variables.
#include "core/parse.h"

namespace ember {

std::optional<int64_t> parse_decimal(const std::string& digits, int64_t max) {
  if (digits.empty()) return std::nullopt;
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, c - '0', &value))
      return std::nullopt;
  }
  if (value > max) return std::nullopt;
  return value;
}

}  // namespace ember
