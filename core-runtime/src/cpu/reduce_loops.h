// reduce_loops.h — the CPU reduction engine (internal header).
//
// cpu_reduce<T>(x, nreduce, reducer, write) reduces x: [kept..., reduced...] over its last
// nreduce dims, with any strides, and calls write(o, acc) once per kept index o (row-major).
//   1. The kept dims and the reduced dims are each coalesced into a DimWalk (size-1 dims dropped,
//      neighbours contiguous with each other merged). For reducers whose result does not depend on
//      the visiting order, the reduced dims are first sorted by stride so the walk follows memory.
//   2. A run along the innermost reduced dim is folded into lanes<Acc>() independent lanes (32
//      floats: four AVX2 vectors, so the adds do not wait on each other's latency), in blocks of
//      pairwise_block<Acc>() elements combined pairwise: unit-stride runs vectorise, and float
//      rounding error grows with log(n), not n.
//   3. Threads split the outputs. With fewer outputs than threads (a full sum), each output's
//      elements are split into chunks instead. When the outputs are contiguous in x but the reduced
//      elements are not (a column sum), a tile of up to 16 KiB of neighbouring outputs' partial
//      results is accumulated together, so the inner loop runs along memory, one row at a time.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu/isa.h"
#include "cpu/parallel.h"
#include "ember/tensor.h"
#include "ops/reduction_kernels.h"  // DimWalk

namespace ember::cpu::EMBER_CPU_ISA {

// Lanes of the accumulator type: 128 bytes' worth (32 floats, 16 doubles), at least 8 and at most
// 32. Fewer lanes of float leave one vector whose every add waits for the one before it.
template <class Acc> constexpr int lanes() {
  return int(std::clamp<size_t>(128 / sizeof(Acc), 8, 32));
}
// Runs up to this long are folded straight into lanes: 64 elements per lane, so that the final
// fold of the lanes costs little beside the run.
template <class Acc> constexpr int64_t pairwise_block() { return 64 * lanes<Acc>(); }
// Partial results of a column reduction's tile, twice (L1): a whole row of 4096 floats, so that
// one thread reads the rows straight through, not 4 KiB of each (a new page every read).
constexpr int64_t kTileBytes = 16384;

// Folds p[0], p[stride], ..., p[(n-1)*stride] (flat indices i0, i0+1, ...), n <= pairwise_block,
// into lanes<Acc>() lanes and then the lanes into one accumulator.
template <bool Unit, class T, class R>
typename R::acc_t fold_lanes(const T* p, int64_t stride, int64_t n, int64_t i0, const R& r) {
  using Acc = typename R::acc_t;
  constexpr int L = lanes<Acc>();
  if (n < L) {  // too short for the lanes: their final fold would cost more than the run
    Acc acc = r.init();
    for (int64_t i = 0; i < n; ++i) acc = r.step(acc, p[Unit ? i : i * stride], i0 + i);
    return acc;
  }
  Acc lane[L];
  for (auto& a : lane) a = r.init();
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int k = 0; k < L; ++k)
      lane[k] = r.step(lane[k], p[Unit ? i + k : (i + k) * stride], i0 + i + k);
  for (int k = 0; k < L && i < n; ++i, ++k)  // the tail: fewer than L
    lane[k] = r.step(lane[k], p[Unit ? i : i * stride], i0 + i);
  for (int w = L / 2; w > 0; w /= 2)
    for (int k = 0; k < w; ++k) lane[k] = r.combine(lane[k], lane[k + w]);
  return lane[0];
}

// Folds p[0], p[stride], ..., p[(n-1)*stride] (flat indices i0, i0+1, ...) into an accumulator.
// A run longer than pairwise_block is cut into blocks of that length whose results are combined
// pairwise as a binary counter carries: blocks 0 and 1, then 2 and 3, then those two pairs, and so
// on, always an earlier result with a later one. The rounding error of a sum grows with log(n),
// as with recursive halving, but without a call per half: halving read 4096-float rows from
// memory at half the speed of this loop on a Zen 4.
template <bool Unit, class T, class R>
typename R::acc_t reduce_run(const T* p, int64_t stride, int64_t n, int64_t i0, const R& r) {
  using Acc = typename R::acc_t;
  constexpr int64_t block = pairwise_block<Acc>();
  if (n <= block) return fold_lanes<Unit>(p, stride, n, i0, r);
  Acc level[64];  // level[k]: the result of 2^k blocks, when bit k of the block count is set
  int64_t blocks = 0, i = 0;
  for (; i + block <= n; i += block, ++blocks) {
    Acc v = fold_lanes<Unit>(p + i * stride, stride, block, i0 + i, r);
    int k = 0;
    for (int64_t carry = blocks; carry & 1; carry >>= 1, ++k) v = r.combine(level[k], v);
    level[k] = v;
  }
  int k = 63;
  while (!(blocks >> k & 1)) --k;  // blocks >= 1: the earliest blocks sit at the highest level
  Acc acc = level[k];
  while (--k >= 0)
    if (blocks >> k & 1) acc = r.combine(acc, level[k]);
  if (i < n) acc = r.combine(acc, fold_lanes<Unit>(p + i * stride, stride, n - i, i0 + i, r));
  return acc;
}

// Folds the elements at flat indices [begin, end) of walk w, starting from base.
template <class T, class R>
typename R::acc_t reduce_span(const T* base, const DimWalk& w, int64_t begin, int64_t end,
                              const R& r) {
  typename R::acc_t acc = r.init();
  const int64_t inner = w.inner(), s = w.inner_stride();
  for (int64_t i = begin; i < end;) {
    int64_t j = i % inner, n = std::min(inner - j, end - i);
    const T* p = base + w.row_offset(i / inner) + j * s;
    acc =
        r.combine(acc, s == 1 ? reduce_run<true>(p, 1, n, i, r) : reduce_run<false>(p, s, n, i, r));
    i += n;
  }
  return acc;
}

// The most outputs a column reduction's tile holds: kTileBytes of partial results each for
// `total` and `part` below, and at most 4096 (bool).
template <class Acc> constexpr int64_t max_tile() {
  return std::min<int64_t>(kTileBytes / int64_t(sizeof(Acc)), 4096);
}
constexpr int64_t kColumnFlush = 128;  // steps between flushes of a column's partial result

// Outputs o0 .. o0+width-1 (width <= max_tile) whose elements sit side by side in x (base points
// at o0's first one): each reduced step folds one element into each of them. Partial results are
// flushed every kColumnFlush steps to bound the rounding error of long columns. Each output's
// fold depends on the steps only, not on the width, so any tiling gives the same bits.
template <class T, class R, class Write>
void reduce_tile(const T* base, const DimWalk& w, int64_t o0, int64_t width, const R& r,
                 Write& write) {
  using Acc = typename R::acc_t;
  Acc total[max_tile<Acc>()], part[max_tile<Acc>()];
  for (int64_t k = 0; k < width; ++k) total[k] = part[k] = r.init();
  const int64_t inner = w.inner(), s = w.inner_stride();
  const int64_t rows = w.numel == 0 ? 0 : w.numel / inner;
  int64_t i = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const T* q = base + w.row_offset(row);
    for (int64_t j = 0; j < inner; ++j, ++i) {
      const T* p = q + j * s;
      for (int64_t k = 0; k < width; ++k) part[k] = r.step(part[k], p[k], i);
      if ((i + 1) % kColumnFlush == 0)
        for (int64_t k = 0; k < width; ++k) {
          total[k] = r.combine(total[k], part[k]);
          part[k] = r.init();
        }
    }
  }
  for (int64_t k = 0; k < width; ++k) write(o0 + k, r.combine(total[k], part[k]));
}

// Below this many outputs a long reduction splits each output's elements over threads.
constexpr int64_t kFewOutputs = 8;

// x: [kept..., reduced...], the last nreduce dims reduced; write(o, acc) for each kept index o.
template <class T, class R, class Write>
void cpu_reduce(const Tensor& x, int64_t nreduce, const R& r, Write&& write) {
  using Acc = typename R::acc_t;
  const int64_t nkeep = x.dim() - nreduce;
  const DimWalk out = make_walk(x, 0, nkeep, false);  // outputs stay in row-major order
  const DimWalk red = make_walk(x, nkeep, x.dim(), !R::kOrdered);
  const int64_t outer = out.numel, n = red.numel;
  if (outer == 0) return;
  const T* base = x.data<T>();

  if (outer < kFewOutputs && n >= 2 * kParallelGrain) {
    // Few outputs, many elements: chunks of one output's elements go to threads. Neither this
    // choice nor the chunk count depends on the number of threads, so the rounding does not
    // change with it (the sum of a vector is the same bits on 1 thread and on 16).
    const int64_t chunks = std::min<int64_t>(n / kParallelGrain, 64);
    std::vector<Acc> part(size_t(chunks), r.init());
    for (int64_t o = 0; o < outer; ++o) {
      const T* p = base + out.offset(o);
      parallel_for(chunks, n / chunks, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c)
          part[size_t(c)] = reduce_span(p, red, n * c / chunks, n * (c + 1) / chunks, r);
      });
      Acc acc = part[0];
      for (int64_t c = 1; c < chunks; ++c) acc = r.combine(acc, part[size_t(c)]);
      write(o, acc);
    }
    return;
  }

  if (out.inner_stride() == 1 && out.inner() > 1 && red.inner_stride() != 1) {
    // Column reduction: tiles of neighbouring outputs, as wide as fits (one long contiguous
    // read per row) but narrow enough that every thread gets one.
    const int64_t width = out.inner(), threads = num_threads();
    const int64_t tile = std::min(max_tile<Acc>(), (width + threads - 1) / threads);
    const int64_t per_row = (width + tile - 1) / tile;
    parallel_for(outer / width * per_row, tile * n, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t col = t % per_row * tile, o0 = t / per_row * width + col;
        reduce_tile(base + out.offset(o0), red, o0, std::min(tile, width - col), r, write);
      }
    });
    return;
  }

  parallel_for(outer, n, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) write(o, reduce_span(base + out.offset(o), red, 0, n, r));
  });
}

}  // namespace ember::cpu::EMBER_CPU_ISA
