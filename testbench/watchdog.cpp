#include "watchdog.h"

#include <cmath>
#include <fmt/format.h>
#include <ostream>
#include <sys/ioctl.h>
#include <unistd.h>

namespace incsim::tb {

namespace {
std::string duration(double s) {
  const long t = std::lround(s);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, t / 60 % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

// The report line for a point `what` that has run `sim` of simulated time in
// `wall` seconds and is `fraction` done (negative: unknown).
std::string line(const std::string& what, const sc_core::sc_time& sim, double wall, double fraction) {
  const double us = sim.to_seconds() * 1e6;
  std::string s = fmt::format("incsim: {}: ", what);
  if (fraction >= 0) s += fmt::format("{:.0f}%, ", std::floor(std::min(fraction, 1.0) * 100));
  s += fmt::format("simulated {:.4g} us", us);
  if (wall > 0) s += fmt::format(" at {:.3g} us/s", us / wall);
  // The ETA assumes the rest goes as fast as what is done.
  if (fraction > 0 && fraction < 1) s += ", ETA " + duration(wall * (1 - fraction) / fraction);
  return s;
}
}  // namespace

Watchdog::Watchdog(sc_core::sc_time timeout, std::function<uint64_t()> progress, std::function<double()> done_fraction,
                   std::ostream& err, bool quiet, bool terminal, double report_every_s)
    // A timeout below the time resolution would judge without time passing.
    : timeout_(std::max(timeout, sc_core::sc_get_time_resolution())),
      progress_(std::move(progress)),
      done_fraction_(std::move(done_fraction)),
      err_(err),
      quiet_(quiet),
      terminal_(terminal),
      report_every_(report_every_s) {}

void Watchdog::arm(const std::string& what) {
  armed_ = true;
  stalled_ = false;
  what_ = what;
  last_ = progress_();
  start_ = sc_core::sc_time_stamp();
  started_ = last_report_ = std::chrono::steady_clock::now();
  next_ = sc_core::sc_time_stamp() + timeout_;
}

void Watchdog::disarm() {
  armed_ = false;
  clear_line();
}

void Watchdog::run() {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (!armed_ || next_ <= now) {
    sc_core::sc_start();
    return;
  }
  // A report waits for sc_start to return: tenths of the timeout keep the
  // line fresh (pausing between events changes nothing simulated).
  sc_core::sc_start(std::min(next_ - now, quiet_ ? timeout_ : timeout_ / 10));
  judge();
}

void Watchdog::run(const sc_core::sc_time& d) {
  sc_core::sc_start(d);
  judge();
}

void Watchdog::judge() {
  if (!armed_) return;
  if (sc_core::sc_time_stamp() >= next_) {
    const uint64_t now = progress_();
    if (now == last_) {
      stalled_ = true;
      disarm();
      return;
    }
    last_ = now;
    next_ = sc_core::sc_time_stamp() + timeout_;
  }
  const auto wall = std::chrono::steady_clock::now();
  if (!quiet_ && wall - last_report_ >= report_every_) {
    last_report_ = wall;
    report();
  }
}

void Watchdog::report() {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  std::string s = line(what_, sc_core::sc_time_stamp() - start_, wall, done_fraction_());
  if (!terminal_) {
    err_ << s << '\n';
    return;
  }
  // Back to the line's start, the line, and clear what a longer one left; a
  // line wider than the terminal would wrap, and \r would not reach its start.
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && s.size() >= ws.ws_col) s.resize(ws.ws_col - 1);
  err_ << '\r' << s << "\033[K" << std::flush;
  shown_ = terminal_;
}

void Watchdog::clear_line() {
  if (!shown_) return;
  err_ << "\r\033[K" << std::flush;
  shown_ = false;
}

}  // namespace incsim::tb
