// Blink's trees and NCCL-style rings run on the simulated DGX-1 and DGX-2 by
// the NICs in dataflow mode: every result exact, broadcast and all-reduce;
// Blink at its packed rate on DGX-1V; the ring on PCIe where NVLinks close no
// ring. One SystemC elaboration per process: one Experiment per TEST_CASE.
#include <catch2/catch.hpp>

#include <cstdio>
#include <sstream>

#include "experiment.h"
#include "run_checked.h"
#include "topology/dgx1.h"

using namespace incsim;

namespace {

struct Run {
  std::vector<tb::Row> rows;
  double bound_GBps = 0;
  std::vector<platforms::LinkEnd> ends;
};

Run run(const std::string& platform, std::vector<int> gpus, const std::string& collective, const std::string& algorithm,
        const std::string& sizes, const std::string& dtype = "float", const std::string& redop = "sum",
        std::vector<std::pair<std::string, std::string>> overrides = {},
        const std::vector<std::vector<int>>& servers = {}) {
  tb::Options o = tb::run_options(platform, collective, algorithm, sizes, std::move(overrides), dtype, redop);
  o.gpu_list = std::move(gpus);
  if (!o.gpu_list.empty()) o.gpus = static_cast<int>(o.gpu_list.size());
  if (!servers.empty()) {
    o.gpu_servers = servers;
    o.gpu_list.clear();
    for (const auto& sv : servers) o.gpu_list.insert(o.gpu_list.end(), sv.begin(), sv.end());
    o.gpus = static_cast<int>(o.gpu_list.size());
  }
  tb::Experiment e(o);
  Run r;
  r.rows = tb::run_checked(e, platform + " " + collective + " " + algorithm);
  r.bound_GBps = tb::collective_of(e).endpoint_GBps();
  r.ends = tb::collective_of(e).platform().link_ends();
  return r;
}

// Bytes the last row moved over NVLink bridges and over the PCIe tree.
std::pair<uint64_t, uint64_t> nvlink_pcie_bytes(const Run& r) {
  uint64_t nvl = 0, pcie = 0;
  for (size_t k = 0; k < r.ends.size(); ++k)
    (r.ends[k].from.rfind("nvl", 0) == 0 || r.ends[k].to.rfind("nvl", 0) == 0 ? nvl : pcie) +=
        r.rows.back().link_bytes[k];
  return {nvl, pcie};
}

// One element, sizes that cut unevenly over trees and chunks, a large one.
const char* kSizes = "4,12292,1M";

}  // namespace

TEST_CASE("Blink all-reduce is exact on DGX-1V 1,4,5,6", "[blinkrun][exact]") {
  const Run r = run("dgx1v", {1, 4, 5, 6}, "allreduce", "blink", kSizes);
  const auto [nvl, pcie] = nvlink_pcie_bytes(r);
  CHECK(nvl > 0);
  CHECK(pcie == 0);  // Blink's trees use NVLinks only
}

TEST_CASE("Blink all-reduce is exact on DGX-1V with 8 GPUs, int32 max", "[blinkrun][exact]") {
  run("dgx1v", {0, 1, 2, 3, 4, 5, 6, 7}, "allreduce", "blink", kSizes, "int32", "max");
}

TEST_CASE("Blink all-reduce is exact on DGX-1P 0,1,2,4,5 (min)", "[blinkrun][exact]") {
  run("dgx1p", {0, 1, 2, 4, 5}, "allreduce", "blink", kSizes, "float", "min");
}

TEST_CASE("Blink broadcast is exact on DGX-1V 2,3,6,7", "[blinkrun][exact]") {
  run("dgx1v", {2, 3, 6, 7}, "broadcast", "blink", kSizes);
}

TEST_CASE("Blink broadcast is exact on DGX-1P with 6 GPUs from gpu5", "[blinkrun][exact]") {
  run("dgx1p", {5, 0, 1, 2, 3, 4}, "broadcast", "blink", kSizes, "int32");
}

TEST_CASE("Ring all-reduce falls back to PCIe on DGX-1V 1,4,5,6 and is exact", "[blinkrun][ring]") {
  const Run r = run("dgx1v", {1, 4, 5, 6}, "allreduce", "ring", kSizes);
  const auto [nvl, pcie] = nvlink_pcie_bytes(r);
  CHECK(nvl == 0);
  CHECK(pcie > 0);
}

TEST_CASE("Ring broadcast stays on NVLink on DGX-1V 0,1,2,3 and is exact", "[blinkrun][ring]") {
  const Run r = run("dgx1v", {0, 1, 2, 3}, "broadcast", "ring", kSizes);
  const auto [nvl, pcie] = nvlink_pcie_bytes(r);
  CHECK(nvl > 0);
  CHECK(pcie == 0);
}

TEST_CASE("Ring broadcast on PCIe is exact on DGX-1P 1,4,5,6", "[blinkrun][ring]") {
  run("dgx1p", {1, 4, 5, 6}, "broadcast", "ring", kSizes);
}

// 6 trees of rate 1.0 (Blink §3.2) at one NVLink's payload bandwidth (25
// GB/s x 256 / 272): 141 GB/s; chunking costs the pipeline fill of the
// deepest tree (5 hops over 32 chunks: 32/36) and one memory latency per
// chunk (about 3% at 32 MiB): 84% measured.
TEST_CASE("Blink broadcast on DGX-1V/8 reaches its packed rate within 20%", "[blinkrun][rate]") {
  const Run r = run("dgx1v", {0, 1, 2, 3, 4, 5, 6, 7}, "broadcast", "blink", "32M");
  const double packed = 6 * topo::dgx1_nvlink_GBps(topo::Dgx1Gen::V100) * 256 / 272;
  CHECK(r.bound_GBps == Approx(packed));
  CHECK(r.rows.back()["algbw_GBps"] > 0.8 * packed);
  CHECK(r.rows.back()["algbw_GBps"] <= packed);
}

// The same trees reduce on the reversed links (§3.3), so a link direction
// carries up to two trees' data: the tree all-reduce runs at half the packed
// rate at best.
TEST_CASE("Blink all-reduce on DGX-1V/8 runs near half its packed rate", "[blinkrun][rate]") {
  const Run r = run("dgx1v", {0, 1, 2, 3, 4, 5, 6, 7}, "allreduce", "blink", "32M");
  const double half = 3 * topo::dgx1_nvlink_GBps(topo::Dgx1Gen::V100) * 256 / 272;
  CHECK(r.rows.back()["algbw_GBps"] > 0.85 * half);
  CHECK(r.rows.back()["algbw_GBps"] <= half * 1.0001);
}

TEST_CASE("Blink one-hop trees are exact on DGX-2", "[blinkrun][exact][dgx2]") {
  run("dgx2", {}, "allreduce", "blink", "4,12292,256K");
}

// Blink §4.2.1: the chunk size doubles while throughput rises, then falls
// back additively; the last iteration is the row. Fig. 11 settles in ~4.
TEST_CASE("MIAD chunk search doubles, backs off and settles, every iteration exact", "[blinkrun][miad]") {
  tb::Options o;
  o.platform = "dgx1v";
  o.gpu_list = {0, 1, 2, 4, 7};
  o.gpus = 5;
  o.collective = "broadcast";
  o.algorithm = "blink";
  o.sizes = "8M";
  o.quiet = true;
  tb::set_params(o, {{"blink.miad_iterations", "7"}, {"blink.miad_start_bytes", "16384"}, {"blink.miad_step_bytes", "4096"}});
  tb::Experiment e(o);
  std::ostringstream table;
  std::vector<tb::Row> rows;
  REQUIRE_NOTHROW(rows = e.run(&table));
  INFO(table.str());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].wrong() == 0);
  std::vector<unsigned long> chunk;
  std::vector<double> gbps;
  std::istringstream is(table.str());
  for (std::string line; std::getline(is, line);) {
    int it = 0, per = 0;
    unsigned long c = 0;
    double us = 0, g = 0;
    if (std::sscanf(line.c_str(), "# MIAD iteration %d: chunk %lu B (%d per tree), %lf us, %lf GB/s", &it, &c, &per, &us,
                    &g) == 5) {
      chunk.push_back(c);
      gbps.push_back(g);
    }
  }
  REQUIRE(chunk.size() == 7);
  CHECK(chunk[1] == 2 * chunk[0]);  // multiplicative increase after a first measurement
  // Each step follows the rule from what was measured.
  double best = 0;
  unsigned long best_chunk = 0;
  bool increasing = true;
  for (size_t i = 0; i + 1 < chunk.size(); ++i) {
    const bool better = gbps[i] > best;
    if (better) best = gbps[i], best_chunk = chunk[i];
    if (increasing && better) {
      CHECK(chunk[i + 1] == 2 * chunk[i]);
    } else {
      if (increasing) CHECK(chunk[i + 1] == best_chunk - 4096);
      else CHECK((chunk[i + 1] == chunk[i] - 4096 || chunk[i + 1] == best_chunk));
      increasing = false;
    }
  }
  CHECK_FALSE(increasing);  // from 16 KiB chunks it found a size where throughput falls
  CHECK(rows[0]["algbw_GBps"] >= 0.99 * gbps[0]);
}

// Blink A.3, Eq. (8): 0,1,4 has one NVLink tree (rate 1); a PCIe chain beside
// it takes BW_PCIe / (BW_PCIe + BW_NVL) of the data, so both finish together.
TEST_CASE("Hybrid broadcast splits the data over NVLink and PCIe by Eq. 8 and beats NVLink alone", "[blinkrun][hybrid]") {
  const Run r = run("dgx1v", {0, 1, 4}, "broadcast", "blink", "4,12292,8M", "float", "sum", {{"blink.hybrid", "true"}});
  const auto [nvl, pcie] = nvlink_pcie_bytes(r);
  CHECK(nvl > 0);
  CHECK(pcie > 0);
  // Link segments crossed: the NVLink tree 0->1, 0->4 two bridges of two
  // segments each with 16 of 26 units; the PCIe chain 0->1 (gpu0, pcie0,
  // gpu1: 2 segments) and 1->4 (pcie0, cpu0, cpu1, pcie2: 5) with 10.
  CHECK(static_cast<double>(pcie) / nvl == Approx(7.0 * 10 / (4.0 * 16)).epsilon(0.01));
  const double nvlink_alone = topo::dgx1_nvlink_GBps(topo::Dgx1Gen::V100) * 256 / 272;
  CHECK(r.rows.back()["algbw_GBps"] > 1.4 * nvlink_alone);
}

// Blink §3.4, A.2: per-server reduce over local trees, one-hop reduce and
// broadcast between the servers' roots, broadcast back over the local trees.
TEST_CASE("Three-phase all-reduce over two DGX-1V servers (3 + 5 GPUs) is exact and network bound", "[blinkrun][multi]") {
  const Run r = run("dgx1v", {}, "allreduce", "blink", "4,12292,4M", "int32", "max", {}, {{0, 1, 2}, {0, 1, 2, 3, 4}});
  // 40 Gbps: at 4 MiB the network link (5 GB/s, 4.7 of payload) is the bottleneck.
  CHECK(r.rows.back()["algbw_GBps"] > 0.9 * 40 / 8.0 * 256 / 272);
}

TEST_CASE("Three-phase broadcast over three DGX-1P servers is exact", "[blinkrun][multi]") {
  run("dgx1p", {}, "broadcast", "blink", "4,12292,1M", "float", "sum", {{"dgx1.net_Gbps", "100"}},
      {{5, 6}, {0, 1, 2}, {3, 7}});
}

TEST_CASE("The NCCL-style ring through two DGX-1V servers is exact", "[blinkrun][multi]") {
  run("dgx1v", {}, "allreduce", "ring", "4,12292,1M", "float", "sum", {}, {{1, 4, 5, 6}, {0, 1}});
}

// Blink's trees reduce at the NICs in dataflow mode; GPU 2's NIC corrupts 2
// elements of a partial sum that reaches the root and is broadcast to all 8.
TEST_CASE("Blink: a faulty ALU in one NIC shows as exactly that many wrong elements on every GPU", "[blink][wrong]") {
  const tb::Options o = tb::run_options("dgx1v", "allreduce", "blink", "64K");
  CHECK(tb::wrong_with_alu_fault(o, "gpu2.nic", 2) == 2 * 8);
}
