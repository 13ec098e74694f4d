// NCCL's point-to-point collectives as programs on the GPUs' cores:
// nccl-tests' alltoall, gather and scatter, grouped sends and receives; and
// its symmetric kernels, every GPU storing into every peer's buffer.
#include <string>
#include <vector>

#include "collectives/program_synthesis.h"
#include "core/error.h"

namespace incsim::collectives {

Program alltoall_program(int n, int channels) {
  if (n < 2) throw UserError("an alltoall needs at least 2 ranks");
  if (channels < 1 || channels > 32767) throw UserError("an alltoall needs between 1 and 32767 channels");
  const uint32_t ch_n = static_cast<uint32_t>(channels), un = static_cast<uint32_t>(n);
  ProgramBuilder pb("p2p", Collective::AllToAll, n);
  for (int r = 0; r < n; ++r) {
    pb.begin_rank(r, Buffers{un * ch_n, un * ch_n, 0});
    const auto block = [&](int rank, int chan) { return static_cast<uint32_t>(rank) * ch_n + static_cast<uint32_t>(chan); };
    for (int chan = 0; chan < channels; ++chan) {
      const uint16_t ch = static_cast<uint16_t>(chan);
      const auto queue = [&](int i, int dir) { return static_cast<uint16_t>(2 * (chan * (n - 1) + i) + dir); };
      Operation copy = make_op(OpKind::Copy, Engine::Cores, ch, queue(0, 0));
      copy.src = chunk(Buffer::Input, block(r, chan));
      copy.dst = chunk(Buffer::Output, block(r, chan));
      pb.add(copy);
      // Round k: to rank + k, from rank - k (NCCL's p2p schedule); channel c
      // starts at round c + 1, as NCCL spreads the rounds over its channels.
      for (int i = 0; i < n - 1; ++i) {
        const int k = (chan + i) % (n - 1) + 1;
        const int to = (r + k) % n, from = (r - k + n) % n;
        Operation send = make_op(OpKind::Send, Engine::Cores, ch, queue(i, 0));
        send.send_peer = to;
        send.src = chunk(Buffer::Input, block(to, chan));
        pb.add(send);
        Operation recv = make_op(OpKind::Recv, Engine::Cores, ch, queue(i, 1));
        recv.recv_peer = from;
        recv.dst = chunk(Buffer::Output, block(from, chan));
        pb.add(recv);
      }
    }
  }
  return pb.build();
}

namespace {
void check_symmetric(int n, int channels) {
  if (n < 2) throw UserError("a symmetric kernel needs at least 2 ranks");
  // Two queues per peer and channel, numbered below 2^16.
  if (channels < 1 || channels > 32767 / n) throw UserError("a symmetric kernel on " + std::to_string(n) +
                                                            " ranks needs between 1 and " + std::to_string(32767 / n) +
                                                            " channels");
}

// A symmetric kernel's operations of one rank on one channel: queue
// 2(cn + k - 1) sends to rank + k, the next receives from rank - k (each
// peer's data into scratch chunk (k - 1)C + c, as NCCL's threads load or
// poll every peer at once), queue 2cn + 2(n - 1) adds.
struct SymmetricOps {
  SymmetricOps(ProgramBuilder& pb, Protocol p, int n, int r, int chan, int channels)
      : pb(pb), proto(p), n(n), r(r), chan(chan), C(static_cast<uint32_t>(channels)), ch(static_cast<uint16_t>(chan)) {}
  Operation op(OpKind kind, int k, int dir) const {
    Operation o = make_op(kind, Engine::Cores, ch, static_cast<uint16_t>(2 * (chan * n + k - 1) + dir));
    o.proto = proto;
    return o;
  }
  uint32_t send(int k, ChunkRef src, const std::vector<uint32_t>& deps = {}) const {
    Operation o = op(OpKind::Send, k, 0);
    o.send_peer = (r + k) % n;
    o.src = src;
    return static_cast<uint32_t>(pb.add(o, deps));
  }
  uint32_t recv(int k, ChunkRef dst) const {
    Operation o = op(OpKind::Recv, k, 1);
    o.recv_peer = (r - k + n) % n;
    o.dst = dst;
    return static_cast<uint32_t>(pb.add(o));
  }
  // A local copy on the adding queue.
  uint32_t copy(ChunkRef src, ChunkRef dst) const {
    Operation o = op(OpKind::Copy, n, 0);
    o.src = src;
    o.dst = dst;
    return static_cast<uint32_t>(pb.add(o));
  }
  // Every peer's data received into scratch, then `dst` = `own` + each,
  // rank - 1's first: the last addition's index.
  uint32_t add_all(ChunkRef own, ChunkRef dst) const {
    std::vector<uint32_t> received;
    for (int k = 1; k < n; ++k) received.push_back(recv(k, landing(k)));
    uint32_t last = copy(own, dst);
    for (int k = 1; k < n; ++k) {
      Operation add = op(OpKind::Reduce, n, 0);
      add.src = landing(k);
      add.dst = dst;
      last = static_cast<uint32_t>(pb.add(add, {received[static_cast<size_t>(k - 1)]}));
    }
    return last;
  }
  ChunkRef landing(int k) const { return chunk(Buffer::Scratch, static_cast<uint32_t>(k - 1) * C + ch); }

  ProgramBuilder& pb;
  Protocol proto;
  int n, r, chan;
  uint32_t C;  // channels
  uint16_t ch;
};
}  // namespace

Program oneshot_allreduce_program(int n, int channels, Protocol p) {
  check_symmetric(n, channels);
  const uint32_t ch_n = static_cast<uint32_t>(channels), un = static_cast<uint32_t>(n);
  ProgramBuilder pb("oneshot", Collective::AllReduce, n);
  for (int r = 0; r < n; ++r) {
    pb.begin_rank(r, Buffers{ch_n, ch_n, (un - 1) * ch_n});
    for (int chan = 0; chan < channels; ++chan) {
      const SymmetricOps ops(pb, p, n, r, chan, channels);
      for (int k = 1; k < n; ++k) ops.send(k, chunk(Buffer::Input, ops.ch));
      ops.add_all(chunk(Buffer::Input, ops.ch), chunk(Buffer::Output, ops.ch));
    }
  }
  return pb.build();
}

Program direct_program(Collective c, int n, int channels, Protocol p) {
  check_symmetric(n, channels);
  if (c != Collective::AllReduce && c != Collective::ReduceScatter && c != Collective::AllGather)
    throw UserError(std::string("a direct program runs all-reduce, reduce-scatter and all-gather, not ") +
                    collective_name(c));
  const bool scatter = c != Collective::AllGather, gather = c != Collective::ReduceScatter;
  const uint32_t ch_n = static_cast<uint32_t>(channels), un = static_cast<uint32_t>(n);
  ProgramBuilder pb("direct", c, n);
  for (int r = 0; r < n; ++r) {
    pb.begin_rank(r, Buffers{scatter ? un * ch_n : ch_n, gather ? un * ch_n : ch_n, scatter ? (un - 1) * ch_n : 0});
    for (int chan = 0; chan < channels; ++chan) {
      const SymmetricOps ops(pb, p, n, r, chan, channels);
      // Rank j's block of this channel in a buffer of n blocks.
      const auto block = [&](Buffer buf, int j) { return chunk(buf, static_cast<uint32_t>(j) * ch_n + ops.ch); };
      // This rank's sum (reduce-scatter, all-reduce) or its own block (all-gather).
      const ChunkRef mine = !scatter ? chunk(Buffer::Input, ops.ch)
                            : gather ? block(Buffer::Output, r)
                                     : chunk(Buffer::Output, ops.ch);
      std::vector<uint32_t> after;
      if (scatter) {
        for (int k = 1; k < n; ++k) ops.send(k, block(Buffer::Input, (r + k) % n));
        after.push_back(ops.add_all(block(Buffer::Input, r), mine));
      }
      if (!gather) continue;
      if (!scatter) ops.copy(mine, block(Buffer::Output, r));
      for (int k = 1; k < n; ++k) ops.send(k, mine, after);
      for (int k = 1; k < n; ++k) ops.recv(k, block(Buffer::Output, (r - k + n) % n));
    }
  }
  return pb.build();
}

Program gather_scatter_program(Collective c, int n, int channels, int root, bool in_place) {
  if (c != Collective::Gather && c != Collective::Scatter) throw UserError("gather_scatter_program: not a gather or scatter");
  if (n < 2) throw UserError(std::string("a ") + collective_name(c) + " needs at least 2 ranks");
  if (channels < 1 || channels > 65535 / n) throw UserError(std::string("a ") + collective_name(c) +
                                                            " on " + std::to_string(n) + " ranks needs between 1 and " +
                                                            std::to_string(65535 / n) + " channels");
  if (root < 0 || root >= n) throw UserError(std::string("the ") + collective_name(c) + " root is not a rank");
  const bool gather = c == Collective::Gather;
  const uint32_t ch_n = static_cast<uint32_t>(channels), un = static_cast<uint32_t>(n);
  ProgramBuilder pb(std::string("p2p"), c, n, in_place);
  pb.program().root = root;
  // The root's window of rank j on channel chan; the rank's own block.
  const auto window = [&](int j, int chan) { return static_cast<uint32_t>(j) * ch_n + static_cast<uint32_t>(chan); };
  const Buffer whole = gather ? Buffer::Output : Buffer::Input, own = gather ? Buffer::Input : Buffer::Output;
  for (int r = 0; r < n; ++r) {
    pb.begin_rank(r, gather ? Buffers{ch_n, un * ch_n, 0} : Buffers{un * ch_n, ch_n, 0});
    for (int chan = 0; chan < channels; ++chan) {
      const uint16_t ch = static_cast<uint16_t>(chan);
      if (r != root) {
        Operation o = make_op(gather ? OpKind::Send : OpKind::Recv, Engine::Cores, ch, ch);
        (gather ? o.send_peer : o.recv_peer) = root;
        (gather ? o.src : o.dst) = chunk(own, ch);
        pb.add(o);
        continue;
      }
      for (int j = 0; j < n; ++j) {
        const uint16_t q = static_cast<uint16_t>(chan * n + j);
        if (j == root) {
          if (in_place) continue;
          Operation copy = make_op(OpKind::Copy, Engine::Cores, ch, q);
          copy.src = gather ? chunk(own, ch) : chunk(whole, window(j, chan));
          copy.dst = gather ? chunk(whole, window(j, chan)) : chunk(own, ch);
          pb.add(copy);
          continue;
        }
        Operation o = make_op(gather ? OpKind::Recv : OpKind::Send, Engine::Cores, ch, q);
        (gather ? o.recv_peer : o.send_peer) = j;
        (gather ? o.dst : o.src) = chunk(whole, window(j, chan));
        pb.add(o);
      }
    }
  }
  return pb.build();
}

}  // namespace incsim::collectives
