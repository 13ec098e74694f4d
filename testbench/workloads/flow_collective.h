#pragma once
// The collective workload at --fidelity flow (docs/flow.md): the same
// registry, algorithms, programs and platforms as CollectiveWorkload, with
// no packet-level block built. Each size's program runs on the GPUs' cores
// (flow/cores_flows.h) or the NICs' schedule tables (flow/nic_flows.h) as
// flows over the platform's graph; nccl-tests' columns, with #wrong "-": no
// element values travel.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithm.h"
#include "elements/data_pattern.h"
#include "flow/cores_flows.h"
#include "flow/nic_flows.h"
#include "platforms/machine.h"
#include "topology/topology.h"
#include "workload.h"

namespace incsim::tb {

class FlowCollectiveWorkload : public Workload {
 public:
  FlowCollectiveWorkload(const Options& o, Config& cfg);
  ~FlowCollectiveWorkload() override;

  platforms::Machine* machine() override { return nullptr; }
  void print_header(std::ostream& os) const override;
  size_t points() const override { return sizes_.size(); }
  double point_weight(size_t i) const override { return static_cast<double>(sizes_[i]); }
  double done_fraction() const override { return fraction_ ? (*fraction_)() : -1; }
  std::vector<Row> run_point(size_t i, Runner& run, std::ostream& notes) override;
  void config_json(nlohmann::ordered_json& config) const override;
  sc_core::sc_time default_stall_timeout() const override { return sc_core::sc_time(1, sc_core::SC_SEC); }
  void print(const std::string& what, std::ostream& os) const override;

 private:
  void nic_tables(collectives::Synthesis& synthesis, const std::vector<int>& gpus, const platforms::PlatformDefaults& d);
  double bound_us(uint64_t bytes) const;

  Options opt_;
  Config& cfg_;
  std::vector<uint64_t> sizes_;
  elements::DType dtype_;
  elements::RedOp redop_;
  topo::Topology graph_;
  std::unique_ptr<collectives::Algorithm> file_algorithm_;
  const collectives::Algorithm* algorithm_ = nullptr;
  flow::FlowMachine machine_;
  std::unique_ptr<flow::Executor> flows_;
  const flow::NicFlows* nic_ = nullptr;  // flows_, where the NICs run the program
  size_t pxn_relays_ = 0;
  // The bound (platforms/bounds.h): a cluster's busbw, or a GPU's payload bandwidth.
  double endpoint_GBps_ = 0;
  std::string cluster_note_;  // empty off a cluster
  // Packed trees' algbw bound (Blink's) and what it is; 0 and empty elsewhere.
  double algbw_bound_GBps_ = 0;
  std::string bound_note_, trees_text_;  // trees_text_: --print-trees' (Blink's)
  // While a progress line may be due: the running point's share of its
  // operations issued (CoresFlows::run's progress).
  const std::function<double()>* fraction_ = nullptr;
};

}  // namespace incsim::tb
