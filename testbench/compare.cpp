#include "compare.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <systemc>

#include "core/error.h"
#include "core/output_file.h"
#include "core/report.h"
#include "core/units.h"
#include "experiment.h"
#include "results.h"
#include "workload.h"

namespace incsim::tb {

namespace {

using json = nlohmann::ordered_json;

std::string joined(const std::vector<std::string>& items, const std::string& sep) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : sep) + i;
  return s;
}

// A file of one algorithm's run: its name before the extension (w.vcd:
// w-push.vcd; a program file's algorithm by the file's stem).
std::string suffixed(const std::string& path, const std::string& algorithm) {
  if (path.empty()) return path;
  const std::filesystem::path p(path);
  const std::string name = std::filesystem::path(algorithm).stem().string();
  return (p.parent_path() / (p.stem().string() + "-" + name + p.extension().string())).string();
}

// One algorithm's run: the options a run of it alone would have, its
// waveform and timeline in files of their own. The comparison writes the
// result files; the workload never sees --baseline.
Options alone(const Options& o, const std::string& algorithm, const std::string& name) {
  Options one = o;
  one.algorithm = algorithm;
  one.vcd = suffixed(o.vcd, name);
  one.timeline = suffixed(o.timeline, name);
  one.baseline.clear();
  one.given.erase(std::remove(one.given.begin(), one.given.end(), "baseline"), one.given.end());
  if (algorithm.empty()) one.given.erase(std::remove(one.given.begin(), one.given.end(), "algorithm"), one.given.end());
  one.json.clear();
  one.csv.clear();
  return one;
}

// A row's values exactly (a double by its bits: JSON would round an infinity to null).
json value_json(const Value& v) {
  if (const auto* u = std::get_if<uint64_t>(&v)) return {{"u", *u}};
  if (const auto* d = std::get_if<double>(&v)) {
    uint64_t bits = 0;
    std::memcpy(&bits, d, sizeof bits);
    return {{"d", bits}};
  }
  if (const auto* b = std::get_if<bool>(&v)) return {{"b", *b}};
  return {{"s", std::get<std::string>(v)}};
}

Value value_of(const json& j) {
  if (j.contains("u")) return j["u"].get<uint64_t>();
  if (j.contains("d")) {
    const uint64_t bits = j["d"].get<uint64_t>();
    double d = 0;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  if (j.contains("b")) return j["b"].get<bool>();
  return j["s"].get<std::string>();
}

struct Child {
  int status = 0;
  std::string reply;
  double wall_s = 0;
};

// Runs `work` in a child process and returns what it replied and its exit
// status; the child says its own error (prefixed by `who`) on `err`.
Child in_child(const std::function<json()>& work, const std::string& who, std::ostream& out, std::ostream& err) {
  int fds[2];
  if (pipe(fds) != 0) throw UserError(std::string("cannot open a pipe to a child process: ") + std::strerror(errno));
  out.flush();
  err.flush();
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw UserError(std::string("cannot start a process: ") + std::strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    int rc = 0;
    try {
      install_report_handler(false);
      const std::string text = work().dump();
      for (size_t at = 0; at < text.size();) {
        const ssize_t n = write(fds[1], text.data() + at, text.size() - at);
        if (n <= 0) break;  // the parent is gone
        at += static_cast<size_t>(n);
      }
    } catch (...) {
      rc = say_error(err, who);
    }
    err.flush();
    std::_Exit(rc);
  }
  close(fds[1]);
  Child c;
  char buf[1 << 16];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    c.reply.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  c.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (WIFEXITED(ws)) c.status = WEXITSTATUS(ws);
  else {
    err << "incsim: error: " << who << "the run ended on signal " << WTERMSIG(ws) << "\n";
    c.status = 3;
  }
  return c;
}

// A header or note line "# text" as "# ALGORITHM: text" (indentation
// kept); a run's first line says incsim once, in the comparison's.
std::string tagged(const std::string& line, const std::string& algorithm) {
  if (line.rfind("# incsim: ", 0) == 0) return "# " + algorithm + ": " + line.substr(10);
  const size_t at = line.find_first_not_of("# ");
  if (at == std::string::npos) return line;
  return line.substr(0, at) + algorithm + ": " + line.substr(at);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);) out.push_back(l);
  return out;
}

// One algorithm's run as the parent reads it back.
struct Run {
  std::string algorithm;
  std::vector<std::string> header;
  std::vector<Row> rows;
  std::vector<std::pair<size_t, std::string>> points;  // rows per point, notes
  json results;
  std::string wrong_message;
};

// The child's side of a run: its header, schema, rows by point, results JSON.
json run_reply(const Options& o, const Part& part) {
  Experiment e(o, part);
  std::ostringstream header;
  e.workload().print_header(header);
  std::vector<std::pair<size_t, std::string>> points;
  const std::vector<Row> rows = e.run(nullptr, &points);
  json r;
  r["header"] = header.str();
  json cols = json::array();
  for (const Column& c : e.workload().schema().columns())
    cols.push_back({c.name, c.unit, c.kind == ColumnKind::Setting, c.heading, c.unit_label, c.width, c.precision,
                    c.scale});
  r["columns"] = cols;
  json rs = json::array();
  uint64_t wrong = 0;
  for (const Row& row : rows) {
    json values = json::array();
    for (const Value& v : row.values) values.push_back(value_json(v));
    rs.push_back({{"values", values}, {"details", row.details}});
    wrong += row.wrong();
  }
  r["rows"] = rs;
  json ps = json::array();
  for (const auto& [n, notes] : points) ps.push_back({n, notes});
  r["points"] = ps;
  r["results"] = e.results_json(rows);
  r["wrong_message"] = wrong ? e.workload().wrong_message(wrong) : "";
  return r;
}

Run read_run(const std::string& algorithm, const std::string& text) {
  const json r = json::parse(text);
  Run run;
  run.algorithm = algorithm;
  run.header = lines_of(r["header"].get<std::string>());
  auto schema = std::make_shared<Schema>();
  for (const json& c : r["columns"])
    schema->add(Column(c[0], c[1], c[2].get<bool>() ? ColumnKind::Setting : ColumnKind::Measurement, c[3], c[4],
                       c[5], c[6], c[7]));
  for (const json& jr : r["rows"]) {
    Row row(schema);
    for (size_t i = 0; i < row.values.size(); ++i) row.values[i] = value_of(jr["values"][i]);
    row.details = jr["details"];
    run.rows.push_back(std::move(row));
  }
  for (const json& p : r["points"]) run.points.emplace_back(p[0].get<size_t>(), p[1].get<std::string>());
  run.results = r["results"];
  run.wrong_message = r["wrong_message"];
  return run;
}

// The comparison's schema: algorithm, an algorithm's columns, speedup.
std::shared_ptr<Schema> compared_schema(const Schema& one, const std::vector<Run>& runs) {
  size_t longest = 0;
  for (const Run& r : runs) longest = std::max(longest, r.algorithm.size());
  auto s = std::make_shared<Schema>();
  s->add({"algorithm", "", ColumnKind::Setting, "algorithm", "", static_cast<int>(std::max<size_t>(10, longest + 2))});
  for (const Column& c : one.columns()) s->add(c);
  s->add({"speedup", "", ColumnKind::Measurement, "speedup", "(x)", 8, 2});
  return s;
}

// Every run's rows of every point, a point's algorithms together, each row
// as the comparison's (its algorithm, its values, the speed-up) and as the
// JSON row of its own run with both added.
void combine(const std::vector<Run>& runs, size_t baseline, const std::shared_ptr<Schema>& schema,
             std::vector<Row>& rows, json& json_rows, std::vector<std::vector<std::string>>& notes) {
  const size_t points = runs[0].points.size();
  std::vector<size_t> first(runs.size(), 0);  // each run's first row of the point
  const std::string last = runs[0].rows.empty() ? "" : runs[0].rows[0].schema->columns().back().name;
  for (size_t i = 0; i < points; ++i) {
    notes.emplace_back();
    for (size_t a = 0; a < runs.size(); ++a) {
      const Run& run = runs[a];
      for (size_t k = 0; k < run.points[i].first; ++k) {
        const Row& mine = run.rows[first[a] + k];
        const Row& base = runs[baseline].rows[first[baseline] + std::min(k, runs[baseline].points[i].first - 1)];
        const double speedup = base["time_us"] / mine["time_us"];
        Row r(schema);
        r.values.front() = run.algorithm;
        std::copy(mine.values.begin(), mine.values.end(), r.values.begin() + 1);
        r.values.back() = speedup;
        r.details = mine.details;
        rows.push_back(std::move(r));
        json j = {{"algorithm", run.algorithm}};
        for (const auto& [key, v] : run.results["rows"][first[a] + k].items()) {
          j[key] = v;
          if (key == last) j["speedup"] = speedup;
        }
        json_rows.push_back(std::move(j));
      }
      for (const std::string& l : lines_of(run.points[i].second)) notes.back().push_back(tagged(l, run.algorithm));
    }
    for (size_t a = 0; a < runs.size(); ++a) first[a] += runs[a].points[i].first;
  }
}

// The --json document: the first run's, its config naming every algorithm
// and the baseline, the parameters every run read alike (each run's own
// under "runs", with what its run adds beside the rows), and every row.
json comparison_json(const std::vector<Run>& runs, const Comparison& c, const Schema& schema, const json& rows) {
  json j;
  j["incsim"] = runs[0].results["incsim"];
  json config = runs[0].results["config"];
  std::vector<std::string> names;
  for (const Run& r : runs) names.push_back(r.algorithm);
  config["algorithm"] = joined(names, ",");
  config["baseline"] = runs[c.baseline].algorithm;
  json common = json::object();
  for (const auto& [key, v] : config["params"].items()) {
    bool same = true;
    for (const Run& r : runs) same = same && r.results["config"]["params"].contains(key) &&
                                     r.results["config"]["params"][key] == v;
    if (same) common[key] = v;
  }
  config["params"] = common;
  j["config"] = config;
  json each = json::array();
  for (const Run& r : runs) {
    json one = {{"algorithm", r.algorithm}};
    for (const auto& [key, v] : r.results.items())
      if (key != "incsim" && key != "columns" && key != "rows") one[key] = v;
    each.push_back(one);
  }
  j["runs"] = each;
  j["columns"] = columns_json(schema);
  j["rows"] = rows;
  return j;
}

// --list-params of a comparison: every parameter some algorithm reads, by
// key, once where every algorithm that reads it has the same line, else once
// per algorithm (push's table, pull's); the algorithms that read it follow
// the description unless all do.
void list_params(const std::vector<std::vector<std::string>>& params, const std::vector<std::string>& names,
                 std::ostream& out) {
  std::map<std::string, std::vector<std::pair<size_t, std::string>>> by_key;
  for (size_t a = 0; a < params.size(); ++a)
    for (const std::string& l : params[a]) by_key[l.substr(0, l.find('\t'))].emplace_back(a, l);
  for (const auto& [key, lines] : by_key) {
    const bool same =
        std::all_of(lines.begin(), lines.end(), [&](const auto& l) { return l.second == lines[0].second; });
    std::vector<std::string> readers;
    for (const auto& l : lines) readers.push_back(names[l.first]);
    if (same && lines.size() == params.size()) out << lines[0].second << "\n";
    else if (same) out << lines[0].second << " (" << joined(readers, ", ") << ")\n";
    else
      for (const auto& [a, l] : lines) out << l << " (" << names[a] << ")\n";
  }
}

}  // namespace

Comparison comparison_of(const Options& o) {
  Comparison c;
  const std::string workload = workload_name(o);
  const bool list = o.algorithm.find(',') != std::string::npos;
  if (!list && (o.baseline.empty() || workload == "train")) return c;
  const std::string what = list ? "--algorithm " + o.algorithm : "--baseline " + o.baseline;
  if (workload != "collective" && workload != "netreduce")
    throw UserError(workload == "train" ? "--workload train compares its --algorithm with its --baseline, one each, "
                                          "not a list such as " + o.algorithm
                                        : what + " compares collectives, which --workload " + workload + " does not run");
  for (size_t at = 0; at <= o.algorithm.size() && (list || at == 0);) {
    const size_t end = std::min(o.algorithm.find(',', at), o.algorithm.size());
    const std::string name = o.algorithm.substr(at, end - at);
    if (list && name.empty())
      throw UserError("--algorithm " + o.algorithm +
                      " has an empty item; name algorithms joined by commas, such as ring,push");
    if (std::find(c.algorithms.begin(), c.algorithms.end(), name) != c.algorithms.end())
      throw UserError("--algorithm " + o.algorithm + " names " + name + " twice");
    c.algorithms.push_back(name);
    at = end + 1;
  }
  if (!o.baseline.empty()) {
    const auto it = std::find(c.algorithms.begin(), c.algorithms.end(), o.baseline);
    if (list && it == c.algorithms.end())
      throw UserError("--baseline " + o.baseline + " is not one of --algorithm " + o.algorithm +
                      "; add it to the list to compare with it");
    if (!list && it != c.algorithms.end())
      throw UserError("--baseline " + o.baseline + " is the --algorithm too; name another to compare with");
    c.baseline = it == c.algorithms.end() ? c.algorithms.size() : static_cast<size_t>(it - c.algorithms.begin());
    if (!list) c.algorithms.push_back(o.baseline);
  } else if (const auto nccl = std::find(c.algorithms.begin(), c.algorithms.end(), "nccl");
             nccl != c.algorithms.end()) {
    c.baseline = static_cast<size_t>(nccl - c.algorithms.begin());  // what NCCL itself would run
  }
  if (!o.jobs.empty())
    throw UserError("a jobs: list runs each job's own algorithm on one machine, not a comparison (" + what +
                    "); compare algorithms without jobs");
  // What shows one machine's run has no one machine here.
  const std::pair<bool, const char*> single[] = {{!o.dump_platform.empty(), "--dump-platform"},
                                                 {o.print_schedule, "--print-schedule"},
                                                 {o.print_trees, "--print-trees"},
                                                 {o.print_program, "--print-program"}};
  for (const auto& [given, name] : single)
    if (given)
      throw UserError(std::string(name) + " shows one algorithm's run, not a comparison (" + what +
                      "); give it a run of one --algorithm");
  return c;
}

int run_comparison(const Options& o, const Comparison& c, std::ostream& out, std::ostream& err) {
  if (!o.json.empty()) check_writable(o.json, "results file");
  if (!o.csv.empty()) check_writable(o.csv, "CSV file");
  const size_t n = c.algorithms.size();
  std::vector<std::string> names = c.algorithms;

  // First every algorithm's machine is built (and thrown away), so that bad
  // input for any of them is refused before anything is simulated, and a
  // parameter is refused only if no algorithm reads it.
  std::vector<std::vector<std::pair<std::string, std::string>>> unread(n);
  std::vector<std::vector<std::string>> params(n);  // --list-params: each algorithm's lines
  for (size_t a = 0; a < n; ++a) {
    Part check;
    check.check_only = true;
    check.notes = a == 0;
    const Child child = in_child(
        [&] {
          Experiment e(alone(o, c.algorithms[a], c.algorithms[a]), check);
          json config;
          e.workload().config_json(config);
          json keys = json::array();
          for (const auto& [key, who] : e.unread()) keys.push_back({key, who});
          std::ostringstream params;
          if (o.list_params) e.list_params(params);
          return json{{"algorithm", config.value("algorithm", c.algorithms[a])}, {"unread", keys},
                      {"params", params.str()}};
        },
        "", out, err);
    if (child.status) return child.status;
    const json r = json::parse(child.reply);
    names[a] = r["algorithm"];
    params[a] = lines_of(r["params"]);
    for (const json& k : r["unread"]) unread[a].emplace_back(k[0], k[1]);
  }
  for (size_t a = 0; a < n; ++a)
    if (std::count(names.begin(), names.end(), names[a]) > 1)
      throw UserError((o.baseline == names[a] ? "--baseline " : "--algorithm ") + names[a] +
                      " is the default algorithm too; name another to compare with");
  for (const auto& [key, who] : unread[0]) {
    bool read = false;
    for (size_t a = 1; a < n; ++a)
      read = read || std::none_of(unread[a].begin(), unread[a].end(),
                                  [&key = key](const auto& u) { return u.first == key; });
    if (!read)
      throw UserError(key + " is not read by " + joined(names, ", ") + " on " + o.platform +
                      (who.empty() ? "; incsim --list-params shows the keys a run reads" : ": " + who));
  }
  if (o.list_params) {
    list_params(params, names, out);
    check_stream(out, "the parameters to stdout");
    return 0;
  }

  // The table's first line before anything is simulated: a stdout that takes nothing costs no simulation.
  const bool table = o.json != "-" && o.csv != "-";
  if (table) {
    out << "# incsim: " << joined(names, ", ") << " compared on the same platform and sizes, each run as it runs "
        << "alone; speedup: " << names[c.baseline] << "'s time over each one's\n";
    check_stream(out, "the table to stdout");
  }
  std::vector<Run> runs;
  double took_s = 0;
  for (size_t a = 0; a < n; ++a) {
    Part part;
    for (const auto& u : unread[a]) part.read_elsewhere.push_back(u.first);
    part.notes = false;
    part.label = "; " + names[a] + ", " + std::to_string(a + 1) + " of " + std::to_string(n);
    part.later_runs = static_cast<int>(n - 1 - a);
    part.later_run_s = a ? took_s / a : 0;
    const Child child =
        in_child([&] { return run_reply(alone(o, c.algorithms[a], names[a]), part); }, names[a] + ": ", out, err);
    if (child.status) return child.status;
    took_s += child.wall_s;
    runs.push_back(read_run(names[a], child.reply));
  }

  const Schema& one = *runs[0].rows.front().schema;
  for (const Run& r : runs)
    if (r.points.size() != runs[0].points.size() || r.rows.front().schema->columns().size() != one.columns().size())
      throw UserError(r.algorithm + "'s rows are not " + runs[0].algorithm +
                      "'s points and columns; compare them in runs of their own");
  const auto schema = compared_schema(one, runs);
  std::vector<Row> rows;
  json json_rows = json::array();
  std::vector<std::vector<std::string>> notes;
  combine(runs, c.baseline, schema, rows, json_rows, notes);

  if (table) {
    // Lines every run's header has once, then each run's own.
    const auto everywhere = [&](const std::string& l) {
      return std::all_of(runs.begin(), runs.end(),
                         [&](const Run& r) { return std::find(r.header.begin(), r.header.end(), l) != r.header.end(); });
    };
    for (const std::string& l : runs[0].header)
      if (everywhere(l)) out << l << "\n";
    for (const Run& r : runs)
      for (const std::string& l : r.header)
        if (!everywhere(l)) out << tagged(l, r.algorithm) << "\n";
    print_columns(out, *schema);
    size_t k = 0;
    for (size_t i = 0; i < notes.size(); ++i) {
      for (const Run& r : runs)
        for (size_t m = 0; m < r.points[i].first; ++m) print_row(out, rows[k++]);
      for (const std::string& l : notes[i]) out << l << "\n";
    }
    check_stream(out, "the table to stdout");
  }
  if (!o.json.empty())
    write_user_file(o.json, comparison_json(runs, c, *schema, json_rows).dump(1) + "\n", "results file");
  if (!o.csv.empty()) {
    std::ostringstream os;
    write_csv(os, *schema, rows);
    write_user_file(o.csv, os.str(), "CSV file");
  }
  std::vector<std::string> wrong;
  for (const Run& r : runs)
    if (!r.wrong_message.empty()) wrong.push_back(r.algorithm + ": " + r.wrong_message);
  if (wrong.empty()) return 0;
  err << "incsim: error: " << joined(wrong, "; ") << "\n";
  return 1;
}

int check_fidelity(const Options& o, std::ostream& out, std::ostream& err) {
  // docs/flow.md's cross-check holds flows to packet level within 5% on the
  // built-in platforms; a user's own may not be one of them.
  constexpr double kTolerance = 0.05;
  const std::vector<uint64_t> sizes = parse_sizes(o.sizes);
  const uint64_t size = *std::min_element(sizes.begin(), sizes.end());
  const Comparison c = comparison_of(o);
  const std::vector<std::string> algorithms = c.algorithms.empty() ? std::vector<std::string>{o.algorithm} : c.algorithms;
  Part part;
  part.notes = false;
  for (const Options::Setting& s : o.params) part.read_elsewhere.push_back(s.key);  // each fidelity reads its own
  std::ostringstream lines;
  lines << "# fidelity check at " << size_label(size)
        << ": the flows' time beside packet level's, the reference (--check-fidelity)\n";
  json checks = json::array();
  for (const std::string& algorithm : algorithms) {
    const char* const fidelities[] = {"flow", "packet"};
    double time_us[2] = {0, 0};  // as fidelities[]
    std::string name = algorithm;
    for (int f = 0; f < 2; ++f) {
      const std::string fidelity = fidelities[f];
      Options one = alone(o, algorithm, algorithm);
      one.fidelity = fidelity;
      one.sizes = std::to_string(size);
      one.vcd.clear();
      one.timeline.clear();
      one.check_fidelity = false;
      part.label = "; fidelity check, " + fidelity + (algorithm.empty() ? "" : ", " + algorithm);
      const Child child = in_child([&] { return run_reply(one, part); },
                                   "--check-fidelity, " + fidelity + " at " + size_label(size) + ": ", out, err);
      if (child.status) return child.status;
      const Run run = read_run(algorithm, child.reply);
      time_us[f] = run.rows.front()["time_us"];
      name = run.results["config"].value("algorithm", algorithm);
    }
    const double diff = time_us[0] / time_us[1] - 1;
    lines << fmt::format("#   {}: flow {:.2f} us, packet {:.2f} us, flow {:+.1f}%{}\n", name, time_us[0], time_us[1],
                         100 * diff,
                         std::abs(diff) <= kTolerance
                             ? ": within the 5% flows are held to"
                             : ": beyond the 5% flows are held to; run packet level here (docs/flow.md, \"What "
                               "flows cannot see\")");
    checks.push_back({{"algorithm", name}, {"size_bytes", size}, {"flow_us", time_us[0]}, {"packet_us", time_us[1]},
                      {"difference", diff}});
  }
  const bool table = o.json != "-" && o.csv != "-";
  (table ? out : err) << lines.str();
  check_stream(out, "the table to stdout");
  // The run's own --json, written before the check began, takes the check too
  // (a file: not a device, which cannot be read back).
  if (!o.json.empty() && std::filesystem::is_regular_file(o.json)) {
    std::ifstream in(o.json);
    json doc = json::parse(in);
    doc["fidelity_check"] = checks;
    write_user_file(o.json, doc.dump(1) + "\n", "results file");
  }
  return 0;
}

}  // namespace incsim::tb
