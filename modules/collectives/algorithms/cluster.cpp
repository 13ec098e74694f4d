// NCCL's algorithms across a rail-optimised cluster's nodes (docs/modern-
// machines.md, "Clusters"): rings, trees and NVLS inside each node, rings,
// trees, SHARP in the InfiniBand leaves or NetReduce's FPGA beside the RoCE
// leaves across them; and SHARP alone for one GPU per node.
#include <functional>
#include <set>

#include "collectives/algorithms/common.h"
#include "collectives/program_synthesis.h"

namespace incsim::collectives::builtin {

namespace {

// Where the scale-out network must aggregate: InfiniBand's SHARP, RoCE's
// NetReduce FPGA, or either (the network only carries data).
enum class Aggregates { Nowhere, Sharp, NetReduce };

class Across : public Algorithm {
 public:
  // shape: how it runs, for its refusal off a whole cluster; simple: NCCL
  // runs its kernels with the Simple protocol only.
  using Make = std::function<Program(int nodes, int per_node, int channels, bool multimem)>;
  Across(Info info, std::string shape, Aggregates agg, bool nvls, bool simple, Make make)
      : Algorithm(info), shape_(std::move(shape)), agg_(agg), nvls_(nvls), simple_(simple), make_(std::move(make)) {}
  bool crosses_nodes() const override { return true; }
  std::string cannot_run(const Site& s) const override {
    if (!whole_cluster(s)) return where_not(s);
    return network_refusal(s);
  }
  Needs needs(const topo::Topology& t, Collective) const override {
    if (!nvls_) return {};
    Needs n = pull_tables(t);  // NVLS's multimem loads, on the cores
    n.block_packets = n.copy_engine = false;
    return n;
  }
  Synthesis synthesize(const Site& s) const override {
    const int channels = nccl_channels(s);
    const int nodes = s.whole_nodes(), per_node = nodes ? static_cast<int>(s.nodes[0].size()) : 0;
    Synthesis out;
    out.program = make_(nodes, per_node, channels, nvls_ && s.cfg.get(kNvlsMultimem));
    out.program.name = name();
    apply_protocol(out.program, name(), s.cfg.get(kRingProtocol, s.protocol_default), simple_);
    return out;
  }

 protected:
  virtual bool whole_cluster(const Site& s) const { return s.whole_nodes() > 0; }
  virtual std::string where_not(const Site& s) const {
    return std::string(name()) + " runs on all the GPUs of a cluster (--platform cluster)" +
           (s.share && s.cluster() ? ", or a job's whole nodes, in order" : "") + ": " + shape_;
  }
  std::string network_refusal(const Site& s) const {
    if (!s.cluster()) return {};
    if (s.roce() && agg_ == Aggregates::Sharp)
      return std::string(name()) + " aggregates in the InfiniBand switches' SHARP buffers, which a RoCE cluster "
             "(cluster.network=roce) does not have: run nvlsnetreduce there";
    if (!s.roce() && agg_ == Aggregates::NetReduce)
      return std::string(name()) + " aggregates in NetReduce's FPGA beside each Ethernet rail leaf, which an "
             "InfiniBand cluster does not have: add -c cluster.network=roce";
    return {};
  }

 private:
  std::string shape_;
  Aggregates agg_;
  bool nvls_, simple_;
  Make make_;
};

// SHARP alone: one GPU of each of n nodes, all in the same place of their
// node (one rail), as --tp's data-parallel groups are.
class Sharp : public Across {
 public:
  Sharp()
      : Across({"sharp", "allreduce", "", Family::GpuFabric, "one GPU per node on a rail of a cluster (infiniband)",
                "the GPUs' cores and the InfiniBand leaves' SHARP aggregation buffers",
                "SHARP alone, for one GPU per node on one rail (--tp's data-parallel groups, -c "
                "train.dp_algorithm=sharp): each GPU's data added by the rail's leaf switches and sent back (NCCL's "
                "CollNet with one GPU per node)",
                160},
               "", Aggregates::Sharp, false, true,
               [](int, int, int, bool) { return Program{}; }) {}
  Synthesis synthesize(const Site& s) const override {
    Synthesis out;
    out.program = sharp_program(s.ranks(), nccl_channels(s));
    apply_protocol(out.program, name(), s.cfg.get(kRingProtocol, s.protocol_default), true);
    return out;
  }

 protected:
  bool whole_cluster(const Site& s) const override {
    const std::vector<int> node_of = s.node_of(), rail_of = s.rail_of();
    std::set<int> nodes, places;
    for (int g : s.gpus)
      if (static_cast<size_t>(g) < node_of.size())
        nodes.insert(node_of[static_cast<size_t>(g)]), places.insert(rail_of[static_cast<size_t>(g)]);
    return s.cluster() && places.size() == 1 && nodes.size() == static_cast<size_t>(s.ranks());
  }
  std::string where_not(const Site&) const override {
    return "sharp adds the data of one GPU per node on one rail in the rail's leaf switches: its GPUs must be GPU h "
           "of different nodes of a cluster, as --tp's data-parallel groups are (-c train.dp_algorithm=sharp)";
  }
};

}  // namespace

INCSIM_ALGORITHMS(cluster) {
  const char* const kCores = "the GPUs' cores";
  const char* const kNvlsCores =
      "the GPUs' cores (multimem loads and stores) and the NVSwitches' reduction and multicast tables";
  r.add(std::make_unique<Across>(
      Algorithm::Info{"hring", "allreduce", "", Family::GpuFabric, "cluster", kCores,
                      "hierarchical: each node's rings reduce-scatter, a ring per rail across the nodes all-reduces "
                      "each GPU's block, the node's rings all-gather (NCCL's NVLSTree with rings in place of NVLS)",
                      130},
      "rings inside its nodes and across them per rail", Aggregates::Nowhere, false, false,
      [](int nodes, int per_node, int channels, bool) { return hierarchical_ring_program(nodes, per_node, channels); }));
  r.add(std::make_unique<Across>(
      Algorithm::Info{"tree", "allreduce", "", Family::GpuFabric, "cluster", kCores,
                      "NCCL's trees across nodes: a chain through each node's GPUs, NCCL's double binary tree over the "
                      "nodes (NCCL 2.4+, src/graph/trees.cc, connect.cc)",
                      140},
      "a chain through each node's GPUs, a tree over the nodes", Aggregates::Nowhere, false, false,
      [](int nodes, int per_node, int channels, bool) { return cluster_tree_program(nodes, per_node, channels); }));
  r.add(std::make_unique<Across>(
      Algorithm::Info{"collnet", "allreduce", "", Family::GpuFabric, "cluster (infiniband)",
                      "the GPUs' cores and the InfiniBand leaves' SHARP aggregation buffers",
                      "NCCL's CollNet: each node's rings reduce-scatter, every GPU's block is added by its rail's leaf "
                      "(SHARP), the node's rings all-gather (NCCL's CollNetDirect with rings inside the node)",
                      150},
      "rings inside its nodes, SHARP across them per rail", Aggregates::Sharp, false, true,
      [](int nodes, int per_node, int channels, bool) { return collnet_program(nodes, per_node, channels); }));
  r.add(std::make_unique<Sharp>());
  r.add(std::make_unique<Across>(
      Algorithm::Info{"nvlstree", "allreduce", "", Family::GpuFabric, "cluster", kNvlsCores,
                      "NCCL's NVLSTree: NVLS reduce-scatter in each node, NCCL's trees per rail across the nodes, NVLS "
                      "multicast (NCCL 2.18+, src/device/all_reduce.h)",
                      170},
      "NVLS inside its nodes, trees across them per rail", Aggregates::Nowhere, true, true, nvls_tree_program));
  r.add(std::make_unique<Across>(
      Algorithm::Info{"nvlsring", "allreduce", "", Family::GpuFabric, "cluster", kNvlsCores,
                      "NVLS reduce-scatter in each node, a ring per rail across the nodes, NVLS multicast (hring with "
                      "NVLS in place of the node's rings; not one of NCCL's algorithms)",
                      180},
      "NVLS inside its nodes, rings across them per rail", Aggregates::Nowhere, true, true, nvls_ring_program));
  r.add(std::make_unique<Across>(
      Algorithm::Info{"nvlssharp", "allreduce", "", Family::GpuFabric, "cluster (infiniband)",
                      "the GPUs' cores (multimem loads, stores and reducing writes), the NVSwitches' tables and the "
                      "InfiniBand leaves' SHARP aggregation buffers",
                      "NCCL's NVLS across nodes with SHARP: NVLS reduce-scatter in each node, the rail's leaf adds the "
                      "nodes' sums (CollNet), NVLS multicast (NCCL 2.17+, NCCL_ALGO_NVLS)",
                      190},
      "NVLS inside its nodes, SHARP across them per rail", Aggregates::Sharp, true, true, nvls_sharp_program));
  // NetReduce's FPGA in place of SHARP's switches: the same program, the network's aggregation differs.
  r.add(std::make_unique<Across>(
      Algorithm::Info{"nvlsnetreduce", "allreduce", "", Family::GpuFabric, "cluster (roce)",
                      "the GPUs' cores (multimem loads, stores and reducing writes), the NVSwitches' tables and "
                      "NetReduce's FPGA beside each Ethernet rail leaf (cluster.network=roce)",
                      "NVLS reduce-scatter in each node, each GPU's share all-reduced over its rail by NetReduce's FPGA "
                      "aggregator (ASPLOS 2023), NVLS multicast",
                      200},
      "NVLS inside its nodes, NetReduce's FPGA across them per rail", Aggregates::NetReduce, true, true,
      nvls_sharp_program));
}

}  // namespace incsim::collectives::builtin
