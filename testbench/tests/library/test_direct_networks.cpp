// Routing on MultiTree's networks (plain C++, STYLE.md convention 9):
// dimension-order routes on mesh and torus hop by hop, minimal on the torus
// with ties spread over both directions; the VC rule per hop (dateline on
// the torus, second switch hop on BiGraph); and routing-deadlock freedom,
// checked as an acyclic channel dependency graph (Dally and Towles ch. 14)
// over every route of every platform.
#include <catch2/catch.hpp>

#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "topology/direct_networks.h"

using namespace incsim::topo;

namespace {

// One hop of a route: the output port taken and the VC used on its link
// (0: the class's first VC, 1: its second).
struct Hop {
  PortRef out;
  int vc;
};

// The route from endpoint src (leaving by endpoint port `port`) to endpoint
// dst, as the switches forward it, applying each switch's VC rule.
std::vector<Hop> route(const Topology& t, int src, int dst, int port = 0) {
  std::vector<Hop> hops;
  PortRef out{t.endpoints()[src], port};
  int vc = 0;
  while (true) {
    hops.push_back({out, vc});
    REQUIRE(hops.size() < 1000);
    const PortRef in = t.peer(out);
    if (t.node(in.node).kind == NodeKind::Endpoint) {
      REQUIRE(in.node == t.endpoints()[dst]);
      return hops;
    }
    const int o = t.route(in.node, dst);
    switch (t.vc_rule(in.node, in.port, o)) {
      case VcRule::First: vc = 0; break;
      case VcRule::Second: vc = 1; break;
      case VcRule::Keep: break;
    }
    out = {in.node, o};
  }
}

// "n0 r0 r1 r2 n2": the nodes a route visits.
std::string path(const Topology& t, int src, int dst) {
  std::ostringstream os;
  os << t.node(t.endpoints()[src]).name;
  for (const Hop& h : route(t, src, dst)) os << " " << t.node(t.peer(h.out).node).name;
  return os.str();
}

// The VCs a route uses, link by link: "0 1 0 0".
std::string vcs(const Topology& t, int src, int dst) {
  std::ostringstream os;
  for (const Hop& h : route(t, src, dst)) os << (os.tellp() > 0 ? " " : "") << h.vc;
  return os.str();
}

// Router index of a route's hops (the routers it leaves from), in order.
std::vector<int> routers(const Topology& t, int src, int dst) {
  std::vector<int> r;
  for (const Hop& h : route(t, src, dst))
    if (t.node(h.out.node).kind == NodeKind::Switch) r.push_back(t.node(h.out.node).index);
  return r;
}

// Does the channel dependency graph of every route (every endpoint port
// that reaches the destination) have a cycle? A channel is one direction of
// a link on one VC; a route depends on each channel after the one it holds.
// No cycle: routing cannot deadlock, whatever the traffic (Dally and Towles,
// ch. 14). With use_vcs false every hop is on one VC.
bool has_dependency_cycle(const Topology& t, bool use_vcs = true) {
  const int m = static_cast<int>(t.endpoints().size());
  auto channel = [&](const Hop& h) {
    const int l = t.link_at(h.out);
    const Link& k = t.links()[l];
    const int dir = k.a.node == h.out.node && k.a.port == h.out.port ? 0 : 1;
    return (l * 2 + dir) * 2 + (use_vcs ? h.vc : 0);
  };
  const int channels = static_cast<int>(t.links().size()) * 4;
  std::vector<std::set<int>> next(channels);
  for (int s = 0; s < m; ++s)
    for (int d = 0; d < m; ++d) {
      if (s == d) continue;
      const int node = t.endpoints()[s];
      for (int p = 0; p < t.node(node).ports; ++p) {
        if (!t.port_reaches({node, p}, d)) continue;
        const auto hops = route(t, s, d, p);
        for (size_t i = 1; i < hops.size(); ++i) next[channel(hops[i - 1])].insert(channel(hops[i]));
      }
    }
  std::vector<int> state(channels, 0);  // 0 unseen, 1 on the DFS stack, 2 done
  bool cycle = false;
  std::function<void(int)> visit = [&](int c) {
    state[c] = 1;
    for (int n : next[c]) {
      if (state[n] == 1) cycle = true;
      else if (state[n] == 0) visit(n);
    }
    state[c] = 2;
  };
  for (int c = 0; c < channels && !cycle; ++c)
    if (state[c] == 0) visit(c);
  return cycle;
}

int ring_distance(int a, int b, int k) {
  const int d = (b - a + k) % k;
  return std::min(d, k - d);
}

}  // namespace

TEST_CASE("mesh 4x4: dimension-order routes go X first, then Y, hop by hop", "[topology][routing]") {
  const Topology t = make_mesh(4, 4);
  CHECK(t.routing == "dimension-order");
  CHECK(t.grid.kx == 4);
  CHECK(t.grid.ky == 4);
  CHECK_FALSE(t.grid.wrap);
  // Node i at x = i % 4, y = i / 4.
  CHECK(path(t, 0, 15) == "n0 r0 r1 r2 r3 r7 r11 r15 n15");
  CHECK(path(t, 15, 0) == "n15 r15 r14 r13 r12 r8 r4 r0 n0");
  CHECK(path(t, 12, 3) == "n12 r12 r13 r14 r15 r11 r7 r3 n3");
  CHECK(path(t, 5, 10) == "n5 r5 r6 r10 n10");
  CHECK(path(t, 9, 1) == "n9 r9 r5 r1 n1");  // same column: Y only
  CHECK(path(t, 7, 4) == "n7 r7 r6 r5 r4 n4");  // same row: X only
  // Every pair: Manhattan length, X settled before Y moves.
  for (int s = 0; s < 16; ++s)
    for (int d = 0; d < 16; ++d) {
      if (s == d) continue;
      INFO("n" << s << " to n" << d);
      const auto r = routers(t, s, d);
      CHECK(r.size() == static_cast<size_t>(std::abs(s % 4 - d % 4) + std::abs(s / 4 - d / 4) + 1));
      bool y_moved = false;
      for (size_t i = 1; i < r.size(); ++i) {
        const bool x_step = r[i] % 4 != r[i - 1] % 4;
        if (x_step) CHECK_FALSE(y_moved);
        else y_moved = true;
      }
      CHECK(t.hops(s, d) == static_cast<int>(r.size()) + 1);
    }
}

TEST_CASE("torus 4x4: dimension-order routes are minimal, X first, the short way round", "[topology][routing]") {
  const Topology t = make_torus(4, 4);
  CHECK(t.grid.wrap);
  CHECK(path(t, 0, 3) == "n0 r0 r3 n3");            // -X over the wrap-around link
  CHECK(path(t, 0, 12) == "n0 r0 r12 n12");         // -Y over the wrap-around link
  CHECK(path(t, 0, 15) == "n0 r0 r3 r15 n15");      // both wraps, X first
  CHECK(path(t, 13, 2) == "n13 r13 r14 r2 n2");      // +X, then +Y over the wrap (y 3 to 0)
  // Ties (2 hops either way): + when the coordinate plus the destination's
  // other coordinate is even.
  CHECK(path(t, 0, 2) == "n0 r0 r1 r2 n2");     // x 0, y_dst 0: +
  CHECK(path(t, 1, 3) == "n1 r1 r0 r3 n3");     // x 1, y_dst 0: -
  CHECK(path(t, 0, 6) == "n0 r0 r3 r2 r6 n6");  // x 0, y_dst 1: -, then +Y
  CHECK(path(t, 0, 10) == "n0 r0 r1 r2 r6 r10 n10");  // x 0, y_dst 2: +; y 0, x_dst 2: +
  CHECK(path(t, 13, 7) == "n13 r13 r14 r15 r3 r7 n7");  // x 1, y_dst 1: +; y 3, x_dst 3: + over the wrap
}

TEST_CASE("torus routes are minimal on every pair, odd and even sizes", "[topology][routing]") {
  for (auto [kx, ky] : {std::pair{4, 4}, {8, 8}, {5, 3}, {2, 2}, {2, 8}, {16, 16}}) {
    const Topology t = make_torus(kx, ky);
    const int n = kx * ky;
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        if (s == d) continue;
        const int want = ring_distance(s % kx, d % kx, kx) + ring_distance(s / kx, d / kx, ky) + 2;
        if (t.hops(s, d) != want || static_cast<int>(route(t, s, d).size()) != want)
          FAIL("torus " << kx << "x" << ky << ": n" << s << " to n" << d << " takes " << route(t, s, d).size()
                        << " links, minimal is " << want);
      }
  }
}

TEST_CASE("torus ties use both directions equally, and both parallel links of a size-2 dimension", "[topology][routing]") {
  // 4x4: every pair two hops apart in X goes + or -, half each way.
  const Topology t = make_torus(4, 4);
  int plus = 0, minus = 0;
  for (int s = 0; s < 16; ++s)
    for (int d = 0; d < 16; ++d)
      if (ring_distance(s % 4, d % 4, 4) == 2) {
        const auto r = routers(t, s, d);
        (r[1] % 4 == (r[0] % 4 + 1) % 4 ? plus : minus)++;
      }
  CHECK(plus == 32);
  CHECK(minus == 32);
  // 2x2: both parallel links of each pair of routers carry traffic, and
  // every router sends X ties both ways (to destinations in either row).
  // (A Y tie has one destination per router, the X coordinate being
  // settled, so a router sends it one way; neighbours alternate.)
  const Topology t2 = make_torus(2, 2);
  std::set<std::pair<int, int>> used;  // (router, port)
  std::set<int> links;
  for (int s = 0; s < 4; ++s)
    for (int d = 0; d < 4; ++d)
      if (s != d)
        for (const Hop& h : route(t2, s, d))
          if (t2.node(h.out.node).kind == NodeKind::Switch) {
            used.insert({h.out.node, h.out.port});
            links.insert(t2.link_at(h.out));
          }
  CHECK(links.size() == 12);  // 8 network links and 4 endpoint links
  for (int r : t2.switches()) {
    CHECK(used.count({r, 2}) == 1);  // -X
    CHECK(used.count({r, 3}) == 1);  // +X
  }
}

TEST_CASE("dateline: a packet crossing a torus wrap-around link moves to its class's second VC", "[topology][vc]") {
  const Topology t = make_torus(4, 4);
  // Links, in order: injection, network links, ejection. The wrap-around
  // link and the rest of its ring are on the second VC; turning into Y and
  // ejection go back to the first.
  CHECK(vcs(t, 0, 1) == "0 0 0");        // n0 r0 r1 n1
  CHECK(vcs(t, 0, 3) == "0 1 0");        // r0 -> r3 wraps
  CHECK(vcs(t, 2, 0) == "0 0 1 0");      // tie, +X: r2 r3, then r3 -> r0 wraps
  CHECK(vcs(t, 0, 7) == "0 1 0 0");      // wraps in X (r0 -> r3), turns to Y (r3 -> r7): first VC again
  CHECK(vcs(t, 1, 12) == "0 0 1 0");     // r1 -> r0 in X, r0 -> r12 wraps in Y
  CHECK(vcs(t, 13, 7) == "0 0 0 1 1 0");  // r13 r14 r15 in X, r15 -> r3 wraps in Y and r3 -> r7 stays on it
  // A dimension of 8: the second VC from the wrap-around link to the end of the ring.
  const Topology t8 = make_torus(8, 8);
  CHECK(path(t8, 6, 1) == "n6 r6 r7 r0 r1 n1");
  CHECK(vcs(t8, 6, 1) == "0 0 1 1 0");
  CHECK(vcs(t8, 1, 6) == "0 0 1 1 0");  // the same ring the other way: r1 r0, r0 -> r7 wraps, r7 r6
  // Links: the wrap-around links of dimensions of 3 or more are datelines.
  int datelines = 0;
  for (const Link& l : t8.links()) datelines += l.dateline;
  CHECK(datelines == 16);  // one per ring: 8 rows, 8 columns
  const Topology t28 = make_torus(2, 8);
  int datelines2 = 0;
  for (const Link& l : t28.links()) datelines2 += l.dateline;
  CHECK(datelines2 == 2);  // only the two columns of 8
  // A mesh never leaves the first VC.
  const Topology m = make_mesh(4, 4);
  for (int s = 0; s < 16; ++s)
    for (int d = 0; d < 16; ++d)
      if (s != d)
        for (const Hop& h : route(m, s, d)) CHECK(h.vc == 0);
}

TEST_CASE("BiGraph: a path's second switch-to-switch link is on its class's second VC", "[topology][vc]") {
  const Topology t = make_bigraph(4, 8);
  CHECK(t.vc_policy == VcPolicy::SwitchHop);
  CHECK(vcs(t, 0, 1) == "0 0");      // same switch
  CHECK(vcs(t, 0, 16) == "0 0 0");   // upper switch to lower switch: one switch-to-switch link
  CHECK(vcs(t, 0, 4) == "0 0 1 0");  // upper, lower, upper
  CHECK(vcs(t, 16, 20) == "0 0 1 0");  // lower, upper, lower
}

TEST_CASE("no routing deadlock: channel dependencies are acyclic on every platform's routes", "[topology][vc][deadlock]") {
  CHECK_FALSE(has_dependency_cycle(make_torus(4, 4)));
  CHECK_FALSE(has_dependency_cycle(make_torus(8, 8)));
  CHECK_FALSE(has_dependency_cycle(make_torus(5, 3)));
  CHECK_FALSE(has_dependency_cycle(make_torus(2, 2)));
  CHECK_FALSE(has_dependency_cycle(make_torus(8, 2)));
  CHECK_FALSE(has_dependency_cycle(make_mesh(4, 4)));
  CHECK_FALSE(has_dependency_cycle(make_mesh(8, 8)));
  CHECK_FALSE(has_dependency_cycle(make_fattree(16, 4)));
  CHECK_FALSE(has_dependency_cycle(make_fattree(64, 8)));
  CHECK_FALSE(has_dependency_cycle(make_bigraph(4, 8)));
  CHECK_FALSE(has_dependency_cycle(make_bigraph(4, 16)));
  CHECK_FALSE(has_dependency_cycle(make_dgx2(25, 0)));
  CHECK_FALSE(has_dependency_cycle(make_fattree2l(4, 25, 0)));
  // The check can fail: without their second VC the torus rings and
  // BiGraph's upper-lower-upper paths close cycles.
  CHECK(has_dependency_cycle(make_torus(4, 4), false));
  CHECK(has_dependency_cycle(make_torus(5, 3), false));
  CHECK(has_dependency_cycle(make_bigraph(4, 8), false));
}
