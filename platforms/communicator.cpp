#include "communicator.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "collectives/bounds.h"
#include "collectives/composition.h"
#include "collectives/program_synthesis.h"
#include "core/error.h"
#include "core/units.h"
#include "ethernet/roce_frame.h"
#include "ethernet_fabric.h"
#include "gpu/copy_collective.h"
#include "gpu/cores_collective.h"
#include "adapter/roce_bridge.h"
#include "bounds.h"
#include "flow_call.h"
#include "infiniband_fabric.h"
#include "netreduce/clt.h"
#include "scale_out_groups.h"
#include "topology/cluster.h"

namespace incsim::platforms {

Communicator::Communicator(GpuMachine& machine, std::vector<int> gpus, Config& cfg, uint64_t seed)
    : machine_(&machine), ranks_(std::move(gpus)), cfg_(cfg), seed_(seed), nodes_(topo::cluster_nodes(machine.topology())) {
  for (int g : ranks_) gpus_.push_back(machine.gpus()[static_cast<size_t>(g)]);
  // Link ends are each link's two directions in order (Machine).
  const std::vector<LinkEnd>& ends = machine.link_ends();
  if (!nodes_.empty())
    for (size_t j = 0; j < ends.size(); ++j) between_nodes_.push_back(joins_nodes(machine.topology(), j / 2, ends[j].fabric));
}

bool joins_nodes(const topo::Topology& t, size_t k, size_t fabric) {
  const topo::Link& l = t.links()[k];
  return fabric != 0 || is_bridge_kind(t.node(l.a.node).block) || is_bridge_kind(t.node(l.b.node).block);
}

Communicator::Communicator(FlowPlatform& platform, std::vector<int> gpus, Config& cfg, uint64_t seed)
    : Communicator(platform.on(gpus), cfg, seed) {}

Communicator::Communicator(const FlowOn& on, Config& cfg, uint64_t seed)
    : flows_(on), ranks_(on.gpus), cfg_(cfg), seed_(seed), nodes_(topo::cluster_nodes(on.graph)) {}

std::vector<gpu::ComputeEngine*> Communicator::compute_engines() const {
  std::vector<gpu::ComputeEngine*> engines;
  if (machine_)
    for (gpu::Gpu* g : gpus_) engines.push_back(&g->compute());
  else if (flows_->platform && !flows_->platform->engines.empty())
    for (const int g : ranks_) engines.push_back(flows_->platform->engines[static_cast<size_t>(g)].get());
  return engines;
}

std::unique_ptr<Call> Communicator::launch(const std::string& algorithm, collectives::Collective collective,
                                           elements::DType dtype, elements::RedOp redop) {
  const collectives::Algorithm* a = collectives::find_algorithm(algorithm, collectives::Family::GpuFabric);
  if (!a) throw UserError("no algorithm '" + algorithm + "' runs on a GPU fabric");
  const collectives::Site site = this->site(topology().name, collective, false, dtype, redop);
  if (const std::string why = a->cannot_run(site); !why.empty()) throw UserError(why);
  return set_up(*a, site, a->synthesize(site), dtype, redop, algorithm);
}

collectives::Site Communicator::site(const std::string& platform, collectives::Collective c, bool shared,
                                     elements::DType dtype, elements::RedOp redop) const {
  collectives::Site s = platforms::site(topology(), platform, c, ranks_, shared, cfg_);
  s.float_sum = redop == elements::RedOp::Sum && dtype != elements::DType::Int32;
  s.packet_payload = machine_ ? machine_->format().max_payload_bytes : flows_->machine.formats.front().max_payload;
  s.packet_header = machine_ ? machine_->format().header_bytes : flows_->machine.formats.front().header;
  return s;
}

std::unique_ptr<Call> Communicator::set_up(const collectives::Algorithm& a, const collectives::Site& site,
                                           collectives::Synthesis s, elements::DType dtype, elements::RedOp redop,
                                           const std::string& name) {
  // The tuner keeps a reference to its site: one that lives as long as it.
  auto kept = std::make_unique<collectives::Site>(site);
  std::unique_ptr<collectives::Tuner> tuner = a.tuner(*kept, s);
  std::unique_ptr<Call> own = set_up_one(a, site, std::move(s), dtype, redop, name);
  if (!tuner) return own;
  return std::make_unique<TunedCall>(*this, a, std::move(kept), std::move(tuner), std::move(own), dtype, redop, name);
}

std::unique_ptr<Call> Communicator::set_up_one(const collectives::Algorithm& a, const collectives::Site& site,
                                               collectives::Synthesis s, elements::DType dtype, elements::RedOp redop,
                                               const std::string& name) {
  if (machine_) return prepare(a, std::move(s), dtype, redop);
  return std::make_unique<FlowCall>(*flows_, a, site, std::move(s), dtype, redop, cfg_, seed_, name);
}

TunedCall::TunedCall(Communicator& comm, const collectives::Algorithm& a, std::unique_ptr<collectives::Site> site,
                     std::unique_ptr<collectives::Tuner> tuner, std::unique_ptr<Call> own, elements::DType dtype,
                     elements::RedOp redop, std::string name)
    : comm_(comm),
      algorithm_(a),
      site_(std::move(site)),
      tuner_(std::move(tuner)),
      own_(std::move(own)),
      dtype_(dtype),
      redop_(redop),
      name_(std::move(name)) {
  if (tuner_->runs() > 1)
    throw UserError(name_ + " tunes itself over several runs of each size, which a job, a training group or a "
                    "launch runs once; run it alone");
}

TunedCall::~TunedCall() = default;

Call& TunedCall::choose(uint64_t bytes) {
  auto [at, fresh] = sizes_.try_emplace(bytes);
  if (fresh) {
    const collectives::Synthesis s = tuner_->next(0, bytes);
    at->second.name = tuner_->choice();
    at->second.note = tuner_->ran(0, 0, 0);
    std::unique_ptr<Call>& c = by_choice_[at->second.name];
    if (!c) c = comm_.set_up_one(algorithm_, *site_, s, dtype_, redop_, name_);
    at->second.call = c.get();
  }
  running_ = &at->second;
  return *running_->call;
}

Measures TunedCall::measures() const {
  Measures m = latest().measures();
  if (running_) m.choice = running_->name;
  return m;
}

void TunedCall::note(std::ostream& notes, const Measures& m) const {
  if (running_) notes << running_->note;
  latest().note(notes, m);
}

double TunedCall::bound_us(uint64_t bytes, bool with_links) const {
  const auto at = sizes_.find(bytes);
  return (at != sizes_.end() ? *at->second.call : *own_).bound_us(bytes, with_links);
}

uint64_t TunedCall::progress_ns() const {
  uint64_t ns = own_->progress_ns();
  for (const auto& [name, c] : by_choice_) ns += c->progress_ns();
  return ns;
}

std::unique_ptr<CollectiveCall> Communicator::prepare(const collectives::Algorithm& a, collectives::Synthesis s,
                                                      elements::DType dtype, elements::RedOp redop) {
  return std::unique_ptr<CollectiveCall>(new CollectiveCall(*this, a, std::move(s), dtype, redop));
}

// The bound takes the GPU with the least bandwidth toward the others.
double Communicator::least_endpoint_GBps(bool acked) const {
  const net::PacketFormat& f = machine_->format();
  return platforms::least_endpoint_GBps(machine_->topology(),
                                        {f.max_payload_bytes, f.header_bytes, acked ? f.header_bytes : 0u}, endpoints());
}

std::vector<nic::Nic*> Communicator::nics() const {
  std::vector<nic::Nic*> nics;
  for (gpu::Gpu* g : gpus_) nics.push_back(&machine_->nic(g->index()));
  return nics;
}

std::vector<int> Communicator::node_of() const {
  size_t gpus = 0;
  for (const auto& node : nodes_) gpus += node.size();
  std::vector<int> of(gpus);
  for (size_t k = 0; k < nodes_.size(); ++k)
    for (int g : nodes_[k]) of[static_cast<size_t>(g)] = static_cast<int>(k);
  return of;
}

std::vector<int> Communicator::rail_of() const {
  size_t gpus = 0;
  for (const auto& node : nodes_) gpus += node.size();
  std::vector<int> of(gpus);
  for (const auto& node : nodes_)
    for (size_t h = 0; h < node.size(); ++h) of[static_cast<size_t>(node[h])] = static_cast<int>(h);
  return of;
}

CollectiveCall::CollectiveCall(Communicator& comm, const collectives::Algorithm& a, collectives::Synthesis s,
                               elements::DType dtype, elements::RedOp redop)
    : comm_(comm), algorithm_(a), program_(std::move(s.program)), dtype_(dtype), redop_(redop) {
  synthesis_ = std::move(s);  // the rest of it: the program is program_ (which PXN may rewrite)
  if (a.in_switches()) innet_ = collectives::in_network_method(program_);
  // Multicast paths that can deadlock are refused before the run, not when a
  // size registers its regions; only a platform file's can.
  if (program_.engine() != collectives::Engine::NicTable && comm_.machine().topology().from_file)
    for (const std::vector<int>& g : program_.groups) {
      std::vector<int> targets;
      for (int r : g) targets.push_back(comm_.gpus_[static_cast<size_t>(r)]->index());
      if (targets.size() > 1) comm_.machine().multicast().check_group(std::move(targets));
    }
  software_ = collectives::nccl_software(comm_.cfg_, comm_.machine().defaults().nccl_launch, program_.ranks,
                                         program_.tree_nodes != 0);
  if (software_.launch != collectives::NcclSoftware::Launch::None)
    software_.net =
        collectives::nccl_net_steps(comm_.cfg_, comm_.machine().topology().family, comm_.node_of(), comm_.endpoints());
  switch (program_.engine()) {
    case collectives::Engine::CopyEngine: make_copy(); break;
    case collectives::Engine::NicTable:
      make_tables();
      break;
    default:
      // NCCL's PXN relays the transfers of the algorithms that cross a cluster's nodes.
      if (a.crosses_nodes()) relay_across_rails();
      make_cores();
  }
  bound_links();
}

CollectiveCall::~CollectiveCall() = default;

namespace {
// In-network aggregation (pushes) sends the GPU's 128-byte blocks, each
// its own packet: SHARP's, or NetReduce's one-packet messages with their INA
// header.
WirePacket scale_out_packet(const GpuMachine& m, bool pushes) {
  if (topo::is_roce_cluster(m.topology())) {
    // One RDMA WRITE (WriteOnly, with its RETH) per packet, each acknowledged
    // by an ACK frame (adapter/roce_bridge.h).
    return {pushes ? topo::MulticastFabric::kBlockBytes : m.fabric_as<EthernetFabric>().mtu_payload(),
            eth::kEthWireOverhead + eth::kRoceOverhead + eth::kRethBytes + (pushes ? eth::kInaBytes : 0),
            eth::kEthWireOverhead + eth::kRoceOverhead + eth::kAethBytes};
  }
  const net::PacketFormat f = m.fabric_as<InfinibandFabric>().packet_format();
  return {pushes ? topo::MulticastFabric::kBlockBytes : f.max_payload_bytes, f.header_bytes, 0};
}
}  // namespace

void CollectiveCall::bound_links() {
  const GpuMachine& m = comm_.machine();
  const GpuFabric* gpu = m.find_fabric<GpuFabric>();
  const InfinibandFabric* ib = m.find_fabric<InfinibandFabric>();
  const topo::Topology& t = m.topology();
  const std::vector<uint8_t> spreads = spreading_nodes(t, [&](int node) {
    const bool in_ib = t.node(node).block == topo::kinds::kIbSwitch;
    const credit_switch::SwitchConfig* c = in_ib ? (ib ? &ib->switch_config() : nullptr)
                                                 : (gpu ? &gpu->switch_config() : nullptr);
    return c && c->spread != credit_switch::Spread::Destination;
  });
  // The fabric's writes acknowledged as the GPUs' bound takes them.
  const net::PacketFormat& f = m.format();
  const WirePacket fabric{f.max_payload_bytes, f.header_bytes, acked_ ? f.header_bytes : 0u};
  links_ = link_bound(
      program_, t, comm_.endpoints(), spreads, fabric,
      comm_.nodes_.empty() ? fabric : scale_out_packet(m, program_.has(collectives::OpKind::ReduceWrite)));
}

double CollectiveCall::cluster_endpoint_GBps() {
  const net::PacketFormat& gf = comm_.machine().format();
  const std::vector<int> gpus = comm_.endpoints(), node_of = comm_.node_of();
  const ClusterBound b = cluster_bound(
      program_, comm_.machine().topology(), {gf.max_payload_bytes, gf.header_bytes, gf.header_bytes},
      scale_out_packet(comm_.machine(), program_.has(collectives::OpKind::ReduceWrite)), gpus, node_of);
  cluster_note_ = cluster_note(b, comm_.nodes_.size(), comm_.nodes_[0].size());
  return b.busbw_GBps;
}

void CollectiveCall::relay_across_rails() {
  if (comm_.nodes_.empty() || !comm_.cfg_.get(kClusterPxn)) return;
  const std::vector<int> node_of = comm_.node_of(), rail_of = comm_.rail_of();
  std::vector<int> node, rail;
  for (const gpu::Gpu* p : comm_.gpus_) {
    node.push_back(node_of[static_cast<size_t>(p->index())]);
    rail.push_back(rail_of[static_cast<size_t>(p->index())]);
  }
  const size_t ops = program_.ops.size();
  program_ = collectives::pxn_program(program_, node, rail);
  pxn_relays_ = program_.ops.size() - ops;  // one receive-copy-send each
}

void CollectiveCall::require_reduction_tables(const std::string& what) const {
  if (comm_.machine().table_config().table_bytes == 0)
    throw UserError(what + " reduces in the switches: switch.reduction_table.bytes must be above 0");
}

// Runs a program on the GPUs' cores; each rank sends on the ports that lead
// to its peer (all of them on a switched fabric; on a direct network only some do).
void CollectiveCall::make_cores() {
  const collectives::Program& program = program_;
  const topo::Topology& t = comm_.machine().topology();
  const int n = program.ranks;
  acked_ = collectives::bound_charges_acks(program);
  endpoint_GBps_ =
      comm_.nodes_.empty() ? comm_.least_endpoint_GBps(acked_) : cluster_endpoint_GBps();
  const platforms::PlatformDefaults& d = comm_.machine().defaults();
  gpu::CoresParams cp = gpu::cores_params(comm_.cfg_, d.cores_chunk_bytes, d.nccl_slices, program.tree_nodes != 0);
  by_size_ = cp.by_size;
  if (program.has(collectives::OpKind::ReduceRead)) require_reduction_tables(program.name);
  const bool roce = !comm_.nodes_.empty() && topo::is_roce_cluster(t);
  const bool pushes = program.has(collectives::OpKind::ReduceWrite);
  if (!comm_.nodes_.empty()) cp.push_credits = comm_.cfg_.get(roce ? adapter::kNetReduceWindow : kSharpCredits);
  cp.net = software_.net;
  // (cluster_bound has checked that the groups fit the cluster.)
  if (pushes && !roce && !comm_.nodes_.empty()) {
    SharpManager(comm_.machine()).admit(program, comm_.endpoints(), cp.push_credits);
    sharp_ = true;
  }
  std::vector<std::vector<std::vector<int>>> ports(n, std::vector<std::vector<int>>(n));
  for (int r = 0; r < n; ++r) {
    const int node = t.endpoints()[comm_.gpus_[r]->index()];
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      for (int p = 0; p < t.node(node).ports; ++p)
        if (t.port_on_shortest_path({node, p}, comm_.gpus_[q]->index())) ports[r][q].push_back(p);
      // Topology::finalize checked that every endpoint reaches every other.
      assert(!ports[r][q].empty());
    }
  }
  auto cores = std::make_unique<gpu::CoresCollective>(program, comm_.gpus_, std::move(ports), dtype_, redop_,
                                                      comm_.seed_, cp,
                                                      program.groups.empty() ? nullptr : &comm_.machine().multicast());
  if (roce && pushes)
    NetReduceRings(comm_.machine())
        .join(program, comm_.endpoints(), [&cores](int g) { return cores->group_out(g); },
              static_cast<uint32_t>(cp.push_credits), comm_.cfg_.get(netreduce::kCltEntries), dtype_, redop_);
  engines_ = std::move(cores);
}

gpu::WaveParams copy_waves(Config& cfg, const topo::Topology& t, std::optional<collectives::InNetMethod> innet,
                           uint64_t table_bytes, const LittleLaw& ll, const gpu::GpuConfig& gc,
                           const net::PacketFormat& f) {
  // NVLS (NCCL 2.17+): multimem loads are Klenk's pull, multimem stores his multicast.
  const bool push = innet == collectives::InNetMethod::Push, pull = innet == collectives::InNetMethod::Pull;
  gpu::WaveParams wp;
  wp.waves = cfg.get(gpu::kWaves, default_waves(t, push, pull));
  // Klenk §IV-F1 sizes waves to C/k of the network's table capacity C: the
  // paper's 8 kB waves (Fig. 7, 8, 10) where C holds one, else C itself in
  // whole blocks (a 4-GPU star has 4 x 256 B of table).
  const uint64_t capacity = table_bytes / topo::MulticastFabric::kBlockBytes * topo::MulticastFabric::kBlockBytes;
  const uint32_t paper_wave = gpu::kWaveBytes.default_value();
  wp.wave_bytes = cfg.get(gpu::kWaveBytes, (push || pull) && capacity > 0 && capacity < paper_wave
                                               ? static_cast<uint32_t>(capacity)
                                               : paper_wave);
  const double timeout_us = cfg.get(gpu::kCounterTimeout);
  const std::string order = cfg.get(gpu::kCopyOrder);
  if (order != "window" && order != "arbitrary" && order != "address")
    throw UserError("gpu.copy_engine.order must be window, arbitrary or address, not '" + order + "'");
  wp.arbitrary_order = order != "address";
  // order=window: the reads an engine holds outstanding to inject at line rate
  // over the largest memory latency (Klenk §V: 180 + [0, 180) cycles), the
  // most it can complete out of order.
  const uint32_t window = cfg.get(gpu::kCopyOrderWindow);
  if (window > 0 && order != "window")
    throw UserError("gpu.copy_engine.order_window sets the window of gpu.copy_engine.order=window, not of order=" +
                    order);
  if (order == "window")
    wp.order_window = window > 0 ? window
                                 : gpu::reads_outstanding(ll.b_in_GBps,
                                                          (gc.mem_latency_cycles + gc.mem_jitter_cycles) / gc.clock_ghz,
                                                          f.wire_bytes(net::Op::Write, f.max_payload_bytes));
  if (wp.wave_bytes < f.max_payload_bytes)
    throw UserError("gpu.copy_engine.wave_bytes must be between one packet payload (" +
                    std::to_string(f.max_payload_bytes) + " B) and 64 MiB");
  wp.counter_timeout = sc_core::sc_time(timeout_us, sc_core::SC_US);
  // A counter frees once a wave's bytes have left at the GPU's injection
  // rate: on links too slow for that within the timeout every wave would
  // time out, which is a statement about the links, not the engine.
  const double wave_us = ll.b_in_GBps > 0 ? wp.wave_bytes / (ll.b_in_GBps * 1e3) : 0;
  if (wp.waves > 0 && wave_us > timeout_us) {
    std::ostringstream os;
    os << "a wave of " << wp.wave_bytes << " B takes " << std::fixed << std::setprecision(1) << wave_us
       << " us to leave a GPU whose links inject " << std::setprecision(3)
       << ll.b_in_GBps << " GB/s (link.bw_GBps), longer than " << gpu::kCounterTimeout.key() << " ("
       << std::setprecision(1) << timeout_us << " us) lets a wave wait for a counter: raise one of them";
    throw UserError(os.str());
  }
  // Blocks, table entries and the packets that carry them are the 128-byte
  // aligned unit of Klenk §IV-D.
  if (f.max_payload_bytes != topo::MulticastFabric::kBlockBytes)
    throw UserError("the copy engines reduce, multicast and write 128-byte blocks (Klenk §IV-D); "
                    "net.max_payload_bytes must be 128, not " + std::to_string(f.max_payload_bytes));
  // Klenk §IV-F1: waves are C/k of the network's table capacity C.
  if ((push || pull) && wp.waves > 0 && wp.wave_bytes > table_bytes)
    throw UserError("a wave of " + std::to_string(wp.wave_bytes) + " B (gpu.copy_engine.wave_bytes) is larger " +
                    "than the " + std::to_string(table_bytes) +
                    " B of reduction table in the whole network (switch.reduction_table.bytes on every port; Klenk " +
                    "§IV-F1 sizes waves to C/k): lower the first or raise the second");
  return wp;
}

void CollectiveCall::make_copy() {
  const topo::Topology& t = comm_.machine().topology();
  const bool push = innet_ == collectives::InNetMethod::Push, pull = innet_ == collectives::InNetMethod::Pull;
  if (push || pull) require_reduction_tables(algorithm_.name());
  const gpu::WaveParams wp = copy_waves(comm_.cfg_, t, innet_, comm_.machine().total_table_bytes(),
                                        comm_.machine().little_law(), comm_.machine().settings().gpu_config(),
                                        comm_.machine().format());
  acked_ = !innet_;  // unicast writes are acknowledged
  endpoint_GBps_ = comm_.least_endpoint_GBps(acked_);
  // The window bounds the order where no wave inside it does (the header says so).
  const bool waved = wp.waves > 0;
  if (wp.arbitrary_order && wp.order_window > 0 &&
      (!waved || wp.wave_bytes / topo::MulticastFabric::kBlockBytes > wp.order_window))
    order_window_ = {wp.order_window, waved};
  engines_ = std::make_unique<gpu::CopyCollective>(program_, comm_.gpus_, t, comm_.machine().multicast(), dtype_,
                                                     redop_, comm_.seed_, wp);
}

NicSetup nic_setup(const topo::Topology& t, Config& cfg, const collectives::Synthesis& s, double unacked_GBps,
                   uint32_t max_payload, uint32_t header) {
  NicSetup n;
  n.estimate.link_GBps = t.links().front().bw_GBps;
  if (s.trees()) {  // dataflow mode issues no NOPs, so the estimate loads nothing
    n.estimate.buffer_flits = 318;
    n.estimate.clock_ghz = 1.0;
    n.endpoint_GBps = is_dgx1(t) ? s.algbw_bound_GBps : unacked_GBps;
    return n;
  }
  const std::string fc = cfg.get(nic::kNicFlowControl, s.message_flow_control ? "message" : "packet");
  if (fc != "packet" && fc != "message") throw UserError("nic.flow_control must be packet or message, not '" + fc + "'");
  n.message = fc == "message";
  const std::string choice = cfg.get(nic::kNicInterfaceChoice);
  if (choice != "shared" && choice != "first-free")
    throw UserError("nic.interface_choice must be shared or first-free, not '" + choice + "'");
  if (choice == "first-free" && t.grid.kx == 0)
    throw UserError("nic.interface_choice=first-free shares a torus or mesh node's interfaces; " + t.name +
                    " is not one");
  n.interfaces = {choice == "first-free", uint64_t{cfg.get(nic::kNicInterfaceBuffer)} * max_payload};
  n.estimate.buffer_flits = cfg.get(nic::kNicBufferFlits);
  n.estimate.clock_ghz = cfg.get(nic::kNicClock);
  for (const auto& l : t.links()) n.estimate.link_GBps = std::min(n.estimate.link_GBps, l.bw_GBps);
  n.endpoint_GBps = unacked_GBps;
  // One head flit per message instead of per packet.
  if (n.message) n.endpoint_GBps *= static_cast<double>(max_payload + header) / max_payload;
  return n;
}

// The NICs run the schedule as a program (or a program file of table
// operations, or packed trees in dataflow mode), which each compiles to its
// table.
void CollectiveCall::make_tables() {
  const topo::Topology& t = comm_.machine().topology();
  const auto& f = comm_.machine().format();
  const NicSetup n =
      nic_setup(t, comm_.cfg_, synthesis_, comm_.least_endpoint_GBps(false), f.max_payload_bytes, f.header_bytes);
  endpoint_GBps_ = n.endpoint_GBps;
  // The NICs compile the program to tables here, once; a file that does not
  // compile (schedule_of) is refused naming it, before anything runs.
  const int job = admit_nic_tables();
  std::unique_ptr<nic::ScheduledCollective> c;
  try {
    c = std::make_unique<nic::ScheduledCollective>(program_, comm_.nics(), t, dtype_, redop_, comm_.seed_,
                                                   n.message ? nic::FlowControl::Message : nic::FlowControl::Packet,
                                                   n.estimate, job, n.interfaces);
  } catch (const UserError& e) {
    throw UserError(std::string(algorithm_.name()) + ": " + e.what());
  }
  scheduled_ = c.get();
  engines_ = std::move(c);
}

int CollectiveCall::admit_nic_tables() const {
  const int job = comm_.machine().multicast().tenant();
  const GpuFabric& f = comm_.machine().fabric_as<GpuFabric>();
  const uint32_t cap = f.nic_tables();
  if (cap == 0) return job;
  const nvswitch::TableSharing& s = f.nic_sharing();
  const int limit = static_cast<int>(s.limit(job, cap));
  const std::string of = " of " + nic::kNicTables.key() + "=" + std::to_string(cap);
  for (const nic::Nic* n : comm_.nics()) {
    const std::string needs = std::string(algorithm_.name()) + " needs a schedule table on " + n->name();
    if (n->tables_loaded() >= static_cast<int>(cap))
      throw ShareShortfall(s.resource().tables, needs + ", which holds all" + of + " already");
    if (s.holds(job) && n->tables_loaded(job) >= limit)
      throw ShareShortfall(s.resource().tables, needs + ", but its " + s.share_text(job) + " is " +
                                                    std::to_string(limit) + of + " there, " +
                                                    std::to_string(n->tables_loaded(job)) + " of them held already");
  }
  return job;
}

void CollectiveCall::start(uint64_t bytes, std::function<void()> on_done) {
  GpuMachine& m = comm_.machine();
  const auto& ends = m.link_ends();
  link_bytes_.resize(ends.size());
  for (size_t k = 0; k < ends.size(); ++k) link_bytes_[k] = ends[k].port->bytes_sent();
  t0_ = sim_now();
  tables_ = m.table_totals();
  latency_ = m.packet_latency();
  done_ = false;
  bytes_ = bytes;
  on_done_ = std::move(on_done);
  // NCCL's fixed cost passes before the first step.
  const double base_us = software_.base_us(collectives::message_protocol(program_, by_size_, bytes));
  if (base_us == 0) return begin();
  launch_.after(sc_core::sc_time(base_us, sc_core::SC_US), [this] { begin(); });
}

void CollectiveCall::begin() {
  // The memory's jitter counts from the first step and an idle machine's
  // arbiters start where they started the first collective, so the steps
  // are the same whatever came before them.
  for (gpu::Gpu* g : comm_.gpus_) g->memory().set_origin(sim_now());
  comm_.machine().rewind_if_idle();
  engines_->start(bytes_, [this] {
    done_ = true;
    t1_ = sim_now();
    on_done_();
  });
}

// The machine's counters (links, tables, packets) count everything on it
// while the collective ran, another job's traffic too.
Measures CollectiveCall::measures() const {
  const GpuMachine& m = comm_.machine();
  Measures r;
  r.time_us = software_.row_us((t1_ - t0_).to_seconds() * 1e6);
  r.wrong = engines_->wrong();
  r.bound_us = bound_us(bytes_);
  r.busbw_factor = collectives::busbw_factor(program_.collective, program_.ranks);
  r.redop = engines_->redop();
  const auto& ends = m.link_ends();
  for (size_t k = 0; k < ends.size(); ++k) r.link_bytes.push_back(ends[k].port->bytes_sent() - link_bytes_[k]);
  // Which network limited the time: the busiest link direction inside the
  // nodes (NVLink) and between them.
  if (!comm_.nodes_.empty())
    for (size_t k = 0; k < ends.size(); ++k)
      r.count_busy(comm_.between_nodes_[k], static_cast<double>(r.link_bytes[k]), ends[k].port->bw_GBps());
  const auto tables1 = m.table_totals();
  const auto latency1 = m.packet_latency();
  r.packets = latency1.first - latency_.first;
  r.latency_ns_sum = static_cast<double>(latency1.second - latency_.second) * sc_core::sc_get_time_resolution().to_seconds() * 1e9;
  r.tables = {tables1.hits - tables_.hits, tables1.misses - tables_.misses, tables1.evictions - tables_.evictions,
              tables1.stalls - tables_.stalls, tables1.completions - tables_.completions,
              tables1.timeouts - tables_.timeouts};
  return r;
}

void CollectiveCall::note(std::ostream& notes, const Measures& m) const {
  if (!reduces_in_switches()) return;
  // Which key an eviction answers to: an entry idle for the timeout, or one
  // a new block needed the room of.
  const uint64_t for_room = m.tables.evictions - std::min(m.tables.evictions, m.tables.timeouts);
  std::string why;
  if (m.tables.timeouts)
    why = std::to_string(m.tables.timeouts) + " of them idle for the entry timeout, switch.reduction_table.timeout_ns";
  if (for_room && m.tables.timeouts)
    why += "; " + std::to_string(for_room) + " for a new block's room, switch.reduction_table.bytes";
  std::ostringstream os;  // fixed to whole ns here only
  os << "#   reduction tables: " << m.tables.hits << " hits, " << m.tables.misses << " misses, "
     << m.tables.evictions << " evictions" << (why.empty() ? "" : " (" + why + ")") << ", " << m.tables.stalls
     << " stalls, " << m.tables.completions << " completions; packets: " << m.packets << " delivered, " << std::fixed
     << std::setprecision(0) << (m.packets ? m.latency_ns_sum / m.packets : 0.0)
     << " ns mean latency (from each one's maker: a GPU, or the switch table that made it)\n";
  notes << os.str();
}

// Packed trees' own rate (Blink's), or what the busiest GPU's links allow it
// to move: a cluster's cores by their links inside and across the nodes
// (cluster_endpoint_GBps, already the busbw), else by the program's traffic.
double CollectiveCall::bound_us(uint64_t bytes, bool with_links) const {
  return program_bound_us(program_, bytes, endpoint_GBps_, synthesis_.algbw_bound_GBps,
                          !comm_.nodes_.empty() && program_.engine() == collectives::Engine::Cores,
                          with_links ? links_ : LinkBound{});
}

void CollectiveCall::describe(std::ostream& os, uint64_t bytes, const std::string& name) const {
  if (!cluster_note_.empty()) os << "# cluster: " << cluster_note_ << "\n";
  if (!synthesis_.bound_note.empty()) {
    print_algbw_bound(os, endpoint_GBps_, synthesis_.bound_note);
  } else {
    if (!cluster_note_.empty()) {  // cluster_endpoint_GBps: already the busbw the busiest GPU's links allow
      print_cluster_bound(os, endpoint_GBps_);
    } else {
      print_payload_bound(os, endpoint_GBps_,
                          scheduled_ ? nic_links(scheduled_->flow_control() == nic::FlowControl::Message)
                          : !innet_  ? cores_links(program_)
                                     : kPostedLinks,
                          program_, bytes, bound_us(bytes, false), name);
    }
    print_link_bound(os, links_, program_, bytes, bound_us(bytes, false), name);
  }
  if (scheduled_) collectives::describe_schedule(os, scheduled_->schedule(), scheduled_->dataflow());
  if (innet_) print_switches_what_if(os, comm_.machine().topology(), name);
  if (reduces_in_switches()) {
    describe_sizing(os);
    describe_order(os);
  }
  print_nccl_lines(os, program_, by_size_, software_, pxn_relays_);
}

void print_nccl_lines(std::ostream& os, const collectives::Program& p, const collectives::ProtocolBySize& by_size,
                      const collectives::NcclSoftware& software, size_t pxn_relays) {
  if (p.protocol_by_size) os << by_size.header_line();
  os << software.header_line();
  if (pxn_relays)
    os << "# pxn (cluster.pxn): " << pxn_relays << " transfers per pass between GPUs on other rails of other nodes "
       << "relayed over NVLink by the GPU on the destination's rail, through its adapter (NCCL's PXN)\n";
}

void CollectiveCall::describe_sizing(std::ostream& os) const {
  const GpuMachine& m = comm_.machine();
  print_table_sizing(os, m.little_law(), m.table_config().table_bytes, innet_ == collectives::InNetMethod::Pull,
                     comm_.size(), push_window_bytes(comm_.cfg_, comm_.machine().topology()));
}

// Where the order window binds, it bounds how far apart the GPUs issue one
// block, so what the tables hold in flight without waves.
void CollectiveCall::describe_order(std::ostream& os) const {
  if (order_window_.blocks == 0) return;
  os << "# issue order (gpu.copy_engine.order=window): each GPU's own within windows of " << order_window_.blocks
     << " blocks (" << order_window_.blocks * topo::MulticastFabric::kBlockBytes << " B), "
     << (order_window_.in_waves ? "inside each wave\n" : "no waves\n");
}

}  // namespace incsim::platforms
