#include "collectives/composition.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"

namespace incsim::collectives {

void add_groups(ProgramBuilder& b, Placement& pl) {
  pl.group_base = static_cast<int>(b.program().groups.size());
  for (const auto& g : pl.part->groups) {
    std::vector<int> mapped;
    for (int k : g) mapped.push_back(pl.ranks.at(k));
    b.add_group(std::move(mapped));
  }
}

Operation place(const Placement& pl, const Operation& o) {
  Operation w = o;
  if (o.send_peer != kNone) w.send_peer = pl.ranks.at(o.send_peer);
  if (o.recv_peer != kNone) w.recv_peer = pl.ranks.at(o.recv_peer);
  if (o.group != kNone) w.group = pl.group_base + o.group;
  w.channel = static_cast<uint16_t>(pl.channel + o.channel);
  w.queue = static_cast<uint16_t>(pl.queue + o.queue);
  const auto scale = [&pl](ChunkRef& c) {
    if (c.empty()) return;
    if (uint64_t{c.count} * pl.scale > 65535) throw UserError("a placed chunk spans more than 65535 chunks");
    c.index = c.index * pl.scale + pl.offset;
    if (pl.buffer) c.buf = *pl.buffer;
    c.count = static_cast<uint16_t>(c.count * pl.scale);
  };
  scale(w.src);
  scale(w.dst);
  if (pl.engine) w.engine = *pl.engine;
  return w;
}

std::vector<uint32_t> append_part(ProgramBuilder& b, const Placement& pl, int rank, const std::vector<uint32_t>& after) {
  const Program& p = *pl.part;
  const auto it = std::find(pl.ranks.begin(), pl.ranks.end(), rank);
  if (it == pl.ranks.end()) return {};
  const int k = static_cast<int>(it - pl.ranks.begin());
  const uint32_t base = static_cast<uint32_t>(b.program().ops.size() - b.program().rank_begin.back());
  std::vector<uint32_t> added;
  std::set<uint16_t> queues_seen;
  for (int i = 0; i < p.op_count(k); ++i) {
    const Operation& o = p.op(k, i);
    std::vector<uint32_t> deps;
    for (uint16_t d = 0; d < o.dep_count; ++d) deps.push_back(base + p.deps_of(o)[d]);
    if (queues_seen.insert(o.queue).second) deps.insert(deps.end(), after.begin(), after.end());
    added.push_back(static_cast<uint32_t>(b.add(place(pl, o), deps)));
  }
  return added;
}

Program relabel(const Program& p, const std::vector<int>& node_of) {
  std::vector<int> sorted = node_of;
  std::sort(sorted.begin(), sorted.end());
  for (int k = 0; k < p.ranks; ++k)
    if (static_cast<int>(sorted.size()) != p.ranks || sorted[k] != k)
      throw UserError("a rank mapping must name every rank once");
  std::vector<int> rank_of(p.ranks);
  for (int k = 0; k < p.ranks; ++k) rank_of[node_of[k]] = k;
  ProgramBuilder b(p.name, p.collective, p.ranks, p.in_place);
  Program& w = b.program();
  w.root = p.collective == Collective::Broadcast ? node_of[p.root] : p.root;
  w.tree_nodes = p.tree_nodes;
  w.multimem = p.multimem;
  w.protocol_by_size = p.protocol_by_size;
  w.data_channels = p.data_channels;
  w.dataflow = p.dataflow;
  for (LinkHint h : p.links) {
    h.rank = node_of.at(h.rank);
    h.peer = node_of.at(h.peer);
    w.links.push_back(std::move(h));
  }
  Placement pl;
  pl.part = &p;
  pl.ranks = node_of;
  add_groups(b, pl);
  for (int r = 0; r < p.ranks; ++r) {
    b.begin_rank(r, p.buffers[rank_of[r]]);
    append_part(b, pl, r, {});
  }
  return b.build();
}

Program pxn_program(const Program& p, const std::vector<int>& node, const std::vector<int>& rail) {
  if (p.engine() != Engine::Cores) return p;
  const int n = p.ranks;
  int nodes = 0, rails = 0, first = 0;  // first: the first channel the program does not use
  for (int r = 0; r < n; ++r) nodes = std::max(nodes, node[r] + 1), rails = std::max(rails, rail[r] + 1);
  for (const Operation& o : p.ops) first = std::max(first, o.channel + 1);
  std::map<std::pair<int, int>, int> rank_at;  // (node, rail) -> rank
  for (int r = 0; r < n; ++r) rank_at.emplace(std::make_pair(node[r], rail[r]), r);
  // Pair the k-th send from a to b on a channel with b's k-th receive from a on it.
  std::map<std::tuple<int, int, int>, std::vector<int>> sent, got;  // (a, b, channel) -> operation indices
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      if (sends(o.kind)) sent[{r, o.send_peer, o.channel}].push_back(i);
      if (receives(o.kind)) got[{o.recv_peer, r, o.channel}].push_back(i);
    }
  // A relay channel carries its data channel's chunks (Program::data_channels)
  // in a block of S channels per relay connection: at the sender, one per
  // node it sends to through an intermediate; at the receiver, one per rail
  // it receives from through one.
  const int data = p.data_channels ? p.data_channels : first;
  const int S = (first + data - 1) / data * data;
  struct Relay {
    int a, b, via, channel;
    const Operation* send;  // the sender's, relayed
    uint32_t scratch = 0;
    uint16_t queue = 0;
  };
  std::vector<Relay> relays;
  std::map<std::pair<int, int>, int> send_relay, recv_relay;  // (rank, operation) -> index in relays
  for (const auto& [key, sends_of] : sent) {
    const auto [a, b, channel] = key;
    const auto via = rank_at.find({node[a], rail[b]});
    const auto recvs = got.find(key);
    if (node[a] == node[b] || rail[a] == rail[b] || via == rank_at.end() || recvs == got.end()) continue;
    const int64_t relative =
        int64_t{(rail[a] - rail[b] + rails) % rails - 1} * (nodes - 1) + (node[b] - node[a] + nodes) % nodes - 1;
    const int64_t relay_channel = S * (1 + relative) + channel;
    for (size_t k = 0; k < std::min(sends_of.size(), recvs->second.size()); ++k) {
      const Operation &s = p.op(a, sends_of[k]), &r = p.op(b, recvs->second[k]);
      if (receives(s.kind) || sends(r.kind)) continue;
      // Checked only where a relay is made: a program that keeps to its
      // rails (NVLSTree, the tree) runs on any number of nodes.
      if (relay_channel > 65535)
        throw UserError("PXN's relays of " + p.name + " need more than 65536 channels; run it with cluster.pxn=0");
      send_relay[{a, sends_of[k]}] = recv_relay[{b, recvs->second[k]}] = static_cast<int>(relays.size());
      relays.push_back({a, b, via->second, static_cast<int>(relay_channel), &s});
    }
  }
  if (relays.empty()) return p;
  // The intermediates' relays: a scratch chunk each, and a queue per relay connection after the rank's own.
  std::vector<Buffers> buffers = p.buffers;
  std::vector<int> next_queue(static_cast<size_t>(n), 0);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < p.op_count(r); ++i) next_queue[r] = std::max(next_queue[r], p.op(r, i).queue + 1);
  std::map<std::tuple<int, int, int>, uint16_t> relay_queue;  // (intermediate, channel, sender) -> queue
  for (Relay& x : relays) {
    const auto q = relay_queue.try_emplace({x.via, x.channel, x.a}, static_cast<uint16_t>(next_queue[x.via]));
    if (q.second && ++next_queue[x.via] > 65535) throw UserError("PXN's relays of " + p.name + " need more than 65536 queues");
    x.queue = q.first->second;
    x.scratch = buffers[x.via].scratch;
    buffers[x.via].scratch += x.send->src.count;
  }
  ProgramBuilder pb(p.name, p.collective, n, p.in_place);
  Program& w = pb.program();
  w.root = p.root, w.tree_nodes = p.tree_nodes, w.multimem = p.multimem, w.protocol_by_size = p.protocol_by_size;
  w.data_channels = data;
  for (const auto& g : p.groups) pb.add_group(g);
  for (int r = 0; r < n; ++r) {
    pb.begin_rank(r, buffers[r]);
    for (int i = 0; i < p.op_count(r); ++i) {
      Operation o = p.op(r, i);
      if (const auto it = send_relay.find({r, i}); it != send_relay.end())
        o.send_peer = relays[it->second].via, o.channel = static_cast<uint16_t>(relays[it->second].channel);
      if (const auto it = recv_relay.find({r, i}); it != recv_relay.end())
        o.recv_peer = relays[it->second].via, o.channel = static_cast<uint16_t>(relays[it->second].channel);
      pb.add(o, std::vector<uint32_t>(p.deps_of(o), p.deps_of(o) + o.dep_count));
    }
    for (const Relay& x : relays) {
      if (x.via != r) continue;
      Operation o;
      o.kind = OpKind::RecvCopySend;
      o.proto = x.send->proto;
      o.channel = static_cast<uint16_t>(x.channel);
      o.queue = x.queue;
      o.recv_peer = x.a;
      o.send_peer = x.b;
      o.dst = chunk(Buffer::Scratch, x.scratch, x.send->src.count);
      pb.add(o);
    }
  }
  return pb.build();
}

}  // namespace incsim::collectives
