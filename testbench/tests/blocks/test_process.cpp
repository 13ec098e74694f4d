// The wake-ups' queue (core/process.cpp) against SystemC's own timed-event
// queue: one script of notifications, run once on plain sc_events (as every
// Wakeup was before the queue) and once on Wakeups, must run its processes
// in the same order at the same times, ties included.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <systemc>
#include <utility>
#include <vector>

#include "core/hash.h"
#include "core/process.h"

using namespace incsim;
using sc_core::sc_time;
using sc_core::SC_NS;

namespace {

// Wakeup::at over a plain sc_event, every notification in SystemC's queue.
struct PlainWake {
  sc_core::sc_event event;
  sc_time pending;
  bool armed = false;
  void at(const sc_time& t) {
    const sc_time now = sc_core::sc_time_stamp();
    const sc_time when = t > now ? t : now;
    if (armed && pending >= now && pending <= when) return;
    armed = true;
    pending = when;
    event.notify(when - now);
  }
  void fired() { armed = false; }
  void cancel() {
    event.cancel();
    armed = false;
  }
};

constexpr int kProcesses = 16;
constexpr size_t kRuns = 20000;

// Each run of process i logs (time since the start, i) and, by a hash of
// what has run so far, wakes others 0-3 ns from now (0: a delta
// notification), often asking one already due later for an earlier time,
// and now and then withdraws one.
template <class Wake>
struct Script {
  std::vector<std::unique_ptr<Wake>> wakes;
  std::vector<std::pair<uint64_t, int>> log;
  sc_time start;
  uint64_t state = 1;

  void run(int i) {
    wakes[i]->fired();
    const sc_time now = sc_core::sc_time_stamp();
    log.emplace_back((now - start).value(), i);
    if (log.size() >= kRuns) return;
    state = splitmix64(state ^ (uint64_t(i) << 32) ^ (now - start).value());
    for (int k = 0; k < 3; ++k) {
      const uint64_t r = splitmix64(state + k);
      Wake& w = *wakes[r % kProcesses];
      if ((r >> 20) % 16 == 0) w.cancel();
      else w.at(now + sc_time(double((r >> 8) % 4), SC_NS));
    }
  }
  void kick() {
    start = sc_core::sc_time_stamp();
    for (int i = 0; i < kProcesses; ++i) wakes[i]->at(start + sc_time(double(i % 3), SC_NS));
  }
};

}  // namespace

TEST_CASE("wake-ups due at one instant run in the order SystemC's own queue ran them", "[process]") {
  Script<PlainWake> plain;
  Script<Wakeup> queued;
  for (int i = 0; i < kProcesses; ++i) {
    plain.wakes.push_back(std::make_unique<PlainWake>());
    sc_core::sc_spawn_options opt;
    opt.spawn_method();
    opt.dont_initialize();
    opt.set_sensitivity(&plain.wakes[i]->event);
    sc_core::sc_spawn([&plain, i] { plain.run(i); }, ("plain" + std::to_string(i)).c_str(), &opt);
    queued.wakes.push_back(std::make_unique<Wakeup>());
    spawn_method(("queued" + std::to_string(i)).c_str(), [&queued, i] { queued.run(i); }, *queued.wakes[i]);
  }
  // One after the other, each from an empty queue of timed events.
  plain.kick();
  sc_core::sc_start();
  drop_replaced_notifications();
  queued.kick();
  sc_core::sc_start();

  REQUIRE(plain.log.size() >= kRuns);
  // Ties are common, so that an order of SystemC's own would show.
  size_t ties = 0;
  for (size_t k = 1; k < plain.log.size(); ++k) ties += plain.log[k].first == plain.log[k - 1].first;
  CHECK(ties > kRuns / 2);
  size_t first = 0;
  while (first < plain.log.size() && first < queued.log.size() && queued.log[first] == plain.log[first]) ++first;
  INFO("runs " << plain.log.size() << " and " << queued.log.size() << ", first differing run " << first);
  CHECK(queued.log == plain.log);
}
