#include "collectives/program_check.h"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

namespace incsim::collectives {

std::string ProgramCheck::report() const {
  std::ostringstream os;
  for (size_t i = 0; i < problems.size() && i < 20; ++i) os << problems[i] << '\n';
  if (problems.size() > 20) os << "... and " << problems.size() - 20 << " more\n";
  return os.str();
}

namespace {

// Which contributions a chunk holds, as runs of keys: key k * ranks + q is
// rank q's input chunk k, so a chunk's sum over a range of ranks (a ring's
// partial sum, a whole all-reduce) is one run, and checking a program costs
// memory per chunk, not per chunk and rank (a flat ring's n^3 keys took 6 GB
// at 1,024 ranks). Runs are sorted by their first key, adjacent ones joined;
// two that overlap hold a key twice, a contribution counted twice.
struct Run {
  uint64_t lo, hi;  // keys [lo, hi)
  bool operator==(const Run& o) const { return lo == o.lo && hi == o.hi; }
};
using Contribs = std::vector<Run>;
using Keys = std::vector<uint64_t>;

void append(Contribs& out, const Run& r) {
  if (!out.empty() && out.back().hi == r.lo) out.back().hi = r.hi;
  else out.push_back(r);
}

Contribs merged(const Contribs& a, const Contribs& b) {
  Contribs out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size())
    append(out, j == b.size() || (i < a.size() && a[i].lo <= b[j].lo) ? a[i++] : b[j++]);
  return out;
}

// Every key, sorted, a key counted twice twice (for reporting what is wrong).
Keys keys_of(const Contribs& c) {
  Keys k;
  for (const Run& r : c)
    for (uint64_t x = r.lo; x < r.hi; ++x) k.push_back(x);
  std::sort(k.begin(), k.end());
  return k;
}

// A list per operation, flat: items [at[g], at[g + 1]). A program may have
// 10^8 operations, and a vector each took 24 bytes and an allocation apiece.
struct Lists {
  std::vector<uint64_t> at{0};
  std::vector<int> items;
  struct Range {
    const int *b, *e;
    const int* begin() const { return b; }
    const int* end() const { return e; }
  };
  Range operator[](size_t g) const { return {items.data() + at[g], items.data() + at[g + 1]}; }
  uint32_t size(size_t g) const { return static_cast<uint32_t>(at[g + 1] - at[g]); }
  // Ends list g (the next push_backs go to list g + 1).
  void close() { at.push_back(items.size()); }
  // The reverse: for every g in order, g goes on the list of each q in lists[g].
  Lists reversed() const {
    Lists r;
    const size_t n = at.size() - 1;
    r.at.assign(n + 1, 0);
    for (const int q : items) ++r.at[static_cast<size_t>(q) + 1];
    for (size_t g = 0; g < n; ++g) r.at[g + 1] += r.at[g];
    std::vector<uint64_t> next(r.at.begin(), r.at.end() - 1);
    r.items.resize(items.size());
    for (size_t g = 0; g < n; ++g)
      for (const int q : (*this)[g]) r.items[next[static_cast<size_t>(q)]++] = static_cast<int>(g);
    return r;
  }
};

// A set of operation indices, a bit each, with a word per 64 words that
// says which hold any: the sweep takes its operations out in increasing
// order, and a binary heap of them cost 4 bytes and a cache miss per level
// per push on programs of 10^8 operations.
class IndexSet {
 public:
  static constexpr size_t npos = static_cast<size_t>(-1);
  explicit IndexSet(size_t n) : words_((n + 63) / 64), summary_((words_.size() + 63) / 64) {}
  bool empty() const { return count_ == 0; }
  void insert(size_t i) {
    uint64_t& w = words_[i >> 6];
    const uint64_t bit = uint64_t{1} << (i & 63);
    if (w & bit) return;
    w |= bit;
    summary_[i >> 12] |= uint64_t{1} << ((i >> 6) & 63);
    ++count_;
  }
  void erase(size_t i) {
    uint64_t& w = words_[i >> 6];
    w &= ~(uint64_t{1} << (i & 63));
    if (!w) summary_[i >> 12] &= ~(uint64_t{1} << ((i >> 6) & 63));
    --count_;
  }
  // The least index in the set from `from` on, or npos.
  size_t next(size_t from) const {
    size_t w = from >> 6;
    if (w >= words_.size()) return npos;
    if (const uint64_t m = words_[w] & (~uint64_t{0} << (from & 63))) return (w << 6) | ctz(m);
    if (++w >= words_.size()) return npos;
    size_t s = w >> 6;
    uint64_t m = summary_[s] & (~uint64_t{0} << (w & 63));
    while (!m) {
      if (++s >= summary_.size()) return npos;
      m = summary_[s];
    }
    w = (s << 6) | ctz(m);
    return (w << 6) | ctz(words_[w]);
  }

 private:
  static size_t ctz(uint64_t m) { return static_cast<size_t>(__builtin_ctzll(m)); }
  std::vector<uint64_t> words_, summary_;
  size_t count_ = 0;
};

const char* buffer_word(Buffer b) {
  static const char* const kWords[] = {"input", "output", "scratch"};
  return kWords[static_cast<int>(b)];
}

class Checker {
 public:
  explicit Checker(const Program& p) : p_(p), n_(p.ranks) {}

  ProgramCheck run() {
    if (shape() && sizes() && pairing() && acyclic()) {
      simulate();
      if (out_.problems.empty()) result();
    }
    return std::move(out_);
  }

 private:
  // ---- Naming ----
  std::string op_text(int r, int i) const {
    return "rank " + std::to_string(r) + " operation " + std::to_string(i) + " (" + op_name(p_.op(r, i).kind) + ")";
  }
  std::string op_text(int g) const { return op_text(rank_of_[g], g - static_cast<int>(p_.rank_begin[rank_of_[g]])); }
  uint64_t key(uint64_t rank, uint64_t chunk) const { return chunk * static_cast<uint64_t>(n_) + rank; }
  std::string key_text(uint64_t key) const {
    return "rank " + std::to_string(key % static_cast<uint64_t>(n_)) + "'s input chunk " +
           std::to_string(key / static_cast<uint64_t>(n_));
  }
  void problem(const std::string& s) { out_.problems.push_back(s); }

  // ---- Stage 1: every field in range ----
  bool ref_ok(int r, int i, const char* what, const ChunkRef& c, bool needed) {
    if (c.empty()) {
      if (needed) problem(op_text(r, i) + " names no " + what + " chunk");
      return !needed;
    }
    const uint32_t limit = chunk_limit(p_, r, c.buf);
    if (uint64_t{c.index} + c.count > limit) {
      problem(op_text(r, i) + "'s " + what + " " + buffer_word(c.buf) + " chunks [" + std::to_string(c.index) + ", " +
              std::to_string(c.index + c.count) + ") lie outside rank " + std::to_string(r) + "'s " +
              std::to_string(limit) + " " + buffer_word(c.buf) + " chunks");
      return false;
    }
    return true;
  }

  bool shape() {
    if (n_ < 1 || p_.buffers.size() != static_cast<size_t>(n_) || p_.rank_begin.size() != static_cast<size_t>(n_) + 1 ||
        p_.rank_begin.front() != 0 || p_.rank_begin.back() != p_.ops.size() ||
        !std::is_sorted(p_.rank_begin.begin(), p_.rank_begin.end())) {
      problem("the program's rank tables do not match its " + std::to_string(n_) + " ranks");
      return false;
    }
    if (n_ >= (1 << 24)) {  // pair_key's ranks
      problem("a program of " + std::to_string(n_) + " ranks; at most 16,777,215 are checked");
      return false;
    }
    if (rooted(p_.collective) && (p_.root < 0 || p_.root >= n_))
      problem(std::string("the ") + collective_name(p_.collective) + " root " + std::to_string(p_.root) +
              " is not a rank of " + std::to_string(n_));
    for (size_t g = 0; g < p_.groups.size(); ++g) {
      std::vector<int> m = p_.groups[g];
      std::sort(m.begin(), m.end());
      if (m.empty() || m.front() < 0 || m.back() >= n_)
        problem("group " + std::to_string(g) + " names a rank out of range (" + std::to_string(n_) + " ranks)");
      else if (std::adjacent_find(m.begin(), m.end()) != m.end())
        problem("group " + std::to_string(g) + " names a rank twice");
    }
    hints();
    rank_of_.resize(p_.ops.size());
    for (int r = 0; r < n_; ++r)
      for (int i = 0; i < p_.op_count(r); ++i) {
        rank_of_[p_.rank_begin[r] + i] = r;
        const Operation& o = p_.op(r, i);
        const auto peer_ok = [&](int32_t peer, bool used, const char* dir) {
          if (!used && peer != kNone) problem(op_text(r, i) + " names a peer to " + dir + " but does not " + dir);
          else if (used && (peer < 0 || peer >= n_))
            problem(op_text(r, i) + " has peer " + std::to_string(peer) + " to " + dir + ", out of range (" +
                    std::to_string(n_) + " ranks)");
          else if (used && peer == r) problem(op_text(r, i) + " would " + dir + " to itself");
        };
        peer_ok(o.send_peer, sends(o.kind), "send");
        peer_ok(o.recv_peer, receives(o.kind), "receive");
        if (in_network(o.kind)) {
          if (o.group < 0 || o.group >= static_cast<int>(p_.groups.size()))
            problem(op_text(r, i) + " names group " + std::to_string(o.group) + ", which does not exist");
          else if (std::find(p_.groups[o.group].begin(), p_.groups[o.group].end(), r) == p_.groups[o.group].end())
            problem(op_text(r, i) + " is in group " + std::to_string(o.group) + ", which rank " + std::to_string(r) +
                    " is not a member of");
        } else if (o.group != kNone)
          problem(op_text(r, i) + " names a group but is not an in-network operation");
        if (!engine_can(o.engine, o.kind))
          problem(op_text(r, i) + " runs on the " + engine_name(o.engine) + " engine, which cannot do " +
                  op_name(o.kind));
        const bool need_src = o.kind == OpKind::Send || o.kind == OpKind::Copy || o.kind == OpKind::Reduce;
        const bool rrs = o.kind == OpKind::RecvReduceSend;
        const bool need_dst = (receives(o.kind) && !rrs) || o.kind == OpKind::Copy || o.kind == OpKind::Reduce;
        const bool reduces = rrs || o.kind == OpKind::RecvReduceCopy || o.kind == OpKind::RecvReduceCopySend;
        const bool may_src = need_src || reduces || in_network(o.kind), may_dst = need_dst || rrs || in_network(o.kind);
        if (rrs && o.src.empty() && o.dst.empty()) problem(op_text(r, i) + " names no chunk to add to what it receives");
        if (!may_src && !o.src.empty()) problem(op_text(r, i) + " names a src chunk it does not read");
        if (!may_dst && !o.dst.empty()) problem(op_text(r, i) + " names a dst chunk it does not write");
        const bool s = ref_ok(r, i, "src", o.src, need_src), d = ref_ok(r, i, "dst", o.dst, need_dst);
        if (o.kind == OpKind::Barrier && !(o.src.empty() && o.dst.empty()))
          problem(op_text(r, i) + " is a barrier and names a chunk; a barrier moves no data");
        else if (in_network(o.kind) && o.kind != OpKind::Barrier && o.src.empty() && o.dst.empty())
          problem(op_text(r, i) + " neither contributes nor receives a chunk");
        if (s && d && !o.src.empty() && !o.dst.empty() && o.src.count != o.dst.count)
          problem(op_text(r, i) + " reads " + std::to_string(o.src.count) + " chunks but writes " +
                  std::to_string(o.dst.count));
        if (uint64_t{o.dep_begin} + o.dep_count > p_.deps.size()) {
          problem(op_text(r, i) + "'s dependencies lie outside the program's dependency list");
          continue;
        }
        for (uint32_t k = 0; k < o.dep_count; ++k) {
          const uint32_t dep = p_.deps_of(o)[k];
          if (dep >= static_cast<uint32_t>(p_.op_count(r)) || dep == static_cast<uint32_t>(i))
            problem(op_text(r, i) + " depends on operation " + std::to_string(dep) + ", which " +
                    (dep == static_cast<uint32_t>(i) ? "is itself" : "rank " + std::to_string(r) + " does not have"));
        }
      }
    return out_.problems.empty();
  }

  // Link hints and dataflow issue are the NICs' tables' (program.h).
  void hints() {
    const auto other = std::find_if(p_.ops.begin(), p_.ops.end(),
                                    [](const Operation& o) { return o.engine != Engine::NicTable; });
    if ((p_.dataflow || !p_.links.empty()) && other != p_.ops.end())
      problem(std::string("only the NICs' schedule tables read dataflow issue and link hints, and the program has ") +
              engine_name(other->engine) + " operations");
    std::set<std::array<int32_t, 3>> hinted;
    for (size_t k = 0; k < p_.links.size(); ++k) {
      const LinkHint& h = p_.links[k];
      const std::string what = "the link hint of rank " + std::to_string(h.rank) + " to rank " + std::to_string(h.peer);
      if (h.rank < 0 || h.rank >= n_ || h.peer < 0 || h.peer >= n_)
        problem(what + " names a rank out of range (" + std::to_string(n_) + " ranks)");
      else if (h.rank == h.peer)
        problem(what + " leads a rank to itself");
      if (h.channel < kNone) problem(what + " names channel " + std::to_string(h.channel));
      if (h.ports.empty()) problem(what + " names no port");
      if (!hinted.insert({h.rank, h.peer, h.channel}).second)
        problem(what + (h.channel == kNone ? "" : " on channel " + std::to_string(h.channel)) + " is given twice");
    }
  }

  // The collective's buffers: every rank the same input and output chunks,
  // in the proportions the collective needs.
  bool sizes() {
    const uint32_t in = p_.buffers[0].input, out = p_.buffers[0].output, n = static_cast<uint32_t>(n_);
    for (int r = 1; r < n_; ++r)
      if (p_.buffers[r].input != in || p_.buffers[r].output != out) {
        problem("rank " + std::to_string(r) + "'s input and output chunks (" + std::to_string(p_.buffers[r].input) +
                ", " + std::to_string(p_.buffers[r].output) + ") differ from rank 0's (" + std::to_string(in) + ", " +
                std::to_string(out) + ")");
        return false;
      }
    const std::string c = collective_name(p_.collective);
    // The larger buffer holds `times` the smaller one's chunks.
    const auto need = [&](uint32_t times, const char* small, uint32_t s, const char* large, uint32_t l) {
      if (l != times * s)
        problem(c + " on " + std::to_string(n_) + " ranks needs " + large + " chunks = " + std::to_string(times) + " x " +
                small + " chunks (" + std::to_string(s) + "), not " + std::to_string(l));
    };
    switch (buffer_shape(p_.collective)) {
      case Collective::AllReduce:
      case Collective::Broadcast:
        if (!(p_.in_place && out == 0)) need(1, "input", in, "output", out);
        break;
      case Collective::ReduceScatter: need(n, "output", out, "input", in); break;
      case Collective::AllGather: need(n, "input", in, "output", out); break;
      case Collective::AllToAll:
        need(1, "input", in, "output", out);
        if (in % n != 0)
          problem("alltoall on " + std::to_string(n_) + " ranks needs input chunks in whole blocks per rank, a " +
                  "multiple of " + std::to_string(n_) + ", not " + std::to_string(in));
        if (p_.in_place) problem("an alltoall runs out of place: a rank's output would overwrite input it has yet to send");
        break;
      default: break;  // buffer_shape gives the unrooted collectives only
    }
    chunks_ = in;
    if (chunks_ == 0) problem("the program's input has no chunks");
    return out_.problems.empty();
  }

  // ---- Stage 2: sends pair with receives, group members with each other ----
  bool pairing() {
    // Each side's (from, to, channel) keys, sorted: a pair's sends and
    // receives are counted side by side, pairs in the triple's order.
    std::vector<uint64_t> sent, received;
    std::map<std::array<int, 3>, int> members;  // (group, channel, rank) -> operations
    for (int r = 0; r < n_; ++r)
      for (int i = 0; i < p_.op_count(r); ++i) {
        const Operation& o = p_.op(r, i);
        if (sends(o.kind)) sent.push_back(pair_key(r, o.send_peer, o.channel));
        if (receives(o.kind)) received.push_back(pair_key(o.recv_peer, r, o.channel));
        if (in_network(o.kind)) ++members[{o.group, o.channel, r}];
      }
    std::sort(sent.begin(), sent.end());
    std::sort(received.begin(), received.end());
    for (size_t a = 0, b = 0; a < sent.size() || b < received.size();) {
      const uint64_t k = b == received.size() || (a < sent.size() && sent[a] < received[b]) ? sent[a] : received[b];
      int c[2] = {0, 0};
      for (; a < sent.size() && sent[a] == k; ++a) ++c[0];
      for (; b < received.size() && received[b] == k; ++b) ++c[1];
      if (c[0] == c[1]) continue;
      const std::string from = std::to_string(pair_from(k)), to = std::to_string(pair_to(k));
      problem("rank " + from + " sends " + std::to_string(c[0]) + " times to rank " + to + " on channel " +
              std::to_string(pair_channel(k)) + ", but rank " + to + " receives " + std::to_string(c[1]) +
              " times from rank " + from + " on it");
    }
    for (const auto& [k, count] : members)
      for (int m : p_.groups[k[0]]) {
        const auto it = members.find({k[0], k[1], m});
        const int other = it == members.end() ? 0 : it->second;
        if (other != count) {
          problem("rank " + std::to_string(k[2]) + " has " + std::to_string(count) + " operations in group " +
                  std::to_string(k[0]) + " on channel " + std::to_string(k[1]) + ", but member rank " +
                  std::to_string(m) + " has " + std::to_string(other));
          break;
        }
      }
    return out_.problems.empty();
  }

  // ---- Stage 3: no rank's operations wait for each other in a cycle ----
  // Predecessors of global operation g on its rank: its dependencies and the
  // operation before it in its queue.
  Lists::Range preds(int g) const { return preds_[static_cast<size_t>(g)]; }

  bool acyclic() {
    preds_.items.reserve(p_.deps.size() + p_.ops.size());
    for (int r = 0; r < n_; ++r) {
      const int base = static_cast<int>(p_.rank_begin[r]);
      std::map<uint16_t, int> last;  // queue -> its latest operation
      for (int i = 0; i < p_.op_count(r); ++i) {
        const int g = base + i;
        const Operation& o = p_.ops[g];
        for (uint32_t k = 0; k < o.dep_count; ++k) preds_.items.push_back(base + static_cast<int>(p_.deps_of(o)[k]));
        const auto it = last.find(o.queue);
        if (it != last.end()) preds_.items.push_back(it->second);
        preds_.close();
        last[o.queue] = g;
      }
    }
    succ_ = preds_.reversed();
    // Kahn's algorithm per rank; what remains holds a cycle.
    for (int r = 0; r < n_; ++r) {
      const int base = static_cast<int>(p_.rank_begin[r]), count = p_.op_count(r);
      std::vector<int> indeg(count, 0);
      for (int i = 0; i < count; ++i) indeg[i] = static_cast<int>(preds_.size(static_cast<size_t>(base + i)));
      std::vector<int> ready;
      for (int i = 0; i < count; ++i)
        if (!indeg[i]) ready.push_back(i);
      int seen = 0;
      while (!ready.empty()) {
        const int i = ready.back();
        ready.pop_back();
        ++seen;
        for (int s : succ_[static_cast<size_t>(base + i)])
          if (!--indeg[s - base]) ready.push_back(s - base);
      }
      if (seen == count) continue;
      // Walk back through unresolved predecessors until one repeats.
      int g = base + static_cast<int>(std::find_if(indeg.begin(), indeg.end(), [](int d) { return d > 0; }) - indeg.begin());
      std::vector<int> path;
      while (std::find(path.begin(), path.end(), g) == path.end()) {
        path.push_back(g);
        for (int q : preds(g))
          if (indeg[q - base] > 0) {
            g = q;
            break;
          }
      }
      path.erase(path.begin(), std::find(path.begin(), path.end(), g));
      std::reverse(path.begin(), path.end());  // in the order they wait for each other, lowest first
      std::rotate(path.begin(), std::min_element(path.begin(), path.end()), path.end());
      std::string s;
      for (int q : path) s += (s.empty() ? "" : ", ") + std::to_string(q - base);
      problem("rank " + std::to_string(r) + "'s operations " + s + " wait for each other in a cycle");
    }
    return out_.problems.empty();
  }

  // ---- Stage 4: the run ----
  struct Message {
    int op;  // global index of the sending operation
    std::vector<Contribs> chunks;
  };

  int slot(int r, Buffer b, uint32_t k) const {
    const Buffers& s = p_.buffers[r];
    const uint32_t in = s.input, out = s.output;
    if (!p_.in_place) {
      const uint32_t base = b == Buffer::Input ? 0 : b == Buffer::Output ? in : in + out;
      return static_cast<int>(slot_base_[r] + base + k);
    }
    switch (buffer_shape(p_.collective)) {
      case Collective::AllReduce:
      case Collective::Broadcast:
      case Collective::AllToAll:  // refused in place (sizes)
        return static_cast<int>(slot_base_[r] + (b == Buffer::Scratch ? std::max(in, out) : 0) + k);
      case Collective::AllGather:  // the input is rank r's window of the output
        return static_cast<int>(slot_base_[r] + (b == Buffer::Scratch ? out : b == Buffer::Input ? r * in : 0) + k);
      case Collective::ReduceScatter:  // the output is rank r's window of the input
        return static_cast<int>(slot_base_[r] + (b == Buffer::Scratch ? in : b == Buffer::Output ? r * out : 0) + k);
      default: break;
    }
    return -1;
  }
  uint32_t region(int r) const {
    const Buffers& s = p_.buffers[r];
    if (!p_.in_place) return s.input + s.output + s.scratch;
    const Collective shape = buffer_shape(p_.collective);
    const bool ag = shape == Collective::AllGather, rs = shape == Collective::ReduceScatter;
    return (ag ? s.output : rs ? s.input : std::max(s.input, s.output)) + s.scratch;
  }

  std::vector<Contribs> read(int g, const ChunkRef& c) {
    const int r = rank_of_[g];
    std::vector<Contribs> v;
    for (uint32_t j = 0; j < c.count; ++j) {
      v.push_back(state_[slot(r, c.buf, c.index + j)]);
      if (v.back().empty() && !reported_empty_) {
        reported_empty_ = true;
        problem(op_text(g) + " reads " + buffer_word(c.buf) + " chunk " + std::to_string(c.index + j) +
                ", which holds nothing yet");
      }
    }
    return v;
  }
  void write(int g, const ChunkRef& c, const std::vector<Contribs>& v) {
    for (uint32_t j = 0; j < c.count && j < v.size(); ++j) state_[slot(rank_of_[g], c.buf, c.index + j)] = v[j];
  }
  void write(int g, const ChunkRef& c, std::vector<Contribs>&& v) {
    for (uint32_t j = 0; j < c.count && j < v.size(); ++j) state_[slot(rank_of_[g], c.buf, c.index + j)] = std::move(v[j]);
  }
  // Messages sent and not yet received, per (from, to, channel): a pair's
  // queue exists only while it holds one (a program may name n^2 pairs).
  bool has_message(int from, int to, int ch) const { return fifos_.count(pair_key(from, to, ch)) != 0; }
  Message take_message(int from, int to, int ch) {
    const auto it = fifos_.find(pair_key(from, to, ch));
    Message m = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) fifos_.erase(it);
    return m;
  }


  void execute(int g) {
    const Operation& o = p_.ops[g];
    const int r = rank_of_[g];
    std::vector<Contribs> got, result;
    if (receives(o.kind)) {
      Message m = take_message(o.recv_peer, r, o.channel);
      const uint16_t count = o.dst.empty() ? o.src.count : o.dst.count;  // rrs may name only its operand
      if (m.chunks.size() != count)
        problem(op_text(g) + " receives " + std::to_string(count) + " chunks where " + op_text(m.op) + " sent " +
                std::to_string(m.chunks.size()));
      got = std::move(m.chunks);
      got.resize(count);
    }
    switch (o.kind) {
      case OpKind::Send: result = read(g, o.src); break;
      case OpKind::Recv:
      case OpKind::RecvCopySend: result = std::move(got); break;
      case OpKind::RecvReduceSend:
      case OpKind::RecvReduceCopy:
      case OpKind::RecvReduceCopySend:
      case OpKind::Reduce: {
        result = read(g, o.kind != OpKind::Reduce && !o.src.empty() ? o.src : o.dst);
        const std::vector<Contribs> other = o.kind == OpKind::Reduce ? read(g, o.src) : std::move(got);
        for (size_t j = 0; j < result.size(); ++j) result[j] = merged(result[j], other[j]);
        break;
      }
      case OpKind::Copy: result = read(g, o.src); break;
      default: break;
    }
    const bool writes = o.kind != OpKind::Send && o.kind != OpKind::RecvReduceSend && !in_network(o.kind);
    if (writes && sends(o.kind)) write(g, o.dst, result);
    else if (writes) write(g, o.dst, std::move(result));
    if (sends(o.kind)) fifos_[pair_key(r, o.send_peer, o.channel)].push_back({g, std::move(result)});
    done_[g] = 1;
  }

  // Runs the group operation at `slot` once every member has reached it.
  void execute_group(const std::vector<int>& members) {
    const int first = members.front();
    const Operation& o0 = p_.ops[first];
    std::vector<Contribs> sum;
    int contributors = 0;
    uint16_t count = 0;
    for (int g : members) {
      const Operation& o = p_.ops[g];
      const uint16_t c = o.src.empty() ? o.dst.count : o.src.count;
      if (o.kind != o0.kind || (count && c != count))
        problem(op_text(g) + " does not match " + op_text(first) + ", its partner in group " +
                std::to_string(o0.group) + " on channel " + std::to_string(o0.channel));
      count = c;
      if (o.src.empty()) continue;
      ++contributors;
      const std::vector<Contribs> v = read(g, o.src);
      if (sum.empty()) sum = v;
      else
        for (size_t j = 0; j < sum.size() && j < v.size(); ++j) sum[j] = merged(sum[j], v[j]);
    }
    if (o0.kind == OpKind::MulticastWrite && contributors != 1)
      problem(op_text(first) + " is a multicast write with " + std::to_string(contributors) +
              " writers in its group; it needs exactly one");
    for (int g : members) {
      if (!p_.ops[g].dst.empty()) write(g, p_.ops[g].dst, sum);
      done_[g] = 1;
    }
  }

  // The operation g waits for, or -1.
  int blocker(int g) const {
    for (int q : preds(g))
      if (!done_[q]) return q;
    const Operation& o = p_.ops[g];
    const int r = rank_of_[g];
    if (receives(o.kind)) {
      for (int i = 0; i < p_.op_count(o.recv_peer); ++i) {
        const int s = static_cast<int>(p_.rank_begin[o.recv_peer]) + i;
        if (!done_[s] && sends(p_.ops[s].kind) && p_.ops[s].send_peer == r && p_.ops[s].channel == o.channel) return s;
      }
      return -1;
    }
    if (in_network(o.kind))
      for (int m : group_members_.at(group_pos_[g]))
        if (!ready_[m]) return m;
    return -1;
  }

  void deadlock() {
    int g = static_cast<int>(std::find(done_.begin(), done_.end(), 0) - done_.begin());
    std::vector<int> path;
    while (g >= 0 && std::find(path.begin(), path.end(), g) == path.end()) {
      path.push_back(g);
      g = blocker(g);
    }
    const size_t left = static_cast<size_t>(std::count(done_.begin(), done_.end(), 0));
    std::string s = "the program deadlocks with " + std::to_string(left) + " operations never run: ";
    if (g < 0) {
      const Operation& o = p_.ops[path.back()];
      s += op_text(path.back()) + " waits for " +
           (receives(o.kind) ? "a message from rank " + std::to_string(o.recv_peer) + " on channel " +
                                   std::to_string(o.channel) + " that is never sent"
                             : std::string("nothing it can name"));
    } else {
      path.erase(path.begin(), std::find(path.begin(), path.end(), g));
      path.push_back(g);
      for (size_t i = 0; i < path.size(); ++i) s += (i ? " waits for " : "") + op_text(path[i]);
    }
    problem(s);
  }

  void simulate() {
    slot_base_.assign(n_ + 1, 0);
    for (int r = 0; r < n_; ++r) slot_base_[r + 1] = slot_base_[r] + region(r);
    state_.assign(slot_base_[n_], {});
    for (int r = 0; r < n_; ++r)
      for (uint32_t k = 0; k < chunks_; ++k) state_[slot(r, Buffer::Input, k)] = {Run{key(r, k), key(r, k) + 1}};
    // Group operations: the k-th of a rank in (group, channel) meets the k-th of every member.
    group_pos_.assign(p_.ops.size(), -1);
    std::map<std::array<int, 3>, int> seen;  // (group, channel, rank) -> operations so far
    std::map<std::array<int, 3>, int> index;  // (group, channel, position) -> group_members_ entry
    for (size_t g = 0; g < p_.ops.size(); ++g) {
      const Operation& o = p_.ops[g];
      if (!in_network(o.kind)) continue;
      const int pos = seen[{o.group, o.channel, rank_of_[g]}]++;
      const auto [it, fresh] = index.try_emplace({o.group, o.channel, pos}, static_cast<int>(group_members_.size()));
      if (fresh) group_members_.emplace_back();
      group_members_[it->second].push_back(static_cast<int>(g));
      group_pos_[g] = it->second;
    }
    done_.assign(p_.ops.size(), 0);
    ready_.assign(p_.ops.size(), 0);
    // Sweeps over the operations in order, each running every operation that
    // may run when the sweep reaches it, until a sweep runs none; an
    // operation is looked at only when its last predecessor has run (and,
    // if it receives, again when a message arrives): in this sweep if it
    // lies ahead, else in the next. The pairing of receives with messages
    // is a full sweep's, in time linear in the operations.
    std::vector<uint32_t> waiting(p_.ops.size(), 0);
    for (size_t g = 0; g < p_.ops.size(); ++g) waiting[g] = preds_.size(g);
    std::vector<int> reached(group_members_.size(), 0);  // members ready, per group operation
    std::unordered_map<uint64_t, std::vector<int>> parked;  // pair_key -> receives waiting for a message
    IndexSet sweep(p_.ops.size()), later(p_.ops.size());
    for (size_t g = 0; g < p_.ops.size(); ++g)
      if (!waiting[g]) sweep.insert(g);
    int at = -1;  // where the sweep is
    const auto look = [&](int g) { (g > at ? sweep : later).insert(static_cast<size_t>(g)); };
    const auto ran = [&](int g) {
      for (int s : succ_[static_cast<size_t>(g)])
        if (!--waiting[s]) look(s);
      const Operation& o = p_.ops[g];
      if (!sends(o.kind)) return;
      const auto it = parked.find(pair_key(rank_of_[g], o.send_peer, o.channel));
      if (it == parked.end()) return;
      for (int w : it->second) look(w);
      parked.erase(it);
    };
    while (!sweep.empty() || !later.empty()) {
      if (sweep.empty()) {
        std::swap(sweep, later);
        at = -1;
      }
      const int g = static_cast<int>(sweep.next(static_cast<size_t>(at + 1)));
      sweep.erase(static_cast<size_t>(g));
      if (done_[g]) continue;
      at = g;
      const Operation& o = p_.ops[g];
      if (receives(o.kind) && !has_message(o.recv_peer, rank_of_[g], o.channel)) {
        parked[pair_key(o.recv_peer, rank_of_[g], o.channel)].push_back(g);
        continue;
      }
      if (in_network(o.kind)) {
        if (ready_[g]) continue;
        ready_[g] = 1;
        const std::vector<int>& m = group_members_[group_pos_[g]];
        if (++reached[group_pos_[g]] < static_cast<int>(m.size())) continue;
        execute_group(m);
        for (int x : m) ran(x);
      } else {
        execute(g);
        ran(g);
      }
    }
    if (std::find(done_.begin(), done_.end(), 0) != done_.end()) deadlock();
  }

  // ---- Stage 5: what each rank's output holds ----
  void result() {
    const uint32_t n = static_cast<uint32_t>(n_);
    const Collective shape = buffer_shape(p_.collective);
    const uint32_t out_chunks = shape == Collective::AllGather       ? n * chunks_
                                : shape == Collective::ReduceScatter ? chunks_ / n
                                                                     : chunks_;
    const uint32_t root = static_cast<uint32_t>(p_.root);
    for (int r = 0; r < n_; ++r)
      for (uint32_t k = 0; has_result(p_, r) && k < out_chunks; ++k) {
        Contribs want;
        const uint64_t rk = static_cast<uint64_t>(r);
        const auto one = [&](uint64_t q, uint64_t c) { want = {Run{key(q, c), key(q, c) + 1}}; };
        const auto every = [&](uint64_t c) { want = {Run{key(0, c), key(0, c) + n}}; };  // chunk c of every rank
        switch (p_.collective) {
          case Collective::AllReduce:
          case Collective::Reduce: every(k); break;
          case Collective::ReduceScatter: every(rk * out_chunks + k); break;
          case Collective::Scatter: one(root, rk * out_chunks + k); break;
          case Collective::AllGather:
          case Collective::Gather: one(k / chunks_, k % chunks_); break;  // rank q's chunk c is output chunk q x chunks + c
          case Collective::Broadcast: one(root, k); break;
          case Collective::AllToAll: {  // rank s's block for r: its input chunks r x per + c
            const uint32_t per = chunks_ / n;
            one(k / per, rk * per + k % per);
            break;
          }
        }
        const Contribs& runs = state_[slot(r, Buffer::Output, k)];
        if (runs == want) continue;  // what a correct program's every chunk says: nothing to report
        const std::string where = "rank " + std::to_string(r) + "'s output chunk " + std::to_string(k);
        const Keys have = keys_of(runs), wanted = keys_of(want);
        if (have.empty()) {
          problem(where + " is never " + (wanted.size() > 1 ? "reduced or " : "") + "delivered");
          continue;
        }
        for (size_t j = 1; j < have.size(); ++j)
          if (have[j] == have[j - 1] && (j == 1 || have[j - 2] != have[j]))
            problem(where + " counts " + key_text(have[j]) + " twice");
        Keys missing, extra;
        Keys uniq = have;
        uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
        std::set_difference(wanted.begin(), wanted.end(), uniq.begin(), uniq.end(), std::back_inserter(missing));
        std::set_difference(uniq.begin(), uniq.end(), wanted.begin(), wanted.end(), std::back_inserter(extra));
        if (!missing.empty())
          problem(where + " lacks " + key_text(missing.front()) +
                  (missing.size() > 1 ? " and " + std::to_string(missing.size() - 1) + " more" : ""));
        if (!extra.empty())
          problem(where + " holds " + key_text(extra.front()) + ", which does not belong there" +
                  (extra.size() > 1 ? " (and " + std::to_string(extra.size() - 1) + " more)" : ""));
      }
    if (!out_.problems.empty()) return;
    switch (p_.collective) {
      case Collective::AllReduce: out_.summary = "each rank's result holds each element of every rank exactly once"; break;
      case Collective::ReduceScatter:
        out_.summary = "each rank's result holds its own part of every rank's input, each element exactly once";
        break;
      case Collective::AllGather: out_.summary = "each rank's result holds every rank's input exactly once"; break;
      case Collective::Broadcast: out_.summary = "each rank's result holds the root's input exactly once"; break;
      case Collective::AllToAll: out_.summary = "each rank's result holds every rank's block for it exactly once"; break;
      case Collective::Reduce: out_.summary = "the root's result holds each element of every rank exactly once"; break;
      case Collective::Gather: out_.summary = "the root's result holds every rank's input exactly once"; break;
      case Collective::Scatter: out_.summary = "each rank's result holds its own part of the root's input exactly once"; break;
    }
  }

  const Program& p_;
  int n_;
  uint32_t chunks_ = 0;  // input chunks per rank
  ProgramCheck out_;
  std::vector<int> rank_of_, group_pos_;
  Lists preds_, succ_;  // [operation]: what it waits for on its rank; what waits for it
  std::vector<std::vector<int>> group_members_;
  std::vector<uint32_t> slot_base_;
  std::vector<Contribs> state_;
  std::vector<char> done_, ready_;
  std::unordered_map<uint64_t, std::deque<Message>> fifos_;  // pair_key ->
  bool reported_empty_ = false;
};

}  // namespace

ProgramCheck check_program(const Program& p) { return Checker(p).run(); }

}  // namespace incsim::collectives
