#pragma once
// A switch port's reduction table (Klenk §IV-D, Fig. 5): entries tagged by
// address (and, for pull, the requester), each holding a partial result, the
// count of contributions in it and the count expected; fully associative,
// with an LRU order that is also the timeout order (an entry's deadline is
// its last update plus the timeout).
//
// An sc_module without processes, the child of its switch port
// (sw3.port5.reduction_table): the port's output method calls it directly,
// so a lookup costs no activation and no event. It holds the entries, its
// ALU array (fault.alu.block names it) and its logger (--log), traces its
// counters under its own VCD scope and tells the stall detector the entries
// it holds. The switch does the timing.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "elements/alu.h"
#include "core/log.h"
#include "core/param.h"
#include "core/trace.h"
#include "table_sharing.h"

namespace incsim::nvswitch {

// Its parameters, for every port's table; a switch's or a port's own key
// overrides the size (sw3.reduction_table.bytes, sw3.port5.reduction_table.bytes).
// Its default is the run's algorithm's (collectives::Needs): Klenk's tables
// on his platforms, C_min of his Eq. (2) or (1) elsewhere.
inline const Param<uint32_t> kTableBytes{
    "switch.reduction_table.bytes", 0, Range::at_least(0).at_most(16 << 20).or_auto(),
    "reduction table per switch port, bytes, one 128 B entry per block in reduction (Klenk Fig. 7: push 256, "
    "pull 4096 on DGX-2; Fig. 8: push 256, pull 1024 on the fat tree); auto: Klenk's C_min in whole entries, by "
    "Eq. (2) for push, Eq. (1) for pull and nvls (the run's header prints it), and for push at least its waves "
    "over every port (Klenk §IV-F1: no more in flight than the tables hold); 0: none",
    "push 256 on dgx2, star and fattree2l, elsewhere auto; pull and nvls 4096, 1024 on fattree2l; "
    "other algorithms none (not read)"};
// switch.reduction_table.bytes=auto, as Config reads it.
constexpr uint32_t kTableAuto = std::numeric_limits<uint32_t>::max();
inline const Param<double> kTableTimeout{
    "switch.reduction_table.timeout_ns", 0.0, Range::at_least(0).at_most(1e9),
    "a push entry not updated for this long goes to its home GPU as a partial; 0: the lifetime Little's law "
    "gives the tables configured, switch.reduction_table.bytes x switch ports / B_in (Klenk's Eq. (2) read "
    "backwards), at least d_max x L_hop, the lifetime Eq. (2) assumes (Klenk §IV-C names the timeout, not its "
    "value)"};
inline const Param<std::string> kTableEviction{
    "switch.reduction_table.eviction", "lru", Range::none(),
    "lru: a push miss on a full table evicts the least recently used entry (Klenk §IV-C); timeout: "
    "entries leave only when complete or timed out, and the missing packet goes on to its home GPU; or a "
    "policy an sc_main registered (nvswitch/eviction.h)"};

class ReductionTable : public sc_core::sc_module, public Traceable {
 public:
  struct Entry {
    uint64_t addr = 0;
    uint32_t owner = 0;      // the pull requester; ~0 for push (any source)
    uint16_t count = 0;      // contributions reduced so far
    uint16_t expected = 0;   // contributions that complete it (from the MCR table)
    uint16_t bytes = 0;      // payload held
    uint8_t dtype = 0, redop = 0;
    int16_t job = -1;        // whose collective's window its address lies in (TableSharing), -1: none
    uint64_t touched = 0;    // time of the last update, ps
    int32_t prev = -1, next = -1;  // LRU list: head is the least recently used
  };

  explicit ReductionTable(sc_core::sc_module_name name);

  // entries of entry_bytes each; 0 entries is a port without a table. Its
  // storage is made at its first entry (or when traced): most of a
  // cluster's switch ports never hold one (the tables of 64 nodes' InfiniBand
  // switches took 0.57 GB).
  void configure(uint32_t entries, uint32_t entry_bytes);
  uint32_t capacity() const { return capacity_; }
  uint32_t size() const { return size_; }
  bool full() const { return size_ == capacity(); }

  int find(uint64_t addr, uint32_t owner) const;  // -1 on a miss
  // A free entry for (addr, owner) of `job`, empty, most recently used; -1
  // when full or when the job holds its limit (capped).
  int alloc(uint64_t addr, uint32_t owner, uint16_t expected, uint64_t now_ps, int job = -1);
  // The jobs' sharing policy (table_sharing.h), common to the machine's tables; none: shared.
  void share(const TableSharing* s) { sharing_ = s; }
  // Whether `job` holds all the entries its share allows here.
  bool capped(int job) const { return sharing_ && job >= 0 && held(job) >= sharing_->limit(job, capacity()); }
  bool room(int job) const { return !full() && !capped(job); }
  uint32_t held(int job) const { return job >= 0 && job < static_cast<int>(held_.size()) ? held_[job] : 0; }
  void touch(int i, uint64_t now_ps);  // moves it to the most recently used end
  void release(int i);
  int lru() const { return lru_; }  // -1 when empty
  Entry& entry(int i) { return entries_[i]; }
  const Entry& entry(int i) const { return entries_[i]; }
  uint8_t* data(int i) { return data_.data() + static_cast<size_t>(i) * entry_bytes_; }

  // The bytes its results and partials occupy in the switch input that
  // feeds them back into the crossbar, traced as emitted_bytes.
  void watch_emitted(const uint32_t* bytes) { emitted_ = bytes; }
  // Occupancy, counters and the first kTracedEntries entries' contribution
  // counts under this module's scope; nothing for a port without a table.
  static constexpr size_t kTracedEntries = 8;
  void trace(sc_core::sc_trace_file* tf) const override;
  // One line if it holds entries.
  void report(std::ostream& os) const;

  elements::Alu alu;   // the table's ALU array
  log::Logger log;        // its name: sw3.port5.reduction_table
  uint32_t push_entries = 0;  // entries that can time out
  std::vector<int> stalled;   // switch inputs whose pull request waits for an entry here

  // Statistics, traced: uint32 so that VCD shows them as counters.
  uint32_t occupancy = 0, hits = 0, misses = 0, evictions = 0, stalls = 0, completions = 0;
  uint32_t timeouts = 0;  // evictions of entries idle for the timeout, not for a new entry's room

 private:
  size_t bucket(uint64_t addr, uint32_t owner) const;
  void unlink(int i);
  void link_back(int i);
  void make_storage() const;  // entries_, data_, index_ and free_ for capacity_ entries
  // Made by make_storage, which a const trace() may call: mutable.
  mutable std::vector<Entry> entries_;
  mutable std::vector<uint8_t> data_;
  mutable std::vector<int32_t> index_;  // open addressing over entries, -1 empty
  mutable std::vector<int32_t> free_;
  uint32_t capacity_ = 0, entry_bytes_ = 0, size_ = 0;
  int32_t lru_ = -1, mru_ = -1;
  const uint32_t* emitted_ = nullptr;
  const TableSharing* sharing_ = nullptr;
  std::vector<uint32_t> held_;  // [job]: entries it holds
};

}  // namespace incsim::nvswitch
