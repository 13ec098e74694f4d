// Topology graph (plain C++, STYLE.md convention 9): the built-in DGX-2 and
// star, routing, the YAML round trip, and the errors bad descriptions give.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <vector>
#include <sstream>
#include <string>

#include "core/error.h"
#include "topology/cluster.h"
#include "topology/dgx1.h"
#include "topology/direct_networks.h"
#include "topology/topology.h"
#include "temp_file.h"

using namespace incsim;
using namespace incsim::topo;

namespace {

// Follows the routing tables from endpoint src to endpoint dst; returns the
// number of switches passed, or -1 if the walk does not reach dst.
int walk(const Topology& t, int src, int dst) {
  int node = t.endpoints()[src];
  int out = 0;  // endpoints inject on any port; take each in turn below
  (void)out;
  int switches = 0;
  // First hop: the route from the source endpoint itself.
  int port = t.route(node, dst);
  if (port < 0) return -1;
  for (int guard = 0; guard < 64; ++guard) {
    PortRef next = t.peer({node, port});
    if (next.node < 0) return -1;
    node = next.node;
    if (node == t.endpoints()[dst]) return switches;
    if (t.node(node).kind == NodeKind::Endpoint) return -1;  // transit through another GPU
    ++switches;
    port = t.route(node, dst);
    if (port < 0) return -1;
  }
  return -1;
}

// Same links (ends, bandwidth, latency) in the same order.
void require_same(const Topology& a, const Topology& b) {
  REQUIRE(a.nodes().size() == b.nodes().size());
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    CHECK(a.nodes()[i].name == b.nodes()[i].name);
    CHECK(a.nodes()[i].kind == b.nodes()[i].kind);
    CHECK(a.nodes()[i].ports == b.nodes()[i].ports);
    CHECK(a.nodes()[i].block == b.nodes()[i].block);
  }
  REQUIRE(a.links().size() == b.links().size());
  for (size_t i = 0; i < a.links().size(); ++i) {
    const Link& x = a.links()[i];
    const Link& y = b.links()[i];
    CHECK(a.port_name(x.a) == b.port_name(y.a));
    CHECK(a.port_name(x.b) == b.port_name(y.b));
    CHECK(x.bw_GBps == y.bw_GBps);
    CHECK(x.latency_ns == y.latency_ns);
    CHECK(x.dim == y.dim);
    CHECK(x.dateline == y.dateline);
  }
  CHECK(a.family == b.family);
  CHECK(a.grid.kx == b.grid.kx);
  CHECK(a.grid.ky == b.grid.ky);
  CHECK(a.grid.wrap == b.grid.wrap);
  CHECK(a.routing == b.routing);
  CHECK(a.vc_policy == b.vc_policy);
  for (size_t n = 0; n < a.nodes().size(); ++n)
    for (size_t d = 0; d < a.endpoints().size(); ++d) {
      if (static_cast<int>(n) == a.endpoints()[d]) continue;
      CHECK(a.route(static_cast<int>(n), static_cast<int>(d)) == b.route(static_cast<int>(n), static_cast<int>(d)));
    }
  for (int s : a.switches())
    for (int i = 0; i < a.node(s).ports; ++i)
      for (int o = 0; o < a.node(s).ports; ++o) CHECK(a.vc_rule(s, i, o) == b.vc_rule(s, i, o));
}

// Every query of t, which its builder routes by structure, gives what
// finalize()'s tables give on the same graph: distances, and the same
// ports in the same order, toward every endpoint and every switch.
// Also checks, against the tables, every group the structure says a node
// routes alike; returns how many (node, endpoint) pairs it found so.
uint64_t require_structure_matches_tables(const Topology& t) {
  REQUIRE_FALSE(t.has_route_tables());
  Topology tables = t;
  if (t.routing == "dimension-order") tables.finalize(dimension_order_routes(tables));
  else tables.finalize();
  REQUIRE(tables.has_route_tables());
  const auto same = [](PortSpan a, PortSpan b) { return std::vector<int16_t>(a.begin(), a.end()) == std::vector<int16_t>(b.begin(), b.end()); };
  uint64_t queries = 0, wrong = 0;
  std::string first;
  const auto check = [&](bool ok, int u, const char* what, int to) {
    ++queries;
    if (ok || wrong++) return;
    first = std::string(what) + " at " + t.node(u).name + " toward " + std::to_string(to);
  };
  std::map<int, int> first_of;  // [group]: its first endpoint
  for (int d = 0; d < static_cast<int>(t.endpoints().size()); ++d) first_of.emplace(t.endpoint_group(d), d);
  uint64_t alike = 0;
  for (int u = 0; u < static_cast<int>(t.nodes().size()); ++u) {
    for (int d = 0; d < static_cast<int>(t.endpoints().size()); ++d) {
      check(t.hops_from(u, d) == tables.hops_from(u, d), u, "hops_from", d);
      check(t.route(u, d) == tables.route(u, d), u, "route", d);
      check(same(t.routes(u, d), tables.routes(u, d)), u, "routes", d);
      const int g = t.endpoint_group(d), f = first_of.at(g);
      if (f == d || !t.routes_group_alike(u, g)) continue;
      ++alike;
      const PortSpan r = tables.routes(u, d);
      check(same(r, tables.routes(u, f)) && tables.hops_from(u, d) == tables.hops_from(u, f) &&
                tables.route(u, d) == r[static_cast<size_t>(d) % r.size()],
            u, "routes of a group routed alike", d);
    }
    for (int s = 0; s < static_cast<int>(t.switches().size()); ++s) {
      check(t.distance_to_switch(u, s) == tables.distance_to_switch(u, s), u, "distance_to_switch", s);
      check(same(t.routes_to_switch(u, s), tables.routes_to_switch(u, s)), u, "routes_to_switch", s);
    }
  }
  INFO(t.name << ": " << wrong << " of " << queries << " queries differ, the first " << first);
  CHECK(wrong == 0);
  return alike;
}

// Loading `text` as a platform file fails with a UserError containing `needle`.
void require_yaml_error(const std::string& text, const std::string& needle) {
  TempFile f(text);
  REQUIRE_THROWS_WITH(load_yaml(f.path, 25, 0), Catch::Contains(needle));
}

}  // namespace

TEST_CASE("DGX-2 has 16 GPUs with 6 links and 12 switches of 16 ports", "[topology]") {
  Topology t = make_dgx2(25, 0);
  REQUIRE(t.endpoints().size() == 16);
  REQUIRE(t.switches().size() == 12);
  // 16 x 6 GPU links + 6 x 8 trunk links.
  CHECK(t.links().size() == 16 * 6 + 6 * 8);
  for (int e : t.endpoints()) {
    CHECK(t.node(e).ports == 6);
    std::set<int> switches;
    for (int p = 0; p < 6; ++p) {
      PortRef peer = t.peer({e, p});
      REQUIRE(peer.node >= 0);
      CHECK(t.node(peer.node).kind == NodeKind::Switch);
      switches.insert(peer.node);
    }
    CHECK(switches.size() == 6);  // six links to six different switches
  }
  for (int s : t.switches()) {
    const Node& sw = t.node(s);
    CHECK(sw.ports == 16);
    const int group = sw.index / 6;  // switches 0-5: group A, 6-11: group B
    std::set<int> gpus, other_switches;
    int trunk = 0;
    for (int p = 0; p < 16; ++p) {
      PortRef peer = t.peer({s, p});
      REQUIRE(peer.node >= 0);
      const Node& n = t.node(peer.node);
      if (n.kind == NodeKind::Endpoint) {
        CHECK(n.index / 8 == group);  // only the GPUs of its own group
        gpus.insert(n.index);
      } else {
        CHECK(n.index / 6 != group);  // trunks go to the other group
        other_switches.insert(peer.node);
        ++trunk;
      }
    }
    CHECK(gpus.size() == 8);
    CHECK(trunk == 8);
    CHECK(other_switches.size() == 1);  // all 8 trunks to one switch
  }
  for (const Link& l : t.links()) {
    CHECK(l.bw_GBps == 25);
    CHECK(l.latency_ns == 0);
  }
}

TEST_CASE("DGX-2 routes reach every GPU from every GPU through 1 or 2 switches", "[topology]") {
  Topology t = make_dgx2(25, 0);
  for (int s = 0; s < 16; ++s)
    for (int d = 0; d < 16; ++d) {
      if (s == d) continue;
      INFO("gpu" << s << " -> gpu" << d);
      const int switches = walk(t, s, d);
      const bool same_group = s / 8 == d / 8;
      CHECK(switches == (same_group ? 1 : 2));
      CHECK(t.hops(s, d) == (same_group ? 2 : 3));
      CHECK((t.hops(s, d) == 2 || t.hops(s, d) == 3));
    }
  // Destinations are spread over a GPU's six links and over the trunks.
  std::set<int> first_ports;
  for (int d = 1; d < 16; ++d) first_ports.insert(t.route(t.endpoints()[0], d));
  CHECK(first_ports.size() == 6);
  std::set<int> trunk_ports;
  const int sw0 = t.find("sw0");
  for (int d = 8; d < 16; ++d) trunk_ports.insert(t.route(sw0, d));
  CHECK(trunk_ports.size() == 8);
}

TEST_CASE("a star has one switch with a port per GPU", "[topology]") {
  for (int n : {1, 2, 3, 5, 16}) {
    INFO("star of " << n);
    Topology t = make_star(n, 25, 10);
    REQUIRE(t.endpoints().size() == static_cast<size_t>(n));
    REQUIRE(t.switches().size() == 1);
    CHECK(t.node(t.switches()[0]).ports == n);
    CHECK(t.links().size() == static_cast<size_t>(n));
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        if (s == d) continue;
        CHECK(walk(t, s, d) == 1);
        CHECK(t.hops(s, d) == 2);
        CHECK(t.route(t.switches()[0], d) == d);
      }
  }
  CHECK_THROWS_AS(make_star(0, 25, 0), UserError);
}

TEST_CASE("the 2-level fat tree of Klenk has 128 GPUs, 144 switches and full up-link spread", "[topology]") {
  Topology t = make_fattree2l(16, 25, 0);
  REQUIRE(t.endpoints().size() == 128);
  REQUIRE(t.switches().size() == 144);
  CHECK(t.links().size() == 128 * 6 + 96 * 8);
  for (int s : t.switches()) {
    const auto& n = t.node(s);
    CHECK(n.ports == (n.name.rfind("leaf", 0) == 0 ? 16 : 16));
  }
  // Within a group one switch; across groups leaf, spine, leaf.
  for (int s = 0; s < 128; s += 7)
    for (int d = 0; d < 128; d += 5) {
      if (s == d) continue;
      INFO(s << " -> " << d);
      CHECK(walk(t, s, d) == (s / 8 == d / 8 ? 1 : 3));
    }
  // A leaf switch spreads the 120 remote GPUs evenly over its 8 up-links.
  const int leaf = t.find("leaf0_0");
  std::vector<int> per_up(16, 0);
  for (int d = 8; d < 128; ++d) ++per_up[t.route(leaf, d)];
  for (int p = 8; p < 16; ++p) CHECK(per_up[p] == 15);
  Topology half = make_fattree2l(8, 25, 0);
  CHECK(half.endpoints().size() == 64);
  CHECK(half.node(half.find("spine0_0")).ports == 8);
  CHECK_THROWS_AS(make_fattree2l(17, 25, 0), UserError);
}

TEST_CASE("HGX H100: every GPU has trunks of 5, 4, 4 and 5 links, all of which lead toward it", "[topology][links]") {
  const Topology t = make_hgx_h100(25, 0);
  REQUIRE(t.endpoints().size() == 8);
  REQUIRE(t.switches().size() == 4);
  CHECK(t.links().size() == 8 * 18);
  CHECK(t.family == Topology::kHgxH100);
  const int trunk[] = {5, 4, 4, 5};
  for (int s = 0; s < 4; ++s) {
    const int sw = t.switches()[s];
    CHECK(t.node(sw).ports == 8 * trunk[s]);
    for (int d = 0; d < 8; ++d) {
      INFO("sw" << s << " toward gpu" << d);
      const PortSpan ports = t.routes(sw, d);
      REQUIRE(ports.size() == static_cast<size_t>(trunk[s]));
      for (int16_t p : ports) CHECK(t.peer({sw, p}).node == t.endpoints()[d]);
      CHECK(t.route(sw, d) == ports[d % ports.size()]);
    }
  }
  // A GPU reaches every other through any of its 18 links, one switch between.
  for (int g = 0; g < 8; ++g)
    for (int d = 0; d < 8; ++d)
      if (g != d) {
        CHECK(t.routes(t.endpoints()[g], d).size() == 18);
        CHECK(t.hops(g, d) == 2);
      }
}

TEST_CASE("GB200 NVL72: 72 GPUs with one link to each of 18 switch chips, every switch one hop from every GPU",
          "[topology][links]") {
  const Topology t = make_nvl72(50, 0);
  REQUIRE(t.endpoints().size() == 72);
  REQUIRE(t.switches().size() == 18);
  CHECK(t.links().size() == 72 * 18);
  CHECK(t.family == Topology::kNvl72);
  // links[g][s]: GPU g's links to switch s.
  std::vector<std::vector<int>> links(72, std::vector<int>(18, 0));
  for (const Link& l : t.links()) {
    REQUIRE(t.node(l.a.node).kind == NodeKind::Endpoint);
    REQUIRE(t.node(l.b.node).kind == NodeKind::Switch);
    CHECK(l.bw_GBps == 50);
    ++links[t.node(l.a.node).index][t.node(l.b.node).index];
  }
  for (int g = 0; g < 72; ++g)
    for (int s = 0; s < 18; ++s) {
      INFO("gpu" << g << " to sw" << s);
      CHECK(links[g][s] == 1);
    }
  for (int s = 0; s < 18; ++s) CHECK(t.node(t.switches()[s]).ports == 72);
  // A GPU reaches every other through any of its 18 links, one switch between.
  for (int g = 0; g < 72; ++g)
    for (int d = 0; d < 72; ++d)
      if (g != d) {
        CHECK(t.routes(t.endpoints()[g], d).size() == 18);
        CHECK(t.hops(g, d) == 2);
      }
}

// The papers' tables (docs/platforms.md, Routing): route() is still port
// d mod count among the equal-cost ports, and under dimension order every
// equal-cost port a switch may spread over leads to the neighbour it chose.
TEST_CASE("the papers' platforms keep their routes, and dimension order spreads only over parallel links",
          "[topology][links]") {
  for (const Topology& t : {make_dgx2(25, 0), make_star(5, 25, 0), make_fattree2l(2, 25, 0), make_fattree(16, 4),
                            make_bigraph(4, 8), make_torus(4, 4), make_torus(2, 2), make_mesh(4, 3)}) {
    INFO(t.name);
    const bool grid = t.routing != "shortest-path";
    for (int u = 0; u < static_cast<int>(t.nodes().size()); ++u)
      for (int d = 0; d < static_cast<int>(t.endpoints().size()); ++d) {
        if (u == t.endpoints()[d] || t.node(u).kind == NodeKind::Endpoint) continue;
        const PortSpan ports = t.routes(u, d);
        REQUIRE_FALSE(ports.empty());
        for (int16_t p : ports) CHECK(t.hops_from(t.peer({u, p}).node, d) == t.hops_from(u, d) - 1);
        if (grid) {
          for (int16_t p : ports) CHECK(t.peer({u, p}).node == t.peer({u, t.route(u, d)}).node);
        } else {
          CHECK(t.route(u, d) == ports[d % ports.size()]);
        }
      }
  }
  // A torus dimension of size 2 has two parallel links; both may carry.
  const Topology t = make_torus(2, 2);
  CHECK(t.routes(t.find("r0"), 1).size() == 2);
}

// Every built-in graph, with what it carries besides nodes and links: its
// family, a grid's dimension-order routes, VC policy and datelines (a size-2
// torus dimension's two parallel links), a DGX-1 cluster's servers.
TEST_CASE("save_yaml then load_yaml gives the same graph, routes and VC rules, and saves the same bytes",
          "[topology][yaml]") {
  for (const Topology& t : {make_dgx2(25, 0), make_star(5, 50, 12.5), make_fattree2l(2, 25, 0), make_torus(4, 4),
                            make_torus(2, 3), make_torus(5, 2), make_mesh(4, 3), make_mesh(2, 2), make_fattree(16, 4),
                            make_bigraph(4, 8), make_dgx1(Dgx1Gen::V100, {1, 4, 5, 6}),
                            make_dgx1(Dgx1Gen::P100, {0, 1, 2, 3, 4, 5, 6, 7}),
                            make_dgx1_cluster(Dgx1Gen::V100, {{0, 1}, {2, 3}}, 5, 1500), make_hgx_h100(25, 0),
                            make_nvl72(50, 0)}) {
    INFO(t.name);
    std::ostringstream os;
    save_yaml(t, os);
    TempFile f(os.str());
    // Defaults that differ from the file's values: the file must win.
    Topology back = load_yaml(f.path, 1, 999);
    CHECK(back.name == t.name);
    require_same(t, back);
    std::ostringstream again;
    save_yaml(back, again);
    CHECK(again.str() == os.str());
    if (t.family == "dgx1v") CHECK(dgx1_servers(back) == dgx1_servers(t));
    for (size_t s = 0; s < t.endpoints().size(); ++s)
      for (size_t d = 0; d < t.endpoints().size(); ++d)
        if (s != d) CHECK(back.hops(static_cast<int>(s), static_cast<int>(d)) == t.hops(static_cast<int>(s), static_cast<int>(d)));
  }
}

TEST_CASE("a YAML platform takes default link bandwidth and latency from its link section", "[topology][yaml]") {
  TempFile f(
      "name: pair\n"
      "link: {bw_GBps: 50, latency_ns: 7}\n"
      "endpoints:\n  - {name: a, ports: 1}\n  - {name: b, ports: 1}\n"
      "switches:\n  - {name: s, ports: 2}\n"
      "links:\n  - {a: a.0, b: s.0}\n  - {a: b.0, b: s.1, bw_GBps: 10}\n");
  Topology t = load_yaml(f.path, 25, 0);
  REQUIRE(t.links().size() == 2);
  CHECK(t.links()[0].bw_GBps == 50);
  CHECK(t.links()[0].latency_ns == 7);
  CHECK(t.links()[1].bw_GBps == 10);
  CHECK(t.hops(0, 1) == 2);
}

TEST_CASE("a platform file's family, routing and VC policy are checked by name", "[topology][yaml][errors]") {
  const std::string graph =
      "endpoints:\n  - {name: a, ports: 1}\n  - {name: b, ports: 1}\n"
      "switches:\n  - {name: s, ports: 2}\n"
      "links:\n  - {a: a.0, b: s.0}\n  - {a: b.0, b: s.1}\n";
  require_yaml_error("family: booksim\n" + graph, "family must be klenk, multitree, dgx1v, dgx1p, netreduce, netreduce-multigpu, hgx-a100, hgx-h100, "
     "hgx-b200 or nvl72, not 'booksim'");
  require_yaml_error("routing: adaptive\n" + graph, "routing must be shortest-path or dimension-order");
  require_yaml_error("vc_policy: escape\n" + graph, "vc_policy must be none, dateline or switch-hop");
  require_yaml_error("routing: dimension-order\n" + graph, "dimension-order routing needs a grid");
  require_yaml_error("endpoints:\n  - {name: a, ports: 1}\n  - {name: b, ports: 1}\n"
                     "switches:\n  - {name: s, ports: 2}\n"
                     "links:\n  - {a: a.0, b: s.0, dim: 2}\n  - {a: b.0, b: s.1}\n",
                     "dim must be 0 (X) or 1 (Y)");
  // A DGX-1 family file's GPUs are read by their physical numbers.
  TempFile f("family: dgx1v\nendpoints:\n  - {name: gpu9, ports: 1}\n  - {name: gpu1, ports: 1}\n"
             "switches:\n  - {name: pcie0, ports: 2, kind: pcie_switch}\n"
             "links:\n  - {a: gpu9.0, b: pcie0.0}\n  - {a: gpu1.0, b: pcie0.1}\n");
  REQUIRE_THROWS_WITH(dgx1_servers(load_yaml(f.path, 25, 0)), Catch::Contains("node 'gpu9' is not a DGX-1 GPU"));
}

TEST_CASE("bad topologies give a UserError naming the problem", "[topology][errors]") {
  SECTION("zero-bandwidth link") {
    Topology t;
    int a = t.add_endpoint("a", 1);
    int s = t.add_switch("s", 1);
    REQUIRE_THROWS_WITH(t.connect({a, 0}, {s, 0}, 0, 0), Catch::Contains("a.0") && Catch::Contains("bandwidth"));
    REQUIRE_THROWS_AS(t.connect({a, 0}, {s, 0}, -3, 0), UserError);
  }
  SECTION("negative latency") {
    Topology t;
    int a = t.add_endpoint("a", 1);
    int s = t.add_switch("s", 1);
    REQUIRE_THROWS_WITH(t.connect({a, 0}, {s, 0}, 25, -1), Catch::Contains("latency"));
  }
  SECTION("port linked twice") {
    Topology t;
    int a = t.add_endpoint("a", 1);
    int b = t.add_endpoint("b", 1);
    int s = t.add_switch("s", 2);
    t.connect({a, 0}, {s, 0}, 25, 0);
    REQUIRE_THROWS_WITH(t.connect({b, 0}, {s, 0}, 25, 0), Catch::Contains("s.0") && Catch::Contains("twice"));
  }
  SECTION("port that does not exist") {
    Topology t;
    int a = t.add_endpoint("a", 1);
    int s = t.add_switch("s", 2);
    REQUIRE_THROWS_WITH(t.connect({a, 0}, {s, 5}, 25, 0), Catch::Contains("s.5"));
  }
  SECTION("unknown node") {
    Topology t;
    int a = t.add_endpoint("a", 1);
    REQUIRE_THROWS_WITH(t.connect({a, 0}, {42, 0}, 25, 0), Catch::Contains("unknown node"));
  }
  SECTION("node name used twice") {
    Topology t;
    t.add_endpoint("a", 1);
    REQUIRE_THROWS_WITH(t.add_switch("a", 4), Catch::Contains("'a'"));
  }
  SECTION("unlinked port") {
    Topology t;
    int a = t.add_endpoint("a", 2);
    int b = t.add_endpoint("b", 1);
    int s = t.add_switch("s", 2);
    t.connect({a, 0}, {s, 0}, 25, 0);
    t.connect({b, 0}, {s, 1}, 25, 0);
    REQUIRE_THROWS_WITH(t.finalize(), Catch::Contains("a.1") && Catch::Contains("not linked"));
  }
  SECTION("unreachable endpoint") {
    Topology t;
    int a = t.add_endpoint("a", 1);
    int b = t.add_endpoint("b", 1);
    int s1 = t.add_switch("s1", 1);
    int s2 = t.add_switch("s2", 1);
    t.connect({a, 0}, {s1, 0}, 25, 0);
    t.connect({b, 0}, {s2, 0}, 25, 0);
    REQUIRE_THROWS_WITH(t.finalize(), Catch::Contains("cannot reach"));
  }
  SECTION("two endpoints joined directly") {
    Topology t;
    int a = t.add_endpoint("a", 1);
    int b = t.add_endpoint("b", 1);
    REQUIRE_THROWS_WITH(t.connect({a, 0}, {b, 0}, 25, 0), Catch::Contains("endpoints"));
  }
}

TEST_CASE("bad platform files give a UserError naming the problem", "[topology][yaml][errors]") {
  const std::string nodes =
      "endpoints:\n  - {name: a, ports: 1}\n  - {name: b, ports: 1}\n"
      "switches:\n  - {name: s, ports: 2}\n";
  SECTION("not YAML") { require_yaml_error("links: [a.0, {b: [\n", "not valid YAML"); }
  SECTION("missing file") {
    REQUIRE_THROWS_WITH(load_yaml("/nonexistent/incsim/p.yaml", 25, 0),
                        "platform file '/nonexistent/incsim/p.yaml' does not exist");
  }
  SECTION("zero bandwidth") {
    require_yaml_error(nodes + "links:\n  - {a: a.0, b: s.0, bw_GBps: 0}\n  - {a: b.0, b: s.1}\n", "bandwidth");
  }
  SECTION("unknown node") {
    require_yaml_error(nodes + "links:\n  - {a: a.0, b: s.0}\n  - {a: c.0, b: s.1}\n", "c.0");
  }
  SECTION("port linked twice") {
    require_yaml_error(nodes + "links:\n  - {a: a.0, b: s.0}\n  - {a: b.0, b: s.0}\n", "twice");
  }
  SECTION("unlinked port") { require_yaml_error(nodes + "links:\n  - {a: a.0, b: s.0}\n", "not linked"); }
  SECTION("unreachable endpoint") {
    require_yaml_error(
        "endpoints:\n  - {name: a, ports: 1}\n  - {name: b, ports: 1}\n"
        "switches:\n  - {name: s, ports: 1}\n  - {name: t, ports: 1}\n"
        "links:\n  - {a: a.0, b: s.0}\n  - {a: b.0, b: t.0}\n",
        "cannot reach");
  }
  SECTION("port without a number") {
    require_yaml_error(nodes + "links:\n  - {a: a.x, b: s.0}\n  - {a: b.0, b: s.1}\n", "a.x");
  }
  SECTION("unknown top-level key") { require_yaml_error(nodes + "lnks: []\n", "lnks"); }
  SECTION("no links") { require_yaml_error(nodes, "links"); }
  SECTION("wrong type") {
    require_yaml_error(nodes + "links:\n  - {a: a.0, b: s.0, bw_GBps: fast}\n  - {a: b.0, b: s.1}\n", "bw_GBps");
  }
}

// Each structure error is one sentence naming the file, the line and the
// problem (issue 14): never yaml-cpp's text, and nothing reaches SystemC.
TEST_CASE("platform file structure errors name the file and the line", "[topology][yaml][errors]") {
  const std::string nodes =
      "endpoints:\n  - {name: a, ports: 1}\n  - {name: b, ports: 1}\n"
      "switches:\n  - {name: s, ports: 2}\n  - {name: t, ports: 2}\n";  // lines 1-6; links: is line 7
  const std::string two = "links:\n  - {a: a.0, b: s.0}\n  - {a: b.0, b: s.1}\n";
  // The error for `text` names the file, then "line N: " and `problem`.
  auto require_at = [](const std::string& text, int line, const std::string& problem) {
    TempFile f(text);
    REQUIRE_THROWS_WITH(load_yaml(f.path, 25, 0),
                        Catch::StartsWith("platform file " + f.path + ", line " + std::to_string(line) + ": ") &&
                            Catch::Contains(problem));
  };
  SECTION("a key that is a map") { require_at("{}:\n", 1, "a key of a platform file must be one of name"); }
  SECTION("a link that is a scalar") { require_at(nodes + "links:\n  - a.0\n", 8, "a link must be a map"); }
  SECTION("a port linked to itself") { require_at(nodes + two + "  - {a: t.0, b: t.0}\n", 10, "joins t to itself"); }
  SECTION("a switch linked to itself") { require_at(nodes + two + "  - {a: t.0, b: t.1}\n", 10, "joins t to itself"); }
  SECTION("a link without b") { require_at(nodes + "links:\n  - {a: a.0}\n", 8, "a link has no 'b'"); }
  SECTION("an endpoint's port no link uses") {
    require_at("endpoints:\n  - {name: a, ports: 2}\n  - {name: b, ports: 1}\nswitches:\n  - {name: s, ports: 2}\n" + two,
               2, "endpoint a's port 1 is not linked; an endpoint sends on every port it declares");
  }
  SECTION("a switch no link uses") { require_at(nodes + two, 6, "switch t has no link; a switch needs at least one"); }
  SECTION("what only the whole graph shows names the file") {
    TempFile f("endpoints:\n  - {name: a, ports: 1}\n  - {name: b, ports: 1}\nswitches:\n  - {name: s, ports: 1}\n"
               "  - {name: t, ports: 1}\nlinks:\n  - {a: a.0, b: s.0}\n  - {a: b.0, b: t.0}\n");
    REQUIRE_THROWS_WITH(load_yaml(f.path, 25, 0), "platform file " + f.path + ": b cannot reach a");
  }
  SECTION("bandwidth out of range") {
    for (const char* bw : {".inf", ".nan", "-1", "0", "1e-300", "1e30"})
      require_at(nodes + "links:\n  - {a: a.0, b: s.0, bw_GBps: " + bw + "}\n", 8,
                 "bw_GBps must be from 0.001 to 100000");
  }
  SECTION("latency out of range") {
    for (const char* lat : {"-1", "1e10", "1e30", ".nan"})
      require_at(nodes + "links:\n  - {a: a.0, b: s.0, latency_ns: " + std::string(lat) + "}\n", 8,
                 "latency_ns must be from 0 to 1e+09");
  }
  SECTION("a default link out of range") {
    require_at("link: {bw_GBps: .inf}\n" + nodes + two, 1, "the default link has bandwidth inf");
  }
  SECTION("a link section that is not a map") { require_at("link: 5\n" + nodes + two, 1, "'link' must be a map"); }
  SECTION("a duplicate node name") {
    require_at("endpoints:\n  - {name: a, ports: 1}\n  - {name: a, ports: 1}\nlinks: []\n", 3, "'a' is used twice");
  }
  SECTION("a port used by two links") { require_at(nodes + "links:\n  - {a: a.0, b: s.0}\n  - {a: b.0, b: s.0}\n", 9, "s.0 is linked twice"); }
  SECTION("a port number out of range") { require_at(nodes + "links:\n  - {a: a.0, b: s.7}\n", 8, "s.7 does not exist"); }
  SECTION("a port number too large to read") {
    require_at(nodes + "links:\n  - {a: a.99999999999999, b: s.0}\n", 8, "must end in a port number");
  }
  SECTION("wrong types") {
    require_at("endpoints:\n  - {name: a, ports: many}\nlinks: []\n", 2, "'ports' must be a whole number, not 'many'");
    require_at("endpoints:\n  - {name: [a], ports: 1}\nlinks: []\n", 2, "'name' must be a single value");
    require_at("endpoints: 3\nlinks: []\n", 1, "'endpoints' must be a list");
    require_at("endpoints:\n  - a\nlinks: []\n", 2, "an endpoint must be a map");
  }
  SECTION("an unknown or repeated key in an item") {
    require_at("endpoints:\n  - {name: a, prots: 1}\nlinks: []\n", 2, "unknown key 'prots' in an endpoint");
    require_at(nodes + "links:\n  - {a: a.0, a: b.0, b: s.0}\n", 8, "key 'a' appears twice in a link");
  }
  SECTION("a name SystemC would change") {
    require_at("endpoints:\n  - {name: a b, ports: 1}\nlinks: []\n", 2, "endpoint name 'a b' must be non-empty, without '.'");
    require_at("switches:\n  - {name: x.y, ports: 1}\nlinks: []\n", 2, "switch name 'x.y' must be");
  }
  SECTION("a node with far too many ports") {
    require_at("endpoints:\n  - {name: a, ports: 2000000000}\nlinks: []\n", 2, "a node has at most 4096");
  }
}

// Small descriptions that ask for huge work are refused before anything is
// allocated, with what would fit (docs/platforms.md, "Limits").
TEST_CASE("a platform that would not fit is refused saying what would", "[topology][errors][limits]") {
  SECTION("too many nodes in a file") {
    std::string text = "endpoints:\n";
    for (int i = 0; i <= kMaxNodes; ++i) text += "  - {name: g" + std::to_string(i) + ", ports: 1}\n";
    TempFile f(text + "links: []\n");
    REQUIRE_THROWS_WITH(load_yaml(f.path, 25, 0), Catch::Contains("line 2") && Catch::Contains("more than 30000 nodes"));
  }
  SECTION("too many nodes in code") {
    Topology t;
    for (int i = 0; i < kMaxNodes; ++i) t.add_switch("s" + std::to_string(i), 1);
    REQUIRE_THROWS_WITH(t.add_endpoint("one-more", 1), Catch::Contains("more than 30000 nodes"));
  }
  SECTION("routing tables too large: a chain of 20,000 switches") {
    Topology t;
    const int a = t.add_endpoint("a", 1), b = t.add_endpoint("b", 1);
    std::vector<int> s;
    for (int i = 0; i < 20000; ++i) s.push_back(t.add_switch("s" + std::to_string(i), 2));
    t.connect({a, 0}, {s.front(), 0}, 25, 0);
    for (int i = 0; i + 1 < 20000; ++i) t.connect({s[i], 1}, {s[i + 1], 0}, 25, 0);
    t.connect({s.back(), 1}, {b, 0}, 25, 0);
    REQUIRE_THROWS_WITH(t.finalize(), Catch::Contains("MiB of routing tables") && Catch::Contains("at most 512 MiB fit"));
  }
}

namespace {
ClusterShape cluster_shape(int nodes, int leaf_ports = 64, int spine_ports = 64) {
  ClusterShape s;
  s.nodes = nodes;
  s.pcie_GBps = 63;
  s.net_GBps = 50;
  s.leaf_ports = leaf_ports;
  s.spine_ports = spine_ports;
  return s;
}
}  // namespace

TEST_CASE("a cluster's routes, computed from its structure, are its tables' answers port for port", "[topology][cluster]") {
  const Topology hgx = make_hgx_h100(25, 0), nvl72 = make_nvl72(50, 0), dgx2 = make_dgx2(25, 0), star = make_star(4, 25, 0);
  SECTION("two levels, the reference runs' shapes") {
    require_structure_matches_tables(make_cluster(hgx, cluster_shape(2)));
    require_structure_matches_tables(make_cluster(hgx, cluster_shape(3)));
    require_structure_matches_tables(make_cluster(nvl72, cluster_shape(2)));
    ClusterShape roce = cluster_shape(2);
    roce.network = ScaleOut::Roce;
    require_structure_matches_tables(make_cluster(hgx, roce));
  }
  SECTION("nodes from a platform file") {
    std::ostringstream os;
    save_yaml(hgx, os);
    TempFile f(os.str());
    const Topology from_file = make_cluster(load_yaml(f.path, 25, 0), cluster_shape(3));
    CHECK(netlist_difference(from_file, make_cluster(hgx, cluster_shape(3))) == "");
    require_structure_matches_tables(from_file);
  }
  SECTION("two levels, several leaves per rail, oversubscribed") {
    // Every leaf, spine and core but a group's leaf routes it alike: here
    // two nodes' GPUs of a rail share a leaf.
    CHECK(require_structure_matches_tables(make_cluster(hgx, cluster_shape(4, 4))) > 0);
    require_structure_matches_tables(make_cluster(star, cluster_shape(5, 6)));
    ClusterShape s = cluster_shape(7, 5);
    s.oversubscription = 2;
    s.network = ScaleOut::Roce;
    require_structure_matches_tables(make_cluster(star, s));
    require_structure_matches_tables(make_cluster(dgx2, cluster_shape(3)));
  }
  SECTION("three levels") {
    const Topology t = make_cluster(hgx, cluster_shape(3, 2, 16));
    CHECK(t.find("core0_0") >= 0);
    require_structure_matches_tables(t);
    ClusterShape s = cluster_shape(7, 3, 6);
    s.spine_oversubscription = 2;
    s.core_ports = 5;
    require_structure_matches_tables(make_cluster(star, s));
    s.network = ScaleOut::Roce;
    require_structure_matches_tables(make_cluster(star, s));
    require_structure_matches_tables(make_cluster(nvl72, cluster_shape(3, 4)));
    // Pods of two slots and two spines, two core groups of two cores.
    s = cluster_shape(12, 4, 16);
    s.core_ports = 16;
    const Topology pods = make_cluster(star, s);
    CHECK(pods.find("spine2_1") >= 0);
    CHECK(pods.find("core1_1") >= 0);
    CHECK(require_structure_matches_tables(pods) > 0);
    // Pods of 1, 2 and 2 slots, on RoCE.
    s = cluster_shape(10, 4, 16);
    s.network = ScaleOut::Roce;
    require_structure_matches_tables(make_cluster(star, s));
  }
}

TEST_CASE("a grid's and a fat tree's routes, computed from their coordinates, are their tables' answers",
          "[topology][routing]") {
  for (int kx : {1, 2, 3, 4, 5})
    for (int ky : {2, 3, 4}) {
      require_structure_matches_tables(make_torus(kx, ky));
      require_structure_matches_tables(make_mesh(kx, ky));
    }
  require_structure_matches_tables(make_torus(8, 8));
  require_structure_matches_tables(make_mesh(6, 5));
  for (int k : {2, 3, 4, 8}) require_structure_matches_tables(make_fattree(k * k, k));
  require_structure_matches_tables(make_fattree(12, 4));
}

namespace {
// Switches of each kind in a cluster of hgx-h100 nodes, by name.
struct Switches {
  int leaves = 0, spines = 0, cores = 0;
};
Switches switches_of(const Topology& t) {
  Switches s;
  for (int sw : t.switches()) {
    const std::string& n = t.node(sw).name;
    s.leaves += n.rfind("leaf", 0) == 0;
    s.spines += n.rfind("spine", 0) == 0;
    s.cores += n.rfind("core", 0) == 0;
  }
  return s;
}
}  // namespace

// NVIDIA DGX SuperPOD reference architectures, of 64-port QM9700 switches at
// 1:1: DGX H100 (Table 4: 1 SU of 32 nodes, 8 leaves and 4 spines; 4 SUs, 32
// and 16) and DGX B200 (its table of larger SuperPODs: 8 SUs, 64 leaves and
// 32 spines; 16 SUs, 128 leaves, 128 spines and 64 cores; 64 SUs, 512, 512
// and 256).
TEST_CASE("a cluster has the switches of NVIDIA's DGX SuperPOD reference architectures", "[topology][cluster]") {
  const Topology hgx = make_hgx_h100(25, 0);
  const auto counts = [&](int nodes) {
    const Switches s = switches_of(make_cluster(hgx, cluster_shape(nodes)));
    return std::vector<int>{s.leaves, s.spines, s.cores};
  };
  CHECK(counts(32) == std::vector<int>{8, 4, 0});
  CHECK(counts(128) == std::vector<int>{32, 16, 0});
  CHECK(counts(256) == std::vector<int>{64, 32, 0});
  CHECK(counts(512) == std::vector<int>{128, 128, 64});
  CHECK(counts(2048) == std::vector<int>{512, 512, 256});
}

// The graphs a flow-level run of 1,024 and 16,384 nodes works on: built in
// well under a second (test_topology's timeout bounds it), and every route
// between nodes in another pod climbs to a core and down: 8 links.
TEST_CASE("clusters of 1,024 and 16,384 nodes build and answer routes", "[topology][cluster][scale]") {
  const Topology hgx = make_hgx_h100(25, 0);
  for (int nodes : {1024, 16384}) {
    INFO(nodes << " nodes");
    const Topology t = make_cluster(hgx, cluster_shape(nodes));
    const int gpus = static_cast<int>(t.endpoints().size());
    REQUIRE(gpus == nodes * 8);
    CHECK(t.nodes().size() == static_cast<size_t>(nodes) * 20 + switches_of(t).leaves + switches_of(t).spines + switches_of(t).cores);
    uint64_t wrong = 0;
    for (int s = 0; s < gpus; s += 7) {
      // Its own node's GPU over NVLink; the same GPU of a node half the cluster away, in another pod (of
      // 128 nodes), and another GPU of that node.
      const int node = (s / 8 + nodes / 2) % nodes;
      const int same_node = s / 8 * 8 + (s + 1) % 8, far = node * 8 + s % 8, other_rail = node * 8 + (s + 3) % 8;
      wrong += t.links_on_route(s, same_node).size() != 2;
      wrong += t.links_on_route(s, far).size() != 8 || t.hops(s, far) != 8;
      wrong += t.links_on_route(s, other_rail).size() != 8;
      // A route ends where it should.
      const std::vector<int> links = t.links_on_route(s, other_rail);
      const Link& last = t.links()[links.back()];
      wrong += last.a.node != t.endpoints()[other_rail] && last.b.node != t.endpoints()[other_rail];
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("a switch port that no link uses is left out: a partly populated 64-port switch", "[topology][yaml]") {
  // Two 64-port switches, each with two GPUs on its first ports and one
  // trunk link on port 63 (s) and 40 (t): the switches keep the ports their
  // links use, in order, so s.0 and s.1 stay, s.63 becomes s.2.
  TempFile f(
      "name: part\nendpoints:\n  - {name: a, ports: 1}\n  - {name: b, ports: 1}\n  - {name: c, ports: 1}\n  - {name: d, ports: 1}\n"
      "switches:\n  - {name: s, ports: 64}\n  - {name: t, ports: 64}\n"
      "links:\n  - {a: a.0, b: s.0}\n  - {a: b.0, b: s.1}\n  - {a: c.0, b: t.0}\n  - {a: d.0, b: t.1}\n"
      "  - {a: s.63, b: t.40, latency_ns: 20}\n");
  const Topology t = load_yaml(f.path, 25, 10);
  CHECK(t.node(t.find("s")).ports == 3);
  CHECK(t.node(t.find("t")).ports == 3);
  REQUIRE(t.links().size() == 5);
  CHECK(t.port_name(t.links()[0].b) == "s.0");
  CHECK(t.port_name(t.links()[4].a) == "s.2");
  CHECK(t.port_name(t.links()[4].b) == "t.2");
  CHECK(t.links()[4].latency_ns == 20);
  // The same machine as one declared with only those ports: its dump is that file's.
  TempFile compact(
      "name: part\nendpoints:\n  - {name: a, ports: 1}\n  - {name: b, ports: 1}\n  - {name: c, ports: 1}\n  - {name: d, ports: 1}\n"
      "switches:\n  - {name: s, ports: 3}\n  - {name: t, ports: 3}\n"
      "links:\n  - {a: a.0, b: s.0}\n  - {a: b.0, b: s.1}\n  - {a: c.0, b: t.0}\n  - {a: d.0, b: t.1}\n"
      "  - {a: s.2, b: t.2, latency_ns: 20}\n");
  std::ostringstream mine, theirs;
  save_yaml(t, mine);
  save_yaml(load_yaml(compact.path, 25, 10), theirs);
  CHECK(mine.str() == theirs.str());
}
