#include "traffic.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/units.h"

namespace incsim::tb {

namespace {
const Param<bool> kUniformSelf{
    "traffic.uniform.self", true, Range::none(),
    "uniform random destinations include the source itself (Dally and Towles §3.2: lambda_sd = 1/N; BookSim's "
    "uniform draws from all nodes); false: the N - 1 others"};
// An endpoint number; the pattern checks it against the platform's endpoints.
const Param<int> kHotNode{"traffic.hotspot.node", 0, Range::at_least(0).at_most(1 << 20),
                          "the hot endpoint (our choice: endpoint 0)"};
const Param<double> kHotFraction{
    "traffic.hotspot.fraction", 0.1, Range::at_least(0).at_most(1),
    "fraction h of packets sent to the hot endpoint, the rest uniform (Pfister and Norton, ICPP 1985, define h; "
    "0.1 is our choice, not a value from the paper)"};
// A multiple of 8 up to net.max_payload_bytes (checked by the generator).
const Param<uint32_t> kPayloadBytes{
    "traffic.payload_bytes", 128, Range::at_least(16).at_most(4096),
    "payload per packet, bytes, a multiple of 8 from 16 (default net.max_payload_bytes: 256 on torus, mesh, "
    "fattree, bigraph, MultiTree Table III; 128 elsewhere, Klenk §V)"};
const Param<uint32_t> kQueuePackets{
    "traffic.source_queue_packets", 1024, Range::at_least(1).at_most(1 << 24),
    "source queue per endpoint, packets; a packet created when it is full is refused and the load point marked "
    "saturated (BookSim's queue is unbounded; below saturation a Bernoulli source's queue stays far shorter)"};
const Param<double> kWarmup{
    "traffic.warmup_ns", 10000.0, Range::at_least(0).at_most(1e9),
    "warm-up before the measurement window, ns (Dally and Towles ch. 24: long enough for queues to reach steady "
    "state; our choice: about ten zero-load latencies of an 8x8 torus, checked by docs/traffic.md)"};
const Param<double> kWindowNs{
    "traffic.window_ns", 20000.0, Range::above(0).at_most(1e9),
    "measurement window, ns: packets created in it are measured to their arrival (Dally and Towles ch. 24; "
    "BookSim's sample period), our choice, giving about 10^4 packets at low load on 64 endpoints"};
const Param<double> kDrain{
    "traffic.drain_limit_ns", 100000.0, Range::at_least(0).at_most(1e10),
    "longest drain after the window, ns, injection going on, until every measured packet arrives; past it "
    "the point is marked saturated (BookSim gives up on an unstable run the same way)"};
}  // namespace

using sc_core::sc_time;
using sc_core::SC_NS;

std::vector<double> parse_loads(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return UserError("--load expects offered loads in (0, 1], as start:stop:step or a list such as 0.2,0.5; '" + text +
                     "' " + why);
  };
  auto number = [&](const std::string& part) {
    char* end = nullptr;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || !std::isfinite(v)) throw bad("has '" + part + "', not a number");
    return v;
  };
  std::vector<double> loads;
  auto range = [&](const std::string& item) {
    const auto a = item.find(':'), b = item.find(':', a + 1);
    if (b == std::string::npos || item.find(':', b + 1) != std::string::npos) throw bad("is not start:stop:step");
    const double start = number(item.substr(0, a)), stop = number(item.substr(a + 1, b - a - 1)),
                 step = number(item.substr(b + 1));
    if (!(step > 0)) throw bad("has a step that is not above zero");
    if (stop < start) throw bad("stops below its start");
    // Multiples of the step from the start, rounded to 1e-9 so that 0.1 x 3
    // prints as 0.3; the stop is included.
    for (int i = 0;; ++i) {
      const double v = std::round((start + i * step) * 1e9) / 1e9;
      if (v > stop + 1e-9) break;
      loads.push_back(v);
      if (loads.size() > 10000) throw bad("asks for more than 10000 loads");
    }
  };
  if (text.empty() || text.back() == ',') throw bad("has an empty item");
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.find(':') != std::string::npos) range(item);
    else loads.push_back(number(item));
  }
  for (double v : loads)
    if (!(v > 0 && v <= 1)) {
      std::ostringstream os;
      os << "has " << v << ", outside (0, 1]";
      throw bad(os.str());
    }
  return loads;
}

TrafficWorkload::TrafficWorkload(const Options& o, Config& cfg) : opt_(o), cfg_(cfg) {
  refuse_options(opt_, {"collective", "algorithm", "sizes", "dtype", "redop"}, "applies to collectives, not to --traffic");
  refuse_options(opt_, {"hosts", "ring", "racks", "hosts-per-rack", "machines", "gpus-per-machine"},
                 "shapes the Ethernet platforms rack, spineleaf and multigpu, not " + opt_.platform);
  schema_->add({"offered", "", ColumnKind::Setting, "offered", "(frac)", 7, 3})
      .add({"offered_measured", "", ColumnKind::Measurement})
      .add({"accepted", "", ColumnKind::Measurement, "accepted", "(frac)", 9, 3})
      .add({"accepted_min", "", ColumnKind::Measurement})
      .add({"accepted_GBps_per_node", "GB/s", ColumnKind::Measurement, "GB/s", "(/node)", 9, 2})
      .add({"latency_ns", "ns", ColumnKind::Measurement, "latency", "(ns)", 10, 1})
      .add({"p50_ns", "ns", ColumnKind::Measurement, "p50", "(ns)", 9, 1})
      .add({"p99_ns", "ns", ColumnKind::Measurement, "p99", "(ns)", 9, 1})
      .add({"max_ns", "ns", ColumnKind::Measurement, "max", "(ns)", 10, 1})
      .add({"network_latency_ns", "ns", ColumnKind::Measurement, "network", "(ns)", 9, 1})
      .add({"packets", "packets", ColumnKind::Measurement, "packets", "", 9})
      .add({"wrong", "packets", ColumnKind::Measurement, "#wrong", "", 7})
      .add({"refused", "packets", ColumnKind::Measurement})
      .add({"queue_peak", "packets", ColumnKind::Measurement})
      .add({"drained", "", ColumnKind::Measurement})
      .add({"saturated", "", ColumnKind::Measurement})
      .add({"state", "", ColumnKind::Measurement, "state", "", -1});
  traffic::PatternParams& pp = gen_.pattern;
  pp.pattern = traffic::parse_pattern(opt_.traffic);
  loads_ = parse_loads(opt_.load);

  platforms::PlatformShape shape;
  shape.gpus = opt_.gpus;
  shape.nodes = opt_.nodes;
  shape.node = opt_.node;
  if (!opt_.dims.empty()) {
    shape.dims = true;
    std::tie(shape.dims_x, shape.dims_y) = parse_dims(opt_.dims);
  }
  const topo::Topology t = opt_.topology ? *opt_.topology : platforms::make_topology(opt_.platform, shape, cfg_);
  const int n = static_cast<int>(t.endpoints().size());
  if (opt_.gpus && *opt_.gpus != n)
    throw UserError("synthetic traffic runs on all " + std::to_string(n) + " endpoints of " + t.name +
                    "; --gpus only sizes the star and fattree2l platforms");
  // One source queue feeds all of an endpoint's ports: each must reach every endpoint.
  for (int e = 0; e < n; ++e)
    for (int p = 0; p < t.node(t.endpoints()[e]).ports; ++p)
      for (int d = 0; d < n; ++d)
        if (!t.port_reaches({t.endpoints()[e], p}, d))
          throw UserError("synthetic traffic needs every endpoint port to reach every endpoint; on " + t.name + " " +
                          t.port_name({t.endpoints()[e], p}) + " does not reach endpoint " + std::to_string(d));
  pp.nodes = n;
  pp.kx = t.grid.kx;
  pp.ky = t.grid.ky;
  if (pp.pattern == traffic::Pattern::Uniform || pp.pattern == traffic::Pattern::Hotspot)
    pp.uniform_self = cfg_.get(kUniformSelf);
  if (pp.pattern == traffic::Pattern::Hotspot) {
    pp.hot_node = cfg_.get(kHotNode);
    pp.hot_fraction = cfg_.get(kHotFraction);
  }
  traffic::check(pp);

  platforms::PlatformDefaults pd = platforms::platform_defaults(t);
  platform_ = std::make_unique<platforms::GpuMachine>(t, cfg_, opt_.seed, pd);
  const net::PacketFormat& f = platform_->format();
  gen_.payload_bytes = cfg_.get(kPayloadBytes, f.max_payload_bytes);
  gen_.queue_packets = cfg_.get(kQueuePackets);
  gen_.seed = opt_.seed;
  const double warmup_ns = cfg_.get(kWarmup);
  const double window_ns = cfg_.get(kWindowNs);
  const double drain_ns = cfg_.get(kDrain);
  warmup_ = sc_time(warmup_ns, SC_NS);
  window_ = sc_time(window_ns, SC_NS);
  drain_limit_ = sc_time(drain_ns, SC_NS);

  inject_GBps_ = traffic::reference_injection_GBps(t);
  measurement_ = std::make_unique<traffic::Measurement>(n);
  for (gpu::Gpu* g : platform_->gpus())
    generators_.push_back(std::make_unique<traffic::TrafficGenerator>(*g, gen_, *measurement_, inject_GBps_));
  const uint32_t wire = generators_[0]->wire_bytes();
  zero_load_ = traffic::zero_load(t, pp, wire, platform_->switch_config().latency.to_seconds() * 1e9);
  bound_ = traffic::channel_load_bound(t, pp, inject_GBps_);
}

std::vector<Row> TrafficWorkload::run_point(size_t i, Runner&, std::ostream&) {
  const double load = loads_[i];
  traffic::Measurement& m = *measurement_;
  const sc_time t0 = sc_core::sc_time_stamp();
  m.reset((t0 + warmup_).value(), (t0 + warmup_ + window_).value());
  for (auto& g : generators_) g->start(load);
  // Warm-up and measurement window.
  sc_core::sc_start(warmup_ + window_);
  for (auto& g : generators_) g->advance();  // every packet of the window now exists
  // Drain: injection goes on until every measured packet is in (a sink
  // pauses the simulation then) or the limit passes.
  const sc_time drain_end = sc_core::sc_time_stamp() + drain_limit_;
  m.pause_when_drained = true;
  while (m.measured_arrived < m.measured_created && sc_core::sc_time_stamp() < drain_end)
    sc_core::sc_start(drain_end - sc_core::sc_time_stamp());
  m.pause_when_drained = false;

  const bool drained = m.measured_arrived >= m.measured_created;
  const double window_ns = window_.to_seconds() * 1e9;
  const double n = static_cast<double>(generators_.size());
  const double capacity = window_ns * inject_GBps_;  // bytes one endpoint could inject in the window
  uint64_t accepted = 0, created = 0, refused = 0, queue_peak = 0;
  double accepted_min = 1e300;
  for (size_t g = 0; g < generators_.size(); ++g) {
    accepted += m.accepted_bytes[g];
    accepted_min = std::min(accepted_min, m.accepted_bytes[g] / capacity);
    created += generators_[g]->created_in_window();
    refused += generators_[g]->refused();
    queue_peak = std::max<uint64_t>(queue_peak, generators_[g]->queue_peak());
  }
  const double offered_measured = static_cast<double>(created) * generators_[0]->wire_bytes() / (capacity * n);
  const double accepted_frac = accepted / (capacity * n);
  const bool saturated = refused > 0 || !drained || accepted_frac < kSaturationShortfall * offered_measured;
  Row r(schema_);
  r.set("offered", load)
      .set("offered_measured", offered_measured)
      .set("accepted", accepted_frac)
      .set("accepted_min", accepted_min)
      .set("accepted_GBps_per_node", accepted / (window_ns * n))
      .set("latency_ns", m.latency.mean_ps() / 1000)
      .set("p50_ns", m.latency.quantile_ps(0.5) / 1000)
      .set("p99_ns", m.latency.quantile_ps(0.99) / 1000)
      .set("max_ns", static_cast<double>(m.latency.max_ps()) / 1000)
      .set("network_latency_ns", m.latency.count() ? static_cast<double>(m.network_latency_ps) /
                                                         static_cast<double>(m.latency.count()) / 1000
                                                   : 0.0)
      .set("packets", m.measured_arrived)
      .set("refused", refused)
      .set("queue_peak", queue_peak)
      .set("drained", drained)
      .set("saturated", saturated)
      .set("state", std::string(saturated ? "saturated" : "ok"));

  // Stop, drop what waits in the source queues, and let the network empty
  // (nothing runs on a clock: the simulation starves once it is quiet).
  uint64_t sent = 0;
  for (auto& g : generators_) {
    g->stop();
    sent += g->sent();
  }
  sc_core::sc_start();
  if (m.arrived != sent) {
    std::ostringstream os;
    const uint64_t held = platform_->report_held(os);
    std::string where = os.str();
    if (!where.empty() && where.back() == '\n') where.pop_back();
    std::ostringstream what;
    what << "the network did not empty after load " << load << ": " << sent << " packets sent, " << m.arrived
         << " arrived, " << held << " held:\n" << where;
    throw UserError(what.str());
  }
  r.set("wrong", m.wrong);  // every packet sent during the point, checked
  return {std::move(r)};
}

void TrafficWorkload::print_header(std::ostream& os) const {
  const auto& t = platform_->topology();
  const auto& pp = gen_.pattern;
  const uint32_t wire = generators_[0]->wire_bytes();
  os << "# incsim traffic: " << traffic::pattern_description(pp.pattern);
  if (pp.pattern == traffic::Pattern::Uniform || pp.pattern == traffic::Pattern::Hotspot)
    os << " (source " << (pp.uniform_self ? "included" : "excluded") << ")";
  if (pp.pattern == traffic::Pattern::Hotspot) os << ", " << pp.hot_fraction << " of packets to endpoint " << pp.hot_node;
  os << " on " << t.endpoints().size() << " endpoints, platform " << t.name << " ("
     << count_of(t.switches().size(), "switch", "switches") << ", " << t.links().size() << " links, routing " << t.routing << "), seed " << opt_.seed << "\n";
  os << std::fixed << std::setprecision(2) << "# injection: Bernoulli, one trial per flit time ("
     << platform_->format().flit_bytes << " B at " << inject_GBps_ << " GB/s per endpoint); packets "
     << gen_.payload_bytes << " B payload, " << wire << " B on the wire, posted (no acks); load = offered wire "
     << "bytes over " << inject_GBps_ << " GB/s\n";
  os << std::setprecision(0) << "# measurement: warm-up " << warmup_.to_seconds() * 1e9 << " ns, window "
     << window_.to_seconds() * 1e9 << " ns, drain up to " << drain_limit_.to_seconds() * 1e9
     << " ns; latency from creation (source queue included) to tail arrival, network latency from leaving the "
     << "source port (Dally and Towles ch. 23-24, BookSim)\n";
  os << std::setprecision(1) << "# zero-load latency: " << zero_load_.mean_ns << " ns mean (" << zero_load_.min_ns
     << " to " << zero_load_.max_ns << "), " << std::setprecision(2) << zero_load_.mean_switches
     << " switches per packet; channel-load bound: saturation at " << std::setprecision(3) << bound_.saturation
     << " (" << bound_.bottleneck << ")\n";
}

void TrafficWorkload::config_json(nlohmann::ordered_json& config) const {
  config["traffic"] = traffic::pattern_name(gen_.pattern.pattern);
  config["load"] = opt_.load;
  config["endpoints"] = generators_.size();
}

void TrafficWorkload::summary_json(nlohmann::ordered_json& j) const {
  j["injection_GBps"] = inject_GBps_;
  j["packet_wire_bytes"] = generators_[0]->wire_bytes();
  j["zero_load_latency_ns"] = {{"mean", zero_load_.mean_ns}, {"min", zero_load_.min_ns}, {"max", zero_load_.max_ns}};
  j["mean_switches"] = zero_load_.mean_switches;
  j["channel_load_bound"] = {{"saturation", bound_.saturation}, {"bottleneck", bound_.bottleneck}};
}

}  // namespace incsim::tb
