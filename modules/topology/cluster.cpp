#include "topology/cluster.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "topology/cluster_layout.h"

namespace incsim::topo {

namespace {
// The most down-links a switch of `ports` ports holds with its up-links
// (ceil(down / oversubscription)), 0 if not even one.
int most_down(int ports, int oversubscription) {
  int down = ports;
  while (down > 0 && down + (down + oversubscription - 1) / oversubscription > ports) --down;
  return down;
}

// The fewest switches that divide `links` up-links among them, each taking
// `below` x (links / k) of them, at most `ports`; or one per link (each
// wider than `ports`: it stands for a group of switches) when none does.
int fewest_dividing(int links, int below, int ports) {
  for (int k = 1; k <= links; ++k)
    if (links % k == 0 && static_cast<int64_t>(below) * (links / k) <= ports) return k;
  return links;
}
}  // namespace

ClusterLayout cluster_layout(const Topology& node, const ClusterShape& s) {
  ClusterLayout c;
  c.nodes = s.nodes;
  c.gpus = static_cast<int>(node.endpoints().size());
  if (s.nodes < 2) throw UserError("a cluster needs at least 2 nodes, not " + std::to_string(s.nodes));
  if (c.gpus == 0) throw UserError("node platform " + node.name + " has no GPUs");
  c.roce = s.network == ScaleOut::Roce;
  for (const Node& n : node.nodes())
    if (kinds::is_adapter(n.block) || n.block == kinds::kIbSwitch)
      throw UserError("node platform " + node.name + " is itself a cluster");
  c.per = static_cast<int>(node.nodes().size());
  c.node_switches = static_cast<int>(node.switches().size());
  const auto up_of = [&s](int down) { return (down + s.oversubscription - 1) / s.oversubscription; };
  const int most = most_down(s.leaf_ports, s.oversubscription);  // nodes a leaf holds with their up-links
  if (most == 0)
    throw UserError("a rail leaf of cluster.leaf_ports=" + std::to_string(s.leaf_ports) +
                    " ports cannot hold one node and its up-link");
  c.per_rail = (s.nodes + most - 1) / most;
  c.up = up_of((s.nodes + c.per_rail - 1) / c.per_rail);  // of the largest share
  for (int i = 0; i <= c.per_rail; ++i) c.first.push_back(static_cast<int>(int64_t{i} * s.nodes / c.per_rail));
  for (int i = 0; i < c.per_rail; ++i) c.slot_of.insert(c.slot_of.end(), c.first[i + 1] - c.first[i], i);
  // Two levels while every leaf reaches every spine: up to 64 leaves of
  // 64-port switches, 8 SUs of 32 DGX nodes; three beyond (the DGX SuperPOD
  // B200 reference architecture: 8 SUs on leaves and spines, 16 and more
  // with cores). A rail of one leaf (NVL72's 72 rails) keeps two levels, its
  // spines wider than a switch.
  c.levels = c.leaves() > s.spine_ports && c.per_rail > 1 ? 3 : 2;
  if (c.levels == 2) {
    c.pod_first = {0, c.per_rail};
    c.pod_spines = fewest_dividing(c.up, c.leaves(), s.spine_ports);
  } else {
    const int down = most_down(s.spine_ports, s.spine_oversubscription);
    if (down == 0)
      throw UserError("a spine of cluster.spine_ports=" + std::to_string(s.spine_ports) +
                      " ports cannot hold one leaf and its up-link");
    c.pods = (c.per_rail + std::max(1, down / c.gpus) - 1) / std::max(1, down / c.gpus);
    for (int p = 0; p <= c.pods; ++p) c.pod_first.push_back(p * c.per_rail / c.pods);
    const int slots = (c.per_rail + c.pods - 1) / c.pods;  // of the largest pod
    c.pod_spines = fewest_dividing(c.up, c.gpus * slots, down);
    c.t1 = c.up / c.pod_spines;
    // Every spine has the up-links of a largest pod's.
    c.spine_up = (c.gpus * slots * c.t1 + s.spine_oversubscription - 1) / s.spine_oversubscription;
    c.group_cores = fewest_dividing(c.spine_up, c.pods, s.core_ports);
    c.t2 = c.spine_up / c.group_cores;
  }
  c.t1 = c.up / c.pod_spines;
  for (int p = 0; p < c.pods; ++p) c.pod_of.insert(c.pod_of.end(), c.pod_slots(p), p);
  c.leaf_base = s.nodes * c.per;
  c.spine_base = c.leaf_base + c.leaves();
  c.core_base = c.spine_base + c.spines();
  c.hca_base = c.core_base + c.cores();
  c.fpga_base = c.hca_base + s.nodes * c.gpus;
  c.total_nodes = c.fpga_base + (c.roce ? c.leaves() : 0);
  const size_t adapters = static_cast<size_t>(s.nodes) * c.gpus;
  c.total_links = static_cast<size_t>(s.nodes) * node.links().size() + 2 * adapters +
                  static_cast<size_t>(c.leaves()) * c.up + static_cast<size_t>(c.spines()) * c.spine_up +
                  (c.roce ? adapters : 0);
  return c;
}

int cluster_levels(const Topology& node, const ClusterShape& s) { return cluster_layout(node, s).levels; }

Topology make_cluster(const Topology& node, const ClusterShape& s) {
  const ClusterLayout c = cluster_layout(node, s);
  const char* const net_switch = c.roce ? kinds::kEthernetSwitch : kinds::kIbSwitch;
  const char* const adapter = c.roce ? kinds::kRoceBridge : kinds::kHca;
  Topology t;
  t.name = "cluster";
  t.family = node.family;
  t.vc_policy = node.vc_policy;
  t.from_file = node.from_file;
  t.reserve(c.total_nodes, c.total_links);
  // Endpoints first in each node's copy keep node k's GPUs at k * G + g.
  for (int k = 0; k < s.nodes; ++k) {
    const std::string prefix = "n" + std::to_string(k) + "_";
    for (const Node& n : node.nodes()) {
      if (n.kind == NodeKind::Endpoint) t.add_endpoint(prefix + n.name, n.ports + 1, n.block);
      else t.add_switch(prefix + n.name, n.ports, n.block);
    }
  }
  for (int r = 0; r < c.gpus; ++r)
    for (int i = 0; i < c.per_rail; ++i)
      t.add_switch("leaf" + std::to_string(r) + (c.per_rail > 1 ? "_" + std::to_string(i) : ""),
                   (c.roce ? 2 : 1) * (c.first[i + 1] - c.first[i]) + c.up, net_switch);
  for (int p = 0; p < c.pods; ++p)
    for (int j = 0; j < c.pod_spines; ++j)
      t.add_switch("spine" + (c.levels == 3 ? std::to_string(p) + "_" : std::string()) + std::to_string(j),
                   c.spine_down(p) + c.spine_up, net_switch);
  for (int j = 0; j < c.pod_spines && c.levels == 3; ++j)
    for (int x = 0; x < c.group_cores; ++x)
      t.add_switch("core" + std::to_string(j) + "_" + std::to_string(x), c.core_ports(), net_switch);
  for (int k = 0; k < s.nodes; ++k) {
    const int base = k * c.per;
    for (const Link& l : node.links())
      t.connect({base + l.a.node, l.a.port}, {base + l.b.node, l.b.port}, l.bw_GBps, l.latency_ns, l.dim, l.dateline);
    const int i = c.slot_of[k];  // k's leaf in its rail
    for (int r = 0; r < c.gpus; ++r) {
      const int gpu = base + node.endpoints()[r];
      const int hca = t.add_switch("n" + std::to_string(k) + "_hca" + std::to_string(r), 2, adapter);
      t.connect({gpu, node.node(node.endpoints()[r]).ports}, {hca, 0}, s.pcie_GBps, s.pcie_latency_ns);
      t.connect({hca, 1}, {c.leaf_base + c.leaf(r, i), k - c.first[i]}, s.net_GBps, s.net_latency_ns);
    }
  }
  // A leaf's up-links: t1 to each spine of its pod, after its node ports,
  // on the spine's ports place * t1 on (its place among the pod's leaves).
  for (int l = 0; l < c.leaves(); ++l) {
    const int down = c.leaf_down(l), first_spine = c.spine_base + c.pod_of[l % c.per_rail] * c.pod_spines;
    for (int j = 0; j < c.pod_spines; ++j)
      for (int x = 0; x < c.t1; ++x)
        t.connect({c.leaf_base + l, down + j * c.t1 + x}, {first_spine + j, c.pod_place(l) * c.t1 + x}, s.net_GBps,
                  s.net_latency_ns);
  }
  // A spine's up-links: t2 to each core of its group, after its down-links,
  // on the core's ports pod * t2 on.
  for (int p = 0; p < c.pods && c.levels == 3; ++p)
    for (int j = 0; j < c.pod_spines; ++j)
      for (int x = 0; x < c.group_cores; ++x)
        for (int y = 0; y < c.t2; ++y)
          t.connect({c.spine_base + p * c.pod_spines + j, c.spine_down(p) + x * c.t2 + y},
                    {c.core_base + j * c.group_cores + x, p * c.t2 + y}, s.net_GBps, s.net_latency_ns);
  // On RoCE, NetReduce's FPGA beside each leaf (§4, Fig. 10B): a port per
  // node, port k on the leaf's port after its up-links and k earlier ones.
  for (int l = 0; l < c.leaves() && c.roce; ++l) {
    const int down = c.leaf_down(l), leaf = c.leaf_base + l;
    const int fpga = t.add_switch(t.node(leaf).name + "_fpga", down, kinds::kLeafFpga);
    for (int k = 0; k < down; ++k) t.connect({leaf, down + c.up + k}, {fpga, k}, s.net_GBps, s.net_latency_ns);
  }
  t.finalize(cluster_routes(node, c));
  return t;
}

bool is_roce_cluster(const Topology& t) {
  return std::any_of(t.nodes().begin(), t.nodes().end(), [](const Node& n) { return n.block == kinds::kRoceBridge; });
}

std::vector<std::vector<int>> cluster_nodes(const Topology& t) {
  auto scale_out = [&t](int id) {
    const std::string& b = t.node(id).block;
    return kinds::is_adapter(b) || b == kinds::kIbSwitch || b == kinds::kEthernetSwitch;
  };
  bool any = false;
  for (size_t id = 0; id < t.nodes().size(); ++id) any = any || kinds::is_adapter(t.node(static_cast<int>(id)).block);
  if (!any) return {};
  std::vector<int> seen(t.nodes().size(), 0);
  std::vector<std::vector<int>> nodes;
  for (int e : t.endpoints()) {
    if (seen[e]) continue;
    std::vector<int> members, stack{e};
    seen[e] = 1;
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      if (t.node(v).kind == NodeKind::Endpoint) members.push_back(t.node(v).index);
      for (int p = 0; p < t.node(v).ports; ++p) {
        const int w = t.peer({v, p}).node;
        if (w >= 0 && !seen[w] && !scale_out(w)) {
          seen[w] = 1;
          stack.push_back(w);
        }
      }
    }
    std::sort(members.begin(), members.end());
    nodes.push_back(std::move(members));
  }
  return nodes;
}

}  // namespace incsim::topo
