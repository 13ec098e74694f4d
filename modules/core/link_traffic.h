#pragma once
// Each link's traffic in the waveform: per link end that carried anything,
// the share of its wire its sender kept busy in each interval, percent, as
// a real signal in a scope of its own (links.gpu0_3_to_sw0_1), which the
// save file lists first, one analog row per link. It is a TraceHook: it
// reads every link's byte count after each time step, with no event of its
// own, so watching does not move the run; the VCD gets the signals when it
// closes (merge), each value at its interval's start.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "param.h"
#include "trace_hook.h"

namespace incsim {

inline const Param<double> kLinkTrafficInterval{
    "vcd.link_interval_ns", 1000.0, Range::above(0).at_most(1e9),
    "interval over which the waveform's per-link traffic (the links scope: percent of the wire) is averaged, ns"};

class LinkTraffic : public TraceHook {
 public:
  explicit LinkTraffic(double interval_ns);
  // A link end "gpu0.3" (gpu0's port 3) to "sw0.1" whose wire carries
  // bw_GBps; bytes_sent reads what its sender has put on the wire so far.
  void add_link(const std::string& port, const std::string& to, double bw_GBps, std::function<uint64_t()> bytes_sent);
  // Copies the rest of SystemC's finished VCD, `in` just past its top
  // scope's opening line, to `out` with the links scope and its value
  // changes merged in; returns the last time stamp written, ps.
  uint64_t merge(std::istream& in, std::ostream& out);
  double interval_ns() const { return static_cast<double>(interval_ps_) / 1000.0; }

 protected:
  void cycle(bool delta_cycle) override;

 private:
  struct Link {
    std::string name;
    double wire_bytes = 0;  // what the wire carries in one interval
    std::function<uint64_t()> bytes_sent;
    uint64_t counted = 0;
    std::vector<std::pair<uint64_t, double>> windows;  // (interval, bytes), the intervals with any
  };
  std::vector<Link> links_;
  uint64_t interval_ps_;
};

}  // namespace incsim
