#include "netreduce.h"

#include <numeric>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <ostream>

#include "choices.h"
#include "collective_workload.h"
#include "ethernet/roce_frame.h"
#include "platforms/ethernet_fabric.h"
#include "core/error.h"
#include "core/units.h"
#include "platforms/platform.h"
#include "platforms/netreduce_machines.h"
#include "collectives/executor.h"
#include "collectives/program_check.h"
#include "collectives/program_synthesis.h"
#include "roce/host_program.h"

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

struct NetReduceWorkload::Totals {
  uint64_t frame_bytes = 0, lost = 0, retransmitted = 0, timeouts = 0, icrc_drops = 0, first_lost = 0, resent = 0;
};

struct NetReduceWorkload::Point {
  std::vector<uint64_t> before_packets;  // [link end]
  Totals t0;
  sc_core::sc_time start, end;
  int finished = 0;  // hosts with their result
  std::function<void()> on_done;
};

NetReduceWorkload::NetReduceWorkload(const Options& o, Config& cfg, const Share* share) : opt_(o), cfg_(cfg) {
  if (share) opt_.ring = share->hosts;
  // Alone only: jobs and training on these platforms run at packet level (workloads.cpp).
  const bool flow = opt_.fidelity == "flow";
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
  std::tie(dtype_, redop_, sizes_) = parse_data(opt_);
  const collectives::Algorithm& algorithm =
      *collectives::find_algorithm(algorithm_, multigpu_ ? Family::MultiGpu : Family::Rack);
  const bool in_network = algorithm.in_switches();
  masters_ring_ = algorithm.masters_ring();
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

  window_ = cfg_.get(kWindow);
  msg_len_ = msg_len_asked_ = cfg_.get(kMsgLen);

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
  if (in_network) msg_len_ = job_->msg_len_for(window_, msg_len_);
  job_->program(opt_.seed);
  if (in_network) ring_id_ = job_->add_ring(window_, msg_len_, dtype_, redop_);
  const uint32_t mtu = job_->mtu_payload();
  // Per packet: the headers of every packet, plus the RETH and INA header of
  // each message's first packet, shared by its MsgLen packets.
  const double per_packet = mtu + eth::kEthWireOverhead + eth::kRoceOverhead +
                            (eth::kRethBytes + (in_network ? eth::kInaBytes : 0)) / static_cast<double>(msg_len_);
  payload_GBps_ = job_->ring_GBps() * mtu / per_packet;
  intra_payload_GBps_ = job_->host_link_GBps() * mtu / per_packet;
  const int ranks = job_->ring_size();
  pattern_ = std::make_unique<elements::DataPattern>(opt_.seed, ranks, dtype_, redop_);
  roce::HostConfig hc{mtu, msg_len_, window_, ring_id_};
  in_network_ = in_network;
  program_ = make_program(algorithm, cfg_);
  if (flow) flows_ = job_->flows(program_, msg_len_, window_, dtype_);
  else hosts_ = job_->host_programs(program_, hc, pattern_.get(), dtype_, redop_);

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
  spawn_method(
      ("netreduce_drain" + (share ? "_job" + std::to_string(share->job) : std::string())).c_str(),
      [this] {
        drain_.fired();
        if (!point_ || !point_->on_done) return;
        if (!drained()) return drain_.after(sc_core::sc_time(1, sc_core::SC_US));
        const auto on_done = std::move(point_->on_done);
        point_->on_done = nullptr;
        on_done();
      },
      &drain_.event);
}

NetReduceWorkload::~NetReduceWorkload() = default;

sc_core::sc_time NetReduceWorkload::default_stall_timeout() const { return job_->default_stall_timeout(); }

void NetReduceWorkload::trace(sc_core::sc_trace_file* tf) const {
  for (int i = 0; i < job_->ring_size(); ++i)
    sc_core::sc_trace(tf, hosts_[i]->progress_ref(), "host" + std::to_string(job_->ring_host(i)) + ".op");
}

// The bandwidth term alone (the bound) or with the latency term (the
// appendix's model): Eq. (1) for the flat ring, Eq. (3) for Parallel
// NetReduce, with B the payload bandwidths and alpha the hop latency.
double NetReduceWorkload::model_us(uint64_t bytes, bool with_alpha) const {
  const int p = job_->ring_size(), n = p / job_->racks();
  const double a = with_alpha ? job_->hop_latency().to_seconds() * 1e6 : 0.0;
  const double b_inter = payload_GBps_ * 1e3, b_intra = intra_payload_GBps_ * 1e3;  // B/us
  if (!multigpu_)
    return in_network_ ? a + bytes / b_inter : 2.0 * (p - 1) * a + 2.0 * (p - 1) / p * bytes / b_inter;
  if (masters_ring_ && !with_alpha) {  // the masters' ring all-reduce alone
    const double m_count = job_->racks();
    return 2.0 * (m_count - 1) / m_count * bytes / b_inter;
  }
  if (masters_ring_) {  // Eq. (2)
    const double lat = (n * n + 3.0 * n * std::log2(n) - 3.0 * n + 2.0 * p) / n * a;
    return lat + (4.0 * (n - 1) * p * b_inter + 2.0 * (p - n) * n * b_intra) / (n * p * b_intra * b_inter) * bytes;
  }
  if (!in_network_) return 2.0 * (p - 1) * a + 2.0 * (p - 1) / p * bytes / b_inter;  // Eq. (1)
  return (2.0 * n - 1) * a + (2.0 * (n - 1) * b_inter + n * b_intra) / (n * b_intra * b_inter) * bytes;  // Eq. (3)
}

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
                               -1, by_machine, 0, "simple", 0, 0, cfg};
  return algorithm.synthesize(site).program;
}

void NetReduceWorkload::print(const std::string& what, std::ostream& os) const {
  if (what != "program") Workload::print(what, os);
  os << collectives::write_program(program_);
}

double NetReduceWorkload::done_fraction() const {
  if (flows_) return fraction_ ? (*fraction_)() : -1;
  return collectives::done_fraction(hosts_);
}

uint64_t NetReduceWorkload::host_peak_bytes() const {
  uint64_t most = 0;
  for (const auto& h : hosts_) most = std::max(most, h->peak_bytes());
  return most;
}

NetReduceWorkload::Totals NetReduceWorkload::totals() const {
  Totals t;
  for (int k = 0; k < job_->ring_size(); ++k) {
    const roce::RoceNic& n = job_->nic(job_->ring_host(k));
    t.frame_bytes += n.frame_bytes_sent();
    t.retransmitted += n.retransmitted();
    t.timeouts += n.timeouts();
    t.icrc_drops += n.icrc_drops();
  }
  t.lost = machine_->frames_lost();
  for (const auto& f : job_->fpgas()) {
    const auto c = f->counters();
    t.icrc_drops += c.icrc_drops;
    t.first_lost += c.first_lost_drops;
    t.resent += f->ring(ring_id_).resent();
  }
  return t;
}

void NetReduceWorkload::begin(size_t) {
  point_ = std::make_unique<Point>();
  const auto& ends = machine_->link_ends();
  point_->before_packets.resize(ends.size());
  for (size_t k = 0; k < ends.size(); ++k) point_->before_packets[k] = ends[k].port->packets_sent();
  point_->t0 = totals();
  point_->start = sc_core::sc_time_stamp();
}

bool NetReduceWorkload::drained() const {
  for (int k = 0; k < job_->ring_size(); ++k)
    if (!job_->nic(job_->ring_host(k)).idle()) return false;
  return true;
}

std::vector<Row> NetReduceWorkload::run_point(size_t si, Runner& run, std::ostream& notes) {
  if (flows_) {
    flow::Executor::Result res;
    run.run_plain("size " + size_label(sizes_[si]), [&](const Runner::Poll& poll) {
      res = flows_->run(sizes_[si], [&](const std::function<double()>& fraction, double now_ns) {
        fraction_ = &fraction;
        poll(now_ns / 1e3);
        fraction_ = nullptr;
      });
    });
    return {flow_row(si, res, notes)};
  }
  const int hosts = job_->ring_size();  // the workers
  begin(si);
  Point& p = *point_;
  auto done = [&] {
    if (++p.finished == hosts) {
      p.end = sc_core::sc_time_stamp();
      sc_core::sc_pause();
    }
  };
  for (auto& h : hosts_) h->start(sizes_[si], done);
  const std::string what = "size " + size_label(sizes_[si]);
  run.run_until([&] { return p.finished == hosts; }, what);
  // The last ACKs: every connection drains before the next size starts,
  // so no retransmission of this size meets the next one's messages.
  run.run_until([this] { return drained(); }, what, sc_core::sc_time(1, sc_core::SC_US));
  return {finish(si, notes)};
}

void NetReduceWorkload::start(size_t si, std::function<void()> on_done) {
  begin(si);
  point_->on_done = std::move(on_done);
  const platforms::EthernetFabric& f = machine_->fabric_as<platforms::EthernetFabric>();
  const bool faults = f.link_loss() > 0 || f.link_corruption() > 0;
  for (auto& h : hosts_)
    h->start(sizes_[si], [this, faults] {
      Point& p = *point_;
      if (++p.finished < job_->ring_size()) return;
      p.end = sc_core::sc_time_stamp();
      if (faults) return drain_.after(sc_core::SC_ZERO_TIME);
      const auto on_done = std::move(p.on_done);
      p.on_done = nullptr;
      on_done();
    });
}

Row NetReduceWorkload::finish(size_t si, std::ostream& notes) {
  const int hosts = job_->ring_size();  // the workers
  const uint64_t bytes = sizes_[si];
  const auto& ends = machine_->link_ends();
  const Point& p = *point_;
  const Totals& t0 = p.t0;
  const Totals t1 = totals();
  Row r(schema_);
  const double time_us = (p.end - p.start).to_seconds() * 1e6;
  fill_row(r, si, time_us, collectives::wrong(hosts_), notes);
  const double goodput = 8.0 * static_cast<double>(bytes) / (time_us * 1e3);
  // Frames the hosts sent up to the end of the collective, per host.
  const double throughput = 8.0 * static_cast<double>(t1.frame_bytes - t0.frame_bytes) / hosts / (time_us * 1e3);
  uint64_t hops = 0;
  for (size_t k = 0; k < ends.size(); ++k) hops += ends[k].port->packets_sent() - p.before_packets[k];
  r.set("throughput_Gbps", throughput)
      .set("frames_lost", t1.lost - t0.lost)
      .set("icrc_drops", t1.icrc_drops - t0.icrc_drops)
      .set("retransmitted_packets", t1.retransmitted - t0.retransmitted)
      .set("timeouts", t1.timeouts - t0.timeouts)
      .set("first_lost_drops", t1.first_lost - t0.first_lost)
      .set("results_sent_again", t1.resent - t0.resent)
      .set("packet_hops", hops);
  // On multigpu a host is a GPU: its frames cross the machine's fabric, not only the NIC.
  notes << std::fixed << std::setprecision(2) << "#   goodput " << goodput << " Gbps, throughput " << throughput
        << (multigpu_ ? " Gbps per GPU (frames it sends into its machine, toward a GPU or the NIC); "
                      : " Gbps per host; ") << t1.lost - t0.lost << " frames lost, " << t1.icrc_drops - t0.icrc_drops
        << " failed the ICRC, " << t1.retransmitted - t0.retransmitted << " packets retransmitted ("
        << t1.timeouts - t0.timeouts << " timeouts)";
  if (in_network_)
    notes << ", " << t1.first_lost - t0.first_lost << " dropped for a lost first packet, " << t1.resent - t0.resent
          << " results sent again";
  notes << "\n";
  return r;
}

// What both fidelities report: the time and bound, the appendix's model on
// multigpu, the goodput.
void NetReduceWorkload::fill_row(Row& r, size_t i, double time_us, uint64_t wrong, std::ostream& notes) const {
  const int hosts = job_->ring_size();
  const uint64_t bytes = sizes_[i];
  fill_nccl(r, bytes, elements::dtype_name(dtype_), elements::redop_name(redop_), time_us,
            2.0 * (hosts - 1) / hosts, wrong, model_us(bytes, false));
  const double model = model_us(bytes, true);
  if (multigpu_)
    r.set("model_us", model)
        .set("alpha_us", job_->hop_latency().to_seconds() * 1e6)
        .set("B_inter_payload_GBps", payload_GBps_)
        .set("B_intra_payload_GBps", intra_payload_GBps_);
  r.set("goodput_Gbps", 8.0 * static_cast<double>(bytes) / (time_us * 1e3));
  // Under a memory budget, how much its arrays took and the MsgLen that left them (a jobs run's grants).
  if (in_network_ && job_->fpga()->memory_bytes())
    r.details["aggregator"] = {{"bytes", job_->aggregator_memory()}, {"msg_len", msg_len_}};
  if (multigpu_)
    notes << std::fixed << std::setprecision(2) << "#   Eq. (" << (in_network_ ? 3 : masters_ring_ ? 2 : 1)
          << "): " << model << " us; simulated / model " << std::setprecision(3) << time_us / model << "\n";
}

// As flows nothing is lost, resent or counted as packets: those columns read "-".
Row NetReduceWorkload::flow_row(size_t i, const flow::Executor::Result& res, std::ostream& notes) const {
  Row r(schema_);
  fill_row(r, i, res.time_ns / 1e3, 0, notes);
  r.set("wrong", std::string("-"));
  for (const char* c : {"throughput_Gbps", "frames_lost", "icrc_drops", "retransmitted_packets", "timeouts",
                        "first_lost_drops", "results_sent_again", "packet_hops"})
    r.set(c, std::string("-"));
  notes << std::fixed << std::setprecision(2) << "#   goodput " << 8.0 * static_cast<double>(sizes_[i]) / res.time_ns
        << " Gbps per " << (multigpu_ ? "GPU" : "host") << "; flows: " << res.transfers << " messages, at most "
        << res.most_active << " in flight at once\n";
  return r;
}

// Beside the blocks' held packets: which hosts are not done, and where.
void NetReduceWorkload::report_stall(std::ostream& os) const {
  for (size_t i = 0; i < hosts_.size(); ++i)
    if (!hosts_[i]->finished())
      os << "  host" << job_->ring_host(static_cast<int>(i)) << ": not done, at " << hosts_[i]->where() << "\n";
}

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
  if (flows_)
    os << "# fidelity: flow (docs/flow.md): each message a flow sharing its links max-min fairly, with the hosts' "
          "posting and delivery latencies" << (in_network_ ? " and the FPGA's pipeline" : "")
       << "; elements were not simulated (#wrong: -); what flows cannot see: switch buffers, head-of-line "
          "blocking, loss and go-back-N\n";
  os << "# bound: " << std::setprecision(2) << payload_GBps_ << " GB/s = " << payload_GBps_ * 8
     << " Gbps payload per host (";
  if (job_->ring_GBps() < job_->line_GBps())
    os << "its ring's slowest link, " << job_->ring_GBps() << " GB/s,";
  else
    os << "line rate";
  os << " less Ethernet/IP/UDP/BTH/ICRC per " << job_->mtu_payload()
     << " B packet)";
  if (multigpu_)
    os << "; B_intra payload " << std::setprecision(2) << intra_payload_GBps_ << " GB/s; alpha (one GPU-to-GPU hop) "
       << job_->hop_latency().to_seconds() * 1e6 << " us";
  if (job_->fpga())
    os << "; window N = " << window_ << ", MsgLen = " << msg_len_ << " packets, aggregator array 2N x MsgLen = "
       << 2 * window_ * msg_len_ << " packets";
  os << "\n";
  if (const netreduce::FpgaAggregator* f = job_->fpga(); f && in_network_ && f->memory_bytes()) {
    os << "# aggregator memory: " << job_->aggregator_memory() << " B of " << netreduce::kAggregatorBytes.key() << "="
       << f->memory_bytes();
    if (msg_len_ < msg_len_asked_)
      os << ", too little for netreduce.msg_len=" << msg_len_asked_ << ": MsgLen " << msg_len_;
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

void NetReduceWorkload::summary_json(nlohmann::ordered_json& top) const { top["endpoint_payload_GBps"] = payload_GBps_; }

}  // namespace incsim::tb
