// NvSwitch's tables alone: four stub GPUs on its ports (switch_bench.h),
// no platform. A port's reduction table: two reduce-writes for one address
// give one sum multicast to the group; a full table evicts its least
// recently used entry to the block's home GPU, or holds the write (SHARP);
// the ALU adds at its rate; the tables show in the hierarchy and the stall
// report. The crossbar itself is test_credit_switch's.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hierarchy.h"
#include "nvswitch/nvswitch.h"
#include "switch_bench.h"
#include "topology/multicast.h"
#include "topology/topology.h"

using namespace incsim;
using namespace incsim::test;
using sc_core::SC_NS;
using sc_core::sc_time;

namespace {

nvswitch::TableConfig tables(uint32_t table_bytes) {
  nvswitch::TableConfig c;
  c.table_bytes = table_bytes;
  c.entry_bytes = kPayload;
  c.table_timeout = sc_time(1, sc_core::SC_MS);  // far beyond every test: no entry times out
  c.eviction = nvswitch::make_eviction_policy("lru");
  return c;
}

}  // namespace

namespace {

// A star of four GPUs (gpu g on port g) and one multicast group, GPUs 0 and
// 1; the fabric manager's tables for it, and the wiring it routes by.
struct Fabric {
  topo::Topology t = topo::make_star(kPorts, kBw, kLink.to_seconds() * 1e9);
  topo::MulticastFabric f{t};
  int region = f.add_region(net::kMulticastBase, 8 * kPayload, {0, 1}, true);
  credit_switch::SwitchWiring wiring() const {
    credit_switch::SwitchWiring w;
    const int s = t.switches()[0];
    for (int d = 0; d < kPorts; ++d) w.route.push_back(static_cast<int16_t>(t.route(s, d)));
    w.route_to_switch_first = {0, 0};
    for (int p = 0; p < kPorts; ++p) w.port_endpoint.push_back(t.node(t.peer({s, p}).node).index);
    return w;
  }
  uint64_t block(int b) const { return net::kMulticastBase + static_cast<uint64_t>(b) * kPayload; }
};

struct Bench : SwitchBench<nvswitch::NvSwitch> {
  Bench(const Fabric& fab, const nvswitch::TableConfig& tables)
      : SwitchBench([&](net::PacketPool& pool) {
          return std::make_unique<nvswitch::NvSwitch>("sw", kPorts, fab.wiring(), switch_config(), tables, pool, &fab.f);
        }) {}
};

// GPU `src`'s contribution to a block, elements base + i, as its copy engine sends it (Klenk §IV-C);
// fab: a fabric manager f with the group's region.
template <class Fab>
net::Packet* reduce_write(net::PacketPool& pool, const Fab& fab, uint32_t src, uint64_t addr, int32_t base) {
  net::Packet* p = packet(pool, net::Op::ReduceWrite, src, 0, addr);
  const auto home = fab.f.home_port(fab.region, addr);
  p->home_switch = home.sw;
  p->home_port = static_cast<int16_t>(home.port);
  p->dst = static_cast<uint32_t>(fab.f.home_gpu(fab.region, addr));
  p->count = 1;
  p->dtype = static_cast<uint8_t>(elements::DType::Int32);
  p->redop = static_cast<uint8_t>(elements::RedOp::Sum);
  for (int i = 0; i < static_cast<int>(kPayload / 4); ++i) {
    const int32_t v = base + i;
    std::memcpy(p->data + 4 * i, &v, 4);
  }
  return p;
}

}  // namespace

TEST_CASE("two reduce-writes for one address leave the home port's table as one sum, multicast to the group", "[nvswitch][ports][reduction]") {
  Fabric fab;
  const uint64_t addr = fab.block(2);
  // Blocks are interleaved over the switch's ports: block 2 is homed at port
  // 2, whose GPU is not in the group.
  REQUIRE(fab.f.home_port(fab.region, addr).port == 2);
  Bench b(fab, tables(4 * kPayload));
  b.gpu[0]->send_at(sc_core::SC_ZERO_TIME, reduce_write(b.pool, fab, 0, addr, 1));
  b.gpu[1]->send_at(sc_core::SC_ZERO_TIME, reduce_write(b.pool, fab, 1, addr, 1000));
  sc_core::sc_start();
  // Both reach port 2 after the switch latency and cross into its table one
  // after the other; the result leaves when the second is in.
  const sc_time result = kLink + kSwitch + 2 * kXbar;
  for (int g = 0; g < 2; ++g) {
    const auto& got = b.gpu[g]->arrivals();
    REQUIRE(got.size() == 1);
    const test::Arrival& a = got[0];
    CHECK(a.pkt.op == net::Op::Write);
    CHECK(a.pkt.addr == addr);
    CHECK(a.pkt.count == 2);
    CHECK(a.pkt.payload_bytes == kPayload);
    for (int i = 0; i < static_cast<int>(kPayload / 4); ++i)
      if (element(a, i) != 1001 + 2 * i) FAIL("gpu" << g << " element " << i << " is " << element(a, i));
    CHECK(a.head == result + kLink);
    CHECK(a.tail == result + kLink + kSer);
  }
  CHECK(b.gpu[2]->arrivals().empty());
  CHECK(b.gpu[3]->arrivals().empty());
  const nvswitch::ReductionTable& t = b.sw->table(2);
  CHECK(t.misses == 1);
  CHECK(t.hits == 1);
  CHECK(t.completions == 1);
  CHECK(t.size() == 0);
  for (int p : {0, 1, 3}) CHECK(b.sw->table(p).misses == 0);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("a push miss on a full table evicts the least recently used entry to its home GPU", "[nvswitch][ports][reduction]") {
  Fabric fab;
  const uint64_t a = fab.block(2), c = fab.block(6);  // both homed at port 2; home GPU 0 (block % 2)
  REQUIRE(fab.f.home_port(fab.region, a).port == 2);
  REQUIRE(fab.f.home_port(fab.region, c).port == 2);
  REQUIRE(fab.f.home_gpu(fab.region, a) == 0);
  Bench b(fab, tables(kPayload));  // one entry per table
  b.gpu[1]->send_at(sc_core::SC_ZERO_TIME, reduce_write(b.pool, fab, 1, a, 100));
  b.gpu[1]->send_at(sc_core::SC_ZERO_TIME, reduce_write(b.pool, fab, 1, c, 200));
  const sc_time later(1, sc_core::SC_US);
  b.gpu[0]->send_at(later, reduce_write(b.pool, fab, 0, c, 300));
  sc_core::sc_start();
  // c arrives one serialization after a, misses the full table and evicts
  // a: a's partial goes back into the crossbar at once, to GPU 0.
  const sc_time evicted = kSer + kLink + kSwitch + kXbar;
  const auto& at0 = b.gpu[0]->arrivals();
  REQUIRE(at0.size() == 2);
  CHECK(at0[0].pkt.op == net::Op::Partial);
  CHECK(at0[0].pkt.addr == a);
  CHECK(at0[0].pkt.dst == 0);
  CHECK(at0[0].pkt.count == 1);
  CHECK(element(at0[0], 5) == 105);
  CHECK(at0[0].head == evicted + kLink);
  // c stayed and completes with GPU 0's write.
  const sc_time result = later + kLink + kSwitch + kXbar;
  for (int g = 0; g < 2; ++g) {
    const test::Arrival& r = b.gpu[g]->arrivals().back();
    CHECK(r.pkt.op == net::Op::Write);
    CHECK(r.pkt.addr == c);
    CHECK(r.pkt.count == 2);
    CHECK(element(r, 7) == 500 + 2 * 7);
    CHECK(r.head == result + kLink);
  }
  CHECK(b.gpu[1]->arrivals().size() == 1);
  const nvswitch::ReductionTable& t = b.sw->table(2);
  CHECK(t.evictions == 1);
  CHECK(t.completions == 1);
  CHECK(t.size() == 0);
  CHECK(b.pool.in_use() == 0);
}

// SHARP's aggregation buffers (an InfiniBand switch's, TableConfig::holds):
// a push that needs a new entry of a full table waits at its input until
// one frees; nothing is evicted, no partial sum leaves.
TEST_CASE("a table that holds keeps a push that finds it full at its input until an entry frees", "[nvswitch][ports][reduction]") {
  Fabric fab;
  const uint64_t a = fab.block(2), c = fab.block(6);  // both homed at port 2
  REQUIRE(fab.f.home_port(fab.region, a).port == 2);
  REQUIRE(fab.f.home_port(fab.region, c).port == 2);
  nvswitch::TableConfig cfg = tables(kPayload);  // one entry per table
  cfg.holds = true;
  Bench b(fab, cfg);
  b.gpu[1]->send_at(sc_core::SC_ZERO_TIME, reduce_write(b.pool, fab, 1, a, 100));
  b.gpu[1]->send_at(sc_core::SC_ZERO_TIME, reduce_write(b.pool, fab, 1, c, 200));
  const sc_time later(1, sc_core::SC_US), last(2, sc_core::SC_US);
  b.gpu[0]->send_at(later, reduce_write(b.pool, fab, 0, a, 300));
  b.gpu[0]->send_at(last, reduce_write(b.pool, fab, 0, c, 400));
  sc_core::sc_start();
  // a completes with GPU 0's write; c, held until then, takes the freed
  // entry and completes with GPU 0's second.
  for (int g = 0; g < 2; ++g) {
    const auto& got = b.gpu[g]->arrivals();
    REQUIRE(got.size() == 2);
    CHECK(got[0].pkt.op == net::Op::Write);
    CHECK(got[0].pkt.addr == a);
    CHECK(got[0].pkt.count == 2);
    CHECK(element(got[0], 5) == 400 + 2 * 5);
    CHECK(got[0].head == later + kLink + kSwitch + kXbar + kLink);
    CHECK(got[1].pkt.addr == c);
    CHECK(got[1].pkt.count == 2);
    CHECK(element(got[1], 7) == 600 + 2 * 7);
    CHECK(got[1].head == last + kLink + kSwitch + kXbar + kLink);
  }
  const nvswitch::ReductionTable& t = b.sw->table(2);
  CHECK(t.evictions == 0);
  CHECK(t.completions == 2);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("a table's ALU adds each contribution in turn at its rate before the sum leaves", "[nvswitch][ports][reduction]") {
  Fabric fab;
  const uint64_t addr = fab.block(2);
  nvswitch::TableConfig cfg = tables(4 * kPayload);
  cfg.alu_ps_per_byte = 1000;  // 1 GB/s: 128 ns per block
  Bench b(fab, cfg);
  b.gpu[0]->send_at(sc_core::SC_ZERO_TIME, reduce_write(b.pool, fab, 0, addr, 1));
  b.gpu[1]->send_at(sc_core::SC_ZERO_TIME, reduce_write(b.pool, fab, 1, addr, 1000));
  sc_core::sc_start();
  // The first is in one crossbar move after the switch latency; the ALU
  // takes 128 ns for it, then 128 ns for the second (in by then).
  const sc_time alu(128, SC_NS), result = kLink + kSwitch + kXbar + 2 * alu;
  for (int g = 0; g < 2; ++g) {
    const auto& got = b.gpu[g]->arrivals();
    REQUIRE(got.size() == 1);
    CHECK(got[0].pkt.count == 2);
    CHECK(element(got[0], 3) == 1001 + 2 * 3);
    CHECK(got[0].head == result + kLink);
  }
}

TEST_CASE("a switch's ports, their reduction tables and its MCR table are modules without processes, and a table "
          "holding an entry tells the stall report", "[nvswitch][ports][reduction][hierarchy]") {
  Fabric fab;
  const uint64_t a = fab.block(2);  // homed at port 2
  REQUIRE(fab.f.home_port(fab.region, a).port == 2);
  Bench b(fab, tables(2 * kPayload));
  for (int p = 0; p < kPorts; ++p) {
    const std::string port = "sw.port" + std::to_string(p);
    INFO(port);
    sc_core::sc_module* m = test::find_block(port);
    REQUIRE(m);
    CHECK(m->get_parent_object() == b.sw.get());
    auto* t = test::find_block<nvswitch::ReductionTable>(port + ".reduction_table");
    REQUIRE(t);
    CHECK(t == &b.sw->table(p));
    CHECK(t->get_parent_object() == m);
    CHECK(t->capacity() == 2);
    // The link ends are the port's; the method that serves it is the switch's.
    CHECK(&b.sw->in(p).socket == sc_core::sc_find_object((port + ".in").c_str()));
    CHECK(&b.sw->out(p).socket == sc_core::sc_find_object((port + ".out").c_str()));
    CHECK(test::processes_below(m) == 0);
    CHECK(dynamic_cast<sc_core::sc_process_b*>(sc_core::sc_find_object(("sw.out" + std::to_string(p) + "_proc").c_str())));
  }
  auto* mcr = test::find_block<nvswitch::McrTable>("sw.mcr_table");
  REQUIRE(mcr);
  CHECK(test::processes_below(mcr) == 0);
  // One contribution of two: port 2's table holds the entry until the other comes.
  b.gpu[1]->send_at(sc_core::SC_ZERO_TIME, reduce_write(b.pool, fab, 1, a, 100));
  sc_core::sc_start(sc_time(1, sc_core::SC_US));
  CHECK(b.sw->table(2).size() == 1);
  std::ostringstream os;
  CHECK(b.sw->report_held(os) == 0);  // an entry is not a packet
  CHECK(os.str() == "  sw.port2.reduction_table: 1 of 2 entries held, 0 pull requests waiting for one\n");
  // A multicast write looks the MCR table up.
  CHECK(mcr->lookups == 0);
  net::Packet* w = packet(b.pool, net::Op::Write, 2, 0, fab.block(3));
  b.gpu[2]->send_at(sc_time(2, sc_core::SC_US), w);
  sc_core::sc_start(sc_time(2, sc_core::SC_US));
  CHECK(mcr->lookups == 1);
  CHECK(b.gpu[0]->arrivals().size() + b.gpu[1]->arrivals().size() == 2);
}

namespace {

// A leaf under test between two stub GPUs of a group (ports 0 and 1), a
// stub on its up-link to a spine (port 2) and one GPU outside the group
// (port 3); the group's third GPU sits on the spine, beyond the bench.
struct TwoLevel {
  topo::Topology t = [] {
    topo::Topology x;
    for (int g = 0; g < 4; ++g) x.add_endpoint("gpu" + std::to_string(g), 1);
    const int leaf = x.add_switch("leaf", kPorts), spine = x.add_switch("spine", 2);
    const double ns = kLink.to_seconds() * 1e9;
    x.connect({0, 0}, {leaf, 0}, kBw, ns);
    x.connect({1, 0}, {leaf, 1}, kBw, ns);
    x.connect({leaf, 2}, {spine, 0}, kBw, ns);
    x.connect({3, 0}, {leaf, 3}, kBw, ns);
    x.connect({2, 0}, {spine, 1}, kBw, ns);
    x.finalize();
    return x;
  }();
  topo::MulticastFabric f = [this] {
    topo::MulticastFabric m(t);
    m.aggregate_on_the_way();  // SHARP's trees
    return m;
  }();
  int region = f.add_region(net::kMulticastBase, 64 * kPayload, {0, 1, 2}, true);
  static constexpr int kLeaf = 0, kSpine = 1;  // switch numbers
  credit_switch::SwitchWiring wiring() const {
    credit_switch::SwitchWiring w;
    const int s = t.switches()[kLeaf];
    w.index = kLeaf;
    for (int d = 0; d < 4; ++d) w.route.push_back(static_cast<int16_t>(t.route(s, d)));
    for (int k = 0; k < 2; ++k) {
      w.route_to_switch_first.push_back(static_cast<uint32_t>(w.route_to_switch.size()));
      for (int16_t p : t.routes_to_switch(s, k)) w.route_to_switch.push_back(p);
    }
    w.route_to_switch_first.push_back(static_cast<uint32_t>(w.route_to_switch.size()));
    for (int p = 0; p < kPorts; ++p) {
      const int peer = t.peer({s, p}).node;
      w.port_endpoint.push_back(t.node(peer).kind == topo::NodeKind::Endpoint ? t.node(peer).index : -1);
    }
    return w;
  }
  // The first block homed at the spine.
  uint64_t spine_block() const {
    for (uint64_t a = net::kMulticastBase;; a += kPayload)
      if (f.home_port(region, a).sw == kSpine) return a;
  }
};

// The two GPUs' writes to a block homed at the spine, through the leaf with `cfg`; what reaches the up-link.
std::vector<Arrival> up_the_leaf(const nvswitch::TableConfig& cfg) {
  TwoLevel two;
  const uint64_t a = two.spine_block();
  REQUIRE(two.f.merge_count(two.region, a, TwoLevel::kLeaf) == 2);
  REQUIRE(two.f.merge_count(two.region, a, TwoLevel::kSpine) == 0);  // the home counts the whole group
  SwitchBench<nvswitch::NvSwitch> b([&](net::PacketPool& pool) {
    return std::make_unique<nvswitch::NvSwitch>("leaf", kPorts, two.wiring(), switch_config(), cfg, pool, &two.f);
  });
  b.gpu[0]->send_at(sc_core::SC_ZERO_TIME, reduce_write(b.pool, two, 0, a, 100));
  b.gpu[1]->send_at(sc_time(100, SC_NS), reduce_write(b.pool, two, 1, a, 1000));
  sc_core::sc_start();
  CHECK(b.gpu[0]->arrivals().empty());
  CHECK(b.gpu[1]->arrivals().empty());
  CHECK(b.pool.in_use() == 0);
  return b.gpu[2]->arrivals();
}

}  // namespace

// SHARP's aggregation tree (Graham et al. 2016): the leaf is a merge point
// of the block's tree, its two members' contributions meet there on their
// way to the spine and go on as one partial, a reducing write counting both.
TEST_CASE("a table that holds reduces two writes passing toward a home elsewhere into one partial with their count",
          "[nvswitch][ports][reduction][sharp]") {
  nvswitch::TableConfig cfg = tables(4 * kPayload);
  cfg.holds = true;
  const auto got = up_the_leaf(cfg);
  REQUIRE(got.size() == 1);
  CHECK(got[0].pkt.op == net::Op::ReduceWrite);
  CHECK(got[0].pkt.count == 2);
  CHECK(got[0].pkt.home_switch == TwoLevel::kSpine);
  CHECK(element(got[0], 9) == 1100 + 2 * 9);
  // It leaves once the second write has crossed into the table, through
  // the port's injector, as a completed push's result does.
  CHECK(got[0].head == sc_time(100, SC_NS) + kLink + kSwitch + kXbar + kLink);
}

TEST_CASE("Klenk's tables pass writes homed at another switch on unreduced", "[nvswitch][ports][reduction]") {
  const auto got = up_the_leaf(tables(4 * kPayload));
  REQUIRE(got.size() == 2);
  for (const auto& a : got) {
    CHECK(a.pkt.op == net::Op::ReduceWrite);
    CHECK(a.pkt.count == 1);
  }
}
