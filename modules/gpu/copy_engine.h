#pragma once
// The GPU's copy engine (DMA, Klenk §IV-F): it runs its queue of transfer
// descriptors one at a time, in the order programs submit them, cutting the descriptor's blocks into request packets on the
// ports its client's address translation picks, under its wave controller
// (Fig. 6): the request generator has credits only for waves that hold a
// counter; a counter counts its wave's responses and, at the goal, frees and
// returns its credits to the next wave. A wave that finds no free counter
// retries and, after counter_timeout, fails the copy (§IV-F3).
//
// A descriptor is done when every block is issued and, if counted, every
// block's response has come back (its last wave's counter is free); then
// the next starts. So collectives in flight on one GPU share its engine in
// turn (a GPU has several copy engines, Volta 7, H100 10 per the CUDA
// deviceQuery; one is modelled, the others idle: docs/architecture.md).
//
// The engine does not know what the bytes mean: the client (the program that
// programmed the descriptor) says where a block goes and fills its header and
// data (the GPU's address translation and memory), and is told what comes back.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "core/log.h"
#include "core/param.h"
#include "core/trace.h"
#include "net/packet.h"

namespace incsim::gpu {

class Gpu;

// The wave controller (Klenk §IV-F1, Fig. 6).
struct WaveParams {
  uint32_t wave_bytes = 8192;        // data per wave
  int waves = 0;                     // counters, so waves outstanding; 0: no injection limiting
  sc_core::sc_time counter_timeout;  // a wave that finds no free counter for this long is an error
  bool arbitrary_order = true;       // issue blocks in the engine's own order, not by address
  // With arbitrary_order: that order within consecutive windows of this many
  // blocks (inside each wave, with waves); 0: no window, the whole wave (the
  // whole range without waves) is one permutation.
  uint64_t order_window = 0;
};
inline const Param<int> kWaves{
    "gpu.copy_engine.waves", 16, Range::at_least(0).at_most(4096),
    "wave counters, so waves outstanding per copy engine, for push and pull (multicast all-gather and broadcast "
    "have no responses to count); 0: no injection limiting (Klenk Fig. 7: push 16, pull 4 on DGX-2; Fig. 8: push "
    "64, pull 16 on the fat tree)",
    "push 16, pull 4; on fattree2l push 64, pull 16; multicast and nvls 0"};
// At least one packet's payload (checked against net.max_payload_bytes where both are known).
inline const Param<uint32_t> kWaveBytes{
    "gpu.copy_engine.wave_bytes", 8192, Range::at_least(8).at_most(64 << 20),
    "data per wave, bytes (Klenk Fig. 7, 8: waves of 8 kB; where the whole network holds less reduction table, "
    "that capacity: §IV-F1 sizes waves to C/k)",
    "8192; push and pull: the network's whole reduction table where that is less"};
inline const Param<double> kCounterTimeout{
    "gpu.copy_engine.counter_timeout_us", 1000.0, Range::above(0).at_most(1e6),
    "a wave that finds no free counter for this long makes the copy engine report an error (Klenk §IV-F3 retries "
    "\"after some time\", no value given)"};
inline const Param<std::string> kCopyOrder{
    "gpu.copy_engine.order", "window", Range::none(),
    "window: each GPU issues its blocks in its own order within consecutive windows of gpu.copy_engine.order_window "
    "blocks (and within each wave): DMA streams guarantee no order (Klenk §II-A, §IV-C), but an engine walks its "
    "range in order and only what it holds outstanding completes out of order; arbitrary: its own order over its "
    "whole range (each wave, with waves), so without waves the GPUs' writes to one block can be a message apart; "
    "address: every GPU in address order, the tables' best case"};
inline const Param<uint32_t> kCopyOrderWindow{
    "gpu.copy_engine.order_window", 0, Range::at_least(0).at_most(1u << 30),
    "blocks in one window of order=window; 0: the memory reads a copy engine holds outstanding to inject at line "
    "rate over the largest memory latency (Little's law: a GPU's link bandwidth x (gpu.mem_latency_cycles + "
    "gpu.mem_jitter_cycles) / gpu.clock_ghz, over one packet of a block, rounded up; the run's header prints it): "
    "246 on dgx2 and fattree2l (150 GB/s x 235.3 ns / 144 B), 41 on star, 569 on hgx-h100, 1225 on nvl72"};

// The reads a copy engine must hold outstanding to inject b_in_GBps when a
// read takes mem_ns, each block one packet_bytes packet (Little's law),
// rounded up; at least one.
inline uint64_t reads_outstanding(double b_in_GBps, double mem_ns, uint32_t packet_bytes) {
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(b_in_GBps * mem_ns / packet_bytes)));
}

// One transfer: blocks [first, end) of a buffer of `bytes` bytes cut into
// blocks of block_bytes, each one packet of `op`.
struct CopyDescriptor {
  net::Op op = net::Op::Write;  // Write, ReduceWrite (push), PullRead (pull)
  uint64_t bytes = 0;
  uint32_t block_bytes = 128;
  uint64_t first = 0, end = 0;
  // Responses gate issue: the client reports each with CopyEngine::complete.
  // Without it (multicast all-gather and broadcast have none) the waves do not limit injection.
  bool counted = false;
  // Every block's packet is answered (a unicast write's ack): the
  // descriptor is done when the last answer is back, so none reaches the next.
  bool acked = false;
  // Key the issue order (WaveParams::arbitrary_order): the run's seed and
  // this engine's rank in the job, so every engine has its own order.
  uint64_t order_seed = 0;
  uint32_t order_rank = 0;
  // A port's first packet after it idled waits for a memory read of its
  // data; a pull carries none.
  bool reads_memory = true;

  uint32_t block_size(uint64_t b) const {
    return static_cast<uint32_t>(std::min<uint64_t>(block_bytes, bytes - b * block_bytes));
  }
};

// The side of the GPU that programmed a descriptor.
class CopyClient {
 public:
  virtual ~CopyClient() = default;
  virtual int port_of(uint64_t block) const = 0;               // the link a block's packet leaves on
  virtual void fill(uint64_t block, net::Packet* p) = 0;       // address, destination, header and data
  virtual void on_response(net::Packet* p) = 0;                // an ack or read data came back
  virtual void on_error(const std::string& why) = 0;           // the engine cannot go on
  virtual void on_retired() {}                                 // the descriptor is done (the next has begun)
};

class CopyEngine : public sc_core::sc_module, public Traceable {
 public:
  CopyEngine(sc_core::sc_module_name name, Gpu& gpu);
  ~CopyEngine() override;

  // Queues a transfer under wave controller settings w; it starts at once
  // if the engine is idle.
  void start(const CopyDescriptor& d, const WaveParams& w, CopyClient& client);
  // A response for counted block b of the running descriptor has arrived
  // (a multicast result, a pull response): it counts toward b's wave.
  void complete(uint64_t block);
  // Forgets client's transfers, running or queued (its program ended).
  void stop(const CopyClient& client);
  // The GPU's timer unit calls this `tag` (a wave) after the delay the
  // engine asked for: the counter timeout.
  void on_timer(uint64_t wave);

  uint64_t issued() const { return issued_; }
  bool all_issued() const { return client_ == nullptr || issued_ == d_.end - d_.first; }
  size_t queued() const { return queue_.size(); }  // descriptors waiting behind the running one

  void trace(sc_core::sc_trace_file* tf) const override;
  // A line on what a transfer still holds (the stall detector), or nothing.
  void report(std::ostream& os) const;

 private:
  struct PortQueue;
  struct Counter {
    uint64_t wave = 0;
    uint32_t goal = 0, got = 0;
    bool busy = false;
  };
  struct Queued {
    CopyDescriptor d;
    WaveParams w;
    CopyClient* client;
  };
  bool waved() const { return d_.counted && waves_.waves > 0; }
  void begin(const Queued& q);
  void retire_if_done();  // the running descriptor is done: next()
  void next();            // forget the running descriptor, begin the queue's first
  uint64_t block_at(uint64_t i) const;  // the i-th block issued
  void allocate_waves();
  // A wave found a counter, or the copy ended: its timeout is dropped.
  void stop_waiting();
  void dispatch();
  void issued_one();
  void answer(net::Packet* p);  // a response to the running descriptor

  Gpu& gpu_;
  WaveParams waves_;
  CopyDescriptor d_;
  CopyClient* client_ = nullptr;
  uint64_t per_wave_ = 1;  // blocks per wave
  std::deque<Queued> queue_;
  uint64_t next_wave_block_ = 0, window_end_ = 0, dispatched_ = 0, issued_ = 0, completed_ = 0, answered_ = 0;
  uint64_t serial_ = 0;  // descriptors begun
  std::vector<Counter> counters_;
  std::vector<int16_t> wave_counter_;  // per wave: its counter
  // Traced: the running descriptor (its number since the run began) and
  // the wave it is issuing, -1 when idle: the timeline's spans.
  int descriptor_ = -1, wave_ = -1;
  int outstanding_ = 0;                // traced
  int credits_ = 0;                    // traced: packets the window allows, not yet issued
  bool waiting_ = false;
  sc_core::sc_time waiting_since_;
  std::vector<std::unique_ptr<PortQueue>> queues_;
  log::Logger log_;  // gpu3.copy_engine: descriptors and waves at debug, blocks at trace
};

}  // namespace incsim::gpu
