// The fabric manager's multicast tables (Klenk §IV-A), followed hop by hop
// as the switches follow them: every target gets exactly one copy from any
// entry point, pull counts match the responses, results only descend from
// their home switch, and bad regions are refused.
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <random>

#include "core/error.h"
#include "topology/cluster.h"
#include "topology/multicast.h"

using namespace incsim;
using topo::MulticastFabric;
using topo::Topology;

namespace {

std::vector<int> all_gpus(const Topology& t) {
  std::vector<int> g;
  for (size_t i = 0; i < t.endpoints().size(); ++i) g.push_back(static_cast<int>(i));
  return g;
}

struct Flood {
  std::map<int, int> delivered;  // endpoint -> copies
  int copies = 0;                // switch-to-switch copies
  bool climbed_after_descending = false;
};

// A multicast of region r on pivot's tree entering switch node `sw_node`
// by port `in_port` (-1: it starts there), from endpoint src.
Flood flood(const Topology& t, const MulticastFabric& f, int r, int pivot, int sw_node, int in_port, int src) {
  Flood out;
  struct Copy {
    int node, in_port;
    bool descended;
  };
  std::deque<Copy> q{{sw_node, in_port, false}};
  const bool exclude = f.region(r).exclude_source;
  while (!q.empty()) {
    const Copy c = q.front();
    q.pop_front();
    REQUIRE(out.copies < 100000);  // a loop would never end
    const int sw = t.node(c.node).index;
    for (auto it = f.fanout_begin(r, sw, pivot); it != f.fanout_end(r, sw, pivot); ++it) {
      if (it->endpoint < 0 && it->port == c.in_port) continue;
      const topo::PortRef peer = t.peer({c.node, it->port});
      if (it->endpoint >= 0) {
        REQUIRE(peer.node == t.endpoints()[it->endpoint]);  // the port leads to the endpoint it names
        if (exclude && it->endpoint == src) continue;
        ++out.delivered[it->endpoint];
        continue;
      }
      REQUIRE(t.node(peer.node).kind == topo::NodeKind::Switch);
      ++out.copies;
      // Up means toward more switches: a leaf's up-link (ports 8-15 of a
      // fat-tree leaf) leads to a spine.
      const bool up = t.node(c.node).name.rfind("leaf", 0) == 0 && t.node(peer.node).name.rfind("spine", 0) == 0;
      if (up && c.descended) out.climbed_after_descending = true;
      q.push_back({peer.node, peer.port, c.descended || !up});
    }
  }
  return out;
}

void require_each_once(const Flood& fl, const std::vector<int>& targets, int src) {
  for (int t : targets) {
    INFO("target " << t << " source " << src);
    CHECK(fl.delivered.count(t) == (t == src ? 0u : 1u));
    if (t != src) CHECK(fl.delivered.at(t) == 1);
  }
  CHECK(fl.delivered.size() == targets.size() - (std::find(targets.begin(), targets.end(), src) != targets.end()));
}

// Every GPU multicasting from every one of its ports, on several trees.
void require_exact_multicast(const Topology& t, int pivot_step) {
  MulticastFabric f(t);
  const auto targets = all_gpus(t);
  const int r = f.add_region(1 << 20, 1 << 20, targets, true);
  for (int src : targets) {
    const int node = t.endpoints()[src];
    for (int p = 0; p < t.node(node).ports; ++p) {
      const topo::PortRef sw = t.peer({node, p});
      for (int pivot = src % pivot_step; pivot < static_cast<int>(targets.size()); pivot += pivot_step) {
        INFO("source " << src << " port " << p << " pivot " << pivot);
        require_each_once(flood(t, f, r, pivot, sw.node, sw.port, src), targets, src);
      }
    }
  }
}

}  // namespace

TEST_CASE("a multicast on DGX-2 reaches every other GPU once, from any port and on any tree", "[multicast]") {
  require_exact_multicast(topo::make_dgx2(25, 0), 1);
}

TEST_CASE("a multicast on the 128-GPU fat tree reaches every other GPU once", "[multicast]") {
  require_exact_multicast(topo::make_fattree2l(16, 25, 0), 13);
}

TEST_CASE("a multicast on a star reaches every other GPU once", "[multicast]") {
  require_exact_multicast(topo::make_star(5, 25, 0), 1);
}

TEST_CASE("a multicast to a subset of GPUs reaches only them", "[multicast]") {
  const Topology t = topo::make_fattree2l(4, 25, 0);
  MulticastFabric f(t);
  const std::vector<int> group{0, 3, 9, 30};
  const int r = f.add_region(4096, 4096, group, false);
  for (int pivot : group) {
    const int node = t.endpoints()[9];
    const Flood fl = flood(t, f, r, pivot, t.peer({node, 2}).node, t.peer({node, 2}).port, 9);
    for (int g : group) CHECK(fl.delivered.count(g) == 1);  // the source too: this region keeps it
    for (const auto& [g, n] : fl.delivered) CHECK(n == 1);
    CHECK(fl.delivered.size() == group.size());
  }
}

TEST_CASE("a pull request's first-hop entry waits for one response per other GPU", "[multicast][pull]") {
  for (const Topology& t : {topo::make_dgx2(25, 0), topo::make_fattree2l(8, 25, 0)}) {
    MulticastFabric f(t);
    const auto targets = all_gpus(t);
    const int r = f.add_region(0, 1 << 20, targets, true);
    for (int src : targets)
      for (int p = 0; p < t.node(t.endpoints()[src]).ports; ++p) {
        const int sw = t.node(t.peer({t.endpoints()[src], p}).node).index;
        CHECK(f.subtree_targets(r, sw, src) == static_cast<int>(targets.size()) - 1);
      }
  }
}

TEST_CASE("a pull request's tree sends every response through the switches that wait for it", "[multicast][pull]") {
  // Responses travel by unicast routes toward the requester; each switch on
  // the request's tree expects the responses of its subtree. Follow every
  // response and count what passes each switch.
  const Topology t = topo::make_fattree2l(4, 25, 0);
  MulticastFabric f(t);
  const auto targets = all_gpus(t);
  const int r = f.add_region(0, 1 << 20, targets, true);
  for (int req : {0, 13, 31}) {
    std::map<int, int> passing;  // switch number -> responses routed through it
    for (int g : targets) {
      if (g == req) continue;
      // The response leaves g by the port the request reached it on: the
      // port delivering to g on the tree, found by flooding.
      int node = -1;
      for (int s : t.switches())
        for (auto it = f.fanout_begin(r, t.node(s).index, req); it != f.fanout_end(r, t.node(s).index, req); ++it)
          if (it->endpoint == g && t.node(s).name.find("_0") != std::string::npos) node = s;  // plane 0
      REQUIRE(node >= 0);
      while (t.node(node).kind == topo::NodeKind::Switch) {
        ++passing[t.node(node).index];
        node = t.peer({node, t.route(node, req)}).node;
      }
    }
    for (const auto& [sw, n] : passing) CHECK(f.subtree_targets(r, sw, req) == n);
  }
}

TEST_CASE("a push result leaves its home switch only downward, once to each GPU", "[multicast][push]") {
  const Topology t = topo::make_fattree2l(16, 25, 0);
  MulticastFabric f(t);
  const auto targets = all_gpus(t);
  const int r = f.add_region(0, 64 << 20, targets, true);
  std::map<int, int> homes;
  for (uint64_t b = 0; b < 4096; b += 7) {
    const uint64_t addr = b * MulticastFabric::kBlockBytes;
    const auto home = f.home_port(r, addr);
    ++homes[home.sw];
    const Flood fl = flood(t, f, r, f.result_pivot(r, addr), t.switches()[home.sw], -1, -1);
    INFO("block " << b << " home switch " << t.node(t.switches()[home.sw]).name);
    require_each_once(fl, targets, -1);
    CHECK_FALSE(fl.climbed_after_descending);
  }
  CHECK(homes.size() > 100);  // leaves and spines alike are homes
}

TEST_CASE("home ports cover every port of every switch, evenly", "[multicast][push]") {
  const Topology t = topo::make_dgx2(25, 0);
  MulticastFabric f(t);
  const int r = f.add_region(0, 64 << 20, all_gpus(t), true);
  CHECK(f.home_ports(r) == 192);  // Klenk §VI-D: 192 ports
  std::map<std::pair<int, int>, int> load;
  const int blocks = 192 * 200;
  for (int b = 0; b < blocks; ++b) {
    const auto h = f.home_port(r, static_cast<uint64_t>(b) * MulticastFabric::kBlockBytes);
    ++load[{h.sw, h.port}];
  }
  REQUIRE(load.size() == 192);
  for (const auto& [port, n] : load) {
    CHECK(n > 140);
    CHECK(n < 260);
  }
  // Home GPUs interleave blocks.
  CHECK(f.home_gpu(r, 0) == 0);
  CHECK(f.home_gpu(r, 17 * MulticastFabric::kBlockBytes) == 1);
}

// A rail's SHARP group on a cluster: GPU 1 of each node, reached only
// through the adapters (2-port switches to routing, but no homes) and the
// rail's leaf. The nodes' own switches cannot deliver to the other nodes and
// stay out of the group's trees.
TEST_CASE("a group of one GPU per node is reached through the network, and only the rail's leaf holds its homes",
          "[multicast][push][cluster]") {
  topo::ClusterShape shape;
  shape.nodes = 3;
  shape.pcie_GBps = shape.net_GBps = 50;
  const Topology t = topo::make_cluster(topo::make_star(4, 25, 0), shape);
  MulticastFabric f(t, topo::HomeMapping::Interleave,
                    [&t](int node) { return t.node(node).block != topo::kinds::kHca; });
  const std::vector<int> rail{1, 5, 9};
  const int r = f.add_region(0, 1 << 20, rail, false);
  const int leaf = t.find("leaf1");
  for (uint64_t b = 0; b < 64; ++b) {
    const uint64_t addr = b * MulticastFabric::kBlockBytes;
    const auto home = f.home_port(r, addr);
    REQUIRE(t.switches()[home.sw] == leaf);
    INFO("block " << b);
    // The sum, multicast from the leaf, reaches each member once, the writer too.
    require_each_once(flood(t, f, r, f.result_pivot(r, addr), leaf, -1, -1), rail, -1);
  }
  // A node's switch has no part in the trees.
  const int sw = t.node(t.find("n0_sw0")).index;
  for (int pivot : rail) CHECK(f.fanout_begin(r, sw, pivot) == f.fanout_end(r, sw, pivot));
  // The group of one node's GPUs keeps its switch.
  const int node = f.add_region(2 << 20, 1 << 20, {0, 1, 2, 3}, true);
  CHECK(f.fanout_begin(node, sw, 0) != f.fanout_end(node, sw, 0));
  CHECK(t.node(t.switches()[f.home_port(node, 0).sw]).name == "n0_sw0");
}

TEST_CASE("a ring of switches is refused: its multicast trees could deadlock", "[multicast][errors]") {
  // Three switches in a ring, two GPUs on each: a tree toward a GPU on s0
  // takes s1 -> s0 -> s2, one toward s1 takes s2 -> s1 -> s0, and so on: a
  // cycle of channels that unicast alone does not have.
  Topology t;
  t.name = "ring3";
  for (int s = 0; s < 3; ++s) t.add_switch("s" + std::to_string(s), 4);
  for (int g = 0; g < 6; ++g) {
    const int e = t.add_endpoint("gpu" + std::to_string(g), 1);
    t.connect({e, 0}, {t.find("s" + std::to_string(g / 2)), g % 2}, 25, 0);
  }
  for (int s = 0; s < 3; ++s) t.connect({t.find("s" + std::to_string(s)), 2}, {t.find("s" + std::to_string((s + 1) % 3)), 3}, 25, 0);
  t.finalize();
  MulticastFabric f(t);
  try {
    f.add_region(0, 4096, all_gpus(t), true);
    FAIL("accepted");
  } catch (const UserError& e) {
    CHECK_THAT(e.what(), Catch::Contains("deadlock"));
  }
}

TEST_CASE("bad multicast regions are refused with a sentence naming the problem", "[multicast][errors]") {
  const Topology t = topo::make_dgx2(25, 0);
  MulticastFabric f(t);
  f.add_region(0x1000, 0x1000, {0, 1, 2}, true);
  auto refused = [&](uint64_t start, uint64_t size, std::vector<int> g, const char* needle) {
    INFO(needle);
    try {
      f.add_region(start, size, g, true);
      FAIL("accepted");
    } catch (const UserError& e) {
      CHECK_THAT(e.what(), Catch::Contains(needle));
    }
  };
  refused(0x1800, 0x1000, {0, 1}, "overlaps");
  refused(0x0800, 0x1000, {0, 1}, "overlaps");
  refused(0x4000, 0x100, {0, 16}, "GPU 16");
  refused(0x4000, 0x100, {0, -1}, "GPU -1");
  refused(0x4000, 0x100, {3, 3}, "twice");
  refused(0x4000, 0x100, {3}, "at least two");
  refused(0x4000, 0, {0, 1}, "empty");
  CHECK(f.find(0x1800) == 0);
  CHECK(f.find(0x2000) == -1);
}

// A rail over two leaves (5 nodes on leaves of 6 ports: 3 nodes and 3
// up-links at most, so 2 and 3 nodes): SHARP's tree of switches. Every
// block's contributions meet in each leaf holding two or more of its
// members, which counts them; the root (a spine, or a leaf) counts the
// whole group; nothing else reduces.
TEST_CASE("a rail over two leaves: each leaf is a merge point counting its members, the root the group",
          "[multicast][push][cluster][sharp]") {
  topo::ClusterShape shape;
  shape.nodes = 5;
  shape.pcie_GBps = shape.net_GBps = 50;
  shape.leaf_ports = 6;
  const Topology t = topo::make_cluster(topo::make_star(4, 25, 0), shape);
  const int a = t.find("leaf1_0"), b = t.find("leaf1_1");
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  CHECK(t.find("leaf1") < 0);
  CHECK(t.node(a).ports == 2 + 3);
  CHECK(t.node(b).ports == 3 + 3);
  MulticastFabric f(t, topo::HomeMapping::Interleave,
                    [&t](int node) { return t.node(node).block != topo::kinds::kHca; });
  const std::vector<int> rail{1, 5, 9, 13, 17};
  // Klenk's tables reduce at the home alone: a fabric that did not ask for
  // aggregation trees has no merge points.
  const int klenk = f.add_region(0, 1 << 20, rail, false);
  for (int s = 0; s < static_cast<int>(t.switches().size()); ++s) CHECK(f.merge_count(klenk, 0, s) == 0);
  f.aggregate_on_the_way();
  const int r = f.add_region(1 << 20, 1 << 20, rail, false);
  const int sa = t.node(a).index, sb = t.node(b).index;
  bool spine_root = false, leaf_root = false;
  for (uint64_t k = 0; k < 256; ++k) {
    const uint64_t addr = (1 << 20) + k * MulticastFabric::kBlockBytes;
    const int root = f.home_port(r, addr).sw;
    INFO("block " << k << " homed at " << t.node(t.switches()[root]).name);
    CHECK(f.merge_count(r, addr, root) == 0);  // the home counts the whole group
    CHECK(f.merge_count(r, addr, sa) == (root == sa ? 0 : 2));
    CHECK(f.merge_count(r, addr, sb) == (root == sb ? 0 : 3));
    spine_root = spine_root || t.node(t.switches()[root]).name.rfind("spine", 0) == 0;
    leaf_root = leaf_root || root == sa || root == sb;
    for (int s = 0; s < static_cast<int>(t.switches().size()); ++s)
      if (s != sa && s != sb) CHECK(f.merge_count(r, addr, s) == 0);
  }
  CHECK(spine_root);
  CHECK(leaf_root);
}

TEST_CASE("multicast groups: a window holds one at every NVSwitch between its members, up to the limit and the job's share",
          "[multicast][groups]") {
  // Three nodes of a 4-GPU star; a rail's group meets on no node switch.
  topo::ClusterShape shape;
  shape.nodes = 3;
  shape.pcie_GBps = shape.net_GBps = 50;
  const Topology t = topo::make_cluster(topo::make_star(4, 25, 0), shape);
  MulticastFabric f(t);
  const auto is_node_switch = [&t](int node) { return t.node(node).block == topo::kinds::kNvSwitch; };
  f.limit_groups({2, is_node_switch, [](int job) { return job == 1 ? 1u : 2u; },
                  [](int) { return std::string("partitioned share"); }, "the switches' multicast groups", "groups"});
  const int n0 = t.node(t.find("n0_sw0")).index, n1 = t.node(t.find("n1_sw0")).index;
  const int a = f.claim_window({0, 1});
  const int rail = f.claim_window({1, 5, 9});
  CHECK(f.groups_held(n0) == 1);
  CHECK(f.groups_held(n1) == 0);  // the rail's members meet on the network's switches
  const int b = f.claim_window({2, 3});
  CHECK(f.groups_held(n0) == 2);
  // A third on node 0's switch is refused, nothing claimed; node 1's is free.
  CHECK_THROWS_WITH(f.claim_window({0, 3}), Catch::Contains("needs a multicast group at n0_sw0, which holds all of "
                                                             "groups=2 already"));
  CHECK(f.groups_held(n0) == 2);
  const int c = f.claim_window({4, 5});
  f.release_window(a);
  CHECK(f.groups_held(n0) == 1);
  // Job 1 may hold one of a switch's groups.
  f.set_tenant(1);
  const int d = f.claim_window({0, 1});
  CHECK(f.groups_held(n0, 1) == 1);
  f.release_window(b);
  CHECK_THROWS_WITH(f.claim_window({2, 3}), Catch::Contains("but its partitioned share is 1 of groups=2 there, 1 of "
                                                             "them held already"));
  f.release_window(d);
  CHECK(f.groups_held(n0, 1) == 0);
  CHECK(f.groups_held(n0) == 0);
  for (int w : {rail, c}) f.release_window(w);
  CHECK(f.groups_held(n1) == 0);
}

// Home switches lie on a shortest path between two members, by the members'
// distances (both fidelities ask this one function). Two members alike (the
// first two here) are a pair too: their nearest switch s0 is a home though no
// path between unlike members crosses it; alone, the first is no pair.
TEST_CASE("home switches: on a shortest path between two members, two alike members a pair", "[multicast][homes]") {
  const std::vector<int> a{1, 5, 2}, b{5, 1, 2};
  CHECK(topo::on_shortest_paths({a, a, b}) == std::vector<bool>{true, false, true});
  CHECK(topo::on_shortest_paths({a, b}) == std::vector<bool>{false, false, true});
  // Unreached switches (distance 0 or less) are on no path.
  CHECK(topo::on_shortest_paths({{1, 0}, {1, -1}}) == std::vector<bool>{true, false});
  CHECK(topo::on_shortest_paths({a}) == std::vector<bool>{false, false, false});
}

// The classes are kept over the switches every member reaches; the others
// (a node's NVSwitches) are kept apart. The answer is still every pair of
// members': checked against that definition on random distances where each
// switch is unreached by none, some or most members.
TEST_CASE("home switches: switches only some members reach are kept apart, the answer every pair's",
          "[multicast][homes]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t M = 1 + rng() % 7, S = 1 + rng() % 6;
    std::vector<std::vector<int>> d(M, std::vector<int>(S));
    for (size_t s = 0; s < S; ++s) {
      const unsigned unreached = rng() % 3;  // 0: every member reaches s; 1: some do not; 2: most do not
      for (size_t m = 0; m < M; ++m)
        d[m][s] = unreached && rng() % (unreached == 1 ? 4 : 2) == 0 ? 0 : 1 + static_cast<int>(rng() % 3);
    }
    if (trial % 2) d.push_back(d.front());  // two members alike
    std::vector<bool> want(S, false);
    for (size_t a = 0; a < d.size(); ++a)
      for (size_t b = a + 1; b < d.size(); ++b) {
        int best = -1;
        for (size_t s = 0; s < S; ++s)
          if (d[a][s] > 0 && d[b][s] > 0 && (best < 0 || d[a][s] + d[b][s] < best)) best = d[a][s] + d[b][s];
        for (size_t s = 0; s < S; ++s) want[s] = want[s] || (d[a][s] > 0 && d[b][s] > 0 && d[a][s] + d[b][s] == best);
      }
    INFO("trial " << trial);
    CHECK(topo::on_shortest_paths(d) == want);
  }
}
