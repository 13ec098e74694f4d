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

#include "core/param.h"
#include "net/packet.h"
#include "net/port.h"
#include "topology/topology.h"

namespace incsim::platforms {

// Links, read where each platform elaborates them. Bandwidths stay positive
// and finite, latencies far below what simulated time (64-bit ps) holds.
inline const Param<double> kLinkGBps{
    "link.bw_GBps", 25.0, Range::at_least(0.001).at_most(1e5),
    "bandwidth of each link direction, GB/s (dgx2, fattree2l, star, YAML files: 25, Klenk §V, per NVSwitch port; "
    "torus, mesh, fattree, bigraph: 16, MultiTree Table III; a torus or mesh endpoint's link carries its "
    "router's network links together, MultiTree §V-A; rack, spineleaf, multigpu: 12.5, the Ethernet line "
    "rate of 100 Gbit/s, NetReduce §5.1: ConnectX-5 100 GbE, six 100 Gbps FPGA ports)"};
inline const Param<double> kLinkLatency{
    "link.latency_ns", 0.0, Range::at_least(0).at_most(1e9),
    "wire latency of each link, ns (dgx2, fattree2l, star, YAML files: 0, Klenk §V gives none, its 150 ns switch "
    "latency covers the fabric; torus, mesh, fattree, bigraph: 150, MultiTree Table III; rack, spineleaf, "
    "multigpu: 50, an assumption of a few metres of cable in a rack, 5 ns/m; NetReduce gives only the 6.3 us RTT "
    "of Table 6)"};
// link.bw_GBps and link.latency_ns on rack, spineleaf and multigpu (their descriptions say why).
constexpr double kEthernetLinkGBps = 12.5;
constexpr double kEthernetLatencyNs = 50;
inline const Param<double> kLinkLoss{"link.loss", 0.0, Range::at_least(0).below(1),
                                     "probability that a frame is lost on a link, drawn per link and frame from "
                                     "the seed (NetReduce §3.2 reliability; 0: lossless, as on the testbed)"};
inline const Param<double> kLinkCorruption{"link.corruption", 0.0, Range::at_least(0).below(1),
                                           "probability that a frame has a bit flipped on a link; the ICRC check "
                                           "at the FPGA or receiving NIC discards it (NetReduce §3.2)"};

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
