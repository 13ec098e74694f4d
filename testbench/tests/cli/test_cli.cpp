// The real incsim binary: a good run's rows and outputs (JSON, CSV, VCD),
// determinism, --help, --list-params, --list-choices, config files, logging.
#include <catch2/catch.hpp>

#include <cctype>

#include "cli_run.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#ifndef VCD2FST
#define VCD2FST "/usr/bin/vcd2fst"
#endif
#ifndef PLATFORM_EXAMPLES
#error "CMake passes the folder of the example platform files as PLATFORM_EXAMPLES"
#endif

namespace fs = std::filesystem;
using namespace cli;

namespace {
// --list-choices --platform P names exactly the algorithms that run on P:
// each algorithm (with the first collective it lists) at 4 KiB, run or refused.
void require_listed_algorithms_run(const std::string& platform, const std::string& shape = "") {
  const Result all = incsim("--list-choices");
  REQUIRE(all.code == 0);
  std::vector<std::pair<std::string, std::string>> algorithms;  // name, a collective it runs
  std::istringstream lines(all.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("algorithm ", 0) != 0) continue;
    const size_t tab = line.find('\t');
    const std::string name = line.substr(10, tab - 10), rest = line.substr(tab + 1);
    algorithms.push_back({name, rest.substr(0, rest.find_first_of(",; "))});
  }
  const Result here = incsim("--list-choices --platform " + platform + " " + shape);
  REQUIRE(here.code == 0);
  const size_t at = here.out.find("\nalgorithm\t");
  REQUIRE(at != std::string::npos);
  const std::string listed = ", " + here.out.substr(at + 11, here.out.find('\n', at + 1) - at - 11) + ",";
  for (const auto& [name, collective] : algorithms) {
    const Result r = incsim("--platform " + platform + " " + shape + " --algorithm " + name + " --collective " + collective +
                            " --sizes 4K");
    const bool named = listed.find(", " + name + ",") != std::string::npos;
    INFO(platform << " " << name << " " << collective << ": " << r.err);
    CHECK((r.code == 0) == named);
  }
}
}  // namespace

TEST_CASE("list-choices with a platform names the algorithms that run there: the GPU fabrics", "[cli]") {
  for (const char* p : {"star", "torus", "bigraph", "dgx1v", "hgx-h100"}) require_listed_algorithms_run(p);
}

TEST_CASE("list-choices with a platform names the algorithms that run there: a cluster and the Ethernet platforms", "[cli]") {
  require_listed_algorithms_run("cluster", "--nodes 2");
  require_listed_algorithms_run("cluster", "--nodes 2 -c cluster.network=roce");
  // Broadcast's default elsewhere, multicast, does not run on a cluster; the ring does.
  const Result broadcast = incsim("--platform cluster --nodes 2 --collective broadcast --sizes 4K");
  CHECK(broadcast.code == 0);
  CHECK_THAT(broadcast.out, Catch::StartsWith("# incsim: broadcast ring on 16 of 16 GPUs"));
  require_listed_algorithms_run("rack");
  require_listed_algorithms_run("multigpu", "--machines 2 --gpus-per-machine 2");
  require_error("--list-choices --platform clustr", {"unknown platform 'clustr'; did you mean 'cluster'?"});
}

TEST_CASE("a good run exits 0 with a row per size and nothing on stderr", "[cli]") {
  const Result r = incsim(kQuickRun);
  INFO("stderr:\n" << r.err);
  REQUIRE(r.exited);
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  std::vector<std::string> rows;
  for (const auto& l : lines(r.out))
    if (l[0] != '#') rows.push_back(l);
  REQUIRE(rows.size() == 2);
  std::istringstream row(rows[1]);
  std::string size, count, type, redop, time, algbw, busbw, wrong;
  row >> size >> count >> type >> redop >> time >> algbw >> busbw >> wrong;
  CHECK(size == "65536");
  CHECK(count == "16384");
  CHECK(type == "float");
  CHECK(redop == "sum");
  CHECK(wrong == "0");
}

TEST_CASE("the same seed twice gives byte-identical JSON and VCD and another seed differs", "[cli][determinism]") {
  TempDir d;
  auto run = [&](const std::string& tag, int seed) {
    const Result r = incsim(std::string(kQuickRun) + " --seed " + std::to_string(seed) + " --json " +
                            d.file(tag + ".json") + " --vcd " + d.file(tag + ".vcd"));
    INFO("stderr:\n" << r.err);
    REQUIRE(r.exited);
    REQUIRE(r.code == 0);
  };
  run("a", 1);
  run("b", 1);
  run("c", 2);
  const std::string ja = slurp(d.file("a.json")), jb = slurp(d.file("b.json")), jc = slurp(d.file("c.json"));
  const std::string va = slurp(d.file("a.vcd")), vb = slurp(d.file("b.vcd")), vc = slurp(d.file("c.vcd"));
  REQUIRE_FALSE(ja.empty());
  REQUIRE_FALSE(va.empty());
  CHECK(ja == jb);
  CHECK(va == vb);
  CHECK((ja != jc || va != vc));
  CHECK(va != vc);  // memory latencies and data come from the seed
}

TEST_CASE("the JSON has the fixed row keys, the configuration and per-link statistics", "[cli][json]") {
  TempDir d;
  const Result r = incsim(std::string(kQuickRun) + " --json " + d.file("r.json") + " -c switch.latency_ns=120");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
  REQUIRE(j["rows"].size() == 2);
  for (const auto& row : j["rows"]) {
    for (const char* k : {"size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "wrong", "bound_fraction"})
      CHECK(row.contains(k));
    CHECK(row["wrong"] == 0);
    REQUIRE(row["links"].size() == 8);  // 4 GPUs x 2 directions
    for (const auto& l : row["links"]) {
      CHECK(l.contains("from"));
      CHECK(l.contains("to"));
      CHECK(l["bytes"].get<uint64_t>() > 0);
      CHECK(l["utilisation"].get<double>() > 0);
      CHECK(l["utilisation"].get<double>() <= 1.0);
    }
  }
  CHECK(j["rows"][0]["size_bytes"] == 8192);
  CHECK(j["config"]["platform"] == "star");
  CHECK(j["config"]["gpus"] == 4);
  CHECK(j["config"]["params"]["switch.latency_ns"] == 120);
}

TEST_CASE("the VCD has an explicit timescale and vcd2fst accepts it", "[cli][vcd]") {
  TempDir d;
  const Result r = incsim(std::string(kQuickRun) + " --vcd " + d.file("w.vcd"));
  REQUIRE(r.code == 0);
  const std::string vcd = slurp(d.file("w.vcd"));
  CHECK_THAT(vcd, Catch::Contains("$timescale"));
  CHECK_THAT(vcd, Catch::Contains("$enddefinitions"));
  // Per port queue depth and credits, per GPU step and chunk.
  CHECK_THAT(vcd, Catch::Contains("credits_vc0"));
  CHECK_THAT(vcd, Catch::Contains("in_bytes_vc0"));
  CHECK_THAT(vcd, Catch::Contains("step"));
  CHECK_THAT(vcd, Catch::Contains("chunk"));
  if (access(VCD2FST, X_OK) != 0) {
    // Catch2 2.13 has no SKIP: warn and stop here (the test passes).
    WARN("vcd2fst is not installed (" VCD2FST ", Debian package gtkwave): the GTKWave check did not run");
    return;
  }
  const Result f = sh(std::string("'" VCD2FST "' '") + d.file("w.vcd") + "' '" + d.file("w.fst") + "'");
  INFO("vcd2fst stdout:\n" << f.out << "\nstderr:\n" << f.err);
  REQUIRE(f.exited);
  CHECK(f.code == 0);
  CHECK(fs::exists(d.file("w.fst")));
  CHECK(fs::file_size(d.file("w.fst")) > 0);
}

// SystemC appends .vcd to any name: a path that exists is written as given
// (through a staging file), and only a new name without .vcd gets it.
TEST_CASE("a VCD path is used as given, and .vcd added only to a new name", "[cli][vcd]") {
  TempDir d;
  REQUIRE(incsim(std::string(kQuickRun) + " --vcd " + d.file("w")).code == 0);
  CHECK(fs::exists(d.file("w.vcd")));
  CHECK(fs::exists(d.file("w.gtkw")));
  CHECK(!fs::exists(d.file("w")));
  { std::ofstream(d.file("given")) << "old"; }
  REQUIRE(incsim(std::string(kQuickRun) + " --vcd " + d.file("given")).code == 0);
  CHECK(slurp(d.file("given")) == slurp(d.file("w.vcd")));
  CHECK(fs::exists(d.file("given.gtkw")));
  CHECK(!fs::exists(d.file("given.vcd")));
  const Result r = incsim("--platform star --gpus 4 --sizes 8K --vcd /dev/null");
  CHECK(r.code == 0);
  CHECK_THAT(r.err, Catch::Contains("wrote the waveform /dev/null") && Catch::Contains("no GTKWave save file"));
  CHECK(!fs::exists("/dev/null.vcd"));
}

TEST_CASE("option help exits 0 and lists the options", "[cli]") {
  const Result r = incsim("--help");
  REQUIRE(r.exited);
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  for (const char* flag : {"--platform", "--collective", "--algorithm", "--gpus", "--sizes", "--dtype", "--seed",
                           "--config", "-c ", "--vcd", "--json"})
    CHECK_THAT(r.out, Catch::Contains(flag));
}

TEST_CASE("option list-params prints key, type, value, default, source and description", "[cli]") {
  const Result r = incsim("--list-params -c switch.latency_ns=200");
  REQUIRE(r.exited);
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  const auto ls = lines(r.out);
  REQUIRE(ls.size() >= 10);
  bool found = false;
  for (const auto& l : ls) {
    INFO(l);
    std::vector<std::string> f;
    std::istringstream is(l);
    for (std::string x; std::getline(is, x, '\t');) f.push_back(x);
    REQUIRE(f.size() == 6);
    CHECK_FALSE(f[0].empty());
    CHECK((f[1] == "int" || f[1] == "float" || f[1] == "bool" || f[1] == "string"));
    CHECK_FALSE(f[5].empty());
    if (f[0] == "switch.latency_ns") {
      found = true;
      CHECK(f[1] == "float");
      CHECK(f[2] == "200");
      CHECK(f[3] == "150");
      CHECK(f[4] == "-c");
      CHECK_THAT(f[5], Catch::EndsWith(" [range: 0 to 1e9 ns]"));
    } else {
      CHECK(f[2] == f[3]);
      CHECK(f[4] == "default");
    }
  }
  CHECK(found);
}

TEST_CASE("option list-params lists how jobs share each fabric's tables, set or not", "[cli][jobs]") {
  // A cluster's SHARP tables have their own policy key beside the NVSwitches'.
  const Result r = incsim("--list-params --platform cluster --nodes 2 --algorithm nvlssharp");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("\nib.sharp.policy\tstring\tshared\tshared\tdefault\t") &&
                        Catch::Contains("\nswitch.reduction_table.policy\tstring\tshared\tshared\tdefault\t"));
}

TEST_CASE("option list-params --all lists every parameter, sorted, without building anything", "[cli]") {
  const Result all = incsim("--list-params --all");
  REQUIRE(all.code == 0);
  CHECK(all.err.empty());
  const auto ls = lines(all.out);
  // A header row, then a row per key and its description below, wrapped.
  REQUIRE(ls.size() > 2);
  CHECK(ls[0] == "key\ttype\tdefault\trange");
  CHECK(ls[1] == "    description");
  std::map<std::string, std::vector<std::string>> by_key;
  std::string previous;
  for (size_t i = 2; i < ls.size(); ++i) {
    const std::string& l = ls[i];
    INFO(l);
    CHECK(l.size() <= 100);
    if (l.rfind("    ", 0) == 0) {
      REQUIRE_FALSE(previous.empty());
      by_key[previous][4] += (by_key[previous][4].empty() ? "" : " ") + l.substr(4);
      continue;
    }
    std::vector<std::string> f;
    std::istringstream is(l);
    for (std::string x; std::getline(is, x, '\t');) f.push_back(x);
    if (f.size() == 3) f.push_back("");  // no range
    REQUIRE(f.size() == 4);
    CHECK(f[0] > previous);
    previous = f[0];
    CHECK(f[3].empty() == (f[1] == "bool" || f[1] == "string"));
    f.push_back("");
    by_key[f[0]] = f;
  }
  for (const auto& [key, f] : by_key) {
    INFO(key);
    CHECK_FALSE(f[4].empty());
  }
  // Defaults that depend on the algorithm say so, per algorithm.
  CHECK(by_key.at("switch.reduction_table.bytes")[2] == "per algorithm");
  CHECK_THAT(by_key.at("switch.reduction_table.bytes")[3], Catch::EndsWith(", or auto"));
  CHECK_THAT(by_key.at("switch.reduction_table.bytes")[4],
             Catch::StartsWith("defaults: push 256 on dgx2, star and fattree2l, elsewhere auto; pull and nvls 4096"));
  CHECK_THAT(by_key.at("gpu.copy_engine.waves")[4], Catch::StartsWith("defaults: push 16, pull 4"));
  CHECK(by_key.at("link.bw_GBps")[2] == "25");
  // Keys a default run does not read are there too.
  for (const char* k : {"roce.mtu_payload", "fpga.latency_ns", "gpu.copy_engine.waves", "traffic.window_ns",
                        "blink.eps", "dgx1.net_Gbps", "nic.clock_ghz"})
    CHECK(by_key.count(k) == 1);
  CHECK(by_key.at("link.bw_GBps")[3] == "0.001 to 100000 GB/s");
  // Every key any run reads is declared.
  for (const char* run : {"", "--platform rack", "--platform multigpu", "--platform spineleaf", "--algorithm push",
                          "--platform torus --algorithm multitree", "--platform dgx1v --algorithm blink",
                          "--platform torus --traffic uniform"}) {
    const Result r = incsim(std::string(run) + " --list-params");
    REQUIRE(r.code == 0);
    for (const auto& l : lines(r.out)) {
      INFO(run << ": " << l);
      CHECK(by_key.count(l.substr(0, l.find('\t'))) == 1);
    }
  }
}

TEST_CASE("progress goes to stderr unless quiet", "[cli][progress]") {
  const Result r = incsim("--platform star --gpus 4 --sizes 8K,1M -c sim.progress_s=0 -c sim.stall_timeout_us=5");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.err, Catch::Contains("incsim: size 1M (2 of 2): ") && Catch::Contains("%, simulated "));
  const Result q = incsim("--platform star --gpus 4 --sizes 8K,1M -c sim.progress_s=0 -c sim.stall_timeout_us=5 --quiet");
  REQUIRE(q.code == 0);
  CHECK(q.err.empty());
}

TEST_CASE("option list-choices prints the values each run option accepts", "[cli]") {
  const Result r = incsim("--list-choices");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("collective\tallreduce, reducescatter, allgather, broadcast, alltoall, reduce, gather, scatter\n"));
  CHECK_THAT(r.out, Catch::Contains("algorithm\tring, nccl, push, pull, multicast, nvls, oneshot, direct, dbtree, hd, ring2d, ring2d-hier, hdrm, multitree, multitree-msg, blink, hring, tree, collnet, sharp, nvlstree, nvlsring, nvlssharp, nvlsnetreduce, p2p, netreduce, pnetreduce, flatring, tencent\n"));
  CHECK_THAT(r.out,
             Catch::Contains("platform\tdgx2, dgx1v, dgx1p, fattree2l, star, torus, mesh, fattree, bigraph, hgx-a100, hgx-h100, hgx-b200, nvl72, cluster, rack, spineleaf, multigpu, FILE.yaml\n"));
  CHECK_THAT(r.out, Catch::Contains("redop\tsum, min, max\n"));
  // The algorithm table: each algorithm's collectives, platforms, engine and source.
  CHECK_THAT(r.out, Catch::Contains("algorithm multicast\tallgather, broadcast (default for broadcast); on dgx2, "
                                    "fattree2l, star, fattree, hgx-a100, hgx-h100, hgx-b200, nvl72;"));
  CHECK_THAT(r.out, Catch::Contains("algorithm ring2d\tallreduce; on torus, mesh; run by the NICs' schedule tables;"));
  CHECK_THAT(r.out, Catch::Contains("algorithm ring\tallreduce; on rack, spineleaf; run by the hosts' RoCE NICs;"));
  CHECK_THAT(r.out, Catch::Contains("algorithm pnetreduce\tallreduce (default for allreduce); on multigpu;"));
}

// Issue 20: --help named fpga0, which no run has (the FPGA is fpga).
TEST_CASE("the block names --help shows for --log are blocks of a run", "[cli]") {
  const Result help = incsim("--help");
  REQUIRE_THAT(help.out, Catch::Contains("info,sw3.port5=debug,fpga.clt=trace"));
  for (const auto& [platform, block] : std::vector<std::pair<std::string, std::string>>{
           {"dgx2 --algorithm push", "sw3.port5"}, {"rack --hosts 2", "fpga.clt"}}) {
    const Result r = incsim("--platform " + platform + " --sizes 4K --quiet --log " + block + "=warn");
    INFO(platform << ": " << r.err);
    CHECK(r.code == 0);
  }
  require_error("--platform rack --hosts 2 --sizes 4K --log fpga0=trace", {"--log names 'fpga0', which is no block"});
}

// --workload names what the other options imply, and gives the same rows.
TEST_CASE("option workload chooses the workload the options imply by default", "[cli]") {
  for (const auto& [implied, workload] : std::vector<std::pair<std::string, std::string>>{
           {"--platform star --gpus 4 --sizes 4K", "collective"},
           {"--platform rack --hosts 2 --sizes 4K", "netreduce"},
           {"--platform star --gpus 4 --traffic uniform --load 0.5", "traffic"}}) {
    const Result a = incsim(implied + " --quiet");
    const Result b = incsim(implied + " --workload " + workload + " --quiet");
    INFO(implied << "\n" << a.err << b.err);
    REQUIRE(a.code == 0);
    CHECK(b.code == 0);
    CHECK(a.out == b.out);
  }
  TempDir d;
  require_error("--config " + d.write("w.yaml", "workload: netreduce\nplatform: star\n"),
                {"--workload netreduce runs on NetReduce's Ethernet platforms", "not on star"});
}

// The defaults --help and --list-choices name are the ones a run takes.
TEST_CASE("the algorithm table's defaults are the runs' defaults", "[cli]") {
  const Result help = incsim("--help");
  // --help wraps its lines wherever the option's text falls: read it as one line.
  std::string flat;
  for (char c : help.out) {
    const bool space = std::isspace(static_cast<unsigned char>(c));
    if (!space) flat += c;
    else if (!flat.empty() && flat.back() != ' ') flat += ' ';
  }
  CHECK_THAT(flat, Catch::Contains("(default: ring; broadcast: multicast; alltoall, gather, scatter: p2p; rack, spineleaf: netreduce;"));
  CHECK_THAT(help.out, Catch::Contains("\n  hdrm           halving-doubling"));
  for (const auto& [args, header] : std::vector<std::pair<std::string, std::string>>{
           {"--platform star --gpus 4", "# incsim: allreduce ring on 4"},
           {"--platform star --gpus 4 --collective broadcast", "# incsim: broadcast multicast on 4"},
           {"--platform star --gpus 4 --collective alltoall", "# incsim: alltoall p2p on 4"},
           {"--platform star --gpus 4 --collective reduce", "# incsim: reduce ring on 4"},
           {"--platform star --gpus 4 --collective gather", "# incsim: gather p2p on 4"},
           {"--platform rack --hosts 2", "netreduce"},
           {"--platform multigpu --machines 2 --gpus-per-machine 2", "pnetreduce"}}) {
    const Result r = incsim(args + " --sizes 4K --quiet");
    INFO(args << "\n" << r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.substr(0, r.out.find('\n')).find(header) != std::string::npos);
  }
  require_error("--platform star --gpus 4 --collective broadcast --algorithm pull --sizes 8K",
                {"algorithm 'pull' does not run broadcast; choose one of multicast, ring, blink"});
}

// Issue 13: one options path, the same in every workload.
TEST_CASE("a config file sets run options in every workload, and later wins", "[cli][config]") {
  TempDir d;
  const std::string rack = d.write("rack.yaml", "platform: rack\nhosts: 3\nsizes: 64K\n");
  const Result r = incsim("--config " + rack + " --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("on 3 hosts, platform rack"));
  CHECK(lines(r.out).size() == 7);  // 6 header lines and one row: the file's sizes, not the default sweep
  const std::string sizes = d.write("sizes.yaml", "sizes: 64K\nnetreduce.window: 1\n");
  const Result flag_first = incsim("--platform rack --sizes 1M --config " + sizes + " --quiet --csv -");
  REQUIRE(flag_first.code == 0);
  CHECK_THAT(flag_first.out, Catch::Contains("\n65536,"));  // the file came later
  const Result file_first = incsim("--platform rack --config " + sizes + " --sizes 1M --quiet --csv -");
  REQUIRE(file_first.code == 0);
  CHECK_THAT(file_first.out, Catch::Contains("\n1048576,") && !Catch::Contains("\n65536,"));
  const Result traffic = incsim("--config " + d.write("t.yaml", "traffic: uniform\nplatform: star\nload: 0.2\n") +
                                " --quiet --csv -");
  INFO(traffic.err);
  REQUIRE(traffic.code == 0);
  CHECK(lines(traffic.out).size() == 2);
  CHECK_THAT(traffic.out, Catch::StartsWith("offered,"));
}

TEST_CASE("version: --version and the JSON name the version and the git commit", "[cli][json]") {
  const Result v = incsim("--version");
  REQUIRE(v.code == 0);
  CHECK_THAT(v.out, Catch::StartsWith("incsim 0.") && Catch::Contains("(commit "));
  const Result r = incsim(std::string(kQuickRun) + " --json -");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);  // nothing but the JSON on stdout
  CHECK(v.out.find(j["incsim"]["version"].get<std::string>()) != std::string::npos);
  CHECK(v.out.find(j["incsim"]["commit"].get<std::string>()) != std::string::npos);
}

TEST_CASE("the CSV has the JSON's rows, and the JSON says which columns are settings and which measurements", "[cli][json]") {
  for (const std::string& run : {std::string(kQuickRun), std::string("--platform rack --hosts 2 --sizes 8K,64K --quiet"),
                                std::string("--traffic uniform --platform star --load 0.1,0.2 --quiet")}) {
    INFO(run);
    TempDir d;
    const Result r = incsim(run + " --json " + d.file("r.json") + " --csv " + d.file("r.csv"));
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
    const auto csv = lines(slurp(d.file("r.csv")));
    REQUIRE(csv.size() == j["rows"].size() + 1);
    std::string heading;
    for (const auto& c : j["columns"]) {
      heading += (heading.empty() ? "" : ",") + c["name"].get<std::string>();
      CHECK((c["kind"] == "setting" || c["kind"] == "measurement"));
      CHECK(j["rows"][0].contains(c["name"].get<std::string>()));
    }
    CHECK(csv[0].rfind(heading, 0) == 0);  // then the details' values (reduction_tables.hits, ...)
    const std::string first = j["columns"][0]["name"];
    CHECK(j["columns"][0]["kind"] == "setting");
    CHECK(csv[1].rfind(j["rows"][0][first].dump(), 0) == 0);
  }
}

TEST_CASE("logging: a block's events with the simulated time, per block, nothing when off", "[cli][log]") {
  const std::string push = "--platform star --gpus 3 --algorithm push --sizes 1K --quiet -c gpu.copy_engine.waves=0";
  const Result off = incsim(push);
  REQUIRE(off.code == 0);
  CHECK(off.err.empty());
  const Result all = incsim(push + " --log debug");
  REQUIRE(all.code == 0);
  CHECK(all.out == off.out);  // logging changes nothing it watches
  CHECK_THAT(all.err, Catch::Contains("] sw0.port0.reduction_table: debug: miss 0x") &&
                          Catch::Contains(": allocate, 1 of 3 contributions") && Catch::Contains("evict 0x") &&
                          Catch::Contains("complete 0x") && Catch::Contains("sw0: debug: multicast"));
  const Result one = incsim(push + " --log sw0.port1=debug");
  REQUIRE(one.code == 0);
  for (const auto& l : lines(one.err)) CHECK_THAT(l, Catch::Contains("] sw0.port1.reduction_table: debug: "));
  CHECK_FALSE(one.err.empty());
  const Result none = incsim(push + " --log debug,sw0=off");
  CHECK_FALSE(none.err.empty());  // the GPUs and copy engines
  for (const auto& l : lines(none.err)) CHECK_THAT(l, !Catch::Contains("] sw0"));
  const Result rack = incsim("--platform rack --hosts 2 --sizes 4K --quiet -c link.loss=0.05 --log fpga.clt=debug,host1=debug");
  REQUIRE(rack.code == 0);
  CHECK_THAT(rack.err, Catch::Contains("fpga.clt: debug: fill ") && Catch::Contains("fpga.clt: debug: lookup ") &&
                           Catch::Contains("host1: debug: go back: retransmit PSN"));
  const Result nic = incsim("--platform torus --dims 2x2 --algorithm multitree --sizes 1K --quiet --log n0.nic=debug");
  REQUIRE(nic.code == 0);
  CHECK_THAT(nic.err, Catch::Contains("[0.000000 us] n0.nic: debug: issue entry 0: Reduce flow"));
}

TEST_CASE("per-instance parameters: a switch's or a port's own key overrides the type's, the most specific winning",
          "[cli][params]") {
  const std::string push = "--platform star --gpus 3 --algorithm push --sizes 4K --quiet -c gpu.copy_engine.waves=0 ";
  const std::string log = " --log sw0.port1.reduction_table=debug";
  const Result base = incsim(push + log);
  REQUIRE(base.code == 0);
  CHECK_THAT(base.err, Catch::Contains("of 2 entries used") && !Catch::Contains("of 1 entries used"));
  // The switch's own key sets all its ports; port 1's own key wins over it.
  const Result inst = incsim(push + "-c sw0.reduction_table.bytes=512 -c sw0.port1.reduction_table.bytes=128" + log);
  INFO(inst.err);
  REQUIRE(inst.code == 0);
  CHECK_THAT(inst.err, Catch::Contains("of 1 entries used") && !Catch::Contains("of 2 entries used"));
  const Result other = incsim(push + "-c sw0.reduction_table.bytes=512 --log sw0.port0.reduction_table=debug");
  CHECK_THAT(other.err, Catch::Contains("of 4 entries used"));
  const Result params = incsim(push + "-c sw0.port1.reduction_table.bytes=128 --list-params");
  REQUIRE(params.code == 0);
  CHECK_THAT(params.out, Catch::Contains("sw0.port1.reduction_table.bytes\tint\t128\t256\t-c\t"));
  require_error(push + "-c sw0.port1.reduction_table.bytes=100", {"sw0.port1.reduction_table.bytes", "100 is too small"});
  require_error(push + "-c sw9.reduction_table.bytes=512", {"unknown key 'sw9.reduction_table.bytes'"});
  require_error(push + "-c sw0.latency_ns=-5", {"sw0.latency_ns = -5 is outside its range (0 to 1e9 ns)"});
}

// Every built-in platform, and the shipped example file, runs each collective
// with every algorithm it offers on its defaults: none exits 2 for a conflict
// between defaults (Klenk §IV-F1's waves on a star and 256 B packets on
// MultiTree's fat tree were two). Exit 1 would be a wrong element.
namespace {
using Offers = std::vector<std::pair<std::string, std::string>>;  // collective, its algorithms
void require_defaults_run(const std::string& platform, const Offers& offers) {
  for (const auto& [collective, algorithms] : offers) {
    for (size_t at = 0; at <= algorithms.size();) {
      const size_t end = std::min(algorithms.find(',', at), algorithms.size());
      const std::string args = "--platform " + platform + " --collective " + collective + " --algorithm " +
                               algorithms.substr(at, end - at) + " --sizes 8K --quiet";
      INFO(args);
      const Result r = incsim(args);
      INFO(r.err);
      CHECK(r.code == 0);
      at = end + 1;
    }
  }
}
const Offers kSwitchFabric = {{"allreduce", "ring,push,pull,dbtree,hd,multitree,multitree-msg,blink"},
                              {"reducescatter", "ring"},
                              {"allgather", "ring,multicast"},
                              {"broadcast", "multicast,blink,ring"}};
Offers direct(const std::string& allreduce) {
  return {{"allreduce", allreduce}, {"reducescatter", "ring"}, {"allgather", "ring"}, {"broadcast", "blink,ring"}};
}
const Offers kDgx1 = {{"allreduce", "ring,blink"}, {"reducescatter", "ring"}, {"allgather", "ring"},
                      {"broadcast", "ring,blink"}};
const Offers kNetReduce = {{"allreduce", "ring,netreduce"}};
const Offers kMultiGpu = {{"allreduce", "pnetreduce,flatring,tencent"}};
}  // namespace

// Issue 23: a map under a run option's name is parameters, as README says
// nested and dotted keys are; a parameter given a list says it holds one value.
TEST_CASE("config file: a map under an option's name is nested parameters", "[cli][config]") {
  TempDir d;
  const Result nested = incsim("--list-params --config " + d.write("n.yaml", "ring: {channels: 6}\n"));
  const Result dotted = incsim("--list-params -c ring.channels=6");
  INFO(nested.err);
  REQUIRE(nested.code == 0);
  REQUIRE(dotted.code == 0);
  auto value = [](const std::string& listing) {
    for (const auto& l : lines(listing))
      if (l.rfind("ring.channels\t", 0) == 0) return l.substr(0, l.find('\t', l.find('\t', 14) + 1));
    return std::string();
  };
  CHECK(value(nested.out) == "ring.channels\tint\t6");
  CHECK(value(nested.out) == value(dotted.out));
  require_error("--config " + d.write("l.yaml", "ring:\n  channels: [1, 2]\n"),
                {"l.yaml: parameter 'ring.channels' holds one value, not a list"});
  require_error("--config " + d.write("d.yaml", "ring.channels: [1, 2]\n"),
                {"d.yaml: parameter 'ring.channels' holds one value, not a list"});
  require_error("--config " + d.write("o.yaml", "sizes: [8K, 1M]\n"),
                {"o.yaml: option 'sizes' takes one value, as on the command line, not a list"});
}

// Issue 23: an include is read from the including file's folder; a missing
// one is bad input (exit 2) named with the file that includes it.
TEST_CASE("config file: an include or a platform file is read relative to the including file", "[cli][config]") {
  TempDir d;
  fs::create_directory(d.path / "sub");
  d.write("sub/other.yaml", "sizes: 8K\nquiet: true\n");
  const std::string top = d.write("sub/top.yaml", "platform: star\ngpus: 2\nconfig: other.yaml\n");
  const Result r = sh("cd / && SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 '" INCSIM_BINARY "' --config " + top);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(lines(r.out).back().find("8192") != std::string::npos);
  const std::string missing = d.write("sub/missing.yaml", "config: nowhere.yaml\n");
  require_error("--config " + missing, {"config file '" + d.file("sub/nowhere.yaml") + "' does not exist (included by " +
                                        missing + ")"});
  CHECK(incsim("--config " + missing).code == 2);
  // So is a platform file.
  fs::copy_file(PLATFORM_EXAMPLES "/dual-switch.yaml", d.path / "sub/machine.yaml");
  const std::string own = d.write("sub/own.yaml", "platform: machine.yaml\nsizes: 8K\nquiet: true\n");
  const Result m = sh("cd / && SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 '" INCSIM_BINARY "' --config " + own);
  INFO(m.err);
  REQUIRE(m.code == 0);
  CHECK_THAT(m.out, Catch::Contains("platform dual-switch"));
}

// Issue 23: CSV cells are the JSON's values (shortest round trip, not 17
// digits), with the reduction tables' counts; parameters keep their types.
TEST_CASE("the CSV carries the JSON's numbers as written there, and parameters are typed", "[cli][json]") {
  TempDir d;
  const Result r = incsim("--platform star --gpus 4 --algorithm pull --sizes 1K,8K --quiet -c gpu.copy_engine.waves=0 "
                          "-c pull.barrier=true --json " + d.file("r.json") + " --csv " + d.file("r.csv"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(d.file("r.json")));
  const auto csv = lines(slurp(d.file("r.csv")));
  REQUIRE(csv.size() == 3);
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::istringstream is(line);
    for (std::string c; std::getline(is, c, ',');) cells.push_back(c);
    return cells;
  };
  const auto heading = split(csv[0]);
  for (size_t i = 0; i < 2; ++i) {
    const auto cells = split(csv[i + 1]);
    REQUIRE(cells.size() == heading.size());
    for (size_t c = 0; c < heading.size(); ++c) {
      INFO(heading[c] << " = " << cells[c]);
      const auto dot = heading[c].find('.');
      const nlohmann::json& v = dot == std::string::npos ? j["rows"][i][heading[c]]
                                                         : j["rows"][i][heading[c].substr(0, dot)][heading[c].substr(dot + 1)];
      REQUIRE_FALSE(v.is_null());
      std::string text = v.is_string() ? v.get<std::string>() : v.dump();
      if (v.is_number_float() && text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
      CHECK(cells[c] == text);
    }
  }
  CHECK(std::find(heading.begin(), heading.end(), "reduction_tables.hits") != heading.end());
  const auto& params = j["config"]["params"];
  CHECK(params["gpu.copy_engine.waves"] == 0);
  CHECK(params["gpu.clock_ghz"].is_number_float());
  CHECK(params["pull.barrier"] == true);
  CHECK(params["fabric.home_ports"] == "interleave");
}

// Issue 23: counts read as words: one switch, whole packets, and on
// multigpu what a host's throughput counts.
TEST_CASE("the table's notes: singular for one, whole numbers, what a host is", "[cli]") {
  const Result star = incsim("--platform star --gpus 2 --algorithm pull --sizes 64M --quiet");
  REQUIRE(star.code == 0);
  CHECK_THAT(star.out, Catch::Contains("platform star (1 switch, 2 links)"));
  CHECK_THAT(star.out, Catch::Contains("d_max 1 switch, ") && Catch::Contains("packets: 1572866 delivered"));
  const Result multigpu = incsim("--platform multigpu --machines 2 --gpus-per-machine 2 --sizes 64K --quiet");
  REQUIRE(multigpu.code == 0);
  CHECK_THAT(multigpu.out, Catch::Contains(" Gbps per GPU (frames it sends into its machine, toward a GPU or the NIC)"));
  CHECK_THAT(incsim("--help").out, Catch::Contains("at most 8192 nodes"));
  CHECK(incsim("--platform bigraph --dims 2x4 --list-params").code == 0);
}

#define DEFAULTS_RUN(name, platform, offers) \
  TEST_CASE("defaults run: every algorithm " name " offers", "[cli][defaults]") { require_defaults_run(platform, offers); }
DEFAULTS_RUN("dgx2", "dgx2", kSwitchFabric)
DEFAULTS_RUN("fattree2l", "fattree2l --gpus 32", kSwitchFabric)  // all 128: the ring alone takes 14 s
DEFAULTS_RUN("star", "star", kSwitchFabric)
DEFAULTS_RUN("fattree", "fattree", kSwitchFabric)
DEFAULTS_RUN("dual-switch.yaml", PLATFORM_EXAMPLES "/dual-switch.yaml", kSwitchFabric)
DEFAULTS_RUN("torus", "torus", direct("ring,dbtree,hd,ring2d,multitree,multitree-msg,blink"))
DEFAULTS_RUN("mesh", "mesh", direct("ring,dbtree,hd,ring2d,multitree,multitree-msg,blink"))
DEFAULTS_RUN("bigraph", "bigraph", direct("ring,dbtree,hd,hdrm,multitree,multitree-msg,blink"))
DEFAULTS_RUN("hgx-h100", "hgx-h100", kSwitchFabric)
DEFAULTS_RUN("nvl72", "nvl72", kSwitchFabric)  // all 72: 13 s, 6 of them the ring
DEFAULTS_RUN("dgx1v", "dgx1v", kDgx1)
DEFAULTS_RUN("dgx1p", "dgx1p", kDgx1)
DEFAULTS_RUN("rack", "rack", kNetReduce)
DEFAULTS_RUN("spineleaf", "spineleaf", kNetReduce)
DEFAULTS_RUN("multigpu", "multigpu", kMultiGpu)
