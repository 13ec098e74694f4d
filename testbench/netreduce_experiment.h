#pragma once
// The NetReduce run mode (docs/netreduce.md): all-reduce on an Ethernet rack
// of RoCE hosts, in the network (FPGA aggregator) or as a host ring, with
// real data, loss and retransmission. Kept apart from Experiment: its
// platform is built from Ethernet blocks, not the GPU fabric.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "collectives/data_pattern.h"
#include "core/config.h"
#include "options.h"

namespace incsim::platforms {
class NetReduceRack;
}
namespace incsim::roce {
class Worker;
}  // namespace incsim::roce

namespace incsim::tb {

class Watchdog;

bool is_netreduce_platform(const std::string& platform);

struct NetReduceRow {
  uint64_t size_bytes = 0, count = 0, wrong = 0;
  double time_us = 0, algbw_GBps = 0, busbw_GBps = 0, bound_us = 0, bound_fraction = 0;
  double model_us = 0;         // the appendix's model with its latency term (multigpu: Eq. (1) or (3))
  double goodput_Gbps = 0;     // tensor bytes per host per second
  double throughput_Gbps = 0;  // Ethernet frame bytes (headers, ACKs, retransmissions) per host link per second
  uint64_t lost = 0, retransmitted = 0, timeouts = 0, icrc_drops = 0, first_lost_drops = 0, resent_results = 0;
  std::vector<uint64_t> link_bytes;
  uint64_t packet_hops = 0;  // frames sent over all links during this size
};

class NetReduceExperiment {
 public:
  explicit NetReduceExperiment(const Options& o);
  ~NetReduceExperiment();
  void print_header(std::ostream& os) const;
  std::vector<NetReduceRow> run(std::ostream* table);
  void write_json(const std::string& path, const std::vector<NetReduceRow>& rows) const;
  void list_params(std::ostream& os) const;
  // The payload bandwidth one host can inject: line rate less per-packet headers.
  double payload_GBps() const { return payload_GBps_; }
  const platforms::NetReduceRack& platform() const { return *rack_; }
  platforms::NetReduceRack& platform() { return *rack_; }  // tests: fault hooks on chosen links

 private:
  struct Totals;
  Totals totals() const;
  double model_us(uint64_t bytes, bool with_alpha) const;
  std::string progress_suffix() const;
  bool multigpu_ = false;
  double intra_payload_GBps_ = 0;
  Options opt_;
  Config cfg_;
  std::vector<uint64_t> sizes_;
  collectives::DType dtype_;
  collectives::RedOp redop_;
  uint32_t window_ = 0, msg_len_ = 0;
  double payload_GBps_ = 0;
  std::unique_ptr<collectives::DataPattern> pattern_;
  std::unique_ptr<platforms::NetReduceRack> rack_;
  std::vector<std::unique_ptr<roce::Worker>> workers_;
  bool in_network_ = false;
  std::unique_ptr<Watchdog> watchdog_;
  sc_core::sc_trace_file* vcd_ = nullptr;
};


}  // namespace incsim::tb
