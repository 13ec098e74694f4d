#pragma once
// The algorithm registry (docs/programs.md, "Adding an algorithm"): every
// collective algorithm incsim runs is one Algorithm, registered by the file
// of its family under modules/collectives/algorithms/, which says what it is
// (name, collectives, where it runs and why not elsewhere, the hardware it
// needs, its parameters) and synthesizes its program for a site. --help,
// --list-choices, the workloads and the program files read the registry;
// nothing else tests an algorithm's name. Plain C++, no SystemC.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/blink_synthesis.h"
#include "collectives/program.h"
#include "core/config.h"
#include "topology/topology.h"

namespace incsim::collectives {

// The networks an algorithm is written for: the GPU fabrics (dgx2, dgx1v,
// torus, clusters, YAML files, ...) or NetReduce's Ethernet platforms.
enum class Family { GpuFabric, Rack, MultiGpu };

// Where a collective is asked to run: the machine's graph and the GPUs
// taking part, in rank order. The platform layer fills in what only it
// knows of the machine (which switches lack tables).
struct Site {
  const topo::Topology& graph;
  std::string platform;  // as the command line names it, for messages
  Collective collective = Collective::AllReduce;
  std::vector<int> gpus;  // [rank]: its endpoint
  bool share = false;     // a job's GPUs on a machine that others use too
  // A switch without multicast or reduction tables (a DGX-1's PCIe switch,
  // a torus router), or -1: every switch has them.
  int plain_switch = -1;
  // A cluster's nodes (topo::cluster_nodes), each its GPUs; empty elsewhere.
  std::vector<std::vector<int>> nodes;
  // The platform family's NCCL settings (ring.channels, 0: its default;
  // ring.protocol), and the machine's packet format once it is built.
  int channels_default = 0;
  std::string protocol_default = "simple";
  uint32_t packet_payload = 0, packet_header = 0;
  // The call sums floating-point values, the only reduction NCCL's
  // symmetric kernels run (symmetric.cc, ncclSymImplemented).
  bool float_sum = true;
  Config& cfg;  // the algorithm's parameters

  int ranks() const { return static_cast<int>(gpus.size()); }
  // Every endpoint of the graph takes part.
  bool whole() const { return gpus.size() == graph.endpoints().size(); }
  bool cluster() const { return !nodes.empty(); }
  bool dgx1() const;                // a DGX-1 (family dgx1v or dgx1p)
  bool multitree_platform() const;  // MultiTree's networks (Table III's defaults)
  bool roce() const;                // a cluster on RoCE
  // [endpoint]: a cluster's node of each GPU, and its place there (its rail).
  std::vector<int> node_of() const;
  std::vector<int> rail_of() const;
  // The cluster's nodes the GPUs fill: all of the cluster's, or a job's
  // whole nodes (every GPU of each, in node and GPU order: rank r is GPU
  // r % G of the job's node r / G); 0 if they are not whole nodes.
  int whole_nodes() const;
  // The nodes the GPUs are in where each holds as many of them and the ranks
  // go node by node (rank r in node r / GPUs per node), as a cluster's whole
  // nodes and --tp's data-parallel groups (one GPU per node) do; 1 off a
  // cluster, 0 for another spread.
  int rank_nodes() const;
  bool one_node() const { return rank_nodes() == 1; }
  // The ranks are GPUs 0 to n-1, in order (rank r is endpoint r).
  bool gpu_numbered() const;
};

// Graphs with the netlist of a built-in (any names, rates and link order):
// Klenk §V's 2-level fat tree of leaf groups of 8 GPUs, and MultiTree's
// BiGraph (the same number of nodes on every switch).
bool is_fattree2l(const topo::Topology& t);
bool is_bigraph(const topo::Topology& t);

// What an algorithm needs of the machine it runs on: the papers' settings,
// which the machine builder takes where the run sets none.
enum class TableRule {
  None,  // no reduction in the switches' tables
  Push,  // reduces in them, sized by Klenk's Eq. (2): C_min = B_in d_max L_hop over the network
  Pull,  // reduces in them, sized by Eq. (1): C_min = B_in / (p - 1) (2 d_max L_hop + L_GPU) per GPU
};
struct Needs {
  TableRule tables = TableRule::None;
  // Reduction table per switch port where a paper sets one (Klenk Fig. 7,
  // 8); 0: the builder sizes it by `tables`' rule (switch.reduction_table.bytes=auto).
  uint32_t table_bytes = 0;
  // The switches reduce and multicast 128-byte blocks (Klenk §IV-D): packets
  // carry at most one.
  bool block_packets = false;
  // Its programs run on the GPUs' copy engines (gpu.copy_engine.*).
  bool copy_engine = false;
};

// Klenk's push and pull on the copy engines, with the reduction tables of
// his figures: push 256 B per switch port (Fig. 7, 8) on his platforms'
// graphs (dgx2, fattree2l and star, family klenk), elsewhere (today's
// machines, other YAML files) 0: Eq. (2)'s C_min; pull 4 KiB (Fig. 7:
// DGX-2), 1 KiB on his 2-level fat tree (Fig. 8).
Needs push_tables(const topo::Topology& t);
Needs pull_tables(const topo::Topology& t);
// What a program (a file's) needs of the machine, by what it does in the
// switches: a copy engine's program the push, pull or multicast tables and
// 128-byte blocks; a program for the cores that reduces in the switches
// NVLS's tables (and its blocks if it moves nothing else).
Needs needs_of(const Program& p, const topo::Topology& t);

// An algorithm's program for a site, and what the run reports of it.
struct Synthesis {
  Program program;
  // The NICs run it with message-based flow control by default
  // (nic.flow_control=message, MultiTree §IV-B).
  bool message_flow_control = false;
  // Trees the NICs run in dataflow mode (Blink's, a DGX-1's rings): the
  // largest tree's share of the buffer, the algbw bound their packing allows
  // (0: the endpoints' payload bound) and what it is, and --print-trees' text.
  double largest_share = 0, algbw_bound_GBps = 0;
  std::string bound_note, trees_text;
  bool trees() const { return !trees_text.empty(); }
};

// An algorithm that tunes itself over several runs of each size, the last
// one reported (Blink's chunk size search, §4.2.1), or picks a program per
// size (nccl: NCCL's choice).
class Tuner {
 public:
  virtual ~Tuner() = default;
  virtual int runs() const = 0;  // per size
  // Before run k (from 0) of a size of `bytes`: the program to run.
  virtual Synthesis next(int k, uint64_t bytes) = 0;
  // After it: what it reached; returns its line for the run's notes.
  virtual std::string ran(int k, double time_us, double algbw_GBps) = 0;
  // What the last run ran, for its row (the row's `choice`: NCCL's pick); empty for nothing to say.
  virtual std::string choice() const { return {}; }
};

class Algorithm {
 public:
  // What --help and --list-choices say of it.
  struct Info {
    const char* name;
    const char* collectives;  // those it runs, comma-separated
    const char* default_for;  // the collectives whose default it is on its family's platforms
    Family family;
    const char* runs_on;      // the built-in platforms it runs on, comma-separated
    const char* engine;       // the hardware that executes it
    const char* description;  // one line, with its source
    int listing;              // its place in every list (ascending)
  };
  explicit Algorithm(Info info) : info_(info) {}
  virtual ~Algorithm() = default;
  const Info& info() const { return info_; }
  const char* name() const { return info_.name; }
  bool runs(Collective c) const;

  // Why it cannot run at this site, in one sentence, or "". Checked before
  // the machine is built.
  virtual std::string cannot_run(const Site& s) const { return {}; }
  // Whether it moves data across a cluster's nodes (through the adapters):
  // the others run on one node's GPUs only.
  virtual bool crosses_nodes() const { return false; }
  // Whether its ring runs in two levels on the hosts, the machines' rings
  // and one across their masters (Tencent's, NetReduce §3.4), which the
  // NetReduce appendix models by its Eq. (2).
  virtual bool masters_ring() const { return false; }
  // Whether it reduces or multicasts in the switches' tables (which need
  // switches that have them, on routes that go up then down).
  virtual bool in_switches() const { return false; }
  // Whether it numbers its ranks as the platform numbers its GPUs (a
  // DGX-1's trees, MultiTree): on a job's share it needs GPUs 0 to n-1.
  virtual bool gpu_numbered(const topo::Topology& t) const { return false; }
  // What it needs of the machine on graph t to run collective c.
  virtual Needs needs(const topo::Topology& t, Collective c) const { return {}; }
  // Its program for the site (cannot_run said ""); UserError for a
  // parameter that does not fit the site.
  virtual Synthesis synthesize(const Site& s) const = 0;
  // Its tuner for the site, given the first synthesis, or none: each size
  // runs once. The site must outlive it.
  virtual std::unique_ptr<Tuner> tuner(const Site& s, const Synthesis& first) const { return nullptr; }

 private:
  Info info_;
};

// The registry. Each file of modules/collectives/algorithms/ registers its
// family with INCSIM_ALGORITHMS(file_stem) { r.add(...); } (the build lists
// the files, so adding a family is adding a file); an sc_main of one's own
// adds its algorithms with register_algorithm before it runs anything.
class Registry {
 public:
  explicit Registry(std::vector<std::unique_ptr<Algorithm>>& into) : into_(into) {}
  void add(std::unique_ptr<Algorithm> a) { into_.push_back(std::move(a)); }

 private:
  std::vector<std::unique_ptr<Algorithm>>& into_;
};
#define INCSIM_ALGORITHMS(stem) void register_algorithms_##stem(::incsim::collectives::Registry& r)
void register_algorithm(std::unique_ptr<Algorithm> a);

// A program file's (MSCCL's XML, incsim's format, checked), run as an
// algorithm named by its path: its engine says where it runs.
std::unique_ptr<Algorithm> file_algorithm(const std::string& path, Program program);

// Every algorithm, in listing order.
const std::vector<const Algorithm*>& algorithms();
// The algorithm `name` of `family`, or nullptr (a name may stand in two
// families: ring, the GPUs' and the RoCE hosts').
const Algorithm* find_algorithm(const std::string& name, Family family);
// The algorithms of `family` that run collective c, the default first.
std::vector<const Algorithm*> algorithms_for(Collective c, Family family);
// Every algorithm name, once each, comma-separated, in listing order.
std::string algorithm_names();

}  // namespace incsim::collectives
