#include "jobs.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>
#include <random>
#include <sstream>

#include "choices.h"
#include "core/error.h"
#include "core/units.h"
#include "core/param.h"
#include "nic/scheduled_collective.h"
#include "nvswitch/mcr_table.h"
#include "nvswitch/table_sharing.h"
#include "platforms/infiniband_fabric.h"
#include "netreduce.h"
#include "placement.h"

namespace incsim::tb {

namespace {
// "0-7", "0-3,8,9": a job's GPUs as the config file may write them.
std::string gpu_ranges(const std::vector<int>& gpus) {
  std::ostringstream os;
  for (size_t i = 0; i < gpus.size();) {
    size_t j = i;
    while (j + 1 < gpus.size() && gpus[j + 1] == gpus[j] + 1) ++j;
    os << (i ? "," : "") << gpus[i];
    if (j > i) os << "-" << gpus[j];
    i = j + 1;
  }
  return os.str();
}

// The jobs with each `repeat: K` as K copies, name.1 to name.K, copy k
// starting (k-1) x interarrival_us after the first (with arrivals poisson,
// after k-1 exponential gaps of that mean: a Poisson stream from the first)
// and drawing a random placement with the job's seed (the run's if it gives
// none) plus k-1.
std::vector<Options::Job> copies(const std::vector<Options::Job>& jobs, uint64_t run_seed) {
  std::vector<Options::Job> all;
  for (const Options::Job& job : jobs) {
    // Its own stream of gaps, apart from the placements' draws: u uniform in
    // [0, 1) from the top 53 bits, the gap -mean ln(1 - u), the same bits
    // with any standard library.
    std::mt19937_64 gaps(job.seed.value_or(run_seed) ^ 0x9e3779b97f4a7c15ull);
    double poisson_at = job.start_us;
    for (int k = 0; k < job.repeat; ++k) {
      Options::Job c = job;
      if (job.repeat > 1) c.name += "." + std::to_string(k + 1);
      c.repeat = 1;
      if (job.poisson && k > 0)
        poisson_at -= job.interarrival_us * std::log1p(-static_cast<double>(gaps() >> 11) * 0x1.0p-53);
      c.start_us = job.poisson ? poisson_at : job.start_us + k * job.interarrival_us;
      c.seed = job.seed.value_or(run_seed) + k;
      all.push_back(std::move(c));
    }
  }
  return all;
}

// Each line of `text` with its leading `mark` followed by `prefix`.
std::string prefixed(const std::string& text, const std::string& mark, const std::string& prefix) {
  std::istringstream in(text);
  std::string out;
  for (std::string line; std::getline(in, line);)
    out += (line.rfind(mark, 0) == 0 ? mark + prefix + line.substr(mark.size()) : line) + "\n";
  return out;
}
}  // namespace

JobsWorkload::JobsWorkload(const Options& o, Config& cfg) : opt_(o) {
  if (!opt_.gpu_list.empty()) throw UserError("--gpus lists GPUs per job in a jobs: list, not for the run");
  refuse_options(opt_, {"traffic", "load"}, "applies to synthetic traffic, not to jobs");
  if (opt_.print_schedule || opt_.print_trees || opt_.print_program)
    throw UserError("--print-schedule, --print-trees and --print-program show one collective's; run the job alone");
  opt_.jobs = copies(opt_.jobs, opt_.seed);
  const bool rack = is_netreduce_platform(opt_.platform);
  const std::string unit = rack ? "host" : "GPU";
  const auto algorithm_of = [&](const Options::Job& job) {
    const std::string& collective = job.collective.empty() ? opt_.collective : job.collective;
    if (!job.algorithm.empty()) return job.algorithm;
    if (!opt_.algorithm.empty()) return opt_.algorithm;
    if (!rack) return default_algorithm(collective, opt_.platform);
    const std::string accepted = algorithms_for(collective, Family::Rack);
    return accepted.substr(0, accepted.find(','));
  };
  topo::Topology t;
  int n = 0;
  if (rack) {
    // NetReduce's jobs are rings of the rack's hosts: with its FPGA if any
    // job aggregates in the network.
    bool in_network = false;
    for (const Options::Job& job : opt_.jobs) {
      const collectives::Algorithm* a = collectives::find_algorithm(algorithm_of(job), Family::Rack);
      in_network = in_network || (a && a->in_switches());
    }
    std::tie(rack_, t) = netreduce_machine(opt_, in_network, cfg);
    if (rack_.layout != platforms::NetReduceShape::Layout::Rack)
      throw UserError("a jobs: list on NetReduce's Ethernet runs rings of the hosts of one rack (platform rack); "
                      "platform " + opt_.platform + " builds one job's rings itself");
    n = rack_.hosts();
  } else {
    t = opt_.topology ? *opt_.topology : platforms::make_topology(opt_.platform, platform_shape(opt_), cfg);
    n = static_cast<int>(t.endpoints().size());
    // --gpus N shapes the platforms built by count (star, fattree2l); elsewhere it would pick GPUs, which jobs do.
    if (opt_.gpus && *opt_.gpus != n)
      throw UserError("--gpus " + std::to_string(*opt_.gpus) + " does not shape platform '" + t.name +
                      "', which has " + std::to_string(n) + " GPUs; with jobs: each job names its GPUs");
  }
  // Each GPU (host) in one job (unless one of two allows overlap): a job's
  // share of the machine is its GPUs. Placements take GPUs in list order
  // among those no earlier job holds.
  std::vector<int> owner(n, -1);
  std::vector<collectives::Needs> needs;
  for (size_t j = 0; j < opt_.jobs.size(); ++j) {
    Options::Job& job = opt_.jobs[j];
    if (!job.placement.empty()) {
      std::vector<bool> free(n);
      for (int g = 0; g < n; ++g) free[g] = owner[g] < 0 || job.allow_overlap;
      try {
        job.gpus = place(t, free, job.placement, job.count, *job.seed, unit);
      } catch (const UserError& e) {
        throw UserError(job.where + ": job '" + job.name + "' does not fit (placement: " + job.placement +
                        ", gpus: " + std::to_string(job.count) + "): " + e.what());
      }
    }
    for (int g : job.gpus) {
      if (g >= n)
        throw UserError(job.where + ": job '" + job.name + "' names " + unit + " " + std::to_string(g) +
                        ", but platform '" + t.name + "' has " + unit + "s 0 to " + std::to_string(n - 1));
      if (owner[g] >= 0 && !job.allow_overlap && !opt_.jobs[owner[g]].allow_overlap)
        throw UserError(job.where + ": jobs '" + opt_.jobs[owner[g]].name + "' and '" + job.name + "' both name " +
                        unit + " " + std::to_string(g) + "; each " + unit +
                        " belongs to one job unless one of them says allow_overlap: true");
      if (owner[g] < 0) owner[g] = static_cast<int>(j);
    }
    if (rack && job.allow_overlap)  // a host's NIC has one ring's queue pairs
      throw UserError(job.where + ": job '" + job.name + "' says allow_overlap: true, but on platform " +
                      opt_.platform + " each host runs one ring");
    bool tables = false;
    if (!rack) {
      const std::string& collective = job.collective.empty() ? opt_.collective : job.collective;
      for (const collectives::Needs& mine : platforms::needs_of(t, {algorithm_of(job)}, collective)) {
        needs.push_back(mine);
        tables = tables || mine.tables != collectives::TableRule::None;
      }
    }
    tables_.push_back(tables);
  }
  // The machine is built once for all the jobs' algorithms.
  if (opt_.fidelity == "flow") {
    refuse_packet_outputs(opt_, true);
    // The jobs share links as flows; the switches' and NICs' in-network resources are not modelled there.
    for (const ParamDecl* p : std::initializer_list<const ParamDecl*>{
             &nvswitch::kMulticastGroups, &nvswitch::kMulticastPolicy, &nvswitch::kTablePolicy,
             &nic::kNicTablesPolicy, &platforms::kSharpPolicy})
      if (cfg.has_override(*p))
        throw UserError(p->key() + " sets how jobs share the switches' or NICs' in-network resources, which "
                        "--fidelity flow does not model (its jobs share links only); run it at packet level");
    flow_ = std::make_unique<platforms::FlowPlatform>(t, cfg, platforms::platform_defaults(t, needs), true);
  } else if (rack) {
    machine_ = std::make_unique<platforms::Machine>(std::move(t), cfg, opt_.seed);
  } else {
    auto gpu = std::make_unique<platforms::GpuMachine>(t, cfg, opt_.seed, platforms::platform_defaults(t, needs));
    gpu_ = gpu.get();
    machine_ = std::move(gpu);
  }
  share_tables();

  for (size_t j = 0; j < opt_.jobs.size(); ++j) {
    const Options::Job& job = opt_.jobs[j];
    Options oj = opt_;
    oj.jobs.clear();
    if (!job.collective.empty()) oj.collective = job.collective, oj.given.push_back("collective");
    if (!job.algorithm.empty()) oj.algorithm = job.algorithm;
    if (!fallback_[j].empty()) oj.algorithm = "ring";
    if (!job.sizes.empty()) oj.sizes = job.sizes;
    // The multicast windows its collective claims as it is built are its (the tables' sharing reads them).
    if (gpu_) gpu_->multicast().set_tenant(static_cast<int>(j));
    try {
      jobs_.push_back(make_job(j, oj, cfg));
    } catch (const ShareShortfall& e) {
      // Its share of an in-network resource cannot hold what it needs (each
      // owner refuses before the collective claims anything: SHARP's
      // aggregation manager, the fabric manager's multicast groups, the
      // NICs' tables, the FPGA's memory).
      const std::string cannot = job.where + ": job '" + job.name + "' cannot aggregate in " + e.resource() + ": " +
                                 e.what();
      if (!job.fallback_software) throw UserError(cannot + " (give it a larger share, or fallback: software)");
      fallback_[j] = e.what();
      tables_[j] = false;
      oj.algorithm = "ring";
      try {
        jobs_.push_back(make_job(j, oj, cfg));
      } catch (const ShareShortfall& ring) {  // the platform's ring needs the same resource (a torus's NICs)
        throw UserError(cannot + ", nor can its fallback, the ring: " + ring.what());
      }
    }
  }
  if (gpu_) gpu_->multicast().set_tenant(-1);

  schema_->add({"job", "", ColumnKind::Setting, "job", "", 8});
  if (rack) {  // NetReduce's columns: goodput, losses and retransmissions
    for (const Column& c : jobs_.front()->schema().columns()) schema_->add(c);
  } else {
    const Schema nccl = nccl_schema();
    for (const Column& c : nccl.columns()) schema_->add(c);
    if (!flow_)
      schema_->add({"packets", "packets", ColumnKind::Measurement})
          .add({"avg_packet_latency_ns", "ns", ColumnKind::Measurement});
  }
  schema_->add({"start_us", "us", ColumnKind::Setting})
      .add({"alone_us", "us", ColumnKind::Measurement, "alone", "(us)", 11, 2})
      .add({"slowdown", "", ColumnKind::Measurement, "slowdown", "(x)", 9, 3});
  started_.resize(jobs_.size());
  ended_.resize(jobs_.size());
  notes_.resize(jobs_.size());
  spawn_method("jobs_launch", [this] { launch(); }, launch_);
}

std::unique_ptr<GroupCollective> JobsWorkload::make_job(size_t j, const Options& oj, Config& cfg) const {
  const Options::Job& job = opt_.jobs[j];
  try {
    if (!gpu_ && !flow_) {
      const NetReduceWorkload::Share share{machine_.get(), rack_, job.gpus, static_cast<int>(j)};
      return std::make_unique<NetReduceWorkload>(oj, cfg, &share);
    }
    const CollectiveWorkload::Share share{gpu_, job.gpus, {}, flow_.get()};
    return std::make_unique<CollectiveWorkload>(oj, cfg, &share);
  } catch (const ShareShortfall&) {
    throw;
  } catch (const UserError& e) {
    throw UserError(job.where + ": job '" + job.name + "': " + e.what());
  }
}

// Each job's share of every fabric's tables (the NVSwitches'; a cluster's
// SHARP tables, ib.sharp.policy): its weight under partitioned,
// its quota under quota, the same for each. A job whose share of the
// smallest NVSwitch table is no entry cannot reduce in the switches:
// refused, or with fallback: software it runs the ring. (A job's share of
// SHARP's tables is checked against its groups' reservation as they are
// made: SharpManager::admit.)
void JobsWorkload::share_tables() {
  using nvswitch::TableSharing;
  fallback_.assign(opt_.jobs.size(), "");
  if (flow_) {  // every job reduces in the switches with what it needs
    for (const Options::Job& job : opt_.jobs)
      if (job.weight || job.quota)
        throw UserError(job.where + ": job '" + job.name + "' gives a " + (job.weight ? "weight" : "quota") +
                        " of the switches' reduction tables, whose sharing --fidelity flow does not model; run it at "
                        "packet level");
    return;
  }
  const std::vector<TableSharing*> all = machine_->table_sharings();
  const auto reads = [&](TableSharing::Policy p) {
    std::string keys;
    bool any = false;
    for (const TableSharing* s : all) {
      any = any || s->policy() == p;
      keys += (keys.empty() ? "" : " or ") + s->resource().key + "=" + TableSharing::name(p);
    }
    return std::make_pair(any, keys);
  };
  const auto [weights, weight_keys] = reads(TableSharing::Policy::Partitioned);
  const auto [quotas, quota_keys] = reads(TableSharing::Policy::Quota);
  for (const Options::Job& job : opt_.jobs) {
    if (job.weight && !weights)
      throw UserError(job.where + ": job '" + job.name + "' gives a weight, which only " + weight_keys + " reads");
    if (job.quota && !quotas)
      throw UserError(job.where + ": job '" + job.name + "' gives a quota, which only " + quota_keys + " reads");
  }
  for (TableSharing* s : all) {
    std::vector<double> shares;
    for (const Options::Job& job : opt_.jobs)
      shares.push_back(s->policy() == TableSharing::Policy::Partitioned ? job.weight.value_or(1)
                       : s->policy() == TableSharing::Policy::Quota     ? job.quota.value_or(1)
                                                                        : 1);
    s->set_jobs(shares);
  }
  if (!gpu_) return;  // NetReduce's rack: a job's share of the FPGA's memory is checked as its ring is added
  const TableSharing& sharing = *gpu_->table_config().sharing;
  const uint32_t entries = gpu_->smallest_table_entries(&sharing);
  for (size_t j = 0; j < opt_.jobs.size(); ++j) {
    const Options::Job& job = opt_.jobs[j];
    if (!tables_[j] || !entries || sharing.limit(static_cast<int>(j), entries) > 0) continue;
    const std::string why = "its " + sharing.share_text(static_cast<int>(j)) + " holds 0 of the smallest table's " +
                            std::to_string(entries) + " entries, 1 entry short of what an in-network reduction needs";
    if (!job.fallback_software)
      throw UserError(job.where + ": job '" + job.name + "' cannot reduce in the switches: " + why +
                      " (give it a larger share, or fallback: software)");
    fallback_[j] = why;
    tables_[j] = false;
  }
}

size_t JobsWorkload::points() const {
  size_t n = 0;
  for (const auto& j : jobs_) n = std::max(n, j->sizes().size());
  return n;
}

double JobsWorkload::point_weight(size_t i) const {
  double w = 0;
  for (const auto& j : jobs_)
    if (i < j->sizes().size()) w = std::max(w, static_cast<double>(j->sizes()[i]));
  return w;
}

void JobsWorkload::launch() {
  launch_.fired();
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  sc_core::sc_time next = sc_core::sc_max_time();
  for (size_t j = 0; j < jobs_.size(); ++j) {
    if (started_[j] || point_ >= jobs_[j]->sizes().size()) continue;
    const sc_core::sc_time at = point_start_ + sc_core::sc_time(opt_.jobs[j].start_us, sc_core::SC_US);
    if (at > now) {
      next = std::min(next, at);
      continue;
    }
    started_[j] = true;
    ++active_;
    jobs_[j]->call().start(jobs_[j]->sizes()[point_], [this, j] {
      // Its row now: the machine's packet and table counters while it ran, not until the point ends.
      if (jobs_[j]->call().error().empty()) {
        std::ostringstream notes;
        ended_[j].emplace(jobs_[j]->finish(point_, notes));
        contention(j, *ended_[j], notes);
        notes_[j] = notes.str();
      }
      --running_;
      if (--active_ == 0) sc_core::sc_pause();
    });
  }
  next_start_ = next;
  if (next != sc_core::sc_max_time()) launch_.at(next);
}

double JobsWorkload::alone_us(size_t j, size_t i, Runner& run, uint64_t& wrong) {
  const Options& o = jobs_[j]->options();
  const auto key = std::make_tuple(o.collective, o.algorithm, opt_.jobs[j].gpus, jobs_[j]->sizes()[i]);
  if (const auto hit = alone_.find(key); hit != alone_.end()) return hit->second;
  bool done = false;
  jobs_[j]->call().start(jobs_[j]->sizes()[i], [&done] {
    done = true;
    sc_core::sc_pause();
  });
  const std::string what = "job '" + opt_.jobs[j].name + "' alone, size " + size_label(jobs_[j]->sizes()[i]);
  run.run_until([&] { return done || !jobs_[j]->call().error().empty(); }, what);
  if (!jobs_[j]->call().error().empty()) throw UserError(what + ": " + jobs_[j]->call().error());
  std::ostringstream unused;  // its notes are the mix's to print
  const Row r = jobs_[j]->finish(i, unused);
  const double us = r["time_us"];
  wrong = r.wrong();
  drain(run, what);
  return alone_[key] = us;
}

// The last flags of what ran land before the next run starts and frees or
// reuses their buffers, as between a collective's sizes.
void JobsWorkload::drain(Runner& run, const std::string& what) {
  if (machine_ && machine_->packets_in_use() != 0)
    run.run_until([&] { return machine_->packets_in_use() == 0; }, what + ": the network draining",
                  sc_core::sc_time(100, sc_core::SC_NS));
}

// Job j's contention in each fabric's tables while it ran (TableSharing's
// counters, zeroed as the jobs start together): in its row's details (every
// row's, as CSV columns need: the NVSwitches' always, SHARP's when the run
// sets ib.sharp.policy) and, for the tables it reduces in, a note.
void JobsWorkload::contention(size_t j, Row& r, std::ostream& notes) const {
  for (const nvswitch::TableSharing* s : gpu_ ? gpu_->table_sharings() : std::vector<nvswitch::TableSharing*>{}) {
    if (!s->resource().policy_set || !s->resource().counted) continue;
    const nvswitch::TableSharing::Counters& c = s->counters(static_cast<int>(j));
    const uint32_t entries = gpu_->smallest_table_entries(s);
    const uint32_t mine = s->limit(static_cast<int>(j), entries);
    const bool sharp = s != gpu_->table_config().sharing.get();
    r.details[s->resource().details] = {{"policy", nvswitch::TableSharing::name(s->policy())},
                                        {"entries", mine},
                                        {"misses", c.misses},
                                        {"evictions_caused", c.evictions_caused},
                                        {"evictions_suffered", c.evictions_suffered},
                                        {"stalls", c.stalls}};
    if (sharp ? !jobs_[j]->call().aggregates_in_sharp() : !tables_[j]) continue;
    notes << "#   its share of " << (sharp ? "SHARP's tables" : "the tables") << " ("
          << nvswitch::TableSharing::name(s->policy()) << ", " << mine << " of the smallest's " << entries
          << " entries): " << c.misses << " misses, " << c.evictions_caused << " evictions caused, "
          << c.evictions_suffered << " suffered, " << c.stalls << " stalls\n";
  }
}

// A job whose sizes ran out sits the later points out.
std::vector<Row> JobsWorkload::run_point(size_t i, Runner& run, std::ostream& notes) {
  // Alone, a job may take whole tables; together each keeps to its share.
  const std::vector<nvswitch::TableSharing*> sharings =
      machine_ ? machine_->table_sharings() : std::vector<nvswitch::TableSharing*>{};
  std::vector<double> alone(jobs_.size(), 0);
  std::vector<uint64_t> alone_wrong(jobs_.size(), 0);
  for (nvswitch::TableSharing* s : sharings) s->enforce(false);
  for (size_t j = 0; j < jobs_.size(); ++j)
    if (i < jobs_[j]->sizes().size()) alone[j] = alone_us(j, i, run, alone_wrong[j]);
  for (nvswitch::TableSharing* s : sharings) {
    s->enforce(true);
    s->reset_counters();
  }
  point_ = i;
  running_ = 0;
  point_start_ = sc_core::sc_time_stamp();
  active_ = 0;
  for (size_t j = 0; j < jobs_.size(); ++j) {
    started_[j] = false;
    ended_[j].reset();
    running_ += i < jobs_[j]->sizes().size();
  }
  launch();  // those that start at once start now, as a collective alone does
  const auto failed = [this] {
    for (size_t j = 0; j < jobs_.size(); ++j)
      if (started_[j] && !jobs_[j]->call().error().empty()) return static_cast<int>(j);
    return -1;
  };
  for (;;) {
    run.run_until([&] { return active_ == 0 || failed() >= 0; }, "point " + std::to_string(i + 1) + " of the jobs");
    if (running_ == 0 || failed() >= 0) break;
    // Every job started has ended and the next waits for its start: an idle
    // gap, which the stall detector would take for a stall.
    sc_core::sc_start(next_start_ - sc_core::sc_time_stamp());
  }
  if (const int j = failed(); j >= 0) throw UserError("job '" + opt_.jobs[j].name + "': " + jobs_[j]->call().error());
  drain(run, "point " + std::to_string(i + 1) + " of the jobs");
  std::vector<Row> rows;
  for (size_t j = 0; j < jobs_.size(); ++j) {
    if (i >= jobs_[j]->sizes().size()) continue;
    const Row& mine = *ended_[j];
    Row r(schema_);
    r.set("job", opt_.jobs[j].name);
    // Not a cluster's busiest links: their bytes are every job's, not this one's.
    for (const Column& c : mine.schema->columns())
      if (schema_->has(c.name)) r.set(c.name, mine.at(c.name));
    r.set("start_us", opt_.jobs[j].start_us);
    r.set("alone_us", alone[j]).set("slowdown", r["time_us"] / alone[j]);
    if (!flow_) r.set("wrong", r.wrong() + alone_wrong[j]);  // every run's wrong elements count (flows: "-")
    r.details = mine.details;
    r.link_bytes = mine.link_bytes;
    r.link_ids = mine.link_ids;
    notes << prefixed(notes_[j], "#   ", opt_.jobs[j].name + ": ");
    rows.push_back(std::move(r));
  }
  return rows;
}

void JobsWorkload::print_header(std::ostream& os) const {
  const auto& t = flow_ ? flow_->graph : machine_->topology();
  os << "# incsim: " << count_of(jobs_.size(), "job", "jobs") << " on platform " << t.name << " ("
     << count_of(t.switches().size(), "switch", "switches") << ", " << t.links().size() << " links), seed "
     << opt_.seed << "\n";
  for (size_t j = 0; j < jobs_.size(); ++j) {
    const Options::Job& job = opt_.jobs[j];
    os << "# job " << job.name << (gpu_ || flow_ ? ": GPUs " : ": hosts ") << gpu_ranges(job.gpus)
       << (job.placement.empty() ? "" : " (placement " + job.placement + ")") << ", starting " << job.start_us
       << " us into each point\n";
    if (!fallback_[j].empty()) os << "#   fallback: software, the ring: " << fallback_[j] << "\n";
    std::ostringstream mine;
    jobs_[j]->print_header(mine);
    os << prefixed(mine.str(), "# ", "  ");
  }
  os << "# times: each job's from its own start to its end; "
     << (flow_  ? "as flows on one network the jobs share, their flows sharing each link max-min fairly"
         : gpu_ ? "packets and reduction tables: the machine's, while the job ran"
                : "frames lost and packet hops: the machine's, while the job ran")
     << "\n# alone: the job by itself on the " << (flow_ ? "network" : "machine") << " (same "
     << (gpu_ || flow_ ? "GPUs and size" : "hosts, size and aggregator arrays")
     << "), run first; slowdown: time over alone" << (flow_ ? "" : "; #wrong: both runs'") << "\n";
}

uint64_t JobsWorkload::progress() {
  if (!flow_) return Workload::progress();
  uint64_t n = 0;
  for (const auto& j : jobs_) n += j->progress();
  return n;
}

void JobsWorkload::config_json(nlohmann::ordered_json& config) const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t j = 0; j < jobs_.size(); ++j) {
    nlohmann::ordered_json job;
    job["name"] = opt_.jobs[j].name;
    job["gpu_list"] = opt_.jobs[j].gpus;
    if (!opt_.jobs[j].placement.empty()) job["placement"] = opt_.jobs[j].placement;
    if (opt_.jobs[j].placement == "random") job["seed"] = *opt_.jobs[j].seed;
    if (!fallback_[j].empty()) job["fallback"] = "software";
    job["start_us"] = opt_.jobs[j].start_us;
    jobs_[j]->config_json(job);
    list.push_back(job);
  }
  config["jobs"] = list;
}

sc_core::sc_time JobsWorkload::default_stall_timeout() const {
  sc_core::sc_time t = sc_core::SC_ZERO_TIME;
  for (const auto& j : jobs_) t = std::max(t, j->default_stall_timeout());
  return t;
}

double JobsWorkload::done_fraction() const {
  double sum = 0;
  int n = 0;
  for (size_t j = 0; j < jobs_.size(); ++j)
    if (point_ < jobs_[j]->sizes().size()) {
      sum += started_[j] ? std::max(0.0, jobs_[j]->done_fraction()) : 0.0;
      ++n;
    }
  return n ? sum / n : -1;
}

void JobsWorkload::trace(sc_core::sc_trace_file* tf) const {
  for (const auto& j : jobs_) j->trace(tf);
}

}  // namespace incsim::tb
