// rearrange.h — ops that move elements to new positions without changing them: tril/triu, flip,
// roll, repeat and tile.
//
// Each returns a new contiguous tensor of x's dtype on x's device, takes x of any layout, and has
// an `_out` form writing into a caller-given out of exactly the result's shape, dtype and device
// (any strides; see elementwise.h). out may not overlap x, except that tril_out/triu_out may write
// into x itself (tril_out(x, x) zeroes x above the diagonal). A dim may be negative (counted from
// the end); one out of range is an IndexError.
#pragma once
#include <cstdint>
#include <vector>

#include "ember/tensor.h"

namespace ember {

// x: [*, n, m] (at least 2 dims) -> [*, n, m]: every matrix of the last two dims with the elements
// above (tril) or below (triu) diagonal k set to zero. tril keeps element (i, j) where j - i <= k,
// triu where j - i >= k; k = 0 is the main diagonal, k > 0 above it, k < 0 below it.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);

// x: [*] -> [*], the order of the elements reversed along each dim of dims (distinct dims).
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);

// x: [*] -> [*], shifted by shifts[i] along dims[i] (elements pushed past the end come back at
// the start; a negative shift moves toward the start), as torch.roll. shifts and dims have equal
// lengths; a dim may repeat (its shifts add up). With dims empty, x is flattened, rolled by the
// single shift, and given back its shape.
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts,
            const std::vector<int64_t>& dims = {});

// torch.Tensor.repeat: x: [s0, ..., sk] -> [r0 * s0', ..., rn * sn'], x tiled repeats[d] times
// along dim d, where repeats has n + 1 >= k + 1 entries and x is read as having n - k leading
// dims of size 1 (x [2, 3] with repeats {2, 1, 2} gives [2, 2, 6]). Repeats are >= 0.
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats);
// numpy.tile / torch.tile: as repeat, but fewer reps than x has dims are padded with leading 1s
// (x [2, 3] with reps {2} gives [2, 6]).
Tensor tile(const Tensor& x, const std::vector<int64_t>& reps);

const Tensor& tril_out(const Tensor& out, const Tensor& x, int64_t diagonal = 0);
const Tensor& triu_out(const Tensor& out, const Tensor& x, int64_t diagonal = 0);
const Tensor& flip_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims);
const Tensor& roll_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& shifts,
                       const std::vector<int64_t>& dims = {});
const Tensor& repeat_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& repeats);
const Tensor& tile_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& reps);

}  // namespace ember
