// optim_problem.h — the problem the optimizer tests step through: a start point, the gradient of a
// quadratic loss with a drifting linear term at each step, and the comparison of the parameters
// an optimizer reaches with those of its float64 reference loop.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace optim_test {

using Vec = std::vector<double>;

inline const Vec kStart = {1.0, -2.0, 0.5, 3.0, -0.25, 0.75};

// The gradient at step t of a quadratic loss with a drifting linear term:
//   g_i = (1 + 0.5 i) p_i + 0.1 (t + 1) (-1)^i
inline Vec grad_at(const Vec& p, int t) {
  Vec g(p.size());
  for (size_t i = 0; i < p.size(); ++i)
    g[i] = (1 + 0.5 * i) * p[i] + 0.1 * (t + 1) * (i % 2 ? -1 : 1);
  return g;
}

// The moment estimates of the Adam family's references (Adam, AdamW, NAdam, RAdam), one element
// at a time.
struct AdamMoments {
  double lr, b1, b2, wd;
  bool decoupled, maximize;
  Vec m, v;

  // Element i of a step: its gradient g from g0[i], negated when maximizing, with weight decay
  // as L2 (g += wd p) or, decoupled, applied to p itself (p *= 1 - lr wd); then m and v take in
  // g. Returns g.
  double update(Vec& p, const Vec& g0, size_t i) {
    double g = maximize ? -g0[i] : g0[i];
    if (decoupled) p[i] *= 1 - lr * wd;
    else g += wd * p[i];
    m[i] = b1 * m[i] + (1 - b1) * g;
    v[i] = b2 * v[i] + (1 - b2) * g * g;
    return g;
  }
};

inline void expect_near(const Vec& got, const Vec& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

}  // namespace optim_test
