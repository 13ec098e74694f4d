#include "watchdog.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <ostream>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/error.h"

namespace incsim::tb {

namespace {
std::string duration(double s) {
  const long t = std::lround(s);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, t / 60 % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

// Writes report line s: on a terminal in place of the last (true: it stays
// shown until cleared), elsewhere as a line of its own.
bool put_line(std::ostream& err, std::string s, bool terminal) {
  if (!terminal) {
    err << s << '\n';
    return false;
  }
  // Back to the line's start, the line, and clear what a longer one left; a
  // line wider than the terminal would wrap, and \r would not reach its start.
  winsize ws{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && s.size() >= ws.ws_col) s.resize(ws.ws_col - 1);
  err << '\r' << s << "\033[K" << std::flush;
  return true;
}

// Clears a line put_line left on the terminal, for what prints next.
void clear_shown(std::ostream& err, bool& shown) {
  if (!shown) return;
  err << "\r\033[K" << std::flush;
  shown = false;
}
}  // namespace

std::string sim_time_text(double us) {
  if (us >= 1e6) return fmt::format("{:.2f} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:.1f} ms", us / 1e3);
  return fmt::format("{:.4g} us", us);
}

namespace {

// The rest of the run at this run's pace, seconds (-1: not known yet).
double eta_of(double sim_us, double wall_s, double run_sim_us, double run_wall_s, const RunShare& r) {
  const double f = r.fraction;
  // The rest of this point: what the finished points' cost predicts for its
  // weight, or what its own fraction extrapolates, the less of the two (a
  // fraction of bytes sent lags while a pipeline fills).
  double left = -1;
  const bool fitted = r.us_fixed > 0 || r.us_per_weight > 0;
  const double predicted = r.us_fixed + r.us_per_weight * r.weight;
  if (fitted && predicted > sim_us) left = predicted - sim_us;
  if (f > 0 && f < 1) left = left < 0 ? sim_us * (1 - f) / f : std::min(left, sim_us * (1 - f) / f);
  // The later points at the finished points' cost, or, before one has
  // finished, each as long as this one.
  double later = -1;
  if (fitted) later = r.later_points * r.us_fixed + r.us_per_weight * r.later_weight;
  else if (left >= 0) later = r.later_points * (sim_us + left);
  const double rate = (run_sim_us + sim_us) / (run_wall_s + wall_s);  // simulated us per wall second, this run
  if (left < 0 || later < 0 || run_wall_s + wall_s <= 0 || rate <= 0) return -1;
  const double rest_s = (left + later) / rate;
  const double run_s = r.later_run_s > 0 ? r.later_run_s : run_wall_s + wall_s + rest_s;
  return rest_s + r.later_runs * run_s;
}

}  // namespace

std::string progress_line(const std::string& what, double sim_us, double wall_s, double run_sim_us, double run_wall_s,
                          const RunShare& r, double* eta_s) {
  std::string s = fmt::format("incsim: {}: ", what);
  const double f = r.fraction;
  if (f >= 0) s += fmt::format("{:.0f}%, ", std::floor(std::min(f, 1.0) * 100));
  s += "simulated " + sim_time_text(sim_us);
  if (wall_s > 0) s += " at " + sim_time_text(sim_us / wall_s) + "/s";
  const double eta = eta_of(sim_us, wall_s, run_sim_us, run_wall_s, r);
  if (eta_s) *eta_s = eta;
  if (eta >= 0) s += ", ETA " + duration(eta);
  return s;
}

Watchdog::Watchdog(sc_core::sc_time timeout, std::function<uint64_t()> progress, std::function<RunShare()> share,
                   std::ostream& err, bool quiet, bool terminal, double report_every_s,
                   std::function<std::string()> note, std::string long_hint, bool refuse_long)
    // A timeout below the time resolution would judge without time passing.
    : timeout_(std::max(timeout, sc_core::sc_get_time_resolution())),
      progress_(std::move(progress)),
      share_(std::move(share)),
      note_(std::move(note)),
      long_hint_(std::move(long_hint)),
      err_(err),
      quiet_(quiet),
      terminal_(terminal),
      refuse_long_(refuse_long && quiet && !terminal && !long_hint_.empty()),
      report_every_(report_every_s) {}

void Watchdog::arm(const std::string& what) {
  armed_ = true;
  stalled_ = false;
  what_ = what;
  last_ = progress_();
  plain_us_ = -1;
  start_ = sc_core::sc_time_stamp();
  started_ = last_report_ = std::chrono::steady_clock::now();
  next_ = sc_core::sc_time_stamp() + timeout_;
}

void Watchdog::disarm() {
  if (armed_) {
    run_wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    run_sim_us_ += point_us();
  }
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

double Watchdog::point_us() const {
  return plain_us_ >= 0 ? plain_us_ : (sc_core::sc_time_stamp() - start_).to_seconds() * 1e6;
}

void Watchdog::poll(double sim_us) {
  if (!armed_) return;
  plain_us_ = sim_us;
  report_when_due();
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
  report_when_due();
}

void Watchdog::report_when_due() {
  const auto wall = std::chrono::steady_clock::now();
  if (wall - last_report_ < report_every_ || (quiet_ && !refuse_long_)) return;
  last_report_ = wall;
  if (quiet_) refuse_if_long();
  else report();
}

void Watchdog::refuse_if_long() {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  if (wall < 2 * report_every_.count()) return;  // the first seconds' pace is rough
  const double eta_s = point_rest_s(point_us(), wall, run_sim_us_, run_wall_s_, share_());
  if (eta_s > 3600)
    throw UserError("at this pace the run needs " + duration(eta_s) + " more, over an hour: " + long_hint_ +
                    " (-c sim.long_run=true runs it anyway)");
}

double point_rest_s(double sim_us, double wall_s, double run_sim_us, double run_wall_s, RunShare share) {
  share.later_weight = share.us_fixed = share.us_per_weight = 0;
  share.later_points = share.later_runs = 0;
  return eta_of(sim_us, wall_s, run_sim_us, run_wall_s, share);
}

void fit_cost(RunShare& r, double w_prev, double t_prev, double w_last, double t_last) {
  r.us_per_weight = w_prev > 0 && w_last > w_prev ? std::max(0.0, (t_last - t_prev) / (w_last - w_prev)) : 0;
  r.us_fixed = std::max(0.0, t_last - r.us_per_weight * w_last);
}

void Watchdog::report() {
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  double eta_s = -1;
  std::string s = progress_line(what_, point_us(), wall, run_sim_us_, run_wall_s_, share_(), &eta_s);
  if (eta_s > 3600 && !long_hint_.empty()) {
    clear_shown(err_, shown_);
    err_ << "incsim: more than an hour at this pace: " << long_hint_ << '\n';
    long_hint_.clear();  // once
  }
  if (note_)
    if (const std::string n = note_(); !n.empty()) s += ", " + n;
  shown_ = put_line(err_, std::move(s), terminal_);
}

void Watchdog::clear_line() { clear_shown(err_, shown_); }


SetupReport::SetupReport(std::string what, std::ostream& err, bool quiet, bool terminal, double report_every_s)
    : what_(std::move(what)),
      err_(err),
      terminal_(terminal),
      every_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(std::max(report_every_s, 1.0)))) {
  if (!quiet) thread_ = std::thread([this] { loop(); });
}

SetupReport::~SetupReport() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(m_);
    done_ = true;
  }
  wake_.notify_one();
  thread_.join();
  clear_shown(err_, shown_);
}

void SetupReport::loop() {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(m_);
  // A setup of a few seconds says nothing: most runs', and a refusal's one sentence stays alone.
  const std::chrono::steady_clock::duration quiet = std::chrono::seconds(5);
  for (std::chrono::steady_clock::time_point next = start + std::max(every_, quiet); !wake_.wait_until(lock, next, [this] { return done_; }); next += every_) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    shown_ = put_line(err_, fmt::format("incsim: {}: {} so far", what_, duration(s)), terminal_);
  }
}

}  // namespace incsim::tb
