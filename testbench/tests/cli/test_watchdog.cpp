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
  // A point of weight 2 after points that cost 100 us per weight (taking
  // 100 us in 10 s), a quarter done after 50 us in 5 s, two later points of
  // weight 4 in all: 150 us left of it (the finished points' cost and its
  // own fraction agree), 400 us after it, at 10 us/s.
  RunShare r;
  r.fraction = 0.25;
  r.weight = 2;
  r.later_weight = 4;
  r.later_points = 2;
  r.us_per_weight = 100;
  CHECK(progress_line("size 2M (2 of 4)", 50, 5, 100, 10, r) ==
        "incsim: size 2M (2 of 4): 25%, simulated 50 us at 10 us/s, ETA 55s");
  // The first point: its own fraction predicts it, and each later one to
  // take as long.
  r = RunShare{};
  r.fraction = 0.5;
  r.later_weight = 3;
  r.later_points = 3;
  CHECK(progress_line("size 1M (1 of 4)", 100, 10, 0, 0, r) ==
        "incsim: size 1M (1 of 4): 50%, simulated 100 us at 10 us/s, ETA 1m10s");
  // A fraction that lags (a pipeline filling) is capped by the finished points' cost.
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

TEST_CASE("a quiet run's refusal weighs the running point's own rest, not the later points' estimate",
          "[observe][progress]") {
  using incsim::tb::point_rest_s;
  using incsim::tb::progress_line;
  using incsim::tb::RunShare;
  // The 96 KiB point is half done after 30 us in 3 s; later points at 5 us
  // a byte would take hours. The point's own rest is 3 s, and it alone
  // decides the refusal.
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

TEST_CASE("the later points' cost: a latency and a cost per byte through the last two points, their time after one",
          "[observe][progress]") {
  using incsim::tb::fit_cost;
  using incsim::tb::progress_line;
  using incsim::tb::RunShare;
  // Sizes 4, 8192, 12292 and 98304 bytes. The 4-byte point took 20 us, all
  // latency: the later ones are taken to take as long (at 5 us a byte they
  // would take 591 ms). Half way through the 8 KiB point: 30 us left of it
  // and 40 after it, at 10 us/s.
  RunShare r;
  fit_cost(r, 0, 0, 4, 20);
  CHECK(r.us_fixed == 20);
  CHECK(r.us_per_weight == 0);
  r.fraction = 0.5;
  r.weight = 8192;
  r.later_weight = 12292 + 98304;
  r.later_points = 2;
  CHECK(progress_line("size 8K (2 of 4)", 30, 3, 20, 2, r) ==
        "incsim: size 8K (2 of 4): 50%, simulated 30 us at 10 us/s, ETA 7s");
  // The 8 KiB point took 170 us: through both points, 150 us per 8188
  // bytes on 19.9 us of latency, so 96 KiB is taken to take 1.82 ms.
  fit_cost(r, 4, 20, 8192, 170);
  CHECK(r.us_per_weight == Approx(150.0 / 8188));
  CHECK(r.us_fixed == Approx(170 - 8192 * 150.0 / 8188));
  CHECK(r.us_fixed + r.us_per_weight * 98304 == Approx(1820.9).epsilon(1e-3));
  // A smaller or equal later point, or a cheaper one: no negative cost.
  fit_cost(r, 8192, 170, 8192, 160);
  CHECK(r.us_per_weight == 0);
  CHECK(r.us_fixed == 160);
  fit_cost(r, 4, 200, 8192, 100);
  CHECK(r.us_per_weight == 0);
  CHECK(r.us_fixed == 100);
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
