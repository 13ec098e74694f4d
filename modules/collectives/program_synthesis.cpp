#include "collectives/program_synthesis.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <utility>

#include "collectives/baselines.h"
#include "collectives/composition.h"
#include "core/error.h"

namespace incsim::collectives {

Program ring_program(Collective c, int n, int channels, const std::vector<int>& order, bool in_place, int root) {
  if (channels < 1 || channels > 65535) throw UserError("a ring needs between 1 and 65535 channels");
  return ring_program(c, n, std::vector<std::vector<int>>(static_cast<size_t>(channels), order), in_place, root);
}

Program ring_program(Collective c, int n, std::vector<std::vector<int>> orders, bool in_place, int root) {
  if (n < 2) throw UserError("a ring needs at least 2 ranks");
  const int channels = static_cast<int>(orders.size());
  if (channels < 1 || channels > 65535) throw UserError("a ring needs between 1 and 65535 channels");
  for (std::vector<int>& order : orders) {
    if (order.empty()) {
      order.resize(n);
      std::iota(order.begin(), order.end(), 0);
    }
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < n; ++i)
      if (static_cast<int>(sorted.size()) != n || sorted[i] != i) throw UserError("a ring order must list every rank once");
  }
  if (rooted(c) && (root < 0 || root >= n))
    throw UserError(std::string("the ") + collective_name(c) + " root is not a rank");
  if (c == Collective::AllToAll || c == Collective::Gather || c == Collective::Scatter)
    throw UserError(std::string(c == Collective::AllToAll ? "an " : "a ") + collective_name(c) +
                    " runs no ring: NCCL sends each peer its block (p2p)");

  const uint32_t ch_n = static_cast<uint32_t>(channels), un = static_cast<uint32_t>(n);
  Buffers b;
  switch (c) {
    case Collective::AllReduce: b.input = b.output = un * ch_n; break;
    case Collective::ReduceScatter: b.input = un * ch_n, b.output = ch_n; break;
    case Collective::AllGather: b.input = ch_n, b.output = un * ch_n; break;
    case Collective::Broadcast:
    case Collective::Reduce:
    case Collective::AllToAll:
    case Collective::Gather:
    case Collective::Scatter: b.input = b.output = ch_n; break;  // all-to-all, gather, scatter: refused above
  }
  // [channel][rank]: the rank's position in the channel's ring.
  std::vector<std::vector<int>> positions(channels, std::vector<int>(n));
  for (int chan = 0; chan < channels; ++chan)
    for (int i = 0; i < n; ++i) positions[chan][orders[chan][i]] = i;
  ProgramBuilder pb(std::string("ring"), c, n, in_place);
  pb.program().root = root;
  for (int r = 0; r < n; ++r) {
    pb.begin_rank(r, b);
    for (int chan = 0; chan < channels; ++chan) {
      const std::vector<int>& order = orders[chan];
      const std::vector<int>& pos = positions[chan];
      const int i = pos[r];
      const int next = order[(i + 1) % n], prev = order[(i + n - 1) % n];
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
        case Collective::Reduce: {
          const int from_root = (i - pos[root] + n) % n;
          if (from_root == 1)
            op(OpKind::Send, chunk(Buffer::Input, ch), none);
          else if (from_root != 0)
            op(OpKind::RecvReduceSend, chunk(Buffer::Input, ch), none);
          else
            op(OpKind::RecvReduceCopy, chunk(Buffer::Input, ch), chunk(Buffer::Output, ch));
          break;
        }
        case Collective::AllToAll:
        case Collective::Gather:
        case Collective::Scatter: break;  // refused above
      }
    }
  }
  return pb.build();
}

const char* method_name(InNetMethod m) {
  static const char* const names[] = {"push", "pull", "multicast"};
  return names[static_cast<int>(m)];
}

std::optional<InNetMethod> in_network_method(const Program& p) {
  auto has = [&](OpKind k) {
    return std::any_of(p.ops.begin(), p.ops.end(), [k](const Operation& o) { return o.kind == k; });
  };
  if (has(OpKind::ReduceRead)) return InNetMethod::Pull;
  if (has(OpKind::ReduceWrite)) return InNetMethod::Push;
  if (has(OpKind::MulticastWrite)) return InNetMethod::Multicast;
  return std::nullopt;
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
      case Collective::AllToAll:
      case Collective::Reduce:
      case Collective::Gather:
      case Collective::Scatter: break;  // refused above: no method runs them
    }
  }
  return pb.build();
}

}  // namespace incsim::collectives

namespace incsim::collectives {

namespace {
// A host's all-reduce buffers in place, `chunks` of them.
Buffers in_place_buffers(uint32_t chunks) {
  Buffers b;
  b.input = b.output = chunks;
  return b;
}
}  // namespace

Program cluster_ring_program(Collective c, int nodes, int per_node, int channels) {
  if (channels < 1 || channels > 65535) throw UserError("a ring needs between 1 and 65535 channels");
  std::vector<std::vector<int>> orders(static_cast<size_t>(channels));
  for (int ch = 0; ch < channels; ++ch)
    for (int k = 0; k < nodes; ++k)
      for (int i = 0; i < per_node; ++i) orders[ch].push_back(k * per_node + (ch + i) % per_node);
  return ring_program(c, nodes * per_node, std::move(orders));
}

namespace {
// Each node's ring reduce-scatters (its blocks `scale` chunks each); where it
// completes GPU g's block on channel c, across(pb, node, g, block, done)
// all-reduces the block over GPU g of every node (its rail) after operation
// `done` and returns its last operation; then the node's ring all-gathers.
void check_hierarchy(const std::string& name, int nodes, int per_node, int channels) {
  if (nodes < 2 || per_node < 2) throw UserError(name + " needs at least 2 nodes of at least 2 GPUs");
  if (channels < 1 || 2 * channels > 65535) throw UserError("a ring needs between 1 and 32767 channels here");
}

Program hierarchical_program(const std::string& name, int nodes, int per_node, int channels, uint32_t scale,
                             const std::function<int(ProgramBuilder&, int, int, const Operation&, uint32_t)>& across) {
  const int N = nodes, G = per_node, C = channels;
  // Out of place: only the blocks the rails sum are read back, so only they
  // are stored (an in-place program keeps every chunk it overwrites).
  const Program node = ring_program(Collective::AllReduce, G, C);
  const uint32_t chunks = static_cast<uint32_t>(G) * static_cast<uint32_t>(C) * scale;
  ProgramBuilder pb(name, Collective::AllReduce, N * G, false);
  for (int m = 0; m < N; ++m) {
    Placement in_node;
    in_node.part = &node;
    for (int i = 0; i < G; ++i) in_node.ranks.push_back(m * G + i);
    in_node.scale = scale;
    for (int i = 0; i < G; ++i) {
      pb.begin_rank(m * G + i, Buffers{chunks, chunks, 0});
      for (int k = 0; k < node.op_count(i); ++k) {
        Operation o = place(in_node, node.op(i, k));
        if (o.kind != OpKind::RecvReduceCopySend) {
          pb.add(o);
          continue;
        }
        // The node's reduce-scatter completes this GPU's block: the rail sums it, then the all-gather sends it on.
        const int next = o.send_peer;
        o.kind = OpKind::RecvReduceCopy;
        o.send_peer = kNone;
        const uint32_t rrc = static_cast<uint32_t>(pb.add(o));
        const int summed = across(pb, m, i, o, rrc);
        Operation s = make_op(OpKind::Send, Engine::Cores, o.channel, o.queue);
        s.send_peer = next;
        s.src = o.dst;
        pb.add(s, {static_cast<uint32_t>(summed)});
      }
    }
  }
  return pb.build();
}
}  // namespace

Program hierarchical_ring_program(int nodes, int per_node, int channels) {
  check_hierarchy("a hierarchical ring", nodes, per_node, channels);
  const int N = nodes, G = per_node, C = channels;
  const Program rail = ring_program(Collective::AllReduce, N, 1, {}, true);
  // Every block of the node's ring is N chunks, one per rank of a rail's ring.
  return hierarchical_program(
      "hring", nodes, per_node, channels, static_cast<uint32_t>(N),
      [&](ProgramBuilder& pb, int m, int i, const Operation& block, uint32_t done) {
        Placement across;
        across.part = &rail;
        for (int r = 0; r < N; ++r) across.ranks.push_back(r * G + i);
        across.channel = static_cast<uint16_t>(C + block.channel);
        across.queue = static_cast<uint16_t>(C + block.channel);
        across.offset = block.dst.index;
        across.buffer = Buffer::Output;  // the rail sums the block in the output, in place
        return static_cast<int>(append_part(pb, across, m * G + i, {done}).back());
      });
}

Program collnet_program(int nodes, int per_node, int channels) {
  check_hierarchy("CollNet", nodes, per_node, channels);
  const int N = nodes, G = per_node, C = channels;
  std::vector<int> rail(static_cast<size_t>(G) * static_cast<size_t>(C), -1);  // [i C + c]: its group
  return hierarchical_program(
      "collnet", nodes, per_node, channels, 1, [&](ProgramBuilder& pb, int, int i, const Operation& block, uint32_t done) {
        int& g = rail[static_cast<size_t>(i) * static_cast<size_t>(C) + block.channel];
        if (g < 0) {
          std::vector<int> members;
          for (int r = 0; r < N; ++r) members.push_back(r * G + i);
          g = pb.add_group(members);
        }
        Operation o = make_op(OpKind::ReduceWrite, Engine::Cores, block.channel, static_cast<uint16_t>(C + block.channel));
        o.group = g;
        o.src = o.dst = block.dst;
        return pb.add(o, {done});
      });
}

namespace {

// One rank's part of NCCL's tree all-reduce on one channel (runTreeSplit):
// on queue `up_q` it adds its children's sums to `in` (a partial in `part`
// between two children) and sends the sum to its parent, or, at the root,
// takes the total into `out` and sends it down; on queue up_q + 1 it takes
// the total from its parent into `out` and sends it to its children.
// Returns the index of the operation that writes the total into `out`.
int add_tree_rank(ProgramBuilder& pb, const TreeNode& t, uint16_t ch, uint16_t up_q, ChunkRef in, ChunkRef part,
                  ChunkRef out) {
  const std::vector<int>& down = t.children;
  const auto op = [&](OpKind k, uint16_t queue, int from, int to, ChunkRef src, ChunkRef dst) {
    Operation o = make_op(k, Engine::Cores, ch, queue);
    o.recv_peer = from;
    o.send_peer = to;
    o.src = src;
    o.dst = dst;
    return pb.add(o);
  };
  const ChunkRef none;
  if (t.parent == kNone) {  // the root: the sum into the output, then down
    if (down.empty()) throw UserError("a tree's root has no children");
    for (size_t k = 0; k + 1 < down.size(); ++k) op(OpKind::RecvReduceCopy, up_q, down[k], kNone, k ? none : in, out);
    const int total = op(OpKind::RecvReduceCopySend, up_q, down.back(), down[0], down.size() == 1 ? in : none, out);
    for (size_t k = 1; k < down.size(); ++k) op(OpKind::Send, up_q, kNone, down[k], out, none);
    return total;
  }
  // Reduce: the children's sums and its own input, up to the parent.
  if (down.empty()) op(OpKind::Send, up_q, kNone, t.parent, in, none);
  for (size_t k = 0; k + 1 < down.size(); ++k) op(OpKind::RecvReduceCopy, up_q, down[k], kNone, k ? none : in, part);
  if (!down.empty()) op(OpKind::RecvReduceSend, up_q, down.back(), t.parent, down.size() == 1 ? in : part, none);
  // Broadcast: the sum from the parent, down to the children.
  const uint16_t down_q = static_cast<uint16_t>(up_q + 1);
  if (down.empty()) return op(OpKind::Recv, down_q, t.parent, kNone, none, out);
  const int total = op(OpKind::RecvCopySend, down_q, t.parent, down[0], none, out);
  for (size_t k = 1; k < down.size(); ++k) op(OpKind::Send, down_q, kNone, down[k], out, none);
  return total;
}

// NCCL's double binary tree over the nodes on channel c (tree 0 on even
// channels, tree 1 on odd ones), node k's place in it.
TreeLinks node_tree(int nodes, int k, int c) { return c % 2 == 0 ? nccl_tree0(nodes, k) : nccl_tree1(nodes, k); }

}  // namespace

Program tree_program(int n, const std::vector<std::vector<TreeNode>>& trees) {
  const int channels = static_cast<int>(trees.size());
  if (n < 2) throw UserError("a tree needs at least 2 ranks");
  if (channels < 1 || 2 * channels > 65535) throw UserError("a tree needs between 1 and 32767 channels");
  const uint32_t C = static_cast<uint32_t>(channels);
  ProgramBuilder pb("tree", Collective::AllReduce, n, false);
  for (int r = 0; r < n; ++r) {
    pb.begin_rank(r, Buffers{C, C, C});
    for (int chan = 0; chan < channels; ++chan) {
      const uint16_t ch = static_cast<uint16_t>(chan);
      add_tree_rank(pb, trees[chan][r], ch, static_cast<uint16_t>(2 * chan), chunk(Buffer::Input, ch),
                    chunk(Buffer::Scratch, ch), chunk(Buffer::Output, ch));
    }
  }
  return pb.build();
}

Program cluster_tree_program(int nodes, int per_node, int channels) {
  if (nodes < 2 || per_node < 1) throw UserError("a cluster's trees need at least 2 nodes");
  if (channels < 1) throw UserError("a tree needs at least 1 channel");
  const int N = nodes, G = per_node;
  std::vector<std::vector<TreeNode>> trees(static_cast<size_t>(channels), std::vector<TreeNode>(N * G));
  for (int c = 0; c < channels; ++c) {
    const int first = (c / 2) % G;
    const auto gpu = [&](int node, int i) { return node * G + (first + i) % G; };
    std::vector<TreeNode>& t = trees[c];
    for (int k = 0; k < N; ++k) {
      // The chain: each GPU's parent is the one before it, its child the one after.
      for (int i = 1; i < G; ++i) {
        t[gpu(k, i)].parent = gpu(k, i - 1);
        t[gpu(k, i - 1)].children.push_back(gpu(k, i));
      }
      // The chain's first GPU joins its node to the tree over the nodes.
      const TreeLinks l = node_tree(N, k, c);
      if (l.parent != kNone) t[gpu(k, 0)].parent = gpu(l.parent, 0);
      for (int child : {l.child0, l.child1})
        if (child != kNone) t[gpu(k, 0)].children.push_back(gpu(child, 0));
    }
  }
  Program p = tree_program(N * G, trees);
  p.tree_nodes = N;
  return p;
}

namespace {

// NVLS inside each node around an all-reduce per rail across the nodes (on
// one node, none: the read's sum is the total). On
// channel c, GPU h of each node heads block h C + c of the message
// (`per_block` chunks from (h C + c) per_block, so that channel c touches
// the message's part c). On queue 2c it reads the block's node sum with one
// reducing read of the node's inputs (NVLS's multimem.ld_reduce; group k is
// node k's GPUs) into `sum(h, c)`; across(k, h, c, read) appends the rail's
// all-reduce of it, after that read, and returns the operation that writes
// the total into the head's output block; on queue 2c + 1 the head
// multicasts the total to its node (multimem.st). Every member lists every
// head's reads and multicasts in the same order, so the k-th of one meets
// the k-th of the others.
Program nvls_skeleton(const std::string& name, int N, int G, int C, bool multimem, uint16_t per_block,
                     uint32_t scratch, const std::function<ChunkRef(int, uint32_t)>& sum,
                     const std::function<int(ProgramBuilder&, int, int, uint32_t, int)>& across) {
  const uint32_t blocks = static_cast<uint32_t>(C) * static_cast<uint32_t>(G), chunks = blocks * per_block;
  ProgramBuilder pb(name, Collective::AllReduce, N * G, false);
  pb.program().multimem = multimem;
  for (int k = 0; k < N; ++k) {
    std::vector<int> node;
    for (int i = 0; i < G; ++i) node.push_back(k * G + i);
    pb.add_group(node);
  }
  const auto block = [&](int h, uint32_t c, Buffer b) {
    return chunk(b, (static_cast<uint32_t>(h) * static_cast<uint32_t>(C) + c) * per_block, per_block);
  };
  for (int k = 0; k < N; ++k)
    for (int h = 0; h < G; ++h) {
      pb.begin_rank(k * G + h, Buffers{chunks, chunks, scratch});
      for (uint32_t c = 0; c < static_cast<uint32_t>(C); ++c) {
        const uint16_t ch = static_cast<uint16_t>(c), read_q = static_cast<uint16_t>(2 * c), store_q = read_q + 1;
        const auto innet = [&](OpKind kind, uint16_t queue, ChunkRef src, ChunkRef dst) {
          Operation o = make_op(kind, Engine::Cores, ch, queue);
          o.group = k;
          o.src = src;
          o.dst = dst;
          return o;
        };
        int read = 0;
        for (int i = 0; i < G; ++i) {
          const ChunkRef to = i == h ? sum(h, c) : ChunkRef{};
          const int at = pb.add(innet(OpKind::ReduceRead, read_q, block(i, c, Buffer::Input), to));
          if (i == h) read = at;
        }
        const int total = across(pb, k, h, c, read);
        for (int i = 0; i < G; ++i)
          if (i == h) pb.add(innet(OpKind::MulticastWrite, store_q, block(h, c, Buffer::Output), ChunkRef{}),
                             {static_cast<uint32_t>(total)});
          else pb.add(innet(OpKind::MulticastWrite, store_q, ChunkRef{}, block(i, c, Buffer::Output)));
      }
    }
  return pb.build();
}

}  // namespace

Program nvls_tree_program(int nodes, int per_node, int channels, bool multimem) {
  if (nodes < 2 || per_node < 2) throw UserError("NVLSTree needs at least 2 nodes of at least 2 GPUs");
  if (channels < 1 || 2 * channels > 65535) throw UserError("NVLSTree needs between 1 and 32767 channels");
  const int N = nodes, G = per_node;
  const uint32_t C = static_cast<uint32_t>(channels);
  // The node's sum of block h C + c in scratch c (a partial between two children in C + c), all-reduced over
  // NCCL's double binary tree of the nodes by GPU h of each: its rail.
  const auto across = [&](ProgramBuilder& pb, int k, int h, uint32_t c, int) {
    const TreeLinks l = node_tree(N, k, static_cast<int>(c));
    TreeNode t;
    if (l.parent != kNone) t.parent = l.parent * G + h;
    for (int child : {l.child0, l.child1})
      if (child != kNone) t.children.push_back(child * G + h);
    return add_tree_rank(pb, t, static_cast<uint16_t>(c), static_cast<uint16_t>(2 * c), chunk(Buffer::Scratch, c),
                         chunk(Buffer::Scratch, C + c), chunk(Buffer::Output, static_cast<uint32_t>(h) * C + c));
  };
  Program p = nvls_skeleton("nvlstree", N, G, channels, multimem, 1, 2 * C,
                           [](int, uint32_t c) { return chunk(Buffer::Scratch, c); }, across);
  p.tree_nodes = N;
  return p;
}

Program nvls_ring_program(int nodes, int per_node, int channels, bool multimem) {
  if (nodes < 2 || per_node < 2) throw UserError("NVLS with rings across needs at least 2 nodes of at least 2 GPUs");
  if (channels < 1 || 3 * channels > 65535)
    throw UserError("NVLS with rings across needs between 1 and 21845 channels");
  const int N = nodes, G = per_node;
  const uint32_t C = static_cast<uint32_t>(channels), n = static_cast<uint32_t>(N);
  const Program rail = ring_program(Collective::AllReduce, N, 1, {}, true);
  const auto output = [&](int h, uint32_t c) {
    return chunk(Buffer::Output, (static_cast<uint32_t>(h) * C + c) * n, static_cast<uint16_t>(n));
  };
  // The node's sum of block h C + c, one chunk per rank of the ring of GPU h of every node, which
  // all-reduces it in place (channel C + c, queue 2C + c).
  const auto across = [&](ProgramBuilder& pb, int k, int h, uint32_t c, int read) {
    Placement pl;
    pl.part = &rail;
    for (int r = 0; r < N; ++r) pl.ranks.push_back(r * G + h);
    pl.channel = static_cast<uint16_t>(C + c);
    pl.queue = static_cast<uint16_t>(2 * C + c);
    pl.offset = output(h, c).index;
    pl.buffer = Buffer::Output;
    return static_cast<int>(append_part(pb, pl, k * G + h, {static_cast<uint32_t>(read)}).back());
  };
  return nvls_skeleton("nvlsring", N, G, channels, multimem, static_cast<uint16_t>(n), 0, output, across);
}

Program sharp_program(int n, int channels) {
  if (n < 2) throw UserError("SHARP needs at least 2 GPUs");
  if (channels < 1 || channels > 65535) throw UserError("SHARP needs between 1 and 65535 channels");
  const uint32_t C = static_cast<uint32_t>(channels);
  ProgramBuilder pb("sharp", Collective::AllReduce, n, false);
  std::vector<int> ranks(static_cast<size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  for (uint32_t c = 0; c < C; ++c) pb.add_group(ranks);
  for (int h = 0; h < n; ++h) {
    pb.begin_rank(h, Buffers{C, C, 0});
    for (uint32_t c = 0; c < C; ++c) {
      Operation copy = make_op(OpKind::Copy, Engine::Cores, static_cast<uint16_t>(c), static_cast<uint16_t>(c));
      copy.src = chunk(Buffer::Input, c);
      copy.dst = chunk(Buffer::Output, c);
      const uint32_t copied = static_cast<uint32_t>(pb.add(copy));
      Operation o = make_op(OpKind::ReduceWrite, Engine::Cores, static_cast<uint16_t>(c), static_cast<uint16_t>(c));
      o.group = static_cast<int>(c);
      o.src = o.dst = chunk(Buffer::Output, c);
      pb.add(o, {copied});
    }
  }
  return pb.build();
}

Program nvls_sharp_program(int nodes, int per_node, int channels, bool multimem) {
  if (nodes < 2 || per_node < 2) throw UserError("NVLS with SHARP needs at least 2 nodes of at least 2 GPUs");
  if (channels < 1 || 2 * channels > 65535) throw UserError("NVLS with SHARP needs between 1 and 32767 channels");
  const int N = nodes, G = per_node;
  const uint32_t C = static_cast<uint32_t>(channels);
  const auto total = [C](int h, uint32_t c) { return chunk(Buffer::Output, static_cast<uint32_t>(h) * C + c); };
  std::vector<int> rail(static_cast<size_t>(G) * C, -1);  // [h C + c]: the group of GPU h of every node on channel c
  const auto across = [&](ProgramBuilder& pb, int, int h, uint32_t c, int) {
    int& g = rail[static_cast<size_t>(h) * C + c];
    if (g < 0) {
      std::vector<int> members;
      for (int k = 0; k < N; ++k) members.push_back(k * G + h);
      g = pb.add_group(members);
    }
    Operation o = make_op(OpKind::ReduceWrite, Engine::Cores, static_cast<uint16_t>(c), static_cast<uint16_t>(2 * c));
    o.group = g;
    o.src = o.dst = total(h, c);
    return pb.add(o);
  };
  return nvls_skeleton("nvlssharp", N, G, channels, multimem, 1, 0, total, across);
}

Program nvls_program(Collective coll, int n, int channels, bool multimem) {
  if (n < 2) throw UserError("NVLS needs at least 2 GPUs");
  if (channels < 1 || 2 * channels > 65535) throw UserError("NVLS needs between 1 and 32767 channels");
  const uint32_t C = static_cast<uint32_t>(channels);
  // All-reduce, one node: the read's sum is the total, multicast at once.
  if (coll == Collective::AllReduce)
    return nvls_skeleton(
        "nvls", 1, n, channels, multimem, 1, 0,
        [C](int h, uint32_t c) { return chunk(Buffer::Output, static_cast<uint32_t>(h) * C + c); },
        [](ProgramBuilder&, int, int, uint32_t, int read) { return read; });
  if (coll != Collective::ReduceScatter && coll != Collective::AllGather)
    throw UserError(std::string("NVLS runs all-reduce, reduce-scatter and all-gather, not ") + collective_name(coll));
  // Reduce-scatter: rank h's read of its chunk of each channel; all-gather:
  // its copy of its input into its output, and its store of it to the others.
  const bool rs = coll == Collective::ReduceScatter;
  const uint32_t all = C * static_cast<uint32_t>(n);
  ProgramBuilder pb("nvls", coll, n, false);
  pb.program().multimem = multimem;
  std::vector<int> ranks(static_cast<size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  pb.add_group(ranks);
  for (int h = 0; h < n; ++h) {
    pb.begin_rank(h, rs ? Buffers{all, C, 0} : Buffers{C, all, 0});
    for (uint32_t c = 0; c < C; ++c) {
      const auto op = [&](OpKind kind, ChunkRef src, ChunkRef dst) {
        Operation o = make_op(kind, Engine::Cores, static_cast<uint16_t>(c), static_cast<uint16_t>(c));
        o.group = in_network(kind) ? 0 : kNone;
        o.src = src;
        o.dst = dst;
        return o;
      };
      if (!rs) pb.add(op(OpKind::Copy, chunk(Buffer::Input, c), chunk(Buffer::Output, static_cast<uint32_t>(h) * C + c)));
      for (int i = 0; i < n; ++i) {
        const uint32_t m = static_cast<uint32_t>(i) * C + c;
        if (rs) pb.add(op(OpKind::ReduceRead, chunk(Buffer::Input, m), i == h ? chunk(Buffer::Output, c) : ChunkRef{}));
        else pb.add(i == h ? op(OpKind::MulticastWrite, chunk(Buffer::Input, c), ChunkRef{})
                           : op(OpKind::MulticastWrite, ChunkRef{}, chunk(Buffer::Output, m)));
      }
    }
  }
  return pb.build();
}

uint64_t nvls_chunk_bytes(uint64_t bytes, uint64_t concurrent_ops, uint64_t step) {
  uint64_t chunk = std::min<uint64_t>(step, 128 * 1024);
  for (const auto& [times, floor] : {std::pair<uint64_t, uint64_t>{64, 64 * 1024}, {8, 32 * 1024}, {2, 16 * 1024}})
    if (bytes < times * concurrent_ops * chunk && chunk > floor) chunk = floor;
  return chunk;
}

uint64_t nvls_tree_chunk_bytes(uint64_t bytes, uint64_t concurrent_ops, uint64_t step, int nodes) {
  // NCCL 2.23+ (src/transport/nvls.cc, ncclNvlsTuning; src/enqueue.cc): NCCL_NVLS_CHUNKSIZE (128 KiB), at most
  // NCCL_NVLSTREE_MAX_CHUNKSIZE, whose default is 64 KiB from 4 nodes on (NCCL 2.19 set 64 KiB there too).
  const uint64_t nvls_chunk = 128 * 1024, tree_max = nodes >= 4 ? 64 * 1024 : nvls_chunk;
  uint64_t chunk = std::min({step, nvls_chunk, tree_max});
  for (const auto& [times, floor] : {std::pair<uint64_t, uint64_t>{32, 256 * 1024}, {16, 128 * 1024}, {4, 64 * 1024},
                                     {1, 32 * 1024}})
    if (bytes < times * concurrent_ops * chunk && chunk > floor) chunk = floor;
  return chunk;
}

uint64_t tree_chunk_bytes(Protocol p, uint64_t bytes, int channels, int ranks, int nodes, uint64_t step) {
  int log2_nodes = 0;  // NCCL's log2i
  while ((2 << log2_nodes) <= nodes) ++log2_nodes;
  const double ppn = static_cast<double>(ranks) / nodes;
  const uint64_t per = static_cast<uint64_t>(channels);
  // Whole chunks per channel against NCCL's (possibly fractional) target.
  const auto halve = [&](uint64_t& chunk, double chunks, uint64_t floor) {
    while (static_cast<double>(bytes / (per * chunk)) < chunks && chunk > floor) chunk /= 2;
  };
  if (p == Protocol::Simple) {
    const double depth = ranks / nodes - 1 + log2_nodes;  // NCCL's approximation (connectTrees)
    uint64_t chunk = step;
    halve(chunk, depth * 8, 128 * 1024);
    halve(chunk, depth * 4, 64 * 1024);
    halve(chunk, depth, 32 * 1024);
    return chunk;
  }
  if (p == Protocol::LL128) {
    const double steps = 1 + log2_nodes + 0.1 * ppn;
    uint64_t wire = step / 120 * 128;  // the rule counts the buffer's bytes, 128 for every 120 of data
    halve(wire, steps * 64 / ppn, 131072);
    halve(wire, steps * 16 / ppn, 32768);
    return wire / 128 * 120;
  }
  return step;
}

Program netreduce_program(int n) {
  if (n < 2) throw UserError("NetReduce needs at least 2 ranks");
  ProgramBuilder pb("netreduce", Collective::AllReduce, n, true);
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  const int group = pb.add_group(all);
  for (int r = 0; r < n; ++r) {
    pb.begin_rank(r, in_place_buffers(1));
    Operation o = make_op(OpKind::Aggregate, Engine::RoceNic, 0, 0);
    o.group = group;
    o.src = o.dst = chunk(Buffer::Input, 0);
    pb.add(o);
  }
  return pb.build();
}

Program roce_ring_program(int n) {
  const Program ring = ring_program(Collective::AllReduce, n, 1, {}, true);
  Placement pl;
  pl.part = &ring;
  pl.ranks.resize(n);
  std::iota(pl.ranks.begin(), pl.ranks.end(), 0);
  pl.engine = Engine::RoceNic;
  ProgramBuilder pb("ring", Collective::AllReduce, n, true);
  for (int r = 0; r < n; ++r) {
    pb.begin_rank(r, ring.buffers[r]);
    append_part(pb, pl, r, {});
  }
  return pb.build();
}

namespace {
// The ring inside machine m of a machines x per_machine layout, on channel 1.
Placement machine_ring(const Program& ring, int m, int per_machine, uint32_t scale) {
  Placement pl;
  pl.part = &ring;
  for (int i = 0; i < per_machine; ++i) pl.ranks.push_back(m * per_machine + i);
  pl.channel = 1;
  pl.scale = scale;
  pl.engine = Engine::RoceNic;
  return pl;
}

void check_machines(const char* what, int machines, int per_machine) {
  if (machines < 2 || per_machine < 2)
    throw UserError(std::string(what) + " needs at least 2 machines of at least 2 GPUs");
}
}  // namespace

Program parallel_netreduce_program(int machines, int per_machine) {
  check_machines("Parallel NetReduce", machines, per_machine);
  const int R = machines, H = per_machine;
  const Program ring = ring_program(Collective::AllReduce, H, 1, {}, true);
  ProgramBuilder pb("pnetreduce", Collective::AllReduce, R * H, true);
  for (int i = 0; i < H; ++i) {  // group i: GPU i of every machine, its NetReduce ring (§3.4)
    std::vector<int> g;
    for (int m = 0; m < R; ++m) g.push_back(m * H + i);
    pb.add_group(std::move(g));
  }
  for (int m = 0; m < R; ++m) {
    const Placement pl = machine_ring(ring, m, H, 1);
    for (int i = 0; i < H; ++i) {
      pb.begin_rank(m * H + i, ring.buffers[i]);
      uint16_t gathers = 0;  // the all-gather's receives after the split
      for (int k = 0; k < ring.op_count(i); ++k) {
        Operation o = place(pl, ring.op(i, k));
        if (o.kind != OpKind::RecvReduceCopySend) {
          // Once this GPU's block waits for the machines' sum, the others'
          // blocks overtake it around the ring: each is forwarded as it
          // comes, on a queue of its own.
          if (gathers) o.queue = static_cast<uint16_t>(2 + gathers++);
          pb.add(o);
          continue;
        }
        gathers = 1;
        // The reduce-scatter completes this GPU's block: sum it across the
        // machines before the all-gather sends it on.
        const int peer = o.send_peer;
        o.kind = OpKind::RecvReduceCopy;
        o.send_peer = kNone;
        const uint32_t rrc = static_cast<uint32_t>(pb.add(o));
        Operation a = make_op(OpKind::Aggregate, Engine::RoceNic, 2, 1);
        a.group = i;
        a.src = a.dst = o.dst;
        const uint32_t agg = static_cast<uint32_t>(pb.add(a, {rrc}));
        Operation s = make_op(OpKind::Send, Engine::RoceNic, o.channel, 2);
        s.send_peer = peer;
        s.src = o.dst;
        pb.add(s, {agg});
      }
    }
  }
  return pb.build();
}

Program tencent_program(int machines, int per_machine) {
  check_machines("Tencent's all-reduce", machines, per_machine);
  const int R = machines, H = per_machine;
  // A chunk per machine of the masters' ring and per GPU of a machine's:
  // lcm(R, H) chunks (by hand: g++ 12's std::lcm gave -2 for lcm(2, 2) at -O2).
  uint32_t a = static_cast<uint32_t>(R), b = static_cast<uint32_t>(H);
  while (b) a = std::exchange(b, a % b);
  const uint32_t chunks = static_cast<uint32_t>(R) / a * static_cast<uint32_t>(H);
  const Program intra = ring_program(Collective::AllReduce, H, 1, {}, true);
  const Program masters = ring_program(Collective::AllReduce, R, 1, {}, true);
  const Program chain = ring_program(Collective::Broadcast, H, 1, {}, true, 0);
  Placement among;
  among.part = &masters;
  for (int m = 0; m < R; ++m) among.ranks.push_back(m * H);
  among.channel = 2;
  among.queue = 1;
  among.scale = chunks / R;
  among.engine = Engine::RoceNic;
  ProgramBuilder pb("tencent", Collective::AllReduce, R * H, true);
  for (int m = 0; m < R; ++m) {
    const Placement in_machine = machine_ring(intra, m, H, chunks / H), down = machine_ring(chain, m, H, chunks);
    for (int i = 0; i < H; ++i) {
      const int r = m * H + i;
      pb.begin_rank(r, in_place_buffers(chunks));
      std::vector<uint32_t> last = {append_part(pb, in_machine, r, {}).back()};
      if (i == 0) last = {append_part(pb, among, r, last).back()};
      // GPU 0 broadcasts once the machines' sum is in; the others forward it
      // after their ring (the chain follows it on the same queue).
      append_part(pb, down, r, i == 0 ? last : std::vector<uint32_t>{});
    }
  }
  return pb.build();
}

}  // namespace incsim::collectives
