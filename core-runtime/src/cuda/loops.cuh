// loops.cuh — the GPU elementwise engine (internal header), the CUDA twin of cpu/loops.h.
//
// Every elementwise kernel on CUDA (unary, binary, where, casts, copies, fills) is a function
// object handed to gpu_map(), which writes out[i] = f(in0[i], in1[i], ...):
//
//   gpu_map<float, float, float>("add", out, {a, b},
//                                [] __device__(float x, float y) { return x + y; });
//
// The caller has broadcast every input to out's shape (expand: stride-0 views), so the engine
// sees N operands of one shape with arbitrary strides, and runs the first of three paths that
// applies:
//
// 1. Contiguous: every operand dense and row-major, and aligned for vector access. This is the
//    common case, and it must run at the speed of memory. Each thread loads VEC elements of each
//    operand at a time, VEC chosen so that the widest operand moves 16 bytes in one instruction
//    (4 floats, 8 halves, ...), and kMapUnroll such vectors before using the first, so that
//    enough bytes are in flight to hide the latency of memory. The grid is as many blocks as the
//    GPU holds at once, each looping over the tensor in tiles (a grid-stride loop); a warp's
//    accesses are consecutive, so they coalesce.
// 2. Strided, by vectors: after merging dims (see 3), the innermost dim has stride 1 in every
//    operand, its size and every other dim's stride (0 included) are multiples of VEC, and every
//    operand is aligned to a vector: a head of GPT's [B, T, 3C] projection viewed as
//    [B, H, T, D], a [N, C] row slice plus a broadcast [C] bias. The walk of 3 then runs over
//    vectors of VEC elements, sizes and strides counted in vectors: one index computation and
//    one 16-byte access per VEC elements. Walking elements, such a map is bound by the index
//    math and the 2-byte accesses, not by bandwidth (a bfloat16 head copy: ~1.2 TB/s on an
//    H100, against ~3 TB/s for path 1).
// 3. Strided, by elements: anything else, with the kernel of 2 at VEC = 1. Dims that are
//    contiguous with their neighbour in every operand are merged first, as on the CPU: a [N, C]
//    tensor plus a broadcast [C] bias is 2 dims, a whole contiguous tensor 1. Each thread turns
//    a linear index into one offset per operand through the merged shape and strides. Index
//    math is 32-bit whenever the offsets fit, and the divisions by the sizes are then
//    multiplications by a magic number (Divmod); a 64-bit division costs dozens of
//    instructions, which a memory-bound kernel cannot spare. Over kMaxDims unmergeable dims
//    (rare), the outermost dim is looped over on the host.
//
// The function object:
// - receives each input in its stored type (Half and BFloat16 convert to float as soon as they
//   are used in arithmetic; see compute_t) and returns a value that converts to Out;
// - is an extended lambda `[=] __device__(...)` (capture by value: it is copied to the GPU) or a
//   struct with a const __device__ operator(). nvcc forbids extended lambdas inside generic
//   lambdas, i.e. directly in a dispatch_* callback: there, call a named template function that
//   defines the lambda, or use a struct (see copy_fill.cu).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cuda/launch.cuh"
#include "ember/tensor.h"

namespace ember::cuda {

constexpr int kMapThreads = 256;  // threads per block
constexpr int kMapUnroll = 2;     // 16-byte vectors per operand in flight per thread
constexpr int kMaxDims = 8;       // dims the strided kernel handles after merging

template <size_t N> struct Pointers {  // operand base addresses: out first, then the inputs
  char* p[N];
};

// VEC elements of T that load and store as one instruction (alignas makes it 128-bit).
template <class T, int VEC> struct alignas(sizeof(T) * VEC) Vec { T v[VEC]; };

// ---- path 1: contiguous operands, vectorised ----

// Loads by value: one 128-bit load instruction (reading through a reference instead lets the
// compiler split it into VEC scalar loads).
template <class T, int VEC>
__device__ __forceinline__ Vec<T, VEC> load_vec(const char* base, int64_t v) {
  return reinterpret_cast<const Vec<T, VEC>*>(base)[v];
}

template <int VEC, class Out, class F, class... V>
__device__ __forceinline__ Vec<Out, VEC> apply_vec(const F& f, V... x) {
  Vec<Out, VEC> r;
#pragma unroll
  for (int j = 0; j < VEC; ++j) r.v[j] = f(x.v[j]...);
  return r;
}

template <int VEC, class Out, class... In, class F, size_t... I>
__device__ __forceinline__ void map_contiguous(int64_t n, const Pointers<sizeof...(In) + 1>& p,
                                               const F& f, std::index_sequence<I...>) {
  using OutVec = Vec<Out, VEC>;
  const int64_t nvec = n / VEC;
  constexpr int64_t kTile = int64_t(kMapThreads) * kMapUnroll;  // vectors per block per step
  for (int64_t tile = blockIdx.x; tile * kTile < nvec; tile += gridDim.x) {
    OutVec r[kMapUnroll];
    // All loads first, then all stores: the loads of every vector are in flight together.
#pragma unroll
    for (int u = 0; u < kMapUnroll; ++u) {
      int64_t v = tile * kTile + u * kMapThreads + threadIdx.x;
      if (v < nvec) r[u] = apply_vec<VEC, Out>(f, load_vec<In, VEC>(p.p[I + 1], v)...);
    }
#pragma unroll
    for (int u = 0; u < kMapUnroll; ++u) {
      int64_t v = tile * kTile + u * kMapThreads + threadIdx.x;
      if (v < nvec) reinterpret_cast<OutVec*>(p.p[0])[v] = r[u];
    }
  }
  // The last n % VEC elements, one per thread of block 0.
  int64_t i = nvec * VEC + threadIdx.x;
  if (blockIdx.x == 0 && i < n)
    reinterpret_cast<Out*>(p.p[0])[i] = f(reinterpret_cast<const In*>(p.p[I + 1])[i]...);
}

template <int VEC, class F, class Out, class... In>
__global__ void __launch_bounds__(kMapThreads)
    map_contiguous_kernel(int64_t n, Pointers<sizeof...(In) + 1> p, F f) {
  map_contiguous<VEC, Out, In...>(n, p, f, std::index_sequence_for<In...>{});
}

// ---- paths 2 and 3: any strides, by vectors or by elements ----

// n / d and n % d for a divisor d fixed before the kernel runs.
template <class Index> struct Divmod {  // 64-bit: plain division
  Index d;
  __device__ Index div(Index n) const { return n / d; }
};

// 32-bit: n / d = (umulhi(n, magic) + n) >> shift, for n, d < 2^31 (Granlund and Montgomery,
// "Division by invariant integers using multiplication", 1994), with shift = ceil(log2 d) and
// magic = floor(2^32 (2^shift - d) / d) + 1.
template <> struct Divmod<uint32_t> {
  uint32_t d, magic, shift;
  __device__ uint32_t div(uint32_t n) const { return (__umulhi(n, magic) + n) >> shift; }
};

inline Divmod<int64_t> make_divmod(int64_t d, int64_t) { return {d}; }
inline Divmod<uint32_t> make_divmod(int64_t d, uint32_t) {
  uint32_t shift = 0;
  while ((uint64_t(1) << shift) < uint64_t(d)) ++shift;
  uint64_t magic = ((uint64_t(1) << 32) * ((uint64_t(1) << shift) - uint64_t(d))) / uint64_t(d);
  return {uint32_t(d), uint32_t(magic + 1), shift};
}

// The merged shape, innermost dim first, with each operand's strides in vectors of VEC elements
// (path 2) or in elements (path 3, VEC = 1).
template <class Index, size_t N> struct StridedLayout {
  int ndim;
  Divmod<Index> sizes[kMaxDims];
  Index strides[kMaxDims][N];
};

// Paths 2 and 3: i counts vectors of VEC elements (elements when VEC is 1) and the offsets are
// in vectors, so one index computation serves VEC elements.
template <int VEC, class Index, class Out, class... In, class F, size_t... I>
__device__ __forceinline__ void map_strided(Index n,
                                            const StridedLayout<Index, sizeof...(In) + 1>& L,
                                            const Pointers<sizeof...(In) + 1>& p, const F& f,
                                            std::index_sequence<I...>) {
  constexpr size_t N = sizeof...(In) + 1;
  const Index step = Index(blockDim.x) * gridDim.x;
  for (Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Index off[N] = {};
    Index rest = i;
    // Constant trip count, so that off[] and L's arrays are indexed by constants: registers and
    // kernel parameters, never a local-memory array.
#pragma unroll
    for (int d = 0; d < kMaxDims; ++d) {
      if (d == L.ndim) break;
      Index q = L.sizes[d].div(rest);
      Index coord = rest - q * L.sizes[d].d;
      rest = q;
#pragma unroll
      for (size_t k = 0; k < N; ++k) off[k] += coord * L.strides[d][k];
    }
    reinterpret_cast<Vec<Out, VEC>*>(p.p[0])[off[0]] =
        apply_vec<VEC, Out>(f, load_vec<In, VEC>(p.p[I + 1], off[I + 1])...);
  }
}

template <int VEC, class Index, class F, class Out, class... In>
__global__ void __launch_bounds__(kMapThreads)
    map_strided_kernel(Index n, StridedLayout<Index, sizeof...(In) + 1> L,
                       Pointers<sizeof...(In) + 1> p, F f) {
  map_strided<VEC, Index, Out, In...>(n, L, p, f, std::index_sequence_for<In...>{});
}

// ---- host side ----

// The operands' dims after merging, outermost first, strides in each operand's elements (in
// vectors once to_vectors has run).
template <size_t N> struct MergedDims {
  int ndim = 0;
  bool too_many = false;  // more than kMaxDims dims remain after merging
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxDims][N];
};

// Merges each dim into the one outside it when, in every operand, stepping over the whole inner
// dim is the same as one step of the outer (the rule of cpu::coalesce).
template <size_t N> MergedDims<N> merge_dims(const std::array<const Tensor*, N>& ops) {
  MergedDims<N> m;
  const Shape& shape = ops[0]->shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;  // size-1 dims never move an offset
    bool merge = m.ndim > 0;
    for (size_t k = 0; k < N && merge; ++k)
      merge = m.strides[m.ndim - 1][k] == ops[k]->stride(int64_t(d)) * shape[d];
    if (merge) {
      m.sizes[m.ndim - 1] *= shape[d];
    } else if (m.ndim == kMaxDims) {
      m.too_many = true;
      return m;
    } else {
      m.sizes[m.ndim++] = shape[d];
    }
    for (size_t k = 0; k < N; ++k) m.strides[m.ndim - 1][k] = ops[k]->stride(int64_t(d));
  }
  return m;
}

// Whether every offset, and the element count, fit in 31 bits (32-bit index math is safe).
template <size_t N> bool fits_in_31_bits(const MergedDims<N>& m, int64_t numel) {
  if (numel > INT32_MAX) return false;
  for (size_t k = 0; k < N; ++k) {
    int64_t last = 0;  // the largest offset operand k reaches
    for (int d = 0; d < m.ndim; ++d) last += (m.sizes[d] - 1) * m.strides[d][k];
    if (last > INT32_MAX) return false;
  }
  return true;
}

// Path 2's layout: m counted in vectors of vec elements, when its innermost dim has stride 1 in
// every operand and its size and every other stride are multiples of vec (0 is); otherwise
// false, m untouched. The caller checks that every operand is aligned to a vector.
template <size_t N> bool to_vectors(MergedDims<N>& m, int vec) {
  const int inner = m.ndim - 1;
  if (vec == 1 || inner < 0 || m.sizes[inner] % vec != 0) return false;
  for (size_t k = 0; k < N; ++k) {
    if (m.strides[inner][k] != 1) return false;
    for (int d = 0; d < inner; ++d)
      if (m.strides[d][k] % vec != 0) return false;
  }
  m.sizes[inner] /= vec;  // the inner stride stays 1: one vector
  for (int d = 0; d < inner; ++d)
    for (size_t k = 0; k < N; ++k) m.strides[d][k] /= vec;
  return true;
}

// n: how many of m's units (vectors of VEC elements, elements when VEC is 1) to map. The index
// math is 32-bit when every offset, in those units, fits.
template <int VEC, class Out, class... In, class F>
void launch_strided(int64_t n, const MergedDims<sizeof...(In) + 1>& m,
                    const Pointers<sizeof...(In) + 1>& p, const F& f, int device) {
  constexpr size_t N = sizeof...(In) + 1;
  auto launch = [&](auto zero) {  // zero: of the index type
    using Index = decltype(zero);
    StridedLayout<Index, N> L;  // the kernel walks dims innermost first
    L.ndim = m.ndim;
    for (int d = 0; d < m.ndim; ++d) {
      L.sizes[d] = make_divmod(m.sizes[m.ndim - 1 - d], Index());
      for (size_t k = 0; k < N; ++k) L.strides[d][k] = Index(m.strides[m.ndim - 1 - d][k]);
    }
    map_strided_kernel<VEC, Index, F, Out, In...>
        <<<grid_size(n, kMapThreads, device), kMapThreads, 0, stream(device)>>>(Index(n), L, p, f);
  };
  if (fits_in_31_bits(m, n)) launch(uint32_t());
  else launch(int64_t());
}

template <class Out, class... In>
constexpr int vector_width() {  // elements per 16 bytes of the widest operand
  return int(16 / std::max({sizeof(Out), sizeof(In)...}));
}

// out[i] = f(in[0][i], in[1][i], ...) on out's GPU, asynchronously on its stream. Out and In...
// are the C++ element types of the tensors; the inputs already have out's shape. `op` names the
// op in error reports.
template <class Out, class... In, class F>
void gpu_map(const char* op, Tensor& out, const std::array<Tensor, sizeof...(In)>& in, F f) {
  constexpr size_t N = sizeof...(In) + 1;
  const int64_t n = out.numel();
  if (n == 0) return;
  std::array<const Tensor*, N> ops;
  Pointers<N> p;
  ops[0] = &out;
  for (size_t k = 1; k < N; ++k) ops[k] = &in[k - 1];
  for (size_t k = 0; k < N; ++k) p.p[k] = static_cast<char*>(ops[k]->data_ptr());

  const int device = out.device().index;
  DeviceGuard guard(device);
  constexpr int kVec = vector_width<Out, In...>();
  bool contiguous = true, aligned = true;  // aligned: every operand to a vector of kVec
  for (size_t k = 0; k < N; ++k) {
    contiguous = contiguous && ops[k]->is_contiguous();
    aligned = aligned && uintptr_t(p.p[k]) % (size_t(kVec) * ops[k]->itemsize()) == 0;
  }
  if (contiguous && aligned) {
    int64_t per_thread = int64_t(kVec) * kMapUnroll;
    unsigned grid = grid_size((n + per_thread - 1) / per_thread, kMapThreads, device);
    map_contiguous_kernel<kVec, F, Out, In...><<<grid, kMapThreads, 0, stream(device)>>>(n, p, f);
  } else {
    MergedDims<N> m = merge_dims(ops);
    if (m.too_many) {  // rare: one launch per index of the outermost dim, each with a dim less
      for (int64_t i = 0; i < out.size(0); ++i) {
        Tensor sub_out = out.select(0, i);
        std::array<Tensor, N - 1> sub_in;
        for (size_t k = 0; k + 1 < N; ++k) sub_in[k] = in[k].select(0, i);
        gpu_map<Out, In...>(op, sub_out, sub_in, f);
      }
      return;
    }
    if (aligned && to_vectors(m, kVec)) launch_strided<kVec, Out, In...>(n / kVec, m, p, f, device);
    else launch_strided<1, Out, In...>(n, m, p, f, device);
  }
  check_launch(op, ops.data(), N);
}

}  // namespace ember::cuda
