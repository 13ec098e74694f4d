#pragma once
// Several jobs at once on one machine: a config file's `jobs:` list, each
// job a collective on its own GPUs with its own sizes and start time. The
// workload builds one GpuMachine and gives each job a share of it (its GPUs;
// the engines hand out address windows, memory and streams as the
// collectives run); the jobs share the switches, their reduction tables and
// the links between them. Point i starts every job's i-th size, each at its
// start_us after the point begins, and ends when all have finished: one row
// per job, with a `job` column, its time alone on the same machine and its
// slowdown. Before the jobs run together, each distinct job (its collective,
// algorithm, GPUs and size) runs by itself on the machine once per run.
// On NetReduce's rack the jobs are all-reduces on rings of its hosts, which
// share the switch and the FPGA (its CLT and aggregator memory). At
// --fidelity flow no block is built: the jobs' collectives run as flows on
// one flow network of the platform, which they share (docs/flow.md).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "collective_workload.h"
#include "platforms/flow_call.h"
#include "core/process.h"
#include "platforms/netreduce_machines.h"
#include "workload.h"

namespace incsim::tb {

class JobsWorkload : public Workload {
 public:
  JobsWorkload(const Options& o, Config& cfg);

  platforms::Machine* machine() override { return machine_.get(); }
  // At flow: the jobs' flows' time passed (no machine counts packets).
  uint64_t progress() override;
  void print_header(std::ostream& os) const override;
  size_t points() const override;
  double point_weight(size_t i) const override;  // the largest job's size
  std::vector<Row> run_point(size_t i, Runner& run, std::ostream& notes) override;
  void config_json(nlohmann::ordered_json& config) const override;
  sc_core::sc_time default_stall_timeout() const override;
  double done_fraction() const override;
  void trace(sc_core::sc_trace_file* tf) const override;

 private:
  void launch();  // starts the jobs whose time has come
  void share_tables();
  void contention(size_t j, Row& r, std::ostream& notes) const;
  // Job j's point i by itself, nothing else running: its time, from the
  // cache if the same job ran alone before; `wrong` gets the elements that
  // run got wrong (0 from the cache).
  double alone_us(size_t j, size_t i, Runner& run, uint64_t& wrong);
  void drain(Runner& run, const std::string& what);
  // Job j's workload on its share of the machine (CollectiveWorkload, or NetReduceWorkload on the rack).
  std::unique_ptr<GroupCollective> make_job(size_t j, const Options& oj, Config& cfg) const;
  Options opt_;
  std::unique_ptr<platforms::Machine> machine_;
  platforms::GpuMachine* gpu_ = nullptr;  // machine_ on a GPU platform; null on NetReduce's rack and at flow
  std::unique_ptr<platforms::FlowPlatform> flow_;    // at --fidelity flow, instead of machine_
  platforms::NetReduceShape rack_;        // NetReduce's rack
  std::vector<std::unique_ptr<GroupCollective>> jobs_;  // in the order of the list
  std::vector<bool> tables_;  // [job]: its algorithm reduces in the switches' tables
  std::vector<std::string> fallback_;  // [job]: why it runs the ring instead, or empty
  // The running point: when it began, whether each job started, how many
  // still run or wait to start, how many started and run, and when the next starts.
  size_t point_ = 0;
  sc_core::sc_time point_start_;
  std::vector<bool> started_;
  int running_ = 0, active_ = 0;
  sc_core::sc_time next_start_;
  std::vector<std::optional<Row>> ended_;  // each job's row and notes, taken as it ends
  std::vector<std::string> notes_;
  Wakeup launch_;
  // Times alone, us, by collective, algorithm, GPUs and size.
  std::map<std::tuple<std::string, std::string, std::vector<int>, uint64_t>, double> alone_;
};

}  // namespace incsim::tb
