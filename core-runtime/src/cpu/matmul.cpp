// matmul.cpp — the CPU batched GEMM behind matmul, linear and conv2d.
//   float32, float64:    BLAS (sgemm_/dgemm_), operands read in place, transposes passed as flags.
//   float16, bfloat16:   converted to float32, float32 BLAS, rounded back (accumulates in float).
//   integer dtypes, and MatmulAlgo::Tiled for any dtype: blocked_gemm below, a cache-blocked
//                        loop that accumulates in int64 (integers) or the compute type (floats).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "convert.h"
#include "cpu/blas.h"
#include "cpu/isa.h"
#include "cpu/parallel.h"
#include "kernels.h"
#include "ops/matmul_kernels.h"

namespace ember::cpu::EMBER_CPU_ISA {
namespace {

// a: [batch, m, k] ([batch, k, m] with trans_a), b: [batch, k, n] ([batch, n, k] with trans_b),
// out: [batch, m, n]; T is float or double.
template <class T>
void blas_batched(const Tensor& a, const Tensor& b, Tensor& out, const GemmFlags& f) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2);
  const int64_t k = f.trans_a ? a.size(1) : a.size(2);
  blas_int(std::max(a.stride(1), b.stride(1)));  // throws here, not inside a parallel loop
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = out.data<T>();
  const T beta = f.accumulate ? T(1) : T(0);
  auto one = [&](int64_t p) {
    gemm_row_major<T>(f.trans_a, f.trans_b, m, n, k, pa + p * a.stride(0), a.stride(1),
                      pb + p * b.stride(0), b.stride(1), beta, pc + p * m * n, n);
  };
  // A batch of small GEMMs, or of enough GEMMs to balance the threads (4 or more per thread), is
  // spread over threads with one single-threaded GEMM each; otherwise the GEMMs run one after
  // another, each split over the threads (gemm_row_major).
  if (m * n * k < kThreadedGemm || batch >= 4 * num_threads()) {
    parallel_for(batch, cost::gemm(m, n, k), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) one(p);
    });
  } else {
    for (int64_t p = 0; p < batch; ++p) one(p);
  }
}

// x converted to float32. An operand broadcast over the batch (stride 0) is converted once and
// broadcast again, rather than materialised batch times.
Tensor to_float32(const Tensor& x) {
  if (x.size(0) > 1 && x.stride(0) == 0)
    return x.select(0, 0).to(DType::Float32).unsqueeze(0).expand(x.shape());
  return x.to(DType::Float32);
}

// float16/bfloat16 through float32 BLAS: the products accumulate in float, as on a GPU.
void half_through_float(const Tensor& a, const Tensor& b, Tensor& out, const GemmFlags& f) {
  Tensor out32 = f.accumulate ? out.to(DType::Float32)
                              : Tensor::empty(out.shape(), DType::Float32, out.device());
  blas_batched<float>(to_float32(a), to_float32(b), out32, f);
  out.copy_(out32);
}

// The teaching GEMM, and the one for integers. out[p] is cut into blocks of kMC x kNC outputs,
// each summed in a small accumulator (which stays in L1/L2) over panels of kKC along k. The B
// panel is first packed into a contiguous row-major buffer of Acc, so the innermost loop is a
// unit-stride multiply-add over j that the compiler vectorises, whatever B's layout and dtype.
// Threads take (batch entry, row block) pairs.
template <class T>
void blocked_gemm(const Tensor& a, const Tensor& b, Tensor& out, const GemmFlags& f) {
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, compute_t<T>>;
  constexpr int64_t kMC = 64, kNC = 256, kKC = 128;
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2);
  const int64_t k = f.trans_a ? a.size(1) : a.size(2);
  // Element (i, l) of op(a[p]) is at pa[p * a.stride(0) + i * a_i + l * a_l]; likewise for b.
  const int64_t a_i = f.trans_a ? 1 : a.stride(1), a_l = f.trans_a ? a.stride(1) : 1;
  const int64_t b_l = f.trans_b ? 1 : b.stride(1), b_j = f.trans_b ? b.stride(1) : 1;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = out.data<T>();
  const int64_t row_blocks = (m + kMC - 1) / kMC;

  parallel_for(batch * row_blocks, kMC * n * std::max<int64_t>(k, 1),
               [&](int64_t begin, int64_t end) {
                 std::vector<Acc> acc(size_t(kMC * kNC)), panel(size_t(kKC * kNC));
                 for (int64_t task = begin; task < end; ++task) {
                   const int64_t p = task / row_blocks, i0 = (task % row_blocks) * kMC;
                   const int64_t mc = std::min(kMC, m - i0);
                   const T* A = pa + p * a.stride(0);
                   const T* B = pb + p * b.stride(0);
                   T* C = pc + p * m * n;
                   for (int64_t j0 = 0; j0 < n; j0 += kNC) {
                     const int64_t nc = std::min(kNC, n - j0);
                     for (int64_t i = 0; i < mc; ++i)
                       for (int64_t j = 0; j < nc; ++j)
                         acc[size_t(i * kNC + j)] =
                             f.accumulate ? convert<Acc>(C[(i0 + i) * n + j0 + j]) : Acc(0);
                     for (int64_t l0 = 0; l0 < k; l0 += kKC) {
                       const int64_t kc = std::min(kKC, k - l0);
                       for (int64_t l = 0; l < kc; ++l)  // panel[l][j] = op(b)[l0 + l, j0 + j]
                         for (int64_t j = 0; j < nc; ++j)
                           panel[size_t(l * kNC + j)] =
                               convert<Acc>(B[(l0 + l) * b_l + (j0 + j) * b_j]);
                       for (int64_t i = 0; i < mc; ++i) {
                         Acc* row = acc.data() + i * kNC;
                         for (int64_t l = 0; l < kc; ++l) {
                           const Acc av = convert<Acc>(A[(i0 + i) * a_i + (l0 + l) * a_l]);
                           const Acc* brow = panel.data() + l * kNC;
                           for (int64_t j = 0; j < nc; ++j) row[j] += av * brow[j];
                         }
                       }
                     }
                     for (int64_t i = 0; i < mc; ++i)
                       for (int64_t j = 0; j < nc; ++j)
                         C[(i0 + i) * n + j0 + j] = convert<T>(acc[size_t(i * kNC + j)]);
                   }
                 }
               });
}

void gemm(const Tensor& a, const Tensor& b, Tensor& out, const GemmFlags& f) {
  dispatch_numeric(out.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (f.algo == MatmulAlgo::Default) return blas_batched<T>(a, b, out, f);
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      if (f.algo == MatmulAlgo::Default) return half_through_float(a, b, out, f);
    }
    blocked_gemm<T>(a, b, out, f);
  });
}

// No GEMM of the CPU has an epilogue: linear_act runs gemm, then the activation's own kernel over
// the output while much of it is still in cache, which gives linear then relu/gelu bit for bit.
// (Running the GEMM in row panels, each followed by its activation, was measured slower: BLAS
// loses more on small panels than the activation gains from L2.)
bool gemm_act(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&, const GemmFlags&,
              GemmActivation) {
  return false;
}

}  // namespace

void register_matmul(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/matmul.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA
