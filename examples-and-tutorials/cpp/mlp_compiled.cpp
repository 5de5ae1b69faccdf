// mlp_compiled.cpp — mlp.cpp's training step compiled (autodiff-engine's compile/compile.h): the
// first call runs the step eagerly and records it — forward, the backward graph, Adam's update —
// as one graph; later calls replay that graph from C++ over one planned arena. The same model
// trained eagerly from the same numbers must end bit for bit where the compiled one does.
// Prints what the compiler did (explain()) and exits with status 1 on any difference.
#include <ember/autodiff/autodiff.h>
#include <ember/autodiff/compile/compile.h>
#include <ember/autodiff/optim/adam.h>
#include <ember/ember.h>

#include <cmath>
#include <cstdio>
#include <cstring>

namespace ad = ember::autodiff;
using ad::Variable;
using ember::DType;
using ember::Tensor;

struct Mlp {
  std::vector<Variable> params;  // w1, b1, w2, b2, w3, b3

  explicit Mlp(uint64_t seed) {
    ember::manual_seed(seed);
    for (auto [in, out] : {std::pair{2, 32}, {32, 32}, {32, 2}}) {
      const double bound = 1.0 / std::sqrt(double(in));
      params.emplace_back(ember::uniform({out, in}, -bound, bound), true);
      params.emplace_back(ember::uniform({out}, -bound, bound), true);
    }
  }
  Variable operator()(const Variable& x) const {  // [n, 2] -> logits [n, 2]
    Variable h = ad::tanh(ad::linear(x, params[0], params[1]));
    h = ad::tanh(ad::linear(h, params[2], params[3]));
    return ad::linear(h, params[4], params[5]);
  }
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), size_t(a.nbytes())) == 0;
}

int main() {
  ember::manual_seed(0);
  const int64_t n = 512;
  const Tensor points = ember::uniform({n, 2}, -1.0, 1.0);                      // [n, 2]
  const Tensor product = ember::mul(points.select(1, 0), points.select(1, 1));  // [n]
  const Variable x(points);
  const Variable labels(ember::gt(product, 0.0).to(DType::Int64));  // [n] in {0, 1}

  Mlp eager_model(1), compiled_model(1);
  ad::optim::Adam eager_adam(eager_model.params, {{"lr", 0.02}});
  ad::optim::Adam compiled_adam(compiled_model.params, {{"lr", 0.02}});

  // The step as a function of Variables: what compile() traces once and then replays.
  ad::compile::CompileOptions options;
  options.name = "train_step";
  options.input_names = {"x", "labels"};
  auto train_step = ad::compile::compile(
      [&](const std::vector<Variable>& in) {
        compiled_adam.zero_grad();
        Variable loss = ad::cross_entropy(compiled_model(in[0]), in[1]);
        loss.backward();
        compiled_adam.step();
        return std::vector<Variable>{loss};
      },
      options);

  bool same = true;
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    eager_adam.zero_grad();
    Variable eager_loss = ad::cross_entropy(eager_model(x), labels);
    eager_loss.backward();
    eager_adam.step();
    const Variable loss = train_step({x, labels})[0];
    same = same && same_bits(eager_loss.data(), loss.data());
    last = loss.data().item<float>();
    if (step == 0) first = last;
    if (step % 50 == 0) std::printf("step %3d  loss %.4f\n", step, last);
  }
  for (size_t i = 0; i < eager_model.params.size(); ++i)
    same = same && same_bits(eager_model.params[i].data(), compiled_model.params[i].data());

  std::printf("\n%s\n", train_step.explain().c_str());
  std::printf("%lld traces, %lld replays; loss %.4f -> %.4f; compiled %s eager bit for bit\n",
              (long long)train_step.traces(), (long long)train_step.replays(), first, last,
              same ? "equals" : "DIFFERS FROM");
  const bool ok = same && last < 0.5 * first && train_step.replays() == 298;
  std::printf(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
