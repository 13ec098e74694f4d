#pragma once
// SC_METHOD processes for blocks with a variable number of ports: one method
// per port, woken by its own event (STYLE.md, convention 4: no threads and no
// clock on a packet's path).
#include <cstdint>
#include <functional>
#include <systemc>

namespace incsim {

// Process activations so far (the benchmark reports them per second).
inline uint64_t& activations() {
  static uint64_t n = 0;
  return n;
}

// The current simulation time. sc_core::sc_time_stamp() is a call into the
// SystemC library, made several times per packet-hop (2.5% of a run's
// instructions); the simulation context's time is read inline.
inline const sc_core::sc_time& sim_now() { return sc_core::sc_get_curr_simcontext()->time_stamp(); }

// The latest time SystemC represents, "no time yet" for a process looking
// for its next wake-up: sc_core::sc_max_time() is a library call that
// computes it (1.2% of a DGX-2 ring's instructions when called per packet).
inline const sc_core::sc_time& sim_never() {
  static const sc_core::sc_time never = sc_core::sc_max_time();
  return never;
}

// `ps` picoseconds rounded to the nearest, as sc_time::from_value(ps + 0.5)
// but inline (from_value is a library call): one resolution unit (1 ps,
// SystemC's default) times ps, which SystemC rounds the same way.
inline sc_core::sc_time rounded_ps(double ps) {
  static const sc_core::sc_time one = sc_core::sc_time::from_value(1);
  return one * ps;
}

// A process's wake-up event that remembers its earliest pending time, so
// that asking again for the same or a later time costs nothing. A wake-up
// due later waits in incsim's own copy of SystemC's timed-event queue
// (process.cpp), which runs the wake-ups due at one instant in the order
// SystemC ran them, for one SystemC event per instant: SystemC's queue and
// dispatch took two fifths of a DGX-2 ring's instructions (callgrind).
class Wakeup {
 public:
  Wakeup() = default;
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;
  ~Wakeup();
  sc_core::sc_event event;
  void at(const sc_core::sc_time& t) {
    const sc_core::sc_time& now = sim_now();
    const sc_core::sc_time when = t > now ? t : now;
    if (armed_ && pending_ >= now && pending_ <= when) return;
    armed_ = true;
    pending_ = when;
    schedule(when, now);
  }
  void after(const sc_core::sc_time& delay) { at(sim_now() + delay); }
  // The process calls this first: the notification it woke for is spent.
  void fired() { armed_ = false; }
  // Withdraws a pending notification, so that none outlives what it was for.
  void cancel();

 private:
  friend class WakeupQueue;
  friend void spawn_method(const char*, std::function<void()>, Wakeup&);
  void schedule(const sc_core::sc_time& when, const sc_core::sc_time& now);
  // Runs its process's body (spawn_method), counted as a SystemC method run.
  void run() {
    ++activations();
    body_();
  }
  // The body of the method spawn_method made for it: the queue calls it
  // directly when the wake-up is due, sparing SystemC's process dispatch.
  std::function<void()> body_;
  sc_core::sc_time pending_;
  bool armed_ = false;
  // A notification for the present instant (SystemC's delta), made in delta
  // cycle delta_stamp_, the event triggered there already or not (delta_seen_):
  // it stands until SystemC triggers the event (WakeupQueue::delta_stands).
  bool delta_ = false, delta_seen_ = false;
  uint64_t delta_stamp_ = 0;
  // Its live entry in the queue (0: none) and when that entry is due.
  uint64_t ticket_ = 0, due_ = 0;
};

// An entry replaced by an earlier one (Wakeup::at) stays in the queue of
// timed events until it reaches the top, and while there changes the order
// in which the queue hands out events of equal time. Asking for the next
// activity drops those at the top: with nothing pending, all of them, so
// that what starts next runs as it would on a fresh simulation.
void drop_replaced_notifications();
// sc_core::sc_pending_activity(), dropping as it does the replaced entries
// at the top of the wake-ups' queue too.
bool pending_activity();

// Spawns a method that runs `body` whenever `wake` is due: the wake-up's
// queue calls it directly at a later time, SystemC at the same time (a
// delta notification).
inline void spawn_method(const char* name, std::function<void()> body, Wakeup& wake) {
  wake.body_ = std::move(body);
  sc_core::sc_spawn_options opt;
  opt.spawn_method();
  opt.dont_initialize();
  opt.set_sensitivity(&wake.event);
  sc_core::sc_spawn([&wake] { wake.run(); }, name, &opt);
}

// Runs a function once a delay has passed, from a method it spawns at its
// first use (a collective's start after NCCL's fixed cost).
class Delayed {
 public:
  explicit Delayed(const char* name) : name_(name) {}
  void after(const sc_core::sc_time& delay, std::function<void()> fn) {
    fn_ = std::move(fn);
    if (!spawned_) {
      spawned_ = true;
      spawn_method(sc_core::sc_gen_unique_name(name_), [this] {
        wake_.fired();
        std::function<void()> f = std::move(fn_);
        f();
      }, wake_);
    }
    wake_.after(delay);
  }

 private:
  const char* name_;
  Wakeup wake_;
  std::function<void()> fn_;
  bool spawned_ = false;
};

}  // namespace incsim
