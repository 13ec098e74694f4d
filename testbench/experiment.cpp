#include "experiment.h"

#include "results_json.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/trace.h"
#include "core/units.h"
#include "core/yaml_file.h"
#include "collectives/bounds.h"
#include "gpu/innet_collective.h"
#include "gpu/ring_collective.h"
#include "watchdog.h"

namespace incsim::tb {

namespace {

void flatten(const YAML::Node& n, const std::string& prefix, Config& cfg, const std::string& file) {
  for (const auto& kv : n) {
    const std::string key = prefix.empty() ? kv.first.as<std::string>() : prefix + "." + kv.first.as<std::string>();
    if (kv.second.IsMap()) flatten(kv.second, key, cfg, file);
    else if (kv.second.IsScalar()) cfg.set(key, kv.second.as<std::string>(), file);
    else throw UserError("config file " + file + ": key '" + key + "' must hold a single value");
  }
}

}  // namespace

namespace {
constexpr const char* kCollectives = "allreduce, reducescatter, allgather, broadcast";
constexpr const char* kAlgorithms = "ring, push, pull, multicast";

// Which algorithms run which collective, the first the default: the ring in
// software (Klenk §III), the others with the switches' help (Klenk §IV).
std::string algorithms_for(const std::string& collective) {
  if (collective == "allreduce") return "ring, push, pull";
  if (collective == "allgather") return "ring, multicast";
  if (collective == "broadcast") return "multicast";
  return "ring";
}
}  // namespace

std::string choices() {
  return "platform\t" + platforms::builtin_platforms() +
         ", FILE.yaml\ndims\t2x2 to 16x16 (torus, mesh), 4x8, 4x16 (bigraph: nodes per switch x switches)\n"
         "nodes\t16, 64 (fattree: k x k nodes, k from 2 to 16)\ncollective\t" + kCollectives +
         "\nalgorithm\t" + kAlgorithms + "\ndtype\t" + collectives::kDTypes + "\nredop\t" + collectives::kRedOps +
         "\n";
}

void load_config_file(const std::string& path, Options& o, Config& cfg) {
  const YAML::Node root = load_yaml_file(path, "config file");
  if (root.IsNull()) return;
  if (!root.IsMap()) throw UserError("config file " + path + " must be a map of options and parameters");
  // Run options sit at the top level, as on the command line; the rest are parameters.
  std::vector<std::string> argv_store{"incsim"};
  YAML::Node params;
  for (const auto& kv : root) {
    const auto key = kv.first.as<std::string>();
    if (key == "platform" || key == "dims" || key == "nodes" || key == "collective" || key == "algorithm" ||
        key == "gpus" || key == "sizes" || key == "dtype" || key == "redop" || key == "seed") {
      if (!kv.second.IsScalar()) throw UserError("config file " + path + ": '" + key + "' must be a single value");
      argv_store.push_back("--" + key);
      argv_store.push_back(kv.second.as<std::string>());
    } else {
      params[key] = kv.second;
    }
  }
  std::vector<const char*> argv;
  for (auto& a : argv_store) argv.push_back(a.c_str());
  o = parse_command_line(static_cast<int>(argv.size()), argv.data(), o);
  flatten(params, "", cfg, path);
}

Experiment::Experiment(const Options& o) : opt_(o) {
  if (!opt_.config_file.empty()) {
    // The file sets defaults; flags given on the command line still win.
    Options from_file;
    load_config_file(opt_.config_file, from_file, cfg_);
    Options defaults;
    auto pick = [](auto& cli, const auto& file, const auto& def) {
      if (cli == def) cli = file;
    };
    pick(opt_.platform, from_file.platform, defaults.platform);
    pick(opt_.collective, from_file.collective, defaults.collective);
    pick(opt_.algorithm, from_file.algorithm, defaults.algorithm);
    pick(opt_.gpus, from_file.gpus, defaults.gpus);
    pick(opt_.dims, from_file.dims, defaults.dims);
    pick(opt_.nodes, from_file.nodes, defaults.nodes);
    pick(opt_.sizes, from_file.sizes, defaults.sizes);
    pick(opt_.dtype, from_file.dtype, defaults.dtype);
    pick(opt_.redop, from_file.redop, defaults.redop);
    pick(opt_.seed, from_file.seed, defaults.seed);
  }
  for (const auto& [k, v] : opt_.overrides) cfg_.set(k, v, "-c");

  const std::string accepted = algorithms_for(opt_.collective);
  if ((std::string(", ") + kCollectives + ",").find(", " + opt_.collective + ",") == std::string::npos)
    throw UserError("unknown collective '" + opt_.collective + "'; this build runs: " + kCollectives);
  if (opt_.algorithm.empty()) opt_.algorithm = accepted.substr(0, accepted.find(','));
  if ((", " + accepted + ",").find(", " + opt_.algorithm + ",") == std::string::npos)
    throw UserError("algorithm '" + opt_.algorithm + "' does not run " + opt_.collective + "; choose one of " + accepted);
  dtype_ = collectives::parse_dtype(opt_.dtype);
  redop_ = collectives::parse_redop(opt_.redop);
  sizes_ = parse_sizes(opt_.sizes);
  for (uint64_t s : sizes_)
    if (s % 4 != 0)
      throw UserError("size " + std::to_string(s) + " is not a multiple of the 4-byte element size of " + opt_.dtype);

  platforms::PlatformShape shape;
  shape.gpus = opt_.gpus;
  shape.nodes = opt_.nodes;
  if (!opt_.dims.empty()) {
    shape.dims = true;
    std::tie(shape.dims_x, shape.dims_y) = parse_dims(opt_.dims);
  }
  topo::Topology t = platforms::make_topology(opt_.platform, shape, cfg_);
  const int n = opt_.gpus ? opt_.gpus : static_cast<int>(t.endpoints().size());
  if (n > static_cast<int>(t.endpoints().size()))
    throw UserError("platform '" + t.name + "' has " + std::to_string(t.endpoints().size()) + " GPUs, fewer than --gpus " +
                    std::to_string(n));
  if (n < 2) throw UserError("a " + opt_.collective + " needs at least 2 GPUs");
  // Klenk §IV-E2 keeps multicast free of routing deadlock by making its
  // paths conform to unicast routes. Our multicast trees run the routes
  // toward their root backwards: routes on a fabric that goes up, then down,
  // but not under dimension order (X then Y backwards is Y then X) nor on
  // BiGraph (ties broken by destination: the way back differs), and there
  // runs stall (measured: push on a 4x4 torus
  // and mesh at 64 KiB, pull and multicast on BiGraph 4x8 at 1 MiB).
  if (opt_.algorithm != "ring" && t.vc_policy != topo::VcPolicy::None)
    throw UserError("algorithm '" + opt_.algorithm + "' reduces or multicasts in the switches, which only works on " +
                    "fabrics whose routes go up then down (dgx2, fattree2l, star, fattree); on " + opt_.platform +
                    " use ring");
  if (!opt_.dump_platform.empty()) {
    std::ofstream f(opt_.dump_platform);
    if (!f) throw UserError("cannot write '" + opt_.dump_platform + "'");
    topo::save_yaml(t, f);
  }

  // Defaults from the paper's figure for this algorithm and platform (Klenk
  // Fig. 7: DGX-2; Fig. 8: the fat tree).
  const bool fattree = t.name == "fattree2l";
  platforms::PlatformDefaults pd = platforms::platform_defaults(opt_.platform);
  pd.table_bytes = opt_.algorithm == "push" ? 256 : opt_.algorithm == "pull" ? (fattree ? 1024 : 4096) : 0;
  platform_ = std::make_unique<platforms::Platform>(t, cfg_, opt_.seed, pd);
  for (int g = 0; g < n; ++g) participants_.push_back(platform_->gpus()[g]);
  if (opt_.algorithm == "ring") make_ring(n);
  else make_in_network(n, fattree);

  double stall_us = cfg_.get<double>(
      "sim.stall_timeout_us", 0.0,
      "simulated time without any link activity that counts as a stall, us; 0: the longest of 100 us, 20 of the "
      "platform's longest request-response loops and 4 reduction table timeouts");
  if (!(stall_us >= 0)) throw UserError("sim.stall_timeout_us must not be negative");
  // A push table may hold an entry for its whole timeout with no link moving.
  if (stall_us == 0)
    stall_us = std::max({100.0, 20 * platform_->longest_round_trip().to_seconds() * 1e6,
                         4 * platform_->switch_config().table_timeout.to_seconds() * 1e6});
  const double progress_s = cfg_.get<double>("sim.progress_s", 2.0, "wall-clock seconds between progress lines on stderr");
  watchdog_ = std::make_unique<Watchdog>(
      "watchdog", sc_core::sc_time(stall_us, sc_core::SC_US),
      [this] {
        uint64_t b = 0;
        for (const auto& l : platform_->link_ends()) b += l.port->bytes_sent();
        return b;
      },
      opt_.quiet, progress_s);
  cfg_.check_unused();

  if (!opt_.vcd.empty()) {
    vcd_ = open_vcd(opt_.vcd);
    platform_->trace(vcd_);
  }
}

// The bound takes the GPU with the least bandwidth toward the others.
double Experiment::least_endpoint_GBps(int n, bool acked) const {
  std::vector<int> ranks;
  for (int g = 0; g < n; ++g) ranks.push_back(g);
  double b = platform_->endpoint_payload_GBps(0, ranks, acked);
  for (int g = 1; g < n; ++g) b = std::min(b, platform_->endpoint_payload_GBps(g, ranks, acked));
  return b;
}

void Experiment::make_ring(int n) {
  const topo::Topology& t = platform_->topology();
  gpu::RingKind kind = opt_.collective == "allreduce"       ? gpu::RingKind::AllReduce
                       : opt_.collective == "reducescatter" ? gpu::RingKind::ReduceScatter
                                                            : gpu::RingKind::AllGather;
  endpoint_GBps_ = least_endpoint_GBps(n, true);

  gpu::RingParams rp;
  rp.channels = cfg_.get<int>("ring.channels", 12,
                              "parallel rings, spread over a GPU's ports (NCCL runs several per link; 2 per DGX-2 link)");
  rp.chunk_bytes = cfg_.get<uint64_t>(
      "ring.chunk_bytes", 128 * 1024,
      "bytes per rank per ring iteration, one mailbox slot between flags (NCCL 2.4 uses 1 MiB slices; "
      "smaller keeps simulated mailboxes small, docs/validation.md)");
  rp.slots = cfg_.get<int>("ring.slots", 4, "mailbox slots per channel (NCCL 2.4: NCCL_STEPS / slice steps = 4)");
  if (rp.channels < 1 || rp.channels > 256) throw UserError("ring.channels must be between 1 and 256");
  if (rp.chunk_bytes < 4 || rp.chunk_bytes % 4 != 0) throw UserError("ring.chunk_bytes must be a positive multiple of 4");
  // One slot deadlocks: a rank frees its slot only by forwarding into the
  // next rank's single slot, around the whole ring (NCCL needs 2 steps too).
  if (rp.slots < 2 || rp.slots > 64) throw UserError("ring.slots must be between 2 and 64");
  // Each rank sends on the ports that lead to its neighbour (all of them on
  // a switched fabric; on a direct network only some do).
  std::vector<gpu::RingCollective::RankPorts> ports(n);
  for (int r = 0; r < n; ++r) {
    const int node = t.endpoints()[r];
    for (int p = 0; p < t.node(node).ports; ++p) {
      if (t.port_reaches({node, p}, (r + 1) % n)) ports[r].to_next.push_back(p);
      if (t.port_reaches({node, p}, (r + n - 1) % n)) ports[r].to_prev.push_back(p);
    }
    // Topology::finalize checked that every endpoint reaches every other.
    assert(!ports[r].to_next.empty() && !ports[r].to_prev.empty());
  }
  collective_ = std::make_unique<gpu::RingCollective>(kind, participants_, std::move(ports), dtype_, redop_, opt_.seed,
                                                     rp, endpoint_GBps_);
}

void Experiment::make_in_network(int n, bool fattree) {
  const topo::Topology& t = platform_->topology();
  const bool push = opt_.algorithm == "push", pull = opt_.algorithm == "pull";
  gpu::InNetKind kind = push ? gpu::InNetKind::AllReducePush
                        : pull ? gpu::InNetKind::AllReducePull
                        : opt_.collective == "allgather" ? gpu::InNetKind::AllGather
                                                         : gpu::InNetKind::Broadcast;
  gpu::WaveParams wp;
  wp.waves = cfg_.get<int>(
      "gpu.copy_engine.waves", push ? (fattree ? 64 : 16) : pull ? (fattree ? 16 : 4) : 0,
      "wave counters, so waves outstanding per copy engine, for push and pull (multicast all-gather and broadcast "
      "have no responses to count); 0: no injection limiting (Klenk Fig. 7: push 16, pull 4 on DGX-2; Fig. 8: push "
      "64, pull 16 on the fat tree)");
  wp.wave_bytes = cfg_.get<uint32_t>("gpu.copy_engine.wave_bytes", 8192,
                                     "data per wave, bytes (Klenk Fig. 7, 8: waves of 8 kB)");
  const double timeout_us = cfg_.get<double>(
      "gpu.copy_engine.counter_timeout_us", 1000.0,
      "a wave that finds no free counter for this long makes the copy engine report an error (Klenk §IV-F3 retries "
      "\"after some time\", no value given)");
  const bool barrier = pull && cfg_.get<bool>("pull.barrier", true,
                                               "pull all-reduce starts with a barrier, an all-reduce on a flag (Klenk "
                                               "§IV-B, §VI-A: without it pulls may read stale data)");
  const std::string order = cfg_.get<std::string>(
      "gpu.copy_engine.order", "arbitrary",
      "arbitrary: each GPU issues a wave's blocks (without waves, all its blocks) in its own order, as DMA streams "
      "guarantee none (Klenk §II-A, §IV-C); address: every GPU in address order, the tables' best case");
  if (order != "arbitrary" && order != "address")
    throw UserError("gpu.copy_engine.order must be arbitrary or address, not '" + order + "'");
  wp.arbitrary_order = order == "arbitrary";
  if (wp.waves < 0 || wp.waves > 4096) throw UserError("gpu.copy_engine.waves must be between 0 and 4096");
  if (wp.wave_bytes < platform_->format().max_payload_bytes || wp.wave_bytes > (64u << 20))
    throw UserError("gpu.copy_engine.wave_bytes must be between one packet payload (" +
                    std::to_string(platform_->format().max_payload_bytes) + " B) and 64 MiB");
  if (!(timeout_us > 0 && timeout_us <= 1e6))
    throw UserError("gpu.copy_engine.counter_timeout_us must be above 0 and at most 1e6 (one second)");
  wp.counter_timeout = sc_core::sc_time(timeout_us, sc_core::SC_US);
  // Blocks, table entries and the packets that carry them are the 128-byte
  // aligned unit of Klenk §IV-D.
  if (platform_->format().max_payload_bytes != topo::MulticastFabric::kBlockBytes)
    throw UserError("the in-network algorithms reduce and multicast 128-byte blocks (Klenk §IV-D); "
                    "net.max_payload_bytes must be 128, not " + std::to_string(platform_->format().max_payload_bytes));
  if (push || pull) {
    const uint64_t table = platform_->switch_config().table_bytes;
    if (table == 0)
      throw UserError(opt_.algorithm + " reduces in the switches: switch.reduction_table.bytes must be above 0");
    // Klenk §IV-F1: waves are C/k of the network's table capacity C.
    if (wp.waves > 0 && wp.wave_bytes > platform_->total_table_bytes())
      throw UserError("a wave of " + std::to_string(wp.wave_bytes) + " B is larger than the " +
                      std::to_string(platform_->total_table_bytes()) +
                      " B of reduction table in the whole network (Klenk §IV-F1 sizes waves to C/k)");
  }
  endpoint_GBps_ = least_endpoint_GBps(n, false);
  collective_ = std::make_unique<gpu::InNetworkCollective>(kind, participants_, t, platform_->fabric(), dtype_, redop_,
                                                          opt_.seed, wp, barrier, endpoint_GBps_);
}

Experiment::~Experiment() {
  if (vcd_) close_vcd(vcd_, opt_.vcd);
}

std::vector<Row> Experiment::run(std::ostream* table) {
  std::vector<Row> rows;
  const auto& ends = platform_->link_ends();
  std::vector<uint64_t> before(ends.size());
  for (size_t i = 0; i < sizes_.size(); ++i) {
    const uint64_t bytes = sizes_[i];
    for (size_t k = 0; k < ends.size(); ++k) before[k] = ends[k].port->bytes_sent();
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    const auto tables0 = platform_->table_totals();
    const auto latency0 = platform_->packet_latency();
    bool done = false;
    sc_core::sc_time t1;
    collective_->start(bytes, [&] {
      done = true;
      t1 = sc_core::sc_time_stamp();
      sc_core::sc_pause();
    });
    watchdog_->arm("size " + size_label(bytes) + " (" + std::to_string(i + 1) + " of " + std::to_string(sizes_.size()) +
                   ")");
    while (!done && !watchdog_->stalled() && collective_->error().empty() && sc_core::sc_pending_activity())
      sc_core::sc_start();
    watchdog_->disarm();
    if (!collective_->error().empty()) throw UserError(collective_->error() + " during size " + size_label(bytes));
    if (!done) {
      std::ostringstream os;
      const uint64_t held = platform_->report_held(os);
      std::string where = os.str();
      if (!where.empty() && where.back() == '\n') where.pop_back();
      throw UserError("simulation stalled at " + sc_core::sc_time_stamp().to_string() + " during size " +
                      size_label(bytes) + " (no link moved a byte for sim.stall_timeout_us); " +
                      std::to_string(held) + " packets held:\n" + where);
    }
    Row r;
    r.size_bytes = bytes;
    r.count = bytes / 4;
    r.time_us = (t1 - t0).to_seconds() * 1e6;
    r.algbw_GBps = static_cast<double>(bytes) / (r.time_us * 1e3);
    r.busbw_GBps = r.algbw_GBps * collective_->busbw_factor();
    r.wrong = collective_->wrong();
    r.bound_us = collective_->bound_us(bytes);
    r.bound_fraction = r.bound_us / r.time_us;
    for (size_t k = 0; k < ends.size(); ++k) r.link_bytes.push_back(ends[k].port->bytes_sent() - before[k]);
    const auto tables1 = platform_->table_totals();
    const auto latency1 = platform_->packet_latency();
    r.packets = latency1.first - latency0.first;
    r.avg_latency_ns = r.packets ? (latency1.second - latency0.second) / r.packets : 0;
    r.tables = {tables1.hits - tables0.hits, tables1.misses - tables0.misses, tables1.evictions - tables0.evictions,
                tables1.stalls - tables0.stalls, tables1.completions - tables0.completions};
    if (table) {
      print_row(*table, r, collectives::dtype_name(dtype_), collective_->redop());
      if (opt_.algorithm == "push" || opt_.algorithm == "pull")
        *table << "#   reduction tables: " << r.tables.hits << " hits, " << r.tables.misses << " misses, "
               << r.tables.evictions << " evictions, " << r.tables.stalls << " stalls, " << r.tables.completions
               << " completions; packets: " << r.packets << " delivered, " << std::setprecision(0)
               << r.avg_latency_ns << " ns mean latency\n";
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

void Experiment::print_header(std::ostream& os) const {
  const auto& t = platform_->topology();
  os << "# incsim: " << opt_.collective << " " << opt_.algorithm << " on " << participants() << " of "
     << t.endpoints().size() << " GPUs, platform " << t.name << " (" << t.switches().size() << " switches, "
     << t.links().size() << " links), seed " << opt_.seed << "\n";
  os << "# bound: " << std::fixed << std::setprecision(1) << endpoint_GBps_ << " GB/s payload per GPU ("
     << (opt_.algorithm == "ring" ? "links less header flits and write acks" : "links less header flits; multicast writes are posted")
     << ")\n";
  if (opt_.algorithm == "push" || opt_.algorithm == "pull") print_sizing(os);
  print_columns(os);
}

void Experiment::print_columns(std::ostream& os) {
  os << "#\n";
  os << "# " << std::setw(12) << "size" << std::setw(12) << "count" << std::setw(7) << "type" << std::setw(7)
     << "redop" << std::setw(11) << "time" << std::setw(9) << "algbw" << std::setw(9) << "busbw" << std::setw(9)
     << "#wrong" << std::setw(8) << "bound" << "\n";
  os << "# " << std::setw(12) << "(B)" << std::setw(12) << "(elements)" << std::setw(7) << "" << std::setw(7) << ""
     << std::setw(11) << "(us)" << std::setw(9) << "(GB/s)" << std::setw(9) << "(GB/s)" << std::setw(9) << ""
     << std::setw(8) << "(%)" << "\n";
  os.flush();
}

// The Little's-law table sizes of Klenk Eq. (1) and (2) for this platform,
// beside the configured size, so a sensitivity sweep can be read against them.
void Experiment::print_sizing(std::ostream& os) const {
  const auto& t = platform_->topology();
  const int n = participants();
  const auto& sw = platform_->switch_config();
  const auto& ll = platform_->little_law();
  const int node = t.endpoints()[0];
  uint64_t ports = 0;
  for (int s : t.switches()) ports += t.node(s).ports;
  const int access = t.node(node).ports;
  os << std::setprecision(0) << "# table sizing (Little's law; B_in " << ll.b_in_GBps << " GB/s, d_max " << ll.d_max
     << " switches, L_hop " << std::setprecision(1) << ll.l_hop_ns << " ns, L_GPU " << ll.l_gpu_ns << " ns): ";
  if (opt_.algorithm == "pull") {
    const double c = collectives::pull_table_bytes(ll.b_in_GBps, n, ll.d_max, ll.l_hop_ns, ll.l_gpu_ns);
    os << std::setprecision(0) << "Eq. (1) pull C_min = " << c << " B per GPU = " << c / access << " B per access port";
  } else {
    const double c = collectives::push_table_bytes(ll.b_in_GBps, ll.d_max, ll.l_hop_ns);
    os << std::setprecision(0) << "Eq. (2) push C_min = " << c << " B = " << c / ports << " B per port over " << ports
       << " ports";
  }
  os << "; configured " << sw.table_bytes << " B per port\n";
}

void Experiment::print_row(std::ostream& os, const Row& r, const std::string& type, const std::string& redop) {
  os << "  " << std::setw(12) << r.size_bytes << std::setw(12) << r.count << std::setw(7) << type << std::setw(7)
     << redop << std::fixed << std::setw(11) << std::setprecision(2) << r.time_us << std::setw(9)
     << std::setprecision(2) << r.algbw_GBps << std::setw(9) << r.busbw_GBps << std::setw(9) << r.wrong
     << std::setw(8) << std::setprecision(1) << 100.0 * r.bound_fraction << "\n";
  os.flush();
}

void Experiment::write_json(const std::string& path, const std::vector<Row>& rows) const {
  using json = nlohmann::ordered_json;
  json j;
  j["config"]["platform"] = opt_.platform;
  if (!opt_.dims.empty()) j["config"]["dims"] = opt_.dims;
  if (opt_.nodes) j["config"]["nodes"] = opt_.nodes;
  j["config"]["collective"] = opt_.collective;
  j["config"]["algorithm"] = opt_.algorithm;
  j["config"]["gpus"] = participants();
  j["config"]["dtype"] = collectives::dtype_name(dtype_);
  j["config"]["redop"] = collective_->redop();
  j["config"]["seed"] = opt_.seed;
  j["config"]["sizes"] = opt_.sizes;
  j["config"]["params"] = params_json(cfg_);
  j["endpoint_payload_GBps"] = endpoint_GBps_;
  const auto& ends = platform_->link_ends();
  json rs = json::array();
  for (const auto& r : rows) {
    json row;
    row_json(row, r, collectives::dtype_name(dtype_), collective_->redop());
    row["packets"] = r.packets;
    row["avg_packet_latency_ns"] = r.avg_latency_ns;
    row["reduction_tables"] = {{"hits", r.tables.hits},
                               {"misses", r.tables.misses},
                               {"evictions", r.tables.evictions},
                               {"stalls", r.tables.stalls},
                               {"completions", r.tables.completions}};
    row["links"] = links_json(ends, r.link_bytes, r.time_us);
    rs.push_back(row);
  }
  j["rows"] = rs;
  std::ofstream f(path);
  if (!f) throw UserError("cannot write the results file '" + path + "'");
  f << j.dump(1) << "\n";
}

void Experiment::list_params(std::ostream& os) const {
  tb::list_params(os, cfg_);
}

}  // namespace incsim::tb
