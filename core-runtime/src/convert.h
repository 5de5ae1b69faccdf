// convert.h — element conversion between any two of the ten dtypes, on host and GPU alike.
// float -> integer truncates toward zero (as C and PyTorch do); anything -> bool is "!= 0".
#pragma once
#include <type_traits>

#include "ember/dtype.h"
#include "ember/half.h"

namespace ember {

template <class To, class From> EMBER_HOST_DEVICE inline To convert(From x) {
  using FromC = compute_t<From>;
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<FromC>(x) != FromC(0);
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(static_cast<FromC>(x)));
  } else {
    return static_cast<To>(static_cast<FromC>(x));
  }
}

}  // namespace ember
