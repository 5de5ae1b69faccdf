// version.cpp — version strings and the core-runtime compatibility check.
#include "ember/autodiff/version.h"

#include <ember/error.h>
#include <ember/version.h>

#include <string>

namespace ember::autodiff {

const char* version() { return EMBER_AUTODIFF_VERSION_STRING; }
const char* core_version_built_against() { return EMBER_CORE_BUILT_AGAINST; }
const char* core_version_loaded() { return ember::core_version(); }

// "0.1.0" -> "0"; throws ValueError unless v starts with digits and a dot.
static std::string major_of(const std::string& v) {
  const size_t dot = v.find('.');
  if (dot == 0 || dot == std::string::npos || v.find_first_not_of("0123456789") != dot)
    throw ValueError("core_versions_compatible",
                     "'" + v + "' is not a MAJOR.MINOR.PATCH version, e.g. \"0.1.0\"");
  return v.substr(0, dot);
}

bool core_versions_compatible(const std::string& built, const std::string& loaded) {
  return major_of(built) == major_of(loaded);
}

void check_core_compatible() {
  if (!core_versions_compatible(core_version_built_against(), core_version_loaded()))
    throw ValueError("autodiff",
                     std::string("built against core-runtime ") + core_version_built_against() +
                         " but running on core-runtime " + core_version_loaded() +
                         "; rebuild autodiff-engine against the installed core-runtime");
}

}  // namespace ember::autodiff
