#include "netreduce.h"

#include <iomanip>
#include <numeric>
#include <ostream>

#include "choices.h"
#include "collective_workload.h"
#include "collectives/program_synthesis.h"
#include "core/error.h"
#include "core/units.h"
#include "platforms/netreduce_machines.h"
#include "platforms/platform.h"

namespace incsim::tb {

namespace {
const Param<uint32_t> kWindow{"netreduce.window", 2, Range::at_least(1).at_most(1 << 16),
                              "messages in flight per host, N (NetReduce §5.1: \"the sliding window size N = 2\")"};
const Param<uint32_t> kMsgLen{"netreduce.msg_len", 170, Range::at_least(1).at_most(1 << 20),
                              "packets per message, MsgLen (NetReduce §5.1: \"each message has 170 packets\")"};
}  // namespace

namespace {
// A built-in platform's shape from its flags.
platforms::NetReduceShape builtin_shape(const Options& o, bool in_network, Config& cfg) {
  const bool spineleaf = o.platform == "spineleaf", multigpu = o.platform == "multigpu";
  if (!(o.platform == "rack") && o.hosts)
    throw UserError("--hosts is for platform rack; spineleaf takes --racks and --hosts-per-rack, multigpu "
                    "--machines and --gpus-per-machine");
  if (!spineleaf && (o.racks || o.hosts_per_rack))
    throw UserError("--racks and --hosts-per-rack are for platform spineleaf");
  if (!multigpu && (o.machines || o.gpus_per_machine))
    throw UserError("--machines and --gpus-per-machine are for platform multigpu");
  // NetReduce §5.1, Testbed 1: six machines; Fig. 5: two racks (of two; four
  // here); Testbed 2: four machines of eight GPUs.
  const int racks = spineleaf ? (o.racks ? o.racks : 2) : multigpu ? (o.machines ? o.machines : 4) : 1;
  const int per_rack = spineleaf  ? (o.hosts_per_rack ? o.hosts_per_rack : 4)
                       : multigpu ? (o.gpus_per_machine ? o.gpus_per_machine : 8)
                                  : (o.hosts ? o.hosts : 6);
  if (multigpu && racks < 2) throw UserError("platform multigpu needs at least 2 machines");
  using Layout = platforms::NetReduceShape::Layout;
  return platforms::netreduce_shape(multigpu ? Layout::MultiGpu : spineleaf ? Layout::SpineLeaf : Layout::Rack, racks,
                                    per_rack, in_network, cfg);
}
}  // namespace

int netreduce_ranks(const Options& o, Config& cfg) {
  if (!o.ring.empty()) return static_cast<int>(o.ring.size());
  if (platforms::is_platform_file(o.platform))
    return platforms::netreduce_shape(platforms::make_topology(o.platform, {}, cfg), "platform file " + o.platform)
        .hosts();
  return builtin_shape(o, false, cfg).hosts();
}

std::pair<platforms::NetReduceShape, topo::Topology> netreduce_machine(const Options& o, bool in_network,
                                                                      Config& cfg) {
  if (platforms::is_platform_file(o.platform)) {
    topo::Topology graph = platforms::make_topology(o.platform, {}, cfg);
    return {platforms::netreduce_shape(graph, "platform file " + o.platform), std::move(graph)};
  }
  const platforms::NetReduceShape shape = builtin_shape(o, in_network, cfg);
  return {shape, platforms::netreduce_topology(shape)};
}

bool is_netreduce_platform(const std::string& platform) {
  if (platforms::is_platform_file(platform)) {
    const std::string family = platforms::file_family(platform);
    return family == topo::Topology::kNetReduce || family == topo::Topology::kNetReduceMultiGpu;
  }
  return platform == "rack" || platform == "spineleaf" || platform == "multigpu";
}

NetReduceWorkload::NetReduceWorkload(const Options& o, Config& cfg, const Share* share,
                                     const std::vector<uint64_t>* sizes)
    : opt_(o), cfg_(cfg) {
  if (share) opt_.ring = share->hosts;
  // Alone only: jobs and training on these platforms run at packet level (workloads.cpp).
  const bool flow = flows_ = opt_.fidelity == "flow";
  if (flow) refuse_packet_outputs(opt_, true);
  *schema_ = nccl_schema();
  refuse_options(opt_, {"load"}, "applies to --traffic only");
  refuse_options(opt_, {"dims", "nodes", "node"}, "shapes the GPU fabrics, not platform " + opt_.platform);
  if (opt_.collective != "allreduce")
    throw UserError("platform '" + opt_.platform + "' runs allreduce only, not " + opt_.collective);
  // A file gives the machine whole; a built-in name takes its shape from the flags.
  const bool file = platforms::is_platform_file(opt_.platform);
  if (file)
    refuse_options(opt_, {"hosts", "racks", "hosts-per-rack", "machines", "gpus-per-machine"},
                   "shapes a built-in platform; platform file " + opt_.platform + " gives its own");
  multigpu_ = share ? share->shape.layout == platforms::NetReduceShape::Layout::MultiGpu
              : file ? platforms::file_family(opt_.platform) == topo::Topology::kNetReduceMultiGpu
                     : opt_.platform == "multigpu";
  const std::string accepted = algorithms_for("allreduce", multigpu_ ? Family::MultiGpu : Family::Rack);
  if (is_program_file(opt_.algorithm)) {
    // A program the RoCE hosts run; the model and bound are those of the
    // algorithm it is (or, by what it does, the ring or NetReduce).
    file_program_ = read_checked_program(opt_.algorithm);
    if (file_program_.engine() != collectives::Engine::RoceNic)
      throw UserError(opt_.algorithm + " runs on the GPUs' " +
                      std::string(collectives::engine_name(file_program_.engine())) + " engine; the hosts of platform " +
                      opt_.platform + " run programs of roce operations");
    bool aggregates = false;
    for (const auto& op : file_program_.ops) aggregates |= op.kind == collectives::OpKind::Aggregate;
    algorithm_ = one_of(file_program_.name, accepted) ? file_program_.name
                 : aggregates                          ? (multigpu_ ? "pnetreduce" : "netreduce")
                                                       : (multigpu_ ? "flatring" : "ring");
  } else {
    if (opt_.algorithm.empty()) opt_.algorithm = accepted.substr(0, accepted.find(','));
    check_choice("algorithm", opt_.algorithm, choice_list("algorithm"));
    if (!one_of(opt_.algorithm, accepted))
      throw UserError("algorithm '" + opt_.algorithm + "' does not run on platform " + opt_.platform +
                      "; choose one of " + accepted);
    algorithm_ = opt_.algorithm;
  }
  if (opt_.gpus) throw UserError("platform " + opt_.platform + " takes --hosts, not --gpus");
  std::tie(dtype_, redop_, sizes_) = parse_data(opt_, sizes);
  const collectives::Algorithm& algorithm =
      *collectives::find_algorithm(algorithm_, multigpu_ ? Family::MultiGpu : Family::Rack);
  const bool in_network = algorithm.in_switches();
  platforms::NetReduceShape shape;
  topo::Topology graph;
  if (share)
    shape = share->shape;
  else
    std::tie(shape, graph) = netreduce_machine(opt_, in_network, cfg_);
  if (in_network && !shape.with_fpga)
    throw UserError("platform " + opt_.platform + " has no fpga_aggregator to run " + algorithm_ +
                    " on; add one, or run --algorithm " + (multigpu_ ? "flatring" : "ring"));
  if (flow && in_network && shape.layout == platforms::NetReduceShape::Layout::SpineLeaf)
    throw UserError("--fidelity flow: " + algorithm_ + " on spineleaf aggregates in the leaves' FPGAs and the spine's "
                    "(NetReduce §3.3), which flows do not model; run it at packet level, or the ring as flows");
  if (!flow)
    check_memory(sizes_, shape.hosts(),
                 "a buffer of that size on each of " + std::to_string(shape.hosts()) + (multigpu_ ? " GPUs" : " hosts"),
                 false);

  const uint32_t window = cfg_.get(kWindow);
  uint32_t msg_len = msg_len_asked_ = cfg_.get(kMsgLen);

  job_ = std::make_unique<platforms::NetReduceJob>(shape, in_network, opt_.ring, in_network ? cfg_.get(netreduce::kCltEntries) : 0,
                                        share ? share->job : -1);
  if (share) {
    machine_ = share->machine;
  } else {
    own_machine_ = std::make_unique<platforms::Machine>(std::move(graph), cfg_, opt_.seed);
    machine_ = own_machine_.get();
  }
  job_->attach(*machine_);
  // Its aggregator arrays, in what the FPGAs' memory leaves it (fpga.aggregator.bytes).
  if (in_network) msg_len = job_->msg_len_for(window, msg_len);
  job_->program(opt_.seed);
  const uint16_t ring_id = in_network ? job_->add_ring(window, msg_len, dtype_, redop_) : 0;
  platforms::NetReduceCall::Setup setup{make_program(algorithm, cfg_), msg_len, window, ring_id, dtype_, redop_,
                                        opt_.seed, in_network, algorithm.masters_ring(), flow};
  call_ = std::make_unique<platforms::NetReduceCall>(
      *machine_, *job_, std::move(setup),
      "netreduce_drain" + (share ? "_job" + std::to_string(share->job) : std::string()));

  if (multigpu_)  // the appendix's model and the values it was given
    schema_->add({"model_us", "us", ColumnKind::Measurement})
        .add({"alpha_us", "us", ColumnKind::Setting})
        .add({"B_inter_payload_GBps", "GB/s", ColumnKind::Setting})
        .add({"B_intra_payload_GBps", "GB/s", ColumnKind::Setting});
  for (const char* c : {"goodput_Gbps", "throughput_Gbps"}) schema_->add({c, "Gb/s", ColumnKind::Measurement});
  for (const char* c : {"frames_lost", "icrc_drops", "retransmitted_packets", "timeouts", "first_lost_drops",
                        "results_sent_again"})
    schema_->add({c, "packets", ColumnKind::Measurement});
  schema_->add({"packet_hops", "packets", ColumnKind::Measurement});
}

NetReduceWorkload::~NetReduceWorkload() = default;

sc_core::sc_time NetReduceWorkload::default_stall_timeout() const { return job_->default_stall_timeout(); }

void NetReduceWorkload::trace(sc_core::sc_trace_file* tf) const { call_->trace(tf); }

// The algorithm's program (collectives/program_synthesis.h), or the file's,
// on the ring's ranks.
collectives::Program NetReduceWorkload::make_program(const collectives::Algorithm& algorithm, Config& cfg) const {
  const int ranks = job_->ring_size();
  const int machines = job_->racks(), per_machine = ranks / machines;
  if (!file_program_.ops.empty()) {
    const collectives::Program& p = file_program_;
    const std::string& path = opt_.algorithm;
    if (p.ranks != ranks)
      throw UserError(path + " has " + std::to_string(p.ranks) + " ranks, but platform " + opt_.platform + " runs " +
                      std::to_string(ranks) + " hosts");
    // An aggregation runs on the FPGA's rings as the job installs them: the
    // whole ring (channel 0), or on multigpu GPU i of every machine (group
    // i, channel 2).
    for (size_t g = 0; g < p.groups.size(); ++g) {
      std::vector<int> ring;
      for (int k = 0; k < (multigpu_ ? machines : ranks); ++k)
        ring.push_back(multigpu_ ? k * per_machine + static_cast<int>(g) : k);
      if (p.groups[g] != ring)
        throw UserError(path + ": group " + std::to_string(g) + " is not a ring the FPGA aggregates (" +
                        (multigpu_ ? "GPU " + std::to_string(g) + " of every machine" : std::string("every host")) +
                        ", in order)");
    }
    for (const auto& o : p.ops)
      if (o.kind == collectives::OpKind::Aggregate && o.channel != (multigpu_ ? 2 : 0))
        throw UserError(path + ": an aggregation on channel " + std::to_string(o.channel) +
                        " bypasses the FPGA, which sees channel " + (multigpu_ ? "2" : "0"));
    return p;
  }
  // The ring's ranks, by machine on multigpu.
  std::vector<int> ring(static_cast<size_t>(ranks));
  std::iota(ring.begin(), ring.end(), 0);
  std::vector<std::vector<int>> by_machine;
  for (int m = 0; multigpu_ && m < machines; ++m)
    by_machine.emplace_back(ring.begin() + m * per_machine, ring.begin() + (m + 1) * per_machine);
  const collectives::Site site{machine_->topology(), opt_.platform, collectives::Collective::AllReduce, ring, false,
                               -1, by_machine, 0, "simple", 0, 0, true, cfg};
  return algorithm.synthesize(site).program;
}

void NetReduceWorkload::print(const std::string& what, std::ostream& os) const {
  if (what != "program") Workload::print(what, os);
  os << collectives::write_program(call_->program());
}

double NetReduceWorkload::done_fraction() const { return call_->done_fraction(); }

std::vector<Row> NetReduceWorkload::run_point(size_t si, Runner& run, std::ostream& notes) {
  const std::string what = "size " + size_label(sizes_[si]);
  if (flows_) {
    run.run_plain(what, [&](const Runner::Poll& poll) {
      call_->run_alone(sizes_[si], [&](const std::function<double()>&, double now_ns) { poll(now_ns / 1e3); });
    });
    return {finish(si, notes)};
  }
  call_->start(sizes_[si], [] { sc_core::sc_pause(); });
  run.run_until([this] { return call_->done(); }, what);
  // The last ACKs: every connection drains before the next size starts,
  // so no retransmission of this size meets the next one's messages.
  run.run_until([this] { return call_->drained(); }, what, sc_core::sc_time(1, sc_core::SC_US));
  return {finish(si, notes)};
}

// The time and bound, the appendix's model on multigpu, the goodput; at
// packet level what loss cost (as flows nothing is lost, resent or counted
// as packets: those columns read "-").
Row NetReduceWorkload::finish(size_t si, std::ostream& notes) {
  const uint64_t bytes = sizes_[si];
  const platforms::Measures m = call_->measures();
  Row r(schema_);
  fill_nccl(r, bytes, elements::dtype_name(dtype_), m.redop, m.time_us, m.busbw_factor, m.wrong, m.bound_us);
  const double model = call_->model_us(bytes);
  if (multigpu_)
    r.set("model_us", model)
        .set("alpha_us", job_->hop_latency().to_seconds() * 1e6)
        .set("B_inter_payload_GBps", call_->endpoint_GBps())
        .set("B_intra_payload_GBps", call_->intra_GBps());
  r.set("goodput_Gbps", 8.0 * static_cast<double>(bytes) / (m.time_us * 1e3));
  // Under a memory budget, how much its arrays took and the MsgLen that left them (a jobs run's grants).
  if (call_->in_network() && job_->fpga()->memory_bytes())
    r.details["aggregator"] = {{"bytes", job_->aggregator_memory()}, {"msg_len", call_->msg_len()}};
  if (multigpu_)
    notes << std::fixed << std::setprecision(2) << "#   Eq. (" << call_->model_equation()
          << "): " << model << " us; simulated / model " << std::setprecision(3) << m.time_us / model << "\n";
  if (const platforms::Measures::Roce* x = m.roce ? &*m.roce : nullptr) {
    r.set("throughput_Gbps", x->throughput_Gbps)
        .set("frames_lost", x->lost)
        .set("icrc_drops", x->icrc_drops)
        .set("retransmitted_packets", x->retransmitted)
        .set("timeouts", x->timeouts)
        .set("first_lost_drops", x->first_lost)
        .set("results_sent_again", x->resent)
        .set("packet_hops", x->packet_hops);
  } else {
    r.set("wrong", std::string("-"));
    for (const char* c : {"throughput_Gbps", "frames_lost", "icrc_drops", "retransmitted_packets", "timeouts",
                          "first_lost_drops", "results_sent_again", "packet_hops"})
      r.set(c, std::string("-"));
  }
  call_->note(notes, m);
  return r;
}

// Beside the blocks' held packets: which hosts are not done, and where.
void NetReduceWorkload::report_stall(std::ostream& os) const { call_->report_stall(os); }

void NetReduceWorkload::print_header(std::ostream& os) const {
  const int hosts = job_->hosts();
  const int racks = job_->racks();
  os << "# incsim: allreduce " << opt_.algorithm << " on ";
  if (opt_.ring.empty()) {
    os << hosts;
  } else {
    os << "a ring of " << job_->ring_size() << " of the " << hosts;
  }
  os << " hosts, platform " << opt_.platform << " (";
  if (racks == 1)
    os << "1 Ethernet switch, " << (job_->fpga() ? std::to_string(hosts) + "-port FPGA aggregator, " : std::string());
  else if (multigpu_)
    os << racks << " machines of " << hosts / racks << " GPUs, B_intra " << std::setprecision(1) << std::fixed
       << job_->host_link_GBps() << " GB/s, one NIC each, 1 Ethernet switch"
       << (job_->fpga() ? " with an FPGA aggregator (" + std::to_string(hosts / racks) + " rings), " : ", ");
  else
    os << racks << " leaves of " << hosts / racks << " hosts and a spine, "
       << (job_->fpga() ? "an FPGA aggregator on each (hierarchical, CTT), " : std::string());
  os << std::setprecision(0) << std::fixed << job_->line_GBps() * 8 << " GbE, RoCE RC), seed " << opt_.seed << "\n";
  if (flows_) call_->describe_fidelity(os);
  call_->describe(os, sizes_.back(), opt_.algorithm);
  if (const netreduce::FpgaAggregator* f = job_->fpga(); f && call_->in_network() && f->memory_bytes()) {
    os << "# aggregator memory: " << job_->aggregator_memory() << " B of " << netreduce::kAggregatorBytes.key() << "="
       << f->memory_bytes();
    if (call_->msg_len() < msg_len_asked_)
      os << ", too little for netreduce.msg_len=" << msg_len_asked_ << ": MsgLen " << call_->msg_len();
    os << "\n";
  }
  if (!opt_.ring.empty()) {
    os << "# ring order (hosts):";
    for (int k = 0; k < job_->ring_size(); ++k) os << " " << job_->ring_host(k);
    os << "\n";
  }
}

void NetReduceWorkload::config_json(nlohmann::ordered_json& config) const {
  if (flows_) config["fidelity"] = "flow";
  config["collective"] = "allreduce";
  config["algorithm"] = opt_.algorithm;
  config["hosts"] = job_->hosts();
  config["racks"] = job_->racks();
  if (job_->racks() == 1) {  // the others build their rings themselves
    config["ring"] = nlohmann::ordered_json::array();
    for (int k = 0; k < job_->ring_size(); ++k) config["ring"].push_back(job_->ring_host(k));
  }
  config["dtype"] = elements::dtype_name(dtype_);
  config["redop"] = elements::redop_name(redop_);
  config["sizes"] = opt_.sizes;
}

void NetReduceWorkload::summary_json(nlohmann::ordered_json& top) const { top["endpoint_payload_GBps"] = call_->endpoint_GBps(); }

}  // namespace incsim::tb
