#include "innet_collective.h"

#include <algorithm>
#include <cstring>
#include <ostream>

#include "collectives/bounds.h"

namespace incsim::gpu {

using collectives::DType;
using sc_core::sc_time;

namespace {
constexpr uint32_t kElem = 4;  // float32 and int32
constexpr uint32_t kBlock = topo::MulticastFabric::kBlockBytes;
// Region addresses in the global address space (Klenk Fig. 2).
constexpr uint64_t kInBase = net::kMulticastBase;
constexpr uint64_t kOutBase = net::kMulticastBase + (1ull << 44);
constexpr uint64_t kFlagBase = net::kMulticastBase + (2ull << 44);

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

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

// One GPU: its copy engine (one request stream per port, fed by the wave
// controller's window) and what it does with what arrives.
class InNetworkCollective::Rank : public Program {
 public:
  Rank(InNetworkCollective& c, int rank, uint64_t bytes);
  void start();
  void on_timer(uint64_t tag) override;
  void on_flag(uint64_t) override {}
  void report(std::ostream& os, const std::string& prefix) const override;
  void read_region(uint64_t addr, uint32_t bytes, uint8_t* out) override;
  void on_region_write(const net::Packet& p) override;
  // Mismatches plus output elements received too few or too many times.
  uint64_t wrong() const { return wrong_ + (received_ > count_ ? received_ - count_ : count_ - received_); }

 private:
  // The request generator hands blocks, in address order, to one bounded
  // queue per port; a full queue holds the generator back.
  static constexpr uint32_t kQueueDepth = 64;
  struct PortStream : TxStream {
    Rank* rank = nullptr;
    int port = 0;
    uint64_t queue[kQueueDepth];
    uint32_t head = 0, size = 0;
    mutable bool idle = true;  // the port dropped it: activate again when its queue fills
    uint32_t next_wire_bytes(const net::PacketFormat& f) const override;
    void fill(net::Packet* p) override;
    void on_response(net::Packet* p) override;
  };
  struct Counter {
    uint64_t wave = 0;
    uint32_t goal = 0, got = 0;
    bool busy = false;
  };
  InNetKind kind() const { return c_.kind_; }
  bool waved() const { return kind() == InNetKind::AllReducePush || kind() == InNetKind::AllReducePull; }
  net::Op issue_op() const {
    return kind() == InNetKind::AllReducePush ? net::Op::ReduceWrite
           : kind() == InNetKind::AllReducePull ? net::Op::PullRead
                                                : net::Op::Write;
  }
  uint32_t block_bytes(uint64_t b) const {
    return static_cast<uint32_t>(std::min<uint64_t>(kBlock, bytes_ - b * kBlock));
  }
  int port_of(uint64_t b) const;
  int port_to_home(topo::MulticastFabric::HomePort h) const {
    return c_.topo_.route_to_switch(node_, h.sw, static_cast<uint32_t>(h.port));
  }
  void own_data(uint64_t b, uint8_t* out) const;
  int owner(uint64_t b) const;  // the rank whose input block b is (all-gather, broadcast)
  void allocate_waves();
  void dispatch();
  uint64_t block_at(uint64_t i) const;  // the i-th block the copy engine issues
  void count_for_wave(uint64_t b);
  void accept(uint64_t b, const uint8_t* data, uint32_t bytes, int owner);  // an output block lands here
  void multicast(uint64_t addr, const uint8_t* data, uint32_t bytes, uint16_t count);
  void partial(const net::Packet& p);
  void barrier_done(const uint8_t* flag, uint16_t count);  // the flag's all-reduce has landed
  void begin_work();
  void finish_if_done();

  InNetworkCollective& c_;
  Gpu& gpu_;
  int rank_, n_;
  uint64_t bytes_, count_, blocks_;
  uint64_t work_lo_ = 0, work_hi_ = 0;  // blocks this copy engine issues
  uint64_t per_wave_ = 1;               // blocks per wave
  uint64_t next_wave_block_ = 0, window_end_ = 0, issued_ = 0;
  uint64_t dispatched_ = 0;  // blocks handed to the port queues
  std::vector<Counter> counters_;
  std::vector<int16_t> wave_counter_;  // per wave: its counter
  int outstanding_ = 0;
  bool waiting_ = false;
  sc_time waiting_since_;
  std::vector<std::unique_ptr<PortStream>> streams_;
  int node_;  // in the topology
  uint64_t received_ = 0, wrong_ = 0;
  std::vector<uint16_t> partial_count_;  // push home GPU: partials per home block (Klenk §IV-C)
  std::vector<uint8_t> partial_data_;
  uint16_t flag_count_ = 0;
  uint8_t flag_data_[kBlock] = {};
  bool in_barrier_ = false, finished_ = false;
};

InNetworkCollective::Rank::Rank(InNetworkCollective& c, int rank, uint64_t bytes)
    : c_(c),
      gpu_(*c.gpus_[rank]),
      rank_(rank),
      n_(static_cast<int>(c.gpus_.size())),
      bytes_(bytes),
      count_(bytes / kElem),
      blocks_((bytes + kBlock - 1) / kBlock) {
  gpu_.clear_streams();
  gpu_.memory().free_all();
  switch (kind()) {
    case InNetKind::AllReducePush: work_lo_ = 0, work_hi_ = blocks_; break;
    case InNetKind::Broadcast: work_lo_ = 0, work_hi_ = rank == 0 ? blocks_ : 0; break;
    default:  // each rank's 1/n of the blocks
      work_lo_ = blocks_ * rank / n_;
      work_hi_ = blocks_ * (rank + 1) / n_;
  }
  next_wave_block_ = window_end_ = dispatched_ = work_lo_;
  if (waved() && c.waves_.waves > 0) {
    per_wave_ = std::max<uint64_t>(1, c.waves_.wave_bytes / kBlock);
    counters_.resize(c.waves_.waves);
    wave_counter_.assign((work_hi_ - work_lo_ + per_wave_ - 1) / per_wave_, -1);
  }
  for (int p = 0; p < gpu_.num_ports(); ++p) {
    auto s = std::make_unique<PortStream>();
    s->rank = this;
    s->port = p;
    gpu_.add_stream(s.get());
    streams_.push_back(std::move(s));
  }
  node_ = c.topo_.endpoints()[gpu_.index()];
  if (kind() == InNetKind::AllReducePush) partial_count_.assign((blocks_ + n_ - 1) / n_, 0);
  gpu_.set_program(this);
}

void InNetworkCollective::Rank::start() {
  // What this rank already holds of the output: its own input.
  if (kind() == InNetKind::AllGather || (kind() == InNetKind::Broadcast && rank_ == 0))
    for (uint64_t b = work_lo_; b < work_hi_; ++b) received_ += block_bytes(b) / kElem;
  if (kind() == InNetKind::AllReducePull && c_.barrier_) {
    // The barrier: a push all-reduce of one flag (Klenk §VI-A: "an
    // All-Reduce on a flag, which is 1 packet per node").
    in_barrier_ = true;
    const auto home = c_.fabric_.home_port(c_.flag_region_, kFlagBase);
    net::Packet* p = gpu_.pool().get();
    p->op = net::Op::ReduceWrite;
    p->addr = kFlagBase;
    p->dst = static_cast<uint32_t>(c_.fabric_.home_gpu(c_.flag_region_, kFlagBase));
    p->home_switch = home.sw;
    p->home_port = static_cast<int16_t>(home.port);
    p->payload_bytes = kElem;
    p->count = 1;
    p->dtype = static_cast<uint8_t>(DType::Int32);
    p->redop = static_cast<uint8_t>(collectives::RedOp::Sum);
    const int32_t one = 1;
    std::memcpy(p->data, &one, kElem);
    gpu_.post(port_to_home(home), p);
    return;
  }
  begin_work();
}

void InNetworkCollective::Rank::begin_work() {
  if (!waved() || c_.waves_.waves == 0) {
    window_end_ = work_hi_;
    next_wave_block_ = work_hi_;
    dispatch();
  } else {
    allocate_waves();
  }
  finish_if_done();
}

// DMA streams guarantee no order (Klenk §II-A, §IV-C: "the order in which
// elements are injected is arbitrary"): each GPU issues the blocks of a wave
// (of its whole range, without waves) in its own pseudo-random order.
uint64_t InNetworkCollective::Rank::block_at(uint64_t i) const {
  if (!c_.waves_.arbitrary_order) return i;
  const bool waves = !counters_.empty();
  const uint64_t first = waves ? work_lo_ + (i - work_lo_) / per_wave_ * per_wave_ : work_lo_;
  const uint64_t end = waves ? std::min(work_hi_, first + per_wave_) : work_hi_;
  const uint64_t key = mix(c_.seed_ ^ mix(static_cast<uint64_t>(rank_) << 32 ^ first));
  return first + permute(i - first, end - first, key);
}

int InNetworkCollective::Rank::port_of(uint64_t b) const {
  if (kind() == InNetKind::AllReducePush) return port_to_home(c_.fabric_.home_port(c_.out_region_, kOutBase + b * kBlock));
  return static_cast<int>(b % streams_.size());
}

int InNetworkCollective::Rank::owner(uint64_t b) const {
  if (kind() == InNetKind::Broadcast) return 0;
  // Inverse of work_lo_ = blocks * r / n: the last rank whose range starts at or before b.
  int r = static_cast<int>(std::min<uint64_t>(n_ - 1, (b * n_) / std::max<uint64_t>(1, blocks_)));
  while (r + 1 < n_ && blocks_ * (r + 1) / n_ <= b) ++r;
  while (r > 0 && blocks_ * r / n_ > b) --r;
  return r;
}

void InNetworkCollective::Rank::own_data(uint64_t b, uint8_t* out) const {
  c_.data_.fill(c_.dtype_, rank_, b * (kBlock / kElem), block_bytes(b) / kElem, out);
}

// The wave controller allocates counters to waves in order while one is
// free; a wave that finds none waits for the next to free (the retry) and,
// after counter_timeout, fails the copy (Klenk §IV-F3).
void InNetworkCollective::Rank::allocate_waves() {
  while (next_wave_block_ < work_hi_) {
    auto free = std::find_if(counters_.begin(), counters_.end(), [](const Counter& k) { return !k.busy; });
    if (free == counters_.end()) {
      if (!waiting_) {
        waiting_ = true;
        waiting_since_ = sc_core::sc_time_stamp();
        gpu_.call_after(c_.waves_.counter_timeout, (next_wave_block_ - work_lo_) / per_wave_);
      }
      break;
    }
    const uint64_t wave = (next_wave_block_ - work_lo_) / per_wave_;
    const uint64_t end = std::min(work_hi_, next_wave_block_ + per_wave_);
    *free = Counter{wave, static_cast<uint32_t>(end - next_wave_block_), 0, true};
    wave_counter_[wave] = static_cast<int16_t>(free - counters_.begin());
    window_end_ = next_wave_block_ = end;
    waiting_ = false;
    ++outstanding_;
  }
  gpu_.trace_waves = outstanding_;
  gpu_.trace_credits = static_cast<int>(window_end_ - work_lo_ - issued_);
  dispatch();
}

// Hands the window's blocks to the port queues while they have room, and
// wakes the ports that had gone idle (after a memory read for data).
void InNetworkCollective::Rank::dispatch() {
  while (dispatched_ < window_end_) {
    const uint64_t b = block_at(dispatched_);
    PortStream& s = *streams_[port_of(b)];
    if (s.size == kQueueDepth) break;
    s.queue[(s.head + s.size++) % kQueueDepth] = b;
    ++dispatched_;
    if (s.idle) {
      s.idle = false;
      gpu_.activate(s.port, &s, kind() == InNetKind::AllReducePull ? sc_time() : gpu_.memory().latency());
    }
  }
}

void InNetworkCollective::Rank::on_timer(uint64_t wave) {
  if (waiting_ && (next_wave_block_ - work_lo_) / per_wave_ == wave &&
      sc_core::sc_time_stamp() - waiting_since_ >= c_.waves_.counter_timeout)
    c_.fail(std::string(gpu_.name()) + " copy engine: no wave counter came free for " +
            c_.waves_.counter_timeout.to_string() + " (gpu.copy_engine.counter_timeout_us); wave " +
            std::to_string(wave) + " could not start");
}

void InNetworkCollective::Rank::count_for_wave(uint64_t b) {
  if (counters_.empty()) return;
  Counter& k = counters_[wave_counter_[(b - work_lo_) / per_wave_]];
  sc_assert(k.busy);
  if (++k.got < k.goal) return;
  k.busy = false;  // the goal: credits for the next wave
  --outstanding_;
  allocate_waves();
}

uint32_t InNetworkCollective::Rank::PortStream::next_wire_bytes(const net::PacketFormat& f) const {
  if (size == 0) {
    idle = true;
    return 0;
  }
  return f.wire_bytes(rank->issue_op(), rank->block_bytes(queue[head]));
}

void InNetworkCollective::Rank::PortStream::fill(net::Packet* p) {
  Rank& r = *rank;
  const uint64_t b = queue[head];
  head = (head + 1) % kQueueDepth;
  --size;
  ++r.issued_;
  r.dispatch();
  r.gpu_.trace_credits = static_cast<int>(r.window_end_ - r.work_lo_ - r.issued_);
  p->op = r.issue_op();
  p->payload_bytes = static_cast<uint16_t>(r.block_bytes(b));
  p->dtype = static_cast<uint8_t>(r.c_.dtype_);
  p->redop = static_cast<uint8_t>(r.c_.redop_);
  p->dst = 0;  // a multicast: the region says where
  switch (r.kind()) {
    case InNetKind::AllReducePush: {
      p->addr = kOutBase + b * kBlock;
      const auto home = r.c_.fabric_.home_port(r.c_.out_region_, p->addr);
      p->home_switch = home.sw;
      p->home_port = static_cast<int16_t>(home.port);
      p->dst = static_cast<uint32_t>(r.c_.fabric_.home_gpu(r.c_.out_region_, p->addr));
      p->count = 1;
      r.own_data(b, p->data);
      break;
    }
    case InNetKind::AllReducePull: p->addr = kInBase + b * kBlock; break;
    default:
      p->addr = kOutBase + b * kBlock;
      p->count = 1;
      r.own_data(b, p->data);
  }
}

// A pull response (Klenk §IV-B): the group's data less this GPU's, reduced
// by the switches; the copy engine adds its own and multicasts the result.
void InNetworkCollective::Rank::PortStream::on_response(net::Packet* p) {
  Rank& r = *rank;
  const uint64_t b = (p->addr - kInBase) / kBlock;
  const uint32_t n = p->payload_bytes;
  if (p->count != r.n_ - 1) r.wrong_ += n / kElem;  // a contribution lost or doubled
  r.c_.data_.reduce_own(r.c_.dtype_, r.c_.redop_, r.rank_, b * (kBlock / kElem), n / kElem, p->data);
  r.accept(b, p->data, n, -1);
  r.multicast(kOutBase + b * kBlock, p->data, n, static_cast<uint16_t>(r.n_));
  r.count_for_wave(b);
  r.finish_if_done();
}

void InNetworkCollective::Rank::read_region(uint64_t addr, uint32_t bytes, uint8_t* out) {
  sc_assert(addr >= kInBase && addr < kOutBase && bytes == block_bytes((addr - kInBase) / kBlock));
  own_data((addr - kInBase) / kBlock, out);
}

void InNetworkCollective::Rank::multicast(uint64_t addr, const uint8_t* data, uint32_t bytes, uint16_t count) {
  net::Packet* p = gpu_.pool().get();
  p->op = net::Op::Write;
  p->addr = addr;
  p->dst = 0;
  p->payload_bytes = static_cast<uint16_t>(bytes);
  p->count = count;
  p->dtype = static_cast<uint8_t>(c_.dtype_);
  p->redop = static_cast<uint8_t>(c_.redop_);
  std::memcpy(p->data, data, bytes);
  gpu_.post(static_cast<int>((addr / kBlock) % streams_.size()), p);
}

void InNetworkCollective::Rank::on_region_write(const net::Packet& p) {
  if (p.addr >= kFlagBase) {
    if (p.op == net::Op::Partial) partial(p);
    else barrier_done(p.data, p.count);
    return;
  }
  if (p.op == net::Op::Partial) {
    partial(p);
    return;
  }
  const uint64_t b = (p.addr - kOutBase) / kBlock;
  if (kind() == InNetKind::AllReducePush || kind() == InNetKind::AllReducePull) {
    if (p.count != n_) wrong_ += p.payload_bytes / kElem;
    accept(b, p.data, p.payload_bytes, -1);
    if (kind() == InNetKind::AllReducePush) count_for_wave(b);
  } else {
    accept(b, p.data, p.payload_bytes, owner(b));
  }
  finish_if_done();
}

// This GPU is the block's home (Klenk §IV-C, second strategy): it adds the
// evicted partials in memory and, once their counts make the group, takes
// the result and multicasts it.
void InNetworkCollective::Rank::partial(const net::Packet& p) {
  const bool flag = p.addr >= kFlagBase;
  const uint64_t b = flag ? 0 : (p.addr - kOutBase) / kBlock;
  sc_assert(flag || static_cast<int>(b % n_) == rank_);
  uint16_t& count = flag ? flag_count_ : partial_count_[b / n_];
  if (!flag && partial_data_.empty()) partial_data_.resize(partial_count_.size() * kBlock);
  uint8_t* acc = flag ? flag_data_ : partial_data_.data() + (b / n_) * kBlock;
  if (count == 0) std::memcpy(acc, p.data, p.payload_bytes);
  else
    collectives::reduce_bytes(static_cast<DType>(p.dtype), static_cast<collectives::RedOp>(p.redop), acc, p.data,
                              p.payload_bytes);
  count = static_cast<uint16_t>(count + p.count);
  if (count < n_) return;
  if (count > n_) wrong_ += p.payload_bytes / kElem;
  multicast(p.addr, acc, p.payload_bytes, count);
  if (flag) {
    barrier_done(acc, count);
    return;
  }
  accept(b, acc, p.payload_bytes, -1);
  count_for_wave(b);
  finish_if_done();
}

void InNetworkCollective::Rank::barrier_done(const uint8_t* flag, uint16_t count) {
  int32_t v = 0;
  std::memcpy(&v, flag, kElem);
  if (v != n_ || count != n_) ++wrong_;
  in_barrier_ = false;
  begin_work();
}

void InNetworkCollective::Rank::accept(uint64_t b, const uint8_t* data, uint32_t bytes, int owner) {
  wrong_ += c_.data_.mismatches(c_.dtype_, c_.redop_, data, b * (kBlock / kElem), bytes / kElem, owner);
  received_ += bytes / kElem;
}

void InNetworkCollective::Rank::finish_if_done() {
  if (finished_ || in_barrier_ || received_ < count_) return;
  finished_ = true;
  c_.rank_done();
}

void InNetworkCollective::Rank::report(std::ostream& os, const std::string& prefix) const {
  if (finished_) return;
  os << prefix << (in_barrier_ ? " in the barrier; " : " ") << "copy engine issued " << issued_ << " of "
     << work_hi_ - work_lo_ << " blocks, " << outstanding_ << " waves outstanding" << (waiting_ ? " (waiting for a counter)" : "")
     << "; " << received_ << " of " << count_ << " output elements received\n";
}

InNetworkCollective::InNetworkCollective(InNetKind kind, std::vector<Gpu*> gpus, const topo::Topology& topo,
                                         topo::MulticastFabric& fabric, DType dtype, collectives::RedOp redop,
                                         uint64_t seed, WaveParams waves, bool barrier, double endpoint_GBps)
    : kind_(kind),
      gpus_(std::move(gpus)),
      topo_(topo),
      fabric_(fabric),
      dtype_(dtype),
      redop_(redop),
      data_(seed, static_cast<int>(gpus_.size())),
      seed_(seed),
      waves_(waves),
      barrier_(barrier),
      endpoint_GBps_(endpoint_GBps) {}

InNetworkCollective::~InNetworkCollective() {
  for (Gpu* g : gpus_) {
    g->set_program(nullptr);
    g->clear_streams();
  }
}

void InNetworkCollective::start(uint64_t bytes, std::function<void()> on_done) {
  on_done_ = std::move(on_done);
  ranks_.clear();
  // The fabric manager registers this size's regions (Klenk Fig. 2, markers 1-3).
  std::vector<int> group;
  for (Gpu* g : gpus_) group.push_back(g->index());
  fabric_.clear();
  out_region_ = fabric_.add_region(kOutBase, bytes, group, true);
  if (kind_ == InNetKind::AllReducePull) {
    in_region_ = fabric_.add_region(kInBase, bytes, group, true);
    flag_region_ = fabric_.add_region(kFlagBase, kBlock, group, true);
  }
  for (int r = 0; r < static_cast<int>(gpus_.size()); ++r) ranks_.push_back(std::make_unique<Rank>(*this, r, bytes));
  running_ = static_cast<int>(ranks_.size());
  for (auto& r : ranks_) r->start();
}

void InNetworkCollective::rank_done() {
  if (--running_ == 0 && on_done_) on_done_();
}

void InNetworkCollective::fail(const std::string& why) {
  if (error_.empty()) error_ = why;
  sc_core::sc_pause();
}

uint64_t InNetworkCollective::wrong() const {
  uint64_t w = 0;
  for (const auto& r : ranks_) w += r->wrong();
  return w;
}

// Push and pull move M in and out of each GPU (Klenk §III: half the traffic
// of a software all-reduce); all-gather receives (n-1)/n M, broadcast M.
double InNetworkCollective::bound_us(uint64_t bytes) const {
  const int n = static_cast<int>(gpus_.size());
  const double factor = kind_ == InNetKind::AllGather ? collectives::gather_busbw_factor(n) : 1.0;
  return collectives::bandwidth_bound_us(bytes, factor, endpoint_GBps_);
}

double InNetworkCollective::busbw_factor() const {
  const int n = static_cast<int>(gpus_.size());
  switch (kind_) {
    case InNetKind::AllGather: return collectives::gather_busbw_factor(n);
    case InNetKind::Broadcast: return 1.0;
    default: return collectives::allreduce_busbw_factor(n);
  }
}

std::string InNetworkCollective::redop() const {
  return kind_ == InNetKind::AllGather || kind_ == InNetKind::Broadcast ? "none" : collectives::redop_name(redop_);
}

}  // namespace incsim::gpu
