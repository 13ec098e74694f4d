// The algorithms written as program builders give the NICs the tables the
// schedule builders gave: schedule_of(new program) equals
// schedule_of(schedule_program(old schedule)) for every algorithm and a wide
// range of shapes. Kept while both exist; the old builders go next.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>

#include "collectives/baselines.h"
#include "collectives/blink_synthesis.h"
#include "collectives/multitree.h"
#include "collectives/program_synthesis.h"
#include "collectives/tree_schedule.h"
#include "core/error.h"
#include "topology/dgx1.h"
#include "topology/direct_networks.h"

using namespace incsim;
using namespace incsim::collectives;

namespace {

int programs_equal = 0, programs_compared = 0;

void require_same(const Program& fresh, const Schedule& old, const std::string& what) {
  INFO(what);
  const Program was = schedule_program(old);
  const Schedule a = schedule_of(fresh), b = schedule_of(was);
  REQUIRE(a.algorithm == b.algorithm);
  REQUIRE(a.nodes == b.nodes);
  REQUIRE(a.slices == b.slices);
  REQUIRE(a.steps == b.steps);
  REQUIRE(a.reduce_steps == b.reduce_steps);
  REQUIRE(a.broadcast_root == b.broadcast_root);
  REQUIRE(a.flow_tree == b.flow_tree);
  REQUIRE(a.flows.size() == b.flows.size());
  for (size_t f = 0; f < a.flows.size(); ++f) {
    REQUIRE(a.flows[f].start == b.flows[f].start);
    REQUIRE(a.flows[f].size == b.flows[f].size);
  }
  REQUIRE(a.tables == b.tables);
  ++programs_compared;
  programs_equal += fresh == was;
}

}  // namespace

TEST_CASE("one IR: MultiTree's programs compile to its schedules on every built-in shape", "[oneir]") {
  std::vector<topo::Topology> shapes;
  for (int kx = 2; kx <= 16; ++kx)
    for (int ky = 2; ky <= 16; ++ky)
      if (kx * ky <= 144 || (kx == ky)) {
        shapes.push_back(topo::make_torus(kx, ky));
        shapes.push_back(topo::make_mesh(kx, ky));
      }
  for (int k = 2; k <= 16; ++k) shapes.push_back(topo::make_fattree(k * k, k));
  for (auto [p, s] : std::vector<std::pair<int, int>>{{1, 2}, {2, 4}, {4, 8}, {4, 16}, {2, 8}, {8, 8}, {8, 16}})
    shapes.push_back(topo::make_bigraph(p, s));
  shapes.push_back(topo::make_dgx2(25, 0));
  for (int n = 2; n <= 16; ++n) shapes.push_back(topo::make_star(n, 25, 0));
  shapes.push_back(topo::make_fattree2l(2, 25, 0));
  for (const auto& t : shapes)
    for (bool nops : {true, false}) {
      MultiTreeOptions o;
      o.nops = nops;
      std::ostringstream what;
      what << "multitree on " << t.name << " " << t.endpoints().size() << " nodes, nops " << nops;
      require_same(multitree_program(t, o), multitree(t, o), what.str());
    }
  WARN(programs_equal << " of " << programs_compared << " programs equal too");
}

TEST_CASE("one IR: the baselines' programs compile to their schedules for 2 to 64 nodes", "[oneir]") {
  for (int n = 2; n <= 64; ++n) {
    const std::string on = " on " + std::to_string(n);
    for (bool nops : {true, false}) {
      auto old = [nops](Schedule s) { return nops ? s : without_nops(std::move(s)); };
      require_same(hd_program(n, nops), old(halving_doubling(n)), "hd" + on);
      for (int pieces = 1; pieces <= 32; ++pieces)
        for (bool inter : {true, false})
          require_same(dbtree_program(n, pieces, nops, inter), old(double_binary_tree(n, inter, pieces)),
                       "dbtree" + on + " pieces " + std::to_string(pieces));
    }
    require_same(nic_ring_program(n), ring(n), "ring" + on);
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = (7 * i + 3) % n;
    if (std::set<int>(order.begin(), order.end()).size() == static_cast<size_t>(n))
      require_same(nic_ring_program(n, order), ring(n, order), "ring in order" + on);
    std::vector<int> rev(n);
    for (int i = 0; i < n; ++i) rev[i] = n - 1 - i;
    require_same(nic_ring_program(n, rev), ring(n, rev), "reversed ring" + on);
  }
  for (int kx = 1; kx <= 16; ++kx)
    for (int ky = 1; ky <= 16; ++ky)
      if (kx * ky >= 2)
        for (bool nops : {true, false})
          require_same(ring2d_program(kx, ky, nops), nops ? ring2d(kx, ky) : without_nops(ring2d(kx, ky)),
                       "ring2d " + std::to_string(kx) + "x" + std::to_string(ky));
  for (auto [p, s] : std::vector<std::pair<int, int>>{{1, 4}, {2, 4}, {4, 8}, {4, 16}, {2, 8}, {8, 16}, {2, 16}})
    for (bool nops : {true, false})
      require_same(hdrm_program(p, s, nops), nops ? hdrm(p, s) : without_nops(hdrm(p, s)),
                   "hdrm " + std::to_string(p) + "x" + std::to_string(s));
  WARN(programs_equal << " of " << programs_compared << " programs equal too");
}

namespace {

void same_trees(const topo::Topology& t, int n, TreeSynthesisOptions o, const std::string& what) {
  for (bool allreduce : {true, false}) {
    o.allreduce = allreduce;
    if (o.hybrid && allreduce) continue;
    const TreeSynthesis s = synthesize_trees(t, n, o);
    const int root = allreduce ? kNil : kTreeRoot;
    for (int chunks : {1, 2, 3, 4, 7, 16, 32})
      require_same(tree_shares_program(o.rings ? "ring" : "blink", n, s.shares, chunks, root),
                   tree_schedule(o.rings ? "ring" : "blink", n, s.shares, chunks, root),
                   what + (allreduce ? " allreduce" : " broadcast") + " chunks " + std::to_string(chunks));
  }
}

}  // namespace

TEST_CASE("one IR: Blink's and the DGX-1 rings' programs compile to their schedules", "[oneir]") {
  TreeSynthesisOptions o;
  o.platform = "dgx1";
  o.max_payload_bytes = 256;
  o.header_bytes = 16;
  using topo::Dgx1Gen;
  for (Dgx1Gen gen : {Dgx1Gen::V100, Dgx1Gen::P100})
    for (const auto& alloc : topo::dgx1_unique_allocations(gen, 3, 8)) {
      const topo::Topology t = topo::make_dgx1(gen, alloc);
      const int n = static_cast<int>(alloc.size());
      for (bool rings : {false, true}) {
        o.rings = rings;
        o.hybrid = false;
        same_trees(t, n, o, std::string(rings ? "rings" : "blink") + " dgx1 " + std::to_string(n));
      }
      o.rings = false;
      o.hybrid = true;
      same_trees(t, n, o, "hybrid dgx1 " + std::to_string(n));
    }
  o.hybrid = false;
  for (const auto& [gen, a] : std::vector<std::pair<Dgx1Gen, std::vector<int>>>{
           {Dgx1Gen::V100, {1, 4, 5, 6}}, {Dgx1Gen::P100, {5, 0, 1, 2, 3, 4}}, {Dgx1Gen::V100, {0, 1, 2, 4, 7}},
           {Dgx1Gen::P100, {1, 4, 5, 6}}, {Dgx1Gen::V100, {0, 1}}, {Dgx1Gen::V100, {0, 3, 5}}})
    for (bool rings : {false, true}) {
      o.rings = rings;
      try {
        same_trees(topo::make_dgx1(gen, a), static_cast<int>(a.size()), o, "listed allocation");
      } catch (const UserError&) {  // Blink refuses GPUs not joined by NVLinks
        CHECK(!rings);
      }
    }
  for (const auto& [gen, servers] : std::vector<std::pair<Dgx1Gen, std::vector<std::vector<int>>>>{
           {Dgx1Gen::V100, {{0, 1, 2}, {0, 1, 2, 3, 4}}},
           {Dgx1Gen::V100, {{0, 1, 2, 3}, {0, 1, 2, 3}}},
           {Dgx1Gen::P100, {{0, 1, 2}, {1, 2, 3}, {4, 5, 6, 7}}},
           {Dgx1Gen::V100, {{1, 4, 5, 6}, {0, 1}}}}) {
    const topo::Topology t = topo::make_dgx1_cluster(gen, servers, 5.0, 1500);
    int n = 0;
    for (const auto& s : servers) n += static_cast<int>(s.size());
    for (bool rings : {false, true}) {
      o.rings = rings;
      try {
        same_trees(t, n, o, "servers");
      } catch (const UserError&) {
        CHECK(!rings);
      }
    }
  }
  o.rings = false;
  same_trees(topo::make_dgx2(25, 0), 16, o, "dgx2");
  for (int n = 2; n <= 16; ++n) same_trees(topo::make_star(n, 25, 0), n, o, "star " + std::to_string(n));
  WARN(programs_equal << " of " << programs_compared << " programs equal too");
}
