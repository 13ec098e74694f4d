// Traffic over parallel links (docs/modern-machines.md): the HGX H100's
// trunks all carry a ring's traffic, the ring reaches 90% of its bound there,
// the GB200 NVL72's 72 GPUs run the switch fabric's algorithms exactly,
// NVLS is exact on the H100 board, and per-packet spreading over links of
// very different latency, which reorders packets heavily, keeps every
// collective's data exact.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "cli_run.h"
#include "core/error.h"
#include "experiment.h"
#include "options.h"
#include "run_checked.h"

using namespace incsim;

namespace {

// 4 GPUs, each with a trunk of 4 links to one switch; the k-th link of
// every trunk is 400 k ns long, so consecutive packets spread over a trunk
// arrive far out of order.
struct SkewedTrunks {
  std::string path;
  SkewedTrunks() {
    char tmpl[] = "/tmp/incsim_test_links_XXXXXX.yaml";
    const int fd = mkstemps(tmpl, 5);
    REQUIRE(fd >= 0);
    close(fd);
    path = tmpl;
    std::ofstream f(path);
    f << "name: skewed-trunks\nendpoints:\n";
    for (int g = 0; g < 4; ++g) f << "  - {name: gpu" << g << ", ports: 4}\n";
    f << "switches:\n  - {name: sw0, ports: 16}\nlinks:\n";
    for (int g = 0; g < 4; ++g)
      for (int k = 0; k < 4; ++k)
        f << "  - {a: gpu" << g << "." << k << ", b: sw0." << g * 4 + k << ", bw_GBps: 25, latency_ns: " << 400 * k
          << "}\n";
  }
  ~SkewedTrunks() { std::remove(path.c_str()); }
};

// Runs and checks: #wrong 0, no stall, every packet back.
void run(const tb::Options& o, const std::string& what) {
  tb::Experiment e(o);
  tb::run_checked(e, what);
}

}  // namespace

TEST_CASE("HGX H100: a ring uses every link of every trunk and reaches 90% of its bound", "[links][hgx]") {
  // 64 MiB: 466 KiB per ring and step, NCCL's two slices of 233 KiB, enough
  // to hide the fence and flag of each (docs/modern-machines.md).
  // The links alone: NCCL's fixed cost per collective (nccl.launch) is no link's.
  tb::Experiment e(tb::run_options("hgx-h100", "allreduce", "ring", "64M", {{"nccl.launch", "none"}}));
  const std::vector<tb::Row> rows = tb::run_checked(e, "hgx-h100 ring");
  REQUIRE(rows.size() == 1);
  const tb::Row& r = rows[0];
  CHECK(r["bound_fraction"] >= 0.90);
  const auto& ends = e.machine().link_ends();
  REQUIRE(r.link_bytes.size() == ends.size());
  REQUIRE(ends.size() == 2 * 8 * 18);
  const auto [lo, hi] = std::minmax_element(r.link_bytes.begin(), r.link_bytes.end());
  INFO("least " << *lo << " B on " << ends[lo - r.link_bytes.begin()].from << ", most " << *hi << " B on "
                << ends[hi - r.link_bytes.begin()].from);
  CHECK(*lo > 0);
  CHECK(static_cast<double>(*hi) <= 1.1 * static_cast<double>(*lo));
}

TEST_CASE("HGX H100: push is exact over the trunks", "[links][hgx]") {
  run(tb::run_options("hgx-h100", "allreduce", "push", "4,12292,1M"), "push");
}
TEST_CASE("HGX H100: pull is exact over the trunks", "[links][hgx]") {
  run(tb::run_options("hgx-h100", "allreduce", "pull", "4,12292,1M"), "pull");
}

// NVLS (NCCL 2.17+'s NVLink SHARP): multimem loads reduce in the switches,
// multimem stores multicast; 4 B leaves every rank but one without a block.
TEST_CASE("HGX H100: NVLS all-reduce is exact", "[links][hgx][nvls]") {
  run(tb::run_options("hgx-h100", "allreduce", "nvls", "4,12292,256K"), "nvls all-reduce");
}
TEST_CASE("HGX H100: NVLS reduce-scatter is exact", "[links][hgx][nvls]") {
  run(tb::run_options("hgx-h100", "reducescatter", "nvls", "4,12292,256K"), "nvls reduce-scatter");
}
TEST_CASE("HGX H100: NVLS all-gather is exact", "[links][hgx][nvls]") {
  run(tb::run_options("hgx-h100", "allgather", "nvls", "4,12292,256K"), "nvls all-gather");
}
// NCCL's NVLS reads every GPU's copy through the switches, the reader's own
// too (multimem.ld_reduce), and its store comes back to the writer
// (multimem.st): one more response per block than Klenk's pull, where the
// reader adds its own. 1 MiB is 8192 blocks of 128 B, each read once.
TEST_CASE("HGX H100: NVLS reads the reader's own copy through the switches, unlike Klenk's pull", "[links][hgx][nvls]") {
  const auto hits = [](const std::string& extra) {
    const cli::Result r = cli::incsim("--platform hgx-h100 --algorithm nvls --sizes 1M" + extra);
    REQUIRE(r.code == 0);  // #wrong 0
    const size_t at = r.out.find("reduction tables: ");
    REQUIRE(at != std::string::npos);
    return std::stoull(r.out.substr(at + 18));
  };
  CHECK(hits("") - hits(" -c nvls.multimem=false") == 8192);
}

// A reduce-scatter keeps each reduced block at its puller: 3 corrupted
// reductions are 3 wrong elements, whoever issues the loads (the cores have
// no barrier; the copy engines' is turned off, its flag would take the
// first fault).
TEST_CASE("HGX H100: a faulty switch ALU shows in NVLS reduce-scatter's #wrong", "[links][hgx][nvls][wrong]") {
  const tb::Options cores = tb::run_options("hgx-h100", "reducescatter", "nvls", "64K");
  CHECK(tb::wrong_with_alu_fault(cores, "sw0.port0.reduction_table", 3) == 3);
}
TEST_CASE("HGX H100: a faulty switch ALU shows in the copy engines' NVLS reduce-scatter's #wrong",
          "[links][hgx][nvls][wrong]") {
  const tb::Options copy = tb::run_options("hgx-h100", "reducescatter", "nvls", "64K",
                                           {{"nvls.engine", "copy"}, {"pull.barrier", "false"}});
  CHECK(tb::wrong_with_alu_fault(copy, "sw0.port0.reduction_table", 3) == 3);
}
TEST_CASE("NVLS on a DGX-1, which has no NVSwitch, is refused", "[links][nvls][errors]") {
  REQUIRE_THROWS_WITH(tb::Experiment(tb::run_options("dgx1v", "allreduce", "nvls", "1M")),
                      Catch::Contains("algorithm 'nvls' needs NVSwitch reduction or multicast tables"));
}

// GB200 NVL72: the ring over all 72 GPUs (small sizes: at 72 ranks a ring is
// latency-bound far beyond what a test can simulate, docs/modern-machines.md).
TEST_CASE("GB200 NVL72: a ring over 72 GPUs is exact and uses every link", "[links][nvl72]") {
  // 12292 B: 3073 floats, an uneven share for each of the 18 channels' 72 chunks.
  tb::Experiment e(tb::run_options("nvl72", "allreduce", "ring", "12292"));
  const std::vector<tb::Row> rows = tb::run_checked(e, "nvl72 ring");
  const auto& ends = e.machine().link_ends();
  REQUIRE(ends.size() == 2 * 72 * 18);
  for (size_t i = 0; i < ends.size(); ++i) {
    INFO(ends[i].from << " -> " << ends[i].to);
    CHECK(rows.back().link_bytes[i] > 0);
  }
}
TEST_CASE("GB200 NVL72: push is exact", "[links][nvl72]") {
  run(tb::run_options("nvl72", "allreduce", "push", "4,12292,256K"), "push");
}
TEST_CASE("GB200 NVL72: pull is exact", "[links][nvl72]") {
  run(tb::run_options("nvl72", "allreduce", "pull", "4,12292,256K"), "pull");
}
TEST_CASE("GB200 NVL72: multicast is exact", "[links][nvl72]") {
  run(tb::run_options("nvl72", "allgather", "multicast", "4,12292,256K"), "multicast");
}

// Per packet over trunk links 0 to 1200 ns long: a chunk's packets, a
// pull's responses, a NIC's messages all arrive out of order. (One run per
// test: SystemC elaborates once per process.)
void skewed(const std::string& collective, const std::string& algorithm, const std::string& spread,
            tb::KeyValues params = {}) {
  const SkewedTrunks file;
  params.push_back({"switch.spread", spread});
  tb::Experiment e(tb::run_options(file.path, collective, algorithm, "4,12292,1M", params));
  const std::vector<tb::Row> rows = tb::run_checked(e, algorithm + " " + spread);
  // Every link of every trunk into a GPU carried the last row's packets.
  const auto& ends = e.machine().link_ends();
  for (size_t i = 0; i < ends.size(); ++i)
    if (ends[i].from.rfind("sw0", 0) == 0) {
      INFO(ends[i].from << " -> " << ends[i].to);
      CHECK(rows.back().link_bytes[i] > 0);
    }
}
TEST_CASE("rotating over skewed trunks keeps the ring exact", "[links][reorder]") { skewed("allreduce", "ring", "rotate"); }
TEST_CASE("rotating over skewed trunks keeps push exact", "[links][reorder]") { skewed("allreduce", "push", "rotate"); }
TEST_CASE("rotating over skewed trunks keeps pull exact", "[links][reorder]") { skewed("allreduce", "pull", "rotate"); }
TEST_CASE("rotating over skewed trunks keeps multicast exact", "[links][reorder]") {
  skewed("allgather", "multicast", "rotate");
}
TEST_CASE("rotating over skewed trunks keeps the NIC's ring schedule exact", "[links][reorder]") {
  skewed("allreduce", "ring", "rotate", {{"ring.engine", "nic"}});
}
TEST_CASE("rotating over skewed trunks keeps the NIC's MultiTree schedule exact", "[links][reorder]") {
  skewed("allreduce", "multitree", "rotate");
}
TEST_CASE("adaptive spreading over skewed trunks keeps the ring exact", "[links][reorder]") {
  skewed("allreduce", "ring", "adaptive");
}
TEST_CASE("adaptive spreading over skewed trunks keeps pull exact", "[links][reorder]") {
  skewed("allreduce", "pull", "adaptive");
}

TEST_CASE("an unknown spreading policy names the choices", "[links][errors]") {
  const tb::Options o = tb::run_options("hgx-h100", "allreduce", "ring", "1M", {{"switch.spread", "ecmp"}});
  auto build = [&] {
    tb::Experiment e(o);
    std::ostringstream table;
    e.run(&table);
  };
  REQUIRE_THROWS_WITH(build(), Catch::Contains("switch.spread must be destination, rotate, adaptive or flow, not 'ecmp'"));
}
