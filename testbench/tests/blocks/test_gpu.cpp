// The GPU endpoint: memory latency (Klenk §V: 180 cycles plus a random
// [0, 180)), remote reads and writes served by the memory system, write acks,
// and a copy of a buffer between two GPUs landing byte-exact at line rate.
#include <catch2/catch.hpp>

#include <algorithm>
#include <utility>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <memory>
#include <systemc>
#include <vector>

#include "core/config.h"
#include "gpu/compute_engine.h"
#include "gpu/copy_engine.h"
#include "gpu/cores.h"
#include "gpu/cores_collective.h"
#include "collectives/program_synthesis.h"
#include "gpu/memory.h"
#include "platforms/platform.h"
#include "streams.h"
#include "stub_port.h"

using namespace incsim;
using sc_core::sc_time;
using sc_core::SC_NS;

namespace {

constexpr double kClockGhz = 1.53;  // platform default
const double kMinMemNs = 180 / kClockGhz;
const double kMaxMemNs = 360 / kClockGhz;

std::unique_ptr<platforms::GpuMachine> star(int gpus, Config& cfg) {
  topo::Topology t = platforms::make_topology("star", gpus, cfg);
  auto p = std::make_unique<platforms::GpuMachine>(t, cfg, 1);
  cfg.check_unused();
  return p;
}

double ns(const sc_time& t) { return t.to_seconds() * 1e9; }

// A GPU alone on a stub: 1 GHz, memory 100 ns without jitter, 64 responses.
gpu::GpuConfig stub_gpu_config(uint32_t rx_buffer_bytes) {
  gpu::GpuConfig c{};
  c.clock_ghz = 1.0;
  c.mem_latency_cycles = 100;
  c.rx_buffer_bytes = rx_buffer_bytes;
  c.max_responses = 64;
  return c;
}

// The i-th of many accesses, as a run makes them: 16 sources writing 128 B
// packets over a buffer, one every few nanoseconds.
uint32_t sample(const gpu::Memory& m, int i) {
  return m.latency_cycles(i % 16, 0x1000 + 128 * (i / 16 % 4096), sc_time(3.5 * i, SC_NS));
}

}  // namespace

TEST_CASE("memory latency samples stay within 180 to 359 cycles and cover the range", "[gpu][memory]") {
  gpu::Memory m(kClockGhz, 180, 180, 42);
  uint32_t lo = UINT32_MAX, hi = 0;
  double sum = 0;
  const int n = 100000;
  std::vector<int> histogram(4, 0);
  for (int i = 0; i < n; ++i) {
    const uint32_t c = sample(m, i);
    REQUIRE(c >= 180);
    REQUIRE(c < 360);
    lo = std::min(lo, c);
    hi = std::max(hi, c);
    sum += c;
    ++histogram[(c - 180) / 45];
  }
  CHECK(lo <= 181);
  CHECK(hi >= 358);
  CHECK(sum / n == Approx(269.5).margin(1.5));  // uniform
  for (int q : histogram) CHECK(q == Approx(n / 4).epsilon(0.05));
  for (int i = 0; i < 1000; ++i) {
    const double t = ns(m.latency(i % 16, 0x1000, sc_time(i, SC_NS)));
    REQUIRE(t >= kMinMemNs - 0.001);
    REQUIRE(t < kMaxMemNs);
  }
}

TEST_CASE("memory latency is a function of the access and the seed, not of the order of accesses", "[gpu][memory]") {
  gpu::Memory a(kClockGhz, 180, 180, 7), b(kClockGhz, 180, 180, 7), c(kClockGhz, 180, 180, 8);
  std::vector<uint32_t> forward;
  for (int i = 0; i < 100; ++i) forward.push_back(sample(a, i));
  bool differs = false;
  for (int i = 99; i >= 0; --i) {
    CHECK(sample(b, i) == forward[i]);
    differs = differs || forward[i] != sample(c, i);
  }
  CHECK(differs);
  // Times count from the origin: the same accesses 5 us later, after an
  // origin 5 us later, take the same latencies.
  b.set_origin(sc_time(5000, SC_NS));
  for (int i = 0; i < 100; ++i)
    CHECK(b.latency_cycles(i % 16, 0x1000 + 128 * (i / 16), sc_time(5000 + 3.5 * i, SC_NS)) == forward[i]);
  gpu::Memory fixed(2.0, 100, 0, 1);  // no jitter
  CHECK(fixed.latency_cycles(3, 0x1000, sc_time(7, SC_NS)) == 100);
  CHECK(fixed.latency(3, 0x1000, sc_time(7, SC_NS)) == sc_time(50, SC_NS));
}

TEST_CASE("memory allocations are zeroed and 256 B aligned", "[gpu][memory]") {
  gpu::Memory m(kClockGhz, 180, 180, 1);
  const uint64_t a = m.alloc(100);
  const uint64_t b = m.alloc(1000);
  CHECK(a % 256 == 0);
  CHECK(b % 256 == 0);
  CHECK(b >= a + 100);
  for (int i = 0; i < 1000; ++i) CHECK(m.at(b + i, 1)[0] == 0);
  m.at(a, 100)[99] = 7;
  CHECK(m.at(a + 99, 1)[0] == 7);
  m.free(a);  // a hole below b: not reused while b lives
  const uint64_t c = m.alloc(8);
  CHECK(c > b);
  m.free(b);
  CHECK(m.at(c, 8)[0] == 0);
  m.free(c);
  CHECK(m.allocated() == 0);
  CHECK(m.alloc(8) == a);
}

TEST_CASE("a paged buffer holds host memory for a page only from its first access to its release", "[gpu][memory]") {
  gpu::Memory m(kClockGhz, 180, 180, 1);
  const uint64_t dense = m.alloc(256);
  const uint64_t a = m.alloc_paged(4 * 1000, 1000);  // four slots of 1000 B
  CHECK(a % 256 == 0);
  CHECK(m.held() == 256);
  m.at(a + 1000, 8)[0] = 7;  // slot 1 lands
  CHECK(m.held() == 256 + 1000);
  CHECK(m.at(a + 1000, 1)[0] == 7);
  CHECK(m.at(a + 1999, 1)[0] == 0);
  m.at(a + 3000, 1000)[999] = 9;  // slot 3
  CHECK(m.held() == 256 + 2000);
  m.release(a + 1000);  // slot 1 read
  CHECK(m.held() == 256 + 1000);
  CHECK(m.peak_held() == 256 + 2000);
  // Taken again, the page reads as zeroed, as a new buffer's.
  CHECK(m.at(a + 1000, 1)[0] == 0);
  m.release(a + 1000);
  m.release(a + 2000);  // never held: nothing to give back
  CHECK(m.held() == 256 + 1000);
  m.free(a);
  m.free(dense);
  CHECK(m.held() == 0);
  CHECK(m.peak_held() == 256 + 2000);
}

TEST_CASE("a remote read returns the memory contents", "[gpu][read]") {
  Config cfg;
  auto plat = star(2, cfg);
  auto& g0 = *plat->gpus()[0];
  auto& g1 = *plat->gpus()[1];
  const uint64_t buf = g1.memory().alloc(1024);
  for (int i = 0; i < 1024; ++i) g1.memory().at(buf + i, 1)[0] = test::pattern(1, 0, i);
  test::RequestStream s;
  for (int k = 0; k < 8; ++k) s.requests.push_back({net::Op::Read, 1, buf + 128 * k, {}, 128});
  s.requests.push_back({net::Op::Read, 1, buf + 1000, {}, 24});  // a short read
  g0.add_stream(&s);
  g0.activate(0, &s, sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  REQUIRE(s.responses.size() == 9);
  for (const auto& r : s.responses) {
    INFO("response for address " << r.addr);
    CHECK(r.op == net::Op::ReadResp);
    CHECK(r.src == 1);
    REQUIRE(r.addr >= buf);
    REQUIRE(r.payload_bytes == (r.addr == buf + 1000 ? 24 : 128));
    for (uint16_t i = 0; i < r.payload_bytes; ++i) CHECK(r.data[i] == test::pattern(1, 0, r.addr - buf + i));
    // Out through the switch, memory, back through the switch.
    CHECK(ns(r.at) >= 2 * 150 + kMinMemNs);
  }
  CHECK(plat->pool().in_use() == 0);
}

TEST_CASE("a read request is a single header flit on the wire", "[gpu][read]") {
  // Klenk §V and issue 2: read requests and write acks are single-flit packets.
  Config cfg;
  auto plat = star(2, cfg);
  auto& g0 = *plat->gpus()[0];
  auto& g1 = *plat->gpus()[1];
  const uint64_t buf = g1.memory().alloc(128);
  test::RequestStream s;
  s.requests.push_back({net::Op::Read, 1, buf, {}, 128});
  g0.add_stream(&s);
  g0.activate(0, &s, sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  REQUIRE(s.responses.size() == 1);
  CHECK(g0.out(0).bytes_sent() == 16);   // the request: header only
  CHECK(g1.out(0).bytes_sent() == 144);  // the response: header + 128 B
}

TEST_CASE("a write is acknowledged after at least the memory latency", "[gpu][write]") {
  Config cfg;
  auto plat = star(2, cfg);
  auto& g0 = *plat->gpus()[0];
  auto& g1 = *plat->gpus()[1];
  const uint64_t buf = g1.memory().alloc(4096);
  test::RequestStream s;
  const int n = 200;
  for (int k = 0; k < n; ++k)
    s.requests.push_back({net::Op::Write, 1, buf + 8 * k, std::vector<uint8_t>(8, static_cast<uint8_t>(k + 1)), 0});
  // One write at a time: the next goes when the previous one's ack is back.
  s.release_up_to(1);
  s.on_each_response = [&](test::RequestStream& st) {
    st.release_up_to(st.responses.size() + 1);
    g0.activate(0, &st, sc_core::SC_ZERO_TIME);
  };
  g0.add_stream(&s);
  g0.activate(0, &s, sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  REQUIRE(s.responses.size() == static_cast<size_t>(n));
  REQUIRE(s.sent.size() == static_cast<size_t>(n));
  double lo = 1e9, hi = 0;
  for (int k = 0; k < n; ++k) {
    CHECK(s.responses[k].op == net::Op::WriteAck);
    CHECK(s.responses[k].src == 1);
    const double rt = ns(s.responses[k].at - s.sent[k]);
    lo = std::min(lo, rt);
    hi = std::max(hi, rt);
    CHECK(g1.memory().at(buf + 8 * k, 8)[7] == k + 1);
  }
  INFO("write round trip from " << lo << " to " << hi << " ns");
  // Two switch traversals (150 ns each) plus 180..360 cycles of memory,
  // plus a few flit times on the wires.
  CHECK(lo >= 2 * 150 + kMinMemNs);
  CHECK(hi < 2 * 150 + kMaxMemNs + 10);
  CHECK(hi - lo > 0.8 * (kMaxMemNs - kMinMemNs));  // the random part shows
}

namespace {
// Writes in the order the port takes them, each as 8 x stream + its index.
struct LoggedStream : test::RequestStream {
  int k = 0;
  std::vector<int>* order = nullptr;
  void fill(net::Packet* p) override {
    order->push_back(8 * k + static_cast<int>(issued()));
    RequestStream::fill(p);
  }
};

// Two streams of two 1 KiB messages of 256 B writes and one of unmarked
// writes (flags), all ready at once on g0's port: how many of the four
// messages crossed it whole, no other write between their first and last.
int messages_whole(bool reads) {
  Config cfg;
  auto plat = star(2, cfg);
  auto& g0 = *plat->gpus()[0];
  const uint64_t buf = plat->gpus()[1]->memory().alloc(1 << 16);
  if (reads) g0.peer_packets(0, 1024);  // as an adapter's MTU: net::Block::packet_reads
  std::vector<int> order;
  LoggedStream s[3];
  for (int k = 0; k < 3; ++k) {
    s[k].k = k;
    s[k].order = &order;
    for (int w = 0; w < 8; ++w)
      s[k].requests.push_back({net::Op::Write, 1, buf + 4096 * k + 256 * w, std::vector<uint8_t>(256, 1), 0,
                               k < 2 && w % 4 != 3, k < 2 && w % 4 == 3});
  }
  for (auto& x : s) g0.add_stream(&x);
  for (auto& x : s) g0.activate(0, &x, sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  for (auto& x : s) REQUIRE(x.responses.size() == 8);
  int whole = 0;
  for (int m = 0; m < 4; ++m) {  // stream m / 2's message m % 2: writes 4m to 4m + 3
    std::vector<size_t> at;
    for (size_t i = 0; i < order.size(); ++i)
      if (order[i] / 4 == m) at.push_back(i);
    whole += at.back() - at.front() == 3;
  }
  return whole;
}
}  // namespace

TEST_CASE("the port interleaves its streams write by write", "[gpu][write]") { CHECK(messages_whole(false) == 0); }

TEST_CASE("toward a block that reads a stream's packets whole, the port keeps to one stream for a packet",
          "[gpu][write]") {
  CHECK(messages_whole(true) == 4);
}

namespace {
// A memory-to-memory copy programmed as a copy engine descriptor: block b of
// the source goes to the same offset of the destination on one peer.
struct MemoryCopy : gpu::CopyClient {
  gpu::Gpu& gpu;
  uint32_t dst;
  uint64_t dst_addr, src_addr, bytes;
  uint64_t acked = 0;
  std::function<void()> on_done;
  MemoryCopy(gpu::Gpu& g, uint32_t d, uint64_t da, uint64_t sa, uint64_t n)
      : gpu(g), dst(d), dst_addr(da), src_addr(sa), bytes(n) {}
  int port_of(uint64_t) const override { return 0; }
  void fill(uint64_t b, net::Packet* p) override {
    p->dst = dst;
    p->addr = dst_addr + b * 128;
    std::memcpy(p->data, gpu.memory().at(src_addr + b * 128, p->payload_bytes), p->payload_bytes);
  }
  void on_response(net::Packet*) override {
    if (++acked == (bytes + 127) / 128 && on_done) on_done();
  }
  void on_error(const std::string& why) override { FAIL(why); }
  gpu::CopyDescriptor descriptor() const {
    gpu::CopyDescriptor d;
    d.op = net::Op::Write;
    d.bytes = bytes;
    d.end = (bytes + 127) / 128;
    d.acked = true;
    return d;
  }
};
}  // namespace

TEST_CASE("a copy of a buffer between two GPUs lands byte-exact at line rate", "[gpu][copy]") {
  Config cfg;
  auto plat = star(2, cfg);
  auto& g0 = *plat->gpus()[0];
  auto& g1 = *plat->gpus()[1];
  const uint64_t bytes = (1 << 20) + 100;  // not a whole number of packets
  const uint64_t src = g0.memory().alloc(bytes);
  g1.memory().alloc(512);  // the destination sits at another address
  const uint64_t dst = g1.memory().alloc(bytes + 256);
  uint8_t* s = g0.memory().at(src, bytes);
  for (uint64_t i = 0; i < bytes; ++i) s[i] = test::pattern(0, 1, i);
  MemoryCopy copy(g0, 1, dst + 128, src, bytes);
  sc_core::sc_time done;
  int completions = 0;
  copy.on_done = [&] {
    done = sc_core::sc_time_stamp();
    ++completions;
  };
  g0.copy_engine().start(copy.descriptor(), {}, copy);
  sc_core::sc_start();
  const uint64_t packets = (bytes + 127) / 128;
  CHECK(g0.copy_engine().issued() == packets);
  CHECK(completions == 1);
  CHECK(g0.copy_engine().all_issued());
  const uint8_t* d = g1.memory().at(dst, bytes + 256);
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < bytes; ++i) wrong += d[128 + i] != test::pattern(0, 1, i);
  CHECK(wrong == 0);
  // Nothing written outside the destination range.
  for (int i = 0; i < 128; ++i) CHECK(d[i] == 0);
  for (int i = 0; i < 28; ++i) CHECK(d[128 + bytes + i] == 0);
  // Payload rate: 128 of every 144 bytes on a 25 GB/s link; the copy starts
  // after one memory read (at most 360 cycles) and ends with the last ack.
  const double GBps = bytes / ns(done);
  INFO("copy ran at " << GBps << " GB/s");
  CHECK(GBps >= 0.93 * 25.0 * 128 / 144);
  CHECK(GBps <= 25.0 * 128 / 144);
  CHECK(plat->pool().in_use() == 0);
}

TEST_CASE("the copy engine alone: its wave controller issues a wave only when a counter frees, each wave in its own order",
          "[gpu][copy][waves]") {
  // One GPU whose only port leads to a stub: the test plays the network and
  // says when each block's result is back.
  net::PacketPool pool(net::PacketFormat{});
  const gpu::GpuConfig gc = stub_gpu_config(4096);
  gpu::Gpu g("gpu0", 0, 1, gc, pool);
  test::StubPort net("net", pool);
  const double bw = 25.0;
  const sc_time lat(10, SC_NS);
  net.configure(bw, lat, gc.rx_buffer_bytes);
  g.configure_port(0, bw, lat, 1 << 20);  // the network takes everything
  net.connect(g.in(0), g.out(0));

  struct Reduce : gpu::CopyClient {
    std::string error;
    int port_of(uint64_t) const override { return 0; }
    void fill(uint64_t b, net::Packet* p) override {
      p->dst = 1;
      p->addr = net::kMulticastBase + b * 128;
      p->count = 1;
    }
    void on_response(net::Packet*) override { FAIL("reduction writes are not answered"); }
    void on_error(const std::string& why) override {
      error = why;
      sc_core::sc_stop();
    }
  } client;
  gpu::WaveParams w;
  w.waves = 2;
  w.wave_bytes = 512;  // 4 blocks a wave
  w.counter_timeout = sc_time(50, sc_core::SC_US);
  gpu::CopyEngine& ce = g.copy_engine();
  CHECK(std::string(ce.name()) == "gpu0.copy_engine");
  gpu::CopyDescriptor d;
  d.op = net::Op::ReduceWrite;
  d.bytes = 32 * 128;
  d.end = 32;
  d.counted = true;
  d.order_seed = 5;
  ce.start(d, w, client);
  auto blocks = [&](size_t from, size_t to) {
    std::vector<uint64_t> v;
    for (size_t i = from; i < to; ++i) v.push_back((net.arrivals()[i].pkt.addr - net::kMulticastBase) / 128);
    return v;
  };
  auto sorted = [](std::vector<uint64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  sc_core::sc_start(sc_time(5, sc_core::SC_US));
  // Two waves' credits: blocks 0-7 and no more, the first after one memory read.
  REQUIRE(net.arrivals().size() == 8);
  CHECK(net.arrivals()[0].head == sc_time(100, SC_NS) + lat);
  CHECK(sorted(blocks(0, 4)) == std::vector<uint64_t>{0, 1, 2, 3});
  CHECK(sorted(blocks(4, 8)) == std::vector<uint64_t>{4, 5, 6, 7});
  std::ostringstream held;
  ce.report(held);
  CHECK(held.str() == "  gpu0.copy_engine: issued 8 of 32 blocks, 2 waves outstanding (waiting for a counter)\n");
  // Wave 1's results come back first: its counter frees and wave 2 goes.
  for (uint64_t b = 4; b < 8; ++b) ce.complete(b);
  sc_core::sc_start(sc_time(5, sc_core::SC_US));
  REQUIRE(net.arrivals().size() == 12);
  CHECK(sorted(blocks(8, 12)) == std::vector<uint64_t>{8, 9, 10, 11});
  // Three of wave 0's four are not enough.
  for (uint64_t b = 0; b < 3; ++b) ce.complete(b);
  sc_core::sc_start(sc_time(5, sc_core::SC_US));
  CHECK(net.arrivals().size() == 12);
  ce.complete(3);
  sc_core::sc_start(sc_time(5, sc_core::SC_US));
  CHECK(net.arrivals().size() == 16);
  // The engine's own order: not the address order in every wave.
  bool shuffled = false;
  for (size_t wave = 0; wave < 4; ++wave) shuffled |= blocks(4 * wave, 4 * wave + 4) != sorted(blocks(4 * wave, 4 * wave + 4));
  CHECK(shuffled);
  CHECK(client.error.empty());
  // Nothing more comes back: after the timeout the engine says which wave could not start.
  sc_core::sc_start();
  CHECK(client.error == "gpu0.copy_engine: the copy engine found no wave counter free for 50 us "
                        "(gpu.copy_engine.counter_timeout_us); wave 4 could not start");
}

namespace {
// One GPU whose only port leads to a stub that takes everything: the order in
// which its copy engine issues a descriptor of `blocks` reduction writes
// under waves w, as the blocks arrive.
struct OrderRig {
  net::PacketPool pool{net::PacketFormat{}};
  gpu::GpuConfig gc = stub_gpu_config(4096);
  gpu::Gpu g;
  test::StubPort net;
  struct Client : gpu::CopyClient {
    int port_of(uint64_t) const override { return 0; }
    void fill(uint64_t b, net::Packet* p) override {
      p->dst = 1;
      p->addr = net::kMulticastBase + b * 128;
      p->count = 1;
    }
    void on_response(net::Packet*) override { FAIL("reduction writes are not answered"); }
    void on_error(const std::string& why) override { FAIL(why); }
  } client;
  OrderRig(const std::string& name, uint64_t blocks, const gpu::WaveParams& w, uint32_t rank)
      : g(("gpu_" + name).c_str(), 0, 1, gc, pool), net(("net_" + name).c_str(), pool) {
    net.configure(25.0, sc_time(10, SC_NS), gc.rx_buffer_bytes);
    g.configure_port(0, 25.0, sc_time(10, SC_NS), 1 << 20);
    net.connect(g.in(0), g.out(0));
    gpu::CopyDescriptor d;
    d.op = net::Op::ReduceWrite;
    d.bytes = blocks * 128;
    d.end = blocks;
    d.counted = w.waves > 0;  // with waves, the counters are enough for every wave at once
    d.order_seed = 5;
    d.order_rank = rank;
    g.copy_engine().start(d, w, client);
  }
  std::vector<uint64_t> order() const {
    std::vector<uint64_t> v;
    for (const auto& a : net.arrivals()) v.push_back((a.pkt.addr - net::kMulticastBase) / 128);
    return v;
  }
};

// Every block of [0, n) exactly once, the k-th issued inside the window of k.
bool within_windows(const std::vector<uint64_t>& order, uint64_t n, uint64_t window) {
  std::vector<int> seen(n, 0);
  for (uint64_t k = 0; k < order.size(); ++k) {
    const uint64_t b = order[k];
    if (b >= n || seen[b]++ || b / window != k / window) return false;
  }
  return order.size() == n;
}
}  // namespace

TEST_CASE("the copy engine issues each window of blocks in its own order, every block once, and the whole-range order "
          "does not stay in a window",
          "[gpu][copy][order]") {
  // 100 blocks without waves: six windows of 16 and one of 4.
  const uint64_t n = 100, window = 16;
  gpu::WaveParams windowed;
  windowed.order_window = window;
  gpu::WaveParams whole;  // order_window 0: the whole range is one permutation (order=arbitrary)
  OrderRig a("a", n, windowed, 0), again("again", n, windowed, 0), other("other", n, windowed, 1),
      unbounded("unbounded", n, whole, 0);
  sc_core::sc_start();
  const auto in_order = [](std::vector<uint64_t> v) { return std::is_sorted(v.begin(), v.end()); };
  CHECK(within_windows(a.order(), n, window));
  CHECK(within_windows(other.order(), n, window));
  CHECK_FALSE(in_order(a.order()));
  // Deterministic: the same seed and rank give the same order; another rank its own.
  CHECK(again.order() == a.order());
  CHECK(other.order() != a.order());
  // The last window, 4 blocks, is a permutation of 96..99.
  const std::vector<uint64_t> order = a.order();
  CHECK(std::vector<uint64_t>(order.begin() + 96, order.end()) != std::vector<uint64_t>{96, 97, 98, 99});
  // Without a window, blocks leave their window: GPUs can be a message apart on one block.
  std::vector<uint64_t> u = unbounded.order();
  CHECK_FALSE(within_windows(u, n, window));
  std::sort(u.begin(), u.end());
  for (uint64_t b = 0; b < n; ++b) CHECK(u[b] == b);
  for (auto* r : {&a, &again, &other, &unbounded}) CHECK(r->pool.in_use() == 0);
}

TEST_CASE("the copy engine's order window changes nothing where a wave is shorter, and is kept inside a longer wave",
          "[gpu][copy][order][waves]") {
  // 96 blocks under waves of 8 blocks, enough counters for every wave at once.
  const uint64_t n = 96;
  gpu::WaveParams w;
  w.waves = 16;
  w.wave_bytes = 8 * 128;
  w.counter_timeout = sc_time(50, sc_core::SC_US);
  gpu::WaveParams wide = w, none = w, narrow = w, long_waves = w;
  wide.order_window = 32;   // longer than a wave: the wave's own order
  narrow.order_window = 4;  // two windows in each wave
  long_waves.wave_bytes = 48 * 128;
  long_waves.order_window = 16;  // three windows in each wave of 48
  OrderRig by_wide("wide", n, wide, 0), by_none("none", n, none, 0), by_narrow("narrow", n, narrow, 0),
      by_long("long", n, long_waves, 0);
  sc_core::sc_start(sc_time(5, sc_core::SC_US));  // the counters never free: the run stops with them held
  CHECK(by_wide.order() == by_none.order());
  CHECK(within_windows(by_none.order(), n, 8));
  CHECK_FALSE(within_windows(by_none.order(), n, 4));
  CHECK(within_windows(by_narrow.order(), n, 4));
  CHECK(within_windows(by_long.order(), n, 16));
}

TEST_CASE("a kernel's remaining work slows while collectives hold SMs and speeds up when they end", "[gpu][compute]") {
  using Phase = gpu::ComputeEngine::Phase;
  const sc_time us(1, sc_core::SC_US);
  gpu::ComputeEngine shared("shared"), alone("alone");
  shared.set_sms(80);  // a V100; `alone` keeps 0: collectives take nothing from it
  std::vector<double> ends, took, alone_ends;
  std::ostringstream stall;
  const auto record = [&](gpu::ComputeEngine& c, std::vector<double>& e) {
    return [&, engine = &c, list = &e] {
      list->push_back(sc_core::sc_time_stamp() / us);
      if (list == &ends) took.push_back(engine->took() / us);
    };
  };
  shared.run(Phase::Backward, 0, 1000 * us, record(shared, ends));
  alone.run(Phase::Backward, 0, 1000 * us, record(alone, alone_ends));
  sc_core::sc_spawn([&] {
    // A ring of 12 channels from 100 to 300 us inside the 1000 us kernel:
    // 200 us at 68/80 of its speed leave 200 x 12/80 = 30 us of work over.
    sc_core::wait(100 * us);
    shared.share(12);
    alone.share(12);
    shared.report(stall);  // what the stall report says meanwhile
    sc_core::wait(200 * us);
    shared.share(-12);
    alone.share(-12);
    // A kernel of 68 us queued while a collective holds 12 SMs all along: 80 us.
    sc_core::wait(800 * us);
    shared.share(12);
    shared.run(Phase::Forward, 1, 68 * us, record(shared, ends));
    sc_core::wait(200 * us);
    shared.share(-12);
  });
  sc_core::sc_start();
  REQUIRE(ends.size() == 2);
  CHECK(ends[0] == Approx(1030).margin(1e-6));
  CHECK(took[0] == Approx(1030).margin(1e-6));
  CHECK(ends[1] == Approx(1180).margin(1e-6));
  CHECK(took[1] == Approx(80).margin(1e-6));
  REQUIRE(alone_ends.size() == 1);
  CHECK(alone_ends[0] == 1000);
  CHECK(shared.kernels() == 2);
  // At 100 us: 100 us done, 900 left at 68/80 of the speed.
  CHECK_THAT(stall.str(), Catch::Contains("backward kernel of layer 0 runs until 1158823529") &&
                              Catch::Contains("(at 68 of its 80 SMs: collectives hold 12)"));
}

namespace {
// Two GPUs, each one port to a stub: the test is the network between them.
// Their cores run NCCL's ring broadcast on 2 ranks (rank 0 copies its input
// and sends it, rank 1 receives it) on 4 KiB: 32 data packets of 128 B, one
// chunk.
struct CoresPair {
  net::PacketPool pool{net::PacketFormat{}};
  gpu::GpuConfig gc = stub_gpu_config(1 << 16);
  gpu::Gpu g0{"gpu0", 0, 1, gc, pool}, g1{"gpu1", 1, 1, gc, pool};
  test::StubPort s0{"s0", pool}, s1{"s1", pool};
  collectives::Program program = collectives::ring_program(collectives::Collective::Broadcast, 2, 1);
  std::unique_ptr<gpu::CoresCollective> c;
  bool done = false;
  size_t sent0 = 0, sent1 = 0;  // arrivals forwarded so far

  CoresPair() {
    for (auto [g, s] : {std::pair{&g0, &s0}, std::pair{&g1, &s1}}) {
      s->configure(25.0, sc_time(10, SC_NS), gc.rx_buffer_bytes);
      g->configure_port(0, 25.0, sc_time(10, SC_NS), 1 << 20);
      s->connect(g->in(0), g->out(0));
    }
    gpu::CoresParams cp;
    cp.simple = {64 * 1024, 2};
    cp.ll = cp.ll128 = cp.simple;
    c = std::make_unique<gpu::CoresCollective>(program, std::vector<gpu::Gpu*>{&g0, &g1},
                                               std::vector<std::vector<std::vector<int>>>{{{}, {0}}, {{0}, {}}},
                                               elements::DType::Float32, elements::RedOp::Sum, 7, cp);
    c->start(4096, [this] { done = true; });
  }
  // A copy of packet `a` as it arrived, queued at `to` to leave now;
  // `edit` may change it on the way.
  void forward(const test::Arrival& a, test::StubPort& to, const std::function<void(net::Packet*)>& edit = {}) {
    net::Packet* p = pool.get();
    uint8_t* data = p->data;
    *p = a.pkt;
    p->data = data;
    p->next = nullptr;
    std::memcpy(data, a.data.data(), a.data.size());
    if (edit) edit(p);
    to.send_at(sc_core::sc_time_stamp(), p);
  }
  // Forwards what arrived since the last call, each way, and runs on.
  void relay(int rounds) {
    for (int round = 0; round < rounds && !done; ++round) {
      for (; sent0 < s0.arrivals().size(); ++sent0) forward(s0.arrivals()[sent0], s1);
      for (; sent1 < s1.arrivals().size(); ++sent1) forward(s1.arrivals()[sent1], s0);
      sc_core::sc_start(sc_time(5, sc_core::SC_US));
    }
  }
};
}  // namespace

TEST_CASE("the cores alone: a chunk goes as its data, a fence on every ack, then the flag, and the receiver checks it",
          "[gpu][cores]") {
  CoresPair t;
  CHECK(std::string(t.g0.cores().name()) == "gpu0.cores");
  sc_core::sc_start(sc_time(5, sc_core::SC_US));
  // Rank 0's data, all of it, and no flag: the fence waits for the acks.
  REQUIRE(t.s0.arrivals().size() == 32);
  for (const test::Arrival& a : t.s0.arrivals()) {
    CHECK(a.pkt.op == net::Op::Write);
    CHECK(a.pkt.dst == 1);
    CHECK(a.pkt.payload_bytes == 128);
  }
  std::ostringstream waiting;
  t.g0.report_held(waiting);
  CHECK_THAT(waiting.str(), Catch::Contains("gpu0 cores queue 0: pass 0 operation 1 (s) sending"));
  CHECK_THAT(waiting.str(), Catch::Contains("32 acks due"));
  // The data reaches rank 1, whose memory acknowledges every write; the
  // acks wait in the test until it lets them go.
  for (; t.sent0 < 32; ++t.sent0) t.forward(t.s0.arrivals()[t.sent0], t.s1);
  sc_core::sc_start(sc_time(5, sc_core::SC_US));
  REQUIRE(t.s1.arrivals().size() == 32);
  CHECK(t.s0.arrivals().size() == 32);  // still no flag
  for (const test::Arrival& a : t.s1.arrivals()) CHECK(a.pkt.op == net::Op::WriteAck);
  for (; t.sent1 < 32; ++t.sent1) t.forward(t.s1.arrivals()[t.sent1], t.s0);
  sc_core::sc_start(sc_time(5, sc_core::SC_US));
  // The last ack releases the flag: one 8-byte store of transfer count 1.
  REQUIRE(t.s0.arrivals().size() == 33);
  const test::Arrival& flag = t.s0.arrivals().back();
  CHECK(flag.pkt.payload_bytes == 8);
  CHECK(flag.as<uint64_t>() == 1);
  // The flag lands; rank 1 takes the data, checks it, frees the slot with a
  // flag back; each flag's ack returns to its sender.
  t.relay(8);
  CHECK(t.done);
  CHECK(t.c->wrong() == 0);
  CHECK(t.c->done_fraction() == 1.0);
}

TEST_CASE("the cores alone: an element changed on the wire is one wrong element at the receiver", "[gpu][cores]") {
  CoresPair t;
  sc_core::sc_start(sc_time(5, sc_core::SC_US));
  REQUIRE(t.s0.arrivals().size() == 32);
  // The third packet's fifth float arrives one higher.
  t.forward(t.s0.arrivals()[0], t.s1);
  t.forward(t.s0.arrivals()[1], t.s1);
  t.forward(t.s0.arrivals()[2], t.s1, [](net::Packet* p) { reinterpret_cast<float*>(p->data)[4] += 1; });
  t.sent0 = 3;
  t.relay(10);
  CHECK(t.done);
  CHECK(t.c->wrong() == 1);
}
