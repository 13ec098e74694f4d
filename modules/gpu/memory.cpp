#include "memory.h"

#include <algorithm>

namespace incsim::gpu {

Memory::Memory(double clock_ghz, uint32_t latency_cycles, uint32_t jitter_cycles, uint64_t seed)
    : clock_ghz_(clock_ghz), latency_cycles_(latency_cycles), jitter_cycles_(jitter_cycles), rng_(seed) {}

uint64_t Memory::alloc(uint64_t bytes) {
  Region r{top_, bytes, std::make_unique<uint8_t[]>(bytes)};
  std::memset(r.bytes.get(), 0, bytes);
  top_ += (bytes + 255) / 256 * 256;
  regions_.push_back(std::move(r));
  return regions_.back().base;
}

void Memory::free(uint64_t addr) {
  const auto r = std::find_if(regions_.begin(), regions_.end(), [addr](const Region& g) { return g.base == addr; });
  sc_assert(r != regions_.end());
  regions_.erase(r);
  top_ = kBase;
  for (const Region& g : regions_) top_ = std::max(top_, g.base + (g.size + 255) / 256 * 256);
}

uint8_t* Memory::at(uint64_t addr, uint64_t bytes) {
  for (auto& r : regions_)
    if (addr >= r.base && addr + bytes <= r.base + r.size) return r.bytes.get() + (addr - r.base);
  SC_REPORT_ERROR("incsim/gpu/memory", "access outside allocated memory");
  return nullptr;
}

uint32_t Memory::latency_cycles_sample() {
  return latency_cycles_ + (jitter_cycles_ ? static_cast<uint32_t>(rng_() % jitter_cycles_) : 0);
}

sc_core::sc_time Memory::latency() {
  return sc_core::sc_time::from_value(
      static_cast<sc_dt::uint64>(latency_cycles_sample() * 1000.0 / clock_ghz_ + 0.5));
}

}  // namespace incsim::gpu
