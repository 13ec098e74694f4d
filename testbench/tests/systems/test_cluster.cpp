// A multi-node cluster (docs/modern-machines.md, "Clusters"): HGX H100
// nodes whose GPUs reach the other nodes through their InfiniBand adapters
// on a rail-optimised network. NCCL's rings across the nodes are exact for
// every collective, each adapter carries the bytes the rings predict, and a
// wrong sum in one GPU of one node is counted.
#include <catch2/catch.hpp>

#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "experiment.h"
#include "adapter/hca.h"
#include "nvswitch/nvswitch.h"
#include "options.h"
#include "platforms/infiniband_fabric.h"
#include "run_checked.h"
#include "temp_file.h"

using namespace incsim;

namespace {
tb::Options cluster(int nodes, const std::string& collective, const std::string& sizes, const std::string& dtype = "float",
                    const std::string& redop = "sum") {
  tb::Options o = tb::run_options("cluster", collective, "ring", sizes, {}, dtype, redop);
  o.nodes = nodes;
  return o;
}
// NVLSTree on 2 nodes.
tb::Options nvlstree(const std::string& sizes, const std::string& dtype = "float", const std::string& redop = "sum",
                     const tb::KeyValues& params = {}) {
  tb::Options o = cluster(2, "allreduce", sizes, dtype, redop);
  o.algorithm = "nvlstree";
  tb::set_params(o, params);
  return o;
}
// NCCL's NVLS with SHARP across 2 nodes.
tb::Options nvlssharp(const std::string& sizes, const std::string& dtype = "float", const std::string& redop = "sum",
                      const tb::KeyValues& params = {}) {
  tb::Options o = nvlstree(sizes, dtype, redop, params);
  o.algorithm = "nvlssharp";
  return o;
}
// The byte counts below are the Simple protocol's (data, then an 8-byte
// flag); a cluster of hgx-h100 nodes picks the protocol by size otherwise.
tb::Options simple(tb::Options o) {
  tb::set_params(o, {{"ring.protocol", "simple"}});
  return o;
}
}  // namespace

TEST_CASE("cluster: the rings' all-reduce is exact and every adapter sends the share the rings predict", "[cluster]") {
  // 2 nodes of 8 GPUs, 16 rings: n = 16 ranks, each ring a sixteenth of M.
  constexpr uint64_t m = 1 << 20;
  tb::Experiment e(simple(cluster(2, "allreduce", "1M")));
  const auto rows = tb::run_checked(e, "cluster ring");
  // The row says how busy the busiest link of each network was.
  REQUIRE(rows.size() == 1);
  for (const char* col : {"nvlink_busiest", "network_busiest"}) {
    CHECK(rows[0][col] > 0.05);
    CHECK(rows[0][col] <= 1.0);
  }
  std::ostringstream held;
  e.machine().report_held(held);
  CHECK(held.str() == "");
  CHECK(e.machine().pool().in_use() == 0);
  const auto hcas = e.machine().blocks_of<adapter::Hca>();
  REQUIRE(hcas.size() == 16);
  // Ring c leaves each node from GPU (c - 1) mod 8 and enters the next at
  // GPU c mod 8: each adapter is the exit of 2 rings, whose edge carries
  // 2 (n - 1) blocks of M / (16 n) bytes, each followed by its 8-byte flag,
  // and the entry of 2, whose receiver frees each block's slot with an
  // 8-byte flag back across.
  constexpr uint64_t n = 16, rings_per_adapter = 2;
  constexpr uint64_t data = rings_per_adapter * 2 * (n - 1) * (m / 16 / n);
  constexpr uint64_t flags = 2 * rings_per_adapter * 2 * (n - 1) * 8;
  for (const adapter::Hca* h : hcas) {
    INFO(h->name());
    CHECK(h->payload_sent() == data + flags);
    CHECK(h->writes_delivered() > 0);
  }
}

TEST_CASE("cluster: reduce-scatter is exact across nodes", "[cluster]") {
  tb::Experiment e(cluster(2, "reducescatter", "64K,1000000"));
  tb::run_checked(e, "reduce-scatter");
}
TEST_CASE("cluster: all-gather is exact across nodes", "[cluster]") {
  tb::Experiment e(cluster(2, "allgather", "64K,1000000"));
  tb::run_checked(e, "all-gather");
}
TEST_CASE("cluster: a 16-bit max all-reduce is exact across nodes", "[cluster]") {
  tb::Experiment e(cluster(2, "allreduce", "4,256K,1000000", "half", "max"));
  tb::run_checked(e, "half max");
}

TEST_CASE("cluster: NCCL's LL128 is exact across nodes", "[cluster]") {
  // Its 128-byte lines carry their flags: each must land in one write, as it was sent.
  tb::Options o = cluster(2, "allreduce", "64K,1M");
  tb::set_params(o, {{"ring.protocol", "ll128"}});
  tb::Experiment e(o);
  tb::run_checked(e, "ll128");
}
TEST_CASE("cluster: NCCL's LL is exact across nodes", "[cluster]") {
  tb::Options o = cluster(2, "allreduce", "64K,100000");
  tb::set_params(o, {{"ring.protocol", "ll"}});
  tb::Experiment e(o);
  tb::run_checked(e, "ll");
}

TEST_CASE("cluster: a wrong sum in one GPU of the second node is counted", "[cluster]") {
  CHECK(tb::wrong_with_alu_fault(cluster(2, "allreduce", "256K"), "n1_gpu3.cores", 10) == 10 * 16);
}

TEST_CASE("cluster: 4 nodes, the rings cross the spines and every rail carries the same", "[cluster]") {
  tb::Experiment e(simple(cluster(4, "allreduce", "1M")));
  tb::run_checked(e, "4 nodes");
  const auto hcas = e.machine().blocks_of<adapter::Hca>();
  REQUIRE(hcas.size() == 32);
  // n = 32: each adapter the exit of 2 rings (data and flags) and the entry of 2 (slot flags).
  constexpr uint64_t m = 1 << 20, n = 32;
  for (const adapter::Hca* h : hcas)
    CHECK(h->payload_sent() == 2 * 2 * (n - 1) * (m / 16 / n) + 2 * 2 * 2 * (n - 1) * 8);
}

TEST_CASE("cluster: adaptive routing over shared spines reorders a connection's packets, and the adapters put them "
          "back in sequence", "[cluster]") {
  // Half the spines (2:1): the rings' connections meet on the leaves' up-links.
  tb::Options o = simple(cluster(4, "allreduce", "1M"));
  tb::set_params(o, {{"cluster.oversubscription", "2"}});
  tb::Experiment e(o);
  tb::run_checked(e, "4 nodes at 2:1");
  uint64_t reordered = 0;
  for (const adapter::Hca* h : e.machine().blocks_of<adapter::Hca>()) reordered += h->reordered();
  INFO(reordered << " packets reordered");
  CHECK(reordered > 0);
}

TEST_CASE("cluster: the hierarchical ring is exact and keeps each GPU's traffic on its rail", "[cluster]") {
  constexpr uint64_t m = 1 << 20, nodes = 2, g = 8, channels = 16;
  tb::Options o = simple(cluster(2, "allreduce", "1M"));
  o.algorithm = "hring";
  tb::Experiment e(o);
  tb::run_checked(e, "hring");
  // Each GPU's block on each channel, M / (G C), is all-reduced by a ring of
  // the N GPUs of its rail: 2 (N - 1) pieces of M / (G C N), each with its
  // flag and its slot's flag back.
  constexpr uint64_t data = channels * 2 * (nodes - 1) * (m / g / channels / nodes);
  constexpr uint64_t flags = channels * 2 * 2 * (nodes - 1) * 8;
  for (const adapter::Hca* h : e.machine().blocks_of<adapter::Hca>()) CHECK(h->payload_sent() == data + flags);
  // Nothing crosses from one rail to another.
  for (const auto& end : e.machine().link_ends())
    if (end.from.rfind("spine", 0) == 0 || end.to.rfind("spine", 0) == 0) CHECK(end.port->bytes_sent() == 0);
}

TEST_CASE("cluster: NCCL's trees are exact and keep every byte between nodes on its rail", "[cluster]") {
  constexpr uint64_t m = 1 << 20, channels = 16;
  tb::Options o = simple(cluster(2, "allreduce", "1M"));
  o.algorithm = "tree";
  tb::Experiment e(o);
  tb::run_checked(e, "tree");
  // Channels 2k and 2k + 1 run their chains from GPU k, whose adapter joins
  // the node to the other: tree 0 from node 0's root down to node 1, tree 1
  // the mirror. Each adapter sends one channel's M / C up and one's down, in
  // NCCL's tree chunks (2 levels of 8 GPUs: depth 8, so 1 MiB over 16
  // channels is 32 KiB chunks, 2 per channel), each with its 8-byte flag,
  // and frees the slot of each chunk it receives with a flag back.
  constexpr uint64_t passes = m / channels / (32 * 1024);
  for (const adapter::Hca* h : e.machine().blocks_of<adapter::Hca>()) {
    INFO(h->name());
    CHECK(h->payload_sent() == 2 * (m / channels + passes * (8 + 8)));
  }
  for (const auto& end : e.machine().link_ends())
    if (end.from.rfind("spine", 0) == 0 || end.to.rfind("spine", 0) == 0) CHECK(end.port->bytes_sent() == 0);
}

TEST_CASE("cluster: NCCL's trees over 4 nodes are exact and cross the network 2(N-1) times per channel", "[cluster]") {
  constexpr uint64_t m = 1 << 20, channels = 16, nodes = 4;
  tb::Options o = simple(cluster(4, "allreduce", "1M"));
  o.algorithm = "tree";
  tb::Experiment e(o);
  tb::run_checked(e, "tree");
  // A channel's tree over the nodes has N - 1 edges, each carrying the
  // channel's M / C up and down; depth 7 + 2 = 9 cuts 64 KiB per channel into 2 chunks of 32 KiB.
  constexpr uint64_t passes = 2;
  uint64_t sent = 0;
  for (const adapter::Hca* h : e.machine().blocks_of<adapter::Hca>()) sent += h->payload_sent();
  CHECK(sent == channels * 2 * (nodes - 1) * (m / channels + passes * (8 + 8)));
  for (const auto& end : e.machine().link_ends())
    if (end.from.rfind("spine", 0) == 0 || end.to.rfind("spine", 0) == 0) CHECK(end.port->bytes_sent() == 0);
}

TEST_CASE("cluster: a wrong sum on a tree's chain is counted", "[cluster]") {
  tb::Options o = cluster(2, "allreduce", "256K");
  o.algorithm = "tree";
  CHECK(tb::wrong_with_alu_fault(o, "n1_gpu3.cores", 10) == 10 * 16);
}

TEST_CASE("cluster: NCCL's trees are exact under LL and LL128, whose queues send to peers behind different ports",
          "[cluster]") {
  // By size (the default here): LL at 8 KiB, LL128 above. A chain's first GPU
  // sends down its chain over NVLink and to other nodes through its adapter
  // from one queue, starting the next transfer with no fence after the last.
  tb::Options o = cluster(2, "allreduce", "8K,256K,1M");
  o.algorithm = "tree";
  tb::Experiment e(o);
  tb::run_checked(e, "tree ll, ll128");
}

TEST_CASE("cluster: NVLSTree is exact and each adapter carries its head's share up or down its rail's tree",
          "[cluster][nvls]") {
  constexpr uint64_t m = 1 << 20, g = 8, channels = 16;
  tb::Experiment e(nvlstree("1M"));
  tb::run_checked(e, "nvlstree");
  std::ostringstream held;
  e.machine().report_held(held);
  CHECK(held.str() == "");
  // GPU h of each node heads chunk h C + c of each channel c, M / (G C): the
  // child node's head sends its node's sum up, the root's sends the total
  // down, each with its 8-byte flag, and each frees the slot of the chunk it
  // received with an 8-byte flag back. 1 MiB is one pass (NCCL's 32 KiB chunks).
  for (const adapter::Hca* h : e.machine().blocks_of<adapter::Hca>()) {
    INFO(h->name());
    CHECK(h->payload_sent() == channels * (m / g / channels + 8 + 8));
  }
  for (const auto& end : e.machine().link_ends())
    if (end.from.rfind("spine", 0) == 0 || end.to.rfind("spine", 0) == 0) CHECK(end.port->bytes_sent() == 0);
}

TEST_CASE("cluster: NVLSTree is exact for a 16-bit max over several passes", "[cluster][nvls]") {
  // 16 KiB steps: 2 passes of 16 channels x 8 heads x 16 KiB.
  tb::Experiment e(nvlstree("4M", "bfloat16", "max", {{"cores.chunk_bytes", "16384"}}));
  tb::run_checked(e, "nvlstree bf16 max");
}

TEST_CASE("cluster: NVLSTree with Klenk's pull in place of multimem is exact on an odd size", "[cluster][nvls]") {
  // 256 B: most of the 128 chunks are 0 or 1 elements, and some multicasts land nothing.
  tb::Experiment e(nvlstree("256,1000000", "int32", "sum", {{"nvls.multimem", "false"}}));
  tb::run_checked(e, "nvlstree without multimem");
}

// A faulty reduction in a switch of node 1 corrupts that node's sum of a
// chunk, which the trees carry to every GPU of both nodes.
TEST_CASE("cluster: a wrong sum in an NVSwitch's table under NVLSTree is counted on every GPU", "[cluster][nvls]") {
  CHECK(tb::wrong_with_alu_fault(nvlstree("256K"), "n1_sw0.port0.reduction_table", 10) == 10 * 16);
}

TEST_CASE("cluster: NVLS with rings across is exact and each rail's ring carries its head's block", "[cluster][nvls]") {
  constexpr uint64_t m = 1 << 20, nodes = 2, g = 8, channels = 16;
  tb::Options o = cluster(2, "allreduce", "1M");
  o.algorithm = "nvlsring";
  tb::Experiment e(o);
  tb::run_checked(e, "nvlsring");
  // Head h's block of each channel, M / (G C), is all-reduced by the ring of
  // GPU h of each node: 2 (N - 1) pieces of M / (G C N), each with its flag
  // and its slot's flag back.
  for (const adapter::Hca* h : e.machine().blocks_of<adapter::Hca>())
    CHECK(h->payload_sent() == channels * 2 * (nodes - 1) * (m / g / channels / nodes + 8 + 8));
  for (const auto& end : e.machine().link_ends())
    if (end.from.rfind("spine", 0) == 0 || end.to.rfind("spine", 0) == 0) CHECK(end.port->bytes_sent() == 0);
}

TEST_CASE("cluster: NVLS with SHARP is exact, each adapter takes its head's share to the rail's leaf and its sum back, once",
          "[cluster][nvls][sharp]") {
  constexpr uint64_t m = 1 << 20, g = 8, block = 128;
  tb::Experiment e(nvlssharp("1M"));
  tb::run_checked(e, "nvlssharp");
  std::ostringstream held;
  e.machine().report_held(held);
  CHECK(held.str() == "");
  // GPU h's share, M / G, goes up as 128-byte reducing writes, nothing else;
  // each block's sum comes back once.
  for (const adapter::Hca* h : e.machine().blocks_of<adapter::Hca>()) {
    INFO(h->name());
    CHECK(h->payload_sent() == m / g);
    CHECK(h->packets_sent() == m / g / block);
    CHECK(h->writes_delivered() == m / g / block);
  }
  // Every block completes once in its rail's leaf, which evicts nothing;
  // the spines carry nothing.
  for (const nvswitch::NvSwitch* sw : e.machine().blocks_of<nvswitch::NvSwitch>()) {
    const std::string name = sw->name();
    uint64_t completions = 0, evictions = 0;
    for (int p = 0; p < sw->num_ports(); ++p) {
      completions += sw->table(p).completions;
      evictions += sw->table(p).evictions;
    }
    CHECK(evictions == 0);
    if (name.rfind("leaf", 0) == 0) CHECK(completions == m / g / block);
  }
  for (const auto& end : e.machine().link_ends())
    if (end.from.rfind("spine", 0) == 0 || end.to.rfind("spine", 0) == 0) CHECK(end.port->bytes_sent() == 0);
}

TEST_CASE("cluster: NVLS with SHARP is exact for a 16-bit max over several passes and with one credit", "[cluster][nvls][sharp]") {
  tb::Experiment e(nvlssharp("4M", "bfloat16", "max", {{"cores.chunk_bytes", "16384"}, {"ib.sharp.credits", "1"}}));
  tb::run_checked(e, "nvlssharp bf16 max, one credit");
}

TEST_CASE("cluster: NVLS with SHARP and Klenk's pull in place of multimem is exact on odd sizes", "[cluster][nvls][sharp]") {
  tb::Experiment e(nvlssharp("256,1000000", "int32", "sum", {{"nvls.multimem", "false"}}));
  tb::run_checked(e, "nvlssharp without multimem");
}

// A faulty sum in the leaf of rail 0 reaches GPU 0 of both nodes, and each
// multicasts it to its node.
TEST_CASE("cluster: a wrong sum in a leaf's aggregation buffer is counted on every GPU", "[cluster][nvls][sharp]") {
  CHECK(tb::wrong_with_alu_fault(nvlssharp("256K"), "leaf0.port0.reduction_table", 5) == 5 * 16);
}

TEST_CASE("cluster: CollNet is exact and each adapter takes its GPU's block to its rail's leaf and back, once",
          "[cluster][sharp]") {
  constexpr uint64_t m = 1 << 20, g = 8;
  tb::Options o = cluster(2, "allreduce", "1M,1000000");
  o.algorithm = "collnet";
  tb::Experiment e(o);
  tb::run_checked(e, "collnet");
  // After the node's reduce-scatter each GPU holds its share of the node's
  // sum and pushes it once: 1 MiB splits evenly, M / G each; 1000000 B
  // nearly, each node's GPUs pushing all of it. Each block's sum comes back.
  uint64_t pushed = 0;
  for (const adapter::Hca* h : e.machine().blocks_of<adapter::Hca>()) {
    INFO(h->name());
    CHECK(h->payload_sent() >= m / g + 1000000 / g - 64);
    CHECK(h->payload_sent() <= m / g + 1000000 / g + 64);
    CHECK(h->writes_delivered() == h->packets_sent());
    pushed += h->payload_sent();
  }
  CHECK(pushed == 2 * (m + 1000000));
  for (const auto& end : e.machine().link_ends())
    if (end.from.rfind("spine", 0) == 0 || end.to.rfind("spine", 0) == 0) CHECK(end.port->bytes_sent() == 0);
}

namespace {
// nccl-tests' alltoall on 2 nodes under NCCL's Simple protocol, PXN on or off.
tb::Options alltoall(const std::string& sizes, const std::string& pxn) {
  tb::Options o = cluster(2, "alltoall", sizes);
  o.algorithm = "p2p";
  tb::set_params(o, {{"ring.protocol", "simple"}, {"cluster.pxn", pxn}});
  return o;
}
// Payload bytes on the links from the leaves to the spines: what crosses from one rail to another.
uint64_t spine_payload(tb::Experiment& e) {
  uint64_t payload = 0;
  for (const auto& end : e.machine().link_ends())
    if (end.from.rfind("leaf", 0) == 0 && end.to.rfind("spine", 0) == 0)
      payload += end.port->bytes_sent() - end.port->packets_sent() * platforms::kIbHeader.default_value();
  return payload;
}
// Each of the 16 GPUs sends M / 16 to every GPU, on 16 channels: with PXN
// or without, each adapter sends 8 blocks to the other node (with PXN its
// node's to its rail's GPU there, without its own to every GPU there), 128
// transfers each followed by its 8-byte flag, and frees the slots of the 128
// it receives with an 8-byte flag back.
constexpr uint64_t kA2aBytes = 1 << 20, kA2aBlock = kA2aBytes / 16;
void alltoall_adapters(tb::Experiment& e) {
  const auto hcas = e.machine().blocks_of<adapter::Hca>();
  REQUIRE(hcas.size() == 16);
  for (const adapter::Hca* h : hcas) {
    INFO(h->name());
    CHECK(h->payload_sent() == 8 * kA2aBlock + 2 * 8 * 16 * 8);
  }
}
}  // namespace

TEST_CASE("cluster: alltoall with PXN is exact and every byte between nodes stays on the destination's rail",
          "[cluster][pxn]") {
  tb::Experiment e(alltoall("1M", "1"));
  tb::run_checked(e, "alltoall with PXN");
  alltoall_adapters(e);
  for (const auto& end : e.machine().link_ends())
    if (end.from.rfind("spine", 0) == 0 || end.to.rfind("spine", 0) == 0) CHECK(end.port->bytes_sent() == 0);
}

TEST_CASE("cluster: alltoall without PXN is exact and its transfers across rails climb to the spines",
          "[cluster][pxn]") {
  tb::Experiment e(alltoall("1M", "0"));
  tb::run_checked(e, "alltoall without PXN");
  alltoall_adapters(e);
  // Each way, 8 x 7 pairs of GPUs on different rails: their blocks, on 16
  // channels each with its flag, and the flags that free the other way's slots.
  CHECK(spine_payload(e) == 2 * (8 * 7 * kA2aBlock + 2 * 8 * 7 * 16 * 8));
}

// Every element n0_gpu1's cores copy comes out wrong: its own block and the
// 15 it receives, and with PXN the 7 it relays from its node's other GPUs to
// n1_gpu1. 256 KiB: blocks of 16 KiB, 4096 floats.
constexpr uint64_t kA2aFaultBlock = 4096;
TEST_CASE("cluster: a faulty GPU's copies in alltoall's PXN relays are counted", "[cluster][pxn]") {
  CHECK(tb::wrong_with_alu_fault(alltoall("256K", "1"), "n0_gpu1.cores", 1000000) == (16 + 7) * kA2aFaultBlock);
}
TEST_CASE("cluster: a faulty GPU's copies in alltoall without PXN are its own and what it receives", "[cluster][pxn]") {
  CHECK(tb::wrong_with_alu_fault(alltoall("256K", "0"), "n0_gpu1.cores", 1000000) == 16 * kA2aFaultBlock);
}

namespace {
// A rail over two leaves (4 nodes on leaves of 4 ports: 2 nodes and 2
// up-links each) aggregates at every level of SHARP's tree: each leaf
// reduces its two members' contributions to a block into one partial, so
// each block crosses from the leaves to the spine twice, whether its home
// is the spine (a partial from each leaf) or a leaf (the other leaf's
// partial, and the result on its way to the other leaf); without the
// leaves' aggregation it would be 4 or 3 times. A spine port holds entries
// for all 8 rails' 16 groups, at most 8 blocks of each (64 credits over 8
// home ports); the test gives it room for all their credits.
tb::Options two_leaves(const std::string& algorithm, const std::string& sizes) {
  tb::Options o = cluster(4, "allreduce", sizes);
  o.algorithm = algorithm;
  tb::set_params(o, {{"cluster.leaf_ports", "4"}, {"ib.sharp.table_bytes", "1048576"}});
  return o;
}
void two_leaves_per_rail(const std::string& algorithm) {
  constexpr uint64_t m = 1 << 20, g = 8, block = 128;
  tb::Experiment e(two_leaves(algorithm, "1M"));
  tb::run_checked(e, algorithm + " on two leaves per rail");
  std::ostringstream held;
  e.machine().report_held(held);
  CHECK(held.str() == "");
  // Every rail's 4 GPUs push M / G, blocks of 128 B, each its IB header more on the wire.
  const uint64_t wire = block + platforms::kIbHeader.default_value();
  uint64_t up = 0, leaves = 0;
  for (const auto& end : e.machine().link_ends())
    if (end.from.rfind("leaf", 0) == 0 && end.to.rfind("spine", 0) == 0) up += end.port->bytes_sent();
  CHECK(up == g * 2 * (m / g / block) * wire);
  for (const nvswitch::NvSwitch* sw : e.machine().blocks_of<nvswitch::NvSwitch>())
    leaves += std::string(sw->name()).rfind("leaf", 0) == 0;
  CHECK(leaves == g * 2);
}
}  // namespace

TEST_CASE("cluster: NVLS with SHARP over two leaves per rail is exact and each leaf sends one partial per block up",
          "[cluster][nvls][sharp]") {
  two_leaves_per_rail("nvlssharp");
}

TEST_CASE("cluster: CollNet over two leaves per rail is exact and each leaf sends one partial per block up",
          "[cluster][sharp]") {
  two_leaves_per_rail("collnet");
}

// A faulty sum in an up-link's table of rail 0's first leaf, a merge point
// or a root, reaches GPU 0 of all 4 nodes, and each multicasts it to its node.
TEST_CASE("cluster: a wrong sum in a leaf's table on a two-level tree is counted on every GPU", "[cluster][nvls][sharp]") {
  CHECK(tb::wrong_with_alu_fault(two_leaves("nvlssharp", "256K"), "leaf0_0.port2.reduction_table", 5) == 5 * 32);
}

namespace {
// Three levels of switches: 3 nodes on leaves of 2 ports (a node and its
// up-link) make 24 leaves, more than a spine of 16 ports reaches, so the
// slots form 3 pods (a leaf per rail each, under one spine of 8 down-links
// and 8 up-links) and the spines are joined by a core. Every rail's leaves
// sit in different pods: whatever crosses the nodes crosses the core. The
// leaves' aggregation buffers get room for every group's credits, as on
// two leaves per rail (below).
tb::Options three_levels(const std::string& algorithm, const std::string& sizes) {
  tb::Options o = cluster(3, "allreduce", sizes);
  o.algorithm = algorithm;
  tb::set_params(o, {{"cluster.leaf_ports", "2"}, {"cluster.spine_ports", "16"}, {"ib.sharp.table_bytes", "1048576"}});
  return o;
}
void exact_across_the_core(const std::string& algorithm) {
  tb::Experiment e(three_levels(algorithm, "64K,1M"));
  tb::run_checked(e, algorithm + " on three levels");
  const topo::Topology& t = e.machine().topology();
  REQUIRE(t.find("core0_0") >= 0);
  REQUIRE(t.find("spine2_0") >= 0);
  uint64_t up = 0, down = 0;
  for (const auto& end : e.machine().link_ends()) {
    if (end.from.rfind("spine", 0) == 0 && end.to.rfind("core", 0) == 0) up += end.port->bytes_sent();
    if (end.from.rfind("core", 0) == 0 && end.to.rfind("spine", 0) == 0) down += end.port->bytes_sent();
  }
  CHECK(up > 0);
  CHECK(down > 0);
}
// A cluster of 2 nodes of another platform.
tb::Options nodes_of(const std::string& node, const std::string& algorithm, const std::string& sizes) {
  tb::Options o = cluster(2, "allreduce", sizes);
  o.node = node;
  o.algorithm = algorithm;
  return o;
}
// Runs `algorithm` on 2 nodes of `node`, every element checked; the run, for more checks.
std::unique_ptr<tb::Experiment> exact_on(const std::string& node, const std::string& algorithm,
                                         const std::string& sizes = "64K,1M") {
  auto e = std::make_unique<tb::Experiment>(nodes_of(node, algorithm, sizes));
  tb::run_checked(*e, algorithm + " on " + node + " nodes");
  return e;
}
}  // namespace

TEST_CASE("cluster: the rings are exact on three levels of switches, between pods through the core", "[cluster][levels]") {
  exact_across_the_core("ring");
}

TEST_CASE("cluster: NCCL's trees are exact on three levels of switches", "[cluster][levels]") {
  exact_across_the_core("tree");
}

TEST_CASE("cluster: NVLSTree is exact on three levels of switches", "[cluster][levels][nvls]") {
  exact_across_the_core("nvlstree");
}

TEST_CASE("cluster: NVLS with SHARP is exact on three levels of switches, its aggregation trees through the core",
          "[cluster][levels][nvls][sharp]") {
  exact_across_the_core("nvlssharp");
}

TEST_CASE("cluster: a wrong sum in one GPU of the third node is counted on three levels of switches", "[cluster][levels]") {
  CHECK(tb::wrong_with_alu_fault(three_levels("ring", "256K"), "n2_gpu3.cores", 10) == 10 * 24);
}

TEST_CASE("cluster: DGX-2 nodes: the rings are exact", "[cluster][nodes]") {
  CHECK(exact_on("dgx2", "ring")->machine().blocks_of<adapter::Hca>().size() == 32);
}

TEST_CASE("cluster: DGX-2 nodes: NCCL's trees are exact", "[cluster][nodes]") {
  exact_on("dgx2", "tree");
}

TEST_CASE("cluster: DGX-2 nodes: NVLSTree is exact, Klenk's NVSwitches reducing inside each node", "[cluster][nodes][nvls]") {
  exact_on("dgx2", "nvlstree");
}

TEST_CASE("cluster: DGX-2 nodes: NVLS with SHARP is exact", "[cluster][nodes][nvls][sharp]") {
  exact_on("dgx2", "nvlssharp");
}

TEST_CASE("cluster: GB200 NVL72 racks: the rings are exact", "[cluster][nodes]") {
  // Two rings: 144 GPUs' 18 rings take 20 s of CPU at 64 KiB.
  tb::Options o = nodes_of("nvl72", "ring", "8K");
  tb::set_params(o, {{"ring.channels", "2"}});
  tb::Experiment e(o);
  tb::run_checked(e, "ring on NVL72 racks");
}

TEST_CASE("cluster: GB200 NVL72 racks: NCCL's trees are exact", "[cluster][nodes]") {
  exact_on("nvl72", "tree", "64K");
}

TEST_CASE("cluster: GB200 NVL72 racks: NVLSTree is exact", "[cluster][nodes][nvls]") {
  exact_on("nvl72", "nvlstree", "64K");
}

TEST_CASE("cluster: GB200 NVL72 racks: NVLS with SHARP is exact", "[cluster][nodes][nvls][sharp]") {
  exact_on("nvl72", "nvlssharp", "64K");
}

TEST_CASE("cluster: DGX A100 nodes: the rings are exact", "[cluster][nodes]") {
  CHECK(exact_on("hgx-a100", "ring")->machine().blocks_of<adapter::Hca>().size() == 16);
}

TEST_CASE("cluster: DGX A100 nodes: NCCL's trees are exact", "[cluster][nodes]") {
  exact_on("hgx-a100", "tree");
}

TEST_CASE("cluster: DGX B200 nodes: the rings are exact", "[cluster][nodes]") {
  exact_on("hgx-b200", "ring");
}

TEST_CASE("cluster: DGX B200 nodes: NVLSTree is exact", "[cluster][nodes][nvls]") {
  exact_on("hgx-b200", "nvlstree");
}

TEST_CASE("cluster: DGX B200 nodes: NVLS with SHARP is exact", "[cluster][nodes][nvls][sharp]") {
  exact_on("hgx-b200", "nvlssharp");
}

TEST_CASE("cluster: nodes from a platform file (4 GPUs on one switch): the rings are exact", "[cluster][nodes]") {
  std::ostringstream os;
  topo::save_yaml(topo::make_star(4, 25, 0), os);
  TempFile node(os.str());
  tb::Experiment e(nodes_of(node.path, "ring", "64K,1M"));
  tb::run_checked(e, "ring on nodes of a file");
  CHECK(e.machine().blocks_of<adapter::Hca>().size() == 8);
}
