#pragma once
// Where everything of a cluster sits (cluster.h): how many leaves, spines
// and cores, which ports join them, and the node numbers of each kind. The
// builder wires the graph from it and the cluster's routes are computed from
// it, so the two cannot disagree. Plain C++, private to modules/topology.
#include <cstddef>
#include <memory>
#include <vector>

#include "topology/cluster.h"

namespace incsim::topo {

struct ClusterLayout {
  int nodes = 0;          // the cluster's nodes
  int gpus = 0;           // G: a node's GPUs, so rails
  int per = 0;            // nodes of the node platform's graph (endpoints and switches)
  int node_switches = 0;  // switches of the node platform's graph
  bool roce = false;
  int levels = 2;
  // Leaves: a rail has per_rail leaves ("slots"); slot i holds nodes
  // first[i] to first[i + 1] - 1; every leaf has `up` up-links.
  int per_rail = 0, up = 0;
  std::vector<int> first;    // [slot], one past the last
  std::vector<int> slot_of;  // [node]
  // Pods: the slots whose leaves (of every rail) share spines; two levels
  // have one pod of every slot. Each leaf of a pod has t1 links to each of
  // the pod's pod_spines spines; a spine has spine_up up-links, t2 to each
  // of the group_cores cores of its group (one group per spine number j).
  int pods = 1, pod_spines = 0, t1 = 0;
  std::vector<int> pod_first;  // [pod]: its first slot, one past the last
  std::vector<int> pod_of;     // [slot]
  int spine_up = 0, group_cores = 0, t2 = 0;
  // Node numbers: the nodes' copies [0, nodes * per), then leaves (rail by
  // rail, slot by slot), spines (pod by pod), cores (group by group), the
  // adapters (node by node, rail by rail) and on RoCE the FPGAs (leaf by leaf).
  int leaf_base = 0, spine_base = 0, core_base = 0, hca_base = 0, fpga_base = 0, total_nodes = 0;
  size_t total_links = 0;

  int leaves() const { return gpus * per_rail; }
  int leaf(int rail, int slot) const { return rail * per_rail + slot; }  // a leaf's number
  int leaf_down(int l) const { return first[l % per_rail + 1] - first[l % per_rail]; }
  int pod_slots(int p) const { return pod_first[p + 1] - pod_first[p]; }
  // Leaf l's place among its pod's leaves (rail by rail), which numbers its ports on the pod's spines.
  int pod_place(int l) const {
    const int p = pod_of[l % per_rail];
    return l / per_rail * pod_slots(p) + l % per_rail - pod_first[p];
  }
  int spine_down(int p) const { return gpus * pod_slots(p) * t1; }
  int spines() const { return pods * pod_spines; }
  int cores() const { return levels == 3 ? pod_spines * group_cores : 0; }
  int core_ports() const { return pods * t2; }
};

// The layout of `node` x s.nodes with shape s; UserError as make_cluster says.
ClusterLayout cluster_layout(const Topology& node, const ClusterShape& s);
// The routes of the cluster graph make_cluster wires by layout c
// (cluster_routes.cpp), node its node platform.
std::shared_ptr<const RouteStructure> cluster_routes(const Topology& node, const ClusterLayout& c);

}  // namespace incsim::topo
