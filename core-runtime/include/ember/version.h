// version.h — the core-runtime version this header belongs to.
#pragma once

namespace ember {
const char* core_version();  // "0.1.0", from core-runtime/VERSION
}  // namespace ember
