#pragma once
// What the training workloads share (train.h's iterations of a model,
// chakra.h's Chakra traces; docs/training.md): --algorithm and --baseline
// run one after the other on one machine, every collective a GroupCollective
// on its group's share of it (a CollectiveWorkload on a GPU fabric; on
// NetReduce's Ethernet machines the NetReduceWorkload, whose job is the
// whole machine's); a row per algorithm and iteration after the
// warm-up, the speed-up over the baseline; the last iteration as a Chrome
// trace-event timeline (--timeline).
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "collective_workload.h"
#include "platforms/flow_call.h"
#include "flow/graph.h"
#include "netreduce.h"
#include "training/graph.h"
#include "workload.h"

namespace incsim::tb {

class TrainingWorkload : public Workload {
 public:
  platforms::Machine* machine() override;
  size_t points() const override { return opt_.iterations; }
  // The warm-up iterations (before the first point), then one iteration of
  // each algorithm; #wrong of the warm-up counts in the first row.
  std::vector<Row> run_point(size_t i, Runner& run, std::ostream& notes) override;
  // Over every collective group_collective() made.
  sc_core::sc_time default_stall_timeout() const override;
  void trace(sc_core::sc_trace_file* tf) const override;
  bool writes_timeline() const override { return true; }
  std::string long_run_hint() const override;
  // At --fidelity flow: the kernels' time done and the collectives' flows'.
  uint64_t progress() override;

  // One span of the timeline: of algorithm a, on `track`, from start to end.
  struct Span {
    int algorithm;
    int track;
    std::string name;
    double start_us, end_us;
  };
  const std::vector<Span>& spans() const { return spans_; }
  // The links' utilisation from ts on (0 after a collective ends).
  struct Counter {
    int algorithm;
    double ts, mean, busiest;
  };

 protected:
  explicit TrainingWorkload(const Options& o) : opt_(o) {}
  // --compute, or the platform's GPU's model (platforms::default_compute).
  std::string compute_model() const {
    return opt_.compute.empty() ? platforms::default_compute(opt_.platform, opt_.node) : opt_.compute;
  }
  // --algorithm (the all-reduce's default when none), then --baseline.
  void choose_algorithms();
  // The one machine of graph t every group shares, for the algorithms
  // `used`: platform_, or at --fidelity flow flow_.
  void build_machine(const topo::Topology& t, Config& cfg, const std::vector<std::string>& used);
  // The header line that says how --fidelity flow runs the iteration; empty at packet level.
  std::string fidelity_note() const;
  // A row's #wrong: `wrong`, or "-" where no elements were simulated.
  Value wrong_value(uint64_t wrong) const { return flow_ ? Value(std::string("-")) : Value(wrong); }
  // One iteration of algorithm a (an index into algorithms_); its row.
  virtual Row iterate(size_t a, uint32_t iteration, Runner& run) = 0;
  // The timeline's tracks (threads), by index, the same for every algorithm.
  virtual std::vector<std::string> timeline_tracks() const = 0;

  // A collective of algorithms_[a] (or `algorithm` when given) on the GPUs
  // `gpus` of platform_, in rank order, over `sizes`; `what` names the group
  // in its refusal. On NetReduce's Ethernet platforms (no platform_) the
  // first builds the machine, whose hosts are all its ranks.
  std::unique_ptr<GroupCollective> group_collective(Config& cfg, size_t a, const std::vector<int>& gpus,
                                                       const std::vector<uint64_t>& sizes, const std::string& what,
                                                       const std::string& collective = "allreduce",
                                                       const std::string& algorithm = "");
  // The first error of algorithm a's collectives, in the order they were made.
  std::string collective_error(size_t a) const;
  // The collective's header lines but its first, as "#   who: ..."; a
  // "# fidelity:" line only if `shown` (the header's so far) lacks it.
  static void print_collective_lines(std::ostream& os, const std::string& who, const GroupCollective& c,
                                     std::set<std::string>& shown);
  // Each GPU's compute engine, by GPU index (on an Ethernet machine: its
  // hosts' in ring order).
  std::vector<gpu::ComputeEngine*> compute_engines() const;
  // The machine's GPUs (on an Ethernet machine: its hosts, not its FPGAs).
  int machine_gpus() const {
    return ethernet_ ? ethernet_->job().hosts() : static_cast<int>(topology().endpoints().size());
  }
  // The machine's graph.
  const topo::Topology& topology() const {
    return platform_ ? platform_->topology() : flow_ ? flow_->graph : ethernet_->platform().topology();
  }
  // train.contention: with sm, every GPU's compute runs on `sms` SMs (the
  // compute model's; 0: none to share), of which a collective on its cores
  // holds one per thread block while it runs.
  void contend(Config& cfg, int sms);
  // Point i of coll starts now; while it runs its thread blocks hold SMs of
  // its GPUs' compute (train.contention), given back before on_done.
  void start_collective(GroupCollective& coll, size_t i, std::function<void()> on_done);
  // The progress line's measure (done_fraction), since begin_comm_count():
  // the bytes of the collectives start_collective ran that ended, and each
  // running one's own fraction of its bytes, of comm_bytes_ (-1 if none).
  // The wall clock goes to the collectives: a kernel is one timed wait.
  double comm_fraction() const;
  void begin_comm_count() {
    bytes_done_ = 0;
    moving_.clear();
  }
  // Sets comm_bytes_: over `graph`'s communications (a collective's first
  // member, a transfer's send; a barrier moves nothing), bytes_of each.
  void count_comm_bytes(const training::Graph& graph,
                        const std::function<uint64_t(const training::Graph::Node&)>& bytes_of);
  // The links' utilisation while a collective of algorithm a ran, from
  // `start` until now (its link bytes, platforms::Measures): the mean over
  // the links that carried any of it and the busiest (other collectives'
  // traffic meanwhile too), then 0, when the running iteration is recorded.
  void count_utilisation(size_t a, const std::vector<uint64_t>& link_bytes, const sc_core::sc_time& start);
  // "; ..." for the header's compute line when collectives take SMs, else "".
  std::string contention_note() const;
  // A span on `track` that ends now and took `took`, when the running
  // iteration is recorded.
  void span(int track, std::string name, const sc_core::sc_time& took);
  bool recording() const { return recording_ >= 0; }

  Options opt_;
  std::unique_ptr<platforms::GpuMachine> platform_;  // null on NetReduce's Ethernet platforms and at --fidelity flow
  // At --fidelity flow, no block built: each GPU's compute engine on the flow platform.
  std::unique_ptr<platforms::FlowPlatform> flow_;
  NetReduceWorkload* ethernet_ = nullptr;             // there: the collective whose machine it is
  std::vector<std::string> algorithms_;  // --algorithm, then --baseline
  std::vector<Counter> counters_;

 private:
  void write_timeline() const;
  // At --fidelity flow: the note and JSON detail on algorithm a's row of
  // how many collectives ran beside another group's on a shared link.
  void note_overlap(size_t a, Row& row, std::ostream& notes) const;
  std::vector<std::vector<GroupCollective*>> made_;  // [algorithm]: by group_collective()
  std::vector<Span> spans_;
  int sms_ = 0;  // each GPU's, shared with the collectives on its cores; 0: no contention
  int recording_ = -1;  // the algorithm whose iteration is recorded, -1: none
  double comm_bytes_ = 0, bytes_done_ = 0;
  // The collectives running: their bytes and the thread blocks they hold on their GPUs' SMs.
  struct Moving {
    const GroupCollective* coll;
    double bytes;
    int blocks;
  };
  std::vector<Moving> moving_;
};

sc_core::sc_time seconds(double s);
double us(const sc_core::sc_time& t);

}  // namespace incsim::tb
