// Link ends (net/port.h) on a netlist built here: one sender module with an
// OutPort, one receiver module with an InPort. Link timing must be exact,
// credit-based flow control must lose, duplicate and reorder nothing and never
// overrun the receiver's buffer, and an unthrottled link must run at full rate.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <systemc>
#include <vector>

#include "net/packet.h"
#include "net/port.h"

using namespace incsim;
using sc_core::sc_time;
using sc_core::SC_NS;

namespace {

constexpr double kBw = 25.0;                   // GB/s
const sc_time kLatency(40, SC_NS);             // wire latency
constexpr uint32_t kPayload = 128, kWire = 144;  // 128 B payload + 16 B header

// Sends `remaining[vc]` packets on each VC as fast as link and credits allow,
// each carrying (vc, sequence number) in its payload.
struct Sender : sc_core::sc_module {
  net::OutPort out;
  net::PacketPool& pool;
  Wakeup wake;
  uint64_t remaining[net::kNumVcs] = {};
  uint32_t seq[net::kNumVcs] = {};
  uint32_t payload = kPayload;
  unsigned vc_rr = 0;
  std::vector<sc_time> send_times;
  bool sent_without_credit = false;

  Sender(sc_core::sc_module_name n, net::PacketPool& p) : sc_module(n), out("out"), pool(p) {
    SC_HAS_PROCESS(Sender);
    SC_METHOD(run);
    sensitive << wake.event;
    dont_initialize();
  }
  void start_at(const sc_time& t) { wake.after(t); }
  bool pending() const {
    uint64_t n = 0;
    for (uint64_t r : remaining) n += r;
    return n > 0;
  }

  void run() {
    wake.fired();
    const sc_time now = sc_core::sc_time_stamp();
    out.absorb_credits(now);
    const uint16_t wire = pool.format().wire_bytes(payload);
    while (pending() && out.link_free(now)) {
      int vc = -1;
      for (int k = 0; k < net::kNumVcs && vc < 0; ++k) {
        const int v = static_cast<int>((vc_rr + k) % net::kNumVcs);
        if (remaining[v] && out.has_credit(v, wire)) vc = v;
      }
      if (vc < 0) {
        out.wait_for_credit(now);
        break;
      }
      vc_rr = vc + 1;
      net::Packet* p = pool.get();
      p->vc = static_cast<uint8_t>(vc);
      p->payload_bytes = static_cast<uint16_t>(payload);
      p->wire_bytes = wire;
      const uint32_t word[2] = {static_cast<uint32_t>(vc), seq[vc]++};
      std::memcpy(p->data, word, sizeof(word));
      --remaining[vc];
      send_times.push_back(now);
      out.send(p, now, now);
    }
    if (pending() && !out.link_free(now)) wake.at(out.busy_until());
  }
};

struct Arrival {
  int vc;
  uint32_t seq;
  sc_time called, t_head, t_tail, taken;
};

// Holds each packet until its tail is in, then takes it out of its buffer one
// `hold` apart per VC (not before `release_from[vc]`) and returns the credit.
struct Receiver : sc_core::sc_module, net::PacketSink {
  net::InPort in;
  net::PacketPool& pool;
  sc_core::sc_event wake;
  net::PacketFifo fifo[net::kNumVcs];
  sc_time hold[net::kNumVcs];
  sc_time release_from[net::kNumVcs];
  sc_time busy_until[net::kNumVcs];
  uint32_t buffer_bytes;  // the credits the sender was given, per VC
  uint32_t held[net::kNumVcs] = {};
  uint32_t max_held[net::kNumVcs] = {};
  std::vector<Arrival> arrivals;  // in the order the receiver took them
  std::vector<Arrival> called;    // in the order receive() was called

  Receiver(sc_core::sc_module_name n, net::PacketPool& p, uint32_t buffer)
      : sc_module(n), in("in", this, 0), pool(p), buffer_bytes(buffer) {
    SC_HAS_PROCESS(Receiver);
    SC_METHOD(run);
    sensitive << wake;
    dont_initialize();
  }

  void receive(int port, net::Packet* p) override {
    // The buffer space is claimed from the moment the sender commits the packet.
    held[p->vc] += p->wire_bytes;
    max_held[p->vc] = std::max(max_held[p->vc], held[p->vc]);
    called.push_back({p->vc, seq_of(p), sc_core::sc_time_stamp(), p->t_head, p->t_tail, {}});
    fifo[p->vc].push(p);
    schedule();
  }

  static uint32_t seq_of(const net::Packet* p) {
    uint32_t word[2];
    std::memcpy(word, p->data, sizeof(word));
    return word[1];
  }

  sc_time ready_at(int vc) const {
    return std::max({fifo[vc].front()->t_tail, busy_until[vc], release_from[vc]});
  }
  void schedule() {
    const sc_time now = sc_core::sc_time_stamp();
    sc_time next = sc_core::sc_max_time();
    for (int vc = 0; vc < net::kNumVcs; ++vc)
      if (!fifo[vc].empty()) next = std::min(next, ready_at(vc));
    if (next != sc_core::sc_max_time()) wake.notify(next > now ? next - now : sc_core::SC_ZERO_TIME);
  }

  void run() {
    const sc_time now = sc_core::sc_time_stamp();
    for (int vc = 0; vc < net::kNumVcs; ++vc) {
      while (!fifo[vc].empty() && ready_at(vc) <= now) {
        net::Packet* p = fifo[vc].pop();
        arrivals.push_back({vc, seq_of(p), {}, p->t_head, p->t_tail, now});
        held[vc] -= p->wire_bytes;
        in.release(p, sc_core::SC_ZERO_TIME);
        pool.put(p);
        busy_until[vc] = now + hold[vc];
      }
    }
    schedule();
  }
};

struct Netlist {
  net::PacketPool pool{net::PacketFormat{}};
  Sender tx;
  Receiver rx;
  explicit Netlist(uint32_t buffer_bytes) : tx("tx", pool), rx("rx", pool, buffer_bytes) {
    tx.out.configure(kBw, kLatency, buffer_bytes, &tx.wake);
    tx.out.socket.bind(rx.in.socket);
  }
};

// Every sequence number 0..n-1 of `vc` exactly once, in order.
void require_in_order(const std::vector<Arrival>& got, int vc, uint32_t n) {
  std::vector<uint32_t> seqs;
  for (const auto& a : got)
    if (a.vc == vc) seqs.push_back(a.seq);
  REQUIRE(seqs.size() == n);
  for (uint32_t i = 0; i < n; ++i) {
    if (seqs[i] != i) FAIL("vc" << vc << ": packet " << i << " has sequence number " << seqs[i]);
  }
}

}  // namespace

TEST_CASE("a pool of 4 KiB packets gives a small block a small packet, and takes each back to its own kind", "[net][pool]") {
  net::PacketPool pool{net::PacketFormat{26, 1, 4096}};
  net::Packet* big = pool.get();
  net::Packet* block = pool.get(128);
  CHECK(big->capacity == 4096);
  CHECK(block->capacity == net::PacketPool::kSmallBytes);
  CHECK(pool.get(4096)->capacity == 4096);
  CHECK(pool.get(net::PacketPool::kSmallBytes + 1)->capacity == 4096);
  std::memset(block->data, 7, block->capacity);  // all of it is its own
  const uint64_t slabs = pool.capacity();       // a slab of each kind
  pool.put(block);
  // The small slab's packets, the one given back among them, without growing.
  bool again = false;
  for (int i = 0; i < 1024; ++i) {
    net::Packet* p = pool.get(64);
    CHECK(p->capacity == net::PacketPool::kSmallBytes);
    again = again || p == block;
  }
  CHECK(again);
  CHECK(pool.capacity() == slabs);
  pool.put(big);  // and a large one goes back to the large ones
  CHECK(pool.get()->capacity == 4096);
  // Where every packet is small, there is one kind.
  net::PacketPool gpu{net::PacketFormat{16, 16, 128}};
  CHECK(gpu.get(64)->capacity == 128);
}

TEST_CASE("a 144 B packet on 25 GB/s arrives after the latency, its tail 5.76 ns later", "[net][timing]") {
  Netlist n(4 * kWire);
  n.tx.remaining[0] = 2;
  n.tx.start_at(sc_time(100, SC_NS));
  sc_core::sc_start();
  REQUIRE(n.rx.arrivals.size() == 2);
  REQUIRE(n.tx.send_times.size() == 2);
  CHECK(n.tx.send_times[0] == sc_time(100, SC_NS));
  const Arrival& a = n.rx.called[0];
  CHECK(a.called == sc_time(100, SC_NS));  // committed when it leaves
  CHECK(a.t_head == sc_time(140, SC_NS));
  CHECK(a.t_tail == sc_time(145.76, SC_NS));
  CHECK(a.t_tail - a.t_head == sc_time::from_value(5760));  // exactly, in ps
  CHECK(n.rx.arrivals[0].taken == sc_time(145.76, SC_NS));
  // The second leaves when the wire is free: back to back.
  CHECK(n.tx.send_times[1] == sc_time(105.76, SC_NS));
  CHECK(n.rx.called[1].t_head == sc_time(145.76, SC_NS));
  CHECK(n.rx.called[1].t_tail == sc_time(151.52, SC_NS));
  CHECK(n.tx.out.bytes_sent() == 2 * kWire);
  CHECK(n.tx.out.packets_sent() == 2);
}

TEST_CASE("a header-only packet takes one flit time on the wire", "[net][timing]") {
  Netlist n(4 * kWire);
  n.tx.payload = 0;
  n.tx.remaining[1] = 1;
  n.tx.start_at(sc_time(10, SC_NS));
  sc_core::sc_start();
  REQUIRE(n.rx.called.size() == 1);
  CHECK(n.rx.called[0].t_head == sc_time(50, SC_NS));
  CHECK(n.rx.called[0].t_tail == sc_time(50.64, SC_NS));  // 16 B at 25 GB/s
  CHECK(n.tx.out.bytes_sent() == 16);
}

TEST_CASE("with credit for one packet the next leaves when the credit is back", "[net][credits]") {
  // Credit returns at release (tail arrival) plus the wire latency back.
  Netlist n(kWire);
  n.tx.remaining[0] = 3;
  n.tx.start_at(sc_time(100, SC_NS));
  sc_core::sc_start();
  REQUIRE(n.tx.send_times.size() == 3);
  const sc_time loop = kLatency + sc_time(5.76, SC_NS) + kLatency;
  CHECK(n.tx.send_times[1] - n.tx.send_times[0] == loop);
  CHECK(n.tx.send_times[2] - n.tx.send_times[1] == loop);
  CHECK(n.rx.max_held[0] == kWire);
  require_in_order(n.rx.arrivals, 0, 3);
}

TEST_CASE("credit backpressure loses nothing and duplicates nothing and keeps order", "[net][credits]") {
  // A 2-packet buffer emptied one packet per 100 ns: the link could carry
  // one per 5.76 ns, and the credit loop (85.76 ns) two per 85.76 ns, so the
  // sender is throttled by credits throughout.
  const uint32_t n_packets = 1000;
  Netlist n(2 * kWire);
  n.rx.hold[0] = sc_time(100, SC_NS);
  n.tx.remaining[0] = n_packets;
  n.tx.start_at(sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  CHECK_FALSE(n.tx.pending());
  require_in_order(n.rx.arrivals, 0, n_packets);
  // Never more in the buffer than the credits allow.
  CHECK(n.rx.max_held[0] <= 2 * kWire);
  CHECK(n.rx.max_held[0] == 2 * kWire);  // and the buffer was used
  // The receiver sets the pace: one packet per 100 ns.
  const sc_time last = n.rx.arrivals.back().taken;
  CHECK(last >= sc_time(100.0 * (n_packets - 1), SC_NS));
  CHECK(last <= sc_time(100.0 * (n_packets - 1) + 500, SC_NS));
  CHECK(n.pool.in_use() == 0);
  CHECK(n.pool.capacity() == 1024);  // recycled: never more than a few in flight
}

TEST_CASE("credits are per virtual channel: a blocked VC does not stop the other", "[net][credits]") {
  constexpr int kReq = net::kRequestVc, kResp = net::kResponseVc;
  const uint32_t buffer = net::round_trip_bytes(kBw, kLatency, sc_core::SC_ZERO_TIME, kWire);
  Netlist n(buffer);
  n.rx.release_from[kReq] = sc_time(2, sc_core::SC_US);  // request VC drains only after 2 us
  n.tx.remaining[kReq] = 100;
  n.tx.remaining[kResp] = 100;
  n.tx.start_at(sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  require_in_order(n.rx.arrivals, kReq, 100);
  require_in_order(n.rx.arrivals, kResp, 100);
  CHECK(n.rx.max_held[kReq] <= buffer);
  CHECK(n.rx.max_held[kResp] <= buffer);
  int req_before = 0, resp_before = 0;
  for (const auto& a : n.rx.called) {
    if (a.called < sc_time(2, sc_core::SC_US)) (a.vc == kReq ? req_before : resp_before)++;
  }
  CHECK(req_before == static_cast<int>(buffer / kWire));  // only what the VC's credits allow
  CHECK(resp_before == 100);  // the response VC was never blocked
}

TEST_CASE("an unthrottled link runs at full rate", "[net][utilisation]") {
  const uint32_t n_packets = 5000;
  Netlist n(net::round_trip_bytes(kBw, kLatency, sc_core::SC_ZERO_TIME, kWire));
  n.tx.remaining[0] = n_packets;
  n.tx.start_at(sc_core::SC_ZERO_TIME);
  sc_core::sc_start();
  require_in_order(n.rx.arrivals, 0, n_packets);
  const sc_time first = n.tx.send_times.front();
  const sc_time last_tail = n.rx.arrivals.back().t_tail;
  const double busy_ns = (last_tail - first - kLatency).to_seconds() * 1e9;
  const double ideal_ns = n_packets * kWire / kBw;
  INFO("busy " << busy_ns << " ns, ideal " << ideal_ns << " ns");
  CHECK(ideal_ns / busy_ns >= 0.999);
  CHECK(ideal_ns / busy_ns <= 1.0 + 1e-9);
  CHECK(n.rx.max_held[0] <= net::round_trip_bytes(kBw, kLatency, sc_core::SC_ZERO_TIME, kWire));
  CHECK(n.pool.capacity() == 1024);  // 5000 packets through a pool of one slab
}

TEST_CASE("round_trip_bytes covers a credit loop at line rate", "[net][credits]") {
  const uint32_t b = net::round_trip_bytes(kBw, kLatency, sc_time(150, SC_NS), kWire);
  // (2 x 40 + 150 + 2 x 5.76) ns at 25 GB/s = 6038 B, whole packets.
  CHECK(b % kWire == 0);
  CHECK(b >= 6038);
  CHECK(b <= 6038 + 3 * kWire);
}

TEST_CASE("PacketPool recycles and grows only to the packets in flight at once", "[net][pool]") {
  net::PacketPool pool{net::PacketFormat{}};
  CHECK(pool.capacity() == 0);
  std::vector<net::Packet*> live;
  for (int round = 0; round < 10000; ++round) {
    for (int i = 0; i < 10; ++i) live.push_back(pool.get());
    CHECK(pool.in_use() == 10);
    for (auto* p : live) pool.put(p);
    live.clear();
  }
  CHECK(pool.capacity() == 1024);
  CHECK(pool.in_use() == 0);
  // Ids stay unique across reuse.
  net::Packet* a = pool.get();
  net::Packet* b = pool.get();
  CHECK(a != b);
  CHECK(a->id != b->id);
  CHECK(a->data != b->data);
  std::memset(a->data, 0xab, pool.format().max_payload_bytes);  // each owns max_payload bytes
  std::memset(b->data, 0xcd, pool.format().max_payload_bytes);
  CHECK(a->data[pool.format().max_payload_bytes - 1] == 0xab);
  pool.put(a);
  pool.put(b);
  // More in flight than one slab: it grows, and only then.
  for (int i = 0; i < 1500; ++i) live.push_back(pool.get());
  CHECK(pool.capacity() == 2048);
  for (auto* p : live) pool.put(p);
  CHECK(pool.in_use() == 0);
}

TEST_CASE("PacketFormat sizes packets in flits", "[net]") {
  net::PacketFormat f;
  CHECK(f.wire_bytes(128) == 144);
  CHECK(f.wire_bytes(0) == 16);
  CHECK(f.wire_bytes(8) == 32);
  CHECK(f.wire_bytes(17) == 48);
}
