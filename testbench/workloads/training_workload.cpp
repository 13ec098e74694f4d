#include "training_workload.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "core/error.h"
#include "core/output_file.h"
#include "core/param.h"
#include "collective_workload.h"
#include "gpu/compute_engine.h"
#include "roce/roce_host.h"

namespace incsim::tb {

namespace {
const Param<std::string> kContention{
    "train.contention", "sm", Range::none(),
    "what a collective on the GPUs' cores (the ring, NCCL's protocols, a program file) takes from the kernels it "
    "overlaps: sm, one of the GPU's SMs per channel (NCCL runs a thread block per channel; software collectives "
    "take GPU resources from the backward pass, Klenk §II-B), so a kernel runs at (SMs - blocks) / SMs of its "
    "speed while one runs; none: nothing. Copy engines and NICs take none either way"};
}  // namespace

sc_core::sc_time seconds(double s) { return sc_core::sc_time(s, sc_core::SC_SEC); }
double us(const sc_core::sc_time& t) { return t.to_seconds() * 1e6; }

void TrainingWorkload::choose_algorithms() {
  // On NetReduce's Ethernet platforms their job picks it (group_collective).
  algorithms_.push_back(!opt_.algorithm.empty()                ? opt_.algorithm
                        : is_netreduce_platform(opt_.platform) ? ""
                                                               : default_algorithm("allreduce"));
  if (!opt_.baseline.empty()) {
    if (opt_.baseline == algorithms_[0])
      throw UserError("--baseline " + opt_.baseline + " is the --algorithm too; name another to compare with");
    algorithms_.push_back(opt_.baseline);
  }
}

void TrainingWorkload::build_machine(const topo::Topology& t, Config& cfg, const std::vector<std::string>& used) {
  const platforms::PlatformDefaults d = platforms::platform_defaults(t, platforms::needs_of(t, used));
  if (opt_.fidelity != "flow") {
    platform_ = std::make_unique<platforms::GpuMachine>(t, cfg, opt_.seed, d);
    return;
  }
  refuse_packet_outputs(opt_, false);  // --timeline is the iteration's own
  flow_ = std::make_unique<platforms::FlowPlatform>(t, cfg, d, cfg.get(platforms::kShareLinks));
  // Named as the GPUs' are not: no GPU module holds them.
  for (size_t g = 0; g < t.endpoints().size(); ++g)
    flow_->engines.push_back(std::make_unique<gpu::ComputeEngine>(("gpu" + std::to_string(g) + "_compute").c_str()));
}

std::string TrainingWorkload::fidelity_note() const {
  if (!flow_) return "";
  if (flow_->share_links)
    return "# fidelity: flow (docs/flow.md): the kernels as at packet level; each group's collective of a size runs "
           "as flows alone once, and a start that meets no other on its links takes that long; collectives that "
           "meet share their links as flows on one network from their starts (flow.share_links; false: every "
           "start alone); elements were not simulated (#wrong: -)\n";
  return "# fidelity: flow (docs/flow.md): the kernels as at packet level; each group's collective of a size runs "
         "as flows alone on the network the first time it starts, every start then takes that long: collectives "
         "that run at once do not share links (flow.share_links=false); elements were not simulated "
         "(#wrong: -)\n";
}

// Collectives that meet replay and run every channel (docs/validation.md,
// "Collectives that share links, at scale").
std::string TrainingWorkload::long_run_hint() const {
  if (!flow_ || !flow_->share_links) return "";
  return "-c " + platforms::kShareLinks.key() + "=false runs each collective alone, without replaying those that meet, and "
         "counts those that ran beside another";
}

uint64_t TrainingWorkload::progress() {
  if (!flow_) return Workload::progress();
  uint64_t n = 0;
  for (const auto& e : flow_->engines) n += e->progress();
  for (const auto& a : made_)
    for (GroupCollective* c : a) n += c->progress();
  return n;
}

// What flows do not see, measured: the iteration's collectives that ran
// beside another group's on a link of theirs.
void TrainingWorkload::note_overlap(size_t a, Row& row, std::ostream& notes) const {
  const platforms::FlowOverlap& o = flow_->overlap;
  if (flow_->share_links) {
    const flow::SharedNetwork& n = flow_->shared->network();
    const double added = n.met_alone_ns() > 0 ? n.met_ns() / n.met_alone_ns() - 1 : 0;
    const double added_us = (n.met_ns() - n.met_alone_ns()) / 1e3;
    row.details["flow_overlap"] = {
        {"collectives", o.collectives}, {"share_links", true}, {"as_flows", n.ran_as_flows()}, {"added_us", added_us}};
    notes << "#   " << algorithms_[a] << ": " << n.ran_as_flows() << " of " << o.collectives
          << " collectives met another on a link of theirs and shared it as flows, taking " << std::fixed
          << std::setprecision(1) << 100 * added << "% longer than each alone (" << added_us
          << " us in all); the others took their time alone "
          << "(flow.share_links)\n" << std::defaultfloat;
    return;
  }
  const double share = o.ns > 0 ? o.shared_ns / o.ns : 0;
  row.details["flow_overlap"] = {{"collectives", o.collectives}, {"shared", o.shared}, {"shared_time", share}};
  notes << "#   " << algorithms_[a] << ": " << o.shared << " of " << o.collectives
        << " collectives ran while another group's used a link of theirs (" << std::fixed << std::setprecision(1)
        << 100 * share << "% of the collectives' time), each as flows alone on the network (docs/flow.md)\n"
        << std::defaultfloat;
}

platforms::Machine* TrainingWorkload::machine() {
  if (platform_) return platform_.get();
  return ethernet_ ? ethernet_->machine() : nullptr;
}

std::vector<gpu::ComputeEngine*> TrainingWorkload::compute_engines() const {
  std::vector<gpu::ComputeEngine*> engines;
  if (platform_)
    for (gpu::Gpu* g : platform_->gpus()) engines.push_back(&g->compute());
  else if (flow_)
    for (const auto& e : flow_->engines) engines.push_back(e.get());
  else if (ethernet_)
    for (int r = 0; r < ethernet_->job().ring_size(); ++r)
      engines.push_back(&dynamic_cast<roce::RoceHost&>(ethernet_->job().nic(ethernet_->job().ring_host(r))).compute());
  return engines;
}

std::unique_ptr<GroupCollective> TrainingWorkload::group_collective(Config& cfg, size_t a,
                                                                       const std::vector<int>& gpus,
                                                                       const std::vector<uint64_t>& sizes,
                                                                       const std::string& what,
                                                                       const std::string& collective,
                                                                       const std::string& algorithm) {
  Options oc = opt_;
  oc.collective = collective;
  oc.algorithm = algorithm.empty() ? algorithms_[a] : algorithm;
  std::unique_ptr<GroupCollective> c;
  try {
    if (platform_ || flow_) {
      const CollectiveWorkload::Share share{platform_.get(), gpus, sizes, flow_.get()};
      c = std::make_unique<CollectiveWorkload>(oc, cfg, &share);
    } else {
      // NetReduce's Ethernet machine: its job (connections, ACL rules,
      // aggregator arrays) is the one ring of every host (train.cpp allows
      // no other group there).
      if (ethernet_) throw UserError("platform " + opt_.platform + " runs one data-parallel group, of every host");
      auto e = std::make_unique<NetReduceWorkload>(oc, cfg, nullptr, &sizes);
      ethernet_ = e.get();
      if (algorithms_[a].empty()) algorithms_[a] = e->algorithm();
      c = std::move(e);
    }
  } catch (const UserError& e) {
    // An all-reduce with an algorithm of its own: train.dp_algorithm's.
    throw UserError((collective == "allreduce" && !algorithm.empty() ? "train.dp_algorithm=" + algorithm
                                                                      : (a ? "--baseline " : "--algorithm ") + algorithms_[a]) +
                    what + ": " + e.what());
  }
  if (made_.size() <= a) made_.resize(a + 1);
  made_[a].push_back(c.get());
  return c;
}

std::string TrainingWorkload::collective_error(size_t a) const {
  if (a >= made_.size()) return "";
  for (const GroupCollective* c : made_[a])
    if (const std::string e = c->call().error(); !e.empty()) return e;
  return "";
}

sc_core::sc_time TrainingWorkload::default_stall_timeout() const {
  sc_core::sc_time t = sc_core::SC_ZERO_TIME;
  for (const auto& a : made_)
    for (const GroupCollective* c : a) t = std::max(t, c->default_stall_timeout());
  return t;
}

void TrainingWorkload::trace(sc_core::sc_trace_file* tf) const {
  for (const auto& a : made_)
    for (const GroupCollective* c : a) c->trace(tf);
}

void TrainingWorkload::contend(Config& cfg, int sms) {
  const std::string mode = cfg.get(kContention);
  if (mode != "sm" && mode != "none")
    throw UserError("train.contention must be sm (collectives on the cores take SMs) or none, not '" + mode + "'");
  sms_ = mode == "sm" ? sms : 0;
  for (gpu::ComputeEngine* e : compute_engines()) e->set_sms(sms_);
}

void TrainingWorkload::start_collective(GroupCollective& coll, size_t i, std::function<void()> on_done) {
  const uint64_t bytes = coll.sizes()[i];
  moving_.push_back({&coll, static_cast<double>(bytes), 0});
  coll.call().start(bytes, [this, &coll, on_done = std::move(on_done)] {
    const auto m = std::find_if(moving_.begin(), moving_.end(), [&](const Moving& c) { return c.coll == &coll; });
    for (gpu::ComputeEngine* e : coll.compute_engines()) e->share(-m->blocks);
    bytes_done_ += m->bytes;
    moving_.erase(m);
    on_done();
  });
  // Read once started: a size may run a program of its own (nccl's choice), with its own channels.
  const int blocks = sms_ > 0 ? coll.call().sm_blocks() : 0;
  moving_.back().blocks = blocks;
  for (gpu::ComputeEngine* e : coll.compute_engines()) e->share(blocks);
}

void TrainingWorkload::count_comm_bytes(const training::Graph& graph,
                                        const std::function<uint64_t(const training::Graph::Node&)>& bytes_of) {
  comm_bytes_ = 0;
  for (const training::Graph::Node& node : graph.nodes)
    if (node.op >= 0 && ((node.kind == training::Graph::Kind::collective && node.place == 0) ||
                         node.kind == training::Graph::Kind::send))
      comm_bytes_ += static_cast<double>(bytes_of(node));
}

double TrainingWorkload::comm_fraction() const {
  if (comm_bytes_ == 0) return -1;
  double done = bytes_done_;
  for (const Moving& m : moving_) done += m.bytes * std::max(0.0, m.coll->done_fraction());
  return done / comm_bytes_;
}

void TrainingWorkload::count_utilisation(size_t a, const std::vector<uint64_t>& link_bytes, const sc_core::sc_time& start) {
  if (!machine()) return;  // flows count no link's bytes
  const sc_core::sc_time took = sc_core::sc_time_stamp() - start;
  const auto& ends = machine()->link_ends();
  if (link_bytes.size() != ends.size()) return;  // NetReduce counts packets, not bytes per link
  double sum = 0, most = 0;
  int used = 0;
  for (size_t k = 0; k < ends.size(); ++k) {
    if (link_bytes[k] == 0) continue;
    const double u = static_cast<double>(link_bytes[k]) / (ends[k].port->bw_GBps() * us(took) * 1e3);
    sum += u;
    most = std::max(most, u);
    ++used;
  }
  counters_.push_back({static_cast<int>(a), us(start), used ? sum / used : 0.0, most});
  counters_.push_back({static_cast<int>(a), us(sc_core::sc_time_stamp()), 0.0, 0.0});
}

std::string TrainingWorkload::contention_note() const {
  if (sms_ == 0) return "";
  return "; a collective on the GPUs' cores holds one of the " + std::to_string(sms_) +
         " SMs per channel while it runs, slowing the kernels (train.contention=sm)";
}

void TrainingWorkload::print_collective_lines(std::ostream& os, const std::string& who, const GroupCollective& c,
                                              std::set<std::string>& shown) {
  std::ostringstream mine;
  c.print_header(mine);
  std::istringstream in(mine.str());
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# incsim: ", 0) == 0) continue;
    if (line.rfind("# fidelity: ", 0) == 0 && !shown.insert(line).second) continue;  // every group's the same
    os << "#   " << who << ": " << line.substr(2) << "\n";
  }
}

void TrainingWorkload::span(int track, std::string name, const sc_core::sc_time& took) {
  if (recording_ < 0) return;
  const double end = us(sc_core::sc_time_stamp());
  spans_.push_back({recording_, track, std::move(name), end - us(took), end});
}

std::vector<Row> TrainingWorkload::run_point(size_t i, Runner& run, std::ostream& notes) {
  uint64_t warmup_wrong = 0;
  if (i == 0)
    for (uint32_t w = 0; w < opt_.warmup; ++w)
      for (size_t a = 0; a < algorithms_.size(); ++a) warmup_wrong += iterate(a, w, run).wrong();
  std::vector<Row> rows;
  const bool record = !opt_.timeline.empty() && i + 1 == points();  // the last iteration
  for (size_t a = 0; a < algorithms_.size(); ++a) {
    recording_ = record ? static_cast<int>(a) : -1;
    if (flow_) flow_->overlap = platforms::FlowOverlap{std::move(flow_->overlap.running)};
    rows.push_back(iterate(a, static_cast<uint32_t>(i), run));
    if (const auto& d = rows.back().details; d.contains("dp_exposed_stages")) {
      notes << "#   " << algorithms_[a] << ": dp exposed per stage, from its last kernel to its gradients' end:"
            << std::fixed << std::setprecision(1);
      for (size_t s = 0; s < d["dp_exposed_stages"].size(); ++s)
        notes << (s ? ", " : " ") << "stage " << s << " " << d["dp_exposed_stages"][s].get<double>() << " us";
      notes << "\n" << std::defaultfloat;
    }
    if (flow_) note_overlap(a, rows.back(), notes);
  }
  recording_ = -1;
  if (warmup_wrong) rows[0].set("wrong", rows[0].wrong() + warmup_wrong);  // a warm-up's wrong elements count too
  if (rows.size() > 1) {
    rows[0].set("speedup", rows[1]["time_us"] / rows[0]["time_us"]);
    rows[1].set("speedup", 1.0);
  }
  if (record) write_timeline();
  return rows;
}

// Chrome's trace-event format (Perfetto, chrome://tracing): a process per
// algorithm, a thread per track, the spans, and the counters of the links'
// utilisation; times in us.
void TrainingWorkload::write_timeline() const {
  using json = nlohmann::ordered_json;
  json events = json::array();
  const std::vector<std::string> tracks = timeline_tracks();
  for (size_t a = 0; a < algorithms_.size(); ++a) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", a}, {"args", {{"name", algorithms_[a]}}}});
    for (size_t k = 0; k < tracks.size(); ++k)
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", a}, {"tid", k}, {"args", {{"name", tracks[k]}}}});
  }
  for (const Span& s : spans_)
    events.push_back({{"name", s.name}, {"ph", "X"}, {"pid", s.algorithm}, {"tid", s.track}, {"ts", s.start_us},
                      {"dur", s.end_us - s.start_us}});
  for (const Counter& c : counters_)
    events.push_back({{"name", "link utilisation"}, {"ph", "C"}, {"pid", c.algorithm}, {"ts", c.ts},
                      {"args", {{"mean", c.mean}, {"busiest", c.busiest}}}});
  write_user_file(opt_.timeline, json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump(1) + "\n", "timeline");
}

}  // namespace incsim::tb
