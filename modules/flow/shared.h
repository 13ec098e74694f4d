#pragma once
// Programs that run at once on one flow network (docs/flow.md, "Collectives
// at once"): the graph every run routes on and the network whose first
// links are the graph's, and what a run of an executor sends its flows on,
// a network of its own or that one. Plain C++, no SystemC.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "flow/executor.h"
#include "flow/graph.h"
#include "flow/network.h"

namespace incsim::flow {

// A network that runs share, each simulated as flows only while it shares
// a link: a run whose links (those of its run alone) no run in flight uses
// takes its time alone, with nothing simulated, as max-min fairness couples
// rates only through shared links; a run that meets one in flight runs as
// flows, and so does each run alone it meets, replayed from its start on a
// replica of the network (Network::replica, adopt), so that from then on
// they share their links max-min fairly.
class SharedNetwork {
 public:
  explicit SharedNetwork(const FlowMachine& m) : graph(m, every_gpu_link(*m.t)), busy_(2 * m.t->links().size()), mark_(busy_.size()) {
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
  // Starts a message of `bytes` of e's program (made on this network) at
  // the network's now; `alone` is its run alone (e.run), whose time it
  // takes if it meets no other run and whose links say which it may meet.
  // `done` gets its result (no links), from inside the network's events:
  // it must not start another run.
  void start(Executor& e, uint64_t bytes, const Executor::Result& alone, Executor::Done done);
  // Frees what the runs that are over left behind.
  void sweep();
  // Runs started; those that ran as flows because they met another, their
  // times alone summed, and their times as they ran (ns).
  uint64_t runs() const { return started_; }
  uint64_t ran_as_flows() const { return as_flows_; }
  double met_alone_ns() const { return met_alone_ns_; }
  double met_ns() const { return met_ns_; }

  FlowGraph graph;
  Network net;
  // [GPU endpoint]: the link of its NVSwitch ports' reduction table entries
  // that its reducing reads cross (CoresFlows), one for every run on the
  // network, as the tables are the ports', whatever the collective.
  std::map<int, int> table_links;

 private:
  struct Run {
    Executor* e = nullptr;
    uint64_t bytes = 0;
    double began = 0;
    std::vector<int> links;  // the graph's link directions of its run alone
    Executor::Result alone;  // without its links (done's result)
    Executor::Done done;
    std::unique_ptr<Executor::Running> flows;  // while it runs as flows
    bool over = false;
    uint64_t pending = 0;  // its end as alone, still to come
  };
  // Run r runs as flows on the network: replayed from its start if it began before now.
  void as_flows(int r);
  void end(int r, const Executor::Result& res);
  std::deque<Run> runs_;  // a deque: the network holds pointers to their pending counts
  std::vector<int> free_runs_, live_;
  std::vector<int> busy_;  // [link direction]: runs in flight over it
  std::vector<char> mark_;  // [link direction]: start's scratch, a run's links
  uint64_t started_ = 0, as_flows_ = 0;
  double met_alone_ns_ = 0, met_ns_ = 0;
};

// The network a run's flows and callbacks go on, and what it has left there.
class RunFlows : public Executor::Running {
 public:
  // On `on` (a shared network, or a replica of one), or, without, on a
  // network of its own with `graph`'s links.
  RunFlows(Network* on, const FlowGraph& graph) : net_(on ? on : &own_), shared_(on != nullptr), began_(net_->now()) {
    if (!on)
      for (double c : graph.capacities()) own_.add_link(c);
  }
  bool idle() const override { return pending_ == 0; }
  void move_to(Network& n) override { net_ = &n; }

 protected:
  void after(double delay_ns, Network::Callback f) { net_->after(delay_ns, std::move(f), &pending_); }
  void at(double t_ns, Network::Callback f) { net_->at(t_ns, std::move(f), &pending_); }
  void flow(std::vector<Network::Use> uses, double bytes, double latency_ns, Network::Callback done,
            std::vector<Network::Mark> marks = {}) {
    ++flows_;
    net_->start(std::move(uses), bytes, latency_ns, std::move(done), &pending_, std::move(marks));
  }
  // The result's counts, its time from its start to `end_ns`; the links it
  // used and their bytes only on a network of its own (canon, mean: FlowGraph::carried).
  Executor::Result result(double end_ns, uint64_t transfers, const FlowGraph& graph,
                          const std::vector<int>* canon = nullptr, const std::vector<double>* mean = nullptr) const {
    Executor::Result out;
    out.time_ns = end_ns - began_;
    out.flows = flows_;
    out.most_active = net_->most_active();
    out.transfers = transfers;
    if (!shared_) graph.carried(*net_, canon, mean, out.links, out.link_bytes);
    return out;
  }

  Network own_;
  Network* net_;
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
std::unique_ptr<Executor::Running> start_one_pass(E& e, uint64_t bytes, Network& on, Executor::Done done) {
  auto x = std::make_unique<R>(e, bytes, &on);
  x->begin([done = std::move(done)](Executor::Result r) {
    r.passes = r.simulated_passes = 1;
    done(r);
  });
  return x;
}

}  // namespace incsim::flow
