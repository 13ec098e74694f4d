// NetReduce's Ethernet platforms (ASPLOS 2023): its ring of RoCE hosts
// whose packets the switch's FPGA sums in flight, the hosts' ring it is
// measured against, and on machines of several GPUs the hierarchical
// all-reduces of §3.4. The hosts' RoCE NICs run their programs.
#include "collectives/algorithms/common.h"
#include "collectives/program_synthesis.h"

namespace incsim::collectives::builtin {

namespace {

class OnHosts : public Algorithm {
 public:
  // in_network: the FPGA aggregates; make: the program for the ring's
  // ranks, grouped by machine (a rack's hosts: one machine each); masters:
  // the machines' rings, then one across their masters.
  using Make = Program (*)(int ranks, int machines, int per_machine);
  OnHosts(Info info, bool in_network, Make make, bool masters = false)
      : Algorithm(info), in_network_(in_network), masters_(masters), make_(make) {}
  bool in_switches() const override { return in_network_; }
  bool masters_ring() const override { return masters_; }
  Synthesis synthesize(const Site& s) const override {
    const int machines = s.cluster() ? static_cast<int>(s.nodes.size()) : 1;
    Synthesis out;
    out.program = make_(s.ranks(), machines, s.ranks() / machines);
    return out;
  }

 private:
  bool in_network_, masters_;
  Make make_;
};

}  // namespace

INCSIM_ALGORITHMS(netreduce) {
  r.add(std::make_unique<OnHosts>(
      Algorithm::Info{"netreduce", "allreduce", "allreduce", Family::Rack, "rack, spineleaf",
                      "the hosts' RoCE NICs and the switches' FPGA aggregators",
                      "a ring of hosts whose packets the switch's FPGA sums in flight (NetReduce §3)", 220},
      true, [](int ranks, int, int) { return netreduce_program(ranks); }));
  r.add(std::make_unique<OnHosts>(
      Algorithm::Info{"ring", "allreduce", "", Family::Rack, "rack, spineleaf", "the hosts' RoCE NICs",
                      "the hosts' ring all-reduce over RDMA, NetReduce's baseline (NetReduce §5)", 230},
      false, [](int ranks, int, int) { return roce_ring_program(ranks); }));
  r.add(std::make_unique<OnHosts>(
      Algorithm::Info{"pnetreduce", "allreduce", "allreduce", Family::MultiGpu, "multigpu",
                      "the GPUs' RoCE endpoints and the FPGA aggregator",
                      "rings inside each machine, NetReduce across machines (Parallel NetReduce, NetReduce §3.4, Fig. "
                      "6B)",
                      240},
      true, [](int, int machines, int per_machine) { return parallel_netreduce_program(machines, per_machine); }));
  r.add(std::make_unique<OnHosts>(
      Algorithm::Info{"flatring", "allreduce", "", Family::MultiGpu, "multigpu", "the GPUs' RoCE endpoints",
                      "one ring over every GPU of every machine (NetReduce §3.4)", 250},
      false, [](int ranks, int, int) { return roce_ring_program(ranks); }));
  r.add(std::make_unique<OnHosts>(
      Algorithm::Info{"tencent", "allreduce", "", Family::MultiGpu, "multigpu", "the GPUs' RoCE endpoints",
                      "machines' rings, the masters' ring across machines, then a broadcast down (NetReduce §3.4, "
                      "Fig. 6A)",
                      260},
      false, [](int, int machines, int per_machine) { return tencent_program(machines, per_machine); }, true));
}

}  // namespace incsim::collectives::builtin
