// version.h — the autodiff-engine version, and the core-runtime it runs on.
//
// autodiff-engine is built against an installed core-runtime and, when both are shared
// libraries, loaded beside whichever libember_core the system finds at run time. These functions
// say which core it was built against and which it got, and check that the two are compatible.
#pragma once
#include <string>

namespace ember::autodiff {

const char* version();                     // "0.1.0", from autodiff-engine/VERSION
const char* core_version_built_against();  // EmberCore's version when this library was compiled
const char* core_version_loaded();         // ember::core_version() of the core-runtime in use

// Whether a library built against core `built` can run on core `loaded`: the same major version,
// the rule of EmberCore's package version file (SameMajorVersion). Versions are
// "MAJOR.MINOR.PATCH".
bool core_versions_compatible(const std::string& built, const std::string& loaded);

// Throws ember::ValueError naming both versions when the loaded core-runtime is incompatible.
void check_core_compatible();

}  // namespace ember::autodiff
