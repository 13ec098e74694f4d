// The flow network (modules/flow): max-min fair rates by progressive
// filling and completion times, against times computed by hand.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "flow/network.h"

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
