#include "collectives/schedule.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "core/error.h"

namespace incsim::collectives {

const char* op_name(Op op) {
  switch (op) {
    case Op::Reduce: return "Reduce";
    case Op::Gather: return "Gather";
    case Op::Nop: return "NOP";
  }
  return "?";
}

bool Entry::operator==(const Entry& o) const {
  return op == o.op && flow == o.flow && parent == o.parent && children == o.children &&
         step == o.step && start == o.start && size == o.size;
}

namespace {

bool entry_less(const Entry& a, const Entry& b) {
  return std::tie(a.step, a.op, a.flow, a.parent) < std::tie(b.step, b.op, b.flow, b.parent);
}

}  // namespace

std::vector<Message> Schedule::messages() const {
  std::vector<Message> out;
  for (int u = 0; u < static_cast<int>(tables.size()); ++u)
    for (const Entry& e : tables[u]) {
      if (e.op == Op::Reduce && e.parent != kNil) out.push_back({u, e.parent, e.op, e.flow, e.step});
      if (e.op == Op::Gather)
        for (int c : e.children) out.push_back({u, c, e.op, e.flow, e.step});
    }
  std::sort(out.begin(), out.end(), [](const Message& a, const Message& b) {
    return std::tie(a.step, a.src, a.dst, a.op, a.flow) < std::tie(b.step, b.src, b.dst, b.op, b.flow);
  });
  return out;
}

int Schedule::count(Op op) const {
  int k = 0;
  for (const auto& t : tables)
    for (const Entry& e : t) k += e.op == op;
  return k;
}

// ---------------------------------------------------------------- builder

ScheduleBuilder::ScheduleBuilder(std::string algorithm, int nodes, int flows, int slices_per_flow) {
  s_.algorithm = std::move(algorithm);
  s_.nodes = nodes;
  s_.slices = flows * slices_per_flow;
  for (int f = 0; f < flows; ++f) s_.flows.push_back({f * slices_per_flow, slices_per_flow});
}

void ScheduleBuilder::reduce(int flow, int src, int dst, int step) {
  msgs_.push_back({flow, src, dst, step, Op::Reduce});
}
void ScheduleBuilder::gather(int flow, int src, int dst, int step) {
  msgs_.push_back({flow, src, dst, step, Op::Gather});
}
void ScheduleBuilder::path(int step, int src, int dst, std::vector<topo::PortRef> out) {
  s_.paths.push_back({step, src, dst, std::move(out)});
}

Schedule ScheduleBuilder::build(bool nops) const {
  Schedule s = s_;
  const int n = s.nodes;
  s.tables.assign(n, {});
  // Messages per node, sent and received, in the order the algorithm emitted
  // them, stably sorted by step: children lists keep emission order.
  std::vector<Msg> m = msgs_;
  std::stable_sort(m.begin(), m.end(), [](const Msg& a, const Msg& b) { return a.step < b.step; });
  std::vector<std::vector<const Msg*>> out(n), in(n);
  int last_reduce = 0, first_gather = 1 << 30;
  for (const Msg& x : m) {
    out[x.src].push_back(&x);
    in[x.dst].push_back(&x);
    s.steps = std::max(s.steps, x.step);
    if (x.op == Op::Reduce) last_reduce = std::max(last_reduce, x.step);
    else first_gather = std::min(first_gather, x.step);
  }
  s.reduce_steps = last_reduce < first_gather ? last_reduce : 0;
  const int flows = static_cast<int>(s.flows.size());
  for (int u = 0; u < n; ++u) {
    std::vector<std::vector<const Msg*>> rin(flows), rout(flows), gin(flows), gout(flows);
    for (const Msg* x : out[u]) (x->op == Op::Reduce ? rout : gout)[x->flow].push_back(x);
    for (const Msg* x : in[u]) (x->op == Op::Reduce ? rin : gin)[x->flow].push_back(x);
    auto& table = s.tables[u];
    for (int f = 0; f < flows; ++f) {
      Entry base;
      base.flow = f;
      base.start = s.flows[f].start;
      base.size = s.flows[f].size;
      // Reduce: one entry per send (one in a correct schedule), or the root's.
      std::vector<int> children;
      int last_in = 0;
      for (const Msg* x : rin[f]) {
        children.push_back(x->src);
        last_in = std::max(last_in, x->step);
      }
      for (const Msg* x : rout[f]) {
        Entry e = base;
        e.op = Op::Reduce;
        e.parent = x->dst;
        e.children = children;
        e.step = x->step;
        table.push_back(e);
      }
      if (rout[f].empty() && !rin[f].empty()) {
        Entry e = base;
        e.op = Op::Reduce;
        e.children = children;
        e.step = last_in;
        table.push_back(e);
      }
      // Gather: one entry per sending step, or the leaf's receive entry.
      const int parent = gin[f].empty() ? kNil : gin[f].front()->src;
      for (size_t i = 0; i < gout[f].size();) {
        Entry e = base;
        e.op = Op::Gather;
        e.parent = parent;
        e.step = gout[f][i]->step;
        for (; i < gout[f].size() && gout[f][i]->step == e.step; ++i)
          e.children.push_back(gout[f][i]->dst);
        table.push_back(e);
      }
      if (gout[f].empty())
        for (const Msg* x : gin[f]) {
          Entry e = base;
          e.op = Op::Gather;
          e.parent = x->src;
          e.step = x->step;
          table.push_back(e);
        }
    }
    if (nops) {
      std::vector<bool> busy(s.steps + 1, false);
      for (const Entry& e : table)
        if (e.sends()) busy[e.step] = true;
      for (int t = 1; t <= s.steps; ++t)
        if (!busy[t]) {
          Entry e;
          e.op = Op::Nop;
          e.step = t;
          table.push_back(e);
        }
    }
    std::stable_sort(table.begin(), table.end(), entry_less);
  }
  return s;
}

// ---------------------------------------------------------------- verify

namespace {

struct Bits {
  std::vector<uint64_t> w;
  explicit Bits(int n = 0) : w((n + 63) / 64, 0) {}
  void set(int i) { w[i / 64] |= uint64_t{1} << (i % 64); }
  int count() const {
    int c = 0;
    for (uint64_t x : w) c += __builtin_popcountll(x);
    return c;
  }
  int first_common(const Bits& o) const {
    for (size_t i = 0; i < w.size(); ++i)
      if (w[i] & o.w[i]) return static_cast<int>(i * 64) + __builtin_ctzll(w[i] & o.w[i]);
    return -1;
  }
  void merge(const Bits& o) {
    for (size_t i = 0; i < w.size(); ++i) w[i] |= o.w[i];
  }
};

struct FlowState {
  Bits have;
  int sent_reduce = 0;   // step the partial sum was passed on (0: not yet)
  int got_gather = 0;    // step the full sum arrived by Gather (0: not yet)
  int reduced_at = 0;    // step the full sum was completed by reduction (root)
};

class Problems {
 public:
  explicit Problems(std::vector<std::string>& out) : out_(out) {}
  void add(const std::string& s) {
    if (out_.size() < kMax) out_.push_back(s);
    else ++dropped_;
  }
  void finish() {
    if (dropped_) out_.push_back("... and " + std::to_string(dropped_) + " more problems");
  }

 private:
  static constexpr size_t kMax = 200;
  std::vector<std::string>& out_;
  size_t dropped_ = 0;
};

std::string nd(int u) { return "node " + std::to_string(u); }
std::string fl(int f) { return "flow " + std::to_string(f); }
std::string st(int t) { return "step " + std::to_string(t); }

}  // namespace

VerifyResult verify(const Schedule& s, int n, const VerifyOptions& opt) {
  VerifyResult r;
  Problems P(r.problems);
  auto done = [&]() {
    P.finish();
    return r;
  };
  if (n < 1) {
    P.add("the node count must be at least 1");
    return done();
  }
  if (s.nodes != n || static_cast<int>(s.tables.size()) != n) {
    P.add("the schedule is for " + std::to_string(s.nodes) + " nodes with " +
          std::to_string(s.tables.size()) + " tables, not " + std::to_string(n));
    return done();
  }
  const int F = static_cast<int>(s.flows.size());
  if (F < 1 || s.slices < 1) {
    P.add("the schedule has no flows or no slices");
    return done();
  }
  // The flows tile the buffer.
  {
    std::vector<std::pair<int, int>> ranges;
    for (int f = 0; f < F; ++f) ranges.push_back({s.flows[f].start, s.flows[f].size});
    std::sort(ranges.begin(), ranges.end());
    int at = 0;
    for (auto [start, size] : ranges) {
      if (size < 1 || start != at) {
        P.add("the flows do not tile the buffer: a chunk starts at slice " + std::to_string(start) +
              " with " + std::to_string(size) + " slices where slice " + std::to_string(at) +
              " was expected");
        break;
      }
      at += size;
    }
    if (at != s.slices && r.problems.empty())
      P.add("the flows cover " + std::to_string(at) + " of " + std::to_string(s.slices) + " slices");
  }

  // Entries well formed; index them.
  std::vector<std::vector<const Entry*>> red(static_cast<size_t>(n) * F), gat(static_cast<size_t>(n) * F);
  auto idx = [F](int u, int f) { return static_cast<size_t>(u) * F + f; };
  int max_step = 0;
  for (int u = 0; u < n; ++u)
    for (const Entry& e : s.tables[u]) {
      const std::string where = nd(u) + " " + op_name(e.op) + " entry of " + fl(e.flow) + " at " + st(e.step);
      if (e.step < 1) {
        P.add(where + ": steps start at 1");
        continue;
      }
      max_step = std::max(max_step, e.step);
      if (e.op == Op::Nop) continue;
      if (e.op != Op::Reduce && e.op != Op::Gather) {
        P.add(nd(u) + " has an entry with an unknown op");
        continue;
      }
      if (e.flow < 0 || e.flow >= F) {
        P.add(where + ": no such flow");
        continue;
      }
      bool bad = false;
      if (e.parent != kNil && (e.parent < 0 || e.parent >= n || e.parent == u)) {
        P.add(where + ": parent " + std::to_string(e.parent) + " is not another node");
        bad = true;
      }
      for (size_t i = 0; i < e.children.size(); ++i) {
        int c = e.children[i];
        if (c < 0 || c >= n || c == u || c == e.parent ||
            std::find(e.children.begin(), e.children.begin() + i, c) != e.children.begin() + i) {
          P.add(where + ": child " + std::to_string(c) + " is not a distinct other node");
          bad = true;
        }
      }
      if (e.start != s.flows[e.flow].start || e.size != s.flows[e.flow].size) {
        P.add(where + ": start/size " + std::to_string(e.start) + "/" + std::to_string(e.size) +
              " differ from the flow's chunk " + std::to_string(s.flows[e.flow].start) + "/" +
              std::to_string(s.flows[e.flow].size));
      }
      if (bad) continue;
      (e.op == Op::Reduce ? red : gat)[idx(u, e.flow)].push_back(&e);
    }
  for (int u = 0; u < n; ++u)
    for (int f = 0; f < F; ++f) {
      const auto& R = red[idx(u, f)];
      if (R.size() > 1)
        P.add(nd(u) + " has " + std::to_string(R.size()) + " Reduce entries for " + fl(f) +
              " (a partial sum is passed on once)");
      const auto& G = gat[idx(u, f)];
      for (size_t i = 0; i < G.size(); ++i)
        for (size_t j = 0; j < i; ++j) {
          if (G[i]->step == G[j]->step)
            P.add(nd(u) + " has two Gather entries for " + fl(f) + " in " + st(G[i]->step));
          else if (G[i]->parent != G[j]->parent)
            P.add(nd(u) + "'s Gather entries for " + fl(f) + " name different parents");
        }
    }
  if (!r.problems.empty()) return done();

  // The messages the tables send, by step.
  struct Msg {
    int src, dst, flow;
    Op op;
    const Entry* e;
  };
  std::vector<std::vector<Msg>> by_step(max_step + 1);
  for (int u = 0; u < n; ++u)
    for (const Entry& e : s.tables[u]) {
      if (e.op == Op::Reduce && e.parent != kNil) by_step[e.step].push_back({u, e.parent, e.flow, e.op, &e});
      if (e.op == Op::Gather)
        for (int c : e.children) by_step[e.step].push_back({u, c, e.flow, e.op, &e});
    }
  r.steps = max_step;

  std::vector<FlowState> state(static_cast<size_t>(n) * F);
  for (int u = 0; u < n; ++u)
    for (int f = 0; f < F; ++f) {
      state[idx(u, f)].have = Bits(n);
      state[idx(u, f)].have.set(u);
      if (n == 1) state[idx(u, f)].reduced_at = -1;  // one node holds the full sum already
    }
  // Arrival step of the Reduce (from child) and Gather messages per (node, flow).
  std::vector<std::map<int, int>> reduce_from(static_cast<size_t>(n) * F);
  std::vector<std::pair<int, int>> gather_from(static_cast<size_t>(n) * F, {kNil, 0});
  auto holds_full = [&](const FlowState& x) { return x.got_gather || x.reduced_at; };

  for (int t = 1; t <= max_step; ++t) {
    auto& msgs = by_step[t];
    r.messages += static_cast<int>(msgs.size());
    // What each message carries: the sender's state at the start of the step.
    std::vector<Bits> payload;
    payload.reserve(msgs.size());
    for (const Msg& m : msgs) {
      FlowState& x = state[idx(m.src, m.flow)];
      const std::string who = nd(m.src) + " in " + st(t) + " (" + fl(m.flow) + ")";
      if (m.op == Op::Reduce) {
        if (x.got_gather || x.reduced_at)
          P.add(who + " sends a Reduce of a flow it already holds the full sum of");
        for (int c : m.e->children) {
          auto it = reduce_from[idx(m.src, m.flow)].find(c);
          if (it == reduce_from[idx(m.src, m.flow)].end())
            P.add(who + " sends its Reduce to node " + std::to_string(m.dst) + " before child " +
                  std::to_string(c) + "'s Reduce has arrived");
        }
      } else {
        if (!holds_full(x))
          P.add(who + " sends a Gather without holding the full sum (" +
                std::to_string(x.have.count()) + " of " + std::to_string(n) + " contributions)");
        else if (m.e->parent == kNil && !x.reduced_at)
          P.add(who + " sends a Gather as the root, but its full sum came by Gather");
        else if (m.e->parent != kNil && gather_from[idx(m.src, m.flow)].first != m.e->parent)
          P.add(who + " sends a Gather whose parent " + std::to_string(m.e->parent) +
                " has not sent it the flow");
      }
      payload.push_back(x.have);
    }
    for (const Msg& m : msgs)
      if (m.op == Op::Reduce) state[idx(m.src, m.flow)].sent_reduce = t;
    // Deliveries.
    for (size_t i = 0; i < msgs.size(); ++i) {
      const Msg& m = msgs[i];
      FlowState& y = state[idx(m.dst, m.flow)];
      const std::string what = std::string(op_name(m.op)) + " of " + fl(m.flow) + " from " +
                               nd(m.src) + " to " + nd(m.dst) + " in " + st(t);
      if (m.op == Op::Reduce) {
        const auto& R = red[idx(m.dst, m.flow)];
        bool expected = !R.empty() && std::find(R[0]->children.begin(), R[0]->children.end(), m.src) !=
                                          R[0]->children.end();
        if (!expected) P.add("the " + what + " is not expected by the receiver's table");
        else if (R[0]->parent != kNil ? R[0]->step <= t : R[0]->step < t)
          P.add("the " + what + " arrives after the receiver's entry (" + st(R[0]->step) + ")");
        if (y.sent_reduce)
          P.add("the " + what + " arrives after the receiver passed its partial sum on");
        if (y.got_gather || y.reduced_at)
          P.add("the " + what + " arrives at a node already holding the full sum");
        int twice = y.have.first_common(payload[i]);
        if (twice >= 0)
          P.add("the " + what + " counts " + nd(twice) + "'s data twice");
        y.have.merge(payload[i]);
        reduce_from[idx(m.dst, m.flow)][m.src] = t;
      } else {
        const auto& G = gat[idx(m.dst, m.flow)];
        bool expected = !G.empty() && G[0]->parent == m.src;
        if (!expected) P.add("the " + what + " is not expected by the receiver's table");
        if (y.got_gather || y.reduced_at)
          P.add("the " + what + " reaches a node already holding the full sum");
        y.got_gather = t;
        y.have = payload[i];
        gather_from[idx(m.dst, m.flow)] = {m.src, t};
      }
    }
    // Reductions completed this step: the roots.
    for (int u = 0; u < n; ++u)
      for (int f = 0; f < F; ++f) {
        FlowState& x = state[idx(u, f)];
        if (!x.reduced_at && !x.got_gather && !x.sent_reduce && x.have.count() == n) x.reduced_at = t;
      }
  }

  // The end state and the receive-only entries.
  for (int f = 0; f < F; ++f) {
    int roots = 0;
    for (int u = 0; u < n; ++u) {
      const FlowState& x = state[idx(u, f)];
      roots += x.reduced_at != 0;
      if (!x.got_gather && !x.reduced_at)
        P.add(nd(u) + " ends without the full sum of " + fl(f) + " (" + std::to_string(x.have.count()) +
              " of " + std::to_string(n) + " contributions)");
      const auto& R = red[idx(u, f)];
      if (!R.empty() && R[0]->parent == kNil) {
        if (!x.reduced_at)
          P.add(nd(u) + "'s Reduce entry of " + fl(f) + " makes it the root, but it does not complete the sum");
        for (int c : R[0]->children)
          if (!reduce_from[idx(u, f)].count(c))
            P.add(nd(u) + " waits for a Reduce of " + fl(f) + " from " + nd(c) + " that never comes");
      }
      for (const Entry* g : gat[idx(u, f)])
        if (g->children.empty() && (gather_from[idx(u, f)].second == 0 ||
                                    gather_from[idx(u, f)].second > g->step))
          P.add(nd(u) + " waits in " + st(g->step) + " for a Gather of " + fl(f) + " that has not come");
    }
    if (roots != 1 && n > 1)
      P.add(fl(f) + " is fully reduced at " + std::to_string(roots) + " nodes instead of one");
  }

  // Link use per step.
  if (opt.topology) {
    const topo::Topology& T = *opt.topology;
    if (static_cast<int>(T.endpoints().size()) != n) {
      P.add("the topology has " + std::to_string(T.endpoints().size()) + " endpoints, not " +
            std::to_string(n));
      return done();
    }
    double base = 0;
    for (const auto& l : T.links())
      if (T.node(l.a.node).kind == topo::NodeKind::Switch && T.node(l.b.node).kind == topo::NodeKind::Switch)
        base = base == 0 ? l.bw_GBps : std::min(base, l.bw_GBps);
    if (base == 0)
      for (const auto& l : T.links()) base = base == 0 ? l.bw_GBps : std::min(base, l.bw_GBps);
    std::vector<double> cap(T.links().size());
    for (size_t i = 0; i < cap.size(); ++i)
      cap[i] = std::max(1.0, std::floor(T.links()[i].bw_GBps / base + 1e-9));
    std::map<std::tuple<int, int, int>, std::vector<const Schedule::Path*>> explicit_paths;
    for (const auto& p : s.paths) explicit_paths[{p.step, p.src, p.dst}].push_back(&p);
    r.link_load.assign(max_step, 0.0);
    std::vector<int> use(2 * T.links().size());
    for (int t = 1; t <= max_step; ++t) {
      std::fill(use.begin(), use.end(), 0);
      auto hop = [&](topo::PortRef out) {
        int l = T.link_at(out);
        if (l < 0) return false;
        const auto& L = T.links()[l];
        ++use[2 * l + (L.a.node == out.node && L.a.port == out.port ? 0 : 1)];
        return true;
      };
      std::map<std::tuple<int, int, int>, bool> seen;  // (src, dst, op): flows coalesce
      for (const Msg& m : by_step[t]) {
        auto ep = explicit_paths.find({t, m.src, m.dst});
        if (ep != explicit_paths.end()) {
          if (seen[{m.src, m.dst, -1}]) continue;
          seen[{m.src, m.dst, -1}] = true;
          for (const auto* p : ep->second)
            for (auto out : p->out)
              if (!hop(out)) P.add("a path of " + st(t) + " names an unlinked port");
          continue;
        }
        if (seen[{m.src, m.dst, static_cast<int>(m.op)}]) continue;
        seen[{m.src, m.dst, static_cast<int>(m.op)}] = true;
        int node = T.endpoints()[m.src];
        for (int guard = 0; node != T.endpoints()[m.dst] && guard < 10000; ++guard) {
          topo::PortRef out{node, T.route(node, m.dst)};
          if (out.port < 0 || !hop(out)) break;
          node = T.peer(out).node;
        }
      }
      double worst = 0;
      for (size_t i = 0; i < use.size(); ++i) {
        double load = use[i] / cap[i / 2];
        worst = std::max(worst, load);
        if (opt.exclusive_links && load > 1) {
          const auto& L = T.links()[i / 2];
          topo::PortRef from = i % 2 ? L.b : L.a;
          P.add("in " + st(t) + " link " + T.port_name(from) + " -> " + T.port_name(T.peer(from)) +
                " carries " + std::to_string(use[i]) + " messages for a capacity of " +
                std::to_string(static_cast<int>(cap[i / 2])));
        }
      }
      r.link_load[t - 1] = worst;
      r.max_link_load = std::max(r.max_link_load, worst);
    }
  }
  return done();
}

std::string VerifyResult::report() const {
  std::ostringstream os;
  size_t k = 0;
  for (const auto& p : problems) {
    if (k++ == 20) {
      os << "(" << problems.size() - 20 << " more)\n";
      break;
    }
    os << p << "\n";
  }
  return os.str();
}

std::string format_tables(const Schedule& s) {
  std::ostringstream os;
  os << s.algorithm << ": " << s.nodes << " nodes, " << s.flows.size() << " flows, " << s.steps
     << " steps\n";
  for (int u = 0; u < static_cast<int>(s.tables.size()); ++u) {
    os << "Accelerator " << u << "\n";
    os << "  Op      FlowID  Parent  Children         Step  Start  Size\n";
    for (const Entry& e : s.tables[u]) {
      std::string ch;
      for (int c : e.children) ch += (ch.empty() ? "" : ",") + std::to_string(c);
      if (ch.empty()) ch = "nil";
      char line[160];
      if (e.op == Op::Nop)
        std::snprintf(line, sizeof line, "  %-7s %-7s %-7s %-16s %5d  %5s  %4s\n", "NOP", "nil", "nil", "nil",
                      e.step, "nil", "nil");
      else
        std::snprintf(line, sizeof line, "  %-7s %-7d %-7s %-16s %5d  %5d  %4d\n", op_name(e.op), e.flow,
                      e.parent == kNil ? "nil" : std::to_string(e.parent).c_str(), ch.c_str(), e.step,
                      e.start, e.size);
      os << line;
    }
  }
  return os.str();
}

ByteRange slice_bytes(uint64_t bytes, uint32_t elem_bytes, int slices, int start, int size) {
  if (elem_bytes == 0 || slices < 1 || start < 0 || size < 0 || start + size > slices)
    throw UserError("a slice range outside the buffer");
  const uint64_t elems = bytes / elem_bytes;
  auto at = [&](int i) { return elems * static_cast<uint64_t>(i) / static_cast<uint64_t>(slices) * elem_bytes; };
  return {at(start), at(start + size) - at(start)};
}

VerifyResult verify_broadcast(const Schedule& s, int n) {
  VerifyResult r;
  Problems P(r.problems);
  const int F = static_cast<int>(s.flows.size());
  const int root = s.broadcast_root;
  if (s.nodes != n || static_cast<int>(s.tables.size()) != n || root < 0 || root >= n || F < 1) {
    P.add("the schedule is not a broadcast on " + std::to_string(n) + " nodes with a root among them");
    P.finish();
    return r;
  }
  // held[u][f]: the step by the end of which u holds flow f (0: from the start, -1: never).
  std::vector<std::vector<int>> held(n, std::vector<int>(F, -1)), expect(n, std::vector<int>(F, kNil));
  held[root].assign(F, 0);
  for (int u = 0; u < n; ++u)
    for (const Entry& e : s.tables[u]) {
      r.steps = std::max(r.steps, e.step);
      if (e.op == Op::Nop) continue;
      const std::string where = nd(u) + " " + op_name(e.op) + " entry of " + fl(e.flow);
      if (e.op != Op::Gather || e.flow < 0 || e.flow >= F) {
        P.add(where + ": a broadcast has only Gather entries of its flows");
        continue;
      }
      if ((u == root) != (e.parent == kNil)) P.add(where + ": only the root has no parent");
      if (u != root) {
        if (expect[u][e.flow] != kNil && expect[u][e.flow] != e.parent) P.add(where + " names two parents");
        expect[u][e.flow] = e.parent;
      }
    }
  std::vector<Message> msgs = s.messages();
  r.messages = static_cast<int>(msgs.size());
  for (const Message& m : msgs) {
    const std::string what = "the Gather of " + fl(m.flow) + " from " + nd(m.src) + " to " + nd(m.dst) + " in " + st(m.step);
    if (held[m.src][m.flow] < 0 || held[m.src][m.flow] >= m.step) P.add(what + " is sent before the sender holds it");
    if (held[m.dst][m.flow] >= 0) P.add(what + " reaches a node that already holds it");
    if (expect[m.dst][m.flow] != m.src) P.add(what + " is not expected by the receiver's table");
    held[m.dst][m.flow] = m.step;
  }
  for (int u = 0; u < n; ++u)
    for (int f = 0; f < F; ++f)
      if (held[u][f] < 0) P.add(nd(u) + " ends without " + fl(f));
  P.finish();
  return r;
}

Schedule relabel(const Schedule& s, const std::vector<int>& node_of) {
  Schedule r = s;
  r.paths.clear();
  auto map = [&](int v) { return v == kNil ? kNil : node_of[v]; };
  for (int rank = 0; rank < s.nodes; ++rank) {
    auto& table = r.tables[node_of[rank]];
    table = s.tables[rank];
    for (Entry& e : table) {
      e.parent = map(e.parent);
      for (int& c : e.children) c = map(c);
    }
  }
  return r;
}

Schedule without_nops(Schedule s) {
  for (auto& table : s.tables)
    table.erase(std::remove_if(table.begin(), table.end(), [](const Entry& e) { return e.op == Op::Nop; }),
                table.end());
  return s;
}

}  // namespace incsim::collectives
