#include "flow/shared.h"

#include <algorithm>

namespace incsim::flow {

void SharedNetwork::start(Executor& e, uint64_t bytes, const Executor::Result& alone, Executor::Done done) {
  ++started_;
  if (free_runs_.empty()) {
    runs_.emplace_back();
    free_runs_.push_back(static_cast<int>(runs_.size()) - 1);
  }
  const int r = free_runs_.back();
  free_runs_.pop_back();
  Run& x = runs_[static_cast<size_t>(r)];
  x.e = &e;
  x.bytes = bytes;
  x.began = net.now();
  x.alone = alone;
  x.links = std::move(x.alone.links);
  x.alone.links = {};
  x.alone.link_bytes = {};
  x.done = std::move(done);
  bool meets = false;
  for (const int l : x.links) meets = meets || busy_[static_cast<size_t>(l)] > 0;
  if (meets) {
    // Every run alone that it meets, and that is not ending now, runs as
    // flows from its start; then it does.
    for (const int l : x.links) mark_[static_cast<size_t>(l)] = 1;
    for (const int o : live_) {
      Run& y = runs_[static_cast<size_t>(o)];
      if (y.flows || y.began + y.alone.time_ns <= net.now()) continue;
      if (std::any_of(y.links.begin(), y.links.end(), [this](int l) { return mark_[static_cast<size_t>(l)]; }))
        as_flows(o);
    }
    for (const int l : x.links) mark_[static_cast<size_t>(l)] = 0;
    as_flows(r);
  } else {
    net.at(x.began + x.alone.time_ns, [this, r] {
      Run& y = runs_[static_cast<size_t>(r)];
      if (!y.flows) end(r, y.alone);
    }, &x.pending);
  }
  for (const int l : runs_[static_cast<size_t>(r)].links) ++busy_[static_cast<size_t>(l)];
  live_.push_back(r);
}

void SharedNetwork::as_flows(int r) {
  ++as_flows_;
  Run& x = runs_[static_cast<size_t>(r)];
  auto done = [this, r](const Executor::Result& res) { end(r, res); };
  if (x.began >= net.now()) {
    x.flows = x.e->start(x.bytes, net, std::move(done));
    return;
  }
  // Alone until now: its flows as they stand now, from a replay of its past.
  Network past = net.replica(x.began);
  x.flows = x.e->start(x.bytes, past, std::move(done));
  past.run_until(net.now());
  net.adopt(past);
  x.flows->move_to(net);
}

void SharedNetwork::end(int r, const Executor::Result& res) {
  Run& x = runs_[static_cast<size_t>(r)];
  if (x.over) return;
  x.over = true;
  for (const int l : x.links) --busy_[static_cast<size_t>(l)];
  if (x.flows) {
    met_alone_ns_ += x.alone.time_ns;
    met_ns_ += res.time_ns;
  }
  live_.erase(std::find(live_.begin(), live_.end(), r));
  x.done(res);
}

void SharedNetwork::sweep() {
  for (size_t r = 0; r < runs_.size(); ++r) {
    Run& x = runs_[r];
    if (!x.over || x.pending > 0 || (x.flows && !x.flows->idle())) continue;
    x = Run{};
    free_runs_.push_back(static_cast<int>(r));
  }
}

}  // namespace incsim::flow
