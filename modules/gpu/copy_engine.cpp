#include "copy_engine.h"

#include <algorithm>

#include "core/hash.h"
#include "gpu/gpu.h"

namespace incsim::gpu {

namespace {
uint64_t mix(uint64_t x) { return splitmix64(x); }

// A pseudo-random permutation of [0, n) keyed by `key`, without storage: a
// four-round Feistel network on the smallest even power of two >= n, walked
// until it lands inside the range.
uint64_t permute(uint64_t i, uint64_t n, uint64_t key) {
  if (n <= 1) return 0;
  unsigned bits = 2;
  while ((1ull << bits) < n) bits += 2;
  const unsigned half = bits / 2;
  const uint64_t mask = (1ull << half) - 1;
  uint64_t x = i;
  do {
    uint64_t l = x >> half, r = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t f = mix(r ^ key ^ (round << 56)) & mask;
      const uint64_t t = l ^ f;
      l = r;
      r = t;
    }
    x = l << half | r;
  } while (x >= n);
  return x;
}
}  // namespace

// The request generator hands blocks, in issue order, to one bounded queue
// per port; a full queue holds the generator back. The port pulls packets
// when its link and credits allow.
struct CopyEngine::PortQueue : TxStream {
  static constexpr uint32_t kDepth = 64;
  CopyEngine* engine = nullptr;
  int port = 0;
  uint64_t queue[kDepth];
  uint32_t head = 0, size = 0;
  mutable bool idle = true;  // the port dropped it: activate again when its queue fills

  uint32_t next_wire_bytes(const net::PacketFormat& f) const override {
    if (size == 0) {
      idle = true;
      return 0;
    }
    return f.wire_bytes(engine->d_.op, engine->d_.block_size(queue[head]));
  }
  void fill(net::Packet* p) override {
    const uint64_t b = queue[head];
    head = (head + 1) % kDepth;
    --size;
    p->op = engine->d_.op;
    p->payload_bytes = static_cast<uint16_t>(engine->d_.block_size(b));
    engine->client_->fill(b, p);
    engine->issued_one();  // last: the descriptor may retire and the next begin
  }
  void on_response(net::Packet* p) override { engine->answer(p); }
};

CopyEngine::CopyEngine(sc_core::sc_module_name name, Gpu& gpu) : sc_module(name), gpu_(gpu), log_(this->name()) {
  for (int p = 0; p < gpu_.num_ports(); ++p) {
    auto q = std::make_unique<PortQueue>();
    q->engine = this;
    q->port = p;
    gpu_.add_stream(q.get());
    queues_.push_back(std::move(q));
  }
}

CopyEngine::~CopyEngine() = default;

void CopyEngine::start(const CopyDescriptor& d, const WaveParams& w, CopyClient& client) {
  if (client_ == nullptr) begin({d, w, &client});
  else queue_.push_back({d, w, &client});
}

void CopyEngine::begin(const Queued& q) {
  const CopyDescriptor& d = q.d;
  ++serial_;
  d_ = d;
  waves_ = q.w;
  client_ = q.client;
  descriptor_ = static_cast<int>(serial_ - 1);
  wave_ = -1;
  next_wave_block_ = window_end_ = dispatched_ = d.first;
  issued_ = completed_ = answered_ = 0;
  outstanding_ = 0;
  stop_waiting();
  counters_.clear();
  wave_counter_.clear();
  per_wave_ = 1;
  if (waved()) {
    per_wave_ = std::max<uint64_t>(1, waves_.wave_bytes / d.block_bytes);
    counters_.resize(waves_.waves);
    wave_counter_.assign((d.end - d.first + per_wave_ - 1) / per_wave_, -1);
  }
  INCSIM_LOG(log_, Debug, "descriptor: {} blocks [{}, {}) of {} B, {} B each, {}", net::op_name(d.op), d.first, d.end,
             d.bytes, d.block_bytes,
             waved() ? fmt::format("waves of {} blocks, {} counters", per_wave_, counters_.size()) : "no waves");
  if (waved()) {
    allocate_waves();
  } else {
    window_end_ = next_wave_block_ = d.end;
    dispatch();
  }
  retire_if_done();
}

void CopyEngine::retire_if_done() {
  const uint64_t blocks = d_.end - d_.first;
  if (client_ == nullptr || !all_issued() || (d_.counted && completed_ < blocks) || (d_.acked && answered_ < blocks))
    return;
  CopyClient* done = client_;
  next();
  done->on_retired();
}

void CopyEngine::next() {
  client_ = nullptr;
  credits_ = 0;
  descriptor_ = wave_ = -1;
  if (queue_.empty()) return;
  const Queued next = queue_.front();
  queue_.pop_front();
  begin(next);
}

void CopyEngine::stop(const CopyClient& client) {
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.client == &client; }),
               queue_.end());
  if (client_ != &client) return;
  for (auto& q : queues_) q->size = 0;  // blocks not yet issued
  stop_waiting();
  outstanding_ = 0;
  next();
}

// DMA streams guarantee no order (Klenk §II-A; §IV-C: "the order in which
// elements are injected is arbitrary"), yet an engine walks its range in
// order: what completes out of order is what it holds outstanding at once
// (its reads, returning after 180 to 359 cycles, Klenk §V). So the engine
// issues each window of WaveParams::order_window blocks, inside each wave,
// in its own pseudo-random order; without a window, each wave (without
// waves, the whole range) is one permutation. A window at least a wave long
// changes nothing: its key is the wave's.
uint64_t CopyEngine::block_at(uint64_t i) const {
  if (!waves_.arbitrary_order) return i;
  const bool waves = !counters_.empty();
  uint64_t first = waves ? d_.first + (i - d_.first) / per_wave_ * per_wave_ : d_.first;
  uint64_t end = waves ? std::min(d_.end, first + per_wave_) : d_.end;
  const uint64_t w = waves_.order_window;
  if (w > 0 && end - first > w) {
    first += (i - first) / w * w;
    end = std::min(end, first + w);
  }
  const uint64_t key = mix(d_.order_seed ^ mix(static_cast<uint64_t>(d_.order_rank) << 32 ^ first));
  return first + permute(i - first, end - first, key);
}

// Counters go to waves in order while one is free; a wave that finds none
// waits for the next to free and, after counter_timeout, fails the copy.
void CopyEngine::allocate_waves() {
  while (next_wave_block_ < d_.end) {
    auto free = std::find_if(counters_.begin(), counters_.end(), [](const Counter& k) { return !k.busy; });
    if (free == counters_.end()) {
      if (!waiting_) {
        INCSIM_LOG(log_, Debug, "wave {} waits for a free counter", (next_wave_block_ - d_.first) / per_wave_);
        waiting_ = true;
        waiting_since_ = sim_now();
        gpu_.call_engine_after(waves_.counter_timeout, (next_wave_block_ - d_.first) / per_wave_);
      }
      break;
    }
    const uint64_t wave = (next_wave_block_ - d_.first) / per_wave_;
    const uint64_t end = std::min(d_.end, next_wave_block_ + per_wave_);
    *free = Counter{wave, static_cast<uint32_t>(end - next_wave_block_), 0, true};
    wave_counter_[wave] = static_cast<int16_t>(free - counters_.begin());
    window_end_ = next_wave_block_ = end;
    stop_waiting();
    ++outstanding_;
    INCSIM_LOG(log_, Debug, "wave {} issued: {} blocks on counter {}, {} waves outstanding", wave, free->goal,
               free - counters_.begin(), outstanding_);
  }
  credits_ = static_cast<int>(window_end_ - d_.first - issued_);
  dispatch();
}

// Hands the window's blocks to the port queues while they have room, and
// wakes the ports that had gone idle (after the first read of their data).
void CopyEngine::dispatch() {
  while (dispatched_ < window_end_) {
    const uint64_t b = block_at(dispatched_);
    PortQueue& q = *queues_[client_->port_of(b)];
    if (q.size == PortQueue::kDepth) break;
    q.queue[(q.head + q.size++) % PortQueue::kDepth] = b;
    ++dispatched_;
    INCSIM_LOG(log_, Trace, "block {} queued on port {}", b, q.port);
    if (q.idle) {
      q.idle = false;
      gpu_.activate(q.port, &q, d_.reads_memory ? gpu_.first_read(q.port, 0) : sc_core::sc_time());
    }
  }
}

void CopyEngine::issued_one() {
  // The wave being issued: waves leave in order (the order window stays inside one).
  if (waved()) wave_ = static_cast<int>(issued_ / per_wave_);
  ++issued_;
  dispatch();
  credits_ = static_cast<int>(window_end_ - d_.first - issued_);
  if (issued_ == d_.end - d_.first) retire_if_done();
}

void CopyEngine::answer(net::Packet* p) {
  sc_assert(client_);
  const uint64_t serial = serial_;
  client_->on_response(p);  // may complete the descriptor and begin the next
  if (serial == serial_ && d_.acked && ++answered_ == d_.end - d_.first) retire_if_done();
}

void CopyEngine::complete(uint64_t b) {
  ++completed_;
  if (!waved()) {
    retire_if_done();
    return;
  }
  Counter& k = counters_[wave_counter_[(b - d_.first) / per_wave_]];
  sc_assert(k.busy);
  if (++k.got < k.goal) return;
  k.busy = false;  // the goal: credits for the next wave
  --outstanding_;
  INCSIM_LOG(log_, Debug, "wave {} completed: {} responses, {} waves outstanding", k.wave, k.got, outstanding_);
  allocate_waves();
  retire_if_done();
}

void CopyEngine::stop_waiting() {
  if (waiting_) gpu_.cancel_engine_timers();
  waiting_ = false;
}

void CopyEngine::on_timer(uint64_t wave) {
  if (client_ == nullptr || !waiting_ || (next_wave_block_ - d_.first) / per_wave_ != wave ||
      sim_now() - waiting_since_ < waves_.counter_timeout)
    return;  // the wave found a counter, or a later wait is timing
  client_->on_error(std::string(name()) + ": the copy engine found no wave counter free for " + waves_.counter_timeout.to_string() +
                    " (gpu.copy_engine.counter_timeout_us); wave " + std::to_string(wave) + " could not start");
}

void CopyEngine::trace(sc_core::sc_trace_file* tf) const {
  const std::string me = name();
  sc_core::sc_trace(tf, descriptor_, me + ".descriptor");
  sc_core::sc_trace(tf, wave_, me + ".wave");
  sc_core::sc_trace(tf, outstanding_, me + ".waves_outstanding");
  sc_core::sc_trace(tf, credits_, me + ".credits");
}

void CopyEngine::report(std::ostream& os) const {
  if (client_ == nullptr || (all_issued() && outstanding_ == 0)) return;
  os << "  " << name() << ": issued " << issued_ << " of " << d_.end - d_.first << " blocks, " << outstanding_
     << " waves outstanding" << (waiting_ ? " (waiting for a counter)" : "");
  if (!queue_.empty()) os << ", " << queue_.size() << " descriptors queued behind it";
  os << "\n";
}

}  // namespace incsim::gpu
