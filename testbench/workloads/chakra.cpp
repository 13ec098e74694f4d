#include "chakra.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "core/units.h"
#include "gpu/compute_engine.h"
#include "training/compute.h"

namespace incsim::tb {

namespace {
using training::ChakraCollective;
using training::ChakraNode;
using training::ChakraNodeType;
using training::Graph;

// incsim's name of a collective it runs with data; empty: none (a barrier
// or a collective incsim cannot run, which the caller tells apart).
std::string collective_name(ChakraCollective c) {
  switch (c) {
    case ChakraCollective::all_reduce: return "allreduce";
    case ChakraCollective::all_gather: return "allgather";
    case ChakraCollective::reduce_scatter: return "reducescatter";
    case ChakraCollective::broadcast: return "broadcast";
    case ChakraCollective::all_to_all: return "alltoall";
    default: return "";
  }
}

// A size incsim's collectives take: whole 4-byte elements, at least one.
uint64_t elements_bytes(uint64_t bytes) { return std::max<uint64_t>(4, (bytes + 3) / 4 * 4); }

int index_of(std::vector<uint64_t>& sizes, uint64_t bytes) {
  const auto at = std::find(sizes.begin(), sizes.end(), bytes);
  if (at != sizes.end()) return static_cast<int>(at - sizes.begin());
  sizes.push_back(bytes);
  return static_cast<int>(sizes.size()) - 1;
}

std::string node_error(const training::ChakraTrace& t, const ChakraNode& n, const std::string& what) {
  return "chakra trace " + t.file + ", node " + std::to_string(n.id) + ": " + what;
}
}  // namespace

// The running iteration's measures (the runner holds its state).
struct ChakraWorkload::Iteration {
  size_t algorithm = 0;
  sc_core::sc_time t0;
  std::vector<int> in_flight;           // [rank]: its communications under way
  std::vector<sc_core::sc_time> since;  // [rank]: when the first of them began
  std::vector<double> comm_us;          // [rank]: time with a communication under way
  uint64_t collectives = 0, transfers = 0, wrong = 0;
};

ChakraWorkload::ChakraWorkload(const Options& o, Config& cfg) : TrainingWorkload(o) {
  refuse_options(opt_, {"traffic", "load", "sizes", "collective"}, "is not for a Chakra trace, which gives its collectives");
  refuse_options(opt_, {"batch", "tp", "pp", "precision"},
                 "is not for a Chakra trace, which gives its own work, parallelism and sizes");
  if (!opt_.jobs.empty()) throw UserError("a jobs: list runs collectives; a Chakra trace runs its own");
  name_ = training::chakra_set_name(opt_.model);
  traces_ = training::read_chakra_traces(name_);
  ranks_ = static_cast<int>(traces_.size());
  const topo::Topology t =
      opt_.topology ? *opt_.topology : platforms::make_topology(opt_.platform, platform_shape(opt_), cfg);
  const int built = static_cast<int>(t.endpoints().size());
  const int n = opt_.gpus && !platforms::is_dgx1(t) ? std::min(*opt_.gpus, built) : built;
  if (n != ranks_)
    throw UserError("chakra trace set " + name_ + " has " + count_of(ranks_, "rank", "ranks") + " (" + name_ +
                    ".0.et to " + name_ + "." + std::to_string(ranks_ - 1) + ".et) and platform '" + t.name +
                    "' runs " + count_of(n, "GPU", "GPUs") + ": a trace set runs on as many GPUs as it has ranks");

  // Compute nodes without a duration take the roofline time of their
  // operations and bytes (ASTRA-sim 2's roofline mode).
  const std::unique_ptr<training::ComputeModel> model = training::make_compute_model(compute_model());
  const auto* roofline = dynamic_cast<const training::RooflineModel*>(model.get());
  bool measured = false, modelled = false;

  // Process groups: "" and "0" are all ranks (ASTRA-sim's default
  // communicator); any other name, the ranks whose traces name it.
  std::map<std::string, int> group_of;
  const auto group_name = [](const ChakraNode& n) { return n.pg_name == "0" ? std::string() : n.pg_name; };
  for (int r = 0; r < ranks_; ++r)
    for (const ChakraNode& n : traces_[r].nodes) {
      if (n.type != ChakraNodeType::collective) continue;
      const auto [at, added] = group_of.emplace(group_name(n), static_cast<int>(groups_.size()));
      if (added) {
        groups_.emplace_back();
        groups_.back().name = at->first;
        groups_.back().place.assign(ranks_, -1);
      }
      Group& g = groups_[at->second];
      if (g.place[r] < 0 && !g.name.empty()) g.place[r] = 0, g.ranks.push_back(r);
    }
  for (Group& g : groups_) {
    if (g.name.empty())
      for (int r = 0; r < ranks_; ++r) g.ranks.push_back(r);
    for (size_t p = 0; p < g.ranks.size(); ++p) g.place[g.ranks[p]] = static_cast<int>(p);
  }

  std::map<std::tuple<int, int, int64_t, uint64_t>, int> key_of;  // (source, destination, tag, bytes)
  std::map<std::pair<int, int>, int> link_of;
  base_.resize(ranks_);
  compute_us_.assign(ranks_, 0);
  const int links_from = static_cast<int>(groups_.size());  // the links' streams follow the groups'
  // Each group's collectives in file order on its first member, which every member's must repeat.
  std::vector<std::vector<std::pair<int, uint64_t>>> order(groups_.size());
  std::vector<std::vector<size_t>> seen(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) seen[g].assign(groups_[g].ranks.size(), 0);
  for (int r = 0; r < ranks_; ++r) {
    const training::ChakraTrace& trace = traces_[r];
    std::unordered_map<uint64_t, uint32_t> index;
    for (size_t i = 0; i < trace.nodes.size(); ++i) index.emplace(trace.nodes[i].id, static_cast<uint32_t>(i));
    const uint32_t base = base_[r] = static_cast<uint32_t>(graph_.nodes.size());
    graph_.nodes.resize(base + trace.nodes.size());
    labels_.resize(graph_.nodes.size());
    for (size_t i = 0; i < trace.nodes.size(); ++i) {
      const ChakraNode& c = trace.nodes[i];
      Graph::Node& n = graph_.nodes[base + i];
      std::string& label = labels_[base + i];
      n.rank = r;
      label = c.name.empty() ? "node " + std::to_string(c.id) : c.name;
      for (const auto* deps : {&c.data_deps, &c.ctrl_deps})
        for (uint64_t d : *deps) graph_.depend(base + index.at(d), base + static_cast<uint32_t>(i));
      switch (c.type) {
        case ChakraNodeType::compute: {
          n.kind = Graph::Kind::compute;
          n.phase = static_cast<int>(gpu::ComputeEngine::Phase::Node);
          n.layer = static_cast<int>(i);
          double s = 0;
          if (c.duration_micros > 0) {
            s = static_cast<double>(c.duration_micros) * 1e-6;
            measured = true;
          } else if (c.num_ops > 0) {
            if (!roofline)
              throw UserError(node_error(trace, c, "a compute node without duration_micros takes the roofline time "
                                                   "of its num_ops, and --compute " + compute_model() +
                                                   " is no roofline"));
            s = roofline->kernel_s(static_cast<double>(c.num_ops), static_cast<double>(c.tensor_size),
                                   training::Precision::fp32);
            modelled = true;
          }
          n.seconds = s;
          compute_us_[r] += us(seconds(s));
          break;
        }
        case ChakraNodeType::collective: {
          n.kind = Graph::Kind::collective;
          const std::string kind = collective_name(c.comm_type);
          if (kind.empty() && c.comm_type != ChakraCollective::barrier)
            throw UserError(node_error(trace, c, std::string("collective type ") + training::to_string(c.comm_type) +
                                                     ", which incsim does not run (it runs ALL_REDUCE, "
                                                     "ALL_GATHER, REDUCE_SCATTER, BROADCAST, ALL_TO_ALL and "
                                                     "BARRIER)"));
          const int group = n.stream = group_of.at(group_name(c));
          Group& g = groups_[group];
          if (!kind.empty() && c.comm_size > 0) {
            const auto at = std::find(g.ops.begin(), g.ops.end(), kind);
            n.op = static_cast<int>(at - g.ops.begin());
            if (at == g.ops.end()) g.ops.push_back(kind), g.sizes.emplace_back();
            n.size = index_of(g.sizes[n.op], elements_bytes(c.comm_size));
          }
          const int place = n.place = g.place[r];
          const size_t k = seen[group][place]++;
          const std::pair<int, uint64_t> what{n.op, n.op < 0 ? 0 : g.sizes[n.op][n.size]};
          if (place == 0) order[group].push_back(what);
          else if (k >= order[group].size() || order[group][k] != what)
            throw UserError(node_error(trace, c, "collective " + std::to_string(k + 1) + " of " + g.label() +
                                                     " on this rank is not rank " +
                                                     std::to_string(g.ranks[0]) + "'s (" +
                                                     (k < order[group].size() ? "another kind or size"
                                                                                 : "which has fewer") +
                                                     "): a group's ranks run the same collectives in the same order"));
          label += std::string(" (") + training::to_string(c.comm_type) +
                     (n.op < 0 ? "" : ", " + size_label(g.sizes[n.op][n.size])) + ")";
          break;
        }
        case ChakraNodeType::send:
        case ChakraNodeType::recv: {
          const bool send = c.type == ChakraNodeType::send;
          n.kind = send ? Graph::Kind::send : Graph::Kind::recv;
          const int src = send ? r : static_cast<int>(c.comm_src), dst = send ? static_cast<int>(c.comm_dst) : r;
          const auto [lk, new_link] = link_of.emplace(std::make_pair(src, dst), static_cast<int>(links_.size()));
          if (new_link) links_.push_back({src, dst, {}});
          const auto [kk, new_key] = key_of.emplace(std::make_tuple(src, dst, c.comm_tag, c.comm_size),
                                                    static_cast<int>(keys_.size()));
          if (new_key) keys_.push_back({lk->second, index_of(links_[lk->second].sizes, elements_bytes(c.comm_size))});
          n.key = n.op = kk->second;
          n.size = keys_[n.key].size;
          n.stream = links_from + keys_[n.key].link;
          transfers_per_iteration_ += send;
          label += std::string(send ? " (send " : " (receive ") + size_label(c.comm_size) + ")";
          break;
        }
        case ChakraNodeType::storage:
        case ChakraNodeType::batch:
        case ChakraNodeType::checkpoint:
          throw UserError(node_error(trace, c, std::string("a ") + training::to_string(c.type) +
                                                   ", which incsim does not run (nor does ASTRA-sim 2)"));
        default: break;  // memory (ASTRA-sim's remote memory, not modelled), metadata, invalid: nothing to do
      }
    }
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].per_iteration = order[g].size();
    collectives_per_iteration_ += order[g].size();
    for (size_t p = 0; p < groups_[g].ranks.size(); ++p)
      if (seen[g][p] != order[g].size())
        throw UserError("chakra trace " + traces_[groups_[g].ranks[p]].file + " has " +
                        std::to_string(seen[g][p]) + " collectives of " + groups_[g].label() + " and " + traces_[groups_[g].ranks[0]].file + " " + std::to_string(order[g].size()) +
                        ": a group's ranks run the same collectives");
  }
  compute_note_ = measured && modelled ? "duration_micros, or without one the roofline time of num_ops and tensor_size"
                  : modelled           ? "the roofline time of num_ops and tensor_size"
                                       : "duration_micros";
  if (modelled) compute_note_ += " on " + model->describe();

  choose_algorithms();
  for (size_t a = 0; a < algorithms_.size(); ++a)
    for (const Group& g : groups_) {
      bool first_ranks = true;
      for (size_t p = 0; p < g.ranks.size(); ++p) first_ranks = first_ranks && g.ranks[p] == static_cast<int>(p);
      if (!first_ranks && gpu_numbered(algorithms_[a], t))
        throw UserError((a ? "--baseline " : "--algorithm ") + algorithms_[a] + " numbers its ranks as platform '" +
                        t.name + "' numbers its GPUs, so it cannot run " + g.label() + " of " +
                        name_ + ", which is not ranks 0 to " + std::to_string(g.ranks.size() - 1));
    }
  build_machine(t, cfg, algorithms_);
  for (size_t a = 0; a < algorithms_.size(); ++a) {
    collectives_.emplace_back();
    for (const Group& g : groups_) {
      collectives_[a].group.emplace_back();
      for (size_t k = 0; k < g.ops.size(); ++k)
        // An all-to-all runs NCCL's (p2p) under every --algorithm and --baseline.
        collectives_[a].group.back().push_back(group_collective(cfg, a, g.ranks, g.sizes[k], " (" + g.label() + ")",
                                                                g.ops[k], g.ops[k] == "alltoall" ? "p2p" : ""));
    }
    // A send and its receive: NCCL's send/recv, a copy on the GPUs' cores.
    for (const Link& l : links_)
      collectives_[a].link.push_back(group_collective(cfg, a, {l.src, l.dst}, l.sizes,
                                                      " (rank " + std::to_string(l.src) + " to " +
                                                          std::to_string(l.dst) + ")",
                                                      "broadcast", "ring"));
  }
  std::vector<gpu::ComputeEngine*> engines = compute_engines();
  engines.resize(static_cast<size_t>(ranks_));
  for (gpu::ComputeEngine* e : engines) e->use();
  contend(cfg, model->sms());
  for (const Group& g : groups_) graph_.add_stream(static_cast<int>(g.ranks.size()));
  for (size_t l = 0; l < links_.size(); ++l) graph_.add_stream(2);
  graph_.keys = static_cast<int>(keys_.size());
  graph_.start = training::Graph::Start::from_launcher;
  graph_.eager_sends = true;
  runner_ = std::make_unique<training::GraphRunner>(
      "chakra_launch", engines, static_cast<training::GraphRunner::Owner&>(*this));
  count_comm_bytes(graph_, [this](const training::Graph::Node& node) {
    return collective_of(0, node.stream, node.op).sizes()[static_cast<size_t>(node.size)];
  });

  schema_->add({"algorithm", "", ColumnKind::Setting, "algorithm", "", 10})
      .add({"iteration", "", ColumnKind::Setting, "iteration", "", 10})
      .add({"time_us", "us", ColumnKind::Measurement, "iteration", "(us)", 12, 1})
      .add({"compute_us", "us", ColumnKind::Measurement, "compute", "(us)", 12, 1})
      .add({"comm_us", "us", ColumnKind::Measurement, "comm", "(us)", 12, 1})
      .add({"exposed_us", "us", ColumnKind::Measurement, "exposed", "(us)", 12, 1})
      .add({"collectives", "", ColumnKind::Setting, "colls", "", 7})
      .add({"p2p", "", ColumnKind::Setting, "p2p", "", 6});
  if (algorithms_.size() > 1) schema_->add({"speedup", "", ColumnKind::Measurement, "speedup", "(x)", 8, 2});
  schema_->add({"wrong", "elements", ColumnKind::Measurement, "#wrong", "", 9});
}

ChakraWorkload::~ChakraWorkload() = default;

void ChakraWorkload::launch(int stream, const training::GraphRunner::Instance& in, std::function<void()> done) {
  Iteration& it = *running_;
  GroupCollective& coll = collective_of(it.algorithm, stream, in.op);
  start_collective(coll, in.size, [&it, &coll, done = std::move(done)] {
    it.wrong += coll.call().measures().wrong;
    done();
  });
}

GroupCollective& ChakraWorkload::collective_of(size_t a, int stream, int op) {
  const int groups = static_cast<int>(groups_.size());
  return stream < groups ? *collectives_[a].group[stream][op] : *collectives_[a].link[stream - groups];
}

void ChakraWorkload::computed(uint32_t node, const sc_core::sc_time& took) {
  span(graph_.nodes[node].rank, labels_[node], took);
}

// A group's members, or a link's sender and receiver.
std::vector<int> ChakraWorkload::members(int stream) const {
  const int groups = static_cast<int>(groups_.size());
  if (stream < groups) return groups_[stream].ranks;
  const Link& l = links_[stream - groups];
  return {l.src, l.dst};
}

void ChakraWorkload::began(int stream, const training::GraphRunner::Instance&) {
  for (int r : members(stream)) comm(r, true);
}

void ChakraWorkload::ended(int stream, const training::GraphRunner::Instance& in, const sc_core::sc_time& took) {
  Iteration& it = *running_;
  // A group's collective on its track by its first member's node; a transfer by its send.
  span(ranks_ + stream, labels_[in.nodes[0]], took);
  ++(stream < static_cast<int>(groups_.size()) ? it.collectives : it.transfers);
  for (int r : members(stream)) comm(r, false);
}

void ChakraWorkload::comm(int r, bool begin) {
  Iteration& it = *running_;
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (begin && it.in_flight[r]++ == 0) it.since[r] = now;
  if (!begin && --it.in_flight[r] == 0) it.comm_us[r] += us(now - it.since[r]);
}

std::string ChakraWorkload::error(size_t a) const {
  if (const auto& m = runner_->mismatch(); running_ && m) {
    const Graph::Node& n = graph_.nodes[m->node];
    const training::ChakraTrace& trace = traces_[n.rank];
    return node_error(trace, trace.nodes[m->node - base_[n.rank]],
                      "rank " + std::to_string(n.rank) + " issues it as collective " + std::to_string(m->k + 1) +
                          " of " + groups_[n.stream].label() +
                          ", where another member issued a collective of another kind or size");
  }
  return collective_error(a);
}

Row ChakraWorkload::iterate(size_t a, uint32_t iteration, Runner& run) {
  running_ = std::make_unique<Iteration>();
  Iteration& it = *running_;
  begin_comm_count();
  it.algorithm = a;
  it.t0 = sc_core::sc_time_stamp();
  it.in_flight.assign(ranks_, 0);
  it.since.resize(ranks_);
  it.comm_us.assign(ranks_, 0);
  runner_->start(graph_);
  run.run_until([&] { return runner_->done() || !error(a).empty(); },
                algorithms_[a] + " iteration " + std::to_string(iteration + 1));
  if (const std::string e = error(a); !e.empty()) throw UserError(e + " during " + algorithms_[a] + "'s iteration");
  const double time = us(runner_->ended_at() - it.t0);
  const double compute = *std::max_element(compute_us_.begin(), compute_us_.end());
  Row row(schema_);
  row.set("algorithm", algorithms_[a])
      .set("iteration", static_cast<uint64_t>(iteration + 1))
      .set("time_us", time)
      .set("compute_us", compute)
      .set("comm_us", *std::max_element(it.comm_us.begin(), it.comm_us.end()))
      .set("exposed_us", std::max(0.0, time - compute))
      .set("collectives", it.collectives)
      .set("p2p", it.transfers)
      .set("wrong", wrong_value(it.wrong));
  running_.reset();
  return row;
}

std::vector<std::string> ChakraWorkload::timeline_tracks() const {
  std::vector<std::string> tracks;
  for (int r = 0; r < ranks_; ++r) tracks.push_back("gpu" + std::to_string(r) + ".compute");
  for (const Group& g : groups_) {
    std::string ranks;
    for (int r : g.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    tracks.push_back("collectives" + (g.name.empty() ? "" : " of '" + g.name + "'") + ", ranks " + ranks);
  }
  for (const Link& l : links_)
    tracks.push_back("rank " + std::to_string(l.src) + " to " + std::to_string(l.dst));
  return tracks;
}

void ChakraWorkload::print_header(std::ostream& os) const {
  const auto& t = topology();
  const size_t nodes = graph_.nodes.size();
  os << std::fixed << std::setprecision(1) << "# incsim: running chakra trace set " << name_ << " ("
     << count_of(ranks_, "rank", "ranks") << ", " << count_of(nodes, "node", "nodes") << ", an iteration), on "
     << ranks_ << " of " << t.endpoints().size() << " GPUs, platform " << t.name << ", seed " << opt_.seed << "\n"
     << "# compute: each compute node on its GPU's compute block for " << compute_note_
     << "; memory and metadata nodes take no time; the busiest rank computes "
     << *std::max_element(compute_us_.begin(), compute_us_.end()) << " us" << contention_note() << "\n" << fidelity_note();
  os << "# communication: " << count_of(collectives_per_iteration_, "collective", "collectives") << " per iteration in "
     << count_of(groups_.size(), "process group", "process groups");
  for (const Group& g : groups_) {
    os << (&g == &groups_[0] ? " (" : "; ") << (g.name.empty() ? "all ranks" : "'" + g.name + "'") << ":";
    for (size_t k = 0; k < g.ops.size(); ++k) {
      const auto& sizes = g.sizes[k];
      os << (k ? "," : "") << " " << g.ops[k] << " of";
      if (sizes.size() > 4)  // a large trace's sizes, in short
        os << " " << sizes.size() << " sizes, " << size_label(*std::min_element(sizes.begin(), sizes.end()))
           << " to " << size_label(*std::max_element(sizes.begin(), sizes.end()));
      else
        for (uint64_t b : sizes) os << " " << size_label(b);
    }
  }
  os << (groups_.empty() ? "" : ")") << ", each once all its ranks issued it, by " << algorithms_[0]
     << (algorithms_.size() > 1 ? ", and by " + algorithms_[1] + " for the baseline" : "") << "; "
     << count_of(transfers_per_iteration_, "send", "sends") << " over " << count_of(links_.size(), "link", "links")
     << ", each a 2-rank broadcast on the GPUs' cores that leaves once issued, its receive matched by tag, peers, "
        "size and order (ASTRA-sim's sends)\n";
  std::set<std::string> shown;
  for (size_t a = 0; a < collectives_.size(); ++a)
    if (!collectives_[a].group.empty() && !collectives_[a].group[0].empty())
      print_collective_lines(os, algorithms_[a], *collectives_[a].group[0][0], shown);
  os << "# exposed: the iteration's time beyond the busiest rank's compute; comm: the busiest rank's time with a "
        "collective or transfer under way\n";
}

void ChakraWorkload::config_json(nlohmann::ordered_json& config) const {
  config["workload"] = "train";
  config["model"] = opt_.model;
  config["ranks"] = ranks_;
  config["compute"] = compute_model();
  config["algorithm"] = algorithms_[0];
  if (algorithms_.size() > 1) config["baseline"] = algorithms_[1];
  config["gpus"] = ranks_;
  config["collectives"] = collectives_per_iteration_;
  config["p2p"] = transfers_per_iteration_;
  config["iterations"] = opt_.iterations;
  config["warmup"] = opt_.warmup;
}

// A group whose next collective some members have not issued, or a send or
// receive without its match: the traces wait for each other.
std::string ChakraWorkload::stall_cause() const {
  if (!running_) return "";
  if (const auto m = runner_->missing_member()) {
    const Group& g = groups_[m->stream];
    return "collective " + std::to_string(m->k + 1) + " of " + g.label() + " waits for rank " +
           std::to_string(g.ranks[m->place]) + ", which never issues it";
  }
  // Sends go at once (Graph::eager_sends): only a receive waits.
  if (const uint32_t node = runner_->unmatched(); node != Graph::kNone) {
    const Link& l = links_[keys_[graph_.nodes[node].key].link];
    return "rank " + std::to_string(l.dst) + "'s receive from rank " + std::to_string(l.src) +
           " waits for a send rank " + std::to_string(l.src) + " never issues (the traces wait for each other)";
  }
  return "";
}

double ChakraWorkload::done_fraction() const { return running_ ? comm_fraction() : -1; }

}  // namespace incsim::tb
