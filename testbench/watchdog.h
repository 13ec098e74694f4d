#pragma once
// Stall detector and progress reporter. While a collective runs it wakes every
// `timeout` of simulated time: if no link sent a byte since the last wake, the
// run has stalled; every few wall-clock seconds it reports progress on stderr.
#include <chrono>
#include <functional>
#include <string>
#include <systemc>

namespace incsim::tb {

class Watchdog : public sc_core::sc_module {
 public:
  // Reports progress every `report_every` of wall-clock time unless quiet.
  Watchdog(sc_core::sc_module_name name, sc_core::sc_time timeout, std::function<uint64_t()> progress, bool quiet,
           double report_every_s);
  void arm(const std::string& what);
  void disarm() { armed_ = false; }
  bool stalled() const { return stalled_; }

 private:
  void tick();
  sc_core::sc_time timeout_;
  std::function<uint64_t()> progress_;
  bool quiet_, armed_ = false, stalled_ = false;
  std::chrono::duration<double> report_every_;
  uint64_t last_ = 0;
  std::string what_;
  std::chrono::steady_clock::time_point last_report_;
  sc_core::sc_event wake_;
};

}  // namespace incsim::tb
