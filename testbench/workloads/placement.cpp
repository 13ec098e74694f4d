#include "placement.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "core/units.h"

namespace incsim::tb {

namespace {
// Each endpoint's group: the switches it is linked to, adapters aside.
std::vector<std::set<int>> groups_of(const topo::Topology& t) {
  std::vector<int> endpoint(t.nodes().size(), -1);
  for (size_t e = 0; e < t.endpoints().size(); ++e) endpoint[t.endpoints()[e]] = static_cast<int>(e);
  std::vector<std::set<int>> groups(t.endpoints().size());
  const auto attach = [&](int ep, int other) {
    if (endpoint[ep] < 0 || t.node(other).kind != topo::NodeKind::Switch) return;
    if (topo::kinds::is_adapter(t.node(other).block)) return;
    groups[endpoint[ep]].insert(other);
  };
  for (const topo::Link& l : t.links()) {
    attach(l.a.node, l.b.node);
    attach(l.b.node, l.a.node);
  }
  return groups;
}

std::vector<int> spread(const topo::Topology& t, const std::vector<int>& free, int count) {
  const auto groups = groups_of(t);
  // Free GPUs by group, groups in the order of their lowest free GPU.
  std::map<std::set<int>, size_t> index;
  std::vector<std::vector<int>> by_group;
  for (int g : free) {
    const auto [it, added] = index.emplace(groups[g], by_group.size());
    if (added) by_group.emplace_back();
    by_group[it->second].push_back(g);
  }
  std::vector<int> taken;
  for (size_t k = 0; static_cast<int>(taken.size()) < count; ++k)
    for (const auto& members : by_group)
      if (k < members.size() && static_cast<int>(taken.size()) < count) taken.push_back(members[k]);
  return taken;
}
}  // namespace

std::vector<int> place(const topo::Topology& t, const std::vector<bool>& is_free, const std::string& placement,
                       int count, uint64_t seed, const std::string& unit) {
  std::vector<int> free;
  for (size_t g = 0; g < is_free.size(); ++g)
    if (is_free[g]) free.push_back(static_cast<int>(g));
  const int n = static_cast<int>(free.size());
  if (n < count)
    throw UserError(count_of(n, unit + " is", unit + "s are") + " free and it asks for " + std::to_string(count));
  std::vector<int> taken;
  if (placement == "contiguous") {
    int longest = 0;
    for (int i = 0, run = 0; i < n && taken.empty(); ++i) {
      run = i > 0 && free[i] == free[i - 1] + 1 ? run + 1 : 1;
      longest = std::max(longest, run);
      if (run == count) taken.assign(free.begin() + i + 1 - count, free.begin() + i + 1);
    }
    if (taken.empty())
      throw UserError("no " + std::to_string(count) + " free " + unit + "s are in a row (the longest run free is " +
                      std::to_string(longest) + ")");
  } else if (placement == "random") {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < count; ++i) std::swap(free[i], free[i + static_cast<int>(rng() % (n - i))]);
    taken.assign(free.begin(), free.begin() + count);
  } else if (placement == "fragmented") {
    for (int start : {0, 1})
      for (int i = start; i < n && static_cast<int>(taken.size()) < count; i += 2) taken.push_back(free[i]);
  } else {
    taken = spread(t, free, count);
  }
  std::sort(taken.begin(), taken.end());
  return taken;
}

}  // namespace incsim::tb
