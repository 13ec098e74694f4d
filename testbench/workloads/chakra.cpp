#include "chakra.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <ostream>
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

// The running iteration: each node's dependencies still to end, each
// group's collectives as its members issue them, the sends and receives
// waiting for their match, each link's transfers in order.
struct ChakraWorkload::Iteration {
  size_t algorithm = 0;
  sc_core::sc_time t0, t_end;
  std::vector<std::vector<uint32_t>> parents;  // [rank][node]
  size_t left = 0;                             // nodes not yet ended
  std::vector<uint32_t> stack;                 // ended nodes whose children to visit
  std::vector<int> in_flight;                  // [rank]: its communications under way
  std::vector<sc_core::sc_time> since;         // [rank]: when the first of them began
  std::vector<double> comm_us;                 // [rank]: time with a communication under way
  struct Instance {
    int op = -1, size = -1;
    int arrived = 0;
    std::vector<uint32_t> node;  // [place]
  };
  struct GroupRun {
    std::vector<size_t> issued;  // [place]: collectives issued
    std::vector<Instance> instances;
    size_t next = 0;
    bool busy = false;
    sc_core::sc_time start;
  };
  std::vector<GroupRun> groups;
  std::vector<std::deque<uint32_t>> sends, recvs;  // [key]
  struct Transfer {
    uint32_t send, recv;
    int size;
  };
  struct LinkRun {
    std::deque<Transfer> queue;  // the front in flight while busy
    bool busy = false;
    sc_core::sc_time start;
  };
  std::vector<LinkRun> links;
  std::vector<int> due_groups, due_links;  // for the launcher to try
  uint64_t collectives = 0, transfers = 0, wrong = 0;
  std::string error;
  bool done = false;
};

ChakraWorkload::ChakraWorkload(const Options& o, Config& cfg) : TrainingWorkload(o) {
  refuse_options(opt_, {"traffic", "load", "sizes", "collective"}, "is not for a Chakra trace, which gives its collectives");
  refuse_options(opt_, {"batch", "tp", "pp", "precision"},
                 "is not for a Chakra trace, which gives its own work, parallelism and sizes");
  if (!opt_.jobs.empty()) throw UserError("a jobs: list runs collectives; a Chakra trace runs its own");
  name_ = opt_.model.substr(0, opt_.model.size() - 3);
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
  nodes_.resize(ranks_);
  compute_us_.assign(ranks_, 0);
  // Each group's collectives in file order on its first member, which every member's must repeat.
  std::vector<std::vector<std::pair<int, uint64_t>>> order(groups_.size());
  std::vector<std::vector<size_t>> seen(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) seen[g].assign(groups_[g].ranks.size(), 0);
  for (int r = 0; r < ranks_; ++r) {
    const training::ChakraTrace& trace = traces_[r];
    std::unordered_map<uint64_t, uint32_t> index;
    for (size_t i = 0; i < trace.nodes.size(); ++i) index.emplace(trace.nodes[i].id, static_cast<uint32_t>(i));
    std::vector<Node>& mine = nodes_[r];
    mine.resize(trace.nodes.size());
    for (size_t i = 0; i < trace.nodes.size(); ++i) {
      const ChakraNode& c = trace.nodes[i];
      Node& n = mine[i];
      n.label = c.name.empty() ? "node " + std::to_string(c.id) : c.name;
      for (const auto* deps : {&c.data_deps, &c.ctrl_deps})
        for (uint64_t d : *deps) {
          mine[index.at(d)].children.push_back(static_cast<uint32_t>(i));
          ++n.parents;
        }
      switch (c.type) {
        case ChakraNodeType::compute: {
          n.kind = Kind::compute;
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
          n.duration = seconds(s);
          compute_us_[r] += us(n.duration);
          break;
        }
        case ChakraNodeType::collective: {
          n.kind = Kind::collective;
          const std::string kind = collective_name(c.comm_type);
          if (kind.empty() && c.comm_type != ChakraCollective::barrier)
            throw UserError(node_error(trace, c, std::string("collective type ") + training::to_string(c.comm_type) +
                                                     ", which incsim does not run (it runs ALL_REDUCE, "
                                                     "ALL_GATHER, REDUCE_SCATTER, BROADCAST, ALL_TO_ALL and "
                                                     "BARRIER)"));
          n.group = group_of.at(group_name(c));
          Group& g = groups_[n.group];
          if (!kind.empty() && c.comm_size > 0) {
            const auto at = std::find(g.ops.begin(), g.ops.end(), kind);
            n.op = static_cast<int>(at - g.ops.begin());
            if (at == g.ops.end()) g.ops.push_back(kind), g.sizes.emplace_back();
            n.size = index_of(g.sizes[n.op], elements_bytes(c.comm_size));
          }
          const int place = g.place[r];
          const size_t k = seen[n.group][place]++;
          const std::pair<int, uint64_t> what{n.op, n.op < 0 ? 0 : g.sizes[n.op][n.size]};
          if (place == 0) order[n.group].push_back(what);
          else if (k >= order[n.group].size() || order[n.group][k] != what)
            throw UserError(node_error(trace, c, "collective " + std::to_string(k + 1) + " of " + g.label() +
                                                     " on this rank is not rank " +
                                                     std::to_string(g.ranks[0]) + "'s (" +
                                                     (k < order[n.group].size() ? "another kind or size"
                                                                                 : "which has fewer") +
                                                     "): a group's ranks run the same collectives in the same order"));
          n.label += std::string(" (") + training::to_string(c.comm_type) +
                     (n.op < 0 ? "" : ", " + size_label(g.sizes[n.op][n.size])) + ")";
          break;
        }
        case ChakraNodeType::send:
        case ChakraNodeType::recv: {
          const bool send = c.type == ChakraNodeType::send;
          n.kind = send ? Kind::send : Kind::recv;
          const int src = send ? r : static_cast<int>(c.comm_src), dst = send ? static_cast<int>(c.comm_dst) : r;
          const auto [lk, new_link] = link_of.emplace(std::make_pair(src, dst), static_cast<int>(links_.size()));
          if (new_link) links_.push_back({src, dst, {}});
          const auto [kk, new_key] = key_of.emplace(std::make_tuple(src, dst, c.comm_tag, c.comm_size),
                                                    static_cast<int>(keys_.size()));
          if (new_key) keys_.push_back({lk->second, index_of(links_[lk->second].sizes, elements_bytes(c.comm_size))});
          n.op = kk->second;
          n.size = keys_[n.op].size;
          transfers_per_iteration_ += send;
          n.label += std::string(send ? " (send " : " (receive ") + size_label(c.comm_size) + ")";
          break;
        }
        case ChakraNodeType::storage:
        case ChakraNodeType::batch:
        case ChakraNodeType::checkpoint:
          throw UserError(node_error(trace, c, std::string("a ") + training::to_string(c.type) +
                                                   ", which incsim does not run (nor does ASTRA-sim 2)"));
        default: n.kind = Kind::skip;  // memory (ASTRA-sim's remote memory, not modelled), metadata, invalid
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
  platform_ = std::make_unique<platforms::GpuMachine>(t, cfg, opt_.seed, platforms::platform_defaults(t, needs_of(t, algorithms_)));
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
  for (int g = 0; g < ranks_; ++g) platform_->gpus()[g]->compute().use();
  contend(cfg, model->sms());
  spawn_method("chakra_launch", [this] {
    launch_.fired();
    if (!running_) return;
    Iteration& it = *running_;
    // What they start may make more groups and links due.
    while (!it.due_groups.empty() || !it.due_links.empty()) {
      std::vector<int>& due = it.due_groups.empty() ? it.due_links : it.due_groups;
      const int k = due.back();
      due.pop_back();
      if (&due == &it.due_groups) start_group(k);
      else pump(k);
    }
  }, &launch_.event);

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

void ChakraWorkload::ready(int r, uint32_t i) {
  const Node& n = nodes_[r][i];
  switch (n.kind) {
    case Kind::compute:
      platform_->gpus()[r]->compute().run(gpu::ComputeEngine::Phase::Node, static_cast<int>(i), n.duration,
                                          [this, r, i] {
                                            span(r, nodes_[r][i].label, platform_->gpus()[r]->compute().took());
                                            complete(r, i);
                                          });
      break;
    case Kind::collective: arrive(r, i); break;
    case Kind::send:
    case Kind::recv: post(r, i); break;
    case Kind::skip: complete(r, i); break;
  }
}

// Nodes that do nothing end at once, so their children are visited here
// rather than by recursion.
void ChakraWorkload::complete(int r, uint32_t i) {
  Iteration& it = *running_;
  std::vector<uint32_t>& stack = it.stack;
  const size_t bottom = stack.size();
  stack.push_back(i);
  while (stack.size() > bottom) {
    const uint32_t k = stack.back();
    stack.pop_back();
    --it.left;
    for (uint32_t c : nodes_[r][k].children)
      if (--it.parents[r][c] == 0) {
        if (nodes_[r][c].kind == Kind::skip) stack.push_back(c);
        else ready(r, c);
      }
  }
  if (it.left > 0) return;
  it.done = true;
  it.t_end = sc_core::sc_time_stamp();
  stop();
}

// Back to iterate(): when the simulation runs (not while it issues the first nodes).
void ChakraWorkload::stop() {
  if (sc_core::sc_get_status() == sc_core::SC_RUNNING) sc_core::sc_pause();
}

// Groups and links start from the launcher, never from inside a collective
// (which starting again would tear down), and only those that may start.
void ChakraWorkload::due(std::vector<int>& list, int k) {
  list.push_back(k);
  launch_.after(sc_core::SC_ZERO_TIME);
}

void ChakraWorkload::comm(int r, bool begin) {
  Iteration& it = *running_;
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (begin && it.in_flight[r]++ == 0) it.since[r] = now;
  if (!begin && --it.in_flight[r] == 0) it.comm_us[r] += us(now - it.since[r]);
}

// The member's next collective of the group, matched with the others' in
// the order each issues them.
void ChakraWorkload::arrive(int r, uint32_t i) {
  Iteration& it = *running_;
  const Node& n = nodes_[r][i];
  const Group& g = groups_[n.group];
  const int place = g.place[r];
  Iteration::GroupRun& run = it.groups[n.group];
  const size_t k = run.issued[place]++;
  Iteration::Instance& in = run.instances[k];
  if (in.arrived > 0 && (in.op != n.op || in.size != n.size) && it.error.empty()) {
    it.error = "chakra trace " + traces_[r].file + ", node " + std::to_string(traces_[r].nodes[i].id) +
               ": rank " + std::to_string(r) + " issues it as collective " + std::to_string(k + 1) +
               " of " + g.label() + ", where another member issued a collective of another kind or size";
    stop();
  }
  in.op = n.op;
  in.size = n.size;
  in.node[place] = i;
  ++in.arrived;
  due(it.due_groups, n.group);
}

// The group's collectives in order, each once all its members have issued it.
void ChakraWorkload::start_group(int g) {
  Iteration& it = *running_;
  Iteration::GroupRun& run = it.groups[g];
  const Group& group = groups_[g];
  if (run.busy || run.next == run.instances.size() ||
      run.instances[run.next].arrived < static_cast<int>(group.ranks.size()))
    return;
  run.busy = true;
  run.start = sc_core::sc_time_stamp();
  for (int r : group.ranks) comm(r, true);
  const Iteration::Instance& in = run.instances[run.next];
  if (in.op < 0) {  // a barrier, or no data: it ends once all have issued it
    end_group(g);
    return;
  }
  CollectiveWorkload& coll = *collectives_[it.algorithm].group[g][in.op];
  start_collective(coll, in.size, [this, &it, &coll, g] {
    const Iteration::Instance& in = it.groups[g].instances[it.groups[g].next];
    std::ostringstream ignored;
    it.wrong += coll.finish(in.size, ignored).wrong();
    end_group(g);
  });
}

void ChakraWorkload::end_group(int g) {
  Iteration& it = *running_;
  Iteration::GroupRun& run = it.groups[g];
  const Group& group = groups_[g];
  const Iteration::Instance& in = run.instances[run.next];
  const int first = group.ranks[0];
  span(ranks_ + g, nodes_[first][in.node[0]].label, sc_core::sc_time_stamp() - run.start);
  ++it.collectives;
  run.busy = false;
  ++run.next;
  for (size_t p = 0; p < group.ranks.size(); ++p) {
    comm(group.ranks[p], false);
    complete(group.ranks[p], in.node[p]);
  }
  // The next one from the launcher: this call may come from inside the collective.
  due(it.due_groups, g);
}

void ChakraWorkload::post(int r, uint32_t i) {
  Iteration& it = *running_;
  const Node& n = nodes_[r][i];
  (n.kind == Kind::send ? it.sends : it.recvs)[n.op].push_back(i);
  auto& sends = it.sends[n.op];
  auto& recvs = it.recvs[n.op];
  if (sends.empty() || recvs.empty()) return;
  it.links[keys_[n.op].link].queue.push_back({sends.front(), recvs.front(), n.size});
  sends.pop_front();
  recvs.pop_front();
  due(it.due_links, keys_[n.op].link);
}

// A link's transfers one at a time, in the order they matched, as NCCL's sends on one stream.
void ChakraWorkload::pump(int l) {
  Iteration& it = *running_;
  Iteration::LinkRun& run = it.links[l];
  if (run.busy || run.queue.empty()) return;
  run.busy = true;
  run.start = sc_core::sc_time_stamp();
  const Link& link = links_[l];
  comm(link.src, true);
  comm(link.dst, true);
  CollectiveWorkload& coll = *collectives_[it.algorithm].link[l];
  start_collective(coll, run.queue.front().size, [this, &it, &run, &coll, &link, l] {
    const Iteration::Transfer t = run.queue.front();
    run.queue.pop_front();
    std::ostringstream ignored;
    it.wrong += coll.finish(t.size, ignored).wrong();
    span(ranks_ + static_cast<int>(groups_.size()) + l, nodes_[link.src][t.send].label,
         sc_core::sc_time_stamp() - run.start);
    ++it.transfers;
    run.busy = false;
    comm(link.src, false);
    comm(link.dst, false);
    complete(link.src, t.send);
    complete(link.dst, t.recv);
    due(it.due_links, l);
  });
}

std::string ChakraWorkload::error(size_t a) const {
  return running_ && !running_->error.empty() ? running_->error : collective_error(a);
}

Row ChakraWorkload::iterate(size_t a, uint32_t iteration, Runner& run) {
  running_ = std::make_unique<Iteration>();
  Iteration& it = *running_;
  it.algorithm = a;
  it.t0 = sc_core::sc_time_stamp();
  it.parents.resize(ranks_);
  std::vector<std::pair<int, uint32_t>> roots;
  for (int r = 0; r < ranks_; ++r) {
    for (const Node& n : nodes_[r]) it.parents[r].push_back(n.parents);
    for (uint32_t i = 0; i < nodes_[r].size(); ++i)
      if (nodes_[r][i].parents == 0) roots.emplace_back(r, i);
    it.left += nodes_[r].size();
  }
  it.in_flight.assign(ranks_, 0);
  it.since.resize(ranks_);
  it.comm_us.assign(ranks_, 0);
  it.groups.resize(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    it.groups[g].issued.assign(groups_[g].ranks.size(), 0);
    it.groups[g].instances.resize(groups_[g].per_iteration);
    for (auto& in : it.groups[g].instances) in.node.resize(groups_[g].ranks.size());
  }
  it.sends.resize(keys_.size());
  it.recvs.resize(keys_.size());
  it.links.resize(links_.size());
  if (it.left == 0) it.done = true;
  for (const auto& [r, i] : roots) ready(r, i);
  run.run_until([&] { return it.done || !error(a).empty(); },
                algorithms_[a] + " iteration " + std::to_string(iteration + 1));
  if (const std::string e = error(a); !e.empty()) throw UserError(e + " during " + algorithms_[a] + "'s iteration");
  const double time = us(it.t_end - it.t0);
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
      .set("wrong", it.wrong);
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
  const auto& t = platform_->topology();
  size_t nodes = 0;
  for (const auto& r : nodes_) nodes += r.size();
  os << std::fixed << std::setprecision(1) << "# incsim: running chakra trace set " << name_ << " ("
     << count_of(ranks_, "rank", "ranks") << ", " << count_of(nodes, "node", "nodes") << ", an iteration), on "
     << ranks_ << " of " << t.endpoints().size() << " GPUs, platform " << t.name << ", seed " << opt_.seed << "\n"
     << "# compute: each compute node on its GPU's compute block for " << compute_note_
     << "; memory and metadata nodes take no time; the busiest rank computes "
     << *std::max_element(compute_us_.begin(), compute_us_.end()) << " us" << contention_note() << "\n";
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
     << count_of(transfers_per_iteration_, "send", "sends") << " to a matching receive over "
     << count_of(links_.size(), "link", "links") << ", each a 2-rank broadcast on the GPUs' cores\n";
  for (size_t a = 0; a < collectives_.size(); ++a)
    if (!collectives_[a].group.empty() && !collectives_[a].group[0].empty())
      print_collective_lines(os, algorithms_[a], *collectives_[a].group[0][0]);
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
  const Iteration& it = *running_;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Iteration::GroupRun& run = it.groups[g];
    if (run.busy || run.next == run.instances.size() || run.instances[run.next].arrived == 0) continue;
    for (size_t p = 0; p < groups_[g].ranks.size(); ++p)
      if (run.issued[p] <= run.next)
        return "collective " + std::to_string(run.next + 1) + " of " + groups_[g].label() + " waits for rank " + std::to_string(groups_[g].ranks[p]) + ", which never issues it";
  }
  for (size_t k = 0; k < keys_.size(); ++k) {
    const Link& l = links_[keys_[k].link];
    if (!it.sends[k].empty())
      return "rank " + std::to_string(l.src) + "'s send to rank " + std::to_string(l.dst) +
             " waits for a receive rank " + std::to_string(l.dst) + " never issues (the traces wait for each other)";
    if (!it.recvs[k].empty())
      return "rank " + std::to_string(l.dst) + "'s receive from rank " + std::to_string(l.src) +
             " waits for a send rank " + std::to_string(l.src) + " never issues (the traces wait for each other)";
  }
  return "";
}

double ChakraWorkload::done_fraction() const {
  if (!running_) return -1;
  size_t nodes = 0;
  for (const auto& r : nodes_) nodes += r.size();
  return nodes ? 1.0 - static_cast<double>(running_->left) / static_cast<double>(nodes) : 1.0;
}

}  // namespace incsim::tb
