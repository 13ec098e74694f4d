// The reduction table's bookkeeping (Klenk Fig. 5) against a plain model:
// lookups by (address, owner), LRU order, capacity, release in any order.
#include <catch2/catch.hpp>

#include <list>
#include <random>

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
