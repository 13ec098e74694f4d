// FpgaAggregator alone: three ports, each facing a stub that plays the
// switch port the ACL sends one rank's ring connection to (stub_port.h); no
// rack, no NICs. At the FPGA's ports, with times from the parameters below:
// the frames of one message from three ranks are aggregated once and the sum
// goes back to each rank under that rank's own header (ICRC recomputed) one
// pipeline latency after the last contribution's last byte; a retransmitted
// frame is aggregated once, before the result (it overwrites its rank's
// copy) and after (it gets the stored result back, on its own port only); a
// frame with a bad ICRC is dropped and counts for nothing; a frame that is
// not a gradient goes straight back.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hierarchy.h"
#include "netreduce/fpga_aggregator.h"
#include "roce_frames.h"

using namespace incsim;
using eth::Opcode;
using sc_core::SC_NS;
using sc_core::SC_US;
using sc_core::sc_time;

namespace {

constexpr int kRanks = 3;
constexpr uint32_t kMtu = 1024, kMsgLen = 4, kWindow = 2;
constexpr double kBw = 12.5;  // GB/s: 100 GbE, 80 ps a byte
const sc_time kLink(50, SC_NS);
const sc_time kPipeline(500, SC_NS);  // last byte in to first result byte out
sc_time ser(uint32_t bytes) { return test::wire_time(bytes, kBw); }
constexpr uint32_t kHeaders = eth::kEthWireOverhead + eth::kRoceOverhead;
constexpr uint32_t kFirst = kHeaders + eth::kRethBytes + eth::kInaBytes + kMtu, kMiddle = kHeaders + kMtu;
constexpr uint32_t ip(int host) { return 0x0a000001u + host; }
constexpr uint32_t psn0(int rank) { return 5000 + 100 * rank; }  // each connection's own initial PSN
// Rank r's gradient element j of packet i of message m.
int32_t gradient(int r, int64_t m, uint32_t i, uint32_t j) { return static_cast<int32_t>(100000 * m + 1000 * r + 10 * i + j); }
int32_t sum(int64_t m, uint32_t i, uint32_t j) {
  int32_t s = 0;
  for (int r = 0; r < kRanks; ++r) s += gradient(r, m, i, j);
  return s;
}

struct Bench {
  net::PacketPool pool{test::roce_format(kMtu)};
  std::unique_ptr<netreduce::FpgaAggregator> fpga;
  std::vector<std::unique_ptr<test::StubPort>> port;  // the switch side of FPGA port r, rank r's connection
  explicit Bench(uint32_t msg_len = kMsgLen) {
    netreduce::FpgaConfig c{kPipeline, 64 * 1024, 16, kMtu};
    fpga = std::make_unique<netreduce::FpgaAggregator>("fpga", kRanks, c, &pool);
    fpga->add_ring(0, kRanks, kWindow, msg_len, kMtu, elements::DType::Int32, elements::RedOp::Sum);
    for (int r = 0; r < kRanks; ++r) {
      port.push_back(std::make_unique<test::StubPort>(("switch_port" + std::to_string(r)).c_str(), pool));
      fpga->configure_port(r, kBw, kLink, c.buffer_bytes);
      port[r]->configure(kBw, kLink, c.buffer_bytes);
      port[r]->connect(fpga->in(r), fpga->out(r));
    }
  }
  // Rank r's connection to the next rank in the ring.
  static test::Conn conn(int r) { return {uint32_t(r), uint32_t((r + 1) % kRanks), ip(r), ip((r + 1) % kRanks), 3}; }
  // Packet i of rank r's message m (MsgLen packets from PSN0 + m * MsgLen):
  // the first carries the RETH and the INA header.
  net::Packet* gradient_frame(int r, int64_t m, uint32_t i, uint32_t msg_len = kMsgLen) {
    const Opcode op = msg_len == 1 ? Opcode::WriteOnly
                      : i == 0     ? Opcode::WriteFirst
                      : i + 1 == msg_len ? Opcode::WriteLast
                                         : Opcode::WriteMiddle;
    eth::InaHeader ih{eth::kInetTag, 0, static_cast<uint16_t>(r), static_cast<uint32_t>(m), msg_len};
    net::Packet* p = test::roce_frame(pool, conn(r), op, psn0(r) + static_cast<uint32_t>(m) * msg_len + i, kMtu,
                                      gradient(r, m, i, 0), i == 0 ? &ih : nullptr, i == 0 ? 0x40000 : 0);
    return p;
  }
};

void check_result(const test::Arrival& a, int r, int64_t m, uint32_t i, uint32_t msg_len = kMsgLen) {
  INFO("rank " << r << " message " << m << " packet " << i);
  const eth::RoceHeader& h = test::roce(a);
  CHECK(h.src_ip == ip(r));  // the rank's own connection
  CHECK(h.dst_ip == ip((r + 1) % kRanks));
  CHECK(h.dst_qp == 3);
  CHECK(h.psn == psn0(r) + static_cast<uint32_t>(m) * msg_len + i);
  CHECK(a.pkt.dst == static_cast<uint32_t>((r + 1) % kRanks));
  CHECK(a.pkt.payload_bytes == kMtu);
  CHECK(test::intact(a));  // the ICRC recomputed over the sum
  for (uint32_t j = 0; j < kMtu / 4; ++j)
    if (test::element(a, j) != sum(m, i, j)) FAIL("element " << j << " is " << test::element(a, j) << ", not " << sum(m, i, j));
}

}  // namespace

TEST_CASE("a message's frames from three ranks are aggregated once and the sum returns under each rank's header", "[netreduce][fpga][ports]") {
  Bench b;
  const sc_time late(2, SC_US);  // rank 2 is last: its frames complete each aggregator
  for (int r = 0; r < kRanks; ++r)
    for (uint32_t i = 0; i < kMsgLen; ++i) b.port[r]->send_at(r == 2 ? late : sc_core::SC_ZERO_TIME, b.gradient_frame(r, 0, i));
  sc_core::sc_start();
  // Rank 2's packet i has its last byte in at `tail`; every rank's result
  // for it leaves its port one pipeline latency later, or when the result
  // before it is out (the first, with its RETH and INA header, is longer).
  sc_time tail = late + kLink, wire_free;
  for (uint32_t i = 0; i < kMsgLen; ++i) {
    tail += ser(i == 0 ? kFirst : kMiddle);
    const sc_time leaves = std::max(tail + kPipeline, wire_free);
    wire_free = leaves + ser(i == 0 ? kFirst : kMiddle);
    for (int r = 0; r < kRanks; ++r) {
      const auto& got = b.port[r]->arrivals();
      REQUIRE(got.size() == kMsgLen);
      check_result(got[i], r, 0, i);
      CHECK(got[i].head == leaves + kLink);
      CHECK(got[i].pkt.wire_bytes == (i == 0 ? kFirst : kMiddle));  // the rank's frame, headers and all
    }
  }
  const auto& ring = b.fpga->ring(0);
  CHECK(ring.completions() == kMsgLen);
  CHECK(ring.contributions() == kRanks * kMsgLen);
  CHECK(ring.overwrites() == 0);
  CHECK(b.fpga->counters().frames == kRanks * kMsgLen);
  CHECK(b.fpga->clt().occupancy() == kRanks);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("a retransmitted frame is aggregated exactly once, before and after its message completes", "[netreduce][fpga][ports]") {
  Bench b(1);  // one packet per message: each is a WRITE Only with the INA header
  const sc_time t1(2, SC_US), t2(4, SC_US), t3(6, SC_US);
  b.port[0]->send_at(sc_core::SC_ZERO_TIME, b.gradient_frame(0, 0, 0, 1));
  b.port[0]->send_at(t1, b.gradient_frame(0, 0, 0, 1));  // go-back-N resends it
  b.port[1]->send_at(t2, b.gradient_frame(1, 0, 0, 1));
  b.port[2]->send_at(t2, b.gradient_frame(2, 0, 0, 1));
  b.port[1]->send_at(t3, b.gradient_frame(1, 0, 0, 1));  // its result was lost downstream: resent again
  sc_core::sc_start();
  const sc_time done = t2 + kLink + ser(kFirst) + kPipeline;
  for (int r = 0; r < kRanks; ++r) {
    const auto& got = b.port[r]->arrivals();
    REQUIRE(got.size() == (r == 1 ? 2u : 1u));
    check_result(got[0], r, 0, 0, 1);
    CHECK(got[0].head == done + kLink);
  }
  // The resent frame gets the stored result back, on its own port only.
  const test::Arrival& again = b.port[1]->arrivals()[1];
  check_result(again, 1, 0, 0, 1);
  CHECK(again.head == t3 + kLink + ser(kFirst) + kPipeline + kLink);
  const auto& ring = b.fpga->ring(0);
  CHECK(ring.completions() == 1);
  CHECK(ring.contributions() == kRanks);
  CHECK(ring.overwrites() == 1);
  CHECK(ring.resent() == 1);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("a frame with a bad ICRC is dropped and counts for nothing until a good copy comes", "[netreduce][fpga][ports]") {
  Bench b(1);
  const sc_time t1(3, SC_US);
  b.port[0]->send_at(sc_core::SC_ZERO_TIME, b.gradient_frame(0, 0, 0, 1));
  net::Packet* bad = b.gradient_frame(1, 0, 0, 1);
  eth::payload(bad)[100] ^= 0x10;  // flipped on the link, after the NIC sealed it
  b.port[1]->send_at(sc_core::SC_ZERO_TIME, bad);
  b.port[2]->send_at(sc_core::SC_ZERO_TIME, b.gradient_frame(2, 0, 0, 1));
  b.port[1]->send_at(t1, b.gradient_frame(1, 0, 0, 1));
  sc_core::sc_start();
  CHECK(b.fpga->counters().icrc_drops == 1);
  for (int r = 0; r < kRanks; ++r) {
    const auto& got = b.port[r]->arrivals();
    REQUIRE(got.size() == 1);
    check_result(got[0], r, 0, 0, 1);
    CHECK(got[0].head == t1 + kLink + ser(kFirst) + kPipeline + kLink);
  }
  CHECK(b.fpga->ring(0).completions() == 1);
  CHECK(b.fpga->ring(0).contributions() == kRanks);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("a frame that is not a gradient goes straight back out of its port", "[netreduce][fpga][ports]") {
  Bench b;
  b.port[1]->send_at(sc_core::SC_ZERO_TIME, test::roce_frame(b.pool, Bench::conn(1), Opcode::Ack, 42));
  sc_core::sc_start();
  const auto& got = b.port[1]->arrivals();
  REQUIRE(got.size() == 1);
  CHECK(test::roce(got[0]).opcode == Opcode::Ack);
  CHECK(test::roce(got[0]).psn == 42);
  CHECK(test::intact(got[0]));
  CHECK(got[0].head == kLink + ser(kHeaders + eth::kAethBytes) + kPipeline + kLink);
  CHECK(b.fpga->counters().bypassed == 1);
  CHECK(b.fpga->ring(0).contributions() == 0);
}

TEST_CASE("the CLT and CTT are modules without processes under the FPGA, and the CLT's connections show in the stall "
          "report", "[netreduce][fpga][hierarchy]") {
  Bench b;
  for (const char* name : {"fpga.clt", "fpga.ctt", "fpga.dest_clt"}) {
    INFO(name);
    sc_core::sc_module* m = test::find_block(name);
    REQUIRE(m);
    CHECK(m->get_parent_object() == b.fpga.get());
    CHECK(test::processes_below(m) == 0);
  }
  CHECK(test::find_block<netreduce::ConnectionLookupTable>("fpga.clt") == &b.fpga->clt());
  CHECK(test::find_block<netreduce::ConnectionTranslationTable>("fpga.ctt") == &b.fpga->ctt());
  // Every rank's first packet is in; rank 2 sends nothing more: the aggregators wait.
  for (int r = 0; r < kRanks; ++r) b.port[r]->send_at(sc_core::SC_ZERO_TIME, b.gradient_frame(r, 0, 0));
  for (int r = 0; r < 2; ++r) b.port[r]->send_at(sc_core::SC_ZERO_TIME, b.gradient_frame(r, 0, 1));
  sc_core::sc_start();
  std::ostringstream os;
  CHECK(b.fpga->report_held(os) == 2);
  CHECK_THAT(os.str(), Catch::Contains("  fpga ring 0: 2 gradient packets waiting in aggregators\n") &&
                           Catch::Contains("  fpga.clt: 3 of 16 connections\n"));
}
