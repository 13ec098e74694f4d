#include "flow/channel_classes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "collectives/layout.h"
#include "topology/cluster.h"

namespace incsim::flow {

using collectives::ChunkRef;
using collectives::kNone;
using collectives::OpKind;
using collectives::Operation;
using collectives::Program;

namespace {

// Union-find over 0 .. n - 1.
class Joined {
 public:
  explicit Joined(size_t n) : up_(n) { std::iota(up_.begin(), up_.end(), 0u); }
  uint32_t find(uint32_t x) {
    while (up_[x] != x) x = up_[x] = up_[up_[x]];
    return x;
  }
  void join(uint32_t a, uint32_t b) { up_[find(a)] = find(b); }

 private:
  std::vector<uint32_t> up_;
};

using Met = std::vector<std::pair<int, double>>;  // a walk's (flow link, share), in the order it meets them
// A walk's links as runs of (flow link, share), one after another.
using Runs = std::vector<std::pair<const std::pair<int, double>*, const std::pair<int, double>*>>;
Runs runs_of(const Met& m) { return {{m.data(), m.data() + m.size()}}; }

// A switch's ways down to many endpoints, walked at once
// (FlowGraph::walk_all), and what each endpoint's walk() meets: its pieces'
// links in turn, each piece's trunks joined (a piece is a level, and a
// link lies on one level of a way, so no trunk spans two).
class Fan {
 public:
  // met_by: the walk's (endpoint, piece) in the order met, the caller's buffer.
  void walk(const FlowGraph& g, int sw, const std::vector<int>& to, std::vector<std::pair<int, uint32_t>>& met_by,
            FlowGraph::WalkMemo& memo) {
    for (auto* x : {&fwd_, &back_}) {
      x->links.clear();
      x->begin.assign(1, 0);
    }
    met_by.clear();
    g.walk_all(sw, to, [this, &met_by](const FlowGraph::Piece& p) {
      const auto piece = static_cast<uint32_t>(fwd_.begin.size() - 1);
      for (int d : p.dsts) met_by.emplace_back(d, piece);
      fwd_.add(p.fwd, joined_);
      back_.add(p.back, joined_);
    }, latency_, &memo);
    // Each endpoint's pieces together, in the order met: a counting sort,
    // each endpoint's start moved on as it is filled, then put back.
    of_begin_.assign(to.size() + 1, 0);
    for (const auto& x : met_by) ++of_begin_[static_cast<size_t>(x.first) + 1];
    for (size_t i = 0; i < to.size(); ++i) of_begin_[i + 1] += of_begin_[i];
    of_.resize(met_by.size());
    for (const auto& [d, piece] : met_by) of_[of_begin_[static_cast<size_t>(d)]++] = piece;
    for (size_t i = to.size(); i > 0; --i) of_begin_[i] = of_begin_[i - 1];
    of_begin_[0] = 0;
  }
  double latency(size_t i) const { return latency_[i]; }
  // walk()'s met and met_back to the endpoint to[i], as its pieces' runs of links.
  void met(size_t i, Runs& met, Runs& met_back) const {
    met.clear();
    met_back.clear();
    for (uint32_t j = of_begin_[i]; j < of_begin_[i + 1]; ++j) {
      fwd_.add_run(of_[j], met);
      back_.add_run(of_[j], met_back);
    }
  }

 private:
  struct Pieces {
    Met links;                    // each piece's, joined, one after another
    std::vector<uint32_t> begin;  // [piece]: where its links begin; one more at the end
    void add(FlowGraph::HopSpan raw, Met& joined) {
      FlowGraph::join_trunks(raw, joined);
      links.insert(links.end(), joined.begin(), joined.end());
      begin.push_back(static_cast<uint32_t>(links.size()));
    }
    void add_run(uint32_t k, Runs& out) const { out.push_back({links.data() + begin[k], links.data() + begin[k + 1]}); }
  };
  Pieces fwd_, back_;
  std::vector<uint32_t> of_, of_begin_;  // of_[of_begin_[i]...]: endpoint i's pieces, level by level
  std::vector<double> latency_;
  Met joined_;
};

// One symmetry's pairs of links with their images: their classes so far,
// each link's image and back, and the sending operations that cross it.
struct Pairs {
  explicit Pairs(size_t links)
      : joined(links), image(links, -1), inverse(links, -1), uneven(links, 0), load(links, 0) {}
  Joined joined;
  std::vector<int> image, inverse;
  std::vector<char> uneven;  // [link]: its images differ
  std::vector<double> load;
};

class Finder {
 public:
  Finder(const Program& p, const topo::Topology& t, const FlowGraph& g, InNetwork& innet,
         const std::vector<int>& endpoints)
      : p_(p), t_(t), g_(g), innet_(innet), endpoints_(endpoints) {}

  // Each symmetry's images join parts and links into classes; a symmetry
  // without images adds nothing, and where none has any, the rotation's
  // reason is the answer.
  bool find(ChannelClasses& out, std::string& why) {
    if (!(rotation(why) && split(why))) return false;
    const size_t L = g_.capacities().size();
    Joined parts(U_), links(L);
    std::vector<char> uneven(L, 0);
    std::string reason;
    for (const bool rotate : {true, false}) {
      rotate_ = rotate;
      std::string w;
      const bool imaged = images(w);
      Pairs x(imaged ? L : 0);
      if (imaged && orbits(x, w)) {
        for (size_t u = 0; u < U_; ++u) parts.join(static_cast<uint32_t>(u), static_cast<uint32_t>(kappa_[u]));
        for (size_t l = 0; l < L; ++l) {
          links.join(static_cast<uint32_t>(l), x.joined.find(static_cast<uint32_t>(l)));
          uneven[l] |= x.uneven[l];
        }
        if (load_.empty()) load_ = std::move(x.load);  // every symmetry meets every route once
      } else if (reason.empty()) {
        reason = w;
      }
      queue_.clear();
      gamma_.clear();
      gamma_inverse_.clear();
    }
    if (load_.empty()) return why = reason, false;
    link_classes(links, uneven, out);
    keep_firsts(parts, out);
    return true;
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

  // The symmetry being tried: the rotation, or each GPU onto itself (where
  // its channels do the same: CollNet's node rings, one per channel).
  int image(int rank) const { return rank == kNone || !rotate_ ? rank : pi_[static_cast<size_t>(rank)]; }

  // part_: what runs together. Operations joined by a dependency, by a
  // queue (its operations run in turn), by a connection, or by an
  // in-network group's message chunk (a reducing read and the members
  // lending to it, a multicast and its receivers) are one part. Then the
  // operations by rank and part, in order, and each one's place among its
  // part's on its rank.
  bool split(std::string& why) {
    const size_t n = p_.ops.size();
    Joined joined(n);
    std::unordered_map<uint64_t, uint32_t> conn, chunk, queue;  // each one's first operation
    const auto meet = [&](std::unordered_map<uint64_t, uint32_t>& m, uint64_t key, uint32_t x) {
      const auto [it, fresh] = m.try_emplace(key, x);
      if (!fresh) joined.join(it->second, x);
    };
    for (int r = 0; r < p_.ranks; ++r) {
      queue.clear();
      const uint32_t base = p_.rank_begin[static_cast<size_t>(r)];
      for (int i = 0; i < p_.op_count(r); ++i) {
        const Operation& o = p_.op(r, i);
        const uint32_t x = base + static_cast<uint32_t>(i);
        for (uint32_t d = 0; d < o.dep_count; ++d) joined.join(base + p_.deps_of(o)[d], x);
        if (!collectives::passive(o)) meet(queue, o.queue, x);
        if (collectives::sends(o.kind)) meet(conn, collectives::pair_key(r, o.send_peer, o.channel), x);
        if (collectives::receives(o.kind)) meet(conn, collectives::pair_key(o.recv_peer, r, o.channel), x);
        if (o.group != kNone) {
          const ChunkRef c = o.src.empty() ? o.dst : o.src;
          const int64_t m = c.empty() ? -1 : collectives::message_chunk(p_, r, ChunkRef{c.index, 1, c.buf});
          meet(chunk, static_cast<uint64_t>(o.group) << 32 | static_cast<uint32_t>(m), x);
        }
      }
    }
    part_.resize(n);
    std::unordered_map<uint32_t, int> id;  // a root's part
    for (uint32_t x = 0; x < n; ++x) {
      const auto [it, fresh] = id.try_emplace(joined.find(x), static_cast<int>(part_channel_.size()));
      if (fresh) part_channel_.push_back(p_.ops[x].channel);
      part_[x] = it->second;
      if (p_.ops[x].channel != part_channel_[static_cast<size_t>(it->second)])
        return why = "channel " + std::to_string(p_.ops[x].channel) + "'s operations run with channel " +
                     std::to_string(part_channel_[static_cast<size_t>(it->second)]) +
                     "'s (a dependency, a queue or a connection joins them)",
               false;
    }
    U_ = part_channel_.size();
    begin_.assign(static_cast<size_t>(p_.ranks) * U_ + 1, 0);
    for (int r = 0; r < p_.ranks; ++r)
      for (int i = 0; i < p_.op_count(r); ++i) ++begin_[at(r, part_of(r, i)) + 1];
    std::partial_sum(begin_.begin(), begin_.end(), begin_.begin());
    ops_.resize(n);
    place_.resize(n);
    std::vector<uint32_t> next(begin_.begin(), begin_.end() - 1);
    for (int r = 0; r < p_.ranks; ++r)
      for (int i = 0; i < p_.op_count(r); ++i) {
        const size_t k = at(r, part_of(r, i));
        place_[p_.rank_begin[static_cast<size_t>(r)] + static_cast<uint32_t>(i)] = next[k] - begin_[k];
        ops_[next[k]++] = i;
      }
    return true;
  }

  int part_of(int r, int i) const {
    return part_[p_.rank_begin[static_cast<size_t>(r)] + static_cast<uint32_t>(i)];
  }
  size_t at(int r, int u) const { return static_cast<size_t>(r) * U_ + static_cast<size_t>(u); }
  const int* of(int r, int u) const { return ops_.data() + begin_[at(r, u)]; }
  uint32_t count(int r, int u) const { return begin_[at(r, u) + 1] - begin_[at(r, u)]; }

  // Does group g2 hold group g's members' images? Mapped once, one to one.
  bool group_image(int g, int g2) {
    const auto it = gamma_.find(g);
    if (it != gamma_.end()) return it->second == g2;
    if (gamma_inverse_.count(g2)) return false;
    std::vector<int> a = p_.groups[static_cast<size_t>(g)], b = p_.groups[static_cast<size_t>(g2)];
    for (int& m : a) m = image(m);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a != b) return false;
    gamma_.emplace(g, g2);
    gamma_inverse_.emplace(g2, g);
    added_groups_.push_back(g);
    return true;
  }

  // Does rank r2 in part u2 what rank r does in part u, with ranks rotated
  // (and queues and groups as kappa_'s mapping maps them)?
  bool same(int r, int u, int r2, int u2) {
    const uint32_t n = count(r, u);
    if (count(r2, u2) != n) return false;
    const int *a = of(r, u), *b = of(r2, u2);
    for (uint32_t k = 0; k < n; ++k) {
      const Operation &o = p_.op(r, a[k]), &x = p_.op(r2, b[k]);
      // A GPU's reducing reads share its ports' reduction table and are
      // answered one after another, whatever their channel (cores_run.h,
      // Rank::table_link, last_rounds_): its channels' reads are not in step.
      if (!rotate_ && o.kind == OpKind::ReduceRead) return false;
      if (o.kind != x.kind || o.engine != x.engine || o.proto != x.proto || o.timestep != x.timestep ||
          image(o.send_peer) != x.send_peer || image(o.recv_peer) != x.recv_peer || o.src.buf != x.src.buf ||
          o.src.count != x.src.count || o.dst.buf != x.dst.buf || o.dst.count != x.dst.count ||
          o.dep_count != x.dep_count || (o.group == kNone) != (x.group == kNone))
        return false;
      if (o.group != kNone && !group_image(o.group, x.group)) return false;
      if (queue_.try_emplace(std::pair{u, int{o.queue}}, x.queue).first->second != x.queue) return false;
      for (uint32_t d = 0; d < o.dep_count; ++d) {
        const uint32_t dep = p_.deps_of(o)[d];
        if (b[place_[p_.rank_begin[static_cast<size_t>(r)] + dep]] != static_cast<int>(p_.deps_of(x)[d]))
          return false;
      }
    }
    return true;
  }

  // A failed match of part u: its queues' and groups' mappings go.
  void undo(int u) {
    queue_.erase(queue_.lower_bound({u, 0}), queue_.lower_bound({u + 1, 0}));
    for (int g : added_groups_) {
      gamma_inverse_.erase(gamma_.at(g));
      gamma_.erase(g);
    }
    added_groups_.clear();
  }

  // kappa_: the part that is each part's image. Under the identity, the
  // next part after it that does what it does on its ranks (so alike parts
  // make one cycle), else itself.
  bool images(std::string& why) {
    std::vector<int> first_rank(U_, -1);
    for (int r = p_.ranks - 1; r >= 0; --r)
      for (size_t u = 0; u < U_; ++u)
        if (count(r, static_cast<int>(u))) first_rank[u] = r;
    kappa_.assign(U_, -1);
    std::vector<char> taken(U_, 0);
    const int n = static_cast<int>(U_);
    for (int u = 0; u < n; ++u) {
      const int r0 = first_rank[static_cast<size_t>(u)];
      for (int k = 0; k < n && kappa_[static_cast<size_t>(u)] < 0; ++k) {
        const int u2 = rotate_ ? k : (u + 1 + k) % n;
        if (taken[static_cast<size_t>(u2)] || count(image(r0), u2) != count(r0, u)) continue;
        if (u2 == u && !rotate_) {
          kappa_[static_cast<size_t>(u)] = u;
          taken[static_cast<size_t>(u)] = 1;
          continue;
        }
        added_groups_.clear();
        bool all = true;
        for (int r = 0; r < p_.ranks && all; ++r) all = same(r, u, image(r), u2);
        if (all) {
          kappa_[static_cast<size_t>(u)] = u2;
          taken[static_cast<size_t>(u2)] = 1;
        } else {
          undo(u);
        }
      }
      if (kappa_[static_cast<size_t>(u)] < 0)
        return why = "no part does on each node's next GPU what channel " +
                     std::to_string(part_channel_[static_cast<size_t>(u)]) + "'s part " + std::to_string(u) + " does",
               false;
    }
    for (size_t u = 0; u < U_; ++u)
      if (kappa_[u] != static_cast<int>(u)) return true;
    return why = rotate_ ? "each channel is its own image, its GPUs' shares joined"
                         : "no two of a GPU's channels do the same",
           false;
  }

  // The operation that is rank r's operation i's image.
  const Operation& image_op(int r, int i) const {
    const uint32_t x = p_.rank_begin[static_cast<size_t>(r)] + static_cast<uint32_t>(i);
    const int r2 = image(r);
    return p_.op(r2, of(r2, kappa_[static_cast<size_t>(part_[x])])[place_[x]]);
  }

  // The links' classes: a link and the links its routes' images cross in
  // its place, and theirs, from every connection's route and its image's,
  // and every in-network operation's ways down to its members and their
  // images. Where the rotation maps links one to one, a class is a link's
  // orbit; where a link's images differ from route to route (a channel's
  // port picks its NVSwitch, and hgx-h100's switches take 5, 4, 4 and 5 of
  // a GPU's links), its class pools them all.
  bool orbits(Pairs& x, std::string& why) {
    // Pairs walk a with its image b, hop by hop; false where they differ.
    const auto pair = [&](const Runs& a, const Runs& b, double sent) {
      const auto size = [](const Runs& h) {
        size_t n = 0;
        for (const auto& [first, last] : h) n += static_cast<size_t>(last - first);
        return n;
      };
      const size_t n = size(a);
      if (n != size(b)) return false;
      auto ra = a.begin(), rb = b.begin();
      const std::pair<int, double>*pa = nullptr, *a_end = nullptr, *pb = nullptr, *b_end = nullptr;
      for (size_t h = 0; h < n; ++h) {
        for (; pa == a_end; ++ra) std::tie(pa, a_end) = *ra;
        for (; pb == b_end; ++rb) std::tie(pb, b_end) = *rb;
        const auto [l, share] = *pa++;
        const auto [l2, share2] = *pb++;
        if (std::abs(share - share2) > 1e-9 * share) return false;
        int &s = x.image[static_cast<size_t>(l)], &v = x.inverse[static_cast<size_t>(l2)];
        if (s != l2 || v != l) {  // else paired before, so of one format and joined
          if (g_.format_index(l) != g_.format_index(l2)) return false;
          if ((s >= 0 && s != l2) || (v >= 0 && v != l)) x.uneven[static_cast<size_t>(l)] = 1;
          s = l2;
          v = l;
          x.joined.join(static_cast<uint32_t>(l), static_cast<uint32_t>(l2));
        }
        x.load[static_cast<size_t>(l)] += share * sent;
      }
      return true;
    };
    std::unordered_map<uint64_t, std::vector<int>> ports;
    const auto route = [&](int r, int peer, int c, Met& met) {
      std::vector<int>& x = ports[static_cast<uint64_t>(r) << 32 | static_cast<uint32_t>(peer)];
      const int from = endpoints_[static_cast<size_t>(r)], to = endpoints_[static_cast<size_t>(peer)];
      if (x.empty()) x = FlowGraph::shortest_ports(t_, from, to);
      return g_.walk(t_.endpoints()[static_cast<size_t>(from)], FlowGraph::channel_port(x, c), to, from, &met);
    };
    // Each connection once, with its part and the operations that send on
    // it: (rank, peer, channel), whether it sends, or receives (the head
    // flags' way back), and the part.
    std::vector<std::tuple<uint64_t, bool, int>> conns;
    for (int r = 0; r < p_.ranks; ++r)
      for (int i = 0; i < p_.op_count(r); ++i) {
        const Operation& o = p_.op(r, i);
        const int u = part_of(r, i);
        if (collectives::sends(o.kind)) conns.emplace_back(collectives::pair_key(r, o.send_peer, o.channel), true, u);
        if (collectives::receives(o.kind)) conns.emplace_back(collectives::pair_key(r, o.recv_peer, o.channel), false, u);
      }
    std::sort(conns.begin(), conns.end());
    Met a, b;
    for (size_t i = 0, j; i < conns.size(); i = j) {
      for (j = i + 1; j < conns.size() && conns[j] == conns[i]; ++j) {
      }
      const auto [key, sends, u] = conns[i];
      const int r = collectives::pair_from(key), peer = collectives::pair_to(key), c = collectives::pair_channel(key);
      const Route x = route(r, peer, c, a),
                  y = route(this->image(r), this->image(peer), part_channel_[static_cast<size_t>(kappa_[u])], b);
      if (!(x.latency_ns == y.latency_ns && x.ack_ns == y.ack_ns && x.acked_by_memory == y.acked_by_memory &&
            pair(runs_of(a), runs_of(b), sends ? static_cast<double>(j - i) : 0)))
        return why = "rank " + std::to_string(r) + "'s route to rank " + std::to_string(peer) + " on channel " +
                     std::to_string(c) + " is not the image of its image's",
               false;
    }
    // Each in-network flow's shape once, as its ways down to the members
    // against its image's.
    Runs ha, hb, ha_back, hb_back;
    std::unordered_map<uint64_t, uint64_t> walked;  // (switch, member): its image's, paired
    std::set<std::array<int, 4>> paired;             // (switch, its image's, group, its image's)
    std::vector<int> ta, tb;                         // a way's members' endpoints, and their images'
    Fan fa;
    FlowGraph::WalkMemo below;  // the ways many switches reach alike
    // The rotation takes each rail's group to the next rail's in turn, so a
    // switch's ways walked for an image are its ways when that group's turn
    // comes: kept until then.
    struct Kept {
      std::vector<int> to;
      Fan fan;
    };
    std::unordered_map<int, Kept> for_image;  // [switch]: its ways last walked for an image
    std::vector<std::pair<int, uint32_t>> met_by;
    const auto ways = [&](int r, int i) {
      const Operation &o = p_.op(r, i), &x = image_op(r, i);
      const std::vector<InNetwork::Way> wa = innet_.ways(r, o), wb = innet_.ways(this->image(r), x);
      bool alike = wa.size() == wb.size();
      for (size_t w = 0; alike && w < wa.size(); ++w) {
        alike = std::abs(wa[w].share - wb[w].share) <= 1e-9 * wa[w].share;
        if (wa[w].out >= 0) alike = alike && pair(runs_of({{wa[w].out, 1.0}}), runs_of({{wb[w].out, 1.0}}), wa[w].share);
        if (!alike) break;
        // Down to each member, and the answers' or contributions' way up. A
        // rail's groups of every channel share their ways: each pair once.
        // Where every member's pair was already its image's, a group of the
        // same members from the same switches has them all paired.
        const std::array<int, 4> key{wa[w].sw, wb[w].sw, innet_.alike(o.group), innet_.alike(x.group)};
        if (paired.count(key)) continue;
        ta.clear();
        tb.clear();
        bool each = true;
        for (int m : p_.groups[static_cast<size_t>(o.group)]) {
          const uint64_t from = static_cast<uint64_t>(wa[w].sw) << 32 | static_cast<uint32_t>(m),
                         to = static_cast<uint64_t>(wb[w].sw) << 32 | static_cast<uint32_t>(this->image(m));
          const auto [it, fresh] = walked.try_emplace(from, to);
          each = each && it->second == to;
          if (!fresh && it->second == to) continue;
          ta.push_back(endpoints_[static_cast<size_t>(m)]);
          tb.push_back(endpoints_[static_cast<size_t>(this->image(m))]);
        }
        if (each) paired.insert(key);
        if (ta.empty()) continue;
        if (const auto it = for_image.find(wa[w].sw); it != for_image.end() && it->second.to == ta) {
          std::swap(fa, it->second.fan);
          for_image.erase(it);
        } else {
          fa.walk(g_, wa[w].sw, ta, met_by, below);
        }
        Kept& kept = for_image[wb[w].sw];
        kept.to = tb;
        const Fan& fb = kept.fan;
        kept.fan.walk(g_, wb[w].sw, tb, met_by, below);
        for (size_t m = 0; alike && m < ta.size(); ++m) {
          fa.met(m, ha, ha_back);
          fb.met(m, hb, hb_back);
          alike = fa.latency(m) == fb.latency(m) && pair(ha, hb, wa[w].share) && pair(ha_back, hb_back, wa[w].share);
        }
      }
      if (!alike)
        why = "rank " + std::to_string(r) + "'s in-network operation " + std::to_string(i) +
              " does not reach its group as its image does";
      return alike;
    };
    // Under the identity a group's image has its members, so its ways are
    // its own and pair each link with itself, which says something only of
    // a link a connection's image moved: such operations go last, walked
    // only if their shape (which the run builds anyway) crosses one.
    const auto own = [&](int r, int i) {
      const Operation &o = p_.op(r, i), &x = image_op(r, i);
      return !rotate_ && innet_.ways(r, o) == innet_.ways(r, x);
    };
    const auto moved = [&x](int l) {
      const int s = x.image[static_cast<size_t>(l)], v = x.inverse[static_cast<size_t>(l)];
      return (s >= 0 && s != l) || (v >= 0 && v != l);
    };
    std::unordered_set<uint64_t> shapes;
    std::vector<std::pair<int, int>> last;
    for (int r = 0; r < p_.ranks; ++r)
      for (int i = 0; i < p_.op_count(r); ++i) {
        const Operation& o = p_.op(r, i);
        if (!collectives::in_network(o.kind) || collectives::passive(o)) continue;
        if (!shapes.insert(innet_.shape_key(r, o)).second) continue;
        if (own(r, i)) last.emplace_back(r, i);
        else if (!ways(r, i)) return false;
      }
    for (const auto& [r, i] : last) {
      bool crosses = false;
      for (const Network::Use& u : innet_.shape_of(r, p_.op(r, i)).uses) crosses = crosses || moved(u.link);
      for (const InNetwork::Way& w : innet_.ways(r, p_.op(r, i))) crosses = crosses || (w.out >= 0 && moved(w.out));
      if (crosses && !ways(r, i)) return false;
    }
    return true;
  }

  // Each class of links' narrowest link stands for it, and fills as its
  // busiest link would: a class that pools links the parts load unevenly
  // binds where its link of most sending operations per GB/s binds.
  void link_classes(Joined& joined, const std::vector<char>& uneven, ChannelClasses& out) const {
    const size_t L = uneven.size();
    const std::vector<double>& load = load_;
    std::vector<int> size(L, 0), first(L, -1);
    std::vector<char> pooled(L, 0);
    std::vector<double> sum(L, 0), busiest(L, 0);  // [class]: the load, and the most per GB/s
    const std::vector<double>& cap = g_.capacities();
    for (size_t l = 0; l < L; ++l) {
      const size_t k = joined.find(static_cast<uint32_t>(l));
      ++size[k];
      pooled[k] |= uneven[l];
      sum[k] += load[l];
      busiest[k] = std::max(busiest[k], load[l] / cap[l]);
      const int f = first[k];
      if (f < 0 || cap[l] < cap[static_cast<size_t>(f)]) first[k] = static_cast<int>(l);
    }
    out.canon.resize(L);
    out.per_link.resize(L);
    out.mean.resize(L);
    for (size_t l = 0; l < L; ++l) {
      const size_t k = joined.find(static_cast<uint32_t>(l));
      out.canon[l] = first[k];
      const double mean = sum[k] / size[k];
      const double fill = mean > 0 ? cap[static_cast<size_t>(first[k])] * busiest[k] / mean : 1.0;
      out.per_link[l] = fill / size[k];
      out.mean[l] = 1 / fill;
      if (pooled[k] && k == l) {
        ++out.pooled;
        out.pooled_links += static_cast<uint64_t>(size[k]);
      }
    }
  }

  // The classes (the parts the symmetries' images join, each named by its
  // first), and the program of their first parts.
  void keep_firsts(Joined& joined, ChannelClasses& out) {
    out.first.assign(U_, -1);
    std::vector<int> first(U_, -1), size(U_, 0);  // [class's root]
    for (size_t u = 0; u < U_; ++u) {
      const size_t k = joined.find(static_cast<uint32_t>(u));
      if (first[k] < 0) {
        first[k] = static_cast<int>(u);
        ++out.classes;
      }
      ++size[k];
    }
    std::vector<int> members(U_, 0);
    for (size_t u = 0; u < U_; ++u) {
      const size_t k = joined.find(static_cast<uint32_t>(u));
      out.first[u] = first[k];
      members[u] = size[k];
    }
    out.part_channel = part_channel_;
    Program& k = out.reps;
    k = p_;
    k.ops.clear();
    k.deps.clear();
    k.rank_begin.assign(1, 0);
    out.members.clear();
    std::vector<int> at;
    for (int r = 0; r < p_.ranks; ++r) {
      at.assign(static_cast<size_t>(p_.op_count(r)), -1);
      int n = 0;
      const auto kept = [&](int i) { return out.first[static_cast<size_t>(part_of(r, i))] == part_of(r, i); };
      for (int i = 0; i < p_.op_count(r); ++i)
        if (kept(i)) at[static_cast<size_t>(i)] = n++;
      for (int i = 0; i < p_.op_count(r); ++i) {
        if (!kept(i)) continue;
        Operation o = p_.op(r, i);
        const uint32_t* d = p_.deps_of(o);
        o.dep_begin = static_cast<uint32_t>(k.deps.size());
        for (uint32_t j = 0; j < o.dep_count; ++j) k.deps.push_back(static_cast<uint32_t>(at[d[j]]));
        k.ops.push_back(o);
        out.members.push_back(members[static_cast<size_t>(part_of(r, i))]);
      }
      k.rank_begin.push_back(static_cast<uint32_t>(k.ops.size()));
    }
  }

  const Program& p_;
  const topo::Topology& t_;
  const FlowGraph& g_;
  InNetwork& innet_;
  const std::vector<int>& endpoints_;
  std::vector<int> pi_, kappa_;  // the rotation; each part's image
  bool rotate_ = true;           // the symmetry tried: the rotation, else the identity
  std::vector<double> load_;     // [flow link]: the sending operations whose data cross it
  size_t U_ = 0;                          // parts
  std::vector<int> part_;                 // [the program's operation]
  std::vector<int> part_channel_;         // [part]
  std::vector<uint32_t> begin_;           // [rank x parts + part]: into ops_
  std::vector<int> ops_;                  // by rank and part, in order
  std::vector<uint32_t> place_;           // [the program's operation]: its place among its part's on its rank
  std::map<std::pair<int, int>, int> queue_;  // (part, queue): its image's queue
  std::unordered_map<int, int> gamma_, gamma_inverse_;  // a group's image, and back
  std::vector<int> added_groups_;         // by the match being tried
};

}  // namespace

bool channel_classes(const Program& p, const topo::Topology& t, const FlowGraph& g, InNetwork& innet,
                     const std::vector<int>& endpoints, ChannelClasses& out, std::string& why) {
  return Finder(p, t, g, innet, endpoints).find(out, why);
}

}  // namespace incsim::flow
