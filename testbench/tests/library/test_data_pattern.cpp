// The result check every run relies on (#wrong): DataPattern::mismatches
// gives 0 for the right data and counts exactly the elements that differ,
// for every element type and reduction operator.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "elements/data_pattern.h"

using namespace incsim::elements;

namespace {
constexpr int kRanks = 5;
constexpr uint64_t kFirst = 1000, kCount = 257;

// The reduction of every rank's input, computed the way a switch does it:
// rank 0's data, then each other rank's reduced in.
std::vector<uint8_t> reduced_by_alu(const DataPattern& d, DType t, RedOp op) {
  std::vector<uint8_t> acc(kCount * 4), in(kCount * 4);
  d.fill(t, 0, kFirst, kCount, acc.data());
  for (int r = 1; r < kRanks; ++r) {
    d.fill(t, r, kFirst, kCount, in.data());
    reduce_bytes(t, op, acc.data(), in.data(), static_cast<uint32_t>(in.size()));
  }
  return acc;
}

void add_one(DType t, uint8_t* element) {
  if (t == DType::Float32) {
    float f;
    std::memcpy(&f, element, 4);
    f += 1;
    std::memcpy(element, &f, 4);
  } else {
    int32_t v;
    std::memcpy(&v, element, 4);
    v += 1;
    std::memcpy(element, &v, 4);
  }
}
}  // namespace

TEST_CASE("mismatches: the right reduction gives 0, each wrong element counts once, every dtype and redop",
          "[data][wrong]") {
  const DataPattern d(7, kRanks);
  for (DType t : {DType::Float32, DType::Int32})
    for (RedOp op : {RedOp::Sum, RedOp::Min, RedOp::Max}) {
      INFO(dtype_name(t) << " " << redop_name(op));
      std::vector<uint8_t> buf = reduced_by_alu(d, t, op);
      CHECK(d.mismatches(t, op, buf.data(), kFirst, kCount, -1) == 0);
      add_one(t, buf.data() + 4 * 17);
      CHECK(d.mismatches(t, op, buf.data(), kFirst, kCount, -1) == 1);
      add_one(t, buf.data() + 4 * (kCount - 1));
      CHECK(d.mismatches(t, op, buf.data(), kFirst, kCount, -1) == 2);
      // The same bytes checked against other indices are wrong almost everywhere.
      CHECK(d.mismatches(t, op, buf.data(), kFirst + 1, kCount, -1) > kCount / 2);
    }
}

TEST_CASE("mismatches: a rank's own input (all-gather, broadcast) and its flips", "[data][wrong]") {
  const DataPattern d(3, kRanks);
  for (DType t : {DType::Float32, DType::Int32}) {
    INFO(dtype_name(t));
    std::vector<uint8_t> buf(kCount * 4);
    d.fill(t, 2, kFirst, kCount, buf.data());
    CHECK(d.mismatches(t, RedOp::Sum, buf.data(), kFirst, kCount, 2) == 0);
    CHECK(d.mismatches(t, RedOp::Sum, buf.data(), kFirst, kCount, 3) > 0);  // another rank's input
    add_one(t, buf.data());
    CHECK(d.mismatches(t, RedOp::Sum, buf.data(), kFirst, kCount, 2) == 1);
  }
}

TEST_CASE("mismatches: an all-to-all block from the wrong rank or the wrong place counts nearly all its elements",
          "[data][wrong]") {
  // An all-to-all's output element is checked against its sender's input at
  // its place in the message; a misrouted block holds another rank's data,
  // or the right rank's from elsewhere.
  const DataPattern d(3, kRanks);
  std::vector<uint8_t> buf(kCount * 4);
  d.fill(DType::Float32, 1, kFirst, kCount, buf.data());
  CHECK(d.mismatches(DType::Float32, RedOp::Sum, buf.data(), kFirst, kCount, 1) == 0);
  CHECK(d.mismatches(DType::Float32, RedOp::Sum, buf.data(), kFirst + kCount, kCount, 1) > kCount * 9 / 10);
  // Another rank's data at the right place.
  CHECK(d.mismatches(DType::Float32, RedOp::Sum, buf.data(), kFirst, kCount, 4) > kCount * 9 / 10);
}

TEST_CASE("mismatches: a float that is not a whole number never matches", "[data][wrong]") {
  const DataPattern d(1, kRanks);
  std::vector<uint8_t> buf = reduced_by_alu(d, DType::Float32, RedOp::Sum);
  float f;
  std::memcpy(&f, buf.data(), 4);
  f += 0.25f;
  std::memcpy(buf.data(), &f, 4);
  CHECK(d.mismatches(DType::Float32, RedOp::Sum, buf.data(), kFirst, kCount, -1) == 1);
}

TEST_CASE("the reduction has its closed form: a lost or doubled contribution is wrong wherever it is not 0",
          "[data][wrong]") {
  const DataPattern d(11, kRanks);
  uint64_t nonzero = 0;  // a(r) s(i) + b(i) is 0 at a few indices: losing it there changes nothing
  for (uint64_t i = 0; i < kCount; ++i) nonzero += d.value(kRanks - 1, kFirst + i) != 0;
  REQUIRE(nonzero > kCount * 9 / 10);
  std::vector<uint8_t> acc(kCount * 4), in(kCount * 4);
  d.fill(DType::Int32, 0, kFirst, kCount, acc.data());
  for (int r = 1; r < kRanks - 1; ++r) {  // the last rank's contribution lost
    d.fill(DType::Int32, r, kFirst, kCount, in.data());
    reduce_bytes(DType::Int32, RedOp::Sum, acc.data(), in.data(), kCount * 4);
  }
  CHECK(d.mismatches(DType::Int32, RedOp::Sum, acc.data(), kFirst, kCount, -1) == nonzero);
  d.fill(DType::Int32, kRanks - 1, kFirst, kCount, in.data());
  reduce_bytes(DType::Int32, RedOp::Sum, acc.data(), in.data(), kCount * 4);
  CHECK(d.mismatches(DType::Int32, RedOp::Sum, acc.data(), kFirst, kCount, -1) == 0);
  reduce_bytes(DType::Int32, RedOp::Sum, acc.data(), in.data(), kCount * 4);  // doubled
  CHECK(d.mismatches(DType::Int32, RedOp::Sum, acc.data(), kFirst, kCount, -1) == nonzero);
}

TEST_CASE("pattern_keys: the folded remainders equal h % 3 and (h >> 8) % 101 (the vectorized hash)", "[data]") {
  // Random and extreme seeds and starts, runs that end inside a block and
  // that wrap the 64-bit index.
  uint8_t s[200], b[200];
  uint64_t checked = 0, wrong = 0;
  for (uint64_t trial = 0; trial < 4000; ++trial) {
    const uint64_t seed = trial < 2 ? ~0ull * trial : incsim::splitmix64(trial);
    const uint64_t first = trial % 3 == 0 ? ~0ull - trial % 97 : incsim::splitmix64(trial + 17) >> (trial % 64);
    const uint32_t n = static_cast<uint32_t>(trial % 200);
    pattern_keys(seed, first, n, s, b);
    for (uint32_t k = 0; k < n; ++k) {
      const uint64_t h = incsim::splitmix64(seed ^ (first + k));
      ++checked;
      wrong += s[k] != h % 3 || b[k] != (h >> 8) % 101;
    }
  }
  CHECK(checked > 390000);
  CHECK(wrong == 0);
}

TEST_CASE("fill and mismatches agree with value and reduced element by element, across hash blocks", "[data]") {
  const DataPattern d(5, kRanks);
  constexpr uint64_t kMany = 1000;  // several blocks of pattern_keys and a partial one
  std::vector<uint8_t> buf(kMany * 4);
  d.fill(DType::Int32, 3, kFirst, kMany, buf.data());
  for (uint64_t i = 0; i < kMany; ++i) {
    int32_t v;
    std::memcpy(&v, buf.data() + 4 * i, 4);
    REQUIRE(v == d.value(3, kFirst + i));
  }
  for (RedOp op : {RedOp::Sum, RedOp::Min, RedOp::Max}) {
    for (uint64_t i = 0; i < kMany; ++i) {
      const int32_t v = d.reduced(op, kFirst + i);
      std::memcpy(buf.data() + 4 * i, &v, 4);
    }
    CHECK(d.mismatches(DType::Int32, op, buf.data(), kFirst, kMany, -1) == 0);
    CHECK(d.mismatches(DType::Int32, op, buf.data() + 4, kFirst + 1, kMany - 1, -1) == 0);
  }
}
