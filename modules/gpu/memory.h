#pragma once
// GPU memory holding real data. Buffers are allocated at the same local
// address on every GPU (a symmetric heap, as NCCL and NVSHMEM arrange), so a
// peer's mailbox is addressed by (peer, local address). Only buffers that
// really exist in hardware are stored; a collective's input is generated from
// (rank, index) and its output is checked as it lands, so memory scales with
// what is in flight, not with message size.
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <systemc>

namespace incsim::gpu {

class Memory {
 public:
  // Static latency plus a random [0, jitter) in cycles (Klenk §V).
  Memory(double clock_ghz, uint32_t latency_cycles, uint32_t jitter_cycles, uint64_t seed);

  uint64_t alloc(uint64_t bytes);  // zeroed, 256 B aligned
  // Frees the buffer alloc returned; the space above the highest buffer
  // left is allocated again (each collective frees what it allocated, so a
  // GPU's programs in flight keep their buffers).
  void free(uint64_t addr);
  uint8_t* at(uint64_t addr, uint64_t bytes);
  uint64_t allocated() const { return top_ - kBase; }

  // One access latency, drawn from this GPU's generator (deterministic per seed).
  sc_core::sc_time latency();
  uint32_t latency_cycles_sample();
  double clock_ghz() const { return clock_ghz_; }

 private:
  static constexpr uint64_t kBase = 0x1000;
  struct Region {
    uint64_t base, size;
    std::unique_ptr<uint8_t[]> bytes;
  };
  std::vector<Region> regions_;
  uint64_t top_ = kBase;
  double clock_ghz_;
  uint32_t latency_cycles_, jitter_cycles_;
  std::mt19937_64 rng_;
};

}  // namespace incsim::gpu
