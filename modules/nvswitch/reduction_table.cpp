#include "reduction_table.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace incsim::nvswitch {

ReductionTable::ReductionTable(sc_core::sc_module_name name)
    : sc_module(name), alu(this->name()), log(this->name()) {}

void ReductionTable::configure(uint32_t entries, uint32_t entry_bytes) {
  capacity_ = entries;
  entry_bytes_ = entry_bytes;
  if (!entries_.empty()) make_storage();  // made already (traced): it is remade, in place where the size holds
  size_ = occupancy = 0;
  lru_ = mru_ = -1;
  held_.clear();
}

void ReductionTable::make_storage() const {
  entries_.assign(capacity_, Entry{});
  data_.assign(static_cast<size_t>(capacity_) * entry_bytes_, 0);
  size_t buckets = 1;
  while (buckets < 2 * static_cast<size_t>(capacity_)) buckets *= 2;
  index_.assign(capacity_ ? buckets : 0, -1);
  free_.clear();
  for (uint32_t i = capacity_; i > 0; --i) free_.push_back(static_cast<int32_t>(i - 1));
}

size_t ReductionTable::bucket(uint64_t addr, uint32_t owner) const {
  uint64_t x = (addr >> 4) * 0x9E3779B97F4A7C15ull ^ owner * 0xBF58476D1CE4E5B9ull;
  return static_cast<size_t>(x ^ (x >> 29)) & (index_.size() - 1);
}

int ReductionTable::find(uint64_t addr, uint32_t owner) const {
  if (index_.empty()) return -1;
  for (size_t b = bucket(addr, owner);; b = (b + 1) & (index_.size() - 1)) {
    const int32_t i = index_[b];
    if (i < 0) return -1;
    if (entries_[i].addr == addr && entries_[i].owner == owner) return i;
  }
}

int ReductionTable::alloc(uint64_t addr, uint32_t owner, uint16_t expected, uint64_t now_ps, int job) {
  if (entries_.empty() && capacity_) make_storage();
  if (free_.empty() || capped(job)) return -1;
  const int32_t i = free_.back();
  free_.pop_back();
  Entry& e = entries_[i];
  e = Entry{};
  e.addr = addr;
  e.owner = owner;
  e.expected = expected;
  e.touched = now_ps;
  e.job = static_cast<int16_t>(job);
  if (job >= 0) {
    if (held_.size() <= static_cast<size_t>(job)) held_.resize(job + 1);
    ++held_[job];
  }
  size_t b = bucket(addr, owner);
  while (index_[b] >= 0) b = (b + 1) & (index_.size() - 1);
  index_[b] = i;
  link_back(i);
  occupancy = ++size_;
  return i;
}

void ReductionTable::touch(int i, uint64_t now_ps) {
  entries_[i].touched = now_ps;
  unlink(i);
  link_back(i);
}

void ReductionTable::release(int i) {
  // Remove from the index, shifting later members of its probe run back.
  const size_t mask = index_.size() - 1;
  size_t hole = bucket(entries_[i].addr, entries_[i].owner);
  while (index_[hole] != i) hole = (hole + 1) & mask;
  for (size_t b = (hole + 1) & mask; index_[b] >= 0; b = (b + 1) & mask) {
    const size_t home = bucket(entries_[index_[b]].addr, entries_[index_[b]].owner);
    // Move b into the hole unless its home lies cyclically in (hole, b].
    const bool stays = hole <= b ? (home > hole && home <= b) : (home > hole || home <= b);
    if (stays) continue;
    index_[hole] = index_[b];
    hole = b;
  }
  index_[hole] = -1;
  entries_[i].count = 0;  // a free entry holds no contributions (its traced count)
  if (entries_[i].job >= 0) --held_[entries_[i].job];
  unlink(i);
  free_.push_back(i);
  occupancy = --size_;
}

void ReductionTable::unlink(int i) {
  Entry& e = entries_[i];
  if (e.prev >= 0) entries_[e.prev].next = e.next;
  else lru_ = e.next;
  if (e.next >= 0) entries_[e.next].prev = e.prev;
  else mru_ = e.prev;
  e.prev = e.next = -1;
}

void ReductionTable::link_back(int i) {
  Entry& e = entries_[i];
  e.prev = mru_;
  e.next = -1;
  if (mru_ >= 0) entries_[mru_].next = i;
  else lru_ = i;
  mru_ = i;
}

void ReductionTable::trace(sc_core::sc_trace_file* tf) const {
  if (!capacity()) return;
  if (entries_.empty()) make_storage();  // the traced counts need their place
  const std::string me = std::string(name()) + ".";
  sc_core::sc_trace(tf, occupancy, me + "occupancy");
  sc_core::sc_trace(tf, hits, me + "hits");
  sc_core::sc_trace(tf, misses, me + "misses");
  sc_core::sc_trace(tf, evictions, me + "evictions");
  sc_core::sc_trace(tf, stalls, me + "stalls");
  sc_core::sc_trace(tf, completions, me + "completions");
  if (emitted_) sc_core::sc_trace(tf, *emitted_, me + "emitted_bytes");
  // The data a reduction works on: each entry's contributions so far (entries
  // are taken lowest first, so the first few show a busy table's traffic).
  for (size_t i = 0; i < std::min<size_t>(entries_.size(), kTracedEntries); ++i)
    sc_core::sc_trace(tf, entries_[i].count, me + "entry" + std::to_string(i) + "_count");
}

void ReductionTable::report(std::ostream& os) const {
  if (size_)
    os << "  " << name() << ": " << size_ << " of " << capacity() << " entries held, " << stalled.size()
       << " pull requests waiting for one\n";
}

}  // namespace incsim::nvswitch
