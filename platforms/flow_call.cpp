#include "flow_call.h"

#include <algorithm>
#include <iomanip>
#include <limits>
#include <sstream>
#include <tuple>
#include <utility>

#include "collectives/bounds.h"
#include "collectives/composition.h"
#include "communicator.h"
#include "core/error.h"
#include "core/units.h"
#include "credit_switch/credit_switch.h"
#include "flow/copy_flows.h"
#include "flow/cores_flows.h"
#include "gpu/copy_collective.h"
#include "gpu/cores.h"
#include "gpu/gpu.h"
#include "gpu_fabric.h"
#include "infiniband_fabric.h"
#include "nvswitch/reduction_table.h"
#include "platform.h"
#include "topology/cluster.h"
#include "topology/multicast.h"

namespace incsim::platforms {

namespace {
// A GPU memory access's latency and jitter, ns, as the GPUs read them (gpu/gpu.cpp).
std::pair<double, double> memory_ns(Config& cfg, const PlatformDefaults& d) {
  const gpu::GpuConfig g = gpu_memory(cfg, d);
  return {g.mem_latency_cycles / g.clock_ghz, g.mem_jitter_cycles / g.clock_ghz};
}

// flow.steady_passes other than auto: 0, or K from 4 passes.
uint64_t steady_passes(const std::string& v) {
  uint64_t k = 0;
  const bool digits = !v.empty() && v.size() <= 13 && v.find_first_not_of("0123456789") == std::string::npos;
  if (digits) k = std::stoull(v);
  if (!digits || (k != 0 && k < 4) || k > (1ull << 40))
    throw UserError(flow::kSteadyPasses.key() + " must be auto, 0 or a number of passes from 4, not '" + v + "'");
  return k;
}
}  // namespace

FlowCall::FlowCall(const FlowOn& on, const collectives::Algorithm& a, const collectives::Site& site,
                   collectives::Synthesis s, elements::DType dtype, elements::RedOp redop, Config& cfg,
                   uint64_t seed, const std::string& name)
    : graph_(on.graph),
      machine_(on.machine),
      defaults_(on.defaults),
      gpus_(on.gpus),
      platform_(on.platform),
      routes_(on.platform ? &on.platform->shared->network() : nullptr),
      algorithm_(a),
      cfg_(cfg),
      seed_(seed),
      name_(name),
      elem_bytes_(elements::dtype_bytes(dtype)),
      redop_(redop),
      shared_(on.platform && on.platform->share_links ? on.platform->shared.get() : nullptr) {
  const collectives::Program& program = s.program;
  // Packet level refuses multicast paths that can deadlock; only a platform file's can.
  if (algorithm_.in_switches() && graph_.from_file) {
    std::vector<std::vector<int>> groups;
    for (const std::vector<int>& g : program.groups) {
      if (g.size() < 2) continue;
      groups.emplace_back();
      for (int r : g) groups.back().push_back(gpus_[static_cast<size_t>(r)]);
    }
    check_multicast_paths(graph_, groups);
  }
  software_ = collectives::nccl_software(cfg_, defaults_.nccl_launch, program.ranks, program.tree_nodes != 0);
  if (software_.launch != collectives::NcclSoftware::Launch::None)
    software_.net = collectives::nccl_net_steps(cfg_, graph_.family, site.node_of(), gpus_);
  switch (program.engine()) {
    case collectives::Engine::NicTable: nic_tables(s); break;
    case collectives::Engine::CopyEngine: copy_engines(s.program, site); break;
    default: cores(s.program, site);
  }
}

FlowCall::~FlowCall() = default;

// The GPUs' cores run the program's operations, NCCL's PXN relaying a
// cluster's transfers across rails as the communicator does.
void FlowCall::cores(collectives::Program& program, const collectives::Site& site) {
  const topo::Topology& t = graph_;
  if (const std::string why = flow::CoresFlows::cannot_run(program); !why.empty())
    throw UserError("--fidelity flow: " + name_ + " " + why);
  if (program.has(collectives::OpKind::ReduceRead)) {
    reduction_tables(program, site);
    read_channels_ = collectives::channel_parts(program).channels;
  }
  if (topo::is_roce_cluster(t) && program.has(collectives::OpKind::ReduceWrite))
    throw UserError("--fidelity flow: " + name_ + " adds its reducing writes in NetReduce's FPGA beside each "
                    "rail leaf, which flows do not model; run it at packet level");
  if (site.cluster() && algorithm_.crosses_nodes() && cfg_.get(kClusterPxn)) {
    const std::vector<int> node_of = site.node_of(), rail_of = site.rail_of();
    std::vector<int> node, rail;
    for (int g : gpus_) {
      node.push_back(node_of[static_cast<size_t>(g)]);
      rail.push_back(rail_of[static_cast<size_t>(g)]);
    }
    const size_t ops = program.ops.size();
    program = collectives::pxn_program(program, node, rail);
    pxn_relays_ = program.ops.size() - ops;
  }
  // The bound, as packet level's communicator computes it from the same graph and packets.
  const flow::LinkFormat& f = machine_.formats.front();
  const WirePacket fabric{f.max_payload, f.header, collectives::bound_charges_acks(program) ? f.header : 0u};
  WirePacket net = fabric;
  if (site.cluster()) {
    const flow::LinkFormat& ib = machine_.formats.back();
    const bool pushes = program.has(collectives::OpKind::ReduceWrite);
    net = {pushes ? topo::MulticastFabric::kBlockBytes : ib.max_payload, ib.header, ib.ack_bytes};
    const ClusterBound b = cluster_bound(program, t, {f.max_payload, f.header, f.header}, net, gpus_, site.node_of());
    endpoint_GBps_ = b.busbw_GBps;
    const auto nodes = topo::cluster_nodes(t);
    cluster_note_ = cluster_note(b, nodes.size(), nodes.front().size());
    for (size_t k = 0; k < t.links().size(); ++k) joins_nodes_.push_back(joins_nodes(t, k, machine_.link_format[k]));
  } else {
    endpoint_GBps_ = least_endpoint_GBps(t, fabric, gpus_);
  }
  const gpu::CoresParams cp =
      gpu::cores_params(cfg_, defaults_.cores_chunk_bytes, defaults_.nccl_slices, program.tree_nodes != 0);
  flow::CoresCosts costs;
  std::tie(costs.mem_ns, costs.jitter_ns) = memory_ns(cfg_, defaults_);
  costs.simple = {cp.simple.chunk_bytes, cp.simple.slots};
  costs.ll = {cp.ll.chunk_bytes, cp.ll.slots};
  costs.ll128 = {cp.ll128.chunk_bytes, cp.ll128.slots};
  costs.by_size = by_size_ = cp.by_size;
  costs.nccl_slices = cp.nccl_slices;
  if (site.cluster()) costs.push_credits = cfg_.get(kSharpCredits);
  costs.net = software_.net;
  const std::string classes = cfg_.get(flow::kChannelClasses);
  if (classes != "auto" && classes != "true" && classes != "false")
    throw UserError(flow::kChannelClasses.key() + " must be auto, true or false, not '" + classes + "'");
  classes_auto_ = classes == "auto" && site.cluster() &&
                  topo::cluster_nodes(t).size() >= static_cast<size_t>(flow::kClassesFromNodes);
  const std::string steady = cfg_.get(flow::kSteadyPasses);
  const uint64_t K = steady != "auto" ? steady_passes(steady) : site.cluster() ? 0 : flow::kSteadyPassesAuto;
  steady_why_ = steady == "auto" ? "=auto: K = " + std::to_string(K) +
                                       " except on clusters, within 0.06% of whole runs there; 0 runs every pass"
                : site.cluster() ? ", up to 9% off on a cluster: docs/flow.md"
                                 : "";
  flows_ = std::make_unique<flow::CoresFlows>(std::move(program), machine_, gpus_, costs, elem_bytes_, seed_, K,
                                              routes_, classes == "true" || classes_auto_);
  sm_blocks_ = collectives::channel_parts(flows_->program()).channels;
  bound_links(fabric, net);
}

void FlowCall::bound_links(WirePacket fabric, WirePacket net) {
  const std::vector<uint8_t> spreads =
      spreading_nodes(graph_, [this](int node) { return machine_.spreads[static_cast<size_t>(node)] != 0; });
  links_ = link_bound(flows_->program(), graph_, gpus_, spreads, fabric, net);
}

// NVLS's reducing reads take entries of the NVSwitches' reduction tables
// (flow::FlowMachine::table_bytes). A port without one passes every
// member's answer on unreduced at packet level, which flows do not model.
void FlowCall::reduction_tables(const collectives::Program& p, const collectives::Site& site) {
  const topo::Topology& t = graph_;
  const flow::FlowMachine& m = machine_;
  for (size_t s = 0; s < m.table_bytes.size(); ++s)
    for (size_t port = 0; port < m.table_bytes[s].size(); ++port) {
      const topo::PortRef peer = t.peer({static_cast<int>(s), static_cast<int>(port)});
      if (m.table_bytes[s][port] == 0 && peer.node >= 0 && t.node(peer.node).kind == topo::NodeKind::Endpoint)
        throw UserError("--fidelity flow: " + name_ + " reduces in the NVSwitches' tables, and " +
                        t.node(static_cast<int>(s)).name + ".port" + std::to_string(port) + " has none (" +
                        nvswitch::kTableBytes.key() + " is 0 there), so packet level passes every member's answer "
                        "on unreduced, which flows do not model; run it at packet level");
    }
  if (!algorithm_.in_switches() || site.cluster() || m.table_bytes.empty()) return;
  std::ostringstream os;
  const LittleLaw ll = little_law();
  const bool pull = p.has(collectives::OpKind::ReduceRead);
  tables_below_c_min_ =
      print_table_sizing(os, ll, m.table_bytes_all, pull, p.ranks, push_window_bytes(cfg_, t)) && !pull;
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

LittleLaw FlowCall::little_law() const {
  return flow_little_law(graph_, cfg_, defaults_, machine_.formats.front());
}

// The copy engines run the program's descriptors under their waves, set up
// as at packet level (copy_waves).
void FlowCall::copy_engines(collectives::Program& program, const collectives::Site& site) {
  if (const std::string why = gpu::CopyCollective::cannot_run(program); !why.empty())
    throw UserError(name_ + ": " + why);
  const std::optional<collectives::InNetMethod> innet =
      algorithm_.in_switches() ? std::optional(collectives::in_network_method(program)) : std::nullopt;
  const bool reduces = innet && *innet != collectives::InNetMethod::Multicast;
  if (reduces) reduction_tables(program, site);
  const flow::FlowMachine& m = machine_;
  const flow::LinkFormat& f = m.formats.front();
  uint64_t table_bytes = 0;
  for (const std::vector<uint32_t>& ports : m.table_bytes)
    for (const uint32_t b : ports) table_bytes += b;
  const LittleLaw ll = little_law();
  const gpu::WaveParams wp = copy_waves(cfg_, graph_, innet, table_bytes, ll, gpu_memory(cfg_, defaults_),
                                        net::PacketFormat{f.header, f.flit, f.max_payload});
  flow::CopyCosts costs;
  std::tie(costs.mem_ns, costs.jitter_ns) = memory_ns(cfg_, defaults_);
  costs.waves = wp.waves;
  costs.wave_bytes = wp.wave_bytes;
  if (innet == collectives::InNetMethod::Push) {
    push_window_ = static_cast<uint64_t>(wp.waves) * wp.wave_bytes;
    table_bytes_ = table_bytes;
    table_ports_ = ll.switch_ports;
  }
  costs.b_in_GBps = ll.b_in_GBps;
  const WirePacket fabric{f.max_payload, f.header, innet ? 0u : f.header};
  endpoint_GBps_ = least_endpoint_GBps(graph_, fabric, gpus_);
  copy_links_ = innet ? kPostedLinks : cores_links(program);
  flows_ = std::make_unique<flow::CopyFlows>(std::move(program), m, gpus_, costs, elem_bytes_, seed_, routes_);
  bound_links(fabric, fabric);
}

// The NICs run the program's schedule tables, set up as at packet level
// (nic_setup).
void FlowCall::nic_tables(collectives::Synthesis& synthesis) {
  const flow::LinkFormat& f = machine_.formats.front();
  const WirePacket fabric{f.max_payload, f.header, 0u};
  const NicSetup n =
      nic_setup(graph_, cfg_, synthesis, least_endpoint_GBps(graph_, fabric, gpus_), f.max_payload, f.header);
  if (n.interfaces.first_free)
    throw UserError("--fidelity flow: nic.interface_choice=first-free queues each interface's messages one after "
                    "another, which flows do not model; run it at packet level");
  endpoint_GBps_ = n.endpoint_GBps;
  flow::NicCosts costs;
  std::tie(costs.mem_ns, costs.jitter_ns) = memory_ns(cfg_, defaults_);
  costs.framing = {f.header, f.flit, f.max_payload, n.message};
  costs.estimate = n.estimate;
  costs.in_buffer_bytes = cfg_.get(credit_switch::kSwitchInBuffer);
  costs.out_queue_bytes = cfg_.get(credit_switch::kSwitchOutQueue);
  algbw_bound_GBps_ = synthesis.algbw_bound_GBps;
  bound_note_ = synthesis.bound_note;
  trees_text_ = synthesis.trees_text;
  try {
    auto x = std::make_unique<flow::NicFlows>(std::move(synthesis.program), machine_, gpus_, costs, elem_bytes_,
                                              seed_, routes_);
    nic_ = x.get();
    flows_ = std::move(x);
  } catch (const UserError& e) {
    throw UserError(name_ + ": " + e.what());
  }
  bound_links(fabric, fabric);
}

double FlowCall::gpu_ns(const flow::Executor::Result& res) const {
  return res.time_ns + 1e3 * software_.base_us(res.proto);
}

const flow::Executor::Result& FlowCall::alone(uint64_t bytes, const flow::Executor::Progress& progress) {
  const auto [it, fresh] = alone_.try_emplace(bytes);
  if (fresh) it->second = flows_->run(bytes, progress);
  return it->second;
}

bool FlowCall::run_alone(uint64_t bytes, const flow::Executor::Progress& progress) {
  running_ = &alone(bytes, alone_share_.around(progress));
  bytes_ = bytes;
  return true;
}

std::string FlowCall::redop() const {
  return collectives::reduces(program().collective) ? elements::redop_name(redop_) : "none";
}

void FlowCall::start(uint64_t bytes, std::function<void()> on_done) {
  sc_assert(platform_ && "a FlowCall starts on a FlowPlatform");
  FlowOverlap& overlap = platform_->overlap;
  if (!ender_) {
    ender_ = true;
    spawn_method(sc_core::sc_gen_unique_name("flow_collective"), [this, &overlap] {
      end_.fired();
      passed_ += sim_now() - started_;
      for (const int l : running_->links) {
        auto& on = overlap.running[static_cast<size_t>(l)];
        on.erase(std::find(on.begin(), on.end(), this));
      }
      ++overlap.collectives;
      overlap.ns += running_->time_ns;
      if (beside_) {
        ++overlap.shared;
        overlap.shared_ns += running_->time_ns;
      }
      std::function<void()> done = std::move(on_done_);
      on_done_ = nullptr;
      done();
    }, end_);
  }
  on_done_ = std::move(on_done);
  started_ = sim_now();
  bytes_ = bytes;
  if (shared_) {
    // NCCL's fixed cost passes before the flows start on the shared network.
    const double base_us = software_.base_us(collectives::message_protocol(program(), by_size_, bytes));
    if (base_us == 0) return share(bytes);
    launch_.after(sc_core::sc_time(base_us, sc_core::SC_US), [this, bytes] { share(bytes); });
    return;
  }
  const flow::Executor::Result& r = alone(bytes);
  running_ = &r;
  beside_ = false;
  for (const int l : r.links) {
    auto& on = overlap.running[static_cast<size_t>(l)];
    for (FlowCall* c : on) c->beside_ = beside_ = true;
    on.push_back(this);
  }
  end_.after(sc_core::sc_time(gpu_ns(r), sc_core::SC_NS));
}

void FlowCall::share(uint64_t bytes) {
  shared_->start(*flows_, bytes, alone(bytes), [this](const flow::Executor::Result& r) {
    last_ = r;
    running_ = &last_;  // no links: it shared them as flows, no one to count beside it
    end_.at(sim_now());
  });
}

Measures FlowCall::measures() const {
  const flow::Executor::Result& res = *running_;
  const collectives::Program& p = program();
  Measures m;
  m.time_us = software_.row_us(gpu_ns(res) / 1e3);
  m.bound_us = bound_us(bytes_);
  m.busbw_factor = collectives::busbw_factor(p.collective, p.ranks);
  m.redop = redop();
  m.flows = &res;
  if (!joins_nodes_.empty())
    for (size_t i = 0; i < res.links.size(); ++i) {
      const auto k = static_cast<size_t>(res.links[i] / 2);
      m.count_busy(joins_nodes_[k], res.link_bytes[i], graph_.links()[k].bw_GBps);
    }
  return m;
}

uint64_t FlowCall::progress_ns() const {
  const sc_core::sc_time t = on_done_ ? passed_ + (sim_now() - started_) : passed_;
  return t.value() / 1000;
}

double FlowCall::bound_us(uint64_t bytes, bool with_links) const {
  return program_bound_us(flows_->program(), bytes, endpoint_GBps_, algbw_bound_GBps_, !cluster_note_.empty(),
                          with_links ? links_ : LinkBound{});
}

void FlowCall::describe(std::ostream& os, uint64_t bytes, const std::string& name) const {
  const collectives::Program& p = flows_->program();
  if (!cluster_note_.empty()) {
    os << "# cluster: " << cluster_note_ << "\n";
    print_cluster_bound(os, endpoint_GBps_);
  } else if (!bound_note_.empty()) {
    print_algbw_bound(os, endpoint_GBps_, bound_note_);
  } else {
    print_payload_bound(os, endpoint_GBps_,
                        copy_links_ ? copy_links_
                        : nic_      ? nic_links(nic_->framing().one_head)
                                    : cores_links(p),
                        p, bytes, bound_us(bytes, false), name);
  }
  if (bound_note_.empty()) print_link_bound(os, links_, p, bytes, bound_us(bytes, false), name);
  if (nic_) collectives::describe_schedule(os, nic_->schedule(), p.dataflow);
  if (algorithm_.in_switches()) print_switches_what_if(os, graph_, name);
  os << sizing_ << std::defaultfloat;
  print_push_window(os, bytes);
  print_nccl_lines(os, p, by_size_, software_, pxn_relays_);
}

void FlowCall::describe_fidelity(std::ostream& os) const {
  os << "# fidelity: flow (docs/flow.md): each transfer a flow sharing its links max-min fairly, with the "
     << (copy_links_                ? "copy engines' fixed costs (the first memory read) and their waves"
         : !nic_                    ? "cores' fixed costs"
         : nic_->program().dataflow ? "NICs' fixed costs (the DMA's first read) and the first switch's buffers"
                                    : "NICs' fixed costs (the DMA's first read, the lockstep step) and the first "
                                      "switch's buffers")
     << "; elements were not simulated (#wrong: -); what flows cannot see: table thrashing, credit stalls, loss, "
        "head-of-line blocking"
     << (nic_ ? " beyond the first switch, the later switches' buffers that absorb the NICs' desynchronised steps"
              : "")
     << "\n";
}

void FlowCall::note(std::ostream& notes, const Measures& m) const {
  const flow::Executor::Result& res = *m.flows;
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
  // Each GPU's read waits a round trip after its answers, in lockstep as
  // flows; at packet level the GPUs' passes drift apart and one's answers
  // fill another's wait (docs/hardware.md, "Symmetric buffers").
  if (read_channels_ > 0 && read_channels_ < 4)
    notes << "#   flows: the GPUs' reducing reads run on " << count_of(read_channels_, "channel", "channels")
          << " each, their passes in lockstep where packet level's drift apart: up to 12% slow here (docs/hardware.md, "
             "\"Symmetric buffers\"; --check-fidelity measures it)\n";
  if (!res.classes_note.empty())
    notes << "#   channel classes: " << res.classes_note
          << (classes_auto_ ? " (flow.channel_classes=auto: on from 16 nodes, within 4.4% of every channel there; "
                              "false runs every channel)\n"
                            : " (flow.channel_classes)\n");
  if (res.pass_ns > 0)
    notes << "#   passes: " << res.passes << " per channel; runs of " << res.steady_from / 4 << ", "
          << res.steady_from / 2 << " and " << res.steady_from << " simulated " << res.simulated_passes
          << ", the other " << res.passes - res.steady_from << " are added at their period, " << std::fixed
          << std::setprecision(1) << res.pass_ns << " ns per pass (its two halves differ by "
          << 100 * res.period_change << "%; flow.steady_passes" << steady_why_ << ")\n"
          << std::defaultfloat;
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
void FlowCall::print_push_window(std::ostream& os, uint64_t bytes) const {
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

FlowPlatform::FlowPlatform(const topo::Topology& t, Config& cfg, const PlatformDefaults& d, bool share_links)
    : graph(t),
      machine(flow_machine(graph, cfg, d)),
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
  }, wake_);
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

}  // namespace incsim::platforms
