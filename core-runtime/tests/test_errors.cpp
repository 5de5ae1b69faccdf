// test_errors.cpp — the error hierarchy, which the Python package maps onto Python's built-ins.
#include <type_traits>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_error;

TEST(Errors, EveryErrorIsAnEmberError) {
  static_assert(std::is_base_of_v<std::runtime_error, Error>);
  static_assert(std::is_base_of_v<Error, ShapeError>);
  static_assert(std::is_base_of_v<Error, DTypeError>);
  static_assert(std::is_base_of_v<Error, DeviceError>);
  static_assert(std::is_base_of_v<Error, OutOfMemoryError>);
  static_assert(std::is_base_of_v<Error, NotSupportedError>);
  static_assert(std::is_base_of_v<Error, ValueError>);
  static_assert(std::is_base_of_v<Error, IndexError>);
}

// Python's IndexError is a LookupError, so `except ValueError` must not catch an index error.
TEST(Errors, IndexErrorIsNotAValueError) {
  static_assert(!std::is_base_of_v<ValueError, IndexError>);
  Tensor x = Tensor::empty({3});
  try {
    x.select(0, 5);
    ADD_FAILURE() << "expected an IndexError";
  } catch (const ValueError&) {
    ADD_FAILURE() << "an IndexError was caught as a ValueError";
  } catch (const IndexError& e) {
    EXPECT_EQ(e.op(), "select");
  }
  expect_error<IndexError>([&] { x.size(1); }, {"size", "dim 1", "[-1, 0]"});
}

}  // namespace
}  // namespace ember
