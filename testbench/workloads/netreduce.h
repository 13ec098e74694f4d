#pragma once
// NetReduce's jobs (docs/netreduce.md): all-reduce on an Ethernet rack of
// RoCE hosts, in the network (FPGA aggregator) or as a host ring, with real
// data, loss and retransmission; on the multi-GPU platform Parallel
// NetReduce and its baselines. One row per size: nccl-tests' columns, the
// appendix's model, goodput and the recovery counters.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithm.h"
#include "collectives/program.h"
#include "platforms/machine.h"
#include "platforms/netreduce_call.h"
#include "platforms/netreduce_job.h"
#include "workload.h"

namespace incsim::tb {

bool is_netreduce_platform(const std::string& platform);
// The ranks of a NetReduce job on the platform the options ask for (its
// hosts, or --ring's; multigpu: its GPUs), before anything is built.
int netreduce_ranks(const Options& o, Config& cfg);
// The shape and graph of the platform the options ask for: a file's, or a
// built-in one's from its flags (with its FPGAs if `in_network`).
std::pair<platforms::NetReduceShape, topo::Topology> netreduce_machine(const Options& o, bool in_network, Config& cfg);

// Also a GroupCollective: training's all-reduces on these machines
// (train.h) start its sizes one after another, each as its bucket is ready.
class NetReduceWorkload : public GroupCollective {
 public:
  // One job's part of a rack that several share (a jobs: list, jobs.h): the
  // machine, its shape, the job's hosts in ring order and its index.
  struct Share {
    platforms::Machine* machine;
    platforms::NetReduceShape shape;
    std::vector<int> hosts;
    int job;
  };
  // Alone (share null) it builds its platform. sizes: its message sizes
  // (training's buckets); null: --sizes.
  NetReduceWorkload(const Options& o, Config& cfg, const Share* share = nullptr,
                    const std::vector<uint64_t>* sizes = nullptr);
  ~NetReduceWorkload() override;

  // At --fidelity flow the machine is built for the job's set-up (its
  // connections, rules and aggregator arrays) and not run: none.
  platforms::Machine* machine() override { return flows_ ? nullptr : machine_; }
  platforms::NetReduceCall& call() const override { return *call_; }
  const std::vector<uint64_t>& sizes() const override { return sizes_; }
  const Options& options() const override { return opt_; }
  void print_header(std::ostream& os) const override;
  size_t points() const override { return sizes_.size(); }
  double point_weight(size_t i) const override { return static_cast<double>(sizes_[i]); }
  std::vector<Row> run_point(size_t i, Runner& run, std::ostream& notes) override;
  Row finish(size_t i, std::ostream& notes) override;
  void config_json(nlohmann::ordered_json& config) const override;
  void summary_json(nlohmann::ordered_json& top) const override;
  sc_core::sc_time default_stall_timeout() const override;
  std::string stall_cause() const override { return job_->stall_cause(); }
  void report_stall(std::ostream& os) const override;
  void trace(sc_core::sc_trace_file* tf) const override;
  void print(const std::string& what, std::ostream& os) const override;
  double done_fraction() const override;  // messages the hosts have handled, of all

  platforms::Machine& platform() { return *machine_; }  // tests: fault hooks on chosen links
  const platforms::Machine& platform() const { return *machine_; }
  const std::string& algorithm() const { return opt_.algorithm; }  // --algorithm, or the platform's default
  const platforms::NetReduceJob& job() const { return *job_; }

 private:
  collectives::Program make_program(const collectives::Algorithm& algorithm, Config& cfg) const;
  Options opt_;
  Config& cfg_;
  bool multigpu_ = false;
  bool flows_ = false;  // --fidelity flow
  std::vector<uint64_t> sizes_;
  elements::DType dtype_;
  elements::RedOp redop_;
  std::unique_ptr<platforms::Machine> own_machine_;  // alone; in a jobs run the run's
  platforms::Machine* machine_ = nullptr;
  std::unique_ptr<platforms::NetReduceJob> job_;
  uint32_t msg_len_asked_ = 0;  // netreduce.msg_len, before the aggregator memory shortened it
  std::string algorithm_;               // the algorithm (of a file: the one it is, or does)
  collectives::Program file_program_;   // --algorithm FILE
  std::unique_ptr<platforms::NetReduceCall> call_;  // the hosts' program on the job
};

}  // namespace incsim::tb
