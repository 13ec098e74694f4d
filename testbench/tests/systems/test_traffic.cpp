// Synthetic traffic (modules/traffic, testbench/traffic_experiment): the
// pattern functions and analytical bounds in plain C++, then whole runs on
// the simulated platforms against those bounds (docs/traffic.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "options.h"
#include "topology/direct_networks.h"
#include "traffic/analysis.h"
#include "traffic/patterns.h"
#include "traffic.h"

using namespace incsim;
using namespace incsim::traffic;

namespace {

PatternParams grid(Pattern p, int kx, int ky) {
  PatternParams pp;
  pp.pattern = p;
  pp.nodes = kx * ky;
  pp.kx = kx;
  pp.ky = ky;
  return pp;
}

PatternParams flat(Pattern p, int n) {
  PatternParams pp;
  pp.pattern = p;
  pp.nodes = n;
  return pp;
}

bool is_permutation(const PatternParams& p) {
  std::set<int> seen;
  for (int s = 0; s < p.nodes; ++s) {
    const int d = permutation_dest(p, s);
    if (d < 0 || d >= p.nodes) return false;
    seen.insert(d);
  }
  return static_cast<int>(seen.size()) == p.nodes;
}

}  // namespace

// ---- patterns (plain C++) ----

TEST_CASE("transpose, bit-complement and neighbour are permutations", "[traffic][patterns]") {
  for (Pattern p : {Pattern::Transpose, Pattern::BitComplement, Pattern::Neighbor}) {
    INFO(pattern_name(p));
    CHECK(is_permutation(grid(p, 8, 8)));
    CHECK(is_permutation(grid(p, 4, 4)));
    CHECK(is_permutation(flat(p, 64)));
    CHECK(is_permutation(flat(p, 16)));
  }
  CHECK(is_permutation(grid(Pattern::Neighbor, 3, 5)));
  CHECK(is_permutation(grid(Pattern::Transpose, 6, 6)));
  CHECK(is_permutation(grid(Pattern::BitComplement, 4, 8)));
}

TEST_CASE("the patterns' destinations (Dally and Towles Table 3.1)", "[traffic][patterns]") {
  // Endpoint i of a grid sits at x = i % kx, y = i / kx.
  const auto t = grid(Pattern::Transpose, 8, 8);
  for (int x = 0; x < 8; ++x)
    for (int y = 0; y < 8; ++y) CHECK(permutation_dest(t, x + 8 * y) == y + 8 * x);
  // Off a grid: swap the bit halves; on 2^m x 2^m it is the same map.
  for (int s = 0; s < 64; ++s) CHECK(permutation_dest(flat(Pattern::Transpose, 64), s) == permutation_dest(t, s));
  CHECK(permutation_dest(grid(Pattern::Transpose, 6, 6), 1 + 6 * 4) == 4 + 6 * 1);
  const auto c = grid(Pattern::BitComplement, 8, 8);
  for (int x = 0; x < 8; ++x)
    for (int y = 0; y < 8; ++y) CHECK(permutation_dest(c, x + 8 * y) == (7 - x) + 8 * (7 - y));
  CHECK(permutation_dest(flat(Pattern::BitComplement, 16), 5) == 10);
  const auto nb = grid(Pattern::Neighbor, 4, 3);
  CHECK(permutation_dest(nb, 0) == 1);
  CHECK(permutation_dest(nb, 3) == 0);   // (3, 0) -> (0, 0): wraps within the row
  CHECK(permutation_dest(nb, 7) == 4);   // (3, 1) -> (0, 1)
  CHECK(permutation_dest(flat(Pattern::Neighbor, 5), 4) == 0);
  CHECK(permutation_dest(flat(Pattern::Uniform, 8), 3) == -1);
}

TEST_CASE("patterns where they are undefined are user errors", "[traffic][patterns][errors]") {
  CHECK_THROWS_WITH(check(grid(Pattern::Transpose, 4, 8)), Catch::Contains("square"));
  CHECK_THROWS_WITH(check(flat(Pattern::Transpose, 32)), Catch::Contains("4^m"));
  CHECK_THROWS_WITH(check(flat(Pattern::BitComplement, 48)), Catch::Contains("power-of-two"));
  CHECK_THROWS_WITH(check(grid(Pattern::BitComplement, 6, 6)), Catch::Contains("36"));
  auto h = flat(Pattern::Hotspot, 16);
  h.hot_node = 16;
  CHECK_THROWS_WITH(check(h), Catch::Contains("16"));
  h.hot_node = 0;
  h.hot_fraction = 1.5;
  CHECK_THROWS_AS(check(h), UserError);
  CHECK_THROWS_WITH(parse_pattern("tornado"), Catch::Contains("tornado") && Catch::Contains("bitcomp"));
  CHECK(parse_pattern("neighbour") == Pattern::Neighbor);
  CHECK_NOTHROW(check(grid(Pattern::Transpose, 6, 6)));
  CHECK_NOTHROW(check(flat(Pattern::BitComplement, 64)));
}

TEST_CASE("uniform random includes the source unless told not to", "[traffic][patterns]") {
  auto p = flat(Pattern::Uniform, 16);
  Rng rng(7);
  std::vector<int> hits(16, 0);
  const int draws = 160000;
  for (int i = 0; i < draws; ++i) ++hits[destination(p, 3, rng)];
  for (int d = 0; d < 16; ++d) CHECK(hits[d] == Approx(draws / 16.0).epsilon(0.05));
  p.uniform_self = false;
  for (int i = 0; i < draws; ++i) CHECK(destination(p, 3, rng) != 3);
  CHECK(dest_distribution(p, 3)[3] == 0.0);
  CHECK(dest_distribution(p, 3)[4] == Approx(1.0 / 15));
}

TEST_CASE("hotspot sends its fraction to the hot endpoint", "[traffic][patterns]") {
  auto p = flat(Pattern::Hotspot, 64);
  p.hot_node = 5;
  p.hot_fraction = 0.2;
  Rng rng(11);
  const int draws = 200000;
  int hot = 0;
  for (int i = 0; i < draws; ++i) hot += destination(p, 9, rng) == 5;
  const double want = 0.2 + 0.8 / 64;  // the hot draws plus its uniform share
  CHECK(static_cast<double>(hot) / draws == Approx(want).epsilon(0.03));
  CHECK(dest_distribution(p, 9)[5] == Approx(want));
}

TEST_CASE("Bernoulli gaps are geometric with mean 1/q", "[traffic][patterns]") {
  Rng rng(3);
  for (double q : {1.0, 0.5, 0.1, 0.01}) {
    double sum = 0;
    const int n = 100000;
    for (int i = 0; i < n; ++i) {
      const uint64_t g = geometric_gap(q, rng);
      REQUIRE(g >= 1);
      sum += static_cast<double>(g);
    }
    CHECK(sum / n == Approx(1 / q).epsilon(0.02));
  }
}

// ---- analytical bounds (plain C++) ----

TEST_CASE("channel-load bound of uniform random on a k x k torus is 8b/k", "[traffic][analysis]") {
  // Dally and Towles §3.3.1 (and §5.2 for tori): uniform traffic on a k-ary
  // 2-cube with balanced minimal routing loads each channel with k/8 of
  // what a node injects, so throughput per node is at most 8b/k. Our
  // endpoint link carries its router's 4 links (MultiTree §V-A): 4b.
  for (int k : {4, 8}) {
    const auto t = topo::make_torus(k, k);
    const double b = topo::kMultiTreeLinkGBps;
    REQUIRE(reference_injection_GBps(t) == Approx(4 * b));
    const auto bound = channel_load_bound(t, grid(Pattern::Uniform, k, k), reference_injection_GBps(t));
    CHECK(bound.saturation == Approx(8 * b / k / (4 * b)));
  }
  // A k x k mesh: k channels cross the bisection each way and carry a
  // quarter of all traffic, so at most 4b/k per node; as a fraction of the
  // narrowest endpoint link, a corner router's 2b.
  const auto m = topo::make_mesh(8, 8);
  CHECK(reference_injection_GBps(m) == Approx(2 * topo::kMultiTreeLinkGBps));
  CHECK(channel_load_bound(m, grid(Pattern::Uniform, 8, 8), reference_injection_GBps(m)).saturation ==
        Approx(4.0 * topo::kMultiTreeLinkGBps / 8 / (2 * topo::kMultiTreeLinkGBps)));
  // Neighbour on a torus: each node's whole load on its one +X link.
  const auto t8 = topo::make_torus(8, 8);
  CHECK(channel_load_bound(t8, grid(Pattern::Neighbor, 8, 8), 64).saturation == Approx(0.25));
}

TEST_CASE("zero-load latency of one hop on a torus, by hand", "[traffic][analysis]") {
  // Neighbour on a torus crosses the endpoint link, one router-to-router link
  // and the endpoint link at the far router: 3 x 150 ns of wire, the first
  // router's 4 ns, and the 272-byte packet's 17 ns at 16 GB/s (the second
  // router's 4 ns hide under it: the tail arrives 17 ns behind the head).
  const auto t = topo::make_torus(4, 4);
  CHECK(zero_load_latency_ns(t, 0, 1, 272, 4.0) == Approx(3 * 150 + 4 + 272 / 16.0));
  const auto z = zero_load(t, grid(Pattern::Neighbor, 4, 4), 272, 4.0);
  CHECK(z.mean_ns == Approx(471.0));
  CHECK(z.mean_switches == Approx(2.0));
}
