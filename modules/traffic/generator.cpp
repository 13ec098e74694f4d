#include "generator.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace incsim::traffic {

using sc_core::sc_time;

// ---- LatencyHistogram ----

LatencyHistogram::LatencyHistogram() : bins_(index(~0ull) + 1, 0) {}

void LatencyHistogram::reset() {
  std::fill(bins_.begin(), bins_.end(), 0);
  count_ = max_ = 0;
  sum_ = 0;
}

void LatencyHistogram::bin_range(size_t i, uint64_t& lo, uint64_t& hi) {
  if (i < (2u << kSubBits)) {
    lo = hi = i;
    return;
  }
  const size_t k = i - (2u << kSubBits);
  const int shift = static_cast<int>(k >> kSubBits) + 1;
  const uint64_t mantissa = (1ull << kSubBits) + (k & ((1u << kSubBits) - 1));
  lo = mantissa << shift;
  hi = lo + (1ull << shift) - 1;
}

double LatencyHistogram::quantile_ps(double q) const {
  if (count_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < bins_.size(); ++i) {
    seen += bins_[i];
    if (seen >= rank) {
      uint64_t lo, hi;
      bin_range(i, lo, hi);
      return std::min(static_cast<double>(max_), (static_cast<double>(lo) + static_cast<double>(hi)) / 2);
    }
  }
  return static_cast<double>(max_);
}

void Measurement::reset(uint64_t begin_ps, uint64_t end_ps) {
  window_begin_ps = begin_ps;
  window_end_ps = end_ps;
  measured_created = measured_arrived = arrived = wrong = network_latency_ps = 0;
  std::fill(accepted_bytes.begin(), accepted_bytes.end(), 0);
  latency.reset();
  pause_when_drained = false;
}

// ---- the port's view: a TxStream over the shared source queue ----

class TrafficGenerator::PortStream : public gpu::TxStream {
 public:
  PortStream(TrafficGenerator& g, int port) : g_(g), port_(port) {}
  // The port asks whenever it could send; pull() may create the packets due
  // by now and, with none, arms the port's wake-up at the next creation.
  uint32_t next_wire_bytes(const net::PacketFormat&) const override { return g_.pull(port_); }
  void fill(net::Packet* p) override { g_.fill(p); }
  void on_response(net::Packet*) override {
    SC_REPORT_ERROR("incsim/traffic", "a response reached a traffic generator, whose writes are posted");
  }

 private:
  TrafficGenerator& g_;
  int port_;
};

// ---- TrafficGenerator ----

TrafficGenerator::TrafficGenerator(gpu::Gpu& gpu, const GeneratorConfig& cfg, Measurement& m, double inject_GBps)
    : gpu_(gpu),
      cfg_(cfg),
      m_(m),
      me_(static_cast<uint32_t>(gpu.index())),
      wire_bytes_(gpu.pool().format().wire_bytes(net::Op::PostedWrite, cfg.payload_bytes)),
      slot_ps_(1000.0 * gpu.pool().format().flit_bytes / inject_GBps),
      rng_(cfg.seed * 0xD1B54A32D192ED03ull + gpu.index() + 1),
      state_(static_cast<size_t>(gpu.num_ports()), PortState::Idle),
      ring_(std::max<uint32_t>(1, cfg.queue_packets)) {
  if (cfg.payload_bytes < 16 || cfg.payload_bytes % 8 != 0 ||
      cfg.payload_bytes > gpu.pool().format().max_payload_bytes)
    throw UserError("traffic.payload_bytes must be a multiple of 8 from 16 to net.max_payload_bytes (" +
                    std::to_string(gpu.pool().format().max_payload_bytes) + "), not " +
                    std::to_string(cfg.payload_bytes));
  gpu.attach(*this);
  gpu.serve_region(*this, kSinkAddr, kSinkAddr + 1);
  for (int p = 0; p < gpu.num_ports(); ++p) {
    streams_.push_back(std::make_unique<PortStream>(*this, p));
    gpu.add_stream(streams_.back().get());
  }
}

TrafficGenerator::~TrafficGenerator() {
  for (auto& s : streams_) gpu_.remove_stream(s.get());  // the ports must not keep streams that die with us
  gpu_.detach(*this);
}

void TrafficGenerator::start(double load) {
  sc_assert(load > 0 && load <= 1);
  q_ = std::min(1.0, load * gpu_.pool().format().flit_bytes / wire_bytes_);
  running_ = true;
  head_ = size_ = queue_peak_ = 0;
  created_ = refused_ = sent_ = created_in_window_ = 0;
  start_ps_ = now_ps();
  next_slot_ = 0;
  draw_next();
  // Every port has seen the queue empty since stop() (the network ran
  // until quiet): none is in the GPU's active list or has a wake-up pending.
  for (size_t p = 0; p < state_.size(); ++p) {
    sc_assert(state_[p] == PortState::Idle);
    state_[p] = PortState::Scheduled;
    gpu_.activate(static_cast<int>(p), streams_[p].get(), sc_time::from_value(next_ps_ - now_ps()));
  }
}

void TrafficGenerator::draw_next() {
  next_slot_ += geometric_gap(q_, rng_);
  next_ps_ = start_ps_ + static_cast<uint64_t>(std::llround(static_cast<double>(next_slot_) * slot_ps_));
}

void TrafficGenerator::create_until(uint64_t now) {
  while (running_ && next_ps_ <= now) {
    const uint32_t dst = static_cast<uint32_t>(destination(cfg_.pattern, static_cast<int>(me_), rng_));
    ++created_;
    const bool measured = m_.in_window(next_ps_);
    created_in_window_ += measured;
    if (size_ == ring_.size()) {
      ++refused_;
    } else {
      ring_[(head_ + size_) % ring_.size()] = Entry{next_ps_, seq_++, dst};
      queue_peak_ = std::max(queue_peak_, ++size_);
      m_.measured_created += measured;
    }
    draw_next();
  }
}

void TrafficGenerator::advance() { create_until(now_ps()); }

void TrafficGenerator::stop() {
  create_until(now_ps());
  running_ = false;
  head_ = size_ = 0;
}

uint32_t TrafficGenerator::pull(int port) {
  const uint64_t now = now_ps();
  create_until(now);
  if (size_) {
    state_[port] = PortState::Active;
    return wire_bytes_;
  }
  // The port drops this stream from its list; wake it at the next creation.
  if (running_) {
    state_[port] = PortState::Scheduled;
    gpu_.activate(port, streams_[port].get(), sc_time::from_value(next_ps_ - now));
  } else {
    state_[port] = PortState::Idle;
  }
  return 0;
}

uint64_t TrafficGenerator::pattern_key(uint32_t src, uint32_t dst, uint64_t seq) {
  Rng r((static_cast<uint64_t>(src) << 40) ^ (static_cast<uint64_t>(dst) << 20) ^ (seq * 0x9E3779B97F4A7C15ull));
  return r.next();
}

namespace {
constexpr uint64_t kStride = 0x2545F4914F6CDD1Dull;  // odd: consecutive words differ
inline void put(uint8_t* data, size_t word, uint64_t v) { std::memcpy(data + 8 * word, &v, 8); }
inline uint64_t get(const uint8_t* data, size_t word) {
  uint64_t v;
  std::memcpy(&v, data + 8 * word, 8);
  return v;
}
}  // namespace

void TrafficGenerator::fill(net::Packet* p) {
  sc_assert(size_ > 0);
  const Entry e = ring_[head_];
  head_ = (head_ + 1) % ring_.size();
  --size_;
  p->dst = e.dst;
  p->addr = kSinkAddr;
  p->op = net::Op::PostedWrite;
  p->payload_bytes = static_cast<uint16_t>(cfg_.payload_bytes);
  put(p->data, 0, e.seq);
  put(p->data, 1, e.created_ps);
  const uint64_t key = pattern_key(me_, e.dst, e.seq);
  const size_t words = cfg_.payload_bytes / 8;
  for (size_t w = 2; w < words; ++w) put(p->data, w, key + w * kStride);
  ++sent_;
  if (fault_every_ && sent_ % fault_every_ == 0) p->data[cfg_.payload_bytes - 1] ^= 0x10;
}

void TrafficGenerator::on_region_write(const net::Packet& p) {
  if (p.op != net::Op::PostedWrite) {
    SC_REPORT_ERROR("incsim/traffic", "a traffic generator received a packet that is not a posted write");
    return;
  }
  ++m_.arrived;
  const uint64_t created = p.payload_bytes >= 16 ? get(p.data, 1) : ~0ull;
  const uint64_t tail = p.t_tail.value();
  bool ok = p.dst == me_ && p.payload_bytes == cfg_.payload_bytes && p.src < m_.accepted_bytes.size() &&
            created <= tail;
  if (ok) {
    const uint64_t key = pattern_key(p.src, p.dst, get(p.data, 0));
    const size_t words = cfg_.payload_bytes / 8;
    for (size_t w = 2; w < words && ok; ++w) ok = get(p.data, w) == key + w * kStride;
  }
  if (m_.in_window(tail)) m_.accepted_bytes[me_] += p.wire_bytes;
  if (m_.in_window(created)) {
    ++m_.measured_arrived;
    if (ok) {
      m_.latency.record(tail - created);
      m_.network_latency_ps += tail - p.t_inject.value();
    }
    if (m_.pause_when_drained && m_.measured_arrived >= m_.measured_created) sc_core::sc_pause();
  }
  if (!ok) ++m_.wrong;
}

void TrafficGenerator::report(std::ostream& os, const std::string& prefix) const {
  os << prefix << ": traffic source holds " << size_ << " packets, " << sent_ << " sent\n";
}

}  // namespace incsim::traffic
