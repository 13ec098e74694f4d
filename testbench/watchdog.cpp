#include "watchdog.h"

#include <iostream>

namespace incsim::tb {

Watchdog::Watchdog(sc_core::sc_time timeout, std::function<uint64_t()> progress, bool quiet,
                   double report_every_s)
    // A timeout below the time resolution would judge without time passing.
    : timeout_(std::max(timeout, sc_core::sc_get_time_resolution())),
      progress_(std::move(progress)),
      quiet_(quiet),
      report_every_(report_every_s) {}

void Watchdog::arm(const std::string& what) {
  armed_ = true;
  stalled_ = false;
  what_ = what;
  last_ = progress_();
  last_report_ = std::chrono::steady_clock::now();
  next_ = sc_core::sc_time_stamp() + timeout_;
}

void Watchdog::run() {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (!armed_ || next_ <= now) {
    sc_core::sc_start();
    return;
  }
  sc_core::sc_start(next_ - now);
  judge();
}

void Watchdog::run(const sc_core::sc_time& d) {
  sc_core::sc_start(d);
  judge();
}

void Watchdog::judge() {
  if (!armed_ || sc_core::sc_time_stamp() < next_) return;
  const uint64_t now = progress_();
  if (now == last_) {
    stalled_ = true;
    armed_ = false;
    return;
  }
  last_ = now;
  next_ = sc_core::sc_time_stamp() + timeout_;
  const auto wall = std::chrono::steady_clock::now();
  if (!quiet_ && wall - last_report_ >= report_every_) {
    last_report_ = wall;
    std::cerr << "incsim: " << what_ << ": simulated time " << sc_core::sc_time_stamp().to_seconds() * 1e6
              << " us\n";
  }
}

}  // namespace incsim::tb
