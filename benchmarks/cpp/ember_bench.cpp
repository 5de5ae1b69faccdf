// ember_bench.cpp — Ember's side of the benchmarks: runs the cases named on the command line and
// prints one JSON object per case on stdout, for benchmarks/run.py to collect.
//
//   ember_bench [--device cpu|cuda] [--warmup N] [--repeat N] [--min-sample-ms X] CASE...
//   ember_bench --callgrind CASE   one untimed warm-up call, then one call with callgrind's
//                                  collection switched on (run under valgrind --collect-atstart=no)
//   ember_bench --list             the ops this build knows
//
// A CASE is "op:key=value,..." (see spec.h). Kernel cases print
//   {"case": "add:n=1024", "median_ms": 0.01, "q1_ms": ..., "q3_ms": ..., "min_ms": ...,
//    "samples": 20, "inner": 64}
// and memory cases the allocator figures they measure. Errors go to stderr with exit code 1.
#include <cstdio>
#include <exception>
#include <string>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else  // without valgrind's headers --callgrind counts nothing, and says so
#define CALLGRIND_TOGGLE_COLLECT
#define EMBER_BENCH_NO_CALLGRIND 1
#endif

#include "cases.h"
#include "timer.h"

namespace {

void print_json(const std::string& case_text, const bench::Metrics& metrics) {
  std::printf("{\"case\": \"%s\"", case_text.c_str());
  for (const auto& [name, value] : metrics) std::printf(", \"%s\": %.15g", name.c_str(), value);
  std::printf("}\n");
  std::fflush(stdout);
}

int usage(const char* why) {
  std::fprintf(
      stderr,
      "ember_bench: %s\nusage: ember_bench [--device cpu|cuda] [--warmup N] "
      "[--repeat N] [--min-sample-ms X] [--callgrind] CASE...\n       ember_bench --list\n",
      why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ember::Device device("cpu");
  bench::TimerOptions timer;
  bool callgrind = false;
  std::vector<std::string> cases;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--list") {
      for (const auto& [name, fn] : bench::kernel_cases()) std::printf("kernel %s\n", name.c_str());
      for (const auto& [name, fn] : bench::memory_cases()) std::printf("memory %s\n", name.c_str());
      return 0;
    } else if (arg == "--callgrind") {
      callgrind = true;
    } else if (arg == "--device" && has_value) {
      device = ember::Device(argv[++i]);
    } else if (arg == "--warmup" && has_value) {
      timer.warmup = std::stoi(argv[++i]);
    } else if (arg == "--repeat" && has_value) {
      timer.repeat = std::stoi(argv[++i]);
    } else if (arg == "--min-sample-ms" && has_value) {
      timer.min_sample_ms = std::stod(argv[++i]);
    } else if (arg.rfind("--", 0) == 0) {
      return usage(("unknown option or missing value: " + arg).c_str());
    } else {
      cases.push_back(arg);
    }
  }
  if (cases.empty()) return usage("no case given");
#ifdef EMBER_BENCH_NO_CALLGRIND
  if (callgrind) return usage("built without valgrind/callgrind.h: --callgrind is unavailable");
#endif

  try {
    for (const std::string& text : cases) {
      bench::Spec spec = bench::parse_spec(text);
      if (auto m = bench::memory_cases().find(spec.op); m != bench::memory_cases().end()) {
        print_json(text, m->second(spec, device));
        continue;
      }
      auto k = bench::kernel_cases().find(spec.op);
      if (k == bench::kernel_cases().end())
        throw std::invalid_argument(text + ": unknown op '" + spec.op + "' (see --list)");
      bench::Call call = k->second(spec, device);
      if (callgrind) {
        call();
        CALLGRIND_TOGGLE_COLLECT;
        call();
        CALLGRIND_TOGGLE_COLLECT;
        print_json(text, {{"calls", 1}});
        continue;
      }
      bench::TimeStats s = bench::time_calls(
          call, [&] { ember::synchronize(device); }, timer);
      print_json(text, {{"median_ms", s.median_ms},
                        {"q1_ms", s.q1_ms},
                        {"q3_ms", s.q3_ms},
                        {"min_ms", s.min_ms},
                        {"samples", s.samples},
                        {"inner", double(s.inner)}});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
