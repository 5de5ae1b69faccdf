// rematerialize.cpp — rematerialisation under a memory budget (passes.h).
//
// A value read early and again much later (in a training step: a forward activation that the
// backward pass reads) holds its buffer across the whole gap. Recomputing it right before the
// later read frees that buffer in between, at the price of running its node twice and of keeping
// that node's inputs until the recomputation. Greedily, while the memory plan does not fit:
//   - find the step where the most bytes are live (the peak the plan cannot go below);
//   - among the values whose gap spans that step, take the one whose recomputation lowers the
//     most-live bytes most (cheapest in FLOPs among equals), and recompute it before the read
//     after its gap. Inputs of its node that are dead by then are recomputed first, in turn
//     (a chain such as linear then relu is recomputed from the last value still alive).
// Never chosen: random nodes (a second draw would differ), views and in-place nodes, nodes of
// several outputs, values with aliases, and a value whose node reads a buffer that is written
// (in place, or by in-place reuse) before the recomputation would read it.
#include <algorithm>
#include <limits>

#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

namespace {

// Intervals on a doubled clock: node k runs at 2k, a recomputation before node k at 2k - 1.
struct Interval {
  int64_t bytes;
  int64_t first, last;
};

// The most bytes live at once and the first time it happens.
std::pair<int64_t, int64_t> peak_of(const std::vector<Interval>& intervals) {
  std::vector<std::pair<int64_t, int64_t>> events;  // (time, +bytes at start / -bytes after end)
  for (const Interval& i : intervals) {
    events.emplace_back(i.first, i.bytes);
    events.emplace_back(i.last + 1, -i.bytes);
  }
  std::sort(events.begin(), events.end());  // at one time, frees (negative) before starts
  int64_t live = 0, most = 0, when = 0;
  for (const auto& [t, b] : events) {
    live += b;
    if (live > most) {
      most = live;
      when = t;
    }
  }
  return {most, when};
}

int64_t live_at(const std::vector<Interval>& intervals, int64_t t) {
  int64_t live = 0;
  for (const Interval& i : intervals)
    if (i.first <= t && t <= i.last) live += i.bytes;
  return live;
}

struct Choice {
  std::vector<int32_t> nodes;  // recomputed right before `before`, in order; the chosen last
  ValueId value = -1;          // the chosen value; it and later reads take the copy
  int32_t before = -1;
  int64_t peak = std::numeric_limits<int64_t>::max();
  int64_t flops = 0;
};

// What the choice needs to know of a program's buffers.
struct Buffers {
  std::vector<ValueId> of;                   // per value: its buffer (rewrite.h)
  std::vector<std::vector<int32_t>> writes;  // per buffer: nodes writing it in place or by reuse
  std::vector<int32_t> aliases;              // per buffer: values living in it besides its own
  std::vector<std::vector<int32_t>> reads;   // per value: the nodes reading it, in order

  explicit Buffers(const Program& p) : of(buffers(p)) {
    const Graph& g = *p.graph;
    writes.resize(size_t(g.num_values()));
    aliases.assign(size_t(g.num_values()), 0);
    reads.resize(size_t(g.num_values()));
    for (int32_t k = 0; k < g.num_nodes(); ++k) {
      const Node& node = g.node(k);
      for (ValueId o : node.outputs) {
        if (node.op->in_place || p.reuse.count(o)) writes[size_t(of[size_t(o)])].push_back(k);
        if (of[size_t(o)] != o) ++aliases[size_t(of[size_t(o)])];
      }
      for (ValueId in : node.inputs) {
        std::vector<int32_t>& r = reads[size_t(in)];
        if (r.empty() || r.back() != k) r.push_back(k);
      }
    }
  }
  bool written_between(ValueId v, int32_t after, int32_t before) const {
    for (int32_t w : writes[size_t(of[size_t(v)])])
      if (w > after && w < before) return true;
    return false;
  }
};

bool recomputable(const Node& node) {
  return !node.op->random && !node.op->collective && !node.op->view && !node.op->in_place &&
         node.outputs.size() == 1 && node.op->run != nullptr;
}

// The recomputation that lowers the most-live bytes most, or none. A value's node may read values
// that are dead by then: those are recomputed first, in turn (up to kMaxChain nodes), rather than
// kept alive across the peak, so that a chain (linear then relu) is recomputed from the last
// value still alive.
constexpr size_t kMaxChain = 8;

Choice choose(const Program& p, const MemoryPlan& plan) {
  const Graph& g = *p.graph;
  std::vector<Interval> intervals;  // the plan's buffers on the doubled clock
  std::vector<int32_t> interval_of(size_t(g.num_values()), -1);  // a value's own buffer
  for (const PlannedBuffer& b : plan.buffers) {
    if (b.value >= 0) interval_of[size_t(b.value)] = int32_t(intervals.size());
    intervals.push_back({(b.nbytes + kAlignment - 1) / kAlignment * kAlignment,
                         2 * int64_t(b.first), 2 * int64_t(b.last)});
  }
  const auto [peak, when] = peak_of(intervals);
  const int64_t live_then = live_at(intervals, when);
  const Buffers bufs(p);
  // A value of its own buffer, with no alias, not written over an input.
  auto plain = [&](ValueId v) {
    return interval_of[size_t(v)] >= 0 && bufs.of[size_t(v)] == v && bufs.aliases[size_t(v)] == 0 &&
           p.reuse.count(v) == 0;
  };

  Choice best;
  for (int32_t n = 0; n < g.num_nodes(); ++n) {
    if (!recomputable(g.node(n))) continue;
    const ValueId v = g.node(n).outputs[0];
    if (!plain(v)) continue;
    const std::vector<int32_t>& r = bufs.reads[size_t(v)];
    // The gap over the peak: reads r[i] < when / 2 < r[i + 1].
    size_t i = 0;
    while (i + 1 < r.size() && !(2 * int64_t(r[i]) < when && when < 2 * int64_t(r[i + 1]))) ++i;
    if (i + 1 >= r.size()) continue;
    const int32_t before = r[i + 1];
    const int64_t at = 2 * int64_t(before) - 1;

    // The nodes to run again: n, and the nodes of its inputs dead at the peak, recursively.
    std::vector<int32_t> nodes = {n};
    std::vector<ValueId> kept;  // inputs read from their original buffers
    bool possible = true;
    for (size_t k = 0; k < nodes.size() && possible; ++k) {
      for (ValueId in : g.node(nodes[k]).inputs) {
        const Value& value = g.value(in);
        const bool dead = value.kind == ValueKind::Computed && plain(in) &&
                          intervals[size_t(interval_of[size_t(in)])].last < when;
        if (dead && recomputable(g.node(value.node)) && nodes.size() < kMaxChain) {
          if (std::find(nodes.begin(), nodes.end(), value.node) == nodes.end())
            nodes.push_back(value.node);
          continue;
        }
        possible = possible && !bufs.written_between(in, nodes[k], before);
        kept.push_back(in);
      }
    }
    if (!possible) continue;
    std::vector<Interval> trial = intervals;
    Interval& mine = trial[size_t(interval_of[size_t(v)])];
    const int64_t last = mine.last;
    mine.last = 2 * int64_t(r[i]);
    trial.push_back({mine.bytes, at, last});
    for (size_t k = 1; k < nodes.size(); ++k) {  // each lives only while the chain runs
      const int32_t j = interval_of[size_t(g.node(nodes[k]).outputs[0])];
      trial.push_back({intervals[size_t(j)].bytes, at, at});
    }
    for (ValueId in : kept) {  // kept until the recomputation reads them
      const int32_t j = interval_of[size_t(bufs.of[size_t(in)])];
      if (j >= 0) trial[size_t(j)].last = std::max(trial[size_t(j)].last, at);
    }
    if (live_at(trial, when) >= live_then) continue;
    const int64_t new_peak = peak_of(trial).first;
    int64_t flops = 0;
    for (int32_t k : nodes) flops += estimate_flops(g, g.node(k));
    if (new_peak <= peak &&
        (new_peak < best.peak || (new_peak == best.peak && flops < best.flops))) {
      std::sort(nodes.begin(), nodes.end());
      best = Choice{nodes, v, before, new_peak, flops};
    }
  }
  return best;
}

}  // namespace

BudgetError::BudgetError(int64_t budget, int64_t smallest)
    : ValueError("rematerialize",
                 "a memory budget of " + bytes_text(budget) + " cannot be met: recomputing " +
                     "every value that may be recomputed still plans " + bytes_text(smallest) +
                     "; pass memory_budget >= " + std::to_string(smallest) +
                     " (or make the step smaller: a smaller batch, fewer layers)"),
      budget_(budget),
      smallest_(smallest) {}

int64_t estimate_flops(const Graph& g, const Node& node) {
  const int64_t out = node.outputs.empty() ? 0 : g.value(node.outputs[0]).type.numel();
  const std::string& op = node.op->name;
  if ((op == "matmul" || op == "linear" || op == "linear_act") && !node.inputs.empty()) {
    const Shape& a = g.value(node.inputs[0]).type.shape;
    return 2 * out * (a.empty() ? 1 : a.back());
  }
  if (op == "conv2d" && node.inputs.size() >= 2) {
    const Shape& w = g.value(node.inputs[1]).type.shape;  // [C_out, C_in / groups, kh, kw]
    return 2 * out * (w.empty() || w[0] == 0 ? 0 : shape_numel(w) / w[0]);
  }
  int64_t total = 0;
  for (ValueId v : node.outputs) total += g.value(v).type.numel();
  return total;
}

Program rematerialize(const Program& program, int64_t budget_bytes,
                      const NodeAllocations& allocations, Explain& explain) {
  const char* pass = "rematerialisation";
  if (budget_bytes <= 0)
    throw ValueError("rematerialize", "memory budget " + std::to_string(budget_bytes) +
                                          " B; expected a positive number of bytes");
  Program cur = clone(program);
  int64_t smallest = std::numeric_limits<int64_t>::max();
  int64_t first_peak = -1, total_flops = 0;
  int chosen = 0;
  for (;;) {
    const NodeAllocations allocs =
        allocations.empty() ? output_allocations(cur) : carry_allocations(cur, allocations);
    Explain scratch;
    const MemoryPlan plan = plan_memory(cur, allocs, scratch);
    if (first_peak < 0) first_peak = plan.planned_peak;
    smallest = std::min(smallest, plan.planned_peak);
    if (plan.planned_peak <= budget_bytes) break;

    const Choice best = choose(cur, plan);
    if (best.nodes.empty()) {
      explain.add(pass, "a budget of " + bytes_text(budget_bytes) +
                            " is not met: no value left whose recomputation lowers the peak");
      throw BudgetError(budget_bytes, smallest);
    }
    const Graph& g = *cur.graph;
    std::string chain;
    for (int32_t k : best.nodes) {
      const ValueId v = g.node(k).outputs[0];
      chain += (chain.empty() ? "" : ", ") + g.value_name(v) + ":" + g.value(v).type.str() + " = " +
               g.node(k).op->name;
    }
    explain.add(pass, "recompute " + chain + " before node " + std::to_string(best.before) + " (" +
                          g.node(best.before).op->name + "), freeing " + g.value_name(best.value) +
                          " in between: " + std::to_string(best.flops) + " FLOPs");
    Rewriter r(cur);
    for (int32_t k = 0; k < g.num_nodes(); ++k) {
      if (k == best.before)  // the chain in order, each reading the copies before it
        for (int32_t c : best.nodes) r.redirect(g.node(c).outputs[0], r.copy_again(c)[0]);
      r.copy(k);
    }
    cur = r.finish();
    total_flops += best.flops;
    ++chosen;
  }
  explain.add(pass, std::to_string(chosen) + " values recomputed, " + std::to_string(total_flops) +
                        " FLOPs more per step; planned peak " + bytes_text(first_peak) + " -> " +
                        bytes_text(smallest) + ", within the budget of " +
                        bytes_text(budget_bytes));
  explain.after(pass, cur);
  return cur;
}

}  // namespace ember::autodiff::compile
