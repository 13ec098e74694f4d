// RoceBridge alone: two adapters joined by one Ethernet link, each with a
// stub playing its GPU on PCIe; no switch, no cluster. GPU 2's writes to
// GPU 9 leave as RDMA WRITEs on the queue pair between them, each
// acknowledged to the GPU once gathered; GPU 9 receives them in order, with
// their data, as the GPU fabric's writes. A frame lost on the link is sent
// again by go-back-N, and the writes still land once each, in order.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

#include "ethernet/roce_frame.h"
#include "adapter/roce_bridge.h"
#include "stub_port.h"

using namespace incsim;
using sc_core::SC_NS;
using sc_core::SC_US;
using sc_core::sc_time;

namespace {

constexpr double kPcieGBps = 63, kNetGBps = 50;
const sc_time kWire(10, SC_NS);
constexpr uint32_t kMtu = 4096, kWrite = 256, kEndpoints = 16;

adapter::HcaConfig config(uint32_t gpu) {
  return {sc_time(300, SC_NS), kEndpoints, kMtu, 512 * 1024, 16 * 1024, 0, gpu};
}
roce::NicConfig nic_config() {
  return {256 * 1024, kMtu, 16, sc_time(20, SC_US), sc_core::SC_ZERO_TIME, sc_core::SC_ZERO_TIME};
}

struct Bench {
  net::PacketPool gpu_pool{net::PacketFormat{16, 16, kWrite}};
  net::PacketPool eth_pool{net::PacketFormat{0, 1, eth::kPayloadOffset + kMtu}};
  adapter::RoceBridge a{"a", config(2), nic_config(), gpu_pool, eth_pool};
  adapter::RoceBridge b{"b", config(9), nic_config(), gpu_pool, eth_pool};
  test::StubPort gpu_a{"gpu_a", gpu_pool}, gpu_b{"gpu_b", gpu_pool};
  explicit Bench(double net_GBps = kNetGBps) {
    for (adapter::RoceBridge* x : {&a, &b}) x->configure_port(adapter::Adapter::kPcie, kPcieGBps, kWire, 16 * 1024);
    a.configure_port(adapter::Adapter::kNet, net_GBps, kWire, b.buffer_bytes(adapter::Adapter::kNet));
    b.configure_port(adapter::Adapter::kNet, net_GBps, kWire, a.buffer_bytes(adapter::Adapter::kNet));
    gpu_a.configure(kPcieGBps, kWire, 16 * 1024);
    gpu_b.configure(kPcieGBps, kWire, 16 * 1024);
    gpu_a.connect(a.in(adapter::Adapter::kPcie), a.out(adapter::Adapter::kPcie));
    gpu_b.connect(b.in(adapter::Adapter::kPcie), b.out(adapter::Adapter::kPcie));
    a.out(adapter::Adapter::kNet).socket.bind(b.in(adapter::Adapter::kNet).socket);
    b.out(adapter::Adapter::kNet).socket.bind(a.in(adapter::Adapter::kNet).socket);
  }
  // GPU 2's write k to GPU 9, a whole packet's data in `lines` (LL128: 240
  // bytes), at 0x10000 + that k; its words are 1000 k + i.
  net::Packet* write(uint32_t k, net::Lines lines = net::Lines::Plain) {
    const uint32_t bytes = net::lines_data_bytes(lines, kWrite);
    net::Packet* p = gpu_pool.get();
    p->src = 2;
    p->dst = 9;
    p->stream = 1;
    p->addr = 0x10000 + uint64_t{k} * bytes;
    p->op = net::Op::Write;
    p->lines = lines;
    p->vc = net::kRequestVc;
    p->payload_bytes = static_cast<uint16_t>(bytes);
    p->wire_bytes = gpu_pool.format().wire_bytes(net::lines_wire_payload(lines, bytes));
    for (uint32_t i = 0; i < bytes / 4; ++i) {
      const uint32_t v = 1000 * k + i;
      std::memcpy(p->data + 4 * i, &v, 4);
    }
    return p;
  }
  // GPU 9's writes: in order, contiguous, as sent, every word right; returns how many.
  uint32_t check_delivered(net::Lines lines = net::Lines::Plain) const {
    const uint32_t bytes = net::lines_data_bytes(lines, kWrite);
    uint32_t k = 0;
    for (const auto& w : gpu_b.arrivals()) {
      if (w.pkt.op != net::Op::Write) continue;
      CHECK(w.pkt.src == 2);
      CHECK(w.pkt.dst == 9);
      CHECK(w.pkt.lines == lines);
      CHECK(w.pkt.wire_bytes == 16 + kWrite);
      REQUIRE(w.pkt.addr == 0x10000 + uint64_t{k} * bytes);
      REQUIRE(w.pkt.payload_bytes == bytes);
      for (uint32_t i = 0; i < bytes / 4; ++i) {
        uint32_t v;
        std::memcpy(&v, w.data.data() + 4 * i, 4);
        REQUIRE(v == 1000 * k + i);
      }
      ++k;
    }
    return k;
  }
  uint32_t acks_to_a() const {
    uint32_t n = 0;
    for (const auto& w : gpu_a.arrivals()) n += w.pkt.op == net::Op::WriteAck;
    return n;
  }
};

}  // namespace

TEST_CASE("a GPU's writes cross a RoCE connection in order and each is acknowledged to its GPU once", "[roce_bridge]") {
  Bench b;
  constexpr uint32_t n = 256;  // 64 KiB: 16 full packets
  for (uint32_t k = 0; k < n; ++k) b.gpu_a.send_at(sc_core::SC_ZERO_TIME, b.write(k));
  sc_core::sc_start(200, SC_US);
  CHECK(b.check_delivered() == n);
  CHECK(b.acks_to_a() == n);
  CHECK(b.a.payload_sent() == uint64_t{n} * kWrite);
  CHECK(b.a.packets_sent() >= n * kWrite / kMtu);
  CHECK(b.a.nic().retransmitted() == 0);
  CHECK(b.a.nic().idle());  // every packet acknowledged by the far NIC
  std::ostringstream held;
  CHECK(b.a.report_held(held) + b.b.report_held(held) == 0);
  CHECK(held.str() == "");
  CHECK(b.gpu_pool.in_use() == 0);
  CHECK(b.eth_pool.in_use() == 0);
}

TEST_CASE("a frame lost between RoCE adapters is sent again and the writes still land once each in order", "[roce_bridge]") {
  Bench b;
  // The link into b loses the third data frame once.
  int data_frames = 0;
  b.b.link_faults(adapter::Adapter::kNet)->set_hook([&data_frames](const net::Packet* p) {
    return eth::is_data(eth::header(p).opcode) && ++data_frames == 3 ? eth::FrameFault::Lose : eth::FrameFault::Keep;
  });
  constexpr uint32_t n = 256;
  for (uint32_t k = 0; k < n; ++k) b.gpu_a.send_at(sc_core::SC_ZERO_TIME, b.write(k));
  sc_core::sc_start(200, SC_US);
  CHECK(b.b.nic().lost() == 1);
  CHECK(b.a.nic().retransmitted() > 0);  // go-back-N from the lost PSN
  CHECK(b.check_delivered() == n);
  CHECK(b.acks_to_a() == n);
  CHECK(b.a.nic().idle());
  CHECK(b.gpu_pool.in_use() == 0);
  CHECK(b.eth_pool.in_use() == 0);
}

TEST_CASE("LL128 writes cross RoCE in frames of the MTU, their flags on the wire, and land as sent", "[roce_bridge]") {
  // As NCCL's proxy posts a step's LL128 buffer, flags and all: 16 writes'
  // 32 lines of 128 bytes fill a 4 KiB frame (the old adapter sent each
  // 240-byte write as a frame of its own, with its headers and an ACK). A
  // network link a tenth of PCIe's: a backlog builds, and frames fill.
  Bench b(6.3);
  std::vector<uint16_t> frames;  // the data frames' wire bytes
  b.b.link_faults(adapter::Adapter::kNet)->set_hook([&frames](const net::Packet* p) {
    if (eth::is_data(eth::header(p).opcode)) frames.push_back(p->wire_bytes);
    return eth::FrameFault::Keep;
  });
  constexpr uint32_t n = 256;
  for (uint32_t k = 0; k < n; ++k) b.gpu_a.send_at(sc_core::SC_ZERO_TIME, b.write(k, net::Lines::Ll128));
  sc_core::sc_start(400, SC_US);
  CHECK(b.check_delivered(net::Lines::Ll128) == n);
  CHECK(b.acks_to_a() == n);
  CHECK(b.a.payload_sent() == uint64_t{n} * 240);
  REQUIRE(frames.size() == b.a.packets_sent());
  CHECK(frames.size() < n / 8);
  // A full frame: Ethernet, IP, UDP, BTH, ICRC and RETH around 32 lines.
  const uint16_t full = eth::kEthWireOverhead + eth::kRoceOverhead + eth::kRethBytes + kMtu;
  CHECK(*std::max_element(frames.begin(), frames.end()) == full);
  CHECK(std::count(frames.begin(), frames.end(), full) >= 2);
  CHECK(b.gpu_pool.in_use() == 0);
  CHECK(b.eth_pool.in_use() == 0);
}
