#include "flow/copy_flows.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "collectives/copy_plan.h"
#include "collectives/layout.h"
#include "core/error.h"
#include "topology/multicast.h"

namespace incsim::flow {

using collectives::ChunkRef;
using collectives::OpKind;
using collectives::Operation;

namespace {

constexpr uint64_t kBlock = topo::MulticastFabric::kBlockBytes;  // the copy engines' unit (Klenk §IV-D)

// A group whose members read through the switches under multimem reads and
// writes their own copies there too (gpu/copy_collective.cpp, start).
std::vector<char> own_copies(const collectives::Program& p) {
  std::vector<char> own(p.groups.size(), 0);
  if (p.multimem)
    for (const Operation& o : p.ops)
      if (o.kind == OpKind::ReduceRead || o.kind == OpKind::Barrier) own[static_cast<size_t>(o.group)] = 1;
  return own;
}
}  // namespace

CopyFlows::CopyFlows(collectives::Program p, const FlowMachine& m, std::vector<int> endpoints, CopyCosts costs,
                     uint32_t elem_bytes, uint64_t seed, SharedNetwork* shared)
    : p_(std::move(p)),
      m_(m),
      endpoints_(std::move(endpoints)),
      costs_(costs),
      elem_(elem_bytes),
      seed_(seed),
      shared_(shared),
      graph_(shared ? &shared->graph : &own_graph_.emplace(m, std::set<std::pair<int, int>>{})),
      innet_(p_, m_, endpoints_, *graph_, costs_.mem_ns, costs_.jitter_ns, own_copies(p_)) {}

CopyFlows::~CopyFlows() = default;

// One message's run: every rank's operations, as gpu::CopyCollective::Rank
// runs them.
class CopyFlows::Run : public RunFlows {
 public:
  Run(CopyFlows& f, uint64_t bytes, Network* on);
  ~Run() override {
    for (int l : links_) net_->remove_link(l);
  }
  // Starts every rank at the network's now; `done` (if any) gets the result at the last rank's end.
  void begin(Done done) {
    done_ = std::move(done);
    for (Rank& k : ranks_) advance(k);
  }
  Result go(const Network::Callback& tick) {
    begin({});
    net_->run(tick);
    for (const Rank& k : ranks_)
      for (size_t i = 0; i < k.ops.size(); ++i)
        if (!k.plan[static_cast<int>(i)].done)
          throw UserError("the program stalls as flows: rank " + std::to_string(k.r) + "'s operation " +
                          std::to_string(i) + " (" + collectives::op_name(f_.p_.op(k.r, static_cast<int>(i)).kind) +
                          ") never ends");
    return result(end_, transfers_, *f_.graph_);
  }
  double now() const { return net_->now(); }
  double done_share() const { return static_cast<double>(ops_done_) / static_cast<double>(std::max<uint64_t>(ops_, 1)); }

 private:
  // What the plan (collectives::CopyPlan) does not hold.
  struct Op {
    uint64_t expect = 0, got = 0;   // bytes it lands in dst, landed
    int peer_op = -1;               // a send: its receive at the peer
    bool issuing = false;
  };
  struct Rank {
    int r = 0;
    collectives::CopyPlan plan;
    std::vector<Op> ops;
    std::unordered_map<uint64_t, int> receiver;  // (group, message chunk): the operation whose dst it is
    int table_link = -1;  // its reads' table entries (InNetwork::Shape::table_rate), on a network of its own
  };
  const Operation& op(int r, int i) const { return f_.p_.op(r, i); }
  uint64_t block_of_chunk(uint64_t m) const { return collectives::chunk_start(m, blocks_, chunks_); }
  uint64_t span(uint64_t lo, uint64_t hi) const { return std::min(bytes_, hi * kBlock) - std::min(bytes_, lo * kBlock); }
  static uint64_t key(int g, int64_t m) { return static_cast<uint64_t>(g) << 32 | static_cast<uint32_t>(m); }
  double access() { return memory_access(f_.costs_.mem_ns, f_.costs_.jitter_ns, f_.seed_, draws_++); }
  double mem() const { return f_.costs_.mem_ns + f_.costs_.jitter_ns / 2; }
  // The expected last of `blocks` memory accesses issued evenly over `spread` ns, each with its own jitter.
  double last_mem(double spread, uint64_t blocks) const {
    return last_access(f_.costs_.mem_ns, f_.costs_.jitter_ns, spread, blocks, 1);
  }

  void advance(Rank& k);
  void begin_op(Rank& k, int i);
  void check_done(Rank& k, int i);
  void finish(Rank& k, int i);
  // A link capping a flow at `rate` bytes per ns, or -1 where it is infinite.
  int cap(double rate);
  // The wave controller's rate for descriptors whose blocks come back `rtt` ns after they leave.
  double waves_rate(double rtt) const;
  void push(Rank& k, int i);
  void read(Rank& k, int i);
  void multicast(Rank& k, int i);
  void barrier(Rank& k, int i);
  void send(Rank& k, int i);
  // Rank `from`'s operation i lands at `member`: each of its chunks at the operation there whose dst it is.
  void land(int from, int i, int member);
  void land_multicast(int r, int i, const InNetwork::Shape& shape, double delay);

  CopyFlows& f_;
  Done done_;
  uint64_t bytes_, blocks_, chunks_;
  std::vector<Rank> ranks_;
  // Pushes and barriers waiting for their group: (group, first message chunk) -> the members' (rank, operation).
  std::map<std::pair<int, int64_t>, std::vector<std::pair<int, int>>> joins_;
  std::vector<int> links_;  // the caps it added
  uint64_t draws_ = 0, transfers_ = 0, ops_ = 0, ops_done_ = 0;
  int running_ = 0;
  double end_ = 0;
};

CopyFlows::Run::Run(CopyFlows& f, uint64_t bytes, Network* on)
    : RunFlows(on, *f.graph_),
      f_(f),
      bytes_(bytes),
      blocks_((bytes + kBlock - 1) / kBlock),
      chunks_(collectives::message_chunks(f.p_)) {
  const collectives::Program& p = f.p_;
  ranks_.resize(static_cast<size_t>(p.ranks));
  for (int r = 0; r < p.ranks; ++r) {
    Rank& k = ranks_[static_cast<size_t>(r)];
    k.r = r;
    k.plan = collectives::CopyPlan(p, r, blocks_);
    const int n = k.plan.size();
    k.ops.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const Operation& o = op(r, i);
      if (o.dst.empty()) continue;
      k.ops[static_cast<size_t>(i)].expect = span(k.plan[i].lo, k.plan[i].hi);
      if (o.group >= 0) {
        const int64_t m = collectives::message_chunk(p, r, o.dst);
        for (uint32_t j = 0; j < o.dst.count; ++j) k.receiver[key(o.group, m + j)] = i;
      }
    }
    ops_ += static_cast<uint64_t>(n);
  }
  const std::vector<std::vector<int>> takes = collectives::receiving_ops(p);
  for (Rank& k : ranks_)
    for (size_t i = 0; i < k.ops.size(); ++i) k.ops[i].peer_op = takes[static_cast<size_t>(k.r)][i];
  running_ = p.ranks;
}

// Operations start once their dependencies are done; those of a queue that
// issue run one after another, as the engine runs its descriptors.
void CopyFlows::Run::advance(Rank& k) {
  k.plan.advance([this, &k](int i) { begin_op(k, i); });
}

void CopyFlows::Run::begin_op(Rank& k, int i) {
  Op& x = k.ops[static_cast<size_t>(i)];
  const collectives::CopyPlan::Op& planned = k.plan[i];
  const Operation& o = op(k.r, i);
  if (o.kind == OpKind::Copy) x.got = x.expect;  // its own input: no traffic
  if (o.kind == OpKind::Barrier) return barrier(k, i);
  if (o.kind == OpKind::Send) {
    x.issuing = true;
    return send(k, i);
  }
  if (planned.issues && planned.hi > planned.lo) {
    ++transfers_;
    // A multicast's blocks are not counted: it is done when the last has left.
    x.issuing = o.kind == OpKind::MulticastWrite;
    if (o.kind == OpKind::ReduceWrite) push(k, i);
    else if (o.kind == OpKind::ReduceRead) read(k, i);
    else multicast(k, i);
  }
  if (planned.stream_to >= 0) k.plan[planned.stream_to].started = true;
  check_done(k, i);
}

void CopyFlows::Run::check_done(Rank& k, int i) {
  const Op& x = k.ops[static_cast<size_t>(i)];
  if (k.plan[i].started && !k.plan[i].done && !x.issuing && x.got >= x.expect && op(k.r, i).kind != OpKind::Barrier)
    finish(k, i);
}

void CopyFlows::Run::finish(Rank& k, int i) {
  ++ops_done_;
  // The multicast that forwards a read's results ends with it.
  if (const int forward = k.plan.finish(i); forward >= 0) return finish(k, forward);
  if (k.plan.left() == 0) {
    if (--running_ == 0) {
      end_ = net_->now();
      if (done_) done_(result(end_, transfers_, *f_.graph_));
    }
    return;
  }
  advance(k);
}

int CopyFlows::Run::cap(double rate) {
  if (!(rate < std::numeric_limits<double>::infinity())) return -1;
  links_.push_back(net_->add_link(rate));
  return links_.back();
}

// A wave's counter frees once its last block's answer is back, and its
// credits go to the wave W later: W waves per a wave's issue plus the round
// trip (Klenk §IV-F1).
double CopyFlows::Run::waves_rate(double rtt) const {
  const CopyCosts& c = f_.costs_;
  if (c.waves <= 0) return std::numeric_limits<double>::infinity();
  const double wave = static_cast<double>(c.wave_bytes);
  return c.waves * wave / (wave / c.b_in_GBps + rtt);
}

// Klenk §IV-C: every member's writes go to the blocks' home ports, which
// sum them and multicast the sum back. The switches can sum nothing before
// the last member's first writes, so the flow starts then; each member's
// waves count the sums that come back.
void CopyFlows::Run::push(Rank& k, int i) {
  const Operation& o = op(k.r, i);
  const std::vector<int>& members = f_.p_.groups[static_cast<size_t>(o.group)];
  const auto at = std::make_pair(static_cast<int>(o.group), collectives::message_chunk(f_.p_, k.r, o.src));
  auto& joined = joins_[at];
  joined.emplace_back(k.r, i);
  if (joined.size() < members.size()) return;
  const std::vector<std::pair<int, int>> all = std::move(joined);
  joins_.erase(at);
  const InNetwork::Shape& shape = f_.innet_.shape_of(k.r, op(k.r, i));
  std::vector<Network::Use> uses = shape.uses;
  // Where the waves bind (they cannot keep the GPU's injection bandwidth
  // busy), a GPU's ports idle between them, and each port's first write of
  // a wave waits for a read of its data: the slowest of the GPU's ports'
  // reads adds to the round trip.
  double rate = waves_rate(shape.latency);
  if (rate < f_.costs_.b_in_GBps) {
    const topo::Topology& t = *f_.m_.t;
    const int ports = t.node(t.endpoints()[static_cast<size_t>(f_.endpoints_[static_cast<size_t>(k.r)])]).ports;
    rate = waves_rate(shape.latency +
                      last_access(f_.costs_.mem_ns, f_.costs_.jitter_ns, 0, static_cast<uint64_t>(ports), 1));
  }
  if (const int l = cap(rate); l >= 0) uses.push_back({l, 1.0});
  const double bytes = static_cast<double>(span(k.plan[i].lo, k.plan[i].hi));
  // The engines read their first data, then write at the rate the network gives.
  after(access(), [this, all, uses = std::move(uses), bytes, latency = shape.latency] {
    flow(uses, bytes, latency, [this, all] {
      for (const auto& [r, op_index] : all) land(all.front().first, all.front().second, r);
    });
  });
}

// Klenk §IV-B: the reader's requests spread over its ports; the switches
// read every member and return the sum, which, where a multicast forwards
// it, goes out to the group block by block as it comes back: one flow
// carries both. The waves count the answers.
void CopyFlows::Run::read(Rank& k, int i) {
  const collectives::CopyPlan::Op& x = k.plan[i];
  const InNetwork::Shape& shape = f_.innet_.shape_of(k.r, op(k.r, i));
  const InNetwork::Shape* forward = x.stream_to >= 0 ? &f_.innet_.shape_of(k.r, op(k.r, x.stream_to)) : nullptr;
  std::vector<Network::Use> uses = shape.uses;
  if (forward) uses.insert(uses.end(), forward->uses.begin(), forward->uses.end());
  const double rtt = shape.latency + mem();
  if (const int l = cap(waves_rate(rtt)); l >= 0) uses.push_back({l, 1.0});
  if (shape.table_rate > 0) {
    int& link = shared_ ? f_.shared_->table_links.try_emplace(f_.endpoints_[static_cast<size_t>(k.r)], -1).first->second
                        : k.table_link;
    if (link < 0) {
      link = net_->add_link(shape.table_rate);
      if (!shared_) links_.push_back(link);
    }
    uses.push_back({link, 1.0});
  }
  const uint64_t bytes = span(x.lo, x.hi);
  const double began = net_->now();
  flow(uses, static_cast<double>(bytes), 0, [this, &k, i, forward, began, bytes, latency = shape.latency] {
    // The last request has left; its answers come back a round trip and a
    // member's memory access later.
    const double back = latency + last_mem(net_->now() - began, (bytes + kBlock - 1) / kBlock);
    after(back, [this, &k, i] {
      Op& x = k.ops[static_cast<size_t>(i)];
      if (!f_.p_.multimem || k.plan[i].stream_to < 0) x.got = x.expect;  // else its own copy lands from the multicast
      check_done(k, i);
    });
    if (forward) land_multicast(k.r, k.plan[i].stream_to, *forward, back);
  });
}

// A multicast's stores reach each member (the storer only where its own
// copy goes through the switches) `delay` plus its way there from now.
void CopyFlows::Run::land_multicast(int r, int i, const InNetwork::Shape& shape, double delay) {
  const int g = op(r, i).group;
  const std::vector<int>& members = f_.p_.groups[static_cast<size_t>(g)];
  for (size_t j = 0; j < members.size(); ++j)
    if (members[j] != r || f_.innet_.own_copy(g))
      after(delay + shape.to_member[j], [this, r, i, m = members[j]] { land(r, i, m); });
}

// Klenk §IV-A: the engine reads its first data and writes its blocks to the
// group's region, which the switches multicast; nothing comes back to count.
void CopyFlows::Run::multicast(Rank& k, int i) {
  const InNetwork::Shape& shape = f_.innet_.shape_of(k.r, op(k.r, i));
  const uint64_t bytes = span(k.plan[i].lo, k.plan[i].hi);
  after(access(), [this, &k, i, &shape, bytes] {
    flow(shape.uses, static_cast<double>(bytes), 0, [this, &k, i, &shape] {
      land_multicast(k.r, i, shape, 0);
      k.ops[static_cast<size_t>(i)].issuing = false;
      check_done(k, i);
    });
  });
}

// Klenk §VI-A: an all-reduce of one flag by push, one packet per member:
// the flag's sum is back a round trip to the home after the last member's.
void CopyFlows::Run::barrier(Rank& k, int i) {
  const Operation& o = op(k.r, i);
  auto& joined = joins_[{static_cast<int>(o.group), -1}];
  joined.emplace_back(k.r, i);
  if (joined.size() < f_.p_.groups[static_cast<size_t>(o.group)].size()) return;
  const std::vector<std::pair<int, int>> all = std::move(joined);
  joins_.erase({static_cast<int>(o.group), -1});
  after(f_.innet_.shape_of(k.r, op(k.r, i)).latency, [this, all] {
    for (const auto& [r, op_index] : all) finish(ranks_[static_cast<size_t>(r)], op_index);
  });
}

// A DMA put: the engine reads its first data and writes its blocks into the
// receiver's buffer over every port on a shortest path to it, in turn;
// once the last write's acknowledgement is back it stores the flag, which
// the receiver sees a write and a polling load after it lands, and the put
// is done when the flag's acknowledgement is back.
void CopyFlows::Run::send(Rank& k, int i) {
  const Operation& o = op(k.r, i);
  const int from = f_.endpoints_[static_cast<size_t>(k.r)], to = f_.endpoints_[static_cast<size_t>(o.send_peer)];
  const std::vector<int> ports = FlowGraph::shortest_ports(*f_.m_.t, from, to);
  std::vector<Network::Use> uses;
  const Route* first = nullptr;
  for (int port : ports) {
    const Route& route = f_.graph_->route(from, port, to);
    if (!first) first = &route;
    for (const auto& [link, share] : route.hops) {
      const double w = share / static_cast<double>(ports.size());
      if (share > 0) uses.push_back({link, w * f_.innet_.block_weight(link, false)});
      else uses.push_back({link, -w * f_.innet_.block_weight(link, true), false});
    }
  }
  const Route& r = *first;
  const double acked = r.ack_ns + (r.acked_by_memory ? mem() : 0);
  const uint64_t bytes = span(k.plan[i].lo, k.plan[i].hi);
  if (bytes) ++transfers_;
  const auto flag = [this, &k, i, &r, acked, peer = o.send_peer] {
    after(r.latency_ns + access() + access(), [this, peer, at = k.ops[static_cast<size_t>(i)].peer_op] {
      Rank& p = ranks_[static_cast<size_t>(peer)];
      p.ops[static_cast<size_t>(at)].got = p.ops[static_cast<size_t>(at)].expect;
      check_done(p, at);
    });
    after(acked, [this, &k, i] {
      k.ops[static_cast<size_t>(i)].issuing = false;
      check_done(k, i);
    });
  };
  if (bytes == 0) return flag();
  after(access(), [this, uses = std::move(uses), bytes, acked, flag] {
    flow(uses, static_cast<double>(bytes), acked, flag);
  });
}

void CopyFlows::Run::land(int from, int i, int member) {
  const Operation& o = op(from, i);
  Rank& k = ranks_[static_cast<size_t>(member)];
  const ChunkRef ref = o.kind == OpKind::ReduceWrite ? o.dst : o.src;
  const int64_t first = collectives::message_chunk(f_.p_, from, ref);
  for (uint32_t j = 0; j < ref.count; ++j) {
    const uint64_t m = static_cast<uint64_t>(first) + j;
    const auto at = k.receiver.find(key(o.group, static_cast<int64_t>(m)));
    if (at == k.receiver.end()) continue;
    k.ops[static_cast<size_t>(at->second)].got += span(block_of_chunk(m), block_of_chunk(m + 1));
    check_done(k, at->second);
  }
}

CopyFlows::Result CopyFlows::run(uint64_t bytes, const Progress& progress) {
  return run_one_pass<Run>(*this, bytes, progress);
}

std::unique_ptr<Executor::Running> CopyFlows::start(uint64_t bytes, Network& on, Done done) {
  assert(shared_);
  return start_one_pass<Run>(*this, bytes, on, std::move(done));
}

}  // namespace incsim::flow
