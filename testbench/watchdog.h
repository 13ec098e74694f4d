#pragma once
// Stall detector and progress reporter. The run loop advances the simulation
// through run() instead of sc_start(): every `timeout` of simulated time it
// compares the platform's progress count (packets delivered to endpoints,
// reductions completed, data acknowledged: see the platforms' progress())
// with the last one; unchanged means the run has stalled. Every few
// wall-clock seconds it reports progress on stderr.
//
// It has no process and notifies no event: a timed event of its own would
// sit in the kernel's event queue, whose order among events at the same time
// depends on everything ever inserted, and so would change which of two
// simultaneous packets goes first (and the run's result) with the timeout.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <systemc>

namespace incsim::tb {

class Watchdog {
 public:
  // Reports progress every `report_every` of wall-clock time unless quiet.
  Watchdog(sc_core::sc_time timeout, std::function<uint64_t()> progress, bool quiet,
           double report_every_s);
  void arm(const std::string& what);
  void disarm() { armed_ = false; }
  bool stalled() const { return stalled_; }
  // In place of sc_start(): simulates up to the next judgement (or until
  // something calls sc_pause()), then judges progress if a timeout has
  // passed. run(d) simulates exactly d (unless paused) and judges after it:
  // a caller that steps in fixed slices keeps its slices.
  void run();
  void run(const sc_core::sc_time& d);

 private:
  void judge();
  sc_core::sc_time timeout_, next_;
  std::function<uint64_t()> progress_;
  bool quiet_, armed_ = false, stalled_ = false;
  std::chrono::duration<double> report_every_;
  uint64_t last_ = 0;
  std::string what_;
  std::chrono::steady_clock::time_point last_report_;
};

}  // namespace incsim::tb
