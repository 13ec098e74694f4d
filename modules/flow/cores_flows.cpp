#include "flow/cores_flows.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "flow/cores_run.h"

namespace incsim::flow {


std::string CoresFlows::cannot_run(const collectives::Program& p) {
  if (p.engine() != collectives::Engine::Cores)
    return std::string("runs on the ") + collectives::engine_name(p.engine()) +
           " engine; flows run the programs of the GPUs' cores and copy engines and of the NICs' schedule tables";
  for (int r = 0; r < p.ranks; ++r)
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      if (o.kind == OpKind::Aggregate || o.kind == OpKind::Barrier)
        return std::string("has in-network operations (") + collectives::op_name(o.kind) +
               ") that flows do not run yet";
      // What lands is matched to its receiver by message chunk, as packet level addresses it.
      const bool lands = o.kind == OpKind::MulticastWrite || o.kind == OpKind::ReduceWrite;
      for (const ChunkRef& ref : {o.src, o.dst})
        if (lands && !ref.empty() && collectives::message_chunk(p, r, ref) < 0)
          return std::string("multicasts or pushes a scratch chunk (rank ") + std::to_string(r) + "'s operation " +
                 std::to_string(i) + "), which flows do not run";
    }
  return "";
}

CoresFlows::CoresFlows(collectives::Program p, const FlowMachine& m, std::vector<int> endpoints, CoresCosts costs,
                       uint32_t elem_bytes, uint64_t seed, uint64_t steady_passes, SharedNetwork* shared,
                       bool classes)
    : p_(std::move(p)),
      m_(m),
      endpoints_(std::move(endpoints)),
      costs_(costs),
      elem_(elem_bytes),
      seed_(seed),
      steady_passes_(steady_passes),
      shared_(shared),
      graph_(shared ? &shared->graph : &own_graph_.emplace(m, pinned(p_, *m.t, endpoints_))),
      innet_(p_, m_, endpoints_, *graph_, costs_.mem_ns, costs_.jitter_ns,
             std::vector<char>(p_.groups.size(), p_.multimem)) {
  assert(cannot_run(p_).empty());
  if (p_.has(OpKind::ReduceWrite) && costs_.push_credits <= 0)
    throw UserError(p_.name + " pushes reducing writes, which the cores send only to switches that hold a "
                    "contribution until its block is complete (SHARP's aggregation tables on a cluster's network)");
  parts_ = collectives::channel_parts(p_);
  if (classes) {
    classes_ = std::make_unique<ChannelClasses>();
    if (!channel_classes(p_, *m_.t, *graph_, innet_, endpoints_, *classes_, no_classes_)) classes_.reset();
  }
}

CoresFlows::~CoresFlows() = default;

// A GPU's parallel links to a switch that spreads are one link too unless
// a connection of the program leaves by one of them: all else on them
// (NVLS's loads and stores, and the answers the switch's spread requests
// draw) spreads evenly over them. Fewer links per flow, the same rates.
std::set<std::pair<int, int>> CoresFlows::pinned(const collectives::Program& p, const topo::Topology& t,
                                                 const std::vector<int>& endpoints) {
  std::vector<uint64_t> conns;  // each connection once: a message's operations share it
  for (int r = 0; r < p.ranks; ++r)
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      for (const int peer : {collectives::sends(o.kind) ? o.send_peer : -1,
                             collectives::receives(o.kind) ? o.recv_peer : -1})
        if (peer >= 0) conns.push_back(collectives::pair_key(r, peer, o.channel));
    }
  std::sort(conns.begin(), conns.end());
  conns.erase(std::unique(conns.begin(), conns.end()), conns.end());
  std::set<std::pair<int, int>> pinned;  // (GPU node, neighbour) a connection leaves by
  for (const uint64_t c : conns) {
    const int from = endpoints[static_cast<size_t>(collectives::pair_from(c))];
    const std::vector<int> ports =
        FlowGraph::shortest_ports(t, from, endpoints[static_cast<size_t>(collectives::pair_to(c))]);
    const int node = t.endpoints()[static_cast<size_t>(from)];
    pinned.emplace(node, t.peer({node, FlowGraph::channel_port(ports, collectives::pair_channel(c))}).node);
  }
  return pinned;
}

CoresFlows::Plan CoresFlows::plan(uint64_t bytes) const {
  Plan x;
  x.proto = p_.protocol_by_size ? costs_.by_size.for_size(bytes) : p_.ops.empty() ? Protocol::Simple : p_.ops.front().proto;
  x.slots = x.proto == Protocol::LL ? costs_.ll : x.proto == Protocol::LL128 ? costs_.ll128 : costs_.simple;
  x.slots.chunk_bytes = collectives::cores_chunk_bytes(p_, x.proto, bytes, x.slots.chunk_bytes,
                                                       costs_.simple.chunk_bytes, costs_.nccl_slices);
  x.elems = collectives::message_elems(p_, bytes / elem_);
  x.blocks = collectives::message_chunks(p_) / static_cast<uint32_t>(parts_.parts);
  x.passes = x.layout(parts_.parts, elem_, 0).passes.front();
  return x;
}

// The classes stand for their parts where each part's channel makes its
// class's first's passes (a small message may leave some channels a pass fewer).
const ChannelClasses* CoresFlows::Run::classes_for(const CoresFlows& f, const collectives::PassLayout& l,
                                                   std::string& why) {
  why = f.no_classes_;
  if (!f.classes_) return nullptr;
  const ChannelClasses& x = *f.classes_;
  const auto passes = [&](int u) {
    const int c = x.part_channel[static_cast<size_t>(u)];
    return l.parts > 1 ? l.passes[static_cast<size_t>(c % l.parts)] : l.passes[0];
  };
  for (int u = 0; u < x.parts(); ++u)
    if (passes(u) != passes(x.first[static_cast<size_t>(u)])) {
      why = "channel " + std::to_string(x.part_channel[static_cast<size_t>(u)]) + " makes " +
            std::to_string(passes(u)) + " passes and its class's first channel " +
            std::to_string(x.part_channel[static_cast<size_t>(x.first[static_cast<size_t>(u)])]) + " " +
            std::to_string(passes(x.first[static_cast<size_t>(u)]));
      return nullptr;
    }
  return f.classes_.get();
}

CoresFlows::Run::Run(CoresFlows& f, const Plan& plan, uint64_t drop, Network* on)
    : RunFlows(on, *f.graph_),
      f_(f),
      layout_(std::make_unique<collectives::PassLayout>(plan.layout(f.parts_.parts, f.elem_, drop))),
      classes_(classes_for(f, *layout_, no_classes_)),
      p_(classes_ ? classes_->reps : f.p_) {
  const collectives::Program& p = p_;
  proto_ = plan.proto;
  slots_ = plan.slots;
  // Per data byte: a packet's wire bytes on the GPUs' fabric (header flit,
  // the protocol's flags, flits rounded up) and its header-only ack back; a
  // scale-out network's packets gather the GPU packets' payloads.
  const LinkFormat& g = f.m_.formats.front();
  const double data = collectives::protocol_data_bytes(proto_, g.max_payload);
  data_ = static_cast<uint64_t>(data);
  const double payload = collectives::protocol_wire_payload(proto_, static_cast<uint32_t>(data));
  for (size_t k = 0; k < f.m_.formats.size() && k < 8; ++k) {
    const LinkFormat& x = f.m_.formats[k];
    if (x.gathers) {
      fwd_[k] = payload / data * (x.max_payload + x.header) / x.max_payload;
      ack_[k] = payload / data * x.ack_bytes / x.max_payload;
    } else {
      fwd_[k] = (x.header + std::ceil(payload / x.flit) * x.flit) / data;
      ack_[k] = x.header / data;
    }
  }
  for (int r = 0; r < p.ranks; ++r) {
    auto k = std::make_unique<Rank>();
    k->r = r;
    const int n = p.op_count(r);
    k->ops.assign(static_cast<size_t>(n), {});
    k->dependents = Dependents(p, r);
    for (int i = 0; i < n; ++i) {
      const Operation& o = op(r, i);
      if (passive(o)) continue;
      auto it = std::find_if(k->queues.begin(), k->queues.end(), [&](const auto& q) { return q->index == o.queue; });
      if (it == k->queues.end()) {
        auto q = std::make_unique<Queue>();
        q->rank = k.get();
        q->index = o.queue;
        k->queues.push_back(std::move(q));
      }
    }
    std::sort(k->queues.begin(), k->queues.end(), [](const auto& a, const auto& b) { return a->index < b->index; });
    for (int i = 0; i < n; ++i) {
      const Operation& o = op(r, i);
      for (size_t j = 0; j < k->queues.size(); ++j) {
        Queue& q = *k->queues[j];
        if (q.index != o.queue || passive(o)) continue;
        k->ops[static_cast<size_t>(i)].queue = static_cast<int>(j);
        q.ops.push_back(i);
        if (collectives::sends(o.kind)) k->ops[static_cast<size_t>(i)].out = &add_conn(*k, k->send, o.channel, o.send_peer, q, true);
        if (collectives::receives(o.kind)) k->ops[static_cast<size_t>(i)].in = &add_conn(*k, k->recv, o.channel, o.recv_peer, q, false);
      }
    }
    for (auto& q : k->queues) {
      const Operation& first = op(r, q->ops.front());
      q->passes = layout_->parts > 1 ? layout_->passes[first.channel % layout_->parts] : layout_->passes[0];
      q->total = q->passes * q->ops.size();
      for (int i : q->ops)
        q->transfers += collectives::sends(op(r, i).kind) || collectives::in_network(op(r, i).kind) ? q->passes : 0;
    }
    k->unfinished = static_cast<int>(k->queues.size());
    // In-network groups: which operation receives each chunk that lands here.
    for (int i = 0; i < n; ++i) {
      const Operation& o = op(r, i);
      if (o.kind == OpKind::ReduceRead && o.dst.empty()) k->ops[static_cast<size_t>(i)].done_passes = passes_of(o);
      if (!receives_landing(o)) continue;
      ++k->unfinished;
      for (uint32_t j = 0; j < o.dst.count; ++j)
        k->receiver[received(o.group, collectives::message_chunk(p, r, ChunkRef{o.dst.index + j, 1, o.dst.buf}))] = i;
    }
    ranks_.push_back(std::move(k));
  }
  // Each send connection meets its peer's receive connection.
  for (auto& k : ranks_)
    for (auto& c : k->send) {
      Rank& peer = *ranks_[static_cast<size_t>(c->peer)];
      for (auto& d : peer.recv)
        if (d->channel == c->channel && d->peer == k->r) {
          c->remote = d.get();
          d->remote = c.get();
        }
      if (!c->remote)
        throw UserError("rank " + std::to_string(k->r) + " sends to rank " + std::to_string(c->peer) +
                        " on channel " + std::to_string(c->channel) + ", which never receives from it there");
    }
  // A rank with nothing to run (under channel classes, one whose channels
  // all run on others) has nothing to end.
  running_ = static_cast<int>(
      std::count_if(ranks_.begin(), ranks_.end(), [](const auto& k) { return k->unfinished > 0; }));
}

CoresFlows::Run::Conn& CoresFlows::Run::add_conn(Rank& k, std::vector<std::unique_ptr<Conn>>& v, int channel, int peer,
                                                 Queue& q, bool sending) {
  for (auto& c : v)
    if (c->channel == channel && c->peer == peer) {
      if (c->queue != &q)
        throw UserError("rank " + std::to_string(k.r) + "'s queues " + std::to_string(c->queue->index) + " and " +
                        std::to_string(q.index) + " both " + (sending ? "send to" : "receive from") + " rank " +
                        std::to_string(peer) + " on channel " + std::to_string(channel) +
                        ": the GPU's cores run one thread block per connection");
      return *c;
    }
  auto c = std::make_unique<Conn>();
  c->channel = channel;
  c->peer = peer;
  c->queue = &q;
  const std::vector<int>& ports = ports_to(k.r, peer);
  c->port = FlowGraph::channel_port(ports, channel);
  c->route = &f_.graph_->route(f_.endpoints_[static_cast<size_t>(k.r)], c->port, f_.endpoints_[static_cast<size_t>(peer)]);
  c->latency_ns = c->route->latency_ns;
  c->ack_ns = c->route->ack_ns;
  c->acked_by_memory = c->route->acked_by_memory;
  if (f_.costs_.net.across(f_.endpoints_[static_cast<size_t>(k.r)], f_.endpoints_[static_cast<size_t>(peer)]))
    c->proxied_ns = 1e3 * (sending ? f_.costs_.net.step_us(proto_) : f_.costs_.net.head_us());
  if (!sending) c->slot_len.assign(static_cast<size_t>(slots_.slots), 0);
  v.push_back(std::move(c));
  return *v.back();
}

const std::vector<int>& CoresFlows::Run::ports_to(int r, int peer) {
  std::vector<int>& ports = ports_[static_cast<uint64_t>(r) << 32 | static_cast<uint32_t>(peer)];
  if (ports.empty())
    ports = FlowGraph::shortest_ports(*f_.m_.t, f_.endpoints_[static_cast<size_t>(r)], f_.endpoints_[static_cast<size_t>(peer)]);
  return ports;
}

std::vector<Network::Use> CoresFlows::Run::uses(const Route& route, int r, int i) const {
  std::vector<Network::Use> u;
  u.reserve(route.hops.size());
  for (const auto& [link, share] : route.hops) {
    const size_t format = f_.graph_->format_index(link);
    if (share > 0) u.push_back({link, share * fwd_[format]});
    else u.push_back({link, -share * ack_[format], false});
  }
  return classed(std::move(u), r, i);
}

const std::vector<Network::Use>& CoresFlows::Run::uses(Conn& c, int r, int i) const {
  const int parts = static_cast<int>(stands_for(r, i));
  if (c.uses_for != parts) {
    c.uses = uses(*c.route, r, i);
    c.uses_for = parts;
  }
  return c.uses;
}

std::vector<Network::Use> CoresFlows::Run::classed(std::vector<Network::Use> u, int r, int i) const {
  if (!classes_) return u;
  const uint32_t x = p_.rank_begin[static_cast<size_t>(r)] + static_cast<uint32_t>(i);
  // Two links of one class are one use, at the first's place: in one pass
  // and in place, as a reducing write's shape crosses thousands of links.
  if (at_.empty()) at_.assign(2 * classes_->canon.size(), -1);
  size_t n = 0;
  for (size_t j = 0; j < u.size(); ++j) {
    const Network::Use y = u[j];
    const int link = classes_->canon[static_cast<size_t>(y.link)];
    const double weight = y.weight * classes_->weight(x, y.link);
    int& k = at_[2 * static_cast<size_t>(link) + (y.limits ? 1 : 0)];
    if (k >= 0) {
      u[static_cast<size_t>(k)].weight += weight;
    } else {
      k = static_cast<int>(n);
      u[n++] = {link, weight, y.limits};
    }
  }
  u.resize(n);
  for (const Network::Use& y : u) at_[2 * static_cast<size_t>(y.link) + (y.limits ? 1 : 0)] = -1;
  return u;
}

uint64_t CoresFlows::Run::elements(Rank& k, ChunkRef ref, uint64_t pass) const {
  uint64_t len = 0;
  for (uint32_t j = 0; j < ref.count; ++j) {
    Buffer buf = ref.buf;
    uint32_t index = ref.index + j;
    const int64_t m = collectives::message_chunk(p_, k.r, buf, index);
    if (m < 0) {
      const auto it = k.scratch.find(pass << 32 | index);
      len += it == k.scratch.end() ? 0 : it->second;
      continue;
    }
    uint64_t first, n;
    layout_->range(pass, static_cast<uint32_t>(m), first, n);
    len += n;
  }
  return len;
}

// A write of len elements into ref: scratch chunks keep their lengths, split as the message's chunks are.
void CoresFlows::Run::wrote(Rank& k, ChunkRef ref, uint64_t pass, uint64_t len) {
  for (uint32_t j = 0; j < ref.count; ++j) {
    Buffer buf = ref.buf;
    uint32_t index = ref.index + j;
    if (collectives::message_chunk(p_, k.r, buf, index) < 0)
      k.scratch[pass << 32 | index] = len / ref.count + (j < len % ref.count ? 1 : 0);
  }
}

// As CoresRank::progress: trailing receives whose data is in, then the
// queue's next operations until one must wait.
void CoresFlows::Run::progress(Queue& q) {
  Rank& k = *q.rank;
  Turn turn{*this, k};
  collectives::take_turn(q, turn, p_, k.r, static_cast<uint64_t>(slots_.slots));
  if (q.finished || q.ending || q.next != q.total || !q.pending.empty() || q.sending || q.acks_due != 0) return;
  if (net_->now() < q.acked_by) {
    q.ending = true;
    at(q.acked_by, [this, &q] {
      q.ending = false;
      progress(q);
    });
    return;
  }
  q.finished = true;
  part_done(k);
}

void CoresFlows::Run::complete_receive(Queue& q, const Pending& pd) {
  Rank& k = *q.rank;
  Conn& c = *k.ops[static_cast<size_t>(pd.op)].in;
  wrote(k, op(k.r, pd.op).dst, pd.pass, c.slot_len[pd.idx % static_cast<uint64_t>(slots_.slots)]);
  consume(q, c);
  op_done(k, pd.op, pd.pass);
}

// A local operation takes no time.
void CoresFlows::Run::run_local(Rank& k, int i, uint64_t pass) {
  const Operation& o = op(k.r, i);
  if (o.kind != OpKind::Nop) wrote(k, o.dst, pass, elements(k, o.src, pass));
  op_done(k, i, pass);
}

void CoresFlows::Run::part_done(Rank& k) {
  if (--k.unfinished != 0 || --running_ != 0) return;
  end_ = net_->now();
  if (done_) done_(result(end_, transfers_, *f_.graph_));
}

void CoresFlows::Run::start_send(Queue& q, int i, uint64_t pass) {
  Rank& k = *q.rank;
  const Operation& o = op(k.r, i);
  const uint64_t slots = static_cast<uint64_t>(slots_.slots);
  q.sending = true;
  Conn& out = *k.ops[static_cast<size_t>(i)].out;
  Conn* in = collectives::receives(o.kind) ? k.ops[static_cast<size_t>(i)].in : nullptr;
  uint64_t len;
  if (in) {
    len = in->slot_len[in->claimed++ % slots];
    if (o.kind == OpKind::RecvReduceCopySend || o.kind == OpKind::RecvCopySend) wrote(k, o.dst, pass, len);
  } else {
    len = elements(k, o.src, pass);
  }
  out.remote->slot_len[out.claimed++ % slots] = len;
  transfers_ += stands_for(k.r, i);
  if (len == 0) {  // nothing to store: the flag alone
    if (in) consume(q, *in);
    finish_send(q, i, pass);
    return;
  }
  q.send = {i, pass, len, in, &out, 0};
  // The cores read the first data, then store it at the rate the route gives.
  after(access(), [this, &q] {
    q.send.began = net_->now();
    flow(uses(*q.send.out, q.rank->r, q.send.op), static_cast<double>(q.send.len * f_.elem_), 0, [this, &q] {
      const Queue::Send& x = q.send;
      const Conn& out = *x.out;
      // The last store has left: the input slot is read out.
      if (x.in) consume(q, *x.in);
      const double spread = net_->now() - x.began;
      const double last = last_mem(spread, packets(x.len), 1);
      if (proto_ == Protocol::Simple) {
        // The fence: every write acknowledged, then the flag.
        ++q.acks_due;
        after(out.ack_ns + (out.acked_by_memory ? last : 0), [this, &q] {
          --q.acks_due;
          finish_send(q, q.send.op, q.send.pass);
        });
      } else {
        // LL, LL128: the flags are in the data; the receiver polls every line.
        landed(*out.remote, out.latency_ns + last_mem(spread, packets(x.len), 2) + out.proxied_ns);
        ack_after(q, out.ack_ns + (out.acked_by_memory ? last : 0));
        finish_send(q, x.op, x.pass);
      }
    });
  });
}

// The transfer is done at the sender: under Simple its flag goes out now,
// which the receiver sees one poll after it lands.
void CoresFlows::Run::finish_send(Queue& q, int i, uint64_t pass) {
  Conn& out = *q.rank->ops[static_cast<size_t>(i)].out;
  if (proto_ == Protocol::Simple || out.remote->slot_len[(out.claimed - 1) % static_cast<uint64_t>(slots_.slots)] == 0) {
    landed(*out.remote, out.latency_ns + access() + access() + out.proxied_ns);
    ack_after(q, acked(out));
  }
  ++out.done;
  q.sending = false;
  ++q.sent;
  op_done(*q.rank, i, pass);
  progress(q);
}

void CoresFlows::Run::landed(Conn& c, double delay) {
  after(delay, [this, &c] {
    ++c.seen;
    progress(*c.queue);
  });
}

// A store this queue made is acknowledged `delay` from now; the queue ends
// only after. Nothing else waits for it, so it needs no event of its own.
void CoresFlows::Run::ack_after(Queue& q, double delay) { q.acked_by = std::max(q.acked_by, net_->now() + delay); }

// The receiving operation has read its slot: the head flag frees it at the sender.
void CoresFlows::Run::consume(Queue& q, Conn& c) {
  ++c.done;
  after(c.latency_ns + access() + access() + c.proxied_ns, [this, &c] {
    Conn& s = *c.remote;
    ++s.seen;
    progress(*s.queue);
  });
  ack_after(q, acked(c));
}

void CoresFlows::Run::op_done(Rank& k, int i, uint64_t pass) {
  Rank::Op& done = k.ops[static_cast<size_t>(i)];
  done.done_passes = pass + 1;
  for (int d : k.dependents.of(i))
    if (const int q = k.ops[static_cast<size_t>(d)].queue; q >= 0 && q != done.queue)
      progress(*k.queues[static_cast<size_t>(q)]);
}

double CoresFlows::Run::issued() const {
  uint64_t issued = 0, all = 0;
  for (const auto& k : ranks_)
    for (const auto& q : k->queues) {
      issued += q->next;
      all += q->total;
    }
  return static_cast<double>(issued) / static_cast<double>(std::max<uint64_t>(all, 1));
}

void CoresFlows::Run::begin(Done done) {
  done_ = std::move(done);
  for (auto& k : ranks_) {
    for (int i = 0; i < p_.op_count(k->r); ++i)
      if (receives_landing(op(k->r, i))) land_passes(*k, i);  // passes with nothing to land
    for (auto& q : k->queues) progress(*q);
  }
}

CoresFlows::Run::~Run() {
  for (auto& k : ranks_) {
    for (auto& q : k->queues)
      if (q->credits_link >= 0) net_->remove_link(q->credits_link);
    if (k->table_link >= 0) net_->remove_link(k->table_link);
  }
}

CoresFlows::Result CoresFlows::Run::go(const Network::Callback& tick) {
  begin({});
  net_->run(tick);
  if (running_ != 0) {
    for (auto& k : ranks_)
      for (auto& q : k->queues)
        if (!q->finished)
          throw UserError("the program stalls as flows: rank " + std::to_string(k->r) + "'s queue " +
                          std::to_string(q->index) + " waits forever (" + std::to_string(q->sent) + " of " +
                          std::to_string(q->transfers) + " transfers sent)");
  }
  Result out = classes_ ? result(end_, transfers_, *f_.graph_, &classes_->canon, &classes_->mean)
                        : result(end_, transfers_, *f_.graph_);
  out.proto = proto_;
  out.channels = f_.parts_.channels;
  if (classes_) {
    out.classes = classes_->classes;
    out.parts = classes_->parts();
    const std::string classes = std::to_string(out.classes) + (out.classes == 1 ? " class" : " classes");
    out.classes_note = out.parts == out.channels
                           ? std::to_string(out.channels) + " channels in " + classes +
                                 ", each class's first channel run for all of it"
                           : std::to_string(out.channels) + " channels in " + std::to_string(out.parts) +
                                 " parts (a GPU's share of a channel) in " + classes +
                                 ", each class's first part run for all of it";
    if (classes_->pooled)
      out.classes_note += "; " + std::to_string(classes_->pooled) + " classes of links pool " +
                          std::to_string(classes_->pooled_links) + " links their images do not map one to one";
  } else if (!no_classes_.empty()) {
    out.classes_note = "none, every channel ran: " + no_classes_;
  }
  return out;
}

std::unique_ptr<Executor::Running> CoresFlows::start(uint64_t bytes, Network& on, Done done) {
  assert(shared_);
  const Plan plan = this->plan(bytes);
  auto x = std::make_unique<Run>(*this, plan, 0, &on);
  x->begin([proto = plan.proto, passes = plan.passes, done = std::move(done)](Result r) {
    r.proto = proto;
    r.passes = r.simulated_passes = passes;
    done(r);
  });
  return x;
}

// A pipelined program's passes settle into a period: past the first few,
// each more pass adds about the same time. Runs of k = K/4, K/2 and K
// passes (the message less all - k whole passes, its first and last passes
// as the whole's) give it, over the span from K/4 to K; the other passes
// are added at that period. Where the period still wanders (docs/flow.md,
// "Steady passes"), its two halves differ.
CoresFlows::Result CoresFlows::run(uint64_t bytes, const Progress& progress) {
  const Plan plan = this->plan(bytes);
  const uint64_t all = plan.passes, K = steady_passes_;
  const bool steady = K != 0 && all > 2 * K;
  const double simulated = steady ? static_cast<double>(K / 4 + K / 2 + K) : static_cast<double>(all);
  double done = 0;  // the simulated passes' share the runs before this one took
  const auto passes = [&](uint64_t k) {
    const double share = static_cast<double>(k) / simulated;
    Run x(*this, plan, all - k, nullptr);
    const std::function<double()> fraction = [&] { return done + share * x.issued(); };
    Result r = x.go(progress ? Network::Callback([&] { progress(fraction, x.now()); }) : Network::Callback());
    done += share;
    r.passes = r.simulated_passes = k;
    return r;
  };
  if (!steady) return passes(all);
  const Result a = passes(K / 4), b = passes(K / 2), c = passes(K);
  const auto period = [](const Result& x, const Result& y) {
    return (y.time_ns - x.time_ns) / static_cast<double>(y.passes - x.passes);
  };
  const uint64_t rest = all - K, span = K - K / 4;
  Result r = c;
  r.pass_ns = period(a, c);
  r.time_ns += r.pass_ns * static_cast<double>(rest);
  r.flows += (c.flows - a.flows) / span * rest;  // flows and transfers per pass likewise
  r.transfers += (c.transfers - a.transfers) / span * rest;
  // Each link's bytes likewise: the runs cross the same links, their passes alike.
  for (size_t k = 0, j = 0; k < r.links.size(); ++k) {
    while (j < a.links.size() && a.links[j] < r.links[k]) ++j;
    const double before = j < a.links.size() && a.links[j] == r.links[k] ? a.link_bytes[j] : 0;
    r.link_bytes[k] += (c.link_bytes[k] - before) / static_cast<double>(span) * static_cast<double>(rest);
  }
  r.passes = all;
  r.simulated_passes = K / 4 + K / 2 + K;
  r.steady_from = K;
  r.period_change = std::abs(period(b, c) - period(a, b)) / r.pass_ns;
  return r;
}

}  // namespace incsim::flow
