#pragma once
// An NVSwitch-like switch (Klenk §V): N ports, input buffers per virtual
// channel, deterministic routing tables, a crossbar with internal speedup into
// output queues per virtual channel, and round-robin arbitration at both the
// crossbar and the output link. A packet is never dropped: a full output
// queue holds it in its input buffer, and a full input buffer withholds the
// upstream credits.
//
// In-network collectives (Klenk §IV): the MCR table (sw3.mcr_table, this
// switch's entries of the fabric manager's MulticastFabric) gives the outputs
// a multicast is replicated to; a multicast advances to the outputs that can
// take it and takes the rest in later rounds. Each port (sw3.port5) has a
// reduction table at its output (sw3.port5.reduction_table, Fig. 5): push
// writes homed at the port are reduced there and the result multicast back
// into the crossbar; pull responses are reduced on their way to the
// requester. Ports and tables are sc_modules without processes: the switch
// spawns one method per port, which calls them directly.
#include <cstring>
#include <memory>
#include <string>

#include "collectives/alu.h"
#include "core/log.h"
#include "core/param.h"
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/process.h"
#include "core/trace.h"
#include "net/block.h"
#include "net/port.h"
#include "nvswitch/mcr_table.h"
#include "nvswitch/reduction_table.h"
#include "eviction.h"
#include "topology/multicast.h"

namespace incsim::nvswitch {

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

struct SwitchConfig {
  sc_core::sc_time latency;    // input to output, first flit (Klenk §V: 150 ns)
  double speedup = 0;          // crossbar bandwidth over port bandwidth; 0: ports (output-queued, Klenk §V)
  uint32_t in_buffer_bytes = 0;   // per input port and VC
  uint32_t out_queue_bytes = 0;   // per output port and VC
  // Reduction tables (Klenk §IV-D).
  uint32_t table_bytes = 0;       // per port; 0: none
  uint32_t entry_bytes = 128;     // one aligned packet payload per entry (Klenk §IV-D)
  sc_core::sc_time table_timeout; // an idle push entry is evicted to its home GPU
  // Whom a push miss on a full table evicts (eviction.h); shared by the platform's switches.
  std::shared_ptr<EvictionPolicy> eviction;
  Spread spread = Spread::Destination;
  // SHARP's aggregation tables (an InfiniBand switch): a push that finds its
  // port's table full waits at its input for an entry, entries neither
  // time out nor are evicted, and no partial sum ever leaves; the hosts'
  // credits keep the tables from filling (CoresParams::push_credits).
  bool holds = false;
  // ps a port's table ALU takes per byte it adds; 0: it keeps up with its
  // port and adds no time (Klenk's tables).
  double alu_ps_per_byte = 0;
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
class NvSwitch : public sc_core::sc_module, public net::PacketSink, public net::Block {
 public:
  // fabric may be null: a platform without multicast regions.
  NvSwitch(sc_core::sc_module_name name, int ports, SwitchWiring wiring, const SwitchConfig& cfg,
           net::PacketPool& pool, const topo::MulticastFabric* fabric);

  int num_ports() const override { return ports_; }
  net::InPort& in(int p) override { return outputs_[p]->in; }
  net::OutPort& out(int p) override { return outputs_[p]->link; }
  // Port bandwidth and credits come from the link attached, at elaboration.
  void configure_port(int p, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) override;
  uint32_t buffer_bytes(int p) const override { return inputs_[p].capacity; }
  // Reductions its ports' tables completed.
  uint64_t progress() const override;
  // Port p's input buffer and output queue per VC, bytes, when they differ
  // from SwitchConfig's (each covers its own link's round trip).
  void size_port(int p, uint32_t in_buffer_bytes, uint32_t out_queue_bytes);
  // A port whose reduction table differs from the switch's (a per-instance parameter).
  void set_table_bytes(int p, uint32_t bytes);

  void receive(int port, net::Packet* p) override;
  void trace(sc_core::sc_trace_file* tf) const override;
  uint64_t report_held(std::ostream& os) const override;
  const ReductionTable& table(int p) const { return outputs_[p]->table; }

 private:
  static constexpr int16_t kMulticast = -2;  // out_port of a packet the MCR table replicates
  static constexpr int16_t kSpread = -3;     // out_port of a packet whose port is chosen once it is a head
  // Inputs [0, ports) are the links; input ports + p carries what port p's
  // reduction table emits (results, partials) back into the crossbar.
  struct Input {
    net::InPort* port = nullptr;  // its port's; null for a reduction table's input
    net::PacketFifo fifo[net::kNumVcs];
    uint32_t bytes[net::kNumVcs] = {};
    bool mc_started[net::kNumVcs] = {};  // the head multicast has sent a copy
    uint32_t capacity = 0;               // bytes per VC (the upstream's credits)
    sc_core::sc_time xbar_free;
  };
  // A port (sw3.port5): its link ends, its output queues and their arbiter
  // state, and its reduction table. An sc_module without processes (the
  // switch spawns the port's method). Its input buffer stays in the
  // switch's input array, which the crossbar arbiter scans by index.
  struct Port : sc_core::sc_module, Traceable {
    Port(sc_core::sc_module_name name, NvSwitch* sw, int index);
    // Output queues, link credits and the table, under this port's scope.
    void trace(sc_core::sc_trace_file* tf) const override;
    // A line per output queue that holds packets, and the table's; returns the packets.
    uint64_t report_held(std::ostream& os) const;
    net::PacketFifo queue[net::kNumVcs];
    uint32_t bytes[net::kNumVcs] = {};
    uint32_t limit = 0;  // queue bytes per VC
    uint32_t queued = 0;  // packets in all VCs' queues
    uint32_t claimed = 0;  // bytes of input heads that have chosen this output and not crossed yet
    sc_core::sc_time xbar_free;
    sc_core::sc_time alu_free;  // its table's ALU is busy until then (SwitchConfig::alu_ps_per_byte)
    std::vector<uint64_t> requests;  // bit (input * VCs + vc): that head packet wants this output
    double xbar_ps_per_byte = 0;
    unsigned xbar_rr = 0, vc_rr = 0;
    ReductionTable table;        // sw3.port5.reduction_table
    Wakeup wake;
    net::InPort in;     // sw3.port5.in
    net::OutPort link;  // sw3.port5.out; last: its socket is large and rarely touched
  };
  void output_process(int o);
  bool crossbar_move(int o, const sc_core::sc_time& now, sc_core::sc_time& next);
  bool transmit(int o, const sc_core::sc_time& now);
  void wake_at(int o, const sc_core::sc_time& at);
  void request(net::Packet* head, int input);  // head has become the front of its input queue
  void multicast_request(net::Packet* head, int input);
  void enqueue(int input, net::Packet* p);
  net::Packet* pop_head(int input, int vc, const sc_core::sc_time& now);
  // The VC a packet that came on (input, vc) takes out of port o; what a
  // reduction table emits enters on its class's first VC.
  int out_vc(int input, int o, int vc) const {
    if (wiring_.vc_rule.empty()) return vc;
    if (input >= ports_) return net::class_first_vc(vc);
    switch (wiring_.vc_rule[static_cast<size_t>(input) * ports_ + o]) {
      case topo::VcRule::First: return net::class_first_vc(vc);
      case topo::VcRule::Second: return net::class_second_vc(vc);
      default: return vc;
    }
  }
  // Among the equal-cost ports toward endpoint dst, the one p takes (cfg_.spread).
  int spread(const net::Packet* p, uint32_t dst);
  // The port a pull response for requester `src` leaves by, where its
  // request took a table entry: its route, except that over the last hop's
  // trunk the block address picks the link, so that request and responses agree.
  int pull_port(uint32_t src, uint64_t addr) const;
  net::Packet* clone(const net::Packet* p);
  // What reaches output o: queued for the link, or taken by its reduction table.
  void deliver(int o, net::Packet* p, int vc, const sc_core::sc_time& now);
  void push_reduce(int o, net::Packet* p, const sc_core::sc_time& now);
  net::Packet* pull_reduce(int o, net::Packet* p);
  // Port o's table emits entry e: a completed push result (multicast) or a
  // partial for the home GPU.
  void emit(int o, int e, bool complete, const sc_core::sc_time& now, bool retry = true);
  // Feeds p into the crossbar from port o's table at `now` (fresh: the table made it).
  void inject(int o, net::Packet* p, const sc_core::sc_time& now, bool fresh);
  void expire(int o, const sc_core::sc_time& now, sc_core::sc_time& next);
  void release_entry(int o, int e, bool retry);
  void retry_stalled(int o);

  SwitchWiring wiring_;
  SwitchConfig cfg_;
  log::Logger log_;  // multicast replication
  net::PacketPool& pool_;
  std::unique_ptr<McrTable> mcr_;  // null on a platform without multicast regions
  int ports_;
  std::vector<Input> inputs_;
  std::vector<std::unique_ptr<Port>> outputs_;
  std::vector<uint32_t> turn_;  // [dst endpoint]: the rotation's next port, and the adaptive choice's first
};

}  // namespace incsim::nvswitch
