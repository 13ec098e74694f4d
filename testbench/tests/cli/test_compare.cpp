// Comparing algorithms in one run (--algorithm ring,push, --baseline): one
// table with a speed-up column whose rows are each algorithm's run alone, the
// algorithm column in JSON and CSV, and the lists refused.
#include <catch2/catch.hpp>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"

using namespace cli;

namespace {

// A table's rows: its lines that are not comments.
std::vector<std::string> rows_of(const std::string& out) {
  std::vector<std::string> rows;
  for (const std::string& l : lines(out))
    if (l[0] != '#') rows.push_back(l);
  return rows;
}

double time_us(const std::string& row) {
  std::istringstream is(row);
  std::string word;
  for (int i = 0; i < 4; ++i) is >> word;  // size, count, type, redop, then time
  double t = 0;
  is >> t;
  return t;
}

}  // namespace

TEST_CASE("a list of algorithms prints one table of each algorithm's rows as it runs alone and a speed-up") {
  const Result both = incsim(std::string(kQuickRun) + " --algorithm ring,push");
  INFO(both.err);
  REQUIRE(both.code == 0);
  const Result ring = incsim(std::string(kQuickRun) + " --algorithm ring");
  const Result push = incsim(std::string(kQuickRun) + " --algorithm push");
  REQUIRE(ring.code == 0);
  REQUIRE(push.code == 0);
  const auto alone = rows_of(ring.out), pushed = rows_of(push.out), rows = rows_of(both.out);
  REQUIRE(alone.size() == 2);
  REQUIRE(rows.size() == 4);
  CHECK_THAT(both.out, Catch::Contains("algorithm") && Catch::Contains("speedup") &&
                           Catch::Contains("speedup: ring's time over each one's"));
  // A size's algorithms together: ring then push, each row its run alone's
  // (after the algorithm column, before the speed-up), byte for byte.
  const size_t algorithm = 2 + 10, speedup = 8;
  for (size_t i = 0; i < 2; ++i) {
    const std::string& r = rows[2 * i];
    const std::string& p = rows[2 * i + 1];
    CHECK(r.substr(0, algorithm) == "        ring");
    CHECK(p.substr(0, algorithm) == "        push");
    CHECK("  " + r.substr(algorithm, r.size() - algorithm - speedup) == alone[i]);
    CHECK("  " + p.substr(algorithm, p.size() - algorithm - speedup) == pushed[i]);
    CHECK(r.substr(r.size() - speedup) == "    1.00");
    const double expected = time_us(alone[i]) / time_us(pushed[i]);
    CHECK(std::stod(p.substr(p.size() - speedup)) == Approx(expected).epsilon(0.01));
  }
  // Push's notes (its reduction tables) are named by it.
  CHECK_THAT(both.out, Catch::Contains("#   push: reduction tables: "));

  // --baseline names the algorithm the speed-ups are against; one algorithm
  // and --baseline compare the two, as training does.
  const Result base = incsim(std::string(kQuickRun) + " --algorithm ring,push --baseline push");
  REQUIRE(base.code == 0);
  CHECK(rows_of(base.out)[1].substr(rows_of(base.out)[1].size() - speedup) == "    1.00");
  const Result pair = incsim(std::string(kQuickRun) + " --algorithm ring --baseline push");
  REQUIRE(pair.code == 0);
  CHECK(rows_of(pair.out) == rows_of(base.out));
}

TEST_CASE("a comparison's JSON and CSV carry an algorithm column and every row as each runs alone") {
  TempDir d;
  const Result r = incsim(std::string(kQuickRun) + " --algorithm ring,push --json " + d.file("c.json") + " --csv " +
                          d.file("c.csv"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(d.file("c.json")));
  CHECK(j["config"]["algorithm"] == "ring,push");
  CHECK(j["config"]["baseline"] == "ring");
  CHECK(j["columns"][0]["name"] == "algorithm");
  REQUIRE(j["rows"].size() == 4);
  REQUIRE(j["runs"].size() == 2);
  for (const char* alg : {"ring", "push"}) {
    const Result one = incsim(std::string(kQuickRun) + " --algorithm " + alg + " --json " + d.file("one.json"));
    REQUIRE(one.code == 0);
    const auto alone = nlohmann::json::parse(slurp(d.file("one.json")));
    const size_t a = std::string(alg) == "ring" ? 0 : 1;
    CHECK(j["runs"][a]["config"]["params"] == alone["config"]["params"]);
    for (size_t i = 0; i < 2; ++i) {
      auto row = j["rows"][2 * i + a];
      CHECK(row["algorithm"] == alg);
      CHECK(row["speedup"].get<double>() ==
            Approx(j["rows"][2 * i]["time_us"].get<double>() / row["time_us"].get<double>()));
      row.erase("algorithm");
      row.erase("speedup");
      CHECK(row == alone["rows"][i]);
    }
  }
  const auto csv = lines(slurp(d.file("c.csv")));
  REQUIRE(csv.size() == 5);
  CHECK(csv[0].rfind("algorithm,size_bytes,", 0) == 0);
  CHECK_THAT(csv[0], Catch::Contains(",speedup") && Catch::Contains("reduction_tables.hits"));
  CHECK(csv[1].rfind("ring,8192,", 0) == 0);
  CHECK(csv[2].rfind("push,8192,", 0) == 0);
  // A run of one algorithm has no algorithm column (its rows unchanged).
  const Result one = incsim(std::string(kQuickRun) + " --csv -");
  CHECK(one.out.rfind("size_bytes,", 0) == 0);
}

// --check-fidelity: each algorithm's flows beside packet level at the
// smallest size, as runs of them alone give them.
TEST_CASE("a fidelity check prints each algorithm's flow and packet times at the smallest size") {
  TempDir d;
  const std::string run = std::string(kQuickRun) + " --fidelity flow --algorithm ring,push";
  const Result r = incsim(run + " --check-fidelity --json " + d.file("c.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("# fidelity check at 8K: the flows' time beside packet level's"));
  const auto j = nlohmann::json::parse(slurp(d.file("c.json")));
  REQUIRE(j["fidelity_check"].size() == 2);
  for (size_t a = 0; a < 2; ++a) {
    const auto& c = j["fidelity_check"][a];
    const std::string alg = a ? "push" : "ring";
    CHECK(c["algorithm"] == alg);
    CHECK(c["size_bytes"] == 8192);
    for (const char* fidelity : {"flow", "packet"}) {
      const Result one = incsim("--platform star --gpus 4 --sizes 8K --quiet --algorithm " + alg + " --fidelity " +
                                fidelity + " --json " + d.file("one.json"));
      REQUIRE(one.code == 0);
      const double t = nlohmann::json::parse(slurp(d.file("one.json")))["rows"][0]["time_us"];
      CHECK(c[std::string(fidelity) + "_us"].get<double>() == t);
    }
    const double diff = c["flow_us"].get<double>() / c["packet_us"].get<double>() - 1;
    CHECK(c["difference"].get<double>() == Approx(diff));
    char line[160];
    std::snprintf(line, sizeof line, "#   %s: flow %.2f us, packet %.2f us, flow %+.1f%%", alg.c_str(),
                  c["flow_us"].get<double>(), c["packet_us"].get<double>(), 100 * diff);
    CHECK_THAT(r.out, Catch::Contains(line));
  }
  // The table's rows are the run's without the check.
  const Result plain = incsim(run);
  REQUIRE(plain.code == 0);
  CHECK(rows_of(r.out) == rows_of(plain.out));
}

TEST_CASE("a bad list of algorithms is refused in one sentence before anything runs") {
  const std::string run = kQuickRun;
  require_error(run + " --algorithm ring,foo", {"unknown algorithm 'foo'", "ring"});
  require_error("--platform dgx2 --sizes 8K --quiet --algorithm ring,pnetreduce", {"pnetreduce", "not on dgx2"});
  require_error(run + " --algorithm ring,push,ring", {"names ring twice"});
  require_error(run + " --algorithm ring,", {"empty item"});
  require_error(run + " --algorithm ,ring", {"empty item"});
  require_error(run + " --algorithm ring,push --baseline pull", {"--baseline pull is not one of --algorithm ring,push"});
  require_error(run + " --algorithm ring --baseline ring", {"--baseline ring is the --algorithm too"});
  require_error(run + " --baseline ring", {"--baseline ring is the default algorithm too"});
  require_error("--platform dgx2 --sizes 8K --quiet --algorithm ring --baseline pnetreduce", {"pnetreduce", "not on dgx2"});
  require_error(run + " --algorithm ring,push --print-program", {"--print-program shows one algorithm's run"});
  require_error(run + " --algorithm ring,push --traffic uniform", {"compares collectives"});
  require_error(run + " --algorithm ring,push --model resnet50", {"--workload train compares its --algorithm with its --baseline"});
  TempDir d;
  require_error(run + " --algorithm ring,push --config " + d.write("jobs.yaml", "jobs:\n  - gpus: [0, 1]\n"),
                {"a jobs: list runs each job's own algorithm"});
  // A key is refused only if no algorithm of the list reads it.
  require_error(run + " --algorithm ring,blink -c switch.reduction_table.bytes=512",
                {"switch.reduction_table.bytes is not read by ring, blink on star"});
  const Result read = incsim(run + " --algorithm ring,push -c switch.reduction_table.bytes=512");
  INFO(read.err);
  CHECK(read.code == 0);
}

TEST_CASE("a comparison lists each algorithm's parameters and surfaces its stalls and wrong elements") {
  const std::string run = kQuickRun;
  // --list-params: a key every algorithm reads alike once; push's and pull's
  // table sizes each under its algorithm.
  const Result params = incsim(run + " --algorithm ring,push,pull --list-params");
  REQUIRE(params.code == 0);
  std::vector<std::string> tables;
  for (const std::string& l : lines(params.out))
    if (l.rfind("switch.reduction_table.bytes\t", 0) == 0) tables.push_back(l);
  REQUIRE(tables.size() == 2);
  CHECK_THAT(tables[0], Catch::Contains("\t256\t") && Catch::EndsWith(" (push)"));
  CHECK_THAT(tables[1], Catch::Contains("\t4096\t") && Catch::EndsWith(" (pull)"));
  size_t progress = 0;
  for (const std::string& l : lines(params.out))
    if (l.rfind("sim.progress_s\t", 0) == 0) {
      ++progress;
      CHECK_THAT(l, Catch::EndsWith("[range: 0 to 1e6 s]"));
    }
  CHECK(progress == 1);
  CHECK_THAT(params.out, Catch::Contains("\nring.channels\t"));
  // A child's stall is the run's: its report, named by the algorithm, and no rows.
  const Result stall = incsim(run + " --algorithm ring,push -c sim.stall_timeout_us=0.01");
  CHECK(stall.code == 2);
  CHECK(stall.err.rfind("incsim: error: ring: simulation stalled", 0) == 0);
  CHECK(rows_of(stall.out).empty());
  // Wrong elements in one algorithm's rows: the table, then exit 1 naming it.
  const Result wrong =
      incsim(run + " --algorithm ring,push -c fault.alu.block=sw0.port1.reduction_table -c fault.alu.elements=5");
  CHECK(wrong.code == 1);
  CHECK(rows_of(wrong.out).size() == 4);
  CHECK(lines(wrong.err) == std::vector<std::string>{"incsim: error: push: 20 elements differ from the reference result"});
}

TEST_CASE("a comparison writes each algorithm's waveform and timeline to a file of its own") {
  TempDir d;
  const Result r = incsim(std::string(kQuickRun) + " --algorithm ring,push --vcd " + d.file("w.vcd") + " --timeline " +
                          d.file("t.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  for (const char* alg : {"ring", "push"}) {
    const std::string vcd = slurp(d.file(std::string("w-") + alg + ".vcd"));
    CHECK_THAT(vcd, Catch::Contains("$enddefinitions"));
    CHECK(fs::exists(d.file(std::string("w-") + alg + ".gtkw")));
    const auto timeline = nlohmann::json::parse(slurp(d.file(std::string("t-") + alg + ".json")));
    CHECK(!timeline["traceEvents"].empty());
    // The waveform is the one a run of the algorithm alone writes.
    const Result one = incsim(std::string(kQuickRun) + " --algorithm " + alg + " --vcd " + d.file("one.vcd"));
    REQUIRE(one.code == 0);
    CHECK(vcd == slurp(d.file("one.vcd")));
  }
  CHECK(!fs::exists(d.file("w.vcd")));
}
