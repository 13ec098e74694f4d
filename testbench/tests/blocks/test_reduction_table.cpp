// The reduction table's bookkeeping (Klenk Fig. 5) against a plain model:
// lookups by (address, owner), LRU order, capacity, release in any order;
// and the jobs' shares of a table (TableSharing) as a switch's misses use them.
#include <catch2/catch.hpp>

#include <array>
#include <list>
#include <random>

#include "nvswitch/eviction.h"
#include "nvswitch/reduction_table.h"

using incsim::nvswitch::ReductionTable;

TEST_CASE("a reduction table finds, fills up, keeps LRU order and frees", "[reduction_table]") {
  ReductionTable t(sc_core::sc_gen_unique_name("reduction_table"));
  t.configure(2, 128);  // Klenk Fig. 7: 256 B per port
  CHECK(t.capacity() == 2);
  const int a = t.alloc(0x100, ~0u, 16, 10);
  const int b = t.alloc(0x180, ~0u, 16, 20);
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  CHECK(t.full());
  CHECK(t.alloc(0x200, ~0u, 16, 30) == -1);
  CHECK(t.find(0x100, ~0u) == a);
  CHECK(t.find(0x100, 3) == -1);  // the owner is part of the tag
  CHECK(t.lru() == a);
  t.touch(a, 40);
  CHECK(t.lru() == b);
  t.release(b);
  CHECK(t.find(0x180, ~0u) == -1);
  CHECK(t.size() == 1);
  CHECK(t.occupancy == 1);
  CHECK(t.alloc(0x200, ~0u, 16, 50) >= 0);
  CHECK(t.lru() == a);
}

TEST_CASE("a table without entries misses and never allocates", "[reduction_table]") {
  ReductionTable t(sc_core::sc_gen_unique_name("reduction_table"));
  t.configure(0, 128);
  CHECK(t.find(0, 0) == -1);
  CHECK(t.alloc(0, 0, 1, 0) == -1);
  CHECK(t.lru() == -1);
}

TEST_CASE("a reduction table matches a list model over 100000 random operations", "[reduction_table]") {
  ReductionTable t(sc_core::sc_gen_unique_name("reduction_table"));
  t.configure(32, 128);  // 4 kB
  std::list<std::pair<uint64_t, uint32_t>> model;  // front: least recently used
  std::mt19937_64 rng(7);
  for (int step = 0; step < 100000; ++step) {
    // Few addresses, so that probe runs collide and wrap.
    const uint64_t addr = (rng() % 48) * 128;
    const uint32_t owner = static_cast<uint32_t>(rng() % 2);
    const int e = t.find(addr, owner);
    auto it = std::find(model.begin(), model.end(), std::make_pair(addr, owner));
    REQUIRE((e >= 0) == (it != model.end()));
    if (e >= 0) {
      REQUIRE(t.entry(e).addr == addr);
      if (rng() % 2) {
        t.release(e);
        model.erase(it);
      } else {
        t.touch(e, step);
        model.splice(model.end(), model, it);
      }
    } else if (!t.full()) {
      REQUIRE(t.alloc(addr, owner, 4, step) >= 0);
      model.emplace_back(addr, owner);
    } else {
      const int lru = t.lru();
      REQUIRE(std::make_pair(t.entry(lru).addr, t.entry(lru).owner) == model.front());
      t.release(lru);
      model.pop_front();
    }
    REQUIRE(t.size() == model.size());
  }
}

namespace {
// Two jobs' push misses in one table as a switch makes them (NvSwitch::absorb):
// evict_for picks the victim, then alloc. Counts, per job, the entries of
// the other job its misses evicted.
std::array<int, 2> hammer(ReductionTable& t, incsim::nvswitch::EvictionPolicy& lru, int steps) {
  std::array<int, 2> theirs{0, 0};
  std::mt19937_64 rng(3);
  for (int step = 0; step < steps; ++step) {
    const int job = static_cast<int>(rng() % 2);
    // Each job's addresses in its own multicast window, as collectives hold them.
    const uint64_t addr = (static_cast<uint64_t>(job) << 46) + (rng() % 24) * 128;
    const int e = t.find(addr, ~0u);
    if (e >= 0) {
      if (rng() % 4 == 0) t.release(e);  // completed
      else t.touch(e, step);
      continue;
    }
    const int victim = incsim::nvswitch::evict_for(lru, t, job);
    if (!t.room(job)) {
      REQUIRE(victim >= 0);  // LRU always gives one up
      if (t.entry(victim).job != job) ++theirs[job];
      t.release(victim);
    }
    REQUIRE(t.alloc(addr, ~0u, 4, step, job) >= 0);
    REQUIRE(t.held(0) + t.held(1) == t.size());
  }
  return theirs;
}
}  // namespace

TEST_CASE("a partitioned table never lets one job evict another's entry, and a shared one does", "[reduction_table][sharing]") {
  using incsim::nvswitch::TableSharing;
  const auto lru = incsim::nvswitch::make_eviction_policy("lru");
  TableSharing partitioned(TableSharing::Policy::Partitioned), shared(TableSharing::Policy::Shared);
  partitioned.set_jobs({1, 3});  // 2 and 6 of 8 entries
  shared.set_jobs({1, 1});
  CHECK(partitioned.limit(0, 8) == 2);
  CHECK(partitioned.limit(1, 8) == 6);
  ReductionTable p(sc_core::sc_gen_unique_name("reduction_table")), s(sc_core::sc_gen_unique_name("reduction_table"));
  p.configure(8, 128);
  s.configure(8, 128);
  p.share(&partitioned);
  s.share(&shared);
  const auto cross = hammer(p, *lru, 20000);
  CHECK(cross[0] == 0);
  CHECK(cross[1] == 0);
  CHECK(p.held(0) <= 2);
  CHECK(p.held(1) <= 6);
  // The same misses on a shared table evict each other's entries.
  const auto shared_cross = hammer(s, *lru, 20000);
  CHECK(shared_cross[0] > 0);
  CHECK(shared_cross[1] > 0);
}

TEST_CASE("quotas cap each job's entries of a pool they share", "[reduction_table][sharing]") {
  using incsim::nvswitch::TableSharing;
  const auto lru = incsim::nvswitch::make_eviction_policy("lru");
  TableSharing quota(TableSharing::Policy::Quota);
  quota.set_jobs({0.5, 0.75});  // of 8 entries: 4 and 6, together more than the table
  ReductionTable t(sc_core::sc_gen_unique_name("reduction_table"));
  t.configure(8, 128);
  t.share(&quota);
  CHECK(quota.limit(0, 8) == 4);
  CHECK(quota.limit(1, 8) == 6);
  const uint64_t w1 = 1ull << 46;
  for (int k = 0; k < 6; ++k) REQUIRE(t.alloc(w1 + k * 128, ~0u, 4, k, 1) >= 0);
  CHECK(t.capped(1));
  CHECK(!t.room(1));
  CHECK(t.alloc(w1 + 6 * 128, ~0u, 4, 6, 1) == -1);  // at its quota with 2 entries free
  // Job 1 at its quota evicts its own least recently used entry.
  const int own = incsim::nvswitch::evict_for(*lru, t, 1);
  CHECK(t.entry(own).job == 1);
  CHECK(t.entry(own).addr == w1);
  // Job 0 takes the 2 free entries, then, below its quota of 4 in a full
  // table, evicts the pool's least recently used entry: job 1's.
  for (int k = 0; k < 2; ++k) REQUIRE(t.alloc(k * 128, ~0u, 4, 10 + k, 0) >= 0);
  CHECK(t.full());
  CHECK(!t.capped(0));
  const int v = incsim::nvswitch::evict_for(*lru, t, 0);
  CHECK(t.entry(v).job == 1);
  t.release(v);
  REQUIRE(t.alloc(2 * 128, ~0u, 4, 12, 0) >= 0);
  CHECK(t.held(0) == 3);
  CHECK(t.held(1) == 5);
  // Lifted (a job run alone), the quota no longer binds.
  quota.enforce(false);
  CHECK(quota.limit(0, 8) == 8);
}
