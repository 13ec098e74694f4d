#pragma once
// The NetReduce FPGA accelerator beside the Ethernet switch (§3.1, §4,
// Fig. 3 and Fig. 8): per port a parser (aggregation frames vs others), the
// connection lookup table, a state manager and aggregator array per ring,
// and a combinator that writes the aggregation value into each rank's frame
// under its original header, recomputes the ICRC and sends it back to the
// switch on the port it came in by. Frames are checked (ICRC) when their
// last byte is in; a corrupted one is dropped and the sender's go-back-N
// repairs it.
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/process.h"
#include "core/trace.h"
#include "ethernet/egress.h"
#include "ethernet/roce_frame.h"
#include "netreduce/aggregator_array.h"
#include "netreduce/clt.h"

namespace incsim::netreduce {

struct FpgaConfig {
  double bw_GBps;                 // per port
  sc_core::sc_time link_latency;  // to the switch
  sc_core::sc_time latency;       // pipeline: last byte in to first byte out
  uint32_t buffer_bytes;          // the switch's ingress buffer per port and class
  uint32_t clt_entries;
};

class FpgaAggregator : public sc_core::sc_module, public net::PacketSink, public Traceable {
 public:
  FpgaAggregator(sc_core::sc_module_name name, int ports, const FpgaConfig& cfg, net::PacketPool* pool);
  ~FpgaAggregator() override;

  // Job initialisation (§3.1 ❶): an aggregator array of 2N x MsgLen per ring.
  void add_ring(uint16_t ring, int ranks, uint32_t window, uint32_t msg_len, uint32_t max_payload,
                collectives::DType dtype, collectives::RedOp op);
  void set_faults(int port, const eth::LinkFaults& f) { ports_[port]->faults = f; }

  void receive(int port, net::Packet* p) override;
  void trace(sc_core::sc_trace_file* tf) const override;
  uint64_t report_held(std::ostream& os) const;

  net::InPort& in(int port) { return ports_[port]->in; }
  net::OutPort& out(int port) { return ports_[port]->egress.out; }
  const ConnectionLookupTable& clt() const { return clt_; }
  const AggregatorArray& ring(uint16_t id) const { return *rings_.at(id); }

  struct Counters {
    uint64_t frames = 0, bypassed = 0, icrc_drops = 0, first_lost_drops = 0, no_entry_drops = 0, clt_full_drops = 0,
             lost = 0;
  };
  Counters counters() const;

 private:
  struct Port {
    Port(const std::string& name, FpgaAggregator* owner, int index);
    net::InPort in;
    eth::Egress egress;
    eth::LinkFaults faults;
    net::PacketFifo rxq;
    Wakeup rx_wake;
  };
  void rx(int port);
  void process(net::Packet* p);
  void emit(net::Packet* p);

  FpgaConfig cfg_;
  net::PacketPool* pool_;
  std::vector<std::unique_ptr<Port>> ports_;
  ConnectionLookupTable clt_;
  std::map<uint16_t, std::unique_ptr<AggregatorArray>> rings_;
  std::vector<AggregatorArray*> ring_by_id_;
  std::vector<net::Packet*> out_;
  Counters c_;
};

}  // namespace incsim::netreduce
