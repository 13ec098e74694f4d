#pragma once
// What the netlist builder (platforms/machine.h) needs of any hardware block
// a topology node elaborates to, whatever the block is: its ports, to bind
// and configure each link; and its share of the machine's progress, waveform
// and stall report. NvSwitch, Gpu, EthernetSwitch, RoceNic and
// FpgaAggregator are Blocks; so is an architect's own block.
#include <cstdint>
#include <ostream>
#include <systemc>

#include "core/trace.h"
#include "net/port.h"

namespace incsim::eth {
class LinkFaults;
}  // namespace incsim::eth

namespace incsim::net {

class Block : public Traceable {
 public:
  virtual int num_ports() const = 0;
  virtual InPort& in(int port) = 0;
  virtual OutPort& out(int port) = 0;
  // The link at `port` sends at bw_GBps over `latency` of wire into an input
  // buffer of peer_buffer_bytes per VC at its far end (the credits).
  virtual void configure_port(int port, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) = 0;
  // This block's input buffer at `port`, bytes per VC: its peer's credits.
  virtual uint32_t buffer_bytes(int port) const = 0;
  // Bytes of one stream's writes this block sends on as one packet of its
  // own, read from its peer at `port` (a network adapter's MTU at its PCIe
  // port); 0: none. The builder tells the peer (peer_packets).
  virtual uint32_t packet_reads(int /*port*/) const { return 0; }
  // The block at the far end of `port` reads `bytes` of a stream at a time
  // (its packet_reads): a block that interleaves streams there keeps to one
  // until that much of it has crossed.
  virtual void peer_packets(int /*port*/, uint32_t /*bytes*/) {}
  // The faults of the link into `port` if this block models lossy links
  // (Ethernet: loss, corruption, the ICRC); nullptr for a lossless fabric.
  virtual eth::LinkFaults* link_faults(int /*port*/) { return nullptr; }
  // A count that grows while the block does useful work (packets delivered,
  // reductions completed); the stall detector watches the machine's sum.
  virtual uint64_t progress() const { return 0; }
  // One line per queue that holds packets; returns how many it holds.
  virtual uint64_t report_held(std::ostream& os) const = 0;
};

}  // namespace incsim::net
