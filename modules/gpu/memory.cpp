#include "memory.h"

#include <algorithm>

#include "core/hash.h"
#include "core/process.h"

namespace incsim::gpu {

Memory::Memory(double clock_ghz, uint32_t latency_cycles, uint32_t jitter_cycles, uint64_t seed)
    : clock_ghz_(clock_ghz), latency_cycles_(latency_cycles), jitter_cycles_(jitter_cycles), seed_(seed) {}

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

uint32_t Memory::latency_cycles(uint64_t who, uint64_t what, const sc_core::sc_time& when) const {
  if (!jitter_cycles_) return latency_cycles_;
  const uint64_t h = splitmix64(splitmix64(splitmix64(seed_ + who) ^ what) ^ (when.value() - origin_.value()));
  return latency_cycles_ + static_cast<uint32_t>(h % jitter_cycles_);
}

sc_core::sc_time Memory::latency(uint64_t who, uint64_t what, const sc_core::sc_time& when) const {
  return rounded_ps(latency_cycles(who, what, when) * 1000.0 / clock_ghz_);
}

}  // namespace incsim::gpu
