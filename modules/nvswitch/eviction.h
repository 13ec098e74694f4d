#pragma once
// Which entry a full reduction table gives up when a push write misses
// (Klenk §IV-C: the least recently used, sent to its home GPU as a partial),
// or none (the write itself goes on as a partial). Policies are looked up by
// name (switch.reduction_table.eviction); an architect's sc_main may register
// its own before the platform is built (testbench/examples/custom_block).
// Called only on a miss in a full table or by a job at its share, never on a hit.
#include <functional>
#include <memory>
#include <string>

#include "reduction_table.h"

namespace incsim::nvswitch {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  // An entry of table t to evict, or -1 to keep them all: of the full table,
  // or, job >= 0, of that job's entries (it holds its share, TableSharing).
  // Only push entries (owner == kPushOwner) may go: pull entries wait for responses.
  virtual int victim(const ReductionTable& t, int job) = 0;
  static constexpr uint32_t kPushOwner = ~0u;
};

// A push miss by `job` (-1: none) in table t: the entry to evict, of the
// job's own if it holds its share (TableSharing), else of the full table;
// -1 if there is room (t.room(job)) or the policy keeps every entry.
inline int evict_for(EvictionPolicy& p, const ReductionTable& t, int job) {
  return t.capped(job) ? p.victim(t, job) : t.full() ? p.victim(t, -1) : -1;
}

using EvictionFactory = std::function<std::unique_ptr<EvictionPolicy>()>;
// Adds (or replaces) a policy by name; lru and timeout are built in.
void register_eviction_policy(const std::string& name, EvictionFactory make);
// UserError naming the registered policies if there is none by that name.
std::unique_ptr<EvictionPolicy> make_eviction_policy(const std::string& name);
std::string eviction_policies();  // "lru, timeout, ...", for messages

}  // namespace incsim::nvswitch
