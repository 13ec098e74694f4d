#include "collective_workload.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>
#include <tuple>

#include "choices.h"
#include "elements/data_pattern.h"
#include "collectives/layout.h"
#include "collectives/msccl_xml.h"
#include "collectives/program_check.h"
#include "core/error.h"
#include "core/units.h"
#include "gpu/compute_engine.h"
#include "gpu/copy_collective.h"
#include "platforms/ethernet_fabric.h"
#include "platforms/flow_call.h"
#include "topology/cluster.h"

namespace incsim::tb {

Schema nccl_schema() {
  Schema s;
  s.add({"size_bytes", "B", ColumnKind::Setting, "size", "(B)", 12})
      .add({"count", "elements", ColumnKind::Setting, "count", "(elements)", 12})
      .add({"type", "", ColumnKind::Setting, "type", "", 7})
      .add({"redop", "", ColumnKind::Setting, "redop", "", 7})
      .add({"time_us", "us", ColumnKind::Measurement, "time", "(us)", 11, 2})
      .add({"algbw_GBps", "GB/s", ColumnKind::Measurement, "algbw", "(GB/s)", 9, 2})
      .add({"busbw_GBps", "GB/s", ColumnKind::Measurement, "busbw", "(GB/s)", 9, 2})
      .add({"wrong", "elements", ColumnKind::Measurement, "#wrong", "", 9})
      .add({"bound_us", "us", ColumnKind::Measurement})
      .add({"bound_fraction", "", ColumnKind::Measurement, "bound", "(%)", 8, 1, 100.0});
  return s;
}

void fill_nccl(Row& r, uint64_t bytes, const std::string& type, const std::string& redop, double time_us,
               double busbw_factor, uint64_t wrong, double bound_us) {
  const double algbw = static_cast<double>(bytes) / (time_us * 1e3);
  r.set("size_bytes", bytes)
      .set("count", bytes / elements::dtype_bytes(elements::parse_dtype(type)))
      .set("type", type)
      .set("redop", redop)
      .set("time_us", time_us)
      .set("algbw_GBps", algbw)
      .set("busbw_GBps", algbw * busbw_factor)
      .set("wrong", wrong)
      .set("bound_us", bound_us)
      .set("bound_fraction", bound_us / time_us);
}

void check_memory(const std::vector<uint64_t>& sizes, double per_byte, const std::string& holds, bool flow) {
  const uint64_t largest = *std::max_element(sizes.begin(), sizes.end());
  const double need = static_cast<double>(largest) * per_byte;
  const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (need <= have) return;
  uint64_t fits = 4;
  while (static_cast<double>(fits) * 2 * per_byte <= have) fits *= 2;
  std::ostringstream os;
  os << std::fixed << std::setprecision(0) << "--sizes " << size_label(largest) << " needs about " << need / 1e9
     << " GB of memory (" << holds << "); this machine's " << have / 1e9 << " GB hold sizes up to "
     << size_label(fits) << (flow ? ", and --fidelity flow holds no elements" : "");
  throw UserError(os.str());
}

std::tuple<elements::DType, elements::RedOp, std::vector<uint64_t>> parse_data(const Options& o,
                                                                              const std::vector<uint64_t>* given) {
  const std::vector<uint64_t> sizes = given ? *given : parse_sizes(o.sizes);
  const elements::DType t = elements::parse_dtype(o.dtype);
  const uint32_t elem = elements::dtype_bytes(t);
  for (uint64_t s : sizes)
    if (s % elem != 0)
      throw UserError("size " + std::to_string(s) + " is not a multiple of the " + std::to_string(elem) +
                      "-byte element size of " + o.dtype);
  return {t, elements::parse_redop(o.redop), sizes};
}

platforms::PlatformShape platform_shape(const Options& o) {
  platforms::PlatformShape shape;
  shape.gpus = o.gpus;
  shape.gpu_list = o.gpu_list;
  shape.gpu_servers = o.gpu_servers;
  shape.nodes = o.nodes;
  shape.node = o.node;
  if (!o.dims.empty()) {
    shape.dims = true;
    std::tie(shape.dims_x, shape.dims_y) = parse_dims(o.dims);
  }
  return shape;
}

void check_algorithm(const std::string& algorithm, const std::string& collective, const std::string& platform) {
  // A name no platform knows: the choices are the ones that run here.
  if (!one_of(algorithm, choice_list("algorithm")))
    check_choice("algorithm", algorithm, algorithms_for(collective, Family::GpuFabric, platform));
  if (const std::string ethernet = ethernet_platforms_of(algorithm); !ethernet.empty())
    throw UserError("algorithm '" + algorithm + "' runs on " + ethernet + ", not on " + platform);
  const std::string accepted = algorithms_for(collective, Family::GpuFabric);
  if (!one_of(algorithm, accepted))
    throw UserError("algorithm '" + algorithm + "' does not run " + collective + "; choose one of " + accepted);
}

std::string default_algorithm(const std::string& collective, const std::string& platform) {
  std::string all = algorithms_for(collective, Family::GpuFabric, platform);
  if (all.empty()) all = algorithms_for(collective, Family::GpuFabric);  // the workload names why none runs there
  return all.substr(0, all.find(','));
}

bool gpu_numbered(const std::string& algorithm, const topo::Topology& t) {
  const collectives::Algorithm* a = collectives::find_algorithm(algorithm, collectives::Family::GpuFabric);
  return a && a->gpu_numbered(t);
}

bool is_program_file(const std::string& algorithm) { return algorithm.find_first_of("./") != std::string::npos; }

collectives::Program read_checked_program(const std::string& path) {
  const bool xml = path.size() > 4 && path.compare(path.size() - 4, 4, ".xml") == 0;
  collectives::Program p = xml ? collectives::read_msccl_file(path) : collectives::read_program_file(path);
  const collectives::ProgramCheck check = collectives::check_program(p);
  if (!check.ok())
    throw UserError(path + " is not a correct " + collectives::collective_name(p.collective) + ": " +
                    check.problems.front());
  return p;
}

CollectiveChoice choose_collective(Options& o, const std::vector<uint64_t>* sizes) {
  CollectiveChoice c;
  collectives::Program file;
  if (is_program_file(o.algorithm)) {
    const std::string& path = o.algorithm;
    file = read_checked_program(path);
    if (file.engine() == collectives::Engine::RoceNic)
      throw UserError(path + " runs on RoCE hosts: run it on platform rack, spineleaf or multigpu");
    const bool copy = file.engine() == collectives::Engine::CopyEngine;
    if (const std::string why = copy ? gpu::CopyCollective::cannot_run(file) : ""; !why.empty())
      throw UserError(path + ": " + why);
    if (o.was_given("collective") && o.collective != collectives::collective_name(file.collective))
      throw UserError(path + ": its collective is " + collectives::collective_name(file.collective) +
                      ", not the --collective " + o.collective + " asked for");
    o.collective = collectives::collective_name(file.collective);
  }
  check_choice("collective", o.collective, kCollectives);
  if (o.algorithm.empty()) o.algorithm = default_algorithm(o.collective, o.platform);
  if (!file.ranks) check_algorithm(o.algorithm, o.collective, o.platform);
  std::tie(c.dtype, c.redop, c.sizes) = parse_data(o, sizes);
  c.file_ranks = file.ranks;
  if (c.file_ranks) c.file_algorithm = collectives::file_algorithm(o.algorithm, std::move(file));
  c.algorithm = c.file_ranks ? c.file_algorithm.get()
                             : collectives::find_algorithm(o.algorithm, collectives::Family::GpuFabric);
  collectives::collective_of(o.collective, c.collective);
  return c;
}

std::vector<int> collective_gpus(const Options& o, const CollectiveChoice& c, const topo::Topology& t,
                                 const std::vector<int>* share) {
  const bool dgx1 = platforms::is_dgx1(t);
  // A DGX-1's topology holds only the allocated GPUs.
  const int built = static_cast<int>(t.endpoints().size()), file_ranks = c.file_ranks;
  if (built < 2)
    throw UserError("a collective needs at least 2 GPUs, and platform '" + t.name + "' has " + std::to_string(built));
  if (file_ranks > built)
    throw UserError("platform '" + t.name + "' has " + std::to_string(built) + " GPUs, fewer than the " +
                    std::to_string(file_ranks) + " ranks of " + o.algorithm);
  if (file_ranks == 1) throw UserError(o.algorithm + " has 1 rank; a collective needs at least 2");
  if (!share && file_ranks && o.gpus && !dgx1 && *o.gpus != file_ranks)
    throw UserError("--gpus " + std::to_string(*o.gpus) + ", and " + o.algorithm + " has " +
                    std::to_string(file_ranks) + " ranks: a program runs on as many GPUs as it has ranks");
  const int n = share ? static_cast<int>(share->size())
                : file_ranks ? file_ranks
                : o.gpus && !dgx1 ? *o.gpus
                                  : built;
  if (share && n < 2) throw UserError("a collective needs at least 2 GPUs, and this job has " + std::to_string(n));
  if (share && file_ranks && file_ranks != n)
    throw UserError(o.algorithm + " has " + std::to_string(file_ranks) + " ranks, and this job " +
                    std::to_string(n) + " GPUs");
  if (n < 2 || n > built)
    throw UserError("platform '" + t.name + "' has " + std::to_string(built) + " GPUs and a collective needs 2 GPUs or "
                    "more: --gpus must be between 2 and " + std::to_string(built) + ", not " + std::to_string(n));
  std::vector<int> gpus;
  for (int r = 0; r < n; ++r) gpus.push_back(share ? (*share)[static_cast<size_t>(r)] : r);
  return gpus;
}

void refuse_packet_outputs(const Options& o, bool timeline) {
  for (const auto& [given, what] : {std::pair{"vcd", "a VCD of packets"}, std::pair{"timeline", "a timeline of the blocks"},
                                    std::pair{"dump-platform", "the packet-level machine's graph"}})
    if (o.was_given(given) && (timeline || std::string(given) != "timeline"))
      throw UserError(std::string("--") + given + " shows " + what + ", which --fidelity flow does not build");
}

// A lone collective's flow graph: its platform's, what its links pay, their defaults.
struct CollectiveWorkload::OwnFlows {
  topo::Topology graph;
  flow::FlowMachine machine;
  platforms::PlatformDefaults defaults;
};

CollectiveWorkload::CollectiveWorkload(const Options& o, Config& cfg, const Share* share)
    : opt_(o), cfg_(cfg), flows_(share ? share->flows != nullptr : o.fidelity == "flow") {
  *schema_ = nccl_schema();
  if (flows_ && !share) refuse_packet_outputs(opt_, true);
  refuse_options(opt_, {"hosts", "ring", "racks", "hosts-per-rack", "machines", "gpus-per-machine"},
                 "shapes the Ethernet platforms rack, spineleaf and multigpu, not " + opt_.platform);
  refuse_options(opt_, {"load"}, "applies to --traffic only");
  if (flows_) schema_->add({"flows", "flows", ColumnKind::Measurement});
  else
    schema_->add({"packets", "packets", ColumnKind::Measurement})
        .add({"avg_packet_latency_ns", "ns", ColumnKind::Measurement});
  CollectiveChoice choice = choose_collective(opt_, share && !share->sizes.empty() ? &share->sizes : nullptr);
  std::tie(dtype_, redop_, sizes_) = std::tie(choice.dtype, choice.redop, choice.sizes);
  file_algorithm_ = std::move(choice.file_algorithm);
  algorithm_ = choice.algorithm;

  // A collective alone builds its machine; a job (jobs.h) runs on its share of one.
  topo::Topology own;
  if (!share) own = opt_.topology ? *opt_.topology : platforms::make_topology(opt_.platform, platform_shape(opt_), cfg_);
  // --check-fidelity runs the platform at packet level after the flows: one that cannot is refused first.
  if (!share && flows_ && opt_.check_fidelity)
    platforms::require_packet_memory(own, "--check-fidelity runs it beside the flows: check the flows on a smaller "
                                          "platform");
  const topo::Topology& t = !share ? own : flows_ ? share->flows->graph : share->platform->topology();
  const std::vector<int> gpus = collective_gpus(opt_, choice, t, share ? &share->gpus : nullptr);
  const collectives::Collective c = choice.collective;
  // A type that cannot sum n ranks, before anything is built (flows hold no elements).
  if (!flows_) elements::DataPattern(opt_.seed, static_cast<int>(gpus.size()), dtype_, redop_);
  if (const std::string why = algorithm_->cannot_run(platforms::site(t, opt_.platform, c, gpus, share != nullptr, cfg_));
      !why.empty())
    throw UserError(why);
  if ((!flows_ || !share) && !topo::cluster_nodes(t).empty())  // flows sharing a platform's network count no links
    schema_->add({"nvlink_busiest", "", ColumnKind::Measurement, "nvlink", "(% busy)", 9, 1, 100.0})
        .add({"network_busiest", "", ColumnKind::Measurement, "network", "(% busy)", 9, 1, 100.0});
  make_communicator(share, std::move(own), gpus, c);
  // Where it runs, on the machine's graph (which outlives the one the options gave).
  site_ = std::make_unique<collectives::Site>(comm_->site(opt_.platform, c, share != nullptr, dtype_, redop_));
  collectives::Synthesis synthesis = algorithm_->synthesize(*site_);
  if (!flows_) check_memory(synthesis.program);
  // A program per size (NCCL's choice) on a share or as flows is the
  // communicator's to set up (platforms::TunedCall). Alone at packet level
  // run_point sets each size's up afresh, the header's released first, as
  // a tuning of several runs per size (Blink's) needs: no program set up
  // for another size holds the GPUs' memory or the switches' windows.
  tuner_ = algorithm_->tuner(*site_, synthesis);
  if (tuner_ && !opt_.vcd.empty())
    throw UserError(opt_.algorithm + " sets up a new program for every size" +
                    (tuner_->runs() > 1 ? " and tuning run (blink.miad_iterations)" : "") +
                    ", which a --vcd waveform cannot follow; run the algorithm its rows name for a waveform");
  if (tuner_ && tuner_->runs() > 1 && flows_)
    throw UserError("--fidelity flow: " + opt_.algorithm +
                    " tunes itself over several runs of each size, which flows do not run; run it at packet level");
  if (tuner_ && (share || flows_)) tuner_.reset();
  // The call keeps the program: a copy here would double the memory a large one takes.
  call_ = tuner_ ? comm_->set_up_one(*algorithm_, *site_, std::move(synthesis), dtype_, redop_, opt_.algorithm)
                 : comm_->set_up(*algorithm_, *site_, std::move(synthesis), dtype_, redop_, opt_.algorithm);
}

CollectiveWorkload::~CollectiveWorkload() = default;

// Its GPUs on a share's machine (or flow platform), or on one of its own
// built from graph `own` with what algorithm_ needs of it for `c`.
void CollectiveWorkload::make_communicator(const Share* share, topo::Topology own, const std::vector<int>& gpus,
                                           collectives::Collective c) {
  using platforms::Communicator;
  if (share && flows_) {
    flow_platform_ = share->flows;
    comm_ = std::make_unique<Communicator>(*flow_platform_, gpus, cfg_, opt_.seed);
    return;
  }
  if (share) {
    platform_ = share->platform;
    comm_ = std::make_unique<Communicator>(*platform_, gpus, cfg_, opt_.seed);
    return;
  }
  const platforms::PlatformDefaults d = platforms::platform_defaults(own, {algorithm_->needs(own, c)});
  if (flows_) {
    own_flows_ = std::make_unique<OwnFlows>(OwnFlows{std::move(own), {}, d});
    own_flows_->machine = platforms::flow_machine(own_flows_->graph, cfg_, d);
    comm_ = std::make_unique<Communicator>(
        platforms::FlowOn{own_flows_->graph, own_flows_->machine, own_flows_->defaults, gpus}, cfg_, opt_.seed);
    return;
  }
  own_platform_ = std::make_unique<platforms::GpuMachine>(own, cfg_, opt_.seed, d);
  platform_ = own_platform_.get();
  comm_ = std::make_unique<Communicator>(*platform_, gpus, cfg_, opt_.seed);
}

// The copy engines, the NICs' tables and the RoCE hosts hold each rank's
// buffers of the message size (measured: 0.1 to 1 byte per byte per rank);
// the cores make and check the elements as they move, and keep only the
// chunks a later operation reads back (collectives::cores_kept_bytes).
void CollectiveWorkload::check_memory(const collectives::Program& p) const {
  if (opt_.print_schedule || opt_.print_trees || opt_.print_program) return;  // printing runs no size
  const uint64_t largest = *std::max_element(sizes_.begin(), sizes_.end());
  const uint32_t elem = elements::dtype_bytes(dtype_);
  const std::string ranks = std::to_string(p.ranks) + " GPUs";
  if (p.engine() != collectives::Engine::Cores) {
    tb::check_memory(sizes_, p.ranks,
                     "a buffer of that size for each of " + ranks + ", which the " +
                         collectives::engine_name(p.engine()) + " engine holds",
                     p.engine() == collectives::Engine::NicTable);  // flows run the cores' and the NICs' programs
    return;
  }
  uint64_t kept = 0;
  for (int r = 0; r < p.ranks; ++r) kept += collectives::cores_kept_bytes(p, r, largest / elem, elem);
  tb::check_memory(sizes_, static_cast<double>(kept) / static_cast<double>(largest),
                   "the chunks " + ranks + "' cores keep for a later operation to read", true);
}

// A push table may hold an entry for its whole timeout with no link moving,
// and a RoCE sender a lost frame for its retransmission timeout.
sc_core::sc_time CollectiveWorkload::default_stall_timeout() const {
  if (flows_) return sc_core::sc_time(1, sc_core::SC_SEC);  // the flows' time moves with SystemC's
  const auto* roce = platform_->find_fabric<platforms::EthernetFabric>();
  const double us = std::max({100.0, 20 * platform_->longest_round_trip().to_seconds() * 1e6,
                              4 * platform_->table_config().table_timeout.to_seconds() * 1e6,
                              roce ? 2 * roce->rto().to_seconds() * 1e6 : 0.0});
  return sc_core::sc_time(us, sc_core::SC_US);
}

void print_collective(const std::string& what, const collectives::Program& program,
                      const collectives::Schedule* schedule, const std::string& trees_text, const Options& o,
                      std::ostream& os) {
  if (what == "program") {
    os << collectives::write_program(program);
    return;
  }
  if (what == "trees") {
    if (trees_text.empty())
      throw UserError("--print-trees shows Blink's trees or a DGX-1's rings; algorithm '" + o.algorithm + "' on " +
                      o.platform + " builds none");
    os << trees_text;
    return;
  }
  if (!schedule)
    throw UserError("--print-schedule shows NIC schedule tables; algorithm '" + o.algorithm +
                    "' runs none (use ring with -c ring.engine=nic, dbtree, hd, ring2d, hdrm, multitree)");
  os << collectives::format_tables(*schedule);
}

void CollectiveWorkload::print(const std::string& what, std::ostream& os) const {
  print_collective(what, call_->program(), call_->nic_schedule(), call_->trees_text(), opt_, os);
}

double CollectiveWorkload::done_fraction() const { return call_ ? call_->done_fraction() : -1; }

uint64_t CollectiveWorkload::progress() {
  return Workload::progress() + call_->progress_ns();  // as flows no machine moves, at packet level no flows
}

Row CollectiveWorkload::finish(size_t i, std::ostream& notes) {
  const uint64_t bytes = sizes_[i];
  const platforms::Measures m = call_->measures();
  Row r(schema_);
  fill_nccl(r, bytes, elements::dtype_name(dtype_), m.redop, m.time_us, m.busbw_factor, m.wrong, m.bound_us);
  if (const flow::Executor::Result* f = m.flows) {
    r.set("wrong", std::string("-"));  // no element values travel (docs/flow.md)
    r.set("flows", f->flows);
    if (f->classes > 0)
      r.details["channel_classes"] = {{"channels", f->channels}, {"parts", f->parts}, {"classes", f->classes}};
    if (f->pass_ns > 0)
      r.details["steady_passes"] = {{"passes", f->passes},
                                    {"simulated", f->simulated_passes},
                                    {"steady_from", f->steady_from},
                                    {"pass_ns", f->pass_ns},
                                    {"halves_differ", f->period_change}};
    r.link_ids = f->links;
    for (const double b : f->link_bytes) r.link_bytes.push_back(static_cast<uint64_t>(std::llround(b)));
  } else {
    r.link_bytes = m.link_bytes;
    r.set("packets", m.packets);
    r.set("avg_packet_latency_ns", m.packets ? m.latency_ns_sum / m.packets : 0.0);
    r.details["reduction_tables"] = {{"hits", m.tables.hits},
                                     {"misses", m.tables.misses},
                                     {"evictions", m.tables.evictions},
                                     {"stalls", m.tables.stalls},
                                     {"completions", m.tables.completions},
                                     {"timeouts", m.tables.timeouts}};
  }
  if (m.nvlink_busiest >= 0) r.set("nvlink_busiest", m.nvlink_busiest).set("network_busiest", m.network_busiest);
  call_->note(notes, m);
  if (!m.choice.empty()) r.details["choice"] = m.choice;
  return r;
}

std::vector<Row> CollectiveWorkload::run_point(size_t i, Runner& run, std::ostream& notes) {
  const uint64_t bytes = sizes_[i];
  // One run, or an algorithm's tuning runs (Blink's chunk search): the last
  // is reported; every run's wrong elements count.
  const int runs = tuner_ ? tuner_->runs() : 1;
  uint64_t wrong_before = 0;
  std::optional<Row> r;
  for (int k = 0; k < runs; ++k) {
    if (tuner_) {
      call_.reset();
      call_ = comm_->set_up_one(*algorithm_, *site_, tuner_->next(k, bytes), dtype_, redop_, opt_.algorithm);
    }
    if (flows_) {
      run.run_plain("size " + size_label(bytes), [&](const Runner::Poll& poll) {
        call_->run_alone(bytes, [&](const std::function<double()>&, double now_ns) { poll(now_ns / 1e3); });
      });
    } else {
      call_->start(bytes, [] { sc_core::sc_pause(); });
      run.run_until([&] { return call_->done() || !call_->error().empty(); }, "size " + size_label(bytes));
      if (!call_->error().empty()) throw UserError(call_->error() + " during size " + size_label(bytes));
    }
    std::ostringstream row_notes;
    r = finish(i, row_notes);
    // A cluster's adapters acknowledge writes before they land, so the
    // last slot-freeing flags may still cross the network: they land before
    // the next size starts (its time counts from then).
    if (platform_ && platform_->packets_in_use() != 0)
      run.run_until([&] { return platform_->packets_in_use() == 0; }, "the network draining after size " + size_label(bytes),
                    sc_core::sc_time(100, sc_core::SC_NS));
    if (tuner_) {
      notes << tuner_->ran(k, (*r)["time_us"], (*r)["algbw_GBps"]);
      if (const std::string c = tuner_->choice(); !c.empty()) r->details["choice"] = c;
      if (k + 1 < runs) wrong_before += r->wrong();
    }
    if (k + 1 == runs) notes << row_notes.str();
  }
  if (wrong_before) r->set("wrong", r->wrong() + wrong_before);
  return {std::move(*r)};
}

void CollectiveWorkload::print_header(std::ostream& os) const {
  const topo::Topology& t = comm_->topology();
  os << "# incsim: " << opt_.collective << " " << opt_.algorithm << " on " << participants() << " of "
     << t.endpoints().size() << " GPUs, platform " << t.name << " (" << count_of(t.switches().size(), "switch", "switches") << ", "
     << t.links().size() << " links), seed " << opt_.seed << "\n";
  if (flows_) {
    call_->describe_fidelity(os);
    // The cross-check holds flows to packet level on the built-in platforms only.
    if (t.from_file && !opt_.check_fidelity)
      os << "# fidelity: flows are checked against packet level on the built-in platforms, not on a platform file: "
            "--check-fidelity runs packet level beside them at the smallest size\n";
  }
  call_->describe(os, sizes_.back(), file_algorithm_ ? "the program" : opt_.algorithm);
  const collectives::Program& p = call_->program();
  if (file_algorithm_)
    os << "# program: " << p.name << ", " << p.ops.size() << " operations on the "
       << (p.engine() == collectives::Engine::CopyEngine ? std::string("GPUs' copy engines")
           : p.engine() == collectives::Engine::NicTable
               ? std::string("NICs' schedule tables")
               : std::string("GPUs' cores, ") +
                     (p.protocol_by_size ? std::string("protocol by size")
                                         : std::string(collectives::protocol_name(p.ops.front().proto)) + " protocol"))
       << "\n";
}

void CollectiveWorkload::config_json(nlohmann::ordered_json& config) const {
  if (flows_) config["fidelity"] = "flow";
  config["collective"] = opt_.collective;
  config["algorithm"] = opt_.algorithm;
  config["gpus"] = participants();
  config["dtype"] = elements::dtype_name(dtype_);
  config["redop"] = call_->redop();
  config["sizes"] = opt_.sizes;
}

void CollectiveWorkload::summary_json(nlohmann::ordered_json& top) const {
  top["endpoint_payload_GBps"] = call_->endpoint_GBps();
}

}  // namespace incsim::tb
