// The flow network (modules/flow): max-min fair rates by progressive
// filling and completion times, and the cores' and the copy engines'
// in-network operations and the RoCE hosts' messages as flows, against
// times computed by hand.
#include <catch2/catch.hpp>
#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>

#include "collectives/program.h"
#include "collectives/program_synthesis.h"
#include "flow/copy_flows.h"
#include "flow/cores_flows.h"
#include "flow/graph.h"
#include "flow/nic_flows.h"
#include "flow/network.h"
#include "flow/roce_flows.h"
#include "flow/shared.h"
#include "topology/cluster.h"
#include "topology/direct_networks.h"

using incsim::flow::Network;

namespace {
// Starts a flow named `name` that records when it is done.
void start(Network& n, std::map<std::string, double>& done, const std::string& name, std::vector<Network::Use> uses,
           double bytes, double latency = 0) {
  n.start(std::move(uses), bytes, latency, [&n, &done, name] { done[name] = n.now(); });
}
}  // namespace

TEST_CASE("two flows sharing a link split it, and the first to end frees its half") {
  Network n;
  const int a = n.add_link(10);  // 10 B/ns
  std::map<std::string, double> done;
  start(n, done, "long", {{a, 1}}, 1000, 50);
  start(n, done, "short", {{a, 1}}, 500);
  n.run();
  // 5 B/ns each: the short one's 500 B leave by 100 ns; the long one has
  // 500 B left, now at 10 B/ns: its last byte leaves at 150, lands at 200.
  CHECK(done["short"] == Approx(100));
  CHECK(done["long"] == Approx(200));
  CHECK(n.carried(a) == Approx(1500));
}

// A sender done with a message whose rest the switches hold: a mark is due
// when so many bytes are left, moves with the rates, and changes none.
TEST_CASE("a flow's marks are due when their bytes are left, at the rates of the time, and change no rate") {
  Network n;
  const int a = n.add_link(1);  // 1 B/ns
  std::map<std::string, double> done;
  n.start({{a, 1}}, 100, 5, [&] { done["long"] = n.now(); }, nullptr,
          {{30, [&] { done["30 left"] = n.now(); }}, {100, [&] { done["all left"] = n.now(); }},
           {0, [&] { done["none left"] = n.now(); }}});
  start(n, done, "short", {{a, 1}}, 50);
  n.run();
  // 0.5 B/ns each until the short one's 50 B have left at 100 ns; the long
  // one then has 50 B left, 30 of them at 120 ns, none at 150.
  CHECK(done["all left"] == 0);
  CHECK(done["short"] == Approx(100));
  CHECK(done["30 left"] == Approx(120));
  CHECK(done["none left"] == Approx(150));
  CHECK(done["long"] == Approx(155));  // its latency after
  // A flow of no bytes: its marks at once.
  n.start({{a, 1}}, 0, 0, [] {}, nullptr, {{10, [&] { done["empty"] = n.now(); }}});
  n.run();
  CHECK(done["empty"] == Approx(155));
}

TEST_CASE("a parking lot: the long flow gets the least of its links' fair shares") {
  Network n;
  const int l1 = n.add_link(10), l2 = n.add_link(20), l3 = n.add_link(10);
  std::map<std::string, double> done;
  start(n, done, "long", {{l1, 1}, {l2, 1}, {l3, 1}}, 1000);
  start(n, done, "on1", {{l1, 1}}, 500);
  start(n, done, "on2", {{l2, 1}}, 1500);
  start(n, done, "on3", {{l3, 1}}, 2000);
  n.run();
  // Filling: l1 and l3 fill at 5 B/ns (long, on1, on3 freeze at 5); l2 has
  // 15 left for on2. At 100 on1 and on2 end; long (500 left) and on3 (1500
  // left) share l3 at 5: long ends at 200, then on3 alone at 10: 1000 B by 300.
  CHECK(done["on1"] == Approx(100));
  CHECK(done["on2"] == Approx(100));
  CHECK(done["long"] == Approx(200));
  CHECK(done["on3"] == Approx(300));
}

TEST_CASE("an end refills through a link that bounded no flow when a flow beyond it must yield there") {
  Network n;
  const int l = n.add_link(10), m = n.add_link(6), k = n.add_link(5);
  std::map<std::string, double> done;
  start(n, done, "p", {{l, 1}, {k, 1}}, 75);
  start(n, done, "q", {{l, 1}, {m, 1}}, 110);
  start(n, done, "r", {{k, 1}}, 25);
  n.run();
  // p and r share k at 2.5; q takes m's 6; l carries 8.5 of 10 and bounds
  // no one. r's 25 B leave by 10 (p has sent 25, q 60). Then p would take
  // l's 4 left beside q's 6, but max-min shares l at 5 each (q yields),
  // which only a filling through l finds: both have 50 B left, done at 20.
  CHECK(done["r"] == Approx(10));
  CHECK(done["p"] == Approx(20));
  CHECK(done["q"] == Approx(20));
}

TEST_CASE("a flow's weight on a link is its wire bytes per payload byte") {
  Network n;
  const int a = n.add_link(9);
  std::map<std::string, double> done;
  // 128-byte payloads with a 16-byte header: 144 wire bytes per 128, so 8 B/ns of payload.
  start(n, done, "f", {{a, 144.0 / 128}}, 800, 20);
  n.run();
  CHECK(done["f"] == Approx(120));
  CHECK(n.carried(a) == Approx(900));
}

TEST_CASE("flows on separate links do not slow each other, and a later start reshares") {
  Network n;
  const int a = n.add_link(10), b = n.add_link(10);
  std::map<std::string, double> done;
  start(n, done, "x", {{a, 1}}, 1000);
  start(n, done, "y", {{b, 1}}, 1000);
  n.after(50, [&] { start(n, done, "z", {{a, 1}}, 250); });
  n.run();
  // x alone to 50 (500 B), then x and z at 5 each: z's 250 B by 100, x's
  // remaining 500 B: 250 by 100, the last 250 at 10 B/ns by 125.
  CHECK(done["y"] == Approx(100));
  CHECK(done["z"] == Approx(100));
  CHECK(done["x"] == Approx(125));
}

TEST_CASE("flows over the same links end in order of their bytes, one joining midway, beside a flow on a longer path") {
  Network n;
  const int a = n.add_link(10), b = n.add_link(10);
  std::map<std::string, double> done;
  start(n, done, "f1", {{a, 1}}, 600, 5);
  start(n, done, "f2", {{a, 1}}, 200);
  start(n, done, "twin", {{b, 1}}, 100);
  start(n, done, "twin2", {{b, 1}}, 100);
  start(n, done, "f3", {{a, 1}, {b, 1}}, 400);
  n.after(70, [&] { start(n, done, "f4", {{a, 1}}, 100); });
  n.run();
  // a: f1, f2, f3 at 10/3 B/ns each (b has room: the twins take the rest of
  // it, 10/3 each, and end together at 30). f2's 200 B leave by 60; f1 and
  // f3 then at 5: by 70 each has 250 B sent. f4 joins f1's links: 10/3 each
  // again, f4's 100 B by 100 (f1 350 -> 250 left, f3 150 -> 50). f3's last
  // 50 at 5 by 110; f1's last 200 alone at 10 by 130, done 5 later.
  CHECK(done["twin"] == Approx(30));
  CHECK(done["twin2"] == Approx(30));
  CHECK(done["f2"] == Approx(60));
  CHECK(done["f4"] == Approx(100));
  CHECK(done["f3"] == Approx(110));
  CHECK(done["f1"] == Approx(135));
  CHECK(n.carried(a) == Approx(1300));
}

namespace {
// Max-min rates as the definition reads, over every flow at once: the
// least level of any link freezes its flows, again until none is left.
std::vector<double> max_min(const std::vector<double>& cap, const std::vector<std::vector<Network::Use>>& uses,
                            const std::vector<char>& active) {
  std::vector<double> rate(uses.size(), 0), left = cap, weights(cap.size(), 0);
  std::vector<char> frozen(uses.size(), 0), filled(cap.size(), 0);
  for (size_t f = 0; f < uses.size(); ++f)
    for (const Network::Use& u : uses[f]) weights[static_cast<size_t>(u.link)] += active[f] ? u.weight : 0;
  for (;;) {
    size_t least = cap.size();
    for (size_t l = 0; l < cap.size(); ++l)
      if (!filled[l] && weights[l] > 1e-9 && (least == cap.size() || left[l] / weights[l] < left[least] / weights[least]))
        least = l;
    if (least == cap.size()) return rate;
    filled[least] = 1;
    const double level = std::max(0.0, left[least] / weights[least]);
    for (size_t f = 0; f < uses.size(); ++f) {
      if (!active[f] || frozen[f] ||
          std::none_of(uses[f].begin(), uses[f].end(),
                       [&](const Network::Use& u) { return u.limits && static_cast<size_t>(u.link) == least; }))
        continue;
      frozen[f] = 1;
      rate[f] = level;
      for (const Network::Use& u : uses[f]) {
        left[static_cast<size_t>(u.link)] -= u.weight * level;
        weights[static_cast<size_t>(u.link)] -= u.weight;
      }
    }
  }
}

// When each flow's last byte leaves, its max-min rate taken anew over
// every flow at every start and end.
std::vector<double> max_min_ends(const std::vector<double>& cap, const std::vector<std::vector<Network::Use>>& uses,
                                 const std::vector<double>& bytes, const std::vector<double>& start_at) {
  std::vector<double> left = bytes, ends(uses.size(), -1);
  std::vector<char> active(uses.size(), 0);
  for (double t = 0;;) {
    for (size_t f = 0; f < uses.size(); ++f)
      if (!active[f] && ends[f] < 0 && start_at[f] <= t) active[f] = 1;
    const std::vector<double> rate = max_min(cap, uses, active);
    double next = std::numeric_limits<double>::infinity();
    for (size_t f = 0; f < uses.size(); ++f) {
      if (active[f]) next = std::min(next, t + left[f] / rate[f]);
      if (!active[f] && ends[f] < 0) next = std::min(next, start_at[f]);
    }
    if (next == std::numeric_limits<double>::infinity()) return ends;
    for (size_t f = 0; f < uses.size(); ++f) {
      if (!active[f]) continue;
      left[f] -= rate[f] * (next - t);
      if (left[f] <= 1e-6 * bytes[f]) {
        active[f] = 0;
        ends[f] = next;
      }
    }
    t = next;
  }
}

// Each flow's end against max_min_ends'.
void check_max_min_ends(const std::vector<double>& done, const std::vector<double>& cap,
                        const std::vector<std::vector<Network::Use>>& uses, const std::vector<double>& bytes,
                        const std::vector<double>& start_at) {
  const std::vector<double> ends = max_min_ends(cap, uses, bytes, start_at);
  for (size_t f = 0; f < uses.size(); ++f) {
    INFO("flow " << f);
    CHECK(done[f] == Approx(ends[f]).epsilon(1e-9));
  }
}

// Starts every flow at once, on links of these capacities: when each is done.
std::vector<double> ends_at_once(const std::vector<double>& cap, const std::vector<std::vector<Network::Use>>& uses,
                                 const std::vector<double>& bytes) {
  Network n;
  for (double c : cap) n.add_link(c);
  std::vector<double> done(uses.size(), -1);
  for (size_t f = 0; f < uses.size(); ++f) n.start(uses[f], bytes[f], 0, [&, f] { done[f] = n.now(); });
  n.run();
  return done;
}
}  // namespace

// The network refills only what a start or an end touches, a small
// filling by a scan and a large one by a heap; every flow's end must be
// that of filling every flow at every event. 48 links and 120 flows of
// 1 to 4 links each (some on one path, some with acknowledgements that
// do not limit them), starting over 2 us: the first filling spans every
// link, later ones a few.
TEST_CASE("random flows end when max-min rates over every flow at every event say, through large and small fillings") {
  std::mt19937_64 rng(7);
  const auto uniform = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  const auto pick = [&](size_t n) { return static_cast<int>(rng() % n); };
  Network n;
  std::vector<double> cap(48);
  for (double& c : cap) c = uniform(5, 50);
  for (double c : cap) n.add_link(c);
  std::vector<std::vector<Network::Use>> uses(120);
  std::vector<double> bytes(uses.size()), start_at(uses.size()), done(uses.size(), -1);
  for (size_t f = 0; f < uses.size(); ++f) {
    if (f % 5 == 4) {
      uses[f] = uses[f - 1];  // a second flow on its neighbour's path
    } else {
      for (int k = 1 + pick(4); k > 0; --k) {
        const int l = pick(cap.size());
        if (std::none_of(uses[f].begin(), uses[f].end(), [&](const Network::Use& u) { return u.link == l; }))
          uses[f].push_back({l, uniform(0.5, 2)});
      }
      if (f % 7 == 0) {
        const int l = pick(cap.size());
        if (std::none_of(uses[f].begin(), uses[f].end(), [&](const Network::Use& u) { return u.link == l; }))
          uses[f].push_back({l, 0.1, false});
      }
    }
    bytes[f] = uniform(1e3, 2e4);
    start_at[f] = f < 60 ? 0 : uniform(0, 2000);
    const double latency = 10.0 * static_cast<double>(f % 3);
    n.at(start_at[f], [&, f, latency] { n.start(uses[f], bytes[f], latency, [&, f] { done[f] = n.now(); }); });
  }
  n.run();
  const std::vector<double> ends = max_min_ends(cap, uses, bytes, start_at);
  for (size_t f = 0; f < uses.size(); ++f) {
    INFO("flow " << f);
    CHECK(done[f] == Approx(ends[f] + 10.0 * static_cast<double>(f % 3)).epsilon(1e-6));
  }
}

// A start or an end couples through a link that bounded no flow, so the
// filling is redone from that link too (Network::recompute); the first try
// refilled a path the second does not reach, whose new rate must still
// move its end. 13 links and 18 flows, found by a search of random
// networks for such a try.
TEST_CASE("a filling redone from a coupling link keeps the rates its first try gave paths the second leaves out") {
  const std::vector<double> cap = {15.06, 10.25, 3.59, 11.73, 14.32, 5.44, 7.66, 11.36, 12.1, 16.17, 11.73, 8.77, 7.29};
  // Each flow's links, in its order of uses.
  const std::vector<std::vector<int>> links = {
      {6, 4, 9}, {10}, {6}, {6}, {0, 11}, {4, 3, 9, 5}, {5, 12}, {10, 9, 4, 11}, {5, 11, 10, 12}, {3, 5},
      {7, 12, 8}, {10}, {3, 6}, {3, 0, 9, 12}, {12, 7, 11}, {3, 1, 11}, {9, 1, 10}, {8, 0}};
  const std::vector<double> bytes = {64, 46, 35, 53, 31, 98, 13, 97, 11, 66, 31, 76, 56, 23, 29, 95, 77, 87};
  const std::vector<double> start_at = {7, 49, 0, 21, 35, 14, 28, 0, 49, 28, 35, 0, 21, 14, 21, 49, 42, 28};
  Network n;
  for (double c : cap) n.add_link(c);
  std::vector<std::vector<Network::Use>> uses;
  for (const auto& ls : links) {
    uses.emplace_back();
    for (int l : ls) uses.back().push_back({l, 1});
  }
  std::vector<double> done(uses.size(), -1);
  for (size_t f = 0; f < uses.size(); ++f)
    n.at(start_at[f], [&, f] { n.start(uses[f], bytes[f], 0, [&, f] { done[f] = n.now(); }); });
  n.run();
  const std::vector<double> ends = max_min_ends(cap, uses, bytes, start_at);
  for (size_t f = 0; f < uses.size(); ++f) {
    INFO("flow " << f);
    CHECK(done[f] == Approx(ends[f]).epsilon(1e-6));
  }
}

// Links of one capacity that every path in flight uses alike are filled as
// one bundle, and a path that uses some of them, or uses them unalike,
// splits it. Sixteen links of 10 bytes/ns: 0-3 and 4-11 two layers a flow
// spreads over (a quarter and an eighth of it on each), 12-15 the ends.
TEST_CASE("links used alike fill as one bundle, and a path on part of a bundle splits it, rates still max-min") {
  const std::vector<double> cap(16, 10);
  Network n;
  for (double c : cap) n.add_link(c);
  CHECK(n.bundles() == 1);
  const auto spread = [](int end) {
    std::vector<Network::Use> u;
    for (int l = 0; l < 4; ++l) u.push_back({l, 0.25});
    for (int l = 4; l < 12; ++l) u.push_back({l, 0.125});
    u.push_back({end, 1});
    return u;
  };
  std::vector<std::vector<Network::Use>> uses = {
      spread(12),           // 0..3, 4..11, 12 and {13, 14, 15} unused
      spread(13),           // 13 leaves the unused links
      {{0, 1}},             // a flow pinned to one spread link
      {{14, 0.5}, {14, 0.5}, {15, 0.5}},  // a link listed twice: 14 is used unalike 15
      spread(12),           // a second flow on the first path
      {{5, 1}, {6, 1}},     // part of the second layer
      spread(15),
  };
  const std::vector<double> bytes = {4000, 3000, 500, 800, 2000, 700, 1500};
  const std::vector<double> start_at = {0, 0, 0, 0, 100, 150, 300};
  const std::vector<size_t> bundles_after = {4, 5, 6, 7, 7, 8, 8};
  std::vector<double> done(uses.size(), -1);
  std::vector<size_t> bundles(uses.size(), 0);
  for (size_t f = 0; f < uses.size(); ++f)
    n.at(start_at[f], [&, f] {
      n.start(uses[f], bytes[f], 0, [&, f] { done[f] = n.now(); });
      bundles[f] = n.bundles();
    });
  n.run();
  CHECK(bundles == bundles_after);
  check_max_min_ends(done, cap, uses, bytes, start_at);
  // With no path in flight, a removed link's bundle of one is freed, and a
  // new link of that capacity joins the bundle the first links were in
  // (link 14's now); one of another capacity makes its own.
  n.remove_link(15);
  CHECK(n.bundles() == 7);
  n.add_link(10);
  CHECK(n.bundles() == 7);
  n.add_link(20);
  CHECK(n.bundles() == 8);
}

// Paths are found by their uses among thousands in flight, as they are
// made, freed and made again: 1,500 lists of uses over 40 links, two flows
// on each; a flow whose list has a path in flight joins it.
TEST_CASE("flows over the same uses share one path among thousands in flight, as paths end and are made again") {
  std::mt19937_64 rng(11);
  Network n;
  for (int l = 0; l < 40; ++l) n.add_link(1 + l % 7);
  std::vector<std::vector<Network::Use>> uses;
  for (int a = 0; a < 40 && uses.size() < 1500; ++a)
    for (int b = 0; b < 40 && uses.size() < 1500; ++b)
      if (a != b) uses.push_back({{a, 1}, {b, 0.5}});
  std::vector<int> in_flight(uses.size(), 0);
  const auto send = [&](size_t i) {
    ++in_flight[i];
    n.start(uses[i], static_cast<double>(100 + rng() % 10000), 0, [&in_flight, i] { --in_flight[i]; });
  };
  const auto with_flows = [&] {
    return static_cast<size_t>(std::count_if(in_flight.begin(), in_flight.end(), [](int k) { return k > 0; }));
  };
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < uses.size(); ++i) send(i);
  CHECK(n.paths() == uses.size());
  for (const double t : {2e4, 5e4, 1e5}) {
    n.run_until(t);
    INFO("at " << t << " ns");
    const size_t left = with_flows();
    CHECK(left > 0);
    CHECK(left < uses.size());
    CHECK(n.paths() == left);
    for (size_t i = 0; i < uses.size(); i += 3) send(i);  // some join a path, some make theirs again
    CHECK(n.paths() == with_flows());
  }
  n.run();
  CHECK(with_flows() == 0);
  CHECK(n.paths() == 0);
}

TEST_CASE("a flow without links or bytes takes its latency only") {
  Network n;
  std::map<std::string, double> done;
  start(n, done, "none", {}, 1000, 30);
  start(n, done, "empty", {{n.add_link(1), 1}}, 0, 40);
  n.run();
  CHECK(done["none"] == Approx(30));
  CHECK(done["empty"] == Approx(40));
}

TEST_CASE("a flow's acknowledgements take their capacity on a full link but do not hold it to that link's share") {
  Network n;
  const int a = n.add_link(10), b = n.add_link(10);
  std::map<std::string, double> done;
  // x's data on a, its acks (1/8 of its bytes) on b, which y fills with data.
  n.start({{a, 1}, {b, 0.125, false}}, 800, 0, [&] { done["x"] = n.now(); });
  start(n, done, "y", {{b, 1}}, 1000);
  n.run();
  // Filling: b's level is 10 / 1.125 = 8.89, where y freezes; x's acks do
  // not freeze it there: it rises to a's 10 B/ns, its acks taking 1.25 B/ns
  // of b beside y's 8.89 (b 1.4% over: what acks take above the level at
  // which y froze is not taken from y): x's 800 B by 80. Then y alone at 10: it
  // has 1000 - 80 x 8.89 = 288.9 B left, by 80 + 28.9 = 108.9.
  CHECK(done["x"] == Approx(80));
  CHECK(done["y"] == Approx(80 + (1000 - 80 * 10 / 1.125) / 10));
}

// A path outside a filling whose acknowledgements on a link it reaches run
// above that link's level takes there, as in one filling of every flow,
// only what that level gives them: the link couples it to the filling.
TEST_CASE("an end refills through a link where a path outside sends acknowledgements above its level") {
  const std::vector<double> cap = {20, 10, 8};  // y, e, d
  // z: four flows on y. q: data on y and e. p: data on d, acks (half its
  // bytes) on e.
  const std::vector<std::vector<Network::Use>> uses = {
      {{0, 1}}, {{0, 1}}, {{0, 1}}, {{0, 1}}, {{0, 1}, {1, 1}}, {{2, 1}, {1, 0.5, false}}};
  const std::vector<double> bytes = {400, 400, 400, 400, 1000, 10000};
  const std::vector<double> done = ends_at_once(cap, uses, bytes);
  // Until 100 y's 20 B/ns are shared by five: 4 each; p 8 on d, its acks 4
  // on e. Then q alone on y: e's level with q and p's acks rising together
  // is 10 / 1.5 = 6.67, below d's 8, so q freezes there, its 600 B left by
  // 190; charging p's acks at their 8 B/ns would leave q 6, done by 200.
  CHECK(done[4] == Approx(190));
  CHECK(done[5] == Approx(1250));
  check_max_min_ends(done, cap, uses, bytes, std::vector<double>(uses.size(), 0));
}

// A link a filling reaches only through a path's acknowledgements fills
// with them: a path outside that the link limits, above that level, must
// yield there, as in one filling of every flow.
TEST_CASE("an end refills through a link that acknowledgements from inside fill below a path outside") {
  const std::vector<double> cap = {20, 10, 5.5};  // y, e, m
  // z: four flows on y. x: data on y, acks (as many bytes) on e. q: data on
  // e and m.
  const std::vector<std::vector<Network::Use>> uses = {
      {{0, 1}}, {{0, 1}}, {{0, 1}}, {{0, 1}}, {{0, 1}, {1, 1, false}}, {{1, 1}, {2, 1}}};
  const std::vector<double> bytes = {400, 400, 400, 400, 10000, 1000};
  const std::vector<double> done = ends_at_once(cap, uses, bytes);
  // Until 100 y's 20 B/ns are shared by five: 4 each; q 5.5 on m. Then x
  // alone on y: e's level with x's acks and q rising together is 10 / 2 =
  // 5, below m's 5.5, so q freezes there, its 450 B left by 190 (keeping
  // 5.5, by 181.8); x rises to y's 20, its 9,600 B left by 580.
  CHECK(done[5] == Approx(190));
  CHECK(done[4] == Approx(580));
  check_max_min_ends(done, cap, uses, bytes, std::vector<double>(uses.size(), 0));
}

TEST_CASE("a network in step with another simulator's time: run_until stops there, a later start reshares, "
          "and a run's callbacks are counted until called") {
  Network n;
  const int a = n.add_link(10);
  std::map<std::string, double> done;
  uint64_t pending = 0;
  n.start({{a, 1}}, 1000, 0, [&] { done["first"] = n.now(); }, &pending);
  CHECK(pending == 1);
  CHECK(n.next_event() == Approx(100));  // alone at 10 B/ns
  n.run_until(50);                       // 500 B sent
  CHECK(n.now() == 50);
  CHECK(done.empty());
  n.start({{a, 1}}, 250, 0, [&] { done["second"] = n.now(); }, &pending);
  CHECK(pending == 2);
  // 5 B/ns each: the second's 250 B by 100; the first's last 250 at 10 B/ns by 125.
  CHECK(n.next_event() == Approx(100));
  n.run_until(99.9);
  CHECK(done.empty());
  n.run_until(100);
  CHECK(done["second"] == Approx(100));
  CHECK(pending == 1);
  CHECK(n.next_event() == Approx(125));
  n.after(50, [&] { done["later"] = n.now(); }, &pending);
  n.run_until(1000);
  CHECK(done["first"] == Approx(125));
  CHECK(done["later"] == Approx(150));
  CHECK(pending == 0);
  CHECK(n.now() == 1000);
  CHECK(n.next_event() == std::numeric_limits<double>::infinity());
  // A link removed is reused.
  const int b = n.add_link(5);
  n.remove_link(b);
  CHECK(n.add_link(7) == b);
}

// The cores' in-network operations as flows (flow/cores_flows.h) on a star
// of GPUs around one switch, 25 GB/s links without latency, a 100 ns switch
// and memory without latency: times by hand.
namespace {
using incsim::flow::CoresFlows;

struct Star {
  incsim::topo::Topology t;
  incsim::flow::FlowMachine m;
  explicit Star(int gpus, bool aggregates) {
    const int sw = t.add_switch("sw", gpus);
    for (int g = 0; g < gpus; ++g) t.connect({t.add_endpoint("gpu" + std::to_string(g), 1), 0}, {sw, g}, 25, 0);
    t.finalize();
    m.size_for(t);
    m.formats.push_back({});  // 16-byte header and flits, 128-byte payloads
    m.node_ns[static_cast<size_t>(sw)] = 100;
    m.aggregates[static_cast<size_t>(sw)] = aggregates;
  }
  CoresFlows::Result result(const std::string& program, uint64_t bytes, int credits = 0, uint64_t steady = 0) {
    incsim::flow::CoresCosts costs;  // no memory latency
    costs.simple = {1 << 20, 4};     // one pass
    costs.push_credits = credits;
    std::vector<int> eps;
    for (size_t g = 0; g < t.endpoints().size(); ++g) eps.push_back(static_cast<int>(g));
    CoresFlows f(incsim::collectives::read_program(program, "test"), m, eps, costs, 4, 1, steady);
    return f.run(bytes);
  }
  double run(const std::string& program, uint64_t bytes, int credits = 0) {
    return result(program, bytes, credits).time_ns;
  }
  std::unique_ptr<CoresFlows> on(const std::string& program, incsim::flow::SharedNetwork& shared) {
    incsim::flow::CoresCosts costs;
    costs.simple = {1 << 20, 4};
    std::vector<int> eps;
    for (size_t g = 0; g < t.endpoints().size(); ++g) eps.push_back(static_cast<int>(g));
    return std::make_unique<CoresFlows>(incsim::collectives::read_program(program, "test"), m, eps, costs, 4, 1, 0,
                                        &shared);
  }
};
// Rank 0 multicasts its input to the others' outputs (a broadcast).
const std::string kBroadcast =
    "program 1\nname mc\ncollective broadcast ranks 3 root 0 inplace 0\ngroup 0 1 2\n"
    "rank 0 input 1 output 1 scratch 0\n0 mcast cores ch 0 q 0 group 0 src i0\n1 cpy cores ch 0 q 0 src i0 dst o0\n"
    "rank 1 input 1 output 1 scratch 0\n0 mcast cores ch 0 q 0 group 0 dst o0\n"
    "rank 2 input 1 output 1 scratch 0\n0 mcast cores ch 0 q 0 group 0 dst o0\n";
}  // namespace

TEST_CASE("cores flows: a multicast crosses its storer's link once and each member's once") {
  Star s(3, false);
  // 128 KiB in 128-byte blocks of 144 wire bytes: 25 / 1.125 B/ns on every
  // link of the tree, the last block lands 100 ns (the switch) later.
  CHECK(s.run(kBroadcast, 128 << 10) == Approx((128 << 10) * 1.125 / 25 + 100));
}

TEST_CASE("cores flows on a shared network: a run alone takes its own time from its start, two at once share the links") {
  Star s(3, false);
  incsim::flow::SharedNetwork shared(s.m);
  const auto a = s.on(kBroadcast, shared), b = s.on(kBroadcast, shared);
  const double wire = (128 << 10) * 1.125 / 25;
  std::vector<double> took;
  const auto record = [&](const CoresFlows::Result& r) { took.push_back(r.time_ns); };
  shared.net.run_until(1000);  // a start later than 0
  auto x = a->start(128 << 10, shared.net, record);
  CHECK_FALSE(x->idle());
  shared.net.run();
  REQUIRE(took.size() == 1);
  CHECK(took[0] == Approx(wire + 100));
  CHECK(shared.net.now() == Approx(1000 + wire + 100));
  CHECK(x->idle());
  // Both broadcasts from rank 0 at once: its link carries both, half each.
  auto y = a->start(128 << 10, shared.net, record), z = b->start(128 << 10, shared.net, record);
  shared.net.run();
  REQUIRE(took.size() == 3);
  CHECK(took[1] == Approx(2 * wire + 100));
  CHECK(took[2] == Approx(2 * wire + 100));
  CHECK(y->idle());
  CHECK(z->idle());
}

TEST_CASE("shared network: a run that meets no other takes its time alone, one that meets a run alone replays it from its start") {
  Star s(3, false);
  incsim::flow::SharedNetwork shared(s.m);
  const auto a = s.on(kBroadcast, shared), b = s.on(kBroadcast, shared);
  const double wire = (128 << 10) * 1.125 / 25;
  const CoresFlows::Result alone = a->run(128 << 10);
  REQUIRE(alone.time_ns == Approx(wire + 100));
  REQUIRE_FALSE(alone.links.empty());
  std::vector<double> took;
  const auto record = [&](const CoresFlows::Result& r) { took.push_back(r.time_ns); };
  shared.net.run_until(1000);
  shared.start(*a, 128 << 10, alone, record);
  shared.net.run();
  REQUIRE(took.size() == 1);
  CHECK(took[0] == Approx(wire + 100));
  CHECK(shared.net.now() == Approx(1000 + wire + 100));
  CHECK(shared.ran_as_flows() == 0);  // nothing simulated
  // b starts halfway through a's bytes on the same links: a replays its
  // first half alone, then the two share rank 0's link: a's second half at
  // half the rate takes `wire`, and b's last half runs alone after it.
  const double t0 = shared.net.now();
  shared.start(*a, 128 << 10, alone, record);
  shared.net.run_until(t0 + wire / 2);
  shared.start(*b, 128 << 10, alone, record);
  shared.net.run();
  REQUIRE(took.size() == 3);
  CHECK(took[1] == Approx(1.5 * wire + 100));
  CHECK(took[2] == Approx(1.5 * wire + 100));
  CHECK(shared.runs() == 3);
  CHECK(shared.ran_as_flows() == 2);
  shared.sweep();
}

TEST_CASE("flow network: a network adopts a replica's flows, marks and callbacks with what they have left") {
  Network n;
  const int l = n.add_link(10);
  n.run_until(100);
  Network past = n.replica(40);
  Network* now_on = &past;  // where the callbacks read the time, as a run's do (move_to)
  std::map<char, double> at;
  uint64_t pending = 0;
  // 1000 B from 40 ns alone at 10 B/ns, a mark when 200 B are left, calls at 90 and 150 ns.
  past.start({{l, 1.0}}, 1000, 5, [&] { at['f'] = now_on->now(); }, &pending,
             {{200, [&] { at['m'] = now_on->now(); }}});
  past.after(50, [&] { at['c'] = now_on->now(); }, &pending);
  past.after(110, [&] { at['d'] = now_on->now(); }, &pending);
  past.run_until(100);
  REQUIRE(at.size() == 1);
  CHECK(at['c'] == Approx(90));
  CHECK(pending == 3);
  n.adopt(past);
  now_on = &n;
  CHECK(pending == 3);
  // 400 B left at 100 ns, which another 400 B flow halves: the mark 40 ns
  // on, both flows' last bytes at 180 and their ends 5 ns later.
  double other = 0;
  n.start({{l, 1.0}}, 400, 5, [&] { other = n.now(); });
  n.run();
  CHECK(at['d'] == Approx(150));
  CHECK(at['m'] == Approx(140));
  CHECK(at['f'] == Approx(185));
  CHECK(other == Approx(185));
  CHECK(pending == 0);
  CHECK(n.carried(l) == Approx(1400));
}

TEST_CASE("cores flows: a reducing write's credits limit it by Little's law, table bytes over the round trip") {
  Star s(2, true);
  const std::string p = "program 1\nname push\ncollective allreduce ranks 2 root 0 inplace 0\ngroup 0 1\n"
                        "rank 0 input 1 output 1 scratch 0\n0 redwrite cores ch 0 q 0 group 0 src i0 dst o0\n"
                        "rank 1 input 1 output 1 scratch 0\n0 redwrite cores ch 0 q 0 group 0 src i0 dst o0\n";
  // Each GPU's contributions up its link, the sum down both: 22.2 B/ns on
  // the links. 8 credits of 128 B per 100 ns round trip (the switch) allow
  // 10.24 B/ns: that limits it. The sum lands a round trip after the last.
  CHECK(s.run(p, 1 << 20, 8) == Approx((1 << 20) / 10.24 + 100));
  // With 64 credits (81.9 B/ns) the links limit it.
  CHECK(s.run(p, 1 << 20, 64) == Approx((1 << 20) * 1.125 / 25 + 100));
  // No switch that reduces: refused, naming the group.
  Star plain(2, false);
  CHECK_THROWS_WITH(plain.run(p, 1 << 20, 8), Catch::Contains("no switch that reduces"));
}

TEST_CASE("cores flows: a reducing read takes every member's answers and returns the sum, and what flows cannot run is named") {
  Star s(2, false);
  const std::string p = "program 1\nname pull\ncollective allreduce ranks 2 root 0 inplace 0\nmultimem 1\ngroup 0 1\n"
                        "rank 0 input 1 output 1 scratch 0\n0 redread cores ch 0 q 0 group 0 src i0 dst o0\n"
                        "rank 1 input 1 output 1 scratch 0\n0 redread cores ch 0 q 0 group 0 src i0 dst o0\n";
  // Both read the whole message, in passes of NCCL's NVLS chunk, each read
  // when the last one's sum is in. Each GPU's link out carries its requests
  // (16/128 of the bytes) and its answers to both readers (2 x 1.125), its
  // link in the same: 25 / 2.375 B/ns; the sum a round trip (2 x 100 ns)
  // after the last request.
  for (const uint64_t bytes : {uint64_t{64} << 10, uint64_t{1} << 20}) {
    const uint64_t chunk = incsim::collectives::nvls_chunk_bytes(bytes, 1, 1 << 20);
    INFO(bytes << " B in chunks of " << chunk);
    CHECK(s.run(p, bytes) == Approx(static_cast<double>(bytes / chunk) * (chunk * 2.375 / 25 + 200)));
  }
  incsim::collectives::Program b = incsim::collectives::read_program(p, "test");
  b.ops[0].kind = incsim::collectives::OpKind::Barrier;
  CHECK_THAT(CoresFlows::cannot_run(b), Catch::Contains("barrier") && Catch::Contains("flows do not run yet"));
}

TEST_CASE("cores flows: steady passes run K/4, K/2 and K passes and add the others at their period") {
  Star s(2, false);
  const std::string p = "program 1\nname pull\ncollective allreduce ranks 2 root 0 inplace 0\nmultimem 1\ngroup 0 1\n"
                        "rank 0 input 1 output 1 scratch 0\n0 redread cores ch 0 q 0 group 0 src i0 dst o0\n"
                        "rank 1 input 1 output 1 scratch 0\n0 redread cores ch 0 q 0 group 0 src i0 dst o0\n";
  // Every pass of the reducing reads takes the same time (the test above):
  // the period is exact, and so is the whole message's time from 7 passes.
  const uint64_t bytes = uint64_t{16} << 20;
  const uint64_t passes = bytes / incsim::collectives::nvls_chunk_bytes(bytes, 1, 1 << 20);
  REQUIRE(passes > 8);
  const CoresFlows::Result whole = s.result(p, bytes), steady = s.result(p, bytes, 0, 4);
  CHECK(whole.passes == passes);
  CHECK(whole.simulated_passes == passes);
  CHECK(whole.pass_ns == 0);
  CHECK(steady.passes == passes);
  CHECK(steady.simulated_passes == 1 + 2 + 4);
  CHECK(steady.steady_from == 4);
  CHECK(steady.period_change == Approx(0).margin(1e-9));
  CHECK(steady.time_ns == Approx(whole.time_ns).epsilon(1e-9));
  CHECK(steady.pass_ns == Approx(whole.time_ns / static_cast<double>(passes)).epsilon(1e-9));
  CHECK(steady.transfers == whole.transfers);
  CHECK(steady.flows == whole.flows);
  // A message of at most 2K passes runs whole.
  const CoresFlows::Result few = s.result(p, bytes, 0, passes / 2);
  CHECK(few.simulated_passes == passes);
  CHECK(few.time_ns == whole.time_ns);
}

TEST_CASE("cores flows: channel classes run one rail's channel for both, its flows weighted on the link the rails "
          "share") {
  // Two nodes of two GPUs, each GPU with an adapter on its node's leaf, the
  // two leaves joined by one link of 50 GB/s that both rails cross.
  incsim::topo::Topology t;
  for (int k = 0; k < 2; ++k) {
    const std::string node = "node" + std::to_string(k) + "_";
    const int sw = t.add_switch(node + "sw", 2), leaf = t.add_switch(node + "leaf", 3, incsim::topo::kinds::kIbSwitch);
    for (int i = 0; i < 2; ++i) {
      const int gpu = t.add_endpoint(node + "gpu" + std::to_string(i), 2);
      const int hca = t.add_switch(node + "hca" + std::to_string(i), 2, incsim::topo::kinds::kHca);
      t.connect({gpu, 0}, {sw, i}, 25, 0);
      t.connect({gpu, 1}, {hca, 0}, 50, 0);
      t.connect({hca, 1}, {leaf, i}, 50, 0);
    }
  }
  t.connect({t.find("node0_leaf"), 2}, {t.find("node1_leaf"), 2}, 50, 0);
  t.finalize();
  incsim::flow::FlowMachine m;
  m.size_for(t);
  m.formats.push_back({});
  // On channel c, node 0's GPU c sends its chunk to node 1's GPU c: channel
  // 1 is channel 0 on the next GPU of each node.
  const std::string p = "program 1\nname rails\ncollective allreduce ranks 4 root 0 inplace 0\n"
                        "rank 0 input 2 output 2 scratch 0\n0 s cores ch 0 q 0 to 2 src i0\n"
                        "rank 1 input 2 output 2 scratch 0\n0 s cores ch 1 q 0 to 3 src i1\n"
                        "rank 2 input 2 output 2 scratch 0\n0 r cores ch 0 q 0 from 0 dst o0\n"
                        "rank 3 input 2 output 2 scratch 0\n0 r cores ch 1 q 0 from 1 dst o1\n";
  incsim::flow::CoresCosts costs;  // no memory latency
  costs.simple = {1 << 20, 4};
  const uint64_t bytes = 1 << 20;
  const auto run = [&](bool classes) {
    CoresFlows f(incsim::collectives::read_program(p, "test"), m, {0, 1, 2, 3}, costs, 4, 1, 0, nullptr, classes);
    return f.run(bytes);
  };
  const CoresFlows::Result whole = run(false), classes = run(true);
  CHECK(classes.classes == 1);
  CHECK(classes.channels == 2);
  CHECK(classes.flows * 2 == whole.flows);
  CHECK(classes.transfers == whole.transfers);
  // Each flow takes half the shared link: its 512 KiB at 25 GB/s of payload
  // (a 16-byte header per 128 bytes), as every channel running gives.
  CHECK(whole.time_ns == Approx(bytes / 2 * 1.125 / 25).epsilon(0.01));
  CHECK(classes.time_ns == Approx(whole.time_ns).epsilon(1e-12));
  CHECK(classes.links == whole.links);
  // A program whose channels are not each other's images runs whole.
  const std::string apart = p.substr(0, p.find("rank 1")) +
                            "rank 1 input 2 output 2 scratch 0\n0 s cores ch 1 q 0 to 2 src i1\n"
                            "rank 2 input 2 output 2 scratch 0\n0 r cores ch 0 q 0 from 0 dst o0\n"
                            "1 r cores ch 1 q 1 from 1 dst o1\nrank 3 input 2 output 2 scratch 0\n";
  CoresFlows f(incsim::collectives::read_program(apart, "test"), m, {0, 1, 2, 3}, costs, 4, 1, 0, nullptr, true);
  const CoresFlows::Result r = f.run(bytes);
  CHECK(r.classes == 0);
  CHECK_THAT(r.classes_note, Catch::Contains("none, every channel ran: no part does on each node's next GPU what "
                                             "channel 0's part 0 does"));
}

// The copy engines' programs as flows (flow/copy_flows.h) on the same star.
namespace {
double copy_run(Star& s, const std::string& program, uint64_t bytes, int waves, double mem_ns = 0) {
  incsim::flow::CopyCosts costs;  // no memory jitter
  costs.mem_ns = mem_ns;
  costs.waves = waves;
  costs.wave_bytes = 1024;
  costs.b_in_GBps = 25;
  std::vector<int> eps;
  for (size_t g = 0; g < s.t.endpoints().size(); ++g) eps.push_back(static_cast<int>(g));
  incsim::flow::CopyFlows f(incsim::collectives::read_program(program, "test"), s.m, eps, costs, 4, 1);
  return f.run(bytes).time_ns;
}
}  // namespace

TEST_CASE("copy flows: a push joins every member's writes, and its waves limit it by Little's law") {
  Star s(2, true);
  const incsim::collectives::Program push = incsim::collectives::in_network_program(
      "push", incsim::collectives::Collective::AllReduce, incsim::collectives::InNetMethod::Push, 2, false);
  const std::string p = incsim::collectives::write_program(push);
  // Each GPU's writes up its link, the sum down both: 25 / 1.125 B/ns. The
  // sum lands a round trip (the switch) after the last write.
  CHECK(copy_run(s, p, 1 << 20, 0) == Approx((1 << 20) * 1.125 / 25 + 100));
  // Two waves of 1 KiB, each back its issue (1024 / 25 ns) and a round
  // trip after it began: 2048 B per 140.96 ns, below the links' rate.
  CHECK(copy_run(s, p, 1 << 20, 2) == Approx((1 << 20) / (2048 / (1024 / 25.0 + 100)) + 100));
  // With 50 ns memory reads: the first data's read before the writes, and
  // in each wave's round trip the read of its first data, as the GPU's
  // port idles between waves.
  CHECK(copy_run(s, p, 1 << 20, 2, 50) == Approx(50 + (1 << 20) / (2048 / (1024 / 25.0 + 100 + 50)) + 100));
  Star plain(2, false);
  CHECK_THROWS_WITH(copy_run(plain, p, 1 << 20, 0), Catch::Contains("no switch that reduces"));
}

TEST_CASE("copy flows: a pull waits for its barrier, its reads carry the multicast that forwards them, and the "
          "reader's table limits them by Little's law") {
  Star s(2, true);  // the barrier's flag is summed at a home port
  const incsim::collectives::Program pull = incsim::collectives::in_network_program(
      "pull", incsim::collectives::Collective::AllReduce, incsim::collectives::InNetMethod::Pull, 2, true);
  const std::string p = incsim::collectives::write_program(pull);
  // The barrier's flag: up and back through the switch, 100 ns. Then each
  // GPU reads its half: its link out carries its requests (16/128 of the
  // bytes), its forwarded stores (1.125) and its answers to the other
  // reader (1.125), its link in the same: 25 / 2.375 B/ns. The sum is back
  // a round trip (2 x 100 ns) after the last request, and its forwarded
  // copy lands at the other GPU 100 ns later.
  const double half = (1 << 20) / 2.0;
  CHECK(copy_run(s, p, 1 << 20, 0) == Approx(100 + half * 2.375 / 25 + 200 + 100));
  // Two 128-byte entries in the reader's access port, each held 100 ns (the
  // switch; no memory latency): 2.56 B/ns.
  s.m.table_bytes.assign(s.t.nodes().size(), {});
  s.m.table_bytes[static_cast<size_t>(s.t.switches()[0])] = {256, 256};
  CHECK(copy_run(s, p, 1 << 20, 0) == Approx(100 + half / 2.56 + 200 + 100));
}

// The RoCE hosts' programs as flows (flow/roce_flows.h): two hosts and an
// FPGA with a port for each on one switch, 12.5 GB/s links without latency,
// a 400 ns switch; messages of 4 packets of 1 KiB.
namespace {
struct Rack {
  incsim::topo::Topology t;
  incsim::flow::FlowMachine m;
  int fpga;
  Rack() {
    const int sw = t.add_switch("switch", 4);
    for (int h = 0; h < 2; ++h) t.connect({sw, h}, {t.add_endpoint("host" + std::to_string(h), 1), 0}, 12.5, 0);
    fpga = t.add_endpoint("fpga", 2);
    for (int p = 0; p < 2; ++p) t.connect({sw, 2 + p}, {fpga, p}, 12.5, 0);
    t.finalize();
    m.size_for(t);
    m.formats.push_back({});
    m.node_ns[static_cast<size_t>(sw)] = 400;
  }
  double run(const incsim::collectives::Program& p, uint64_t bytes, double tx_ns, double rx_ns, double fpga_ns,
             uint32_t window = 2) {
    incsim::flow::RoceCosts c;
    c.tx_ns = tx_ns;
    c.rx_ns = rx_ns;
    c.msg_len = 4;
    c.window = window;
    c.fpga_ns = fpga_ns;
    c.frame_bytes = 82;
    c.reth_bytes = 16;
    c.ina_bytes = 12;
    c.ack_bytes = 86;
    c.ack_every = 16;
    incsim::flow::RoceFlows f(p, m, {0, 1}, {t.link_at({fpga, 0}), t.link_at({fpga, 1})}, c, 4);
    return f.run(bytes).time_ns;
  }
};
}  // namespace

TEST_CASE("RoCE flows: a queue pair's messages leave one after another, each seen a delivery after its last byte") {
  Rack r;
  const incsim::collectives::Program p = incsim::collectives::read_program(
      "program 1\nname put\ncollective allreduce ranks 2 root 0 inplace 1\n"
      "rank 0 input 1 output 1 scratch 0\n0 s roce ch 0 q 0 to 1 src i0\n"
      "rank 1 input 1 output 1 scratch 0\n0 r roce ch 0 q 0 from 0 dst o0\n",
      "test");
  // 1 MiB in 1 KiB packets of 1024 + 82 B, a message's first with a 16-byte
  // RETH: the last byte leaves the posting (300 ns) and the wire's time
  // later, and is seen the switch (400 ns) and the delivery (200 ns) after.
  const double wire = (1024 + 82 + 16 / 4.0) / 1024;
  CHECK(r.run(p, 1 << 20, 300, 200, 0) == Approx(300 + (1 << 20) * wire / 12.5 + 400 + 200));
}

TEST_CASE("RoCE flows: an aggregation's messages from every member are one flow through the FPGA, its window "
          "waiting for the results") {
  Rack r;
  const incsim::collectives::Program p = incsim::collectives::netreduce_program(2);
  // Each host's frames up its link, through its FPGA port both ways and
  // down to the other host, every link one stream at 12.5 GB/s (the first
  // packet of a message carries a RETH and a 12-byte INA header), and each
  // host's link up the other's 86-byte ACK of each message too. With a
  // window of 256 messages nothing waits: the result is seen the switch
  // twice (800 ns) and the FPGA (500 ns) after the last byte.
  const double wire = (1024 + 82 + 28 / 4.0) / 1024, acked = wire + 86 / 4096.0;
  CHECK(r.run(p, 1 << 20, 0, 0, 500, 256) == Approx((1 << 20) * acked / 12.5 + 800 + 500));
  // With N = 2 and a 2 us posting and delivery, a message (4 KiB, 356 ns on
  // the wire) is back 2 us + 356 ns + 1.3 us + 2 us after it is posted, and
  // two fly at once: 8 KiB per 5,656 ns, the window's rate (the posting of
  // the first two, 2 us, is what it adds: the last result ends the run).
  const double msg = 4096 * wire / 12.5, round = 2000 + msg + 1300 + 2000;
  CHECK(r.run(p, 64 << 10, 2000, 2000, 500) == Approx(round * (16 / 2)).epsilon(0.02));
}

TEST_CASE("NIC flows: a table's Reduce waits for its children's partial sums, its Gather for the sum, in lockstep") {
  Star s(3, false);
  // Ranks 1 and 2 send their partial sums to rank 0 in step 1; rank 0 sends
  // the sum back to both in step 2 (MultiTree's Reduce and Gather entries).
  const std::string p = "program 1\nname t\ncollective allreduce ranks 3 root 0 inplace 1\n"
                        "rank 0 input 1 output 1 scratch 0\n0 rrc table ch 0 q 0 from 1 timestep 1 dst o0\n"
                        "1 rrc table ch 0 q 0 from 2 timestep 1 dst o0\n2 s table ch 0 q 0 to 1 timestep 2 src o0\n"
                        "3 s table ch 0 q 0 to 2 timestep 2 src o0\n"
                        "rank 1 input 1 output 1 scratch 0\n0 s table ch 0 q 0 to 0 timestep 1 src o0\n"
                        "1 r table ch 0 q 0 from 0 timestep 2 dst o0\n"
                        "rank 2 input 1 output 1 scratch 0\n0 s table ch 0 q 0 to 0 timestep 1 src o0\n"
                        "1 r table ch 0 q 0 from 0 timestep 2 dst o0\n";
  incsim::flow::NicCosts costs;  // no memory latency
  costs.framing = {16, 16, 128, false};
  costs.estimate = {25, 318, 1};
  std::vector<int> eps{0, 1, 2};
  const uint64_t bytes = 128 << 10;
  // Each step's two messages share one link of the star (rank 0's down, then
  // up): 2 x 128 KiB of 144-byte packets per 128 bytes at 25 B/ns, and the
  // switch's 100 ns.
  const double step = 2 * bytes * 1.125 / 25 + 100;
  incsim::flow::NicFlows f(incsim::collectives::read_program(p, "test"), s.m, eps, costs, 4, 1);
  const auto r = f.run(bytes);
  CHECK(r.time_ns == Approx(2 * step));
  CHECK(r.transfers == 4);
  // One head flit per message: the data's flits alone, plus one header.
  costs.framing.one_head = true;
  incsim::flow::NicFlows g(incsim::collectives::read_program(p, "test"), s.m, eps, costs, 4, 1);
  CHECK(g.run(bytes).time_ns == Approx(2 * (2 * (bytes + 16) / 25.0 + 100)));
  CHECK_THAT(incsim::flow::NicFlows::cannot_run(incsim::collectives::read_program(
                 "program 1\nname c\ncollective allreduce ranks 2 root 0 inplace 1\n"
                 "rank 0 input 1 output 1 scratch 0\n0 s cores ch 0 q 0 to 1 src o0\n"
                 "rank 1 input 1 output 1 scratch 0\n0 r cores ch 0 q 0 from 0 dst o0\n",
                 "test")),
             Catch::Contains("not the NICs' tables"));
}

TEST_CASE("a rank's dependents table lists each operation's waiters in index order, and a FIFO keeps its order") {
  using namespace incsim::collectives;
  ProgramBuilder b("deps", Collective::AllReduce, 1, true);
  b.begin_rank(0, Buffers{1, 0, 0});
  const Operation nop = make_op(OpKind::Nop, Engine::Cores, 0, 0);
  b.add(nop);
  b.add(nop, {0});
  b.add(nop, {0, 1});
  b.add(nop, {1});
  b.add(nop, {0});
  const Program p = b.build();
  const incsim::flow::Dependents d(p, 0);
  const auto list = [&](int i) { return std::vector<int>(d.of(i).begin(), d.of(i).end()); };
  CHECK(list(0) == std::vector<int>{1, 2, 4});
  CHECK(list(1) == std::vector<int>{2, 3});
  CHECK(list(2).empty());
  CHECK(list(4).empty());

  // Past its compaction (half popped, 64 at least) and across emptying.
  incsim::flow::Fifo<int> f;
  std::vector<int> out;
  for (int i = 0; i < 300; ++i) {
    f.push_back(i);
    if (i % 3 == 2) {
      out.push_back(f.front());
      f.pop_front();
    }
  }
  CHECK(f.size() == 200);
  while (!f.empty()) {
    out.push_back(f.front());
    f.pop_front();
  }
  f.push_back(7);
  CHECK(f.front() == 7);
  CHECK(f.back() == 7);
  std::vector<int> all(300);
  for (int i = 0; i < 300; ++i) all[static_cast<size_t>(i)] = i;
  CHECK(out == all);
}

namespace {
// Graphs whose ways part at different levels: clusters of two and three
// switch levels (a rail's nodes under one leaf, DGX-2's two NVSwitch
// baseboards inside a node), a fat tree.
std::vector<incsim::topo::Topology> walked_graphs() {
  using namespace incsim::topo;
  ClusterShape three;
  three.nodes = 3;
  three.pcie_GBps = 63;
  three.net_GBps = 50;
  three.net_latency_ns = 7;
  three.leaf_ports = 2;
  three.spine_ports = 16;
  ClusterShape two = three;
  two.leaf_ports = 64;
  two.spine_ports = 64;
  ClusterShape grouped = three;  // two nodes' GPUs of a rail under a leaf, whose ways walk as one group
  grouped.nodes = 5;
  grouped.leaf_ports = 4;
  std::vector<Topology> v{make_cluster(make_hgx_h100(25, 3), three), make_cluster(make_hgx_h100(25, 3), grouped)};
  for (const Topology& c : v) REQUIRE(c.find("core0_0") >= 0);
  v.push_back(make_cluster(make_dgx2(25, 5), two));
  v.push_back(make_fattree(16, 4, 25, 11));
  return v;
}

// Some switches spread over equal-cost ports and some take their table's,
// with latencies that differ by node.
incsim::flow::FlowMachine walked_machine(const incsim::topo::Topology& t) {
  incsim::flow::FlowMachine m;
  m.size_for(t);
  m.formats.push_back({});
  for (int s : t.switches()) {
    m.node_ns[static_cast<size_t>(s)] = 100 + s % 7;
    m.spreads[static_cast<size_t>(s)] = s % 3 != 0;
  }
  return m;
}

// The endpoints switch `from` reaches (a node's NVSwitch, its node's).
std::vector<int> reached(const incsim::topo::Topology& t, int from) {
  std::vector<int> dsts;
  for (int e = 0; e < static_cast<int>(t.endpoints().size()); ++e)
    if (t.hops_from(from, e) > 0) dsts.push_back(e);
  return dsts;
}
}  // namespace

// FlowGraph::walk_all against one walk per endpoint.
TEST_CASE("a walk to every endpoint at once gives each endpoint's walk: its links' shares, what it meets and its latency, "
          "bit for bit") {
  for (const incsim::topo::Topology& t : walked_graphs()) {
    INFO(t.name);
    const incsim::flow::FlowMachine m = walked_machine(t);
    const incsim::flow::FlowGraph g(m, {});
    size_t all_pieces = 0, all_hops = 0;
    for (int from : t.switches()) {
      const std::vector<int> dsts = reached(t, from);
      std::vector<std::map<int, double>> got(dsts.size());
      int pieces = 0;
      std::vector<double> latency;
      std::vector<incsim::flow::FlowGraph::Hops> fwd(dsts.size()), back(dsts.size());
      g.walk_all(from, dsts, [&](const incsim::flow::FlowGraph::Piece& p) {
        ++pieces;
        for (int d : p.dsts) {
          fwd[static_cast<size_t>(d)].insert(fwd[static_cast<size_t>(d)].end(), p.fwd.begin(), p.fwd.end());
          back[static_cast<size_t>(d)].insert(back[static_cast<size_t>(d)].end(), p.back.begin(), p.back.end());
        }
        for (int d : p.dsts)
          for (const auto& [l, x] : p.hops) {
            const bool fresh = got[static_cast<size_t>(d)].emplace(x > 0 ? l : ~l, x).second;
            CHECK(fresh);  // each link once on a way
          }
      }, latency);
      size_t hops = 0;  // pieces were the ways walked one by one: one per level
      for (size_t i = 0; i < dsts.size(); ++i) {
        incsim::flow::FlowGraph::Hops met, met_back;
        const incsim::flow::Route r = g.walk(from, -1, dsts[i], -1, &met, &met_back);
        incsim::flow::FlowGraph::Hops joined;
        incsim::flow::FlowGraph::join_trunks(fwd[i], joined);
        CHECK(joined == met);
        incsim::flow::FlowGraph::join_trunks(back[i], joined);
        CHECK(joined == met_back);
        std::map<int, double> want;
        for (const auto& [l, x] : r.hops) want.emplace(x > 0 ? l : ~l, x);
        CHECK(got[i] == want);
        CHECK(latency[i] == r.latency_ns);
        hops += static_cast<size_t>(t.hops_from(from, dsts[i]));
      }
      CHECK(static_cast<size_t>(pieces) <= hops);
      all_pieces += static_cast<size_t>(pieces);
      all_hops += hops;
    }
    CHECK(all_pieces < all_hops);  // the ways were walked together
  }
}

// Every switch's ways walked with one memo, as a group's homes are: what
// repeats is replayed, and each walk gives the same pieces in the same order
// and the same latencies as without it.
TEST_CASE("walks to the same endpoints from many switches replay what repeats, bit for bit") {
  using Walked = std::vector<std::tuple<incsim::flow::FlowGraph::Hops, incsim::flow::FlowGraph::Hops,
                                        incsim::flow::FlowGraph::Hops, std::vector<int>>>;
  for (const incsim::topo::Topology& t : walked_graphs()) {
    INFO(t.name);
    const incsim::flow::FlowMachine m = walked_machine(t);
    const incsim::flow::FlowGraph g(m, {});
    incsim::flow::FlowGraph::WalkMemo memo;
    for (int round = 0; round < 2; ++round)  // the second round's every walk is met before
      for (int from : t.switches()) {
        const std::vector<int> dsts = reached(t, from);
        Walked plain, memoed;
        std::vector<double> latency, memo_latency;
        const auto keep = [](Walked& w) {
          return [&w](const incsim::flow::FlowGraph::Piece& p) {
            w.emplace_back(incsim::flow::FlowGraph::Hops(p.hops.begin(), p.hops.end()),
                           incsim::flow::FlowGraph::Hops(p.fwd.begin(), p.fwd.end()),
                           incsim::flow::FlowGraph::Hops(p.back.begin(), p.back.end()), p.dsts);
          };
        };
        g.walk_all(from, dsts, keep(plain), latency);
        g.walk_all(from, dsts, keep(memoed), memo_latency, &memo);
        REQUIRE(memoed == plain);
        REQUIRE(memo_latency == latency);
      }
    CHECK(memo.replays() > t.switches().size());
  }
}
