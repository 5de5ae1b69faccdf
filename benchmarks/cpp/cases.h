// cases.h — the two tables the benchmark program looks a case's op up in.
//
// A kernel case builds its inputs once and returns the call to time (one op, or an op's forward
// and backward together). A memory case runs a whole sequence of allocations and reports the
// caching allocator's statistics. Adding an op to the benchmarks is one entry in a table here plus
// its cases in a family file under benchmarks/families/.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "spec.h"

namespace bench {

using Call = std::function<void()>;
using KernelCase = Call (*)(const Spec& spec, ember::Device device);
const std::map<std::string, KernelCase>& kernel_cases();  // kernel_cases.cpp

using Metrics = std::vector<std::pair<std::string, double>>;  // name -> value, in output order
using MemoryCase = Metrics (*)(const Spec& spec, ember::Device device);
const std::map<std::string, MemoryCase>& memory_cases();  // memory_cases.cpp

// A float32 tensor of uniform values in [-1, 1), the same for a given seed on every device.
ember::Tensor random_input(const ember::Shape& shape, ember::Device device, uint64_t seed = 1);

}  // namespace bench
