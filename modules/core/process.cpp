#include "process.h"

#include <algorithm>
#include <vector>

namespace incsim {

// The wake-ups due after now. It keeps them as SystemC's kernel kept each
// wake-up's event, so that events due at one instant run in exactly the
// order they ran in: the same binary heap (sc_ppq_base's insert and
// heapify, comparing times only), the same replaced entries left in it
// (an event notified earlier, cancelled or destroyed leaves its old entry,
// which no longer holds its ticket), dropped at the same points (the top's
// before time advances, sc_simcontext::next_time; every entry due now as
// time advances, sc_simcontext::simulate). What it saves is SystemC's
// per-event cost: a compare through a function pointer, an sc_event_timed
// per notification, and a trigger and a process dispatch per wake-up, for
// one SystemC event per instant instead (docs/architecture.md, "Processes
// and time").
class WakeupQueue {
 public:
  static WakeupQueue& get() {
    // Never destroyed: wake-ups of modules torn down at exit still leave it.
    static WakeupQueue* q = new WakeupQueue;
    return *q;
  }

  // As sc_event::notify(t) does for the wake-up's event.
  void schedule(Wakeup& w, const sc_core::sc_time& when, const sc_core::sc_time& now) {
    if (delta_stands(w)) return;  // SystemC ignores any other notification
    if (when == now) {
      drop(w);
      w.delta_ = true;
      w.delta_stamp_ = sc_core::sc_delta_count();
      w.delta_seen_ = w.event.triggered();
      w.event.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    const uint64_t at = when.value();
    if (w.ticket_) {
      if (w.due_ <= at) return;
      drop(w);
    }
    w.ticket_ = ++tickets_;
    w.due_ = at;
    ++live_;
    insert({at, &w, w.ticket_});
    // While it runs what is due, the queue arms its event once, at the end.
    if (at < armed_at_ && !firing_) {
      armed_at_ = at;
      due_.notify(when - now);
    }
  }

  // Its entry, if any, stays in the heap but is no longer live (sc_event::cancel).
  void drop(Wakeup& w) {
    if (!w.ticket_) return;
    w.ticket_ = 0;
    if (--live_ == 0) {
      // Nothing left to run: SystemC sees no pending activity.
      due_.cancel();
      armed_at_ = kNever;
    }
  }

  // A wake-up destroyed: its entries, live or replaced, must not name it.
  void forget(Wakeup& w) {
    drop(w);
    for (Entry& e : heap_)
      if (e.w == &w) e.w = nullptr;
  }

  // sc_simcontext::next_time: entries no longer live leave from the top.
  void drop_stale_top() {
    while (heap_.size() > 1 && !live(heap_[1])) extract_top();
  }

 private:
  struct Entry {
    uint64_t at;
    Wakeup* w;
    uint64_t ticket;
  };
  static constexpr uint64_t kNever = ~0ull;

  WakeupQueue() : heap_(1) {
    sc_core::sc_spawn_options opt;
    opt.spawn_method();
    opt.dont_initialize();
    opt.set_sensitivity(&due_);
    sc_core::sc_spawn([this] { fire(); }, "incsim_wakeups", &opt);
  }

  // Whether w's delta notification is still to be triggered: SystemC
  // triggers it as the delta cycle ends (the count moves on), or, where no
  // process ran in that cycle (a notification made between sc_start calls),
  // without moving the count, which the event's trigger stamp then shows.
  static bool delta_stands(const Wakeup& w) {
    return w.delta_ && sc_core::sc_delta_count() == w.delta_stamp_ && (w.delta_seen_ || !w.event.triggered());
  }
  static bool live(const Entry& e) { return e.w && e.w->ticket_ == e.ticket; }

  // sc_ppq_base, 1-based, the earliest on top; equal times stay where the
  // sifting leaves them.
  void insert(const Entry& e) {
    heap_.push_back(e);
    size_t i = heap_.size() - 1;
    while (i > 1 && heap_[i / 2].at > e.at) {
      heap_[i] = heap_[i / 2];
      i /= 2;
    }
    heap_[i] = e;
  }
  Entry extract_top() {
    const Entry top = heap_[1];
    heap_[1] = heap_.back();
    heap_.pop_back();
    // heapify(1), moving the hole down instead of swapping: the same choices.
    const size_t n = heap_.size() - 1;
    if (n == 0) return top;
    const Entry e = heap_[1];
    size_t i = 1;
    for (size_t l; (l = 2 * i) <= n;) {
      size_t first = heap_[l].at < e.at ? l : i;
      const uint64_t first_at = first == i ? e.at : heap_[l].at;
      if (l + 1 <= n && heap_[l + 1].at < first_at) first = l + 1;
      if (first == i) break;
      heap_[i] = heap_[first];
      i = first;
    }
    heap_[i] = e;
    return top;
  }

  // sc_simcontext::simulate at the time of the top: every entry due now
  // leaves; the live ones' processes run in that order, as SystemC's
  // runnable queue would run them, directly where spawn_method gave a body.
  void fire() {
    armed_at_ = kNever;
    firing_ = true;
    drop_stale_top();
    const uint64_t now = sim_now().value();
    due_now_.clear();
    while (heap_.size() > 1 && heap_[1].at == now) {
      const Entry e = extract_top();
      if (!live(e)) continue;
      e.w->ticket_ = 0;
      --live_;
      due_now_.push_back(e.w);
    }
    for (size_t k = 0; k < due_now_.size(); ++k) {
      Wakeup* w = due_now_[k];
      if (w->body_) w->run();
      else w->event.notify();
    }
    firing_ = false;
    // Due at the top's time, which may be an entry replaced since: the
    // next run drops it (as next_time would) and waits for the live one.
    if (live_ && heap_[1].at < armed_at_) {
      armed_at_ = heap_[1].at;
      due_.notify(sc_core::sc_time::from_value(armed_at_) - sim_now());
    }
  }

  std::vector<Entry> heap_;  // [0] unused, as sc_ppq_base's
  std::vector<Wakeup*> due_now_;
  uint64_t tickets_ = 0, live_ = 0;
  uint64_t armed_at_ = kNever;  // when due_ is notified for
  bool firing_ = false;
  sc_core::sc_event due_;
};

void Wakeup::schedule(const sc_core::sc_time& when, const sc_core::sc_time& now) {
  WakeupQueue::get().schedule(*this, when, now);
}

void Wakeup::cancel() {
  WakeupQueue::get().drop(*this);
  event.cancel();
  delta_ = armed_ = false;
}

Wakeup::~Wakeup() { WakeupQueue::get().forget(*this); }

void drop_replaced_notifications() {
  WakeupQueue::get().drop_stale_top();
  sc_core::sc_pending_activity_at_future_time();
}

bool pending_activity() {
  if (sc_core::sc_pending_activity_at_current_time()) return true;
  WakeupQueue::get().drop_stale_top();
  return sc_core::sc_pending_activity_at_future_time();
}

}  // namespace incsim
