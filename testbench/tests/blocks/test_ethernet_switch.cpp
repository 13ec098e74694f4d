// EthernetSwitch alone: stub hosts on ports 0-2 and a stub FPGA on port 3
// (stub_port.h), no rack. What the switch's header claims, checked at its
// ports with times from the parameters below: forwarding by destination;
// cut-through (a frame's first byte leaves the switch latency after it came
// in, and its last no earlier than it came in); ACL rules that send a
// connection's data frames to the FPGA port and nothing else; ACK/NAKs served
// before queued data; lossless between hops (a receiver that frees nothing
// stops the switch, which then stops the sender, and nothing is dropped); and
// the loss and corruption of the link into a port.
#include <catch2/catch.hpp>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ethernet/ethernet_switch.h"
#include "roce_frames.h"

using namespace incsim;
using eth::Opcode;
using sc_core::SC_NS;
using sc_core::sc_time;

namespace {

constexpr int kPorts = 4, kFpgaPort = 3;
constexpr uint32_t kMtu = 1024;
constexpr double kBw = 12.5;        // GB/s: 100 GbE, 80 ps a byte
const sc_time kLink(50, SC_NS);     // wire to each stub
const sc_time kLatency(400, SC_NS); // first bit in to first bit out
// A middle packet of 1 KB: Ethernet and RoCE headers around the payload.
constexpr uint32_t kFrame = eth::kEthWireOverhead + eth::kRoceOverhead + kMtu;  // 1106 B
sc_time ser(uint32_t bytes, double bw = kBw) { return test::wire_time(bytes, bw); }
constexpr uint32_t ip(int host) { return 0x0a000001u + host; }
test::Conn conn(int from, int to, uint32_t qp = 1) { return {uint32_t(from), uint32_t(to), ip(from), ip(to), qp}; }

struct Bench {
  net::PacketPool pool{test::roce_format(kMtu)};
  std::unique_ptr<eth::EthernetSwitch> sw;
  std::vector<std::unique_ptr<test::StubPort>> stub;  // hosts 0-2, the FPGA at 3
  uint32_t buffer;  // every port's ingress, the stubs' too
  explicit Bench(uint32_t buffer_bytes = 16 * kFrame) : buffer(buffer_bytes) {
    sw = std::make_unique<eth::EthernetSwitch>("switch", kPorts, eth::SwitchConfig{kLatency, buffer_bytes},
                                               &pool);
    for (int p = 0; p < kPorts; ++p) {
      stub.push_back(std::make_unique<test::StubPort>(p == kFpgaPort ? "fpga" : ("host" + std::to_string(p)).c_str(), pool));
      sw->configure_port(p, kBw, kLink, buffer_bytes);
      stub[p]->configure(kBw, kLink, buffer_bytes);
      stub[p]->connect(sw->in(p), sw->out(p));
      sw->set_route(p, p);  // endpoint p is at port p
    }
  }
  net::Packet* data(int from, int to, uint32_t psn, uint32_t qp = 1) {
    return test::roce_frame(pool, conn(from, to, qp), Opcode::WriteMiddle, psn, kMtu, static_cast<int32_t>(psn));
  }
  uint64_t held() const {
    std::ostringstream os;
    return sw->report_held(os);
  }
};

}  // namespace

TEST_CASE("frames leave by their destination's port, first byte the switch latency after it came in", "[ethernet][ports][timing]") {
  CHECK(ser(kFrame) == sc_time(88.48, SC_NS));
  Bench b;
  const sc_time t0(100, SC_NS);
  b.stub[0]->send_at(t0, b.data(0, 2, 0));
  b.stub[0]->send_at(t0, b.data(0, 1, 1));
  b.stub[1]->send_at(t0, test::roce_frame(b.pool, conn(1, 0), Opcode::WriteOnly, 9, 64, 0));
  sc_core::sc_start();
  REQUIRE(b.stub[2]->arrivals().size() == 1);
  REQUIRE(b.stub[1]->arrivals().size() == 1);
  REQUIRE(b.stub[0]->arrivals().size() == 1);
  CHECK(b.stub[3]->arrivals().empty());
  const test::Arrival& a = b.stub[2]->arrivals()[0];
  CHECK(test::roce(a).psn == 0);
  CHECK(test::element(a, 255) == 255);
  CHECK(test::intact(a));
  CHECK(a.head == t0 + kLink + kLatency + kLink);
  CHECK(a.tail == a.head + ser(kFrame));
  // The second frame left the host one frame later; the size of a frame
  // does not change its first byte's latency.
  CHECK(b.stub[1]->arrivals()[0].head == t0 + ser(kFrame) + kLink + kLatency + kLink);
  const test::Arrival& small = b.stub[0]->arrivals()[0];
  CHECK(small.head == t0 + kLink + kLatency + kLink);
  CHECK(small.tail - small.head == ser(small.pkt.wire_bytes));
  CHECK(small.pkt.wire_bytes == eth::kEthWireOverhead + eth::kRoceOverhead + eth::kRethBytes + 64);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("cut-through: a frame's last byte leaves no earlier than it came in", "[ethernet][ports][timing]") {
  Bench b;
  b.sw->configure_port(1, 2 * kBw, kLink, b.buffer);  // faster than the frame comes in
  b.sw->configure_port(2, kBw / 2, kLink, b.buffer);  // slower
  b.stub[0]->send_at(sc_core::SC_ZERO_TIME, b.data(0, 1, 0));
  b.stub[0]->send_at(sc_core::SC_ZERO_TIME, b.data(0, 2, 1));
  sc_core::sc_start();
  REQUIRE(b.stub[1]->arrivals().size() == 1);
  REQUIRE(b.stub[2]->arrivals().size() == 1);
  const test::Arrival& fast = b.stub[1]->arrivals()[0];
  CHECK(fast.head == kLink + kLatency + kLink);
  CHECK(fast.tail == kLink + ser(kFrame) + kLatency + kLink);  // paced by the incoming tail
  const test::Arrival& slow = b.stub[2]->arrivals()[0];
  CHECK(slow.head == ser(kFrame) + kLink + kLatency + kLink);
  CHECK(slow.tail == slow.head + ser(kFrame, kBw / 2));  // paced by its own wire
}

TEST_CASE("an ACL rule sends its connection's data frames, and only those, to the FPGA port", "[ethernet][ports][acl]") {
  Bench b;
  b.sw->add_acl({ip(0), ip(1), 7, kFpgaPort});
  const sc_time t0(0, SC_NS), t1(1, sc_core::SC_US);
  b.stub[0]->send_at(t0, b.data(0, 1, 10, 7));                                    // the rule's connection
  b.stub[0]->send_at(t0, test::roce_frame(b.pool, conn(0, 1, 7), Opcode::Ack, 3));  // not a data frame
  b.stub[0]->send_at(t0, b.data(0, 1, 11, 8));                                    // another queue pair
  // The FPGA's result under the connection's own header comes back by its
  // port, and goes to the destination.
  b.stub[kFpgaPort]->send_at(t1, test::roce_frame(b.pool, conn(0, 1, 7), Opcode::WriteMiddle, 10, kMtu, 1000));
  sc_core::sc_start();
  const auto& fpga = b.stub[kFpgaPort]->arrivals();
  REQUIRE(fpga.size() == 1);
  CHECK(test::roce(fpga[0]).dst_qp == 7);
  CHECK(test::roce(fpga[0]).psn == 10);
  CHECK(fpga[0].head == t0 + kLink + kLatency + kLink);
  const auto& host1 = b.stub[1]->arrivals();
  REQUIRE(host1.size() == 3);
  CHECK(test::roce(host1[0]).opcode == Opcode::Ack);
  CHECK(test::roce(host1[1]).dst_qp == 8);
  CHECK(test::roce(host1[2]).dst_qp == 7);
  CHECK(test::element(host1[2], 0) == 1000);
  CHECK(host1[2].head == t1 + kLink + kLatency + kLink);
  CHECK(b.sw->redirected() == 1);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("an ACK or NAK is served before data frames queued at the output ahead of it", "[ethernet][ports][priority]") {
  Bench b;
  // Hosts 0 and 1 each send two frames to host 2 at once: the output is
  // oversubscribed twice and serves them back to back from its first. Host
  // 1's ACK follows its frames; it is eligible the moment the second frame
  // ends, when host 0's second frame has waited for a frame time.
  for (int h = 0; h < 2; ++h)
    for (uint32_t k = 0; k < 2; ++k) b.stub[h]->send_at(sc_core::SC_ZERO_TIME, b.data(h, 2, 10 * h + k));
  b.stub[1]->send_at(sc_core::SC_ZERO_TIME, test::roce_frame(b.pool, conn(1, 2), Opcode::Ack, 77));
  sc_core::sc_start();
  const auto& got = b.stub[2]->arrivals();
  REQUIRE(got.size() == 5);
  CHECK(test::roce(got[2]).opcode == Opcode::Ack);
  CHECK(test::roce(got[2]).psn == 77);
  CHECK(got[2].head == kLink + kLatency + 2 * ser(kFrame) + kLink);
  CHECK(got[3].head == got[2].tail);  // the data frames follow at once
  CHECK(got[4].head == got[3].tail);
}

TEST_CASE("a receiver that frees nothing stops the switch, which stops the sender, and nothing is dropped", "[ethernet][ports][pfc]") {
  // Every ingress buffer holds three frames; host 2 frees nothing until T.
  Bench b(3 * kFrame);
  b.stub[2]->withhold_credits(true);
  for (uint32_t k = 0; k < 10; ++k) b.stub[0]->send_at(sc_core::SC_ZERO_TIME, b.data(0, 2, k));
  const sc_time T(20, sc_core::SC_US);
  sc_core::sc_start(T);
  CHECK(b.stub[2]->arrivals().size() == 3);  // host 2's buffer
  CHECK(b.held() == 3);                      // holding the switch's ingress buffer for port 0
  CHECK(b.stub[0]->sent().size() == 6);      // so host 0 could send no more
  b.stub[2]->withhold_credits(false);
  b.stub[2]->return_credits();
  sc_core::sc_start();
  const auto& got = b.stub[2]->arrivals();
  REQUIRE(got.size() == 10);
  for (uint32_t k = 0; k < 10; ++k) CHECK(test::roce(got[k]).psn == k);
  // Host 2's credits reach the switch one link after T; the three queued
  // frames leave back to back. Each frees its ingress space as it leaves,
  // which reaches host 0 one link later: the seventh frame leaves host 0 then.
  CHECK(got[3].head == T + kLink + kLink);
  CHECK(got[4].head == T + kLink + ser(kFrame) + kLink);
  CHECK(got[5].head == T + kLink + 2 * ser(kFrame) + kLink);
  CHECK(b.stub[0]->sent()[6] == T + kLink + kLink);
  CHECK(got[6].head == T + kLink + kLink + kLink + kLatency + kLink);
  CHECK(b.sw->lost() == 0);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("a frame lost on the link into a port frees its buffer space and a corrupted one is forwarded with a bad ICRC", "[ethernet][ports][faults]") {
  Bench b(kFrame);  // host 0 may have one frame in the switch: it needs each credit back
  eth::LinkFaults f;
  f.set_hook([](const net::Packet* p) {
    const uint32_t psn = eth::header(p).psn;
    return psn == 1 ? eth::FrameFault::Lose : psn == 2 ? eth::FrameFault::CorruptPayload : eth::FrameFault::Keep;
  });
  *b.sw->link_faults(0) = f;
  for (uint32_t k = 0; k < 4; ++k) b.stub[0]->send_at(sc_core::SC_ZERO_TIME, b.data(0, 2, k));
  sc_core::sc_start();
  CHECK(b.stub[0]->sent().size() == 4);
  const auto& got = b.stub[2]->arrivals();
  REQUIRE(got.size() == 3);
  CHECK(test::roce(got[0]).psn == 0);
  CHECK(test::roce(got[1]).psn == 2);
  CHECK(test::roce(got[2]).psn == 3);
  CHECK(test::intact(got[0]));
  CHECK_FALSE(test::intact(got[1]));
  CHECK(test::intact(got[2]));
  CHECK(b.sw->lost() == 1);
  CHECK(b.sw->link_faults(0)->corrupted() == 1);
  CHECK(b.pool.in_use() == 0);
}
