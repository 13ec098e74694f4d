// Hca alone: its PCIe port faces a stub that plays the GPU (the GPU
// fabric's packets), its network port a stub that plays the rail leaf
// (InfiniBand packets); no cluster. It gathers a stream's contiguous writes
// into packets of up to the MTU (LL128's with their lines' flags on the
// wire), numbered in their connection, and
// acknowledges each write once its packet is queued; it delivers each
// connection's packets in sequence, split into the GPU fabric's writes, and
// absorbs their acknowledgements; its send buffer bounds what it takes.
// SHARP's reducing writes and the sums that come back pass outside the
// connections, unacknowledged.
#include <catch2/catch.hpp>

#include <cstring>
#include <sstream>
#include <vector>

#include "adapter/hca.h"
#include "stub_port.h"

using namespace incsim;
using sc_core::SC_NS;
using sc_core::SC_US;
using sc_core::sc_time;

namespace {

constexpr double kPcieGBps = 63, kNetGBps = 50;
const sc_time kWire(10, SC_NS);
constexpr uint32_t kMtu = 4096, kWrite = 256;
constexpr uint32_t kLl128Write = 240;  // LL128's data in a 256-byte payload

net::PacketFormat gpu_format() { return {16, 16, kWrite}; }
net::PacketFormat net_format() { return {26, 4, kMtu}; }

struct Bench {
  net::PacketPool gpu_pool{gpu_format()}, net_pool{net_format()};
  adapter::HcaConfig cfg{sc_time(300, SC_NS), 16, kMtu, 64 * 1024, 16 * 1024, 32 * 1024, 2};
  adapter::Hca hca{"hca", cfg, gpu_pool, net_pool};
  test::StubPort gpu{"gpu", gpu_pool}, leaf{"leaf", net_pool};
  explicit Bench(double net_GBps = kNetGBps, uint32_t leaf_buffer = 64 * 1024) {
    hca.configure_port(adapter::Hca::kPcie, kPcieGBps, kWire, 16 * 1024);
    hca.configure_port(adapter::Hca::kNet, net_GBps, kWire, leaf_buffer);
    gpu.configure(kPcieGBps, kWire, cfg.pcie_buffer_bytes);
    leaf.configure(net_GBps, kWire, cfg.net_buffer_bytes);
    gpu.connect(hca.in(adapter::Hca::kPcie), hca.out(adapter::Hca::kPcie));
    leaf.connect(hca.in(adapter::Hca::kNet), hca.out(adapter::Hca::kNet));
  }
  // GPU 2's write k of stream `stream` to GPU 9, at base + 256 k; its
  // payload's words are 1000 k + i.
  net::Packet* write(uint32_t k, uint32_t stream = 1, uint64_t base = 0x10000, uint32_t bytes = kWrite) {
    net::Packet* p = gpu_pool.get();
    p->src = 2;
    p->dst = 9;
    p->stream = stream;
    p->addr = base + uint64_t{k} * kWrite;
    p->op = net::Op::Write;
    p->vc = net::kRequestVc;
    p->payload_bytes = static_cast<uint16_t>(bytes);
    p->wire_bytes = gpu_pool.format().wire_bytes(bytes);
    for (uint32_t i = 0; i < bytes / 4; ++i) {
      const uint32_t v = 1000 * k + i;
      std::memcpy(p->data + 4 * i, &v, 4);
    }
    return p;
  }
  // GPU 2's LL128 write k of stream 1 to GPU 9: the 240 data bytes of two
  // 128-byte lines (256 B on the wire, the flags included), at 0x10000 + 240 k.
  net::Packet* ll128_write(uint32_t k) {
    net::Packet* p = write(0, 1, 0x10000 + uint64_t{k} * kLl128Write, kLl128Write);
    for (uint32_t i = 0; i < kLl128Write / 4; ++i) {
      const uint32_t v = 1000 * k + i;
      std::memcpy(p->data + 4 * i, &v, 4);
    }
    p->lines = net::Lines::Ll128;
    p->wire_bytes = gpu_pool.format().wire_bytes(net::lines_wire_payload(net::Lines::Ll128, kLl128Write));
    return p;
  }
  std::vector<const test::Arrival*> acks() const {
    std::vector<const test::Arrival*> r;
    for (const auto& a : gpu.arrivals())
      if (a.pkt.op == net::Op::WriteAck) r.push_back(&a);
    return r;
  }
};

}  // namespace

TEST_CASE("a stream's writes leave in order, gathered into packets of at most the MTU, each acknowledged once", "[hca]") {
  // A network link a tenth of PCIe's: a backlog builds, and packets fill.
  Bench b(6.3);
  constexpr uint32_t n = 64;
  for (uint32_t k = 0; k < n; ++k) b.gpu.send_at(sc_core::SC_ZERO_TIME, b.write(k));
  sc_core::sc_start(100, SC_US);
  const auto& got = b.leaf.arrivals();
  REQUIRE(!got.empty());
  uint64_t addr = 0x10000, bytes = 0;
  uint32_t full = 0, psn = 0;
  for (const auto& a : got) {
    CHECK(a.pkt.table == psn++);  // numbered in the connection
    CHECK(a.pkt.src == 2);
    CHECK(a.pkt.dst == 9);
    CHECK(a.pkt.stream == 1);
    CHECK(a.pkt.op == net::Op::Write);
    CHECK(a.pkt.addr == addr);  // in order, contiguous
    CHECK(a.pkt.payload_bytes <= kMtu);
    CHECK(a.pkt.wire_bytes == 26 + a.pkt.payload_bytes);
    // Every word is the one its GPU write carried.
    for (uint32_t off = 0; off < a.pkt.payload_bytes; off += 4) {
      const uint64_t at = a.pkt.addr - 0x10000 + off;
      const uint32_t k = static_cast<uint32_t>(at / kWrite), i = static_cast<uint32_t>(at % kWrite / 4);
      uint32_t v;
      std::memcpy(&v, a.data.data() + off, 4);
      REQUIRE(v == 1000 * k + i);
    }
    addr += a.pkt.payload_bytes;
    bytes += a.pkt.payload_bytes;
    full += a.pkt.payload_bytes == kMtu;
  }
  CHECK(bytes == uint64_t{n} * kWrite);
  CHECK(b.hca.payload_sent() == bytes);
  CHECK(b.hca.packets_sent() == got.size());
  CHECK(full >= 2);  // the backlog fills packets
  CHECK(got.size() < n / 2);
  // One acknowledgement per write, back to its sender, naming its stream.
  const auto acks = b.acks();
  REQUIRE(acks.size() == n);
  for (const auto* a : acks) {
    CHECK(a->pkt.dst == 2);
    CHECK(a->pkt.src == 9);
    CHECK(a->pkt.stream == 1);
    CHECK(a->pkt.vc == net::kResponseVc);
  }
  CHECK(b.gpu_pool.in_use() == 0);
  CHECK(b.net_pool.in_use() == 0);
}

TEST_CASE("streams gather apart, and a write that does not continue its stream's packet closes it", "[hca]") {
  Bench b(6.3);
  // Two streams interleaved, then stream 1 jumps to another address (a flag).
  for (uint32_t k = 0; k < 8; ++k) {
    b.gpu.send_at(sc_core::SC_ZERO_TIME, b.write(k, 1, 0x10000));
    b.gpu.send_at(sc_core::SC_ZERO_TIME, b.write(k, 2, 0x80000));
  }
  b.gpu.send_at(sc_core::SC_ZERO_TIME, b.write(0, 1, 0xf0000, 8));
  // A write that continues a partial one starts a packet of its own, so the
  // far side's split at whole writes gives back the writes as sent.
  b.gpu.send_at(sc_core::SC_ZERO_TIME, b.write(0, 3, 0x40000, 128));
  b.gpu.send_at(sc_core::SC_ZERO_TIME, b.write(0, 3, 0x40080, 256));
  sc_core::sc_start(100, SC_US);
  uint64_t next1 = 0x10000, next2 = 0x80000;
  bool flag_seen = false;
  std::vector<uint64_t> stream3;
  for (const auto& a : b.leaf.arrivals()) {
    if (a.pkt.stream == 3) {
      stream3.push_back(a.pkt.payload_bytes);
      continue;
    }
    if (a.pkt.stream == 2) {
      CHECK(a.pkt.addr == next2);
      next2 += a.pkt.payload_bytes;
    } else if (a.pkt.addr == 0xf0000) {
      CHECK(a.pkt.payload_bytes == 8);
      CHECK(next1 == 0x10000 + 8 * kWrite);  // after all of stream 1's data
      flag_seen = true;
    } else {
      CHECK(!flag_seen);
      CHECK(a.pkt.addr == next1);
      next1 += a.pkt.payload_bytes;
    }
  }
  CHECK(flag_seen);
  CHECK(next2 == 0x80000 + 8 * kWrite);
  CHECK(stream3 == std::vector<uint64_t>{128, 256});
  CHECK(b.acks().size() == 19);
}

TEST_CASE("a message's writes wait for the rest of it, a write on its own leaves when the wire is idle", "[hca]") {
  // Writes 100 ns apart: the wire is idle between them.
  Bench b;
  const sc_time gap(100, SC_NS);
  // A message of 20 writes (an NCCL step) on stream 1, marked as the cores
  // mark a step's; 4 unmarked writes on stream 2.
  for (uint32_t k = 0; k < 20; ++k) {
    net::Packet* w = b.write(k, 1, 0x10000);
    w->more = k < 19;
    w->last = k == 19;
    b.gpu.send_at(gap * k, w);
    if (k < 4) b.gpu.send_at(gap * k, b.write(k, 2, 0x80000));
  }
  sc_core::sc_start(100, SC_US);
  std::vector<uint32_t> message, alone;
  for (const auto& a : b.leaf.arrivals()) (a.pkt.stream == 1 ? message : alone).push_back(a.pkt.payload_bytes);
  // The MTU, then the message's end: as NCCL's proxy posts a written step.
  CHECK(message == std::vector<uint32_t>{kMtu, 4 * kWrite});
  CHECK(alone == std::vector<uint32_t>(4, kWrite));
  CHECK(b.acks().size() == 24);
}

TEST_CASE("open messages that fill the send buffer leave rather than hold the GPU's next write", "[hca]") {
  Bench b;
  // 20 streams, 15 writes each of a message whose end does not come: 76,800
  // bytes against a 64 KiB send buffer.
  for (uint32_t s = 0; s < 20; ++s)
    for (uint32_t k = 0; k < 15; ++k) {
      net::Packet* w = b.write(k, 10 + s, 0x100000 * (s + 1));
      w->more = true;
      b.gpu.send_at(sc_core::SC_ZERO_TIME, w);
    }
  sc_core::sc_start(100, SC_US);
  CHECK(b.hca.writes_sent() == 300);  // every write taken
  CHECK(b.leaf.arrivals().size() >= 2);
}

TEST_CASE("LL128 writes gather into packets of the MTU on the wire, their flags included, and split back as sent",
          "[hca]") {
  // As NCCL's proxy posts a step's LL128 buffer, flags and all, and the
  // adapter cuts it into MTU-sized packets: 16 writes' 32 lines fill 4 KiB.
  Bench b(6.3);
  constexpr uint32_t n = 64;
  for (uint32_t k = 0; k < n; ++k) b.gpu.send_at(sc_core::SC_ZERO_TIME, b.ll128_write(k));
  sc_core::sc_start(100, SC_US);
  const auto& got = b.leaf.arrivals();
  uint64_t addr = 0x10000;
  uint32_t full = 0;
  for (const auto& a : got) {
    CHECK(a.pkt.addr == addr);
    CHECK(a.pkt.lines == net::Lines::Ll128);
    CHECK(a.pkt.payload_bytes % kLl128Write == 0);
    CHECK(a.pkt.wire_bytes == 26 + a.pkt.payload_bytes / 120 * 128);
    addr += a.pkt.payload_bytes;
    full += a.pkt.payload_bytes == 16 * kLl128Write;
  }
  CHECK(addr == 0x10000 + n * kLl128Write);
  CHECK(full >= 2);
  CHECK(got.size() < n / 4);
  CHECK(b.acks().size() == n);

  // The last, as if it came from the network to GPU 2: its writes as sent.
  const test::Arrival last = got.back();
  net::Packet* p = b.net_pool.get();
  p->src = 9;
  p->dst = 2;
  p->stream = 1;
  p->addr = last.pkt.addr;
  p->op = net::Op::Write;
  p->lines = net::Lines::Ll128;
  p->vc = net::kRequestVc;
  p->payload_bytes = last.pkt.payload_bytes;
  p->wire_bytes = last.pkt.wire_bytes;
  std::memcpy(p->data, last.data.data(), last.pkt.payload_bytes);
  const size_t before = b.gpu.arrivals().size();
  b.leaf.send_at(sc_time(100, SC_US), p);
  sc_core::sc_start(20, SC_US);
  uint32_t writes = 0;
  for (size_t k = before; k < b.gpu.arrivals().size(); ++k) {
    const test::Arrival& w = b.gpu.arrivals()[k];
    CHECK(w.pkt.addr == last.pkt.addr + writes * kLl128Write);
    CHECK(w.pkt.payload_bytes == kLl128Write);
    CHECK(w.pkt.lines == net::Lines::Ll128);
    CHECK(w.pkt.wire_bytes == 16 + 256);
    uint32_t v;
    std::memcpy(&v, w.data.data(), 4);
    CHECK(v == 1000 * ((w.pkt.addr - 0x10000) / kLl128Write));
    ++writes;
  }
  CHECK(writes == last.pkt.payload_bytes / kLl128Write);
}

TEST_CASE("a network packet becomes the GPU fabric's writes, whose acknowledgements the adapter absorbs", "[hca]") {
  Bench b;
  net::Packet* p = b.net_pool.get();
  p->src = 9;
  p->dst = 2;
  p->stream = 7;
  p->addr = 0x4000;
  p->op = net::Op::Write;
  p->vc = net::kRequestVc;
  p->payload_bytes = 1000;  // not a whole number of writes
  p->wire_bytes = b.net_pool.format().wire_bytes(1000);
  for (uint32_t i = 0; i < 250; ++i) std::memcpy(p->data + 4 * i, &i, 4);
  b.leaf.send_at(sc_core::SC_ZERO_TIME, p);
  sc_core::sc_start(10, SC_US);
  const auto& got = b.gpu.arrivals();
  REQUIRE(got.size() == 4);
  for (size_t k = 0; k < got.size(); ++k) {
    CHECK(got[k].pkt.addr == 0x4000 + 256 * k);
    CHECK(got[k].pkt.payload_bytes == (k < 3 ? 256 : 232));
    CHECK(got[k].pkt.src == 9);
    CHECK(got[k].pkt.stream == 7);
    uint32_t v;
    std::memcpy(&v, got[k].data.data(), 4);
    CHECK(v == 64 * k);
    // Not before the whole packet is in and the adapter's pipeline passed.
    CHECK(got[k].committed >= sc_time(10, SC_NS) + test::wire_time(1026, kNetGBps) + sc_time(300, SC_NS));
  }
  CHECK(b.hca.writes_delivered() == 4);
  // The GPU memory's acknowledgements stop at the adapter.
  for (size_t k = 0; k < 4; ++k) {
    net::Packet* a = b.gpu_pool.get();
    a->src = 2;
    a->dst = 9;
    a->op = net::Op::WriteAck;
    a->vc = net::kResponseVc;
    a->wire_bytes = 16;
    b.gpu.send_at(sc_time(12, SC_US), a);
  }
  sc_core::sc_start(10, SC_US);
  CHECK(b.leaf.arrivals().empty());
  CHECK(b.gpu_pool.in_use() == 0);
  CHECK(b.net_pool.in_use() == 0);
}

TEST_CASE("the send buffer bounds what the adapter takes: without network credit it stops acknowledging", "[hca]") {
  // The leaf's buffer holds one packet; the stub keeps it full.
  Bench b(kNetGBps, kMtu + 26);
  b.leaf.withhold_credits(true);
  constexpr uint32_t n = 512;  // 128 KiB, twice the send buffer
  for (uint32_t k = 0; k < n; ++k) b.gpu.send_at(sc_core::SC_ZERO_TIME, b.write(k));
  sc_core::sc_start(50, SC_US);
  // Taken from the GPU and acknowledged: what went on the wire plus the send buffer.
  CHECK(b.hca.writes_sent() * uint64_t{kWrite} <= b.hca.payload_sent() + b.cfg.send_queue_bytes);
  CHECK(b.acks().size() <= b.hca.writes_sent());
  CHECK(b.acks().size() < n);
  std::ostringstream held;
  CHECK(b.hca.report_held(held) > 0);
  CHECK_THAT(held.str(), Catch::Contains("hca: ") && Catch::Contains("queued for the network"));
  b.leaf.withhold_credits(false);
  b.leaf.return_credits();
  sc_core::sc_start(100, SC_US);
  CHECK(b.acks().size() == n);
  CHECK(b.hca.payload_sent() == uint64_t{n} * kWrite);
}

TEST_CASE("packets that overtook another of their connection wait for it and are delivered in sequence", "[hca]") {
  Bench b;
  // GPU 9's packets 0, 1 and 2 to GPU 2 arrive as 1, 2, 0; GPU 5's packet 0 passes them all.
  auto packet = [&b](uint32_t src, uint16_t psn) {
    net::Packet* p = b.net_pool.get();
    p->src = src;
    p->dst = 2;
    p->table = psn;
    p->addr = 0x1000 * (src * 4 + psn);
    p->op = net::Op::Write;
    p->vc = net::kRequestVc;
    p->payload_bytes = 256;
    p->wire_bytes = b.net_pool.format().wire_bytes(256);
    return p;
  };
  b.leaf.send_at(sc_core::SC_ZERO_TIME, packet(9, 1));
  b.leaf.send_at(sc_core::SC_ZERO_TIME, packet(9, 2));
  b.leaf.send_at(sc_core::SC_ZERO_TIME, packet(5, 0));
  sc_core::sc_start(5, SC_US);
  REQUIRE(b.gpu.arrivals().size() == 1);
  CHECK(b.gpu.arrivals()[0].pkt.src == 5);
  std::ostringstream held;
  CHECK(b.hca.report_held(held) == 2);
  CHECK_THAT(held.str(), Catch::Contains("2 network packets that overtook another, waiting for it"));
  b.leaf.send_at(sc_core::sc_time_stamp(), packet(9, 0));
  sc_core::sc_start(5, SC_US);
  const auto& got = b.gpu.arrivals();
  REQUIRE(got.size() == 4);
  for (uint16_t k = 0; k < 3; ++k) CHECK(got[1 + k].pkt.addr == uint64_t{0x1000} * (9 * 4 + k));
  std::ostringstream after;
  CHECK(b.hca.report_held(after) == 0);
  CHECK(b.net_pool.in_use() == 0);
}

TEST_CASE("a reducing write leaves as a network packet of its own, and a switch's sum reaches the GPU, neither acknowledged",
          "[hca][sharp]") {
  Bench b;
  constexpr uint64_t kRegion = net::kMulticastBase + 0x8000;
  for (uint32_t k = 0; k < 3; ++k) {
    net::Packet* w = b.write(k, 1, kRegion, 128);
    w->op = net::Op::ReduceWrite;
    w->dst = 0;
    w->count = 1;
    w->home_switch = 5;
    w->home_port = static_cast<int16_t>(k);
    w->wire_bytes = b.gpu_pool.format().wire_bytes(net::Op::ReduceWrite, 128);
    b.gpu.send_at(sc_core::SC_ZERO_TIME, w);
  }
  net::Packet* sum = b.net_pool.get();
  sum->src = net::kNoEndpoint;
  sum->dst = 0;
  sum->addr = kRegion + 0x80;
  sum->op = net::Op::Write;
  sum->vc = net::kRequestVc;
  sum->count = 4;
  sum->payload_bytes = 128;
  sum->wire_bytes = b.net_pool.format().wire_bytes(128);
  for (uint32_t i = 0; i < 32; ++i) std::memcpy(sum->data + 4 * i, &i, 4);
  b.leaf.send_at(sc_core::SC_ZERO_TIME, sum);
  sc_core::sc_start(10, SC_US);
  // Each block its own packet, in order, with its home and count; not gathered, not numbered.
  const auto& out = b.leaf.arrivals();
  REQUIRE(out.size() == 3);
  for (uint32_t k = 0; k < 3; ++k) {
    CHECK(out[k].pkt.op == net::Op::ReduceWrite);
    CHECK(out[k].pkt.addr == kRegion + 256 * k);
    CHECK(out[k].pkt.payload_bytes == 128);
    CHECK(out[k].pkt.wire_bytes == 128 + 26);
    CHECK(out[k].pkt.home_switch == 5);
    CHECK(out[k].pkt.home_port == static_cast<int16_t>(k));
    CHECK(out[k].pkt.count == 1);
    uint32_t v;
    std::memcpy(&v, out[k].data.data() + 4, 4);
    CHECK(v == 1000 * k + 1);
  }
  // The sum goes to this adapter's GPU (2), its count kept; no acknowledgement either way.
  const auto& in = b.gpu.arrivals();
  REQUIRE(in.size() == 1);
  CHECK(in[0].pkt.op == net::Op::Write);
  CHECK(in[0].pkt.dst == 2);
  CHECK(in[0].pkt.addr == kRegion + 0x80);
  CHECK(in[0].pkt.count == 4);
  CHECK(b.acks().empty());
  CHECK(b.hca.packets_sent() == 3);
  CHECK(b.gpu_pool.in_use() == 0);
  CHECK(b.net_pool.in_use() == 0);
}
