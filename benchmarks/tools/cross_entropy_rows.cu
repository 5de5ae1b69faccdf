// cross_entropy_rows.cu — times CUDA cross entropy's forward and backward kernels
// (core-runtime/src/cuda/softmax_loss.cu) at a GPT's vocabulary shape on one GPU, and checks
// their results against a float64 reference computed here, on the host.
//
// As benchmarks/tools/attention_tilings.cu does, it includes the kernels' source and calls them on
// raw device buffers, so it needs none of the library's host code (linked with --gc-sections,
// which drops it); a kernel change can be timed against the kernels of another tree by building
// the tool in each. Problem: GPT-2 small's loss, [8192, 50257] logits (batch 8 x T 1024) in
// bfloat16 and float32, values uniform in [-4, 4), targets uniform over the classes,
// with and without label smoothing. Four rows hold what a real run may hold: a +inf logit away
// from the target, a row that is -inf but at its target, a NaN, and -inf at every other class.
// Output, CSV on stdout:
//   pass,dtype,eps,rows,classes,ms,max_err,checked_rows
// ms: the mean of 20 calls after one; max_err: over the checked rows (the four above, then every
// 61st), the largest |got - want| / (|want| + 1e-6) of a finite result, or 1 when a result
// differs from want in being finite. The forward's loss comes out in float32, the backward's
// gradient in the logits' dtype (in bfloat16, a unit of its rounding: about 4e-3 relative).
// Built as ci/gpu-tilings.sh builds attention_tilings.cu.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "cuda/softmax_loss.cu"
#include "tool_support.cuh"

namespace ce_rows {

namespace cu = ember::cuda;
using Bf16 = ember::BFloat16;

constexpr int64_t kRows = 8192, kClasses = 50257, kEvery = 61;
const double kInf = std::numeric_limits<double>::infinity();

// A walk over `rows` rows whose starts lie `stride` elements apart.
ember::cuda::DeviceWalk walk(int64_t rows, int64_t stride) {
  ember::cuda::DeviceWalk w{};
  w.ndim = 1, w.size[0] = rows, w.stride[0] = stride;
  return w;
}

// The logits (exactly what the device gets, after rounding to T) and the targets.
struct Problem {
  std::vector<float> x;
  std::vector<int64_t> target;
};

template <class T> Problem make_problem() {
  Problem P{std::vector<float>(size_t(kRows * kClasses)), std::vector<int64_t>(size_t(kRows))};
  uint64_t state = 88172645463325252ull;  // xorshift64: 411M values in a fraction of a second
  auto next = [&] {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  };
  for (float& v : P.x) v = float(T(float(next() >> 40) * 0x1p-21f - 4.f));
  for (int64_t& t : P.target) t = int64_t(next() % uint64_t(kClasses));
  auto row = [&](int64_t r) { return P.x.begin() + r * kClasses; };
  row(0)[(P.target[0] + 1) % kClasses] = kInf;
  std::fill(row(1), row(1) + kClasses, -kInf);
  row(1)[P.target[1]] = 0.5;
  row(2)[kClasses / 2] = NAN;
  for (int64_t k = 0; k < kClasses; k += 2) row(3)[k] = -kInf;
  P.target[3] |= 1;  // an odd class: finite
  return P;
}

// Row r's loss and gradient (for an upstream gradient of 1) in float64.
void reference(const Problem& P, int64_t r, double eps, double& loss, std::vector<double>& grad) {
  const float* x = P.x.data() + r * kClasses;
  const int64_t t = P.target[size_t(r)];
  double m = -kInf, sum = 0, x_sum = 0;
  for (int64_t k = 0; k < kClasses; ++k) m = std::isnan(x[k]) || x[k] > m ? x[k] : m;
  for (int64_t k = 0; k < kClasses; ++k) sum += x[k] == m ? 1 : std::exp(x[k] - m);
  for (int64_t k = 0; k < kClasses; ++k) x_sum += x[k];
  const double lse = m + std::log(sum);
  loss = (1 - eps) * (lse - x[t]);
  if (eps != 0) loss += eps / double(kClasses) * (double(kClasses) * lse - x_sum);
  grad.resize(size_t(kClasses));
  for (int64_t k = 0; k < kClasses; ++k) {
    const double p = std::exp(x[k] - lse);
    grad[size_t(k)] = (1 - eps) * (p - double(k == t)) + eps * (p - 1 / double(kClasses));
  }
}

double error(double got, double want) {
  if (std::isfinite(got) != std::isfinite(want)) return 1;
  return std::isfinite(want) ? std::fabs(got - want) / (std::fabs(want) + 1e-6) : 0;
}

template <class T> void run(const char* dtype) {
  const Problem P = make_problem<T>();
  const size_t n = P.x.size();
  std::vector<T> x_host(P.x.begin(), P.x.end());
  T *x = tool::device_buffer<T>(n), *grad = tool::device_buffer<T>(n);
  int64_t* target = tool::device_buffer<int64_t>(size_t(kRows));
  float *loss = tool::device_buffer<float>(size_t(kRows)),
        *g = tool::device_buffer<float>(size_t(kRows));
  CHECK(cudaMemcpy(x, x_host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(target, P.target.data(), size_t(kRows) * 8, cudaMemcpyHostToDevice));
  const std::vector<float> ones(size_t(kRows), 1.f);
  CHECK(cudaMemcpy(g, ones.data(), size_t(kRows) * 4, cudaMemcpyHostToDevice));

  std::vector<int64_t> checked = {0, 1, 2, 3};
  for (int64_t r = 4; r < kRows; r += kEvery) checked.push_back(r);
  for (double eps : {0.0, 0.1}) {
    cu::RowArgs<T> a{};
    a.x = x, a.xr = cu::Rows{walk(kRows, kClasses), 1}, a.target = target, a.tw = walk(kRows, 1);
    a.weight = nullptr, a.ignore_index = -100, a.rows = kRows, a.n = kClasses, a.eps = float(eps);
    const cu::RowLaunch L = cu::row_launch<cu::Stats<double>>(kRows, cu::group_size(kClasses, 8));
    const size_t smem = cu::ce_scratch(int(L.block.y));
    const float forward_ms =
        tool::mean_ms([&] { cu::ce_forward_kernel<<<L.grid, L.block, smem>>>(a, loss); });
    const cu::Rows grad_rows{walk(kRows, kClasses), 1};
    const float backward_ms = tool::mean_ms([&] {
      cu::ce_backward_kernel<<<L.grid, L.block, smem>>>(a, g, walk(kRows, 1), grad, grad_rows);
    });
    std::vector<float> loss_host(static_cast<size_t>(kRows));
    std::vector<T> grad_host(n);
    CHECK(cudaMemcpy(loss_host.data(), loss, size_t(kRows) * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(grad_host.data(), grad, n * sizeof(T), cudaMemcpyDeviceToHost));
    double forward_err = 0, backward_err = 0, want_loss;
    std::vector<double> want_grad;
    for (int64_t r : checked) {
      reference(P, r, eps, want_loss, want_grad);
      forward_err = std::max(forward_err, error(loss_host[size_t(r)], want_loss));
      if (r == 0 || r == 2) continue;  // +inf and NaN rows: their gradients hold NaNs
      for (int64_t k = 0; k < kClasses; ++k)
        backward_err = std::max(backward_err, error(double(grad_host[size_t(r * kClasses + k)]),
                                                    want_grad[size_t(k)]));
    }
    std::printf("forward,%s,%g,%lld,%lld,%.4f,%.3g,%zu\n", dtype, eps, (long long)kRows,
                (long long)kClasses, forward_ms, forward_err, checked.size());
    std::printf("backward,%s,%g,%lld,%lld,%.4f,%.3g,%zu\n", dtype, eps, (long long)kRows,
                (long long)kClasses, backward_ms, backward_err, checked.size() - 2);
  }
  for (void* p : {(void*)x, (void*)grad, (void*)target, (void*)loss, (void*)g}) CHECK(cudaFree(p));
}

}  // namespace ce_rows

int main() {
  std::printf("pass,dtype,eps,rows,classes,ms,max_err,checked_rows\n");
  ce_rows::run<ce_rows::Bf16>("bfloat16");
  ce_rows::run<float>("float32");
  return 0;
}
