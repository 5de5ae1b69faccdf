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

}  // namespace ember
