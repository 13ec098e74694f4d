#include "eviction.h"

#include <map>

#include "core/error.h"

namespace incsim::nvswitch {

namespace {
// Klenk §IV-C: the least recently used push entry.
class Lru : public EvictionPolicy {
 public:
  int victim(const ReductionTable& t, int job) override {
    int v = t.lru();
    while (v >= 0 && (t.entry(v).owner != kPushOwner || (job >= 0 && t.entry(v).job != job))) v = t.entry(v).next;
    return v;
  }
};

// Entries leave only when complete or timed out (switch.reduction_table.timeout_ns).
class KeepAll : public EvictionPolicy {
 public:
  int victim(const ReductionTable&, int) override { return -1; }
};

std::map<std::string, EvictionFactory>& registry() {
  static std::map<std::string, EvictionFactory> r{
      {"lru", [] { return std::make_unique<Lru>(); }},
      {"timeout", [] { return std::make_unique<KeepAll>(); }},
  };
  return r;
}
}  // namespace

void register_eviction_policy(const std::string& name, EvictionFactory make) { registry()[name] = std::move(make); }

std::string eviction_policies() {
  std::string names;
  for (const auto& kv : registry()) names += (names.empty() ? "" : ", ") + kv.first;
  return names;
}

std::unique_ptr<EvictionPolicy> make_eviction_policy(const std::string& name) {
  const auto it = registry().find(name);
  if (it == registry().end())
    throw UserError("switch.reduction_table.eviction must be one of " + eviction_policies() + ", not '" + name + "'");
  return it->second();
}

}  // namespace incsim::nvswitch
