#pragma once
// incsim --traffic: synthetic traffic on any platform (modules/traffic), one
// row per offered load: accepted throughput and packet latency, measured as
// Dally and Towles ch. 23 and BookSim do (docs/traffic.md): a warm-up, a
// measurement window whose created packets are tracked to their arrival, and
// a drain during which injection goes on until every measured packet is in.
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "options.h"
#include "platforms/platform.h"
#include "traffic/analysis.h"
#include "traffic/generator.h"

namespace incsim::tb {

// "0.1:0.9:0.1" (start:stop:step, stop included), "0.2,0.5", "0.3", or a
// list mixing both, such as 0.05,0.1:0.5:0.1; every load in (0, 1]. Throws
// UserError naming the text.
std::vector<double> parse_loads(const std::string& text);

struct TrafficRow {
  double offered = 0;           // asked for
  double offered_measured = 0;  // created in the window, wire bytes over injection bandwidth
  double accepted = 0;          // wire bytes arrived in the window over injection bandwidth, all endpoints
  double accepted_min = 0;      // the endpoint that accepted least
  double accepted_GBps = 0;     // per endpoint, wire bytes
  double latency_ns = 0, p50_ns = 0, p99_ns = 0, max_ns = 0;  // creation to tail arrival
  double network_latency_ns = 0;  // mean from leaving the source port to tail arrival (BookSim's nlat)
  uint64_t packets = 0;         // measured packets that arrived
  uint64_t wrong = 0;           // packets sent during the point that arrived with a wrong byte, size or destination
  uint64_t refused = 0;         // packets a full source queue refused during the point
  uint64_t queue_peak = 0;      // longest source queue, packets
  bool drained = true;          // every measured packet arrived within traffic.drain_limit_ns
  // Past saturation the source queues grow without bound (Dally and Towles
  // ch. 23): in a finite run that shows as a source queue that refused a
  // packet, measured packets still out at the drain limit, or the network
  // accepting clearly less than was offered (kShortfall).
  static constexpr double kShortfall = 0.97;
  bool saturated() const { return refused > 0 || !drained || accepted < kShortfall * offered_measured; }
};

class TrafficExperiment {
 public:
  explicit TrafficExperiment(const Options& o);
  ~TrafficExperiment();

  std::vector<TrafficRow> run(std::ostream* table);
  void print_header(std::ostream& os) const;
  static void print_row(std::ostream& os, const TrafficRow& r);
  void write_json(const std::string& path, const std::vector<TrafficRow>& rows) const;
  void list_params(std::ostream& os) const;

  platforms::Platform& platform() { return *platform_; }
  traffic::TrafficGenerator& generator(int g) { return *generators_[g]; }
  const traffic::ZeroLoad& zero_load() const { return zero_load_; }
  const traffic::ChannelBound& bound() const { return bound_; }
  double injection_GBps() const { return inject_GBps_; }

 private:
  TrafficRow run_load(double load);
  Options opt_;
  Config cfg_;
  std::vector<double> loads_;
  traffic::GeneratorConfig gen_;
  sc_core::sc_time warmup_, window_, drain_limit_;
  std::unique_ptr<platforms::Platform> platform_;
  std::unique_ptr<traffic::Measurement> measurement_;
  std::vector<std::unique_ptr<traffic::TrafficGenerator>> generators_;
  double inject_GBps_ = 0;  // per endpoint (the same on every endpoint)
  traffic::ZeroLoad zero_load_;
  traffic::ChannelBound bound_;
  sc_core::sc_trace_file* vcd_ = nullptr;
};

// The whole --traffic run for incsim's sc_main: header, rows, JSON; returns
// the exit status (1 when a packet arrived wrong).
int run_traffic(const Options& o, std::ostream& out);

}  // namespace incsim::tb
