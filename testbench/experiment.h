#pragma once
// The one driver: an Experiment takes the options, sets the parameters they
// carry, builds the Workload they ask for (which elaborates its machine),
// runs the workload's points under the stall detector, and writes the rows:
// the table, --json and --csv. incsim's sc_main, incsim-bench and the tests
// all run through it; an architect's own sc_main can too.
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/link_traffic.h"
#include "core/timeline.h"
#include "options.h"
#include "results.h"
#include "watchdog.h"
#include "workload.h"

namespace incsim::tb {

// What a run that is one algorithm of a comparison (compare.h) takes from it.
struct Part {
  // Only check the input: list the parameters this run does not read
  // (unread()) instead of refusing them, for the comparison to judge, and
  // open no waveform or timeline.
  bool check_only = false;
  std::vector<std::string> read_elsewhere;  // parameters another algorithm reads: not refused here as unread
  bool notes = true;                        // say the parameters' notes (renamed keys) on stderr
  std::string label;                        // "; push, 2 of 3": added to each progress line's point
  int later_runs = 0;                       // for the ETA (RunShare)
  double later_run_s = 0;
};

class Experiment : private Runner {
 public:
  // Elaborates everything; throws UserError for any bad input, including a
  // parameter that nothing in this run reads (unless part says another
  // algorithm of a comparison reads it).
  explicit Experiment(const Options& o, const Part& part = {});
  ~Experiment();
  Experiment(const Experiment&) = delete;
  Experiment& operator=(const Experiment&) = delete;

  // Runs every point; prints each row (and the workload's notes) to `table`
  // as it finishes, unless table is null; `points`, if given, receives each
  // point's number of rows and its notes. Throws UserError on a stall.
  std::vector<Row> run(std::ostream* table, std::vector<std::pair<size_t, std::string>>* points = nullptr);

  void print_header(std::ostream& os) const;
  // The whole --json document for these rows.
  nlohmann::ordered_json results_json(const std::vector<Row>& rows) const;
  // Writes --json and --csv if the options ask for them.
  void write_results(const std::vector<Row>& rows) const;
  // Closes --vcd's waveform and writes its save file, and writes
  // --timeline's (the destructor does, if this was not called); throws
  // UserError if one cannot be written.
  void finish_outputs();
  // --list-params: every parameter this run reads.
  void list_params(std::ostream& os) const { cfg_.list(os); }
  // The parameters given that this run does not read, each with who reads
  // it ("push, pull read it, ..."; empty when the platform cannot tell).
  const std::vector<std::pair<std::string, std::string>>& unread() const { return unread_; }

  const Config& config() const { return cfg_; }
  Workload& workload() { return *workload_; }
  template <class W>
  W& workload_as() {
    return dynamic_cast<W&>(*workload_);
  }
  // The packet-level machine (not at --fidelity flow).
  platforms::Machine& machine() { return *workload_->machine(); }

 private:
  void run_until(const std::function<bool()>& done, const std::string& what, sc_core::sc_time step) override;
  void run_plain(const std::string& what, const std::function<void(const Poll&)>& body) override;
  void settle();  // before a point: what is due on the idle machine runs out
  Options opt_;
  Part part_;
  Config cfg_;
  std::vector<std::pair<std::string, std::string>> unread_;
  std::unique_ptr<Workload> workload_;
  std::unique_ptr<Watchdog> watchdog_;
  std::string point_of_;  // " (2 of 5)" while a point runs, for progress lines
  RunShare share_;        // the running point's share of the run, for progress lines
  sc_core::sc_trace_file* vcd_ = nullptr;
  std::unique_ptr<LinkTraffic> links_;  // the VCD's link traffic
  std::unique_ptr<Timeline> timeline_;  // a workload that has no timeline of its own
};

// The version and the git commit this binary was built from.
const char* version();
const char* git_commit();

// incsim's whole run for an sc_main: the actions (--help, --version,
// --list-choices, --list-params, --dump-platform, --print-*), or the header,
// rows and result files; returns the exit status (0, 1 for wrong results,
// 2 for bad input) with one sentence on `err` for anything but 0.
int run_incsim(int argc, const char* const* argv, std::ostream& out, std::ostream& err);
// Called in a catch block: says the exception being handled on err in one
// line ("incsim: error: " who, its message) and returns the exit status, 2
// for bad input and 3 for anything else.
int say_error(std::ostream& err, const std::string& who = "");

}  // namespace incsim::tb
