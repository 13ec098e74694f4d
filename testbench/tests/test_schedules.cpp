// Schedule synthesis (plain C++, STYLE.md convention 9): MultiTree (Huang et
// al., ISCA 2021, Algorithm 1) and the baselines as schedule tables, each
// checked by the symbolic verify(); the 2x2 mesh against Fig. 3 and Fig. 5;
// step counts; verify() catching broken schedules; the network builders.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "collectives/baselines.h"
#include "collectives/multitree.h"
#include "collectives/program_synthesis.h"
#include "collectives/schedule.h"
#include "core/error.h"
#include "topology/direct_networks.h"

using namespace incsim;
using namespace incsim::collectives;
using namespace incsim::topo;

namespace {

void require_ok(const Schedule& s, int n, const VerifyOptions& opt = {}) {
  VerifyResult r = verify(s, n, opt);
  INFO(s.algorithm << " on " << n << " nodes:\n" << r.report());
  REQUIRE(r.ok());
}

// Switch-to-switch links between two endpoints (Topology::hops counts the
// links of the path, the two endpoint links included).
int switch_hops(const Topology& t, int a, int b) { return t.hops(a, b) - 2; }

// Largest switch-to-switch distance between two endpoints.
int diameter(const Topology& t) {
  int d = 0;
  const int n = static_cast<int>(t.endpoints().size());
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b) d = std::max(d, switch_hops(t, a, b));
  return d;
}

Entry E(Op op, int flow, int parent, std::vector<int> children, int step) {
  Entry e;
  e.op = op;
  e.flow = flow;
  e.parent = parent;
  e.children = std::move(children);
  e.step = step;
  e.start = flow;
  e.size = 1;
  return e;
}

}  // namespace

TEST_CASE("network builders: sizes, degrees and distances", "[topology]") {
  Topology m = make_mesh(4, 4);
  CHECK(m.endpoints().size() == 16);
  CHECK(m.switches().size() == 16);
  CHECK(m.links().size() == 24 + 16);
  CHECK(diameter(m) == 6);
  CHECK(m.node(m.find("r0")).ports == 3);  // corner: 2 neighbours + endpoint
  CHECK(m.node(m.find("r5")).ports == 5);
  // The endpoint link carries the router's whole bandwidth (MultiTree §V-A).
  CHECK(m.links()[m.link_at({m.find("n0"), 0})].bw_GBps == Approx(32.0));
  Topology t = make_torus(4, 4);
  CHECK(t.links().size() == 32 + 16);
  CHECK(diameter(t) == 4);
  Topology t2 = make_torus(2, 2);  // size-2 dimensions: two parallel links
  CHECK(t2.links().size() == 8 + 4);
  Topology f = make_fattree(64, 8);
  CHECK(f.endpoints().size() == 64);
  CHECK(f.switches().size() == 16);
  CHECK(diameter(f) == 2);
  Topology g = make_bigraph(4, 8);
  CHECK(g.endpoints().size() == 32);
  CHECK(g.switches().size() == 8);
  CHECK(switch_hops(g, 0, 1) == 0);    // same switch
  CHECK(switch_hops(g, 0, 16) == 1);   // upper switch 0 to lower switch 0
  CHECK(switch_hops(g, 0, 4) == 2);    // two upper switches, through a lower one
  CHECK_THROWS_AS(make_mesh(1, 1), UserError);
  CHECK_THROWS_AS(make_torus(0, 4), UserError);
  CHECK_THROWS_AS(make_fattree(10, 4), UserError);
  CHECK_THROWS_AS(make_bigraph(4, 7), UserError);
}

TEST_CASE("MultiTree on the 2x2 mesh builds the trees of Fig. 3", "[multitree]") {
  Topology m = make_mesh(2, 2);
  MultiTreeTrees tr = multitree_trees(m);
  CHECK(tr.direct);
  CHECK(tr.steps == 2);
  // Fig. 3c: eight allocations (0)-(7) in time step 1, the last being 3->2 in
  // tree 3 (§III-B), then one per tree in time step 2.
  struct X {
    int tree, parent, child, step;
  };
  const std::vector<X> want = {{0, 0, 2, 1}, {1, 1, 3, 1}, {2, 2, 0, 1}, {3, 3, 1, 1},
                               {0, 0, 1, 1}, {1, 1, 0, 1}, {2, 2, 3, 1}, {3, 3, 2, 1},
                               {0, 2, 3, 2}, {1, 3, 2, 2}, {2, 0, 1, 2}, {3, 1, 0, 2}};
  REQUIRE(tr.edges.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("allocation " << i);
    CHECK(tr.edges[i].seq == static_cast<int>(i));
    CHECK(tr.edges[i].tree == want[i].tree);
    CHECK(tr.edges[i].parent == want[i].parent);
    CHECK(tr.edges[i].child == want[i].child);
    CHECK(tr.edges[i].step == want[i].step);
  }
}

TEST_CASE("MultiTree on the 2x2 mesh yields the schedule tables of Fig. 5", "[multitree]") {
  Topology m = make_mesh(2, 2);
  Schedule s = multitree(m);
  CHECK(s.steps == 4);
  CHECK(s.reduce_steps == 2);
  const Op R = Op::Reduce, G = Op::Gather;
  // Fig. 5, in our order (step, op, flow). The rows the figure shows: node 0
  // Reduce 3->1 at 1, Reduce 1->1 and 2->2 (child 1) at 2, Gather 2 from 2 to 1
  // at 4; node 2 Reduce 1->3 at 1, 3->3 and 0->0 (child 3) at 2, Gather 0 to 3
  // at 4; node 3 Gather 3 as root to 1, 2 at 3. Rows the figure's text does
  // not show follow our convention: the root's Reduce entry (parent nil) at
  // the step its last child's Reduce arrives, a leaf's Gather (no children)
  // at the step the flow arrives.
  const std::vector<std::vector<Entry>> want = {
      {E(R, 3, 1, {}, 1), E(R, 0, kNil, {2, 1}, 2), E(R, 1, 1, {}, 2), E(R, 2, 2, {1}, 2),
       E(G, 0, kNil, {2, 1}, 3), E(G, 1, 1, {}, 3), E(G, 2, 2, {1}, 4), E(G, 3, 1, {}, 4)},
      {E(R, 2, 0, {}, 1), E(R, 0, 0, {}, 2), E(R, 1, kNil, {3, 0}, 2), E(R, 3, 3, {0}, 2),
       E(G, 1, kNil, {3, 0}, 3), E(G, 0, 0, {}, 3), E(G, 2, 0, {}, 4), E(G, 3, 3, {0}, 4)},
      {E(R, 1, 3, {}, 1), E(R, 0, 0, {3}, 2), E(R, 2, kNil, {0, 3}, 2), E(R, 3, 3, {}, 2),
       E(G, 2, kNil, {0, 3}, 3), E(G, 3, 3, {}, 3), E(G, 0, 0, {3}, 4), E(G, 1, 3, {}, 4)},
      {E(R, 0, 2, {}, 1), E(R, 1, 1, {2}, 2), E(R, 2, 2, {}, 2), E(R, 3, kNil, {1, 2}, 2),
       E(G, 3, kNil, {1, 2}, 3), E(G, 2, 2, {}, 3), E(G, 0, 2, {}, 4), E(G, 1, 1, {2}, 4)},
  };
  REQUIRE(s.tables.size() == 4);
  for (int u = 0; u < 4; ++u) {
    INFO("node " << u << "\n" << format_tables(s));
    std::vector<Entry> got = s.tables[u], exp = want[u];
    auto key = [](const Entry& e) { return std::make_tuple(e.step, e.op, e.flow); };
    std::sort(exp.begin(), exp.end(), [&](const Entry& a, const Entry& b) { return key(a) < key(b); });
    REQUIRE(got.size() == exp.size());  // 2N entries, no NOP: every node sends in every step
    for (size_t i = 0; i < exp.size(); ++i) CHECK(got[i] == exp[i]);
  }
  VerifyOptions opt;
  opt.topology = &m;
  opt.exclusive_links = true;
  require_ok(s, 4, opt);
}

TEST_CASE("MultiTree verifies on mesh, torus, fat tree and BiGraph with exclusive links", "[multitree]") {
  struct Case {
    const char* name;
    Topology t;
    bool direct;
    bool square = false, mesh = false, fattree = false;
  };
  std::vector<Case> cases;
  for (int k : {2, 4, 8}) {
    cases.push_back({"mesh", make_mesh(k, k), true, true, true});
    cases.push_back({"torus", make_torus(k, k), true, true, false});
  }
  cases.push_back({"mesh 4x2", make_mesh(4, 2), true});
  cases.push_back({"torus 8x4", make_torus(8, 4), true});
  cases.push_back({"fattree 16", make_fattree(16, 4), false, false, false, true});
  cases.push_back({"fattree 64", make_fattree(64, 8), false, false, false, true});
  cases.push_back({"bigraph 4x8", make_bigraph(4, 8), false});
  for (auto& c : cases) {
    INFO(c.name << " with " << c.t.endpoints().size() << " nodes");
    const int n = static_cast<int>(c.t.endpoints().size());
    MultiTreeTrees tr = multitree_trees(c.t);
    CHECK(tr.direct == c.direct);
    Schedule s = multitree(c.t);
    CHECK(s.steps == 2 * tr.steps);
    VerifyOptions opt;
    opt.topology = &c.t;
    opt.exclusive_links = true;
    require_ok(s, n, opt);
    CHECK(s.count(Op::Reduce) == n * n);
    if (c.direct) {
      // Tree edges are one physical hop, so all-gather needs at least the
      // diameter, and a node with d links takes in at most d chunks a step,
      // so at least (n - 1) / d steps. Algorithm 1 (greedy) reaches the bound
      // on square meshes and stays within one step of it on square tori.
      for (const auto& e : tr.edges) CHECK(switch_hops(c.t, e.parent, e.child) == 1);
      int min_deg = 1 << 30;
      for (int sw : c.t.switches()) min_deg = std::min(min_deg, c.t.node(sw).ports - 1);
      const int bound = std::max(diameter(c.t), (n - 2) / min_deg + 1);
      CHECK(tr.steps >= bound);
      if (c.square && c.mesh) CHECK(tr.steps == bound);
      if (c.square && !c.mesh) CHECK(tr.steps <= bound + 1);
    } else if (c.fattree) {
      // One NIC link: each node adds one child per step, n - 1 steps as ring
      // (MultiTree §VI-A: "both MULTITREE and RING derive the same number of steps").
      CHECK(tr.steps == n - 1);
    } else {
      CHECK(tr.steps == n - 1);
    }
  }
}

// §VI-A: "In these two topologies [fat tree and BiGraph], both MULTITREE and
// RING derive the same number of steps."
TEST_CASE("MultiTree on BiGraph takes n - 1 all-gather steps like ring", "[multitree]") {
  for (int sw : {8, 16}) {
    Topology g = make_bigraph(4, sw);
    MultiTreeTrees tr = multitree_trees(g);
    CHECK(tr.steps == 4 * sw - 1);
    // Tree edges join nodes of one switch or of the two groups, never two
    // switches of one group.
    for (const auto& e : tr.edges) CHECK(switch_hops(g, e.parent, e.child) <= 1);
    if (sw == 16) {
      VerifyOptions opt;
      opt.topology = &g;
      opt.exclusive_links = true;
      require_ok(multitree(g), 64, opt);
    }
  }
  // Paths through switches that have endpoints (upper-lower-upper) do worse.
  MultiTreeOptions any;
  any.max_switch_hops = 8;
  CHECK(multitree_trees(make_bigraph(4, 8), any).steps > 31);
}

TEST_CASE("ring: verified for n = 2..17 with 2(n-1) steps", "[baselines]") {
  for (int n = 2; n <= 17; ++n) {
    Schedule s = ring(n);
    CHECK(s.steps == 2 * (n - 1));
    require_ok(s, n);
  }
  // A custom order, on a 4x4 torus: a snake ring uses each link once per step.
  std::vector<int> snake;
  for (int y = 0; y < 4; ++y)
    for (int i = 0; i < 4; ++i) snake.push_back(y * 4 + (y % 2 ? 3 - i : i));
  Topology t = make_torus(4, 4);
  VerifyOptions opt;
  opt.topology = &t;
  opt.exclusive_links = true;
  require_ok(ring(16, snake), 16, opt);
  CHECK_THROWS_AS(ring(4, {0, 1, 1, 2}), UserError);
}

bool has_entry(const Schedule& s, int node, const Entry& e) {
  const auto& t = s.tables[node];
  return std::find(t.begin(), t.end(), e) != t.end();
}

// The NIC ring is ring_program compiled to a table (ring_schedule): its
// messages are the ones the ring was written as by hand, for any order. In
// step s the node at position i sends flow i - s to position i + 1 (Reduce),
// in step n - 1 + s flow i - s + 1 (Gather).
TEST_CASE("ring: the NIC ring is ring_program's, step for step, for every order", "[baselines][programs]") {
  for (int n : {2, 3, 5, 8, 16, 17}) {
    std::vector<int> id(n);
    for (int i = 0; i < n; ++i) id[i] = i;
    std::vector<int> reversed(id.rbegin(), id.rend()), rotated = id, shuffled = id;
    std::rotate(rotated.begin(), rotated.begin() + n / 2, rotated.end());
    for (int k = 0; k < n; ++k) std::swap(shuffled[k], shuffled[(7 * k + 1) % n]);
    for (const auto& order : {id, reversed, rotated, shuffled}) {
      const Schedule s = ring(n, order);
      require_ok(s, n);
      CHECK(s.reduce_steps == n - 1);
      std::vector<std::array<int, 5>> want, got;  // (step, src, dst, op, flow)
      for (int st = 1; st <= n - 1; ++st)
        for (int i = 0; i < n; ++i) {
          const int to = order[(i + 1) % n];
          want.push_back({st, order[i], to, static_cast<int>(Op::Reduce), (i - st + n) % n});
          want.push_back({n - 1 + st, order[i], to, static_cast<int>(Op::Gather), (i - st + 1 + n) % n});
        }
      for (const Message& m : s.messages()) got.push_back({m.step, m.src, m.dst, static_cast<int>(m.op), m.flow});
      std::sort(want.begin(), want.end());
      INFO("ring of " << n << " nodes");
      CHECK(got == want);
    }
  }
  // Entries as the hand-written ring had them (incsim --platform torus --dims
  // 2x2 --algorithm ring --print-schedule): node 0 first sends flow 3, ends
  // flow 0 reduced and gathers flow 1 last.
  const Schedule s4 = ring(4);
  CHECK(s4.tables[0].size() == 8);
  CHECK(s4.tables[0][0] == E(Op::Reduce, 3, 1, {}, 1));
  CHECK(s4.tables[0][2] == E(Op::Reduce, 0, kNil, {3}, 3));
  CHECK(s4.tables[0][5] == E(Op::Gather, 3, 3, {1}, 5));
  CHECK(s4.tables[0][6] == E(Op::Gather, 1, 3, {}, 6));
  // A custom order: flow i ends reduced at order[i].
  const Schedule c4 = ring(4, {2, 0, 3, 1});
  CHECK(has_entry(c4, 2, E(Op::Reduce, 0, kNil, {1}, 3)));
  CHECK(has_entry(c4, 1, E(Op::Reduce, 2, 2, {}, 1)));
  CHECK(has_entry(c4, 0, E(Op::Gather, 2, 2, {}, 6)));
  // ring_program itself: each chunk a flow, rank r completes chunk r + 1.
  const Schedule p4 = ring_schedule(ring_program(Collective::AllReduce, 4));
  require_ok(p4, 4);
  CHECK(has_entry(p4, 0, E(Op::Reduce, 1, kNil, {3}, 3)));
  CHECK(has_entry(p4, 3, E(Op::Reduce, 0, kNil, {2}, 3)));
}

TEST_CASE("ring_schedule refuses what a NIC ring cannot run in one sentence", "[baselines][programs]") {
  CHECK_THROWS_WITH(ring_schedule(ring_program(Collective::ReduceScatter, 4)),
                    "a NIC ring runs an all-reduce, not a reducescatter");
  CHECK_THROWS_WITH(ring_schedule(ring_program(Collective::AllReduce, 4, 2)),
                    "a NIC ring runs on one channel, and rank 0's operation 7 is on another");
  CHECK_THROWS_WITH(ring_schedule(tree_program(3, {{{kNone, {1, 2}}, {0, {}}, {0, {}}}})),
                    Catch::StartsWith("a NIC ring sends, receive-reduce-sends,"));
  // A rank that skips its first send: its first receive has no step before it.
  Program p = ring_program(Collective::AllReduce, 3);
  p.ops.erase(p.ops.begin());
  for (size_t r = 1; r < p.rank_begin.size(); ++r) --p.rank_begin[r];
  CHECK_THROWS_WITH(ring_schedule(p), "a NIC ring starts with a send, and rank 0's operation 0 receives");
  // A rank that sends a step late is refused as schedule_of refuses it.
  Program late = ring_program(Collective::AllReduce, 3);
  std::swap(late.ops[0], late.ops[1]);
  CHECK_THROWS_AS(ring_schedule(late), UserError);
}

TEST_CASE("double binary tree: NCCL's trees and verified for n = 2..33", "[baselines]") {
  // NCCL's tree 0 for 8 ranks: 0 -> 4; 4 -> 2, 6; 2 -> 1, 3; 6 -> 5, 7.
  CHECK(nccl_tree0(8, 0).child1 == 4);
  CHECK(nccl_tree0(8, 4).parent == 0);
  CHECK(nccl_tree0(8, 4).child0 == 2);
  CHECK(nccl_tree0(8, 4).child1 == 6);
  CHECK(nccl_tree0(8, 6).parent == 4);
  CHECK(nccl_tree0(8, 7).parent == 6);
  CHECK(nccl_tree0(8, 1).parent == 2);
  // Out of range: for 6 ranks, 5's parent (5^1)|2 = 6 is out, so 4.
  CHECK(nccl_tree0(6, 5).parent == 4);
  CHECK(nccl_tree0(6, 4).child1 == 5);
  // Tree 1 mirrors for even n and shifts for odd n.
  CHECK(nccl_tree1(8, 7).child1 == 3);
  CHECK(nccl_tree1(7, 1).child1 == 5);
  for (int n = 2; n <= 33; ++n) {
    INFO("n = " << n);
    // Children and parents agree in both trees.
    for (int j = 0; j < 2; ++j)
      for (int r = 0; r < n; ++r) {
        TreeLinks l = j ? nccl_tree1(n, r) : nccl_tree0(n, r);
        for (int c : {l.child0, l.child1})
          if (c != kNil) CHECK((j ? nccl_tree1(n, c) : nccl_tree0(n, c)).parent == r);
      }
    for (bool inter : {true, false}) {
      Schedule s = double_binary_tree(n, inter);
      require_ok(s, n);
      CHECK(s.flows.size() == 2);
      // Pipelined: k pieces per tree take k - 1 more (logical) steps than one.
      Schedule p = double_binary_tree(n, inter, 5);
      require_ok(p, n);
      CHECK(p.flows.size() == 10);
      CHECK(p.steps == s.steps + (inter ? 2 : 1) * 4);
    }
  }
}

TEST_CASE("halving-doubling: verified for n = 2..33, 2 log2 p steps (+2)", "[baselines]") {
  for (int n = 2; n <= 33; ++n) {
    INFO("n = " << n);
    int p = 1, m = 0;
    while (p * 2 <= n) p *= 2, ++m;
    Schedule s = halving_doubling(n);
    CHECK(s.steps == 2 * m + (n > p ? 2 : 0));
    CHECK(static_cast<int>(s.flows.size()) == p);
    require_ok(s, n);
  }
}

TEST_CASE("2D ring: verified on grids, one message per torus link and step", "[baselines]") {
  for (auto [kx, ky] : std::vector<std::pair<int, int>>{{2, 2}, {4, 4}, {8, 8}, {4, 2}, {1, 5}, {3, 1}, {3, 5}}) {
    INFO(kx << "x" << ky);
    Schedule s = ring2d(kx, ky);
    CHECK(s.steps == 2 * (kx - 1) + 2 * (ky - 1));
    require_ok(s, kx * ky);
  }
  Topology t = make_torus(4, 4);
  VerifyOptions opt;
  opt.topology = &t;
  opt.exclusive_links = true;
  require_ok(ring2d(4, 4), 16, opt);
}

TEST_CASE("verify catches broken schedules", "[verify]") {
  Topology m = make_mesh(4, 4);
  const Schedule good = multitree(m);
  require_ok(good, 16);
  auto find = [](const Schedule& s, int node, Op op, bool sends) {
    const auto& t = s.tables[node];
    for (size_t i = 0; i < t.size(); ++i)
      if (t[i].op == op && t[i].sends() == sends && !t[i].children.empty()) return static_cast<long>(i);
    return -1L;
  };
  SECTION("an internal Reduce entry dropped") {
    Schedule s = good;
    long i = find(s, 5, Op::Reduce, true);
    REQUIRE(i >= 0);
    s.tables[5].erase(s.tables[5].begin() + i);
    VerifyResult r = verify(s, 16);
    CHECK_FALSE(r.ok());
    INFO(r.report());
    CHECK(r.report().find("not expected") != std::string::npos);
    CHECK(r.report().find("ends without the full sum") != std::string::npos);
  }
  SECTION("a Gather entry dropped") {
    Schedule s = good;
    long i = find(s, 0, Op::Gather, true);
    REQUIRE(i >= 0);
    s.tables[0].erase(s.tables[0].begin() + i);
    CHECK_FALSE(verify(s, 16).ok());
  }
  SECTION("a Reduce entry duplicated") {
    Schedule s = good;
    long i = find(s, 5, Op::Reduce, true);
    s.tables[5].push_back(s.tables[5][i]);
    VerifyResult r = verify(s, 16);
    CHECK_FALSE(r.ok());
    CHECK(r.report().find("2 Reduce entries") != std::string::npos);
  }
  SECTION("a Gather entry duplicated") {
    Schedule s = good;
    long i = find(s, 0, Op::Gather, true);
    s.tables[0].push_back(s.tables[0][i]);
    CHECK_FALSE(verify(s, 16).ok());
  }
  SECTION("a send in the step its child's Reduce arrives") {
    Schedule s = good;
    for (auto& e : s.tables[5])
      if (e.op == Op::Reduce && e.parent != kNil && !e.children.empty()) {
        e.step = 1;  // children send in step 1 at the earliest
        break;
      }
    VerifyResult r = verify(s, 16);
    CHECK_FALSE(r.ok());
    CHECK(r.report().find("before child") != std::string::npos);
  }
  SECTION("a node's data counted twice") {
    // Two nodes, one flow: 0 sends to 1 and 1 sends back to 0, both reduce.
    ScheduleBuilder b("bad", 2, 1);
    b.reduce(0, 0, 1, 1);
    b.reduce(0, 1, 0, 2);
    VerifyResult r = verify(b.build(), 2);
    CHECK_FALSE(r.ok());
  }
  SECTION("a Gather before the full sum") {
    ScheduleBuilder b("bad", 3, 1);
    b.reduce(0, 1, 0, 1);
    b.gather(0, 0, 1, 2);
    b.gather(0, 0, 2, 2);
    VerifyResult r = verify(b.build(), 3);
    CHECK_FALSE(r.ok());
    CHECK(r.report().find("without holding the full sum") != std::string::npos);
  }
  SECTION("link contention is reported") {
    // Under dimension-order routing the double binary tree's messages of a
    // step share no link on the 4x4 torus, but two share one on the mesh.
    Topology t = make_mesh(4, 4);
    VerifyOptions opt;
    opt.topology = &t;
    opt.exclusive_links = true;
    VerifyResult r = verify(double_binary_tree(16), 16, opt);
    CHECK_FALSE(r.ok());
    CHECK(r.max_link_load > 1);
    CHECK(r.report().find("carries") != std::string::npos);
  }
  SECTION("wrong node count") { CHECK_FALSE(verify(good, 15).ok()); }
}

TEST_CASE("schedule tables print in the Fig. 5 layout and slices map to bytes", "[schedule]") {
  Schedule s = multitree(make_mesh(2, 2));
  std::string text = format_tables(s);
  CHECK(text.find("Accelerator 3") != std::string::npos);
  CHECK(text.find("Reduce  3       1       nil") != std::string::npos);
  ByteRange a = slice_bytes(1000, 4, 3, 0, 1), b2 = slice_bytes(1000, 4, 3, 1, 2);
  CHECK(a.offset == 0);
  CHECK(a.length == 332);
  CHECK(b2.offset == 332);
  CHECK(b2.offset + b2.length == 1000);
}
