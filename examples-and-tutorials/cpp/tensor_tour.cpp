// tensor_tour.cpp — a first program on core-runtime: tensors, views, shape ops, dtypes, memory
// statistics and devices. Every step prints what it did and checks the result; the program exits
// with status 1 if any check fails, so the test suite runs it as a test.
#include <ember/ember.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

using ember::DType;
using ember::Shape;
using ember::Tensor;

namespace {

int failures = 0;

// Prints "ok" or "FAILED" beside a description of what was checked.
void check(bool ok, const std::string& what) {
  std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}

template <class T> bool equal(const Tensor& t, const std::vector<T>& expected) {
  return t.to_vector<T>() == expected;
}

void views_share_storage() {
  std::cout << "\n1. A tensor and its views\n";
  // x: [2, 3]
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  std::cout << "x = " << x << "\n";
  Tensor xt = x.t();  // [3, 2], the same storage read with swapped strides
  std::cout << "x.t() = " << xt << "\n";
  check(xt.shares_storage(x) && !xt.is_contiguous(), "x.t() is a view: no copy was made");
  check(equal<float>(xt, {1, 4, 2, 5, 3, 6}), "x.t() reads x column by column");

  // Writing through a view changes x: column 1 of x is row 1 of x.t().
  xt.select(0, 1).fill_(0);
  std::cout << "after x.t()[1] = 0: x = " << x << "\n";
  check(equal<float>(x, {1, 0, 3, 4, 0, 6}), "a write through the view is seen in x");

  Tensor copy = xt.contiguous();  // a fresh, row-major copy
  check(!copy.shares_storage(x) && copy.is_contiguous(), "contiguous() of a view copies");
  check(x.view({3, 2}).shares_storage(x), "view({3, 2}) of a contiguous tensor shares storage");
}

void shape_ops() {
  std::cout << "\n2. Joining and splitting\n";
  Tensor a = Tensor::from_vector<int64_t>({1, 2, 3}, {1, 3});
  Tensor b = Tensor::from_vector<int64_t>({4, 5, 6}, {1, 3});
  Tensor c = ember::cat({a, b}, 0);  // [2, 3]
  std::cout << "cat(a, b) = " << c << "\n";
  check(c.shape() == Shape{2, 3} && equal<int64_t>(c, {1, 2, 3, 4, 5, 6}), "cat along dim 0");
  Tensor s = ember::stack({a.squeeze(0), b.squeeze(0)}, 1);  // [3, 2]
  check(s.shape() == Shape{3, 2} && equal<int64_t>(s, {1, 4, 2, 5, 3, 6}), "stack on a new dim 1");
  ember::TensorList pieces = ember::split(c, std::vector<int64_t>{1, 2}, 1);
  check(pieces.size() == 2 && pieces[1].shape() == Shape{2, 2} &&
            equal<int64_t>(pieces[1], {2, 3, 5, 6}) && pieces[1].shares_storage(c),
        "split(c, {1, 2}, dim 1) gives views of sizes 1 and 2");
  check(ember::chunk(c, 3, 1).size() == 3, "chunk(c, 3, dim 1) gives three pieces");
}

void dtypes() {
  std::cout << "\n3. Dtypes\n";
  Tensor f = Tensor::from_vector<float>({0.1f, 1.5f, -2.7f, 65504.0f}, {4});
  Tensor h = f.to(DType::Float16);
  std::cout << "float16: " << h << "\n";
  check(h.itemsize() == 2 && h.to(DType::Float32).to_vector<float>()[3] == 65504.0f,
        "float16 holds its largest finite value, 65504, exactly");
  check(equal<int32_t>(f.to(DType::Int32), {0, 1, -2, 65504}), "casting to int32 truncates");
  check(ember::promote_types(DType::Int32, DType::Float16) == DType::Float16,
        "int32 with float16 promotes to float16");
}

void memory() {
  std::cout << "\n4. The caching allocator\n";
  const int64_t n = 1 << 18;  // 1 MiB of float32
  ember::MemoryStats before = ember::memory_stats();
  {
    Tensor t = Tensor::empty({n});
    ember::MemoryStats during = ember::memory_stats();
    std::cout << "in use: " << before.in_use << " -> " << during.in_use << " bytes\n";
    check(during.in_use - before.in_use >= n * 4, "a 1 MiB tensor is counted as in use");
  }
  ember::MemoryStats after_free = ember::memory_stats();
  check(after_free.in_use == before.in_use, "freeing the tensor returns its bytes");
  Tensor again = Tensor::empty({n});  // same size: served from the cache
  ember::MemoryStats after_reuse = ember::memory_stats();
  check(after_reuse.system_allocations == after_free.system_allocations,
        "a second 1 MiB tensor reuses the cached block (no new malloc)");
  std::cout << "peak " << after_reuse.peak << " bytes, reserved " << after_reuse.reserved
            << " bytes\n";
}

void devices() {
  std::cout << "\n5. Devices\n";
  std::cout << "CUDA compiled: " << (ember::cuda_compiled() ? "yes" : "no")
            << ", GPUs: " << ember::cuda_device_count() << "\n";
  if (!ember::cuda_is_available()) {
    std::cout << "  [skipped] no GPU here: the CUDA round trip runs on a GPU machine\n";
    return;
  }
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor on_gpu = x.t().to(ember::Device("cuda"));
  std::cout << "x.t() on " << on_gpu.device().str() << ": " << on_gpu << "\n";
  check(equal<float>(on_gpu.to(ember::Device("cpu")), {1, 4, 2, 5, 3, 6}),
        "a view copied to the GPU and back keeps its values");
}

}  // namespace

int main() {
  std::cout << "Ember core-runtime " << ember::core_version() << " — a tour of tensors\n";
  try {
    views_share_storage();
    shape_ops();
    dtypes();
    memory();
    devices();
  } catch (const ember::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  std::cout << "\n"
            << (failures ? std::to_string(failures) + " check(s) FAILED" : "all checks passed")
            << "\n";
  return failures ? 1 : 0;
}
