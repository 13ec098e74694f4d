// The stall detector's progress line as plain text (watchdog.h): times in
// the unit one reads them in, and the ETA of the whole run from the points'
// weights and the last point's pace; the setup's report before any point.
#include <catch2/catch.hpp>

#include <chrono>
#include <sstream>
#include <thread>

#include "watchdog.h"

TEST_CASE("the progress line reads as a person would: times in their unit, the whole run's ETA", "[observe][progress]") {
  using incsim::tb::progress_line;
  using incsim::tb::RunShare;
  using incsim::tb::sim_time_text;
  CHECK(sim_time_text(38.22) == "38.22 us");
  CHECK(sim_time_text(160123.4) == "160.1 ms");
  CHECK(sim_time_text(2.5e6) == "2.50 s");
  // A point of weight 2 after one of weight 1 that took 100 us in 10 s, a
  // quarter done after 50 us in 5 s, two later points of weight 4 in all:
  // 150 us left of it (its predecessor's pace and its own fraction agree),
  // 400 us after it, at 10 us/s.
  RunShare r;
  r.fraction = 0.25;
  r.weight = 2;
  r.later_weight = 4;
  r.us_per_weight = 100;
  CHECK(progress_line("size 2M (2 of 4)", 50, 5, 100, 10, r) ==
        "incsim: size 2M (2 of 4): 25%, simulated 50 us at 10 us/s, ETA 55s");
  // The first point: its own fraction predicts it and the later ones.
  r = RunShare{};
  r.fraction = 0.5;
  r.later_weight = 3;
  CHECK(progress_line("size 1M (1 of 4)", 100, 10, 0, 0, r) ==
        "incsim: size 1M (1 of 4): 50%, simulated 100 us at 10 us/s, ETA 1m10s");
  // A fraction that lags (a pipeline filling) is capped by the last point's pace.
  r = RunShare{};
  r.fraction = 0.01;
  r.us_per_weight = 100;
  CHECK(progress_line("size 1M (2 of 2)", 50, 5, 100, 10, r) ==
        "incsim: size 1M (2 of 2): 1%, simulated 50 us at 10 us/s, ETA 5s");
  // The ETA in seconds too, for the hint a run of more than an hour gets;
  // none before a pace is known.
  double eta = 0;
  r = RunShare{};
  r.fraction = 0.001;
  CHECK(progress_line("size 1T (1 of 1)", 10, 10, 0, 0, r, &eta) ==
        "incsim: size 1T (1 of 1): 0%, simulated 10 us at 1 us/s, ETA 2h46m");
  CHECK(eta == Approx(9990));
  r.fraction = -1;
  progress_line("size 1T (1 of 1)", 10, 10, 0, 0, r, &eta);
  CHECK(eta == -1);
  // Long runs read in ms and s, not 1.601e+05 us.
  r = RunShare{};
  CHECK(progress_line("iteration 1 (1 of 1)", 160123.4, 2, 0, 0, r) ==
        "incsim: iteration 1 (1 of 1): simulated 160.1 ms at 80.1 ms/s");
}

TEST_CASE("a comparison's progress line counts the algorithms still to run in its ETA", "[observe][progress]") {
  using incsim::tb::progress_line;
  using incsim::tb::RunShare;
  // The first algorithm of three, half done after 100 us in 10 s (15 s of
  // it so far with the earlier point): 10 s left of it, so it takes 25 s,
  // and the two after it are taken to take as long.
  RunShare r;
  r.fraction = 0.5;
  r.later_runs = 2;
  CHECK(progress_line("size 1M (2 of 2; ring, 1 of 3)", 100, 10, 50, 5, r) ==
        "incsim: size 1M (2 of 2; ring, 1 of 3): 50%, simulated 100 us at 10 us/s, ETA 1m00s");
  // Once one has finished, the later ones take what the finished took on average.
  r.later_runs = 1;
  r.later_run_s = 40;
  CHECK(progress_line("size 1M (2 of 2; push, 2 of 3)", 100, 10, 50, 5, r) ==
        "incsim: size 1M (2 of 2; push, 2 of 3): 50%, simulated 100 us at 10 us/s, ETA 50s");
}

TEST_CASE("a quiet run's refusal weighs the running point's own rest, not later points scaled from a small one's pace",
          "[observe][progress]") {
  using incsim::tb::point_rest_s;
  using incsim::tb::progress_line;
  using incsim::tb::RunShare;
  // A 4-byte point took 20 us (5 us a byte, its steps' latency); the 96 KiB
  // point after it is half done after 30 us in 3 s. The whole run's ETA
  // scales the small point's pace by the later bytes: hours. The point's
  // own rest is 3 s, and it alone decides the refusal.
  RunShare r;
  r.fraction = 0.5;
  r.weight = 96 * 1024;
  r.later_weight = 8192 + 12292;
  r.us_per_weight = 5;
  double eta = 0;
  progress_line("size 96K (2 of 4)", 30, 3, 20, 2, r, &eta);
  CHECK(eta > 3600);
  CHECK(point_rest_s(30, 3, 20, 2, r) == Approx(3));
  // Without a fraction of its own, nothing is known to refuse on.
  r.fraction = -1;
  CHECK(point_rest_s(30, 3, 20, 2, r) == -1);
}

TEST_CASE("a setup longer than 5 s says how long it has taken, in place on a terminal, and clears its line", "[observe][progress]") {
  using incsim::tb::SetupReport;
  std::ostringstream quiet, terminal;
  {
    SetupReport q("setting up platform cluster", quiet, true, true, 1);
    SetupReport t("setting up platform cluster", terminal, false, true, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(6500));
  }
  CHECK(quiet.str().empty());
  // At 5 s, again at 6 s (unless the machine is too busy to wake the thread
  // before the setup ends at 6.5 s), each over the last, then cleared for
  // what prints next.
  const std::string first = "\rincsim: setting up platform cluster: 5s so far\033[K", out = terminal.str();
  CHECK((out == first + "\r\033[K" || out == first + "\rincsim: setting up platform cluster: 6s so far\033[K\r\033[K"));
  // Under 5 s: nothing.
  std::ostringstream brief;
  { SetupReport b("setting up platform dgx2", brief, false, false, 1); }
  CHECK(brief.str().empty());
}
