#pragma once
// GPU memory holding real data. Buffers are allocated at the same local
// address on every GPU (a symmetric heap, as NCCL and NVSHMEM arrange), so a
// peer's mailbox is addressed by (peer, local address). Only buffers that
// really exist in hardware are stored; a collective's input is generated from
// (rank, index) and its output is checked as it lands, so memory scales with
// what is in flight, not with message size.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <systemc>

namespace incsim::gpu {

class Memory {
 public:
  // Static latency plus a random [0, jitter) in cycles (Klenk §V).
  Memory(double clock_ghz, uint32_t latency_cycles, uint32_t jitter_cycles, uint64_t seed);

  uint64_t alloc(uint64_t bytes);  // zeroed, 256 B aligned
  // A buffer of `bytes` whose pages of `page` bytes (which accesses do not
  // straddle) exist only from their first access until release(): a
  // mailbox's slots hold data only between its landing and its reader, so
  // its host memory follows what is in flight, not slots x chunk per
  // connection. Reads as zeroed, as alloc's.
  uint64_t alloc_paged(uint64_t bytes, uint64_t page);
  // The page of a paged buffer at addr holds nothing any more: zeroed and kept for the next page taken.
  void release(uint64_t addr);
  // Frees the buffer alloc returned; the space above the highest buffer
  // left is allocated again (each collective frees what it allocated, so a
  // GPU's programs in flight keep their buffers).
  void free(uint64_t addr);
  uint8_t* at(uint64_t addr, uint64_t bytes);
  uint64_t allocated() const { return top_ - kBase; }
  // Host bytes the live buffers hold (a paged buffer's pages that exist), and their most.
  uint64_t held() const { return held_; }
  uint64_t peak_held() const { return peak_held_; }

  // One access's latency. Its jitter is a hash of the access (who makes it,
  // what it touches, when, counted from the origin) and this GPU's seed, not
  // a generator's next draw: SystemC does not order same-time events, so the
  // order in which a GPU serves simultaneous requests moves with unrelated
  // events (another job's, on other GPUs). Keyed by the access, a
  // collective's latencies depend on its own accesses only.
  sc_core::sc_time latency(uint64_t who, uint64_t what, const sc_core::sc_time& when) const;
  uint32_t latency_cycles(uint64_t who, uint64_t what, const sc_core::sc_time& when) const;
  // The keys count time from here: a collective's start, so that its
  // latencies do not depend on what ran before it.
  void set_origin(const sc_core::sc_time& t) { origin_ = t; }
  double clock_ghz() const { return clock_ghz_; }

 private:
  static constexpr uint64_t kBase = 0x1000;
  struct Region {
    uint64_t base, size;
    std::unique_ptr<uint8_t[]> bytes;
    uint64_t page = 0;  // paged: bytes is empty and pages hold what exists
    std::vector<std::unique_ptr<uint8_t[]>> pages;
  };
  Region* region_of(uint64_t addr, uint64_t bytes);  // the one holding [addr, addr + bytes), or nullptr
  uint8_t* page_at(Region& r, uint64_t addr, uint64_t bytes);
  std::unique_ptr<uint8_t[]> take_page(uint64_t page);
  void keep_page(std::unique_ptr<uint8_t[]> p, uint64_t page);
  std::vector<Region> regions_;
  // Released pages, zeroed, of spare_page_ bytes: taken again without allocating.
  std::vector<std::unique_ptr<uint8_t[]>> spare_;
  uint64_t spare_page_ = 0;
  uint64_t held_ = 0, peak_held_ = 0;
  void hold(uint64_t bytes) { peak_held_ = std::max(peak_held_, held_ += bytes); }
  uint64_t top_ = kBase;
  double clock_ghz_;
  uint32_t latency_cycles_, jitter_cycles_;
  uint64_t seed_;
  sc_core::sc_time origin_;
};

}  // namespace incsim::gpu
