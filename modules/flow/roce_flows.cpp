#include "flow/roce_flows.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "collectives/message_order.h"
#include "core/error.h"

namespace incsim::flow {

using collectives::OpKind;
using collectives::Operation;

RoceFlows::RoceFlows(collectives::Program p, const FlowMachine& m, std::vector<int> endpoints,
                     std::vector<int> fpga_links, RoceCosts costs, uint32_t elem_bytes, SharedNetwork* shared)
    : p_(std::move(p)),
      m_(m),
      endpoints_(std::move(endpoints)),
      fpga_links_(std::move(fpga_links)),
      costs_(costs),
      elem_(elem_bytes),
      shared_(shared),
      graph_(shared ? &shared->graph : &own_graph_.emplace(m, std::set<std::pair<int, int>>{})) {}

RoceFlows::~RoceFlows() = default;

double RoceFlows::wire_per_byte(bool aggregation) const {
  const RoceCosts& c = costs_;
  const double first = c.reth_bytes + (aggregation ? c.ina_bytes : 0);
  return (c.mtu + c.frame_bytes + first / c.msg_len) / c.mtu;
}

// One message's run: every host's operations and queue pairs, as
// roce::HostProgram and roce::RoceNic have them.
class RoceFlows::Run : public RunFlows {
 public:
  Run(RoceFlows& f, uint64_t bytes, Network* on);
  void begin(Done done) {
    done_ = std::move(done);
    for (Rank& k : ranks_) k.order.start(k);
  }
  Result go(const Network::Callback& tick) {
    begin({});
    net_->run(tick);
    for (const Rank& k : ranks_)
      for (int i = 0; i < k.order.size(); ++i)
        if (!k.order[i].complete)
          throw UserError("the program stalls as flows: host rank " + std::to_string(k.r) + "'s operation " +
                          std::to_string(i) + " (" + collectives::op_name(f_.p_.op(k.r, i).kind) + ") has " +
                          std::to_string(k.order[i].done_msgs) + " of " + std::to_string(k.order[i].messages) +
                          " messages done");
    return result(end_, transfers_, *f_.graph_);
  }
  double now() const { return net_->now(); }
  double done_share() const { return static_cast<double>(completed_) / static_cast<double>(std::max<uint64_t>(ops_, 1)); }

 private:
  // What the order (collectives::MessageOrder) does not hold.
  struct Op {
    int lane = -1;                     // the queue pair it sends on
    int peer = -1, peer_op = -1;       // a send: the operation at the peer that takes its messages
    Fifo<uint32_t> staged;             // messages in before it may take them, in arrival order
  };
  // A queue pair's sending side: its work requests in order, each sent once
  // posted a work request's latency ago and the one before it has left.
  struct Lane {
    int channel, peer;
    bool aggregation;
    Fifo<std::tuple<int, uint32_t, double>> queue;  // (operation, message, ready)
    bool busy = false, waiting = false;
    std::vector<Network::Use> uses;    // per payload byte, the FPGA's port both ways for an aggregation
    double latency = 0;                // its last byte out to the peer's host seeing it
  };
  struct Rank : collectives::MessageOrder::Mover {
    Run* run = nullptr;
    int r = 0;
    collectives::MessageOrder order;
    std::vector<Op> ops;
    std::vector<Lane> lanes;
    void post(int i, uint32_t m) override { run->post(*this, i, m); }
    void take_staged(int i) override { run->take_staged(*this, i); }
    void completed(int) override { run->completed(*this); }
  };
  const Operation& op(int r, int i) const { return f_.p_.op(r, i); }
  uint64_t message_bytes(const Rank& k, int i, uint32_t m) const {
    return std::min<uint64_t>(msg_bytes_, k.order[i].bytes - uint64_t{m} * msg_bytes_);
  }
  int lane_of(Rank& k, int channel, int peer, bool aggregation);
  void take_staged(Rank& k, int i);
  void completed(Rank& k);
  void post(Rank& k, int i, uint32_t m);
  void pump(Rank& k, int lane);
  void join(Rank& k, int i, uint32_t m);
  void deliver(int r, int i, uint32_t m);  // a message of operation i's is in at rank r's host

  RoceFlows& f_;
  Done done_;
  uint64_t msg_bytes_;
  std::vector<Rank> ranks_;
  // Aggregations waiting for their group: (group, message) -> the members' (rank, operation).
  std::map<std::pair<int, uint32_t>, std::vector<std::pair<int, int>>> joins_;
  uint64_t transfers_ = 0, ops_ = 0, completed_ = 0;
  int running_ = 0;
  double end_ = 0;
};

RoceFlows::Run::Run(RoceFlows& f, uint64_t bytes, Network* on)
    : RunFlows(on, *f.graph_), f_(f), msg_bytes_(uint64_t{f.costs_.msg_len} * f.costs_.mtu) {
  const collectives::Program& p = f.p_;
  ranks_.resize(static_cast<size_t>(p.ranks));
  for (int r = 0; r < p.ranks; ++r) {
    Rank& k = ranks_[static_cast<size_t>(r)];
    k.run = this;
    k.r = r;
    k.order = collectives::MessageOrder(p, r, f.costs_.window);
    k.order.layout(bytes, f.elem_, msg_bytes_);
    const int n = k.order.size();
    k.ops.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const Operation& o = op(r, i);
      Op& x = k.ops[static_cast<size_t>(i)];
      if (o.kind == OpKind::Aggregate) {
        const std::vector<int>& g = p.groups[static_cast<size_t>(o.group)];
        const size_t at = static_cast<size_t>(std::find(g.begin(), g.end(), r) - g.begin());
        x.lane = lane_of(k, o.channel, g[(at + 1) % g.size()], true);
      } else if (collectives::sends(o.kind)) {
        x.lane = lane_of(k, o.channel, o.send_peer, false);
      }
    }
    ops_ += static_cast<uint64_t>(n);
  }
  const std::vector<std::vector<int>> takes = collectives::receiving_ops(p);
  for (Rank& k : ranks_)
    for (size_t i = 0; i < k.ops.size(); ++i)
      if (const int at = takes[static_cast<size_t>(k.r)][i]; at >= 0) {
        k.ops[i].peer = op(k.r, static_cast<int>(i)).send_peer;
        k.ops[i].peer_op = at;
      }
  running_ = p.ranks;
}

// The queue pair to `peer` on `channel`, made at first use: its route, and
// for an aggregation the FPGA's port facing it, crossed both ways.
int RoceFlows::Run::lane_of(Rank& k, int channel, int peer, bool aggregation) {
  for (size_t l = 0; l < k.lanes.size(); ++l)
    if (k.lanes[l].channel == channel && k.lanes[l].peer == peer) return static_cast<int>(l);
  Lane lane;
  lane.channel = channel;
  lane.peer = peer;
  lane.aggregation = aggregation;
  const int from = f_.endpoints_[static_cast<size_t>(k.r)], to = f_.endpoints_[static_cast<size_t>(peer)];
  const Route& route = f_.graph_->route(from, 0, to);
  const RoceCosts& c = f_.costs_;
  const double data = f_.wire_per_byte(aggregation);
  // An ACK frame for every ack_every packets and for each message's last.
  const double acks = std::ceil(static_cast<double>(c.msg_len) / c.ack_every) * c.ack_bytes /
                      (static_cast<double>(c.msg_len) * c.mtu);
  for (const auto& [link, share] : route.hops) {
    if (share > 0) lane.uses.push_back({link, share * data});
    else lane.uses.push_back({link, -share * acks, false});
  }
  lane.latency = route.latency_ns + c.rx_ns;
  if (aggregation) {
    const int l = f_.fpga_links_.empty() ? -1 : f_.fpga_links_[static_cast<size_t>(k.r)];
    if (l < 0)
      throw UserError("rank " + std::to_string(k.r) + " aggregates, and no FPGA port faces its connection");
    const topo::Topology& t = *f_.m_.t;
    const topo::Link& link = t.links()[static_cast<size_t>(l)];
    for (int d = 0; d < 2; ++d) lane.uses.push_back({f_.graph_->flow_link(l, d), data});
    const int sw = t.node(link.a.node).kind == topo::NodeKind::Endpoint ? link.b.node : link.a.node;
    lane.latency += 2 * link.latency_ns + f_.m_.node_ns[static_cast<size_t>(sw)] + c.fpga_ns;
  }
  k.lanes.push_back(std::move(lane));
  return static_cast<int>(k.lanes.size()) - 1;
}

// A receive takes the messages that came before it could, in arrival order.
void RoceFlows::Run::take_staged(Rank& k, int i) {
  Op& o = k.ops[static_cast<size_t>(i)];
  while (!o.staged.empty() && k.order.may_take(i, o.staged.front())) {
    o.staged.pop_front();
    k.order.message_in(i, k);
  }
}

void RoceFlows::Run::completed(Rank& k) {
  ++completed_;
  if (k.order.left() == 0 && --running_ == 0) {
    end_ = net_->now();
    if (done_) done_(result(end_, transfers_, *f_.graph_));
  }
}

void RoceFlows::Run::post(Rank& k, int i, uint32_t m) {
  const int l = k.ops[static_cast<size_t>(i)].lane;
  k.lanes[static_cast<size_t>(l)].queue.push_back({i, m, net_->now() + f_.costs_.tx_ns});
  pump(k, l);
}

void RoceFlows::Run::pump(Rank& k, int l) {
  Lane& lane = k.lanes[static_cast<size_t>(l)];
  if (lane.busy || lane.waiting || lane.queue.empty()) return;
  const auto [i, m, ready] = lane.queue.front();
  if (ready > net_->now()) {
    lane.waiting = true;
    after(ready - net_->now(), [this, &k, l] {
      k.lanes[static_cast<size_t>(l)].waiting = false;
      pump(k, l);
    });
    return;
  }
  lane.queue.pop_front();
  lane.busy = true;
  ++transfers_;
  if (lane.aggregation) return join(k, i, m);
  const Op& o = k.ops[static_cast<size_t>(i)];
  flow(lane.uses, static_cast<double>(message_bytes(k, i, m)), 0, [this, &k, l, m, peer = o.peer, at = o.peer_op] {
    Lane& x = k.lanes[static_cast<size_t>(l)];
    x.busy = false;
    pump(k, l);
    after(x.latency, [this, peer, at, m] { deliver(peer, at, m); });
  });
}

void RoceFlows::Run::deliver(int r, int i, uint32_t m) {
  Rank& k = ranks_[static_cast<size_t>(r)];
  Op& o = k.ops[static_cast<size_t>(i)];
  if (!o.staged.empty() || !k.order.may_take(i, m)) o.staged.push_back(m);
  else k.order.message_in(i, k);
  k.order.run(k);
}

// The FPGA sums a packet once every member's is in and sends each
// member's frame on with the sum: the k-th messages of the group's members
// are one flow from the last to be sent, and each member's successor has
// the result its lane's latency after the last byte.
void RoceFlows::Run::join(Rank& k, int i, uint32_t m) {
  const Operation& o = op(k.r, i);
  const std::vector<int>& members = f_.p_.groups[static_cast<size_t>(o.group)];
  const auto key = std::make_pair(static_cast<int>(o.group), m);
  auto& joined = joins_[key];
  joined.emplace_back(k.r, i);
  if (joined.size() < members.size()) return;
  const std::vector<std::pair<int, int>> all = std::move(joined);
  joins_.erase(key);
  std::vector<Network::Use> uses;
  for (const auto& [r, x] : all) {
    const Rank& member = ranks_[static_cast<size_t>(r)];
    const Lane& lane = member.lanes[static_cast<size_t>(member.ops[static_cast<size_t>(x)].lane)];
    uses.insert(uses.end(), lane.uses.begin(), lane.uses.end());
  }
  const double bytes = static_cast<double>(message_bytes(k, i, m));
  flow(std::move(uses), bytes, 0, [this, all] {
    for (const auto& [r, x] : all) {
      Rank& member = ranks_[static_cast<size_t>(r)];
      const int l = member.ops[static_cast<size_t>(x)].lane;
      Lane& lane = member.lanes[static_cast<size_t>(l)];
      lane.busy = false;
      pump(member, l);
      after(lane.latency, [this, successor = lane.peer, group = op(r, x).group] {
        // The result of the successor's aggregation in this group: its
        // window moves on.
        Rank& s = ranks_[static_cast<size_t>(successor)];
        for (int j = 0; j < s.order.size(); ++j)
          if (const Operation& y = op(s.r, j); y.kind == OpKind::Aggregate && y.group == group) {
            s.order.result_in(j);
            break;
          }
        s.order.run(s);
      });
    }
  });
}

RoceFlows::Result RoceFlows::run(uint64_t bytes, const Progress& progress) {
  return run_one_pass<Run>(*this, bytes, progress);
}

std::unique_ptr<Executor::Running> RoceFlows::start(uint64_t bytes, Network& on, Done done) {
  assert(shared_);
  return start_one_pass<Run>(*this, bytes, on, std::move(done));
}

}  // namespace incsim::flow
