// version.cpp — the version string, passed in by CMake from core-runtime/VERSION.
#include "ember/version.h"

namespace ember {
const char* core_version() { return EMBER_CORE_VERSION_STRING; }
}  // namespace ember
