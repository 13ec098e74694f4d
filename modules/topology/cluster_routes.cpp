// A cluster's routes from its layout (cluster_layout.h), the answers
// Topology::finalize()'s tables give on the same graph, port for port
// (test_topology checks every query on clusters of every shape against
// them), in constant time and memory that grows with a node's graph.
//
// Inside a node, a small graph answers: the node's own fabric with each GPU's
// adapter, leaf and a shared spine, as far apart as in the cluster (a node's
// rails' leaves share a spine). Between nodes the network is an up-down
// tree: leaves, spines (a pod's, on three levels) and cores, whose distances
// and equal-cost ports follow from where two switches sit (which pod, which
// spine number), every set of equal-cost ports one run of consecutive ports.
#include <string>

#include "topology/cluster_layout.h"

namespace incsim::topo {

namespace {

// The node's fabric with an adapter, a leaf and a spine per GPU's rail, as
// the cluster joins them: GPU g's last port to adapter g, adapter g to leaf
// g, every leaf to one spine. Its nodes and ports keep the node platform's
// numbers, the additions after them.
Topology node_with_adapters(const Topology& node) {
  Topology t;
  t.name = node.name;
  for (const Node& n : node.nodes()) {
    if (n.kind == NodeKind::Endpoint) t.add_endpoint(n.name, n.ports + 1, n.block);
    else t.add_switch(n.name, n.ports, n.block);
  }
  for (const Link& l : node.links()) t.connect(l.a, l.b, l.bw_GBps, l.latency_ns, l.dim, l.dateline);
  // Names of its own, whatever the node platform's are.
  std::string tag = "adapter";
  while (node.find(tag + "_spine") >= 0) tag += "_";
  const int g = static_cast<int>(node.endpoints().size());
  const int spine = t.add_switch(tag + "_spine", g);
  for (int r = 0; r < g; ++r) {
    const int e = node.endpoints()[r];
    const int hca = t.add_switch(tag + std::to_string(r), 2), leaf = t.add_switch(tag + "_leaf" + std::to_string(r), 2);
    t.connect({e, node.node(e).ports}, {hca, 0}, 1, 0);
    t.connect({hca, 1}, {leaf, 0}, 1, 0);
    t.connect({leaf, 1}, {spine, r}, 1, 0);
  }
  t.finalize();
  return t;
}

enum class Part { Gpu, NodeSwitch, Leaf, Spine, Core, Hca, Fpga };

// Where a node of the cluster sits.
struct Place {
  int id;
  Part part;
  int k = -1;      // its node (Gpu, NodeSwitch, Hca)
  int local = -1;  // its number in the node's graph (Gpu, NodeSwitch)
  int rail = -1;   // Gpu, Hca
  int leaf = -1;   // Leaf; the leaf an Hca or Fpga hangs from
  int pod = -1;    // Leaf, Spine
  int j = -1;      // Spine: its number in its pod; Core: its group
  int x = -1;      // Core: its number in its group
};

struct Way {
  int dist = -1;
  PortSpan ports;
};

class ClusterRoutes final : public RouteStructure {
 public:
  ClusterRoutes(const Topology& node, const ClusterLayout& c) : c_(c), node_(node_with_adapters(node)) {}

  int hops_from(int node, int dst) const override { return toward_endpoint(node, dst).dist; }
  PortSpan routes(int node, int dst) const override { return toward_endpoint(node, dst).ports; }
  int distance_to_switch(int node, int sw) const override { return toward_switch(node, sw).dist; }
  PortSpan routes_to_switch(int node, int sw) const override { return toward_switch(node, sw).ports; }
  // An endpoint's group is its adapter's leaf: from every other leaf, spine
  // or core the way to it goes by that leaf (from_tier).
  int endpoint_group(int dst) const override { return c_.leaf(dst % c_.gpus, c_.slot_of[dst / c_.gpus]); }
  bool routes_group_alike(int node, int group) const override {
    return node >= c_.leaf_base && node < c_.hca_base && node != c_.leaf_base + group;
  }

 private:
  Place place(int id) const {
    Place p{id, Part::Gpu};
    if (id < c_.leaf_base) {
      p.k = id / c_.per;
      p.local = id % c_.per;
      const Node& n = node_.node(p.local);
      p.part = n.kind == NodeKind::Endpoint ? Part::Gpu : Part::NodeSwitch;
      if (p.part == Part::Gpu) p.rail = n.index;
    } else if (id < c_.spine_base) {
      p.part = Part::Leaf;
      p.leaf = id - c_.leaf_base;
      p.pod = c_.pod_of[p.leaf % c_.per_rail];
    } else if (id < c_.core_base) {
      p.part = Part::Spine;
      p.pod = (id - c_.spine_base) / c_.pod_spines;
      p.j = (id - c_.spine_base) % c_.pod_spines;
    } else if (id < c_.hca_base) {
      p.part = Part::Core;
      p.j = (id - c_.core_base) / c_.group_cores;
      p.x = (id - c_.core_base) % c_.group_cores;
    } else if (id < c_.fpga_base) {
      p.part = Part::Hca;
      p.k = (id - c_.hca_base) / c_.gpus;
      p.rail = (id - c_.hca_base) % c_.gpus;
      p.leaf = c_.leaf(p.rail, c_.slot_of[p.k]);
    } else {
      p.part = Part::Fpga;
      p.leaf = id - c_.fpga_base;
    }
    return p;
  }
  bool tier(const Place& p) const { return p.part == Part::Leaf || p.part == Part::Spine || p.part == Part::Core; }
  Place leaf_place(int l) const { return place(c_.leaf_base + l); }
  int hca_of(int k, int rail) const { return c_.hca_base + k * c_.gpus + rail; }

  // Links between two leaves, spines or cores, through switches: up to
  // where their pods meet (a spine, or a core group) and down.
  int tier_dist(const Place& a, const Place& b) const {
    if (a.id == b.id) return 0;
    if (a.part == Part::Leaf && b.part == Part::Leaf) return a.pod == b.pod ? 2 : 4;
    if (a.part == Part::Leaf && b.part == Part::Spine) return a.pod == b.pod ? 1 : 3;
    if (a.part == Part::Leaf) return 2;  // a core: up through the pod's spine of its group
    if (a.part == Part::Spine && b.part == Part::Spine) return a.pod == b.pod || a.j == b.j ? 2 : 4;
    if (a.part == Part::Spine && b.part == Part::Core) return a.j == b.j ? 1 : 3;
    if (a.part == Part::Core && b.part == Part::Core) return a.j == b.j ? 2 : 4;
    return tier_dist(b, a);
  }
  // At a, the ports on a shortest way to b (a != b): each set one run of ports.
  PortSpan tier_ports(const Place& a, const Place& b) const {
    if (a.part == Part::Leaf) {
      const int down = c_.leaf_down(a.leaf);
      if (b.part == Part::Leaf) return port_range(down, down + c_.up);
      return port_range(down + b.j * c_.t1, down + (b.j + 1) * c_.t1);  // to the pod's spine of b's number or group
    }
    if (a.part == Part::Spine) {
      const int down = c_.spine_down(a.pod), all = down + c_.spine_up;
      if (b.part == Part::Leaf) {
        if (b.pod != a.pod) return port_range(down, all);
        const int q = c_.pod_place(b.leaf);
        return port_range(q * c_.t1, (q + 1) * c_.t1);
      }
      if (b.part == Part::Spine) return b.pod == a.pod ? port_range(0, down) : b.j == a.j ? port_range(down, all) : port_range(0, all);
      return b.j == a.j ? port_range(down + b.x * c_.t2, down + (b.x + 1) * c_.t2) : port_range(0, down);
    }
    if (b.part == Part::Core) return port_range(0, c_.core_ports());
    return port_range(b.pod * c_.t2, (b.pod + 1) * c_.t2);  // down to b's pod
  }

  // From tier switch x toward a switch of the network y != x.
  Way from_tier(const Place& x, const Place& y) const {
    if (tier(y)) return {tier_dist(x, y), tier_ports(x, y)};
    // An adapter or an FPGA, beside its leaf.
    const Place l = leaf_place(y.leaf);
    if (x.id != l.id) return {tier_dist(x, l) + 1, tier_ports(x, l)};
    const int down = c_.leaf_down(y.leaf);
    if (y.part == Part::Hca) {
      const int port = y.k - c_.first[c_.slot_of[y.k]];
      return {1, port_range(port, port + 1)};
    }
    return {1, port_range(down + c_.up, down + c_.up + down)};
  }
  // From any node x toward a switch of the network y, through switches.
  Way toward_net(const Place& x, const Place& y) const {
    if (x.id == y.id) return {0, {}};
    switch (x.part) {
      case Part::NodeSwitch:
        return {};  // its links lead to GPUs, which carry nothing onward
      case Part::Gpu: {
        const int last = node_.node(x.local).ports - 1;
        const int hca = hca_of(x.k, x.rail);
        const int d = hca == y.id ? 0 : toward_net(place(hca), y).dist;
        return {d + 1, port_range(last, last + 1)};
      }
      case Part::Hca:
      case Part::Fpga: {
        const Place l = leaf_place(x.leaf);
        const int d = l.id == y.id ? 0 : from_tier(l, y).dist;
        return {d + 1, x.part == Part::Hca ? port_range(1, 2) : port_range(0, c_.leaf_down(x.leaf))};
      }
      default:
        return from_tier(x, y);
    }
  }

  Way toward_endpoint(int node, int dst) const {
    const int k = dst / c_.gpus, rail = dst % c_.gpus;
    if (node < c_.leaf_base) {
      if (node / c_.per == k) return {node_.hops_from(node % c_.per, rail), node_.routes(node % c_.per, rail)};
      if (node_.node(node % c_.per).kind == NodeKind::Switch) return {};
    }
    // Through the destination's adapter.
    const int hca = hca_of(k, rail);
    if (node == hca) return {1, port_range(0, 1)};
    const Way w = toward_net(place(node), place(hca));
    return w.dist < 0 ? w : Way{w.dist + 1, w.ports};
  }

  Way toward_switch(int node, int sw) const {
    const int node_switches = c_.nodes * c_.node_switches;
    if (sw >= node_switches) return toward_net(place(node), place(c_.leaf_base + sw - node_switches));
    // A node's own switch: reached from that node's GPUs and switches alone.
    const int k = sw / c_.node_switches;
    if (node >= c_.leaf_base || node / c_.per != k) return {};
    const int local = node % c_.per, s = sw % c_.node_switches;
    return {node_.distance_to_switch(local, s), node_.routes_to_switch(local, s)};
  }

  const ClusterLayout c_;
  const Topology node_;
};

}  // namespace

std::shared_ptr<const RouteStructure> cluster_routes(const Topology& node, const ClusterLayout& c) {
  return std::make_shared<ClusterRoutes>(node, c);
}

}  // namespace incsim::topo
