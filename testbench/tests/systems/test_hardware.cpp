// Today's machines against real ones (docs/hardware.md): HGX A100 and B200
// as their datasheets build them, and NCCL's software around each
// collective (nccl.launch): its fixed cost from NCCL's tuning model, the
// host's launches, the same at packet level and as flows.
#include <catch2/catch.hpp>

#include "cli_run.h"
#include "collectives/nccl.h"
#include "collectives/nccl_tuning.h"
#include "core/config.h"
#include "platforms/platform.h"
#include "topology/topology.h"

#include <nlohmann/json.hpp>
#include <cmath>
#include <string>
#include <utility>

using namespace cli;
using incsim::Config;
using incsim::collectives::Protocol;

namespace {
double time_us(const std::string& args) { return cli::first_row(args)["time_us"].get<double>(); }
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

namespace {
// A cluster of `nodes` nodes of `node`: each GPU's PCIe link to its adapter
// and the adapter's network port, GB/s each way.
struct ClusterLinks {
  double pcie = 0, network = 0;
  bool two_leaves_per_rail = false;
};
ClusterLinks cluster_links(const std::string& node, int nodes, const std::string& net_gbps = "") {
  Config cfg;
  if (!net_gbps.empty()) cfg.set("cluster.net_Gbps", net_gbps, "-c");
  incsim::platforms::PlatformShape shape;
  shape.nodes = nodes;
  shape.node = node;
  const auto t = incsim::platforms::make_topology("cluster", shape, cfg);
  ClusterLinks c;
  const int gpu = t.endpoints().front();
  for (int port = 0; port < t.node(gpu).ports; ++port) {
    const int peer = t.peer({gpu, port}).node;
    if (!incsim::topo::kinds::is_adapter(t.node(peer).block)) continue;
    c.pcie = t.links()[static_cast<size_t>(t.link_at({gpu, port}))].bw_GBps;
    c.network = t.links()[static_cast<size_t>(t.link_at({peer, 1}))].bw_GBps;
  }
  c.two_leaves_per_rail = t.find("leaf0_1") >= 0;
  return c;
}
}  // namespace

TEST_CASE("clusters of HGX A100 and B200 nodes take their DGX's adapters, PCIe and InfiniBand switches",
          "[hardware][platforms][cluster]") {
  // DGX A100: ConnectX-6 HDR, 200 Gb/s, on PCIe 4.0 x16; Quantum's 40-port
  // switches, so 21 nodes (20 down-links a leaf) take two leaves per rail.
  const ClusterLinks a100 = cluster_links("hgx-a100", 21);
  CHECK(a100.pcie == 31.5);
  CHECK(a100.network == 25.0);
  CHECK(a100.two_leaves_per_rail);
  CHECK(cluster_links("hgx-a100", 2, "400").network == 50.0);  // the default is the node's, a key overrides it
  // DGX B200 and DGX H100: ConnectX-7 NDR, 400 Gb/s, PCIe 5.0 x16; Quantum-2's 64 ports.
  for (const char* node : {"hgx-b200", "hgx-h100"}) {
    INFO(node);
    const ClusterLinks c = cluster_links(node, 21);
    CHECK(c.pcie == 63.0);
    CHECK(c.network == 50.0);
    CHECK_FALSE(c.two_leaves_per_rail);
  }
  CHECK(incsim::platforms::default_compute("cluster", "hgx-a100") == "a100");
  CHECK(incsim::platforms::default_compute("cluster", "hgx-b200") == "b200");
  // NCCL runs NVLS only on NVSwitches of Hopper or later (src/graph/search.cc): not across DGX A100s.
  const auto choice = [](const std::string& node) {
    const Result r = cli::incsim("--platform cluster --nodes 2 --node " + node +
                                 " --algorithm nccl --sizes 64M --fidelity flow --quiet --json -");
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["rows"][0]["choice"].get<std::string>();
  };
  CHECK(choice("hgx-a100") == "ring simple, 16 channels");
  CHECK(choice("hgx-b200") == "nvlstree simple, 16 channels");
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
  // A CUDA graph of 20 collectives shares one launch per GPU among them
  // (all_reduce_perf -G, nccl-tests' 20 iterations): 40 / 20 and 5 / 20 us.
  const auto graph = [](const char* launch) {
    Config c;
    c.set("nccl.graph_collectives", "20", "-c");
    return incsim::collectives::nccl_software(c, launch, 8, false);
  };
  CHECK(graph("thread").host_period_us() == 2.0);
  CHECK(graph("process").host_period_us() == 0.25);
  CHECK_THROWS_WITH(graph("none"), Catch::Contains("nccl.launch=none charges no launches"));
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

TEST_CASE("NCCL's proxies add to a step between nodes what net.cc's operations take, by hand", "[hardware][nccl]") {
  // R = 0.6 us a PCIe round trip, P = 1 us a proxy pass. Sender: 1.5 R + P / 2;
  // Simple's receiver 2 R + P / 2, and 2 R + P / 2 more to flush before Hopper.
  // Two GPUs, one in each of two nodes.
  const auto steps = [](Config& c, const char* family) {
    return incsim::collectives::nccl_net_steps(c, family, {0, 1}, {0, 1});
  };
  Config cfg;
  const auto h100 = steps(cfg, "hgx-h100");
  CHECK_FALSE(h100.flush);
  CHECK(h100.step_us(Protocol::LL) == Approx(1.4));
  CHECK(h100.step_us(Protocol::LL128) == Approx(1.4));
  CHECK(h100.step_us(Protocol::Simple) == Approx(3.1));
  CHECK(h100.head_us() == Approx(1.6));  // a slot's way back: R + P
  const auto a100 = steps(cfg, "hgx-a100");
  CHECK(a100.flush);
  CHECK(a100.step_us(Protocol::Simple) == Approx(4.8));
  CHECK(a100.step_us(Protocol::LL) == Approx(1.4));
  CHECK(steps(cfg, "dgx2").flush);  // V100s
  Config off;
  off.set("nccl.proxy_pass_us", "0", "-c");
  off.set("nccl.pcie_round_trip_us", "0", "-c");
  CHECK_FALSE(steps(off, "hgx-h100").charged());
}

TEST_CASE("a step between nodes waits for NCCL's proxies, at packet level and as flows", "[hardware][nccl][cluster]") {
  // NVLSTree on 2 nodes, 512 B: one step up the tree and one down cross the
  // network, each 3.1 us later (Simple on H100s); a SHARP sum crosses once.
  const std::string none = " -c nccl.proxy_pass_us=0 -c nccl.pcie_round_trip_us=0";
  for (const std::string fidelity : {"packet", "flow"}) {
    INFO(fidelity);
    for (const auto& [algorithm, steps] : {std::pair<const char*, double>{"nvlstree", 2}, {"nvlssharp", 1}}) {
      INFO(algorithm);
      const std::string run =
          "--platform cluster --nodes 2 --sizes 512 --algorithm " + std::string(algorithm) + " --fidelity " + fidelity;
      CHECK(time_us(run) - time_us(run + none) == Approx(steps * 3.1).margin(0.02));
    }
  }
  // The header says so on a cluster; one node's steps cross no network.
  CHECK_THAT(cli::incsim("--platform cluster --nodes 2 --sizes 512 --quiet").out,
             Catch::Contains("a step between nodes waits for NCCL's proxy threads and PCIe, LL and LL128 1.4 us "
                             "more, Simple 3.1"));
  CHECK_THAT(cli::incsim("--platform hgx-h100 --sizes 512 --quiet").out,
             !Catch::Contains("a step between nodes"));
}

TEST_CASE("one thread launching every GPU's kernel bounds a small collective by its launches", "[hardware][nccl]") {
  const std::string run = "--platform hgx-a100 --sizes 8K -c nccl.launch=thread -c nccl.host_launch_us=5";
  CHECK(time_us(run) == Approx(40.0).margin(0.006));
  CHECK(time_us(run + " -c nccl.host_launch_us=1") < 40.0);
}

TEST_CASE("a CUDA graph's collectives share its launches, so the GPU's time sets a small row", "[hardware][nccl]") {
  // 8 GPUs' launches from one thread (40 us) over a graph of 20: 2 us, under
  // the 8 KiB collective's GPU time, which the row then is, as without launches.
  for (const std::string fidelity : {"packet", "flow"}) {
    INFO(fidelity);
    const std::string run = "--platform hgx-a100 --sizes 8K -c nccl.launch=thread --fidelity " + fidelity;
    const double graph = time_us(run + " -c nccl.graph_collectives=20");
    CHECK(graph < 40.0);
    CHECK(graph == time_us(run + " -c nccl.host_launch_us=0"));
  }
}

TEST_CASE("a launch mode incsim does not know is one sentence", "[hardware][nccl][bad-input]") {
  const Result r = cli::incsim("--platform hgx-h100 --sizes 8K --quiet -c nccl.launch=mpi");
  CHECK(r.code == 2);
  CHECK(r.err == "incsim: error: nccl.launch must be process, thread or none, not 'mpi'\n");
}

TEST_CASE("an in-switch algorithm on hgx-a100 says its NVSwitches cannot run it, at packet level and as flows",
          "[hardware][platforms]") {
  const std::string what_if = "# what-if: hgx-a100's NVSwitches (2nd generation) neither reduce nor multicast; ";
  for (const char* fidelity : {"packet", "flow"}) {
    INFO(fidelity);
    const Result a100 = cli::incsim(std::string("--platform hgx-a100 --algorithm nvls --sizes 64K --fidelity ") + fidelity);
    REQUIRE(a100.code == 0);
    CHECK_THAT(a100.out, Catch::Contains(what_if + "nvls here"));
    const Result ring = cli::incsim(std::string("--platform hgx-a100 --algorithm ring --sizes 64K --fidelity ") + fidelity);
    CHECK_THAT(ring.out, !Catch::Contains("what-if"));
    const Result h100 = cli::incsim(std::string("--platform hgx-h100 --algorithm nvls --sizes 64K --fidelity ") + fidelity);
    CHECK_THAT(h100.out, !Catch::Contains("what-if"));
  }
  const Result multicast = cli::incsim("--platform hgx-a100 --algorithm multicast --collective allgather --sizes 64K");
  CHECK_THAT(multicast.out, Catch::Contains(what_if + "multicast here"));
}

TEST_CASE("NCCL's graphs on one node are its search's: channels and speed per GPU generation", "[hardware][nccl]") {
  using namespace incsim::collectives;
  // A100: 12 links x 20 GB/s (topo.h) = 240; 6 channels at 40, doubled at 20 (ncclTopoDupChannels).
  const NcclTuning a100(GpuArch::Ampere, 8, 12);
  CHECK(a100.ring().channels == 12);
  CHECK(a100.ring().bw_intra == 20.0);
  CHECK(a100.comm_channels() == 24);
  CHECK(a100.nvls().channels == 0);  // NVLS needs Hopper
  // H100: 18 x 20.6 = 370.8; 6 at 60 doubled to 12 at 30; NVLS: 8 heads, 9 x 40 <= 370.8, bwInter up to 60.
  const NcclTuning h100(GpuArch::Hopper, 8, 18);
  CHECK(h100.ring().channels == 12);
  CHECK(h100.ring().bw_intra == 30.0);
  CHECK(h100.nvls().channels == 8);
  CHECK(h100.nvls().bw_intra == 40.0);
  CHECK(h100.nvls().bw_inter == 60.0);
  // B200: 18 x 40.1 = 721.8; 8 at 90 doubled to 16 at 45; NVLS 9 x 80 <= 721.8.
  const NcclTuning b200(GpuArch::Blackwell, 8, 18);
  CHECK(b200.ring().channels == 16);
  CHECK(b200.ring().bw_intra == 45.0);
  CHECK(b200.nvls().bw_intra == 80.0);
  CHECK(b200.nvls().bw_inter == 90.0);
}

TEST_CASE("NCCL's choice is its model's fastest, by hand", "[hardware][nccl]") {
  using namespace incsim::collectives;
  const NcclTuning h100(GpuArch::Hopper, 8, 18);
  // Ring LL: 6.6 + 14 x 0.6 us, min(141, 12 x 30 / 2) x 8/14 GB/s; NVLS: 25 us,
  // 8 x min(40 x 0.85 x 7/8 x 2, 60) x 8/14 GB/s.
  const double ll_bw = 141.0 * 8 / 14, nvls_bw = 8 * 59.5 * 8 / 14;
  CHECK(h100.model_us(Collective::AllReduce, NcclAlgo::Ring, Protocol::LL, 1 << 20) ==
        Approx(15.0 + (1 << 20) / (1000 * ll_bw)));
  CHECK(h100.model_us(Collective::AllReduce, NcclAlgo::Nvls, Protocol::Simple, 1 << 20) ==
        Approx(25.0 + (1 << 20) / (1000 * nvls_bw)));
  CHECK(h100.model_us(Collective::AllReduce, NcclAlgo::Nvls, Protocol::LL, 1 << 20) < 0);  // NVLS is Simple only
  const NcclChoice at_1m = h100.choose(Collective::AllReduce, 1 << 20);
  CHECK(at_1m.algo == NcclAlgo::Ring);
  CHECK(at_1m.proto == Protocol::LL);
  CHECK(h100.choose(Collective::AllReduce, 2 << 20).algo == NcclAlgo::Nvls);  // 32.7 us against LL's 41.0
  CHECK(h100.choose(Collective::AllReduce, 2 << 20, nccl_algo_bit(NcclAlgo::Ring)).proto == Protocol::LL);  // NCCL_ALGO=Ring
  // A100 at 4 MiB: LL 98.7 us, LL128 14 + 14 x 1.9 + 4 MiB / (220.8 x 8/14) = 73.8, Simple 86.6.
  const NcclTuning a100(GpuArch::Ampere, 8, 12);
  const NcclChoice at_4m = a100.choose(Collective::AllReduce, 4 << 20);
  CHECK(at_4m.proto == Protocol::LL128);
  CHECK(at_4m.model_us == Approx(40.6 + (4 << 20) / (1000 * 220.8 * 8 / 14)));
  CHECK(at_4m.channels == 24);
  // enqueue.cc: LL gives each channel 512 threads x 8 B x 8 ranks = 32 KiB before adding one.
  CHECK(a100.choose(Collective::AllReduce, 64 << 10).channels == 2);
  CHECK(a100.choose(Collective::AllReduce, 8 << 10).channels == 1);
  CHECK_THROWS_WITH(a100.choose(Collective::AllReduce, 1 << 20, nccl_algo_bit(NcclAlgo::Nvls)),
                    Catch::Contains("NVLS needs Hopper or later"));
}

TEST_CASE("NCCL's graphs and choice across a cluster's nodes, by hand", "[hardware][nccl][cluster]") {
  using namespace incsim::collectives;
  // 4 nodes of 8 H100s, each GPU with a 400 Gb/s adapter (50 GB/s) on PCIe.
  const NcclTuning h100(GpuArch::Hopper, 32, 18, NcclNet{4, 50.0, 63.0, true});
  // Ring: from 48 GB/s (sm90SpeedArrayInter, under the adapters' 50), one
  // channel per adapter, 7 x 48 of a GPU's 370.8 GB/s of NVLink; 8 x 48 >=
  // 370.8 ends pass 1, and Hopper doubles no channels under 50 GB/s.
  CHECK(h100.ring().channels == 8);
  CHECK(h100.ring().bw_inter == 48.0);
  CHECK(h100.comm_channels() == 16);
  // NVLS: 8 heads at 40 (9 x 40 <= 370.8), bwInter raised to the adapters' 48.
  CHECK(h100.nvls().channels == 8);
  CHECK(h100.nvls().bw_intra == 40.0);
  CHECK(h100.nvls().bw_inter == 48.0);
  // NVL72 nodes: 15 x 48 = 720 GB/s, then 16 x 45.1 = 721.6 (the speed sm100's array has for it).
  const NcclTuning gb200(GpuArch::Blackwell, 144, 18, NcclNet{2, 50.0, 63.0, false});
  CHECK(gb200.ring().channels == 16);
  CHECK(gb200.ring().bw_inter == 45.1);
  // Its NVLS: 29 heads at 24 (30 x 24 <= 721.8) carry the most, 696 GB/s.
  CHECK(gb200.nvls().channels == 29);
  CHECK(gb200.nvls().bw_intra == 24.0);
  CHECK(gb200.nvls().bw_inter == 48.0);

  // 64 KiB: the tree's LL, 6.8 + 2 (7 x 0.6 + log2(4) x 5.0) us at
  // min(8 x 48 x 0.92, 8 x 36.0) / 3.8, capped at llMaxBw's 20.4, x 0.5 to
  // algbw, x 0.6 (treeCorrectionFactor at 1024 x 64 B).
  const NcclChoice small = h100.choose(Collective::AllReduce, 64 << 10);
  CHECK(small.algo == NcclAlgo::Tree);
  CHECK(small.proto == Protocol::LL);
  CHECK(small.model_us == Approx(35.2 + (64 << 10) / (1000 * 20.4 * 0.5 * 0.6)));
  CHECK(small.channels == 16);  // the tree's LL threshold is not times the ranks
  // 1 MiB: the tree's LL128, 14 + 2 (7 x 1.25 + 2 x 8.5) at min(288 x 120/128, 8 x 29.0) x 0.5 x 0.6.
  const NcclChoice mid = h100.choose(Collective::AllReduce, 1 << 20);
  CHECK(mid.algo == NcclAlgo::Tree);
  CHECK(mid.proto == Protocol::LL128);
  CHECK(mid.model_us == Approx(65.5 + (1 << 20) / (1000 * 232.0 * 0.5 * 0.6)));
  // 16 MiB: NVLSTree, 25 + 2 x 2 x 20.9 us at 8 x min(40 x 0.85 x 7/8 x 2, 48, 45.5) x 32/62.
  const NcclChoice big = h100.choose(Collective::AllReduce, 16 << 20);
  CHECK(big.algo == NcclAlgo::NvlsTree);
  CHECK(big.model_us == Approx(108.6 + (16 << 20) / (1000 * 8 * 45.5 * 32 / 62)));
  // The ring across nodes: 56 steps at the network post's 1.0 us (over
  // NVLink's 0.6) and 6 at 2.7; Simple's latency x 1.4 once each of 16
  // channels' 32 ranks gets 64 B.
  CHECK(h100.model_us(Collective::AllReduce, NcclAlgo::Ring, Protocol::LL, 8192) ==
        Approx(78.8 + 8192 / (1000 * 20.4 * 32 / 62)));
  CHECK(h100.model_us(Collective::AllReduce, NcclAlgo::Ring, Protocol::Simple, 1 << 20) ==
        Approx((8.4 + 56 * 3.4 + 6 * 14.0) * 1.4 + (1 << 20) / (1000 * 384.0 * 32 / 62)));
  // No tree or NVLSTree for an all-gather (tuning.cc), no NVLS across nodes without CollNet.
  CHECK(h100.choose(Collective::AllGather, 64 << 20).algo == NcclAlgo::Ring);
  CHECK(h100.model_us(Collective::AllReduce, NcclAlgo::Nvls, Protocol::Simple, 1 << 20) < 0);
  // With it (NCCL_COLLNET_ENABLE=1), NVLS and SHARP: 25 + 18 us at 8 x min(59.5, 48) x 32/62,
  // from 64 KiB, where the tree's LL takes 45.9.
  const NcclTuning sharp(GpuArch::Hopper, 32, 18, NcclNet{4, 50.0, 63.0, true, true});
  const NcclChoice nvls = sharp.choose(Collective::AllReduce, 1 << 20);
  CHECK(nvls.algo == NcclAlgo::Nvls);
  CHECK(nvls.model_us == Approx(43.0 + (1 << 20) / (1000 * 8 * 48.0 * 32 / 62)));
  CHECK(sharp.choose(Collective::AllReduce, 64 << 10).algo == NcclAlgo::Nvls);
  CHECK(sharp.choose(Collective::AllReduce, 32 << 10).algo == NcclAlgo::Tree);
  CHECK(sharp.choose(Collective::AllGather, 64 << 20).algo == NcclAlgo::Ring);
  const Result with_sharp = cli::incsim("--platform cluster --nodes 2 --algorithm nccl,nvlssharp -c nccl.collnet=true "
                                        "--sizes 1M --fidelity flow --quiet --json -");
  REQUIRE(with_sharp.code == 0);
  const auto both = nlohmann::json::parse(with_sharp.out)["rows"];
  CHECK(both[0]["choice"] == "nvls simple, 16 channels");
  CHECK(both[0]["time_us"] == both[1]["time_us"]);  // run as nvlssharp

  // One GPU per node (--tp's data-parallel groups): one channel at 48 GB/s
  // on the GPU's own adapter, doubled at 24 (bwIntra 48 < 50 stops Hopper's
  // doubling only above 4 channels); every step crosses the network, at the
  // tree's network latencies (ppn = 1).
  const NcclTuning rail(GpuArch::Hopper, 4, 18, NcclNet{4, 50.0, 63.0, true});
  CHECK(rail.ring().channels == 2);
  CHECK(rail.ring().bw_inter == 24.0);
  CHECK(rail.nvls().channels == 0);
  // 8 KiB: the tree's LL, 6.8 + 2 x 2 x 5.0 us at min(48 x 0.92 / 3.8, 20.4) x 0.5 x 0.7,
  // against the ring's 6.6 + 6 x 5.0 at 20.4 x 4/6.
  const NcclChoice rail_small = rail.choose(Collective::AllReduce, 8192);
  CHECK(rail_small.algo == NcclAlgo::Tree);
  CHECK(rail_small.model_us == Approx(26.8 + 8192 / (1000 * 48 * 0.92 / 3.8 * 0.5 * 0.7)));
  CHECK(rail.model_us(Collective::AllReduce, NcclAlgo::Ring, Protocol::LL, 8192) ==
        Approx(36.6 + 8192 / (1000 * 20.4 * 4 / 6)));
  CHECK(rail.choose(Collective::AllReduce, 64 << 20).algo == NcclAlgo::Ring);  // Simple: 2,226.6 us against the tree's 3,856
  const std::string train = "--platform cluster --nodes 2 --model transformer -c transformer.layers=2 "
                            "-c transformer.hidden=512 -c transformer.heads=8 -c transformer.sequence=128 --batch 4 "
                            "--tp 8 --algorithm nccl --fidelity flow --quiet --json -";
  const Result dp = cli::incsim(train);
  REQUIRE(dp.code == 0);
  CHECK(nlohmann::json::parse(dp.out)["rows"][0]["comm_us"].get<double>() > 0);

  // The run: each size's choice as its own algorithm runs it, elements checked.
  const Result r = cli::incsim("--platform cluster --nodes 2 --algorithm nccl --sizes 8K,1M --quiet --json -");
  REQUIRE(r.code == 0);
  const auto rows = nlohmann::json::parse(r.out)["rows"];
  CHECK(rows[0]["choice"] == "tree ll, 2 channels");
  CHECK(rows[1]["choice"] == "tree ll128, 16 channels");
  CHECK(rows[1]["wrong"] == 0);
  // Registered buffers change nothing across nodes: NCCL's symmetric kernels run on one node only.
  const Result sym = cli::incsim("--platform cluster --nodes 2 --algorithm nccl -c nccl.symmetric=true --sizes 8K "
                                 "--fidelity flow --quiet --json -");
  REQUIRE(sym.code == 0);
  CHECK(nlohmann::json::parse(sym.out)["rows"][0]["choice"] == "tree ll, 2 channels");
  const Result tree = cli::incsim("--platform cluster --nodes 2 --algorithm tree -c ring.protocol=ll128 --sizes 1M "
                                  "--quiet --json -");
  REQUIRE(tree.code == 0);
  CHECK(rows[1]["time_us"] == nlohmann::json::parse(tree.out)["rows"][0]["time_us"]);
}

TEST_CASE("NCCL's choice for an all-gather and a reduce-scatter, by hand", "[hardware][nccl]") {
  using namespace incsim::collectives;
  const NcclTuning h100(GpuArch::Hopper, 8, 18);
  // nsteps = n - 1 = 7 (tuning.cc); the size is the whole buffer (ncclFuncMaxSendRecvCount).
  // Ring LL: 6.6 + 7 x 0.6 us at min(141, 12 x 30 / 2) x 8/7 GB/s.
  // NVLS: 25 us at 8 x min(40 x 0.85 x 7/8 x 7/8, 60) GB/s, its busbw taken as algbw.
  const double ll_bw = 141.0 * 8 / 7, nvls_bw = 8 * 40 * 0.85 * 7 / 8 * 7 / 8;
  for (const Collective c : {Collective::AllGather, Collective::ReduceScatter}) {
    CHECK(h100.model_us(c, NcclAlgo::Ring, Protocol::LL, 1 << 20) == Approx(10.8 + (1 << 20) / (1000 * ll_bw)));
    CHECK(h100.model_us(c, NcclAlgo::Nvls, Protocol::Simple, 1 << 20) == Approx(25.0 + (1 << 20) / (1000 * nvls_bw)));
    // Simple at 256 MiB: 8.4 + 7 x 3.4 us at 12 x 30 x 8/7 GB/s, against NVLS's 1314 us.
    const NcclChoice big = h100.choose(c, 256 << 20);
    CHECK(big.algo == NcclAlgo::Ring);
    CHECK(big.proto == Protocol::Simple);
    CHECK(big.model_us == Approx(32.2 + (256 << 20) / (1000 * 360.0 * 8 / 7)));
  }
  CHECK_THROWS_WITH(h100.choose(Collective::Broadcast, 1 << 20), Catch::Contains("not a broadcast"));
  const Result r = cli::incsim("--platform hgx-h100 --algorithm nccl --collective reducescatter --sizes 1M --quiet --json -");
  REQUIRE(r.code == 0);
  const auto row = nlohmann::json::parse(r.out)["rows"][0];
  CHECK(row["choice"] == "ring ll, 18 channels");
  CHECK(row["wrong"] == 0);
}

TEST_CASE("NCCL's symmetric kernels are its symmetric model's pick, by hand", "[hardware][nccl]") {
  using namespace incsim::collectives;
  // symmetric.cc on Blackwell: LL kernels 11 us, the others 19.5, plus
  // softplus(busBytes / bw - 1). At 8 B every kernel's bytes are nothing,
  // so one block; the multimem LL kernel's 1.1 beats the plain one by a hair.
  const NcclTuning b200(GpuArch::Blackwell, 8, 18);
  const SymChoice tiny = b200.choose_symmetric(Collective::AllReduce, 8);
  CHECK(tiny.kernel == SymKernel::AgLlMc);
  CHECK(tiny.blocks == 1);
  CHECK(tiny.model_us == Approx(11.0 + std::log1p(std::exp(-1.0))).epsilon(0.001));
  // 64 KiB: LL's 9 x 8 x 64 KiB at 600 GB/s takes 7.3 us, more than the
  // multimem kernel's 8.5 us more base: RSxLDMC_AGxSTMC.
  CHECK(b200.choose_symmetric(Collective::AllReduce, 32 << 10).kernel == SymKernel::AgLlMc);
  const SymChoice mid = b200.choose_symmetric(Collective::AllReduce, 64 << 10);
  CHECK(mid.kernel == SymKernel::RsLdmcAgStmc);
  CHECK(mid.blocks <= 4);  // nMaxBlocksNvls: 32 / 8 ranks
  CHECK(b200.symmetric_model_us(SymKernel::RsLdAgSt, 1 << 30, 64) == Approx(19.5 + 1.75 * (1 << 30) / (600.0 * 1073.741824) - 1).epsilon(0.001));
  // Hopper's LL base is 4.5 us; Ampere has no multimem, and no LL from 2 GiB.
  CHECK(NcclTuning(GpuArch::Hopper, 8, 18).choose_symmetric(Collective::AllReduce, 8).model_us == Approx(4.5 + std::log1p(std::exp(-1.0))).epsilon(0.001));
  const NcclTuning a100(GpuArch::Ampere, 8, 12);
  CHECK(a100.choose_symmetric(Collective::AllReduce, 8).kernel == SymKernel::AgLl);
  CHECK(a100.choose_symmetric(Collective::AllReduce, 1 << 20).kernel == SymKernel::RsLdAgSt);
  CHECK(a100.choose_symmetric(Collective::AllReduce, 2ull << 30).kernel == SymKernel::RsLdAgSt);
  CHECK(a100.choose_symmetric(Collective::AllReduce, 64ull << 30).model_us < 0);  // none from 64 GiB: NCCL's other kernels
  CHECK(b200.choose_symmetric(Collective::AllReduce, 8, false).model_us < 0);  // an int or a max: NCCL's others
  // An all-gather of 8 GPUs at 64 KiB is 8 KiB a rank: the LL kernels' 8.5
  // us base beats AllGather_STMC's 13; at 64 MiB the multimem store wins.
  CHECK(b200.choose_symmetric(Collective::AllGather, 64 << 10).kernel == SymKernel::AllGatherLlMc);
  CHECK(b200.choose_symmetric(Collective::AllGather, 64 << 20).kernel == SymKernel::AllGatherStMc);
  CHECK(b200.choose_symmetric(Collective::AllGather, 64 << 10, false).model_us > 0);  // any type
  CHECK(a100.choose_symmetric(Collective::ReduceScatter, 64 << 20).kernel == SymKernel::ReduceScatterLd);
  CHECK(a100.choose_symmetric(Collective::Broadcast, 64 << 20).model_us < 0);
}

TEST_CASE("nccl.symmetric runs NCCL's symmetric kernel per size, at packet level and as flows", "[hardware][nccl]") {
  const std::string run = "--platform hgx-b200 --algorithm nccl -c nccl.symmetric=true --sizes 32K,64K --quiet --json -";
  const nlohmann::json packet = nlohmann::json::parse(cli::incsim(run).out)["rows"],
                       flow = nlohmann::json::parse(cli::incsim(run + " --fidelity flow").out)["rows"];
  REQUIRE(packet.size() == 2);
  REQUIRE(flow.size() == 2);
  CHECK(packet[0]["choice"] == "AllReduce_AGxLLMC_R (oneshot), 10 blocks");
  CHECK(packet[1]["choice"] == "AllReduce_RSxLDMC_AGxSTMC (nvls), 1 block");
  for (size_t i = 0; i < 2; ++i) {
    CHECK(packet[i]["wrong"] == 0);
    CHECK(flow[i]["choice"] == packet[i]["choice"]);
    CHECK(flow[i]["time_us"].get<double>() == Approx(packet[i]["time_us"].get<double>()).epsilon(0.05));
  }
  // As flows the multimem kernel's one block reads in lockstep: the row says what that may cost.
  const std::string lockstep = "#   flows: the GPUs' reducing reads run on 1 channel each, their passes in lockstep";
  CHECK_THAT(cli::incsim("--platform hgx-b200 --algorithm nccl -c nccl.symmetric=true --sizes 64K --fidelity flow").out,
             Catch::Contains(lockstep));
  CHECK_THAT(cli::incsim("--platform hgx-b200 --algorithm nvls --sizes 64K --fidelity flow").out,
             !Catch::Contains("#   flows: the GPUs' reducing reads"));
  // One-shot LL and the direct kernel on A100 (no multimem), each checked element by element.
  const Result a = cli::incsim("--platform hgx-a100 --algorithm nccl -c nccl.symmetric=true --sizes 8K,1M --quiet --json -");
  REQUIRE(a.code == 0);
  const auto rows = nlohmann::json::parse(a.out)["rows"];
  CHECK(rows[0]["choice"] == "AllReduce_AGxLL_R (oneshot), 6 blocks");  // 9 x 8 x 8 KiB needs six of 65 GB/s
  CHECK(rows[1]["choice"].get<std::string>().rfind("AllReduce_RSxLD_AGxST (direct), ", 0) == 0);
  for (const auto& row : rows) CHECK(row["wrong"] == 0);
  // Each runs alone as the algorithm its row names, the same program at the same size's channels.
  CHECK(time_us("--platform hgx-a100 --algorithm nccl -c nccl.symmetric=true --sizes 8K") ==
        time_us("--platform hgx-a100 --algorithm oneshot --sizes 8K -c nccl.launch=process"));
  CHECK(time_us("--platform hgx-a100 --algorithm nccl -c nccl.symmetric=true --sizes 1M") ==
        time_us("--platform hgx-a100 --algorithm direct --sizes 1M -c nccl.launch=process"));
  CHECK(time_us("--platform hgx-a100 --algorithm nccl -c nccl.symmetric=true --sizes 64K --collective allgather") ==
        time_us("--platform hgx-a100 --algorithm direct -c ring.protocol=ll --sizes 64K --collective allgather "
                "-c nccl.launch=process"));  // AllGather_LL
  const Result pcie = cli::incsim("--platform dgx1v --algorithm direct --sizes 8K --quiet");
  CHECK(pcie.code == 2);
  CHECK(pcie.err == "incsim: error: direct stores into every peer, and on dgx1v some GPUs reach each other only over "
                    "PCIe, which incsim does not model: run it on a switch fabric\n");
  // NCCL runs them for a float sum only: an int32 sum takes its other kernels.
  CHECK(time_us("--platform hgx-b200 --algorithm nccl -c nccl.symmetric=true --sizes 8K --dtype int32") ==
        time_us("--platform hgx-b200 --algorithm nccl --sizes 8K --dtype int32"));
  // All-gather and reduce-scatter: NCCL's LL, store and load kernels, and their multimem ones.
  for (const std::string c : {"allgather", "reducescatter"})
    for (const std::string platform : {"hgx-a100", "hgx-b200"}) {
      const Result g = cli::incsim("--platform " + platform + " --algorithm nccl -c nccl.symmetric=true --collective " +
                                   c + " --sizes 64K,64M --quiet --json -");
      INFO(platform << " " << c << ": " << g.err);
      REQUIRE(g.code == 0);
      for (const auto& row : nlohmann::json::parse(g.out)["rows"]) {
        CHECK(row["wrong"] == 0);
        CHECK(row["choice"].get<std::string>().rfind(c == "allgather" ? "AllGather_" : "ReduceScatter_", 0) == 0);
      }
    }
}

TEST_CASE("algorithm nccl runs NCCL's choice per size, exact, and names it in each row", "[hardware][nccl]") {
  const Result r = cli::incsim("--platform hgx-h100 --algorithm nccl --sizes 8K,2M --quiet --json -");
  REQUIRE(r.code == 0);
  const auto rows = nlohmann::json::parse(r.out)["rows"];
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["choice"] == "ring ll, 1 channel");
  CHECK(rows[1]["choice"] == "nvls simple, 16 channels");  // nvls.channels: NCCL's 16 NVLS thread blocks
  for (const auto& row : rows) CHECK(row["wrong"] == 0);
  // The choice runs as its own algorithm would: the same row (each size alone: on hgx-h100 a size's
  // row still depends on the sizes before it, README).
  CHECK(time_us("--platform hgx-h100 --algorithm nccl --sizes 2M") ==
        time_us("--platform hgx-h100 --algorithm nvls --sizes 2M"));
  // On Blackwell NCCL runs NVLS on 24 thread blocks on one node or NVLink
  // domain (src/transport/nvls.cc, NVLS_NCHANNELS_SM100_NVL, since 2.27).
  for (const std::string platform : {"hgx-b200", "nvl72 --gpus 8"}) {
    INFO(platform);
    const Result b = cli::incsim("--platform " + platform + " --algorithm nccl --sizes 16M --quiet --json -");
    REQUIRE(b.code == 0);
    CHECK(nlohmann::json::parse(b.out)["rows"][0]["choice"] == "nvls simple, 24 channels");
  }
}

TEST_CASE("algorithm nccl where NCCL's model is not built is one sentence", "[hardware][nccl][bad-input]") {
  const auto refused = [](const std::string& args, const std::string& sentence) {
    const Result r = cli::incsim(args + " --sizes 8K --quiet");
    CHECK(r.code == 2);
    CHECK(r.err == "incsim: error: " + sentence + "\n");
  };
  const std::string where = "nccl runs NCCL's tuning model on NVLink nodes of Ampere or later: hgx-a100, hgx-h100, "
                            "hgx-b200, nvl72 and clusters of them ";
  refused("--platform dgx2 --algorithm nccl", where + "(not dgx2)");
  refused("--platform cluster --nodes 2 --node dgx2 --algorithm nccl", where + "(not a cluster whose nodes are of family klenk)");
  refused("--platform hgx-h100 --algorithm nccl --collective broadcast",
          "algorithm 'nccl' does not run broadcast; choose one of multicast, ring, blink");
  refused("--platform hgx-h100 --algorithm nccl -c nccl.algorithms=pat",
          "nccl.algorithms lists ring, tree, nvls and nvlstree, comma-separated, not 'pat'");
  refused("--platform hgx-h100 --algorithm nccl -c nccl.algorithms=tree",
          "nccl.algorithms allows none that NCCL runs here: on one node the ring and nvls (NVLS needs Hopper or "
          "later), across nodes the ring, and for an all-reduce tree, nvlstree and (with nccl.collnet) nvls");
  refused("--platform cluster --nodes 2 --algorithm nccl -c cluster.network=roce -c nccl.collnet=true",
          "nccl.collnet weighs NVLS with SHARP in the InfiniBand leaves, which a RoCE cluster "
          "(cluster.network=roce) does not have");
}

TEST_CASE("algorithm nccl in training runs each collective's size as NCCL chooses it, at both fidelities",
          "[hardware][nccl][train]") {
  // Tensor-parallel all-reduces of 1 MiB: NCCL's ring LL, not the NVLS its 1 GiB header sets up.
  const std::string model = "--platform hgx-h100 --model transformer -c transformer.layers=2 -c transformer.hidden=512 "
                            "-c transformer.heads=8 -c transformer.sequence=128 --batch 4 --tp 8 --iterations 1 "
                            "--warmup 0 --quiet --json - --algorithm ";
  const auto tp_comm = [&model](const std::string& algorithm, const std::string& fidelity) {
    const Result r = cli::incsim(model + algorithm + " --fidelity " + fidelity);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["rows"][0]["tp_comm_us"].get<double>();
  };
  const double packet = tp_comm("nccl", "packet"), flow = tp_comm("nccl", "flow"), nvls = tp_comm("nvls", "packet");
  INFO("nccl " << packet << " us, as flows " << flow << ", nvls " << nvls);
  CHECK(flow == Approx(packet).epsilon(0.05));
  CHECK(packet > 1.2 * nvls);
}

TEST_CASE("algorithm nccl as flows runs each size's choice, as packet level does", "[hardware][nccl][flow]") {
  // LL's ring at 64 KiB, NVLS from 4 MiB (the choices checked above).
  const std::string run = "--platform hgx-h100 --algorithm nccl --sizes 64K,4M --quiet --json -";
  const nlohmann::json packet = nlohmann::json::parse(cli::incsim(run).out)["rows"],
                       flow = nlohmann::json::parse(cli::incsim(run + " --fidelity flow").out)["rows"];
  REQUIRE(flow.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    INFO(flow[i]["size_bytes"] << " B: " << flow[i]["choice"]);
    CHECK(flow[i]["choice"] == packet[i]["choice"]);
    CHECK(flow[i]["time_us"].get<double>() == Approx(packet[i]["time_us"].get<double>()).epsilon(0.05));
  }
  CHECK(flow[0]["choice"] == "ring ll, 2 channels");
  CHECK(flow[1]["choice"] == "nvls simple, 16 channels");
  const Result r = cli::incsim("--platform hgx-h100 --algorithm nccl --sizes 64K,4M --fidelity flow");
  CHECK_THAT(r.out, Catch::Contains("#   nccl's choice: ring ll, 2 channels (NCCL's model 15.8 us)\n#   flows: "));
}

TEST_CASE("algorithms compared with nccl are compared against it by default", "[hardware][nccl]") {
  const Result r = cli::incsim("--platform hgx-h100 --algorithm ring,nccl --sizes 8K");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("speedup: nccl's time over each one's"));
  const Result first = cli::incsim("--platform hgx-h100 --algorithm ring,nccl --baseline ring --sizes 8K");
  CHECK_THAT(first.out, Catch::Contains("speedup: ring's time over each one's"));
}

namespace {
// GPU 0's wire bytes each way over its links, in units of the message, from a run's JSON.
std::pair<double, double> gpu0_wire(const std::string& args, double message) {
  const Result r = cli::incsim(args + " --quiet --json -");
  REQUIRE(r.code == 0);
  const auto row = nlohmann::json::parse(r.out)["rows"][0];
  CHECK(row["wrong"] == 0);
  double up = 0, down = 0;
  for (const auto& l : row["links"]) {
    if (l["from"].get<std::string>().rfind("gpu0.", 0) == 0) up += l["bytes"].get<double>();
    if (l["to"].get<std::string>().rfind("gpu0.", 0) == 0) down += l["bytes"].get<double>();
  }
  return {up / message, down / message};
}
}  // namespace

TEST_CASE("a ring's NVLink packets are the SMs' 128-byte stores, each acked by one flit", "[hardware][nvlink]") {
  // Each GPU sends 2(n-1)/n of the message (1.75 on 8 GPUs) in 128 B
  // behind a 16 B header, and acks with 16 B what it receives: 160 B of
  // wire per 128 B each way, 80% of a link, NCCL's 20.6 of 25 GB/s. Flags
  // add a few packets per step.
  const double data = 1.75 * 160 / 128;
  const auto [up, down] = gpu0_wire("--platform hgx-h100 --algorithm ring -c ring.protocol=simple --sizes 4M", 4 << 20);
  CHECK(up == Approx(data).epsilon(0.005));
  CHECK(down == Approx(data).epsilon(0.005));
  const Result r = cli::incsim("--platform hgx-h100 --algorithm ring --sizes 8K --quiet");
  CHECK_THAT(r.out, Catch::Contains("bound: 360.0 GB/s payload per GPU"));
}

TEST_CASE("NVLS's per-GPU bytes each way on hgx-h100: multimem loads, their reads, multicast stores",
          "[hardware][nvlink][nvls]") {
  // Per 128 B block of the message S, each GPU: up, the switch's reads of
  // its copy answered (144 B) and, for its own eighth, a multimem.ld_reduce
  // (a 16 B request) and a multimem.st (144 B); down, the switch's read
  // requests (16 B), the multicast stores of every block (144 B) and its
  // eighth's reduced answers (144 B). Multicast stores are posted (Klenk),
  // so none is acked.
  const double up_want = (144 + (16 + 144) / 8.0) / 128, down_want = (16 + 144 + 144 / 8.0) / 128;
  const auto [up, down] = gpu0_wire("--platform hgx-h100 --algorithm nvls --sizes 4M", 4 << 20);
  CHECK(up == Approx(up_want).epsilon(0.005));
  CHECK(down == Approx(down_want).epsilon(0.005));
}
