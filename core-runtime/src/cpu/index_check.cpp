// index_check.cpp — the CPU's index range check (contract in ops/index_check_kernels.h): raises
// at once, naming the value the CPU path has always named (the smallest when it is negative,
// else the largest).
#include "ops/index_check_kernels.h"
#include "ops/indexing_kernels.h"

namespace ember::cpu {
namespace {

void index_check(const Tensor& index, int64_t limit, const DeferredError& error) {
  const IndexRange r = index_range_kernel(index.device())(index);
  if (r.min < 0) error.raise(r.min);
  if (r.max >= limit) error.raise(r.max);
}

}  // namespace

void register_index_check() { index_check_kernel.set(DeviceType::CPU, index_check); }

}  // namespace ember::cpu
