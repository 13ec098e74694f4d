#include "flow/channel_classes.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "topology/cluster.h"

namespace incsim::flow {

using collectives::kNone;
using collectives::Operation;
using collectives::Program;

namespace {

// The program's operations by rank and channel, in order, and each
// operation's place among its channel's.
struct ByChannel {
  explicit ByChannel(const Program& p) : channels(1) {
    for (const Operation& o : p.ops) channels = std::max(channels, o.channel + 1);
    begin.assign(static_cast<size_t>(p.ranks) * static_cast<size_t>(channels) + 1, 0);
    for (int r = 0; r < p.ranks; ++r)
      for (int i = 0; i < p.op_count(r); ++i) ++begin[at(r, p.op(r, i).channel) + 1];
    std::partial_sum(begin.begin(), begin.end(), begin.begin());
    ops.resize(p.ops.size());
    place.resize(p.ops.size());
    std::vector<uint32_t> next(begin.begin(), begin.end() - 1);
    for (int r = 0; r < p.ranks; ++r)
      for (int i = 0; i < p.op_count(r); ++i) {
        const size_t k = at(r, p.op(r, i).channel);
        place[p.rank_begin[static_cast<size_t>(r)] + static_cast<uint32_t>(i)] = next[k] - begin[k];
        ops[next[k]++] = i;
      }
  }
  size_t at(int r, int c) const {
    return static_cast<size_t>(r) * static_cast<size_t>(channels) + static_cast<size_t>(c);
  }
  const int* of(int r, int c) const { return ops.data() + begin[at(r, c)]; }
  uint32_t count(int r, int c) const { return begin[at(r, c) + 1] - begin[at(r, c)]; }
  int channels;
  std::vector<uint32_t> begin;  // [rank x channels + channel]
  std::vector<int> ops;
  std::vector<uint32_t> place;  // [the program's operation]
};

class Finder {
 public:
  Finder(const Program& p, const topo::Topology& t, const FlowGraph& g, const std::vector<int>& endpoints)
      : p_(p), t_(t), g_(g), endpoints_(endpoints), by_(p) {}

  bool find(ChannelClasses& out, std::string& why) {
    return rotation(why) && images(why) && orbits(out, why) && (keep_firsts(out), true);
  }

 private:
  // pi_: each node's GPU i to its GPU i + 1, as ranks.
  bool rotation(std::string& why) {
    const std::vector<std::vector<int>> nodes = topo::cluster_nodes(t_);
    if (nodes.empty()) return why = "the platform is not a cluster of nodes", false;
    std::vector<int> rank_of(t_.endpoints().size(), -1);
    for (size_t r = 0; r < endpoints_.size(); ++r) rank_of[static_cast<size_t>(endpoints_[r])] = static_cast<int>(r);
    pi_.assign(static_cast<size_t>(p_.ranks), -1);
    for (const std::vector<int>& node : nodes) {
      if (node.size() < 2 || node.size() != nodes.front().size()) return why = "the cluster's nodes differ", false;
      for (size_t i = 0; i < node.size(); ++i) {
        const int r = rank_of[static_cast<size_t>(node[i])],
                  next = rank_of[static_cast<size_t>(node[(i + 1) % node.size()])];
        if (r < 0 || next < 0) return why = "the collective's GPUs are not whole nodes", false;
        pi_[static_cast<size_t>(r)] = next;
      }
    }
    return true;
  }

  int image(int rank) const { return rank == kNone ? kNone : pi_[static_cast<size_t>(rank)]; }

  // Does rank r2 on channel c2 what rank r does on channel c, with ranks
  // rotated (and queues as kappa_'s queues map them)?
  bool same(int r, int c, int r2, int c2) {
    const uint32_t n = by_.count(r, c);
    if (by_.count(r2, c2) != n) return false;
    const int *a = by_.of(r, c), *b = by_.of(r2, c2);
    for (uint32_t k = 0; k < n; ++k) {
      const Operation &o = p_.op(r, a[k]), &x = p_.op(r2, b[k]);
      if (o.kind != x.kind || o.engine != x.engine || o.proto != x.proto || o.timestep != x.timestep ||
          image(o.send_peer) != x.send_peer || image(o.recv_peer) != x.recv_peer || o.src.buf != x.src.buf ||
          o.src.count != x.src.count || o.dst.buf != x.dst.buf || o.dst.count != x.dst.count ||
          o.dep_count != x.dep_count)
        return false;
      if (queue_.try_emplace(std::pair{c, int{o.queue}}, x.queue).first->second != x.queue) return false;
      for (uint32_t d = 0; d < o.dep_count; ++d) {
        const int dep = static_cast<int>(p_.deps_of(o)[d]);
        if (p_.op(r, dep).channel != c) return false;
        if (b[by_.place[p_.rank_begin[static_cast<size_t>(r)] + static_cast<uint32_t>(dep)]] !=
            static_cast<int>(p_.deps_of(x)[d]))
          return false;
      }
    }
    return true;
  }

  // kappa_: the channel that is each channel's image.
  bool images(std::string& why) {
    for (const Operation& o : p_.ops)
      if (o.group != kNone || collectives::in_network(o.kind))
        return why = p_.name + " has in-network operations", false;
    const int C = by_.channels;
    kappa_.assign(static_cast<size_t>(C), -1);
    std::vector<char> taken(static_cast<size_t>(C), 0);
    for (int c = 0; c < C; ++c) {
      int r0 = 0;
      while (r0 < p_.ranks && by_.count(r0, c) == 0) ++r0;
      if (r0 == p_.ranks) return why = "channel " + std::to_string(c) + " has no operations", false;
      for (int c2 = 0; c2 < C && kappa_[static_cast<size_t>(c)] < 0; ++c2) {
        if (taken[static_cast<size_t>(c2)]) continue;
        const auto before = queue_;
        bool all = true;
        for (int r = 0; r < p_.ranks && all; ++r) all = same(r, c, image(r), c2);
        if (all) {
          kappa_[static_cast<size_t>(c)] = c2;
          taken[static_cast<size_t>(c2)] = 1;
        } else {
          queue_ = before;
        }
      }
      if (kappa_[static_cast<size_t>(c)] < 0)
        return why = "no channel does on each node's next GPU what channel " + std::to_string(c) + " does", false;
    }
    return true;
  }

  // The links' classes: a link and the links its routes' images cross in
  // its place, and theirs, from every connection's route and its image's.
  // Where the rotation maps links one to one, a class is a link's orbit;
  // where a link's images differ from route to route (a channel's port
  // picks its NVSwitch, and hgx-h100's switches take 5, 4, 4 and 5 of a
  // GPU's links), its class pools them all.
  bool orbits(ChannelClasses& out, std::string& why) {
    const size_t L = g_.capacities().size();
    std::vector<int> up(L), image(L, -1), inverse(L, -1);
    std::iota(up.begin(), up.end(), 0);
    const auto find = [&](int x) {
      while (up[static_cast<size_t>(x)] != x)
        x = up[static_cast<size_t>(x)] = up[static_cast<size_t>(up[static_cast<size_t>(x)])];
      return x;
    };
    std::vector<char> uneven(L, 0);  // [link]: its images differ
    std::vector<double> load(L, 0);  // [link]: the sending operations whose data cross it
    std::unordered_map<uint64_t, std::vector<int>> ports;
    const auto route = [&](int r, int peer, int c, std::vector<std::pair<int, double>>& met) {
      std::vector<int>& x = ports[static_cast<uint64_t>(r) << 32 | static_cast<uint32_t>(peer)];
      const int from = endpoints_[static_cast<size_t>(r)], to = endpoints_[static_cast<size_t>(peer)];
      if (x.empty()) x = FlowGraph::shortest_ports(t_, from, to);
      return g_.walk(t_.endpoints()[static_cast<size_t>(from)], FlowGraph::channel_port(x, c), to, from, &met);
    };
    // Each connection once, with the operations that send on it: (rank,
    // peer, channel) and whether it sends, or receives (the head flags' way back).
    std::vector<std::pair<uint64_t, bool>> conns;
    for (int r = 0; r < p_.ranks; ++r)
      for (int i = 0; i < p_.op_count(r); ++i) {
        const Operation& o = p_.op(r, i);
        if (collectives::sends(o.kind)) conns.emplace_back(collectives::pair_key(r, o.send_peer, o.channel), true);
        if (collectives::receives(o.kind)) conns.emplace_back(collectives::pair_key(r, o.recv_peer, o.channel), false);
      }
    std::sort(conns.begin(), conns.end());
    std::vector<std::pair<int, double>> a, b;
    for (size_t i = 0, j; i < conns.size(); i = j) {
      for (j = i + 1; j < conns.size() && conns[j] == conns[i]; ++j) {
      }
      const auto [key, sends] = conns[i];
      const int r = collectives::pair_from(key), peer = collectives::pair_to(key), c = collectives::pair_channel(key);
      const Route x = route(r, peer, c, a), y = route(this->image(r), this->image(peer), kappa_[c], b);
      bool alike = a.size() == b.size() && x.latency_ns == y.latency_ns && x.ack_ns == y.ack_ns &&
                   x.acked_by_memory == y.acked_by_memory;
      for (size_t h = 0; alike && h < a.size(); ++h) {
        const auto [l, share] = a[h];
        const auto [l2, share2] = b[h];
        alike = std::abs(share - share2) <= 1e-9 * share && g_.format_index(l) == g_.format_index(l2);
        int &s = image[static_cast<size_t>(l)], &v = inverse[static_cast<size_t>(l2)];
        if ((s >= 0 && s != l2) || (v >= 0 && v != l)) uneven[static_cast<size_t>(l)] = 1;
        s = l2;
        v = l;
        up[static_cast<size_t>(find(l))] = find(l2);
        if (sends) load[static_cast<size_t>(l)] += share * static_cast<double>(j - i);
      }
      if (!alike)
        return why = "rank " + std::to_string(r) + "'s route to rank " + std::to_string(peer) + " on channel " +
                     std::to_string(c) + " is not the image of its image's",
               false;
    }
    // Each class's narrowest link stands for it, and fills as its busiest
    // link would: a class that pools links the channels load unevenly
    // binds where its link of most connections per GB/s binds.
    std::vector<int> size(L, 0), first(L, -1);
    std::vector<char> pooled(L, 0);
    std::vector<double> sum(L, 0), busiest(L, 0);  // [class]: connections, and the most per GB/s
    const std::vector<double>& cap = g_.capacities();
    for (size_t l = 0; l < L; ++l) {
      const size_t k = static_cast<size_t>(find(static_cast<int>(l)));
      ++size[k];
      pooled[k] |= uneven[l];
      sum[k] += load[l];
      busiest[k] = std::max(busiest[k], load[l] / cap[l]);
      const int f = first[k];
      if (f < 0 || cap[l] < cap[static_cast<size_t>(f)]) first[k] = static_cast<int>(l);
    }
    out.canon.resize(L);
    out.per_link.resize(L);
    for (size_t l = 0; l < L; ++l) {
      const size_t k = static_cast<size_t>(find(static_cast<int>(l)));
      out.canon[l] = first[k];
      const double mean = sum[k] / size[k];
      out.per_link[l] = (mean > 0 ? cap[static_cast<size_t>(first[k])] * busiest[k] / mean : 1.0) / size[k];
      if (pooled[k] && k == l) {
        ++out.pooled;
        out.pooled_links += static_cast<uint64_t>(size[k]);
      }
    }
    return true;
  }

  // The classes (kappa_'s cycles), and the program of their first channels.
  void keep_firsts(ChannelClasses& out) {
    const size_t C = kappa_.size();
    out.first.assign(C, -1);
    out.members.assign(C, 0);
    for (size_t c = 0; c < C; ++c) {
      if (out.first[c] >= 0) continue;
      std::vector<size_t> cycle{c};
      for (size_t x = static_cast<size_t>(kappa_[c]); x != c; x = static_cast<size_t>(kappa_[x])) cycle.push_back(x);
      for (size_t x : cycle) {
        out.first[x] = static_cast<int>(c);
        out.members[x] = static_cast<int>(cycle.size());
      }
      ++out.classes;
    }
    Program& k = out.reps;
    k = p_;
    k.ops.clear();
    k.deps.clear();
    k.rank_begin.assign(1, 0);
    std::vector<int> at;
    for (int r = 0; r < p_.ranks; ++r) {
      at.assign(static_cast<size_t>(p_.op_count(r)), -1);
      int n = 0;
      for (int i = 0; i < p_.op_count(r); ++i)
        if (out.first[p_.op(r, i).channel] == p_.op(r, i).channel) at[static_cast<size_t>(i)] = n++;
      for (int i = 0; i < p_.op_count(r); ++i) {
        if (at[static_cast<size_t>(i)] < 0) continue;
        Operation o = p_.op(r, i);
        const uint32_t* d = p_.deps_of(o);
        o.dep_begin = static_cast<uint32_t>(k.deps.size());
        for (uint32_t j = 0; j < o.dep_count; ++j) k.deps.push_back(static_cast<uint32_t>(at[d[j]]));
        k.ops.push_back(o);
      }
      k.rank_begin.push_back(static_cast<uint32_t>(k.ops.size()));
    }
  }

  const Program& p_;
  const topo::Topology& t_;
  const FlowGraph& g_;
  const std::vector<int>& endpoints_;
  ByChannel by_;
  std::vector<int> pi_, kappa_;
  std::map<std::pair<int, int>, int> queue_;  // (channel, queue): its image's queue
};

}  // namespace

bool channel_classes(const Program& p, const topo::Topology& t, const FlowGraph& g, const std::vector<int>& endpoints,
                     ChannelClasses& out, std::string& why) {
  return Finder(p, t, g, endpoints).find(out, why);
}

}  // namespace incsim::flow
