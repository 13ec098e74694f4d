#pragma once
// The connection translation table for multi-rack aggregation (NetReduce
// §3.3, Table 3): a key is a connection that triggers a translation (a child
// connection in aggregation, the parent connection in multicast), each value
// a connection the packet leaves the switch on, with the FPGA port it leaves
// by. Fixed capacity. An sc_module without processes (spine_fpga.ctt, leaf0_fpga.ctt), called
// directly by the FPGA's receive method, with its own VCD scope (occupancy)
// and stall line.
#include <cstdint>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/trace.h"
#include "netreduce/clt.h"

namespace incsim::netreduce {

class ConnectionTranslationTable : public sc_core::sc_module, public Traceable {
 public:
  struct Entry {
    ConnKey from, to;
    int16_t port = -1;
  };
  ConnectionTranslationTable(sc_core::sc_module_name name, uint32_t capacity) : sc_module(name), capacity_(capacity) {
    entries_.reserve(capacity);
  }
  // Adds from -> to unless present; false if the table is full.
  bool add(const ConnKey& from, const ConnKey& to, int16_t port) {
    for (const Entry& e : entries_)
      if (e.from == from && e.to == to) return true;
    if (entries_.size() == capacity_) return false;
    entries_.push_back({from, to, port});
    trace_used_ = static_cast<int>(entries_.size());
    return true;
  }
  template <class F>
  void for_each(const ConnKey& from, F f) const {
    for (const Entry& e : entries_)
      if (e.from == from) f(e);
  }
  uint32_t occupancy() const { return static_cast<uint32_t>(entries_.size()); }
  const int& occupancy_ref() const { return trace_used_; }

  void trace(sc_core::sc_trace_file* tf) const override {
    sc_core::sc_trace(tf, trace_used_, std::string(name()) + ".occupancy");
  }
  void report(std::ostream& os) const {  // one line if it holds translations
    if (!entries_.empty()) os << "  " << name() << ": " << entries_.size() << " of " << capacity_ << " translations\n";
  }

 private:
  std::vector<Entry> entries_;
  uint32_t capacity_ = 0;
  int trace_used_ = 0;
};

}  // namespace incsim::netreduce
