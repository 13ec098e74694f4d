#include "collectives/program_synthesis.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "core/error.h"

namespace incsim::collectives {

namespace {

Operation make_op(OpKind k, Engine e, uint16_t channel, uint16_t queue) {
  Operation o;
  o.kind = k;
  o.engine = e;
  o.channel = channel;
  o.queue = queue;
  return o;
}

}  // namespace

Program ring_program(Collective c, int n, int channels, const std::vector<int>& order_in, bool in_place, int root) {
  if (n < 2) throw UserError("a ring needs at least 2 ranks");
  if (channels < 1 || channels > 65535) throw UserError("a ring needs between 1 and 65535 channels");
  std::vector<int> order = order_in;
  if (order.empty()) {
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
  }
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < n; ++i)
    if (static_cast<int>(sorted.size()) != n || sorted[i] != i) throw UserError("a ring order must list every rank once");
  if (c == Collective::Broadcast && (root < 0 || root >= n)) throw UserError("the broadcast root is not a rank");

  const uint32_t ch_n = static_cast<uint32_t>(channels), un = static_cast<uint32_t>(n);
  Buffers b;
  switch (c) {
    case Collective::AllReduce: b.input = b.output = un * ch_n; break;
    case Collective::ReduceScatter: b.input = un * ch_n, b.output = ch_n; break;
    case Collective::AllGather: b.input = ch_n, b.output = un * ch_n; break;
    case Collective::Broadcast: b.input = b.output = ch_n; break;
  }
  std::vector<int> pos(n);
  for (int i = 0; i < n; ++i) pos[order[i]] = i;
  ProgramBuilder pb(std::string("ring"), c, n, in_place);
  pb.program().root = root;
  for (int r = 0; r < n; ++r) {
    pb.begin_rank(r, b);
    const int i = pos[r];
    const int next = order[(i + 1) % n], prev = order[(i + n - 1) % n];
    for (int chan = 0; chan < channels; ++chan) {
      const uint16_t ch = static_cast<uint16_t>(chan);
      // Rank order[j]'s block on this channel.
      const auto block = [&](int j) { return static_cast<uint32_t>(order[((j % n) + n) % n]) * ch_n + ch; };
      const auto op = [&](OpKind k, ChunkRef src, ChunkRef dst) {
        Operation o = make_op(k, Engine::Cores, ch, ch);
        if (sends(k)) o.send_peer = next;
        if (receives(k)) o.recv_peer = prev;
        o.src = src;
        o.dst = dst;
        pb.add(o);
      };
      const ChunkRef none;
      switch (c) {
        case Collective::AllReduce:
          op(OpKind::Send, chunk(Buffer::Input, block(i)), none);
          for (int s = 1; s <= n - 2; ++s) op(OpKind::RecvReduceSend, chunk(Buffer::Input, block(i - s)), none);
          op(OpKind::RecvReduceCopySend, chunk(Buffer::Input, block(i + 1)), chunk(Buffer::Output, block(i + 1)));
          for (int s = n; s <= 2 * n - 3; ++s) op(OpKind::RecvCopySend, none, chunk(Buffer::Output, block(i - s)));
          op(OpKind::Recv, none, chunk(Buffer::Output, block(i + 2)));
          break;
        case Collective::ReduceScatter:
          op(OpKind::Send, chunk(Buffer::Input, block(i - 1)), none);
          for (int s = 1; s <= n - 2; ++s) op(OpKind::RecvReduceSend, chunk(Buffer::Input, block(i - 1 - s)), none);
          op(OpKind::RecvReduceCopy, chunk(Buffer::Input, block(i)), chunk(Buffer::Output, ch));
          break;
        case Collective::AllGather:
          if (!in_place) op(OpKind::Copy, chunk(Buffer::Input, ch), chunk(Buffer::Output, block(i)));
          op(OpKind::Send, chunk(Buffer::Input, ch), none);
          for (int s = 1; s <= n - 2; ++s) op(OpKind::RecvCopySend, none, chunk(Buffer::Output, block(i - s)));
          op(OpKind::Recv, none, chunk(Buffer::Output, block(i + 1)));
          break;
        case Collective::Broadcast: {
          const int from_root = (i - pos[root] + n) % n;
          if (from_root == 0) {
            if (!in_place) op(OpKind::Copy, chunk(Buffer::Input, ch), chunk(Buffer::Output, ch));
            op(OpKind::Send, chunk(Buffer::Input, ch), none);
          } else if (from_root < n - 1) {
            op(OpKind::RecvCopySend, none, chunk(Buffer::Output, ch));
          } else {
            op(OpKind::Recv, none, chunk(Buffer::Output, ch));
          }
          break;
        }
      }
    }
  }
  return pb.build();
}

Program schedule_program(const Schedule& s) {
  const bool bcast = s.broadcast_root != kNil;
  ProgramBuilder pb(s.algorithm, bcast ? Collective::Broadcast : Collective::AllReduce, s.nodes, true);
  pb.program().root = bcast ? s.broadcast_root : 0;
  // Each node's events in table order: (step, receive?, op, flow, peer).
  std::vector<std::vector<std::tuple<int, int, int, int, int>>> events(s.nodes);
  for (const Message& m : s.messages()) {
    events[m.src].emplace_back(m.step, 0, static_cast<int>(m.op), m.flow, m.dst);
    events[m.dst].emplace_back(m.step, 1, static_cast<int>(m.op), m.flow, m.src);
  }
  for (int node = 0; node < s.nodes; ++node)
    for (const Entry& e : s.tables[node])
      if (e.op == collectives::Op::Nop) events[node].emplace_back(e.step, 0, static_cast<int>(e.op), kNil, kNil);
  const uint32_t slices = static_cast<uint32_t>(s.slices);
  for (int node = 0; node < s.nodes; ++node) {
    pb.begin_rank(node, Buffers{slices, slices, 0});
    std::sort(events[node].begin(), events[node].end());
    for (const auto& [step, recv, op, flow, peer] : events[node]) {
      Operation o = make_op(OpKind::Nop, Engine::NicTable, 0, 0);
      o.timestep = static_cast<uint16_t>(step);
      if (flow != kNil) {
        const ChunkRef c = chunk(Buffer::Output, static_cast<uint32_t>(s.flows[flow].start),
                                 static_cast<uint16_t>(s.flows[flow].size));
        const bool reduce = op == static_cast<int>(collectives::Op::Reduce);
        if (!recv) {
          o.kind = OpKind::Send;
          o.send_peer = peer;
          o.src = c;
        } else {
          o.kind = reduce ? OpKind::RecvReduceCopy : OpKind::Recv;
          o.recv_peer = peer;
          o.dst = c;
        }
      }
      pb.add(o);
    }
  }
  return pb.build();
}

const char* method_name(InNetMethod m) {
  static const char* const names[] = {"push", "pull", "multicast"};
  return names[static_cast<int>(m)];
}

InNetMethod in_network_method(const Program& p) {
  auto has = [&](OpKind k) {
    return std::any_of(p.ops.begin(), p.ops.end(), [k](const Operation& o) { return o.kind == k; });
  };
  return has(OpKind::ReduceRead) ? InNetMethod::Pull : has(OpKind::ReduceWrite) ? InNetMethod::Push : InNetMethod::Multicast;
}

Program in_network_program(const std::string& name, Collective c, InNetMethod m, int n, bool barrier) {
  if (n < 2) throw UserError("an in-network collective needs at least 2 ranks");
  const bool ok = m == InNetMethod::Push        ? c == Collective::AllReduce
                  : m == InNetMethod::Pull      ? c == Collective::AllReduce || c == Collective::ReduceScatter
                                                : c == Collective::AllGather || c == Collective::Broadcast;
  if (!ok) throw UserError(std::string("no in-network program for ") + collective_name(c) + " by " + name);
  const uint32_t un = static_cast<uint32_t>(n);
  ProgramBuilder pb(name, c, n, c == Collective::Broadcast);
  const int all = [&] {
    std::vector<int> ranks(n);
    std::iota(ranks.begin(), ranks.end(), 0);
    return pb.add_group(ranks);
  }();
  auto op = [&](OpKind k, ChunkRef src, ChunkRef dst) {
    Operation o = make_op(k, Engine::CopyEngine, 0, 0);
    if (in_network(k)) o.group = all;
    o.src = src;
    o.dst = dst;
    return o;
  };
  const ChunkRef none;
  for (int r = 0; r < n; ++r) {
    const uint32_t ur = static_cast<uint32_t>(r);
    switch (c) {
      case Collective::AllReduce:
        if (m == InNetMethod::Push) {
          pb.begin_rank(r, {1, 1, 0});
          pb.add(op(OpKind::ReduceWrite, chunk(Buffer::Input, 0), chunk(Buffer::Output, 0)));
          break;
        }
        [[fallthrough]];
      case Collective::ReduceScatter: {
        const bool scatter = c == Collective::ReduceScatter;
        pb.begin_rank(r, {un, scatter ? 1 : un, 0});
        if (barrier) pb.add(op(OpKind::Barrier, none, none));
        int read = -1;
        for (uint32_t k = 0; k < un; ++k) {
          const int i = pb.add(op(OpKind::ReduceRead, chunk(Buffer::Input, k),
                                  k == ur ? chunk(Buffer::Output, scatter ? 0 : k) : none));
          if (k == ur) read = i;
        }
        if (!scatter)
          for (uint32_t k = 0; k < un; ++k)
            pb.add(k == ur ? op(OpKind::MulticastWrite, chunk(Buffer::Output, k), none)
                           : op(OpKind::MulticastWrite, none, chunk(Buffer::Output, k)),
                   k == ur ? std::vector<uint32_t>{static_cast<uint32_t>(read)} : std::vector<uint32_t>{});
        break;
      }
      case Collective::AllGather:
        pb.begin_rank(r, {1, un, 0});
        pb.add(op(OpKind::Copy, chunk(Buffer::Input, 0), chunk(Buffer::Output, ur)));
        for (uint32_t k = 0; k < un; ++k)
          pb.add(k == ur ? op(OpKind::MulticastWrite, chunk(Buffer::Input, 0), none)
                         : op(OpKind::MulticastWrite, none, chunk(Buffer::Output, k)));
        break;
      case Collective::Broadcast:
        pb.begin_rank(r, {1, 1, 0});
        pb.add(r == 0 ? op(OpKind::MulticastWrite, chunk(Buffer::Input, 0), none)
                      : op(OpKind::MulticastWrite, none, chunk(Buffer::Output, 0)));
        break;
    }
  }
  return pb.build();
}

}  // namespace incsim::collectives
