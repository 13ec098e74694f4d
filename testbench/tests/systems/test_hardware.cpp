// Today's machines against real ones (docs/hardware.md): HGX A100 and B200
// as their datasheets build them, and NCCL's software around each
// collective (nccl.launch): its fixed cost from NCCL's tuning model, the
// host's launches, the same at packet level and as flows.
#include <catch2/catch.hpp>

#include "cli_run.h"
#include "collectives/nccl.h"
#include "core/config.h"
#include "platforms/platform.h"
#include "topology/topology.h"

#include <nlohmann/json.hpp>
#include <string>

using namespace cli;
using incsim::Config;
using incsim::collectives::Protocol;

namespace {
// One row's time of a quiet run that writes JSON to stdout.
double time_us(const std::string& args) {
  const Result r = cli::incsim(args + " --quiet --json -");
  REQUIRE(r.code == 0);
  const auto row = nlohmann::json::parse(r.out)["rows"][0];
  if (row["wrong"].is_number()) CHECK(row["wrong"] == 0);
  return row["time_us"].get<double>();
}
}  // namespace

TEST_CASE("HGX A100 and B200 are built as their datasheets wire them", "[hardware][platforms]") {
  Config cfg;
  const auto a100 = incsim::platforms::make_topology("hgx-a100", 0, cfg);
  CHECK(a100.endpoints().size() == 8);
  CHECK(a100.switches().size() == 6);   // six NVSwitch gen 2
  CHECK(a100.links().size() == 8 * 12);  // 12 NVLink3 links per GPU, 2 to each switch
  CHECK(a100.links().front().bw_GBps == 25);
  Config b200_cfg;  // a run's parameters take one platform's defaults
  const auto b200 = incsim::platforms::make_topology("hgx-b200", 0, b200_cfg);
  CHECK(b200.switches().size() == 2);
  CHECK(b200.node(b200.switches()[0]).ports == 72);  // 9 links from each of 8 GPUs
  CHECK(b200.links().size() == 8 * 18);
  CHECK(b200.links().front().bw_GBps == 50);  // NVLink5
  const auto d = incsim::platforms::platform_defaults(a100);
  CHECK(d.ring_channels == 12);  // one ring per NVLink
  CHECK(d.gpu_clock_ghz == 1.41);
  CHECK(d.nccl_launch == "process");
  Config dgx2_cfg;
  CHECK(incsim::platforms::platform_defaults(incsim::platforms::make_topology("dgx2", 0, dgx2_cfg)).nccl_launch ==
        "none");
  CHECK(incsim::platforms::default_compute("hgx-a100", "") == "a100");
  CHECK(incsim::platforms::default_compute("hgx-b200", "") == "b200");
}

TEST_CASE("NCCL's fixed cost per collective is its tuning model's base latency", "[hardware][nccl]") {
  using incsim::collectives::nccl_base_latency_us;
  // src/graph/tuning.cc, baseLatencies: Ring {6.6, 14.0, 8.4}, Tree {6.8, 14.0, 8.4}.
  CHECK(nccl_base_latency_us(Protocol::LL, false) == 6.6);
  CHECK(nccl_base_latency_us(Protocol::LL, true) == 6.8);
  CHECK(nccl_base_latency_us(Protocol::LL128, false) == 14.0);
  CHECK(nccl_base_latency_us(Protocol::Simple, true) == 8.4);
  Config cfg;
  cfg.set("nccl.host_launch_us", "5", "-c");
  cfg.set("nccl.launch", "thread", "-c");
  const auto thread = incsim::collectives::nccl_software(cfg, "none", 8, false);
  // One thread launches 8 kernels per collective: 40 us, longer than a 15 us collective.
  CHECK(thread.host_period_us() == 40.0);
  CHECK(thread.row_us(15.0) == 40.0);
  CHECK(thread.row_us(100.0) == 100.0);
  Config per_process;
  const auto process = incsim::collectives::nccl_software(per_process, "process", 8, false);
  CHECK(process.host_period_us() == 5.0);
  CHECK(process.base_us(Protocol::Simple) == 8.4);
  Config none;
  const auto off = incsim::collectives::nccl_software(none, "none", 8, false);
  CHECK(off.base_us(Protocol::LL) == 0);
  CHECK(off.row_us(3.0) == 3.0);
  Config bad;
  bad.set("nccl.launch", "graph", "-c");
  CHECK_THROWS_WITH(incsim::collectives::nccl_software(bad, "process", 8, false),
                    "nccl.launch must be process, thread or none, not 'graph'");
}

TEST_CASE("NCCL's fixed cost delays every collective by its protocol's base, at packet level and as flows",
          "[hardware][nccl]") {
  // 8 KiB moves by LL (6.6 us), 64 KiB by LL128 (14.0), 32 MiB by Simple (8.4); the steps
  // start from the same memory state, so the rows move by exactly the base.
  for (const std::string fidelity : {"packet", "flow"}) {
    for (const auto& [size, base] : {std::pair<const char*, double>{"8K", 6.6}, {"64K", 14.0}, {"32M", 8.4}}) {
      INFO(fidelity << " " << size);
      const std::string run = "--platform hgx-h100 --fidelity " + fidelity + " --sizes " + size;
      const double with = time_us(run), without = time_us(run + " -c nccl.launch=none");
      CHECK(with - without == Approx(base).margin(0.006));
    }
  }
}

TEST_CASE("one thread launching every GPU's kernel bounds a small collective by its launches", "[hardware][nccl]") {
  const std::string run = "--platform hgx-a100 --sizes 8K -c nccl.launch=thread -c nccl.host_launch_us=5";
  CHECK(time_us(run) == Approx(40.0).margin(0.006));
  CHECK(time_us(run + " -c nccl.host_launch_us=1") < 40.0);
}

TEST_CASE("a launch mode incsim does not know is one sentence", "[hardware][nccl][bad-input]") {
  const Result r = cli::incsim("--platform hgx-h100 --sizes 8K --quiet -c nccl.launch=mpi");
  CHECK(r.code == 2);
  CHECK(r.err == "incsim: error: nccl.launch must be process, thread or none, not 'mpi'\n");
}
