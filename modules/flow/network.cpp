#include "network.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <cmath>
#include <cstring>

namespace incsim::flow {

namespace {
// Below this a flow has no bytes left, a link no weight left (rounding).
constexpr double kTiny = 1e-9;
}  // namespace

int Network::add_link(double bytes_per_ns) {
  assert(bytes_per_ns > 0);
  const int k = free_slot(links_, free_links_);
  carried_.resize(links_.size());
  carried_[static_cast<size_t>(k)] = 0;
  links_[static_cast<size_t>(k)].bundle = -1;
  place_link(k, bytes_per_ns);
  return k;
}

void Network::place_link(int l, double cap) {
  // A bundle with no path in flight takes any link of its capacity.
  const auto f = fresh_.find(cap);
  int b = f == fresh_.end() ? -1 : f->second;
  if (b < 0 || !bundles_[static_cast<size_t>(b)].paths.empty()) {
    b = new_bundle(cap);
    fresh_[cap] = b;
  }
  move_link(l, b);
}

Network Network::replica(double t_ns) const {
  Network r;
  r.links_.resize(links_.size());
  r.carried_.assign(links_.size(), 0);
  for (size_t l = 0; l < links_.size(); ++l) {
    r.links_[l].bundle = -1;
    if (links_[l].bundle >= 0) r.place_link(static_cast<int>(l), bundles_[static_cast<size_t>(links_[l].bundle)].cap);
  }
  r.free_links_ = free_links_;
  r.now_ = t_ns;
  return r;
}

void Network::adopt(Network& from) {
  assert(std::abs(from.now_ - now_) <= kTiny * std::max(1.0, now_));
  // Its links first, as it left them: a run's own links, a table's.
  links_.resize(std::max(links_.size(), from.links_.size()), Link{-1, 0, 0});
  carried_.resize(links_.size(), 0);
  for (size_t l = 0; l < from.links_.size(); ++l) {
    const int b = from.links_[l].bundle, here = links_[l].bundle;
    if (b >= 0 && here < 0) place_link(static_cast<int>(l), from.bundles_[static_cast<size_t>(b)].cap);
    if (b < 0 && here >= 0) move_link(static_cast<int>(l), -1);
  }
  free_links_ = from.free_links_;
  // Its flows with the bytes they have left, each path's marks on its last
  // flow to end (they are due at the path's rate, whichever flow they came
  // with), all still counted pending where they were.
  for (Path& path : from.paths_) {
    if (path.flows.empty()) continue;
    from.advance(path);
    std::vector<Member> flows, marks;
    for (; !path.flows.empty(); path.flows.pop()) flows.push_back(path.flows.top());
    for (; !path.marks.empty(); path.marks.pop()) marks.push_back(path.marks.top());
    for (const Member& m : flows) {
      Flow& x = from.flows_[static_cast<size_t>(m.flow)];
      std::vector<Mark> on;
      if (&m == &flows.back())
        for (const Member& k : marks) {
          Call& c = from.marks_[static_cast<size_t>(k.flow)];
          assert(c.pending == x.pending);
          if (c.pending) --*c.pending;
          on.push_back({m.end - k.end, std::move(c.f)});
        }
      if (x.pending) --*x.pending;
      const double left = std::max(0.0, m.end - path.sent);
      for (const Use& u : path.uses) from.carried_[static_cast<size_t>(u.link)] -= left * u.weight;  // start counts it here
      start(path.uses, left, x.latency, std::move(x.done), x.pending, std::move(on));
    }
  }
  for (size_t l = 0; l < from.carried_.size(); ++l) carried_[l] += from.carried_[l];
  for (; !from.events_.empty(); from.events_.pop()) {
    const Event& e = from.events_.top();
    post(e.t, std::move(from.calls_[e.call]));
  }
  from = Network();
}

void Network::remove_link(int l) {
  assert(bundles_[static_cast<size_t>(links_[static_cast<size_t>(l)].bundle)].paths.empty());
  move_link(l, -1);
  free_links_.push_back(l);
}

int Network::new_bundle(double cap) {
  const int b = free_slot(bundles_, free_bundles_);
  if (met_.size() < bundles_.size()) {
    met_.resize(bundles_.size());
    members_.resize(bundles_.size());
    tally_.resize(bundles_.size());
  }
  bundles_[static_cast<size_t>(b)].cap = cap;
  met_[static_cast<size_t>(b)] = Met{0, 0, 0};
  return b;
}

void Network::move_link(int l, int b) {
  Link& x = links_[static_cast<size_t>(l)];
  if (x.bundle >= 0) {
    std::vector<int>& from = members_[static_cast<size_t>(x.bundle)];
    from[x.at] = from.back();
    links_[static_cast<size_t>(from[x.at])].at = x.at;
    from.pop_back();
    if (from.empty()) {
      const double cap = bundles_[static_cast<size_t>(x.bundle)].cap;
      if (const auto f = fresh_.find(cap); f != fresh_.end() && f->second == x.bundle) fresh_.erase(f);
      free_bundles_.push_back(x.bundle);
    }
  }
  x.bundle = b;
  if (b < 0) return;
  x.at = static_cast<uint32_t>(members_[static_cast<size_t>(b)].size());
  members_[static_cast<size_t>(b)].push_back(l);
}

int Network::split(const std::vector<int>& links) {
  const int b = links_[static_cast<size_t>(links.front())].bundle;
  const int c = new_bundle(bundles_[static_cast<size_t>(b)].cap);  // dirty: the new path is on it
  for (int l : links) move_link(l, c);
  const std::vector<OnBundle>& from = bundles_[static_cast<size_t>(b)].paths;
  std::vector<OnBundle>& to = bundles_[static_cast<size_t>(c)].paths;
  to.reserve(from.size());
  for (size_t i = 0; i < from.size(); ++i) {
    const OnBundle& o = from[i];
    Path& y = paths_[static_cast<size_t>(o.path)];
    to.push_back({o.path, static_cast<uint32_t>(y.parts.size()), o.limits, o.weight});
    y.parts.push_back({c, o.weight, o.limits != 0});
    y.pos.push_back(static_cast<uint32_t>(i));
  }
  return c;
}

// Nearly always a path uses each bundle it meets whole and alike, which
// one pass over its uses tells; only a bundle it uses otherwise is sorted out.
void Network::join(int p) {
  Path& x = paths_[static_cast<size_t>(p)];
  const std::vector<Use>& u = x.uses;
  ++joins_;
  met_bundles_.clear();
  for (uint32_t k = 0; k < u.size(); ++k) {
    Link& l = links_[static_cast<size_t>(u[k].link)];
    Tally& t = tally_[static_cast<size_t>(l.bundle)];
    if (t.seen != joins_) {
      t = Tally{joins_, 0, k, false};
      met_bundles_.push_back(l.bundle);
    } else if (l.seen == joins_ || u[k].weight != u[t.first].weight || u[k].limits != u[t.first].limits) {
      t.mixed = true;
    }
    l.seen = joins_;
    ++t.uses;
  }
  x.parts.clear();
  for (int b : met_bundles_) {
    const Tally& t = tally_[static_cast<size_t>(b)];
    if (!t.mixed && t.uses == members_[static_cast<size_t>(b)].size())
      x.parts.push_back({b, u[t.first].weight, u[t.first].limits});
    else
      join_part(p, b);
  }
  x.pos.resize(x.parts.size());
  for (size_t k = 0; k < x.parts.size(); ++k) {
    Bundle& c = bundles_[static_cast<size_t>(x.parts[k].link)];
    x.pos[k] = static_cast<uint32_t>(c.paths.size());
    c.paths.push_back({p, static_cast<uint32_t>(k), x.parts[k].limits, x.parts[k].weight});
  }
}

void Network::join_part(int p, int b) {
  Path& x = paths_[static_cast<size_t>(p)];
  const std::vector<Use>& u = x.uses;
  order_.clear();
  for (uint32_t k = 0; k < u.size(); ++k)
    if (links_[static_cast<size_t>(u[k].link)].bundle == b) order_.push_back(k);
  std::sort(order_.begin(), order_.end(), [&u](uint32_t i, uint32_t j) {
    const Use& a = u[i];
    const Use& c = u[j];
    if (a.link != c.link) return a.link < c.link;
    return a.weight != c.weight ? a.weight < c.weight : a.limits < c.limits;
  });
  runs_.clear();
  for (uint32_t i = 0; i < order_.size(); ++i) {
    if (runs_.empty() || runs_.back().link != u[order_[i]].link) runs_.push_back({u[order_[i]].link, i, 0});
    ++runs_.back().n;
  }
  // Two links' uses in the path, compared: -1, 0 (alike) or 1.
  const auto compare = [&](const Run& a, const Run& c) {
    if (a.n != c.n) return a.n < c.n ? -1 : 1;
    for (uint32_t k = 0; k < a.n; ++k) {
      const Use& y = u[order_[a.first + k]];
      const Use& z = u[order_[c.first + k]];
      if (y.weight != z.weight) return y.weight < z.weight ? -1 : 1;
      if (y.limits != z.limits) return y.limits < z.limits ? -1 : 1;
    }
    return 0;
  };
  std::sort(runs_.begin(), runs_.end(), [&compare](const Run& a, const Run& c) {
    const int k = compare(a, c);
    return k != 0 ? k < 0 : a.link < c.link;
  });
  const bool whole = runs_.size() == members_[static_cast<size_t>(b)].size();
  for (size_t g = 0; g < runs_.size();) {
    size_t h = g + 1;
    while (h < runs_.size() && compare(runs_[g], runs_[h]) == 0) ++h;
    int to = b;  // the last set of links keeps the bundle if no link is left out
    if (!whole || h < runs_.size()) {
      group_.clear();
      for (size_t k = g; k < h; ++k) group_.push_back(runs_[k].link);
      to = split(group_);
    }
    for (uint32_t k = 0; k < runs_[g].n; ++k) {
      const Use& y = u[order_[runs_[g].first + k]];
      x.parts.push_back({to, y.weight, y.limits});
    }
    g = h;
  }
}

void Network::place(size_t i, const Due& d) {
  due_[i] = d;
  due_at_[static_cast<size_t>(d.path)] = static_cast<int>(i);
}

void Network::sift(size_t i) {
  const Due d = due_[i];
  while (i > 0 && d < due_[(i - 1) / 2]) {
    place(i, due_[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= due_.size()) break;
    if (c + 1 < due_.size() && due_[c + 1] < due_[c]) ++c;
    if (!(due_[c] < d)) break;
    place(i, due_[c]);
    i = c;
  }
  place(i, d);
}

void Network::schedule(int p, double t) {
  int& at = due_at_[static_cast<size_t>(p)];
  if (at < 0) {
    at = static_cast<int>(due_.size());
    due_.push_back(Due{t, seq_++, p});
  } else {
    due_[static_cast<size_t>(at)] = Due{t, seq_++, p};
  }
  sift(static_cast<size_t>(at));
}

void Network::unschedule(int p) {
  int& at = due_at_[static_cast<size_t>(p)];
  if (at < 0) return;
  const size_t i = static_cast<size_t>(at);
  at = -1;
  const Due last = due_.back();
  due_.pop_back();
  if (i < due_.size()) {
    place(i, last);
    sift(i);
  }
}

void Network::after(double delay_ns, Callback f, uint64_t* pending) {
  if (pending) ++*pending;
  post(now_ + delay_ns, Call{std::move(f), pending});
}

void Network::at(double t_ns, Callback f, uint64_t* pending) {
  if (pending) ++*pending;
  post(std::max(now_, t_ns), Call{std::move(f), pending});
}

void Network::post(double t, Call c) {
  const int k = free_slot(calls_, free_calls_);
  calls_[static_cast<size_t>(k)] = std::move(c);
  events_.push(Event{t, seq_++, static_cast<size_t>(k)});
}

void Network::start(std::vector<Use> uses, double bytes, double latency_ns, Callback done, uint64_t* pending,
                    std::vector<Mark> marks) {
  uses.erase(std::remove_if(uses.begin(), uses.end(), [](const Use& u) { return u.weight <= 0; }), uses.end());
  if (uses.empty() || bytes <= 0) {
    for (Mark& m : marks) after(0, std::move(m.at), pending);
    after(latency_ns, std::move(done), pending);
    return;
  }
  if (pending) ++*pending;
  const int p = path_of(std::move(uses));
  const int f = free_slot(flows_, free_flows_);
  flows_[static_cast<size_t>(f)] = Flow{latency_ns, std::move(done), pending};
  Path& path = paths_[static_cast<size_t>(p)];
  advance(path);
  path.flows.push(Member{path.sent + bytes, seq_++, f});
  path.moved = true;
  for (const Use& u : path.uses) carried_[static_cast<size_t>(u.link)] += bytes * u.weight;
  touch(path);
  most_active_ = std::max(most_active_, ++active_);
  for (Mark& m : marks) {
    if (bytes <= m.bytes) {
      after(0, std::move(m.at), pending);
      continue;
    }
    if (pending) ++*pending;
    const int k = free_slot(marks_, free_marks_);
    marks_[static_cast<size_t>(k)] = Call{std::move(m.at), pending};
    path.marks.push(Member{path.sent + bytes - m.bytes, seq_++, k});
  }
}

void Network::reschedule(int p) {
  Path& x = paths_[static_cast<size_t>(p)];
  const double left = first_end(x) - x.sent;
  schedule(p, left <= kTiny ? now_ : now_ + left / x.rate);
}

void Network::advance(Path& p) {
  if (p.rate > 0) p.sent += p.rate * (now_ - p.since);
  p.since = now_;
}

int Network::path_of(std::vector<Use>&& uses) {
  uint64_t key = kFnvBasis;
  for (const Use& u : uses) {
    uint64_t w;
    static_assert(sizeof w == sizeof u.weight);
    std::memcpy(&w, &u.weight, sizeof w);
    for (const uint64_t v : {static_cast<uint64_t>(u.link), w, static_cast<uint64_t>(u.limits)}) key = fnv1a(key, v);
  }
  const size_t s = slot_of(key);
  for (int p = index_[s].path; p >= 0; p = paths_[static_cast<size_t>(p)].next_same) {
    const std::vector<Use>& v = paths_[static_cast<size_t>(p)].uses;
    if (std::equal(v.begin(), v.end(), uses.begin(), uses.end(), [](const Use& x, const Use& y) {
          return x.link == y.link && x.weight == y.weight && x.limits == y.limits;
        }))
      return p;
  }
  const int p = free_slot(paths_, free_paths_);
  if (due_at_.size() < paths_.size()) due_at_.resize(paths_.size(), -1);
  Path& x = paths_[static_cast<size_t>(p)];
  x.next_same = index_[s].path;
  if (x.next_same < 0) ++indexed_;
  index_[s] = Slot{key, p};
  if (2 * indexed_ > index_.size()) {  // twice the slots
    std::vector<Slot> old(2 * index_.size(), Slot{0, -1});
    old.swap(index_);
    for (const Slot& y : old)
      if (y.path >= 0) index_[slot_of(y.key)] = y;
  }
  x.uses = std::move(uses);
  x.key = key;
  x.rate = 0;
  x.sent = 0;
  x.since = now_;
  join(p);
  return p;
}

size_t Network::slot_of(uint64_t key) const {
  const size_t mask = index_.size() - 1;
  size_t i = home(key);
  while (index_[i].path >= 0 && index_[i].key != key) i = (i + 1) & mask;
  return i;
}

void Network::unindex(int p) {
  const Path& x = paths_[static_cast<size_t>(p)];
  size_t i = slot_of(x.key);
  int& first = index_[i].path;
  if (first != p) {  // off its key's chain
    int q = first;
    while (paths_[static_cast<size_t>(q)].next_same != p) q = paths_[static_cast<size_t>(q)].next_same;
    paths_[static_cast<size_t>(q)].next_same = x.next_same;
    return;
  }
  if (x.next_same >= 0) {
    first = x.next_same;
    return;
  }
  // The key's last path: the slots after it that would have gone here move back.
  const size_t mask = index_.size() - 1;
  for (size_t j = (i + 1) & mask; index_[j].path >= 0; j = (j + 1) & mask)
    if (((j - home(index_[j].key)) & mask) >= ((j - i) & mask)) {
      index_[i] = index_[j];
      i = j;
    }
  index_[i].path = -1;
  --indexed_;
}

void Network::touch(const Path& p) {
  for (const Use& u : p.parts) dirty_.push_back(u.link);
}

// Their last bytes have left: the path's and its links' other flows share what they free.
void Network::drain(int p) {
  Path& path = paths_[static_cast<size_t>(p)];
  advance(path);
  const double end = first_end(path);
  while (!path.marks.empty() && path.marks.top().end <= end) {
    const int m = path.marks.top().flow;
    path.marks.pop();
    post(now_, std::move(marks_[static_cast<size_t>(m)]));  // still counted: its callback is to come
    free_marks_.push_back(m);
  }
  if (path.flows.top().end > end) {  // only marks were due: the rates hold
    reschedule(p);
    return;
  }
  while (!path.flows.empty() && path.flows.top().end <= end) {  // those that end together
    const int f = path.flows.top().flow;
    path.flows.pop();
    Flow& x = flows_[static_cast<size_t>(f)];
    post(now_ + x.latency, Call{std::move(x.done), x.pending});  // still counted: its callback is to come
    x.done = nullptr;
    free_flows_.push_back(f);
    --active_;
  }
  path.moved = true;
  touch(path);
  if (path.flows.empty()) {  // off its bundles, and free for another list of uses
    assert(path.marks.empty());
    for (size_t u = 0; u < path.parts.size(); ++u) {
      Bundle& l = bundles_[static_cast<size_t>(path.parts[u].link)];
      const uint32_t at = path.pos[u];
      l.paths[at] = l.paths.back();
      l.paths.pop_back();
      if (at < l.paths.size()) {
        const OnBundle& o = l.paths[at];
        paths_[static_cast<size_t>(o.path)].pos[o.use] = at;
      }
    }
    unindex(p);
    free_paths_.push_back(p);
  }
}

void Network::recompute() {
  ++fills_;
  // A link that froze a path inside below the rate of one outside couples
  // them: it is filled from as the dirty links are, until no link does.
  refilled_.clear();
  while (!fill()) {
    refilled_.insert(refilled_.end(), comp_paths_.begin(), comp_paths_.end());
    for (const auto& [l, level] : edges_filled_) dirty_.push_back(l);
  }
  dirty_.clear();
  // A path whose rate and first flow to end hold keeps its drain event; one
  // that an earlier try refilled but the last left out keeps the rate it got
  // there. Its old rate becomes this one, so a path on both lists (or met by
  // several tries) is rescheduled once.
  for (const std::vector<int>* v : {&comp_paths_, &refilled_})
    for (int p : *v) {
      Path& x = paths_[static_cast<size_t>(p)];
      if (x.rate == x.old_rate && !x.moved) continue;
      x.old_rate = x.rate;
      x.moved = false;
      if (x.flows.empty()) {
        unschedule(p);
        continue;
      }
      reschedule(p);
    }
}

bool Network::higher(int a, int b) const {
  const Bundle& x = bundles_[static_cast<size_t>(a)];
  const Bundle& y = bundles_[static_cast<size_t>(b)];
  return x.key != y.key ? x.key > y.key : a > b;
}

void Network::heap_place(size_t i, int l) {
  heap_[i] = l;
  bundles_[static_cast<size_t>(l)].at = static_cast<uint32_t>(i);
}

void Network::sift_up(size_t i) {
  const int l = heap_[i];
  while (i > 0 && higher(heap_[(i - 1) / 2], l)) {
    heap_place(i, heap_[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  heap_place(i, l);
}

void Network::sift_down(size_t i) {
  const int l = heap_[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= heap_.size()) break;
    if (c + 1 < heap_.size() && higher(heap_[c], heap_[c + 1])) ++c;
    if (!higher(l, heap_[c])) break;
    heap_place(i, heap_[c]);
    i = c;
  }
  heap_place(i, l);
}

void Network::take_out(size_t i) {
  bundles_[static_cast<size_t>(heap_[i])].at = kOut;
  const int last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;
  heap_place(i, last);
  if (scan_) return;
  sift_up(i);
  sift_down(bundles_[static_cast<size_t>(last)].at);
}

int Network::least() const {
  int l = heap_.front();
  for (size_t i = 1; i < heap_.size(); ++i)
    if (higher(l, heap_[i])) l = heap_[i];
  return l;
}

// Max-min rates change only where a link's flows changed, and spread from
// there only through links that bound a flow (its bottleneck): a link with
// room to spare couples no rates. So the filling takes the paths reachable
// from the dirty links through bottlenecks; their other links (edges) enter
// with the capacity the paths outside leave them, whose rates hold. That is
// the whole component's answer unless an edge link filled below the rate of
// a path outside that shares it (by freezing a path inside, or with the
// acknowledgements of paths inside alone), which then is not a bottleneck
// of its own: the filling is redone with that link among the dirty ones
// (recompute). A bundle of links fills as one link (network.h), so "link"
// below means a bundle.
bool Network::fill() {
  ++epoch_;
  comp_bundles_.clear();
  comp_paths_.clear();
  edge_bundles_.clear();
  edges_filled_.clear();
  for (int l : dirty_)
    if (Met& m = met_[static_cast<size_t>(l)]; m.epoch != epoch_) {
      m.epoch = epoch_;
      m.edge = false;
      comp_bundles_.push_back(l);
    }
  // Each link's weights are summed as its paths are met, in its list's order.
  for (size_t i = 0; i < comp_bundles_.size(); ++i) {
    Bundle& k = bundles_[static_cast<size_t>(comp_bundles_[i])];
    k.left = k.cap;
    k.weights = 0;
    for (const OnBundle& o : k.paths) {
      Path& x = paths_[static_cast<size_t>(o.path)];
      k.weights += o.weight * static_cast<double>(x.flows.size());
      if (x.epoch == epoch_) continue;
      x.epoch = epoch_;
      comp_paths_.push_back(o.path);
      for (const Use& use : x.parts) {
        Met& m = met_[static_cast<size_t>(use.link)];
        if (m.epoch == epoch_) continue;
        m.epoch = epoch_;
        m.edge = !m.bottleneck;
        (m.edge ? edge_bundles_ : comp_bundles_).push_back(use.link);
      }
    }
  }
  // An edge link: what the paths outside leave of it, over the inside's weights.
  for (int l : edge_bundles_) {
    Bundle& k = bundles_[static_cast<size_t>(l)];
    k.left = k.cap;
    k.weights = 0;
    for (const OnBundle& o : k.paths) {
      const Path& x = paths_[static_cast<size_t>(o.path)];
      const double w = o.weight * static_cast<double>(x.flows.size());
      if (x.epoch == epoch_) k.weights += w;
      else k.left -= w * x.rate;
    }
  }
  // Bytes sent at the old rates, until now (once per recomputation).
  for (int p : comp_paths_) {
    Path& x = paths_[static_cast<size_t>(p)];
    if (x.fill != fills_) {
      x.fill = fills_;
      advance(x);
      x.old_rate = x.rate;
    }
    x.frozen = false;
  }
  // Progressive filling: every unfrozen flow's rate rises alike until a
  // link fills; that link's flows freeze at that rate. A link's level is
  // its capacity left over its unfrozen flows' weights. Freezing flows at
  // the least level raises their other links' levels (or, by rounding,
  // lowers them by an ulp), so a link's key in the heap moves up only
  // where its level fell below it; a link at the top below its level
  // sinks back with that level, and one with no weight left leaves. The
  // order, and every rate, is that of keeping each link's key at its level.
  heap_.clear();
  for (const std::vector<int>* v : {&comp_bundles_, &edge_bundles_})
    for (int l : *v) {
      Bundle& k = bundles_[static_cast<size_t>(l)];
      met_[static_cast<size_t>(l)].bottleneck = false;
      k.key = k.left / k.weights;
      k.at = kOut;
      if (k.weights > kTiny) {
        k.at = static_cast<uint32_t>(heap_.size());
        heap_.push_back(l);
      }
    }
  scan_ = heap_.size() <= kScan;
  if (!scan_)
    for (size_t i = heap_.size() / 2; i-- > 0;) sift_down(i);
  while (!heap_.empty()) {
    const int top = scan_ ? least() : heap_.front();
    Bundle& k = bundles_[static_cast<size_t>(top)];
    if (const double now = k.left / k.weights; now > k.key) {
      assert(!scan_);  // a scan keeps every key at its level
      k.key = now;
      sift_down(0);
      continue;
    }
    take_out(k.at);  // filled
    const double level = std::max(0.0, k.key);
    k.key = -std::numeric_limits<double>::infinity();
    Met& met = met_[static_cast<size_t>(top)];
    for (const OnBundle& o : k.paths) {
      if (!o.limits) continue;
      Path& x = paths_[static_cast<size_t>(o.path)];
      if (x.epoch != epoch_ || x.frozen) continue;
      x.frozen = true;
      x.rate = level;
      met.bottleneck = true;
      const double n = static_cast<double>(x.flows.size());
      for (const Use& use : x.parts) {
        Bundle& m = bundles_[static_cast<size_t>(use.link)];
        m.left -= use.weight * n * level;
        m.weights -= use.weight * n;
        if (m.at == kOut) continue;
        if (m.weights <= kTiny) {
          take_out(m.at);  // nothing of it left to fill
        } else if (const double now = m.left / m.weights; now < m.key || scan_) {
          m.key = now;
          if (!scan_) sift_up(m.at);
        }
      }
    }
    if (met.edge) edges_filled_.emplace_back(top, level);
  }
  // A path outside above the level at which an edge link filled would have
  // to yield there: that link couples them after all. So does one whose
  // acknowledgements there run above that level: filling every flow, they
  // take no more of the link than its level when it fills, where here the
  // path outside pays its whole rate.
  const auto couples = [&](const std::pair<int, double>& e) {
    for (const OnBundle& o : bundles_[static_cast<size_t>(e.first)].paths) {
      const Path& x = paths_[static_cast<size_t>(o.path)];
      if (x.epoch != epoch_ && x.rate > e.second * (1 + 1e-9) + kTiny) return true;
    }
    return false;
  };
  edges_filled_.erase(std::remove_if(edges_filled_.begin(), edges_filled_.end(), std::not_fn(couples)),
                      edges_filled_.end());
  return edges_filled_.empty();
}

double Network::next(bool& drain) const {
  const bool drains = !due_.empty(), calls = !events_.empty();
  const Due* d = drains ? &due_[0] : nullptr;
  drain = drains && (!calls || (d->t != events_.top().t ? d->t < events_.top().t : d->seq < events_.top().seq));
  return drain ? d->t : calls ? events_.top().t : std::numeric_limits<double>::infinity();
}

void Network::run(const Callback& tick) { run_to(std::numeric_limits<double>::infinity(), tick); }

void Network::run_until(double t_ns) {
  run_to(t_ns, {});
  now_ = std::max(now_, t_ns);
}

double Network::next_event() {
  bool drain;
  const double t = next(drain);
  if (dirty_.empty() || t <= now_) return t;
  recompute();  // the instant is over: drains move with the rates
  return next(drain);
}

void Network::run_to(double limit, const Callback& tick) {
  for (uint64_t events = 1;; ++events) {
    if (tick && events % kTickEvents == 0) tick();
    bool drain_next;
    const double t = next(drain_next);
    if (!dirty_.empty() && t > now_) {  // the instant is over (or nothing is left): its rates
      recompute();
      continue;
    }
    if (t > limit || t == std::numeric_limits<double>::infinity()) return;
    now_ = std::max(now_, t);
    if (drain_next) {
      const int p = due_[0].path;
      unschedule(p);
      drain(p);
    } else {
      const size_t k = events_.top().call;
      events_.pop();
      Call c = std::move(calls_[k]);
      calls_[k] = Call{};
      free_calls_.push_back(static_cast<int>(k));
      if (c.pending) --*c.pending;
      c.f();
    }
  }
}

}  // namespace incsim::flow
