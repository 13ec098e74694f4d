#pragma once
// A synthetic traffic source and sink per endpoint (Dally and Towles ch. 3
// and 23; BookSim's trafficmanager does the same).
//
// Source: Bernoulli injection (patterns.h, geometric_gap) with one trial per
// flit slot, the time one flit takes at the injection bandwidth load refers
// to (analysis.h, reference_injection_GBps), and success probability load x
// flit / packet bytes, so that `load` is the fraction of that bandwidth offered,
// in wire bytes (header included), as BookSim's injection_rate is in flits
// per cycle with packet_size flits per packet. A packet is created at its
// slot, given its destination and queued in the source queue; the endpoint's
// ports pull from that queue when link and credits allow (gpu::TxStream), so
// latency from creation includes source queueing. The queue is a ring of
// `queue_packets` entries allocated once: a packet created when it is full is
// refused and counted (BookSim's queue is unbounded; ours stops a saturated
// source from growing without end, and a refusal marks the run saturated).
//
// Creation is evaluated lazily: the packets due up to now are created when a
// port asks for one (or the experiment calls advance()), in slot order and
// with the same draws as an eager process, so the results do not depend on
// when ports ask; an idle port is woken at the next creation.
//
// Packets are posted writes (net::Op::PostedWrite): no acks load the network.
// Each carries real bytes: its source sequence number, its creation time
// (as a network tester stamps its packets), and a pattern derived from
// source, destination and sequence number that the sink checks; a packet
// with a wrong byte, size or destination counts as wrong.
//
// Sink: latency from creation to tail arrival for packets created in the
// measurement window, accepted wire bytes for tails arriving in it
// (Measurement, shared by all endpoints).
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gpu/gpu.h"
#include "traffic/patterns.h"

namespace incsim::traffic {

// Latencies in ps, log-linear bins (1 ps up to 2 ns, then 1024 bins per
// octave: under 0.1% error), allocated once; the mean is exact.
class LatencyHistogram {
 public:
  LatencyHistogram();
  void record(uint64_t ps) {
    ++bins_[index(ps)];
    ++count_;
    sum_ += ps;
    if (ps > max_) max_ = ps;
  }
  void reset();
  uint64_t count() const { return count_; }
  double mean_ps() const { return count_ ? static_cast<double>(sum_) / count_ : 0; }
  uint64_t max_ps() const { return max_; }
  // The q-quantile (0 < q <= 1), the middle of its bin, ps.
  double quantile_ps(double q) const;

 private:
  static constexpr int kSubBits = 10;
  static size_t index(uint64_t v) {
    if (v < (2ull << kSubBits)) return static_cast<size_t>(v);
    const int shift = 63 - __builtin_clzll(v) - kSubBits;
    return (2u << kSubBits) + static_cast<size_t>(shift - 1) * (1u << kSubBits) +
           static_cast<size_t>((v >> shift) - (1ull << kSubBits));
  }
  static void bin_range(size_t i, uint64_t& lo, uint64_t& hi);
  std::vector<uint64_t> bins_;
  uint64_t count_ = 0, max_ = 0;
  unsigned __int128 sum_ = 0;
};

// What the sinks measure during one offered load, shared by all endpoints.
struct Measurement {
  explicit Measurement(int endpoints) : accepted_bytes(static_cast<size_t>(endpoints), 0) {}
  void reset(uint64_t window_begin_ps, uint64_t window_end_ps);
  bool in_window(uint64_t ps) const { return ps >= window_begin_ps && ps < window_end_ps; }

  uint64_t window_begin_ps = 0, window_end_ps = 0;
  uint64_t measured_created = 0;  // created in the window and queued (sources)
  uint64_t measured_arrived = 0;  // of those, arrived (sinks), wrong ones included
  uint64_t arrived = 0;           // every packet that arrived, wrong ones included
  uint64_t wrong = 0;
  std::vector<uint64_t> accepted_bytes;  // per endpoint: wire bytes whose tail arrived in the window
  LatencyHistogram latency;              // creation to tail arrival, packets created in the window
  uint64_t network_latency_ps = 0;       // their sum of injection (leaving the source port) to tail arrival
  bool pause_when_drained = false;       // sc_pause() when every measured packet has arrived
};

struct GeneratorConfig {
  PatternParams pattern;
  uint32_t payload_bytes = 256;   // a multiple of 8, at least 16
  uint32_t queue_packets = 1024;  // source queue capacity
  uint64_t seed = 1;
};

// Synthetic packets are posted writes to this address of the destination
// GPU, which its generator takes (it carries no buffer: the payload is checked).
constexpr uint64_t kSinkAddr = 0;

class TrafficGenerator : public gpu::EventHandler {
 public:
  TrafficGenerator(gpu::Gpu& gpu, const GeneratorConfig& cfg, Measurement& m, double inject_GBps);
  ~TrafficGenerator() override;

  // Starts creating packets at `load` (fraction of the injection bandwidth,
  // in (0, 1]) from now; the network must be quiet (no activation pending).
  void start(double load);
  // Creates every packet due up to now.
  void advance();
  // Creates no more packets and drops those still in the source queue
  // (they never entered the network).
  void stop();
  // Test hook: every n-th packet sent gets one bit flipped after its
  // pattern was written (0: none), a fault the sink must catch.
  void inject_fault_every(uint64_t n) { fault_every_ = n; }

  // Since start().
  uint64_t created() const { return created_; }
  uint64_t refused() const { return refused_; }
  uint64_t sent() const { return sent_; }
  uint64_t created_in_window() const { return created_in_window_; }
  size_t queue_peak() const { return queue_peak_; }
  size_t queued() const { return size_; }
  uint32_t wire_bytes() const { return wire_bytes_; }

  // gpu::EventHandler
  void on_timer(uint64_t) override {}
  void on_flag(uint64_t) override {}
  void report(std::ostream& os, const std::string& prefix) const override;
  void on_region_write(const net::Packet& p) override;

 private:
  class PortStream;
  enum class PortState : uint8_t { Idle, Scheduled, Active };
  struct Entry {
    uint64_t created_ps;
    uint64_t seq;
    uint32_t dst;
  };
  uint32_t pull(int port);     // a port asks: the next packet's wire bytes, or 0
  void fill(net::Packet* p);   // the port takes the queue's head
  void create_until(uint64_t now_ps);
  void draw_next();
  uint64_t now_ps() const { return sc_core::sc_time_stamp().value(); }
  static uint64_t pattern_key(uint32_t src, uint32_t dst, uint64_t seq);

  gpu::Gpu& gpu_;
  GeneratorConfig cfg_;
  Measurement& m_;
  uint32_t me_;
  uint32_t wire_bytes_;
  double slot_ps_;
  Rng rng_;
  std::vector<std::unique_ptr<PortStream>> streams_;
  std::vector<PortState> state_;
  std::vector<Entry> ring_;
  size_t head_ = 0, size_ = 0, queue_peak_ = 0;
  bool running_ = false;
  double q_ = 0;
  uint64_t start_ps_ = 0, next_slot_ = 0, next_ps_ = 0, seq_ = 0;
  uint64_t created_ = 0, refused_ = 0, sent_ = 0, created_in_window_ = 0, fault_every_ = 0;
};

}  // namespace incsim::traffic
