#include "topology/cluster.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace incsim::topo {

Topology make_cluster(const Topology& node, const ClusterShape& s) {
  const int g = static_cast<int>(node.endpoints().size());
  if (s.nodes < 2) throw UserError("a cluster needs at least 2 nodes, not " + std::to_string(s.nodes));
  if (g == 0) throw UserError("node platform " + node.name + " has no GPUs");
  const bool roce = s.network == ScaleOut::Roce;
  const char* const net_switch = roce ? kinds::kEthernetSwitch : kinds::kIbSwitch;
  const char* const adapter = roce ? kinds::kRoceBridge : kinds::kHca;
  for (const Node& n : node.nodes())
    if (kinds::is_adapter(n.block) || n.block == kinds::kIbSwitch)
      throw UserError("node platform " + node.name + " is itself a cluster");
  const auto up_of = [&s](int down) { return (down + s.oversubscription - 1) / s.oversubscription; };
  int most = s.leaf_ports;  // nodes a leaf holds with their up-links
  while (most > 0 && most + up_of(most) > s.leaf_ports) --most;
  if (most == 0)
    throw UserError("a rail leaf of cluster.leaf_ports=" + std::to_string(s.leaf_ports) +
                    " ports cannot hold one node and its up-link");
  const int per_rail = (s.nodes + most - 1) / most;  // leaves of a rail
  const int up = up_of((s.nodes + per_rail - 1) / per_rail);  // up-links of each leaf
  const int leaves_total = g * per_rail;
  // The fewest spines of spine_ports ports that divide the up-links; with
  // more rails than that allows (72 on NVL72 nodes), one spine per up-link,
  // each wider than a switch: it stands for a group of them.
  const int need = (leaves_total * up + s.spine_ports - 1) / s.spine_ports;
  int spines = up;
  for (int k = std::max(1, need); k <= up; ++k)
    if (up % k == 0) {
      spines = k;
      break;
    }
  Topology t;
  t.name = "cluster";
  t.family = node.family;
  t.vc_policy = node.vc_policy;
  const int per = static_cast<int>(node.nodes().size());
  // Endpoints first in each node's copy keep node k's GPUs at k * G + g.
  for (int k = 0; k < s.nodes; ++k) {
    const std::string prefix = "n" + std::to_string(k) + "_";
    for (const Node& n : node.nodes()) {
      if (n.kind == NodeKind::Endpoint) t.add_endpoint(prefix + n.name, n.ports + 1, n.block);
      else t.add_switch(prefix + n.name, n.ports, n.block);
    }
  }
  // Leaf i of a rail takes nodes first(i) to first(i + 1) - 1.
  const auto first = [&s, per_rail](int i) { return i * s.nodes / per_rail; };
  std::vector<int> leaves, spine_ids;  // leaves: [rail * per_rail + i]
  for (int r = 0; r < g; ++r)
    for (int i = 0; i < per_rail; ++i)
      leaves.push_back(t.add_switch("leaf" + std::to_string(r) + (per_rail > 1 ? "_" + std::to_string(i) : ""),
                                    (roce ? 2 : 1) * (first(i + 1) - first(i)) + up, net_switch));
  const int trunk = up / spines;
  for (int j = 0; j < spines; ++j)
    spine_ids.push_back(t.add_switch("spine" + std::to_string(j), leaves_total * trunk, net_switch));
  for (int k = 0; k < s.nodes; ++k) {
    const int base = k * per;
    for (const Link& l : node.links())
      t.connect({base + l.a.node, l.a.port}, {base + l.b.node, l.b.port}, l.bw_GBps, l.latency_ns, l.dim, l.dateline);
    int i = 0;  // k's leaf in its rail
    while (first(i + 1) <= k) ++i;
    for (int r = 0; r < g; ++r) {
      const int gpu = base + node.endpoints()[r];
      const int hca = t.add_switch("n" + std::to_string(k) + "_hca" + std::to_string(r), 2, adapter);
      t.connect({gpu, node.node(node.endpoints()[r]).ports}, {hca, 0}, s.pcie_GBps, s.pcie_latency_ns);
      t.connect({hca, 1}, {leaves[r * per_rail + i], k - first(i)}, s.net_GBps, s.net_latency_ns);
    }
  }
  // A leaf's up-links: trunk to each spine, after its node ports, on the
  // spine's ports leaf * trunk on.
  for (int l = 0; l < leaves_total; ++l) {
    const int down = first(l % per_rail + 1) - first(l % per_rail);
    for (int j = 0; j < spines; ++j)
      for (int x = 0; x < trunk; ++x)
        t.connect({leaves[l], down + j * trunk + x}, {spine_ids[j], l * trunk + x}, s.net_GBps, s.net_latency_ns);
  }
  // On RoCE, NetReduce's FPGA beside each leaf (§4, Fig. 10B): a port per
  // node, port k on the leaf's port after its up-links and k earlier ones.
  for (int l = 0; l < leaves_total && roce; ++l) {
    const int down = first(l % per_rail + 1) - first(l % per_rail);
    const int fpga = t.add_switch(t.node(leaves[l]).name + "_fpga", down, kinds::kLeafFpga);
    for (int k = 0; k < down; ++k) t.connect({leaves[l], down + up + k}, {fpga, k}, s.net_GBps, s.net_latency_ns);
  }
  t.finalize();
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
