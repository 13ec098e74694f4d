#pragma once
// Algorithms synthesized as Programs (docs/programs.md). Plain C++, no SystemC.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectives/program.h"

namespace incsim::collectives {

// NCCL's ring (src/device/all_reduce.h, reduce_scatter.h, all_gather.h) on
// `channels` rings over the same order (order[i] is the rank at ring
// position i; empty: 0, 1, ..., n - 1), each channel one queue of the
// GPU's cores. Chunk b * channels + c is rank b's block on channel c:
//  - all-reduce: n * channels input chunks; step 0 sends the position's own
//    block, then n - 2 recv-reduce-sends, a recv-reduce-copy-send that
//    completes a block, n - 2 recv-copy-sends and a final receive;
//  - reduce-scatter: n * channels input chunks, `channels` output chunks;
//    send, n - 2 recv-reduce-sends, then a recv-reduce-copy of the own block;
//  - all-gather: `channels` input chunks; a copy of the own input into the
//    output (out of place), send, n - 2 recv-copy-sends, a final receive;
//  - broadcast: `channels` chunks down the ring from the root's position
//    (a chain: the last rank only receives);
//  - reduce: `channels` chunks up the chain that ends at the root, as
//    NCCL's ring reduce runs it (src/device/reduce.h): the rank after the
//    root sends its input, the next ones receive, add theirs and send, the
//    root receives, adds its own and writes its output.
Program ring_program(Collective c, int n, int channels = 1, const std::vector<int>& order = {},
                     bool in_place = false, int root = 0);
// NCCL's all-to-all (nccl-tests' alltoall: ncclSend and ncclRecv to every
// peer in one group; NCCL's p2p schedule, src/init.cc, sends in round k to
// rank + k and receives from rank - k) on `channels` channels: every
// peer's block is split over the channels, chunk j * channels + c being
// rank j's part on channel c. On channel c a rank copies its own part and
// sends to and receives from each peer, each peer's send and receive a
// queue of their own (NCCL's thread block gives each peer of its batch its
// own warps, sending and receiving at once): the send of round k, to
// rank + k, on queue 2((n - 1)c + i) and the receive from rank - k on the
// next, with k = (c + i) mod (n - 1) + 1, so that channel c starts at round
// c + 1 as NCCL spreads its rounds over the channels. The copy comes first
// on queue 2(n - 1)c.
Program alltoall_program(int n, int channels);
// NCCL's symmetric kernels (nccl_tuning.h, SymKernel) as stores between
// peers, on `channels` thread blocks, channel c the chunk c of each block
// of a buffer. A peer's data lands in scratch on a queue per peer (NCCL's
// threads poll or load every peer at once), then one queue adds it in,
// rank - 1's first:
//  - one-shot (AGxLL_R): each GPU sends its chunk to every peer and adds
//    what it receives from each into its output;
//  - direct: for a reduce-scatter (ReduceScatter_LL, _LD) each GPU sends
//    peer j the peer's block and adds its peers' parts of its own; for an
//    all-gather (AllGather_LL, _ST) sends its block to every peer; an
//    all-reduce (RSxLD_AGxST) does the one, then the other with the sum.
//    NCCL's LD kernels load from the peers; here the peers store, the same
//    bytes on the same links without a load's request.
Program oneshot_allreduce_program(int n, int channels, Protocol p);
Program direct_program(Collective c, int n, int channels, Protocol p);
// Gather and scatter as nccl-tests builds them (grouped ncclSend and
// ncclRecv between the root and every rank): gather sends each rank's
// input to the root's output window of that rank, scatter the root's
// input window r to rank r; the root's own window is a local copy (none in
// place). Each peer's block is split over `channels` channels, chunk
// j * channels + c its part on channel c, and each peer of the root has a
// queue of its own per channel, as in the all-to-all.
Program gather_scatter_program(Collective c, int n, int channels, int root, bool in_place = false);
// The same with a ring order per channel (orders[c] for channel c; an empty
// one is 0, 1, ..., n - 1): NCCL's rings on a cluster, which leave and enter
// each node through a different GPU's adapter per channel.
Program ring_program(Collective c, int n, std::vector<std::vector<int>> orders, bool in_place = false, int root = 0);
// NCCL's rings over a rail-optimised cluster of `nodes` nodes of `per_node`
// GPUs each (rank k * per_node + g is GPU g of node k): channel c visits
// every node's GPUs in turn from GPU c mod per_node on, so it leaves node k
// from GPU (c - 1) mod per_node's adapter and enters node k + 1 at GPU
// c mod per_node's: over the channels, every adapter sends and receives an
// equal share.
Program cluster_ring_program(Collective c, int nodes, int per_node, int channels);
// A hierarchical all-reduce on such a cluster: each node's ring
// on `channels` channels reduce-scatters its data; where the reduce-scatter
// completes GPU g's block on a channel, a ring over GPU g of every node (its
// rail) all-reduces that block (on channel channels + c); then the node's
// ring all-gathers the sums. Each GPU sends as much as on the flat ring,
// but only (N - 1) / (N G - 1) of it to other nodes, all on its own rail.
Program hierarchical_ring_program(int nodes, int per_node, int channels);
// NCCL's CollNet with the node's rings: the same reduce-scatter and
// all-gather, and between them every GPU pushes its block to its rail's
// leaf (a reducing write, SHARP; group per rail and channel, queue
// channels + c), which adds the nodes' and sends the sum back to each.
// NCCL's CollNetDirect reduce-scatters and all-gathers within the node
// directly, every GPU to every other, where this keeps the ring.
Program collnet_program(int nodes, int per_node, int channels);
// SHARP alone, for n GPUs of different nodes on one rail (a --tp run's
// data-parallel groups): on channel c (queue c) each copies chunk c of its
// input to its output and pushes it to the rail's leaf switches (a reducing
// write, a group per channel), which add every GPU's and send the sum back
// into the same chunk: NCCL's CollNet with one GPU per node.
Program sharp_program(int n, int channels);

// NCCL's tree all-reduce (src/device/all_reduce.h, runTreeSplit), one tree
// per channel: trees[c][r] lists rank r's parent on channel c (kNone at the
// root) and its children. Chunk c of the buffer is channel c's. A rank's
// reduce (queue 2c) receives and adds its children's sums (a scratch chunk
// holds the partial sum between two receives, where NCCL receives from all
// children at once) and sends up; its broadcast (queue 2c + 1) receives the
// sum from the parent and sends it down, so both run at once, pass after
// pass, as NCCL's two thread groups do. The root receives, reduces and sends
// back down on one queue (NCCL's recvReduceCopySend).
struct TreeNode {
  int parent = kNone;
  std::vector<int> children;
};
Program tree_program(int n, const std::vector<std::vector<TreeNode>>& trees);
// NCCL's trees over a rail-optimised cluster (src/graph/connect.cc,
// trees.cc): channel c's chain runs through every node's GPUs from GPU
// (c / 2) mod per_node on, and the chains' first GPUs, one per node and all
// on the same rail, form NCCL's double binary tree over the nodes (tree 0
// on even channels, tree 1, mirrored or shifted, on odd ones; NCCL numbers
// them c and c + C/2). The first GPU of a chain talks to the other nodes
// (NCCL's NCCL_TOPO_PATTERN_TREE).
Program cluster_tree_program(int nodes, int per_node, int channels);
// NCCL's NVLSTree all-reduce (src/device/all_reduce.h, NCCL_ALGO_NVLS_TREE)
// over `nodes` nodes of `per_node` GPUs, on the GPUs' cores: GPU h of each
// node is the head of chunk h C + c of channel c. On queue 2c it reads its
// chunk's node sum with one reducing read of the node's inputs (NVLS's
// multimem.ld_reduce; group k is node k) and all-reduces it with the GPU h
// of the other nodes over NCCL's double binary tree (tree 0 on even
// channels, tree 1 on odd ones): every inter-node byte stays on rail h. On
// queue 2c + 1 it takes the total from its parent, sends it to its
// children and multicasts it to its node (multimem.st). multimem: the
// switches read and write the head's own copy too (Program::multimem).
Program nvls_tree_program(int nodes, int per_node, int channels, bool multimem);
// NVLS inside each node and a ring per rail across the nodes (hring with
// NVLS in place of the node's rings; NCCL has no such algorithm, its NVLS
// crosses nodes by CollNet or its trees): GPU h heads block h C + c of
// channel c, N chunks; it reads the block's node sum (multimem.ld_reduce,
// queue 2c), all-reduces it in place by a ring of GPU h of every node
// (channel C + c, queue 2C + c), and multicasts the total to its node
// (multimem.st, queue 2c + 1).
Program nvls_ring_program(int nodes, int per_node, int channels, bool multimem);
// NCCL's NVLS across nodes with SHARP (NCCL_ALGO_NVLS with CollNet, the
// default on a SuperPOD whose InfiniBand switches aggregate): GPU h heads
// block h C + c of channel c; on queue 2c it reads the block's node sum into
// its output (multimem.ld_reduce), then pushes it to its rail's leaf, where
// the switch adds the nodes' sums and multicasts the total back to every
// GPU h (a reducing write, group per rail and channel: its host-side credits
// are per queue); on queue 2c + 1 it multicasts the total to its node
// (multimem.st).
Program nvls_sharp_program(int nodes, int per_node, int channels, bool multimem);
// NCCL's NVLS on one node's n GPUs, on their cores (NCCL_ALGO_NVLS): on
// channel c, GPU h reads chunk h C + c's sum with one reducing read
// (multimem.ld_reduce) and, for all-reduce, multicasts it (multimem.st);
// all-gather is each GPU's multicast of its chunks.
Program nvls_program(Collective c, int n, int channels, bool multimem);
// NCCL's chunk for NVLS (src/enqueue.cc, NCCL_ALGO_NVLS): at most 128 KiB of
// a step, cut to 64, 32 and 16 KiB while the message is smaller than 64, 8
// and 2 times that chunk on each of the `concurrent_ops` (channels x heads).
uint64_t nvls_chunk_bytes(uint64_t bytes, uint64_t concurrent_ops, uint64_t step);
// NCCL's chunk for its tree over `nodes` nodes of `ranks` (src/enqueue.cc),
// in data bytes, from one step of the protocol's buffer (`step` data bytes),
// so that small messages still fill the tree's pipeline. Simple (NCCL up
// to 2.19; 2.20 dropped it and keeps the step): with depth D = ranks /
// nodes - 1 + log2 nodes, halved while each of the `channels` would get
// fewer than 8 D chunks (down to 128 KiB), 4 D (down to 64 KiB) or D (down
// to 32 KiB). LL128: with s = 1 + log2 nodes + 0.1 ppn (ppn =
// ranks / nodes), its wire bytes halved while fewer than 64 s / ppn chunks
// (down to 128 KiB) or 16 s / ppn (down to 32 KiB). LL: the step.
uint64_t tree_chunk_bytes(Protocol p, uint64_t bytes, int channels, int ranks, int nodes, uint64_t step);
// NCCL's chunk for NVLSTree over `nodes` nodes (src/enqueue.cc,
// NCCL_ALGO_NVLS_TREE): NVLS's 128 KiB chunk (at most one step), 64 KiB
// from 4 nodes on (NCCL_NVLSTREE_MAX_CHUNKSIZE's default), cut to 256 KiB,
// 128, 64 or 32 KiB while the message is smaller than 32, 16, 4 or 1 times
// that chunk on each of the `concurrent_ops` (channels x heads) chunks a
// pass moves.
uint64_t nvls_tree_chunk_bytes(uint64_t bytes, uint64_t concurrent_ops, uint64_t step, int nodes);

// Klenk's in-network collectives (§IV) as copy-engine programs over one group
// of all n ranks:
//  - Push, all-reduce: every rank a reducing write of its whole input (1
//    chunk) into the switches' tables; the sums land in every output;
//  - Pull, all-reduce: a barrier if asked (§VI-A: without it a pull may read
//    stale data), then rank r's reducing read of chunk r of every input into
//    its output and its multicast of that to the others (n chunks): NVLS's
//    all-reduce, multimem ld_reduce then st;
//  - Pull, reduce-scatter: the same without the multicast;
//  - Multicast, all-gather: rank r copies its input to output chunk r and
//    multicasts it to the others; broadcast: rank 0 multicasts its input.
// Every rank lists the group's operations in the same order, so the k-th of
// one meets the k-th of the others.
enum class InNetMethod : uint8_t { Push, Pull, Multicast };
const char* method_name(InNetMethod m);  // push, pull, multicast
// How a program uses the switches: Pull if it reads through them, else Push
// if it reduces in their tables, else Multicast if it multicasts; none if it
// has no in-network operation.
std::optional<InNetMethod> in_network_method(const Program& p);
Program in_network_program(const std::string& name, Collective c, InNetMethod m, int n, bool barrier);

// NetReduce (§3) as programs of the RoCE hosts (Engine::RoceNic), all-reduce
// in place, one chunk per ring rank:
//  - netreduce: every rank aggregates its whole buffer in group 0, channel
//    0 (a group lists its ranks in ring order: each sends to its successor
//    and receives the results from its predecessor, §3.1);
//  - flat ring: ring_program on the hosts, channel 0;
//  - Parallel NetReduce (§3.4, Fig. 6B), rank m * per_machine + i being GPU
//    i of machine m: the ring inside each machine (channel 1), whose
//    reduce-scatter's last receive completes the GPU's block; that block is
//    aggregated across the machines in group i (GPU i of every machine,
//    channel 2); the ring's all-gather then sends it on, and forwards the
//    other GPUs' blocks as they come, each on a queue of its own (they
//    overtake the GPU's own block, which waits for the machines' sum);
//  - Tencent's (Fig. 6A): the ring all-reduce inside each machine (channel
//    1), then among the machines' GPU 0 (channel 2), then a chain broadcast
//    from GPU 0 down the machine's ring (channel 1).
Program netreduce_program(int n);
Program roce_ring_program(int n);
Program parallel_netreduce_program(int machines, int per_machine);
Program tencent_program(int machines, int per_machine);

}  // namespace incsim::collectives
