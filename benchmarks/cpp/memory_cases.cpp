// memory_cases.cpp — op sequences run for the caching allocator's statistics, not for time.
// Each reports what the sequence itself added: peak bytes in use above what was in use when it
// started, the growth of reserved bytes, and how many requests reached malloc/cudaMalloc.
#include "cases.h"

namespace bench {

using ember::Device;
using ember::MemoryStats;
using ember::Tensor;

namespace {

// Runs `sequence` on a device whose cache is empty and peak reset, and reports what it added.
template <class F> Metrics measure(Device d, F&& sequence) {
  ember::empty_cache(d);
  ember::reset_peak_memory(d);
  MemoryStats before = ember::memory_stats(d);
  sequence();
  ember::synchronize(d);
  MemoryStats after = ember::memory_stats(d);
  return {{"peak_bytes", double(after.peak - before.in_use)},
          {"reserved_bytes", double(after.reserved - before.reserved)},
          {"system_allocations", double(after.system_allocations - before.system_allocations)},
          {"allocations", double(after.allocations - before.allocations)}};
}

// Allocation churn: a training-loop-like body allocating the same shapes every step.
// x [n]; per step y = x * x, z = y + x, r = relu(z), all freed at the end of the step.
Metrics churn(const Spec& p, Device d) {
  Tensor x = random_input({p.i("n")}, d);
  int64_t steps = p.i("steps");
  return measure(d, [&] {
    for (int64_t s = 0; s < steps; ++s) {
      Tensor y = ember::mul(x, x);
      Tensor z = ember::add(y, x);
      Tensor r = ember::relu(z);
    }
  });
}

// Reuse after free: each step frees its tensor and asks for a slightly smaller one, from n
// elements down to n / 2, which a caching allocator serves from the block just freed.
Metrics shrinking(const Spec& p, Device d) {
  int64_t n = p.i("n"), steps = p.i("steps");
  return measure(d, [&] {
    for (int64_t s = 0; s < steps; ++s)
      Tensor::empty({n - n * s / (2 * steps)}, ember::DType::Float32, d).fill_(1.0);
  });
}

// The cap: with set_memory_limit(limit), allocate blocks of `block` bytes until the allocator
// refuses. Reports the bytes in use when it refused (never above the cap) and the cap itself.
Metrics cap(const Spec& p, Device d) {
  int64_t limit = p.i("limit"), block = p.i("block");
  ember::empty_cache(d);
  ember::set_memory_limit(limit, d);
  std::vector<Tensor> held;
  int64_t in_use_at_refusal = -1;
  for (int64_t i = 0; i <= limit / block + 1 && in_use_at_refusal < 0; ++i) {
    try {
      held.push_back(Tensor::empty({block}, ember::DType::UInt8, d));
    } catch (const ember::OutOfMemoryError&) {
      in_use_at_refusal = ember::memory_stats(d).in_use;
    }
  }
  ember::set_memory_limit(0, d);
  if (in_use_at_refusal < 0)
    throw std::runtime_error(p.text + ": the allocator never refused a request past the cap");
  return {{"bytes_at_refusal", double(in_use_at_refusal)},
          {"limit", double(limit)},
          {"blocks_held", double(held.size())}};
}

}  // namespace

const std::map<std::string, MemoryCase>& memory_cases() {
  static const std::map<std::string, MemoryCase> table = {
      {"churn", churn},
      {"shrinking", shrinking},
      {"cap", cap},
  };
  return table;
}

}  // namespace bench
