// Several collectives on one machine (workloads/jobs.h, and collectives on
// shares of one GpuMachine): jobs on disjoint GPUs give the rows they give
// alone, collectives on the same GPUs share their engines with #wrong 0, and
// a collective that starts while another holds reduction table entries gets
// the right data. SystemC elaborates once per process, so comparisons of
// whole runs go through the binary.
#include <catch2/catch.hpp>

#include <cmath>

#include <algorithm>
#include <map>
#include <sstream>
#include <systemc>

#include "cli_run.h"
#include "collective_workload.h"
#include "elements/alu.h"
#include "core/error.h"
#include "experiment.h"
#include "jobs.h"
#include "placement.h"
#include "platforms/communicator.h"
#include "platforms/flow_call.h"
#include "platforms/platform.h"
#include "run_checked.h"

using namespace incsim;

namespace {

tb::Options::Job job(const std::string& name, std::vector<int> gpus, const std::string& algorithm,
                     double start_us = 0) {
  tb::Options::Job j;
  j.name = name;
  j.gpus = std::move(gpus);
  j.algorithm = algorithm;
  j.start_us = start_us;
  j.where = "test";
  return j;
}

std::vector<int> range(int lo, int hi) {
  std::vector<int> r;
  for (int g = lo; g < hi; ++g) r.push_back(g);
  return r;
}

// The rows of job `name`.
std::vector<tb::Row> of(const std::vector<tb::Row>& rows, const std::string& name) {
  std::vector<tb::Row> mine;
  for (const auto& r : rows)
    if (std::get<std::string>(r.at("job")) == name) mine.push_back(r);
  return mine;
}

// Columns of the CSV rows of `config` run by the binary: per row, its
// size, time, #wrong and bound columns (what is the job's own: the packet
// and table counters are the machine's, every job's together).
std::vector<std::string> own_rows(const cli::TempDir& d, const std::string& name, const std::string& config) {
  const cli::Result r = cli::incsim("--config " + d.write(name, config) + " --quiet --csv " + d.file(name + ".csv"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto lines = cli::lines(cli::slurp(d.file(name + ".csv")));
  const auto cells = [](const std::string& line) {
    std::vector<std::string> c;
    std::stringstream in(line);
    for (std::string x; std::getline(in, x, ',');) c.push_back(x);
    return c;
  };
  const auto heading = cells(lines.at(0));
  std::vector<size_t> keep;
  for (const char* name : {"size_bytes", "time_us", "wrong", "bound_fraction"})
    keep.push_back(std::find(heading.begin(), heading.end(), name) - heading.begin());
  std::vector<std::string> rows;
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto c = cells(lines[i]);
    std::string row;
    for (size_t k : keep) row += c.at(k) + ",";
    rows.push_back(row);
  }
  return rows;
}

// The JSON of `config`, written as `name`.yaml and run quietly by the binary, which must succeed.
nlohmann::json json_of(const cli::TempDir& d, const std::string& name, const std::string& config) {
  const cli::Result r =
      cli::incsim("--config " + d.write(name + ".yaml", config) + " --quiet --json " + d.file(name + ".json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(cli::slurp(d.file(name + ".json")));
}

// `config` run by the binary is refused in one sentence that says `sentence`, printing nothing.
void refused(const cli::TempDir& d, const std::string& config, const std::string& sentence) {
  const cli::Result r = cli::incsim("--config " + d.write("bad.yaml", config));
  INFO(config);
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK(cli::lines(r.err).size() == 1);
  CHECK_THAT(r.err, Catch::Contains(sentence));
}

// `config`, whose jobs say fallback: software, run by the binary: its header
// says a job fell back to the ring because `why`, every row has #wrong 0;
// returns its JSON.
nlohmann::json fell_back(const cli::TempDir& d, const std::string& config, const std::string& why) {
  const cli::Result r = cli::incsim("--config " + d.write("f.yaml", config) + " --json " + d.file("f.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("#   fallback: software, the ring: " + why));
  const auto json = nlohmann::json::parse(cli::slurp(d.file("f.json")));
  for (const auto& row : json["rows"]) CHECK(row["wrong"] == 0);
  return json;
}

}  // namespace

TEST_CASE("two jobs on the two halves of DGX-2 each give the rows they give alone", "[jobs]") {
  cli::TempDir d;
  const std::string common = "platform: dgx2\nsizes: 64K,256K\njobs:\n";
  const std::string a = "  - {name: a, gpus: 0-7, algorithm: ring}\n";
  const std::string b = "  - {name: b, gpus: 8-15, algorithm: push}\n";
  const auto both = own_rows(d, "both.yaml", common + a + b);
  const auto alone_a = own_rows(d, "a.yaml", common + a);
  const auto alone_b = own_rows(d, "b.yaml", common + b);
  REQUIRE(both.size() == 4);
  REQUIRE(alone_a.size() == 2);
  REQUIRE(alone_b.size() == 2);
  // The jobs share no switch, link or GPU (push keeps its homes on its own
  // baseboard), and a GPU's memory latencies are keyed by the accesses, not
  // by the order SystemC takes same-time events in, which the other job's
  // events reshape: each job's rows are its rows alone to the picosecond.
  for (size_t i = 0; i < 2; ++i) {
    CHECK(both[2 * i] == alone_a[i]);
    CHECK(both[2 * i + 1] == alone_b[i]);
  }
}

TEST_CASE("on a cluster a push inside one node and a ring across the nodes each give the rows they give alone", "[jobs][cluster]") {
  cli::TempDir d;
  // The copy engines' 128-byte packets for the ring alone too (the machine
  // takes the packet size every job's algorithm can run with).
  const std::string common = "platform: cluster\nnodes: 2\nsizes: 64K\nnet.max_payload_bytes: 128\njobs:\n";
  // The push's packets stay on node 0's NVLinks and switches (its copy
  // engines leave the adapters alone); the ring's cross GPU 0's and 8's
  // adapters and the network only.
  const std::string a = "  - {name: a, gpus: 1-7, algorithm: push}\n";
  const std::string c = "  - {name: c, gpus: \"0,8\", algorithm: ring}\n";
  const auto both = own_rows(d, "both.yaml", common + a + c);
  const auto alone_a = own_rows(d, "a.yaml", common + a);
  const auto alone_c = own_rows(d, "c.yaml", common + c);
  REQUIRE(both.size() == 2);
  CHECK(both[0] == alone_a.at(0));
  CHECK(both[1] == alone_c.at(0));
  for (const auto& row : both) CHECK(row.find(",0,") != std::string::npos);  // #wrong 0
}

TEST_CASE("a job on GPUs the platform lacks, overlapping jobs and an algorithm its GPUs cannot run are refused",
          "[jobs][errors]") {
  cli::TempDir d;
  const auto bad = [&](const std::string& jobs, const std::string& sentence) {
    refused(d, "sizes: 64K\njobs:\n" + jobs, sentence);
  };
  bad("  - {name: a, gpus: 0-7}\n  - {name: b, gpus: 6-11}\n",
          "line 4: jobs 'a' and 'b' both name GPU 6; each GPU belongs to one job");
  bad("  - {name: a, gpus: [0, 16]}\n", "job 'a' names GPU 16, but platform 'dgx2' has GPUs 0 to 15");
  bad("  - {name: a, gpus: [3]}\n", "job 'a': a collective needs at least 2 GPUs, and this job has 1");
  bad("  - {name: a, gpus: 0-7, algorithm: blink}\n  - {name: b, gpus: 8-15, algorith: ring}\n",
          "line 4: a job has no key 'algorith'; did you mean 'algorithm'?");
  bad("  - {name: a, gpus: 7-0}\n", "'7-0' is not a GPU or a range of GPUs such as 0-7");
  bad("  - {name: a, gpus: 0-3, start_us: soon}\n", "start_us must be between 0 and 1e9 microseconds, not soon");
  bad("  - {name: a}\n", "job 'a' names no gpus");
  bad("  - {name: a, gpus: 8-15, algorithm: blink}\n",
          "job 'a': algorithm 'blink' builds its trees over GPUs 0 to n-1 of the platform");
  bad("  - {name: a, gpus: 0-7, algorithm: netreduce}\n", "job 'a': algorithm 'netreduce' runs on");
  bad("  - {name: a, gpus: 0-7, algorithm: ring}\n  - {name: a, gpus: 8-9}\n", "two jobs are named 'a'");
}

TEST_CASE("a job that starts while another's push holds reduction table entries gets the right data", "[jobs]") {
  // One switch, tables of 2 entries per port: the two pushes' blocks meet in
  // the same tables and evict each other.
  tb::Options o = tb::run_options("star", "allreduce", "", "1M", {{"switch.reduction_table.bytes", "256"}});
  o.gpus = 8;
  o.jobs = {job("a", range(0, 4), "push"), job("b", range(4, 8), "push", 3)};
  tb::Experiment e(o);
  const auto rows = tb::run_checked(e, "jobs");
  std::ostringstream held;
  CHECK(e.machine().report_held(held) == 0);
  REQUIRE(rows.size() == 2);
  const auto a = of(rows, "a")[0], b = of(rows, "b")[0];
  CHECK(a["time_us"] > 3);  // a still ran when b started
  CHECK(b["start_us"] == 3);
  CHECK(b.details["reduction_tables"]["evictions"].get<uint64_t>() > 0);
}

TEST_CASE("the count of wrong elements bites for a job: a faulty ALU shows in its job's row only", "[jobs][fault]") {
  tb::Options o = tb::run_options("dgx2", "allreduce", "", "64K",
                                  {{"fault.alu.block", "gpu10.cores"}, {"fault.alu.elements", "10"}});
  o.jobs = {job("a", range(0, 8), "push"), job("b", range(8, 16), "ring")};
  tb::Experiment e(o);
  std::ostringstream table;
  const auto rows = e.run(&table);
  INFO(table.str());
  CHECK(of(rows, "a")[0].wrong() == 0);
  CHECK(of(rows, "b")[0].wrong() > 0);
}

namespace {
// Collectives on shares of one machine (the same GPUs), started together;
// returns their rows.
std::vector<tb::Row> together(const std::string& platform, int gpus, const std::vector<std::string>& algorithms,
                              const std::string& size) {
  Config cfg;
  const topo::Topology t = platforms::make_topology(platform, gpus, cfg);
  // As a jobs: list builds it.
  platforms::GpuMachine machine(t, cfg, 1, platforms::platform_defaults(t, platforms::needs_of(t, algorithms)));
  const tb::CollectiveWorkload::Share share{&machine, range(0, gpus)};
  std::vector<std::unique_ptr<tb::CollectiveWorkload>> cs;
  for (const auto& a : algorithms)
    cs.push_back(std::make_unique<tb::CollectiveWorkload>(tb::run_options(platform, "allreduce", a, size), cfg, &share));
  int running = 0;
  for (auto& c : cs) {
    ++running;
    c->call().start(c->sizes()[0], [&running] { --running; });
  }
  sc_core::sc_start();
  CHECK(running == 0);
  std::vector<tb::Row> rows;
  std::ostringstream notes;
  for (auto& c : cs) rows.push_back(c->finish(0, notes));
  CHECK(machine.pool().in_use() == 0);
  return rows;
}
}  // namespace

TEST_CASE("a ring and a push issued together on the same GPUs both give the right data", "[jobs][shared]") {
  for (const auto& r : together("star", 4, {"ring", "push"}, "256K")) {
    CHECK(r.wrong() == 0);
    CHECK(r["time_us"] > 0);
  }
}

TEST_CASE("two pushes on the same GPUs take their copy engines in turn", "[jobs][shared]") {
  const auto pushes = together("star", 4, {"push", "push"}, "64K");
  CHECK(pushes[0].wrong() == 0);
  CHECK(pushes[1].wrong() == 0);
  // The second descriptor waits in each copy engine's queue behind the first.
  CHECK(pushes[1]["time_us"] > 1.5 * pushes[0]["time_us"]);
}

TEST_CASE("two rings on the same GPUs share the cores", "[jobs][shared]") {
  const auto rings = together("star", 4, {"ring", "ring"}, "64K");
  CHECK(rings[0].wrong() == 0);
  CHECK(rings[1].wrong() == 0);
}

TEST_CASE("a ring job on two whole nodes of a 4-node cluster leaves each node by every rail, as on a 2-node cluster",
          "[jobs][cluster]") {
  // NCCL's rings on whole nodes cross between nodes by a different GPU's
  // adapter per channel; a flat ring of the job's GPUs in order crossed by
  // one adapter per node, 1.7 times as long at 1 MiB.
  cli::TempDir d;
  const nlohmann::json job = json_of(d, "job", "platform: cluster\nnodes: 4\nsizes: 1M\njobs:\n"
                                              "  - {name: a, gpus: 0-15, algorithm: ring}\n");
  const nlohmann::json whole = json_of(d, "whole", "platform: cluster\nnodes: 2\nsizes: 1M\n");
  CHECK(job["rows"][0]["time_us"].get<double>() ==
        Approx(whole["rows"][0]["time_us"].get<double>()).epsilon(0.02));
}

TEST_CASE("two rings on the same GPUs of a cluster run a second point after the first's last flags land", "[jobs][shared][cluster]") {
  // The second point's buffers replace the first's: a flag of the first
  // point still crossing the adapters landed outside any buffer.
  cli::TempDir d;
  const nlohmann::json j = json_of(d, "rings", "platform: cluster\nnodes: 2\nsizes: 1M,4M\njobs:\n"
                                              "  - {name: a, gpus: \"0,8\", algorithm: ring, allow_overlap: true}\n"
                                              "  - {name: b, gpus: \"0,8\", algorithm: ring, start_us: 2}\n");
  REQUIRE(j["rows"].size() == 4);
  for (const auto& row : j["rows"]) {
    CHECK(row["wrong"] == 0);
    // They share both adapters (1.42 at 1 MiB, 1.78 at 4 MiB); apart, 1.
    CHECK(row["slowdown"].get<double>() > 1.3);
  }
}

// MultiTree's NICs (modules/nic) hold a schedule table per collective: each
// message names its table at the destination, and the tables' decoders run
// independently. On the torus every schedule, the ring too, runs on the NICs.
TEST_CASE("two NIC schedules on the same GPUs run from two tables of each NIC", "[jobs][shared][nic]") {
  const auto runs = together("torus", 16, {"dbtree", "hd"}, "256K");
  for (const auto& r : runs) {
    CHECK(r.wrong() == 0);
    CHECK(r["time_us"] > 0);
  }
}

TEST_CASE("two NIC rings on the same GPUs share each NIC's ports", "[jobs][shared][nic]") {
  const auto rings = together("fattree", 16, {"ring", "ring"}, "256K");
  CHECK(rings[0].wrong() == 0);
  CHECK(rings[1].wrong() == 0);
  // Each port takes the two tables' streams in turn, so the rings finish
  // together (79.62 and 79.59 us; one alone takes 49.82 us).
  CHECK(rings[1]["time_us"] == Approx(rings[0]["time_us"]).epsilon(0.01));
}

TEST_CASE("the count of wrong elements bites for NIC tables: a faulty NIC ALU shows in one collective only",
          "[jobs][shared][nic][fault]") {
  // The NIC's one ALU serves both tables; its first 7 results (all in the
  // first Reduce message it takes, 64 elements) go to one table, whose wrong
  // partial sums reach all 16 nodes.
  elements::Alu::inject("n5.nic", 7);
  const auto runs = together("torus", 16, {"dbtree", "hd"}, "64K");
  CHECK(runs[0].wrong() + runs[1].wrong() == 7 * 16);
  CHECK(std::min(runs[0].wrong(), runs[1].wrong()) == 0);
}

// Blink's tables issue in dataflow order over per-link lanes (NicParams::dataflow).
TEST_CASE("two Blink all-reduces on the same GPUs run their dataflow tables side by side", "[jobs][shared][nic]") {
  const auto runs = together("dgx1v", 8, {"blink", "blink"}, "1M");
  CHECK(runs[0].wrong() == 0);
  CHECK(runs[1].wrong() == 0);
}

namespace {
std::vector<int> placed(const std::string& platform, int gpus, const std::string& placement, int count,
                        const std::vector<int>& held = {}, uint64_t seed = 1) {
  Config cfg;
  platforms::PlatformShape shape;
  if (platform == "cluster") shape.nodes = gpus;
  else shape.gpus = gpus;
  const topo::Topology t = platforms::make_topology(platform, shape, cfg);
  std::vector<bool> free(t.endpoints().size(), true);
  for (int g : held) free[g] = false;
  return tb::place(t, free, placement, count, seed);
}
}  // namespace

TEST_CASE("placements take the GPUs their rule names among the free ones", "[jobs][placement]") {
  // Contiguous: first fit of a run of free GPUs.
  CHECK(placed("star", 8, "contiguous", 3, {2}) == std::vector<int>{3, 4, 5});
  CHECK(placed("star", 8, "contiguous", 2) == std::vector<int>{0, 1});
  CHECK_THROWS_WITH(placed("star", 8, "contiguous", 6, {2}),
                    "no 6 free GPUs are in a row (the longest run free is 5)");
  CHECK_THROWS_WITH(placed("star", 8, "random", 8, {2}), "7 GPUs are free and it asks for 8");
  // Fragmented: every other free GPU, then the skipped ones.
  CHECK(placed("star", 8, "fragmented", 3) == std::vector<int>{0, 2, 4});
  CHECK(placed("star", 8, "fragmented", 6) == std::vector<int>{0, 1, 2, 3, 4, 6});
  CHECK(placed("star", 8, "fragmented", 3, {0, 1}) == std::vector<int>{2, 4, 6});
  // Spread: a GPU of each DGX-2 baseboard (GPUs 0-7 and 8-15) in turn, and
  // of each node of a cluster.
  CHECK(placed("dgx2", 16, "spread", 4) == std::vector<int>{0, 1, 8, 9});
  CHECK(placed("dgx2", 16, "spread", 3, {0, 8, 9}) == std::vector<int>{1, 2, 10});
  CHECK(placed("cluster", 2, "spread", 4) == std::vector<int>{0, 1, 8, 9});
  // One fat tree leaf per turn (fattree2l: 8 GPUs per leaf).
  CHECK(placed("fattree2l", 32, "spread", 5) == std::vector<int>{0, 1, 8, 16, 24});
  // Random: distinct free GPUs, the same for the same seed.
  const auto r1 = placed("dgx2", 16, "random", 6, {3, 4}, 7);
  CHECK(r1 == placed("dgx2", 16, "random", 6, {3, 4}, 7));
  CHECK(r1 != placed("dgx2", 16, "random", 6, {3, 4}, 8));
  CHECK(std::is_sorted(r1.begin(), r1.end()));
  CHECK(std::adjacent_find(r1.begin(), r1.end()) == r1.end());
  for (int g : r1) CHECK((g != 3 && g != 4));
}

TEST_CASE("jobs placed in list order, repeated, and sharing GPUs where they allow it", "[jobs][placement]") {
  cli::TempDir d;
  const std::string f = d.write("mix.yaml",
                                "platform: dgx2\nsizes: 64K\njobs:\n"
                                "  - {name: a, placement: contiguous, gpus: 4, algorithm: ring}\n"
                                "  - {name: b, placement: fragmented, gpus: 3, repeat: 2, interarrival_us: 1.5}\n"
                                "  - {name: c, placement: spread, gpus: 2, algorithm: ring, allow_overlap: true}\n");
  const cli::Result r = cli::incsim("--config " + f + " --json " + d.file("mix.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("# job a: GPUs 0-3 (placement contiguous), starting 0 us"));
  // b's copies take every other GPU left, the first copy's and then the second's.
  CHECK_THAT(r.out, Catch::Contains("# job b.1: GPUs 4,6,8 (placement fragmented), starting 0 us"));
  CHECK_THAT(r.out, Catch::Contains("# job b.2: GPUs 5,9,11 (placement fragmented), starting 1.5 us"));
  // c may take held GPUs: the lowest of each baseboard.
  CHECK_THAT(r.out, Catch::Contains("# job c: GPUs 0,8 (placement spread)"));
  const auto json = nlohmann::json::parse(cli::slurp(d.file("mix.json")));
  for (const auto& row : json["rows"]) CHECK(row["wrong"] == 0);
  CHECK(json["rows"].size() == 4);
}

TEST_CASE("poisson arrivals: a job's copies start after exponential gaps of interarrival_us's mean, by its seed",
          "[jobs][arrivals]") {
  cli::TempDir d;
  const auto starts = [&](const std::string& name, int seed) {
    const auto json = json_of(d, name,
                              "platform: star\ngpus: 2\nsizes: 4\njobs:\n  - {name: a, gpus: [0, 1], algorithm: ring, "
                              "repeat: 64, interarrival_us: 10, arrivals: poisson, allow_overlap: true, seed: " +
                                  std::to_string(seed) + "}\n");
    std::vector<double> s;
    for (const auto& row : json["rows"]) {
      CHECK(row["wrong"] == 0);
      s.push_back(row["start_us"].get<double>());
    }
    return s;
  };
  const std::vector<double> s = starts("a", 7);
  REQUIRE(s.size() == 64);
  CHECK(s[0] == 0);
  double sum = 0, squares = 0;
  for (size_t k = 1; k < s.size(); ++k) {
    const double gap = s[k] - s[k - 1];
    CHECK(gap > 0);
    sum += gap;
    squares += gap * gap;
  }
  // 63 exponential gaps of mean 10: their mean within three standard
  // errors (10 / sqrt(63) = 1.26), their spread near their mean.
  const double mean = sum / 63, sd = std::sqrt(squares / 63 - mean * mean);
  CHECK(mean > 6.2);
  CHECK(mean < 13.8);
  CHECK(sd / mean > 0.6);
  CHECK(sd / mean < 1.4);
  CHECK(starts("b", 7) == s);
  CHECK(starts("c", 8) != s);
}

TEST_CASE("placements that do not fit and their keys' bad values are refused", "[jobs][placement][errors]") {
  cli::TempDir d;
  const auto bad = [&](const std::string& jobs, const std::string& sentence) {
    refused(d, "sizes: 64K\njobs:\n" + jobs, sentence);
  };
  bad("  - {name: a, gpus: 0-3, repeat: 2, interarrival_us: 5, arrivals: sometimes}\n",
      "line 3: a job's arrivals must be fixed or poisson, not 'sometimes'");
  bad("  - {name: a, gpus: 0-3, repeat: 2, arrivals: poisson}\n",
      "job 'a' has arrivals poisson, which needs repeat above 1 and interarrival_us above 0 (the mean gap)");
  bad("  - {name: a, gpus: 0-11}\n  - {name: b, placement: contiguous, gpus: 5}\n",
          "line 4: job 'b' does not fit (placement: contiguous, gpus: 5): 4 GPUs are free and it asks for 5");
  bad("  - {name: a, gpus: [0, 2, 4, 6, 8, 10, 12, 14]}\n  - {name: b, placement: contiguous, gpus: 2}\n",
          "job 'b' does not fit (placement: contiguous, gpus: 2): no 2 free GPUs are in a row");
  bad("  - {name: a, placement: compact, gpus: 4}\n",
          "line 3: placement must be one of contiguous, random, fragmented, spread, not 'compact'");
  bad("  - {name: a, placement: spread, gpus: 0-3}\n", "with placement spread, gpus (a count) expects a whole number");
  bad("  - {name: a, gpus: 0-3, seed: 4}\n", "job 'a' gives a seed, which only placement random and arrivals poisson read");
  bad("  - {name: a, gpus: 0-3, repeat: 2}\n", "jobs 'a.1' and 'a.2' both name GPU 0");
  bad("  - {name: a, gpus: 0-3, allow_overlap: maybe}\n", "allow_overlap is true or false, not 'maybe'");
  bad("  - {name: a, gpus: 0-3, repeat: 0}\n", "repeat must be between 1 and 4096, not 0");
}

namespace {
// The CSV lines of `config` run by the binary: the heading, then the rows.
std::vector<std::string> csv_of(const cli::TempDir& d, const std::string& name, const std::string& config) {
  const cli::Result r = cli::incsim("--config " + d.write(name, config) + " --quiet --csv " + d.file(name + ".csv"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  return cli::lines(cli::slurp(d.file(name + ".csv")));
}

// A job's row alone and with a partner that starts after it ended: every
// cell the same but the mean packet latency, which the machine's running
// double sum of latencies (GpuMachine::packet_latency) differences from
// another starting value once the partner has run: its last bits differ.
// `near`: columns that may differ by 0.1%.
void require_same_row(const std::vector<std::string>& alone, const std::vector<std::string>& paired,
                      const std::vector<std::string>& near = {}) {
  REQUIRE(alone.size() == 2);
  REQUIRE(paired.size() == 3);
  CHECK(paired[0] == alone[0]);
  std::stringstream a_cells(alone[1]), p_cells(paired[1]), heading(alone[0]);
  for (std::string a, p, name; std::getline(heading, name, ',');) {
    std::getline(a_cells, a, ',');
    std::getline(p_cells, p, ',');
    INFO(name);
    if (std::find(near.begin(), near.end(), name) != near.end())
      CHECK(std::stod(p) == Approx(std::stod(a)).epsilon(1e-3));
    else if (name == "avg_packet_latency_ns") CHECK(std::stod(p) == Approx(std::stod(a)).epsilon(1e-12));
    else CHECK(p == a);
  }
}

// Column `name` of CSV line `line` under `heading`.
std::string cell(const std::string& heading, const std::string& line, const std::string& name) {
  const auto split = [](const std::string& s) {
    std::vector<std::string> c;
    std::stringstream in(s);
    for (std::string x; std::getline(in, x, ',');) c.push_back(x);
    return c;
  };
  const auto h = split(heading), c = split(line);
  const size_t k = std::find(h.begin(), h.end(), name) - h.begin();
  REQUIRE(k < c.size());
  return c[k];
}
}  // namespace

TEST_CASE("two identical jobs on the two halves of DGX-2 finish together, each as fast as alone", "[jobs][slowdown]") {
  cli::TempDir d;
  const auto lines = csv_of(d, "halves.yaml",
                            // Memory latencies without jitter, which each GPU draws from its own seed.
                            "platform: dgx2\nsizes: 256K\ngpu.mem_jitter_cycles: 0\njobs:\n"
                            "  - {name: a, gpus: 0-7, algorithm: push}\n  - {name: b, gpus: 8-15, algorithm: push}\n");
  REQUIRE(lines.size() == 3);
  const std::string& h = lines[0];
  CHECK(cell(h, lines[1], "time_us") == cell(h, lines[2], "time_us"));
  for (size_t i : {1, 2}) {
    CHECK(cell(h, lines[i], "alone_us") == cell(h, lines[i], "time_us"));
    CHECK(std::stod(cell(h, lines[i], "slowdown")) == 1.0);
  }
}

TEST_CASE("a job alone and a job with an idle partner give byte-identical rows", "[jobs][slowdown]") {
  cli::TempDir d;
  const std::string common = "platform: star\ngpus: 8\nsizes: 64K\njobs:\n  - {name: a, gpus: 0-3, algorithm: push}\n";
  const auto alone = csv_of(d, "alone.yaml", common);
  // The partner starts long after a has ended.
  const auto paired = csv_of(d, "paired.yaml", common + "  - {name: b, gpus: 4-7, algorithm: push, start_us: 1000}\n");
  require_same_row(alone, paired);
  CHECK(std::stod(cell(alone[0], alone[1], "slowdown")) == 1.0);
}

TEST_CASE("two pushes whose homes share one switch's tables are slowed by each other", "[jobs][slowdown]") {
  cli::TempDir d;
  const auto lines = csv_of(d, "star.yaml",
                            "platform: star\ngpus: 8\nsizes: 1M\nswitch.reduction_table.bytes: 256\n"
                            "gpu.mem_jitter_cycles: 0\njobs:\n"
                            "  - {name: a, gpus: 0-3, algorithm: push}\n  - {name: b, gpus: 4-7, algorithm: push}\n");
  REQUIRE(lines.size() == 3);
  const std::string& h = lines[0];
  // Both alone take the same time (the star is symmetric); together both are slower.
  CHECK(cell(h, lines[1], "alone_us") == cell(h, lines[2], "alone_us"));
  for (size_t i : {1, 2}) {
    CHECK(cell(h, lines[i], "wrong") == "0");
    const double slowdown = std::stod(cell(h, lines[i], "slowdown"));
    CHECK(slowdown > 1.01);
    CHECK(slowdown == Approx(std::stod(cell(h, lines[i], "time_us")) / std::stod(cell(h, lines[i], "alone_us")))
                          .epsilon(1e-3));
  }
}

TEST_CASE("partitioned tables keep each push job's evictions to its own entries", "[jobs][sharing]") {
  cli::TempDir d;
  const std::string common = "platform: star\ngpus: 8\nsizes: 256K\nswitch.reduction_table.bytes: 512\njobs:\n"
                             "  - {name: a, gpus: 0-3, algorithm: push}\n  - {name: b, gpus: 4-7, algorithm: push}\n";
  const auto sharing = [&](const std::string& policy) {
    const auto json = json_of(d, policy, "switch.reduction_table.policy: " + policy + "\n" + common);
    REQUIRE(json["rows"].size() == 2);
    for (const auto& row : json["rows"]) CHECK(row["wrong"] == 0);
    return json["rows"];
  };
  // Each job 2 of the 4 entries of every table: under LRU every entry a
  // job's misses evict is its own, so the evictions it suffers are the ones
  // it causes.
  for (const auto& row : sharing("partitioned")) {
    const auto& c = row["table_sharing"];
    CHECK(c["entries"] == 2);
    CHECK(c["evictions_caused"].get<uint64_t>() > 0);
    CHECK(c["evictions_suffered"] == c["evictions_caused"]);
  }
  // Shared, first come first served: each job takes the other's entries too.
  uint64_t cross = 0;
  for (const auto& row : sharing("shared")) {
    const auto& c = row["table_sharing"];
    CHECK(c["entries"] == 4);
    cross += c["evictions_caused"].get<uint64_t>() != c["evictions_suffered"].get<uint64_t>();
  }
  CHECK(cross > 0);
}

TEST_CASE("a job whose share holds no table entry is refused, or runs the ring with fallback: software",
          "[jobs][sharing]") {
  cli::TempDir d;
  // 256-B tables, 2 entries; weights 1 and 3 give a floor(2 x 1/4) = 0 entries.
  const std::string common = "platform: star\ngpus: 8\nsizes: 64K\nswitch.reduction_table.bytes: 256\n"
                             "switch.reduction_table.policy: partitioned\njobs:\n"
                             "  - {name: b, gpus: 4-7, algorithm: push, weight: 3}\n";
  const cli::Result refused = cli::incsim("--config " + d.write("r.yaml", common +
                                                                 "  - {name: a, gpus: 0-3, algorithm: push}\n"));
  CHECK(refused.code == 2);
  CHECK(cli::lines(refused.err).size() == 1);
  CHECK_THAT(refused.err, Catch::Contains("job 'a' cannot reduce in the switches: its partitioned share of the "
                                          "switches' reduction tables (weight 1 of 4) holds 0 of the smallest "
                                          "table's 2 entries, 1 entry short"));
  const auto json = fell_back(d, common + "  - {name: a, gpus: 0-3, algorithm: push, fallback: software}\n",
                              "its partitioned share");
  CHECK(json["config"]["jobs"][1]["fallback"] == "software");
  CHECK(json["config"]["jobs"][1]["algorithm"] == "ring");
}

TEST_CASE("quotas give each job its fraction of every table", "[jobs][sharing]") {
  cli::TempDir d;
  const auto rows = json_of(d, "q",
                            "platform: star\ngpus: 8\nsizes: 64K\nswitch.reduction_table.bytes: 512\n"
                            "switch.reduction_table.policy: quota\njobs:\n"
                            "  - {name: a, gpus: 0-3, algorithm: push, quota: 0.5}\n"
                            "  - {name: b, gpus: 4-7, algorithm: push, quota: 0.75}\n")["rows"];
  // Of 4 entries: floor(4 x 0.5) = 2 and floor(4 x 0.75) = 3, 5 of a pool of 4.
  CHECK(rows[0]["table_sharing"]["entries"] == 2);
  CHECK(rows[1]["table_sharing"]["entries"] == 3);
  for (const auto& row : rows) CHECK(row["wrong"] == 0);
}

TEST_CASE("a sharing policy the tables lack and shares a policy does not read are refused", "[jobs][sharing][errors]") {
  cli::TempDir d;
  const auto bad = [&](const std::string& text, const std::string& sentence) {
    refused(d, "platform: star\ngpus: 8\nsizes: 64K\n" + text, sentence);
  };
  bad("switch.reduction_table.policy: fair\njobs:\n  - {gpus: 0-3, algorithm: push}\n",
          "switch.reduction_table.policy must be shared, partitioned or quota, not 'fair'");
  bad("jobs:\n  - {name: a, gpus: 0-3, algorithm: push, weight: 2}\n",
          "job 'a' gives a weight, which only switch.reduction_table.policy=partitioned or "
          "switch.multicast.policy=partitioned or nic.tables.policy=partitioned reads");
  bad("switch.reduction_table.policy: partitioned\njobs:\n  - {name: a, gpus: 0-3, algorithm: push, quota: 0.5}\n",
          "job 'a' gives a quota, which only switch.reduction_table.policy=quota or switch.multicast.policy=quota or "
          "nic.tables.policy=quota reads");
  bad("switch.reduction_table.policy: partitioned\njobs:\n  - {name: a, gpus: 0-3, algorithm: push, weight: -1}\n",
          "a job's weight must be more than 0 and at most 1000000, not -1");
  bad("switch.reduction_table.policy: quota\njobs:\n  - {name: a, gpus: 0-3, algorithm: push, quota: 1.5}\n",
          "a job's quota must be more than 0 and at most 1, not 1.5");
  bad("jobs:\n  - {name: a, gpus: 0-3, algorithm: push, fallback: hardware}\n",
          "fallback is software (the ring when its share of the reduction tables holds no entry) or none, not 'hardware'");
}

TEST_CASE("weighted partitions give NVLS jobs their shares of the pull tables, and the smaller share waits longer",
          "[jobs][sharing]") {
  cli::TempDir d;
  // HGX H100's 4 NVSwitches, 512-B tables (4 entries per port): weights 3
  // and 1 give 3 and 1 entries; each job's pull requests wait at their
  // first hop for an entry of their share.
  const auto rows = json_of(d, "w",
                            "platform: hgx-h100\nsizes: 1M\nswitch.reduction_table.bytes: 512\n"
                            "switch.reduction_table.policy: partitioned\njobs:\n"
                            "  - {name: a, gpus: 0-3, algorithm: nvls, weight: 3}\n"
                            "  - {name: b, gpus: 4-7, algorithm: nvls}\n")["rows"];
  CHECK(rows[0]["table_sharing"]["entries"] == 3);
  CHECK(rows[1]["table_sharing"]["entries"] == 1);
  for (const auto& row : rows) {
    CHECK(row["wrong"] == 0);
    CHECK(row["table_sharing"]["stalls"].get<uint64_t>() > 0);
  }
  CHECK(rows[1]["slowdown"].get<double>() > 2 * rows[0]["slowdown"].get<double>());
}

// A cluster of 4 HGX H100 nodes (every rail one leaf): jobs of 2 whole nodes
// each (16 GPUs), whose nvlssharp groups all aggregate in the rails' leaves.
// nvlssharp's reservation: 16 channels x ib.sharp.credits=64 = 1024 entries
// per leaf port (SharpManager::admit).
namespace {
const std::string kCluster4 = "platform: cluster\nnodes: 4\nsizes: 256K\n";

// The rows of job a on nodes 0-1 (GPUs 0-15) running algorithm `a` and job b
// on nodes 2-3 running `b`, on the 4-node cluster with `settings`.
nlohmann::json halves(const cli::TempDir& d, const std::string& name, const std::string& settings,
                      const std::string& a, const std::string& b) {
  const auto rows = json_of(d, name, kCluster4 + settings + "jobs:\n  - {name: a, gpus: 0-15, algorithm: " + a +
                                         "}\n  - {name: b, gpus: 16-31, algorithm: " + b + "}\n")["rows"];
  REQUIRE(rows.size() == 2);
  for (const auto& row : rows) CHECK(row["wrong"] == 0);
  return rows;
}

// Each row's job ran as fast as alone.
void as_fast_as_alone(const nlohmann::json& rows) {
  for (const auto& row : rows) CHECK(row["slowdown"].get<double>() == Approx(1).margin(0.02));
}
}  // namespace

TEST_CASE("cluster algorithms run on a job's whole nodes, and a job of part of a node is refused", "[jobs][cluster]") {
  cli::TempDir d;
  halves(d, "whole", "", "nvlssharp", "collnet");
  refused(d, kCluster4 + "jobs:\n  - {name: a, gpus: 0-11, algorithm: nvlssharp}\n",
          "job 'a': nvlssharp runs on all the GPUs of a cluster (--platform cluster), or a job's whole nodes, in order");
}

TEST_CASE("NCCL's cluster algorithms run as jobs on whole nodes, each as fast as alone", "[jobs][cluster]") {
  cli::TempDir d;
  for (const auto& [a, b] : {std::pair<std::string, std::string>{"hring", "tree"}, {"nvlstree", "nvlsring"}}) {
    INFO(a << " and " << b);
    as_fast_as_alone(halves(d, a, "", a, b));
  }
}

TEST_CASE("two NetReduce jobs on one RoCE cluster's rail FPGAs keep their rings apart", "[jobs][cluster][netreduce]") {
  // Each rail's FPGA numbers the rings of every job (FpgaAggregator::ring_id):
  // when each job numbered its own from 0, job b's ring took job a's
  // aggregator array, and both lost a retransmission timeout (131 us against
  // 5 us alone).
  cli::TempDir d;
  as_fast_as_alone(halves(d, "nr", "cluster.network: roce\n", "nvlsnetreduce", "nvlsnetreduce"));
}

TEST_CASE("partitioned SHARP tables give each nvlssharp job its reservation, and no job evicts or waits for another's",
          "[jobs][sharing][cluster]") {
  cli::TempDir d;
  // 256 KiB per port, 2048 entries: each job floor(2048 x 1/2) = 1024, its reservation exactly.
  const auto rows = halves(d, "p", "ib.sharp.policy: partitioned\n", "nvlssharp", "nvlssharp");
  for (const auto& row : rows) {
    // Counters per resource: the NVSwitches' tables keep their own (shared) policy.
    CHECK(row["table_sharing"]["policy"] == "shared");
    const auto& c = row["sharp_sharing"];
    CHECK(c["policy"] == "partitioned");
    CHECK(c["entries"] == 1024);
    // Each of the job's 256 KiB / 128 B blocks takes one entry at its home in
    // its rail's leaf (one leaf per rail: no merge points), once.
    CHECK(c["misses"] == 256 * 1024 / 128);
    CHECK(c["evictions_caused"] == 0);
    CHECK(c["evictions_suffered"] == 0);
    CHECK(c["stalls"] == 0);
  }
}

TEST_CASE("SHARP quotas give each job its fraction, and a job whose quota cannot hold its reservation runs the ring",
          "[jobs][sharing][cluster]") {
  cli::TempDir d;
  // 192 KiB per port, 1536 entries: quota 0.75 holds floor(1536 x 0.75) =
  // 1152 >= 1024; quota 0.5 holds 768, 256 short of nvlssharp's 1024.
  const std::string config = kCluster4 + "ib.sharp.table_bytes: 196608\nib.sharp.policy: quota\njobs:\n"
                                         "  - {name: a, gpus: 0-15, algorithm: nvlssharp, quota: 0.75}\n"
                                         "  - {name: b, gpus: 16-31, algorithm: nvlssharp, quota: 0.5, fallback: software}\n";
  const cli::Result r = cli::incsim("--config " + d.write("q.yaml", config) + " --json " + d.file("q.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("#   fallback: software, the ring: nvlssharp needs 1024 aggregation entries per "
                                    "switch port (16 groups on a rail of ib.sharp.credits=64 blocks each), but its "
                                    "quota share of SHARP's aggregation tables (quota 0.5) holds 768 of "
                                    "ib.sharp.table_bytes=196608's 1536 entries, 256 short"));
  CHECK_THAT(r.out, Catch::Contains("#   incsim: allreduce ring on 16 of 32 GPUs"));
  const auto json = nlohmann::json::parse(cli::slurp(d.file("q.json")));
  const auto& rows = json["rows"];
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["sharp_sharing"]["entries"] == 1152);
  CHECK(rows[0]["sharp_sharing"]["misses"] == 256 * 1024 / 128);
  CHECK(rows[1]["sharp_sharing"]["entries"] == 768);
  CHECK(rows[1]["sharp_sharing"]["misses"] == 0);  // the ring aggregates nothing
  for (const auto& row : rows) CHECK(row["wrong"] == 0);
  CHECK(json["config"]["jobs"][1]["fallback"] == "software");
}

TEST_CASE("a job whose share of SHARP's tables cannot hold its reservation is refused, naming SHARP and the shortfall",
          "[jobs][sharing][cluster][errors]") {
  cli::TempDir d;
  // 128 KiB per port, 1024 entries: a partitioned half is 512.
  refused(d,
          kCluster4 + "ib.sharp.table_bytes: 131072\nib.sharp.policy: partitioned\njobs:\n"
                      "  - {name: a, gpus: 0-15, algorithm: nvlssharp}\n  - {name: b, gpus: 16-31, algorithm: nvlssharp}\n",
          "job 'a' cannot aggregate in SHARP's aggregation tables: nvlssharp needs 1024 aggregation entries per switch "
          "port (16 groups on a rail of ib.sharp.credits=64 blocks each), but its partitioned share of SHARP's "
          "aggregation tables (weight 1 of 2) holds 512 of ib.sharp.table_bytes=131072's 1024 entries, 512 short "
          "(give it a larger share, or fallback: software)");
}

TEST_CASE("an nvlssharp job alone and with an idle partner give the same rows under a SHARP policy",
          "[jobs][slowdown][cluster]") {
  cli::TempDir d;
  // Quotas, so that the job's share (and its row's sharp_sharing.entries)
  // is the same alone and paired. The NVSwitches spread packets by their
  // destination: their adaptive spreading (switch.spread's default) breaks
  // ties by state the partner's run alone changes, and then a's run
  // together differs from its run alone by about 1%, with or without a
  // partner or a policy.
  const std::string common = kCluster4 + "switch.spread: destination\nib.sharp.policy: quota\njobs:\n"
                                         "  - {name: a, gpus: 0-15, algorithm: nvlssharp, quota: 0.5}\n";
  const auto alone = csv_of(d, "alone.yaml", common);
  const auto paired =
      csv_of(d, "paired.yaml", common + "  - {name: b, gpus: 16-31, algorithm: nvlssharp, quota: 0.5, start_us: 1000}\n");
  // The NVSwitches' tables take requests that reach them at one instant in
  // the order SystemC runs the GPUs' ports, which the partner's run alone
  // (before, on other GPUs) changes: a few stalls of 13,476, and the mean
  // latency with them. SHARP's cells, which the policy sets, are the same.
  require_same_row(alone, paired, {"reduction_tables.stalls", "table_sharing.stalls", "avg_packet_latency_ns"});
  // Its run together repeats its run alone on a machine the earlier run left
  // in another state (the network's adaptive spreading, the order of
  // same-time events): within 0.5%.
  CHECK(std::stod(cell(alone[0], alone[1], "slowdown")) == Approx(1.0).epsilon(5e-3));
}

TEST_CASE("a SHARP policy the tables lack, on a network without them, and shares no policy reads are refused",
          "[jobs][sharing][cluster][errors]") {
  cli::TempDir d;
  const std::string job = "jobs:\n  - {name: a, gpus: 0-15, algorithm: nvlssharp}\n";
  refused(d, kCluster4 + "ib.sharp.policy: fair\n" + job, "ib.sharp.policy must be shared, partitioned or quota, not 'fair'");
  refused(d, kCluster4 + "ib.sharp.policy: partitioned\nib.sharp.table_bytes: 0\n" + job,
          "ib.sharp.policy=partitioned shares SHARP's aggregation buffers, but ib.sharp.table_bytes=0: the network's "
          "switches have none");
  refused(d, kCluster4 + "jobs:\n  - {name: a, gpus: 0-15, algorithm: nvlssharp, weight: 2}\n",
          "job 'a' gives a weight, which only switch.reduction_table.policy=partitioned or "
          "switch.multicast.policy=partitioned or nic.tables.policy=partitioned or ib.sharp.policy=partitioned reads");
  refused(d, kCluster4 + "ib.sharp.policy: partitioned\njobs:\n  - {name: a, gpus: 0-15, algorithm: nvlssharp, quota: 0.5}\n",
          "job 'a' gives a quota, which only switch.reduction_table.policy=quota or switch.multicast.policy=quota or "
          "nic.tables.policy=quota or ib.sharp.policy=quota reads");
  // A RoCE cluster and DGX-2 have no SHARP switches: no block reads the key.
  const auto unread = [&](const std::string& config) {
    refused(d, config, "is not read by this run");
    CHECK_THAT(cli::incsim("--config " + d.write("bad.yaml", config)).err, Catch::StartsWith("incsim: error: ib.sharp.policy (in "));
  };
  unread(kCluster4 + "cluster.network: roce\nib.sharp.policy: partitioned\n"
                     "jobs:\n  - {name: a, gpus: 0-15, algorithm: nvlsnetreduce}\n");
  unread("platform: dgx2\nsizes: 64K\nib.sharp.policy: quota\njobs:\n  - {name: a, gpus: 0-7, algorithm: push}\n");
}

// NetReduce's rack: jobs are rings of its hosts on one switch and one FPGA,
// each ring its own id, CLT entries and aggregator array (§6 Multi-Tenancy).
namespace {
const std::string kRack = "platform: rack\nsizes: 1M\n";
// A ring of 2 hosts, N = 2, 1 KB packets: an aggregator holds each rank's
// header and payload, the value and a bitmap byte, 2 x (64 + 1024) + 1024 +
// 1 = 3201 B; a message of a 2N window 4 x 3201 = 12804 B.
constexpr int kPerMessage = 12804;
}  // namespace

TEST_CASE("two NetReduce rings on the halves of a rack finish together, each as fast as it runs alone",
          "[jobs][rack][netreduce]") {
  cli::TempDir d;
  const auto lines = csv_of(d, "rack.yaml", kRack + "jobs:\n  - {name: a, gpus: 0-2}\n  - {name: b, gpus: 3-5}\n");
  REQUIRE(lines.size() == 3);
  const std::string& h = lines[0];
  CHECK(cell(h, lines[1], "time_us") == cell(h, lines[2], "time_us"));
  for (size_t i : {1, 2}) {
    CHECK(cell(h, lines[i], "wrong") == "0");
    CHECK(cell(h, lines[i], "alone_us") == cell(h, lines[i], "time_us"));
  }
  // The same ring without a jobs: list, by --ring, takes the same time.
  const cli::Result alone = cli::incsim("--platform rack --ring 3,4,5 --sizes 1M --quiet --csv " + d.file("b.csv"));
  REQUIRE(alone.code == 0);
  const auto b = cli::lines(cli::slurp(d.file("b.csv")));
  CHECK(cell(b[0], b[1], "time_us") == cell(h, lines[2], "time_us"));
}

TEST_CASE("the count of wrong elements bites for a rack's job: a faulty aggregator shows in NetReduce's row only",
          "[jobs][rack][netreduce][fault]") {
  cli::TempDir d;
  const std::string config = kRack + "fault.alu.block: fpga.aggregator\nfault.alu.elements: 5\njobs:\n"
                                     "  - {name: a, gpus: 0-2}\n  - {name: b, gpus: 3-5, algorithm: ring}\n";
  const cli::Result r = cli::incsim("--config " + d.write("fault.yaml", config) + " --quiet --csv " + d.file("f.csv"));
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("15 elements differ from the reference result"));
  const auto lines = cli::lines(cli::slurp(d.file("f.csv")));
  REQUIRE(lines.size() == 3);
  // The faulty adder's first 5 elements, in each of the 3 hosts' results.
  CHECK(cell(lines[0], lines[1], "wrong") == "15");
  CHECK(cell(lines[0], lines[2], "wrong") == "0");
}

TEST_CASE("partitioned aggregator memory gives each ring its weight's share, and the shorter MsgLen is slower",
          "[jobs][rack][netreduce][sharing]") {
  cli::TempDir d;
  const auto rows = json_of(d, "p",
                            kRack + "fpga.aggregator.bytes: 2000000\nfpga.aggregator.policy: partitioned\njobs:\n"
                                    "  - {name: a, gpus: [0, 1], weight: 2}\n  - {name: b, gpus: [2, 3]}\n"
                                    "  - {name: c, gpus: [4, 5]}\n")["rows"];
  REQUIRE(rows.size() == 3);
  // a: 2000000 x 2/4 = 1000000 B, floor(1000000 / 12804) = 78 packets a
  // message; b and c: 500000 B, 39.
  CHECK(rows[0]["aggregator"]["msg_len"] == 78);
  CHECK(rows[0]["aggregator"]["bytes"] == 78 * kPerMessage);
  for (int j : {1, 2}) {
    CHECK(rows[j]["aggregator"]["msg_len"] == 39);
    CHECK(rows[j]["aggregator"]["bytes"] == 39 * kPerMessage);
  }
  // 2N x 39 KB in flight is about the 6.3 us round trip at 100 Gb/s (§3.2's
  // bound); 2N x 78 KB is twice it.
  CHECK(rows[1]["time_us"].get<double>() > 1.2 * rows[0]["time_us"].get<double>());
  for (const auto& row : rows) CHECK(row["wrong"] == 0);
}

TEST_CASE("shared aggregator memory goes first come, first served, quota caps a ring, and fallback: software runs the ring",
          "[jobs][rack][netreduce][sharing]") {
  cli::TempDir d;
  const std::string two = "  - {name: a, gpus: [0, 1]}\n  - {name: b, gpus: [2, 3]";
  // Shared: a takes floor(1200000 / 12804) = 93 of the 170 it asks, and
  // leaves 1200000 - 93 x 12804 = 9228 B, less than b's one message.
  const std::string shared = kRack + "fpga.aggregator.bytes: 1200000\njobs:\n" + two;
  refused(d, shared + "}\n",
          "job 'b' cannot aggregate in the FPGA's aggregator memory: fpga's aggregator array for a ring of 2 with a "
          "window of N = 2 needs at least 2N x 1 aggregators, 12804 bytes, but the free memory leaves 9228 of "
          "fpga.aggregator.bytes=1200000 (give it a larger share, or fallback: software)");
  const auto f = fell_back(d, shared + ", fallback: software}\n", "fpga's aggregator array");
  CHECK(f["rows"][0]["aggregator"]["msg_len"] == 93);
  CHECK(f["config"]["jobs"][1]["algorithm"] == "ring");
  // Quota: a at most 2000000 x 0.25 = 500000 B (39 packets); b takes 170 of
  // what is left, floor((2000000 - 39 x 12804) / 12804) = 117.
  const auto q = json_of(d, "q",
                         kRack + "fpga.aggregator.bytes: 2000000\nfpga.aggregator.policy: quota\njobs:\n" +
                             "  - {name: a, gpus: [0, 1], quota: 0.25}\n  - {name: b, gpus: [2, 3]}\n")["rows"];
  CHECK(q[0]["aggregator"]["msg_len"] == 39);
  CHECK(q[1]["aggregator"]["msg_len"] == 117);
}

TEST_CASE("aggregator memory's bad keys, and jobs the rack cannot run, are refused", "[jobs][rack][errors]") {
  cli::TempDir d;
  refused(d, kRack + "fpga.aggregator.policy: partitioned\njobs:\n  - {gpus: 0-2}\n",
          "fpga.aggregator.policy=partitioned shares the FPGAs' aggregator memory, but fpga.aggregator.bytes=0 gives "
          "it no budget to share");
  refused(d, kRack + "fpga.aggregator.bytes: 1000000\nfpga.aggregator.policy: fair\njobs:\n  - {gpus: 0-2}\n",
          "fpga.aggregator.policy must be shared, partitioned or quota, not 'fair'");
  refused(d, kRack + "fpga.aggregator.bytes: 1000000\njobs:\n  - {gpus: 0-2, weight: 2}\n",
          "job 'job1' gives a weight, which only fpga.aggregator.policy=partitioned reads");
  refused(d, kRack + "jobs:\n  - {gpus: 0-2}\n  - {gpus: 2-3, allow_overlap: true}\n",
          "job 'job2' says allow_overlap: true, but on platform rack each host runs one ring");
  refused(d, kRack + "jobs:\n  - {gpus: 0-6}\n", "job 'job1' names host 6, but platform 'rack' has hosts 0 to 5");
  refused(d, kRack + "jobs:\n  - {placement: spread, gpus: 4}\n  - {placement: random, gpus: 3}\n",
          "job 'job2' does not fit (placement: random, gpus: 3): 2 hosts are free and it asks for 3");
  refused(d, kRack + "jobs:\n  - {gpus: [0]}\n", "job 'job1': a ring needs at least 2 hosts, not 1");
  refused(d, "platform: spineleaf\nsizes: 1M\njobs:\n  - {gpus: 0-3}\n",
          "a jobs: list on NetReduce's Ethernet runs rings of the hosts of one rack (platform rack); platform "
          "spineleaf builds one job's rings itself");
  // Alone, a budget too small for one ring is one sentence too.
  const cli::Result small = cli::incsim("--platform rack -c fpga.aggregator.bytes=10000");
  CHECK(small.code == 2);
  CHECK(cli::lines(small.err).size() == 1);
  CHECK_THAT(small.err, Catch::Contains("needs at least 2N x 1 aggregators, 30212 bytes, but the free memory leaves "
                                        "10000 of fpga.aggregator.bytes=10000"));
}

TEST_CASE("multicast groups: the job past the switches' limit is refused or runs the ring, and partitioned shares hold",
          "[jobs][sharing][multicast]") {
  cli::TempDir d;
  // Four NVLS jobs of 2 GPUs, each a group on all four NVSwitches.
  const std::string four = "platform: hgx-h100\nsizes: 256K\nswitch.multicast.groups: 3\njobs:\n"
                           "  - {name: j, placement: contiguous, gpus: 2, algorithm: nvls, repeat: 4";
  refused(d, four + "}\n",
          "job 'j.4' cannot aggregate in the switches' multicast groups: a group of 2 GPUs needs a multicast group at "
          "sw0, which holds all of switch.multicast.groups=3 already (give it a larger share, or fallback: software)");
  const auto json = fell_back(d, four + ", fallback: software}\n", "a group of 2 GPUs needs a multicast group");
  CHECK(json["config"]["jobs"][3]["fallback"] == "software");
  CHECK(!json["config"]["jobs"][2].contains("fallback"));
  // Partitioned, 4 groups: weights 3 and 1 give the first job 3, the second 1.
  const auto two = json_of(d, "p",
                           "platform: hgx-h100\nsizes: 256K\nswitch.multicast.groups: 4\n"
                           "switch.multicast.policy: partitioned\njobs:\n"
                           "  - {name: a, gpus: 0-3, algorithm: nvls, weight: 3}\n"
                           "  - {name: b, gpus: 4-7, algorithm: nvls}\n");
  for (const auto& row : two["rows"]) CHECK(row["wrong"] == 0);
  // Equal weights of 3 groups: floor(3/4) = 0 each, so every job runs the ring.
  refused(d, four + "}\n" + "switch.multicast.policy: partitioned\n",
          "job 'j.1' cannot aggregate in the switches' multicast groups: a group of 2 GPUs needs a multicast group at "
          "sw0, but its partitioned share of the switches' multicast groups (weight 1 of 4) is 0 of "
          "switch.multicast.groups=3 there, 0 of them held already");
  refused(d, "platform: hgx-h100\nswitch.multicast.policy: quota\njobs:\n  - {gpus: 0-3, algorithm: nvls}\n",
          "switch.multicast.policy=quota shares the switches' multicast groups, but switch.multicast.groups=0 sets no "
          "limit to share");
}

TEST_CASE("NIC schedule tables: a collective past a NIC's limit runs the cores' ring, or on a torus is refused",
          "[jobs][sharing][nic]") {
  cli::TempDir d;
  // Two MultiTree all-reduces on the same GPUs, one table per NIC (MultiTree's NI).
  const std::string star = "platform: star\ngpus: 8\nsizes: 64K\nnic.tables: 1\njobs:\n"
                           "  - {name: a, gpus: 0-7, algorithm: multitree}\n"
                           "  - {name: b, gpus: 0-7, algorithm: multitree, allow_overlap: true";
  refused(d, star + "}\n",
          "job 'b' cannot aggregate in the NICs' schedule tables: multitree needs a schedule table on gpu0.nic, which "
          "holds all of nic.tables=1 already (give it a larger share, or fallback: software)");
  const auto json = fell_back(d, star + ", fallback: software}\n", "multitree needs a schedule table on gpu0.nic");
  CHECK(json["config"]["jobs"][1]["algorithm"] == "ring");
  // Partitioned, 2 tables, weights 3 and 1: floor(2 x 1/4) = 0 for b.
  refused(d, "platform: star\ngpus: 8\nsizes: 64K\nnic.tables: 2\nnic.tables.policy: partitioned\njobs:\n"
             "  - {name: a, gpus: 0-7, algorithm: multitree, weight: 3}\n"
             "  - {name: b, gpus: 0-7, algorithm: multitree, allow_overlap: true}\n",
          "job 'b' cannot aggregate in the NICs' schedule tables: multitree needs a schedule table on gpu0.nic, but its "
          "partitioned share of the NICs' schedule tables (weight 1 of 4) is 0 of nic.tables=2 there, 0 of them held "
          "already");
  // On the torus the ring runs on the NICs too: no fallback.
  refused(d, "platform: torus\ndims: 4x4\nsizes: 64K\nnic.tables: 1\njobs:\n  - {name: a, gpus: 0-15, algorithm: multitree}\n"
             "  - {name: b, gpus: 0-15, algorithm: multitree, allow_overlap: true, fallback: software}\n",
          "job 'b' cannot aggregate in the NICs' schedule tables: multitree needs a schedule table on n0.nic, which "
          "holds all of nic.tables=1 already, nor can its fallback, the ring: ring needs a schedule table on n0.nic");
  refused(d, "platform: star\ngpus: 8\nnic.tables.policy: quota\njobs:\n  - {gpus: 0-7, algorithm: multitree}\n",
          "nic.tables.policy=quota shares the NICs' schedule tables, but nic.tables=0 sets no limit to share");
}

TEST_CASE("a RoCE cluster's rail FPGA admits a job's rings only whole: too little memory is refused, or the ring",
          "[jobs][cluster][netreduce][sharing]") {
  cli::TempDir d;
  // nvlsnetreduce puts 16 rings of 2 nodes on each rail's FPGA, each 2 x 64
  // one-block messages of 2 x (64 + 128) + 128 + 1 = 513 B: 1050624 B.
  const cli::Result alone = cli::incsim("--platform cluster --nodes 2 -c cluster.network=roce --algorithm nvlsnetreduce "
                                        "--sizes 256K -c fpga.aggregator.bytes=1000000");
  CHECK(alone.code == 2);
  CHECK_THAT(alone.err, Catch::Contains("leaf0_fpga's aggregator arrays for 16 rings of nvlsnetreduce need 1050624 "
                                        "bytes, but the free memory leaves 1000000 of fpga.aggregator.bytes=1000000"));
  // Two jobs of two nodes each on 2000000 B partitioned: 1000000 each, short of 1050624: both run the ring.
  const auto json = fell_back(d,
                              kCluster4 + "cluster.network: roce\nfpga.aggregator.bytes: 2000000\n"
                                          "fpga.aggregator.policy: partitioned\njobs:\n"
                                          "  - {name: a, gpus: 0-15, algorithm: nvlsnetreduce, fallback: software}\n"
                                          "  - {name: b, gpus: 16-31, algorithm: nvlsnetreduce, fallback: software}\n",
                              "leaf0_fpga's aggregator arrays for 16 rings of nvlsnetreduce need 1050624 bytes, but its "
                              "partitioned share");
  for (int j : {0, 1}) CHECK(json["config"]["jobs"][j]["algorithm"] == "ring");
}

namespace {
// A platform's GPUs as one communicator at packet level and one as flows,
// the machine sized for `algorithm`.
struct BothFidelities {
  BothFidelities(const std::string& platform, int gpus, const std::string& algorithm)
      : t(platforms::make_topology(platform, gpus, cfg)),
        d(platforms::platform_defaults(t, platforms::needs_of(t, {algorithm}))),
        machine(t, cfg, 1, d),
        flows(t, cfg, d, false),
        packet_comm(machine, range(0, gpus), cfg, 1),
        flow_comm(flows, range(0, gpus), cfg, 1) {}
  Config cfg;
  const topo::Topology t;
  const platforms::PlatformDefaults d;
  platforms::GpuMachine machine;
  platforms::FlowPlatform flows;
  platforms::Communicator packet_comm, flow_comm;
};
}  // namespace

TEST_CASE("the communicator launches an algorithm at packet level and as flows, the same program within 5%",
          "[jobs][communicator]") {
  BothFidelities both("star", 4, "ring");
  platforms::Communicator &packet_comm = both.packet_comm, &flow_comm = both.flow_comm;
  const auto launch = [](platforms::Communicator& c) {
    return c.launch("ring", collectives::Collective::AllReduce, elements::DType::Float32, elements::RedOp::Sum);
  };
  const std::unique_ptr<platforms::Call> packet = launch(packet_comm), flow = launch(flow_comm);
  CHECK(packet->program().ops.size() == flow->program().ops.size());
  std::vector<platforms::Measures> m;
  for (platforms::Call* call : {packet.get(), flow.get()}) {
    bool done = false;
    call->start(1 << 20, [&done] {
      done = true;
      sc_core::sc_pause();
    });
    sc_core::sc_start();
    REQUIRE(done);
    m.push_back(call->measures());
  }
  INFO("packet " << m[0].time_us << " us, flows " << m[1].time_us << " us");
  CHECK(m[0].wrong == 0);
  CHECK(m[0].packets > 0);
  CHECK(m[1].packets == 0);  // no packets as flows
  CHECK(m[0].time_us >= m[0].bound_us);
  CHECK(m[1].bound_us == Approx(m[0].bound_us));
  CHECK(std::abs(m[1].time_us / m[0].time_us - 1) < 0.05);
}

TEST_CASE("the communicator's launch refuses, in one sentence, what it cannot set up", "[jobs][communicator][errors]") {
  Config cfg;
  const topo::Topology t = platforms::make_topology("hgx-h100", 8, cfg);
  platforms::FlowPlatform flows(t, cfg, platforms::platform_defaults(t), false);
  platforms::Communicator comm(flows, range(0, 8), cfg, 1);
  const auto refused = [&comm](const std::string& algorithm, const std::string& why) {
    INFO(algorithm);
    CHECK_THROWS_WITH(comm.launch(algorithm, collectives::Collective::AllReduce, elements::DType::Float32,
                                  elements::RedOp::Sum),
                      Catch::Contains(why));
  };
  refused("rnig", "no algorithm 'rnig' runs on a GPU fabric");
  refused("ring2d", "ring2d runs along the rows and columns of a torus or mesh");  // the registry's reason
}

TEST_CASE("the communicator launches nccl with each size's choice, at packet level and as flows",
          "[jobs][communicator][nccl]") {
  BothFidelities both("hgx-h100", 8, "nccl");
  const platforms::Communicator* packet_comm = &both.packet_comm;
  std::map<uint64_t, double> packet_us;  // by size
  for (platforms::Communicator* comm : {&both.packet_comm, &both.flow_comm}) {
    const std::unique_ptr<platforms::Call> call =
        comm->launch("nccl", collectives::Collective::AllReduce, elements::DType::Float32, elements::RedOp::Sum);
    // NCCL's choices on 8 H100s (test_hardware: by hand): the ring's LL at 64 KiB, NVLS at 4 MiB.
    for (const auto& [bytes, choice] : {std::pair{uint64_t{64} << 10, "ring ll"}, std::pair{uint64_t{4} << 20, "nvls"}}) {
      bool done = false;
      call->start(bytes, [&done] {
        done = true;
        sc_core::sc_pause();
      });
      sc_core::sc_start();
      REQUIRE(done);
      const platforms::Measures m = call->measures();
      INFO((comm == packet_comm ? "packet level, " : "flows, ") << bytes << " B: " << m.choice);
      CHECK(m.choice.rfind(choice, 0) == 0);
      CHECK(m.time_us >= m.bound_us);
      if (comm == packet_comm) {
        CHECK(m.wrong == 0);
        packet_us[bytes] = m.time_us;
      } else {
        CHECK(m.time_us == Approx(packet_us[bytes]).epsilon(0.05));  // the flow fidelity's cross-check
      }
    }
  }
}
