#pragma once
// A multi-node cluster (docs/modern-machines.md, "Clusters"): copies of a
// node's GPU fabric, each GPU with an adapter (kinds::kHca, or kRoceBridge
// on RoCE) on PCIe, adapter i of every node on rail leaf i, and the rail
// leaves joined by spines, and on a large cluster the spines by cores.
// Plain C++, no SystemC.
#include <vector>

#include "topology/topology.h"

namespace incsim::topo {

// A cluster of 16,384 DGX H100s (131,072 GPUs): the largest the routes are
// computed for (kMaxStructuredNodes).
inline constexpr int kMaxClusterNodes = 16384;

// The scale-out network: InfiniBand (ib_switch leaves and spines, hca
// adapters) or RoCE on Ethernet (ethernet_switch leaves and spines,
// roce_bridge adapters).
enum class ScaleOut { InfiniBand, Roce };

struct ClusterShape {
  int nodes = 0;
  ScaleOut network = ScaleOut::InfiniBand;
  double pcie_GBps = 0, pcie_latency_ns = 0;  // a GPU to its adapter
  double net_GBps = 0, net_latency_ns = 0;    // every network link
  int oversubscription = 1;                   // a leaf's down-links over its up-links
  int spine_ports = 64;                       // ports of a spine switch
  int leaf_ports = 64;                        // ports of a rail leaf switch
  int spine_oversubscription = 1;             // on three levels, a spine's down-links over its up-links
  int core_ports = 64;                        // ports of a core switch
};

// `node`'s nodes and links, once per node k, named n<k>_<name>; GPU g of
// node k is endpoint k * G + g, and gets one more port (its last) to its
// adapter n<k>_hca<g> (port 0; port 1 to a leaf of rail g; on RoCE the
// adapter is a roce_bridge, the switches ethernet_switch, and beside each
// leaf L is NetReduce's FPGA L_fpga, a leaf_fpga with a port per node of
// the leaf, on ports the leaf has beyond cluster.leaf_ports). A rail is the
// fewest leaves of leaf_ports ports that hold its nodes, each with a port
// per node and ceil(nodes / oversubscription) up-links: one leaf, leaf<g>,
// or several, leaf<g>_<i>, the nodes split evenly in order, each with the
// up-links of its largest share. The up-links are spread evenly over the
// fewest spines of spine_ports ports that divide them (or one spine per
// up-link, wider than spine_ports, when the rails need more). The family is
// the node's (its parameter defaults). UserError for fewer than 2 nodes, a
// node without GPUs or a leaf too small for one node and an up-link.
//
// Three levels where one layer of spines cannot hold the leaves (more
// leaves than spine_ports, and more than one per rail): the slots (the i of
// leaf<g>_<i>) are grouped into pods of as many slots as a spine's
// down-links hold every rail's leaf of, at least one; each pod's leaves are
// joined by the pod's spines spine<p>_<j> as two levels join them (the
// fewest spines that divide a leaf's up-links, the down-links of a spine at
// most its ports less its up-links, ceil(down / spine_oversubscription)),
// and spine j of every pod by core group j, core<j>_<c>: the fewest cores
// of core_ports ports that divide a spine's up-links (or one per up-link,
// wider than core_ports, when the pods need more). Node numbers: the
// nodes' copies, leaves, spines, cores, adapters, then on RoCE the FPGAs.
// Routes come from this structure (RouteStructure), the tables' answers
// port for port, so that a cluster of 16,384 nodes needs no table per
// (node, endpoint) pair.
Topology make_cluster(const Topology& node, const ClusterShape& s);
// The switch levels make_cluster builds for s (2 or 3), which
// core_ports and spine_oversubscription do not change.
int cluster_levels(const Topology& node, const ClusterShape& s);

// Whether t is a cluster on RoCE (its GPUs' adapters are roce_bridges).
bool is_roce_cluster(const Topology& t);

// A cluster's nodes: the endpoints each node's own fabric joins, without
// crossing an adapter or the network, in endpoint order, the nodes ordered
// by their first endpoint. Empty for a graph without adapters.
std::vector<std::vector<int>> cluster_nodes(const Topology& t);

}  // namespace incsim::topo
