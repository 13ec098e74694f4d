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

