// CreditSwitch alone: four stub GPUs on its ports (switch_bench.h), no
// platform. What a hardware engineer checks at the switch's boundary, each
// time computed from the bench's parameters: routing by the table, first
// flit out one link + switch latency + link after it left the GPU, an
// output's serialization between packets that compete for it, and credit
// back-pressure (a GPU that frees nothing stops its output; the output
// resumes one credit loop after it does).
#include <catch2/catch.hpp>

#include "switch_bench.h"

using namespace incsim;
using namespace incsim::test;
using sc_core::SC_NS;
using sc_core::sc_time;

namespace {

// A switch whose port p faces endpoint 3 - p: routing follows the table, not
// the port numbers.
credit_switch::SwitchWiring reversed() {
  credit_switch::SwitchWiring w;
  w.route = {3, 2, 1, 0};
  w.route_to_switch_first = {0, 0};
  w.port_endpoint = {3, 2, 1, 0};
  return w;
}

struct Bench : SwitchBench<credit_switch::CreditSwitch> {
  explicit Bench(uint32_t gpu_buffer = 8 * kWire)
      : SwitchBench([](net::PacketPool& pool) {
          return std::make_unique<credit_switch::CreditSwitch>("sw", kPorts, reversed(), switch_config(), pool);
        }, gpu_buffer) {}
};

}  // namespace

TEST_CASE("every packet leaves by the port its routing table names, data intact", "[switch][routing]") {
  Bench b;
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

TEST_CASE("a packet's first flit is out one link, the switch latency and one link after it left", "[switch][timing]") {
  CHECK(kSer == sc_time(5.76, SC_NS));
  Bench b;
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

TEST_CASE("a GPU that frees no buffer stops the switch's output, which resumes one credit loop after it frees some", "[switch][credits]") {
  // Port 1's GPU has room for two packets and frees none until T.
  Bench b(2 * kWire);
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

// Two switches in a line: endpoint 0 (stub A) on s1's port 0; s1's port 1
// to s2's port 0; endpoints 1 (stub X) and 2 (stub Y) on s2's ports 1 and 2.
// X frees nothing until T: a packet for X that finds s2's queue toward X
// full waits at the head of its VC at s2's input, and behind it whatever
// came on that VC. Whether a packet for Y can pass depends on how s1 chose
// the VCs of s2's input.
struct Line {
  net::PacketPool pool{net::PacketFormat{}};
  std::unique_ptr<credit_switch::CreditSwitch> s1, s2;
  std::unique_ptr<StubPort> a, x, y;
  explicit Line(credit_switch::VcAlloc alloc) {
    credit_switch::SwitchConfig c = switch_config();
    c.vc_alloc = alloc;
    credit_switch::SwitchWiring w1;
    w1.route = {0, 1, 1};
    w1.route_to_switch_first = {0, 0};
    w1.port_endpoint = {0, -1};
    credit_switch::SwitchWiring w2;
    w2.route = {0, 1, 2};
    w2.route_to_switch_first = {0, 0};
    w2.port_endpoint = {-1, 1, 2};
    s1 = std::make_unique<credit_switch::CreditSwitch>("s1", 2, w1, c, pool);
    s2 = std::make_unique<credit_switch::CreditSwitch>("s2", 3, w2, c, pool);
    a = std::make_unique<StubPort>("a", pool);
    x = std::make_unique<StubPort>("x", pool);
    y = std::make_unique<StubPort>("y", pool);
    a->configure(kBw, kLink, s1->buffer_bytes(0));
    a->connect(s1->in(0), s1->out(0));
    s1->configure_port(0, kBw, kLink, 8 * kWire);
    s1->out(1).socket.bind(s2->in(0).socket);
    s2->out(0).socket.bind(s1->in(1).socket);
    s1->configure_port(1, kBw, kLink, s2->buffer_bytes(0));
    s2->configure_port(0, kBw, kLink, s1->buffer_bytes(1));
    x->configure(kBw, kLink, s2->buffer_bytes(1));
    x->connect(s2->in(1), s2->out(1));
    s2->configure_port(1, kBw, kLink, 2 * kWire);  // X takes two packets, then frees none until T
    y->configure(kBw, kLink, s2->buffer_bytes(2));
    y->connect(s2->in(2), s2->out(2));
    s2->configure_port(2, kBw, kLink, 8 * kWire);
  }
  std::string held(uint64_t& n) const {
    std::ostringstream os;
    n = s1->report_held(os) + s2->report_held(os);
    return os.str();
  }
};

// A sends 11 packets for X, then one for Y. X's stub and s2's queue toward X
// (8 packets, its VC's limit) take 10; the 11th waits at s2's input.
struct HeadOfLine {
  size_t y_before_T = 0;
  std::string report;  // what the switches hold at T
  uint64_t held_at_T = 0;
};
HeadOfLine head_of_line(credit_switch::VcAlloc alloc) {
  Line l(alloc);
  l.x->withhold_credits(true);
  for (int i = 0; i < 11; ++i) l.a->send_at(sc_core::SC_ZERO_TIME, packet(l.pool, net::Op::Write, 0, 1, 128 * i));
  l.a->send_at(sc_core::SC_ZERO_TIME, packet(l.pool, net::Op::Write, 0, 2, 0));
  const sc_time T(5, sc_core::SC_US);
  sc_core::sc_start(T);
  HeadOfLine r;
  r.y_before_T = l.y->arrivals().size();
  r.report = l.held(r.held_at_T);
  CHECK(l.x->arrivals().size() == 2);
  l.x->withhold_credits(false);
  l.x->return_credits();
  sc_core::sc_start();
  CHECK(l.x->arrivals().size() == 11);
  CHECK(l.y->arrivals().size() == 1);
  uint64_t after = 0;
  l.held(after);
  CHECK(after == 0);
  CHECK(l.pool.in_use() == 0);
  // Every VC's credits are back at s1 (once their last one has crossed the
  // wire), and s1 used only the VCs its mode has.
  sc_core::sc_start(sc_time(1, sc_core::SC_US));
  l.s1->out(1).absorb_credits(sc_core::sc_time_stamp());
  int vcs_used = 0;
  for (int vc = 0; vc < net::kNumVcs; ++vc) {
    INFO("vc" << vc);
    CHECK(l.s1->out(1).credits(vc) == static_cast<int>(l.s2->buffer_bytes(0)));
    vcs_used += l.s1->out(1).packets_sent(vc) > 0;
    if (alloc == credit_switch::VcAlloc::Class || net::class_first_vc(vc) != net::kRequestVc)
      CHECK(l.s1->out(1).packets_sent(vc) == (vc == net::kRequestVc ? 12u : 0u));
  }
  CHECK(vcs_used == (alloc == credit_switch::VcAlloc::Class ? 1 : 4));
  return r;
}

}  // namespace

TEST_CASE("one VC per class: a packet for a blocked output holds up the packet behind it for an idle one",
          "[switch][vc]") {
  const HeadOfLine r = head_of_line(credit_switch::VcAlloc::Class);
  CHECK(r.y_before_T == 0);
  INFO(r.report);
  CHECK(r.held_at_T == 10);  // 8 in s2's queue toward X, 2 at s2's input: X's 11th and Y's behind it
  CHECK_THAT(r.report, Catch::Contains("s2.port0 input vc0: 2 packets"));
}

TEST_CASE("a VC per packet: a packet for a blocked output does not hold up one for an idle output", "[switch][vc]") {
  // s1 gives each packet the VC of s2's input with the most room, so the
  // 12 spread over the request class's four (0, 4, 1, 5 in turn) and Y's
  // does not queue behind X's 11th.
  const HeadOfLine r = head_of_line(credit_switch::VcAlloc::Packet);
  CHECK(r.y_before_T == 1);
  INFO(r.report);
  CHECK(r.held_at_T == 9);
  CHECK_THAT(r.report, Catch::Contains("s2.port0 input vc1: 1 packets"));
}
