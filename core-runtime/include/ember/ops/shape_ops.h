// shape_ops.h — joining and splitting tensors: cat, stack, split, chunk.
#pragma once
#include <vector>

#include "ember/tensor.h"

namespace ember {

// Joins tensors along an existing dim; all other dims and the device must match. Mixed dtypes
// give their promote_types (int32 with float32 -> float32), as in PyTorch.
Tensor cat(const TensorList& tensors, int64_t dim = 0);
// Joins tensors of one shape along a new dim (dtypes promote as in cat).
Tensor stack(const TensorList& tensors, int64_t dim = 0);
// Views of consecutive pieces of `split_size` along dim (the last may be smaller).
TensorList split(const Tensor& t, int64_t split_size, int64_t dim = 0);
// Views of pieces with the given sizes, which must sum to t.size(dim).
TensorList split(const Tensor& t, const std::vector<int64_t>& sizes, int64_t dim = 0);
// Views of near-equal size along dim, as torch.chunk: ceil(n / chunks) each (so possibly fewer
// than `chunks`), and `chunks` empty views when the dim is empty.
// Every dim above must exist: a 0-d tensor has none, so it is an IndexError.
TensorList chunk(const Tensor& t, int64_t chunks, int64_t dim = 0);

// ---- outputs the caller provides ----
// cat and stack have a form that writes the joined tensor into `out` (exactly the result's shape,
// dtype and device: ShapeError, DTypeError, DeviceError; any strided view; not overlapping an
// input: ValueError) and returns it. split and chunk return views, and so do the Tensor methods
// reshape, view, transpose, permute, slice, select, narrow, expand, squeeze, unsqueeze and flatten:
// they write nothing and have no out form (copy a view into a tensor of your own with copy_).
const Tensor& cat_out(const Tensor& out, const TensorList& tensors, int64_t dim = 0);
const Tensor& stack_out(const Tensor& out, const TensorList& tensors, int64_t dim = 0);

}  // namespace ember
