#pragma once
// The platforms by name: the topology graph a built-in platform (in the shape
// the command line asks for) or a YAML file gives, the defaults its family
// takes, and GpuMachine, the view of an elaborated GPU fabric that the
// collective and traffic workloads use. Every graph is elaborated by the one
// builder (machine.h).
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "collectives/algorithm.h"
#include "core/config.h"
#include "gpu/gpu.h"
#include "gpu_fabric.h"
#include "machine.h"
#include "nic/nic.h"
#include "nvswitch/nvswitch.h"
#include "topology/multicast.h"
#include "topology/topology.h"

namespace incsim::platforms {

// The shape the command line asks for; 0 (or no dims, no gpus) where not given.
struct PlatformShape {
  std::optional<int> gpus;  // --gpus: GPUs built on star and fattree2l (elsewhere the run takes the first N)
  bool dims = false;  // --dims AxB given: torus and mesh KX x KY; bigraph nodes per switch x switches
  int dims_x = 0, dims_y = 0;
  int nodes = 0;   // --nodes: fattree, cluster
  std::string node;  // --node: a cluster's node platform
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
std::string cluster_node_platforms();  // the built-in platforms --node takes, for messages
// --platform names a file (FILE.yaml or FILE.yml), not a built-in platform.
bool is_platform_file(const std::string& platform);
// The family a platform file declares (`family:`), or klenk if it names
// none or is not a map of keys (loading it then says what is wrong).
std::string file_family(const std::string& path);
// The networks of MultiTree's evaluation (torus, mesh, fattree, bigraph, and
// YAML files of family multitree), whose defaults come from MultiTree Table
// III rather than Klenk §V.
bool is_multitree_platform(const topo::Topology& t);

// Defaults by the graph's family (Topology::family): Klenk's values for dgx2,
// fattree2l, star; MultiTree's for torus, mesh, fattree and bigraph; the
// DGX-1's for dgx1v and dgx1p. A YAML file takes its `family:`'s.
PlatformDefaults platform_defaults(const topo::Topology& t);
// The same with what the algorithms that will run on it need: the largest
// reduction table and, if any reduces or multicasts 128-byte blocks, those.
PlatformDefaults platform_defaults(const topo::Topology& t, const std::vector<collectives::Needs>& needs);
// What the algorithms named (the registry's; a name it lacks, such as a
// program file, needs nothing ahead) need of a machine on graph t, each
// running `collective`.
std::vector<collectives::Needs> needs_of(const topo::Topology& t, const std::vector<std::string>& algorithms,
                                         const std::string& collective = "allreduce");
// Where the collective runs: graph t's GPUs `gpus` (endpoints, in rank
// order), with what the platform layer knows of the machine (its switches'
// tables, a cluster's nodes, its family's NCCL settings).
collectives::Site site(const topo::Topology& t, const std::string& platform, collectives::Collective c,
                       std::vector<int> gpus, bool share, Config& cfg);
// The compute model (--compute) of the platform's GPU: a100 on hgx-a100, h100
// on hgx-h100, b200 on hgx-b200 and nvl72, the same on clusters of them
// (--node), rtx2080 on rack and spineleaf
// (NetReduce's Testbed 1), v100 elsewhere (the papers' machines are V100s:
// Klenk, Blink, NetReduce's Testbed 2, multigpu).
std::string default_compute(const std::string& platform, const std::string& node);

// A Machine of the GPU fabric, as its workloads see it: the Machine (any
// fabric's netlist, elaborated by the one builder, machine.h) of a graph whose
// nodes are all the GPU fabric's (gpu_fabric.h), with its GPUs and NICs by
// endpoint and what the collective and traffic workloads measure over its
// blocks. A platform (--platform) names the graph; a GpuMachine is it built.
class GpuMachine : public Machine {
 public:
  // UserError if a node is not of the GPU fabric (an Ethernet kind).
  GpuMachine(const topo::Topology& t, Config& cfg, uint64_t seed, PlatformDefaults d = {});

  const std::vector<gpu::Gpu*>& gpus() const { return gpus_; }
  // With no packet in flight, puts every GPU's and switch's arbiters back
  // where elaboration left them, so that a size's row is what it gives alone;
  // another job's traffic, if any, is left as it finds it.
  void rewind_if_idle();
  // The defaults it was built with: its family's, and those of the algorithms that run on it.
  const PlatformDefaults& defaults() const { return defaults_; }
  nic::Nic& nic(int gpu) { return *nics_[gpu]; }  // the NIC inside GPU gpu
  const net::PacketFormat& format() const { return pool().format(); }
  const GpuFabric& settings() const { return fabric_as<GpuFabric>(); }
  // The fabric manager's multicast regions, which every switch reads.
  topo::MulticastFabric& multicast() { return settings().multicast(); }
  const credit_switch::SwitchConfig& switch_config() const { return settings().switch_config(); }
  const nvswitch::TableConfig& table_config() const { return settings().table_config(); }
  const LittleLaw& little_law() const { return settings().little_law(); }
  uint64_t total_table_bytes() const { return settings().total_table_bytes(); }
  sc_core::sc_time longest_round_trip() const { return settings().longest_round_trip(); }

  // Reduction table events summed over every switch port, so far.
  struct TableTotals {
    uint64_t hits = 0, misses = 0, evictions = 0, stalls = 0, completions = 0;
    uint64_t timeouts = 0;  // of the evictions, those of entries idle for the timeout
  };
  TableTotals table_totals() const;
  // Entries of the smallest reduction table a switch port has (of the
  // switches whose tables `of` shares, if given: one fabric's); 0: none has one.
  uint32_t smallest_table_entries(const nvswitch::TableSharing* of = nullptr) const;
  // Packets the GPUs received so far, and the sum of their latencies in SystemC time units.
  std::pair<uint64_t, uint64_t> packet_latency() const;

 private:
  PlatformDefaults defaults_;
  std::vector<gpu::Gpu*> gpus_;
  std::vector<nvswitch::NvSwitch*> switches_;
  std::vector<nic::Nic*> nics_;  // [gpu]
};

}  // namespace incsim::platforms
