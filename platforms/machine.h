#pragma once
// The one netlist builder. A Machine is elaborated from a topology graph:
// one module per node, made by the factory its kind is registered with, and
// each link bound as two one-way channels with the link's bandwidth and
// latency and the far end's buffer as credits. Every platform, built in or
// from a YAML file, GPU fabric or Ethernet, goes through it; workloads find
// their blocks in it by node. It is also what the driver sees of any
// platform: its link ends (per-link bytes and utilisation), its packet pool,
// its progress, waveform and stall report.
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <systemc>
#include <typeinfo>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/param.h"
#include "net/block.h"
#include "net/packet.h"
#include "net/port.h"
#include "topology/multicast.h"
#include "topology/topology.h"

namespace incsim::nvswitch {
class TableSharing;
}
namespace incsim::flow {
struct FlowMachine;
struct LinkFormat;
}

namespace incsim::platforms {

// Links, read where each platform elaborates them. Bandwidths stay positive
// and finite, latencies far below what simulated time (64-bit ps) holds.
inline const Param<double> kLinkGBps{
    "link.bw_GBps", 25.0, Range::at_least(0.001).at_most(1e5),
    "bandwidth of each link direction, GB/s (dgx2, fattree2l, star, hgx-a100, hgx-h100, YAML files: 25, Klenk §V, "
    "per NVSwitch port, NVLink3's 600 GB/s per GPU both ways over 12 links and NVLink4's 900 GB/s over 18; "
    "hgx-b200, nvl72: 50, NVLink5's 1.8 TB/s over 18; "
    "torus, mesh, fattree, bigraph: 16, MultiTree Table III; a torus or mesh endpoint's link carries its "
    "router's network links together, MultiTree §V-A; rack, spineleaf, multigpu: 12.5, the Ethernet line "
    "rate of 100 Gbit/s, NetReduce §5.1: ConnectX-5 100 GbE, six 100 Gbps FPGA ports)"};
inline const Param<double> kLinkLatency{
    "link.latency_ns", 0.0, Range::at_least(0).at_most(1e9),
    "wire latency of each link, ns (dgx2, fattree2l, star, hgx-*, nvl72, YAML files: 0, Klenk §V gives none, its 150 ns switch "
    "latency covers the fabric; torus, mesh, fattree, bigraph: 150, MultiTree Table III; rack, spineleaf, "
    "multigpu: 50, an assumption of a few metres of cable in a rack, 5 ns/m; NetReduce gives only the 6.3 us RTT "
    "of Table 6)"};
// link.bw_GBps on hgx-b200 and nvl72: NVLink5's 1.8 TB/s per GPU, both directions, over 18 links (NVIDIA DGX
// B200 User Guide, GB200 NVL72).
constexpr double kNvLink5GBps = 50;
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
  size_t fabric = 0;  // index into Machine::fabric_names(): whose packets it carries
};

// Defaults that depend on the platform family (platform.h,
// platform_defaults()) and on what runs on it.
struct PlatformDefaults {
  // Reduction tables: whether any are read (false where nothing reduces in
  // the switches: their keys are then refused), the size per switch port a
  // paper sets (Klenk Fig. 7, 8), and where none does (0), the rules that
  // size them: C_min of Klenk's Eq. (2) for push, Eq. (1) for pull.
  bool tables = true;
  uint32_t table_bytes = 0;
  bool push_tables = false, pull_tables = false;
  double switch_latency_ns = 150;     // Klenk §V; MultiTree platforms: platform_defaults()
  uint32_t max_payload_bytes = 128;   // Klenk §V; MultiTree Table III: 256
  std::string spread = "destination";  // switch.spread: the papers' tables; hgx-h100: adaptive
  double gpu_clock_ghz = 0;            // gpu.clock_ghz; 0: its default (V100, Klenk's GPUs)
  int ring_channels = 0;               // ring.channels; 0: its default
  uint64_t cores_chunk_bytes = 0;      // cores.chunk_bytes; 0: its default
  std::string ring_protocol = "simple";  // ring.protocol: the papers' baseline; today's machines: auto
  std::string nccl_launch = "none";      // nccl.launch: the papers' baseline; today's machines: process
  // A ring's Simple steps in NCCL's two slices (gpu::CoresParams::nccl_slices):
  // today's machines, as NCCL's kernel runs there; the papers' platforms keep
  // the one transfer per step their figures were made with.
  bool nccl_slices = false;
};

// The blocks of one link protocol: the packet format they share and the
// parameters all blocks of its kinds read once (a GPU fabric's switch and
// GPU settings and buffer sizes; an Ethernet network's MTU, timeouts and
// link faults). Every link carries one fabric's packets; a machine of
// several fabrics (a cluster: NVLink inside each node, InfiniBand between
// them) joins them only at bridge blocks (a GPU's NIC), which turn one
// fabric's packets into the other's.
class Fabric {
 public:
  virtual ~Fabric() = default;
  virtual net::PacketFormat packet_format() const = 0;
  // Loss and corruption per frame on links whose blocks model faults (net::Block::link_faults).
  virtual double link_loss() const { return 0; }
  virtual double link_corruption() const { return 0; }
  // The machine's one fabric manager (multicast regions span fabrics: a
  // rail's aggregation group reaches its GPUs through their adapters): the
  // fabric that keeps it returns it, and every fabric is shown it before
  // any module is built.
  virtual topo::MulticastFabric* multicast_manager() { return nullptr; }
  virtual void use_multicast_manager(topo::MulticastFabric*) {}
  // How a jobs: list's jobs share the in-network resources of its blocks
  // (each fabric owns its own: the NVSwitches' tables and multicast groups,
  // SHARP's tables, the FPGAs' memory); none to share: empty.
  virtual std::vector<nvswitch::TableSharing*> table_sharings() const { return {}; }
};
// Reads a fabric's parameters for `graph` (its nodes are those whose kinds
// are the fabric's; a bridge's belong to both); may throw UserError.
using FabricFactory =
    std::function<std::unique_ptr<Fabric>(const topo::Topology& graph, Config& cfg, uint64_t seed, const PlatformDefaults& d)>;
// Makes the module of `node`, named after it; may throw UserError (before
// anything is built, the builder has asked every node's kind for its fabric).
using NodeFactory =
    std::function<std::unique_ptr<net::Block>(const topo::Topology& graph, int node, Fabric& fabric, net::PacketPool& pool)>;

// A bridge's module, given the fabrics (and their packet pools) its ports
// lead into, in the order its kind was registered with.
using BridgeFactory = std::function<std::unique_ptr<net::Block>(const topo::Topology& graph, int node, Fabric& a,
                                                                net::PacketPool& pool_a, Fabric& b,
                                                                net::PacketPool& pool_b)>;

// What flows see of a fabric's blocks (--fidelity flow, docs/flow.md), read
// from the keys its packet-level blocks read: for each of `nodes` (its
// kinds' and the bridges into it) its latency and how it routes,
// acknowledges and reduces, set in m; returned, the packets its links carry.
using FlowView = std::function<flow::LinkFormat(const topo::Topology& graph, const std::vector<int>& nodes, Config& cfg,
                                                const PlatformDefaults& d, flow::FlowMachine& m)>;

// The built-in fabrics are "nvlink" (platforms/gpu_fabric.h: gpu, nvswitch,
// router, nvlink_bridge, pcie_switch, cpu_socket, network_switch),
// "infiniband" (platforms/infiniband_fabric.h: ib_switch; and the bridge
// hca, a GPU's NIC between nvlink and infiniband) and "ethernet"
// (platforms/ethernet_fabric.h: ethernet_switch, roce_host,
// fpga_aggregator). An sc_main adds its own, or its own kinds to one, before
// it elaborates a platform; a fabric without a FlowView runs at packet level only.
void register_fabric(const std::string& name, FabricFactory make, FlowView flows = {});
// The memory this process may use: what the kernel reports available, or
// its address-space limit if lower.
uint64_t usable_bytes();
// Refuses, in one sentence ending in `instead` (what to run), a graph whose
// packet level would not fit in usable_bytes (about 64 KB a link).
void require_packet_memory(const topo::Topology& t,
                           const std::string& instead = "--fidelity flow runs its collectives, or choose a smaller "
                                                        "platform");
// `role`: whether nodes of this kind are endpoints or switches in the graph.
void register_node_kind(const std::string& kind, const std::string& fabric, topo::NodeKind role, NodeFactory make);
// A kind whose ports lead into two fabrics: each of its links carries the
// packets of the fabric of the node at the other end, a or b.
void register_bridge_kind(const std::string& kind, const std::string& fabric_a, const std::string& fabric_b,
                          topo::NodeKind role, BridgeFactory make);
// The fabric a kind belongs to (a bridge: its first); UserError naming the
// registered kinds if none.
const std::string& fabric_of_kind(const std::string& kind);
// A bridge kind's second fabric; empty for any other kind.
const std::string& bridged_fabric(const std::string& kind);
inline bool is_bridge_kind(const std::string& kind) { return !bridged_fabric(kind).empty(); }

// Graph's machine as flows see it: each of its fabrics' FlowView, the
// endpoints' fabric's first (formats[0]), and each link in the format of the
// fabric whose packets it carries. UserError where a fabric has no FlowView
// or the graph would not elaborate.
flow::FlowMachine flow_machine(const topo::Topology& graph, Config& cfg, const PlatformDefaults& d);

class Machine {
 public:
  Machine(topo::Topology graph, Config& cfg, uint64_t seed, const PlatformDefaults& d = {});
  virtual ~Machine();
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  const topo::Topology& topology() const { return topo_; }
  // The fabric of its endpoints (a cluster's GPUs: nvlink); the others, if
  // any, come after it in fabric_names().
  const std::string& fabric_name() const { return fabric_names_.front(); }
  const std::vector<std::string>& fabric_names() const { return fabric_names_; }
  // Every fabric's table sharing (Fabric::table_sharing), in fabric order:
  // the GPU fabric's first.
  std::vector<nvswitch::TableSharing*> table_sharings() const;
  // The machine's fabric of type F (std::bad_cast if it has none).
  template <class F>
  const F& fabric_as() const {
    if (const F* x = find_fabric<F>()) return *x;
    throw std::bad_cast();
  }
  // The same, null if it has none.
  template <class F>
  const F* find_fabric() const {
    for (const auto& f : fabrics_)
      if (const F* x = dynamic_cast<const F*>(f.get())) return x;
    return nullptr;
  }
  // The module of graph node `node`.
  net::Block& block(int node) const { return *blocks_[static_cast<size_t>(node)]; }
  // The modules of type B, in graph order: switches, then endpoints.
  template <class B>
  std::vector<B*> blocks_of() const {
    std::vector<B*> r;
    for (int id : order_)
      if (auto* b = dynamic_cast<B*>(blocks_[id].get())) r.push_back(b);
    return r;
  }

  const std::vector<LinkEnd>& link_ends() const { return ends_; }
  // The packet pool of its endpoints' fabric; each fabric has its own, of
  // its own packet format.
  net::PacketPool& pool() { return *pools_.front(); }
  const net::PacketPool& pool() const { return *pools_.front(); }
  // Packets taken from every fabric's pool and not yet returned.
  uint64_t packets_in_use() const;
  // What the stall detector watches: the sum of every block's progress
  // (packets GPUs received, reductions switch tables completed, packets
  // hosts accepted or saw acknowledged, gradients FPGAs gathered). Links busy
  // with nothing arriving anywhere do not move it.
  uint64_t progress() const;
  void trace(sc_core::sc_trace_file* tf) const;
  // Writes one line per block queue that holds packets; returns how many it holds.
  uint64_t report_held(std::ostream& os) const;
  // The faults of link from -> to, each end a port as link_ends() names it
  // (switch.3) or a node (host0) that one link joins to the other, for a
  // test's FaultHook; UserError if there is no such link, several, or its
  // blocks model no faults.
  eth::LinkFaults& link_faults(const std::string& from, const std::string& to);
  // Frames lost on every link so far.
  uint64_t frames_lost() const;

 private:
  topo::Topology topo_;
  std::vector<std::string> fabric_names_;  // [fabric]: its endpoints' first
  std::vector<std::unique_ptr<Fabric>> fabrics_;
  std::vector<std::unique_ptr<net::PacketPool>> pools_;
  std::vector<std::unique_ptr<net::Block>> blocks_;  // [node id]
  std::vector<int> order_;  // switches, then endpoints: the order modules are built, traced and reported
  std::vector<LinkEnd> ends_;
  std::vector<eth::LinkFaults*> faults_;  // per end, applied where its frames arrive (nullptr: lossless)
};

}  // namespace incsim::platforms
