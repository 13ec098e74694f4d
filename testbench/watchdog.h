#pragma once
// Stall detector and progress reporter. The run loop advances the simulation
// through run() instead of sc_start(): every `timeout` of simulated time it
// compares the platform's progress count (packets delivered to endpoints,
// reductions completed, data acknowledged: see the platforms' progress())
// with the last one; unchanged means the run has stalled. Every few
// wall-clock seconds it reports the point's progress on stderr: on a
// terminal one line rewritten in place (the point, % done, simulated time,
// rate and the whole run's ETA), elsewhere one line per report.
//
// It has no process and notifies no event: a timed event of its own would
// sit in the kernel's event queue, whose order among events at the same time
// depends on everything ever inserted, and so would change which of two
// simultaneous packets goes first (and the run's result) with the timeout.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <mutex>
#include <string>
#include <systemc>
#include <thread>

namespace incsim::tb {

// What the progress line knows of the run: the running point's share of it
// and how far it has come, for an ETA of the whole run.
struct RunShare {
  // How much of the running point is done, in [0, 1], or negative when the
  // workload cannot tell (then no % and no ETA).
  double fraction = -1;
  // The point's weight and the later points' together (a collective's bytes:
  // Workload::point_weight), and how many later points there are.
  double weight = 1, later_weight = 0;
  int later_points = 0;
  // The finished points' simulated time as a latency and a cost per weight
  // (fit_cost; both 0: none has finished).
  double us_fixed = 0, us_per_weight = 0;
  // Runs of a comparison (compare.h) still to come after this one, each
  // taking `later_run_s` wall seconds (those finished took that on average;
  // 0: none has finished, so each is taken to last as long as this one).
  int later_runs = 0;
  double later_run_s = 0;
};

// The cost of later points from the finished ones: through the last two
// (weights w_prev < w_last, simulated times t_prev and t_last, us), a
// latency and a cost per weight, neither below 0; after one, its time for
// every point. Scaling a small, latency-bound point's time by the later
// points' bytes would make a sweep of seconds hours long.
void fit_cost(RunShare& r, double w_prev, double t_prev, double w_last, double t_last);

// A simulated time as one reads it: 38.22 us, 160.1 ms, 2.50 s.
std::string sim_time_text(double us);
// The report line for a point `what` that has run `sim_us` of simulated
// time in `wall_s` seconds, after `run_sim_us` and `run_wall_s` of the run's
// earlier points: the point's % done, simulated time and rate, and the ETA
// of the whole run, also in *eta_s if given (-1 where none is known yet).
std::string progress_line(const std::string& what, double sim_us, double wall_s, double run_sim_us, double run_wall_s,
                          const RunShare& share, double* eta_s = nullptr);
// The running point's rest from its own fraction done, at this pace,
// seconds (-1: not known yet): what a quiet run's refusal weighs, so that
// a run stops on the running point's own evidence, not on an estimate
// carried over from other sizes (fit_cost's).
double point_rest_s(double sim_us, double wall_s, double run_sim_us, double run_wall_s, RunShare share);

class Watchdog {
 public:
  // Reports progress to `err` every `report_every` of wall-clock time unless
  // quiet; `terminal`: err is one, so the report is one line kept up to date.
  // `share` says where the run is; `note`, if given, adds to each line
  // (the VCD's size so far). `long_hint`, if given, is said once, on a line
  // of its own, when the ETA first passes an hour (what to run instead);
  // with `refuse_long`, a quiet run off a terminal says it in a UserError, so that
  // a script does not wait a day unawares (sim.long_run).
  Watchdog(sc_core::sc_time timeout, std::function<uint64_t()> progress, std::function<RunShare()> share,
           std::ostream& err, bool quiet, bool terminal, double report_every_s,
           std::function<std::string()> note = {}, std::string long_hint = {}, bool refuse_long = false);
  ~Watchdog() { clear_line(); }
  void arm(const std::string& what);
  // Ends the point: a progress line on the terminal is cleared.
  void disarm();
  // In place of run() for a point simulated without SystemC (--fidelity
  // flow): its simulated time so far, reported as run() would.
  void poll(double sim_us);
  bool stalled() const { return stalled_; }
  // In place of sc_start(): simulates up to the next judgement (or until
  // something calls sc_pause()), then judges progress if a timeout has
  // passed. run(d) simulates exactly d (unless paused) and judges after it:
  // a caller that steps in fixed slices keeps its slices.
  void run();
  void run(const sc_core::sc_time& d);

 private:
  void judge();
  void report();
  void report_when_due();   // report() if report_every_ has passed since the last
  void refuse_if_long();    // quiet, refuse_long_: a UserError once the ETA passes an hour
  double point_us() const;  // the armed point's simulated time so far
  void clear_line();
  sc_core::sc_time timeout_, next_, start_;
  std::function<uint64_t()> progress_;
  std::function<RunShare()> share_;
  std::function<std::string()> note_;
  std::string long_hint_;
  // The run so far, before the running point: wall seconds armed and
  // simulated us, for the rate the ETA assumes.
  double run_wall_s_ = 0, run_sim_us_ = 0;
  double plain_us_ = -1;  // poll()'s simulated time, or -1: SystemC's
  std::ostream& err_;
  bool quiet_, terminal_, refuse_long_, armed_ = false, stalled_ = false, shown_ = false;
  std::chrono::duration<double> report_every_;
  uint64_t last_ = 0;
  std::string what_;
  std::chrono::steady_clock::time_point started_, last_report_;
};

// While it lives, the run's setup (the platform, the programs and their
// check, the flow executors: minutes on a cluster of 16,384 nodes, where no
// point has started to report from) says how long it has taken, every
// max(report_every_s, 1) seconds of wall clock but never in its first 5: in
// place on a terminal (cleared when it ends), a line each elsewhere. A
// thread of its own, as the setup is library code with no place to report
// from; nothing simulated waits on it.
class SetupReport {
 public:
  SetupReport(std::string what, std::ostream& err, bool quiet, bool terminal, double report_every_s);
  ~SetupReport();
  SetupReport(const SetupReport&) = delete;
  SetupReport& operator=(const SetupReport&) = delete;

 private:
  void loop();
  std::string what_;
  std::ostream& err_;
  bool terminal_, shown_ = false, done_ = false;
  std::chrono::steady_clock::duration every_;
  std::mutex m_;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace incsim::tb
