// adam_family.h — what the optimizers of Adam's family (Adam, AdamW, Adamax, NAdam, RAdam) share:
// their options, with PyTorch's defaults but for lr and weight_decay, and the rule checking them.
#pragma once
#include <string>
#include <vector>

#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

// lr, beta1 (0.9), beta2 (0.999), eps (1e-8), weight_decay and maximize (0); `more` adds the
// optimizer's own options.
inline Options adam_family_defaults(double lr, double weight_decay, const Options& more = {}) {
  Options o{{"lr", lr},    {"beta1", 0.9},    {"beta2", 0.999},
            {"eps", 1e-8}, {"maximize", 0.0}, {"weight_decay", weight_decay}};
  o.insert(more.begin(), more.end());
  return o;
}

// beta1 and beta2 within [0, 1), maximize and the optimizer's `flags` 0 or 1, the rest >= 0.
inline OptimizerRule adam_family_rule(std::vector<std::string> buffers,
                                      decltype(OptimizerRule::update) update,
                                      std::vector<std::string> flags = {}) {
  flags.push_back("maximize");
  return {std::move(flags), {"beta1", "beta2"}, std::move(buffers), std::move(update)};
}

}  // namespace ember::autodiff::optim
