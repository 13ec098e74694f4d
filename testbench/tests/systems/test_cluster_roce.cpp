// A cluster whose scale-out network is RoCE (cluster.network=roce,
// docs/modern-machines.md, "RoCE and NetReduce across nodes"): HGX H100
// nodes whose GPUs reach the other nodes through RoCE adapters
// (adapter::RoceBridge) on Ethernet rail leaves and spines, ECMP per connection.
// NCCL's rings and trees across the nodes are exact, each adapter carries
// the bytes the rings predict, a wrong sum is counted, and lost frames are
// sent again by go-back-N without a wrong element. NVLS with NetReduce's
// FPGA beside each rail leaf (nvlsnetreduce) is exact, each adapter takes
// its head's share to the FPGA and its sum back once, and the FPGA's adders
// count a wrong sum.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "ethernet/ethernet_switch.h"
#include "experiment.h"
#include "adapter/roce_bridge.h"
#include "netreduce/fpga_aggregator.h"
#include "options.h"
#include "run_checked.h"

using namespace incsim;

namespace {
tb::Options on_roce(int nodes, const std::string& algorithm, const std::string& sizes, tb::KeyValues params = {}) {
  params.insert(params.begin(), {"cluster.network", "roce"});
  tb::Options o = tb::run_options("cluster", "allreduce", algorithm, sizes, params);
  o.nodes = nodes;
  return o;
}
// The run is exact, within its bound, every packet back in its pool.
void exact(int nodes, const std::string& algorithm, const std::string& sizes) {
  tb::Experiment e(on_roce(nodes, algorithm, sizes));
  tb::run_checked(e, algorithm + " on " + std::to_string(nodes) + " nodes");
}
}  // namespace

TEST_CASE("roce cluster: the rings' all-reduce is exact and every adapter sends the share the rings predict", "[cluster_roce]") {
  // 2 nodes of 8 GPUs, 16 rings under Simple: as on InfiniBand (test_cluster),
  // each adapter is the exit of 2 rings (their blocks and flags) and the
  // entry of 2 (their slots' flags back).
  constexpr uint64_t m = 1 << 20, n = 16, rings_per_adapter = 2;
  tb::Experiment e(on_roce(2, "ring", "1M", {{"ring.protocol", "simple"}}));
  tb::run_checked(e, "roce ring");
  std::ostringstream held;
  e.machine().report_held(held);
  CHECK(held.str() == "");
  const auto bridges = e.machine().blocks_of<adapter::RoceBridge>();
  REQUIRE(bridges.size() == 16);
  constexpr uint64_t data = rings_per_adapter * 2 * (n - 1) * (m / 16 / n);
  constexpr uint64_t flags = 2 * rings_per_adapter * 2 * (n - 1) * 8;
  for (const adapter::RoceBridge* b : bridges) {
    INFO(b->name());
    CHECK(b->payload_sent() == data + flags);
    CHECK(b->nic().retransmitted() == 0);
    CHECK(b->nic().idle());
  }
  CHECK(e.machine().blocks_of<eth::EthernetSwitch>().size() == 9);  // 8 rail leaves, 1 spine
}

TEST_CASE("roce cluster: 4 nodes, the rings cross the spines by ECMP and stay exact", "[cluster_roce]") {
  exact(4, "ring", "64K,1M");
}

TEST_CASE("roce cluster: NCCL's tree across 4 nodes is exact", "[cluster_roce]") { exact(4, "tree", "64K,1M"); }

TEST_CASE("roce cluster: NVLSTree is exact", "[cluster_roce]") { exact(2, "nvlstree", "64K,1M"); }

TEST_CASE("roce cluster: NVLS with rings across is exact", "[cluster_roce]") { exact(2, "nvlsring", "1M"); }

TEST_CASE("roce cluster: a wrong sum in one GPU of the second node is counted", "[cluster_roce]") {
  CHECK(tb::wrong_with_alu_fault(on_roce(2, "ring", "256K"), "n1_gpu3.cores", 10) == 10 * 16);
}

TEST_CASE("roce cluster: frames lost on the network are sent again by go-back-N and nothing is wrong", "[cluster_roce]") {
  tb::Experiment e(on_roce(2, "ring", "1M", {{"link.loss", "0.001"}}));
  tb::run_checked(e, "roce ring under loss");
  uint64_t lost = 0, retransmitted = 0;
  for (const adapter::RoceBridge* b : e.machine().blocks_of<adapter::RoceBridge>()) {
    lost += b->nic().lost();
    retransmitted += b->nic().retransmitted();
  }
  for (const eth::EthernetSwitch* s : e.machine().blocks_of<eth::EthernetSwitch>()) lost += s->lost();
  INFO(lost << " frames lost, " << retransmitted << " sent again");
  CHECK(lost > 0);
  CHECK(retransmitted > 0);
}

TEST_CASE("roce cluster: NVLS with NetReduce is exact, each adapter takes its head's share to the rail's FPGA and its sum back, once",
          "[cluster_roce][netreduce]") {
  constexpr uint64_t m = 1 << 20, g = 8, block = 128;
  tb::Experiment e(on_roce(2, "nvlsnetreduce", "1M"));
  tb::run_checked(e, "nvlsnetreduce");
  std::ostringstream held;  // (the FPGAs' CLTs list their connections, holding nothing)
  CHECK(e.machine().report_held(held) == 0);
  // GPU h's share, M / G, goes out as one 128-byte block per RDMA WRITE,
  // nothing else; each block's sum comes back once.
  for (const adapter::RoceBridge* b : e.machine().blocks_of<adapter::RoceBridge>()) {
    INFO(b->name());
    CHECK(b->payload_sent() == m / g);
    CHECK(b->packets_sent() == m / g / block);
    CHECK(b->writes_delivered() == m / g / block);
    CHECK(b->nic().retransmitted() == 0);
  }
  // Rail h's FPGA completes each block of GPU h's share once, over its 16
  // rings (one per channel); the spines carry nothing.
  const auto fpgas = e.machine().blocks_of<netreduce::FpgaAggregator>();
  REQUIRE(fpgas.size() == 8);
  for (const netreduce::FpgaAggregator* f : fpgas) {
    INFO(f->name());
    uint64_t completions = 0;
    for (uint16_t ring = 0; ring < 16; ++ring) completions += f->ring(ring).completions();
    CHECK(completions == m / g / block);
    CHECK(f->counters().no_entry_drops == 0);
  }
  for (const auto& end : e.machine().link_ends())
    if (end.from.rfind("spine", 0) == 0 || end.to.rfind("spine", 0) == 0) CHECK(end.port->bytes_sent() == 0);
}

TEST_CASE("roce cluster: NVLS with NetReduce on 4 nodes is exact", "[cluster_roce][netreduce]") {
  exact(4, "nvlsnetreduce", "64K,1M");
}

TEST_CASE("roce cluster: a wrong sum in a rail's FPGA is counted in every GPU it reaches", "[cluster_roce][netreduce]") {
  // Rail 0's FPGA has an aggregator array per ring (16, one per channel),
  // each with its adders: 5 wrong elements in each ring's sums reach both
  // heads 0, which multicast them to their nodes' 8 GPUs.
  CHECK(tb::wrong_with_alu_fault(on_roce(2, "nvlsnetreduce", "256K"), "leaf0_fpga.aggregator", 5) == 16 * 5 * 16);
}

TEST_CASE("roce cluster: NVLS with NetReduce under loss is exact, go-back-N repairing what the FPGA missed",
          "[cluster_roce][netreduce]") {
  tb::Experiment e(on_roce(2, "nvlsnetreduce", "1M", {{"link.loss", "0.001"}}));
  tb::run_checked(e, "nvlsnetreduce under loss");
  uint64_t retransmitted = 0;
  for (const adapter::RoceBridge* b : e.machine().blocks_of<adapter::RoceBridge>()) retransmitted += b->nic().retransmitted();
  CHECK(retransmitted > 0);
}
