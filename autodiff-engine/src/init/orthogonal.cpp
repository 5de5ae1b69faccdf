// orthogonal.cpp — orthogonal_: the Q of a Householder QR of a standard normal matrix, in
// float64 on the host (a small dense QR written out, rather than a LAPACK dependency).
#include <cmath>
#include <vector>

#include "ember/autodiff/init.h"
#include "ember/ops/elementwise.h"

namespace ember::autodiff::init {

namespace {

// a: [m, n] row-major with m >= n. Returns Q: [m, n] with orthonormal columns such that a = Q R,
// R upper triangular with a diagonal >= 0. Fixing R's signs makes the factorisation unique, so
// Q of a Gaussian matrix is Haar-distributed (PyTorch multiplies LAPACK's Q by sign(diag(R))).
std::vector<double> orthonormal_columns(std::vector<double> a, int64_t m, int64_t n) {
  auto at = [n](std::vector<double>& x, int64_t i, int64_t j) -> double& { return x[i * n + j]; };
  std::vector<std::vector<double>> reflectors;  // v_k: [m - k], |v_k| = 1 (or all 0)
  std::vector<double> diag(n);
  for (int64_t k = 0; k < n; ++k) {
    // H_k = I - 2 v v^T maps column k below the diagonal onto (alpha, 0, ..., 0); alpha takes
    // the sign opposite to x_0 so that x_0 - alpha does not cancel.
    std::vector<double> v(m - k);
    double norm = 0;
    for (int64_t i = k; i < m; ++i) norm += at(a, i, k) * at(a, i, k);
    norm = std::sqrt(norm);
    const double alpha = at(a, k, k) >= 0 ? -norm : norm;
    for (int64_t i = k; i < m; ++i) v[i - k] = at(a, i, k);
    v[0] -= alpha;
    double vnorm = 0;
    for (double x : v) vnorm += x * x;
    vnorm = std::sqrt(vnorm);
    for (double& x : v) x = vnorm > 0 ? x / vnorm : 0.0;
    // a[k:, k:] -= 2 v (v^T a[k:, k:])
    for (int64_t j = k; j < n; ++j) {
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += v[i - k] * at(a, i, j);
      for (int64_t i = k; i < m; ++i) at(a, i, j) -= 2 * v[i - k] * dot;
    }
    diag[k] = at(a, k, k);
    reflectors.push_back(std::move(v));
  }
  // Q = H_0 H_1 ... H_{n-1} applied to the first n columns of the identity, last reflector first.
  std::vector<double> q(m * n, 0.0);
  for (int64_t j = 0; j < n; ++j) at(q, j, j) = 1.0;
  for (int64_t k = n - 1; k >= 0; --k) {
    const std::vector<double>& v = reflectors[k];
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += v[i - k] * at(q, i, j);
      for (int64_t i = k; i < m; ++i) at(q, i, j) -= 2 * v[i - k] * dot;
    }
  }
  for (int64_t j = 0; j < n; ++j)
    if (diag[j] < 0)
      for (int64_t i = 0; i < m; ++i) at(q, i, j) = -at(q, i, j);
  return q;
}

}  // namespace

const Tensor& orthogonal_(const Tensor& t, double gain, Generator* gen) {
  if (t.dim() < 2)
    throw ValueError("orthogonal_",
                     "the tensor is " + t.str() + "; an orthogonal matrix needs at least 2 dims");
  if (t.numel() == 0) return t;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  // Factor the tall way round: [m, n] with m >= n, transposed back for a wide matrix.
  const bool wide = rows < cols;
  const int64_t m = wide ? cols : rows, n = wide ? rows : cols;
  const std::vector<double> q = orthonormal_columns(
      normal({m, n}, 0.0, 1.0, DType::Float64, Device(), gen).to_vector<double>(), m, n);
  Tensor result = Tensor::from_vector(q, {m, n});
  if (wide) result = result.t();
  Tensor(t).copy_(result.reshape(t.shape()));
  return mul_(t, gain);
}

}  // namespace ember::autodiff::init
