#include "experiment.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/trace.h"
#include "core/units.h"
#include "core/yaml_file.h"
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
constexpr const char* kCollectives = "allreduce, reducescatter, allgather";
constexpr const char* kAlgorithms = "ring";
}  // namespace

std::string choices() {
  return "platform\t" + platforms::builtin_platforms() + ", FILE.yaml\ncollective\t" + kCollectives +
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
    if (key == "platform" || key == "collective" || key == "algorithm" || key == "gpus" || key == "sizes" ||
        key == "dtype" || key == "redop" || key == "seed") {
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
    pick(opt_.sizes, from_file.sizes, defaults.sizes);
    pick(opt_.dtype, from_file.dtype, defaults.dtype);
    pick(opt_.redop, from_file.redop, defaults.redop);
    pick(opt_.seed, from_file.seed, defaults.seed);
  }
  for (const auto& [k, v] : opt_.overrides) cfg_.set(k, v, "-c");

  gpu::RingKind kind;
  if (opt_.collective == "allreduce") kind = gpu::RingKind::AllReduce;
  else if (opt_.collective == "reducescatter") kind = gpu::RingKind::ReduceScatter;
  else if (opt_.collective == "allgather") kind = gpu::RingKind::AllGather;
  else
    throw UserError("unknown collective '" + opt_.collective + "'; this build runs: " + kCollectives);
  if (opt_.algorithm != "ring")
    throw UserError("unknown algorithm '" + opt_.algorithm + "' for " + opt_.collective + "; this build runs: " +
                    kAlgorithms);
  dtype_ = collectives::parse_dtype(opt_.dtype);
  const collectives::RedOp redop = collectives::parse_redop(opt_.redop);
  sizes_ = parse_sizes(opt_.sizes);
  for (uint64_t s : sizes_)
    if (s % 4 != 0)
      throw UserError("size " + std::to_string(s) + " is not a multiple of the 4-byte element size of " + opt_.dtype);

  topo::Topology t = platforms::make_topology(opt_.platform, opt_.gpus, cfg_);
  const int n = opt_.gpus ? opt_.gpus : static_cast<int>(t.endpoints().size());
  if (n > static_cast<int>(t.endpoints().size()))
    throw UserError("platform '" + t.name + "' has " + std::to_string(t.endpoints().size()) + " GPUs, fewer than --gpus " +
                    std::to_string(n));
  if (n < 2) throw UserError("a ring " + opt_.collective + " needs at least 2 GPUs");
  if (!opt_.dump_platform.empty()) {
    std::ofstream f(opt_.dump_platform);
    if (!f) throw UserError("cannot write '" + opt_.dump_platform + "'");
    topo::save_yaml(t, f);
  }

  platform_ = std::make_unique<platforms::Platform>(t, cfg_, opt_.seed);
  std::vector<int> ranks;
  for (int g = 0; g < n; ++g) {
    participants_.push_back(platform_->gpus()[g]);
    ranks.push_back(g);
  }
  // The bound takes the GPU with the least bandwidth toward the others.
  endpoint_GBps_ = platform_->endpoint_payload_GBps(0, ranks);
  for (int g = 1; g < n; ++g) endpoint_GBps_ = std::min(endpoint_GBps_, platform_->endpoint_payload_GBps(g, ranks));

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
  collective_ = std::make_unique<gpu::RingCollective>(kind, participants_, std::move(ports), dtype_, redop, opt_.seed,
                                                     rp, endpoint_GBps_);

  double stall_us = cfg_.get<double>(
      "sim.stall_timeout_us", 0.0,
      "simulated time without any link activity that counts as a stall, us; 0: 100 us or 20 of the platform's "
      "longest request-response loops, whichever is longer");
  if (!(stall_us >= 0)) throw UserError("sim.stall_timeout_us must not be negative");
  if (stall_us == 0) stall_us = std::max(100.0, 20 * platform_->longest_round_trip().to_seconds() * 1e6);
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
    bool done = false;
    sc_core::sc_time t1;
    collective_->start(bytes, [&] {
      done = true;
      t1 = sc_core::sc_time_stamp();
      sc_core::sc_pause();
    });
    watchdog_->arm("size " + size_label(bytes) + " (" + std::to_string(i + 1) + " of " + std::to_string(sizes_.size()) +
                   ")");
    while (!done && !watchdog_->stalled() && sc_core::sc_pending_activity()) sc_core::sc_start();
    watchdog_->disarm();
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
    if (table) print_row(*table, r, collectives::dtype_name(dtype_), collective_->redop());
    rows.push_back(std::move(r));
  }
  return rows;
}

void Experiment::print_header(std::ostream& os) const {
  const auto& t = platform_->topology();
  os << "# incsim: " << opt_.collective << " " << opt_.algorithm << " on " << participants() << " of "
     << t.endpoints().size() << " GPUs, platform " << t.name << " (" << t.switches().size() << " switches, "
     << t.links().size() << " links), seed " << opt_.seed << "\n";
  os << "# bound: " << std::fixed << std::setprecision(1) << endpoint_GBps_
     << " GB/s payload per GPU (links less header flits and write acks)\n";
  os << "#\n";
  os << "# " << std::setw(12) << "size" << std::setw(12) << "count" << std::setw(7) << "type" << std::setw(7)
     << "redop" << std::setw(11) << "time" << std::setw(9) << "algbw" << std::setw(9) << "busbw" << std::setw(9)
     << "#wrong" << std::setw(8) << "bound" << "\n";
  os << "# " << std::setw(12) << "(B)" << std::setw(12) << "(elements)" << std::setw(7) << "" << std::setw(7) << ""
     << std::setw(11) << "(us)" << std::setw(9) << "(GB/s)" << std::setw(9) << "(GB/s)" << std::setw(9) << ""
     << std::setw(8) << "(%)" << "\n";
  os.flush();
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
  j["config"]["collective"] = opt_.collective;
  j["config"]["algorithm"] = opt_.algorithm;
  j["config"]["gpus"] = participants();
  j["config"]["dtype"] = collectives::dtype_name(dtype_);
  j["config"]["redop"] = collective_->redop();
  j["config"]["seed"] = opt_.seed;
  j["config"]["sizes"] = opt_.sizes;
  json params = json::object();
  for (const auto& [k, p] : cfg_.params()) params[k] = p.value;
  j["config"]["params"] = params;
  j["endpoint_payload_GBps"] = endpoint_GBps_;
  const auto& ends = platform_->link_ends();
  json rs = json::array();
  for (const auto& r : rows) {
    json row;
    row["size_bytes"] = r.size_bytes;
    row["count"] = r.count;
    row["type"] = collectives::dtype_name(dtype_);
    row["redop"] = collective_->redop();
    row["time_us"] = r.time_us;
    row["algbw_GBps"] = r.algbw_GBps;
    row["busbw_GBps"] = r.busbw_GBps;
    row["wrong"] = r.wrong;
    row["bound_us"] = r.bound_us;
    row["bound_fraction"] = r.bound_fraction;
    json links = json::array();
    for (size_t k = 0; k < ends.size(); ++k) {
      const double capacity = ends[k].port->bw_GBps() * r.time_us * 1e3;
      links.push_back({{"from", ends[k].from},
                       {"to", ends[k].to},
                       {"bytes", r.link_bytes[k]},
                       {"utilisation", static_cast<double>(r.link_bytes[k]) / capacity}});
    }
    row["links"] = links;
    rs.push_back(row);
  }
  j["rows"] = rs;
  std::ofstream f(path);
  if (!f) throw UserError("cannot write the results file '" + path + "'");
  f << j.dump(1) << "\n";
}

void Experiment::list_params(std::ostream& os) const {
  for (const auto& [k, p] : cfg_.params())
    os << k << "\t" << p.type << "\t" << p.default_value << "\t" << p.description << "\n";
}

}  // namespace incsim::tb
