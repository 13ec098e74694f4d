#pragma once
// A credit-based switch (Klenk §V): N ports, input buffers per virtual
// channel, routing tables, a crossbar with internal speedup into output
// queues per virtual channel, and round-robin arbitration at both the
// crossbar and the output link. A packet is never dropped: a full output
// queue holds it in its input buffer, and a full input buffer withholds the
// upstream credits. It is MultiTree's torus, mesh and BiGraph routers,
// DGX-1's PCIe switches, CPU sockets and inter-server switch, and the
// switching part of an NVSwitch, of an InfiniBand switch with SHARP and of a
// fat tree's router (nvswitch/nvswitch.h adds multicast and reduction tables).
//
// Ports (sw3.port5) are sc_modules without processes: the switch spawns one
// method per port, which arbitrates its crossbar output and its link.
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/param.h"
#include "core/process.h"
#include "core/trace.h"
#include "net/block.h"
#include "net/port.h"
#include "topology/topology.h"

namespace incsim::credit_switch {

// How a switch spreads packets over the equal-cost ports toward their
// destination (the links of a trunk, several up-links; docs/modern-machines.md).
enum class Spread : uint8_t {
  Destination,  // one port per destination, d mod count (the papers' deterministic tables)
  Rotate,       // per packet, the next port in turn (per destination)
  Adaptive,     // per packet, the port with the fewest bytes queued or claimed
  Flow,         // per flow, a hash of source, destination and stream (ECMP)
};
// Spread by name (destination, rotate, adaptive, flow); UserError naming
// the key it came from and the choices otherwise.
Spread parse_spread(const std::string& name, const std::string& key = "switch.spread");

// How a switch chooses the VC a packet takes on its next link (docs/platforms.md,
// "Virtual channels and deadlock freedom").
enum class VcAlloc : uint8_t {
  Class,   // the class's first VC, its second where the hop's rule says (VCs 0-3)
  Packet,  // per packet, the freest of the VCs its class and the hop's rule allow (VCs 0-7, BookSim's VC allocation)
};
// VcAlloc by name (class, packet); UserError naming the key otherwise.
VcAlloc parse_vc_alloc(const std::string& name, const std::string& key = "switch.vc_alloc");

struct SwitchConfig {
  sc_core::sc_time latency;    // input to output, first flit (Klenk §V: 150 ns)
  double speedup = 0;          // crossbar bandwidth over port bandwidth; 0: ports (output-queued, Klenk §V)
  uint32_t in_buffer_bytes = 0;   // per input port and VC
  uint32_t out_queue_bytes = 0;   // per output port and VC
  Spread spread = Spread::Destination;
  VcAlloc vc_alloc = VcAlloc::Class;
  // Some hop of the network moves packets to a class's second VC (a torus
  // dateline, BiGraph's second switch hop): per-packet allocation then keeps
  // a packet within its set, the rule's VC and that VC | kExtraVcBit;
  // otherwise any of its class's four will do.
  bool vc_sets = false;
};

// Its parameters. Latencies stay far below what simulated time (64-bit ps) holds.
inline const Param<double> kSwitchLatency{
    "switch.latency_ns", 150.0, Range::at_least(0).at_most(1e9),
    "switch or router latency, first flit in to first flit out, ns (dgx2, fattree2l, star, YAML files: 150, "
    "Klenk §V; hgx-h100, nvl72: 150, Klenk's, as NVSwitch3's and the NVLink Switch chip's are not public; torus, mesh, fattree, bigraph: 4, MultiTree Table III's 1 GHz routers, which the paper models in "
    "BookSim without giving a pipeline depth, times BookSim's default 4 one-cycle stages: routing, VC "
    "allocation, switch allocation, switch traversal; rack, spineleaf, multigpu: 400, Ethernet cut-through, an "
    "assumption for a commodity 100 GbE switch, 300-600 ns)"};
inline const Param<std::string> kSwitchSpread{
    "switch.spread", "destination", Range::none(),
    "how a switch spreads packets over equal-cost ports (a trunk's links, several up-links): destination, one "
    "port per destination (the papers' tables; default on their platforms); rotate, per packet in turn; "
    "adaptive, per packet to the port with the least queued (InfiniBand adaptive routing, NVIDIA Quantum; "
    "default on hgx-h100 and nvl72); flow, per flow by a hash of source, destination and stream (ECMP, RFC 2992). Pull "
    "responses stay on their request's tree: at their last hop the trunk link is chosen by block address"};
inline const Param<std::string> kSwitchVcAlloc{
    "switch.vc_alloc", "class", Range::none(),
    "how a switch picks the VC of a packet's next hop: class, each message class on its first VC and its second only where a route needs it (a torus dateline, BiGraph's second switch hop; Dally and Towles ch. 14); "
    "packet, per packet the VC with the most room at the next hop among its class's four (two per set where a dateline or BiGraph rule splits them), GPUs injecting alike, as MultiTree Table III's BookSim routers (4 VCs of 318 flits per input) allocate one to each packet; the MultiTree figures use it"};
inline const Param<double> kSwitchSpeedup{
    "switch.speedup", 0.0, Range::at_least(1).at_most(1024).or_zero(),
    "crossbar bandwidth of an input and of an output over port bandwidth; 0: the switch's port count, an "
    "output-queued switch (Klenk §V; §IV-E1 asks at least 2 of a real crossbar)"};
// Far above any round trip; keeps credits in range.
inline const Param<uint32_t> kSwitchInBuffer{
    "switch.in_buffer_bytes", 0, Range::at_least(0).at_most(16 << 20),
    "input buffer per port and VC, bytes; 0 sizes it to cover the credit round trip (Klenk §V)"};
inline const Param<uint32_t> kSwitchOutQueue{
    "switch.out_queue_bytes", 0, Range::at_least(0).at_most(16 << 20),
    "output queue per port and VC, bytes; 0 sizes it to cover the round trip (Klenk §V)"};

// Where a switch sits: its routing tables and what each port faces.
struct SwitchWiring {
  int index = 0;                        // switch number (Topology::switches())
  std::vector<int16_t> route;           // [dst endpoint] -> output port
  // [dst endpoint] -> the equal-cost output ports toward it (Topology::routes),
  // from routes_first[d] up to routes_first[d + 1].
  std::vector<uint32_t> routes_first;
  std::vector<int16_t> routes;
  // [switch number] -> the equal-cost output ports toward it, from
  // route_to_switch_first[k] up to route_to_switch_first[k + 1].
  std::vector<uint32_t> route_to_switch_first;
  std::vector<int16_t> route_to_switch;
  std::vector<int32_t> port_endpoint;   // [port] -> endpoint attached, -1 for a switch
  // [input port * ports + output port] -> how a packet's VC changes on that
  // hop (topo::Topology::vc_rule); empty: every packet keeps its VC.
  std::vector<topo::VcRule> vc_rule;
};
class CreditSwitch : public sc_core::sc_module, public net::PacketSink, public net::Block {
 public:
  CreditSwitch(sc_core::sc_module_name name, int ports, SwitchWiring wiring, const SwitchConfig& cfg,
               net::PacketPool& pool);

  int num_ports() const override { return ports_; }
  net::InPort& in(int p) override { return outputs_[p]->in; }
  net::OutPort& out(int p) override { return outputs_[p]->link; }
  // Port bandwidth and credits come from the link attached, at elaboration.
  void configure_port(int p, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) override;
  uint32_t buffer_bytes(int p) const override { return inputs_[p].capacity; }
  // Port p's input buffer and output queue per VC, bytes, when they differ
  // from SwitchConfig's (each covers its own link's round trip).
  void size_port(int p, uint32_t in_buffer_bytes, uint32_t out_queue_bytes);

  void receive(int port, net::Packet* p) override;
  void trace(sc_core::sc_trace_file* tf) const override;
  // Its arbiters as elaboration left them (the turn over a trunk's links,
  // each output's crossbar and VC round-robin), for a collective on an idle
  // machine to start as the first did.
  void rewind_arbiters();
  uint64_t report_held(std::ostream& os) const override;

 protected:
  static constexpr int16_t kMulticast = -2;  // out_port of a packet the subclass replicates (replicate())
  static constexpr int16_t kSpread = -3;     // out_port of a packet whose port is chosen once it is a head
  // A port (sw3.port5): its link ends, its output queues and their arbiter
  // state. An sc_module without processes (the switch spawns the port's
  // method). Its input buffer stays in the switch's input array, which the
  // crossbar arbiter scans by index.
  struct Port : sc_core::sc_module, Traceable {
    Port(sc_core::sc_module_name name, CreditSwitch* sw, int index);
    // Output queues and link credits, under this port's scope.
    void trace(sc_core::sc_trace_file* tf) const override;
    // A line per output queue that holds packets; returns the packets.
    virtual uint64_t report_held(std::ostream& os) const;
    // What feeds its injector, in the stall report.
    virtual const char* injector_name() const { return name(); }
    net::PacketFifo queue[net::kNumVcs];
    uint32_t bytes[net::kNumVcs] = {};
    uint32_t limit = 0;  // queue bytes per VC
    int vcs = net::kClassVcs;  // VCs it traces: all kNumVcs under per-packet allocation
    uint32_t queued = 0;  // packets in all VCs' queues
    uint32_t claimed = 0;  // bytes of input heads that have chosen this output and not crossed yet
    sc_core::sc_time xbar_free;
    std::vector<uint64_t> requests;  // bit (input * VCs + vc): that head packet wants this output
    double xbar_ps_per_byte = 0;
    unsigned xbar_rr = 0, vc_rr = 0;
    // Nonzero while the port's own hardware holds something that times out (tick()).
    const uint32_t* timers = nullptr;
    Wakeup wake;
    net::InPort in;     // sw3.port5.in
    net::OutPort link;  // sw3.port5.out; last: its socket is large and rarely touched
  };
  // A subclass gives its ports more (a reduction table) through make_port,
  // and gets `injectors` more crossbar inputs, ports + k, through which a
  // port's own hardware feeds packets it makes (inject()).
  using PortMaker = std::function<std::unique_ptr<Port>(sc_core::sc_module_name, CreditSwitch*, int)>;
  CreditSwitch(sc_core::sc_module_name name, int ports, SwitchWiring wiring, const SwitchConfig& cfg,
               net::PacketPool& pool, int injectors, const PortMaker& make_port);

  // What a subclass with in-network hardware does; a plain switch has none,
  // and a packet that needs it is an error of the platform (the workload
  // refuses in-network algorithms where switches lack it).
  // A multicast head at `input` (out_port kMulticast): request its outputs (request_output).
  virtual void replicate(net::Packet* head, int input);
  // The port a reducing write homed at another switch leaves by, and
  // whether this switch reduces it on the way (Packet::merge); by default
  // the equal-cost links toward the home, spread by home port and source.
  virtual int16_t reduce_route(net::Packet* p, int input);
  // Whether output o may take the reducing write h homed at its port now.
  virtual bool can_absorb(int o, const net::Packet* h);
  // The reducing write p homed at output o's port has crossed.
  virtual void absorb(int o, net::Packet* p, const sc_core::sc_time& now);
  // A pull response crossing to output o: what goes on to the link (null: nothing).
  virtual net::Packet* pass_response(int o, net::Packet* p) { (void)o; return p; }
  // The port a pull response leaves by where the switch spreads packets.
  virtual int response_port(const net::Packet* p) { return spread(p, p->dst); }
  // Output o's method ran at `now` with nothing more to move while its
  // port's timers count something; `next` learns when it should run again.
  virtual void tick(int o, const sc_core::sc_time& now, sc_core::sc_time& next);

  void request(net::Packet* head, int input);  // head has become the front of its input queue
  // Output o wants the head of (input, vc), ready from `ready`.
  void request_output(int o, int input, int vc, const sc_core::sc_time& ready) {
    const unsigned bit = static_cast<unsigned>(input) * net::kNumVcs + vc;
    Port& out = *outputs_[o];
    out.requests[bit / 64] |= 1ull << (bit % 64);
    out.wake.at(ready);
  }
  void enqueue(int input, net::Packet* p);
  net::Packet* pop_head(int input, int vc, const sc_core::sc_time& now);
  // Feeds p into the crossbar through output o's injector at `now` (fresh: the port's hardware made it).
  void inject(int o, net::Packet* p, const sc_core::sc_time& now, bool fresh);
  // Of the equal-cost ports toward switch sw, the one `key` picks (key mod their count).
  int16_t toward_switch(int sw, uint32_t key) const;
  // Among the equal-cost ports toward endpoint dst, the one p takes (cfg_.spread).
  int spread(const net::Packet* p, uint32_t dst);
  const sc_core::sc_time& head_ready(int input) const { return inputs_[input].xbar_free; }
  uint32_t& injector_bytes(int o, int vc) { return inputs_[ports_ + o].bytes[vc]; }
  const net::PacketFifo& injector_queue(int o, int vc) const { return inputs_[ports_ + o].fifo[vc]; }
  const net::PacketFifo& input_queue(int input, int vc) const { return inputs_[input].fifo[vc]; }
  Port& port(int o) const { return *outputs_[o]; }

  SwitchWiring wiring_;
  SwitchConfig cfg_;
  net::PacketPool& pool_;
  const int ports_;

 private:
  // Inputs [0, ports) are the links; ports + k the injectors.
  struct Input {
    net::InPort* port = nullptr;  // its port's; null for an injector
    net::PacketFifo fifo[net::kNumVcs];
    uint32_t bytes[net::kNumVcs] = {};
    bool mc_started[net::kNumVcs] = {};  // the head multicast has sent a copy
    uint32_t capacity = 0;               // bytes per VC (the upstream's credits)
    sc_core::sc_time xbar_free;
  };
  void output_process(int o);
  bool crossbar_move(int o, const sc_core::sc_time& now, sc_core::sc_time& next);
  bool transmit(int o, const sc_core::sc_time& now);
  // The VC a packet that came on (input, vc) takes out of port o; what an
  // injector feeds enters on its class's first VC.
  int out_vc(int input, int o, int vc) const {
    if (wiring_.vc_rule.empty()) return vc;
    if (input >= ports_) return net::class_first_vc(vc);
    switch (wiring_.vc_rule[static_cast<size_t>(input) * ports_ + o]) {
      case topo::VcRule::First: return net::class_first_vc(vc);
      case topo::VcRule::Second: return net::class_second_vc(vc);
      default: return vc;
    }
  }
  // Per-packet allocation: of the VCs a packet whose hop's rule gives `rule_vc`
  // may take at output o, the one with the most bytes free at the next hop
  // (its credits less what is queued for it here) that has room in o's queue
  // for `bytes`, the lowest on a tie; -1 if none has room.
  int allocate_vc(int o, int rule_vc, uint32_t bytes) const;
  net::Packet* clone(const net::Packet* p);
  // What reaches output o: queued for the link, or taken by its port's hardware.
  void deliver(int o, net::Packet* p, int vc, bool absorbed, const sc_core::sc_time& now);

  std::vector<Input> inputs_;
  std::vector<std::unique_ptr<Port>> outputs_;
  std::vector<uint32_t> turn_;  // [dst endpoint]: the rotation's next port, and the adaptive choice's first
};

}  // namespace incsim::credit_switch
