// random_group.h — random fusion groups for the fused-kernel tests: random broadcastable shapes,
// random dtypes, non-contiguous inputs (strided, transposed, broadcast by stride 0) with random
// values, and random chains of ops valid for their operands' dtypes.
#pragma once
#include <algorithm>
#include <random>
#include <vector>

#include "ember/autodiff/compile/fusion_group.h"
#include "ember/ember.h"

namespace ember::test {

using autodiff::compile::FusedOp;
using autodiff::compile::FusedReduction;
using autodiff::compile::FusionGroup;

// Which ops a chain draws from. On the CPU a fused kernel computes every op as the library's
// kernel does (the same operations in the same order, the same vectorisable exp/erf/tanh in
// float, the same libm calls in float64), so both sets must give the unfused bits.
enum class OpSet {
  // Every op and every dtype, with casts, comparisons, where and clamp, NaN and infinities.
  Exact,
  // Floating chains of well-scaled values through exp, log, tanh, erf, gelu and the backwards,
  // also used where a reduction follows (folded in the library's order on the CPU).
  Transcendental,
};

struct RandomGroup {
  FusionGroup group{{}};
  std::vector<Tensor> inputs;
};

inline const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> all{DType::Bool,    DType::UInt8,    DType::Int8,
                                      DType::Int16,   DType::Int32,    DType::Int64,
                                      DType::Float16, DType::BFloat16, DType::Float32,
                                      DType::Float64};
  return all;
}

class GroupMaker {
 public:
  explicit GroupMaker(uint32_t seed) : rng_(seed) {}

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng_); }
  template <class T> const T& pick(const std::vector<T>& v) {
    return v[size_t(uniform(0, int(v.size()) - 1))];
  }

  // A shape of rank 0..4 with sizes 1..6 (an odd one now and then).
  Shape shape() {
    Shape s(size_t(uniform(0, 4)));
    for (int64_t& d : s) d = uniform(1, 6);
    return s;
  }

  // A tensor of `shape` (broadcast from a smaller one sometimes) laid out non-contiguously at
  // random: every dim strided by 1 or 2, the last two swapped, or a size-1 dim broadcast.
  Tensor input(const Shape& full, DType dtype, Shape& declared) {
    Shape s(full.begin() + uniform(0, int(full.size())), full.end());  // drop leading dims
    for (int64_t& d : s)
      if (coin(0.25)) d = 1;  // broadcast along this dim
    declared = s;
    const bool swap = s.size() >= 2 && coin(0.3);
    Shape stored = s;
    if (swap) std::swap(stored[stored.size() - 1], stored[stored.size() - 2]);
    std::vector<int64_t> steps(stored.size());
    for (int64_t& st : steps) st = coin(0.3) ? 2 : 1;
    Shape base = stored;
    for (size_t d = 0; d < base.size(); ++d) base[d] = stored[d] * steps[d];
    Tensor t = values(base, dtype);
    std::vector<int64_t> strides = t.strides();
    for (size_t d = 0; d < strides.size(); ++d) strides[d] *= steps[d];
    t = t.as_strided(stored, strides, 0);
    if (swap) t = t.transpose(-1, -2);
    return t;
  }

  // Random values: small integers, floats in [-3, 3] with some exact halves and zeros; for
  // floating dtypes sometimes a NaN or an infinity in the exact set.
  Tensor values(const Shape& shape, DType dtype) {
    const int64_t n = shape_numel(shape);
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) {
      if (dtype == DType::Bool) {
        x = coin();
      } else if (dtype == DType::UInt8) {
        x = uniform(0, 255);
      } else if (is_integral(dtype)) {
        x = uniform(-100, 100);
      } else {
        x = coin(0.1) ? uniform(-6, 6) / 2.0 : std::uniform_real_distribution<double>(-3, 3)(rng_);
        if (special_values_ && coin(0.02))
          x = pick(std::vector<double>{NAN, INFINITY, -INFINITY, 0.0, -0.0});
      }
    }
    Tensor t = Tensor::from_vector(v, shape);
    return t.to(dtype);
  }

  RandomGroup make(OpSet set, int ops) {
    special_values_ = set == OpSet::Exact;
    RandomGroup r;
    const Shape full = shape();
    r.group = FusionGroup(full);
    const std::vector<DType> floats{DType::Float16, DType::BFloat16, DType::Float32,
                                    DType::Float64};
    const DType main = set == OpSet::Exact ? pick(all_dtypes()) : pick(floats);
    const int inputs = uniform(1, 3);
    std::vector<int> nodes;
    for (int i = 0; i < inputs; ++i) {
      const DType t =
          i == 0 || coin(0.6) ? main : pick(set == OpSet::Exact ? all_dtypes() : floats);
      Shape declared;
      Tensor x = input(full, t, declared);
      r.inputs.push_back(x);
      nodes.push_back(r.group.input(x.shape(), x.strides(), t));
    }
    int last = nodes[0];
    for (int k = 0; k < ops; ++k) {
      last = set == OpSet::Exact ? exact_op(r.group, last, nodes) : smooth_op(r.group, last, nodes);
      nodes.push_back(last);
    }
    return r;
  }

 private:
  DType dtype(const FusionGroup& g, int node) { return g.nodes()[size_t(node)].dtype; }

  // `node` converted to dtype t, clamped first where a float would not fit an integer type.
  int as(FusionGroup& g, int node, DType t) {
    const DType from = dtype(g, node);
    if (from == t) return node;
    if (is_floating(from) && is_integral(t)) node = g.clamp(node, 0, 100);  // in every int type
    return g.cast(node, t);
  }

  // Another operand for a binary op on `last`: an earlier node or a constant, of last's dtype.
  int other(FusionGroup& g, int last, const std::vector<int>& nodes) {
    const DType t = dtype(g, last);
    if (coin(0.2)) {
      const double c = t == DType::Bool    ? 1
                       : t == DType::UInt8 ? uniform(0, 9)
                                           : uniform(-4, 4) / 2.0;
      return g.constant(is_integral(t) ? std::trunc(c) : c, t);
    }
    return as(g, pick(nodes), t);
  }

  int exact_op(FusionGroup& g, int last, const std::vector<int>& nodes) {
    DType t = dtype(g, last);
    const int choice = uniform(0, 9);
    if (choice == 0) return as(g, last, pick(all_dtypes()));  // a cast
    if (t == DType::Bool) {  // bool takes where and comparisons, or becomes a number
      if (coin()) {
        const int a = pick(nodes);
        return g.where(last, a, as(g, pick(nodes), dtype(g, a)));
      }
      return g.binary(coin() ? FusedOp::Eq : FusedOp::Ne, last, other(g, last, nodes));
    }
    if (choice == 1) {
      const int cond = as(g, pick(nodes), DType::Bool);
      return g.where(cond, last, other(g, last, nodes));
    }
    if (choice == 2) {
      const double lo = uniform(-3, 1), hi = lo + uniform(-1, 4);
      return g.clamp(last, coin(0.2) ? -INFINITY : lo, coin(0.2) ? INFINITY : hi);
    }
    if (choice == 3)
      return g.binary(pick(std::vector<FusedOp>{FusedOp::Eq, FusedOp::Ne, FusedOp::Lt, FusedOp::Le,
                                                FusedOp::Gt, FusedOp::Ge}),
                      last, other(g, last, nodes));
    std::vector<FusedOp> unary{FusedOp::Neg, FusedOp::Abs, FusedOp::Relu};
    std::vector<FusedOp> binary{FusedOp::Add, FusedOp::Sub, FusedOp::Mul, FusedOp::Maximum,
                                FusedOp::Minimum};
    if (is_floating(t)) {
      unary.insert(unary.end(), {FusedOp::Sqrt, FusedOp::Rsqrt, FusedOp::Reciprocal, FusedOp::Sin,
                                 FusedOp::Cos});
      binary.insert(binary.end(), {FusedOp::Div, FusedOp::ReluBackward, FusedOp::SigmoidBackward,
                                   FusedOp::TanhBackward});
    }
    if (is_floating(t))
      unary.insert(unary.end(), {FusedOp::Exp, FusedOp::Log, FusedOp::Tanh, FusedOp::Sigmoid,
                                 FusedOp::Erf, FusedOp::Gelu, FusedOp::GeluTanh, FusedOp::Silu});
    if (is_floating(t))
      binary.insert(binary.end(),
                    {FusedOp::GeluBackward, FusedOp::GeluTanhBackward, FusedOp::SiluBackward});
    if (choice <= 6) return g.unary(pick(unary), last);
    return g.binary(pick(binary), last, other(g, last, nodes));
  }

  // Well-conditioned floating ops: bounded activations, products and sums of bounded values.
  int smooth_op(FusionGroup& g, int last, const std::vector<int>& nodes) {
    const std::vector<FusedOp> unary{FusedOp::Tanh, FusedOp::Sigmoid,  FusedOp::Erf,
                                     FusedOp::Gelu, FusedOp::GeluTanh, FusedOp::Silu,
                                     FusedOp::Neg,  FusedOp::Abs,      FusedOp::Relu};
    const std::vector<FusedOp> binary{FusedOp::Add,
                                      FusedOp::Mul,
                                      FusedOp::Maximum,
                                      FusedOp::GeluBackward,
                                      FusedOp::GeluTanhBackward,
                                      FusedOp::SiluBackward,
                                      FusedOp::SigmoidBackward,
                                      FusedOp::TanhBackward};
    const int choice = uniform(0, 5);
    if (choice == 0) return g.unary(FusedOp::Exp, g.unary(FusedOp::Tanh, last));
    if (choice == 1) return g.unary(FusedOp::Log, g.unary(FusedOp::Sigmoid, last));
    if (choice <= 3) return g.unary(pick(unary), last);
    // Keep the other operand bounded so that products stay well scaled.
    const int b = g.unary(FusedOp::Tanh, as(g, pick(nodes), dtype(g, last)));
    return g.binary(pick(binary), last, b);
  }

  std::mt19937 rng_;
  bool special_values_ = false;
};

}  // namespace ember::test
