#include "flow_collective.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <ostream>
#include <sstream>
#include <tuple>
#include <utility>

#include "choices.h"
#include "collective_workload.h"
#include "collectives/bounds.h"
#include "collectives/composition.h"
#include "core/error.h"
#include "core/units.h"
#include "credit_switch/credit_switch.h"
#include "flow/copy_flows.h"
#include "gpu/copy_collective.h"
#include "gpu/cores.h"
#include "gpu/gpu.h"
#include "adapter/hca.h"
#include "ethernet/roce_frame.h"
#include "net/packet.h"
#include "nvswitch/reduction_table.h"
#include "platforms/bounds.h"
#include "platforms/communicator.h"
#include "platforms/ethernet_fabric.h"
#include "platforms/gpu_fabric.h"
#include "platforms/infiniband_fabric.h"
#include "platforms/platform.h"
#include "topology/cluster.h"
#include "topology/multicast.h"

namespace incsim::tb {

void refuse_packet_outputs(const Options& o, bool timeline) {
  for (const auto& [given, what] : {std::pair{"vcd", "a VCD of packets"}, std::pair{"timeline", "a timeline of the blocks"},
                                    std::pair{"dump-platform", "the packet-level machine's graph"}})
    if (o.was_given(given) && (timeline || std::string(given) != "timeline"))
      throw UserError(std::string("--") + given + " shows " + what + ", which --fidelity flow does not build");
}

namespace {
// A GPU memory access's latency and jitter, ns, as the GPUs read them (gpu/gpu.cpp).
std::pair<double, double> memory_ns(Config& cfg, const platforms::PlatformDefaults& d) {
  const gpu::GpuConfig g = platforms::gpu_memory(cfg, d);
  return {g.mem_latency_cycles / g.clock_ghz, g.mem_jitter_cycles / g.clock_ghz};
}
}  // namespace

FlowCollectiveWorkload::FlowCollectiveWorkload(const Options& o, Config& cfg, const Share* share,
                                               const collectives::Synthesis* fixed)
    : opt_(o), cfg_(cfg) {
  *schema_ = nccl_schema();
  schema_->add({"flows", "flows", ColumnKind::Measurement});
  if (!share) refuse_packet_outputs(opt_, true);
  refuse_options(opt_, {"hosts", "ring", "racks", "hosts-per-rack", "machines", "gpus-per-machine", "load"},
                 "does not apply to a collective");
  collectives::Program file;
  if (is_program_file(opt_.algorithm)) {
    file = read_checked_program(opt_.algorithm);
    opt_.collective = collectives::collective_name(file.collective);
  }
  check_choice("collective", opt_.collective, kCollectives);
  if (opt_.algorithm.empty()) opt_.algorithm = default_algorithm(opt_.collective, opt_.platform);
  if (!file.ranks) check_algorithm(opt_.algorithm, opt_.collective, opt_.platform);
  std::tie(dtype_, redop_, sizes_) = parse_data(opt_);
  const int file_ranks = file.ranks;
  if (file_ranks) file_algorithm_ = collectives::file_algorithm(opt_.algorithm, std::move(file));
  algorithm_ = file_ranks ? file_algorithm_.get()
                          : collectives::find_algorithm(opt_.algorithm, collectives::Family::GpuFabric);

  if (!share) own_graph_ = opt_.topology ? *opt_.topology : platforms::make_topology(opt_.platform, platform_shape(opt_), cfg_);
  graph_ = share ? share->machine->t : &own_graph_;
  const topo::Topology& t = *graph_;
  const bool roce = topo::is_roce_cluster(t);
  if (roce)
    for (const Param<double>* p : {&platforms::kLinkLoss, &platforms::kLinkCorruption})
      if (cfg_.get(*p) > 0)
        throw UserError(p->key() + " drops frames for go-back-N to resend, which --fidelity flow does not simulate");
  const int built = static_cast<int>(t.endpoints().size());
  const int n = share ? static_cast<int>(share->gpus.size())
                : file_ranks ? file_ranks
                : opt_.gpus && !platforms::is_dgx1(t) ? *opt_.gpus
                                                      : built;
  if (share && file_ranks && file_ranks != n)
    throw UserError(opt_.algorithm + " has " + std::to_string(file_ranks) + " ranks, and this group " +
                    std::to_string(n) + " GPUs");
  if (n < 2 || n > built)
    throw UserError("platform '" + t.name + "' has " + std::to_string(built) + " GPUs and a collective needs 2 GPUs or "
                    "more: --gpus must be between 2 and " + std::to_string(built) + ", not " + std::to_string(n));
  std::vector<int> gpus;
  for (int r = 0; r < n; ++r) gpus.push_back(share ? share->gpus[r] : r);
  collectives::Collective c = collectives::Collective::AllReduce;
  collectives::collective_of(opt_.collective, c);
  collectives::Site site = platforms::site(t, opt_.platform, c, gpus, share != nullptr, cfg_);
  if (const std::string why = algorithm_->cannot_run(site); !why.empty()) throw UserError(why);
  const platforms::PlatformDefaults d = share ? share->defaults : platforms::platform_defaults(t, {algorithm_->needs(t, c)});
  if (share) {
    machine_ = share->machine;
    engines_ = share->engines;
    overlap_ = share->overlap;
    shared_ = share->share_links ? share->shared : nullptr;
    routes_ = &share->shared->network();
  } else {
    own_machine_ = platforms::flow_machine(t, cfg_, d);
    machine_ = &own_machine_;
  }
  site.packet_payload = machine_->formats.front().max_payload;
  site.packet_header = machine_->formats.front().header;
  collectives::Synthesis synthesis = fixed ? *fixed : algorithm_->synthesize(site);
  if (const auto tuner = fixed ? nullptr : algorithm_->tuner(site, synthesis)) {
    if (tuner->runs() > 1 || share)
      throw UserError("--fidelity flow: " + opt_.algorithm +
                      (tuner->runs() > 1 ? " tunes itself over several runs of each size, which flows do not run"
                                         : " sets up a new program for every size, which flows run for a "
                                           "collective's sizes, not in training or jobs") +
                      "; run it at packet level");
    per_size(*tuner);
  }
  collectives::Program& program = synthesis.program;
  // Packet level refuses multicast paths that can deadlock; only a platform file's can.
  if (algorithm_->in_switches() && t.from_file) {
    std::vector<std::vector<int>> groups;
    for (const std::vector<int>& g : program.groups) {
      if (g.size() < 2) continue;
      groups.emplace_back();
      for (int r : g) groups.back().push_back(gpus[static_cast<size_t>(r)]);
    }
    platforms::check_multicast_paths(t, groups);
  }
  software_ = collectives::nccl_software(cfg_, d.nccl_launch, program.ranks, program.tree_nodes != 0);
  if (program.engine() == collectives::Engine::NicTable) {
    nic_tables(synthesis, gpus, d);
    return;
  }
  if (program.engine() == collectives::Engine::CopyEngine) {
    copy_engines(program, site, d, gpus);
    return;
  }
  if (const std::string why = flow::CoresFlows::cannot_run(program); !why.empty())
    throw UserError("--fidelity flow: " + opt_.algorithm + " " + why);
  if (program.has(collectives::OpKind::ReduceRead)) reduction_tables(program, site, d);
  if (roce && program.has(collectives::OpKind::ReduceWrite))
    throw UserError("--fidelity flow: " + opt_.algorithm + " adds its reducing writes in NetReduce's FPGA beside each "
                    "rail leaf, which flows do not model; run it at packet level");
  // NCCL's PXN relays, as the communicator applies them (platforms/communicator.cpp).
  if (site.cluster() && algorithm_->crosses_nodes() && cfg_.get(platforms::kClusterPxn)) {
    const std::vector<int> node_of = site.node_of(), rail_of = site.rail_of();
    std::vector<int> node, rail;
    for (int g : gpus) {
      node.push_back(node_of[static_cast<size_t>(g)]);
      rail.push_back(rail_of[static_cast<size_t>(g)]);
    }
    const size_t ops = program.ops.size();
    program = collectives::pxn_program(program, node, rail);
    pxn_relays_ = program.ops.size() - ops;
  }
  // The bound, as packet level's communicator computes it from the same graph and packets.
  const flow::LinkFormat& f = machine_->formats.front();
  const platforms::WirePacket fabric{f.max_payload, f.header,
                                     collectives::bound_charges_acks(program) ? f.header : 0u};
  platforms::WirePacket net = fabric;
  if (site.cluster()) {
    const flow::LinkFormat& ib = machine_->formats.back();
    const bool pushes = program.has(collectives::OpKind::ReduceWrite);
    const std::vector<int> node_of = site.node_of();
    net = {pushes ? topo::MulticastFabric::kBlockBytes : ib.max_payload, ib.header, ib.ack_bytes};
    const platforms::ClusterBound b = platforms::cluster_bound(program, t, {f.max_payload, f.header, f.header}, net,
                                                               gpus, node_of);
    endpoint_GBps_ = b.busbw_GBps;
    const auto nodes = topo::cluster_nodes(t);
    cluster_note_ = platforms::cluster_note(b, nodes.size(), nodes.front().size());
  } else {
    endpoint_GBps_ = platforms::least_endpoint_GBps(t, fabric, gpus);
  }
  const gpu::CoresParams cp = gpu::cores_params(cfg_, d.cores_chunk_bytes, d.nccl_slices, program.tree_nodes != 0);
  flow::CoresCosts costs;
  std::tie(costs.mem_ns, costs.jitter_ns) = memory_ns(cfg_, d);
  costs.simple = {cp.simple.chunk_bytes, cp.simple.slots};
  costs.ll = {cp.ll.chunk_bytes, cp.ll.slots};
  costs.ll128 = {cp.ll128.chunk_bytes, cp.ll128.slots};
  costs.by_size = by_size_ = cp.by_size;
  costs.nccl_slices = cp.nccl_slices;
  if (site.cluster()) costs.push_credits = cfg_.get(platforms::kSharpCredits);
  const std::string classes = cfg_.get(flow::kChannelClasses);
  if (classes != "auto" && classes != "true" && classes != "false")
    throw UserError(flow::kChannelClasses.key() + " must be auto, true or false, not '" + classes + "'");
  classes_auto_ = classes == "auto" && site.cluster() &&
                  topo::cluster_nodes(t).size() >= static_cast<size_t>(flow::kClassesFromNodes);
  flows_ = std::make_unique<flow::CoresFlows>(std::move(program), *machine_, gpus, costs,
                                              elements::dtype_bytes(dtype_), opt_.seed, cfg_.get(flow::kSteadyPasses),
                                              routes_,
                                              classes == "true" || classes_auto_);
  sm_blocks_ = collectives::channel_parts(flows_->program()).channels;
  bound_links(gpus, fabric, net);
}

void FlowCollectiveWorkload::bound_links(const std::vector<int>& gpus, platforms::WirePacket fabric,
                                         platforms::WirePacket net) {
  const std::vector<uint8_t> spreads =
      platforms::spreading_nodes(*graph_, [this](int node) { return machine_->spreads[static_cast<size_t>(node)] != 0; });
  links_ = platforms::link_bound(flows_->program(), *graph_, gpus, spreads, fabric, net);
}

// NVLS's reducing reads take entries of the NVSwitches' reduction tables
// (flow::FlowMachine::table_bytes). A port without one passes every
// member's answer on unreduced at packet level, which flows do not model.
void FlowCollectiveWorkload::reduction_tables(const collectives::Program& p, const collectives::Site& site,
                                              const platforms::PlatformDefaults& d) {
  const topo::Topology& t = *graph_;
  const flow::FlowMachine& m = *machine_;
  for (size_t s = 0; s < m.table_bytes.size(); ++s)
    for (size_t port = 0; port < m.table_bytes[s].size(); ++port) {
      const topo::PortRef peer = t.peer({static_cast<int>(s), static_cast<int>(port)});
      if (m.table_bytes[s][port] == 0 && peer.node >= 0 && t.node(peer.node).kind == topo::NodeKind::Endpoint)
        throw UserError("--fidelity flow: " + opt_.algorithm + " reduces in the NVSwitches' tables, and " +
                        t.node(static_cast<int>(s)).name + ".port" + std::to_string(port) + " has none (" +
                        nvswitch::kTableBytes.key() + " is 0 there), so packet level passes every member's answer "
                        "on unreduced, which flows do not model; run it at packet level");
    }
  if (!algorithm_->in_switches() || site.cluster() || m.table_bytes.empty()) return;
  std::ostringstream os;
  const platforms::LittleLaw ll = little_law(d);
  const bool pull = p.has(collectives::OpKind::ReduceRead);
  tables_below_c_min_ =
      platforms::print_table_sizing(os, ll, m.table_bytes_all, pull, p.ranks, platforms::push_window_bytes(cfg_, t)) &&
      !pull;
  if (tables_below_c_min_)
    os << "# flows: packet level evicts the partial sums a full table cannot hold to their home GPUs (Klenk §IV-C), "
          "which flows do not model: their time is the tables' best case\n";
  // A read holds its entry for the unloaded round trip as flows; across
  // switch levels packet level's requests and answers also wait in queues
  // (Klenk §VI-B's tree saturation), which flows do not have.
  if (pull && ll.d_max > 1)
    os << "# flows: the reads cross up to " << ll.d_max << " switches, where packet level's requests and answers "
       << "also wait in queues, which flows do not have: flows may be fast by tens of percent here (docs/flow.md, "
          "\"Pulls where packets queue\"); --check-fidelity measures it\n";
  sizing_ = os.str();
}

platforms::LittleLaw FlowCollectiveWorkload::little_law(const platforms::PlatformDefaults& d) const {
  return platforms::flow_little_law(*graph_, cfg_, d, machine_->formats.front());
}

// The copy engines run the program's descriptors under their waves, set up
// as at packet level (platforms::copy_waves).
void FlowCollectiveWorkload::copy_engines(collectives::Program& program, const collectives::Site& site,
                                          const platforms::PlatformDefaults& d, const std::vector<int>& gpus) {
  if (const std::string why = gpu::CopyCollective::cannot_run(program); !why.empty())
    throw UserError(opt_.algorithm + ": " + why);
  const std::optional<collectives::InNetMethod> innet =
      algorithm_->in_switches() ? std::optional(collectives::in_network_method(program)) : std::nullopt;
  const bool reduces = innet && *innet != collectives::InNetMethod::Multicast;
  if (reduces) reduction_tables(program, site, d);
  const flow::FlowMachine& m = *machine_;
  const flow::LinkFormat& f = m.formats.front();
  uint64_t table_bytes = 0;
  for (const std::vector<uint32_t>& ports : m.table_bytes)
    for (const uint32_t b : ports) table_bytes += b;
  const platforms::LittleLaw ll = little_law(d);
  const gpu::WaveParams wp = platforms::copy_waves(cfg_, *graph_, innet, table_bytes, ll, platforms::gpu_memory(cfg_, d),
                                                   net::PacketFormat{f.header, f.flit, f.max_payload});
  flow::CopyCosts costs;
  std::tie(costs.mem_ns, costs.jitter_ns) = memory_ns(cfg_, d);
  costs.waves = wp.waves;
  costs.wave_bytes = wp.wave_bytes;
  if (innet == collectives::InNetMethod::Push) {
    push_window_ = static_cast<uint64_t>(wp.waves) * wp.wave_bytes;
    table_bytes_ = table_bytes;
    table_ports_ = ll.switch_ports;
  }
  costs.b_in_GBps = ll.b_in_GBps;
  const platforms::WirePacket fabric{f.max_payload, f.header, innet ? 0u : f.header};
  endpoint_GBps_ = platforms::least_endpoint_GBps(*graph_, fabric, gpus);
  copy_links_ = innet ? platforms::kPostedLinks : platforms::cores_links(program);
  flows_ = std::make_unique<flow::CopyFlows>(std::move(program), m, gpus, costs, elements::dtype_bytes(dtype_),
                                             opt_.seed, routes_);
  bound_links(gpus, fabric, fabric);
}

// The NICs run the program's schedule tables, set up as at packet level
// (platforms::nic_setup).
void FlowCollectiveWorkload::nic_tables(collectives::Synthesis& synthesis, const std::vector<int>& gpus,
                                        const platforms::PlatformDefaults& d) {
  const topo::Topology& t = *graph_;
  const flow::LinkFormat& f = machine_->formats.front();
  const platforms::WirePacket fabric{f.max_payload, f.header, 0u};
  const platforms::NicSetup n =
      platforms::nic_setup(t, cfg_, synthesis, platforms::least_endpoint_GBps(t, fabric, gpus), f.max_payload, f.header);
  endpoint_GBps_ = n.endpoint_GBps;
  flow::NicCosts costs;
  std::tie(costs.mem_ns, costs.jitter_ns) = memory_ns(cfg_, d);
  costs.framing = {f.header, f.flit, f.max_payload, n.message};
  costs.estimate = n.estimate;
  costs.in_buffer_bytes = cfg_.get(credit_switch::kSwitchInBuffer);
  costs.out_queue_bytes = cfg_.get(credit_switch::kSwitchOutQueue);
  algbw_bound_GBps_ = synthesis.algbw_bound_GBps;
  bound_note_ = synthesis.bound_note;
  trees_text_ = synthesis.trees_text;
  try {
    auto x = std::make_unique<flow::NicFlows>(std::move(synthesis.program), *machine_, gpus, costs,
                                              elements::dtype_bytes(dtype_), opt_.seed,
                                              routes_);
    nic_ = x.get();
    flows_ = std::move(x);
  } catch (const UserError& e) {
    throw UserError(opt_.algorithm + ": " + e.what());
  }
  bound_links(gpus, fabric, fabric);
}

FlowCollectiveWorkload::~FlowCollectiveWorkload() = default;

// Each size's program as the tuner chooses it, run by a workload of its
// own per choice; the notes are what packet level prints per row.
void FlowCollectiveWorkload::per_size(collectives::Tuner& tuner) {
  for (const uint64_t bytes : sizes_) {
    const collectives::Synthesis s = tuner.next(0, bytes);
    Choice c{tuner.choice(), tuner.ran(0, 0, 0), nullptr};
    std::unique_ptr<FlowCollectiveWorkload>& w = by_choice_[c.name];
    if (!w) w = std::make_unique<FlowCollectiveWorkload>(opt_, cfg_, nullptr, &s);
    c.runs = w.get();
    choices_.push_back(std::move(c));
  }
}

double FlowCollectiveWorkload::done_fraction() const {
  if (running_choice_) return running_choice_->done_fraction();
  return fraction_ ? (*fraction_)() : -1;
}

void FlowCollectiveWorkload::print(const std::string& what, std::ostream& os) const {
  print_collective(what, flows_->program(), nic_ ? &nic_->schedule() : nullptr, trees_text_, opt_, os);
}

const flow::Executor::Result& FlowCollectiveWorkload::result(size_t i, const flow::Executor::Progress& progress) {
  const auto [it, fresh] = results_.try_emplace(sizes_[i]);
  if (fresh) it->second = flows_->run(sizes_[i], progress);
  return it->second;
}

std::vector<Row> FlowCollectiveWorkload::run_point(size_t i, Runner& run, std::ostream& notes) {
  if (!choices_.empty()) {
    const Choice& c = choices_[i];
    std::ostringstream own;
    running_choice_ = c.runs;
    std::vector<Row> rows = c.runs->run_point(i, run, own);
    running_choice_ = nullptr;
    notes << c.note << own.str();
    rows.front().details["choice"] = c.name;
    return rows;
  }
  const flow::Executor::Result* res = nullptr;
  run.run_plain("size " + size_label(sizes_[i]), [&](const Runner::Poll& poll) {
    res = &result(i, [&](const std::function<double()>& fraction, double now_ns) {
      fraction_ = &fraction;
      poll(now_ns / 1e3);
      fraction_ = nullptr;
    });
  });
  return {row(i, *res, notes)};
}

void FlowCollectiveWorkload::start(size_t i, std::function<void()> on_done) {
  if (!ender_) {
    ender_ = true;
    spawn_method(sc_core::sc_gen_unique_name("flow_collective"), [this] {
      end_.fired();
      passed_ += sim_now() - started_;
      for (const int l : running_->links) {
        auto& on = overlap_->running[static_cast<size_t>(l)];
        on.erase(std::find(on.begin(), on.end(), this));
      }
      ++overlap_->collectives;
      overlap_->ns += running_->time_ns;
      if (beside_) {
        ++overlap_->shared;
        overlap_->shared_ns += running_->time_ns;
      }
      std::function<void()> done = std::move(on_done_);
      on_done_ = nullptr;
      done();
    }, &end_.event);
  }
  on_done_ = std::move(on_done);
  started_ = sim_now();
  if (shared_) {
    // NCCL's fixed cost passes before the flows start on the shared network.
    const double base_us =
        software_.base_us(collectives::message_protocol(flows_->program(), by_size_, sizes_[i]));
    if (base_us == 0) return share(i);
    launch_.after(sc_core::sc_time(base_us, sc_core::SC_US), [this, i] { share(i); });
    return;
  }
  const flow::Executor::Result& r = result(i);
  running_ = &r;
  beside_ = false;
  for (const int l : r.links) {
    auto& on = overlap_->running[static_cast<size_t>(l)];
    for (FlowCollectiveWorkload* c : on) c->beside_ = beside_ = true;
    on.push_back(this);
  }
  end_.after(sc_core::sc_time(gpu_ns(r), sc_core::SC_NS));
}

void FlowCollectiveWorkload::share(size_t i) {
  shared_->start(*flows_, sizes_[i], result(i), [this](const flow::Executor::Result& r) {
    last_ = r;
    running_ = &last_;  // no links: it shared them as flows, no one to count beside it
    end_.at(sim_now());
  });
}

double FlowCollectiveWorkload::gpu_ns(const flow::Executor::Result& res) const {
  return res.time_ns + 1e3 * software_.base_us(res.proto);
}

uint64_t FlowCollectiveWorkload::progress() {
  const sc_core::sc_time t = on_done_ ? passed_ + (sim_now() - started_) : passed_;
  return t.value() / 1000;
}

Row FlowCollectiveWorkload::finish(size_t i, std::ostream& notes) {
  return row(i, shared_ ? last_ : result(i), notes);
}

FlowPlatform::FlowPlatform(const topo::Topology& t, Config& cfg, const platforms::PlatformDefaults& d,
                           bool share_links)
    : graph(t),
      machine(platforms::flow_machine(graph, cfg, d)),
      defaults(d),
      shared(std::make_unique<SharedFlows>(machine)),
      share_links(share_links) {
  overlap.running.resize(2 * t.links().size());
}

SharedFlows::SharedFlows(const flow::FlowMachine& m) : net_(m) {
  spawn_method(sc_core::sc_gen_unique_name("flow_network"), [this] {
    wake_.fired();
    sync();
    schedule();
  }, &wake_.event);
}

void SharedFlows::start(flow::Executor& e, uint64_t bytes, const flow::Executor::Result& alone,
                        flow::Executor::Done done) {
  sync();
  net_.start(e, bytes, alone, std::move(done));
  schedule();
}

void SharedFlows::sync() {
  // Half a picosecond on: the wake-up for an event is its time rounded to
  // SystemC's resolution, which may be just before it.
  net_.net.run_until(sim_now().to_seconds() * 1e9 + 5e-4);
  net_.sweep();
}

void SharedFlows::schedule() {
  const double t = net_.net.next_event();
  if (t != std::numeric_limits<double>::infinity()) wake_.at(sc_core::sc_time(t, sc_core::SC_NS));
}

Row FlowCollectiveWorkload::row(size_t i, const flow::Executor::Result& res, std::ostream& notes) const {
  const uint64_t bytes = sizes_[i];
  const collectives::Program& p = flows_->program();
  Row r(schema_);
  fill_nccl(r, bytes, elements::dtype_name(dtype_),
            collectives::reduces(p.collective) ? elements::redop_name(redop_) : "none",
            software_.row_us(gpu_ns(res) / 1e3), collectives::busbw_factor(p.collective, p.ranks), 0, bound_us(bytes));
  r.set("wrong", std::string("-"));  // no element values travel (docs/flow.md)
  r.set("flows", res.flows);
  const char* at_once = shared_ ? " in flight at once on the network the collectives share\n" : " in flight at once\n";
  if (nic_)
    notes << "#   flows: " << res.transfers << " messages' shares on their ports ("
          << (nic_->framing().one_head ? "a head flit per message" : "a head flit per packet") << "), at most "
          << res.most_active << at_once;
  else if (copy_links_)
    notes << "#   flows: " << count_of(res.transfers, "descriptor", "descriptors") << ", "
          << count_of(res.flows, "flow", "flows") << ", at most " << res.most_active << at_once;
  else
    notes << "#   flows: " << res.transfers << " transfers (" << collectives::protocol_name(res.proto)
          << "), at most " << res.most_active << at_once;
  if (res.classes > 0)
    r.details["channel_classes"] = {{"channels", res.channels}, {"parts", res.parts}, {"classes", res.classes}};
  if (!res.classes_note.empty())
    notes << "#   channel classes: " << res.classes_note
          << (classes_auto_ ? " (flow.channel_classes=auto: on from 16 nodes, within 4.4% of every channel there; "
                              "false runs every channel)\n"
                            : " (flow.channel_classes)\n");
  if (res.pass_ns > 0) {
    r.details["steady_passes"] = {{"passes", res.passes},
                                  {"simulated", res.simulated_passes},
                                  {"steady_from", res.steady_from},
                                  {"pass_ns", res.pass_ns},
                                  {"halves_differ", res.period_change}};
    notes << "#   passes: " << res.passes << " per channel; runs of " << res.steady_from / 4 << ", "
          << res.steady_from / 2 << " and " << res.steady_from << " simulated " << res.simulated_passes
          << ", the other " << res.passes - res.steady_from << " are added at their period, " << std::fixed
          << std::setprecision(1) << res.pass_ns << " ns per pass (its two halves differ by "
          << 100 * res.period_change << "%; flow.steady_passes)\n"
          << std::defaultfloat;
  }
  return r;
}

void FlowCollectiveWorkload::print_header(std::ostream& os) const {
  const topo::Topology& t = *graph_;
  os << "# incsim: " << opt_.collective << " " << opt_.algorithm << " on " << flows_->program().ranks << " of "
     << t.endpoints().size() << " GPUs, platform " << t.name << " (" << count_of(t.switches().size(), "switch", "switches")
     << ", " << t.links().size() << " links), seed " << opt_.seed << "\n"
     << "# fidelity: flow (docs/flow.md): each transfer a flow sharing its links max-min fairly, with the "
     << (copy_links_                 ? "copy engines' fixed costs (the first memory read) and their waves"
         : !nic_                     ? "cores' fixed costs"
         : nic_->program().dataflow ? "NICs' fixed costs (the DMA's first read) and the first switch's buffers"
                                     : "NICs' fixed costs (the DMA's first read, the lockstep step) and the first "
                                       "switch's buffers")
     << "; elements were not simulated (#wrong: -); what flows cannot see: table thrashing, credit stalls, loss, "
        "head-of-line blocking"
     << (nic_ ? " beyond the first switch, the later switches' buffers that absorb the NICs' desynchronised steps"
              : "")
     << "\n";
  // The cross-check holds flows to packet level on the built-in platforms only.
  if (t.from_file && !opt_.check_fidelity)
    os << "# fidelity: flows are checked against packet level on the built-in platforms, not on a platform file: "
          "--check-fidelity runs packet level beside them at the smallest size\n";
  const collectives::Program& p = flows_->program();
  const uint64_t bytes = sizes_.back();
  const std::string name = file_algorithm_ ? "the program" : opt_.algorithm;
  if (!cluster_note_.empty()) {
    os << "# cluster: " << cluster_note_ << "\n";
    platforms::print_cluster_bound(os, endpoint_GBps_);
  } else if (!bound_note_.empty()) {
    platforms::print_algbw_bound(os, endpoint_GBps_, bound_note_);
  } else {
    platforms::print_payload_bound(os, endpoint_GBps_,
                                   copy_links_ ? copy_links_
                                   : nic_      ? platforms::nic_links(nic_->framing().one_head)
                                               : platforms::cores_links(p),
                                   p, bytes, bound_us(bytes, false), name);
  }
  if (bound_note_.empty()) platforms::print_link_bound(os, links_, p, bytes, bound_us(bytes, false), name);
  if (nic_) collectives::describe_schedule(os, nic_->schedule(), p.dataflow);
  if (algorithm_->in_switches()) platforms::print_switches_what_if(os, *graph_, name);
  os << sizing_ << std::defaultfloat;
  print_push_window(os, bytes);
  if (p.protocol_by_size) os << by_size_.header_line();
  os << software_.header_line();
  if (pxn_relays_)
    os << "# pxn (cluster.pxn): " << pxn_relays_ << " transfers per pass between GPUs on other rails of other nodes "
       << "relayed over NVLink by the GPU on the destination's rail, through its adapter (NCCL's PXN)\n";
}

// Klenk §IV-F1 keeps the reductions in flight within the network's tables
// (k waves of C/k); §VI-D runs DGX-2 at 16 waves of 8 kB over its 48 kB,
// "about 2.6x", at full bandwidth: while the GPUs move together, a block's
// contributions meet within Eq. (2)'s time whatever the waves allow. Where
// a link between switches binds, it serves the GPUs behind it unevenly,
// they drift apart by up to the waves, and the partial sums of the ones
// ahead fill the tables. Either way packet level evicts them to their
// homes (measured: the two-switch example, 4.3x and a binding trunk,
// 28,761 evictions at 1 MiB; dual-switch at 12.8x), which flows do not
// model. Tables of window / ports per port evicted none on those two, and
// a few on the three-switch chain, whose middle switch's homes fill first.
void FlowCollectiveWorkload::print_push_window(std::ostream& os, uint64_t bytes) const {
  constexpr double kKlenkDgx2 = 131072.0 / 49152;  // 16 waves of 8 kB over 192 ports of 256 B
  const double ratio = table_bytes_ ? static_cast<double>(push_window_) / static_cast<double>(table_bytes_) : 0;
  const bool link_binds = links_.binds(bytes, bound_us(bytes, false));
  if (tables_below_c_min_ || ratio <= (link_binds ? 1.0 : kKlenkDgx2)) return;  // the first has its own note
  const uint64_t entry = topo::MulticastFabric::kBlockBytes, ports = static_cast<uint64_t>(table_ports_);
  const uint64_t per_port = (push_window_ + ports * entry - 1) / (ports * entry) * entry;
  os << "# flows: push's waves keep up to " << push_window_ << " B per GPU in flight (" << gpu::kWaves.key() << " x "
     << gpu::kWaveBytes.key() << "), " << std::fixed << std::setprecision(1) << ratio << " times the network's "
     << table_bytes_ << " B of reduction table, "
     << (link_binds ? "and a link between switches binds: the GPUs it holds back fall behind, and"
                    : "beyond the 2.7 times Klenk §VI-D runs at full bandwidth:")
     << " packet level may evict the partial sums the tables cannot hold to their homes, which flows do not model, "
        "so rows above "
     << size_label(table_bytes_) << " may be optimistic (--check-fidelity measures it); " << nvswitch::kTableBytes.key()
     << "=" << per_port << " spreads the waves over every port's table (Klenk §IV-F1; homes spread unevenly need "
        "more)\n"
     << std::defaultfloat;
}

double FlowCollectiveWorkload::bound_us(uint64_t bytes, bool with_links) const {
  return platforms::program_bound_us(flows_->program(), bytes, endpoint_GBps_, algbw_bound_GBps_,
                                     !cluster_note_.empty(), with_links ? links_ : platforms::LinkBound{});
}

void FlowCollectiveWorkload::config_json(nlohmann::ordered_json& config) const {
  config["fidelity"] = "flow";
  config["collective"] = opt_.collective;
  config["algorithm"] = opt_.algorithm;
  config["gpus"] = flows_->program().ranks;
  config["dtype"] = elements::dtype_name(dtype_);
  config["sizes"] = opt_.sizes;
}

}  // namespace incsim::tb
