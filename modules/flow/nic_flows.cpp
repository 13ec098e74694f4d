#include "flow/nic_flows.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "collectives/table_decoder.h"
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

// One size's run: every rank's decoder (collectives::TableDecoder, as the
// NIC's), whose message shares are flows.
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
  struct Rank : collectives::TableDecoder::Engine {
    Run* run = nullptr;
    int r = 0;
    collectives::TableDecoder decoder;
    double lockstep_end = 0;   // a NOP's lockstep count is over
    // A port's messages pass its first switch's input buffer in order (one
    // queue): a message read from memory waits while an earlier one's rest
    // is still there, held back by its output (head-of-line blocking).
    struct Port {
      int blocking = 0;              // sent messages whose rest is still in the input buffer
      std::vector<uint32_t> behind;  // messages read from memory and waiting, in order
    };
    std::vector<Port> ports;     // [NIC port]
    std::vector<uint8_t> state;  // [share]: 1 sent, 2 out of the input buffer
    // collectives::TableDecoder::Engine
    void issued(const Entry&, int) override { ++run->issued_; }
    void lockstep() override;
    bool lockstep_over() const override { return run->net_->now() >= lockstep_end; }
    bool empty(uint32_t s) const override { return run->length(run->shape(*this).shares[s]) == 0; }
    void activate(uint32_t s) override { run->activate(*this, s); }
    void finished() override { run->finished(); }
  };
  const std::vector<Entry>& table(const Rank& k) const { return f_.schedule_.tables[static_cast<size_t>(k.r)]; }
  const collectives::TableView& shape(const Rank& k) const { return f_.tables_[static_cast<size_t>(k.r)]; }
  void activate(Rank& k, uint32_t s);
  void stream(Rank& k, uint32_t s);
  void passed(Rank& k, uint32_t s);
  void sent(Rank& k, uint32_t s);
  void arrived(Rank& k, int flow, bool reduce, uint64_t len);
  void finished();
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
    k.run = this;
    k.r = static_cast<int>(r);
    const collectives::TableView& tb = f.tables_[r];
    k.decoder.start(table(k), tb, layout_, f.dataflow_, k);
    k.state.assign(tb.shares.size(), 0);
    const int node = f.m_.t->endpoints()[static_cast<size_t>(f.endpoints_[r])];
    k.ports.resize(static_cast<size_t>(f.m_.t->node(node).ports));
    entries_ += table(k).size();
    issued_ += static_cast<uint64_t>(k.decoder.head());  // NOPs hold nothing in dataflow mode
  }
  running_ = static_cast<int>(ranks_.size());
}

void NicFlows::Run::Rank::lockstep() {
  const double step = run->step_ns_;
  lockstep_end = run->net_->now() + step;
  run->after(step, [this] { decoder.advance(); });
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
  k.decoder.sent(s);
}

// A Reduce share is added into the flow's partial sum, a Gather share is
// the sum; once the flow's last byte is in, the decoder looks again.
void NicFlows::Run::arrived(Rank& k, int flow, bool reduce, uint64_t len) {
  if (k.decoder.arrived(flow, reduce, len)) k.decoder.advance();
}

void NicFlows::Run::finished() {
  if (--running_ != 0) return;
  end_ = net_->now();
  if (done_) done_(result(end_, transfers_, *f_.graph_));
}

void NicFlows::Run::begin(Done done) {
  done_ = std::move(done);
  for (Rank& k : ranks_) k.decoder.advance();
}

NicFlows::Result NicFlows::Run::go(const Network::Callback& tick) {
  begin({});
  net_->run(tick);
  for (const Rank& k : ranks_) {
    if (k.decoder.finished()) continue;
    const collectives::TableDecoder::Awaited a = k.decoder.awaited();
    throw UserError("the schedule stalls as flows: rank " + std::to_string(k.r) + "'s table waits at entry " +
                    std::to_string(k.decoder.head()) + " of " + std::to_string(table(k).size()) + " for " +
                    std::to_string(a.reduce) + " B of Reduce and " + std::to_string(a.gather) + " B of Gather messages");
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
