#include "watchdog.h"

#include <iostream>

namespace incsim::tb {

Watchdog::Watchdog(sc_core::sc_module_name name, sc_core::sc_time timeout, std::function<uint64_t()> progress,
                   bool quiet, double report_every_s)
    : sc_module(name), timeout_(timeout), progress_(std::move(progress)), quiet_(quiet), report_every_(report_every_s) {
  SC_HAS_PROCESS(Watchdog);
  SC_METHOD(tick);
  sensitive << wake_;
  dont_initialize();
}

void Watchdog::arm(const std::string& what) {
  armed_ = true;
  stalled_ = false;
  what_ = what;
  last_ = progress_();
  last_report_ = std::chrono::steady_clock::now();
  wake_.cancel();  // a tick left from the previous size would judge too early
  wake_.notify(timeout_);
}

void Watchdog::tick() {
  if (!armed_) return;
  const uint64_t now = progress_();
  if (now == last_) {
    stalled_ = true;
    armed_ = false;
    sc_core::sc_pause();
    return;
  }
  last_ = now;
  const auto wall = std::chrono::steady_clock::now();
  if (!quiet_ && wall - last_report_ >= report_every_) {
    last_report_ = wall;
    std::cerr << "incsim: " << what_ << ": simulated time " << sc_core::sc_time_stamp().to_seconds() * 1e6
              << " us\n";
  }
  wake_.notify(timeout_);
}

}  // namespace incsim::tb
