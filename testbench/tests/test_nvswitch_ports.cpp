// NvSwitch alone: four stub GPUs on its ports (stub_port.h), no platform.
// What a hardware engineer checks at the switch's boundary, each time
// computed from the parameters below: routing by the table, first flit out
// one link + switch latency + link after it left the GPU, an output's
// serialization between packets that compete for it, credit back-pressure
// (a GPU that frees nothing stops its output; the output resumes one credit
// loop after it does), and a port's reduction table: two reduce-writes for
// one address give one sum multicast to the group; a full table evicts its
// least recently used entry to the block's home GPU.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hierarchy.h"
#include "nvswitch/nvswitch.h"
#include "stub_port.h"
#include "topology/multicast.h"
#include "topology/topology.h"

using namespace incsim;
using sc_core::SC_NS;
using sc_core::sc_time;

namespace {

constexpr int kPorts = 4;
constexpr double kBw = 25.0;                  // GB/s per port
const sc_time kLink(10, SC_NS);               // wire latency
const sc_time kSwitch(150, SC_NS);            // first flit in to first flit out (Klenk §V)
constexpr uint32_t kPayload = 128, kWire = 144;  // 16 B header + 128 B (Klenk §V)
const sc_time kSer = test::wire_time(kWire, kBw);  // 5.76 ns
// Output-queued (speedup 0): the crossbar moves a packet into an output at
// the port count times the port bandwidth.
const sc_time kXbar = test::wire_time(kWire, kPorts * kBw);  // 1.44 ns

nvswitch::SwitchConfig config(uint32_t table_bytes = 0) {
  nvswitch::SwitchConfig c;
  c.latency = kSwitch;
  c.in_buffer_bytes = 8 * kWire;
  c.out_queue_bytes = 8 * kWire;
  c.table_bytes = table_bytes;
  c.entry_bytes = kPayload;
  c.table_timeout = sc_time(1, sc_core::SC_MS);  // far beyond every test: no entry times out
  c.eviction = nvswitch::make_eviction_policy("lru");
  return c;
}

// The switch and a stub GPU on each port; each GPU gives the switch's output
// `gpu_buffer` bytes of credit per VC.
struct Bench {
  net::PacketPool pool{net::PacketFormat{}};
  std::unique_ptr<nvswitch::NvSwitch> sw;
  std::vector<std::unique_ptr<test::StubPort>> gpu;  // by port
  Bench(nvswitch::SwitchWiring w, const nvswitch::SwitchConfig& c, const topo::MulticastFabric* fabric,
        uint32_t gpu_buffer = 8 * kWire) {
    sw = std::make_unique<nvswitch::NvSwitch>("sw", kPorts, std::move(w), c, pool, fabric);
    for (int p = 0; p < kPorts; ++p) {
      gpu.push_back(std::make_unique<test::StubPort>(("gpu_at_port" + std::to_string(p)).c_str(), pool));
      gpu[p]->configure(kBw, kLink, c.in_buffer_bytes);
      gpu[p]->connect(sw->in(p), sw->out(p));
      sw->configure_port(p, kBw, kLink, gpu_buffer);
    }
  }
  uint64_t held() const {
    std::ostringstream os;
    return sw->report_held(os);
  }
};

// A switch whose port p faces endpoint 3 - p: routing follows the table, not
// the port numbers.
nvswitch::SwitchWiring reversed() {
  nvswitch::SwitchWiring w;
  w.route = {3, 2, 1, 0};
  w.route_to_switch_first = {0, 0};
  w.port_endpoint = {3, 2, 1, 0};
  return w;
}

net::Packet* packet(net::PacketPool& pool, net::Op op, uint32_t src, uint32_t dst, uint64_t addr) {
  net::Packet* p = pool.get();
  p->op = op;
  p->src = src;
  p->dst = dst;
  p->addr = addr;
  p->vc = net::kRequestVc;
  p->payload_bytes = kPayload;
  p->wire_bytes = pool.format().wire_bytes(op, kPayload);
  return p;
}

int32_t element(const test::Arrival& a, int i) {
  int32_t v;
  std::memcpy(&v, a.data.data() + 4 * i, 4);
  return v;
}

}  // namespace

TEST_CASE("every packet leaves by the port its routing table names, data intact", "[nvswitch][ports][routing]") {
  Bench b(reversed(), config(), nullptr);
  for (int p = 0; p < kPorts; ++p) {
    const uint32_t src = 3 - p;
    for (uint32_t dst = 0; dst < kPorts; ++dst) {
      if (dst == src) continue;
      net::Packet* q = packet(b.pool, net::Op::Write, src, dst, 0x1000 * dst);
      std::memset(q->data, static_cast<int>(16 * src + dst), kPayload);
      b.gpu[p]->send_at(sc_core::SC_ZERO_TIME, q);
    }
  }
  sc_core::sc_start();
  for (int p = 0; p < kPorts; ++p) {
    const uint32_t me = 3 - p;
    const auto& got = b.gpu[p]->arrivals();
    REQUIRE(got.size() == kPorts - 1);
    std::vector<bool> from(kPorts);
    for (const auto& a : got) {
      CHECK(a.pkt.dst == me);
      CHECK(a.pkt.src != me);
      CHECK(a.pkt.addr == 0x1000u * me);
      from[a.pkt.src] = true;
      for (uint32_t i = 0; i < kPayload; ++i)
        if (a.data[i] != 16 * a.pkt.src + me) FAIL("byte " << i << " from " << a.pkt.src << " to " << me);
    }
    for (uint32_t s = 0; s < kPorts; ++s) CHECK(from[s] == (s != me));
  }
  CHECK(b.held() == 0);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("a packet's first flit is out one link, the switch latency and one link after it left", "[nvswitch][ports][timing]") {
  CHECK(kSer == sc_time(5.76, SC_NS));
  Bench b(reversed(), config(), nullptr);
  const sc_time t0(100, SC_NS);
  // Endpoint 3 (port 0) sends two writes back to back and a read request to
  // endpoint 2 (port 1); endpoint 1 (port 2) sends one to endpoint 0 (port 3),
  // which endpoint 2 (port 1) also sends to at the same time.
  b.gpu[0]->send_at(t0, packet(b.pool, net::Op::Write, 3, 2, 0));
  b.gpu[0]->send_at(t0, packet(b.pool, net::Op::Write, 3, 2, 128));
  b.gpu[0]->send_at(t0, packet(b.pool, net::Op::Read, 3, 2, 256));
  b.gpu[2]->send_at(t0, packet(b.pool, net::Op::Write, 1, 0, 0));
  b.gpu[1]->send_at(t0, packet(b.pool, net::Op::Write, 2, 0, 0));
  sc_core::sc_start();
  const auto& at2 = b.gpu[1]->arrivals();
  REQUIRE(at2.size() == 3);
  CHECK(at2[0].head == t0 + kLink + kSwitch + kLink);
  CHECK(at2[0].tail == t0 + kLink + kSwitch + kLink + kSer);
  CHECK(at2[1].head == t0 + kSer + kLink + kSwitch + kLink);  // it left the GPU one serialization later
  CHECK(at2[1].tail == t0 + 2 * kSer + kLink + kSwitch + kLink);
  CHECK(at2[2].pkt.op == net::Op::Read);
  CHECK(at2[2].tail - at2[2].head == sc_time(0.64, SC_NS));  // a header flit
  CHECK(at2[2].head == t0 + 2 * kSer + kLink + kSwitch + kLink);
  // Two inputs for one output at once: the second follows the first on the
  // wire (round robin picks input 1 before input 2).
  const auto& at0 = b.gpu[3]->arrivals();
  REQUIRE(at0.size() == 2);
  CHECK(at0[0].pkt.src == 2);
  CHECK(at0[0].head == t0 + kLink + kSwitch + kLink);
  CHECK(at0[1].pkt.src == 1);
  CHECK(at0[1].head == t0 + kLink + kSwitch + kSer + kLink);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("a GPU that frees no buffer stops the switch's output, which resumes one credit loop after it frees some", "[nvswitch][ports][credits]") {
  // Port 1's GPU has room for two packets and frees none until T.
  Bench b(reversed(), config(), nullptr, 2 * kWire);
  b.gpu[1]->withhold_credits(true);
  for (int i = 0; i < 5; ++i) b.gpu[0]->send_at(sc_core::SC_ZERO_TIME, packet(b.pool, net::Op::Write, 3, 2, 128 * i));
  const sc_time T(2, sc_core::SC_US);
  sc_core::sc_start(T);
  CHECK(b.gpu[0]->sent().size() == 5);  // the switch's input buffer took all five
  CHECK(b.gpu[1]->arrivals().size() == 2);
  CHECK(b.held() == 3);  // the other three wait in the switch
  b.gpu[1]->withhold_credits(false);
  b.gpu[1]->return_credits();
  sc_core::sc_start();
  const auto& got = b.gpu[1]->arrivals();
  REQUIRE(got.size() == 5);
  for (int i = 0; i < 5; ++i) CHECK(got[i].pkt.addr == 128u * i);  // in order
  // The two credits reach the switch one link later: packets 3 and 4 leave
  // back to back. Packet 5 needs packet 3's space: freed when 3's tail is in,
  // back at the switch one link later.
  CHECK(got[2].head == T + kLink + kLink);
  CHECK(got[3].head == T + kLink + kSer + kLink);
  CHECK(got[4].head == (T + kLink + kLink + kSer) + kLink + kLink);
  CHECK(b.held() == 0);
  CHECK(b.pool.in_use() == 0);
}

namespace {

// A star of four GPUs (gpu g on port g) and one multicast group, GPUs 0 and
// 1; the fabric manager's tables for it, and the wiring it routes by.
struct Fabric {
  topo::Topology t = topo::make_star(kPorts, kBw, kLink.to_seconds() * 1e9);
  topo::MulticastFabric f{t};
  int region = f.add_region(net::kMulticastBase, 8 * kPayload, {0, 1}, true);
  nvswitch::SwitchWiring wiring() const {
    nvswitch::SwitchWiring w;
    const int s = t.switches()[0];
    for (int d = 0; d < kPorts; ++d) w.route.push_back(static_cast<int16_t>(t.route(s, d)));
    w.route_to_switch_first = {0, 0};
    for (int p = 0; p < kPorts; ++p) w.port_endpoint.push_back(t.node(t.peer({s, p}).node).index);
    return w;
  }
  uint64_t block(int b) const { return net::kMulticastBase + static_cast<uint64_t>(b) * kPayload; }
};

// GPU `src`'s contribution to a block, elements base + i, as its copy engine sends it (Klenk §IV-C).
net::Packet* reduce_write(net::PacketPool& pool, const Fabric& fab, uint32_t src, uint64_t addr, int32_t base) {
  net::Packet* p = packet(pool, net::Op::ReduceWrite, src, 0, addr);
  const auto home = fab.f.home_port(fab.region, addr);
  p->home_switch = home.sw;
  p->home_port = static_cast<int16_t>(home.port);
  p->dst = static_cast<uint32_t>(fab.f.home_gpu(fab.region, addr));
  p->count = 1;
  p->dtype = static_cast<uint8_t>(collectives::DType::Int32);
  p->redop = static_cast<uint8_t>(collectives::RedOp::Sum);
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
  Bench b(fab.wiring(), config(4 * kPayload), &fab.f);
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
  Bench b(fab.wiring(), config(kPayload), &fab.f);  // one entry per table
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

// SHARP's aggregation buffers (an InfiniBand switch's, SwitchConfig::holds):
// a push that needs a new entry of a full table waits at its input until
// one frees; nothing is evicted, no partial sum leaves.
TEST_CASE("a table that holds keeps a push that finds it full at its input until an entry frees", "[nvswitch][ports][reduction]") {
  Fabric fab;
  const uint64_t a = fab.block(2), c = fab.block(6);  // both homed at port 2
  REQUIRE(fab.f.home_port(fab.region, a).port == 2);
  REQUIRE(fab.f.home_port(fab.region, c).port == 2);
  nvswitch::SwitchConfig cfg = config(kPayload);  // one entry per table
  cfg.holds = true;
  Bench b(fab.wiring(), cfg, &fab.f);
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
  nvswitch::SwitchConfig cfg = config(4 * kPayload);
  cfg.alu_ps_per_byte = 1000;  // 1 GB/s: 128 ns per block
  Bench b(fab.wiring(), cfg, &fab.f);
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

TEST_CASE("a switch's ports, their reduction tables and its MCR table are modules without processes; a table "
          "holding an entry tells the stall report", "[nvswitch][ports][reduction][hierarchy]") {
  Fabric fab;
  const uint64_t a = fab.block(2);  // homed at port 2
  REQUIRE(fab.f.home_port(fab.region, a).port == 2);
  Bench b(fab.wiring(), config(2 * kPayload), &fab.f);
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
