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

inline void expect_near(const Vec& got, const Vec& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

}  // namespace optim_test
