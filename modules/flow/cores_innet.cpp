// The in-network operations of the GPUs' cores as flows (docs/flow.md): NVLS's
// multimem loads and stores (gpu/cores_rank_innet.cpp) and SHARP's reducing
// writes. Each is one flow whose link uses carry what packet level sends per
// 128-byte block: a reducing read's header-only requests and the members'
// answers, merged where the switches reduce them; a multicast's stores, once
// per link of its tree; a reducing write's contributions up to the group's
// home switches, merged where they meet, and its sum back down.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "flow/cores_flows.h"
#include "flow/cores_run.h"
#include "topology/multicast.h"

namespace incsim::flow {

namespace {

constexpr double kBlock = topo::MulticastFabric::kBlockBytes;  // an in-network packet's most data

// Adds a route's links to a tree: a link several members' routes share
// carries the merged (or multicast) stream once.
void merge(std::map<int, double>& tree, int link, double share) {
  double& s = tree[link];
  s = std::max(s, share);
}

}  // namespace

const Route& CoresFlows::down(int sw, int r) {
  const auto key = std::make_pair(sw, r);
  if (const auto it = downs_.find(key); it != downs_.end()) return it->second;
  return downs_.emplace(key, graph_->walk(sw, -1, endpoints_[static_cast<size_t>(r)], -1)).first->second;
}

const std::vector<Home>& CoresFlows::homes(int g) {
  if (const auto it = homes_.find(g); it != homes_.end()) return it->second;
  const topo::Topology& t = *m_.t;
  const std::vector<int>& members = p_.groups[static_cast<size_t>(g)];
  std::vector<int> candidates;
  for (int s = 0; s < static_cast<int>(t.switches().size()); ++s)
    if (m_.aggregates[static_cast<size_t>(t.switches()[static_cast<size_t>(s)])]) candidates.push_back(s);
  const auto dist = [&](int r, int s) {
    return t.distance_to_switch(t.endpoints()[static_cast<size_t>(endpoints_[static_cast<size_t>(r)])], s);
  };
  std::vector<std::vector<int>> d(members.size());
  for (size_t m = 0; m < members.size(); ++m)
    for (int s : candidates) d[m].push_back(dist(members[m], s));
  const std::vector<bool> between = topo::on_shortest_paths(d);
  std::vector<Home> h;
  double ports = 0;
  for (size_t s = 0; s < candidates.size(); ++s) {
    bool reached = between[s];
    for (const std::vector<int>& x : d) reached = reached && x[s] > 0;
    if (!reached) continue;
    const int node = t.switches()[static_cast<size_t>(candidates[s])];
    h.push_back({node, static_cast<double>(t.node(node).ports)});
    ports += t.node(node).ports;
  }
  if (h.empty())
    throw UserError("platform '" + t.name + "' has no switch that reduces and that every GPU of in-network group " +
                    std::to_string(g) + " reaches");
  for (Home& x : h) x.share /= ports;
  return homes_.emplace(g, std::move(h)).first->second;
}

double CoresFlows::Run::block_weight(int link, bool header_only) const {
  const LinkFormat& x = f_.graph_->format(link);
  return header_only ? x.header / kBlock : (x.header + std::ceil(kBlock / x.flit) * x.flit) / kBlock;
}

std::vector<CoresFlows::Run::GroupPort> CoresFlows::Run::group_ports(int r, int g) {
  const topo::Topology& t = *f_.m_.t;
  const std::vector<int>& members = f_.p_.groups[static_cast<size_t>(g)];
  const int node = t.endpoints()[static_cast<size_t>(f_.endpoints_[static_cast<size_t>(r)])];
  std::vector<GroupPort> v;
  for (int p : ports_to(r, members[0] != r ? members[0] : members[1])) {
    const int link = t.link_at({node, p});
    const topo::PortRef at = t.peer({node, p});
    const int d = t.links()[static_cast<size_t>(link)].a.node == node ? 0 : 1;
    v.push_back({f_.graph_->flow_link(link, d), at.node, at.port,
                 t.links()[static_cast<size_t>(link)].latency_ns + f_.m_.node_ns[static_cast<size_t>(at.node)]});
  }
  return v;
}

void CoresFlows::Run::start_innet(Queue& q, int i, uint64_t pass) {
  Rank& k = *q.rank;
  const Operation& o = op(k.r, i);
  const uint64_t len = elements(k, o.src, pass);
  q.sending = true;
  ++transfers_;
  if (o.kind == OpKind::ReduceWrite) {
    join_reduce_write(q, i, pass, len);
    return;
  }
  if (len == 0) {
    if (o.kind == OpKind::ReduceRead) wrote(k, o.dst, pass, 0);
    issued_innet(q, i, pass, true);
    return;
  }
  if (o.kind == OpKind::ReduceRead) start_reduce_read(q, i, pass, len);
  else start_multicast(q, i, pass, len);
}

// The queue has issued operation i's pass (and, but for a reducing write,
// which is done as its sum lands, finished it).
void CoresFlows::Run::issued_innet(Queue& q, int i, uint64_t pass, bool done) {
  q.sending = false;
  ++q.sent;
  if (done) op_done(*q.rank, i, pass);
  progress(q);
}

// multimem.ld_reduce: the reader's requests, spread over its ports to the
// group, go at once; the switch each reaches reads every member (the reader
// too under multimem), reduces the answers and returns the sum. latency: the
// round trip after the last request.
CoresFlows::Run::Shape CoresFlows::Run::read_shape(int r, int i) {
  const Operation& o = op(r, i);
  const std::vector<int>& members = f_.p_.groups[static_cast<size_t>(o.group)];
  const std::vector<GroupPort> ports = group_ports(r, o.group);
  std::map<int, double> requests, answers;
  Shape shape;
  double table_rate = std::numeric_limits<double>::infinity();  // the slowest port's
  for (const auto& [out, sw, sw_port, up] : ports) {
    const double share = 1.0 / static_cast<double>(ports.size());
    // The requests to the switch, the sum back from it.
    std::map<int, double> req{{out, 1.0}}, ans;
    for (const auto& [l, x] : f_.down(sw, r).hops)
      if (x > 0) merge(ans, l, x);
    double farthest = 0;  // the switch to a member
    int answers_in = 0;
    for (int m : members) {
      if (m == r && !f_.p_.multimem) continue;
      const Route& w = f_.down(sw, m);
      for (const auto& [l, x] : w.hops) merge(x > 0 ? req : ans, l, std::abs(x));
      farthest = std::max(farthest, w.latency_ns);
      ++answers_in;
    }
    shape.latency = std::max(shape.latency, 2 * (up + farthest));
    for (const auto& [l, x] : req) requests[l] += share * x;
    for (const auto& [l, x] : ans) answers[l] += share * x;
    // The entry is held until the last answer has crossed the switch back
    // to this port (nvswitch.cpp, replicate and pull_reduce), with the
    // slowest of the members' memory accesses, each with its own jitter.
    // Where the table binds, the request waiting for the entry has crossed
    // the switch already, so the hold is one crossing short of Klenk Eq.
    // (1)'s round trip (packet level's log: 320-335 ns on hgx-h100).
    const auto& tables = f_.m_.table_bytes;
    if (!tables.empty() && !tables[static_cast<size_t>(sw)].empty()) {
      const double entries = tables[static_cast<size_t>(sw)][static_cast<size_t>(sw_port)] / f_.m_.table_entry_bytes;
      const double held = f_.m_.node_ns[static_cast<size_t>(sw)] + 2 * farthest + f_.costs_.mem_ns +
                          f_.costs_.jitter_ns * answers_in / (answers_in + 1.0);
      table_rate = std::min(table_rate, entries * f_.m_.table_entry_bytes / held);
    }
  }
  // The requests spread evenly over the ports: the slowest port's table binds.
  if (table_rate < std::numeric_limits<double>::infinity()) shape.table_rate = table_rate * ports.size();
  shape.ports = static_cast<double>(ports.size());
  for (const auto& [l, x] : requests) shape.uses.push_back({l, x * block_weight(l, true)});
  for (const auto& [l, x] : answers) shape.uses.push_back({l, x * block_weight(l, false)});
  return shape;
}

// multimem.st: the stores, spread over the ports to the group, each
// multicast by the switch it reaches to every member (the storer too under
// multimem). to_member: the latency to each member.
CoresFlows::Run::Shape CoresFlows::Run::multicast_shape(int r, int i) {
  const Operation& o = op(r, i);
  const std::vector<int>& members = f_.p_.groups[static_cast<size_t>(o.group)];
  const std::vector<GroupPort> ports = group_ports(r, o.group);
  std::map<int, double> stores;
  Shape shape;
  shape.to_member.assign(members.size(), 0);
  for (const auto& [out, sw, sw_port, up] : ports) {
    const double share = 1.0 / static_cast<double>(ports.size());
    std::map<int, double> tree{{out, 1.0}};
    for (size_t j = 0; j < members.size(); ++j) {
      if (members[j] == r && !f_.p_.multimem) continue;
      const Route& w = f_.down(sw, members[j]);
      for (const auto& [l, x] : w.hops)
        if (x > 0) merge(tree, l, x);
      shape.to_member[j] = std::max(shape.to_member[j], up + w.latency_ns);
    }
    for (const auto& [l, x] : tree) stores[l] += share * x;
  }
  for (const auto& [l, x] : stores) shape.uses.push_back({l, x * block_weight(l, false)});
  return shape;
}

// SHARP: every member's contributions go up to group g's home switches,
// merging where their ways meet, and the sum comes down to every member.
// latency: up and down again.
CoresFlows::Run::Shape CoresFlows::Run::sum_shape(int g) {
  const std::vector<int>& members = f_.p_.groups[static_cast<size_t>(g)];
  std::map<int, double> up, down;
  Shape shape;
  for (const Home& h : f_.homes(g)) {
    std::map<int, double> u, d;
    for (int m : members) {
      const Route& w = f_.down(h.node, m);
      for (const auto& [l, x] : w.hops) merge(x > 0 ? d : u, l, std::abs(x));
      shape.latency = std::max(shape.latency, 2 * w.latency_ns + f_.m_.node_ns[static_cast<size_t>(h.node)]);
    }
    for (const auto& [l, x] : u) up[l] += h.share * x;
    for (const auto& [l, x] : d) down[l] += h.share * x;
  }
  for (const auto& [l, x] : up) shape.uses.push_back({l, x * block_weight(l, false)});
  for (const auto& [l, x] : down) shape.uses.push_back({l, x * block_weight(l, false)});
  return shape;
}

// An operation's flow depends only on its kind, its rank and its group (a
// reducing write's on its group alone), the same for every channel and
// pass: built at the first.
const CoresFlows::Run::Shape& CoresFlows::Run::shape_of(int r, int i) {
  const Operation& o = op(r, i);
  const uint64_t key = o.kind == OpKind::ReduceWrite
                           ? ~static_cast<uint64_t>(o.group)
                           : static_cast<uint64_t>(r) << 32 | static_cast<uint64_t>(o.group) << 1 |
                                 (o.kind == OpKind::ReduceRead ? 1u : 0u);
  if (const auto it = shapes_.find(key); it != shapes_.end()) return it->second;
  Shape s = o.kind == OpKind::ReduceRead ? read_shape(r, i)
            : o.kind == OpKind::MulticastWrite ? multicast_shape(r, i)
                                               : sum_shape(o.group);
  return shapes_.emplace(key, std::move(s)).first->second;
}

// A reader's requests leave at once, spread over its ports a block at a
// time, each port taking its reads' blocks in turn, and the members answer
// each port's requests in order (gpu/cores_rank_innet.cpp, gpu/gpu.cpp). So
// the reads of a reader's channels share its rate until their last round of
// blocks (at most one on each port: all of a read with fewer blocks than
// ports), and those last rounds are answered one read after another: the
// first channel's sum is back while the last one's are still on the way,
// and its stores go out meanwhile. A flow shared fairly to the end would
// hold every channel's stores back until all reads were done.
void CoresFlows::Run::start_reduce_read(Queue& q, int i, uint64_t pass, uint64_t len) {
  const Shape& shape = shape_of(q.rank->r, i);
  const double bytes = static_cast<double>(len * f_.elem_);
  const double blocks = std::ceil(bytes / kBlock);
  const double last = bytes - std::floor((blocks - 1) / shape.ports) * shape.ports * kBlock;
  const double began = net_.now(), rtt = shape.latency;
  std::vector<Network::Use> uses = shape.uses;
  if (shape.table_rate > 0) {
    Rank& k = *q.rank;
    int& link = shared_ ? f_.shared_->table_links.try_emplace(f_.endpoints_[static_cast<size_t>(k.r)], -1).first->second
                        : k.table_link;
    if (link < 0) link = net_.add_link(shape.table_rate);
    uses.push_back({link, 1.0});
  }
  LastRounds& rounds = last_rounds_[&shape];
  auto read_last = [this, &q, i, pass, len, rtt, blocks, began, last, uses, &rounds] {
    flow(uses, last, 0, [this, &q, i, pass, len, rtt, blocks, began, &rounds] {
      // The last request has left; its answers come back a round trip and
      // a member's memory access later.
      after(rtt + last_mem(net_.now() - began, static_cast<uint64_t>(blocks), 1), [this, &q, i, pass, len] {
        wrote(*q.rank, op(q.rank->r, i).dst, pass, len);
        issued_innet(q, i, pass, true);
      });
      read_done(rounds);
    });
  };
  if (bytes > last) flow(uses, bytes - last, 0, [this, &rounds, read_last] { last_round(rounds, read_last); });
  else last_round(rounds, std::move(read_last));
}

void CoresFlows::Run::last_round(LastRounds& l, Network::Callback read) {
  l.push_back(std::move(read));
  if (l.size() == 1) l.front()();
}

void CoresFlows::Run::read_done(LastRounds& l) {
  l.pop_front();
  if (!l.empty()) l.front()();
}

// Posted, so the queue goes on once the last store has left.
void CoresFlows::Run::start_multicast(Queue& q, int i, uint64_t pass, uint64_t len) {
  const Shape& shape = shape_of(q.rank->r, i);
  const double bytes = static_cast<double>(len * f_.elem_);
  after(access(), [this, &q, i, pass, &shape, bytes] {  // the cores read the data first
    const double start = net_.now();
    flow(shape.uses, bytes, 0, [this, &q, i, pass, &shape, bytes, start] {
      const int r = q.rank->r;
      const std::vector<int>& members = f_.p_.groups[static_cast<size_t>(op(r, i).group)];
      const double last = last_mem(net_.now() - start, static_cast<uint64_t>(std::ceil(bytes / kBlock)), 1);
      for (size_t j = 0; j < members.size(); ++j)
        if (members[j] != r)
          after(shape.to_member[j] + last, [this, r, i, pass, m = members[j]] { land(r, i, pass, m); });
      issued_innet(q, i, pass, true);
    });
  });
}

// The flow starts once the last member has issued its pass (the switches can
// sum nothing before); each member's credits cap it by Little's law.
void CoresFlows::Run::join_reduce_write(Queue& q, int i, uint64_t pass, uint64_t len) {
  Rank& k = *q.rank;
  const Operation& o = op(k.r, i);
  const std::vector<int>& members = f_.p_.groups[static_cast<size_t>(o.group)];
  const auto key = std::make_tuple(o.group, collectives::message_chunk(f_.p_, k.r, o.src), pass);
  auto& joined = joins_[key];
  joined.emplace_back(&q, i);
  if (joined.size() < members.size()) return;
  const std::vector<std::pair<Queue*, int>> all = std::move(joined);
  joins_.erase(key);
  const Shape& shape = shape_of(k.r, i);
  std::vector<Network::Use> uses = shape.uses;
  // A block's credit is back when its sum has landed: credits x 128 B per round trip.
  const double latency = shape.latency, rtt = latency + mem();
  for (const auto& [queue, op_index] : all) {
    if (queue->credits_link < 0)
      queue->credits_link = net_.add_link(f_.costs_.push_credits * kBlock / rtt);
    uses.push_back({queue->credits_link, 1.0});
  }
  // A queue has issued its pass when its last block has left, its credits'
  // worth still on the way: the flow's last window goes on as a flow of its
  // own while the queues go on.
  const double bytes = static_cast<double>(len * f_.elem_);
  const double window = std::min(bytes, f_.costs_.push_credits * kBlock);
  after(access(), [this, all, uses = std::move(uses), bytes, window, latency, pass] {
    const double start = net_.now();
    flow(uses, bytes - window, 0, [this, all, uses, bytes, window, latency, pass, start] {
      for (const auto& [queue, op_index] : all) issued_innet(*queue, op_index, pass, false);
      flow(uses, window, 0, [this, all, bytes, latency, pass, start] {
        const double last = last_mem(net_.now() - start, static_cast<uint64_t>(std::ceil(bytes / kBlock)), 1);
        const int r = all.front().first->rank->r, i = all.front().second;
        for (const auto& member : all)
          after(latency + last, [this, r, i, pass, m = member.first->rank->r] { land(r, i, pass, m); });
      });
    });
  });
}

// Rank `from`'s operation i's pass lands at `member`: each of its chunks at
// the member's operation that receives it.
void CoresFlows::Run::land(int from, int i, uint64_t pass, int member) {
  const Operation& o = op(from, i);
  Rank& k = *ranks_[static_cast<size_t>(member)];
  const ChunkRef ref = o.kind == OpKind::ReduceWrite ? o.dst : o.src;
  std::set<int> receivers;
  for (uint32_t j = 0; j < ref.count; ++j) {
    const ChunkRef c{ref.index + j, 1, ref.buf};
    const int64_t m = collectives::message_chunk(f_.p_, from, c);
    const auto taker = k.receiver.find(received(o.group, m));
    if (taker == k.receiver.end()) continue;  // its own store back (multimem), or nothing here takes it
    const int at = taker->second;
    uint64_t first, n;
    layout_->range(pass, static_cast<uint32_t>(m), first, n);
    k.landed[static_cast<uint64_t>(at) << 32 | pass] += n;
    receivers.insert(at);
  }
  for (int at : receivers) land_passes(k, at);
}

void CoresFlows::Run::land_passes(Rank& k, int i) {
  const Operation& o = op(k.r, i);
  uint64_t& done = k.done_passes[static_cast<size_t>(i)];
  const uint64_t passes = passes_of(o);
  while (done < passes) {
    const uint64_t pass = done;
    const auto it = k.landed.find(static_cast<uint64_t>(i) << 32 | pass);
    const uint64_t need = elements(k, o.dst, pass);
    if ((it == k.landed.end() ? 0 : it->second) < need) return;
    if (it != k.landed.end()) k.landed.erase(it);
    op_done(k, i, pass);
    if (done == passes) part_done(k);
  }
}

}  // namespace incsim::flow
