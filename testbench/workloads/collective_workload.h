#pragma once
// The collective workload: one collective (all-reduce, reduce-scatter,
// all-gather, broadcast) by one algorithm over a list of message sizes on a
// GPU fabric built from a topology graph, one row per size in nccl-tests'
// columns. The algorithm runs on the engine it was designed for: the GPUs'
// cores (software ring), their copy engines with the switches' tables (push,
// pull, multicast), or the NICs' schedule tables (MultiTree, the baselines,
// Blink's trees); at packet level, or as flows (--fidelity flow,
// docs/flow.md: #wrong "-", no element values travel), as the
// communicator sets it up (platforms::Communicator::set_up).
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/algorithm.h"
#include "elements/data_pattern.h"
#include "collectives/program.h"
#include "collectives/program_synthesis.h"
#include "platforms/communicator.h"
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

// --dtype, --redop and --sizes (or `sizes`, a caller's own), each checked
// (sizes: whole elements of the dtype).
std::tuple<elements::DType, elements::RedOp, std::vector<uint64_t>> parse_data(
    const Options& o, const std::vector<uint64_t>* sizes = nullptr);
// Throws UserError, saying which sizes would fit, unless what a run of the
// largest size holds, `per_byte` bytes for each byte of it (`holds` says
// what: each rank's buffer of the size, or the chunks the cores keep),
// fits in this machine's memory; `flow`: the sentence names --fidelity
// flow, which holds no elements.
void check_memory(const std::vector<uint64_t>& sizes, double per_byte, const std::string& holds, bool flow);
// Refuses the options that show what only packet level builds (--vcd,
// --dump-platform, and where `timeline`, a timeline of the blocks).
void refuse_packet_outputs(const Options& o, bool timeline);
// --print-program, --print-trees or --print-schedule (`what`) of a
// collective's program, its NICs' schedule (or none) and Blink's trees'
// text (or empty), for the options o names; throws UserError naming what
// the run does not build.
void print_collective(const std::string& what, const collectives::Program& program,
                      const collectives::Schedule* schedule, const std::string& trees_text, const Options& o,
                      std::ostream& os);

// --algorithm FILE (a name with a dot or a slash: no algorithm's has one).
bool is_program_file(const std::string& algorithm);
// A program file, MSCCL's XML or incsim's text format, read and checked
// symbolically before anything is built: one sentence naming the file if it
// is not a correct collective.
collectives::Program read_checked_program(const std::string& path);

// --algorithm NAME for `collective` on `platform`: a name no platform knows
// gets the choices that run there; one that runs on NetReduce's Ethernet
// platforms or not this collective, one sentence. A known name that cannot
// run on this platform is left to the algorithm's own reason (cannot_run).
void check_algorithm(const std::string& algorithm, const std::string& collective, const std::string& platform);

// The algorithm a collective runs when none is named: its default, or on a
// built-in platform the default doesn't run on (broadcast on a cluster), the
// first that does.
std::string default_algorithm(const std::string& collective, const std::string& platform = "");
// Whether `algorithm` numbers its ranks as the platform numbers its GPUs
// (Blink's trees, a DGX-1's rings, MultiTree, ring2d, hdrm), so that it
// runs only on GPUs 0 to n-1, in order: on a share it needs those.
bool gpu_numbered(const std::string& algorithm, const topo::Topology& t);
// The shape of the built-in platform the options ask for (--gpus, --dims, --nodes).
platforms::PlatformShape platform_shape(const Options& o);

// What a collective's options name, checked before anything is built and
// the same at either fidelity: its collective (a program file's own), its
// algorithm (the registry's, or a program file's as one), its data.
struct CollectiveChoice {
  std::unique_ptr<collectives::Algorithm> file_algorithm;  // --algorithm FILE
  const collectives::Algorithm* algorithm = nullptr;
  int file_ranks = 0;  // a program file's ranks, else 0
  collectives::Collective collective = collectives::Collective::AllReduce;
  elements::DType dtype;
  elements::RedOp redop;
  std::vector<uint64_t> sizes;
};
// Sets o.collective and o.algorithm to what the run takes (a program
// file's collective, the collective's default algorithm); `sizes`, where
// given, stand for --sizes.
CollectiveChoice choose_collective(Options& o, const std::vector<uint64_t>* sizes = nullptr);
// The GPUs of graph t the collective runs on, in rank order: a share's
// (`share`, a job's or a training group's), or the first --gpus (a program
// file's ranks, else all); one sentence where they do not fit.
std::vector<int> collective_gpus(const Options& o, const CollectiveChoice& c, const topo::Topology& t,
                                 const std::vector<int>* share);

class CollectiveWorkload : public GroupCollective {
 public:
  // What a collective holds of a machine it shares with others (jobs.h,
  // training): the machine at packet level (its multicast address window,
  // memory and streams it takes as it runs) or the platform as flows, and
  // its GPUs in rank order.
  struct Share {
    platforms::GpuMachine* platform;
    std::vector<int> gpus;
    std::vector<uint64_t> sizes = {};  // its message sizes (a training group's); empty: --sizes
    platforms::FlowPlatform* flows = nullptr;  // as flows, instead of platform
  };
  // Without a share the collective builds its own machine from the options,
  // or at --fidelity flow its flow graph.
  CollectiveWorkload(const Options& o, Config& cfg, const Share* share = nullptr);
  ~CollectiveWorkload() override;

  platforms::Machine* machine() override { return platform_; }
  platforms::Call& call() const override { return *call_; }
  void print_header(std::ostream& os) const override;
  size_t points() const override { return sizes_.size(); }
  double point_weight(size_t i) const override { return static_cast<double>(sizes_[i]); }
  std::vector<Row> run_point(size_t i, Runner& run, std::ostream& notes) override;
  // Point i's row once call() has run it among other collectives (jobs.h),
  // and the notes run_point prints.
  Row finish(size_t i, std::ostream& notes) override;
  std::vector<gpu::ComputeEngine*> compute_engines() const override { return comm_->compute_engines(); }
  const std::vector<uint64_t>& sizes() const override { return sizes_; }
  const Options& options() const override { return opt_; }
  const topo::Topology* flow_graph() const override { return flows_ ? &comm_->topology() : nullptr; }
  void config_json(nlohmann::ordered_json& config) const override;
  void summary_json(nlohmann::ordered_json& top) const override;
  sc_core::sc_time default_stall_timeout() const override;
  void trace(sc_core::sc_trace_file* tf) const override { call_->trace(tf); }
  double done_fraction() const override;
  // What the stall detector watches move: the machine's progress, or as
  // flows its flows' time so far, ns.
  uint64_t progress() override;
  void print(const std::string& what, std::ostream& os) const override;

  // Packet level: the machine and its GPUs.
  platforms::GpuMachine& platform() { return *platform_; }
  const std::vector<gpu::Gpu*>& gpus() const { return comm_->gpus(); }
  int participants() const { return comm_->size(); }
  double endpoint_GBps() const { return call_->endpoint_GBps(); }

 private:
  Options opt_;
  Config& cfg_;
  std::vector<uint64_t> sizes_;
  elements::DType dtype_;
  elements::RedOp redop_;
  // Packet level: the machine, its own when not on a share.
  std::unique_ptr<platforms::GpuMachine> own_platform_;
  platforms::GpuMachine* platform_ = nullptr;
  // As flows: the platform shared, or a graph of its own (what its links
  // pay, their defaults).
  platforms::FlowPlatform* flow_platform_ = nullptr;
  struct OwnFlows;
  std::unique_ptr<OwnFlows> own_flows_;
  bool flows_ = false;
  void make_communicator(const Share* share, topo::Topology own, const std::vector<int>& gpus,
                         collectives::Collective c);
  // The algorithm (a program file's, or the registry's) and where it runs;
  // alone at packet level, the tuner of an algorithm that sets up a program
  // per size (nccl) or tuning run (Blink), whose programs run_point sets up
  // afresh.
  std::unique_ptr<collectives::Algorithm> file_algorithm_;
  const collectives::Algorithm* algorithm_ = nullptr;
  std::unique_ptr<collectives::Site> site_;
  std::unique_ptr<collectives::Tuner> tuner_;
  // Its GPUs and the collective set up on them (the tuning run's where run_point tunes).
  std::unique_ptr<platforms::Communicator> comm_;
  std::unique_ptr<platforms::Call> call_;

  // Refuses sizes whose elements p's engine would hold beyond this machine's memory.
  void check_memory(const collectives::Program& p) const;
};

}  // namespace incsim::tb
