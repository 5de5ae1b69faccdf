// registry.cpp — every op by name: the families' tables gathered once, on first use.
#include <unordered_map>

#include "ember/autodiff/op.h"
#include "families.h"

namespace ember::autodiff {

namespace {

struct Registry {
  std::vector<OpDef> defs;  // filled once, never resized after: pointers into it stay valid
  std::unordered_map<std::string, const OpDef*> by_name;

  Registry() {
    // Every family of families.def, sorted by name. The order changes nothing: a name defined
    // twice throws whichever family comes first.
    for (auto family : {
#define EMBER_OP_FAMILY(family) family##_ops,
#include "families.def"
#undef EMBER_OP_FAMILY
         }) {
      for (OpDef& def : family()) defs.push_back(std::move(def));
    }
    for (const OpDef& def : defs) {
      if (!by_name.emplace(def.name, &def).second)
        throw Error("op registry", "op '" + def.name + "' is defined twice");
    }
  }
};

const Registry& registry() {
  static const Registry r;
  return r;
}

}  // namespace

const OpDef& op_def(const std::string& name) {
  const auto& by_name = registry().by_name;
  auto it = by_name.find(name);
  if (it == by_name.end()) throw NotSupportedError(name, "autodiff-engine has no op of this name");
  return *it->second;
}

std::vector<const OpDef*> all_op_defs() {
  std::vector<const OpDef*> out;
  for (const OpDef& def : registry().defs) out.push_back(&def);
  return out;
}

}  // namespace ember::autodiff
