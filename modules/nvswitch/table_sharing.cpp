#include "table_sharing.h"

#include <cmath>

#include "core/error.h"

namespace incsim::nvswitch {

TableSharing::Policy TableSharing::parse(const std::string& name, const std::string& key) {
  for (Policy p : {Policy::Shared, Policy::Partitioned, Policy::Quota})
    if (name == TableSharing::name(p)) return p;
  throw UserError(key + " must be shared, partitioned or quota, not '" + name + "'");
}

std::shared_ptr<TableSharing> TableSharing::of_capacity(Config& cfg, const Param<std::string>& policy,
                                                        const std::string& tables, const std::string& details,
                                                        const std::string& capacity_key, uint64_t capacity,
                                                        const std::string& no_limit, bool read) {
  const bool given = read && cfg.has_override(policy);
  const std::string name = read ? cfg.get(policy) : policy.default_value();
  if (given && capacity == 0)
    throw UserError(policy.key() + "=" + name + " shares " + tables + ", but " + capacity_key + "=0 " + no_limit);
  return std::make_shared<TableSharing>(parse(name, policy.key()),
                                        TableResource{tables, policy.key(), details, given, false});
}

std::string TableSharing::share_text(int job) const {
  const double mine = shares_[static_cast<size_t>(job)];
  std::string s = std::string(name(policy_)) + " share of " + resource_.tables;
  if (policy_ == Policy::Partitioned) s += " (weight " + shortest_text(mine) + " of " + shortest_text(total_) + ")";
  if (policy_ == Policy::Quota) s += " (quota " + shortest_text(mine) + ")";
  return s;
}

const char* TableSharing::name(Policy p) {
  switch (p) {
    case Policy::Partitioned: return "partitioned";
    case Policy::Quota: return "quota";
    default: return "shared";
  }
}

void TableSharing::set_jobs(std::vector<double> shares) {
  shares_ = std::move(shares);
  total_ = 0;
  for (double s : shares_) total_ += s;
  reset_counters();
}

uint32_t TableSharing::limit(int job, uint32_t capacity) const {
  if (!holds(job) || policy_ == Policy::Shared || !enforced_) return capacity;
  const double share = policy_ == Policy::Partitioned ? shares_[job] / total_ : shares_[job];
  // The small epsilon keeps exact shares (a half of 4 entries) from rounding down.
  return static_cast<uint32_t>(std::floor(capacity * share + 1e-9));
}

}  // namespace incsim::nvswitch
