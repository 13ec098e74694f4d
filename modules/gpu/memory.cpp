#include "memory.h"

#include <algorithm>

#include "core/hash.h"
#include "core/process.h"

namespace incsim::gpu {

Memory::Memory(double clock_ghz, uint32_t latency_cycles, uint32_t jitter_cycles, uint64_t seed)
    : clock_ghz_(clock_ghz), latency_cycles_(latency_cycles), jitter_cycles_(jitter_cycles), seed_(seed) {}

uint64_t Memory::alloc(uint64_t bytes) {
  Region r{top_, bytes, std::make_unique<uint8_t[]>(bytes), 0, {}};  // value-initialised: zeroed
  hold(bytes);
  top_ += (bytes + 255) / 256 * 256;
  regions_.push_back(std::move(r));
  return regions_.back().base;
}

uint64_t Memory::alloc_paged(uint64_t bytes, uint64_t page) {
  sc_assert(page > 0);
  Region r{top_, bytes, nullptr, page, {}};
  r.pages.resize((bytes + page - 1) / page);
  top_ += (bytes + 255) / 256 * 256;
  regions_.push_back(std::move(r));
  return regions_.back().base;
}

std::unique_ptr<uint8_t[]> Memory::take_page(uint64_t page) {
  hold(page);
  if (page == spare_page_ && !spare_.empty()) {
    std::unique_ptr<uint8_t[]> p = std::move(spare_.back());
    spare_.pop_back();
    return p;
  }
  return std::make_unique<uint8_t[]>(page);  // value-initialised: zeroed
}

void Memory::keep_page(std::unique_ptr<uint8_t[]> p, uint64_t page) {
  held_ -= page;
  if (page != spare_page_) {
    spare_.clear();
    spare_page_ = page;
  }
  std::memset(p.get(), 0, page);
  spare_.push_back(std::move(p));
}

uint8_t* Memory::page_at(Region& r, uint64_t addr, uint64_t bytes) {
  const uint64_t k = (addr - r.base) / r.page;
  sc_assert(bytes == 0 || (addr - r.base + bytes - 1) / r.page == k);
  if (!r.pages[k]) r.pages[k] = take_page(r.page);
  return r.pages[k].get() + (addr - r.base - k * r.page);
}

Memory::Region* Memory::region_of(uint64_t addr, uint64_t bytes) {
  for (Region& r : regions_)
    if (addr >= r.base && addr + bytes <= r.base + r.size) return &r;
  return nullptr;
}

void Memory::release(uint64_t addr) {
  Region* r = region_of(addr, 1);
  sc_assert(r && r->page && "release outside a paged buffer");
  const uint64_t k = (addr - r->base) / r->page;
  if (r->pages[k]) keep_page(std::move(r->pages[k]), r->page);
}

void Memory::free(uint64_t addr) {
  const auto r = std::find_if(regions_.begin(), regions_.end(), [addr](const Region& g) { return g.base == addr; });
  sc_assert(r != regions_.end());
  for (auto& p : r->pages)
    if (p) keep_page(std::move(p), r->page);
  if (!r->page) held_ -= r->size;
  regions_.erase(r);
  top_ = kBase;
  for (const Region& g : regions_) top_ = std::max(top_, g.base + (g.size + 255) / 256 * 256);
}

uint8_t* Memory::at(uint64_t addr, uint64_t bytes) {
  if (Region* r = region_of(addr, bytes)) return r->page ? page_at(*r, addr, bytes) : r->bytes.get() + (addr - r->base);
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
