#pragma once
// A platform netlist elaborated from a topology graph: one NvSwitch per switch
// node, one Gpu per endpoint, each link bound as two one-way channels with
// bandwidth, latency and credits. Built-in platforms and YAML platform files
// go through the same path.
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/config.h"
#include "gpu/gpu.h"
#include "machine.h"
#include "nic/nic.h"
#include "nvswitch/nvswitch.h"
#include "topology/multicast.h"
#include "topology/topology.h"

namespace incsim::platforms {

// The shape the command line asks for; 0 (or no dims) where not given.
struct PlatformShape {
  int gpus = 0;    // --gpus: GPUs built on star and fattree2l (elsewhere the run takes the first N)
  bool dims = false;  // --dims AxB given: torus and mesh KX x KY; bigraph nodes per switch x switches
  int dims_x = 0, dims_y = 0;
  int nodes = 0;   // --nodes: fattree
  std::vector<int> gpu_list;  // --gpus 1,4,5,6: the GPUs allocated on a DGX-1 (physical numbers)
  std::vector<std::vector<int>> gpu_servers;  // --gpus 0,1,2/0,1,2,3,4: several DGX-1s on a network
};
// dgx1v or dgx1p.
bool is_dgx1_platform(const std::string& platform);
// A DGX-1 graph (family dgx1v or dgx1p), built in or from a YAML file.
bool is_dgx1(const topo::Topology& t);

// Builds the topology for --platform (a built-in name or a YAML file) in the
// shape asked for, or the platform's default shape. Declares link.*
// parameters in cfg, with the platform's defaults (platform_defaults()).
topo::Topology make_topology(const std::string& platform, const PlatformShape& shape, Config& cfg);
topo::Topology make_topology(const std::string& platform, int gpus, Config& cfg);
std::string builtin_platforms();  // for messages
// --platform names a file (FILE.yaml or FILE.yml), not a built-in platform.
bool is_platform_file(const std::string& platform);
// The family a platform file declares (`family:`), or klenk if it names
// none or is not a map of keys (loading it then says what is wrong).
std::string file_family(const std::string& path);
// The networks of MultiTree's evaluation (torus, mesh, fattree, bigraph, and
// YAML files of family multitree), whose defaults come from MultiTree Table
// III rather than Klenk §V.
bool is_multitree_platform(const topo::Topology& t);

// The module that elaborates a node of each kind (topo::Node::block). A
// DGX-1's NVLink bridges, PCIe switches, CPU sockets and network switch, and
// a MultiTree network's routers, are NvSwitches with that node's links and
// the family's latency; the Ethernet kinds are NetReduceRack's. An sc_main
// may name a kind of its own for hardware one of these modules models, before
// it elaborates the platform.
enum class NodeModule { Gpu, NvSwitch, EthernetSwitch, RoceNic, FpgaAggregator };
void register_node_kind(const std::string& kind, NodeModule module);
// UserError naming the registered kinds if `kind` is none of them.
NodeModule node_module(const std::string& kind);

// The quantities of Klenk's Little's-law table sizing, Eq. (1) and (2),
// for this platform (measured from GPU 0's ports).
struct LittleLaw {
  double b_in_GBps = 0;  // a GPU's injection bandwidth
  int d_max = 0;         // the most switches between two GPUs
  double l_hop_ns = 0;   // a switch, a wire and a packet's serialization
  double l_gpu_ns = 0;   // mean GPU memory response latency
};

// Defaults that depend on the platform and on what runs on it.
struct PlatformDefaults {
  uint32_t table_bytes = 0;  // reduction table per switch port (Klenk Fig. 7, 8)
  double switch_latency_ns = 150;     // Klenk §V; MultiTree platforms: platform_defaults()
  uint32_t max_payload_bytes = 128;   // Klenk §V; MultiTree Table III: 256
};
// By the graph's family (Topology::family): Klenk's values for dgx2,
// fattree2l, star; MultiTree's for torus, mesh, fattree and bigraph; the
// DGX-1's for dgx1v and dgx1p. A YAML file takes its `family:`'s.
PlatformDefaults platform_defaults(const topo::Topology& t);

class Platform : public Machine {
 public:
  Platform(const topo::Topology& t, Config& cfg, uint64_t seed, PlatformDefaults d = {});

  const topo::Topology& topology() const { return topo_; }
  const topo::Topology* topology_graph() const override { return &topo_; }
  const std::vector<gpu::Gpu*>& gpus() const { return gpus_; }
  nic::Nic& nic(int gpu) { return *nics_[gpu]; }  // the NIC inside GPU gpu
  const std::vector<LinkEnd>& link_ends() const override { return link_ends_; }
  const net::PacketFormat& format() const { return pool_->format(); }
  // The fabric manager's multicast regions, which every switch reads.
  topo::MulticastFabric& fabric() { return *fabric_; }
  const nvswitch::SwitchConfig& switch_config() const { return switch_config_; }
  const gpu::GpuConfig& gpu_config() const { return gpu_config_; }
  const LittleLaw& little_law() const { return little_law_; }
  // Reduction table bytes over every switch port (Klenk §IV-F1: C).
  uint64_t total_table_bytes() const;
  net::PacketPool& pool() override { return *pool_; }
  const net::PacketPool& pool() const override { return *pool_; }
  // Payload bandwidth GPU g can inject toward the GPUs `peers` (bounds.h),
  // GB/s: the ports that lead to none of them do not count. acked: each
  // incoming write costs a header-only ack on the same link direction
  // (software collectives); posted multicast writes cost none.
  double endpoint_payload_GBps(int g, const std::vector<int>& peers, bool acked = true) const;

  // The slowest request-response loop: the longest link there and back, a
  // switch, and the largest memory latency.
  sc_core::sc_time longest_round_trip() const { return longest_round_trip_; }

  // Reduction table events summed over every switch port, so far.
  struct TableTotals {
    uint64_t hits = 0, misses = 0, evictions = 0, stalls = 0, completions = 0;
  };
  TableTotals table_totals() const;
  // Packets the GPUs received so far, and the sum of their latencies, ns.
  std::pair<uint64_t, double> packet_latency() const;
  // What the stall detector watches: packets the GPUs received and
  // reductions the switches' tables completed. Links busy with nothing
  // arriving anywhere do not move it.
  uint64_t progress() const override { return packet_latency().first + table_totals().completions; }

  void trace(sc_core::sc_trace_file* tf) const override;
  uint64_t report_held(std::ostream& os) const override;

 private:
  topo::Topology topo_;
  std::unique_ptr<topo::MulticastFabric> fabric_;
  nvswitch::SwitchConfig switch_config_;
  gpu::GpuConfig gpu_config_{};
  LittleLaw little_law_;
  std::unique_ptr<net::PacketPool> pool_;
  std::vector<std::unique_ptr<nvswitch::NvSwitch>> switch_modules_;
  std::vector<std::unique_ptr<gpu::Gpu>> gpu_modules_;
  std::vector<gpu::Gpu*> gpus_;
  std::vector<std::unique_ptr<nic::Nic>> nics_;  // [gpu]; destroyed before the GPUs that hold them
  std::vector<LinkEnd> link_ends_;
  sc_core::sc_time longest_round_trip_;
  uint64_t table_bytes_ = 0;  // every port's reduction table
};

}  // namespace incsim::platforms
