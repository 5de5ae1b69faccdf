// test_conv_scratch.cpp — the CPU convolutions' im2col scratch on many threads: its total stays
// within the larger of the conv's input and output (plus each thread's copy of grad_w for the
// weight gradient) however many threads run, and the results equal those of one thread. On a
// machine of fewer cores the thread pool still runs that many threads: the bound is the
// kernels' own arithmetic, not the hardware's.
#include <algorithm>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::random_tensor;

struct Threads {
  int saved = get_num_threads();
  explicit Threads(int n) { set_num_threads(n); }
  ~Threads() { set_num_threads(saved); }
};

struct Conv {
  Shape x, w;
  int64_t stride, padding;
};

// The bytes one call allocates beyond its result, at its worst: the scratch.
template <class F> int64_t scratch_of(F&& call, int64_t result_bytes) {
  const int64_t before = memory_stats().in_use;
  reset_peak_memory();
  Tensor r = call();
  return memory_stats().peak - before - result_bytes;
}

TEST(ConvScratch, StaysWithinTheActivationsOnSixteenThreads) {
  // The digits CNN's second conv at batch 16 and 64 (where 16 threads each unfolding their own
  // images held five times its output), its first, a strided padded one and a pointwise one.
  const Conv convs[] = {{{16, 16, 13, 13}, {32, 16, 3, 3}, 1, 0},
                        {{64, 16, 13, 13}, {32, 16, 3, 3}, 1, 0},
                        {{32, 1, 28, 28}, {16, 1, 3, 3}, 1, 0},
                        {{20, 8, 15, 17}, {12, 8, 5, 3}, 2, 1},
                        {{24, 32, 9, 9}, {16, 32, 1, 1}, 1, 0}};
  for (const Conv& c : convs) {
    SCOPED_TRACE("x " + shape_str(c.x) + " w " + shape_str(c.w));
    const Tensor x = random_tensor(c.x, 1), w = random_tensor(c.w, 2);
    Tensor y1, gx1, gw1;
    {
      const Threads one(1);
      y1 = conv2d(x, w, Tensor(), c.stride, c.padding);
      const Tensor g = random_tensor(y1.shape(), 3);
      gx1 = conv2d_backward_input(g, w, c.x, c.stride, c.padding);
      gw1 = conv2d_backward_weight(g, x, c.w, c.stride, c.padding);
    }
    const Threads many(16);
    const Tensor g = random_tensor(y1.shape(), 3);
    const int64_t in_bytes = x.nbytes(), out_bytes = y1.nbytes();
    // Blocks round up to 512 B: the result's and the scratch buffers' (a few) may add that much.
    const int64_t bound = std::max(in_bytes, out_bytes) + 4 * 512;
    EXPECT_LE(scratch_of([&] { return conv2d(x, w, Tensor(), c.stride, c.padding); }, out_bytes),
              bound);
    EXPECT_LE(scratch_of([&] { return conv2d_backward_input(g, w, c.x, c.stride, c.padding); },
                         in_bytes),
              bound);
    EXPECT_LE(scratch_of([&] { return conv2d_backward_weight(g, x, c.w, c.stride, c.padding); },
                         w.nbytes()),
              bound);
    expect_close(conv2d(x, w, Tensor(), c.stride, c.padding), y1, 1e-5, 1e-5);
    expect_close(conv2d_backward_input(g, w, c.x, c.stride, c.padding), gx1, 1e-5, 1e-5);
    expect_close(conv2d_backward_weight(g, x, c.w, c.stride, c.padding), gw1, 1e-4, 1e-5);
  }
}

}  // namespace
}  // namespace ember
