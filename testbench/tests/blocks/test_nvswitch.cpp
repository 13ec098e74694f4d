// The switch fabric: an all-to-all on DGX-2 delivers every packet to the
// right GPU with the right data and every write is acknowledged; round-robin
// arbitration shares a congested output fairly.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <sstream>
#include <systemc>
#include <vector>

#include "core/config.h"
#include "hierarchy.h"
#include "nvswitch/nvswitch.h"
#include "platforms/platform.h"
#include "streams.h"

using namespace incsim;
using sc_core::sc_time;
using sc_core::SC_NS;
using sc_core::SC_US;

namespace {

std::unique_ptr<platforms::GpuMachine> build(const std::string& name, int gpus, Config& cfg) {
  topo::Topology t = platforms::make_topology(name, gpus, cfg);
  auto p = std::make_unique<platforms::GpuMachine>(t, cfg, 1);
  cfg.check_unused();
  return p;
}

}  // namespace

TEST_CASE("DGX-2 all-to-all: every write reaches the right GPU with its data and is acked", "[nvswitch][routing]") {
  Config cfg;
  auto plat = build("dgx2", 0, cfg);
  const auto& gpus = plat->gpus();
  REQUIRE(gpus.size() == 16);
  const int ports = 6;
  const uint32_t payload = 128;
  // Each GPU writes, from each of its 6 ports, one 128 B packet to every other
  // GPU, at a slot of the receiver's buffer that names sender and port.
  std::vector<uint64_t> base(16);
  for (int g = 0; g < 16; ++g) {
    base[g] = gpus[g]->memory().alloc(16 * ports * payload);
    REQUIRE(base[g] == base[0]);  // symmetric heap
  }
  auto slot = [&](int src, int port) { return base[0] + (static_cast<uint64_t>(src) * ports + port) * payload; };
  std::vector<std::unique_ptr<test::RequestStream>> streams;
  std::map<std::pair<int, int>, test::RequestStream*> stream_of;
  for (int g = 0; g < 16; ++g) {
    for (int p = 0; p < ports; ++p) {
      auto s = std::make_unique<test::RequestStream>();
      for (int d = 0; d < 16; ++d) {
        if (d == g) continue;
        std::vector<uint8_t> data(payload);
        for (uint32_t i = 0; i < payload; ++i) data[i] = test::pattern(g * ports + p, d, i);
        s->requests.push_back({net::Op::Write, static_cast<uint32_t>(d), slot(g, p), data, 0});
      }
      gpus[g]->add_stream(s.get());
      gpus[g]->activate(p, s.get(), sc_core::SC_ZERO_TIME);
      stream_of[{g, p}] = s.get();
      streams.push_back(std::move(s));
    }
  }
  sc_core::sc_start(sc_time(1, sc_core::SC_MS));
  CHECK_FALSE(sc_core::sc_pending_activity());  // finished long before the limit

  // Data: every slot of every receiver holds exactly what its sender wrote.
  int bad_slots = 0;
  for (int d = 0; d < 16; ++d)
    for (int g = 0; g < 16; ++g)
      for (int p = 0; p < ports; ++p) {
        const uint8_t* got = gpus[d]->memory().at(slot(g, p), payload);
        bool ok = true;
        for (uint32_t i = 0; i < payload && ok; ++i)
          ok = got[i] == (g == d ? 0 : test::pattern(g * ports + p, d, i));
        if (!ok) {
          ++bad_slots;
          UNSCOPED_INFO("gpu" << d << " slot from gpu" << g << " port " << p << " is wrong");
        }
      }
  CHECK(bad_slots == 0);

  // Acks: each stream got one write ack from each GPU it wrote to.
  for (int g = 0; g < 16; ++g)
    for (int p = 0; p < ports; ++p) {
      const auto& s = *stream_of[{g, p}];
      INFO("gpu" << g << " port " << p);
      CHECK(s.issued() == 15);
      REQUIRE(s.responses.size() == 15);
      std::vector<int> from(16, 0);
      for (const auto& r : s.responses) {
        CHECK(r.op == net::Op::WriteAck);
        CHECK(r.payload_bytes == 0);
        REQUIRE(r.src < 16);
        ++from[r.src];
      }
      for (int d = 0; d < 16; ++d) CHECK(from[d] == (d == g ? 0 : 1));
    }
  // Every packet went back to the pool: nothing is stuck in a switch.
  CHECK(plat->pool().in_use() == 0);
  std::ostringstream held;
  CHECK(plat->report_held(held) == 0);
  // Bytes per link: every GPU injected 15 x 144 B writes and 15 x 16 B acks per port.
  for (const auto& l : plat->link_ends()) {
    if (l.from.rfind("gpu", 0) == 0) {
      INFO(l.from << " -> " << l.to);
      CHECK(l.port->bytes_sent() == 15 * 144 + 15 * 16);
    }
  }
}

namespace {
// Writes 128 B packets to one address of endpoint `dst` forever; the first
// 8 bytes count the packets sent, so the receiver's memory shows how many
// were delivered.
class Flood : public gpu::TxStream {
 public:
  Flood(uint32_t dst, uint64_t addr) : dst_(dst), addr_(addr) {}
  uint32_t next_wire_bytes(const net::PacketFormat& f) const override { return f.wire_bytes(128); }
  void fill(net::Packet* p) override {
    p->dst = dst_;
    p->addr = addr_;
    p->op = net::Op::Write;
    p->payload_bytes = 128;
    std::memset(p->data, 0, 128);
    ++sent;
    std::memcpy(p->data, &sent, sizeof(sent));
  }
  void on_response(net::Packet*) override { ++acks; }
  uint64_t sent = 0, acks = 0;

 private:
  uint32_t dst_;
  uint64_t addr_;
};
}  // namespace

TEST_CASE("arbitration is fair: 7 GPUs flooding one GPU on a star get equal shares", "[nvswitch][fairness]") {
  Config cfg;
  auto plat = build("star", 8, cfg);
  const auto& gpus = plat->gpus();
  const uint64_t base = gpus[0]->memory().alloc(8 * 128);
  std::vector<std::unique_ptr<Flood>> floods;
  for (int g = 1; g < 8; ++g) {
    floods.push_back(std::make_unique<Flood>(0, base + 128 * g));
    gpus[g]->add_stream(floods.back().get());
    gpus[g]->activate(0, floods.back().get(), sc_core::SC_ZERO_TIME);
  }
  auto delivered = [&](int g) {
    uint64_t v;
    std::memcpy(&v, gpus[0]->memory().at(base + 128 * g, 8), 8);
    return v;
  };
  sc_core::sc_start(sc_time(2, SC_US));  // warm up: queues fill, credits run out
  std::vector<uint64_t> before(8);
  for (int g = 1; g < 8; ++g) before[g] = delivered(g);
  const sc_time window(20, SC_US);
  sc_core::sc_start(window);
  uint64_t total = 0, lo = UINT64_MAX, hi = 0;
  for (int g = 1; g < 8; ++g) {
    const uint64_t n = delivered(g) - before[g];
    UNSCOPED_INFO("gpu" << g << ": " << n << " packets delivered in the window");
    total += n;
    lo = std::min(lo, n);
    hi = std::max(hi, n);
  }
  // The bottleneck (switch -> gpu0) ran at full rate.
  const double rate_GBps = total * 144.0 / (window.to_seconds() * 1e9);
  CHECK(rate_GBps >= 0.98 * 25.0);
  // Within 10% of each other: the output is shared round-robin.
  CHECK(lo > 0);
  CHECK(static_cast<double>(hi - lo) <= 0.10 * static_cast<double>(total) / 7);
  // Sources were throttled by backpressure, not by dropping: everything sent
  // and not delivered is still held somewhere (not lost).
  for (int g = 1; g < 8; ++g) CHECK(floods[g - 1]->sent >= delivered(g));
}

TEST_CASE("the switch adds its 150 ns latency to the first flit", "[nvswitch][timing]") {
  Config cfg;
  // No memory latency: the write's ack leaves gpu1 the moment the write's
  // last flit is in, so the ack's arrival times both switch traversals.
  cfg.set("gpu.mem_latency_cycles", "0", "test");
  cfg.set("gpu.mem_jitter_cycles", "0", "test");
  auto plat = build("star", 2, cfg);
  const auto& gpus = plat->gpus();
  const uint64_t base = gpus[1]->memory().alloc(256);
  test::RequestStream s;
  s.requests.push_back({net::Op::Write, 1, base, std::vector<uint8_t>(128, 0x5a), 0});
  gpus[0]->add_stream(&s);
  gpus[0]->activate(0, &s, sc_time(10, SC_NS));
  sc_core::sc_start();
  REQUIRE(s.sent.size() == 1);
  CHECK(s.sent[0] == sc_time(10, SC_NS));
  // Sent at 10 ns: its head is in the switch at once (no wire latency), leaves
  // 150 ns later, and its tail lands in gpu1 one serialization (5.76 ns)
  // after that, cut through: 165.76 ns. The 16 B ack crosses the switch the
  // same way: 165.76 + 150 + 0.64 = 316.40 ns.
  REQUIRE(s.responses.size() == 1);
  CHECK(s.responses[0].at == sc_time(316.40, SC_NS));
  CHECK(gpus[1]->memory().at(base, 1)[0] == 0x5a);
}

TEST_CASE("a platform's switch ports and reduction tables are modules, with their per-instance parameters",
          "[nvswitch][hierarchy]") {
  Config cfg;
  cfg.set("switch.reduction_table.bytes", "512", "test");
  cfg.set("sw0.port1.reduction_table.bytes", "256", "test");
  auto plat = build("dgx2", 0, cfg);
  auto* sw = test::find_block<nvswitch::NvSwitch>("sw0");
  REQUIRE(sw);
  for (int p = 0; p < sw->num_ports(); ++p) {
    const std::string port = "sw0.port" + std::to_string(p);
    INFO(port);
    REQUIRE(test::find_block(port));
    auto* t = test::find_block<nvswitch::ReductionTable>(port + ".reduction_table");
    REQUIRE(t);
    CHECK(t == &sw->table(p));
    CHECK(t->capacity() == (p == 1 ? 2u : 4u));  // 128 B entries
    CHECK(test::processes_below(test::find_block(port)) == 0);
  }
  CHECK(test::find_block<nvswitch::McrTable>("sw0.mcr_table"));
  CHECK(test::find_block<nvswitch::McrTable>("sw11.mcr_table"));
}
