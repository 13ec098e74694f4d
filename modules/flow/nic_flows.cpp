#include "flow/nic_flows.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "core/error.h"

namespace incsim::flow {

using collectives::Entry;
using collectives::kNil;
using collectives::Op;

std::string NicFlows::cannot_run(const collectives::Program& p) {
  if (p.engine() != collectives::Engine::NicTable)
    return std::string("runs on the ") + collectives::engine_name(p.engine()) + " engine, not the NICs' tables";
  return "";
}

NicFlows::NicFlows(collectives::Program p, const FlowMachine& m, std::vector<int> endpoints, NicCosts costs,
                   uint32_t elem_bytes, uint64_t seed, SharedNetwork* shared)
    : p_(std::move(p)),
      schedule_(collectives::schedule_of(p_)),
      m_(m),
      endpoints_(std::move(endpoints)),
      costs_(costs),
      elem_(elem_bytes),
      seed_(seed),
      dataflow_(p_.dataflow),
      shared_(shared) {
  assert(cannot_run(p_).empty());
  const topo::Topology& t = *m.t;
  const int n = schedule_.nodes;
  std::vector<uint32_t> endpoint_of(endpoints_.begin(), endpoints_.end());
  const auto node_of = [&](int r) { return t.endpoints()[static_cast<size_t>(endpoints_[static_cast<size_t>(r)])]; };
  collectives::MessagePorts ports = collectives::message_ports(
      p_, t, endpoint_of, [&](int r) { return t.node(node_of(r)).ports; },
      [&](int r) { return t.node(node_of(r)).name; });
  // Each rank's table as the NIC loads it, and the links its messages leave by.
  std::set<std::pair<int, int>> pinned;  // (GPU node, neighbour)
  tables_.reserve(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    tables_.push_back(collectives::table_view(schedule_, r, ports.to[static_cast<size_t>(r)], ports.tree[static_cast<size_t>(r)]));
    // Freed as the views grow: n^2 lists of ports, 0.9 GB on 4,096 endpoints.
    std::vector<std::vector<int>>().swap(ports.to[static_cast<size_t>(r)]);
    std::vector<char> sends_by(static_cast<size_t>(t.node(node_of(r)).ports), 0);  // a port its messages leave by
    for (const collectives::TableView::Share& x : tables_.back().shares) sends_by[static_cast<size_t>(x.port)] = 1;
    for (int q = 0; q < static_cast<int>(sends_by.size()); ++q)
      if (sends_by[static_cast<size_t>(q)]) pinned.emplace(node_of(r), t.peer({node_of(r), q}).node);
  }
  graph_ = shared ? &shared->graph : &own_graph_.emplace(m, pinned);
}

NicFlows::~NicFlows() = default;

// One size's run: every rank's decoder, flows' bytes still to arrive and,
// in dataflow mode, lanes.
class NicFlows::Run : public RunFlows {
 public:
  // On `shared`, or on a network of its own.
  Run(NicFlows& f, uint64_t bytes, Network* on);
  // On a network of its own: runs to the end.
  Result go(const Network::Callback& tick);
  // Starts every rank's table at the network's now; `done` (if any) gets the result at the last rank's end.
  void begin(Done done);
  double now() const { return net_->now(); }
  double issued() const { return static_cast<double>(issued_) / static_cast<double>(std::max<uint64_t>(entries_, 1)); }

 private:
  struct Lane {
    std::vector<uint32_t> queue;  // its streams in issue order
    size_t head = 0;              // the one sending
  };
  struct Rank {
    int r = 0;
    std::vector<uint64_t> reduce_left, gather_left;  // [flow]: bytes still to arrive
    std::vector<Lane> lanes;
    std::vector<int> pending;  // dataflow: entries not issued, in table order
    int timestep = 1, head = 0;
    uint32_t sending = 0;      // streams of issued entries still sending
    double lockstep_end = 0;   // a NOP's lockstep count is over
    bool finished = false;
    // A port's messages pass its first switch's input buffer in order (one
    // queue): a message read from memory waits while an earlier one's rest
    // is still there, held back by its output (head-of-line blocking).
    struct Port {
      int blocking = 0;              // sent messages whose rest is still in the input buffer
      std::vector<uint32_t> behind;  // messages read from memory and waiting, in order
    };
    std::vector<Port> ports;     // [NIC port]
    std::vector<uint8_t> state;  // [share]: 1 sent, 2 out of the input buffer
  };
  const std::vector<Entry>& table(const Rank& k) const { return f_.schedule_.tables[static_cast<size_t>(k.r)]; }
  const collectives::TableView& shape(const Rank& k) const { return f_.tables_[static_cast<size_t>(k.r)]; }
  bool ready(const Rank& k, const Entry& e) const;
  void advance(Rank& k);
  void issue(Rank& k, int index);
  void activate(Rank& k, uint32_t s);
  void stream(Rank& k, uint32_t s);
  void passed(Rank& k, uint32_t s);
  void sent(Rank& k, uint32_t s);
  void arrived(Rank& k, int flow, bool reduce, uint64_t len);
  void maybe_finish(Rank& k);
  // Share s's bytes: its part of its flow, cut at elements.
  uint64_t length(const collectives::TableView::Share& s) const {
    const uint64_t elems = layout_[static_cast<size_t>(s.flow)].length / f_.elem_;
    const auto at = [&](int part) { return elems * static_cast<uint64_t>(part) / static_cast<uint64_t>(s.parts); };
    return (at(s.part + 1) - at(s.part)) * f_.elem_;
  }

  NicFlows& f_;
  Done done_;
  std::vector<collectives::ByteRange> layout_;  // [flow]
  std::vector<Rank> ranks_;
  double step_ns_ = 0;
  uint64_t draws_ = 0, transfers_ = 0, issued_ = 0, entries_ = 0;
  int running_ = 0;
  double end_ = 0;
};

NicFlows::Run::Run(NicFlows& f, uint64_t bytes, Network* on) : RunFlows(on, *f.graph_), f_(f) {
  const collectives::Schedule& s = f.schedule_;
  for (const auto& c : s.flows) layout_.push_back(collectives::slice_bytes(bytes, f.elem_, s.slices, c.start, c.size));
  step_ns_ = collectives::lockstep_ns(s, bytes, f.elem_, f.costs_.framing, f.costs_.estimate);
  ranks_.resize(f.tables_.size());
  for (size_t r = 0; r < ranks_.size(); ++r) {
    Rank& k = ranks_[r];
    k.r = static_cast<int>(r);
    const collectives::TableView& tb = f.tables_[r];
    for (size_t g = 0; g < tb.flows.size(); ++g) {
      k.reduce_left.push_back(tb.flows[g].reduce_children * layout_[g].length);
      k.gather_left.push_back(tb.flows[g].gathers ? layout_[g].length : 0);
    }
    if (f.dataflow_) k.lanes.resize(static_cast<size_t>(tb.lanes));  // lockstep issues with no lane
    k.state.assign(tb.shares.size(), 0);
    const int node = f.m_.t->endpoints()[static_cast<size_t>(f.endpoints_[r])];
    k.ports.resize(static_cast<size_t>(f.m_.t->node(node).ports));
    const std::vector<Entry>& entries = table(k);
    entries_ += entries.size();
    if (f.dataflow_)
      for (int i = 0; i < static_cast<int>(entries.size()); ++i)
        if (entries[static_cast<size_t>(i)].op != Op::Nop) k.pending.push_back(i);
    // NOPs hold nothing in dataflow mode.
    k.head = static_cast<int>(entries.size() - (f.dataflow_ ? k.pending.size() : entries.size()));
    issued_ += static_cast<uint64_t>(k.head);
  }
  running_ = static_cast<int>(ranks_.size());
}

bool NicFlows::Run::ready(const Rank& k, const Entry& e) const {
  const size_t g = static_cast<size_t>(e.flow == kNil ? 0 : e.flow);
  if (e.op == Op::Reduce && e.parent != kNil) return k.reduce_left[g] == 0;  // children's partial sums are in
  if (e.op == Op::Gather && !e.children.empty())
    return shape(k).flows[g].root ? k.reduce_left[g] == 0 : k.gather_left[g] == 0;
  return true;  // a NOP, or an entry that only records what arrives
}

// The decoder (Table::advance): the head entry issues when its step is the
// timestep counter's and its dependencies are met; the counter moves on once
// the lockstep count is over and every issued message has left. In
// dataflow mode every pending entry whose dependencies are met issues.
void NicFlows::Run::advance(Rank& k) {
  const std::vector<Entry>& entries = table(k);
  if (f_.dataflow_) {
    size_t keep = 0;
    for (size_t i = 0; i < k.pending.size() && !k.finished; ++i) {
      const int index = k.pending[i];
      if (ready(k, entries[static_cast<size_t>(index)])) {
        issue(k, index);
        ++k.head;
      } else {
        k.pending[keep++] = index;
      }
    }
    k.pending.resize(keep);
    maybe_finish(k);
    return;
  }
  while (!k.finished && k.head < static_cast<int>(entries.size())) {
    const Entry& e = entries[static_cast<size_t>(k.head)];
    if (e.step > k.timestep) {
      if (k.sending > 0 || net_->now() < k.lockstep_end) return;  // sent() or the lockstep count calls again
      k.timestep = e.step;
      continue;
    }
    if (!ready(k, e)) return;  // arrived() calls again
    issue(k, k.head);
    ++k.head;
  }
  maybe_finish(k);
}

void NicFlows::Run::issue(Rank& k, int index) {
  const Entry& e = table(k)[static_cast<size_t>(index)];
  ++issued_;
  if (e.op == Op::Nop) {
    k.lockstep_end = net_->now() + step_ns_;
    after(step_ns_, [this, &k] { advance(k); });
    return;
  }
  const collectives::TableView& tb = shape(k);
  for (uint32_t s = tb.first_share[static_cast<size_t>(index)]; s < tb.first_share[static_cast<size_t>(index) + 1]; ++s) {
    ++k.sending;
    if (length(tb.shares[s]) == 0) {  // an empty share: nothing to read
      --k.sending;
      continue;
    }
    if (!f_.dataflow_) {
      activate(k, s);
      continue;
    }
    Lane& l = k.lanes[static_cast<size_t>(tb.shares[s].lane)];
    l.queue.push_back(s);
    if (l.queue.size() - l.head == 1) activate(k, s);  // the lane was idle
  }
}

// The DMA engine's first read returns one memory access later; then the
// share streams to its peer at the rate its route gives it, behind the rest
// of the port's earlier messages that the first switch still holds.
void NicFlows::Run::activate(Rank& k, uint32_t s) {
  ++transfers_;
  after(memory_access(f_.costs_.mem_ns, f_.costs_.jitter_ns, f_.seed_, draws_++), [this, &k, s] {
    Rank::Port& p = k.ports[static_cast<size_t>(shape(k).shares[s].port)];
    if (p.blocking > 0) p.behind.push_back(s);
    else stream(k, s);
  });
}

void NicFlows::Run::stream(Rank& k, uint32_t s) {
  const collectives::TableView::Share& x = shape(k).shares[s];
  const uint64_t len = length(x);
  const topo::Topology& t = *f_.m_.t;
  const int from = f_.endpoints_[static_cast<size_t>(k.r)];
  const int node = t.endpoints()[static_cast<size_t>(from)];
  // Not kept: a table's messages seldom take one route twice.
  const Route r = f_.graph_->walk(node, x.port, f_.endpoints_[static_cast<size_t>(x.dst)], from);
  // Wire bytes per payload byte: the message's head flits and flit padding.
  const double wire = static_cast<double>(f_.costs_.framing.wire_bytes(len));
  const double weight = wire / static_cast<double>(len);
  std::vector<Network::Use> uses;
  uses.reserve(r.hops.size());
  for (const auto& [link, share] : r.hops)
    if (share > 0) uses.push_back({link, share * weight});  // messages are posted: nothing comes back
  // Where the bottleneck lags the port, the switches' input buffers and
  // output queues before it take the message's rest: the port is done once
  // they hold it (or once it could have sent it all), and the first
  // switch's input buffer is free for what follows once the rest fits in
  // the buffers after it. The bottleneck is taken as the route's first link
  // slower than the port (a torus's first network link behind its 64 GB/s
  // port), or where all are alike (a fat tree) the last, into the
  // destination, which a desynchronised neighbour shares. Packet level sizes
  // each buffer to its link's credit round trip (platforms/gpu_fabric.cpp)
  // unless set.
  const topo::Link& in = t.links()[static_cast<size_t>(t.link_at({node, x.port}))];
  double held = 0, first_in = 0;
  {
    const uint32_t packet = f_.costs_.framing.wire_bytes(f_.costs_.framing.max_payload_bytes);
    const auto buffer = [&](const topo::Link& l, double hold_ns, uint32_t set) {
      return set ? set : std::max(topo::round_trip_bytes(l.bw_GBps, l.latency_ns, hold_ns, packet), packet);
    };
    const int dst = f_.endpoints_[static_cast<size_t>(x.dst)];
    bool slower = false;  // a link slower than the port has been met
    double upto = 0;
    for (topo::PortRef at = t.peer({node, x.port}); t.node(at.node).kind == topo::NodeKind::Switch;) {
      const topo::PortSpan out = t.routes(at.node, dst);
      assert(!out.empty());
      const topo::Link& o = t.links()[static_cast<size_t>(t.link_at({at.node, out[0]}))];
      const double hold_ns = f_.m_.node_ns[static_cast<size_t>(at.node)];
      const double in_buffer = buffer(t.links()[static_cast<size_t>(t.link_at(at))], hold_ns, f_.costs_.in_buffer_bytes);
      if (upto == 0) first_in = in_buffer;
      upto += in_buffer + buffer(o, hold_ns, f_.costs_.out_queue_bytes);
      if (!slower && o.bw_GBps <= in.bw_GBps) held = upto;
      slower = slower || o.bw_GBps < in.bw_GBps;
      at = t.peer({at.node, out[0]});
    }
    if (held == 0) first_in = 0;
  }
  const double port_end = net_->now() + wire / in.bw_GBps;
  std::vector<Network::Mark> marks;
  marks.push_back({held / weight, [this, &k, s, port_end] {
                     if (net_->now() >= port_end) return sent(k, s);
                     after(port_end - net_->now(), [this, &k, s] { sent(k, s); });
                   }});
  marks.push_back({(held - first_in) / weight, [this, &k, s] { passed(k, s); }});
  flow(std::move(uses), static_cast<double>(len), 0,
       [this, &k, s, len, latency = r.latency_ns] {
         const collectives::TableView::Share& y = shape(k).shares[s];
         Rank& dst = ranks_[static_cast<size_t>(y.dst)];
         const int flow = y.flow;
         const bool reduce = y.reduce;
         after(latency, [this, &dst, flow, reduce, len] { arrived(dst, flow, reduce, len); });
       },
       std::move(marks));
}

// The share's rest has left the first switch's input buffer: what waits
// behind it there may go.
void NicFlows::Run::passed(Rank& k, uint32_t s) {
  k.state[s] |= 2;
  Rank::Port& p = k.ports[static_cast<size_t>(shape(k).shares[s].port)];
  if (!(k.state[s] & 1) || --p.blocking > 0) return;  // not sent yet, it blocks no one
  std::vector<uint32_t> go;
  go.swap(p.behind);
  for (uint32_t b : go) stream(k, b);
}

// The share's last byte has left the port (its rest in the first switch's
// buffers): the lane's next message starts, and the decoder looks again.
void NicFlows::Run::sent(Rank& k, uint32_t s) {
  k.state[s] |= 1;
  if (!(k.state[s] & 2)) ++k.ports[static_cast<size_t>(shape(k).shares[s].port)].blocking;
  --k.sending;
  if (f_.dataflow_) {
    Lane& l = k.lanes[static_cast<size_t>(shape(k).shares[s].lane)];
    if (++l.head < l.queue.size()) activate(k, l.queue[l.head]);
  }
  advance(k);
}

// A Reduce share is added into the flow's partial sum, a Gather share is
// the sum; once the flow's last byte is in, the decoder looks again.
void NicFlows::Run::arrived(Rank& k, int flow, bool reduce, uint64_t len) {
  uint64_t& left = (reduce ? k.reduce_left : k.gather_left)[static_cast<size_t>(flow)];
  assert(left >= len);
  left -= len;
  if (left == 0) advance(k);
}

void NicFlows::Run::maybe_finish(Rank& k) {
  if (k.finished || k.head < static_cast<int>(table(k).size()) || k.sending > 0) return;
  for (size_t g = 0; g < k.reduce_left.size(); ++g)
    if (k.reduce_left[g] > 0 || k.gather_left[g] > 0) return;
  k.finished = true;
  if (--running_ != 0) return;
  end_ = net_->now();
  if (done_) done_(result(end_, transfers_, *f_.graph_));
}

void NicFlows::Run::begin(Done done) {
  done_ = std::move(done);
  for (Rank& k : ranks_) advance(k);
}

NicFlows::Result NicFlows::Run::go(const Network::Callback& tick) {
  begin({});
  net_->run(tick);
  for (const Rank& k : ranks_) {
    if (k.finished) continue;
    uint64_t reduce = 0, gather = 0;
    for (size_t g = 0; g < k.reduce_left.size(); ++g) {
      reduce += k.reduce_left[g];
      gather += k.gather_left[g];
    }
    throw UserError("the schedule stalls as flows: rank " + std::to_string(k.r) + "'s table waits at entry " +
                    std::to_string(k.head) + " of " + std::to_string(table(k).size()) + " for " +
                    std::to_string(reduce) + " B of Reduce and " + std::to_string(gather) + " B of Gather messages");
  }
  return result(end_, transfers_, *f_.graph_);
}

NicFlows::Result NicFlows::run(uint64_t bytes, const Progress& progress) {
  Run x(*this, bytes, nullptr);
  const std::function<double()> fraction = [&x] { return x.issued(); };
  return x.go(progress ? Network::Callback([&] { progress(fraction, x.now()); }) : Network::Callback());
}

std::unique_ptr<Executor::Running> NicFlows::start(uint64_t bytes, Network& on, Done done) {
  assert(shared_);
  auto x = std::make_unique<Run>(*this, bytes, &on);
  x->begin(std::move(done));
  return x;
}

}  // namespace incsim::flow
