// debug_log.cpp — the EMBER_DEBUG=1 op log (see debug_log.h).
#include "debug_log.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "ember/autodiff/graph.h"

namespace ember::autodiff {

bool debug_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("EMBER_DEBUG");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  return enabled;
}

namespace {
std::string types(const std::vector<Tensor>& tensors) {
  std::string out;
  for (size_t k = 0; k < tensors.size(); ++k)
    out += (k ? ", " : "") + (tensors[k].defined() ? type_of(tensors[k]).str() : "undefined");
  return out;
}
}  // namespace

void log_op(const std::string& op, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& outputs, std::chrono::steady_clock::time_point start) {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::string device = inputs.empty() ? "cpu" : inputs[0].device().str();
  std::ostringstream line;
  line << "[ember] " << op << "(" << types(inputs) << ") -> " << types(outputs) << " on " << device
       << ": " << ms << " ms\n";
  std::fputs(line.str().c_str(), stderr);
}

}  // namespace ember::autodiff
