#pragma once
// A Workload is what runs on a machine: a collective over a list of sizes,
// synthetic traffic over a list of loads, NetReduce's jobs, and next a
// training iteration or several jobs at once. The Experiment (experiment.h)
// gives it the options and the parameters, runs its points one after the
// other under the stall detector, and writes what it returns; the workload
// knows nothing of the command line, the writers or the stall detector.
//
// A workload is built in one step (its constructor): it reads its options
// and declares its parameters in the Config, elaborates its machine and
// programs the machine's engines. It may throw UserError for any bad input;
// nothing is simulated before run_point.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <systemc>

#include "core/config.h"
#include "options.h"
#include "platforms/machine.h"
#include "results.h"

namespace incsim::platforms {
class Call;
}  // namespace incsim::platforms
namespace incsim::gpu {
class ComputeEngine;
}  // namespace incsim::gpu

namespace incsim::tb {

// Simulation control for a workload's run_point: runs under the stall
// detector and turns a stall into a UserError with the machine's report.
class Runner {
 public:
  virtual ~Runner() = default;
  // Runs until done() holds (checked each time the simulation pauses, or
  // every `step` if one is given), or nothing is left to simulate; throws
  // UserError naming `what` and the blocks that hold packets if the machine
  // makes no progress for the stall timeout.
  virtual void run_until(const std::function<bool()>& done, const std::string& what,
                         sc_core::sc_time step = sc_core::SC_ZERO_TIME) = 0;
  // Runs `body`, a point simulated without SystemC (--fidelity flow), with
  // the same progress lines: body calls `poll` now and then with its
  // simulated time so far, us (the line's % is Workload::done_fraction).
  using Poll = std::function<void(double sim_us)>;
  virtual void run_plain(const std::string& what, const std::function<void(const Poll&)>& body) = 0;
};

class Workload {
 public:
  virtual ~Workload() = default;

  // The packet-level machine it runs on; null at --fidelity flow, where no block is built.
  virtual platforms::Machine* machine() = 0;
  // At --fidelity flow: the graph whose link directions its rows' link_ids name.
  virtual const topo::Topology* flow_graph() const { return nullptr; }

  // Header lines before the table's column headings, each starting with "# ".
  virtual void print_header(std::ostream& os) const = 0;
  // The columns of every row this workload returns.
  const Schema& schema() const { return *schema_; }
  // Points (sizes, loads) to run, in order.
  virtual size_t points() const = 0;
  // Runs point i and returns its rows (one; several jobs' at once, one
  // each); may print comment lines ("#   ...") to `notes`, which the driver
  // prints after the rows.
  virtual std::vector<Row> run_point(size_t i, Runner& run, std::ostream& notes) = 0;

  // What the run was asked for (platform, algorithm, sizes, ...), for the
  // JSON's "config"; and run-level results beside the rows.
  virtual void config_json(nlohmann::ordered_json& config) const = 0;
  virtual void summary_json(nlohmann::ordered_json& top) const {}

  // The stall timeout this workload needs when sim.stall_timeout_us is 0.
  virtual sc_core::sc_time default_stall_timeout() const = 0;
  // After a stall: a sentence naming the configuration that explains it, or
  // empty (the stall report then lists the held packets).
  virtual std::string stall_cause() const { return {}; }
  // Lines the stall report adds to the machine's held packets.
  virtual void report_stall(std::ostream& os) const {}
  // What the stall detector watches move: the machine's progress count
  // (platforms::Machine::progress), 0 without one.
  virtual uint64_t progress();
  // How much of the running point is done, in [0, 1], for the progress
  // line; negative when the workload cannot tell.
  virtual double done_fraction() const { return -1; }
  // How point i's simulated time compares with the others' (a collective's:
  // its bytes), for the progress line's estimate of when the run ends.
  virtual double point_weight(size_t i) const { return 1; }
  // Workload state for the VCD beyond the machine's (engines' progress).
  virtual void trace(sc_core::sc_trace_file* tf) const {}
  // True if it writes --timeline itself (training: its operations per
  // stream); any other run's timeline is the machine's (core/timeline.h).
  virtual bool writes_timeline() const { return false; }
  // At --fidelity flow, what would make a run of over an hour shorter, for
  // the progress line to say once; empty: nothing to say.
  virtual std::string long_run_hint() const { return {}; }
  // --print-schedule, --print-trees: UserError if this workload has none.
  virtual void print(const std::string& what, std::ostream& os) const;
  // The one sentence for a run with wrong results (exit status 1).
  virtual std::string wrong_message(uint64_t wrong) const {
    return std::to_string(wrong) + " elements differ from the reference result";
  }

 protected:
  // Set by each workload's constructor; every Row it returns shares it.
  std::shared_ptr<Schema> schema_ = std::make_shared<Schema>();
};

// A collective run point by point among other work in flight on a machine:
// what training starts for each of its groups (training_workload.h) and a
// jobs run for each job. The GPU fabrics' CollectiveWorkload and NetReduce's
// Ethernet NetReduceWorkload are the two, so either runs on both.
class GroupCollective : public Workload {
 public:
  // The collective set up on its GPUs or hosts, started size by size
  // (platforms::Call: its error, its thread blocks on the SMs, its SHARP
  // groups); once a size has ended, finish(i) gives its row and the notes
  // run_point would print.
  virtual platforms::Call& call() const = 0;
  virtual Row finish(size_t i, std::ostream& notes) = 0;
  virtual const std::vector<uint64_t>& sizes() const = 0;
  virtual const Options& options() const = 0;
  // Its GPUs' compute engines, whose kernels its thread blocks slow.
  virtual std::vector<gpu::ComputeEngine*> compute_engines() const { return {}; }
};

// The workload the options ask for: --workload, or the one the others imply
// (traffic with --traffic, train with --model, netreduce on NetReduce's
// Ethernet platforms, else collective).
std::string workload_name(const Options& o);
// Builds the workload the options ask for: synthetic traffic with
// --traffic, NetReduce's jobs on the Ethernet platforms, a collective
// elsewhere.
std::unique_ptr<Workload> make_workload(const Options& o, Config& cfg);

// Checks that no option in `unused` was given; names the first that was and
// says what it is for.
void refuse_options(const Options& o, std::initializer_list<const char*> unused, const std::string& why);

}  // namespace incsim::tb
