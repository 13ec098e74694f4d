#include "collectives/program.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/nearest.h"
#include "core/user_file.h"

namespace incsim::collectives {

namespace {

const char* const kCollectives[] = {"allreduce", "reducescatter", "allgather", "broadcast",
                                    "alltoall",  "reduce",        "gather",    "scatter"};
const char* const kEngines[] = {"cores", "copy", "table", "roce"};
const char* const kProtocols[] = {"simple", "ll", "ll128"};
const char* const kOps[] = {"nop",  "s",     "r",        "rrs",     "rrc",    "rrcs",     "rcs",
                            "cpy",  "re",    "mcast",    "redwrite", "redread", "aggregate", "barrier"};

template <class E, size_t N>
bool parse_name(const char* const (&names)[N], const std::string& s, E& out) {
  for (size_t i = 0; i < N; ++i)
    if (s == names[i]) {
      out = static_cast<E>(i);
      return true;
    }
  return false;
}

template <size_t N>
std::string list(const char* const (&names)[N]) {
  std::string s;
  for (size_t i = 0; i < N; ++i) s += (i ? ", " : "") + std::string(names[i]);
  return s;
}

}  // namespace

const char* collective_name(Collective c) { return kCollectives[static_cast<int>(c)]; }
bool reduces(Collective c) {
  return c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Reduce;
}
bool rooted(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Gather || c == Collective::Scatter;
}
Collective buffer_shape(Collective c) {
  switch (c) {
    case Collective::Reduce: return Collective::AllReduce;
    case Collective::Gather: return Collective::AllGather;
    case Collective::Scatter: return Collective::ReduceScatter;
    default: return c;
  }
}
bool collective_of(const std::string& name, Collective& out) { return parse_name(kCollectives, name, out); }
const char* engine_name(Engine e) { return kEngines[static_cast<int>(e)]; }
const char* protocol_name(Protocol p) { return kProtocols[static_cast<int>(p)]; }
bool protocol_of(const std::string& text, Protocol& out) { return parse_name(kProtocols, to_lower(text), out); }
Protocol parse_protocol(const std::string& text, const std::string& what) {
  Protocol p;
  if (!protocol_of(text, p)) throw UserError(what + " must be simple, ll or ll128, not '" + text + "'");
  return p;
}
const char* op_name(OpKind k) { return kOps[static_cast<int>(k)]; }
char buffer_letter(Buffer b) { return "ios"[static_cast<int>(b)]; }

bool sends(OpKind k) {
  return k == OpKind::Send || k == OpKind::RecvReduceSend || k == OpKind::RecvReduceCopySend ||
         k == OpKind::RecvCopySend;
}
bool receives(OpKind k) {
  return k == OpKind::Recv || k == OpKind::RecvReduceSend || k == OpKind::RecvReduceCopy ||
         k == OpKind::RecvReduceCopySend || k == OpKind::RecvCopySend;
}
bool in_network(OpKind k) { return k >= OpKind::MulticastWrite; }

bool passive(const Operation& o) {
  return (o.kind == OpKind::ReduceRead && o.dst.empty()) || (o.kind == OpKind::MulticastWrite && o.src.empty());
}

bool receives_landing(const Operation& o) {
  return (o.kind == OpKind::MulticastWrite && o.src.empty()) || o.kind == OpKind::ReduceWrite;
}

bool copy_issues(const Operation& o) {
  switch (o.kind) {
    case OpKind::ReduceWrite:
    case OpKind::MulticastWrite: return !o.src.empty();
    case OpKind::ReduceRead: return !o.dst.empty();
    case OpKind::Barrier:
    case OpKind::Send: return true;
    default: return false;
  }
}

std::vector<std::vector<int>> receiving_ops(const Program& p) {
  std::map<std::tuple<int, int, int>, std::vector<int>> receives_from;  // (rank, peer, channel): its receives in order
  for (int r = 0; r < p.ranks; ++r)
    for (int i = 0; i < p.op_count(r); ++i)
      if (const Operation& o = p.op(r, i); receives(o.kind)) receives_from[{r, o.recv_peer, o.channel}].push_back(i);
  std::vector<std::vector<int>> out(static_cast<size_t>(p.ranks));
  std::map<std::tuple<int, int, int>, size_t> sent;
  for (int r = 0; r < p.ranks; ++r) {
    out[static_cast<size_t>(r)].assign(static_cast<size_t>(p.op_count(r)), -1);
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      if (!sends(o.kind)) continue;
      const auto at = std::make_tuple(static_cast<int>(o.send_peer), r, static_cast<int>(o.channel));
      const std::vector<int>& v = receives_from[at];
      const size_t s = sent[at]++;
      if (s >= v.size())
        throw UserError("rank " + std::to_string(r) + " sends to rank " + std::to_string(o.send_peer) + " on channel " +
                        std::to_string(o.channel) + " more often than it receives from it there");
      out[static_cast<size_t>(r)][static_cast<size_t>(i)] = v[s];
    }
  }
  return out;
}

bool engine_can(Engine e, OpKind k) {
  switch (e) {
    case Engine::Cores:  // everything but an aggregator's protocol (NVLS: multimem st, ld_reduce, red)
      return k != OpKind::Aggregate;
    case Engine::CopyEngine:  // moves blocks; cannot add (Klenk §III-B)
      return k == OpKind::Nop || k == OpKind::Send || k == OpKind::Recv || k == OpKind::Copy ||
             k == OpKind::MulticastWrite || k == OpKind::ReduceWrite || k == OpKind::ReduceRead || k == OpKind::Barrier;
    case Engine::NicTable:  // Reduce entries add and forward, Gather entries forward (MultiTree §IV-A)
      return !in_network(k) && k != OpKind::Copy && k != OpKind::Reduce;
    case Engine::RoceNic:  // RDMA writes between hosts, which add what they receive; NetReduce's aggregation
      return k == OpKind::Nop || k == OpKind::Send || k == OpKind::Recv || k == OpKind::RecvReduceSend ||
             k == OpKind::RecvReduceCopy || k == OpKind::RecvReduceCopySend || k == OpKind::RecvCopySend ||
             k == OpKind::Aggregate;
  }
  return false;
}

bool Operation::operator==(const Operation& o) const {
  return kind == o.kind && engine == o.engine && proto == o.proto && channel == o.channel && queue == o.queue &&
         send_peer == o.send_peer && recv_peer == o.recv_peer && group == o.group && src == o.src && dst == o.dst &&
         dep_begin == o.dep_begin && dep_count == o.dep_count && timestep == o.timestep;
}

bool Program::operator==(const Program& o) const {
  return name == o.name && collective == o.collective && ranks == o.ranks && root == o.root &&
         in_place == o.in_place && tree_nodes == o.tree_nodes && multimem == o.multimem && protocol_by_size == o.protocol_by_size &&
         data_channels == o.data_channels && dataflow == o.dataflow && links == o.links && buffers == o.buffers && groups == o.groups && ops == o.ops &&
         rank_begin == o.rank_begin && deps == o.deps;
}

ChunkRef chunk(Buffer b, uint32_t index, uint16_t count) {
  ChunkRef c;
  c.buf = b;
  c.index = index;
  c.count = count;
  return c;
}

Operation make_op(OpKind k, Engine e, uint16_t channel, uint16_t queue) {
  Operation o;
  o.kind = k;
  o.engine = e;
  o.channel = channel;
  o.queue = queue;
  return o;
}

bool has_result(const Program& p, int r) {
  return (p.collective != Collective::Reduce && p.collective != Collective::Gather) || r == p.root;
}

uint32_t chunk_limit(const Program& p, int r, Buffer b) {
  const Buffers& s = p.buffers[r];
  if (b == Buffer::Input) return s.input;
  if (b == Buffer::Scratch) return s.scratch;
  const Collective shape = buffer_shape(p.collective);
  const bool aliased = p.in_place && (shape == Collective::AllReduce || shape == Collective::Broadcast);
  return aliased ? std::max(s.input, s.output) : s.output;
}

ProgramBuilder::ProgramBuilder(std::string name, Collective c, int ranks, bool in_place) {
  p_.name = std::move(name);
  p_.collective = c;
  p_.ranks = ranks;
  p_.in_place = in_place;
  p_.buffers.resize(ranks);
  p_.rank_begin.assign(1, 0);
}

void ProgramBuilder::begin_rank(int r, Buffers b) {
  while (rank_ < r) {
    ++rank_;
    if (rank_ > 0) p_.rank_begin.push_back(static_cast<uint32_t>(p_.ops.size()));
  }
  p_.buffers[r] = b;
}

int ProgramBuilder::add(Operation op, const std::vector<uint32_t>& deps) {
  if (deps.size() > 65535) throw UserError("an operation has more than 65535 dependencies");
  // Operations and dependencies are indexed by 32 bits (rank_begin,
  // dep_begin): beyond, they would wrap silently on a machine with the memory.
  if (p_.ops.size() >= UINT32_MAX || p_.deps.size() + deps.size() > UINT32_MAX)
    throw UserError("program '" + p_.name + "' on " + std::to_string(p_.ranks) +
                    " ranks has more than 4,294,967,295 operations or dependencies, more than a program indexes; "
                    "fewer GPUs or another algorithm make fewer");
  op.dep_begin = static_cast<uint32_t>(p_.deps.size());
  op.dep_count = static_cast<uint16_t>(deps.size());
  p_.deps.insert(p_.deps.end(), deps.begin(), deps.end());
  p_.ops.push_back(op);
  return static_cast<int>(p_.ops.size() - p_.rank_begin.back()) - 1;
}

int ProgramBuilder::add_group(std::vector<int> ranks) {
  p_.groups.push_back(std::move(ranks));
  return static_cast<int>(p_.groups.size()) - 1;
}

Program ProgramBuilder::build() {
  begin_rank(p_.ranks - 1, p_.buffers.empty() ? Buffers{} : p_.buffers.back());
  p_.rank_begin.push_back(static_cast<uint32_t>(p_.ops.size()));
  return std::move(p_);
}

// ---- The text format ----

namespace {

void write_ref(std::ostream& os, const char* key, const ChunkRef& c) {
  if (c.empty()) return;
  os << ' ' << key << ' ' << buffer_letter(c.buf) << c.index;
  if (c.count != 1) os << ':' << c.count;
}

}  // namespace

std::string write_program(const Program& p) {
  std::ostringstream os;
  os << "# incsim collective program (docs/programs.md)\n";
  os << "program 1\n";
  os << "name " << p.name << '\n';
  os << "collective " << collective_name(p.collective) << " ranks " << p.ranks << " root " << p.root << " inplace "
     << (p.in_place ? 1 : 0) << '\n';
  if (p.tree_nodes) os << "treenodes " << p.tree_nodes << '\n';
  if (p.multimem) os << "multimem 1\n";
  if (p.protocol_by_size) os << "protocol auto\n";
  if (p.data_channels) os << "datachannels " << p.data_channels << '\n';
  if (p.dataflow) os << "dataflow 1\n";
  for (const LinkHint& h : p.links) {
    os << "link " << h.rank << " to " << h.peer;
    if (h.channel != kNone) os << " ch " << h.channel;
    os << " ports ";
    for (size_t k = 0; k < h.ports.size(); ++k) os << (k ? "," : "") << h.ports[k];
    os << '\n';
  }
  for (const auto& g : p.groups) {
    os << "group";
    for (int r : g) os << ' ' << r;
    os << '\n';
  }
  for (int r = 0; r < p.ranks; ++r) {
    const Buffers& b = p.buffers[r];
    os << "rank " << r << " input " << b.input << " output " << b.output << " scratch " << b.scratch << '\n';
    for (int i = 0; i < p.op_count(r); ++i) {
      const Operation& o = p.op(r, i);
      os << i << ' ' << op_name(o.kind) << ' ' << engine_name(o.engine);
      if (o.proto != Protocol::Simple) os << " proto " << protocol_name(o.proto);
      os << " ch " << o.channel << " q " << o.queue;
      if (o.send_peer != kNone) os << " to " << o.send_peer;
      if (o.recv_peer != kNone) os << " from " << o.recv_peer;
      if (o.group != kNone) os << " group " << o.group;
      if (o.timestep) os << " timestep " << o.timestep;
      write_ref(os, "src", o.src);
      write_ref(os, "dst", o.dst);
      if (o.dep_count) {
        os << " after ";
        for (uint32_t d = 0; d < o.dep_count; ++d) os << (d ? "," : "") << p.deps[o.dep_begin + d];
      }
      os << '\n';
    }
  }
  return os.str();
}

namespace {

// One line's tokens and where it came from, for errors.
class LineReader {
 public:
  LineReader(const std::string& file, int line, const std::string& text) : file_(file), line_(line) {
    std::istringstream is(text);
    for (std::string t; is >> t;) tokens_.push_back(t);
  }
  bool empty() const { return tokens_.empty(); }
  bool done() const { return pos_ == tokens_.size(); }
  const std::string& peek() const { return tokens_[pos_]; }
  [[noreturn]] void fail(const std::string& what) const {
    throw UserError(file_ + ":" + std::to_string(line_) + ": " + what);
  }
  std::string word(const char* what) {
    if (done()) fail("expected " + std::string(what) + " at the end of the line");
    return tokens_[pos_++];
  }
  void expect(const char* key) {
    const std::string w = word(key);
    if (w != key) fail("expected \"" + std::string(key) + "\", found \"" + w + "\"");
  }
  long integer(const std::string& s, const char* what, long lo, long hi) const {
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0') fail(std::string(what) + " \"" + s + "\" is not a whole number");
    if (v < lo || v > hi)
      fail(std::string(what) + " " + s + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  long number(const char* what, long lo, long hi) { return integer(word(what), what, lo, hi); }
  long keyed(const char* key, long lo, long hi) {
    expect(key);
    return number(key, lo, hi);
  }
  void end() const {
    if (!done()) fail("unexpected \"" + tokens_[pos_] + "\" at the end of the line");
  }

 private:
  std::string file_;
  int line_;
  std::vector<std::string> tokens_;
  size_t pos_ = 0;
};

ChunkRef parse_ref(LineReader& in, const char* key) {
  const std::string s = in.word(key);
  ChunkRef c;
  const size_t at = std::string("ios").find(s.empty() ? '?' : s[0]);
  if (at == std::string::npos) in.fail(std::string(key) + " \"" + s + "\" must start with i, o or s (input, output, scratch)");
  c.buf = static_cast<Buffer>(at);
  const size_t colon = s.find(':');
  c.index = static_cast<uint32_t>(in.integer(s.substr(1, colon == std::string::npos ? std::string::npos : colon - 1),
                                             "chunk index", 0, 0x7fffffff));
  c.count = colon == std::string::npos ? 1 : static_cast<uint16_t>(in.integer(s.substr(colon + 1), "chunk count", 1, 65535));
  return c;
}

}  // namespace

Program read_program(const std::string& text, const std::string& file) {
  std::istringstream is(text);
  std::string line;
  int line_no = 0;
  Program p;
  bool header = false, have_name = false, have_coll = false;
  std::unique_ptr<ProgramBuilder> b;
  int rank = -1;
  while (std::getline(is, line)) {
    ++line_no;
    const size_t hash = line.find('#');
    LineReader in(file, line_no, hash == std::string::npos ? line : line.substr(0, hash));
    if (in.empty()) continue;
    const std::string key = in.peek();
    if (!header) {
      in.expect("program");
      if (in.number("version", 0, 1000) != 1) in.fail("only version 1 of the program format exists");
      in.end();
      header = true;
      continue;
    }
    if (key == "name" && !have_name) {
      in.word("name");
      while (!in.done()) p.name += (p.name.empty() ? "" : " ") + in.word("a name");
      have_name = true;
    } else if (key == "collective" && !have_coll) {
      in.word("collective");
      const std::string c = in.word("a collective");
      if (!parse_name(kCollectives, c, p.collective))
        in.fail("collective \"" + c + "\" is not one of " + list(kCollectives));
      p.ranks = static_cast<int>(in.keyed("ranks", 1, 1 << 20));
      p.root = static_cast<int>(in.keyed("root", 0, p.ranks - 1));
      p.in_place = in.keyed("inplace", 0, 1) == 1;
      in.end();
      have_coll = true;
      b = std::make_unique<ProgramBuilder>(p.name, p.collective, p.ranks, p.in_place);
      b->program().root = p.root;
    } else if (key == "protocol" && have_coll && rank < 0) {
      in.word("protocol");
      if (in.word("auto") != "auto") in.fail("the program-wide protocol is auto (by size); an operation names its own");
      b->program().protocol_by_size = true;
      in.end();
    } else if (key == "multimem" && have_coll && rank < 0) {
      in.word("multimem");
      b->program().multimem = in.number("multimem (0 or 1)", 0, 1) == 1;
      in.end();
    } else if (key == "datachannels" && have_coll && rank < 0) {
      in.word("datachannels");
      b->program().data_channels = static_cast<int>(in.number("a channel count", 1, 65535));
      in.end();
    } else if (key == "dataflow" && have_coll && rank < 0) {
      in.word("dataflow");
      b->program().dataflow = in.number("dataflow (0 or 1)", 0, 1) == 1;
      in.end();
    } else if (key == "link" && have_coll && rank < 0) {
      in.word("link");
      LinkHint h;
      h.rank = static_cast<int32_t>(in.number("rank", 0, p.ranks - 1));
      std::vector<std::string> seen;
      while (!in.done()) {
        const std::string f = in.word("a field");
        if (std::find(seen.begin(), seen.end(), f) != seen.end()) in.fail("field \"" + f + "\" given twice");
        seen.push_back(f);
        if (f == "to") h.peer = static_cast<int32_t>(in.number("to", 0, p.ranks - 1));
        else if (f == "ch") h.channel = static_cast<int32_t>(in.number("ch", 0, 65535));
        else if (f == "ports") {
          std::istringstream ps(in.word("ports"));
          for (std::string port; std::getline(ps, port, ',');)
            h.ports.push_back(static_cast<int>(in.integer(port, "port", 0, 65535)));
        } else
          in.fail("unknown field \"" + f + "\" (to, ch, ports)");
      }
      if (std::find(seen.begin(), seen.end(), "to") == seen.end()) in.fail("a link names its peer (to R)");
      if (h.ports.empty()) in.fail("a link names its ports (ports P,Q,...)");
      b->program().links.push_back(std::move(h));
    } else if (key == "treenodes" && have_coll && rank < 0) {
      in.word("treenodes");
      const int nodes = static_cast<int>(in.number("a node count", 1, p.ranks));
      if (p.ranks % nodes) in.fail("a tree's " + std::to_string(nodes) + " nodes do not divide its " + std::to_string(p.ranks) + " ranks");
      b->program().tree_nodes = nodes;
      in.end();
    } else if (key == "group" && have_coll && rank < 0) {
      in.word("group");
      std::vector<int> g;
      while (!in.done()) g.push_back(static_cast<int>(in.number("a group member", 0, p.ranks - 1)));
      if (g.empty()) in.fail("a group lists its ranks");
      b->add_group(std::move(g));
    } else if (key == "rank" && have_coll) {
      in.word("rank");
      const int r = static_cast<int>(in.number("rank", 0, p.ranks - 1));
      if (r != rank + 1) in.fail("rank " + std::to_string(r) + " where rank " + std::to_string(rank + 1) + " comes next");
      Buffers bu;
      bu.input = static_cast<uint32_t>(in.keyed("input", 0, 0x7fffffff));
      bu.output = static_cast<uint32_t>(in.keyed("output", 0, 0x7fffffff));
      bu.scratch = static_cast<uint32_t>(in.keyed("scratch", 0, 0x7fffffff));
      in.end();
      rank = r;
      b->begin_rank(r, bu);
    } else if (rank >= 0 && !key.empty() && std::isdigit(static_cast<unsigned char>(key[0]))) {
      const long index = in.number("operation index", 0, 0x7fffffff);
      const long expect = static_cast<long>(b->program().ops.size() - b->program().rank_begin.back());
      if (index != expect)
        in.fail("operation " + std::to_string(index) + " where operation " + std::to_string(expect) + " comes next");
      Operation o;
      const std::string kind = in.word("an operation");
      if (!parse_name(kOps, kind, o.kind)) in.fail("operation \"" + kind + "\" is not one of " + list(kOps));
      const std::string engine = in.word("an engine");
      if (!parse_name(kEngines, engine, o.engine)) in.fail("engine \"" + engine + "\" is not one of " + list(kEngines));
      std::vector<uint32_t> deps;
      std::vector<std::string> seen;
      while (!in.done()) {
        const std::string f = in.word("a field");
        if (std::find(seen.begin(), seen.end(), f) != seen.end()) in.fail("field \"" + f + "\" given twice");
        seen.push_back(f);
        if (f == "proto") {
          const std::string pr = in.word("a protocol");
          if (!parse_name(kProtocols, pr, o.proto)) in.fail("protocol \"" + pr + "\" is not one of " + list(kProtocols));
        } else if (f == "ch") o.channel = static_cast<uint16_t>(in.number("ch", 0, 65535));
        else if (f == "q") o.queue = static_cast<uint16_t>(in.number("q", 0, 65535));
        else if (f == "to") o.send_peer = static_cast<int32_t>(in.number("to", 0, 0x7fffffff));
        else if (f == "from") o.recv_peer = static_cast<int32_t>(in.number("from", 0, 0x7fffffff));
        else if (f == "group") o.group = static_cast<int32_t>(in.number("group", 0, 0x7fffffff));
        else if (f == "timestep") o.timestep = static_cast<uint16_t>(in.number("timestep", 0, 65535));
        else if (f == "src") o.src = parse_ref(in, "src");
        else if (f == "dst") o.dst = parse_ref(in, "dst");
        else if (f == "after") {
          std::istringstream ds(in.word("after"));
          for (std::string d; std::getline(ds, d, ',');)
            deps.push_back(static_cast<uint32_t>(in.integer(d, "dependency", 0, 0x7fffffff)));
          if (deps.size() > 65535) in.fail("more than 65535 dependencies");
        } else
          in.fail("unknown field \"" + f + "\" (proto, ch, q, to, from, group, timestep, src, dst, after)");
      }
      b->add(o, deps);
    } else {
      in.fail("unexpected \"" + key + "\" here");
    }
  }
  const std::string where = file + ":" + std::to_string(line_no) + ": ";
  if (!header) throw UserError(where + "the file is empty (a program starts with \"program 1\")");
  if (!have_coll) throw UserError(where + "the program has no \"collective\" line");
  if (rank != p.ranks - 1)
    throw UserError(where + "the program ends after rank " + std::to_string(rank) + " of " + std::to_string(p.ranks));
  Program out = b->build();
  out.name = p.name;
  return out;
}

// The 12-channel ring on 128 GPUs prints as 17.7 MiB (measured); 256 MiB
// holds one of about 450 ranks.
std::string read_text_file(const std::string& path, const std::string& what) {
  return read_user_file(path, what, std::uintmax_t{256} << 20);
}

Program read_program_file(const std::string& path) { return read_program(read_text_file(path, "program file"), path); }

}  // namespace incsim::collectives
