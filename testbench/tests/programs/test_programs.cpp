// Collectives as programs (plain C++, docs/programs.md): ring synthesis and
// MultiTree's schedule tables checked symbolically, the text format's round
// trip and its errors, MSCCL's XML read and refused, and every refusal
// sentence of the checker.
#include <catch2/catch.hpp>

#include <filesystem>

#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <vector>

#include "collectives/baselines.h"
#include "collectives/blink_synthesis.h"
#include "collectives/bounds.h"
#include "collectives/composition.h"
#include "collectives/layout.h"
#include "collectives/msccl_xml.h"
#include "collectives/multitree.h"
#include "collectives/program.h"
#include "collectives/program_check.h"
#include "collectives/program_synthesis.h"
#include "collectives/schedule.h"
#include "collectives/tree_shares.h"
#include "core/error.h"
#include "topology/dgx1.h"
#include "temp_file.h"
#include "topology/direct_networks.h"

using namespace incsim;
using namespace incsim::collectives;

namespace {

const std::string kAllPairs = std::string(TEST_DATA) + "/allpairs_allreduce_4.xml";
const std::string kAllToAll = std::string(TEST_DATA) + "/alltoall_pairs_3.xml";

void require_ok(const Program& p) {
  const ProgramCheck c = check_program(p);
  INFO(p.name << " " << collective_name(p.collective) << " on " << p.ranks << " ranks:\n" << c.report());
  REQUIRE(c.ok());
}

// The first problem the checker reports.
std::string first_problem(const Program& p) {
  const ProgramCheck c = check_program(p);
  REQUIRE_FALSE(c.ok());
  return c.problems.front();
}

std::string refusal(const std::string& xml) {
  try {
    read_msccl_xml(xml, "bad.xml");
  } catch (const UserError& e) {
    return e.what();
  }
  FAIL("the XML was accepted");
  return {};
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

Operation op(OpKind k, int to, int from, ChunkRef src, ChunkRef dst, uint16_t queue = 0) {
  Operation o;
  o.kind = k;
  o.send_peer = to;
  o.recv_peer = from;
  o.src = src;
  o.dst = dst;
  o.queue = queue;
  return o;
}

// Two ranks: each sends its input chunk to the other, which reduces it into
// its own: a correct all-reduce of one chunk, to break in the tests.
Program pair_allreduce(bool in_place = true) {
  ProgramBuilder b("pair", Collective::AllReduce, 2, in_place);
  for (int r = 0; r < 2; ++r) {
    b.begin_rank(r, Buffers{1, in_place ? 0u : 1u, 0});
    b.add(op(OpKind::Send, 1 - r, kNone, chunk(Buffer::Input, 0), {}));
    b.add(op(OpKind::RecvReduceCopy, kNone, 1 - r, in_place ? ChunkRef{} : chunk(Buffer::Input, 0),
             chunk(Buffer::Output, 0)));
  }
  return b.build();
}

}  // namespace

TEST_CASE("ring programs are correct collectives for 2 to 16 ranks") {
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::Broadcast,
                       Collective::Reduce})
    for (int n = 2; n <= 16; ++n)
      for (int channels : {1, 2, 3})
        for (bool in_place : {false, true}) {
          require_ok(ring_program(c, n, channels, {}, in_place, n - 1));
          // A ring order other than 0, 1, ..., n - 1.
          std::vector<int> order(n);
          std::iota(order.begin(), order.end(), 0);
          std::reverse(order.begin(), order.end());
          std::rotate(order.begin(), order.begin() + n / 3, order.end());
          require_ok(ring_program(c, n, channels, order, in_place, n / 2));
        }
  REQUIRE(check_program(ring_program(Collective::AllReduce, 8, 2)).summary ==
          "each rank's result holds each element of every rank exactly once");
  REQUIRE(check_program(ring_program(Collective::ReduceScatter, 8, 2)).summary ==
          "each rank's result holds its own part of every rank's input, each element exactly once");
  REQUIRE(check_program(ring_program(Collective::AllGather, 8, 2)).summary ==
          "each rank's result holds every rank's input exactly once");
  REQUIRE(check_program(ring_program(Collective::Broadcast, 8, 2, {}, false, 3)).summary ==
          "each rank's result holds the root's input exactly once");
  REQUIRE(check_program(ring_program(Collective::Reduce, 8, 2, {}, false, 3)).summary ==
          "the root's result holds each element of every rank exactly once");
}

TEST_CASE("gather and scatter programs are correct for 2 to 16 ranks, every root, in and out of place") {
  for (Collective c : {Collective::Gather, Collective::Scatter})
    for (int n = 2; n <= 16; ++n)
      for (int root : {0, n / 2, n - 1})
        for (int channels : {1, 3})
          for (bool in_place : {false, true}) require_ok(gather_scatter_program(c, n, channels, root, in_place));
  REQUIRE(check_program(gather_scatter_program(Collective::Gather, 5, 2, 4)).summary ==
          "the root's result holds every rank's input exactly once");
  REQUIRE(check_program(gather_scatter_program(Collective::Scatter, 5, 2, 4)).summary ==
          "each rank's result holds its own part of the root's input exactly once");
}

// NCCL's ring under Simple (prims_simple.h, genericOp): a step's chunk in
// two slices of max(divUp(n, 32) x 16, stepSize x 2 / 32) bytes.
TEST_CASE("a ring's Simple step moves in NCCL's two slices where NCCL's software is charged", "[programs]") {
  const uint64_t step = 512 * 1024;  // NCCL's Simple buffer step (4 MiB / 8)
  CHECK(nccl_slice_bytes(349526, step) == 174768);  // 32 MiB over 12 channels x 8 ranks, halved to 16 B
  CHECK(nccl_slice_bytes(43691, step) == 32 * 1024);  // a 4 MiB message: the 32 KiB floor
  const Program ring = ring_program(Collective::AllReduce, 8, 12);
  // The cores' chunk: a slice, at most a slot, only with the slices asked and under Simple.
  CHECK(cores_chunk_bytes(ring, Protocol::Simple, 32ull << 20, step, step, true) == 174768);
  CHECK(cores_chunk_bytes(ring, Protocol::Simple, 32ull << 20, step, step, false) == step);
  CHECK(cores_chunk_bytes(ring, Protocol::Simple, 1ull << 30, step, step, true) == step);
  CHECK(cores_chunk_bytes(ring, Protocol::LL128, 32ull << 20, 576000, step, true) == 576000);
  // Broadcast's ring moves a step in one slice (BROADCAST_SLICESTEPS = BROADCAST_CHUNKSTEPS).
  CHECK(cores_chunk_bytes(ring_program(Collective::Broadcast, 8, 12), Protocol::Simple, 32ull << 20, step, step,
                          true) == step);
}

TEST_CASE("the checker bites on rooted collectives: a reduce that leaves a rank out, a gather or scatter "
          "that sends a block to the wrong place, a root that is not a rank") {
  // Rank 2 forwards what it receives without adding its own input.
  Program reduce = ring_program(Collective::Reduce, 4, 1);
  for (Operation& o : reduce.ops)
    if (o.kind == OpKind::RecvReduceSend && o.recv_peer == 1) {
      o.kind = OpKind::RecvCopySend;
      o.dst = ChunkRef{o.src.index, o.src.count, Buffer::Output};
      o.src = ChunkRef{};
    }
  ProgramCheck v = check_program(reduce);
  INFO(v.report());
  REQUIRE_FALSE(v.ok());
  CHECK(v.problems.front().find("rank 0's output chunk 0 lacks") != std::string::npos);
  // Rank 2's block lands in the root's window of rank 3.
  Program gather = gather_scatter_program(Collective::Gather, 4, 1, 0);
  for (Operation& o : gather.ops)
    if (o.kind == OpKind::Recv && o.recv_peer == 2) o.dst.index = 3;
  v = check_program(gather);
  REQUIRE_FALSE(v.ok());
  // Rank 1 is sent the root's window of rank 2.
  Program scatter = gather_scatter_program(Collective::Scatter, 4, 1, 0);
  for (Operation& o : scatter.ops)
    if (o.kind == OpKind::Send && o.send_peer == 1) o.src.index = 2;
  v = check_program(scatter);
  REQUIRE_FALSE(v.ok());
  CHECK(v.problems.front().find("rank 1's output chunk 0") != std::string::npos);
  Program rootless = ring_program(Collective::Reduce, 4, 1);
  rootless.root = 4;
  v = check_program(rootless);
  REQUIRE_FALSE(v.ok());
  CHECK(v.problems.front() == "the reduce root 4 is not a rank of 4");
}

TEST_CASE("NCCL's symmetric kernels are correct programs: one-shot LL, and direct reduce-scatter and all-gather",
          "[programs]") {
  for (int n = 2; n <= 9; ++n)
    for (int channels : {1, 3}) {
      require_ok(oneshot_allreduce_program(n, channels, Protocol::LL));
      for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
        require_ok(direct_program(c, n, channels, Protocol::Simple));
    }
  // One-shot: per channel a send to and a receive from each peer (its own
  // scratch chunk, queue), then a copy of the input and n - 1 additions on one queue.
  const Program one = oneshot_allreduce_program(4, 2, Protocol::LL);
  REQUIRE(one.buffers[1] == Buffers{2, 2, 6});
  REQUIRE(one.op_count(1) == 2 * (3 + 3 + 1 + 3));
  CHECK(one.op(1, 3).kind == OpKind::Recv);
  CHECK(one.op(1, 3).recv_peer == 0);
  CHECK(one.op(1, 3).dst == chunk(Buffer::Scratch, 0));
  CHECK(one.op(1, 6).kind == OpKind::Copy);
  CHECK(one.op(1, 7).kind == OpKind::Reduce);
  CHECK(one.op(1, 7).src == chunk(Buffer::Scratch, 0));
  CHECK(one.op(1, 9).queue == one.op(1, 6).queue);
  for (const Operation& o : one.ops) CHECK(o.proto == Protocol::LL);
  // Direct: each peer's block out, this rank's parts in and added, then its sum to every peer.
  const Program direct = direct_program(Collective::AllReduce, 4, 1, Protocol::Simple);
  REQUIRE(direct.op_count(2) == 3 + 3 + 1 + 3 + 3 + 3);
  CHECK(direct.op(2, 0).send_peer == 3);
  CHECK(direct.op(2, 0).src == chunk(Buffer::Input, 3));
  CHECK(direct.op(2, 10).kind == OpKind::Send);
  CHECK(direct.op(2, 10).src == chunk(Buffer::Output, 2));
  CHECK(direct.op(2, 13).kind == OpKind::Recv);
  CHECK(direct.op(2, 13).queue == direct.op(2, 3).queue);  // a peer's receives on one queue
  CHECK(direct.op(2, 13).dst == chunk(Buffer::Output, 1));
  CHECK_THROWS_WITH(direct_program(Collective::AllGather, 1, 1, Protocol::LL), "a symmetric kernel needs at least 2 ranks");
  CHECK_THROWS_WITH(oneshot_allreduce_program(8, 4096, Protocol::LL),
                    "a symmetric kernel on 8 ranks needs between 1 and 4095 channels");
}

TEST_CASE("NCCL's all-to-all is a correct program: per channel a copy, a send and a receive per peer", "[programs]") {
  for (int n = 2; n <= 17; ++n)
    for (int channels : {1, 2, 3}) require_ok(alltoall_program(n, channels));
  const Program p = alltoall_program(5, 2);
  REQUIRE(check_program(p).summary == "each rank's result holds every rank's block for it exactly once");
  REQUIRE(p.collective == Collective::AllToAll);
  REQUIRE_FALSE(p.in_place);
  for (int r = 0; r < 5; ++r) {
    REQUIRE(p.buffers[r] == Buffers{10, 10, 0});
    REQUIRE(p.op_count(r) == 2 * (1 + 2 * 4));
    std::vector<int> sent(5, 0), received(5, 0);
    std::vector<uint16_t> queues;
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      queues.push_back(o.queue);
      if (o.kind == OpKind::Copy) {  // its own part of the channel: input chunk r x 2 + c to the same output chunk
        REQUIRE(o.src == chunk(Buffer::Input, static_cast<uint32_t>(r * 2 + o.channel)));
        REQUIRE(o.dst == chunk(Buffer::Output, static_cast<uint32_t>(r * 2 + o.channel)));
      } else if (o.kind == OpKind::Send) {
        ++sent[o.send_peer];
        REQUIRE(o.src == chunk(Buffer::Input, static_cast<uint32_t>(o.send_peer * 2 + o.channel)));
      } else {
        REQUIRE(o.kind == OpKind::Recv);
        ++received[o.recv_peer];
        REQUIRE(o.dst == chunk(Buffer::Output, static_cast<uint32_t>(o.recv_peer * 2 + o.channel)));
      }
    }
    for (int q = 0; q < 5; ++q) {
      REQUIRE(sent[q] == (q == r ? 0 : 2));
      REQUIRE(received[q] == (q == r ? 0 : 2));
    }
    // Each peer's sends and receives on a channel are a queue of their own: 2 x 4 per channel.
    std::sort(queues.begin(), queues.end());
    REQUIRE(std::unique(queues.begin(), queues.end()) - queues.begin() == 16);
  }
  // Round k of channel c (from c + 1 on): rank 0's first send on channel 1 goes to rank 2.
  REQUIRE(p.op(0, p.op_count(0) / 2 + 1).send_peer == 2);
  const std::string text = write_program(p);
  REQUIRE(text.find("collective alltoall ranks 5 root 0 inplace 0") != std::string::npos);
  REQUIRE(read_program(text, "a2a.prog") == p);
  REQUIRE_THROWS_WITH(ring_program(Collective::AllToAll, 4), "an alltoall runs no ring: NCCL sends each peer its block (p2p)");
}

TEST_CASE("the checker holds an all-to-all to its layout: a misrouted block, in place, blocks that do not divide",
          "[programs]") {
  // Rank 1 receives rank 0's block into rank 2's place, and rank 2's into rank 0's.
  Program p = alltoall_program(3, 1);
  for (uint32_t k = p.rank_begin[1]; k < p.rank_begin[2]; ++k)
    if (p.ops[k].kind == OpKind::Recv) p.ops[k].dst.index = 2 - p.ops[k].dst.index;
  REQUIRE(first_problem(p) == "rank 1's output chunk 0 lacks rank 0's input chunk 1");
  Program in_place = alltoall_program(3, 1);
  in_place.in_place = true;
  REQUIRE(first_problem(in_place) ==
          "an alltoall runs out of place: a rank's output would overwrite input it has yet to send");
  Program uneven = alltoall_program(3, 1);
  for (Buffers& b : uneven.buffers) b.input = b.output = 4;
  REQUIRE(first_problem(uneven) ==
          "alltoall on 3 ranks needs input chunks in whole blocks per rank, a multiple of 3, not 4");
}

TEST_CASE("an MSCCL alltoall XML reads in msccl-tools' layout, checks and round-trips", "[programs]") {
  const Program p = read_msccl_file(kAllToAll);
  REQUIRE(p.collective == Collective::AllToAll);
  REQUIRE(p.ranks == 3);
  REQUIRE_FALSE(p.in_place);
  REQUIRE(p.buffers[1] == Buffers{6, 6, 0});
  const ProgramCheck c = check_program(p);
  INFO(c.report());
  REQUIRE(c.ok());
  REQUIRE(read_program(write_program(p), "a2a.prog") == p);
  // GPU 0 receiving GPU 1's second chunk into the place of GPU 2's.
  const std::string xml = read_text_file(kAllToAll, "test file");
  const std::string bad = replaced(xml, "type=\"r\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"3\"",
                                   "type=\"r\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"5\"");
  const ProgramCheck b = check_program(read_msccl_xml(bad, "bad.xml"));
  REQUIRE_FALSE(b.ok());
  REQUIRE(b.problems.front() == "rank 0's output chunk 3 is never delivered");
  // Two steps, as msccl-tools' alltoall_a100_two_step relays: a block for the
  // other node through the sender's rail peer, kept in its scratch.
  const Program two = read_msccl_file(std::string(TEST_DATA) + "/alltoall_two_step_4.xml");
  REQUIRE(two.buffers[0] == Buffers{4, 4, 1});
  require_ok(two);
}

TEST_CASE("PXN relays an all-to-all's transfers across rails and nodes through the GPU on the destination's rail",
          "[programs]") {
  // Rank k G + g is GPU g of node k.
  const auto place = [](int nodes, int per_node, std::vector<int>& node, std::vector<int>& rail) {
    for (int r = 0; r < nodes * per_node; ++r) node.push_back(r / per_node), rail.push_back(r % per_node);
  };
  for (const auto& [nodes, per_node, channels] : {std::array<int, 3>{2, 2, 1}, {2, 4, 3}, {3, 4, 2}, {4, 2, 16}}) {
    std::vector<int> node, rail;
    place(nodes, per_node, node, rail);
    const Program a = alltoall_program(nodes * per_node, channels);
    const Program p = pxn_program(a, node, rail);
    require_ok(p);
    REQUIRE(p.data_channels == channels);
    // Nothing crosses both a rail and a node: a transfer to another node
    // leaves from the destination's rail, and each intermediate relays what
    // its node's other GPUs send to its rail on the other nodes.
    for (int r = 0; r < p.ranks; ++r) {
      int relays = 0;
      for (int i = 0; i < p.op_count(r); ++i) {
        const Operation& o = p.op(r, i);
        if (o.send_peer != kNone && node[o.send_peer] != node[r]) CHECK(rail[o.send_peer] == rail[r]);
        if (o.kind != OpKind::RecvCopySend) continue;
        ++relays;
        CHECK(node[o.recv_peer] == node[r]);
        CHECK(o.dst.buf == Buffer::Scratch);
      }
      CHECK(relays == channels * (per_node - 1) * (nodes - 1));
      CHECK(p.buffers[r].scratch == static_cast<uint32_t>(relays));
    }
    // Relayed again, or printed and read back, it is the same program.
    CHECK(pxn_program(p, node, rail) == p);
    CHECK(read_program(write_program(p), "pxn") == p);
  }
  // A ring's hops receive and send in one operation: nothing to relay.
  std::vector<int> node, rail;
  place(2, 4, node, rail);
  const Program ring = cluster_ring_program(Collective::AllReduce, 2, 4, 4);
  CHECK(pxn_program(ring, node, rail) == ring);
  // Ranks on 1,000 nodes of 8 rails: a relay there would take a channel
  // beyond 65535, but only a program that relays is refused for it (an
  // NVLSTree or tree on 1,024 nodes relays nothing and runs).
  const std::vector<int> far_node{0, 999, 0}, far_rail{0, 0, 7};
  const Program far_ring = ring_program(Collective::AllReduce, 3, 16);
  CHECK(pxn_program(far_ring, far_node, far_rail) == far_ring);
  REQUIRE_THROWS_WITH(pxn_program(alltoall_program(3, 16), far_node, far_rail),
                      "PXN's relays of p2p need more than 65536 channels; run it with cluster.pxn=0");
}

TEST_CASE("a cluster's rings, one order per channel, and the hierarchical ring are correct programs", "[programs]") {
  for (const Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather})
    for (const auto& [nodes, per_node, channels] : {std::array<int, 3>{2, 2, 1}, {3, 4, 8}, {2, 8, 16}})
      require_ok(cluster_ring_program(c, nodes, per_node, channels));
  for (const auto& [nodes, per_node, channels] : {std::array<int, 3>{2, 2, 1}, {3, 4, 2}, {4, 8, 16}, {5, 3, 3}})
    require_ok(hierarchical_ring_program(nodes, per_node, channels));
  // Channel c of a cluster's rings enters each node at GPU c mod 4 and leaves it from GPU c - 1.
  const Program p = cluster_ring_program(Collective::AllReduce, 2, 4, 4);
  for (int r = 0; r < 8; ++r)
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      if (o.send_peer == kNone) continue;
      const bool crosses = o.send_peer / 4 != r / 4;
      CHECK(crosses == (r % 4 == (o.channel + 3) % 4));
      if (crosses) CHECK(o.send_peer % 4 == o.channel);
    }
  // The hierarchical ring's sends across nodes stay on their rail.
  const Program h = hierarchical_ring_program(3, 4, 2);
  for (int r = 0; r < 12; ++r)
    for (int i = 0; i < h.op_count(r); ++i)
      if (const Operation& o = h.op(r, i); o.send_peer != kNone && o.send_peer / 4 != r / 4) CHECK(o.send_peer % 4 == r % 4);
  CHECK_THROWS_WITH(hierarchical_ring_program(1, 8, 2), Catch::Contains("at least 2 nodes"));
}

TEST_CASE("NCCL's trees across a cluster are correct programs, their chunks NCCL's", "[programs]") {
  for (const auto& [nodes, per_node, channels] : {std::array<int, 3>{2, 1, 1}, {2, 2, 2}, {3, 4, 8}, {4, 8, 16}, {5, 3, 3}})
    require_ok(cluster_tree_program(nodes, per_node, channels));
  // Channel c's chain starts at GPU (c / 2) mod 4 of every node, and only it talks to other nodes, on its rail.
  const Program p = cluster_tree_program(4, 4, 8);
  CHECK(p.tree_nodes == 4);
  for (int r = 0; r < 16; ++r)
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      for (const int peer : {o.send_peer, o.recv_peer})
        if (peer != kNone && peer / 4 != r / 4) {
          CHECK(r % 4 == (o.channel / 2) % 4);
          CHECK(peer % 4 == r % 4);
        }
    }
  CHECK(read_program(write_program(p), "tree.txt") == p);
  // NCCL's rules (enqueue.cc), 2 nodes of 8 GPUs on 16 channels. Simple
  // (depth 8): 512 KiB steps, halved toward 64, 32 and 8 chunks per channel.
  const auto simple = [](uint64_t bytes) { return tree_chunk_bytes(Protocol::Simple, bytes, 16, 16, 2, 512 * 1024); };
  CHECK(simple(1ull << 30) == 512 * 1024);
  CHECK(simple(64ull << 20) == 128 * 1024);
  CHECK(simple(8ull << 20) == 64 * 1024);
  CHECK(simple(1ull << 20) == 32 * 1024);
  // LL128 (s = 1 + 1 + 0.8): the 614,400-byte step halved toward 22.4 then
  // 5.6 chunks per channel, 120 of every 128 bytes data.
  const auto ll128 = [](uint64_t bytes) { return tree_chunk_bytes(Protocol::LL128, bytes, 16, 16, 2, 576000); };
  CHECK(ll128(1ull << 30) == 576000);
  CHECK(ll128(64ull << 20) == 144000);  // 64 MiB / (16 x 153,600) = 27 chunks
  CHECK(ll128(1ull << 20) == 18000);
  CHECK(tree_chunk_bytes(Protocol::LL, 1ull << 20, 16, 16, 2, 32768) == 32768);
  CHECK_THROWS_WITH(cluster_tree_program(1, 8, 2), Catch::Contains("at least 2 nodes"));
}

TEST_CASE("NCCL's NVLSTree is a correct program that reads and multicasts in its node and crosses only its rail",
          "[programs]") {
  for (const auto& [nodes, per_node, channels] : {std::array<int, 3>{2, 2, 1}, {2, 8, 16}, {3, 4, 2}, {5, 3, 3}})
    for (const bool multimem : {true, false}) require_ok(nvls_tree_program(nodes, per_node, channels, multimem));
  const Program p = nvls_tree_program(4, 4, 2, true);
  CHECK(p.multimem);
  CHECK(p.tree_nodes == 4);
  REQUIRE(p.groups.size() == 4);
  CHECK(p.groups[1] == std::vector<int>{4, 5, 6, 7});
  for (int r = 0; r < 16; ++r) {
    int reads = 0, stores = 0;
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      CHECK(o.engine == Engine::Cores);
      if (in_network(o.kind)) CHECK(o.group == r / 4);
      // Rank r heads chunk (r mod 4) x 2 + c of channel c: its read's sum, its store's data.
      if (o.kind == OpKind::ReduceRead && !o.dst.empty()) {
        ++reads;
        CHECK(o.src.index == (r % 4) * 2u + o.channel);
      }
      if (o.kind == OpKind::MulticastWrite && !o.src.empty()) {
        ++stores;
        CHECK(o.src.index == (r % 4) * 2u + o.channel);
      }
      // Between nodes only GPU h of each: its rail.
      for (const int peer : {o.send_peer, o.recv_peer})
        if (peer != kNone) CHECK(peer % 4 == r % 4);
    }
    CHECK(reads == 2);
    CHECK(stores == 2);
  }
  CHECK(read_program(write_program(p), "nvlstree.txt") == p);
  // NCCL's chunk rule (nvls.cc, enqueue.cc), 16 channels x 8 heads: NVLS's
  // 128 KiB chunk (64 KiB from 4 nodes on) cut to 64 and 32 KiB below 4
  // and 1 times the pass; never more than a step.
  const auto chunk = [](uint64_t bytes, int nodes) { return nvls_tree_chunk_bytes(bytes, 128, 512 * 1024, nodes); };
  CHECK(chunk(16ull << 30, 2) == 128 * 1024);
  CHECK(chunk(256ull << 20, 2) == 128 * 1024);
  CHECK(chunk(16ull << 20, 2) == 64 * 1024);
  CHECK(chunk(1ull << 20, 2) == 32 * 1024);
  CHECK(chunk(16ull << 30, 4) == 64 * 1024);
  CHECK(chunk(64ull << 20, 8) == 64 * 1024);
  CHECK(chunk(1ull << 20, 8) == 32 * 1024);
  CHECK(nvls_tree_chunk_bytes(16ull << 30, 128, 16 * 1024, 2) == 16 * 1024);
  CHECK_THROWS_WITH(nvls_tree_program(1, 8, 2, true), Catch::Contains("at least 2 nodes"));
  // NVLS with SHARP: each head pushes its read's sum to its rail's group of its channel, and multicasts what comes back.
  for (const auto& [nodes, per_node, channels] : {std::array<int, 3>{2, 2, 1}, {2, 8, 16}, {3, 4, 2}})
    for (const bool multimem : {true, false}) require_ok(nvls_sharp_program(nodes, per_node, channels, multimem));
  const Program sharp = nvls_sharp_program(3, 4, 2, true);
  REQUIRE(sharp.groups.size() == 3 + 4 * 2);
  for (int r = 0; r < 12; ++r) {
    int pushes = 0;
    for (int i = 0; i < sharp.op_count(r); ++i) {
      const Operation& o = sharp.op(r, i);
      if (o.kind != OpKind::ReduceWrite) continue;
      ++pushes;
      CHECK(o.src == o.dst);
      CHECK(o.src.index == (r % 4) * 2u + o.channel);
      CHECK(sharp.groups[o.group] == std::vector<int>{r % 4, 4 + r % 4, 8 + r % 4});
    }
    CHECK(pushes == 2);
  }
  CHECK(read_program(write_program(sharp), "nvlssharp.txt") == sharp);
  CHECK_THROWS_WITH(nvls_sharp_program(2, 1, 2, true), Catch::Contains("at least 2 nodes of at least 2 GPUs"));
  // CollNet: the node's rings with a reducing write of each GPU's block in its rail's group of its channel.
  for (const auto& [nodes, per_node, channels] : {std::array<int, 3>{2, 2, 1}, {2, 8, 16}, {3, 4, 2}})
    require_ok(collnet_program(nodes, per_node, channels));
  const Program collnet = collnet_program(3, 4, 2);
  REQUIRE(collnet.groups.size() == 4 * 2);
  for (int r = 0; r < 12; ++r)
    for (int i = 0; i < collnet.op_count(r); ++i) {
      const Operation& o = collnet.op(r, i);
      if (o.kind != OpKind::ReduceWrite) continue;
      CHECK(o.queue == 2 + o.channel);
      CHECK(collnet.groups[o.group] == std::vector<int>{r % 4, 4 + r % 4, 8 + r % 4});
    }
  CHECK(read_program(write_program(collnet), "collnet.txt") == collnet);
  // NVLS with rings across: each head's block is one chunk per rank of its rail's ring.
  for (const auto& [nodes, per_node, channels] : {std::array<int, 3>{2, 2, 1}, {2, 8, 16}, {3, 4, 2}})
    for (const bool multimem : {true, false}) require_ok(nvls_ring_program(nodes, per_node, channels, multimem));
  const Program ring = nvls_ring_program(3, 4, 2, true);
  for (int r = 0; r < 12; ++r)
    for (int i = 0; i < ring.op_count(r); ++i) {
      const Operation& o = ring.op(r, i);
      for (const int peer : {o.send_peer, o.recv_peer})
        if (peer != kNone) CHECK(peer % 4 == r % 4);
      if (in_network(o.kind)) CHECK((o.src.empty() ? o.dst : o.src).count == 3);
    }
  CHECK(read_program(write_program(ring), "nvlsring.txt") == ring);
}

TEST_CASE("a ring all-reduce has NCCL's operations, 2(n-1) sends per rank and channel") {
  const Program p = ring_program(Collective::AllReduce, 4, 2);
  REQUIRE(p.op_count(0) == 2 * (2 * 4 - 1));
  std::vector<std::string> kinds;
  for (int i = 0; i < 7; ++i) kinds.push_back(op_name(p.op(1, i).kind));
  REQUIRE(kinds == std::vector<std::string>{"s", "rrs", "rrs", "rrcs", "rcs", "rcs", "r"});
  REQUIRE(p.op(1, 0).send_peer == 2);
  REQUIRE(p.op(1, 1).recv_peer == 0);
  REQUIRE(p.op(1, 7).channel == 1);
}

TEST_CASE("the text format round-trips ring programs exactly") {
  for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather, Collective::Broadcast})
    for (bool in_place : {false, true}) {
      const Program p = ring_program(c, 5, 2, {4, 2, 0, 1, 3}, in_place, 2);
      const std::string text = write_program(p);
      const Program back = read_program(text, "ring.prog");
      REQUIRE(back == p);
      REQUIRE(write_program(back) == text);
    }
  const std::string text = write_program(ring_program(Collective::AllReduce, 2, 1));
  REQUIRE(text ==
          "# incsim collective program (docs/programs.md)\n"
          "program 1\n"
          "name ring\n"
          "collective allreduce ranks 2 root 0 inplace 0\n"
          "rank 0 input 2 output 2 scratch 0\n"
          "0 s cores ch 0 q 0 to 1 src i0\n"
          "1 rrcs cores ch 0 q 0 to 1 from 1 src i1 dst o1\n"
          "2 r cores ch 0 q 0 from 1 dst o0\n"
          "rank 1 input 2 output 2 scratch 0\n"
          "0 s cores ch 0 q 0 to 0 src i1\n"
          "1 rrcs cores ch 0 q 0 to 0 from 0 src i0 dst o0\n"
          "2 r cores ch 0 q 0 from 0 dst o1\n");
}

TEST_CASE("the text format reader names the file, the line and what is wrong") {
  const std::string good = write_program(ring_program(Collective::AllReduce, 2, 1));
  const auto error = [](const std::string& text) {
    try {
      read_program(text, "p.prog");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  REQUIRE(error("") == "p.prog:0: the file is empty (a program starts with \"program 1\")");
  REQUIRE(error(replaced(good, "program 1", "program 2")) == "p.prog:2: only version 1 of the program format exists");
  REQUIRE(error(replaced(good, "0 s cores", "0 send cores")) ==
          "p.prog:6: operation \"send\" is not one of nop, s, r, rrs, rrc, rrcs, rcs, cpy, re, mcast, redwrite, "
          "redread, aggregate, barrier");
  REQUIRE(error(replaced(good, "0 s cores", "0 s gpu")) == "p.prog:6: engine \"gpu\" is not one of cores, copy, table, roce");
  REQUIRE(error(replaced(good, "2 r cores", "3 r cores")) == "p.prog:8: operation 3 where operation 2 comes next");
  REQUIRE(error(replaced(good, "src i0", "src x0")) ==
          "p.prog:6: src \"x0\" must start with i, o or s (input, output, scratch)");
  REQUIRE(error(replaced(good, "src i0", "src i0:0")) == "p.prog:6: chunk count 0 is out of range [1, 65535]");
  REQUIRE(error(replaced(good, "dst o0\n", "dst o0 color red\n")) ==
          "p.prog:8: unknown field \"color\" (proto, ch, q, to, from, group, timestep, src, dst, after)");
  REQUIRE(error(replaced(good, "ch 0 q 0 to 1 src", "ch 0 q 0 to 1 ch 1 src")) == "p.prog:6: field \"ch\" given twice");
  REQUIRE(error(good.substr(0, good.find("rank 1"))) == "p.prog:8: the program ends after rank 0 of 2");
  REQUIRE(error(replaced(good, "ranks 2 root 0", "ranks 2 root 5")) == "p.prog:4: root 5 is out of range [0, 1]");
  // Link hints (the NICs' ports to a peer) come before the ranks.
  const auto link = [&](const std::string& line) { return error(replaced(good, "rank 0 input", line + "\nrank 0 input")); };
  REQUIRE(link("link 0 to 1 ch 3 ports 2,5") == "accepted");
  REQUIRE(link("link 0 ports 2") == "p.prog:5: a link names its peer (to R)");
  REQUIRE(link("link 0 to 1") == "p.prog:5: a link names its ports (ports P,Q,...)");
  REQUIRE(link("link 0 to 2 ports 1") == "p.prog:5: to 2 is out of range [0, 1]");
  REQUIRE(link("link 0 to 1 ports 1,x") == "p.prog:5: port \"x\" is not a whole number");
  REQUIRE(link("link 0 to 1 ch 1 ch 2 ports 1") == "p.prog:5: field \"ch\" given twice");
  REQUIRE(link("link 0 to 1 lane 2 ports 1") == "p.prog:5: unknown field \"lane\" (to, ch, ports)");
  REQUIRE(link("dataflow 2") == "p.prog:5: dataflow (0 or 1) 2 is out of range [0, 1]");
}

TEST_CASE("the hand-made MSCCL all-pairs all-reduce reads, checks and round-trips") {
  const Program p = read_msccl_file(kAllPairs);
  REQUIRE(p.name == "allpairs_allreduce_4");
  REQUIRE(p.ranks == 4);
  REQUIRE(p.in_place);
  REQUIRE(p.buffers[2] == Buffers{4, 0, 3});
  REQUIRE(p.op_count(0) == 3 + 3 * 4);
  // gpu 0 tb 1 step 2 sends the sum after tb 0 step 2, its last reduction.
  const Operation& send = p.op(0, 3 + 2);
  REQUIRE(send.kind == OpKind::Send);
  REQUIRE(send.send_peer == 1);
  REQUIRE(send.queue == 1);
  REQUIRE(send.dep_count == 1);
  REQUIRE(p.deps_of(send)[0] == 2);
  const ProgramCheck c = check_program(p);
  INFO(c.report());
  REQUIRE(c.ok());
  REQUIRE(c.summary == "each rank's result holds each element of every rank exactly once");
  const std::string text = write_program(p);
  REQUIRE(read_program(text, "allpairs.prog") == p);
  REQUIRE(write_program(read_program(text, "allpairs.prog")) == text);
}

TEST_CASE("malformed MSCCL XML is refused naming the file and the element") {
  const std::string xml = read_text_file(kAllPairs, "test file");
  // A send in the thread block that sends to no one.
  REQUIRE(refusal(replaced(xml, "<step s=\"0\" type=\"re\"", "<step s=\"0\" type=\"s\"")) ==
          "bad.xml:8: gpu 0 tb 0 step 0: sends (type s) but thread block 0 sends to no peer (send=-1)");
  REQUIRE(refusal(replaced(xml, "type=\"re\" srcbuf=\"s\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" depid=\"1\" deps=\"1\"",
                           "type=\"re\" srcbuf=\"s\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" depid=\"1\" deps=\"9\"")) ==
          "bad.xml:8: gpu 0 tb 0 step 0: depends on tb 1 step 9, which does not exist");
  REQUIRE(refusal(replaced(xml, "depid=\"1\" deps=\"1\"", "depid=\"7\" deps=\"1\"")) ==
          "bad.xml:8: gpu 0 tb 0 step 0: depends on tb 7 step 1, which does not exist");
  REQUIRE(refusal(replaced(xml, "srcbuf=\"s\" srcoff=\"2\"", "srcbuf=\"s\" srcoff=\"3\"")) ==
          "bad.xml:10: gpu 0 tb 0 step 2: src chunks [3, 4) of buffer s lie outside its 3 chunks");
  REQUIRE(refusal(replaced(xml, "dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" depid=\"1\"", "dstbuf=\"q\" dstoff=\"0\" cnt=\"1\" depid=\"1\"")) ==
          "bad.xml:8: gpu 0 tb 0 step 0: dstbuf \"q\" is not i, o or s");
  REQUIRE(refusal(replaced(xml, "<tb id=\"1\" send=\"1\"", "<tb id=\"1\" send=\"4\"")) ==
          "bad.xml:12: gpu 0 tb 1: send 4 is out of range [-1, 3]");
  REQUIRE(refusal(replaced(xml, "<tb id=\"1\" send=\"1\" recv=\"1\"", "<tb id=\"1\" send=\"0\" recv=\"1\"")) ==
          "bad.xml:12: gpu 0 tb 1: names its own gpu as a peer");
  REQUIRE(refusal(replaced(xml, "<step s=\"1\" type=\"re\"", "<step s=\"2\" type=\"re\"")) ==
          "bad.xml:9: gpu 0 tb 0 step 2: comes where step 1 belongs");
  REQUIRE(refusal(replaced(xml, "type=\"re\"", "type=\"put\"")) ==
          "bad.xml:8: gpu 0 tb 0 step 0: step type \"put\" is not one of s, r, rrs, rrc, rrcs, rcs, cpy, re, nop");
  REQUIRE(refusal(replaced(xml, "coll=\"allreduce\"", "coll=\"gather\"")) ==
          "bad.xml:5: algo: coll \"gather\" is not a collective incsim runs (allreduce, reduce_scatter, allgather, "
          "broadcast, alltoall)");
  REQUIRE(refusal(replaced(xml, " cnt=\"1\" depid=\"1\"", " depid=\"1\"")) == "bad.xml:8: gpu 0 tb 0 step 0: has no attribute cnt");
  REQUIRE(refusal(replaced(xml, "<gpu id=\"3\"", "<gpu id=\"2\"")) == "bad.xml:81: gpu 2: appears twice");
  REQUIRE(refusal(replaced(xml, "</algo>", "")).rfind("bad.xml:", 0) == 0);  // the parser: file and line
  // Well formed, but a wrong algorithm: the checker finds it.
  const Program no_reduce = read_msccl_xml(
      replaced(xml, "srcbuf=\"s\" srcoff=\"2\" dstbuf=\"i\" dstoff=\"0\"", "srcbuf=\"s\" srcoff=\"1\" dstbuf=\"i\" dstoff=\"0\""),
      "wrong.xml");
  REQUIRE(first_problem(no_reduce) == "rank 0's output chunk 0 counts rank 2's input chunk 0 twice");
}

TEST_CASE("the checker names a peer out of range, an unpaired send, a cycle and a deadlock") {
  Program p = pair_allreduce();
  require_ok(p);
  REQUIRE(check_program(pair_allreduce(false)).ok());

  Program bad = p;
  bad.ops[0].send_peer = 5;
  REQUIRE(first_problem(bad) == "rank 0 operation 0 (s) has peer 5 to send, out of range (2 ranks)");

  bad = p;
  bad.ops[2].kind = OpKind::Nop;  // rank 1 no longer sends
  bad.ops[2].send_peer = kNone;
  bad.ops[2].src = {};
  REQUIRE(first_problem(bad) == "rank 1 sends 0 times to rank 0 on channel 0, but rank 0 receives 1 times from rank 1 on it");

  bad = p;
  bad.ops[1].channel = 1;  // rank 0 receives on another channel
  REQUIRE(first_problem(bad) == "rank 1 sends 1 times to rank 0 on channel 0, but rank 0 receives 0 times from rank 1 on it");

  // Rank 0's send waits for its receive: a cycle on rank 0 alone.
  ProgramBuilder b("cycle", Collective::AllReduce, 2, true);
  for (int r = 0; r < 2; ++r) {
    b.begin_rank(r, Buffers{1, 0, 0});
    b.add(op(OpKind::Send, 1 - r, kNone, chunk(Buffer::Input, 0), {}, 0), {1});
    b.add(op(OpKind::RecvReduceCopy, kNone, 1 - r, {}, chunk(Buffer::Output, 0), 1), {0});
  }
  REQUIRE(first_problem(b.build()) == "rank 0's operations 0, 1 wait for each other in a cycle");

  // Both ranks receive before they send: a deadlock across ranks.
  ProgramBuilder d("deadlock", Collective::AllReduce, 2, true);
  for (int r = 0; r < 2; ++r) {
    d.begin_rank(r, Buffers{1, 0, 0});
    d.add(op(OpKind::RecvReduceCopy, kNone, 1 - r, {}, chunk(Buffer::Output, 0)));
    d.add(op(OpKind::Send, 1 - r, kNone, chunk(Buffer::Input, 0), {}));
  }
  REQUIRE(first_problem(d.build()) ==
          "the program deadlocks with 4 operations never run: rank 0 operation 0 (rrc) waits for rank 1 operation 1 (s) "
          "waits for rank 1 operation 0 (rrc) waits for rank 0 operation 1 (s) waits for rank 0 operation 0 (rrc)");

  bad = p;
  bad.deps.push_back(7);
  bad.ops[1].dep_begin = 0;
  bad.ops[1].dep_count = 1;
  REQUIRE(first_problem(bad) == "rank 0 operation 1 (rrc) depends on operation 7, which rank 0 does not have");

  bad = p;
  bad.ops[0].engine = Engine::CopyEngine;
  bad.ops[1].engine = Engine::CopyEngine;
  REQUIRE(first_problem(bad) == "rank 0 operation 1 (rrc) runs on the copy engine, which cannot do rrc");

  bad = ring_program(Collective::AllGather, 4, 2);
  for (Buffers& b : bad.buffers) b.output = 10;
  REQUIRE(first_problem(bad) == "allgather on 4 ranks needs output chunks = 4 x input chunks (2), not 10");

  bad = p;
  bad.ops[0].src = chunk(Buffer::Input, 1);
  REQUIRE(first_problem(bad) == "rank 0 operation 0 (s)'s src input chunks [1, 2) lie outside rank 0's 1 input chunks");
}

TEST_CASE("the checker names a chunk never reduced or delivered and a contribution counted twice") {
  Program p = pair_allreduce();
  Program bad = p;
  bad.ops[1].kind = OpKind::Recv;  // rank 0 overwrites its data instead of adding
  REQUIRE(first_problem(bad) == "rank 0's output chunk 0 lacks rank 0's input chunk 0");

  bad = pair_allreduce(false);
  bad.ops[1].kind = OpKind::RecvCopySend;  // rank 0 forwards instead of reducing, then sends back
  bad.ops[1].send_peer = 1;
  bad.ops[1].src = {};
  REQUIRE(first_problem(bad) == "rank 0 sends 2 times to rank 1 on channel 0, but rank 1 receives 1 times from rank 0 on it");

  // Rank 0 reduces the received chunk twice.
  ProgramBuilder b("twice", Collective::AllReduce, 2, true);
  for (int r = 0; r < 2; ++r) {
    b.begin_rank(r, Buffers{1, 0, 1});
    b.add(op(OpKind::Send, 1 - r, kNone, chunk(Buffer::Input, 0), {}));
    b.add(op(OpKind::Recv, kNone, 1 - r, {}, chunk(Buffer::Scratch, 0)));
    Operation re = op(OpKind::Reduce, kNone, kNone, chunk(Buffer::Scratch, 0), chunk(Buffer::Output, 0));
    b.add(re);
    if (r == 0) b.add(re);
  }
  REQUIRE(first_problem(b.build()) == "rank 0's output chunk 0 counts rank 1's input chunk 0 twice");

  // An all-gather whose rank 1 never receives rank 0's block.
  Program ag = ring_program(Collective::AllGather, 2, 1);
  ag.ops[5].dst = chunk(Buffer::Output, 1);  // rank 1 receives rank 0's block into its own slot
  const ProgramCheck c = check_program(ag);
  REQUIRE(c.problems.size() == 3);
  REQUIRE(c.problems.front() == "rank 1's output chunk 0 is never delivered");
  REQUIRE(c.problems.at(1) == "rank 1's output chunk 1 lacks rank 1's input chunk 0");
  Program ar = ring_program(Collective::AllReduce, 2, 1);
  ar.ops[2].dst = chunk(Buffer::Output, 1);  // rank 0's last receive lands on the chunk it completed itself
  REQUIRE(first_problem(ar) == "rank 0's output chunk 0 is never reduced or delivered");
  // A send of a chunk that holds nothing.
  Program empty = ring_program(Collective::AllReduce, 3, 1);
  empty.ops[0].src = chunk(Buffer::Output, 0);
  REQUIRE(first_problem(empty) == "rank 0 operation 0 (s) reads output chunk 0, which holds nothing yet");
}

TEST_CASE("in-network operations: push, pull, an aggregator and multicast, checked") {
  // Every rank contributes chunk k and receives the sum into its output
  // (push: a switch's reduction table; pull: reducing reads; NetReduce: an
  // aggregator), or, for an all-gather, writes its chunks to every rank.
  const auto innet = [](OpKind kind, Engine e, int n, int chunks) {
    const bool gather = kind == OpKind::MulticastWrite;
    ProgramBuilder b("innet", gather ? Collective::AllGather : Collective::AllReduce, n);
    std::vector<int> all;
    for (int r = 0; r < n; ++r) all.push_back(r);
    const int g = b.add_group(all);
    const uint32_t in = static_cast<uint32_t>(chunks);
    for (int r = 0; r < n; ++r) {
      b.begin_rank(r, Buffers{in, gather ? in * n : in, 0});
      for (int q = 0; q < (gather ? n : 1); ++q)
        for (uint32_t k = 0; k < in; ++k) {
          Operation o;
          o.kind = kind;
          o.engine = e;
          o.group = g;
          if (!gather || q == r) o.src = chunk(Buffer::Input, k);
          o.dst = chunk(Buffer::Output, gather ? static_cast<uint32_t>(q) * in + k : k);
          b.add(o);
        }
    }
    return b.build();
  };
  for (int n : {2, 5, 16}) {
    require_ok(innet(OpKind::ReduceWrite, Engine::CopyEngine, n, 3));
    require_ok(innet(OpKind::ReduceRead, Engine::CopyEngine, n, 3));
    require_ok(innet(OpKind::Aggregate, Engine::RoceNic, n, 3));
    require_ok(innet(OpKind::MulticastWrite, Engine::CopyEngine, n, 3));
  }
  const Program push = innet(OpKind::ReduceWrite, Engine::CopyEngine, 4, 2);
  REQUIRE(read_program(write_program(push), "push.prog") == push);

  Program bad = innet(OpKind::MulticastWrite, Engine::CopyEngine, 3, 1);
  bad.ops[bad.rank_begin[1]].src = chunk(Buffer::Input, 0);
  REQUIRE(first_problem(bad) ==
          "rank 0 operation 0 (mcast) is a multicast write with 2 writers in its group; it needs exactly one");
  bad = innet(OpKind::ReduceWrite, Engine::CopyEngine, 3, 1);
  bad.groups[0] = {0, 1};
  REQUIRE(first_problem(bad) == "rank 2 operation 0 (redwrite) is in group 0, which rank 2 is not a member of");
  bad = innet(OpKind::Aggregate, Engine::CopyEngine, 3, 1);
  REQUIRE(first_problem(bad) == "rank 0 operation 0 (aggregate) runs on the copy engine, which cannot do aggregate");
  bad = innet(OpKind::ReduceWrite, Engine::CopyEngine, 3, 2);
  bad.ops.erase(bad.ops.begin() + 1);  // rank 0 contributes one chunk of two
  for (size_t r = 1; r < bad.rank_begin.size(); ++r) --bad.rank_begin[r];
  REQUIRE(first_problem(bad) == "rank 0 has 1 operations in group 0 on channel 0, but member rank 1 has 2");
}

TEST_CASE("Klenk's in-network collectives as copy-engine programs are correct and round-trip", "[programs][innet]") {
  struct Case {
    Collective c;
    InNetMethod m;
  };
  for (const Case& k : {Case{Collective::AllReduce, InNetMethod::Push}, Case{Collective::AllReduce, InNetMethod::Pull},
                        Case{Collective::ReduceScatter, InNetMethod::Pull},
                        Case{Collective::AllGather, InNetMethod::Multicast},
                        Case{Collective::Broadcast, InNetMethod::Multicast}})
    for (int n : {2, 3, 16})
      for (bool barrier : {false, true}) {
        INFO(collective_name(k.c) << " by " << method_name(k.m) << " on " << n << (barrier ? " with" : " without")
                                  << " a barrier");
        const Program p = in_network_program(method_name(k.m), k.c, k.m, n, barrier);
        require_ok(p);
        CHECK(in_network_method(p) == k.m);
        for (const Operation& o : p.ops) CHECK(o.engine == Engine::CopyEngine);
        REQUIRE(read_program(write_program(p), "innet.prog") == p);
      }
  // Pull: a barrier, n reducing reads of which rank r's reads chunk r into
  // its output, then n multicasts, rank r's forwarding its read.
  const Program pull = in_network_program("pull", Collective::AllReduce, InNetMethod::Pull, 4, true);
  REQUIRE(pull.op_count(1) == 9);
  CHECK(pull.op(1, 0).kind == OpKind::Barrier);
  CHECK(pull.op(1, 2).dst == chunk(Buffer::Output, 1));
  CHECK(pull.op(1, 1).dst.empty());
  CHECK(pull.op(1, 6).src == chunk(Buffer::Output, 1));
  CHECK(pull.deps_of(pull.op(1, 6))[0] == 2);
  CHECK_THROWS_WITH(in_network_program("push", Collective::AllGather, InNetMethod::Push, 4, false),
                    "no in-network program for allgather by push");
  // A barrier moves no data.
  Program bad = pull;
  bad.ops[0].src = chunk(Buffer::Input, 0);
  REQUIRE(first_problem(bad) == "rank 0 operation 0 (barrier) is a barrier and names a chunk; a barrier moves no data");
}

namespace {
// A program of the NICs' tables: correct, compiled to tables whose messages
// are its sends, each in its timestep, and written and read back unchanged.
void require_nic_program(const Program& p) {
  INFO(p.name << " on " << p.ranks << " nodes");
  require_ok(p);
  const Schedule s = schedule_of(p);
  CHECK(s.algorithm == p.name);
  CHECK(s.nodes == p.ranks);
  CHECK(s.broadcast_root == (p.collective == Collective::Broadcast ? p.root : kNil));
  std::vector<std::array<int, 3>> sent, messages;  // (step, src, dst)
  for (int r = 0; r < p.ranks; ++r)
    for (int i = 0; i < p.op_count(r); ++i)
      if (p.op(r, i).kind == OpKind::Send) sent.push_back({p.op(r, i).timestep, r, p.op(r, i).send_peer});
  for (const Message& m : s.messages()) messages.push_back({m.step, m.src, m.dst});
  std::sort(sent.begin(), sent.end());
  std::sort(messages.begin(), messages.end());
  CHECK(sent == messages);
  const std::string text = write_program(p);
  const Program back = read_program(text, "nic.prog");
  CHECK(back == p);
  CHECK(write_program(back) == text);
}
}  // namespace

TEST_CASE("the NICs' algorithms are correct programs that compile to their tables and round-trip", "[programs][nic]") {
  require_nic_program(multitree_program(topo::make_torus(4, 4)));
  require_nic_program(multitree_program(topo::make_torus(4, 4), MultiTreeOptions{0, false}));
  require_nic_program(multitree_program(topo::make_mesh(3, 3)));
  require_nic_program(multitree_program(topo::make_fattree(16, 4)));
  for (int n : {2, 3, 8, 16}) {
    require_nic_program(nic_ring_program(n));
    require_nic_program(dbtree_program(n, 3));
    require_nic_program(dbtree_program(n, 1, false, false));
    require_nic_program(hd_program(n));
  }
  require_nic_program(ring2d_program(4, 2));
  require_nic_program(ring2d_hier_program(4, 2));
  require_nic_program(hdrm_program(4, 8));
  require_nic_program(tree_shares_program("blink", 16, one_hop_shares(16), 2, kNone));
  const Program bc = tree_shares_program("ring", 6, ring_shares(6, {{0, 2, 4, 1, 3, 5}}, false, 3), 2, 3);
  REQUIRE(bc.collective == Collective::Broadcast);
  REQUIRE(bc.root == 3);
  require_nic_program(bc);
  // Blink's hybrid broadcast on a DGX-1: dataflow issue and its link hints,
  // every pair's NVLinks (or PCIe) and the PCIe chain's channel.
  TreeSynthesisOptions o;
  o.platform = "dgx1v";
  o.allreduce = false;
  o.hybrid = true;
  o.chunks = 2;
  const Program hybrid = synthesize_trees(topo::make_dgx1(topo::Dgx1Gen::V100, {0, 1, 4}), 3, o).program;
  require_nic_program(hybrid);
  REQUIRE(hybrid.dataflow);
  REQUIRE(hybrid.links.size() == 2 * 3 * 2);
  const LinkHint& chain = hybrid.links.front();  // the PCIe chain's, on the last tree's channel
  REQUIRE(chain.channel == std::max_element(hybrid.ops.begin(), hybrid.ops.end(), [](const Operation& a, const Operation& b) {
                             return a.channel < b.channel;
                           })->channel);
  const std::string text = write_program(hybrid);
  CHECK_THAT(text, Catch::Contains("\ndataflow 1\nlink 0 to 1 ch ") && Catch::Contains("\nlink 0 to 1 ports ") &&
                       Catch::Contains("\nlink 0 to 1 ch " + std::to_string(chain.channel) + " ports " +
                                       std::to_string(chain.ports[0]) + "\n"));

  // What a table cannot hold is one sentence.
  Program p = nic_ring_program(4);
  p.ops[0].timestep = 0;
  CHECK_THROWS_WITH(schedule_of(p), "a NIC schedule table runs in lockstep steps: every operation needs its timestep");
  CHECK_THROWS_WITH(schedule_of(ring_program(Collective::AllReduce, 4)),
                    "a NIC schedule table holds table operations, not cores ones");
}

TEST_CASE("the checker holds link hints and dataflow issue to the NICs' tables, one hint per rank, peer and channel",
          "[programs][nic]") {
  Program cores = ring_program(Collective::AllReduce, 2);
  cores.dataflow = true;
  CHECK(first_problem(cores) ==
        "only the NICs' schedule tables read dataflow issue and link hints, and the program has cores operations");
  const Program ring = nic_ring_program(3);
  const auto with = [&](std::vector<LinkHint> links) {
    Program p = ring;
    p.links = std::move(links);
    return p;
  };
  require_ok(with({{0, 1, kNone, {0}}, {0, 1, 2, {1, 2}}, {1, 0, kNone, {0}}}));
  CHECK(first_problem(with({{0, 0, kNone, {0}}})) == "the link hint of rank 0 to rank 0 leads a rank to itself");
  CHECK(first_problem(with({{0, 3, kNone, {0}}})) == "the link hint of rank 0 to rank 3 names a rank out of range (3 ranks)");
  CHECK(first_problem(with({{0, 1, kNone, {}}})) == "the link hint of rank 0 to rank 1 names no port");
  CHECK(first_problem(with({{0, 1, 2, {0}}, {0, 1, 2, {1}}})) ==
        "the link hint of rank 0 to rank 1 on channel 2 is given twice");
  // A program placed on a rank mapping takes its hints along.
  const Program moved = relabel(with({{0, 1, 2, {5}}}), {2, 0, 1});
  require_ok(moved);
  REQUIRE(moved.links.size() == 1);
  CHECK(moved.links[0] == LinkHint{2, 0, 2, {5}});
  CHECK(moved.op(2, 0) == [&] {
    Operation o = ring.op(0, 0);
    o.send_peer = 0;
    return o;
  }());
}

TEST_CASE("NetReduce's algorithms as RoCE host programs are correct and round-trip", "[programs][netreduce]") {
  std::vector<Program> ps;
  for (int n : {2, 3, 6, 8}) {
    ps.push_back(netreduce_program(n));
    ps.push_back(roce_ring_program(n));
  }
  for (int machines : {2, 3, 4})
    for (int gpus : {2, 3, 8}) {
      ps.push_back(parallel_netreduce_program(machines, gpus));
      ps.push_back(tencent_program(machines, gpus));
    }
  for (const Program& p : ps) {
    INFO(p.name << " on " << p.ranks << " ranks");
    require_ok(p);
    for (const Operation& o : p.ops) CHECK(o.engine == Engine::RoceNic);
    REQUIRE(read_program(write_program(p), "roce.prog") == p);
  }
  // Parallel NetReduce on 2 machines of 4 GPUs: GPU 1 of machine 1 (rank 5)
  // runs the ring of its machine, its block's aggregation in group 1 (GPU 1
  // of both machines) once the reduce-scatter completes it, then sends it on.
  const Program pn = parallel_netreduce_program(2, 4);
  REQUIRE(pn.groups.size() == 4);
  CHECK(pn.groups[1] == std::vector<int>{1, 5});
  std::vector<OpKind> kinds;
  for (int i = 0; i < pn.op_count(5); ++i) kinds.push_back(pn.op(5, i).kind);
  CHECK(kinds == std::vector<OpKind>{OpKind::Send, OpKind::RecvReduceSend, OpKind::RecvReduceSend, OpKind::RecvReduceCopy,
                                     OpKind::Aggregate, OpKind::Send, OpKind::RecvCopySend, OpKind::RecvCopySend,
                                     OpKind::Recv});
  const Operation& agg = pn.op(5, 4);
  CHECK(agg.group == 1);
  CHECK(agg.channel == 2);
  CHECK(agg.src == pn.op(5, 3).dst);
  REQUIRE(agg.dep_count == 1);
  CHECK(pn.deps_of(agg)[0] == 3);
  CHECK(pn.deps_of(pn.op(5, 5))[0] == 4);
  CHECK(pn.op(5, 1).send_peer == 6);
  CHECK(pn.op(5, 1).recv_peer == 4);
  // Tencent on 2 machines of 3 GPUs: lcm(2, 3) = 6 chunks; the masters'
  // ring moves 3 of them at a time, the chain all 6.
  const Program t = tencent_program(2, 3);
  CHECK(t.buffers[0].input == 6);
  bool masters = false, chain = false;
  for (int i = 0; i < t.op_count(3); ++i) {
    const Operation& o = t.op(3, i);
    masters |= o.channel == 2 && o.src.count == 3;
    chain |= o.channel == 1 && o.src.count == 6;
  }
  CHECK(masters);
  CHECK(chain);
  for (int i = 0; i < t.op_count(4); ++i) CHECK(t.op(4, i).channel == 1);  // GPU 1 never leaves its machine
}

namespace {
const std::string kSrcDst = std::string(TEST_DATA) + "/msccl_src_dst_3.xml";
}  // namespace

TEST_CASE("MSCCL's receive-reduce steps add what arrives to their src and write their dst, as its runtime does",
          "[msccl]") {
  // msccl_interpreter.h: recvReduceSend(src), recvReduceCopy(src, dst), recvReduceCopySend(src, dst).
  const Program p = read_msccl_file(kSrcDst);
  for (int r = 0; r < 3; ++r) {
    const Operation& rrs = p.op(r, 1);
    REQUIRE(rrs.kind == OpKind::RecvReduceSend);
    CHECK(rrs.src == chunk(Buffer::Input, static_cast<uint32_t>((r + 1) % 3)));
    CHECK(rrs.dst.empty());  // the XML's dst (scratch 0) is unused, as in the runtime
    const Operation& rrc = p.op(r, 2);
    REQUIRE(rrc.kind == OpKind::RecvReduceCopy);
    CHECK(rrc.src == chunk(Buffer::Input, static_cast<uint32_t>(r)));
    CHECK(rrc.dst == chunk(Buffer::Output, static_cast<uint32_t>(r)));
  }
  const ProgramCheck c = check_program(p);
  INFO(c.report());
  REQUIRE(c.ok());
  CHECK(c.summary == "each rank's result holds each element of every rank exactly once");
  // rrcs: reduce into dst and send dst on, in place of rrc and s.
  std::string xml = read_text_file(kSrcDst, "test file");
  for (int r = 0; r < 3; ++r) {
    const std::string o = std::to_string(r);
    xml = replaced(xml, "type=\"rrc\" srcbuf=\"i\" srcoff=\"" + o + "\"", "type=\"rrcs\" srcbuf=\"i\" srcoff=\"" + o + "\"");
    xml = replaced(xml, "<step s=\"3\" type=\"s\"", "<step s=\"3\" type=\"nop\"");
  }
  const Program q = read_msccl_xml(xml, "rrcs.xml");
  CHECK(q.op(1, 2).kind == OpKind::RecvReduceCopySend);
  CHECK(q.op(1, 2).src == chunk(Buffer::Input, 1));
  CHECK(q.op(1, 2).dst == chunk(Buffer::Output, 1));
  require_ok(q);
  // Reducing with dst, as incsim once read these steps, adds to a chunk
  // that holds nothing: the checker refuses the file written that way.
  const std::string with_dst = replaced(read_text_file(kSrcDst, "test file"),
                                        "type=\"rrc\" srcbuf=\"i\" srcoff=\"0\"", "type=\"rrc\" srcbuf=\"o\" srcoff=\"0\"");
  CHECK(first_problem(read_msccl_xml(with_dst, "dst.xml")) ==
        "rank 0 operation 2 (rrc) reads output chunk 0, which holds nothing yet");
}

TEST_CASE("an MSCCL dependency waits for the step after which the runtime signals: the first with hasdep", "[msccl]") {
  const std::string xml = read_text_file(kAllPairs, "test file");
  // gpu 0 tb 0 step 0 depends on tb 1 step 1, which has hasdep="1".
  const std::string tb1_step1 =
      "<step s=\"1\" type=\"r\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"1\"/>";
  const std::string tb1_step3 =
      "<step s=\"3\" type=\"r\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"i\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>";
  const Program p = read_msccl_xml(xml, "a.xml");
  REQUIRE(p.op(0, 0).dep_count == 1);
  CHECK(p.deps_of(p.op(0, 0))[0] == 3 + 1);  // tb 1 starts at operation 3
  // Without hasdep there, the runtime's flag passes step 1 only after step
  // 3 signals: the dependency is on step 3, which waits (through tb 1's own
  // step 2) for tb 0: the runtime would hang, and the checker says why.
  const std::string later = replaced(replaced(xml, tb1_step1, replaced(tb1_step1, "hasdep=\"1\"", "hasdep=\"0\"")),
                                     tb1_step3, replaced(tb1_step3, "hasdep=\"0\"", "hasdep=\"1\""));
  const Program q = read_msccl_xml(later, "later.xml");
  CHECK(q.deps_of(q.op(0, 0))[0] == 3 + 3);
  CHECK(first_problem(q) == "rank 0's operations 0, 1, 2, 5, 6 wait for each other in a cycle");
  // No step signals at or after it: refused, naming the file and line.
  CHECK(refusal(replaced(xml, tb1_step1, replaced(tb1_step1, "hasdep=\"1\"", "hasdep=\"0\""))) ==
        "bad.xml:8: gpu 0 tb 0 step 0: depends on tb 1 step 1, and neither it nor a later step of tb 1 has "
        "hasdep=\"1\": MSCCL's runtime signals a thread block's progress only after such a step, so this one would "
        "wait forever");
  // The runtime reads hasdep on every step.
  CHECK(refusal(replaced(xml, " hasdep=\"0\"/>", "/>")) == "bad.xml:8: gpu 0 tb 0 step 0: has no attribute hasdep");
}

TEST_CASE("two MSCCL thread blocks on one connection are refused, naming the file and line", "[msccl]") {
  try {
    read_msccl_file(std::string(TEST_DATA) + "/msccl_shared_connection_3.xml");
    FAIL("accepted");
  } catch (const UserError& e) {
    CHECK_THAT(e.what(), Catch::EndsWith(
                             "msccl_shared_connection_3.xml:12: gpu 0: thread blocks 0 and 1 both send to gpu 1 on "
                             "channel 0, one connection, which MSCCL's runtime does not order between thread blocks "
                             "(what arrives where is undefined); give each its own channel"));
  }
}

TEST_CASE("the MSCCL reader refuses malformed and outsized XML in one sentence, without recursion", "[msccl]") {
  // 50,000 nested elements: a depth cap, not a stack overflow.
  const std::string head =
      "<algo name=\"x\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" ngpus=\"1\" coll=\"allreduce\">\n";
  std::string deep = head;
  for (int i = 0; i < 50000; ++i) deep += "<x>";
  CHECK(refusal(deep) == "bad.xml:2: elements are nested more than 64 deep; an algorithm's are 4 (algo, gpu, tb, step)");
  const std::pair<std::string, std::string> cases[] = {
      {"", "bad.xml:1: has no <algo> element"},
      {"<algo", "bad.xml:1: <algo> is never closed"},
      {"<algo name=x>", "bad.xml:1: attribute name's value is not in quotes"},
      {"<algo name=\"x>", "bad.xml:1: attribute name's value is never closed"},
      {"<algo a=\"1\" a=\"2\"/>", "bad.xml:1: <algo> has attribute a twice"},
      {"<!-- a comment\n", "bad.xml:1: a comment is never closed"},
      {head + "<x>\n</tb>", "bad.xml:3: </tb> closes <x> (line 2)"},
      {head + "<x>\n", "bad.xml:3: the file ends inside <x> (line 2)"},
      {"<!DOCTYPE algo>", "bad.xml:1: a <! declaration (DOCTYPE, ENTITY) is not part of an MSCCL algorithm"},
      {"<algo name=\"&bogus;\">", "bad.xml:1: attribute name's value holds '&bogus', which is no entity an algorithm uses"},
      {"<tb/>", "bad.xml:1: its top element is <tb>, not <algo>"}};
  for (const auto& [xml, sentence] : cases) {
    INFO(xml);
    CHECK(refusal(xml) == sentence);
  }
  // Over 64 MiB: refused from its size, before a byte is read.
  TempDir d;
  const std::string big = d.file("big.xml");
  std::filesystem::resize_file(d.write("big.xml", ""), (std::uintmax_t{64} << 20) + 1);
  try {
    read_msccl_file(big);
    FAIL("accepted");
  } catch (const UserError& e) {
    CHECK_THAT(e.what(), Catch::StartsWith("MSCCL algorithm file " + big + " is 64.0 MiB; a MSCCL algorithm file is at most 64 MiB"));
  }
}

TEST_CASE("a 200,000-step MSCCL algorithm reads and checks in time linear in its steps", "[msccl]") {
  // Two GPUs exchange 50,000 chunks, each sent and reduced in turn. The
  // checker's sweeps and the reader's lookups were quadratic (100,000
  // steps: 21 s); ctest's time limit guards what this cannot assert.
  const int k = 50000;
  std::string xml = "<algo name=\"big\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"" + std::to_string(k) +
                    "\" ngpus=\"2\" coll=\"allreduce\" inplace=\"1\">\n";
  for (int g = 0; g < 2; ++g) {
    xml += "<gpu id=\"" + std::to_string(g) + "\" i_chunks=\"" + std::to_string(k) + "\" o_chunks=\"0\" s_chunks=\"0\">\n";
    xml += "<tb id=\"0\" send=\"" + std::to_string(1 - g) + "\" recv=\"" + std::to_string(1 - g) + "\" chan=\"0\">\n";
    for (int c = 0; c < k; ++c)
      for (const char* type : {"s", "rrc"})
        xml += "<step s=\"" + std::to_string(2 * c + (type[0] == 'r')) + "\" type=\"" + type + "\" srcbuf=\"i\" srcoff=\"" +
               std::to_string(c) + "\" dstbuf=\"i\" dstoff=\"" + std::to_string(c) +
               "\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n";
    xml += "</tb>\n</gpu>\n";
  }
  xml += "</algo>\n";
  const Program p = read_msccl_xml(xml, "big.xml");
  CHECK(p.ops.size() == 4 * static_cast<size_t>(k));
  require_ok(p);
}

TEST_CASE("what any algorithm moves across a cut, per byte of the message", "[bound]") {
  using collectives::Collective;
  CHECK(collectives::cut_crossing(Collective::AllReduce, 8, 3, 5, false) == 1);
  CHECK(collectives::cut_crossing(Collective::ReduceScatter, 8, 3, 5, false) == Approx(5.0 / 8));
  CHECK(collectives::cut_crossing(Collective::AllGather, 8, 3, 5, false) == Approx(3.0 / 8));
  CHECK(collectives::cut_crossing(Collective::AllToAll, 8, 2, 6, false) == Approx(2 * 6.0 / 8));
  CHECK(collectives::cut_crossing(Collective::Broadcast, 8, 2, 6, true) == 1);
  CHECK(collectives::cut_crossing(Collective::Broadcast, 8, 6, 2, false) == 0);
  CHECK(collectives::cut_crossing(Collective::Gather, 8, 6, 2, false) == Approx(6.0 / 8));
  CHECK(collectives::cut_crossing(Collective::AllReduce, 8, 0, 8, false) == 0);
}
