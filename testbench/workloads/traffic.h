#pragma once
// Synthetic traffic (--traffic) on any GPU fabric (modules/traffic), one row
// per offered load: accepted throughput and packet latency, measured as
// Dally and Towles ch. 23 and BookSim do (docs/traffic.md): a warm-up, a
// measurement window whose created packets are tracked to their arrival, and
// a drain during which injection goes on until every measured packet is in.
#include <memory>
#include <string>
#include <vector>

#include "platforms/platform.h"
#include "traffic/analysis.h"
#include "traffic/generator.h"
#include "workload.h"

namespace incsim::tb {

// "0.1:0.9:0.1" (start:stop:step, stop included), "0.2,0.5", "0.3", or a
// list mixing both, such as 0.05,0.1:0.5:0.1; every load in (0, 1]. Throws
// UserError naming the text.
std::vector<double> parse_loads(const std::string& text);

// Past saturation the source queues grow without bound (Dally and Towles
// ch. 23): in a finite run that shows as a source queue that refused a
// packet, measured packets still out at the drain limit, or the network
// accepting clearly less than was offered (below this fraction of it).
constexpr double kSaturationShortfall = 0.97;

class TrafficWorkload : public Workload {
 public:
  TrafficWorkload(const Options& o, Config& cfg);

  platforms::Machine* machine() override { return &*platform_; }
  void print_header(std::ostream& os) const override;
  size_t points() const override { return loads_.size(); }
  std::vector<Row> run_point(size_t i, Runner& run, std::ostream& notes) override;
  void config_json(nlohmann::ordered_json& config) const override;
  void summary_json(nlohmann::ordered_json& top) const override;
  sc_core::sc_time default_stall_timeout() const override { return warmup_ + window_ + drain_limit_; }
  std::string wrong_message(uint64_t wrong) const override {
    return std::to_string(wrong) + " packets arrived with wrong data, size or destination";
  }

  platforms::GpuMachine& platform() { return *platform_; }
  traffic::TrafficGenerator& generator(int g) { return *generators_[g]; }
  const traffic::ZeroLoad& zero_load() const { return zero_load_; }
  const traffic::ChannelBound& bound() const { return bound_; }
  double injection_GBps() const { return inject_GBps_; }

 private:
  Options opt_;
  Config& cfg_;
  std::vector<double> loads_;
  traffic::GeneratorConfig gen_;
  sc_core::sc_time warmup_, window_, drain_limit_;
  std::unique_ptr<platforms::GpuMachine> platform_;
  std::unique_ptr<traffic::Measurement> measurement_;
  std::vector<std::unique_ptr<traffic::TrafficGenerator>> generators_;
  double inject_GBps_ = 0;  // per endpoint (the same on every endpoint)
  traffic::ZeroLoad zero_load_;
  traffic::ChannelBound bound_;
};

}  // namespace incsim::tb
