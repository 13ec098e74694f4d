#pragma once
// The collective workload: one collective (all-reduce, reduce-scatter,
// all-gather, broadcast) by one algorithm over a list of message sizes on a
// GPU fabric built from a topology graph, one row per size in nccl-tests'
// columns. The algorithm runs on the engine it was designed for: the GPUs'
// cores (software ring), their copy engines with the switches' tables (push,
// pull, multicast), or the NICs' schedule tables (MultiTree, the baselines,
// Blink's trees).
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/data_pattern.h"
#include "collectives/program.h"
#include "collectives/program_synthesis.h"
#include "gpu/collective.h"
#include "nic/scheduled_collective.h"

namespace incsim::gpu {
class CoresCollective;
}
#include "platforms/platform.h"
#include "workload.h"

namespace incsim::tb {

// nccl-tests' columns (size, count, type, redop, time, algbw, busbw, #wrong,
// bound), which every collective workload's rows start with.
Schema nccl_schema();
// Fills those columns (type: a dtype name, whose element size gives the
// count); bound_us 0 leaves the bound empty.
void fill_nccl(Row& r, uint64_t bytes, const std::string& type, const std::string& redop, double time_us,
               double busbw_factor, uint64_t wrong, double bound_us);

// --dtype, --redop and --sizes, each checked (sizes: whole elements of the dtype).
std::tuple<collectives::DType, collectives::RedOp, std::vector<uint64_t>> parse_data(const Options& o);
// Throws UserError, saying which sizes would fit, unless `ranks` buffers of
// the largest size fit in this machine's memory.
void check_memory(const std::vector<uint64_t>& sizes, int ranks, const char* rank_kind);

// --algorithm FILE (a name with a dot or a slash: no algorithm's has one).
bool is_program_file(const std::string& algorithm);
// A program file, MSCCL's XML or incsim's text format, read and checked
// symbolically before anything is built: one sentence naming the file if it
// is not a correct collective.
collectives::Program read_checked_program(const std::string& path);

// The algorithm a collective runs when none is named: its default, or on a
// built-in platform the default doesn't run on (broadcast on a cluster), the
// first that does.
std::string default_algorithm(const std::string& collective, const std::string& platform = "");
// The shape of the built-in platform the options ask for (--gpus, --dims, --nodes).
platforms::PlatformShape platform_shape(const Options& o);

class CollectiveWorkload : public Workload {
 public:
  // What a collective holds of a machine it shares with others (jobs.h):
  // the machine and its GPUs in rank order. Its multicast address window,
  // memory and streams it takes as it runs.
  struct Share {
    platforms::GpuMachine* platform;
    std::vector<int> gpus;
  };
  // Without a share the collective builds its own machine from the options.
  CollectiveWorkload(const Options& o, Config& cfg, const Share* share = nullptr);
  // The platform defaults `algorithm` asks for on the graph t (the papers'
  // table sizes and packet payloads for the in-network algorithms).
  static platforms::PlatformDefaults defaults_for(const topo::Topology& t, const std::string& algorithm);
  // A machine several algorithms share (jobs, a training run and its
  // baseline): the largest reduction table and the smallest payload any asks for.
  static platforms::PlatformDefaults defaults_for(const topo::Topology& t, const std::vector<std::string>& algorithms);

  // Whether `algorithm` numbers its ranks as the platform numbers its GPUs
  // (Blink's trees, a DGX-1's rings, MultiTree, ring2d, hdrm), so that it
  // runs only on GPUs 0 to n-1, in order: on a share it needs those.
  static bool ranks_are_gpu_numbers(const std::string& algorithm, const topo::Topology& t);

  platforms::Machine& machine() override { return *platform_; }
  void print_header(std::ostream& os) const override;
  size_t points() const override { return sizes_.size(); }
  double point_weight(size_t i) const override { return static_cast<double>(sizes_[i]); }
  std::vector<Row> run_point(size_t i, Runner& run, std::ostream& notes) override;
  // Point i as one of several collectives in flight (jobs.h): start()
  // begins it now and calls on_done when it ends (or fails: error());
  // finish() then gives its row and the notes run_point prints.
  void start(size_t i, std::function<void()> on_done);
  Row finish(size_t i, std::ostream& notes);
  std::string error() const { return collective_->error(); }
  // Thread blocks it holds on each GPU's SMs while it runs (gpu::Collective::sm_blocks).
  int sm_blocks() const { return collective_->sm_blocks(); }
  const std::vector<uint64_t>& sizes() const { return sizes_; }
  const std::vector<gpu::Gpu*>& gpus() const { return participants_; }
  const Options& options() const { return opt_; }
  void config_json(nlohmann::ordered_json& config) const override;
  void summary_json(nlohmann::ordered_json& top) const override;
  sc_core::sc_time default_stall_timeout() const override;
  void trace(sc_core::sc_trace_file* tf) const override { collective_->trace(tf); }
  double done_fraction() const override { return collective_ ? collective_->done_fraction() : -1; }
  void print(const std::string& what, std::ostream& os) const override;

  platforms::GpuMachine& platform() { return *platform_; }
  int participants() const { return static_cast<int>(participants_.size()); }
  double endpoint_GBps() const { return endpoint_GBps_; }

 private:
  void print_sizing(std::ostream& os) const;
  // The software ring (on a whole cluster, NCCL's rings across its nodes), hring, tree, nvlstree, nvlsring, or
  // p2p (an all-to-all): the programs on the GPUs' cores with ring.channels and ring.protocol.
  void make_ring(int n);
  void make_cores(const collectives::Program& program);
  // On a cluster under cluster.pxn, program_'s transfers across rails and
  // nodes relayed through the GPU on the destination's rail (NCCL's PXN).
  void relay_across_rails();
  // UserError naming `what` if the switches have no reduction tables.
  void require_reduction_tables(const std::string& what) const;
  void require_aggregation_buffers(const collectives::Program& program, int credits) const;
  void join_netreduce_rings(const collectives::Program& program, const gpu::CoresCollective& cores, uint32_t window);
  void require_groups_fit_cluster(const collectives::Program& program) const;
  std::vector<int> cluster_node_of() const;  // [GPU]: its node in cluster_
  std::vector<int> cluster_rail_of() const;  // [GPU]: its place in its node, the rail of its adapter
  size_t cluster_gpus() const;               // the GPUs in cluster_
  int adapter_of(int gpu) const;             // the node of endpoint gpu's network adapter, or -1
  void make_copy(int n, bool fattree);
  collectives::Schedule synthesize_schedule(int n) const;
  void make_scheduled(int n);
  // Blink's trees (DGX-1: packed over NVLink; switch fabrics: one-hop trees,
  // §3.4) and, on a DGX-1, NCCL-style rings, run on the NICs in dataflow mode.
  // chunks > 0 overrides blink.chunks (the MIAD search of run_point()).
  void make_trees(int n, int chunks = 0);
  double least_endpoint_GBps(int n, bool acked) const;
  // On a cluster: the payload bandwidth per GPU that the program's sends
  // within its node (NVLink) and to other nodes (its adapter) allow at most.
  double cluster_endpoint_GBps(const collectives::Program& program);
  std::vector<nic::Nic*> participant_nics() const;  // the NICs inside the participants, in rank order
  // Push, pull and NVLS reduce in the switches' tables (multicast only replicates).
  bool reduces_in_switches() const;

  Options opt_;
  Config& cfg_;
  std::vector<uint64_t> sizes_;
  collectives::DType dtype_;
  collectives::RedOp redop_;
  std::unique_ptr<platforms::GpuMachine> own_platform_;  // when not on a share
  platforms::GpuMachine* platform_ = nullptr;
  std::vector<gpu::Gpu*> participants_;
  size_t pxn_relays_ = 0;  // relay_across_rails' relays
  std::vector<std::vector<int>> cluster_;  // a cluster's nodes' GPUs (topo::cluster_nodes); empty elsewhere
  std::string cluster_note_;               // what limits a cluster's bound
  std::vector<bool> between_nodes_;        // [link end] on a cluster: the network's, or a GPU's link to its adapter
  double endpoint_GBps_ = 0;
  std::unique_ptr<gpu::Collective> collective_;
  const nic::ScheduledCollective* scheduled_ = nullptr;
  std::string trees_text_;  // what --print-trees prints
  collectives::Program program_;  // what the GPUs' cores or copy engines run (--algorithm FILE too); none: 0 ranks
  // The copy engines run program_ (push, pull, multicast, nvls, a copy-engine file) ...
  bool copy_engines_ = false;
  int nvls_channels_ = 0;      // nvls.channels: the thread blocks of nvls on the cores
  uint64_t auto_ll_max_ = 0, auto_ll128_max_ = 0;   // its thresholds
  // ... and how it uses the switches (none: unicast writes only).
  std::optional<collectives::InNetMethod> innet_;
  std::string bound_note_;  // the header's bound line, when not per GPU
  // Blink's automatic chunk size (§4.2.1): iterations per size (0: off), the
  // first chunk size and the additive step; the largest tree's share of the
  // buffer turns a chunk size into chunks per tree.
  int miad_iterations_ = 0;
  uint64_t miad_start_bytes_ = 0, miad_step_bytes_ = 0;
  double max_tree_share_ = 1;  // collective_, when it runs on the NICs
  // The running point: when it started and ended, and the machine's counters then.
  struct Running {
    sc_core::sc_time t0, t1;
    bool done = false;
    std::vector<uint64_t> link_bytes;
    platforms::GpuMachine::TableTotals tables;
    std::pair<uint64_t, double> latency;
  } running_;
};

}  // namespace incsim::tb
