#pragma once
// How the jobs of one machine share its switches' reduction tables
// (switch.reduction_table.policy, docs/jobs.md): every table applies the same
// per-job limit to the entries a job holds in it. A table entry knows its job
// by its address: each collective's multicast window is claimed for a job
// (topo::MulticastFabric::window_tenant).
//   shared: first come, first served; a miss on a full table evicts whatever
//     entry the eviction policy picks (Klenk §IV-C), another job's too.
//   partitioned: job j holds at most floor(C x w_j / sum w) of a table's C
//     entries (its weight:, default 1): static shares that add up to at most
//     C, so a job never takes or evicts another's entry; a miss at its share
//     evicts its own (way partitioning, as a shared cache's is).
//   quota: job j holds at most floor(C x q_j) entries (its quota:, a fraction
//     of the table, default 1) of a pool all share: quotas may add up to more
//     than the table, and a miss below its quota on a full table evicts any
//     job's entry, at its quota its own.
// Each fabric whose switches reduce owns one, for all its tables (the GPU
// fabric's NVSwitch tables; a cluster's SHARP tables, ib.sharp.policy), and
// names them in what it refuses and reports. Plain C++; the counters are per
// job over every table of that fabric.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/param.h"

namespace incsim::nvswitch {

inline const Param<std::string> kTablePolicy{
    "switch.reduction_table.policy", "shared", Range::none(),
    "how a jobs: list's jobs share every port's reduction table: shared (first come, first served, Klenk's "
    "tables: no policy); partitioned (each job at most its weight's share, weight / total weight, of every "
    "table; none evicts another's entries); quota (each job at most its quota, a fraction of every table, of "
    "entries all share); the NVSwitches' tables (a cluster's SHARP tables: ib.sharp.policy; docs/jobs.md)"};

// What a sharing's owner calls its tables in sentences ("the switches'
// reduction tables"), the key of its policy, the name of a job's counters
// in a row's details (table_sharing), whether the run set that key (only
// then do rows report the counters and does the owner hold jobs to their
// shares: a fabric may keep runs that do not set it as they were), and
// whether it counts misses and evictions at all (memory a job is given once,
// at its start, as an FPGA's aggregator arrays, has none: its job reports
// its grant).
struct TableResource {
  std::string tables = "the switches' reduction tables", key = kTablePolicy.key(), details = "table_sharing";
  bool policy_set = true;
  bool counted = true;
};

class TableSharing {
 public:
  enum class Policy { Shared, Partitioned, Quota };
  // UserError naming `key` unless `name` is shared, partitioned or quota.
  static Policy parse(const std::string& name, const std::string& key = kTablePolicy.key());
  static const char* name(Policy p);

  explicit TableSharing(Policy p = Policy::Shared, TableResource r = {}) : policy_(p), resource_(std::move(r)) {}
  // The sharing of a resource of fixed size that each job is given once, as
  // it starts (an FPGA's memory, a switch's multicast groups, a NIC's
  // tables: not `counted`), its policy read from `policy` where `read` (else
  // shared): a policy set where `capacity_key` is 0, no limit, is refused,
  // `no_limit` saying so ("sets no limit to share").
  static std::shared_ptr<TableSharing> of_capacity(Config& cfg, const Param<std::string>& policy,
                                                   const std::string& tables, const std::string& details,
                                                   const std::string& capacity_key, uint64_t capacity,
                                                   const std::string& no_limit, bool read = true);
  Policy policy() const { return policy_; }
  const TableResource& resource() const { return resource_; }
  // "partitioned share of the switches' reduction tables (weight 1 of 4)",
  // "quota share of ... (quota 0.25)": job j's, in a refusal.
  std::string share_text(int job) const;
  // The jobs' weights (partitioned) or quotas (quota); checked by the caller.
  void set_jobs(std::vector<double> shares);
  size_t jobs() const { return shares_.size(); }
  // Whether job j has a share: a job of the jobs run the shares were set for.
  bool holds(int job) const { return job >= 0 && static_cast<size_t>(job) < shares_.size(); }
  // The entries job j may hold in a table of `capacity`; all of it for a
  // job without a share (-1: none) and while the limits are lifted.
  uint32_t limit(int job, uint32_t capacity) const;
  // Off: every job may take the whole table (a job's run alone, jobs.h).
  void enforce(bool on) { enforced_ = on; }

  // Per job, over every table: misses, entries its misses evicted, its
  // entries and writes that left as partials for want of room (evicted, or
  // passed on), pull requests that waited for an entry.
  struct Counters {
    uint64_t misses = 0, evictions_caused = 0, evictions_suffered = 0, stalls = 0;
  };
  Counters& counters(int job) { return counters_[job]; }
  const Counters& counters(int job) const { return counters_[job]; }
  void reset_counters() { counters_.assign(shares_.size(), Counters{}); }

 private:
  Policy policy_;
  TableResource resource_;
  std::vector<double> shares_;
  double total_ = 0;
  bool enforced_ = true;
  std::vector<Counters> counters_;
};

}  // namespace incsim::nvswitch
