// spec.h — a benchmark case as the harness names it on the command line: "op:key=value,...",
// e.g. "matmul:m=1024,n=1024,k=1024,algo=default". The op picks the code to run; the keys are its
// sizes and options.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

struct Spec {
  std::string text;  // as given, echoed back in the output so the harness can match rows
  std::string op;
  std::map<std::string, std::string> params;

  // An integer parameter; a missing key is an error naming the case.
  int64_t i(const std::string& key) const { return std::stoll(s(key)); }
  std::string s(const std::string& key) const {
    auto it = params.find(key);
    if (it == params.end()) throw std::invalid_argument(text + ": missing parameter '" + key + "'");
    return it->second;
  }
  std::string s(const std::string& key, const std::string& fallback) const {
    auto it = params.find(key);
    return it == params.end() ? fallback : it->second;
  }
};

inline Spec parse_spec(const std::string& text) {
  Spec spec{text, text.substr(0, text.find(':')), {}};
  if (text.find(':') == std::string::npos) return spec;
  std::string rest = text.substr(text.find(':') + 1);
  size_t start = 0;
  while (start < rest.size()) {
    size_t end = rest.find(',', start);
    if (end == std::string::npos) end = rest.size();
    std::string item = rest.substr(start, end - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument(text + ": expected key=value, got '" + item + "'");
    spec.params[item.substr(0, eq)] = item.substr(eq + 1);
    start = end + 1;
  }
  return spec;
}

}  // namespace bench
