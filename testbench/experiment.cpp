#include "experiment.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <iostream>
#include <new>
#include <sstream>
#include <sys/resource.h>
#include <unistd.h>

#include "choices.h"
#include "compare.h"
#include "elements/alu.h"
#include "core/error.h"
#include "core/log.h"
#include "core/output_file.h"
#include "core/process.h"
#include "core/report.h"
#include "core/trace.h"
#include "topology/topology.h"
#include "version.h"
#include "watchdog.h"

namespace incsim::tb {

namespace {
// Run parameters, read by the driver.
const Param<std::string> kFaultBlock{
    "fault.alu.block", "", Range::none(),
    "fault injection: the hierarchical name of one block whose ALU gets results wrong (sw0.port3.reduction_table, "
    "n2.nic, gpu5.cores, fpga.aggregator; --log names them), to see #wrong count them; empty: none"};
const Param<uint64_t> kFaultElements{
    "fault.alu.elements", 1, Range::at_least(1).at_most(1e15),
    "fault injection: how many of that ALU's first results are one too high"};
// At most 1000 s of simulated time: far from what sc_time (64-bit ps) holds.
const Param<double> kStallTimeout{
    "sim.stall_timeout_us", 0.0, Range::at_least(0).at_most(1e9),
    "simulated time without progress that counts as a stall, us (GPU fabrics: no GPU receives a packet and no "
    "switch completes a reduction; Ethernet: no packet is delivered, newly acknowledged or gathered by an FPGA); "
    "0: the workload's default (collectives: the longest of 100 us, 20 round trips and 4 reduction table timeouts; "
    "NetReduce: ten retransmission timeouts, more under link.loss and link.corruption)"};
const Param<double> kProgress{"sim.progress_s", 2.0, Range::at_least(0).at_most(1e6),
                              "wall-clock seconds between progress lines on stderr"};
const Param<bool> kLongRun{"sim.long_run", false, Range::none(),
                           "a --quiet run off a terminal (a script's) whose packet-level estimate passes an hour stops "
                           "with exit 2 and names --fidelity flow; true lets it run"};

// A parameter's value as JSON of its type: 2048, 1.53, true, "software";
// whole numbers as integers, whatever the type, so every reader sees 1000;
// auto (a value the block derives) as the word.
nlohmann::ordered_json param_json(const std::string& key, const Config::Param& p) {
  if (p.type == "bool") return parse_bool(key, p.value);
  if ((p.type != "int" && p.type != "float") || p.value == "auto") return p.value;
  const double v = parse_number(key, p.value);
  if (v == std::floor(v) && std::fabs(v) < 9e15) return static_cast<int64_t>(v);
  return v;
}


// The files this run will write, each checked before anything is built:
// --list-params and --print-* write none, --dump-platform only itself.
void check_outputs(const Options& o) {
  if (o.list_params || o.print_schedule || o.print_trees || o.print_program) return;
  if (!o.dump_platform.empty()) {
    check_writable(o.dump_platform, "platform file");
    return;
  }
  if (!o.vcd.empty()) check_vcd_path(o.vcd);
  if (!o.json.empty()) check_writable(o.json, "results file");
  if (!o.csv.empty()) check_writable(o.csv, "CSV file");
  if (!o.timeline.empty()) check_writable(o.timeline, "timeline");
}
}  // namespace

const char* version() { return kVersion; }
const char* git_commit() { return kGitCommit; }

Experiment::Experiment(const Options& o, const Part& part) : opt_(o), part_(part) {
  check_outputs(opt_);
  log::configure(opt_.log);  // before any block is built: each reads its level once
  for (const auto& p : opt_.params) cfg_.set(p.key, p.value, p.source);
  if (part_.notes)
    for (const std::string& note : cfg_.notes()) std::cerr << "incsim: note: " << note << "\n";
  cfg_.check_known();
  const std::string fault_block = cfg_.get(kFaultBlock);
  const uint64_t fault_elements = cfg_.get(kFaultElements);
  if (opt_.fidelity == "flow" && !fault_block.empty())
    throw UserError("fault.alu.block injects faults into elements, which --fidelity flow does not simulate");
  elements::Alu::inject(fault_block, fault_elements);  // before any block is built
  const bool terminal = isatty(STDERR_FILENO) && !log::any_enabled();
  {
    // Minutes on the largest platforms, before any point reports.
    SetupReport setup("setting up platform " + opt_.platform, std::cerr, opt_.quiet, terminal, cfg_.get(kProgress));
    workload_ = make_workload(opt_, cfg_);
  }

  const double stall_us = cfg_.get(kStallTimeout);
  const sc_core::sc_time timeout =
      stall_us == 0 ? workload_->default_stall_timeout() : sc_core::sc_time(stall_us, sc_core::SC_US);
  const double progress_s = cfg_.get(kProgress);
  platforms::Machine* m = workload_->machine();
  // A VCD's size so far, on each progress line: it grows with the run.
  std::function<std::string()> note;
  if (!opt_.vcd.empty())
    note = [file = vcd_written(opt_.vcd)] {
      std::error_code ec;
      const auto bytes = std::filesystem::file_size(file, ec);
      return ec ? std::string() : fmt::format("VCD {:.1f} MB so far", static_cast<double>(bytes) / 1e6);
    };
  watchdog_ = std::make_unique<Watchdog>(
      timeout, [this] { return workload_->progress(); },
      [this] {
        RunShare s = share_;
        s.fraction = workload_->done_fraction();
        s.later_runs = part_.later_runs;
        s.later_run_s = part_.later_run_s;
        return s;
      },
      std::cerr, opt_.quiet, terminal, progress_s, note,
      opt_.fidelity == "flow" ? workload_->long_run_hint()
                              : std::string("--fidelity flow runs collectives as flows, in seconds to minutes, within "
                                            "the error docs/flow.md measures against packet level"),
      !cfg_.get(kLongRun) && opt_.fidelity != "flow");  // a flow run's hint is said, not enforced
  // The waveform's link traffic interval is read with --vcd only.
  const double link_interval_ns = opt_.vcd.empty() ? 0.0 : cfg_.get(kLinkTrafficInterval);
  // Under --fidelity flow no machine is built, so no algorithm is asked.
  const auto readers = [this, m](const std::string& key) {
    return m ? readers_of(key, m->topology(), opt_.platform) : std::string();
  };
  for (const auto& [key, type] : cfg_.unread()) unread_.emplace_back(key, readers(type));
  if (!part_.check_only)
    cfg_.check_unused(
      [this, &readers](const std::string& key) {
        const std::string who = readers(key);
        return " (" + (opt_.algorithm.empty() ? std::string("its default algorithm") : opt_.algorithm) + " on " +
               opt_.platform + ")" + (who.empty() ? "; incsim --list-params shows the keys it reads" : ": " + who);
      },
      part_.read_elsewhere);
  log::check_matched();
  elements::Alu::check_matched();

  if (!opt_.dump_platform.empty()) {
    std::ostringstream f;
    topo::save_yaml(m->topology(), f);
    write_user_file(opt_.dump_platform, f.str(), "platform file");
  }
  const bool outputs = !opt_.list_params && opt_.dump_platform.empty() && !part_.check_only;
  if (!opt_.vcd.empty() && outputs) {
    vcd_ = open_vcd(opt_.vcd);
    m->trace(vcd_);
    links_ = std::make_unique<LinkTraffic>(link_interval_ns);
    for (const platforms::LinkEnd& e : m->link_ends())
      links_->add_link(e.from, e.to, e.port->bw_GBps(), [port = e.port] { return port->bytes_sent(); });
    workload_->trace(vcd_);
  }
  if (!opt_.timeline.empty() && outputs && !workload_->writes_timeline()) {
    timeline_ = std::make_unique<Timeline>();
    m->trace(timeline_.get());
    workload_->trace(timeline_.get());
    for (const platforms::LinkEnd& e : m->link_ends())
      timeline_->add_link(e.from, e.to, [port = e.port] { return port->bytes_sent(); });
  }
}

Experiment::~Experiment() {
  // A destructor may not throw: the error is said here instead.
  if (vcd_ || timeline_) try {
      finish_outputs();
    } catch (const UserError& e) {
      std::cerr << "incsim: error: " << e.what() << "\n";
    }
}

void Experiment::finish_outputs() {
  if (timeline_) {
    const std::string text = timeline_->json();
    timeline_.reset();
    write_user_file(opt_.timeline, text, "timeline");
    if (!opt_.quiet) std::cerr << "incsim: wrote the timeline " << opt_.timeline << " (open it in ui.perfetto.dev)\n";
  }
  if (!vcd_) return;
  sc_core::sc_trace_file* tf = vcd_;
  vcd_ = nullptr;
  const uint64_t bytes = close_vcd(tf, opt_.vcd, *links_);
  links_.reset();
  if (opt_.quiet) return;
  const std::string gtkw = gtkw_file(opt_.vcd);
  std::cerr << fmt::format("incsim: wrote the waveform {} ({:.1f} MB)", vcd_file(opt_.vcd), static_cast<double>(bytes) / 1e6)
            << (gtkw.empty() ? std::string(", with no GTKWave save file beside a device\n")
                             : " and its GTKWave save file: gtkwave " + gtkw + "\n");
}

void Experiment::run_plain(const std::string& what, const std::function<void(const Poll&)>& body) {
  watchdog_->arm(what + point_of_);
  body([this](double sim_us) { watchdog_->poll(sim_us); });
  watchdog_->disarm();
}

void Experiment::run_until(const std::function<bool()>& done, const std::string& what, sc_core::sc_time step) {
  watchdog_->arm(what + point_of_);
  while (!done() && !watchdog_->stalled() && pending_activity()) {
    if (step == sc_core::SC_ZERO_TIME) watchdog_->run();
    else watchdog_->run(step);
  }
  watchdog_->disarm();
  if (done()) return;
  const std::string stalled = "simulation stalled at " + sc_core::sc_time_stamp().to_string() + " during " + what;
  // A configuration that explains the stall is named instead of the packets it strands.
  if (const std::string cause = workload_->stall_cause(); !cause.empty())
    throw UserError(stalled + ": " + cause);
  std::ostringstream os;
  const uint64_t held = workload_->machine() ? workload_->machine()->report_held(os) : 0;
  workload_->report_stall(os);
  std::string where = os.str();
  if (!where.empty() && where.back() == '\n') where.pop_back();
  throw UserError(stalled + " (no progress for sim.stall_timeout_us); " + std::to_string(held) +
                  " packets held:\n" + where);
}

// Between points a packet-level machine is idle, but may still have events
// due (a credit on its way back, the last step's bookkeeping, nanoseconds
// away). They run out first, and SystemC's queue drops what they replaced,
// so that a point runs as it would alone. A workload with traffic of its
// own that never idles stops settling after a microsecond.
void Experiment::settle() {
  if (!workload_->machine()) return;
  if (pending_activity())
    sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US), sc_core::SC_EXIT_ON_STARVATION);
  drop_replaced_notifications();
}

std::vector<Row> Experiment::run(std::ostream* table, std::vector<std::pair<size_t, std::string>>* points) {
  std::vector<Row> rows;
  static const std::vector<platforms::LinkEnd> none;
  const auto& ends = workload_->machine() ? workload_->machine()->link_ends() : none;
  std::vector<uint64_t> before(ends.size());
  const size_t n = workload_->points();
  std::vector<double> weight(n);
  for (size_t i = 0; i < n; ++i) weight[i] = workload_->point_weight(i);
  double last_took_us = 0;
  for (size_t i = 0; i < n; ++i) {
    point_of_ = " (" + std::to_string(i + 1) + " of " + std::to_string(n) + part_.label + ")";
    share_.weight = weight[i];
    share_.later_weight = 0;
    for (size_t j = i + 1; j < n; ++j) share_.later_weight += weight[j];
    share_.later_points = static_cast<int>(n - i - 1);
    const sc_core::sc_time began = sc_core::sc_time_stamp();
    settle();
    for (size_t k = 0; k < ends.size(); ++k) before[k] = ends[k].port->bytes_sent();
    std::ostringstream notes;
    const size_t first = rows.size();
    for (Row& r : workload_->run_point(i, *this, notes)) {
      if (r.link_bytes.empty())
        for (size_t k = 0; k < ends.size(); ++k) r.link_bytes.push_back(ends[k].port->bytes_sent() - before[k]);
      if (table) print_row(*table, r);
      rows.push_back(std::move(r));
    }
    if (table) {
      *table << notes.str();
      table->flush();
    }
    if (points) points->emplace_back(rows.size() - first, notes.str());
    // The finished points' cost predicts the next ones'.
    const double took_us = (sc_core::sc_time_stamp() - began).to_seconds() * 1e6;
    fit_cost(share_, i > 0 ? weight[i - 1] : 0, last_took_us, weight[i], took_us);
    last_took_us = took_us;
  }
  point_of_.clear();
  return rows;
}

void Experiment::print_header(std::ostream& os) const {
  workload_->print_header(os);
  if (links_)
    os << "# waveform: each block's state (queues, credits, reduction tables, steps) and, "
       << fmt::format("in its links scope, each link's busy share of its wire per {:g} ns", links_->interval_ns())
       << " (percent, vcd.link_interval_ns)\n";
  print_columns(os, workload_->schema());
}

nlohmann::ordered_json Experiment::results_json(const std::vector<Row>& rows) const {
  using json = nlohmann::ordered_json;
  json j;
  j["incsim"] = {{"version", version()}, {"commit", git_commit()}};
  json& config = j["config"];
  config["platform"] = opt_.platform;
  if (!opt_.dims.empty()) config["dims"] = opt_.dims;
  if (opt_.nodes) config["nodes"] = opt_.nodes;
  if (!opt_.node.empty()) config["node"] = opt_.node;
  workload_->config_json(config);
  config["seed"] = opt_.seed;
  if (!opt_.config_files.empty()) config["config_files"] = opt_.config_files;
  json params = json::object();
  for (const auto& [k, p] : cfg_.params()) params[k] = param_json(k, p);
  config["params"] = params;
  workload_->summary_json(j);
  j["columns"] = columns_json(workload_->schema());
  static const std::vector<platforms::LinkEnd> none;
  const auto& ends = workload_->machine() ? workload_->machine()->link_ends() : none;
  json rs = json::array();
  for (const auto& r : rows) {
    json row = row_json(r);
    if (!r.link_bytes.empty() && r.schema->has("time_us")) {
      // Bytes per link end during the row, and that over its capacity; as
      // flows, of the link directions they crossed.
      json links = json::array();
      const double time_us = r["time_us"];
      const auto add = [&](const std::string& from, const std::string& to, uint64_t bytes, double bw_GBps) {
        links.push_back({{"from", from},
                         {"to", to},
                         {"bytes", bytes},
                         {"utilisation", static_cast<double>(bytes) / (bw_GBps * time_us * 1e3)}});
      };
      if (const topo::Topology* g = workload_->flow_graph(); g && !r.link_ids.empty()) {
        for (size_t i = 0; i < r.link_ids.size(); ++i) {
          const topo::Link& l = g->links()[static_cast<size_t>(r.link_ids[i] / 2)];
          const bool ab = r.link_ids[i] % 2 == 0;
          add(g->port_name(ab ? l.a : l.b), g->port_name(ab ? l.b : l.a), r.link_bytes[i], l.bw_GBps);
        }
      } else {
        for (size_t k = 0; k < ends.size(); ++k) add(ends[k].from, ends[k].to, r.link_bytes[k], ends[k].port->bw_GBps());
      }
      row["links"] = links;
    }
    rs.push_back(row);
  }
  j["rows"] = rs;
  return j;
}

void Experiment::write_results(const std::vector<Row>& rows) const {
  if (!opt_.json.empty()) write_user_file(opt_.json, results_json(rows).dump(1) + "\n", "results file");
  if (!opt_.csv.empty()) {
    std::ostringstream os;
    write_csv(os, workload_->schema(), rows);
    write_user_file(opt_.csv, os.str(), "CSV file");
  }
}

namespace {
// Flows grow with a program's transfers, which no estimate prices ahead (a
// flat ring's grow as its GPUs squared): past the memory the machine has
// left, an allocation fails and says so in a sentence (say_error) rather
// than the kernel killing the process. Packet level prices its links ahead
// instead (require_packet_memory), as its coroutines' stacks reserve far
// more address space than they touch.
void limit_address_space() {
  uint64_t vm_kb = 0;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmSize:", 0) == 0) std::istringstream(line.substr(7)) >> vm_kb;
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) != 0) return;
  // RLIM_INFINITY is the largest rlim_t: a limit already lower stays.
  as.rlim_cur = std::min<rlim_t>({vm_kb * 1024 + platforms::usable_bytes(), as.rlim_cur, as.rlim_max});
  setrlimit(RLIMIT_AS, &as);
}
}  // namespace

int run_incsim(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  try {
    const Options o = parse_command_line(argc, argv);
    if (o.fidelity == "flow") limit_address_space();
    // What goes to stdout is checked as it ends (a full device, a closed pipe).
    const auto done = [&out](const char* what) {
      check_stream(out, what);
      return 0;
    };
    if (o.help) {
      out << usage();
      return done("the help to stdout");
    }
    if (o.version) {
      out << "incsim " << version() << " (commit " << git_commit() << ")\n";
      return done("the version to stdout");
    }
    if (o.list_choices) {
      std::string network;  // a cluster's, if given (-c cluster.network=roce)
      for (const auto& setting : o.params)
        if (setting.key == "cluster.network") network = setting.value;
      out << choices(o.was_given("platform") ? o.platform : "", network);
      return done("the choices to stdout");
    }
    if (o.list_all) {
      list_all_params(out);
      return done("the parameters to stdout");
    }
    if (o.check_fidelity && (o.fidelity != "flow" || workload_name(o) != "collective" || !o.jobs.empty()))
      throw UserError("--check-fidelity runs a collective's flows again at packet level; give it with --fidelity "
                      "flow and a collective (no --workload other than collective, no jobs)");
    if (const Comparison c = comparison_of(o); !c.algorithms.empty()) {
      const int rc = run_comparison(o, c, out, err);
      return rc || !o.check_fidelity ? rc : check_fidelity(o, out, err);
    }
    install_report_handler(false);
    Experiment e(o);
    if (o.list_params) {
      e.list_params(out);
      return done("the parameters to stdout");
    }
    if (!o.dump_platform.empty()) return 0;
    if (o.print_schedule || o.print_trees || o.print_program) {
      e.workload().print(o.print_trees ? "trees" : o.print_program ? "program" : "schedule", out);
      return done(o.print_trees ? "the trees to stdout" : o.print_program ? "the program to stdout"
                                                                           : "the schedule to stdout");
    }
    // A result file on stdout replaces the table there. The header is
    // written before anything is simulated, so a stdout that takes nothing
    // costs no simulation.
    const bool table = o.json != "-" && o.csv != "-";
    if (table) {
      e.print_header(out);
      check_stream(out, "the table to stdout");
    }
    const auto rows = e.run(table ? &out : nullptr);
    if (table) check_stream(out, "the table to stdout");
    e.write_results(rows);
    e.finish_outputs();
    uint64_t wrong = 0;
    for (const auto& r : rows) wrong += r.wrong();
    if (wrong) {
      err << "incsim: error: " << e.workload().wrong_message(wrong) << "\n";
      return 1;
    }
    return o.check_fidelity ? check_fidelity(o, out, err) : 0;
  } catch (...) {
    return say_error(err);
  }
}

int say_error(std::ostream& err, const std::string& who) {
  try {
    throw;
  } catch (const UserError& e) {
    err << "incsim: error: " << who << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // A size or a platform the memory checks could not price ahead (a
    // program that grows as GPUs squared): a sentence, not "std::bad_alloc".
    err << "incsim: error: " << who
        << fmt::format("out of memory: this run needs more than the {:.1f} GB it may use; fewer GPUs, smaller "
                       "--sizes or another algorithm need less",
                       static_cast<double>(platforms::usable_bytes()) / 1e9)
        << "\n";
    return 2;
  } catch (const sc_core::sc_report& r) {
    err << "incsim: error: " << who << r.get_msg() << "\n";
    return 3;
  } catch (const std::exception& e) {
    err << "incsim: error: " << who << e.what() << "\n";
    return 3;
  }
}

uint64_t Workload::progress() {
  platforms::Machine* m = machine();
  return m ? m->progress() : 0;
}

void Workload::print(const std::string& what, std::ostream&) const {
  throw UserError("--print-" + what + " shows " +
                  (what == "trees" ? "Blink's trees or a DGX-1's rings" : "NIC schedule tables") +
                  "; this run builds none");
}

void refuse_options(const Options& o, std::initializer_list<const char*> unused, const std::string& why) {
  for (const char* name : unused)
    if (o.was_given(name)) throw UserError("--" + std::string(name) + " " + why);
}

}  // namespace incsim::tb
