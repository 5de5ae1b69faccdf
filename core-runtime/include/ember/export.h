// export.h — EMBER_API marks what must stay visible outside libember_core whatever visibility the
// library or its user compiles with.
//
// An exception is caught by comparing type_info objects. A class whose members are all inline
// has its type_info emitted in every shared library that uses it; the dynamic linker merges those
// copies into one only when they have default visibility. Under -fvisibility=hidden each library
// would keep its own copy and `catch (const ember::ShapeError&)` in another library would miss an
// error thrown here.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define EMBER_API __attribute__((visibility("default")))
#else
#define EMBER_API
#endif
