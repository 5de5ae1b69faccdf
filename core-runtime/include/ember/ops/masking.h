// masking.h — ops that find, read or write elements by a bool mask or by index tensors: what
// Python's `x[mask]`, `x[mask] = v`, `x[idx] = v` and `x[idx] += v` reduce to.
#pragma once
#include <vector>

#include "ember/tensor.h"

namespace ember {

// x: [*], any dtype -> int64 [n, x.dim()]: the coordinates of x's n nonzero (true) elements, one
// row each, in row-major order (as torch.nonzero). A 0-d x gives [0 or 1, 0].
// n depends on the data, so there is no nonzero_out; on CUDA the count is read back to the host,
// which synchronises (as in PyTorch).
Tensor nonzero(const Tensor& x);

// x: [*], mask: bool, broadcast together -> [n], x's dtype: the elements of x where mask is true,
// in row-major order of the broadcast shape (as torch.masked_select). Like nonzero, n depends on
// the data: no masked_select_out, and CUDA synchronises once to read n.
Tensor masked_select(const Tensor& x, const Tensor& mask);

// The index list of index_put: entry k indexes the next dim(s) of the tensor, in order.
//   - an undefined Tensor() is a full slice ":" of one dim;
//   - an int64 or int32 tensor picks positions along one dim; negative values count from the end;
//   - a bool tensor of m dims is a mask over the next m dims (its shape must equal theirs); it
//     stands for its nonzero() coordinates, one index tensor per dim, as NumPy does.
// Dims past the end of the list are full slices. The index tensors (masks included) broadcast
// together to one shape B. The indexed shape is x's shape with the indexed dims replaced by B,
// in their place when they are adjacent, else first (NumPy's rule):
//   x: [5, 6, 7], {Tensor(), i: [2, 3]} -> [5, 2, 3, 7];  {i: [4], Tensor(), j: [4]} -> [4, 6].
using IndexList = std::vector<Tensor>;

// A copy of x with x[indices] = values (accumulate=false) or x[indices] += values (true).
// values: x's dtype and device, broadcastable to the indexed shape. With accumulate, repeated
// positions add up (in order on the CPU; with atomics in any order on CUDA, so float sums may
// differ in the last bits); without it, one of the repeated writes wins (the last in row-major
// order on the CPU, any one on CUDA). accumulate is not defined for bool x (DTypeError).
// An index outside [-size, size) is an IndexError naming the op, the index, the dim and its size.
Tensor index_put(const Tensor& x, const IndexList& indices, const Tensor& values,
                 bool accumulate = false);
// index_put into out (x's shape, dtype and device); out may be x itself; returns out.
const Tensor& index_put_out(const Tensor& out, const Tensor& x, const IndexList& indices,
                            const Tensor& values, bool accumulate = false);
// In place on self (which must not be an expanded view); returns self. `self[idx] = v` is
// index_put_(self, {idx}, v); `self[idx] += v` in Python is a read, an add and
// index_put_(self, {idx}, self[idx] + v) without accumulate, so repeated positions add v once.
const Tensor& index_put_(const Tensor& self, const IndexList& indices, const Tensor& values,
                         bool accumulate = false);

}  // namespace ember
