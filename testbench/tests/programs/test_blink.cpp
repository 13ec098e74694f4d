// Blink's TreeGen groundwork (plain C++, no SystemC): the DGX-1P/DGX-1V
// graphs, the unique allocations, MWU arborescence packing checked against
// Edmonds' theorem (computed here by max-flow, independently of the packer),
// and the minimised tree sets of Blink §3.2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "collectives/blink_synthesis.h"
#include "collectives/blink_trees.h"
#include "collectives/packing.h"
#include "collectives/program_check.h"
#include "collectives/program_synthesis.h"
#include "collectives/multitree.h"
#include "collectives/schedule.h"
#include "collectives/table_program.h"
#include "collectives/tree_shares.h"
#include "core/error.h"
#include "topology/dgx1.h"

using namespace incsim;
using namespace incsim::collectives;
using incsim::topo::Dgx1Gen;

namespace {

// Max-flow (Edmonds-Karp) from s to t on the summed capacity matrix.
double max_flow(const CapGraph& g, int s, int t) {
  std::vector<std::vector<double>> c(g.n, std::vector<double>(g.n, 0.0));
  for (const CapEdge& e : g.edges) c[e.from][e.to] += e.cap;
  double flow = 0;
  for (;;) {
    std::vector<int> prev(g.n, -1);
    prev[s] = s;
    std::deque<int> q{s};
    while (!q.empty() && prev[t] < 0) {
      int u = q.front();
      q.pop_front();
      for (int v = 0; v < g.n; ++v)
        if (prev[v] < 0 && c[u][v] > 1e-12) {
          prev[v] = u;
          q.push_back(v);
        }
    }
    if (prev[t] < 0) return flow;
    double aug = 1e300;
    for (int v = t; v != s; v = prev[v]) aug = std::min(aug, c[prev[v]][v]);
    for (int v = t; v != s; v = prev[v]) {
      c[prev[v]][v] -= aug;
      c[v][prev[v]] += aug;
    }
    flow += aug;
  }
}

// Edmonds (1973): the best broadcast rate from root, i.e. the largest
// fractional arborescence packing, is the smallest root-to-v minimum cut.
double edmonds_rate(const CapGraph& g, int root) {
  double best = 1e300;
  for (int v = 0; v < g.n; ++v)
    if (v != root) best = std::min(best, max_flow(g, root, v));
  return best;
}

// Independent of check_packing(): every tree reaches every vertex from the
// root by its own edges, and no edge carries more than its capacity.
void require_valid(const CapGraph& g, const Packing& p) {
  std::vector<double> load(g.edges.size(), 0.0);
  for (const Tree& t : p.trees) {
    REQUIRE(t.weight > 0);
    REQUIRE(static_cast<int>(t.parent_edge.size()) == g.n);
    std::vector<std::vector<int>> kids(g.n);
    int edges = 0;
    for (int v = 0; v < g.n; ++v) {
      const int x = t.parent_edge[v];
      if (x < 0) continue;
      REQUIRE(x < static_cast<int>(g.edges.size()));
      REQUIRE(g.edges[x].to == v);
      kids[g.edges[x].from].push_back(v);
      load[x] += t.weight;
      ++edges;
    }
    REQUIRE(edges == g.n - 1);
    std::vector<bool> seen(g.n, false);
    std::vector<int> stack{p.root};
    seen[p.root] = true;
    int reached = 1;
    while (!stack.empty()) {
      int u = stack.back();
      stack.pop_back();
      for (int v : kids[u])
        if (!seen[v]) {
          seen[v] = true;
          ++reached;
          stack.push_back(v);
        }
    }
    REQUIRE(reached == g.n);  // spans every allocated GPU
  }
  for (size_t x = 0; x < g.edges.size(); ++x) REQUIRE(load[x] <= g.edges[x].cap * (1 + 1e-9));
}

}  // namespace

TEST_CASE("DGX-1 NVLink graphs follow Blink Fig. 1", "[blink][dgx1]") {
  for (Dgx1Gen gen : {Dgx1Gen::P100, Dgx1Gen::V100}) {
    int pairs = 0, doubled = 0;
    for (int a = 0; a < 8; ++a) {
      int per_gpu = 0;
      for (int b = 0; b < 8; ++b) {
        CHECK(topo::dgx1_nvlinks(gen, a, b) == topo::dgx1_nvlinks(gen, b, a));
        per_gpu += topo::dgx1_nvlinks(gen, a, b);
        if (a < b && topo::dgx1_nvlinks(gen, a, b) > 0) ++pairs;
        if (a < b && topo::dgx1_nvlinks(gen, a, b) == 2) ++doubled;
      }
      CHECK(per_gpu == (gen == Dgx1Gen::P100 ? 4 : 6));  // links per P100 / V100
    }
    CHECK(pairs == 16);  // the same cube-mesh pairs on both generations
    CHECK(doubled == (gen == Dgx1Gen::P100 ? 0 : 8));
  }
  // Cube-mesh: quads 0-3 and 4-7 fully joined, GPU i to i+4, nothing else.
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      const bool joined = a != b && (a / 4 == b / 4 || (a % 4) == (b % 4));
      CHECK((topo::dgx1_nvlinks(Dgx1Gen::P100, a, b) > 0) == joined);
    }
  // Blink §5.2 and A.3: GPUs 1 and 4 lack an NVLink; 0, 1, 3 are fully joined.
  CHECK(topo::dgx1_nvlinks(Dgx1Gen::V100, 1, 4) == 0);
  CHECK(topo::dgx1_nvlink_connected(Dgx1Gen::V100, {1, 4, 5, 6}));
  CHECK(topo::dgx1_nvlink_connected(Dgx1Gen::V100, {2, 3, 6, 7}));
  CHECK_FALSE(topo::dgx1_nvlink_connected(Dgx1Gen::P100, {0, 1, 6}));
  CHECK(topo::dgx1_nvlink_GBps(Dgx1Gen::P100) == 20.0);
  CHECK(topo::dgx1_nvlink_GBps(Dgx1Gen::V100) == 25.0);
}

TEST_CASE("DGX-1 Topology: one bridge per NVLink, the PCIe tree the allocation reaches", "[blink][dgx1]") {
  SECTION("all 8 GPUs of a DGX-1V") {
    topo::Topology t = topo::make_dgx1(Dgx1Gen::V100, {0, 1, 2, 3, 4, 5, 6, 7});
    std::map<topo::Dgx1Part, int> parts;
    for (size_t n = 0; n < t.nodes().size(); ++n) ++parts[topo::dgx1_part(t, static_cast<int>(n))];
    CHECK(parts[topo::Dgx1Part::Gpu] == 8);
    CHECK(parts[topo::Dgx1Part::NvLink] == 24);  // 8 x 6 / 2
    CHECK(parts[topo::Dgx1Part::PcieSwitch] == 4);
    CHECK(parts[topo::Dgx1Part::CpuSocket] == 2);
    CHECK(t.links().size() == 24 * 2 + 8 + 4 + 1);
    for (int g = 0; g < 8; ++g) CHECK(t.node(t.find("gpu" + std::to_string(g))).ports == 7);
    // The two NVLinks of a doubled pair are separate bridges at 25 GB/s.
    REQUIRE(t.find("nvl0_3_1") >= 0);
    CHECK(t.find("nvl0_1_1") < 0);
    const topo::PortRef gpu0_pcie{t.find("gpu0"), 6};
    CHECK(t.node(t.peer(gpu0_pcie).node).name == "pcie0");
    CHECK(t.links()[t.link_at(gpu0_pcie)].bw_GBps == Approx(15.75));
    for (const topo::Link& l : t.links())
      if (topo::dgx1_part(t, l.b.node) == topo::Dgx1Part::NvLink) CHECK(l.bw_GBps == 25.0);
    // Every GPU reaches every other (routes exist).
    for (int s = 0; s < 8; ++s)
      for (int d = 0; d < 8; ++d)
        if (s != d) CHECK(t.hops(s, d) > 0);
  }
  SECTION("GPUs 1, 4, 5, 6: only their NVLinks, PCIe across the sockets") {
    topo::Topology t = topo::make_dgx1(Dgx1Gen::V100, {1, 4, 5, 6});
    int bridges = 0;
    for (size_t n = 0; n < t.nodes().size(); ++n)
      if (topo::dgx1_part(t, static_cast<int>(n)) == topo::Dgx1Part::NvLink) ++bridges;
    CHECK(bridges == 2 + 1 + 1 + 2);  // 1-5 (2), 4-5, 4-6, 5-6 (2)
    CHECK(t.find("pcie1") < 0);       // GPUs 2, 3 not allocated
    CHECK(t.find("cpu0") >= 0);
    CHECK(t.find("cpu1") >= 0);
    CHECK(t.hops(0, 1) > 0);  // gpu1 to gpu4 only over PCIe and the socket link
  }
  SECTION("DGX-1P: 20 GB/s NVLinks, 4 per GPU") {
    topo::Topology t = topo::make_dgx1(Dgx1Gen::P100, {0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(t.node(t.find("gpu5")).ports == 5);
    CHECK(t.links()[t.link_at({t.find("gpu5"), 0})].bw_GBps == 20.0);
  }
}

TEST_CASE("Unique allocations of 3 to 8 GPUs: 46 on DGX-1V, 14 on DGX-1P (Blink §5.2)", "[blink][dgx1]") {
  auto v = topo::dgx1_unique_allocations(Dgx1Gen::V100, 3, 8);
  auto p = topo::dgx1_unique_allocations(Dgx1Gen::P100, 3, 8);
  CHECK(v.size() == 46);
  CHECK(p.size() == 14);
  std::map<size_t, int> per_size;
  for (const auto& a : v) ++per_size[a.size()];
  CHECK(per_size == std::map<size_t, int>{{3, 5}, {4, 14}, {5, 14}, {6, 10}, {7, 2}, {8, 1}});
  for (const auto& a : v) CHECK(topo::dgx1_nvlink_connected(Dgx1Gen::V100, a));
  // The paper's named allocations are among the representatives' classes;
  // {0, 1, 2, 3} and {4, 5, 6, 7} are one class (Blink §2.1).
  CHECK(std::count(v.begin(), v.end(), std::vector<int>{0, 1, 2, 3}) == 1);
  CHECK(std::count(v.begin(), v.end(), std::vector<int>{4, 5, 6, 7}) == 0);
}

TEST_CASE("Bad allocations and options are UserErrors", "[blink][dgx1]") {
  CHECK_THROWS_AS(topo::make_dgx1(Dgx1Gen::V100, {0, 9}), UserError);
  CHECK_THROWS_AS(topo::make_dgx1(Dgx1Gen::V100, {0, 1, 1}), UserError);
  CHECK_THROWS_AS(topo::make_dgx1(Dgx1Gen::V100, {3}), UserError);
  CHECK_THROWS_AS(blink_dgx1_trees(Dgx1Gen::V100, {1, 9}, 1), UserError);
  CHECK_THROWS_AS(blink_dgx1_trees(Dgx1Gen::V100, {2, 2, 3}, 2), UserError);
  CHECK_THROWS_AS(blink_dgx1_trees(Dgx1Gen::V100, {}, 0), UserError);
  CHECK_THROWS_AS(blink_dgx1_trees(Dgx1Gen::V100, {0, 1, 2}, 5), UserError);  // root not allocated
  CHECK_THROWS_AS(blink_dgx1_trees(Dgx1Gen::P100, {0, 1, 6}, 0), UserError);  // no NVLink to GPU 6
  BlinkOptions bad;
  bad.eps = 1.0;
  CHECK_THROWS_AS(blink_dgx1_trees(Dgx1Gen::V100, {0, 1, 2}, 0, bad), UserError);
  bad.eps = 0;
  CHECK_THROWS_AS(blink_dgx1_trees(Dgx1Gen::V100, {0, 1, 2}, 0, bad), UserError);
  CHECK_THROWS_AS(topo::parse_dgx1_gen("dgx2"), UserError);
  // A graph where the root cannot reach a vertex.
  CapGraph g;
  g.n = 3;
  g.edges = {{0, 1, 1.0}, {2, 1, 1.0}};
  CHECK_THROWS_AS(pack_mwu(g, 0, 0.1), UserError);
}

TEST_CASE("Minimum arborescence matches brute force on small graphs", "[blink][packing]") {
  // A fixed pseudo-random family: 5 vertices, up to 12 edges, integer lengths.
  unsigned seed = 12345;
  auto rnd = [&]() { return (seed = seed * 1103515245u + 12345u) >> 16; };
  for (int trial = 0; trial < 200; ++trial) {
    CapGraph g;
    g.n = 5;
    std::vector<double> len;
    const int m = 6 + static_cast<int>(rnd() % 7);
    for (int i = 0; i < m; ++i) {
      int a = static_cast<int>(rnd() % 5), b = static_cast<int>(rnd() % 5);
      if (a == b) continue;
      g.edges.push_back({a, b, 1.0});
      len.push_back(static_cast<double>(rnd() % 10));
    }
    // Brute force: every choice of one in-edge per non-root vertex that forms a tree.
    std::vector<std::vector<int>> into(g.n);
    for (size_t x = 0; x < g.edges.size(); ++x) into[g.edges[x].to].push_back(static_cast<int>(x));
    double best = 1e300;
    std::vector<int> choice(g.n, -1);
    std::function<void(int)> rec = [&](int v) {
      if (v == g.n) {
        for (int u = 1; u < g.n; ++u) {
          int w = u, steps = 0;
          while (w != 0 && steps++ <= g.n) w = g.edges[choice[w]].from;
          if (w != 0) return;
        }
        double c = 0;
        for (int u = 1; u < g.n; ++u) c += len[choice[u]];
        best = std::min(best, c);
        return;
      }
      for (int x : into[v]) {
        choice[v] = x;
        rec(v + 1);
      }
    };
    rec(1);
    std::vector<int> t = min_arborescence(g, 0, len);
    if (best >= 1e300) {
      CHECK(t.empty());
      continue;
    }
    REQUIRE(!t.empty());
    double c = 0;
    for (int x : t)
      if (x >= 0) c += len[x];
    CHECK(c == Approx(best));
    Packing p;
    p.root = 0;
    p.trees.push_back({t, 1.0});
    CHECK(check_packing(g, p, 1e300).empty());
  }
}

TEST_CASE("DGX-1V with all 8 GPUs: 6 trees of rate 1.0 (Blink §3.2)", "[blink][packing]") {
  const std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7};
  BlinkTrees b = blink_dgx1_trees(Dgx1Gen::V100, all, 0);
  const double opt = edmonds_rate(b.graph, 0);
  CHECK(opt == Approx(6.0));
  require_valid(b.graph, b.mwu);
  require_valid(b.graph, b.trees);
  CHECK(b.mwu.rate() >= (1 - 0.05) * opt);
  REQUIRE(b.trees.trees.size() == 6);
  for (const Tree& t : b.trees.trees) CHECK(t.weight == Approx(1.0));
  CHECK(b.trees.rate() == Approx(6.0));
  CHECK(b.rate_GBps() == Approx(150.0));
  CHECK(b.min_stats.denominator == 1);  // the paper's 0/1 program sufficed
  std::printf("DGX-1V 8 GPUs: MWU %zu trees (rate %.4f, %d iterations, bound %.4f), minimised %zu trees\n%s",
              b.mwu.trees.size(), b.mwu.rate(), b.mwu_stats.iterations, b.mwu_stats.upper_bound,
              b.trees.trees.size(), format_packing(b.graph, b.trees).c_str());
}

TEST_CASE("Every unique allocation and root: packings valid, near Edmonds' optimum", "[blink][packing]") {
  for (Dgx1Gen gen : {Dgx1Gen::V100, Dgx1Gen::P100}) {
    for (double eps : {0.1, 0.05}) {
      const auto t0 = std::chrono::steady_clock::now();
      size_t mwu_trees = 0, min_trees = 0, runs = 0, relaxed = 0;
      for (const auto& alloc : topo::dgx1_unique_allocations(gen, 3, 8))
        for (int root : alloc) {
          BlinkOptions o;
          o.eps = eps;
          BlinkTrees b = blink_dgx1_trees(gen, alloc, root, o);
          const int r = static_cast<int>(std::find(alloc.begin(), alloc.end(), root) - alloc.begin());
          const double opt = edmonds_rate(b.graph, r);
          INFO(topo::to_string(gen) << " eps " << eps << " root " << root << " allocation size " << alloc.size());
          require_valid(b.graph, b.mwu);
          require_valid(b.graph, b.trees);
          CHECK(b.mwu.rate() >= (1 - eps) * opt - 1e-9);
          CHECK(b.mwu.rate() <= opt + 1e-9);
          CHECK(b.mwu_stats.upper_bound >= opt - 1e-9);
          CHECK(b.trees.rate() >= (1 - 0.05) * b.mwu.rate() - 1e-9);
          CHECK(b.trees.trees.size() <= b.mwu.trees.size());
          mwu_trees += b.mwu.trees.size();
          min_trees += b.trees.trees.size();
          relaxed += b.min_stats.denominator != 1;
          ++runs;
        }
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%s eps %.2f: %zu (allocation, root) runs, mean %.1f MWU trees -> %.2f trees, %zu relaxed, %.0f ms\n",
                  topo::to_string(gen), eps, runs, double(mwu_trees) / runs, double(min_trees) / runs, relaxed, ms);
    }
  }
}

TEST_CASE("Packing is deterministic", "[blink][packing]") {
  BlinkTrees a = blink_dgx1_trees(Dgx1Gen::V100, {1, 4, 5, 6}, 5);
  BlinkTrees b = blink_dgx1_trees(Dgx1Gen::V100, {1, 4, 5, 6}, 5);
  REQUIRE(a.trees.trees.size() == b.trees.trees.size());
  for (size_t i = 0; i < a.trees.trees.size(); ++i) {
    CHECK(a.trees.trees[i].parent_edge == b.trees.trees[i].parent_edge);
    CHECK(a.trees.trees[i].weight == b.trees.trees[i].weight);
  }
  CHECK(a.mwu.rate() == b.mwu.rate());
}

TEST_CASE("A doubled pair carries rate 2 on one tree", "[blink][packing]") {
  // GPUs 0 and 3 of a DGX-1V share two NVLinks: one tree, weight 2.
  BlinkTrees b = blink_dgx1_trees(Dgx1Gen::V100, {0, 3}, 0);
  REQUIRE(b.trees.trees.size() == 1);
  CHECK(b.trees.trees[0].weight == Approx(2.0));
  CHECK(edmonds_rate(b.graph, 0) == Approx(2.0));
}

TEST_CASE("Fractional capacities: the program is relaxed step by step", "[blink][packing]") {
  // A triangle of half-capacity links: 0/1 weights fit nothing, halves do.
  CapGraph g;
  g.n = 3;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b)
      if (a != b) g.edges.push_back({a, b, 0.5});
  Packing mwu = pack_mwu(g, 0, 0.05);
  CHECK(mwu.rate() >= 0.95 * edmonds_rate(g, 0));
  MinimizeStats st;
  Packing p = minimize_trees(g, mwu, {}, &st);
  require_valid(g, p);
  CHECK(st.denominator == 2);
  REQUIRE(st.tried.size() == 2);
  CHECK(st.tried[0] == 0.0);
  CHECK(p.rate() == Approx(1.0));
  CHECK(p.trees.size() == 2);
  // Thirds with weights in halves at most: only the continuous program fits.
  for (CapEdge& e : g.edges) e.cap = 1.0 / 3;
  mwu = pack_mwu(g, 0, 0.05);
  MinimizeOptions o;
  o.max_denominator = 2;
  p = minimize_trees(g, mwu, o, &st);
  require_valid(g, p);
  CHECK(st.denominator == 0);
  CHECK(st.tried.size() == 3);
  CHECK(p.rate() >= 0.95 * mwu.rate());
  CHECK(p.rate() == Approx(2.0 / 3));
}

TEST_CASE("Random graphs: MWU within (1-eps) of Edmonds, minimised packings valid", "[blink][packing]") {
  unsigned seed = 777;
  auto rnd = [&]() { return (seed = seed * 1103515245u + 12345u) >> 16; };
  int relaxed = 0;
  for (int trial = 0; trial < 150; ++trial) {
    CapGraph g;
    g.n = 3 + static_cast<int>(rnd() % 5);
    for (int a = 0; a < g.n; ++a)
      for (int b = 0; b < g.n; ++b)
        if (a != b && rnd() % 3 != 0) {
          // Mixed link types: whole NVLinks and PCIe-like fractions (15.75 / 25).
          const double caps[] = {1.0, 2.0, 0.63, 0.3};
          g.edges.push_back({a, b, caps[rnd() % 4]});
        }
    const int root = static_cast<int>(rnd() % g.n);
    const double opt = edmonds_rate(g, root);
    if (opt <= 0) {
      CHECK_THROWS_AS(pack_mwu(g, root, 0.1), UserError);
      continue;
    }
    const double eps = trial % 2 ? 0.1 : 0.05;
    INFO("trial " << trial << " n " << g.n << " eps " << eps);
    Packing mwu = pack_mwu(g, root, eps);
    require_valid(g, mwu);
    CHECK(mwu.rate() >= (1 - eps) * opt - 1e-9);
    CHECK(mwu.rate() <= opt + 1e-9);
    MinimizeStats st;
    const auto t0 = std::chrono::steady_clock::now();
    Packing p = minimize_trees(g, mwu, {}, &st);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (std::getenv("BLINK_VERBOSE")) std::printf("trial %d n %d m %zu: %zu candidates, den %d, %zu trees, %.1f ms\n", trial, g.n, g.edges.size(), mwu.trees.size(), st.denominator, p.trees.size(), ms);
    require_valid(g, p);
    CHECK(p.rate() >= 0.95 * mwu.rate() - 1e-9);
    CHECK(p.trees.size() <= mwu.trees.size());
    relaxed += st.denominator != 1;
  }
  CHECK(relaxed > 0);  // the relaxation steps were exercised
}

TEST_CASE("Paper allocations: 1,4,5,6 and 2,3,6,7 on DGX-1V", "[blink][packing]") {
  for (const std::vector<int>& alloc : {std::vector<int>{1, 4, 5, 6}, std::vector<int>{2, 3, 6, 7}}) {
    for (int root : alloc) {
      BlinkTrees b = blink_dgx1_trees(Dgx1Gen::V100, alloc, root);
      const int r = static_cast<int>(std::find(alloc.begin(), alloc.end(), root) - alloc.begin());
      require_valid(b.graph, b.trees);
      CHECK(b.trees.rate() == Approx(edmonds_rate(b.graph, r)));
      std::printf("DGX-1V {%d,%d,%d,%d} root %d: rate %.3f (%.1f GB/s) in %zu trees (MWU %zu)\n%s", alloc[0],
                  alloc[1], alloc[2], alloc[3], root, b.trees.rate(), b.rate_GBps(), b.trees.trees.size(),
                  b.mwu.trees.size(), format_packing(b.graph, b.trees).c_str());
    }
  }
}

// ------------------------------------------------------------ tree schedules

namespace {

// Does the link graph hold a Hamiltonian cycle? (Brute force over orders.)
bool hamiltonian(const CapGraph& g) {
  if (g.n == 2) return !g.edges.empty();
  std::vector<std::vector<double>> c(g.n, std::vector<double>(g.n, 0.0));
  for (const CapEdge& e : g.edges) c[e.from][e.to] += e.cap;
  std::vector<int> order(g.n);
  for (int i = 0; i < g.n; ++i) order[i] = i;
  do {
    bool ok = true;
    for (int i = 0; i < g.n && ok; ++i) ok = c[order[i]][order[(i + 1) % g.n]] > 0;
    if (ok) return true;
  } while (std::next_permutation(order.begin() + 1, order.end()));
  return false;
}

}  // namespace

namespace {

// A correct program of its collective; its tables.
Schedule require_ok(const Program& p) {
  const ProgramCheck c = check_program(p);
  INFO(p.name << " on " << p.ranks << " ranks:\n" << c.report());
  REQUIRE(c.ok());
  return schedule_of(p);
}

}  // namespace

TEST_CASE("Blink trees as programs: all-reduce and broadcast are correct for every unique allocation",
          "[blink][schedule]") {
  for (Dgx1Gen gen : {Dgx1Gen::V100, Dgx1Gen::P100})
    for (const auto& alloc : topo::dgx1_unique_allocations(gen, 3, 8)) {
      INFO(topo::to_string(gen) << " allocation of " << alloc.size() << " from gpu" << alloc[0]);
      const BlinkTrees b = blink_dgx1_trees(gen, alloc, alloc[0]);
      const int n = static_cast<int>(alloc.size());
      const Schedule ar = require_ok(tree_shares_program("blink", n, blink_shares(b.graph, b.trees, true), 4, kNone));
      CHECK(ar.flows.size() == 4 * b.trees.trees.size());
      CHECK(ar.flow_tree.size() == ar.flows.size());
      const Schedule bc = require_ok(tree_shares_program("blink", n, blink_shares(b.graph, b.trees, false), 4, 0));
      // Every tree's messages use only NVLink-joined pairs: n-1 per chunk.
      CHECK(bc.messages().size() == bc.flows.size() * (n - 1));
      for (const Message& m : bc.messages()) CHECK(topo::dgx1_nvlinks(gen, alloc[m.src], alloc[m.dst]) > 0);
      // Shares follow the weights: a tree of weight w holds 16 w units per chunk.
      for (size_t t = 0; t < b.trees.trees.size(); ++t)
        CHECK(bc.flows[t * 4].size == std::max(1L, std::lround(16 * b.trees.trees[t].weight)));
    }
}

TEST_CASE("NCCL-style rings: one per direction of every packed NVLink cycle, none without a Hamiltonian cycle",
          "[blink][rings]") {
  CHECK(pack_rings(dgx1_nvlink_graph(Dgx1Gen::V100, {0, 1, 2, 3, 4, 5, 6, 7})).size() == 6);
  CHECK(pack_rings(dgx1_nvlink_graph(Dgx1Gen::P100, {0, 1, 2, 3, 4, 5, 6, 7})).size() == 4);
  CHECK(pack_rings(dgx1_nvlink_graph(Dgx1Gen::V100, {1, 4, 5, 6})).empty());  // Blink §5.2: NCCL falls back to PCIe
  CHECK(pack_rings(dgx1_nvlink_graph(Dgx1Gen::V100, {2, 3, 6, 7})).size() == 2);  // one bidirectional ring (§5.2)
  for (Dgx1Gen gen : {Dgx1Gen::V100, Dgx1Gen::P100})
    for (const auto& alloc : topo::dgx1_unique_allocations(gen, 3, 8)) {
      const CapGraph g = dgx1_nvlink_graph(gen, alloc);
      const int n = g.n;
      const auto rings = pack_rings(g);
      INFO(topo::to_string(gen) << " allocation of " << n << " from gpu" << alloc[0] << ": " << rings.size() << " rings");
      CHECK(rings.empty() == !hamiltonian(g));
      CHECK(rings.size() % 2 == 0);
      // Each ring visits every rank once over links; no link direction is over-used.
      std::map<std::pair<int, int>, int> use;
      for (const auto& r : rings) {
        REQUIRE(static_cast<int>(r.size()) == n);
        CHECK(std::set<int>(r.begin(), r.end()).size() == static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) ++use[{r[i], r[(i + 1) % n]}];
      }
      for (const auto& [e, k] : use) CHECK(k <= topo::dgx1_nvlinks(gen, alloc[e.first], alloc[e.second]));
      if (rings.empty()) continue;
      require_ok(tree_shares_program("ring", n, ring_shares(n, rings, true, 0), 3, kNone));
      require_ok(tree_shares_program("ring", n, ring_shares(n, rings, false, 0), 3, 0));
    }
}

TEST_CASE("Cut bounds: broadcast equals Edmonds' optimum, all-reduce the ring's per-GPU bound on DGX-1V/8",
          "[blink][bounds]") {
  for (Dgx1Gen gen : {Dgx1Gen::V100, Dgx1Gen::P100})
    for (const auto& alloc : topo::dgx1_unique_allocations(gen, 3, 8)) {
      const CapGraph g = dgx1_nvlink_graph(gen, alloc);
      const CutBounds b = cut_bounds(g, 0);
      CHECK(b.broadcast == Approx(edmonds_rate(g, 0)));
      CHECK(b.allreduce <= b.broadcast + 1e-9);
    }
  const CutBounds v8 = cut_bounds(dgx1_nvlink_graph(Dgx1Gen::V100, {0, 1, 2, 3, 4, 5, 6, 7}), 0);
  CHECK(v8.broadcast == Approx(6));
  CHECK(v8.allreduce == Approx(6 * 8 / 14.0));
}

TEST_CASE("One-hop trees: m trees, each rooted at one rank with every other rank one hop away", "[blink][schedule]") {
  const Schedule s = require_ok(tree_shares_program("blink", 16, one_hop_shares(16), 2, kNone));
  CHECK(s.flows.size() == 32);
  for (const Message& m : s.messages()) CHECK((m.op == Op::Reduce ? m.dst : m.src) == s.flow_tree[m.flow]);
}

// MultiTree §III-C3 says it builds Blink's trees on a switch: on DGX-2 each
// of its flows is reduced straight to one root and sent straight back.
TEST_CASE("MultiTree's DGX-2 trees are Blink's one-hop trees, in more lockstep steps", "[blink][schedule]") {
  const Schedule mt = schedule_of(multitree_program(topo::make_dgx2(25, 0)));
  REQUIRE(mt.flows.size() == 16);
  std::vector<int> root(16, kNil);
  for (const Message& m : mt.messages()) {
    const int r = m.op == Op::Reduce ? m.dst : m.src;
    if (root[m.flow] == kNil) root[m.flow] = r;
    CHECK(r == root[m.flow]);  // one hop: every message has the root at one end
  }
  CHECK(std::set<int>(root.begin(), root.end()).size() == 16);  // each GPU roots one flow
  const Schedule oh = schedule_of(tree_shares_program("blink", 16, one_hop_shares(16), 1, kNone));
  CHECK(mt.messages().size() == oh.messages().size());
  CHECK(oh.steps == 2);
  CHECK(mt.steps > oh.steps);  // MultiTree spreads the 15 children over steps of 6 (one per port)
}

TEST_CASE("The checker finds a node that forwards a broadcast in the step it receives it", "[blink][schedule]") {
  // A chain 0 -> 1 -> 2 where node 1 forwards in the step it receives: its
  // send comes before its receive, so node 2 gets node 1's own data.
  TableProgramBuilder b("bad", 3, 1);
  b.broadcast_from(0);
  b.gather(0, 0, 1, 1);
  b.gather(0, 1, 2, 1);
  const ProgramCheck v = check_program(b.build(false));
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.report(), Catch::Contains("rank 2's output chunk 0"));
  // The same chain a step later is fine.
  TableProgramBuilder g("good", 3, 1);
  g.broadcast_from(0);
  g.gather(0, 0, 1, 1);
  g.gather(0, 1, 2, 2);
  require_ok(g.build(false));
}

TEST_CASE("DGX-1 cluster: servers' GPUs in order, one NIC per server into the network switch", "[blink][dgx1]") {
  const topo::Topology t = topo::make_dgx1_cluster(Dgx1Gen::V100, {{0, 1, 2}, {4, 5, 6, 7}}, 5.0, 1500);
  REQUIRE(t.endpoints().size() == 7);
  CHECK(t.node(t.endpoints()[0]).name == "s0_gpu0");
  CHECK(t.node(t.endpoints()[3]).name == "s1_gpu4");
  const int net = t.find("net");
  REQUIRE(net >= 0);
  CHECK(topo::dgx1_part(t, net) == topo::Dgx1Part::Network);
  int nics = 0;
  for (const auto& l : t.links())
    if (l.a.node == net || l.b.node == net) {
      ++nics;
      CHECK(l.bw_GBps == 5.0);
      const int other = l.a.node == net ? l.b.node : l.a.node;
      CHECK(topo::dgx1_part(t, other) == topo::Dgx1Part::CpuSocket);
    }
  CHECK(nics == 2);
  // NVLinks stay inside a server: s1_gpu4 reaches s1_gpu5 by NVLink, s0_gpu0 by none.
  CHECK(topo::dgx1_nvlink_ports(t, 3, 4).size() == 1);
  CHECK(topo::dgx1_nvlink_ports(t, 3, 0).empty());
  CHECK_THROWS_AS(topo::make_dgx1_cluster(Dgx1Gen::V100, {{0, 1}}, 5.0, 0), UserError);
}

// synthesize_trees picks the trees or rings for a machine and says which
// links they take, without SystemC: every form is a correct program of its
// collective, in dataflow issue, its links in its hints.
namespace {

// The ports rank r's messages to d take on channel ch, as the program's hints say (empty: the routes').
std::vector<int> hinted(const Program& p, int r, int d, int ch = kNone) {
  for (const LinkHint& h : p.links)
    if (h.rank == r && h.peer == d && h.channel == ch) return h.ports;
  return {};
}

// Trees: each on a channel of its own.
size_t trees(const Program& p) {
  std::set<int> channels;
  for (const Operation& o : p.ops)
    if (o.kind != OpKind::Nop) channels.insert(o.channel);
  return channels.size();
}

}  // namespace

TEST_CASE("Tree synthesis for a machine: DGX-1 trees, rings, hybrid and three-phase, and one-hop trees on a switch",
          "[blink][synthesis]") {
  TreeSynthesisOptions o;
  o.platform = "dgx1v";
  o.max_payload_bytes = 256;
  o.header_bytes = 16;
  o.chunks = 2;
  auto check = [](const TreeSynthesis& s, int n, bool allreduce) {
    const ProgramCheck v = check_program(s.program);
    INFO(v.report());
    CHECK(v.ok());
    CHECK(s.program.ranks == n);
    CHECK(s.program.collective == (allreduce ? Collective::AllReduce : Collective::Broadcast));
    CHECK(s.program.dataflow);
    CHECK(schedule_of(s.program).flows.size() == 2 * trees(s.program));
  };
  const topo::Topology v8 = topo::make_dgx1(Dgx1Gen::V100, {0, 1, 2, 3, 4, 5, 6, 7});
  TreeSynthesis s = synthesize_trees(v8, 8, o);
  CHECK(trees(s.program) == 6);  // Blink §3.2: 6 trees of rate 1
  CHECK(s.text.rfind("# blink on dgx1v GPUs 0,1,2,3,4,5,6,7, root gpu0: 6 trees", 0) == 0);
  CHECK(s.algbw_bound_GBps > 0);
  CHECK(s.program.links.size() == 8 * 7);  // every pair: its NVLinks, or PCIe
  CHECK(hinted(s.program, 0, 1) == topo::dgx1_nvlink_ports(v8, 0, 1));
  CHECK(hinted(s.program, 0, 7) == std::vector<int>{topo::dgx1_pcie_port(v8, 0)});  // no NVLink between 0 and 7
  check(s, 8, true);
  o.allreduce = false;
  o.hybrid = true;
  s = synthesize_trees(v8, 8, o);
  CHECK(trees(s.program) == 7);  // the PCIe chain beside the 6 trees (A.3), on channel 6
  CHECK(s.program.links.size() == 2 * 8 * 7);
  CHECK(hinted(s.program, 1, 2, 6) == std::vector<int>{topo::dgx1_pcie_port(v8, 1)});
  CHECK(hinted(s.program, 1, 2) == topo::dgx1_nvlink_ports(v8, 1, 2));
  check(s, 8, false);
  o.allreduce = true;
  CHECK_THROWS_AS(synthesize_trees(v8, 8, o), UserError);  // hybrid is a broadcast
  o.hybrid = false;
  o.rings = true;
  s = synthesize_trees(v8, 8, o);
  CHECK(s.text.rfind("# ring on dgx1v GPUs 0,1,2,3,4,5,6,7: 6 rings over NVLink", 0) == 0);
  CHECK(s.program.name == "ring");
  check(s, 8, true);
  // Blink §5.2: no NVLink ring on 1,4,5,6, so NCCL's ring takes PCIe; Blink's trees do not exist.
  const topo::Topology v4 = topo::make_dgx1(Dgx1Gen::V100, {1, 4, 5, 6});
  s = synthesize_trees(v4, 4, o);
  CHECK(s.text.find("1 rings over PCIe") != std::string::npos);
  CHECK(hinted(s.program, 0, 1) == std::vector<int>{topo::dgx1_pcie_port(v4, 0)});
  check(s, 4, true);
  o.rings = false;
  const topo::Topology v3 = topo::make_dgx1(Dgx1Gen::V100, {0, 3, 5});
  CHECK_THROWS_AS(synthesize_trees(v3, 3, o), UserError);
  const topo::Topology two = topo::make_dgx1_cluster(Dgx1Gen::V100, {{0, 1, 2}, {0, 1, 2, 3, 4}}, 5.0, 1500);
  s = synthesize_trees(two, 8, o);
  CHECK(s.text.rfind("# blink three-phase", 0) == 0);
  check(s, 8, true);
  const TreeSynthesis star = synthesize_trees(topo::make_star(4, 25, 0), 4, o);
  CHECK(trees(star.program) == 4);
  CHECK(star.largest_share == 0.25);
  CHECK(star.algbw_bound_GBps == 0);
  CHECK(star.program.links.empty());  // the routes reach every peer
  check(star, 4, true);
}
