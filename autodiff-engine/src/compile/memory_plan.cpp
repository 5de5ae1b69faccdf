// memory_plan.cpp — live intervals of a program's buffers, placed best fit in one arena (see
// memory_plan.h).
#include "ember/autodiff/compile/memory_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>

#include "ember/autodiff/op.h"
#include "rewrite.h"

namespace ember::autodiff::compile {

namespace {

int64_t round_up(int64_t n, int64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

int64_t bytes_of(const TensorType& t) { return t.numel() * int64_t(itemsize(t.dtype)); }

// The most bytes live at one step, and the first step they are: a sweep over the starts and ends,
// an end freeing its bytes only after the step it ends on.
std::pair<int64_t, int32_t> max_live(const std::vector<int64_t>& sizes,
                                     const std::vector<int32_t>& starts,
                                     const std::vector<int32_t>& ends) {
  std::vector<std::pair<int64_t, int64_t>> events;  // (step, +bytes at start / -bytes after end)
  for (size_t k = 0; k < sizes.size(); ++k) {
    events.emplace_back(int64_t(starts[k]), sizes[k]);
    events.emplace_back(int64_t(ends[k]) + 1, -sizes[k]);
  }
  std::sort(events.begin(), events.end());  // at one step, frees (negative) before starts
  int64_t live = 0, most = 0;
  int32_t step = 0;
  for (const auto& e : events) {
    live += e.second;
    if (live > most) {
      most = live;
      step = int32_t(e.first);
    }
  }
  return {most, step};
}

// Places the buffers in `order`, each in the smallest gap among the placed buffers it meets in
// time, else on top of them; returns the peak.
int64_t place(const std::vector<size_t>& order, const std::vector<int64_t>& aligned,
              const std::vector<int32_t>& starts, const std::vector<int32_t>& ends,
              std::vector<int64_t>& offsets) {
  offsets.assign(aligned.size(), 0);
  int64_t peak = 0;
  std::vector<size_t> placed;
  std::vector<size_t> meeting;  // the placed buffers live at some step of this one's
  for (size_t k : order) {
    if (aligned[k] == 0) continue;
    meeting.clear();
    for (size_t j : placed)
      if (starts[j] <= ends[k] && starts[k] <= ends[j]) meeting.push_back(j);
    std::sort(meeting.begin(), meeting.end(),
              [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
    int64_t top = 0, best = -1, best_gap = std::numeric_limits<int64_t>::max();
    for (size_t j : meeting) {
      const int64_t gap = offsets[j] - top;
      if (gap >= aligned[k] && gap < best_gap) {
        best = top;
        best_gap = gap;
      }
      top = std::max(top, offsets[j] + aligned[j]);
    }
    offsets[k] = best >= 0 ? best : top;
    peak = std::max(peak, offsets[k] + aligned[k]);
    placed.push_back(k);
  }
  return peak;
}

// Local search over the order of placement, from the best of the fixed orders: swap two
// buffers' places in the order and keep the swap when the peak does not grow (moves along a
// plateau let the search get past it). Stops at the lower bound, which no placement beats, or
// after a budget of about 4e7 pair tests (place() costs about n^2 of them), so a large program
// gets few rounds. The swaps come from a fixed-seed generator of our own: the same program
// always gets the same plan, on every platform.
void improve_order(std::vector<size_t> order, const std::vector<int64_t>& aligned,
                   const std::vector<int32_t>& starts, const std::vector<int32_t>& ends,
                   IntervalPlan& plan) {
  const uint64_t n = order.size();
  if (n < 2) return;
  const uint64_t rounds = std::min<uint64_t>(4000, uint64_t(4e7) / (n * n));
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {  // xorshift64
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  std::vector<int64_t> offsets;
  for (uint64_t round = 0; round < rounds && plan.planned_peak > plan.lower_bound; ++round) {
    const size_t i = size_t(next() % n), j = size_t(next() % n);
    if (i == j) continue;
    std::swap(order[i], order[j]);
    const int64_t peak = place(order, aligned, starts, ends, offsets);
    if (peak <= plan.planned_peak) {
      plan.planned_peak = peak;
      plan.offsets = offsets;
    } else {
      std::swap(order[i], order[j]);
    }
  }
}

// Where a smaller arena has to come from: the step at which the lower bound's bytes are live,
// and the largest buffers live then.
std::string fullest_moment(const Graph& g, const MemoryPlan& plan) {
  const int32_t step = plan.fullest_step;
  std::vector<const PlannedBuffer*> there;
  for (const PlannedBuffer& b : plan.buffers)
    if (b.first <= step && step <= b.last && b.nbytes > 0) there.push_back(&b);
  std::sort(there.begin(), there.end(),
            [](const PlannedBuffer* a, const PlannedBuffer* b) { return a->nbytes > b->nbytes; });
  std::string text = "fullest at node " + std::to_string(step) + " (" + g.node(step).op->name +
                     "): " + bytes_text(plan.lower_bound) + " live";
  for (size_t i = 0; i < there.size() && i < 6; ++i) {
    const PlannedBuffer& b = *there[i];
    const std::string& op = g.node(b.first).op->name;
    text += i == 0 ? "; largest " : ", ";
    text += (b.value < 0 ? "scratch of " + op : g.value_name(b.value) + " = " + op) + " " +
            bytes_text(b.nbytes);
  }
  return text;
}

}  // namespace

IntervalPlan plan_intervals(const std::vector<int64_t>& sizes, const std::vector<int32_t>& starts,
                            const std::vector<int32_t>& ends, int64_t alignment) {
  const char* op = "plan_intervals";
  if (starts.size() != sizes.size() || ends.size() != sizes.size())
    throw ValueError(op, "got " + std::to_string(sizes.size()) + " sizes, " +
                             std::to_string(starts.size()) + " starts and " +
                             std::to_string(ends.size()) +
                             " ends; expected one of each per buffer");
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
    throw ValueError(op, "alignment " + std::to_string(alignment) +
                             " is not a power of two; expected e.g. 64");
  const size_t n = sizes.size();
  std::vector<int64_t> aligned(n);
  for (size_t k = 0; k < n; ++k) {
    if (sizes[k] < 0 || starts[k] > ends[k])
      throw ValueError(op, "buffer " + std::to_string(k) + " has " + std::to_string(sizes[k]) +
                               " bytes and lives from " + std::to_string(starts[k]) + " to " +
                               std::to_string(ends[k]) + "; expected bytes >= 0 and start <= end");
    aligned[k] = round_up(sizes[k], alignment);
  }
  IntervalPlan plan;
  plan.offsets.assign(n, 0);
  plan.naive_peak = std::accumulate(aligned.begin(), aligned.end(), int64_t(0));
  std::tie(plan.lower_bound, plan.fullest_step) = max_live(aligned, starts, ends);

  // Three orders of placement, the lowest peak kept: largest first (the big buffers fix the
  // arena's shape, the small ones fill its gaps), most bytes x steps first (long-lived buffers
  // low, out of the short ones' way), and earliest first. None is best on every program, and
  // each leaves gaps on some (the digits CNN's step: 11 % over the lower bound), which a local
  // search over the best one's order then closes where it can.
  auto by = [&](auto key) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const auto ka = key(a), kb = key(b);
      return ka != kb ? ka > kb : starts[a] < starts[b];
    });
    return order;
  };
  const std::vector<std::vector<size_t>> orders = {
      by([&](size_t k) { return aligned[k]; }),
      by([&](size_t k) { return double(aligned[k]) * double(ends[k] - starts[k] + 1); }),
      by([&](size_t k) { return -int64_t(starts[k]); })};
  plan.planned_peak = -1;
  std::vector<size_t> best_order;
  for (const std::vector<size_t>& order : orders) {
    std::vector<int64_t> offsets;
    const int64_t peak = place(order, aligned, starts, ends, offsets);
    if (plan.planned_peak < 0 || peak < plan.planned_peak) {
      plan.planned_peak = peak;
      plan.offsets = std::move(offsets);
      best_order = order;
    }
  }
  improve_order(best_order, aligned, starts, ends, plan);
  return plan;
}

NodeAllocations output_allocations(const Program& program) {
  const Graph& g = *program.graph;
  NodeAllocations all(size_t(g.num_nodes()));
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    if (node.op->view || node.op->in_place) continue;
    for (size_t o = 0; o < node.outputs.size(); ++o)
      all[size_t(k)].push_back({bytes_of(g.value(node.outputs[o]).type), int32_t(o)});
  }
  return all;
}

NodeAllocations carry_allocations(const Program& program, const NodeAllocations& traced) {
  const Graph& g = *program.graph;
  const NodeAllocations own = output_allocations(program);
  NodeAllocations all(size_t(g.num_nodes()));
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const int32_t source = program.source_of(k);
    if (source < 0 || size_t(source) >= traced.size()) {
      all[size_t(k)] = own[size_t(k)];
      continue;
    }
    const Node& node = g.node(k);
    for (const AllocationRequest& r : traced[size_t(source)]) {
      const bool aliased = r.output >= 0 && (node.op->in_place || (node.op->view && r.output == 0));
      if (!aliased) all[size_t(k)].push_back(r);
    }
  }
  return all;
}

std::vector<PlannedSlot> MemoryPlan::slots(int32_t node) const {
  std::vector<PlannedSlot> out;
  for (const PlannedRequest& r : requests[size_t(node)])
    out.push_back({r.buffer < 0 ? -1 : buffers[size_t(r.buffer)].offset, r.nbytes, r.in_state});
  return out;
}

MemoryPlan plan_memory(const Program& program, const NodeAllocations& allocations,
                       Explain& explain) {
  const Graph& g = *program.graph;
  if (int32_t(allocations.size()) != g.num_nodes())
    throw ValueError("plan_memory", "got the allocations of " + std::to_string(allocations.size()) +
                                        " nodes for a program of " + std::to_string(g.num_nodes()) +
                                        " nodes; expected one list per node (carry_allocations "
                                        "maps the traced ones through the passes)");
  const std::vector<ValueId> buffer = buffers(program);
  const std::vector<int32_t> last = last_reads(program, buffer);
  const std::vector<bool> outlives = outlives_step(program, buffer);

  MemoryPlan plan;
  plan.requests.resize(allocations.size());
  std::vector<int32_t> buffer_of(buffer.size(), -1);  // value -> its PlannedBuffer
  int reused = 0;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    for (const AllocationRequest& r : allocations[size_t(k)]) {
      int32_t index = -1;
      ValueId in_state = -1;
      if (r.output < 0) {  // scratch: within its node
        index = int32_t(plan.buffers.size());
        plan.buffers.push_back({r.nbytes, 0, k, k, -1});
      } else if (size_t(r.output) < node.outputs.size()) {
        const ValueId v = node.outputs[size_t(r.output)];
        const ValueId base = buffer[size_t(v)];
        const int32_t shared = buffer_of[size_t(base)];
        if (program.reuse.count(v) && program.state_of(base)) {
          in_state = base;  // computed into its state tensor
        } else if (outlives[size_t(base)]) {
          index = -1;  // allocated normally: it outlives the step
        } else if (base != v && shared >= 0 && plan.buffers[size_t(shared)].nbytes == r.nbytes &&
                   program.reuse.count(v)) {
          index = shared;  // written over the input it reuses
          ++reused;
        } else {
          // Its own buffer, until the last read of anything in its base's buffer (a view that
          // had to copy lands here too, conservatively).
          index = int32_t(plan.buffers.size());
          plan.buffers.push_back({r.nbytes, 0, k, std::max(k, last[size_t(base)]), v});
          if (base == v) buffer_of[size_t(v)] = index;
        }
      }
      plan.requests[size_t(k)].push_back({r.nbytes, index, in_state});
    }
  }

  std::vector<int64_t> sizes;
  std::vector<int32_t> starts, ends;
  for (const PlannedBuffer& b : plan.buffers) {
    sizes.push_back(b.nbytes);
    starts.push_back(b.first);
    ends.push_back(b.last);
  }
  IntervalPlan placed = plan_intervals(sizes, starts, ends);
  for (size_t b = 0; b < plan.buffers.size(); ++b) plan.buffers[b].offset = placed.offsets[b];
  plan.planned_peak = placed.planned_peak;
  plan.naive_peak = placed.naive_peak;
  plan.lower_bound = placed.lower_bound;
  plan.fullest_step = placed.fullest_step;

  const char* pass = "memory plan";
  explain.add(pass, std::to_string(plan.buffers.size()) + " buffers in one arena (" +
                        std::to_string(reused) + " shared by in-place reuse), aligned to " +
                        std::to_string(kAlignment) + " B");
  explain.add(pass, "planned peak " + bytes_text(plan.planned_peak) + " (the arena)");
  explain.add(pass, "naive peak   " + bytes_text(plan.naive_peak) + " (every buffer its own)");
  explain.add(pass, "lower bound  " + bytes_text(plan.lower_bound) + " (most bytes live at once)");
  if (!plan.buffers.empty()) explain.add(pass, fullest_moment(g, plan));
  return plan;
}

}  // namespace ember::autodiff::compile
