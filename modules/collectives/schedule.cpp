#include "collectives/schedule.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <sstream>
#include <unordered_map>

#include "core/error.h"

namespace incsim::collectives {

const char* op_name(Op op) {
  switch (op) {
    case Op::Reduce: return "Reduce";
    case Op::Gather: return "Gather";
    case Op::Nop: return "NOP";
  }
  return "?";
}

bool Entry::operator==(const Entry& o) const {
  return op == o.op && flow == o.flow && parent == o.parent && children == o.children &&
         step == o.step && start == o.start && size == o.size;
}

namespace {

bool entry_less(const Entry& a, const Entry& b) {
  return std::tie(a.step, a.op, a.flow, a.parent) < std::tie(b.step, b.op, b.flow, b.parent);
}

}  // namespace

std::vector<Message> Schedule::messages() const {
  std::vector<Message> out;
  for (int u = 0; u < static_cast<int>(tables.size()); ++u)
    for (const Entry& e : tables[u]) {
      if (e.op == Op::Reduce && e.parent != kNil) out.push_back({u, e.parent, e.op, e.flow, e.step});
      if (e.op == Op::Gather)
        for (int c : e.children) out.push_back({u, c, e.op, e.flow, e.step});
    }
  std::sort(out.begin(), out.end(), [](const Message& a, const Message& b) {
    return std::tie(a.step, a.src, a.dst, a.op, a.flow) < std::tie(b.step, b.src, b.dst, b.op, b.flow);
  });
  return out;
}

int Schedule::count(Op op) const {
  int k = 0;
  for (const auto& t : tables)
    for (const Entry& e : t) k += e.op == op;
  return k;
}

// ---------------------------------------------------------------- compile

namespace {

struct Msg {
  int flow, src, dst, step;
  Op op;
};

// Every node's entries from the messages (in the order given: children lists
// keep it within a step); with nops a NOP entry in every step 1..steps in
// which a node sends nothing (the lockstep of §IV-A).
void derive_tables(Schedule& s, std::vector<Msg> m, bool nops) {
  const int n = s.nodes;
  s.tables.assign(n, {});
  std::stable_sort(m.begin(), m.end(), [](const Msg& a, const Msg& b) { return a.step < b.step; });
  std::vector<std::vector<const Msg*>> out(n), in(n);
  int last_reduce = 0, first_gather = 1 << 30;
  for (const Msg& x : m) {
    out[x.src].push_back(&x);
    in[x.dst].push_back(&x);
    s.steps = std::max(s.steps, x.step);
    if (x.op == Op::Reduce) last_reduce = std::max(last_reduce, x.step);
    else first_gather = std::min(first_gather, x.step);
  }
  s.reduce_steps = last_reduce < first_gather ? last_reduce : 0;
  const int flows = static_cast<int>(s.flows.size());
  // A flow's Reduce and Gather messages out of and into a node, in the order
  // given; lists reused from flow to flow, not four per flow and node (67 M
  // allocations for MultiTree on 4,096 endpoints).
  std::vector<const Msg*> rin, rout, gin, gout;
  const auto by_flow = [](std::vector<const Msg*>& v) {
    std::stable_sort(v.begin(), v.end(), [](const Msg* a, const Msg* b) { return a->flow < b->flow; });
  };
  for (int u = 0; u < n; ++u) {
    by_flow(out[u]);
    by_flow(in[u]);
    size_t next_out = 0, next_in = 0;
    auto& table = s.tables[u];
    for (int f = 0; f < flows; ++f) {
      for (auto* v : {&rin, &rout, &gin, &gout}) v->clear();
      for (; next_out < out[u].size() && out[u][next_out]->flow == f; ++next_out)
        (out[u][next_out]->op == Op::Reduce ? rout : gout).push_back(out[u][next_out]);
      for (; next_in < in[u].size() && in[u][next_in]->flow == f; ++next_in)
        (in[u][next_in]->op == Op::Reduce ? rin : gin).push_back(in[u][next_in]);
      Entry base;
      base.flow = f;
      base.start = s.flows[f].start;
      base.size = s.flows[f].size;
      // Reduce: one entry per send (one in a correct schedule), or the root's.
      std::vector<int> children;
      int last_in = 0;
      for (const Msg* x : rin) {
        children.push_back(x->src);
        last_in = std::max(last_in, x->step);
      }
      for (const Msg* x : rout) {
        Entry e = base;
        e.op = Op::Reduce;
        e.parent = x->dst;
        e.children = children;
        e.step = x->step;
        table.push_back(std::move(e));
      }
      if (rout.empty() && !rin.empty()) {
        Entry e = base;
        e.op = Op::Reduce;
        e.children = children;
        e.step = last_in;
        table.push_back(std::move(e));
      }
      // Gather: one entry per sending step, or the leaf's receive entry.
      const int parent = gin.empty() ? kNil : gin.front()->src;
      for (size_t i = 0; i < gout.size();) {
        Entry e = base;
        e.op = Op::Gather;
        e.parent = parent;
        e.step = gout[i]->step;
        for (; i < gout.size() && gout[i]->step == e.step; ++i)
          e.children.push_back(gout[i]->dst);
        table.push_back(std::move(e));
      }
      if (gout.empty())
        for (const Msg* x : gin) {
          Entry e = base;
          e.op = Op::Gather;
          e.parent = x->src;
          e.step = x->step;
          table.push_back(std::move(e));
        }
    }
    if (nops) {
      std::vector<bool> busy(s.steps + 1, false);
      for (const Entry& e : table)
        if (e.sends()) busy[e.step] = true;
      for (int t = 1; t <= s.steps; ++t)
        if (!busy[t]) {
          Entry e;
          e.op = Op::Nop;
          e.step = t;
          table.push_back(std::move(e));
        }
    }
    std::stable_sort(table.begin(), table.end(), entry_less);
    std::vector<const Msg*>().swap(out[u]);  // done with: freed as the tables grow
    std::vector<const Msg*>().swap(in[u]);
  }
}

}  // namespace

Schedule schedule_of(const Program& p) {
  if (p.collective != Collective::AllReduce && p.collective != Collective::Broadcast)
    throw UserError("a NIC schedule table runs an all-reduce or a broadcast, not a " +
                    std::string(collective_name(p.collective)));
  // Flows are the chunks the operations move, in buffer order.
  std::map<uint32_t, std::pair<uint16_t, uint16_t>> chunks;  // start -> (size, channel)
  bool nops = false;
  for (const Operation& o : p.ops) {
    if (o.engine != Engine::NicTable)
      throw UserError(std::string("a NIC schedule table holds table operations, not ") + engine_name(o.engine) +
                      " ones");
    if (o.kind != OpKind::Nop && o.kind != OpKind::Send && o.kind != OpKind::Recv && o.kind != OpKind::RecvReduceCopy)
      throw UserError(std::string("a NIC schedule table sends, receives and receive-reduces whole chunks; it has no ") +
                      op_name(o.kind));
    if (o.timestep == 0)
      throw UserError("a NIC schedule table runs in lockstep steps: every operation needs its timestep");
    nops |= o.kind == OpKind::Nop;
    const ChunkRef c = o.src.empty() ? o.dst : o.src;
    if (c.empty()) continue;
    if (c.buf != Buffer::Output)
      throw UserError("a NIC schedule table works in place: name output chunks (o), not input or scratch ones");
    const auto [it, fresh] = chunks.try_emplace(c.index, std::make_pair(c.count, o.channel));
    if (!fresh && it->second != std::make_pair(c.count, o.channel))
      throw UserError("chunk " + std::to_string(c.index) + " is moved in two sizes or on two channels; a flow of a "
                      "schedule table is one chunk on one channel");
  }
  std::map<uint32_t, int> flow_of;
  for (const auto& [start, sc] : chunks) flow_of[start] = static_cast<int>(flow_of.size());
  uint32_t next = 0;
  for (const auto& [start, sc] : chunks) {
    if (start < next) throw UserError("chunks " + std::to_string(start) + " and before overlap; a schedule table's flows do not");
    next = start + sc.first;
  }
  Schedule s;
  s.algorithm = p.name;
  s.nodes = p.ranks;
  s.slices = static_cast<int>(p.buffers.empty() ? 0 : p.buffers[0].output);
  for (const auto& [start, sc] : chunks) {
    s.flows.push_back({static_cast<int>(start), sc.first});
    s.flow_tree.push_back(sc.second);
  }
  bool identity = true;
  for (size_t f = 0; f < s.flow_tree.size(); ++f) identity &= s.flow_tree[f] == static_cast<int>(f);
  if (identity) s.flow_tree.clear();
  if (p.collective == Collective::Broadcast) s.broadcast_root = p.root;
  // A send is a Reduce message if its receiver reduces it. Receives of a
  // pair of ranks meet their sends in order, per channel (docs/programs.md):
  // the k-th send of a (from, to, channel) pair in program order meets its
  // k-th receive, both sides sorted by pair, stably.
  struct Side {
    uint64_t key;
    size_t op;  // in p.ops
    bool operator<(const Side& o) const { return key < o.key; }
  };
  std::vector<Side> recvs, sent;
  for (int r = 0; r < p.ranks; ++r)
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      const size_t g = p.rank_begin[r] + static_cast<size_t>(i);
      if (receives(o.kind)) recvs.push_back({pair_key(o.recv_peer, r, o.channel), g});
      if (o.kind == OpKind::Send) sent.push_back({pair_key(r, o.send_peer, o.channel), g});
    }
  std::stable_sort(recvs.begin(), recvs.end());
  std::stable_sort(sent.begin(), sent.end());
  std::vector<const Operation*> receiver(p.ops.size(), nullptr);  // [send]: its receive
  for (size_t a = 0, b = 0; a < sent.size(); ++a) {
    while (b < recvs.size() && recvs[b].key < sent[a].key) ++b;
    if (b < recvs.size() && recvs[b].key == sent[a].key) receiver[sent[a].op] = &p.ops[recvs[b++].op];
  }
  // Reduce messages in each receiver's order, Gather messages in each
  // sender's: the entries' children keep that order.
  std::vector<Msg> reduce, gather;
  for (int r = 0; r < p.ranks; ++r)
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      if (o.kind != OpKind::Send) continue;
      const Operation* const rk = receiver[p.rank_begin[r] + static_cast<size_t>(i)];
      if (!rk) throw UserError("rank " + std::to_string(r) + "'s send to rank " + std::to_string(o.send_peer) + " is never received");
      if (rk->timestep != o.timestep || !(rk->dst == o.src))
        throw UserError("rank " + std::to_string(o.send_peer) + " receives rank " + std::to_string(r) +
                        "'s message in another step or chunk than it is sent");
      if (rk->kind == OpKind::Recv) gather.push_back({flow_of.at(o.src.index), r, o.send_peer, o.timestep, Op::Gather});
    }
  for (int r = 0; r < p.ranks; ++r)
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      if (o.kind == OpKind::RecvReduceCopy) reduce.push_back({flow_of.at(o.dst.index), o.recv_peer, r, o.timestep, Op::Reduce});
    }
  reduce.insert(reduce.end(), gather.begin(), gather.end());
  derive_tables(s, std::move(reduce), nops);
  return s;
}

std::string format_tables(const Schedule& s) {
  std::ostringstream os;
  os << s.algorithm << ": " << s.nodes << " nodes, " << s.flows.size() << " flows, " << s.steps
     << " steps\n";
  for (int u = 0; u < static_cast<int>(s.tables.size()); ++u) {
    os << "Accelerator " << u << "\n";
    os << "  Op      FlowID  Parent  Children         Step  Start  Size\n";
    for (const Entry& e : s.tables[u]) {
      std::string ch;
      for (int c : e.children) ch += (ch.empty() ? "" : ",") + std::to_string(c);
      if (ch.empty()) ch = "nil";
      char line[160];
      if (e.op == Op::Nop)
        std::snprintf(line, sizeof line, "  %-7s %-7s %-7s %-16s %5d  %5s  %4s\n", "NOP", "nil", "nil", "nil",
                      e.step, "nil", "nil");
      else
        std::snprintf(line, sizeof line, "  %-7s %-7d %-7s %-16s %5d  %5d  %4d\n", op_name(e.op), e.flow,
                      e.parent == kNil ? "nil" : std::to_string(e.parent).c_str(), ch.c_str(), e.step,
                      e.start, e.size);
      os << line;
    }
  }
  return os.str();
}

ByteRange slice_bytes(uint64_t bytes, uint32_t elem_bytes, int slices, int start, int size) {
  if (elem_bytes == 0 || slices < 1 || start < 0 || size < 0 || start + size > slices)
    throw UserError("a slice range outside the buffer");
  const uint64_t elems = bytes / elem_bytes;
  auto at = [&](int i) { return elems * static_cast<uint64_t>(i) / static_cast<uint64_t>(slices) * elem_bytes; };
  return {at(start), at(start + size) - at(start)};
}

uint64_t MessageFraming::wire_bytes(uint64_t len) const {
  const uint64_t packets = (len + max_payload_bytes - 1) / max_payload_bytes;
  const uint64_t heads = one_head ? std::min<uint64_t>(packets, 1) : packets;
  // Each packet's payload rounded up to flits: full packets and the last.
  const uint64_t full = len / max_payload_bytes, last = len % max_payload_bytes;
  const auto flits = [this](uint64_t n) { return (n + flit_bytes - 1) / flit_bytes * flit_bytes; };
  return heads * header_bytes + full * flits(max_payload_bytes) + flits(last);
}

double lockstep_ns(const Schedule& s, uint64_t bytes, uint32_t elem_bytes, const MessageFraming& f,
                   const StepEstimate& e) {
  // The largest flow is the step's message.
  uint64_t len = 0;
  for (const auto& c : s.flows) len = std::max(len, slice_bytes(bytes, elem_bytes, s.slices, c.start, c.size).length);
  const uint64_t packets = (len + f.max_payload_bytes - 1) / f.max_payload_bytes;
  const uint64_t payload_flits = (len + f.flit_bytes - 1) / f.flit_bytes;
  const uint64_t head_flits = f.one_head ? 1 : packets;
  const uint64_t head_flit_count = head_flits * ((f.header_bytes + f.flit_bytes - 1) / f.flit_bytes);
  const uint64_t flits = payload_flits + head_flit_count;
  const uint64_t counted = flits <= e.buffer_flits ? flits : flits - e.buffer_flits;
  return static_cast<double>(counted) * f.flit_bytes / e.link_GBps;
}

MessagePorts message_ports(const Program& p, const topo::Topology& t, const std::vector<uint32_t>& endpoint_of,
                           const std::function<int(int)>& ports_of, const std::function<std::string(int)>& name_of) {
  const int n = p.ranks;
  MessagePorts out;
  out.to.assign(n, std::vector<std::vector<int>>(n));
  out.tree.resize(n);
  for (const LinkHint& h : p.links) {
    if (h.rank < 0 || h.rank >= n || h.peer < 0 || h.peer >= n || h.rank == h.peer)
      throw UserError("a link hint leads rank " + std::to_string(h.rank) + " to rank " + std::to_string(h.peer) +
                      " of " + std::to_string(n));
    const bool placed = endpoint_of[h.rank] < t.endpoints().size();
    for (int q : h.ports)
      if (q >= ports_of(h.rank) ||
          (placed && !t.port_reaches({t.endpoints()[endpoint_of[h.rank]], q}, static_cast<int>(endpoint_of[h.peer]))))
        throw UserError("rank " + std::to_string(h.rank) + "'s link hint to rank " + std::to_string(h.peer) +
                        " names port " + std::to_string(q) + " of " + name_of(h.rank) + ", which does not lead there");
    if (h.channel == kNone) {
      out.to[h.rank][h.peer] = h.ports;
      continue;
    }
    auto& trees = out.tree[h.rank];
    if (static_cast<int>(trees.size()) <= h.channel) trees.resize(h.channel + 1, std::vector<std::vector<int>>(n));
    trees[h.channel][h.peer] = h.ports;
  }
  for (int r = 0; r < n; ++r)
    for (int d = 0; d < n; ++d) {
      if (d == r || !out.to[r][d].empty()) continue;
      const int node = t.endpoints()[endpoint_of[r]];
      for (int q = 0; q < t.node(node).ports; ++q)
        if (t.port_reaches({node, q}, static_cast<int>(endpoint_of[d]))) out.to[r][d].push_back(q);
    }
  return out;
}

TableView table_view(const Schedule& s, int rank, const std::vector<std::vector<int>>& ports_to,
                     const std::vector<std::vector<std::vector<int>>>& tree_ports) {
  TableView v;
  v.flows.assign(s.flows.size(), {});
  if (s.broadcast_root == rank)  // a broadcast's root starts with its own input as every flow's sum
    for (TableView::Flow& f : v.flows) f.root = true;
  // (port, destination, tree): a link of the tree, numbered as first met.
  // Hashed (ranks and trees below 2^24, as pair_key's): a rank of MultiTree
  // on 4,096 endpoints has 8,190 of them.
  std::unordered_map<uint64_t, int> lane_of;
  for (const Entry& e : s.tables[static_cast<size_t>(rank)]) {
    v.first_share.push_back(static_cast<uint32_t>(v.shares.size()));
    if (e.op == Op::Nop) continue;
    TableView::Flow& f = v.flows[static_cast<size_t>(e.flow)];
    if (e.op == Op::Reduce) {
      f.reduce_children = static_cast<uint32_t>(e.children.size());
      f.root = f.root || e.parent == kNil;
    } else if (e.parent != kNil) {
      f.gathers = true;
    }
    if (!e.sends()) continue;
    const bool reduce = e.op == Op::Reduce;
    const int tree = s.flow_tree.empty() ? e.flow : s.flow_tree[static_cast<size_t>(e.flow)];
    for (int dst : reduce ? std::vector<int>{e.parent} : e.children) {
      const bool own = tree < static_cast<int>(tree_ports.size()) &&
                       !tree_ports[static_cast<size_t>(tree)][static_cast<size_t>(dst)].empty();
      const std::vector<int>& ports =
          own ? tree_ports[static_cast<size_t>(tree)][static_cast<size_t>(dst)] : ports_to[static_cast<size_t>(dst)];
      for (size_t k = 0; k < ports.size(); ++k) {
        assert(ports[k] < (1 << 16) && dst < (1 << 24) && tree >= 0 && tree < (1 << 24));
        const uint64_t key = static_cast<uint64_t>(ports[k]) << 48 | static_cast<uint64_t>(dst) << 24 |
                             static_cast<uint64_t>(tree);
        const int lane = lane_of.emplace(key, static_cast<int>(lane_of.size())).first->second;
        v.shares.push_back({e.flow, dst, ports[k], static_cast<int>(k), static_cast<int>(ports.size()), reduce, tree, lane});
      }
    }
  }
  v.first_share.push_back(static_cast<uint32_t>(v.shares.size()));
  v.lanes = static_cast<int>(lane_of.size());
  return v;
}

void describe_schedule(std::ostream& os, const Schedule& s, bool dataflow) {
  uint64_t entries = 0;
  for (const auto& tb : s.tables) entries = std::max<uint64_t>(entries, tb.size());
  os << "# schedule: " << s.algorithm << " on the NICs, " << (dataflow ? "dataflow (no lockstep), " : "") << s.steps
     << " steps";
  if (s.reduce_steps) os << " (" << s.reduce_steps << " reduce-scatter)";
  os << ", " << s.flows.size() << " flows, up to " << entries << " table entries per node ("
     << s.count(Op::Nop) << " NOPs in all)\n";
}

}  // namespace incsim::collectives
