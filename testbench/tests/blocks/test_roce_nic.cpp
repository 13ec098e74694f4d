// RoceNic alone: its Ethernet port faces a stub that plays the peer NIC (and
// the switch between), its host side a test client; no rack. Go-back-N as
// the header claims it, at the port, with times from the parameters below:
// in-order packets are handed up and ACKed (coalesced, and at each message's
// last); a gap gets one NAK for the missing PSN; a frame with a bad ICRC is
// dropped unseen; a NAK makes the requester resend from the NAKed PSN, and an
// unanswered packet is resent from the oldest unacknowledged PSN one
// retransmission timeout after it left.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "roce/roce_nic.h"
#include "roce_frames.h"

using namespace incsim;
using eth::Opcode;
using sc_core::SC_NS;
using sc_core::SC_US;
using sc_core::sc_time;

namespace {

constexpr uint32_t kMtu = 1024;
constexpr double kBw = 12.5;  // GB/s: 100 GbE, 80 ps a byte
const sc_time kLink(50, SC_NS);
constexpr uint32_t kPsn0 = 1000;  // the connection's initial PSN, both ways
constexpr uint32_t kPeerQpn = 5;  // the peer's queue pair, which the NIC's ACKs and data name
const roce::NicConfig kCfg{64 * 1024, kMtu, 4, sc_time(20, SC_US), sc_time(1, SC_US), sc_time(2, SC_US)};
sc_time ser(uint32_t bytes) { return test::wire_time(bytes, kBw); }
constexpr uint32_t kHeaders = eth::kEthWireOverhead + eth::kRoceOverhead;
constexpr uint32_t kFirst = kHeaders + eth::kRethBytes + kMtu, kMiddle = kHeaders + kMtu, kAck = kHeaders + eth::kAethBytes;

// The host software: payload element i of packet `index` of work request
// `id` is id * 1000000 + index * 1000 + i; records what the NIC hands up.
struct Host : roce::NicClient {
  struct Delivered {
    sc_time at;
    uint64_t va;
    uint32_t bytes;
    int32_t first;
  };
  std::vector<Delivered> got;
  void fill(int, const roce::WorkRequest& wr, uint32_t index, uint8_t* payload, uint32_t bytes) override {
    for (uint32_t i = 0; i < bytes / 4; ++i) {
      const int32_t v = static_cast<int32_t>(wr.id * 1000000 + index * 1000 + i);
      std::memcpy(payload + 4 * i, &v, 4);
    }
  }
  void deliver(int qp, uint64_t va, const uint8_t* payload, uint32_t bytes, net::Lines) override {
    CHECK(qp == 0);
    int32_t first;
    std::memcpy(&first, payload, 4);
    got.push_back({sc_core::sc_time_stamp(), va, bytes, first});
  }
};

// The NIC (endpoint 0) with one queue pair to the peer (endpoint 1).
struct Bench {
  net::PacketPool pool{test::roce_format(kMtu)};
  Host host;
  roce::RoceNic nic{"nic", 0, 0x0a000001, kCfg, &pool};
  test::StubPort peer{"peer", pool};
  const test::Conn to_nic{1, 0, 0x0a000002, 0x0a000001, roce::RoceNic::qpn_of(0)};
  Bench() {
    nic.set_client(&host);
    REQUIRE(nic.create_qp(1, to_nic.src_ip, kPeerQpn, kPsn0) == 0);
    nic.configure_port(0, kBw, kLink, kCfg.rx_buffer_bytes);
    peer.configure(kBw, kLink, kCfg.rx_buffer_bytes);
    peer.connect(nic.in(0), nic.out(0));
  }
  // Packet k of the peer's write of `n` packets starting at kPsn0, payload elements 100 * k + i.
  net::Packet* data(uint32_t k, uint32_t n = 6) {
    const Opcode op = k == 0 ? Opcode::WriteFirst : k + 1 == n ? Opcode::WriteLast : Opcode::WriteMiddle;
    return test::roce_frame(pool, to_nic, op, kPsn0 + k, kMtu, static_cast<int32_t>(100 * k), nullptr,
                            k == 0 ? 0x10000 : 0);
  }
  net::Packet* control(Opcode op, uint32_t psn) { return test::roce_frame(pool, to_nic, op, psn); }
  std::vector<const test::Arrival*> frames(Opcode op) const {
    std::vector<const test::Arrival*> v;
    for (const auto& a : peer.arrivals())
      if (test::roce(a).opcode == op) v.push_back(&a);
    return v;
  }
};

}  // namespace

TEST_CASE("in-order packets are handed up in order and ACKed every ack_every packets and at the last", "[roce][ports][responder]") {
  Bench b;
  for (uint32_t k = 0; k < 6; ++k) b.peer.send_at(sc_core::SC_ZERO_TIME, b.data(k));
  sc_core::sc_start();
  // Tails at the NIC: the write's packets back to back from time 0.
  std::vector<sc_time> tail;
  for (uint32_t k = 0; k < 6; ++k) tail.push_back((k ? tail.back() : kLink) + ser(k ? kMiddle : kFirst));
  REQUIRE(b.host.got.size() == 6);
  for (uint32_t k = 0; k < 6; ++k) {
    CHECK(b.host.got[k].va == 0x10000u + k * kMtu);  // the RETH address plus the offset
    CHECK(b.host.got[k].first == static_cast<int32_t>(100 * k));
    CHECK(b.host.got[k].at == tail[k] + kCfg.rx_latency);
  }
  const auto acks = b.frames(Opcode::Ack);
  REQUIRE(acks.size() == 2);
  CHECK(test::roce(*acks[0]).psn == kPsn0 + 3);  // the fourth packet
  CHECK(acks[0]->head == tail[3] + kLink);
  CHECK(test::roce(*acks[1]).psn == kPsn0 + 5);  // the message's last
  CHECK(acks[1]->head == tail[5] + kLink);
  for (const auto* a : acks) {
    CHECK(test::roce(*a).dst_qp == kPeerQpn);
    CHECK(a->pkt.dst == 1);
    CHECK(a->pkt.wire_bytes == kAck);
    CHECK(test::intact(*a));
  }
  CHECK(b.peer.arrivals().size() == 2);
  CHECK(b.nic.expected_psn(0) == kPsn0 + 6);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("a gap in the PSNs gets one NAK for the missing packet, and nothing past it is handed up", "[roce][ports][responder]") {
  Bench b;
  for (uint32_t k : {0u, 2u, 3u}) b.peer.send_at(sc_core::SC_ZERO_TIME, b.data(k, 4));
  const sc_time t1(10, SC_US);
  for (uint32_t k : {1u, 2u, 3u}) b.peer.send_at(t1, b.data(k, 4));  // go-back-N from the NAKed PSN
  sc_core::sc_start();
  const sc_time tail2 = kLink + ser(kFirst) + ser(kMiddle);  // packet 2's, the first out of order
  const auto naks = b.frames(Opcode::Nak);
  REQUIRE(naks.size() == 1);
  CHECK(test::roce(*naks[0]).psn == kPsn0 + 1);
  CHECK(naks[0]->head == tail2 + kLink);
  REQUIRE(b.host.got.size() == 4);
  for (uint32_t k = 0; k < 4; ++k) CHECK(b.host.got[k].first == static_cast<int32_t>(100 * k));
  CHECK(b.host.got[0].at < t1);
  CHECK(b.host.got[1].at == t1 + kLink + ser(kMiddle) + kCfg.rx_latency);
  const auto acks = b.frames(Opcode::Ack);
  REQUIRE(acks.size() == 1);
  CHECK(test::roce(*acks[0]).psn == kPsn0 + 3);
  CHECK(b.nic.naks_sent() == 1);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("a frame with a bad ICRC is dropped: the next one finds a gap", "[roce][ports][responder]") {
  Bench b;
  net::Packet* bad = b.data(0, 2);
  eth::payload(bad)[17] ^= 0x04;  // a bit flipped after the sender sealed it
  b.peer.send_at(sc_core::SC_ZERO_TIME, bad);
  b.peer.send_at(sc_core::SC_ZERO_TIME, b.data(1, 2));
  sc_core::sc_start();
  CHECK(b.host.got.empty());
  CHECK(b.nic.icrc_drops() == 1);
  const auto naks = b.frames(Opcode::Nak);
  REQUIRE(naks.size() == 1);
  CHECK(test::roce(*naks[0]).psn == kPsn0);
  CHECK(naks[0]->head == kLink + ser(kFirst) + ser(kMiddle) + kLink);
  CHECK(b.peer.arrivals().size() == 1);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("a NAK makes the requester resend from the NAKed PSN on, go-back-N", "[roce][ports][requester]") {
  Bench b;
  roce::WorkRequest wr;
  wr.id = 1;
  wr.packets = 4;
  wr.last_bytes = 512;
  wr.remote_va = 0x2000;
  b.nic.post(0, wr);
  const sc_time t1(5, SC_US), t2(10, SC_US);
  b.peer.send_at(t1, b.control(Opcode::Nak, kPsn0 + 1));
  b.peer.send_at(t2, b.control(Opcode::Ack, kPsn0 + 3));
  sc_core::sc_start(sc_time(100, SC_US));
  const auto& got = b.peer.arrivals();
  REQUIRE(got.size() == 7);
  // The write: RETH on the first packet, 1 KB packets and a 512 B last, back
  // to back from the work request's tx latency.
  const Opcode ops[] = {Opcode::WriteFirst, Opcode::WriteMiddle, Opcode::WriteMiddle, Opcode::WriteLast};
  const uint32_t bytes[] = {kFirst, kMiddle, kMiddle, kHeaders + 512};
  sc_time start = kCfg.tx_latency;
  for (uint32_t k = 0; k < 4; ++k) {
    const eth::RoceHeader& h = test::roce(got[k]);
    CHECK(h.psn == kPsn0 + k);
    CHECK(h.opcode == ops[k]);
    CHECK(h.dst_qp == kPeerQpn);
    CHECK(got[k].pkt.wire_bytes == bytes[k]);
    CHECK(got[k].head == start + kLink);
    CHECK(test::element(got[k], 3) == static_cast<int32_t>(1000000 + 1000 * k + 3));
    CHECK(test::intact(got[k]));
    start += ser(bytes[k]);
  }
  CHECK(test::roce(got[0]).va == 0x2000);
  // Resent from PSN + 1 once the NAK's last byte is in.
  const sc_time resend = t1 + kLink + ser(kAck);
  for (uint32_t k = 1; k < 4; ++k) {
    CHECK(test::roce(got[3 + k]).psn == kPsn0 + k);
    CHECK(test::element(got[3 + k], 0) == static_cast<int32_t>(1000000 + 1000 * k));
  }
  CHECK(got[4].head == resend + kLink);
  CHECK(b.nic.retransmitted() == 3);
  CHECK(b.nic.timeouts() == 0);
  CHECK(b.nic.idle());
}

TEST_CASE("an unacknowledged packet is resent one retransmission timeout after it left", "[roce][ports][requester]") {
  Bench b;
  roce::WorkRequest wr;
  wr.id = 2;
  wr.packets = 2;
  wr.last_bytes = kMtu;
  b.nic.post(0, wr);
  const sc_time timeout = kCfg.tx_latency + kCfg.rto;  // the first packet left at tx_latency
  const sc_time acked = timeout + sc_time(5, SC_US);
  b.peer.send_at(acked, b.control(Opcode::Ack, kPsn0 + 1));
  sc_core::sc_start(sc_time(200, SC_US));
  const auto& got = b.peer.arrivals();
  REQUIRE(got.size() == 4);
  CHECK(test::roce(got[2]).psn == kPsn0);  // from the oldest unacknowledged
  CHECK(test::roce(got[3]).psn == kPsn0 + 1);
  CHECK(got[1].head < timeout);
  CHECK(got[2].head == timeout + kLink);
  CHECK(b.nic.timeouts() == 1);
  CHECK(b.nic.retransmitted() == 2);
  CHECK(b.nic.idle());
}
