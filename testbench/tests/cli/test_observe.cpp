// Seeing what a run does, through the real incsim binary: --log lines from
// the GPUs and copy engines, the progress line (rewritten in place on a
// terminal, one line per report elsewhere, nothing with --quiet), and the
// GTKWave save file written beside every VCD.
#include <catch2/catch.hpp>

#include "cli_run.h"

#include <nlohmann/json.hpp>

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace cli;

namespace {

// Runs incsim with stdout and stderr on a pseudo-terminal; returns all it wrote.
std::string on_terminal(const std::vector<std::string>& args) {
  int fd = -1;
  const pid_t pid = forkpty(&fd, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    std::vector<char*> argv{const_cast<char*>(INCSIM_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(INCSIM_BINARY, argv.data());
    _exit(127);
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  int st = 0;
  waitpid(pid, &st, 0);
  INFO(out);
  REQUIRE(WIFEXITED(st));
  REQUIRE(WEXITSTATUS(st) == 0);
  return out;
}

// A ring all-reduce of 1M on DGX-2 judged every simulated microsecond and
// reported at every judgement, so even this short run shows progress.
const char* kProgressRun = "--platform dgx2 --sizes 1M,1M -c sim.stall_timeout_us=1 -c sim.progress_s=0";

std::vector<std::string> words(const std::string& s) {
  std::istringstream is(s);
  std::vector<std::string> w;
  for (std::string x; is >> x;) w.push_back(x);
  return w;
}

// The VCD's variables by GTKWave's names (scopes dot-joined, then the name and its range).
std::set<std::string> vcd_names(const std::string& vcd) {
  std::set<std::string> names;
  std::vector<std::string> scope;
  const auto w = words(vcd.substr(0, vcd.find("$enddefinitions")));
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == "$scope") scope.push_back(w[i + 2]);
    if (w[i] == "$upscope") scope.pop_back();
    if (w[i] != "$var") continue;
    std::string name;
    for (const auto& s : scope) name += s + ".";
    name += w[i + 4];
    if (w[i + 5] != "$end") name += w[i + 5];
    names.insert(name);
  }
  return names;
}

}  // namespace

TEST_CASE("log at debug shows a ring's steps and at trace each packet", "[observe][log]") {
  const Result d = incsim("--platform dgx2 --sizes 8K --log debug,gpu1=off --quiet");
  REQUIRE(d.code == 0);
  CHECK_THAT(d.err, Catch::Contains("gpu0: debug: cores queue 0: pass 0 operation 0 (s) sends"));
  CHECK_THAT(d.err, Catch::Contains("gpu0: debug: cores queue 0: receives transfer 0 from rank 15"));
  CHECK_THAT(d.err, Catch::Contains("acknowledged, flag to rank 1"));
  CHECK_THAT(d.err, !Catch::Contains("gpu1:"));
  CHECK_THAT(d.err, !Catch::Contains("sends write"));  // per packet: trace only
  const Result t = incsim("--platform dgx2 --sizes 8K --log gpu0=trace --quiet");
  REQUIRE(t.code == 0);
  CHECK_THAT(t.err, Catch::Contains("gpu0: trace: port 0 sends write"));
  CHECK_THAT(t.err, Catch::Contains("gpu0: trace: port 0 receives write-ack"));
}

TEST_CASE("log at debug shows the copy engine's descriptor and waves", "[observe][log]") {
  const Result r = incsim("--platform dgx2 --algorithm push --sizes 64K --log gpu3.copy_engine=debug --quiet");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.err, Catch::Contains("gpu3.copy_engine: debug: descriptor: reduce-write blocks [0, 512) of 65536 B"));
  CHECK_THAT(r.err, Catch::Contains("gpu3.copy_engine: debug: wave 0 issued"));
  CHECK_THAT(r.err, Catch::Contains("gpu3.copy_engine: debug: wave 0 completed"));
  CHECK_THAT(r.err, !Catch::Contains("gpu2"));
}

TEST_CASE("on a terminal the progress line is rewritten in place and cleared before each row", "[observe][progress]") {
  std::vector<std::string> args = words(kProgressRun);
  const std::string out = on_terminal(args);
  // Each report: carriage return, the line, clear to the end of the line.
  const std::regex report("\r(incsim: size 1M \\((\\d) of 2\\): (\\d+)%, simulated [0-9.]+ (us|ms) at [0-9.]+ (us|ms|s)/s"
                          "(, ETA \\d+s)?)\x1b\\[K");
  int reports = 0, with_eta = 0;
  for (std::sregex_iterator it(out.begin(), out.end(), report), end; it != end; ++it) {
    ++reports;
    with_eta += (*it)[6].matched;
    CHECK(std::stoi((*it)[3]) <= 100);
  }
  CHECK(reports >= 4);
  CHECK(with_eta >= 2);
  CHECK(out.find('\n', out.find("\rincsim: ")) > out.find("\x1b[K"));  // no report ends a line
  // Every row starts on a clean line: the report before it was erased.
  for (const auto& l : lines(out)) {
    if (l.find("1048576") == std::string::npos) continue;
    const size_t row = l.find("   1048576");
    REQUIRE(row != std::string::npos);
    CHECK(l.rfind("\r\x1b[K", row) != std::string::npos);
    CHECK(l.find("incsim:", l.rfind("\r\x1b[K", row)) == std::string::npos);
  }
}

TEST_CASE("off a terminal each report is a line with the point's own simulated time", "[observe][progress]") {
  const Result r = incsim(kProgressRun);
  REQUIRE(r.code == 0);
  CHECK(r.err.find('\r') == std::string::npos);
  CHECK(r.err.find('\x1b') == std::string::npos);
  // The second point's time, from its row: its reports never exceed it (a
  // cumulative time would be twice as large).
  const auto rows = lines(r.out);
  const auto last = words(rows.back());
  REQUIRE(last.size() > 4);
  const double second_us = std::stod(last[4]);
  const std::regex report(R"(^incsim: size 1M \((\d) of 2\): \d+%, simulated ([0-9.e+-]+) us at .*)");
  int seconds = 0;
  for (const auto& l : lines(r.err)) {
    std::smatch m;
    REQUIRE(std::regex_match(l, m, report));
    if (m[1] == "2") {
      ++seconds;
      CHECK(std::stod(m[2]) <= second_us);
    }
  }
  CHECK(seconds >= 2);
  const Result q = incsim(std::string(kProgressRun) + " --quiet");
  CHECK(q.err.empty());
}

// A script's run (quiet, off a terminal) that would take a day stops with
// one sentence naming the fidelity that would not, rather than running on
// unseen; sim.long_run lets it go on.
TEST_CASE("a quiet run off a terminal whose estimate passes an hour stops and names --fidelity flow",
          "[observe][progress][bad-input]") {
  const std::string run = "--platform hgx-h100 --sizes 1T --quiet -c sim.progress_s=0.5";
  const Result r = incsim(run);
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Matches("incsim: error: at this pace the run needs \\d+h\\d+m more, over an hour: "
                                   "--fidelity flow runs collectives as flows, .* \\(-c sim.long_run=true runs it "
                                   "anyway\\)\n"));
}

// The refusal weighs the running point alone: the later sizes scaled by
// bytes from the 4-byte point's latency-bound pace once made this run of
// seconds "need 5h49m more".
TEST_CASE("a quiet run of a small size, then larger ones, is not refused as over an hour", "[observe][progress]") {
  const Result r = incsim("--platform fattree2l --gpus 64 --sizes 4,8192,12292,96K --quiet -c sim.progress_s=0.1");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.err.empty());
}

TEST_CASE("a VCD comes with a GTKWave save file that names the VCD's signals, grouped per block, in decimal",
          "[observe][vcd]") {
  TempDir d;
  auto run = [&](const std::string& tag) {
    const Result r = incsim("--platform dgx2 --algorithm push --sizes 64K --quiet --vcd " + d.file(tag + ".vcd"));
    INFO(r.err);
    REQUIRE(r.code == 0);
  };
  run("a");
  run("b");
  const std::string vcd = slurp(d.file("a.vcd")), gtkw = slurp(d.file("a.gtkw"));
  CHECK(vcd == slurp(d.file("b.vcd")));  // deterministic, the entry counts included
  CHECK_THAT(vcd, Catch::Contains("entry0_count"));
  REQUIRE_FALSE(gtkw.empty());
  // The save file names its own files, as given: GTKWave finds the VCD
  // beside the save file wherever the two are opened from.
  CHECK_THAT(gtkw, Catch::StartsWith("[*] GTKWave save file that incsim wrote beside the VCD below: gtkwave a.gtkw "
                                     "(or gtkwave a.vcd a.gtkw)."));
  CHECK_THAT(gtkw, Catch::Contains("\n[dumpfile] \"a.vcd\"\n[savefile] \"a.gtkw\"\n"));
  const std::set<std::string> names = vcd_names(vcd);
  std::vector<std::string> groups;  // open groups, innermost last
  std::map<std::string, std::string> flags_of;
  std::set<std::string> closed;
  std::string flags;
  for (const auto& l : lines(gtkw)) {
    if (l[0] == '[' || l[0] == '*') continue;
    if (l[0] == '@') {
      flags = l.substr(1);
      continue;
    }
    const unsigned long f = std::stoul(flags, nullptr, 16);
    if (l[0] == '-') {
      if (l == "-") continue;  // an analog trace's extra height
      if (f & 0x800000) groups.push_back(l.substr(1));
      if (f & 0x400000) closed.insert(l.substr(1));
      if (f & 0x1000000) {
        REQUIRE_FALSE(groups.empty());
        CHECK(groups.back() == l.substr(1));
        groups.pop_back();
      }
      continue;
    }
    INFO(l);
    CHECK(names.count(l) == 1);  // the VCD's own name
    CHECK((f & 0x4) != 0);       // decimal
    CHECK((f & 0x2) == 0);       // not hex
    REQUIRE_FALSE(groups.empty());
    // In the group of its block (and part).
    CHECK(l.rfind("SystemC." + groups.back() + ".", 0) == 0);
    flags_of[l] = flags;
  }
  CHECK(groups.empty());
  CHECK(flags_of.at("SystemC.sw0.port0.reduction_table.occupancy[31:0]") == "8424");  // analog step, signed decimal
  CHECK(flags_of.at("SystemC.sw0.port0.reduction_table.hits[31:0]") == "424");
  CHECK(flags_of.count("SystemC.sw0.port0.reduction_table.entry0_count[15:0]") == 1);
  CHECK(flags_of.count("SystemC.gpu0.copy_engine.waves_outstanding[31:0]") == 1);
  CHECK(flags_of.count("SystemC.gpu0.copy_engine.credits[31:0]") == 1);
  CHECK(flags_of.count("SystemC.gpu0.cores.step[31:0]") == 0);  // a push leaves the cores idle: signal tree only
  CHECK(names.count("SystemC.gpu0.cores.step[31:0]") == 1);
  CHECK(flags_of.count("SystemC.gpu0.port0.credits_vc0[31:0]") == 0);  // link counters: signal tree only
  // The first two switches and GPUs open, the rest closed.
  CHECK(closed.count("sw0") == 0);
  CHECK(closed.count("sw1") == 0);
  CHECK(closed.count("sw2") == 1);
  CHECK(closed.count("gpu2") == 1);
  // Eight blocks of a kind at most: the others are in the signal tree only.
  CHECK(closed.count("gpu7") == 1);
  CHECK(flags_of.count("SystemC.gpu8.copy_engine.waves_outstanding[31:0]") == 0);
}

// The links scope: each link's busy share of its wire per interval, merged
// into the VCD from a trace hook, so the run is the run without a VCD.
TEST_CASE("the waveform shows each link's traffic, and adds up to the bytes it carried", "[observe][vcd]") {
  TempDir d;
  const std::string run = "--platform star --gpus 4 --sizes 1M --quiet --json " + d.file("r.json");
  const Result r = incsim(run + " --vcd " + d.file("w.vcd") + " -c vcd.link_interval_ns=500");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto row = nlohmann::json::parse(slurp(d.file("r.json")))["rows"][0];
  REQUIRE(incsim(run).code == 0);
  CHECK(nlohmann::json::parse(slurp(d.file("r.json")))["rows"][0] == row);  // watching moves nothing
  const std::string vcd = slurp(d.file("w.vcd"));
  CHECK(vcd_names(vcd).count("SystemC.links.gpu0_0_to_sw0_0") == 1);
  const std::string gtkw = slurp(d.file("w.gtkw"));
  CHECK_THAT(gtkw, Catch::Contains("-links\n@8424\nSystemC.links.gpu0_0_to_sw0_0\n"));  // first, analog
  // Its value changes, percent from each interval's start: their integral
  // is the link's bytes over its rate, its utilisation times the run.
  const size_t at = vcd.find(" gpu0_0_to_sw0_0 ");
  const std::string id = words(vcd.substr(vcd.rfind('\n', at) + 1, at - vcd.rfind('\n', at))).back();  // $var real 64 ID
  double t = 0, since = 0, pct = 0, area_us = 0, peak = 0;
  for (const auto& l : lines(vcd.substr(vcd.find("$enddefinitions")))) {
    if (l[0] == '#') t = std::stod(l.substr(1)) / 1e6;
    if (l[0] != 'r' || l.substr(l.find(' ') + 1) != id) continue;
    area_us += pct / 100 * (t - since);
    pct = std::stod(l.substr(1));
    since = t;
    peak = std::max(peak, pct);
  }
  CHECK(pct == 0);  // idle once the collective is over
  CHECK(peak > 50);
  CHECK(peak <= 100);
  double util = -1;
  for (const auto& link : row["links"])
    if (link["from"] == "gpu0.0") util = link["utilisation"].get<double>();
  CHECK(area_us == Approx(util * row["time_us"].get<double>()).epsilon(0.01));
}

TEST_CASE("GTKWave opens the save file from any folder and finds the VCD beside it", "[observe][vcd]") {
  if (access("/usr/bin/gtkwave", X_OK) != 0 || access("/usr/bin/xvfb-run", X_OK) != 0) {
    // Catch2 2.13 has no SKIP: warn and stop here (the test passes).
    WARN("gtkwave or xvfb-run is not installed (Debian packages gtkwave, xvfb): GTKWave itself was not run");
    return;
  }
  TempDir d;
  std::filesystem::create_directories(d.file("waves"));
  const Result r = sh("cd '" + d.file("waves") + "' && SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 '" INCSIM_BINARY
                      "' --platform star --gpus 4 --sizes 8K --vcd w.vcd");
  INFO(r.err);
  REQUIRE(r.code == 0);
  // Not --quiet: it says where it wrote both files and how large the VCD is.
  CHECK_THAT(r.err, Catch::Matches("incsim: wrote the waveform w\\.vcd \\([0-9.]+ MB\\) and its GTKWave save file: "
                                   "gtkwave w\\.gtkw\n"));
  std::ofstream(d.file("ask.tcl")) << "puts \"DUMP [gtkwave::getDumpFileName]\"\ngtkwave::/File/Quit\n";
  // From the folder above, and after both moved elsewhere.
  const auto dump = [&](const std::string& dir, const std::string& save) {
    const Result g = sh("cd '" + dir + "' && timeout 60 xvfb-run -a gtkwave -S '" + d.file("ask.tcl") + "' " + save);
    const size_t at = g.out.find("DUMP ");
    return at == std::string::npos ? "(none: " + g.out + g.err + ")" : g.out.substr(at + 5, g.out.find('\n', at) - at - 5);
  };
  CHECK(dump(d.path.string(), "waves/w.gtkw") == std::filesystem::canonical(d.file("waves/w.vcd")).string());
  std::filesystem::create_directories(d.file("moved/deeper"));
  std::filesystem::rename(d.file("waves/w.vcd"), d.file("moved/deeper/w.vcd"));
  std::filesystem::rename(d.file("waves/w.gtkw"), d.file("moved/deeper/w.gtkw"));
  CHECK(dump(d.file("moved"), "deeper/w.gtkw") == std::filesystem::canonical(d.file("moved/deeper/w.vcd")).string());
}

namespace {
// A --timeline document: its processes by name, and the run's rows (--json).
struct TimelineRun {
  nlohmann::json events, rows;
  std::map<int, std::string> process;
};

TimelineRun timeline_of(const std::string& args, TempDir& d, const std::string& tag) {
  const Result r = incsim(args + " --quiet --timeline " + d.file(tag + ".json") + " --json " + d.file(tag + "-rows.json"));
  INFO(r.err);
  REQUIRE(r.code == 0);
  TimelineRun t;
  t.events = nlohmann::json::parse(slurp(d.file(tag + ".json")))["traceEvents"];
  t.rows = nlohmann::json::parse(slurp(d.file(tag + "-rows.json")))["rows"];
  for (const auto& e : t.events)
    if (e["ph"] == "M" && e["name"] == "process_name") t.process[e["pid"].get<int>()] = e["args"]["name"];
  return t;
}
}  // namespace

TEST_CASE("any run's timeline: each GPU's steps cover its collective, the links' counters add up to their bytes",
          "[observe][timeline]") {
  TempDir d;
  const TimelineRun t = timeline_of("--platform dgx2 --algorithm ring --sizes 256K", d, "ring");
  REQUIRE(t.rows.size() == 1);
  const double time_us = t.rows[0]["time_us"];
  // Per GPU, the cores' steps: from 0, one after another, the last ending
  // when the GPU finishes; the slowest ends with the collective.
  std::map<std::string, std::vector<std::pair<double, double>>> steps;
  for (const auto& e : t.events)
    if (e["ph"] == "X" && e["name"].get<std::string>().rfind("step ", 0) == 0)
      steps[t.process.at(e["pid"].get<int>())].push_back({e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
  REQUIRE(steps.size() == 16);
  double last = 0;
  for (auto& [gpu, spans] : steps) {
    INFO(gpu);
    CHECK(spans.size() == 30);  // the ring's 2(n - 1) steps
    CHECK(spans.front().first == 0);
    for (size_t k = 1; k < spans.size(); ++k) CHECK(spans[k].first == Approx(spans[k - 1].second).margin(1e-6));
    last = std::max(last, spans.back().second);
  }
  CHECK(last == Approx(time_us).margin(1e-6));
  // Each link's counter, integrated, is the bytes the row says it carried.
  std::map<std::string, double> bytes;
  std::map<std::string, std::pair<double, double>> at;  // the last point: time, GB/s
  for (const auto& e : t.events)
    if (e["ph"] == "C") {
      const std::string name = t.process.at(e["pid"].get<int>()) + "." + e["name"].get<std::string>();
      const double ts = e["ts"], v = e["args"]["value"];
      if (at.count(name)) bytes[name] += (ts - at[name].first) * 1e3 * at[name].second;
      at[name] = {ts, v};
    }
  size_t links = 0;
  for (const auto& l : t.rows[0]["links"]) {
    const std::string from = l["from"], to = l["to"];
    const std::string name = from.substr(0, from.find('.')) + ".port" + from.substr(from.find('.') + 1) + " to " + to + " (GB/s)";
    INFO(name);
    CHECK(bytes[name] == Approx(l["bytes"].get<double>()).epsilon(1e-6));
    links += l["bytes"].get<double>() > 0;
  }
  size_t counters = 0;  // a counter for each link that carried bytes, and none for an idle one
  for (const auto& [name, point] : at) counters += name.find(" (GB/s)") != std::string::npos;
  CHECK(counters == links);
  CHECK(links > 0);
}

TEST_CASE("push's and NVLS's timelines show their operations: the copy engines' descriptors and waves, the cores' "
          "NVLS steps", "[observe][timeline]") {
  TempDir d;
  // Spans named "<state> <value>" per GPU process.
  const auto spans = [](const TimelineRun& t, const std::string& state) {
    std::map<std::string, int> per_gpu;
    for (const auto& e : t.events)
      if (e["ph"] == "X" && e["name"].get<std::string>().rfind(state + " ", 0) == 0)
        ++per_gpu[t.process.at(e["pid"].get<int>())];
    return per_gpu;
  };
  // Push on DGX-2 at 64 KiB: each GPU's engine writes 512 blocks of 128 B
  // in one descriptor, in waves of 8 KiB (64 blocks): 8 waves.
  const TimelineRun push = timeline_of("--platform dgx2 --algorithm push --sizes 64K", d, "push");
  const auto descriptors = spans(push, "descriptor"), waves = spans(push, "wave");
  REQUIRE(descriptors.size() == 16);
  REQUIRE(waves.size() == 16);
  for (const auto& [gpu, n] : waves) {
    INFO(gpu);
    CHECK(descriptors.at(gpu) == 1);
    CHECK(n == 8);
  }
  // NVLS on HGX H100: the cores' in-network operations are steps too.
  const TimelineRun nvls = timeline_of("--platform hgx-h100 --algorithm nvls --sizes 1M", d, "nvls");
  CHECK(spans(nvls, "step").size() == 8);
}

TEST_CASE("a push's timeline has each reduction table's occupancy, and the same run gives the same bytes",
          "[observe][timeline]") {
  TempDir d;
  const TimelineRun t = timeline_of("--platform dgx2 --algorithm push --sizes 64K", d, "a");
  timeline_of("--platform dgx2 --algorithm push --sizes 64K", d, "b");
  CHECK(slurp(d.file("a.json")) == slurp(d.file("b.json")));
  double peak = 0;
  std::set<std::string> seen;
  for (const auto& e : t.events)
    if (e["ph"] == "C" && e["name"].get<std::string>().find("reduction_table.occupancy") != std::string::npos) {
      seen.insert(t.process.at(e["pid"].get<int>()) + e["name"].get<std::string>());
      peak = std::max(peak, e["args"]["value"].get<double>());
    }
  CHECK(seen.size() == 192);  // every port of the 12 switches has a table
  CHECK(peak > 0);
  CHECK(peak <= 2);  // a mean never exceeds the table's entries: 256 B of 128 B entries (Klenk Fig. 7)
}
