#pragma once
// One incsim run: configuration, platform, collective, and the loop over
// message sizes that produces the results table.
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "collectives/data_pattern.h"
#include "core/config.h"
#include "gpu/collective.h"
#include "options.h"
#include "nic/scheduled_collective.h"
#include "platforms/platform.h"

namespace incsim::tb {

class Watchdog;

struct Row {
  uint64_t size_bytes = 0, count = 0, wrong = 0;
  double time_us = 0, algbw_GBps = 0, busbw_GBps = 0, bound_us = 0, bound_fraction = 0;
  std::vector<uint64_t> link_bytes;  // per Platform::link_ends(), during this size
  platforms::Platform::TableTotals tables;  // reduction table events during this size
  uint64_t packets = 0;                     // packets the GPUs received during this size
  double avg_latency_ns = 0;                // their mean latency, injection to last flit
};

// The values each run option accepts, one line each: "option<TAB>a, b, c"
// (--list-choices; error messages name the same lists).
std::string choices();

// Reads a --config file: run options into `o`, parameters into `cfg`.
void load_config_file(const std::string& path, Options& o, Config& cfg);

class Experiment {
 public:
  // Elaborates everything; throws UserError for any bad input.
  explicit Experiment(const Options& o);
  ~Experiment();

  // Runs every size; throws UserError naming the blocks that hold packets if
  // the simulation stalls. Rows are printed to `table` as they finish.
  std::vector<Row> run(std::ostream* table);

  void print_header(std::ostream& os) const;
  void print_sizing(std::ostream& os) const;
  // Every node's schedule table (MultiTree Fig. 5); UserError unless the
  // algorithm runs on the NICs.
  void print_schedule(std::ostream& os) const;
  // Blink's trees (weight and links each) or the rings, for --print-trees;
  // UserError unless the algorithm is blink, or ring on a DGX-1.
  void print_trees(std::ostream& os) const;
  static void print_row(std::ostream& os, const Row& r, const std::string& type, const std::string& redop);
  static void print_columns(std::ostream& os);  // the table's two heading lines
  void write_json(const std::string& path, const std::vector<Row>& rows) const;
  void list_params(std::ostream& os) const;

  const Config& config() const { return cfg_; }
  platforms::Platform& platform() { return *platform_; }
  int participants() const { return static_cast<int>(participants_.size()); }
  double endpoint_GBps() const { return endpoint_GBps_; }

 private:
  void make_ring(int n);
  void make_in_network(int n, bool fattree);
  void make_scheduled(int n, const platforms::PlatformShape& shape);
  // Blink's trees (DGX-1: packed over NVLink; switch fabrics: one-hop trees,
  // §3.4) and, on a DGX-1, NCCL-style rings, run on the NICs in dataflow mode.
  // chunks > 0 overrides blink.chunks (the MIAD search of run()).
  void make_trees(int n, int chunks = 0);
  double least_endpoint_GBps(int n, bool acked) const;
  Options opt_;
  Config cfg_;
  std::vector<uint64_t> sizes_;
  collectives::DType dtype_;
  collectives::RedOp redop_;
  std::unique_ptr<platforms::Platform> platform_;
  std::vector<gpu::Gpu*> participants_;
  double endpoint_GBps_ = 0;
  std::unique_ptr<gpu::Collective> collective_;
  const nic::ScheduledCollective* scheduled_ = nullptr;
  std::string trees_text_;  // what --print-trees prints
  std::string bound_note_;  // the header's bound line, when not per GPU
  // Blink's automatic chunk size (§4.2.1): iterations per size (0: off), the
  // first chunk size and the additive step; the largest tree's share of the
  // buffer turns a chunk size into chunks per tree.
  int miad_iterations_ = 0;
  uint64_t miad_start_bytes_ = 0, miad_step_bytes_ = 0;
  double max_tree_share_ = 1;  // collective_, when it runs on the NICs
  std::unique_ptr<Watchdog> watchdog_;
  sc_core::sc_trace_file* vcd_ = nullptr;
};

}  // namespace incsim::tb
