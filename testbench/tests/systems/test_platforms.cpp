// MultiTree's platforms end to end (torus, mesh, fat tree, BiGraph; Huang et
// al., ISCA 2021, §V-A): an all-to-all where every link carries, on each VC,
// exactly the packets the routes and VC rules put there (so the switches
// apply the dateline the topology computes), and the ring all-reduce exact
// and never stalled on each platform at sizes up to 1 MiB.
#include <catch2/catch.hpp>

#include <array>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <systemc>
#include <vector>

#include "core/config.h"
#include "experiment.h"
#include "options.h"
#include "platforms/platform.h"
#include "run_checked.h"
#include "streams.h"

using namespace incsim;

namespace {

using VcCounts = std::array<uint64_t, net::kNumVcs>;

// Packets per link end ("r0.3") and VC that the routes put there when every
// endpoint sends `writes` writes to every other: each write on the request
// class, each ack back on the response class, the VC within the class
// chosen by the switches' rule at each hop.
std::map<std::string, VcCounts> expected_packets(const topo::Topology& t, int writes) {
  std::map<std::string, VcCounts> want;
  const int n = static_cast<int>(t.endpoints().size());
  auto walk = [&](int src, int dst, int class_vc) {
    topo::PortRef out{t.endpoints()[src], 0};
    int vc = class_vc;
    while (true) {
      want[t.port_name(out)][vc] += writes;
      const topo::PortRef in = t.peer(out);
      if (t.node(in.node).kind == topo::NodeKind::Endpoint) return;
      const int o = t.route(in.node, dst);
      const topo::VcRule r = t.vc_rule(in.node, in.port, o);
      if (r == topo::VcRule::First) vc = net::class_first_vc(vc);
      if (r == topo::VcRule::Second) vc = net::class_second_vc(vc);
      out = {in.node, o};
    }
  };
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) {
        walk(s, d, net::kRequestVc);
        walk(d, s, net::kResponseVc);
      }
  return want;
}

// Every endpoint writes `writes` packets of 256 B to every other, all at
// once: every write lands with its data, every write is acked, and the
// packets per link and VC match expected_packets(). With a VC per packet
// (switch.vc_alloc=packet) they match it per set (a VC and that VC |
// kExtraVcBit), or per class where no rule splits one, and the extra VCs
// carry some.
void all_to_all(const std::string& platform, platforms::PlatformShape shape, int writes, bool per_packet = false) {
  Config cfg;
  if (per_packet) cfg.set("switch.vc_alloc", "packet", "test");
  const topo::Topology t = platforms::make_topology(platform, shape, cfg);
  platforms::GpuMachine plat(t, cfg, 1, platforms::platform_defaults(t));
  cfg.check_unused();
  const auto& gpus = plat.gpus();
  const int n = static_cast<int>(gpus.size());
  const uint32_t payload = 256;
  REQUIRE(plat.format().max_payload_bytes == payload);  // MultiTree Table III
  std::vector<uint64_t> base(n);
  for (int g = 0; g < n; ++g) base[g] = gpus[g]->memory().alloc(static_cast<uint64_t>(n) * writes * payload);
  auto slot = [&](int src, int k) { return base[0] + (static_cast<uint64_t>(src) * writes + k) * payload; };
  std::vector<std::unique_ptr<test::RequestStream>> streams;
  for (int g = 0; g < n; ++g) {
    auto s = std::make_unique<test::RequestStream>();
    for (int k = 0; k < writes; ++k)
      for (int d = 0; d < n; ++d) {
        if (d == g) continue;
        std::vector<uint8_t> data(payload);
        for (uint32_t i = 0; i < payload; ++i) data[i] = test::pattern(g * writes + k, d, i);
        s->requests.push_back({net::Op::Write, static_cast<uint32_t>(d), slot(g, k), data, 0});
      }
    gpus[g]->add_stream(s.get());
    gpus[g]->activate(0, s.get(), sc_core::SC_ZERO_TIME);
    streams.push_back(std::move(s));
  }
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_MS));
  CHECK_FALSE(sc_core::sc_pending_activity());  // finished long before the limit
  std::ostringstream held;
  const uint64_t n_held = plat.report_held(held);
  INFO(held.str());
  CHECK(n_held == 0);
  CHECK(plat.pool().in_use() == 0);

  int bad = 0;
  for (int d = 0; d < n; ++d)
    for (int g = 0; g < n; ++g)
      for (int k = 0; k < writes && g != d; ++k) {
        const uint8_t* got = gpus[d]->memory().at(slot(g, k), payload);
        for (uint32_t i = 0; i < payload; ++i)
          if (got[i] != test::pattern(g * writes + k, d, i)) {
            ++bad;
            break;
          }
      }
  CHECK(bad == 0);
  for (int g = 0; g < n; ++g) CHECK(streams[g]->responses.size() == static_cast<size_t>((n - 1) * writes));

  const auto want = expected_packets(t, writes);
  uint64_t second_vc = 0, extra_vc = 0;
  bool sets = false;  // some hop takes a class's second VC: per-packet allocation keeps to sets
  for (const auto& [from, counts] : want) sets = sets || counts[1] + counts[3] > 0;
  for (const auto& l : plat.link_ends()) {
    const auto it = want.find(l.from);
    for (int vc = 0; vc < net::kClassVcs; ++vc) {
      const uint64_t w = it == want.end() ? 0 : it->second[vc];
      INFO(l.from << " -> " << l.to << " vc" << vc);
      uint64_t got = l.port->packets_sent(vc);
      if (per_packet) {
        got += l.port->packets_sent(vc | net::kExtraVcBit);
        extra_vc += l.port->packets_sent(vc | net::kExtraVcBit);
      }
      if (!per_packet || sets) CHECK(got == w);
      if (vc != net::class_first_vc(vc)) second_vc += got;
    }
    if (per_packet && !sets)
      for (const int first : {int{net::kRequestVc}, int{net::kResponseVc}}) {
        INFO(l.from << " -> " << l.to << " class of vc" << first);
        const uint64_t w = it == want.end() ? 0 : it->second[first];
        uint64_t got = 0;
        for (const int vc : {first, first + 1, first | net::kExtraVcBit, (first + 1) | net::kExtraVcBit})
          got += l.port->packets_sent(vc);
        CHECK(got == w);
      }
    for (int vc = net::kClassVcs; vc < net::kNumVcs && !per_packet; ++vc) CHECK(l.port->packets_sent(vc) == 0);
  }
  CHECK((extra_vc > 0) == per_packet);
  // Second VCs carry traffic where the rule has something to do: tori with
  // a ring of 3 or more (a dateline), BiGraph; never on mesh or fat tree.
  bool datelines = false;
  for (const auto& l : t.links()) datelines = datelines || l.dateline;
  if (!per_packet || sets) CHECK((second_vc > 0) == (datelines || t.vc_policy == topo::VcPolicy::SwitchHop));
}

platforms::PlatformShape dims(int a, int b) {
  platforms::PlatformShape s;
  s.dims = true;
  s.dims_x = a;
  s.dims_y = b;
  return s;
}

// The ring all-reduce (the default algorithm) as incsim runs it: on these
// platforms on the NICs, or (engine "software") the GPUs' flag-based ring.
void ring_exact(const std::string& platform, const std::string& dims, int nodes, const std::string& sizes,
                size_t rows_expected, const std::string& engine = "nic") {
  tb::Options o = tb::run_options(platform, "allreduce", "", sizes, {{"ring.engine", engine}});
  o.dims = dims;
  o.nodes = nodes;
  tb::Experiment e(o);
  // A stall (no link moving a byte for the stall timeout) throws.
  const std::vector<tb::Row> rows = tb::run_checked(e, platform + " " + dims);
  REQUIRE(rows.size() == rows_expected);
  for (const auto& r : rows) CHECK(r["time_us"] > 0);
}

}  // namespace

TEST_CASE("torus 4x4 all-to-all: every link carries on each VC exactly what the dateline rule says",
          "[platforms][vc]") {
  all_to_all("torus", dims(4, 4), 4);
}

TEST_CASE("torus 5x3 all-to-all (odd rings): every link carries on each VC what the routes say", "[platforms][vc]") {
  all_to_all("torus", dims(5, 3), 4);
}

TEST_CASE("torus 2x2 all-to-all over parallel links, no dateline", "[platforms][vc]") { all_to_all("torus", dims(2, 2), 8); }

TEST_CASE("mesh 4x4 all-to-all stays on the first VCs", "[platforms][vc]") { all_to_all("mesh", dims(4, 4), 4); }

TEST_CASE("fat tree 16 all-to-all stays on the first VCs", "[platforms][vc]") {
  platforms::PlatformShape s;
  s.nodes = 16;
  all_to_all("fattree", s, 4);
}

TEST_CASE("BiGraph 4x8 all-to-all: upper-lower-upper paths take the second VC", "[platforms][vc]") {
  all_to_all("bigraph", dims(4, 8), 2);
}

TEST_CASE("torus 4x4 all-to-all with a VC per packet: each dateline set carries what the rule says", "[platforms][vc]") {
  all_to_all("torus", dims(4, 4), 4, true);
}

TEST_CASE("BiGraph 4x8 all-to-all with a VC per packet: each switch-hop set carries what the rule says",
          "[platforms][vc]") {
  all_to_all("bigraph", dims(4, 8), 2, true);
}

TEST_CASE("fat tree 16 all-to-all with a VC per packet spreads each class over its four VCs", "[platforms][vc]") {
  platforms::PlatformShape s;
  s.nodes = 16;
  all_to_all("fattree", s, 4, true);
}

TEST_CASE("torus buffers cover each link's own credit round trip", "[platforms][buffers]") {
  Config cfg;
  const topo::Topology t = platforms::make_topology("torus", dims(4, 4), cfg);
  platforms::GpuMachine plat(t, cfg, 1, platforms::platform_defaults(t));
  cfg.check_unused();
  // 16 GB/s network links, 150 ns each way, 4 ns router, 272 B packets:
  // (2 x 150 + 4 + 2 x 17) ns x 16 GB/s = 5408 B, plus 2 packets, in whole
  // packets: 21 x 272 B (Table III: 318 flits of 16 B). The node link
  // carries 64 GB/s: 75 packets at the router, 74 at the GPU (no router
  // latency in its loop).
  const uint32_t network = 21 * 272, node_in = 75 * 272, gpu_in = 74 * 272;
  CHECK(network == net::round_trip_bytes(16, sc_core::sc_time(150, sc_core::SC_NS), sc_core::sc_time(4, sc_core::SC_NS), 272));
  CHECK(node_in == net::round_trip_bytes(64, sc_core::sc_time(150, sc_core::SC_NS), sc_core::sc_time(4, sc_core::SC_NS), 272));
  int checked = 0;
  for (const auto& l : plat.link_ends()) {
    const bool from_gpu = l.from[0] == 'n', to_gpu = l.to[0] == 'n';
    const uint32_t want = from_gpu ? node_in : to_gpu ? gpu_in : network;
    INFO(l.from << " -> " << l.to);
    for (int vc = 0; vc < net::kNumVcs; ++vc) {
      CHECK(l.port->has_credit(vc, want));
      CHECK_FALSE(l.port->has_credit(vc, want + 1));
    }
    ++checked;
  }
  CHECK(checked == 2 * 48);
}

TEST_CASE("a torus or mesh node's link: its router's links together by default, or the interfaces and latency set",
          "[platforms]") {
  const auto node_link = [](const std::string& platform, std::vector<std::pair<const char*, const char*>> set) {
    Config cfg;
    for (const auto& [k, v] : set) cfg.set(k, v, "test");
    const topo::Topology t = platforms::make_topology(platform, dims(4, 4), cfg);
    cfg.check_unused();
    return t.links()[static_cast<size_t>(t.link_at({t.endpoints()[5], 0}))];  // an inner node on the mesh
  };
  const topo::Link def = node_link("torus", {});
  CHECK(def.bw_GBps == 64);
  CHECK(def.latency_ns == 150);
  CHECK(node_link("mesh", {}).bw_GBps == 64);
  const topo::Link one = node_link("torus", {{"nic.interfaces", "1"}, {"nic.link_latency_ns", "1"}});
  CHECK(one.bw_GBps == 16);
  CHECK(one.latency_ns == 1);
  const topo::Link two = node_link("mesh", {{"nic.interfaces", "2"}, {"link.latency_ns", "20"}});
  CHECK(two.bw_GBps == 32);
  CHECK(two.latency_ns == 20);
}

// Sizes: one element, a non-power-of-two multiple of 4, and up to 1 MiB.
TEST_CASE("ring all-reduce is exact on torus 4x4", "[platforms][ring]") {
  ring_exact("torus", "4x4", 0, "4,12292,96K,1M", 4);
}
TEST_CASE("software ring all-reduce is exact on torus 4x4", "[platforms][ring]") {
  ring_exact("torus", "4x4", 0, "4,12292,96K,1M", 4, "software");
}
TEST_CASE("software ring all-reduce is exact on BiGraph 4x8", "[platforms][ring]") {
  ring_exact("bigraph", "4x8", 0, "12292,1M", 2, "software");
}
TEST_CASE("ring all-reduce is exact on torus 8x8", "[platforms][ring]") { ring_exact("torus", "8x8", 0, "12292,1M", 2); }
TEST_CASE("ring all-reduce is exact on torus 2x2", "[platforms][ring]") {
  ring_exact("torus", "2x2", 0, "4,12292,96K,1M", 4);
}
TEST_CASE("ring all-reduce is exact on mesh 4x4", "[platforms][ring]") {
  ring_exact("mesh", "4x4", 0, "4,12292,96K,1M", 4);
}
TEST_CASE("ring all-reduce is exact on fat tree 16", "[platforms][ring]") {
  ring_exact("fattree", "", 16, "4,12292,96K,1M", 4);
}
TEST_CASE("ring all-reduce is exact on fat tree 64", "[platforms][ring]") { ring_exact("fattree", "", 64, "12292,1M", 2); }
TEST_CASE("ring all-reduce is exact on BiGraph 4x8", "[platforms][ring]") {
  ring_exact("bigraph", "4x8", 0, "4,12292,96K,1M", 4);
}

TEST_CASE("a training run's compute model is its platform's GPU unless --compute names one", "[platforms][training]") {
  CHECK(platforms::default_compute("hgx-h100", "") == "h100");
  CHECK(platforms::default_compute("nvl72", "") == "b200");
  CHECK(platforms::default_compute("cluster", "") == "h100");  // hgx-h100 nodes by default
  CHECK(platforms::default_compute("cluster", "nvl72") == "b200");
  for (const char* paper : {"dgx2", "dgx1v", "torus", "star", "multigpu", "my_board.yaml"})
    CHECK(platforms::default_compute(paper, "") == "v100");
}
