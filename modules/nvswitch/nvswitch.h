#pragma once
// An NVSwitch-like switch (Klenk §V): N ports, input buffers per virtual
// channel, deterministic routing tables, a crossbar with internal speedup into
// output queues per virtual channel, and round-robin arbitration at both the
// crossbar and the output link. A packet is never dropped: a full output
// queue holds it in its input buffer, and a full input buffer withholds the
// upstream credits.
#include <memory>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/trace.h"
#include "net/port.h"

namespace incsim::nvswitch {

struct SwitchConfig {
  sc_core::sc_time latency;    // input to output, first flit (Klenk §V: 150 ns)
  double speedup = 2.0;        // crossbar bandwidth over port bandwidth (Klenk §IV-E1)
  uint32_t in_buffer_bytes = 0;   // per input port and VC
  uint32_t out_queue_bytes = 0;   // per output port and VC
};

class NvSwitch : public sc_core::sc_module, public net::PacketSink, public Traceable {
 public:
  // route[dst endpoint] = output port.
  NvSwitch(sc_core::sc_module_name name, int ports, std::vector<int16_t> route, const SwitchConfig& cfg);

  net::InPort& in(int p) { return *inputs_[p].port; }
  net::OutPort& out(int p) { return outputs_[p]->link; }
  // Port bandwidth and credits come from the link attached, at elaboration.
  void configure_port(int p, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes);

  void receive(int port, net::Packet* p) override;
  void trace(sc_core::sc_trace_file* tf) const override;
  // Appends one line per queue that holds packets; returns how many it holds.
  uint64_t report_held(std::ostream& os) const;

 private:
  struct Input {
    std::unique_ptr<net::InPort> port;
    net::PacketFifo fifo[net::kNumVcs];
    uint32_t bytes[net::kNumVcs] = {};
    sc_core::sc_time xbar_free;
  };
  struct Output {
    explicit Output(const char* n) : link(n) {}
    net::PacketFifo queue[net::kNumVcs];
    uint32_t bytes[net::kNumVcs] = {};
    sc_core::sc_time xbar_free;
    std::vector<uint64_t> requests;  // bit (input * VCs + vc): that head packet wants this output
    double xbar_ps_per_byte = 0;
    unsigned xbar_rr = 0, vc_rr = 0;
    sc_core::sc_event wake;
    net::OutPort link;  // last: its socket is large and rarely touched
  };
  void output_process(int o);
  bool crossbar_move(int o, const sc_core::sc_time& now, sc_core::sc_time& next);
  bool transmit(int o, const sc_core::sc_time& now);
  void wake_at(int o, const sc_core::sc_time& at);
  void request(net::Packet* head, int input);  // head has become the front of its input queue

  std::vector<int16_t> route_;
  SwitchConfig cfg_;
  std::vector<Input> inputs_;
  std::vector<std::unique_ptr<Output>> outputs_;
};

}  // namespace incsim::nvswitch
