// one_cycle_lr.cpp — OneCycleLR: its phases, and each step's lr and momentum per group.
#include "ember/autodiff/optim/one_cycle_lr.h"

#include <algorithm>
#include <cmath>

#include "ember/autodiff/compile/trace.h"

namespace ember::autodiff::optim {

namespace {
constexpr double kPi = 3.14159265358979323846;

// `values` as one per group: a single value serves every group.
std::vector<double> per_group(const std::vector<double>& values, size_t groups, const char* what) {
  if (values.size() == 1) return std::vector<double>(groups, values[0]);
  if (values.size() != groups)
    throw ValueError("OneCycleLR", std::string(what) + " has " + std::to_string(values.size()) +
                                       " values for " + std::to_string(groups) +
                                       " parameter groups; pass one value, or one per group");
  return values;
}

// Sets each group's "initial_lr" to max_lr / div_factor before the base reads it as base lr.
Optimizer& with_initial_lrs(Optimizer& optimizer, const std::vector<double>& max_lrs,
                            double div_factor) {
  const std::vector<double> lrs = per_group(max_lrs, optimizer.param_groups().size(), "max_lr");
  if (!(div_factor > 0))
    throw ValueError("OneCycleLR", "div_factor is " + std::to_string(div_factor) +
                                       "; pass a positive number (25 is usual)");
  for (size_t i = 0; i < lrs.size(); ++i)
    optimizer.param_groups()[i].options["initial_lr"] = lrs[i] / div_factor;
  return optimizer;
}
}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, int64_t total_steps,
                       double pct_start, const std::string& anneal_strategy, bool cycle_momentum,
                       std::vector<double> base_momenta, std::vector<double> max_momenta,
                       double div_factor, double final_div_factor, bool three_phase)
    : LRScheduler(with_initial_lrs(optimizer, max_lrs, div_factor)),
      total_steps_(total_steps),
      cosine_(anneal_strategy == "cos"),
      cycle_momentum_(cycle_momentum) {
  const char* name = "OneCycleLR";
  if (total_steps <= 0)
    throw ValueError(name, "total_steps is " + std::to_string(total_steps) +
                               "; pass a positive number (or epochs and steps_per_epoch)");
  if (!(pct_start >= 0 && pct_start <= 1))
    throw ValueError(name,
                     "pct_start is " + std::to_string(pct_start) + "; pass a fraction in [0, 1]");
  if (anneal_strategy != "cos" && anneal_strategy != "linear")
    throw ValueError(name, "anneal_strategy is '" + anneal_strategy + "'; pass 'cos' or 'linear'");
  if (!(final_div_factor > 0))
    throw ValueError(name, "final_div_factor is " + std::to_string(final_div_factor) +
                               "; pass a positive number (1e4 is usual)");
  const size_t groups = base_lrs_.size();
  const std::vector<double> max_lr = per_group(max_lrs, groups, "max_lr");
  for (size_t i = 0; i < groups; ++i)
    lrs_.push_back({base_lrs_[i], max_lr[i], base_lrs_[i] / final_div_factor});

  const double t = double(total_steps), up = pct_start * t - 1;
  if (three_phase)
    phases_ = {{up, 0, 1, 0, 1}, {2 * pct_start * t - 2, 1, 0, 1, 0}, {t - 1, 0, 2, 0, 0}};
  else phases_ = {{up, 0, 1, 0, 1}, {t - 1, 1, 2, 1, 0}};

  if (cycle_momentum) {
    const Options& defaults = optimizer.defaults();
    use_beta1_ = defaults.count("beta1") != 0;
    if (!use_beta1_ && !defaults.count("momentum"))
      throw ValueError(name, optimizer.name() +
                                 " has neither 'momentum' nor betas, so the momentum cannot "
                                 "cycle; pass cycle_momentum=false");
    const std::vector<double> base = per_group(base_momenta, groups, "base_momentum");
    const std::vector<double> max = per_group(max_momenta, groups, "max_momentum");
    for (size_t i = 0; i < groups; ++i) {
      for (double m : {base[i], max[i]})
        if (!(m >= 0 && (m < 1 || !use_beta1_)))
          throw ValueError(name, "a momentum of " + std::to_string(m) + " for " + optimizer.name() +
                                     "; pass values in [0, 1)");
      momenta_.push_back({max[i], base[i]});
    }
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  return cosine_ ? end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1)
                 : (end - start) * pct + start;
}

void OneCycleLR::step() {
  compile::check_capturable("LRScheduler.step", "a learning-rate schedule's step (host state)",
                            "call scheduler.step() outside the compiled step; the replay reads "
                            "the learning rate it sets at every call");
  if (last_epoch_ + 1 > total_steps_)
    throw ValueError("OneCycleLR.step",
                     "stepped " + std::to_string(last_epoch_ + 1) + " times but total_steps is " +
                         std::to_string(total_steps_) +
                         "; make the schedule for as many steps as the training takes");
  ++step_count_;
  ++last_epoch_;
  const double step = double(last_epoch_);
  std::vector<ParamGroup>& groups = optimizer_->param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    double start = 0.0;
    for (size_t k = 0; k < phases_.size(); ++k) {
      const Phase& phase = phases_[k];
      if (step <= phase.end_step || k + 1 == phases_.size()) {
        // A phase of no length (a short schedule) is at its end at once. Past the last phase's
        // end (step total_steps, after the last batch) the values stay at their end, where
        // PyTorch extrapolates (below zero for "linear", which the optimizers here refuse).
        const double pct =
            phase.end_step > start ? std::min((step - start) / (phase.end_step - start), 1.0) : 1.0;
        optimizer_->set_lr(anneal(lrs_[i][phase.start_lr], lrs_[i][phase.end_lr], pct), i);
        if (cycle_momentum_)
          groups[i].options[use_beta1_ ? "beta1" : "momentum"] =
              anneal(momenta_[i][phase.start_momentum], momenta_[i][phase.end_momentum], pct);
        break;
      }
      start = phase.end_step;
    }
  }
  record_lrs();
}

}  // namespace ember::autodiff::optim
