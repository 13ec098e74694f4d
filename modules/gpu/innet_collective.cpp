#include "innet_collective.h"

#include <algorithm>
#include <cstring>
#include <ostream>
#include <utility>

#include "collectives/bounds.h"
#include "gpu/copy_engine.h"

namespace incsim::gpu {

using collectives::DType;
using sc_core::sc_time;

namespace {
constexpr uint32_t kElem = 4;  // float32 and int32
constexpr uint32_t kBlock = topo::MulticastFabric::kBlockBytes;
// Region addresses in the global address space (Klenk Fig. 2), in the
// collective's window of it: input, output and flag regions.
constexpr uint64_t kWindowBytes = 1ull << 46;
constexpr uint64_t kInOffset = 0, kOutOffset = 1ull << 44, kFlagOffset = 2ull << 44;

}  // namespace

// One GPU's program: it programs its copy engine with a descriptor of the
// blocks it issues, translates their addresses (which port, which home), and
// takes what arrives.
class InNetworkCollective::Rank : public Program, public CopyClient {
 public:
  Rank(InNetworkCollective& c, int rank, uint64_t bytes);
  ~Rank() override;
  void start();
  // Program
  void on_timer(uint64_t) override {}
  void on_flag(uint64_t) override {}
  void report(std::ostream& os, const std::string& prefix) const override;
  void read_region(uint64_t addr, uint32_t bytes, uint8_t* out) override;
  void on_region_write(const net::Packet& p) override;
  // CopyClient
  int port_of(uint64_t b) const override;
  void fill(uint64_t b, net::Packet* p) override;
  void on_response(net::Packet* p) override;
  void on_error(const std::string& why) override { c_.fail(why); }
  // Mismatches plus output elements received too few or too many times.
  uint64_t received() const { return std::min(received_, count_); }
  uint64_t count() const { return count_; }
  uint64_t wrong() const { return wrong_ + (received_ > count_ ? received_ - count_ : count_ - received_); }

 private:
  InNetKind kind() const { return c_.kind_; }
  bool pulls() const { return kind() == InNetKind::AllReducePull || kind() == InNetKind::ReduceScatterPull; }
  bool reduces() const { return kind() == InNetKind::AllReducePush || pulls(); }
  uint32_t block_bytes(uint64_t b) const {
    return static_cast<uint32_t>(std::min<uint64_t>(kBlock, bytes_ - b * kBlock));
  }
  int port_to_home(topo::MulticastFabric::HomePort h) const {
    return c_.topo_.route_to_switch(node_, h.sw, static_cast<uint32_t>(h.port));
  }
  uint64_t in(uint64_t b) const { return c_.base_ + kInOffset + b * kBlock; }  // block b's address in a region
  uint64_t out(uint64_t b) const { return c_.base_ + kOutOffset + b * kBlock; }
  uint64_t flag() const { return c_.base_ + kFlagOffset; }
  void own_data(uint64_t b, uint8_t* out) const;
  int owner(uint64_t b) const;  // the rank whose input block b is (all-gather, broadcast)
  void accept(uint64_t b, const uint8_t* data, uint32_t bytes, int owner);  // an output block lands here
  void multicast(uint64_t addr, const uint8_t* data, uint32_t bytes, uint16_t count);
  void partial(const net::Packet& p);
  void barrier_done(const uint8_t* flag, uint16_t count);  // the flag's all-reduce has landed
  void begin_work();
  void finish_if_done();

  InNetworkCollective& c_;
  Gpu& gpu_;
  CopyEngine& engine_;
  int rank_, n_;
  uint64_t bytes_, count_, blocks_;
  uint64_t work_lo_ = 0, work_hi_ = 0;  // blocks this copy engine issues
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
      engine_(gpu_.copy_engine()),
      rank_(rank),
      n_(static_cast<int>(c.gpus_.size())),
      bytes_(bytes),
      count_(bytes / kElem),
      blocks_((bytes + kBlock - 1) / kBlock) {
  switch (kind()) {
    case InNetKind::AllReducePush: work_lo_ = 0, work_hi_ = blocks_; break;
    case InNetKind::Broadcast: work_lo_ = 0, work_hi_ = rank == 0 ? blocks_ : 0; break;
    default:  // each rank's 1/n of the blocks
      work_lo_ = blocks_ * rank / n_;
      work_hi_ = blocks_ * (rank + 1) / n_;
  }
  // A reduce-scatter's output is this rank's share.
  if (kind() == InNetKind::ReduceScatterPull)
    count_ = (std::min(bytes_, work_hi_ * kBlock) - std::min(bytes_, work_lo_ * kBlock)) / kElem;
  node_ = c.topo_.endpoints()[gpu_.index()];
  if (kind() == InNetKind::AllReducePush) partial_count_.assign((blocks_ + n_ - 1) / n_, 0);
  gpu_.attach(*this);
  gpu_.serve_region(*this, c.base_, c.base_ + kWindowBytes);
}

InNetworkCollective::Rank::~Rank() {
  engine_.stop(*this);
  gpu_.detach(*this);
}

void InNetworkCollective::Rank::start() {
  // What this rank already holds of the output: its own input.
  if (kind() == InNetKind::AllGather || (kind() == InNetKind::Broadcast && rank_ == 0))
    for (uint64_t b = work_lo_; b < work_hi_; ++b) received_ += block_bytes(b) / kElem;
  if (pulls() && c_.barrier_) {
    // The barrier: a push all-reduce of one flag (Klenk §VI-A: "an
    // All-Reduce on a flag, which is 1 packet per node").
    in_barrier_ = true;
    const auto home = c_.fabric_.home_port(c_.flag_region_, flag());
    net::Packet* p = gpu_.pool().get();
    p->op = net::Op::ReduceWrite;
    p->addr = flag();
    p->dst = static_cast<uint32_t>(c_.fabric_.home_gpu(c_.flag_region_, flag()));
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

// The copy engine's descriptor: push writes every block of the input as
// reduction writes to the output region; pull reads its 1/n of the input
// region; all-gather and broadcast write their blocks to the output region.
// The waves count what comes back: push, the results that reach this GPU;
// pull, the pull responses.
void InNetworkCollective::Rank::begin_work() {
  CopyDescriptor d;
  d.op = kind() == InNetKind::AllReducePush   ? net::Op::ReduceWrite
         : pulls()                            ? net::Op::PullRead
                                              : net::Op::Write;
  d.bytes = bytes_;
  d.block_bytes = kBlock;
  d.first = work_lo_;
  d.end = work_hi_;
  d.counted = reduces();
  d.order_seed = c_.seed_;
  d.order_rank = static_cast<uint32_t>(rank_);
  d.reads_memory = !pulls();
  engine_.start(d, c_.waves_, *this);
  finish_if_done();
}

int InNetworkCollective::Rank::port_of(uint64_t b) const {
  if (kind() == InNetKind::AllReducePush) return port_to_home(c_.fabric_.home_port(c_.out_region_, out(b)));
  return static_cast<int>(b % gpu_.num_ports());
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

void InNetworkCollective::Rank::fill(uint64_t b, net::Packet* p) {
  p->dtype = static_cast<uint8_t>(c_.dtype_);
  p->redop = static_cast<uint8_t>(c_.redop_);
  p->dst = 0;  // a multicast: the region says where
  switch (kind()) {
    case InNetKind::AllReducePush: {
      p->addr = out(b);
      const auto home = c_.fabric_.home_port(c_.out_region_, p->addr);
      p->home_switch = home.sw;
      p->home_port = static_cast<int16_t>(home.port);
      p->dst = static_cast<uint32_t>(c_.fabric_.home_gpu(c_.out_region_, p->addr));
      p->count = 1;
      own_data(b, p->data);
      break;
    }
    case InNetKind::AllReducePull:
    case InNetKind::ReduceScatterPull: p->addr = in(b); break;
    default:
      p->addr = out(b);
      p->count = 1;
      own_data(b, p->data);
  }
}

// A pull response (Klenk §IV-B): the group's data less this GPU's, reduced
// by the switches; the program adds its own and, for an all-reduce,
// multicasts the result.
void InNetworkCollective::Rank::on_response(net::Packet* p) {
  const uint64_t b = (p->addr - in(0)) / kBlock;
  const uint32_t n = p->payload_bytes;
  if (p->count != n_ - 1) wrong_ += n / kElem;  // a contribution lost or doubled
  c_.data_.reduce_own(c_.dtype_, c_.redop_, rank_, b * (kBlock / kElem), n / kElem, p->data);
  accept(b, p->data, n, -1);
  if (kind() == InNetKind::AllReducePull) multicast(out(b), p->data, n, static_cast<uint16_t>(n_));
  engine_.complete(b);
  finish_if_done();
}

void InNetworkCollective::Rank::read_region(uint64_t addr, uint32_t bytes, uint8_t* data) {
  sc_assert(addr >= in(0) && addr < out(0) && bytes == block_bytes((addr - in(0)) / kBlock));
  own_data((addr - in(0)) / kBlock, data);
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
  // Ports in turn by block, as window 0 numbers it: a collective's traffic
  // does not depend on which window it holds.
  const uint64_t block = (addr - c_.base_ + net::kMulticastBase) / kBlock;
  gpu_.post(static_cast<int>(block % gpu_.num_ports()), p);
}

void InNetworkCollective::Rank::on_region_write(const net::Packet& p) {
  if (p.addr >= flag()) {
    if (p.op == net::Op::Partial) partial(p);
    else barrier_done(p.data, p.count);
    return;
  }
  if (p.op == net::Op::Partial) {
    partial(p);
    return;
  }
  const uint64_t b = (p.addr - out(0)) / kBlock;
  if (reduces()) {
    if (p.count != n_) wrong_ += p.payload_bytes / kElem;
    accept(b, p.data, p.payload_bytes, -1);
    if (kind() == InNetKind::AllReducePush) engine_.complete(b);
  } else {
    accept(b, p.data, p.payload_bytes, owner(b));
  }
  finish_if_done();
}

// This GPU is the block's home (Klenk §IV-C, second strategy): it adds the
// evicted partials in memory and, once their counts make the group, takes
// the result and multicasts it.
void InNetworkCollective::Rank::partial(const net::Packet& p) {
  const bool flag = p.addr >= this->flag();
  const uint64_t b = flag ? 0 : (p.addr - out(0)) / kBlock;
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
  engine_.complete(b);
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
  os << prefix << (in_barrier_ ? " in the barrier; " : " ") << received_ << " of " << count_
     << " output elements received\n";
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
      endpoint_GBps_(endpoint_GBps),
      window_(fabric.claim_window()),
      base_(net::kMulticastBase + kWindowBytes * static_cast<uint64_t>(window_)) {}

InNetworkCollective::~InNetworkCollective() {
  ranks_.clear();
  remove_regions();
  fabric_.release_window(window_);
}

void InNetworkCollective::remove_regions() {
  for (int* r : {&out_region_, &in_region_, &flag_region_})
    if (*r >= 0) fabric_.remove_region(std::exchange(*r, -1));
}

void InNetworkCollective::start(uint64_t bytes, std::function<void()> on_done) {
  on_done_ = std::move(on_done);
  ranks_.clear();
  // The fabric manager registers this size's regions (Klenk Fig. 2, markers 1-3).
  std::vector<int> group;
  for (Gpu* g : gpus_) group.push_back(g->index());
  remove_regions();
  out_region_ = fabric_.add_region(base_ + kOutOffset, bytes, group, true);
  if (kind_ == InNetKind::AllReducePull || kind_ == InNetKind::ReduceScatterPull) {
    in_region_ = fabric_.add_region(base_ + kInOffset, bytes, group, true);
    flag_region_ = fabric_.add_region(base_ + kFlagOffset, kBlock, group, true);
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

double InNetworkCollective::done_fraction() const {
  uint64_t got = 0, all = 0;
  for (const auto& r : ranks_) {
    got += r->received();
    all += r->count();
  }
  return all ? static_cast<double>(got) / static_cast<double>(all) : -1;
}

// Push and pull move M in and out of each GPU (Klenk §III: half the traffic
// of a software all-reduce); all-gather receives (n-1)/n M, broadcast M;
// reduce-scatter sends (n-1)/n M, its answers to the others' pulls.
double InNetworkCollective::bound_us(uint64_t bytes) const {
  const int n = static_cast<int>(gpus_.size());
  const bool gather = kind_ == InNetKind::AllGather || kind_ == InNetKind::ReduceScatterPull;
  const double factor = gather ? collectives::gather_busbw_factor(n) : 1.0;
  return collectives::bandwidth_bound_us(bytes, factor, endpoint_GBps_);
}

double InNetworkCollective::busbw_factor() const {
  const int n = static_cast<int>(gpus_.size());
  switch (kind_) {
    case InNetKind::AllGather:
    case InNetKind::ReduceScatterPull: return collectives::gather_busbw_factor(n);
    case InNetKind::Broadcast: return 1.0;
    default: return collectives::allreduce_busbw_factor(n);
  }
}

std::string InNetworkCollective::redop() const {
  return kind_ == InNetKind::AllGather || kind_ == InNetKind::Broadcast ? "none" : collectives::redop_name(redop_);
}

}  // namespace incsim::gpu
