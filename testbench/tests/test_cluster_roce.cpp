// A cluster whose scale-out network is RoCE (cluster.network=roce,
// docs/modern-machines.md, "RoCE and NetReduce across nodes"): HGX H100
// nodes whose GPUs reach the other nodes through RoCE adapters
// (hca::RoceBridge) on Ethernet rail leaves and spines, ECMP per connection.
// NCCL's rings and trees across the nodes are exact, each adapter carries
// the bytes the rings predict, a wrong sum is counted, and lost frames are
// sent again by go-back-N without a wrong element.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "ethernet/ethernet_switch.h"
#include "experiment.h"
#include "hca/roce_bridge.h"
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
  const auto bridges = e.machine().blocks_of<hca::RoceBridge>();
  REQUIRE(bridges.size() == 16);
  constexpr uint64_t data = rings_per_adapter * 2 * (n - 1) * (m / 16 / n);
  constexpr uint64_t flags = 2 * rings_per_adapter * 2 * (n - 1) * 8;
  for (const hca::RoceBridge* b : bridges) {
    INFO(b->name());
    CHECK(b->payload_sent() == data + flags);
    CHECK(b->nic().retransmitted() == 0);
    CHECK(b->nic().idle());
  }
  CHECK(e.machine().blocks_of<eth::EthernetSwitch>().size() == 9);  // 8 rail leaves, 1 spine
}

TEST_CASE("roce cluster: 4 nodes, the rings cross the spines by ECMP and stay exact", "[cluster_roce]") {
  tb::Experiment e(on_roce(4, "ring", "64K,1M"));
  tb::run_checked(e, "roce ring 4 nodes");
}

TEST_CASE("roce cluster: NCCL's tree across 4 nodes is exact", "[cluster_roce]") {
  tb::Experiment e(on_roce(4, "tree", "64K,1M"));
  tb::run_checked(e, "roce tree");
}

TEST_CASE("roce cluster: NVLSTree is exact", "[cluster_roce]") {
  tb::Experiment tree(on_roce(2, "nvlstree", "64K,1M"));
  tb::run_checked(tree, "roce nvlstree");
}

TEST_CASE("roce cluster: NVLS with rings across is exact", "[cluster_roce]") {
  tb::Experiment ring(on_roce(2, "nvlsring", "1M"));
  tb::run_checked(ring, "roce nvlsring");
}

TEST_CASE("roce cluster: a wrong sum in one GPU of the second node is counted", "[cluster_roce]") {
  CHECK(tb::wrong_with_alu_fault(on_roce(2, "ring", "256K"), "n1_gpu3.cores", 10) == 10 * 16);
}

TEST_CASE("roce cluster: frames lost on the network are sent again by go-back-N and nothing is wrong", "[cluster_roce]") {
  tb::Experiment e(on_roce(2, "ring", "1M", {{"link.loss", "0.001"}}));
  tb::run_checked(e, "roce ring under loss");
  uint64_t lost = 0, retransmitted = 0;
  for (const hca::RoceBridge* b : e.machine().blocks_of<hca::RoceBridge>()) {
    lost += b->nic().lost();
    retransmitted += b->nic().retransmitted();
  }
  for (const eth::EthernetSwitch* s : e.machine().blocks_of<eth::EthernetSwitch>()) lost += s->lost();
  INFO(lost << " frames lost, " << retransmitted << " sent again");
  CHECK(lost > 0);
  CHECK(retransmitted > 0);
}
