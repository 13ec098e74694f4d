#pragma once
// NetReduce's all-reduce set up on a job's hosts (NetReduceJob) at either
// fidelity, a platforms::Call as the GPU fabrics' collectives are: each
// ring rank's host software (roce::HostProgram) on its RoCE NIC with real
// data, loss and go-back-N at packet level, or the same program as flows
// (flow::RoceFlows). Its bound and model are the NetReduce appendix's
// (Eq. (1)-(3)), with the payload bandwidth left by the frames' headers.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/program.h"
#include "communicator.h"
#include "core/process.h"
#include "elements/data_pattern.h"
#include "flow/roce_flows.h"
#include "netreduce_job.h"
#include "roce/host_program.h"

namespace incsim::platforms {

class NetReduceCall : public Call {
 public:
  struct Setup {
    collectives::Program program;  // the hosts' (roce operations), on the job's ring ranks
    uint32_t msg_len = 1, window = 1;  // MsgLen (what the aggregator memory left) and N
    uint16_t ring_id = 0;          // its ring's at the FPGA (NetReduceJob::add_ring)
    elements::DType dtype = elements::DType::Float32;
    elements::RedOp redop = elements::RedOp::Sum;
    uint64_t seed = 1;
    bool in_network = false;    // aggregates on the FPGAs
    bool masters_ring = false;  // Tencent's two levels (the appendix's Eq. (2))
    bool flows = false;         // --fidelity flow: nothing of the machine runs
  };
  // On job's hosts of machine m, both set up (attached, programmed, its
  // ring added); `name` names its drain process, one per call.
  NetReduceCall(Machine& m, NetReduceJob& job, Setup s, const std::string& name);
  ~NetReduceCall() override;

  // Every host starts `bytes` now; on_done once all have their result
  // (under link faults, once every connection has drained too, so that no
  // retransmission meets the next size's messages).
  void start(uint64_t bytes, std::function<void()> on_done) override;
  bool run_alone(uint64_t bytes, const flow::Executor::Progress& progress) override;
  // Every host has its result (as flows: the run has ended).
  bool done() const override;
  // Every NIC idle: no packet unsent or unacknowledged.
  bool drained() const;
  Measures measures() const override;
  // The goodput, and what loss cost (packet level) or the flows' messages.
  void note(std::ostream& notes, const Measures& m) const override;
  const collectives::Program& program() const override { return s_.program; }
  std::string redop() const override { return elements::redop_name(s_.redop); }
  const collectives::Schedule* nic_schedule() const override { return nullptr; }
  const std::string& trees_text() const override { return no_trees_; }
  // The payload bandwidth one host can inject: its ring's slowest link less per-packet headers.
  double endpoint_GBps() const override { return payload_GBps_; }
  double intra_GBps() const { return intra_payload_GBps_; }  // multigpu: B_intra, payload
  // The appendix's bandwidth term alone (the bound), or with its latency term (model_us).
  double bound_us(uint64_t bytes, bool with_links = true) const override { return model(bytes, false); }
  double model_us(uint64_t bytes) const { return model(bytes, true); }
  // The appendix's equation model_us is on multigpu: (1) the flat ring,
  // (2) Tencent's two levels, (3) Parallel NetReduce.
  int model_equation() const { return s_.in_network ? 3 : s_.masters_ring ? 2 : 1; }
  bool in_network() const { return s_.in_network; }  // it aggregates on the FPGAs
  // The bound's line and, where the rack has FPGAs, the window and MsgLen.
  void describe(std::ostream& os, uint64_t bytes, const std::string& name) const override;
  void describe_fidelity(std::ostream& os) const override;
  int sm_blocks() const override { return 0; }  // a RoCE host's collective takes no SMs (roce/roce_host.h)
  // Messages the hosts have handled, of all (as flows, while it runs alone).
  double done_fraction() const override;
  void trace(sc_core::sc_trace_file* tf) const override;

  // The most host memory any host held at once in the last collective (roce::HostProgram's pages).
  uint64_t host_peak_bytes() const;
  // Which hosts are not done, and where.
  void report_stall(std::ostream& os) const;
  uint32_t msg_len() const { return s_.msg_len; }

 private:
  struct Totals {
    uint64_t frame_bytes = 0, lost = 0, retransmitted = 0, timeouts = 0, icrc_drops = 0, first_lost = 0, resent = 0;
  };
  Totals totals() const;
  double model(uint64_t bytes, bool with_alpha) const;

  Machine& machine_;
  NetReduceJob& job_;
  Setup s_;
  bool multigpu_;
  double payload_GBps_ = 0, intra_payload_GBps_ = 0;
  elements::DataPattern pattern_;
  std::vector<std::unique_ptr<roce::HostProgram>> hosts_;  // [ring rank]; none as flows
  std::unique_ptr<flow::RoceFlows> flows_;
  flow::Executor::Result flow_result_;
  AloneShare alone_share_;
  const std::string no_trees_;
  // The running size: the counters before it, its start and end, hosts done.
  uint64_t bytes_ = 0;
  std::vector<uint64_t> before_packets_;  // [link end]
  Totals t0_;
  sc_core::sc_time t_start_, t_end_;
  int finished_ = 0;
  bool ran_ = false;  // as flows: a run has ended
  std::function<void()> on_done_;
  Wakeup drain_;  // start() under link faults: polls for drained()
};

}  // namespace incsim::platforms
