#pragma once
// A GPU endpoint: several network ports, a memory system that serves remote
// loads and stores and acknowledges writes (Klenk §V), a copy engine (DMA,
// its own module: gpu3.copy_engine), a compute engine for a training step's
// kernels (gpu3.compute), and core-initiated traffic for software
// collectives, run by an EventHandler (what takes the GPU's events for one
// program: timers, flags, regions).
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <queue>
#include <string>
#include <systemc>
#include <vector>

#include "core/log.h"
#include "core/process.h"
#include "core/trace.h"
#include "net/block.h"
#include "gpu/memory.h"
#include "net/port.h"
#include "core/param.h"

namespace incsim::gpu {

struct GpuConfig {
  double clock_ghz;              // cycles to time
  uint32_t mem_latency_cycles;   // Klenk §V: 180 cycles, an L2 hit on Volta
  uint32_t mem_jitter_cycles;    // Klenk §V: plus a random [0, 180)
  uint32_t rx_buffer_bytes = 0;  // per port and VC
  uint32_t max_responses;        // responses a port's memory pipeline holds
  uint64_t seed;
  // VCs of its class a packet may leave on: 1, the class's first
  // (switch.vc_alloc=class); under per-packet allocation 2, the first set's
  // two, where the network's rule splits a class into sets, or 4.
  int inject_vcs = 1;
};
inline const Param<double> kGpuClock{
    "gpu.clock_ghz", 1.53, Range::at_least(0.01).at_most(100),
    "GPU clock, GHz (V100 boost clock, NVIDIA Volta whitepaper; Klenk §V counts memory latency in cycles; "
    "hgx-h100: 1.98, the H100 SXM5 boost clock, NVIDIA H100 datasheet; nvl72: 1.837, the B200 SXM boost clock in "
    "TechPowerUp's GPU Database, NVIDIA publishes none)"};
inline const Param<uint32_t> kGpuMemLatency{"gpu.mem_latency_cycles", 180, Range::at_least(0).at_most(1e6),
                                            "static memory latency, cycles (Klenk §V: a Volta L2 hit)"};
inline const Param<uint32_t> kGpuMemJitter{"gpu.mem_jitter_cycles", 180, Range::at_least(0).at_most(1e6),
                                           "plus a random [0, this) cycles (Klenk §V)"};
inline const Param<uint32_t> kGpuRxBuffer{
    "gpu.rx_buffer_bytes", 0, Range::at_least(0).at_most(16 << 20),
    "receive buffer per port and VC, bytes; 0 sizes it to cover the credit round trip"};
inline const Param<uint32_t> kGpuMaxResponses{
    "gpu.max_responses", 0, Range::at_least(0).at_most(1 << 20),
    "responses one port's memory pipeline holds; 0 covers the largest memory latency at line rate"};

// Produces the write packets of one transfer on one port (a software
// collective's chunk, a copy engine's buffer). The port pulls packets when
// its link and credits allow, so nothing is generated before it can leave.
class TxStream {
 public:
  virtual ~TxStream() = default;
  // Bytes on the wire of the next packet (PacketFormat::wire_bytes, or less
  // for a sub-packet without a head flit), 0 when there is nothing more to send.
  virtual uint32_t next_wire_bytes(const net::PacketFormat& f) const = 0;
  virtual void fill(net::Packet* p) = 0;  // dst, addr, op, payload_bytes and data
  virtual void on_response(net::Packet* p) = 0;     // an ack or read data came back
  uint32_t id = 0;                                  // set by Gpu::add_stream
  int port = -1;                                    // the port it last sent on (Gpu::activate)
};

// What runs on a GPU for one program (a collective rank, a NIC table, a
// traffic generator): it takes the GPU's events, timers, watched flags,
// region reads and writes, NIC messages.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_timer(uint64_t tag) = 0;
  // A watched word was written and a polling load has seen it.
  virtual void on_flag(uint64_t addr) = 0;
  // For stall reports: one line per thing the program still waits for.
  virtual void report(std::ostream& os, const std::string& prefix) const = 0;
  // Multicast regions (Klenk §IV-A) are the program's buffers: it serves a
  // pull request's read of `bytes` at a region address into `out`, and takes
  // posted writes (multicast writes, evicted partials, Op::PostedWrite),
  // timing what follows from p.t_tail, when the last flit is in.
  virtual void read_region(uint64_t addr, uint32_t bytes, uint8_t* out);
  virtual void on_region_write(const net::Packet& p);
  // A NIC's Reduce or Gather message packet (MultiTree §IV-A), whole.
  virtual void on_message(const net::Packet& p);
};

class CopyEngine;
class ComputeEngine;
class Cores;

class Gpu : public sc_core::sc_module, public net::PacketSink, public net::Block {
 public:
  // Makes a block that lives inside the endpoint beside its copy engine (a
  // NIC, an architect's own engine), so it is its child; the Gpu owns it.
  using Attach = std::function<std::unique_ptr<sc_core::sc_module>(Gpu&)>;
  // attach: makes such a block.
  Gpu(sc_core::sc_module_name name, int index, int ports, const GpuConfig& cfg, net::PacketPool& pool,
      const Attach& attach = {});
  ~Gpu() override;

  int index() const { return index_; }
  int num_ports() const override { return static_cast<int>(ports_.size()); }
  net::InPort& in(int p) override { return *ports_[p]->rx_port; }
  net::OutPort& out(int p) override { return ports_[p]->link; }
  void configure_port(int p, double bw_GBps, sc_core::sc_time latency, uint32_t peer_buffer_bytes) override;
  uint32_t buffer_bytes(int) const override { return cfg_.rx_buffer_bytes; }
  void peer_packets(int p, uint32_t bytes) override { ports_[static_cast<size_t>(p)]->packet_reads = bytes; }
  uint64_t progress() const override;
  Memory& memory() { return memory_; }
  net::PacketPool& pool() { return pool_; }
  CopyEngine& copy_engine() { return *copy_engine_; }
  Cores& cores() { return *cores_; }
  ComputeEngine& compute() { return *compute_; }
  sc_core::sc_module* attached() { return attached_.get(); }  // what attach made, or nullptr
  // Its logger (gpu3): the programs it runs log their steps here, its ports each packet at trace.
  const log::Logger& log() const { return log_; }

  // --- what programs use ---
  // Several programs run on a GPU at once (collectives in flight, several
  // jobs' ranks): each owns the timers it sets, the flag words it watches,
  // the multicast-region addresses it serves and the streams it adds, and
  // nothing one does touches another's. A program attaches before it uses
  // the GPU (the stall report asks what it waits for); detach forgets its
  // timers, watches and regions. A program removes its streams itself.
  void attach(EventHandler& p);
  void detach(EventHandler& p);
  uint32_t add_stream(TxStream* s);  // returns its id; the id is reused once the stream is removed
  void remove_stream(TxStream* s);   // it sends no more; its pending activation is dropped
  // The port starts pulling s's packets after `delay` (the time to read the
  // first data from memory).
  void activate(int port, TxStream* s, const sc_core::sc_time& delay);
  // That time for a stream that starts on `port` now: the GPU's own access,
  // keyed by the port, the time and `stream`, which tells apart the streams
  // an engine starts on one port at once (Memory::latency; the copy
  // engine's, one per port: 0).
  sc_core::sc_time first_read(int port, uint64_t stream) const;
  // A single-word store (a flag) to a peer; its ack goes to stream `ack_to`.
  void store_word(int port, uint32_t dst, uint64_t addr, uint64_t value, uint32_t ack_to);
  // Sends a packet the program built (op, dst, addr, payload set) on the
  // request VC, ahead of the streams.
  void post(int port, net::Packet* p);
  void watch(EventHandler& p, uint64_t addr, uint64_t bytes);  // p.on_flag for writes in range
  // Pull reads of [lo, hi) (multicast addresses) and posted writes there go to p.
  void serve_region(EventHandler& p, uint64_t lo, uint64_t hi);
  // NIC messages (MultiTree's Reduce and Gather) go to p, the NIC's loaded
  // schedule table; nullptr: none.
  void take_messages(EventHandler* p) { messages_ = p; }
  void call_after(EventHandler& p, const sc_core::sc_time& delay, uint64_t tag);
  // The same timer unit serves the copy engine (CopyEngine::on_timer).
  void call_engine_after(const sc_core::sc_time& delay, uint64_t tag);
  void cancel_engine_timers();  // the copy engine no longer waits for them

  void receive(int port, net::Packet* p) override;
  void trace(sc_core::sc_trace_file* tf) const override;
  // Each port's round-robin over its streams and classes as elaboration left it.
  void rewind_arbiters() {
    for (auto& p : ports_) p->stream_rr = p->vc_rr = 0;
  }
  uint64_t report_held(std::ostream& os) const override;
  // Packets received, and the sum of their latencies from injection to the
  // last flit's arrival (Klenk §VI-D reports the average).
  uint64_t packets_received() const { return packets_received_; }
  // In SystemC time units, whole: a collective's share is a difference of two sums, exact.
  uint64_t latency_sum() const { return latency_sum_; }


 private:
  struct Timed {
    sc_core::sc_time at;
    uint64_t seq;
    uint64_t value;                 // a Packet* for responses, a tag for timers
    EventHandler* owner = nullptr;  // a program's timer or flag: whom it goes to
    bool operator>(const Timed& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  using TimedHeap = std::priority_queue<Timed, std::vector<Timed>, std::greater<Timed>>;
  struct Port {
    explicit Port(const char* n) : link(n) {}
    net::PacketFifo rx[net::kNumVcs];  // arrived, not yet taken, per VC
    TimedHeap responses;           // acks and read data, released at memory latency
    net::PacketFifo control;       // flag stores and posted packets
    std::vector<TxStream*> active;
    unsigned stream_rr = 0, vc_rr = 0;
    // Toward a block that reads a packet of one stream at a time
    // (net::Block::peer_packets): its packet's bytes, and the stream being
    // read and how much of its packet has crossed.
    uint32_t packet_reads = 0, read_bytes = 0, read_stream = ~0u;
    uint32_t rx_bytes[net::kNumVcs] = {};
    Wakeup wake;
    std::unique_ptr<net::InPort> rx_port;
    net::OutPort link;  // last: its socket is large and rarely touched
  };
  void tx_process(int p);
  bool keep_reading(Port& pt, const net::Packet& w);
  // The VC a packet of the class whose first VC is `first` leaves port pt
  // on: of the cfg_.inject_vcs it may take, the one with the most credit
  // that has room for `bytes` (the lowest on a tie); -1 if none has.
  int inject_vc(const Port& pt, int first, uint32_t bytes) const;
  void rx_process();
  void timer_process();
  void serve_request(Port& port, net::Packet* p, const sc_core::sc_time& at);
  void push_timer(const sc_core::sc_time& at, uint64_t value, EventHandler* owner);
  // Drops the pending timers `drop` selects.
  template <class Pred>
  void drop_timers(Pred drop);
  EventHandler* region_program(uint64_t addr) const;
  struct Range {
    uint64_t lo, hi;
    EventHandler* p;
  };

  int index_;
  GpuConfig cfg_;
  net::PacketPool& pool_;
  Memory memory_;
  std::vector<std::unique_ptr<Port>> ports_;
  std::vector<TxStream*> streams_;  // [id]; nullptr: removed
  std::vector<uint32_t> free_ids_;
  std::vector<EventHandler*> programs_;  // attached, in order
  std::vector<Range> watches_, regions_;  // a few: one per program in flight
  EventHandler* messages_ = nullptr;
  std::unique_ptr<Cores> cores_;
  std::unique_ptr<CopyEngine> copy_engine_;
  std::unique_ptr<ComputeEngine> compute_;
  TimedHeap timers_;
  uint64_t seq_ = 0;
  bool rx_blocked_ = false;
  uint64_t packets_received_ = 0;
  uint64_t latency_sum_ = 0;  // a port's memory pipeline was full
  Wakeup rx_wake_, timer_wake_;
  log::Logger log_;
  std::unique_ptr<sc_core::sc_module> attached_;  // last: a child goes before its parent
};

}  // namespace incsim::gpu
