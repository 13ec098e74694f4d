#include "collectives/baselines.h"

#include <algorithm>
#include <functional>

#include "collectives/composition.h"
#include "collectives/program_synthesis.h"
#include "collectives/table_program.h"
#include "core/error.h"

namespace incsim::collectives {

namespace {

void need_nodes(int n, const char* what) {
  if (n < 2) throw UserError(std::string(what) + " needs at least 2 nodes");
}

int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

Program nic_ring_program(int n, const std::vector<int>& order_in) {
  need_nodes(n, "ring all-reduce");
  std::vector<int> order = order_in;
  if (order.empty())
    for (int i = 0; i < n; ++i) order.push_back(i);
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < n; ++i)
    if (static_cast<int>(sorted.size()) != n || sorted[i] != i) throw UserError("a ring order must list every node once");
  // ring_program's rank i sends its block i first and completes block i + 1;
  // run by node order[i + 1], flow i ends reduced at order[i], where NCCL's
  // rank completes its own block.
  std::vector<int> node_of(n);
  for (int i = 0; i < n; ++i) node_of[i] = order[mod(i + 1, n)];
  return relabel(ring_table_program(ring_program(Collective::AllReduce, n, 1, {}, true)), node_of);
}

Program ring_table_program(const Program& ring) {
  if (ring.collective != Collective::AllReduce)
    throw UserError(std::string("a NIC ring runs an all-reduce, not a ") + collective_name(ring.collective));
  ProgramBuilder pb(ring.name, Collective::AllReduce, ring.ranks, true);
  for (int r = 0; r < ring.ranks; ++r) {
    const uint32_t chunks = ring.buffers[r].output;
    pb.begin_rank(r, Buffers{chunks, chunks, 0});
    for (int k = 0; k < ring.op_count(r); ++k) {
      const Operation& o = ring.op(r, k);
      const auto which = [&] { return "rank " + std::to_string(r) + "'s operation " + std::to_string(k); };
      if (o.channel != ring.ops[0].channel)
        throw UserError("a NIC ring runs on one channel, and " + which() + " is on another");
      const bool reduces = o.kind == OpKind::RecvReduceSend || o.kind == OpKind::RecvReduceCopySend;
      if (!reduces && o.kind != OpKind::Send && o.kind != OpKind::RecvCopySend && o.kind != OpKind::Recv)
        throw UserError("a NIC ring sends, receive-reduce-sends, receive-reduce-copy-sends, receive-copy-sends and "
                        "receives, and " + which() + " is a " + op_name(o.kind));
      if (k == 0 && receives(o.kind)) throw UserError("a NIC ring starts with a send, and " + which() + " receives");
      if (o.src.empty() && o.dst.empty())
        throw UserError("a NIC ring moves a chunk in every step, and " + which() + " names none");
      if (!o.src.empty() && !o.dst.empty() && o.src.index != o.dst.index)
        throw UserError("a NIC ring reduces each chunk in place, and " + which() +
                        " reads one chunk and writes another");
      // Each chunk is a flow of its own, on a channel of its own.
      const ChunkRef& moved = o.src.empty() ? o.dst : o.src;
      const ChunkRef c = chunk(Buffer::Output, moved.index, moved.count);
      Operation t;
      t.engine = Engine::NicTable;
      t.channel = static_cast<uint16_t>(c.index);
      if (receives(o.kind)) {
        Operation in = t;
        in.kind = reduces ? OpKind::RecvReduceCopy : OpKind::Recv;
        in.recv_peer = o.recv_peer;
        in.dst = c;
        in.timestep = static_cast<uint16_t>(k);
        pb.add(in);
      }
      if (sends(o.kind)) {
        Operation out = t;
        out.kind = OpKind::Send;
        out.send_peer = o.send_peer;
        out.src = c;
        out.timestep = static_cast<uint16_t>(k + 1);
        pb.add(out);
      }
    }
  }
  return pb.build();
}

TreeLinks nccl_tree0(int n, int rank) {
  TreeLinks l;
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  if (rank == 0) {
    if (n > 1) l.child1 = bit >> 1;
    return l;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  l.parent = up;
  int low = bit >> 1;
  if (low) {
    l.child0 = rank - low;
    int d1 = rank + low;
    while (low && d1 >= n) {
      low >>= 1;
      d1 = rank + low;
    }
    if (low) l.child1 = d1;
  }
  return l;
}

TreeLinks nccl_tree1(int n, int rank) {
  auto map = [](int x, auto f) { return x == kNone ? kNone : f(x); };
  TreeLinks l;
  if (n % 2 == 1) {  // shifted
    TreeLinks s = nccl_tree0(n, mod(rank - 1, n));
    auto f = [n](int x) { return (x + 1) % n; };
    l = {map(s.parent, f), map(s.child0, f), map(s.child1, f)};
  } else {  // mirrored
    TreeLinks s = nccl_tree0(n, n - 1 - rank);
    auto f = [n](int x) { return n - 1 - x; };
    l = {map(s.parent, f), map(s.child0, f), map(s.child1, f)};
  }
  return l;
}

Program dbtree_program(int n, int pieces, bool nops, bool interleave) {
  need_nodes(n, "double binary tree all-reduce");
  if (pieces < 1 || pieces > 1024) throw UserError("a double binary tree cuts each half into 1 to 1024 pieces");
  TableProgramBuilder b(interleave ? "dbtree" : "dbtree-flat", n, 2 * pieces);
  for (int j = 0; j < 2; ++j) {
    std::vector<int> parent(n, kNone);
    std::vector<std::vector<int>> children(n);
    int root = kNone;
    for (int r = 0; r < n; ++r) {
      TreeLinks l = j == 0 ? nccl_tree0(n, r) : nccl_tree1(n, r);
      parent[r] = l.parent;
      if (l.parent == kNone) root = r;
    }
    for (int r = 0; r < n; ++r)
      if (parent[r] != kNone) children[parent[r]].push_back(r);
    auto step = [&](int logical) { return interleave ? 2 * logical - 1 + j : logical; };
    // Reduce: a node sends a piece one step after its last child sent it
    // (leaves send piece c in step 1 + c).
    std::vector<int> up(n, 0);
    std::function<int(int)> height = [&](int r) {
      int h = 0;
      for (int c : children[r]) h = std::max(h, height(c));
      return up[r] = h + 1;
    };
    const int H = height(root) - 1;  // the root's last child sends piece 0 in step H
    // Broadcast: the root sends piece c in step H + 1 + c, each node the step
    // after it received it.
    std::function<void(int, int, int)> down = [&](int flow, int r, int s) {
      for (int c : children[r]) b.gather(flow, r, c, step(s));
      for (int c : children[r]) down(flow, c, s + 1);
    };
    for (int c = 0; c < pieces; ++c) {
      const int flow = j * pieces + c;
      for (int r = 0; r < n; ++r)
        if (parent[r] != kNone) b.reduce(flow, r, parent[r], step(up[r] + c));
      down(flow, root, H + 1 + c);
    }
  }
  return b.build(nops);
}

Program ring2d_program(int kx, int ky, bool nops) {
  if (kx < 1 || ky < 1 || kx * ky < 2) throw UserError("a 2D ring needs a grid of at least 2 nodes");
  const int n = kx * ky;
  const int k[2] = {kx, ky};
  TableProgramBuilder b("ring2d", n, 4 * n);
  // Quarter g: first dimension d1 (0: rows, 1: columns), direction dir on
  // both. Its chunk (block, piece) = flow 4 (piece*k[d1] + block) + g: block
  // i ends reduced at coordinate i of d1, its piece j at coordinate j of d2.
  // A node's table takes a step's messages by flow: numbered so, it takes
  // the quarters in turn, piece by piece: where interfaces are handed out
  // first come first served (nic.interface_choice=first-free), messages
  // issued at once go out on all four links, not four of them on one.
  struct Quarter {
    int d1, dir;
  };
  const Quarter quarters[4] = {{0, 1}, {0, -1}, {1, 1}, {1, -1}};  // east, west, south, north
  for (int g = 0; g < 4; ++g) {
    const int d1 = quarters[g].d1, d2 = 1 - d1, dir = quarters[g].dir;
    const int k1 = k[d1], k2 = k[d2];
    auto flow = [&](int block, int piece) { return 4 * (piece * k1 + block) + g; };
    for (int u = 0; u < n; ++u) {
      const int c[2] = {u % kx, u / kx};
      auto next = [&](int d) {  // the neighbour one step along d in dir
        int m[2] = {c[0], c[1]};
        m[d] = mod(m[d] + dir, k[d]);
        return m[1] * kx + m[0];
      };
      int base = 0;
      for (int s = 1; s < k1; ++s)  // reduce-scatter along d1: block i ends at coordinate i
        for (int j = 0; j < k2; ++j) b.reduce(flow(mod(c[d1] - dir * s, k1), j), u, next(d1), base + s);
      base += k1 - 1;
      for (int s = 1; s < k2; ++s)  // reduce-scatter of the own block along d2
        b.reduce(flow(c[d1], mod(c[d2] - dir * s, k2)), u, next(d2), base + s);
      base += k2 - 1;
      for (int s = 1; s < k2; ++s)  // all-gather along d2
        b.gather(flow(c[d1], mod(c[d2] - dir * (s - 1), k2)), u, next(d2), base + s);
      base += k2 - 1;
      for (int s = 1; s < k1; ++s)  // all-gather along d1
        for (int j = 0; j < k2; ++j) b.gather(flow(mod(c[d1] - dir * (s - 1), k1), j), u, next(d1), base + s);
    }
  }
  return b.build(nops);
}

Program ring2d_hier_program(int kx, int ky, bool nops) {
  if (kx < 1 || ky < 1 || kx * ky < 2) throw UserError("a 2D ring needs a grid of at least 2 nodes");
  const int n = kx * ky;
  auto node = [kx](int x, int y) { return y * kx + x; };
  TableProgramBuilder b("ring2d-hier", n, n);
  // Chunk c = block (c / ky) of the row phase, piece (c % ky) of the column phase.
  int base = 0;
  for (int s = 1; s <= kx - 1; ++s)  // row reduce-scatter: block x ends at column x
    for (int y = 0; y < ky; ++y)
      for (int x = 0; x < kx; ++x)
        for (int j = 0; j < ky; ++j)
          b.reduce(mod(x - s, kx) * ky + j, node(x, y), node(mod(x + 1, kx), y), base + s);
  base += kx - 1;
  for (int s = 1; s <= ky - 1; ++s)  // column reduce-scatter: piece y ends at row y
    for (int x = 0; x < kx; ++x)
      for (int y = 0; y < ky; ++y) b.reduce(x * ky + mod(y - s, ky), node(x, y), node(x, mod(y + 1, ky)), base + s);
  base += ky - 1;
  for (int s = 1; s <= ky - 1; ++s)  // column all-gather
    for (int x = 0; x < kx; ++x)
      for (int y = 0; y < ky; ++y)
        b.gather(x * ky + mod(y - s + 1, ky), node(x, y), node(x, mod(y + 1, ky)), base + s);
  base += ky - 1;
  for (int s = 1; s <= kx - 1; ++s)  // row all-gather
    for (int y = 0; y < ky; ++y)
      for (int x = 0; x < kx; ++x)
        for (int j = 0; j < ky; ++j)
          b.gather(mod(x - s + 1, kx) * ky + j, node(x, y), node(mod(x + 1, kx), y), base + s);
  return b.build(nops);
}

Program hd_program(int n, bool nops) {
  need_nodes(n, "halving-doubling all-reduce");
  int p = 1, m = 0;
  while (p * 2 <= n) {
    p *= 2;
    ++m;
  }
  const int r = n - p, pre = r > 0 ? 1 : 0;
  // Participant v in [0, p) is real rank 2v + 1 for v < r, else v + r.
  auto real = [r](int v) { return v < r ? 2 * v + 1 : v + r; };
  TableProgramBuilder b("hd", n, p);
  for (int i = 0; i < r; ++i)
    for (int c = 0; c < p; ++c) b.reduce(c, 2 * i, 2 * i + 1, 1);
  // Recursive halving: in step k (distance d = p >> (k + 1)) v keeps the half
  // whose bit d matches its own and sends the other half to v ^ d; chunk c
  // leaves v at the first distance where their bits differ and ends at v = c.
  for (int k = 0; k < m; ++k) {
    const int d = p >> (k + 1);
    for (int v = 0; v < p; ++v)
      for (int c = 0; c < p; ++c) {
        const int high = ~((d << 1) - 1);  // bits above d: equal while v still holds c
        if ((c & high) == (v & high) && (c & d) != (v & d)) b.reduce(c, real(v), real(v ^ d), pre + k + 1);
      }
  }
  // Recursive doubling: in step k (distance 2^k) v sends every chunk it holds,
  // those equal to v in the bits from k up, to v ^ 2^k.
  for (int k = 0; k < m; ++k)
    for (int v = 0; v < p; ++v)
      for (int c = 0; c < p; ++c)
        if ((c >> k) == (v >> k)) b.gather(c, real(v), real(v ^ (1 << k)), pre + m + k + 1);
  for (int i = 0; i < r; ++i)
    for (int c = 0; c < p; ++c) b.gather(c, 2 * i + 1, 2 * i, pre + 2 * m + 1);
  return b.build(nops);
}

Program hdrm_program(int per_switch, int switches, bool nops) {
  auto log2_exact = [](int v) {
    int b = 0;
    while ((1 << b) < v) ++b;
    return v >= 1 && (1 << b) == v ? b : -1;
  };
  const int half = switches / 2, p = log2_exact(per_switch), b = log2_exact(half);
  if (p < 0 || b < 1 || switches % 2 != 0 || p > b)
    throw UserError("hdrm needs a power of two of nodes per switch, at most half the switches, also a power of two "
                    "(4x8, 4x16), not " + std::to_string(per_switch) + "x" + std::to_string(switches));
  const int n = per_switch * switches;
  std::vector<int> node_of(n);
  for (int rank = 0; rank < n; ++rank) {
    const int x = rank & ((1 << (p + b)) - 1);
    if (__builtin_popcount(static_cast<unsigned>(rank)) % 2 == 0) {
      node_of[rank] = (x & (half - 1)) * per_switch + (x >> b);  // upper switch: x's low bits
    } else {
      node_of[rank] = (half + (x >> p)) * per_switch + (x & (per_switch - 1));  // lower switch: x's high bits
    }
  }
  Program mapped = relabel(hd_program(n, nops), node_of);
  mapped.name = "hdrm";
  return mapped;
}

}  // namespace incsim::collectives
