#pragma once
// A switch port's reduction table (Klenk §IV-D, Fig. 5): entries tagged by
// address (and, for pull, the requester), each holding a partial result, the
// count of contributions in it and the count expected; fully associative,
// with an LRU order that is also the timeout order (an entry's deadline is
// its last update plus the timeout). Plain C++: the switch does the timing.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace incsim::nvswitch {

class ReductionTable {
 public:
  struct Entry {
    uint64_t addr = 0;
    uint32_t owner = 0;      // the pull requester; ~0 for push (any source)
    uint16_t count = 0;      // contributions reduced so far
    uint16_t expected = 0;   // contributions that complete it (from the MCR table)
    uint16_t bytes = 0;      // payload held
    uint8_t dtype = 0, redop = 0;
    uint64_t touched = 0;    // time of the last update, ps
    int32_t prev = -1, next = -1;  // LRU list: head is the least recently used
  };

  // entries of entry_bytes each; 0 entries is a port without a table.
  void configure(uint32_t entries, uint32_t entry_bytes);
  uint32_t capacity() const { return static_cast<uint32_t>(entries_.size()); }
  uint32_t size() const { return size_; }
  bool full() const { return size_ == capacity(); }

  int find(uint64_t addr, uint32_t owner) const;  // -1 on a miss
  // A free entry for (addr, owner), empty, most recently used; -1 when full.
  int alloc(uint64_t addr, uint32_t owner, uint16_t expected, uint64_t now_ps);
  void touch(int i, uint64_t now_ps);  // moves it to the most recently used end
  void release(int i);
  int lru() const { return lru_; }  // -1 when empty
  Entry& entry(int i) { return entries_[i]; }
  const Entry& entry(int i) const { return entries_[i]; }
  uint8_t* data(int i) { return data_.data() + static_cast<size_t>(i) * entry_bytes_; }

  // Statistics, traced: uint32 so that VCD shows them as counters.
  uint32_t occupancy = 0, hits = 0, misses = 0, evictions = 0, stalls = 0, completions = 0;

 private:
  size_t bucket(uint64_t addr, uint32_t owner) const;
  void unlink(int i);
  void link_back(int i);
  std::vector<Entry> entries_;
  std::vector<uint8_t> data_;
  std::vector<int32_t> index_;  // open addressing over entries, -1 empty
  std::vector<int32_t> free_;
  uint32_t entry_bytes_ = 0, size_ = 0;
  int32_t lru_ = -1, mru_ = -1;
};

}  // namespace incsim::nvswitch
