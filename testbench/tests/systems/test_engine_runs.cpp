// Each engine's runs through the real binary: in-network push and pull,
// the NICs' schedules, Blink's trees, synthetic traffic, stalls and what
// the stall report says.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

#ifndef PLATFORM_EXAMPLES
#error "CMake passes the folder of the example platform files as PLATFORM_EXAMPLES"
#endif

using namespace cli;

namespace {
// One size of one run, from its JSON results.
nlohmann::json row_of(const std::string& args) {
  TempDir d;
  const Result r = incsim(args + " --quiet --json '" + d.file("r.json") + "'");
  INFO("incsim " << args << "\n" << r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
  REQUIRE(j["rows"].size() == 1);
  CHECK(j["rows"][0]["wrong"] == 0);
  return j["rows"][0];
}

// Runs `args` twice, each writing its own JSON and VCD into d (a.json,
// a.vcd; b.json, b.vcd): both must be byte-identical. Returns the VCD.
std::string run_twice_identical(const TempDir& d, const std::string& args) {
  const Result a = incsim(args + " --vcd " + d.file("a.vcd") + " --json " + d.file("a.json"));
  const Result b = incsim(args + " --vcd " + d.file("b.vcd") + " --json " + d.file("b.json"));
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  CHECK(slurp(d.file("a.json")) == slurp(d.file("b.json")));
  const std::string vcd = slurp(d.file("a.vcd"));
  CHECK(vcd == slurp(d.file("b.vcd")));
  return vcd;
}
}  // namespace

TEST_CASE("push and pull run with their defaults on a star and on a platform file", "[cli][innet]") {
  // Klenk §IV-F1 sizes waves from the tables: 4 x 256 B of table on a 4-GPU star.
  for (const char* args : {"--platform star --gpus 4 --algorithm push", "--platform star --gpus 16 --algorithm pull",
                           "--platform " PLATFORM_EXAMPLES "/dual-switch.yaml --algorithm push"}) {
    INFO(args);
    const Result r = incsim(std::string(args) + " --sizes 64K --quiet --csv -");
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(r.err.empty());
  }
  // A wave the tables cannot hold, set by the user, names both keys.
  require_error("--platform star --gpus 4 --algorithm push --sizes 64K -c gpu.copy_engine.wave_bytes=8192",
                {"gpu.copy_engine.wave_bytes", "switch.reduction_table.bytes", "1024 B"});
}

TEST_CASE("a stall stops the run with a report of what each block holds and waits for", "[cli][stall]") {
  // With a 50 ns stall timeout the first memory latency (no link moves a
  // byte while the cores read their first data) already counts as a stall.
  const Result r = incsim("--platform star --gpus 3 --sizes 64K --quiet -c sim.stall_timeout_us=0.05");
  INFO("stderr:\n" << r.err);
  REQUIRE(r.exited);
  CHECK(r.code == 2);
  const auto err = lines(r.err);
  REQUIRE(err.size() > 1);
  CHECK_THAT(err[0], Catch::StartsWith("incsim: error: simulation stalled at 50 ns during size 64K"));
  CHECK_THAT(r.err, Catch::Contains("gpu2 cores queue 11: pass 0 operation 55 (s) sending"));
}

// The rows of one run's JSON, with `timeout_us` as the stall timeout.
std::string rows_with_stall_timeout(const std::string& args, const std::string& timeout_us) {
  TempDir d;
  const Result r = incsim(args + " --quiet -c sim.stall_timeout_us=" + timeout_us + " --json " + d.file("r.json"));
  INFO("incsim " << args << " -c sim.stall_timeout_us=" << timeout_us << "\nstderr:\n" << r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(slurp(d.file("r.json")))["rows"].dump();
}

// Watching must not change what is watched: a watchdog's own timed event
// used to reorder the kernel's events at equal times (97.44 us here with a
// 2 us timeout, 97.18 us with 10 s).
TEST_CASE("the stall timeout does not change a GPU platform's result", "[cli][stall][determinism]") {
  const std::string run = "--platform star --gpus 8 --sizes 1M";
  const std::string a = rows_with_stall_timeout(run, "2");
  CHECK(a == rows_with_stall_timeout(run, "10000000"));
  CHECK(a == rows_with_stall_timeout(run, "0"));
}

// A row is what its size gives alone: the machine's arbiters (a switch's
// turn over a trunk's links, its crossbar's and each port's round-robin
// pointers) start every collective where they start the first, and nothing
// the last size scheduled, or replaced in SystemC's queue, is left to change
// the order of the next one's simultaneous events. Each engine: the cores
// (with and without NCCL's fixed cost, which used to hide the ring's
// difference), the copy engine's pull, NVLS on the switches' tables.
TEST_CASE("a size's row is the same alone and after other sizes", "[cli][determinism]") {
  for (const char* run_of : {"--platform hgx-h100 --algorithm nvls", "--platform hgx-h100 --algorithm ring",
                                "--platform hgx-h100 --algorithm ring -c nccl.launch=none",
                                "--platform dgx2 --algorithm pull"}) {
    const std::string run = std::string(run_of) + " --quiet --json - --sizes ";
    const Result alone = incsim(run + "4M");
    const Result after = incsim(run + "64K,1M,4M");
    REQUIRE(alone.code == 0);
    REQUIRE(after.code == 0);
    const auto rows = nlohmann::json::parse(after.out)["rows"];
    REQUIRE(rows.size() == 3);
    CHECK(rows[2] == nlohmann::json::parse(alone.out)["rows"][0]);
  }
}

// Issue 14's case: 164368.42 us with the default timeout, 166739.31 us with 0.1 s.
TEST_CASE("the stall timeout does not change a lossy NetReduce run's result", "[cli][stall][determinism]") {
  const std::string run = "--platform spineleaf --sizes 1M --seed 2 -c link.loss=0.1 -c link.corruption=0.05";
  CHECK(rows_with_stall_timeout(run, "0") == rows_with_stall_timeout(run, "100000"));
}

TEST_CASE("a platform with very long links is slow, not stalled", "[cli][stall]") {
  // The default stall timeout grows with the platform's longest round trip.
  TempDir d;
  const std::string yaml = d.write("slow.yaml", R"(name: slow
endpoints:
  - {name: gpu0, ports: 1}
  - {name: gpu1, ports: 1}
switches:
  - {name: s0, ports: 2}
links:
  - {a: gpu0.0, b: s0.0, latency_ns: 200000}
  - {a: gpu1.0, b: s0.1}
)");
  const Result r = incsim("--platform '" + yaml + "' --sizes 4 --quiet");
  INFO(r.err);
  CHECK(r.code == 0);
}

TEST_CASE("tiny buffers and a one-deep memory pipeline slow the ring but never block responses", "[cli][stall]") {
  const Result r = incsim(
      "--platform star --gpus 4 --sizes 64K --quiet -c gpu.max_responses=1 -c switch.in_buffer_bytes=144 "
      "-c switch.out_queue_bytes=144 -c gpu.rx_buffer_bytes=144 -c gpu.mem_latency_cycles=3000");
  INFO(r.err);
  CHECK(r.code == 0);
}

TEST_CASE("in-network all-reduce beats the ring by more than 2x at 8 KiB on DGX-2", "[cli][innet]") {
  // Klenk Fig. 7b: up to 18x at small sizes, from the ring's 2(n-1) synchronised steps.
  const double ring = row_of("--platform dgx2 --sizes 8K --algorithm ring")["time_us"];
  const double push = row_of("--platform dgx2 --sizes 8K --algorithm push")["time_us"];
  const double pull = row_of("--platform dgx2 --sizes 8K --algorithm pull")["time_us"];
  CHECK(ring / push > 2.0);
  CHECK(ring / pull > 2.0);
}

TEST_CASE("where no paper sets the reduction table, C_min or push's waves do: push reaches its bound at 4 MiB",
          "[cli][innet]") {
  // 256 B per port (Klenk's DGX-2 table) on hgx-h100 evicted 12,095 of 15,786
  // misses at 1 MiB and reached 52.7% of the bound; Eq. (2) asks 487 B.
  // The tables alone, without NCCL's fixed cost per collective (nccl.launch).
  const nlohmann::json h100 = row_of("--platform hgx-h100 --sizes 4M --algorithm push -c nccl.launch=none");
  CHECK(h100["bound_fraction"].get<double>() >= 0.9);
  CHECK(h100["reduction_tables"]["evictions"] == 0);
  // Six GPUs, each linked to both of two switches: 42% of the bound with 256 B.
  TempDir d;
  std::string yaml = "name: six\nlink: {bw_GBps: 50, latency_ns: 10}\nendpoints:\n";
  for (int g = 0; g < 6; ++g) yaml += "  - {name: gpu" + std::to_string(g) + ", ports: 2}\n";
  yaml += "switches:\n  - {name: sw0, ports: 6}\n  - {name: sw1, ports: 6}\nlinks:\n";
  for (int g = 0; g < 6; ++g)
    for (int s = 0; s < 2; ++s)
      yaml += "  - {a: gpu" + std::to_string(g) + "." + std::to_string(s) + ", b: sw" + std::to_string(s) + "." +
              std::to_string(g) + "}\n";
  const std::string six = "--platform " + d.write("six.yaml", yaml) + " --sizes 4M --algorithm push";
  CHECK(row_of(six)["bound_fraction"].get<double>() >= 0.9);
  // The header says what sized it: push's 16 waves of 8 KiB over the 12
  // ports (10,923 B, in whole entries), above C_min; with one wave, C_min.
  const Result r = incsim(six + " --quiet");
  CHECK_THAT(r.out, Catch::Contains("C_min = 16288 B = 1357 B per port over 12 ports; configured 11008 B per port, "
                                    "which holds push's waves (131072 B per GPU in flight; Klenk §IV-F1)"));
  CHECK_THAT(r.out, !Catch::Contains("below C_min"));
  CHECK_THAT(incsim(six + " --quiet -c gpu.copy_engine.waves=1").out,
             Catch::Contains("1357 B per port over 12 ports; configured 1408 B per port\n"));
  const Result small = incsim(six + " --quiet -c switch.reduction_table.bytes=256");
  CHECK_THAT(small.out, Catch::Contains("# the reduction table is below C_min"));
  // Klenk's own platforms keep his tables; auto asks C_min there too.
  CHECK_THAT(incsim("--platform dgx2 --algorithm push --sizes 8K --quiet").out, Catch::Contains("configured 256 B per port"));
  CHECK_THAT(incsim("--platform dgx2 --algorithm pull --sizes 8K --quiet").out, Catch::Contains("configured 4096 B per port"));
  CHECK_THAT(incsim("--platform dgx2 --algorithm pull --sizes 8K --quiet -c switch.reduction_table.bytes=auto").out,
             Catch::Contains("1333 B per access port; configured 1408 B per port"));
}

namespace {
// Two switches of four GPUs each (two 50 GB/s links per GPU) joined by a
// trunk of `trunk` links: platforms/examples/two-switch.yaml's shape.
std::string two_switch(const TempDir& d, int trunk) {
  std::string yaml = "name: two\nfamily: hgx-h100\nlink: {bw_GBps: 50}\nendpoints:\n";
  for (int g = 0; g < 8; ++g) yaml += "  - {name: gpu" + std::to_string(g) + ", ports: 2}\n";
  yaml += "switches:\n  - {name: swA, ports: 12}\n  - {name: swB, ports: 12}\nlinks:\n";
  for (int g = 0; g < 8; ++g)
    for (int k = 0; k < 2; ++k)
      yaml += "  - {a: gpu" + std::to_string(g) + "." + std::to_string(k) + ", b: sw" + (g < 4 ? "A." : "B.") +
              std::to_string(g % 4 * 2 + k) + "}\n";
  for (int k = 0; k < trunk; ++k)
    yaml += "  - {a: swA." + std::to_string(8 + k) + ", b: swB." + std::to_string(8 + k) + "}\n";
  return d.write("two-" + std::to_string(trunk) + ".yaml", yaml);
}
}  // namespace

TEST_CASE("the bound sees a trunk between switches: push's own traffic on it, which push reaches at packet level and "
          "as flows, and a thin one's cut for any algorithm", "[cli][bound]") {
  TempDir d;
  // Four trunk links: the GPUs' links bind the ring, whose trunk cut carries
  // the message once each way at 4 x 40 GB/s (no line), while Klenk's push
  // reduces only at its blocks' home switch, so each GPU's writes to the
  // other switch's half cross whole: 4 x 1/2 + the results' 1/2 = 2.5 of
  // the message each way, 0.625 per link at 50 x 128/144 = 44.4 GB/s.
  const std::string four = "--platform " + two_switch(d, 4) + " --sizes 1M --quiet";
  const Result push = incsim(four + " --algorithm push -c switch.reduction_table.bytes=1280");
  REQUIRE(push.code == 0);
  CHECK_THAT(push.out, Catch::Contains("# bound: the link swA.8 > swB.8 (and 7 as busy) under the program's own "
                                       "traffic carries 0.625 of the message each way at 44.4 GB/s payload: that "
                                       "binds before the GPUs' links, so push's busbw is at most 124.4 GB/s"));
  // Eq. (2)'s 1,280 B per port (not the default, which holds the waves) evict for room far more than
  // for the entry timeout, and the note says which key each answers to.
  CHECK_THAT(push.out, Catch::Contains("of them idle for the entry timeout, switch.reduction_table.timeout_ns; "));
  CHECK_THAT(push.out, Catch::Contains(" for a new block's room, switch.reduction_table.bytes)"));
  const Result ring = incsim(four + " --algorithm ring");
  CHECK_THAT(ring.out, !Catch::Contains("binds before"));
  // NVLS's reads reduce on the way back: one copy each way, under the GPUs' bound.
  CHECK_THAT(incsim(four + " --algorithm nvls").out, !Catch::Contains("binds before"));
  // One trunk link: any all-reduce moves the message across it each way,
  // 1 / 40 GB/s per byte against the ring's 1.75 / 80 per GPU: the cut binds.
  const std::string one = "--platform " + two_switch(d, 1) + " --sizes 1M --algorithm ring";
  const Result thin = incsim(one + " --quiet");
  CHECK_THAT(thin.out, Catch::Contains("# bound: swA's 1 link to other switches, the cut between 4 of the program's "
                                       "8 GPUs and the others (what any allreduce moves across it), carries 1.000 "
                                       "of the message each way at 40.0 GB/s payload"));
  const nlohmann::json row = row_of(one);
  CHECK(row["bound_us"].get<double>() == Approx(1048576 / 40e3));
  CHECK(row["bound_fraction"].get<double>() <= 1.0);
  // Flows print the same bound.
  CHECK_THAT(incsim(one + " --quiet --fidelity flow").out, Catch::Contains("carries 1.000 of the message each way"));
  // Push with its default tables, which hold its waves and never evict,
  // reaches that bound: its results' multicast trees take the trunk's links
  // in turn as its writes do (83% when the pivots followed the block's
  // address, which at one switch of two is every other block's).
  const nlohmann::json roomy =
      row_of("--platform " + two_switch(d, 4) + " --sizes 16M --algorithm push -c nccl.launch=none");
  CHECK(roomy["bound_fraction"].get<double>() >= 0.95);
  CHECK(roomy["reduction_tables"]["evictions"] == 0);
  // Flows send each member's pushes whole to the home, as these switches
  // reduce only there, and its sums down the packets' trees: within 5% of
  // packet level (37% fast when they merged the pushes where they met).
  const Result flow = incsim("--platform " + two_switch(d, 4) +
                             " --sizes 16M --algorithm push -c nccl.launch=none --quiet --fidelity flow --json -");
  REQUIRE(flow.code == 0);
  CHECK(nlohmann::json::parse(flow.out)["rows"][0]["time_us"].get<double>() ==
        Approx(roomy["time_us"].get<double>()).epsilon(0.05));
}

TEST_CASE("the entry timeout is the lifetime the tables afford: entries that a trunk delays stay and complete",
          "[cli][tables]") {
  TempDir d;
  // 16 KiB per port on the four-link trunk: 16384 x 24 ports / 100 GB/s =
  // 3.9 us before an entry goes home. Every block completes in the home
  // switch; at d_max x L_hop (306 ns, the old default, given here) most
  // entries time out waiting for the far switch's contributions.
  const std::string run = "--platform " + two_switch(d, 4) +
                          " --algorithm push --sizes 1M --quiet -c switch.reduction_table.bytes=16384";
  const Result sized = incsim(run);
  REQUIRE(sized.code == 0);
  CHECK_THAT(sized.out, Catch::Contains("0 evictions, 0 stalls, 8192 completions"));
  const Result short_timeout = incsim(run + " -c switch.reduction_table.timeout_ns=306");
  REQUIRE(short_timeout.code == 0);
  CHECK_THAT(short_timeout.out, Catch::Contains("of them idle for the entry timeout"));
  CHECK_THAT(short_timeout.out, !Catch::Contains(" 0 evictions"));
}

TEST_CASE("pull without its barrier is faster for small messages", "[cli][innet]") {
  const double with = row_of("--platform dgx2 --sizes 8K --algorithm pull")["time_us"];
  const double without = row_of("--platform dgx2 --sizes 8K --algorithm pull -c pull.barrier=false")["time_us"];
  CHECK(without < with);
}

TEST_CASE("waves lower the mean packet latency of a push all-reduce", "[cli][innet]") {
  // Klenk §VI-D: about 90% lower on DGX-2 at 8 MB.
  const double waves = row_of("--platform dgx2 --sizes 1M --algorithm push")["avg_packet_latency_ns"];
  const double none = row_of("--platform dgx2 --sizes 1M --algorithm push -c gpu.copy_engine.waves=0")["avg_packet_latency_ns"];
  CHECK(waves < none);
}

TEST_CASE("without waves push's bandwidth rises with its table size, by a cliff pull does not have", "[cli][innet]") {
  // Klenk §VI-C (Fig. 9): push is "much more sensitive to the table size
  // than the pull method". On DGX-2 at 1 MiB one table doubling, 256 B to
  // 512 B per port, takes push from evicting most blocks to none.
  const auto algbw = [](const std::string& algorithm, int bytes) {
    return row_of("--platform dgx2 --sizes 1M --algorithm " + algorithm +
                  " -c gpu.copy_engine.waves=0 -c switch.reduction_table.bytes=" + std::to_string(bytes))["algbw_GBps"]
        .get<double>();
  };
  const double p128 = algbw("push", 128), p256 = algbw("push", 256), p512 = algbw("push", 512);
  CHECK(p128 < p256);
  CHECK(p256 < p512);
  CHECK(p512 > 2 * p256);
  const double q256 = algbw("pull", 256), q512 = algbw("pull", 512);
  CHECK(q512 / q256 < p512 / p256);
}

TEST_CASE("push runs are deterministic, waveform included", "[cli][innet][determinism]") {
  TempDir d;
  const std::string vcd = run_twice_identical(
      d, "--platform dgx2 --sizes 64K --algorithm push --quiet -c switch.reduction_table.bytes=128");
  // VCD scopes split the dotted names: port<k>.reduction_table.occupancy.
  CHECK_THAT(vcd, Catch::Contains("$scope module reduction_table $end") &&
                                        Catch::Contains(" occupancy ") && Catch::Contains(" evictions ") &&
                                        Catch::Contains(" waves_outstanding ") && Catch::Contains(" credits "));
}

TEST_CASE("print-schedule prints each node's table in the Fig. 5 layout", "[cli][nic]") {
  const Result r = incsim("--platform mesh --dims 2x2 --algorithm multitree --print-schedule");
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("Op      FlowID  Parent  Children         Step  Start  Size"));
  // Accelerator 0 of Fig. 5: a leaf of tree 3 in step 1, the root of tree 0.
  CHECK_THAT(r.out, Catch::Contains("Accelerator 0\n"));
  CHECK_THAT(r.out, Catch::Contains("  Reduce  3       1       nil                  1      3     1\n"));
  CHECK_THAT(r.out, Catch::Contains("  Reduce  0       nil     2,1                  2      0     1\n"));
}

TEST_CASE("NIC runs are deterministic and the VCD shows the schedule counters", "[cli][nic][determinism]") {
  TempDir d;
  const std::string vcd =
      run_twice_identical(d, "--platform torus --dims 4x4 --algorithm multitree-msg --sizes 64K --quiet");
  CHECK_THAT(vcd, Catch::Contains("$scope module nic $end") && Catch::Contains(" timestep ") &&
                                        Catch::Contains(" lockstep ") && Catch::Contains(" entry ") &&
                                        Catch::Contains(" out_bytes_vc0 "));
}

// MultiTree §VI-B, Fig. 9a: on the torus MultiTree is above the ring at every
// size, with the figures' per-packet VC allocation (32 KiB to 4 MiB here;
// the figure's CSV has the rest, up to 64 MiB).
TEST_CASE("MultiTree is faster than the ring at every size on a 4x4 torus", "[cli][nic][vc]") {
  const auto times = [](const std::string& algorithm) {
    TempDir d;
    const Result r = incsim("--platform torus --dims 4x4 --sizes 32K:4M -c switch.vc_alloc=packet --quiet --algorithm " +
                            algorithm + " --json " + d.file("r.json"));
    INFO(algorithm << "\n" << r.err);
    REQUIRE(r.code == 0);
    std::vector<std::pair<double, double>> t;  // size, time
    const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
    for (const auto& row : j["rows"]) {
      CHECK(row["wrong"] == 0);
      t.emplace_back(row["size_bytes"].get<double>(), row["time_us"].get<double>());
    }
    return t;
  };
  const auto ring = times("ring"), multitree = times("multitree"), msg = times("multitree-msg");
  REQUIRE(ring.size() == 8);
  REQUIRE(multitree.size() == ring.size());
  REQUIRE(msg.size() == ring.size());
  for (size_t k = 0; k < ring.size(); ++k) {
    INFO(ring[k].first << " B: ring " << ring[k].second << " us, multitree " << multitree[k].second
                       << " us, multitree-msg " << msg[k].second << " us");
    CHECK(multitree[k].first == ring[k].first);
    CHECK(multitree[k].second < ring[k].second);
    CHECK(msg[k].second < ring[k].second);
  }
}

// The double binary tree leaves nodes idle in many steps: with NOPs they wait
// the estimated step time there, without them they run ahead.
TEST_CASE("NOPs hold a node for the estimated step time", "[cli][nic][lockstep]") {
  const std::string args = "--platform torus --dims 4x4 --algorithm dbtree --sizes 1M --quiet --json ";
  TempDir d;
  REQUIRE(incsim(args + d.file("with.json")).code == 0);
  REQUIRE(incsim(args + d.file("without.json") + " -c nic.lockstep=false").code == 0);
  const auto with = nlohmann::json::parse(slurp(d.file("with.json")));
  const auto without = nlohmann::json::parse(slurp(d.file("without.json")));
  CHECK(without["rows"][0]["time_us"].get<double>() < with["rows"][0]["time_us"].get<double>());
  CHECK(with["rows"][0]["wrong"] == 0);
  CHECK(without["rows"][0]["wrong"] == 0);
}

TEST_CASE("synthetic traffic: one row per load, the same seed gives the same bytes", "[cli][traffic][determinism]") {
  TempDir d;
  const std::string args =
      "--platform torus --dims 4x4 --traffic uniform --load 0.1:0.3:0.1,0.9 -c traffic.window_ns=5000 --quiet --json ";
  const Result a = incsim(args + d.file("a.json"));
  const Result b = incsim(args + d.file("b.json"));
  INFO(a.err);
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  CHECK(a.out == b.out);
  CHECK(slurp(d.file("a.json")) == slurp(d.file("b.json")));
  const auto j = nlohmann::json::parse(slurp(d.file("a.json")));
  REQUIRE(j["rows"].size() == 4);
  CHECK(j["rows"][0]["offered"] == 0.1);
  CHECK(j["rows"][2]["offered"] == 0.3);
  CHECK(j["rows"][0]["wrong"] == 0);
  CHECK(j["rows"][3]["saturated"] == true);
  CHECK(j["channel_load_bound"]["saturation"].get<double>() == Approx(0.5));  // 8b/k, k = 4, over 4b
  const Result c = incsim("--platform torus --dims 4x4 --traffic uniform --load 0.1:0.3:0.1,0.9 -c "
                          "traffic.window_ns=5000 --quiet --seed 2");
  CHECK(c.out != a.out);
}

TEST_CASE("print-trees shows Blink's 6 trees of weight 1 on DGX-1V and the PCIe ring on 1,4,5,6", "[cli][blink]") {
  const Result r = incsim("--platform dgx1v --algorithm blink --print-trees");
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("6 trees, rate 6.000 NVLinks"));
  for (int t = 0; t < 6; ++t) CHECK_THAT(r.out, Catch::Contains("tree " + std::to_string(t) + " weight 1: gpu"));
  const Result ring = incsim("--platform dgx1v --gpus 1,4,5,6 --algorithm ring --print-trees");
  REQUIRE(ring.code == 0);
  CHECK_THAT(ring.out, Catch::Contains("1 rings over PCIe") && Catch::Contains("ring 0: gpu1 gpu4 gpu5 gpu6"));
}

TEST_CASE("Blink runs are deterministic, waveform included, and exit 0 with exact results", "[cli][blink][determinism]") {
  TempDir d;
  const std::string vcd = run_twice_identical(
      d, "--platform dgx1p --gpus 0,1,2,5 --algorithm blink --collective broadcast --sizes 64K --quiet");
  // The VCD shows, per GPU port, which tree's chunk went last.
  CHECK_THAT(vcd, Catch::Contains(" port0_tree ") && Catch::Contains(" port1_tree "));
  const auto j = nlohmann::json::parse(slurp(d.file("a.json")));
  CHECK(j["rows"][0]["wrong"] == 0);
  CHECK(j["rows"][0]["busbw_GBps"] == j["rows"][0]["algbw_GBps"]);  // broadcast: factor 1
}
