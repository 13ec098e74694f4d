#include "network.h"

#include <algorithm>
#include <cassert>

namespace incsim::flow {

namespace {
// Below this a flow has no bytes left, a link no weight left (rounding).
constexpr double kTiny = 1e-9;
}  // namespace

int Network::add_link(double bytes_per_ns) {
  assert(bytes_per_ns > 0);
  Link l;
  l.cap = bytes_per_ns;
  links_.push_back(std::move(l));
  return static_cast<int>(links_.size()) - 1;
}

void Network::push(double t, int flow, uint32_t version, size_t call) {
  events_.push(Event{t, seq_++, flow, version, call});
}

void Network::after(double delay_ns, Callback f) {
  size_t k;
  if (free_calls_.empty()) {
    k = calls_.size();
    calls_.push_back(std::move(f));
  } else {
    k = free_calls_.back();
    free_calls_.pop_back();
    calls_[k] = std::move(f);
  }
  push(now_ + delay_ns, -1, 0, k);
}

void Network::start(std::vector<Use> uses, double bytes, double latency_ns, Callback done) {
  ++started_;
  uses.erase(std::remove_if(uses.begin(), uses.end(), [](const Use& u) { return u.weight <= 0; }), uses.end());
  if (uses.empty() || bytes <= 0) {
    after(latency_ns, std::move(done));
    return;
  }
  int f;
  if (free_flows_.empty()) {
    f = static_cast<int>(flows_.size());
    flows_.emplace_back();
  } else {
    f = free_flows_.back();
    free_flows_.pop_back();
  }
  Flow& x = flows_[static_cast<size_t>(f)];
  x.uses = std::move(uses);
  x.pos.resize(x.uses.size());
  x.left = bytes;
  x.rate = 0;
  x.since = now_;
  x.latency = latency_ns;
  x.done = std::move(done);
  ++x.version;
  x.active = true;
  for (size_t u = 0; u < x.uses.size(); ++u) {
    Link& l = links_[static_cast<size_t>(x.uses[u].link)];
    l.carried += bytes * x.uses[u].weight;
    x.pos[u] = static_cast<uint32_t>(l.flows.size());
    l.flows.emplace_back(f, static_cast<int>(u));
    dirty_.push_back(x.uses[u].link);
  }
  most_active_ = std::max(most_active_, ++active_);
}

// Its last byte has left: its links' other flows share what it frees.
void Network::drain(int f) {
  Flow& x = flows_[static_cast<size_t>(f)];
  for (size_t u = 0; u < x.uses.size(); ++u) {
    Link& l = links_[static_cast<size_t>(x.uses[u].link)];
    const uint32_t at = x.pos[u];
    l.flows[at] = l.flows.back();
    l.flows.pop_back();
    if (at < l.flows.size()) {
      const auto [g, v] = l.flows[at];
      flows_[static_cast<size_t>(g)].pos[static_cast<size_t>(v)] = at;
    }
    dirty_.push_back(x.uses[u].link);
  }
  x.active = false;
  ++x.version;
  --active_;
  after(x.latency, std::move(x.done));
  x.done = nullptr;
  free_flows_.push_back(f);
}

void Network::recompute() {
  // The component: every flow reachable from the dirty links through shared links.
  ++epoch_;
  comp_links_.clear();
  comp_flows_.clear();
  for (int l : dirty_)
    if (links_[static_cast<size_t>(l)].epoch != epoch_) {
      links_[static_cast<size_t>(l)].epoch = epoch_;
      comp_links_.push_back(l);
    }
  dirty_.clear();
  for (size_t i = 0; i < comp_links_.size(); ++i) {
    for (const auto& [f, u] : links_[static_cast<size_t>(comp_links_[i])].flows) {
      Flow& x = flows_[static_cast<size_t>(f)];
      if (x.epoch == epoch_) continue;
      x.epoch = epoch_;
      comp_flows_.push_back(f);
      for (const Use& use : x.uses) {
        Link& l = links_[static_cast<size_t>(use.link)];
        if (l.epoch == epoch_) continue;
        l.epoch = epoch_;
        comp_links_.push_back(use.link);
      }
    }
  }
  // Bytes sent at the old rates, until now.
  for (int f : comp_flows_) {
    Flow& x = flows_[static_cast<size_t>(f)];
    x.left = std::max(0.0, x.left - x.rate * (now_ - x.since));
    x.since = now_;
    x.frozen = false;
  }
  // Progressive filling: every unfrozen flow's rate rises alike until a
  // link fills; that link's flows freeze at that rate. A link's level is
  // its capacity left over its unfrozen flows' weights.
  struct Level {
    double level;
    int link;
    uint32_t stamp;
    bool operator>(const Level& o) const { return level != o.level ? level > o.level : link > o.link; }
  };
  std::priority_queue<Level, std::vector<Level>, std::greater<Level>> heap;
  for (int l : comp_links_) {
    Link& k = links_[static_cast<size_t>(l)];
    k.left = k.cap;
    k.weights = 0;
    for (const auto& [f, u] : k.flows) k.weights += flows_[static_cast<size_t>(f)].uses[static_cast<size_t>(u)].weight;
    ++k.stamp;
    if (k.weights > kTiny) heap.push({k.left / k.weights, l, k.stamp});
  }
  while (!heap.empty()) {
    const Level top = heap.top();
    heap.pop();
    Link& k = links_[static_cast<size_t>(top.link)];
    if (top.stamp != k.stamp) continue;
    const double level = std::max(0.0, top.level);
    for (const auto& [f, u] : k.flows) {
      Flow& x = flows_[static_cast<size_t>(f)];
      if (x.frozen || !x.uses[static_cast<size_t>(u)].limits) continue;
      x.frozen = true;
      x.rate = level;
      for (const Use& use : x.uses) {
        Link& m = links_[static_cast<size_t>(use.link)];
        m.left -= use.weight * level;
        m.weights -= use.weight;
        ++m.stamp;
        if (&m != &k && m.weights > kTiny) heap.push({m.left / m.weights, use.link, m.stamp});
      }
    }
  }
  for (int f : comp_flows_) {
    Flow& x = flows_[static_cast<size_t>(f)];
    ++x.version;
    push(x.left <= kTiny ? now_ : now_ + x.left / x.rate, f, x.version, 0);
  }
}

void Network::run() {
  for (;;) {
    if (!dirty_.empty() && (events_.empty() || events_.top().t > now_)) recompute();
    if (events_.empty()) return;
    const Event e = events_.top();
    events_.pop();
    now_ = std::max(now_, e.t);
    if (e.flow < 0) {
      Callback f = std::move(calls_[e.call]);
      calls_[e.call] = nullptr;
      free_calls_.push_back(e.call);
      f();
    } else if (flows_[static_cast<size_t>(e.flow)].version == e.version) {
      drain(e.flow);
    }
  }
}

}  // namespace incsim::flow
