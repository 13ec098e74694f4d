#pragma once
// What the driver sees of any elaborated platform, whichever blocks it is made
// of: its link ends (for per-link bytes and utilisation), its packet pool, its
// waveform and its stall report. The GPU fabric (Platform) and NetReduce's
// Ethernet rack (NetReduceRack) are both Machines; the one netlist builder of
// issue 13 will make them one class.
#include <cstdint>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "net/packet.h"
#include "net/port.h"
#include "topology/topology.h"

namespace incsim::platforms {

struct LinkEnd {
  std::string from, to;
  const net::OutPort* port;
};

class Machine {
 public:
  virtual ~Machine() = default;
  virtual const std::vector<LinkEnd>& link_ends() const = 0;
  virtual net::PacketPool& pool() = 0;
  virtual const net::PacketPool& pool() const = 0;
  // A count that grows while the machine does useful work; the stall
  // detector watches it.
  virtual uint64_t progress() const = 0;
  virtual void trace(sc_core::sc_trace_file* tf) const = 0;
  // Writes one line per block that holds packets; returns how many it holds.
  virtual uint64_t report_held(std::ostream& os) const = 0;
  // After a stall: a sentence naming the configuration that explains it, or
  // empty (the stall report then lists the held packets).
  virtual std::string stall_cause() const { return ""; }
  // The topology graph it was elaborated from (--dump-platform), if it has one.
  virtual const topo::Topology* topology_graph() const { return nullptr; }
};

}  // namespace incsim::platforms
