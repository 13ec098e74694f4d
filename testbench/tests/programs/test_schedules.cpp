// MultiTree (Huang et al., ISCA 2021, Algorithm 1) and the baselines as
// programs of the NICs' table operations (plain C++, STYLE.md convention 9):
// each a correct all-reduce by the program checker, compiled to the tables of
// Fig. 5 (the 2x2 mesh against Fig. 3 and Fig. 5); step counts, NOPs and
// table sizes; MultiTree's steps free of link contention; broken programs
// caught by the checker and the compile step; the network builders.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collectives/baselines.h"
#include "collectives/multitree.h"
#include "collectives/program_check.h"
#include "collectives/program_synthesis.h"
#include "collectives/schedule.h"
#include "collectives/table_decoder.h"
#include "collectives/table_program.h"
#include "core/error.h"
#include "topology/direct_networks.h"

using namespace incsim;
using namespace incsim::collectives;
using namespace incsim::topo;

namespace {

// The program is a correct all-reduce; its tables.
Schedule require_ok(const Program& p) {
  const ProgramCheck c = check_program(p);
  INFO(p.name << " on " << p.ranks << " nodes:\n" << c.report());
  REQUIRE(c.ok());
  return schedule_of(p);
}

// No link carries more messages in a step than its capacity.
void require_exclusive_links(const Schedule& s, const Topology& t) {
  const LinkLoad l = link_load(s, t);
  INFO(s.algorithm << " on " << t.name);
  for (const auto& o : l.over) INFO(o);
  CHECK(l.over.empty());
  CHECK(l.max <= 1.0);
}

// The first problem the checker reports.
std::string first_problem(const Program& p) {
  const ProgramCheck c = check_program(p);
  REQUIRE_FALSE(c.ok());
  return c.problems.front();
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
  Schedule s = require_ok(multitree_program(m));
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
  require_exclusive_links(s, m);
}

TEST_CASE("MultiTree is a correct all-reduce on mesh, torus, fat tree and BiGraph with exclusive links", "[multitree]") {
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
    const Program p = multitree_program(c.t);
    CHECK(p.name == (c.direct ? "multitree" : "multitree-indirect"));
    const Schedule s = require_ok(p);
    CHECK(s.steps == 2 * tr.steps);
    CHECK(s.reduce_steps == tr.steps);
    require_exclusive_links(s, c.t);
    CHECK(s.count(Op::Reduce) == n * n);
    // §V-A counts 2N entries a table: a Reduce and a Gather entry per flow,
    // more Gather entries where a node sends a flow in several steps (one
    // child a step through a fat tree's NIC link); and a NOP in every step a
    // node sends nothing, which are all that go without NOPs.
    for (const auto& table : s.tables)
      CHECK(std::count_if(table.begin(), table.end(), [](const Entry& e) { return e.op != Op::Nop; }) >= 2 * n);
    MultiTreeOptions bare;
    bare.nops = false;
    const Schedule without = require_ok(multitree_program(c.t, bare));
    CHECK(without.count(Op::Nop) == 0);
    CHECK(without.messages().size() == s.messages().size());
    int idle = 0;  // node-steps without a send
    for (int u = 0; u < n; ++u)
      for (int t = 1; t <= s.steps; ++t) {
        bool sends = false;
        for (const Entry& e : s.tables[u]) sends |= e.step == t && e.sends();
        idle += !sends;
      }
    CHECK(s.count(Op::Nop) == idle);
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
    } else {
      // One NIC link: each node adds one child per step, n - 1 steps as ring
      // (MultiTree §VI-A: "both MULTITREE and RING derive the same number of steps").
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
    if (sw == 16) require_exclusive_links(require_ok(multitree_program(g)), g);
  }
  // Paths through switches that have endpoints (upper-lower-upper) do worse.
  MultiTreeOptions any;
  any.max_switch_hops = 8;
  CHECK(multitree_trees(make_bigraph(4, 8), any).steps > 31);
}

TEST_CASE("ring: a correct all-reduce for n = 2..17 in 2(n-1) steps", "[baselines]") {
  for (int n = 2; n <= 17; ++n) {
    const Schedule s = require_ok(nic_ring_program(n));
    CHECK(s.steps == 2 * (n - 1));
    CHECK(s.count(Op::Nop) == 0);  // every node sends in every step
  }
  // A custom order, on a 4x4 torus: a snake ring uses each link once per step.
  std::vector<int> snake;
  for (int y = 0; y < 4; ++y)
    for (int i = 0; i < 4; ++i) snake.push_back(y * 4 + (y % 2 ? 3 - i : i));
  require_exclusive_links(require_ok(nic_ring_program(16, snake)), make_torus(4, 4));
  CHECK_THROWS_WITH(nic_ring_program(4, {0, 1, 1, 2}), "a ring order must list every node once");
}

bool has_entry(const Schedule& s, int node, const Entry& e) {
  const auto& t = s.tables[node];
  return std::find(t.begin(), t.end(), e) != t.end();
}

// The NIC ring is ring_program's, compiled for the NIC (ring_table_program):
// its messages are the ones the ring was written as by hand, for any order.
// In step s the node at position i sends flow i - s to position i + 1
// (Reduce), in step n - 1 + s flow i - s + 1 (Gather).
TEST_CASE("ring: the NIC ring is ring_program's, step for step, for every order", "[baselines][programs]") {
  for (int n : {2, 3, 5, 8, 16, 17}) {
    std::vector<int> id(n);
    for (int i = 0; i < n; ++i) id[i] = i;
    std::vector<int> reversed(id.rbegin(), id.rend()), rotated = id, shuffled = id;
    std::rotate(rotated.begin(), rotated.begin() + n / 2, rotated.end());
    for (int k = 0; k < n; ++k) std::swap(shuffled[k], shuffled[(7 * k + 1) % n]);
    for (const auto& order : {id, reversed, rotated, shuffled}) {
      const Schedule s = require_ok(nic_ring_program(n, order));
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
  const Schedule s4 = schedule_of(nic_ring_program(4));
  CHECK(s4.tables[0].size() == 8);
  CHECK(s4.tables[0][0] == E(Op::Reduce, 3, 1, {}, 1));
  CHECK(s4.tables[0][2] == E(Op::Reduce, 0, kNil, {3}, 3));
  CHECK(s4.tables[0][5] == E(Op::Gather, 3, 3, {1}, 5));
  CHECK(s4.tables[0][6] == E(Op::Gather, 1, 3, {}, 6));
  // A custom order: flow i ends reduced at order[i].
  const Schedule c4 = schedule_of(nic_ring_program(4, {2, 0, 3, 1}));
  CHECK(has_entry(c4, 2, E(Op::Reduce, 0, kNil, {1}, 3)));
  CHECK(has_entry(c4, 1, E(Op::Reduce, 2, 2, {}, 1)));
  CHECK(has_entry(c4, 0, E(Op::Gather, 2, 2, {}, 6)));
  // ring_program itself: each chunk a flow, rank r completes chunk r + 1.
  const Schedule p4 = require_ok(ring_table_program(ring_program(Collective::AllReduce, 4)));
  CHECK(has_entry(p4, 0, E(Op::Reduce, 1, kNil, {3}, 3)));
  CHECK(has_entry(p4, 3, E(Op::Reduce, 0, kNil, {2}, 3)));
}

TEST_CASE("ring_table_program refuses what a NIC ring cannot run in one sentence", "[baselines][programs]") {
  CHECK_THROWS_WITH(ring_table_program(ring_program(Collective::ReduceScatter, 4)),
                    "a NIC ring runs an all-reduce, not a reducescatter");
  CHECK_THROWS_WITH(ring_table_program(ring_program(Collective::AllReduce, 4, 2)),
                    "a NIC ring runs on one channel, and rank 0's operation 7 is on another");
  CHECK_THROWS_WITH(ring_table_program(tree_program(3, {{{kNone, {1, 2}}, {0, {}}, {0, {}}}})),
                    Catch::StartsWith("a NIC ring sends, receive-reduce-sends,"));
  // A rank that skips its first send: its first receive has no step before it.
  Program p = ring_program(Collective::AllReduce, 3);
  p.ops.erase(p.ops.begin());
  for (size_t r = 1; r < p.rank_begin.size(); ++r) --p.rank_begin[r];
  CHECK_THROWS_WITH(ring_table_program(p), "a NIC ring starts with a send, and rank 0's operation 0 receives");
  // A rank that sends a step late compiles to no table.
  Program late = ring_program(Collective::AllReduce, 3);
  std::swap(late.ops[0], late.ops[1]);
  CHECK_THROWS_AS(schedule_of(ring_table_program(late)), UserError);
}

TEST_CASE("double binary tree: NCCL's trees, a correct all-reduce for n = 2..33", "[baselines]") {
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
          if (c != kNone) CHECK((j ? nccl_tree1(n, c) : nccl_tree0(n, c)).parent == r);
      }
    for (bool inter : {true, false}) {
      const Schedule s = require_ok(dbtree_program(n, 1, true, inter));
      CHECK(s.algorithm == (inter ? "dbtree" : "dbtree-flat"));
      CHECK(s.flows.size() == 2);
      // Pipelined: k pieces per tree take k - 1 more (logical) steps than one.
      const Schedule p = require_ok(dbtree_program(n, 5, true, inter));
      CHECK(p.flows.size() == 10);
      CHECK(p.steps == s.steps + (inter ? 2 : 1) * 4);
      // Interleaved, a node sends in at most every other step of each tree.
      if (inter && n > 2) CHECK(p.count(Op::Nop) > 0);
      CHECK(require_ok(dbtree_program(n, 5, false, inter)).count(Op::Nop) == 0);
    }
  }
}

TEST_CASE("halving-doubling: a correct all-reduce for n = 2..33, 2 log2 p steps (+2)", "[baselines]") {
  for (int n = 2; n <= 33; ++n) {
    INFO("n = " << n);
    int p = 1, m = 0;
    while (p * 2 <= n) p *= 2, ++m;
    const Schedule s = require_ok(hd_program(n));
    CHECK(s.steps == 2 * m + (n > p ? 2 : 0));
    CHECK(static_cast<int>(s.flows.size()) == p);
    // With r = n - p > 0, the r ranks that hand their data over idle in the
    // 2m steps between; the p others in step 1 and, but for the r that hand
    // the result back, in the last step.
    const int r = n - p;
    CHECK(s.count(Op::Nop) == (r > 0 ? 2 * r * m + 2 * p : 0));
  }
}

TEST_CASE("2D rings: correct all-reduces on grids, one message per torus link and step", "[baselines]") {
  for (auto [kx, ky] : std::vector<std::pair<int, int>>{{2, 2}, {4, 4}, {8, 8}, {4, 2}, {1, 5}, {3, 1}, {3, 5}}) {
    INFO(kx << "x" << ky);
    for (const Program& p : {ring2d_program(kx, ky), ring2d_hier_program(kx, ky)}) {
      const Schedule s = require_ok(p);
      CHECK(s.steps == 2 * (kx - 1) + 2 * (ky - 1));
    }
  }
  require_exclusive_links(schedule_of(ring2d_program(4, 4)), make_torus(4, 4));
  require_exclusive_links(schedule_of(ring2d_hier_program(4, 4)), make_torus(4, 4));
}

TEST_CASE("the all-link 2D ring sends on all four links in every step, (k^2 - 1) / 2k^2 of the buffer on each",
          "[baselines]") {
  for (int k : {4, 8}) {
    INFO(k << "x" << k);
    const int n = k * k;
    const Schedule s = require_ok(ring2d_program(k, k));
    REQUIRE(s.slices == 4 * n);
    // Slices per directed pair and step; every pair is a torus neighbour.
    std::map<std::pair<int, int>, int> pair_slices;
    std::map<std::pair<int, int>, std::set<int>> sent_to;  // (node, step) -> neighbours
    for (const Message& m : s.messages()) {
      const int dx = (m.dst % k - m.src % k + k) % k, dy = (m.dst / k - m.src / k + k) % k;
      CHECK(((dx == 1 || dx == k - 1) && dy == 0) != ((dy == 1 || dy == k - 1) && dx == 0));
      pair_slices[{m.src, m.dst}] += s.flows[static_cast<size_t>(m.flow)].size;
      sent_to[{m.src, m.step}].insert(m.dst);
    }
    // Each quarter's k-1 reduce-scatter steps move k slices, its k-1 steps
    // along the other dimension one, and the all-gather as much again:
    // 2(k-1)(k+1) = 2(k^2 - 1) of the 4k^2 slices per link direction.
    CHECK(pair_slices.size() == static_cast<size_t>(4 * n));
    for (const auto& [pair, slices] : pair_slices) CHECK(slices == 2 * (n - 1));
    CHECK(sent_to.size() == static_cast<size_t>(n * s.steps));
    for (const auto& [node_step, to] : sent_to) CHECK(to.size() == 4);
    // A node's table takes a step's sends in turn to its four neighbours,
    // so interfaces handed out first come first served go four ways.
    const Program p = ring2d_program(k, k);
    for (int r = 0; r < n; ++r) {
      std::vector<std::pair<int, int>> sends;  // (step, peer) in table order
      for (uint32_t g = p.rank_begin[r]; g < p.rank_begin[r + 1]; ++g)
        if (p.ops[g].kind == OpKind::Send) sends.emplace_back(p.ops[g].timestep, p.ops[g].send_peer);
      for (size_t i = 0; i + 4 <= sends.size(); i += 4) {
        std::set<int> peers;
        for (size_t j = i; j < i + 4; ++j) {
          CHECK(sends[j].first == sends[i].first);
          peers.insert(sends[j].second);
        }
        CHECK(peers.size() == 4);
      }
    }
  }
}

TEST_CASE("a 2D ring with one step broken is caught by the checker", "[baselines]") {
  // Node 0 sends its partial sum of a block along the columns a step early,
  // in the step its row neighbour's last partial sum for it arrives.
  Program p = ring2d_program(4, 4);
  require_ok(p);
  const int first_column_step = 4;  // after the rows' three
  const auto send = std::find_if(p.ops.begin() + p.rank_begin[0], p.ops.begin() + p.rank_begin[1], [&](const Operation& o) {
    return o.kind == OpKind::Send && o.timestep == first_column_step && o.send_peer == 4;
  });
  REQUIRE(send != p.ops.begin() + p.rank_begin[1]);
  for (uint32_t g = p.rank_begin[4]; g < p.rank_begin[5]; ++g)
    if (p.ops[g].recv_peer == 0 && p.ops[g].dst == send->src && p.ops[g].timestep == first_column_step)
      p.ops[g].timestep = first_column_step - 1;
  send->timestep = first_column_step - 1;
  for (int r : {0, 4}) {  // each rank's operations in step order again, a step's sends first
    auto begin = p.ops.begin() + p.rank_begin[static_cast<size_t>(r)];
    std::stable_sort(begin, begin + p.op_count(r), [](const Operation& a, const Operation& b) {
      return std::make_pair(a.timestep, receives(a.kind)) < std::make_pair(b.timestep, receives(b.kind));
    });
  }
  CHECK_THAT(first_problem(p), Catch::Contains("lacks rank 1's input"));
}

TEST_CASE("HDRM: halving-doubling mapped onto BiGraph, every pair across the groups, one pair per link", "[baselines]") {
  const Topology g = make_bigraph(4, 8);
  const Schedule s = require_ok(hdrm_program(4, 8));
  CHECK(s.algorithm == "hdrm");
  require_exclusive_links(s, g);
  for (const Message& m : s.messages()) CHECK((m.src / 4 < 4) != (m.dst / 4 < 4));  // upper <-> lower
  // Without the mapping halving-doubling contends on BiGraph's links.
  CHECK(link_load(schedule_of(hd_program(32)), g).max > 1);
  CHECK_THROWS_WITH(hdrm_program(4, 6), Catch::StartsWith("hdrm needs a power of two of nodes per switch"));
}

TEST_CASE("broken table programs: the checker names wrong results, the compile step what a table cannot hold",
          "[tables]") {
  const Program good = multitree_program(make_mesh(4, 4));
  require_ok(good);
  // Rank 5's first send whose receiver reduces it (a Reduce message) and
  // whose receiver copies it (a Gather message).
  auto find_send = [&](OpKind receiver_kind) {
    for (int i = 0; i < good.op_count(5); ++i) {
      const Operation& o = good.op(5, i);
      if (o.kind != OpKind::Send) continue;
      const int peer = o.send_peer;
      for (int k = 0; k < good.op_count(peer); ++k) {
        const Operation& r = good.op(peer, k);
        if (r.kind == receiver_kind && r.recv_peer == 5 && r.dst == o.src && r.timestep == o.timestep) return i;
      }
    }
    return -1;
  };
  auto without = [&](int i) {
    Program p = good;
    p.ops.erase(p.ops.begin() + p.rank_begin[5] + i);
    for (size_t r = 6; r < p.rank_begin.size(); ++r) --p.rank_begin[r];
    return p;
  };
  SECTION("a Reduce message dropped") {
    const int i = find_send(OpKind::RecvReduceCopy);
    REQUIRE(i >= 0);
    CHECK_THAT(first_problem(without(i)), Catch::StartsWith("rank 5 sends ") && Catch::Contains("but rank"));
  }
  SECTION("a Gather message dropped") {
    const int i = find_send(OpKind::Recv);
    REQUIRE(i >= 0);
    CHECK_THAT(first_problem(without(i)), Catch::StartsWith("rank 5 sends "));
  }
  SECTION("a message received in another step than it is sent") {
    Program p = good;
    const int i = find_send(OpKind::RecvReduceCopy);
    p.ops[p.rank_begin[5] + i].timestep += 1;
    CHECK_THROWS_WITH(schedule_of(p), Catch::EndsWith("'s message in another step or chunk than it is sent"));
  }
  SECTION("a message whose receive takes it from another rank") {
    Program p = good;
    const int i = find_send(OpKind::Recv);
    REQUIRE(i >= 0);
    const Operation& o = p.op(5, i);
    for (uint32_t g = p.rank_begin[o.send_peer]; g < p.rank_begin[o.send_peer + 1]; ++g)
      if (p.ops[g].kind == OpKind::Recv && p.ops[g].recv_peer == 5 && p.ops[g].dst == o.src) {
        p.ops[g].recv_peer = 6;
        break;
      }
    CHECK_THROWS_WITH(schedule_of(p), "rank 5's send to rank " + std::to_string(o.send_peer) + " is never received");
  }
  SECTION("a partial sum sent in the step its child's arrives") {
    // 2 -> 1 -> 0 in one step: node 1 passes on its partial sum before node 2's is in.
    TableProgramBuilder b("early", 3, 1);
    b.reduce(0, 2, 1, 1);
    b.reduce(0, 1, 0, 1);
    b.gather(0, 0, 1, 2);
    b.gather(0, 1, 2, 3);
    CHECK_THAT(first_problem(b.build()), Catch::Contains("lacks rank 2's input chunk 0"));
    TableProgramBuilder late("late", 3, 1);  // a step later it is an all-reduce
    late.reduce(0, 2, 1, 1);
    late.reduce(0, 1, 0, 2);
    late.gather(0, 0, 1, 3);
    late.gather(0, 1, 2, 4);
    require_ok(late.build());
  }
  SECTION("a node's data counted twice") {
    // Two nodes, one flow: 0 sends to 1 and 1 sends back to 0, both reduce.
    TableProgramBuilder b("twice", 2, 1);
    b.reduce(0, 0, 1, 1);
    b.reduce(0, 1, 0, 2);
    CHECK_THAT(first_problem(b.build()), Catch::Contains("twice"));
  }
  SECTION("a Gather before the full sum") {
    TableProgramBuilder b("early gather", 3, 1);
    b.reduce(0, 1, 0, 1);
    b.gather(0, 0, 1, 2);
    b.gather(0, 0, 2, 2);
    CHECK_THAT(first_problem(b.build()), Catch::Contains("lacks rank 2's input chunk 0"));
  }
  SECTION("link contention is reported") {
    // Under dimension-order routing the double binary tree's messages of a
    // step share no link on the 4x4 torus, but two share one on the mesh.
    const LinkLoad l = link_load(schedule_of(dbtree_program(16)), make_mesh(4, 4));
    CHECK(l.max > 1);
    REQUIRE_FALSE(l.over.empty());
    CHECK_THAT(l.over.front(), Catch::StartsWith("in step ") && Catch::Contains(" carries 2 messages for a capacity of 1"));
    require_exclusive_links(schedule_of(dbtree_program(16)), make_torus(4, 4));
  }
  SECTION("a topology of another size") {
    CHECK_THROWS_WITH(link_load(schedule_of(good), make_mesh(3, 3)), "a schedule of 16 nodes on a topology of 9 endpoints");
  }
}

TEST_CASE("schedule tables print in the Fig. 5 layout and slices map to bytes", "[schedule]") {
  Schedule s = schedule_of(multitree_program(make_mesh(2, 2)));
  std::string text = format_tables(s);
  CHECK(text.find("Accelerator 3") != std::string::npos);
  CHECK(text.find("Reduce  3       1       nil") != std::string::npos);
  ByteRange a = slice_bytes(1000, 4, 3, 0, 1), b2 = slice_bytes(1000, 4, 3, 1, 2);
  CHECK(a.offset == 0);
  CHECK(a.length == 332);
  CHECK(b2.offset == 332);
  CHECK(b2.offset + b2.length == 1000);
}

namespace {
// What the decoder asked of its engine, in order: "issue I", "nop", "send S", "release S", "done".
struct StubEngine : TableDecoder::Engine {
  std::vector<std::string> log;
  std::vector<char> empties;  // [share]
  bool over = true;           // the lockstep count is over; a NOP starts one
  void issued(const Entry&, int index) override { log.push_back("issue " + std::to_string(index)); }
  void lockstep() override {
    log.push_back("nop");
    over = false;
  }
  bool lockstep_over() const override { return over; }
  bool empty(uint32_t s) const override { return s < empties.size() && empties[s]; }
  void activate(uint32_t s) override { log.push_back("send " + std::to_string(s)); }
  void released(uint32_t s) override { log.push_back("release " + std::to_string(s)); }
  void finished() override { log.push_back("done"); }
  std::vector<std::string> take() { return std::exchange(log, {}); }
};
}  // namespace

TEST_CASE("the table decoder issues by timestep and dependency, counts a NOP's lockstep and runs a lane in order",
          "[nic][decoder]") {
  // Node 0 of a hand schedule, flows of 100 bytes: a Reduce to node 1
  // (step 1), a NOP (step 2), a Reduce to node 2 waiting for node 1's
  // partial sum (step 3), and two Gathers to node 1 of one tree (step 4),
  // the second waiting for flow 1's sum.
  Schedule s;
  s.nodes = 3;
  s.slices = 3;
  s.flows = {{0, 1}, {1, 1}, {2, 1}};
  s.flow_tree = {0, 1, 1};
  const Op R = Op::Reduce, G = Op::Gather;
  s.tables = {{E(R, 0, 1, {}, 1), E(Op::Nop, kNil, kNil, {}, 2), E(R, 1, 2, {1}, 3), E(G, 2, kNil, {1}, 4),
               E(G, 1, 2, {1}, 4)},
              {}, {}};
  const TableView view = table_view(s, 0, {{0}, {1}, {2}}, {});
  REQUIRE(view.shares.size() == 4);
  const std::vector<ByteRange> flows(3, ByteRange{0, 100});
  StubEngine engine;
  TableDecoder d;

  SECTION("lockstep") {
    d.start(s.tables[0], view, flows, false, engine);
    d.advance();
    CHECK(engine.take() == std::vector<std::string>{"issue 0", "send 0"});
    d.sent(0);  // the step's message has left: the NOP's step comes
    CHECK(engine.take() == std::vector<std::string>{"release 0", "issue 1", "nop"});
    d.advance();  // the lockstep count still runs
    CHECK(engine.take().empty());
    engine.over = true;
    d.advance();  // step 3: entry 2 waits for its child's 100 bytes
    CHECK(engine.take().empty());
    CHECK(d.timestep() == 3);
    CHECK_FALSE(d.arrived(1, true, 60));
    CHECK(d.arrived(1, true, 40));
    d.advance();
    CHECK(engine.take() == std::vector<std::string>{"issue 2", "send 1"});
    d.sent(1);  // step 4: flow 2's Gather awaits nothing, flow 1's waits for its sum
    CHECK(engine.take() == std::vector<std::string>{"release 1", "issue 3", "send 2"});
    CHECK(d.head() == 4);
    CHECK(d.arrived(1, false, 100));
    d.advance();  // in lockstep a lane does not wait
    CHECK(engine.take() == std::vector<std::string>{"issue 4", "send 3"});
    d.sent(2);
    CHECK(engine.take() == std::vector<std::string>{"release 2"});
    d.sent(3);
    CHECK(engine.take() == std::vector<std::string>{"release 3", "done"});
    CHECK(d.finished());
  }
  SECTION("dataflow: no steps, no NOPs, a lane's second message after its first") {
    d.start(s.tables[0], view, flows, true, engine);
    CHECK(d.head() == 1);  // the NOP holds nothing
    d.advance();
    CHECK(engine.take() == std::vector<std::string>{"issue 0", "send 0", "issue 3", "send 2"});
    CHECK(d.arrived(1, true, 100));
    d.advance();
    CHECK(engine.take() == std::vector<std::string>{"issue 2", "send 1"});
    CHECK(d.arrived(1, false, 100));
    d.advance();  // flow 1's Gather joins the lane of flow 2's, still sending
    CHECK(engine.take() == std::vector<std::string>{"issue 4"});
    d.sent(2);
    CHECK(engine.take() == std::vector<std::string>{"release 2", "send 3"});
    d.sent(0);
    d.sent(1);
    CHECK_FALSE(d.finished());
    d.sent(3);
    CHECK(d.finished());
    CHECK(engine.take().back() == "done");
  }
  SECTION("an empty share is released at once and holds no step") {
    engine.empties = {1};
    d.start(s.tables[0], view, flows, false, engine);
    d.advance();
    CHECK(engine.take() == std::vector<std::string>{"issue 0", "release 0", "issue 1", "nop"});
  }
}
