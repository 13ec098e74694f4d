#pragma once
// Programs that run at once on one flow network (docs/flow.md, "Collectives
// at once"): the graph every run routes on and the network whose first
// links are the graph's, and what a run of an executor sends its flows on,
// a network of its own or that one. Plain C++, no SystemC.
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "collectives/program.h"
#include "flow/executor.h"
#include "flow/graph.h"
#include "flow/network.h"

namespace incsim::flow {

// Rank r's operations that wait for each of its operations, in the order of
// their indices: one table for the rank, not a vector per operation (a
// cluster's rank has thousands).
class Dependents {
 public:
  Dependents() = default;
  Dependents(const collectives::Program& p, int r) {
    const int n = p.op_count(r);
    start_.assign(static_cast<size_t>(n) + 1, 0);
    for (int i = 0; i < n; ++i) {
      const collectives::Operation& o = p.op(r, i);
      for (uint32_t d = 0; d < o.dep_count; ++d) ++start_[p.deps_of(o)[d] + 1];
    }
    for (size_t i = 1; i < start_.size(); ++i) start_[i] += start_[i - 1];
    ops_.resize(start_.back());
    std::vector<uint32_t> at(start_.begin(), start_.end() - 1);
    for (int i = 0; i < n; ++i) {
      const collectives::Operation& o = p.op(r, i);
      for (uint32_t d = 0; d < o.dep_count; ++d) ops_[at[p.deps_of(o)[d]]++] = i;
    }
  }
  struct Span {
    const int *b, *e;
    const int* begin() const { return b; }
    const int* end() const { return e; }
  };
  // The operations that wait for operation i.
  Span of(int i) const {
    const int* d = ops_.data();
    return {d + start_[static_cast<size_t>(i)], d + start_[static_cast<size_t>(i) + 1]};
  }

 private:
  std::vector<uint32_t> start_;
  std::vector<int> ops_;
};

// A first-in, first-out queue on one vector, which allocates nothing until
// something is queued (std::deque allocates a block for every queue, and a
// cluster's run has a queue per rank and channel) and reuses its storage
// once it empties. The front's place stays the front until popped, so its
// element may be moved out and run while others are queued behind it.
template <class T>
class Fifo {
 public:
  bool empty() const { return head_ == v_.size(); }
  size_t size() const { return v_.size() - head_; }
  T& front() { return v_[head_]; }
  const T& back() const { return v_.back(); }
  void push_back(T x) { v_.push_back(std::move(x)); }
  void pop_front() {
    v_[head_] = T{};
    if (++head_ == v_.size()) {
      v_.clear();
      head_ = 0;
    } else if (head_ >= 64 && 2 * head_ >= v_.size()) {  // half is popped: drop it
      v_.erase(v_.begin(), v_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

 private:
  std::vector<T> v_;
  size_t head_ = 0;
};

struct SharedNetwork {
  explicit SharedNetwork(const FlowMachine& m) : graph(m, every_gpu_link(*m.t)) {
    for (double c : graph.capacities()) net.add_link(c);
  }
  // Every (GPU node, neighbour) pair: a GPU's links all stay links of their
  // own, as a program's connections pin them (FlowGraph), so that one graph
  // serves every run; what spreads over them takes an even share of each,
  // at the rates one merged link would give.
  static std::set<std::pair<int, int>> every_gpu_link(const topo::Topology& t) {
    std::set<std::pair<int, int>> pinned;
    for (const topo::Link& l : t.links())
      for (const auto& [a, b] : {std::pair{l.a.node, l.b.node}, std::pair{l.b.node, l.a.node}})
        if (t.node(a).kind == topo::NodeKind::Endpoint) pinned.emplace(a, b);
    return pinned;
  }
  FlowGraph graph;
  Network net;
  // [GPU endpoint]: the link of its NVSwitch ports' reduction table entries
  // that its reducing reads cross (CoresFlows), one for every run on the
  // network, as the tables are the ports', whatever the collective.
  std::map<int, int> table_links;
};

// The network a run's flows and callbacks go on, and what it has left there.
class RunFlows : public Executor::Running {
 public:
  // On `shared`, or, without, on a network of its own with `graph`'s links.
  RunFlows(SharedNetwork* shared, const FlowGraph& graph)
      : net_(shared ? shared->net : own_), shared_(shared != nullptr), began_(net_.now()) {
    if (!shared)
      for (double c : graph.capacities()) own_.add_link(c);
  }
  bool idle() const override { return pending_ == 0; }

 protected:
  void after(double delay_ns, Network::Callback f) { net_.after(delay_ns, std::move(f), &pending_); }
  void at(double t_ns, Network::Callback f) { net_.at(t_ns, std::move(f), &pending_); }
  void flow(std::vector<Network::Use> uses, double bytes, double latency_ns, Network::Callback done,
            std::vector<Network::Mark> marks = {}) {
    ++flows_;
    net_.start(std::move(uses), bytes, latency_ns, std::move(done), &pending_, std::move(marks));
  }
  // The result's counts, its time from its start to `end_ns`; the links it
  // used only on a network of its own.
  Executor::Result result(double end_ns, uint64_t transfers, const FlowGraph& graph) const {
    Executor::Result out;
    out.time_ns = end_ns - began_;
    out.flows = flows_;
    out.most_active = net_.most_active();
    out.transfers = transfers;
    if (!shared_) out.links = graph.used(net_);
    return out;
  }

  Network own_;
  Network& net_;
  const bool shared_;
  const double began_;

 private:
  uint64_t pending_ = 0, flows_ = 0;
};

// One message of `bytes` run by an executor whose whole program is one pass
// (the copy engines', the RoCE hosts'), through its run R (a RunFlows with
// go(tick), begin(done), now() and done_share()): alone, with progress,
// and started on the network it shares.
template <class R, class E>
Executor::Result run_one_pass(E& e, uint64_t bytes, const Executor::Progress& progress) {
  R x(e, bytes, nullptr);
  const std::function<double()> fraction = [&] { return x.done_share(); };
  Executor::Result r = x.go(progress ? Network::Callback([&] { progress(fraction, x.now()); }) : Network::Callback());
  r.passes = r.simulated_passes = 1;
  return r;
}
template <class R, class E>
std::unique_ptr<Executor::Running> start_one_pass(E& e, uint64_t bytes, SharedNetwork* shared, Executor::Done done) {
  auto x = std::make_unique<R>(e, bytes, shared);
  x->begin([done = std::move(done)](Executor::Result r) {
    r.passes = r.simulated_passes = 1;
    done(r);
  });
  return x;
}

}  // namespace incsim::flow
