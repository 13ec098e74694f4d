#include "copy_collective.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <ostream>
#include <utility>

#include "collectives/bounds.h"
#include "collectives/copy_plan.h"
#include "collectives/executor.h"
#include "collectives/layout.h"
#include "gpu/group_window.h"

namespace incsim::gpu {

using collectives::Buffer;
using collectives::ChunkRef;
using elements::DType;
using collectives::OpKind;
using CollectiveKind = collectives::Collective;

namespace {
constexpr uint32_t kFlagBytes = 4;  // a barrier's flag: one int32
constexpr uint32_t kBlock = topo::MulticastFabric::kBlockBytes;
}  // namespace

struct CopyCollective::Group {
  int window = 0;
  uint64_t base = 0;  // the window's first address
  std::vector<int> members;
  bool reads = false;  // reducing reads or barriers: a region to read from and a flag
  int out = -1, in = -1, flag = -1;
  uint64_t in_addr(uint64_t b) const { return base + GroupWindow::kIn + b * kBlock; }
  uint64_t out_addr(uint64_t b) const { return base + GroupWindow::kOut + b * kBlock; }
  uint64_t flag_addr() const { return base + GroupWindow::kFlag; }
};

// One GPU's part of the program: it hands its copy engine a descriptor per
// operation that issues blocks, translates their addresses (which port,
// which home), and takes what arrives.
class CopyCollective::Rank : public EventHandler, public collectives::RankExecutor {
 public:
  Rank(CopyCollective& c, int rank, uint64_t bytes);
  ~Rank() override;
  void start() { advance(); }
  // A unicast receive's buffer and flag in this GPU's memory, for its sender.
  void link(const std::vector<std::unique_ptr<Rank>>& ranks);
  // EventHandler
  void on_timer(uint64_t) override {}
  void on_flag(uint64_t addr) override;
  void report(std::ostream& os, const std::string& prefix) const override;
  void read_region(uint64_t addr, uint32_t bytes, uint8_t* out) override;
  void on_region_write(const net::Packet& p) override;
  // Output elements landed (at most what each operation expects) of all
  // the program lands here.
  Progress progress() const override;
  // Mismatches plus elements each operation received too few or too many times.
  uint64_t wrong() const override;

 private:
  // An operation's state beside its plan (collectives::CopyPlan); the
  // copy-engine client of one that issues.
  struct Op : CopyClient {
    Rank* rank = nullptr;
    const collectives::Operation* o = nullptr;
    int i = 0;  // its index, in the plan too
    int group = -1;
    uint64_t expect = 0, got = 0;    // elements it lands in dst, landed
    bool issuing = false;
    // A unicast transfer (s, r): the receiver's buffer and flag; the sender's
    // ports toward the receiver and whether its flag's ack is due.
    uint64_t buffer = 0, flag = 0;
    uint32_t peer_endpoint = 0;
    std::vector<int> ports;
    bool flag_due = false;
    int port_of(uint64_t b) const override { return rank->port_of(*this, b); }
    void fill(uint64_t b, net::Packet* p) override { rank->fill(*this, b, p); }
    void on_response(net::Packet* p) override { rank->on_response(*this, p); }
    void on_error(const std::string& why) override { rank->c_.fail(why); }
    void on_retired() override {
      issuing = false;
      if (o->kind == OpKind::Send) rank->send_flag(*this);
      rank->check_done(*this);
    }
  };
  // Where the acks of unicast flags come back.
  struct FlagAcks : TxStream {
    Rank* rank = nullptr;
    uint32_t next_wire_bytes(const net::PacketFormat&) const override { return 0; }
    void fill(net::Packet*) override {}
    void on_response(net::Packet* p) override { rank->flag_acked(p->addr); }
  };
  // A push home GPU's sums of evicted partials (Klenk §IV-C), per group.
  struct Home {
    std::vector<uint16_t> count;
    std::vector<uint8_t> data;
    uint16_t flag_count = 0;
    uint8_t flag_data[kBlock] = {};
    int barrier = -1;  // the barrier operation in flight
    int position = -1;  // this rank's among the group's members; -1: not one
  };

  const Group& group(const Op& op) const { return c_.groups_[op.group]; }
  const collectives::CopyPlan::Op& planned(const Op& op) const { return plan_[op.i]; }
  uint64_t block_of_chunk(uint64_t m) const { return collectives::chunk_start(m, blocks_, chunks_); }
  uint64_t chunk_of_block(uint64_t b) const;
  uint64_t elements(uint64_t lo, uint64_t hi) const {
    return (std::min(bytes_, hi * kBlock) - std::min(bytes_, lo * kBlock)) / c_.elem_;
  }
  uint32_t block_bytes(uint64_t b) const {
    return static_cast<uint32_t>(std::min<uint64_t>(kBlock, bytes_ - b * kBlock));
  }
  int port_to_home(topo::MulticastFabric::HomePort h) const {
    return c_.topo_.route_to_switch(node_, h.sw, static_cast<uint32_t>(h.port));
  }
  int owner(uint64_t b) const;  // the rank whose data output block b holds, or -1 for a sum
  void own_data(uint64_t b, uint8_t* out) const;
  int group_of(uint64_t addr) const;

  void advance();  // starts every operation that may start
  void begin(Op& op);
  void check_done(Op& op);
  void finish(Op& op);
  int port_of(const Op& op, uint64_t b) const;
  void fill(const Op& op, uint64_t b, net::Packet* p) const;
  void on_response(Op& op, net::Packet* p);
  void accept(Op& op, uint64_t b, const uint8_t* data, uint32_t bytes);  // an output block lands
  void land(int g, uint64_t b, const uint8_t* data, uint32_t bytes);
  void multicast(const Group& g, uint64_t addr, const uint8_t* data, uint32_t bytes, uint16_t count);
  void partial(int g, const net::Packet& p);
  void barrier_done(int g, const uint8_t* flag, uint16_t count);
  void send_flag(Op& op);  // a unicast send's blocks are acknowledged: its flag tells the receiver
  void flag_acked(uint64_t addr);

  CopyCollective& c_;
  Gpu& gpu_;
  CopyEngine& engine_;
  int rank_;
  uint64_t bytes_, blocks_, chunks_;
  int node_;  // in the topology
  collectives::CopyPlan plan_;
  // The ports that reach every other GPU of the collective, which pull reads
  // and multicast stores take in turn: all of a switch fabric's; on a
  // cluster a node's NVLinks, not the PCIe link to the GPU's adapter.
  std::vector<int> spread_;
  std::vector<Op> ops_;
  std::vector<std::vector<int>> receiver_;  // [group][message chunk]: the operation whose dst it is, or -1
  std::vector<Home> homes_;                 // [group]
  FlagAcks flag_acks_;
  bool sends_ = false;  // unicast sends: flag_acks_ is a stream of the GPU
  uint64_t flags_ = 0;  // the unicast receives' flags, one word each, in this GPU's memory
  uint64_t wrong_ = 0;
};

CopyCollective::Rank::Rank(CopyCollective& c, int rank, uint64_t bytes)
    : c_(c),
      gpu_(*c.gpus_[rank]),
      engine_(gpu_.copy_engine()),
      rank_(rank),
      bytes_(bytes),
      blocks_((bytes + kBlock - 1) / kBlock),
      chunks_(collectives::message_chunks(c.program_)),
      node_(c.topo_.endpoints()[gpu_.index()]),
      plan_(c.program_, rank, blocks_) {
  for (int port = 0; port < c.topo_.node(node_).ports; ++port)
    if (std::all_of(c.gpus_.begin(), c.gpus_.end(),
                    [&](const Gpu* g) { return g == &gpu_ || c.topo_.port_on_shortest_path({node_, port}, g->index()); }))
      spread_.push_back(port);
  const collectives::Program& p = c.program_;
  const int n = p.op_count(rank);
  ops_.resize(n);
  receiver_.assign(c.groups_.size(), {});
  homes_.resize(c.groups_.size());
  for (int i = 0; i < n; ++i) {
    Op& op = ops_[i];
    const collectives::Operation& o = p.op(rank, i);
    op.rank = this;
    op.o = &o;
    op.i = i;
    op.group = o.group;
    if (!o.dst.empty()) {
      op.expect = elements(plan_[i].lo, plan_[i].hi);
      if (op.group >= 0) {
        std::vector<int>& r = receiver_[op.group];
        if (r.empty()) r.assign(chunks_, -1);
        const uint32_t m = static_cast<uint32_t>(collectives::message_chunk(p, rank, o.dst));
        for (uint32_t k = m; k < m + o.dst.count; ++k) r[k] = i;
      }
    }
  }
  // Unicast receives: a buffer each for the data and a flag word each.
  int receives = 0;
  for (Op& op : ops_)
    if (op.o->kind == OpKind::Recv) {
      op.buffer = gpu_.memory().alloc(std::max<uint64_t>(1, (plan_[op.i].hi - plan_[op.i].lo) * kBlock));
      op.flag = static_cast<uint64_t>(receives++) * 8;
    }
  gpu_.attach(*this);
  if (receives) {
    flags_ = gpu_.memory().alloc(static_cast<uint64_t>(receives) * 8);
    for (Op& op : ops_)
      if (op.o->kind == OpKind::Recv) op.flag += flags_;
    gpu_.watch(*this, flags_, static_cast<uint64_t>(receives) * 8);
  }
  flag_acks_.rank = this;
  sends_ = std::any_of(ops_.begin(), ops_.end(), [](const Op& op) { return op.o->kind == OpKind::Send; });
  if (sends_) gpu_.add_stream(&flag_acks_);
  for (size_t g = 0; g < c.groups_.size(); ++g) {
    const Group& gr = c.groups_[g];
    const auto at = std::find(gr.members.begin(), gr.members.end(), rank);
    if (at == gr.members.end()) continue;
    homes_[g].position = static_cast<int>(at - gr.members.begin());
    gpu_.serve_region(*this, gr.base, gr.base + GroupWindow::kBytes);
  }
}

CopyCollective::Rank::~Rank() {
  for (Op& op : ops_) {
    if (planned(op).issues) engine_.stop(op);
    if (op.o->kind == OpKind::Recv) gpu_.memory().free(op.buffer);
  }
  if (flags_) gpu_.memory().free(flags_);
  if (sends_) gpu_.remove_stream(&flag_acks_);
  gpu_.detach(*this);
}

// The k-th send of rank a to rank b on channel c meets b's k-th receive from a
// on c (docs/programs.md): the sender learns where to write and which flag to set.
void CopyCollective::Rank::link(const std::vector<std::unique_ptr<Rank>>& ranks) {
  std::map<std::pair<int, int>, int> sent;  // (peer, channel) -> sends so far
  for (Op& op : ops_) {
    if (op.o->kind != OpKind::Send) continue;
    Rank& peer = *ranks[op.o->send_peer];
    int k = sent[{op.o->send_peer, op.o->channel}]++;
    for (const Op& r : peer.ops_)
      if (r.o->kind == OpKind::Recv && r.o->recv_peer == rank_ && r.o->channel == op.o->channel && k-- == 0) {
        op.buffer = r.buffer;
        op.flag = r.flag;
        break;
      }
    op.peer_endpoint = static_cast<uint32_t>(peer.gpu_.index());
    const topo::Topology& t = c_.topo_;
    for (int p = 0; p < t.node(node_).ports; ++p)
      if (t.port_reaches({node_, p}, peer.gpu_.index())) op.ports.push_back(p);
  }
}

uint64_t CopyCollective::Rank::chunk_of_block(uint64_t b) const {
  // Inverse of block_of_chunk: the last chunk that starts at or before b.
  uint64_t m = std::min<uint64_t>(chunks_ - 1, b * chunks_ / std::max<uint64_t>(1, blocks_));
  while (m + 1 < chunks_ && block_of_chunk(m + 1) <= b) ++m;
  while (m > 0 && block_of_chunk(m) > b) --m;
  return m;
}

int CopyCollective::Rank::owner(uint64_t b) const {
  return collectives::result_owner(c_.program_, static_cast<int64_t>(chunk_of_block(b)));
}

void CopyCollective::Rank::own_data(uint64_t b, uint8_t* out) const {
  c_.data_.fill(c_.dtype_, rank_, b * (kBlock / c_.elem_), block_bytes(b) / c_.elem_, out);
}

int CopyCollective::Rank::group_of(uint64_t addr) const {
  for (size_t g = 0; g < c_.groups_.size(); ++g)
    if (addr >= c_.groups_[g].base && addr - c_.groups_[g].base < GroupWindow::kBytes) return static_cast<int>(g);
  sc_assert(false);
  return -1;
}

// Operations start once their dependencies are done; those of a queue that
// issue run one after another, as the engine runs its descriptors (a
// barrier included: the reads behind it wait for it).
void CopyCollective::Rank::advance() {
  plan_.advance([this](int i) { begin(ops_[static_cast<size_t>(i)]); });
}

void CopyCollective::Rank::begin(Op& op) {
  const collectives::CopyPlan::Op& x = planned(op);
  const Group* g = op.group >= 0 ? &group(op) : nullptr;
  if (op.o->kind == OpKind::Copy) op.got = op.expect;  // a local copy of the own input: no traffic
  if (op.o->kind == OpKind::Barrier) {
    // An all-reduce of one flag by push (Klenk §VI-A: "an All-Reduce on a
    // flag, which is 1 packet per node").
    homes_[op.group].barrier = static_cast<int>(&op - ops_.data());
    const auto home = c_.fabric_.home_port(g->flag, g->flag_addr());
    net::Packet* p = gpu_.pool().get();
    p->op = net::Op::ReduceWrite;
    p->addr = g->flag_addr();
    p->dst = static_cast<uint32_t>(c_.fabric_.home_gpu(g->flag, g->flag_addr()));
    p->home_switch = home.sw;
    p->home_port = static_cast<int16_t>(home.port);
    p->payload_bytes = kFlagBytes;
    p->count = 1;
    p->dtype = static_cast<uint8_t>(DType::Int32);
    p->redop = static_cast<uint8_t>(elements::RedOp::Sum);
    const int32_t one = 1;
    std::memcpy(p->data, &one, kFlagBytes);
    gpu_.post(port_to_home(home), p);
    return;
  }
  if (op.o->kind == OpKind::Send && x.hi == x.lo) {
    send_flag(op);  // nothing to write: the flag alone
    return;
  }
  if (x.issues && x.hi > x.lo) {
    // The copy engine's descriptor: push writes its blocks as reduction
    // writes to the result region, pull reads them from the group, a
    // multicast writes them to the result region. The waves count what comes
    // back: push, the results that reach this GPU; pull, the pull responses.
    const OpKind k = op.o->kind;
    CopyDescriptor d;
    d.op = k == OpKind::ReduceWrite ? net::Op::ReduceWrite : k == OpKind::ReduceRead ? net::Op::PullRead : net::Op::Write;
    d.acked = k == OpKind::Send;  // a unicast write is acknowledged; its flag follows the last ack
    d.bytes = bytes_;
    d.block_bytes = kBlock;
    d.first = x.lo;
    d.end = x.hi;
    d.counted = k != OpKind::MulticastWrite && k != OpKind::Send;
    d.order_seed = c_.seed_;
    d.order_rank = static_cast<uint32_t>(rank_);
    d.reads_memory = k != OpKind::ReduceRead;
    op.issuing = !d.counted;
    engine_.start(d, c_.waves_, op);
  }
  if (x.stream_to >= 0) plan_[x.stream_to].started = true;
  check_done(op);
}

// Done: whatever lands in its dst has landed, its uncounted blocks are issued.
void CopyCollective::Rank::check_done(Op& op) {
  const collectives::CopyPlan::Op& x = planned(op);
  if (x.started && !x.done && !op.issuing && !op.flag_due && op.got >= op.expect && op.o->kind != OpKind::Barrier)
    finish(op);
}

void CopyCollective::Rank::finish(Op& op) {
  const int forward = plan_.finish(op.i);
  // The multicast that forwards a read's results ends with it, unless it
  // ended first (multimem: the read ends when its own copies come back);
  // finishing it goes on from there.
  if (forward >= 0) return finish(ops_[static_cast<size_t>(forward)]);
  if (plan_.left() == 0) {
    c_.rank_done();
    return;
  }
  advance();
}

int CopyCollective::Rank::port_of(const Op& op, uint64_t b) const {
  if (op.o->kind == OpKind::Send) return op.ports[b % op.ports.size()];
  const Group& g = group(op);
  if (op.o->kind == OpKind::ReduceWrite) return port_to_home(c_.fabric_.home_port(g.out, g.out_addr(b)));
  return spread_[b % spread_.size()];
}

void CopyCollective::Rank::fill(const Op& op, uint64_t b, net::Packet* p) const {
  p->dtype = static_cast<uint8_t>(c_.dtype_);
  p->redop = static_cast<uint8_t>(c_.redop_);
  if (op.o->kind == OpKind::Send) {  // into the receiver's buffer
    p->dst = op.peer_endpoint;
    p->addr = op.buffer + (b - planned(op).lo) * kBlock;
    own_data(b, p->data);
    return;
  }
  const Group& g = group(op);
  p->dst = 0;  // a multicast: the region says where
  switch (op.o->kind) {
    case OpKind::ReduceWrite: {
      p->addr = g.out_addr(b);
      const auto home = c_.fabric_.home_port(g.out, p->addr);
      p->home_switch = home.sw;
      p->home_port = static_cast<int16_t>(home.port);
      p->dst = static_cast<uint32_t>(c_.fabric_.home_gpu(g.out, p->addr));
      p->count = 1;
      own_data(b, p->data);
      break;
    }
    case OpKind::ReduceRead: p->addr = g.in_addr(b); break;
    default:
      p->addr = g.out_addr(b);
      p->count = 1;
      own_data(b, p->data);
  }
}

// A pull response (Klenk §IV-B): the group's data less this GPU's, reduced
// by the switches; this GPU adds its own and forwards the sum if a
// multicast follows the read. Under multimem the switches read this GPU's
// copy too, and the sum lands here from the multicast, as for the others.
void CopyCollective::Rank::on_response(Op& op, net::Packet* p) {
  if (op.o->kind == OpKind::Send) return;  // a write's ack: the engine counts it
  const Group& g = group(op);
  const uint64_t b = (p->addr - g.in_addr(0)) / kBlock;
  const uint32_t n = p->payload_bytes;
  const int members = static_cast<int>(g.members.size());
  const bool own_through_switch = c_.program_.multimem;  // a read's group keeps its own copy
  if (p->count != (own_through_switch ? members : members - 1)) wrong_ += n / c_.elem_;  // one lost or doubled
  if (!own_through_switch)
    c_.data_.reduce_own(c_.dtype_, c_.redop_, rank_, b * (kBlock / c_.elem_), n / c_.elem_, p->data);
  const int forward = planned(op).stream_to;
  if (!own_through_switch || forward < 0) accept(op, b, p->data, n);
  if (forward >= 0) {
    const Op& mc = ops_[static_cast<size_t>(forward)];
    multicast(group(mc), group(mc).out_addr(b), p->data, n, static_cast<uint16_t>(members));
  }
  engine_.complete(b);
  check_done(op);
}

void CopyCollective::Rank::read_region(uint64_t addr, uint32_t bytes, uint8_t* data) {
  const Group& g = c_.groups_[group_of(addr)];
  const uint64_t b = (addr - g.in_addr(0)) / kBlock;
  sc_assert(addr < g.out_addr(0) && bytes == block_bytes(b));
  own_data(b, data);
}

void CopyCollective::Rank::multicast(const Group& g, uint64_t addr, const uint8_t* data, uint32_t bytes,
                                     uint16_t count) {
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
  const uint64_t block = (addr - g.base + net::kMulticastBase) / kBlock;
  gpu_.post(spread_[block % spread_.size()], p);
}

void CopyCollective::Rank::on_region_write(const net::Packet& p) {
  const int g = group_of(p.addr);
  if (p.op == net::Op::Partial) {
    partial(g, p);
    return;
  }
  if (p.addr >= c_.groups_[g].flag_addr()) {
    barrier_done(g, p.data, p.count);
    return;
  }
  if (collectives::reduces(c_.program_.collective) && p.count != c_.groups_[g].members.size()) wrong_ += p.payload_bytes / c_.elem_;
  land(g, (p.addr - c_.groups_[g].out_addr(0)) / kBlock, p.data, p.payload_bytes);
}

// Output block b of group g's results lands in the operation whose dst it is.
void CopyCollective::Rank::land(int g, uint64_t b, const uint8_t* data, uint32_t bytes) {
  const std::vector<int>& r = receiver_[g];
  const int i = r.empty() ? -1 : r[chunk_of_block(b)];
  if (i < 0) {
    wrong_ += bytes / c_.elem_;  // nothing here expects it
    return;
  }
  Op& op = ops_[i];
  accept(op, b, data, bytes);
  if (planned(op).issues && op.o->kind == OpKind::ReduceWrite) engine_.complete(b);
  check_done(op);
}

void CopyCollective::Rank::accept(Op& op, uint64_t b, const uint8_t* data, uint32_t bytes) {
  wrong_ += c_.data_.mismatches(c_.dtype_, c_.redop_, data, b * (kBlock / c_.elem_), bytes / c_.elem_, owner(b));
  op.got += bytes / c_.elem_;
}

// This GPU is the block's home (Klenk §IV-C, second strategy): it adds the
// evicted partials in memory and, once their counts make the group, takes
// the result and multicasts it.
void CopyCollective::Rank::partial(int g, const net::Packet& p) {
  const Group& gr = c_.groups_[g];
  Home& h = homes_[g];
  const uint16_t members = static_cast<uint16_t>(gr.members.size());
  const bool flag = p.addr >= gr.flag_addr();
  const uint64_t b = flag ? 0 : (p.addr - gr.out_addr(0)) / kBlock;
  sc_assert(flag || static_cast<int>(b % members) == h.position);
  if (!flag && h.count.empty()) h.count.assign((blocks_ + members - 1) / members, 0);
  uint16_t& count = flag ? h.flag_count : h.count[b / members];
  if (!flag && h.data.empty()) h.data.resize(h.count.size() * kBlock);
  uint8_t* acc = flag ? h.flag_data : h.data.data() + (b / members) * kBlock;
  if (count == 0) std::memcpy(acc, p.data, p.payload_bytes);
  else
    elements::reduce_bytes(static_cast<DType>(p.dtype), static_cast<elements::RedOp>(p.redop), acc, p.data,
                              p.payload_bytes);
  count = static_cast<uint16_t>(count + p.count);
  if (count < members) return;
  if (count > members) wrong_ += p.payload_bytes / c_.elem_;
  multicast(gr, p.addr, acc, p.payload_bytes, count);
  if (flag) {
    const uint16_t got = count;
    count = 0;  // the next barrier
    barrier_done(g, acc, got);
    return;
  }
  land(g, b, acc, p.payload_bytes);
}

void CopyCollective::Rank::barrier_done(int g, const uint8_t* flag, uint16_t count) {
  int32_t v = 0;
  std::memcpy(&v, flag, kFlagBytes);
  const int members = static_cast<int>(c_.groups_[g].members.size());
  if (v != members || count != members) ++wrong_;
  const int i = std::exchange(homes_[g].barrier, -1);
  sc_assert(i >= 0);
  finish(ops_[i]);
}

void CopyCollective::Rank::send_flag(Op& op) {
  op.flag_due = true;
  gpu_.store_word(op.ports[0], op.peer_endpoint, op.flag, 1, flag_acks_.id);
}

void CopyCollective::Rank::flag_acked(uint64_t addr) {
  for (Op& op : ops_)
    if (op.flag_due && op.flag == addr) {
      op.flag_due = false;
      check_done(op);
      return;
    }
}

// A unicast receive's flag is set: its blocks are in memory.
void CopyCollective::Rank::on_flag(uint64_t addr) {
  for (Op& op : ops_) {
    if (op.o->kind != OpKind::Recv || op.flag != addr || op.got) continue;
    const collectives::CopyPlan::Op& x = planned(op);
    for (uint64_t b = x.lo; b < x.hi; ++b)
      accept(op, b, gpu_.memory().at(op.buffer + (b - x.lo) * kBlock, block_bytes(b)), block_bytes(b));
    check_done(op);
    return;
  }
}

collectives::RankExecutor::Progress CopyCollective::Rank::progress() const {
  Progress p;
  for (const Op& op : ops_) {
    p.done += std::min(op.got, op.expect);
    p.all += op.expect;
  }
  return p;
}

uint64_t CopyCollective::Rank::wrong() const {
  uint64_t w = wrong_;
  for (const Op& op : ops_) w += op.got > op.expect ? op.got - op.expect : op.expect - op.got;
  return w;
}

void CopyCollective::Rank::report(std::ostream& os, const std::string& prefix) const {
  if (plan_.left() == 0) return;
  const bool barrier = std::any_of(homes_.begin(), homes_.end(), [](const Home& h) { return h.barrier >= 0; });
  const Progress p = progress();
  os << prefix << (barrier ? " in the barrier; " : " ") << p.done << " of " << p.all << " output elements received\n";
}

CopyCollective::CopyCollective(collectives::Program program, std::vector<Gpu*> gpus, const topo::Topology& topo,
                               topo::MulticastFabric& fabric, DType dtype, elements::RedOp redop, uint64_t seed,
                               WaveParams waves)
    : program_(std::move(program)),
      gpus_(std::move(gpus)),
      topo_(topo),
      fabric_(fabric),
      dtype_(dtype),
      elem_(elements::dtype_bytes(dtype)),
      redop_(redop),
      data_(seed, static_cast<int>(gpus_.size()), dtype, redop),
      seed_(seed),
      waves_(waves) {
  GroupWindow::claim(fabric_, program_.groups, [this](int r) { return gpus_[r]->index(); }, groups_);
  for (const collectives::Operation& o : program_.ops)
    if (o.kind == OpKind::ReduceRead || o.kind == OpKind::Barrier) groups_[o.group].reads = true;
}

CopyCollective::~CopyCollective() {
  ranks_.clear();
  remove_regions();
  for (const Group& g : groups_) fabric_.release_window(g.window);
}

void CopyCollective::remove_regions() {
  for (Group& g : groups_)
    for (int* r : {&g.out, &g.in, &g.flag})
      if (*r >= 0) fabric_.remove_region(std::exchange(*r, -1));
}

void CopyCollective::start(uint64_t bytes, std::function<void()> on_done) {
  on_done_ = std::move(on_done);
  ranks_.clear();
  // The fabric manager registers this size's regions (Klenk Fig. 2, markers 1-3).
  remove_regions();
  for (Group& g : groups_) {
    std::vector<int> gpus;
    for (int r : g.members) gpus.push_back(gpus_[r]->index());
    // multimem: a group that is read reads and writes its members' own copies through the switches.
    const bool own_through_switch = program_.multimem && g.reads;
    g.out = fabric_.add_region(g.out_addr(0), bytes, gpus, !own_through_switch);
    if (g.reads) {
      g.in = fabric_.add_region(g.in_addr(0), bytes, gpus, !own_through_switch);
      g.flag = fabric_.add_region(g.flag_addr(), kBlock, gpus, true);
    }
  }
  for (int r = 0; r < program_.ranks; ++r) ranks_.push_back(std::make_unique<Rank>(*this, r, bytes));
  for (auto& r : ranks_) r->link(ranks_);
  running_ = program_.ranks;
  for (auto& r : ranks_) r->start();
}

void CopyCollective::rank_done() {
  if (--running_ == 0 && on_done_) on_done_();
}

void CopyCollective::fail(const std::string& why) {
  if (error_.empty()) error_ = why;
  sc_core::sc_pause();
}

uint64_t CopyCollective::wrong() const { return collectives::wrong(ranks_); }

double CopyCollective::done_fraction() const { return collectives::done_fraction(ranks_); }

std::string CopyCollective::redop() const {
  return collectives::reduces(program_.collective) ? elements::redop_name(redop_) : "none";
}

std::string CopyCollective::cannot_run(const collectives::Program& p) {
  if (p.collective == CollectiveKind::AllToAll)
    return "the copy engines run no alltoall (their blocks land where they lie in the message, and an alltoall's "
           "move to another rank's place); give its operations to the cores";
  // Their in-network operations give every member the result.
  if (p.collective == CollectiveKind::Reduce || p.collective == CollectiveKind::Gather ||
      p.collective == CollectiveKind::Scatter)
    return std::string("the copy engines run no ") + collectives::collective_name(p.collective) +
           " (their in-network operations give every member the result); give its operations to the cores";
  const uint32_t chunks = collectives::message_chunks(p);
  for (int r = 0; r < p.ranks; ++r) {
    const collectives::Buffers& b = p.buffers[r];
    if ((collectives::buffer_shape(p.collective) == CollectiveKind::AllGather ? b.output : b.input) != chunks)
      return "rank " + std::to_string(r) + "'s buffers cut the message into other chunks than rank 0's";
    std::vector<std::vector<char>> received(p.groups.size());
    for (int i = 0; i < p.op_count(r); ++i) {
      const collectives::Operation& o = p.op(r, i);
      const std::string what = "rank " + std::to_string(r) + "'s operation " + std::to_string(i) + " (" +
                               collectives::op_name(o.kind) + ")";
      if (o.engine != collectives::Engine::CopyEngine)
        return what + " runs on the " + collectives::engine_name(o.engine) +
               " engine; a program runs on one engine, here the copy engine";
      if (o.kind == OpKind::Send && o.src.buf != Buffer::Input)
        return what + " sends an output chunk; the copy engine sends its input (it does not keep what it receives)";
      if (o.src.buf == Buffer::Scratch || o.dst.buf == Buffer::Scratch)
        return what + " names a scratch chunk; the copy engine has no scratch buffer yet";
      if ((o.kind == OpKind::ReduceWrite || o.kind == OpKind::ReduceRead) && o.src.empty())
        return what + " contributes nothing; in a switch's reduction every member of the group contributes";
      if (o.kind == OpKind::ReduceWrite && o.dst.empty())
        return what + " does not take the sum; a reducing write's sum is multicast to every member (Klenk §IV-A)";
      if ((o.kind == OpKind::ReduceWrite || o.kind == OpKind::ReduceRead) && o.src.buf != Buffer::Input)
        return what + " reduces its output; the switches reduce the members' inputs";
      if (o.kind == OpKind::MulticastWrite && !o.src.empty() && o.src.buf == Buffer::Output) {
        const bool follows = o.dep_count == 1 && p.op(r, static_cast<int>(p.deps_of(o)[0])).kind == OpKind::ReduceRead &&
                             p.op(r, static_cast<int>(p.deps_of(o)[0])).dst == o.src;
        if (!follows)
          return what + " multicasts an output chunk that is not the result of the one reducing read it depends on; "
                        "the copy engine multicasts its input or forwards a read's results";
      }
      if (in_network(o.kind) && !o.dst.empty()) {
        std::vector<char>& got = received[o.group];
        got.resize(chunks, 0);
        const uint32_t m = static_cast<uint32_t>(collectives::message_chunk(p, r, o.dst));
        for (uint32_t k = m; k < m + o.dst.count && k < chunks; ++k)
          if (got[k]++) return what + " receives message chunk " + std::to_string(k) + " a second time in group " +
                               std::to_string(o.group) + "; the copy engine takes a chunk once per group";
      }
    }
  }
  return {};
}

}  // namespace incsim::gpu
