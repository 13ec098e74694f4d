#include "graph_runner.h"

#include <algorithm>
#include <utility>

namespace incsim::training {

using Kind = Graph::Kind;

GraphRunner::GraphRunner(const char* name, std::vector<gpu::ComputeEngine*> engines, Owner& owner)
    : engines_(std::move(engines)), owner_(owner) {
  spawn_method(name, [this] { launch(); }, wake_);
}

void GraphRunner::start(const Graph& graph) {
  graph_ = &graph;
  const size_t n = graph.nodes.size();
  parents_.resize(n);
  for (size_t i = 0; i < n; ++i) parents_[i] = graph.nodes[i].parents;
  left_ = n;
  stack_.clear();
  streams_.assign(graph.streams.size(), Stream{});
  for (size_t s = 0; s < graph.streams.size(); ++s) streams_[s].issued.assign(graph.streams[s], 0);
  sends_.assign(graph.keys, {});
  recvs_.assign(graph.keys, {});
  unclaimed_.assign(graph.keys, {});
  released_.clear();
  due_groups_.clear();
  due_links_.clear();
  mismatch_.reset();
  done_ = n == 0;
  if (done_) t_end_ = sc_core::sc_time_stamp();
  std::vector<uint32_t> roots;
  for (uint32_t i = 0; i < n; ++i)
    if (parents_[i] == 0) roots.push_back(i);
  for (uint32_t i : roots) issue(i);
}

void GraphRunner::issue(uint32_t i) {
  switch (graph_->nodes[i].kind) {
    case Kind::compute: queue(i); break;
    case Kind::collective: arrive(i); break;
    case Kind::send:
    case Kind::recv: post(i); break;
    case Kind::none: complete(i); break;
  }
}

// The node, then each node queued behind it whose other parents have ended.
void GraphRunner::queue(uint32_t i) {
  for (uint32_t k = i; k != Graph::kNone;) {
    const Graph::Node& n = graph_->nodes[k];
    gpu::ComputeEngine& engine = *engines_[n.rank];
    engine.run(static_cast<gpu::ComputeEngine::Phase>(n.phase), n.layer, sc_core::sc_time(n.seconds, sc_core::SC_SEC),
               [this, k, &engine] {
                 owner_.computed(k, engine.took());
                 complete(k);
               });
    const uint32_t next = n.next_on_engine;
    k = next != Graph::kNone && --parents_[next] == 0 ? next : Graph::kNone;
  }
}

// Nodes that do nothing end at once, so their children are visited here
// rather than by recursion.
void GraphRunner::complete(uint32_t i) {
  const size_t bottom = stack_.size();
  stack_.push_back(i);
  while (stack_.size() > bottom) {
    const uint32_t k = stack_.back();
    stack_.pop_back();
    --left_;
    for (uint32_t c : graph_->nodes[k].children)
      if (--parents_[c] == 0) {
        if (graph_->nodes[c].kind == Kind::none) stack_.push_back(c);
        else if (graph_->nodes[c].after_launch && ending_ > 0) released_.push_back(c);
        else issue(c);
      }
  }
  if (left_ > 0 || done_) return;
  done_ = true;
  t_end_ = sc_core::sc_time_stamp();
  stop();
}

// Back to the caller of sc_start: when the simulation runs (not while start() issues the roots).
void GraphRunner::stop() {
  if (sc_core::sc_get_status() == sc_core::SC_RUNNING) sc_core::sc_pause();
}

void GraphRunner::arrive(uint32_t i) {
  const Graph::Node& n = graph_->nodes[i];
  Stream& s = streams_[n.stream];
  const size_t k = s.issued[n.place]++;
  while (s.instances.size() <= k) s.instances.push_back({-1, -1, 0, std::vector<uint32_t>(s.issued.size())});
  Instance& in = s.instances[k];
  if (in.arrived > 0 && (in.op != n.op || in.size != n.size) && !mismatch_) {
    mismatch_ = Mismatch{i, k};
    stop();
  }
  in.op = n.op;
  in.size = n.size;
  in.nodes[n.place] = i;
  ++in.arrived;
  try_start(n.stream);
}

// A send and its receive pair by key, in the order each is posted. An
// eager send leaves at once, as ASTRA-sim's network API sends (sim_send
// schedules the chunk's arrival whether or not its receive was posted;
// CommonNetworkApi matches the two by tag, peers, size and order): it ends
// when its transfer has, and its receive then, or when posted if later.
// Otherwise the two start together once both are posted.
void GraphRunner::post(uint32_t i) {
  const Graph::Node& n = graph_->nodes[i];
  Stream& s = streams_[n.stream];
  const bool send = n.kind == Kind::send;
  std::deque<uint32_t>& waiting = (send ? recvs_ : sends_)[n.key];
  if (!send && graph_->eager_sends && !unclaimed_[n.key].empty()) {
    Instance& in = s.instances[unclaimed_[n.key].front()];
    unclaimed_[n.key].pop_front();
    if (in.landed) complete(i);
    else in.nodes[1] = i;
    return;
  }
  if (waiting.empty() && !(send && graph_->eager_sends)) {
    (send ? sends_ : recvs_)[n.key].push_back(i);
    return;
  }
  uint32_t other = Graph::kNone;
  if (!waiting.empty()) {
    other = waiting.front();
    waiting.pop_front();
  } else {
    unclaimed_[n.key].push_back(s.instances.size());
  }
  const uint32_t sender = send ? i : other, receiver = send ? other : i;
  s.link = true;
  s.instances.push_back({graph_->nodes[sender].op, graph_->nodes[sender].size, 2, {sender, receiver}});
  try_start(n.stream);
}

void GraphRunner::try_start(int s) {
  if (graph_->start == Graph::Start::at_once && streams_[s].ending == 0) start_now(s);
  else make_due(s);
}

void GraphRunner::make_due(int s) {
  if (graph_->start == Graph::Start::at_once) streams_[s].due = true;
  else (streams_[s].link ? due_links_ : due_groups_).push_back(s);
  wake_.after(sc_core::SC_ZERO_TIME);
}

void GraphRunner::start_now(int s) {
  Stream& run = streams_[s];
  if (run.busy || run.next == run.instances.size() ||
      run.instances[run.next].arrived < static_cast<int>(run.issued.size()))
    return;
  run.busy = true;
  run.start = sc_core::sc_time_stamp();
  const Instance& in = run.instances[run.next];
  owner_.began(s, in);
  if (in.op < 0) {  // a barrier, or no data: it ends once all have issued it
    end(s);
    return;
  }
  owner_.launch(s, in, [this, s] { end(s); });
}

void GraphRunner::end(int s) {
  Stream& run = streams_[s];
  run.instances[run.next].landed = true;
  const Instance in = run.instances[run.next];
  owner_.ended(s, in, sc_core::sc_time_stamp() - run.start);
  run.busy = false;
  ++run.next;
  ++run.ending, ++ending_;
  for (uint32_t node : in.nodes)
    if (node != Graph::kNone) complete(node);  // a transfer whose receive is not yet posted
  --run.ending, --ending_;
  // The next one from the launcher: this call may come from inside the collective.
  make_due(s);
}

void GraphRunner::launch() {
  wake_.fired();
  if (!graph_) return;
  // What they start may make more streams due.
  for (bool again = true; again;) {
    again = false;
    for (size_t s = 0; s < streams_.size(); ++s)
      if (streams_[s].due) {
        streams_[s].due = false;
        start_now(static_cast<int>(s));
        again = true;
      }
  }
  while (!due_groups_.empty() || !due_links_.empty()) {
    std::vector<int>& due = due_groups_.empty() ? due_links_ : due_groups_;
    const int s = due.back();
    due.pop_back();
    start_now(s);
  }
  std::sort(released_.begin(), released_.end());
  for (const uint32_t i : std::exchange(released_, {})) issue(i);
}

std::optional<GraphRunner::Missing> GraphRunner::missing_member() const {
  for (size_t s = 0; s < streams_.size(); ++s) {
    const Stream& run = streams_[s];
    if (run.busy || run.next == run.instances.size()) continue;
    const int arrived = run.instances[run.next].arrived;
    if (arrived == 0 || arrived == static_cast<int>(run.issued.size())) continue;
    for (size_t p = 0; p < run.issued.size(); ++p)
      if (run.issued[p] <= run.next) return Missing{static_cast<int>(s), run.next, static_cast<int>(p)};
  }
  return std::nullopt;
}

uint32_t GraphRunner::unmatched() const {
  for (size_t k = 0; k < sends_.size(); ++k) {
    if (!sends_[k].empty()) return sends_[k].front();
    if (!recvs_[k].empty()) return recvs_[k].front();
  }
  return Graph::kNone;
}

}  // namespace incsim::training
