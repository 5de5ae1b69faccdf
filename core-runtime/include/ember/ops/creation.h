// creation.h — new tensors: uninitialised, constant, ranges, identity, and *_like variants.
//
// Every op returns a new contiguous tensor; dtype defaults to float32 and device to the CPU.
// A negative size is a ValueError naming the op, a size whose element or byte count overflows
// int64 a ShapeError, and a value the dtype cannot hold (dtype_holds: NaN or 300 for uint8, say)
// a ValueError naming the op, the value and the dtype.
#pragma once
#include <optional>

#include "ember/tensor.h"

namespace ember {

Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = Device());
Tensor zeros(const Shape& shape, DType dtype = DType::Float32, Device device = Device());
Tensor ones(const Shape& shape, DType dtype = DType::Float32, Device device = Device());
Tensor full(const Shape& shape, double value, DType dtype = DType::Float32,
            Device device = Device());
// A 0-d tensor holding value.
Tensor scalar_tensor(double value, DType dtype = DType::Float32, Device device = Device());

// [n]: start, start + step, ... up to but excluding end; n = ceil((end - start) / step).
// Without a dtype: int64 when start, end and step all have integral values, float32 otherwise
// (the C++ call cannot see whether 5 was written 5 or 5.0; pass a dtype to choose).
Tensor arange(double end, std::optional<DType> dtype = std::nullopt, Device device = Device());
Tensor arange(double start, double end, double step = 1.0,
              std::optional<DType> dtype = std::nullopt, Device device = Device());
// [steps]: evenly spaced from start to end, both included (steps == 1 gives [start]).
Tensor linspace(double start, double end, int64_t steps, DType dtype = DType::Float32,
                Device device = Device());
// [n, m] (m = n when m < 0): ones on the main diagonal, zeros elsewhere.
Tensor eye(int64_t n, int64_t m = -1, DType dtype = DType::Float32, Device device = Device());

// Same shape and device as t; dtype t's unless given.
Tensor empty_like(const Tensor& t, std::optional<DType> dtype = std::nullopt);
Tensor zeros_like(const Tensor& t, std::optional<DType> dtype = std::nullopt);
Tensor ones_like(const Tensor& t, std::optional<DType> dtype = std::nullopt);
Tensor full_like(const Tensor& t, double value, std::optional<DType> dtype = std::nullopt);

// ---- outputs the caller provides ----
// The ops whose result type the arguments give have a form that writes it into `out` (any
// strided view) and returns it, with the same arguments: out must have exactly the result's
// shape, dtype and device (ShapeError, DTypeError, DeviceError; never resized or cast). empty has
// none (nothing to write); for the *_like ops call zeros_out etc. with t's shape.
const Tensor& zeros_out(const Tensor& out, const Shape& shape, DType dtype = DType::Float32,
                        Device device = Device());
const Tensor& ones_out(const Tensor& out, const Shape& shape, DType dtype = DType::Float32,
                       Device device = Device());
const Tensor& full_out(const Tensor& out, const Shape& shape, double value,
                       DType dtype = DType::Float32, Device device = Device());
const Tensor& scalar_tensor_out(const Tensor& out, double value, DType dtype = DType::Float32,
                                Device device = Device());
const Tensor& arange_out(const Tensor& out, double end, std::optional<DType> dtype = std::nullopt,
                         Device device = Device());
const Tensor& arange_out(const Tensor& out, double start, double end, double step = 1.0,
                         std::optional<DType> dtype = std::nullopt, Device device = Device());
const Tensor& linspace_out(const Tensor& out, double start, double end, int64_t steps,
                           DType dtype = DType::Float32, Device device = Device());
const Tensor& eye_out(const Tensor& out, int64_t n, int64_t m = -1, DType dtype = DType::Float32,
                      Device device = Device());

}  // namespace ember
