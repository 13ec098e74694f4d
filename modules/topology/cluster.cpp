#include "topology/cluster.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace incsim::topo {

Topology make_cluster(const Topology& node, const ClusterShape& s) {
  const int g = static_cast<int>(node.endpoints().size());
  if (s.nodes < 2) throw UserError("a cluster needs at least 2 nodes, not " + std::to_string(s.nodes));
  if (g == 0) throw UserError("node platform " + node.name + " has no GPUs");
  for (const Node& n : node.nodes())
    if (n.block == kinds::kHca || n.block == kinds::kIbSwitch)
      throw UserError("node platform " + node.name + " is itself a cluster");
  const int up = (s.nodes + s.oversubscription - 1) / s.oversubscription;
  // The fewest spines of spine_ports ports that divide the up-links; with
  // more rails than that allows (72 on NVL72 nodes), one spine per up-link,
  // each wider than a switch: it stands for a group of them.
  const int need = (g * up + s.spine_ports - 1) / s.spine_ports;
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
  std::vector<int> leaves, spine_ids;
  for (int r = 0; r < g; ++r) leaves.push_back(t.add_switch("leaf" + std::to_string(r), s.nodes + up, kinds::kIbSwitch));
  for (int j = 0; j < spines; ++j)
    spine_ids.push_back(t.add_switch("spine" + std::to_string(j), g * (up / spines), kinds::kIbSwitch));
  for (int k = 0; k < s.nodes; ++k) {
    const int base = k * per;
    for (const Link& l : node.links())
      t.connect({base + l.a.node, l.a.port}, {base + l.b.node, l.b.port}, l.bw_GBps, l.latency_ns, l.dim, l.dateline);
    for (int r = 0; r < g; ++r) {
      const int gpu = base + node.endpoints()[r];
      const int hca = t.add_switch("n" + std::to_string(k) + "_hca" + std::to_string(r), 2, kinds::kHca);
      t.connect({gpu, node.node(node.endpoints()[r]).ports}, {hca, 0}, s.pcie_GBps, s.pcie_latency_ns);
      t.connect({hca, 1}, {leaves[r], k}, s.net_GBps, s.net_latency_ns);
    }
  }
  // Leaf r's up-links: up / spines to each spine, on the spine's ports r * (up / spines) on.
  const int trunk = up / spines;
  for (int r = 0; r < g; ++r)
    for (int j = 0; j < spines; ++j)
      for (int x = 0; x < trunk; ++x)
        t.connect({leaves[r], s.nodes + j * trunk + x}, {spine_ids[j], r * trunk + x}, s.net_GBps, s.net_latency_ns);
  t.finalize();
  return t;
}

std::vector<std::vector<int>> cluster_nodes(const Topology& t) {
  auto scale_out = [&t](int id) { return t.node(id).block == kinds::kHca || t.node(id).block == kinds::kIbSwitch; };
  bool any = false;
  for (size_t id = 0; id < t.nodes().size(); ++id) any = any || t.node(static_cast<int>(id)).block == kinds::kHca;
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
