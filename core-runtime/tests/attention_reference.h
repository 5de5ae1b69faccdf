// attention_reference.h — scaled dot-product attention and its gradients in double on the host,
// written from the formula (no kernel of the library): the reference of test_attention.cpp and
// test_cuda_attention.cpp.
#pragma once
#include <cmath>
#include <limits>
#include <vector>

#include "ember/ember.h"
#include "ember/ops/attention.h"
#include "test_util.h"

namespace ember::test {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// One attention problem on the host in double: heads of q [L, E], k [S, E], v [S, Ev] and a bias
// [L, S] per head (0, -inf or the additive mask), already broadcast.
struct AttentionRef {
  int64_t H, L, S, E, Ev;
  std::vector<double> q, k, v, bias, keep;  // keep: the dropout's factors (1 when none)
  double scale;

  // The probabilities of head h, row i (0 for a fully masked row) and the row's log-sum-exp.
  std::vector<double> probs(int64_t h, int64_t i, double* lse = nullptr) const {
    std::vector<double> s(static_cast<size_t>(S));
    double m = -kInf;
    for (int64_t j = 0; j < S; ++j) {
      double dot = 0;
      for (int64_t e = 0; e < E; ++e)
        dot += q[size_t((h * L + i) * E + e)] * k[size_t((h * S + j) * E + e)];
      s[size_t(j)] = (E == 0 ? 0.0 : dot * scale) + bias[size_t((h * L + i) * S + j)];
      m = std::max(m, s[size_t(j)]);
    }
    double sum = 0;
    for (double& x : s) sum += (x = m == -kInf ? 0.0 : std::exp(x - m));
    for (double& x : s) x = sum > 0 ? x / sum : 0.0;
    if (lse) *lse = sum > 0 ? m + std::log(sum) : -kInf;
    return s;
  }

  void forward(std::vector<double>& out, std::vector<double>& lse) const {
    out.assign(size_t(H * L * Ev), 0.0);
    lse.assign(size_t(H * L), 0.0);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> p = probs(h, i, &lse[size_t(h * L + i)]);
        for (int64_t j = 0; j < S; ++j) {
          const double w = p[size_t(j)] * keep[size_t((h * L + i) * S + j)];
          for (int64_t c = 0; c < Ev; ++c)
            out[size_t((h * L + i) * Ev + c)] += w * v[size_t((h * S + j) * Ev + c)];
        }
      }
  }

  // dq, dk, dv of sum(g * out) by the chain rule through softmax, written out.
  void backward(const std::vector<double>& g, std::vector<double>& dq, std::vector<double>& dk,
                std::vector<double>& dv) const {
    dq.assign(size_t(H * L * E), 0.0);
    dk.assign(size_t(H * S * E), 0.0);
    dv.assign(size_t(H * S * Ev), 0.0);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i) {
        std::vector<double> p = probs(h, i), dp(static_cast<size_t>(S));
        double dot = 0;
        for (int64_t j = 0; j < S; ++j) {
          const double z = keep[size_t((h * L + i) * S + j)];
          double gv = 0;
          for (int64_t c = 0; c < Ev; ++c) {
            gv += g[size_t((h * L + i) * Ev + c)] * v[size_t((h * S + j) * Ev + c)];
            dv[size_t((h * S + j) * Ev + c)] += p[size_t(j)] * z * g[size_t((h * L + i) * Ev + c)];
          }
          dp[size_t(j)] = gv * z;
          dot += dp[size_t(j)] * p[size_t(j)];
        }
        for (int64_t j = 0; j < S; ++j) {
          const double ds = p[size_t(j)] * (dp[size_t(j)] - dot) * scale;
          for (int64_t e = 0; e < E; ++e) {
            dq[size_t((h * L + i) * E + e)] += ds * k[size_t((h * S + j) * E + e)];
            dk[size_t((h * S + j) * E + e)] += ds * q[size_t((h * L + i) * E + e)];
          }
        }
      }
  }
};

// A reference of H heads from contiguous host tensors and an optional [H?, L, S] bias.
inline AttentionRef make_ref(const Tensor& q, const Tensor& k, const Tensor& v,
                             std::vector<double> bias, double scale) {
  AttentionRef r{};
  r.L = q.size(-2);
  r.E = q.size(-1);
  r.S = k.size(-2);
  r.Ev = v.size(-1);
  r.H = shape_numel(Shape(q.shape().begin(), q.shape().end() - 2));
  r.q = q.to_vector<double>();
  r.k = k.to_vector<double>();
  r.v = v.to_vector<double>();
  r.bias = bias.empty() ? std::vector<double>(size_t(r.H * r.L * r.S), 0.0) : std::move(bias);
  r.keep.assign(size_t(r.H * r.L * r.S), 1.0);
  r.scale = scale;
  return r;
}

// expect_close for a log-sum-exp: -inf (a fully masked row) must match exactly.
inline void expect_close_lse(const Tensor& t, const std::vector<double>& expected, double tol) {
  const std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size()) << t.str();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(expected[i])) EXPECT_EQ(got[i], expected[i]) << "element " << i;
    else EXPECT_NEAR(got[i], expected[i], tol + tol * std::fabs(expected[i])) << "element " << i;
  }
}

}  // namespace ember::test
